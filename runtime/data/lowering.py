"""Datasets in graphs: each pipeline stage as ordinary graph ops over a few state tensors.

A ``Stage`` is one dataset node lowered into the graph being traced. ``init()`` gives its state (a flat
list of tensors, ``state_size()`` long), ``pull(state)`` gives ``(valid, payload, state)``: ``valid`` a
scalar bool, ``payload`` a flat list of tensors from which ``materialize(payload)`` makes the element
(``deferred`` stages), or the element itself. A ``for`` loop (``DatasetLoop``) carries the payload and
materializes the element inside the loop body, where the element is used: an element that is rows of
in-memory data is read there, straight from the data, with no copy into a loop variable. ``next(state)``
gives a materialized element (zeros when ``valid`` is False, so that no op fails on an element that does
not exist).

**Index stages** (``IndexStage``). Over in-memory sources (``from_tensor_slices``, ``from_tensors``,
``range``), the transformations that only choose which elements come next -- ``shuffle``, ``take``,
``skip``, ``repeat``, ``shard``, ``zip``/``enumerate``, ``prefetch``, ``filter`` -- work on int64 *indices*
into the sources; elements are read (``fetch``) only when used. ``batch`` over an index stage takes the next
rows' indices at once (``take``: a range of rows, or a vector) and gathers the rows in one op
(``fetch_rows``): ``from_tensor_slices(x).shuffle(n).batch(64)`` reads ``x[perm[i:i + 64]]`` per batch.
``shuffle`` over a pass of known length (``vectorizable`` stages) permutes the pass's indices once
(``ShuffleIndices``, in C in native code); over anything else it keeps a buffer of ``buffer_size`` slots
(a ring of TensorLists, updated in place in native code) that emits the same order for the same draws.

Values computed once for a pass (a shuffle's permutation) are captured by the loop; under ``repeat`` or
inside ``flat_map`` (``carried`` stages, which start passes inside a loop) they live in the state, as
TensorLists: native code passes those by pointer, where a plain tensor would be copied by every branch.

``batch`` over anything else writes each row into a TensorList (no concatenation per row) and stacks it
when the element is used. The graph's size depends on the pipeline, never on the data, and native code
runs it with no Python callback (only ``from_generator`` calls back, through ``GeneratorNext``).

Every stage returns elements of exactly the element spec's static shapes and a state of exactly
``init``'s shapes, so stages nest inside loops (loop variables keep their shapes).

This module holds what every stage uses (graph helpers, ``Stage``, ``IndexStage``, ``UnaryStage``) and the
loops over a pipeline (``DatasetLoop``, ``GraphIterator``, ``reduce``); ``index_stages.py`` the sources and the
transformations that choose elements (shuffle among them), ``element_stages.py`` those that compute elements.
"""
from __future__ import annotations

from runtime import context, dtypes, nest
from runtime.ops import array_ops, math_ops
from runtime.ops.control_flow_ops import cond, while_loop
from runtime.ops.dataset_ops import RNG_MODULUS, RNG_MULTIPLIER
from runtime.ops.logging_ops import Assert
from runtime.ops.registry import apply, convert, get_opdef
from runtime.shapes import TensorShape, TensorSpec
from runtime.tensor import is_tensor

INT64_MAX = 2**63 - 1

# ---------------------------------------------------------------------------
# Graph helpers.


def int64(value):
    return array_ops.constant(value, dtypes.int64)


def true():
    return array_ops.constant(True)


def false():
    return array_ops.constant(False)


def as_int64(flag):
    return math_ops.cast(flag, dtypes.int64)


def conform(tensor, shape: TensorShape):
    """``tensor`` with exactly the static ``shape`` (an Identity that states it, when they differ)."""
    graph = context.current_graph()
    tensor = graph.internalize(convert(tensor))
    if tensor.shape.dims == shape.dims:
        return tensor
    if not shape.is_compatible_with(tensor.shape):
        raise ValueError(f"dataset element {tensor} does not have the element spec's shape {shape}")
    return graph.create_op(get_opdef("Identity"), [tensor], name="element_shape",
                           output_specs=[(tensor.dtype, shape.dims)]).outputs[0]


def dummy(spec: TensorSpec):
    """The element value when there is none: zeros of the spec (unknown dims are 0)."""
    dims = [] if spec.shape.dims is None else [0 if d is None else d for d in spec.shape.dims]
    return conform(array_ops.zeros(dims, spec.dtype), spec.shape)


def dummies(specs) -> list:
    return [dummy(s) for s in specs]


def conform_all(tensors, specs) -> list:
    return [conform(t, s.shape) for t, s in zip(tensors, specs)]


