"""Optimizers: ``SGD`` (momentum, Nesterov), ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``, as Keras 3 computes them;
``apply_gradients(zip(grads, variables))`` updates the variables in place.

An optimizer creates its step counter ``iterations`` and one slot variable per variable and kind (``m``/``v`` for
Adam, ``momentum`` for SGD ...) on its first step. Inside ``rt.function`` that is while the first trace runs,
which the singleton-variable rule allows; another optimizer passed to the same Function later would create
variables on a retrace: a ``ValueError``, as in TensorFlow (use one Function, or ConcreteFunction, per
optimizer). Each slot is an attribute named after its kind and the variable's position (``m_0``, ``v_0``,
``m_1`` ...), so a built module finds it from its globals (``optimizer.m_0``) and checkpoints save it by that
name (with the path of the variable it belongs to).

The learning rate lives in a variable (``optimizer.learning_rate = 0.01`` changes it for functions already
traced, as in Keras 3), or comes from a schedule of the step (``optimizers.schedules``). ``variables`` lists
the step counter and the slots (the state a fresh start zeroes), not the learning rate.
``clipnorm``, ``clipvalue``, ``global_clipnorm`` and ``weight_decay`` apply as in Keras 3, and so do the variables'
constraints (``variable.constraint``, which ``add_weight(constraint=...)`` sets): after a step has updated every
variable, each one with a constraint is assigned ``constraint(variable)``.
"""
from __future__ import annotations

import typing
import weakref

import numpy as np

from runtime import dtypes
from runtime.errors import missing_name
from runtime.keras.optimizers import schedules
from runtime.ops import math_ops
from runtime.ops.registry import convert
from runtime.train.tracking import Trackable
from runtime.variables import Variable


