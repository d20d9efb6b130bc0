"""Loop-invariant code motion: an op of a ``While``'s ``body`` (or ``cond``) that reads only captures and
constants is computed once before the loop and passed in as a new capture.

    while i < n: s = s + x * 2.0      ->      t = x * 2.0; while i < n: s = s + t

Moved ops are pure (not stateful, no subgraphs) and cannot fail: a loop that runs zero times must not
raise an error it never raised before. So only ops that never raise move: elementwise ops whose inputs
cannot fail to broadcast (fully defined shapes, or scalars beside one tensor) -- except integer
``FloorDiv``/``FloorMod``/``Pow`` (division by zero, negative powers) -- and shape-safe ops (``Shape``,
``Size``, ``Rank``, ``Transpose``, ``ExpandDims``; matmuls and reductions of fully defined, non-empty
shapes). The ``cond`` and ``body`` of a loop share one capture list: a capture added for one is an
unused placeholder in the other.
"""
from __future__ import annotations

from runtime.graph import Graph, Operation, SymbolicTensor
from runtime.optimizer.rewrite import (
    insert_before,
    make_const,
    make_op,
    remove_unused,
    replace_many,
    subgraphs_first,
    use_counts,
)

_NEVER_RAISE = {"Shape", "Size", "Rank", "Transpose", "ExpandDims"}
_SAFE_WITH_STATIC_SHAPES = {"MatMul", "Sum", "Prod", "Mean", "All", "Any", "Max", "Min", "ArgMax", "ArgMin",
                            "Softmax", "Cumsum"}
_INTEGER_FAILURES = {"FloorDiv", "FloorMod", "Pow"}


def hoist_loop_invariants(graph: Graph) -> bool:
    """Move invariant ops out of every ``While`` in ``graph`` and its subgraphs; True if any moved."""
    changed = False
    for g in subgraphs_first(graph):
        for op in list(g.operations):
            if op.type == "While":
                changed |= _hoist(g, op, "body")
                changed |= _hoist(g, op, "cond")
    return changed


def _hoist(outer: Graph, loop: Operation, key: str) -> bool:
    sub: Graph = loop.attrs[key]
    other: Graph = loop.attrs["cond" if key == "body" else "body"]
    start = loop.attrs["num_loop_vars"]
    outer_of: dict[int, SymbolicTensor] = {
        id(placeholder): loop.inputs[start + k] for k, (_, placeholder) in enumerate(sub.captures)}
    moved: list[Operation] = []
    new_outer: list[Operation] = []
    for op in sub.operations:
        if op.type in ("Placeholder", "Const") or not _hoistable(op):
            continue
        if not all(id(t) in outer_of or t.op.type == "Const" for t in op.inputs):
            continue
        inputs = []
        for t in op.inputs:
            if id(t) not in outer_of:
                const = make_const(outer, t.op.attrs["value"].array, t.dtype, location=t.op.location)
                new_outer.append(const)
                outer_of[id(t)] = const.outputs[0]
            inputs.append(outer_of[id(t)])
        clone = make_op(outer, op.type, inputs, dict(op.attrs), [(t.dtype, t.shape.dims) for t in op.outputs],
                        name=op.name, location=op.location)
        new_outer.append(clone)
        for t, c in zip(op.outputs, clone.outputs):
            outer_of[id(t)] = c
        moved.append(op)
    if not moved:
        return False
    insert_before(outer, new_outer, loop)
    counts = use_counts(sub)
    for op in moved:
        for t in op.inputs:
            counts[id(t)] -= 1
    mapping: dict[int, SymbolicTensor] = {}
    for op in moved:
        for t in op.outputs:
            if counts.get(id(t)):
                mapping[id(t)] = _add_capture(loop, sub, other, outer_of[id(t)], start)
    replace_many(sub, mapping)
    remove_unused(sub, moved)
    return True


def _add_capture(loop: Operation, sub: Graph, other: Graph, outer_tensor: SymbolicTensor,
                 start: int) -> SymbolicTensor:
    """A new capture of ``outer_tensor`` for both subgraphs of ``loop``; returns ``sub``'s placeholder."""
    index = start + len(sub.captures)
    loop.inputs = loop.inputs[:index] + (outer_tensor,) + loop.inputs[index:]
    placeholders = []
    for g, name in ((sub, f"capture_{outer_tensor.op.name}"), (other, "unused_capture")):
        ph = make_op(g, "Placeholder", [], {"dtype": outer_tensor.dtype, "shape": outer_tensor.shape},
                     [(outer_tensor.dtype, outer_tensor.shape.dims)], name=name)
        first_op = next((i for i, op in enumerate(g.operations) if op.type != "Placeholder"), len(g.operations))
        g.operations.insert(first_op, ph)  # before every use (capture placeholders may come late)
        g.captures.append((outer_tensor, ph.outputs[0]))
        placeholders.append(ph.outputs[0])
    return placeholders[0]


def _hoistable(op: Operation) -> bool:
    """Pure, and cannot raise whatever values its inputs hold (see the module docstring)."""
    if op.stateful or op.subgraphs() or not op.opdef.foldable or op.control_inputs:
        return False
    if any(t.dtype.name == "variant" for t in op.inputs + op.outputs):
        return False
    shapes = [t.shape for t in op.inputs]
    if op.opdef.c_expr is not None:
        if op.type in _INTEGER_FAILURES and op.inputs[0].dtype.np.kind in "iu":
            return False
        if all(s.is_fully_defined() for s in shapes):
            return True
        return sum(1 for s in shapes if s.rank != 0) <= 1
    if op.type in _NEVER_RAISE:
        return True
    if op.type in _SAFE_WITH_STATIC_SHAPES:
        return all(s.is_fully_defined() and s.num_elements() > 0 for s in shapes)
    return False
