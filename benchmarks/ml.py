"""The second wave's workloads (SPEC "ML workloads against JAX"), written as a user writes them.

``python -m benchmarks`` builds this module ahead of time; each function is declared with the
signature the benchmark calls it with.
"""
import runtime as rt

BATCH, FEATURES, HIDDEN, CLASSES = 256, 784, 128, 10
ROWS, COLS = 4096, 1024
POINTS = 2000
SET, DEPTH = 512, 64
NEWTON_STEPS = 1000
COLLATZ = 4096
RNN_BATCH, RNN_STEPS, RNN_UNITS = 32, 100, 64
HEADS, TOKENS, HEAD_DIM = 4, 512, 64

f32 = rt.float32


@rt.function(input_signature=[rt.TensorSpec([BATCH, FEATURES], f32), rt.TensorSpec([FEATURES, HIDDEN], f32),
                              rt.TensorSpec([HIDDEN], f32), rt.TensorSpec([HIDDEN, CLASSES], f32),
                              rt.TensorSpec([CLASSES], f32)])
def dense(x, w1, b1, w2, b2):
    """Two dense layers: ``softmax(relu(x @ w1 + b1) @ w2 + b2)``."""
    hidden = rt.nn.relu(rt.matmul(x, w1) + b1)
    return rt.nn.softmax(rt.matmul(hidden, w2) + b2)


@rt.function(input_signature=[rt.TensorSpec([ROWS, COLS], f32), rt.TensorSpec([COLS], f32),
                              rt.TensorSpec([COLS], f32)])
def layer_norm(x, gamma, beta):
    """Layer normalization over the last axis."""
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    variance = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) / rt.sqrt(variance + 1e-5) * gamma + beta


@rt.function(input_signature=[rt.TensorSpec([ROWS, COLS], f32)])
def softmax(x):
    """Softmax over the last axis, written out (max-shifted for stability)."""
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function(input_signature=[rt.TensorSpec([POINTS, 3], f32), rt.TensorSpec([POINTS, 3], f32)])
def pairwise_distances(a, b):
    """Squared distances between every point of ``a`` and every point of ``b``: broadcast, then reduce."""
    diff = rt.expand_dims(a, 1) - rt.expand_dims(b, 0)
    return rt.reduce_sum(diff * diff, axis=-1)


@rt.function(input_signature=[rt.TensorSpec([SET, DEPTH], f32), rt.TensorSpec([SET, DEPTH], f32)])
def all_dots(x, y):
    """The dot product of every row of ``x`` with every row of ``y``, written as a broadcast product summed."""
    return rt.reduce_sum(rt.expand_dims(x, 1) * rt.expand_dims(y, 0), axis=-1)


@rt.function(input_signature=[rt.TensorSpec([HEADS, TOKENS, HEAD_DIM], f32)] * 3)
def attention(q, k, v):
    """Scaled dot-product attention per head: ``softmax(q @ k^T / sqrt(d)) @ v``, batched products."""
    scores = rt.matmul(q, k, transpose_b=True) / rt.sqrt(rt.cast(rt.shape(q)[-1], f32))
    return rt.matmul(rt.nn.softmax(scores), v)


@rt.function(input_signature=[rt.TensorSpec([], f32)])
def newton_sqrt(a):
    """``NEWTON_STEPS`` Newton steps for sqrt(a) on a 0-d tensor in a tensor ``while``."""
    x = a
    i = rt.constant(0)
    while i < NEWTON_STEPS:
        x = 0.5 * (x + a / x)
        i += 1
    return x


@rt.function(input_signature=[rt.TensorSpec([COLLATZ], rt.int32)])
def collatz_steps(n):
    """Collatz step counts of every element: a vector loop until no element is active."""
    steps = rt.zeros_like(n)
    while rt.reduce_any(n > 1):
        active = n > 1
        n = rt.where(active, rt.where(n % 2 == 0, n // 2, 3 * n + 1), n)
        steps += rt.cast(active, rt.int32)
    return steps


def rnn_step(inp, state, w):
    return rt.tanh(rt.matmul(state, w) + inp)


@rt.function(input_signature=[rt.TensorSpec([RNN_BATCH, RNN_STEPS, RNN_UNITS], f32),
                              rt.TensorSpec([RNN_BATCH, RNN_UNITS], f32), rt.TensorSpec([RNN_UNITS, RNN_UNITS], f32)])
def dynamic_rnn(input_data, initial_state, w):
    """The guide's dynamic_rnn with ``h = tanh(h @ w + x[t])``."""
    input_data = rt.transpose(input_data, [1, 0, 2])   # [batch, time, features] -> [time, batch, features]
    max_seq_len = input_data.shape[0]
    states = rt.TensorArray(rt.float32, size=max_seq_len)
    state = initial_state
    for i in rt.range(max_seq_len):
        state = rnn_step(input_data[i], state, w)
        states = states.write(i, state)
    return rt.transpose(states.stack(), [1, 0, 2])
