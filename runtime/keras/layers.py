"""Layers: ``Dense``, ``Conv2D`` (NHWC), ``Flatten``, ``MaxPool2D``, and the ``Layer`` base class.

A layer creates its weights on its first call (``build`` with the input's shape), so the same
layer works eagerly and inside ``rt.function`` (where the first trace creates them).
"""
from __future__ import annotations

import inspect
import itertools
import re
from collections import defaultdict

import numpy as np

from runtime import dtypes
from runtime.keras import initializers
from runtime.module import Module, gather_variables
from runtime.ops import array_ops, math_ops, nn_ops
from runtime.ops.registry import convert
from runtime.shapes import as_shape
from runtime.tensor import Tensor
from runtime.variables import Variable

_counters: dict = defaultdict(itertools.count)


def _default_name(cls) -> str:
    base = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    n = next(_counters[base])
    return base if n == 0 else f"{base}_{n}"


_ACTIVATIONS = {"relu": math_ops.relu, "sigmoid": math_ops.sigmoid, "tanh": math_ops.tanh,
                "softmax": math_ops.softmax, "log_softmax": nn_ops.log_softmax, "linear": None}


def get_activation(identifier):
    """An activation function from a name (``"relu"`` ...), a callable, or None (linear)."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _ACTIVATIONS[identifier.lower()]
        except KeyError:
            raise ValueError(f"unknown activation {identifier!r}; known: {', '.join(sorted(_ACTIVATIONS))}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"an activation must be a name or a callable, got {identifier!r}")


class Layer(Module):
    """Base class: ``build(input_shape)`` creates the weights, ``call(inputs)`` computes; ``__call__`` does both."""

    def __init__(self, name: str | None = None, dtype=None, trainable: bool = True):
        super().__init__(name or _default_name(type(self)))
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
        self.trainable = trainable
        self.built = False

    def build(self, input_shape) -> None:
        """Create the weights for inputs of ``input_shape`` (subclasses; called once, by the first call)."""
        self.built = True

    def call(self, inputs):
        raise NotImplementedError(f"{type(self).__name__} must define call()")

    def add_weight(self, name: str, shape, initializer="glorot_uniform", trainable: bool = True) -> Variable:
        """A new variable of this layer, initialized by ``initializer`` (a name, an Initializer or a callable)."""
        shape = tuple(int(d) for d in shape)
        value = initializers.get(initializer)(shape, self.dtype)
        return Variable(np.asarray(value, self.dtype.np), trainable=trainable, name=f"{self.name}/{name}")

    def _cast_inputs(self, inputs):
        x = convert(inputs) if not isinstance(inputs, Tensor) else inputs
        if x.dtype.is_floating and x.dtype is not self.dtype:
            x = math_ops.cast(x, self.dtype)
        return x

    def __call__(self, inputs, *args, **kwargs):
        x = self._cast_inputs(inputs)
        if not self.built:
            self.build(x.shape)
            self.built = True
        return self.call(x, *args, **self._call_kwargs(kwargs))

    def _call_kwargs(self, kwargs: dict) -> dict:
        """``training=`` (as Keras passes it down) reaches ``call`` only when ``call`` takes it."""
        if "training" in kwargs and "training" not in inspect.signature(self.call).parameters:
            kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        return kwargs

    @property
    def weights(self) -> list:
        return list(self.variables)

    @property
    def trainable_variables(self) -> tuple:
        """The trainable variables of this layer and of the layers inside it (none when ``trainable`` is False)."""
        if not self.trainable:
            return ()
        return gather_variables(vars(self).values(), keep=lambda v: v.trainable,
                                held_by=lambda m: m.trainable_variables if isinstance(m, Layer) else None)

    trainable_weights = trainable_variables

    def __repr__(self):
        return f"<rt.keras.layers.{type(self).__name__} {self.name!r}>"


def _last_dim(layer, input_shape) -> int:
    shape = as_shape(input_shape)
    if shape.rank is None or shape[-1] is None:
        raise ValueError(f"{layer.name}: the last dimension of the inputs to a {type(layer).__name__} layer should be "
                         f"defined; found {shape}")
    return int(shape[-1])


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` over the last axis of the inputs."""

    def __init__(self, units: int, activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", name: str | None = None, dtype=None):
        super().__init__(name, dtype)
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units!r}")
        self.units = int(units)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel = None
        self.bias = None

    def build(self, input_shape) -> None:
        self.kernel = self.add_weight("kernel", (_last_dim(self, input_shape), self.units), self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), self.bias_initializer)
        self.built = True

    def call(self, inputs):
        if inputs.dtype is not self.dtype:     # integer and bool inputs compute in the layer's dtype, as in Keras
            inputs = math_ops.cast(inputs, self.dtype)
        if inputs.shape.rank == 2:
            out = math_ops.matmul(inputs, self.kernel)
        else:                  # rank > 2: the kernel applies to the last axis
            rows = math_ops.matmul(array_ops.reshape(inputs, [-1, self.kernel.shape[0]]), self.kernel)
            shape = array_ops.concat([array_ops.shape(inputs)[:-1], [self.units]], 0)
            out = array_ops.reshape(rows, shape)
        if self.use_bias:
            out = math_ops.add(out, self.bias)
        return self.activation(out) if self.activation is not None else out


def _pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")
    return value


def _padding(value: str) -> str:
    if str(value).lower() not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {value!r}")
    return str(value).upper()


class Conv2D(Layer):
    """2-D convolution over NHWC inputs: ``activation(conv2d(inputs, kernel) + bias)``."""

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", activation=None,
                 use_bias: bool = True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name: str | None = None, dtype=None):
        super().__init__(name, dtype)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel = None
        self.bias = None

    def build(self, input_shape) -> None:
        shape = as_shape(input_shape)
        if shape.rank not in (None, 4):
            raise ValueError(f"{self.name}: Conv2D expects 4-D inputs (batch, height, width, channels), got {shape}")
        channels = _last_dim(self, shape)
        self.kernel = self.add_weight("kernel", self.kernel_size + (channels, self.filters), self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)
        self.built = True

    def call(self, inputs):
        out = nn_ops.conv2d(inputs, self.kernel, self.strides, self.padding)
        if self.use_bias:
            out = math_ops.add(out, self.bias)
        return self.activation(out) if self.activation is not None else out


class MaxPool2D(Layer):
    """The maximum over ``pool_size`` windows of NHWC inputs (``strides`` default to the pool size)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding: str = "valid", name: str | None = None, dtype=None):
        super().__init__(name, dtype)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _pair(strides, "strides")
        self.padding = _padding(padding)

    def call(self, inputs):
        return nn_ops.max_pool2d(inputs, self.pool_size, self.strides, self.padding)


MaxPooling2D = MaxPool2D


class Flatten(Layer):
    """Inputs reshaped to ``[batch, -1]``."""

    def call(self, inputs):
        shape = inputs.shape
        if shape.rank is None:
            raise ValueError(f"{self.name}: Flatten needs inputs of known rank")
        rest = shape.dims[1:]
        if all(d is not None for d in rest):
            return array_ops.reshape(inputs, [-1, int(np.prod(rest, dtype=np.int64))])
        return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))


__all__ = ["Conv2D", "Dense", "Flatten", "Layer", "MaxPool2D", "MaxPooling2D"]
