"""Each pass does what it says (node counts before/after), and leaves alone what it must not touch."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import apply_pass, assert_same_results, count_ops
from opt_programs import CASES, graph_of

import runtime as rt
from runtime import context
from runtime.graph import Graph
from runtime import optimizer
from runtime.optimizer import (
    cse, expand_composites, fold_constants, hoist_loop_invariants, optimize, prune, simplify_arithmetic,
)
from runtime.executor import run_graph
from runtime.ops.registry import all_opdefs
from runtime.optimizer.clone import clone_graph

CASE = {c[0]: c for c in CASES}


def _body(graph, kind="body"):
    return next(op for op in graph.operations if op.type == "While").attrs[kind]


def test_clone_is_deep_and_editable():
    graph = graph_of(CASE["loop"])
    copy = clone_graph(graph)
    assert str(copy) == str(graph) and not copy.finalized
    assert not {id(op) for op in copy.operations} & {id(op) for op in graph.operations}
    assert _body(copy) is not _body(graph) and _body(copy).outer_graph is copy
    copy.operations.pop()
    assert str(copy) != str(graph)


def test_prune_removes_dead_code_and_keeps_side_effects():
    graph = graph_of(CASE["common"])
    assert count_ops(graph, "Exp") == 1
    after, changed = apply_pass(graph, prune)
    assert changed and count_ops(after, "Exp") == 0
    stateful = graph_of(CASE["stateful"])
    after, _ = apply_pass(stateful, prune)
    for kind in ("PrintV2", "AssignAddVariableOp", "Placeholder"):
        assert count_ops(after, kind) == count_ops(stateful, kind), kind
    assert not apply_pass(after, prune)[1]


def test_prune_drops_unused_captures():
    graph = Graph("g")
    with context.graph_scope(graph):
        x = graph.add_placeholder("x", rt.float32, [2])
        y = graph.add_placeholder("y", rt.float32, [2])
        exp = rt.exp(y)
        out = rt.cond(rt.reduce_sum(x) > 0.0, lambda: x + 1.0, lambda: x * (exp * 0.0 + 2.0))
        graph.outputs = [rt.identity(out)]
    with context.graph_scope(graph):  # the else branch stops reading `exp` (as after simplification)
        branch = next(op for op in graph.operations if op.type == "If").attrs["else_branch"]
        mul = next(op for op in branch.operations if op.type == "Mul" and op.inputs[0].op.type == "Placeholder"
                   and op.inputs[0] is branch.captures[0][1])
        branch.outputs = [mul.inputs[0]]
    if_op = next(op for op in graph.operations if op.type == "If")
    assert len(if_op.inputs) == 3
    after, changed = apply_pass(graph, prune)
    if_after = next(op for op in after.operations if op.type == "If")
    assert changed and len(if_after.inputs) == 2 and count_ops(after, "Exp") == 0
    assert_same_results(graph, after, [[np.ones(2, np.float32), np.ones(2, np.float32)],
                                       [-np.ones(2, np.float32), np.ones(2, np.float32)]])


def test_fold_constants_computes_constant_subgraphs():
    graph = graph_of(CASE["folding"])
    after, changed = apply_pass(graph, fold_constants)
    assert changed
    for kind in ("Range", "Reshape", "Shape", "Size", "Cast", "Sum"):
        assert count_ops(after, kind) <= (1 if kind == "Sum" else 0), kind  # Sum of the big Fill stays
    assert count_ops(after, "Fill") == 1, "results over MAX_ELEMENTS stay computed at run time"
    shape_const = after.outputs[1].op.inputs[0].op
    assert shape_const.type == "Const" and shape_const.attrs["value"].array.dtype == np.int32


def test_fold_constants_leaves_failing_and_stateful_ops():
    graph = Graph("g")
    with context.graph_scope(graph):
        bad = rt.floordiv(rt.constant(1), rt.constant(0))
        r = rt.random.uniform([2], seed=3)
        graph.outputs = [rt.identity(bad), rt.identity(r)]
    after, _ = apply_pass(graph, fold_constants)
    assert count_ops(after, "FloorDiv") == 1 and count_ops(after, "RandomUniform") == 1
    assert [t.op.type for t in after.outputs] == ["Identity", "Identity"]


def test_cse_merges_equal_pure_ops_only():
    graph = graph_of(CASE["common"])
    assert count_ops(graph, "Tanh") == 2 and count_ops(graph, "Sum") == 2
    after, changed = apply_pass(graph, cse)
    assert changed and count_ops(after, "Tanh") == 1 and count_ops(after, "Sum") == 1
    stateful = graph_of(CASE["stateful"])
    after, _ = apply_pass(stateful, cse)
    assert count_ops(after, "RandomUniform") == 2, "random ops never merge"


def test_cse_tells_attribute_values_apart():
    graph = Graph("g")
    with context.graph_scope(graph):
        x = graph.add_placeholder("x", rt.float32, [3, 4])
        graph.outputs = [rt.identity(rt.reduce_sum(x, axis=0)), rt.identity(rt.reduce_sum(x, axis=1)),
                         rt.identity(rt.reduce_sum(x, axis=0))]
    after, _ = apply_pass(graph, cse)
    assert count_ops(after, "Sum") == 2 and count_ops(after, "Identity") == 3


def test_simplify_arithmetic_drops_identities():
    graph = graph_of(CASE["arithmetic"])
    after, changed = apply_pass(graph, simplify_arithmetic)
    assert changed
    assert count_ops(after, "Neg") == 0 and count_ops(after, "Cast") == 0 and count_ops(after, "RealDiv") == 0
    assert count_ops(after, "Sub") == 0
    assert count_ops(after, "AddV2") == count_ops(graph, "AddV2"), "x + 0.0 stays: -0.0 + 0.0 is +0.0"
    assert count_ops(after, "Mul") == count_ops(graph, "Mul") - 1
    assert count_ops(after, "Identity") == 1 and after.outputs[0].op.type == "Identity"


def test_simplify_arithmetic_keeps_broadcasting_and_signed_zero():
    graph = Graph("g")
    with context.graph_scope(graph):
        x = graph.add_placeholder("x", rt.float32, [None])
        i = graph.add_placeholder("i", rt.int32, [3])
        graph.outputs = [rt.identity(t) for t in (
            x * np.ones([3], np.float32),     # broadcasts an unknown dim: stays
            x * np.ones([1], np.float32),     # goes
            x + np.float32(-0.0),              # goes
            x - np.float32(-0.0),              # stays
            i + np.int32(0))]                  # goes
    after, _ = apply_pass(graph, simplify_arithmetic)
    kinds = [t.op.inputs[0].op.type for t in after.outputs]
    assert kinds == ["Mul", "Placeholder", "Placeholder", "Sub", "Placeholder"]
    assert_same_results(graph, after, [[np.array([-0.0, 1.0, np.nan], np.float32), np.arange(3, dtype=np.int32)]])


def test_hoist_moves_invariants_out_of_loops():
    graph = graph_of(CASE["loop"])
    before_body = _body(graph)
    assert count_ops(before_body, "Sin") == 1
    after, changed = apply_pass(graph, hoist_loop_invariants)
    body = _body(after)
    assert changed and count_ops(body, "Sin") == 0 and count_ops(body, "Cast") == 0
    assert count_ops(after, "Sin", deep=False) == 1
    loop = next(op for op in after.operations if op.type == "While")
    assert len(body.captures) == len(_body(after, "cond").captures) == len(loop.inputs) - 2


def test_hoist_goes_through_nested_loops():
    optimized = optimize(graph_of(CASE["nested"]))
    assert count_ops(optimized, "Exp", deep=False) == 1 and count_ops(optimized, "Exp") == 1


def test_hoist_leaves_ops_that_may_fail():
    graph = Graph("g")
    with context.graph_scope(graph):
        a = graph.add_placeholder("a", rt.int32, [None])
        b = graph.add_placeholder("b", rt.int32, [None])
        n = graph.add_placeholder("n", rt.int32, [])
        _, out = rt.while_loop(lambda i, c: i < n, lambda i, c: (i + 1, c + a // b + (a - b)), (0, a))
        graph.outputs = [rt.identity(out)]
    after, _ = apply_pass(graph, hoist_loop_invariants)
    body = _body(after)
    assert count_ops(body, "FloorDiv") == 1, "b may hold zeros: a zero-trip loop must not raise"
    assert count_ops(body, "Sub") == 1, "a - b with unknown shapes may fail to broadcast"
    zeros = [np.ones(2, np.int32), np.zeros(2, np.int32), np.int32(0)]
    assert_same_results(graph, after, [zeros, [np.ones(2, np.int32), np.ones(2, np.int32), np.int32(2)]])


def test_rt_debug_verifies_the_graph_after_every_pass(monkeypatch):
    def breaks_the_graph(graph):
        graph.operations.reverse()         # uses before definitions
        return True

    monkeypatch.setattr(optimizer, "PASSES", [("breaks_the_graph", breaks_the_graph)] + optimizer.PASSES)
    monkeypatch.setattr(optimizer, "PASS_NAMES", ["breaks_the_graph"] + optimizer.PASS_NAMES)
    graph = graph_of(CASE["loop"])
    monkeypatch.delenv("RT_DEBUG", raising=False)
    optimize(graph)                        # unchecked: the malformed graph goes through
    monkeypatch.setenv("RT_DEBUG", "1")
    with pytest.raises(ValueError, match="after the optimization pass 'breaks_the_graph'"):
        optimize(graph)


def test_every_expansion_computes_what_its_kernel_computes():
    """Each op with ``expand`` (Softmax, LogSoftmax, SparseSoftmaxCrossEntropyWithLogits): the primitive ops give
    its kernel's results, errors included (a label out of range)."""
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((4, 6)) * 5).astype(np.float32)
    programs = {
        "Softmax": (lambda x: rt.nn.softmax(x, axis=0), [logits]),
        "LogSoftmax": (lambda x: rt.nn.log_softmax(x), [logits]),
        "SparseSoftmaxCrossEntropyWithLogits": (
            lambda x, y: rt.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
            [logits, np.array([5, 0, 2, 2], np.int32)]),
    }
    expanded = {op_type for op_type, opdef in all_opdefs().items() if opdef.expand is not None}
    assert expanded == set(programs), "an op with an expansion needs a program here"
    for op_type, (fn, args) in programs.items():
        specs = [rt.TensorSpec([None] * (a.ndim - 1) + [a.shape[-1] if a.ndim == 2 else None], rt.as_dtype(a.dtype))
                 for a in args]          # the classes known: SparseSoftmaxCrossEntropyWithLogits expands
        graph = rt.function(fn, autograph=False).get_concrete_function(*specs).graph
        copy, changed = apply_pass(graph, expand_composites)
        assert changed and count_ops(copy, op_type) == 0, op_type
        assert_same_results(graph, copy, [args])
    fn, args = programs["SparseSoftmaxCrossEntropyWithLogits"]
    graph = rt.function(fn, autograph=False).get_concrete_function(
        rt.TensorSpec([None, 6], rt.float32), rt.TensorSpec([None], rt.int32)).graph
    copy, _ = apply_pass(graph, expand_composites)
    for bad in ([0, 6, 1, 1], [0, 1]):
        with pytest.raises(rt.errors.InvalidArgumentError, match="SparseSoftmaxCrossEntropyWithLogits"):
            run_graph(copy, [logits, np.array(bad, np.int32)])


