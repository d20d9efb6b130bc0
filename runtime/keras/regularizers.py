"""Weight regularizers: ``L1``, ``L2``, ``L1L2`` (``kernel_regularizer="l2"`` ...); a regularizer maps a weight
to a scalar penalty that ``Model.compute_loss`` adds to the loss (``layer.losses``)."""
from __future__ import annotations

from runtime.errors import missing_name
from runtime.ops import math_ops


class Regularizer:
    def __call__(self, x):
        raise NotImplementedError


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x^2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        total = None
        if self.l1:
            total = math_ops.multiply(math_ops.reduce_sum(math_ops.abs(x)), self.l1)
        if self.l2:
            term = math_ops.multiply(math_ops.reduce_sum(math_ops.square(x)), self.l2)
            total = term if total is None else math_ops.add(total, term)
        if total is None:
            total = math_ops.multiply(math_ops.reduce_sum(x), 0.0)
        return total


class L1(L1L2):
    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)


class L2(L1L2):
    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}


def get(identifier):
    """A regularizer from a name (``"l1"``, ``"l2"``, ``"l1_l2"``), an instance or callable, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"unknown regularizer {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"a regularizer must be a name or a callable, got {identifier!r}")


__all__ = ["L1", "L1L2", "L2", "Regularizer", "get", "l1", "l1_l2", "l2"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.regularizers")
