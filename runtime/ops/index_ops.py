"""Indexing by index tuples and masks: ``rt.gather_nd``, ``rt.scatter_nd``, ``rt.boolean_mask``.

``GatherNd`` reads, for each index tuple of ``indices`` [..., m], the slice ``params[i0, ..., i(m-1)]``;
``ScatterNd`` adds ``updates`` into zeros at index tuples (its adjoint, and ``GatherNd``'s gradient). An index
out of range is an ``InvalidArgumentError`` naming it, in every mode (native code: ``rt_index.h``).
``boolean_mask`` is the rows where the mask holds: ``Where`` gives their positions, ``GatherV2`` takes them.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops import array_ops, math_ops
from runtime.ops.array_ops import dim_size, size_product
from runtime.ops.math_ops import shape_tensor
from runtime.ops.registry import OpDef, apply, convert, gradient, register
from runtime.shapes import TensorShape


def _gather_nd_infer(specs, attrs):
    params, indices = specs
    if not indices.dtype.is_integer:
        raise TypeError(f"GatherNd: indices must be integers, got {indices.dtype}")
    if indices.shape.rank == 0:
        raise ValueError("GatherNd: indices must be at least 1-D (index tuples along the last dimension)")
    if params.shape.rank is None or indices.shape.rank is None or indices.shape.dims[-1] is None:
        return [(params.dtype, None)]
    m = indices.shape.dims[-1]
    if m > params.shape.rank:
        raise ValueError(f"GatherNd: index tuples of length {m} for params of rank {params.shape.rank} "
                         f"(shape {params.shape})")
    return [(params.dtype, indices.shape.dims[:-1] + params.shape.dims[m:])]


def _flat_positions(op_type: str, indices: np.ndarray, dims: tuple) -> np.ndarray:
    """Row-major positions of the index tuples of ``indices`` [..., m] in the first m ``dims`` (checked)."""
    m = indices.shape[-1]
    tuples = indices.reshape(-1, m).astype(np.int64)
    bounds = np.array(dims[:m], np.int64)
    bad = (tuples < 0) | (tuples >= bounds)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise errors.InvalidArgumentError(f"{op_type}: index {tuples[row].tolist()} (at position {row} of the "
                                          f"indices) is out of bounds for shape {list(dims)}")
    strides = np.cumprod((1,) + tuple(dims[1:m])[::-1])[::-1] if m else np.zeros(0, np.int64)
    return tuples @ np.asarray(strides, np.int64) if m else np.zeros(len(tuples), np.int64)


def _gather_nd_kernel(inputs, attrs):
    params, indices = inputs
    m = indices.shape[-1]
    if m > params.ndim:
        raise errors.InvalidArgumentError(f"GatherNd: index tuples of length {m} for params of shape "
                                          f"{list(params.shape)}")
    positions = _flat_positions("GatherNd", indices, params.shape)
    rest = params.shape[m:]
    flat = params.reshape((int(np.prod(params.shape[:m], dtype=np.int64)),) + rest)
    out = flat[positions] if positions.size else np.zeros((0,) + rest, params.dtype)
    return (out.reshape(indices.shape[:-1] + rest).copy(),)


register(OpDef("GatherNd", "GatherNd", _gather_nd_infer, _gather_nd_kernel, 2))


def _scatter_nd_infer(specs, attrs):
    indices, updates, shape = specs
    if not indices.dtype.is_integer or not shape.dtype.is_integer:
        raise TypeError(f"ScatterNd: indices and shape must be integers, got {indices.dtype} and {shape.dtype}")
    dims = array_ops._dims_from(shape, "ScatterNd")
    if dims is not None and indices.shape.rank is not None and updates.shape.rank is not None \
            and indices.shape.dims[-1] is not None:
        m = indices.shape.dims[-1]
        want = TensorShape(indices.shape.dims[:-1] + tuple(dims[m:]))
        if m > len(dims) or not want.is_compatible_with(updates.shape):
            raise ValueError(f"ScatterNd: updates of shape {updates.shape} do not match indices {indices.shape} "
                             f"into shape {list(dims)}")
    return [(updates.dtype, dims)]


def _scatter_nd_kernel(inputs, attrs):
    indices, updates, shape = inputs
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(f"ScatterNd: dimensions must be non-negative, got {list(dims)}")
    m = indices.shape[-1]
    if m > len(dims) or updates.shape != indices.shape[:-1] + dims[m:]:
        raise errors.InvalidArgumentError(f"ScatterNd: updates of shape {list(updates.shape)} do not match indices "
                                          f"of shape {list(indices.shape)} into shape {list(dims)}")
    positions = _flat_positions("ScatterNd", indices, dims)
    rest = dims[m:]
    out = np.zeros((int(np.prod(dims[:m], dtype=np.int64)),) + rest, updates.dtype)
    np.add.at(out, positions, updates.reshape((-1,) + rest))
    return (out.reshape(dims),)


register(OpDef("ScatterNd", "ScatterNd", _scatter_nd_infer, _scatter_nd_kernel, 3, dynamic_infer=True))


@gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    return [apply("ScatterNd", [indices, grad, shape_tensor(params)]), None]


@gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, apply("GatherNd", [grad, op.inputs[0]]), None]


def _indices(indices):
    indices = convert(indices)
    if not indices.dtype.is_integer:
        raise TypeError(f"indices must be integers, got {indices.dtype}")
    return indices


def gather_nd(params, indices, batch_dims=0, name=None):
    """The slices of ``params`` at the index tuples along the last axis of ``indices`` (``tf.gather_nd``):
    ``gather_nd(x, [[0, 1], [2, 0]])`` is ``[x[0, 1], x[2, 0]]``.

    Example:
        >>> import runtime as rt
        >>> rt.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]).numpy().tolist()
        [3, 2]
    """
    if batch_dims:
        raise NotImplementedError("rt.gather_nd supports batch_dims=0 only")
    return apply("GatherNd", [convert(params), _indices(indices)], name=name)


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at the index tuples of ``indices`` (``tf.scatter_nd``;
    updates at the same tuple add up)."""
    updates = convert(updates)
    return apply("ScatterNd", [_indices(indices), updates, array_ops._shape_arg(shape)], name=name)


