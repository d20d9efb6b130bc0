"""``rt.keras``: layers, models, losses and optimizers against their definitions and against Keras (TensorFlow).

The Keras comparisons copy our initial weights into the Keras objects and compare results step by step.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

keras = None


def _keras():
    global keras
    if keras is None:
        pytest.importorskip("tensorflow")
        import keras as module
        keras = module
    return keras


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# Initialization and building.

def test_weights_initialize_like_keras_and_repeat_with_a_seed():
    rt.keras.utils.set_random_seed(5)
    a = rt.keras.layers.Dense(300)
    a.build((None, 200))
    rt.keras.utils.set_random_seed(5)
    b = rt.keras.layers.Dense(300)
    b.build((None, 200))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    limit = np.sqrt(6 / (200 + 300))
    kernel = a.kernel.numpy()
    assert kernel.dtype == np.float32 and np.abs(kernel).max() <= limit
    assert abs(kernel.std() - limit / np.sqrt(3)) < 0.01 * limit        # uniform on [-limit, limit]
    np.testing.assert_array_equal(a.bias.numpy(), np.zeros(300, np.float32))
    conv = rt.keras.layers.Conv2D(8, 3)
    conv.build((None, 10, 10, 4))
    assert np.abs(conv.kernel.numpy()).max() <= np.sqrt(6 / (9 * 4 + 9 * 8))


def test_sequential_build_shapes_and_trainable_variables():
    model = rt.keras.Sequential([rt.keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
                                 rt.keras.layers.MaxPool2D(), rt.keras.layers.Flatten(),
                                 rt.keras.layers.Dense(5)])
    model.build(input_shape=(None, 8, 8, 2))
    assert [tuple(v.shape) for v in model.trainable_variables] == [(3, 3, 2, 4), (4,), (64, 5), (5,)]
    out = model(np.ones((3, 8, 8, 2), np.float32))
    assert out.shape == (3, 5) and out.dtype is rt.float32
    model.layers[0].trainable = False
    assert [tuple(v.shape) for v in model.trainable_variables] == [(64, 5), (5,)]


def test_subclassed_model_builds_by_calling_call():
    class Net(rt.keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = rt.keras.layers.Dense(4, activation="tanh")
            self.out = rt.keras.layers.Dense(2, use_bias=False)

        def call(self, x):
            return self.out(self.hidden(x))
    net = Net()
    net.build((None, 3))
    assert [tuple(v.shape) for v in net.trainable_variables] == [(3, 4), (4,), (4, 2)]
    assert net(np.zeros((1, 3), np.float64)).dtype is rt.float32          # inputs are cast to the layer dtype


def test_dense_needs_a_known_last_dimension():
    with pytest.raises(ValueError, match="last dimension"):
        rt.keras.layers.Dense(2).build((None, None))


# ---------------------------------------------------------------------------
# Against Keras.

def _copy_weights(ours, theirs):
    theirs.set_weights([v.numpy() for v in ours.trainable_variables])


def test_layers_match_keras():
    k = _keras()
    rng = _rng(1)
    images = rng.standard_normal((2, 9, 7, 3)).astype(np.float32)
    cases = [
        (rt.keras.layers.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu"),
         k.layers.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu"), images),
        (rt.keras.layers.Conv2D(5, 3), k.layers.Conv2D(5, 3), images),
        (rt.keras.layers.MaxPool2D((2, 3), padding="same"), k.layers.MaxPool2D((2, 3), padding="same"), images),
        (rt.keras.layers.Flatten(), k.layers.Flatten(), images),
        (rt.keras.layers.Dense(6, activation="softmax"), k.layers.Dense(6, activation="softmax"),
         rng.standard_normal((4, 5)).astype(np.float32)),
        (rt.keras.layers.Dense(3), k.layers.Dense(3), rng.standard_normal((2, 4, 5)).astype(np.float32)),
    ]
    for ours, theirs, x in cases:
        got = ours(x)
        theirs.build(x.shape)
        _copy_weights(ours, theirs)
        np.testing.assert_allclose(got.numpy(), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(rt.function(ours)(x).numpy(), got.numpy(), rtol=1e-6, atol=1e-6)


def test_losses_match_keras():
    k = _keras()
    rng = _rng(2)
    y_pred = rng.standard_normal((6, 4)).astype(np.float32)
    y_true = rng.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([0, 3, 1, 2, 2, 0], np.int32)
    probs = np.exp(y_pred) / np.exp(y_pred).sum(1, keepdims=True)
    pairs = [
        (rt.keras.losses.MeanSquaredError()(y_true, y_pred), k.losses.MeanSquaredError()(y_true, y_pred)),
        (rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, y_pred),
         k.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, y_pred)),
        (rt.keras.losses.SparseCategoricalCrossentropy()(labels, probs),
         k.losses.SparseCategoricalCrossentropy()(labels, probs)),
        (rt.keras.losses.SparseCategoricalCrossentropy()(labels[:, None].astype(np.float32), probs),
         k.losses.SparseCategoricalCrossentropy()(labels[:, None].astype(np.float32), probs)),
    ]
    for ours, theirs in pairs:
        assert ours.shape == ()
        np.testing.assert_allclose(ours.numpy(), np.asarray(theirs), rtol=1e-5)


@pytest.mark.parametrize("name", ["sgd", "momentum", "nesterov", "adam"])
def test_optimizers_match_keras_step_by_step(name):
    k = _keras()
    import tensorflow as tf
    make = {"sgd": (lambda m: m.SGD(0.1)), "momentum": (lambda m: m.SGD(0.05, momentum=0.9)),
            "nesterov": (lambda m: m.SGD(0.05, momentum=0.9, nesterov=True)),
            "adam": (lambda m: m.Adam(0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-6))}[name]
    start = _rng(3).standard_normal((3, 2)).astype(np.float32)
    ours, theirs = rt.Variable(start), tf.Variable(start)
    opt, kopt = make(rt.keras.optimizers), make(k.optimizers)
    targets = [_rng(10 + i).standard_normal((3, 2)).astype(np.float32) for i in range(6)]

    @rt.function
    def step(target):
        with rt.GradientTape() as tape:
            loss = rt.reduce_sum(rt.square(ours - target) * rt.abs(ours))
        opt.apply_gradients(zip(tape.gradient(loss, [ours]), [ours]))

    for i, target in enumerate(targets):
        if i < 2:                                # eager steps first, then the same optimizer in a Function
            with rt.GradientTape() as tape:
                loss = rt.reduce_sum(rt.square(ours - target) * rt.abs(ours))
            opt.apply_gradients(zip(tape.gradient(loss, [ours]), [ours]))
        else:
            step(rt.constant(target))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(theirs - target) * tf.abs(theirs))
        kopt.apply_gradients(zip(tape.gradient(loss, [theirs]), [theirs]))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {i}")
    assert int(opt.iterations.numpy()) == len(targets)


# ---------------------------------------------------------------------------
# Slot variables: created on the first step.

def test_slots_are_created_on_the_first_step_and_the_guide_error():
    opt = rt.keras.optimizers.Adam(0.1)
    assert opt.variables == []
    w = rt.Variable([1.0, 2.0])
    opt.apply_gradients([(rt.constant([1.0, 1.0]), w)])
    assert [v.name for v in opt.variables] == ["adam/iterations", f"adam/{w.name}/m", f"adam/{w.name}/v"]
    assert opt.m_0 is opt.get_slot(w, "m")

    @rt.function
    def train(w, optimizer):
        with rt.GradientTape() as tape:
            loss = rt.reduce_sum(w * w)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    v = rt.Variable(3.0)
    train(v, rt.keras.optimizers.SGD(0.1, momentum=0.5))
    with pytest.raises(ValueError, match="singleton"):
        train(v, rt.keras.optimizers.SGD(0.1, momentum=0.5))


def test_training_in_a_function_matches_eager_training():
    rt.keras.utils.set_random_seed(0)
    rng = _rng(4)
    xs = rng.standard_normal((32, 4)).astype(np.float32)
    ys = (xs[:, 0] > xs[:, 1]).astype(np.int32)

    def make():
        rt.keras.utils.set_random_seed(1)
        model = rt.keras.Sequential([rt.keras.layers.Dense(8, activation="relu"), rt.keras.layers.Dense(2)])
        model.build((None, 4))
        return model, rt.keras.optimizers.Adam(0.05), rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step(model, optimizer, loss_fn, x, y):
        with rt.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    eager = make()
    graph = make()
    step = rt.function(lambda x, y: train_step(*graph, x, y))
    losses = []
    for _ in range(20):
        loss_e = train_step(*eager, rt.constant(xs), rt.constant(ys))
        losses.append(float(step(xs, ys)))
        np.testing.assert_allclose(losses[-1], float(loss_e), rtol=1e-5)
    assert losses[-1] < losses[0] / 2
    for a, b in zip(eager[0].trainable_variables, graph[0].trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert step.experimental_get_tracing_count() == 1


def test_training_argument_reaches_layers_that_take_it():
    class Noisy(rt.keras.layers.Layer):
        def call(self, inputs, training=None):
            return inputs + 1.0 if training else inputs

    model = rt.keras.Sequential([rt.keras.layers.Dense(2, kernel_initializer="ones"), Noisy()])
    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(model(x, training=True).numpy(), [[4.0, 4.0]])
    np.testing.assert_array_equal(model(x).numpy(), [[3.0, 3.0]])


def test_loss_reduction_argument_as_in_keras():
    y_true = rt.constant([[1.0, 2.0], [3.0, 4.0]])
    y_pred = rt.constant([[1.5, 2.0], [2.0, 5.0]])
    per_sample = [0.125, 1.0]
    mse = rt.keras.losses.MeanSquaredError
    assert float(mse()(y_true, y_pred)) == pytest.approx(0.5625)
    assert float(mse(reduction="sum")(y_true, y_pred)) == pytest.approx(1.125)
    assert mse(reduction=None)(y_true, y_pred).numpy().tolist() == per_sample
    assert mse(reduction="none")(y_true, y_pred).numpy().tolist() == per_sample
    scce = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    logits = rt.constant([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    both = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)(rt.constant([0, 2]), logits)
    assert both.shape == (2,)
    assert float(scce(rt.constant([0, 2]), logits)) == pytest.approx(float(rt.reduce_sum(both)))
    with pytest.raises(ValueError, match="reduction"):
        mse(reduction="avg")


def test_dense_computes_integer_inputs_in_its_dtype():
    layer = rt.keras.layers.Dense(2, kernel_initializer="ones")
    out = layer(rt.constant([[1, 2]]))
    assert out.dtype == rt.float32 and out.numpy().tolist() == [[3.0, 3.0]]
    assert rt.function(layer)(rt.constant([[1, 2]], rt.int64)).numpy().tolist() == [[3.0, 3.0]]
