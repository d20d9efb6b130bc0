"""The dataset ops: the shuffle's permutation, and the ops that call back into Python.

In-memory pipelines (``from_tensors``, ``from_tensor_slices``, ``range`` and their transformations)
lower to ordinary graph ops (``runtime/data/lowering.py``) and one op of their own:

- ``ShuffleIndices(indices, window, rng) -> (permuted, rng)``: ``shuffle(buffer_size)`` over a pass of
  known length, as a permutation of the pass's indices (a windowed Fisher-Yates shuffle, see
  ``shuffle_positions``); native code runs it in C (``rt_shuffle_indices``).

Only these ops run Python on every element, through the native callback that takes the GIL:

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
from runtime.ops.registry import OpDef, apply, not_differentiable, register
from runtime.ops.script_ops import user_error
from runtime.tensor import EagerTensor, to_array

# MINSTD (Park-Miller): products stay below 2**47, so int64 arithmetic gives the same numbers in numpy, in
# graphs and in C. Every shuffle draws from it, eagerly and in graphs alike.
RNG_MULTIPLIER = 48271
RNG_MODULUS = 2147483647


def rng_start(seed: int) -> int:
    """The generator's first state for a seed (in [1, RNG_MODULUS - 1])."""
    return seed % (RNG_MODULUS - 1) + 1


def shuffle_positions(values: list, window: int, rng: int) -> int:
    """Shuffle ``values`` in place as ``shuffle(window)`` emits them; returns the generator's state after.

    Step ``t`` draws ``j`` in ``[0, min(window, n - t))`` and swaps positions ``t`` and ``t + j``: the
    element emitted ``t``-th is one of the ``window`` not yet emitted among the first ``t + window`` (tf.data's
    buffer semantics, each candidate equally likely); a window of ``n`` or more is a uniform permutation
    (Fisher-Yates). A buffer of ``window`` slots filled from the stream (``data/lowering.py``'s ring) gives
    the same order for the same draws.

    Example:
        >>> v = list(range(6)); shuffle_positions(v, 1, 5) > 0 and v
        [0, 1, 2, 3, 4, 5]
    """
    n = len(values)
    window = max(int(window), 1)
    for t in range(n):
        rng = rng * RNG_MULTIPLIER % RNG_MODULUS
        j = t + rng % (n - t if n - t < window else window)
        values[t], values[j] = values[j], values[t]
    return rng


def shuffle_indices(indices, window, rng):
    """``(permuted indices, generator state after)``: the ``ShuffleIndices`` op (see ``shuffle_positions``)."""
    return tuple(apply("ShuffleIndices", [indices, window, rng]))


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


def _shuffle_infer(specs, attrs):
    indices, window, rng = specs
    if indices.dtype is not dtypes.int64 or indices.shape.rank not in (1, None):
        raise TypeError(f"ShuffleIndices: indices must be an int64 vector, got {indices.dtype} {indices.shape}")
    for what, spec in (("window", window), ("rng", rng)):
        if spec.dtype is not dtypes.int64 or spec.shape.rank not in (0, None):
            raise TypeError(f"ShuffleIndices: {what} must be an int64 scalar, got {spec.dtype} {spec.shape}")
    return [(dtypes.int64, indices.shape.dims), (dtypes.int64, ())]


def _shuffle_kernel(inputs, attrs):
    values = inputs[0].tolist()
    rng = shuffle_positions(values, int(inputs[1]), int(inputs[2]))
    return np.array(values, np.int64).reshape(inputs[0].shape), np.array(rng, np.int64)


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


register(OpDef("ShuffleIndices", "ShuffleIndices", _shuffle_infer, _shuffle_kernel, 3))
register(OpDef("GeneratorInit", "GeneratorInit", lambda specs, attrs: [(dtypes.variant, ())], _generator_init_kernel,
               1, stateful=True, side_effect=True, foldable=False))
register(OpDef("GeneratorNext", "GeneratorNext", _element_infer, _generator_next_kernel, 1, stateful=True,
               side_effect=True, foldable=False))
register(OpDef("IteratorGetNext", "IteratorGetNext", _iterator_infer, _iterator_next_kernel, 1, stateful=True,
               side_effect=True, foldable=False))
# data sources and the order of their indices: no gradient to take
not_differentiable("ShuffleIndices", "GeneratorInit", "GeneratorNext", "IteratorGetNext")
