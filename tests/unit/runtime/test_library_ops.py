"""The ops real TensorFlow programs reach for, against numpy (always) and TensorFlow's own numbers (when it is
installed): linear algebra and einsum, sorting, index tuples, splitting and rolling, map_fn, the math and nn
additions, complex numbers, gradients through them, random numbers' distributions and seeds, and the set-up calls
(devices, namespaces that name what rt lacks).

Each case runs eagerly and traced (``run_both``: the traced graph must give eager's result).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from runtime_test_helpers import assert_matches_numpy, run_both

import runtime as rt
from runtime.ops import random_ops


@pytest.fixture(scope="module")
def tf():
    tf = pytest.importorskip("tensorflow")
    return tf


def _rng(seed=0):
    return np.random.default_rng(seed)


A = _rng(0).standard_normal((3, 4)).astype(np.float32)
B = _rng(1).standard_normal((4, 2)).astype(np.float32)
SQUARE = (_rng(2).standard_normal((2, 3, 3)) + 3 * np.eye(3)).astype(np.float64)
RHS = _rng(3).standard_normal((2, 3, 2))
V = np.array([3.0, -1.0, 2.0, 2.0, -4.0, 0.5], np.float32)
INTS = np.array([[4, 1, 3, 1], [0, 7, 7, 2]], np.int32)


def _np_norm(x, ord, axis):
    return np.linalg.norm(x, ord=ord, axis=axis)


# (id, rt function, numpy reference or None, TensorFlow function (tf -> callable) or None, inputs)
CASES = [
    ("linalg.inv", lambda x: rt.linalg.inv(x), np.linalg.inv, lambda tf: tf.linalg.inv, [SQUARE]),
    ("linalg.det", lambda x: rt.linalg.det(x), np.linalg.det, lambda tf: tf.linalg.det, [SQUARE]),
    ("linalg.solve", lambda a, b: rt.linalg.solve(a, b), np.linalg.solve, lambda tf: tf.linalg.solve, [SQUARE, RHS]),
    ("linalg.solve adjoint", lambda a, b: rt.linalg.solve(a, b, adjoint=True),
     lambda a, b: np.linalg.solve(np.swapaxes(a, -1, -2), b), lambda tf: lambda a, b: tf.linalg.solve(a, b, True),
     [SQUARE, RHS]),
    ("norm", lambda x: rt.norm(x), lambda x: np.linalg.norm(x.reshape(-1)), lambda tf: tf.norm, [A]),
    ("norm axis", lambda x: rt.linalg.norm(x, axis=1, keepdims=True),
     lambda x: np.linalg.norm(x, axis=1, keepdims=True), lambda tf: lambda x: tf.linalg.norm(x, axis=1, keepdims=True),
     [A]),
    ("norm ord 1", lambda x: rt.norm(x, ord=1, axis=0), lambda x: _np_norm(x, 1, 0),
     lambda tf: lambda x: tf.norm(x, ord=1, axis=0), [A]),
    ("norm ord inf", lambda x: rt.norm(x, ord=np.inf, axis=-1), lambda x: _np_norm(x, np.inf, -1),
     lambda tf: lambda x: tf.norm(x, ord=np.inf, axis=-1), [A]),
    ("norm ord 3", lambda x: rt.norm(x, ord=3, axis=1), lambda x: _np_norm(x, 3, 1),
     lambda tf: lambda x: tf.norm(x, ord=3, axis=1), [A]),
    ("norm fro", lambda x: rt.norm(x, ord="fro", axis=[0, 1]), lambda x: _np_norm(x, "fro", (0, 1)),
     lambda tf: lambda x: tf.norm(x, ord="fro", axis=[0, 1]), [A]),
    ("matrix norm 1", lambda x: rt.norm(x, ord=1, axis=[-2, -1]), lambda x: _np_norm(x, 1, (-2, -1)),
     lambda tf: lambda x: tf.norm(x, ord=1, axis=[-2, -1]), [A]),
    ("matrix norm inf", lambda x: rt.norm(x, ord=np.inf, axis=[0, 1], keepdims=True),
     lambda x: np.linalg.norm(x, np.inf, (0, 1), keepdims=True),
     lambda tf: lambda x: tf.norm(x, ord=np.inf, axis=[0, 1], keepdims=True), [A]),
    ("linalg.eye batch", lambda: rt.linalg.eye(2, 3, batch_shape=[2]), lambda: np.broadcast_to(np.eye(2, 3, dtype=np.float32), (2, 2, 3)),
     lambda tf: lambda: tf.linalg.eye(2, 3, batch_shape=[2]), []),
    ("linalg.diag", lambda v: rt.linalg.diag(v), lambda v: np.apply_along_axis(np.diag, -1, v),
     lambda tf: tf.linalg.diag, [A]),
    ("linalg.diag_part", lambda x: rt.linalg.diag_part(x), lambda x: np.diagonal(x, axis1=-2, axis2=-1),
     lambda tf: tf.linalg.diag_part, [SQUARE]),
    ("linalg.diag_part wide", lambda x: rt.linalg.diag_part(x), np.diag, lambda tf: tf.linalg.diag_part, [A]),
    ("linalg.band_part causal", lambda x: rt.linalg.band_part(x, -1, 0), lambda x: np.tril(x),
     lambda tf: lambda x: tf.linalg.band_part(x, -1, 0), [A]),
    ("linalg.band_part band", lambda x: rt.linalg.band_part(x, 1, 2), lambda x: np.triu(np.tril(x, 2), -1),
     lambda tf: lambda x: tf.linalg.band_part(x, 1, 2), [A]),
    ("linalg.band_part upper", lambda x: rt.linalg.band_part(x, 0, -1), lambda x: np.triu(x),
     lambda tf: lambda x: tf.linalg.band_part(x, 0, -1), [np.stack([A, A + 1])]),
    ("linalg.trace", lambda x: rt.linalg.trace(x), lambda x: np.trace(x, axis1=-2, axis2=-1),
     lambda tf: tf.linalg.trace, [SQUARE]),
    ("linalg.matrix_transpose", lambda x: rt.linalg.matrix_transpose(x), lambda x: np.swapaxes(x, -1, -2),
     lambda tf: tf.linalg.matrix_transpose, [SQUARE]),
    ("linalg.matmul adjoint", lambda a, b: rt.linalg.matmul(a, b, adjoint_a=True), lambda a, b: a.T @ b,
     lambda tf: lambda a, b: tf.linalg.matmul(a, b, adjoint_a=True), [A[:, :2], A]),
    ("linalg.matvec", lambda a, v: rt.linalg.matvec(a, v), lambda a, v: a @ v, lambda tf: tf.linalg.matvec,
     [A, A[0]]),
    ("l2_normalize", lambda x: rt.math.l2_normalize(x, axis=1),
     lambda x: x / np.sqrt(np.maximum(np.sum(x * x, 1, keepdims=True), 1e-12)),
     lambda tf: lambda x: tf.math.l2_normalize(x, axis=1), [A]),
    ("einsum matmul", lambda a, b: rt.einsum("ij,jk->ik", a, b), lambda a, b: np.einsum("ij,jk->ik", a, b),
     lambda tf: lambda a, b: tf.einsum("ij,jk->ik", a, b), [A, B]),
    ("einsum implicit", lambda a, b: rt.einsum("ij,jk", a, b), lambda a, b: np.einsum("ij,jk", a, b),
     lambda tf: lambda a, b: tf.einsum("ij,jk", a, b), [A, B]),
    ("einsum transpose", lambda a: rt.einsum("ij->ji", a), lambda a: np.einsum("ij->ji", a),
     lambda tf: lambda a: tf.einsum("ij->ji", a), [A]),
    ("einsum sum", lambda a: rt.einsum("ij->", a), lambda a: np.einsum("ij->", a),
     lambda tf: lambda a: tf.einsum("ij->", a), [A]),
    ("einsum trace", lambda a: rt.einsum("ii", a), lambda a: np.einsum("ii", a),
     lambda tf: lambda a: tf.einsum("ii", a), [SQUARE[0]]),
    ("einsum diagonal", lambda a: rt.einsum("bii->bi", a), lambda a: np.einsum("bii->bi", a),
     lambda tf: lambda a: tf.einsum("bii->bi", a), [SQUARE]),
    ("einsum outer", lambda a, b: rt.einsum("i,j->ij", a, b), lambda a, b: np.einsum("i,j->ij", a, b),
     lambda tf: lambda a, b: tf.einsum("i,j->ij", a, b), [A[0], B[:, 0]]),
    ("einsum dot", lambda a, b: rt.einsum("i,i->", a, b), lambda a, b: np.einsum("i,i->", a, b),
     lambda tf: lambda a, b: tf.einsum("i,i->", a, b), [A[0], A[1]]),
    ("einsum batch", lambda a, b: rt.einsum("bij,bjk->bik", a, b), lambda a, b: np.einsum("bij,bjk->bik", a, b),
     lambda tf: lambda a, b: tf.einsum("bij,bjk->bik", a, b), [SQUARE, RHS]),
    ("einsum ellipsis", lambda a, b: rt.einsum("...ij,jk->...ik", a, b),
     lambda a, b: np.einsum("...ij,jk->...ik", a, b), lambda tf: lambda a, b: tf.einsum("...ij,jk->...ik", a, b),
     [SQUARE, RHS[0]]),
    ("einsum three", lambda a, b, c: rt.einsum("ij,jk,kl->il", a, b, c),
     lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c), lambda tf: lambda a, b, c: tf.einsum("ij,jk,kl->il", a, b, c),
     [A, B, B.T]),
    ("einsum broadcast product", lambda a, b: rt.einsum("ij,ij->ij", a, b), lambda a, b: a * b,
     lambda tf: lambda a, b: tf.einsum("ij,ij->ij", a, b), [A, A]),
    ("einsum attention", lambda q, k: rt.einsum("bqd,bkd->bqk", q, k), lambda q, k: np.einsum("bqd,bkd->bqk", q, k),
     lambda tf: lambda q, k: tf.einsum("bqd,bkd->bqk", q, k), [SQUARE, SQUARE * 2]),
    ("tensordot", lambda a, b: rt.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
     lambda tf: lambda a, b: tf.tensordot(a, b, 1), [A, B]),
    ("tensordot axes", lambda a, b: rt.tensordot(a, b, [[0], [1]]), lambda a, b: np.tensordot(a, b, ([0], [1])),
     lambda tf: lambda a, b: tf.tensordot(a, b, [[0], [1]]), [A, A[:, :3]]),
    ("sort", lambda x: rt.sort(x), np.sort, lambda tf: tf.sort, [V]),
    ("sort descending", lambda x: rt.sort(x, direction="DESCENDING"), lambda x: -np.sort(-x),
     lambda tf: lambda x: tf.sort(x, direction="DESCENDING"), [V]),
    ("argsort", lambda x: rt.argsort(x), lambda x: np.argsort(x, kind="stable").astype(np.int32),
     lambda tf: lambda x: tf.argsort(x, stable=True), [V]),
    ("argsort descending axis 0", lambda x: rt.argsort(x, axis=0, direction="DESCENDING"), None,
     lambda tf: lambda x: tf.argsort(x, axis=0, direction="DESCENDING", stable=True), [INTS]),
    ("top_k values", lambda x: rt.math.top_k(x, 2).values, lambda x: -np.sort(-x)[..., :2],
     lambda tf: lambda x: tf.math.top_k(x, 2).values, [INTS]),
    ("top_k indices", lambda x: rt.math.top_k(x, 3).indices, None, lambda tf: lambda x: tf.math.top_k(x, 3).indices,
     [INTS]),
    ("unique y", lambda x: rt.unique(x).y, None, lambda tf: lambda x: tf.unique(x).y, [INTS[1]]),
    ("unique idx", lambda x: rt.unique(x).idx, None, lambda tf: lambda x: tf.unique(x).idx, [INTS.reshape(-1)]),
    ("gather_nd", lambda x: rt.gather_nd(x, [[1, 2], [0, 0], [2, 3]]), lambda x: x[[1, 0, 2], [2, 0, 3]],
     lambda tf: lambda x: tf.gather_nd(x, [[1, 2], [0, 0], [2, 3]]), [A]),
    ("gather_nd rows", lambda x: rt.gather_nd(x, [[[1]], [[0]]]), lambda x: x[[[1], [0]]],
     lambda tf: lambda x: tf.gather_nd(x, [[[1]], [[0]]]), [A]),
    ("scatter_nd", lambda u: rt.scatter_nd([[4], [3], [1], [7], [4]], u, [8]), None,
     lambda tf: lambda u: tf.scatter_nd([[4], [3], [1], [7], [4]], u, [8]), [V[:5]]),
    ("boolean_mask", lambda x: rt.boolean_mask(x, [True, False, True]), lambda x: x[[0, 2]],
     lambda tf: lambda x: tf.boolean_mask(x, [True, False, True]), [A]),
    ("boolean_mask 2-d mask", lambda x: rt.boolean_mask(x, x > 0), lambda x: x[x > 0],
     lambda tf: lambda x: tf.boolean_mask(x, x > 0), [A]),
    ("boolean_mask axis", lambda x: rt.boolean_mask(x, [True, False, True, True], axis=1), lambda x: x[:, [0, 2, 3]],
     lambda tf: lambda x: tf.boolean_mask(x, [True, False, True, True], axis=1), [A]),
    ("split sizes", lambda x: rt.split(x, [1, -1, 1], axis=1)[1], lambda x: x[:, 1:3],
     lambda tf: lambda x: tf.split(x, [1, -1, 1], axis=1)[1], [A]),
    ("split parts", lambda x: rt.split(x, 2, axis=1)[1], lambda x: x[:, 2:], lambda tf: lambda x: tf.split(x, 2, 1)[1],
     [A]),
    ("reverse", lambda x: rt.reverse(x, [0, 1]), lambda x: x[::-1, ::-1], lambda tf: lambda x: tf.reverse(x, [0, 1]),
     [A]),
    ("roll", lambda x: rt.roll(x, [1, -3], [0, 1]), lambda x: np.roll(x, (1, -3), (0, 1)),
     lambda tf: lambda x: tf.roll(x, [1, -3], [0, 1]), [A]),
    ("roll same axis", lambda x: rt.roll(x, [2, 3], [1, 1]), lambda x: np.roll(x, 5, 1),
     lambda tf: lambda x: tf.roll(x, [2, 3], [1, 1]), [A]),
    ("map_fn", lambda x: rt.map_fn(lambda r: rt.reduce_sum(r * r), x), lambda x: np.sum(x * x, 1),
     lambda tf: lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r), x), [A]),
    ("map_fn signature", lambda x: rt.map_fn(lambda r: rt.cast(r > 0, rt.int32), x, fn_output_signature=rt.int32),
     lambda x: (x > 0).astype(np.int32),
     lambda tf: lambda x: tf.map_fn(lambda r: tf.cast(r > 0, tf.int32), x, fn_output_signature=tf.int32), [A]),
    ("map_fn tuple", lambda x: rt.map_fn(lambda r: (r[0][0], r[0][1:] * 2.0), (x,),
                                         fn_output_signature=(rt.float32,) * 2)[1],
     lambda x: x[:, 1:] * 2, lambda tf: lambda x: tf.map_fn(lambda r: (r[0][0], r[0][1:] * 2.0), (x,),
                                                             fn_output_signature=(tf.float32,) * 2)[1], [A]),
    ("log1p", lambda x: rt.math.log1p(rt.abs(x)), lambda x: np.log1p(np.abs(x)),
     lambda tf: lambda x: tf.math.log1p(tf.abs(x)), [A]),
    ("expm1", lambda x: rt.math.expm1(x), np.expm1, lambda tf: tf.math.expm1, [A]),
    ("erf", lambda x: rt.math.erf(x), lambda x: np.vectorize(math.erf)(x).astype(np.float32), lambda tf: tf.math.erf,
     [A]),
    ("is_nan", lambda x: rt.math.is_nan(x / x), lambda x: np.isnan(x / x), lambda tf: lambda x: tf.math.is_nan(x / x),
     [np.array([0.0, 1.0, np.inf], np.float32)]),
    ("is_inf", lambda x: rt.math.is_inf(1.0 / x), lambda x: np.isinf(1 / x),
     lambda tf: lambda x: tf.math.is_inf(1.0 / x), [np.array([0.0, 1.0, -0.0], np.float32)]),
    ("is_finite", lambda x: rt.math.is_finite(x), np.isfinite, lambda tf: tf.math.is_finite,
     [np.array([np.nan, 1.0, -np.inf], np.float32)]),
    ("logical_xor", lambda x: rt.math.logical_xor(x > 0, x < 1), lambda x: (x > 0) ^ (x < 1),
     lambda tf: lambda x: tf.math.logical_xor(x > 0, x < 1), [A]),
    ("squared_difference", lambda x, y: rt.math.squared_difference(x, y), lambda x, y: (x - y) ** 2,
     lambda tf: tf.math.squared_difference, [A, A[0]]),
    ("reduce_std", lambda x: rt.math.reduce_std(x, 1), lambda x: np.std(x, 1), lambda tf: lambda x: tf.math.reduce_std(x, 1),
     [A]),
    ("reduce_variance", lambda x: rt.math.reduce_variance(x, keepdims=True),
     lambda x: np.var(x, keepdims=True), lambda tf: lambda x: tf.math.reduce_variance(x, keepdims=True), [A]),
    ("reduce_euclidean_norm", lambda x: rt.math.reduce_euclidean_norm(x, 0),
     lambda x: np.sqrt(np.sum(x * x, 0)), lambda tf: lambda x: tf.math.reduce_euclidean_norm(x, 0), [A]),
    ("reduce_euclidean_norm int", lambda x: rt.math.reduce_euclidean_norm(x), None,
     lambda tf: tf.math.reduce_euclidean_norm, [INTS]),
    ("count_nonzero", lambda x: rt.math.count_nonzero(x, 1), lambda x: np.count_nonzero(x, 1).astype(np.int64),
     lambda tf: lambda x: tf.math.count_nonzero(x, 1), [INTS]),
    ("add_n", lambda x, y: rt.math.add_n([x, y, x]), lambda x, y: x + y + x, lambda tf: lambda x, y: tf.math.add_n([x, y, x]),
     [A, A]),
    ("divide_no_nan", lambda x, y: rt.math.divide_no_nan(x, y), lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y)),
     lambda tf: tf.math.divide_no_nan, [V, np.array([1.0, 0.0, 2.0, 0.0, 4.0, 1.0], np.float32)]),
    ("argmax int32", lambda x: rt.argmax(x, 1, output_type=rt.int32), lambda x: np.argmax(x, 1).astype(np.int32),
     lambda tf: lambda x: tf.argmax(x, 1, output_type=tf.int32), [INTS]),
    ("math.argmin", lambda x: rt.math.argmin(x, 0), lambda x: np.argmin(x, 0), lambda tf: lambda x: tf.math.argmin(x, 0),
     [INTS]),
    ("range float", lambda: rt.range(0, 2, 0.5, dtype=rt.float64), lambda: np.arange(0, 2, 0.5),
     lambda tf: lambda: tf.range(0, 2, 0.5, dtype=tf.float64), []),
    ("range int64", lambda: rt.range(5, dtype=rt.int64), lambda: np.arange(5), lambda tf: lambda: tf.range(5, dtype=tf.int64),
     []),
    ("equal broadcasting", lambda x, y: rt.equal(x, y), lambda x, y: x == y, lambda tf: tf.equal,
     [INTS, np.array([[4], [7]], np.int32)]),
    ("pad reflect", lambda x: rt.pad(x, [[1, 1], [2, 0]], "REFLECT"), lambda x: np.pad(x, [[1, 1], [2, 0]], "reflect"),
     lambda tf: lambda x: tf.pad(x, [[1, 1], [2, 0]], "REFLECT"), [A]),
    ("relu6", lambda x: rt.nn.relu6(x * 4), lambda x: np.clip(x * 4, 0, 6), lambda tf: lambda x: tf.nn.relu6(x * 4), [A]),
    ("leaky_relu", lambda x: rt.nn.leaky_relu(x), lambda x: np.where(x > 0, x, 0.2 * x), lambda tf: tf.nn.leaky_relu,
     [A]),
    ("elu", lambda x: rt.nn.elu(x), lambda x: np.where(x > 0, x, np.expm1(x)), lambda tf: tf.nn.elu, [A]),
    ("selu", lambda x: rt.nn.selu(x), None, lambda tf: tf.nn.selu, [A]),
    ("silu", lambda x: rt.nn.silu(x), lambda x: x / (1 + np.exp(-x)), lambda tf: tf.nn.silu, [A]),
    ("swish", lambda x: rt.nn.swish(x), lambda x: x / (1 + np.exp(-x)), lambda tf: tf.nn.swish, [A]),
    ("l2_loss", lambda x: rt.nn.l2_loss(x), lambda x: np.sum(x * x) / 2, lambda tf: tf.nn.l2_loss, [A]),
    ("bias_add", lambda x, b: rt.nn.bias_add(x, b), lambda x, b: x + b, lambda tf: tf.nn.bias_add, [A, A[0]]),
    ("sigmoid_cross_entropy_with_logits",
     lambda z, x: rt.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
     lambda z, x: -z * np.log(1 / (1 + np.exp(-x))) - (1 - z) * np.log(1 - 1 / (1 + np.exp(-x))),
     lambda tf: lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
     [(A > 0).astype(np.float32), A]),
    ("softmax_cross_entropy_with_logits",
     lambda z, x: rt.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
     lambda z, x: -np.sum(z * (x - np.log(np.sum(np.exp(x), -1, keepdims=True))), -1),
     lambda tf: lambda z, x: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
     [np.abs(A) / np.abs(A).sum(1, keepdims=True), A]),
    ("moments mean", lambda x: rt.nn.moments(x, [0])[0], lambda x: x.mean(0), lambda tf: lambda x: tf.nn.moments(x, [0])[0],
     [A]),
    ("moments variance", lambda x: rt.nn.moments(x, [0, 1], keepdims=True)[1], lambda x: x.var(keepdims=True),
     lambda tf: lambda x: tf.nn.moments(x, [0, 1], keepdims=True)[1], [A]),
    ("complex abs", lambda a, b: rt.math.abs(rt.complex(a, b)), lambda a, b: np.abs(a + 1j * b),
     lambda tf: lambda a, b: tf.math.abs(tf.complex(a, b)), [A, A * 2]),
    ("complex product real part", lambda a, b: rt.math.real(rt.complex(a, b) * rt.math.conj(rt.complex(b, a))),
     lambda a, b: np.real((a + 1j * b) * np.conj(b + 1j * a)),
     lambda tf: lambda a, b: tf.math.real(tf.complex(a, b) * tf.math.conj(tf.complex(b, a))), [A, B.T[:, :4][:1]]),
    ("complex imag of a sum", lambda a: rt.math.imag(rt.reduce_sum(rt.complex(a, a * a))), lambda a: np.sum(a * a),
     lambda tf: lambda a: tf.math.imag(tf.reduce_sum(tf.complex(a, a * a))), [A]),
]


def _run(fn, inputs):
    return run_both(fn, [rt.constant(x) for x in inputs], relax=False)


def _flat(value):
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(case):
    _, fn, reference, _, inputs = case
    out = _run(fn, inputs)
    if reference is None:
        return          # TensorFlow's numbers are the reference (a tie order or a constant of its own)
    expected = np.asarray(reference(*inputs))
    tol = (1e-5, 1e-5) if out.dtype in (rt.float32, rt.complex64) else (1e-10, 1e-10)
    got = _flat(out)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=tol[0], atol=tol[1])
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(tf, case):
    _, fn, _, tf_fn, inputs = case
    ours = _flat(_run(fn, inputs))
    theirs = _flat(tf_fn(tf)(*inputs))
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert np.dtype(ours.dtype) == np.dtype(theirs.dtype), (ours.dtype, theirs.dtype)
    if ours.dtype.kind in "fc":
        tol = 1e-5 if ours.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------------------
# Gradients through the new ops, against TensorFlow's (the finite-difference checks are in test_gradients.py).

GRADIENTS = [
    ("inv", lambda t, x: t.linalg.inv(x), [SQUARE]),
    ("det", lambda t, x: t.linalg.det(x), [SQUARE]),
    ("solve", lambda t, a, b: t.linalg.solve(a, b), [SQUARE, RHS]),
    ("einsum", lambda t, a, b: t.einsum("bij,bjk->bik", a, b) ** 2, [SQUARE, RHS]),
    ("norm", lambda t, x: t.norm(x, axis=1), [SQUARE[0]]),
    ("sort", lambda t, x: t.sort(x) * t.range(6, dtype=t.float64), [V.astype(np.float64)]),
    ("top_k", lambda t, x: t.math.top_k(x, 2).values ** 2, [SQUARE[0]]),
    ("gather_nd", lambda t, x: t.gather_nd(x, [[1, 2], [0, 0], [1, 2]]), [SQUARE[0]]),
    ("boolean_mask", lambda t, x: t.boolean_mask(x, x > 0) ** 2, [SQUARE[0]]),
    ("split", lambda t, x: t.split(x, [1, 2], 1)[1] ** 2, [SQUARE[0]]),
    ("roll", lambda t, x: t.roll(x, 1, 0) * x, [SQUARE[0]]),
    ("map_fn", lambda t, x: t.map_fn(lambda r: t.reduce_sum(r * r * r), x), [SQUARE[0]]),
    ("reduce_std", lambda t, x: t.math.reduce_std(x, 0), [SQUARE[0]]),
    ("erf log1p expm1", lambda t, x: t.math.erf(x) + t.math.log1p(x * x) + t.math.expm1(x), [SQUARE[0]]),
    ("nn", lambda t, x: t.nn.elu(x) + t.nn.selu(x) + t.nn.leaky_relu(x) + t.nn.silu(x) + t.nn.relu6(x * 3),
     [SQUARE[0] - 3 * np.eye(3)]),
    ("cross entropies", lambda t, x: t.nn.sigmoid_cross_entropy_with_logits(labels=x * 0 + 0.3, logits=x)
     + t.nn.softmax_cross_entropy_with_logits(labels=x * 0 + 1 / 3, logits=x), [SQUARE[0]]),
    ("complex", lambda t, x: t.math.abs(t.complex(x, x * x) * t.complex(x, 1 + x)), [SQUARE[0]]),
]


def _gradient(module, fn, inputs):
    xs = [module.constant(x) for x in inputs]
    with module.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = module.reduce_sum(fn(module, *xs))
    return [np.asarray(g.numpy()) for g in tape.gradient(y, xs)]


@pytest.mark.parametrize("case", GRADIENTS, ids=[c[0] for c in GRADIENTS])
def test_gradients_match_tensorflow(tf, case):
    _, fn, inputs = case
    ours = _gradient(rt, fn, inputs)
    traced = rt.function(lambda *xs: _gradient_graph(fn, xs), autograph=False)(*[rt.constant(x) for x in inputs])
    theirs = _gradient(tf, fn, inputs)
    for a, b, c in zip(ours, traced, theirs):
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(b.numpy(), c, rtol=1e-6, atol=1e-8)


def _gradient_graph(fn, xs):
    with rt.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = rt.reduce_sum(fn(rt, *xs))
    return tape.gradient(y, list(xs))


# ---------------------------------------------------------------------------
# Random numbers: TensorFlow's distributions and seed rules (not its bit stream).

def test_distributions_match_tensorflows(tf):
    n = 40000
    ours = {"uniform": rt.random.uniform([n], -1.0, 3.0, seed=1), "normal": rt.random.normal([n], 2.0, 0.5, seed=2),
            "truncated": rt.random.truncated_normal([n], 1.0, 2.0, seed=3),
            "stateless": rt.random.stateless_truncated_normal([n], [4, 5], dtype=rt.float64)}
    theirs = {"uniform": tf.random.uniform([n], -1.0, 3.0, seed=1), "normal": tf.random.normal([n], 2.0, 0.5, seed=2),
              "truncated": tf.random.truncated_normal([n], 1.0, 2.0, seed=3),
              "stateless": tf.random.stateless_truncated_normal([n], [4, 5], dtype=tf.float64)}
    for key, value in ours.items():
        a, b = value.numpy(), theirs[key].numpy()
        assert a.dtype == b.dtype
        for q in (0.01, 0.25, 0.5, 0.75, 0.99):
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 0.06 * (b.max() - b.min()) / 4, (key, q)
    bounds = {"uniform": (-1.0, 3.0), "truncated": (1.0 - 4.0, 1.0 + 4.0), "stateless": (-2.0, 2.0)}
    for key, (lo, hi) in bounds.items():
        assert ours[key].numpy().min() >= lo and ours[key].numpy().max() <= hi, key
        assert theirs[key].numpy().min() >= lo and theirs[key].numpy().max() <= hi, key
    logits = np.log([[0.2, 0.5, 0.3]])
    ours = np.bincount(rt.random.categorical(logits, n, seed=7).numpy()[0], minlength=3) / n
    theirs = np.bincount(tf.random.categorical(logits, n, seed=7).numpy()[0], minlength=3) / n
    np.testing.assert_allclose(ours, theirs, atol=0.015)


def test_seed_rules_are_tensorflows(tf):
    """The same program gives the same pattern of repeats in both: ops with one op seed draw anew on each call,
    set_seed starts them again, a function's op seeds come from its own order of ops."""
    def pattern(module):
        module.random.set_seed(3)
        a, b = module.random.uniform([2], seed=1).numpy(), module.random.uniform([2], seed=1).numpy()
        module.random.set_seed(3)
        c, d = module.random.uniform([2], seed=1).numpy(), module.random.uniform([2]).numpy()
        module.random.set_seed(3)
        e = module.random.uniform([2], seed=1).numpy()
        f1 = module.function(lambda: module.random.uniform([2]))
        f2 = module.function(lambda: module.random.uniform([2]))
        g, h = f1().numpy(), f2().numpy()
        return [np.array_equal(a, b), np.array_equal(a, c), np.array_equal(c, e), np.array_equal(b, d),
                np.array_equal(g, h), np.array_equal(g, f1().numpy())]
    try:
        assert pattern(rt) == pattern(tf) == [False, True, True, False, True, False]
    finally:
        rt.random.set_seed(None)
        tf.random.set_seed(None)


