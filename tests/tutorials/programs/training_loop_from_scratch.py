"""Keras's guide "Writing a training loop from scratch in TensorFlow", as a program.

A functional model trained by an eager loop over a ``tf.data`` pipeline (gradient tape, ``optimizer.apply``),
then with accuracy metrics and a validation pass, then with ``tf.function`` train and test steps, then with an
activity-regularization layer whose ``add_loss`` the step adds. MNIST is replaced by synthetic uint8 images of
the same shape (``synthetic.mnist_like``); ``main(shuffle=False)`` keeps the batches in order and
``main(initialize=...)`` sets the models' weights (two libraries shuffle and initialize differently).
"""
import time

import keras
import numpy as np
import tensorflow as tf
from synthetic import mnist_like

keras.utils.set_random_seed(1337)


def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


batch_size = 32
(x_train, y_train), (x_test, y_test) = mnist_like(n_train=1280, n_test=256)
x_train = np.reshape(x_train, (-1, 784)).astype("float32") / 255.0
x_test = np.reshape(x_test, (-1, 784)).astype("float32") / 255.0
y_train = y_train.astype("int32")
y_test = y_test.astype("int32")

# Reserve 256 samples for validation.
x_val = x_train[-256:]
y_val = y_train[-256:]
x_train = x_train[:-256]
y_train = y_train[:-256]


def datasets(shuffle=True):
    # Prepare the training dataset.
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    if shuffle:
        train_dataset = train_dataset.shuffle(buffer_size=1024)
    train_dataset = train_dataset.batch(batch_size)
    # Prepare the validation dataset.
    val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val))
    val_dataset = val_dataset.batch(batch_size)
    return train_dataset, val_dataset


# The tf.function section's model, optimizer, loss and metrics: the steps below read them
model = get_model()
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


class ActivityRegularizationLayer(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * tf.reduce_sum(inputs))
        return inputs


inputs = keras.Input(shape=(784,), name="digits")
h = keras.layers.Dense(64, activation="relu")(inputs)
# Insert activity regularization as a layer
h = ActivityRegularizationLayer()(h)
h = keras.layers.Dense(64, activation="relu")(h)
outputs = keras.layers.Dense(10, name="predictions")(h)
regularized_model = keras.Model(inputs=inputs, outputs=outputs)
regularized_optimizer = keras.optimizers.Adam(learning_rate=1e-3)


@tf.function
def regularized_train_step(x, y):
    with tf.GradientTape() as tape:
        logits = regularized_model(x, training=True)
        loss_value = loss_fn(y, logits)
        # Add any extra losses created during the forward pass.
        loss_value += sum(regularized_model.losses)
    grads = tape.gradient(loss_value, regularized_model.trainable_weights)
    regularized_optimizer.apply(grads, regularized_model.trainable_weights)
    return loss_value


def eager_loop(train_dataset, initialize, epochs=2):
    """The guide's first loop: eager, with the gradient tape."""
    eager_model = get_model()
    initialize(eager_model.trainable_weights)
    eager_optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    losses = []
    for epoch in range(epochs):
        print(f"\nStart of epoch {epoch}")
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            with tf.GradientTape() as tape:
                logits = eager_model(x_batch_train, training=True)
                loss_value = loss_fn(y_batch_train, logits)
            grads = tape.gradient(loss_value, eager_model.trainable_weights)
            eager_optimizer.apply(grads, eager_model.trainable_weights)
            losses.append(float(loss_value))
            if step % 10 == 0:
                print(f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}")
                print(f"Seen so far: {(step + 1) * batch_size} samples")
    return losses


def compiled_loop(train_dataset, val_dataset, epochs=2):
    """The guide's tf.function loop, with metrics."""
    losses, train_accs, val_accs = [], [], []
    for epoch in range(epochs):
        print(f"\nStart of epoch {epoch}")
        start_time = time.time()
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            loss_value = train_step(x_batch_train, y_batch_train)
            losses.append(float(loss_value))
        train_acc = train_acc_metric.result()
        print(f"Training acc over epoch: {float(train_acc):.4f}")
        train_accs.append(float(train_acc))
        train_acc_metric.reset_state()
        for x_batch_val, y_batch_val in val_dataset:
            test_step(x_batch_val, y_batch_val)
        val_acc = val_acc_metric.result()
        val_acc_metric.reset_state()
        val_accs.append(float(val_acc))
        print(f"Validation acc: {float(val_acc):.4f}")
        print(f"Time taken: {time.time() - start_time:.2f}s")
    return losses, train_accs, val_accs


def main(shuffle=True, initialize=None, epochs=2):
    initialize = initialize or (lambda variables: None)
    train_dataset, val_dataset = datasets(shuffle)
    out = {"eager_losses": eager_loop(train_dataset, initialize, epochs)}
    initialize(model.trainable_weights)
    out["losses"], out["train_acc"], out["val_acc"] = compiled_loop(train_dataset, val_dataset, epochs)
    initialize(regularized_model.trainable_weights)
    out["regularized_losses"] = [float(regularized_train_step(x, y)) for x, y in train_dataset.take(5)]
    out["model_losses"] = len(regularized_model.losses)
    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
