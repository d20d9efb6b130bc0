"""``KerasTensor``: a symbolic value of the functional API (``x = rt.keras.Input((4,)); y = Dense(2)(x)``).

A KerasTensor knows its shape and dtype and which call of which layer made it (its ``Node``); a functional
``Model(inputs, outputs)`` replays those calls on real tensors. It is not an ``rt.Tensor``: it stands for one
while a model is being defined.
"""
from __future__ import annotations

import itertools

from runtime import dtypes, nest
from runtime.shapes import TensorShape, as_shape

_ids = itertools.count()


class KerasTensor:
    """A symbolic tensor of the functional API: ``shape`` (a ``TensorShape``, batch dim usually None), ``dtype``."""

    def __init__(self, shape, dtype=dtypes.float32, name: str | None = None):
        self.shape: TensorShape = as_shape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        if name is None:
            n = next(_ids)
            name = "keras_tensor" if n == 0 else f"keras_tensor_{n}"
        self.name = name
        self._keras_history: tuple | None = None          # (node, index of this output)

    @property
    def ndim(self) -> int | None:
        return self.shape.rank

    @property
    def node(self) -> Node | None:
        return self._keras_history[0] if self._keras_history else None

    def __repr__(self):
        return f"<KerasTensor shape={_shape_text(self.shape)}, dtype={self.dtype}, sparse=False, name={self.name}>"

    __str__ = __repr__

    def __bool__(self):
        raise TypeError("A KerasTensor is symbolic (it stands for the values a functional model will get): it has no "
                        "truth value")

    def numpy(self):
        raise TypeError("A KerasTensor is symbolic: it has no value. Call the model on data instead.")

    def _unsupported(self, *args, **kwargs):
        raise TypeError("Operations on KerasTensors are not supported: wrap the computation in a layer "
                        "(rt.keras.layers.Lambda(fn) or a Layer subclass)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _unsupported
    __matmul__ = __rmatmul__ = __neg__ = __pow__ = __getitem__ = _unsupported


def _shape_text(shape: TensorShape) -> str:
    if shape.rank is None:
        return "<unknown>"
    dims = ", ".join("None" if d is None else str(d) for d in shape.dims)
    return f"({dims},)" if shape.rank == 1 else f"({dims})"


class Node:
    """One call of a layer on KerasTensors: the layer, its arguments (KerasTensors among other values) and
    the KerasTensors it made."""

    def __init__(self, layer, args: tuple, kwargs: dict, outputs):
        self.layer, self.args, self.kwargs, self.outputs = layer, args, kwargs, outputs
        for i, tensor in enumerate(nest.flatten(outputs)):
            tensor._keras_history = (self, i)

    @property
    def input_tensors(self) -> list[KerasTensor]:
        return [t for t in nest.flatten((self.args, self.kwargs)) if isinstance(t, KerasTensor)]

    def __repr__(self):
        return f"<Node {self.layer.name}>"


def any_keras_tensor(structure) -> bool:
    return any(isinstance(t, KerasTensor) for t in nest.flatten(structure))


def shape_text(shape) -> str:
    return _shape_text(as_shape(shape))
