"""Running an op: ``apply`` runs it eagerly or records it in the graph being traced; argument conversion.

The op table itself (``OpDef``, ``register``, ``get_opdef`` ...) is ``runtime.ops.op_def``, below the graph
IR; its names are re-exported here, where the op modules (``*_ops.py``) import them from.

Example:
    >>> print(apply("AddV2", [convert(1), convert(2)]))
    rt.Tensor(3, shape=(), dtype=int32)
"""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from runtime import config, context, dtypes, errors
from runtime.graph import Graph
from runtime.ops.op_def import (OpDef, Reduction, Spec, all_opdefs, c_expression, constant_value,  # noqa: F401
                                get_opdef, gradient, not_differentiable, register, specs_of)
from runtime.tensor import EagerTensor, Tensor, to_array


def argument_error(message: str, kind: type = ValueError) -> Exception:
    """The error for a bad argument to an op: ``kind`` (ValueError or TypeError) while tracing, as TensorFlow
    raises it there; eagerly also an ``rt.errors.InvalidArgumentError``, as TensorFlow raises it eagerly."""
    if context.current_graph() is not None:
        return kind(message)
    return (errors.InvalidArgumentTypeError if issubclass(kind, TypeError) else errors.InvalidArgumentValueError)(
        message)


def apply(op_type: str, inputs: list, attrs: dict | None = None, name: str | None = None):
    """Run ``op_type`` on ``inputs`` (tensors) eagerly, or add it to the graph being traced.

    Returns a single tensor for one-output ops, else a tuple.
    """
    opdef = get_opdef(op_type)
    attrs = attrs or {}
    graph = context.current_graph()
    if graph is None:
        for t in inputs:
            if not isinstance(t, EagerTensor):
                if isinstance(t, Tensor):
                    raise TypeError(
                        f"{t} is a symbolic tensor of a traced function used outside of it "
                        f"(in {op_type}): a tensor leaked out of rt.function. Return it instead.")
                raise TypeError(f"{op_type}: expected tensors, got {type(t).__name__}")
        try:
            out_specs = opdef.infer(specs_of(inputs), attrs) if opdef.infer is not None else None
        except errors.OpError:
            raise
        except (TypeError, ValueError) as e:    # eagerly, TensorFlow reports bad arguments as InvalidArgumentError
            raise argument_error(str(e), TypeError if isinstance(e, TypeError) else ValueError) from None
        try:
            results = opdef.kernel([t._value for t in inputs], attrs)
        except errors.OpError:
            raise
        except errors.KERNEL_ERRORS as e:
            raise errors.InvalidArgumentError(f"{op_type}: {e}") from None
        if out_specs is None:
            out = tuple(EagerTensor(np.asarray(r)) for r in results)
        else:
            out = tuple(EagerTensor(_as_dtype_array(r, dt), dt) for r, (dt, _) in zip(results, out_specs))
        if context.tapes_active():
            context.record_operation(EagerOperation(opdef, tuple(inputs), attrs, out))
        if config.LOG_DEVICE_PLACEMENT:
            print(f"Executing op {op_type} in device {config.CPU_DEVICE}", file=sys.stderr)
    else:
        out = graph.create_op(opdef, inputs, attrs, name=name).outputs      # (tapes hear of it there)
    if len(out) == 1:
        return out[0]
    if not out:
        return None
    return out


class EagerOperation:
    """An op that ran eagerly, as a gradient tape records it: the ``Operation`` fields gradients read."""

    __slots__ = ("opdef", "type", "inputs", "attrs", "outputs")
    graph = None
    name = "eager"

    def __init__(self, opdef: OpDef, inputs: tuple, attrs: dict, outputs: tuple):
        self.opdef, self.type, self.inputs, self.attrs, self.outputs = opdef, opdef.type, inputs, attrs, outputs

    def subgraphs(self) -> list:
        return [v for v in self.attrs.values() if isinstance(v, Graph)]

    def __repr__(self):
        return f"<eager op {self.type}>"


def _as_dtype_array(value, dtype: dtypes.DType) -> np.ndarray:
    if dtype is dtypes.variant:
        return value
    if dtype is dtypes.string:
        return value if isinstance(value, np.ndarray) and value.dtype == object else np.asarray(value, dtype=object)
    array = np.asarray(value)
    if array.dtype != dtype.np:
        array = array.astype(dtype.np)
    return array


# ---------------------------------------------------------------------------
# Argument conversion.

_CONVERSIONS: dict[type, Callable] = {}
_tensor_like: tuple[type, ...] = (Tensor,)


