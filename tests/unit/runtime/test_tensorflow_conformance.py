"""Behaviours checked against TensorFlow 2.21 that users rely on when they port code: eager error types,
dtypes of mixed-kind creation ops, and what eager control flow returns."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


@pytest.mark.parametrize("bad_call, python_error", [
    (lambda: rt.reshape(rt.range(6), [4, -1]), ValueError),
    (lambda: rt.matmul(rt.ones([2, 3]), rt.ones([2, 3])), ValueError),
    (lambda: rt.squeeze(rt.ones([1, 2, 1]), axis=1), ValueError),
    (lambda: rt.reduce_sum([1, 2], 2), ValueError),
    (lambda: rt.add(rt.constant(1), rt.constant(2.0)), TypeError),
    (lambda: rt.constant([1, 2]) + 1.5, TypeError),
    (lambda: rt.sqrt(rt.constant([4])), TypeError),
])
def test_eager_bad_arguments_raise_invalid_argument_error_as_tensorflow_does(bad_call, python_error):
    # TensorFlow raises InvalidArgumentError eagerly (and ValueError/TypeError while tracing): both clauses catch it
    with pytest.raises(rt.errors.InvalidArgumentError) as caught:
        bad_call()
    assert isinstance(caught.value, python_error)


def test_bad_arguments_while_tracing_stay_value_errors():
    @rt.function
    def f(x):
        return rt.reshape(x, [4, -1])

    with pytest.raises(ValueError, match="reshape") as caught:
        f(rt.range(6))
    assert not isinstance(caught.value, rt.errors.InvalidArgumentError)


def test_linspace_of_integers_is_float64():
    out = rt.linspace(0, 4, 3)
    assert out.dtype == rt.float64 and out.numpy().tolist() == [0.0, 2.0, 4.0]
    assert rt.linspace(rt.constant(1), rt.constant(2), 2).dtype == rt.float64
    assert rt.linspace(0.0, 1.0, 3).dtype == rt.float32
    assert rt.function(lambda a, b: rt.linspace(a, b, 3))(rt.constant(0), rt.constant(4)).dtype == rt.float64


def test_eager_while_loop_returns_tensors():
    i, total = rt.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0))
    assert isinstance(i, rt.Tensor) and isinstance(total, rt.Tensor)
    assert (int(i), int(total), total.dtype) == (4, 6, rt.int32)
    single = rt.while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0)
    assert single.dtype == rt.float32 and float(single) == 16.0
    _, ta = rt.while_loop(lambda k, ta: k < 2, lambda k, ta: (k + 1, ta.write(k, 1.0)),
                          [0, rt.TensorArray(rt.float32, size=2)])
    assert isinstance(ta, rt.TensorArray)
    np.testing.assert_array_equal(ta.stack().numpy(), [1.0, 1.0])


def test_get_concrete_function_reuses_a_more_general_trace():
    @rt.function
    def f(x):
        return x * 2.0

    general = f.get_concrete_function(rt.TensorSpec([None], rt.float32))
    assert f.get_concrete_function(rt.ones([4])) is general
    assert f(rt.ones([5])).shape == (5,) and f.experimental_get_tracing_count() == 1
    # unlike TensorFlow, a TensorSpec asks for its own trace: the build specialises each signature a module lists
    assert f.get_concrete_function(rt.TensorSpec([3], rt.float32)) is not general
    assert f.experimental_get_tracing_count() == 2

    @rt.function
    def g(x):
        return x

    specific = g.get_concrete_function(rt.TensorSpec([3], rt.float32))
    assert g.get_concrete_function(rt.TensorSpec([None], rt.float32)) is not specific, "never a narrower trace"
    assert g.experimental_get_tracing_count() == 2


def test_reduce_retracing_concrete_function_is_the_generalized_one():
    @rt.function(reduce_retracing=True)
    def f(x):
        return x

    for n in range(1, 5):
        f(rt.ones([n]))
    spec = f.get_concrete_function(rt.ones([7])).structured_input_signature[0][0]
    assert spec.shape.as_list() == [None] and f.experimental_get_tracing_count() == 2
