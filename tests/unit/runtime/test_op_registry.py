"""Walk the op registry: every registered op is checked eagerly against numpy and traced against eager.

``CASES`` maps each op type to a check (a zero-argument callable, often a hypothesis test).
``test_every_registered_op_has_a_case`` fails when an op is registered without an entry, so
a new op cannot go untested.
"""
from __future__ import annotations

import contextlib
import io
import math
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_test_helpers import (
    FLOATS,
    INTS,
    NUMERIC,
    RUNTIME_SETTINGS,
    SIGNED,
    arrays,
    assert_identical,
    assert_matches_numpy,
    op_types,
    raises_both,
    run_both,
)

import runtime as rt
from library_op_cases import CASES as LIBRARY_CASES
from runtime.executor import execute
from runtime.ops import functional_ops, registry
from runtime.ops.dataset_ops import shuffle_indices
from runtime.polymorphic_function import tape_graph
from runtime.optimizer import optimize

BOOL = (rt.bool,)


# ---------------------------------------------------------------------------
# Elementwise ops: hypothesis over dtypes and (broadcasting) shapes.

def _int_zero_divisor(x, y):
    return x.dtype.kind in "iu" and np.any(y == 0)


class Elementwise:
    """An elementwise op: public API, numpy reference, dtypes, value range, error rule."""

    def __init__(self, op_type, api, ref, dtypes, arity, out_dtype=None, lo=None, hi=None, error=None,
                 lo2=None, hi2=None, rejects=None):
        self.rejects = rejects
        self.op_type, self.api, self.ref, self.dtypes, self.arity = op_type, api, ref, dtypes, arity
        self.out_dtype, self.lo, self.hi, self.lo2, self.hi2, self.error = out_dtype, lo, hi, lo2, hi2, error

    def bounds(self, dtype, index):
        if index == 1 and (self.lo2 is not None or self.hi2 is not None):
            return self.lo2, self.hi2
        return self.lo, self.hi

    def check_one(self, data):
        dtype = data.draw(st.sampled_from(self.dtypes), label="dtype")
        shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=self.arity, max_dims=3, max_side=4),
                           label="shapes").input_shapes
        values = [data.draw(arrays(dtype, shape, *self.bounds(dtype, i)), label=f"x{i}")
                  for i, shape in enumerate(shapes)]
        args = [rt.constant(v) for v in values]
        fn = (lambda x: self.api(x)) if self.arity == 1 else (lambda x, y: self.api(x, y))
        if self.error is not None and self.error(*values):
            raises_both(fn, args, rt.errors.InvalidArgumentError)
            return
        out = run_both(fn, args, self.op_type)
        with np.errstate(all="ignore"):
            expected = np.asarray(self.ref(*values))
        assert_matches_numpy(out, expected.astype(np_out := (self.out_dtype or dtype).np), dtype=np_out)
        # dtypes the op does not take: a TypeError that names the op, eagerly and while tracing.
        if self.rejects is False:
            return
        bad = self.rejects or next(d for d in (rt.string, rt.bool, rt.int32) if d not in self.dtypes)
        bad_args = [rt.constant(np.zeros((), bad.np) if bad is not rt.string else "s") for _ in values]
        with pytest.raises(TypeError, match=self.op_type):
            fn(*bad_args)
        with pytest.raises(TypeError, match=self.op_type):
            rt.function(fn, autograph=False)(*bad_args)

    def case(self):
        @RUNTIME_SETTINGS
        @given(st.data())
        def check(data):
            self.check_one(data)
        check.__name__ = f"check_{self.op_type}"
        return check


def _sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def _libm(fn):
    return lambda x: np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64))


def _softplus(x):
    return np.logaddexp(0.0, x.astype(np.float64))


ELEMENTWISE = [
    Elementwise("AddV2", rt.add, np.add, NUMERIC, 2, rejects=rt.bool),   # strings: see test_tensor.py
    Elementwise("Sub", rt.subtract, np.subtract, NUMERIC, 2),
    Elementwise("Mul", rt.multiply, np.multiply, NUMERIC, 2),
    Elementwise("RealDiv", rt.divide, np.true_divide, FLOATS, 2),
    Elementwise("FloorDiv", rt.floordiv, np.floor_divide, NUMERIC, 2, error=_int_zero_divisor, lo2=-5, hi2=5),
    Elementwise("FloorMod", rt.floormod, np.mod, NUMERIC, 2, error=_int_zero_divisor, lo2=-5, hi2=5),
    Elementwise("Pow", rt.pow, np.power, NUMERIC, 2, lo=-4, hi=4, lo2=-3, hi2=3,
                error=lambda x, y: x.dtype.kind in "iu" and np.any(y < 0)),
    Elementwise("Maximum", rt.maximum, np.maximum, NUMERIC, 2),
    Elementwise("Minimum", rt.minimum, np.minimum, NUMERIC, 2),
    Elementwise("Greater", rt.greater, np.greater, NUMERIC, 2, out_dtype=rt.bool),
    Elementwise("GreaterEqual", rt.greater_equal, np.greater_equal, NUMERIC, 2, out_dtype=rt.bool),
    Elementwise("Less", rt.less, np.less, NUMERIC, 2, out_dtype=rt.bool),
    Elementwise("LessEqual", rt.less_equal, np.less_equal, NUMERIC, 2, out_dtype=rt.bool),
    Elementwise("Equal", rt.equal, np.equal, NUMERIC + BOOL, 2, out_dtype=rt.bool, lo=-3, hi=3, rejects=False),
    Elementwise("NotEqual", rt.not_equal, np.not_equal, NUMERIC + BOOL, 2, out_dtype=rt.bool, lo=-3, hi=3,
                rejects=False),
    Elementwise("LogicalAnd", rt.logical_and, np.logical_and, BOOL, 2),
    Elementwise("LogicalOr", rt.logical_or, np.logical_or, BOOL, 2),
    Elementwise("LogicalXor", rt.logical_xor, np.logical_xor, BOOL, 2),
    Elementwise("LogicalNot", rt.logical_not, np.logical_not, BOOL, 1),
    Elementwise("Neg", rt.negative, np.negative, SIGNED, 1),
    Elementwise("Abs", rt.abs, np.abs, SIGNED, 1),
    Elementwise("Sign", rt.sign, np.sign, SIGNED, 1),
    Elementwise("Square", rt.square, np.square, NUMERIC, 1),
    Elementwise("Sqrt", rt.sqrt, np.sqrt, FLOATS, 1, lo=0),
    Elementwise("Rsqrt", rt.math.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, 1, lo=0.125),
    Elementwise("Exp", rt.exp, np.exp, FLOATS, 1, lo=-20, hi=10),
    Elementwise("Log", rt.log, np.log, FLOATS, 1, lo=2.0 ** -10),
    Elementwise("Tanh", rt.tanh, np.tanh, FLOATS, 1),
    Elementwise("Sigmoid", rt.sigmoid, _sigmoid, FLOATS, 1),
    Elementwise("Sin", rt.sin, np.sin, FLOATS, 1, lo=-10, hi=10),
    Elementwise("Erf", rt.math.erf, _libm(math.erf), FLOATS, 1),
    Elementwise("Erfc", rt.math.erfc, _libm(math.erfc), FLOATS, 1),
    Elementwise("Softplus", rt.math.softplus, _softplus, FLOATS, 1),
    Elementwise("Cos", rt.cos, np.cos, FLOATS, 1, lo=-10, hi=10),
    Elementwise("Relu", rt.nn.relu, lambda x: np.maximum(x, 0), SIGNED, 1),
    Elementwise("Floor", rt.floor, np.floor, FLOATS, 1),
    Elementwise("Ceil", rt.math.ceil, np.ceil, FLOATS, 1),
    Elementwise("Round", rt.round, np.round, FLOATS, 1),
    Elementwise("Log1p", rt.math.log1p, np.log1p, FLOATS, 1, lo=-0.875),
    Elementwise("Expm1", rt.math.expm1, np.expm1, FLOATS, 1, lo=-20, hi=10),
    Elementwise("Erf", rt.math.erf, lambda x: np.vectorize(math.erf)(x.astype(np.float64)), FLOATS, 1, lo=-5, hi=5),
    Elementwise("IsNan", rt.math.is_nan, np.isnan, FLOATS, 1, out_dtype=rt.bool),
    Elementwise("IsInf", rt.math.is_inf, np.isinf, FLOATS, 1, out_dtype=rt.bool),
    Elementwise("IsFinite", rt.math.is_finite, np.isfinite, FLOATS, 1, out_dtype=rt.bool),
    Elementwise("SquaredDifference", rt.math.squared_difference, lambda x, y: np.square(x - y), NUMERIC, 2, lo=-50,
                hi=50),
]


# ---------------------------------------------------------------------------
# Selection, cast, matmul.

@RUNTIME_SETTINGS
@given(st.data())
def check_select(data):
    dtype = data.draw(st.sampled_from(NUMERIC + BOOL))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3)).input_shapes
    c = data.draw(arrays(rt.bool, shapes[0]))
    x, y = data.draw(arrays(dtype, shapes[1])), data.draw(arrays(dtype, shapes[2]))
    out = run_both(lambda c, x, y: rt.where(c, x, y), [rt.constant(c), rt.constant(x), rt.constant(y)], "SelectV2")
    assert_matches_numpy(out, np.where(c, x, y))
    with pytest.raises(TypeError, match="SelectV2"):
        rt.where(rt.constant(c), rt.constant(x), rt.cast(rt.constant(y), rt.int8 if dtype is not rt.int8 else rt.int16))


