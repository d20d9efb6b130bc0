"""Python constructs in converted code that the behaviour suite found missing: print at trace time,
chained comparisons, `in` on tensors, `del` in both branches, rt.name_scope and rt.newaxis."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def test_print_of_a_tensor_prints_the_symbolic_tensor_while_tracing(capsys):
    @rt.function
    def f(x):
        print("Tracing with", x)
        for i in rt.range(2):
            print("in loop", i.shape)
            last = i
        if x[0] > 0:
            print("branch", x)
        return x + rt.cast(last, rt.float32)
    f(rt.constant([1.0]))
    f(rt.constant([2.0]))                      # same signature: no trace, no print
    out = capsys.readouterr().out.splitlines()
    assert out == ['Tracing with Tensor("x:0", shape=(1,), dtype=float32)', "in loop ()",
                   'branch Tensor("x:0", shape=(1,), dtype=float32)']


def test_chained_comparisons_on_tensors():
    def eq3(a, b, c):
        return a == b == c

    def between(a, b, c):
        if a < b <= c:
            return 1
        return 0
    for args in [(1, 1, 1), (1, 1, 2), (2, 1, 1), (1, 2, 3), (3, 2, 1), (1, 2, 2)]:
        tensors = [rt.constant(v) for v in args]
        assert bool(rt.function(eq3)(*tensors)) == bool(eq3(*tensors))
        assert int(rt.function(between)(*tensors)) == between(*tensors)


def test_chained_comparison_evaluates_each_operand_once_and_stops_early():
    calls = []

    def middle(v):
        calls.append(v)
        return v

    def f(x):
        return 0 < middle(x) < 10 < middle(100)
    assert f(5) is True and calls == [5, 100]
    calls.clear()
    assert not bool(rt.function(f)(-1)) and calls == [-1]      # Python values: plain Python, short-circuits
    calls.clear()
    traced = rt.function(f)
    assert bool(traced(rt.constant(5))) and len(calls) == 2 and calls[1] == 100    # traced once
    assert not bool(traced(rt.constant(-1))) and len(calls) == 2


def test_in_on_a_symbolic_tensor():
    def f(x, y):
        return 2 in x, y in x, y not in (1, 3)
    x, y = rt.constant([1, 2, 3]), rt.constant(4)
    assert [bool(v) for v in rt.function(f)(x, y)] == [bool(v) for v in f(x, y)] == [True, False, True]

    def g(x):
        if 5 in x:
            return x * 2
        return x
    np.testing.assert_array_equal(rt.function(g)(rt.constant([1, 5])).numpy(), [2, 10])
    np.testing.assert_array_equal(rt.function(g)(rt.constant([1, 4])).numpy(), [1, 4])


def test_del_in_both_branches():
    def f(x):
        y = x * 2
        if x > 0:
            del y
        else:
            del y
        return x
    assert int(rt.function(f)(rt.constant(3))) == 3

    def g(x):
        y = 1
        if x > 0:
            del y
        else:
            del y
        return y
    with pytest.raises(UnboundLocalError, match="'y'"):
        rt.function(g)(rt.constant(3))


def test_name_scope_prefixes_op_names():
    @rt.function
    def f(x):
        with rt.name_scope("layer1") as scope:
            y = x * 2.0
            with rt.name_scope("inner"):
                z = y + 1.0
        assert scope == "layer1/"
        return z
    graph = f.get_concrete_function(rt.TensorSpec([None], rt.float32)).graph
    names = [op.name for op in graph.get_operations()]
    assert "layer1/mul" in names and "layer1/inner/add" in names
    np.testing.assert_array_equal(f(rt.constant([1.0])).numpy(), [3.0])
    with rt.name_scope("eager") as scope:                          # eagerly: only names itself
        assert scope == "eager/" and float(rt.constant(1.0) + 1.0) == 2.0


def test_newaxis():
    def f(x):
        return x[:, rt.newaxis] * x[rt.newaxis, :]
    x = rt.constant([1, 2, 3])
    np.testing.assert_array_equal(rt.function(f)(x).numpy(), np.outer([1, 2, 3], [1, 2, 3]))
    assert rt.newaxis is None and f(x).shape == (3, 3)


def test_name_scope_empty_is_the_root_and_a_trailing_slash_is_absolute():
    """As in TensorFlow: AutoGraph's reference tests use ``with tf.name_scope(''):`` around returns."""
    @rt.function
    def f(x):
        with rt.name_scope("outer") as outer:
            with rt.name_scope("") as root:
                y = rt.identity(x, name="id")
                with rt.name_scope("in") as inner:
                    pass
            with rt.name_scope("a/b") as nested, rt.name_scope("abs/") as absolute:
                pass
        assert (outer, root, inner, nested, absolute) == ("outer/", "", "in/", "outer/a/b/", "abs/")
        return y
    graph = f.get_concrete_function(rt.TensorSpec([], rt.int32)).graph
    assert "id" in [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="must be a string"):
        with rt.name_scope(None):
            pass
