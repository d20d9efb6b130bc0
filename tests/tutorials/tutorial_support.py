"""Helpers of the tutorial tests: load a program of ``programs/`` on rt (through ``runtime.tf_compat``) or on
TensorFlow (when installed), compare what their ``main()`` returned, give both libraries the same weights, and
probe for behaviour other branches bring. (A module of its own name: ``from conftest import`` would find
whichever test directory's conftest was imported last.)
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from runtime import tf_compat

PROGRAMS = Path(__file__).resolve().parent / "programs"
PROJECT = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(PROGRAMS))          # the programs import their data from programs/synthetic.py

_loaded = itertools.count()

TRAINED = {"rtol": 2e-4, "atol": 1e-5}      # trajectories over many float32 steps (summation orders differ)
EXACT = {"rtol": 1e-5, "atol": 1e-6}        # one computation


# -- probes of behaviour other branches bring (the tests needing it are expected failures until it is there) ------

def converts_float64_arrays() -> bool:
    """``tf.convert_to_tensor(float64 array, dtype=tf.float32)`` casts, as TensorFlow does (branch ``bugs``)."""
    try:
        rt.convert_to_tensor(np.array([0.1]), dtype=rt.float32)
    except TypeError:
        return False
    return True


def variable_target_has_a_gradient() -> bool:
    """``tape.gradient(v, v)`` is one, as in TensorFlow (branch ``bugs``)."""
    v = rt.Variable(2.0)
    with rt.GradientTape() as tape:
        result = v
    return tape.gradient(result, v) is not None


def load(name: str, backend: str = "rt"):
    """Import ``programs/<name>.py`` as a fresh module: on rt (``backend="rt"``, its ``tensorflow`` and ``keras``
    are rt) or on TensorFlow (``"tf"``; skips the test when TensorFlow is not installed)."""
    path = PROGRAMS / f"{name}.py"
    module_name = f"tutorial_{name}_{backend}_{next(_loaded)}"
    if backend == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        pytest.importorskip("tensorflow")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    if backend == "rt":
        with tf_compat.aliased():
            spec.loader.exec_module(module)
    else:
        spec.loader.exec_module(module)
    return module


def as_numpy(value):
    """Tensors, variables and numpy scalars as numpy arrays, through lists, tuples and dicts."""
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_numpy(v) for v in value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def assert_same(actual, expected, rtol: float = 1e-6, atol: float = 0.0, path: str = "") -> None:
    """``actual`` (rt's) and ``expected`` (TensorFlow's) hold the same structure, Nones and numbers (within
    ``rtol``/``atol``; dtypes of arrays must match)."""
    actual, expected = as_numpy(actual), as_numpy(expected)
    where = path or "result"
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), \
            f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], rtol, atol, f"{path}[{key!r}]")
        return
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, rtol, atol, f"{path}[{i}]")
        return
    if expected is None or isinstance(expected, (bool, str)):
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
        return
    assert isinstance(actual, np.ndarray), f"{where}: {actual!r} is not an array (TensorFlow: {expected!r})"
    if expected.dtype.kind in "fc" or actual.dtype.kind in "fc":
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def initialize(variables) -> None:
    """Give ``variables`` (rt's or TensorFlow's, in a model's order) the same deterministic values in either
    library: Glorot-uniform-sized values for matrices and kernels, small normals for vectors, positive values for
    a batch normalization's moving variance."""
    for i, variable in enumerate(variables):
        rng = np.random.default_rng(100 + i)
        shape = tuple(variable.shape)
        name = str(getattr(variable, "name", "") or "")
        if "variance" in name:
            value = rng.uniform(0.5, 1.5, shape)
        elif len(shape) >= 2:
            fan = shape[-2] * int(np.prod(shape[:-2])) + shape[-1]
            value = rng.uniform(-1, 1, shape) * np.sqrt(6 / fan)
        else:
            value = rng.standard_normal(shape) * 0.5
        dtype = getattr(variable.dtype, "name", variable.dtype)      # Keras 3 variables' dtype is a string
        variable.assign(value.astype(dtype))
