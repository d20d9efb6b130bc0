"""TensorFlow's tutorial "Custom layers", as a program.

Keras's built-in ``Dense`` (its variables, ``input_shape``), a layer of one's own (``add_weight`` in ``build``), a
ResNet identity block as a subclassed model of convolutions and batch normalizations, and the same layers in a
``Sequential``. ``train_step`` trains the block (batch statistics in training mode, moving averages updated) as a
``tf.function``; ``main(initialize=...)`` lets a caller set the weights.
"""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(7)


class MyDenseLayer(tf.keras.layers.Layer):
    def __init__(self, num_outputs):
        super().__init__()
        self.num_outputs = num_outputs

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=[int(input_shape[-1]), self.num_outputs])

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel)


class ResnetIdentityBlock(tf.keras.Model):
    def __init__(self, kernel_size, filters):
        super().__init__(name="")
        filters1, filters2, filters3 = filters

        self.conv2a = tf.keras.layers.Conv2D(filters1, (1, 1))
        self.bn2a = tf.keras.layers.BatchNormalization()

        self.conv2b = tf.keras.layers.Conv2D(filters2, kernel_size, padding="same")
        self.bn2b = tf.keras.layers.BatchNormalization()

        self.conv2c = tf.keras.layers.Conv2D(filters3, (1, 1))
        self.bn2c = tf.keras.layers.BatchNormalization()

    def call(self, input_tensor, training=False):
        x = self.conv2a(input_tensor)
        x = self.bn2a(x, training=training)
        x = tf.nn.relu(x)

        x = self.conv2b(x)
        x = self.bn2b(x, training=training)
        x = tf.nn.relu(x)

        x = self.conv2c(x)
        x = self.bn2c(x, training=training)

        x += input_tensor
        return tf.nn.relu(x)


block = ResnetIdentityBlock(1, [1, 2, 3])
_ = block(tf.zeros([1, 2, 3, 3]))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)

rng = np.random.default_rng(3)
images = rng.standard_normal((8, 2, 3, 3)).astype(np.float32)
targets = rng.standard_normal((8, 2, 3, 3)).astype(np.float32)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(block(x, training=True) - y))
    grads = tape.gradient(loss, block.trainable_variables)
    optimizer.apply_gradients(zip(grads, block.trainable_variables))
    return loss


def main(initialize=None, steps=5):
    initialize = initialize or (lambda variables: None)
    out = {}
    # In the tf.keras.layers package, layers are objects. To construct a layer,
    # simply construct the object. Most layers take as a first argument the number
    # of output dimensions / channels.
    layer = tf.keras.layers.Dense(100)
    # The number of input dimensions is often unnecessary, as it can be inferred
    # the first time the layer is used, but it can be provided if you want to
    # specify it manually, which is useful in some complex models.
    layer = tf.keras.layers.Dense(10, input_shape=(None, 5))
    layer(tf.zeros([10, 5]))
    initialize(layer.variables)
    out["dense_zeros"] = layer(tf.zeros([10, 5])).numpy()
    out["dense_ones"] = layer(tf.ones([2, 5])).numpy()
    out["dense_variables"] = [tuple(v.shape) for v in layer.variables]
    out["kernel_and_bias"] = [tuple(layer.kernel.shape), tuple(layer.bias.shape)]

    layer = MyDenseLayer(10)
    _ = layer(tf.zeros([10, 5]))  # Calling the layer `.builds` it.
    out["my_dense_names"] = [var.name for var in layer.trainable_variables]
    initialize(layer.variables)
    out["my_dense"] = layer(tf.ones([2, 5])).numpy()

    out["block_layers"] = [type(lay).__name__ for lay in block.layers]
    out["block_variables"] = len(block.variables)
    out["block_trainable"] = len(block.trainable_variables)
    block.summary()
    initialize(block.variables)
    out["block_inference"] = block(images).numpy()
    out["losses"] = [train_step(images, targets).numpy() for _ in range(steps)]
    out["moving_mean"] = block.bn2c.moving_mean.numpy()
    out["moving_variance"] = block.bn2c.moving_variance.numpy()
    out["block_after"] = block(images).numpy()

    my_seq = tf.keras.Sequential([tf.keras.layers.Conv2D(1, (1, 1), input_shape=(None, None, 3)),
                                  tf.keras.layers.BatchNormalization(),
                                  tf.keras.layers.Conv2D(2, 1, padding="same"),
                                  tf.keras.layers.BatchNormalization(),
                                  tf.keras.layers.Conv2D(3, (1, 1)),
                                  tf.keras.layers.BatchNormalization()])
    my_seq(tf.zeros([1, 2, 3, 3]))
    my_seq.summary()
    initialize(my_seq.variables)
    out["sequential"] = my_seq(images).numpy()
    out["sequential_params"] = my_seq.count_params()
    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
