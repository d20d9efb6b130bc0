"""Build script: the pure-Python packages plus the compiled native call path (Cython + OpenMP).

The code generator's templates live in the top-level ``templates/`` folder and install as the
package data of ``transpiler.templates``, so a non-editable install can build modules too.
"""
import importlib.util
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, *path):
    """A module of the packages loaded alone (standard library only): the packages need this build."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The generated code's ISA flags (transpiler/codegen/flags.py), so that the executor's kernels (the GEMM above all)
# use the same vector width as built modules.
_flags = _load("_rt_flags", "transpiler", "codegen", "flags.py")
_toolchain = _load("_rt_toolchain", "transpiler", "build", "toolchain.py")
_kernel_library = _load("_rt_kernel_library", "transpiler", "build", "kernel_library.py")


class build_ext_and_kernels(build_ext):
    """build_ext, then the kernel library's archives (transpiler/build/kernel_library.py) into
    runtime/kernels/lib, for the generated code's flags at the machine's ISA level (or RT_MARCH's) and at each
    level below it the machine runs: a module build links the GEMM's kernels instead of compiling them again."""

    def run(self):
        super().run()
        driver, flags = _toolchain.compiler_command()
        compiler = _toolchain.compiler_of(driver)
        levels = [_flags.arch_flags()] + [level for level in _flags.supported_levels() if level != _flags.arch_flags()]
        kernels = os.path.join(HERE, "runtime", "kernels")
        into = os.path.join(os.path.dirname(self.get_ext_fullpath("runtime._native")), "kernels",
                            _kernel_library.INSTALLED)
        _kernel_library.install(compiler, [flags + _flags.compile_args(level) for level in levels], kernels,
                                Path(into))


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
    cmdclass={"build_ext": build_ext_and_kernels},
)
