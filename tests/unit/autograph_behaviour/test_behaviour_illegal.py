"""Programs TensorFlow rejects at trace time or run time: rt rejects them with the same exception type
and a message naming the user's variable (loop_control_flow_illegal_cases_test,
loop_with_variable_type_illegal_cases_test, loop_created_variables_test, generator_test, assertion_test)."""
from __future__ import annotations

import pytest
from behaviour_harness import DS, T, assert_matches_python, assert_matches_tf, cases

import runtime as rt


def tf_break_in_py_for(l):
    s = 0
    for c in l:
        if rt.greater(c % 2, 0):
            break
        s += c
    return s


def tf_return_in_py_for(l):
    s = 0
    for c in l:
        if rt.greater(c % 2, 0):
            return s
        else:
            return s
        s += c
    return s


def tf_break_in_py_while(x):
    s = 0
    while x > 0:
        x -= 1
        if rt.greater(x % 2, 0):
            break
        s += x
    return s


def tf_return_in_py_while(x):
    s = 0
    while x > 0:
        x -= 1
        if rt.greater(x % 2, 0):
            return s
        else:
            return s
        s += x
    return s


@pytest.mark.parametrize("values", ([1, 2], [1, 2, 3]))
def test_tensor_break_in_python_for(values):
    assert_matches_tf(tf_break_in_py_for, values, match="not supported in Python for loops")


@pytest.mark.parametrize("n", (2, 3))
def test_tensor_break_in_python_while(n):
    assert_matches_tf(tf_break_in_py_while, n, match="condition of while loop started as non-Tensor, then changed to "
                                                     "Tensor.*`break`")


@pytest.mark.parametrize("n", (1, 2, 3))
def test_where_the_tensor_jump_cannot_change_the_result_python_wins(n):
    """TensorFlow rejects these too; rt gives Python's answer where the jump cannot change what the loop
    does: the last iteration's break, a return on both paths."""
    assert_matches_python(tf_return_in_py_for, list(range(1, n + 1)))
    assert_matches_python(tf_return_in_py_while, n)
    assert_matches_python(tf_break_in_py_for, [1])


def while_with_variable_py_type():
    n = rt.constant(0, dtype=rt.int32)
    c = True
    while c:
        c = rt.constant(True)
    return n


def while_with_variable_dtype():
    n = rt.constant(0, dtype=rt.int32)
    while rt.constant(True):
        n = rt.constant(0, dtype=rt.float32)
    return n


def while_with_variable_dtype_and_early_stopping():
    n = rt.constant(0, dtype=rt.int32)
    while rt.constant(True):
        n = rt.constant(0, dtype=rt.float32)
        break
    return n


def for_with_variable_dtype(l):
    n = rt.constant(0, dtype=rt.int32)
    for _ in l:
        n = rt.constant(0, dtype=rt.float32)
    return n


def for_with_variable_dtype_and_early_stopping(l):
    n = rt.constant(0, dtype=rt.int32)
    for _ in l:
        n = rt.constant(0, dtype=rt.float32)
        break
    return n


def while_with_variable_shape():
    t = rt.constant([1])
    while rt.constant(True):
        t = rt.constant([1, 1])
    return t


def for_with_variable_shape(l):
    t = rt.constant([1])
    for _ in l:
        t = rt.constant([1, 1])
    return t


def while_with_shape_erasure():
    t = rt.constant([1])
    while rt.constant(True):
        t = rt.range(rt.random.uniform((), 2, 3, dtype=rt.int32))
    return t


def for_with_shape_erasure(l):
    t = rt.constant([1])
    for _ in l:
        t = rt.range(rt.random.uniform((), 2, 3, dtype=rt.int32))
    return t


def while_with_shape_invariant_violation():
    t = rt.constant([1])
    while rt.constant(True):
        rt.autograph.experimental.set_loop_options(shape_invariants=((t, rt.TensorShape([1])),))
        t = rt.range(rt.random.uniform((), 2, 3, dtype=rt.int32))
    return t


def for_with_shape_invariant_violation(l):
    t = rt.constant([1])
    for _ in l:
        rt.autograph.experimental.set_loop_options(shape_invariants=((t, rt.TensorShape([1])),))
        t = rt.range(rt.random.uniform((), 2, 3, dtype=rt.int32))
    return t


def while_with_variable_structure():
    s = {"a": rt.constant(0)}
    while rt.constant(True):
        s = rt.constant(7.0)
    return s


def for_with_variable_structure(l):
    s = [rt.constant(0)]
    for _ in l:
        s = s + [rt.constant(0)]
    return s


def _tensor(l):
    return T(l)


def _range(l):
    return T(list(range(len(l))), "int32")


def _dataset(l):
    return DS(l)


def test_while_condition_that_becomes_a_tensor():
    assert_matches_tf(while_with_variable_py_type,
                      match="condition of while loop started as non-Tensor, then changed to Tensor")


@pytest.mark.parametrize("target", [while_with_variable_dtype, while_with_variable_dtype_and_early_stopping])
def test_while_variable_changes_dtype(target):
    assert_matches_tf(target, match="'n' has dtype int32 before the loop, but dtype float32 after")


@pytest.mark.parametrize("type_,target", cases(
    (_tensor, _range, _dataset), (for_with_variable_dtype, for_with_variable_dtype_and_early_stopping)))
