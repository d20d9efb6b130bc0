"""``rt.data.Dataset``: input pipelines (tf.data's API) that run eagerly, in graphs and in native code.

A dataset is a tree of nodes: sources (``from_tensors``, ``from_tensor_slices``, ``range``,
``from_generator``) and transformations (``map``, ``filter``, ``batch``, ``shuffle``, ``zip`` ...). Each node
holds its own *components* (the tensors it reads: in-memory data, counts, a seed, the generator as a
``variant``) and its *structure* (everything else: the functions it applies, batch sizes, the element spec).

- Iterating in Python runs the pipeline node by node on numpy and yields eager tensors. Over in-memory
  sources the nodes that only choose elements (shuffle, take, skip, repeat, shard, zip, filter) pass int64
  *indices* along, and ``batch`` reads its rows with one fancy index (``_stream``, ``_fetch_rows``).
- Inside ``rt.function`` a ``for`` loop over a dataset is one graph loop: the pipeline lowers to graph ops
  (``runtime/data/lowering.py``, the same index scheme) whose size does not depend on the data.
- A dataset passed to a Function is a composite argument: its structure goes into the cache key and its
  components are fed as graph inputs, so one traced graph (and one built native function) serves every
  dataset of the same structure.

User functions (``map``, ``filter``, ``flat_map``, ``scan`` ...) are converted by AutoGraph and traced like
Functions (once for the element spec when the transformation is created); a tuple element is passed as
separate arguments, as tf.data does.
"""
from __future__ import annotations

import copy
import itertools
import os

import numpy as np

from runtime import config, context, dtypes, errors, nest
from runtime.composite import CompositeValue, TypeSpec, function_key
from runtime.data import element_stages, index_stages, lowering
from runtime.data.iterator_ops import GRAPH_ITERATION, Iterator, describe, element_key, leaves_of, spec_key
from runtime.graph import Graph, all_operations
from runtime.ops import math_ops
from runtime.ops.dataset_ops import (
    RNG_MODULUS, RNG_MULTIPLIER, GeneratorSource, box, rng_start, shuffle_positions,
)
from runtime.ops.registry import convert
from runtime.polymorphic_function import Function
from runtime.shapes import TensorShape, TensorSpec, as_shape
from runtime.tensor import EagerTensor, Tensor, is_symbolic

INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
AUTOTUNE = -1
PASS_SEED_STRIDE = 1_000_003      # a seeded, reshuffling shuffle's seed for pass k is seed + k * this

_INT64_SCALAR = TensorSpec((), dtypes.int64)


def _normalize(value, where: str):
    """A structure of tensors: tuples and dicts are structure, anything else (lists too) one tensor."""
    if isinstance(value, dict):
        return {k: _normalize(v, where) for k, v in value.items()}
    if isinstance(value, tuple):
        return type(value)(*[_normalize(v, where) for v in value]) if hasattr(value, "_fields") \
            else tuple(_normalize(v, where) for v in value)
    try:
        return convert(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where}: cannot convert {value!r} to a tensor: {e}") from None


