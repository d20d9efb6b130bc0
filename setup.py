"""Build script: the pure-Python packages plus the compiled native call path (Cython + OpenMP).

The code generator's templates live in the top-level ``templates/`` folder and install as the
package data of ``transpiler.templates``, so a non-editable install can build modules too.
"""
import importlib.util
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup

# The generated code's ISA flags (transpiler/codegen/flags.py, loaded alone: the packages need this build),
# so that the executor's kernels (the GEMM above all) use the same vector width as built modules.
_spec = importlib.util.spec_from_file_location(
    "_rt_flags", os.path.join(os.path.dirname(os.path.abspath(__file__)), "transpiler", "codegen", "flags.py"))
_flags = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_flags)

extensions = [
    Extension(
        "runtime._native",
        ["runtime/_native.pyx"],
        include_dirs=[np.get_include(), "runtime"],
        extra_compile_args=["-O3", "-fopenmp", "-ffp-contract=off"] + _flags.arch_flags(),   # as generated code
        extra_link_args=["-fopenmp", "-lm"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    ),
]

setup(
    packages=find_packages(include=["runtime*", "transpiler*"]) + ["transpiler.templates"],
    package_dir={"transpiler.templates": "templates"},
    ext_modules=cythonize(extensions, language_level=3, quiet=True),
)
