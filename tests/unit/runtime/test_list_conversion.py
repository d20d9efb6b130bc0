"""Lists that hold tensors, converted as TensorFlow converts them (issue 19, item 4).

TensorFlow packs a (nested) list holding tensors into one tensor: its dtype is the one requested (every tensor
of another dtype is cast to it: ``tf.concat([int32 tensor, [int64 scalar]], 0)`` is int32), else the first
tensor's (a tensor of another dtype is then an error); Python numbers in the list take that dtype. An op whose
inputs share a dtype takes it from the first tensor of a list input (``concat``'s values), or from the first
input holding a tensor (``add([int64 tensor], int32 tensor)`` is an error). ``EXPECTED`` is what TensorFlow 2.21
gives eagerly and in a ``tf.function`` (``test_tensorflow_agrees`` checks it when TensorFlow is installed).
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def _cases(tf):
    i32 = lambda: tf.constant([1, 2], tf.int32)  # built inside each mode's function
    i64 = lambda: tf.constant(5, tf.int64)
    return {
        "concat([i32, [i64]])": lambda: tf.concat([i32(), [i64()]], 0),
        "concat([[i64], i32])": lambda: tf.concat([[i64()], i32()], 0),
        "concat([i32, [i64, 3]])": lambda: tf.concat([i32(), [i64(), 3]], 0),
        "concat([i32, [f32]])": lambda: tf.concat([i32(), [tf.constant(1.5)]], 0),
        "concat([i32, [2**40 as int64]])": lambda: tf.concat([i32(), [tf.constant(2 ** 40, tf.int64)]], 0),
        "concat([i32, [int16]])": lambda: tf.concat([i32(), [tf.constant(3, tf.int16)]], 0),
        "concat([i32, [i64, i64]])": lambda: tf.concat([i32(), [i64(), i64()]], 0),
        "concat([i32, [3.5]])": lambda: tf.concat([i32(), [3.5]], 0),
        "convert_to_tensor([i64, 1])": lambda: tf.convert_to_tensor([i64(), 1]),
        "convert_to_tensor([1, i64])": lambda: tf.convert_to_tensor([1, i64()]),
        "convert_to_tensor([f32, 1])": lambda: tf.convert_to_tensor([tf.constant(1.5), 1]),
        "convert_to_tensor([1, f32])": lambda: tf.convert_to_tensor([1, tf.constant(1.5)]),
        "convert_to_tensor([[1, i64], [2, 3]])": lambda: tf.convert_to_tensor([[1, i64()], [2, 3]]),
        "convert_to_tensor([i64], dtype=int32)": lambda: tf.convert_to_tensor([i64()], dtype=tf.int32),
        "convert_to_tensor([i64, i32[0]])": lambda: tf.convert_to_tensor([i64(), i32()[0]]),
        "convert_to_tensor([1.5, i64])": lambda: tf.convert_to_tensor([1.5, i64()]),
        "add(i32, [i64])": lambda: tf.add(i32(), [i64()]),
        "i32 + [i64]": lambda: i32() + [i64()],
        "add([i64], i32)": lambda: tf.add([i64()], i32()),
        "stack([i32[0], i64])": lambda: tf.stack([i32()[0], i64()]),
    }


ERROR = "error"
EXPECTED = {
    "concat([i32, [i64]])": ("int32", [1, 2, 5]),
    "concat([[i64], i32])": ("int32", [5, 1, 2]),
    "concat([i32, [i64, 3]])": ("int32", [1, 2, 5, 3]),
    "concat([i32, [f32]])": ("int32", [1, 2, 1]),
    "concat([i32, [2**40 as int64]])": ("int32", [1, 2, 0]),
    "concat([i32, [int16]])": ("int32", [1, 2, 3]),
    "concat([i32, [i64, i64]])": ("int32", [1, 2, 5, 5]),
    "concat([i32, [3.5]])": ERROR,
    "convert_to_tensor([i64, 1])": ("int64", [5, 1]),
    "convert_to_tensor([1, i64])": ("int64", [1, 5]),
    "convert_to_tensor([f32, 1])": ("float32", [1.5, 1.0]),
    "convert_to_tensor([1, f32])": ("float32", [1.0, 1.5]),
    "convert_to_tensor([[1, i64], [2, 3]])": ("int64", [[1, 5], [2, 3]]),
    "convert_to_tensor([i64], dtype=int32)": ("int32", [5]),
    "convert_to_tensor([i64, i32[0]])": ERROR,
    "convert_to_tensor([1.5, i64])": ERROR,
    "add(i32, [i64])": ("int32", [6, 7]),
    "i32 + [i64]": ("int32", [6, 7]),
    "add([i64], i32)": ERROR,
    "stack([i32[0], i64])": ERROR,
}

CASES = _cases(rt)


@pytest.mark.parametrize("name", list(EXPECTED))
@pytest.mark.parametrize("mode", ["eager", "traced"])
def test_lists_holding_tensors_convert_as_tensorflow_converts_them(name, mode):
    run = CASES[name] if mode == "eager" else rt.function(CASES[name])
    if EXPECTED[name] is ERROR:
        with pytest.raises((TypeError, ValueError, rt.errors.InvalidArgumentError)):
            run()
        return
    dtype, values = EXPECTED[name]
    got = run()
    assert (got.dtype.name, got.numpy().tolist()) == (dtype, values)


def test_tensorflow_agrees():
    tf = pytest.importorskip("tensorflow")
    for name, fn in _cases(tf).items():
        for mode, run in (("eager", fn), ("graph", tf.function(fn))):
            try:
                got = run()
            except (TypeError, ValueError, tf.errors.InvalidArgumentError):
                assert EXPECTED[name] is ERROR, (name, mode)
                continue
            assert (got.dtype.name, np.asarray(got).tolist()) == EXPECTED[name], (name, mode)


def test_dataset_range_takes_tensor_bounds():
    # the reference tests' pattern that item 4 blocked: bounds of another integer dtype are cast like TF's
    ds = rt.data.Dataset.range(rt.constant(1), rt.constant(7, rt.int64), 2)
    assert [int(x) for x in ds] == [1, 3, 5]
