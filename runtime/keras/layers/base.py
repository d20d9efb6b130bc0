"""The Keras ``Layer``: ``build(input_shape)`` creates the weights on the first call, ``call(inputs)`` computes.

As in Keras 3:

- ``add_weight(shape=..., initializer=..., trainable=..., name=...)`` creates a weight (the Keras 2 spelling
  ``add_weight("kernel", shape=...)`` is accepted too); ``weights`` lists the layer's own weights (those created
  trainable first, each group in creation order, then any ``rt.Variable`` assigned to an attribute), then those
  of its sublayers in the order they were assigned; ``trainable_weights`` and ``non_trainable_weights`` split
  them; ``layer.trainable = False`` freezes the layer and its sublayers.
- ``__call__`` converts the inputs to tensors (floating ones to the layer's dtype), builds the layer from their
  shapes once, and passes ``training`` down: an explicit ``training=`` wins, else the value of the enclosing
  layer's call (so ``model(x, training=True)`` reaches a ``Dropout`` inside a subclassed model's ``call``).
- Called on ``KerasTensor``s (``rt.keras.Input``), a layer returns KerasTensors and records the call for a
  functional ``Model``; the output shape comes from running ``call`` on placeholders of a scratch graph.
- ``losses``: what ``add_loss`` added in the last call and the weights' regularization penalties.

Example (the custom layers guide):
    >>> import runtime as rt
    >>> class MyDenseLayer(rt.keras.layers.Layer):
    ...     def __init__(self, num_outputs, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.num_outputs = num_outputs
    ...     def build(self, input_shape):
    ...         self.kernel = self.add_weight(shape=[int(input_shape[-1]), self.num_outputs], name="kernel")
    ...     def call(self, inputs):
    ...         return rt.matmul(inputs, self.kernel)
    >>> layer = MyDenseLayer(10, name="dense_10")
    >>> layer(rt.zeros([10, 5])).shape, [(v.name, v.path) for v in layer.trainable_variables]
    (TensorShape([10, 10]), [('kernel', 'dense_10/kernel')])
"""
from __future__ import annotations

import functools
import inspect
import itertools
import re
import threading
from collections import defaultdict

import numpy as np

from runtime import context, dtypes, nest
from runtime.graph import Graph
from runtime.keras import constraints, initializers, regularizers
from runtime.keras.keras_tensor import KerasTensor, Node, any_keras_tensor
from runtime.module import Module
from runtime.ops import math_ops
from runtime.ops.registry import convert
from runtime.tensor import Tensor
from runtime.variables import Variable

_uids: dict = defaultdict(itertools.count)


