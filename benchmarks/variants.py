"""The second wave's workloads spelled as the guides also teach them (SPEC "Third wave").

``benchmarks/ml.py`` and ``benchmarks/training.py`` declare every size; here the same computations take
``None`` for their batch, time and length dims, take trip counts and dims from ``rt.shape``, or keep an RNN's
states without a TensorArray. ``python -m benchmarks`` builds this module ahead of time; the "variants" class
times each spelling against the best one of its workload, and the ``None`` versions against the peers.
"""
import runtime as rt
from benchmarks.ml import CLASSES, COLS, DEPTH, FEATURES, HIDDEN, RNN_BATCH, RNN_STEPS, RNN_UNITS
from benchmarks.training import BATCH, CHANNELS, FILTERS, IMAGE

f32 = rt.float32
MANDELBROT_STEPS = 100


@rt.function(input_signature=[rt.TensorSpec([None, FEATURES], f32), rt.TensorSpec([FEATURES, HIDDEN], f32),
                              rt.TensorSpec([HIDDEN], f32), rt.TensorSpec([HIDDEN, CLASSES], f32),
                              rt.TensorSpec([CLASSES], f32)])
def dense(x, w1, b1, w2, b2):
    """``ml.dense`` over a batch of any size."""
    hidden = rt.nn.relu(rt.matmul(x, w1) + b1)
    return rt.nn.softmax(rt.matmul(hidden, w2) + b2)


@rt.function(input_signature=[rt.TensorSpec([None, COLS], f32), rt.TensorSpec([COLS], f32),
                              rt.TensorSpec([COLS], f32)])
def layer_norm(x, gamma, beta):
    """``ml.layer_norm`` over any number of rows."""
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    variance = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / rt.sqrt(variance + 1e-5) * gamma + beta


@rt.function(input_signature=[rt.TensorSpec([None, None], f32), rt.TensorSpec([None], f32),
                              rt.TensorSpec([None], f32)])
def layer_norm_any(x, gamma, beta):
    """``ml.layer_norm`` over rows of any length too."""
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    variance = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / rt.sqrt(variance + 1e-5) * gamma + beta


@rt.function(input_signature=[rt.TensorSpec([None, COLS], f32)])
def softmax(x):
    """``ml.softmax`` over any number of rows."""
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function(input_signature=[rt.TensorSpec([None, None], f32)])
def softmax_any(x):
    """``ml.softmax`` over rows of any length too."""
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function(input_signature=[rt.TensorSpec([None, 3], f32), rt.TensorSpec([None, 3], f32)])
def pairwise_distances(a, b):
    """``ml.pairwise_distances`` for sets of any size."""
    diff = rt.expand_dims(a, 1) - rt.expand_dims(b, 0)
    return rt.reduce_sum(diff * diff, axis=-1)


@rt.function(input_signature=[rt.TensorSpec([None, DEPTH], f32), rt.TensorSpec([None, DEPTH], f32)])
def all_dots(x, y):
    """``ml.all_dots`` for sets of any size."""
    return rt.reduce_sum(rt.expand_dims(x, 1) * rt.expand_dims(y, 0), axis=-1)


@rt.function(input_signature=[rt.TensorSpec([], f32), rt.TensorSpec([], rt.int32)])
def newton_sqrt(a, steps):
    """``ml.newton_sqrt`` with its trip count a tensor argument."""
    x = a
    i = rt.constant(0)
    while i < steps:
        x = 0.5 * (x + a / x)
        i += 1
    return x


@rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
def collatz_steps(n):
    """``ml.collatz_steps`` over a vector of any length."""
    steps = rt.zeros_like(n)
    while rt.reduce_any(n > 1):
        active = n > 1
        n = rt.where(active, rt.where(n % 2 == 0, n // 2, 3 * n + 1), n)
        steps += rt.cast(active, rt.int32)
    return steps


@rt.function(input_signature=[rt.TensorSpec([None, None, RNN_UNITS], f32), rt.TensorSpec([None, RNN_UNITS], f32),
                              rt.TensorSpec([RNN_UNITS, RNN_UNITS], f32)])
def dynamic_rnn(input_data, initial_state, w):
    """``ml.dynamic_rnn`` over any batch and number of steps, its trip count from ``rt.shape``."""
    input_data = rt.transpose(input_data, [1, 0, 2])
    max_seq_len = rt.shape(input_data)[0]
    states = rt.TensorArray(rt.float32, size=max_seq_len)
    state = initial_state
    for i in rt.range(max_seq_len):
        state = rt.tanh(rt.matmul(state, w) + input_data[i])
        states = states.write(i, state)
    return rt.transpose(states.stack(), [1, 0, 2])


@rt.function(input_signature=[rt.TensorSpec([RNN_BATCH, RNN_STEPS, RNN_UNITS], f32),
                              rt.TensorSpec([RNN_BATCH, RNN_UNITS], f32), rt.TensorSpec([RNN_UNITS, RNN_UNITS], f32)])
def rnn_last_state_static(inputs, h, w):
    """The recurrence without a TensorArray, keeping only its last state, over static sizes."""
    xs = rt.transpose(inputs, [1, 0, 2])
    for t in rt.range(RNN_STEPS):
        h = rt.tanh(h @ w + xs[t])
    return h


@rt.function(input_signature=[rt.TensorSpec([None, None, RNN_UNITS], f32), rt.TensorSpec([None, RNN_UNITS], f32),
                              rt.TensorSpec([RNN_UNITS, RNN_UNITS], f32)])
def rnn_last_state(inputs, h, w):
    """The recurrence without a TensorArray, keeping only its last state (as the guide's readers first write it)."""
    xs = rt.transpose(inputs, [1, 0, 2])
    for t in rt.range(rt.shape(inputs)[1]):
        h = rt.tanh(h @ w + xs[t])
    return h


@rt.function(input_signature=[rt.TensorSpec([None, None], f32), rt.TensorSpec([None, None], f32)])
def mandelbrot(cr, ci):
    """Escape counts of ``MANDELBROT_STEPS`` steps of z = z^2 + c over a grid: a tensor ``while`` of elementwise
    updates (each point's orbit, counted while it stays within radius 2)."""
    zr = rt.zeros_like(cr)
    zi = rt.zeros_like(ci)
    count = rt.zeros_like(cr)
    i = rt.constant(0)
    while i < MANDELBROT_STEPS:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        count += rt.cast(zr * zr + zi * zi < 4.0, f32)
        i += 1
    return count


def _mlp():
    rt.keras.utils.set_random_seed(0)
    mlp = rt.keras.Sequential([rt.keras.layers.Dense(HIDDEN, activation="relu"), rt.keras.layers.Dense(CLASSES)])
    mlp.build((None, FEATURES))
    return mlp, rt.keras.optimizers.Adam(learning_rate=1e-3)


loss_fn = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model, optimizer = _mlp()
model_static, optimizer_static = _mlp()       # the same weights, for the static spelling


@rt.function(input_signature=[rt.TensorSpec([None, FEATURES], f32), rt.TensorSpec([None], rt.int32)])
def train_step(x, y):
    """``training.train_step`` over a batch of any size."""
    with rt.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@rt.function(input_signature=[rt.TensorSpec([BATCH, FEATURES], f32), rt.TensorSpec([BATCH], rt.int32)])
def train_step_static(x, y):
    """``training.train_step`` (its own model, starting from the same weights as ``train_step``'s)."""
    with rt.GradientTape() as tape:
        loss = loss_fn(y, model_static(x))
    grads = tape.gradient(loss, model_static.trainable_variables)
    optimizer_static.apply_gradients(zip(grads, model_static.trainable_variables))
    return loss


conv_layer = rt.keras.layers.Conv2D(FILTERS, 3)
conv_layer.build((1, IMAGE, IMAGE, CHANNELS))


@rt.function(input_signature=[rt.TensorSpec([None, None, None, CHANNELS], f32)])
def conv(image):
    """``training.conv`` over any number of images of any size."""
    return conv_layer(image)


@rt.function(input_signature=[rt.TensorSpec([1, IMAGE, IMAGE, CHANNELS], f32)])
def conv_static(image):
    """``training.conv`` with this module's layer."""
    return conv_layer(image)
