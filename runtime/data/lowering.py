"""Datasets in graphs: each pipeline stage as ordinary graph ops over a few state tensors.

A ``Stage`` is one dataset transformation lowered into the graph being traced:
``init()`` gives its state (tensors), ``next(state)`` gives ``(valid, element, state)``
where ``valid`` is a scalar bool tensor and ``element`` a flat list of tensors (zeros when
``valid`` is False, so that no op ever fails on an element that does not exist). A source
over in-memory tensors keeps an index; ``map``/``filter`` call the user's (converted)
function inside an ``If`` that runs only for a valid element; ``filter``, ``batch``,
``skip``, ``repeat`` and ``shuffle`` pull from upstream in a ``While``. The graph's size
depends on the pipeline, never on the data, and the native code generator builds it with
no Python callback (only ``from_generator`` calls back, through ``GeneratorNext``).

Every ``next`` returns elements of exactly the element spec's static shapes and a state of
exactly ``init``'s shapes, so stages nest inside loops (loop variables keep their shapes).

``DatasetLoop`` is what ``for x in dataset`` stages (``rt__.for_stmt``): its loop
variables are ``[valid, *element, *state]``, the first element fetched before the loop.
"""
from __future__ import annotations

from runtime import context, dtypes, nest
from runtime.ops import array_ops, math_ops
from runtime.ops.control_flow_ops import cond, while_loop
from runtime.ops.logging_ops import Assert
from runtime.ops.registry import apply, convert, get_opdef
from runtime.shapes import TensorShape, TensorSpec
from runtime.tensor import is_tensor

# MINSTD (Park-Miller): products stay below 2**47, so int64 arithmetic gives the same numbers in
# numpy and in C; shuffle draws its buffer indices from it, eagerly and in graphs alike.
RNG_MULTIPLIER = 48271
RNG_MODULUS = 2147483647


def rng_start(seed: int) -> int:
    """The generator's first state for a seed (in [1, RNG_MODULUS - 1])."""
    return seed % (RNG_MODULUS - 1) + 1


# ---------------------------------------------------------------------------
# Graph helpers.

def int64(value):
    return array_ops.constant(value, dtypes.int64)


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


def append_row(buffer, count, element):
    """``buffer`` with ``element`` as a new last row (the first row replaces the empty buffer)."""
    row = array_ops.expand_dims(element, 0)
    return branch(math_ops.equal(count, int64(0)), lambda: [row],
                  lambda: [array_ops.concat([buffer, row], 0)])[0]


# ---------------------------------------------------------------------------
# Stages.

class Stage:
    """One lowered dataset node (see the module docstring). ``specs``: the flat element specs."""

    def __init__(self, specs: list[TensorSpec]):
        self.specs = list(specs)

    def init(self) -> list:
        raise NotImplementedError

    def reinit(self, state: list) -> list:
        """The state for another pass over the data (``repeat``); a shuffle keeps its generator going."""
        return self.init()

    def next(self, state: list):
        raise NotImplementedError


class _ComponentsStage(Stage):
    """A source of in-memory components, its state the index of the next element."""

    def __init__(self, specs, components):
        super().__init__(specs)
        self.components = components

    def init(self):
        return [int64(0)]


class TensorsStage(_ComponentsStage):
    """``from_tensors``: one element, the components themselves."""

    def next(self, state):
        i = state[0]
        return math_ops.less(i, int64(1)), conform_all(self.components, self.specs), [i + int64(1)]


class SlicesStage(_ComponentsStage):
    """``from_tensor_slices``: element ``i`` is row ``i`` of every component."""

    def next(self, state):
        i = state[0]
        n = math_ops.cast(array_ops.shape(self.components[0])[0], dtypes.int64)
        valid = math_ops.less(i, n)
        element = branch(valid, lambda: [array_ops.gather(c, i) for c in self.components],
                         lambda: dummies(self.specs))
        return valid, conform_all(element, self.specs), [i + int64(1)]


