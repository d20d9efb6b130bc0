"""``rt.py_function`` and ``rt.numpy_function``: ops that run a Python function every time they run.

They are the escape hatch of the guides: eagerly, in a traced graph, and in native code
(through the callback that takes the GIL, as every op without a C emitter does) the
Python function runs on each call. The ops are stateful (never folded, merged or moved
out of a loop); ``PyFunc``/``EagerPyFunc`` also count as side effects (never pruned),
``PyFuncStateless`` (``numpy_function(..., stateful=False)``) may be pruned when unused.

Each output is checked against its declared dtype (and shape, when ``output_shapes``
declares one). An exception raised by the function reaches the caller as an
``rt.errors`` error whose message holds the Python traceback and whose ``original``
attribute is the exception itself (TensorFlow's ``InvalidArgumentError``/``UnknownError``).

Example:
    >>> import numpy as np
    >>> import runtime as rt
    >>> rt.numpy_function(np.sort, [rt.constant([3, 1, 2])], rt.int32).numpy().tolist()
    [1, 2, 3]
"""
from __future__ import annotations

import pickle
import sys
import traceback

import numpy as np

from runtime import context, dtypes, errors
from runtime.ops.gradients import differentiable_dtype, or_zeros
from runtime.ops.registry import OpDef, apply, convert, gradient, not_differentiable, register
from runtime.shapes import TensorShape, as_shape
from runtime.tensor import EagerTensor, Tensor, to_array


class PythonCallable:
    """A Python function as an op attribute (by identity).

    A built module pickles it as ``module`` + ``qualname`` and finds the function again in the
    imported module on its first call; functions without such a name (lambdas, nested functions)
    cannot be built ahead of time.
    """

    __slots__ = ("func", "module", "qualname", "name")

    def __init__(self, func):
        self.func = func
        self.module = getattr(func, "__module__", None)
        self.qualname = getattr(func, "__qualname__", None)
        self.name = getattr(func, "__name__", type(func).__name__)

    def get(self):
        if self.func is None:
            value = sys.modules.get(self.module)
            for part in (self.qualname or "").split("."):
                value = getattr(value, part, None)
            if value is None or not callable(value):
                raise errors.UnknownError(f"the function {self.module}.{self.qualname} of this py_function "
                                           "no longer exists")
            self.func = value
        return self.func

    def __getstate__(self):
        if isinstance(self.func, PyFunctionGradient):       # a gradient pickles the function it differentiates
            return {"gradient": self.func, "name": self.name}
        if self.module is None or not self.qualname or "<" in self.qualname:
            raise pickle.PicklingError(
                f"rt.py_function/numpy_function of {self.name!r}: only module-level functions can be built ahead "
                "of time (a lambda or nested function cannot be found again when the module is imported)")
        return {"module": self.module, "qualname": self.qualname, "name": self.name}

    def __setstate__(self, state):
        if "gradient" in state:
            self.func, self.module, self.qualname, self.name = state["gradient"], None, None, state["name"]
            return
        self.func = None
        self.module, self.qualname, self.name = state["module"], state["qualname"], state["name"]

    def __repr__(self):
        return f"<python function {self.name}>"


def _infer(specs, attrs):
    return [(dtype, shape.dims) for dtype, shape in zip(attrs["Tout"], attrs["output_shapes"])]


def _run(inputs, attrs, as_tensors: bool):
    target = attrs["func"]
    func = target.get()
    if as_tensors:
        args = [EagerTensor(a, dtype) for a, dtype in zip(inputs, attrs["Tin"])]
    else:
        args = [a[()] if a.dtype == object and a.ndim == 0 else a for a in inputs]
    try:
        with context.init_scope():
            result = func(*args)
    except Exception as e:  # noqa: BLE001 - every user exception is reported, with its traceback
        raise user_error(f"py_function '{target.name}'", e) from e
    return _check_outputs(target.name, result, attrs)


