"""Loop variables of tensor loops: their shapes are checked at trace time (as TensorFlow does), and
variables first assigned inside a loop work when the loop runs."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def test_loop_variable_whose_shape_becomes_unknown_is_a_trace_time_error():
    @rt.function
    def shrink_forever(x):
        while rt.constant(True):
            x = x[:rt.size(x) - 1]      # (3,) -> (None,): would run forever with a wrong static shape
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(3,\) before the loop, but shape \(None,\) after one"):
        shrink_forever.get_concrete_function(rt.TensorSpec([3], rt.float32))


def test_loop_variable_whose_shape_grows_is_a_trace_time_error():
    @rt.function
    def grow(x):
        while rt.constant(True):
            x = rt.concat([x, x], 0)
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(1,\) before the loop, but shape \(2,\)"):
        grow.get_concrete_function(rt.TensorSpec([1], rt.float32))


def test_violated_shape_invariant_is_a_trace_time_error():
    @rt.function
    def f(x, n):
        for _ in rt.range(n):
            rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([2]))])
            x = rt.concat([x, x], 0)
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(1,\) before the loop, which does not conform with "
                                         r"its shape invariant \(2,\)"):
        f(rt.constant([1.0]), rt.constant(3))

    @rt.function
    def g(x, n):
        for _ in rt.range(n):
            rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([None]))])
            x = rt.reshape(rt.concat([x, x], 0), [-1, 1])
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(None, 1\) after one iteration, which does not conform "
                                         r"to its shape invariant \(None,\)"):
        g(rt.constant([1.0]), rt.constant(3))


def test_a_declared_invariant_lets_the_shape_vary():
    @rt.function
    def f(x, n):
        for _ in rt.range(n):
            rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([None]))])
            x = rt.concat([x, x], 0)
        return x
    assert f(rt.constant([1.0]), rt.constant(3)).shape == (8,)


def test_variable_first_created_in_a_loop_with_a_dynamic_shape():
    def f(n):
        for i in rt.range(n):
            y = rt.fill([i + 1], 2)
        return y
    np.testing.assert_array_equal(rt.function(f)(rt.constant(3)).numpy(), f(rt.constant(3)).numpy())
    with pytest.raises(rt.errors.InvalidArgumentError, match="loop must iterate at least once to initialize 'y'"):
        rt.function(f)(rt.constant(0))


def test_variable_first_created_in_a_loop_as_a_tuple():
    def f(n):
        i = rt.constant(0)
        while i < n:
            pair = (i * 2, rt.cast(i, rt.float32) / 2.0)
            i += 1
        return pair
    python, traced = f(rt.constant(4)), rt.function(f)(rt.constant(4))
    assert [float(v) for v in python] == [float(v) for v in traced]


def test_loop_errors_say_what_tensorflow_says():
    """In TensorFlow's words (its AutoGraph reference tests check them), naming the variable."""
    def invariant_violated():
        t = rt.constant([1])
        while rt.constant(True):
            rt.autograph.experimental.set_loop_options(shape_invariants=((t, rt.TensorShape([1])),))
            t = rt.range(rt.random.uniform((), 2, 3, dtype=rt.int32))
        return t

    def dtype_changes():
        n = rt.constant(0, dtype=rt.int32)
        while rt.constant(True):
            n = rt.constant(0, dtype=rt.float32)
        return n

    def structure_changes():
        s = {"a": rt.constant(0)}
        while rt.constant(True):
            s = rt.constant(7.0)
        return s
    with pytest.raises(ValueError, match=r"'t' has shape \(None,\) after one iteration, which does not conform "
                                         r"to its shape invariant \(1,\)"):
        rt.function(invariant_violated)()
    with pytest.raises(TypeError, match="'n' has dtype int32 before the loop, but dtype float32 after one iteration"):
        rt.function(dtype_changes)()
    with pytest.raises(TypeError, match=r"'s' does not have the same nested structure after one iteration: "
                                        r"\{'a': a tensor\} before the loop, a tensor after"):
        rt.function(structure_changes)()
