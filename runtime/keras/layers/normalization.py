"""``BatchNormalization``, ``LayerNormalization`` and ``Normalization`` (a feature-wise standardizer fitted by
``adapt``), computing as Keras 3 does on TensorFlow (``tf.nn.moments``, ``tf.nn.batch_normalization``)."""
from __future__ import annotations

import numpy as np

from runtime import dtypes
from runtime.keras import constraints, regularizers
from runtime.keras.layers.base import Layer
from runtime.ops import array_ops, math_ops
from runtime.shapes import as_shape
from runtime.tensor import Tensor

EPSILON = 1e-7      # Keras' backend epsilon


def _axes(axis, rank: int, layer: Layer) -> list[int]:
    axes = [axis] if isinstance(axis, int) else list(axis)
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{layer.name}: axis {a} is out of range for inputs of rank {rank}")
    return sorted(a % rank for a in axes)


def moments(x, axes: list[int]):
    """Mean and variance over ``axes``, kept as size-1 dims (``tf.nn.moments(keepdims=True)``)."""
    mean = math_ops.reduce_mean(x, axes, keepdims=True)
    variance = math_ops.reduce_mean(math_ops.square(math_ops.subtract(x, array_ops.stop_gradient(mean))), axes,
                                    keepdims=True)
    return mean, variance