def user_error(what: str, error: Exception) -> errors.OpError:
    """The error the caller sees when the user's Python code (``what``) raised ``error``: its type, message
    and traceback (the user's frames) in the message, the exception itself as ``original``."""
    frames = traceback.format_tb(error.__traceback__.tb_next) if error.__traceback__ is not None else []
    text = f"{type(error).__name__}: {error}"
    if frames:
        text += "\nTraceback (most recent call last):\n" + "".join(frames)
    if isinstance(error, StopIteration):
        cls = errors.OutOfRangeError
    elif isinstance(error, errors.OpError):
        cls = type(error)
    elif isinstance(error, errors.KERNEL_ERRORS):
        cls = errors.InvalidArgumentError
    else:
        cls = errors.UnknownError
    result = cls(f"{what} raised {text.rstrip()}")
    result.original = error
    return result


def returned_values(result) -> list:
    """The outputs a function's return value gives, as TensorFlow reads it whatever ``Tout`` is: a list or tuple
    one per item, None none, any other value one (``Tout=[rt.float32]`` and a returned tensor: that tensor)."""
    if isinstance(result, (list, tuple)):
        return list(result)
    return [] if result is None else [result]


def _check_outputs(name: str, result, attrs) -> tuple:
    touts, shapes = attrs["Tout"], attrs["output_shapes"]
    values = returned_values(result)
    if len(values) != len(touts):
        raise errors.InvalidArgumentError(
            f"py_function '{name}' returned {len(values)} value(s) ({_describe(result)}); its Tout declares "
            f"{len(touts)}: {[str(d) for d in touts]}")
    out = []
    for index, (value, dtype, shape) in enumerate(zip(values, touts, shapes)):
        array = _as_output(name, index, value, dtype)
        if not shape.is_compatible_with(array.shape):
            raise errors.InvalidArgumentError(
                f"py_function '{name}' returned shape {tuple(array.shape)} as output {index}; its declared shape "
                f"is {shape}")
        out.append(array)
    return tuple(out)


def _as_output(name: str, index: int, value, dtype) -> np.ndarray:
    if isinstance(value, EagerTensor):
        if value.dtype is not dtype:
            raise errors.InvalidArgumentError(
                f"py_function '{name}' returned a {value.dtype} tensor as output {index}; expected {dtype}")
        return value._value
    if isinstance(value, Tensor):
        raise errors.InvalidArgumentError(f"py_function '{name}' returned the symbolic tensor {value} as output "
                                          f"{index}; return values computed eagerly")
    if isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).dtype.kind not in "SUO":
        array = np.asarray(value)
        if array.dtype != dtype.np:
            raise errors.InvalidArgumentError(
                f"py_function '{name}' returned a numpy array of dtype {array.dtype} as output {index}; "
                f"expected {dtype} (convert it with .astype)")
        return array
    try:
        return to_array(value, dtype)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(
            f"py_function '{name}' returned {_describe(value)} as output {index}, which is not a {dtype}: {e}"
        ) from None


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


register(OpDef("EagerPyFunc", "EagerPyFunc", _infer, lambda inputs, attrs: _run(inputs, attrs, True), None,
               stateful=True, side_effect=True, foldable=False))
register(OpDef("PyFunc", "PyFunc", _infer, lambda inputs, attrs: _run(inputs, attrs, False), None,
               stateful=True, side_effect=True, foldable=False))
register(OpDef("PyFuncStateless", "PyFuncStateless", _infer, lambda inputs, attrs: _run(inputs, attrs, False),
               None, foldable=False))
not_differentiable("PyFunc", "PyFuncStateless")     # numpy code is opaque to the reverse pass, as in TensorFlow

# rt.py_function's function runs on eager tensors, so, as TensorFlow does, its gradient differentiates what
# the function computes: the backward op is another py_function that runs the function again under a
# GradientTape (the tape class is registered here by ``runtime.backprop``, a higher layer).
_TAPE_CLASS: list = []


def register_gradient_tape(tape_class) -> None:
    """Let ``rt.py_function`` gradients record their function with ``tape_class`` (``rt.GradientTape``)."""
    _TAPE_CLASS[:] = [tape_class]


