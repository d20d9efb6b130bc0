"""The op table: one ``OpDef`` per op type, registered once, looked up by name.

Each ``OpDef`` gives the dtype/shape rule, the eager numpy kernel, the graph node type and what
native code needs to know to compute one output element: a scalar C expression (elementwise ops and
generators), a combiner (reductions) or an index-map family (views). The table sits below the graph
IR, which looks ops up by name (placeholders, constants, unpickling) and runs their inference rules;
``runtime.ops.registry`` adds running and recording ops, and the ``*_ops.py`` modules define them.

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

from runtime import dtypes, errors
from runtime.shapes import TensorShape
from runtime.tensor import EagerTensor


class Spec(NamedTuple):
    """What inference sees of an input: dtype, shape and, when known while tracing, its value; ``partial``: for
    a vector of sizes whose value is only partly known (``[rt.shape(x)[0], 1]``), its elements, None where
    unknown (TensorFlow's ``constant_value_as_shape``)."""
    dtype: dtypes.DType
    shape: TensorShape
    const: Any = None
    partial: tuple | None = None


@dataclass(frozen=True)
class Reduction:
    """What a reduction op computes over the reduced axes.

    ``combine`` is a C expression of the accumulator ``{0}`` and one element ``{1}`` (like ``c_expr``);
    ``omp`` the OpenMP reduction operator for the same combination; ``identity`` the start value
    (``"0"``, ``"1"``), or None for max and min, which start from the dtype's lowest / highest value (what
    they give over no element, as in TF: -inf for a float max); ``mean`` divides the total by the number of
    elements reduced.
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
    if opdef.type == "Cast" and output_dtype.is_bool and not input_dtypes[0].is_bool:
        # a cast to bool is whether the value is nonzero (rt_bool is uint8_t: C's conversion would make 0.5,
        # 256 and NaN false)
        return f"(({output_dtype.c_type})(({text}) != 0))"
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

    Example (``math_ops.py``)::

        @gradient("Neg")
        def _neg_grad(op, grad):
            return [negative(grad)]

    which the table then holds:

        >>> get_opdef("Neg").grad.__name__
        '_neg_grad'
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
# What inference sees of its inputs.

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


def _known_size(tensor) -> int | None:
    """The value of a scalar integer ``tensor`` when it is known while tracing: a constant, or one dim of a
    ``Shape`` whose input has that dim static (``rt.shape(x)[1]`` of an [None, 5] x)."""
    value = constant_value(tensor)
    if value is not None:
        return int(value) if np.ndim(value) == 0 else None
    op = getattr(tensor, "op", None)
    if op is None:
        return None
    if op.type in ("Identity", "Cast") and op.inputs[0].dtype.is_integer:
        return _known_size(op.inputs[0])
    if op.type == "StridedSlice" and len(op.attrs["spec"]) == 1 and op.attrs["spec"][0][0] == "i":
        dims = partial_value(op.inputs[0])
        k = op.attrs["spec"][0][1]
        if dims is not None and -len(dims) <= k < len(dims):
            return dims[k]
    return None


def partial_value(tensor) -> tuple | None:
    """The elements of an integer vector known while tracing (None where unknown): a ``Shape`` of a tensor of
    known rank, a ``Pack`` of scalars, a ``ConcatV2`` of such vectors; None when even its length is unknown."""
    if not tensor.dtype.is_integer or tensor.shape.rank != 1:
        return None
    value = constant_value(tensor)
    if value is not None:
        return tuple(int(v) for v in np.asarray(value).reshape(-1))
    op = getattr(tensor, "op", None)
    if op is None:
        return None
    if op.type == "Shape" and op.inputs[0].shape.rank is not None:
        return tuple(op.inputs[0].shape.dims)
    if op.type in ("Identity", "Cast") and op.inputs[0].dtype.is_integer:
        return partial_value(op.inputs[0])
    if op.type == "Pack" and op.attrs.get("axis", 0) == 0 and all(t.shape.rank == 0 for t in op.inputs):
        return tuple(_known_size(t) for t in op.inputs)
    if op.type == "ConcatV2" and op.attrs.get("axis") == 0:
        parts = [partial_value(t) for t in op.inputs]
        if all(p is not None for p in parts):
            return tuple(d for p in parts for d in p)
    if op.type == "SelectV2" and tensor.shape[0] is not None:
        # a mean's gradient: where(reduced axes, 1, shape), its condition a constant
        cond = constant_value(op.inputs[0])
        n = tensor.shape[0]
        if cond is not None and np.ndim(cond) <= 1 and np.size(cond) in (1, n):
            picks = np.broadcast_to(np.asarray(cond, bool), (n,))
            sides = [_elements(t, n) for t in op.inputs[1:]]
            if all(side is not None for side in sides):
                return tuple(sides[0][i] if pick else sides[1][i] for i, pick in enumerate(picks))
    return None


def _elements(tensor, n: int) -> tuple | None:
    """``partial_value`` of a vector of ``n`` elements, or of a scalar broadcast to ``n``."""
    if tensor.shape.rank == 0 and tensor.dtype.is_integer:
        return (_known_size(tensor),) * n
    value = partial_value(tensor)
    return value if value is not None and len(value) == n else None


def specs_of(tensors) -> list[Spec]:
    out = []
    for t in tensors:
        const = constant_value(t)
        partial = partial_value(t) if const is None else None
        out.append(Spec(t.dtype, t.shape, const, partial if partial is not None and any(
            d is not None for d in partial) else None))
    return out
