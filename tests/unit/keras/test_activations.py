"""gelu, softplus, erf and the activations by name: against math/numpy always, against TensorFlow/Keras where
installed; gradients against finite differences; eager and traced agree."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt


def _tf():
    return pytest.importorskip("tensorflow")


def _x(seed=0, n=200, scale=4.0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(n) * scale, [0.0, -0.0, 1e-8, -1e-8, 30.0, -30.0]]).astype(dtype)


def _gelu_ref(x):
    x = x.astype(np.float64)
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


def _softplus_ref(x):
    return np.logaddexp(0.0, x.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_softplus_erf_match_their_definitions(dtype):
    x = _x(dtype=dtype)
    rtol = 1.2e-7 if dtype == np.float32 else 3e-16          # computed in float64, rounded once
    # gelu rounds x * 0.5 and -x / sqrt(2) in x's dtype first: erfc(z) far out amplifies z's rounding ~2 z^2 times
    gelu_rtol = 2e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(rt.nn.gelu(x).numpy(), _gelu_ref(x), rtol=gelu_rtol, atol=1e-40)
    np.testing.assert_allclose(rt.nn.softplus(x).numpy(), _softplus_ref(x), rtol=rtol, atol=1e-40)
    np.testing.assert_allclose(rt.math.erf(x).numpy(), np.vectorize(math.erf)(x.astype(np.float64)), rtol=rtol,
                               atol=1e-40)
    np.testing.assert_allclose(rt.math.erfc(x).numpy(), np.vectorize(math.erfc)(x.astype(np.float64)), rtol=rtol,
                               atol=1e-40)
    approx = rt.nn.gelu(x, approximate=True).numpy()
    xd = x.astype(np.float64)
    want = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)))
    # 1 + tanh(...) cancels for negative x: an absolute bound there
    np.testing.assert_allclose(approx, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-15)
    assert rt.nn.gelu(x).dtype == rt.as_dtype(dtype)


def test_softplus_is_exact_where_the_naive_formula_fails():
    x = np.array([-100.0, -20.0, 20.0, 100.0], np.float32)
    got = rt.math.softplus(x).numpy()
    assert got[0] == np.float32(np.exp(-100.0)) and got[1] == np.float32(np.exp(-20.0))   # log(1 + tiny)
    assert got[2] == np.float32(20.0) and got[3] == np.float32(100.0)                      # no overflow
    assert rt.nn.gelu(np.float32(-10.0)).numpy() < 0                                     # not rounded to -0


@pytest.mark.parametrize("name", ["gelu", "gelu_approximate", "softplus", "erf", "erfc", "elu", "selu", "silu",
                                  "leaky_relu", "relu6"])
def test_ops_match_tensorflow(name):
    tf = _tf()
    pairs = {"gelu": (rt.nn.gelu, tf.nn.gelu),
             "gelu_approximate": (lambda v: rt.nn.gelu(v, approximate=True),
                                  lambda v: tf.nn.gelu(v, approximate=True)),
             "softplus": (rt.nn.softplus, tf.nn.softplus), "erf": (rt.math.erf, tf.math.erf),
             "erfc": (rt.math.erfc, tf.math.erfc), "elu": (rt.nn.elu, tf.nn.elu), "selu": (rt.nn.selu, tf.nn.selu),
             "silu": (rt.nn.silu, tf.nn.silu), "leaky_relu": (rt.nn.leaky_relu, tf.nn.leaky_relu),
             "relu6": (rt.nn.relu6, tf.nn.relu6)}
    ours, theirs = pairs[name]
    x = _x(1, scale=3.0)
    # TF's elu computes exp(x) - 1 (we keep expm1's accuracy near 0) and its float tanh saturates from |x| ~ 8
    # (approximate gelu's 1 + tanh cancels there): absolute slack
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [rt.nn.gelu, lambda x: rt.nn.gelu(x, approximate=True), rt.nn.softplus, rt.math.erf,
                                rt.math.erfc, rt.nn.elu, rt.nn.selu, rt.nn.silu, rt.nn.leaky_relu])
def test_gradients_match_finite_differences(fn):
    x = np.array([-3.1, -1.2, -0.3, 0.4, 1.1, 2.7], np.float64)
    xv = rt.constant(x)
    with rt.GradientTape() as tape:
        tape.watch(xv)
        y = rt.reduce_sum(fn(xv))
    grad = tape.gradient(y, xv).numpy()
    eps = 1e-6
    numeric = (fn(rt.constant(x + eps)).numpy() - fn(rt.constant(x - eps)).numpy()) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    traced = rt.function(lambda v: _grad_of(fn, v))(rt.constant(x))
    np.testing.assert_allclose(traced.numpy(), grad, rtol=1e-12)


def _grad_of(fn, v):
    with rt.GradientTape() as tape:
        tape.watch(v)
        y = rt.reduce_sum(fn(v))
    return tape.gradient(y, v)


def test_elu_gradient_is_finite_for_large_inputs():
    x = rt.constant([100.0, -100.0, 0.5])
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = rt.reduce_sum(rt.nn.elu(x))
    assert np.all(np.isfinite(tape.gradient(y, x).numpy()))


def test_eager_and_traced_agree():
    x = _x(2)
    fn = lambda v: rt.nn.gelu(v) + rt.nn.softplus(v) * rt.math.erf(v) + rt.nn.silu(v)  # noqa: E731
    np.testing.assert_allclose(rt.function(fn)(x).numpy(), fn(rt.constant(x)).numpy(), rtol=1e-6, atol=1e-7)


def test_integer_inputs_are_rejected_by_name():
    with pytest.raises(TypeError, match="Softplus"):
        rt.math.softplus(rt.constant([1, 2]))
    with pytest.raises(TypeError, match="Gelu"):
        rt.nn.gelu(rt.constant([1, 2]))


# ---------------------------------------------------------------------------
# Activations by name.

NAMES = ["relu", "gelu", "softmax", "sigmoid", "tanh", "softplus", "swish", "silu", "elu", "leaky_relu", "linear",
         "selu", "softsign", "relu6", "hard_sigmoid", "exponential", "log_softmax"]


def test_every_name_resolves_and_none_is_linear():
    x = rt.constant([[-2.0, 0.5, 3.0]])
    for name in NAMES:
        assert rt.keras.activations.get(name)(x).shape == (1, 3)
    assert rt.keras.activations.get(None)(x) is not None
    np.testing.assert_array_equal(rt.keras.activations.get(None)(x).numpy(), x.numpy())
    assert rt.keras.activations.get(abs) is abs
    with pytest.raises(ValueError, match="unknown activation 'gelux'"):
        rt.keras.activations.get("gelux")
    np.testing.assert_allclose(rt.keras.activations.get("swish")(x).numpy(),
                               x.numpy() / (1 + np.exp(-x.numpy())), rtol=1e-6)
    np.testing.assert_allclose(rt.keras.activations.get("leaky_relu")(x).numpy(), [[-0.4, 0.5, 3.0]], rtol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_activations_match_keras(name):
    _tf()
    import keras
    x = _x(3, n=50)[:48].reshape(6, 8)
    ours = rt.keras.activations.get(name)(x).numpy()
    theirs = np.asarray(keras.activations.get(name)(x))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=2e-7)


def test_dense_takes_activation_names():
    layer = rt.keras.layers.Dense(3, activation="gelu", kernel_initializer="ones")
    out = layer(np.array([[0.5, -1.0]], np.float32))
    np.testing.assert_allclose(out.numpy(), _gelu_ref(np.full((1, 3), -0.5, np.float32)), rtol=1e-6)