class PyFunctionGradient:
    """The backward function of a py_function: ``(*inputs, *output_grads) -> grads of the float inputs``."""

    def __init__(self, forward: PythonCallable, num_inputs: int, sources: tuple, weighted: tuple):
        self.forward, self.num_inputs, self.sources, self.weighted = forward, num_inputs, sources, weighted
        self.__name__ = f"{forward.name}_grad"

    def __call__(self, *args):
        inputs, upstream = list(args[:self.num_inputs]), list(args[self.num_inputs:])
        watched = [inputs[i] for i in self.sources]
        with _TAPE_CLASS[0]() as tape:
            tape.watch(watched)
            result = self.forward.get()(*inputs)
        outputs = returned_values(result)
        targets = [convert(outputs[k]) for k in self.weighted]
        return tape.gradient(targets, watched, output_gradients=upstream, unconnected_gradients="zero")


@gradient("EagerPyFunc")
def _py_function_grad(op, *grads):
    sources = tuple(i for i, x in enumerate(op.inputs) if differentiable_dtype(x.dtype))
    weighted = tuple(k for k, t in enumerate(op.outputs) if differentiable_dtype(t.dtype))
    if not sources or not weighted or not _TAPE_CLASS:
        return [None] * len(op.inputs)
    backward = PyFunctionGradient(op.attrs["func"], len(op.inputs), sources, weighted)
    feeds = list(op.inputs) + [or_zeros(grads[k], op.outputs[k]) for k in weighted]
    attrs = {"func": PythonCallable(backward), "Tin": tuple(x.dtype for x in feeds),
             "Tout": tuple(op.inputs[i].dtype for i in sources),
             "output_shapes": tuple(op.inputs[i].shape for i in sources)}
    results = apply("EagerPyFunc", feeds, attrs)
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    out = [None] * len(op.inputs)
    for i, g in zip(sources, results):
        out[i] = g
    return out


def _call(op_type: str, func, inp, Tout, output_shapes, name):
    if not callable(func):
        raise TypeError(f"{op_type}: func must be callable, got {type(func).__name__}")
    inputs = [convert(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]
    single = Tout is not None and not isinstance(Tout, (list, tuple))
    touts = () if Tout is None else tuple(dtypes.as_dtype(d) for d in ((Tout,) if single else Tout))
    if output_shapes is None:
        shapes = tuple(TensorShape(None) for _ in touts)
    else:
        listed = [output_shapes] if single else list(output_shapes)
        if len(listed) != len(touts):
            raise ValueError(f"{op_type}: {len(listed)} output_shapes for {len(touts)} outputs")
        shapes = tuple(as_shape(s) for s in listed)
    attrs = {"func": PythonCallable(func), "Tin": tuple(x.dtype for x in inputs), "Tout": touts,
             "output_shapes": shapes}
    result = apply(op_type, inputs, attrs, name=name)
    if Tout is None:
        return None
    if single:
        return result
    return [] if result is None else list(result) if isinstance(result, tuple) else [result]


def py_function(func, inp, Tout, name=None, output_shapes=None):
    """Run ``func`` on eager tensors every time the op runs (eagerly, in graphs and in native code).

    Args:
        func: a Python function taking ``len(inp)`` ``rt.Tensor``s and returning values of ``Tout``: a list or
            tuple of them, or one value (for one output, also when ``Tout`` is a list of one), or None.
        inp: the input tensors (a list, or one tensor).
        Tout: one dtype (one output tensor), a list of dtypes (a list of tensors) or None (no output).
        name: the op's name.
        output_shapes: (an rt extension) the outputs' shapes, checked on every call; unknown by default.

    Returns:
        A tensor, a list of tensors, or None, following ``Tout``.

    Example:
        >>> import runtime as rt
        >>> float(rt.py_function(lambda x: x * 2, [rt.constant(1.5)], rt.float32))
        3.0
    """
    return _call("EagerPyFunc", func, inp, Tout, output_shapes, name)


def numpy_function(func, inp, Tout, stateful=True, name=None, output_shapes=None):
    """Like ``py_function``, but ``func`` takes and returns numpy arrays.

    ``stateful=False`` lets the optimizer drop the op when its outputs are unused.

    Example:
        >>> import numpy as np
        >>> import runtime as rt
        >>> rt.numpy_function(np.negative, [rt.constant([1, 2])], rt.int32).numpy().tolist()
        [-1, -2]
    """
    return _call("PyFunc" if stateful else "PyFuncStateless", func, inp, Tout, output_shapes, name)
