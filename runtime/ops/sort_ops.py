"""Sorting: ``rt.sort``, ``rt.argsort``, ``rt.math.top_k`` and ``rt.unique``.

Order: ascending or descending values, equal values in the order of their positions (a stable sort, as
TensorFlow's top_k orders ties), NaN after every number when ascending (before them when descending).
``Sort`` gives values and int32 positions along one axis; ``TopKV2`` the ``k`` largest along the last axis.
Native code sorts with the kernel library's merge sort (``runtime/kernels/rt_sort.h``).
"""
from __future__ import annotations

import collections

import numpy as np

from runtime import dtypes, errors
from runtime.ops import array_ops, math_ops
from runtime.ops.math_ops import NUMERIC, shape_tensor
from runtime.ops.registry import OpDef, apply, convert, gradient, not_differentiable, register


def stable_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Positions that sort ``x`` along ``axis``: ties by position, NaN last (first when descending)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.flip(x, axis)
    return (n - 1) - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)


def _axis(op_type: str, axis: int, rank: int | None) -> int:
    if rank is None:
        return axis
    if not -rank <= axis < rank:
        raise ValueError(f"{op_type}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def _sort_infer(specs, attrs):
    x = specs[0]
    math_ops._check_dtype("Sort", x.dtype, NUMERIC)
    if x.shape.rank == 0:
        raise ValueError("Sort: the input must have at least one dimension")
    _axis("Sort", attrs["axis"], x.shape.rank)
    return [(x.dtype, x.shape.dims), (dtypes.int32, x.shape.dims)]


def _sort_kernel(inputs, attrs):
    x = inputs[0]
    axis = attrs["axis"] % x.ndim
    order = stable_argsort(x, axis, attrs["descending"])
    return np.take_along_axis(x, order, axis), order.astype(np.int32)


register(OpDef("Sort", "sort", _sort_infer, _sort_kernel, 1))


def _top_k_infer(specs, attrs):
    x, k = specs
    math_ops._check_dtype("TopKV2", x.dtype, NUMERIC)
    if not k.dtype.is_integer or k.shape.rank not in (0, None):
        raise TypeError(f"TopKV2: k must be an integer scalar, got {k.dtype}{k.shape}")
    if x.shape.rank == 0:
        raise ValueError("TopKV2: the input must have at least one dimension")
    if x.shape.rank is None:
        return [(x.dtype, None), (dtypes.int32, None)]
    n = x.shape.dims[-1]
    kv = None if k.const is None else int(k.const)
    if kv is not None and (kv < 0 or n is not None and kv > n):
        raise ValueError(f"TopKV2: k = {kv} must be in [0, {n}] (the last dimension of {x.shape})")
    dims = x.shape.dims[:-1] + (kv,)
    return [(x.dtype, dims), (dtypes.int32, dims)]


def _top_k_kernel(inputs, attrs):
    x, k = inputs[0], int(inputs[1])
    if not 0 <= k <= x.shape[-1]:
        raise errors.InvalidArgumentError(f"TopKV2: k = {k} must be in [0, {x.shape[-1]}] (the last dimension of "
                                          f"the input, shape {list(x.shape)})")
    order = stable_argsort(x, x.ndim - 1, True)[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


register(OpDef("TopKV2", "TopKV2", _top_k_infer, _top_k_kernel, 2, dynamic_infer=True))


def _scatter_along_last(grad, indices, x):
    """``dx`` of ``x`` [..., n] when ``grad`` [..., k] reached ``x[..., indices]``: each gradient added at the
    position it came from (row by row: a segment sum over flat positions)."""
    n = array_ops.strided_slice(shape_tensor(x), -1)
    rows = math_ops.reduce_prod(array_ops.strided_slice(shape_tensor(x), slice(None, -1)))
    k = array_ops.strided_slice(apply("Shape", [indices], {"out_type": dtypes.int32}), -1)
    offsets = array_ops.reshape(math_ops.multiply(array_ops.range(0, rows), n), [-1, 1])
    flat = array_ops.reshape(math_ops.add(array_ops.reshape(indices, array_ops.stack([rows, k])), offsets), [-1])
    summed = math_ops.unsorted_segment_sum(array_ops.reshape(grad, [-1]), flat, math_ops.multiply(rows, n))
    return array_ops.reshape(summed, shape_tensor(x))


def _move_last(x, axis: int, rank: int):
    """``x`` with ``axis`` moved last (and the permutation that moves it back), or ``x`` itself."""
    if axis == rank - 1:
        return x, None
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(rank)]
    return array_ops.transpose(x, perm), inverse


@gradient("Sort")
def _sort_grad(op, grad, _):
    x, indices = op.inputs[0], op.outputs[1]
    if grad is None:
        return [None]
    rank = x.shape.rank
    if rank is None:
        raise ValueError("the gradient of Sort needs the rank of its input")
    axis = op.attrs["axis"] % rank
    moved, back = _move_last(x, axis, rank)
    dx = _scatter_along_last(_move_last(grad, axis, rank)[0], _move_last(indices, axis, rank)[0], moved)
    return [dx if back is None else array_ops.transpose(dx, back)]


@gradient("TopKV2")
def _top_k_grad(op, grad, _):
    if grad is None:
        return [None, None]
    return [_scatter_along_last(grad, op.outputs[1], op.inputs[0]), None]


def _direction(direction: str) -> bool:
    direction = str(direction).upper()
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return direction == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (``tf.sort``): equal values keep their order, NaN sorts last.

    Example:
        >>> import runtime as rt
        >>> rt.sort([3, 1, 2], direction="DESCENDING").numpy().tolist()
        [3, 2, 1]
    """
    values = convert(values)
    return apply("Sort", [values], {"axis": int(axis), "descending": _direction(direction)}, name=name)[0]


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 positions that sort ``values`` along ``axis`` (``tf.argsort``); ties by position (always
    stable)."""
    values = convert(values)
    return apply("Sort", [values], {"axis": int(axis), "descending": _direction(direction)}, name=name)[1]


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):
    """The ``k`` largest values along the last axis and their int32 positions (``tf.math.top_k``), largest
    first, ties by position."""
    x = convert(input)
    values, indices = apply("TopKV2", [x, convert(k, dtypes.int32, "k")], {"sorted": bool(sorted)}, name=name)
    if dtypes.as_dtype(index_type) is not dtypes.int32:
        indices = math_ops.cast(indices, index_type)
    return TopKResult(values, indices)


