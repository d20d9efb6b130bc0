"""Source-to-source conversion of Python functions into graph-building code (AutoGraph-style), with libcst.

    >>> import transpiler
    >>> def f(x):
    ...     if x > 0:
    ...         x = -x
    ...     return x
    >>> "rt__.if_stmt" in transpiler.to_code(f)
    True
"""
from __future__ import annotations

from transpiler.lazy import lazy_import

# The package init stays light: pytest and setuptools load this package's entry points in every run.
_autograph = lazy_import("runtime.autograph")


def to_code(fn) -> str:
    """The converted source of ``fn`` as readable Python (the same string as ``rt.autograph.to_code(fn)``)."""
    return _autograph.to_code(fn)


def convert(fn):
    """The converted version of ``fn`` (same signature and globals); ``fn`` itself if it cannot be converted."""
    return _autograph.convert(fn)


__all__ = ["to_code", "convert"]