def _count(value, what: str):
    """A count argument (take, skip, repeat, shuffle buffer) as an int64 scalar tensor."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer or value.shape.rank not in (0, None):
            raise TypeError(f"{what} must be an integer scalar, got {value}")
        return value if value.dtype is dtypes.int64 else math_ops.cast(value, dtypes.int64)
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return EagerTensor(np.array(int(value), np.int64), dtypes.int64)


def _eager_int(value) -> int | None:
    return int(value) if isinstance(value, EagerTensor) else None


def _static_int(value, what: str) -> int:
    """A Python int argument that fixes the structure (batch size, cycle length)."""
    if isinstance(value, EagerTensor):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a Python integer, got {value!r}")
    return int(value)


def _spec_of(t) -> TensorSpec:
    return TensorSpec(t.shape, t.dtype)


def _map_specs(fn, structure):
    return nest.map_structure(fn, structure) if nest.is_sequence(structure) else fn(structure)


def _eager_tensors(element_spec, flat: list):
    return lowering.pack(element_spec, [EagerTensor(a, s.dtype) for a, s in zip(flat, leaves_of(element_spec))])


def _arrays(out) -> list:
    return [t._value for t in (nest.flatten(out) if nest.is_sequence(out) else [out])]


class DatasetSpec(TensorSpec):
    """The spec of an element that is a dataset (``window``'s): ``element_spec`` is the dataset's. Inside the
    pipeline such an element is its rows, one tensor, and this spec is theirs; user functions, loops and
    Python iteration see ``Dataset.from_tensor_slices(rows)``."""

    def __init__(self, element_spec: TensorSpec, rows: int | None = None):
        super().__init__(lowering.batched_shape(element_spec.shape, rows), element_spec.dtype)
        self.element_spec = element_spec

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r}, TensorShape([]))"


def _has_datasets(element_spec) -> bool:
    return any(isinstance(s, DatasetSpec) for s in leaves_of(element_spec))


class Dataset(CompositeValue):
    """A pipeline of elements: ``rt.data.Dataset.from_tensor_slices(x).map(f).batch(32)``.

    Example:
        >>> import runtime as rt
        >>> [int(x) for x in rt.data.Dataset.range(5).map(lambda x: x * 2).take(3)]
        [0, 2, 4]
    """

    _inputs: tuple = ()
    _values: list = []
    element_spec = None
    _starts_passes = False       # its inputs start passes inside a loop (repeat): carried stages

    # -- what each node defines ----------------------------------------------------------------------
    def _own_specs(self) -> list[TensorSpec]:
        """Specs of this node's own components (the graph inputs it adds)."""
        return []

    def _own_components(self) -> list:
        return list(self._values)

    def _node_key(self) -> tuple:
        raise NotImplementedError

    def _stage(self, own: list, inputs: list) -> lowering.Stage:
        raise NotImplementedError

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    # Python iteration. ``_stream(carry, indices)`` yields this node's elements (flat lists of arrays), or,
    # with ``indices`` (only where ``_indexed``), tuples of ints into its in-memory sources (``_arity`` of
    # them), which ``_fetch``/``_fetch_rows`` turn into an element / a batch. ``carry``: state kept across
    # repeat's passes of one iteration. ``_vectorizable`` nodes also give a pass's indices at once (``_pass``).
    _indexed = False
    _vectorizable = False
    _computes = False         # reading an element runs a user function (a pure map over an index stream)
    _arity = 0

    def _stream(self, carry: dict, indices: bool):
        raise NotImplementedError

    def _fetch(self, idx: tuple) -> list:
        raise NotImplementedError

    def _fetch_rows(self, columns: list) -> list:
        raise NotImplementedError

    def _pass_length(self) -> int:
        raise NotImplementedError

    def _pass(self, length: int) -> list:
        """The first ``length`` indices of a pass, as int64 arrays (one per index column)."""
        raise NotImplementedError

    def _user_element(self, flat: list):
        """The element a user sees for flat tensors: the structure, with datasets where the spec says so."""
        specs = leaves_of(self.element_spec)
        return lowering.pack(self.element_spec, [TensorSliceDataset(t) if isinstance(s, DatasetSpec) else t
                                                 for s, t in zip(specs, flat)])

    def _eager(self, carry: dict):
        """The elements, as flat lists of arrays."""
        if self._indexed:
            fetch = self._fetch
            return (fetch(idx) for idx in self._stream(carry, True))
        return self._stream(carry, False)

    def _items(self, carry: dict, indices: bool):
        """Its indices (with ``indices``) or its elements: what a node choosing among them streams."""
        return self._stream(carry, indices) if indices else self._eager(carry)

    # -- the composite argument -------------------------------------------------------------------------
    def _structure_key(self) -> tuple:
        return (type(self).__name__, self._node_key(), tuple(spec_key(s) for s in self._own_specs()),
                element_key(self.element_spec), tuple(d._structure_key() for d in self._inputs))

    def _component_specs(self) -> list[TensorSpec]:
        return self._own_specs() + [s for d in self._inputs for s in d._component_specs()]

    def _components(self) -> list:
        return self._own_components() + [c for d in self._inputs for c in d._components()]

    def _own_placeholders(self) -> list:
        """Components that make this node valid and empty-ish, for a pipeline nothing has opened yet (what
        ``flat_map`` keeps in a slot before the first element): zeros, unless zero is not a valid value."""
        return [lowering.dummy(s) for s in self._own_specs()]

    def _placeholder_components(self) -> list:
        return self._own_placeholders() + [c for d in self._inputs for c in d._placeholder_components()]

    def _rebuild(self, components: list) -> "Dataset":
        it = iter(components)
        result = self._rebuild_from(it)
        if next(it, None) is not None:
            raise ValueError("dataset rebuilt from too many components")
        return result

    def _rebuild_from(self, it) -> "Dataset":
        own = [next(it) for _ in self._own_specs()]
        inputs = tuple(d._rebuild_from(it) for d in self._inputs)
        new = copy.copy(self)
        new._values = own
        new._inputs = inputs
        return new

    @property
    def _type_spec(self) -> TypeSpec:
        return TypeSpec(("dataset", self._structure_key()), self._component_specs(), self._rebuild,
                        f"DatasetSpec({describe(self.element_spec)})")

    def _lower(self, carried: bool = False) -> lowering.Stage:
        """The pipeline as lowering stages; ``carried``: it starts passes inside a loop (``Stage.carried``)."""
        inputs = [d._lower(carried or self._starts_passes) for d in self._inputs]
        stage = self._stage(self._own_components(), inputs)
        stage.carried = carried
        return stage

    def _is_eager(self) -> bool:
        return not any(is_symbolic(v) for v in self._values) and all(d._is_eager() for d in self._inputs)

    # -- iteration --------------------------------------------------------------------------------------
    def __iter__(self):
        if context.current_graph() is not None:
            raise TypeError(GRAPH_ITERATION)
        if not self._is_eager():
            raise TypeError("this dataset holds tensors of a traced function; iterate it inside that function")
        return Iterator(self)

    def _rt_graph_loop(self):
        """``for x in dataset`` while tracing: one graph loop (see ``rt__.for_stmt``); None when eager."""
        if context.current_graph() is None:
            return None
        return lowering.DatasetLoop(self._lower(), self.element_spec, user_element=self._user_element)

    def _rt_graph_iter(self):
        """``iter(dataset)`` in converted code while tracing (see ``rt__.iter_``); None when eager."""
        if context.current_graph() is None:
            return None
        return lowering.GraphIterator(self._lower(), self.element_spec, self._user_element)

    def as_numpy_iterator(self):
        """The elements as numpy values (the structure kept)."""
        if _has_datasets(self.element_spec):
            raise TypeError("as_numpy_iterator: the elements are datasets (window); iterate them instead")
        for element in self:
            yield _map_specs(lambda t: t.numpy(), element)

    # -- sources ----------------------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors, name=None) -> "Dataset":
        """A dataset of one element: ``tensors`` (a tensor or a tuple/dict structure of tensors)."""
        return TensorDataset(tensors)

    @staticmethod
    def from_tensor_slices(tensors, name=None) -> "Dataset":
        """The rows of ``tensors`` (each component sliced along its first dimension) as elements."""
        return TensorSliceDataset(tensors)

    @staticmethod
    def range(*args, output_type=dtypes.int64, name=None) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])`` as a dataset of ``output_type`` scalars (int64)."""
        return RangeDataset(args, output_type)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None) -> "Dataset":
        """The values of ``generator()`` (a callable returning an iterable), converted to ``output_types``.

        In graphs and native code each element calls back into Python (the generator runs there).
        """
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    # -- transformations --------------------------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None) -> "Dataset":
        """``map_func`` on every element (``num_parallel_calls``/``deterministic`` accepted; it runs in order)."""
        return MapDataset(self, map_func)

    def filter(self, predicate, name=None) -> "Dataset":
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None) -> "Dataset":
        return BatchDataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False,
                     name=None) -> "Dataset":
        """Batches of elements padded to ``padded_shapes`` (a ``None``/-1 dim: the longest in the batch; default:
        every unknown dim) with ``padding_values`` (default 0, ``b""``, False)."""
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def unbatch(self, name=None) -> "Dataset":
        """The rows of every element (the inverse of ``batch``)."""
        return UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None) -> "Dataset":
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def take(self, count, name=None) -> "Dataset":
        return TakeDataset(self, count)

    def skip(self, count, name=None) -> "Dataset":
        return SkipDataset(self, count)

    def repeat(self, count=None, name=None) -> "Dataset":
        return RepeatDataset(self, -1 if count is None else count)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None) -> "Dataset":
        """Windows of ``size`` elements (``stride`` apart), one starting every ``shift`` (default ``size``)
        elements; each window is a dataset (a structure of datasets for structured elements), as in tf.data:
        ``ds.window(3, shift=1).flat_map(lambda w: w.batch(3))`` gives sliding windows."""
        return WindowDataset(self, size, shift, stride, drop_remainder)

    def shard(self, num_shards, index, name=None) -> "Dataset":
        """Every ``num_shards``-th element, starting at ``index``."""
        return ShardDataset(self, num_shards, index)

    def prefetch(self, buffer_size=None, name=None) -> "Dataset":
        """Accepted (``rt.data.AUTOTUNE`` too); elements are produced when they are asked for."""
        return PrefetchDataset(self)

    def cache(self, filename="", name=None) -> "Dataset":
        """The elements of the first complete pass kept and replayed by later passes. Always in memory: a
        ``filename`` is accepted and not written. Python iteration keeps the cache across iterations of this
        dataset, as tf.data does; inside a Function it lasts one call (later passes of ``repeat``)."""
        return CacheDataset(self)

    def concatenate(self, dataset, name=None) -> "Dataset":
        """This dataset's elements, then ``dataset``'s."""
        return ConcatenateDataset(self, dataset)

    def flat_map(self, map_func, name=None) -> "Dataset":
        """The elements of the dataset ``map_func(element)`` returns, for each element in turn."""
        return FlatMapDataset(self, map_func)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None) -> "Dataset":
        """tf.data's deterministic interleave: ``cycle_length`` datasets from ``map_func`` open at once (default:
        the cores available, as tf.data), ``block_length`` (default 1) elements from each in turn."""
        return InterleaveDataset(self, map_func, cycle_length, block_length)

    def take_while(self, predicate, name=None) -> "Dataset":
        """Elements while ``predicate`` holds."""
        return TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None) -> "Dataset":
        """``scan_func(state, element) -> (state, output)`` along the dataset: the outputs."""
        return ScanDataset(self, initial_state, scan_func)

    def reduce(self, initial_state, reduce_func, name=None):
        """``reduce_func(state, element) -> state`` over every element; the final state.

        Inside a Function it is one graph loop; called eagerly, that loop is traced and run once.
        """
        initial = _normalize(initial_state, "Dataset.reduce initial_state")
        if context.current_graph() is not None:
            return _graph_reduce(self, initial, reduce_func)
        if config.functions_run_eagerly():      # the Function below would run its Python eagerly: no graph
            state = initial
            for element in self:
                state = reduce_func(state, element)
            return state
        runner = Function(lambda dataset, state: _graph_reduce(dataset, state, reduce_func), name="reduce",
                          autograph=False)
        return runner(self, initial)

    def apply(self, transformation_func) -> "Dataset":
        """``transformation_func(self)``."""
        return transformation_func(self)

    def enumerate(self, start=0, name=None) -> "Dataset":
        """``(index, element)`` pairs, the index an int64 counting from ``start``."""
        return ZipDataset((RangeDataset((start, np.iinfo(np.int64).max), dtypes.int64), self))

    @staticmethod
    def zip(*args, datasets=None, name=None) -> "Dataset":
        """Elements of several datasets side by side: ``zip((a, b))`` or ``zip(a, b)`` gives ``(x_a, x_b)``.

        A (nested) tuple or dict of datasets gives elements of that structure; it ends with the shortest.
        """
        if datasets is not None and args:
            raise TypeError("Dataset.zip: pass the datasets either positionally or as datasets=, not both")
        if datasets is None:
            if not args:
                raise TypeError("Dataset.zip needs at least one dataset")
            datasets = args[0] if len(args) == 1 else args
        return ZipDataset(datasets)

    def cardinality(self):
        """The number of elements (``INFINITE_CARDINALITY`` = -1, ``UNKNOWN_CARDINALITY`` = -2), an int64."""
        return EagerTensor(np.array(self._cardinality(), np.int64), dtypes.int64)

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={describe(self.element_spec)}>"


def _graph_reduce(dataset: Dataset, initial, reduce_func):
    """``Dataset.reduce`` while tracing: one graph loop whose state is the reduction's."""
    graph = context.current_graph()
    function = reduce_func if isinstance(reduce_func, Function) else Function(reduce_func, name="reduce_fn")
    structure = _map_specs(lambda t: graph.internalize(convert(t)), initial)
    flat = leaves_of(structure)

    def call(state, element):
        out = function(lowering.pack(structure, state), element)
        if out is None or nest.structure_key(out) != nest.structure_key(structure):
            raise ValueError(f"the function passed to Dataset.reduce returned {out!r}; it must return a state of "
                             f"the initial state's structure {describe(_map_specs(_spec_of, structure))}")
        new = [graph_value(t) for t in leaves_of(out)]
        for t, old in zip(new, flat):
            if t.dtype is not old.dtype:
                raise TypeError(f"the function passed to Dataset.reduce returned a {t.dtype} state where the "
                                f"initial state is {old.dtype}")
        return new

    def graph_value(t):
        return context.current_graph().internalize(convert(t))

    shapes = _relaxed_state_shapes(flat, lambda placeholders: call(placeholders, lowering.pack(
        dataset.element_spec, [context.current_graph().add_placeholder(f"element{i}", s.dtype, s.shape)
                               for i, s in enumerate(leaves_of(dataset.element_spec))])))
    out = lowering.reduce(dataset._lower(), dataset.element_spec, flat, shapes, call)
    return lowering.pack(structure, out)


