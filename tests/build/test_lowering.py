"""The lowering stage, differentially: native == generic executor == eager on generated inputs.

One module is built (without constant folding, so that every op with a native lowering stays in the
graphs: ``rt.eye(3)`` would otherwise become a constant) and hypothesis draws inputs for:

- broadcasts between every pair of ranks 0..4, with run-time dims of 1 (a zero stride) and run-time
  sizes that do not broadcast (an ``InvalidArgumentError`` in every mode);
- reductions over every axis subset of a rank-3 tensor, with and without ``keepdims``, of contiguous
  and transposed (strided) inputs, empty ones included;
- loops whose carried values change shape (a growing vector, a halving one), matrix loops, scalar
  loops, a loop of TensorArray writes, a loop around an ``if``;
- row groups (softmax, log-softmax, layer and RMS norms) at sizes under and over the parallel threshold,
  rows shorter and longer than a float32 sum's chunk, one row, zero rows, inf and NaN, strided and
  broadcast inputs.

A registry walk checks that every op type the lowering handles natively runs natively in this module.
"""
from __future__ import annotations

import importlib
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime import executor
from runtime.graph import all_operations
from runtime.optimizer import PASS_NAMES
from transpiler.codegen import EMITTER_PASSES
from transpiler.lowering import lower_function, native_op_types

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

