"""SPEC "Second wave: ML workloads against JAX": each class against numpy eager, jax.jit, tf.function (and Numba).

The built functions are in ``benchmarks/ml.py``; the peers' versions of each are written here, next to
their class, the way each library's users write them. Targets are SPEC's, as ratios of seconds per call.
"""
from __future__ import annotations

import numpy as np

from benchmarks import ml
from benchmarks.harness import EXACT, Bench, Row, Tolerance, bench_class

f32 = np.float32

# How far a peer's float32 result may be from the built one (|peer - built| <= atol + rtol |peer|): the peers
# sum in other orders (GEMM blocking, reductions in other chunks) and their exp/tanh are other
# approximations, each a few float32 ulps (2^-24 = 6e-8 relative) per op; a wrong result is off by far more.
DENSE = Tolerance(rtol=1e-5, atol=1e-7)          # probabilities in [0, 1]
LAYER_NORM = Tolerance(rtol=1e-5, atol=1e-5)     # values of about 1: cancellation in x - mean
SOFTMAX = Tolerance(rtol=1e-5, atol=1e-9)        # probabilities of about 1/1024
DISTANCES = Tolerance(rtol=1e-5, atol=1e-5)      # squared distances of about 1 to 30, sums of 3 terms
DOTS = Tolerance(rtol=1e-5, atol=1e-4)           # sums of 64 products of about 1: cancellation near 0
NEWTON = Tolerance(rtol=1e-6)                    # sqrt(2) after 1000 steps: converged, at most a few ulps
RNN = Tolerance(rtol=1e-5, atol=1e-5)            # tanh of sums of 64 products, 100 steps (libmvec's tanh)
ATTENTION = Tolerance(rtol=1e-5, atol=1e-5)      # weighted means of 512 values of about 1: cancellation near 0


def _dense_numpy(x, w1, b1, w2, b2):
    z = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def dense_inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((ml.BATCH, ml.FEATURES)).astype(f32),
            (rng.standard_normal((ml.FEATURES, ml.HIDDEN)) * 0.05).astype(f32), np.zeros(ml.HIDDEN, f32),
            (rng.standard_normal((ml.HIDDEN, ml.CLASSES)) * 0.05).astype(f32), np.zeros(ml.CLASSES, f32))


def dense_peers(args) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.dense`` on ``args``."""
    def jax_version(jax):
        fn = jax.jit(lambda x, w1, b1, w2, b2: jax.nn.softmax(jax.nn.relu(x @ w1 + b1) @ w2 + b2))
        device = [jax.device_put(a) for a in args]
        return lambda: fn(*device).block_until_ready()

    def tf_version(tf):
        fn = tf.function(lambda x, w1, b1, w2, b2: tf.nn.softmax(tf.nn.relu(tf.matmul(x, w1) + b1) @ w2 + b2))
        tensors = [tf.constant(a) for a in args]
        return lambda: fn(*tensors)
    return {"numpy": lambda: _dense_numpy(*args), "jax.jit": jax_version, "tf.function": tf_version}


@bench_class("dense layers")
def dense(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    args = dense_inputs()
    name = f"dense: softmax(relu(x @ w1 + b1) @ w2 + b2), x [{ml.BATCH}, {ml.FEATURES}], {ml.HIDDEN} hidden"
    row = bench.measure(name, {"built": lambda: built.dense(*args), **dense_peers(args)}, tolerance=DENSE)
    bench.faster_than(row, "jax.jit", 0.8)
    bench.faster_than(row, "numpy", 1.0)
    return [row]


def _layer_norm_numpy(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    variance = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + f32(1e-5)) * gamma + beta


def _softmax_numpy(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def normalization_inputs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((ml.ROWS, ml.COLS)).astype(f32)
    return x, rng.uniform(0.5, 1.5, ml.COLS).astype(f32), rng.standard_normal(ml.COLS).astype(f32)


def layer_norm_peers(x, gamma, beta) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.layer_norm``."""
    def jax_layer_norm(jax):
        jnp = jax.numpy

        def layer_norm(x, gamma, beta):
            mean = jnp.mean(x, axis=-1, keepdims=True)
            variance = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
            return (x - mean) / jnp.sqrt(variance + 1e-5) * gamma + beta
        fn, device = jax.jit(layer_norm), [jax.device_put(a) for a in (x, gamma, beta)]
        return lambda: fn(*device).block_until_ready()

    def tf_layer_norm(tf):
        @tf.function
        def layer_norm(x, gamma, beta):
            mean = tf.reduce_mean(x, axis=-1, keepdims=True)
            variance = tf.reduce_mean(tf.square(x - mean), axis=-1, keepdims=True)
            return (x - mean) / tf.sqrt(variance + 1e-5) * gamma + beta
        tensors = [tf.constant(a) for a in (x, gamma, beta)]
        return lambda: layer_norm(*tensors)
    return {"numpy": lambda: _layer_norm_numpy(x, gamma, beta), "jax.jit": jax_layer_norm,
            "tf.function": tf_layer_norm}


