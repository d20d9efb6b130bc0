"""SPEC "Third wave": a shuffled, batched in-memory dataset epoch inside a Function, within 2x of numpy.

The built functions are in ``benchmarks/data_loops.py``. One epoch over ``from_tensor_slices((x, y))`` of a
[4096, 784] float32 ``x`` and int32 ``y``, shuffled with a buffer of the whole dataset, in batches of 64, each
batch summed: built ahead of time (the dataset an argument of the built function), against numpy indexing a
permutation (``x[perm[i:i + 64]]`` per batch, as a numpy user writes the epoch) and ``tf.function`` over the
same ``tf.data`` pipeline. A second row puts a ``map`` before the shuffle (``x * 2``; numpy scales each
gathered batch). Values are small integers, so every implementation's total is exact and they agree to the
last bit. Target: built within 2x of numpy.
"""
from __future__ import annotations

import numpy as np

from benchmarks import data_loops
from benchmarks.harness import Bench, Row, Tolerance, bench_class

# the sum of every element of an epoch, added in another order by each implementation (each shuffles its own way)
EPOCH = Tolerance(rtol=1e-4)

ROWS, FEATURES, BATCH = data_loops.ROWS, data_loops.FEATURES, data_loops.BATCH


def _data():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 8, (ROWS, FEATURES)).astype(np.float32)
    y = rng.integers(0, 10, ROWS).astype(np.int32)
    return x, y


def _numpy_epoch(x, y, scale=None):
    rng = np.random.default_rng(3)

    def epoch():
        perm = rng.permutation(ROWS)
        total = 0.0
        for i in range(0, ROWS, BATCH):
            idx = perm[i:i + BATCH]
            xb = x[idx] if scale is None else x[idx] * np.float32(scale)
            total += float(xb.sum(dtype=np.float32)) + float(y[idx].sum())
        return total
    return epoch


def _tf_epoch(x, y, scale=None):
    def make(tf):
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        if scale is not None:
            ds = ds.map(lambda a, b: (a * scale, b))
        ds = ds.shuffle(ROWS).batch(BATCH)

        @tf.function
        def epoch(ds):
            total = tf.constant(0.0, tf.float64)
            for xb, yb in ds:
                total += tf.cast(tf.reduce_sum(xb), tf.float64) + tf.cast(tf.reduce_sum(yb), tf.float64)
            return total
        return lambda: epoch(ds)
    return make


@bench_class("dataset loops", wave="third", modules=("data_loops",))
def dataset_loops(bench: Bench) -> list[Row]:
    built = bench.module("data_loops")
    x, y = _data()
    plain = built.shuffled_batches(x, y)
    mapped = built.mapped_shuffled_batches(x, y)
    for ds in (plain, mapped):
        if not built.epoch_sum.get_concrete_function(ds).native:
            raise RuntimeError("the built epoch did not find its native signature")
    row = bench.measure(f"dataset epoch: from_tensor_slices(x [{ROWS}, {FEATURES}], y).shuffle({ROWS})"
                        f".batch({BATCH}), each batch summed", {
                            "built": lambda: built.epoch_sum(plain), "numpy": _numpy_epoch(x, y),
                            "tf.function": _tf_epoch(x, y)}, tolerance=EPOCH)
    bench.within(row, "numpy", 2.0)
    mapped_row = bench.measure("same with .map(x * 2) before the shuffle", {
        "built": lambda: built.epoch_sum(mapped), "numpy": _numpy_epoch(x, y, 2.0),
        "tf.function": _tf_epoch(x, y, 2.0)}, tolerance=EPOCH)
    bench.within(mapped_row, "numpy", 2.0)
    return [row, mapped_row]