@RUNTIME_SETTINGS
@given(st.data())
def check_where_indices(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    c = data.draw(arrays(rt.bool, shape))
    out = run_both(lambda c: rt.where(c), [rt.constant(c)], "Where")
    assert_matches_numpy(out, np.argwhere(c).astype(np.int64))


@RUNTIME_SETTINGS
@given(st.data())
def check_cast(data):
    src = data.draw(st.sampled_from(NUMERIC + BOOL))
    dst = data.draw(st.sampled_from(NUMERIC + BOOL))
    x = data.draw(arrays(src, data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)), lo=0, hi=100))
    out = run_both(lambda x: rt.cast(x, dst), [rt.constant(x)], "Cast")
    assert_matches_numpy(out, x.astype(dst.np))
    # floats truncate toward zero, like C and tf.cast
    assert rt.cast(rt.constant([-1.7, 1.7]), rt.int32).numpy().tolist() == [-1, 1]
    with pytest.raises(TypeError, match="Cast"):
        rt.cast(rt.constant("a"), rt.int32)


@RUNTIME_SETTINGS
@given(st.data())
def check_matmul(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch = data.draw(st.sampled_from([(), (2,)]))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    a = data.draw(arrays(dtype, batch + ((k, n) if ta else (n, k)), lo=-3, hi=3))
    b = data.draw(arrays(dtype, batch + ((m, k) if tb else (k, m)), lo=-3, hi=3))
    fn = lambda a, b: rt.matmul(a, b, transpose_a=ta, transpose_b=tb)  # noqa: E731
    out = run_both(fn, [rt.constant(a), rt.constant(b)], "MatMul")
    ea = np.swapaxes(a, -1, -2) if ta else a
    eb = np.swapaxes(b, -1, -2) if tb else b
    assert_matches_numpy(out, np.matmul(ea, eb), tol=(1e-2, 1e-2) if dtype is rt.float16 else None)
    if k != 5:
        bad = rt.constant(np.ones((5, m), dtype.np))
        with pytest.raises(ValueError, match="MatMul"):
            rt.matmul(rt.constant(np.ones((n, k), dtype.np)), bad)
        # with unknown dims the mismatch can only show at run time
        spec = [rt.TensorSpec([None, None], dtype)] * 2
        f = rt.function(lambda a, b: rt.matmul(a, b), input_signature=spec, autograph=False)
        with pytest.raises(rt.errors.InvalidArgumentError, match="MatMul"):
            f(rt.constant(np.ones((n, k), dtype.np)), bad)


# ---------------------------------------------------------------------------
# Reductions, arg-reductions, cumsum, softmax.

def _trunc_int_mean(x, axis, keepdims):
    total = np.sum(x.astype(object), axis=axis, keepdims=keepdims)
    count = x.size // max(np.asarray(total).size, 1)
    return np.vectorize(lambda s: int(math.copysign(abs(s) // count, s)) if count else 0,
                        otypes=[object])(total).astype(x.dtype)


REDUCTIONS = {
    "Sum": (rt.reduce_sum, np.sum, NUMERIC),
    "Mean": (rt.reduce_mean, None, NUMERIC),
    "Max": (rt.reduce_max, np.max, NUMERIC),
    "Min": (rt.reduce_min, np.min, NUMERIC),
    "Prod": (rt.reduce_prod, np.prod, NUMERIC),
    "Any": (rt.reduce_any, np.any, BOOL),
    "All": (rt.reduce_all, np.all, BOOL),
}


def reduction_case(op_type):
    api, ref, allowed = REDUCTIONS[op_type]

    @RUNTIME_SETTINGS
    @given(st.data())
    def check(data):
        dtype = data.draw(st.sampled_from(allowed))
        shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
        x = data.draw(arrays(dtype, shape, lo=-3, hi=3))
        rank = len(shape)
        axis = data.draw(st.one_of(st.none(), st.integers(-rank, rank - 1) if rank else st.none(),
                                   st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True)
                                   if rank else st.none()))
        keepdims = data.draw(st.booleans())
        out = run_both(lambda x: api(x, axis=axis, keepdims=keepdims), [rt.constant(x)], op_type)
        np_axis = tuple(axis) if isinstance(axis, list) else axis
        if op_type == "Mean":
            expected = (_trunc_int_mean(x, np_axis, keepdims) if dtype.is_integer
                        else np.mean(x.astype(np.float64), axis=np_axis, keepdims=keepdims))
        elif op_type in ("Sum", "Prod"):
            expected = ref(x.astype(np.float64) if dtype.is_floating else x, axis=np_axis, keepdims=keepdims,
                           dtype=None if dtype.is_floating else dtype.np)
        else:
            expected = ref(x, axis=np_axis, keepdims=keepdims)
        tol = (2e-2, 2e-2) if dtype is rt.float16 else (1e-5, 1e-5) if dtype is rt.float32 else None
        assert_matches_numpy(out, np.asarray(expected).astype(dtype.np), tol=tol)
        with pytest.raises(ValueError, match=op_type):
            api(rt.constant(x), axis=rank)
    check.__name__ = f"check_{op_type}"
    return check


def arg_case(op_type):
    api, ref = (rt.argmax, np.argmax) if op_type == "ArgMax" else (rt.argmin, np.argmin)

    @RUNTIME_SETTINGS
    @given(st.data())
    def check(data):
        dtype = data.draw(st.sampled_from(NUMERIC))
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
        x = data.draw(arrays(dtype, shape, lo=-3, hi=3))    # small range: ties -> first index, as in TF
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        out = run_both(lambda x: api(x, axis=axis), [rt.constant(x)], op_type)
        assert_matches_numpy(out, ref(x, axis=axis).astype(np.int64))          # default output_type int64
        out32 = run_both(lambda x: api(x, axis=axis, output_type=rt.int32), [rt.constant(x)], op_type)
        assert_matches_numpy(out32, ref(x, axis=axis).astype(np.int32))
    check.__name__ = f"check_{op_type}"
    return check


@RUNTIME_SETTINGS
@given(st.data())
def check_cumsum(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, lo=-3, hi=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    out = run_both(lambda x: rt.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse), [rt.constant(x)],
                   "Cumsum")
    # reference: an explicit loop over positions along the axis
    moved = np.moveaxis(x, axis, 0)
    acc = np.zeros(moved.shape[1:], dtype=np.float64 if dtype.is_floating else object)
    rows = [None] * moved.shape[0]
    order = range(moved.shape[0] - 1, -1, -1) if reverse else range(moved.shape[0])
    for i in order:
        if exclusive:
            rows[i] = np.array(acc, copy=True)
            acc = acc + moved[i]
        else:
            acc = acc + moved[i]
            rows[i] = np.array(acc, copy=True)
    expected = np.moveaxis(np.stack(rows), 0, axis)
    if dtype.is_integer:     # integer cumsum wraps in the input dtype
        expected = np.vectorize(lambda v: np.array(v).astype(np.int64), otypes=[np.int64])(expected)
        expected = expected.astype(dtype.np)
    assert_matches_numpy(out, expected.astype(dtype.np), tol=(1e-2, 1e-2) if dtype is rt.float16 else None)


@RUNTIME_SETTINGS
@given(st.data())
def check_softmax(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, lo=-20, hi=20))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    out = run_both(lambda x: rt.nn.softmax(x, axis=axis), [rt.constant(x)], "Softmax")
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    expected = e / e.sum(axis=axis, keepdims=True)
    assert_matches_numpy(out, expected.astype(dtype.np), tol=(5e-3, 5e-3) if dtype is rt.float16 else None)


# ---------------------------------------------------------------------------
# Graph leaves.

def check_placeholder():
    f = rt.function(lambda x, y: x * y, autograph=False)
    concrete = f.get_concrete_function(rt.TensorSpec([None, 3], rt.float32), rt.TensorSpec([], rt.float32))
    placeholders = [op for op in concrete.graph.get_operations() if op.type == "Placeholder"]
    assert [op.name for op in placeholders] == ["x", "y"]
    assert placeholders[0].attrs["dtype"] is rt.float32
    assert placeholders[0].attrs["shape"] == rt.TensorShape([None, 3])
    assert str(concrete.inputs[0]) == 'Tensor("x:0", shape=(None, 3), dtype=float32)'
    from runtime.executor import run_graph
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = run_graph(concrete.graph, [x, np.float32(2)])
    np.testing.assert_array_equal(out, x * 2)
    assert registry.get_opdef("Placeholder").kernel is None     # fed, never run


def check_const():
    closure = rt.constant([1.5, 2.5])
    out = run_both(lambda x: x + rt.constant([10, 20], dtype=rt.float32) + closure, [rt.constant([1., 2.])], "Const")
    assert_matches_numpy(out, np.array([12.5, 24.5], np.float32))
    f = rt.function(lambda: rt.constant([[1, 2], [3, 4]], dtype=rt.int64), autograph=False)
    concrete = f.get_concrete_function()
    (const,) = [op for op in concrete.graph.get_operations() if op.type == "Const"]
    assert const.attrs["dtype"] is rt.int64
    np.testing.assert_array_equal(const.attrs["value"].array, [[1, 2], [3, 4]])
    assert_matches_numpy(f(), np.array([[1, 2], [3, 4]], np.int64))
    s = run_both(lambda: rt.constant(["a", "bc"]), [], "Const")
    assert s.numpy().tolist() == [b"a", b"bc"]
    assert_matches_numpy(run_both(lambda: rt.constant(7, shape=[2, 2]), [], "Const"), np.full((2, 2), 7, np.int32))


def check_identity():
    for value in ([1, 2], [[1.5]], True, "s"):
        out = run_both(lambda x: rt.identity(x), [rt.constant(value)], "Identity")
        assert_identical(out, rt.constant(value))


# ---------------------------------------------------------------------------
# Shape queries and creation.

def check_shape():
    x = rt.constant(np.zeros((2, 3, 4), np.float32))
    out = run_both(lambda x: rt.shape(x), [x], "Shape")
    assert_matches_numpy(out, np.array([2, 3, 4], np.int32))
    assert_matches_numpy(run_both(lambda x: rt.shape(x, out_type=rt.int64), [x], "Shape"),
                         np.array([2, 3, 4], np.int64))
    f = rt.function(lambda x: rt.shape(x), input_signature=[rt.TensorSpec([None, 3], rt.int32)], autograph=False)
    assert f.get_concrete_function().outputs[0].shape == (2,)
    assert_matches_numpy(f(rt.constant(np.zeros((5, 3), np.int32))), np.array([5, 3], np.int32))


def check_size():
    for shape in [(), (0,), (2, 3), (4, 1, 2)]:
        out = run_both(lambda x: rt.size(x), [rt.constant(np.zeros(shape, np.int8))], "Size")
        assert_matches_numpy(out, np.array(int(np.prod(shape)), np.int32))


def check_rank():
    for shape in [(), (3,), (2, 3), (4, 1, 2)]:
        out = run_both(lambda x: rt.rank(x), [rt.constant(np.zeros(shape, np.float64))], "Rank")
        assert_matches_numpy(out, np.array(len(shape), np.int32))


def check_fill():
    assert_matches_numpy(run_both(lambda v: rt.fill([2, 3], v), [rt.constant(7)], "Fill"),
                         np.full((2, 3), 7, np.int32))
    assert_matches_numpy(run_both(lambda d, v: rt.fill(d, v), [rt.constant([3]), rt.constant(1.5)], "Fill"),
                         np.full((3,), 1.5, np.float32))
    for dtype in NUMERIC + BOOL:
        assert_matches_numpy(run_both(lambda: rt.zeros([2, 2], dtype), [], "Fill"), np.zeros((2, 2), dtype.np))
        assert_matches_numpy(run_both(lambda: rt.ones((3,), dtype), [], "Fill"), np.ones(3, dtype.np))
    assert_matches_numpy(rt.zeros([]), np.zeros((), np.float32))
    assert_matches_numpy(rt.zeros([0, 2]), np.zeros((0, 2), np.float32))
    # shapes from a tensor in a graph
    f = rt.function(lambda x: rt.zeros(rt.shape(x), rt.int64), input_signature=[rt.TensorSpec([None, 2], rt.float32)],
                    autograph=False)
    assert_matches_numpy(f(rt.constant(np.ones((3, 2), np.float32))), np.zeros((3, 2), np.int64))
    raises_both(lambda d: rt.fill(d, 1), [rt.constant([-1, 2])], (rt.errors.InvalidArgumentError, ValueError))


def _like_case(op_type, api, np_fn):
    def check():
        for dtype in NUMERIC + BOOL:
            x = rt.constant(np.arange(6).reshape(2, 3).astype(dtype.np))
            assert_matches_numpy(run_both(lambda x: api(x), [x], op_type), np_fn(x.numpy()))
        out = run_both(lambda x: api(x, dtype=rt.float64), [rt.constant([1, 2])], op_type)
        assert_matches_numpy(out, np_fn(np.array([1, 2], np.float64)))
    check.__name__ = f"check_{op_type}"
    return check


def check_eye():
    for rows, cols, dtype in [(3, None, rt.float32), (2, 4, rt.int32), (0, 0, rt.float64), (3, 1, rt.bool)]:
        out = run_both(lambda: rt.eye(rows, cols, dtype=dtype), [], "Eye")
        assert_matches_numpy(out, np.eye(rows, cols, dtype=dtype.np))


def check_range():
    for args, expected in [((5,), np.arange(5, dtype=np.int32)), ((1, 10, 3), np.arange(1, 10, 3, dtype=np.int32)),
                           ((5, 0, -2), np.arange(5, 0, -2, dtype=np.int32)),
                           ((0.0, 1.0, 0.25), np.arange(0, 1, 0.25, dtype=np.float32)),
                           ((3, 3), np.zeros(0, np.int32))]:
        assert_matches_numpy(run_both(lambda: rt.range(*args), [], "Range"), expected)
    assert_matches_numpy(rt.range(4, dtype=rt.int64), np.arange(4, dtype=np.int64))
    out = run_both(lambda n: rt.range(1, n + 1), [rt.constant(4)], "Range")
    assert_matches_numpy(out, np.arange(1, 5, dtype=np.int32))
    f = rt.function(lambda n: rt.range(n), autograph=False)
    assert f.get_concrete_function(rt.constant(3)).outputs[0].shape == rt.TensorShape([None])
    raises_both(lambda d: rt.range(0, 5, d), [rt.constant(0)], rt.errors.InvalidArgumentError)


def check_linspace():
    for start, stop, num in [(0.0, 1.0, 5), (-2.0, 2.0, 1), (1.0, 0.0, 3)]:
        out = run_both(lambda a, b: rt.linspace(a, b, num), [rt.constant(start), rt.constant(stop)], "LinSpace")
        assert_matches_numpy(out, np.linspace(start, stop, num, dtype=np.float32))
    out = run_both(lambda a, b, n: rt.linspace(a, b, n),
                   [rt.constant(0.0, rt.float64), rt.constant(1.0, rt.float64), rt.constant(4)], "LinSpace")
    assert_matches_numpy(out, np.linspace(0, 1, 4))


# ---------------------------------------------------------------------------
# Reshaping.

@RUNTIME_SETTINGS
@given(st.data())
def check_reshape(data):
    dtype = data.draw(st.sampled_from(NUMERIC + BOOL))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape))
    n = x.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    a = data.draw(st.sampled_from(divisors))
    target = data.draw(st.sampled_from([[n], [a, n // a], [a, -1], [-1], [1, n, 1], [n // a, 1, a]]))
    out = run_both(lambda x: rt.reshape(x, target), [rt.constant(x)], "Reshape")
    assert_matches_numpy(out, x.reshape(target))
    # the target as a tensor
    out = run_both(lambda x, s: rt.reshape(x, s), [rt.constant(x), rt.constant(target)], "Reshape")
    assert_matches_numpy(out, x.reshape(target))
    with pytest.raises(ValueError, match="Reshape"):
        rt.reshape(rt.constant(x), [n + 1])
    if x.ndim == 0:
        return          # a scalar's size is always known: the error above is the trace-time one
    f = rt.function(lambda x: rt.reshape(x, [n + 1]), input_signature=[rt.TensorSpec([None] * x.ndim, dtype)],
                    autograph=False)
    with pytest.raises(rt.errors.InvalidArgumentError, match="Reshape"):
        f(rt.constant(x))


@RUNTIME_SETTINGS
@given(st.data())
def check_transpose(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
    x = data.draw(arrays(rt.int16, shape))
    perm = data.draw(st.one_of(st.none(), st.permutations(range(len(shape)))))
    out = run_both(lambda x: rt.transpose(x, perm), [rt.constant(x)], "Transpose")
    assert_matches_numpy(out, np.transpose(x, perm))
    if len(shape) >= 2:
        with pytest.raises(ValueError, match="Transpose"):
            rt.transpose(rt.constant(x), [0] * len(shape))


def _with_arity(n, fn):
    """``fn(*xs)`` as a function of exactly ``n`` named parameters (tracing names placeholders after them)."""
    return {1: lambda a: fn(a), 2: lambda a, b: fn(a, b), 3: lambda a, b, c: fn(a, b, c)}[n]


@RUNTIME_SETTINGS
@given(st.data())
def check_concat(data):
    dtype = data.draw(st.sampled_from(NUMERIC + BOOL))
    base = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        shape = list(base)
        shape[axis] = data.draw(st.integers(0, 3))
        parts.append(data.draw(arrays(dtype, tuple(shape))))
    fn = _with_arity(len(parts), lambda *xs: rt.concat(list(xs), axis))
    out = run_both(fn, [rt.constant(p) for p in parts], "ConcatV2")
    assert_matches_numpy(out, np.concatenate(parts, axis))
    if len(parts) > 1:
        with pytest.raises(TypeError, match="ConcatV2"):
            rt.concat([rt.constant(parts[0]), rt.cast(rt.constant(parts[1]), rt.float64 if dtype is not rt.float64
                                                                          else rt.int32)], axis)


@RUNTIME_SETTINGS
@given(st.data())
def check_pack(data):
    dtype = data.draw(st.sampled_from(NUMERIC + BOOL))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    parts = [data.draw(arrays(dtype, shape)) for _ in range(data.draw(st.integers(1, 3)))]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    fn = _with_arity(len(parts), lambda *xs: rt.stack(list(xs), axis))
    out = run_both(fn, [rt.constant(p) for p in parts], "Pack")
    assert_matches_numpy(out, np.stack(parts, axis))
    # Python lists that mix tensors and values are packed too (tf.constant semantics)
    assert_matches_numpy(rt.convert_to_tensor([rt.constant(1), 2]), np.array([1, 2], np.int32))


@RUNTIME_SETTINGS
@given(st.data())
def check_unpack(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    x = data.draw(arrays(rt.float32, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    out = run_both(lambda x: tuple(rt.unstack(x, axis=axis)), [rt.constant(x)], "Unpack", relax=False)
    expected = [np.take(x, i, axis=axis) for i in range(shape[axis])]
    assert len(out) == len(expected)
    for o, e in zip(out, expected):
        assert_matches_numpy(o, e)
    # with an unknown dimension, num= is needed; a wrong num is a run-time error
    dims = [None] * len(shape)
    f = rt.function(lambda x: tuple(rt.unstack(x, num=shape[axis] + 1, axis=axis)),
                    input_signature=[rt.TensorSpec(dims, rt.float32)], autograph=False)
    with pytest.raises(rt.errors.InvalidArgumentError, match="Unpack"):
        f(rt.constant(x))


@RUNTIME_SETTINGS
@given(st.data())
def check_expand_dims(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    x = data.draw(arrays(rt.uint8, shape))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    out = run_both(lambda x: rt.expand_dims(x, axis), [rt.constant(x)], "ExpandDims")
    assert_matches_numpy(out, np.expand_dims(x, axis))


@RUNTIME_SETTINGS
@given(st.data())
def check_squeeze(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=2))
    x = data.draw(arrays(rt.int64, shape))
    ones = [i for i, d in enumerate(shape) if d == 1]
    axis = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(ones), unique=True, min_size=1)
                               if ones else st.none()))
    out = run_both(lambda x: rt.squeeze(x, axis), [rt.constant(x)], "Squeeze", relax=axis is not None)
    assert_matches_numpy(out, np.squeeze(x, axis=None if axis is None else tuple(axis)))
    if any(d != 1 for d in shape):
        i = next(i for i, d in enumerate(shape) if d != 1)
        with pytest.raises(ValueError, match="Squeeze"):
            rt.squeeze(rt.constant(x), [i])
        f = rt.function(lambda x: rt.squeeze(x, [i]), input_signature=[rt.TensorSpec([None] * len(shape), rt.int64)],
                        autograph=False)
        with pytest.raises(rt.errors.InvalidArgumentError, match="Squeeze"):
            f(rt.constant(x))


@RUNTIME_SETTINGS
@given(st.data())
def check_tile(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    x = data.draw(arrays(rt.float64, shape))
    multiples = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)))
    out = run_both(lambda x: rt.tile(x, multiples), [rt.constant(x)], "Tile")
    assert_matches_numpy(out, np.tile(x, multiples))
    out = run_both(lambda x, m: rt.tile(x, m), [rt.constant(x), rt.constant(multiples)], "Tile")
    assert_matches_numpy(out, np.tile(x, multiples))


@RUNTIME_SETTINGS
@given(st.data())
def check_pad(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dtype = data.draw(st.sampled_from([rt.float32, rt.int32, rt.float64]))
    x = data.draw(arrays(dtype, shape))
    pads = [[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))] for _ in shape]
    out = run_both(lambda x: rt.pad(x, pads, constant_values=5), [rt.constant(x)], "PadV2")
    assert_matches_numpy(out, np.pad(x, pads, constant_values=5))
    out = run_both(lambda x, p: rt.pad(x, p), [rt.constant(x), rt.constant(pads)], "PadV2")   # paddings at run time
    assert_matches_numpy(out, np.pad(x, pads))
    raises_both(lambda x: rt.pad(x, [[-1, 0]] * len(shape)), [rt.constant(x)],
                (ValueError, rt.errors.InvalidArgumentError), match="Pad")


@RUNTIME_SETTINGS
@given(st.data())
def check_mirror_pad(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    x = data.draw(arrays(rt.float32, shape))
    mode = data.draw(st.sampled_from(["REFLECT", "SYMMETRIC"]))
    limit = min(shape) - (mode == "REFLECT")
    pads = [[data.draw(st.integers(0, limit)), data.draw(st.integers(0, limit))] for _ in shape]
    out = run_both(lambda x: rt.pad(x, pads, mode=mode), [rt.constant(x)], "MirrorPad")
    assert_matches_numpy(out, np.pad(x, pads, mode=mode.lower()))
    too_big = [[max(shape) + 1, 0]] * len(shape)
    raises_both(lambda x: rt.pad(x, too_big, mode=mode), [rt.constant(x)],
                (ValueError, rt.errors.InvalidArgumentError), match="MirrorPad")


@RUNTIME_SETTINGS
@given(st.data())
def check_pad_grad(data):
    """PadGrad is the adjoint of padding: <pad(x), g> == <x, PadGrad(g)> for every mode."""
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    mode = data.draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    limit = min(shape) - (mode == "REFLECT")
    pads = [[data.draw(st.integers(0, limit)), data.draw(st.integers(0, limit))] for _ in shape]
    x = np.random.default_rng(0).normal(size=shape)
    padded = np.pad(x, pads, mode=mode.lower())
    g = np.random.default_rng(1).normal(size=padded.shape)
    out = run_both(lambda g: registry.apply("PadGrad", [g, rt.constant(pads)], {"mode": mode}), [rt.constant(g)],
                   "PadGrad")
    assert out.shape == x.shape
    np.testing.assert_allclose(np.sum(out * x), np.sum(padded * g), rtol=1e-9)


@RUNTIME_SETTINGS
@given(st.data())
def check_gather(data):
    dtype = data.draw(st.sampled_from(NUMERIC + BOOL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx_dtype = data.draw(st.sampled_from([rt.int32, rt.int64]))
    indices = data.draw(hnp.arrays(idx_dtype.np, data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)),
                                   elements=st.integers(0, n - 1)))
    out = run_both(lambda x, i: rt.gather(x, i, axis=axis), [rt.constant(x), rt.constant(indices)], "GatherV2")
    assert_matches_numpy(out, np.take(x, indices, axis=axis))
    raises_both(lambda x, i: rt.gather(x, i, axis=axis), [rt.constant(x), rt.constant([0, n])],
                rt.errors.InvalidArgumentError, match="GatherV2")
    raises_both(lambda x, i: rt.gather(x, i, axis=axis), [rt.constant(x), rt.constant([-1])],
                rt.errors.InvalidArgumentError, match="GatherV2")


_SLICES = st.one_of(st.integers(-5, 5), st.none(), st.builds(slice, st.one_of(st.none(), st.integers(-5, 5)),
                                                             st.one_of(st.none(), st.integers(-5, 5)),
                                                             st.one_of(st.none(), st.integers(-3, 3).filter(bool))))


@RUNTIME_SETTINGS
@given(st.data())
def check_strided_slice(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(rt.int32, shape))
    key = tuple(data.draw(st.lists(_SLICES, min_size=1, max_size=len(shape))))
    try:
        expected = x[key]
    except IndexError:
        with pytest.raises((ValueError, rt.errors.InvalidArgumentError)):
            rt.constant(x)[key]
        return
    out = run_both(lambda x: x[key], [rt.constant(x)], "StridedSlice")
    assert_matches_numpy(out, expected)
    # a dynamic integer index from a tensor
    i = data.draw(st.integers(0, shape[0] - 1))
    out = run_both(lambda x, i: x[i], [rt.constant(x), rt.constant(i)], "StridedSlice")
    assert_matches_numpy(out, x[i])
    out = run_both(lambda x, i: x[i:], [rt.constant(x), rt.constant(i)], "StridedSlice")
    assert_matches_numpy(out, x[i:])


# ---------------------------------------------------------------------------
# Random ops: shape, dtype, range; a seed makes runs repeatable; graphs draw anew each run.

def check_random_uniform():
    for dtype in FLOATS:
        out = run_both(lambda: rt.random.uniform([3, 4], dtype=dtype, seed=1), [], "RandomUniform",
                       check_eager=False)
        assert out.dtype is dtype and out.shape == (3, 4)
        assert np.all((out.numpy() >= 0) & (out.numpy() < 1))
        scaled = rt.random.uniform([1000], minval=-2.0, maxval=3.0, dtype=dtype, seed=2).numpy()
        assert scaled.min() >= -2 and scaled.max() <= 3 and scaled.std() > 0.5
    for dtype in INTS:
        out = rt.random.uniform([200], minval=1, maxval=5, dtype=dtype, seed=3)
        assert out.dtype is dtype and set(out.numpy().tolist()) <= {1, 2, 3, 4}
        assert len(set(out.numpy().tolist())) == 4
    # as TensorFlow's kernels, a seeded op counts its runs: the same op seed gives new numbers on each call,
    # the same sequence again after set_seed (random_ops' docstring)
    rt.random.set_seed(None)
    first = [rt.random.uniform([5], seed=7).numpy() for _ in range(2)]
    assert not np.array_equal(*first)
    rt.random.set_seed(None)
    np.testing.assert_array_equal(first, [rt.random.uniform([5], seed=7).numpy() for _ in range(2)])
    f = rt.function(lambda: rt.random.uniform([8], seed=7), autograph=False)
    a, b = f(), f()
    assert not np.array_equal(a.numpy(), b.numpy()), "a graph's random op must draw new numbers on every run"
    g = rt.function(lambda x: rt.random.uniform(rt.shape(x)), input_signature=[rt.TensorSpec([None], rt.int32)],
                    autograph=False)
    assert g(rt.constant([1, 2, 3])).shape == (3,)
    with pytest.raises(ValueError):
        rt.random.uniform([2], dtype=rt.int32)
    with pytest.raises(rt.errors.InvalidArgumentError):
        rt.random.uniform([2], minval=3, maxval=3, dtype=rt.int32)
    # bounds may be tensors computed in the graph (AutoGraph's reference tests draw `uniform((), i, i + 1)`)
    bounded = rt.function(lambda i: (rt.random.uniform((), i, i + 1, rt.int32),
                                     rt.random.uniform([50], rt.cast(i, rt.float32), 2.5 * rt.cast(i, rt.float32))),
                          autograph=False)
    exact, scaled = bounded(rt.constant(2))
    assert int(exact) == 2 and scaled.numpy().min() >= 2.0 and scaled.numpy().max() < 5.0
    with pytest.raises(rt.errors.InvalidArgumentError, match="minval < maxval"):
        rt.function(lambda i: rt.random.uniform((), i, i, rt.int32), autograph=False)(rt.constant(2))
    with pytest.raises(TypeError, match="minval"):
        rt.random.uniform((), rt.constant(1.0), 2.0, rt.int32)


def check_random_normal():
    for dtype in FLOATS:
        out = run_both(lambda: rt.random.normal([2, 3], dtype=dtype, seed=1), [], "RandomStandardNormal",
                       check_eager=False)
        assert out.dtype is dtype and out.shape == (2, 3)
    sample = rt.random.normal([4000], mean=3.0, stddev=2.0, seed=5).numpy()
    assert sample.dtype == np.float32
    assert abs(sample.mean() - 3.0) < 0.2 and abs(sample.std() - 2.0) < 0.2
    f = rt.function(lambda: rt.random.normal([8], seed=7), autograph=False)
    assert not np.array_equal(f().numpy(), f().numpy())
    with pytest.raises(TypeError):
        rt.random.normal([2], dtype=rt.int32)


# ---------------------------------------------------------------------------
# Side effects.

def check_print():
    def show(x):
        rt.print("x =", x, "s", rt.constant("str"), output_stream=sys.stdout)
        rt.print(x * 2, sep="|", end="!\n")
        return x + 1

    for _ in range(2):
        out_buf, err_buf = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out_buf), contextlib.redirect_stderr(err_buf):
            result = show(rt.constant([1, 2]))
        assert out_buf.getvalue() == "x = [1 2] s str\n"
        assert err_buf.getvalue() == "[2 4]!\n"
        assert_matches_numpy(result, np.array([2, 3], np.int32))
    f = rt.function(show, autograph=False)
    assert "PrintV2" in op_types(f.get_concrete_function(rt.constant([1, 2])).graph)
    for _ in range(2):            # prints run on every call, not only while tracing
        out_buf, err_buf = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out_buf), contextlib.redirect_stderr(err_buf):
            f(rt.constant([1, 2]))
        assert out_buf.getvalue() == "x = [1 2] s str\n"
        assert err_buf.getvalue() == "[2 4]!\n"
    # a print whose result nobody uses still runs (non-strict execution keeps side effects)
    g = rt.function(lambda x: (rt.print(x, output_stream=sys.stdout), x)[1], autograph=False)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g(rt.constant(3.5))
    assert buf.getvalue() == "3.5\n"


def check_assert():
    def checked(x):
        rt.Assert(rt.reduce_all(x > 0), ["x must be positive, got", x])
        return x * 2
    assert_matches_numpy(run_both(checked, [rt.constant([1, 2])], "Assert"), np.array([2, 4], np.int32))
    raises_both(checked, [rt.constant([1, -2])], rt.errors.InvalidArgumentError,
                match=r"x must be positive, got \[ 1 -2\]")
    with pytest.raises(TypeError, match="Assert"):
        rt.function(lambda x: rt.Assert(x, ["no"]), autograph=False)(rt.constant(1))
    for api, good, bad in [(rt.debugging.assert_equal, (1, 1), (1, 2)), (rt.debugging.assert_greater, (2, 1), (1, 1)),
                           (rt.debugging.assert_less, (1, 2), (2, 2)),
                           (rt.debugging.assert_greater_equal, (1, 1), (0, 1)),
                           (rt.debugging.assert_less_equal, (1, 1), (2, 1))]:
        fn = lambda x, y: (api(x, y), x)[1]  # noqa: E731
        run_both(fn, [rt.constant(good[0]), rt.constant(good[1])], "Assert")
        raises_both(fn, [rt.constant(bad[0]), rt.constant(bad[1])], rt.errors.InvalidArgumentError,
                    match="did not hold")


def check_check_numerics():
    fn = lambda x: rt.debugging.check_numerics(x, "bad values") * 2  # noqa: E731
    assert_matches_numpy(run_both(fn, [rt.constant([1.0, 2.0])], "CheckNumerics"), np.array([2, 4], np.float32))
    raises_both(fn, [rt.constant([1.0, np.nan])], rt.errors.InvalidArgumentError, match="bad values.*NaN")
    raises_both(fn, [rt.constant([np.inf, 1.0])], rt.errors.InvalidArgumentError, match="bad values.*Inf")
    with pytest.raises(TypeError, match="CheckNumerics"):
        rt.check_numerics(rt.constant([1]), "ints")


# ---------------------------------------------------------------------------
# Python callbacks: py_function, numpy_function, dataset generators and iterators.

def check_eager_py_func():
    calls = []

    def scale(x, k):
        calls.append(float(k))
        return x * k

    x, k = rt.constant([1.0, -2.0]), rt.constant(3.0)
    out = run_both(lambda x, k: rt.py_function(scale, [x, k], rt.float32), [x, k], "EagerPyFunc")
    assert_matches_numpy(out, np.array([3.0, -6.0], np.float32))
    f = rt.function(lambda x, k: rt.py_function(scale, [x, k], rt.float32), autograph=False)
    calls.clear()
    f(x, k)
    f(x, k)
    assert calls == [3.0, 3.0], "py_function must run on every call"
    two = rt.py_function(lambda a: (a, a + 1), [rt.constant(1)], [rt.int32, rt.int32])
    assert [int(t) for t in two] == [1, 2]
    assert rt.py_function(lambda a: None, [rt.constant(1)], None) is None
    with pytest.raises(rt.errors.InvalidArgumentError, match="float64"):
        rt.py_function(lambda a: np.array(1.0), [rt.constant(1.0)], rt.float32)
    shaped = rt.function(lambda a: rt.py_function(lambda v: v, [a], rt.float32, output_shapes=[2]), autograph=False)
    assert shaped.get_concrete_function(rt.TensorSpec([None], rt.float32)).outputs[0].shape == (2,)
    with pytest.raises(rt.errors.InvalidArgumentError, match="declared shape"):
        shaped(rt.constant([1.0, 2.0, 3.0]))


def check_py_func():
    out = run_both(lambda x: rt.numpy_function(np.sort, [x], rt.int32), [rt.constant([3, 1, 2])], "PyFunc")
    assert_matches_numpy(out, np.array([1, 2, 3], np.int32))
    f = rt.function(lambda x: rt.numpy_function(np.sort, [x], rt.int32) * 0, autograph=False)
    graph = optimize(f.get_concrete_function(rt.constant([1])).graph)
    assert "PyFunc" in op_types(graph), "a stateful numpy_function is never pruned or folded"

    def boom(x):
        raise RuntimeError("boom")
    with pytest.raises(rt.errors.UnknownError, match="RuntimeError: boom") as info:
        rt.function(lambda x: rt.numpy_function(boom, [x], rt.int32), autograph=False)(rt.constant(1))
    assert isinstance(info.value.original, RuntimeError)
    assert "in boom" in str(info.value), "the message holds the Python traceback"


def check_py_func_stateless():
    out = run_both(lambda x: rt.numpy_function(np.negative, [x], rt.int32, stateful=False),
                   [rt.constant([3, 1])], "PyFuncStateless")
    assert_matches_numpy(out, np.array([-3, -1], np.int32))
    f = rt.function(lambda x: (rt.numpy_function(np.negative, [x], rt.int32, stateful=False), x + 1)[1],
                    autograph=False)
    graph = optimize(f.get_concrete_function(rt.constant([1])).graph)
    assert "PyFuncStateless" not in op_types(graph), "an unused stateless numpy_function is pruned"


def _shuffle_by_buffer(values, window, rng):
    """shuffle(window) as a buffer of ``window`` slots filled from the stream (each draw picks a slot, the
    next element takes the place of the emitted one's window start): what ShuffleIndices must equal."""
    ring, out, filled, t = {}, [], 0, 0
    while True:
        while filled < t + window and filled < len(values):
            ring[filled % window] = values[filled]
            filled += 1
        if filled == t:
            return out, rng
        rng = rng * 48271 % 2147483647
        q, s = (t + rng % (filled - t)) % window, t % window
        ring[s], ring[q] = ring[q], ring[s]
        out.append(ring[s])
        t += 1


def check_shuffle_indices():
    for n, window in [(0, 3), (1, 1), (6, 1), (9, 3), (12, 12), (20, 100), (33, 7)]:
        values = np.arange(n, dtype=np.int64) * 5 + 2
        out = run_both(lambda x, w, r: shuffle_indices(x, w, r),
                       [rt.constant(values), rt.constant(window, rt.int64), rt.constant(12345, rt.int64)],
                       "ShuffleIndices")
        want, rng = _shuffle_by_buffer(values.tolist(), window, 12345)
        assert out[0].numpy().tolist() == want and int(out[1]) == rng, (n, window)
        positions = [(v - 2) // 5 for v in want]
        assert sorted(positions) == list(range(n))
        assert all(p < t + window for t, p in enumerate(positions)), "emitted from within the buffer window"
    with pytest.raises(TypeError, match="int64 vector"):
        shuffle_indices(rt.constant([1.0]), rt.constant(1, rt.int64), rt.constant(1, rt.int64))


def _generator_total(ds):
    total = rt.constant(0)
    for x in ds:
        total += x
    return total


def check_generator_ops():
    ds = rt.data.Dataset.from_generator(lambda: iter([1, 2, 3]), rt.int32, output_shapes=[])
    f = rt.function(_generator_total)
    assert {"GeneratorInit", "GeneratorNext"} <= op_types(f.get_concrete_function(ds).graph)
    assert int(f(ds)) == 6 == sum(int(x) for x in ds)
    bad = rt.data.Dataset.from_generator(lambda: iter([1, "a"]), rt.int32, output_shapes=[])
    with pytest.raises(rt.errors.InvalidArgumentError, match="component 0"):
        f(bad)


def _next_twice(iterator):
    return next(iterator) + next(iterator)


def check_iterator_get_next():
    iterator = iter(rt.data.Dataset.from_tensor_slices([1, 2, 3, 4, 5]))
    f = rt.function(_next_twice)
    assert "IteratorGetNext" in op_types(f.get_concrete_function(iterator).graph)
    assert [int(f(iterator)), int(f(iterator))] == [3, 7]
    with pytest.raises(rt.errors.OutOfRangeError):
        f(iterator)


# ---------------------------------------------------------------------------
# Control flow.

def check_if():
    def f(x, p):
        return rt.cond(p, lambda: x * 2, lambda: x - 1)
    for p in (True, False):
        out = run_both(f, [rt.constant([1.0, 2.0]), rt.constant(p)], "If")
        assert_matches_numpy(out, np.array([2.0, 4.0] if p else [0.0, 1.0], np.float32))
    # only the taken branch runs: the other one's failure does not matter
    g = lambda x, p: rt.cond(p, lambda: rt.gather(x, 10), lambda: x[0])  # noqa: E731
    assert_matches_numpy(run_both(g, [rt.constant([4, 5]), rt.constant(False)], "If"), np.array(4, np.int32))
    raises_both(g, [rt.constant([4, 5]), rt.constant(True)], rt.errors.InvalidArgumentError)


def check_while():
    def f(n):
        return rt.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), (rt.constant(0), rt.constant(0)))
    for n in (0, 1, 5):
        i, s = run_both(f, [rt.constant(n)], "While")
        assert_matches_numpy(i, np.array(n, np.int32))
        assert_matches_numpy(s, np.array(n * (n - 1) // 2, np.int32))
    g = lambda x: rt.while_loop(lambda v: v < 100, lambda v: v * 2, x, maximum_iterations=3)  # noqa: E731
    assert_matches_numpy(run_both(g, [rt.constant(1)], "While"), np.array(8, np.int32))


# ---------------------------------------------------------------------------
# Variables.

def check_read_variable():
    v = rt.Variable([1.0, 2.0])
    f = rt.function(lambda: v.read_value() * 2, autograph=False)
    assert "ReadVariableOp" in op_types(f.get_concrete_function().graph)
    assert_matches_numpy(f(), np.array([2.0, 4.0], np.float32))
    v.assign([3.0, 4.0])
    assert_matches_numpy(f(), np.array([6.0, 8.0], np.float32))     # read by reference, not captured by value
    g = rt.function(lambda x: v + x, autograph=False)                # implicit read through an operator
    assert_matches_numpy(g(rt.constant(1.0)), np.array([4.0, 5.0], np.float32))


def _assign_case(op_type, method, update):
    def check():
        for dtype in (rt.int32, rt.float64):
            eager_v = rt.Variable(np.array([5, 7], dtype.np))
            graph_v = rt.Variable(np.array([5, 7], dtype.np))
            delta = rt.constant(np.array([1, 2], dtype.np))
            getattr(eager_v, method)(delta)
            f = rt.function(lambda d: (getattr(graph_v, method)(d), None)[1], autograph=False)
            assert op_type in op_types(f.get_concrete_function(delta).graph)
            f(delta)
            expected = update(np.array([5, 7], dtype.np), np.array([1, 2], dtype.np))
            assert_matches_numpy(eager_v.read_value(), expected)
            assert_matches_numpy(graph_v.read_value(), expected)
            f(delta)                                    # runs again on every call
            assert_matches_numpy(graph_v.read_value(), update(expected, np.array([1, 2], dtype.np)))
        v = rt.Variable([1, 2])
        with pytest.raises(TypeError):
            getattr(v, method)(rt.constant([1.0, 2.0]))
    check.__name__ = f"check_{op_type}"
    return check


# ---------------------------------------------------------------------------
# TensorArray (TensorList ops).

def _tensor_array_program(n):
    ta = rt.TensorArray(rt.float32, size=n)
    ta = rt.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, rt.cast(i, rt.float32) * 2.0)),
                       (rt.constant(0), ta))[1]
    return ta.stack(), ta.read(1), ta.size()


