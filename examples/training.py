"""Guide: a whole training step in one Function -- forward, GradientTape, loss, Adam update -- built ahead of time.

An MLP classifies the points of a small synthetic dataset (three Gaussian blobs in the plane).
``train_step`` has an ``input_signature``, so the build compiles it: the backward pass is part
of its graph, the model's weights and the optimizer's slots are captured by reference (the build
finds them from the module's globals: ``model.layers[0].kernel``, ``optimizer.m_0`` ...), and the
native code updates them in place. The optimizer creates its slots on its first step: at build
time that is the trace; in the built module, the first native call creates them again at the
same place.

``run()`` trains natively for a few steps, then trains the same model again from the same start,
eagerly, and compares the losses and the weights.
"""
import numpy as np

import runtime as rt
from examples._check import all_close, train_natively_and_eagerly

STEPS = 25
CLASSES = 3


def blobs(n_per_class=40, seed=0):
    """Points around three centres, labelled by centre: float32 [3n, 2] and int32 [3n]."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
    xs = np.concatenate([c + rng.normal(scale=0.6, size=(n_per_class, 2)) for c in centres]).astype(np.float32)
    ys = np.repeat(np.arange(CLASSES), n_per_class).astype(np.int32)
    return xs, ys


rt.keras.utils.set_random_seed(0)
model = rt.keras.Sequential([rt.keras.layers.Dense(16, activation="relu"), rt.keras.layers.Dense(CLASSES)])
model.build(input_shape=(None, 2))
optimizer = rt.keras.optimizers.Adam(learning_rate=0.05)
loss_fn = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@rt.function(input_signature=[rt.TensorSpec([None, 2], rt.float32), rt.TensorSpec([None], rt.int32)])
def train_step(x, y):
    with rt.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


# native sums run in another order than numpy's: float32 tolerance
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def run():
    xs, ys = blobs()
    native_losses, eager_losses, native_weights, eager_weights = train_natively_and_eagerly(
        train_step, model, optimizer, (xs, ys), STEPS)
    accuracy = float(np.mean(np.argmax(model(xs).numpy(), axis=1) == ys))
    return [
        (f"loss falls over {STEPS} native steps", native_losses[-1] < native_losses[0] / 4, True),
        ("native losses equal eager training's (float32 tolerance)",
         all_close(native_losses, eager_losses, **TOLERANCE), True),
        (f"weights after {STEPS} native steps equal eager training's",
         all_close(native_weights, eager_weights, **TOLERANCE), True),
        ("the optimizer's slots exist (created by the first step)", len(optimizer.variables),
         1 + 2 * len(native_weights)),
        ("training accuracy above 90%", accuracy > 0.9, True),
    ]
