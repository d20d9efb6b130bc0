"""The C kernels of rt_nn.h (used by the generic executor) against the numpy kernels (the reference).

Shapes are chosen so that the convolutions span several im2col panels and reach into the padding.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.ops import registry

_native = pytest.importorskip("runtime._native")


class _Op:
    """What ``compiled_kernel`` reads of an op."""

    def __init__(self, op_type):
        self.type = op_type
        self.opdef = registry.get_opdef(op_type)


def _both(op_type, inputs, attrs):
    compiled = _native.compiled_kernel(_Op(op_type))
    assert compiled is not None
    return compiled(list(inputs), attrs)[0], registry.get_opdef(op_type).kernel(list(inputs), attrs)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strides,padding", [((1, 1), "SAME"), ((2, 3), "SAME"), ((1, 2), "VALID")])
def test_convolution_kernels_match_numpy_across_panels(dtype, strides, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 19, 17, 256)).astype(dtype)         # 9 * 256 values per pixel: many panels
    w = rng.standard_normal((3, 3, 256, 5)).astype(dtype)
    attrs = {"strides": strides, "padding": padding}
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    got, want = _both("Conv2D", [x, w], attrs)
    np.testing.assert_allclose(got, want, **tol)
    dy = rng.standard_normal(want.shape).astype(dtype)
    got, want = _both("Conv2DBackpropInput", [np.array(x.shape, np.int32), w, dy], attrs)
    np.testing.assert_allclose(got, want, **tol)
    got, want = _both("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy], attrs)
    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ksize,strides,padding", [((2, 2), (2, 2), "VALID"), ((3, 2), (1, 2), "SAME")])
def test_pooling_kernels_match_numpy(dtype, ksize, strides, padding):
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 3, (2, 9, 7, 70)).astype(dtype)              # ties: the first maximum wins
    x[0, 0, 0, 0] = np.nan
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    got, want = _both("MaxPool", [x], attrs)
    np.testing.assert_array_equal(got, want)
    dy = rng.standard_normal(want.shape).astype(dtype)
    got, want = _both("MaxPoolGrad", [x, want, dy], attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_bad_shapes_fall_back_to_the_numpy_kernel_and_its_error():
    compiled = _native.compiled_kernel(_Op("Conv2D"))
    with pytest.raises(rt.errors.InvalidArgumentError, match="Conv2D"):
        compiled([np.zeros((1, 4, 4, 3), np.float32), np.zeros((2, 2, 5, 1), np.float32)],
                 {"strides": (1, 1), "padding": "VALID"})
    ints = compiled([np.ones((1, 3, 3, 1), np.int32), np.ones((2, 2, 1, 1), np.int32)],
                    {"strides": (1, 1), "padding": "VALID"})
    assert ints[0].dtype == np.int32
