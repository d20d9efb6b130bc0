"""Composite ops -> the primitive ops they are made of: ``Softmax(x)`` -> ``e / reduce_sum(e)`` with
``e = exp(x - reduce_max(x))``.

Each composite op says how in the op table (``OpDef.expand``, beside its numpy kernel, which computes the
same ops in the same order, so the results stay bit-identical). Native code then fuses the primitive
ops with their neighbours (a softmax becomes one loop over rows), where the composite op would be a
separate kernel.
"""
from __future__ import annotations

from runtime.graph import Graph
from runtime.optimizer.rewrite import build_detached, replace_many, subgraphs_first


def expand_composites(graph: Graph) -> bool:
    """Replace every composite op of ``graph`` and its subgraphs in place; True if any was replaced."""
    changed = False
    for g in subgraphs_first(graph):
        changed |= _expand(g)
    return changed


def _expand(graph: Graph) -> bool:
    mapping: dict = {}
    kept: list = []
    changed = False
    for op in list(graph.operations):
        if op.opdef.expand is None or any(t.shape.rank is None for t in op.inputs):
            kept.append(op)
            continue
        outputs, new_ops = build_detached(graph, op, op.opdef.expand, list(op.inputs), op.attrs)
        if outputs is None:             # this instance cannot be expanded (e.g. a size only known at run time)
            kept.append(op)
            continue
        kept.extend(new_ops)
        for old, new in zip(op.outputs, outputs):
            mapping[id(old)] = new
        changed = True
    if changed:
        graph.operations = kept
        replace_many(graph, mapping)
    return changed
