"""``rt.data.Dataset``: input pipelines (tf.data's API) that run eagerly, in graphs and in native code.

A dataset is a tree of nodes: sources (``from_tensors``, ``from_tensor_slices``, ``range``,
``from_generator``) and transformations (``map``, ``filter``, ``batch``, ``shuffle``, ``take``,
``skip``, ``repeat``, ``prefetch``). Each node holds its own *components* (the tensors it
reads: in-memory data, counts, a seed, the generator as a ``variant``) and its *structure*
(everything else: the functions it applies, batch sizes, the element spec).

- Iterating in Python runs the pipeline node by node on numpy and yields eager tensors.
- Inside ``rt.function`` a ``for`` loop over a dataset is one graph loop: the pipeline
  lowers to graph ops (``runtime/data/lowering.py``) whose size does not depend on the data.
- A dataset passed to a Function is a composite argument: its structure goes into the cache
  key and its components are fed as graph inputs, so one traced graph (and one built native
  function) serves every dataset of the same structure.

``map``/``filter`` functions are converted by AutoGraph and traced like Functions (once for
the element spec when the transformation is created); a tuple element is passed as separate
arguments, as tf.data does.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from runtime import context, dtypes, errors, nest
from runtime.composite import CompositeValue, TypeSpec, function_key
from runtime.data import lowering
from runtime.data.iterator_ops import GRAPH_ITERATION, Iterator, describe, element_key, leaves_of, spec_key
from runtime.graph import Graph
from runtime.ops import math_ops
from runtime.ops.dataset_ops import GeneratorSource, box
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

    def _eager(self, carry: dict):
        """Flat element arrays, one list per element (``carry``: state kept across repeat's passes)."""
        raise NotImplementedError

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    # -- the composite argument -------------------------------------------------------------------------
    def _structure_key(self) -> tuple:
        return (type(self).__name__, self._node_key(), tuple(spec_key(s) for s in self._own_specs()),
                element_key(self.element_spec), tuple(d._structure_key() for d in self._inputs))

    def _component_specs(self) -> list[TensorSpec]:
        return self._own_specs() + [s for d in self._inputs for s in d._component_specs()]

    def _components(self) -> list:
        return self._own_components() + [c for d in self._inputs for c in d._components()]

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

    def _lower(self) -> lowering.Stage:
        return self._stage(self._own_components(), [d._lower() for d in self._inputs])

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
        return lowering.DatasetLoop(self._lower(), self.element_spec)

    def _rt_graph_iter(self):
        """``iter(dataset)`` in converted code while tracing (see ``rt__.iter_``); None when eager."""
        if context.current_graph() is None:
            return None
        return lowering.GraphIterator(self._lower(), self.element_spec)

    def as_numpy_iterator(self):
        """The elements as numpy values."""
        for element in self:
            yield nest.map_structure(lambda t: t.numpy(), element) if nest.is_sequence(element) else element.numpy()

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
        return MapDataset(self, map_func)

    def filter(self, predicate, name=None) -> "Dataset":
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None) -> "Dataset":
        return BatchDataset(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None) -> "Dataset":
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def take(self, count, name=None) -> "Dataset":
        return TakeDataset(self, count)

    def skip(self, count, name=None) -> "Dataset":
        return SkipDataset(self, count)

    def repeat(self, count=None, name=None) -> "Dataset":
        return RepeatDataset(self, -1 if count is None else count)

    def prefetch(self, buffer_size=None, name=None) -> "Dataset":
        return PrefetchDataset(self)

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

    def enumerate(self, start=0, name=None) -> "Dataset":
        """``(index, element)`` pairs, the index an int64 counting from ``start``."""
        return ZipDataset((RangeDataset((start, np.iinfo(np.int64).max), dtypes.int64), self))

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


# ---------------------------------------------------------------------------
# Sources.

class TensorDataset(Dataset):
    """``from_tensors``."""

    def __init__(self, tensors):
        structure = _normalize(tensors, "Dataset.from_tensors")
        self._values = leaves_of(structure)
        self.element_spec = nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), structure) \
            if nest.is_sequence(structure) else TensorSpec(structure.shape, structure.dtype)

    def _own_specs(self):
        return leaves_of(self.element_spec)

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return lowering.TensorsStage(leaves_of(self.element_spec), own)

    def _eager(self, carry):
        yield [v._value for v in self._values]

    def _cardinality(self):
        return 1


