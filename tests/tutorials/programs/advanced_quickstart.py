"""TensorFlow's "TensorFlow 2 quickstart for experts", as a program.

A subclassed Keras model (convolution, flatten, two dense layers) trained by a ``tf.function`` train step with
loss and accuracy metrics, evaluated by a ``tf.function`` test step, over ``tf.data`` pipelines. MNIST is replaced
by synthetic images of the same shape (``synthetic.mnist_like``). The model's weights are made by the first
trace of ``train_step``, as in the guide. ``main(shuffle=False)`` keeps the batches in order and
``main(initialize=...)`` builds the model first and sets its weights (two libraries shuffle and initialize
differently).
"""
import tensorflow as tf
from synthetic import mnist_like
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

tf.keras.utils.set_random_seed(0)

(x_train, y_train), (x_test, y_test) = mnist_like(n_train=512, n_test=128)
x_train, x_test = x_train / 255.0, x_test / 255.0

# Add a channels dimension
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(32, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(128, activation="relu")
        self.d2 = Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


# Create an instance of the model
model = MyModel()

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam()

train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

test_loss = tf.keras.metrics.Mean(name="test_loss")
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        # training=True is only needed if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    train_loss(loss)
    train_accuracy(labels, predictions)


@tf.function
def test_step(images, labels):
    # training=False is only needed if there are layers with different
    # behavior during training versus inference (e.g. Dropout).
    predictions = model(images, training=False)
    t_loss = loss_object(labels, predictions)

    test_loss(t_loss)
    test_accuracy(labels, predictions)


def main(shuffle=True, initialize=None, epochs=2):
    train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    if shuffle:
        train_ds = train_ds.shuffle(10000)
    train_ds = train_ds.batch(32)
    test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)
    if initialize is not None:
        model(x_test[:1])
        initialize(model.trainable_variables)

    history = []
    for epoch in range(epochs):
        # Reset the metrics at the start of the next epoch
        train_loss.reset_state()
        train_accuracy.reset_state()
        test_loss.reset_state()
        test_accuracy.reset_state()

        for images, labels in train_ds:
            train_step(images, labels)

        for test_images, test_labels in test_ds:
            test_step(test_images, test_labels)

        print(
            f"Epoch {epoch + 1}, "
            f"Loss: {train_loss.result():0.2f}, "
            f"Accuracy: {train_accuracy.result() * 100:0.2f}, "
            f"Test Loss: {test_loss.result():0.2f}, "
            f"Test Accuracy: {test_accuracy.result() * 100:0.2f}"
        )
        history.append([float(m.result()) for m in (train_loss, train_accuracy, test_loss, test_accuracy)])
    return {"history": history}


if __name__ == "__main__":
    main()
