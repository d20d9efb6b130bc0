"""Optimizers: ``SGD`` (with momentum) and ``Adam``; ``apply_gradients(zip(grads, variables))`` updates in place.

An optimizer creates its variables -- the step counter ``iterations`` and one slot per variable
and kind (``m``/``v`` for Adam, ``momentum`` for SGD) -- on its first step. Inside ``rt.function``
that is while the first trace runs, which the singleton-variable rule allows; another optimizer
passed to the same Function later would create variables on a retrace: a ``ValueError``, as in
TensorFlow (use one Function, or ConcreteFunction, per optimizer).

Each slot is an attribute of the optimizer named after its kind and the variable's position
(``m_0``, ``v_0``, ``m_1`` ...), so a built module finds it from its globals (``optimizer.m_0``).
"""
from __future__ import annotations

import numpy as np

from runtime.ops import math_ops
from runtime.ops.registry import convert
from runtime.variables import Variable


class Optimizer:
    """Base class: subclasses name their ``slot_kinds`` and define ``update_step(grad, variable, slots)``."""

    slot_kinds: tuple = ()

    def __init__(self, learning_rate: float = 0.001, name: str | None = None):
        self.name = name or type(self).__name__.lower()
        self.learning_rate = float(learning_rate)
        self.iterations = None
        self._positions: dict[int, int] = {}        # id(variable handle) -> its position (slot suffix)
        self._per_step: dict = {}

    # -- slots -------------------------------------------------------------------------------------
    def _position(self, variable: Variable) -> int:
        key = id(variable.handle)
        if key not in self._positions:
            self._positions[key] = len(self._positions)
        return self._positions[key]

    def get_slot(self, variable: Variable, kind: str) -> Variable:
        """The slot variable of ``kind`` for ``variable``, created (zeros) when it does not exist yet."""
        name = f"{kind}_{self._position(variable)}"
        slot = self.__dict__.get(name)
        if slot is None:
            slot = Variable(np.zeros(variable.shape.as_list(), variable.dtype.np), trainable=False,
                            name=f"{self.name}/{variable.name}/{kind}")
            setattr(self, name, slot)
        return slot

    def build(self, variables) -> None:
        """Create the step counter and the slots of ``variables`` (done by the first ``apply_gradients``)."""
        if self.iterations is None:
            self.iterations = Variable(np.int64(0), trainable=False, name=f"{self.name}/iterations")
        for variable in variables:
            for kind in self.slot_kinds:
                self.get_slot(variable, kind)

    @property
    def variables(self) -> list:
        """The step counter and every slot, in creation order."""
        found = [self.iterations] if self.iterations is not None else []
        return found + [v for k, v in vars(self).items() if isinstance(v, Variable) and k != "iterations"]

    # -- steps --------------------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Update each variable with its gradient (pairs with a None gradient are skipped); count the step."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        for _, variable in pairs:
            if not isinstance(variable, Variable):
                raise TypeError(f"{self.name}.apply_gradients: expected rt.Variables, got {variable!r}")
        self.build([v for _, v in pairs])
        self._per_step = {}                 # values every variable's update shares (e.g. Adam's step size)
        for grad, variable in pairs:
            grad = convert(grad)
            if grad.dtype is not variable.dtype:
                grad = math_ops.cast(grad, variable.dtype)
            self.update_step(grad, variable, [self.get_slot(variable, kind) for kind in self.slot_kinds])
        return self.iterations.assign_add(np.int64(1))

    def minimize(self, loss, var_list, tape):
        """``apply_gradients`` of ``tape.gradient(loss, var_list)``."""
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def update_step(self, grad, variable: Variable, slots: list) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """``v -= lr * g``; with momentum ``m = momentum * m - lr * g; v += m`` (Nesterov: ``v += momentum * m - lr * g``).
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str | None = None):
        super().__init__(learning_rate, name)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = nesterov
        self.slot_kinds = ("momentum",) if self.momentum else ()

    def update_step(self, grad, variable, slots):
        step = math_ops.multiply(grad, self.learning_rate)
        if not self.momentum:
            variable.assign_sub(step)
            return
        (momentum,) = slots
        velocity = momentum.assign(math_ops.subtract(math_ops.multiply(momentum, self.momentum), step))
        if self.nesterov:
            variable.assign_add(math_ops.subtract(math_ops.multiply(velocity, self.momentum), step))
        else:
            variable.assign_add(velocity)


class Adam(Optimizer):
    """Adam (Kingma & Ba), as Keras computes it: bias correction folded into the step size."""

    slot_kinds = ("m", "v")

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str | None = None):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _step_size(self, dtype):
        """``lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`` for this step ``t`` (once per step and dtype)."""
        alpha = self._per_step.get(dtype)
        if alpha is None:
            step = math_ops.cast(math_ops.add(self.iterations, np.int64(1)), dtype)
            beta_1_power = math_ops.pow(convert(np.asarray(self.beta_1, dtype.np)), step)
            beta_2_power = math_ops.pow(convert(np.asarray(self.beta_2, dtype.np)), step)
            alpha = self._per_step[dtype] = math_ops.divide(
                math_ops.multiply(math_ops.sqrt(math_ops.subtract(1.0, beta_2_power)), self.learning_rate),
                math_ops.subtract(1.0, beta_1_power))
        return alpha

    def update_step(self, grad, variable, slots):
        m, v = slots
        alpha = self._step_size(variable.dtype)
        m = m.assign_add(math_ops.multiply(math_ops.subtract(grad, m), 1.0 - self.beta_1))
        v = v.assign_add(math_ops.multiply(math_ops.subtract(math_ops.square(grad), v), 1.0 - self.beta_2))
        variable.assign_sub(math_ops.divide(math_ops.multiply(m, alpha), math_ops.add(math_ops.sqrt(v),
                                                                                      self.epsilon)))


__all__ = ["Adam", "Optimizer", "SGD"]
