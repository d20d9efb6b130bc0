"""The graph IR: node structure, printing, verify(), non-strict execution, control flow, variables."""
from __future__ import annotations

import contextlib
import io
import sys

import numpy as np
import pytest
from runtime_test_helpers import assert_equivalent, assert_matches_numpy, op_types

import runtime as rt
from runtime.executor import needed_ops, run_graph


def concrete(fn, *args, **kwargs):
    return rt.function(fn, autograph=False).get_concrete_function(*args, **kwargs)


# ---------------------------------------------------------------------------
# Structure and printing

def test_double_graph_nodes_are_exact():
    def double(a):
        return a + a
    graph = concrete(double, rt.constant(1)).graph
    nodes = [(node.input, node.name) for node in graph.as_graph_def().node]
    assert nodes == [([], "a"), (["a", "a"], "add"), (["add"], "Identity")]
    assert [op.type for op in graph.get_operations()] == ["Placeholder", "AddV2", "Identity"]
    text = str(graph.as_graph_def())
    assert text.startswith('node {\n  name: "a"\n  op: "Placeholder"\n')
    assert '  input: "a"\n  input: "a"\n' in text
    assert 'name: "Identity"\n  op: "Identity"\n  input: "add"' in text
    assert "type: DT_INT32" in text
    assert text.rstrip().endswith("versions {\n  producer: 1\n}")


def test_placeholders_are_named_after_arguments():
    def f(x, y, scale=2, *, bias):
        return x * y + bias
    c = concrete(f, rt.constant(1.0), rt.constant(2.0), bias=rt.constant(0.5))
    assert [t.op.name for t in c.inputs] == ["x", "y", "bias"]
    assert [str(t) for t in c.inputs][:1] == ['Tensor("x:0", shape=(), dtype=float32)']
    # nested structures: one placeholder per leaf, all named after the argument
    c = concrete(lambda pair: pair[0] + pair[1], (rt.constant(1), rt.constant(2)))
    names = [t.op.name for t in c.inputs]
    assert len(names) == 2 and all(n.startswith("pair") for n in names) and len(set(names)) == 2


def test_ssa_listing_is_stable():
    def f(x, y):
        return x * y + 1, rt.reduce_sum(x, axis=0)
    specs = (rt.TensorSpec([None, 3], rt.float32), rt.TensorSpec([3], rt.float32))
    expected = "\n".join([
        "graph f(%x: float32[?,3], %y: float32[3]) {",
        "  %mul = Mul(%x, %y) : float32[?,3]",
        "  %Const = Const() {dtype=float32, value=1.} : float32[]",
        "  %add = AddV2(%mul, %Const) : float32[?,3]",
        "  %reduce_sum = Sum(%x) {axis=(0,), keepdims=False} : float32[3]",
        "  %Identity = Identity(%add) : float32[?,3]",
        "  %Identity_1 = Identity(%reduce_sum) : float32[3]",
        "  return %Identity, %Identity_1",
        "}"])
    first = rt.function(f, autograph=False).get_concrete_function(*specs)
    second = rt.function(f, autograph=False).get_concrete_function(*specs)
    assert str(first.graph) == expected
    assert str(second.graph) == expected


def test_multi_output_ops_print_with_indices():
    c = concrete(lambda x: rt.unstack(x)[1], rt.constant([1, 2, 3]))
    text = str(c.graph)
    assert "%unstack:0, %unstack:1, %unstack:2 = Unpack(%x) {axis=0, num=3}" in text
    assert "Identity(%unstack:1)" in text
    node = [n for n in c.graph.as_graph_def().node if n.op == "Identity"][0]
    assert node.input == ["unstack:1"]


def test_unique_op_names():
    def f(x):
        return x + x + x + x
    names = [op.name for op in concrete(f, rt.constant(1)).graph.get_operations()]
    assert names == ["x", "add", "add_1", "add_2", "Identity"]
    g = concrete(lambda x: rt.add(x, x, name="total"), rt.constant(1)).graph
    assert "total" in [op.name for op in g.get_operations()]


