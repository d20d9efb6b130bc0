"""Activation functions by name (``Dense(8, activation="gelu")``), as ``keras.activations`` defines them.

``get(identifier)`` takes a name, a callable or None (linear). Each function builds ordinary ops (gelu, softplus
and erf are ops of their own with native code), so activations work eagerly, traced and in built modules.

Example:
    >>> import runtime as rt
    >>> get("relu")(rt.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""
from __future__ import annotations

from collections import OrderedDict

from runtime.errors import missing_name
from runtime.ops import math_ops, nn_ops
from runtime.ops.registry import convert
from runtime.tensor import EagerTensor

# Keras marks the output of its sigmoid and softmax activations with the logits they came from, and its cross
# entropies then compute from those logits (stable, and with gradients where probabilities would be clipped).
# Traced outputs show it by their op (a "Sigmoid" or "Softmax" op, whatever made it: as Keras on TensorFlow checks
# graph tensors); eager tensors cannot carry an attribute, so the last few are remembered here.
_EAGER_LOGITS: OrderedDict = OrderedDict()
_REMEMBERED = 16


def _remember(output, logits, op_type: str):
    if isinstance(output, EagerTensor):
        _EAGER_LOGITS[id(output)] = (output, logits, op_type)
        while len(_EAGER_LOGITS) > _REMEMBERED:
            _EAGER_LOGITS.popitem(last=False)
    return output


def logits_of(output, op_type: str):
    """The logits ``output`` was computed from by a ``op_type`` ("Sigmoid" or "Softmax") activation, or None."""
    op = getattr(output, "op", None)
    if op is not None and getattr(op, "type", None) == op_type and len(op.inputs) == 1:
        return op.inputs[0]
    remembered = _EAGER_LOGITS.get(id(output))
    if remembered is not None and remembered[0] is output and remembered[2] == op_type:
        return remembered[1]
    return None


def relu(x, negative_slope: float = 0.0, max_value=None, threshold: float = 0.0):
    """``max(x, 0)``; with ``negative_slope`` ``negative_slope * x`` below 0, ``max_value`` caps it (Keras' relu)."""
    x = convert(x)
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return math_ops.relu(x)
    if threshold != 0.0:
        out = math_ops.where(math_ops.greater(x, threshold), x, math_ops.multiply(math_ops.subtract(x, threshold),
                                                                                  negative_slope))
    elif negative_slope != 0.0:
        out = nn_ops.leaky_relu(x, negative_slope)
    else:
        out = math_ops.relu(x)
    if max_value is not None:
        out = math_ops.minimum(out, convert(max_value, out.dtype))
    return out


def gelu(x, approximate: bool = False):
    return nn_ops.gelu(x, approximate=approximate)


def softmax(x, axis: int = -1):
    x = convert(x)
    return _remember(math_ops.softmax(x, axis=axis), x, "Softmax")


def log_softmax(x, axis: int = -1):
    return nn_ops.log_softmax(x, axis=axis)


def sigmoid(x):
    x = convert(x)
    return _remember(math_ops.sigmoid(x), x, "Sigmoid")


def tanh(x):
    return math_ops.tanh(x)


def softplus(x):
    return math_ops.softplus(x)


def softsign(x):
    """``x / (1 + |x|)``."""
    x = convert(x)
    return math_ops.divide(x, math_ops.add(math_ops.abs(x), 1.0))


def silu(x):
    """``x * sigmoid(x)`` (also ``swish``)."""
    return nn_ops.silu(x)


swish = silu


def elu(x, alpha: float = 1.0):
    return nn_ops.elu(x, alpha)


def selu(x):
    return nn_ops.selu(x)


def leaky_relu(x, negative_slope: float = 0.2):
    return nn_ops.leaky_relu(x, negative_slope)


def relu6(x):
    return nn_ops.relu6(x)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    x = convert(x)
    return math_ops.divide(nn_ops.relu6(math_ops.add(x, 3.0)), 6.0)


def exponential(x):
    return math_ops.exp(x)


def linear(x):
    return convert(x)


_BY_NAME = {f.__name__: f for f in (relu, gelu, softmax, log_softmax, sigmoid, tanh, softplus, softsign, silu, elu,
                                    selu, leaky_relu, relu6, hard_sigmoid, exponential, linear)}
_BY_NAME["swish"] = silu


def get(identifier):
    """The activation function ``identifier`` names (a name, a callable, or None for linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]
        except KeyError:
            raise ValueError(f"unknown activation {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"an activation must be a name, a callable or None, got {identifier!r}")


def serialize(activation) -> str:
    """The name of a built-in activation (the function's name otherwise)."""
    return getattr(activation, "__name__", type(activation).__name__)


__all__ = ["elu", "exponential", "gelu", "get", "hard_sigmoid", "leaky_relu", "linear", "log_softmax", "relu",
           "relu6", "selu", "serialize", "sigmoid", "silu", "softmax", "softplus", "softsign", "swish", "tanh"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.activations")
