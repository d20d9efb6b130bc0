"""TensorFlow's "TensorFlow 2 quickstart for beginners", as a program.

A ``Sequential`` model (flatten, dense, dropout, dense) compiled with Adam, a from-logits cross entropy and
accuracy, trained by ``fit``, scored by ``evaluate``, and wrapped with a softmax for probabilities. MNIST is
replaced by synthetic images (``synthetic.mnist_like``). The model is compiled when the module is imported, so
that a build of the module compiles ``fit``'s train step. ``main(initialize=...)`` sets the weights first.
"""
import tensorflow as tf
from synthetic import mnist_like

tf.keras.utils.set_random_seed(42)

(x_train, y_train), (x_test, y_test) = mnist_like(n_train=1024, n_test=256, seed=3)
x_train, x_test = x_train / 255.0, x_test / 255.0
x_train, x_test = x_train.astype("float32"), x_test.astype("float32")

model = tf.keras.models.Sequential([
    tf.keras.Input(shape=(28, 28)),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dropout(0.2),
    tf.keras.layers.Dense(10)
])

loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer="adam",
              loss=loss_fn,
              metrics=["accuracy"])


def main(initialize=None, epochs=5):
    out = {}
    if initialize is not None:
        initialize(model.trainable_variables)
    predictions = model(x_train[:1]).numpy()
    out["predictions"] = predictions
    out["softmax"] = tf.nn.softmax(predictions).numpy()
    out["initial_loss"] = loss_fn(y_train[:1], predictions).numpy()
    history = model.fit(x_train, y_train, epochs=epochs, verbose=2)
    out["history"] = history.history
    out["evaluate"] = model.evaluate(x_test, y_test, verbose=2)
    probability_model = tf.keras.Sequential([
        model,
        tf.keras.layers.Softmax()
    ])
    out["probabilities"] = probability_model(x_test[:5]).numpy()
    out["probability_sums"] = tf.reduce_sum(probability_model(x_test[:5]), axis=1).numpy()
    return out


if __name__ == "__main__":
    main()
