"""``next(iterator)`` inside tensor control flow (issue 19, item 3): the iterator's position is state.

A dataset iterator made inside a Function (``iter(ds)``) keeps its position in graph tensors: a tensor loop or
``if`` that calls ``next()`` on it carries that position as a loop variable / conditional output, so each
iteration takes the next element (it took the first element in every iteration, and a loop waiting for the end
ran forever). A Python-side iterator passed to a Function advances through its ``IteratorGetNext`` op, once per
iteration. ``next(it, default)`` gives the default past the end, in every mode. The expected values are
TensorFlow 2.21's (``TF_CASES`` compares with it when it is installed).
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def digits_inside():
    it = iter(rt.data.Dataset.range(1, 10))
    s = rt.constant(0, rt.int64)
    for _ in rt.range(3):
        s = s * 10 + next(it)
    return s


def digits_of(it):
    s = rt.constant(0, rt.int64)
    for _ in rt.range(3):
        s = s * 10 + next(it)
    return s


def digits_in_while(n):
    it = iter(rt.data.Dataset.range(1, 10))
    s = rt.constant(0, rt.int64)
    i = rt.constant(0)
    while i < n:
        s = s * 10 + next(it)
        i += 1
    return s, next(it)


def digits_in_if(n):
    it = iter(rt.data.Dataset.range(1, 10))
    s = next(it)
    if n > 0:
        s = s * 10 + next(it)
    s = s * 10 + next(it)
    return s


def structured_elements():
    it = iter(rt.data.Dataset.from_tensor_slices(({"a": rt.constant([1., 2., 3.])}, rt.constant([4, 5, 6]))))
    s = rt.constant(0.)
    for _ in rt.range(2):
        d, b = next(it)
        s = s * 10 + d["a"] + rt.cast(b, rt.float32)
    return s


def until_the_end():
    it = iter(rt.data.Dataset.range(1, 5))
    s = rt.constant(0, rt.int64)
    x = next(it, -1)
    while x >= 0:
        s = s * 10 + x
        x = next(it, rt.constant(-1, rt.int64))
    return s


def until_the_end_of(it):
    s = rt.constant(0, rt.int64)
    x = next(it, -1)
    while x >= 0:
        s = s * 10 + x
        x = next(it, -1)
    return s


def nested_loops():
    it = iter(rt.data.Dataset.range(1, 100))
    s = rt.constant(0, rt.int64)
    for _ in rt.range(2):
        for _ in rt.range(2):
            s = s * 10 + next(it) % 10
    return s


def past_the_end():
    it = iter(rt.data.Dataset.range(1, 3))
    s = rt.constant(0, rt.int64)
    for _ in rt.range(3):
        s = s * 10 + next(it)
    return s


def _modes(fn, *args, make_args=None):
    """fn's results eagerly (run_functions_eagerly) and traced, each on fresh arguments."""
    out = []
    for eager in (True, False):
        rt.config.run_functions_eagerly(eager)
        try:
            call_args = make_args() if make_args is not None else args
            result = rt.function(fn)(*call_args)
        finally:
            rt.config.run_functions_eagerly(False)
        out.append([np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))])
    return out


@pytest.mark.parametrize("fn, args, expected", [
    (digits_inside, (), [123]),
    (digits_in_while, (rt.constant(3),), [123, 4]),
    (digits_in_while, (rt.constant(0),), [0, 1]),
    (digits_in_if, (rt.constant(1),), [123]),
    (digits_in_if, (rt.constant(0),), [12]),
    (structured_elements, (), [57.0]),
    (until_the_end, (), [1234]),
    (nested_loops, (), [1234]),
], ids=lambda v: getattr(v, "__name__", None))
def test_next_inside_tensor_control_flow_takes_one_element_per_call(fn, args, expected):
    for mode, got in zip(("eager", "traced"), _modes(fn, *args)):
        assert [g.tolist() for g in got] == expected, mode


def test_a_python_side_iterator_argument_advances_once_per_iteration_and_per_call():
    for eager in (True, False):
        rt.config.run_functions_eagerly(eager)
        try:
            f = rt.function(digits_of)
            it = iter(rt.data.Dataset.range(1, 10))
            assert [int(f(it)), int(f(it))] == [123, 456]
            stop = rt.function(until_the_end_of)
            assert int(stop(iter(rt.data.Dataset.range(1, 5)))) == 1234
        finally:
            rt.config.run_functions_eagerly(False)