PROGRAMS = '''
import runtime as rt
from runtime.ops.dataset_ops import shuffle_indices

F = rt.float32


def spec(rank, dtype=F):
    return rt.TensorSpec([None] * rank, dtype)


@rt.function
def bcast(a, b):
    return a * b + rt.maximum(a, b) - rt.where(a > b, a, b * 0.5)


for ra in range(5):
    for rb in range(5):
        bcast.get_concrete_function(spec(ra), spec(rb))
bcast.get_concrete_function(rt.TensorSpec([None, 3], F), rt.TensorSpec([2, None, 1], F))
bcast.get_concrete_function(rt.TensorSpec([4, 1, 3], F), rt.TensorSpec([None], F))

AXES = [None] + [list(c) for r in range(4) for c in __import__("itertools").combinations(range(3), r)]


@rt.function
def totals(x, axis, keepdims):
    s = rt.transpose(x, [2, 0, 1])
    return (rt.reduce_sum(x, axis, keepdims), rt.reduce_mean(x, axis, keepdims), rt.reduce_prod(x, axis, keepdims),
            rt.reduce_any(x > 0.5, axis, keepdims), rt.reduce_all(x > -0.5, axis, keepdims),
            rt.reduce_mean(s * 2.0, axis, keepdims))


@rt.function
def extremes(x, axis, keepdims):
    s = rt.transpose(x, [1, 2, 0])
    return rt.reduce_max(x, axis, keepdims), rt.reduce_min(x - 1.0, axis, keepdims), rt.reduce_max(s, axis, keepdims)


@rt.function
def integer_totals(x, axis):
    return rt.reduce_sum(x, axis), rt.reduce_mean(x, axis), rt.reduce_min(x % 3, axis)


for k, axis in enumerate(AXES):
    for keepdims in (False, True):
        totals.get_concrete_function(spec(3), axis, keepdims)
    extremes.get_concrete_function(spec(3), axis, k % 2 == 1)
    integer_totals.get_concrete_function(spec(3, rt.int32), axis)

# static shapes whose reductions over leading or middle axes accumulate a short kept run locally (the last two:
# a kept run longer than a local array, in a row of partial results per chunk of rows)
COLUMNS = [((1, 40000, 8), [0, 1]), ((3, 40000, 8), [1]), ((64, 2000, 4), [1]), ((40000, 3, 8), [0, 1]),
           ((5, 7, 3), [0, 1]), ((6, 4, 600), [1]), ((2000, 2, 300), [0]), ((600, 1030, 1), [0])]
for _shape, _axis in COLUMNS:
    totals.get_concrete_function(rt.TensorSpec(_shape, F), _axis, False)
    extremes.get_concrete_function(rt.TensorSpec(_shape, F), _axis, AXES.index(_axis) % 2 == 1)
    integer_totals.get_concrete_function(rt.TensorSpec(_shape, rt.int32), _axis)


@rt.function(input_signature=[spec(1), rt.TensorSpec([], rt.int32)])
def grow(x, n):
    i = 0
    while i < n:
        rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([None]))])
        x = rt.concat([x, x[-1:] * 2.0 + 1.0], axis=0)
        i += 1
    return x, rt.reduce_sum(x)


@rt.function(input_signature=[spec(1)])
def halve(x):
    while rt.size(x) > 1:
        rt.autograph.experimental.set_loop_options(shape_invariants=[(x, rt.TensorShape([None]))])
        x = x[::2] * 0.5 + rt.reduce_mean(x)
    return x


@rt.function(input_signature=[rt.TensorSpec([None, 4], F), rt.TensorSpec([], rt.int32)])
def matrix_loop(m, n):
    total = rt.zeros([4])
    for i in rt.range(n):
        if rt.reduce_sum(m) > 0.0:
            m = rt.tanh(rt.matmul(m, rt.ones([4, 4]) * 0.25)) + 0.125
        else:
            m = m * -1.0 + 0.5
        total += rt.reduce_mean(m, axis=0)
    return m, total


@rt.function(input_signature=[rt.TensorSpec([], F), rt.TensorSpec([], rt.int32)])
def newton(a, n):
    x = a + 1.0
    i = 0
    while i < n:
        x = x - (x * x - a) / (2.0 * x)
        i += 1
    return x


@rt.function(input_signature=[spec(1, rt.int32)])
def collatz(x):
    steps = rt.zeros_like(x)
    while rt.reduce_any(x > 1):
        active = x > 1
        steps += rt.cast(active, rt.int32)
        x = rt.where(active, rt.where(x % 2 == 0, x // 2, 3 * x + 1), x)
    return steps


@rt.function(input_signature=[rt.TensorSpec([None, 5, 3], F), rt.TensorSpec([3, 3], F)])
def rnn(xs, w):
    xs = rt.transpose(xs, [1, 0, 2])
    states = rt.TensorArray(F, size=5)
    h = rt.zeros_like(xs[0])
    for t in rt.range(5):
        h = rt.tanh(rt.matmul(h, w) + xs[t])
        states = states.write(t, h)
    first = states.read(0)
    return rt.transpose(states.stack(), [1, 0, 2]), first, states.size()


@rt.function(input_signature=[spec(1), rt.TensorSpec([], rt.int32)])
def callback_loop(x, n):
    for i in rt.range(n):
        if rt.reduce_sum(x) > 100.0:
            x = x * 0.5
        else:
            x = rt.cumsum(x) * 0.5 + 1.0          # a Python callback, its result carried by the loop
    return x


@rt.function(input_signature=[spec(2)])
def unstacked(x):
    ta = rt.TensorArray(F, size=0, dynamic_size=True).unstack(x)
    return ta.read(1) + ta.read(0), ta.size()


@rt.function(input_signature=[spec(2), spec(1), spec(1)])
def normalize(x, gamma, beta):
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    var = rt.reduce_mean(rt.square(x - mean), axis=-1, keepdims=True)
    y = (x - mean) / rt.sqrt(var + 1e-5) * gamma + beta
    return y, rt.nn.softmax(y * 2.0), rt.reduce_max(y, axis=1)


@rt.function
def softmaxes(x):
    shifted = x - rt.reduce_max(x, axis=-1, keepdims=True)
    log_softmax = shifted - rt.math.log(rt.reduce_sum(rt.exp(shifted), axis=-1, keepdims=True))
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True), log_softmax, e * 2.0     # e read after the host's store


@rt.function
def softmax_only(x):
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function
def norms(x, gamma):
    rms = x / rt.sqrt(rt.reduce_mean(rt.square(x), axis=-1, keepdims=True) + 1e-6) * gamma
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = rt.reduce_mean(centered * centered, axis=-1, keepdims=True)
    return rms, centered / rt.sqrt(var + 1e-5), var, rt.reduce_sum(x, axis=-1), mean


@rt.function(input_signature=[spec(2)])
def transposed_rows(x):
    t = rt.transpose(x)
    e = rt.exp(t - rt.reduce_max(t, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function(input_signature=[spec(1), spec(1)])
def outer_softmax(a, b):
    logits = a[:, None] * b[None, :]
    e = rt.exp(logits - rt.reduce_max(logits, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True)


@rt.function
def shares(x):
    return x / rt.reduce_sum(x, axis=-1, keepdims=True)


shares.get_concrete_function(spec(2))
shares.get_concrete_function(spec(2, rt.float64))


@rt.function
def pools(x):
    """Average pooling, SAME and VALID, with the gradient of both."""
    with rt.GradientTape() as tape:
        tape.watch(x)
        same = rt.nn.avg_pool2d(x, 3, 2, "SAME")
        valid = rt.keras.layers.AveragePooling2D((2, 3), strides=(1, 2))(x)
        loss = rt.reduce_sum(same * same) + rt.reduce_sum(valid)
    return same, valid, tape.gradient(loss, x)


@rt.function(input_signature=[rt.TensorSpec([None, None, None, None], F), rt.TensorSpec([None], F)])
def composites(x, v):
    """Functions rt composes from other ops: gradient clipping, meshgrid, batch normalization, upsampling,
    padding, log_sigmoid."""
    (a, b), norm = rt.clip_by_global_norm([x, v], 1.5)
    gx, gy = rt.meshgrid(v, v[:2] * 2.0)
    mean, var = rt.nn.moments(x, axes=[0, 1, 2])
    normed = rt.nn.batch_normalization(x, mean, var, None, 2.0, 1e-3)
    up = rt.keras.layers.ZeroPadding2D(1)(rt.keras.layers.UpSampling2D(2)(x))
    return a, b, norm, gx, gy, normed, up, rt.math.log_sigmoid(v), rt.clip_by_norm(v, 0.5)


TABLE = rt.cast(rt.linspace(-3.0, 3.0, 50_000), F)        # 200 KB: embedded as a binary file (.incbin)


@rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
def big_constant(i):
    return rt.gather(TABLE, i) * 2.0, rt.reduce_max(TABLE[::7]) + rt.reduce_sum(rt.abs(TABLE[::7])) * 1e-3


pools.get_concrete_function(rt.TensorSpec([None, None, None, None], F))
pools.get_concrete_function(rt.TensorSpec([2, 7, 9, 3], F))


@rt.function(input_signature=[spec(3), spec(0, rt.int32)])
def checked_gates(x, steps):
    """An LSTM's gates cut by rt.split from a run-time width (an Assert of its divisibility, every step), an
    explicit Assert, and one_hot/band_part over run-time sizes."""
    total = rt.zeros_like(x[0, :, :1])
    for _ in rt.range(steps):
        i, f, g, o = rt.split(x[0], 4, axis=1)
        total = total + rt.reduce_sum(rt.sigmoid(i) * f + g * o, axis=1, keepdims=True)
    rt.debugging.Assert(steps < 100, ["too many steps:", steps])
    mask = rt.linalg.band_part(rt.ones([rt.shape(x)[1], rt.shape(x)[1]]), -1, 0)
    hot = rt.one_hot(rt.cast(rt.reduce_sum(mask, 1), rt.int32) - 1, rt.shape(x)[1])
    return total, hot * mask


@rt.function(input_signature=[spec(2), spec(1, rt.int64)])
def any_classes(logits, labels):
    """A cross entropy whose number of classes only the run time tells, and its gradient."""
    with rt.GradientTape() as tape:
        tape.watch(logits)
        losses = rt.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        loss = rt.reduce_mean(losses)
    return losses, tape.gradient(loss, logits)

ROW_SHAPES = [(3, 512), (2, 1030), (5, 7), (1, 1), (0, 700), (1, 2049), (2, 1024), (3, 16), (3, 17), (4, 50),
              (2, 100), (2, 128), (2, 600)]
PIPELINED_SHAPES = [(1001, 100), (3, 10)]     # many short rows: each thread's rows pipelined (pipeline.py)
for shape in ROW_SHAPES + PIPELINED_SHAPES + [(None, None)]:
    softmaxes.get_concrete_function(rt.TensorSpec(shape, F))
    softmax_only.get_concrete_function(rt.TensorSpec(shape, F))
    norms.get_concrete_function(rt.TensorSpec(shape, F), rt.TensorSpec(shape[1:], F))
norms.get_concrete_function(rt.TensorSpec([3, 0], F), rt.TensorSpec([0], F))


@rt.function(input_signature=[spec(2), spec(2)])
def pairwise(a, b):
    return rt.reduce_sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


@rt.function(input_signature=[spec(2), spec(2), spec(1)])
def dense(x, w, b):
    return (rt.nn.softmax(rt.nn.relu(rt.matmul(x, w) + b)), rt.matmul(rt.transpose(x), x),
            rt.matmul(x, x, transpose_a=True), rt.matmul(w, w, transpose_b=True))


@rt.function(input_signature=[spec(3), spec(3)])
def batched(a, b):
    return rt.matmul(a, b), rt.matmul(a, b, transpose_a=True, transpose_b=True) + 1.0


weights = rt.Variable(rt.zeros([3]))


@rt.function(input_signature=[spec(1)])
def variables(x):
    weights.assign(x[:3] * 2.0)
    weights.assign_add(rt.ones([3]))
    weights.assign_sub(x[1:4])
    return weights.read_value() * 1.0


@rt.function(input_signature=[rt.TensorSpec([None, None, None, 3], F), rt.TensorSpec([3, 3, 3, 4], F),
                              spec(1, rt.int32)])
def cnn(x, w, labels):
    """Convolutions, pooling, log-softmax, cross entropy: forward, gradients and (a penalty on the input's
    gradient) second order: Conv2DBackpropInput/Filter, MaxPoolGrad, MaxPoolGradGrad."""
    with rt.GradientTape() as outer:
        outer.watch(w)
        with rt.GradientTape() as tape:
            tape.watch([x, w])
            y = rt.nn.relu(rt.nn.conv2d(x, w, 1, "SAME"))
            z = rt.nn.conv2d(y, rt.ones([2, 2, 4, 4]) * 0.1, 2, "VALID")
            logits = rt.reduce_mean(rt.nn.max_pool2d(y, 2, 2, "VALID"), axis=[1, 2]) + rt.reduce_mean(z, axis=[1, 2])
            loss = rt.reduce_mean(rt.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        gx, gw = tape.gradient(loss, [x, w])
        penalty = rt.reduce_sum(gx * gx)
    return loss, gx, gw, outer.gradient(penalty, w), rt.nn.log_softmax(logits), rt.one_hot(labels, 4, axis=0)


@rt.function(input_signature=[spec(2), spec(1), spec(1, rt.int32), rt.TensorSpec([2, 2], rt.int32)])
def scatter_grads(m, v, ids, pads):
    """Gradients of gather (UnsortedSegmentSum), slices (StridedSliceGrad), pads (PadGrad) and broadcasts whose
    sizes only the run time tells (BroadcastTo, SumToShape)."""
    with rt.GradientTape() as tape:
        tape.watch([m, v])
        g = rt.gather(m, ids)
        s = m[1:, ::2]
        p = rt.pad(m, [[1, 2], [0, 1]], constant_values=0.5)
        r = rt.pad(m, [[1, 1], [1, 0]], mode="REFLECT")
        sy = rt.pad(m, [[2, 0], [0, 1]], mode="SYMMETRIC")
        d = rt.pad(m, pads)
        bt = rt.broadcast_to(v, rt.shape(m))
        loss = (rt.reduce_sum(g * g) + rt.reduce_sum(s * 3.0) + rt.reduce_sum(p * p) + rt.reduce_sum(r * r)
                + rt.reduce_sum(sy * sy) + rt.reduce_sum((m * v) ** 2) + rt.reduce_sum(bt * m) + rt.reduce_sum(d * d))
    gm, gv = tape.gradient(loss, [m, v])
    return gm, gv, p, r, sy, d, bt, rt.math.unsorted_segment_sum(m, ids, 5)


@rt.function(input_signature=[spec(2), rt.TensorSpec([], rt.int32)])
def list_grads(xs, n):
    """The gradient of a loop writing a TensorArray: lists read, cleared, added (TensorListZerosLike/Add)."""
    with rt.GradientTape() as tape:
        tape.watch(xs)
        ta = rt.TensorArray(F, size=n)
        h = rt.zeros_like(xs[0])
        for t in rt.range(n):
            h = rt.tanh(h + xs[t])
            ta = ta.write(t, h)
        out = ta.stack()
        loss = rt.reduce_sum(out * out) + rt.reduce_sum(ta.read(0))
    return tape.gradient(loss, xs)


slots = [rt.Variable(rt.zeros([4, 6])) for _ in range(3)]
mirror = rt.Variable(rt.zeros([24]))


@rt.function(input_signature=[rt.TensorSpec([None, 4], F), rt.TensorSpec([None, 6], F)])
def merged_updates(x, g):
    """Updates in a row, each reading what the one before wrote (one merged loop, run as the epilogue of the
    product they read); one reading another element of what the one before wrote (not merged); a layer's
    bias and relu on a product (an epilogue too), and a product read transposed (not one)."""
    m, v, w = slots
    grad = rt.matmul(x, g, transpose_a=True)
    m.assign(x[0, 0] * rt.ones([4, 6]))
    v.assign(rt.abs(grad) * 0.5)
    w.assign(grad)
    m.assign_add((grad - m) * 0.1)
    v.assign_add((grad * grad - v) * 0.01)
    w.assign_sub(m * 0.5 / (rt.sqrt(v) + 1e-3))
    mirror.assign(rt.reshape(w, [24])[::-1] + 1.0)
    square = rt.matmul(x, x, transpose_a=True)
    return (m.read_value() * 1.0, w.read_value() * 1.0, mirror.read_value() * 1.0,
            rt.nn.relu(rt.matmul(g, g, transpose_a=True) + rt.reduce_sum(g, 0)), square - rt.transpose(square))


table = rt.Variable(rt.zeros([3, 3]))


@rt.function(input_signature=[rt.TensorSpec([3, 3], F)])
def shuffled_updates(m):
    """Reads of a variable are its storage until it is written; an assignment reading the variable at other
    elements (a transpose) computes its value first."""
    table.assign(m)
    table.assign(rt.transpose(table) * 2.0)
    r = table.read_value()
    table.assign_add(r[::-1] + rt.transpose(r))
    total = rt.reduce_sum(r)
    table.assign_sub(rt.ones([3, 3]))
    return r + total, table.read_value(), table.assign_add(r * 0.5)


@rt.function(input_signature=[spec(1)] * 3)
def mul_add(a, b, c):
    """A fused chain of a product and a sum, and a chaotic loop (a Mandelbrot escape count) built on such chains."""
    re, im, count = c * 0.0, c * 0.0, rt.cast(c * 0.0, rt.int32)
    for _ in rt.range(60):
        active = re * re + im * im <= 4.0
        re, im = rt.where(active, re * re - im * im + a, re), rt.where(active, 2.0 * re * im + b, im)
        count += rt.cast(active, rt.int32)
    return a * b + c, count


@rt.function
def pooling(x, w, v, ksize, strides, padding):
    """Max pooling, its gradient (MaxPoolGrad) and the gradient of that with respect to the upstream gradient
    (MaxPoolGradGrad)."""
    with rt.GradientTape() as outer:
        outer.watch(w)
        with rt.GradientTape() as tape:
            tape.watch(x)
            y = rt.nn.max_pool2d(x, ksize, strides, padding)
            loss = rt.reduce_sum(y * w)
        dx = tape.gradient(loss, x)
        second = rt.reduce_sum(dx * v)
    return y, dx, outer.gradient(second, w)


@rt.function
def convolution(x, w, dy, strides, padding):
    """A convolution and its two gradients (Conv2DBackpropInput and Conv2DBackpropFilter)."""
    with rt.GradientTape() as tape:
        tape.watch([x, w])
        y = rt.nn.conv2d(x, w, strides, padding)
        loss = rt.reduce_sum(y * dy)
    return (y, *tape.gradient(loss, [x, w]))


# windows of few values (a first layer's): direct convolution; the last one goes through im2col panels
CONVS = [((2, 9, 11, 1), (3, 3, 1, 16), 1, "VALID"), ((3, 8, 7, 1), (5, 5, 1, 6), 1, "SAME"),
         ((1, 10, 12, 3), (3, 3, 3, 32), 2, "SAME"), ((2, 7, 9, 2), (3, 2, 2, 17), 3, "VALID"),
         ((1, 6, 6, 3), (1, 1, 3, 40), 1, "SAME"), ((2, 5, 4, 1), (5, 5, 1, 1), 1, "SAME"),
         ((1, 12, 13, 3), (3, 3, 3, 70), 1, "SAME"), ((2, 30, 29, 1), (3, 3, 1, 16), 1, "SAME"),
         ((1, 9, 9, 8), (3, 3, 8, 20), 1, "VALID")]
for _x, _w, _s, _p in CONVS:
    convolution.get_concrete_function(rt.TensorSpec(_x, F), rt.TensorSpec(_w, F), spec(4), _s, _p)
# an upstream gradient of a rank only the run time tells: its broadcast's gradient (SumToShape) runs the numpy kernel
convolution.get_concrete_function(*[rt.TensorSpec(None, F)] * 3, 1, "SAME")


POOLS = [(2, 2, "VALID"), (3, 2, "VALID"), (3, 1, "SAME"), (2, 3, "SAME"), (3, 3, "VALID"), (1, 1, "VALID")]
for _k, _s, _p in POOLS:
    pooling.get_concrete_function(*[rt.TensorSpec([None] * 4, F)] * 3, _k, _s, _p)


@rt.function
def contractions(a, b, form):
    """Sums of broadcast products: native code runs all but the last two as matmuls (``form`` names the axes)."""
    if form == "ik,kj":
        return rt.reduce_sum(a[:, :, None] * b[None, :, :], axis=1)
    if form == "ik,jk":
        return rt.reduce_sum(a[:, None, :] * b[None, :, :], axis=-1, keepdims=True)
    if form == "ki,kj":
        return rt.reduce_sum(a[:, None, :] * b[:, :, None], axis=0)
    if form == "ik,kj rank 2":
        return rt.reduce_sum(b * a[:, :, None], axis=-2)
    if form == "read twice":
        product = a[:, :, None] * b[None, :, :]
        return rt.reduce_sum(product, axis=1), rt.reduce_max(product, axis=1)
    if form == "ki,kj outer":
        return rt.reduce_sum(a[:, :, None] * b[:, None, :], axis=0)
    return rt.reduce_sum(a[:, :, None] * b[:, None, :], axis=2)          # "batched": both span kept axis 0


CONTRACTIONS = [("ik,kj", (5, 7), (7, 6)), ("ik,kj", (40, 300), (300, 70)), ("ik,jk", (33, 20), (17, 20)),
                ("ik,jk", (130, 64), (90, 64)), ("ki,kj", (50, 9), (50, 13)), ("ik,kj rank 2", (3, 200), (200, 40)),
                ("ik,kj", (0, 4), (4, 3)), ("ki,kj outer", (4, 6), (4, 8)), ("read twice", (6, 5), (5, 4)),
                ("batched", (4, 6), (4, 6))]
for _form, _a, _b in CONTRACTIONS:
    contractions.get_concrete_function(rt.TensorSpec(_a, F), rt.TensorSpec(_b, F), _form)
contractions.get_concrete_function(rt.TensorSpec([20, 30], rt.float64), rt.TensorSpec([30, 10], rt.float64), "ik,kj")
# kept axes of run-time sizes: still matmuls; a reduced axis of run-time size (it could broadcast): a reduction
CONTRACTIONS_ANY = [("ik,kj", (None, 7), (7, None), (5, 7), (7, 6), True),
                    ("ik,jk", (None, 20), (None, 20), (33, 20), (17, 20), True),
                    ("ik,jk", (None, 20), (None, 20), (1, 20), (0, 20), True),
                    ("ki,kj", (50, None), (50, None), (50, 9), (50, 13), True),
                    ("ik,kj rank 2", (None, 200), (200, None), (3, 200), (200, 40), True),
                    ("ik,jk", (None, None), (None, None), (6, 1), (5, 4), False)]
for _form, _a, _b, *_ in CONTRACTIONS_ANY:
    contractions.get_concrete_function(rt.TensorSpec(_a, F), rt.TensorSpec(_b, F), _form)


def test_sums_of_broadcast_products_of_run_time_sizes_run_as_matmuls(programs):
    rng = np.random.default_rng(14)
    for form, a_spec, b_spec, a_shape, b_shape, rewritten in CONTRACTIONS_ANY:
        specs = (rt.TensorSpec(a_spec, rt.float32), rt.TensorSpec(b_spec, rt.float32))
        a, b = (rt.constant(rng.standard_normal(shape).astype(np.float32)) for shape in (a_shape, b_shape))
        check(programs.contractions, (*specs, form), [a, b], [form], atol=1e-4)
        ir = str(lower_function(built(programs.contractions, *specs, form).graph, "contraction").ir)
        assert ("rt_gemm" in ir or "rt_matmul" in ir) == rewritten, (form, ir)


SHORT_ROWS = (2, 3, 10, 15, 16, 17, 33, 100, 127, 128)
STREAMED_SHAPES = ([6, 1024], [5, 1000], [3, 4, 257], [2, 3000])


@rt.function
def short_rows(x, labels):
    """Row groups and reductions over static rows shorter than a few vectors (padded to whole vectors)."""
    with rt.GradientTape() as tape:
        tape.watch(x)
        loss = rt.reduce_mean(rt.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x))
    centered = x - rt.reduce_mean(x, axis=-1, keepdims=True)
    norm = centered / rt.sqrt(rt.reduce_mean(rt.square(centered), axis=-1, keepdims=True) + 1e-3)
    return (loss, tape.gradient(loss, x), rt.nn.softmax(x), norm, rt.reduce_max(x, -1), rt.reduce_min(x, -1),
            rt.reduce_sum(x, -1), rt.reduce_logsumexp(x, -1), rt.reduce_prod(x * 0.5 + 1.0, -1))


@rt.function
def short_int_rows(x):
    return rt.reduce_sum(x, -1), rt.reduce_max(x, -1), rt.reduce_min(x, -1), rt.reduce_any(x > 2, -1)


for _n in SHORT_ROWS:
    short_rows.get_concrete_function(rt.TensorSpec([5, _n], F), rt.TensorSpec([5], rt.int32))
    short_int_rows.get_concrete_function(rt.TensorSpec([4, _n], rt.int32))


@rt.function
def streamed_rows(x, gamma):
    """Row groups whose results can be streamed to memory (rt_stream_copy) and whose inputs are prefetched a
    row ahead: softmax, a layer norm with a broadcast scale, a float64 row sum."""
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    mean = rt.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    norm = centered / rt.sqrt(rt.reduce_mean(rt.square(centered), axis=-1, keepdims=True) + 1e-3) * gamma
    wide = rt.cast(x, rt.float64)
    return e / rt.reduce_sum(e, axis=-1, keepdims=True), norm, wide / rt.reduce_sum(rt.abs(wide), -1, keepdims=True)


@rt.function
def streamed_concat(x):
    """Two row groups' results in one buffer (a concatenation's halves): not streamed, told apart by row start."""
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    centered = x - rt.reduce_mean(x, axis=-1, keepdims=True)
    return rt.concat([e / rt.reduce_sum(e, axis=-1, keepdims=True), centered * 2.0], axis=-1)


for _shape in STREAMED_SHAPES:
    streamed_rows.get_concrete_function(rt.TensorSpec(_shape, F), rt.TensorSpec(_shape[-1:], F))
    streamed_concat.get_concrete_function(rt.TensorSpec(_shape, F))
streamed_rows.get_concrete_function(rt.TensorSpec([None, None], F), rt.TensorSpec([None], F))


@rt.function(input_signature=[spec(1, rt.int32), spec(2)])
def everything(i, m):
    """The ops with native lowerings that the other programs do not reach (the registry walk)."""
    f = rt.cast(i, F)
    a = (f + 1.0) / 2.0 - f * f
    b = rt.floordiv(i, 3) + rt.floormod(i, 4) + rt.pow(i, 2) + rt.abs(i) + rt.sign(i) - rt.negative(i)
    c = rt.cast(rt.logical_xor(i > 0, rt.logical_not(i < 2)), F) + rt.cast(rt.logical_and(i >= 0, i <= 5), F)
    c += rt.cast(rt.logical_or(i == 1, i != 2), F) + rt.minimum(f, 2.0) + rt.relu(f)
    d = rt.sqrt(rt.abs(f)) + rt.exp(-rt.abs(f)) + rt.log(rt.abs(f) + 1.0) + rt.sigmoid(f) + rt.sin(f) + rt.cos(f)
    d += rt.math.rsqrt(rt.abs(f) + 0.5) + rt.math.erf(f) + rt.math.erfc(f) + rt.math.softplus(f)
    e = rt.square(f) + rt.zeros_like(f) + rt.ones_like(f) + rt.identity(f) + rt.stop_gradient(f)
    e += rt.floor(f * 0.75) + rt.math.ceil(f * 0.3) + rt.round(f * 0.5)     # halves round to even
    n = rt.size(i)
    r = rt.cast(rt.range(0, n), F) + rt.fill([n], 0.5) + rt.cast(rt.shape(m)[0], F) + rt.cast(rt.rank(m), F)
    eye = rt.eye(3) + rt.expand_dims(rt.squeeze(rt.reshape(m[:1, :3], [1, 3, 1]), axis=[2]), 0)[0]
    parts = rt.unstack(m[:2, :2], num=2)
    g = rt.gather(f, rt.zeros([2], rt.int32)) + parts[0] + parts[1]
    stacked = rt.stack([g, g * 2.0], axis=1)
    return a + rt.cast(b, F) + c + d + e + r, eye, stacked

@rt.function
def orbits(cr, ci, steps):
    zr = rt.zeros_like(cr)
    zi = rt.zeros_like(ci)
    count = rt.zeros_like(cr)
    i = rt.constant(0)
    while i < steps:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        count += rt.cast(zr * zr + zi * zi < 4.0, cr.dtype)
        i += 1
    return count, zr, i


orbits.get_concrete_function(spec(2), spec(2), rt.TensorSpec([], rt.int32))
orbits.get_concrete_function(spec(1, rt.float64), spec(1, rt.float64), rt.TensorSpec([], rt.int32))


@rt.function
def halvings(n, k, d):
    i = rt.constant(0)
    while i < k:
        n = n // d + n % 3
        i += 1
    return n


halvings.get_concrete_function(spec(1, rt.int32), rt.TensorSpec([], rt.int32), rt.TensorSpec([], rt.int32))


@rt.function(input_signature=[spec(2), rt.TensorSpec([None, 2], rt.int32)])
def library_ops(m, ids):
    """The ops of the kernel library's calls (random numbers, sorting, linear algebra, index tuples, arg-reductions)
    and the elementwise ops added with them; the stateful random ones run but only their dtype reaches the result
    (each mode counts its runs on its own: tests/build/test_library_native.py compares their streams)."""
    seeded = (rt.reduce_min(rt.random.uniform([3], seed=1)) + rt.reduce_min(rt.random.normal([2], seed=2))
              + rt.reduce_min(rt.random.truncated_normal([2], seed=3))
              + rt.cast(rt.reduce_min(rt.random.categorical(m, 2, seed=4)), F)
              + rt.reduce_min(rt.random.shuffle(m, seed=5))) * 0.0
    seed = rt.constant([1, 2], rt.int64)
    stateless = (rt.random.stateless_uniform([2], seed) + rt.random.stateless_normal([2], seed)
                 + rt.random.stateless_truncated_normal([2], seed))
    a = m[:2, :2] * 0.1 + rt.eye(2) * 3.0
    solved = rt.linalg.solve(a, rt.ones([2, 1])) + rt.linalg.inv(a)[:, :1] + rt.linalg.det(a)
    top = rt.math.top_k(m, 1)
    picked = rt.gather_nd(m, ids) + rt.reduce_sum(rt.scatter_nd(ids, rt.ones(rt.shape(ids)[:1]), rt.shape(m)))
    where = rt.cast(rt.reduce_sum(rt.where(m > 0.0)), F)
    arg = rt.cast(rt.argmax(m, 1) + rt.argmin(m, 0, output_type=rt.int64)[0], F)
    elementwise = (rt.math.log1p(rt.abs(m)) + rt.math.expm1(m) + rt.math.erf(m) + rt.math.squared_difference(m, 1.0)
                   + rt.cast(rt.math.is_nan(m), F) + rt.cast(rt.math.is_inf(m), F) + rt.cast(rt.math.is_finite(m), F))
    return (seeded + stateless, solved, rt.sort(m) + rt.cast(rt.argsort(m), F), top.values, top.indices, picked,
            where + arg[0], rt.ensure_shape(m, [None, None]) + elementwise)


@rt.function(input_signature=[spec(1, rt.int64), rt.TensorSpec([], rt.int64), rt.TensorSpec([], rt.int64)])
def shuffled_indices(values, window, rng):
    """A dataset shuffle's permutation of a pass (ShuffleIndices), of values computed in the function."""
    perm, state = shuffle_indices(values * 3 + 1, window, rng)
    return perm, state
'''


