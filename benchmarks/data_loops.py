"""The built functions of the "dataset loops" class: epochs over an in-memory dataset inside a Function.

``python -m benchmarks`` builds this module ahead of time. Each function takes the dataset as its argument
(one built signature serves every dataset of the same pipeline); the module-level concrete functions below
declare the pipelines the benchmark runs: ``from_tensor_slices((x, y)).shuffle(N).batch(BATCH)`` and the same
with a ``map`` before the shuffle.
"""
import numpy as np

import runtime as rt

ROWS, FEATURES, BATCH = 4096, 784, 64


@rt.function
def epoch_sum(ds):
    """One pass over the batches: the sum of every batch of x and y (in float64, so every peer's total is exact)."""
    total = rt.constant(0.0, rt.float64)
    for xb, yb in ds:
        total += rt.cast(rt.reduce_sum(xb), rt.float64) + rt.cast(rt.reduce_sum(yb), rt.float64)
    return total


def scaled(x, y):
    return x * 2.0, y


def shuffled_batches(x, y, buffer_size=ROWS, seed=None):
    return rt.data.Dataset.from_tensor_slices((x, y)).shuffle(buffer_size, seed=seed).batch(BATCH)


def mapped_shuffled_batches(x, y, buffer_size=ROWS, seed=None):
    return rt.data.Dataset.from_tensor_slices((x, y)).map(scaled).shuffle(buffer_size, seed=seed).batch(BATCH)


_x, _y = np.zeros((1, FEATURES), np.float32), np.zeros((1,), np.int32)
epoch_sum.get_concrete_function(shuffled_batches(_x, _y))
epoch_sum.get_concrete_function(mapped_shuffled_batches(_x, _y))
