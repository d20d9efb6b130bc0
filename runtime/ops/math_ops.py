"""Elementwise math, comparisons, logic, matmul and reductions."""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops.registry import OpDef, Reduction, apply, convert, convert_same, register
from runtime.shapes import TensorShape

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8)
SIGNED = FLOATS + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
NUMERIC = FLOATS + INTS
BOOL = (dtypes.bool_,)


def broadcast_shapes(op_type: str, *shapes: TensorShape) -> tuple | None:
    """Static broadcast of partial shapes (None dims stay None unless the other side fixes them)."""
    if any(s.dims is None for s in shapes):
        return None
    rank = max(len(s.dims) for s in shapes)
    out = []
    for axis in range(rank):
        dims = [s.dims[axis - rank + len(s.dims)] for s in shapes if axis - rank + len(s.dims) >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"{op_type}: incompatible shapes for broadcasting: "
                             + " and ".join(str(s) for s in shapes))
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _check_dtype(op_type: str, dtype, allowed) -> None:
    if dtype not in allowed:
        raise TypeError(f"{op_type} does not support dtype {dtype} "
                        f"(supported: {', '.join(d.name for d in allowed)})")


def _elementwise_infer(op_type, allowed, out_dtype=None):
    def infer(specs, attrs):
        first = specs[0].dtype
        for s in specs[1:]:
            if s.dtype is not first:
                raise TypeError(f"{op_type}: all inputs must have the same dtype, got "
                                f"{', '.join(str(x.dtype) for x in specs)} (no implicit promotion; use rt.cast)")
        _check_dtype(op_type, first, allowed)
        return [(out_dtype or first, broadcast_shapes(op_type, *(s.shape for s in specs)))]
    return infer


def _define_elementwise(op_type, name, kernel, allowed, arity, out_dtype=None, c_expr=None):
    def run(inputs, attrs):
        with np.errstate(all="ignore"):
            return (kernel(*inputs),)
    register(OpDef(op_type, name, _elementwise_infer(op_type, allowed, out_dtype), run,
                   num_inputs=arity, c_expr=c_expr))

    if arity == 1:
        def api(x, name=None):
            return apply(op_type, convert_same(op_type, [x]), name=name)
    else:
        def api(x, y, name=None):
            return apply(op_type, convert_same(op_type, [x, y]), name=name)
    api.__name__ = name
    api.__doc__ = f"Elementwise ``{name}`` (graph op ``{op_type}``)."
    return api


