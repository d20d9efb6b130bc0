"""Datasets, py_function and from_generator in built extension modules.

One module is built: a Function looping over a dataset, with one built signature per
transformation (and a pipeline combining them). Each runs native code with no Python callback
(the build report says so), for datasets of any size, with the results eager iteration gives.
``from_generator`` and ``py_function`` call back into Python on every element / call.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import import_built

import runtime as rt

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

SOURCE = '''
import numpy as np
import runtime as rt

P = 1000000007


@rt.function
def fingerprint(ds):
    h = rt.constant(0, rt.int64)
    for x in ds:
        x = rt.cast(x, rt.int64)
        h = (h * 131 + rt.floormod(rt.reduce_sum(x), P) + 7 * rt.cast(rt.size(x), rt.int64)) % P
    return h


@rt.function
def flat_fingerprint(ds):
    h = rt.constant(0, rt.int64)
    for element in ds:
        for part in rt.nest.flatten(element):
            part = rt.cast(part, rt.int64)
            h = (h * 131 + rt.floormod(rt.reduce_sum(part), P) + 7 * rt.cast(rt.size(part), rt.int64)) % P
    return h


@rt.function
def reduced(ds):
    return ds.reduce(rt.constant(1, rt.int64), lambda s, x: (s * 3 + rt.reduce_sum(x)) % P)


@rt.function
def weighted(ds):
    total = rt.constant(0.0)
    for x, w in ds:
        total += rt.reduce_sum(x * w)
    return total


def odd(x):
    return x * 2 + 1


def keep(x):
    return x % 3 != 0


def square(x):
    return x * x


def tens(s, x):
    return s * 10 + x


def pipelines(n):
    data = np.arange(n, dtype=np.int64)
    base = rt.data.Dataset.from_tensor_slices(data)
    return {
        "from_tensors": rt.data.Dataset.from_tensors(np.full(3, n, np.int64)),
        "from_tensor_slices": base,
        "range": rt.data.Dataset.range(1, n, 2),
        "map": base.map(odd),
        "filter": base.filter(keep),
        "batch": base.batch(3),
        "batch_drop_remainder": base.batch(3, drop_remainder=True),
        "batch_pulled_drop_remainder": base.map(odd).batch(3, drop_remainder=True),
        "shuffle": base.shuffle(4, seed=3),
        "skip_take": base.skip(2).take(4),
        "repeat_prefetch": base.repeat(2).prefetch(1),
        "combined": rt.data.Dataset.range(n).map(square).filter(keep).shuffle(3, seed=1).batch(2).repeat(2)
                    .skip(1).take(5),
        # shuffles: a permutation of the pass, carried under repeat, a ring of indices, a ring of elements
        "shuffle_batch": base.shuffle(n + 1, seed=5).batch(4),
        "shuffle_repeat_batch": base.shuffle(5, seed=2).repeat(3).batch(4),
        "shuffle_batch_repeat": base.shuffle(n + 1, seed=2).batch(3).repeat(2),
        "repeat_shuffle": base.repeat(2).shuffle(6, seed=7),
        "map_shuffle_batch": base.map(odd).shuffle(4, seed=8).batch(3),
        "shuffle_take_repeat": base.shuffle(6, seed=9).take(3).repeat(2),
        # batches gathered from index stages, rows written into lists
        "filter_batch": base.filter(keep).batch(3),
        "shard_batch": base.shard(3, 1).batch(2),
        "skip_batch_drop": base.skip(1).batch(2, drop_remainder=True),
        "tensors_repeat_batch": rt.data.Dataset.from_tensors(np.arange(2) + n).repeat(n).batch(3),
        # the other transformations
        "unbatch": base.batch(3).map(odd).unbatch(),
        "padded_batch": rt.data.Dataset.range(n % 6).map(lambda x: rt.fill(rt.stack([x]), x)).padded_batch(2),
        "padded_batch_shapes": rt.data.Dataset.range(n % 6).map(lambda x: rt.fill(rt.stack([x]), x))
                               .padded_batch(2, padded_shapes=[8], padding_values=rt.constant(-1, rt.int64)),
        "cache_repeat": base.map(square).cache().repeat(3),
        "cache_take_repeat": base.cache().take(2).repeat(2),
        "concatenate": base.concatenate(rt.data.Dataset.range(3)).batch(4),
        "flat_map": rt.data.Dataset.range(n % 7).flat_map(lambda x: rt.data.Dataset.range(x)),
        "flat_map_shuffle_repeat": rt.data.Dataset.range(n % 5).flat_map(
            lambda x: rt.data.Dataset.range(x).shuffle(3, seed=4)).repeat(2),
        "interleave": rt.data.Dataset.range(n % 6).interleave(lambda x: rt.data.Dataset.range(x, 2 * x),
                                                              cycle_length=3, block_length=2),
        "take_while": base.take_while(lambda x: x < 5),
        "scan": base.scan(rt.constant(0, rt.int64), lambda s, x: (s + x, s * 2)),
        "window": base.window(3, shift=2).flat_map(lambda w: w.batch(3)),
        "window_reduce": rt.data.Dataset.range(n).window(2, 1, 3, True).map(
            lambda w: w.reduce(rt.constant(0, rt.int64), tens)),
    }


def structured(n):
    data = np.arange(n, dtype=np.int64)
    return {
        "slices_dict_shuffle_batch": rt.data.Dataset.from_tensor_slices({"a": data, "b": data.reshape(-1, 1) * 2})
                                     .shuffle(4, seed=1).batch(3),
        "zip_unbatch": rt.data.Dataset.zip((rt.data.Dataset.range(n).batch(2), rt.data.Dataset.range(n).batch(2)))
                       .unbatch(),
        "enumerate_shard": rt.data.Dataset.from_tensor_slices(data).enumerate().shard(2, 0),
        "zip_enumerate_batch": rt.data.Dataset.zip((rt.data.Dataset.from_tensor_slices(data),
                                                    rt.data.Dataset.from_tensor_slices(data).map(square)))
                               .enumerate(3).batch(4),
    }


REDUCED = ["shuffle_batch", "map_shuffle_batch", "shuffle_repeat_batch", "unbatch", "cache_repeat", "flat_map",
           "window_reduce"]
for _name, _ds in pipelines(10).items():
    fingerprint.get_concrete_function(_ds)
    if _name in REDUCED:
        reduced.get_concrete_function(_ds)
for _ds in structured(10).values():
    flat_fingerprint.get_concrete_function(_ds)


def pairs(n):
    x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    return rt.data.Dataset.from_tensor_slices((x, x * 0.5)).batch(2)


weighted.get_concrete_function(pairs(3))


def countdown(n, fail_at=-1):
    for i in range(n, 0, -1):
        if i == fail_at:
            raise RuntimeError(f"countdown broke at {i}")
        yield i


@rt.function
def generated(ds):
    total = rt.constant(0, rt.int64)
    for x in ds:
        total += x
    return total


def from_countdown(n, fail_at=-1):
    return rt.data.Dataset.from_generator(lambda: countdown(n, fail_at), rt.int64, ())


generated.get_concrete_function(from_countdown(3))


@rt.function
def generated_batches(ds):
    total = rt.constant(0, rt.int64)
    for x in ds:
        total = total * 10 + rt.reduce_sum(x)
    return total


def countdown_pipeline(n):
    return from_countdown(n).repeat(2).skip(1).batch(2).take(3)


generated_batches.get_concrete_function(countdown_pipeline(3))

calls = []


def scale(x):
    calls.append(x.numpy().tolist())
    if float(rt.reduce_sum(x)) < 0:
        raise ValueError("negative total")
    return x * 2.5


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def with_py(x):
    return rt.py_function(scale, [x], rt.float32, output_shapes=[None]) + 1.0
'''


def _build(root: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "-v", "--strict"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("data_native")
    (root / "rt_data_programs.py").write_text(SOURCE)
    report = _build(root)
    module = import_built(root, "rt_data_programs")
    return module, report


def _eager_fingerprint(ds) -> int:
    h = 0
    for x in ds:
        x = np.asarray(x.numpy()).astype(np.int64)
        h = (h * 131 + int(x.sum()) % 1000000007 + 7 * x.size) % 1000000007
    return h


def test_report_names_callbacks_only_for_generators_and_py_function(built):
    """In-memory pipelines run without Python. A function whose pipeline reads a generator (a ``variant``
    input) also runs its TensorList ops (a batch's rows) through Python: native lists need a function
    whose only variants are lists."""
    _, report = built
    through_python = set()
    for line in report.splitlines():
        match = re.search(r"through Python: (.*)$", line)
        if match:
            assert line.lstrip().startswith(("generated(", "generated_batches(", "with_py(")), line
            ops = {part.split(" x")[0] for part in match.group(1).split(", ")}
            if not line.lstrip().startswith("generated_batches("):
                assert not any(op.startswith("TensorList") for op in ops), line
            through_python |= ops
    lists = {op for op in through_python if op.startswith("TensorList")}
    assert through_python - lists == {"GeneratorInit", "GeneratorNext", "EagerPyFunc"}, report


PIPELINES = ["from_tensors", "from_tensor_slices", "range", "map", "filter", "batch", "batch_drop_remainder",
             "batch_pulled_drop_remainder", "shuffle", "skip_take", "repeat_prefetch", "combined", "shuffle_batch",
             "shuffle_repeat_batch", "shuffle_batch_repeat", "repeat_shuffle", "map_shuffle_batch",
             "shuffle_take_repeat", "filter_batch", "shard_batch", "skip_batch_drop",
             "tensors_repeat_batch", "unbatch", "padded_batch", "padded_batch_shapes", "cache_repeat",
             "cache_take_repeat", "concatenate", "flat_map", "flat_map_shuffle_repeat", "interleave", "take_while",
             "scan", "window", "window_reduce"]


@pytest.mark.parametrize("name", PIPELINES)
def test_dataset_loop_runs_natively(built, name):
    module, _ = built
    for n in (10, 0, 1, 7, 50):
        ds = module.pipelines(n)[name]
        concrete = module.fingerprint.get_concrete_function(ds)
        assert concrete.native, f"{name}: a dataset of {n} elements did not find the built signature"
        # a fresh, identical pipeline: a seeded shuffle reshuffles on each pass of one dataset, as in tf.data
        assert int(module.fingerprint(ds)) == _eager_fingerprint(module.pipelines(n)[name]), (name, n)
        if name in module.REDUCED:
            assert module.reduced.get_concrete_function(ds).native
            want = 1
            for x in module.pipelines(n)[name]:
                want = (want * 3 + int(np.sum(x.numpy()))) % 1000000007
            assert int(module.reduced(module.pipelines(n)[name])) == want, (name, n)
    assert module.fingerprint.experimental_get_tracing_count() == 0, "nothing retraced"
    assert module.reduced.experimental_get_tracing_count() == 0, "nothing retraced"


@pytest.mark.parametrize("name", ["slices_dict_shuffle_batch", "zip_unbatch", "enumerate_shard", "zip_enumerate_batch"])
def test_structured_elements_run_natively(built, name):
    module, _ = built
    for n in (10, 0, 3, 9):
        ds = module.structured(n)[name]
        assert module.flat_fingerprint.get_concrete_function(ds).native, (name, n)
        h = 0
        for element in module.structured(n)[name]:
            for part in rt.nest.flatten(element):
                part = np.asarray(part.numpy()).astype(np.int64)
                h = (h * 131 + int(part.sum()) % 1000000007 + 7 * part.size) % 1000000007
        assert int(module.flat_fingerprint(ds)) == h, (name, n)


def test_tuple_elements_run_natively(built):
    module, _ = built
    for n in (3, 8, 1):
        ds = module.pairs(n)
        assert module.weighted.get_concrete_function(ds).native
        want = sum(float(np.sum(x.numpy() * w.numpy())) for x, w in ds)
        assert float(module.weighted(ds)) == pytest.approx(want)


def test_generator_error_reaches_the_caller_and_the_next_call_works(built):
    module, _ = built
    ds = module.from_countdown(5)
    assert module.generated.get_concrete_function(ds).native
    assert int(module.generated(ds)) == 15
    with pytest.raises(rt.errors.UnknownError, match="countdown broke at 2") as info:
        module.generated(module.from_countdown(5, fail_at=2))
    assert isinstance(info.value.original, RuntimeError)
    assert "in countdown" in str(info.value), "the generator's traceback is kept"
    assert int(module.generated(module.from_countdown(4))) == 10
    assert int(module.generated(module.from_countdown(0))) == 0


def test_generator_pipeline_runs_natively(built):
    module, _ = built
    for n in (3, 1, 0, 6):
        ds = module.countdown_pipeline(n)
        assert module.generated_batches.get_concrete_function(ds).native
        want = 0
        for x in ds:
            want = want * 10 + int(np.sum(x.numpy()))
        assert int(module.generated_batches(ds)) == want, n


def test_py_function_runs_on_every_native_call(built):
    module, _ = built
    concrete = module.with_py.get_concrete_function()
    assert concrete.native
    module.calls.clear()
    x = rt.constant([1.0, 2.0])
    np.testing.assert_allclose(module.with_py(x).numpy(), [3.5, 6.0])
    np.testing.assert_allclose(module.with_py(x).numpy(), [3.5, 6.0])
    assert module.calls == [[1.0, 2.0], [1.0, 2.0]]
    with pytest.raises(rt.errors.InvalidArgumentError, match="negative total") as info:
        module.with_py(rt.constant([-5.0]))
    assert isinstance(info.value.original, ValueError)
    np.testing.assert_allclose(module.with_py(rt.constant([4.0])).numpy(), [11.0])
