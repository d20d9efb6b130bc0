"""Elementwise math, comparisons, logic, matmul and reductions."""
from __future__ import annotations

import math

import numpy as np

from runtime import dtypes, errors
from runtime.ops.registry import (
    OpDef,
    Reduction,
    apply,
    argument_error,
    convert,
    convert_same,
    gradient,
    not_differentiable,
    register,
)
from runtime.shapes import TensorShape

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8)
SIGNED = FLOATS + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
NUMERIC = FLOATS + INTS
COMPLEX = (dtypes.complex64, dtypes.complex128)     # eager and traced; native code calls back into Python
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


# ---------------------------------------------------------------------------
# Shape helpers of gradient functions: static values when the shapes are known while tracing,
# run-time shape ops otherwise.

def shape_tensor(x):
    """``x``'s shape as an int32 vector: a constant when it is static, a ``Shape`` op otherwise."""
    if x.shape.is_fully_defined():
        return convert(np.array(x.shape.dims, np.int32))
    return apply("Shape", [x], {"out_type": dtypes.int32})


def reshape_to(x, shape):
    """``x`` reshaped to ``shape`` (a shape tensor, or a tensor whose shape to take)."""
    if not (shape.dtype.is_integer and shape.shape.rank == 1):
        shape = shape_tensor(shape)
    return apply("Reshape", [x, shape])


def unbroadcast(grad, x, *others):
    """``grad`` (of a broadcasting op's output) summed back to the shape of its input ``x``.

    ``others`` are the op's other inputs: an axis where none of them has a size other than 1 was not
    broadcast for ``x``, even when its size is unknown. The axes to sum are found statically where
    the shapes tell; otherwise at run time (``SumToShape``).
    """
    gdims, xdims = grad.shape.dims, x.shape.dims
    if gdims is not None and xdims is not None and all(o.shape.rank is not None for o in others):
        if gdims == xdims and x.shape.is_fully_defined():
            return grad
        lead = len(gdims) - len(xdims)
        axes = list(range(lead))
        static = lead >= 0
        for i, d in enumerate(xdims if static else ()):
            gd = gdims[lead + i]
            if d == 1 and gd != 1:
                axes.append(lead + i)
            elif d is None and gd != 1 and not _only_ones(others, len(xdims) - i):
                static = False          # x may have been 1 here: only the run-time shapes tell
        if static:
            out = reduce_sum(grad, axes, keepdims=True) if axes else grad
            return reshape_to(out, x) if lead else out
    return apply("SumToShape", [grad, shape_tensor(x)])


def _only_ones(tensors, from_end: int) -> bool:
    """True when no tensor has a size other than 1 at axis ``-from_end`` (or lacks that axis)."""
    return all(t.shape.rank < from_end or t.shape.dims[t.shape.rank - from_end] == 1 for t in tensors)


def _kept_dims(x, axes):
    """The shape of ``reduce_*(x, axes, keepdims=True)`` as a shape tensor (``axes`` None: all)."""
    rank = x.shape.rank
    if rank is None and axes is None:           # a full reduction of unknown rank (a py_function's output)
        return add(multiply(shape_tensor(x), 0), 1)
    if rank is None:
        raise ValueError(f"the gradient of a reduction over given axes needs the rank of its input, unknown for {x}")
    axes = set(range(rank) if axes is None else (a % rank for a in axes))
    if x.shape.is_fully_defined():
        return convert(np.array([1 if i in axes else d for i, d in enumerate(x.shape.dims)], np.int32))
    mask = convert(np.array([i in axes for i in range(rank)], np.bool_))
    return where(mask, convert(np.ones(rank, np.int32)), shape_tensor(x))


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



# -- erf, erfc and softplus: computed in float64 and rounded once ----------------------------------------------
def _libm(fn):
    """An elementwise kernel applying the C library's ``fn`` (through ``math``: numpy has no erf) in float64.

    The values are the ones native code's C ``erf``/``erfc`` give (the same functions, in double for float32 too),
    about 60 ns an element.
    """
    def kernel(x):
        flat = np.asarray(x, np.float64).ravel().tolist()
        return np.fromiter(map(fn, flat), np.float64, count=len(flat)).reshape(np.shape(x)).astype(x.dtype)
    return kernel


