"""One table of ops. Each ``OpDef`` gives the dtype/shape rule, the eager numpy kernel, the graph
node type and what native code needs to know to compute one output element: a scalar C expression
(elementwise ops and generators), a combiner (reductions) or an index-map family (views). ``apply``
runs an op eagerly or records it in the graph being traced.

Example:
    >>> get_opdef("AddV2").default_name
    'add'
    >>> c_expression(get_opdef("Maximum"), ["a", "b"], [dtypes.float32] * 2, dtypes.float32)
    '((float)rt_max_float32(a, b))'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from runtime import context, dtypes, errors
from runtime.graph import Graph
from runtime.shapes import TensorShape
from runtime.tensor import EagerTensor, Tensor, to_array


class Spec(NamedTuple):
    """What inference sees of an input: dtype, shape and, when known while tracing, its value."""
    dtype: dtypes.DType
    shape: TensorShape
    const: Any = None


@dataclass(frozen=True)
class Reduction:
    """What a reduction op computes over the reduced axes.

    ``combine`` is a C expression of the accumulator ``{0}`` and one element ``{1}`` (like ``c_expr``);
    ``omp`` the OpenMP reduction operator for the same combination; ``identity`` the start value
    (``"0"``, ``"1"``), or None when an empty reduction is an error (max, min); ``mean`` divides the total
    by the number of elements reduced.
    """
    combine: str
    omp: str
    identity: str | None
    mean: bool = False


@dataclass
class OpDef:
    """An op: graph type name, default node name, rules and kernels (see module docstring)."""
    type: str
    default_name: str
    infer: Callable | None                # (list[Spec], attrs) -> list[(dtype, dims)]
    kernel: Callable | None               # (list[np.ndarray], attrs) -> tuple[np.ndarray, ...]
    num_inputs: int | None = None         # None: variadic
    stateful: bool = False                # ordered with other stateful ops of its graph
    side_effect: bool = False             # runs even when no output is used (print, assert, assign)
    dynamic_infer: bool = False           # inference uses input values (verify only checks arity)
    c_expr: str | None = None             # one output element in C: operands {0}, {1} ..., index {i0} ..., type {T}
    generator: bool = False               # c_expr computes an element from its index and scalar inputs (no broadcast)
    reduction: Reduction | None = None    # a reduction over attrs["axis"] (attrs["keepdims"])
    view: str | None = None               # index-map family: an output element is an input element (no arithmetic)
    expand: Callable | None = None        # composite op: (inputs, attrs) -> outputs built from other ops (graph),
                                          # or None when this instance stays whole
    foldable: bool = True                 # constant folding may evaluate it at build time
    grad: Callable | None = None          # (op, *output_grads) -> input grads; set by @gradient beside the op
    differentiable: bool = True           # False: explicitly has no gradient (the registry walk skips it)

    @property
    def elementwise(self) -> bool:
        """True when each output element is ``c_expr`` of the broadcast input elements at the same index."""
        return self.c_expr is not None and not self.generator


_HELPER = re.compile(r"\brt_(\w+)\(")


def c_expression(opdef: OpDef, args: list[str], input_dtypes: list, output_dtype, index: list[str] = ()) -> str:
    """One output element of an elementwise op or generator, in C: the one expansion of ``c_expr``.

    ``{0}``, ``{1}`` ... become ``args``, ``{i0}`` ... the output index, ``{T}`` the output C type, and the
    scalar helpers ``rt_f(`` of ``rt_kernels.h`` get the operands' dtype suffix (``rt_max_float32(``).
    The result is cast to the output C type.
    """
    text = opdef.c_expr
    suffix = (input_dtypes[-1] if input_dtypes else output_dtype).name
    text = _HELPER.sub(lambda m: f"rt_{m.group(1)}_{suffix}(", text)
    text = text.replace("{T}", output_dtype.c_type)
    for i, a in enumerate(index):
        text = text.replace("{i" + str(i) + "}", a)
    for i, a in enumerate(args):
        text = text.replace("{" + str(i) + "}", a)
    return f"(({output_dtype.c_type}){text})"


_REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.type in _REGISTRY:
        raise ValueError(f"op {opdef.type} registered twice")
    _REGISTRY[opdef.type] = opdef
    return opdef


def get_opdef(op_type: str) -> OpDef:
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise errors.UnimplementedError(f"No op named {op_type!r} is registered") from None


def all_opdefs() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def gradient(*op_types: str) -> Callable:
    """Register the decorated function as the gradient of ``op_types`` (``tf.RegisterGradient``).

    The function takes the forward op (an ``Operation``, or a recorded eager op with the same
    ``type``/``inputs``/``outputs``/``attrs``) and one gradient per output (None for an output
    nothing depends on), and returns one gradient per input (None where there is none). It builds
    its result with the public op API, so it serves eager tapes and graph tracing alike.

    Example:
        >>> @gradient("Neg")                      # doctest: +SKIP
        ... def _neg_grad(op, grad):
        ...     return [negative(grad)]
    """
    def register_grad(fn: Callable) -> Callable:
        for op_type in op_types:
            opdef = get_opdef(op_type)
            if opdef.grad is not None:
                raise ValueError(f"gradient of {op_type} registered twice")
            opdef.grad = fn
        return fn
    return register_grad


def not_differentiable(*op_types: str) -> None:
    """Mark ops that have no gradient (``tf.no_gradient``): gradients stop at them, silently."""
    for op_type in op_types:
        get_opdef(op_type).differentiable = False


# ---------------------------------------------------------------------------
# Running or recording an op.

def constant_value(tensor) -> np.ndarray | None:
    """The value of ``tensor`` if it is known without running a graph (eager, Const, static Shape)."""
    if isinstance(tensor, EagerTensor):
        return tensor._value
    op = getattr(tensor, "op", None)
    if op is None:
        return None
    if op.type == "Const":
        return op.attrs["value"].array
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.array(op.inputs[0].shape.dims, dtype=op.outputs[0].dtype.np)
    if op.type == "Identity":
        return constant_value(op.inputs[0])
    if op.type == "Pack":
        parts = [constant_value(t) for t in op.inputs]
        if all(p is not None for p in parts):
            return np.stack(parts, axis=op.attrs["axis"])
    return None


def specs_of(tensors) -> list[Spec]:
    return [Spec(t.dtype, t.shape, constant_value(t)) for t in tensors]


def apply(op_type: str, inputs: list, attrs: dict | None = None, name: str | None = None):
    """Run ``op_type`` on ``inputs`` (tensors) eagerly, or add it to the graph being traced.

    Returns a single tensor for one-output ops, else a tuple.
    """
    opdef = _REGISTRY[op_type]
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
        out_specs = opdef.infer(specs_of(inputs), attrs) if opdef.infer is not None else None
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

def convert(value, dtype: dtypes.DType | None = None, name: str = "value"):
    """``value`` as a tensor (eager unless already symbolic), of ``dtype`` when given."""
    from runtime.variables import Variable
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtype:
            raise TypeError(f"{name}: expected a {dtype} tensor, got {value.dtype} ({value})")
        return value
    if hasattr(value, "__rt_tensor__"):
        return convert(value.__rt_tensor__(), dtype, name)
    if isinstance(value, (list, tuple)) and any(_is_tensor_like(v) for v in value):
        from runtime.ops import array_ops
        return array_ops.stack([convert(v, dtype, name) for v in value])
    array = to_array(value, dtype)
    return EagerTensor(array, dtype)


def _is_tensor_like(value) -> bool:
    from runtime.variables import Variable
    return isinstance(value, (Tensor, Variable)) or (
        isinstance(value, (list, tuple)) and any(_is_tensor_like(v) for v in value))


def convert_same(op_name: str, values: list, dtype: dtypes.DType | None = None) -> list:
    """Convert values that must share one dtype: tensors fix it, Python values adopt it.

    With no tensor among them, the first value converts by the default rules and the
    others adopt its dtype (``rt.maximum(0., [1, -1])`` is float32). Two tensors of
    different dtypes are a ``TypeError`` naming the op (no implicit promotion).
    """
    from runtime.variables import Variable
    if dtype is None:
        for v in values:
            if isinstance(v, (Tensor, Variable)):
                dtype = v.dtype
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
                if isinstance(v, (Tensor, Variable)):
                    others = ", ".join(str(getattr(x, "dtype", type(x).__name__)) for x in values)
                    raise TypeError(
                        f"{op_name}: all inputs must have the same dtype, got {others} "
                        f"(no implicit promotion between tensors; use rt.cast)") from None
                raise TypeError(f"{op_name}: {e}") from None
        out.append(t)
    return out
