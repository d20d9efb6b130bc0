"""Matmuls of small static sizes, built: the fixed-size kernel (``rt_matmul_small_S``) against numpy and eager.

Every signature below has literal sizes under ``transpiler.lowering.ops.SMALL_MATMUL``, so the generated code
calls the kernel with them as literals: square and ragged sizes around the vector widths, int32 and int8
products that overflow (they wrap as numpy's do), transposed operands, a row-strided slice, batches
(broadcast ones included) and a chain of 100 products (the guide's ``power``).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import build_source

import runtime as rt

pytestmark = pytest.mark.build

SIZES = [(3, 3, 3), (10, 10, 10), (1, 17, 5), (7, 9, 33), (16, 16, 16), (33, 20, 40), (5, 64, 12), (64, 32, 1),
         (1, 100, 17), (200, 7, 1), (1, 33, 1)]
# matrix-vector products of run-time sizes (rt_gemv_S): ragged around the vector widths, long rows, many rows
# (the last two past the size from which the outputs are split over threads)
VECTOR_SIZES = [(1, 1, 1), (5, 3, 1), (1, 3, 5), (37, 33, 1), (1, 33, 300), (3, 1000, 1), (1, 1000, 3),
                (4500, 1000, 1), (1, 1000, 4500)]

PROGRAMS = '''
import runtime as rt

SIZES = {sizes!r}


@rt.function
def product(a, b):
    return rt.matmul(a, b)


@rt.function
def transposed(a, b, c, d):
    return rt.matmul(a, b, transpose_a=True), rt.matmul(b, c, transpose_b=True), \\
        rt.matmul(a, d, transpose_a=True, transpose_b=True)


@rt.function
def sliced(a, b):
    return rt.matmul(a[:, 2:9], b)


@rt.function
def batched(a, b):
    return rt.matmul(a, b)


@rt.function
def power(x, y):
    result = rt.eye(10, dtype=rt.int32)
    for _ in range(y):
        result = rt.matmul(x, result)
    return result


for dtype in (rt.float32, rt.float64, rt.int32, rt.int8):
    for m, k, n in SIZES:
        product.get_concrete_function(rt.TensorSpec([m, k], dtype), rt.TensorSpec([k, n], dtype))
    transposed.get_concrete_function(*[rt.TensorSpec(s, dtype) for s in ([9, 6], [9, 11], [13, 11], [7, 9])])
sliced.get_concrete_function(rt.TensorSpec([12, 20], rt.int32), rt.TensorSpec([7, 13], rt.int32))
batched.get_concrete_function(rt.TensorSpec([3, 5, 8], rt.float32), rt.TensorSpec([3, 8, 6], rt.float32))
batched.get_concrete_function(rt.TensorSpec([2, 1, 4, 8], rt.int32), rt.TensorSpec([3, 8, 10], rt.int32))
power.get_concrete_function(rt.TensorSpec([10, 10], rt.int32), 100)


@rt.function(input_signature=[rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, None], rt.float32)])
def vector_products(a, b):
    return (rt.matmul(a, b), rt.matmul(rt.transpose(a), b, transpose_a=True),
            rt.matmul(a, rt.transpose(b), transpose_b=True))


vector_products_f64 = rt.function(vector_products.python_function, input_signature=[
    rt.TensorSpec([None, None], rt.float64), rt.TensorSpec([None, None], rt.float64)])
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("small_matmul")
    return build_source(root, "rt_small_matmul_programs", PROGRAMS.format(sizes=SIZES))


def _operand(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):       # big enough that int32 and int8 products overflow
        info = np.iinfo(dtype)
        return rng.integers(info.min // 2, info.max // 2, shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


def _native_and_eager(function, *args):
    concrete = function.get_concrete_function(*[rt.TensorSpec(a.shape, rt.as_dtype(a.dtype)) for a in args])
    assert concrete.native
    native = concrete(*args)
    rt.config.run_functions_eagerly(True)
    try:
        eager = function(*args)
    finally:
        rt.config.run_functions_eagerly(False)
    return _as_list(native), _as_list(eager)


def _as_list(value) -> list:
    return [t.numpy() for t in value] if isinstance(value, (tuple, list)) else [value.numpy()]


def _assert_same(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if np.issubdtype(actual.dtype, np.integer):
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(expected).max())))


def _numpy_matmul(a, b):
    """numpy's product in the operands' dtype: integers wrap (numpy's int8 matmul accumulates in int8)."""
    if np.issubdtype(a.dtype, np.integer):
        wide = np.matmul(a.astype(np.int64), b.astype(np.int64))
        return wide.astype(a.dtype)
    return np.matmul(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
@pytest.mark.parametrize("size", SIZES)
def test_small_products_match_numpy_and_eager(built, dtype, size):
    m, k, n = size
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = _operand(rng, (m, k), dtype), _operand(rng, (k, n), dtype)
    (native,), (eager,) = _native_and_eager(built.product, a, b)
    _assert_same(native, _numpy_matmul(a, b))
    _assert_same(native, eager)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
def test_transposed_operands(built, dtype):
    rng = np.random.default_rng(7)
    a, b, c, d = [_operand(rng, s, dtype) for s in ((9, 6), (9, 11), (13, 11), (7, 9))]
    native, eager = _native_and_eager(built.transposed, a, b, c, d)
    expected = [_numpy_matmul(a.T, b), _numpy_matmul(b, c.T), _numpy_matmul(a.T, d.T)]
    for got, want, same in zip(native, expected, eager):
        _assert_same(got, want)
        _assert_same(got, same)


def test_int32_wraps_and_a_row_strided_slice(built):
    rng = np.random.default_rng(3)
    a, b = _operand(rng, (12, 20), np.int32), _operand(rng, (7, 13), np.int32)
    (native,), (eager,) = _native_and_eager(built.sliced, a, b)
    wide = a[:, 2:9].astype(np.int64) @ b.astype(np.int64)
    assert (np.abs(wide) > np.iinfo(np.int32).max).any()        # the products do overflow
    _assert_same(native, wide.astype(np.int32))
    _assert_same(native, eager)


def test_batches_including_a_broadcast_one(built):
    rng = np.random.default_rng(4)
    a, b = _operand(rng, (3, 5, 8), np.float32), _operand(rng, (3, 8, 6), np.float32)
    (native,), (eager,) = _native_and_eager(built.batched, a, b)
    _assert_same(native, np.matmul(a, b))
    _assert_same(native, eager)
    a, b = _operand(rng, (2, 1, 4, 8), np.int32), _operand(rng, (3, 8, 10), np.int32)
    (native,), (eager,) = _native_and_eager(built.batched, a, b)
    _assert_same(native, _numpy_matmul(a, b))
    _assert_same(native, eager)


def test_a_chain_of_100_products(built):
    x = np.random.default_rng(5).integers(-3, 4, (10, 10), dtype=np.int32)
    concrete = built.power.get_concrete_function(rt.TensorSpec([10, 10], rt.int32), 100)
    assert concrete.native
    expected = np.eye(10, dtype=np.int32)
    for _ in range(100):
        expected = x @ expected                     # numpy's int32 matmul wraps
    np.testing.assert_array_equal(concrete(x).numpy(), expected)


@pytest.mark.parametrize("size", VECTOR_SIZES)
def test_matrix_vector_products_of_run_time_sizes(built, size):
    """n == 1 or m == 1 over [None, None] (rt_gemv_S), with each operand transposed or not: numpy's values, eager's,
    and the same bits on one and two threads; a NaN reaches only the outputs it belongs to."""
    m, k, n = size
    rng = np.random.default_rng(m + 7 * k + 13 * n)
    for function, dtype in ((built.vector_products, np.float32), (built.vector_products_f64, np.float64)):
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        if m == 37:     # rows 0-31 are summed a vector of rows at a time, the rest one by one: the same tree
            a[35] = a[0]
        a[-1, -1] = np.nan
        results = []
        for threads in (1, 2):
            rt.config.threading.set_intra_op_parallelism_threads(threads)
            try:
                concrete = function.get_concrete_function()
                assert concrete.native
                results.append([t.numpy() for t in concrete(a, b)])
            finally:
                rt.config.threading.set_intra_op_parallelism_threads(0)
        rt.config.run_functions_eagerly(True)
        try:
            eager = [t.numpy() for t in function(a, b)]
        finally:
            rt.config.run_functions_eagerly(False)
        for got, other, same in zip(results[0], results[1], eager):
            np.testing.assert_array_equal(got, other)
            if m == 37:
                np.testing.assert_array_equal(got[35], got[0])
            np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
            np.testing.assert_allclose(got, same, rtol=1e-4, atol=1e-4 * np.sqrt(k))
            assert np.isnan(got[-1]).all() and not np.isnan(got[:-1]).any() if n == 1 else \
                np.isnan(got).all() if m == 1 else True
