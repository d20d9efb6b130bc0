"""Algebraic identities that give back an input unchanged: ``x*1, 1*x, x/1, x-0, x+(-0.0), 0+x`` (integers:
``x+0``), ``-(-x)``, ``!(!x)``, ``Cast`` to ``x``'s own dtype, ``Identity(x)`` -> ``x``.

Only exact rewrites: the constant must not change ``x``'s dtype or shape by broadcasting (each of its
dims is 1 or equals ``x``'s known dim), and every value must come out bit for bit: for floats,
``x + 0.0`` stays (``-0.0 + 0.0`` is ``+0.0``) while ``x - 0.0`` and ``x + (-0.0)`` go. The ``Identity``
ops that give a graph its outputs stay.
"""
from __future__ import annotations

import numpy as np

from runtime.graph import Graph, Operation, SymbolicTensor
from runtime.optimizer.rewrite import const_value, is_output_identity, remove_unused, subgraphs_first


def simplify_arithmetic(graph: Graph) -> bool:
    """Apply the identities in ``graph`` and its subgraphs in place; True if any op was bypassed."""
    changed = False
    for g in subgraphs_first(graph):
        changed |= _simplify(g)
    return changed


def _simplify(graph: Graph) -> bool:
    mapping: dict[int, SymbolicTensor] = {}
    bypassed: list[Operation] = []
    for op in graph.operations:
        if any(id(t) in mapping for t in op.inputs):
            op.inputs = tuple(mapping.get(id(t), t) for t in op.inputs)
            for sub in op.subgraphs():
                sub.captures = [(mapping.get(id(outer), outer), p) for outer, p in sub.captures]
        if is_output_identity(graph, op):
            continue
        same = _same_as(op)
        if same is not None:
            mapping[id(op.outputs[0])] = same
            bypassed.append(op)
    if not bypassed:
        return False
    graph.outputs = [mapping.get(id(t), t) for t in graph.outputs]
    remove_unused(graph, bypassed)
    return True


def _same_as(op: Operation) -> SymbolicTensor | None:
    """The input ``op`` returns unchanged, if it is one of the identities."""
    kind = op.type
    if kind == "Identity":
        return op.inputs[0]
    if kind == "Cast":
        x = op.inputs[0]
        return x if op.attrs["DstT"] is x.dtype else None
    if kind in ("Neg", "LogicalNot"):
        inner = op.inputs[0].op
        return inner.inputs[0] if inner.type == kind else None
    if kind == "Mul":
        return _either(_neutral(op, 0, _is_one), _neutral(op, 1, _is_one))
    if kind == "AddV2":
        return _either(_neutral(op, 0, _is_additive_zero), _neutral(op, 1, _is_additive_zero))
    if kind == "Sub":
        return _neutral(op, 0, _is_subtractive_zero)
    if kind == "RealDiv":
        return _neutral(op, 0, _is_one)
    return None


def _either(a, b):
    return a if a is not None else b  # not `a or b`: symbolic tensors refuse bool()


def _neutral(op: Operation, keep: int, is_neutral) -> SymbolicTensor | None:
    """``op.inputs[keep]`` when the other input is a constant ``is_neutral`` accepts and that does not
    broadcast ``x`` to another shape or dtype."""
    x, c = op.inputs[keep], op.inputs[1 - keep]
    value = const_value(c)
    out = op.outputs[0]
    if value is None or out.dtype is not x.dtype or x.dtype.np == np.dtype(object):
        return None
    if not _broadcasts_into(value.shape, x.shape.dims) or not is_neutral(value):
        return None
    return x


def _broadcasts_into(small: tuple, dims) -> bool:
    if dims is None or len(small) > len(dims):
        return False
    return all(s == 1 or (d is not None and s == d) for s, d in zip(reversed(small), reversed(dims)))


def _is_one(value: np.ndarray) -> bool:
    return bool(np.all(value == 1))


def _is_additive_zero(value: np.ndarray) -> bool:
    if np.issubdtype(value.dtype, np.floating) or np.issubdtype(value.dtype, np.complexfloating):
        return bool(np.all((value == 0) & np.signbit(np.real(value))))
    return bool(np.all(value == 0))


def _is_subtractive_zero(value: np.ndarray) -> bool:
    if np.issubdtype(value.dtype, np.floating):
        return bool(np.all((value == 0) & ~np.signbit(value)))
    return bool(np.all(value == 0))
