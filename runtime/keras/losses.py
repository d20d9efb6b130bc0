"""Losses: ``MeanSquaredError`` and ``SparseCategoricalCrossentropy``; ``loss(y_true, y_pred)`` is a scalar.

Per-sample losses are averaged over the batch by default (Keras' ``reduction="sum_over_batch_size"``);
``reduction="sum"`` adds them up and ``reduction=None`` (or ``"none"``) returns them unreduced.
"""
from __future__ import annotations

from runtime import dtypes
from runtime.ops import array_ops, math_ops, nn_ops
from runtime.ops.registry import convert

EPSILON = 1e-7      # Keras' backend epsilon: probabilities are clipped to [EPSILON, 1 - EPSILON]


REDUCTIONS = ("sum_over_batch_size", "sum", "none", "mean")


class Loss:
    """Base class: ``call(y_true, y_pred)`` gives per-sample losses; ``__call__`` reduces them.

    Args:
        reduction: ``"sum_over_batch_size"`` (the mean, the default; ``"mean"`` is the same), ``"sum"``, or
            ``None``/``"none"`` (the per-sample losses).
        name: the loss's name.
    """

    def __init__(self, reduction: str | None = "sum_over_batch_size", name: str | None = None):
        reduction = "none" if reduction is None else reduction
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {', '.join(REDUCTIONS)} or None, "
                             f"got {reduction!r}")
        self.reduction = reduction
        self.name = name or type(self).__name__

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_pred = convert(y_pred)
        losses = self.call(convert(y_true), y_pred)
        if sample_weight is not None:
            losses = math_ops.multiply(losses, math_ops.cast(convert(sample_weight), losses.dtype))
        if self.reduction == "none":
            return losses
        if self.reduction == "sum":
            return math_ops.reduce_sum(losses)
        return math_ops.reduce_mean(losses)


class MeanSquaredError(Loss):
    """``mean(square(y_pred - y_true), axis=-1)`` per sample."""

    def call(self, y_true, y_pred):
        y_true = math_ops.cast(y_true, y_pred.dtype) if y_true.dtype is not y_pred.dtype else y_true
        return math_ops.reduce_mean(math_ops.square(math_ops.subtract(y_pred, y_true)), axis=-1)


class SparseCategoricalCrossentropy(Loss):
    """``-log(p[label])`` per sample, from probabilities or (``from_logits=True``) from logits."""

    def __init__(self, from_logits: bool = False, reduction: str | None = "sum_over_batch_size",
                 name: str | None = None):
        super().__init__(reduction, name)
        self.from_logits = from_logits

    def call(self, y_true, y_pred):
        labels = y_true
        if labels.shape.rank is not None and y_pred.shape.rank is not None and \
                labels.shape.rank == y_pred.shape.rank and labels.shape[-1] == 1:
            labels = array_ops.squeeze(labels, -1)
        if labels.dtype not in (dtypes.int32, dtypes.int64):
            labels = math_ops.cast(labels, dtypes.int32)
        if self.from_logits:
            return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)
        probs = math_ops.divide(y_pred, math_ops.reduce_sum(y_pred, -1, keepdims=True))
        log_probs = math_ops.log(math_ops.clip_by_value(probs, EPSILON, 1 - EPSILON))
        depth = y_pred.shape[-1]
        if depth is None:
            raise ValueError("SparseCategoricalCrossentropy needs the number of classes (the last dimension of "
                             "y_pred) to be known")
        hot = array_ops.one_hot(labels, depth, dtype=y_pred.dtype)
        return math_ops.negative(math_ops.reduce_sum(math_ops.multiply(hot, log_probs), -1))


__all__ = ["Loss", "MeanSquaredError", "SparseCategoricalCrossentropy"]
