"""Errors name the user's variable, and the user's file and line (not the converted code)."""
import traceback

import pytest

import runtime as rt

THIS_FILE = __file__


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


def _raises(fn, exc_type, *args):
    with pytest.raises(exc_type) as info:
        rt.function(fn)(*args)
    e = info.value
    full = "".join(traceback.format_exception(e))
    return str(e), full


def undefined_in_else(x):
    if x > 0:
        y = 1
    return y


def undefined_in_main(x):
    if x > 0:
        pass
    else:
        y = 1
    return y


def dtype_mismatch(x):
    if x > 0:
        y = 1
    else:
        y = 1.0
    return y


def loop_dtype(n):
    x = 0
    for i in rt.range(n):
        x = 1.5
    return x


def loop_shape(n):
    x = rt.constant([1])
    for i in rt.range(n):
        x = rt.concat([x, [i]], 0)
    return x


def loop_shape_invariant(n):
    x = rt.constant([1])
    for i in rt.range(n):
        rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([None]))])
        x = rt.concat([x, [i]], 0)
    return x


def python_while_becomes_tensor(x):
    i = 0
    while i < 3:
        i = i + x
    return i


def tensor_break_in_python_loop(x):
    for i in [1, 2, 3]:
        if x > i:
            break
        x = x + 1
    return x


def list_append_in_tensor_loop(n):
    results = []
    for i in rt.range(n):
        results.append(i)
    return results


def generator(x):
    yield x


def op_error(x):
    y = x + 1
    z = y + "a"
    return z


def only_loop_defines(n):
    for i in rt.range(n):
        y = i * 2
    return y


def test_undefined_in_else_branch():
    msg, full = _raises(undefined_in_else, ValueError, rt.constant(1))
    assert "'y' must also be initialized in the else branch" in msg
    assert f"line {_line_of(undefined_in_else, 'if x > 0')}" in msg and THIS_FILE in msg


def test_undefined_in_main_branch():
    msg, _ = _raises(undefined_in_main, ValueError, rt.constant(1))
    assert "'y' must also be initialized in the main branch" in msg


def test_branch_dtype_mismatch():
    msg, _ = _raises(dtype_mismatch, TypeError, rt.constant(1))
    assert "'y'" in msg and "int32" in msg and "float32" in msg


def test_loop_var_dtype_change():
    msg, full = _raises(loop_dtype, TypeError, rt.constant(3))
    assert "'x'" in msg and "int32" in msg and "float32" in msg
    assert THIS_FILE in full


def test_loop_var_shape_change_and_invariants():
    msg, _ = _raises(loop_shape, ValueError, rt.constant(3))
    assert "'x'" in msg and "shape" in msg
    out = rt.function(loop_shape_invariant)(rt.constant(3))
    assert out.numpy().tolist() == [1, 0, 1, 2]


def test_python_while_condition_becomes_tensor():
    msg, _ = _raises(python_while_becomes_tensor, NotImplementedError, rt.constant(1))   # as in TensorFlow
    assert "started as non-Tensor, then changed to Tensor" in msg and "'i'" in msg


def python_while_with_tensor_break(x):
    i = 0
    while i < 3:
        i += 1
        if x > i:
            break
    return i


def test_python_while_stopped_by_a_tensor_break_names_the_break_not_an_internal_flag():
    msg, _ = _raises(python_while_with_tensor_break, NotImplementedError, rt.constant(1))
    assert "`break`" in msg and "rt__" not in msg


def test_tensor_break_in_python_loop():
    msg, _ = _raises(tensor_break_in_python_loop, NotImplementedError, rt.constant(1))   # as in TensorFlow
    assert "break" in msg and "not supported in Python for loops" in msg


def test_list_append_in_tensor_loop():
    msg, _ = _raises(list_append_in_tensor_loop, TypeError, rt.constant(3))
    assert "'results'" in msg and "rt.TensorArray" in msg
    assert f"line {_line_of(list_append_in_tensor_loop, 'results.append')}" in msg


def test_generator_is_one_line_error():
    with pytest.raises(NotImplementedError) as info:             # as in TensorFlow
        rt.function(generator)(rt.constant(1))
    msg = str(info.value)
    assert "generators are not supported" in msg and len(msg.splitlines()) == 1
    assert "generator" in msg and THIS_FILE in msg


def test_op_error_points_at_user_line():
    msg, full = _raises(op_error, Exception, rt.constant(1))
    line = _line_of(op_error, 'z = y + "a"')
    assert f'File "{THIS_FILE}", line {line}' in full
    assert 'z = y + "a"' in full


def test_loop_must_iterate_to_define_variable():
    f = rt.function(only_loop_defines)
    assert f(rt.constant(3)).numpy() == 4
    with pytest.raises(rt.errors.InvalidArgumentError) as info:
        f(rt.constant(0))
    assert "'y'" in str(info.value)


def test_read_of_undefined_variable():
    def g(x):
        if x > 0:
            pass
        return y  # noqa: F821

    with pytest.raises((NameError, UnboundLocalError)):
        rt.function(g)(1)


def simple_relu(x):
    if rt.greater(x, 0):
        return x
    else:
        return 0


def test_vector_condition_names_the_line_of_the_if():
    message, full = _raises(simple_relu, ValueError, rt.constant([1.0, -1.0]))
    line = _line_of(simple_relu, "if rt.greater")
    assert f"line {line}" in message
    assert f'line {line}, in simple_relu' in full and f"line {line + 4}" not in full


def test_nested_function_errors_name_their_own_line():
    def outer(x):
        def inner(y):
            return rt.gather(y, rt.constant([5]))
        return inner(x)
    _, full = _raises(outer, (rt.errors.InvalidArgumentError, ValueError), rt.constant([1, 2]))
    assert f"line {_line_of(outer, 'rt.gather')}" in full
