"""Learning-rate schedules (``keras.optimizers.schedules``): a schedule maps the optimizer's step (a tensor) to a
learning rate with ops, so a traced or built train step computes it on every step.

Example:
    >>> import runtime as rt
    >>> schedule = ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    >>> round(float(schedule(rt.constant(10, rt.int64))), 6)
    0.05
"""
from __future__ import annotations

import math

import numpy as np

from runtime import dtypes
from runtime.ops import math_ops
from runtime.ops.registry import convert


class LearningRateSchedule:
    """Base class: ``schedule(step) -> learning rate`` (float32)."""

    def __call__(self, step):
        raise NotImplementedError

    @staticmethod
    def _step(step):
        step = convert(step)
        return math_ops.cast(step, dtypes.float32) if step.dtype is not dtypes.float32 else step


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ^ (step / decay_steps)`` (the exponent floored when ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False, name=None):
        if decay_steps <= 0:
            raise ValueError(f"ExponentialDecay: decay_steps must be positive, got {decay_steps}")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), float(decay_steps)
        self.decay_rate, self.staircase = float(decay_rate), staircase

    def __call__(self, step):
        p = math_ops.divide(self._step(step), self.decay_steps)
        if self.staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(math_ops.pow(convert(np.float32(self.decay_rate)), p), self.initial_learning_rate)


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored when ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase: bool = False, name=None):
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), float(decay_steps)
        self.decay_rate, self.staircase = float(decay_rate), staircase

    def __call__(self, step):
        p = math_ops.divide(self._step(step), self.decay_steps)
        if self.staircase:
            p = math_ops.floor(p)
        return math_ops.divide(self.initial_learning_rate, math_ops.add(math_ops.multiply(p, self.decay_rate), 1.0))


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[i]`` for steps in ``(boundaries[i-1], boundaries[i]]`` (``values[0]`` up to the first boundary)."""

    def __init__(self, boundaries, values, name=None):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: need one more value than boundaries, got {len(boundaries)} "
                             f"boundaries and {len(values)} values")
        self.boundaries, self.values = [float(b) for b in boundaries], [float(v) for v in values]

    def __call__(self, step):
        step = self._step(step)
        out = convert(np.float32(self.values[-1]))
        for boundary, value in reversed(list(zip(self.boundaries, self.values[:-1]))):
            out = math_ops.where(math_ops.less_equal(step, boundary), convert(np.float32(value)), out)
        return out


class CosineDecay(LearningRateSchedule):
    """``initial_learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)``
    (without warmup)."""

    def __init__(self, initial_learning_rate, decay_steps, alpha: float = 0.0, name=None, warmup_target=None,
                 warmup_steps: int = 0):
        if warmup_target is not None or warmup_steps:
            raise NotImplementedError("CosineDecay: warmup is not supported")
        self.initial_learning_rate, self.decay_steps, self.alpha = float(initial_learning_rate), float(decay_steps), \
            float(alpha)

    def __call__(self, step):
        fraction = math_ops.divide(math_ops.minimum(self._step(step), self.decay_steps), self.decay_steps)
        cosine = math_ops.multiply(math_ops.add(math_ops.cos(math_ops.multiply(fraction, math.pi)), 1.0), 0.5)
        decayed = math_ops.add(math_ops.multiply(cosine, 1.0 - self.alpha), self.alpha)
        return math_ops.multiply(decayed, self.initial_learning_rate)


__all__ = ["CosineDecay", "ExponentialDecay", "InverseTimeDecay", "LearningRateSchedule", "PiecewiseConstantDecay"]