def batched_shape(shape: TensorShape, size) -> TensorShape:
    return TensorShape(None) if shape.dims is None else TensorShape((size,) + shape.dims)


def as_list(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def branch(pred, true_fn, false_fn) -> list:
    """``rt.cond`` over flat lists of tensors."""
    return as_list(cond(pred, lambda: list(true_fn()), lambda: list(false_fn())))


def loop(test, body, loop_vars: list, shapes: list | None = None) -> list:
    """``rt.while_loop`` over a flat list; ``shapes`` (one per variable, None: its own) relax shapes."""
    return as_list(while_loop(test, body, list(loop_vars), shape_invariants=shapes))


def vector_shape() -> TensorShape:
    return TensorShape([None])


def empty_vector():
    return conform(array_ops.zeros([0], dtypes.int64), vector_shape())


def size_of(tensor):
    """The first dimension of ``tensor`` as an int64 scalar."""
    return math_ops.cast(array_ops.shape(tensor)[0], dtypes.int64)


def clamp_count(want, available):
    """``min(want, available)``, at least 0 (``want`` is never negative)."""
    return math_ops.maximum(math_ops.minimum(want, available), int64(0))


def rng_start(seed):
    """The MINSTD state a seed starts from (``dataset_ops.rng_start``), in the graph."""
    return math_ops.floormod(seed, int64(RNG_MODULUS - 1)) + int64(1)


def rng_next(rng):
    return math_ops.floormod(rng * int64(RNG_MULTIPLIER), int64(RNG_MODULUS))


# TensorLists: tables and buffers that native code updates in place and passes by pointer.

def new_list(dtype, size=None):
    """An empty TensorList of ``dtype`` items: ``size`` slots, or growing as items are written."""
    n = int64(0) if size is None else size
    return apply("TensorListReserve", [math_ops.cast(n, dtypes.int32)],
                 {"element_dtype": dtype, "dynamic_size": size is None})


def list_set(lst, index, item):
    return apply("TensorListSetItem", [lst, index, item])


def list_get(lst, index, spec: TensorSpec):
    return apply("TensorListGetItem", [lst, index],
                 {"element_dtype": spec.dtype, "element_shape": spec.shape, "num_elements": None})


def list_from(tensor):
    return apply("TensorListFromTensor", [tensor], {"dynamic_size": False})


def list_stack(lst, spec: TensorSpec, num_elements=None):
    return apply("TensorListStack", [lst],
                 {"element_dtype": spec.dtype, "element_shape": spec.shape, "num_elements": num_elements})


def index_table(column):
    """A TensorList of the int64 ``column`` and a zero after it (reads clamped to its length never fail)."""
    padded = array_ops.concat([column, array_ops.zeros([1], dtypes.int64)], 0)
    return list_from(padded)


INDEX_SPEC = TensorSpec((), dtypes.int64)


class Rows:
    """The indices of a batch's rows in one index column: ``start`` (rows start, start + 1, ...) or ``vector``."""

    __slots__ = ("start", "vector")

    def __init__(self, start=None, vector=None):
        self.start, self.vector = start, vector

    @property
    def kind(self) -> str:
        return "start" if self.start is not None else "vector"

    def tensor(self):
        return self.start if self.start is not None else self.vector

    @staticmethod
    def of(kind: str, tensor) -> "Rows":
        if kind == "start":
            return Rows(start=tensor)
        return Rows(vector=conform(tensor, vector_shape()))

    def as_vector(self, count):
        if self.vector is not None:
            return self.vector[:count]
        return conform(array_ops.range(self.start, self.start + count, dtype=dtypes.int64), vector_shape())

    def dummy(self):
        return int64(0) if self.start is not None else empty_vector()


# ---------------------------------------------------------------------------
# Stages.

class Stage:
    """One lowered dataset node (see the module docstring). ``specs``: the flat element specs."""

    deferred = False        # the payload is not the element: ``materialize`` makes it
    indexed = False         # an IndexStage: the payload is int64 indices into in-memory sources
    computes = False        # reading an element runs a user function (a pure ``map`` over an index stage)
    # Per-pass values live in the state: the stage starts passes inside a loop (below ``repeat``, inside
    # ``flat_map``). ``Dataset._lower`` sets it before it makes the stages above.
    carried = False

    def __init__(self, specs: list[TensorSpec], inputs=()):
        self.specs = list(specs)
        self.inputs = list(inputs)

    def state_size(self) -> int:
        raise NotImplementedError

    def init(self) -> list:
        raise NotImplementedError

    def reinit(self, state: list) -> list:
        """The state for another pass over the data (``repeat``); a shuffle keeps its generator going."""
        return self.init()

    def pull(self, state: list):
        raise NotImplementedError

    def payload_dummies(self) -> list:
        return dummies(self.specs)

    def payload_size(self) -> int:
        return len(self.specs)

    def materialize(self, payload: list) -> list:
        return list(payload)

    def element(self, payload: list) -> list:
        """The element of a valid payload, with the element spec's shapes."""
        return conform_all(self.materialize(payload) if self.deferred else payload, self.specs)

    def next(self, state: list):
        """``(valid, element, state)``: the element materialized, zeros when there is none."""
        valid, payload, state = self.pull(state)
        if not self.deferred:
            return valid, conform_all(payload, self.specs), state
        element = branch(valid, lambda: self.element(payload), lambda: dummies(self.specs))
        return valid, conform_all(element, self.specs), state

    def split(self, state: list, *sizes: int) -> list[list]:
        """``state`` cut into consecutive parts of ``sizes``; the rest is the last part."""
        parts, start = [], 0
        for size in sizes:
            parts.append(list(state[start:start + size]))
            start += size
        parts.append(list(state[start:]))
        return parts


class IndexStage(Stage):
    """A stage whose payload is ``arity`` int64 indices into in-memory sources (the module docstring).

    ``take(state, k)`` gives the next ``count <= k`` indices as ``Rows`` per column (fewer only at the
    end), ``advance(state, n)`` skips ``n``; ``vectorizable`` stages also give a whole pass's indices
    (``pass_length``, ``pass_indices``) without a state, for a shuffle above them.
    """

    deferred = True
    indexed = True
    vectorizable = False
    arity = 1

    def pull(self, state):
        return self.next_index(state)

    def next_index(self, state):
        raise NotImplementedError

    def payload_dummies(self):
        return [int64(0)] * self.arity

    def payload_size(self):
        return self.arity

    def row_kinds(self) -> list[str]:
        """What ``take`` gives for each index column: ``"start"`` (a range of rows) or ``"vector"``."""
        return ["vector"] * self.arity

    def materialize(self, payload):
        return self.fetch(payload)

    def fetch(self, idx: list) -> list:
        raise NotImplementedError

    def fetch_rows(self, rows: list, count) -> list:
        raise NotImplementedError

    def take(self, state, k):
        """The next ``k`` indices one by one (stages with a faster way override it)."""
        a = self.arity

        def test(count, more, *rest):
            return math_ops.logical_and(more, math_ops.less(count, k))

        def body(count, more, *rest):
            vectors, st = list(rest[:a]), list(rest[a:])
            v, idx, st = self.next_index(st)
            keep = as_int64(v)
            vectors = [array_ops.concat([vec, array_ops.reshape(i, [1])[:keep]], 0) for vec, i in zip(vectors, idx)]
            return [count + keep, v] + vectors + st

        out = loop(test, body, [int64(0), true()] + [empty_vector() for _ in range(a)] + list(state),
                   [None, None] + [vector_shape()] * a + [None] * len(state))
        return out[0], [Rows(vector=v) for v in out[2:2 + a]], out[2 + a:]

    def advance(self, state, n):
        """The state after ``n`` more indices (fewer at the end), pulled one by one unless overridden."""
        def test(pulled, more, *rest):
            return math_ops.logical_and(more, math_ops.less(pulled, n))

        def body(pulled, more, *rest):
            v, _, st = self.next_index(list(rest))
            return [pulled + int64(1), v] + st

        return loop(test, body, [int64(0), true()] + list(state))[2:]

    def pass_length(self):
        raise NotImplementedError

    def pass_indices(self, length) -> list:
        raise NotImplementedError


class UnaryStage(IndexStage):
    """A stage over one input, with its payload (indices when the input is an index stage): an index stage when
    its input is one, an element stage otherwise."""

    def __init__(self, specs, up: Stage):
        super().__init__(specs, [up])
        self.up = up
        self.indexed = up.indexed
        self.deferred = up.deferred
        self.computes = up.computes
        self.arity = getattr(up, "arity", 0)
        self.vectorizable = False

    def payload_dummies(self):
        return self.up.payload_dummies()

    def payload_size(self):
        return self.up.payload_size()

    def materialize(self, payload):
        return self.up.materialize(payload)

    def fetch(self, idx):
        return self.up.fetch(idx)

    def fetch_rows(self, rows, count):
        return self.up.fetch_rows(rows, count)

    def pull(self, state):
        raise NotImplementedError

    def next_index(self, state):
        return self.pull(state)

    def skip(self, state, n):
        """The input's state after ``n`` of its elements (``n`` >= 0)."""
        if self.up.indexed:
            return self.up.advance(state, n)

        def test(pulled, more, *rest):
            return math_ops.logical_and(more, math_ops.less(pulled, n))

        def body(pulled, more, *rest):
            v, _, st = self.up.pull(list(rest))
            return [pulled + int64(1), v] + st

        return loop(test, body, [int64(0), true()] + list(state))[2:]


class SameStateStage(UnaryStage):
    """A stage whose state is its input's (``batch``, ``padded_batch``, ``filter``: they pull what they need)."""

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)