def softmax_peers(x) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.softmax``."""
    def jax_softmax(jax):
        jnp = jax.numpy
        def softmax(x):
            e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
            return e / jnp.sum(e, axis=-1, keepdims=True)
        fn = jax.jit(softmax)
        device = jax.device_put(x)
        return lambda: fn(device).block_until_ready()

    def tf_softmax(tf):
        @tf.function
        def softmax(x):
            e = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))
            return e / tf.reduce_sum(e, axis=-1, keepdims=True)
        tensor = tf.constant(x)
        return lambda: softmax(tensor)
    return {"numpy": lambda: _softmax_numpy(x), "jax.jit": jax_softmax, "tf.function": tf_softmax}


def attention_inputs() -> tuple:
    rng = np.random.default_rng(6)
    return tuple(rng.standard_normal((ml.HEADS, ml.TOKENS, ml.HEAD_DIM)).astype(np.float32) for _ in range(3))


def _attention_numpy(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
    return _softmax_numpy(scores) @ v


def attention_peers(q, k, v) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.attention``."""
    def jax_attention(jax):
        jnp = jax.numpy
        def attention(q, k, v):
            scores = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(jnp.float32(q.shape[-1]))
            return jax.nn.softmax(scores, axis=-1) @ v
        fn = jax.jit(attention)
        args = [jax.device_put(a) for a in (q, k, v)]
        return lambda: fn(*args).block_until_ready()

    def tf_attention(tf):
        @tf.function
        def attention(q, k, v):
            scores = tf.matmul(q, k, transpose_b=True) / tf.sqrt(tf.cast(tf.shape(q)[-1], tf.float32))
            return tf.matmul(tf.nn.softmax(scores), v)
        tensors = [tf.constant(a) for a in (q, k, v)]
        return lambda: attention(*tensors)
    return {"numpy": lambda: _attention_numpy(q, k, v), "jax.jit": jax_attention, "tf.function": tf_attention}


