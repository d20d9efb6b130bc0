"""Losses as Keras 3 defines them: classes (``MeanSquaredError()``, ``SparseCategoricalCrossentropy(from_logits=True)``
...) whose call gives a scalar, and functions (``mean_squared_error(y_true, y_pred)`` ...) giving one loss per sample.

- A class reduces the per-sample losses by ``reduction``: ``"sum_over_batch_size"`` (the default; also
  ``"mean"``: the sum divided by the number of values), ``"sum"``, ``"mean_with_sample_weight"`` (divided by the
  sum of the weights) or ``None``/``"none"``; ``sample_weight`` multiplies them first.
- ``y_true`` and ``y_pred`` whose ranks differ by a trailing axis of size 1 are matched first (``[batch]``
  labels against ``[batch, 1]`` predictions).
- Cross entropies of probabilities clip them to ``[1e-7, 1 - 1e-7]``; probabilities that a Keras ``sigmoid`` or
  ``softmax`` activation made (or, while tracing, a Sigmoid/Softmax op) are computed from their logits instead,
  as Keras does on TensorFlow.

Example:
    >>> import runtime as rt
    >>> float(rt.keras.losses.MeanSquaredError()([[0.0, 1.0]], [[1.0, 1.0]]))
    0.5
"""
from __future__ import annotations

import re

from runtime import dtypes
from runtime.errors import missing_name
from runtime.keras import activations
from runtime.ops import array_ops, math_ops, nn_ops
from runtime.ops.registry import convert

EPSILON = 1e-7      # Keras' backend epsilon: probabilities are clipped to [EPSILON, 1 - EPSILON]

REDUCTIONS = ("sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight")


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1: bool = True):
    """Match ranks that differ by a trailing axis of size 1 (Keras' rule): squeeze it, or expand a rank-1 side."""
    r1, r2 = x1.shape.rank, x2.shape.rank
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = array_ops.expand_dims(x2, -1)
        else:
            x1 = array_ops.squeeze(x1, [-1])
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = array_ops.expand_dims(x1, -1)
        else:
            x2 = array_ops.squeeze(x2, [-1])
    return x1, x2


def _divide_no_nan(x, y):
    return math_ops.where(math_ops.equal(y, 0.0), array_ops.zeros_like(x),
                          math_ops.divide(x, math_ops.where(math_ops.equal(y, 0.0), array_ops.ones_like(y), y)))


def _reduce(values, sample_weight, reduction: str):
    if reduction == "none" or values.shape.rank == 0 or tuple(values.shape.dims or (None,)) == (0,):
        return values
    total = math_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return _divide_no_nan(total, math_ops.cast(math_ops.reduce_sum(sample_weight), total.dtype))
    if values.shape.is_fully_defined():
        count = 1
        for d in values.shape.dims:
            count *= d
        return math_ops.divide(total, float(count)) if count else math_ops.multiply(total, 0.0)
    return _divide_no_nan(total, math_ops.cast(array_ops.size(values), total.dtype))