def test_generator_and_stateless_shapes_match_tensorflows(tf):
    g, h = rt.random.Generator.from_seed(5), tf.random.Generator.from_seed(5)
    for ours, theirs in ((g.normal([2, 3]), h.normal([2, 3])), (g.uniform([4], 0, 10, rt.int32),
                                                                 h.uniform([4], 0, 10, tf.int32))):
        assert ours.shape == tuple(theirs.shape) and ours.dtype.name == theirs.dtype.name
    assert g.state.numpy()[2] == 2 and len(g.split(3)) == 3
    assert rt.random.stateless_uniform([3], [1, 2], 0, 5, rt.int64).dtype is rt.int64


def test_set_seed_resets_the_sequence_and_unseeded_ops_differ():
    rt.random.set_seed(11)
    first = [rt.random.normal([3]).numpy() for _ in range(2)]
    rt.random.set_seed(11)
    again = [rt.random.normal([3]).numpy() for _ in range(2)]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])
    rt.random.set_seed(None)
    assert not np.array_equal(rt.random.uniform([4]).numpy(), rt.random.uniform([4]).numpy())
    key = random_ops.mix(11, 0)         # the first op after set_seed(11) has op seed 0
    np.testing.assert_array_equal(first[0], random_ops.normal_array(key, 0, (3,), np.float32))