@bench_class("row-wise normalization")
def normalization(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    x, gamma, beta = normalization_inputs()
    norm = bench.measure(f"layer norm over [{ml.ROWS}, {ml.COLS}]", {
        "built": lambda: built.layer_norm(x, gamma, beta), **layer_norm_peers(x, gamma, beta)}, tolerance=LAYER_NORM)
    soft = bench.measure(f"softmax over [{ml.ROWS}, {ml.COLS}]", {
        "built": lambda: built.softmax(x), **softmax_peers(x)}, tolerance=SOFTMAX)
    bench.faster_than(norm, "jax.jit", 1.0)
    bench.faster_than(soft, "jax.jit", 1.0)
    return [norm, soft]


def pairwise_inputs():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((ml.POINTS, 3)).astype(f32), rng.standard_normal((ml.POINTS, 3)).astype(f32)
    x, y = rng.standard_normal((ml.SET, ml.DEPTH)).astype(f32), rng.standard_normal((ml.SET, ml.DEPTH)).astype(f32)
    return a, b, x, y


def pairwise_peers(a, b) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.pairwise_distances``."""
    def numpy_version():
        diff = a[:, None, :] - b[None, :, :]
        return (diff * diff).sum(axis=-1)

    def jax_version(jax):
        fn = jax.jit(lambda a, b: jax.numpy.sum(jax.numpy.square(a[:, None, :] - b[None, :, :]), axis=-1))
        device = [jax.device_put(v) for v in (a, b)]
        return lambda: fn(*device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def distances(a, b):
            diff = tf.expand_dims(a, 1) - tf.expand_dims(b, 0)
            return tf.reduce_sum(diff * diff, axis=-1)
        tensors = [tf.constant(v) for v in (a, b)]
        return lambda: distances(*tensors)
    return {"numpy": numpy_version, "jax.jit": jax_version, "tf.function": tf_version}


def all_dots_peers(x, y) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.all_dots``."""
    def jax_dots(jax):
        fn = jax.jit(lambda x, y: jax.numpy.sum(x[:, None, :] * y[None, :, :], axis=-1))
        device = [jax.device_put(v) for v in (x, y)]
        return lambda: fn(*device).block_until_ready()

    def tf_dots(tf):
        @tf.function
        def dots(x, y):
            return tf.reduce_sum(tf.expand_dims(x, 1) * tf.expand_dims(y, 0), axis=-1)
        tensors = [tf.constant(v) for v in (x, y)]
        return lambda: dots(*tensors)
    return {"numpy": lambda: (x[:, None, :] * y[None, :, :]).sum(axis=-1), "jax.jit": jax_dots,
            "tf.function": tf_dots}


@bench_class("broadcast then reduce")
def pairwise(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    a, b, x, y = pairwise_inputs()
    row = bench.measure(f"pairwise squared distances [{ml.POINTS}, 3] x [{ml.POINTS}, 3]", {
        "built": lambda: built.pairwise_distances(a, b), **pairwise_peers(a, b)}, tolerance=DISTANCES)
    bench.faster_than(row, "jax.jit", 1.0)
    dots = bench.measure(f"all dot products [{ml.SET}, {ml.DEPTH}] x [{ml.SET}, {ml.DEPTH}] as a broadcast sum", {
        "built": lambda: built.all_dots(x, y), **all_dots_peers(x, y)}, tolerance=DOTS)
    bench.faster_than(dots, "jax.jit", 1.0)
    return [row, dots]


def newton_peers(a, steps) -> dict:
    """numpy, Numba, jax.jit and tf.function versions of ``ml.newton_sqrt``."""
    def numpy_version():
        x, half = a, f32(0.5)
        i = 0
        while i < steps:
            x = half * (x + a / x)
            i += 1
        return x

    def numba_version(numba):
        @numba.njit(cache=False)
        def newton_sqrt(a):
            x, half = a, np.float32(0.5)
            i = 0
            while i < steps:
                x = half * (x + a / x)
                i += 1
            return x
        scalar = f32(a)
        return lambda: newton_sqrt(scalar)

    def jax_version(jax):
        lax = jax.lax
        fn = jax.jit(lambda a: lax.while_loop(lambda s: s[0] < steps, lambda s: (s[0] + 1, 0.5 * (s[1] + a / s[1])),
                                              (0, a))[1])
        device = jax.device_put(a)
        return lambda: fn(device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def newton_sqrt(a):
            x = a
            i = tf.constant(0)
            while i < steps:
                x = 0.5 * (x + a / x)
                i += 1
            return x
        tensor = tf.constant(a)
        return lambda: newton_sqrt(tensor)
    return {"numpy": numpy_version, "jax.jit": jax_version, "tf.function": tf_version, "numba": numba_version}


@bench_class("scalar loop")
def newton(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    a = np.array(2.0, f32)
    row = bench.measure(f"{ml.NEWTON_STEPS} Newton steps, 0-d float32, tensor while", {
        "built": lambda: built.newton_sqrt(a), **newton_peers(a, ml.NEWTON_STEPS)}, tolerance=NEWTON)
    bench.within(row, "numba", 2.0)
    return [row]


def collatz_peers(n0) -> dict:
    """numpy, jax.jit and tf.function versions of ``ml.collatz_steps``."""
    def numpy_version():
        n, steps = n0, np.zeros_like(n0)
        while np.any(n > 1):
            active = n > 1
            n = np.where(active, np.where(n % 2 == 0, n // 2, 3 * n + 1), n)
            steps += active.astype(np.int32)
        return steps

    def jax_version(jax):
        jnp, lax = jax.numpy, jax.lax

        def body(state):
            n, steps = state
            active = n > 1
            return jnp.where(active, jnp.where(n % 2 == 0, n // 2, 3 * n + 1), n), steps + active.astype(jnp.int32)
        fn = jax.jit(lambda n: lax.while_loop(lambda s: jnp.any(s[0] > 1), body, (n, jnp.zeros_like(n)))[1])
        device = jax.device_put(n0)
        return lambda: fn(device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def collatz_steps(n):
            steps = tf.zeros_like(n)
            while tf.reduce_any(n > 1):
                active = n > 1
                n = tf.where(active, tf.where(n % 2 == 0, n // 2, 3 * n + 1), n)
                steps += tf.cast(active, tf.int32)
            return steps
        tensor = tf.constant(n0)
        return lambda: collatz_steps(tensor)
    return {"numpy": numpy_version, "jax.jit": jax_version, "tf.function": tf_version}


@bench_class("vector loop")
def collatz(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    n0 = np.arange(1, ml.COLLATZ + 1, dtype=np.int32)
    row = bench.measure(f"Collatz steps of {ml.COLLATZ} int32, while reduce_any", {
        "built": lambda: built.collatz_steps(n0), **collatz_peers(n0)}, tolerance=EXACT)
    bench.faster_than(row, "jax.jit", 1.0)
    return [row]


def rnn_inputs():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((ml.RNN_BATCH, ml.RNN_STEPS, ml.RNN_UNITS)).astype(f32)
    h0 = (rng.standard_normal((ml.RNN_BATCH, ml.RNN_UNITS)) * 0.1).astype(f32)
    w = (rng.standard_normal((ml.RNN_UNITS, ml.RNN_UNITS)) * 0.1).astype(f32)
    return xs, h0, w


def rnn_peers(xs, h0, w) -> dict:
    """numpy, jax.jit (``lax.scan``) and tf.function versions of ``ml.dynamic_rnn``."""
    def numpy_version():
        h, states = h0, []
        for t in range(xs.shape[1]):
            h = np.tanh(h @ w + xs[:, t])
            states.append(h)
        return np.stack(states, axis=1)

    def jax_version(jax):
        jnp, lax = jax.numpy, jax.lax

        def run(xs, h0, w):
            def step(h, x):
                h = jnp.tanh(h @ w + x)
                return h, h
            _, states = lax.scan(step, h0, jnp.transpose(xs, (1, 0, 2)))
            return jnp.transpose(states, (1, 0, 2))
        fn, device = jax.jit(run), [jax.device_put(v) for v in (xs, h0, w)]
        return lambda: fn(*device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def dynamic_rnn(input_data, initial_state, w):
            input_data = tf.transpose(input_data, [1, 0, 2])
            max_seq_len = input_data.shape[0]
            states = tf.TensorArray(tf.float32, size=max_seq_len)
            state = initial_state
            for i in tf.range(max_seq_len):
                state = tf.tanh(tf.matmul(state, w) + input_data[i])
                states = states.write(i, state)
            return tf.transpose(states.stack(), [1, 0, 2])
        tensors = [tf.constant(v) for v in (xs, h0, w)]
        return lambda: dynamic_rnn(*tensors)
    return {"numpy": numpy_version, "jax.jit": jax_version, "tf.function": tf_version}


@bench_class("recurrent loop")
def rnn(bench: Bench) -> list[Row]:
    built = bench.module("ml")
    xs, h0, w = rnn_inputs()
    name = f"dynamic_rnn tanh(h @ w + x[t]), batch {ml.RNN_BATCH}, {ml.RNN_UNITS} units, {ml.RNN_STEPS} steps"
    row = bench.measure(name, {"built": lambda: built.dynamic_rnn(xs, h0, w), **rnn_peers(xs, h0, w)},
                        tolerance=RNN)
    bench.faster_than(row, "jax.jit", 1.0)
    return [row]
