"""rt.data.Dataset against tf.data (the oracle), and eager iteration against the graph loop.

Every pipeline of ``PIPELINES`` is written once for a ``Dataset`` class and built both with
``rt.data.Dataset`` and ``tf.data.Dataset``: Python iteration must give tf.data's elements (values,
dtypes, order), and a Function looping over the dataset (one graph loop, generic executor and
reference executor) must see the same elements in the same order as Python iteration. Only the
comparisons with tf.data need TensorFlow (the ``tf`` fixture skips them without it); everything else
runs on rt alone.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import nest
from runtime.executor import run_graph, run_graph_generic
from runtime.graph import all_operations

P = 1000000007


def _arange(n, dtype=np.int64):
    return np.arange(n, dtype=dtype)


def _lib(D):
    """The library a pipeline builder is given the ``Dataset`` class of (``rt`` or ``tensorflow``)."""
    if D is rt.data.Dataset:
        return rt
    import tensorflow
    return tensorflow


PIPELINES = {
    "slices": lambda D: D.from_tensor_slices(_arange(7)),
    "slices_tuple": lambda D: D.from_tensor_slices((_arange(5), _arange(5) * 10.0)),
    "slices_dict": lambda D: D.from_tensor_slices({"a": _arange(4), "b": _arange(8).reshape(4, 2)}),
    "slices_matrix": lambda D: D.from_tensor_slices(_arange(12, np.float32).reshape(4, 3)),
    "slices_list": lambda D: D.from_tensor_slices([1, 2, 3]),
    "tensors": lambda D: D.from_tensors((_arange(3), np.int32(5))),
    "range": lambda D: D.range(5),
    "range_step": lambda D: D.range(2, 11, 3),
    "range_down": lambda D: D.range(10, 0, -3),
    "range_empty": lambda D: D.range(0),
    "map": lambda D: D.range(6).map(lambda x: x * 2 + 1),
    "map_tuple": lambda D: D.range(4).map(lambda x: (x, x * x)),
    "map_of_tuple": lambda D: D.from_tensor_slices((_arange(4), _arange(4) + 5)).map(lambda a, b: a * b),
    "filter": lambda D: D.range(10).filter(lambda x: x % 3 == 0),
    "filter_none": lambda D: D.range(10).filter(lambda x: x > 100),
    "batch": lambda D: D.range(10).batch(3),
    "batch_drop": lambda D: D.range(10).batch(3, drop_remainder=True),
    "batch_exact": lambda D: D.range(6).batch(3),
    "batch_slices": lambda D: D.from_tensor_slices(_arange(12, np.float32).reshape(6, 2)).batch(4),
    "batch_slices_drop": lambda D: D.from_tensor_slices((_arange(7), _arange(7) * 2)).batch(3, drop_remainder=True),
    "batch_slices_exact_drop": lambda D: D.from_tensor_slices(_arange(6)).batch(3, drop_remainder=True),
    "batch_tuple": lambda D: D.from_tensor_slices((_arange(5), _arange(10).reshape(5, 2))).batch(2),
    "batch_batch": lambda D: D.range(8).batch(2).batch(3),
    "take": lambda D: D.range(10).take(3),
    "take_zero": lambda D: D.range(10).take(0),
    "take_all": lambda D: D.range(4).take(-1),
    "take_more": lambda D: D.range(4).take(20),
    "skip": lambda D: D.range(10).skip(7),
    "skip_all": lambda D: D.range(4).skip(-1),
    "skip_more": lambda D: D.range(4).skip(20),
    "repeat": lambda D: D.range(3).repeat(3),
    "repeat_zero": lambda D: D.range(3).repeat(0),
    "repeat_forever": lambda D: D.range(3).repeat().take(8),
    "repeat_empty_forever": lambda D: D.range(0).repeat().take(3),
    "skip_take_repeat": lambda D: D.range(10).skip(2).take(5).repeat(2),
    "repeat_skip_take": lambda D: D.range(4).repeat(3).skip(3).take(7),
    "batch_repeat": lambda D: D.range(5).batch(2).repeat(2),
    "repeat_batch": lambda D: D.range(5).repeat(2).batch(3),
    "filter_batch": lambda D: D.range(20).filter(lambda x: x % 3 != 0).batch(4),
    "map_filter_batch_drop": lambda D: D.range(20).map(lambda x: x * x).filter(lambda x: x % 2 == 0).batch(3, True),
    "take_repeat_batch": lambda D: D.range(10).take(4).repeat(3).batch(5),
    "nested_repeat": lambda D: D.range(2).repeat(2).take(3).repeat(2),
    "prefetch": lambda D: D.range(5).prefetch(2).map(lambda x: x + 1),
    "prefetch_autotune": lambda D: D.range(5).prefetch(_lib(D).data.AUTOTUNE).batch(2),
    # in-memory sources through index stages, batched by gathering rows
    "slices_skip_batch": lambda D: D.from_tensor_slices(_arange(10)).skip(3).batch(4),
    "slices_take_batch_drop": lambda D: D.from_tensor_slices(_arange(10)).take(7).batch(3, drop_remainder=True),
    "slices_batch_repeat": lambda D: D.from_tensor_slices(_arange(5)).batch(2).repeat(2),
    "slices_repeat_batch": lambda D: D.from_tensor_slices(_arange(5)).repeat(3).batch(4),
    "slices_filter_batch": lambda D: D.from_tensor_slices(_arange(20)).filter(lambda x: x % 3 == 0).batch(3),
    "slices_map_batch": lambda D: D.from_tensor_slices(_arange(9)).map(lambda x: x * 2).batch(4),
    "slices_batch_map": lambda D: D.from_tensor_slices(_arange(9)).batch(4).map(lambda x: x + 1),
    "tensors_repeat_batch": lambda D: D.from_tensors(_arange(3)).repeat(3).batch(2),
    "dict_slices_batch": lambda D: D.from_tensor_slices({"a": _arange(5), "b": _arange(10).reshape(5, 2)}).batch(2),
    "nested_slices": lambda D: D.from_tensor_slices((_arange(4), {"c": _arange(8).reshape(4, 2)})),
    "range_batch": lambda D: D.range(3, 20, 4).batch(2),
    "zip_batch": lambda D: D.zip((D.range(7), D.from_tensor_slices(_arange(14).reshape(7, 2)))).batch(3),
    "zip_take_skip_batch": lambda D: D.zip((D.range(9).skip(2), D.from_tensor_slices(_arange(9)).take(5))).batch(2),
    "enumerate": lambda D: D.from_tensor_slices(_arange(3) * 7).enumerate(5),
    "enumerate_batch": lambda D: D.from_tensor_slices(_arange(5)).enumerate().batch(2),
    # shard, take_while, scan
    "shard": lambda D: D.range(10).shard(3, 1),
    "shard_batch": lambda D: D.from_tensor_slices(_arange(20)).shard(4, 3).batch(2),
    "shard_last": lambda D: D.range(7).shard(3, 2).batch(5),
    "repeat_shard": lambda D: D.range(3).repeat().shard(2, 0).take(4),
    "map_shard": lambda D: D.range(10).map(lambda x: x * x).shard(4, 1),
    "take_while": lambda D: D.range(10).take_while(lambda x: x < 4),
    "take_while_batch": lambda D: D.from_tensor_slices(_arange(10)).take_while(lambda x: x < 7).batch(3),
    "take_while_repeat": lambda D: D.range(5).take_while(lambda x: x < 3).repeat(2),
    "scan": lambda D: D.range(5).scan(_lib(D).constant(0, _lib(D).int64), lambda s, x: (s + x, s * 10)),
    "scan_tuple": lambda D: D.range(4).scan((_lib(D).constant(1, _lib(D).int64), _lib(D).constant(0, _lib(D).int64)),
                                           lambda s, x: ((s[0] * 2, s[1] + x), s[0] + s[1])),
    # unbatch, padded_batch
    "unbatch": lambda D: D.range(7).batch(3).unbatch(),
    "unbatch_drop": lambda D: D.range(7).batch(3, drop_remainder=True).unbatch(),
    "unbatch_tuple": lambda D: D.from_tensor_slices((_arange(6).reshape(3, 2), _arange(6).reshape(3, 2) * 3)).unbatch(),
    "unbatch_map_batch": lambda D: D.range(10).batch(4).map(lambda x: x * 2).unbatch().batch(3),
    "padded_batch": lambda D: D.range(5).map(lambda x: _lib(D).fill([x], x)).padded_batch(2),
    "padded_batch_shapes": lambda D: D.range(5).map(lambda x: _lib(D).fill([x], x)).padded_batch(
        2, padded_shapes=[6], padding_values=_lib(D).constant(-1, _lib(D).int64)),
    "padded_batch_drop": lambda D: D.range(5).map(lambda x: _lib(D).fill([x], x)).padded_batch(2, drop_remainder=True),
    "padded_batch_tuple": lambda D: D.range(1, 6).map(lambda x: (x, _lib(D).fill(_lib(D).stack([x, x - x + 2]), x)))
    .padded_batch(3),
    "padded_batch_scalar": lambda D: D.range(3).padded_batch(2),
    "padded_batch_dict": lambda D: D.range(1, 5).map(lambda x: {"v": _lib(D).fill(_lib(D).stack([x]), x), "n": x})
    .padded_batch(2, padded_shapes={"v": [None], "n": []},
                  padding_values={"v": _lib(D).constant(-1, _lib(D).int64), "n": _lib(D).constant(0, _lib(D).int64)}),
    "padded_batch_tuple_values": lambda D: D.range(1, 5).map(
        lambda x: (_lib(D).fill(_lib(D).stack([x]), x), _lib(D).cast(x, _lib(D).float32)))
    .padded_batch(3, padded_shapes=([5], []), padding_values=(_lib(D).constant(7, _lib(D).int64),
                                                               _lib(D).constant(0.5))),
    # cache, concatenate
    "cache": lambda D: D.range(5).cache(),
    "cache_repeat": lambda D: D.range(3).cache().repeat(2),
    "cache_map_repeat_batch": lambda D: D.range(4).map(lambda x: x * x).cache().repeat(3).batch(5),
    "cache_take_repeat": lambda D: D.range(5).cache().take(2).repeat(2),
    "concatenate": lambda D: D.range(3).concatenate(D.range(10, 12)),
    "concatenate_batch": lambda D: D.from_tensor_slices(_arange(5)).concatenate(D.range(10, 13)).batch(3),
    "concatenate_repeat_take": lambda D: D.range(3).concatenate(D.range(2).repeat()).take(6),
    "concatenate_shapes": lambda D: D.from_tensors(_arange(2)).concatenate(D.from_tensors(_arange(3))),
    # flat_map, interleave
    "flat_map": lambda D: D.range(4).flat_map(lambda x: D.range(x)),
    "flat_map_slices": lambda D: D.from_tensor_slices(_arange(12).reshape(4, 3)).flat_map(
        lambda r: D.from_tensor_slices(r)),
    "flat_map_batch_repeat": lambda D: D.range(3).flat_map(lambda x: D.range(x, 3)).batch(2).repeat(2),
    "interleave": lambda D: D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(x), cycle_length=2),
    "interleave_blocks": lambda D: D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(x), cycle_length=2,
                                                          block_length=3),
    "interleave_ranges": lambda D: D.range(4).interleave(lambda x: D.range(x * 10, x * 10 + 4), cycle_length=3,
                                                         block_length=2),
    "interleave_one": lambda D: D.range(3).interleave(lambda x: D.range(x), cycle_length=1),
    # window: elements are datasets
    "window_sliding": lambda D: D.range(7).window(3, shift=1).flat_map(lambda w: w.batch(3)),
    "window_stride_drop": lambda D: D.range(9).window(3, 2, 2, drop_remainder=True).flat_map(
        lambda w: w.batch(3, drop_remainder=True)),
    "window_skip_past": lambda D: D.from_tensor_slices(_arange(10)).window(2, shift=4).flat_map(lambda w: w.batch(2)),
    "window_pairs": lambda D: D.from_tensor_slices((_arange(5), _arange(5) * 10)).window(2).flat_map(
        lambda a, b: D.zip((a.batch(2), b.batch(2)))),
    "window_reduce": lambda D: D.range(7).window(3, 2).map(lambda w: w.reduce(_lib(D).constant(0, _lib(D).int64),
                                                                              lambda s, x: s + x)),
}


def _elements(dataset) -> list:
    """Python iteration: each element as a flat list of numpy arrays."""
    out = []
    for element in dataset:
        leaves = nest.flatten(element) if nest.is_sequence(element) else [element]
        out.append([np.asarray(t.numpy()) for t in leaves])
    return out


def _fingerprint(elements) -> int:
    """An order-sensitive hash of integral elements, as the graph computes it."""
    h = 0
    for element in elements:
        for part in element:
            h = (h * 131 + int(np.sum(part)) % P + 7 * int(part.size)) % P
    return h


@rt.function
def fingerprint(ds):
    h = rt.constant(0, rt.int64)
    for element in ds:
        for part in nest.flatten(element):
            part = rt.cast(part, rt.int64)
            h = (h * 131 + rt.floormod(rt.reduce_sum(part), P) + 7 * rt.cast(rt.size(part), rt.int64)) % P
    return h


@pytest.fixture(scope="module")
def tf():
    """TensorFlow, the semantics oracle: tests that compare with it skip when it is not installed."""
    return pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def tf_elements(tf):
    return {name: _elements_tf(tf, build(tf.data.Dataset)) for name, build in PIPELINES.items()}


def _elements_tf(tf, dataset) -> list:
    out = []
    for element in dataset:
        leaves = tf.nest.flatten(element)
        out.append([np.asarray(t.numpy()) for t in leaves])
    return out


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_python_iteration_matches_tf_data(name, tf_elements):
    got, want = _elements(PIPELINES[name](rt.data.Dataset)), tf_elements[name]
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist(), (name, a, b)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_graph_loop_sees_the_same_elements(name):
    ds = PIPELINES[name](rt.data.Dataset)
    want = _fingerprint(_elements(PIPELINES[name](rt.data.Dataset)))
    assert int(fingerprint(ds)) == want
    concrete = fingerprint.get_concrete_function(ds)
    feeds = [t._value for t in ds._components()]
    assert int(run_graph(concrete.graph, feeds)[0]) == want
    assert int(run_graph_generic(concrete.graph, feeds)[0]) == want


def _spec_leaves(spec):
    leaves = nest.flatten(spec) if isinstance(spec, (tuple, dict)) else [spec]
    return [(s.dtype.name, None if s.shape.rank is None else tuple(s.shape.as_list())) for s in leaves]


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_element_spec_matches_tf_data(name, tf):
    got = _spec_leaves(PIPELINES[name](rt.data.Dataset).element_spec)
    want = _spec_leaves(PIPELINES[name](tf.data.Dataset).element_spec)
    assert got == want


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_cardinality_matches_tf_data(name, tf):
    got = int(PIPELINES[name](rt.data.Dataset).cardinality())
    assert got == int(PIPELINES[name](tf.data.Dataset).cardinality())


def test_graph_size_does_not_depend_on_the_data():
    def pipeline(n):
        return rt.data.Dataset.from_tensor_slices(_arange(n)).map(lambda x: x + 1).batch(2)
    f = rt.function(fingerprint.python_function)
    small, big = f.get_concrete_function(pipeline(3)), f.get_concrete_function(pipeline(300))
    assert small is big, "datasets of one structure share one trace: their tensors are graph inputs"
    assert f.experimental_get_tracing_count() == 1
    assert int(f(pipeline(300))) == _fingerprint(_elements(pipeline(300)))
    f.get_concrete_function(pipeline(3).batch(2))
    f.get_concrete_function(rt.data.Dataset.from_tensor_slices(_arange(3)).map(lambda x: x + 2).batch(2))
    assert f.experimental_get_tracing_count() == 3, "another structure (or another map function) retraces"


# ---------------------------------------------------------------------------
# Shuffle: deterministic with a seed, a permutation, the same eagerly and in graphs.

def _shuffled(seed, buffer=4, n=10, reshuffle=True, repeat=1):
    return rt.data.Dataset.range(n).shuffle(buffer, seed=seed, reshuffle_each_iteration=reshuffle).repeat(repeat)


def test_shuffle_is_a_deterministic_permutation():
    order = [int(x) for x in _shuffled(7)]
    assert sorted(order) == list(range(10)) and order != list(range(10))
    assert order == [int(x) for x in _shuffled(7)], "a seed fixes the order"
    assert order != [int(x) for x in _shuffled(8)]
    assert int(fingerprint(_shuffled(7))) == _fingerprint(_elements(_shuffled(7)))


def test_shuffle_buffer_bounds_the_displacement():
    order = [int(x) for x in _shuffled(3, buffer=1)]
    assert order == list(range(10)), "a buffer of one keeps the order"
    order = [int(x) for x in _shuffled(3, buffer=3, n=50)]
    assert all(order[i] <= i + 2 for i in range(50)), "element i comes from the first i + buffer"


def test_shuffle_reshuffles_each_epoch_unless_asked_not_to():
    epochs = [int(x) for x in _shuffled(5, repeat=2)]
    assert epochs[:10] != epochs[10:] and sorted(epochs[10:]) == list(range(10))
    fixed = [int(x) for x in _shuffled(5, repeat=2, reshuffle=False)]
    assert fixed[:10] == fixed[10:]
    for reshuffle in (True, False):     # a fresh dataset's first pass: the same order in a graph and eagerly
        assert int(fingerprint(_shuffled(5, repeat=2, reshuffle=reshuffle))) == \
            _fingerprint(_elements(_shuffled(5, repeat=2, reshuffle=reshuffle)))


def test_seeded_shuffle_reshuffles_between_iterations_of_one_dataset():
    ds = rt.data.Dataset.range(20).shuffle(20, seed=1)
    first, second = [int(x) for x in ds], [int(x) for x in ds]
    assert first != second and sorted(second) == list(range(20)), "each pass reshuffles, as in tf.data"
    assert first == [int(x) for x in rt.data.Dataset.range(20).shuffle(20, seed=1)], "the seed fixes the sequence"
    f = rt.function(fingerprint.python_function)
    assert len({int(f(ds)) for _ in range(3)}) == 3, "every call of a Function gets the next pass"
    fixed = rt.data.Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=False)
    assert [int(x) for x in fixed] == [int(x) for x in fixed]
    assert len({int(f(fixed)) for _ in range(3)}) == 1
    assert [int(x) for x in ds.prefetch(rt.data.experimental.AUTOTUNE).take(3)] != []


def test_shuffle_without_seed_varies_between_passes():
    ds = rt.data.Dataset.range(30).shuffle(30)
    orders = {tuple(int(x) for x in ds) for _ in range(4)}
    assert len(orders) > 1
    f = rt.function(fingerprint.python_function)
    assert len({int(f(ds)) for _ in range(4)}) > 1, "a fresh seed is fed on every call"


ZERO = rt.Variable(rt.constant(0, rt.int64))


def impure(x):
    """A map function that reads a variable: it must run when its element is pulled (no index stream)."""
    return x + ZERO


# Ways to shuffle the same elements: a permutation of the pass (an in-memory source, also through a pure map),
# a ring of indices (the pass's length unknown: after repeat), a ring of elements (after an impure map). They
# must give one order.
SHUFFLE_WAYS = {
    "permutation": lambda ds, *args: ds.shuffle(*args),
    "permutation after map": lambda ds, *args: ds.map(lambda x: x * 1).shuffle(*args),
    "index ring": lambda ds, *args: ds.repeat(1).shuffle(*args),
    "element ring": lambda ds, *args: ds.map(impure).shuffle(*args),
}


@pytest.mark.parametrize("n, buffer", [(0, 3), (1, 1), (10, 1), (10, 3), (10, 10), (17, 100), (40, 7)])
def test_the_three_shuffles_give_one_order(n, buffer):
    orders = {}
    for way, shuffle in SHUFFLE_WAYS.items():
        for repeat in (1, 3):
            ds = shuffle(rt.data.Dataset.range(n), buffer, 11).repeat(repeat)
            order = [int(x) for x in ds]
            orders[way, repeat] = order
            fresh = shuffle(rt.data.Dataset.range(n), buffer, 11).repeat(repeat)
            assert int(fingerprint(fresh)) == _fingerprint([[np.array(v)] for v in order]), (way, repeat)
    first = orders["permutation", 1]
    assert sorted(first) == list(range(n))
    assert all(p < t + buffer for t, p in enumerate(first)), "only elements within the buffer window"
    for (way, repeat), order in orders.items():
        assert order[:n] == first, (way, repeat)
        passes = [order[k * n:(k + 1) * n] for k in range(repeat)]
        assert all(sorted(p) == list(range(n)) for p in passes)
        if n > 3 and buffer > 1:
            assert len({tuple(p) for p in passes}) == repeat, "each pass of repeat is shuffled again"


def test_shuffled_batches_of_rows_match_in_every_mode():
    x = np.arange(60, dtype=np.float32).reshape(20, 3)
    y = np.arange(20, dtype=np.int32) * 2

    def make():
        return rt.data.Dataset.from_tensor_slices((x, y)).shuffle(20, seed=4).batch(6)

    batches = [(a.numpy(), b.numpy()) for a, b in make()]
    assert [len(b) for _, b in batches] == [6, 6, 6, 2]
    rows = np.concatenate([a for a, _ in batches])
    assert sorted(rows[:, 0].tolist()) == x[:, 0].tolist() and not np.array_equal(rows, x)
    assert all(np.array_equal(a[:, 0] * 2 / 3, b) for a, b in batches), "rows of x and y stay paired"

    @rt.function
    def weighted(ds):
        total = rt.constant(0.0)
        k = rt.constant(1.0)
        for a, b in ds:
            total += k * (rt.reduce_sum(a) + rt.cast(rt.reduce_sum(b), rt.float32))
            k += 1.0
        return total

    want = sum((i + 1) * (float(a.sum()) + float(b.sum())) for i, (a, b) in enumerate(batches))
    assert float(weighted(make())) == want
    concrete = weighted.get_concrete_function(make())
    feeds = [t._value for t in make()._components()]
    assert float(run_graph(concrete.graph, feeds)[0]) == want
    assert "ShuffleIndices" in {op.type for op in concrete.graph.get_operations()}


@rt.function
def _batch_total(ds):
    total = rt.constant(0.0)
    for b in ds:
        total += rt.reduce_sum(b)
    return total


def test_a_pure_map_keeps_the_indices_an_impure_one_the_elements():
    graph_ops = lambda ds: {op.type for op in all_operations(rt.function(fingerprint.python_function)  # noqa: E731
                                                             .get_concrete_function(ds).graph)}
    pure = rt.data.Dataset.range(20).map(lambda x: x * 3).shuffle(20, seed=1).batch(6)
    assert "ShuffleIndices" in graph_ops(pure)
    assert "ShuffleIndices" not in graph_ops(rt.data.Dataset.range(20).map(impure).shuffle(20, seed=1).batch(6))
    # a row-wise function runs once on the gathered batch; another one on each row, written into TensorLists
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    mean = np.full(4, 3.0, np.float32)
    for fn, lists in ((lambda r: (r - mean) / 2.0, False), (lambda r: r / rt.reduce_max(r), True)):
        ds = rt.data.Dataset.from_tensor_slices(x).map(fn).shuffle(10, seed=3).batch(4)
        ops = graph_ops(ds)
        assert ("TensorListSetItem" in ops) == lists and "ShuffleIndices" in ops
        rows = np.concatenate([b.numpy() for b in ds])
        assert np.allclose(np.sort(rows, axis=0), np.sort(np.stack([fn(rt.constant(r)).numpy() for r in x]), axis=0))
        assert np.isclose(float(_batch_total(ds)), rows.sum())
    seeds = iter(range(100, 200))
    noisy = rt.data.Dataset.range(6).map(lambda x: x + rt.cast(rt.random.uniform([], 0, 3, seed=next(seeds)),
                                                                rt.int64))
    assert not noisy._indexed, "random numbers are stateful: the function runs when its element is pulled"


def test_full_buffer_shuffle_is_uniform():
    counts: dict = {}
    for seed in range(2400):
        order = tuple(int(v) for v in rt.data.Dataset.range(4).shuffle(4, seed=seed, reshuffle_each_iteration=False))
        counts[order] = counts.get(order, 0) + 1
    assert len(counts) == 24 and min(counts.values()) > 60 and max(counts.values()) < 140, counts


def test_a_pass_cut_short_then_repeated():
    for make in (lambda: rt.data.Dataset.range(10).shuffle(10, seed=1).take(3).repeat(2),
                 lambda: rt.data.Dataset.range(10).map(impure).shuffle(4, seed=1).take(3).repeat(3),
                 lambda: rt.data.Dataset.range(10).map(lambda x: x * 2).shuffle(4, seed=1).take(3).repeat(3),
                 lambda: rt.data.Dataset.range(6).shuffle(3, seed=2).repeat(2).take(9)):
        order = [int(x) for x in make()]
        assert int(fingerprint(make())) == _fingerprint([[np.array(v)] for v in order])


# ---------------------------------------------------------------------------
# Functions over datasets: AutoGraph in map bodies, break, datasets made inside, iterators.

def collatz_steps(x):
    steps = rt.constant(0, rt.int64)
    while x > 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    return steps


def test_map_functions_are_converted_by_autograph():
    ds = rt.data.Dataset.range(1, 8).map(collatz_steps)
    want = [0, 1, 7, 2, 5, 8, 16]
    assert [int(x) for x in ds] == want
    assert int(fingerprint(ds)) == _fingerprint([[np.array(v)] for v in want])


def first_above(ds, limit):
    found = rt.constant(-1, rt.int64)
    for x in ds:
        if x > limit:
            found = x
            break
    return found


def test_break_stops_the_graph_loop():
    f = rt.function(first_above)
    ds = rt.data.Dataset.range(100).map(lambda x: x * 3)
    assert int(f(ds, rt.constant(20, rt.int64))) == 21
    assert int(f(ds, rt.constant(1000, rt.int64))) == -1


def windowed_sum(x):
    total = rt.constant(0.0)
    for row in rt.data.Dataset.from_tensor_slices(x).map(lambda r: r * 2.0).batch(2):
        total += rt.reduce_sum(row)
    return total


def test_dataset_made_from_argument_tensors_inside_a_function():
    f = rt.function(windowed_sum)
    x = rt.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
    assert float(f(x)) == float(windowed_sum(x)) == 132.0
    assert float(f(rt.constant(np.ones((3, 2), np.float32)))) == 12.0


def two_and_rest(ds):
    it = iter(ds)
    first = next(it)
    second = next(it)
    rest = rt.constant(0, rt.int64)
    for x in it:
        rest += x
    return first, second, rest


def test_iter_and_next_inside_a_function():
    f = rt.function(two_and_rest)
    got = [int(t) for t in f(rt.data.Dataset.range(10, 15))]
    assert got == [10, 11, 12 + 13 + 14]


def batch_sums(ds):
    it = iter(ds)
    first = next(it)
    second = next(it)
    rest = rt.constant(0, rt.int64)
    for x in it:
        rest += rt.reduce_sum(x)
    return rt.reduce_sum(first), rt.reduce_sum(second), rest


@pytest.mark.parametrize("make", [
    lambda: rt.data.Dataset.range(20).shuffle(20, seed=2).batch(3),
    lambda: rt.data.Dataset.range(20).shuffle(5, seed=2).repeat(2).batch(3),
    lambda: rt.data.Dataset.range(6).flat_map(lambda x: rt.data.Dataset.range(x)).batch(2),
    lambda: rt.data.Dataset.range(9).map(lambda x: x * 2).shuffle(9, seed=1).batch(4),
    lambda: rt.data.Dataset.range(9).map(impure).shuffle(4, seed=1).batch(4),
])
def test_next_then_a_loop_over_the_rest(make):
    sums = [int(np.sum(b.numpy())) for b in make()]
    assert [int(t) for t in rt.function(batch_sums)(make())] == [sums[0], sums[1], sum(sums[2:])]


def consume(iterator):
    return next(iterator) * 10


def test_iterator_argument_consumes_one_element_per_call():
    f = rt.function(consume)
    iterator = iter(rt.data.Dataset.from_tensor_slices([1, 2, 3]).map(lambda x: x + 1))
    assert [int(f(iterator)) for _ in range(3)] == [20, 30, 40]
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(rt.errors.OutOfRangeError):
        f(iterator)
    with pytest.raises(StopIteration):
        next(iterator)


GLOBAL_DS = rt.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.int64)).repeat(2)


def over_global():
    total = rt.constant(0, rt.int64)
    for x in GLOBAL_DS:
        total += x
    return total


def test_captured_dataset_is_a_graph_loop():
    f = rt.function(over_global)
    assert int(f()) == 20
    assert "While" in {op.type for op in f.get_concrete_function().graph.get_operations()}


# ---------------------------------------------------------------------------
# from_generator.

def test_from_generator_structures_and_checks():
    ds = rt.data.Dataset.from_generator(lambda: ((i, [i] * 2) for i in range(3)), (rt.int32, rt.float32),
                                        ((), (2,)))
    assert [(int(a), b.numpy().tolist()) for a, b in ds] == [(0, [0.0, 0.0]), (1, [1.0, 1.0]), (2, [2.0, 2.0])]
    assert ds.element_spec[1].shape == (2,)
    sig = rt.data.Dataset.from_generator(lambda: iter([{"a": 1}]),
                                         output_signature={"a": rt.TensorSpec([], rt.int64)})
    assert [int(e["a"]) for e in sig] == [1]
    wrong = rt.data.Dataset.from_generator(lambda: iter([[1, 2, 3]]), rt.int32, [2])
    with pytest.raises(rt.errors.InvalidArgumentError, match="declared shape"):
        list(wrong)
    with pytest.raises(rt.errors.InvalidArgumentError, match="declared shape"):
        fingerprint(wrong)


def _flaky(n, fail_at):
    def gen():
        for i in range(n):
            if i == fail_at:
                raise KeyError(f"element {i} is missing")
            yield i
    return gen


def test_generator_error_reaches_the_caller_and_the_next_call_works():
    f = rt.function(fingerprint.python_function)
    bad = rt.data.Dataset.from_generator(_flaky(5, 3), rt.int64, ())
    good = rt.data.Dataset.from_generator(_flaky(5, 99), rt.int64, ())
    with pytest.raises(rt.errors.UnknownError, match="element 3 is missing") as info:
        f(bad)
    assert isinstance(info.value.original, KeyError)
    assert "in gen" in str(info.value), "the message holds the generator's traceback"
    assert int(f(good)) == _fingerprint([[np.array(i)] for i in range(5)])
    with pytest.raises(rt.errors.UnknownError, match="element 3 is missing"):
        list(bad)


# ---------------------------------------------------------------------------
# Bad input.

def test_clear_errors():
    with pytest.raises(ValueError, match="batch_size"):
        rt.data.Dataset.range(3).batch(0)
    with pytest.raises(ValueError, match="step"):
        rt.data.Dataset.range(0, 5, 0)
    with pytest.raises(ValueError, match="scalar"):
        rt.data.Dataset.from_tensor_slices(rt.constant(1))
    with pytest.raises(ValueError, match="different first dimensions"):
        rt.data.Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match="scalar bool"):
        rt.data.Dataset.range(3).filter(lambda x: x)
    with pytest.raises(ValueError, match="positive"):
        rt.data.Dataset.range(3).shuffle(0)
    with pytest.raises(TypeError, match="output_types"):
        rt.data.Dataset.from_generator(lambda: iter([]))
    with pytest.raises(rt.errors.InvalidArgumentError, match="different shapes"):
        list(rt.data.Dataset.from_generator(lambda: iter([[1], [1, 2]]), rt.int32).batch(2))


def unconverted_loop(ds):
    total = 0
    for x in ds:
        total += x
    return total


def test_plain_python_loop_over_a_dataset_in_a_graph_is_an_error_not_a_hang():
    f = rt.function(unconverted_loop, autograph=False)
    with pytest.raises(TypeError, match="cannot be iterated with plain Python"):
        f(rt.data.Dataset.range(3))


def test_a_dataset_loop_relaxes_a_state_shape_as_tf_data_does():
    """Elements of unknown shape (from_generator without shapes) make ``loss += ...`` change the loss's
    shape: tf.data relaxes it and traces again; any other tensor loop raises."""
    @rt.function
    def train(dataset):
        loss = rt.constant(0)
        for x, y in dataset:
            loss += rt.abs(y - x)
        return loss

    ds = rt.data.Dataset.from_generator(lambda: [(1, 3)] * 4, (rt.int32, rt.int32))
    assert train(ds).numpy() == 8
    graph = train.get_concrete_function(ds).graph
    assert graph.outputs[0].shape.rank is None

    @rt.function
    def grows(n):
        v = rt.constant(0)
        for _ in rt.range(n):
            v = rt.reshape(v, [-1])
        return v

    with pytest.raises(ValueError, match="'v' has shape"):
        grows(rt.constant(3))


# ---------------------------------------------------------------------------
# zip and enumerate (tf.data's), eagerly and as one graph loop.

def _weighted_sum(ds):
    total = rt.constant(0, rt.int64)
    for i, (a, b) in ds:
        total += i * (a + b["v"])
    return total


def test_zip_and_enumerate_match_eagerly_and_in_a_function():
    a = rt.data.Dataset.range(5).shuffle(5, seed=2)
    b = rt.data.Dataset.from_tensor_slices({"v": np.array([10, 20, 30], np.int64)})
    ds = rt.data.Dataset.zip((a, b)).enumerate(start=1).repeat(2)
    rows = [(int(i), int(x), int(y["v"])) for i, (x, y) in ds]
    assert len(rows) == 6 and [r[0] for r in rows] == [1, 2, 3, 1, 2, 3]
    assert [r[2] for r in rows] == [10, 20, 30] * 2, "zip ends with its shortest input"
    assert int(ds.cardinality()) == 6
    traced = rt.function(_weighted_sum)
    fresh = rt.data.Dataset.zip((rt.data.Dataset.range(5).shuffle(5, seed=2), b)).enumerate(start=1).repeat(2)
    eager = sum(i * (x + y) for i, x, y in [(int(i), int(x), int(y["v"])) for i, (x, y) in fresh])
    fresh = rt.data.Dataset.zip((rt.data.Dataset.range(5).shuffle(5, seed=2), b)).enumerate(start=1).repeat(2)
    assert int(traced(fresh)) == eager


def test_zip_forms_and_errors():
    x, y = rt.data.Dataset.range(3), rt.data.Dataset.range(10, 12)
    assert [(int(p), int(q)) for p, q in rt.data.Dataset.zip(x, y)] == [(0, 10), (1, 11)]
    assert [(int(p), int(q)) for p, q in rt.data.Dataset.zip(datasets=(x, y))] == [(0, 10), (1, 11)]
    assert int(rt.data.Dataset.zip((x, y.repeat())).cardinality()) == 3
    assert [int(i) for i, _ in x.enumerate()] == [0, 1, 2]
    with pytest.raises(TypeError, match="structure of datasets"):
        rt.data.Dataset.zip((x, [1, 2]))


# ---------------------------------------------------------------------------
# Dataset.reduce: eagerly (one traced loop), inside a Function, against tf.data.

REDUCTIONS = {
    "sum": (lambda D, M: D.range(5), lambda M: M.constant(0, M.int64), lambda s, x: s + x),
    "tuple_state": (lambda D, M: D.from_tensor_slices((_arange(4), _arange(4) * 3)),
                    lambda M: (M.constant(0, M.int64), M.constant(1, M.int64)),
                    lambda s, x: (s[0] + x[0] * x[1], s[1] * 2)),
    "batches": (lambda D, M: D.range(10).batch(3), lambda M: M.constant(0, M.int64),
                lambda s, x: s * 10 + M_reduce_sum(x)),
    "empty": (lambda D, M: D.range(0), lambda M: M.constant(7, M.int64), lambda s, x: s + x),
    "dict_state": (lambda D, M: D.range(1, 5), lambda M: {"n": M.constant(0, M.int64), "p": M.constant(1, M.int64)},
                   lambda s, x: {"n": s["n"] + 1, "p": s["p"] * x}),
}


def M_reduce_sum(x):
    return rt.reduce_sum(x) if isinstance(x, rt.Tensor) else _lib(None).reduce_sum(x)


def _values(structure):
    leaves = nest.flatten(structure) if isinstance(structure, (tuple, dict)) else [structure]
    return [int(np.asarray(t.numpy())) for t in leaves]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduce_eagerly_and_in_a_function(name):
    data, initial, fn = REDUCTIONS[name]
    ds = data(rt.data.Dataset, rt)
    eager = _values(ds.reduce(initial(rt), fn))
    traced = rt.function(lambda d: d.reduce(initial(rt), fn))
    assert _values(traced(ds)) == eager
    python = initial(rt)
    for x in ds:
        python = fn(python, x)
    assert _values(python) == eager


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduce_matches_tf_data(name, tf):
    data, initial, fn = REDUCTIONS[name]
    want = data(tf.data.Dataset, tf).reduce(initial(tf), fn)
    got = data(rt.data.Dataset, rt).reduce(initial(rt), fn)
    assert _values(got) == [int(np.asarray(v)) for v in tf.nest.flatten(want)]


def test_reduce_relaxes_a_growing_state_and_checks_it():
    ds = rt.data.Dataset.range(4)
    out = ds.reduce(rt.zeros([0], rt.int64), lambda s, x: rt.concat([s, [x * 2]], 0))
    assert out.numpy().tolist() == [0, 2, 4, 6]
    with pytest.raises(TypeError, match="float32 state"):
        ds.reduce(rt.constant(0, rt.int64), lambda s, x: rt.cast(s + x, rt.float32))
    with pytest.raises(ValueError, match="structure"):
        ds.reduce((rt.constant(0, rt.int64), rt.constant(0, rt.int64)), lambda s, x: s[0] + x)


def test_as_numpy_iterator_keeps_the_structure():
    ds = rt.data.Dataset.from_tensor_slices({"a": _arange(2), "b": (_arange(4).reshape(2, 2), _arange(2) * 1.5)})
    got = list(ds.as_numpy_iterator())
    assert isinstance(got[1]["b"][1], np.floating) and got[1]["b"][1] == 1.5
    assert got[0]["b"][0].tolist() == [0, 1] and got[1]["a"] == 1


def test_new_transformations_check_their_arguments():
    D = rt.data.Dataset
    with pytest.raises(rt.errors.InvalidArgumentError, match="index"):
        D.range(5).shard(2, 2)
    with pytest.raises(rt.errors.InvalidArgumentError, match="num_shards"):
        D.range(5).shard(0, 0)
    with pytest.raises(ValueError, match="scalar components"):
        D.range(5).unbatch()
    with pytest.raises(TypeError, match="incompatible dtypes"):
        D.range(3).concatenate(D.from_tensor_slices([1.0, 2.0]))
    with pytest.raises(TypeError, match="must return an rt.data.Dataset"):
        D.range(3).flat_map(lambda x: x + 1)
    with pytest.raises(ValueError, match="cycle_length"):
        D.range(3).interleave(lambda x: D.range(x), cycle_length=0)
    with pytest.raises(ValueError, match="padded shape"):
        D.range(3).map(lambda x: rt.fill([x], x)).padded_batch(2, padded_shapes=[2, 2])
    with pytest.raises(rt.errors.InvalidArgumentError, match="larger than its padded shape"):
        list(D.range(5).map(lambda x: rt.fill([x], x)).padded_batch(2, padded_shapes=[3]))
    with pytest.raises(ValueError, match="new_state, output"):
        D.range(3).scan(rt.constant(0, rt.int64), lambda s, x: s + x)
    assert [int(x) for x in D.range(4).apply(lambda d: d.skip(2))] == [2, 3]
    assert rt.data.experimental.AUTOTUNE == rt.data.AUTOTUNE == -1
    assert (rt.data.INFINITE_CARDINALITY, rt.data.UNKNOWN_CARDINALITY) == (-1, -2)


@pytest.mark.parametrize("args", [(3,), (3, 1), (3, 1, 2), (3, 1, 2, True), (2, 3), (2, 3, 1, True), (4, 2, 1, True)])
def test_window_matches_tf_data(args, tf):
    ours, theirs = rt.data.Dataset.range(7).window(*args), tf.data.Dataset.range(7).window(*args)
    assert int(ours.cardinality()) == int(theirs.cardinality())
    assert [[int(v) for v in w] for w in ours] == [[int(v) for v in w] for w in theirs]
    assert repr(ours.element_spec).replace("rt.", "tf.") == repr(theirs.element_spec)


def test_window_elements_are_datasets_everywhere():
    ds = rt.data.Dataset.range(5).window(2)
    assert all(isinstance(w, rt.data.Dataset) for w in ds)
    with pytest.raises(TypeError, match="flat_map"):
        ds.batch(2)
    with pytest.raises(TypeError, match="datasets"):
        list(ds.as_numpy_iterator())


def test_reduce_with_functions_run_eagerly_loops_in_python():
    """Under run_functions_eagerly the reduction's own Function would run its Python without a graph: the
    reduction then loops over the elements eagerly (it raised AttributeError)."""
    ds = rt.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(6, 2)).batch(4)
    want = ds.reduce(rt.constant(0.0), lambda acc, xb: acc + rt.reduce_sum(xb)).numpy()
    rt.config.run_functions_eagerly(True)
    try:
        got = ds.reduce(rt.constant(0.0), lambda acc, xb: acc + rt.reduce_sum(xb)).numpy()
        pairs = rt.data.Dataset.range(4).map(lambda i: (i, i * 2))
        total = pairs.reduce((np.int64(0), np.int64(0)), lambda s, e: (s[0] + e[0], s[1] + e[1]))
    finally:
        rt.config.run_functions_eagerly(False)
    assert got == want == 66.0 and [int(t.numpy()) for t in total] == [6, 12]