class SameOrderStage(SameStateStage):
    """A stage whose elements come in its input's order, one for one: where a pass is, too, is its input's
    (``prefetch``, ``cache`` in graphs, ``map``)."""

    def pull(self, state):
        return self.up.pull(state)

    def take(self, state, k):
        return self.up.take(state, k)

    def row_kinds(self):
        return self.up.row_kinds()

    def advance(self, state, n):
        return self.up.advance(state, n)

    def pass_length(self):
        return self.up.pass_length()

    def pass_indices(self, length):
        return self.up.pass_indices(length)


# ---------------------------------------------------------------------------
# Loops and iterators over a lowered pipeline.

class DatasetLoop:
    """The graph loop of ``for x in dataset``: loop variables ``[valid, *payload, *state]``; the element is
    materialized from the payload inside the loop body (``element``).

    ``state`` (default: the pipeline's initial state) lets a loop continue an iterator; ``owner`` is that
    iterator, left at the loop's final position (``finish``). A loop over an iterator (``continues``) fetches
    the next element only when the body did not leave the loop (``stop``), so that after a ``break`` the
    iterator is just past the last element the body saw, as in Python.
    """

    def __init__(self, stage: Stage, element_spec, state: list | None = None, user_element=None, owner=None,
                 continues=False):
        self.stage = stage
        self.element_spec = element_spec
        self.state = state
        self.k = None
        self.user_element = user_element or (lambda flat: pack(element_spec, flat))
        self.owner = owner
        self.continues = continues or owner is not None

    def _fetch(self, state) -> list:
        valid, payload, state = self.stage.pull(list(state))
        payload = list(payload)
        if self.k is None:
            self.k = len(payload)
        return [valid] + payload + list(state)

    def initial(self) -> list:
        return self._fetch(self.stage.init() if self.state is None else self.state)

    def valid(self, loop_vars):
        return loop_vars[0]

    def element(self, loop_vars):
        return self.user_element(self.stage.element(list(loop_vars[1:1 + self.k])))

    def advance(self, loop_vars) -> list:
        return self._fetch(loop_vars[1 + self.k:])

    def stop(self, loop_vars) -> list:
        """The loop variables of a loop left by ``break``/``return`` (no element fetched)."""
        return [array_ops.constant(False)] + list(loop_vars[1:])

    def finish(self, loop_vars) -> None:
        if self.owner is not None:
            self.owner.state = list(loop_vars[1 + self.k:])


