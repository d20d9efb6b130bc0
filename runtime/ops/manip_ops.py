"""Rearranging tensors: ``rt.split``, ``rt.reverse``, ``rt.roll`` and ``rt.ensure_shape``.

``split``, ``reverse`` and ``roll`` are strided slices (and a concatenation for ``roll``): views that native
code reads in place, with the gradients of slicing. ``EnsureShape`` is the identity that checks (at run
time, where the graph does not know them) the sizes it promises.
"""
from __future__ import annotations

import numpy as np

from runtime import context, dtypes, errors
from runtime.graph import SymbolicTensor
from runtime.ops import array_ops, logging_ops, math_ops
from runtime.ops.array_ops import dim_size, strided_slice
from runtime.ops.registry import OpDef, apply, convert, get_opdef, gradient, register
from runtime.shapes import TensorShape, as_shape
from runtime.tensor import EagerTensor, Tensor


def _axis(api: str, axis, rank: int) -> int:
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ValueError(f"{api}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def _known_rank(api: str, x) -> int:
    if x.shape.rank is None:
        raise ValueError(f"{api} needs the rank of its input, unknown for {x}")
    return x.shape.rank


def _along(axis: int, piece: slice) -> tuple:
    return (slice(None),) * axis + (piece,)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """``value`` cut along ``axis`` (``tf.split``): into ``num_or_size_splits`` equal parts (an int), or parts of
    the given sizes (a list; one of them may be -1: the rest).

    Example:
        >>> import runtime as rt
        >>> [p.numpy().tolist() for p in rt.split(rt.range(6), [1, -1, 2])]
        [[0], [1, 2, 3], [4, 5]]
    """
    x = convert(value)
    rank = _known_rank("split", x)
    if rank == 0:
        raise ValueError("split: cannot split a scalar")
    axis = _axis("split", axis, rank)
    n = dim_size(x, axis)
    if isinstance(num_or_size_splits, (int, np.integer)) or (
            isinstance(num_or_size_splits, Tensor) and num_or_size_splits.shape.rank == 0):
        count = int(num_or_size_splits)
        if count <= 0:
            raise ValueError(f"split: the number of parts must be positive, got {count}")
        if isinstance(n, int):
            if n % count:
                raise ValueError(f"split: dimension {axis} of size {n} does not divide into {count} equal parts "
                                 f"(shape {x.shape})")
            sizes = [n // count] * count
        else:
            check = math_ops.equal(math_ops.floormod(n, count), 0)
            if context.current_graph() is not None:
                logging_ops.Assert(check, [(f"split: dimension {axis} does not divide into {count} equal parts; "
                                            "its size is"), n])
            part = math_ops.floordiv(n, count)
            sizes = [part] * count
    else:
        sizes = [s for s in (num_or_size_splits.numpy().tolist() if isinstance(num_or_size_splits, Tensor)
                             else num_or_size_splits)]
        sizes = [int(s) for s in sizes]
        if num is not None and int(num) != len(sizes):
            raise ValueError(f"split: num={num} but {len(sizes)} sizes were given")
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ValueError(f"split: sizes must be non-negative, with at most one -1, got {sizes}")
        if -1 in sizes:
            known = sum(s for s in sizes if s != -1)
            rest = n - known if isinstance(n, int) else math_ops.subtract(n, known)
            if isinstance(rest, int) and rest < 0:
                raise ValueError(f"split: sizes {sizes} add up to more than dimension {axis} of {x.shape}")
            sizes = [rest if s == -1 else s for s in sizes]
        elif isinstance(n, int) and sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, not to dimension {axis} of {x.shape} "
                             f"({n})")
    parts, start = [], 0
    for size in sizes:
        stop = start + size if isinstance(start, int) and isinstance(size, int) else math_ops.add(start, size)
        parts.append(strided_slice(x, _along(axis, slice(start, stop)), name=name))
        start = stop
    return parts


def reverse(tensor, axis, name=None):
    """``tensor`` with the order of its elements along each of ``axis`` reversed (``tf.reverse``)."""
    x = convert(tensor)
    rank = _known_rank("reverse", x)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(np.asarray(
        axis.numpy() if isinstance(axis, Tensor) else axis).reshape(-1))
    axes = sorted({_axis("reverse", a, rank) for a in axes})
    if not axes:
        return array_ops.identity(x, name=name)
    key = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(rank))
    return strided_slice(x, key, name=name)


