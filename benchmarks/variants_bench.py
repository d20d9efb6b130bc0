"""SPEC "Third wave": the same computations spelled another way, and tensor loops of elementwise updates.

- variants: each second-wave workload as ``benchmarks/ml.py`` / ``training.py`` declare it (static sizes) and as
  ``benchmarks/variants.py`` spells it: ``None`` for batch/time/length dims, trip counts and dims from
  ``rt.shape``, an RNN without a TensorArray; a softmax over a classifier's logits (rows of 10), softmax and
  layer norm over rows of 100 (whole vectors and part of one), a batched attention (GEMM-bound like the
  dense layers: their target), columns standardized by their batch statistics (reductions over the rows), and a
  linear regression trained in a tensor loop (matrix-vector products; its targets a column declared ``[None,
  1]`` or ``[None, None]``), static and ``None``. Targets: every spelling within 1.25x of the best spelling
  of its workload, and the ``None`` spelling meets the static one's peer target (measured in the same row).
- tensor while: a vectorised Mandelbrot (``MANDELBROT`` grid, ``variants.MANDELBROT_STEPS`` steps) in a tensor
  ``while``, built, vs numpy. Target: >= 5x numpy.
"""
from __future__ import annotations

import numpy as np

from benchmarks import ml, second_wave, training, training_bench, variants
from benchmarks.harness import EXACT, Bench, Check, PeerTolerances, Row, Tolerance, bench_class

f32 = np.float32
SPELLING_TARGET = 1.25
MANDELBROT = 256
# escape counts: numpy's separate ops give the built code's bits; a peer that fuses multiply-adds moves the orbit of
# a point near the set's edge, whose count may then differ by up to the number of steps (jax.jit: 24 of 65,536
# points, by up to 21 steps, on AVX-512): those may differ at 0.1% of the points, the rest exactly
MANDELBROT_COUNTS = PeerTolerances(EXACT, (("jax.jit", Tolerance(outliers=0.001)),))


def _spellings(bench: Bench, name: str, spellings: dict, peers: dict, targets: list, any_size: str,
               tolerance: Tolerance) -> Row:
    """Time the spellings (the first is the static one, the reference) and ``peers`` in one row; check every
    spelling against the best one, and ``targets`` ((peer, at least) of the static spelling's class) for the
    static spelling and for ``any_size``, the spelling with ``None`` dims."""
    labels = list(spellings)
    names = {label: "built" if label == labels[0] else f"built: {label}" for label in labels}
    implementations = {names[label]: fn for label, fn in spellings.items()}
    row = bench.measure(f"{name} (built: {labels[0]})", {**implementations, **peers}, tolerance=tolerance)
    timed = {label: row.times[names[label]] for label in labels}
    best = min(timed.values())
    for label, seconds in timed.items():
        row.checks.append(Check(f"{label} / best spelling", seconds / best, SPELLING_TARGET, at_most=True))
    for peer, at_least in targets:
        seconds = row.times.get(peer)
        row.checks.append(Check(f"{peer} / {any_size}", None if seconds is None else seconds / timed[any_size],
                                at_least))
    return row


