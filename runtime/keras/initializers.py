"""Weight initializers as Keras names them: ``GlorotUniform`` (the default for kernels), ``GlorotNormal``,
``HeUniform``, ``HeNormal``, ``LecunUniform``, ``LecunNormal``, ``RandomUniform`` (``"uniform"``: embeddings),
``RandomNormal``, ``TruncatedNormal``, ``Zeros`` (biases), ``Ones``, ``Constant``.

An initializer is called with a shape and a dtype and returns a numpy array; with ``seed=None`` it draws from the
generator ``rt.keras.utils.set_random_seed`` seeds. The distributions are Keras' (variance scaling with a normal
truncated at two standard deviations); the numbers come from numpy's generator, not TensorFlow's.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes
from runtime.errors import missing_name
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


def _truncated_normal(rng: np.random.Generator, shape, mean: float, stddev: float) -> np.ndarray:
    """Normal values, those beyond two standard deviations drawn again (Keras' truncated normal)."""
    values = rng.standard_normal(tuple(shape))
    outside = np.abs(values) > 2
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2
    return values * stddev + mean


class VarianceScaling(Initializer):
    """Values of variance ``scale / n``, ``n`` the fan in, fan out or their mean (``mode``), from a truncated normal,
    a normal or a uniform distribution."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: int | None = None):
        super().__init__(seed)
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: distribution must be truncated_normal, untruncated_normal or "
                             f"uniform, got {distribution!r}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, n)
        rng = self._generator()
        if self.distribution == "truncated_normal":
            values = _truncated_normal(rng, shape, 0.0, np.sqrt(variance) / 0.87962566103423978)
        elif self.distribution == "untruncated_normal":
            values = rng.normal(0.0, np.sqrt(variance), tuple(shape))
        else:
            limit = np.sqrt(3.0 * variance)
            values = rng.uniform(-limit, limit, tuple(shape))
        return values.astype(dtypes.as_dtype(dtype).np)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)


class HeNormal(VarianceScaling):
    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)


class HeUniform(VarianceScaling):
    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "uniform", seed)


class LecunNormal(VarianceScaling):
    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)


class LecunUniform(VarianceScaling):
    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_in", "uniform", seed)


class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        values = self._generator().normal(self.mean, self.stddev, tuple(shape))
        return values.astype(dtypes.as_dtype(dtype).np)


class TruncatedNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        values = _truncated_normal(self._generator(), shape, self.mean, self.stddev)
        return values.astype(dtypes.as_dtype(dtype).np)


class RandomUniform(Initializer):
    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        dtype = dtypes.as_dtype(dtype)
        rng = self._generator()
        if dtype.is_integer:
            return rng.integers(self.minval, self.maxval, tuple(shape)).astype(dtype.np)
        return rng.uniform(self.minval, self.maxval, tuple(shape)).astype(dtype.np)


class Constant(Initializer):
    def __init__(self, value=0.0):
        super().__init__(None)
        self.value = value

    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        return np.full(tuple(shape), self.value, dtypes.as_dtype(dtype).np)


class Zeros(Initializer):
    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        return np.zeros(tuple(shape), dtypes.as_dtype(dtype).np)


class Ones(Initializer):
    def __call__(self, shape, dtype=dtypes.float32) -> np.ndarray:
        return np.ones(tuple(shape), dtypes.as_dtype(dtype).np)


_BY_NAME = {"glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": HeNormal,
            "he_uniform": HeUniform, "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "zeros": Zeros,
            "ones": Ones, "random_normal": RandomNormal, "random_uniform": RandomUniform, "uniform": RandomUniform,
            "normal": RandomNormal, "truncated_normal": TruncatedNormal, "constant": Constant}


def get(identifier) -> Initializer:
    """An initializer from a name (``"glorot_uniform"``, ``"zeros"`` ...), an instance or a callable."""
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"unknown initializer {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    if callable(identifier):
        return identifier
    if isinstance(identifier, (int, float)):
        return Constant(identifier)
    raise TypeError(f"an initializer must be a name or a callable, got {identifier!r}")

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.initializers")
