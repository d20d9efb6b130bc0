"""Build ``rt.function`` modules inside a setuptools build, as ``cythonize`` does for Cython modules.

``pip wheel .`` (or ``python -m build``) of a project that names its packages then produces a platform wheel
(``cp311-cp311-linux_x86_64``: the distribution has extension modules) holding one extension per module
that defines ``rt.function``s, built by ``python -m transpiler build`` into setuptools' build directory,
with or without the modules' ``.py`` sources.

Name the packages in ``pyproject.toml`` (read by ``transpiler.build.setuptools_hook``)::

    [tool.rt]
    build = ["mymodels"]
    include-sources = false
    from-ledger = true          # also compile the signatures the modules recorded at run time
    tf-compat = true            # the modules are written against `import tensorflow as tf`

or in ``setup.py``::

    from setuptools import setup
    from transpiler.build.setuptools_ext import rt_extensions

    setup(name="mymodels", packages=["mymodels"],
          ext_modules=rt_extensions(["mymodels"], include_sources=False, from_ledger=True))

Either way rt must be importable by the build (``--no-build-isolation``, or rt in ``build-system.requires``);
the C compiler is needed to build the wheel, not to install or run it.
"""
from __future__ import annotations

import os
from pathlib import Path

from setuptools.command.build_ext import build_ext as _setuptools_build_ext
from setuptools.command.build_py import build_py as _setuptools_build_py
from setuptools.errors import CompileError, SetupError

from transpiler.build.discovery import discover
from transpiler.build.driver import build
from transpiler.build.extension import RtExtension

__all__ = ["RtExtension", "rt_extensions", "configure"]


def rt_extensions(paths: list[str | os.PathLike], include_sources: bool = True,
                  from_ledger: bool = False, tf_compat: bool = False) -> list[RtExtension]:
    """One ``RtExtension`` per module under ``paths`` (package directories or ``.py`` files, relative to the
    project) that defines ``rt.function``s; the discovery is static (nothing is imported). ``from_ledger``:
    also compile the signatures each module recorded at run time (``build --from-ledger``). ``tf_compat``: the
    modules are written against ``import tensorflow as tf`` (``build --tf-compat``)."""
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise SetupError(f"rt build: no such file or directory: {', '.join(missing)} "
                         f"(paths are relative to {os.getcwd()})")
    errors: list = []
    modules = discover([Path(p) for p in paths], errors=errors, tf_compat=tf_compat)
    if errors:
        raise SetupError("rt build: cannot parse " + "; ".join(
            f"{os.path.relpath(path)}:{getattr(error, 'lineno', '?')}: {getattr(error, 'msg', error)}"
            for path, error in errors))
    if not modules:
        raise SetupError(f"rt build: no module defining rt.function found under {', '.join(map(str, paths))}")
    return [RtExtension(module.name, os.path.relpath(module.path), include_sources, from_ledger, tf_compat)
            for module in modules]


class RtBuildExtMixin:
    """``build_ext`` that builds the ``RtExtension``s with the rt build driver (in parallel, incrementally,
    logs in rt's cache directory) and every other extension as the base command does."""

    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)
        ours = [ext for ext in self.extensions if isinstance(ext, RtExtension)]
        if ours:
            self._build_rt(ours)
        everything = self.extensions
        self.extensions = [ext for ext in everything if not isinstance(ext, RtExtension)]
        try:
            super().build_extensions()
        finally:
            self.extensions = everything

    def _build_rt(self, extensions: list[RtExtension]) -> None:
        jobs = self.parallel if isinstance(self.parallel, int) and not isinstance(self.parallel, bool) else None
        for tf_compat in sorted({bool(getattr(ext, "tf_compat", False)) for ext in extensions}):
            group = [ext for ext in extensions if bool(getattr(ext, "tf_compat", False)) == tf_compat]
            status = build(sorted({ext.rt_source for ext in group}), outdir=self.build_lib, jobs=jobs,
                           force=bool(self.force), mirror=False, tf_compat=tf_compat,
                           from_ledger=any(getattr(ext, "from_ledger", False) for ext in group))
            if status != 0:
                raise CompileError("rt build: building the rt.function modules failed (see the messages above)")
        for ext in extensions:
            built = Path(self.get_ext_fullpath(ext.name))
            if not built.is_file():
                raise CompileError(f"rt build: {ext.name} was not built to {built}: is its package laid out "
                                   "as setuptools expects (package_dir)?")


class RtBuildPyMixin:
    """``build_py`` that leaves out the ``.py`` of the modules built with ``include_sources=False``."""

    def _without_sources(self) -> set[str]:
        return {ext.name for ext in self.distribution.ext_modules or []
                if isinstance(ext, RtExtension) and not ext.include_sources}

    def find_package_modules(self, package, package_dir):
        hidden = self._without_sources()
        return [(pkg, module, path) for pkg, module, path in super().find_package_modules(package, package_dir)
                if _dotted(pkg, module) not in hidden]

    def find_modules(self):
        hidden = self._without_sources()
        return [(pkg, module, path) for pkg, module, path in super().find_modules()
                if _dotted(pkg, module) not in hidden]


def _dotted(package: str, module: str) -> str:
    if module == "__init__":
        return package
    return f"{package}.{module}" if package else module


def configure(dist, config: dict | None) -> None:
    """Add the ``[tool.rt]`` modules (``config``, see ``setuptools_hook.read_config``) to ``dist`` and make its
    ``build_ext`` and ``build_py`` build them (on top of the project's own commands, if it has any)."""
    if config is not None:
        dist.ext_modules = list(dist.ext_modules or []) + rt_extensions(config["build"], config["include_sources"],
                                                                        config.get("from_ledger", False),
                                                                        config.get("tf_compat", False))
    dist.cmdclass["build_ext"] = _with_mixin(RtBuildExtMixin, dist.cmdclass.get("build_ext"), _setuptools_build_ext)
    dist.cmdclass["build_py"] = _with_mixin(RtBuildPyMixin, dist.cmdclass.get("build_py"), _setuptools_build_py)


def _with_mixin(mixin: type, current: type | None, default: type) -> type:
    base = current or default
    if issubclass(base, mixin):
        return base
    return type(base.__name__, (mixin, base), {"__module__": __name__})
