"""Models: ``Model`` (functional ``Model(inputs, outputs)``, or a subclass defining ``call``) and ``Sequential``.

A model is a layer made of layers, with Keras 3's training API (``runtime.keras.training``), ``summary()`` (the
table Keras prints), and ``save_weights``/``load_weights`` (the layers' weights in the format of
``runtime.train.checkpoint``).

Example:
    >>> import runtime as rt
    >>> rt.keras.utils.set_random_seed(0)
    >>> inputs = rt.keras.Input(shape=(3,))
    >>> outputs = rt.keras.layers.Dense(2)(rt.keras.layers.Dense(4, activation="relu")(inputs))
    >>> model = rt.keras.Model(inputs, outputs)
    >>> [type(layer).__name__ for layer in model.layers], model.output_shape
    (['InputLayer', 'Dense', 'Dense'], (None, 2))
"""
from __future__ import annotations

import os
import textwrap

import numpy as np

from runtime import dtypes, nest
from runtime.errors import missing_name
from runtime.keras.functional import FunctionalGraph, InputLayer
from runtime.keras.keras_tensor import KerasTensor, shape_text
from runtime.keras.layers.base import Layer, to_snake_case, unique_name
from runtime.keras.training import Trainer
from runtime.module import Module
from runtime.shapes import TensorSpec, as_shape
from runtime.tensor import Tensor
from runtime.train import checkpoint
from runtime.variables import Variable


def _batch_free_spec(shape, dtype) -> TensorSpec:
    shape = as_shape(shape)
    dims = list(shape.dims) if shape.rank is not None else None
    if dims:
        dims[0] = None
    return TensorSpec(dims, dtype)


def _weights_only(value) -> bool:
    """What ``save_weights`` follows: layers, modules, their variables, lists and dicts (not optimizers, metrics)."""
    return isinstance(value, (Module, Variable, list, tuple, dict))


