"""One rule for turning call arguments into tensors of a signature's dtype, on every call path
(Function with input_signature, Function without one, ConcreteFunction, rt.constant): a numeric or bool
numpy value converts as TensorFlow 2.21 converts it, by a cast, whatever its values (whether it is accepted
depends on its dtype and shape only; byte order never matters); a Python number follows tf.constant's rules;
a tensor must already have the dtype. A numpy scalar is a 0-d tensor."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

F32 = rt.TensorSpec([None], rt.float32)
I32 = rt.TensorSpec([None], rt.int32)


def paths(spec, fn):
    """(call, error type) for each way a user passes an argument of dtype ``spec``."""
    with_signature = rt.function(fn, input_signature=[spec])
    concrete = rt.function(fn).get_concrete_function(spec)
    return [(with_signature, ValueError), (concrete, rt.errors.InvalidArgumentError)]


def test_big_endian_float32_is_float32_on_every_path():
    big = (np.arange(3) + 0.5).astype(">f4")
    assert not big.dtype.isnative
    expected = np.arange(3, dtype=np.float32) + 1.5
    for call, _ in paths(F32, lambda x: x + 1.0):
        np.testing.assert_array_equal(call(big).numpy(), expected)
    plain = rt.function(lambda x: x + 1.0)
    np.testing.assert_array_equal(plain(big).numpy(), expected)
    np.testing.assert_array_equal(plain(big).numpy(), expected)        # the cached fast path too
    assert plain.experimental_get_tracing_count() == 1
    plain(np.arange(3, dtype=np.float32))
    assert plain.experimental_get_tracing_count() == 1                   # '>f4' and '<f4' share a trace
    assert rt.constant(big).dtype is rt.float32
    np.testing.assert_array_equal(rt.constant(big).numpy(), big.astype(np.float32))


NUMPY_VALUES = [          # (value, signature) -> what TensorFlow 2.21 gives: the value cast to the dtype
    (np.array([4000000000], np.uint32), I32),             # out of range: wraps
    (np.array([7], np.uint32), I32),
    (np.array([2 ** 31], np.int64), I32),
    (np.array([5], np.int64), I32),
    (np.array([1.5, -1.7], np.float64), I32),             # truncates
    (np.array([3.0], np.float64), I32),
    (np.array([2 ** 40 + 1], np.int64), F32),             # rounds
    (np.array([1, 2], np.int64), F32),
    (np.array([0.1]), F32),                               # float64 0.1 -> the nearest float32 (it was an error)
    (np.array([0.5]), F32),                               # ... as 0.5 always was: acceptance never depends on values
    (np.array([1.5, -2.0]), F32),
    (np.array([np.nan, np.inf, 1e300]), F32),
    (np.array([2, 0], np.int32), rt.TensorSpec([None], rt.bool)),
]


@pytest.mark.parametrize("value, spec", NUMPY_VALUES)
def test_numpy_arrays_convert_by_their_dtype_only_as_tensorflow_casts_them(value, spec):
    with np.errstate(all="ignore"):
        expected = value.astype(spec.dtype.np)
    for call, _ in paths(spec, lambda x: x):
        np.testing.assert_array_equal(call(value).numpy(), expected)
    np.testing.assert_array_equal(rt.constant(value, spec.dtype).numpy(), expected)


def test_tensorflow_casts_numpy_arguments_the_same_way():
    tf = pytest.importorskip("tensorflow")
    for value, spec in NUMPY_VALUES:
        with np.errstate(all="ignore"):
            expected = value.astype(spec.dtype.np)
        f = tf.function(lambda x: x, input_signature=[tf.TensorSpec(spec.shape.as_list(), spec.dtype.name)])
        np.testing.assert_array_equal(f(value).numpy(), expected)


def test_numpy_values_that_are_not_numbers_do_not_convert_to_numbers():
    for call, error in paths(F32, lambda x: x):
        with pytest.raises(error):
            call(np.array(["1.5"]))


def test_numpy_scalars_follow_the_same_rule():
    assert int(rt.constant(np.uint8(200), rt.int8)) == -56
    assert int(rt.constant(np.uint8(100), rt.int8)) == 100
    assert int(rt.constant(np.int64(-1), rt.uint8)) == 255
    assert float(rt.constant(np.float64(0.1), rt.float32)) == float(np.float32(0.1))


def test_python_numbers_follow_tf_constant():
    for call, _ in paths(F32, lambda x: x):
        np.testing.assert_array_equal(call([1, 2]).numpy(), [1.0, 2.0])
        np.testing.assert_array_equal(call([0.1]).numpy(), np.float32([0.1]))   # Python floats round
    for call, error in paths(I32, lambda x: x):
        with pytest.raises(error):
            call([1.5])
        with pytest.raises(error):
            call([2 ** 40])
    with pytest.raises(TypeError, match="out of range"):
        rt.constant(300, rt.int8)


def test_tensors_never_convert_implicitly():
    for call, error in paths(F32, lambda x: x):
        with pytest.raises(error):
            call(rt.constant([1, 2], rt.int64))


def test_numpy_scalar_is_a_0d_tensor_and_does_not_retrace():
    @rt.function
    def double(x):
        return x * 2.0
    assert float(double(np.float32(1.5))) == 3.0
    assert float(double(np.float32(2.5))) == 5.0
    assert float(double(np.array(3.5, np.float32))) == 7.0
    assert double.experimental_get_tracing_count() == 1
    assert double(np.float64(1.0)).dtype is rt.float64           # np.float64 is a float64 tensor, not a float
    assert double.experimental_get_tracing_count() == 2
    concrete = double.get_concrete_function(rt.TensorSpec([], rt.float32))
    assert float(concrete(np.float32(4.0))) == 8.0


def test_python_floats_round_once_to_the_tensors_dtype():
    """A Python float is a double: for a float64 (or float16) operand it rounds once, not through float32 first."""
    x = rt.constant(np.array([0.7], np.float64))
    assert rt.multiply(x, 0.7071067811865476).numpy()[0] == 0.7 * 0.7071067811865476
    assert rt.constant(0.1, rt.float64).numpy() == 0.1
    assert rt.constant([0.1, 1 / 3], rt.float64).numpy().tolist() == [0.1, 1 / 3]
    assert rt.constant(0.1, rt.float16).numpy() == np.float16(0.1)
    assert rt.constant(0.1).numpy() == np.float32(0.1)
