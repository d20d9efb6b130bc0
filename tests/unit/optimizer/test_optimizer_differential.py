"""Every pass, alone and in the full pipeline, keeps each traced program's results bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import apply_pass, assert_same_results, count_ops
from opt_programs import CASES, counter, graph_of

from runtime.optimizer import PASSES, optimize


def _feeds(case, n=6):
    rng = np.random.default_rng(0)
    return [case[3](rng) for _ in range(n)]


def _reset():
    counter.assign(0.0)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("name,pass_fn", PASSES, ids=[n for n, _ in PASSES])
def test_pass_keeps_results(case, name, pass_fn):
    graph = graph_of(case)
    after, _ = apply_pass(graph, pass_fn)
    assert count_ops(after) <= count_ops(graph) + 8, "a pass should not blow the graph up"
    assert_same_results(graph, after, _feeds(case), reset=_reset)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pipeline_keeps_results_and_shrinks(case):
    graph = graph_of(case)
    before = str(graph)
    optimized = optimize(graph)
    optimized.verify()
    assert str(graph) == before, "optimize() must not modify its argument"
    assert graph.finalized and not optimized.finalized
    assert count_ops(optimized) < count_ops(graph)
    assert [t.op.type for t in optimized.outputs] == ["Identity"] * len(graph.outputs)
    assert [t.op.name for t in optimized.outputs] == [t.op.name for t in graph.outputs]
    assert_same_results(graph, optimized, _feeds(case), reset=_reset)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pipeline_reaches_a_fixed_point(case):
    optimized = optimize(graph_of(case))
    for name, pass_fn in PASSES:
        again, changed = apply_pass(optimized, pass_fn)
        assert not changed, f"{name} still changes the optimized graph of {case[0]}:\n{again}"


def test_passes_can_be_chosen():
    graph = graph_of(CASES[0])
    assert str(optimize(graph, passes=[])) == str(graph)
    only_prune = optimize(graph, passes=["prune"])
    assert count_ops(only_prune, "Mul") == count_ops(graph, "Mul")
    assert str(optimize(graph, passes="prune,cse")) == str(optimize(graph, passes=["cse", "prune"]))
    with pytest.raises(ValueError, match="unknown optimization pass.*bogus.*the passes are prune"):
        optimize(graph, passes=["prune", "bogus"])


def test_codegen_exposes_optimize():
    from transpiler import codegen
    assert codegen.optimize is optimize
