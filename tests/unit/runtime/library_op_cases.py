"""Registry-walk cases of the ops of random_ops, sort_ops, linalg_ops, index_ops, manip_ops and the complex ops.

``CASES`` maps op types to checks (eager against numpy or hand-computed values, traced against eager, errors);
``test_op_registry.py`` adds them to its table, so every registered op keeps exactly one case.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_test_helpers import (
    NUMERIC,
    RUNTIME_SETTINGS,
    arrays,
    assert_matches_numpy,
    raises_both,
    run_both,
)

import runtime as rt
from runtime.ops import random_ops, registry

F64 = rt.float64


# ---------------------------------------------------------------------------
# Random ops: distributions, and the seeded stream against random_ops' numpy reference.

def check_truncated_normal():
    for dtype in (rt.float32, rt.float64):
        out = run_both(lambda dtype=dtype: rt.random.truncated_normal([3, 4], dtype=dtype, seed=1), [], "TruncatedNormal",
                       check_eager=False)
        assert out.dtype is dtype and out.shape == (3, 4)
    sample = rt.random.truncated_normal([20000], mean=1.0, stddev=3.0, seed=4).numpy()
    assert sample.min() >= 1 - 6 and sample.max() <= 1 + 6
    # a standard normal truncated at +-2 has standard deviation 0.8796
    assert abs(sample.mean() - 1.0) < 0.05 and abs(sample.std() - 3 * 0.8796) < 0.05
    assert rt.random.truncated_normal([3], dtype=rt.float16).dtype is rt.float16
    with pytest.raises(TypeError):
        rt.random.truncated_normal([2], dtype=rt.int32)


def check_multinomial():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 1e-30]], np.float32))
    out = run_both(lambda x: rt.random.categorical(x, 5, seed=3), [rt.constant(logits)], "Multinomial",
                   check_eager=False)
    assert out.dtype is rt.int64 and out.shape == (2, 5)
    draws = rt.random.categorical(rt.constant(logits), 20000, seed=9).numpy()
    freq = np.bincount(draws[0], minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.02)
    assert set(draws[1].tolist()) <= {0, 1}
    assert rt.random.categorical(rt.constant(logits), 2, dtype=rt.int32).dtype is rt.int32
    # the stream: the first class whose running sum of exp(logit - max) exceeds u times the total
    rt.random.set_seed(None)          # no global seed, and every eager op's count of runs from 0
    key = random_ops.mix(random_ops.DEFAULT_GRAPH_SEED, 11)
    words = random_ops.blocks(key, 0, 5)
    u = random_ops._unit_double((words[:, 0::2] << np.uint64(32)) | words[:, 1::2]).reshape(-1)[:10]
    expected = np.searchsorted(np.cumsum([0.1, 0.2, 0.7]), u * 1.0, side="right")
    state_logits = rt.constant(np.log(np.array([[0.1, 0.2, 0.7]], np.float64)))
    np.testing.assert_array_equal(rt.random.categorical(state_logits, 10, seed=11).numpy()[0], expected)
    raises_both(lambda x, n: rt.random.categorical(x, n), [rt.constant(logits), rt.constant(-1)],
                rt.errors.InvalidArgumentError, match="Multinomial")
    with pytest.raises(ValueError, match="Multinomial"):
        rt.random.categorical(rt.constant([1.0, 2.0]), 3)


def check_random_shuffle():
    x = np.arange(12).reshape(6, 2)
    out = run_both(lambda v: rt.random.shuffle(v, seed=2), [rt.constant(x)], "RandomShuffle", check_eager=False)
    assert sorted(out.numpy()[:, 0].tolist()) == [0, 2, 4, 6, 8, 10]
    np.testing.assert_array_equal(out.numpy()[:, 1], out.numpy()[:, 0] + 1)     # rows move whole
    key = random_ops.mix(random_ops.DEFAULT_GRAPH_SEED, 5)
    rt.random.set_seed(None)          # no global seed, and every eager op's count of runs from 0
    rows = np.arange(100)
    expected = rows[random_ops.permutation(key, 0, 100)]
    shuffled = rt.random.shuffle(rt.constant(rows), seed=5).numpy()
    np.testing.assert_array_equal(shuffled, expected)
    assert not np.array_equal(shuffled, rows)
    assert rt.random.shuffle(rt.constant(3.0)).numpy() == 3.0


def _stateless_case(op_type, api, reference):
    def check():
        for dtype in (rt.float32, rt.float64):
            out = run_both(lambda s, dtype=dtype: api([3, 4], s, dtype=dtype), [rt.constant([7, 8], rt.int64)],
                           op_type)
            key = random_ops.mix(7, 8)
            assert_matches_numpy(out, reference(key, 0, (3, 4), dtype.np), tol=(1e-6, 1e-12))
        # the same seed, the same numbers; another seed, others
        a = api([5], [1, 2]).numpy()
        np.testing.assert_array_equal(a, api([5], [1, 2]).numpy())
        assert not np.array_equal(a, api([5], [1, 3]).numpy())
        assert api([2], rt.constant([1, 2], rt.int32)).shape == (2,)
        with pytest.raises(ValueError, match="seed"):
            api([2], [1, 2, 3])
        raises_both(lambda s: api([2], s), [rt.constant([1, 2, 3], rt.int64)],
                    (ValueError, rt.errors.InvalidArgumentError), match=op_type)
    return check


def check_stateless_uniform():
    _stateless_case("StatelessRandomUniformV2", rt.random.stateless_uniform,
                    lambda key, call, shape, dtype: random_ops.uniform_array(key, call, shape, dtype, 0, 1))()
    ints = run_both(lambda s: rt.random.stateless_uniform([50], s, -3, 4, rt.int32), [rt.constant([3, 4])],
                    "StatelessRandomUniformV2")
    assert ints.numpy().min() >= -3 and ints.numpy().max() <= 3 and len(set(ints.numpy().tolist())) == 7
    raises_both(lambda s, lo: rt.random.stateless_uniform([2], s, lo, 3, rt.int32),
                [rt.constant([3, 4]), rt.constant(3)], rt.errors.InvalidArgumentError, match="minval < maxval")


check_stateless_normal = _stateless_case("StatelessRandomNormalV2", rt.random.stateless_normal,
                                         random_ops.normal_array)
check_stateless_truncated_normal = _stateless_case("StatelessTruncatedNormalV2",
                                                   rt.random.stateless_truncated_normal,
                                                   random_ops.truncated_normal_array)


# ---------------------------------------------------------------------------
# Complex numbers.

def _complex_values(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check_complex():
    re, im = np.float32([1.5, -2.0]), np.float32([[0.5, 3.0], [1.0, -1.0]])
    out = run_both(lambda a, b: rt.complex(a, b), [rt.constant(re), rt.constant(im)], "Complex")
    assert_matches_numpy(out, (re + 1j * im).astype(np.complex64))
    assert rt.complex(rt.constant(1.0, F64), rt.constant(2.0, F64)).dtype is rt.complex128
    with pytest.raises(TypeError, match="Complex"):
        rt.complex(rt.constant([1, 2]), rt.constant([3, 4]))


def _part_case(op_type, api, reference, out_of):
    def check():
        z = _complex_values((2, 3))
        for dtype in (rt.complex64, rt.complex128):
            value = z.astype(dtype.np)
            out = run_both(lambda x: api(x), [rt.constant(value)], op_type)
            assert_matches_numpy(out, reference(value).astype(out_of(dtype).np))
        with pytest.raises(TypeError, match=op_type):
            registry.apply(op_type, [rt.constant([1.0])])
    return check


check_real = _part_case("Real", rt.math.real, np.real, lambda d: d.real_dtype)
check_imag = _part_case("Imag", rt.math.imag, np.imag, lambda d: d.real_dtype)
check_conj = _part_case("Conj", rt.math.conj, np.conj, lambda d: d)
check_complex_abs = _part_case("ComplexAbs", rt.math.abs, np.abs, lambda d: d.real_dtype)


# ---------------------------------------------------------------------------
# Sorting.

def _stable_order(x, axis, descending):
    """Positions by value (ties by position, NaN largest), by a Python sort of keys: the reference."""
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape, np.int64)
    for index in np.ndindex(moved.shape[:-1]):
        row = moved[index]

        def key(i, row=row):
            v = row[i]
            nan = bool(np.isnan(v)) if row.dtype.kind == "f" else False
            value = 0 if nan else v.item()
            return ((nan, value) if not descending else (not nan, -value if not nan else 0)), i
        out[index] = sorted(range(len(row)), key=key)
    return np.moveaxis(out, -1, axis)


@RUNTIME_SETTINGS
@given(st.data())
def check_sort(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, lo=-3, hi=3))       # few values: ties
    if dtype.is_floating and data.draw(st.booleans()):
        x = x.copy()
        x.reshape(-1)[0] = np.nan
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    direction = data.draw(st.sampled_from(["ASCENDING", "DESCENDING"]))
    order = _stable_order(x.astype(np.float64) if dtype is rt.float16 else x, axis, direction == "DESCENDING")
    values = run_both(lambda v: rt.sort(v, axis, direction), [rt.constant(x)], "Sort")
    assert_matches_numpy(values, np.take_along_axis(x, order, axis))
    positions = run_both(lambda v: rt.argsort(v, axis, direction), [rt.constant(x)], "Sort")
    assert_matches_numpy(positions, order.astype(np.int32))
    with pytest.raises(ValueError, match="Sort"):
        rt.sort(rt.constant(x), axis=len(shape))
    with pytest.raises(ValueError, match="direction"):
        rt.sort(rt.constant(x), direction="UP")


@RUNTIME_SETTINGS
@given(st.data())
def check_top_k(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    x = data.draw(arrays(dtype, shape, lo=-3, hi=3))
    k = data.draw(st.integers(0, shape[-1]))
    values, indices = run_both(lambda v: tuple(rt.math.top_k(v, k)), [rt.constant(x)], "TopKV2", relax=False)
    order = _stable_order(x.astype(np.float64) if dtype is rt.float16 else x, -1, True)[..., :k]
    assert_matches_numpy(values, np.take_along_axis(x, order, -1))
    assert_matches_numpy(indices, order.astype(np.int32))
    dynamic = rt.function(lambda v, k: tuple(rt.math.top_k(v, k)), autograph=False)
    got = dynamic(rt.constant(x), rt.constant(k))
    assert_matches_numpy(got[1], order.astype(np.int32))
    raises_both(lambda v, k: rt.math.top_k(v, k), [rt.constant(x), rt.constant(shape[-1] + 1)],
                (ValueError, rt.errors.InvalidArgumentError), match="TopKV2")


def check_unique():
    x = np.array([1, 1, 2, 4, 4, 4, 7, 8, 8], np.int32)
    y, idx = run_both(lambda v: tuple(rt.unique(v)), [rt.constant(x)], "Unique")
    assert_matches_numpy(y, np.array([1, 2, 4, 7, 8], np.int32))
    assert_matches_numpy(idx, np.array([0, 0, 1, 2, 2, 2, 3, 4, 4], np.int32))
    z = np.array([3.0, -1.0, 3.0, 2.0, -1.0])
    y, idx = rt.unique(rt.constant(z), out_idx=rt.int64)
    assert_matches_numpy(y, np.array([3.0, -1.0, 2.0]))              # in order of first occurrence
    assert_matches_numpy(idx, np.array([0, 1, 0, 2, 1], np.int64))
    strings = rt.unique(rt.constant(["b", "a", "b"]))
    assert strings.y.numpy().tolist() == [b"b", b"a"] and strings.idx.numpy().tolist() == [0, 1, 0]
    empty = rt.unique(rt.constant(np.zeros(0, np.int32)))
    assert empty.y.shape == (0,) and empty.idx.shape == (0,)
    with pytest.raises(ValueError, match="Unique"):
        rt.unique(rt.constant([[1, 2]]))


# ---------------------------------------------------------------------------
# Linear algebra.

def _well_conditioned(rng, shape):
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


@RUNTIME_SETTINGS
@given(st.data())
def check_matrix_inverse(data):
    n = data.draw(st.integers(1, 4))
    batch = data.draw(st.sampled_from([(), (2,), (2, 1)]))
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    a = _well_conditioned(np.random.default_rng(n), batch + (n, n)).astype(dtype.np)
    adjoint = data.draw(st.booleans())
    out = run_both(lambda x: rt.linalg.inv(x, adjoint=adjoint), [rt.constant(a)], "MatrixInverse")
    expected = np.linalg.inv(np.swapaxes(a, -1, -2) if adjoint else a)
    assert_matches_numpy(out, expected, tol=(1e-4, 1e-5) if dtype is rt.float32 else None)
    singular = np.zeros(batch + (n, n), dtype.np)
    raises_both(lambda x: rt.linalg.inv(x), [rt.constant(singular)], rt.errors.InvalidArgumentError,
                match="MatrixInverse.*not invertible")
    with pytest.raises(ValueError, match="square"):
        rt.linalg.inv(rt.constant(np.ones((2, 3), dtype.np)))
    with pytest.raises(TypeError, match="MatrixInverse"):
        rt.linalg.inv(rt.constant(np.ones((2, 2), np.int32)))


@RUNTIME_SETTINGS
@given(st.data())
def check_matrix_determinant(data):
    n = data.draw(st.integers(1, 4))
    batch = data.draw(st.sampled_from([(), (3,)]))
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    a = np.random.default_rng(n).standard_normal(batch + (n, n)).astype(dtype.np)
    out = run_both(lambda x: rt.linalg.det(x), [rt.constant(a)], "MatrixDeterminant")
    assert_matches_numpy(out, np.linalg.det(a.astype(np.float64)).astype(dtype.np),
                         tol=(1e-4, 1e-5) if dtype is rt.float32 else None)
    assert float(rt.linalg.det(rt.constant([[1.0, 2.0], [2.0, 4.0]]))) == 0.0
    assert float(rt.linalg.det(rt.constant(np.zeros((0, 0))))) == 1.0


@RUNTIME_SETTINGS
@given(st.data())
def check_matrix_solve(data):
    n, k = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
    batch = data.draw(st.sampled_from([(), (2,)]))
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    rng = np.random.default_rng(n * 10 + k)
    a = _well_conditioned(rng, batch + (n, n)).astype(dtype.np)
    b = rng.standard_normal(batch + (n, k)).astype(dtype.np)
    adjoint = data.draw(st.booleans())
    out = run_both(lambda x, y: rt.linalg.solve(x, y, adjoint=adjoint), [rt.constant(a), rt.constant(b)],
                   "MatrixSolve")
    expected = np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, b)
    assert_matches_numpy(out, expected, tol=(1e-4, 1e-5) if dtype is rt.float32 else None)
    raises_both(lambda x, y: rt.linalg.solve(x, y), [rt.constant(np.zeros_like(a)), rt.constant(b)],
                rt.errors.InvalidArgumentError, match="MatrixSolve.*not invertible")
    with pytest.raises(ValueError, match="MatrixSolve"):
        rt.linalg.solve(rt.constant(a), rt.constant(np.ones(batch + (n + 1, k), dtype.np)))


# ---------------------------------------------------------------------------
# Index tuples, EnsureShape.

@RUNTIME_SETTINGS
@given(st.data())
def check_gather_nd(data):
    dtype = data.draw(st.sampled_from(NUMERIC + (rt.bool,)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape))
    m = data.draw(st.integers(1, len(shape)))
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    tuples = np.stack([data.draw(hnp.arrays(np.int32, lead, elements=st.integers(0, shape[d] - 1)))
                       for d in range(m)], axis=-1)
    out = run_both(lambda p, i: rt.gather_nd(p, i), [rt.constant(x), rt.constant(tuples)], "GatherNd")
    expected = np.zeros(lead + shape[m:], dtype.np)
    for index in np.ndindex(lead):
        expected[index] = x[tuple(tuples[index])]
    assert_matches_numpy(out, expected)
    bad = np.zeros((1, m), np.int64)
    bad[0, m - 1] = shape[m - 1]
    raises_both(lambda p, i: rt.gather_nd(p, i), [rt.constant(x), rt.constant(bad)],
                rt.errors.InvalidArgumentError, match="GatherNd: index .* is out of bounds")
    with pytest.raises(ValueError, match="GatherNd"):
        rt.gather_nd(rt.constant(x), rt.constant(np.zeros((1, len(shape) + 1), np.int32)))


@RUNTIME_SETTINGS
@given(st.data())
def check_scatter_nd(data):
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64, rt.int32, rt.int64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    m = data.draw(st.integers(1, len(shape)))
    count = data.draw(st.integers(0, 5))
    tuples = np.stack([data.draw(hnp.arrays(np.int32, (count,), elements=st.integers(0, shape[d] - 1)))
                       for d in range(m)], axis=-1).reshape(count, m)
    updates = data.draw(arrays(dtype, (count,) + shape[m:], lo=-5, hi=5))
    out = run_both(lambda i, u: rt.scatter_nd(i, u, list(shape)), [rt.constant(tuples), rt.constant(updates)],
                   "ScatterNd")
    expected = np.zeros(shape, dtype.np)
    for row in range(count):
        expected[tuple(tuples[row])] += updates[row]                 # repeated tuples add up
    assert_matches_numpy(out, expected, tol=(1e-5, 1e-5) if dtype.is_floating else None)
    if count:
        bad = tuples.copy()
        bad[0, 0] = -1
        raises_both(lambda i, u: rt.scatter_nd(i, u, list(shape)), [rt.constant(bad), rt.constant(updates)],
                    rt.errors.InvalidArgumentError, match="ScatterNd")


def check_ensure_shape():
    x = np.arange(6.0).reshape(2, 3)
    out = run_both(lambda v: rt.ensure_shape(v, [2, None]), [rt.constant(x)], "EnsureShape")
    assert_matches_numpy(out, x)
    f = rt.function(lambda v: rt.ensure_shape(v, [None, 3]), input_signature=[rt.TensorSpec([None, None], F64)])
    assert f.get_concrete_function().outputs[0].shape == rt.TensorShape([None, 3])
    with pytest.raises(rt.errors.InvalidArgumentError, match="EnsureShape"):
        f(rt.constant(np.zeros((3, 2))))
    with pytest.raises(ValueError, match="EnsureShape"):
        rt.function(lambda v: rt.ensure_shape(v, [3]), autograph=False)(rt.constant(x))
    with pytest.raises(rt.errors.InvalidArgumentError, match="EnsureShape"):
        rt.ensure_shape(rt.constant(x), [2, 2])


CASES = {
    "TruncatedNormal": check_truncated_normal,
    "Multinomial": check_multinomial,
    "RandomShuffle": check_random_shuffle,
    "StatelessRandomUniformV2": check_stateless_uniform,
    "StatelessRandomNormalV2": check_stateless_normal,
    "StatelessTruncatedNormalV2": check_stateless_truncated_normal,
    "Complex": check_complex,
    "Real": check_real,
    "Imag": check_imag,
    "Conj": check_conj,
    "ComplexAbs": check_complex_abs,
    "Sort": check_sort,
    "TopKV2": check_top_k,
    "Unique": check_unique,
    "MatrixInverse": check_matrix_inverse,
    "MatrixDeterminant": check_matrix_determinant,
    "MatrixSolve": check_matrix_solve,
    "GatherNd": check_gather_nd,
    "ScatterNd": check_scatter_nd,
    "EnsureShape": check_ensure_shape,
}