def test_the_stream_is_stable():
    """The documented stream (random_ops' docstring) gives these numbers: a change is a breaking change."""
    assert rt.random.stateless_uniform([4], [1, 2]).numpy().tolist() == [
        0.5297684669494629, 0.07380008697509766, 0.8909450769424438, 0.2580256462097168]
    assert rt.random.stateless_uniform([3], [1, 2], 0, 100, rt.int32).numpy().tolist() == [91, 58, 14]
    np.testing.assert_allclose(rt.random.stateless_normal([2], [1, 2], dtype=rt.float64).numpy(),
                               [0.872791551758064, 1.814458029268687], rtol=1e-14)
    np.testing.assert_allclose(rt.random.stateless_truncated_normal([3], [1, 2]).numpy(),
                               [1.0081919431686401, -0.37368276715278625, -0.7702128291130066], rtol=1e-6)


# ---------------------------------------------------------------------------
# Set-up calls and the names rt lacks.

def test_devices_as_tensorflow_lists_them_on_a_cpu_only_machine(tf):
    ours = rt.config.list_physical_devices()
    assert [(d.name, d.device_type) for d in ours] == [("/physical_device:CPU:0", "CPU")]
    assert repr(ours[0]) == "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"
    theirs = [d for d in tf.config.list_physical_devices() if d.device_type == "CPU"]
    assert [(d.name, d.device_type) for d in theirs] == [(d.name, d.device_type) for d in ours]
    assert repr(theirs[0]) == repr(ours[0])
    assert rt.config.list_physical_devices("GPU") == [] and rt.config.list_logical_devices("CPU")[0].name == \
        tf.config.list_logical_devices("CPU")[0].name
    with pytest.raises(ValueError) as ours_error:
        rt.config.experimental.set_memory_growth(ours[0], True)
    with pytest.raises(ValueError) as theirs_error:
        tf.config.experimental.set_memory_growth(theirs[0], True)
    assert str(ours_error.value) == str(theirs_error.value)