def test_symbolic_tensor_properties():
    seen = {}

    def f(x):
        y = x * 2
        seen.update(name=y.name, op=y.op.type, graph=y.graph, shape=y.shape, dtype=y.dtype,
                    symbolic=rt.is_symbolic(y), inside=rt.inside_function(), eager=rt.executing_eagerly())
        return y
    c = concrete(f, rt.TensorSpec([None, 2], rt.int64))
    assert seen == dict(name="mul:0", op="Mul", graph=c.graph, shape=rt.TensorShape([None, 2]), dtype=rt.int64,
                        symbolic=True, inside=True, eager=False)
    assert not rt.inside_function() and rt.executing_eagerly()
    assert isinstance(c.graph, rt.Graph)


def test_op_locations_point_at_user_code():
    def f(x):
        return x * 3       # the line the Mul op is created on
    c = concrete(f, rt.constant(1))
    (mul,) = [op for op in c.graph.get_operations() if op.type == "Mul"]
    assert mul.location is not None and mul.location.filename == __file__
    assert mul.location.lineno == f.__code__.co_firstlineno + 1
    assert "test_graph.py" in mul.where()


# ---------------------------------------------------------------------------
# verify()

PROGRAMS = [
    (lambda x: x + 1, [rt.constant([1, 2])]),
    (lambda x, y: rt.matmul(x, y) * 2.0, [rt.constant(np.ones((2, 3), np.float32)),
                                           rt.constant(np.ones((3, 1), np.float32))]),
    (lambda x: rt.reduce_mean(rt.reshape(x, [-1, 2]), axis=1), [rt.constant(np.arange(6.0))]),
    (lambda x: rt.cond(x > 0, lambda: x, lambda: -x), [rt.constant(-3)]),
    (lambda n: rt.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 2),
                                          (rt.constant(0), rt.constant(1))), [rt.constant(5)]),
    (lambda x: rt.concat([x, x[::-1]], 0)[1:], [rt.constant([1.0, 2.0])]),
    (lambda x: rt.TensorArray(rt.int32, size=2).write(0, x).write(1, x * 2).stack(), [rt.constant([1, 2])]),
    (lambda x: rt.gather(x, rt.argmax(x)), [rt.constant([1, 5, 2])]),
    (lambda x: (rt.print(x), rt.shape(x), rt.size(x), rt.rank(x))[1:], [rt.constant([[1]])]),
    (lambda x: rt.cast(x, rt.float16) / rt.cast(x + 1, rt.float16), [rt.constant([1, 2])]),
]


@pytest.mark.parametrize("index", range(len(PROGRAMS)))
def test_traced_graphs_verify(index):
    fn, args = PROGRAMS[index]
    f = rt.function(fn, autograph=False)
    c = f.get_concrete_function(*args)
    c.graph.verify()
    specs = [rt.TensorSpec([None] * a.ndim, a.dtype) for a in args]
    rt.function(fn, input_signature=specs, autograph=False).get_concrete_function().graph.verify()
    with contextlib.redirect_stderr(io.StringIO()):
        assert_equivalent(fn(*args), f(*args))


def _fresh_graph():
    return concrete(lambda x, y: (x + y) * x, rt.constant(1), rt.constant(2)).graph


def test_verify_catches_use_before_definition():
    graph = _fresh_graph()
    ops = graph.operations
    add = next(i for i, op in enumerate(ops) if op.type == "AddV2")
    mul = next(i for i, op in enumerate(ops) if op.type == "Mul")
    ops[add], ops[mul] = ops[mul], ops[add]
    with pytest.raises(ValueError, match="before it is defined"):
        graph.verify()


def test_verify_catches_duplicate_names():
    graph = _fresh_graph()
    next(op for op in graph.operations if op.type == "Mul").name = "add"
    with pytest.raises(ValueError, match="assigned twice"):
        graph.verify()


def test_verify_catches_wrong_arity():
    graph = _fresh_graph()
    add = next(op for op in graph.operations if op.type == "AddV2")
    add.inputs = add.inputs[:1]
    with pytest.raises(ValueError, match="inputs"):
        graph.verify()