class Optimizer(Trackable):
    """Base class: subclasses name their ``slot_kinds`` and define ``update_step(grad, variable, slots)``."""

    slot_kinds: tuple = ()
    slot_initial: typing.ClassVar[dict] = {}      # kind -> initial value of that kind's slots (zero otherwise)

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name: str | None = None, **kwargs):
        unknown = sorted(set(kwargs) - {"use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                                        "gradient_accumulation_steps", "jit_compile"})
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {unknown}")
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError("Only one of `clipnorm` and `global_clipnorm` can be set")
        self.name = name or type(self).__name__.lower()
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self.global_clipnorm = None if global_clipnorm is None else float(global_clipnorm)
        self.iterations = None
        self._rt_schedule = None
        self._learning_rate = None
        self.learning_rate = learning_rate
        self._rt_positions: dict[int, int] = {}        # id(variable handle) -> its position (slot suffix)
        self._rt_slot_owner: dict[str, tuple] = {}     # slot attribute -> (kind, weakref to its variable)
        self._rt_per_step: dict = {}

    # -- learning rate ------------------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate: the variable holding it, or the schedule's value at this step."""
        if self._rt_schedule is not None:
            step = self.iterations if self.iterations is not None else np.int64(0)
            return self._rt_schedule(convert(step))
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        if isinstance(value, schedules.LearningRateSchedule):
            if self._learning_rate is not None:
                raise TypeError(f"{self.name}: the learning rate was a number; it cannot become a schedule")
            self._rt_schedule = value
            return
        if self._rt_schedule is not None:
            raise TypeError(f"{self.name}: the learning rate is a schedule ({self._rt_schedule!r}); it cannot be set "
                            "to a number")
        value = float(value.numpy() if hasattr(value, "numpy") else value)
        if self._learning_rate is None:
            self._learning_rate = Variable(np.float32(value), trainable=False, name=f"{self.name}/learning_rate")
        else:
            self._learning_rate.assign(np.float32(value))

    def _lr(self, dtype):
        """The learning rate as a scalar of ``dtype`` (read once per step)."""
        key = ("lr", dtype)
        lr = self._rt_per_step.get(key)
        if lr is None:
            if self._rt_schedule is not None:
                lr = self._rt_schedule(self.iterations)
            else:
                lr = self._learning_rate.read_value()
            if lr.dtype is not dtype:
                lr = math_ops.cast(lr, dtype)
            self._rt_per_step[key] = lr
        return lr

    # -- slots ---------------------------------------------------------------------------------------
    def _position(self, variable: Variable) -> int:
        key = id(variable.handle)
        if key not in self._rt_positions:
            taken = set(self._rt_positions.values())
            n = 0
            while n in taken:
                n += 1
            self._rt_positions[key] = n
        return self._rt_positions[key]

    def get_slot(self, variable: Variable, kind: str) -> Variable:
        """The slot variable of ``kind`` for ``variable``, created when it does not exist yet."""
        name = f"{kind}_{self._position(variable)}"
        slot = self.__dict__.get(name)
        if slot is None:
            initial = np.full(variable.shape.as_list(), self.slot_initial.get(kind, 0), variable.dtype.np)
            self._rt_slot_owner[name] = (kind, weakref.ref(variable))
            slot = Variable(initial, trainable=False, name=f"{self.name}/{variable.name}/{kind}")
            setattr(self, name, slot)         # (a restore waiting for this slot assigns it here)
        return slot

    def _slot_owners(self) -> dict[int, tuple]:
        """id(slot) -> (kind, the variable it belongs to), for checkpoints."""
        out = {}
        for name, (kind, owner) in self._rt_slot_owner.items():
            slot, variable = self.__dict__.get(name), owner()
            if slot is not None and variable is not None:
                out[id(slot)] = (kind, variable)
        return out

    def _slot_attribute(self, owner: Variable, kind: str, saved: str) -> str:
        """Where a checkpoint's slot of ``kind`` for ``owner`` goes: the attribute this optimizer uses for it.

        A variable with no position yet takes the saved one when it is free, so that slots created later get
        the saved values."""
        key = id(owner.handle)
        if key not in self._rt_positions:
            suffix = saved.rpartition("_")[2]
            if suffix.isdigit() and int(suffix) not in self._rt_positions.values():
                self._rt_positions[key] = int(suffix)
        return f"{kind}_{self._position(owner)}"

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
        return found + [v for k, v in vars(self).items()
                        if isinstance(v, Variable) and k not in ("iterations", "_learning_rate")]

    # -- steps ---------------------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Update each variable with its gradient (pairs with a None gradient are skipped); count the step."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        for _, variable in pairs:
            if not isinstance(variable, Variable):
                raise TypeError(f"{self.name}.apply_gradients: expected rt.Variables, got {variable!r}")
        self.build([v for _, v in pairs])
        self._rt_per_step = {}              # values every variable's update shares (the learning rate, Adam's step)
        grads = [convert(g) for g, _ in pairs]
        grads = [math_ops.cast(g, v.dtype) if g.dtype is not v.dtype else g for g, (_, v) in zip(grads, pairs)]
        grads = self._clip_gradients(grads)
        if self.weight_decay:
            for _, variable in pairs:
                lr = self._lr(variable.dtype)
                variable.assign(math_ops.subtract(variable, math_ops.multiply(math_ops.multiply(
                    variable, convert(np.asarray(self.weight_decay, variable.dtype.np))), lr)))
        for grad, (_, variable) in zip(grads, pairs):
            self.update_step(grad, variable, [self.get_slot(variable, kind) for kind in self.slot_kinds])
        for _, variable in pairs:       # Keras 3: each updated variable's constraint, once every update is done
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))
        return self.iterations.assign_add(np.int64(1))

    def apply(self, grads, trainable_variables=None):
        """Keras 3's ``apply(grads, trainable_variables)``: ``apply_gradients(zip(grads, trainable_variables))``."""
        if trainable_variables is None:
            raise ValueError(f"{self.name}.apply: pass the variables the gradients are for "
                             "(apply(grads, trainable_variables))")
        grads, trainable_variables = list(grads), list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"{self.name}.apply: {len(grads)} gradients for {len(trainable_variables)} variables")
        return self.apply_gradients(zip(grads, trainable_variables))

    def _clip_gradients(self, grads: list) -> list:
        if self.clipnorm and self.clipnorm > 0:
            grads = [_clip_by_norm(g, self.clipnorm) for g in grads]
        elif self.global_clipnorm and self.global_clipnorm > 0 and grads:
            grads = _clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue and self.clipvalue > 0:
            grads = [math_ops.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def minimize(self, loss, var_list, tape):
        """``apply_gradients`` of ``tape.gradient(loss, var_list)``."""
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def update_step(self, grad, variable: Variable, slots: list) -> None:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"name": self.name, "learning_rate": float(np.asarray(self.learning_rate))}

    def __repr__(self):
        return f"<rt.keras.optimizers.{type(self).__name__} {self.name!r}>"


def _clip_by_norm(values, clip_norm: float):
    """``values * clip_norm / max(norm(values), clip_norm)`` (Keras' ``clip_by_norm``)."""
    l2sum = math_ops.reduce_sum(math_ops.square(values), keepdims=True)
    positive = math_ops.greater(l2sum, 0.0)
    l2norm = math_ops.where(positive, math_ops.sqrt(math_ops.where(positive, l2sum, math_ops.ones_like_(l2sum))),
                            l2sum)
    return math_ops.divide(math_ops.multiply(values, clip_norm), math_ops.maximum(l2norm, clip_norm))


def _clip_by_global_norm(grads: list, clip_norm: float) -> list:
    """Every gradient scaled by ``clip_norm / max(global norm, clip_norm)``."""
    total = None
    for g in grads:
        term = math_ops.reduce_sum(math_ops.square(math_ops.cast(g, dtypes.float32)))
        total = term if total is None else math_ops.add(total, term)
    use_norm = math_ops.sqrt(total)
    scale = math_ops.multiply(math_ops.minimum(math_ops.divide(1.0, use_norm), 1.0 / clip_norm), clip_norm)
    return [math_ops.multiply(g, math_ops.cast(scale, g.dtype)) for g in grads]


def _scalar(value: float, dtype):
    return convert(np.asarray(value, dtype.np))


