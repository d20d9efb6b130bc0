"""Core layers: ``Dense``, ``Activation`` (and ``Softmax``, ``ReLU``, ``LeakyReLU``), ``Dropout``, ``Flatten``,
``Reshape``, ``Embedding``, ``Lambda``, and the merging layers ``Add``, ``Subtract``, ``Multiply``, ``Average``,
``Concatenate``."""
from __future__ import annotations

import numpy as np

from runtime import dtypes
from runtime.keras import activations, constraints, regularizers, utils
from runtime.keras.layers.base import Layer
from runtime.ops import array_ops, math_ops, random_ops
from runtime.ops.registry import convert
from runtime.shapes import as_shape
from runtime.variables import Variable


def last_dim(layer: Layer, input_shape) -> int:
    shape = as_shape(input_shape)
    if shape.rank is None or shape.rank == 0 or shape[-1] is None:
        raise ValueError(f"{layer.name}: the last dimension of the inputs to a {type(layer).__name__} layer should be "
                         f"defined; found {shape}")
    return int(shape[-1])


def _activation(identifier):
    fn = activations.get(identifier)
    return None if fn is activations.linear else fn


class _KernelAndBias(Layer):
    """The part ``Dense`` and ``Conv2D`` share: ``activation(f(inputs, kernel) + bias)``'s options and weights."""

    def _kernel_and_bias_options(self, activation, use_bias: bool, kernel_initializer, bias_initializer,
                                 kernel_regularizer, bias_regularizer, kernel_constraint, bias_constraint) -> None:
        """Keep the options (``__init__``); the weights are ``None`` until ``_add_kernel_and_bias``."""
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = None
        self.bias = None

    def _add_kernel_and_bias(self, kernel_shape: tuple) -> None:
        """Create ``kernel`` and, with ``use_bias``, ``bias``: one value per output, the kernel's last dimension
        (``build``)."""
        self.kernel = self.add_weight(shape=kernel_shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        if self.use_bias:
            self.bias = self.add_weight(shape=kernel_shape[-1:], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        name="bias")

    def get_config(self) -> dict:
        return {**super().get_config(), "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


class Dense(_KernelAndBias):
    """``activation(inputs @ kernel + bias)`` over the last axis of the inputs."""

    def __init__(self, units: int, activation=None, use_bias: bool = True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(units, (int, np.integer)) or int(units) <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. Received: "
                             f"units={units}")
        self.units = int(units)
        self._kernel_and_bias_options(activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                      bias_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape) -> None:
        self._add_kernel_and_bias((last_dim(self, input_shape), self.units))

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


class Activation(Layer):
    """An activation function as a layer: ``Activation("relu")``."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Softmax(Layer):
    """``softmax(inputs)`` over ``axis``; where ``mask`` is False the inputs count as -1e9 first (Keras 3)."""

    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        inputs = convert(inputs)
        if mask is not None:
            keep = math_ops.cast(convert(mask), inputs.dtype)
            inputs = math_ops.add(inputs, math_ops.multiply(math_ops.subtract(convert(1.0, inputs.dtype), keep),
                                                            convert(-1e9, inputs.dtype)))
        return activations.softmax(inputs, axis=self.axis)


class ReLU(Layer):
    """``relu(inputs, negative_slope, max_value, threshold)`` as a layer (Keras 3's ``ReLU``)."""

    def __init__(self, max_value=None, negative_slope: float = 0.0, threshold: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"ReLU: max_value of a ReLU layer cannot be a negative value, got {max_value}")
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"ReLU: negative_slope of a ReLU layer cannot be a negative value, got {negative_slope}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)


class LeakyReLU(Layer):
    """``x`` above 0, ``negative_slope * x`` below (Keras 3's default slope is 0.3)."""

    def __init__(self, negative_slope: float = 0.3, **kwargs):
        if "alpha" in kwargs:           # Keras 2's name of the slope
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"LeakyReLU: negative_slope cannot be negative, got {negative_slope}")
        self.negative_slope = negative_slope

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)


class ELU(Layer):
    """``x`` above 0, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = alpha

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)


class Rescaling(Layer):
    """``inputs * scale + offset`` (pixel values from [0, 255] to [0, 1]: ``Rescaling(1 / 255)``), computed in
    the layer's dtype."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        x = math_ops.cast(convert(inputs), dtypes.as_dtype(self.dtype or "float32"))
        scale = math_ops.cast(convert(self.scale), x.dtype)
        offset = math_ops.cast(convert(self.offset), x.dtype)
        return math_ops.add(math_ops.multiply(x, scale), offset)


class Dropout(Layer):
    """In training, each input is zeroed with probability ``rate`` and the others scaled by ``1 / (1 - rate)``;
    otherwise the inputs pass unchanged.

    The mask comes from ``rt.random.stateless_uniform`` under a seed kept in a variable (Keras 3's
    ``SeedGenerator``: ``seed_generator_state``, ``[seed, calls]``, among the layer's non-trainable variables, not
    its weights), which each call advances, eagerly and in a Function alike: two layers of one seed draw the same
    masks, each call a new one, and repeatable runs the same sequence (``seed`` or, without one, the generator
    ``rt.keras.utils.set_random_seed`` seeds).
    """

    def __init__(self, rate: float, noise_shape=None, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        start = seed if seed is not None else int(utils.generator().integers(2**62))
        self.seed_generator_state = Variable(np.array([start, 0], np.int64), trainable=False,
                                             name="seed_generator_state")
        self.seed_generator_state._rt_seed_state = True       # state, not a weight (Layer.weights)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return array_ops.zeros_like(inputs)
        shape = array_ops.shape(inputs) if self.noise_shape is None else self._noise_shape(inputs)
        seed = self.seed_generator_state.read_value()
        self.seed_generator_state.assign_add(np.array([0, 1], np.int64))
        noise = random_ops.stateless_uniform(shape, seed=seed, dtype=inputs.dtype)
        kept = math_ops.multiply(inputs, 1.0 / (1.0 - self.rate))
        return math_ops.where(math_ops.greater_equal(noise, self.rate), kept, array_ops.zeros_like(inputs))

    def _noise_shape(self, inputs):
        dims = array_ops.shape(inputs)
        return array_ops.stack([dims[i] if d is None else int(d) for i, d in enumerate(self.noise_shape)])


class Flatten(Layer):
    """Inputs reshaped to ``[batch, -1]``."""

    def call(self, inputs):
        shape = inputs.shape
        if shape.rank is None:
            raise ValueError(f"{self.name}: Flatten needs inputs of known rank")
        if shape.rank == 1:
            return array_ops.expand_dims(inputs, 1)
        rest = shape.dims[1:]
        if all(d is not None for d in rest):
            return array_ops.reshape(inputs, [-1, int(np.prod(rest, dtype=np.int64))])
        return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))