def roll(input, shift, axis, name=None):
    """``input`` with its elements shifted by ``shift`` along ``axis``, those pushed past the end coming back
    at the start (``tf.roll``); ``shift`` and ``axis`` may be lists (shifts on one axis add up)."""
    x = convert(input)
    rank = _known_rank("roll", x)
    shifts = shift if isinstance(shift, (list, tuple)) else [shift]
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    total: dict = {}
    for s, a in zip(shifts, axes):
        a = _axis("roll", a, rank)
        if isinstance(s, Tensor) and not isinstance(s, np.ndarray):
            s = s if s.dtype is dtypes.int32 else math_ops.cast(s, dtypes.int32)
        else:
            s = int(s)
        prev = total.get(a, 0)
        total[a] = prev + s if isinstance(prev, int) and isinstance(s, int) else math_ops.add(prev, s)
    for a, s in sorted(total.items()):
        n = dim_size(x, a)
        if isinstance(n, int) and isinstance(s, int):
            if n == 0:
                continue
            cut = (n - s % n) % n
            if cut == 0:
                continue
        else:
            cut = math_ops.floormod(math_ops.subtract(n, math_ops.floormod(s, n)), n) if not (
                isinstance(n, int) and n == 0) else 0
        head = strided_slice(x, _along(a, slice(cut, None)))
        tail = strided_slice(x, _along(a, slice(None, cut)))
        x = array_ops.concat([head, tail], a)
    return array_ops.identity(x, name=name)


# -- EnsureShape ----------------------------------------------------------------------------

def _ensure_infer(specs, attrs):
    x, shape = specs[0], attrs["shape"]
    if not x.shape.is_compatible_with(shape):
        raise ValueError(f"EnsureShape: the tensor's shape {x.shape} is not compatible with the expected shape "
                         f"{shape}")
    return [(x.dtype, x.shape.merge_with(shape).dims)]


def _ensure_kernel(inputs, attrs):
    x, shape = inputs[0], attrs["shape"]
    if not shape.is_compatible_with(TensorShape(x.shape)):
        raise errors.InvalidArgumentError(f"EnsureShape: shape of tensor {list(x.shape)} is not compatible with "
                                          f"expected shape {shape}")
    return (x,)


register(OpDef("EnsureShape", "EnsureShape", _ensure_infer, _ensure_kernel, 1))


@gradient("EnsureShape")
def _ensure_grad(op, grad):
    return [grad]


def ensure_shape(x, shape, name=None):
    """``x``, checked to have ``shape`` (``None`` dims match any size): a ``ValueError`` while tracing when the
    graph shows a mismatch, an ``InvalidArgumentError`` at run time otherwise (``tf.ensure_shape``); the result
    has the static shape of both."""
    return apply("EnsureShape", [convert(x)], {"shape": as_shape(shape)}, name=name)


def set_shape(tensor, shape) -> None:
    """``tensor.set_shape(shape)`` (``tf.Tensor.set_shape``): the static shape of a graph tensor made more specific.

    The promise is checked when the graph runs: the tensor becomes the output of an ``EnsureShape`` of what its op
    produced (native code relies on static dims, so an unchecked promise could read out of bounds). That needs the
    tensor unused so far (the usual place: right after a ``py_function`` or a dataset map's op); a function's
    argument or a tensor already used gets a ``ValueError`` suggesting ``rt.ensure_shape``. On an eager tensor it
    only checks that the shapes are compatible, as TensorFlow does.
    """
    shape = as_shape(shape)
    if not tensor.shape.is_compatible_with(shape):
        raise ValueError(f"Tensor's shape {tensor.shape} is not compatible with supplied shape {shape}")
    if isinstance(tensor, EagerTensor) or not isinstance(tensor, SymbolicTensor):
        return
    merged = tensor.shape.merge_with(shape)
    if merged.dims == tensor.shape.dims:
        return
    producer, graph = tensor.op, tensor.op.graph
    if producer.type == "Placeholder" or graph is not context.current_graph() or tensor in graph.outputs or any(
            t is tensor for op in graph.operations for t in op.inputs):
        raise ValueError(f"set_shape({shape}) on {tensor}: rt can check the new shape only for a tensor its function "
                         "has not used yet and did not receive as an argument; use x = rt.ensure_shape(x, shape)")
    produced = SymbolicTensor(producer, tensor.index, tensor.dtype, tensor.shape)
    producer.outputs = producer.outputs[:tensor.index] + (produced,) + producer.outputs[tensor.index + 1:]
    check = graph.create_op(get_opdef("EnsureShape"), [produced], {"shape": merged})
    tensor.op, tensor.index, tensor.shape = check, 0, merged
    check.outputs = (tensor,)
