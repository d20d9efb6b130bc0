"""Variable updates take a value of the variable's own shape, in every mode (issue 19, item 12).

TensorFlow rejects ``v.assign_add(x)`` with ``v`` [2, 3] and ``x`` [3], and ``w.assign(c)`` with ``w`` [3] and a
scalar ``c``: eagerly, while tracing, and (when a dim is only known at run time) when the graph runs. rt broadcast
them eagerly and traced and raised only in built code (``tests/build/test_conversion_regressions_native.py``).
The error names the variable.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

UPDATES = [
    ("assign_add", [2, 3], [3]),
    ("assign_sub", [2, 3], [1, 3]),
    ("assign", [3], []),
    ("assign", [3], [4]),
    ("assign_add", [], [1]),
]


@pytest.mark.parametrize("method, var_shape, value_shape", UPDATES)
def test_an_update_with_a_value_of_another_shape_is_an_error_in_every_mode(method, var_shape, value_shape):
    v = rt.Variable(np.zeros(var_shape, np.float32), name="weights")
    value = rt.ones(value_shape)
    with pytest.raises(ValueError, match="'weights'.*shape") as eager:
        getattr(v, method)(value)
    assert isinstance(eager.value, rt.errors.InvalidArgumentError)      # TensorFlow's eager error class too
    with pytest.raises(ValueError, match="'weights'.*shape"):
        rt.function(lambda x: getattr(v, method)(x))(value)
    relaxed = rt.function(lambda x: getattr(v, method)(x),
                          input_signature=[rt.TensorSpec([None] * len(value_shape), rt.float32)])
    # a rank that differs is known while tracing; sizes that differ only when the graph runs
    with pytest.raises(rt.errors.InvalidArgumentError if len(value_shape) == len(var_shape) else ValueError,
                       match="'weights'.*shape"):
        relaxed(value)
    np.testing.assert_array_equal(v.numpy(), np.zeros(var_shape, np.float32))     # unchanged


def test_a_python_number_is_a_scalar_value():
    w = rt.Variable([1.0, 2.0, 3.0], name="w")
    with pytest.raises(ValueError, match="'w'"):
        w.assign(0.0)
    s = rt.Variable(1.0, name="s")
    s.assign_add(2.0)
    assert float(s.numpy()) == 3.0


def test_updates_of_the_variables_shape_still_work_in_every_mode():
    v = rt.Variable(np.zeros([2, 3], np.float32))
    v.assign_add(np.ones([2, 3], np.float32))
    rt.function(lambda x: v.assign_sub(x))(rt.ones([2, 3]) * 0.5)
    rt.function(lambda x: v.assign_add(x), input_signature=[rt.TensorSpec([None, 3], rt.float32)])(rt.ones([2, 3]))
    np.testing.assert_array_equal(v.numpy(), np.full([2, 3], 1.5, np.float32))


def test_tensorflow_rejects_the_same_updates():
    tf = pytest.importorskip("tensorflow")
    for method, var_shape, value_shape in UPDATES:
        v = tf.Variable(np.zeros(var_shape, np.float32))
        update = lambda v=v, method=method, value_shape=value_shape: getattr(v, method)(tf.ones(value_shape))
        for run in (update, tf.function(update)):
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
                run()
