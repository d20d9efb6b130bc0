"""Hypothesis: random elementwise/reduction/loop graphs give bit-identical results after every pass."""
from __future__ import annotations

import warnings

import numpy as np
from conftest import OPTIMIZER_SETTINGS, apply_pass, assert_same_results
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from runtime import context
from runtime.graph import Graph
from runtime.optimizer import PASSES, optimize

SHAPES = {"x": (3, 4), "y": (4,), "s": ()}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5]

UNARY_FLOAT = [rt.negative, rt.tanh, rt.abs, rt.identity, rt.exp, rt.sin, rt.square,
               lambda t: rt.cast(t, t.dtype), lambda t: rt.negative(rt.negative(t))]
UNARY_INT = [rt.negative, rt.abs, rt.identity, rt.square, lambda t: rt.cast(t, t.dtype),
             lambda t: rt.negative(rt.negative(t))]
BINARY_FLOAT = [rt.add, rt.subtract, rt.multiply, rt.maximum, rt.minimum, rt.truediv]
BINARY_INT = [rt.add, rt.subtract, rt.multiply, rt.maximum, rt.minimum]
REDUCTIONS = [rt.reduce_sum, rt.reduce_max, rt.reduce_min, rt.reduce_mean]


def _constant(data, dtype):
    shape = data.draw(st.sampled_from([(), (4,), (1, 4), (1,)]))
    value = data.draw(st.sampled_from(SPECIAL))
    if dtype is rt.int32:
        value = int(value)
    return rt.constant(np.full(shape, value, dtype.np), dtype)


def _apply(f, a, b):
    """``f(a, b)``, with ``b`` summed to a scalar when the two shapes do not broadcast."""
    try:
        np.broadcast_shapes(a.shape.dims, b.shape.dims)
    except ValueError:
        b = rt.reduce_sum(b)
    return f(a, b)


def _expression(data, dtype, pool):
    """Append one random op over ``pool`` tensors (or a fresh constant) to the graph being built."""
    unary, binary = (UNARY_INT, BINARY_INT) if dtype is rt.int32 else (UNARY_FLOAT, BINARY_FLOAT)
    kind = data.draw(st.sampled_from(["unary", "binary", "constant", "constant", "reduce", "repeat",
                                             "folded"]))
    pick = st.sampled_from(pool)
    if kind == "unary":
        return data.draw(st.sampled_from(unary))(data.draw(pick))
    if kind == "binary":
        return _apply(data.draw(st.sampled_from(binary)), data.draw(pick), data.draw(pick))
    if kind == "constant":
        c = _constant(data, dtype)
        a = data.draw(pick)
        f = data.draw(st.sampled_from(binary))
        return _apply(f, c, a) if data.draw(st.booleans()) else _apply(f, a, c)
    if kind == "folded":  # an expression of constants only: food for constant folding
        c = data.draw(st.sampled_from(unary))(data.draw(st.sampled_from(binary))(_constant(data, dtype),
                                                                                 _constant(data, dtype)))
        return _apply(data.draw(st.sampled_from(binary)), data.draw(pick), c)
    if kind == "repeat":  # the same expression twice: food for CSE
        f = data.draw(st.sampled_from(binary))
        a, b = data.draw(pick), data.draw(pick)
        return rt.add(_apply(f, a, b), _apply(f, a, b))
    t = data.draw(pick)
    axis = data.draw(st.sampled_from([None, 0, -1])) if t.shape.rank else None
    return data.draw(st.sampled_from(REDUCTIONS))(t, axis=axis, keepdims=data.draw(st.booleans()))


def _loop(data, dtype, pool):
    """A while loop whose body mixes loop-carried and invariant (hoistable) expressions."""
    start = data.draw(st.sampled_from(pool))
    n = data.draw(st.integers(0, 3))

    def body(i, acc):
        inner = list(pool)
        for _ in range(data.draw(st.integers(1, 3))):
            inner.append(_expression(data, dtype, inner))
        step = data.draw(st.sampled_from(inner[len(pool):]))
        if step.shape.dims != acc.shape.dims:
            step = rt.reduce_sum(step)  # a scalar: acc keeps its shape
        return i + 1, acc + step

    _, out = rt.while_loop(lambda i, acc: i < n, body, (rt.constant(0), start))
    return out


def build_graph(data, dtype) -> Graph:
    graph = Graph("random")
    with context.graph_scope(graph):
        pool = [graph.add_placeholder(name, dtype, shape) for name, shape in SHAPES.items()]
        for _ in range(data.draw(st.integers(1, 10), label="ops")):
            if data.draw(st.integers(0, 7)) == 0:
                pool.append(_loop(data, dtype, pool))
            else:
                pool.append(_expression(data, dtype, pool))
        outs = data.draw(st.lists(st.sampled_from(pool[3:]), min_size=1, max_size=3))
        graph.outputs = [rt.identity(t) for t in outs]
    graph.verify()
    graph.finalized = True
    return graph


def _feeds(data, dtype):
    if dtype is rt.int32:
        elements = st.integers(-50, 50)
    else:
        elements = st.one_of(st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan]),
                             st.floats(-4, 4, width=32))
    return [data.draw(hnp.arrays(dtype.np, shape, elements=elements)) for shape in SHAPES.values()]


@OPTIMIZER_SETTINGS
@given(st.data(), st.sampled_from([rt.float32, rt.int32]))
def test_every_pass_keeps_random_graph_results(data, dtype):
    graph = build_graph(data, dtype)
    feeds = [_feeds(data, dtype) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _name, pass_fn in PASSES:
            after, _ = apply_pass(graph, pass_fn)
            assert_same_results(graph, after, feeds)
        optimized = optimize(graph)
        optimized.verify()
        assert_same_results(graph, optimized, feeds)
