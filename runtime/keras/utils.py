"""``rt.keras.utils.set_random_seed``: the seed of the generator weight initializers draw from."""
from __future__ import annotations

import numpy as np

_generator = np.random.default_rng()


def set_random_seed(seed: int) -> None:
    """Make weight initialization repeatable: later initializers draw from a generator seeded with ``seed``."""
    global _generator
    _generator = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The generator unseeded initializers draw from."""
    return _generator