def _softplus(x):
    """``log(1 + exp(x))`` without overflow or cancellation: ``x + log1p(exp(-x))`` for x > 0, else
    ``log1p(exp(x))``, in float64."""
    d = x.astype(np.float64)
    return np.where(d > 0, d + np.log1p(np.exp(-d)), np.log1p(np.exp(d))).astype(x.dtype)


add = _define_elementwise("AddV2", "add", lambda x, y: x + y, NUMERIC + COMPLEX + (dtypes.string,), 2,
                          c_expr="({0} + {1})")
subtract = _define_elementwise("Sub", "sub", np.subtract, NUMERIC + COMPLEX, 2, c_expr="({0} - {1})")
multiply = _define_elementwise("Mul", "mul", np.multiply, NUMERIC + COMPLEX, 2, c_expr="({0} * {1})")
_realdiv = _define_elementwise("RealDiv", "truediv", np.true_divide, FLOATS + COMPLEX, 2, c_expr="({0} / {1})")
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
equal = _define_elementwise("Equal", "equal", lambda x, y: np.asarray(x == y),
                            NUMERIC + COMPLEX + BOOL + (dtypes.string,),
                            2, dtypes.bool_, "({0} == {1})")
not_equal = _define_elementwise("NotEqual", "not_equal", lambda x, y: np.asarray(x != y),
                                NUMERIC + COMPLEX + BOOL + (dtypes.string,), 2, dtypes.bool_, "({0} != {1})")
logical_and = _define_elementwise("LogicalAnd", "logical_and", np.logical_and, BOOL, 2, c_expr="({0} && {1})")
logical_or = _define_elementwise("LogicalOr", "logical_or", np.logical_or, BOOL, 2, c_expr="({0} || {1})")
logical_xor = _define_elementwise("LogicalXor", "logical_xor", np.logical_xor, BOOL, 2, c_expr="({0} != {1})")
logical_not = _define_elementwise("LogicalNot", "logical_not", np.logical_not, BOOL, 1, c_expr="(!{0})")
negative = _define_elementwise("Neg", "neg", np.negative, SIGNED + COMPLEX, 1, c_expr="(-{0})")
_abs = _define_elementwise("Abs", "abs", np.abs, SIGNED, 1, c_expr="rt_abs({0})")
sign = _define_elementwise("Sign", "sign", np.sign, SIGNED, 1, c_expr="rt_sign({0})")
square = _define_elementwise("Square", "square", np.square, NUMERIC + COMPLEX, 1, c_expr="rt_square({0})")
sqrt = _define_elementwise("Sqrt", "sqrt", np.sqrt, FLOATS, 1, c_expr="rt_sqrt({0})")
# 1 / sqrt(x), rounded twice as numpy's 1 / np.sqrt(x) is (tf.math.rsqrt)
rsqrt = _define_elementwise("Rsqrt", "rsqrt", lambda x: np.divide(1, np.sqrt(x), dtype=x.dtype), FLOATS, 1,
                            c_expr="rt_rsqrt({0})")
exp = _define_elementwise("Exp", "exp", np.exp, FLOATS + COMPLEX, 1, c_expr="rt_exp({0})")
log = _define_elementwise("Log", "log", np.log, FLOATS, 1, c_expr="rt_log({0})")
tanh = _define_elementwise("Tanh", "tanh", np.tanh, FLOATS, 1, c_expr="rt_tanh({0})")
sigmoid = _define_elementwise("Sigmoid", "sigmoid", _sigmoid, FLOATS, 1, c_expr="rt_sigmoid({0})")
sin = _define_elementwise("Sin", "sin", np.sin, FLOATS, 1, c_expr="rt_sin({0})")
cos = _define_elementwise("Cos", "cos", np.cos, FLOATS, 1, c_expr="rt_cos({0})")
# The C forms compute in double, as the kernels do (for float32 too: one rounding, the same value)
erf = _define_elementwise("Erf", "erf", _libm(math.erf), FLOATS, 1, c_expr="rt_erf({0})")
erfc = _define_elementwise("Erfc", "erfc", _libm(math.erfc), FLOATS, 1, c_expr="erfc((double){0})")
softplus = _define_elementwise("Softplus", "softplus", _softplus, FLOATS, 1,
                               c_expr="({0} > 0 ? (double){0} + log1p(exp(-(double){0})) : log1p(exp((double){0})))")
