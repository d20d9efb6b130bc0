"""NaN, inf and signed zeros: eager (numpy), the reference executor and the generic executor's
compiled kernels give the same values (relu(nan) = sign(nan) = nan, (-inf) // 1.0 = nan, as numpy)."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import executor

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5.0, -5.0, 0.5, -7.25, 1e30, 3e-30, 1.0]
X, Y = np.meshgrid(np.array(SPECIAL), np.array(SPECIAL))

UNARY = {"relu": rt.nn.relu, "sign": rt.sign, "abs": rt.abs, "negative": rt.negative, "square": rt.square}
BINARY = {"floordiv": rt.floordiv, "floormod": rt.floormod, "maximum": rt.maximum, "minimum": rt.minimum,
          "pow": rt.pow, "add": rt.add}


def _three_ways(fn, *arrays):
    eager = fn(*[rt.constant(a) for a in arrays]).numpy()
    concrete = rt.function(fn, autograph=False).get_concrete_function(*[rt.TensorSpec(a.shape, rt.as_dtype(a.dtype))
                                                                       for a in arrays])
    reference = executor.run_graph(concrete.graph, list(arrays))[0]
    generic = executor.run_graph_generic(concrete.graph, list(arrays))[0]
    return eager, reference, generic


def _same(a, b, exact=True):
    """Equal values (NaN where NaN, the same infinities and zero signs); ``exact=False``: finite values to
    a few ulps (libm's pow and numpy's differ in the last bit)."""
    infinities = [np.where(np.isinf(v), np.sign(v), 0) for v in (a, b)]
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(*infinities)
    finite = np.isfinite(a)
    if exact:
        np.testing.assert_array_equal(a[finite], b[finite])
        assert np.array_equal(np.signbit(a[finite]), np.signbit(b[finite]))
    else:
        np.testing.assert_allclose(a[finite], b[finite], rtol=4 * np.finfo(a.dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values(name, dtype):
    x = np.array(SPECIAL, dtype)
    eager, reference, generic = _three_ways(UNARY[name], x)
    with np.errstate(all="ignore"):
        _same(reference, eager)
        _same(generic, eager)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special_values(name, dtype):
    x, y = X.astype(dtype).ravel(), Y.astype(dtype).ravel()
    with np.errstate(all="ignore"):
        eager, reference, generic = _three_ways(BINARY[name], x, y)
        _same(reference, eager)
        _same(generic, eager, exact=name != "pow")


def test_the_reported_cases():
    nan = rt.constant([np.nan])
    for fn, want in [(rt.nn.relu, np.nan), (rt.sign, np.nan)]:
        assert np.isnan(fn(nan).numpy()[0]) and np.isnan(rt.function(fn)(nan).numpy()[0])
    minus_inf = rt.constant([-np.inf])
    assert np.isnan((minus_inf // 1.0).numpy()[0])
    assert np.isnan(rt.function(lambda x: x // 1.0)(minus_inf).numpy()[0])