class RangeStage(Stage):
    """``range(start, stop, step)``: element ``k`` is ``start + k * step`` while ``k`` < the count."""

    def __init__(self, specs, components):
        super().__init__(specs)
        self.start, self.stop, self.step = components

    def init(self):
        return [int64(0)]

    def next(self, state):
        k = state[0]
        span = math_ops.where(math_ops.greater(self.step, int64(0)), self.stop - self.start, self.start - self.stop)
        size = math_ops.abs(self.step)
        count = math_ops.maximum(math_ops.floordiv(span + size - int64(1), size), int64(0))
        value = math_ops.cast(self.start + k * self.step, self.specs[0].dtype)
        return math_ops.less(k, count), conform_all([value], self.specs), [k + int64(1)]


class GeneratorStage(Stage):
    """``from_generator``: ``GeneratorNext`` calls back into Python for each element."""

    def __init__(self, specs, components):
        super().__init__(specs)
        self.source = components[0]

    def init(self):
        return [apply("GeneratorInit", [self.source])]

    def next(self, state):
        out = as_list(apply("GeneratorNext", [state[0]], {"Tout": tuple(s.dtype for s in self.specs),
                                                            "output_shapes": tuple(s.shape for s in self.specs)}))
        return out[0], conform_all(out[1:], self.specs), list(state)


class IteratorStage(Stage):
    """A Python-side iterator passed to a Function: ``IteratorGetNext`` calls back for each element."""

    def __init__(self, specs, handle, attrs: dict):
        super().__init__(specs)
        self.handle, self.attrs = handle, attrs

    def init(self):
        return [self.handle]

    def next(self, state):
        out = as_list(apply("IteratorGetNext", [state[0]], self.attrs))
        return out[0], conform_all(out[1:], self.specs), list(state)


class PassStage(Stage):
    """A stage that keeps its input's elements (``prefetch``)."""

    def __init__(self, specs, upstream):
        super().__init__(specs)
        self.up = upstream

    def init(self):
        return self.up.init()

    def reinit(self, state):
        return self.up.reinit(state)

    def next(self, state):
        return self.up.next(state)


class ZipStage(Stage):
    """``Dataset.zip``: one element of every input, concatenated; it ends when any input ends."""

    def __init__(self, specs, upstreams):
        super().__init__(specs)
        self.ups = list(upstreams)
        self.sizes: list[int] | None = None       # each input's state length, known once ``init`` ran

    def _split(self, state: list) -> list[list]:
        if self.sizes is None:
            self.init()
        parts, start = [], 0
        for size in self.sizes:
            parts.append(list(state[start:start + size]))
            start += size
        return parts

    def init(self):
        states = [up.init() for up in self.ups]
        self.sizes = [len(s) for s in states]
        return [t for s in states for t in s]

    def reinit(self, state):
        return [t for up, part in zip(self.ups, self._split(state)) for t in up.reinit(part)]

    def next(self, state):
        valid, element, new_state = None, [], []
        for up, part in zip(self.ups, self._split(state)):
            v, e, st = up.next(part)
            valid = v if valid is None else math_ops.logical_and(valid, v)
            element += list(e)
            new_state += list(st)
        return valid, element, new_state


class MapStage(PassStage):
    """``map(fn)``: the function runs (inlined in the graph) only for a valid element."""

    def __init__(self, specs, upstream, call):
        super().__init__(specs, upstream)
        self.call = call            # flat input tensors -> flat output tensors

    def next(self, state):
        valid, element, state = self.up.next(state)
        out = branch(valid, lambda: self.call(element), lambda: dummies(self.specs))
        return valid, conform_all(out, self.specs), state


class FilterStage(PassStage):
    """``filter(predicate)``: pulls until the predicate holds or the input ends."""

    def __init__(self, specs, upstream, predicate):
        super().__init__(specs, upstream)
        self.predicate = predicate   # flat input tensors -> scalar bool tensor
        self.k = len(specs)

    def next(self, state):
        k = self.k

        def body(found, valid, *rest):
            v, element, st = self.up.next(list(rest[k:]))
            keep = branch(v, lambda: [self.predicate(element)], lambda: [array_ops.constant(False)])[0]
            return [math_ops.logical_or(keep, math_ops.logical_not(v)), v] + element + st

        out = loop(lambda found, *rest: math_ops.logical_not(found), body,
                   [array_ops.constant(False), array_ops.constant(False)] + dummies(self.specs) + list(state))
        return out[1], out[2:2 + k], out[2 + k:]


