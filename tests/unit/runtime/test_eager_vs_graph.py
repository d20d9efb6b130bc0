"""Eager vs traced equivalence: small programs run eagerly, traced (exact shapes and ``None`` dims),
on the reference executor, and with ``run_functions_eagerly``; all results must be identical.

Programs use no Python control flow on tensors (``rt.cond`` / ``rt.while_loop`` explicitly), so
they do not depend on source conversion (``autograph=False``).
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_test_helpers import RUNTIME_SETTINGS, arrays, assert_equivalent, assert_identical

import runtime as rt
from runtime import nest
from runtime.executor import run_graph
from runtime.tensor import EagerTensor


def _f32(*shape, seed=0):
    return rt.constant(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _i32(values):
    return rt.constant(np.asarray(values, np.int32))


def relu_twice(x):
    return rt.nn.relu(x) + rt.maximum(0., x)


def collatz(x):
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)


def softmax_xent(logits, labels):
    p = rt.nn.softmax(logits)
    picked = rt.gather(rt.reshape(p, [-1]), rt.range(rt.shape(p)[0]) * rt.shape(p)[1] + labels)
    return -rt.reduce_mean(rt.log(picked))


def dense(x, w, b):
    return rt.tanh(rt.matmul(x, w) + b)


def normalize(x):
    mean = rt.reduce_mean(x, axis=0, keepdims=True)
    centered = x - mean
    std = rt.sqrt(rt.reduce_mean(centered * centered, axis=0, keepdims=True) + 1e-6)
    return centered / std


def fused_chain(x):
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - x


def power(x, n):
    return rt.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, rt.matmul(acc, x)),
                         (rt.constant(1), x))[1]


def fib(n):
    return rt.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, b, a + b),
                         (rt.constant(0), rt.constant(0, rt.int64), rt.constant(1, rt.int64)))[1]


def simple_relu(x):
    return rt.cond(rt.greater(x, 0), lambda: x, lambda: rt.zeros_like(x))


def piecewise(x):
    return rt.cond(x < 0, lambda: -x, lambda: rt.cond(x < 10, lambda: x * x, lambda: x + 100))


def count_positive(x):
    def body(i, count):
        return i + 1, count + rt.cast(x[i] > 0, rt.int32)
    return rt.while_loop(lambda i, c: i < rt.size(x), body, (rt.constant(0), rt.constant(0)))[1]


def prefix_sums(x):
    ta = rt.TensorArray(x.dtype, size=rt.size(x))

    def body(i, acc, ta):
        acc = acc + x[i]
        return i + 1, acc, ta.write(i, acc)
    _, _, ta = rt.while_loop(lambda i, acc, ta: i < rt.size(x), body,
                             (rt.constant(0), rt.zeros([], x.dtype), ta))
    return ta.stack()


def shapes_and_slices(x):
    n = rt.shape(x)[0]
    head = x[:n // 2]
    tail = x[n // 2:]
    return rt.concat([tail, head], 0), rt.size(head), x[::-1], x[..., 0]


def stack_unstack(x):
    rows = rt.unstack(x, num=3)
    return rt.stack([rows[2], rows[0], rows[1]], axis=1)


def reductions(x):
    return (rt.reduce_sum(x), rt.reduce_max(x, axis=1), rt.reduce_min(x, axis=0, keepdims=True),
            rt.reduce_prod(x[:, :2], axis=-1), rt.argmax(x, axis=1), rt.argmin(x, axis=0),
            rt.reduce_any(x > 1.0), rt.reduce_all(x > -10.0), rt.cumsum(x, axis=1, reverse=True))


def integer_math(a, b):
    return a // b, a % b, a * b - a, rt.abs(a), rt.sign(b), a / b, rt.pow(rt.abs(a), 2)


def comparisons(a, b):
    return rt.logical_and(a > b, rt.logical_not(a == b)), rt.logical_or(a <= b, a != b), rt.logical_xor(a < b, a >= b)


def creation(x):
    return (rt.zeros_like(x), rt.ones_like(x, dtype=rt.int32), rt.fill([2], x[0]), rt.eye(3),
            rt.range(1, 10, 2), rt.linspace(0.0, 1.0, 5), rt.tile(x[:1], [3]),
            rt.expand_dims(x, 0), rt.squeeze(rt.reshape(x, [1, -1, 1]), [0, 2]), rt.transpose(rt.reshape(x, [2, -1])))


def casts(x):
    return (rt.cast(x, rt.int32), rt.cast(x, rt.float16), rt.cast(x > 0, rt.float64),
            rt.cast(rt.cast(x, rt.uint8), rt.int64))


def python_values(x, scale=3, offset=0.5):
    return x * scale + rt.cast(offset, x.dtype) if x.dtype.is_floating else x * scale


def nested_structures(inputs):
    return {"sum": inputs["a"] + inputs["b"][0], "prod": inputs["a"] * inputs["b"][1], "list": [inputs["a"]]}


def variables_program(x):
    v = _STATE["v"]
    v.assign_add(x)
    before = v.read_value()
    v.assign(v * 2)
    return before, v.read_value()


def string_program(s):
    return s + "!", rt.equal(s, rt.constant("ab")), rt.constant(["x", "y"])[1] + s


def print_and_assert(x):
    rt.print("x:", x)
    rt.debugging.assert_greater(x, 0.0, message="positive")
    checked = rt.debugging.check_numerics(x, "finite")
    return checked * 2


def where_indices(x):
    return rt.where(x > 0), rt.where(x > 0, x, -x)


def gather_axes(params, idx):
    return rt.gather(params, idx), rt.gather(params, idx, axis=1), rt.gather(params, rt.reshape(idx, [1, -1]))


def while_with_cond_and_captures(x, limit):
    scale = rt.reduce_sum(x)

    def body(i, acc):
        acc = rt.cond(i % 3 == 0, lambda: acc + scale, lambda: acc * 0.5)
        return i + 1, acc
    return rt.while_loop(lambda i, acc: i < limit, body, (rt.constant(0), rt.constant(0.0)))


def empty_tensors(x):
    return rt.reduce_sum(x, axis=0), rt.concat([x, x], 0), rt.shape(x), x * 2.0


def int_edges(a, b):
    # INT_MIN // -1 and INT_MIN % -1 trap in C; they must wrap like numpy, never crash
    return a // b, a % b, -a, rt.abs(a), a * b


def _int_edge_args(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, info.max, -7, 7] * 40, dtype)
    b = np.array([-1, 1, -1, 2, -2] * 40, dtype)
    return lambda: [rt.constant(a), rt.constant(b)]


def large_chain(x, y):
    # big enough for the parallel (OpenMP) loops of compiled kernels
    return rt.reduce_sum(rt.tanh(x * 1.5 + 0.5) * 2.0 - x, axis=0), rt.matmul(y, y, transpose_b=True)


_STATE: dict = {}

PROGRAMS = {
    "relu_twice": (relu_twice, lambda: [_f32(5)]),
    "collatz": (collatz, lambda: [_i32([1, 2, 3, 4, 27])]),
    "softmax_xent": (softmax_xent, lambda: [_f32(4, 3), _i32([0, 2, 1, 1])]),
    "dense": (dense, lambda: [_f32(2, 3), _f32(3, 4, seed=1), _f32(4, seed=2)]),
    "normalize": (normalize, lambda: [_f32(6, 2)]),
    "fused_chain": (fused_chain, lambda: [_f32(100)]),
    "power": (power, lambda: [_i32(np.arange(9).reshape(3, 3) % 3), rt.constant(5)]),
    "fib": (fib, lambda: [rt.constant(50)]),
    "simple_relu_pos": (simple_relu, lambda: [rt.constant(3.0)]),
    "simple_relu_neg": (simple_relu, lambda: [rt.constant(-3.0)]),
    "piecewise": (piecewise, lambda: [rt.constant(7)]),
    "piecewise_big": (piecewise, lambda: [rt.constant(70)]),
    "count_positive": (count_positive, lambda: [_f32(10)]),
    "prefix_sums": (prefix_sums, lambda: [_i32([3, 1, 4, 1, 5])]),
    "shapes_and_slices": (shapes_and_slices, lambda: [_f32(5, 2)]),
    "stack_unstack": (stack_unstack, lambda: [_f32(3, 2)]),
    "reductions": (reductions, lambda: [_f32(3, 4)]),
    "integer_math": (integer_math, lambda: [_i32([-7, 7, -8, 9]), _i32([2, -2, 3, 4])]),
    "comparisons": (comparisons, lambda: [_f32(6), _f32(6, seed=3)]),
    "creation": (creation, lambda: [_f32(4)]),
    "casts": (casts, lambda: [rt.constant([-1.5, 0.0, 2.7, 200.0])]),
    "python_values_float": (python_values, lambda: [_f32(3)]),
    "python_values_int": (python_values, lambda: [_i32([1, 2])]),
    "strings": (string_program, lambda: [rt.constant("ab")]),
    "where_indices": (where_indices, lambda: [_f32(2, 3)]),
    "gather_axes": (gather_axes, lambda: [_f32(3, 3), _i32([2, 0])]),
    "while_cond_captures": (while_with_cond_and_captures, lambda: [_f32(3), rt.constant(7)]),
    "empty": (empty_tensors, lambda: [rt.constant(np.zeros((0, 2), np.float32))]),
    "float16": (fused_chain, lambda: [rt.constant(np.linspace(-3, 3, 7).astype(np.float16))]),
    "float64": (normalize, lambda: [rt.constant(np.arange(8.0).reshape(4, 2))]),
    **{f"int_edges_{d.__name__}": (int_edges, _int_edge_args(d)) for d in (np.int8, np.int16, np.int32, np.int64)},
    "int_edges_scalar": (int_edges, lambda: [rt.constant(np.iinfo(np.int32).min), rt.constant(-1)]),
    "large": (large_chain, lambda: [_f32(50_000, 4), _f32(64, 64, seed=1)]),
    "large_int_matmul": (lambda a: rt.matmul(a, a), lambda: [_i32(np.arange(64 * 64).reshape(64, 64) % 7 - 3)]),
}


def _trace_modes(fn, args):
    """Results of fn(*args): traced with exact shapes, with None dims, and on the reference executor.

    Returns {mode: (result, exact)}: the reference executor must match eager code bit for bit.
    """
    f = rt.function(fn, autograph=False)
    results = {"traced": (f(*args), False)}
    concrete = f.get_concrete_function(*args)
    concrete.graph.verify()
    flat = [a._value for a in nest.flatten(list(args)) if isinstance(a, EagerTensor)]
    reference = run_graph(concrete.graph, flat + [])
    results["reference"] = (concrete._pack(reference), True)
    if all(isinstance(a, EagerTensor) for a in args):
        specs = [rt.TensorSpec([None] * a.ndim, a.dtype) for a in args]
        relaxed = rt.function(fn, input_signature=specs, autograph=False)
        relaxed.get_concrete_function().graph.verify()
        results["relaxed"] = (relaxed(*args), False)
    return results


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program(name):
    fn, make_args = PROGRAMS[name][:2]
    with contextlib.redirect_stderr(io.StringIO()):
        eager = fn(*make_args())
        for mode, (result, exact) in _trace_modes(fn, make_args()).items():
            (assert_identical if exact else assert_equivalent)(eager, result)
        rt.config.run_functions_eagerly(True)
        try:
            assert_identical(eager, rt.function(fn, autograph=False)(*make_args()))
        finally:
            rt.config.run_functions_eagerly(False)


def test_nested_structures():
    args = lambda: {"a": _f32(2), "b": (_f32(2, seed=1), rt.constant(2.0))}  # noqa: E731
    eager = nested_structures(args())
    traced = rt.function(nested_structures, autograph=False)(args())
    assert_equivalent(eager, traced)
    assert set(traced) == {"sum", "prod", "list"} and isinstance(traced["list"], list)


def test_variables_program():
    results = []
    for mode in ("eager", "traced"):
        _STATE["v"] = rt.Variable([1.0, 2.0])
        fn = variables_program if mode == "eager" else rt.function(variables_program, autograph=False)
        first = fn(rt.constant([1.0, 1.0]))
        second = fn(rt.constant([1.0, 1.0]))
        results.append((first, second, _STATE["v"].read_value()))
    assert_equivalent(results[0], results[1])
    assert results[1][2].numpy().tolist() == [10.0, 14.0]


def test_print_and_assert_program():
    fn = rt.function(print_and_assert, autograph=False)
    for runner in (print_and_assert, fn):
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            out = runner(rt.constant([1.0, 2.0]))
        assert buf.getvalue() == "x: [1. 2.]\n"
        assert out.numpy().tolist() == [2.0, 4.0]
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(rt.errors.InvalidArgumentError, match="positive"):
            runner(rt.constant([1.0, -2.0]))
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(rt.errors.InvalidArgumentError, match="finite"):
            runner(rt.constant([1.0, np.inf]))


def test_same_function_many_signatures():
    f = rt.function(fused_chain, autograph=False)
    for dtype in (np.float16, np.float32, np.float64):
        for shape in ((), (3,), (2, 2)):
            x = rt.constant(np.linspace(-2, 2, int(np.prod(shape))).reshape(shape).astype(dtype))
            assert_equivalent(fused_chain(x), f(x))
    assert f.experimental_get_tracing_count() == 9


@RUNTIME_SETTINGS
@given(st.data())
def test_random_elementwise_chains(data):
    """A random chain of elementwise ops, eager vs traced (the shape of fusion-friendly graphs)."""
    dtype = data.draw(st.sampled_from([rt.float32, rt.float64]))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
    x = rt.constant(data.draw(arrays(dtype, shape, lo=-3, hi=3)))
    y = rt.constant(data.draw(arrays(dtype, shape[-1:] if shape else (), lo=0.5, hi=3)))
    steps = data.draw(st.lists(st.sampled_from(["add", "mul", "sub", "div", "tanh", "relu", "sigmoid", "neg",
                                                "square", "max", "min", "exp_clip", "abs", "where"]),
                               min_size=1, max_size=8))

    def chain(x, y):
        v = x
        for step in steps:
            if step == "add":
                v = v + y
            elif step == "mul":
                v = v * 1.5
            elif step == "sub":
                v = 0.25 - v
            elif step == "div":
                v = v / y
            elif step == "tanh":
                v = rt.tanh(v)
            elif step == "relu":
                v = rt.nn.relu(v)
            elif step == "sigmoid":
                v = rt.sigmoid(v)
            elif step == "neg":
                v = -v
            elif step == "square":
                v = rt.square(v)
            elif step == "max":
                v = rt.maximum(v, y)
            elif step == "min":
                v = rt.minimum(v, 0.5)
            elif step == "exp_clip":
                v = rt.exp(rt.clip_by_value(v, -5.0, 5.0))
            elif step == "abs":
                v = abs(v)
            else:
                v = rt.where(v > 0, v, y)
        return v
    eager = chain(x, y)
    for result, exact in _trace_modes(chain, [x, y]).values():
        if exact:
            assert_identical(eager, result)
        else:
            assert_equivalent(eager, result, ulps=64)
