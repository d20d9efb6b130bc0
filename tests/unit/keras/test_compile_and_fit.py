"""compile / fit / evaluate / predict / train_on_batch against Keras (same weights, shuffle off), the step
functions compile() makes, datasets, callbacks and the progress line."""
from __future__ import annotations

import re
import types

import numpy as np
import pytest

import runtime as rt
from transpiler.codegen import _variable_paths

L = rt.keras.layers


def _keras():
    pytest.importorskip("tensorflow")
    import keras
    return keras


def _data(seed=0, n=50, features=4, classes=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = np.argmax(x[:, :classes] + 0.5 * rng.standard_normal((n, classes)), axis=1)
    return x, y


def _mlp(lib, features=4, classes=3, output_activation=None):
    return lib.Sequential([lib.Input((features,)), lib.layers.Dense(8, activation="relu"),
                           lib.layers.Dense(classes, activation=output_activation)])


def _pair(make, compile_args, seed=0):
    """The same model in rt.keras and in Keras, with our initial weights copied over."""
    keras = _keras()
    rt.keras.utils.set_random_seed(seed)
    ours, theirs = make(rt.keras), make(keras)
    theirs.set_weights([v.numpy() for v in ours.weights])
    ours.compile(**compile_args(rt.keras))
    theirs.compile(**compile_args(keras), run_eagerly=True)           # no tf.function tracing: a faster test
    return ours, theirs


def _same_history(a: dict, b: dict, rtol=2e-5):
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=rtol, atol=1e-6, err_msg=key)


def _sparse_adam(lib):
    return dict(optimizer=lib.optimizers.Adam(0.02), loss=lib.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])


# ---------------------------------------------------------------------------
# Against Keras.

def test_sequential_fit_evaluate_predict_match_keras():
    ours, theirs = _pair(_mlp, _sparse_adam)
    x, y = _data()
    vx, vy = _data(1, n=20)
    h1 = ours.fit(x, y, batch_size=16, epochs=3, shuffle=False, validation_data=(vx, vy), verbose=0)
    h2 = theirs.fit(x, y, batch_size=16, epochs=3, shuffle=False, validation_data=(vx, vy), verbose=0)
    _same_history(h1.history, h2.history)
    assert list(h1.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert h1.epoch == [0, 1, 2] and ours.history is h1
    np.testing.assert_allclose(ours.evaluate(vx, vy, verbose=0), theirs.evaluate(vx, vy, verbose=0), rtol=2e-5)
    assert ours.evaluate(vx, vy, verbose=0, return_dict=True).keys() == {"accuracy", "loss"}
    np.testing.assert_allclose(ours.predict(vx, batch_size=7, verbose=0), theirs.predict(vx, verbose=0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ours.train_on_batch(x[:10], y[:10]), theirs.train_on_batch(x[:10], y[:10]), rtol=2e-5)
    np.testing.assert_allclose(ours.test_on_batch(x[:10], y[:10]), theirs.test_on_batch(x[:10], y[:10]), rtol=2e-5)
    np.testing.assert_allclose(ours.predict_on_batch(x[:3]), theirs.predict_on_batch(x[:3]), rtol=1e-5, atol=1e-6)
    assert ours.test_on_batch(x[:10], y[:10], return_dict=True).keys() == {"accuracy", "loss"}
    assert ours.metrics_names == theirs.metrics_names == ["loss", "compile_metrics"]


def test_functional_model_with_regression_losses_and_weights_match_keras():
    def make(lib):
        inputs = lib.Input((4,))
        hidden = lib.layers.Dense(6, activation="tanh", kernel_regularizer=lib.regularizers.L2(0.01))(inputs)
        return lib.Model(inputs, lib.layers.Dense(1)(hidden))
    ours, theirs = _pair(make, lambda lib: dict(optimizer=lib.optimizers.SGD(0.05, momentum=0.9), loss="huber",
                                                metrics=["mae", "mse"]))
    x, _ = _data(2, n=37)
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32))              # [batch] targets for [batch, 1] outputs
    weights = np.linspace(0.5, 1.5, 37).astype(np.float32)
    h1 = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, sample_weight=weights, verbose=0)
    h2 = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, sample_weight=weights, verbose=0)
    _same_history(h1.history, h2.history)
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0), rtol=2e-5)