def to_snake_case(name: str) -> str:
    """Keras' snake case of a class name (``BatchNormalization`` -> ``batch_normalization``)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(base: str) -> str:
    """``base``, then ``base_1``, ``base_2`` ... (one counter per base name, as Keras names layers)."""
    n = next(_uids[base])
    return base if n == 0 else f"{base}_{n}"


class _CallContext(threading.local):
    def __init__(self):
        self.training: list = []


_call_context = _CallContext()


def current_training():
    """The ``training`` value of the layer call being run (None outside any)."""
    stack = _call_context.training
    return stack[-1] if stack else None


_LAYER_KWARGS = ("input_shape", "input_dim", "batch_input_shape", "batch_size", "input_dtype")


class Layer(Module):
    """Base class of Keras layers (see the module docstring)."""

    def __init__(self, *, trainable: bool = True, dtype=None, name: str | None = None, activity_regularizer=None,
                 autocast: bool = True, **kwargs):
        unknown = sorted(set(kwargs) - set(_LAYER_KWARGS))
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to {type(self).__name__}: "
                            f"{ {k: kwargs[k] for k in unknown} }")
        Module.__init__(self, name or unique_name(to_snake_case(type(self).__name__)))
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
        self._trainable = bool(trainable)
        self.built = False
        self._weights: list = []                       # add_weight's weights, in creation order
        self._rt_created_trainable: set = set()        # ids of those created trainable
        self._rt_regularizers: list = []               # (variable, regularizer)
        self._rt_losses: list = []                     # add_loss values of the last call
        self._rt_activity_regularizer = regularizers.get(activity_regularizer)
        self._rt_autocast = autocast
        self._rt_nodes: list = []                      # inbound nodes (functional calls)
        self._rt_build_shape = None
        self._rt_output_shape = None
        self._rt_batch_input_shape = _batch_input_shape(kwargs)
        if self._rt_batch_input_shape is not None:
            self._rt_input_dtype = dtypes.as_dtype(kwargs.get("input_dtype") or self.dtype)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "build" in cls.__dict__:
            cls.build = _marks_built(cls.__dict__["build"])

    # -- weights ------------------------------------------------------------------------------------
    def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable: bool = True,
                   autocast: bool = True, regularizer=None, constraint=None, aggregation="none",
                   overwrite_with_gradient: bool = False, name: str | None = None) -> Variable:
        """A new weight of this layer: ``add_weight(shape=(3, 4), initializer="zeros", trainable=True, name=...)``.

        Positional arguments are ``shape, initializer, dtype`` as in Keras 3; a first positional string is the
        name, as Keras 2 (and the custom layers guide) spell it: ``add_weight("kernel", shape=[5, 10])``.
        The initializer defaults to Glorot uniform for floats and zeros otherwise. A ``constraint`` (a name, a
        config or a callable: ``constraints.get``) stays on the variable (``variable.constraint``): optimizers
        apply it after each update.
        """
        args = list(args)
        if args and isinstance(args[0], str):
            if name is not None:
                raise TypeError(f"{self.name}.add_weight: the name was given twice ({args[0]!r} and {name!r})")
            name = args.pop(0)
        for label, value in zip(("shape", "initializer", "dtype"), args):
            if {"shape": shape, "initializer": initializer, "dtype": dtype}[label] is not None:
                raise TypeError(f"{self.name}.add_weight: {label} was given both positionally and by keyword")
            if label == "shape":
                shape = value
            elif label == "initializer":
                initializer = value
            else:
                dtype = value
        if len(args) > 3:
            raise TypeError(f"{self.name}.add_weight takes at most 3 positional arguments (shape, initializer, dtype)")
        shape = () if shape is None else tuple(int(d) for d in (shape.as_list() if hasattr(shape, "as_list")
                                                                 else shape))
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        constraint = constraints.get(constraint)
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        value = np.asarray(initializers.get(initializer)(shape, dtype), dtype.np)
        if value.shape != shape:
            raise ValueError(f"{self.name}.add_weight: the initializer gave shape {value.shape}, expected {shape}")
        label = name or f"variable_{len(self._weights)}"
        # Keras 3: the variable's name is the weight's own (``kernel``), its path the layer's and that name
        variable = Variable(value, trainable=trainable, name=label, constraint=constraint)
        variable.path = f"{self.name}/{label}"
        self._weights.append(variable)
        if trainable:
            self._rt_created_trainable.add(id(variable))
        if regularizer is not None:
            self._rt_regularizers.append((variable, regularizers.get(regularizer)))
        return variable

    def _own_variables(self) -> list:
        """This layer's weights without its sublayers': created trainable first, then the others, then
        ``rt.Variable``s assigned to attributes."""
        own = [v for v in self._weights if id(v) in self._rt_created_trainable]
        own += [v for v in self._weights if id(v) not in self._rt_created_trainable]
        known = {id(v) for v in own}
        for _, value in self._attribute_items():
            for leaf in _leaves_in_order(value):
                if isinstance(leaf, Variable) and id(leaf) not in known:
                    known.add(id(leaf))
                    own.append(leaf)
        return own

    def _attribute_items(self):
        for key, value in vars(self).items():
            if not key.startswith("_rt_") and key != "_weights":
                yield key, value

    def _sublayers(self) -> list:
        """The layers (and ``rt.Module``s) held by this layer's attributes, in the order they were assigned."""
        found, seen = [], set()
        for _, value in self._attribute_items():
            for leaf in _leaves_in_order(value):
                if isinstance(leaf, Module) and leaf is not self and id(leaf) not in seen:
                    seen.add(id(leaf))
                    found.append(leaf)
        return found

    def _tracked_values(self):
        yield from self._own_variables()
        yield from self._sublayers()

    def _flatten_layers(self, include_self: bool = True) -> list:
        """This layer and every layer inside it, depth first, each once."""
        out, seen = [], set()

        def visit(layer):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            out.append(layer)
            for sub in layer._sublayers():
                if isinstance(sub, Layer):
                    visit(sub)
        visit(self)
        return out if include_self else out[1:]

    @property
    def weights(self) -> list:
        """The layer's variables but its random-number state (a Dropout's ``seed_generator_state``): Keras 3 counts
        that among ``variables`` and ``non_trainable_variables``, not among the weights."""
        return [v for v in self.variables if not getattr(v, "_rt_seed_state", False)]

    @property
    def trainable_weights(self) -> list:
        return [v for v in self.variables if v.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        return [v for v in self.weights if not v.trainable] if self.trainable else list(self.weights)

    @property
    def variables(self) -> list:
        return list(Module.variables.fget(self))

    trainable_variables = trainable_weights

    @property
    def non_trainable_variables(self) -> list:
        return [v for v in self.variables if not v.trainable] if self.trainable else list(self.variables)

    @property
    def trainable(self) -> bool:
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        value = bool(value)
        self._trainable = value
        for variable in self._weights:
            if id(variable) in self._rt_created_trainable:
                variable.trainable = value
        for sub in self._sublayers():
            if isinstance(sub, Layer):
                sub.trainable = value

    def get_weights(self) -> list:
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights) -> None:
        """Assign numpy arrays to ``weights`` in order (shapes must match)."""
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"{self.name}.set_weights: expected {len(mine)} arrays (one per weight), "
                             f"got {len(weights)}")
        for variable, value in zip(mine, weights):
            value = np.asarray(value)
            if tuple(value.shape) != tuple(variable.shape.dims):
                raise ValueError(f"{self.name}.set_weights: {variable.name} has shape {tuple(variable.shape.dims)}, "
                                 f"got an array of shape {value.shape}")
            variable.assign(value.astype(variable.dtype.np))

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call count_params on layer '{self.name}', but the layer isn't built. "
                             "Build it first (call it on data, or build(input_shape))")
        return int(sum(np.prod(v.shape.dims, dtype=np.int64) for v in self.weights))

    # -- losses -----------------------------------------------------------------------------------------
    def add_loss(self, loss) -> None:
        """Add a loss term (a scalar tensor) computed in ``call``; ``losses`` lists it until the next call."""
        self._rt_losses.append(loss)

    @property
    def losses(self) -> list:
        """``add_loss`` terms of the last call and the weights' regularization penalties, this layer's and its
        sublayers'."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._rt_losses)
            out.extend(reg(v) for v, reg in layer._rt_regularizers)
        return out

    # -- building and calling -----------------------------------------------------------------------
    def build(self, input_shape=None) -> None:
        """Create the weights for inputs of ``input_shape`` (called once, by the first call)."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} does not have a `call()` method implemented.")

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(f"{type(self).__name__}.compute_output_shape")

    @functools.cached_property
    def _rt_call_parameters(self) -> frozenset:
        try:
            parameters = inspect.signature(self.call).parameters
        except (TypeError, ValueError):
            return frozenset()
        if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            return frozenset(parameters) | {"training", "mask"}
        return frozenset(parameters)

    def _convert_input(self, value):
        if value is None or isinstance(value, (str, bytes, bool)):
            return value
        tensor = value if isinstance(value, Tensor) else convert(value)
        if self._rt_autocast and tensor.dtype.is_floating and tensor.dtype is not self.dtype and self.dtype.is_floating:
            tensor = math_ops.cast(tensor, self.dtype)
        return tensor

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        shapes = nest.map_structure(
            lambda t: tuple(t.shape.as_list()) if isinstance(t, Tensor) and t.shape.rank is not None else None,
            inputs)
        self.build(shapes)
        self.built = True
        self._rt_build_shape = shapes

    def __call__(self, *args, **kwargs):
        if not args:
            if "inputs" not in kwargs:
                raise TypeError(f"{self.name}: a layer is called with its inputs as the first argument")
            args = (kwargs.pop("inputs"),)
        inputs, rest = args[0], args[1:]
        if any_keras_tensor(inputs):
            return self._symbolic_call(inputs, rest, kwargs)
        training = kwargs.pop("training", None)
        if training is None:
            training = current_training()
        if "mask" in kwargs and "mask" not in self._rt_call_parameters:
            kwargs.pop("mask")                      # Keras passes masks only to layers that take them
        inputs = nest.map_structure(self._convert_input, inputs)
        self._maybe_build(inputs)
        if training is not None and "training" in self._rt_call_parameters:
            kwargs["training"] = training
        self._rt_losses = []
        stack = _call_context.training
        stack.append(training)
        try:
            outputs = self.call(inputs, *rest, **kwargs)
        finally:
            stack.pop()
        if self._rt_activity_regularizer is not None:
            self.add_loss(self._rt_activity_regularizer(outputs))
        return outputs

    def _symbolic_call(self, inputs, rest: tuple, kwargs: dict):
        """Call on KerasTensors: run ``call`` on placeholders of a scratch graph for the output shapes, record
        the call (a ``Node``) and return KerasTensors."""
        graph = Graph(f"{self.name}_symbolic")
        with context.graph_scope(graph):
            def placeholder(value):
                if isinstance(value, KerasTensor):
                    return graph.add_placeholder(value.name, value.dtype, value.shape)
                return value
            outputs = self(nest.map_structure(placeholder, inputs),
                           *nest.map_structure(placeholder, list(rest)),
                           **{k: nest.map_structure(placeholder, v) for k, v in kwargs.items()})
        results = nest.map_structure(lambda t: KerasTensor(t.shape, t.dtype) if isinstance(t, Tensor) else t, outputs)
        node = Node(self, (inputs,) + tuple(rest), dict(kwargs), results)
        self._rt_nodes.append(node)
        self._rt_output_shape = nest.map_structure(lambda t: t.shape if isinstance(t, KerasTensor) else None,
                                                   results)
        return results

    # -- functional API views ------------------------------------------------------------------------
    @property
    def input(self):
        if not self._rt_nodes:
            raise AttributeError(f"Layer {self.name} has no defined input (it was never called on a KerasTensor)")
        return self._rt_nodes[0].args[0]

    @property
    def output(self):
        if not self._rt_nodes:
            raise AttributeError(f"Layer {self.name} has no defined output (it was never called on a KerasTensor)")
        return self._rt_nodes[0].outputs

    @property
    def input_shape(self):
        return nest.map_structure(lambda t: tuple(t.shape.as_list()), self.input)

    @property
    def output_shape(self):
        return nest.map_structure(lambda t: tuple(t.shape.as_list()), self.output)

    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype.name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _marks_built(build):
    """``build`` that leaves the layer marked built (a user's ``build`` need not call ``super().build``)."""
    @functools.wraps(build)
    def wrapper(self, *args, **kwargs):
        result = build(self, *args, **kwargs)
        self.built = True
        return result
    wrapper._rt_marks_built = True
    return build if getattr(build, "_rt_marks_built", False) else wrapper


def _leaves_in_order(value):
    """Leaves of lists, tuples and dicts in insertion order (Keras tracks attributes as assigned)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves_in_order(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves_in_order(item)
    else:
        yield value


def _batch_input_shape(kwargs: dict):
    """The batch shape a layer's ``input_shape`` / ``input_dim`` / ``batch_input_shape`` argument gives (or None)."""
    if kwargs.get("batch_input_shape") is not None:
        return tuple(kwargs["batch_input_shape"])
    batch = kwargs.get("batch_size")
    if kwargs.get("input_shape") is not None:
        shape = kwargs["input_shape"]
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return (batch,) + shape
    if kwargs.get("input_dim") is not None:
        return (batch, int(kwargs["input_dim"]))
    return None
