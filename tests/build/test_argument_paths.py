"""Arguments reach built native code by the same conversion rule as every other path: a big-endian
float32 array is float32 (never read as little-endian garbage), a numpy array of another dtype is cast
as TensorFlow casts it whatever its values (an out-of-range uint32 array wraps for an int32 signature,
float64 0.1 rounds for a float32 one), and a numpy scalar is a 0-d tensor that runs the built code.
Native code also gives numpy's NaN/inf results (relu, sign, floor division and remainder)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import build_source

import runtime as rt

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

MODULE = '''
import runtime as rt

@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def scale(x):
    return x * 2.0 + 1.0

@rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
def increment(x):
    return x + 1

@rt.function
def half(x):
    return x / 2.0

half.get_concrete_function(rt.TensorSpec([], rt.float32))

@rt.function(input_signature=[rt.TensorSpec([None], rt.float32), rt.TensorSpec([None], rt.float32)])
def special(x, y):
    return rt.stack([rt.nn.relu(x), rt.sign(x), x // y, x % y, rt.maximum(x, y), rt.minimum(x, y)])
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("arguments")
    module = build_source(root, "rt_argument_paths", MODULE)
    return module


def test_big_endian_float32_on_the_native_paths(built):
    big = (np.arange(5) - 1.5).astype(">f4")
    expected = np.arange(5, dtype=np.float32) * 2.0 - 2.0
    concrete = built.scale.get_concrete_function()
    assert concrete.native
    np.testing.assert_array_equal(built.scale(big).numpy(), expected)         # Function.__call__
    np.testing.assert_array_equal(concrete(big).numpy(), expected)            # ConcreteFunction.__call__
    np.testing.assert_array_equal(concrete._call_flat([big]).numpy(), expected)   # the native call itself
    assert built.scale.experimental_get_tracing_count() == 0


def test_numpy_arrays_of_another_dtype_are_cast_by_the_built_function(built):
    big = np.array([4000000000], np.uint32)
    wrapped = big.astype(np.int32) + 1
    np.testing.assert_array_equal(built.increment(big).numpy(), wrapped)
    np.testing.assert_array_equal(built.increment.get_concrete_function()(big).numpy(), wrapped)
    np.testing.assert_array_equal(built.increment(np.array([7], np.uint32)).numpy(), [8])
    for value in ([0.1, 0.5], [1e300, -2.0]):          # acceptance does not depend on the values
        with np.errstate(all="ignore"):
            expected = np.array(value).astype(np.float32) * 2.0 + 1.0
        np.testing.assert_array_equal(built.scale(np.array(value)).numpy(), expected)
        np.testing.assert_array_equal(built.scale.get_concrete_function()(np.array(value)).numpy(), expected)
    with pytest.raises(ValueError, match="incompatible"):
        built.scale(rt.constant([0.1], rt.float64))     # a tensor never converts implicitly
    assert built.scale.experimental_get_tracing_count() == 0


def test_numpy_scalar_runs_the_built_code_like_a_0d_array(built):
    assert float(built.half(np.float32(3.0))) == 1.5
    assert float(built.half(np.array(5.0, np.float32))) == 2.5
    assert float(built.half(np.float32(7.0))) == 3.5
    assert built.half.experimental_get_tracing_count() == 0        # no retrace: the built signature ran
    assert built.half.get_concrete_function(rt.TensorSpec([], rt.float32)).native


def test_nan_and_inf_in_native_code_match_numpy(built):
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5.0, -5.0, 0.5, -7.25, 1e30], np.float32)
    x, y = (a.ravel() for a in np.meshgrid(values, values))
    concrete = built.special.get_concrete_function()
    assert concrete.native
    got = built.special(x, y).numpy()
    with np.errstate(all="ignore"):
        want = np.stack([np.maximum(x, np.float32(0)), np.sign(x), np.floor_divide(x, y), np.mod(x, y),
                         np.maximum(x, y), np.minimum(x, y)])
    np.testing.assert_array_equal(got, want)