def _floordiv(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise errors.InvalidArgumentError("Integer division by zero")
    return np.floor_divide(x, y)


def _floormod(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise errors.InvalidArgumentError("Integer division by zero")
    return np.mod(x, y)


def _pow(x, y):
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise errors.InvalidArgumentError("Integers to negative integer powers are not allowed")
    if x.dtype.kind == "f":
        return np.where(y == 2, x * x, np.power(x, y))    # x**2 is x*x, as numpy's ``x ** 2`` (and native code)
    return np.power(x, y)


def _sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


add = _define_elementwise("AddV2", "add", lambda x, y: x + y, NUMERIC + (dtypes.string,), 2, c_expr="({0} + {1})")
subtract = _define_elementwise("Sub", "sub", np.subtract, NUMERIC, 2, c_expr="({0} - {1})")
multiply = _define_elementwise("Mul", "mul", np.multiply, NUMERIC, 2, c_expr="({0} * {1})")
_realdiv = _define_elementwise("RealDiv", "truediv", np.true_divide, FLOATS, 2, c_expr="({0} / {1})")
floordiv = _define_elementwise("FloorDiv", "floordiv", _floordiv, NUMERIC, 2, c_expr="rt_floordiv({0}, {1})")
floormod = _define_elementwise("FloorMod", "floormod", _floormod, NUMERIC, 2, c_expr="rt_floormod({0}, {1})")
pow = _define_elementwise("Pow", "pow", _pow, NUMERIC, 2, c_expr="rt_pow({0}, {1})")
maximum = _define_elementwise("Maximum", "maximum", np.maximum, NUMERIC, 2, c_expr="rt_max({0}, {1})")
minimum = _define_elementwise("Minimum", "minimum", np.minimum, NUMERIC, 2, c_expr="rt_min({0}, {1})")
greater = _define_elementwise("Greater", "greater", np.greater, NUMERIC, 2, dtypes.bool_, "({0} > {1})")
greater_equal = _define_elementwise("GreaterEqual", "greater_equal", np.greater_equal, NUMERIC, 2, dtypes.bool_,
                                    "({0} >= {1})")
less = _define_elementwise("Less", "less", np.less, NUMERIC, 2, dtypes.bool_, "({0} < {1})")
less_equal = _define_elementwise("LessEqual", "less_equal", np.less_equal, NUMERIC, 2, dtypes.bool_, "({0} <= {1})")
equal = _define_elementwise("Equal", "equal", lambda x, y: np.asarray(x == y), NUMERIC + BOOL + (dtypes.string,),
                            2, dtypes.bool_, "({0} == {1})")
not_equal = _define_elementwise("NotEqual", "not_equal", lambda x, y: np.asarray(x != y),
                                NUMERIC + BOOL + (dtypes.string,), 2, dtypes.bool_, "({0} != {1})")
logical_and = _define_elementwise("LogicalAnd", "logical_and", np.logical_and, BOOL, 2, c_expr="({0} && {1})")
logical_or = _define_elementwise("LogicalOr", "logical_or", np.logical_or, BOOL, 2, c_expr="({0} || {1})")
logical_xor = _define_elementwise("LogicalXor", "logical_xor", np.logical_xor, BOOL, 2, c_expr="({0} != {1})")
logical_not = _define_elementwise("LogicalNot", "logical_not", np.logical_not, BOOL, 1, c_expr="(!{0})")
negative = _define_elementwise("Neg", "neg", np.negative, SIGNED, 1, c_expr="(-{0})")
abs = _define_elementwise("Abs", "abs", np.abs, SIGNED, 1, c_expr="rt_abs({0})")
sign = _define_elementwise("Sign", "sign", np.sign, SIGNED, 1, c_expr="rt_sign({0})")
square = _define_elementwise("Square", "square", np.square, NUMERIC, 1, c_expr="rt_square({0})")
sqrt = _define_elementwise("Sqrt", "sqrt", np.sqrt, FLOATS, 1, c_expr="rt_sqrt({0})")
exp = _define_elementwise("Exp", "exp", np.exp, FLOATS, 1, c_expr="rt_exp({0})")
log = _define_elementwise("Log", "log", np.log, FLOATS, 1, c_expr="rt_log({0})")
tanh = _define_elementwise("Tanh", "tanh", np.tanh, FLOATS, 1, c_expr="rt_tanh({0})")
sigmoid = _define_elementwise("Sigmoid", "sigmoid", _sigmoid, FLOATS, 1, c_expr="rt_sigmoid({0})")
sin = _define_elementwise("Sin", "sin", np.sin, FLOATS, 1, c_expr="rt_sin({0})")
cos = _define_elementwise("Cos", "cos", np.cos, FLOATS, 1, c_expr="rt_cos({0})")
relu = _define_elementwise("Relu", "relu", lambda x: np.maximum(x, 0).astype(x.dtype), SIGNED, 1,
                           c_expr="rt_relu({0})")
mod = floormod


def divide(x, y, name=None):
    """``x / y``: integers are converted to floating point first (like Python 3 and ``tf.math.divide``)."""
    x, y = convert_same("RealDiv", [x, y])
    if x.dtype.is_integer:
        target = dtypes.float64 if x.dtype in (dtypes.int32, dtypes.int64) else dtypes.float32
        x, y = cast(x, target), cast(y, target)
    return _realdiv(x, y, name=name)


truediv = divide


# -- select ----------------------------------------------------------------------

def _select_infer(specs, attrs):
    cond, x, y = specs
    if cond.dtype is not dtypes.bool_:
        raise TypeError(f"SelectV2: the condition must be bool, got {cond.dtype}")
    if x.dtype is not y.dtype:
        raise TypeError(f"SelectV2: x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    return [(x.dtype, broadcast_shapes("SelectV2", cond.shape, x.shape, y.shape))]


register(OpDef("SelectV2", "SelectV2", _select_infer, lambda i, a: (np.where(i[0], i[1], i[2]),), 3,
               c_expr="({0} ? {1} : {2})"))


def _where_indices_infer(specs, attrs):
    rank = specs[0].shape.rank
    return [(dtypes.int64, (None, rank))]


register(OpDef("Where", "Where", _where_indices_infer,
               lambda i, a: (np.argwhere(i[0]).astype(np.int64),), 1))


def where(condition, x=None, y=None, name=None):
    """``rt.where(c, x, y)`` selects elementwise (broadcasting); ``rt.where(c)`` gives the true indices."""
    condition = convert(condition, dtypes.bool_, "condition")
    if x is None and y is None:
        return apply("Where", [condition], name=name)
    if x is None or y is None:
        raise ValueError("rt.where: x and y must both be given, or neither")
    x, y = convert_same("SelectV2", [x, y])
    return apply("SelectV2", [condition, x, y], name=name)


# -- cast ------------------------------------------------------------------------

def _cast_infer(specs, attrs):
    src, dst = specs[0].dtype, attrs["DstT"]
    if (src is dtypes.string) != (dst is dtypes.string):
        raise TypeError(f"Cast: cannot cast {src} to {dst}")
    return [(dst, specs[0].shape.dims)]


def _cast_kernel(inputs, attrs):
    with np.errstate(all="ignore"):
        return (inputs[0].astype(attrs["DstT"].np),)


register(OpDef("Cast", "Cast", _cast_infer, _cast_kernel, 1, c_expr="(({T}){0})"))


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero)."""
    dtype = dtypes.as_dtype(dtype)
    x = convert(x)
    return apply("Cast", [x], {"DstT": dtype}, name=name)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t, lo, hi = convert_same("ClipByValue", [t, clip_value_min, clip_value_max])
    return minimum(maximum(t, lo), hi, name=name)


# -- matmul ----------------------------------------------------------------------

def _matmul_infer(specs, attrs):
    a, b = specs
    if a.dtype is not b.dtype:
        raise TypeError(f"MatMul: both inputs must have the same dtype, got {a.dtype} and {b.dtype}")
    _check_dtype("MatMul", a.dtype, NUMERIC)
    if a.shape.rank is None or b.shape.rank is None:
        return [(a.dtype, None)]
    if a.shape.rank < 2 or b.shape.rank < 2:
        raise ValueError(f"MatMul: inputs must be at least 2-D, got shapes {a.shape} and {b.shape}")
    ad, bd = list(a.shape.dims), list(b.shape.dims)
    if attrs.get("transpose_a"):
        ad[-1], ad[-2] = ad[-2], ad[-1]
    if attrs.get("transpose_b"):
        bd[-1], bd[-2] = bd[-2], bd[-1]
    if ad[-1] is not None and bd[-2] is not None and ad[-1] != bd[-2]:
        raise ValueError(f"MatMul: inner dimensions differ: shapes {a.shape} and {b.shape} "
                         f"(transpose_a={bool(attrs.get('transpose_a'))}, "
                         f"transpose_b={bool(attrs.get('transpose_b'))})")
    batch = broadcast_shapes("MatMul", TensorShape(ad[:-2]), TensorShape(bd[:-2]))
    return [(a.dtype, tuple(batch) + (ad[-2], bd[-1]))]


def _matmul_kernel(inputs, attrs):
    a, b = inputs
    if attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b"):
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise errors.InvalidArgumentError(f"MatMul: inner dimensions differ: {a.shape} and {b.shape}")
    return (np.matmul(a, b),)


register(OpDef("MatMul", "MatMul", _matmul_infer, _matmul_kernel, 2))


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product of the last two dimensions (batched over the others)."""
    a, b = convert_same("MatMul", [a, b])
    return apply("MatMul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}, name=name)


# -- reductions --------------------------------------------------------------------

def _norm_axes(op_type, axis, rank):
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if rank is None:
        return tuple(int(a) for a in axes)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise ValueError(f"{op_type}: axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def _reduce_infer(op_type, allowed, out_dtype=None):
    def infer(specs, attrs):
        spec = specs[0]
        _check_dtype(op_type, spec.dtype, allowed)
        axes, keep = attrs["axis"], attrs["keepdims"]
        dims = spec.shape.dims
        if dims is None:
            return [(out_dtype or spec.dtype, None)]
        if axes is None:
            axes = tuple(range(len(dims)))
        axes = tuple(a % len(dims) if dims else 0 for a in axes)
        if keep:
            out = tuple(1 if i in axes else d for i, d in enumerate(dims))
        else:
            out = tuple(d for i, d in enumerate(dims) if i not in axes)
        return [(out_dtype or spec.dtype, out)]
    return infer


def _int_mean(x, axis, keepdims):
    total = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
    count = x.size // max(np.asarray(total).size, 1) if x.size else 0
    if count == 0:
        return np.zeros_like(total)
    return np.sign(total) * (np.abs(total) // count)   # truncating, like TF's integer mean


def _mean(x, axis, keepdims):
    if x.dtype.kind in "iu":
        return _int_mean(x, axis, keepdims)
    return np.mean(x, axis=axis, keepdims=keepdims)


def _define_reduction(op_type, name, fn, allowed, reduction: Reduction, out_dtype=None):
    def run(inputs, attrs):
        x = inputs[0]
        axis = attrs["axis"]
        if reduction.identity is None and x.size == 0:
            raise errors.InvalidArgumentError(f"{op_type}: reduction over an empty dimension has no identity")
        with np.errstate(all="ignore"):
            return (np.asarray(fn(x, axis=axis, keepdims=attrs["keepdims"])),)
    register(OpDef(op_type, name, _reduce_infer(op_type, allowed, out_dtype), run, 1, reduction=reduction))

    def api(input_tensor, axis=None, keepdims=False, name=None):
        x = convert(input_tensor)
        axes = _norm_axes(op_type, axis, x.shape.rank)
        return apply(op_type, [x], {"axis": axes, "keepdims": bool(keepdims)}, name=name)
    api.__name__ = name
    api.__doc__ = f"``{name}`` over ``axis`` (all axes when None)."
    return api


_SUM = Reduction("({0} + {1})", "+", "0")
reduce_sum = _define_reduction("Sum", "reduce_sum", np.sum, NUMERIC, _SUM)
reduce_mean = _define_reduction("Mean", "reduce_mean", _mean, NUMERIC, Reduction(_SUM.combine, "+", "0", mean=True))
reduce_max = _define_reduction("Max", "reduce_max", np.max, NUMERIC, Reduction("rt_max({0}, {1})", "max", None))
reduce_min = _define_reduction("Min", "reduce_min", np.min, NUMERIC, Reduction("rt_min({0}, {1})", "min", None))
reduce_prod = _define_reduction("Prod", "reduce_prod", np.prod, NUMERIC, Reduction("({0} * {1})", "*", "1"))
reduce_any = _define_reduction("Any", "reduce_any", np.any, BOOL, Reduction("({0} || {1})", "|", "0"))
reduce_all = _define_reduction("All", "reduce_all", np.all, BOOL, Reduction("({0} && {1})", "&", "1"))


def _arg_infer(op_type):
    def infer(specs, attrs):
        spec = specs[0]
        _check_dtype(op_type, spec.dtype, NUMERIC)
        dims = spec.shape.dims
        if dims is None:
            return [(attrs["output_type"], None)]
        axis = attrs["axis"]
        if not -len(dims) <= axis < len(dims):
            raise ValueError(f"{op_type}: axis {axis} is out of range for a tensor of rank {len(dims)}")
        axis %= len(dims)
        return [(attrs["output_type"], tuple(d for i, d in enumerate(dims) if i != axis))]
    return infer


def _arg_kernel(fn):
    def run(inputs, attrs):
        x = inputs[0]
        if x.shape[attrs["axis"]] == 0:
            raise errors.InvalidArgumentError("argmax/argmin over an empty dimension")
        return (fn(x, axis=attrs["axis"]).astype(attrs["output_type"].np),)
    return run


register(OpDef("ArgMax", "ArgMax", _arg_infer("ArgMax"), _arg_kernel(np.argmax), 1))
register(OpDef("ArgMin", "ArgMin", _arg_infer("ArgMin"), _arg_kernel(np.argmin), 1))


def argmax(input, axis=0, output_type=dtypes.int64, name=None):
    return apply("ArgMax", [convert(input)], {"axis": int(axis), "output_type": dtypes.as_dtype(output_type)},
                 name=name)


def argmin(input, axis=0, output_type=dtypes.int64, name=None):
    return apply("ArgMin", [convert(input)], {"axis": int(axis), "output_type": dtypes.as_dtype(output_type)},
                 name=name)


def _cumsum_infer(specs, attrs):
    spec = specs[0]
    _check_dtype("Cumsum", spec.dtype, NUMERIC)
    if spec.shape.rank is not None and not -spec.shape.rank <= attrs["axis"] < spec.shape.rank:
        raise ValueError(f"Cumsum: axis {attrs['axis']} is out of range for rank {spec.shape.rank}")
    return [(spec.dtype, spec.shape.dims)]


def _cumsum_kernel(inputs, attrs):
    x, axis = inputs[0], attrs["axis"]
    if attrs["reverse"]:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"]:
        out = np.concatenate([np.zeros_like(np.take(out, [0], axis=axis)),
                              np.take(out, range(out.shape[axis] - 1), axis=axis)], axis=axis)
    if attrs["reverse"]:
        out = np.flip(out, axis)
    return (np.ascontiguousarray(out),)


register(OpDef("Cumsum", "Cumsum", _cumsum_infer, _cumsum_kernel, 1))


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return apply("Cumsum", [convert(x)], {"axis": int(axis), "exclusive": bool(exclusive),
                                          "reverse": bool(reverse)}, name=name)


def _softmax_infer(specs, attrs):
    _check_dtype("Softmax", specs[0].dtype, FLOATS)
    rank = specs[0].shape.rank
    if rank is not None and not -rank <= attrs["axis"] < rank:
        raise ValueError(f"Softmax: axis {attrs['axis']} is out of range for a tensor of rank {rank}")
    return [(specs[0].dtype, specs[0].shape.dims)]


def _softmax_kernel(inputs, attrs):
    x, axis = inputs[0], attrs["axis"]
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return ((e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype),)


def _softmax_expand(inputs, attrs):
    """Softmax from primitive ops (what ``_softmax_kernel`` computes), for fusion in native code."""
    x = inputs[0]
    axis = (attrs["axis"] % x.shape.rank,) if x.shape.rank is not None else (attrs["axis"],)
    e = exp(subtract(x, apply("Max", [x], {"axis": axis, "keepdims": True})))
    return (_realdiv(e, apply("Sum", [e], {"axis": axis, "keepdims": True})),)


register(OpDef("Softmax", "Softmax", _softmax_infer, _softmax_kernel, 1, expand=_softmax_expand))


def softmax(logits, axis=-1, name=None):
    return apply("Softmax", [convert(logits)], {"axis": int(axis)}, name=name)