def check_tensor_list_reserve():
    stacked, item, size = run_both(_tensor_array_program, [rt.constant(3)], "TensorListReserve")
    assert_matches_numpy(stacked, np.array([0, 2, 4], np.float32))
    assert_matches_numpy(item, np.array(2, np.float32))
    assert_matches_numpy(size, np.array(3, np.int32))
    f = rt.function(lambda: rt.TensorArray(rt.int32, size=2).write(0, 5).stack(), autograph=False)
    assert_matches_numpy(f(), np.array([5, 0], np.int32))      # unwritten elements read as zeros
    assert_matches_numpy(rt.TensorArray(rt.int32, size=2).write(0, 5).stack(), np.array([5, 0], np.int32))


def check_tensor_list_set_item():
    def fn(x):
        ta = rt.TensorArray(rt.int64, size=0, dynamic_size=True)
        for i in range(3):
            ta = ta.write(i, x + i)
        return ta.stack()
    assert_matches_numpy(run_both(fn, [rt.constant(np.array([1, 2], np.int64))], "TensorListSetItem"),
                         np.array([[1, 2], [2, 3], [3, 4]], np.int64))
    raises_both(lambda x: rt.TensorArray(rt.int32, size=1).write(1, x).stack(), [rt.constant(1)],
                rt.errors.InvalidArgumentError, match="out of range")
    with pytest.raises(ValueError):
        rt.TensorArray(rt.int32, size=2).write(0, [1, 2]).write(1, [1, 2, 3])