def test_an_expansion_may_keep_its_op_whole():
    @rt.function(autograph=False)
    def f(x, y):
        return rt.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    graph = f.get_concrete_function(rt.TensorSpec(None, rt.float32), rt.TensorSpec(None, rt.int32)).graph
    copy, changed = apply_pass(graph, expand_composites)
    assert not changed and count_ops(copy, "SparseSoftmaxCrossEntropyWithLogits") == 1     # rank unknown
    copy.verify()
    graph = f.get_concrete_function(rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.int32)).graph
    copy, changed = apply_pass(graph, expand_composites)          # classes known at run time: a range compared
    assert changed and count_ops(copy, "SparseSoftmaxCrossEntropyWithLogits") == 0 and count_ops(copy, "Range") == 1
    copy.verify()


def test_rt_debug_verifies_after_a_pass_that_says_it_changed_nothing(monkeypatch):
    def breaks_the_graph_quietly(graph):
        graph.operations.reverse()
        return False

    monkeypatch.setattr(optimizer, "PASSES", [("quiet", breaks_the_graph_quietly)] + optimizer.PASSES)
    monkeypatch.setattr(optimizer, "PASS_NAMES", ["quiet"] + optimizer.PASS_NAMES)
    monkeypatch.setenv("RT_DEBUG", "1")
    with pytest.raises(ValueError, match="after the optimization pass 'quiet'"):
        optimize(graph_of(CASE["loop"]))