class BatchStage(PassStage):
    """``batch(size, drop_remainder)``: pulls up to ``size`` elements into rows."""

    def __init__(self, specs, upstream, size: int, drop_remainder: bool):
        super().__init__(specs, upstream)
        self.size, self.drop = size, drop_remainder

    def next(self, state):
        if type(self.up) is SlicesStage:
            return self._slice_rows(state)
        rows = [batched_shape(s.shape, None) for s in self.up.specs]
        k = len(rows)
        empty = [conform(array_ops.zeros([0] + ([] if r.dims is None else [d or 0 for d in r.dims[1:]]), s.dtype), r)
                 for r, s in zip(rows, self.up.specs)]

        def test(count, last, *rest):
            return math_ops.logical_and(math_ops.less(count, int64(self.size)), last)

        def body(count, last, *rest):
            buffers, st = list(rest[:k]), list(rest[k:])
            v, element, st = self.up.next(st)
            buffers = branch(v, lambda: [append_row(b, count, e) for b, e in zip(buffers, element)],
                             lambda: buffers)
            return [count + math_ops.cast(v, dtypes.int64), v] + conform_all(buffers, [TensorSpec(r) for r in rows]) \
                + st

        out = loop(test, body, [int64(0), array_ops.constant(True)] + empty + list(state),
                   [None, None] + rows + [None] * len(state))
        count, buffers, state = out[0], out[2:2 + k], out[2 + k:]
        valid = math_ops.greater(count, int64(0))
        if self.drop:
            valid = math_ops.logical_and(valid, math_ops.equal(count, int64(self.size)))
            indices = array_ops.range(0, self.size, dtype=dtypes.int64)
            buffers = branch(valid, lambda: [array_ops.gather(b, indices) for b in buffers],
                             lambda: dummies(self.specs))
        return valid, conform_all(buffers, self.specs), state


    def _slice_rows(self, state):
        """Straight from in-memory tensors: the batch is rows ``i:i+size`` of each component."""
        start = state[0]
        n = math_ops.cast(array_ops.shape(self.up.components[0])[0], dtypes.int64)
        stop = math_ops.minimum(start + int64(self.size), n)
        valid = math_ops.less(start, n)
        if self.drop:
            valid = math_ops.logical_and(valid, math_ops.equal(stop - start, int64(self.size)))
        rows = branch(valid, lambda: [c[start:stop] for c in self.up.components], lambda: dummies(self.specs))
        return valid, conform_all(rows, self.specs), [stop]


class TakeStage(PassStage):
    """``take(n)``: at most ``n`` elements (all for ``n < 0``); never pulls past them."""

    def __init__(self, specs, upstream, count):
        super().__init__(specs, upstream)
        self.count = count

    def init(self):
        return [int64(0)] + self.up.init()

    def reinit(self, state):
        return [int64(0)] + self.up.reinit(state[1:])

    def next(self, state):
        taken, st = state[0], list(state[1:])
        k = len(self.specs)
        go = math_ops.logical_or(math_ops.less(self.count, int64(0)), math_ops.less(taken, self.count))

        def pull():
            v, element, st2 = self.up.next(st)
            return [v] + element + st2

        out = branch(go, pull, lambda: [array_ops.constant(False)] + dummies(self.specs) + st)
        return out[0], out[1:1 + k], [taken + int64(1)] + out[1 + k:]