def check_tensor_list_get_item():
    fn = lambda x, i: rt.TensorArray(rt.float32, size=3).unstack(x).read(i)  # noqa: E731
    x = rt.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert_matches_numpy(run_both(fn, [x, rt.constant(2)], "TensorListGetItem"), np.array([5.0, 6.0], np.float32))
    raises_both(fn, [x, rt.constant(3)], rt.errors.InvalidArgumentError, match="out of range")


def check_tensor_list_stack():
    fn = lambda x: rt.TensorArray(rt.int32, size=0, dynamic_size=True).unstack(x).stack()  # noqa: E731
    for value in ([1, 2, 3], [[1, 2]], np.zeros((0, 2), np.int32)):
        x = rt.constant(value)
        assert_matches_numpy(run_both(fn, [x], "TensorListStack"), np.asarray(x.numpy()))
    empty = rt.function(lambda: rt.TensorArray(rt.float32, size=0, element_shape=[2]).stack(), autograph=False)
    assert_matches_numpy(empty(), np.zeros((0, 2), np.float32))


def check_tensor_list_from_tensor():
    fn = lambda x: rt.TensorArray(rt.float64, size=2).unstack(x).read(1)  # noqa: E731
    assert_matches_numpy(run_both(fn, [rt.constant(np.array([[1, 2], [3, 4]], np.float64))], "TensorListFromTensor"),
                         np.array([3, 4], np.float64))


