"""Inter-op parallelism: independent heavy parts of a graph run at the same time.

Look for a join: a unit whose inputs come from two or more sets of units with no unit in common
(``branch1(x) + branch2(y)``, or ``branch1(x) + branch2(x)``). Each set, closed over its ancestors,
is a part; two or more heavy parts run concurrently (``ir.Parts``), after the units that read
nothing (constants) and before everything else. Graphs with stateful ops or control flow stay
sequential.
"""
from __future__ import annotations

from runtime.config import PARALLEL_MIN_ELEMENTS
from transpiler.lowering.ir import product
from transpiler.lowering.plan import Plan, unit_ops

HEAVY_TYPES = {"MatMul", "Sum", "Mean", "Max", "Min", "Prod", "Any", "All", "Cumsum", "Softmax", "Transpose",
               "Tanh", "Exp", "Log", "Sin", "Cos", "Sigmoid", "Sqrt"}


def split_parts(cx, plan: Plan, ops: list):
    """(pre, parts, post) lists of units when the graph has independent heavy parts, else None."""
    if any(op.opdef.stateful or op.subgraphs() for op in ops):
        return None
    units = plan.units
    index_of = {}
    for u, unit in enumerate(units):
        for op in unit_ops(unit):
            index_of[id(op)] = u
    producer = {}
    for u, unit in enumerate(units):
        for op in unit_ops(unit):
            for t in op.outputs:
                producer[id(t)] = u

    def inputs_of(u) -> set:
        found = set()
        inside = {id(op) for op in unit_ops(units[u])}
        for op in unit_ops(units[u]):
            for t in op.inputs:
                p = producer.get(id(t))
                if p is not None and id(t.op) not in inside and unit_ops(units[p])[0].inputs:
                    found.add(p)
        return found

    ancestors: list[frozenset] = []
    for u in range(len(units)):
        found = set()
        for p in inputs_of(u):
            found.add(p)
            found |= ancestors[p]
        ancestors.append(frozenset(found))

    def heavy(group) -> bool:
        for u in group:
            for op in unit_ops(units[u]):
                for t in op.outputs:
                    if id(t) not in cx.dims:
                        continue
                    sizes = [product(cx.dims[id(x)]).const for x in (t,) + tuple(op.inputs) if id(x) in cx.dims]
                    work = None if any(n is None for n in sizes) else max(sizes)
                    if op.type in HEAVY_TYPES and (work is None or work >= PARALLEL_MIN_ELEMENTS):
                        return True
                    if work is not None and work >= 4 * PARALLEL_MIN_ELEMENTS:
                        return True
        return False

    best = None
    for join in reversed(range(len(units))):
        groups: list[set] = []
        for p in inputs_of(join):
            closure = set(ancestors[p]) | {p}
            overlapping = [g for g in groups if g & closure]
            for g in overlapping:
                groups.remove(g)
                closure |= g
            groups.append(closure)
        heavy_groups = [g for g in groups if heavy(g)]
        if len(heavy_groups) >= 2:
            best = heavy_groups
            break
    if best is None:
        return None
    in_parts = set().union(*best)
    parts = [[units[u] for u in sorted(g)] for g in best]
    pre = [units[u] for u in range(len(units)) if u not in in_parts and not any(
        op.inputs for op in unit_ops(units[u]))]
    pre_ids = {id(x) for x in pre}
    post = [units[u] for u in range(len(units)) if u not in in_parts and id(units[u]) not in pre_ids]
    return pre, parts, post
