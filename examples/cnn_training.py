"""Guide: a small convolutional network's training step -- Conv2D, MaxPool2D, Flatten, Dense, sparse softmax
cross entropy, Adam -- built ahead of time, every op (the gradients of the convolution and of the pooling
included) in native code.

The network tells three kinds of 8x8 images apart: a horizontal bar, a vertical bar and a diagonal, each at
a random place, with noise. ``run()`` trains natively for a few steps, then trains the same network again
from the same start, eagerly, and compares the losses and the weights.
"""
import numpy as np

import runtime as rt
from examples._check import all_close, train_natively_and_eagerly

STEPS = 30
SIZE = 8
CLASSES = 3


def bars(n_per_class=20, seed=0):
    """Noisy images of bars, labelled by direction: float32 [3n, 8, 8, 1] and int32 [3n]."""
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label in range(CLASSES):
        for _ in range(n_per_class):
            image = rng.normal(scale=0.3, size=(SIZE, SIZE))
            at = rng.integers(1, SIZE - 1)
            if label == 0:
                image[at, 1:-1] += 1.0
            elif label == 1:
                image[1:-1, at] += 1.0
            else:
                image[np.arange(SIZE), (np.arange(SIZE) + at) % SIZE] += 1.0
            images.append(image)
            labels.append(label)
    return np.asarray(images, np.float32)[..., None], np.asarray(labels, np.int32)


rt.keras.utils.set_random_seed(1)
model = rt.keras.Sequential([
    rt.keras.layers.Conv2D(6, 3, padding="same", activation="relu"),
    rt.keras.layers.MaxPool2D(),
    rt.keras.layers.Flatten(),
    rt.keras.layers.Dense(CLASSES),
])
model.build(input_shape=(None, SIZE, SIZE, 1))
optimizer = rt.keras.optimizers.Adam(learning_rate=0.02)
loss_fn = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@rt.function(input_signature=[rt.TensorSpec([None, SIZE, SIZE, 1], rt.float32), rt.TensorSpec([None], rt.int32)])
def train_step(images, labels):
    with rt.GradientTape() as tape:
        loss = loss_fn(labels, model(images))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


# native sums run in another order than numpy's: float32 tolerance
TOLERANCE = dict(rtol=1e-3, atol=1e-4)


def run():
    images, labels = bars()
    native_losses, eager_losses, native_weights, eager_weights = train_natively_and_eagerly(
        train_step, model, optimizer, (images, labels), STEPS)
    accuracy = float(np.mean(np.argmax(model(images).numpy(), axis=1) == labels))
    return [
        (f"loss falls over {STEPS} native steps", native_losses[-1] < native_losses[0] / 4, True),
        ("native losses equal eager training's (float32 tolerance)",
         all_close(native_losses, eager_losses, **TOLERANCE), True),
        (f"weights after {STEPS} native steps equal eager training's",
         all_close(native_weights, eager_weights, **TOLERANCE), True),
        ("training accuracy above 90%", accuracy > 0.9, True),
    ]
