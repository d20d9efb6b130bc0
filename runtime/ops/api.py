"""The public op functions (``rt.add``, ``rt.reshape`` ...), gathered from the op modules."""
from runtime.ops.array_ops import (broadcast_to, concat, constant, convert_to_tensor, expand_dims, eye, fill, gather,
                                   identity, linspace, one_hot, ones, ones_like, pad, range, rank, reshape, shape, size,
                                   squeeze, stack, stop_gradient, strided_slice, tile, transpose, unstack, zeros,
                                   zeros_like)
from runtime.ops.control_flow_ops import cond, while_loop
from runtime.ops.logging_ops import Assert, check_numerics, print
from runtime.ops.math_ops import (abs, add, add_n, argmax, argmin, cast, ceil, clip_by_value, cos, cumsum, divide,
                                  equal, exp, floor, floordiv, floormod, greater, greater_equal, less, less_equal, log,
                                  logical_and, logical_not, logical_or, logical_xor, matmul, maximum, minimum, mod,
                                  multiply, negative, not_equal, pow, reduce_all, reduce_any, reduce_logsumexp,
                                  reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, relu, round, sigmoid,
                                  sign, sin, softmax, sqrt, square, subtract, tanh, truediv, unsorted_segment_sum,
                                  where)
from runtime.ops.composite_ops import clip_by_global_norm, clip_by_norm, meshgrid
from runtime.ops import random_ops as _random_ops  # noqa: F401  (registers the random ops)
from runtime.ops.index_ops import boolean_mask, gather_nd, scatter_nd
from runtime.ops.linalg_ops import einsum, norm, tensordot
from runtime.ops.manip_ops import ensure_shape, reverse, roll, split
from runtime.ops.manip_ops import set_shape as _set_shape
from runtime.ops.map_fn import map_fn
from runtime.ops.sort_ops import argsort, sort, unique
from runtime.tensor import register_operators as _register_operators
from runtime.tensor_array import TensorArray  # noqa: F401  (with the ops: the runtime operators use rt.TensorArray)

newaxis = None      # ``x[:, rt.newaxis]``, as ``tf.newaxis``

# Python's operators on tensors (``x + y``, ``x < y``, ``x[i]``) call these.
_register_operators(abs=abs, add=add, divide=divide, equal=equal, floordiv=floordiv, floormod=floormod,
                    greater=greater, greater_equal=greater_equal, less=less, less_equal=less_equal,
                    logical_and=logical_and, logical_not=logical_not, logical_or=logical_or, logical_xor=logical_xor,
                    matmul=matmul, multiply=multiply, negative=negative, not_equal=not_equal, pow=pow,
                    strided_slice=strided_slice, subtract=subtract, set_shape=_set_shape)

__all__ = [name for name in dir() if not name.startswith("_")]