def test_set_up_calls():
    cpu = rt.config.list_physical_devices("CPU")
    rt.config.set_visible_devices(cpu, "CPU")
    rt.config.set_visible_devices([], "GPU")
    assert rt.config.get_visible_devices() == cpu and rt.config.experimental.list_physical_devices() == cpu
    with pytest.raises(ValueError, match="cannot be hidden"):
        rt.config.set_visible_devices([])
    with pytest.raises(ValueError, match="Unrecognized device"):
        rt.config.set_visible_devices([rt.config.PhysicalDevice("/physical_device:GPU:0", "GPU")])
    assert rt.test.is_gpu_available() is False and rt.test.gpu_device_name() == ""
    assert rt.executing_eagerly() and isinstance(rt.__version__, str)
    with rt.device("/GPU:0"):
        assert float(rt.constant(2.0) * 2.0) == 4.0
    rt.config.experimental.enable_op_determinism()
    assert rt.complex64.name == "complex64" and rt.dtypes.complex128 is rt.complex128


@pytest.mark.parametrize("path", ["no_such_op", "math.no_such_op", "nn.no_such_op", "linalg.svd", "random.gamma",
                                  "config.no_such_call", "debugging.no_such", "test.no_such"])
def test_a_name_rt_lacks_says_so(path):
    namespace, _, name = path.rpartition(".")
    target = getattr(rt, namespace) if namespace else rt
    with pytest.raises(AttributeError) as caught:
        getattr(target, name)
    assert str(caught.value) == f"rt has no {path} (TensorFlow's tf.{path}); see the README's API table"
    assert not hasattr(target, name)