def test_verify_catches_wrong_dtype_and_shape():
    graph = _fresh_graph()
    next(op for op in graph.operations if op.type == "AddV2").outputs[0].dtype = rt.float32
    with pytest.raises(ValueError, match="does not match"):
        graph.verify()
    graph = _fresh_graph()
    next(op for op in graph.operations if op.type == "AddV2").outputs[0].shape = rt.TensorShape([2])
    with pytest.raises(ValueError, match="does not match"):
        graph.verify()


def test_verify_catches_foreign_outputs_and_ops():
    graph, other = _fresh_graph(), _fresh_graph()
    graph.outputs = [other.outputs[0]]
    with pytest.raises(ValueError, match="not defined"):
        graph.verify()
    graph = _fresh_graph()
    graph.operations.insert(2, other.operations[2])
    with pytest.raises(ValueError):
        graph.verify()


def test_verify_checks_subgraphs():
    c = concrete(lambda x: rt.cond(x > 0, lambda: x + 1, lambda: x - 1), rt.constant(1))
    c.graph.verify()
    (if_op,) = [op for op in c.graph.get_operations() if op.type == "If"]
    sub = if_op.attrs["then_branch"]
    sub.operations.reverse()
    with pytest.raises(ValueError):
        c.graph.verify()


def test_finalized_graph_cannot_grow():
    graph = _fresh_graph()
    assert graph.finalized
    from runtime.ops.registry import get_opdef
    with pytest.raises(RuntimeError, match="finalized"):
        graph.create_op(get_opdef("Identity"), [graph.outputs[0]])


# ---------------------------------------------------------------------------
# Non-strict execution

def test_unused_failing_op_is_skipped():
    def f(x):
        rt.gather(x, 10)                 # out of range, but nobody uses it
        return x * 2
    with pytest.raises(rt.errors.InvalidArgumentError):
        f(rt.constant([1, 2]))           # eagerly it fails
    g = rt.function(f, autograph=False)
    assert g(rt.constant([1, 2])).numpy().tolist() == [2, 4]
    graph = g.get_concrete_function(rt.constant([1, 2])).graph
    gather = next(op for op in graph.get_operations() if op.type == "GatherV2")
    assert id(gather) not in needed_ops(graph)


def test_side_effects_run_even_when_unused():
    v = rt.Variable(0)

    def f(x):
        rt.print("side effect", x, output_stream=sys.stdout)
        v.assign_add(x)
        rt.debugging.assert_less(x, 10, message="x too big")
        return rt.constant(1)
    g = rt.function(f, autograph=False)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g(rt.constant(3))
        g(rt.constant(4))
    assert buf.getvalue() == "side effect 3\nside effect 4\n"
    assert int(v.numpy()) == 7
    with pytest.raises(rt.errors.InvalidArgumentError, match="x too big"):
        with contextlib.redirect_stdout(io.StringIO()):
            g(rt.constant(20))


def test_run_time_errors_name_the_op():
    def f(x, i):
        return rt.gather(x, i)
    g = rt.function(f, autograph=False)
    with pytest.raises(rt.errors.InvalidArgumentError) as info:
        g(rt.constant([1, 2]), rt.constant(5))
    assert "GatherV2" in str(info.value) and "test_graph.py" in str(info.value)
    assert info.value.op is not None and info.value.op.type == "GatherV2"


def test_run_graph_directly():
    c = concrete(lambda x, y: (x + y, x * y), rt.constant(2), rt.constant(3))
    add, mul = run_graph(c.graph, [np.array(2, np.int32), np.array(3, np.int32)])
    assert int(add) == 5 and int(mul) == 6


# ---------------------------------------------------------------------------
# Stateful ops keep program order

