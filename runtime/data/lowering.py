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
"""
from __future__ import annotations

from runtime import context, dtypes, nest
from runtime.ops import array_ops, math_ops
from runtime.ops.control_flow_ops import cond, while_loop
from runtime.ops.dataset_ops import RNG_MODULUS, RNG_MULTIPLIER, shuffle_indices
from runtime.ops.logging_ops import Assert
from runtime.ops.registry import apply, convert, get_opdef
from runtime.shapes import TensorShape, TensorSpec

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


class _SourceStage(IndexStage):
    """An in-memory source of ``size()`` elements, its state the index of the next one."""

    vectorizable = True

    def __init__(self, specs, components):
        super().__init__(specs)
        self.components = list(components)

    def size(self):
        raise NotImplementedError

    def state_size(self):
        return 1

    def init(self):
        return [int64(0)]

    def next_index(self, state):
        pos = state[0]
        valid = math_ops.less(pos, self.size())
        return valid, [pos], [pos + as_int64(valid)]

    def take(self, state, k):
        pos = state[0]
        count = clamp_count(k, self.size() - pos)
        return count, [Rows(start=pos)], [pos + count]

    def advance(self, state, n):
        pos = state[0]
        return [pos + clamp_count(n, self.size() - pos)]

    def row_kinds(self):
        return ["start"]

    def pass_length(self):
        return self.size()

    def pass_indices(self, length):
        return [conform(array_ops.range(int64(0), length, dtype=dtypes.int64), vector_shape())]


class TensorsStage(_SourceStage):
    """``from_tensors``: one element, the components themselves."""

    def size(self):
        return int64(1)

    def fetch(self, idx):
        return list(self.components)

    def fetch_rows(self, rows, count):
        (r,) = rows
        stacked = [array_ops.expand_dims(c, 0) for c in self.components]
        if r.start is not None:
            return [s[r.start:r.start + count] for s in stacked]
        return [array_ops.gather(s, r.vector) for s in stacked]


class SlicesStage(_SourceStage):
    """``from_tensor_slices``: element ``i`` is row ``i`` of every component."""

    def size(self):
        return size_of(self.components[0])

    def fetch(self, idx):
        return [array_ops.gather(c, idx[0]) for c in self.components]

    def fetch_rows(self, rows, count):
        (r,) = rows
        if r.start is not None:
            return [c[r.start:r.start + count] for c in self.components]
        return [array_ops.gather(c, r.vector) for c in self.components]


class RangeStage(_SourceStage):
    """``range(start, stop, step)``: element ``k`` is ``start + k * step`` while ``k`` < the count."""

    def __init__(self, specs, components):
        super().__init__(specs, components)
        self.start, self.stop, self.step = components

    def size(self):
        span = math_ops.where(math_ops.greater(self.step, int64(0)), self.stop - self.start, self.start - self.stop)
        step = math_ops.abs(self.step)
        return math_ops.maximum(math_ops.floordiv(span + step - int64(1), step), int64(0))

    def fetch(self, idx):
        return [math_ops.cast(self.start + idx[0] * self.step, self.specs[0].dtype)]

    def fetch_rows(self, rows, count):
        (r,) = rows
        ks = r.as_vector(count)
        return [math_ops.cast(self.start + ks * self.step, self.specs[0].dtype)]


class GeneratorStage(Stage):
    """``from_generator``: ``GeneratorNext`` calls back into Python for each element."""

    def __init__(self, specs, components):
        super().__init__(specs)
        self.source = components[0]

    def state_size(self):
        return 1

    def init(self):
        return [apply("GeneratorInit", [self.source])]

    def pull(self, state):
        out = as_list(apply("GeneratorNext", [state[0]], {"Tout": tuple(s.dtype for s in self.specs),
                                                            "output_shapes": tuple(s.shape for s in self.specs)}))
        return out[0], conform_all(out[1:], self.specs), list(state)


class IteratorStage(Stage):
    """A Python-side iterator passed to a Function: ``IteratorGetNext`` calls back for each element."""

    def __init__(self, specs, handle, attrs: dict):
        super().__init__(specs)
        self.handle, self.attrs = handle, attrs

    def state_size(self):
        return 1

    def init(self):
        return [self.handle]

    def pull(self, state):
        out = as_list(apply("IteratorGetNext", [state[0]], self.attrs))
        return out[0], conform_all(out[1:], self.specs), list(state)


# ---------------------------------------------------------------------------
# Transformations that only choose elements: index stages over index stages, element stages otherwise.

class _Unary(IndexStage):
    """A stage over one input, with its payload (indices when the input is an index stage)."""

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


class PassStage(_Unary):
    """A stage that keeps its input's elements (``prefetch``; ``cache`` in graphs)."""

    def __init__(self, specs, up):
        super().__init__(specs, up)
        self.vectorizable = up.indexed and up.vectorizable

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

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


class TakeStage(_Unary):
    """``take(n)``: at most ``n`` elements (all for ``n < 0``); never pulls past them."""

    def __init__(self, specs, up, count):
        super().__init__(specs, up)
        self.count = count
        self.vectorizable = up.indexed and up.vectorizable

    def _left(self, taken):
        """How many more it may give (INT64_MAX for a negative count)."""
        return math_ops.where(math_ops.less(self.count, int64(0)), int64(INT64_MAX),
                              math_ops.maximum(self.count - taken, int64(0)))

    def state_size(self):
        return 1 + self.up.state_size()

    def init(self):
        return [int64(0)] + self.up.init()

    def reinit(self, state):
        return [int64(0)] + self.up.reinit(state[1:])

    def pull(self, state):
        taken, st = state[0], list(state[1:])
        k = self.payload_size()

        def pull():
            v, payload, st2 = self.up.pull(st)
            return [v] + payload + st2

        out = branch(math_ops.greater(self._left(taken), int64(0)), pull,
                     lambda: [false()] + self.payload_dummies() + st)
        return out[0], out[1:1 + k], [taken + int64(1)] + out[1 + k:]

    def take(self, state, k):
        taken, st = state[0], list(state[1:])
        count, rows, st = self.up.take(st, math_ops.minimum(k, self._left(taken)))
        return count, rows, [taken + count] + st

    def row_kinds(self):
        return self.up.row_kinds()

    def advance(self, state, n):
        taken, st = state[0], list(state[1:])
        n = math_ops.minimum(n, self._left(taken))
        return [taken + n] + self.up.advance(st, n)

    def pass_length(self):
        return math_ops.minimum(self._left(int64(0)), self.up.pass_length())

    def pass_indices(self, length):
        return self.up.pass_indices(length)