def _relaxed_state_shapes(flat: list, trace_step) -> list[TensorShape]:
    """The shapes a loop state must keep: relaxed (dims that change become None) until one step of
    ``trace_step`` (traced into a scratch graph) keeps them, as tf.data's reduce and scan do."""
    shapes = [t.shape for t in flat]
    outer = context.current_graph()
    for _ in range(4):
        scratch = Graph("state_shapes", outer)
        with context.graph_scope(scratch):
            placeholders = [scratch.add_placeholder(f"state{i}", t.dtype, shape)
                            for i, (t, shape) in enumerate(zip(flat, shapes))]
            new = trace_step(placeholders)
        relaxed = [_common_shape(a, b.shape) for a, b in zip(shapes, new)]
        if all(a.dims == b.dims for a, b in zip(relaxed, shapes)):
            return shapes
        shapes = relaxed
    return shapes


def _common_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both fit (tf's ``most_specific_common_supertype``)."""
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


# ---------------------------------------------------------------------------
# Sources.

class _Source(Dataset):
    """An in-memory source: element ``i`` of ``_size()`` is ``_fetch((i,))``."""

    _indexed = True
    _vectorizable = True
    _arity = 1

    def _size(self) -> int:
        raise NotImplementedError

    def _stream(self, carry, indices):
        if indices:
            return ((i,) for i in range(self._size()))
        return (self._fetch((i,)) for i in range(self._size()))

    def _pass_length(self):
        return self._size()

    def _pass(self, length):
        return [np.arange(length, dtype=np.int64)]

    def _cardinality(self):
        return self._size() if self._is_eager() else UNKNOWN_CARDINALITY


class TensorDataset(_Source):
    """``from_tensors``."""

    def __init__(self, tensors):
        structure = _normalize(tensors, "Dataset.from_tensors")
        self._values = leaves_of(structure)
        self.element_spec = _map_specs(_spec_of, structure)

    def _own_specs(self):
        return leaves_of(self.element_spec)

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.TensorsStage(leaves_of(self.element_spec), own)

    def _size(self):
        return 1

    def _fetch(self, idx):
        return [v._value for v in self._values]

    def _fetch_rows(self, columns):
        return [v._value[None][columns[0]] for v in self._values]

    def _cardinality(self):
        return 1


class TensorSliceDataset(_Source):
    """``from_tensor_slices``: components are fed with their first dimension unknown."""

    def __init__(self, tensors):
        structure = _normalize(tensors, "Dataset.from_tensor_slices")
        flat = leaves_of(structure)
        if not flat:
            raise ValueError("Dataset.from_tensor_slices needs at least one tensor")
        for t in flat:
            if t.shape.rank == 0:
                raise ValueError(f"Dataset.from_tensor_slices: {t} is a scalar; every component needs a first "
                                 "dimension to slice")
        sizes = {t.shape[0] for t in flat if t.shape.rank is not None and t.shape[0] is not None}
        if len(sizes) > 1:
            raise ValueError(f"Dataset.from_tensor_slices: the components have different first dimensions "
                             f"{sorted(sizes)}")
        self._values = flat
        self.element_spec = _map_specs(lambda t: TensorSpec(t.shape[1:], t.dtype), structure)

    def _own_specs(self):
        return [TensorSpec(TensorShape(None) if s.shape.dims is None else TensorShape((None,) + s.shape.dims),
                           s.dtype) for s in leaves_of(self.element_spec)]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.SlicesStage(leaves_of(self.element_spec), own)

    def _size(self):
        return self._values[0]._value.shape[0]

    def _fetch(self, idx):
        return [np.array(v._value[idx[0]]) for v in self._values]   # a copy, and a 0-d array, not a numpy scalar

    def _fetch_rows(self, columns):
        return [v._value[columns[0]] for v in self._values]


class RangeDataset(_Source):
    """``range``: components start, stop, step (int64)."""

    def __init__(self, args, output_type):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 arguments (stop | start, stop[, step]), got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], 1) if len(args) == 2 else args
        self._values = [_count(start, "Dataset.range start"), _count(stop, "Dataset.range stop"),
                        _count(step, "Dataset.range step")]
        if _eager_int(self._values[2]) == 0:
            raise ValueError("Dataset.range: step must not be 0")
        self.element_spec = TensorSpec((), dtypes.as_dtype(output_type))

    def _own_specs(self):
        return [_INT64_SCALAR] * 3

    def _own_placeholders(self):
        return [lowering.int64(0), lowering.int64(0), lowering.int64(1)]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.RangeStage([self.element_spec], own)

    def _bounds(self):
        return tuple(int(v) for v in self._values)

    def _size(self):
        return len(range(*self._bounds()))

    def _fetch(self, idx):
        start, _, step = self._bounds()
        return [np.array(start + idx[0] * step, self.element_spec.dtype.np)]

    def _fetch_rows(self, columns):
        start, _, step = self._bounds()
        return [(start + columns[0] * step).astype(self.element_spec.dtype.np)]


class GeneratorDataset(Dataset):
    """``from_generator``: the component is the generator (a ``variant``), fed on every call."""

    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError(f"Dataset.from_generator: generator must be a callable returning an iterable, got "
                            f"{type(generator).__name__}")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("Dataset.from_generator: give output_signature or output_types/output_shapes, "
                                "not both")
            structure = _tupled(output_signature)
            for spec in leaves_of(structure):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"Dataset.from_generator: output_signature must hold rt.TensorSpecs, got "
                                    f"{spec!r}")
        else:
            if output_types is None:
                raise TypeError("Dataset.from_generator needs output_types (or output_signature)")
            types = _tupled(output_types)
            try:
                shapes = _shapes_like(types, output_shapes)
            except (TypeError, ValueError):
                raise ValueError(f"Dataset.from_generator: output_shapes {output_shapes!r} does not match "
                                 f"output_types {output_types!r}") from None
            specs = [TensorSpec(shape, dtypes.as_dtype(dtype))
                     for shape, dtype in zip(leaves_of(shapes), leaves_of(types))]
            structure = nest.pack_sequence_as(types, specs) if nest.is_sequence(types) else specs[0]
        self.element_spec = structure
        flat = leaves_of(structure)
        self._source = GeneratorSource(generator, args or (), structure, [s.dtype for s in flat],
                                       [s.shape for s in flat])
        self._values = [EagerTensor(box(self._source), dtypes.variant)]

    def _own_specs(self):
        return [TensorSpec((), dtypes.variant)]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.GeneratorStage(leaves_of(self.element_spec), own)

    def _stream(self, carry, indices):
        source = self._values[0]._value[()]
        iterator = source.start()
        while True:
            flat = source.next_flat(iterator)
            if flat is None:
                return
            yield flat


