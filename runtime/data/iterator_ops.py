"""Iterators over datasets: ``iter(dataset)`` in Python, and what it becomes inside a Function.

``Iterator`` gives eager tensors in Python. Passed to a Function it is a composite argument of one
``variant`` tensor (the iterator itself), and ``next(iterator)`` in the graph is an ``IteratorGetNext``
op that calls back into Python for one element per call (``_GraphSideIterator``); a ``for`` loop over
it is a graph loop over ``IteratorGetNext`` with an end-of-data flag.
"""
from __future__ import annotations

import threading

from runtime import context, dtypes, errors, nest
from runtime.composite import CompositeValue, TypeSpec
from runtime.data import index_stages, lowering
from runtime.ops.dataset_ops import box
from runtime.ops.registry import apply, convert
from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor

GRAPH_ITERATION = (
    "a dataset cannot be iterated with plain Python inside a traced function (the loop would be unrolled "
    "without end); write the `for` loop or `iter()` call in a function that rt.function converts "
    "(autograph=True, its source available), where it becomes one graph loop")


def spec_key(spec: TensorSpec) -> tuple:
    return (spec.dtype.name, spec.shape.dims)


def leaves_of(structure) -> list:
    """The leaves of an element structure (specs or tensors); a single leaf is a list of one."""
    return nest.flatten(structure) if nest.is_sequence(structure) else [structure]



def element_key(element_spec) -> tuple:
    return (nest.structure_key(element_spec), tuple(spec_key(s) for s in leaves_of(element_spec)))


def describe(element_spec) -> str:
    return repr(element_spec)


class Iterator(CompositeValue):
    """``iter(dataset)`` in Python: ``next()`` gives eager tensors.

    Passed to a Function, it is one ``variant`` input and ``next(iterator)`` in the graph is an
    ``IteratorGetNext`` op that calls back into Python for one element per call.
    """

    def __init__(self, dataset):
        self.element_spec = dataset.element_spec
        self._flat = leaves_of(dataset.element_spec)
        self._elements = dataset._eager({})
        self._user_element = dataset._user_element
        self._lock = threading.Lock()

    def __iter__(self):
        if context.current_graph() is not None:
            raise TypeError(GRAPH_ITERATION)
        return self

    def __next__(self):
        if context.current_graph() is not None:      # a Python-side iterator used while tracing
            return next(_GraphSideIterator(convert(EagerTensor(box(self), dtypes.variant)), self.element_spec))
        flat = self._next_flat()
        if flat is None:
            raise StopIteration
        return self._pack(flat)

    def _rt_next_or_default(self, default):
        if context.current_graph() is None:
            return next(self, default)
        return _GraphSideIterator(convert(EagerTensor(box(self), dtypes.variant)), self.element_spec) \
            ._rt_next_or_default(default)

    # -- inside graph control flow, as its graph side: no state to carry (each ``next()`` is an op)
    def _rt_state_components(self) -> list:
        return []

    def _rt_from_state_components(self, components: list) -> Iterator:
        return self

    def _rt_state_key(self):
        return id(self)

    def get_next(self):
        """The next element; the end of the data is an ``rt.errors.OutOfRangeError``."""
        try:
            return self.__next__()
        except StopIteration:
            raise errors.OutOfRangeError("End of sequence") from None

    def _pack(self, flat):
        return self._user_element([EagerTensor(a, s.dtype) for a, s in zip(flat, self._flat)])

    def _next_flat(self) -> list | None:
        with self._lock:
            return next(self._elements, None)

    def _rt_graph_loop(self):
        if context.current_graph() is None:
            return None
        handle = context.current_graph().internalize(EagerTensor(box(self), dtypes.variant))
        return _GraphSideIterator(handle, self.element_spec)._rt_graph_loop()

    @property
    def _type_spec(self) -> TypeSpec:
        return TypeSpec(("iterator", element_key(self.element_spec)), [TensorSpec((), dtypes.variant)],
                        lambda components: _GraphSideIterator(components[0], self.element_spec),
                        f"IteratorSpec({describe(self.element_spec)})")

    def _components(self) -> list:
        return [EagerTensor(box(self), dtypes.variant)]

    def __repr__(self) -> str:
        return f"<rt.data.Iterator element_spec={describe(self.element_spec)}>"


class _GraphSideIterator:
    """A Python-side iterator inside a graph: each ``next()`` is an ``IteratorGetNext`` op."""

    def __init__(self, handle, element_spec):
        self.handle = handle
        self.element_spec = element_spec
        self._flat = leaves_of(element_spec)

    def _attrs(self, optional: bool) -> dict:
        return {"Tout": tuple(s.dtype for s in self._flat), "output_shapes": tuple(s.shape for s in self._flat),
                "optional": optional}

    def __iter__(self):
        raise TypeError(GRAPH_ITERATION)

    def __next__(self):
        out = apply("IteratorGetNext", [self.handle], self._attrs(False))
        return lowering.pack(self.element_spec, lowering.as_list(out))

    def get_next(self):
        return self.__next__()

    def _rt_next_or_default(self, default):
        out = lowering.as_list(apply("IteratorGetNext", [self.handle], self._attrs(True)))
        flat = lowering.element_or_default(out[0], out[1:], self.element_spec, default)
        return lowering.pack(self.element_spec, flat)

    def _rt_graph_loop(self):
        stage = index_stages.IteratorStage(self._flat, self.handle, self._attrs(True))
        return lowering.DatasetLoop(stage, self.element_spec, continues=True)

    # -- graph control flow carries no state for it: its position lives in the Python iterator, and each
    # ``IteratorGetNext`` (an op in the loop body) moves it at run time
    def _rt_state_components(self) -> list:
        return []

    def _rt_from_state_components(self, components: list) -> _GraphSideIterator:
        return self

    def _rt_state_key(self):
        return id(self)
