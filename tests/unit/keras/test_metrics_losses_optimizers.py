"""Metrics (state in variables, inside rt.function too), the new losses and optimizers, against Keras and hand values."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

M = rt.keras.metrics


def _keras():
    pytest.importorskip("tensorflow")
    import keras
    return keras


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# Metrics.

def test_mean_and_sum_by_hand():
    m = M.Mean(name="avg")
    assert float(m.result()) == 0.0                         # no value yet: 0, not nan
    m.update_state([1.0, 2.0, 3.0])
    m.update_state([[4.0, 6.0]])                            # rank 2: one value per sample (the mean)
    assert float(m.result()) == pytest.approx((1 + 2 + 3 + 5) / 4)
    assert [v.name for v in m.variables] == ["total", "count"]                # Keras 3's names and paths
    assert [v.path for v in m.variables] == ["avg/total", "avg/count"]
    w = M.Mean()
    w.update_state([1.0, 3.0], sample_weight=[3.0, 1.0])
    assert float(w.result()) == pytest.approx(1.5)
    assert float(w(10.0, sample_weight=2.0)) == pytest.approx((3 + 3 + 20) / 6)
    s = M.Sum()
    s.update_state([1.0, 2.0])
    s.update_state(4.0)
    assert float(s.result()) == 7.0
    s.reset_state()
    assert float(s.result()) == 0.0
    w.reset_states()
    assert float(w.result()) == 0.0


def test_accuracies_by_hand():
    acc = M.SparseCategoricalAccuracy()
    acc.update_state([1, 2], [[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    acc.update_state(np.array([[0]]), [[0.5, 0.2, 0.3]])      # [batch, 1] labels
    assert float(acc.result()) == pytest.approx(2 / 3)
    cat = M.CategoricalAccuracy()
    cat.update_state([[0, 1], [1, 0]], [[0.3, 0.7], [0.4, 0.6]])
    assert float(cat.result()) == 0.5
    binary = M.BinaryAccuracy(threshold=0.6)
    binary.update_state([1, 0, 1], [0.7, 0.65, 0.2])
    assert float(binary.result()) == pytest.approx(1 / 3)
    exact = M.Accuracy()
    exact.update_state([1, 2, 3], [1, 2, 4], sample_weight=[1, 1, 2])
    assert float(exact.result()) == 0.5


CASES = ["Mean", "SparseCategoricalAccuracy", "CategoricalAccuracy", "Accuracy", "BinaryAccuracy",
         "MeanSquaredError", "MeanAbsoluteError", "SparseCategoricalCrossentropy", "CategoricalCrossentropy",
         "BinaryCrossentropy", "RootMeanSquaredError"]


def _metric_data(name, rng):
    probs = rng.dirichlet(np.ones(4), 6).astype(np.float32)
    labels = rng.integers(0, 4, 6)
    if name == "Mean":
        return (rng.standard_normal(6).astype(np.float32),)
    if name in ("SparseCategoricalAccuracy", "SparseCategoricalCrossentropy"):
        return labels, probs
    if name in ("CategoricalAccuracy", "CategoricalCrossentropy"):
        return np.eye(4, dtype=np.float32)[labels], probs
    if name == "Accuracy":
        return labels, rng.integers(0, 4, 6)
    if name in ("BinaryAccuracy", "BinaryCrossentropy"):
        return rng.integers(0, 2, (6, 1)).astype(np.float32), rng.uniform(0, 1, (6, 1)).astype(np.float32)
    return rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32)


@pytest.mark.parametrize("name", CASES)
def test_metrics_match_keras_eagerly_and_in_a_function(name):
    keras = _keras()
    rng = _rng(CASES.index(name))
    ours, theirs, traced = getattr(M, name)(), getattr(keras.metrics, name)(), getattr(M, name)()
    assert ours.name == theirs.name
    update = rt.function(lambda *args: traced.update_state(*args), autograph=False)
    for step in range(3):
        args = _metric_data(name, rng)
        weight = rng.uniform(0.5, 2.0, 6).astype(np.float32) if step == 1 else None
        kwargs = {} if weight is None else {"sample_weight": weight}
        ours.update_state(*args, **kwargs)
        theirs.update_state(*args, **kwargs)
        if weight is None:
            update(*args)
        else:
            traced.update_state(*args, sample_weight=weight)
    expected = float(theirs.result())
    assert float(ours.result()) == pytest.approx(expected, rel=1e-5)
    assert float(traced.result()) == pytest.approx(expected, rel=1e-5)
    assert update.experimental_get_tracing_count() <= 1 if name != "Mean" else True
    ours.reset_state()
    theirs.reset_state()
    assert float(ours.result()) == float(theirs.result()) == 0.0


def test_metric_state_updates_in_a_traced_train_step():
    loss_metric = M.Mean(name="train_loss")
    accuracy = M.SparseCategoricalAccuracy(name="train_accuracy")

    @rt.function(autograph=False)
    def step(labels, logits):
        loss = rt.reduce_mean(rt.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        loss_metric(loss)
        accuracy(labels, logits)

    logits = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]], np.float32)
    step(np.array([0, 1, 1], np.int32), logits)
    step(np.array([1, 1, 0], np.int32), logits)
    assert step.experimental_get_tracing_count() == 1
    assert float(accuracy.result()) == pytest.approx(4 / 6)
    assert float(loss_metric.count.numpy()) == 2.0
    accuracy.reset_state()
    step(np.array([0, 1, 0], np.int32), logits)
    assert float(accuracy.result()) == 1.0


def test_metrics_get():
    assert isinstance(M.get("mae"), M.MeanAbsoluteError)
    assert isinstance(M.get(lambda t, p: t), M.MeanMetricWrapper)
    with pytest.raises(ValueError, match="unknown metric"):
        M.get("maee")


# ---------------------------------------------------------------------------
# Losses.

LOSSES = ["MeanSquaredError", "MeanAbsoluteError", "Huber", "BinaryCrossentropy", "CategoricalCrossentropy",
          "SparseCategoricalCrossentropy"]


def _loss_data(name, rng):
    logits = rng.standard_normal((5, 3)).astype(np.float32) * 3
    probs = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
    if name == "BinaryCrossentropy":
        return rng.integers(0, 2, (5, 3)).astype(np.float32), 1 / (1 + np.exp(-logits)), logits
    if name == "CategoricalCrossentropy":
        return np.eye(3, dtype=np.float32)[rng.integers(0, 3, 5)], probs, logits
    if name == "SparseCategoricalCrossentropy":
        return rng.integers(0, 3, 5), probs, logits
    return rng.standard_normal((5, 3)).astype(np.float32), logits, None


@pytest.mark.parametrize("name", LOSSES)
def test_losses_match_keras(name):
    keras = _keras()
    rng = _rng(7)
    y_true, y_pred, logits = _loss_data(name, rng)
    weight = rng.uniform(0.1, 2.0, 5).astype(np.float32)
    for kwargs in ({}, {"reduction": "sum"}, {"reduction": None}, {"reduction": "mean_with_sample_weight"}):
        ours, theirs = getattr(rt.keras.losses, name)(**kwargs), getattr(keras.losses, name)(**kwargs)
        for sw in (None, weight):
            np.testing.assert_allclose(ours(y_true, y_pred, sample_weight=sw).numpy(),
                                       np.asarray(theirs(y_true, y_pred, sample_weight=sw)), rtol=2e-5, atol=1e-6)
    if logits is not None:
        ours = getattr(rt.keras.losses, name)(from_logits=True)
        theirs = getattr(keras.losses, name)(from_logits=True)
        np.testing.assert_allclose(ours(y_true, logits).numpy(), np.asarray(theirs(y_true, logits)), rtol=2e-5)
    functional = {"MeanSquaredError": "mean_squared_error", "MeanAbsoluteError": "mean_absolute_error",
                  "Huber": "huber", "BinaryCrossentropy": "binary_crossentropy",
                  "CategoricalCrossentropy": "categorical_crossentropy",
                  "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy"}[name]
    np.testing.assert_allclose(getattr(rt.keras.losses, functional)(y_true, y_pred).numpy(),
                               np.asarray(getattr(keras.losses, functional)(y_true, y_pred)), rtol=2e-5, atol=1e-6)


def test_label_smoothing_and_rank_matching_match_keras():
    keras = _keras()
    rng = _rng(8)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)]
    p = rng.dirichlet(np.ones(4), 6).astype(np.float32)
    for cls in ("CategoricalCrossentropy", "BinaryCrossentropy"):
        ours = getattr(rt.keras.losses, cls)(label_smoothing=0.1)
        theirs = getattr(keras.losses, cls)(label_smoothing=0.1)
        np.testing.assert_allclose(ours(y, p).numpy(), np.asarray(theirs(y, p)), rtol=2e-5)
    flat_true, column_pred = rng.standard_normal(6).astype(np.float32), rng.standard_normal((6, 1)).astype(np.float32)
    np.testing.assert_allclose(rt.keras.losses.MeanSquaredError()(flat_true, column_pred).numpy(),
                               np.asarray(keras.losses.MeanSquaredError()(flat_true, column_pred)), rtol=1e-6)
    assert float(rt.keras.losses.mse([1.0, 2.0], [[1.0], [4.0]]).numpy()[1]) == 4.0


def test_probabilities_from_a_sigmoid_or_softmax_activation_use_their_logits():
    """As Keras: the cross entropy of a sigmoid's output is computed from its logits (no clipping)."""
    logits = np.array([[40.0], [-40.0]], np.float32)
    y = np.array([[0.0], [1.0]], np.float32)
    bce = rt.keras.losses.BinaryCrossentropy()
    exact = float(rt.keras.losses.BinaryCrossentropy(from_logits=True)(y, logits))
    assert exact == pytest.approx(40.0, rel=1e-6)
    assert float(bce(y, rt.keras.activations.sigmoid(logits))) == pytest.approx(exact, rel=1e-6)
    traced = rt.function(lambda v: bce(y, rt.sigmoid(v)), autograph=False)
    assert float(traced(logits)) == pytest.approx(exact, rel=1e-6)
    clipped = (-np.log(np.float32(1) - np.float32(1 - 1e-7)) - np.log(np.float32(1e-7))) / 2
    assert float(bce(y, rt.sigmoid(logits))) == pytest.approx(clipped, rel=1e-5)   # plain probabilities: clipped
    cce = rt.keras.losses.SparseCategoricalCrossentropy()
    big = np.array([[50.0, 0.0]], np.float32)
    assert float(cce([1], rt.keras.activations.softmax(big))) == pytest.approx(50.0, rel=1e-6)


