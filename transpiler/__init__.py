"""Source-to-source conversion of Python functions into graph-building code (AutoGraph-style), with libcst.

    >>> import transpiler
    >>> def f(x):
    ...     if x > 0:
    ...         x = -x
    ...     return x
    >>> "rt__.if_stmt" in transpiler.to_code(f)  # doctest: +SKIP
    True
"""
from __future__ import annotations


def to_code(fn) -> str:
    """The converted source of ``fn`` as readable Python."""
    from transpiler.conversion import to_code as _to_code
    return _to_code(fn)


def convert(fn):
    """The converted version of ``fn`` (same signature and globals); ``fn`` itself if it cannot be converted."""
    from runtime.autograph import convert as _convert
    return _convert(fn)


__all__ = ["to_code", "convert"]
