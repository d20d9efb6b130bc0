"""Weight initializers: ``GlorotUniform`` (Keras' default for kernels), ``Zeros`` (biases), ``Ones``, ``RandomNormal``.

An initializer is called with a shape and a dtype and returns a numpy array; with ``seed=None`` it
draws from the generator ``rt.keras.utils.set_random_seed`` seeds.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes
from runtime.keras import utils


def _fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) as Keras computes them: a conv kernel's receptive field multiplies both."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: ``initializer(shape, dtype) -> np.ndarray``."""

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)

    def _generator(self) -> np.random.Generator:
        return self._rng if self._rng is not None else utils.generator()

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        raise NotImplementedError


class GlorotUniform(Initializer):
    """Uniform in ``[-limit, limit]`` with ``limit = sqrt(6 / (fan_in + fan_out))``."""

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        fan_in, fan_out = _fans(shape)
        limit = np.sqrt(6.0 / max(fan_in + fan_out, 1))
        return self._generator().uniform(-limit, limit, tuple(shape)).astype(dtypes.as_dtype(dtype).np)


class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        values = self._generator().normal(self.mean, self.stddev, tuple(shape))
        return values.astype(dtypes.as_dtype(dtype).np)


class Zeros(Initializer):
    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        return np.zeros(tuple(shape), dtypes.as_dtype(dtype).np)


class Ones(Initializer):
    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        return np.ones(tuple(shape), dtypes.as_dtype(dtype).np)


_BY_NAME = {"glorot_uniform": GlorotUniform, "zeros": Zeros, "ones": Ones, "random_normal": RandomNormal}


def get(identifier) -> Initializer:
    """An initializer from a name (``"glorot_uniform"``, ``"zeros"`` ...), an instance or a callable."""
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"unknown initializer {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"an initializer must be a name or a callable, got {identifier!r}")
