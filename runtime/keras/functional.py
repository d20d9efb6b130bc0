"""The functional API: ``Input``, ``InputLayer`` and the graph of layer calls a functional ``Model`` replays.

``x = Input(shape=(4,))`` is a ``KerasTensor`` made by an ``InputLayer``; each layer called on KerasTensors
records a ``Node``. ``FunctionalGraph(inputs, outputs)`` finds the nodes between them (in an order where each
node comes after the nodes it reads) and runs them on real tensors.
"""
from __future__ import annotations

from runtime import dtypes, nest
from runtime.keras.keras_tensor import KerasTensor, Node
from runtime.keras.layers.base import Layer, unique_name
from runtime.ops import math_ops
from runtime.ops.registry import convert
from runtime.tensor import Tensor


class InputLayer(Layer):
    """The layer behind ``Input``: it holds the batch shape and dtype of a model's input."""

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, input_tensor=None,
                 optional: bool = False, name: str | None = None, **kwargs):
        super().__init__(name=name or unique_name("input_layer"), dtype=dtype)
        if shape is not None and batch_shape is not None:
            raise ValueError("InputLayer: give shape or batch_shape, not both")
        if batch_shape is None:
            if shape is None:
                raise ValueError("InputLayer: a shape (or batch_shape) is needed, e.g. Input(shape=(4,))")
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            batch_shape = (batch_size,) + shape
        self.batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        self.built = True
        self.output_tensor = KerasTensor(self.batch_shape, self.dtype, name=self.name)
        Node(self, (), {}, self.output_tensor)
        self._rt_nodes.append(self.output_tensor.node)
        self._rt_output_shape = self.output_tensor.shape

    def call(self, inputs):
        return inputs


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional: bool = False) -> KerasTensor:
    """A symbolic input of a functional model: ``Input(shape=(28, 28))`` (the batch dimension is left out).

    Example:
        >>> import runtime as rt
        >>> x = rt.keras.Input(shape=(4,), name="features")
        >>> x.shape, x.dtype
        (TensorShape([None, 4]), rt.float32)
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, batch_shape=batch_shape, name=name)
    return layer.output_tensor


class FunctionalGraph:
    """The layer calls between a model's input KerasTensors and its outputs."""

    def __init__(self, inputs, outputs, model_name: str):
        self.inputs, self.outputs = inputs, outputs
        flat_inputs = nest.flatten(inputs)
        for t in flat_inputs + nest.flatten(outputs):
            if not isinstance(t, KerasTensor):
                raise TypeError(f"{model_name}: Model(inputs, outputs) takes KerasTensors (from rt.keras.Input and "
                                f"layers called on them), got {t!r}")
        for t in flat_inputs:
            if not isinstance(t.node.layer, InputLayer):
                raise ValueError(f"{model_name}: the model's inputs must come from rt.keras.Input, but {t.name} was "
                                 f"made by layer {t.node.layer.name}")
        input_ids = {id(t) for t in flat_inputs}
        self.nodes: list[Node] = []
        state: dict[int, str] = {}

        def visit(tensor: KerasTensor, path: list):
            node = tensor.node
            if node is None:
                raise ValueError(f"{model_name}: {tensor.name} was not made by a layer")
            if id(tensor) in input_ids:
                return
            if isinstance(node.layer, InputLayer):
                raise ValueError(f"{model_name}: the outputs depend on the input {tensor.name}, which is not among the "
                                 f"model's inputs (Model(inputs=...))")
            if state.get(id(node)) == "done":
                return
            if state.get(id(node)) == "active":
                raise ValueError(f"{model_name}: the layer calls form a cycle through {node.layer.name}")
            state[id(node)] = "active"
            for parent in node.input_tensors:
                visit(parent, path + [node.layer.name])
            state[id(node)] = "done"
            self.nodes.append(node)
        for t in nest.flatten(outputs):
            visit(t, [])
        layers, seen = [], set()
        for t in flat_inputs:
            if id(t.node.layer) not in seen:
                seen.add(id(t.node.layer))
                layers.append(t.node.layer)
        for node in self.nodes:
            if id(node.layer) not in seen:
                seen.add(id(node.layer))
                layers.append(node.layer)
        self.layers = layers

    def input_specs(self):
        """The inputs' (batch shape, dtype) structure."""
        return nest.map_structure(lambda t: (t.shape, t.dtype), self.inputs)

    def _feed(self, values) -> dict[int, object]:
        """id(input KerasTensor) -> the tensor given for it (a structure like the inputs, or a dict by name)."""
        flat_inputs = nest.flatten(self.inputs)
        if isinstance(values, dict) and not isinstance(self.inputs, dict):
            by_name = {t.name: t for t in flat_inputs}
            unknown = sorted(set(values) - set(by_name))
            if unknown:
                raise ValueError(f"unknown input names {unknown}; the model's inputs are {sorted(by_name)}")
            pairs = [(by_name[k], v) for k, v in values.items()]
        elif len(flat_inputs) == 1 and not isinstance(values, (list, tuple, dict)):
            pairs = [(flat_inputs[0], values)]
        else:
            try:
                flat_values = nest.flatten_up_to(self.inputs, values)
            except ValueError:
                raise ValueError(f"the model expects {len(flat_inputs)} inputs "
                                 f"({', '.join(t.name for t in flat_inputs)}), got {values!r}") from None
            pairs = list(zip(flat_inputs, flat_values))
        fed = {}
        for kt, value in pairs:
            tensor = value if isinstance(value, Tensor) else convert(value)
            if tensor.dtype is not kt.dtype and (tensor.dtype.is_floating or kt.dtype.is_floating or
                                                  kt.dtype in (dtypes.int32, dtypes.int64)):
                tensor = math_ops.cast(tensor, kt.dtype)
            if tensor.shape.rank is not None and kt.shape.rank is not None and tensor.shape.rank != kt.shape.rank:
                raise ValueError(f"Input {kt.name} expects inputs of shape {kt.shape}, got {tensor.shape}")
            fed[id(kt)] = tensor
        return fed

    def run(self, values):
        """The outputs for ``values`` (tensors for the inputs), running each node's layer."""
        computed = self._feed(values)

        def resolve(value):
            return computed[id(value)] if isinstance(value, KerasTensor) else value
        for node in self.nodes:
            args = nest.map_structure(resolve, list(node.args))
            kwargs = {k: nest.map_structure(resolve, v) for k, v in node.kwargs.items()}
            results = node.layer(*args, **kwargs)
            for kt, value in zip(nest.flatten(node.outputs), nest.flatten(results)):
                computed[id(kt)] = value
        return nest.map_structure(resolve, self.outputs)


__all__ = ["FunctionalGraph", "Input", "InputLayer"]