class Model(Trainer, Layer):
    """A layer made of layers, with ``compile``/``fit``/``evaluate``/``predict``.

    ``Model(inputs, outputs)`` builds a functional model from ``rt.keras.Input`` KerasTensors and the layers
    called on them; a subclass defines its layers in ``__init__`` and the computation in ``call``.
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if args:
            if len(args) > 2 or inputs is not None:
                raise TypeError("Model takes (inputs, outputs) positionally or by keyword")
            inputs = args[0]
            outputs = args[1] if len(args) == 2 else outputs
        functional = inputs is not None or outputs is not None
        if functional and (inputs is None or outputs is None):
            raise ValueError("A functional Model needs both inputs and outputs: Model(inputs=..., outputs=...)")
        name = kwargs.pop("name", None) or unique_name("functional" if functional and type(self) is Model else
                                                       _model_name(type(self)))
        Layer.__init__(self, name=name, **kwargs)
        self._rt_init_trainer()
        self._rt_functional = None
        self._rt_input_spec_value = None
        self._rt_output_spec_value = None
        if functional:
            self._rt_set_functional(inputs, outputs)

    # -- structure ----------------------------------------------------------------------------------------
    def _rt_set_functional(self, inputs, outputs) -> None:
        graph = FunctionalGraph(inputs, outputs, self.name)
        self._rt_functional = graph
        self.layers = list(graph.layers)
        self.built = True

    @property
    def layers(self) -> list:
        """The model's layers (a functional model lists its ``InputLayer``s first, as Keras 3 does)."""
        if "layers" in self.__dict__:
            return self.__dict__["layers"]
        return [sub for sub in self._sublayers() if isinstance(sub, Layer)]

    @layers.setter
    def layers(self, value) -> None:
        self.__dict__["layers"] = value

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: {[layer.name for layer in self.layers]}")

    @property
    def inputs(self):
        return None if self._rt_functional is None else nest.flatten(self._rt_functional.inputs)

    @property
    def outputs(self):
        return None if self._rt_functional is None else nest.flatten(self._rt_functional.outputs)

    @property
    def input(self):
        if self._rt_functional is not None:
            return self._rt_functional.inputs
        return Layer.input.fget(self)

    @property
    def output(self):
        if self._rt_functional is not None:
            return self._rt_functional.outputs
        return Layer.output.fget(self)

    # -- specs -----------------------------------------------------------------------------------------------
    def _rt_input_spec(self):
        if self._rt_functional is not None:
            return nest.map_structure(lambda t: _batch_free_spec(t.shape, t.dtype), self._rt_functional.inputs)
        return self._rt_input_spec_value

    def _rt_output_spec(self):
        if self._rt_functional is not None:
            return nest.map_structure(lambda t: _batch_free_spec(t.shape, t.dtype), self._rt_functional.outputs)
        return self._rt_output_spec_value

    # -- building and calling --------------------------------------------------------------------------
    def build(self, input_shape=None) -> None:
        """Create every weight by running ``call`` once on a symbolic input of ``input_shape`` (None dims
        allowed); a functional model is built already."""
        if self._rt_functional is not None:
            return
        if input_shape is None:
            raise ValueError(f"{self.name}: build() needs input_shape")
        self.built = True
        spec = _batch_free_spec(input_shape, self.dtype)
        self._rt_input_spec_value = spec
        out = self(KerasTensor(as_shape(input_shape), self.dtype))
        if isinstance(out, KerasTensor):
            self._rt_output_spec_value = _batch_free_spec(out.shape, out.dtype)

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        if type(self).build is not Model.build:         # a subclass's own build
            Layer._maybe_build(self, inputs)
        self.built = True

    def __call__(self, *args, **kwargs):
        first = args[0] if args else kwargs.get("inputs")
        if self._rt_input_spec_value is None and isinstance(first, (Tensor, np.ndarray)) and \
                self._rt_functional is None and not isinstance(first, KerasTensor):
            dtype = first.dtype if isinstance(first, Tensor) else dtypes.as_dtype(first.dtype)
            if dtype.is_floating:
                dtype = self.dtype
            self._rt_input_spec_value = _batch_free_spec(first.shape, dtype)
        outputs = Layer.__call__(self, *args, **kwargs)
        if self._rt_output_spec_value is None and self._rt_functional is None and isinstance(outputs, Tensor):
            self._rt_output_spec_value = _batch_free_spec(outputs.shape, outputs.dtype)
        return outputs

    def call(self, inputs, training=None, mask=None):
        if self._rt_functional is None:
            raise NotImplementedError(f"Model {type(self).__name__} does not have a `call()` method implemented: "
                                      "subclass Model and define call(), or build it as Model(inputs, outputs)")
        return self._rt_functional.run(inputs)

    # -- weights I/O -----------------------------------------------------------------------------------------
    def save(self, filepath, overwrite: bool = True, **kwargs) -> None:
        """Whole-model saving (architecture and weights) is not supported: rt saves weights and checkpoints."""
        raise NotImplementedError(f"{self.name}.save({str(filepath)!r}): rt saves weights, not whole models; use "
                                  "model.save_weights(path) (and rebuild the model in code before load_weights), or "
                                  "rt.train.Checkpoint(model=model, optimizer=...)")

    def save_weights(self, filepath, overwrite: bool = True) -> None:
        """Write the model's layer weights to ``filepath`` (the format of ``rt.train.Checkpoint``, one file:
        the path as given when it has a suffix, else ``filepath + ".rtckpt"``)."""
        path = _weights_file(filepath)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save_weights: {path!r} exists (overwrite=False)")
        checkpoint.write_file(path, self, kind="weights", follow=_weights_only)

    def load_weights(self, filepath, skip_mismatch: bool = False, **kwargs):
        """Assign the weights saved by ``save_weights`` (or in a checkpoint) to this model's layers.

        Weights of layers not built yet are assigned when the layers create them. A saved value with no weight
        to go to, or a weight of this (built) model with no saved value, is a ``ValueError`` naming them.
        """
        status = checkpoint.restore_file(checkpoint.checkpoint_file(filepath), self, follow=_weights_only)
        if not skip_mismatch:
            problems = []
            unresolved = sorted(status._unresolved)
            if unresolved:
                problems.append(f"saved weights with no layer weight to go to: {checkpoint._listing(unresolved)}")
            if self.built:
                missing = status._unrestored_variables()
                if missing:
                    problems.append(f"weights of this model missing from the file: {checkpoint._listing(missing)}")
            if problems:
                raise ValueError(f"load_weights({str(filepath)!r}): " + "; ".join(problems))
        return status

    # -- summary -----------------------------------------------------------------------------------------------
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range=None) -> None:
        """Print Keras' table of the model's layers, output shapes and parameter counts."""
        print_fn = print_fn or print
        widths = (33, 24, 15)
        rows = []
        for layer in self.layers:
            if isinstance(layer, InputLayer) and not isinstance(self, Sequential):
                rows.append((f"{layer.name} (InputLayer)", shape_text(layer.batch_shape), "0"))
                continue
            if isinstance(layer, InputLayer):
                continue
            shape = layer._rt_output_shape
            if shape is None:
                shape_str = "?"
            elif isinstance(shape, (list, tuple)):
                shape_str = "[" + ", ".join(shape_text(s) for s in shape) + "]"
            else:
                shape_str = shape_text(shape)
            if layer.built:
                params = f"{sum(int(np.prod(v.shape.dims, dtype=np.int64)) for v in layer.weights):,}"
            else:
                params = "0 (unbuilt)"
            rows.append((f"{layer.name} ({type(layer).__name__})", shape_str, params))
        lines = [f'Model: "{self.name}"',
                 "┏" + "┳".join("━" * w for w in widths) + "┓",
                 _row(("Layer (type)", "Output Shape", "Param #"), widths, "┃"),
                 "┡" + "╇".join("━" * w for w in widths) + "┩"]
        for i, row in enumerate(rows):
            lines.extend(_row_lines(row, widths))
            if i + 1 < len(rows):
                lines.append("├" + "┼".join("─" * w for w in widths) + "┤")
        lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
        weights = self.weights
        trainable = [v for v in weights if v.trainable] if self.trainable else []
        frozen_ids = {id(v) for v in trainable}
        non_trainable = [v for v in weights if id(v) not in frozen_ids]
        optimizer_vars = []
        if self.optimizer is not None and getattr(self.optimizer, "iterations", None) is not None:
            optimizer_vars = list(self.optimizer.variables)
            if getattr(self.optimizer, "_learning_rate", None) is not None:
                optimizer_vars.append(self.optimizer._learning_rate)
        total = trainable + non_trainable + optimizer_vars
        lines.append(f" Total params: {_count(total):,} ({_memory(total)})")
        lines.append(f" Trainable params: {_count(trainable):,} ({_memory(trainable)})")
        lines.append(f" Non-trainable params: {_count(non_trainable):,} ({_memory(non_trainable)})")
        if optimizer_vars:
            lines.append(f" Optimizer params: {_count(optimizer_vars):,} ({_memory(optimizer_vars)})")
        for line in lines:
            print_fn(line)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _model_name(cls) -> str:
    return to_snake_case(cls.__name__)


