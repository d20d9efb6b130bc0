"""``rt.nn.avg_pool2d`` and ``rt.keras.layers.AveragePooling2D`` against a direct numpy reference (TensorFlow's
rules: ``SAME`` gives ``ceil(size / stride)`` outputs, pads the excess with the smaller half before, and does
not count the padding), eagerly, traced over ``None`` dims, and their gradient."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

CASES = [((2, 7, 9, 3), 3, 2, "SAME"), ((2, 7, 9, 3), 3, 2, "VALID"), ((1, 8, 8, 4), 2, 2, "VALID"),
         ((1, 5, 5, 2), (2, 3), (1, 2), "SAME"), ((1, 2, 2, 1), 3, 1, "VALID"), ((3, 6, 4, 2), 4, 3, "SAME"),
         ((1, 4, 4, 1), 1, 3, "SAME")]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _reference(x, ksize, strides, padding):
    """The mean over each window's real elements, and the gradient of ``sum(mean ** 2)``."""
    (kh, kw), (sh, sw) = _pair(ksize), _pair(strides)
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
        top, left = max((oh - 1) * sh + kh - h, 0) // 2, max((ow - 1) * sw + kw - w, 0) // 2
    else:
        oh, ow = max((h - kh) // sh + 1, 0), max((w - kw) // sw + 1, 0)
        top = left = 0
    y = np.zeros((n, oh, ow, c), np.float64)
    grad = np.zeros(x.shape, np.float64)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - top, j * sw - left
            rows = slice(max(r0, 0), min(r0 + kh, h))
            cols = slice(max(c0, 0), min(c0 + kw, w))
            window = x[:, rows, cols, :].astype(np.float64)
            count = window.shape[1] * window.shape[2]
            y[:, i, j, :] = window.sum(axis=(1, 2)) / count
            grad[:, rows, cols, :] += (2 * y[:, i, j, :] / count)[:, None, None, :]
    return y, grad


@pytest.mark.parametrize("shape,ksize,strides,padding", CASES)
def test_avg_pool2d_matches_the_reference_eagerly_traced_and_in_its_gradient(shape, ksize, strides, padding):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want, want_grad = _reference(x, ksize, strides, padding)
    np.testing.assert_allclose(rt.nn.avg_pool2d(x, ksize, strides, padding).numpy(), want, rtol=1e-6, atol=1e-6)
    traced = rt.function(lambda x: rt.nn.avg_pool2d(x, ksize, strides, padding),
                         input_signature=[rt.TensorSpec([None] * 4, rt.float32)])
    np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-6, atol=1e-6)
    static = rt.function(lambda x: rt.nn.avg_pool2d(x, ksize, strides, padding),
                         input_signature=[rt.TensorSpec(shape, rt.float32)])
    assert static.get_concrete_function().structured_outputs.shape.as_list() == list(want.shape)
    xt = rt.constant(x)
    with rt.GradientTape() as tape:
        tape.watch(xt)
        loss = rt.reduce_sum(rt.nn.avg_pool2d(xt, ksize, strides, padding) ** 2)
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), want_grad, rtol=1e-5, atol=1e-6)


def test_average_pooling_layer_defaults_its_strides_to_the_pool_size():
    x = np.arange(2 * 6 * 6 * 3, dtype=np.float32).reshape(2, 6, 6, 3)
    layer = rt.keras.layers.AveragePooling2D(pool_size=3)
    np.testing.assert_allclose(layer(x).numpy(), _reference(x, 3, 3, "VALID")[0], rtol=1e-6)
    same = rt.keras.layers.AvgPool2D(pool_size=(2, 2), strides=1, padding="same")
    np.testing.assert_allclose(same(x).numpy(), _reference(x, 2, 1, "SAME")[0], rtol=1e-6)


def test_avg_pool2d_rejects_what_it_cannot_pool():
    with pytest.raises(ValueError, match="NHWC"):
        rt.nn.avg_pool2d(np.ones((1, 4, 4, 1), np.float32), 2, 2, "VALID", data_format="NCHW")
    with pytest.raises(ValueError, match="4-D"):
        rt.nn.avg_pool2d(np.ones((4, 4, 1), np.float32), 2, 2, "VALID")
    with pytest.raises(ValueError, match="padding"):
        rt.nn.avg_pool2d(np.ones((1, 4, 4, 1), np.float32), 2, 2, "FULL")
    with pytest.raises(ValueError, match="positive"):
        rt.nn.avg_pool2d(np.ones((1, 4, 4, 1), np.float32), 0, 2, "VALID")
    with pytest.raises(TypeError, match="AvgPool"):
        rt.nn.avg_pool2d(np.ones((1, 4, 4, 1), np.int32), 2, 2, "VALID")
