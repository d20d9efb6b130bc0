"""The built functions of SPEC's "training step" and "convolution" classes, written as a Keras user writes them.

``python -m benchmarks`` builds this module ahead of time. ``train_step`` is a whole MLP training step --
forward, ``GradientTape``, sparse softmax cross entropy, Adam update of the weights in place; ``conv`` is
the guide's ``Conv2D(100, 3)`` layer in a Function, ``conv_gradients`` a hidden convolution layer's backward pass.
"""
import runtime as rt

BATCH, FEATURES, HIDDEN, CLASSES = 256, 784, 128, 10
IMAGE, CHANNELS, FILTERS = 200, 100, 100
GEMM = 1024

f32 = rt.float32

rt.keras.utils.set_random_seed(0)
model = rt.keras.Sequential([rt.keras.layers.Dense(HIDDEN, activation="relu"), rt.keras.layers.Dense(CLASSES)])
model.build((None, FEATURES))
optimizer = rt.keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@rt.function(input_signature=[rt.TensorSpec([BATCH, FEATURES], f32), rt.TensorSpec([BATCH], rt.int32)])
def train_step(x, y):
    """One step: the loss, its gradients with respect to the model's weights, Adam's update."""
    with rt.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


conv_layer = rt.keras.layers.Conv2D(FILTERS, 3)
conv_layer.build((1, IMAGE, IMAGE, CHANNELS))


@rt.function(input_signature=[rt.TensorSpec([1, IMAGE, IMAGE, CHANNELS], f32)])
def conv(image):
    """The guide's convolution: ``Conv2D(100, 3)`` on one 200x200 image of 100 channels."""
    return conv_layer(image)


GRAD_BATCH, GRAD_SIZE, GRAD_CHANNELS = 16, 32, 64
grad_layer = rt.keras.layers.Conv2D(GRAD_CHANNELS, 3, padding="same")
grad_layer.build((None, GRAD_SIZE, GRAD_SIZE, GRAD_CHANNELS))


@rt.function(input_signature=[rt.TensorSpec([GRAD_BATCH, GRAD_SIZE, GRAD_SIZE, GRAD_CHANNELS], f32)])
def conv_gradients(x):
    """A hidden convolution layer's backward pass: the gradients of ``sum(y ** 2)`` with respect to its input,
    kernel and bias (``Conv2D(64, 3, padding="same")`` on [16, 32, 32, 64])."""
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = grad_layer(x)
        loss = rt.reduce_sum(y * y)
    return tape.gradient(loss, [x, grad_layer.kernel, grad_layer.bias])


@rt.function(input_signature=[rt.TensorSpec([GEMM, GEMM], f32), rt.TensorSpec([GEMM, GEMM], f32)])
def gemm(a, b):
    """A large square product: one of the measures of the machine's GEMM rate the training step is held to."""
    return rt.matmul(a, b)
