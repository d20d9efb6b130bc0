"""TensorFlow functions rt composes from other ops (``runtime/ops/composite_ops.py``), against numpy written
from TensorFlow's documented formulas, eagerly and traced over ``None`` dims, and their gradients."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = (RNG.standard_normal(5) * 10).astype(np.float32)


def _traced(fn, *arrays):
    f = rt.function(fn, input_signature=[rt.TensorSpec([None] * a.ndim, rt.as_dtype(a.dtype)) for a in arrays])
    return f(*arrays)


def test_clip_by_norm_scales_tensors_whose_norm_exceeds_the_bound_along_axes():
    norm = np.sqrt((A.astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(rt.clip_by_norm(A, 1.5).numpy(), A * 1.5 / max(norm, 1.5), rtol=1e-6)
    np.testing.assert_array_equal(rt.clip_by_norm(A, 100.0).numpy(), A * np.float32(100.0) / np.float32(100.0))
    rows = np.sqrt((A.astype(np.float64) ** 2).sum(1, keepdims=True))
    want = A * 1.0 / np.maximum(rows, 1.0)
    np.testing.assert_allclose(rt.clip_by_norm(A, 1.0, axes=[1]).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(_traced(lambda x: rt.clip_by_norm(x, 1.0, axes=[1]), A).numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(rt.clip_by_norm(np.zeros(3, np.float32), 1.0).numpy(), np.zeros(3))


def test_clip_by_global_norm_returns_the_scaled_list_and_the_norm():
    norm = np.sqrt((A.astype(np.float64) ** 2).sum() + (B.astype(np.float64) ** 2).sum())
    clipped, got_norm = rt.clip_by_global_norm([A, None, B], 2.0)
    assert clipped[1] is None
    np.testing.assert_allclose(got_norm.numpy(), norm, rtol=1e-6)
    np.testing.assert_allclose(clipped[0].numpy(), A * 2.0 / norm, rtol=1e-5)
    np.testing.assert_allclose(clipped[2].numpy(), B * 2.0 / norm, rtol=1e-5)
    np.testing.assert_allclose(rt.linalg.global_norm([A, B]).numpy(), norm, rtol=1e-6)
    small, _ = rt.clip_by_global_norm([A], 1e6)
    np.testing.assert_allclose(small[0].numpy(), A, rtol=1e-6)
    inf, inf_norm = rt.clip_by_global_norm([np.array([np.inf], np.float32), A], 1.0)
    assert np.isinf(inf_norm.numpy()) and np.isnan(inf[1].numpy()).all()        # TensorFlow's NaNs
    with pytest.raises(TypeError, match="sequence"):
        rt.clip_by_global_norm(A, 1.0)


def test_a_training_step_clips_its_gradients_by_global_norm():
    w = rt.Variable(np.ones((4, 2), np.float32))

    @rt.function(input_signature=[rt.TensorSpec([None, 4], rt.float32)])
    def step(x):
        with rt.GradientTape() as tape:
            loss = rt.reduce_sum(rt.matmul(x, w) ** 2)
        (g,), norm = rt.clip_by_global_norm(tape.gradient(loss, [w]), 0.5)
        w.assign_sub(g)
        return norm
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    grad = 2 * x.T @ (x @ np.ones((4, 2), np.float32))
    norm = step(x).numpy()
    np.testing.assert_allclose(norm, np.sqrt((grad.astype(np.float64) ** 2).sum()), rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), 1 - grad * 0.5 / norm, rtol=1e-5)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    x, y, z = np.arange(3.0), np.arange(4.0) * 2, np.arange(2.0) - 1
    for args in ((x, y), (x, y, z), (x,)):
        want = np.meshgrid(*args, indexing=indexing)
        got = rt.meshgrid(*args, indexing=indexing)
        assert [g.shape.as_list() for g in got] == [list(w.shape) for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    traced = _traced(lambda a, b: rt.meshgrid(a, b, indexing=indexing), x, y)
    for g, w in zip(traced, np.meshgrid(x, y, indexing=indexing)):
        np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="indexing"):
        rt.meshgrid(x, y, indexing="yx")


def test_embedding_lookup_gathers_rows():
    np.testing.assert_array_equal(rt.nn.embedding_lookup(A, [2, 0, 2]).numpy(), A[[2, 0, 2]])
    np.testing.assert_array_equal(rt.nn.embedding_lookup([A], [[1], [0]]).numpy(), A[[[1], [0]]])
    with pytest.raises(ValueError, match="max_norm"):
        rt.nn.embedding_lookup(A, [0], max_norm=1.0)


def test_batch_normalization_and_log_sigmoid():
    mean, var = A.mean(0), A.var(0)
    offset, scale = B[:4], B[1:]
    inv = 1 / np.sqrt(var + 1e-3) * scale
    want = A * inv + (offset - mean * inv)
    np.testing.assert_allclose(rt.nn.batch_normalization(A, mean, var, offset, scale, 1e-3).numpy(), want,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rt.nn.batch_normalization(A, mean, var, None, None, 1e-3).numpy(),
                               (A - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-5)
    x = np.array([-100.0, -1.0, 0.0, 2.0, 100.0], np.float32)
    np.testing.assert_allclose(rt.math.log_sigmoid(x).numpy(), -np.logaddexp(0, -x.astype(np.float64)), rtol=1e-6,
                               atol=1e-30)


def test_nd_pooling_entry_points_pool_4d_inputs():
    img = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    np.testing.assert_array_equal(rt.nn.max_pool(img, 2, 2, "VALID").numpy(),
                                  rt.nn.max_pool2d(img, 2, 2, "VALID").numpy())
    np.testing.assert_array_equal(rt.nn.avg_pool(img, [1, 3, 3, 1], [1, 2, 2, 1], "SAME").numpy(),
                                  rt.nn.avg_pool2d(img, 3, 2, "SAME").numpy())
    with pytest.raises(ValueError, match="4-D NHWC"):
        rt.nn.max_pool(img[0], 2, 2, "VALID")


def test_one_hot_takes_a_depth_known_only_when_the_graph_runs():
    """``rt.one_hot(labels, rt.shape(logits)[1])``, as tutorials write it: the same values as a Python depth, on
    every axis, out-of-range and negative indices all off."""
    indices = np.array([[0, 2], [3, -1]], np.int32)
    for axis in (-1, 0, 1, 2):
        f = rt.function(lambda i, x: rt.one_hot(i, rt.shape(x)[1], on_value=5.0, off_value=-1.0, axis=axis))
        got = f(indices, np.zeros((2, 3), np.float32)).numpy()
        want = rt.one_hot(indices, 3, on_value=5.0, off_value=-1.0, axis=axis).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    f = rt.function(lambda i, x: rt.one_hot(i, rt.shape(x)[0], dtype=rt.int64),
                    input_signature=[rt.TensorSpec([None], rt.int32), rt.TensorSpec([None], rt.float32)])
    np.testing.assert_array_equal(f(np.array([1, 0, 7], np.int32), np.zeros(4, np.float32)).numpy(),
                                  np.eye(4, dtype=np.int64)[[1, 0]].tolist() + [[0, 0, 0, 0]])
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        rt.function(lambda i, x: rt.one_hot(i, rt.shape(x)[0], axis=3))(indices, np.zeros(3, np.float32))
