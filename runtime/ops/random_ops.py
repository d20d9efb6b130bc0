"""``rt.random.uniform`` and ``rt.random.normal`` (stateful: each run draws new numbers)."""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops.array_ops import _dims_from, _shape_arg
from runtime.ops.registry import OpDef, apply, not_differentiable, register


class _Generator:
    """A numpy generator as an op attribute (hashable by identity: two random ops never merge)."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def __repr__(self):
        return f"seed={self.seed}"


def _random_infer(specs, attrs):
    return [(attrs["dtype"], _dims_from(specs[0], "RandomUniform" if "minval" in attrs else "RandomStandardNormal"))]


def _uniform_kernel(inputs, attrs):
    shape = tuple(int(d) for d in inputs[0])
    rng, dtype, lo, hi = attrs["generator"].rng, attrs["dtype"], attrs["minval"], attrs["maxval"]
    if dtype.is_integer:
        if hi <= lo:
            raise errors.InvalidArgumentError(f"random.uniform: need minval < maxval, got {lo} and {hi}")
        return (rng.integers(lo, hi, size=shape, dtype=dtype.np),)
    return ((rng.random(size=shape) * (hi - lo) + lo).astype(dtype.np),)


def _normal_kernel(inputs, attrs):
    shape = tuple(int(d) for d in inputs[0])
    rng = attrs["generator"].rng
    return ((rng.standard_normal(size=shape) * attrs["stddev"] + attrs["mean"]).astype(attrs["dtype"].np),)


register(OpDef("RandomUniform", "random_uniform", _random_infer, _uniform_kernel, 1, stateful=True,
               dynamic_infer=True, foldable=False))
register(OpDef("RandomStandardNormal", "random_normal", _random_infer, _normal_kernel, 1, stateful=True,
               dynamic_infer=True, foldable=False))
not_differentiable("RandomUniform", "RandomStandardNormal")


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform numbers in ``[minval, maxval)``; integer dtypes need ``maxval``."""
    dtype = dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("random.uniform: integer dtypes need maxval")
        maxval = 1.0
    if not (dtype.is_integer or dtype.is_floating):
        raise TypeError(f"random.uniform does not support dtype {dtype}")
    lo = int(minval) if dtype.is_integer else float(minval)
    hi = int(maxval) if dtype.is_integer else float(maxval)
    return apply("RandomUniform", [_shape_arg(shape)], {"dtype": dtype, "minval": lo, "maxval": hi,
                                                         "generator": _Generator(seed)}, name=name)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"random.normal needs a floating dtype, got {dtype}")
    return apply("RandomStandardNormal", [_shape_arg(shape)], {"dtype": dtype, "mean": float(mean),
                                                                "stddev": float(stddev),
                                                                "generator": _Generator(seed)}, name=name)