def test_loss_arguments_are_checked():
    with pytest.raises(ValueError, match="reduction"):
        rt.keras.losses.Huber(reduction="avg")
    with pytest.raises(ValueError, match="same shape"):
        rt.keras.losses.binary_crossentropy(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="unknown loss"):
        rt.keras.losses.get("msee")


# ---------------------------------------------------------------------------
# Optimizers.

OPTIMIZERS = {
    "rmsprop": lambda m: m.RMSprop(0.01),
    "rmsprop_momentum_centered": lambda m: m.RMSprop(0.01, rho=0.8, momentum=0.5, centered=True),
    "adagrad": lambda m: m.Adagrad(0.1, initial_accumulator_value=0.2),
    "adamw": lambda m: m.AdamW(0.02, weight_decay=0.1),
    "sgd_weight_decay": lambda m: m.SGD(0.1, momentum=0.9, weight_decay=0.05),
    "adam_clipnorm": lambda m: m.Adam(0.05, clipnorm=0.5),
    "adam_clipvalue": lambda m: m.Adam(0.05, clipvalue=0.1),
    "sgd_global_clipnorm": lambda m: m.SGD(0.1, global_clipnorm=0.3),
    "sgd_exponential_decay": lambda m: m.SGD(m.schedules.ExponentialDecay(0.5, decay_steps=2, decay_rate=0.5)),
    "sgd_piecewise": lambda m: m.SGD(m.schedules.PiecewiseConstantDecay([1, 3], [0.3, 0.1, 0.01])),
    "adam_cosine": lambda m: m.Adam(m.schedules.CosineDecay(0.1, decay_steps=4, alpha=0.1)),
    "sgd_inverse_time": lambda m: m.SGD(m.schedules.InverseTimeDecay(0.2, 1, 0.5, staircase=True)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_match_keras_step_by_step(name):
    keras = _keras()
    import tensorflow as tf
    start = [_rng(1).standard_normal((3, 2)).astype(np.float32), _rng(2).standard_normal(2).astype(np.float32)]
    ours, theirs = [rt.Variable(s) for s in start], [tf.Variable(s) for s in start]
    opt, kopt = OPTIMIZERS[name](rt.keras.optimizers), OPTIMIZERS[name](keras.optimizers)
    targets = [_rng(10 + i).standard_normal((3, 2)).astype(np.float32) for i in range(5)]

    def loss(vs, target, lib):
        return lib.reduce_sum(lib.square(vs[0] - target) * lib.abs(vs[0])) + lib.reduce_sum(vs[1] * vs[1])

    @rt.function(autograph=False)
    def step(target):
        with rt.GradientTape() as tape:
            value = loss(ours, target, rt)
        opt.apply_gradients(zip(tape.gradient(value, ours), ours))

    for i, target in enumerate(targets):
        if i < 2:
            with rt.GradientTape() as tape:
                value = loss(ours, target, rt)
            opt.apply_gradients(zip(tape.gradient(value, ours), ours))
        else:
            step(rt.constant(target))
        with tf.GradientTape() as tape:
            value = loss(theirs, target, tf)
        kopt.apply_gradients(zip(tape.gradient(value, theirs), theirs))
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {i}")
    assert int(opt.iterations.numpy()) == len(targets)


def test_learning_rate_is_a_variable_traced_steps_read():
    w = rt.Variable(1.0)
    opt = rt.keras.optimizers.SGD(0.5)
    assert isinstance(opt.learning_rate, rt.Variable) and float(opt.learning_rate) == 0.5

    @rt.function(autograph=False)
    def step():
        opt.apply_gradients([(rt.constant(1.0), w)])
    step()
    opt.learning_rate = 0.25
    step()
    assert float(w.numpy()) == pytest.approx(1.0 - 0.5 - 0.25)
    assert step.experimental_get_tracing_count() == 1
    assert opt.variables == [opt.iterations]              # the state a fresh start zeroes: not the learning rate
    scheduled = rt.keras.optimizers.SGD(rt.keras.optimizers.schedules.ExponentialDecay(1.0, 1, 0.5))
    with pytest.raises(TypeError, match="schedule"):
        scheduled.learning_rate = 0.1
    assert float(scheduled.learning_rate) == 1.0


def test_apply_takes_gradients_and_variables_separately():
    w = rt.Variable([1.0, 2.0])
    opt = rt.keras.optimizers.SGD(0.5)
    opt.apply([rt.constant([1.0, 1.0])], [w])
    assert w.numpy().tolist() == [0.5, 1.5]
    with pytest.raises(ValueError, match="2 gradients for 1 variables"):
        opt.apply([rt.constant([1.0, 1.0]), rt.constant(1.0)], [w])


def test_optimizer_names_and_errors():
    assert isinstance(rt.keras.optimizers.get("rmsprop"), rt.keras.optimizers.RMSprop)
    with pytest.raises(ValueError, match="unknown optimizer"):
        rt.keras.optimizers.get("adamx")
    with pytest.raises(ValueError, match="clipnorm"):
        rt.keras.optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
