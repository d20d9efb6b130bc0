"""Training steps built ahead of time: forward, GradientTape, loss and optimizer update in one native function.

One module is built for the whole file. Each training step runs natively for a few steps, then the
same model is trained again from the same start eagerly: losses and weights must agree (float32
tolerance), the loss must fall, and the variables -- the optimizer's slots included, which the first
step creates -- must be the module's own objects, updated in place.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import build_source

import runtime as rt

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

TRAINING = '''
import numpy as np
import runtime as rt

rt.keras.utils.set_random_seed(3)
mlp = rt.keras.Sequential([rt.keras.layers.Dense(12, activation="tanh"), rt.keras.layers.Dense(3)])
mlp.build((None, 4))
adam = rt.keras.optimizers.Adam(learning_rate=0.03)
xent = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@rt.function(input_signature=[rt.TensorSpec([None, 4], rt.float32), rt.TensorSpec([None], rt.int32)])
def mlp_step(x, y):
    with rt.GradientTape() as tape:
        loss = xent(y, mlp(x))
    grads = tape.gradient(loss, mlp.trainable_variables)
    adam.apply_gradients(zip(grads, mlp.trainable_variables))
    return loss

conv = rt.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
head = rt.keras.layers.Dense(2)
cnn = rt.keras.Sequential([conv, rt.keras.layers.MaxPool2D(), rt.keras.layers.Flatten(), head])
cnn.build((None, 6, 6, 1))
sgd = rt.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
mse = rt.keras.losses.MeanSquaredError()


@rt.function(input_signature=[rt.TensorSpec([None, 6, 6, 1], rt.float32), rt.TensorSpec([None, 2], rt.float32)])
def cnn_step(x, y):
    with rt.GradientTape() as tape:
        loss = mse(y, cnn(x))
    sgd.apply_gradients(zip(tape.gradient(loss, cnn.trainable_variables), cnn.trainable_variables))
    return loss


@rt.function(input_signature=[rt.TensorSpec([], rt.float32), rt.TensorSpec([], rt.int32)])
def power_gradient(x, n):
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in rt.range(n):
            y = y * x
    return tape.gradient(y, x)
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("training")
    module = build_source(root, "rt_training_steps", TRAINING)
    return module


def _train_twice(step, weights, optimizer, x, y, steps):
    """Native training, then eager training from the same start: (native losses, eager losses, native weights)."""
    start = [v.numpy().copy() for v in weights]
    storage = [v for v in weights]
    native = [float(step(x, y)) for _ in range(steps)]
    assert all(a is b for a, b in zip(weights, storage))                  # updated in place, same objects
    trained = [v.numpy().copy() for v in weights]
    assert not any(np.array_equal(a, b) for a, b in zip(start, trained))
    for variable, value in zip(weights, start):
        variable.assign(value)
    for variable in optimizer.variables:
        variable.assign(np.zeros(variable.shape.as_list(), variable.dtype.np))
    rt.config.run_functions_eagerly(True)
    try:
        eager = [float(step(x, y)) for _ in range(steps)]
    finally:
        rt.config.run_functions_eagerly(False)
    for got, want in zip(trained, [v.numpy() for v in weights]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(native, eager, rtol=1e-4, atol=1e-6)
    return native


def test_mlp_step_is_native_and_trains_like_eager(built):
    concrete = built.mlp_step.get_concrete_function()
    assert concrete.native
    # the build found the weights inside the model (callable) and the slots inside the optimizer, after tracing
    assert [h.path for h in concrete._entry["variables"]][:3] == [
        "mlp.layers[0].kernel", "mlp.layers[0].bias", "mlp.layers[1].kernel"]
    assert built.adam.variables == []                    # no step yet in this process: no slots
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 4)).astype(np.float32)
    y = (np.argmax(x[:, :3], axis=1)).astype(np.int32)
    losses = _train_twice(built.mlp_step, list(built.mlp.trainable_variables), built.adam, x, y, steps=30)
    assert losses[-1] < losses[0] / 3
    # the first native call created the slots where the build's trace had them
    assert built.adam.m_0.shape == built.mlp.layers[0].kernel.shape and int(built.adam.iterations.numpy()) == 30


def test_cnn_step_is_native_and_trains_like_eager(built):
    concrete = built.cnn_step.get_concrete_function()
    assert concrete.native
    # the build found the weights inside the model (callable) and the slots inside the optimizer, after tracing
    assert sorted(h.path for h in concrete._entry["variables"]) == [
        "conv.bias", "conv.kernel", "head.bias", "head.kernel", "sgd._learning_rate", "sgd.iterations",
        "sgd.momentum_0", "sgd.momentum_1", "sgd.momentum_2", "sgd.momentum_3"]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 6, 6, 1)).astype(np.float32)
    y = np.stack([x.mean(axis=(1, 2, 3)), x[:, :3].max(axis=(1, 2, 3))], axis=1).astype(np.float32)
    losses = _train_twice(built.cnn_step, list(built.cnn.trainable_variables), built.sgd, x, y, steps=15)
    assert losses[-1] < losses[0]


def test_loop_gradient_is_native(built):
    concrete = built.power_gradient.get_concrete_function()
    assert concrete.native
    for x, n in ((1.5, 3), (0.5, 0), (-2.0, 5)):
        got = built.power_gradient(rt.constant(x), rt.constant(n))
        np.testing.assert_allclose(got.numpy(), (n + 1) * x ** n, rtol=1e-6)


def test_gradient_of_a_built_function_under_an_eager_tape(built):
    x = rt.constant(1.5)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = built.power_gradient(x, rt.constant(3))          # d/dx of 4 x^3
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 12 * 1.5 ** 2, rtol=1e-6)