def reduce_weighted_values(values, sample_weight=None, reduction: str = "sum_over_batch_size"):
    """Keras' ``reduce_weighted_values``: weight the per-sample losses, then reduce them."""
    if sample_weight is not None:
        sample_weight = convert(sample_weight)
        if sample_weight.dtype is not values.dtype:
            sample_weight = math_ops.cast(sample_weight, values.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = math_ops.multiply(values, sample_weight)
    return _reduce(values, sample_weight, reduction)


def _standardize_reduction(reduction, owner: str) -> str:
    reduction = "none" if reduction is None else reduction
    if reduction not in REDUCTIONS:
        raise ValueError(f"{owner}: invalid value for argument `reduction`: {reduction!r}; expected one of "
                         f"{', '.join(REDUCTIONS)} or None")
    return reduction


class Loss:
    """Base class: ``call(y_true, y_pred)`` gives per-sample losses; ``__call__`` weights and reduces them."""

    def __init__(self, name: str | None = None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self.reduction = _standardize_reduction(reduction, type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def _convert(self, value):
        tensor = convert(value)
        if tensor.dtype is not self.dtype and (tensor.dtype.is_floating or tensor.dtype.is_bool or
                                               tensor.dtype.is_integer):
            tensor = math_ops.cast(tensor, self.dtype)
        return tensor

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_pred = convert(y_pred)
        if y_pred.dtype is not self.dtype:
            y_pred = math_ops.cast(y_pred, self.dtype)
        losses = self.call(self._convert_true(y_true), y_pred)
        return reduce_weighted_values(losses, sample_weight, self.reduction)

    def _convert_true(self, y_true):
        return self._convert(y_true)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}


def _snake_case(class_name: str) -> str:
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


class LossFunctionWrapper(Loss):
    """A per-sample loss function as a ``Loss``: ``LossFunctionWrapper(fn, name=..., **fn_kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name: str | None = None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)


# ---------------------------------------------------------------------------
# Per-sample loss functions.

def _pair(y_true, y_pred):
    y_pred = convert(y_pred)
    y_true = convert(y_true)
    if y_true.dtype is not y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(math_ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(math_ops.subtract(y_true, y_pred)), axis=-1)


def huber(y_true, y_pred, delta: float = 1.0):
    """``mean(0.5 * e^2 if |e| <= delta else delta * |e| - 0.5 * delta^2, axis=-1)``, ``e = y_pred - y_true``."""
    y_true, y_pred = _pair(y_true, y_pred)
    error = math_ops.subtract(y_pred, y_true)
    abs_error = math_ops.abs(error)
    quadratic = math_ops.multiply(math_ops.square(error), 0.5)
    linear = math_ops.subtract(math_ops.multiply(abs_error, float(delta)), 0.5 * float(delta) ** 2)
    return math_ops.reduce_mean(math_ops.where(math_ops.less_equal(abs_error, float(delta)), quadratic, linear),
                                axis=-1)


def _same_shape(op: str, target, output) -> None:
    if target.shape.rank is not None and output.shape.rank is not None and (
            target.shape.rank != output.shape.rank or not target.shape.is_compatible_with(output.shape)):
        raise ValueError(f"{op}: arguments `target` and `output` must have the same shape. Received: "
                             f"target.shape={target.shape}, output.shape={output.shape}")


def _binary_crossentropy(target, output, from_logits: bool):
    """Elementwise binary cross entropy (Keras' backend function)."""
    _same_shape("binary_crossentropy", target, output)
    logits = activations.logits_of(output, "Sigmoid")
    if logits is not None:
        output, from_logits = logits, True
    if from_logits:
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    output = math_ops.clip_by_value(output, EPSILON, 1.0 - EPSILON)
    bce = math_ops.multiply(target, math_ops.log(output))
    bce = math_ops.add(bce, math_ops.multiply(math_ops.subtract(1.0, target),
                                              math_ops.log(math_ops.subtract(1.0, output))))
    return math_ops.negative(bce)


def binary_crossentropy(y_true, y_pred, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1):
    """Binary cross entropy per sample (the mean over ``axis``)."""
    y_pred = convert(y_pred)
    y_true = math_ops.cast(convert(y_true), y_pred.dtype)
    if label_smoothing:
        y_true = math_ops.add(math_ops.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    return math_ops.reduce_mean(_binary_crossentropy(y_true, y_pred, from_logits), axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits: bool = False, label_smoothing: float = 0.0,
                             axis: int = -1):
    """Cross entropy of one-hot (or soft) labels per sample."""
    y_pred = convert(y_pred)
    y_true = math_ops.cast(convert(y_true), y_pred.dtype)
    if label_smoothing:
        classes = y_true.shape[-1]
        if classes is None:
            raise ValueError("categorical_crossentropy: label smoothing needs the number of classes to be known")
        y_true = math_ops.add(math_ops.multiply(y_true, 1.0 - label_smoothing), label_smoothing / classes)
    _same_shape("categorical_crossentropy", y_true, y_pred)
    logits = activations.logits_of(y_pred, "Softmax")
    if logits is not None:
        y_pred, from_logits = logits, True
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    output = math_ops.divide(y_pred, math_ops.reduce_sum(y_pred, axis, keepdims=True))
    output = math_ops.clip_by_value(output, EPSILON, 1.0 - EPSILON)
    return math_ops.negative(math_ops.reduce_sum(math_ops.multiply(y_true, math_ops.log(output)), axis))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits: bool = False, ignore_class=None, axis: int = -1):
    """``-log(p[label])`` per sample, from probabilities or (``from_logits=True``) logits."""
    if ignore_class is not None:
        raise NotImplementedError("sparse_categorical_crossentropy: ignore_class is not supported")
    output = convert(y_pred)
    if axis not in (-1, (output.shape.rank or 0) - 1):
        raise ValueError(f"Only axis=-1 is currently supported. Received: axis={axis}")
    logits = activations.logits_of(output, "Softmax")
    if logits is not None:
        output, from_logits = logits, True
    labels = convert(y_true)
    if labels.dtype not in (dtypes.int32, dtypes.int64):
        labels = math_ops.cast(labels, dtypes.int64 if labels.dtype.is_integer else dtypes.int32)
    if output.shape.rank is not None and labels.shape.rank == output.shape.rank and labels.shape[-1] == 1:
        labels = array_ops.squeeze(labels, [-1])
    if output.shape.rank is not None and labels.shape.rank is not None:
        if labels.shape.rank != output.shape.rank - 1:
            raise ValueError(f"Argument `output` must have rank (ndim) `target.ndim - 1`. Received: "
                             f"target.shape={labels.shape}, output.shape={output.shape}")
        if not labels.shape.is_compatible_with(output.shape[:-1]):
            raise ValueError(f"Arguments `target` and `output` must have the same shape up until the last "
                             f"dimension: target.shape={labels.shape}, output.shape={output.shape}")
    if not from_logits:
        output = math_ops.log(math_ops.clip_by_value(output, EPSILON, 1.0 - EPSILON))
    return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=output)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# ---------------------------------------------------------------------------
# Loss classes.

class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name: str = "mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name: str = "mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class Huber(LossFunctionWrapper):
    def __init__(self, delta: float = 1.0, reduction="sum_over_batch_size", name: str = "huber_loss", dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction="sum_over_batch_size", name: str = "binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction="sum_over_batch_size", name: str = "categorical_crossentropy", dtype=None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, ignore_class=None, reduction="sum_over_batch_size",
                 name: str = "sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class)
        self.from_logits = from_logits

    def _convert_true(self, y_true):
        return convert(y_true)          # labels stay integers (Keras casts them back to integers anyway)

    def call(self, y_true, y_pred):
        return sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)


_FUNCTIONS = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "huber": huber, "binary_crossentropy": binary_crossentropy, "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
}
_CLASSES = {"MeanSquaredError": MeanSquaredError, "MeanAbsoluteError": MeanAbsoluteError, "Huber": Huber,
            "BinaryCrossentropy": BinaryCrossentropy, "CategoricalCrossentropy": CategoricalCrossentropy,
            "SparseCategoricalCrossentropy": SparseCategoricalCrossentropy}


def get(identifier):
    """A loss from a name (``"mse"``, ``"sparse_categorical_crossentropy"``, ``"MeanSquaredError"`` ...), a ``Loss``
    or a function of ``(y_true, y_pred)``; None stays None."""
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        try:
            return _FUNCTIONS[identifier]
        except KeyError:
            raise ValueError(f"unknown loss {identifier!r}; known: {', '.join(sorted(_FUNCTIONS))}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"a loss must be a name, a Loss or a function of (y_true, y_pred), got {identifier!r}")


__all__ = [
    "MAE",
    "MSE",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "Huber",
    "Loss",
    "LossFunctionWrapper",
    "MeanAbsoluteError",
    "MeanSquaredError",
    "SparseCategoricalCrossentropy",
    "binary_crossentropy",
    "categorical_crossentropy",
    "get",
    "huber",
    "mae",
    "mean_absolute_error",
    "mean_squared_error",
    "mse",
    "sparse_categorical_crossentropy",
]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.losses")