class BatchNormalization(Layer):
    """Normalizes each feature (``axis``) with the batch's mean and variance in training, and with their moving
    averages (updated in training: ``moving = moving * momentum + batch * (1 - momentum)``) otherwise.

    A frozen layer (``trainable = False``) always uses the moving statistics, as in Keras.
    """

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, synchronized: bool = False,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape) -> None:
        shape = as_shape(input_shape)
        if shape.rank is None:
            raise ValueError(f"{self.name}: BatchNormalization needs inputs of known rank")
        self._rt_rank = shape.rank
        self._rt_axis = _axes(self.axis, shape.rank, self)[0]
        size = shape[self._rt_axis]
        if size is None:
            raise ValueError(f"{self.name}: the normalized axis {self.axis} of the inputs must be known, got {shape}")
        param = (int(size),)
        if self.scale:
            self.gamma = self.add_weight(shape=param, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=param, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        name="beta")
        self.moving_mean = self.add_weight(shape=param, initializer=self.moving_mean_initializer, trainable=False,
                                           name="moving_mean")
        self.moving_variance = self.add_weight(shape=param, initializer=self.moving_variance_initializer,
                                               trainable=False, name="moving_variance")

    def _broadcast(self, value):
        """A per-feature vector shaped to broadcast against the inputs."""
        if self._rt_axis == self._rt_rank - 1:
            return value
        shape = [1] * self._rt_rank
        shape[self._rt_axis] = -1
        return array_ops.reshape(value, shape)

    def call(self, inputs, training=None, mask=None):
        if mask is not None:
            raise NotImplementedError(f"{self.name}: masked batch normalization is not supported")
        if isinstance(training, Tensor):
            raise TypeError(f"{self.name}: training must be a Python bool, got a tensor")
        if training and self.trainable:
            reduction = [a for a in range(self._rt_rank) if a != self._rt_axis]
            mean, variance = moments(inputs, reduction)
            mean, variance = array_ops.squeeze(mean, reduction), array_ops.squeeze(variance, reduction)
            self.moving_mean.assign(math_ops.add(math_ops.multiply(self.moving_mean, self.momentum),
                                                 math_ops.multiply(mean, 1.0 - self.momentum)))
            self.moving_variance.assign(math_ops.add(math_ops.multiply(self.moving_variance, self.momentum),
                                                     math_ops.multiply(variance, 1.0 - self.momentum)))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        # tf.nn.batch_normalization: x * inv + (offset - mean * inv), inv = rsqrt(variance + epsilon) * scale
        inv = math_ops.rsqrt(math_ops.add(variance, self.epsilon))
        if self.gamma is not None:
            inv = math_ops.multiply(inv, self.gamma)
        shift = math_ops.multiply(mean, inv)
        shift = math_ops.subtract(self.beta, shift) if self.beta is not None else math_ops.negative(shift)
        return math_ops.add(math_ops.multiply(inputs, self._broadcast(inv)), self._broadcast(shift))

    def get_config(self) -> dict:
        return {**super().get_config(), "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


class LayerNormalization(Layer):
    """Normalizes each example over ``axis`` (the last by default): ``(x - mean) / sqrt(variance + epsilon)``,
    then ``* gamma + beta``."""

    def __init__(self, axis=-1, epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 rms_scaling: bool = False, beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center, self.scale, self.rms_scaling = center, scale, rms_scaling
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = self.beta = None

    def build(self, input_shape) -> None:
        shape = as_shape(input_shape)
        if shape.rank is None:
            raise ValueError(f"{self.name}: LayerNormalization needs inputs of known rank")
        self._rt_rank = shape.rank
        self._rt_axes = _axes(self.axis, shape.rank, self)
        param = tuple(shape[a] for a in self._rt_axes)
        if any(d is None for d in param):
            raise ValueError(f"{self.name}: the normalized axes {self.axis} of the inputs must be known, got {shape}")
        if self.scale or self.rms_scaling:
            self.gamma = self.add_weight(shape=param, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         name="gamma")
        if self.center and not self.rms_scaling:
            self.beta = self.add_weight(shape=param, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        name="beta")

    def _broadcast(self, value):
        if value is None or self._rt_axes == [self._rt_rank - 1]:
            return value
        shape = [1] * self._rt_rank
        for a, d in zip(self._rt_axes, value.shape.dims):
            shape[a] = d
        return array_ops.reshape(value, shape)

    def call(self, inputs):
        gamma, beta = self._broadcast(self.gamma), self._broadcast(self.beta)
        mean, variance = moments(inputs, self._rt_axes)
        inv = math_ops.rsqrt(math_ops.add(variance, self.epsilon))
        if self.rms_scaling:
            out = math_ops.multiply(inputs, inv)
            return math_ops.multiply(out, gamma) if gamma is not None else out
        if gamma is not None:
            inv = math_ops.multiply(inv, gamma)
        shift = math_ops.multiply(math_ops.negative(mean), inv)
        if beta is not None:
            shift = math_ops.add(shift, beta)
        return math_ops.add(math_ops.multiply(inputs, inv), shift)

    def get_config(self) -> dict:
        return {**super().get_config(), "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


class Normalization(Layer):
    """Standardizes features: ``(x - mean) / max(sqrt(variance), 1e-7)`` with ``mean`` and ``variance`` given, or
    computed from data by ``adapt(data)`` over every axis but ``axis`` (``invert=True`` undoes it)."""

    def __init__(self, axis=-1, mean=None, variance=None, invert: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.axis = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        if (mean is None) != (variance is None):
            raise ValueError(f"{self.name}: give both mean and variance, or neither (and call adapt)")
        self.input_mean, self.input_variance = mean, variance
        self.invert = invert
        self.mean = self.variance = self.count = None

    def build(self, input_shape) -> None:
        shape = as_shape(input_shape)
        rank = shape.rank
        keep = tuple(sorted(a % rank for a in self.axis))
        if any(shape[a] is None for a in keep):
            raise ValueError(f"{self.name}: the kept axes {self.axis} of the inputs must be known, got {shape}")
        self._rt_reduce = tuple(a for a in range(rank) if a not in keep)
        self._rt_broadcast = [shape[a] if a in keep else 1 for a in range(rank)]
        param = tuple(shape[a] for a in keep)
        if self.input_mean is not None:
            mean = np.broadcast_to(np.asarray(self.input_mean, np.float32), param)
            variance = np.broadcast_to(np.asarray(self.input_variance, np.float32), param)
            self.mean = self.add_weight(shape=param, initializer=lambda s, d: mean, trainable=False, name="mean")
            self.variance = self.add_weight(shape=param, initializer=lambda s, d: variance, trainable=False,
                                            name="variance")
        else:
            self.mean = self.add_weight(shape=param, initializer="zeros", trainable=False, name="mean")
            self.variance = self.add_weight(shape=param, initializer="ones", trainable=False, name="variance")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype=dtypes.int64, trainable=False,
                                     name="count")

    def adapt(self, data, batch_size=None, steps=None) -> None:
        """Set ``mean`` and ``variance`` from ``data`` (an array, a tensor or an ``rt.data.Dataset`` of batches)."""
        if hasattr(data, "__iter__") and not isinstance(data, (np.ndarray, list, tuple, Tensor)):
            batches = [np.asarray(b.numpy() if hasattr(b, "numpy") else b) for b in data]
            if steps is not None:
                batches = batches[:steps]
            array = np.concatenate(batches)
        else:
            array = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
        array = array.astype(np.float64)
        if not self.built:
            self.build(array.shape)
            self.built = True
        self.mean.assign(np.mean(array, axis=self._rt_reduce).reshape(self.mean.shape.dims).astype(np.float32))
        self.variance.assign(np.var(array, axis=self._rt_reduce).reshape(self.variance.shape.dims).astype(np.float32))
        self.count.assign(np.int64(int(np.prod([array.shape[a] for a in self._rt_reduce]))))

    def call(self, inputs):
        mean = array_ops.reshape(self.mean, self._rt_broadcast)
        variance = array_ops.reshape(self.variance, self._rt_broadcast)
        scale = math_ops.maximum(math_ops.sqrt(variance), EPSILON)
        if self.invert:
            return math_ops.add(mean, math_ops.multiply(inputs, scale))
        return math_ops.divide(math_ops.subtract(inputs, mean), scale)


__all__ = ["BatchNormalization", "LayerNormalization", "Normalization"]