class SkipStage(_Unary):
    """``skip(n)``: drops the first ``n`` elements (all for ``n < 0``) on the first pull."""

    def __init__(self, specs, up, count):
        super().__init__(specs, up)
        self.count = count
        self.vectorizable = up.indexed and up.vectorizable

    def _to_skip(self):
        return math_ops.where(math_ops.less(self.count, int64(0)), int64(INT64_MAX), self.count)

    def state_size(self):
        return 1 + self.up.state_size()

    def init(self):
        return [false()] + self.up.init()

    def reinit(self, state):
        return [false()] + self.up.reinit(state[1:])

    def _skipped(self, state):
        skipped, st = state[0], list(state[1:])
        return branch(skipped, lambda: st, lambda: self.skip(st, self._to_skip()))

    def pull(self, state):
        v, payload, st = self.up.pull(self._skipped(state))
        return v, payload, [true()] + st

    def take(self, state, k):
        count, rows, st = self.up.take(self._skipped(state), k)
        return count, rows, [true()] + st

    def row_kinds(self):
        return self.up.row_kinds()

    def advance(self, state, n):
        return [true()] + self.up.advance(self._skipped(state), n)

    def pass_length(self):
        return math_ops.maximum(self.up.pass_length() - self._to_skip(), int64(0))

    def pass_indices(self, length):
        first = math_ops.minimum(self._to_skip(), self.up.pass_length())
        return [c[first:] for c in self.up.pass_indices(first + length)]


class ShardStage(_Unary):
    """``shard(num_shards, index)``: the input's elements ``index``, ``index + num_shards``, ..."""

    def __init__(self, specs, up, num_shards, index):
        super().__init__(specs, up)
        self.num, self.index = num_shards, index
        self.vectorizable = up.indexed and up.vectorizable

    def state_size(self):
        return 1 + self.up.state_size()

    def init(self):
        return [self.index] + self.up.init()

    def reinit(self, state):
        return [self.index] + self.up.reinit(state[1:])

    def pull(self, state):
        st = self.skip(list(state[1:]), state[0])
        v, payload, st = self.up.pull(st)
        return v, payload, [self.num - int64(1)] + st

    def take(self, state, k):
        st = self.skip(list(state[1:]), state[0])
        want = math_ops.where(math_ops.greater(k, int64(0)), (k - int64(1)) * self.num + int64(1), int64(0))
        got, rows, st = self.up.take(st, want)
        count = math_ops.floordiv(got + self.num - int64(1), self.num)
        picked = [Rows(vector=conform(r.as_vector(got)[::self.num], vector_shape())) for r in rows]
        return count, picked, [self.num - int64(1)] + st

    def advance(self, state, n):
        return IndexStage.advance(self, state, n)      # (n - 1) * num_shards may overflow for skip(-1)

    def pass_length(self):
        left = self.up.pass_length() - self.index
        return math_ops.maximum(math_ops.floordiv(left + self.num - int64(1), self.num), int64(0))

    def pass_indices(self, length):
        return [conform(c[self.index::self.num][:length], vector_shape())
                for c in self.up.pass_indices(self.up.pass_length())]


class RepeatStage(_Unary):
    """``repeat(count)``: starts its input again when it ends (forever for ``count < 0``); an input that
    ends without an element right after a restart ends the repetition (as tf.data does)."""

    def __init__(self, specs, up, count):
        super().__init__(specs, up)
        self.count = count
        assert up.carried, "Dataset._lower makes a repeat's input carried"

    def state_size(self):
        return 1 + self.up.state_size()

    def init(self):
        return [int64(0)] + self.up.init()

    def reinit(self, state):
        return [int64(0)] + self.up.reinit(state[1:])

    def _more(self, epoch):
        """Whether another pass may start after pass ``epoch``."""
        return math_ops.logical_or(math_ops.less(self.count, int64(0)), math_ops.less(epoch + int64(1), self.count))

    def pull(self, state):
        k = self.payload_size()

        def body(done, fresh, valid, *rest):
            epoch, st = rest[k], list(rest[k + 1:])
            v, payload, st = self.up.pull(st)
            again = math_ops.logical_and(math_ops.logical_not(v),
                                         math_ops.logical_and(math_ops.logical_not(fresh), self._more(epoch)))
            st = branch(again, lambda: self.up.reinit(st), lambda: st)
            return [math_ops.logical_not(again), again, v] + payload + [epoch + as_int64(again)] + st

        def pull():
            out = loop(lambda done, *rest: math_ops.logical_not(done), body,
                       [false(), false(), false()] + self.payload_dummies() + list(state))
            return out[2:]

        out = branch(math_ops.not_equal(self.count, int64(0)), pull,
                     lambda: [false()] + self.payload_dummies() + list(state))
        return out[0], out[1:1 + k], out[1 + k:]

    def take(self, state, k):
        a = self.arity

        def test(got, finished, *rest):
            return math_ops.logical_and(math_ops.logical_not(finished), math_ops.less(got, k))

        def body(got, finished, fresh, *rest):
            vectors, epoch, st = list(rest[:a]), rest[a], list(rest[a + 1:])
            count, rows, st = self.up.take(st, k - got)
            vectors = [array_ops.concat([vec, r.as_vector(count)], 0) for vec, r in zip(vectors, rows)]
            short = math_ops.less(count, k - got)        # this pass ended
            restart = math_ops.logical_and(short, math_ops.logical_and(
                self._more(epoch), math_ops.logical_not(math_ops.logical_and(fresh, math_ops.equal(count, int64(0))))))
            st = branch(restart, lambda: self.up.reinit(st), lambda: st)
            finished = math_ops.logical_and(short, math_ops.logical_not(restart))
            return [got + count, finished, restart] + vectors + [epoch + as_int64(restart)] + st

        epoch, st = state[0], list(state[1:])
        zero_passes = math_ops.equal(self.count, int64(0))
        out = loop(test, body, [int64(0), zero_passes, false()] + [empty_vector() for _ in range(a)] + [epoch] + st,
                   [None, None, None] + [vector_shape()] * a + [None] * (1 + len(st)))
        return out[0], [Rows(vector=v) for v in out[3:3 + a]], out[3 + a:]

    def advance(self, state, n):
        return IndexStage.advance(self, state, n)