relu = _define_elementwise("Relu", "relu", lambda x: np.maximum(x, 0).astype(x.dtype), SIGNED, 1,
                           c_expr="rt_relu({0})")
floor = _define_elementwise("Floor", "floor", np.floor, FLOATS, 1, c_expr="rt_floor({0})")
ceil = _define_elementwise("Ceil", "ceil", np.ceil, FLOATS, 1, c_expr="rt_ceil({0})")
# halves go to the even neighbour (tf.round, numpy's round, C's rint)
round = _define_elementwise("Round", "round", np.round, FLOATS, 1, c_expr="rt_round({0})")  # noqa: A001
not_differentiable("Floor", "Ceil", "Round")      # as in TF: piecewise constant, the gradient is None
mod = floormod


log1p = _define_elementwise("Log1p", "log1p", np.log1p, FLOATS, 1, c_expr="rt_log1p({0})")
expm1 = _define_elementwise("Expm1", "expm1", np.expm1, FLOATS, 1, c_expr="rt_expm1({0})")
is_nan = _define_elementwise("IsNan", "is_nan", np.isnan, FLOATS, 1, dtypes.bool_, "rt_isnan({0})")
is_inf = _define_elementwise("IsInf", "is_inf", np.isinf, FLOATS, 1, dtypes.bool_, "rt_isinf({0})")
is_finite = _define_elementwise("IsFinite", "is_finite", np.isfinite, FLOATS, 1, dtypes.bool_, "rt_isfinite({0})")
# (x - y) ** 2, rounded as numpy's square of the difference (tf.math.squared_difference)
squared_difference = _define_elementwise("SquaredDifference", "squared_difference", lambda x, y: np.square(x - y),
                                         NUMERIC, 2, c_expr="rt_square(({0} - {1}))")


# -- gradients of the elementwise ops ---------------------------------------------------

@gradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    return [unbroadcast(grad, x, y), unbroadcast(grad, y, x)]


@gradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    return [unbroadcast(grad, x, y), unbroadcast(negative(grad), y, x)]


@gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [unbroadcast(multiply(grad, _conj(y)), x, y), unbroadcast(multiply(grad, _conj(x)), y, x)]


@gradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return [unbroadcast(_realdiv(grad, _conj(y)), x, y),
            unbroadcast(multiply(grad, _conj(_realdiv(_realdiv(negative(x), y), y))), y, x)]


@gradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    return [unbroadcast(grad, x, y), unbroadcast(multiply(negative(grad), floordiv(x, y)), y, x)]


@gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = multiply(grad, multiply(y, pow(x, subtract(y, 1))))
    positive = greater(x, 0)
    log_x = where(positive, log(where(positive, x, ones_like_(x))), zeros_like_(x))
    return [unbroadcast(gx, x, y), unbroadcast(multiply(grad, multiply(z, log_x)), y, x)]


def _select_grads(x, y, grad, mask):
    """Gradients of x and y when the output took x where ``mask`` holds, else y."""
    zeros = zeros_like_(grad)
    return [unbroadcast(where(mask, grad, zeros), x, y, mask), unbroadcast(where(mask, zeros, grad), y, x, mask)]


@gradient("Maximum")
def _maximum_grad(op, grad):
    x, y = op.inputs
    return _select_grads(x, y, grad, greater_equal(x, y))


@gradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    return _select_grads(x, y, grad, less_equal(x, y))


@gradient("Neg")
def _neg_grad(op, grad):
    return [negative(grad)]