@bench_class("variants", wave="third")
def spellings(bench: Bench) -> list[Row]:
    static, built = bench.module("ml"), bench.module("variants")
    rows = []

    args = second_wave.dense_inputs()
    rows.append(_spellings(bench, "dense layers", {
        "static": lambda: static.dense(*args), "None batch": lambda: built.dense(*args)},
        second_wave.dense_peers(args), [("jax.jit", 0.8), ("numpy", 1.0)], "None batch", second_wave.DENSE))

    x, gamma, beta = second_wave.normalization_inputs()
    rows.append(_spellings(bench, "layer norm", {
        "static": lambda: static.layer_norm(x, gamma, beta), "None rows": lambda: built.layer_norm(x, gamma, beta),
        "None rows and columns": lambda: built.layer_norm_any(x, gamma, beta)},
        second_wave.layer_norm_peers(x, gamma, beta), [("jax.jit", 1.0)], "None rows", second_wave.LAYER_NORM))
    rows.append(_spellings(bench, "softmax", {
        "static": lambda: static.softmax(x), "None rows": lambda: built.softmax(x),
        "None rows and columns": lambda: built.softmax_any(x)},
        second_wave.softmax_peers(x), [("jax.jit", 1.0)], "None rows", second_wave.SOFTMAX))

    logits = np.random.default_rng(5).standard_normal(variants.LOGITS).astype(f32) * 3
    rows.append(_spellings(bench, f"softmax over logits {list(variants.LOGITS)}", {
        "static": lambda: built.softmax_logits(logits), "None rows and columns": lambda: built.softmax_any(logits)},
        second_wave.softmax_peers(logits), [("jax.jit", 1.0)], "None rows and columns", second_wave.SOFTMAX))

    rng = np.random.default_rng(6)
    short = rng.standard_normal(variants.SHORT).astype(f32)
    gain = rng.uniform(0.5, 1.5, variants.SHORT[1]).astype(f32)
    bias = rng.standard_normal(variants.SHORT[1]).astype(f32)
    rows.append(_spellings(bench, f"softmax over rows of {variants.SHORT[1]}", {
        "static": lambda: built.softmax_short(short), "None rows and columns": lambda: built.softmax_any(short)},
        second_wave.softmax_peers(short), [("jax.jit", 1.0)], "None rows and columns", second_wave.SOFTMAX))
    rows.append(_spellings(bench, f"layer norm over rows of {variants.SHORT[1]}", {
        "static": lambda: built.layer_norm_short(short, gain, bias),
        "None rows and columns": lambda: built.layer_norm_any(short, gain, bias)},
        second_wave.layer_norm_peers(short, gain, bias), [("jax.jit", 1.0)], "None rows and columns",
        second_wave.LAYER_NORM))

    columns = rng.standard_normal(variants.COLUMNS).astype(f32) * 2 + 1
    rows.append(_spellings(bench, f"standardized columns {list(variants.COLUMNS)} (batch statistics)", {
        "static": lambda: built.standardize_columns_static(columns),
        "None rows and columns": lambda: built.standardize_columns(columns)},
        _columns_peers(columns), [("jax.jit", 1.0)], "None rows and columns", second_wave.LAYER_NORM))

    q, k, v = second_wave.attention_inputs()
    rows.append(_spellings(bench, f"attention {[ml.HEADS, ml.TOKENS, ml.HEAD_DIM]}", {
        "static": lambda: static.attention(q, k, v), "None dims": lambda: built.attention(q, k, v)},
        second_wave.attention_peers(q, k, v), [("jax.jit", 0.8), ("numpy", 1.0)], "None dims", second_wave.ATTENTION))

    a, b, p, q = second_wave.pairwise_inputs()
    rows.append(_spellings(bench, "pairwise squared distances", {
        "static": lambda: static.pairwise_distances(a, b), "None points": lambda: built.pairwise_distances(a, b)},
        second_wave.pairwise_peers(a, b), [("jax.jit", 1.0)], "None points", second_wave.DISTANCES))
    rows.append(_spellings(bench, "all dot products", {
        "static": lambda: static.all_dots(p, q), "None rows": lambda: built.all_dots(p, q)},
        second_wave.all_dots_peers(p, q), [("jax.jit", 1.0)], "None rows", second_wave.DOTS))

    a0 = np.array(2.0, f32)
    steps = np.array(ml.NEWTON_STEPS, np.int32)
    newton_peers = {k: v for k, v in second_wave.newton_peers(a0, ml.NEWTON_STEPS).items() if k == "numba"}
    row = _spellings(bench, "Newton steps", {
        "static": lambda: static.newton_sqrt(a0), "trip count a tensor": lambda: built.newton_sqrt(a0, steps)},
        newton_peers, [], "trip count a tensor", second_wave.NEWTON)
    seconds = row.times.get("numba")
    row.checks.append(Check("trip count a tensor / numba", None if seconds is None else
                            row.times["built: trip count a tensor"] / seconds, 2.0, at_most=True))
    rows.append(row)

    n0 = np.arange(1, ml.COLLATZ + 1, dtype=np.int32)
    rows.append(_spellings(bench, "Collatz steps", {
        "static": lambda: static.collatz_steps(n0), "None length": lambda: built.collatz_steps(n0)},
        second_wave.collatz_peers(n0), [("jax.jit", 1.0)], "None length", EXACT))

    xs, h0, w = second_wave.rnn_inputs()
    rnn_peers = second_wave.rnn_peers(xs, h0, w)
    any_size = "None batch and time, trip count from rt.shape"
    states = _spellings(bench, "dynamic_rnn", {
        "static": lambda: static.dynamic_rnn(xs, h0, w), any_size: lambda: built.dynamic_rnn(xs, h0, w)},
        rnn_peers, [("jax.jit", 1.0)], any_size, second_wave.RNN)
    last = _spellings(bench, "the same recurrence without a TensorArray, last state only", {
        "static": lambda: built.rnn_last_state_static(xs, h0, w), any_size: lambda: built.rnn_last_state(xs, h0, w)},
        {}, [], any_size, second_wave.RNN)
    # keeping every state in a TensorArray costs its stores, not another way of running the loop
    last.checks.append(Check("with a TensorArray / without", min(states.times["built"], states.times[
        f"built: {any_size}"]) / min(last.times["built"], last.times[f"built: {any_size}"]), SPELLING_TARGET,
        at_most=True))
    rows += [states, last]

    rx = rng.standard_normal(variants.REGRESSION).astype(f32)
    ry = (rx @ rng.standard_normal((variants.REGRESSION[1], 1)) + 0.1).astype(f32)
    rows.append(_spellings(bench, f"linear regression, {variants.REGRESSION_STEPS} steps of gradient descent in a "
                                  f"tensor loop, x {list(variants.REGRESSION)}", {
        "static": lambda: built.fit_regression_static(rx, ry), "None dims, y [None, 1]":
            lambda: built.fit_regression_column(rx, ry), "None dims": lambda: built.fit_regression(rx, ry)},
        _regression_peers(rx, ry), [("jax.jit", 1.0)], "None dims", REGRESSION))

    bx, by = training_bench._batch()
    weights = [v.numpy().copy() for v in built.model.trainable_variables]
    rows.append(_spellings(bench, "training step", {
        "static": lambda: built.train_step_static(bx, by), "None batch": lambda: built.train_step(bx, by)},
        training_bench.training_peers(weights, bx, by), [("jax.jit", 1.0)], "None batch", training_bench.LOSS))
    training_bench.tf_function_target(bench, rows[-1], "built: None batch", "None batch")
    rows += training_bench.gemm_rows(bench)

    image = training_bench.conv_inputs()
    kernel, bias = (v.numpy() for v in built.conv_layer.trainable_variables)
    rows.append(_spellings(bench, "convolution", {
        "static": lambda: built.conv_static(image), "None batch and size": lambda: built.conv(image)},
        training_bench.conv_peers(image, kernel, bias), [], "None batch and size", training_bench.CONVOLUTION))
    rows[-1].checks.append(_within(rows[-1], "None batch and size", "tf.function", 1.5))
    assert training.CHANNELS == variants.CHANNELS
    return rows


