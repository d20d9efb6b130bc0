"""``rt.GradientTape``: its API and errors, and gradients through control flow, Functions and second order.

Each program is differentiated eagerly and inside ``rt.function`` (where the backward pass is part of
the traced graph); the two must agree, and agree with a closed form or with finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def grads_both(program, *args):
    """``program(*args)`` -> gradients, run eagerly and as a traced Function; checks they agree."""
    eager = program(*args)
    traced = rt.function(program)(*args)
    flat_e = eager if isinstance(eager, (list, tuple)) else [eager]
    flat_t = traced if isinstance(traced, (list, tuple)) else [traced]
    for e, t in zip(flat_e, flat_t):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    return eager


# ---------------------------------------------------------------------------
# The tape's API.

def test_non_persistent_tape_answers_once():
    x = rt.constant(2.0)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="non-persistent GradientTape can only be used to compute one set"):
        tape.gradient(y, x)


def test_persistent_tape_answers_more_than_once():
    x = rt.constant(2.0)
    with rt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, x)) == 12.0


def test_unwatched_and_unconnected_sources_get_none_or_zeros():
    x, u = rt.constant([1.0, 2.0]), rt.constant(3.0)
    with rt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = rt.reduce_sum(x * u)
    assert tape.gradient(y, u) is None                          # not watched
    w = rt.Variable(1.0)
    assert tape.gradient(y, w) is None                          # never read
    np.testing.assert_array_equal(tape.gradient(y, w, unconnected_gradients="zero").numpy(), 0.0)
    dx, du = tape.gradient(y, [x, u])
    np.testing.assert_array_equal(dx.numpy(), [3.0, 3.0])
    assert du is None


def test_sources_and_targets_may_be_structures_and_weighted():
    a, b = rt.Variable([1.0, 2.0]), rt.Variable(3.0)
    with rt.GradientTape() as tape:
        ys = [a * b, rt.square(b)]
    grads = tape.gradient(ys, {"a": a, "b": [b]}, output_gradients=[rt.constant([1.0, 10.0]), rt.constant(2.0)])
    np.testing.assert_array_equal(grads["a"].numpy(), [3.0, 30.0])
    np.testing.assert_array_equal(grads["b"][0].numpy(), 1.0 + 20.0 + 12.0)


def test_watch_accessed_variables_false_and_explicit_watch():
    v, w = rt.Variable(2.0), rt.Variable(5.0)
    with rt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    assert tape.watched_variables() == (w,)
    assert tape.gradient(y, [v, w])[0] is None


def test_non_trainable_variables_are_not_watched():
    v = rt.Variable(2.0, trainable=False)
    with rt.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, v) is None


def test_stop_recording_and_stop_gradient():
    x = rt.constant(3.0)
    with rt.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
        z = x * y + rt.stop_gradient(x) * x
    assert float(tape.gradient(z, x)) == 9.0 + 3.0


def test_integer_paths_have_no_gradient():
    x = rt.constant(2.5)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = rt.cast(rt.cast(x, rt.int32), rt.float32) * x + rt.floordiv(x, 1.0)
    assert float(tape.gradient(y, x)) == 2.0


def test_jacobian():
    x = rt.constant([1.0, 2.0, 3.0])
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag([2.0, 4.0, 6.0]))


def test_watch_rejects_python_values():
    with rt.GradientTape() as tape:
        with pytest.raises(ValueError, match="tensor or a variable"):
            tape.watch(3.0)


# ---------------------------------------------------------------------------
# Control flow, Functions, broadcasting.

def test_gradient_through_tensor_if_and_loops_inside_function():
    @rt.function
    def f(x):
        with rt.GradientTape() as tape:
            tape.watch(x)
            y = x
            for i in rt.range(4):
                if i % 2 == 0:
                    y = y * x
                else:
                    y = rt.sin(y)
            n = 0
            while n < 2:
                y = y + x * x
                n += 1
        return tape.gradient(y, x)

    def expected(x, eps=1e-4):
        def value(x):
            y = x
            for i in range(4):
                y = y * x if i % 2 == 0 else np.sin(y)
            return y + 2 * x * x
        return (value(x + eps) - value(x - eps)) / (2 * eps)
    for x in (0.3, 1.1, -0.7):
        np.testing.assert_allclose(f(rt.constant(x, rt.float64)).numpy(), expected(x), rtol=1e-6)


def test_loop_gradient_keeps_per_iteration_values():
    """The backward loop reads what each iteration saw (stacked by the forward loop), not recomputed values."""
    @rt.function
    def f(x):
        with rt.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in rt.range(3):
                y = y * x
        return tape.gradient(y, x)
    assert float(f(rt.constant(2.0))) == 32.0
    graph = f.get_concrete_function(rt.constant(2.0)).graph
    stacks = [op for op in graph.get_operations() if op.type == "TensorListReserve"]
    assert stacks, "the forward loop should stack the loop variable for its gradient"


def test_loop_gradient_reaches_variables_read_in_the_body():
    w = rt.Variable([[0.5, -0.2], [0.1, 0.3]])

    def program(xs):
        with rt.GradientTape() as tape:
            h = rt.zeros([1, 2])
            for t in rt.range(3):
                h = rt.tanh(rt.matmul(h, w) + xs[t])
            loss = rt.reduce_sum(h * h)
        return tape.gradient(loss, w)
    xs = rt.constant(np.random.default_rng(0).standard_normal((3, 1, 2)).astype(np.float32))
    grad = rt.function(program)(xs)

    def loss(wv):
        h = np.zeros((1, 2))
        for t in range(3):
            h = np.tanh(h @ wv + xs.numpy()[t])
        return np.sum(h * h)
    numeric = np.zeros((2, 2))
    base = w.numpy().astype(np.float64)
    for index in np.ndindex(2, 2):
        step = np.zeros((2, 2))
        step[index] = 1e-5
        numeric[index] = (loss(base + step) - loss(base - step)) / 2e-5
    np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-3, atol=1e-5)


def test_gradient_through_tensor_array_in_a_loop():
    def program(x):
        with rt.GradientTape() as tape:
            tape.watch(x)
            ta = rt.TensorArray(rt.float32, size=3)
            for i in rt.range(3):
                ta = ta.write(i, x[i] * rt.cast(i + 1, rt.float32))
            y = rt.reduce_sum(ta.stack() * ta.stack())
        return tape.gradient(y, x)
    x = rt.constant([1.0, 2.0, 3.0])
    np.testing.assert_allclose(rt.function(program)(x).numpy(), 2 * np.array([1.0, 4.0, 9.0]) * [1, 2, 3])


def test_gradient_through_cond_with_variables_in_branches():
    v = rt.Variable(3.0)

    @rt.function
    def f(x):
        with rt.GradientTape() as tape:
            if x > 0:
                y = v * v * x
            else:
                y = v + x
        return tape.gradient(y, v)
    assert float(f(rt.constant(2.0))) == 12.0
    assert float(f(rt.constant(-2.0))) == 1.0


def test_eager_call_of_a_function_records_one_op_and_nests():
    @rt.function
    def inner(x):
        return rt.sin(x) * x

    @rt.function
    def outer(x):
        return inner(x) * 2.0 + inner(x * x)

    x = rt.constant(0.7)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = outer(x)
    assert [op.type for op in tape._records] == ["PartitionedCall"]

    def f(x):
        return 2 * np.sin(x) * x + np.sin(x * x) * x * x
    numeric = (f(0.7 + 1e-4) - f(0.7 - 1e-4)) / 2e-4
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, rtol=1e-3)


def test_function_with_a_loop_called_under_a_tape():
    @rt.function
    def power(x):
        y = x
        for _ in rt.range(4):
            y = y * x
        return y
    x = rt.constant(1.5)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = power(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 5 * 1.5 ** 4, rtol=1e-6)
    # the user's graph was not changed by the gradient (a private copy was)
    graph = power.get_concrete_function(x).graph
    assert "TensorListReserve" not in {op.type for op in graph.get_operations()}


def test_second_order_eager_in_function_and_across_function_calls():
    def program(x):
        with rt.GradientTape() as outer:
            outer.watch(x)
            with rt.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            dy = inner.gradient(y, x)
        return dy, outer.gradient(dy, x)
    dy, d2y = grads_both(program, rt.constant(3.0))
    assert (float(dy), float(d2y)) == (27.0, 18.0)

    cube = rt.function(lambda x: rt.sin(x) * x * x, autograph=False)
    x = rt.constant(np.float64(0.4))
    with rt.GradientTape() as outer:
        outer.watch(x)
        with rt.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    s, c = np.sin(0.4), np.cos(0.4)
    np.testing.assert_allclose(d2.numpy(), -s * 0.16 + 4 * c * 0.4 + 2 * s, rtol=1e-9)


def test_second_order_through_a_loop():
    @rt.function
    def f(x):
        with rt.GradientTape() as outer:
            outer.watch(x)
            with rt.GradientTape() as inner:
                inner.watch(x)
                y = x
                for _ in rt.range(2):
                    y = y * x
            dy = inner.gradient(y, x)
        return outer.gradient(dy, x)
    assert float(f(rt.constant(2.0))) == 12.0                       # d2(x^3)/dx2 = 6x


def test_broadcasting_gradients_with_unknown_dims():
    @rt.function(input_signature=[rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32)])
    def f(x, b):
        with rt.GradientTape() as tape:
            tape.watch([x, b])
            y = rt.reduce_sum((x + b) * (x * 2.0))
        return tape.gradient(y, [x, b])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1.0, -1.0, 0.5], np.float32)
    dx, db = f(x, b)
    np.testing.assert_allclose(dx.numpy(), 4 * x + 2 * b)
    np.testing.assert_allclose(db.numpy(), (2 * x).sum(0))
    dx, db = f(x[:, :1], b)                          # x's column broadcasts against b at run time
    np.testing.assert_allclose(db.numpy(), 2 * np.repeat(x[:, :1], 3, 1).sum(0))
    np.testing.assert_allclose(dx.numpy(), (4 * x[:, :1] + 2 * b).sum(1, keepdims=True))


def test_gradient_graph_is_optimized_and_verifies():
    from runtime.optimizer import optimize

    @rt.function
    def f(x, w):
        with rt.GradientTape() as tape:
            tape.watch(w)
            loss = rt.reduce_mean(rt.square(rt.matmul(x, w) - 1.0))
        return tape.gradient(loss, w)
    x = rt.constant(np.ones((4, 3), np.float32))
    w = rt.constant(np.full((3, 2), 0.5, np.float32))
    concrete = f.get_concrete_function(x, w)
    optimized = optimize(concrete.graph)
    optimized.verify()
    assert len(optimized.operations) <= len(concrete.graph.operations)
    from runtime.executor import run_graph
    np.testing.assert_allclose(run_graph(optimized, [x.numpy(), w.numpy()])[0], f(x, w).numpy())


def test_matches_tensorflow_on_a_small_network():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w1 = rng.standard_normal((4, 6)).astype(np.float32)
    w2 = rng.standard_normal((6, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 1, 0], np.int32)

    def network(lib, w1, w2):
        with lib.GradientTape() as tape:
            tape.watch([w1, w2])
            h = lib.nn.relu(lib.matmul(x, w1))
            logits = lib.matmul(h, w2)
            loss = lib.reduce_mean(lib.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            loss = loss + lib.reduce_sum(lib.reduce_logsumexp(logits, 1)) * 0.1
        return tape.gradient(loss, [w1, w2])
    ours = network(rt, rt.constant(w1), rt.constant(w2))
    theirs = network(tf, tf.constant(w1), tf.constant(w2))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_gradient_of_a_loop_inside_a_tensor_if():
    @rt.function
    def f(x):
        with rt.GradientTape() as tape:
            tape.watch(x)
            if x > 0:
                y = x
                for _ in rt.range(3):
                    y = y * x
            else:
                y = rt.sin(x)
        return tape.gradient(y, x)
    assert float(f(rt.constant(2.0))) == 32.0
    np.testing.assert_allclose(f(rt.constant(-1.0)).numpy(), np.cos(-1.0), rtol=1e-6)


def test_random_numbers_in_a_differentiated_branch_are_a_clear_error():
    @rt.function
    def f(x):
        with rt.GradientTape() as tape:
            tape.watch(x)
            if x > 0:
                y = x * rt.random.uniform([])
            else:
                y = x
        return tape.gradient(y, x)
    with pytest.raises(ValueError, match="RandomUniform.*compute it again"):
        f(rt.constant(1.0))


def test_an_op_without_a_gradient_stops_it():
    x = rt.constant([1.0, 2.0])
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = rt.reduce_sum(x * rt.ones_like(x) + rt.zeros_like(x) * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 1.0])


# ---------------------------------------------------------------------------
# TensorFlow's remaining tape options: the UnconnectedGradients enum, jacobian(unconnected_gradients=),
# batch_jacobian.

def test_unconnected_gradients_enum_and_string_agree():
    def program(x, u):
        with rt.GradientTape() as tape:
            tape.watch([x, u])
            y = x * x
        return tape.gradient(y, [x, u], unconnected_gradients=rt.UnconnectedGradients.ZERO)

    dx, du = grads_both(program, rt.constant(3.0), rt.constant([1.0, 2.0]))
    assert float(dx) == 6.0 and du.numpy().tolist() == [0.0, 0.0] and du.dtype == rt.float32
    with pytest.raises(ValueError, match="unconnected_gradients"):
        with rt.GradientTape() as tape:
            x = rt.constant(1.0)
            tape.watch(x)
        tape.gradient(x * 2.0, x, unconnected_gradients="zeros")


def test_jacobian_with_zero_for_unconnected_sources():
    def program(x, u):
        with rt.GradientTape() as tape:
            tape.watch([x, u])
            y = x * x
        return tape.jacobian(y, [x, u], unconnected_gradients="zero")

    jx, ju = grads_both(program, rt.constant([1.0, 2.0, 3.0]), rt.constant(2.0))
    np.testing.assert_array_equal(jx.numpy(), np.diag([2.0, 4.0, 6.0]))
    assert ju.shape == (3,) and ju.numpy().tolist() == [0.0, 0.0, 0.0]


def test_batch_jacobian_keeps_each_examples_block():
    def program(x, w):
        with rt.GradientTape() as tape:
            tape.watch(x)
            y = rt.tanh(rt.matmul(x, w))                 # [batch, 2] from [batch, 3]
        return tape.batch_jacobian(y, x)

    x = rt.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    w = rt.constant(np.array([[1.0, -1.0], [0.5, 2.0], [-0.3, 0.1]], np.float32))
    jac = grads_both(program, x, w)
    assert jac.shape == (4, 2, 3)
    expected = (1 - np.tanh(x.numpy() @ w.numpy()) ** 2)[:, :, None] * w.numpy().T[None]
    np.testing.assert_allclose(jac.numpy(), expected, rtol=1e-5)


# ---------------------------------------------------------------------------
# rt.py_function is differentiable (its function's ops), as tf.py_function is; numpy_function is not.

def test_py_function_gradient_eagerly_in_a_function_and_second_order():
    def program(x, y):
        with rt.GradientTape() as tape:
            tape.watch([x, y])
            z, _ = rt.py_function(lambda a, b: (a * a * b, rt.size(a)), [x, y], [rt.float32, rt.int32])
            loss = rt.reduce_sum(z) * 2.0
        return tape.gradient(loss, [x, y])

    dx, dy = grads_both(program, rt.constant([1.0, 2.0]), rt.constant([3.0, 4.0]))
    assert dx.numpy().tolist() == [12.0, 32.0] and dy.numpy().tolist() == [2.0, 8.0]

    x = rt.constant(3.0)
    with rt.GradientTape() as outer:
        outer.watch(x)
        with rt.GradientTape() as inner:
            inner.watch(x)
            y = rt.py_function(lambda a: a * a * a, [x], rt.float32)
        dy = inner.gradient(y, x)
    assert float(dy) == 27.0 and float(outer.gradient(dy, x)) == 18.0

    with rt.GradientTape() as tape:
        tape.watch(x)
        y = rt.numpy_function(lambda a: a * a, [x], rt.float32)
    assert tape.gradient(y, x) is None


# -- a target that is itself a source (issue 19, item 10): TensorFlow's gradient of x with respect to x is the
# output gradient, watched or not (it was None for a variable, and for an unwatched tensor)

def _floats(grads):
    return [None if g is None else np.asarray(g).tolist() for g in grads]


def test_the_gradient_of_a_variable_with_respect_to_itself_is_one():
    v0, v1 = rt.Variable(2.0), rt.Variable(3.0)
    with rt.GradientTape(persistent=True) as tape:
        result = v0
        y = v0 * 3.0
    assert _floats(tape.gradient(result, [v0, v1])) == [1.0, None]
    assert _floats(tape.gradient([result, y], [v0, v1])) == [4.0, None]
    assert _floats(tape.gradient(result, [v0], output_gradients=rt.constant(5.0))) == [5.0]
    assert _floats([tape.gradient(result, v0)]) == [1.0]
    vector = rt.Variable([1.0, 2.0])
    with rt.GradientTape(watch_accessed_variables=False) as tape:
        result = vector
    assert _floats(tape.gradient(result, [vector, v1])) == [[1.0, 1.0], None]


def test_the_gradient_of_a_tensor_with_respect_to_itself_is_one_watched_or_not():
    x = rt.constant(4.0)
    with rt.GradientTape(persistent=True) as tape:
        r = x
    assert _floats(tape.gradient(r, [x])) == [1.0]
    with rt.GradientTape() as tape:
        tape.watch(x)
        r = x
    assert _floats(tape.gradient(r, [x])) == [1.0]          # not twice


def test_the_gradient_of_a_variable_with_respect_to_itself_inside_a_function():
    v0, v1 = rt.Variable(2.0), rt.Variable(3.0)

    @rt.function
    def grads():
        with rt.GradientTape() as tape:
            result = v0
        return tape.gradient(result, [v0, v1])

    assert _floats(grads()) == [1.0, None]


# -- a gradient through a tensor loop whose source's shape is partly known (issue 19, item 14) -------------------

def _slice_in_a_loop(x):
    with rt.GradientTape() as tape:
        tape.watch(x)
        total = rt.constant(0.0)
        for _ in rt.range(2):
            s = x[:, 2]
            total += rt.reduce_sum(s * s)
    return tape.gradient(total, x)


@pytest.mark.parametrize("shape", [[1, 3], [1, None], [None, None], [None, 3]])
def test_gradient_through_a_loop_for_a_source_of_partly_known_shape(shape):
    # with [1, None] the backward loop's sum of the slice gradients lost the known first dim ((None, None) against
    # the invariant (1, None)) and tracing failed
    x = rt.constant([[1.0, 2.0, 3.0]])
    traced = rt.function(_slice_in_a_loop, input_signature=[rt.TensorSpec(shape, rt.float32)])
    np.testing.assert_array_equal(traced(x).numpy(), [[0.0, 0.0, 12.0]])
    np.testing.assert_array_equal(_slice_in_a_loop(x).numpy(), [[0.0, 0.0, 12.0]])
    assert traced.get_concrete_function().outputs[0].shape.is_compatible_with(shape)
