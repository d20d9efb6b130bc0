"""The second wave's workloads spelled as the guides also teach them (SPEC "Third wave").

``benchmarks/ml.py`` and ``benchmarks/training.py`` declare every size; here the same computations take
``None`` for their batch, time and length dims, take trip counts and dims from ``rt.shape``, or keep an RNN's
states without a TensorArray. ``python -m benchmarks`` builds this module ahead of time; the "variants" class
times each spelling against the best one of its workload, and the ``None`` versions against the peers.
"""
import runtime as rt
from benchmarks import ml
from benchmarks.ml import CLASSES, COLS, DEPTH, FEATURES, HIDDEN, RNN_BATCH, RNN_STEPS, RNN_UNITS
from benchmarks.training import BATCH, CHANNELS, FILTERS, IMAGE

f32 = rt.float32
MANDELBROT_STEPS = 100


def _spec(*dims, dtype=f32):
    return rt.TensorSpec(list(dims), dtype)


# ml.py's functions, declared over other sizes: each rt.function of one Python function gets its own code
dense = rt.function(ml.dense.python_function, input_signature=[
    _spec(None, FEATURES), _spec(FEATURES, HIDDEN), _spec(HIDDEN), _spec(HIDDEN, CLASSES), _spec(CLASSES)])
layer_norm = rt.function(ml.layer_norm.python_function, input_signature=[_spec(None, COLS), _spec(COLS),
                                                                          _spec(COLS)])
layer_norm_any = rt.function(ml.layer_norm.python_function, input_signature=[_spec(None, None), _spec(None),
                                                                              _spec(None)])
softmax = rt.function(ml.softmax.python_function, input_signature=[_spec(None, COLS)])
softmax_any = rt.function(ml.softmax.python_function, input_signature=[_spec(None, None)])
attention = rt.function(ml.attention.python_function, input_signature=[_spec(None, None, None)] * 3)
# a classifier's logits: many rows shorter than a vector (softmax_any takes them too)
LOGITS = (8192, CLASSES)
softmax_logits = rt.function(ml.softmax.python_function, input_signature=[_spec(*LOGITS)])
# short rows: 100 floats are 6 whole vectors and part of a 7th (transpiler/lowering/lanes.py)
SHORT = (8192, 100)
softmax_short = rt.function(ml.softmax.python_function, input_signature=[_spec(*SHORT)])
layer_norm_short = rt.function(ml.layer_norm.python_function, input_signature=[_spec(*SHORT), _spec(SHORT[1]),
                                                                                _spec(SHORT[1])])
pairwise_distances = rt.function(ml.pairwise_distances.python_function, input_signature=[_spec(None, 3),
                                                                                          _spec(None, 3)])
all_dots = rt.function(ml.all_dots.python_function, input_signature=[_spec(None, DEPTH), _spec(None, DEPTH)])
collatz_steps = rt.function(ml.collatz_steps.python_function, input_signature=[_spec(None, dtype=rt.int32)])


@rt.function(input_signature=[rt.TensorSpec([], f32), rt.TensorSpec([], rt.int32)])
def newton_sqrt(a, steps):
    """``ml.newton_sqrt`` with its trip count a tensor argument."""
    x = a
    i = rt.constant(0)
    while i < steps:
        x = 0.5 * (x + a / x)
        i += 1
    return x


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


def _training_step(model, optimizer):
    """``training.train_step`` over ``model`` and ``optimizer``."""
    def step(x, y):
        with rt.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


train_step = rt.function(_training_step(model, optimizer), input_signature=[_spec(None, FEATURES),
                                                                            _spec(None, dtype=rt.int32)])
train_step_static = rt.function(_training_step(model_static, optimizer_static),
                                input_signature=[_spec(BATCH, FEATURES), _spec(BATCH, dtype=rt.int32)])

conv_layer = rt.keras.layers.Conv2D(FILTERS, 3)
conv_layer.build((1, IMAGE, IMAGE, CHANNELS))


def _convolve(image):
    """``training.conv`` with this module's layer."""
    return conv_layer(image)


conv = rt.function(_convolve, input_signature=[_spec(None, None, None, CHANNELS)])
conv_static = rt.function(_convolve, input_signature=[_spec(1, IMAGE, IMAGE, CHANNELS)])


# a batch normalisation's statistics: reductions over the rows (columns kept), static and with None dims
COLUMNS = (4096, 512)


def _standardize_columns(x):
    """Each column to mean 0 and variance 1 (the batch statistics of a batch normalisation)."""
    mean = rt.reduce_mean(x, axis=0)
    variance = rt.reduce_mean(rt.square(x - mean), axis=0)
    return (x - mean) * rt.math.rsqrt(variance + 1e-5)


standardize_columns_static = rt.function(_standardize_columns, input_signature=[_spec(*COLUMNS)])
standardize_columns = rt.function(_standardize_columns, input_signature=[_spec(None, None)])

# a linear regression trained by gradient descent inside one Function (a tutorial's basic training loop), whose
# products are matrix-vector products; its targets a column, declared [None, 1] or [None, None]
REGRESSION = (2048, 32)
REGRESSION_STEPS = 50


def _fit_regression(x, y):
    """``REGRESSION_STEPS`` steps of gradient descent on the mean squared error of ``x @ w`` against ``y``."""
    w = rt.zeros([rt.shape(x)[1], 1])
    for _ in rt.range(REGRESSION_STEPS):
        with rt.GradientTape() as tape:
            tape.watch(w)
            loss = rt.reduce_mean(rt.square(rt.matmul(x, w) - y))
        w = w - 0.05 * tape.gradient(loss, w)
    return w


fit_regression_static = rt.function(_fit_regression, input_signature=[_spec(*REGRESSION), _spec(REGRESSION[0], 1)])
fit_regression_column = rt.function(_fit_regression, input_signature=[_spec(None, None), _spec(None, 1)])
fit_regression = rt.function(_fit_regression, input_signature=[_spec(None, None), _spec(None, None)])
