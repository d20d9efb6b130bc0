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

P = 1000000007


def _arange(n, dtype=np.int64):
    return np.arange(n, dtype=dtype)


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
