"""The kernel library's GEMM (``rt_gemm_batch_*`` in rt_kernels.h), through the generic executor, against numpy.

Shapes straddle the micro-tile edges (the vector widths and MR on AVX-512, AVX2 and SSE), the narrow kernel
(few columns), the unpacked path for small products and the packed one for big ones; products above the
parallel threshold run on two threads. Every dtype the kernel multiplies, transposed operands and broadcast
batches.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import executor

EDGES = [1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 65]


@pytest.fixture(autouse=True)
def two_threads():
    rt.config.threading.set_intra_op_parallelism_threads(2)
    yield
    rt.config.threading.set_intra_op_parallelism_threads(0)


def _executor_matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False):
    """MatMul run by the generic executor (its compiled kernel), and numpy's product of the same operands."""
    function = rt.function(lambda x, y: rt.matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b))
    concrete = function.get_concrete_function(rt.TensorSpec(a.shape, rt.as_dtype(a.dtype)),
                                              rt.TensorSpec(b.shape, rt.as_dtype(b.dtype)))
    (result,) = executor.run_graph_generic(concrete.graph, [a, b])
    x = np.swapaxes(a, -1, -2) if transpose_a else a
    y = np.swapaxes(b, -1, -2) if transpose_b else b
    return result, np.matmul(x, y)


def _operands(rng, shape_a, shape_b, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)
    return (rng.integers(-9, 10, shape_a).astype(dtype), rng.integers(-9, 10, shape_b).astype(dtype))


def _assert_matches(result, expected):
    assert result.shape == expected.shape and result.dtype == expected.dtype
    if result.dtype.kind == "f":
        tol = 1e-4 if result.dtype == np.float32 else 1e-11
        np.testing.assert_allclose(result, expected, rtol=tol, atol=tol * np.sqrt(expected.size))
    else:
        assert (result == expected).all()


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tile_edges(transpose_a, transpose_b, dtype):
    rng = np.random.default_rng(0)
    for m in EDGES:
        for n in EDGES:
            k = (m * 7 + n) % 40 + 1
            a, b = _operands(rng, (k, m) if transpose_a else (m, k), (n, k) if transpose_b else (k, n), dtype)
            _assert_matches(*_executor_matmul(a, b, transpose_a, transpose_b))


@pytest.mark.parametrize("shape", [(256, 784, 128), (256, 512, 10), (784, 256, 128), (300, 600, 530), (3, 2000, 5)])
@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True)])
def test_big_products_on_two_threads(shape, transposes):
    """Above the parallel threshold and KC (several packed panels): the blocks of both threads meet exactly."""
    m, k, n = shape
    transpose_a, transpose_b = transposes
    rng = np.random.default_rng(1)
    a, b = _operands(rng, (k, m) if transpose_a else (m, k), (n, k) if transpose_b else (k, n), np.float32)
    _assert_matches(*_executor_matmul(a, b, transpose_a, transpose_b))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_integers_wrap_like_numpy(dtype):
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    for shape_a, shape_b, transposes in [((10, 10), (10, 10), (False, False)), ((200, 150), (150, 90), (False, False)),
                                         ((150, 200), (90, 150), (True, True))]:
        a = rng.integers(info.min, info.max, shape_a, endpoint=True).astype(dtype)
        b = rng.integers(info.min, info.max, shape_b, endpoint=True).astype(dtype)
        with np.errstate(over="ignore"):
            _assert_matches(*_executor_matmul(a, b, *transposes))


def test_broadcast_batches():
    rng = np.random.default_rng(3)
    for shape_a, shape_b in [((2, 1, 9, 20), (3, 20, 35)), ((4, 33, 17), (17, 5)), ((6, 64, 64), (6, 64, 64)),
                             ((1, 3, 40, 50), (2, 1, 50, 60))]:
        a, b = _operands(rng, shape_a, shape_b, np.float32)
        _assert_matches(*_executor_matmul(a, b))
    a, b = _operands(rng, (5, 30, 20), (5, 40, 30), np.float64)
    _assert_matches(*_executor_matmul(a, b, True, True))


def test_empty_operands():
    for shape_a, shape_b in [((0, 3), (3, 4)), ((3, 0), (0, 4)), ((2, 0, 5), (5, 3))]:
        a, b = np.ones(shape_a, np.float32), np.ones(shape_b, np.float32)
        _assert_matches(*_executor_matmul(a, b))