def check_tensor_list_length():
    fn = lambda x: rt.TensorArray(rt.int32, size=0, dynamic_size=True).unstack(x).write(4, 1).size()  # noqa: E731
    assert_matches_numpy(run_both(fn, [rt.constant([1, 2])], "TensorListLength"), np.array(5, np.int32))


# ---------------------------------------------------------------------------
# Ops gradients are built from, and the neural-network ops.

def check_broadcast_to():
    x = np.arange(3.0).reshape(3, 1)
    out = run_both(lambda x: rt.broadcast_to(x, [2, 3, 4]), [rt.constant(x)], "BroadcastTo")
    assert_matches_numpy(out, np.broadcast_to(x, (2, 3, 4)))
    scalar = run_both(lambda x: rt.broadcast_to(x, []), [rt.constant(2.5)], "BroadcastTo")
    assert_matches_numpy(scalar, np.array(2.5, np.float32))
    raises_both(lambda x, s: rt.broadcast_to(x, s), [rt.constant(x), rt.constant([2, 2])],
                (ValueError, rt.errors.InvalidArgumentError), match="BroadcastTo")


def check_sum_to_shape():
    g = np.arange(24.0).reshape(2, 3, 4)
    out = run_both(lambda g, s: registry.apply("SumToShape", [g, s]), [rt.constant(g), rt.constant([3, 1])],
                   "SumToShape")
    assert_matches_numpy(out, g.sum(axis=(0, 2)).reshape(3, 1))
    out = run_both(lambda g, s: registry.apply("SumToShape", [g, s]), [rt.constant(g), rt.constant([2, 3, 4])])
    assert_matches_numpy(out, g)
    raises_both(lambda g, s: registry.apply("SumToShape", [g, s]), [rt.constant(g), rt.constant([2, 4])],
                rt.errors.InvalidArgumentError, match="SumToShape")


