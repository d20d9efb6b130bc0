"""Nested functions, lambdas, closures, returns and try statements in converted code: the traced
function gives what Python gives (items 2-6 of the correctness issue)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import runtime as rt


def same(python_result, traced_result):
    """Python's result and the traced one agree (tensors by value, None is None, tuples elementwise)."""
    if isinstance(python_result, tuple):
        assert isinstance(traced_result, tuple) and len(python_result) == len(traced_result)
        for a, b in zip(python_result, traced_result):
            same(a, b)
        return
    if python_result is None:
        assert traced_result is None
        return
    np.testing.assert_array_equal(np.asarray(traced_result), np.asarray(python_result))


def check(fn, *args):
    same(fn(*args), rt.function(fn)(*args))


# -- nested functions, lambdas, closures (item 2) ---------------------------------------------------

def test_nested_def_converts_its_own_source():
    def outer(x):
        def helper(y):
            if y > 0:
                return y * 2
            return -y
        return helper(x) + 1
    for v in (3, -3):
        check(outer, rt.constant(v))


def test_nested_def_with_other_parameters():
    def outer(x):
        def scale(a, b, c=2):
            while a < b:
                a = a * c
            return a
        return scale(x, rt.constant(100)) + scale(x, 50, c=3)
    check(outer, rt.constant(3))


def test_closure_from_a_factory():
    def make(limit):
        def clip(x):
            if x > limit:
                x = rt.constant(limit)
            return x
        return clip
    check(make(5), rt.constant(9))
    check(make(5), rt.constant(1))
    check(make(7), rt.constant(9))


def test_closure_called_from_converted_code():
    def make(step):
        def count(x):
            n = 0
            while x > 1:
                x = x // step
                n += 1
            return n
        return count
    halve = make(2)

    def f(x):
        return halve(x) * 10
    check(f, rt.constant(37))


absolute = lambda x: x if x > 0 else -x  # noqa: E731
pick = [lambda x: x * 2 if x > 0 else x, lambda x: x * 3 if x < 0 else x]  # two lambdas on one line


def test_module_level_lambda_converts_its_own_source():
    for v in (4, -4):
        check(absolute, rt.constant(v))

    def f(x):
        return absolute(x) + 1
    check(f, rt.constant(-2))


def test_two_lambdas_on_one_line_are_told_apart():
    for v in (5, -5):
        check(pick[0], rt.constant(v))
        check(pick[1], rt.constant(v))


label = "é→"; wide = lambda x: (x * 2  # noqa: E731  (non-ASCII text before it on its line: byte columns)
                                   if x > 0 else -x)


def test_a_lambda_after_non_ascii_text_over_two_lines_converts_its_own_source():
    from transpiler import conversion
    assert conversion.to_code(wide).splitlines()[0].startswith("def rt__lambda(x)")
    for v in (3, -3):
        check(wide, rt.constant(v))


def test_lambda_with_defaults_and_closure():
    k = 10
    shift = lambda x, d=3: x + d + k if x > 0 else x - d  # noqa: E731
    check(shift, rt.constant(1))
    check(shift, rt.constant(-1))


def test_lambda_in_converted_code_is_not_converted_again():
    def f(x):
        g = lambda y: y * 2 if y > 0 else -y  # noqa: E731
        return g(x) + g(-x)
    check(f, rt.constant(3))


def test_converter_failure_is_an_error_not_a_fallback(monkeypatch):
    from transpiler import conversion

    def broken(module, ctx):
        raise ValueError("converter bug")
    monkeypatch.setattr(conversion, "transform", broken)
    conversion._cache.clear()

    def f(x):
        if x > 0:
            x = -x
        return x
    with pytest.raises(rt.errors.ConversionError, match=r"could not convert .*f .*line \d+.*converter bug"):
        rt.function(f)(rt.constant(1))


# -- returns (items 3, 4, 6) ----------------------------------------------------------------------

def _raises():
    raise ValueError("no value")


def test_return_of_a_call_that_raises_into_a_handler():
    def f(x):
        try:
            return _raises()
        except ValueError:
            pass
        if x > 0:
            return 2
        return 1
    check(f, rt.constant(-1))
    check(f, rt.constant(1))


# -- try statements (item 5) ----------------------------------------------------------------------

def test_try_finally_converts():
    def f(x):
        try:
            y = x + 1
        finally:
            z = 2
        if y > 0:
            y = y * z
        return y
    check(f, rt.constant(1))
    check(f, rt.constant(-5))


def test_try_except_else_finally_with_tensor_control_flow_inside():
    def f(x):
        log = []
        try:
            if x > 0:
                y = x * 2
            else:
                y = -x
        except ZeroDivisionError:
            y = x
        else:
            log.append(1)
            for i in rt.range(3):
                y = y + i
        finally:
            log.append(2)
        return y + len(log)
    check(f, rt.constant(4))
    check(f, rt.constant(-4))


def test_return_inside_try_finally_under_a_tensor_condition():
    def f(x):
        if x > 0:
            try:
                return x * 3
            finally:
                pass
        return x
    check(f, rt.constant(2))
    check(f, rt.constant(-2))


def test_return_in_finally_overrides_the_return_of_the_try():
    def default_in_finally(x):
        try:
            return 2
        finally:
            if x > 0:
                return 1
            return 0  # noqa: B012

    def loop_in_finally(x):
        try:
            return 2
        finally:
            for i in range(3):
                if i == x:
                    return i * 10  # noqa: B012
            x = x + 1

    for x in (-1, 0, 1, 5):
        check(default_in_finally, x)
        check(default_in_finally, rt.constant(x))
        check(loop_in_finally, x)


