"""Shared helpers of the runtime tests: numpy comparison, eager-vs-graph runs, hypothesis strategies."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from runtime import nest
from runtime.executor import run_graph
from runtime.tensor import EagerTensor

# Applied to each hypothesis test of this directory (not loaded as a profile: that would change
# the settings of every other test directory too). Derandomized: CI runs are reproducible.
RUNTIME_SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large, HealthCheck.filter_too_much])

INTS = (rt.int8, rt.int16, rt.int32, rt.int64, rt.uint8)
SIGNED_INTS = (rt.int8, rt.int16, rt.int32, rt.int64)
FLOATS = (rt.float16, rt.float32, rt.float64)
NUMERIC = INTS + FLOATS
SIGNED = SIGNED_INTS + FLOATS

_TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}


@pytest.fixture(autouse=True)
def _reset_eager_mode():
    """No test may leave ``run_functions_eagerly`` switched on."""
    yield
    rt.config.run_functions_eagerly(False)


# ---------------------------------------------------------------------------
# Comparison.

def np_dtype(dtype) -> np.dtype:
    return rt.as_dtype(dtype).np


def assert_matches_numpy(tensor, expected, dtype=None, tol=None):
    """``tensor`` (an eager rt.Tensor) has ``expected``'s values, and ``dtype`` (default: expected's)."""
    assert isinstance(tensor, rt.Tensor), f"expected an rt.Tensor, got {type(tensor).__name__}: {tensor!r}"
    expected = np.asarray(expected)
    want = rt.as_dtype(dtype) if dtype is not None else rt.as_dtype(expected.dtype)
    assert tensor.dtype is want, f"dtype {tensor.dtype}, expected {want}"
    got = np.asarray(tensor.numpy()) if want is not rt.string else np.asarray(tensor.numpy(), dtype=object)
    assert tuple(tensor.shape) == got.shape, f"tensor.shape {tensor.shape} but value shape {got.shape}"
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    if want is rt.string:
        assert got.tolist() == expected.tolist()
    elif want.is_floating:
        rtol, atol = tol or _TOL[want.name]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(want.np))


def assert_identical(a, b):
    """Two results (structures of tensors / None) are exactly equal: dtype, shape, bits (NaN == NaN)."""
    flat_a, flat_b = nest.flatten(a), nest.flatten(b)
    assert nest.structure_key(a) == nest.structure_key(b), f"structures differ: {a!r} vs {b!r}"
    for x, y in zip(flat_a, flat_b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert isinstance(x, rt.Tensor) and isinstance(y, rt.Tensor), f"{x!r} / {y!r}"
        assert x.dtype is y.dtype, f"dtypes differ: {x.dtype} vs {y.dtype}"
        assert x.shape == y.shape, f"shapes differ: {x.shape} vs {y.shape}"
        vx, vy = np.asarray(x.numpy()), np.asarray(y.numpy())
        if x.dtype.is_floating:
            np.testing.assert_array_equal(vx, vy)       # assert_array_equal treats NaN == NaN
        else:
            assert vx.tolist() == vy.tolist(), f"{vx!r} != {vy!r}"


def assert_equivalent(a, b, ulps=8):
    """Like ``assert_identical``, but floats may differ by a few ulps (of the larger magnitude).

    Eager code runs numpy; the generic executor may run compiled kernels whose transcendental
    functions (exp, tanh, sin ...) are within a few ulps of numpy's, as SPEC allows.
    """
    flat_a, flat_b = nest.flatten(a), nest.flatten(b)
    assert nest.structure_key(a) == nest.structure_key(b), f"structures differ: {a!r} vs {b!r}"
    for x, y in zip(flat_a, flat_b):
        if x is None or y is None or not x.dtype.is_floating:
            assert_identical(x, y)
            continue
        assert isinstance(y, rt.Tensor) and x.dtype is y.dtype and x.shape == y.shape, f"{x!r} vs {y!r}"
        vx, vy = np.asarray(x.numpy(), np.float64), np.asarray(y.numpy(), np.float64)
        np.testing.assert_array_equal(np.isnan(vx), np.isnan(vy))
        np.testing.assert_array_equal(np.isinf(vx), np.isinf(vy))
        finite = np.isfinite(vx) & np.isfinite(vy)
        eps = float(np.finfo(x.dtype.np).eps)
        scale = max(1.0, float(np.max(np.abs(vx[finite]), initial=0.0)))
        np.testing.assert_allclose(vy[finite], vx[finite], rtol=ulps * eps, atol=ulps * eps * scale)
        np.testing.assert_array_equal(vx[~finite & ~np.isnan(vx)], vy[~finite & ~np.isnan(vy)])


def op_types(graph, recursive=True) -> set:
    """All op types in ``graph`` (and its subgraphs)."""
    out = set()
    for op in graph.get_operations():
        out.add(op.type)
        if recursive:
            for sub in op.subgraphs():
                out |= op_types(sub)
    return out


# ---------------------------------------------------------------------------
# Running a program eagerly and as a graph.

def _check_outputs_against_inference(concrete, result):
    """The traced static dtypes/shapes are compatible with what the graph actually produced."""
    tensors = [t for t in nest.flatten(result) if t is not None]
    assert len(tensors) == len(concrete.outputs)
    for value, symbolic in zip(tensors, concrete.outputs):
        assert value.dtype is symbolic.dtype, f"{symbolic}: ran to {value.dtype}"
        assert symbolic.shape.is_compatible_with(value.shape), f"{symbolic}: ran to shape {value.shape}"


def run_both(fn, args=(), op_type=None, relax=True, check_eager=True):
    """Run ``fn(*args)`` eagerly and traced (exact shapes, and with ``None`` dims when ``relax``).

    Checks that the graphs verify, contain ``op_type``, produce what their inferred
    dtypes/shapes promise, and give the eager result (exactly on the reference executor,
    within a few ulps on the default one). Returns the eager result.
    """
    args = tuple(args)
    eager = fn(*args)
    traced = rt.function(fn, autograph=False)
    concrete = traced.get_concrete_function(*args)
    concrete.graph.verify()
    if op_type is not None:
        assert op_type in op_types(concrete.graph), f"{op_type} not in graph:\n{concrete.graph}"
    graph_result = traced(*args)
    _check_outputs_against_inference(concrete, graph_result)
    if check_eager:
        assert_equivalent(eager, graph_result)
        # the reference executor runs the same numpy kernels as eager code: bit-identical
        feeds = [t._value for t in nest.flatten(list(args)) if isinstance(t, EagerTensor)]
        assert_identical(eager, concrete._pack(run_graph(concrete.graph, feeds)))
    if relax and args and all(isinstance(a, EagerTensor) for a in args):
        # every dim unknown, then only the leading (batch) dim unknown, as in TensorSpec([None, 3])
        variants = [[rt.TensorSpec([None] * a.ndim, a.dtype) for a in args]]
        if any(a.ndim >= 2 for a in args):
            variants.append([rt.TensorSpec([None] + a.shape.as_list()[1:] if a.ndim else [], a.dtype)
                             for a in args])
        for specs in variants:
            relaxed = rt.function(fn, input_signature=specs, autograph=False)
            concrete = relaxed.get_concrete_function()
            concrete.graph.verify()
            relaxed_result = relaxed(*args)
            _check_outputs_against_inference(concrete, relaxed_result)
            if check_eager:
                assert_equivalent(eager, relaxed_result)
    return eager


def raises_both(fn, args, exc, match=None, relax=True):
    """``fn(*args)`` raises ``exc`` eagerly and traced (at trace or run time), also with ``None`` dims."""
    with pytest.raises(exc, match=match):
        fn(*args)
    with pytest.raises(exc, match=match):
        rt.function(fn, autograph=False)(*args)
    if relax and args and all(isinstance(a, EagerTensor) for a in args):
        specs = [rt.TensorSpec([None] * a.ndim, a.dtype) for a in args]
        with pytest.raises(exc, match=match):
            rt.function(fn, input_signature=specs, autograph=False)(*args)


# ---------------------------------------------------------------------------
# Hypothesis strategies.

def elements_for(dtype, lo=None, hi=None):
    dtype = rt.as_dtype(dtype)
    if dtype is rt.bool:
        return st.booleans()
    if dtype.is_integer:
        info = np.iinfo(dtype.np)
        return st.integers(max(info.min, lo) if lo is not None else info.min,
                           min(info.max, hi) if hi is not None else info.max)
    width = 8 * dtype.size
    return st.floats(lo if lo is not None else -1e3, hi if hi is not None else 1e3, width=width,
                     allow_nan=False, allow_infinity=False, allow_subnormal=False)


def arrays(dtype, shape, lo=None, hi=None):
    return hnp.arrays(rt.as_dtype(dtype).np, shape, elements=elements_for(dtype, lo, hi))


def tensor(value, dtype=None):
    return rt.constant(np.asarray(value, dtype=np_dtype(dtype)) if dtype is not None else value)


# Test modules import these helpers as ``from runtime_test_helpers import ...``: a unique module
# name, so another directory's conftest.py can never shadow this one.
sys.modules.setdefault("runtime_test_helpers", sys.modules[__name__])