class ZipStage(IndexStage):
    """``Dataset.zip``: one element of every input, concatenated; it ends when any input ends."""

    def __init__(self, specs, ups):
        super().__init__(specs, ups)
        self.ups = list(ups)
        self.indexed = all(up.indexed for up in self.ups)
        self.deferred = any(up.deferred for up in self.ups)
        self.computes = any(up.computes for up in self.ups)
        self.vectorizable = self.indexed and all(up.vectorizable for up in self.ups)
        self.arity = sum(up.arity for up in self.ups) if self.indexed else 0
        self.payload_sizes = [up.payload_size() for up in self.ups]

    def _parts(self, flat: list, sizes: list[int]) -> list[list]:
        return self.split(flat, *sizes)[:-1]

    def state_size(self):
        return sum(up.state_size() for up in self.ups)

    def _states(self, state):
        return self._parts(state, [up.state_size() for up in self.ups])

    def init(self):
        return [t for up in self.ups for t in up.init()]

    def reinit(self, state):
        return [t for up, part in zip(self.ups, self._states(state)) for t in up.reinit(part)]

    def payload_dummies(self):
        return [t for up in self.ups for t in up.payload_dummies()]

    def payload_size(self):
        return sum(self.payload_sizes)

    def row_kinds(self):
        return [kind for up in self.ups for kind in up.row_kinds()]

    def pull(self, state):
        valid, payload, new_state = None, [], []
        for up, part in zip(self.ups, self._states(state)):
            v, p, st = up.pull(part)
            valid = v if valid is None else math_ops.logical_and(valid, v)
            payload += list(p)
            new_state += list(st)
        return valid, payload, new_state

    def next_index(self, state):
        return self.pull(state)

    def materialize(self, payload):
        out = []
        for up, part in zip(self.ups, self._parts(payload, self.payload_sizes)):
            out += up.element(part) if up.deferred else part
        return out

    def fetch(self, idx):
        return self.materialize(idx)

    def fetch_rows(self, rows, count):
        out = []
        for up, part in zip(self.ups, self._parts(rows, self.payload_sizes)):
            out += up.fetch_rows(part, count)
        return out

    def take(self, state, k):
        counts, rows, new_state = [], [], []
        for up, part in zip(self.ups, self._states(state)):
            c, r, st = up.take(part, k)
            counts.append(c)
            rows += r
            new_state += st
        count = counts[0]
        for c in counts[1:]:
            count = math_ops.minimum(count, c)
        return count, rows, new_state

    def advance(self, state, n):
        return [t for up, part in zip(self.ups, self._states(state)) for t in up.advance(part, n)]

    def pass_length(self):
        length = self.ups[0].pass_length()
        for up in self.ups[1:]:
            length = math_ops.minimum(length, up.pass_length())
        return length

    def pass_indices(self, length):
        return [c for up in self.ups for c in up.pass_indices(length)]


class FilterStage(_Unary):
    """``filter(predicate)``: pulls until the predicate holds or the input ends. Over an index stage it
    keeps the indices (the element is read again where it is used); otherwise it keeps the element."""

    def __init__(self, specs, up, predicate):
        super().__init__(specs, up)
        self.predicate = predicate   # flat element tensors -> scalar bool tensor
        self.indexed = self.deferred = up.indexed and not up.computes     # an element is read twice

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

    def payload_dummies(self):
        return self.up.payload_dummies() if self.indexed else dummies(self.specs)

    def payload_size(self):
        return self.up.payload_size() if self.indexed else len(self.specs)

    def pull(self, state):
        k = self.payload_size()
        pull = self.up.pull if self.indexed else self.up.next

        def body(found, valid, *rest):
            v, payload, st = pull(list(rest[k:]))
            element = (lambda: self.up.element(payload)) if self.indexed else (lambda: payload)
            keep = branch(v, lambda: [self.predicate(element())], lambda: [false()])[0]
            return [math_ops.logical_or(keep, math_ops.logical_not(v)), v] + list(payload) + st

        out = loop(lambda found, *rest: math_ops.logical_not(found), body,
                   [false(), false()] + self.payload_dummies() + list(state))
        return out[1], out[2:2 + k], out[2 + k:]


class TakeWhileStage(_Unary):
    """``take_while(predicate)``: elements while the predicate holds, then none."""

    def __init__(self, specs, up, predicate):
        super().__init__(specs, up)
        self.predicate = predicate
        self.indexed = self.deferred = up.indexed and not up.computes

    def state_size(self):
        return 1 + self.up.state_size()

    def init(self):
        return [false()] + self.up.init()

    def reinit(self, state):
        return [false()] + self.up.reinit(state[1:])

    def payload_dummies(self):
        return self.up.payload_dummies() if self.indexed else dummies(self.specs)

    def payload_size(self):
        return self.up.payload_size() if self.indexed else len(self.specs)

    def pull(self, state):
        stopped, st = state[0], list(state[1:])
        k = self.payload_size()
        pull = self.up.pull if self.indexed else self.up.next

        def go():
            v, payload, st2 = pull(st)
            element = (lambda: self.up.element(payload)) if self.indexed else (lambda: payload)
            keep = branch(v, lambda: [self.predicate(element())], lambda: [false()])[0]
            return [keep] + list(payload) + st2

        out = branch(stopped, lambda: [false()] + self.payload_dummies() + st, go)
        return out[0], out[1:1 + k], [math_ops.logical_not(out[0])] + out[1 + k:]


# ---------------------------------------------------------------------------
# shuffle.

def shuffle_stage(specs, up, buffer_size, seed, reshuffle: bool) -> Stage:
    """``shuffle(buffer_size, seed)``: a permutation of each pass when the input's passes have a known length,
    a ring buffer of indices over other index stages, a ring buffer of elements otherwise. The three give the
    same order for the same seed (``dataset_ops.shuffle_positions``)."""
    if up.indexed and up.vectorizable:
        return PermutationShuffle(specs, up, buffer_size, seed, reshuffle)
    return RingShuffle(specs, up, buffer_size, seed, reshuffle)


