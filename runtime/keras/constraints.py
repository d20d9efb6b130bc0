"""Weight constraints: ``MaxNorm``, ``MinMaxNorm``, ``NonNeg``, ``UnitNorm`` (``kernel_constraint="max_norm"`` ...).

A constraint maps a weight to its projection (norms clipped, negatives zeroed). A layer's ``add_weight(constraint=)``
keeps it on the variable (``variable.constraint``), and an optimizer assigns ``constraint(variable)`` to each
variable it updated, after the step, as Keras 3 does (``BaseOptimizer.apply``). Constraints compute with rt ops, so
they run eagerly, trace into a Function's graph and are built to native code with the rest of a training step.
The formulas are Keras 3's, epsilon included (1e-7, ``rt.keras.backend.epsilon()``): ``MaxNorm`` is
``w * (clip(norms, 0, max_value) / (epsilon + norms))``, the norms taken over ``axis`` (the kernel's inputs, for a
``Dense`` kernel of shape ``(input_dim, units)``: one norm per unit).

Example:
    >>> import runtime as rt
    >>> w = rt.constant([[3.0, 0.5], [4.0, 0.0]])
    >>> print(rt.keras.constraints.MaxNorm(1.0)(w).numpy().round(4))      # column norms 5 and 0.5
    [[0.6 0.5]
     [0.8 0. ]]
    >>> rt.keras.constraints.serialize(rt.keras.constraints.get("non_neg"))["class_name"]
    'NonNeg'
"""
from __future__ import annotations

import inspect

from runtime.errors import missing_name
from runtime.ops import math_ops
from runtime.ops.registry import convert

EPSILON = 1e-7      # Keras' backend epsilon (``rt.keras.backend.epsilon()``, which imports the layers: they import us)


class Constraint:
    """Base class: ``constraint(w)`` returns the projected weight (this base returns ``w`` unchanged)."""

    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        """The arguments that rebuild this constraint: ``type(c).from_config(c.get_config())``."""
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def __repr__(self):
        arguments = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({arguments})"


def _norms(w, axis):
    """``sqrt(sum(w^2))`` over ``axis``, the reduced axes kept (size 1)."""
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescales the weights whose norm over ``axis`` exceeds ``max_value`` to that norm (``axis=0`` for a Dense
    kernel: each unit's incoming weights; ``[0, 1, 2]`` for a Conv2D kernel: each filter)."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = convert(w)
        norms = _norms(w, self.axis)
        desired = math_ops.clip_by_value(norms, 0, self.max_value)
        return math_ops.multiply(w, math_ops.divide(desired, math_ops.add(EPSILON, norms)))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Negative weights become zero: ``maximum(w, 0)``."""

    def __call__(self, w):
        return math_ops.maximum(convert(w), 0)


class UnitNorm(Constraint):
    """Rescales the weights to unit norm over ``axis``: ``w / (epsilon + norms)``."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = convert(w)
        return math_ops.divide(w, math_ops.add(EPSILON, _norms(w, self.axis)))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves the norm over ``axis`` toward ``[min_value, max_value]``: the weights are rescaled to the norm
    ``rate * clip(norm, min_value, max_value) + (1 - rate) * norm`` (``rate=1``: strictly inside)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = convert(w)
        norms = _norms(w, self.axis)
        desired = math_ops.add(math_ops.multiply(self.rate, math_ops.clip_by_value(norms, self.min_value,
                                                                                  self.max_value)),
                               math_ops.multiply(1 - self.rate, norms))
        return math_ops.multiply(w, math_ops.divide(desired, math_ops.add(EPSILON, norms)))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm

_CLASSES = (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
# Keras' names: each class's own and its snake case (``"max_norm"``); case matters, as in Keras
_BY_NAME = {**{cls.__name__: cls for cls in _CLASSES},
            "constraint": Constraint, "max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
            "unit_norm": UnitNorm}


def serialize(constraint) -> dict | None:
    """Keras 3's config of ``constraint``: ``{"module": "keras.constraints", "class_name": "MaxNorm", "config":
    {...}, "registered_name": None}`` for the built-in ones; None for None."""
    if constraint is None:
        return None
    if isinstance(constraint, Constraint):
        name = type(constraint).__name__
        builtin = _BY_NAME.get(name) is type(constraint)
        return {"module": "keras.constraints" if builtin else None, "class_name": name,
                "config": constraint.get_config(), "registered_name": None if builtin else name}
    if inspect.isfunction(constraint):
        return {"module": constraint.__module__, "class_name": "function", "config": constraint.__name__,
                "registered_name": "function"}
    raise TypeError(f"cannot serialize the constraint {constraint!r}: expected a Constraint, a function or None")


def deserialize(config: dict, custom_objects: dict | None = None):
    """The constraint a ``serialize`` config describes; ``custom_objects`` maps the names of your own classes
    (and functions) to them."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret constraint identifier: {config!r} (a constraint config is a dict "
                         "with a 'class_name' and a 'config')")
    custom_objects = custom_objects or {}
    name, arguments = config["class_name"], config.get("config", {})
    if name == "function":
        found = custom_objects.get(arguments)
        if found is None:
            raise ValueError(f"Could not interpret constraint identifier: {config!r} (the function {arguments!r} "
                             "is not in custom_objects)")
        return found
    cls = custom_objects.get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Could not interpret constraint identifier: {config!r} (unknown class_name {name!r}; "
                         f"known: {', '.join(sorted(_BY_NAME))}, or pass custom_objects)")
    return cls.from_config(arguments) if hasattr(cls, "from_config") else cls(**arguments)


def get(identifier):
    """A constraint from None, a name (``"max_norm"``, ``"MaxNorm"`` ...: default arguments), a config dict
    (``serialize``'s), a class, or a callable (returned as it is)."""
    if identifier is None:
        return None
    found = identifier
    if isinstance(identifier, dict):
        found = deserialize(identifier)
    elif isinstance(identifier, str):
        found = _BY_NAME.get(identifier)
        if found is None:
            raise ValueError(f"Could not interpret constraint identifier: {identifier!r} (known names: "
                             f"{', '.join(sorted(_BY_NAME))})")
    if inspect.isclass(found):
        return found()
    if callable(found):
        return found
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r} (expected a name, a config dict, "
                     "a callable or None)")


__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize", "get", "max_norm",
           "min_max_norm", "non_neg", "serialize", "unit_norm"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.constraints")