def test_variable_updates_and_reads_are_ordered():
    v = rt.Variable(1)

    @rt.function(autograph=False)
    def f():
        a = v.read_value()
        v.assign(10)
        b = v.read_value()
        v.assign_add(5)
        c = v.read_value()
        return a, b, c
    assert [int(t) for t in f()] == [1, 10, 15]
    assert [int(t) for t in f()] == [15, 10, 15]
    graph = f.get_concrete_function().graph
    stateful = [op for op in graph.get_operations() if op.opdef.stateful]
    for before, after in zip(stateful, stateful[1:]):
        assert before in after.control_inputs


def test_variables_are_captured_by_reference():
    v = rt.Variable([1.0, 2.0])

    @rt.function(autograph=False)
    def bump(x):
        v.assign_add(x)
        return v.read_value()
    assert bump(rt.constant([1.0, 1.0])).numpy().tolist() == [2.0, 3.0]
    assert v.numpy().tolist() == [2.0, 3.0]            # the graph wrote the variable's storage
    v.assign([0.0, 0.0])
    assert bump(rt.constant([1.0, 1.0])).numpy().tolist() == [1.0, 1.0]   # ...and reads it
    assert bump.experimental_get_tracing_count() == 1
    with pytest.raises((ValueError, TypeError)):
        rt.function(lambda: v.assign([1.0, 2.0, 3.0]), autograph=False)()


def test_variable_in_cond_and_while():
    v = rt.Variable(0)

    @rt.function(autograph=False)
    def f(n):
        def body(i):
            rt.cond(i % 2 == 0, lambda: v.assign_add(i), lambda: v.assign_sub(1))
            return i + 1
        rt.while_loop(lambda i: i < n, body, rt.constant(0))
        return v.read_value()
    # 0 - 1 + 2 - 1 + 4 = 4
    assert int(f(rt.constant(5))) == 4
    assert int(v.numpy()) == 4


def test_init_scope_runs_eagerly():
    seen = []

    @rt.function(autograph=False)
    def f(x):
        with rt.init_scope():
            seen.append(rt.executing_eagerly())
            k = rt.constant(5) + 1
            assert not rt.is_symbolic(k)
        seen.append(rt.executing_eagerly())
        return x + k
    assert int(f(rt.constant(1))) == 7
    assert seen == [True, False]
    graph = f.get_concrete_function(rt.constant(1)).graph
    assert "AddV2" in op_types(graph) and graph.get_operations()[1].type == "Const"


# ---------------------------------------------------------------------------
# rt.cond

def test_cond_eager_runs_one_branch():
    calls = []
    out = rt.cond(rt.constant(True), lambda: calls.append("t") or rt.constant(1), lambda: calls.append("f"))
    assert calls == ["t"] and int(out) == 1
    assert rt.cond(False, lambda: 1, lambda: 2) == 2


def test_cond_in_graph_traces_both_branches_and_captures():
    calls = []

    @rt.function(autograph=False)
    def f(x, y):
        z = y * 10                              # an outer tensor captured by both branches

        def true_fn():
            calls.append("t")
            return x + z, rt.constant(1)

        def false_fn():
            calls.append("f")
            return x - z, rt.constant(2)
        return rt.cond(x > 0, true_fn, false_fn)
    a, b = f(rt.constant(1), rt.constant(2))
    assert (int(a), int(b)) == (21, 1)
    a, b = f(rt.constant(-1), rt.constant(2))
    assert (int(a), int(b)) == (-21, 2)
    assert calls == ["t", "f"]
    graph = f.get_concrete_function(rt.constant(1), rt.constant(2)).graph
    (if_op,) = [op for op in graph.get_operations() if op.type == "If"]
    assert len(if_op.inputs) == 3                           # pred + the captured x and z
    for branch in (if_op.attrs["then_branch"], if_op.attrs["else_branch"]):
        assert len(branch.all_inputs()) == 2