def test_softmax_expands_into_ops_that_fuse():
    @rt.function(autograph=False)
    def f(x):
        return rt.nn.softmax(x * 2.0)
    graph = f.get_concrete_function(rt.TensorSpec([None, 5], rt.float32)).graph
    copy, changed = apply_pass(graph, expand_composites)
    assert changed and count_ops(copy, "Softmax") == 0 and count_ops(copy, "Max") == count_ops(copy, "Sum") == 1
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    assert_same_results(graph, copy, [[x]])


def test_a_shape_folds_only_when_no_run_time_check_of_its_producer_could_contradict_it():
    def rows(z, x):
        return rt.shape(rt.reshape(z, [4, 2]))[0] + rt.shape(rt.transpose(x))[0] + rt.size(x * 2.0)

    graph = rt.function(rows).get_concrete_function(rt.TensorSpec([None], rt.float32),
                                                    rt.TensorSpec([3, 5], rt.float32)).graph
    optimized = optimize(graph)
    # the transpose and the product of a [3, 5] input fold away; the reshape of a run-time size stays and checks
    assert count_ops(optimized, "Reshape") == 1 and count_ops(optimized, "Transpose") == 0
    assert count_ops(optimized, "Mul") == 0
    assert int(run_graph(optimized, [np.zeros(8, np.float32), np.zeros((3, 5), np.float32)])[0]) == 4 + 5 + 15
    with pytest.raises(rt.errors.InvalidArgumentError, match="12 elements"):
        run_graph(optimized, [np.zeros(12, np.float32), np.zeros((3, 5), np.float32)])