class TensorSliceDataset(Dataset):
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
        self.element_spec = nest.map_structure(lambda t: TensorSpec(t.shape[1:], t.dtype), structure) \
            if nest.is_sequence(structure) else TensorSpec(structure.shape[1:], structure.dtype)

    def _own_specs(self):
        return [TensorSpec(TensorShape(None) if s.shape.dims is None else TensorShape((None,) + s.shape.dims),
                           s.dtype) for s in leaves_of(self.element_spec)]

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return lowering.SlicesStage(leaves_of(self.element_spec), own)

    def _eager(self, carry):
        arrays = [v._value for v in self._values]
        for i in range(arrays[0].shape[0]):
            yield [np.array(a[i]) for a in arrays]      # a copy, and a 0-d array rather than a numpy scalar

    def _cardinality(self):
        return self._values[0]._value.shape[0] if isinstance(self._values[0], EagerTensor) else UNKNOWN_CARDINALITY


class RangeDataset(Dataset):
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

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return lowering.RangeStage([self.element_spec], own)

    def _eager(self, carry):
        start, stop, step = (int(v) for v in self._values)
        dtype = self.element_spec.dtype.np
        for v in range(start, stop, step):
            yield [np.array(v, dtype)]

    def _cardinality(self):
        if not self._is_eager():
            return UNKNOWN_CARDINALITY
        return len(range(*(int(v) for v in self._values)))


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
        return lowering.GeneratorStage(leaves_of(self.element_spec), own)

    def _eager(self, carry):
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
# Transformations.

def _call_args(element) -> list:
    return list(element) if isinstance(element, tuple) and not hasattr(element, "_fields") else [element]


class _FunctionNode(Dataset):
    """A transformation with a user function, traced for the input's element spec when it is created."""

    what = "map"

    def __init__(self, input_dataset: Dataset, fn):
        if not callable(fn):
            raise TypeError(f"Dataset.{self.what}: expected a function, got {type(fn).__name__}")
        self._inputs = (input_dataset,)
        self._fn = fn
        self._function = fn if isinstance(fn, Function) else \
            Function(fn, name=getattr(fn, "__name__", self.what).replace("<lambda>", f"{self.what}_fn"))
        in_spec = input_dataset.element_spec
        if context.current_graph() is None:
            self._concrete = self._function.get_concrete_function(*_call_args(in_spec))
            out = self._concrete.structured_outputs
        else:
            self._concrete = None          # created while tracing: traced into a scratch graph
            out = self._trace_in(context.current_graph(), in_spec)
        self._out_spec = self._spec_of_output(out)

    def _trace_in(self, outer: Graph, in_spec):
        scratch = Graph(f"{outer.name}_{self.what}_spec", outer)
        with context.graph_scope(scratch):
            args = [scratch.add_placeholder(f"arg{i}", s.dtype, s.shape) for i, s in enumerate(leaves_of(in_spec))]
            return self._apply(lowering.pack(in_spec, args))

    def _spec_of_output(self, out):
        if out is None:
            raise ValueError(f"the function passed to Dataset.{self.what} returned None; it must return tensors")
        as_spec = lambda t: TensorSpec(t.shape, t.dtype)  # noqa: E731
        return nest.map_structure(as_spec, out) if nest.is_sequence(out) else as_spec(out)

    def _apply(self, element):
        """Call the function on an element while tracing (inlined, converted); tensors out."""
        out = self._function(*_call_args(element))
        if out is None:
            return None
        graph = context.current_graph()
        leaf = lambda v: graph.internalize(convert(v))  # noqa: E731
        return nest.map_structure(leaf, out) if nest.is_sequence(out) else leaf(out)

    def _call_flat(self, in_spec, flat: list) -> list:
        out = self._apply(lowering.pack(in_spec, flat))
        if out is None or nest.structure_key(out) != nest.structure_key(self._out_spec):
            raise ValueError(f"the function passed to Dataset.{self.what} returned {out!r}; it returned "
                             f"{describe(self._out_spec)} when it was first traced")
        flat_out = nest.flatten(out) if nest.is_sequence(out) else [out]
        for t, spec in zip(flat_out, leaves_of(self._out_spec)):
            if t.dtype is not spec.dtype:
                raise TypeError(f"the function passed to Dataset.{self.what} returned a {t.dtype} tensor where it "
                                f"returned {spec.dtype} when it was first traced")
        return flat_out

    def _run_eager(self, flat: list):
        in_spec = self._inputs[0].element_spec
        element = lowering.pack(in_spec, [EagerTensor(a, s.dtype) for a, s in zip(flat, leaves_of(in_spec))])
        out = self._concrete(*_call_args(element))
        return [t._value for t in (nest.flatten(out) if nest.is_sequence(out) else [out])]

    def _node_key(self):
        return (self.what, function_key(self._fn))


