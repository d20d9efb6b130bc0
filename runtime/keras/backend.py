"""``rt.keras.backend``: ``clear_session`` (layer names count from zero again), ``floatx``, ``epsilon``."""
from __future__ import annotations

from runtime.errors import missing_name
from runtime.keras.layers import base


def clear_session() -> None:
    """Forget the names given so far: the next ``Dense()`` is ``dense`` again (as after Keras' clear_session)."""
    base._uids.clear()


def floatx() -> str:
    return "float32"


def epsilon() -> float:
    return 1e-7


def backend() -> str:
    return "rt"


__all__ = ["backend", "clear_session", "epsilon", "floatx"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.backend")
