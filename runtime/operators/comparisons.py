"""Chained comparisons and ``in`` in converted code: Python semantics for Python values, graph ops for
symbolic tensors (``rt__.compare_chain``, ``rt__.in_``, ``rt__.not_in``)."""
from __future__ import annotations

import operator

from runtime.operators.logical import and_, not_
from runtime.ops import api as rt
from runtime.tensor import is_symbolic, is_tensor


def in_(item, container):
    """``item in container``; for a symbolic vector, whether any element equals ``item`` (a bool tensor)."""
    if is_symbolic(container):
        if container.shape.rank != 1:
            raise TypeError(f"`in` on a symbolic tensor needs a vector, got shape {container.shape} ({container}); "
                            "use rt.reduce_any(rt.equal(...)) with an axis")
        item = rt.convert_to_tensor(item, container.dtype) if not is_tensor(item) else item
        if item.shape.rank != 0:
            raise TypeError(f"`in` on a symbolic tensor needs a scalar to look for, got shape {item.shape}")
        return rt.reduce_any(rt.equal(container, item))
    if is_symbolic(item) and isinstance(container, (list, tuple, set, frozenset, range)):
        if item.shape.rank != 0:
            raise TypeError(f"`in` with a symbolic tensor needs a scalar, got shape {item.shape} ({item})")
        found = rt.constant(False)
        for element in container:
            found = rt.logical_or(found, rt.equal(item, element))
        return found
    return item in container


def not_in(item, container):
    """``item not in container`` (see ``in_``)."""
    return not_(in_(item, container))


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne, "in": in_, "not in": not_in, "is": operator.is_, "is not": operator.is_not}


def compare_chain(left, *parts):
    """``left op1 b op2 c ...`` with ``parts = (op1, lambda: b, op2, lambda: c, ...)``: each operand is
    evaluated once, and the chain stops at the first false comparison (staged lazily for tensors)."""
    pairs = list(zip(parts[::2], parts[1::2]))

    def from_(i, left):
        op, operand = pairs[i]
        right = operand()
        value = _COMPARE[op](left, right)
        if i + 1 == len(pairs):
            return value
        return and_(lambda: value, lambda: from_(i + 1, right))
    return from_(0, left)