def _build(root: Path, name: str, passes: str | None = None) -> None:
    env = dict(os.environ)
    env.pop("RT_DEBUG", None)
    if passes is not None:
        env["RT_PASSES"] = passes
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "--strict"], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _import(root: Path, name: str):
    sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


NO_FOLDING = ",".join([p for p in PASS_NAMES if p != "fold_constants"] + list(EMITTER_PASSES))


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lowering")
    (root / "rt_lowering_programs.py").write_text(PROGRAMS)
    _build(root, "rt_lowering_programs", NO_FOLDING)
    module = _import(root, "rt_lowering_programs")
    assert module.__file__.endswith(".so"), module.__file__
    return module


# ---------------------------------------------------------------------------
# Running one built signature three ways.


def _key(value):
    if isinstance(value, rt.TensorSpec):
        return ("spec", None if value.shape.dims is None else tuple(value.shape.dims), value.dtype.name)
    if isinstance(value, list):
        return ("list", tuple(value))
    return ("value", value)


def built(function, *signature):
    """The built (native) concrete function of ``function`` for ``signature`` (specs and Python values)."""
    want = tuple(_key(v) for v in signature)
    for concrete in function.concrete_functions():
        if tuple(_key(v) for v in concrete._structured_inputs) == want and concrete.native:
            return concrete
    raise AssertionError(f"no built signature {signature} of {function}")


