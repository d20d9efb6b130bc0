"""Dataset stages of the sources and of the transformations that only choose elements (see ``lowering``).

Sources over in-memory tensors (``from_tensor_slices``, ``from_tensors``, ``range``) are index stages: their
payload is the index of the next element, read (``fetch``) where it is used. ``take``, ``skip``, ``repeat``,
``shard``, ``zip``, ``prefetch``, ``filter``, ``take_while`` and ``shuffle`` over an index stage pass indices
on; over anything else (a generator, an impure map) they pass elements. ``shuffle`` permutes a pass's indices
at once when the pass has a known length, and keeps a ring buffer otherwise.
"""
from __future__ import annotations

from runtime import dtypes
from runtime.data.lowering import (
    INDEX_SPEC, INT64_MAX, IndexStage, Rows, SameOrderStage, SameStateStage, Stage, UnaryStage, as_int64, as_list,
    branch, clamp_count, conform, conform_all, dummies, empty_vector, false, index_table, int64, list_get, list_set,
    loop, new_list, rng_next, rng_start, size_of, true, vector_shape,
)
from runtime.ops import array_ops, math_ops
from runtime.ops.dataset_ops import shuffle_indices
from runtime.ops.registry import apply


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

class PassStage(SameOrderStage):
    """A stage that keeps its input's elements (``prefetch``; ``cache`` in graphs)."""

    def __init__(self, specs, up):
        super().__init__(specs, up)
        self.vectorizable = up.indexed and up.vectorizable


class TakeStage(UnaryStage):
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


class SkipStage(UnaryStage):
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


class ShardStage(UnaryStage):
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


class RepeatStage(UnaryStage):
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


class FilterStage(SameStateStage):
    """``filter(predicate)``: pulls until the predicate holds or the input ends. Over an index stage it
    keeps the indices (the element is read again where it is used); otherwise it keeps the element."""

    def __init__(self, specs, up, predicate):
        super().__init__(specs, up)
        self.predicate = predicate   # flat element tensors -> scalar bool tensor
        self.indexed = self.deferred = up.indexed and not up.computes     # an element is read twice

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


class TakeWhileStage(UnaryStage):
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


class _Shuffle(UnaryStage):
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