# 50 steps from zero weights: float32 sums of 2048 products in other orders than the peers'
REGRESSION = Tolerance(rtol=1e-4, atol=1e-5)


def _columns_numpy(x):
    mean = x.mean(axis=0)
    return (x - mean) / np.sqrt(np.square(x - mean).mean(axis=0) + f32(1e-5))


def _columns_peers(x) -> dict:
    """numpy, jax.jit and tf.function versions of ``variants.standardize_columns``."""
    def jax_version(jax):
        jnp = jax.numpy

        def standardize(x):
            mean = jnp.mean(x, axis=0)
            return (x - mean) * jax.lax.rsqrt(jnp.mean(jnp.square(x - mean), axis=0) + 1e-5)
        fn, device = jax.jit(standardize), jax.device_put(x)
        return lambda: fn(device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def standardize(x):
            mean = tf.reduce_mean(x, axis=0)
            return (x - mean) * tf.math.rsqrt(tf.reduce_mean(tf.square(x - mean), axis=0) + 1e-5)
        tensor = tf.constant(x)
        return lambda: standardize(tensor)
    return {"numpy": lambda: _columns_numpy(x), "jax.jit": jax_version, "tf.function": tf_version}


def _regression_numpy(x, y):
    w = np.zeros((x.shape[1], 1), f32)
    for _ in range(variants.REGRESSION_STEPS):
        w = w - f32(0.05) * (x.T @ ((x @ w - y) * f32(2 / len(x))))
    return w


def _regression_peers(x, y) -> dict:
    """numpy, jax.jit (``fori_loop`` over ``grad``) and tf.function versions of ``variants.fit_regression``."""
    def jax_version(jax):
        jnp = jax.numpy

        def fit(x, y):
            loss = jax.grad(lambda w: jnp.mean(jnp.square(x @ w - y)))
            return jax.lax.fori_loop(0, variants.REGRESSION_STEPS, lambda i, w: w - 0.05 * loss(w),
                                     jnp.zeros((x.shape[1], 1), jnp.float32))
        fn, device = jax.jit(fit), [jax.device_put(a) for a in (x, y)]
        return lambda: fn(*device).block_until_ready()

    def tf_version(tf):
        @tf.function
        def fit(x, y):
            w = tf.zeros([tf.shape(x)[1], 1])
            for _ in tf.range(variants.REGRESSION_STEPS):
                with tf.GradientTape() as tape:
                    tape.watch(w)
                    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
                w = w - 0.05 * tape.gradient(loss, w)
            return w
        tensors = [tf.constant(a) for a in (x, y)]
        return lambda: fit(*tensors)
    return {"numpy": lambda: _regression_numpy(x, y), "jax.jit": jax_version, "tf.function": tf_version}


def _within(row: Row, label: str, peer: str, at_most: float) -> Check:
    seconds = row.times.get(peer)
    return Check(f"{label} / {peer}", None if seconds is None else row.times[f"built: {label}"] / seconds, at_most,
                 at_most=True)


def _mandelbrot_numpy(cr, ci):
    zr, zi, count = np.zeros_like(cr), np.zeros_like(ci), np.zeros_like(cr)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(variants.MANDELBROT_STEPS):
            zr, zi = zr * zr - zi * zi + cr, f32(2.0) * zr * zi + ci
            count += (zr * zr + zi * zi < f32(4.0)).astype(f32)
    return count


def _mandelbrot_grid(n: int):
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, n, dtype=f32), np.linspace(-1.3, 1.3, n, dtype=f32))
    return np.ascontiguousarray(cr), np.ascontiguousarray(ci)