class SkipStage(PassStage):
    """``skip(n)``: drops the first ``n`` elements (all for ``n < 0``) on the first pull."""

    def __init__(self, specs, upstream, count):
        super().__init__(specs, upstream)
        self.count = count

    def init(self):
        return [array_ops.constant(False)] + self.up.init()

    def reinit(self, state):
        return [array_ops.constant(False)] + self.up.reinit(state[1:])

    def next(self, state):
        skipped, st = state[0], list(state[1:])
        k = len(self.specs)
        # one pull loop (one copy of the upstream ops): the first time, pull `count` + 1 elements
        # (until the end for a negative count) and keep the last; afterwards pull one
        to_skip = math_ops.where(skipped, int64(0), self.count)

        def test(pulled, valid, *rest):
            more = math_ops.logical_or(math_ops.less(to_skip, int64(0)), math_ops.less(pulled, to_skip + int64(1)))
            return math_ops.logical_and(valid, more)

        def body(pulled, valid, *rest):
            v, element, st2 = self.up.next(list(rest[k:]))
            return [pulled + int64(1), v] + element + st2

        out = loop(test, body, [int64(0), array_ops.constant(True)] + dummies(self.specs) + st)
        return out[1], out[2:2 + k], [array_ops.constant(True)] + out[2 + k:]


class RepeatStage(PassStage):
    """``repeat(count)``: starts its input again when it ends (forever for ``count < 0``); an input that
    ends without an element right after a restart ends the repetition (as tf.data does)."""

    def __init__(self, specs, upstream, count):
        super().__init__(specs, upstream)
        self.count = count

    def init(self):
        return [int64(0)] + self.up.init()

    def reinit(self, state):
        return [int64(0)] + self.up.reinit(state[1:])

    def next(self, state):
        k = len(self.specs)

        def pull():
            def body(done, fresh, valid, *rest):
                epoch, st = rest[k], list(rest[k + 1:])
                v, element, st = self.up.next(st)
                more = math_ops.logical_or(math_ops.less(self.count, int64(0)),
                                           math_ops.less(epoch + int64(1), self.count))
                again = math_ops.logical_and(math_ops.logical_not(v),
                                             math_ops.logical_and(math_ops.logical_not(fresh), more))
                st = branch(again, lambda: self.up.reinit(st), lambda: st)
                return [math_ops.logical_not(again), again, v] + element + \
                    [epoch + math_ops.cast(again, dtypes.int64)] + st

            false = array_ops.constant(False)
            out = loop(lambda done, *rest: math_ops.logical_not(done), body,
                       [false, false, false] + dummies(self.specs) + list(state))
            return out[2:]

        out = branch(math_ops.not_equal(self.count, int64(0)), pull,
                     lambda: [array_ops.constant(False)] + dummies(self.specs) + list(state))
        return out[0], out[1:1 + k], out[1 + k:]


class ShuffleStage(PassStage):
    """``shuffle(buffer_size, seed)``: fills a buffer, then takes a random row of it (MINSTD draws)."""

    def __init__(self, specs, upstream, buffer_size, seed, reshuffle: bool):
        super().__init__(specs, upstream)
        self.buffer_size, self.seed, self.reshuffle = buffer_size, seed, reshuffle
        self.rows = [batched_shape(s.shape, None) for s in specs]

    def _empty(self, rng, upstream_state):
        empty = [conform(array_ops.zeros([0] + ([] if r.dims is None else [d or 0 for d in r.dims[1:]]), s.dtype), r)
                 for r, s in zip(self.rows, self.specs)]
        return [rng, int64(0), array_ops.constant(False)] + empty + list(upstream_state)

    def _start(self):
        return math_ops.floormod(self.seed, int64(RNG_MODULUS - 1)) + int64(1)

    def init(self):
        return self._empty(self._start(), self.up.init())

    def reinit(self, state):
        k = len(self.specs)
        rng = state[0] if self.reshuffle else self._start()
        return self._empty(rng, self.up.reinit(state[3 + k:]))

    def next(self, state):
        k = len(self.specs)
        rng, count, done = state[:3]
        buffers, st = list(state[3:3 + k]), list(state[3 + k:])

        def test(count, done, *rest):
            return math_ops.logical_and(math_ops.less(count, self.buffer_size), math_ops.logical_not(done))

        def body(count, done, *rest):
            buffers, st = list(rest[:k]), list(rest[k:])
            v, element, st = self.up.next(st)
            buffers = branch(v, lambda: [append_row(b, count, e) for b, e in zip(buffers, element)],
                             lambda: buffers)
            return [count + math_ops.cast(v, dtypes.int64), math_ops.logical_not(v)] + \
                conform_all(buffers, [TensorSpec(r) for r in self.rows]) + st

        out = loop(test, body, [count, done] + buffers + st, [None, None] + self.rows + [None] * len(st))
        count, done, buffers, st = out[0], out[1], out[2:2 + k], out[2 + k:]
        valid = math_ops.greater(count, int64(0))

        def draw():
            new_rng = math_ops.floormod(rng * int64(RNG_MULTIPLIER), int64(RNG_MODULUS))
            j = math_ops.floormod(new_rng, count)
            element = [array_ops.gather(b, j) for b in buffers]
            rest = [array_ops.concat([b[:j], b[j + int64(1):]], 0) for b in buffers]
            return [new_rng, count - int64(1)] + element + rest

        out = branch(valid, draw, lambda: [rng, count] + dummies(self.specs) + buffers)
        element = conform_all(out[2:2 + k], self.specs)
        rest = conform_all(out[2 + k:], [TensorSpec(r) for r in self.rows])
        return valid, element, [out[0], out[1], done] + rest + st


