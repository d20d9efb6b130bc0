"""Imports declared at module top that load on first use (what PEP 810's ``lazy import`` will say).

``conversion = lazy_import("transpiler.conversion")`` names a dependency where every import is named,
at the top of the module, and the architecture test (``tests/unit/test_architecture.py``) checks it like
any other import (layer order, no cycle); the module itself is imported when an attribute of it is
first read. It is for the dependencies that would make a light import heavy: the converter (libcst) for
``import runtime``, the JIT compiler for ``rt.function``, the build driver for the entry points that
pytest and setuptools load in every run (the pytest plugin, the setuptools hook).

It lives here, not in ``runtime/``, because importing any ``runtime`` module runs the runtime's
``__init__`` (numpy and the whole API), while ``transpiler/__init__`` stays light.

Example:
    >>> json = lazy_import("json")
    >>> json
    <lazy module 'json'>
    >>> json.dumps([1])
    '[1]'
"""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for the module ``name``, imported on the first read of a public attribute (every read goes to it)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            # Tools that probe any object they meet (pytest's fixture scan, inspect) read private and dunder
            # names: those never load the module. The modules used through this proxy are read by public names.
            raise AttributeError(f"{attr!r}: a lazy module loads on a public attribute ({self._name})")
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_import(name: str) -> LazyModule:
    """The module ``name``, imported when one of its attributes is first read (call at module top only)."""
    return LazyModule(name)
