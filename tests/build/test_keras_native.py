"""The train step ``Model.compile`` makes, built ahead of time: forward, loss, gradients, the optimizer's update and
the metrics' updates run as native code on the model's own variables.

The module exposes ``model.train_function`` through a module-level Function with the same signature (calling a
Function from a traced Function inlines it): what the build compiles is exactly the step ``fit`` runs. The native
steps are compared with the same steps traced on the generic executor from the same start (weights, moving
statistics, optimizer slots and metric totals all put back).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import build_source

import runtime as rt
from runtime.optimizer import optimize
from transpiler.lowering import lower_function

pytestmark = pytest.mark.build

SOURCE = '''
import runtime as rt

rt.keras.utils.set_random_seed(5)
model = rt.keras.Sequential([rt.keras.Input((4,)), rt.keras.layers.Dense(16, activation="gelu"),
                             rt.keras.layers.BatchNormalization(), rt.keras.layers.Dense(8, activation="softplus"),
                             rt.keras.layers.Dense(3)])
model.compile(optimizer=rt.keras.optimizers.Adam(0.02),
              loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])


@rt.function(input_signature=list(model.train_function.input_signature))
def train_step(x, y):
    return model.train_function(x, y)
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_source(tmp_path_factory.mktemp("keras_native"), "rt_keras_steps", SOURCE)


def _state(module):
    return list(module.model.variables) + list(module.model.optimizer.variables)


def test_compiled_train_step_runs_natively_and_agrees_with_the_traced_one(built):
    concrete = built.train_step.get_concrete_function()
    assert concrete.native
    paths = [h.path for h in concrete._entry["variables"]]
    assert "model.layers[0].kernel" in paths and "model._loss_tracker.total" in paths
    callbacks = lower_function(optimize(concrete.graph), "rt_fn_check").report.callbacks
    assert set(callbacks) <= {"ArgMax"}, callbacks          # gelu (erfc), softplus, BN and Adam are native code
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = np.argmax(x[:, :3], axis=1).astype(np.int32)
    model = built.model
    model.reset_metrics()
    native = [built.train_step(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    native = [{k: float(v) for k, v in logs.items()} for logs in native]
    after = [v.numpy().copy() for v in _state(built)]
    assert native[-1]["loss"] < native[0]["loss"] * 1.5 and 0 <= native[-1]["accuracy"] <= 1
    # the same four steps from the same start (the same seed), traced (generic executor)
    rt.keras.utils.set_random_seed(5)
    twin = rt.keras.Sequential([rt.keras.Input((4,)), rt.keras.layers.Dense(16, activation="gelu"),
                                rt.keras.layers.BatchNormalization(), rt.keras.layers.Dense(8, activation="softplus"),
                                rt.keras.layers.Dense(3)])
    twin.compile(optimizer=rt.keras.optimizers.Adam(0.02),
                 loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    traced = [twin.train_function(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    traced = [{k: float(v) for k, v in logs.items()} for logs in traced]
    for a, b in zip(native, traced):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key
    for got, variable in zip(after, list(twin.variables) + list(twin.optimizer.variables)):
        np.testing.assert_allclose(got, variable.numpy(), rtol=1e-4, atol=1e-5)
    # the module's model now holds the natively trained weights: fit() continues from them
    before = model.evaluate(x, y, verbose=0)[0]
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert model.evaluate(x, y, verbose=0)[0] < before


CONSTRAINED = '''
import runtime as rt

rt.keras.utils.set_random_seed(3)
max_norm = rt.keras.constraints.MaxNorm(0.5)
model = rt.keras.Sequential([rt.keras.Input((6,)),
                             rt.keras.layers.Dense(8, activation="relu", kernel_constraint=max_norm,
                                                   bias_constraint="non_neg"),
                             rt.keras.layers.Dense(2, kernel_constraint=rt.keras.constraints.UnitNorm())])
model.compile(optimizer=rt.keras.optimizers.Adam(0.05), loss="mse")


@rt.function(input_signature=list(model.train_function.input_signature))
def train_step(x, y):
    return model.train_function(x, y)
'''


def test_weight_constraints_apply_in_the_built_step_as_in_the_traced_one(tmp_path):
    built = build_source(tmp_path, "rt_keras_constrained", CONSTRAINED)
    assert built.train_step.get_concrete_function().native
    start = [v.numpy().copy() for v in built.model.variables]
    rng = np.random.default_rng(1)
    x = (3 * rng.standard_normal((32, 6))).astype(np.float32)
    y = rng.standard_normal((32, 2)).astype(np.float32)
    for i in range(0, 32, 8):
        built.train_step(x[i:i + 8], y[i:i + 8])
    kernel, bias, out_kernel = (v.numpy() for v in built.model.variables[:3])
    assert np.linalg.norm(kernel, axis=0).max() <= 0.5 + 1e-6 and bias.min() >= 0
    np.testing.assert_allclose(np.linalg.norm(out_kernel, axis=0), 1, rtol=1e-5)
    # the same steps from the same weights, traced on the generic executor
    twin = rt.keras.Sequential([rt.keras.Input((6,)),
                                rt.keras.layers.Dense(8, activation="relu",
                                                      kernel_constraint=rt.keras.constraints.MaxNorm(0.5),
                                                      bias_constraint="non_neg"),
                                rt.keras.layers.Dense(2, kernel_constraint=rt.keras.constraints.UnitNorm())])
    twin.compile(optimizer=rt.keras.optimizers.Adam(0.05), loss="mse")
    for variable, value in zip(twin.variables, start):
        variable.assign(value)
    for i in range(0, 32, 8):
        twin.train_function(x[i:i + 8], y[i:i + 8])
    for got, variable in zip(built.model.variables, twin.variables):
        np.testing.assert_allclose(got.numpy(), variable.numpy(), rtol=1e-5, atol=1e-6)