def _tupled(structure):
    """A user's structure of dtypes or specs, with lists read as tuples."""
    if isinstance(structure, dict):
        return {k: _tupled(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return tuple(_tupled(v) for v in structure)
    return structure


def _shapes_like(types, shapes):
    """``output_shapes`` read along the structure of ``output_types`` (a leaf there is one shape here)."""
    if isinstance(types, dict):
        if shapes is not None and (not isinstance(shapes, dict) or set(shapes) != set(types)):
            raise ValueError("structure mismatch")
        return {k: _shapes_like(v, None if shapes is None else shapes[k]) for k, v in types.items()}
    if isinstance(types, tuple):
        if shapes is not None and (not isinstance(shapes, (list, tuple)) or len(shapes) != len(types)):
            raise ValueError("structure mismatch")
        return tuple(_shapes_like(v, None if shapes is None else shapes[i]) for i, v in enumerate(types))
    return as_shape(shapes)


# ---------------------------------------------------------------------------
# Bases of the transformations that forward reads to their input (``_SameOrderNode`` is the eager side of
# lowering's ``SameOrderStage``).

class _ChoosingNode(Dataset):
    """A transformation whose elements are its input's, chosen, reordered or repeated (``filter``, ``take_while``,
    ``take``, ``skip``, ``repeat``, ``shard``, ``shuffle``, ``prefetch``). Over an indexed input it is an index
    stream over the input's, and the input fetches the elements."""

    _gives_passes = False       # it gives a pass's indices at once (``_pass``) where its input does

    def _after_init(self, input_dataset):
        self.element_spec = input_dataset.element_spec
        self._indexed = input_dataset._indexed
        self._computes = input_dataset._computes
        self._arity = input_dataset._arity
        self._vectorizable = self._gives_passes and input_dataset._vectorizable

    def _fetch(self, idx):
        return self._inputs[0]._fetch(idx)

    def _fetch_rows(self, columns):
        return self._inputs[0]._fetch_rows(columns)


class _SameOrderNode(Dataset):
    """A transformation with one element for each of its input's, in its order (``map``, ``prefetch``,
    ``cache``): a pass and the cardinality are its input's."""

    def _pass_length(self):
        return self._inputs[0]._pass_length()

    def _pass(self, length):
        return self._inputs[0]._pass(length)

    def _cardinality(self):
        return self._inputs[0]._cardinality()


# ---------------------------------------------------------------------------
# Transformations with a user function.

def _call_args(element) -> list:
    return list(element) if isinstance(element, tuple) and not hasattr(element, "_fields") else [element]


class _FunctionNode(Dataset):
    """A transformation with a user function, traced for the input's element spec when it is created.

    ``_arguments(element)`` are what the function is called with (a tuple element unpacked), ``_result``
    checks what it returns; ``_out_spec`` is the spec of its result when first traced.
    """

    what = "map"

    def __init__(self, input_dataset: Dataset, fn, extra_specs=None):
        if not callable(fn):
            raise TypeError(f"Dataset.{self.what}: expected a function, got {type(fn).__name__}")
        self._inputs = (input_dataset,)
        self._fn = fn
        self._function = fn if isinstance(fn, Function) else \
            Function(fn, name=getattr(fn, "__name__", self.what).replace("<lambda>", f"{self.what}_fn"))
        self._extra_specs = extra_specs        # a leading state argument (scan), or None
        self._concrete_function = None
        if context.current_graph() is None and self._traces_to_tensors and not _has_datasets(
                input_dataset.element_spec):
            out = self._concrete().structured_outputs        # traced once, as tf.data traces it
            self._traced_graph = self._concrete().graph
            self._traced_outputs = list(self._traced_graph.outputs)
        else:
            out = self._trace_in(context.current_graph())
            self._traced_outputs = [self._traced_graph.internalize(convert(t)) for t in leaves_of(out)] \
                if self._traces_to_tensors and out is not None else []
        self._out_spec = self._spec_of_output(out)
        # pure: no stateful op (random numbers, prints, variables), so when it runs does not matter
        self._pure = not any(op.opdef.stateful for op in all_operations(self._traced_graph))

    _traces_to_tensors = True       # False: the function returns something else (a dataset)

    def _arguments(self, element, extra=None) -> list:
        return ([extra] if self._extra_specs is not None else []) + \
            ([element] if self._extra_specs is not None else _call_args(element))

    def _trace_in(self, outer: Graph | None):
        """The function's result traced on placeholders of the input's element spec, in a scratch graph."""
        scratch = self._traced_graph = Graph(f"{outer.name if outer else 'dataset'}_{self.what}_spec", outer)
        in_spec = self._inputs[0].element_spec
        with context.graph_scope(scratch):
            args = [scratch.add_placeholder(f"arg{i}", s.dtype, s.shape) for i, s in enumerate(leaves_of(in_spec))]
            extra = None
            if self._extra_specs is not None:
                extra = lowering.pack(self._extra_specs, [
                    scratch.add_placeholder(f"state{i}", s.dtype, s.shape)
                    for i, s in enumerate(leaves_of(self._extra_specs))])
            return self._function(*self._arguments(self._inputs[0]._user_element(args), extra))

    def _spec_of_output(self, out):
        if out is None:
            raise ValueError(f"the function passed to Dataset.{self.what} returned None; it must return tensors")
        try:
            return _map_specs(lambda t: _spec_of(convert(t)), out)
        except (TypeError, ValueError) as e:
            raise TypeError(f"the function passed to Dataset.{self.what} returned {out!r}, which is not a "
                            f"structure of tensors: {e}") from None

    def _apply(self, element, extra=None):
        """Call the function on an element while tracing (inlined, converted); tensors out."""
        out = self._function(*self._arguments(element, extra))
        if out is None:
            return None
        graph = context.current_graph()
        return _map_specs(lambda v: graph.internalize(convert(v)), out)

    def _call_flat(self, flat: list, extra=None, out_spec=None) -> list:
        """The function on a flat element, checked against ``out_spec`` (its first trace's); flat tensors out."""
        out_spec = self._out_spec if out_spec is None else out_spec
        out = self._apply(self._inputs[0]._user_element(flat), extra)
        if out is None or nest.structure_key(out) != nest.structure_key(out_spec):
            raise ValueError(f"the function passed to Dataset.{self.what} returned {out!r}; it returned "
                             f"{describe(out_spec)} when it was first traced")
        flat_out = leaves_of(out)
        for t, spec in zip(flat_out, leaves_of(out_spec)):
            if t.dtype is not spec.dtype:
                raise TypeError(f"the function passed to Dataset.{self.what} returned a {t.dtype} tensor where it "
                                f"returned {spec.dtype} when it was first traced")
        return flat_out

    def _concrete(self):
        concrete = self._concrete_function
        if concrete is None:
            in_spec = self._inputs[0].element_spec
            concrete = self._concrete_function = self._function.get_concrete_function(
                *self._arguments(in_spec, self._extra_specs))
        return concrete

    def _run_eager(self, flat: list, extra=None) -> list:
        specs = leaves_of(self._inputs[0].element_spec)
        element = self._inputs[0]._user_element([EagerTensor(a, s.dtype) for a, s in zip(flat, specs)])
        if _has_datasets(self._inputs[0].element_spec):     # datasets are arguments a Function traces by structure
            return _arrays(self._function(*self._arguments(element, extra)))
        return _arrays(self._concrete()(*self._arguments(element, extra)))

    def _node_key(self):
        return (self.what, function_key(self._fn))


class MapDataset(_FunctionNode, _SameOrderNode):
    """``map(fn)``."""

    what = "map"

    def __init__(self, input_dataset, fn):
        super().__init__(input_dataset, fn)
        self.element_spec = self._out_spec
        # a pure function over an index stream keeps the indices (element_stages.MapStage)
        self._indexed = self._computes = input_dataset._indexed and self._pure
        self._vectorizable = self._indexed and input_dataset._vectorizable
        self._arity = input_dataset._arity
        # a batch's rows mapped at once (lowering.row_wise); otherwise one by one
        self._row_wise = self._indexed and lowering.row_wise(
            self._traced_graph, len(leaves_of(input_dataset.element_spec)), self._traced_outputs)

    def _stage(self, own, inputs):
        graph, outputs = self._traced_graph, self._traced_outputs
        rows = (lambda flat: lowering.replay(graph, flat, outputs)) if self._row_wise else None
        return element_stages.MapStage(leaves_of(self.element_spec), inputs[0], lambda flat: self._call_flat(flat),
                                 self._pure, rows)

    def _stream(self, carry, indices):
        if indices:
            return self._inputs[0]._stream(carry, True)
        return (self._run_eager(flat) for flat in self._inputs[0]._eager(carry))

    def _fetch(self, idx):
        return self._run_eager(self._inputs[0]._fetch(idx))

    def _fetch_rows(self, columns):
        if self._row_wise:           # the function's ops once, on the batch (as in graphs)
            rows = self._inputs[0]._fetch_rows(columns)
            specs = leaves_of(self._inputs[0].element_spec)
            return _arrays(lowering.replay(self._traced_graph, [EagerTensor(a, s.dtype) for a, s in zip(rows, specs)],
                                           self._traced_outputs))
        return _stack([self._fetch(idx) for idx in zip(*[c.tolist() for c in columns])])


class _PredicateNode(_FunctionNode, _ChoosingNode):
    """A transformation by a scalar bool predicate: index stream over an index stream."""

    def __init__(self, input_dataset, predicate):
        super().__init__(input_dataset, predicate)
        spec = self._out_spec
        if not isinstance(spec, TensorSpec) or spec.dtype is not dtypes.bool_ or spec.shape.rank not in (0, None):
            raise ValueError(f"the predicate passed to Dataset.{self.what} must return a scalar bool tensor, got "
                             f"{describe(spec)}")
        self.element_spec = input_dataset.element_spec
        self._indexed = input_dataset._indexed and not input_dataset._computes    # else it reads elements twice
        self._arity = input_dataset._arity

    def _predicate(self, flat):
        return lowering.conform(self._call_flat(flat)[0], TensorShape(()))

    def _holds(self, item, indices: bool) -> bool:
        return bool(self._run_eager(self._inputs[0]._fetch(item) if indices else item)[0])


class FilterDataset(_PredicateNode):
    """``filter(predicate)``: the predicate must give a scalar bool."""

    what = "filter"

    def _stage(self, own, inputs):
        return index_stages.FilterStage(leaves_of(self.element_spec), inputs[0], self._predicate)

    def _stream(self, carry, indices):
        return (item for item in self._inputs[0]._stream(carry, indices) if self._holds(item, indices))


class TakeWhileDataset(_PredicateNode):
    """``take_while(predicate)``."""

    what = "take_while"

    def _stage(self, own, inputs):
        return index_stages.TakeWhileStage(leaves_of(self.element_spec), inputs[0], self._predicate)

    def _stream(self, carry, indices):
        return itertools.takewhile(lambda item: self._holds(item, indices), self._inputs[0]._stream(carry, indices))


class ScanDataset(_FunctionNode):
    """``scan(initial_state, fn)``: ``fn(state, element) -> (state, output)``; its state's dims that change
    between steps are relaxed, as tf.data does."""

    what = "scan"

    def __init__(self, input_dataset, initial_state, fn):
        initial = _normalize(initial_state, "Dataset.scan initial_state")
        self._initial_structure = initial
        self._initial = leaves_of(initial)
        state_specs = _map_specs(_spec_of, initial)
        for _ in range(4):              # relax the state's shapes until a step keeps them
            super().__init__(input_dataset, fn, extra_specs=state_specs)
            out = self._out_spec
            if not isinstance(out, tuple) or len(out) != 2 or \
                    nest.structure_key(out[0]) != nest.structure_key(state_specs):
                raise ValueError(f"the function passed to Dataset.scan must return (new_state, output) with the "
                                 f"state's structure {describe(state_specs)}, got {describe(out)}")
            for new, old in zip(leaves_of(out[0]), leaves_of(state_specs)):
                if new.dtype is not old.dtype:
                    raise TypeError(f"the function passed to Dataset.scan returned a {new.dtype} state where the "
                                    f"initial state is {old.dtype}")
            relaxed = lowering.pack(state_specs, [TensorSpec(_common_shape(o.shape, n.shape), o.dtype)
                                                  for o, n in zip(leaves_of(state_specs), leaves_of(out[0]))])
            if all(a.shape.dims == b.shape.dims for a, b in zip(leaves_of(relaxed), leaves_of(state_specs))):
                break
            state_specs = relaxed
        self._state_specs = state_specs
        self.element_spec = self._out_spec[1]
        self._values = list(self._initial)

    def _own_specs(self):
        return [TensorSpec(s.shape, s.dtype) for s in leaves_of(self._state_specs)]

    def _stage(self, own, inputs):
        state_specs = leaves_of(self._state_specs)
        out_spec = self._out_spec

        def call(state, element):
            out = self._call_flat(element, lowering.pack(self._state_specs, state), out_spec)
            return out[:len(state_specs)], out[len(state_specs):]

        return element_stages.ScanStage(leaves_of(self.element_spec), inputs[0], own, state_specs, call)

    def _stream(self, carry, indices):
        state = [t._value for t in self._values]
        n = len(state)
        for flat in self._inputs[0]._eager(carry):
            out = self._run_eager(flat, _eager_tensors(self._state_specs, state))
            state, output = out[:n], out[n:]
            yield output

    def _cardinality(self):
        return self._inputs[0]._cardinality()


class _NestedNode(_FunctionNode):
    """``flat_map``/``interleave``: the function returns a dataset for each element."""

    _traces_to_tensors = False

    def __init__(self, input_dataset, fn):
        super().__init__(input_dataset, fn)
        template = self._template
        self.element_spec = template.element_spec
        if any(s.dtype is dtypes.variant for s in template._component_specs()):
            raise TypeError(f"Dataset.{self.what}: the function returns a dataset that needs Python on every element "
                            f"(from_generator); return an in-memory dataset")

    def _spec_of_output(self, out):
        if not isinstance(out, Dataset):
            raise TypeError(f"the function passed to Dataset.{self.what} must return an rt.data.Dataset, got "
                            f"{type(out).__name__}")
        self._template = out

    def _node_key(self):
        return (self.what, function_key(self._fn), self._template._structure_key())

    def _nested(self) -> element_stages.NestedStage:
        def make(element):
            out = self._function(*self._arguments(self._inputs[0]._user_element(element)))
            if not isinstance(out, Dataset):
                raise TypeError(f"the function passed to Dataset.{self.what} must return an rt.data.Dataset, got "
                                f"{type(out).__name__}")
            return out
        return element_stages.NestedStage(self._template, make)

    def _open(self, flat) -> Dataset:
        """The function's dataset for an element, called eagerly."""
        specs = leaves_of(self._inputs[0].element_spec)
        element = self._inputs[0]._user_element([EagerTensor(a, s.dtype) for a, s in zip(flat, specs)])
        python = getattr(self._fn, "python_function", self._fn)
        out = python(*self._arguments(element))
        if not isinstance(out, Dataset):
            raise TypeError(f"the function passed to Dataset.{self.what} must return an rt.data.Dataset, got "
                            f"{type(out).__name__}")
        return out


class FlatMapDataset(_NestedNode):
    """``flat_map(fn)``."""

    what = "flat_map"

    def _stage(self, own, inputs):
        return element_stages.FlatMapStage(leaves_of(self.element_spec), inputs[0], self._nested())

    def _stream(self, carry, indices):
        for flat in self._inputs[0]._eager(carry):
            yield from self._open(flat)._eager({})


class InterleaveDataset(_NestedNode):
    """``interleave(fn, cycle_length, block_length)``: tf.data's deterministic order."""

    what = "interleave"

    def __init__(self, input_dataset, fn, cycle_length, block_length):
        super().__init__(input_dataset, fn)
        if cycle_length is None or _eager_int(cycle_length) == AUTOTUNE or cycle_length == AUTOTUNE:
            cycle_length = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self._cycle = _static_int(cycle_length, "Dataset.interleave cycle_length")
        if self._cycle < 1:
            raise ValueError(f"Dataset.interleave: cycle_length must be positive, got {self._cycle}")
        self._values = [_count(1 if block_length is None else block_length, "Dataset.interleave block_length")]
        if _eager_int(self._values[0]) is not None and _eager_int(self._values[0]) < 1:
            raise ValueError(f"Dataset.interleave: block_length must be positive, got {int(self._values[0])}")

    def _own_specs(self):
        return [_INT64_SCALAR]

    def _own_placeholders(self):
        return [lowering.int64(1)]

    def _node_key(self):
        return super()._node_key() + (self._cycle,)

    def _stage(self, own, inputs):
        return element_stages.InterleaveStage(leaves_of(self.element_spec), inputs[0], self._nested(), self._cycle,
                                              own[0])

    def _stream(self, carry, indices):
        block = int(self._values[0])
        upstream = self._inputs[0]._eager(carry)
        slots: list = [None] * self._cycle
        index = block_index = num_open = 0
        end = False
        while not end or num_open:
            current = slots[index]
            if current is not None:
                flat = next(current, None)
                if flat is not None:
                    block_index += 1
                    if block_index == block:
                        block_index, index = 0, (index + 1) % self._cycle
                    yield flat
                    continue
                slots[index] = None
                num_open -= 1
                block_index, index = 0, (index + 1) % self._cycle
            elif not end:
                flat = next(upstream, None)
                if flat is None:
                    end = True
                else:
                    slots[index] = self._open(flat)._eager({})
                    num_open += 1
            else:
                block_index, index = 0, (index + 1) % self._cycle


# ---------------------------------------------------------------------------
# Batching.

def _no_datasets(input_dataset, what: str) -> None:
    if _has_datasets(input_dataset.element_spec):
        raise TypeError(f"Dataset.{what}: the elements are datasets (window); flat_map them (e.g. "
                        f"`.flat_map(lambda w: w.batch(n))`) first")


def _stack(rows: list) -> list:
    out = []
    for parts in zip(*rows):
        shapes = {p.shape for p in parts}
        if len(shapes) > 1:
            raise errors.InvalidArgumentError(f"Dataset.batch: cannot batch elements of different shapes "
                                              f"{sorted(shapes)}")
        out.append(np.stack(parts))
    return out


class BatchDataset(Dataset):
    """``batch(size, drop_remainder)``: the size is part of the structure (static shapes)."""

    def __init__(self, input_dataset, batch_size, drop_remainder):
        if isinstance(batch_size, EagerTensor):
            batch_size = int(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"Dataset.batch: batch_size must be a positive Python integer, got {batch_size!r}")
        _no_datasets(input_dataset, "batch")
        self._inputs = (input_dataset,)
        self._size, self._drop = int(batch_size), bool(drop_remainder)
        size = self._size if self._drop else None
        self.element_spec = _map_specs(lambda s: TensorSpec(lowering.batched_shape(s.shape, size), s.dtype),
                                       input_dataset.element_spec)

    def _node_key(self):
        return (self._size, self._drop)

    def _stage(self, own, inputs):
        return element_stages.BatchStage(leaves_of(self.element_spec), inputs[0], self._size, self._drop)

    def _stream(self, carry, indices):
        up = self._inputs[0]
        if up._indexed:
            stream = up._stream(carry, True)
            while True:
                chunk = list(itertools.islice(stream, self._size))
                if not chunk or (self._drop and len(chunk) < self._size):
                    return
                columns = np.array(chunk, dtype=np.int64).reshape(len(chunk), up._arity)
                yield up._fetch_rows([columns[:, j] for j in range(up._arity)])
        rows = []
        for flat in up._eager(carry):
            rows.append(flat)
            if len(rows) == self._size:
                yield _stack(rows)
                rows = []
        if rows and not self._drop:
            yield _stack(rows)

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        if n < 0:
            return n
        return n // self._size if self._drop else -(-n // self._size)


def _padding_value(value, spec: TensorSpec):
    if value is None:
        value = b"" if spec.dtype is dtypes.string else False if spec.dtype is dtypes.bool_ else 0
    t = convert(value, spec.dtype) if not isinstance(value, Tensor) else value
    if t.dtype is not spec.dtype or t.shape.rank not in (0, None):
        raise TypeError(f"Dataset.padded_batch: padding value {value!r} must be a {spec.dtype} scalar")
    return t


class PaddedBatchDataset(Dataset):
    """``padded_batch(size, padded_shapes, padding_values, drop_remainder)``."""

    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        _no_datasets(input_dataset, "padded_batch")
        self._inputs = (input_dataset,)
        self._size = _static_int(batch_size, "Dataset.padded_batch batch_size")
        if self._size < 1:
            raise ValueError(f"Dataset.padded_batch: batch_size must be positive, got {self._size}")
        self._drop = bool(drop_remainder)
        spec = input_dataset.element_spec
        flat = leaves_of(spec)
        for s in flat:
            if s.shape.rank is None:
                raise ValueError("Dataset.padded_batch: every component needs a known rank to pad")
        if padded_shapes is None:
            shapes = [[-1 if d is None else d for d in s.shape.dims] for s in flat]
        else:
            given = _tupled_shapes(padded_shapes, spec)
            shapes = []
            for s, g in zip(flat, given):
                g = as_shape(g)
                if g.rank != s.shape.rank or not all(a is None or b is None or a >= b
                                                     for a, b in zip(g.dims, s.shape.dims)):
                    raise ValueError(f"Dataset.padded_batch: padded shape {g} does not fit elements of shape "
                                     f"{s.shape}")
                shapes.append([-1 if d is None else d for d in g.dims])
        values = leaves_of(padding_values) if padding_values is not None and nest.is_sequence(spec) else \
            [padding_values] * len(flat)
        if len(values) != len(flat):
            raise ValueError("Dataset.padded_batch: padding_values must match the element's structure")
        self._shapes = shapes
        self._pad_values = [_padding_value(v, s) for v, s in zip(values, flat)]
        size = self._size if self._drop else None
        specs = [TensorSpec([size] + [None if d < 0 else d for d in shape], s.dtype) for shape, s in zip(shapes, flat)]
        self.element_spec = lowering.pack(spec, specs)
        self._values = list(self._pad_values)

    def _own_specs(self):
        return [TensorSpec((), s.dtype) for s in leaves_of(self._inputs[0].element_spec)]

    def _node_key(self):
        return (self._size, self._drop, tuple(tuple(s) for s in self._shapes))

    def _stage(self, own, inputs):
        return element_stages.PaddedBatchStage(leaves_of(self.element_spec), inputs[0], self._size, self._drop,
                                         self._shapes, own)

    def _pad(self, rows: list) -> list:
        out = []
        for j, (shape, value) in enumerate(zip(self._shapes, self._values)):
            parts = [row[j] for row in rows]
            longest = np.max([p.shape for p in parts], axis=0) if shape else np.zeros(0, np.int64)
            target = [int(m) if d < 0 else d for d, m in zip(shape, longest)]
            batch = np.full([len(parts)] + target, value._value, dtype=parts[0].dtype)
            for i, p in enumerate(parts):
                if any(a > b for a, b in zip(p.shape, target)):
                    raise errors.InvalidArgumentError(
                        f"Dataset.padded_batch: an element of shape {p.shape} is larger than its padded shape "
                        f"{target}")
                batch[(i,) + tuple(slice(0, n) for n in p.shape)] = p
            out.append(batch)
        return out

    def _stream(self, carry, indices):
        rows = []
        for flat in self._inputs[0]._eager(carry):
            rows.append(flat)
            if len(rows) == self._size:
                yield self._pad(rows)
                rows = []
        if rows and not self._drop:
            yield self._pad(rows)

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        if n < 0:
            return n
        return n // self._size if self._drop else -(-n // self._size)


def _tupled_shapes(padded_shapes, spec) -> list:
    """``padded_shapes`` along the element's structure (a shape is a leaf: a list/tuple of dims or a TensorShape)."""
    if not nest.is_sequence(spec):
        return [padded_shapes]
    if isinstance(spec, dict):
        if not isinstance(padded_shapes, dict) or set(padded_shapes) != set(spec):
            raise ValueError("Dataset.padded_batch: padded_shapes must match the element's structure")
        return [s for k in sorted(spec, key=repr) for s in _tupled_shapes(padded_shapes[k], spec[k])]
    if not isinstance(padded_shapes, (list, tuple)) or len(padded_shapes) != len(spec):
        raise ValueError("Dataset.padded_batch: padded_shapes must match the element's structure")
    return [s for p, sub in zip(padded_shapes, spec) for s in _tupled_shapes(p, sub)]


class UnbatchDataset(Dataset):
    """``unbatch()``: the rows of each element."""

    def __init__(self, input_dataset):
        _no_datasets(input_dataset, "unbatch")
        self._inputs = (input_dataset,)
        for s in leaves_of(input_dataset.element_spec):
            if s.shape.rank == 0:
                raise ValueError("Dataset.unbatch: cannot unbatch an input with scalar components")
            if s.shape.rank is None:
                raise ValueError("Dataset.unbatch: every component needs a known rank")
        self.element_spec = _map_specs(lambda s: TensorSpec(s.shape[1:], s.dtype), input_dataset.element_spec)

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return element_stages.UnbatchStage(leaves_of(self.element_spec), inputs[0])

    def _stream(self, carry, indices):
        for flat in self._inputs[0]._eager(carry):
            rows = {a.shape[0] for a in flat}
            if len(rows) > 1:
                raise errors.InvalidArgumentError(f"Dataset.unbatch: the components have different numbers of rows "
                                                  f"{sorted(rows)}")
            for i in range(flat[0].shape[0]):
                yield [np.array(a[i]) for a in flat]

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        rows = {s.shape.dims[0] for s in leaves_of(self._inputs[0].element_spec)}
        if n >= 0 and len(rows) == 1 and None not in rows:
            return n * rows.pop()
        return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY


class WindowDataset(Dataset):
    """``window(size, shift, stride, drop_remainder)``: elements are datasets (``DatasetSpec``), their rows
    inside the pipeline."""

    def __init__(self, input_dataset, size, shift, stride, drop_remainder):
        _no_datasets(input_dataset, "window")
        self._inputs = (input_dataset,)
        self._size = _static_int(size, "Dataset.window size")
        self._shift = self._size if shift is None else _static_int(shift, "Dataset.window shift")
        self._stride = _static_int(stride, "Dataset.window stride")
        for what, value in (("size", self._size), ("shift", self._shift), ("stride", self._stride)):
            if value < 1:
                raise ValueError(f"Dataset.window: {what} must be positive, got {value}")
        self._drop = bool(drop_remainder)
        rows = self._size if self._drop else None
        self.element_spec = _map_specs(lambda s: DatasetSpec(s, rows), input_dataset.element_spec)

    def _node_key(self):
        return (self._size, self._shift, self._stride, self._drop)

    def _stage(self, own, inputs):
        return element_stages.WindowStage(leaves_of(self.element_spec), inputs[0], self._size, self._shift,
                                          self._stride, self._drop)

    def _stream(self, carry, indices):
        span = (self._size - 1) * self._stride + 1
        buffer: list = []
        first = 0                        # the input position of buffer[0]
        start = 0                        # the next window's first position
        upstream = self._inputs[0]._eager(carry)
        done = False
        specs = leaves_of(self._inputs[0].element_spec)
        while True:
            drop = min(max(start - first, 0), len(buffer))     # what lies before this window's start
            del buffer[:drop]
            first += drop
            while not done and first + len(buffer) < start + span:
                flat = next(upstream, None)
                if flat is None:
                    done = True
                elif first + len(buffer) < start:
                    first += 1           # before the window (a shift past the span): dropped
                else:
                    buffer.append(flat)
            rows = buffer[:span:self._stride]
            if not rows or (self._drop and len(rows) < self._size):
                return
            yield [np.stack([r[j] for r in rows]) if rows else np.zeros((0,) + tuple(s.shape.dims), s.dtype.np)
                   for j, s in enumerate(specs)]
            start += self._shift

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        if n < 0:
            return n
        if self._drop:
            span = (self._size - 1) * self._stride + 1
            return 0 if n < span else (n - span) // self._shift + 1
        return -(-n // self._shift)


# ---------------------------------------------------------------------------
# shuffle.

class ShuffleDataset(_ChoosingNode):
    """``shuffle(buffer_size, seed)``: components buffer_size and seed.

    The seed is fresh and random for every pass when none is given. With a seed and
    ``reshuffle_each_iteration=True`` each pass (each Python iteration, each call of a Function that
    takes the dataset) derives its own seed from it -- the orders differ between passes, as in
    tf.data, and repeat in the same sequence when the program runs again; with
    ``reshuffle_each_iteration=False`` every pass uses the seed itself. Under ``repeat`` the generator
    goes on from one pass to the next (reshuffling) or starts again from the seed.

    Over a pass of known length (in-memory sources, through take/skip/shard/zip) the order is a permutation
    of the pass's indices (``shuffle_positions``); otherwise a buffer of ``buffer_size`` slots filled from the
    stream gives the same order for the same draws.
    """

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        self._inputs = (input_dataset,)
        size = _count(buffer_size, "Dataset.shuffle buffer_size")
        if _eager_int(size) is not None and _eager_int(size) < 1:
            raise ValueError(f"Dataset.shuffle: buffer_size must be positive, got {int(size)}")
        self._values = [size, None if seed is None else _count(seed, "Dataset.shuffle seed")]
        self._reshuffle = bool(reshuffle_each_iteration)
        self._passes = itertools.count()
        self._after_init(input_dataset)

    def _own_specs(self):
        return [_INT64_SCALAR, _INT64_SCALAR]

    def _own_placeholders(self):
        return [lowering.int64(1), lowering.int64(0)]

    def _own_components(self):
        size, seed = self._values
        if seed is None:
            seed = EagerTensor(np.array(np.random.randint(0, 2**31 - 1), np.int64), dtypes.int64)
        elif self._reshuffle and isinstance(seed, EagerTensor):
            derived = (int(seed) + next(self._passes) * PASS_SEED_STRIDE) % (RNG_MODULUS - 1)
            seed = EagerTensor(np.array(derived, np.int64), dtypes.int64)
        return [size, seed]

    def _node_key(self):
        return (self._reshuffle,)

    def _stage(self, own, inputs):
        return index_stages.shuffle_stage(leaves_of(self.element_spec), inputs[0], own[0], own[1], self._reshuffle)

    def _stream(self, carry, indices):
        key = id(self)
        if (key, "seed") not in carry:                  # one seed per iteration (not per pass of repeat)
            carry[(key, "seed")] = tuple(int(v) for v in self._own_components())
        size, seed = carry[(key, "seed")]
        rng = carry[key] if key in carry and self._reshuffle else rng_start(seed)
        up = self._inputs[0]
        if indices and up._vectorizable:
            columns = up._pass(up._pass_length())
            order = columns[0].tolist() if up._arity == 1 else list(range(len(columns[0])))
            carry[key] = shuffle_positions(order, size, rng)
            if up._arity == 1:
                return ((i,) for i in order)
            return zip(*[c[order].tolist() for c in columns])
        return self._ring(carry, key, rng, size, up._stream(carry, indices))

    @staticmethod
    def _ring(carry, key, rng, size, upstream):
        ring: dict = {}
        t = filled = 0
        done = False
        while True:
            while not done and filled - t < size:
                item = next(upstream, None)
                if item is None:
                    done = True
                else:
                    ring[filled % size] = item
                    filled += 1
            count = filled - t
            if count == 0:
                return
            rng = rng * RNG_MULTIPLIER % RNG_MODULUS
            carry[key] = rng
            q, s = (t + rng % count) % size, t % size
            item = ring[q]
            ring[q] = ring[s]
            t += 1
            yield item

    def _cardinality(self):
        return self._inputs[0]._cardinality()


# ---------------------------------------------------------------------------
# Transformations that choose elements.

class ZipDataset(Dataset):
    """``Dataset.zip(datasets)``: the inputs' elements in the structure of ``datasets``."""

    def __init__(self, datasets):
        inputs = nest.flatten(datasets)
        if not inputs or not all(isinstance(d, Dataset) for d in inputs):
            raise TypeError(f"Dataset.zip expects a (nested) structure of datasets, got {datasets!r}")
        self._inputs = tuple(inputs)
        self._shape = nest.map_structure(lambda _: None, datasets)
        self.element_spec = nest.pack_sequence_as(datasets, [d.element_spec for d in inputs])
        self._indexed = all(d._indexed for d in inputs)
        self._computes = any(d._computes for d in inputs)
        self._vectorizable = self._indexed and all(d._vectorizable for d in inputs)
        self._arity = sum(d._arity for d in inputs) if self._indexed else 0

    def _node_key(self):
        return (nest.structure_key(self._shape),)

    def _stage(self, own, inputs):
        return index_stages.ZipStage(leaves_of(self.element_spec), inputs)

    def _split(self, items):
        out, start = [], 0
        for d in self._inputs:
            out.append(items[start:start + d._arity])
            start += d._arity
        return out

    def _fetch(self, idx):
        return [a for d, part in zip(self._inputs, self._split(idx)) for a in d._fetch(tuple(part))]

    def _fetch_rows(self, columns):
        return [a for d, part in zip(self._inputs, self._split(columns)) for a in d._fetch_rows(part)]

    def _pass_length(self):
        return min(d._pass_length() for d in self._inputs)

    def _pass(self, length):
        return [c for d in self._inputs for c in d._pass(length)]

    def _stream(self, carry, indices):
        upstreams = [d._items(carry, indices) for d in self._inputs]
        while True:
            row = []
            for upstream in upstreams:
                item = next(upstream, None)
                if item is None:
                    return
                row += list(item)
            yield tuple(row) if indices else row

    def _cardinality(self):
        counts = [d._cardinality() for d in self._inputs]
        if UNKNOWN_CARDINALITY in counts:
            return UNKNOWN_CARDINALITY
        finite = [c for c in counts if c != INFINITE_CARDINALITY]
        return min(finite) if finite else INFINITE_CARDINALITY


class ConcatenateDataset(Dataset):
    """``a.concatenate(b)``: the element spec is the most specific one both fit; the dtypes must agree."""

    def __init__(self, first, second):
        if not isinstance(second, Dataset):
            raise TypeError(f"Dataset.concatenate expects a dataset, got {type(second).__name__}")
        a, b = first.element_spec, second.element_spec
        if nest.structure_key(a) != nest.structure_key(b):
            raise TypeError(f"Dataset.concatenate: incompatible structures {describe(a)} and {describe(b)}")
        specs = []
        for x, y in zip(leaves_of(a), leaves_of(b)):
            if x.dtype is not y.dtype:
                raise TypeError(f"Dataset.concatenate: incompatible dtypes {x.dtype} and {y.dtype}")
            specs.append(TensorSpec(_common_shape(x.shape, y.shape), x.dtype))
        self._inputs = (first, second)
        self.element_spec = lowering.pack(a, specs)

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return element_stages.ConcatenateStage(leaves_of(self.element_spec), inputs[0], inputs[1])

    def _stream(self, carry, indices):
        yield from self._inputs[0]._eager(carry)
        yield from self._inputs[1]._eager(carry)

    def _cardinality(self):
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b


class _CountNode(_ChoosingNode):
    """A transformation with one int64 count component."""

    what = ""
    _stage_type: type | None = None     # index_stages.TakeStage ...: (specs, input stage, count)

    def __init__(self, input_dataset, count):
        self._inputs = (input_dataset,)
        self._values = [_count(count, f"Dataset.{self.what} count")]
        self._after_init(input_dataset)

    def _own_specs(self):
        return [_INT64_SCALAR]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return self._stage_type(leaves_of(self.element_spec), inputs[0], own[0])

    def _count_value(self) -> int | None:
        return _eager_int(self._values[0])

    def _counted(self) -> int:
        """How many of the input's pass the count covers (all of it for a negative count)."""
        n, m = int(self._values[0]), self._inputs[0]._pass_length()
        return m if n < 0 else min(n, m)


class TakeDataset(_CountNode):
    """``take(count)`` (all elements for a negative count)."""

    what = "take"
    _stage_type = index_stages.TakeStage
    _gives_passes = True

    def _stream(self, carry, indices):
        n = int(self._values[0])
        upstream = self._inputs[0]._items(carry, indices)
        return upstream if n < 0 else itertools.islice(upstream, n)

    def _pass_length(self):
        return self._counted()

    def _pass(self, length):
        return self._inputs[0]._pass(length)

    def _cardinality(self):
        n, c = self._count_value(), self._inputs[0]._cardinality()
        if n is None:
            return UNKNOWN_CARDINALITY
        if n < 0:
            return c
        if c == INFINITE_CARDINALITY:
            return n
        return UNKNOWN_CARDINALITY if c == UNKNOWN_CARDINALITY else min(n, c)


class SkipDataset(_CountNode):
    """``skip(count)`` (every element for a negative count)."""

    what = "skip"
    _stage_type = index_stages.SkipStage
    _gives_passes = True

    def _stream(self, carry, indices):
        n = int(self._values[0])
        upstream = self._inputs[0]._items(carry, indices)
        if n < 0:
            for _ in upstream:
                pass
            return
        yield from itertools.islice(upstream, n, None)

    def _pass_length(self):
        return self._inputs[0]._pass_length() - self._counted()

    def _pass(self, length):
        first = self._counted()
        return [c[first:] for c in self._inputs[0]._pass(first + length)]

    def _cardinality(self):
        n, c = self._count_value(), self._inputs[0]._cardinality()
        if n is None or c == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        if c == INFINITE_CARDINALITY:
            return 0 if n < 0 else c
        return 0 if n < 0 else max(c - n, 0)


class RepeatDataset(_CountNode):
    """``repeat(count)`` (forever for a negative count)."""

    what = "repeat"
    _stage_type = index_stages.RepeatStage
    _starts_passes = True

    def _stream(self, carry, indices):
        n = int(self._values[0])
        for epoch in itertools.count():
            if 0 <= n <= epoch:
                return
            empty = True
            upstream = self._inputs[0]._items(carry, indices)
            for item in upstream:
                empty = False
                yield item
            if empty:
                return

    def _cardinality(self):
        n, c = self._count_value(), self._inputs[0]._cardinality()
        if n is None:
            return UNKNOWN_CARDINALITY
        if n == 0 or c == 0:
            return 0
        if n < 0 or c == INFINITE_CARDINALITY:
            return INFINITE_CARDINALITY if c != UNKNOWN_CARDINALITY else UNKNOWN_CARDINALITY
        return UNKNOWN_CARDINALITY if c == UNKNOWN_CARDINALITY else n * c


class ShardDataset(_ChoosingNode):
    """``shard(num_shards, index)``: components num_shards and index (int64)."""

    _gives_passes = True

    def __init__(self, input_dataset, num_shards, index):
        self._inputs = (input_dataset,)
        self._values = [_count(num_shards, "Dataset.shard num_shards"), _count(index, "Dataset.shard index")]
        num, at = (_eager_int(v) for v in self._values)
        if num is not None and num < 1:
            raise errors.InvalidArgumentError(f"Dataset.shard: num_shards must be positive, got {num}")
        if at is not None and (at < 0 or (num is not None and at >= num)):
            raise errors.InvalidArgumentError(f"Dataset.shard: index must be in [0, num_shards), got {at}")
        self._after_init(input_dataset)

    def _own_specs(self):
        return [_INT64_SCALAR, _INT64_SCALAR]

    def _own_placeholders(self):
        return [lowering.int64(1), lowering.int64(0)]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.ShardStage(leaves_of(self.element_spec), inputs[0], own[0], own[1])

    def _stream(self, carry, indices):
        num, at = (int(v) for v in self._values)
        upstream = self._inputs[0]._items(carry, indices)
        return itertools.islice(upstream, at, None, num)

    def _pass_length(self):
        num, at = (int(v) for v in self._values)
        return max(-(-(self._inputs[0]._pass_length() - at) // num), 0)

    def _pass(self, length):
        num, at = (int(v) for v in self._values)
        return [c[at::num][:length] for c in self._inputs[0]._pass(self._inputs[0]._pass_length())]

    def _cardinality(self):
        c = self._inputs[0]._cardinality()
        num, at = (_eager_int(v) for v in self._values)
        if c == INFINITE_CARDINALITY:
            return c
        if c == UNKNOWN_CARDINALITY or num is None or at is None:
            return UNKNOWN_CARDINALITY
        return c // num + (1 if at < c % num else 0)


class PrefetchDataset(_ChoosingNode, _SameOrderNode):
    """``prefetch`` (accepted; elements are produced when asked for)."""

    _gives_passes = True

    def __init__(self, input_dataset):
        self._inputs = (input_dataset,)
        self._after_init(input_dataset)

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return index_stages.PassStage(leaves_of(self.element_spec), inputs[0])

    def _stream(self, carry, indices):
        return self._inputs[0]._items(carry, indices)


class CacheDataset(_SameOrderNode):
    """``cache()``: in Python, the elements of the first complete iteration, kept on this object."""

    def __init__(self, input_dataset):
        self._inputs = (input_dataset,)
        self.element_spec = input_dataset.element_spec
        self._cached: list | None = None

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return element_stages.CacheStage(leaves_of(self.element_spec), inputs[0])

    def _rebuild_from(self, it):
        new = super()._rebuild_from(it)
        new._cached = None
        return new

    def _stream(self, carry, indices):
        if self._cached is not None:
            yield from self._cached
            return
        elements = []
        for flat in self._inputs[0]._eager(carry):
            elements.append(flat)
            yield flat
        self._cached = elements            # reached only when the pass ran to its end