def test_subclassed_model_and_binary_accuracy_match_keras():
    def make(lib):
        class Net(lib.Model):
            def __init__(self):
                super().__init__()
                self.hidden = lib.layers.Dense(5, activation="relu")
                self.out = lib.layers.Dense(1, activation="sigmoid")

            def call(self, x):
                return self.out(self.hidden(x))
        net = Net()
        net(np.zeros((1, 4), np.float32))
        return net
    ours, theirs = _pair(make, lambda lib: dict(optimizer="rmsprop", loss="binary_crossentropy",
                                                metrics=["accuracy"]))
    x, y = _data(3, n=40, classes=2)
    h1 = ours.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0)
    h2 = theirs.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0)
    _same_history(h1.history, h2.history)
    assert isinstance(ours._compile_metrics.metrics[0], rt.keras.metrics.BinaryAccuracy)


def test_custom_train_step_matches_keras():
    def make(lib):
        tf = rt if lib is rt.keras else __import__("tensorflow")

        class CustomModel(lib.Model):
            def train_step(self, data):
                x, y = data
                with tf.GradientTape() as tape:
                    y_pred = self(x, training=True)
                    loss = self.compute_loss(y=y, y_pred=y_pred)
                gradients = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
                for metric in self.metrics:
                    if metric.name == "loss":
                        metric.update_state(loss)
                    else:
                        metric.update_state(y, y_pred)
                return {m.name: m.result() for m in self.metrics}

        inputs = lib.Input(shape=(6,))
        return CustomModel(inputs, lib.layers.Dense(1)(inputs))
    ours, theirs = _pair(make, lambda lib: dict(optimizer="adam", loss="mse", metrics=["mae"]))
    rng = np.random.default_rng(4)
    x, y = rng.random((30, 6)).astype(np.float32), rng.random((30, 1)).astype(np.float32)
    _same_history(ours.fit(x, y, epochs=2, shuffle=False, verbose=0).history,
                  theirs.fit(x, y, epochs=2, shuffle=False, verbose=0).history)


def test_class_weight_and_validation_split_match_keras():
    ours, theirs = _pair(_mlp, _sparse_adam)
    x, y = _data(5, n=40)
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, validation_split=0.25, class_weight={0: 1.0, 1: 2.0, 2: 0.5},
                  verbose=0)
    _same_history(ours.fit(x, y, **kwargs).history, theirs.fit(x, y, **kwargs).history)


# ---------------------------------------------------------------------------
# The step functions compile() makes.