class MapDataset(_FunctionNode):
    """``map(fn)``."""

    what = "map"

    def __init__(self, input_dataset, fn):
        super().__init__(input_dataset, fn)
        self.element_spec = self._out_spec

    def _stage(self, own, inputs):
        in_spec = self._inputs[0].element_spec
        return lowering.MapStage(leaves_of(self.element_spec), inputs[0], lambda flat: self._call_flat(in_spec, flat))

    def _eager(self, carry):
        for flat in self._inputs[0]._eager(carry):
            yield self._run_eager(flat)

    def _cardinality(self):
        return self._inputs[0]._cardinality()


class FilterDataset(_FunctionNode):
    """``filter(predicate)``: the predicate must give a scalar bool."""

    what = "filter"

    def __init__(self, input_dataset, predicate):
        super().__init__(input_dataset, predicate)
        spec = self._out_spec
        if not isinstance(spec, TensorSpec) or spec.dtype is not dtypes.bool_ or spec.shape.rank not in (0, None):
            raise ValueError(f"the predicate passed to Dataset.filter must return a scalar bool tensor, got "
                             f"{describe(spec)}")
        self.element_spec = input_dataset.element_spec

    def _stage(self, own, inputs):
        in_spec = self._inputs[0].element_spec
        return lowering.FilterStage(leaves_of(self.element_spec), inputs[0],
                                    lambda flat: lowering.conform(self._call_flat(in_spec, flat)[0], TensorShape(())))

    def _eager(self, carry):
        for flat in self._inputs[0]._eager(carry):
            if bool(self._run_eager(flat)[0]):
                yield flat


class BatchDataset(Dataset):
    """``batch(size, drop_remainder)``: the size is part of the structure (static shapes)."""

    def __init__(self, input_dataset, batch_size, drop_remainder):
        if isinstance(batch_size, EagerTensor):
            batch_size = int(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"Dataset.batch: batch_size must be a positive Python integer, got {batch_size!r}")
        self._inputs = (input_dataset,)
        self._size, self._drop = int(batch_size), bool(drop_remainder)
        size = self._size if self._drop else None
        spec = input_dataset.element_spec
        batched = lambda s: TensorSpec(lowering.batched_shape(s.shape, size), s.dtype)  # noqa: E731
        self.element_spec = nest.map_structure(batched, spec) if nest.is_sequence(spec) else batched(spec)

    def _node_key(self):
        return (self._size, self._drop)

    def _stage(self, own, inputs):
        return lowering.BatchStage(leaves_of(self.element_spec), inputs[0], self._size, self._drop)

    def _eager(self, carry):
        rows = []
        for flat in self._inputs[0]._eager(carry):
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


def _stack(rows: list) -> list:
    out = []
    for parts in zip(*rows):
        shapes = {p.shape for p in parts}
        if len(shapes) > 1:
            raise errors.InvalidArgumentError(f"Dataset.batch: cannot batch elements of different shapes "
                                              f"{sorted(shapes)}")
        out.append(np.stack(parts))
    return out


class ShuffleDataset(Dataset):
    """``shuffle(buffer_size, seed)``: components buffer_size and seed.

    The seed is fresh and random for every pass when none is given. With a seed and
    ``reshuffle_each_iteration=True`` each pass (each Python iteration, each call of a Function that
    takes the dataset) derives its own seed from it -- the orders differ between passes, as in
    tf.data, and repeat in the same sequence when the program runs again; with
    ``reshuffle_each_iteration=False`` every pass uses the seed itself.
    """

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        self._inputs = (input_dataset,)
        size = _count(buffer_size, "Dataset.shuffle buffer_size")
        if _eager_int(size) is not None and _eager_int(size) < 1:
            raise ValueError(f"Dataset.shuffle: buffer_size must be positive, got {int(size)}")
        self._values = [size, None if seed is None else _count(seed, "Dataset.shuffle seed")]
        self._reshuffle = bool(reshuffle_each_iteration)
        self._passes = itertools.count()
        self.element_spec = input_dataset.element_spec

    def _own_specs(self):
        return [_INT64_SCALAR, _INT64_SCALAR]

    def _own_components(self):
        size, seed = self._values
        if seed is None:
            seed = EagerTensor(np.array(np.random.randint(0, 2**31 - 1), np.int64), dtypes.int64)
        elif self._reshuffle and isinstance(seed, EagerTensor):
            derived = (int(seed) + next(self._passes) * PASS_SEED_STRIDE) % (lowering.RNG_MODULUS - 1)
            seed = EagerTensor(np.array(derived, np.int64), dtypes.int64)
        return [size, seed]

    def _node_key(self):
        return (self._reshuffle,)

    def _stage(self, own, inputs):
        return lowering.ShuffleStage(leaves_of(self.element_spec), inputs[0], own[0], own[1], self._reshuffle)

    def _eager(self, carry):
        size, seed = (int(v) for v in self._own_components())
        key = id(self)
        rng = carry[key] if key in carry and self._reshuffle else lowering.rng_start(seed)
        buffer: list = []
        upstream = self._inputs[0]._eager(carry)
        done = False
        while True:
            while len(buffer) < size and not done:
                flat = next(upstream, None)
                if flat is None:
                    done = True
                else:
                    buffer.append(flat)
            if not buffer:
                return
            rng = rng * lowering.RNG_MULTIPLIER % lowering.RNG_MODULUS
            carry[key] = rng
            yield buffer.pop(rng % len(buffer))

    def _cardinality(self):
        return self._inputs[0]._cardinality()


