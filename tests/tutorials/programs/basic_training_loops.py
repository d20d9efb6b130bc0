"""TensorFlow's guide "Basic training loops", as a program.

A linear model ``y = w * x + b`` as a ``tf.Module`` trained by hand (gradient tape, ``assign_sub``), the same
model as a ``tf.keras.Model`` trained by the same loop, its weights saved, and then ``compile``/``fit``. The
guide draws its noise with ``tf.random.normal``; ``main(noise=...)`` takes the noise as an array instead (so two
libraries see the same data). ``train_step`` is the guide's ``train`` of the module's model as a ``tf.function``.
"""
import os
import tempfile

import tensorflow as tf

TRUE_W = 3.0
TRUE_B = 2.0
NUM_EXAMPLES = 201

tf.random.set_seed(1234)


def f(x):
    return x * TRUE_W + TRUE_B


class MyModel(tf.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Initialize the weights to `5.0` and the bias to `0.0`
        # In practice, these should be randomly initialized
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


class MyModelKeras(tf.keras.Model):
    # Keras 3 (tf.keras since TensorFlow 2.16) tracks the weights a layer adds, not tf.Variables assigned to it
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = self.add_weight(shape=(), initializer=tf.keras.initializers.Constant(5.0), name="w")
        self.b = self.add_weight(shape=(), initializer="zeros", name="b")

    def call(self, x):
        return self.w * x + self.b


def loss(target_y, predicted_y):
    return tf.reduce_mean(tf.square(target_y - predicted_y))


def train(model, x, y, learning_rate):
    with tf.GradientTape() as t:
        # Trainable variables are automatically tracked by GradientTape
        current_loss = loss(y, model(x))
    # Use GradientTape to calculate the gradients with respect to W and b
    dw, db = t.gradient(current_loss, [model.w, model.b])
    # Subtract the gradient scaled by the learning rate
    model.w.assign_sub(learning_rate * dw)
    model.b.assign_sub(learning_rate * db)
    return current_loss


model = MyModel()


@tf.function
def train_step(x, y, learning_rate):
    return train(model, x, y, learning_rate)


def report(model, loss):
    return f"W = {model.w.numpy():1.2f}, b = {model.b.numpy():1.2f}, loss={loss:2.5f}"


def training_loop(model, x, y, step=None, epochs=10):
    weights, biases, losses = [], [], []
    for epoch in range(epochs):
        # Update the model with the single giant batch
        if step is None:
            train(model, x, y, learning_rate=0.1)
        else:
            step(x, y, learning_rate=0.1)
        # Track this before I update
        weights.append(model.w.numpy())
        biases.append(model.b.numpy())
        current_loss = loss(y, model(x))
        losses.append(current_loss.numpy())
        print(f"Epoch {epoch:2d}:")
        print("    ", report(model, current_loss))
    return weights, biases, losses


def main(noise=None):
    out = {}
    x = tf.linspace(-2, 2, NUM_EXAMPLES)
    x = tf.cast(x, tf.float32)
    if noise is None:
        noise = tf.random.normal(shape=[NUM_EXAMPLES])
    y = f(x) + noise

    print("Variables:", model.variables)
    out["untrained"] = model(3.0).numpy()
    out["initial_loss"] = loss(y, model(x)).numpy()
    out["module"] = training_loop(model, x, y, train_step)

    keras_model = MyModelKeras()
    out["keras_loop"] = training_loop(keras_model, x, y)     # the same loop, eagerly
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "my_checkpoint.weights.h5")
        keras_model.save_weights(path)
        restored = MyModelKeras()
        restored(x)                     # Keras 3 loads weights into a built model
        restored.load_weights(path)
        out["restored"] = [restored.w.numpy(), restored.b.numpy()]

    keras_model = MyModelKeras()
    # compile sets the training parameters
    keras_model.compile(
        # By default, fit() uses tf.function().  You can
        # turn that off for debugging, but it is on now.
        run_eagerly=False,
        # Using a built-in optimizer, configuring as an object
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
        # Keras comes with built-in MSE error
        loss=tf.keras.losses.MeanSquaredError(),
    )
    history = keras_model.fit(x, y, epochs=10, batch_size=1000, verbose=0)
    out["fit_loss"] = history.history["loss"]
    out["fit_weights"] = [keras_model.w.numpy(), keras_model.b.numpy()]
    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
