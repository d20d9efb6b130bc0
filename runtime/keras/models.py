"""Models: ``Model`` (subclass it and define ``call``) and ``Sequential`` (a stack of layers)."""
from __future__ import annotations

from runtime import context
from runtime.graph import Graph
from runtime.keras.layers import Layer
from runtime.shapes import as_shape


class Model(Layer):
    """A layer made of layers: subclass it and define ``call``; ``build(input_shape)`` creates every weight."""

    def build(self, input_shape=None) -> None:
        """Create the weights by running ``call`` once on a symbolic input of ``input_shape`` (None dims allowed)."""
        if input_shape is None:
            raise ValueError(f"{self.name}: build() needs input_shape")
        graph = Graph(f"{self.name}_build")
        with context.graph_scope(graph):
            inputs = graph.add_placeholder("inputs", self.dtype, as_shape(input_shape))
            self.built = True
            self.call(inputs)

    def __call__(self, inputs, *args, **kwargs):
        self.built = True                   # the layers inside build themselves on their first call
        return self.call(self._cast_inputs(inputs), *args, **self._call_kwargs(kwargs))


class Sequential(Model):
    """Layers applied in order: ``Sequential([Dense(8, activation="relu"), Dense(1)])``."""

    def __init__(self, layers=None, name: str | None = None):
        super().__init__(name)
        self.layers: list = []
        for layer in layers or ():
            self.add(layer)

    def add(self, layer: Layer) -> None:
        if not callable(layer):
            raise TypeError(f"Sequential.add: expected a layer, got {layer!r}")
        self.layers.append(layer)

    def call(self, inputs, training=None):
        for layer in self.layers:
            inputs = layer(inputs, training=training)
        return inputs


__all__ = ["Model", "Sequential"]