class _Shuffle(_Unary):
    def __init__(self, specs, up, buffer_size, seed, reshuffle):
        super().__init__(specs, up)
        self.buffer_size, self.seed, self.reshuffle = buffer_size, seed, reshuffle

    def _start(self):
        return rng_start(self.seed)


class PermutationShuffle(_Shuffle):
    """A pass's indices permuted at once (``ShuffleIndices``); its state is the position in the pass (and,
    when carried, the pass's length, the generator and the permuted indices as tables)."""

    def _pass(self, rng):
        """(permuted index columns, their length, the generator after the pass)."""
        length = self.up.pass_length()
        columns = self.up.pass_indices(length)
        if self.arity == 1:
            perm, rng = shuffle_indices(columns[0], self.buffer_size, rng)
            return [conform(perm, vector_shape())], length, rng
        order, rng = shuffle_indices(array_ops.range(int64(0), length, dtype=dtypes.int64), self.buffer_size, rng)
        return [conform(array_ops.gather(c, order), vector_shape()) for c in columns], length, rng

    def state_size(self):
        return 3 + self.arity if self.carried else 1

    def init(self):
        columns, length, rng = self._pass(self._start())
        if not self.carried:
            self.columns, self.length = columns, length
            self.padded = [array_ops.concat([c, array_ops.zeros([1], dtypes.int64)], 0) for c in columns]
            return [int64(0)]
        return [int64(0), length, rng] + [index_table(c) for c in columns]

    def reinit(self, state):
        if not self.carried:
            raise AssertionError("a shuffle outside repeat starts one pass")
        columns, length, rng = self._pass(state[2] if self.reshuffle else self._start())
        return [int64(0), length, rng] + [index_table(c) for c in columns]

    def next_index(self, state):
        pos = state[0]
        if not self.carried:
            valid = math_ops.less(pos, self.length)
            at = math_ops.minimum(pos, self.length)
            return valid, [array_ops.gather(c, at) for c in self.padded], [pos + as_int64(valid)]
        length, rng, tables = state[1], state[2], list(state[3:])
        valid = math_ops.less(pos, length)
        at = math_ops.minimum(pos, length)
        return valid, [list_get(t, at, INDEX_SPEC) for t in tables], [pos + as_int64(valid), length, rng] + tables

    def pull(self, state):
        return self.next_index(state)

    def take(self, state, k):
        if self.carried:
            return IndexStage.take(self, state, k)
        pos = state[0]
        count = clamp_count(k, self.length - pos)
        return count, [Rows(vector=conform(c[pos:pos + count], vector_shape())) for c in self.columns], [pos + count]

    def advance(self, state, n):
        pos = state[0]
        length = state[1] if self.carried else self.length
        return [pos + clamp_count(n, length - pos)] + list(state[1:])


class RingShuffle(_Shuffle):
    """A buffer of ``buffer_size`` slots (TensorLists, one per payload tensor) filled from the input: step ``t``
    draws one of the slots of elements ``t .. t + buffer_size - 1`` not yet emitted, emits it and moves the
    element at ``t`` into its slot -- ``ShuffleIndices``' swaps, on a ring. Over an index stage the slots hold
    indices, otherwise elements."""

    def __init__(self, specs, up, buffer_size, seed, reshuffle):
        super().__init__(specs, up, buffer_size, seed, reshuffle)
        self.items = [INDEX_SPEC] * self.arity if up.indexed else list(up.specs)
        self.deferred = up.indexed
        self.k = len(self.items)

    def payload_dummies(self):
        return self.up.payload_dummies() if self.indexed else dummies(self.specs)

    def payload_size(self):
        return self.k

    def state_size(self):
        return 4 + self.k + self.up.state_size()

    def _empty(self, rng, upstream_state):
        rings = [new_list(s.dtype) for s in self.items]
        return [int64(0), int64(0), rng, false()] + rings + list(upstream_state)

    def init(self):
        return self._empty(self._start(), self.up.init())

    def reinit(self, state):
        rng = state[2] if self.reshuffle else self._start()
        return self._empty(rng, self.up.reinit(state[4 + self.k:]))

    def pull(self, state):
        k = self.k
        t, filled, rng, done = state[:4]
        rings, st = list(state[4:4 + k]), list(state[4 + k:])
        size = self.buffer_size
        pull = self.up.pull if self.indexed else self.up.next

        def test(filled, done, *rest):
            return math_ops.logical_and(math_ops.logical_not(done), math_ops.less(filled - t, size))

        def body(filled, done, *rest):
            rings, st = list(rest[:k]), list(rest[k:])
            v, item, st = pull(st)
            slot = math_ops.floormod(filled, size)
            rings = branch(v, lambda: [list_set(r, slot, x) for r, x in zip(rings, item)], lambda: rings)
            return [filled + as_int64(v), math_ops.logical_not(v)] + rings + st

        out = loop(test, body, [filled, done] + rings + st)
        filled, done, rings, st = out[0], out[1], out[2:2 + k], out[2 + k:]
        count = filled - t
        valid = math_ops.greater(count, int64(0))

        def draw():
            new_rng = rng_next(rng)
            q = math_ops.floormod(t + math_ops.floormod(new_rng, count), size)
            s = math_ops.floormod(t, size)
            item = [list_get(r, q, spec) for r, spec in zip(rings, self.items)]
            moved = [list_set(r, q, list_get(r, s, spec)) for r, spec in zip(rings, self.items)]
            return [new_rng] + item + moved

        out = branch(valid, draw, lambda: [rng] + self.payload_dummies() + rings)
        payload = conform_all(out[1:1 + k], self.items)
        return valid, payload, [t + as_int64(valid), filled, out[0], done] + out[1 + k:] + st

    def next_index(self, state):
        return self.pull(state)

    def take(self, state, k):
        return IndexStage.take(self, state, k)

    def advance(self, state, n):
        return IndexStage.advance(self, state, n)


# ---------------------------------------------------------------------------
# Transformations that compute elements.