def _arrays(value):
    if isinstance(value, (tuple, list)):
        return [_arrays(v) for v in value]
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _outcome(fn, errors=(rt.errors.InvalidArgumentError,)):
    try:
        return "ok", fn()
    except errors as e:
        return "error", f"{type(e).__name__}: {e}"


def three_ways(function, concrete, tensors: list, python_args: list):
    """(native, generic, eager) outcomes of one call: ("ok", arrays) or ("error", message)."""
    native = _outcome(lambda: _arrays(concrete(*tensors)))
    flat = [np.asarray(t.numpy()) for t in tensors]     # the executors take arrays (0-d ones too)
    generic = _outcome(lambda: _arrays(concrete._pack(executor.run_graph_generic(concrete.graph, flat))))
    rt.config.run_functions_eagerly(True)
    try:
        # eager checks static shapes first: a broadcast error can be a ValueError there
        eager = _outcome(lambda: _arrays(function(*_merge(concrete, tensors, python_args))),
                         (rt.errors.InvalidArgumentError, ValueError))
    finally:
        rt.config.run_functions_eagerly(False)
    return native, generic, eager


def _merge(concrete, tensors, python_args):
    tensors, python_args = iter(tensors), iter(python_args)
    return [next(tensors) if isinstance(v, rt.TensorSpec) else next(python_args) for v in concrete._structured_inputs]


def assert_same(a, b, where="", atol=3e-5):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for x, y in zip(a, b):
            assert_same(x, y, where, atol)
        return
    assert a.shape == b.shape and a.dtype == b.dtype, (where, a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(a, b, err_msg=where)


def check(function, signature: tuple, tensors: list, python_args: list = (), atol: float = 3e-5):
    concrete = built(function, *signature)
    native, generic, eager = three_ways(function, concrete, tensors, list(python_args))
    assert native[0] == generic[0] == eager[0], (native, generic, eager)
    if native[0] == "error":
        assert native[1].startswith("InvalidArgumentError: ") and generic[1].startswith("InvalidArgumentError"), native
        op_type = native[1].split(": ")[1]
        assert op_type in generic[1] and op_type in eager[1], (native[1], generic[1], eager[1])
        assert "[[op '" in native[1] and "rt_lowering_programs.py" in native[1], native[1]
        return
    assert_same(native[1], eager[1], "native vs eager", atol)
    assert_same(generic[1], eager[1], "generic vs eager", atol)


HYP = settings(max_examples=25, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
floats = st.floats(-3, 3, width=32, allow_nan=False)


def _tensor(shape, data, elements=floats, dtype=np.float32):
    n = int(np.prod(shape, dtype=np.int64))
    values = data.draw(st.lists(elements, min_size=n, max_size=n))
    return rt.constant(np.array(values, dtype=dtype).reshape(shape))


# ---------------------------------------------------------------------------
# Broadcasting.


@st.composite
def broadcast_shapes(draw, ra: int, rb: int):
    """Two shapes of ranks ra, rb that broadcast (dims of 1 on either side), or (rarely) do not."""
    rank = max(ra, rb)
    out = [draw(st.integers(1, 4)) for _ in range(rank)]
    a = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in out[rank - ra:]]
    b = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in out[rank - rb:]]
    if a and b and draw(st.integers(0, 9)) == 0:
        a[-1] = b[-1] + 1 if b[-1] > 1 else 3
    return a, b


@HYP
@given(st.sampled_from(list(itertools.product(range(5), range(5)))), st.data())
def test_broadcasts_of_every_rank(programs, ranks, data):
    ra, rb = ranks
    a_shape, b_shape = data.draw(broadcast_shapes(ra, rb))
    signature = (rt.TensorSpec([None] * ra, rt.float32), rt.TensorSpec([None] * rb, rt.float32))
    check(programs.bcast, signature, [_tensor(a_shape, data), _tensor(b_shape, data)])


@HYP
@given(st.integers(1, 4), st.sampled_from([1, 3]), st.integers(0, 3), st.data())
def test_broadcasts_against_static_dims(programs, n, last, wrong, data):
    a, b = _tensor([n, 3], data), _tensor([2, n if wrong else 1, last], data)
    check(programs.bcast, (rt.TensorSpec([None, 3], rt.float32), rt.TensorSpec([2, None, 1], rt.float32)),
          [a, _tensor([2, n, 1], data)])
    check(programs.bcast, (rt.TensorSpec([4, 1, 3], rt.float32), rt.TensorSpec([None], rt.float32)),
          [_tensor([4, 1, 3], data), _tensor([[1, 3, 2, 4][wrong]], data)])
    del b


# ---------------------------------------------------------------------------
# Reductions.


AXES = [None] + [list(c) for r in range(4) for c in itertools.combinations(range(3), r)]


@HYP
@given(st.sampled_from(AXES), st.booleans(), st.lists(st.integers(0, 4), min_size=3, max_size=3), st.data())
def test_reductions_over_every_axis_subset(programs, axis, keepdims, shape, data):
    x = _tensor(shape, data)
    spec = rt.TensorSpec([None] * 3, rt.float32)
    check(programs.totals, (spec, axis, keepdims), [x], [axis, keepdims])
    check(programs.extremes, (spec, axis, AXES.index(axis) % 2 == 1), [x], [axis, AXES.index(axis) % 2 == 1])
    xi = _tensor(shape, data, st.integers(-50, 50), np.int32)
    check(programs.integer_totals, (rt.TensorSpec([None] * 3, rt.int32), axis), [xi], [axis])


def test_big_reductions_run_in_parallel_chunks(programs):
    rng = np.random.default_rng(1)
    x = rt.constant(rng.standard_normal((140, 40, 60)).astype(np.float32))   # above RT_PARALLEL_MIN
    spec = rt.TensorSpec([None] * 3, rt.float32)
    for axis in AXES:
        for threads in (1, 2):
            rt.config.threading.set_intra_op_parallelism_threads(threads)
            try:
                # float32 sums of thousands of terms: numpy sums pairwise, native code in double
                check(programs.totals, (spec, axis, False), [x], [axis, False], atol=2e-3)
                keep = AXES.index(axis) % 2 == 1
                check(programs.extremes, (spec, axis, keep), [x], [axis, keep])
            finally:
                rt.config.threading.set_intra_op_parallelism_threads(0)


COLUMNS = [((1, 40000, 8), [0, 1]), ((3, 40000, 8), [1]), ((64, 2000, 4), [1]), ((40000, 3, 8), [0, 1]),
           ((5, 7, 3), [0, 1]), ((6, 4, 600), [1]), ((2000, 2, 300), [0]), ((600, 1030, 1), [0])]