def _weights_file(filepath) -> str:
    path = str(filepath)
    return path if path.endswith((".h5", ".keras", ".npz", checkpoint.SUFFIX)) else path + checkpoint.SUFFIX


def _count(variables) -> int:
    return int(sum(int(np.prod(v.shape.dims, dtype=np.int64)) for v in variables))


def _memory(variables) -> str:
    size = float(sum(int(np.prod(v.shape.dims, dtype=np.int64)) * v.dtype.np.itemsize for v in variables))
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _row(cells, widths, bar: str) -> str:
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths)):
        text = cell.rjust(width - 2) if i == 2 else cell.ljust(width - 2)
        parts.append(f" {text} ")
    return bar + bar.join(parts) + bar


def _row_lines(cells, widths) -> list[str]:
    wrapped = [textwrap.wrap(cell, width - 2, break_long_words=True) or [""] for cell, width in zip(cells, widths)]
    height = max(len(w) for w in wrapped)
    lines = []
    for i in range(height):
        lines.append(_row([w[i] if i < len(w) else "" for w in wrapped], widths, "│"))
    return lines


class Sequential(Model):
    """Layers applied in order: ``Sequential([Input((4,)), Dense(8, activation="relu"), Dense(1)])``.

    With a known input shape (an ``Input`` first, a first layer given ``input_shape=``/``input_dim=``, or
    ``build(input_shape)``) every layer is built at once and ``summary()`` shows the output shapes.
    """

    def __init__(self, layers=None, trainable: bool = True, name: str | None = None):
        super().__init__(trainable=trainable, name=name or unique_name("sequential"))
        self.layers = []
        self._rt_input_layer = None
        for layer in layers or ():
            self.add(layer, rebuild=False)
        self._rt_maybe_rebuild()

    def add(self, layer, rebuild: bool = True) -> None:
        """Append a layer (an ``Input`` KerasTensor or ``InputLayer`` only first)."""
        if isinstance(layer, KerasTensor) and layer.node is not None and isinstance(layer.node.layer, InputLayer):
            layer = layer.node.layer
        if isinstance(layer, InputLayer):
            if self.layers or self._rt_input_layer is not None:
                raise ValueError(f"{self.name}: an Input (InputLayer) may only come first in a Sequential model")
            self._rt_input_layer = layer
        elif not isinstance(layer, Layer):
            raise TypeError(f"Only instances of `rt.keras.Layer` can be added to a Sequential model. Received: "
                            f"{layer!r} (of type {type(layer).__name__})")
        else:
            if not self.layers and self._rt_input_layer is None and layer._rt_batch_input_shape is not None:
                self._rt_input_layer = InputLayer(batch_shape=layer._rt_batch_input_shape,
                                                  dtype=layer._rt_input_dtype)
            self.layers.append(layer)
        self.built = False
        self._rt_output_spec_value = None
        if rebuild:
            self._rt_maybe_rebuild()

    def pop(self) -> Layer:
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        layer = self.layers.pop()
        self.built = False
        self._rt_maybe_rebuild()
        return layer

    def _rt_maybe_rebuild(self) -> None:
        if self._rt_input_layer is not None and self.layers:
            self.build(self._rt_input_layer.batch_shape)

    def build(self, input_shape=None) -> None:
        """Build every layer from ``input_shape`` (the batch dimension may be None)."""
        if input_shape is None:
            if self._rt_input_layer is None:
                raise ValueError(f"{self.name}: build() needs input_shape (or an Input as the first layer)")
            input_shape = self._rt_input_layer.batch_shape
        if self._rt_input_layer is None or tuple(self._rt_input_layer.batch_shape) != tuple(as_shape(input_shape)
                                                                                           .dims):
            dtype = self._rt_input_layer.dtype if self._rt_input_layer is not None else self.dtype
            self._rt_input_layer = InputLayer(batch_shape=tuple(as_shape(input_shape).dims), dtype=dtype)
        x = self._rt_input_layer.output_tensor
        for layer in self.layers:
            x = layer(x)
        self.built = True
        self._rt_input_spec_value = _batch_free_spec(self._rt_input_layer.batch_shape, self._rt_input_layer.dtype)
        if isinstance(x, KerasTensor):
            self._rt_output_spec_value = _batch_free_spec(x.shape, x.dtype)
            self._rt_output_tensor = x

    def _maybe_build(self, inputs) -> None:
        """The first call builds the layer graph from the inputs' shape (batch dimension open), as Keras 3 does."""
        if self.built:
            return
        if isinstance(inputs, Tensor) and inputs.shape.rank and self.layers and self._rt_input_layer is None:
            self._rt_input_layer = InputLayer(batch_shape=(None,) + tuple(inputs.shape.dims[1:]), dtype=inputs.dtype)
            self.build()
        self.built = True

    @property
    def input(self):
        if self._rt_input_layer is None:
            raise AttributeError(f"{self.name} has no defined input (no Input and not built)")
        return self._rt_input_layer.output_tensor

    @property
    def output(self):
        if getattr(self, "_rt_output_tensor", None) is None:
            raise AttributeError(f"{self.name} has no defined output (no Input and not built)")
        return self._rt_output_tensor

    @property
    def inputs(self):
        return None if self._rt_input_layer is None else [self.input]

    @property
    def outputs(self):
        return None if getattr(self, "_rt_output_tensor", None) is None else [self.output]

    def call(self, inputs, training=None, mask=None):
        for layer in self.layers:
            if training is not None and "training" in layer._rt_call_parameters:
                inputs = layer(inputs, training=training)
            else:
                inputs = layer(inputs)
        return inputs


__all__ = ["Model", "Sequential"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.models")