class MapStage(_Unary):
    """``map(fn)``: the function runs where the element is used (inside the loop body, or inside a branch that
    runs only for a valid element). A pure function (no stateful op) over an index stage keeps the indices:
    a shuffle or batch above it permutes and gathers indices, and the function runs on each element read
    (``fetch``; a batch's rows one by one into TensorLists, ``fetch_rows``)."""

    def __init__(self, specs, up, call, pure: bool, call_rows=None):
        super().__init__(specs, up)
        self.call = call            # flat input tensors -> flat output tensors
        self.call_rows = call_rows  # the same on a batch of elements (a row-wise function), or None
        self.indexed = up.indexed and pure
        self.vectorizable = self.indexed and up.vectorizable
        self.computes = self.indexed
        self.deferred = True

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

    def pull(self, state):
        return self.up.pull(state)

    def materialize(self, payload):
        return self.call(self.up.element(payload))

    def fetch(self, idx):
        return self.call(conform_all(self.up.fetch(idx), self.up.specs))

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

    def fetch_rows(self, rows, count):
        if self.call_rows is not None:
            return self.call_rows(self.up.fetch_rows(rows, count))
        lists = [new_list(s.dtype, count) for s in self.specs]

        def body(i, *lists):
            idx = [r.start + i if r.start is not None else array_ops.gather(r.vector, i) for r in rows]
            element = conform_all(self.fetch(idx), self.specs)
            return [i + int64(1)] + [list_set(lst, i, e) for lst, e in zip(lists, element)]

        out = loop(lambda i, *rest: math_ops.less(i, count), body, [int64(0)] + lists)
        return [list_stack(lst, s) for lst, s in zip(out[1:], self.specs)]


class BatchStage(_Unary):
    """``batch(size, drop_remainder)``. Over an index stage the payload is the rows' indices and the element
    one gather (or slice) of each component; otherwise rows are written into TensorLists as they come and
    stacked where the element is used."""

    def __init__(self, specs, up, size: int, drop_remainder: bool):
        super().__init__(specs, up)
        self.size, self.drop = size, drop_remainder
        self.rows_of_indices = up.indexed
        self.indexed = False
        self.deferred = True
        self.kinds = up.row_kinds() if up.indexed else None

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

    def payload_dummies(self):
        if self.rows_of_indices:
            return [int64(0)] + [int64(0) if kind == "start" else empty_vector() for kind in self.kinds]
        return [int64(0)] + [new_list(s.dtype, int64(self.size)) for s in self.up.specs]

    def payload_size(self):
        return 1 + (len(self.kinds) if self.rows_of_indices else len(self.up.specs))

    def _valid(self, count):
        if self.drop:
            return math_ops.equal(count, int64(self.size))
        return math_ops.greater(count, int64(0))

    def pull(self, state):
        if self.rows_of_indices:
            count, rows, state = self.up.take(state, int64(self.size))
            assert [r.kind for r in rows] == self.kinds, (self.kinds, [r.kind for r in rows])
            return self._valid(count), [count] + [r.tensor() for r in rows], state
        return self._pull_rows(state)

    def _pull_rows(self, state):
        k = len(self.up.specs)
        lists = [new_list(s.dtype, int64(self.size)) for s in self.up.specs]

        def test(count, last, *rest):
            return math_ops.logical_and(math_ops.less(count, int64(self.size)), last)

        def body(count, last, *rest):
            lists, st = list(rest[:k]), list(rest[k:])
            v, element, st = self.up.next(st)
            lists = branch(v, lambda: [list_set(lst, count, e) for lst, e in zip(lists, element)], lambda: lists)
            return [count + as_int64(v), v] + lists + st

        out = loop(test, body, [int64(0), true()] + lists + list(state))
        count, lists, state = out[0], out[2:2 + k], out[2 + k:]
        return self._valid(count), [count] + lists, state

    def materialize(self, payload):
        count = payload[0]
        if self.rows_of_indices:
            rows = [Rows.of(kind, t) for kind, t in zip(self.kinds, payload[1:])]
            return self.up.fetch_rows(rows, count)
        out = []
        for lst, spec in zip(payload[1:], self.up.specs):
            stacked = list_stack(lst, spec, self.size)
            out.append(stacked if self.drop else stacked[:count])
        return out


class UnbatchStage(_Unary):
    """``unbatch()``: the rows of each input element, read from a TensorList of the element's rows."""

    def __init__(self, specs, up):
        super().__init__(specs, up)
        self.indexed = False
        self.deferred = False
        self.k = len(specs)

    def state_size(self):
        return 2 + self.k + self.up.state_size()

    def _empty(self, upstream_state):
        return [int64(0), int64(0)] + [new_list(s.dtype) for s in self.specs] + list(upstream_state)

    def init(self):
        return self._empty(self.up.init())

    def reinit(self, state):
        return self._empty(self.up.reinit(state[2 + self.k:]))

    def pull(self, state):
        k = self.k
        pos, rows = state[0], state[1]
        tables, st = list(state[2:2 + k]), list(state[2 + k:])

        def test(pos, rows, done, *rest):
            return math_ops.logical_and(math_ops.logical_not(done), math_ops.greater_equal(pos, rows))

        def body(pos, rows, done, *rest):
            tables, st = list(rest[:k]), list(rest[k:])
            v, batch, st = self.up.next(st)
            out = branch(v, lambda: [int64(0), size_of(batch[0])] + [list_from(b) for b in batch],
                         lambda: [pos, rows] + tables)
            return [out[0], out[1], math_ops.logical_not(v)] + out[2:] + st

        out = loop(test, body, [pos, rows, false()] + tables + st)
        pos, rows, tables, st = out[0], out[1], out[3:3 + k], out[3 + k:]
        valid = math_ops.less(pos, rows)
        got = branch(valid, lambda: [list_get(t, pos, s) for t, s in zip(tables, self.specs)] + tables,
                     lambda: dummies(self.specs) + tables)
        return valid, conform_all(got[:k], self.specs), [pos + as_int64(valid), rows] + got[k:] + st


