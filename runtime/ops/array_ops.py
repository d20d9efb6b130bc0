"""Creation and shape ops: constants, placeholders, reshape, concat, gather, slicing ..."""
from __future__ import annotations

import numpy as np

from runtime import context, dtypes, errors
from runtime.ops import math_ops
from runtime.ops.math_ops import reshape_to, shape_tensor, unbroadcast
from runtime.ops.registry import OpDef, apply, convert, convert_same, gradient, not_differentiable, register
from runtime.shapes import TensorShape, as_shape
from runtime.tensor import EagerTensor, Tensor, to_array

def _contiguous(array, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous ``dtype`` array of the same shape.

    ``np.ascontiguousarray`` would make 0-d arrays 1-d, and indexing a string (object)
    array down to one element gives the bare ``bytes``: both come back as 0-d arrays.
    """
    array = np.asarray(array, dtype=dtype)
    return np.ascontiguousarray(array) if array.ndim else array.copy()


# -- graph leaves -------------------------------------------------------------------

register(OpDef("Placeholder", "Placeholder", lambda specs, attrs: [(attrs["dtype"], attrs["shape"].dims)], None, 0))
register(OpDef("Const", "Const", lambda specs, attrs: [(attrs["dtype"], attrs["value"].array.shape)],
               lambda inputs, attrs: (attrs["value"].array,), 0))
register(OpDef("Identity", "Identity", lambda specs, attrs: [(specs[0].dtype, specs[0].shape.dims)],
               lambda inputs, attrs: (inputs[0],), 1, c_expr="{0}"))
register(OpDef("StopGradient", "StopGradient", lambda specs, attrs: [(specs[0].dtype, specs[0].shape.dims)],
               lambda inputs, attrs: (inputs[0],), 1, c_expr="{0}"))


@gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


not_differentiable("StopGradient")


def stop_gradient(input, name=None):
    """``input`` itself, through which no gradient flows (``tf.stop_gradient``)."""
    return apply("StopGradient", [convert(input)], name=name)


def constant(value, dtype=None, shape=None, name=None):
    """A constant tensor (``tf.constant``); inside rt.function it becomes a ``Const`` node."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    if isinstance(value, EagerTensor):
        array = value._value if dtype is None else value._value.astype(dtype.np)
    elif isinstance(value, Tensor):
        return cast(value, dtype) if dtype is not None and dtype is not value.dtype else value
    else:
        array = to_array(value, dtype)
    if shape is not None:
        shape = tuple(as_shape(shape).as_list())
        if array.size == 1:
            array = np.broadcast_to(array.reshape(()), shape).copy()
        elif int(np.prod(shape)) == array.size:
            array = array.reshape(shape)
        else:
            raise TypeError(f"constant: value of {array.size} elements cannot have shape {shape}")
    tensor = EagerTensor(np.array(array, copy=True) if not isinstance(value, np.ndarray) else array.copy(),
                         dtype)
    graph = context.current_graph()
    if graph is not None:
        return graph.internalize(tensor)
    return tensor


def convert_to_tensor(value, dtype=None, name=None):
    """``value`` as a tensor; tensors are returned as they are (checked against ``dtype``)."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    return convert(value, dtype, name or "value")


def identity(x, name=None):
    return apply("Identity", [convert(x)], name=name)


def cast(x, dtype, name=None):
    return math_ops.cast(x, dtype, name)


# -- shape queries ----------------------------------------------------------------------

register(OpDef("Shape", "Shape", lambda specs, attrs: [(attrs["out_type"], (specs[0].shape.rank,))],
               lambda inputs, attrs: (np.array(inputs[0].shape, dtype=attrs["out_type"].np),), 1))
register(OpDef("Size", "Size", lambda specs, attrs: [(attrs["out_type"], ())],
               lambda inputs, attrs: (np.array(inputs[0].size, dtype=attrs["out_type"].np),), 1))
register(OpDef("Rank", "Rank", lambda specs, attrs: [(dtypes.int32, ())],
               lambda inputs, attrs: (np.array(inputs[0].ndim, dtype=np.int32),), 1))


def shape(input, out_type=dtypes.int32, name=None):
    return apply("Shape", [convert(input)], {"out_type": dtypes.as_dtype(out_type)}, name=name)


def size(input, out_type=dtypes.int32, name=None):
    return apply("Size", [convert(input)], {"out_type": dtypes.as_dtype(out_type)}, name=name)


def rank(input, name=None):
    return apply("Rank", [convert(input)], name=name)


# -- creation ---------------------------------------------------------------------------

def _dims_from(spec, op_type):
    if spec.const is not None:
        dims = tuple(int(d) for d in np.asarray(spec.const).reshape(-1))
        if any(d < 0 for d in dims):
            raise ValueError(f"{op_type}: dimensions must be non-negative, got {list(dims)}")
        return dims
    if spec.shape.rank != 1:
        if spec.shape.rank is None:
            return None
        raise ValueError(f"{op_type}: the shape argument must be a vector, got shape {spec.shape}")
    if spec.partial is not None:        # [rt.shape(x)[0], 1]: the dims known while tracing
        if any(d is not None and d < 0 for d in spec.partial):
            raise ValueError(f"{op_type}: dimensions must be non-negative, got "
                             f"{[-1 if d is None else d for d in spec.partial]}")
        return spec.partial
    n = spec.shape[0]
    return None if n is None else (None,) * n


def _fill_infer(specs, attrs):
    dims_spec, value = specs
    if not dims_spec.dtype.is_integer:
        raise TypeError(f"Fill: dims must be integers, got {dims_spec.dtype}")
    if value.shape.rank not in (0, None):
        raise ValueError(f"Fill: value must be a scalar, got shape {value.shape}")
    return [(value.dtype, _dims_from(dims_spec, "Fill"))]


def _fill_kernel(inputs, attrs):
    dims, value = inputs
    if np.any(dims < 0):
        raise errors.InvalidArgumentError(f"Fill: dimensions must be non-negative, got {dims.tolist()}")
    return (np.full(tuple(int(d) for d in dims), value, dtype=value.dtype),)


register(OpDef("Fill", "Fill", _fill_infer, _fill_kernel, 2, dynamic_infer=True, c_expr="{1}", generator=True))


def _shape_arg(shape_value):
    if isinstance(shape_value, TensorShape):
        shape_value = shape_value.as_list()
    if isinstance(shape_value, (int, np.integer)):
        shape_value = [shape_value]
    if isinstance(shape_value, Tensor):
        return shape_value if shape_value.dtype.is_integer else cast(shape_value, dtypes.int32)
    return convert(shape_value if not isinstance(shape_value, (list, tuple)) or len(shape_value)
                   else np.zeros(0, np.int32), dtypes.int32 if not any(isinstance(v, Tensor) for v in shape_value)
                   else None)


def fill(dims, value, name=None):
    return apply("Fill", [_shape_arg(dims), convert(value)], name=name)


@gradient("Fill")
def _fill_grad(op, grad):
    return [None, math_ops.reduce_sum(grad)]


def zeros(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    return apply("Fill", [_shape_arg(shape), convert(_zero(dtype), dtype)], name=name or "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype)
    return apply("Fill", [_shape_arg(shape), convert(_one(dtype), dtype)], name=name or "ones")


def _zero(dtype):
    return b"" if dtype is dtypes.string else np.zeros((), dtype.np)


def _one(dtype):
    return np.ones((), dtype.np)


register(OpDef("ZerosLike", "zeros_like", lambda specs, attrs: [(specs[0].dtype, specs[0].shape.dims)],
               lambda inputs, attrs: (np.zeros_like(inputs[0]),), 1, c_expr="0"))
register(OpDef("OnesLike", "ones_like", lambda specs, attrs: [(specs[0].dtype, specs[0].shape.dims)],
               lambda inputs, attrs: (np.ones_like(inputs[0]),), 1, c_expr="1"))


def zeros_like(input, dtype=None, name=None):
    x = convert(input)
    out = apply("ZerosLike", [x], name=name)
    return cast(out, dtype) if dtype is not None and dtypes.as_dtype(dtype) is not x.dtype else out


def ones_like(input, dtype=None, name=None):
    x = convert(input)
    out = apply("OnesLike", [x], name=name)
    return cast(out, dtype) if dtype is not None and dtypes.as_dtype(dtype) is not x.dtype else out


not_differentiable("ZerosLike", "OnesLike")


register(OpDef("Eye", "eye", lambda specs, attrs: [(attrs["dtype"], (attrs["num_rows"], attrs["num_columns"]))],
               lambda inputs, attrs: (np.eye(attrs["num_rows"], attrs["num_columns"], dtype=attrs["dtype"].np),), 0,
               c_expr="({i0} == {i1})", generator=True))


def eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """The identity matrix (static sizes)."""
    num_rows = int(num_rows)
    num_columns = num_rows if num_columns is None else int(num_columns)
    if num_rows < 0 or num_columns < 0:
        raise ValueError(f"eye: sizes must be non-negative, got {num_rows}x{num_columns}")
    return apply("Eye", [], {"num_rows": num_rows, "num_columns": num_columns, "dtype": dtypes.as_dtype(dtype)},
                 name=name)


def _range_infer(specs, attrs):
    start, limit, delta = specs
    if not (start.dtype is limit.dtype is delta.dtype):
        raise TypeError(f"Range: start, limit and delta must have one dtype, got "
                        f"{start.dtype}, {limit.dtype}, {delta.dtype}")
    for s in specs:
        if s.shape.rank not in (0, None):
            raise ValueError(f"Range: arguments must be scalars, got shape {s.shape}")
    if all(s.const is not None for s in specs):
        return [(start.dtype, (_range_kernel([s.const for s in specs], attrs)[0].shape[0],))]
    return [(start.dtype, (None,))]


def _range_kernel(inputs, attrs):
    start, limit, delta = (np.asarray(v)[()] for v in inputs)
    if delta == 0:
        raise errors.InvalidArgumentError("Range: delta must not be zero")
    return (np.arange(start, limit, delta, dtype=np.asarray(inputs[0]).dtype),)


register(OpDef("Range", "range", _range_infer, _range_kernel, 3, dynamic_infer=True, c_expr="({0} + ({T}){i0} * {2})",
               generator=True))


def range(start, limit=None, delta=1, dtype=None, name=None):
    """``rt.range(5)``, ``rt.range(1, n + 1)``: like Python's range, as a tensor."""
    if limit is None:
        start, limit = 0, start
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    if dtype is None and not any(isinstance(v, Tensor) for v in (start, limit, delta)):
        dtype = dtypes.float32 if any(isinstance(v, float) for v in (start, limit, delta)) else dtypes.int32
    values = convert_same("Range", [start, limit, delta], dtype)
    if dtype is not None:
        values = [v if v.dtype is dtype else cast(v, dtype) for v in values]
    return apply("Range", values, name=name)


def _linspace_infer(specs, attrs):
    start, stop, num = specs
    if start.dtype is not stop.dtype or not start.dtype.is_floating:
        raise TypeError(f"LinSpace: start and stop must share a floating dtype, got {start.dtype}, {stop.dtype}")
    n = None if num.const is None else int(num.const)
    return [(start.dtype, (n,))]


register(OpDef("LinSpace", "LinSpace", _linspace_infer,
               lambda inputs, attrs: (np.linspace(inputs[0], inputs[1], int(inputs[2]), dtype=inputs[0].dtype),), 3,
               dynamic_infer=True))


def linspace(start, stop, num, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop``; integer bounds give float64, as in TensorFlow."""
    start, stop = convert_same("LinSpace", [start, stop])
    if start.dtype.is_integer:
        start, stop = math_ops.cast(start, dtypes.float64), math_ops.cast(stop, dtypes.float64)
    return apply("LinSpace", [start, stop, convert(num, dtypes.int32)], name=name)


not_differentiable("Range", "LinSpace")


# -- reshaping --------------------------------------------------------------------------

def _reshape_infer(specs, attrs):
    x, target = specs
    dims = _dims_from_signed(target)
    if dims is None:
        return [(x.dtype, None)]
    if dims.count(-1) > 1:
        raise ValueError(f"Reshape: only one dimension can be -1, got {list(dims)}")
    n = x.shape.num_elements()
    if -1 in dims:
        known = int(np.prod([d for d in dims if d not in (-1, None)]))
        if n is not None and None not in dims:
            if known == 0 or n % known:
                raise ValueError(f"Reshape: cannot reshape a tensor of shape {x.shape} into {list(dims)}")
            dims = tuple(n // known if d == -1 else d for d in dims)
        else:
            dims = tuple(None if d == -1 else d for d in dims)
    elif n is not None and None not in dims and int(np.prod(dims)) != n:
        raise ValueError(f"Reshape: cannot reshape a tensor of shape {x.shape} ({n} elements) into {list(dims)}")
    return [(x.dtype, dims)]


def _dims_from_signed(spec):
    if spec.const is not None:
        return tuple(int(d) for d in np.asarray(spec.const).reshape(-1))
    if spec.partial is not None:
        return spec.partial
    if spec.shape.rank == 1 and spec.shape[0] is not None:
        return (None,) * spec.shape[0]
    return None


def _reshape_kernel(inputs, attrs):
    x, target = inputs
    try:
        return (x.reshape(tuple(int(d) for d in target)),)
    except ValueError:
        raise errors.InvalidArgumentError(
            f"Reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) into {target.tolist()}") from None


register(OpDef("Reshape", "Reshape", _reshape_infer, _reshape_kernel, 2, dynamic_infer=True, view="reshape"))


def reshape(tensor, shape, name=None):
    return apply("Reshape", [convert(tensor), _shape_arg(shape)], name=name)


@gradient("Reshape")
def _reshape_grad(op, grad):
    return [reshape_to(grad, op.inputs[0]), None]


def _broadcast_to_infer(specs, attrs):
    x, shape = specs
    dims = _dims_from(shape, "BroadcastTo")
    if dims is not None and x.shape.rank is not None:
        if len(dims) < x.shape.rank or any(d not in (1, None, t) and t is not None
                                           for d, t in zip(x.shape.dims[::-1], dims[::-1])):
            raise ValueError(f"BroadcastTo: a tensor of shape {x.shape} cannot broadcast to {list(dims)}")
    return [(x.dtype, dims)]


def _broadcast_to_kernel(inputs, attrs):
    x, shape = inputs
    try:
        return (_contiguous(np.broadcast_to(x, tuple(int(d) for d in shape)), x.dtype),)
    except ValueError:
        raise errors.InvalidArgumentError(f"BroadcastTo: a tensor of shape {x.shape} cannot broadcast to "
                                          f"{shape.tolist()}") from None


register(OpDef("BroadcastTo", "BroadcastTo", _broadcast_to_infer, _broadcast_to_kernel, 2, dynamic_infer=True))


def broadcast_to(input, shape, name=None):
    """``input`` repeated along axes of size 1 (and new leading axes) to ``shape`` (``tf.broadcast_to``)."""
    return apply("BroadcastTo", [convert(input), _shape_arg(shape)], name=name)


@gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    # the output is the "other operand": an axis of unknown size may have been broadcast
    return [unbroadcast(grad, op.inputs[0], grad), None]


def _transpose_infer(specs, attrs):
    x, perm = specs[0], attrs["perm"]
    if x.shape.rank is None:
        return [(x.dtype, None)]
    perm = perm if perm is not None else tuple(reversed(builtins_range(x.shape.rank)))
    if sorted(perm) != list(builtins_range(x.shape.rank)):
        raise ValueError(f"Transpose: perm {list(perm)} is not a permutation of the {x.shape.rank} dims of {x.shape}")
    return [(x.dtype, tuple(x.shape.dims[p] for p in perm))]


import builtins as _builtins  # noqa: E402

builtins_range = _builtins.range

register(OpDef("Transpose", "transpose", _transpose_infer,
               lambda inputs, attrs: (_contiguous(np.transpose(inputs[0], attrs["perm"]), inputs[0].dtype),), 1,
               view="transpose"))


def transpose(a, perm=None, name=None):
    perm = None if perm is None else tuple(int(p) for p in (perm.numpy() if isinstance(perm, EagerTensor) else perm))
    return apply("Transpose", [convert(a)], {"perm": perm}, name=name)


@gradient("Transpose")
def _transpose_grad(op, grad):
    perm = op.attrs["perm"]
    if perm is None:
        return [transpose(grad)]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [transpose(grad, inverse)]


def _axis_in(axis, rank, op_type):
    if not -rank <= axis < rank:
        raise ValueError(f"{op_type}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _concat_infer(specs, attrs):
    if not specs:
        raise ValueError("ConcatV2: needs at least one tensor")
    dtype = specs[0].dtype
    if any(s.dtype is not dtype for s in specs):
        raise TypeError(f"ConcatV2: all tensors must have one dtype, got {', '.join(str(s.dtype) for s in specs)}")
    ranks = {s.shape.rank for s in specs if s.shape.rank is not None}
    if not ranks:
        return [(dtype, None)]
    if len(ranks) > 1:
        raise ValueError(f"ConcatV2: tensors have different ranks: {', '.join(str(s.shape) for s in specs)}")
    rank = ranks.pop()
    axis = _axis_in(attrs["axis"], rank, "ConcatV2")
    out = []
    for i in builtins_range(rank):
        dims = [s.shape.dims[i] for s in specs if s.shape.rank is not None]
        if i == axis:
            out.append(None if None in dims or len(dims) != len(specs) else sum(dims))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ValueError(f"ConcatV2: dimension {i} differs: {', '.join(str(s.shape) for s in specs)}")
            out.append(known.pop() if known else None)
    return [(dtype, tuple(out))]


register(OpDef("ConcatV2", "concat", _concat_infer,
               lambda inputs, attrs: (np.concatenate(inputs, axis=attrs["axis"]),), None))


def concat(values, axis, name=None):
    values = convert_same("ConcatV2", list(values), list_input=True)
    return apply("ConcatV2", values, {"axis": int(axis)}, name=name)


@gradient("ConcatV2")
def _concat_grad(op, grad):
    rank = grad.shape.rank
    if rank is None:
        raise ValueError("the gradient of ConcatV2 needs the rank of its result")
    axis = op.attrs["axis"] % rank
    grads, start = [], 0
    for x in op.inputs:
        size = x.shape[axis]
        if size is None:
            size = strided_slice(shape(x), axis)
        stop = math_ops.add(start, size) if not isinstance(start, int) or not isinstance(size, int) \
            else start + size
        grads.append(strided_slice(grad, (slice(None),) * axis + (slice(start, stop),)))
        start = stop
    return grads


def _pack_infer(specs, attrs):
    if not specs:
        raise ValueError("Pack: needs at least one tensor")
    dtype = specs[0].dtype
    if any(s.dtype is not dtype for s in specs):
        raise TypeError(f"Pack: all tensors must have one dtype, got {', '.join(str(s.dtype) for s in specs)}")
    shape = specs[0].shape
    for s in specs[1:]:
        if not shape.is_compatible_with(s.shape):
            raise ValueError(f"Pack: shapes differ: {', '.join(str(x.shape) for x in specs)}")
        shape = shape.merge_with(s.shape)
    if shape.rank is None:
        return [(dtype, None)]
    axis = _axis_in(attrs["axis"], shape.rank + 1, "Pack")
    dims = list(shape.dims)
    dims.insert(axis, len(specs))
    return [(dtype, tuple(dims))]


register(OpDef("Pack", "stack", _pack_infer, lambda inputs, attrs: (np.stack(inputs, axis=attrs["axis"]),), None))


def stack(values, axis=0, name=None):
    values = convert_same("Pack", list(values), list_input=True)
    return apply("Pack", values, {"axis": int(axis)}, name=name)


@gradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=len(op.inputs), axis=op.attrs["axis"])


def _unpack_infer(specs, attrs):
    x = specs[0]
    if x.shape.rank is None:
        raise ValueError("Unpack: the rank of the input must be known")
    axis = _axis_in(attrs["axis"], x.shape.rank, "Unpack")
    dims = list(x.shape.dims)
    if dims[axis] is not None and dims[axis] != attrs["num"]:
        raise ValueError(f"Unpack: dimension {axis} of {x.shape} is not {attrs['num']}")
    del dims[axis]
    return [(x.dtype, tuple(dims))] * attrs["num"]


def _unpack_kernel(inputs, attrs):
    x, axis = inputs[0], attrs["axis"]
    if x.shape[axis] != attrs["num"]:
        raise errors.InvalidArgumentError(f"Unpack: dimension {axis} of {x.shape} is not {attrs['num']}")
    return tuple(_contiguous(np.take(x, i, axis=axis), x.dtype) for i in builtins_range(attrs["num"]))


register(OpDef("Unpack", "unstack", _unpack_infer, _unpack_kernel, 1, view="unpack"))


def unstack(value, num=None, axis=0, name=None):
    value = convert(value)
    if value.shape.rank is not None:
        _axis_in(int(axis), value.shape.rank, "Unpack")
    if num is None:
        if value.shape.rank is None or value.shape[axis] is None:
            raise ValueError(f"unstack: cannot infer num from shape {value.shape}; pass num=")
        num = value.shape[axis]
    out = apply("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name)
    return list(out) if isinstance(out, tuple) else [out]


@gradient("Unpack")
def _unpack_grad(op, *grads):
    parts = [zeros_like(t) if g is None else g for t, g in zip(op.outputs, grads)]
    return [stack(parts, axis=op.attrs["axis"])]


def _expand_infer(specs, attrs):
    x = specs[0]
    if x.shape.rank is None:
        return [(x.dtype, None)]
    axis = _axis_in(attrs["axis"], x.shape.rank + 1, "ExpandDims")
    dims = list(x.shape.dims)
    dims.insert(axis, 1)
    return [(x.dtype, tuple(dims))]


register(OpDef("ExpandDims", "ExpandDims", _expand_infer,
               lambda inputs, attrs: (np.expand_dims(inputs[0], attrs["axis"]),), 1, view="expand_dims"))


def expand_dims(input, axis, name=None):
    return apply("ExpandDims", [convert(input)], {"axis": int(axis)}, name=name)


def _squeeze_infer(specs, attrs):
    x, axes = specs[0], attrs["axis"]
    if x.shape.rank is None:
        return [(x.dtype, None)]
    rank = x.shape.rank
    if axes is None:
        if None in x.shape.dims:
            raise ValueError(f"Squeeze: cannot squeeze unknown dimensions of {x.shape} without axis=")
        return [(x.dtype, tuple(d for d in x.shape.dims if d != 1))]
    axes = {_axis_in(a, rank, "Squeeze") for a in axes}
    for a in axes:
        if x.shape.dims[a] not in (1, None):
            raise ValueError(f"Squeeze: dimension {a} of {x.shape} is not 1")
    return [(x.dtype, tuple(d for i, d in enumerate(x.shape.dims) if i not in axes))]


def _squeeze_kernel(inputs, attrs):
    axes = attrs["axis"]
    try:
        return (np.squeeze(inputs[0], axis=axes),)
    except ValueError as e:
        raise errors.InvalidArgumentError(f"Squeeze: {e}") from None


register(OpDef("Squeeze", "Squeeze", _squeeze_infer, _squeeze_kernel, 1, view="squeeze"))


def squeeze(input, axis=None, name=None):
    if axis is not None:
        axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)
    return apply("Squeeze", [convert(input)], {"axis": axis}, name=name)


@gradient("ExpandDims", "Squeeze")
def _reshaped_grad(op, grad):
    return [reshape_to(grad, op.inputs[0])]


def _tile_infer(specs, attrs):
    x, multiples = specs
    if multiples.const is None:
        return [(x.dtype, None if x.shape.rank is None else (None,) * x.shape.rank)]
    mult = [int(m) for m in np.asarray(multiples.const).reshape(-1)]
    if x.shape.rank is not None and len(mult) != x.shape.rank:
        raise ValueError(f"Tile: multiples {mult} must have one entry per dimension of {x.shape}")
    if x.shape.rank is None:
        return [(x.dtype, (None,) * len(mult))]
    return [(x.dtype, tuple(None if d is None else d * m for d, m in zip(x.shape.dims, mult)))]


def _tile_kernel(inputs, attrs):
    x, multiples = inputs
    if len(multiples) != x.ndim or np.any(multiples < 0):
        raise errors.InvalidArgumentError(f"Tile: bad multiples {multiples.tolist()} for shape {x.shape}")
    return (np.tile(x, tuple(int(m) for m in multiples)),)


register(OpDef("Tile", "Tile", _tile_infer, _tile_kernel, 2, dynamic_infer=True))


def tile(input, multiples, name=None):
    return apply("Tile", [convert(input), _shape_arg(multiples)], name=name)


@gradient("Tile")
def _tile_grad(op, grad):
    """Sum the copies: view the result as [m0, d0, m1, d1, ...] and reduce the multiples' axes."""
    x, multiples = op.inputs
    rank = x.shape.rank
    if rank is None:
        raise ValueError("the gradient of Tile needs the rank of its input")
    split = reshape(stack([cast(multiples, dtypes.int32), shape_tensor(x)], axis=1), [-1])
    return [math_ops.reduce_sum(apply("Reshape", [grad, split]), list(builtins_range(0, 2 * rank, 2))), None]


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


def _pad_infer(specs, attrs):
    x, paddings = specs[0], specs[1]
    if not paddings.dtype.is_integer:
        raise TypeError(f"{attrs['mode'].title()}Pad: paddings must be integers, got {paddings.dtype}")
    if len(specs) == 3 and (specs[2].dtype is not x.dtype or specs[2].shape.rank not in (0, None)):
        raise TypeError(f"PadV2: constant_values must be a {x.dtype} scalar, got {specs[2].dtype}{specs[2].shape}")
    rank = x.shape.rank
    if paddings.shape.rank not in (2, None) or (paddings.shape.rank == 2 and paddings.shape[1] not in (2, None)):
        raise ValueError(f"Pad: paddings must have shape [rank, 2], got {paddings.shape}")
    if rank is not None and paddings.shape.rank == 2 and paddings.shape[0] not in (rank, None):
        raise ValueError(f"Pad: paddings has {paddings.shape[0]} rows for a tensor of rank {rank}")
    if paddings.const is None:
        return [(x.dtype, None if rank is None else (None,) * rank)]
    pads = np.asarray(paddings.const).reshape(-1, 2)
    if np.any(pads < 0):
        raise ValueError(f"Pad: paddings must be non-negative, got {pads.tolist()}")
    dims = x.shape.dims if rank is not None else (None,) * len(pads)
    for d, (before, after) in zip(dims, pads):
        if attrs["mode"] != "CONSTANT" and d is not None and max(before, after) > d - (attrs["mode"] == "REFLECT"):
            raise ValueError(f"MirrorPad: paddings {pads.tolist()} are too large for shape {x.shape} "
                             f"in {attrs['mode']} mode")
    return [(x.dtype, tuple(None if d is None else d + int(b) + int(a) for d, (b, a) in zip(dims, pads)))]


def _pad_kernel(inputs, attrs):
    x, paddings = inputs[0], np.asarray(inputs[1]).reshape(-1, 2)
    if len(paddings) != x.ndim or np.any(paddings < 0):
        raise errors.InvalidArgumentError(f"Pad: bad paddings {paddings.tolist()} for shape {x.shape}")
    widths = [(int(b), int(a)) for b, a in paddings]
    mode = attrs["mode"]
    if mode == "CONSTANT":
        return (np.pad(x, widths, mode="constant", constant_values=inputs[2]),)
    if any(max(w) > n - (mode == "REFLECT") for w, n in zip(widths, x.shape)):
        raise errors.InvalidArgumentError(f"MirrorPad: paddings {paddings.tolist()} are too large for shape "
                                          f"{x.shape} in {mode} mode")
    return (np.pad(x, widths, mode=_PAD_MODES[mode]),)


register(OpDef("PadV2", "Pad", _pad_infer, _pad_kernel, 3, dynamic_infer=True))
register(OpDef("MirrorPad", "MirrorPad", _pad_infer, _pad_kernel, 2, dynamic_infer=True))


def _pad_source_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """For each position along a padded axis, the position of the input it copies (-1: a constant)."""
    j = np.arange(-before, n + after)
    if mode == "CONSTANT":
        return np.where((j >= 0) & (j < n), j, -1)
    shift = 0 if mode == "REFLECT" else 1
    j = np.where(j < 0, -j - shift, j)
    return np.where(j >= n, 2 * n - 2 + shift - j, j)


def _pad_grad_infer(specs, attrs):
    grad, paddings = specs[0], specs[1]
    rank = grad.shape.rank
    if rank is None or paddings.const is None:
        return [(grad.dtype, None if rank is None else (None,) * rank)]
    pads = np.asarray(paddings.const).reshape(-1, 2)
    return [(grad.dtype, tuple(None if d is None else d - int(b) - int(a)
                               for d, (b, a) in zip(grad.shape.dims, pads)))]


def _pad_grad_kernel(inputs, attrs):
    """The adjoint of padding: each input element gets the sum of the padded positions that copy it."""
    out, paddings = inputs[0], np.asarray(inputs[1]).reshape(-1, 2)
    for axis, (before, after) in enumerate(paddings):
        n = out.shape[axis] - int(before) - int(after)
        source = _pad_source_index(n, int(before), int(after), attrs["mode"])
        keep = source >= 0
        folded = np.zeros(out.shape[:axis] + (n,) + out.shape[axis + 1:], out.dtype)
        np.add.at(folded, (slice(None),) * axis + (source[keep],), np.compress(keep, out, axis=axis))
        out = folded
    return (out,)


# The gradient of a pad with respect to the padded tensor (TF's Slice for PadV2, MirrorPadGrad).
register(OpDef("PadGrad", "PadGrad", _pad_grad_infer, _pad_grad_kernel, 2, dynamic_infer=True))


@gradient("PadV2", "MirrorPad")
def _pad_grad(op, grad):
    x, paddings = op.inputs[0], op.inputs[1]
    dx = apply("PadGrad", [grad, paddings], {"mode": op.attrs["mode"]})
    if op.type == "MirrorPad":
        return [dx, None]
    # the constant fills every padded position: its gradient is what the input's positions did not take
    return [dx, None, math_ops.subtract(math_ops.reduce_sum(grad), math_ops.reduce_sum(dx))]


@gradient("PadGrad")
def _pad_grad_grad(op, grad):
    paddings = op.inputs[1]
    if op.attrs["mode"] == "CONSTANT":
        return [apply("PadV2", [grad, paddings, convert(0, grad.dtype)], {"mode": "CONSTANT"}), None]
    return [apply("MirrorPad", [grad, paddings], {"mode": op.attrs["mode"]}), None]


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """``tensor`` with ``paddings[i] = [before, after]`` values added around dimension ``i`` (``tf.pad``).

    ``mode`` is ``"CONSTANT"`` (``constant_values``), ``"REFLECT"`` or ``"SYMMETRIC"``.

    Example:
        >>> import runtime as rt
        >>> rt.pad(rt.constant([[1, 2]]), [[1, 0], [0, 1]]).numpy().tolist()
        [[0, 0, 0], [1, 2, 0]]
    """
    mode = str(mode).upper()
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}")
    tensor = convert(tensor)
    paddings = paddings if isinstance(paddings, Tensor) else convert(paddings, dtypes.int32)
    if mode == "CONSTANT":
        return apply("PadV2", [tensor, paddings, convert(constant_values, tensor.dtype)], {"mode": mode},
                     name=name)
    return apply("MirrorPad", [tensor, paddings], {"mode": mode}, name=name)


def _gather_infer(specs, attrs):
    params, indices = specs
    if not indices.dtype.is_integer:
        raise TypeError(f"GatherV2: indices must be integers, got {indices.dtype}")
    if params.shape.rank is None or indices.shape.rank is None:
        return [(params.dtype, None)]
    axis = _axis_in(attrs["axis"], params.shape.rank, "GatherV2")
    dims = params.shape.dims[:axis] + indices.shape.dims + params.shape.dims[axis + 1:]
    return [(params.dtype, dims)]


def _gather_kernel(inputs, attrs):
    params, indices = inputs
    axis = attrs["axis"] % params.ndim
    n = params.shape[axis]
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = indices[(indices < 0) | (indices >= n)].reshape(-1)[0]
        raise errors.InvalidArgumentError(f"GatherV2: indices[...] = {bad} is not in [0, {n})")
    return (np.take(params, indices, axis=axis),)


register(OpDef("GatherV2", "GatherV2", _gather_infer, _gather_kernel, 2, view="gather"))


def gather(params, indices, axis=0, name=None):
    """Elements of ``params`` at ``indices`` along ``axis``; an index out of range is an InvalidArgumentError."""
    params = convert(params)
    indices = convert(indices)
    if isinstance(indices, EagerTensor) and not indices.dtype.is_integer:
        raise TypeError(f"gather: indices must be integers, got {indices.dtype}")
    return apply("GatherV2", [params, indices], {"axis": int(axis)}, name=name)


@gradient("GatherV2")
def _gather_grad(op, grad):
    """Scatter-add the gathered rows back: segment sums over the indices, the gather axis moved first."""
    params, indices = op.inputs
    rank = params.shape.rank
    if rank is None or indices.shape.rank is None:
        raise ValueError("the gradient of GatherV2 needs the ranks of its inputs")
    axis = op.attrs["axis"] % rank
    k = indices.shape.rank
    if axis:            # the gathered axes first: grad [p0..p(a-1), i..., rest] -> [i..., p0..p(a-1), rest]
        perm = [*builtins_range(axis, axis + k), *builtins_range(axis), *builtins_range(axis + k, k + rank - 1)]
        grad = transpose(grad, perm)
    size = params.shape[axis]
    size = strided_slice(shape(params), axis) if size is None else size
    summed = math_ops.unsorted_segment_sum(grad, cast(indices, dtypes.int32) if indices.dtype is not dtypes.int32
                                           else indices, size)
    if axis:
        perm = list(builtins_range(1, axis + 1)) + [0] + list(builtins_range(axis + 1, rank))
        summed = transpose(summed, perm)
    return [summed, None]


# -- indexing -----------------------------------------------------------------------------
# The index spec is a tuple of items: ("i", k) integer index, ("s", start, stop, step) slice,
# ("n",) newaxis, ("e",) ellipsis. An entry that is ("t", j) refers to dynamic input j + 1.

def _slice_infer(specs, attrs):
    x, spec = specs[0], attrs["spec"]
    for s in specs[1:]:
        if not s.dtype.is_integer or s.shape.rank not in (0, None):
            raise TypeError(f"StridedSlice: tensor indices must be integer scalars, got {s.dtype}{s.shape}")
    if x.shape.rank is None:
        return [(x.dtype, None)]
    dims = list(x.shape.dims)
    consumed = sum(1 for item in spec if item[0] in ("i", "s"))
    if consumed > len(dims):
        raise ValueError(f"StridedSlice: too many indices ({consumed}) for a tensor of shape {x.shape}")
    out, pos = [], 0
    for item in spec:
        kind = item[0]
        if kind == "e":
            n = len(dims) - consumed
            out.extend(dims[pos:pos + n])
            pos += n
        elif kind == "n":
            out.append(1)
        elif kind == "i":
            k = item[1]
            if isinstance(k, int) and dims[pos] is not None and not -dims[pos] <= k < dims[pos]:
                raise ValueError(f"StridedSlice: index {k} is out of bounds for dimension {pos} "
                                 f"of size {dims[pos]} (shape {x.shape})")
            pos += 1
        else:
            _, start, stop, step = item
            if step == 0:
                raise ValueError("StridedSlice: slice step cannot be zero")
            dim = dims[pos]
            pos += 1
            if dim is None or any(isinstance(v, tuple) for v in (start, stop, step)):
                out.append(None)
            else:
                out.append(len(builtins_range(*slice(start, stop, step).indices(dim))))
    out.extend(dims[pos:])
    return [(x.dtype, tuple(out))]


def _resolve(v, dynamic):
    return int(dynamic[v[1]]) if isinstance(v, tuple) else v


def _slice_kernel(inputs, attrs):
    x, dynamic = inputs[0], inputs[1:]
    index = _slice_index(attrs["spec"], dynamic)
    try:
        return (_contiguous(x[index], x.dtype),)
    except IndexError as e:
        raise errors.InvalidArgumentError(f"StridedSlice: {e} (shape {x.shape})") from None


def _slice_index(spec, dynamic) -> tuple:
    """The numpy index for a slice spec (see above) and the values of its dynamic entries."""
    index = []
    for item in spec:
        kind = item[0]
        if kind == "e":
            index.append(Ellipsis)
        elif kind == "n":
            index.append(None)
        elif kind == "i":
            index.append(_resolve(item[1], dynamic))
        else:
            start, stop, step = (_resolve(v, dynamic) for v in item[1:])
            if step == 0:
                raise errors.InvalidArgumentError("StridedSlice: slice step cannot be zero")
            index.append(slice(start, stop, step))
    return tuple(index)


register(OpDef("StridedSlice", "strided_slice", _slice_infer, _slice_kernel, None, view="strided_slice"))


def strided_slice(x, key, name=None):
    """``x[key]`` for ints, slices, ``None``, ``...`` and integer scalar tensors."""
    x = convert(x)
    if not isinstance(key, tuple):
        key = (key,)
    dynamic: list = []

    def entry(v):
        if v is None:
            return None
        if isinstance(v, EagerTensor):
            return int(v)
        if isinstance(v, Tensor):
            dynamic.append(v)
            return ("t", len(dynamic) - 1)
        if isinstance(v, (int, np.integer)):
            return int(v)
        raise TypeError(f"Only integers, slices, None, ... and integer scalar tensors are valid indices, "
                        f"got {type(v).__name__} {v!r}")

    spec = []
    for item in key:
        if item is Ellipsis:
            spec.append(("e",))
        elif item is None:
            spec.append(("n",))
        elif isinstance(item, slice):
            spec.append(("s", entry(item.start), entry(item.stop), entry(item.step)))
        else:
            if isinstance(item, (list, np.ndarray)) or (isinstance(item, Tensor) and item.shape.rank not in (0, None)):
                raise TypeError("Tensor indexing with a list or array is not supported; use rt.gather")
            spec.append(("i", entry(item)))
    if sum(1 for s in spec if s[0] == "e") > 1:
        raise ValueError("An index can only have a single ellipsis ('...')")
    return apply("StridedSlice", [x] + dynamic, {"spec": tuple(spec)}, name=name)


@gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, dynamic = op.inputs[0], list(op.inputs[1:])
    return [apply("StridedSliceGrad", [shape_tensor(x), grad] + dynamic, {"spec": op.attrs["spec"]})] + \
        [None] * len(dynamic)


def _slice_grad_infer(specs, attrs):
    return [(specs[1].dtype, _dims_from(specs[0], "StridedSliceGrad"))]


def _slice_grad_kernel(inputs, attrs):
    shape, grad, dynamic = inputs[0], inputs[1], inputs[2:]
    out = np.zeros(tuple(int(d) for d in shape), grad.dtype)
    try:
        out[_slice_index(attrs["spec"], dynamic)] = grad
    except (IndexError, ValueError) as e:
        raise errors.InvalidArgumentError(f"StridedSliceGrad: {e} (shape {out.shape})") from None
    return (out,)


# The gradient of x[spec]: zeros of x's shape with the slice's gradient written where the slice was.
register(OpDef("StridedSliceGrad", "StridedSliceGrad", _slice_grad_infer, _slice_grad_kernel, None,
               dynamic_infer=True))


@gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    dynamic = list(op.inputs[2:])
    return [None, apply("StridedSlice", [grad] + dynamic, {"spec": op.attrs["spec"]})] + [None] * len(dynamic)


def _one_hot_infer(specs, attrs):
    indices = specs[0]
    if not indices.dtype.is_integer:
        raise TypeError(f"OneHot: indices must be integers, got {indices.dtype}")
    if indices.shape.rank is None:
        return [(attrs["dtype"], None)]
    dims = list(indices.shape.dims)
    axis = attrs["axis"]
    if not -1 <= axis <= len(dims):
        raise ValueError(f"OneHot: axis {axis} is out of range for indices of rank {len(dims)}")
    dims.insert(len(dims) if axis == -1 else axis, attrs["depth"])
    return [(attrs["dtype"], tuple(dims))]


def _one_hot_kernel(inputs, attrs):
    indices, depth, axis = inputs[0], attrs["depth"], attrs["axis"]
    hot = np.expand_dims(indices, -1) == np.arange(depth)       # out-of-range indices give all-off rows
    out = np.where(hot, attrs["on_value"], attrs["off_value"]).astype(attrs["dtype"].np)
    if axis != -1:
        out = np.ascontiguousarray(np.moveaxis(out, -1, axis))
    return (out,)


register(OpDef("OneHot", "OneHot", _one_hot_infer, _one_hot_kernel, 1))
not_differentiable("OneHot")


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """Rows of ``depth`` values: ``on_value`` at each index, ``off_value`` elsewhere (``tf.one_hot``)."""
    indices = convert(indices)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    for value in (on, off):
        if isinstance(value, Tensor) and not isinstance(value, EagerTensor):
            raise TypeError("one_hot: on_value and off_value must be Python or eager values")
    axis = -1 if axis is None else int(axis)
    if isinstance(depth, Tensor) and not isinstance(depth, EagerTensor):
        return _one_hot_traced(indices, depth, on, off, axis, dtype)
    attrs = {"depth": int(depth), "axis": axis, "dtype": dtype,
             "on_value": to_array(on, dtype).item(), "off_value": to_array(off, dtype).item()}
    return apply("OneHot", [indices], attrs, name=name)


def _one_hot_traced(indices, depth, on, off, axis: int, dtype):
    """``one_hot`` with a depth known only when the graph runs (``rt.shape(logits)[1]``, as tutorials write it):
    the indices compared with ``range(depth)``, which every mode lowers as it does the comparison. Out-of-range
    and negative indices give all-off rows, as the OneHot op does."""
    rank = indices.shape.rank
    if axis != -1 and rank is None:
        raise ValueError("one_hot: an axis other than -1 needs indices of known rank when the depth is a tensor")
    if not (-1 <= axis <= (rank if rank is not None else 0)):
        raise ValueError(f"one_hot: axis {axis} is out of range for indices of rank {rank}")
    columns = range(cast(depth, indices.dtype))
    hot = math_ops.equal(expand_dims(indices, -1), columns)
    out = math_ops.where(hot, convert(to_array(on, dtype)), convert(to_array(off, dtype)))
    if axis in (-1, rank):
        return out
    perm = list(builtins_range(rank))
    return transpose(out, perm[:axis] + [rank] + perm[axis:])


# -- sizes that are static or not --------------------------------------------------------------

def dim_size(x, axis: int):
    """The size of ``x`` along ``axis``: an int when the graph knows it, else a scalar int32 tensor."""
    size = x.shape.dims[axis] if x.shape.dims is not None else None
    if size is not None:
        return size
    return strided_slice(shape(x), axis)


def size_product(sizes):
    """The product of sizes (ints, or scalar int32 tensors): an int while every factor is one."""
    out = 1
    for s in sizes:
        out = out * s if isinstance(out, int) and isinstance(s, int) else math_ops.multiply(out, s)
    return out
