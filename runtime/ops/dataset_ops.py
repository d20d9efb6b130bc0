"""The dataset ops that call back into Python: ``from_generator`` sources and iterator arguments.

In-memory pipelines (``from_tensors``, ``from_tensor_slices``, ``range`` and their transformations)
lower to ordinary graph ops (``runtime/data/lowering.py``); only these ops run Python on every
element, through the native callback that takes the GIL:

- ``GeneratorInit(source) -> handle``: calls the ``from_generator`` function, keeps its iterator;
- ``GeneratorNext(handle) -> (valid, *element)``: the next element, converted and checked against
  the declared dtypes and shapes (``valid`` is False at the end, with zeros as the element);
- ``IteratorGetNext(iterator) -> (valid, *element)`` / ``-> element``: ``next()`` on a Python-side
  dataset iterator passed to a Function (one element per call; without ``optional`` the end of the
  sequence is an ``OutOfRangeError``).

``source``, ``handle`` and ``iterator`` are ``variant`` tensors: 0-d object arrays holding the
Python object.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors, nest
from runtime.ops.registry import OpDef, not_differentiable, register
from runtime.ops.script_ops import user_error
from runtime.tensor import EagerTensor, to_array


def box(value) -> np.ndarray:
    """A Python object as the value of a ``variant`` tensor."""
    array = np.empty((), dtype=object)
    array[()] = value
    return array


def zeros_for(dtype, shape) -> np.ndarray:
    """The placeholder element value (zeros; unknown dims are 0) for a spec's dtype and shape."""
    dims = () if shape.dims is None else tuple(0 if d is None else d for d in shape.dims)
    if dtype is dtypes.string:
        return np.full(dims, b"", dtype=object)
    return np.zeros(dims, dtype.np)


class GeneratorSource:
    """What ``from_generator`` feeds: the user's callable, its arguments and the element's declared type."""

    __slots__ = ("fn", "args", "structure", "dtypes", "shapes", "name")

    def __init__(self, fn, args, structure, flat_dtypes, flat_shapes):
        self.fn = fn
        self.args = tuple(args)
        self.structure = structure
        self.dtypes = tuple(flat_dtypes)
        self.shapes = tuple(flat_shapes)
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def start(self):
        """A fresh iterator over the generator's values."""
        try:
            return iter(self.fn(*self.args))
        except Exception as e:  # noqa: BLE001 - reported to the caller with its traceback
            raise user_error(f"from_generator '{self.name}'", e) from e

    def next_flat(self, iterator) -> list | None:
        """The next element as flat arrays of the declared dtypes, or None at the end."""
        try:
            value = next(iterator)
        except StopIteration:
            return None
        except Exception as e:  # noqa: BLE001 - reported to the caller with its traceback
            raise user_error(f"from_generator '{self.name}'", e) from e
        return self.convert(value)

    def convert(self, value) -> list:
        try:
            leaves = nest.flatten_up_to(self.structure, value) if nest.is_sequence(self.structure) else [value]
        except ValueError:
            raise errors.InvalidArgumentError(
                f"from_generator '{self.name}' yielded {_short(value)}, which does not match the declared "
                f"structure {self.structure!r}") from None
        out = []
        for index, (leaf, dtype, shape) in enumerate(zip(leaves, self.dtypes, self.shapes)):
            try:
                if isinstance(leaf, EagerTensor) and leaf.dtype is not dtype:
                    raise TypeError(f"a {leaf.dtype} tensor")
                array = to_array(leaf.numpy() if isinstance(leaf, EagerTensor) else leaf, dtype)
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(
                    f"from_generator '{self.name}' yielded {_short(leaf)} as component {index}, which is not a "
                    f"{dtype}: {e}") from None
            if not shape.is_compatible_with(array.shape):
                raise errors.InvalidArgumentError(
                    f"from_generator '{self.name}' yielded a value of shape {tuple(array.shape)} as component "
                    f"{index}; its declared shape is {shape}")
            out.append(array)
        return out

    def __repr__(self):
        return f"<generator {self.name}>"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _element_infer(specs, attrs):
    return [(dtypes.bool_, ())] + [(d, s.dims) for d, s in zip(attrs["Tout"], attrs["output_shapes"])]


def _generator_init_kernel(inputs, attrs):
    source = inputs[0][()]
    return (box((source, source.start())),)


def _generator_next_kernel(inputs, attrs):
    source, iterator = inputs[0][()]
    flat = source.next_flat(iterator)
    if flat is None:
        return (np.array(False),) + tuple(zeros_for(d, s) for d, s in zip(attrs["Tout"], attrs["output_shapes"]))
    return (np.array(True),) + tuple(flat)


def _iterator_infer(specs, attrs):
    out = _element_infer(specs, attrs)
    return out if attrs["optional"] else out[1:]


def _iterator_next_kernel(inputs, attrs):
    iterator = inputs[0][()]
    flat = iterator._next_flat()
    if attrs["optional"]:
        if flat is None:
            return (np.array(False),) + tuple(zeros_for(d, s) for d, s in zip(attrs["Tout"], attrs["output_shapes"]))
        return (np.array(True),) + tuple(flat)
    if flat is None:
        raise errors.OutOfRangeError("End of sequence: the dataset iterator has no more elements")
    return tuple(flat)


register(OpDef("GeneratorInit", "GeneratorInit", lambda specs, attrs: [(dtypes.variant, ())], _generator_init_kernel,
               1, stateful=True, side_effect=True, foldable=False))
register(OpDef("GeneratorNext", "GeneratorNext", _element_infer, _generator_next_kernel, 1, stateful=True,
               side_effect=True, foldable=False))
register(OpDef("IteratorGetNext", "IteratorGetNext", _iterator_infer, _iterator_next_kernel, 1, stateful=True,
               side_effect=True, foldable=False))
not_differentiable("GeneratorInit", "GeneratorNext", "IteratorGetNext")   # data sources: no inputs to reach