class PaddedBatchStage(_Unary):
    """``padded_batch``: rows padded to ``shapes`` (a dim of -1: the longest in the batch) with ``values``,
    concatenated as they come (the batch's padded size is known only at its end)."""

    def __init__(self, specs, up, size: int, drop_remainder: bool, shapes: list, values: list):
        super().__init__(specs, up)
        self.size, self.drop = size, drop_remainder
        self.shapes, self.values = shapes, values       # per component: [dim or -1], padding scalar
        self.indexed = False
        self.deferred = False

    def state_size(self):
        return self.up.state_size()

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

    def _empty(self, spec, shape):
        dims = [0] + [max(d, 0) for d in shape]
        return array_ops.zeros(dims, spec.dtype) if spec.dtype is not dtypes.string else \
            array_ops.fill(dims, array_ops.constant(b"", dtypes.string))

    def pull(self, state):
        k = len(self.up.specs)
        buffers = [self._empty(s, shape) for s, shape in zip(self.up.specs, self.shapes)]
        relaxed = [TensorShape([None] * (1 + len(shape))) for shape in self.shapes]

        def test(count, last, *rest):
            return math_ops.logical_and(math_ops.less(count, int64(self.size)), last)

        def append(buffers, element):
            out = []
            for buf, row, shape, value in zip(buffers, element, self.shapes, self.values):
                if shape:
                    rank = len(shape)
                    have = math_ops.cast(array_ops.shape(buf)[1:], dtypes.int64)
                    size = math_ops.cast(array_ops.shape(row), dtypes.int64)
                    fixed = array_ops.constant(list(shape), dtypes.int64)
                    target = math_ops.where(math_ops.less(fixed, int64(0)), math_ops.maximum(have, size), fixed)
                    none = array_ops.zeros([rank + 1], dtypes.int64)
                    grow = array_ops.concat([array_ops.zeros([1], dtypes.int64), target - have], 0)
                    buf = array_ops.pad(buf, array_ops.stack([none, grow], 1), constant_values=value)
                    # a row larger than a fixed padded dim pads by a negative amount: the op fails, named so
                    row = array_ops.pad(row, array_ops.stack([none[1:], target - size], 1), constant_values=value,
                                        name="padded_batch_row")
                out.append(array_ops.concat([buf, array_ops.expand_dims(row, 0)], 0))
            return out

        def body(count, last, *rest):
            buffers, st = list(rest[:k]), list(rest[k:])
            v, element, st = self.up.next(st)
            buffers = branch(v, lambda: conform_all(append(buffers, element), [TensorSpec(r) for r in relaxed]),
                             lambda: buffers)
            return [count + as_int64(v), v] + conform_all(buffers, [TensorSpec(r) for r in relaxed]) + st

        out = loop(test, body, [int64(0), true()] + conform_all(buffers, [TensorSpec(r) for r in relaxed]) +
                   list(state), [None, None] + relaxed + [None] * len(state))
        count, buffers, state = out[0], out[2:2 + k], out[2 + k:]
        valid = math_ops.equal(count, int64(self.size)) if self.drop else math_ops.greater(count, int64(0))
        return valid, conform_all(buffers, self.specs), state


class ConcatenateStage(Stage):
    """``a.concatenate(b)``: every element of ``a``, then every element of ``b``."""

    def __init__(self, specs, a, b):
        super().__init__(specs, [a, b])
        self.a, self.b = a, b

    def state_size(self):
        return 1 + self.a.state_size() + self.b.state_size()

    def init(self):
        return [false()] + self.a.init() + self.b.init()

    def reinit(self, state):
        _, sa, sb = self.split(state, 1, self.a.state_size())
        return [false()] + self.a.reinit(sa) + self.b.reinit(sb)

    def pull(self, state):
        (in_b,), sa, sb = self.split(state, 1, self.a.state_size())
        k = len(self.specs)

        def from_b(sa):
            v, element, sb2 = self.b.next(sb)
            return [v, true()] + conform_all(element, self.specs) + sa + sb2

        def from_a():
            v, element, sa2 = self.a.next(sa)
            return branch(v, lambda: [v, false()] + conform_all(element, self.specs) + sa2 + sb,
                          lambda: from_b(sa2))

        out = branch(in_b, lambda: from_b(sa), from_a)
        return out[0], out[2:2 + k], [out[1]] + out[2 + k:]


class NestedStage(Stage):
    """What ``flat_map`` and ``interleave`` open for an input element: the dataset ``make(element)`` returns,
    its components (computed from the element) kept in the state beside the inner pipeline's state."""

    def __init__(self, template, make):
        self.template = template            # a Dataset of the structure ``make`` returns (traced once)
        self.make = make                    # element tensors -> Dataset
        self.component_specs = template._component_specs()
        self.size = len(self.component_specs) + self._stage(template._components()).state_size()

    def _stage(self, components) -> Stage:
        return self.template._rebuild(list(components))._lower(carried=True)

    def closed(self) -> list:
        """A state with nothing open: the pipeline over placeholder components (valid ones: an empty range,
        a shard of one), started but never read."""
        components = conform_all(self.template._placeholder_components(), self.component_specs)
        return components + self._stage(components).init()

    def open(self, element) -> list:
        dataset = self.make(element)
        if dataset._structure_key() != self.template._structure_key():
            raise ValueError(f"the function passed to flat_map/interleave returned {dataset!r}; it returned "
                             f"{self.template!r} when it was first traced")
        components = conform_all(dataset._components(), self.component_specs)
        return components + self._stage(components).init()

    def next(self, state):
        n = len(self.component_specs)
        components, inner = state[:n], state[n:]
        v, element, inner = self._stage(components).next(inner)
        return v, element, components + inner

    def shapes(self) -> list:
        return [s.shape for s in self.component_specs] + [None] * (self.size - len(self.component_specs))


class FlatMapStage(_Unary):
    """``flat_map(fn)``: every element of the dataset ``fn`` returns for each input element, in order."""

    def __init__(self, specs, up, nested: NestedStage):
        super().__init__(specs, up)
        self.nested = nested
        self.indexed = False
        self.deferred = False

    def state_size(self):
        return 1 + self.nested.size + self.up.state_size()

    def init(self):
        return [false()] + self.nested.closed() + self.up.init()

    def reinit(self, state):
        return [false()] + self.nested.closed() + self.up.reinit(state[1 + self.nested.size:])

    def pull(self, state):
        k, m = len(self.specs), self.nested.size

        def body(found, done, valid, *rest):
            is_open, inner, st = rest[k], list(rest[k + 1:k + 1 + m]), list(rest[k + 1 + m:])

            def from_inner():
                v, e, inner2 = self.nested.next(inner)
                return [v, false(), v] + conform_all(e, self.specs) + [v] + inner2 + st

            def open_next():
                v, e, st2 = self.up.next(st)
                opened = branch(v, lambda: self.nested.open(e), lambda: inner)
                return [false(), math_ops.logical_not(v), false()] + dummies(self.specs) + [v] + opened + st2

            return branch(is_open, from_inner, open_next)

        shapes = [None, None, None] + [None] * k + [None] + self.nested.shapes() + [None] * self.up.state_size()
        out = loop(lambda found, done, *rest: math_ops.logical_not(math_ops.logical_or(found, done)), body,
                   [false(), false(), false()] + dummies(self.specs) + list(state), shapes)
        return out[2], out[3:3 + k], out[3 + k:]