class Reshape(Layer):
    """Inputs reshaped to ``(batch,) + target_shape`` (one entry of ``target_shape`` may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"{self.name}: at most one dimension of target_shape may be -1, got {self.target_shape}")

    def call(self, inputs):
        if -1 not in self.target_shape:
            return array_ops.reshape(inputs, [-1, *self.target_shape])
        batch = inputs.shape[0] if inputs.shape.rank else None
        if batch is not None:
            return array_ops.reshape(inputs, [batch, *self.target_shape])
        return array_ops.reshape(inputs, array_ops.concat([array_ops.shape(inputs)[:1],
                                                           np.array(self.target_shape, np.int32)], 0))


class Embedding(Layer):
    """Rows of an ``[input_dim, output_dim]`` table looked up by integer inputs."""

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero: bool = False,
                 input_length=None, **kwargs):
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = mask_zero
        self.embeddings = None

    def build(self, input_shape=None) -> None:
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint, name="embeddings")

    def call(self, inputs):
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return array_ops.gather(self.embeddings, inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "embeddings_constraint": constraints.serialize(self.embeddings_constraint)}


class Lambda(Layer):
    """``function(inputs)`` as a layer (no weights)."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


class _Merge(Layer):
    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 1:
            raise ValueError(f"A merge layer ({type(self).__name__}) should be called on a list of inputs, "
                             f"got {inputs!r}")
        return self._merge(list(inputs))


class _Fold(_Merge):
    """The inputs combined left to right by ``_combine``."""
    _combine = None

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = type(self)._combine(out, x)
        return out


class Add(_Fold):
    _combine = staticmethod(math_ops.add)


class Maximum(_Fold):
    _combine = staticmethod(math_ops.maximum)


class Minimum(_Fold):
    _combine = staticmethod(math_ops.minimum)


class Subtract(_Merge):
    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"A Subtract layer should be called on exactly 2 inputs, got {len(inputs)}")
        return math_ops.subtract(inputs[0], inputs[1])


class Multiply(_Fold):
    _combine = staticmethod(math_ops.multiply)


class Average(_Merge):
    def _merge(self, inputs):
        return math_ops.divide(Add._merge(self, inputs), float(len(inputs)))


class Concatenate(_Merge):
    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def _merge(self, inputs):
        return array_ops.concat(inputs, self.axis)


__all__ = ["Activation", "Add", "Average", "Concatenate", "Dense", "Dropout", "Embedding", "Flatten", "Lambda",
           "Multiply", "Reshape", "Subtract"]
