"""``rt.Variable``: mutable state shared by eager code and every graph that uses it.

Graphs capture a variable by reference: ``ReadVariableOp`` reads its storage and
``Assign*VariableOp`` write it when the graph runs, in program order.
"""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from runtime import context, dtypes, errors
from runtime.ops.gradients import report_variable_gradient
from runtime.ops.registry import (OpDef, apply, argument_error, convert, gradient, not_differentiable, register,
                                  register_tensor_conversion_function)
from runtime.tensor import EagerTensor, is_symbolic

_ids = itertools.count()


class _Handle:
    """An op attribute naming one variable (hashable by identity, weakly held).

    A built extension pickles handles with ``path`` (where the variable is found from
    the module's globals, e.g. ``"model.v"``); importing it binds them again. A variable
    that a trace created (an optimizer's slot, made by the first step) also keeps its
    initial value and trainability in ``created``: the built module creates it again at
    that path on its first call, as the first step did.
    """

    __slots__ = ("ref", "name", "path", "created", "__weakref__")

    def __init__(self, variable):
        self.ref = weakref.ref(variable)
        self.name = variable.name
        self.path = None
        self.created = None

    def get(self) -> "Variable":
        variable = self.ref() if self.ref is not None else None
        if variable is None:
            raise RuntimeError(f"The variable {self.name!r} used by this graph no longer exists"
                               + (f" (expected at {self.path!r})" if self.path else ""))
        return variable

    def bind(self, variable) -> None:
        self.ref = weakref.ref(variable)

    def __getstate__(self):
        return {"name": self.name, "path": self.path, "created": self.created}

    def __setstate__(self, state):
        self.ref = None
        self.name = state["name"]
        self.path = state["path"]
        self.created = state.get("created")

    def __repr__(self):
        return f"<var {self.name}>"


class Variable:
    """A mutable tensor: ``assign``, ``assign_add``, ``assign_sub``, ``read_value``, ``numpy``.

    ``constraint`` (a callable, as in TensorFlow and Keras) is kept for the optimizers: after a step updated the
    variable, a Keras optimizer assigns it ``constraint(variable)``.

    Example:
        >>> v = Variable(1.0)
        >>> _ = v.assign_add(2.0)
        >>> float(v.numpy())
        3.0
    """

    constraint = None

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None, shape=None, constraint=None):
        if constraint is not None and not callable(constraint):
            label = f" {name!r}" if name else ""
            raise ValueError(f"The `constraint` argument of rt.Variable{label} must be a callable (such as an "
                             f"rt.keras.constraints.Constraint) or None, got {constraint!r}")
        if callable(initial_value):
            initial_value = initial_value()
        graph = context.current_graph()
        if is_symbolic(initial_value):      # made by ops of the trace: computed now, as TF lifts it to init_scope
            initial_value = _lifted_value(initial_value, name)
        with context.init_scope():
            value = convert(initial_value, dtypes.as_dtype(dtype) if dtype is not None else None)
        self.dtype = value.dtype
        self._value = np.array(value._value, copy=True)
        self.shape = value.shape
        self.name = name or f"Variable{next(_ids) or ''}"
        self.trainable = trainable
        self.constraint = constraint
        self.handle = _Handle(self)
        self.lock = threading.Lock()
        if graph is not None:
            self.handle.created = {"value": self._value.copy(), "trainable": trainable}
            context.note_variable_created(self)

    # -- reading ------------------------------------------------------------
    def read_value(self):
        if context.current_graph() is None and not context.tapes_active():
            return EagerTensor(self._value.copy(), self.dtype)
        return apply("ReadVariableOp", [], {"variable": self.handle, "dtype": self.dtype, "shape": self.shape})

    value = read_value

    def snapshot(self) -> np.ndarray:
        """The current value as an array that stays as it is: the array becomes read-only, and a later update
        writes a new one (assignments replace the array; native code copies a read-only one before writing)."""
        storage = self._value
        storage.flags.writeable = False
        return storage

    def numpy(self):
        return self.read_value().numpy()

    # -- writing ------------------------------------------------------------
    def _update(self, op_type, value):
        """``op_type`` with a value of the variable's own shape, as TensorFlow requires in every mode (an update
        never broadcasts): a shape that differs is an error when it is known, eagerly and while tracing, and
        when the graph runs otherwise."""
        value = convert(value, self.dtype, f"{self.name}.{op_type}")
        if not self.shape.is_compatible_with(value.shape):
            raise argument_error(update_shape_error(self.name, op_type_names[op_type], self.shape, value.shape))
        if context.current_graph() is None:
            self._value = np.array(_UPDATES[op_type](self._value, value._value), dtype=self.dtype.np)
            return self
        return apply(op_type_names[op_type], [value], {"variable": self.handle, "dtype": self.dtype,
                                                       "shape": self.shape})

    def assign(self, value, read_value=True):
        return self._update("assign", value)

    def assign_add(self, delta, read_value=True):
        return self._update("assign_add", delta)

    def assign_sub(self, delta, read_value=True):
        return self._update("assign_sub", delta)

    # -- tensor-like behaviour ------------------------------------------------
    @property
    def ndim(self):
        return self.shape.rank

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_value", "dtype", "shape", "handle", "name"):
            raise AttributeError(name)
        return getattr(self.read_value(), name)

    def __str__(self):
        return f"<rt.Variable '{self.name}' shape={self.shape} dtype={self.dtype}, numpy={self._value}>"

    __repr__ = __str__

    def __bool__(self):
        return bool(self.read_value())

    def __int__(self):
        return int(self.read_value())

    def __float__(self):
        return float(self.read_value())

    def __index__(self):
        return self.read_value().__index__()

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._value, dtype=dtype)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self.read_value() == other

    def __ne__(self, other):
        return self.read_value() != other