def test_cond_branch_structure_and_dtype_errors():
    def structure(x):
        return rt.cond(x > 0, lambda: (x, x), lambda: x)

    def dtype(x):
        return rt.cond(x > 0, lambda: x, lambda: rt.cast(x, rt.float32))
    with pytest.raises(ValueError, match="same structure"):
        rt.function(structure, autograph=False)(rt.constant(1))
    with pytest.raises(TypeError, match="dtype"):
        rt.function(dtype, autograph=False)(rt.constant(1))
    with pytest.raises(TypeError, match="bool"):
        rt.function(lambda x: rt.cond(x, lambda: x, lambda: x), autograph=False)(rt.constant(1))
    with pytest.raises(ValueError, match="scalar"):
        rt.function(lambda x: rt.cond(x > 0, lambda: x, lambda: x), autograph=False)(rt.constant([1, 2]))


def test_cond_output_shapes_are_merged():
    c = concrete(lambda p, x: rt.cond(p, lambda: x, lambda: rt.concat([x, x], 0)),
                 rt.constant(True), rt.constant([1, 2]))
    assert c.outputs[0].shape == rt.TensorShape([None])
    assert c(rt.constant(False), rt.constant([1, 2])).numpy().tolist() == [1, 2, 1, 2]


def test_nested_cond():
    def f(x):
        return rt.cond(x > 0, lambda: rt.cond(x > 10, lambda: x * 100, lambda: x * 10), lambda: -x)
    g = rt.function(f, autograph=False)
    for value in (-5, 5, 50):
        assert int(g(rt.constant(value))) == int(f(rt.constant(value)))
    g.get_concrete_function(rt.constant(1)).graph.verify()


# ---------------------------------------------------------------------------
# rt.while_loop

def test_while_loop_eager_and_graph():
    def f(n):
        return rt.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc + i * i),
                             [rt.constant(0), rt.constant(0)])
    eager = f(rt.constant(4))
    assert isinstance(eager, list) and [int(t) for t in eager] == [4, 14]
    graph = rt.function(f, autograph=False)(rt.constant(4))
    assert isinstance(graph, list) and [int(t) for t in graph] == [4, 14]
    single = rt.while_loop(lambda v: v < 10, lambda v: v * 3, rt.constant(1))
    assert int(single) == 27


def test_while_body_appears_once_and_captures_outer_tensors():
    calls = []

    @rt.function(autograph=False)
    def f(x, step):
        scale = step * 2

        def body(i, acc):
            calls.append(1)
            return i + 1, acc + scale
        return rt.while_loop(lambda i, acc: i < x, body, (rt.constant(0), rt.constant(0)))[1]
    assert int(f(rt.constant(3), rt.constant(5))) == 30
    assert int(f(rt.constant(10), rt.constant(1))) == 20
    assert len(calls) == 1
    graph = f.get_concrete_function(rt.constant(3), rt.constant(5)).graph
    assert sum(op.type == "While" for op in graph.get_operations()) == 1


def test_nested_cond_in_while():
    def collatz_steps(n):
        def body(v, steps):
            v = rt.cond(v % 2 == 0, lambda: v // 2, lambda: 3 * v + 1)
            return v, steps + 1
        return rt.while_loop(lambda v, steps: v > 1, body, (n, rt.constant(0)))[1]
    g = rt.function(collatz_steps, autograph=False)
    for n in (1, 6, 27):
        assert int(g(rt.constant(n))) == int(collatz_steps(rt.constant(n)))
    assert int(g(rt.constant(27))) == 111


def test_nested_while_loops():
    def f(n):
        def outer(i, total):
            inner = rt.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), (rt.constant(0), total))[1]
            return i + 1, inner
        return rt.while_loop(lambda i, t: i < n, outer, (rt.constant(0), rt.constant(0)))[1]
    g = rt.function(f, autograph=False)
    assert int(g(rt.constant(5))) == int(f(rt.constant(5))) == sum(j for i in range(5) for j in range(i))


def test_while_loop_invariant_errors():
    with pytest.raises(TypeError, match="dtype"):
        rt.function(lambda x: rt.while_loop(lambda v: v < 3, lambda v: rt.cast(v, rt.float32), x),
                    autograph=False)(rt.constant(1))
    with pytest.raises(ValueError, match="shape"):
        rt.function(lambda x: rt.while_loop(lambda v: rt.size(v) < 3, lambda v: rt.concat([v, v], 0), x),
                    autograph=False)(rt.constant([1]))
    with pytest.raises(ValueError, match="same structure"):
        rt.function(lambda x: rt.while_loop(lambda a, b: a < 3, lambda a, b: a, (x, x)),
                    autograph=False)(rt.constant(1))


