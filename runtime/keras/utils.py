"""``rt.keras.utils``: ``set_random_seed`` and ``to_categorical``.

``set_random_seed(s)`` does what Keras 3's does: it seeds the generator weight initializers and dropout draw
from, numpy's global generator, Python's ``random``, and rt's global seed (``rt.random.set_seed``, when this rt
has it).
"""
from __future__ import annotations

import random
import sys

import numpy as np

from runtime.errors import missing_name

_generator = np.random.default_rng()


def set_random_seed(seed: int) -> None:
    """Make runs repeatable: seed Keras' initializers and dropout, ``numpy.random``, ``random`` and rt's global
    seed with ``seed``."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r}")
    seed = int(seed)
    _generator = np.random.default_rng(seed)
    random.seed(seed)
    np.random.seed(seed)
    # rt.random.set_seed by its public name: this module sits below `runtime` (the public API imports it), so the
    # API is looked up at call time, when it is loaded.
    rt = sys.modules.get("runtime")
    set_seed = getattr(getattr(rt, "random", None), "set_seed", None)
    if set_seed is not None:
        set_seed(seed)


def generator() -> np.random.Generator:
    """The generator unseeded initializers draw from."""
    return _generator


def to_categorical(x, num_classes: int | None = None) -> np.ndarray:
    """One-hot float32 rows for integer class labels ``x`` (``num_classes`` defaults to ``max(x) + 1``)."""
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x.reshape(x.shape[:-1])
    x = x.astype(np.int64)
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    out = np.zeros(x.shape + (num_classes,), np.float32)
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out


__all__ = ["set_random_seed", "to_categorical"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.utils")
