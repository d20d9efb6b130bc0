"""Lazy ``and``/``or``/``not``: Python semantics for Python values, graph ops for symbolic tensors.

``rt__.and_(lambda: a, lambda: b)``: ``b`` is evaluated only when needed; if ``a`` is a
symbolic tensor, ``b`` is staged in a graph conditional (``rt.cond``), like AutoGraph.
"""
from __future__ import annotations

from runtime import dtypes
from runtime.ops import api as rt
from runtime.tensor import is_symbolic, is_tensor


def not_(a):
    if is_symbolic(a):
        return rt.logical_not(a)
    return not a


def and_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_symbolic(value):
            rest = thunk
            value = rt.cond(value, lambda rest=rest: _to_bool(rest()), lambda: rt.constant(False))
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_symbolic(value):
            rest = thunk
            value = rt.cond(value, lambda: rt.constant(True), lambda rest=rest: _to_bool(rest()))
        elif value:
            return value
        else:
            value = thunk()
    return value


def _to_bool(value):
    if is_tensor(value):
        if value.dtype is not dtypes.bool_:
            raise TypeError(f"`and`/`or` on tensors needs bool tensors, got {value.dtype} ({value})")
        return value
    return rt.constant(bool(value))