class GraphIterator:
    """``iter(dataset)`` while tracing: ``next()`` adds the ops for one element to the graph.

    Its position is the pipeline's state tensors: a tensor loop or ``if`` that calls ``next()`` carries them
    (``_rt_state_components``, see ``runtime.operators.control_flow``). Past the end of the data, the element's
    ``Assert`` fails at run time (tf.data raises there too); ``next(it, default)`` gives the default instead.
    """

    def __init__(self, stage: Stage, element_spec, user_element=None, state: list | None = None):
        self.stage = stage
        self.element_spec = element_spec
        self.state = stage.init() if state is None else list(state)
        self.user_element = user_element or (lambda flat: pack(element_spec, flat))

    def __iter__(self):
        raise TypeError("a dataset iterator cannot be looped over with plain Python inside a traced function; "
                        "write the `for` loop in a function that rt.function converts (autograph=True)")

    def __next__(self):
        valid, element, self.state = self.stage.next(self.state)
        Assert(valid, ["End of sequence: the dataset iterator has no more elements"])
        return self.user_element(element)

    def get_next(self):
        return self.__next__()

    def _rt_next_or_default(self, default):
        valid, element, self.state = self.stage.next(self.state)
        return self.user_element(element_or_default(valid, element, self.element_spec, default))

    def _rt_graph_loop(self) -> DatasetLoop:
        return DatasetLoop(self.stage, self.element_spec, self.state, self.user_element, owner=self)

    # -- the position as state of graph control flow
    def _rt_state_components(self) -> list:
        return list(self.state)

    def _rt_from_state_components(self, components: list) -> GraphIterator:
        return GraphIterator(self.stage, self.element_spec, self.user_element, components)

    def _rt_state_key(self):
        return id(self.stage)


