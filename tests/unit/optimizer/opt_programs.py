"""Small ``rt.function``s the optimizer tests trace, each with its signature and a feed maker."""
from __future__ import annotations

import numpy as np

import runtime as rt

counter = rt.Variable(0.0)


@rt.function
def arithmetic(x):
    y = x * 1.0 + 0.0          # x+0.0 stays (signed zero), x*1 goes
    z = -(-y) - 0.0  # noqa: B002 - double negation on purpose
    w = rt.cast(z, rt.float32) / 1.0
    return rt.identity(rt.identity(w)) * (rt.constant(2.0) + 3.0)


@rt.function
def common(x, y):
    a = rt.tanh(x * y + 1.0)
    b = rt.tanh(x * y + 1.0)
    c = rt.reduce_sum(a * b, axis=0)
    d = rt.reduce_sum(a * b, axis=0)
    unused = rt.exp(x) * 100.0  # noqa: F841 - dead code for pruning
    return c + d, rt.maximum(a, b)


@rt.function
def folding(x):
    table = rt.reshape(rt.range(0, 12), [3, 4])
    scale = rt.reduce_sum(rt.cast(table, rt.float32)) / 66.0
    shape = rt.shape(x)                      # static: folds
    ones = rt.ones([3], rt.float32) * scale
    big = rt.zeros([400, 400], rt.float32)   # over the folding limit: stays computed
    return x * ones + rt.cast(rt.size(x), rt.float32), shape, rt.reduce_sum(big)


@rt.function
def loop(x, n):
    s = x * 1.0
    i = 0
    while i < n:
        k = rt.cast(n, rt.float32) * 2.0 + 1.0      # invariant: hoisted
        s = s + x * k - rt.sin(x)                   # x*k and sin(x) hoisted
        i += 1
    return s


@rt.function
def nested(x, n):
    total = rt.zeros_like(x)
    i = 0
    while i < n:
        j = 0
        while j < n:
            total = total + rt.exp(x) * 0.5          # invariant in both loops
            j += 1
        if i > 1:
            total = total + x * x
        else:
            total = total - 1.0 * x
        i += 1
    return total


@rt.function
def stateful(x, n):
    i = 0
    while i < n:
        counter.assign_add(1.0)
        x = x + counter.read_value() * 0.0
        i += 1
    r1 = rt.random.uniform([3], seed=1)
    r2 = rt.random.uniform([3], seed=1)
    rt.print("x is", x)
    return x + 1.0, r1 - r2 + 100.0


@rt.function
def integers(a, b):
    q = a // b + 0
    m = a % b
    p = rt.pow(a, rt.constant(2)) * 1
    c = 0 + a
    i = 0
    while i < 3:
        c = c + (b // 2) + (a - 0)                  # b // 2 may divide by zero: not hoisted
        i += 1
    return q, m, p, c


@rt.function
def logic(x):
    t = rt.logical_not(rt.logical_not(x > 0.0))
    return rt.where(t, x, -x), rt.reduce_any(t)


def _floats(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# (name, function, input specs, feeds(rng) -> list of numpy arrays)
CASES = [
    ("arithmetic", arithmetic, [rt.TensorSpec([None], rt.float32)], lambda r: [_floats(r, 5)]),
    ("common", common, [rt.TensorSpec([3, 4], rt.float32)] * 2, lambda r: [_floats(r, (3, 4)), _floats(r, (3, 4))]),
    ("folding", folding, [rt.TensorSpec([3], rt.float32)], lambda r: [_floats(r, 3)]),
    ("loop", loop, [rt.TensorSpec([None], rt.float32), rt.TensorSpec([], rt.int32)],
     lambda r: [_floats(r, 4), np.int32(r.integers(0, 4))]),
    ("nested", nested, [rt.TensorSpec([2], rt.float32), rt.TensorSpec([], rt.int32)],
     lambda r: [_floats(r, 2), np.int32(r.integers(0, 4))]),
    ("stateful", stateful, [rt.TensorSpec([3], rt.float32), rt.TensorSpec([], rt.int32)],
     lambda r: [_floats(r, 3), np.int32(r.integers(0, 3))]),
    ("integers", integers, [rt.TensorSpec([4], rt.int32), rt.TensorSpec([4], rt.int32)],
     lambda r: [r.integers(-9, 9, 4).astype(np.int32), r.integers(1, 5, 4).astype(np.int32)]),
    ("logic", logic, [rt.TensorSpec([None], rt.float32)], lambda r: [_floats(r, 6)]),
]


def graph_of(case):
    _, function, specs, _ = case
    return function.get_concrete_function(*specs).graph