@gradient("Abs")
def _abs_grad(op, grad):
    return [multiply(grad, sign(op.inputs[0]))]


@gradient("Sign")
def _sign_grad(op, grad):
    return [zeros_like_(op.inputs[0])]


@gradient("Square")
def _square_grad(op, grad):
    return [multiply(grad, multiply(_conj(op.inputs[0]), 2))]


@gradient("Sqrt")
def _sqrt_grad(op, grad):
    return [_realdiv(grad, multiply(op.outputs[0], 2))]


@gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    y = op.outputs[0]
    return [multiply(grad, multiply(multiply(y, multiply(y, y)), -0.5))]


@gradient("Exp")
def _exp_grad(op, grad):
    return [multiply(grad, _conj(op.outputs[0]))]


@gradient("Log")
def _log_grad(op, grad):
    return [_realdiv(grad, op.inputs[0])]


@gradient("Tanh")
def _tanh_grad(op, grad):
    y = op.outputs[0]
    return [multiply(grad, subtract(1, multiply(y, y)))]


@gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    return [multiply(grad, multiply(y, subtract(1, y)))]


@gradient("Sin")
def _sin_grad(op, grad):
    return [multiply(grad, cos(op.inputs[0]))]


@gradient("Cos")
def _cos_grad(op, grad):
    return [negative(multiply(grad, sin(op.inputs[0])))]


@gradient("Erf")
def _erf_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, multiply(exp(negative(square(x))), 2 / math.sqrt(math.pi)))]


@gradient("Erfc")
def _erfc_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, multiply(exp(negative(square(x))), -2 / math.sqrt(math.pi)))]


@gradient("Softplus")
def _softplus_grad(op, grad):
    return [multiply(grad, sigmoid(op.inputs[0]))]


@gradient("Relu")
def _relu_grad(op, grad):
    return [where(greater(op.outputs[0], 0), grad, zeros_like_(grad))]


@gradient("Log1p")
def _log1p_grad(op, grad):
    return [_realdiv(grad, add(op.inputs[0], 1))]


@gradient("Expm1")
def _expm1_grad(op, grad):
    return [multiply(grad, exp(op.inputs[0]))]


@gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    gx = multiply(grad, multiply(subtract(x, y), 2))
    return [unbroadcast(gx, x, y), unbroadcast(negative(gx), y, x)]


not_differentiable("FloorDiv")


def zeros_like_(x):
    return apply("ZerosLike", [x])


def ones_like_(x):
    return apply("OnesLike", [x])


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
               c_expr="rt_select({0}, {1}, {2})"))


@gradient("SelectV2")
def _select_grad(op, grad):
    condition, x, y = op.inputs
    return [None] + _select_grads(x, y, grad, condition)


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
    x = inputs[0]
    if x.dtype.kind == "c" and attrs["DstT"].np.kind != "c":
        x = x.real                  # complex to real keeps the real part, as tf.cast
    with np.errstate(all="ignore"):
        return (x.astype(attrs["DstT"].np),)


register(OpDef("Cast", "Cast", _cast_infer, _cast_kernel, 1, c_expr="{0}"))   # c_expression converts to {T}


@gradient("Cast")
def _cast_grad(op, grad):
    source = op.inputs[0].dtype
    if source.is_floating and grad.dtype.is_floating:
        return [cast(grad, source)]
    return [None]


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
    _check_dtype("MatMul", a.dtype, NUMERIC + COMPLEX)
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


@gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = bool(op.attrs.get("transpose_a")), bool(op.attrs.get("transpose_b"))
    if a.dtype.is_complex:        # the gradient of a complex product takes the conjugates (adjoints)
        a, b = _conj(a), _conj(b)
    if not ta and not tb:
        ga, gb = matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)
    elif not ta and tb:
        ga, gb = matmul(grad, b), matmul(grad, a, transpose_a=True)
    elif ta and not tb:
        ga, gb = matmul(b, grad, transpose_b=True), matmul(a, grad)
    else:
        ga, gb = matmul(b, grad, transpose_a=True, transpose_b=True), matmul(grad, a, transpose_a=True,
                                                                           transpose_b=True)
    if (a.shape.rank or 2) > 2 or (b.shape.rank or 2) > 2:      # batch dims may have been broadcast
        ga, gb = unbroadcast(ga, a, grad), unbroadcast(gb, b, grad)
    return [ga, gb]


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
            raise argument_error(f"{op_type}: axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def _reduce_infer(op_type, allowed, out_dtype=None):
    def infer(specs, attrs):
        spec = specs[0]
        _check_dtype(op_type, spec.dtype, allowed)
        axes, keep = attrs["axis"], attrs["keepdims"]
        dims = spec.shape.dims
        if dims is None:
            # over every axis of a tensor of unknown rank: a scalar all the same, as TensorFlow states it
            return [(out_dtype or spec.dtype, () if axes is None and not keep else None)]
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


def _extreme(dtype: np.dtype, lowest: bool):
    """The lowest (or highest) value of ``dtype``: -inf (inf) for floats."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


def _define_reduction(op_type, name, fn, allowed, reduction: Reduction, out_dtype=None):
    def run(inputs, attrs):
        x = inputs[0]
        axis = attrs["axis"]
        if reduction.identity is None and x.size == 0:
            # an output element that reduces no input is the dtype's lowest value for max, highest for min (TF)
            axes = range(x.ndim) if axis is None else [a % x.ndim for a in axis]
            keep = attrs["keepdims"]
            out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
            return (np.full(out_shape, _extreme(x.dtype, lowest=reduction.omp == "max"), x.dtype),)
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
reduce_sum = _define_reduction("Sum", "reduce_sum", np.sum, NUMERIC + COMPLEX, _SUM)
reduce_mean = _define_reduction("Mean", "reduce_mean", _mean, NUMERIC + COMPLEX,
                                Reduction(_SUM.combine, "+", "0", mean=True))
reduce_max = _define_reduction("Max", "reduce_max", np.max, NUMERIC, Reduction("rt_max({0}, {1})", "max", None))
reduce_min = _define_reduction("Min", "reduce_min", np.min, NUMERIC, Reduction("rt_min({0}, {1})", "min", None))
reduce_prod = _define_reduction("Prod", "reduce_prod", np.prod, NUMERIC + COMPLEX, Reduction("({0} * {1})", "*", "1"))
reduce_any = _define_reduction("Any", "reduce_any", np.any, BOOL, Reduction("({0} || {1})", "|", "0"))
reduce_all = _define_reduction("All", "reduce_all", np.all, BOOL, Reduction("({0} && {1})", "&", "1"))


def _reduced_grad(op, grad):
    """``grad`` of a reduction's output, reshaped to keep the reduced axes (size 1)."""
    x = op.inputs[0]
    return grad if op.attrs["keepdims"] else reshape_to(grad, _kept_dims(x, op.attrs["axis"]))


@gradient("Sum")
def _sum_grad(op, grad):
    x = op.inputs[0]
    return [apply("BroadcastTo", [_reduced_grad(op, grad), shape_tensor(x)])]


@gradient("Mean")
def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        count = convert(np.asarray(max(x.shape.num_elements(), 1) // max(y.shape.num_elements(), 1), x.dtype.np))
    else:
        count = cast(_realdiv(cast(apply("Size", [x], {"out_type": dtypes.int32}), dtypes.float64),
                              cast(apply("Size", [y], {"out_type": dtypes.int32}), dtypes.float64)), x.dtype)
    return [_realdiv(apply("BroadcastTo", [_reduced_grad(op, grad), shape_tensor(x)]), count)]


def _extremum_grad(op, grad):
    """Max/Min: the gradient goes to the elements equal to the result, shared evenly among ties."""
    x = op.inputs[0]
    kept = _kept_dims(x, op.attrs["axis"])
    y = op.outputs[0] if op.attrs["keepdims"] else reshape_to(op.outputs[0], kept)
    hits = cast(equal(x, y), x.dtype)
    count = reduce_sum(hits, op.attrs["axis"], keepdims=True)
    return [multiply(_realdiv(hits, count), _reduced_grad(op, grad))]


gradient("Max")(_extremum_grad)
gradient("Min")(_extremum_grad)


@gradient("Prod")
def _prod_grad(op, grad):
    """d prod / d x_i is the product of the other elements, computed without dividing by a zero x_i."""
    x = op.inputs[0]
    axes = op.attrs["axis"]
    is_zero = equal(x, zeros_like_(x))
    zeros = reduce_sum(cast(is_zero, x.dtype), axes, keepdims=True)
    nonzero_product = reduce_prod(where(is_zero, ones_like_(x), x), axes, keepdims=True)
    others = where(equal(zeros, 0), _realdiv(nonzero_product, where(is_zero, ones_like_(x), x)),
                   where(logical_and(equal(zeros, 1), is_zero), apply("BroadcastTo", [nonzero_product,
                                                                                     shape_tensor(x)]),
                         zeros_like_(x)))
    return [multiply(others, _reduced_grad(op, grad))]


def _sum_to_shape_infer(specs, attrs):
    grad, shape = specs
    if not shape.dtype.is_integer:
        raise TypeError(f"SumToShape: the shape must be integers, got {shape.dtype}")
    if shape.const is not None:
        return [(grad.dtype, tuple(int(d) for d in np.asarray(shape.const).reshape(-1)))]
    n = shape.shape[0] if shape.shape.rank == 1 else None
    return [(grad.dtype, None if n is None else (None,) * n)]


def _sum_to_shape_kernel(inputs, attrs):
    grad, shape = inputs[0], tuple(int(d) for d in inputs[1])
    if grad.shape == shape:
        return (grad,)
    lead = grad.ndim - len(shape)
    if lead < 0 or any(d not in (1, g) for d, g in zip(shape, grad.shape[lead:])):
        raise errors.InvalidArgumentError(f"SumToShape: a tensor of shape {grad.shape} does not broadcast from "
                                          f"{list(shape)}")
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1)
    return (np.sum(grad, axis=axes, dtype=grad.dtype).reshape(shape),)


# The gradient of a broadcasting op summed back to an input's shape, when only the run-time shapes
# show which axes were broadcast (see ``unbroadcast``).
register(OpDef("SumToShape", "SumToShape", _sum_to_shape_infer, _sum_to_shape_kernel, 2, dynamic_infer=True))


@gradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [apply("BroadcastTo", [grad, shape_tensor(op.inputs[0])]), None]


def _segment_sum_infer(specs, attrs):
    data, ids, num = specs
    if not ids.dtype.is_integer or not num.dtype.is_integer:
        raise TypeError(f"UnsortedSegmentSum: segment ids and num_segments must be integers, got {ids.dtype} "
                        f"and {num.dtype}")
    _check_dtype("UnsortedSegmentSum", data.dtype, NUMERIC)
    if data.shape.rank is None or ids.shape.rank is None:
        return [(data.dtype, None)]
    if ids.shape.rank > data.shape.rank:
        raise ValueError(f"UnsortedSegmentSum: segment ids of shape {ids.shape} do not prefix data {data.shape}")
    n = None if num.const is None else int(num.const)
    return [(data.dtype, (n,) + data.shape.dims[ids.shape.rank:])]


def _segment_sum_kernel(inputs, attrs):
    data, ids, num = inputs
    num = int(num)
    if ids.shape != data.shape[:ids.ndim]:
        raise errors.InvalidArgumentError(f"UnsortedSegmentSum: segment ids of shape {ids.shape} do not prefix "
                                          f"data of shape {data.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= num):
        raise errors.InvalidArgumentError(f"UnsortedSegmentSum: segment ids must be in [0, {num})")
    out = np.zeros((num,) + data.shape[ids.ndim:], data.dtype)
    np.add.at(out, ids.reshape(-1), data.reshape((-1,) + data.shape[ids.ndim:]))
    return (out,)


register(OpDef("UnsortedSegmentSum", "UnsortedSegmentSum", _segment_sum_infer, _segment_sum_kernel, 3,
               dynamic_infer=True))


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of the rows of ``data`` by segment: ``out[segment_ids[i]] += data[i]``."""
    return apply("UnsortedSegmentSum", [convert(data), convert(segment_ids), convert(num_segments)], name=name)


@gradient("UnsortedSegmentSum")
def _segment_sum_grad(op, grad):
    return [apply("GatherV2", [grad, op.inputs[1]], {"axis": 0}), None, None]


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """``log(reduce_sum(exp(x), axis))``, computed without overflow: the maximum is taken out first."""
    x = convert(input_tensor)
    peak = reduce_max(x, axis, keepdims=True)
    finite = less(abs(peak), np.inf)
    peak = apply("StopGradient", [where(finite, peak, zeros_like_(peak))])
    total = reduce_sum(exp(subtract(x, peak)), axis, keepdims=keepdims)
    if not keepdims:
        peak = reshape_to(peak, total)
    return add(log(total), peak, name=name)


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


@gradient("Cumsum")
def _cumsum_grad(op, grad):
    attrs = op.attrs
    return [cumsum(grad, attrs["axis"], exclusive=attrs["exclusive"], reverse=not attrs["reverse"])]


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


@gradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    return [multiply(y, subtract(grad, reduce_sum(multiply(grad, y), op.attrs["axis"], keepdims=True)))]


# -- complex numbers ------------------------------------------------------------------------
# complex64 / complex128 run eagerly and traced; they have no C type, so native code runs these ops (and
# any other op on complex tensors) through a Python callback, which the build report lists.

def _complex_infer(specs, attrs):
    real, imag = specs
    if real.dtype is not imag.dtype or real.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"Complex: real and imag must both be float32 or both float64, got {real.dtype} and "
                        f"{imag.dtype}")
    out = dtypes.complex64 if real.dtype is dtypes.float32 else dtypes.complex128
    return [(out, broadcast_shapes("Complex", real.shape, imag.shape))]


def _complex_kernel(inputs, attrs):
    real, imag = np.broadcast_arrays(*inputs)
    out = np.empty(real.shape, np.complex64 if real.dtype == np.float32 else np.complex128)
    out.real, out.imag = real, imag
    return (out,)


def _part_infer(op_type):
    def infer(specs, attrs):
        x = specs[0]
        _check_dtype(op_type, x.dtype, COMPLEX)
        out = x.dtype if op_type == "Conj" else x.dtype.real_dtype
        return [(out, x.shape.dims)]
    return infer


register(OpDef("Complex", "Complex", _complex_infer, _complex_kernel, 2))
register(OpDef("Real", "Real", _part_infer("Real"), lambda i, a: (np.real(i[0]).copy(),), 1))
register(OpDef("Imag", "Imag", _part_infer("Imag"), lambda i, a: (np.imag(i[0]).copy(),), 1))
register(OpDef("Conj", "Conj", _part_infer("Conj"), lambda i, a: (np.conj(i[0]),), 1))
register(OpDef("ComplexAbs", "ComplexAbs", _part_infer("ComplexAbs"), lambda i, a: (np.abs(i[0]),), 1))


def _conj(x):
    """The conjugate of a complex tensor (the gradients of complex ops take it), ``x`` itself otherwise."""
    return apply("Conj", [x]) if x.dtype.is_complex else x


@gradient("Complex")
def _complex_grad(op, grad):
    real, imag = op.inputs
    return [unbroadcast(apply("Real", [grad]), real, imag), unbroadcast(apply("Imag", [grad]), imag, real)]


@gradient("Real")
def _real_grad(op, grad):
    return [apply("Complex", [grad, zeros_like_(grad)])]


@gradient("Imag")
def _imag_grad(op, grad):
    return [apply("Complex", [zeros_like_(grad), grad])]


@gradient("Conj")
def _conj_grad(op, grad):
    return [apply("Conj", [grad])]


@gradient("ComplexAbs")
def _complex_abs_grad(op, grad):
    """|z| = sqrt(x^2 + y^2): d|z|/dx = x/|z|, d|z|/dy = y/|z|, as the complex number z/|z| (0 where z is 0)."""
    z, r = op.inputs[0], op.outputs[0]
    safe = where(equal(r, zeros_like_(r)), ones_like_(r), r)
    scale = _realdiv(grad, safe)
    return [multiply(apply("Complex", [scale, zeros_like_(scale)]), z)]


def complex(real, imag, name=None):
    """``real + imag * 1j`` (``tf.complex``): float32 parts give complex64, float64 parts complex128."""
    real, imag = convert_same("Complex", [real, imag])
    return apply("Complex", [real, imag], name=name)


def real(input, name=None):
    """The real part (``tf.math.real``); a real tensor is returned as it is."""
    x = convert(input)
    return apply("Real", [x], name=name) if x.dtype.is_complex else x


def imag(input, name=None):
    """The imaginary part (``tf.math.imag``); zeros for a real tensor."""
    x = convert(input)
    return apply("Imag", [x], name=name) if x.dtype.is_complex else zeros_like_(x)


def conj(x, name=None):
    """The complex conjugate (``tf.math.conj``); a real tensor is returned as it is."""
    x = convert(x)
    return apply("Conj", [x], name=name) if x.dtype.is_complex else x


def abs(x, name=None):
    """``|x|`` elementwise (``tf.math.abs``): the magnitude of complex numbers (a real tensor)."""
    x = convert(x)
    if x.dtype.is_complex:
        return apply("ComplexAbs", [x], name=name)
    return _abs(x, name=name)


# -- reductions composed from others ---------------------------------------------------------

def _floating_input(api: str, input_tensor):
    x = convert(input_tensor)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"{api} needs a floating-point tensor, got {x.dtype}")
    return x


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The mean of the squared deviations from the mean over ``axis`` (``tf.math.reduce_variance``)."""
    x = _floating_input("reduce_variance", input_tensor)
    deviation = subtract(x, reduce_mean(x, axis, keepdims=True))
    if x.dtype.is_complex:
        return reduce_mean(real(multiply(deviation, conj(deviation))), axis, keepdims=keepdims, name=name)
    return reduce_mean(square(deviation), axis, keepdims=keepdims, name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The square root of ``reduce_variance`` (``tf.math.reduce_std``)."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims), name=name)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(reduce_sum(x ** 2, axis))`` (``tf.math.reduce_euclidean_norm``); integers give the square root
    rounded toward zero, as TensorFlow's."""
    x = convert(input_tensor)
    if x.dtype.is_integer:
        total = reduce_sum(cast(multiply(x, x), dtypes.float64), axis, keepdims)
        return cast(sqrt(total), x.dtype, name=name)
    return sqrt(reduce_sum(square(x), axis, keepdims), name=name)


def count_nonzero(input, axis=None, keepdims=None, dtype=dtypes.int64, name=None):
    """How many elements are not zero (not False) over ``axis`` (``tf.math.count_nonzero``)."""
    x = convert(input)
    nonzero = not_equal(x, zeros_like_(x)) if not x.dtype.is_bool else x
    return reduce_sum(cast(nonzero, dtype), axis, keepdims=bool(keepdims), name=name)


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one shape and dtype (``tf.math.add_n``)."""
    inputs = convert_same("AddN", list(inputs))
    if not inputs:
        raise ValueError("add_n needs at least one tensor")
    total = inputs[0]
    for x in inputs[1:]:
        total = add(total, x)
    return total if name is None else apply("Identity", [total], name=name)


def divide_no_nan(x, y, name=None):
    """``x / y``, and 0 where ``y`` is 0 (``tf.math.divide_no_nan``)."""
    x, y = convert_same("DivNoNan", [x, y])
    zero = zeros_like_(y)
    safe = where(equal(y, zero), ones_like_(y), y)
    return where(equal(y, zero), zeros_like_(divide(x, safe)), divide(x, safe), name=name)