def test_while_loop_shape_invariants():
    def grow(x):
        return rt.while_loop(lambda v: rt.size(v) < 8, lambda v: rt.concat([v, v], 0), x,
                             shape_invariants=[rt.TensorShape([None])])
    g = rt.function(grow, autograph=False)
    assert g(rt.constant([1])).numpy().tolist() == [1] * 8
    assert g.get_concrete_function(rt.constant([1])).outputs[0].shape == rt.TensorShape([None])
    assert grow(rt.constant([1])).numpy().tolist() == [1] * 8


def test_while_loop_maximum_iterations():
    f = rt.function(lambda n: rt.while_loop(lambda i: True, lambda i: i + 1, rt.constant(0),
                                            maximum_iterations=n), autograph=False)
    assert int(f(rt.constant(7))) == 7


def test_tensor_array_in_while_loop():
    def squares(n):
        ta = rt.TensorArray(rt.int32, size=0, dynamic_size=True)

        def body(i, ta):
            return i + 1, ta.write(i, i * i)
        _, ta = rt.while_loop(lambda i, ta: i < n, body, (rt.constant(0), ta))
        return ta.stack(), ta.size()
    g = rt.function(squares, autograph=False)
    values, size = g(rt.constant(5))
    assert values.numpy().tolist() == [0, 1, 4, 9, 16] and int(size) == 5
    values, size = g(rt.constant(0))
    assert values.numpy().tolist() == [] and int(size) == 0
    eager_values, _ = squares(rt.constant(3))
    assert eager_values.numpy().tolist() == [0, 1, 4]
    graph = g.get_concrete_function(rt.constant(5)).graph
    assert {"While", "TensorListReserve", "TensorListSetItem", "TensorListStack"} <= op_types(graph)
    graph.verify()


def test_tensor_array_reads_in_while_loop():
    def running_sum(x):
        ta = rt.TensorArray(rt.float32, size=rt.size(x)).unstack(x)
        out = rt.TensorArray(rt.float32, size=rt.size(x))

        def body(i, acc, out):
            acc = acc + ta.read(i)
            return i + 1, acc, out.write(i, acc)
        _, _, out = rt.while_loop(lambda i, acc, out: i < rt.size(x), body, (rt.constant(0), rt.constant(0.0), out))
        return out.stack()
    x = rt.constant([1.0, 2.0, 3.0])
    f = rt.function(running_sum, input_signature=[rt.TensorSpec([None], rt.float32)], autograph=False)
    assert f(x).numpy().tolist() == [1.0, 3.0, 6.0]
    assert running_sum(x).numpy().tolist() == [1.0, 3.0, 6.0]


def test_empty_tensor_array_keeps_element_shape():
    f = rt.function(lambda x: rt.TensorArray(rt.int32, size=0, dynamic_size=True).unstack(x).stack(),
                    input_signature=[rt.TensorSpec([None, None], rt.int32)], autograph=False)
    assert f(rt.constant(np.zeros((0, 2), np.int32))).shape == (0, 2)


# ---------------------------------------------------------------------------
# Modules

def test_module_with_variables_and_function_methods():
    class Dense(rt.Module):
        def __init__(self):
            super().__init__(name="dense")
            self.w = rt.Variable([[1.0], [2.0]], name="w")
            self.b = rt.Variable([0.5], name="b", trainable=False)
            self.children = [rt.Module()]

        @rt.function(input_signature=[rt.TensorSpec([None, 2], rt.float32)], autograph=False)
        def __call__(self, x):
            return rt.matmul(x, self.w) + self.b
    layer = Dense()
    assert_matches_numpy(layer(rt.constant([[1.0, 1.0]])), np.array([[3.5]], np.float32))
    layer.w.assign([[0.0], [0.0]])
    assert_matches_numpy(layer(rt.constant([[1.0, 1.0], [2.0, 2.0]])), np.array([[0.5], [0.5]], np.float32))
    assert layer.name == "dense"
    assert [v.name for v in layer.variables] == ["b", "w"]          # tf.Module's order: attributes by name
    assert [v.name for v in layer.trainable_variables] == ["w"]


