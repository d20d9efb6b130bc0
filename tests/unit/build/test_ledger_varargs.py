"""A recorded signature of a Function whose parameters are ``*args`` (Keras's ``model.train_function``: one
argument per element of the batch) specializes again at build time: its value for ``*data`` is splatted, not passed
as one argument (``Function.call_arguments``)."""
from __future__ import annotations

import types

import numpy as np

import runtime as rt
from runtime.aot import decode_signature, encode_signature
from transpiler.codegen import _trace_target


def test_a_recorded_signature_of_a_varargs_function_specializes_at_build_time(tmp_path):
    rt.keras.utils.set_random_seed(0)
    model = rt.keras.Sequential([rt.keras.Input((3,)), rt.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    step = model.train_function
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    recorded = encode_signature(step.specialize(rt.TensorSpec([4, 3]), rt.TensorSpec([4, 2])).signature
                                .structured_inputs)
    assert recorded == [{"tuple": [{"spec": [4, 3], "dtype": "float32"}, {"spec": [4, 2], "dtype": "float32"}]}]

    rt.keras.utils.set_random_seed(0)
    fresh = rt.keras.Sequential([rt.keras.Input((3,)), rt.keras.layers.Dense(2)])
    fresh.compile(optimizer="sgd", loss="mse")
    failures, notes = [], []
    target = types.SimpleNamespace(function=fresh.train_function, label="model.train_function", ledger_key="k")
    _trace_target(target, [recorded], str(tmp_path / "m.py"), failures, notes)
    assert failures == [] and notes == []
    assert [c.graph.inputs[0].shape.as_list() for c in fresh.train_function.specializations()] == [[4, 3]]
    assert fresh.train_function.call_arguments(decode_signature(recorded))[0][1] == rt.TensorSpec([4, 2])
    fresh.train_function(x, y)      # the specialisation answers the call of its shape
    assert fresh.train_function.experimental_get_tracing_count() == 2     # the declared one and the specialisation