def test_for_variable_changes_dtype(type_, target):
    assert_matches_tf(target, type_([1, 2, 3]), match="'n' has dtype int32 before the loop, but dtype float32 after")


def test_while_variable_changes_shape():
    assert_matches_tf(while_with_variable_shape, match=r"'t' has shape \(1,\) before the loop, but shape \(2,\) after")
    assert_matches_tf(while_with_shape_erasure,
                      match=r"'t' has shape \(1,\) before the loop, but shape \(None,\) after")
    assert_matches_tf(while_with_shape_invariant_violation,
                      match=r"'t' has shape \(None,\) after one iteration, which does not conform")


@pytest.mark.parametrize("type_", (_tensor, _range))
def test_for_variable_changes_shape(type_):
    l = type_([1, 2, 3])
    assert_matches_tf(for_with_variable_shape, l, match=r"'t' has shape \(1,\) before the loop, but shape \(2,\) after")
    assert_matches_tf(for_with_shape_erasure, l,
                      match=r"'t' has shape \(1,\) before the loop, but shape \(None,\) after")
    assert_matches_tf(for_with_shape_invariant_violation, l,
                      match=r"'t' has shape \(None,\) after one iteration, which does not conform")


def test_while_variable_changes_structure():
    assert_matches_tf(while_with_variable_structure, match="'s' does not have the same nested structure")


@pytest.mark.parametrize("type_", (_tensor, _range, _dataset))
def test_for_variable_changes_structure(type_):
    assert_matches_tf(for_with_variable_structure, type_([1, 2, 3]), match="'s'")


# -- variables created in loops (loop_created_variables_test) ----------------------------------


def while_creates_var_static_shape(n):
    i = 0
    while i < n:
        v = rt.zeros([1, 2, 3])
        i += 1
    return v


def while_creates_var_dynamic_shape(n):
    i = 0
    while i < n:
        v = rt.zeros([1, rt.random.uniform((), i, i + 1, rt.int32), 2])
        i += 1
    return v


def while_creates_var_dynamic_shape_py_init_var(n):
    i = 0
    while i < n:
        v = rt.range(i)
        i += 1
    return v


def while_creates_nested_var_static_shape(n):
    i = 0
    while i < n:
        v = {"a": rt.zeros([1, 2, 3]), "b": rt.ones([1, 2, 3])}
        i += 1
    return v["a"], v["b"]


def while_creates_nested_var_dynamic_shape(n):
    i = 0
    while i < n:
        v = {"a": rt.zeros([1, rt.random.uniform((), i, i + 1, rt.int32)]),
             "b": rt.ones([rt.random.uniform((), i, i + 1, rt.int32), 2])}
        i += 1
    return v["a"], v["b"]


CREATES = (while_creates_var_static_shape, while_creates_var_dynamic_shape,
           while_creates_var_dynamic_shape_py_init_var, while_creates_nested_var_static_shape,
           while_creates_nested_var_dynamic_shape)


@pytest.mark.parametrize("target", CREATES, ids=lambda f: f.__name__)
def test_loop_created_variable_zero_iterations(target):
    assert_matches_tf(target, T(0), match="loop must iterate at least once")
    assert_matches_tf(target, 0)


@pytest.mark.parametrize("n,type_,target", cases((1, 2), (int, _tensor), CREATES),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_loop_created_variable(n, type_, target):
    assert_matches_python(target, type_(n))


# -- generators, assertions --------------------------------------------------------------------


def basic_generator():
    yield 1


def generator_in_for(n):
    for i in range(n):
        yield i


def generator_in_while(n):
    i = 0
    while i < n:
        i += 1
        yield i


@pytest.mark.parametrize("target,args", [(basic_generator, ()), (generator_in_for, ([],)), (generator_in_while, (0,))])
def test_generators_are_not_supported(target, args):
    """AutoGraph's reference test expects NotImplementedError('... generators ...') (TensorFlow 2.21 itself
    now fails later, with a TypeError about the returned generator object)."""
    with pytest.raises(NotImplementedError, match="generators are not supported"):
        rt.function(target)(*args)


def simple_assertion(x):
    assert x > 0
    return x


def assertion_with_message(x, y):
    assert x < y, "x must be less than y"
    return y - x


def test_assertions():
    assert_matches_python(simple_assertion, 1)
    assert_matches_python(simple_assertion, T(1))
    assert_matches_tf(simple_assertion, 0)                   # AssertionError while tracing
    assert_matches_python(assertion_with_message, T(1), T(3))
    # TensorFlow converts `assert` on tensors only with Feature.ASSERT_STATEMENTS, then it raises this
    with pytest.raises(rt.errors.InvalidArgumentError):
        rt.function(simple_assertion)(rt.constant(0))
    with pytest.raises(rt.errors.InvalidArgumentError, match="x must be less than y"):
        rt.function(assertion_with_message)(rt.constant(3), rt.constant(1))


# -- return inside a loop whose iterations decide it --------------------------------------------


def return_possibly_undefined_after_loop(n):
    for i in rt.range(n):
        if i > 2:
            return i


def test_loop_that_may_end_without_returning():
    """TensorFlow: NotImplementedError (no return in its loops); rt supports them, and rejects the path
    that falls off the end without a value, naming it."""
    for n in (5, T(5)):
        with pytest.raises(ValueError, match="returns a value on some paths but reaches its end without a `return`"):
            rt.function(return_possibly_undefined_after_loop)(n if isinstance(n, int) else rt.constant(5))