def test_next_past_the_end_raises_instead_of_repeating_an_element():
    with pytest.raises((rt.errors.OutOfRangeError, rt.errors.InvalidArgumentError), match="End of sequence"):
        rt.function(past_the_end)()


def test_a_default_of_another_structure_or_dtype_is_an_error():
    def wrong_dtype():
        it = iter(rt.data.Dataset.range(3))
        return next(it, rt.constant(-1, rt.int32))

    def wrong_structure():
        it = iter(rt.data.Dataset.range(3))
        return next(it, (-1, -1))

    with pytest.raises(TypeError, match="int32.*int64|int64.*int32"):
        rt.function(wrong_dtype)()
    with pytest.raises(TypeError, match="structure"):
        rt.function(wrong_structure)()


def test_a_python_iterator_advanced_in_a_tensor_loop_is_an_error_naming_it():
    def python_iterator(n):
        values = iter([1, 2, 3])
        s = rt.constant(0)
        for _ in rt.range(n):
            s += next(values)
        return s

    with pytest.raises(TypeError, match="'values'"):
        rt.function(python_iterator)(rt.constant(2))


def resumed_after_break():
    it = iter(rt.data.Dataset.range(1, 10))
    s = rt.constant(0, rt.int64)
    for x in it:
        s = s * 10 + x
        if x >= 3:
            break
    return s, next(it)


def resumed_in_an_outer_loop():
    it = iter(rt.data.Dataset.range(1, 10))
    s = rt.constant(0, rt.int64)
    for _ in rt.range(2):
        for x in it:
            s = s * 10 + x
            if x % 2 == 0:
                break
    return s, next(it)


def resumed_argument(it):
    s = rt.constant(0, rt.int64)
    for x in it:
        s = s * 10 + x
        if x >= 3:
            break
    return s, next(it)


@pytest.mark.parametrize("fn, expected", [(resumed_after_break, [123, 4]), (resumed_in_an_outer_loop, [1234, 5])],
                         ids=lambda v: getattr(v, "__name__", None))
def test_a_for_loop_over_an_iterator_leaves_it_past_the_last_element_it_saw(fn, expected):
    for mode, got in zip(("eager", "traced"), _modes(fn)):
        assert [g.tolist() for g in got] == expected, mode


def test_a_for_loop_over_an_iterator_argument_consumes_no_element_past_a_break():
    for mode, got in zip(("eager", "traced"), _modes(resumed_argument,
                                                      make_args=lambda: (iter(rt.data.Dataset.range(1, 10)),))):
        assert [g.tolist() for g in got] == [123, 4], mode


TF_CASES = [digits_inside, digits_in_if, structured_elements, nested_loops, resumed_after_break,
            resumed_in_an_outer_loop]


@pytest.mark.parametrize("fn", TF_CASES, ids=lambda f: f.__name__)
def test_tensorflow_gives_the_same_values(fn, tmp_path):
    tf = pytest.importorskip("tensorflow")
    import importlib.util
    import inspect

    source = "import tensorflow as rt\n\n" + inspect.getsource(fn)
    path = tmp_path / f"tf_{fn.__name__}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = (rt.constant(1),) if fn is digits_in_if else ()
    expected = tf.function(getattr(module, fn.__name__))(*[tf.constant(a.numpy()) for a in args])
    got = rt.function(fn)(*args)
    as_list = lambda r: [np.asarray(t) for t in (r if isinstance(r, tuple) else (r,))]
    np.testing.assert_allclose(as_list(got), as_list(expected))


SHARED = iter(rt.data.Dataset.range(1, 100))


def python_side_iterator_in_a_local():
    it = SHARED
    s = rt.constant(0, rt.int64)
    for _ in rt.range(3):
        s = s * 10 + next(it)
    return s


def test_a_python_side_iterator_held_in_a_local_advances_per_iteration():
    assert int(rt.function(python_side_iterator_in_a_local)()) == 123