def check_unsorted_segment_sum():
    data = np.arange(12.0).reshape(4, 3)
    ids = np.array([1, 3, 1, 0], np.int32)
    out = run_both(lambda d, i: rt.unsorted_segment_sum(d, i, 5), [rt.constant(data), rt.constant(ids)],
                   "UnsortedSegmentSum")
    expected = np.zeros((5, 3))
    for row, segment in zip(data, ids):
        expected[segment] += row
    assert_matches_numpy(out, expected)
    raises_both(lambda d, i: rt.unsorted_segment_sum(d, i, 2), [rt.constant(data), rt.constant(ids)],
                rt.errors.InvalidArgumentError, match="UnsortedSegmentSum")


def check_strided_slice_grad():
    g = np.arange(4.0).reshape(2, 2)
    spec = (("s", 1, None, None), ("s", None, None, -2))
    out = run_both(lambda g: registry.apply("StridedSliceGrad", [rt.constant([3, 4]), g], {"spec": spec}),
                   [rt.constant(g)], "StridedSliceGrad")
    expected = np.zeros((3, 4))
    expected[1:, ::-2] = g
    assert_matches_numpy(out, expected)


def check_stop_gradient():
    x = np.array([1.5, -2.0], np.float32)
    assert_matches_numpy(run_both(rt.stop_gradient, [rt.constant(x)], "StopGradient"), x)


def check_one_hot():
    indices = np.array([[0, 2], [3, 1]], np.int32)
    out = run_both(lambda i: rt.one_hot(i, 3, on_value=5.0, off_value=-1.0), [rt.constant(indices)], "OneHot")
    expected = np.where(indices[..., None] == np.arange(3), 5.0, -1.0).astype(np.float32)
    assert_matches_numpy(out, expected)                 # index 3 is out of range: an all-off row
    out = run_both(lambda i: rt.one_hot(i, 4, axis=0, dtype=rt.int32), [rt.constant(indices)], "OneHot")
    assert_matches_numpy(out, np.moveaxis(np.eye(4, dtype=np.int32)[indices], -1, 0))


def check_partitioned_call():
    double = rt.function(lambda x: x * 2.0 + 1.0, autograph=False)
    x = rt.constant([1.0, 2.0])
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert [op.type for op in tape._records] == ["PartitionedCall"]
    assert_matches_numpy(y, np.array([3.0, 5.0], np.float32))
    assert_matches_numpy(tape.gradient(y, x), np.array([2.0, 2.0], np.float32))