# ``(values, indices)`` of ``top_k``, also by name (``result.indices``), as TensorFlow's namedtuple
TopKResult = collections.namedtuple("TopKV2", ["values", "indices"])


# -- unique ---------------------------------------------------------------------------------

def _unique_infer(specs, attrs):
    x = specs[0]
    if x.shape.rank not in (1, None):
        raise ValueError(f"Unique: the input must be a vector, got shape {x.shape}")
    return [(x.dtype, (None,)), (attrs["out_idx"], x.shape.dims if x.shape.rank == 1 else (None,))]


def _unique_kernel(inputs, attrs):
    x = inputs[0]
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")            # in the order of first occurrence, as TensorFlow
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    out = x[np.sort(first)] if x.size else x[:0]
    return np.ascontiguousarray(out), rank[inverse.reshape(-1)].astype(attrs["out_idx"].np)


register(OpDef("Unique", "Unique", _unique_infer, _unique_kernel, 1))
not_differentiable("Unique")


# ``(y, idx)`` of ``unique``, also by name
UniqueResult = collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct values of the vector ``x`` in order of first occurrence, and for each element of ``x`` the
    position of its value among them (``tf.unique``)."""
    out_idx = dtypes.as_dtype(out_idx)
    if out_idx not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"unique: out_idx must be int32 or int64, got {out_idx}")
    y, idx = apply("Unique", [convert(x)], {"out_idx": out_idx}, name=name)
    return UniqueResult(y, idx)