def _columns_agree(programs, rng, shape, axis, spec, int_spec) -> None:
    """Sums, means and extremes over ``axis`` of a ``shape`` input with a NaN: native == generic == eager, the same
    bits on one and two threads; integer totals too."""
    x = rng.standard_normal(shape).astype(np.float32)
    if x.size:
        x.flat[x.size // 3] = np.nan
    results = []
    for threads in (1, 2):
        rt.config.threading.set_intra_op_parallelism_threads(threads)
        try:
            check(programs.totals, (spec, axis, False), [rt.constant(x)], [axis, False], atol=2e-3)
            keep = AXES.index(axis) % 2 == 1
            check(programs.extremes, (spec, axis, keep), [rt.constant(x)], [axis, keep])
            results.append(built(programs.totals, spec, axis, False)(rt.constant(x)))
        finally:
            rt.config.threading.set_intra_op_parallelism_threads(0)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one.numpy(), two.numpy())
    xi = rng.integers(-50, 50, shape).astype(np.int32)
    check(programs.integer_totals, (int_spec, axis), [rt.constant(xi)], [axis])


def test_column_reductions_accumulate_locally_the_same_on_any_number_of_threads(programs):
    """Reductions over leading or middle axes into a narrow kept run ([rows, 8], [3, rows, 8], [64, rows, 4]):
    a local accumulator per outer index, rows in chunks combined in order when few outer indices: one and two
    threads give the same bits; NaN propagates through max and min."""
    rng = np.random.default_rng(12)
    for shape, axis in COLUMNS:
        _columns_agree(programs, rng, shape, axis, rt.TensorSpec(shape, rt.float32), rt.TensorSpec(shape, rt.int32))
    lowered = str(lower_function(built(programs.totals, rt.TensorSpec(COLUMNS[0][0], rt.float32), [0, 1],
                                       False).graph, "columns").ir)
    assert "let cols" in lowered and "parallel" in lowered, lowered


# run-time kept runs of every length class: a local array is not possible, a row of partial results per chunk
# of rows up to COLUMN_PARTIAL_MAX, then chunks of the columns each walking every row
RUN_TIME_COLUMNS = [((3000, 2, 300), [0]), ((700, 1, 1030), [0, 1]), ((40, 1, 4096), [0]), ((40, 1, 4097), [0]),
                    ((5, 3, 2), [0]), ((0, 2, 700), [0]), ((9, 3, 0), [0, 1])]


def test_column_reductions_of_run_time_width_fold_rows_of_partials_the_same_on_any_number_of_threads(programs):
    """[None, None, None] reduced over its leading axes: the same values as eager, the same bits on one and two
    threads, NaN through max and min, below, at and past the partial rows' width limit; the lowered IR
    chooses between the two schedules by the width."""
    rng = np.random.default_rng(13)
    spec = rt.TensorSpec([None] * 3, rt.float32)
    for shape, axis in RUN_TIME_COLUMNS:
        _columns_agree(programs, rng, shape, axis, spec, rt.TensorSpec([None] * 3, rt.int32))
    lowered = str(lower_function(built(programs.totals, spec, [0], False).graph, "columns").ir)
    assert "<= 4096" in lowered and "parallel" in lowered, lowered


def test_empty_mean_is_nan_and_empty_max_is_the_lowest_value(programs):
    spec = rt.TensorSpec([None] * 3, rt.float32)
    mean = built(programs.totals, spec, [2], False)(rt.zeros([2, 3, 0]))[1].numpy()
    assert mean.shape == (2, 3) and np.isnan(mean).all()
    # TF's answer: an output element that reduces nothing is the lowest value (max) or the highest (min)
    extremes = built(programs.extremes, spec, [2], AXES.index([2]) % 2 == 1)(rt.zeros([2, 3, 0]))
    for value, expected in zip(extremes, (-np.inf, np.inf)):
        assert value.numpy().size == 6 and (value.numpy() == expected).all(), value


# ---------------------------------------------------------------------------
# Loops, branches and lists.


@HYP
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.lists(floats, min_size=n, max_size=n), st.integers(0, 6))))
def test_loops_whose_values_change_shape(programs, case):
    values, n = case
    x = rt.constant(np.array(values, np.float32))
    check(programs.grow, (rt.TensorSpec([None], rt.float32), rt.TensorSpec([], rt.int32)), [x, rt.constant(n)])
    check(programs.halve, (rt.TensorSpec([None], rt.float32),), [x])
    check(programs.callback_loop, (rt.TensorSpec([None], rt.float32), rt.TensorSpec([], rt.int32)),
          [x, rt.constant(n)])


@HYP
@given(st.integers(1, 4), st.integers(0, 5), st.data())
def test_loops_around_branches_matmuls_and_lists(programs, rows, n, data):
    m = _tensor([rows, 4], data)
    check(programs.matrix_loop, (rt.TensorSpec([None, 4], rt.float32), rt.TensorSpec([], rt.int32)),
          [m, rt.constant(n)])
    xs = _tensor([rows, 5, 3], data)
    w = _tensor([3, 3], data)
    check(programs.rnn, (rt.TensorSpec([None, 5, 3], rt.float32), rt.TensorSpec([3, 3], rt.float32)), [xs, w])
    check(programs.unstacked, (rt.TensorSpec([None, None], rt.float32),), [_tensor([rows + 1, 3], data)])


@HYP
@given(st.floats(0.5, 100, width=32), st.integers(0, 50),
       st.lists(st.integers(1, 300), min_size=1, max_size=40))
def test_scalar_and_vector_loops(programs, a, n, values):
    check(programs.newton, (rt.TensorSpec([], rt.float32), rt.TensorSpec([], rt.int32)),
          [rt.constant(np.float32(a)), rt.constant(n)])
    check(programs.collatz, (rt.TensorSpec([None], rt.int32),), [rt.constant(np.array(values, np.int32))])


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (7, 9), (8, 8), (5, 13), (130, 131)])
def test_elementwise_loops_run_tile_by_tile(programs, shape):
    """A loop over elementwise updates runs tile by tile (on threads from 16K elements), with a last partial tile
    that also gives the loop's one-element results, even when it is empty (64 x k elements, none)."""
    rng = np.random.default_rng(sum(shape))
    cr = rt.constant(rng.uniform(-2, 0.6, shape).astype(np.float32))
    ci = rt.constant(rng.uniform(-1.3, 1.3, shape).astype(np.float32))
    f32, steps = rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([], rt.int32)
    check(programs.orbits, (f32, f32, steps), [cr, ci, rt.constant(20)], atol=0)
    check(programs.orbits, (f32, f32, steps), [cr, ci, rt.constant(0)], atol=0)
    f64 = rt.TensorSpec([None], rt.float64)
    flat = [rt.constant(v.numpy().reshape(-1).astype(np.float64)) for v in (cr, ci)]
    check(programs.orbits, (f64, f64, steps), flat + [rt.constant(30)], atol=0)
    n = rt.constant(rng.integers(-1000, 1000, int(np.prod(shape))).astype(np.int32))
    check(programs.halvings, (rt.TensorSpec([None], rt.int32), steps, steps), [n, rt.constant(9), rt.constant(2)])
    if n.shape[0]:          # a failing check inside a tile: the divisor is checked where the division runs
        with pytest.raises(rt.errors.InvalidArgumentError, match="FloorDiv: Integer division by zero"):
            built(programs.halvings, rt.TensorSpec([None], rt.int32), steps, steps)(n, rt.constant(9),
                                                                                   rt.constant(0))


def test_which_loops_run_tile_by_tile(programs):
    ir = str(lower_function(built(programs.orbits, rt.TensorSpec([None, None], rt.float32),
                                  rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([], rt.int32)).graph,
                            "f").ir)
    assert "tile by tile (64 elements)" in ir and "parallel if" in ir.split("tile by tile")[1].split("loop:")[0]
    halving = str(lower_function(built(programs.halvings, rt.TensorSpec([None], rt.int32),
                                       rt.TensorSpec([], rt.int32), rt.TensorSpec([], rt.int32)).graph, "f").ir)
    # an integer division checks its divisor: a failing check cannot leave a parallel loop, so tiles run in turn
    tiles = halving.split("tile by tile")[1].split("loop:")[0]
    assert "for c" in tiles and "parallel" not in tiles.split("for c")[1].split("\n")[0]
    collatz = str(lower_function(built(programs.collatz, rt.TensorSpec([None], rt.int32)).graph, "f").ir)
    assert "tile by tile" not in collatz          # its condition reads every element


# ---------------------------------------------------------------------------
# Row groups, matmuls, variables.


@HYP
@given(st.integers(1, 6), st.integers(1, 9), st.data())
def test_row_groups(programs, rows, cols, data):
    x, g, b = _tensor([rows, cols], data), _tensor([cols], data), _tensor([cols], data)
    spec = rt.TensorSpec([None, None], rt.float32)
    v = rt.TensorSpec([None], rt.float32)
    check(programs.normalize, (spec, v, v), [x, g, b])
    check(programs.pairwise, (spec, spec), [x, _tensor([rows + 2, cols], data)])


def test_row_groups_and_big_loops_on_threads(programs):
    rng = np.random.default_rng(2)
    x = rt.constant(rng.standard_normal((1100, 257)).astype(np.float32))     # above RT_PARALLEL_MIN
    narrow = rt.constant(x.numpy()[:, :8])
    g, b = rt.constant(rng.standard_normal(257).astype(np.float32)), rt.constant(np.ones(257, np.float32))
    spec, v = rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32)
    for threads in (1, 2):
        rt.config.threading.set_intra_op_parallelism_threads(threads)
        try:
            check(programs.normalize, (spec, v, v), [x, g, b])
            check(programs.pairwise, (spec, spec), [narrow, narrow])       # [1100, 1100] sums of 8 terms
            check(programs.bcast, (rt.TensorSpec([None] * 2, rt.float32),) * 2, [x, x])
        finally:
            rt.config.threading.set_intra_op_parallelism_threads(0)
    assert "pragma omp parallel" in _generated_c(programs)


ROW_SHAPES = [(3, 512), (2, 1030), (5, 7), (1, 1), (0, 700), (1, 2049), (2, 1024), (3, 16), (3, 17), (4, 50),
              (2, 100), (2, 128), (2, 600)]


