"""``import runtime as rt``: a TensorFlow-like tensor API on numpy with ``rt.function`` graphs.

Example:
    >>> import runtime as rt
    >>> @rt.function
    ... def double(a):
    ...     return a + a
    >>> double(rt.constant(1))
    <rt.Tensor: shape=(), dtype=int32, numpy=2>
"""
import os as _os
from types import ModuleType as _ModuleType

# OpenMP workers wait for the next parallel region by spinning about 0.1 ms (GOMP_SPINCOUNT=10000), then
# sleep. GOMP's default spins about 3 ms, burning a core long after a call returned; sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) made every parallel region of a call pay a 30-50 us futex wake-up on the
# benchmark VM: a training step with four parallel matmuls ran 1.25x slower. Set before libgomp loads;
# the user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from runtime import autograph, config, dtypes, errors
from runtime.context import executing_eagerly, init_scope, inside_function, name_scope
from runtime.dtypes import (DType, as_dtype, bool_ as bool, complex64, complex128, float16, float32, float64, int8,
                            int16, int32, int64, string, uint8, variant)
from runtime.polymorphic_function import ConcreteFunction, Function, function
from runtime.graph import Graph
from runtime import data
from runtime.module import Module
from runtime.ops import composite_ops as _composite_ops
from runtime.ops import linalg_ops as _linalg_ops
from runtime.ops import logging_ops as _logging_ops
from runtime.ops import math_ops as _math_ops
from runtime.ops import nn_ops as _nn_ops
from runtime.ops import random_ops as _random_ops
from runtime.ops import sort_ops as _sort_ops
from runtime.ops.api import *  # noqa: F401,F403
from runtime.ops.script_ops import numpy_function, py_function
from runtime.shapes import TensorShape, TensorSpec
from runtime.tensor import Tensor, is_symbolic, is_tensor
from runtime.tensor_array import TensorArray
from runtime.variables import Variable
from runtime.backprop import GradientTape, UnconnectedGradients
from runtime import keras, train
from runtime import jit as _jit
from runtime.version import __version__  # noqa: F401
from transpiler.lazy import lazy_import as _lazy_import

# rt.function(jit_compile=True) compiles with transpiler.jit (the code generator, Cython, a C compiler),
# loaded by the first such trace. This module is the top of the layers: the one place that wires it in.
_jit.register_compiler(_lazy_import("transpiler.jit"))

_random_ops.register_variable_class(Variable)     # Generators keep their state in an rt.Variable


# ---------------------------------------------------------------------------
# The sub-namespaces (rt.math, rt.nn ...), each with TensorFlow's names. A name TensorFlow has and rt lacks is an
# AttributeError that says so, here and in each namespace (module __getattr__).

_missing = errors.missing_name


def _namespace(path: str, members: dict) -> _ModuleType:
    module = _ModuleType(f"runtime.{path}", f"``rt.{path}``: TensorFlow's ``tf.{path}``.")
    module.__dict__.update(members)
    module.__all__ = sorted(members)
    module.__getattr__ = _missing(path)
    return module


def _pick(source, names: str) -> dict:
    return {name: getattr(source, name) for name in names.split()}


random = _namespace("random", _pick(_random_ops, """uniform normal truncated_normal categorical shuffle set_seed
    stateless_uniform stateless_normal stateless_truncated_normal Generator get_global_generator
    set_global_generator"""))
nn = _namespace("nn", {
    **_pick(_math_ops, "relu softmax sigmoid tanh"),
    **_pick(_nn_ops, """log_softmax conv2d max_pool2d avg_pool2d sparse_softmax_cross_entropy_with_logits relu6
        leaky_relu elu selu silu swish gelu l2_loss bias_add sigmoid_cross_entropy_with_logits
        softmax_cross_entropy_with_logits moments dropout"""),
    "softplus": _math_ops.softplus,
    "l2_normalize": _linalg_ops.l2_normalize,
    **_pick(_composite_ops, "embedding_lookup batch_normalization max_pool avg_pool"),
})
math = _namespace("math", {
    **_pick(_math_ops, """abs add subtract multiply divide truediv floordiv floormod mod pow negative sign square sqrt
        rsqrt exp log log1p expm1 tanh sigmoid sin cos maximum minimum greater greater_equal less less_equal equal
        not_equal logical_and logical_or logical_not logical_xor reduce_sum reduce_mean reduce_max reduce_min
        reduce_prod reduce_any reduce_all reduce_logsumexp reduce_std reduce_variance reduce_euclidean_norm argmax
        argmin cumsum floor ceil round is_nan is_inf is_finite erf erfc softplus squared_difference count_nonzero real
        imag conj
        unsorted_segment_sum softmax add_n divide_no_nan"""),
    "top_k": _sort_ops.top_k,
    "l2_normalize": _linalg_ops.l2_normalize,
    "log_softmax": _nn_ops.log_softmax,
    "log_sigmoid": _composite_ops.log_sigmoid,
})
linalg = _namespace("linalg", {
    **_pick(_linalg_ops, "norm inv solve det eye diag diag_part band_part trace matrix_transpose l2_normalize "
                         "matvec einsum tensordot"),
    "matmul": _linalg_ops.linalg_matmul,
    "global_norm": _composite_ops.global_norm,
})
debugging = _namespace("debugging", {
    **_pick(_logging_ops, """assert_equal assert_greater assert_less assert_greater_equal assert_less_equal
        check_numerics Assert"""),
    **_pick(config, "set_log_device_placement get_log_device_placement"),
})
test = _namespace("test", {
    "is_gpu_available": lambda cuda_only=False, min_cuda_compute_capability=None: False,
    "gpu_device_name": lambda: "",
    "is_built_with_cuda": lambda: False,
    "is_built_with_gpu_support": lambda: False,
})
complex = _math_ops.complex  # noqa: A001 - TensorFlow's name
device = config.device
__getattr__ = _missing("")
