"""Metrics as Keras 3 defines them: state in ``rt.Variable``s, ``update_state``, ``result``, ``reset_state``.

The state lives in variables (``total``, ``count``) created with the metric, and ``update_state`` updates them
with ordinary ops, so a metric works eagerly and inside an ``rt.function`` train step (where each call of the
built step updates it natively), as the advanced quickstart does::

    train_loss = rt.keras.metrics.Mean(name="train_loss")
    train_accuracy = rt.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

    @rt.function
    def train_step(images, labels):
        ...
        train_loss(loss)                       # update_state, then result()
        train_accuracy(labels, predictions)

- ``Mean`` / ``Sum`` of values (``sample_weight`` weights them; values of rank > 1 are first averaged per sample);
- ``MeanMetricWrapper(fn)``: the mean of ``fn(y_true, y_pred)`` per sample, which ``Accuracy``,
  ``BinaryAccuracy``, ``CategoricalAccuracy``, ``SparseCategoricalAccuracy``, ``MeanSquaredError``,
  ``MeanAbsoluteError``, ``RootMeanSquaredError`` and the cross entropies are.

Example:
    >>> import runtime as rt
    >>> m = rt.keras.metrics.SparseCategoricalAccuracy()
    >>> m.update_state([1, 2], [[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    >>> float(m.result())
    0.5
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes
from runtime.errors import missing_name
from runtime.keras import losses as losses_module
from runtime.keras.layers.base import to_snake_case
from runtime.keras.losses import squeeze_or_expand_to_same_rank
from runtime.ops import array_ops, math_ops
from runtime.ops.registry import convert
from runtime.train.tracking import Trackable
from runtime.variables import Variable


class Metric(Trackable):
    """Base class: ``add_variable`` the state in ``__init__``, define ``update_state`` and ``result``."""

    def __init__(self, dtype=None, name: str | None = None):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
        self._variables: list = []
        self._rt_initial: list = []

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation: str = "sum",
                     name: str | None = None) -> Variable:
        """A state variable of this metric, reset to its initial value by ``reset_state``."""
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        shape = tuple(int(d) for d in shape)
        if initializer in ("zeros", None):
            value = np.zeros(shape, dtype.np)
        elif initializer == "ones":
            value = np.ones(shape, dtype.np)
        elif callable(initializer):
            value = np.asarray(initializer(shape, dtype), dtype.np)
        else:
            value = np.full(shape, initializer, dtype.np)
        label = name or f"variable_{len(self._variables)}"
        variable = Variable(value, trainable=False, name=label)      # Keras 3: its own name, and the metric's path
        variable.path = f"{self.name}/{label}"
        self._variables.append(variable)
        self._rt_initial.append(value)
        return variable

    add_weight = add_variable

    @property
    def variables(self) -> list:
        return list(self._variables)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.update_state")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__}.result")

    def reset_state(self) -> None:
        """Every state variable back to its initial value (zero)."""
        for variable, value in zip(self._variables, self._rt_initial):
            variable.assign(value)

    reset_states = reset_state

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def reduce_to_samplewise_values(values, sample_weight, reduce_fn, dtype):
    """Keras' rule: values cast to ``dtype``; with weights, both matched in rank, values reduced to the weights'
    rank and multiplied by them; then values of rank > 1 reduced to one per sample."""
    values = convert(values)
    if values.dtype is not dtype:
        values = math_ops.cast(values, dtype)
    if sample_weight is not None:
        sample_weight = convert(sample_weight)
        if sample_weight.dtype is not dtype:
            sample_weight = math_ops.cast(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_rank, value_rank = sample_weight.shape.rank, values.shape.rank
        if value_rank > weight_rank:
            values = reduce_fn(values, list(range(weight_rank, value_rank)))
        sample_weight = array_ops.broadcast_to(sample_weight, array_ops.shape(values)) \
            if sample_weight.shape != values.shape else sample_weight
        values = math_ops.multiply(values, sample_weight)
        if weight_rank > 1:
            sample_weight = reduce_fn(sample_weight, list(range(1, weight_rank)))
    if values.shape.rank > 1:
        values = reduce_fn(values, list(range(1, values.shape.rank)))
    return values, sample_weight


def _count(values):
    """The number of samples of ``values`` as a float32 scalar (static when the batch size is known)."""
    if values.shape.rank == 0:
        return 1.0
    if values.shape[0] is not None:
        return float(values.shape[0])
    return array_ops.shape(values)[0]


class Sum(Metric):
    """The (weighted) sum of the values."""

    def __init__(self, name: str = "sum", dtype=None):
        super().__init__(dtype=dtype, name=name)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise_values(values, sample_weight, math_ops.reduce_sum, self.dtype)
        self.total.assign_add(math_ops.reduce_sum(values))

    def result(self):
        return self.total.read_value()


class Mean(Metric):
    """The (weighted) mean of the values: ``total / count``."""

    def __init__(self, name: str = "mean", dtype=None):
        super().__init__(dtype=dtype, name=name)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = reduce_to_samplewise_values(values, sample_weight, math_ops.reduce_mean, self.dtype)
        self.total.assign_add(math_ops.reduce_sum(values))
        if sample_weight is not None:
            samples = math_ops.reduce_sum(sample_weight)
        else:
            samples = _count(values)
        if not isinstance(samples, float) and samples.dtype is not self.dtype:
            samples = math_ops.cast(samples, self.dtype)
        self.count.assign_add(samples)

    def result(self):
        total, count = self.total.read_value(), self.count.read_value()
        return math_ops.where(math_ops.equal(count, 0.0), array_ops.zeros_like(total),
                              math_ops.divide(total, math_ops.where(math_ops.equal(count, 0.0),
                                                                    array_ops.ones_like(count), count)))


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` (one value per sample)."""

    def __init__(self, fn, name: str | None = None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric_wrapper"), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(values, sample_weight=sample_weight)


# ---------------------------------------------------------------------------
# Per-sample metric functions.

def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred``, else 0.0."""
    y_pred = convert(y_pred)
    y_true = convert(y_true)
    if y_true.dtype is not y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return math_ops.cast(math_ops.equal(y_true, y_pred), dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold: float = 0.5):
    """1.0 where ``(y_pred > threshold) == y_true``."""
    y_pred = convert(y_pred)
    y_true = convert(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = math_ops.cast(math_ops.greater(y_pred, convert(threshold, y_pred.dtype)), y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)


def _class_matches(labels, y_pred):
    """1.0 where the class ``argmax(y_pred)`` equals ``labels`` (Keras' sparse categorical accuracy)."""
    y_pred = convert(y_pred)
    labels = convert(labels)
    if labels.dtype is not y_pred.dtype:
        labels = math_ops.cast(labels, y_pred.dtype)
    if labels.shape.rank is not None and y_pred.shape.rank is not None and labels.shape.rank == y_pred.shape.rank \
            and labels.shape[-1] == 1:
        labels = array_ops.squeeze(labels, [-1])          # [batch, 1] labels: one match per sample
    predicted = math_ops.cast(math_ops.argmax(y_pred, axis=-1), labels.dtype)
    return math_ops.cast(math_ops.equal(labels, predicted), dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label equals ``argmax(y_pred)``."""
    return _class_matches(y_true, y_pred)


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)``."""
    return _class_matches(math_ops.argmax(convert(y_true), axis=-1), y_pred)


# ---------------------------------------------------------------------------
# Metric classes.

class Accuracy(MeanMetricWrapper):
    def __init__(self, name: str = "accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "binary_accuracy", dtype=None, threshold: float = 0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_squared_error", dtype=None):
        super().__init__(losses_module.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_absolute_error", dtype=None):
        super().__init__(losses_module.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the mean of squared errors."""

    def __init__(self, name: str = "root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = convert(y_pred)
        y_true = math_ops.cast(convert(y_true), y_pred.dtype)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return super().update_state(math_ops.square(math_ops.subtract(y_pred, y_true)), sample_weight=sample_weight)

    def result(self):
        return math_ops.sqrt(super().result())


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "binary_crossentropy", dtype=None, from_logits: bool = False,
                 label_smoothing: float = 0.0):
        super().__init__(losses_module.binary_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_crossentropy", dtype=None, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1):
        super().__init__(losses_module.categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype=None, from_logits: bool = False,
                 axis: int = -1):
        super().__init__(losses_module.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, axis=axis)


mean_squared_error = mse = losses_module.mean_squared_error
mean_absolute_error = mae = losses_module.mean_absolute_error
binary_crossentropy = losses_module.binary_crossentropy
categorical_crossentropy = losses_module.categorical_crossentropy
sparse_categorical_crossentropy = losses_module.sparse_categorical_crossentropy

_BY_NAME = {
    "accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy, "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "mean_absolute_error": MeanAbsoluteError,
    "mae": MeanAbsoluteError, "root_mean_squared_error": RootMeanSquaredError,
    "binary_crossentropy": BinaryCrossentropy, "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
}


def get(identifier):
    """A metric from a name (``"mae"``, ``"sparse_categorical_accuracy"`` ...), a ``Metric``, or a function of
    ``(y_true, y_pred)`` (wrapped in ``MeanMetricWrapper``). ``"accuracy"`` here is exact-match accuracy; in
    ``Model.compile`` it becomes the accuracy that fits the loss and the outputs, as in Keras."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"unknown metric {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise TypeError(f"a metric must be a name, a Metric or a function of (y_true, y_pred), got {identifier!r}")


__all__ = ["Accuracy", "BinaryAccuracy", "BinaryCrossentropy", "CategoricalAccuracy", "CategoricalCrossentropy",
           "Mean", "MeanAbsoluteError", "MeanMetricWrapper", "MeanSquaredError", "Metric", "RootMeanSquaredError",
           "SparseCategoricalAccuracy", "SparseCategoricalCrossentropy", "Sum", "accuracy", "binary_accuracy",
           "categorical_accuracy", "get", "sparse_categorical_accuracy"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.metrics")