def test_compile_makes_step_functions_with_fixed_signatures():
    model = _mlp(rt.keras)
    model.compile(optimizer="adam", loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    assert isinstance(model.train_function, rt.Function)
    assert model.train_function.input_signature == (rt.TensorSpec([None, 4], rt.float32),
                                                    rt.TensorSpec([None], rt.int32))
    assert model.test_function.input_signature == model.train_function.input_signature
    assert model.predict_function.input_signature == (rt.TensorSpec([None, 4], rt.float32),)
    x, y = _data()
    model.fit(x, y.astype(np.int64), batch_size=16, epochs=2, verbose=0)      # int64 labels: converted, not retraced
    model.fit(x, y[:, None], batch_size=16, epochs=1, verbose=0)               # [batch, 1] labels: squeezed
    assert model.train_function.experimental_get_tracing_count() == 1
    regression = _mlp(rt.keras, classes=2)
    regression.compile(optimizer="sgd", loss="mse")
    assert regression.train_function.input_signature[1] == rt.TensorSpec([None, 2], rt.float32)


def test_step_function_reads_only_variables_a_built_module_can_find():
    """Every variable the train step uses is reachable from the model's attributes (the build finds them from a
    module global holding the model), including the optimizer's slots and the metrics' totals."""
    model = _mlp(rt.keras)
    model.compile(optimizer=rt.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    concrete = model.train_function.get_concrete_function()
    used = {id(op.attrs["variable"].get()) for op in concrete.graph.operations if "variable" in op.attrs}
    namespace = types.ModuleType("fake_models")
    namespace.model = model
    paths = _variable_paths(namespace)
    assert used and used <= set(paths)
    found = sorted(paths[i] for i in used)
    assert "model.optimizer.m_0" in found and "model.optimizer._learning_rate" in found
    assert "model._loss_tracker.total" in found and "model._compile_metrics._metrics[0].count" in found
    assert "model.layers[0].kernel" in found


def test_subclassed_model_compiled_before_its_first_call_gets_a_step_on_first_fit():
    class Net(rt.keras.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(2)

        def call(self, x):
            return self.d(x)
    net = Net()
    net.compile(optimizer="sgd", loss="mse")
    assert net.train_function is None
    x = np.ones((6, 3), np.float32)
    net.fit(x, np.zeros((6, 2), np.float32), batch_size=3, verbose=0)
    assert net.train_function.input_signature == (rt.TensorSpec([None, 3], rt.float32),
                                                  rt.TensorSpec([None, 2], rt.float32))


def test_run_eagerly_gives_the_same_numbers():
    x, y = _data(6)
    results = []
    for eager in (False, True):
        rt.keras.utils.set_random_seed(3)
        model = _mlp(rt.keras)
        model.compile(optimizer="adam", loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=eager)
        results.append(model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)


# ---------------------------------------------------------------------------
# Datasets, callbacks, output.

def test_fit_on_datasets_matches_fit_on_arrays():
    x, y = _data(7, n=48)
    histories = []
    for use_dataset in (False, True):
        rt.keras.utils.set_random_seed(2)
        model = _mlp(rt.keras)
        model.compile(**_sparse_adam(rt.keras))
        if use_dataset:
            ds = rt.data.Dataset.from_tensor_slices((x, y)).batch(16)
            histories.append(model.fit(ds, epochs=2, validation_data=ds, verbose=0).history)
            assert model.evaluate(ds, verbose=0)[0] == pytest.approx(model.evaluate(x, y, verbose=0)[0], rel=1e-6)
            np.testing.assert_allclose(model.predict(ds, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
        else:
            histories.append(model.fit(x, y, batch_size=16, epochs=2, shuffle=False, validation_data=(x, y),
                                       verbose=0).history)
    _same_history(histories[0], histories[1], rtol=1e-6)
    repeated = rt.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()
    model = _mlp(rt.keras)
    model.compile(**_sparse_adam(rt.keras))
    history = model.fit(repeated, epochs=2, steps_per_epoch=5, verbose=0)
    assert len(history.history["loss"]) == 2


def test_progress_lines_look_like_keras(capsys):
    model = _mlp(rt.keras)
    model.compile(**_sparse_adam(rt.keras))
    x, y = _data(8, n=40)
    model.fit(x, y, batch_size=16, epochs=2, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    assert re.fullmatch(r"3/3 ━{20} \d+s \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}", lines[1])
    model.fit(x, y, batch_size=16, epochs=1, verbose=2)
    (line,) = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"3/3 - \d+s - \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}", line)
    model.evaluate(x, y, verbose=2)
    assert re.fullmatch(r"2/2 - \d+s - \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}\n",
                        capsys.readouterr().out)                                   # batches of 32 by default
    model.fit(x, y, epochs=1, verbose=0)
    model.predict(x, verbose=0)
    assert capsys.readouterr().out == ""


def test_callbacks(tmp_path):
    model = _mlp(rt.keras)
    model.compile(optimizer=rt.keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    x, y = _data(9)
    seen = []
    stop = rt.keras.callbacks.EarlyStopping(monitor="loss", patience=1)
    log = rt.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((epoch, sorted(logs))))
    path = str(tmp_path / "w-{epoch:02d}.weights.h5")
    save = rt.keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
    schedule = rt.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.0 if epoch < 5 else 0.1)
    history = model.fit(x, y, epochs=10, shuffle=False, verbose=0, callbacks=[stop, log, save, schedule])
    assert len(history.history["loss"]) == 2 and stop.stopped_epoch == 1      # the loss never improves at lr 0
    assert seen[0] == (0, ["accuracy", "loss"])                  # before the scheduler added the rate
    assert (tmp_path / "w-02.weights.h5").exists()
    assert history.history["learning_rate"] == [0.0, 0.0]
    with pytest.raises(NotImplementedError, match="save_weights_only"):
        rt.keras.callbacks.ModelCheckpoint(path)


def test_errors_name_the_problem():
    model = _mlp(rt.keras)
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(*_data())
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x, y = _data()
    with pytest.raises(ValueError, match="Data cardinality is ambiguous: x sizes: 50; y sizes: 49"):
        model.fit(x, y[:-1], verbose=0)
    with pytest.raises(ValueError, match="`y` argument is not supported when using a dataset"):
        model.fit(rt.data.Dataset.from_tensor_slices((x, y)).batch(8), y, verbose=0)
    with pytest.raises(ValueError, match="No loss to compute"):
        model.compile(optimizer="sgd")
        model.fit(x, y, verbose=0)