def test_row_programs_of_every_row_length(programs):
    """Static and run-time row lengths under, at and over the float32 sums' chunk (512): one chunk, chunks and
    a rest, a rest only; one row, zero rows; softmax hosting its exponentials in the result row; short rows
    padded to whole vectors, their last one masked (17, 50, 100: ``lanes.peel_tails``), of unknown length too
    (up to PAD_MAX, with and without a last partial vector); sums in lanes (``lanes.sum_lanes``)."""
    rng = np.random.default_rng(3)
    dynamic = rt.TensorSpec([None, None], rt.float32)
    for shape in ROW_SHAPES:
        x = rt.constant((rng.standard_normal(shape) * 4 + 1).astype(np.float32))
        gamma = rt.constant(rng.uniform(0.5, 1.5, shape[1:]).astype(np.float32))
        for threads in (1, 2):
            rt.config.threading.set_intra_op_parallelism_threads(threads)
            try:
                for spec in (rt.TensorSpec(shape, rt.float32), dynamic):
                    check(programs.softmaxes, (spec,), [x])
                    check(programs.softmax_only, (spec,), [x])
                    check(programs.norms, (spec, rt.TensorSpec(spec.shape.dims[1:], rt.float32)), [x, gamma])
            finally:
                rt.config.threading.set_intra_op_parallelism_threads(0)
    empty = built(programs.norms, rt.TensorSpec([3, 0], rt.float32), rt.TensorSpec([0], rt.float32))
    rms, normalized, var, total, mean = empty(rt.zeros([3, 0]), rt.zeros([0]))
    assert rms.shape == normalized.shape == (3, 0) and np.isnan(var.numpy()).all() and (total.numpy() == 0).all()
    assert np.isnan(mean.numpy()).all()


def test_pipelined_rows_agree_however_the_rows_split_among_threads(programs):
    """Row loops over short rows compute the next row's max or mean while they finish this one
    (``lowering/pipeline.py``): every thread's first row, its last, a thread without rows (fewer rows than
    threads), rows at and past the pipelined length (512, chosen at run time for [None, None]); a NaN or an inf
    in the row computed ahead stays in its own row."""
    rng = np.random.default_rng(11)
    dynamic = rt.TensorSpec([None, None], rt.float32)
    for rows, cols in [(1, 100), (2, 100), (3, 10), (5, 512), (1001, 100), (7, 513), (300, 37)]:
        x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
        x[0, cols // 2], x[rows // 2, 0], x[-1, -1] = np.nan, np.inf, -np.inf
        gamma = rt.constant(rng.uniform(0.5, 1.5, cols).astype(np.float32))
        specs = [dynamic] + [rt.TensorSpec([rows, cols], rt.float32)] * ((rows, cols) in programs.PIPELINED_SHAPES)
        for threads in (1, 2, 3):
            rt.config.threading.set_intra_op_parallelism_threads(threads)
            try:
                for spec in specs:
                    check(programs.softmax_only, (spec,), [rt.constant(x)])
                    check(programs.norms, (spec, rt.TensorSpec(spec.shape.dims[1:], rt.float32)),
                          [rt.constant(x), gamma])
            finally:
                rt.config.threading.set_intra_op_parallelism_threads(0)
    soft = built(programs.softmax_only, dynamic)(rt.constant(x)).numpy()
    assert np.isnan(soft[0]).all() and np.isnan(soft[rows // 2]).all() and np.isfinite(soft[1]).all()


def test_row_sums_keep_float64_accuracy_across_chunks(programs):
    """Chunks of a row sum in float32, the chunks in double: a long row of 0.1s sums like numpy's float64
    sum to float32 accuracy (a float32 register per vector lane would drift by 1e-4)."""
    x = np.full((2, 200_000), 0.1, np.float32)
    x[1, ::7] = 3.0
    *_, total, mean = built(programs.norms, rt.TensorSpec([None, None], rt.float32),
                            rt.TensorSpec([None], rt.float32))(rt.constant(x), rt.ones([200_000]))
    np.testing.assert_allclose(total.numpy(), x.astype(np.float64).sum(-1), rtol=1e-6)
    np.testing.assert_allclose(mean.numpy()[:, 0], x.astype(np.float64).mean(-1), rtol=1e-6)


def test_rows_with_inf_and_nan_propagate_as_in_numpy(programs):
    x = np.random.default_rng(4).standard_normal((5, 1030)).astype(np.float32)
    x[0, 3], x[1, 700], x[2, 1029], x[3, 5], x[3, 900] = np.inf, np.nan, -np.inf, np.inf, -np.inf
    for spec in (rt.TensorSpec([2, 1030], rt.float32), rt.TensorSpec([None, None], rt.float32)):
        rows = rt.constant(x) if spec.shape.dims[0] is None else rt.constant(x[:2])
        check(programs.softmaxes, (spec,), [rows])
        check(programs.softmax_only, (spec,), [rows])
        check(programs.norms, (spec, rt.TensorSpec([None] if spec.shape.dims[0] is None else [1030], rt.float32)),
              [rows, rt.ones([1030])])
    short = x[:4, :50].copy()        # a padded row: whole vectors, then the masked last one (lanes.peel_tails)
    short[0, 49], short[1, 2], short[2, 40] = np.nan, np.inf, -np.inf
    for spec in (rt.TensorSpec([4, 50], rt.float32), rt.TensorSpec([None, None], rt.float32)):
        check(programs.softmaxes, (spec,), [rt.constant(short)])
        check(programs.norms, (spec, rt.TensorSpec(spec.shape.dims[1:], rt.float32)),
              [rt.constant(short), rt.ones([50])])
    soft = built(programs.softmax_only, rt.TensorSpec([None, None], rt.float32))(rt.constant(x)).numpy()
    assert np.isnan(soft[:2]).all() and soft[2, 1029] == 0 and np.isnan(soft[3]).all() and np.isfinite(soft[4]).all()


def test_rows_of_unknown_length_on_either_side_of_the_scratch_row(programs):
    """[None, None] chooses at run time: rows up to one vector run it masked past the row, rows up to
    SCRATCH_MAX keep their exponentials in a scratch row on the stack, longer rows in the result's row; all
    give the executor's result (a scratch row too short for its row would write past it)."""
    from transpiler.lowering.kernels import PAD_LANES, SCRATCH_MAX
    spec = rt.TensorSpec([None, None], rt.float32)
    rng = np.random.default_rng(8)
    for cols in (1, 10, PAD_LANES, PAD_LANES + 1, 1030, SCRATCH_MAX, SCRATCH_MAX + 1, 3 * SCRATCH_MAX + 5):
        x = rt.constant(rng.standard_normal((3, cols)).astype(np.float32) * 4)
        check(programs.softmaxes, (spec,), [x])
        check(programs.softmax_only, (spec,), [x])


ANY_CLASSES = (rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.int64))
POOLED = (rt.TensorSpec([None, None, None, None], rt.float32), rt.TensorSpec([2, 7, 9, 3], rt.float32))


def test_asserts_test_their_condition_natively_and_raise_through_python_only_when_false(programs):
    """rt.split's check of a run-time width and an explicit Assert: native code evaluates them (no callback per
    call or per step); a false one raises the message eager code raises."""
    specs = (rt.TensorSpec([None] * 3, rt.float32), rt.TensorSpec([], rt.int32))
    x = rt.constant(np.random.default_rng(3).standard_normal((2, 5, 8)).astype(np.float32))
    check(programs.checked_gates, specs, [x, rt.constant(3)])
    check(programs.checked_gates, specs, [x, rt.constant(0)])
    check(programs.checked_gates, specs, [x[:, :, :6], rt.constant(2)])     # 6 columns are not 4 parts
    check(programs.checked_gates, specs, [x, rt.constant(200)])              # the explicit Assert
    with pytest.raises(rt.errors.InvalidArgumentError, match="too many steps: 200"):
        built(programs.checked_gates, *specs)(x, rt.constant(200))
    report = lower_function(built(programs.checked_gates, *specs).graph, "checked_gates").report
    assert not report.callbacks and report.failure_callbacks == 2, report


def test_a_big_captured_constant_is_embedded_and_read_natively(programs):
    check(programs.big_constant, (rt.TensorSpec([None], rt.int32),), [rt.constant([0, 49_999, 12_345, 7])])
    check(programs.big_constant, (rt.TensorSpec([None], rt.int32),), [rt.constant([50_000])])    # out of range


def test_composed_tensorflow_functions_run_natively(programs):
    rng = np.random.default_rng(11)
    specs = (rt.TensorSpec([None, None, None, None], rt.float32), rt.TensorSpec([None], rt.float32))
    for shape, n in (((2, 3, 4, 5), 3), ((1, 1, 2, 1), 2)):
        check(programs.composites, specs, [rt.constant(rng.standard_normal(shape).astype(np.float32)),
                                           rt.constant(rng.standard_normal(n).astype(np.float32) * 4)])
    assert not lower_function(built(programs.composites, *specs).graph, "composites").report.callbacks


def test_average_pooling_runs_natively_over_static_and_unknown_sizes(programs):
    """avg_pool2d's strided slices of the padded input and of a map of ones (the count) fuse into loop nests:
    no callback; the pools and the input's gradient agree with eager and the executor."""
    rng = np.random.default_rng(10)
    for spec in POOLED:
        for shape in ((2, 7, 9, 3),) if spec.shape.dims[0] is not None else ((2, 7, 9, 3), (1, 2, 2, 1), (3, 16, 5, 4)):
            check(programs.pools, (spec,), [rt.constant(rng.standard_normal(shape).astype(np.float32))])
        assert not lower_function(built(programs.pools, spec).graph, "pools").report.callbacks




def test_a_cross_entropy_over_classes_known_at_run_time_runs_natively(programs):
    """[None, None] logits: each label compared with the column index (no one-hot of a static depth, no Python
    callback); a label out of range raises the op's error natively as in the executor."""
    rng = np.random.default_rng(9)
    for rows, classes in ((7, 10), (3, 1), (64, 1000), (0, 5)):
        logits = rt.constant(rng.standard_normal((rows, classes)).astype(np.float32) * 3)
        labels = rt.constant(rng.integers(0, classes, rows))
        check(programs.any_classes, ANY_CLASSES, [logits, labels])
    check(programs.any_classes, ANY_CLASSES, [rt.ones([2, 4]), rt.constant([1, 4], rt.int64)])
    check(programs.any_classes, ANY_CLASSES, [rt.ones([2, 4]), rt.constant([-1, 0], rt.int64)])
    concrete = built(programs.any_classes, *ANY_CLASSES)
    assert not lower_function(concrete.graph, "any_classes").report.callbacks


def test_divisions_by_a_row_value_out_of_the_reciprocals_range_are_exact(programs):
    """``x / sum(x)`` multiplies by ``1 / sum`` only where that reciprocal is a normal number: a subnormal,
    huge, zero, infinite or NaN sum divides, as numpy does."""
    for dtype, tiny, huge in ((np.float32, 1e-39, 2e38), (np.float64, 1e-309, 1e308)):
        x = np.zeros((7, 3), dtype)
        x[0] = [tiny, tiny, 0]                 # 1 / sum overflows
        x[1] = [huge, -huge / 2, 0]            # 1 / sum is subnormal
        x[2] = [huge, huge, 0]                 # the sum is inf in float32 (and in float64 after a second huge)
        x[2, 2] = huge if dtype == np.float64 else 0
        x[3] = [0, 0, 0]
        x[4] = [1, np.nan, 2]
        x[5] = [np.inf, 1, 2]
        x[6] = [1, 2, 5]
        spec = rt.TensorSpec([None, None], rt.as_dtype(dtype))
        check(programs.shares, (spec,), [rt.constant(x)], atol=0)
        got = built(programs.shares, spec)(rt.constant(x)).numpy()
        np.testing.assert_array_equal(got[:2], x[:2] / x[:2].sum(-1, keepdims=True))


@HYP
@given(st.integers(1, 5), st.integers(1, 40), st.data())
def test_row_groups_of_strided_and_broadcast_inputs(programs, rows, cols, data):
    check(programs.transposed_rows, (rt.TensorSpec([None, None], rt.float32),), [_tensor([cols, rows], data)])
    v = rt.TensorSpec([None], rt.float32)
    check(programs.outer_softmax, (v, v), [_tensor([rows], data), _tensor([cols], data)])


def _generated_c(programs) -> str:
    from transpiler.codegen import emit_function
    concrete = built(programs.normalize, rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32),
                     rt.TensorSpec([None], rt.float32))
    return emit_function(concrete.graph, "rt_fn_normalize")[0]


@HYP
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.data())
def test_matmuls_transposed_and_batched(programs, m, k, batch, data):
    x, w, b = _tensor([m, k], data), _tensor([k, k], data), _tensor([k], data)
    spec = rt.TensorSpec([None, None], rt.float32)
    check(programs.dense, (spec, spec, rt.TensorSpec([None], rt.float32)), [x, w, b])
    a3 = _tensor([batch, m, k], data)
    b3 = _tensor([batch if data.draw(st.booleans()) else 1, k, m], data)
    check(programs.batched, (rt.TensorSpec([None] * 3, rt.float32),) * 2, [a3, b3])