class InterleaveStage(_Unary):
    """``interleave(fn, cycle_length, block_length)``: tf.data's deterministic order -- ``cycle_length`` slots
    visited in turn, ``block_length`` elements from each slot's dataset, an empty slot opening the next input
    element's dataset."""

    def __init__(self, specs, up, nested: NestedStage, cycle_length: int, block_length):
        super().__init__(specs, up)
        self.nested, self.cycle, self.block = nested, cycle_length, block_length
        self.indexed = False
        self.deferred = False

    def state_size(self):
        return 4 + self.cycle * (1 + self.nested.size) + self.up.state_size()

    def _closed(self, upstream_state):
        slots = []
        for _ in range(self.cycle):
            slots += [false()] + self.nested.closed()
        return [int64(0), int64(0), int64(0), false()] + slots + list(upstream_state)

    def init(self):
        return self._closed(self.up.init())

    def reinit(self, state):
        return self._closed(self.up.reinit(state[4 + self.cycle * (1 + self.nested.size):]))

    def pull(self, state):
        k, m, cycle = len(self.specs), 1 + self.nested.size, self.cycle
        n_slots = cycle * m

        def advance_cycle(index):
            return math_ops.floormod(index + int64(1), int64(cycle))

        def step(slot_index, index, block, num_open, end, slots, st):
            """One step at slot ``slot_index`` (a Python int): [produced, index, block, num_open, end] + element
            + slots + upstream state."""
            mine = slots[slot_index * m:(slot_index + 1) * m]
            before, after = slots[:slot_index * m], slots[(slot_index + 1) * m:]
            is_open, inner = mine[0], list(mine[1:])

            def from_inner():
                v, e, inner2 = self.nested.next(inner)
                block2 = block + int64(1)
                rotate = math_ops.logical_or(math_ops.logical_not(v), math_ops.greater_equal(block2, self.block))
                new_index = math_ops.where(rotate, advance_cycle(index), index)
                new_block = math_ops.where(rotate, int64(0), block2)
                return [v, new_index, new_block, num_open - as_int64(math_ops.logical_not(v)), end] + \
                    conform_all(e, self.specs) + before + [v] + inner2 + after + st

            def open_next():
                v, e, st2 = self.up.next(st)
                opened = branch(v, lambda: self.nested.open(e), lambda: inner)
                return [false(), index, block, num_open + as_int64(v), math_ops.logical_not(v)] + \
                    dummies(self.specs) + before + [v] + opened + after + st2

            def skip():
                return [false(), advance_cycle(index), int64(0), num_open, end] + dummies(self.specs) + slots + st

            return branch(is_open, from_inner, lambda: branch(end, skip, open_next))

        def body(found, *rest):
            index, block, num_open, end = rest[k:k + 4]
            slots, st = list(rest[k + 4:k + 4 + n_slots]), list(rest[k + 4 + n_slots:])
            out = step(cycle - 1, index, block, num_open, end, slots, st)
            for s in reversed(range(cycle - 1)):
                out = branch(math_ops.equal(index, int64(s)),
                             lambda s=s: step(s, index, block, num_open, end, slots, st), lambda out=out: out)
            produced, index, block, num_open, end = out[:5]
            return [produced] + out[5:5 + k] + [index, block, num_open, end] + out[5 + k:]

        def test(found, *rest):
            num_open, end = rest[k + 2], rest[k + 3]
            finished = math_ops.logical_and(end, math_ops.equal(num_open, int64(0)))
            return math_ops.logical_not(math_ops.logical_or(found, finished))

        shapes = [None] * (1 + k + 4) + (([None] + self.nested.shapes()) * cycle) + [None] * self.up.state_size()
        out = loop(test, body, [false()] + dummies(self.specs) + list(state), shapes)
        return out[0], out[1:1 + k], out[1 + k:]


class ScanStage(_Unary):
    """``scan(initial_state, fn)``: ``fn(state, element) -> (state, output)`` along the input."""

    def __init__(self, specs, up, initial, state_specs, call):
        super().__init__(specs, up)
        self.initial, self.state_specs, self.call = initial, state_specs, call
        self.indexed = False
        self.deferred = False

    def state_size(self):
        return len(self.state_specs) + self.up.state_size()

    def init(self):
        return conform_all(self.initial, self.state_specs) + self.up.init()

    def reinit(self, state):
        return conform_all(self.initial, self.state_specs) + self.up.reinit(state[len(self.state_specs):])

    def pull(self, state):
        n, k = len(self.state_specs), len(self.specs)
        carry, st = list(state[:n]), list(state[n:])
        v, element, st = self.up.next(st)

        def run():
            new_carry, output = self.call(carry, element)
            return conform_all(new_carry, self.state_specs) + conform_all(output, self.specs)

        out = branch(v, run, lambda: carry + dummies(self.specs))
        return v, out[n:n + k], out[:n] + st


