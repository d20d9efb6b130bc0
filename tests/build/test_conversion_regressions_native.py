"""Issue 19's converter and runtime bugs in built modules: each program gives, as native code, what it gives
eagerly and traced (the unit tests of each item check those two modes against TensorFlow's answer).

One module is built for all of them (``SOURCE``); every test checks that its signature runs native code.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import import_built

import runtime as rt

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

SOURCE = '''
import numpy as np
import runtime as rt


# -- item 2: black-style literals -----------------------------------------------------------------------------
@rt.function(input_signature=[rt.TensorSpec([None], rt.float32), rt.TensorSpec([], rt.float32)])
def black_style(
    x,
    scale,
):
    table = {
        "a": x,
        "b": x * scale,
    }
    if rt.reduce_sum(x) > 0:
        items = [
            table["a"],
            table["b"],
        ]
    else:
        items = [
            x,
            -x,
        ]
    return items[0] + items[
        1
    ]


# -- item 3: next() in tensor control flow ---------------------------------------------------------------------
@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def digits_in_while(n):
    it = iter(rt.data.Dataset.range(1, 10))
    s = rt.constant(0, rt.int64)
    i = rt.constant(0)
    while i < n:
        s = s * 10 + next(it)
        i += 1
    return s, next(it, -1)


@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def digits_in_if(n):
    it = iter(rt.data.Dataset.range(1, 10))
    s = next(it)
    if n > 0:
        s = s * 10 + next(it)
    s = s * 10 + next(it)
    return s


@rt.function(input_signature=[rt.TensorSpec([None], rt.int64)])
def until_the_end(values):
    it = iter(rt.data.Dataset.from_tensor_slices(values))
    s = rt.constant(0, rt.int64)
    x = next(it, -1)
    while x >= 0:
        s = s * 10 + x
        x = next(it, -1)
    for y in it:
        s += y
    return s


@rt.function(input_signature=[rt.TensorSpec([None], rt.int64)])
def resumed(values):
    it = iter(rt.data.Dataset.from_tensor_slices(values))
    s = rt.constant(0, rt.int64)
    for _ in rt.range(2):
        for x in it:
            s = s * 10 + x
            if x % 2 == 0:
                break
    return s, next(it, -1)


@rt.function
def digits_of(it):
    s = rt.constant(0, rt.int64)
    for _ in rt.range(3):
        s = s * 10 + next(it)
    return s


digits_of.get_concrete_function(iter(rt.data.Dataset.range(1, 10)))


# -- item 4: lists holding tensors of another dtype --------------------------------------------------------------
@rt.function(input_signature=[rt.TensorSpec([None], rt.int32), rt.TensorSpec([], rt.int64),
                              rt.TensorSpec([], rt.float32)])
def appended(x, n, f):
    return rt.concat([x, [n, 3, f]], 0), x + [n], rt.convert_to_tensor([[1, n], [2, 3]])


# -- item 5: return inside a loop whose variable has a relaxed shape invariant -----------------------------------
@rt.function(input_signature=[rt.TensorSpec([], rt.float32)])
def grows_until(x):
    s = rt.constant([1.0])
    for i in rt.range(5):
        rt.autograph.experimental.set_loop_options(shape_invariants=[(s, rt.TensorShape([None]))])
        s = rt.concat([s, [rt.cast(i, rt.float32)]], 0)
        if rt.reduce_sum(s) > x:
            return s
    return s * 2


# -- item 6: py_function / numpy_function with Tout=[dtype] and one returned value ------------------------------
def double(a):
    return a * 2


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def listed_tout(x):
    (y,) = rt.py_function(double, [x], [rt.float32])
    z = rt.numpy_function(double, [x], [rt.float32])[0]
    return y + z


# -- item 10: the gradient of a watched variable with respect to itself ----------------------------------------
V0 = rt.Variable(2.0)
V1 = rt.Variable(3.0)


@rt.function(input_signature=[rt.TensorSpec([], rt.float32)])
def self_gradient(k):
    with rt.GradientTape() as tape:
        result = V0
        y = V0 * k
    return tape.gradient([result, y], [V0, V1], unconnected_gradients="zero")


# -- item 12: a variable update takes a value of the variable's shape ---------------------------------------------
W = rt.Variable([0.0, 0.0, 0.0], name="w")
M = rt.Variable([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], name="m")


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def assign_w(x):
    W.assign(x)
    return W.read_value()


@rt.function(input_signature=[rt.TensorSpec([None, None], rt.float32)])
def add_to_m(x):
    M.assign_add(x)
    return M.read_value()


# -- item 14: a gradient through a tensor loop for a source of partly known shape ----------------------------------
@rt.function(input_signature=[rt.TensorSpec([1, None], rt.float32)])
def slice_gradient(x):
    with rt.GradientTape() as tape:
        tape.watch(x)
        total = rt.constant(0.0)
        for _ in rt.range(2):
            s = x[:, 2]
            total += rt.reduce_sum(s * s)
    return tape.gradient(total, x)
'''


def _build(root: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "-v"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("conversion_regressions")
    (root / "rt_conversion_regressions.py").write_text(SOURCE)
    _build(root)
    return import_built(root, "rt_conversion_regressions")


def _values(result):
    return [np.asarray(r).tolist() for r in (result if isinstance(result, (tuple, list)) else (result,))]


def _agree(function, *args, make_args=None):
    """``function``'s native result, after checking that it runs natively and that eager and traced code give
    the same (fresh arguments for each mode when ``make_args`` is given)."""
    fresh = make_args or (lambda: args)
    assert function.get_concrete_function(*fresh()).native, function.__name__
    native = _values(function(*fresh()))
    traced = _values(rt.function(function.python_function)(*fresh()))
    rt.config.run_functions_eagerly(True)
    try:
        eager = _values(function(*fresh()))
    finally:
        rt.config.run_functions_eagerly(False)
    assert native == traced == eager, (native, traced, eager)
    return native


def test_black_style_literals(built):
    for x in ([1.0, 2.0], [-1.0, -3.0]):
        got = _agree(built.black_style, rt.constant(x), rt.constant(3.0))
        np.testing.assert_allclose(got[0], np.array(x) * 4 if x[0] > 0 else 0 * np.array(x))


def test_next_in_tensor_control_flow(built):
    assert _agree(built.digits_in_while, rt.constant(3)) == [123, 4]
    assert _agree(built.digits_in_while, rt.constant(9)) == [123456789, -1]
    assert _agree(built.digits_in_if, rt.constant(1)) == [123]
    assert _agree(built.digits_in_if, rt.constant(0)) == [12]
    assert _agree(built.until_the_end, rt.constant([1, 2, 3, 4], rt.int64)) == [1234]
    assert _agree(built.until_the_end, rt.constant([5, -1, 7], rt.int64)) == [12]
    assert _agree(built.until_the_end, rt.constant([], rt.int64)) == [0]
    assert _agree(built.resumed, rt.constant([1, 2, 3, 4, 5], rt.int64)) == [1234, 5]
    assert _agree(built.resumed, rt.constant([1, 3], rt.int64)) == [13, -1]
    assert _agree(built.digits_of, make_args=lambda: (iter(rt.data.Dataset.range(1, 10)),)) == [123]


def test_lists_holding_tensors_of_another_dtype(built):
    got = _agree(built.appended, rt.constant([1, 2]), rt.constant(2 ** 40 + 5, rt.int64), rt.constant(-2.5))
    assert got == [[1, 2, 5, 3, -2], [6, 7], [[1, 2 ** 40 + 5], [2, 3]]]


def test_return_inside_a_loop_with_a_relaxed_shape_invariant(built):
    assert _agree(built.grows_until, rt.constant(3.0)) == [[1.0, 0.0, 1.0, 2.0]]
    assert _agree(built.grows_until, rt.constant(100.0)) == [[2.0, 0.0, 2.0, 4.0, 6.0, 8.0]]
    assert _agree(built.grows_until, rt.constant(0.0)) == [[1.0, 0.0]]


def test_py_function_with_a_list_tout_and_one_returned_value(built):
    assert _agree(built.listed_tout, rt.constant([1.0, -2.0])) == [[4.0, -8.0]]


def test_the_gradient_of_a_variable_with_respect_to_itself(built):
    assert _agree(built.self_gradient, rt.constant(3.0)) == [4.0, 0.0]


def test_a_variable_update_with_another_shape_fails_in_every_mode(built):
    assert built.assign_w.get_concrete_function().native and built.add_to_m.get_concrete_function().native
    np.testing.assert_array_equal(built.assign_w(rt.constant([1.0, 2.0, 3.0])).numpy(), [1.0, 2.0, 3.0])
    for function, value, name in ((built.assign_w, rt.constant([1.0, 2.0, 3.0, 4.0]), "w"),
                                  (built.add_to_m, rt.ones([1, 3]), "m")):
        for run in (function, rt.function(function.python_function, input_signature=function.input_signature)):
            with pytest.raises(rt.errors.InvalidArgumentError, match=f"'{name}'|shape"):
                run(value)
        rt.config.run_functions_eagerly(True)
        try:
            with pytest.raises(ValueError, match=f"'{name}'"):
                function(value)
        finally:
            rt.config.run_functions_eagerly(False)
    np.testing.assert_array_equal(built.W.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(built.M.numpy(), np.zeros([2, 3]))


def test_a_gradient_through_a_loop_for_a_source_of_partly_known_shape(built):
    assert _agree(built.slice_gradient, rt.constant([[1.0, 2.0, 3.0]])) == [[[0.0, 0.0, 12.0]]]
    assert _agree(built.slice_gradient, rt.constant([[1.0, 2.0, -1.0, 5.0]])) == [[[0.0, 0.0, -4.0, 0.0]]]