@HYP
@given(st.integers(2, 6), st.data())
def test_variables_and_every_other_op(programs, n, data):
    x = _tensor([n + 2], data)
    check(programs.variables, (rt.TensorSpec([None], rt.float32),), [x])
    check(programs.shuffled_updates, (rt.TensorSpec([3, 3], rt.float32),), [_tensor([3, 3], data)])
    i = _tensor([n], data, st.integers(-5, 5), np.int32)
    check(programs.everything, (rt.TensorSpec([None], rt.int32), rt.TensorSpec([None, None], rt.float32)),
          [i, _tensor([n, n + 1], data)])


@HYP
@given(st.integers(1, 40), st.data())
def test_merged_loops_and_product_epilogues(programs, rows, data):
    x, g = _tensor([rows, 4], data), _tensor([rows, 6], data)
    check(programs.merged_updates, (rt.TensorSpec([None, 4], rt.float32), rt.TensorSpec([None, 6], rt.float32)),
          [x, g], atol=1e-4)


CONVS = [((2, 9, 11, 1), (3, 3, 1, 16), 1, "VALID"), ((3, 8, 7, 1), (5, 5, 1, 6), 1, "SAME"),
         ((1, 10, 12, 3), (3, 3, 3, 32), 2, "SAME"), ((2, 7, 9, 2), (3, 2, 2, 17), 3, "VALID"),
         ((1, 6, 6, 3), (1, 1, 3, 40), 1, "SAME"), ((2, 5, 4, 1), (5, 5, 1, 1), 1, "SAME"),
         ((1, 12, 13, 3), (3, 3, 3, 70), 1, "SAME"), ((2, 30, 29, 1), (3, 3, 1, 16), 1, "SAME"),
         ((1, 9, 9, 8), (3, 3, 8, 20), 1, "VALID")]


def test_convolutions_of_small_windows_direct_and_through_panels(programs):
    """First-layer convolutions (windows of at most 64 values) run directly: tiles of pixels inside the input,
    pixels at the edges one by one, filter counts under, at and over a vector (padded), strides 1-3, SAME and
    VALID; their gradients too. Native == generic == eager; the forward pass has the im2col GEMM's sums, so the
    generic executor's (the same kernel) bits."""
    rng = np.random.default_rng(13)
    for x_shape, w_shape, strides, padding in CONVS:
        x = rng.standard_normal(x_shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        y_shape = rt.nn.conv2d(rt.constant(x), rt.constant(w), strides, padding).shape.as_list()
        dy = rng.standard_normal(y_shape).astype(np.float32)
        signature = (rt.TensorSpec(x_shape, rt.float32), rt.TensorSpec(w_shape, rt.float32),
                     rt.TensorSpec([None] * 4, rt.float32), strides, padding)
        check(programs.convolution, signature, [rt.constant(x), rt.constant(w), rt.constant(dy)],
              [strides, padding], atol=1e-4)
        if strides == 1 and padding == "SAME":
            check(programs.convolution, (*[rt.TensorSpec(None, rt.float32)] * 3, 1, "SAME"),
                  [rt.constant(x), rt.constant(w), rt.constant(dy)], [1, "SAME"], atol=1e-4)


def test_fused_chains_round_as_numpys_separate_ops(programs):
    """Built code is compiled without contracting x * y + z into one FMA: a fused chain gives numpy's bits
    (x = 1 + 2^-13: x * x - (1 + 2^-12) is 2^-26 with an FMA, 0 in numpy), and a chaotic loop of such chains
    (Mandelbrot escape counts) gives numpy's counts, where FMAs shifted some by one."""
    x = np.float32(1 + 2 ** -13)
    rng = np.random.default_rng(14)
    a = np.concatenate([[x], rng.uniform(-2, 0.6, 4095)]).astype(np.float32)
    b = np.concatenate([[x], rng.uniform(-1.2, 1.2, 4095)]).astype(np.float32)
    c = np.concatenate([[-(1 + 2 ** -12)], np.zeros(4095)]).astype(np.float32)
    fused, counts = built(programs.mul_add, *[rt.TensorSpec([None], rt.float32)] * 3)(a, b, c)
    np.testing.assert_array_equal(fused.numpy(), a * b + c)
    assert fused.numpy()[0] == 0
    re, im, want = np.zeros_like(a), np.zeros_like(a), np.zeros(a.shape, np.int32)
    for _ in range(60):
        active = re * re + im * im <= np.float32(4)
        re, im = np.where(active, re * re - im * im + a, re), np.where(active, np.float32(2) * re * im + b, im)
        want += active
    np.testing.assert_array_equal(counts.numpy(), want)


POOLS = [(2, 2, "VALID"), (3, 2, "VALID"), (3, 1, "SAME"), (2, 3, "SAME"), (3, 3, "VALID"), (1, 1, "VALID")]


def test_max_pooling_and_its_gradients_over_windows_that_overlap_or_not(programs):
    """Windows that overlap (stride < window: the gradient splits images, not rows), tile or skip input rows,
    SAME padding, channel counts under and over a block of flags (64), ties (the first maximum of a window takes
    the gradient) and NaN; sizes over the parallel threshold too. Native == generic == eager."""
    rng = np.random.default_rng(11)
    spec = rt.TensorSpec([None] * 4, rt.float32)
    for ksize, strides, padding in POOLS:
        for shape in ((1, 5, 7, 1), (2, 6, 6, 16), (3, 7, 5, 70), (4, 48, 48, 32)):
            x = rng.integers(-3, 4, shape).astype(np.float32)          # many ties
            if shape[0] == 3:
                x[1, 2, 3, 5] = np.nan
            y_shape = rt.nn.max_pool2d(rt.constant(x), ksize, strides, padding).shape.as_list()
            w, v = (rng.standard_normal(y_shape).astype(np.float32) for _ in range(2))
            check(programs.pooling, (spec, spec, spec, ksize, strides, padding),
                  [rt.constant(x), rt.constant(w), rt.constant(v)], [ksize, strides, padding])


def test_sums_of_broadcast_products_run_as_matmuls(programs):
    """``reduce_sum(a[:, :, None] * b[None], 1)`` and its other axis orders (keepdims, a rank-2 operand, the
    reduced axis first or last, float64) run through the GEMM, to float tolerance of eager's sum; a product read
    twice, or one whose operands both span the reduced and a batch axis, stays a fused reduction."""
    rng = np.random.default_rng(13)
    for dtype, cases in ((np.float32, programs.CONTRACTIONS), (np.float64, [("ik,kj", (20, 30), (30, 10))])):
        for form, a_shape, b_shape in cases:
            specs = (rt.TensorSpec(a_shape, rt.as_dtype(dtype)), rt.TensorSpec(b_shape, rt.as_dtype(dtype)))
            a, b = (rt.constant(rng.standard_normal(shape).astype(dtype)) for shape in (a_shape, b_shape))
            check(programs.contractions, (*specs, form), [a, b], [form], atol=1e-4)
            ir = str(lower_function(built(programs.contractions, *specs, form).graph, "contraction").ir)
            rewritten = form not in ("read twice", "batched")
            assert (("rt_gemm" in ir or "rt_matmul" in ir) == rewritten), (form, ir)


SHORT_ROWS = (2, 3, 10, 15, 16, 17, 33, 100, 127, 128)


def test_short_static_rows_run_over_whole_vectors(programs):
    """Rows of static lengths that are not whole vectors run padded (masked loads, skipped stores, the
    reductions' identity in the extra lanes): the same results as eager, inf and NaN included."""
    rng = np.random.default_rng(7)
    for n in SHORT_ROWS:
        x = (rng.standard_normal((5, n)) * 3).astype(np.float32)
        labels = rt.constant(rng.integers(0, n, 5).astype(np.int32))
        check(programs.short_rows, (rt.TensorSpec([5, n], rt.float32), rt.TensorSpec([5], rt.int32)),
              [rt.constant(x), labels], atol=1e-4)
        x[1, n - 1], x[2, 0], x[3, n // 2] = np.nan, np.inf, -np.inf
        check(programs.short_rows, (rt.TensorSpec([5, n], rt.float32), rt.TensorSpec([5], rt.int32)),
              [rt.constant(x), labels], atol=1e-4)
        i = rng.integers(-1000, 1000, (4, n)).astype(np.int32)
        check(programs.short_int_rows, (rt.TensorSpec([4, n], rt.int32),), [rt.constant(i)])
    lowered = str(lower_function(built(programs.short_rows, rt.TensorSpec([5, 10], rt.float32),
                                       rt.TensorSpec([5], rt.int32)).graph, "rows").ir)
    assert " in 16  [simd" in lowered and "rt_opaque_i64(10)" in lowered, lowered


# Calls of the short-row programs on inputs whose last byte is followed by a page that cannot be read.
GUARDED_CALLS = r"""
import ctypes, mmap, sys
import numpy as np
import rt_lowering_programs as programs
import runtime as rt

libc = ctypes.CDLL(None)


def at_page_end(a):
    page = mmap.PAGESIZE
    pages = -(-a.nbytes // page) + 1
    region = mmap.mmap(-1, pages * page)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    assert libc.mprotect(ctypes.c_void_p(start + (pages - 1) * page), page, 0) == 0
    out = np.frombuffer(region, a.dtype, a.size, (pages - 1) * page - a.nbytes).reshape(a.shape)
    out[...] = a
    return out


for n in [int(v) for v in sys.argv[1:]]:
    x = at_page_end(np.linspace(-3, 3, 5 * n, dtype=np.float32).reshape(5, n))
    labels = at_page_end(np.arange(5, dtype=np.int32) % n)
    f = programs.short_rows.get_concrete_function(rt.TensorSpec([5, n], rt.float32), rt.TensorSpec([5], rt.int32))
    assert f.native
    f(x, labels)
    g = programs.short_int_rows.get_concrete_function(rt.TensorSpec([4, n], rt.int32))
    g(at_page_end(np.arange(4 * n, dtype=np.int32).reshape(4, n)))
print("ok")
"""


def test_padded_rows_never_read_past_the_input(programs):
    """The last row's extra lanes would read past the input: inputs that end at an unreadable page run
    (in a subprocess: a fault fails the test)."""
    root = Path(programs.__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(PROJECT)]))
    proc = subprocess.run([sys.executable, "-c", GUARDED_CALLS, *map(str, SHORT_ROWS)], cwd=root, env=env,
                          check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stdout, proc.stderr)


