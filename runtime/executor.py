"""The reference executor: runs a graph's ops with their numpy kernels.

It defines the semantics the native code must match, so it stays simple:
non-strict (only ops that outputs, prints, assertions and variable updates need),
in the graph's topological (program) order. A plan per graph is computed once.
"""
from __future__ import annotations

import threading

import numpy as np

from runtime import errors
from runtime.graph import Graph

try:
    from runtime import _native
except ImportError:  # not compiled (e.g. running from a source tree without `pip install -e .`)
    _native = None


class Plan:
    """Which ops run, in order, with input/output slots in one flat value list.

    With ``compiled=True`` each op whose kernel the native library has (elementwise
    loops, matmul) uses it: that plan is the generic executor's.
    """

    __slots__ = ("steps", "feed_slots", "output_slots", "num_slots")

    def __init__(self, graph: Graph, compiled: bool = False):
        needed = needed_ops(graph)
        slot_of: dict[int, int] = {}
        feeds = graph.all_inputs()
        for t in feeds:
            slot_of[id(t)] = len(slot_of)
        steps = []
        for op in graph.operations:
            if op.type == "Placeholder" or id(op) not in needed:
                continue
            ins = tuple(slot_of[id(t)] for t in op.inputs)
            outs = []
            for t in op.outputs:
                slot_of[id(t)] = len(slot_of)
                outs.append(slot_of[id(t)])
            kinds = tuple(None if t.dtype.name == "variant" else t.dtype.np for t in op.outputs)
            kernel = op.opdef.kernel
            if compiled:
                kernel = _native.compiled_kernel(op) or kernel
            steps.append((op, kernel, op.attrs, ins, tuple(outs), kinds))
        self.steps = steps
        self.feed_slots = tuple(slot_of[id(t)] for t in feeds)
        self.output_slots = tuple(slot_of[id(t)] for t in graph.outputs)
        self.num_slots = len(slot_of)


def needed_ops(graph: Graph) -> set[int]:
    """ids of the ops the outputs and side effects depend on (non-strict execution)."""
    roots = [t.op for t in graph.outputs]
    roots += [op for op in graph.operations
              if op.opdef.side_effect or any(g.has_side_effects() for g in op.subgraphs())]
    needed: set[int] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed.add(id(op))
        stack.extend(t.op for t in op.inputs)
    return needed


def plan_for(graph: Graph, compiled: bool = False) -> Plan:
    plan = graph.plans.get(compiled)
    if plan is None:
        plan = graph.plans[compiled] = Plan(graph, compiled)
    return plan


class _Runner(threading.local):
    generic = True


_runner = _Runner()


def execute(graph: Graph, feeds: list) -> list:
    """Run a graph on the executor in use: the generic (compiled) one unless the reference is asked for."""
    if _runner.generic and _native is not None:
        return run_graph_generic(graph, feeds)
    return run_graph(graph, feeds)


def run_graph_generic(graph: Graph, feeds: list) -> list:
    """The generic executor: the reference plan with compiled kernels, its loop in Cython."""
    plan = plan_for(graph, compiled=True)
    values = [None] * plan.num_slots
    for slot, value in zip(plan.feed_slots, feeds):
        values[slot] = value
    _native.run_plan(plan.steps, values)
    return [values[i] for i in plan.output_slots]


def run_graph(graph: Graph, feeds: list) -> list:
    """The reference executor: run ``graph`` on numpy ``feeds`` (inputs then captures) with numpy kernels."""
    previous = _runner.generic
    _runner.generic = False
    try:
        return _run_reference(graph, feeds)
    finally:
        _runner.generic = previous


def _run_reference(graph: Graph, feeds: list) -> list:
    plan = plan_for(graph)
    values = [None] * plan.num_slots
    for slot, value in zip(plan.feed_slots, feeds):
        values[slot] = value
    for op, kernel, attrs, ins, outs, kinds in plan.steps:
        try:
            results = kernel([values[i] for i in ins], attrs)
        except (errors.OpError,) + errors.KERNEL_ERRORS as e:
            raise errors.located(e, op) from None
        for slot, value, kind in zip(outs, results, kinds):
            if kind is not None and (type(value) is not np.ndarray or value.dtype != kind):
                value = np.asarray(value).astype(kind, copy=False)
            values[slot] = value
    return [values[i] for i in plan.output_slots]