@bench_class("tensor while", wave="third", modules=("variants",))
def mandelbrot(bench: Bench) -> list[Row]:
    built = bench.module("variants")
    cr, ci = _mandelbrot_grid(MANDELBROT)

    def jax_version(jax):
        jnp, lax = jax.numpy, jax.lax

        def run(cr, ci):
            def body(i, state):
                zr, zi, count = state
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                return zr, zi, count + (zr * zr + zi * zi < 4.0).astype(jnp.float32)
            zero = jnp.zeros_like(cr)
            return lax.fori_loop(0, variants.MANDELBROT_STEPS, body, (zero, zero, zero))[2]
        fn, device = jax.jit(run), [jax.device_put(v) for v in (cr, ci)]
        return lambda: fn(*device).block_until_ready()

    row = bench.measure(f"Mandelbrot {MANDELBROT}x{MANDELBROT}, {variants.MANDELBROT_STEPS} steps, tensor while "
                        "over [None, None]", {"built": lambda: built.mandelbrot(cr, ci),
                                              "numpy": lambda: _mandelbrot_numpy(cr, ci), "jax.jit": jax_version},
                        tolerance=MANDELBROT_COUNTS)
    bench.faster_than(row, "numpy", 5.0)
    bench.faster_than(row, "jax.jit", 1.0)
    return [row]
