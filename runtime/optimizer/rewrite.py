"""Helpers the passes share: walking nested graphs, counting uses, rewiring and removing ops.

Every rewrite keeps the IR invariants ``graph.verify()`` checks: ops stay in topological order,
names stay unique, and a control-flow op's capture inputs stay parallel to its subgraphs' captures.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from runtime import context
from runtime.graph import ConstValue, Graph, Operation, SymbolicTensor
from runtime.ops.registry import get_opdef
from runtime.shapes import TensorShape


def subgraphs_first(graph: Graph) -> Iterator[Graph]:
    """``graph`` and every graph nested in it, innermost first (a list: passes may edit while iterating)."""
    order: list[Graph] = []

    def visit(g: Graph) -> None:
        for op in g.operations:
            for sub in op.subgraphs():
                visit(sub)
        order.append(g)

    visit(graph)
    return iter(order)


def const_value(tensor: SymbolicTensor) -> np.ndarray | None:
    """The value of ``tensor`` if a ``Const`` op of its own graph produces it."""
    if tensor.op.type == "Const":
        return tensor.op.attrs["value"].array
    return None


def use_counts(graph: Graph) -> dict[int, int]:
    """id(tensor) -> how many op inputs and graph outputs of ``graph`` use it."""
    counts: dict[int, int] = {}
    for op in graph.operations:
        for t in op.inputs:
            counts[id(t)] = counts.get(id(t), 0) + 1
    for t in graph.outputs:
        counts[id(t)] = counts.get(id(t), 0) + 1
    return counts


def replace_uses(graph: Graph, old: SymbolicTensor, new: SymbolicTensor) -> None:
    """Make every use of ``old`` in ``graph`` use ``new``: op inputs, graph outputs and the outer side
    of the captures of subgraphs (which mirror their op's inputs). Dead ops are left to the caller."""
    replace_many(graph, {id(old): new})


def replace_many(graph: Graph, mapping: dict[int, SymbolicTensor]) -> None:
    """``replace_uses`` for many tensors at once: ``mapping`` is id(old tensor) -> new tensor."""
    if not mapping:
        return
    for op in graph.operations:
        if any(id(t) in mapping for t in op.inputs):
            op.inputs = tuple(mapping.get(id(t), t) for t in op.inputs)
            for sub in op.subgraphs():
                sub.captures = [(mapping.get(id(outer), outer), p) for outer, p in sub.captures]
    graph.outputs = [mapping.get(id(t), t) for t in graph.outputs]


def make_op(graph: Graph, op_type: str, inputs, attrs: dict, output_specs, name: str | None = None,
            location=None) -> Operation:
    """A new op of ``graph``, named uniquely from ``name``, *not yet placed* in ``graph.operations``
    (see ``insert_before``)."""
    opdef = get_opdef(op_type)
    op = Operation(graph, opdef, graph.unique_name(name or opdef.default_name), inputs, attrs, (), location)
    op.outputs = tuple(SymbolicTensor(op, i, dtype, TensorShape(shape))
                       for i, (dtype, shape) in enumerate(output_specs))
    return op


def make_const(graph: Graph, array: np.ndarray, dtype, name: str | None = None, location=None) -> Operation:
    """A new (unplaced) ``Const`` op holding a private read-only copy of ``array`` as ``dtype``."""
    value = np.array(array, dtype=dtype.np, copy=True)
    return make_op(graph, "Const", [], {"value": ConstValue(value), "dtype": dtype},
                   [(dtype, value.shape)], name=name or "Const", location=location)


def build_detached(graph: Graph, anchor: Operation, build, *args):
    """Run ``build(*args)`` (graph-building API calls) in ``graph``; returns (its result, the ops it added). The ops
    are taken back out of ``graph.operations`` for the caller to place, and carry ``anchor``'s source location
    (an error in them names the user's line of the op they replace)."""
    start = len(graph.operations)
    with context.graph_scope(graph):
        result = build(*args)
    new_ops = graph.operations[start:]
    del graph.operations[start:]
    for new in new_ops:
        new.location = anchor.location
    return result, new_ops


def insert_before(graph: Graph, new_ops: list[Operation], anchor: Operation) -> None:
    """Place ``new_ops`` (in order) just before ``anchor`` in ``graph.operations``."""
    index = next(i for i, op in enumerate(graph.operations) if op is anchor)
    graph.operations[index:index] = new_ops


def remove_unused(graph: Graph, candidates) -> set[int]:
    """Remove the ``candidates`` ops whose outputs nothing uses any more, then, the same way, the
    producers of their inputs that became unused. Placeholders and stateful ops always stay.
    Returns the ids of the removed ops."""
    counts = use_counts(graph)
    removed: set[int] = set()
    stack = list(candidates)
    while stack:
        op = stack.pop()
        if id(op) in removed or op.type == "Placeholder" or op.stateful:
            continue
        if any(counts.get(id(t), 0) for t in op.outputs):
            continue
        removed.add(id(op))
        for t in op.inputs:
            counts[id(t)] -= 1
            if counts[id(t)] == 0:
                stack.append(t.op)
    if removed:
        graph.operations = [op for op in graph.operations if id(op) not in removed]
    return removed


def is_graph_output(graph: Graph, tensor: SymbolicTensor) -> bool:
    return any(t is tensor for t in graph.outputs)


def first_capture_input(op: Operation) -> int:
    """Index of the first input of a control-flow op that feeds its subgraphs' captures."""
    if op.type == "If":
        return 1
    if op.type == "While":
        return op.attrs["num_loop_vars"]
    raise ValueError(f"{op.type} has no subgraph captures")


def capture_count(op: Operation) -> int:
    return len(op.subgraphs()[0].captures)


def is_output_identity(graph: Graph, op: Operation) -> bool:
    """An ``Identity`` giving ``graph`` one of its outputs: passes keep these ops (the function's
    outputs are named and listed by them)."""
    return op.type == "Identity" and any(is_graph_output(graph, t) for t in op.outputs)
