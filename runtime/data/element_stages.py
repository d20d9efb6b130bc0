"""Dataset stages of the transformations that compute elements (see ``lowering``): ``map``, ``batch``,
``padded_batch``, ``unbatch``, ``window``, ``concatenate``, ``flat_map``/``interleave``, ``scan``, ``cache``.

Rows that arrive one by one are written into TensorLists (updated in place in native code) and stacked where
the element is used; a batch over an index stage gathers its rows in one op instead (``BatchStage``).
"""
from __future__ import annotations

from runtime import dtypes
from runtime.data.lowering import (
    Rows, SameOrderStage, SameStateStage, Stage, UnaryStage, as_int64, branch, conform_all, dummies, empty_vector,
    false, int64, list_from, list_get, list_set, list_stack, loop, new_list, size_of, true,
)
from runtime.ops import array_ops, math_ops
from runtime.shapes import TensorShape, TensorSpec

# ---------------------------------------------------------------------------
# Transformations that compute elements.

class MapStage(SameOrderStage):
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

    def materialize(self, payload):
        return self.call(self.up.element(payload))

    def fetch(self, idx):
        return self.call(conform_all(self.up.fetch(idx), self.up.specs))

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


class BatchStage(SameStateStage):
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


class UnbatchStage(UnaryStage):
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


class PaddedBatchStage(SameStateStage):
    """``padded_batch``: rows padded to ``shapes`` (a dim of -1: the longest in the batch) with ``values``,
    concatenated as they come (the batch's padded size is known only at its end)."""

    def __init__(self, specs, up, size: int, drop_remainder: bool, shapes: list, values: list):
        super().__init__(specs, up)
        self.size, self.drop = size, drop_remainder
        self.shapes, self.values = shapes, values       # per component: [dim or -1], padding scalar
        self.indexed = False
        self.deferred = False

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


class FlatMapStage(UnaryStage):
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


class InterleaveStage(UnaryStage):
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


class ScanStage(UnaryStage):
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


class CacheStage(UnaryStage):
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


class WindowStage(UnaryStage):
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
