"""Convolution and pooling over NHWC images: ``Conv2D``, ``MaxPooling2D`` (``MaxPool2D``),
``GlobalAveragePooling2D``, ``GlobalMaxPooling2D``."""
from __future__ import annotations

import numpy as np

from runtime.keras.layers.base import Layer
from runtime.keras.layers.core import _KernelAndBias, last_dim
from runtime.ops import array_ops, math_ops, nn_ops
from runtime.ops.registry import convert
from runtime.shapes import as_shape


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


def _channels_last(layer: Layer, data_format) -> None:
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer.name}: only data_format='channels_last' (NHWC) is supported, got {data_format!r}")


class Conv2D(_KernelAndBias):
    """2-D convolution over NHWC inputs: ``activation(conv2d(inputs, kernel) + bias)``."""

    def __init__(self, filters: int, kernel_size, strides=1, padding: str = "valid", data_format=None,
                 dilation_rate=1, groups: int = 1, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _channels_last(self, data_format)
        if _pair(dilation_rate, "dilation_rate") != (1, 1) or groups != 1:
            raise ValueError(f"{self.name}: dilated and grouped convolutions are not supported")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self._kernel_and_bias_options(activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                      bias_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape) -> None:
        shape = as_shape(input_shape)
        if shape.rank not in (None, 4):
            raise ValueError(f"{self.name}: Conv2D expects 4-D inputs (batch, height, width, channels), got {shape}")
        channels = last_dim(self, shape)
        self._add_kernel_and_bias(self.kernel_size + (channels, self.filters))

    def call(self, inputs):
        out = nn_ops.conv2d(inputs, self.kernel, self.strides, self.padding)
        if self.use_bias:
            out = math_ops.add(out, self.bias)
        return self.activation(out) if self.activation is not None else out


class MaxPooling2D(Layer):
    """The maximum over ``pool_size`` windows of NHWC inputs (``strides`` default to the pool size)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding: str = "valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last(self, data_format)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _pair(strides, "strides")
        self.padding = _padding(padding)

    def call(self, inputs):
        return nn_ops.max_pool2d(inputs, self.pool_size, self.strides, self.padding)


MaxPool2D = MaxPooling2D


class AveragePooling2D(MaxPooling2D):
    """The mean over ``pool_size`` windows of NHWC inputs, padding not counted (``strides`` default to the pool
    size)."""

    def call(self, inputs):
        return nn_ops.avg_pool2d(inputs, self.pool_size, self.strides, self.padding)


AvgPool2D = AveragePooling2D


def _pad_pairs(padding, name: str) -> tuple:
    """``((top, bottom), (left, right))`` from an int, ``(rows, cols)`` or ``((top, bottom), (left, right))``."""
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * 2, (int(padding),) * 2
    parts = list(padding)
    if len(parts) == 2 and all(isinstance(p, (int, np.integer)) for p in parts):
        return (int(parts[0]),) * 2, (int(parts[1]),) * 2
    if len(parts) == 2 and all(len(list(p)) == 2 for p in parts):
        return tuple(tuple(int(v) for v in p) for p in parts)
    raise ValueError(f"{name}: padding must be an int, (rows, cols) or ((top, bottom), (left, right)), got {padding!r}")


class ZeroPadding2D(Layer):
    """Rows and columns of zeros around NHWC images."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last(self, data_format)
        self.padding = _pad_pairs(padding, "ZeroPadding2D")
        if any(v < 0 for pair in self.padding for v in pair):
            raise ValueError(f"ZeroPadding2D: padding cannot be negative, got {padding!r}")

    def call(self, inputs):
        (top, bottom), (left, right) = self.padding
        return array_ops.pad(inputs, [[0, 0], [top, bottom], [left, right], [0, 0]])


class UpSampling2D(Layer):
    """Each pixel of NHWC images repeated ``size`` times down and across (nearest-neighbour upsampling)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation: str = "nearest", **kwargs):
        super().__init__(**kwargs)
        _channels_last(self, data_format)
        self.size = _pair(size, "size")
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: rt supports interpolation='nearest' only, got {interpolation!r}")
        self.interpolation = interpolation

    def call(self, inputs):
        x = convert(inputs)
        if x.shape.rank not in (None, 4):
            raise ValueError(f"{self.name}: expects 4-D inputs (batch, height, width, channels), got {x.shape}")
        sh, sw = self.size
        # [n, h, 1, w, 1, c] times ones [sh, 1, sw, 1]: the static dims stay known for the layers after it
        spread = math_ops.multiply(array_ops.expand_dims(array_ops.expand_dims(x, 2), 4),
                                   array_ops.ones([sh, 1, sw, 1], x.dtype))
        static = x.shape.dims if x.shape.rank is not None else [None] * 4
        if all(d is not None for d in static[1:]):
            return array_ops.reshape(spread, [-1, static[1] * sh, static[2] * sw, static[3]])
        dims = array_ops.shape(x)
        return array_ops.reshape(spread, array_ops.stack([dims[0], dims[1] * sh, dims[2] * sw, dims[3]]))


class _GlobalPooling2D(Layer):
    def __init__(self, data_format=None, keepdims: bool = False, **kwargs):
        super().__init__(**kwargs)
        _channels_last(self, data_format)
        self.keepdims = keepdims

    def call(self, inputs):
        if inputs.shape.rank not in (None, 4):
            raise ValueError(f"{self.name}: expects 4-D inputs (batch, height, width, channels), got {inputs.shape}")
        return self._reduce(inputs, [1, 2], keepdims=self.keepdims)


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over the height and width of NHWC inputs: ``[batch, channels]``."""
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over the height and width of NHWC inputs: ``[batch, channels]``."""
    _reduce = staticmethod(math_ops.reduce_max)


GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D

__all__ = [
    "Conv2D",
    "GlobalAveragePooling2D",
    "GlobalAvgPool2D",
    "GlobalMaxPool2D",
    "GlobalMaxPooling2D",
    "MaxPool2D",
    "MaxPooling2D",
]
