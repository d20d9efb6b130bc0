"""Python builtins that need a tensor-aware version inside converted code: ``range``, ``len``, ``iter``, ``next``."""
from __future__ import annotations

import builtins

from runtime.ops import api as rt
from runtime.tensor import is_symbolic


def range_(*args):
    """``range(n)`` with a symbolic bound is ``rt.range(n)`` (a tensor loop); otherwise Python's range."""
    if any(is_symbolic(a) for a in args):
        return rt.range(*args)
    return builtins.range(*[int(a) if hasattr(a, "numpy") else a for a in args])


def len_(x):
    """``len(x)``: the static first dimension of a symbolic tensor when known, else ``rt.shape(x)[0]``."""
    if isinstance(x, rt.TensorArray):
        return x.size()
    if is_symbolic(x):
        if x.shape.rank == 0:
            raise TypeError(f"len() of a scalar tensor {x}")
        dim = x.shape[0] if x.shape.rank is not None else None
        return dim if dim is not None else rt.shape(x)[0]
    return len(x)


def iter_(x, *args):
    """``iter(x)``: an object that stages its own iteration while tracing (a dataset) gives its graph iterator."""
    graph_iter = getattr(x, "_rt_graph_iter", None) if not args else None
    iterator = graph_iter() if graph_iter is not None else None
    return iterator if iterator is not None else builtins.iter(x, *args)


_NO_DEFAULT = object()


def next_(iterator, default=_NO_DEFAULT):
    """``next(it[, default])``: a dataset iterator while tracing gives the default past its end at run time (a
    graph conditional on whether there is an element)."""
    if default is _NO_DEFAULT:
        return next(iterator)
    staged = getattr(iterator, "_rt_next_or_default", None)
    return staged(default) if staged is not None else next(iterator, default)


OVERRIDES = {builtins.range: range_, builtins.len: len_, builtins.iter: iter_, builtins.next: next_}