# ---------------------------------------------------------------------------
# Streaming stores and prefetched rows (rows.py): with RT_STREAM_MIN_BYTES=0 every row of a streamable result is
# written through a row buffer and rt_stream_copy, whatever its size; the results must not change.
STREAMED_CALLS = r"""
import sys
import numpy as np
import rt_lowering_programs as programs
import runtime as rt

for shape in [[6, 1024], [5, 1000], [3, 4, 257], [2, 3000], [7, 333]]:
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    x[0, 1] = np.inf
    gamma = rng.standard_normal(shape[-1:]).astype(np.float32)
    spec = [rt.TensorSpec(shape, rt.float32), rt.TensorSpec(shape[-1:], rt.float32)]
    if shape == [7, 333]:
        spec = [rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32)]
    concrete = programs.streamed_rows.get_concrete_function(*spec)
    assert concrete.native, shape
    native = [np.asarray(v) for v in concrete(x, gamma)]
    rt.config.run_functions_eagerly(True)
    eager = [np.asarray(v) for v in programs.streamed_rows(x, gamma)]
    rt.config.run_functions_eagerly(False)
    for a, b in zip(native, eager):
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-5, err_msg=str(shape))
    if shape != [7, 333]:
        joined = programs.streamed_concat.get_concrete_function(rt.TensorSpec(shape, rt.float32))
        assert joined.native, shape
        native = np.asarray(joined(x))
        rt.config.run_functions_eagerly(True)
        eager = np.asarray(programs.streamed_concat(x))
        rt.config.run_functions_eagerly(False)
        np.testing.assert_allclose(native, eager, rtol=3e-5, atol=3e-5, err_msg=f"concat {shape}")
print("ok")
"""


def test_streamed_rows_and_prefetches_keep_the_results(programs):
    """Softmax, layer norm and a float64 row group with every row streamed (RT_STREAM_MIN_BYTES=0, in a
    subprocess: the threshold is read once per process), rows on and off vector boundaries, static and
    run-time lengths: the same results as eager. The loops stream through a row buffer and prefetch the next
    row of ``x`` (not of the broadcast ``gamma``)."""
    root = Path(programs.__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(PROJECT)]), RT_STREAM_MIN_BYTES="0")
    proc = subprocess.run([sys.executable, "-c", STREAMED_CALLS], cwd=root, env=env, check=False,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stdout, proc.stderr)
    lowered = str(lower_function(built(programs.streamed_rows, rt.TensorSpec([6, 1024], rt.float32),
                                       rt.TensorSpec([1024], rt.float32)).graph, "streamed").ir)
    assert lowered.count("call rt_stream_copy(") >= 3 and "rt_streams(" in lowered, lowered
    x_ptr, gamma_ptr = (re.search(rf"let (\w+): float \* = \(float \*\)in\[{i}\]\.data", lowered).group(1)
                        for i in (0, 1))
    prefetched = [line for line in lowered.splitlines() if "rt_prefetch_bytes(" in line]
    assert prefetched and all(f"({x_ptr} + " in line and gamma_ptr not in line for line in prefetched), prefetched


# ---------------------------------------------------------------------------
# Training ops: convolutions, pooling, cross entropy and the gradients of slicing, gathering, padding,
# broadcasting and TensorArrays, native against eager (float32 tolerance: sums in another order).


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.integers(1, 3), st.integers(2, 7), st.integers(2, 7), st.data())
def test_convolutions_pooling_and_cross_entropy_with_gradients(programs, n, h, w, data):
    x = _tensor([n, h, w, 3], data)
    filters = _tensor([3, 3, 3, 4], data)
    labels = rt.constant(np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32))
    signature = (rt.TensorSpec([None, None, None, 3], rt.float32), rt.TensorSpec([3, 3, 3, 4], rt.float32),
                 rt.TensorSpec([None], rt.int32))
    check(programs.cnn, signature, [x, filters, labels], atol=2e-4)


def test_cross_entropy_checks_its_labels_natively(programs):
    signature = (rt.TensorSpec([None, None, None, 3], rt.float32), rt.TensorSpec([3, 3, 3, 4], rt.float32),
                 rt.TensorSpec([None], rt.int32))
    x, filters = rt.ones([2, 4, 4, 3]), rt.ones([3, 3, 3, 4])
    check(programs.cnn, signature, [x, filters, rt.constant(np.array([0, 4], np.int32))])     # out of range
    check(programs.cnn, signature, [x, filters, rt.constant(np.array([0, 1, 1], np.int32))])  # not one per row
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"(?s)Conv2D.*window does not fit.*VALID"):
        built(programs.cnn, *signature)(rt.ones([2, 1, 1, 3]), filters, rt.constant(np.array([0, 1], np.int32)))


@HYP
@given(st.integers(2, 5), st.integers(2, 4), st.booleans(), st.data())
def test_gradients_of_gather_slices_pads_and_broadcasts(programs, rows, cols, row_vector, data):
    m = _tensor([rows, cols], data)
    v = _tensor([cols if row_vector else 1], data)
    ids = rt.constant(np.array(data.draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=6)), np.int32))
    pads = rt.constant(np.array(data.draw(st.lists(st.integers(0, 2), min_size=4, max_size=4)), np.int32).reshape(2, 2))
    signature = (rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32),
                 rt.TensorSpec([None], rt.int32), rt.TensorSpec([2, 2], rt.int32))
    check(programs.scatter_grads, signature, [m, v, ids, pads], atol=1e-4)
    check(programs.scatter_grads, signature, [m, v, rt.constant(np.array([rows], np.int32)), pads])  # gather fails
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"(?s)PadV2.*non-negative.*rt_lowering_programs"):
        built(programs.scatter_grads, *signature)(m, v, ids, rt.constant(np.array([[0, 1], [-1, 0]], np.int32)))


@HYP
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 4), st.data())
def test_gradients_through_tensor_arrays(programs, steps, width, n, data):
    n = min(n, steps)
    check(programs.list_grads, (rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([], rt.int32)),
          [_tensor([steps, width], data), rt.constant(max(n, 1))])


@HYP
@given(st.integers(2, 4), st.integers(2, 4), st.data())
def test_library_ops_natively(programs, rows, cols, data):
    m = _tensor([rows, cols], data, elements=st.sampled_from([-1.5, -0.5, 0.0, 0.5, 1.0, 2.0]))   # ties
    ids = rt.constant(np.array(data.draw(st.lists(st.tuples(st.integers(0, rows - 1), st.integers(0, cols - 1)),
                                                  min_size=1, max_size=4)), np.int32))
    signature = (rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, 2], rt.int32))
    check(programs.library_ops, signature, [m, ids], atol=1e-4)
    check(programs.library_ops, signature, [m, rt.constant(np.array([[0, cols]], np.int32))])    # out of bounds

@given(st.integers(0, 40), st.integers(-1, 50), st.integers(1, 2**31 - 2), st.data())
def test_shuffle_indices(programs, n, window, rng, data):
    values = _tensor([n], data, st.integers(-1000, 1000), np.int64)
    check(programs.shuffled_indices, (rt.TensorSpec([None], rt.int64), rt.TensorSpec([], rt.int64),
                                      rt.TensorSpec([], rt.int64)),
          [values, rt.constant(window, rt.int64), rt.constant(rng, rt.int64)])


# ---------------------------------------------------------------------------
# Registry walk.


def test_every_native_lowering_runs_natively_here(programs):
    """Every op type with a native lowering appears, not through Python, in a function of this module
    (whose tests run it natively against eager). A new op with native code needs a program here."""
    exercised: set[str] = set()
    for name in dir(programs):
        function = getattr(programs, name)
        if not isinstance(function, rt.Function):
            continue
        for concrete in function.concrete_functions():
            if not concrete.native:
                continue
            callbacks = lower_function(concrete.graph, "rt_fn_walk").report.callbacks
            exercised |= {op.type for op in all_operations(concrete.graph) if op.type not in callbacks}
    missing = sorted(native_op_types() - exercised - {"Placeholder"})
    assert not missing, f"ops lowered natively that no built test program runs natively: {missing}"