def boolean_mask(tensor, mask, axis=None, name=None):
    """The elements (rows) of ``tensor`` where ``mask`` holds (``tf.boolean_mask``): ``mask`` covers dims
    ``axis .. axis + mask.ndim`` of ``tensor``, which become one dim of the selected entries."""
    tensor = convert(tensor)
    mask = convert(mask, dtypes.bool_, "mask")
    k = mask.shape.rank
    if k is None:
        raise ValueError("boolean_mask: the rank of the mask must be known")
    if k == 0:
        raise ValueError("boolean_mask: the mask must not be a scalar")
    axis = 0 if axis is None else int(axis)
    rank = tensor.shape.rank
    if rank is None:
        raise ValueError("boolean_mask: the rank of the tensor must be known")
    axis %= max(rank, 1)
    if axis + k > rank:
        raise ValueError(f"boolean_mask: a mask of rank {k} at axis {axis} does not fit a tensor of shape "
                         f"{tensor.shape}")
    covered = TensorShape(tensor.shape.dims[axis:axis + k])
    if not covered.is_compatible_with(mask.shape):
        raise ValueError(f"boolean_mask: mask of shape {mask.shape} does not match dims {axis}..{axis + k - 1} of "
                         f"{tensor.shape}")
    dims = [dim_size(tensor, d) for d in range(rank)]
    flat = array_ops.reshape(tensor, dims[:axis] + [size_product(dims[axis:axis + k])] + dims[axis + k:])
    positions = array_ops.squeeze(math_ops.where(array_ops.reshape(mask, [-1])), [1])
    return array_ops.gather(flat, positions, axis=axis, name=name)

