"""The "keras fit" class (issue 21): one epoch of ``model.fit`` on a built Sequential MLP against tf.keras ``fit``.

The model (``benchmarks/fit_model.py``: ``Dense(128, relu) -> Dense(10)`` on 784 features, Adam, sparse softmax
cross entropy from logits, the accuracy metric) is compiled when its module is imported, so the build compiles
the train step ``fit`` runs. Both libraries fit the same 4096 samples in batches of 32 (Keras's default) with the
same initial weights, the batches in order (``shuffle=False``) so that their first epochs see the same batches and
end with the same loss (the column "max |diff| from built"), and ``verbose=0`` (no progress bar). Each timed call
is one more epoch. tf.keras's ``fit`` runs its step as a ``tf.function`` (Keras 3 leaves XLA off on a CPU-only
machine, ``jit_compile="auto"``). Target: tf.keras's epoch / built epoch >= 2; the row also checks that ``fit``
ran the built step's native code and traced nothing.
"""
from __future__ import annotations

import numpy as np

from benchmarks import fit_model
from benchmarks.harness import Bench, Check, Row, Tolerance, bench_class


def fit_data():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((fit_model.SAMPLES, fit_model.FEATURES)).astype(np.float32)
    y = rng.integers(0, fit_model.CLASSES, fit_model.SAMPLES).astype(np.int32)
    return x, y


def fit_peers(weights, x, y) -> dict:
    """tf.keras ``fit`` of the same model from ``weights``."""
    def tf_keras_fit(tf):
        model = tf.keras.Sequential([tf.keras.Input((fit_model.FEATURES,)),
                                     tf.keras.layers.Dense(fit_model.HIDDEN, activation="relu"),
                                     tf.keras.layers.Dense(fit_model.CLASSES)])
        model.set_weights(weights)
        model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        return lambda: model.fit(x, y, batch_size=fit_model.BATCH, epochs=1, shuffle=False,
                                 verbose=0).history["loss"][-1]
    return {"tf.function": tf_keras_fit}


@bench_class("keras fit", wave="third", modules=("fit_model",))
def keras_fit(bench: Bench) -> list[Row]:
    built = bench.module("fit_model")
    model = built.model
    x, y = fit_data()
    weights = [w.numpy().copy() for w in model.weights]
    step = model.train_function

    def built_fit():
        return model.fit(x, y, batch_size=fit_model.BATCH, epochs=1, shuffle=False, verbose=0).history["loss"][-1]

    row = bench.measure(f"keras fit: one epoch, MLP {fit_model.FEATURES}-{fit_model.HIDDEN}-{fit_model.CLASSES}, "
                        f"{fit_model.SAMPLES} samples, batch {fit_model.BATCH}, Adam, accuracy",
                        {"built": built_fit, **fit_peers(weights, x, y)}, min_seconds=1.0,
                        # the first epoch's last loss, from the same weights and batches: float32 round-off of
                        # 128 Adam steps apart
                        tolerance=Tolerance(rtol=1e-3, atol=1e-4))
    native = [c.native for c in step.concrete_functions()]
    fit_native = bool(native) and all(native) and step.experimental_get_tracing_count() == 0 \
        and model.train_function is step
    row.checks.append(Check("fit ran the built step natively (1 = yes)", float(fit_native), 1.0, unit=""))
    bench.faster_than(row, "tf.function", 2.0)
    return [row]