# ---------------------------------------------------------------------------
# Former core gaps (side-effect-only branches, one-element loop lists, pickling after a generic run)

def test_cond_with_side_effect_only_branches():
    def f(p):
        return rt.cond(p, lambda: rt.print("then", output_stream=sys.stdout),
                       lambda: rt.print("else", output_stream=sys.stdout))
    g = rt.function(f, autograph=False)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert f(rt.constant(True)) is None
        assert g(rt.constant(True)) is None
        assert g(rt.constant(False)) is None
    assert buf.getvalue() == "then\nthen\nelse\n"


def test_while_loop_single_element_list_body_returns_tensor():
    def f(n):
        return rt.while_loop(lambda i: i < n, lambda i: i + 1, [rt.constant(0)])
    assert [int(t) for t in f(rt.constant(3))] == [3]
    assert [int(t) for t in rt.function(f, autograph=False)(rt.constant(3))] == [3]


def test_graph_pickles_after_generic_and_reference_runs():
    import pickle

    @rt.function
    def scale(x):
        return x * 2.0 + 1.0
    cf = scale.get_concrete_function(rt.TensorSpec([None], rt.float32))
    cf(rt.constant([1.0, 2.0]))                        # the generic executor caches its compiled plan
    run_graph(cf.graph, [np.array([1.0], np.float32)])  # the reference executor caches its own
    copy = pickle.loads(pickle.dumps(cf.graph))
    assert run_graph(copy, [np.array([3.0], np.float32)])[0].tolist() == [7.0]


def test_shapes_built_from_partly_known_sizes_keep_the_known_dims():
    """``zeros([rt.shape(x)[1], 1])``, ``reshape(x, [-1, n, 1])``, ``broadcast_to(v, [rt.shape(x)[0], 3])``: the
    dims known while tracing are static, as TensorFlow's ``constant_value_as_shape`` makes them; the values are
    the same as eagerly."""
    seen = {}

    @rt.function(input_signature=[rt.TensorSpec([None, 5])])
    def f(x):
        seen["zeros"] = rt.zeros([rt.shape(x)[0], 1]).shape.as_list()
        seen["static dim"] = rt.ones([rt.shape(x)[1], rt.shape(x)[0]]).shape.as_list()
        seen["reshape"] = rt.reshape(x, [-1, rt.shape(x)[0] * 5, 1]).shape.as_list()
        seen["broadcast"] = rt.broadcast_to(rt.ones([1]), [rt.shape(x)[0], 3]).shape.as_list()
        seen["concat"] = rt.zeros(rt.concat([rt.shape(x), [2]], 0)).shape.as_list()
        seen["cast"] = rt.zeros(rt.cast(rt.shape(x), rt.int64)).shape.as_list()
        # a mean's gradient: its keepdims shape where(reduced axes, 1, shape)
        seen["where"] = rt.reshape(x[:1], rt.where([True, False], 1, rt.shape(x))).shape.as_list()
        return rt.reshape(x, [-1, rt.shape(x)[0] * 5, 1]) + rt.zeros([1, rt.shape(x)[0] * 5, 1])
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    out = f(x).numpy()
    assert seen == {"zeros": [None, 1], "static dim": [5, None], "reshape": [None, None, 1],
                    "broadcast": [None, 3], "concat": [None, 5, 2], "cast": [None, 5], "where": [1, 5]}, seen
    np.testing.assert_array_equal(out, np.reshape(x, (-1, 10, 1)))
    with pytest.raises(ValueError, match="non-negative"):
        rt.function(lambda x: rt.zeros([rt.shape(x)[0], -2]), input_signature=[rt.TensorSpec([None])]
                    ).get_concrete_function()