def element_or_default(valid, element: list, element_spec, default):
    """``element`` (flat) when ``valid``, else ``default`` (of ``element_spec``'s structure, flattened; a Python
    number takes its component's dtype, a tensor must have it): ``next(iterator, default)``."""
    specs = nest.flatten(element_spec) if nest.is_sequence(element_spec) else [element_spec]
    try:
        if nest.is_sequence(element_spec):
            flat_default = nest.flatten_up_to(element_spec, default)
        elif nest.is_sequence(default):
            raise ValueError("a structure")
        else:
            flat_default = [default]
    except (ValueError, TypeError):
        raise TypeError(f"the default of next() must have the same element structure as the iterator's elements "
                        f"({element_spec!r}); got {default!r}") from None
    values = []
    for value, spec in zip(flat_default, specs):
        tensor = convert(value, dtype=spec.dtype) if not is_tensor(value) else value
        if tensor.dtype is not spec.dtype:
            raise TypeError(f"the default of next() must have the dtype of the iterator's elements: expected "
                            f"{spec.dtype}, got {tensor.dtype} ({value!r})")
        values.append(tensor)
    return as_list(branch(valid, lambda: list(element), lambda: values))


def reduce(stage: Stage, element_spec, initial: list, state_shapes: list, call) -> list:
    """``Dataset.reduce`` while tracing: ``call(state, element) -> state`` over every element, one graph loop."""
    dataset_loop = DatasetLoop(stage, element_spec)
    start = dataset_loop.initial()
    n = len(start)

    def test(*loop_vars):
        return dataset_loop.valid(list(loop_vars[:n]))

    def body(*loop_vars):
        carried = list(loop_vars[n:])
        new = call(carried, dataset_loop.element(list(loop_vars[:n])))
        return dataset_loop.advance(list(loop_vars[:n])) + [conform(t, s) for t, s in zip(new, state_shapes)]

    out = loop(test, body, start + [conform(t, s) for t, s in zip(initial, state_shapes)],
               [None] * n + list(state_shapes))
    return out[n:]


def row_wise(graph, n: int, outputs: list) -> bool:
    """Whether the function ``graph`` (its first ``n`` inputs the element's components, ``outputs`` its results)
    computes each element of its results from the same element of its inputs, so that it gives a batch's results
    run on the batch (tf.data's map vectorization): only elementwise ops, Identity and constants, every op's
    element inputs of one fully known shape that its results keep, its other inputs (constants, captures) of no
    higher rank."""
    element = {id(t) for t in graph.inputs[:n]}
    for op in graph.operations:
        if op.type in ("Placeholder", "Const"):
            continue
        if op.subgraphs() or op.opdef.stateful or not (op.opdef.elementwise or op.type == "Identity"):
            return False
        mine = [t for t in op.inputs if id(t) in element]
        if not mine:
            continue                            # computed from constants: not per element
        dims = mine[0].shape.dims
        if dims is None or None in dims or any(t.shape.dims != dims for t in mine):
            return False
        if any(t.shape.rank is None or t.shape.rank > len(dims) for t in op.inputs if id(t) not in element):
            return False
        if any(t.shape.dims != dims for t in op.outputs):
            return False
        element.update(id(t) for t in op.outputs)
    return bool(outputs) and all(id(t) in element for t in outputs)


def replay(graph, inputs: list, outputs: list) -> list:
    """The ops of ``graph`` (a ``row_wise`` function) again, on ``inputs`` (a batch): in the current graph, or
    eagerly."""
    current = context.current_graph()
    values = {id(p): t for p, t in zip(graph.inputs, inputs)}
    for outer, placeholder in graph.captures:
        values[id(placeholder)] = current.internalize(outer) if current is not None else outer
    for op in graph.operations:
        if op.type == "Placeholder":
            continue
        if op.type == "Const":
            outs = [array_ops.constant(op.attrs["value"].array, op.outputs[0].dtype)]
        else:
            outs = as_list(apply(op.type, [values[id(t)] for t in op.inputs], dict(op.attrs)))
        values.update(zip((id(t) for t in op.outputs), outs))
    return [values[id(t)] for t in outputs]


def pack(element_spec, flat: list):
    """The element structure over flat tensors."""
    if nest.is_sequence(element_spec):
        return nest.pack_sequence_as(element_spec, list(flat))
    return flat[0]
