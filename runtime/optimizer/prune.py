"""Remove the ops no output and no side effect needs (non-strict execution), and unused captures.

The ops kept are exactly those the executor runs (``runtime.executor.needed_ops``); placeholders stay
(they are the graph's signature). A capture of an ``If``/``While`` that none of its subgraphs reads is
dropped from the subgraphs and from the op's inputs.
"""
from __future__ import annotations

from runtime.executor import needed_ops
from runtime.graph import Graph
from runtime.optimizer.rewrite import capture_count, first_capture_input, use_counts


def prune(graph: Graph) -> bool:
    """Prune ``graph`` and its subgraphs in place; True if anything was removed."""
    changed = False
    for op in graph.operations:
        subs = op.subgraphs()
        if not subs:
            continue
        for sub in subs:
            changed |= prune(sub)
        changed |= _drop_unused_captures(op)
    needed = needed_ops(graph)
    removed = [op for op in graph.operations if id(op) not in needed and op.type != "Placeholder"]
    if not removed:
        return changed
    gone = {id(op) for op in removed}
    graph.operations = [op for op in graph.operations if id(op) not in gone]
    for op in graph.operations:
        if any(id(c) in gone for c in op.control_inputs):
            op.control_inputs = _ordering_kept(op.control_inputs, gone)
    return True


def _ordering_kept(controls, gone: set[int]) -> tuple:
    """Control inputs with each removed op replaced by its own control inputs (transitively)."""
    kept, seen, stack = [], set(), list(controls)
    while stack:
        c = stack.pop(0)
        if id(c) in seen:
            continue
        seen.add(id(c))
        if id(c) in gone:
            stack[:0] = list(c.control_inputs)
        else:
            kept.append(c)
    return tuple(kept)


def _drop_unused_captures(op) -> bool:
    subs = op.subgraphs()
    counts = [use_counts(sub) for sub in subs]
    unused = [k for k in range(capture_count(op))
              if all(not n.get(id(sub.captures[k][1])) for sub, n in zip(subs, counts))]
    if not unused:
        return False
    start = first_capture_input(op)
    drop_inputs = {start + k for k in unused}
    op.inputs = tuple(t for i, t in enumerate(op.inputs) if i not in drop_inputs)
    for sub in subs:
        placeholders = {id(sub.captures[k][1].op) for k in unused}
        sub.captures = [pair for k, pair in enumerate(sub.captures) if k not in unused]
        sub.operations = [o for o in sub.operations if id(o) not in placeholders]
    return True
