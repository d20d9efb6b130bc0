"""Common-subexpression elimination: a second ``Mul(%a, %b)`` with the same attributes is the first.

Two ops are one when they have the same type, the same input tensors and equal attributes (attributes
are hashable: the key is a dictionary lookup). Stateful ops (random numbers, variable reads, prints,
ops whose subgraphs have side effects) never merge; ops holding subgraphs merge only when they hold
the very same subgraph objects. The ``Identity`` ops giving a graph its outputs stay distinct.
"""
from __future__ import annotations

from runtime.graph import Graph, Operation
from runtime.optimizer.rewrite import is_output_identity, remove_unused, subgraphs_first


def cse(graph: Graph) -> bool:
    """Merge equal ops of ``graph`` and of each of its subgraphs (separately); True if any merged."""
    changed = False
    for g in subgraphs_first(graph):
        changed |= _cse(g)
    return changed


def _cse(graph: Graph) -> bool:
    seen: dict[tuple, Operation] = {}
    mapping: dict[int, object] = {}
    merged: list[Operation] = []
    for op in graph.operations:
        if any(id(t) in mapping for t in op.inputs):
            op.inputs = tuple(mapping.get(id(t), t) for t in op.inputs)
            for sub in op.subgraphs():
                sub.captures = [(mapping.get(id(outer), outer), p) for outer, p in sub.captures]
        if op.type == "Placeholder" or op.stateful or op.control_inputs:
            continue
        key = (op.type, tuple(id(t) for t in op.inputs), _attr_key(op.attrs))
        first = seen.get(key)
        if first is None:
            seen[key] = op
        elif not is_output_identity(graph, op):
            for old, new in zip(op.outputs, first.outputs):
                mapping[id(old)] = new
            merged.append(op)
    if not merged:
        return False
    graph.outputs = [mapping.get(id(t), t) for t in graph.outputs]
    remove_unused(graph, merged)
    return True


def _attr_key(attrs: dict) -> tuple:
    return tuple(sorted((k, _value_key(v)) for k, v in attrs.items()))


def _value_key(value):
    """A key equal only for interchangeable values: ``1 == 1.0 == True`` and ``0.0 == -0.0`` in
    Python, but not as attributes; subgraphs compare by identity."""
    if isinstance(value, tuple):
        return ("tuple", tuple(_value_key(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (bool, int, str)) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, Graph):
        return ("graph", id(value))
    return (type(value).__name__, value)
