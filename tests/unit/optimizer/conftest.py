"""Shared helpers of the optimizer tests: differential runs of a pass on a graph."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings

from runtime.executor import run_graph
from runtime.optimizer.clone import clone_graph

OPTIMIZER_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run(graph, feeds, reset=None):
    """Outputs of ``graph`` on the reference executor (after ``reset()``, which restores variables)."""
    if reset is not None:
        reset()
    return run_graph(graph, [np.array(f) for f in feeds])


def assert_same_results(before, after, feeds_list, reset=None):
    """Bit-identical outputs (same dtypes, shapes, values; NaNs where NaNs) on every feed."""
    for feeds in feeds_list:
        expected = run(before, feeds, reset)
        got = run(after, feeds, reset)
        assert len(expected) == len(got)
        for e, g in zip(expected, got):
            e, g = np.asarray(e), np.asarray(g)
            assert e.dtype == g.dtype, (e.dtype, g.dtype)
            assert e.shape == g.shape, (e.shape, g.shape)
            if e.dtype.kind == "f":
                np.testing.assert_array_equal(e.view(f"u{e.itemsize}"), g.view(f"u{g.itemsize}"))
            else:
                np.testing.assert_array_equal(e, g)


def apply_pass(graph, pass_fn):
    """(copy of ``graph`` after one run of ``pass_fn``, whether it changed), verified."""
    copy = clone_graph(graph)
    changed = pass_fn(copy)
    copy.verify()
    return copy, changed


def count_ops(graph, op_type=None, deep=True) -> int:
    """Ops of ``graph`` (of ``op_type``), those of its subgraphs included when ``deep``."""
    n = 0
    for op in graph.operations:
        if op_type is None or op.type == op_type:
            n += 1
        if deep:
            n += sum(count_ops(sub, op_type) for sub in op.subgraphs())
    return n
