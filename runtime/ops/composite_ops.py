"""TensorFlow functions that are compositions of other ops (each differentiable and lowered through them):
gradient clipping, ``meshgrid``, ``embedding_lookup``, ``batch_normalization``, ``log_sigmoid`` and the N-d
pooling entry points of 4-D inputs."""
from __future__ import annotations

import numpy as np

from runtime.ops import array_ops, math_ops, nn_ops
from runtime.ops.registry import convert


def _check_sequence(function: str, t_list) -> None:
    if isinstance(t_list, (str, bytes)) or hasattr(t_list, "dtype") or not hasattr(t_list, "__iter__"):
        raise TypeError(f"{function}: t_list must be a sequence of tensors (a list), got {type(t_list).__name__}")


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)`` (``tf.clip_by_norm``): unchanged when its norm is at
    most ``clip_norm``; a zero tensor stays zero."""
    t = convert(t)
    clip = math_ops.cast(convert(clip_norm), t.dtype)
    l2sum = math_ops.reduce_sum(math_ops.square(t), axes, keepdims=True)
    positive = math_ops.greater(l2sum, math_ops.zeros_like_(l2sum))
    safe = math_ops.where(positive, l2sum, math_ops.ones_like_(l2sum))
    l2norm = math_ops.where(positive, math_ops.sqrt(safe), l2sum)
    return math_ops.divide(math_ops.multiply(t, clip), math_ops.maximum(l2norm, clip), name=name)


def global_norm(t_list, name=None):
    """``sqrt(sum of every element squared)`` over the tensors of ``t_list`` (None entries skipped), in float32
    or the tensors' float type (``tf.linalg.global_norm``)."""
    _check_sequence("global_norm", t_list)
    tensors = [convert(t) for t in t_list if t is not None]
    if not tensors:
        raise ValueError("global_norm: t_list has no tensors")
    total = None
    for t in tensors:
        term = math_ops.reduce_sum(math_ops.square(t))
        total = term if total is None else math_ops.add(total, math_ops.cast(term, total.dtype))
    return math_ops.sqrt(total, name=name)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Every tensor scaled by ``clip_norm / max(global_norm, clip_norm)``; returns ``(clipped list, global_norm)``
    (``tf.clip_by_global_norm``). None entries stay None; an infinite global norm makes every value NaN, as
    TensorFlow's does."""
    _check_sequence("clip_by_global_norm", t_list)
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else convert(use_norm)
    clip = math_ops.cast(convert(clip_norm), norm.dtype)
    one = convert(np.ones((), norm.dtype.np))
    scale = math_ops.multiply(clip, math_ops.minimum(math_ops.divide(one, norm), math_ops.divide(one, clip)))
    nan = convert(np.full((), np.nan, norm.dtype.np))
    scale = math_ops.where(math_ops.is_finite(norm), scale, nan)
    clipped = [None if t is None else math_ops.multiply(convert(t), math_ops.cast(scale, convert(t).dtype))
               for t in t_list]
    return clipped, norm


def meshgrid(*args, indexing="xy", name=None):
    """Coordinate arrays from 1-D coordinate vectors (``tf.meshgrid``): with ``indexing="xy"`` (Cartesian) the
    first two outputs' axes are swapped, as numpy's ``meshgrid``; ``"ij"`` (matrix) keeps the inputs' order."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vectors = [array_ops.reshape(convert(a), [-1]) for a in args]
    if not vectors:
        return []
    sizes = [array_ops.shape(v)[0] for v in vectors]
    order = list(range(len(vectors)))
    if indexing == "xy" and len(vectors) > 1:
        order[0], order[1] = 1, 0          # output axis k holds input order[k]
    shape = array_ops.stack([sizes[i] for i in order])
    out = []
    for i, v in enumerate(vectors):
        axis = order.index(i)
        dims = [1] * len(vectors)
        dims[axis] = -1
        out.append(array_ops.broadcast_to(array_ops.reshape(v, dims), shape))
    return out


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of ``params`` at ``ids`` (``tf.nn.embedding_lookup`` of one tensor, without ``max_norm``)."""
    if max_norm is not None:
        raise ValueError("embedding_lookup: max_norm is not supported; clip the table with rt.clip_by_norm")
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise ValueError("embedding_lookup: a partitioned table (a list of several tensors) is not supported")
        params = params[0]
    return array_ops.gather(params, ids, name=name)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``(x - mean) * scale / sqrt(variance + variance_epsilon) + offset`` (``tf.nn.batch_normalization``:
    ``offset`` and ``scale`` may be None), computed as TensorFlow does: ``x * inv + (offset - mean * inv)``."""
    x, mean, variance = convert(x), convert(mean), convert(variance)
    inv = math_ops.rsqrt(math_ops.add(variance, math_ops.cast(convert(variance_epsilon), variance.dtype)))
    if scale is not None:
        inv = math_ops.multiply(inv, convert(scale))
    shift = math_ops.negative(math_ops.multiply(mean, inv)) if offset is None else \
        math_ops.subtract(convert(offset), math_ops.multiply(mean, inv))
    return math_ops.add(math_ops.multiply(x, math_ops.cast(inv, x.dtype)), math_ops.cast(shift, x.dtype), name=name)


def log_sigmoid(x, name=None):
    """``log(sigmoid(x)) = -softplus(-x)`` (``tf.math.log_sigmoid``), finite for large ``|x|``."""
    return math_ops.negative(math_ops.softplus(math_ops.negative(convert(x))), name=name)


def _pool(kind: str, input, ksize, strides, padding, data_format):
    x = convert(input)
    if x.shape.rank != 4 or data_format not in (None, "NHWC"):
        raise ValueError(f"{kind}: rt pools 4-D NHWC inputs (rt.nn.{kind}2d); got shape {x.shape} and "
                         f"data_format {data_format!r}")
    return x


def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """``tf.nn.max_pool`` of a 4-D NHWC input: ``rt.nn.max_pool2d``."""
    return nn_ops.max_pool2d(_pool("max_pool", input, ksize, strides, padding, data_format), ksize, strides, padding,
                             name=name)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """``tf.nn.avg_pool`` of a 4-D NHWC input: ``rt.nn.avg_pool2d``."""
    return nn_ops.avg_pool2d(_pool("avg_pool", input, ksize, strides, padding, data_format), ksize, strides, padding,
                             name=name)


__all__ = ["avg_pool", "batch_normalization", "clip_by_global_norm", "clip_by_norm", "embedding_lookup",
           "global_norm", "log_sigmoid", "max_pool", "meshgrid"]
