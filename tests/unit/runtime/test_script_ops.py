"""What ``rt.py_function`` / ``rt.numpy_function`` make of the function's return value, by ``Tout`` (issue 19,
item 6), as TensorFlow does: a list or tuple gives one output per item, None gives none, any other value is one
output (``Tout=[rt.float32]`` and a function returning one tensor gives a list of that tensor; it raised). The
number of values must be the number ``Tout`` declares (TensorFlow's py_function drops extra values; rt raises).
``EXPECTED`` is TensorFlow 2.21's answer in a ``tf.function`` wherever it gives one (``test_tensorflow_agrees``).
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def _cases(tf):
    x = lambda: tf.constant([1.0, 2.0])  # built inside each mode's function
    return {
        "py Tout=[f32], a tensor": lambda: tf.py_function(lambda a: a * 2, [x()], [tf.float32]),
        "py Tout=(f32,), a tensor": lambda: tf.py_function(lambda a: a * 2, [x()], (tf.float32,)),
        "py Tout=[f32], a number": lambda: tf.py_function(lambda a: 3.0, [x()], [tf.float32]),
        "py Tout=[f32], an array": lambda: tf.py_function(lambda a: a.numpy() * 2, [x()], [tf.float32]),
        "py Tout=[f32], [tensor]": lambda: tf.py_function(lambda a: [a * 2], [x()], [tf.float32]),
        "py Tout=[f32], (tensor,)": lambda: tf.py_function(lambda a: (a * 2,), [x()], [tf.float32]),
        "py Tout=f32, [tensor]": lambda: tf.py_function(lambda a: [a * 2], [x()], tf.float32),
        "py Tout=[f32, f32], two numbers": lambda: tf.py_function(lambda a: [1.0, 2.0], [x()],
                                                                   [tf.float32, tf.float32]),
        "py Tout=[f32, f32], a tensor": lambda: tf.py_function(lambda a: a * 2, [x()], [tf.float32, tf.float32]),
        "np Tout=[f32], an array": lambda: tf.numpy_function(lambda a: a * 2, [x()], [tf.float32]),
        "np Tout=f32, [array]": lambda: tf.numpy_function(lambda a: [a * 2], [x()], tf.float32),
        "np Tout=[f32, f32], an array": lambda: tf.numpy_function(lambda a: a * 2, [x()], [tf.float32, tf.float32]),
        "np Tout=[f32], two values": lambda: tf.numpy_function(lambda a: [np.float32(1), np.float32(2)], [x()],
                                                               [tf.float32]),
    }


ERROR = "error"
EXPECTED = {
    "py Tout=[f32], a tensor": ["float32[2.0, 4.0]"],
    "py Tout=(f32,), a tensor": ["float32[2.0, 4.0]"],
    "py Tout=[f32], a number": ["float32 3.0"],
    "py Tout=[f32], an array": ["float32[2.0, 4.0]"],
    "py Tout=[f32], [tensor]": ["float32[2.0, 4.0]"],
    "py Tout=[f32], (tensor,)": ["float32[2.0, 4.0]"],
    "py Tout=f32, [tensor]": "float32[2.0, 4.0]",
    "py Tout=[f32, f32], two numbers": ["float32 1.0", "float32 2.0"],
    "py Tout=[f32, f32], a tensor": ERROR,
    "np Tout=[f32], an array": ["float32[2.0, 4.0]"],
    "np Tout=f32, [array]": "float32[2.0, 4.0]",
    "np Tout=[f32, f32], an array": ERROR,
    "np Tout=[f32], two values": ERROR,
}


def _show(result):
    if isinstance(result, (list, tuple)):
        return [_show(r) for r in result]
    value = np.asarray(result)
    return f"{result.dtype.name}{' ' if value.ndim == 0 else ''}{value.tolist()}"


CASES = _cases(rt)


@pytest.mark.parametrize("name", list(EXPECTED))
@pytest.mark.parametrize("mode", ["eager", "traced"])
def test_the_return_value_gives_the_outputs_tout_declares(name, mode):
    run = CASES[name] if mode == "eager" else rt.function(CASES[name])
    if EXPECTED[name] is ERROR:
        with pytest.raises(rt.errors.InvalidArgumentError, match="value"):
            run()
        return
    assert _show(run()) == EXPECTED[name]


def test_no_declared_output_takes_none_and_rejects_a_value():
    assert rt.py_function(lambda a: None, [rt.constant(1.0)], []) == []
    assert rt.py_function(lambda a: None, [rt.constant(1.0)], None) is None
    with pytest.raises(rt.errors.InvalidArgumentError, match="returned 1 value"):
        rt.py_function(lambda a: a, [rt.constant(1.0)], [])


def test_the_gradient_of_a_single_tensor_returned_for_a_list_tout():
    x = rt.constant([1.0, 2.0])
    with rt.GradientTape() as tape:
        tape.watch(x)
        (y,) = rt.py_function(lambda a: a * a, [x], [rt.float32])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])


def test_tensorflow_agrees():
    tf = pytest.importorskip("tensorflow")
    for name, fn in _cases(tf).items():
        try:
            got = _show(tf.function(fn)())
        except tf.errors.InvalidArgumentError:
            got = ERROR
        assert got == EXPECTED[name], name