class CacheStage(_Unary):
    """``cache()`` in graphs. Under ``repeat`` (``carried``) the first pass is written into TensorLists as it is
    read, and a pass started after a complete one reads them instead of running the input again (a pass cut
    short, by ``take`` above, is not kept, as in tf.data). Otherwise there is one pass: the input's elements,
    and its indices when it is an index stage."""

    FILLING, COMPLETE, REPLAYING = 0, 1, 2

    def __init__(self, specs, up):
        super().__init__(specs, up)
        self.k = len(specs)
        if up.carried:
            self.indexed = self.deferred = False

    def state_size(self):
        return 3 + self.k + self.up.state_size() if self.carried else self.up.state_size()

    def _filling(self, upstream_state):
        return [int64(self.FILLING), int64(0)] + [new_list(s.dtype) for s in self.specs] + list(upstream_state)

    def init(self):
        if not self.carried:
            return self.up.init()
        return [int64(0)] + self._filling(self.up.init())

    def reinit(self, state):
        if not self.carried:
            return self.up.reinit(state)
        k = self.k
        phase, count, tables, st = state[1], state[2], list(state[3:3 + k]), list(state[3 + k:])
        return branch(math_ops.equal(phase, int64(self.FILLING)),
                      lambda: [int64(0)] + self._filling(self.up.reinit(st)),
                      lambda: [int64(0), int64(self.REPLAYING), count] + tables + st)

    def pull(self, state):
        if not self.carried:
            return self.up.pull(state)
        k = self.k
        pos, phase, count, tables, st = state[0], state[1], state[2], list(state[3:3 + k]), list(state[3 + k:])

        def replay():
            valid = math_ops.less(pos, count)
            got = branch(valid, lambda: [list_get(t, pos, s) for t, s in zip(tables, self.specs)] + tables,
                         lambda: dummies(self.specs) + tables)
            return [valid] + got[:k] + [pos + as_int64(valid), phase, count] + got[k:] + st

        def fill():
            v, element, st2 = self.up.next(st)
            written = branch(v, lambda: [list_set(t, count, e) for t, e in zip(tables, element)], lambda: tables)
            ended = math_ops.logical_and(math_ops.logical_not(v), math_ops.equal(phase, int64(self.FILLING)))
            new_phase = math_ops.where(ended, int64(self.COMPLETE), phase)
            return [v] + conform_all(element, self.specs) + [pos, new_phase, count + as_int64(v)] + written + st2

        out = branch(math_ops.equal(phase, int64(self.REPLAYING)), replay, fill)
        return out[0], out[1:1 + k], out[1 + k:]

    def payload_dummies(self):
        return dummies(self.specs) if self.carried else self.up.payload_dummies()

    def payload_size(self):
        return self.k if self.carried else self.up.payload_size()

    def take(self, state, k):
        return self.up.take(state, k)

    def row_kinds(self):
        return self.up.row_kinds()

    def advance(self, state, n):
        return self.up.advance(state, n)


class WindowStage(_Unary):
    """``window(size, shift, stride)``: the element is the window's rows (``[count, ...]``), read from a ring of
    the last ``(size - 1) * stride + 1`` input elements (TensorLists); input elements before a window's start
    (a shift past the span) are read and dropped."""

    def __init__(self, specs, up, size: int, shift: int, stride: int, drop_remainder: bool):
        super().__init__(specs, up)
        self.size, self.shift, self.stride, self.drop = size, shift, stride, drop_remainder
        self.span = (size - 1) * stride + 1
        self.indexed = self.deferred = False
        self.k = len(specs)
        self.items = list(up.specs)

    def state_size(self):
        return 3 + self.k + self.up.state_size()

    def _empty(self, upstream_state):
        return [int64(0), int64(0), false()] + [new_list(s.dtype) for s in self.items] + list(upstream_state)

    def init(self):
        return self._empty(self.up.init())

    def reinit(self, state):
        return self._empty(self.up.reinit(state[3 + self.k:]))

    def pull(self, state):
        k, span = self.k, int64(self.span)
        start, read, done = state[:3]
        rings, st = list(state[3:3 + k]), list(state[3 + k:])

        def test(read, done, *rest):
            return math_ops.logical_and(math_ops.logical_not(done), math_ops.less(read, start + span))

        def body(read, done, *rest):
            rings, st = list(rest[:k]), list(rest[k:])
            v, element, st = self.up.next(st)
            keep = math_ops.logical_and(v, math_ops.greater_equal(read, start))
            slot = math_ops.floormod(read, span)
            rings = branch(keep, lambda: [list_set(r, slot, e) for r, e in zip(rings, element)], lambda: rings)
            return [read + as_int64(v), math_ops.logical_not(v)] + rings + st

        out = loop(test, body, [read, done] + rings + st)
        read, done, rings, st = out[0], out[1], out[2:2 + k], out[2 + k:]
        available = math_ops.minimum(read, start + span) - start
        count = math_ops.minimum(math_ops.floordiv(math_ops.maximum(available, int64(0)) + int64(self.stride - 1),
                                                   int64(self.stride)), int64(self.size))
        valid = math_ops.equal(count, int64(self.size)) if self.drop else math_ops.greater(count, int64(0))

        def rows():
            def body(j, *lists):          # the rings go through the loop too: each list version has one writer
                window, ring = lists[:k], lists[k:]
                slot = math_ops.floormod(start + j * int64(self.stride), span)
                written = [list_set(w, j, list_get(r, slot, s)) for w, r, s in zip(window, ring, self.items)]
                return [j + int64(1)] + written + list(ring)

            out = loop(lambda j, *rest: math_ops.less(j, count), body,
                       [int64(0)] + [new_list(s.dtype, count) for s in self.items] + rings)
            return [list_stack(w, s) for w, s in zip(out[1:1 + k], self.items)] + out[1 + k:]

        got = branch(valid, rows, lambda: dummies(self.specs) + rings)
        return valid, conform_all(got[:k], self.specs), [start + int64(self.shift), read, done] + got[k:] + st


# ---------------------------------------------------------------------------
# Loops and iterators over a lowered pipeline.

class DatasetLoop:
    """The graph loop of ``for x in dataset``: loop variables ``[valid, *payload, *state]``; the element is
    materialized from the payload inside the loop body (``element``).

    ``state`` (default: the pipeline's initial state) lets a loop continue an iterator.
    """

    def __init__(self, stage: Stage, element_spec, state: list | None = None, user_element=None):
        self.stage = stage
        self.element_spec = element_spec
        self.state = state
        self.k = None
        self.user_element = user_element or (lambda flat: pack(element_spec, flat))

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


class GraphIterator:
    """``iter(dataset)`` while tracing: ``next()`` adds the ops for one element to the graph.

    Past the end of the data, the element's ``Assert`` fails at run time (tf.data raises there too).
    """

    def __init__(self, stage: Stage, element_spec, user_element=None):
        self.stage = stage
        self.element_spec = element_spec
        self.state = stage.init()
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

    def _rt_graph_loop(self) -> DatasetLoop:
        return DatasetLoop(self.stage, self.element_spec, self.state, self.user_element)


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
    computes each element of its results from the same element of its inputs, so that it gives a batch's results run on the batch
    (tf.data's map vectorization): only elementwise ops, Identity and constants, every op's element inputs of
    one fully known shape that its results keep, its other inputs (constants, captures) of no higher rank."""
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