def register_tensor_conversion_function(base_type: type, conversion: Callable) -> None:
    """Let values of ``base_type`` stand wherever a tensor does (``tf.register_tensor_conversion_function``).

    ``conversion(value)`` gives the tensor that ``value`` stands for; such values have a ``dtype``, as
    tensors do. ``rt.Variable`` registers here (a read of its value), so the op layer needs no variables.
    """
    global _tensor_like
    _CONVERSIONS[base_type] = conversion
    _tensor_like = (Tensor, *_CONVERSIONS)


def is_tensor_like(value) -> bool:
    """True for a tensor and for a value of a registered type (a variable)."""
    return isinstance(value, _tensor_like)


def _conversion_of(value) -> Callable:
    for base in type(value).__mro__:
        conversion = _CONVERSIONS.get(base)
        if conversion is not None:
            return conversion
    raise TypeError(f"no tensor conversion is registered for {type(value).__name__}")


def convert(value, dtype: dtypes.DType | None = None, name: str = "value"):
    """``value`` as a tensor (eager unless already symbolic), of ``dtype`` when given."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtype:
            raise TypeError(f"{name}: expected a {dtype} tensor, got {value.dtype} ({value})")
        return value
    if isinstance(value, _tensor_like):
        return convert(_conversion_of(value)(value), dtype, name)
    if isinstance(value, (list, tuple)) and any(_is_tensor_like(v) for v in value):
        return _pack_list(value, dtype, name)
    array = to_array(value, dtype)
    return EagerTensor(array, dtype)


def _is_tensor_like(value) -> bool:
    return isinstance(value, _tensor_like) or (
        isinstance(value, (list, tuple)) and any(_is_tensor_like(v) for v in value))


def _first_tensor_dtype(values) -> dtypes.DType | None:
    """The dtype of the first tensor in a nested list, depth first."""
    for v in values:
        if isinstance(v, _tensor_like):
            return v.dtype
        if isinstance(v, (list, tuple)):
            found = _first_tensor_dtype(v)
            if found is not None:
                return found
    return None


def _pack_list(value, dtype: dtypes.DType | None, name: str):
    """A (nested) list holding tensors as one tensor, as TensorFlow packs it: of ``dtype`` when one is asked for,
    every tensor of another dtype cast to it (``tf.concat([int32 tensor, [int64 scalar]], 0)`` is int32), else
    of the first tensor's dtype, where a tensor of another dtype is a TypeError; Python values take the dtype
    by the usual rules (``[int32 tensor, 3.5]`` is an error)."""
    inferred = _first_tensor_dtype(value)
    cast = dtype is not None and dtype is not inferred
    dtype = dtype or inferred

    def pack(items):
        elements = []
        for v in items:
            if isinstance(v, _tensor_like):
                t = convert(v)
                if t.dtype is not dtype:
                    if not cast:
                        raise TypeError(f"{name}: cannot convert a list holding a {t.dtype} tensor to {dtype} "
                                        f"({t}); use rt.cast")
                    t = apply("Cast", [t], {"DstT": dtype})
            elif isinstance(v, (list, tuple)) and _is_tensor_like(v):
                t = pack(v)
            else:
                t = convert(v, dtype, name)
            elements.append(t)
        return apply("Pack", elements, {"axis": 0})

    return pack(value)


def convert_same(op_name: str, values: list, dtype: dtypes.DType | None = None, list_input: bool = False) -> list:
    """Convert values that must share one dtype: tensors fix it, Python values adopt it.

    The first tensor fixes it; among separate inputs (not the items of one ``list_input``, as ``concat``'s), a
    list holding tensors that comes before fixes it too, as TensorFlow's first input does (``rt.add([int64
    tensor], int32 tensor)`` is a TypeError, ``rt.add(int32 tensor, [int64 tensor])`` int32: a list holding
    tensors converts to the dtype as TensorFlow converts it, see ``_pack_list``). With no tensor among them, the
    first value converts by the default rules and the others adopt its dtype (``rt.maximum(0., [1, -1])`` is
    float32). Two tensors of different dtypes are a ``TypeError`` naming the op (no implicit promotion).
    """
    if dtype is None:
        for v in values:
            if isinstance(v, _tensor_like):
                dtype = v.dtype
                break
            if not list_input and isinstance(v, (list, tuple)) and _is_tensor_like(v):
                dtype = _first_tensor_dtype(v)
                break
    out = []
    for i, v in enumerate(values):
        if dtype is None:
            t = convert(v)
            dtype = t.dtype
        else:
            try:
                t = convert(v, dtype)
            except TypeError as e:
                if isinstance(v, _tensor_like):
                    others = ", ".join(str(getattr(x, "dtype", type(x).__name__)) for x in values)
                    raise argument_error(
                        f"{op_name}: all inputs must have the same dtype, got {others} "
                        f"(no implicit promotion between tensors; use rt.cast)", TypeError) from None
                raise argument_error(f"{op_name}: {e}", TypeError) from None
        out.append(t)
    return out