# ---------------------------------------------------------------------------
# Loops and iterators over a lowered pipeline.

class DatasetLoop:
    """The graph loop of ``for x in dataset``: loop variables ``[valid, *element, *state]``.

    ``state`` (default: the pipeline's initial state) lets a loop continue an iterator; ``owner`` is that
    iterator, left at the loop's final position (``finish``). A loop over an iterator (``continues``) fetches
    the next element only when the body did not leave the loop (``stop``), so that after a ``break`` the
    iterator is just past the last element the body saw, as in Python.
    """

    def __init__(self, stage: Stage, element_spec, state: list | None = None, owner=None, continues=False):
        self.stage = stage
        self.element_spec = element_spec
        self.k = len(stage.specs)
        self.state = state
        self.owner = owner
        self.continues = continues or owner is not None

    def _fetch(self, state) -> list:
        valid, element, state = self.stage.next(list(state))
        return [valid] + element + state

    def initial(self) -> list:
        return self._fetch(self.stage.init() if self.state is None else self.state)

    def valid(self, loop_vars):
        return loop_vars[0]

    def element(self, loop_vars):
        return pack(self.element_spec, loop_vars[1:1 + self.k])

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

    def __init__(self, stage: Stage, element_spec, state: list | None = None):
        self.stage = stage
        self.element_spec = element_spec
        self.state = stage.init() if state is None else list(state)

    def __iter__(self):
        raise TypeError("a dataset iterator cannot be looped over with plain Python inside a traced function; "
                        "write the `for` loop in a function that rt.function converts (autograph=True)")

    def __next__(self):
        valid, element, self.state = self.stage.next(self.state)
        Assert(valid, ["End of sequence: the dataset iterator has no more elements"])
        return pack(self.element_spec, element)

    def get_next(self):
        return self.__next__()

    def _rt_next_or_default(self, default):
        valid, element, self.state = self.stage.next(self.state)
        return element_or_default(valid, element, self.element_spec, default)

    def _rt_graph_loop(self) -> DatasetLoop:
        return DatasetLoop(self.stage, self.element_spec, self.state, owner=self)

    # -- the position as state of graph control flow
    def _rt_state_components(self) -> list:
        return list(self.state)

    def _rt_from_state_components(self, components: list) -> GraphIterator:
        return GraphIterator(self.stage, self.element_spec, components)

    def _rt_state_key(self):
        return id(self.stage)


def element_or_default(valid, element: list, element_spec, default):
    """``element`` (flat) packed as ``element_spec`` when ``valid``, else ``default`` (of the same structure; a
    Python number takes its component's dtype, a tensor must have it): ``next(iterator, default)``."""
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
    return pack(element_spec, branch(valid, lambda: list(element), lambda: values))


def pack(element_spec, flat: list):
    """The element structure over flat tensors."""
    if nest.is_sequence(element_spec):
        return nest.pack_sequence_as(element_spec, list(flat))
    return flat[0]