class SGD(Optimizer):
    """``v -= lr * g``; with momentum ``m = momentum * m - lr * g; v += m`` (Nesterov: ``v += momentum * m - lr * g``).
    """

    def __init__(self, learning_rate=0.01, momentum: float = 0.0, nesterov: bool = False, name: str | None = None,
                 **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = nesterov
        self.slot_kinds = ("momentum",) if self.momentum else ()

    def update_step(self, grad, variable, slots):
        step = math_ops.multiply(grad, self._lr(variable.dtype))
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

    def __init__(self, learning_rate=0.001, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str | None = None, **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        if amsgrad:
            raise NotImplementedError(f"{type(self).__name__}: amsgrad=True is not supported")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _step_size(self, dtype):
        """``lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`` for this step ``t`` (once per step and dtype)."""
        alpha = self._rt_per_step.get(dtype)
        if alpha is None:
            step = math_ops.cast(math_ops.add(self.iterations, np.int64(1)), dtype)
            beta_1_power = math_ops.pow(_scalar(self.beta_1, dtype), step)
            beta_2_power = math_ops.pow(_scalar(self.beta_2, dtype), step)
            alpha = self._rt_per_step[dtype] = math_ops.divide(
                math_ops.multiply(math_ops.sqrt(math_ops.subtract(1.0, beta_2_power)), self._lr(dtype)),
                math_ops.subtract(1.0, beta_1_power))
        return alpha

    def update_step(self, grad, variable, slots):
        m, v = slots
        alpha = self._step_size(variable.dtype)
        m = m.assign_add(math_ops.multiply(math_ops.subtract(grad, m), 1.0 - self.beta_1))
        v = v.assign_add(math_ops.multiply(math_ops.subtract(math_ops.square(grad), v), 1.0 - self.beta_2))
        variable.assign_sub(math_ops.divide(math_ops.multiply(m, alpha), math_ops.add(math_ops.sqrt(v),
                                                                                      self.epsilon)))


class AdamW(Adam):
    """Adam with decoupled weight decay (``v -= v * weight_decay * lr`` before each step)."""

    def __init__(self, learning_rate=0.001, weight_decay: float = 0.004, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str | None = None, **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a number")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name=name, weight_decay=weight_decay,
                         **kwargs)


class RMSprop(Optimizer):
    """``a = rho * a + (1 - rho) * g^2``; ``v -= lr * g / sqrt(a + epsilon)`` (centered: ``a - mean(g)^2``;
    with momentum the step goes through a velocity)."""

    def __init__(self, learning_rate=0.001, rho: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-7,
                 centered: bool = False, name: str | None = None, **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), centered
        self.slot_kinds = ("velocity",) + (("momentum",) if self.momentum > 0 else ()) + \
            (("average_gradient",) if centered else ())

    def update_step(self, grad, variable, slots):
        lr = self._lr(variable.dtype)
        velocity = slots[0]
        momentum = slots[1] if self.momentum > 0 else None
        average = slots[-1] if self.centered else None
        velocity = velocity.assign(math_ops.add(math_ops.multiply(velocity, self.rho),
                                                math_ops.multiply(math_ops.square(grad), 1.0 - self.rho)))
        if self.centered:
            average = average.assign(math_ops.add(math_ops.multiply(average, self.rho),
                                                  math_ops.multiply(grad, 1.0 - self.rho)))
            denominator = math_ops.add(math_ops.subtract(velocity, math_ops.square(average)), self.epsilon)
        else:
            denominator = math_ops.add(velocity, self.epsilon)
        increment = math_ops.divide(math_ops.multiply(grad, lr), math_ops.sqrt(denominator))
        if momentum is not None:
            momentum = momentum.assign(math_ops.add(math_ops.multiply(momentum, self.momentum), increment))
            variable.assign_sub(momentum)
        else:
            variable.assign_sub(increment)


class Adagrad(Optimizer):
    """``a += g^2``; ``v -= lr * g / sqrt(a + epsilon)`` (``a`` starts at ``initial_accumulator_value``)."""

    slot_kinds = ("accumulator",)

    def __init__(self, learning_rate=0.001, initial_accumulator_value: float = 0.1, epsilon: float = 1e-7,
                 name: str | None = None, **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)
        self.slot_initial = {"accumulator": self.initial_accumulator_value}

    def update_step(self, grad, variable, slots):
        (accumulator,) = slots
        accumulator = accumulator.assign_add(math_ops.square(grad))
        variable.assign_sub(math_ops.divide(math_ops.multiply(grad, self._lr(variable.dtype)),
                                            math_ops.sqrt(math_ops.add(accumulator, self.epsilon))))


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier) -> Optimizer:
    """An optimizer from a name (``"adam"``, ``"sgd"``, ``"rmsprop"`` ...: default settings) or an instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError(f"unknown optimizer {identifier!r}; known: {', '.join(sorted(_BY_NAME))}") from None
    raise TypeError(f"an optimizer must be a name or an Optimizer, got {identifier!r}")


__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "get", "schedules"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.optimizers")
