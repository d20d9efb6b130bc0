"""``rt.random.uniform`` and ``rt.random.normal`` (stateful: each run draws new numbers)."""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops.array_ops import _dims_from, _shape_arg
from runtime.ops.registry import OpDef, apply, convert, not_differentiable, register


class _Generator:
    """A numpy generator as an op attribute (hashable by identity: two random ops never merge)."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def __repr__(self):
        return f"seed={self.seed}"


def _uniform_infer(specs, attrs):
    dtype = attrs["dtype"]
    for label, spec in zip(("minval", "maxval"), specs[1:]):
        if spec.dtype is not dtype or spec.shape.rank not in (0, None):
            raise TypeError(f"RandomUniform: {label} must be a scalar {dtype}, got {spec.dtype} of shape {spec.shape}")
    return [(dtype, _dims_from(specs[0], "RandomUniform"))]


def _normal_infer(specs, attrs):
    return [(attrs["dtype"], _dims_from(specs[0], "RandomStandardNormal"))]


def _uniform_kernel(inputs, attrs):
    shape = tuple(int(d) for d in inputs[0])
    rng, dtype = attrs["generator"].rng, attrs["dtype"]
    lo, hi = inputs[1].item(), inputs[2].item()
    if dtype.is_integer:
        if hi <= lo:
            raise errors.InvalidArgumentError(f"random.uniform: need minval < maxval, got {lo} and {hi}")
        return (rng.integers(lo, hi, size=shape, dtype=dtype.np),)
    return ((rng.random(size=shape) * (hi - lo) + lo).astype(dtype.np),)


def _normal_kernel(inputs, attrs):
    shape = tuple(int(d) for d in inputs[0])
    rng = attrs["generator"].rng
    return ((rng.standard_normal(size=shape) * attrs["stddev"] + attrs["mean"]).astype(attrs["dtype"].np),)


register(OpDef("RandomUniform", "random_uniform", _uniform_infer, _uniform_kernel, 3, stateful=True,
               dynamic_infer=True, foldable=False))
register(OpDef("RandomStandardNormal", "random_normal", _normal_infer, _normal_kernel, 1, stateful=True,
               dynamic_infer=True, foldable=False))
not_differentiable("RandomUniform", "RandomStandardNormal")


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform numbers in ``[minval, maxval)`` (Python numbers or scalar tensors of ``dtype``); integer
    dtypes need ``maxval``."""
    dtype = dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("random.uniform: integer dtypes need maxval")
        maxval = 1.0
    if not (dtype.is_integer or dtype.is_floating):
        raise TypeError(f"random.uniform does not support dtype {dtype}")
    bounds = [convert(minval, dtype, "minval"), convert(maxval, dtype, "maxval")]
    return apply("RandomUniform", [_shape_arg(shape)] + bounds, {"dtype": dtype, "generator": _Generator(seed)},
                 name=name)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"random.normal needs a floating dtype, got {dtype}")
    return apply("RandomStandardNormal", [_shape_arg(shape)], {"dtype": dtype, "mean": float(mean),
                                                                "stddev": float(stddev),
                                                                "generator": _Generator(seed)}, name=name)