def test_complex_variables_as_the_variable_guide_uses_them():
    v = rt.Variable([5 + 4j, 6 + 1j])
    assert v.dtype is rt.complex128 and v.shape == (2,)
    assert "complex128" in repr(v) and "5.+4.j" in repr(v)
    v.assign([1 + 1j, 2])
    np.testing.assert_array_equal(v.numpy(), [1 + 1j, 2 + 0j])
    v.assign_add([1j, 1j])
    np.testing.assert_array_equal(v.numpy(), [1 + 2j, 2 + 1j])
    assert rt.constant(5 + 4j).dtype is rt.complex128
    assert_matches_numpy(rt.math.abs(v), np.abs(np.array([1 + 2j, 2 + 1j])))
    assert_matches_numpy(rt.cast(v, rt.float32), np.float32([1.0, 2.0]))
    f = rt.function(lambda: v.read_value() * 2.0)
    np.testing.assert_array_equal(f().numpy(), [2 + 4j, 4 + 2j])


def test_set_shape_refines_a_graph_tensor_and_checks_it_when_the_graph_runs():
    @rt.function
    def f(x):
        y = rt.numpy_function(lambda a: a * 2.0, [x], rt.float32)
        assert y.shape.rank is None
        y.set_shape([None, 3])
        assert y.shape == rt.TensorShape([None, 3])
        return y + 1.0

    np.testing.assert_array_equal(f(rt.ones([2, 3])).numpy(), np.full((2, 3), 3.0, np.float32))
    assert f.get_concrete_function(rt.TensorSpec([None, 3])).outputs[0].shape == rt.TensorShape([None, 3])
    with pytest.raises(rt.errors.InvalidArgumentError, match="EnsureShape"):
        f(rt.ones([2, 4]))
    with pytest.raises(ValueError, match="not compatible"):
        rt.constant([1, 2]).set_shape([3])
    rt.constant([1, 2]).set_shape([None])          # eager tensors: a compatibility check, as in TensorFlow

    @rt.function
    def argument(x):
        x.set_shape([2, 3])
        return x
    with pytest.raises(ValueError, match="ensure_shape"):
        argument.get_concrete_function(rt.TensorSpec([None, 3]))


def test_eager_and_traced_draw_the_same_numbers_for_the_same_seeds():
    def draw():
        return (rt.random.uniform([3], seed=1), rt.random.normal([2], dtype=rt.float64, seed=2),
                rt.random.truncated_normal([4], seed=3), rt.random.uniform([3], 0, 9, rt.int64, seed=4),
                rt.random.categorical([[0.0, 1.0, 2.0]], 3, seed=5), rt.random.shuffle(rt.range(5), seed=6))
    rt.random.set_seed(7)
    traced = rt.function(draw)
    runs = [[t.numpy() for t in traced()] for _ in range(3)]
    rt.random.set_seed(7)
    eager = [[t.numpy() for t in draw()] for _ in range(3)]
    for ours, theirs in zip(runs, eager):
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[1][0])
    rt.random.set_seed(None)
