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
from types import SimpleNamespace as _Namespace

# OpenMP workers wait for the next parallel region by spinning about 0.1 ms (GOMP_SPINCOUNT=10000), then
# sleep. GOMP's default spins about 3 ms, burning a core long after a call returned; sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) made every parallel region of a call pay a 30-50 us futex wake-up on the
# benchmark VM: a training step with four parallel matmuls ran 1.25x slower. Set before libgomp loads;
# the user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from runtime import autograph, config, dtypes, errors
from runtime.context import executing_eagerly, init_scope, inside_function, name_scope
from runtime.dtypes import (DType, as_dtype, bool_ as bool, float16, float32, float64, int8, int16, int32, int64,
                            string, uint8, variant)
from runtime.polymorphic_function import ConcreteFunction, Function, function
from runtime.graph import Graph
from runtime import data
from runtime.module import Module
from runtime.ops import logging_ops as _logging_ops
from runtime.ops import math_ops as _math_ops
from runtime.ops import nn_ops as _nn_ops
from runtime.ops import random_ops as _random_ops
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

random = _Namespace(uniform=_random_ops.uniform, normal=_random_ops.normal)
nn = _Namespace(relu=_math_ops.relu, softmax=_math_ops.softmax, sigmoid=_math_ops.sigmoid, tanh=_math_ops.tanh,
                log_softmax=_nn_ops.log_softmax, conv2d=_nn_ops.conv2d, max_pool2d=_nn_ops.max_pool2d,
                sparse_softmax_cross_entropy_with_logits=_nn_ops.sparse_softmax_cross_entropy_with_logits)
for _name in ("gelu", "silu", "swish", "elu", "selu", "leaky_relu", "relu6", "sigmoid_cross_entropy_with_logits",
              "softmax_cross_entropy_with_logits"):
    setattr(nn, _name, getattr(_nn_ops, _name))
nn.softplus = _math_ops.softplus
math = _Namespace(**{name: getattr(_math_ops, name) for name in dir(_math_ops)
                     if not name.startswith("_") and callable(getattr(_math_ops, name))
                     and getattr(getattr(_math_ops, name), "__module__", "") == _math_ops.__name__})
debugging = _Namespace(assert_equal=_logging_ops.assert_equal, assert_greater=_logging_ops.assert_greater,
                       assert_less=_logging_ops.assert_less, assert_greater_equal=_logging_ops.assert_greater_equal,
                       assert_less_equal=_logging_ops.assert_less_equal, check_numerics=_logging_ops.check_numerics,
                       Assert=_logging_ops.Assert)

