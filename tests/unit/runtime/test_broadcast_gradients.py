"""Gradients summed back over axes that were broadcast where only the run-time sizes tell (dims of unknown size):
``BroadcastTo`` (its output is the other side of the broadcast) and batched ``MatMul`` (batch dims of 1)."""
from __future__ import annotations

import numpy as np

import runtime as rt
from runtime import executor

F = rt.float32


def _traced_and_eager(fn, specs, args):
    concrete = rt.function(fn, input_signature=specs, autograph=False).get_concrete_function()
    traced = executor.run_graph(concrete.graph, [np.asarray(a) for a in args])
    eager = fn(*[rt.constant(a) for a in args])
    return [np.asarray(t) for t in traced], [t.numpy() for t in eager]


def test_second_order_through_a_mean_added_to_its_input():
    def f(x, w):
        with rt.GradientTape() as outer:
            outer.watch(w)
            with rt.GradientTape() as tape:
                tape.watch([x, w])
                y = rt.matmul(x, w)
                loss = rt.reduce_sum(rt.exp(y * 2.0 + rt.reduce_mean(y)))
            gx = tape.gradient(loss, x)
            penalty = rt.reduce_sum(gx * gx)
        return [outer.gradient(penalty, w)]
    args = [np.full((2, 3), 0.1, np.float32), np.full((3, 4), 0.1, np.float32)]
    traced, eager = _traced_and_eager(f, [rt.TensorSpec([None, None], F), rt.TensorSpec([3, 4], F)], args)
    np.testing.assert_allclose(traced[0], eager[0], rtol=1e-5)


def test_broadcast_to_of_unknown_dims_sums_back():
    def f(x, y):
        with rt.GradientTape() as tape:
            tape.watch(x)
            loss = rt.reduce_sum(rt.broadcast_to(x, rt.shape(y)) * y)
        return [tape.gradient(loss, x)]
    args = [np.ones((1, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)]
    traced, eager = _traced_and_eager(f, [rt.TensorSpec([None, None], F)] * 2, args)
    assert traced[0].shape == (1, 3)
    np.testing.assert_allclose(traced[0], eager[0])


def test_batched_matmul_gradients_sum_over_broadcast_batches():
    def f(a, b):
        with rt.GradientTape() as tape:
            tape.watch([a, b])
            loss = rt.reduce_sum(rt.matmul(a, b) ** 2)
        return tape.gradient(loss, [a, b])
    args = [np.ones((1, 2, 3), np.float32), np.arange(60, dtype=np.float32).reshape(5, 3, 4) * 0.01]
    traced, eager = _traced_and_eager(f, [rt.TensorSpec([None, 2, 3], F), rt.TensorSpec([None, 3, 4], F)], args)
    assert [t.shape for t in traced] == [(1, 2, 3), (5, 3, 4)]
    for got, want in zip(traced, eager):
        np.testing.assert_allclose(got, want, rtol=1e-5)