def test_if_returning_on_one_path_only_is_a_trace_time_error_not_a_zero():
    def f(x):
        if x > 0:
            return x
    assert f(rt.constant(-1)) is None                 # Python: None, which a graph cannot return next to x
    with pytest.raises(ValueError, match=r"returns a value on some paths.*line \d+"):
        rt.function(f)(rt.constant(-1))


def test_returns_of_none_on_every_path_follow_python():
    log = []

    def f(x):
        if x > 0:
            log.append("positive")
            return
        log.append("other")
    same(f(rt.constant(1)), rt.function(f)(rt.constant(1)))

    def g(x):
        if x > 0:
            return None
        x = x + 1
    same(g(rt.constant(-1)), rt.function(g)(rt.constant(-1)))


def test_return_later_on_every_path_is_fine():
    def f(x):
        if x > 10:
            return x * 2
        if x < 0:
            return -x
        y = x + 1
        return y
    for v in (20, -3, 4):
        check(f, rt.constant(v))


def test_loop_that_may_end_without_return_is_an_error():
    def f(n):
        for i in rt.range(n):
            if i > 3:
                return i
    with pytest.raises(ValueError, match=r"returns a value on some paths.*line \d+"):
        rt.function(f)(rt.constant(10))


def test_return_of_a_tuple_inside_a_tensor_loop():
    def f(x):
        for i in rt.range(10):
            if i > x:
                return i, i * 2
        return x, x
    check(f, rt.constant(3))
    check(f, rt.constant(30))


def test_return_of_a_tensor_with_a_none_dim_inside_a_tensor_loop():
    @rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
    def f(x):
        for i in rt.range(10):
            if rt.reduce_sum(x) < rt.cast(i, rt.float32):
                return x * rt.cast(i, rt.float32)
        return x * 2.0
    np.testing.assert_array_equal(f(np.ones(3, np.float32)).numpy(), np.full(3, 4.0))
    np.testing.assert_array_equal(f(np.full(2, 9.0, np.float32)).numpy(), np.full(2, 18.0))


def test_return_inside_a_while_loop_of_a_dict():
    def f(x):
        i = rt.constant(0)
        while i < 5:
            if i == x:
                return {"at": i, "twice": x * 2}
            i += 1
        return {"at": i, "twice": x}
    same(tuple(f(rt.constant(2)).values()), tuple(rt.function(f)(rt.constant(2)).values()))
    same(tuple(f(rt.constant(9)).values()), tuple(rt.function(f)(rt.constant(9)).values()))


def test_generator_expression_as_the_only_argument():
    def f(x):
        parts = tuple(x * i for i in range(3))
        if x > 0:
            return sum(p for p in parts)
        return -x
    check(f, rt.constant(2))
    check(f, rt.constant(-2))


def test_return_of_a_list_inside_a_tensor_loop():
    def f(n):
        for i in rt.range(n):
            if i > 2:
                return [i, i * 2]
        return [n, n]
    python, traced = f(rt.constant(5)), rt.function(f)(rt.constant(5))
    assert isinstance(traced, list) and [int(v) for v in traced] == [int(v) for v in python] == [3, 6]


def test_return_none_inside_a_tensor_loop():
    def f(n):
        for i in rt.range(n):
            if i > 2:
                return
        n = n + 1
    same(f(rt.constant(5)), rt.function(f)(rt.constant(5)))

    def g(n):
        for i in rt.range(n):
            if i > 2:
                return None
        return n
    with pytest.raises(ValueError, match="returns None on some paths and a value on others"):
        rt.function(g)(rt.constant(5))


def _plus_one(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return wrapper


@_plus_one
def _decorated(x):
    if x > 2:
        return x * 10
    return x


def test_a_functools_wraps_decorator_converts_the_wrapper_not_the_wrapped_source():
    def f(x):
        return _decorated(x) * 2
    for x in (1, 4):
        check(f, x)
        check(f, rt.constant(x))
        check(_decorated, rt.constant(x))


# -- return inside a loop whose variable has a relaxed shape invariant (issue 19, item 5) -----------------------

def _grows_until(x):
    s = rt.constant([1.0])
    for i in rt.range(5):
        rt.autograph.experimental.set_loop_options(shape_invariants=[(s, rt.TensorShape([None]))])
        s = rt.concat([s, [rt.cast(i, rt.float32)]], 0)
        if rt.reduce_sum(s) > x:
            return s
    return s * 2


def _grows_in_a_while(x):
    s = rt.constant([[1.0, 2.0]])
    n = rt.constant(0)
    while n < 4:
        rt.autograph.experimental.set_loop_options(shape_invariants=[(s, rt.TensorShape([None, 2]))])
        s = rt.concat([s, s[-1:] + 1.0], 0)
        n += 1
        if rt.reduce_max(s) > x:
            return s[1:], n
    return s, n


@pytest.mark.parametrize("fn, limits", [(_grows_until, (3.0, 100.0, 0.0)), (_grows_in_a_while, (3.5, 100.0))],
                         ids=["for", "while"])
def test_return_inside_a_loop_whose_variable_has_a_relaxed_shape_invariant(fn, limits):
    # the return value took the loop variable's shape before the loop ((2,)) and failed against its (None,)
    for limit in limits:
        check(fn, rt.constant(limit))
        rt.config.run_functions_eagerly(True)
        try:
            same(fn(rt.constant(limit)), rt.function(fn)(rt.constant(limit)))
        finally:
            rt.config.run_functions_eagerly(False)
