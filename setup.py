"""Build script: the pure-Python packages plus the compiled native call path (Cython + OpenMP)."""
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        "runtime._native",
        ["runtime/_native.pyx"],
        include_dirs=[np.get_include(), "runtime"],
        extra_compile_args=["-O3", "-fopenmp"],
        extra_link_args=["-fopenmp", "-lm"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    ),
]

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))