def check_native_call():
    # a built function's call under a tape (tests/build/test_native_under_tape.py); its native code stands in here
    # as the executor; the call is eager only: a Function called while tracing is traced into the caller
    double = rt.function(lambda x: x * 2.0 + 1.0, autograph=False)
    concrete = double.get_concrete_function(rt.TensorSpec([2], rt.float32))
    x = rt.constant([1.0, 2.0])
    calls = []

    def run(arrays):
        calls.append(arrays)
        return execute(concrete.graph, arrays)

    with rt.GradientTape() as tape:
        tape.watch(x)
        (y,) = functional_ops.call_native(tape_graph(concrete), [x], run, 1)
    assert [op.type for op in tape._records] == ["NativeCall"] and len(calls) == 1
    assert_matches_numpy(y, np.array([3.0, 5.0], np.float32))
    assert_matches_numpy(tape.gradient(y, x), np.array([2.0, 2.0], np.float32))
    (z,) = functional_ops.call_native(tape_graph(concrete), [x], run, 1)       # no tape: just the call
    assert_matches_numpy(z, np.array([3.0, 5.0], np.float32))


def _list_program(x):
    a = rt.TensorArray(rt.float32, size=2).unstack(x)
    zeros = registry.apply("TensorListZerosLike", [a.flow])
    total = registry.apply("TensorListAdd", [registry.apply("TensorListAdd", [a.flow, a.flow]), zeros])
    return registry.apply("TensorListStack", [total], {"element_dtype": rt.float32,
                                                       "element_shape": rt.TensorShape([3]), "num_elements": 2})


def check_tensor_list_add():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert_matches_numpy(run_both(_list_program, [rt.constant(x)], "TensorListAdd"), 2 * x)


def check_tensor_list_zeros_like():
    fn = lambda x: registry.apply("TensorListStack", [registry.apply(  # noqa: E731
        "TensorListZerosLike", [rt.TensorArray(rt.float32, size=2).unstack(x).flow])],
        {"element_dtype": rt.float32, "element_shape": rt.TensorShape([3]), "num_elements": 2})
    x = np.ones((2, 3), np.float32)
    assert_matches_numpy(run_both(fn, [rt.constant(x)], "TensorListZerosLike"), np.zeros((2, 3), np.float32))


def _conv_reference(x, w, strides, padding):
    """Convolution by its definition: loops over output positions."""
    n, h, width, c = x.shape
    kh, kw, _, f = w.shape
    sh, sw = strides
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-width // sw)
        ph, pw = max((oh - 1) * sh + kh - h, 0), max((ow - 1) * sw + kw - width, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // sh + 1, (width - kw) // sw + 1
    out = np.zeros((n, oh, ow, f), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :].astype(np.float64)
            out[:, i, j, :] = np.tensordot(patch, w.astype(np.float64), axes=([1, 2, 3], [0, 1, 2]))
    return out


_CONV_SHAPES = st.tuples(st.integers(1, 2), st.integers(1, 6), st.integers(1, 6), st.integers(1, 3),
                         st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(1, 3),
                         st.sampled_from(["VALID", "SAME"]))


@RUNTIME_SETTINGS
@given(st.data())
def check_conv2d(data):
    n, h, w, c, kh, kw, f, sh, sw, padding = data.draw(_CONV_SHAPES)
    if padding == "VALID" and (kh > h or kw > w):
        raises_both(lambda x, k: rt.nn.conv2d(x, k, (sh, sw), padding),
                    [rt.constant(np.ones((n, h, w, c), np.float32)), rt.constant(np.ones((kh, kw, c, f), np.float32))],
                    (ValueError, rt.errors.InvalidArgumentError))
        return
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    x = data.draw(arrays(dtype, (n, h, w, c), lo=-2, hi=2))
    k = data.draw(arrays(dtype, (kh, kw, c, f), lo=-2, hi=2))
    out = run_both(lambda x, k: rt.nn.conv2d(x, k, (sh, sw), padding), [rt.constant(x), rt.constant(k)], "Conv2D")
    assert_matches_numpy(out, _conv_reference(x, k, (sh, sw), padding).astype(dtype.np), tol=(1e-4, 1e-4))


def _adjoint_case(op_type):
    """Conv2D's backprop ops are its adjoints: <conv(x, w), dy> = <x, dx(w, dy)> = <w, dw(x, dy)>."""
    def check():
        rng = np.random.default_rng(1)
        for strides, padding in (((1, 1), "VALID"), ((2, 1), "SAME"), ((2, 3), "VALID")):
            x = rng.standard_normal((2, 7, 6, 3))
            w = rng.standard_normal((3, 2, 3, 4))
            attrs = {"strides": strides, "padding": padding}
            y = _conv_reference(x, w, strides, padding)
            dy = rng.standard_normal(y.shape)
            if op_type == "Conv2DBackpropInput":
                fn = lambda w, dy: registry.apply(op_type, [rt.constant([2, 7, 6, 3]), w, dy], attrs)  # noqa: E731
                out = run_both(fn, [rt.constant(w), rt.constant(dy)], op_type, relax=False)
                assert out.shape == x.shape
                assert np.isclose(np.sum(out.numpy() * x), np.sum(y * dy))
            else:
                fn = lambda x, dy: registry.apply(op_type, [x, rt.constant([3, 2, 3, 4]), dy], attrs)  # noqa: E731
                out = run_both(fn, [rt.constant(x), rt.constant(dy)], op_type, relax=False)
                assert out.shape == w.shape
                assert np.isclose(np.sum(out.numpy() * w), np.sum(y * dy))
            bad = rt.constant(np.zeros((1, 1, 1, 4)))
            args = [rt.constant(w), bad] if op_type == "Conv2DBackpropInput" else [rt.constant(x), bad]
            with pytest.raises(rt.errors.InvalidArgumentError, match=op_type):
                fn(*args)
    return check


def _pool_reference(x, k, s, padding):
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph, pw = max((oh - 1) * s[0] + k[0] - h, 0), max((ow - 1) * s[1] + k[1] - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)), constant_values=-np.inf)
    else:
        oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, oh, ow, c), x.dtype)
    first = np.zeros((n, oh, ow, c, 2), np.int64)
    for i in range(oh):
        for j in range(ow):
            window = x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1], :].reshape(n, -1, c)
            out[:, i, j, :] = window.max(axis=1)
            at = window.argmax(axis=1)          # the first maximum, row-major
            first[:, i, j, :, 0] = i * s[0] + at // k[1]
            first[:, i, j, :, 1] = j * s[1] + at % k[1]
    return out, first


@RUNTIME_SETTINGS
@given(st.data())
def check_max_pool(data):
    n, h, w, c, kh, kw, _, sh, sw, padding = data.draw(_CONV_SHAPES)
    if padding == "VALID" and (kh > h or kw > w):
        return
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    x = data.draw(arrays(dtype, (n, h, w, c), lo=-3, hi=3))
    out = run_both(lambda x: rt.nn.max_pool2d(x, (kh, kw), (sh, sw), padding), [rt.constant(x)], "MaxPool")
    assert_matches_numpy(out, _pool_reference(x, (kh, kw), (sh, sw), padding)[0])


def _avg_pool_reference(x, k, s, padding):
    """The mean of each window's real elements, and for each output position the input positions it averages."""
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        top, left = max((oh - 1) * s[0] + k[0] - h, 0) // 2, max((ow - 1) * s[1] + k[1] - w, 0) // 2
    else:
        oh, ow = max((h - k[0]) // s[0] + 1, 0), max((w - k[1]) // s[1] + 1, 0)
        top = left = 0
    out = np.zeros((n, oh, ow, c), x.dtype)
    windows = {}
    for i in range(oh):
        for j in range(ow):
            rows = range(max(i * s[0] - top, 0), min(i * s[0] - top + k[0], h))
            cols = range(max(j * s[1] - left, 0), min(j * s[1] - left + k[1], w))
            windows[i, j] = [(r, q) for r in rows for q in cols]
            out[:, i, j, :] = sum(x[:, r, q, :] for r, q in windows[i, j]) / len(windows[i, j])
    return out, windows


@RUNTIME_SETTINGS
@given(st.data())
def check_avg_pool(data):
    n, h, w, c, kh, kw, _, sh, sw, padding = data.draw(_CONV_SHAPES)
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    x = data.draw(arrays(dtype, (n, h, w, c), lo=-3, hi=3))
    out = run_both(lambda x: rt.nn.avg_pool2d(x, (kh, kw), (sh, sw), padding), [rt.constant(x)], "AvgPool")
    assert_matches_numpy(out, _avg_pool_reference(x, (kh, kw), (sh, sw), padding)[0])


def check_avg_pool_grad():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 6, 2))
    for k, s, padding in (((2, 2), (2, 2), "VALID"), ((3, 2), (1, 2), "SAME"), ((3, 7), (1, 1), "VALID")):
        y, windows = _avg_pool_reference(x, k, s, padding)
        dy = rng.standard_normal(y.shape)
        attrs = {"ksize": k, "strides": s, "padding": padding}
        out = run_both(lambda x, dy: registry.apply("AvgPoolGrad", [x, dy], attrs),
                       [rt.constant(x), rt.constant(dy)], "AvgPoolGrad")
        expected = np.zeros_like(x)
        for (i, j), positions in windows.items():
            for r, q in positions:
                expected[:, r, q, :] += dy[:, i, j, :] / len(positions)
        assert_matches_numpy(out, expected)


def check_max_pool_grad():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (2, 5, 6, 2)).astype(np.float64)      # ties: the first maximum takes the gradient
    for k, s, padding in (((2, 2), (2, 2), "VALID"), ((3, 2), (1, 2), "SAME")):
        y, first = _pool_reference(x, k, s, padding)
        dy = rng.standard_normal(y.shape)
        attrs = {"ksize": k, "strides": s, "padding": padding}
        out = run_both(lambda x, y, dy: registry.apply("MaxPoolGrad", [x, y, dy], attrs),
                       [rt.constant(x), rt.constant(y), rt.constant(dy)], "MaxPoolGrad")
        top = (max((y.shape[1] - 1) * s[0] + k[0] - x.shape[1], 0) // 2) if padding == "SAME" else 0
        left = (max((y.shape[2] - 1) * s[1] + k[1] - x.shape[2], 0) // 2) if padding == "SAME" else 0
        expected = np.zeros_like(x)
        for index in np.ndindex(y.shape):
            b, i, j, ch = index
            expected[b, first[index + (0,)] - top, first[index + (1,)] - left, ch] += dy[index]
        assert_matches_numpy(out, expected)


def check_max_pool_grad_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 4, 2))
    attrs = {"ksize": (3, 2), "strides": (2, 1), "padding": "SAME"}
    y = _pool_reference(x, (3, 2), (2, 1), "SAME")[0]
    ddx = rng.standard_normal(x.shape)
    dy = rng.standard_normal(y.shape)
    out = run_both(lambda x, y, ddx: registry.apply("MaxPoolGradGrad", [x, y, ddx], attrs),
                   [rt.constant(x), rt.constant(y), rt.constant(ddx)], "MaxPoolGradGrad")
    grad = registry.apply("MaxPoolGrad", [rt.constant(x), rt.constant(y), rt.constant(dy)], attrs)
    assert np.isclose(np.sum(out.numpy() * dy), np.sum(grad.numpy() * ddx))     # adjoint of MaxPoolGrad