def _lifted_value(tensor, name) -> EagerTensor:
    """The value of a symbolic initial value, computed now with the numpy kernels of the ops it is made of.

    A Variable created while a Function traces (on its first call) may start from ops of the trace that do not
    depend on the function's arguments (``rt.Variable(rt.random.normal([n, m]))``): TensorFlow lifts them out
    of the graph into the init scope; here they run eagerly once (random ops draw from their generators as they
    would have). A value that depends on an argument has no value before the call: a clear ``ValueError``.
    """
    needed: dict[int, object] = {}
    stack = [tensor.op]
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        if op.type == "Placeholder":
            label = f" {name!r}" if name else ""
            raise ValueError(
                f"The initial value of the rt.Variable{label} created inside rt.function depends on the function's "
                f"input {op.name!r}; it must be computable before the call (from shapes, constants, random ops "
                f"or other variables): e.g. rt.Variable(rt.zeros(x.shape)) rather than rt.Variable(x * 2), or "
                "create the variable outside the function")
        needed[id(op)] = op
        stack.extend(t.op for t in op.inputs)
    order = {id(op): i for i, op in enumerate(tensor.graph.operations)}
    values: dict[int, np.ndarray] = {}
    for op in sorted(needed.values(), key=lambda op: order.get(id(op), -1)):
        results = op.opdef.kernel([values[id(t)] for t in op.inputs], op.attrs)
        for out, result in zip(op.outputs, results):
            values[id(out)] = np.asarray(result, dtype=out.dtype.np) if out.dtype.np is not None else result
    return EagerTensor(values[id(tensor)], tensor.dtype)


def _binary(name):
    def method(self, *args):
        return getattr(self.read_value(), name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
              "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__",
              "__getitem__", "__and__", "__or__", "__invert__"):
    setattr(Variable, _name, _binary(_name))

_UPDATES = {
    "assign": lambda old, new: new,
    "assign_add": lambda old, new: old + new,
    "assign_sub": lambda old, new: old - new,
}
op_type_names = {"assign": "AssignVariableOp", "assign_add": "AssignAddVariableOp",
                 "assign_sub": "AssignSubVariableOp"}
_METHODS = {op: method for method, op in op_type_names.items()}


def update_shape_error(name: str, op_type: str, variable_shape, value_shape) -> str:
    return (f"Variable '{name}': cannot {_METHODS[op_type]} a value of shape {value_shape} to a variable of shape "
            f"{variable_shape}; the shapes must be equal (a variable update does not broadcast)")


def _var_infer(specs, attrs):
    return [(attrs["dtype"], attrs["shape"].dims)]


def _read_kernel(inputs, attrs):
    variable = attrs["variable"].get()
    value = context.variable_value(variable)
    return ((variable._value if value is None else value).copy(),)


def _update_kernel(op_type, update):
    def run(inputs, attrs):
        variable = attrs["variable"].get()
        with variable.lock:
            if inputs[0].shape != variable._value.shape:
                raise errors.InvalidArgumentError(update_shape_error(variable.name, op_type, variable._value.shape,
                                                                     inputs[0].shape))
            new = np.asarray(update(variable._value, inputs[0]), dtype=variable.dtype.np)
            variable._value = new
            return (new.copy(),)
    return run


def _update_rule(op_type):
    def infer(specs, attrs):
        if not attrs["shape"].is_compatible_with(specs[0].shape):
            raise ValueError(update_shape_error(attrs["variable"].name, op_type, attrs["shape"], specs[0].shape))
        return _var_infer(specs, attrs)
    return infer


register(OpDef("ReadVariableOp", "ReadVariableOp", _var_infer, _read_kernel, 0, stateful=True, foldable=False))
for _kind, _type in op_type_names.items():
    register(OpDef(_type, _type, _update_rule(_type), _update_kernel(_type, _UPDATES[_kind]), 1, stateful=True,
                   side_effect=True, foldable=False))


@gradient("ReadVariableOp")
def _read_grad(op, grad):
    report_variable_gradient(op.attrs["variable"], grad)
    return []


not_differentiable(*op_type_names.values())
register_tensor_conversion_function(Variable, Variable.read_value)