class ZipDataset(Dataset):
    """``Dataset.zip(datasets)``: the inputs' elements in the structure of ``datasets``."""

    def __init__(self, datasets):
        inputs = nest.flatten(datasets)
        if not inputs or not all(isinstance(d, Dataset) for d in inputs):
            raise TypeError(f"Dataset.zip expects a (nested) structure of datasets, got {datasets!r}")
        self._inputs = tuple(inputs)
        self._shape = nest.map_structure(lambda _: None, datasets)
        self.element_spec = nest.pack_sequence_as(datasets, [d.element_spec for d in inputs])

    def _node_key(self):
        return (nest.structure_key(self._shape),)

    def _stage(self, own, inputs):
        return lowering.ZipStage(leaves_of(self.element_spec), inputs)

    def _eager(self, carry):
        upstreams = [d._eager(carry) for d in self._inputs]
        while True:
            row = []
            for upstream in upstreams:
                flat = next(upstream, None)
                if flat is None:
                    return
                row += list(flat)
            yield row

    def _cardinality(self):
        counts = [d._cardinality() for d in self._inputs]
        if UNKNOWN_CARDINALITY in counts:
            return UNKNOWN_CARDINALITY
        finite = [c for c in counts if c != INFINITE_CARDINALITY]
        return min(finite) if finite else INFINITE_CARDINALITY


class _CountNode(Dataset):
    """A transformation with one int64 count component."""

    what = ""

    def __init__(self, input_dataset, count):
        self._inputs = (input_dataset,)
        self._values = [_count(count, f"Dataset.{self.what} count")]
        self.element_spec = input_dataset.element_spec

    def _own_specs(self):
        return [_INT64_SCALAR]

    def _node_key(self):
        return ()

    def _count_value(self) -> int | None:
        return _eager_int(self._values[0])


class TakeDataset(_CountNode):
    """``take(count)`` (all elements for a negative count)."""

    what = "take"

    def _stage(self, own, inputs):
        return lowering.TakeStage(leaves_of(self.element_spec), inputs[0], own[0])

    def _eager(self, carry):
        n = int(self._values[0])
        upstream = self._inputs[0]._eager(carry)
        yield from (upstream if n < 0 else itertools.islice(upstream, n))

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

    def _stage(self, own, inputs):
        return lowering.SkipStage(leaves_of(self.element_spec), inputs[0], own[0])

    def _eager(self, carry):
        n = int(self._values[0])
        upstream = self._inputs[0]._eager(carry)
        if n < 0:
            for _ in upstream:
                pass
            return
        yield from itertools.islice(upstream, n, None)

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

    def _stage(self, own, inputs):
        return lowering.RepeatStage(leaves_of(self.element_spec), inputs[0], own[0])

    def _eager(self, carry):
        n = int(self._values[0])
        for epoch in itertools.count():
            if 0 <= n <= epoch:
                return
            empty = True
            for flat in self._inputs[0]._eager(carry):
                empty = False
                yield flat
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


class PrefetchDataset(Dataset):
    """``prefetch`` (accepted; elements are produced when asked for)."""

    def __init__(self, input_dataset):
        self._inputs = (input_dataset,)
        self.element_spec = input_dataset.element_spec

    def _node_key(self):
        return ()

    def _stage(self, own, inputs):
        return lowering.PassStage(leaves_of(self.element_spec), inputs[0])

    def _eager(self, carry):
        yield from self._inputs[0]._eager(carry)

    def _cardinality(self):
        return self._inputs[0]._cardinality()