@RUNTIME_SETTINGS
@given(st.data())
def check_log_softmax(data):
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, lo=-50, hi=50))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    out = run_both(lambda x: rt.nn.log_softmax(x, axis=axis), [rt.constant(x)], "LogSoftmax")
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    assert_matches_numpy(out, (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(dtype.np))


def check_sparse_softmax_cross_entropy():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((4, 5)).astype(np.float32) * 10
    labels = np.array([0, 4, 2, 2], np.int32)
    fn = lambda l, x: rt.nn.sparse_softmax_cross_entropy_with_logits(labels=l, logits=x)  # noqa: E731
    out = run_both(fn, [rt.constant(labels), rt.constant(logits)], "SparseSoftmaxCrossEntropyWithLogits")
    x64 = logits.astype(np.float64)
    log_probs = x64 - x64.max(1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(1, keepdims=True))
    assert_matches_numpy(out, -log_probs[np.arange(4), labels].astype(np.float32))
    raises_both(fn, [rt.constant([0, 5, 1, 1]), rt.constant(logits)], rt.errors.InvalidArgumentError,
                match="outside the valid range")
    with pytest.raises(ValueError, match="labels"):
        fn(rt.constant([0, 1]), rt.constant(logits))


def check_check_labels():
    logits = np.zeros((2, 3, 4), np.float32)
    attrs = {"op": "SparseSoftmaxCrossEntropyWithLogits"}
    fn = lambda l, x: registry.apply("CheckLabels", [l, x], attrs)  # noqa: E731
    labels = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    assert_matches_numpy(run_both(fn, [rt.constant(labels), rt.constant(logits)], "CheckLabels"), labels)
    raises_both(fn, [rt.constant([[0, 4, 1], [2, 2, 0]]), rt.constant(logits)], rt.errors.InvalidArgumentError,
                match=r"SparseSoftmaxCrossEntropyWithLogits: received a label value of 4 .*\[0, 4\)")
    raises_both(fn, [rt.constant([[0, 1], [2, 2]]), rt.constant(logits)], rt.errors.InvalidArgumentError,
                match="SparseSoftmaxCrossEntropyWithLogits: labels of shape", relax=False)


# ---------------------------------------------------------------------------
# Regressions of bugs fixed in the op files (each was found by the checks above).

def test_scalar_results_stay_scalars():
    # np.ascontiguousarray turns 0-d arrays into shape (1,): x[0], transpose(scalar), unstack to scalars
    assert rt.constant([4, 5])[0].shape == ()
    assert rt.transpose(rt.constant(3)).shape == ()
    assert [t.shape for t in rt.unstack(rt.constant([1.0, 2.0]))] == [(), ()]
    assert rt.function(lambda x: x[1], autograph=False)(rt.constant([4, 5])).shape == ()


def test_string_elements_index_to_string_scalars():
    assert rt.constant([["a", "bc"]])[0, 1].numpy() == b"bc"
    assert rt.constant(["a", "bc"])[1].dtype is rt.string


def test_axis_errors_are_trace_time_value_errors():
    for call in (lambda: rt.reduce_sum(rt.constant(1), axis=0), lambda: rt.reduce_mean(rt.constant(1.0), axis=-1),
                 lambda: rt.cumsum(rt.constant(1)), lambda: rt.nn.softmax(rt.constant([1.0]), axis=1),
                 lambda: rt.unstack(rt.constant(1)), lambda: rt.constant([1, 2])[::0]):
        with pytest.raises(ValueError):
            call()


def test_print_default_stream_is_looked_up_when_it_runs():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rt.print("to stderr")
    assert err.getvalue() == "to stderr\n"


def test_error_messages_name_the_op():
    with pytest.raises(TypeError, match="Assert"):
        rt.Assert(rt.constant(1), ["x"])
    with pytest.raises(ValueError, match="RandomUniform"):
        rt.random.uniform([-1])
    with pytest.raises(ValueError, match="RandomStandardNormal"):
        rt.random.normal([-1])


# ---------------------------------------------------------------------------
# The table.

CASES = {case.op_type: case.case() for case in ELEMENTWISE}
CASES.update({
    "SelectV2": check_select,
    "Where": check_where_indices,
    "Cast": check_cast,
    "MatMul": check_matmul,
    **{op_type: reduction_case(op_type) for op_type in REDUCTIONS},
    "ArgMax": arg_case("ArgMax"),
    "ArgMin": arg_case("ArgMin"),
    "Cumsum": check_cumsum,
    "Softmax": check_softmax,
    "Placeholder": check_placeholder,
    "Const": check_const,
    "Identity": check_identity,
    "Shape": check_shape,
    "Size": check_size,
    "Rank": check_rank,
    "Fill": check_fill,
    "ZerosLike": _like_case("ZerosLike", rt.zeros_like, np.zeros_like),
    "OnesLike": _like_case("OnesLike", rt.ones_like, np.ones_like),
    "Eye": check_eye,
    "Range": check_range,
    "LinSpace": check_linspace,
    "Reshape": check_reshape,
    "Transpose": check_transpose,
    "ConcatV2": check_concat,
    "Pack": check_pack,
    "Unpack": check_unpack,
    "ExpandDims": check_expand_dims,
    "Squeeze": check_squeeze,
    "Tile": check_tile,
    "GatherV2": check_gather,
    "PadV2": check_pad,
    "MirrorPad": check_mirror_pad,
    "PadGrad": check_pad_grad,
    "StridedSlice": check_strided_slice,
    "RandomUniform": check_random_uniform,
    "RandomStandardNormal": check_random_normal,
    "PrintV2": check_print,
    "Assert": check_assert,
    "CheckNumerics": check_check_numerics,
    "If": check_if,
    "While": check_while,
    "ReadVariableOp": check_read_variable,
    "AssignVariableOp": _assign_case("AssignVariableOp", "assign", lambda old, new: new),
    "AssignAddVariableOp": _assign_case("AssignAddVariableOp", "assign_add", lambda old, new: old + new),
    "AssignSubVariableOp": _assign_case("AssignSubVariableOp", "assign_sub", lambda old, new: old - new),
    "TensorListReserve": check_tensor_list_reserve,
    "TensorListSetItem": check_tensor_list_set_item,
    "TensorListGetItem": check_tensor_list_get_item,
    "TensorListStack": check_tensor_list_stack,
    "TensorListFromTensor": check_tensor_list_from_tensor,
    "TensorListLength": check_tensor_list_length,
    "BroadcastTo": check_broadcast_to,
    "SumToShape": check_sum_to_shape,
    "UnsortedSegmentSum": check_unsorted_segment_sum,
    "StridedSliceGrad": check_strided_slice_grad,
    "StopGradient": check_stop_gradient,
    "OneHot": check_one_hot,
    "PartitionedCall": check_partitioned_call,
    "NativeCall": check_native_call,
    "TensorListAdd": check_tensor_list_add,
    "TensorListZerosLike": check_tensor_list_zeros_like,
    "Conv2D": check_conv2d,
    "Conv2DBackpropInput": _adjoint_case("Conv2DBackpropInput"),
    "Conv2DBackpropFilter": _adjoint_case("Conv2DBackpropFilter"),
    "MaxPool": check_max_pool,
    "MaxPoolGrad": check_max_pool_grad,
    "MaxPoolGradGrad": check_max_pool_grad_grad,
    "AvgPool": check_avg_pool,
    "AvgPoolGrad": check_avg_pool_grad,
    "LogSoftmax": check_log_softmax,
    "SparseSoftmaxCrossEntropyWithLogits": check_sparse_softmax_cross_entropy,
    "CheckLabels": check_check_labels,
})


CASES.update(LIBRARY_CASES)       # random, sorting, linear algebra, index tuples, complex numbers

CASES.update({
    "EagerPyFunc": check_eager_py_func,
    "PyFunc": check_py_func,
    "PyFuncStateless": check_py_func_stateless,
    "ShuffleIndices": check_shuffle_indices,
    "GeneratorInit": check_generator_ops,
    "GeneratorNext": check_generator_ops,
    "IteratorGetNext": check_iterator_get_next,
})


def test_every_registered_op_has_a_case():
    missing = sorted(set(registry.all_opdefs()) - set(CASES))
    assert not missing, (f"ops registered without a case in {__file__}'s CASES table: {missing}; "
                         "add a check for each (eager vs numpy, graph vs eager)")
    stale = sorted(set(CASES) - set(registry.all_opdefs()))
    assert not stale, f"CASES has entries for ops that are not registered: {stale}"


def test_every_opdef_is_well_formed():
    for op_type, opdef in registry.all_opdefs().items():
        assert opdef.type == op_type
        assert opdef.default_name
        assert opdef.kernel is not None or op_type == "Placeholder", op_type
        if opdef.side_effect:
            assert opdef.stateful, f"{op_type}: side effects must be ordered (stateful)"
        if opdef.c_expr is not None:
            assert opdef.num_inputs is not None, op_type


@pytest.mark.parametrize("op_type", sorted(registry.all_opdefs()))
def test_op(op_type):
    if op_type not in CASES:
        pytest.fail(f"no case for registered op {op_type}")
    CASES[op_type]()
