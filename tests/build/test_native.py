"""Built extension modules: native == generic executor == reference executor == eager.

One module of varied programs is built once (it takes a C compiler); hypothesis then
draws inputs of many shapes for the signatures with ``None`` dims. Other tests build
small modules for the import-time behaviour: the ``.py`` deleted, a stale build,
hostile string constants, prints at call time, threads, the GIL.
"""
from __future__ import annotations

import importlib
import io
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runtime as rt
from runtime import executor

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

PROGRAMS = '''
import sys
import runtime as rt

F = rt.TensorSpec([None], rt.float32)
M = rt.TensorSpec([None, None], rt.float32)
I = rt.TensorSpec([None], rt.int32)

@rt.function(input_signature=[F, F])
def chain(x, y):
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - y / (rt.abs(y) + 1.0)

@rt.function(input_signature=[M, F])
def broadcast(m, v):
    return rt.maximum(m * v, m - 1.0) + rt.sigmoid(v) * 0.5

@rt.function(input_signature=[M])
def reductions(m):
    return (rt.reduce_sum(m, axis=0) + rt.reduce_max(m, axis=0) * rt.reduce_mean(m) - rt.reduce_min(m, axis=0),
            rt.reduce_sum(m, axis=1, keepdims=True), rt.reduce_prod(rt.sign(m)))

@rt.function(input_signature=[I, I])
def integers(a, b):
    return a // (rt.abs(b) + 1) + a % 7 - rt.minimum(a, b) * 3, rt.cast(a, rt.float32) / 2.0

@rt.function(input_signature=[M, M])
def products(a, b):
    return rt.matmul(a, rt.transpose(b)) + 1.0

@rt.function(input_signature=[F])
def control(x):
    total = rt.constant(0.0)
    i = 0
    while i < rt.size(x):
        if x[i] > 0:
            total += x[i] * 2.0
        else:
            total -= 1.0
        i += 1
    return total

@rt.function(input_signature=[F, I])
def indexing(x, idx):
    n = rt.size(x)
    safe = rt.floormod(idx, rt.maximum(n, 1))
    return rt.gather(x, safe), x[1:-1], rt.concat([x, x * 2.0], axis=0), rt.stack([x, -x]), rt.reshape(x, [-1, 1])

@rt.function(input_signature=[F])
def accumulate(x):
    ta = rt.TensorArray(rt.float32, size=rt.size(x))
    s = rt.constant(0.0)
    for i in rt.range(rt.size(x)):
        s += x[i]
        ta = ta.write(i, s)
    return ta.stack()

@rt.function(input_signature=[rt.TensorSpec([None, None, None], rt.float32), rt.TensorSpec([None, None], rt.float32)])
def stacked_states(xs, h):
    # lists kept in the order of their transposed stacks (lowering/lists.py): one written on even steps only
    steps = rt.shape(xs)[1]
    seq = rt.transpose(xs, [1, 0, 2])
    states = rt.TensorArray(rt.float32, size=steps)
    moved = rt.TensorArray(rt.float32, size=steps)
    for t in rt.range(steps):
        h = rt.tanh(h * 0.5 + seq[t])
        states = states.write(t, h)
        if t % 2 == 0:
            moved = moved.write(t, h * 2.0)
    return rt.transpose(states.stack(), [1, 0, 2]), rt.transpose(moved.stack(), [1, 2, 0]), states.size()

@rt.function(input_signature=[rt.TensorSpec([64, 30, 64], rt.float32), rt.TensorSpec([64, 64], rt.float32),
                              rt.TensorSpec([64, 64], rt.float32)])
def recurrence_states(xs, h, w):
    # the lists' writes run in the product's parts (lowering/epilogue.py): 64x64 @ 64x64 products back to back
    # split over the threads, each storing its rows of the state to both lists
    steps = rt.shape(xs)[1]
    seq = rt.transpose(xs, [1, 0, 2])
    states = rt.TensorArray(rt.float32, size=steps)
    doubled = rt.TensorArray(rt.float32, size=steps)
    for t in rt.range(steps):
        h = rt.tanh(h @ w + seq[t])
        states = states.write(t, h)
        doubled = doubled.write(t, h * 2.0)
    return rt.transpose(states.stack(), [1, 0, 2]), doubled.stack(), h

recurrence_states_any = rt.function(recurrence_states.python_function, input_signature=[
    rt.TensorSpec([None, None, 64], rt.float32), rt.TensorSpec([None, 64], rt.float32),
    rt.TensorSpec([64, 64], rt.float32)])

@rt.function(input_signature=[rt.TensorSpec([], rt.string)])
def strings(s):
    return s + rt.constant("!")

@rt.function(input_signature=[F, F])
def branches(a, b):
    x, y = a, b
    for _ in range(3):
        x = rt.tanh(x) * 1.5 + rt.reduce_sum(x) * 1e-3
        y = rt.sin(y) - rt.reduce_max(y) * 1e-3
    return x, y, rt.reduce_sum(x) + rt.reduce_sum(y)

@rt.function(input_signature=[F])
def same_input_branches(a):
    x, y = a, a * 0.5 - 1.0
    for _ in range(3):
        x = rt.tanh(x) * 1.5 + rt.reduce_sum(x) * 1e-3
        y = rt.sin(y) - rt.reduce_max(y) * 1e-3
    return x * 2.0, rt.reduce_sum(x) + rt.reduce_sum(y)

counter = rt.Variable(0)

@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def bump(by):
    print("tracing bump")
    counter.assign_add(by)
    rt.print("bumped", counter, output_stream=sys.stdout)
    return counter.read_value()

@rt.function(input_signature=[F])
def checked(x):
    rt.debugging.assert_greater(rt.reduce_min(x), -100.0, message="too small")
    return rt.gather(x, [0])

@rt.function
def polymorphic(x):
    return x * x + 1

polymorphic.get_concrete_function(rt.TensorSpec([3], rt.int32))

@rt.function(input_signature=[rt.TensorSpec([2000, 2000], rt.float32)])
def heavy(m):
    r = m
    for _ in range(3):
        r = rt.tanh(rt.matmul(r, m) * 0.001)
    return rt.reduce_sum(r)
'''


def _build(root: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "--strict", *args], cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _import(root: Path, name: str):
    sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    (root / "rt_native_programs.py").write_text(PROGRAMS)
    _build(root)
    module = _import(root, "rt_native_programs")
    assert module.__file__.endswith(".so"), module.__file__
    return module


def _arrays(value):
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [_arrays(v) for v in value]
    return value.numpy()


def _assert_same(a, b, exact=False):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y, exact)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
    if exact or a.dtype.kind not in "f":
        assert (a == b).all(), (a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def _four_ways(function, *args):
    """native, generic executor, reference executor, eager: all four results."""
    concrete = function.get_concrete_function(*args)
    assert concrete.native
    native = _arrays(concrete(*args))
    flat = [a._value for a in args]
    generic = executor.run_graph_generic(concrete.graph, flat)
    reference = executor.run_graph(concrete.graph, flat)
    rt.config.run_functions_eagerly(True)
    try:
        eager = _arrays(function(*args))
    finally:
        rt.config.run_functions_eagerly(False)
    packed = lambda results: _arrays(concrete._pack(results))  # noqa: E731
    return native, packed(generic), packed(reference), eager


def _check(function, *args):
    native, generic, reference, eager = _four_ways(function, *args)
    _assert_same(native, reference)
    _assert_same(generic, reference)
    _assert_same(eager, reference)


floats = st.floats(-4, 4, width=32, allow_nan=False)


def _vec(n, elements=floats, dtype=np.float32):
    return st.lists(elements, min_size=n, max_size=n).map(lambda v: rt.constant(np.array(v, dtype=dtype)))


HYP = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@HYP
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(_vec(n), _vec(n))))
def test_elementwise_chain(programs, xy):
    _check(programs.chain, *xy)


@HYP
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_broadcast_and_reductions(programs, rows, cols, data):
    m = rt.constant(np.array(data.draw(st.lists(floats, min_size=rows * cols, max_size=rows * cols)),
                             np.float32).reshape(rows, cols))
    v = data.draw(_vec(cols))
    _check(programs.broadcast, m, v)
    _check(programs.reductions, m)


@HYP
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(_vec(n, st.integers(-1000, 1000), np.int32),
                                                      _vec(n, st.integers(-1000, 1000), np.int32))))
def test_integer_ops(programs, ab):
    _check(programs.integers, *ab)


@HYP
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.data())
def test_matmul(programs, m, k, n, data):
    a = rt.constant(np.array(data.draw(st.lists(floats, min_size=m * k, max_size=m * k)), np.float32).reshape(m, k))
    b = rt.constant(np.array(data.draw(st.lists(floats, min_size=n * k, max_size=n * k)), np.float32).reshape(n, k))
    _check(programs.products, a, b)


@HYP
@given(st.integers(0, 12).flatmap(_vec))
def test_control_flow_and_tensor_array(programs, x):
    _check(programs.control, x)
    if x.shape[0]:
        _check(programs.accumulate, x)


@HYP
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.data())
def test_tensor_arrays_stacked_in_transposed_order(programs, batch, steps, units, data):
    xs = data.draw(_vec(batch * steps * units)).numpy().reshape(batch, steps, units)
    h = data.draw(_vec(batch * units)).numpy().reshape(batch, units)
    _check(programs.stacked_states, rt.constant(xs), rt.constant(h))


@pytest.mark.parametrize("batch, steps", [(64, 30), (64, 1), (7, 5), (130, 3)])
def test_tensor_array_writes_in_the_products_parts(programs, batch, steps):
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((batch, steps, 64)).astype(np.float32)
    h = rng.standard_normal((batch, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) * 0.2).astype(np.float32)
    functions = [programs.recurrence_states_any] + ([programs.recurrence_states] if (batch, steps) == (64, 30) else [])
    for function in functions:
        _check(function, rt.constant(xs), rt.constant(h), rt.constant(w))
        transposed, doubled, last = (np.asarray(v) for v in function(xs, h, w))
        np.testing.assert_array_equal(transposed * 2.0, doubled.transpose(1, 0, 2))
        np.testing.assert_array_equal(doubled[-1], last * 2.0)


@HYP
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(_vec(n), _vec(3, st.integers(-50, 50), np.int32))))
def test_indexing(programs, args):
    _check(programs.indexing, *args)


@HYP
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(_vec(n), _vec(n))), st.sampled_from([1, 2]))
def test_independent_parts_run_concurrently_with_the_same_results(programs, xy, inter):
    rt.config.threading.set_inter_op_parallelism_threads(inter)
    try:
        _check(programs.branches, *xy)
        _check(programs.same_input_branches, xy[0])
    finally:
        rt.config.threading.set_inter_op_parallelism_threads(0)


def test_independent_parts_are_emitted_as_parallel_parts(programs):
    from transpiler.codegen import emit_function
    for function in (programs.branches, programs.same_input_branches):
        concrete = function.get_concrete_function()
        code, _, _ = emit_function(concrete.graph, "rt_fn_test")
        assert "rt_ctx_part(" in code and "case 1:" in code and "rt_ctx_join(" in code


@pytest.fixture(scope="module")
def unoptimized(tmp_path_factory):
    """The same programs built with every optional pass off (no fusion, no memory planning)."""
    root = tmp_path_factory.mktemp("unoptimized")
    (root / "rt_native_unoptimized.py").write_text(PROGRAMS)
    env = dict(os.environ, RT_PASSES="prune")
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "-v", "--strict"], cwd=PROJECT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fused" not in proc.stdout
    return _import(root, "rt_native_unoptimized")


@HYP
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(_vec(n), _vec(n))))
def test_switching_passes_off_gives_the_same_results(programs, unoptimized, xy):
    for name in ("chain", "branches", "control", "accumulate"):
        args = xy if name in ("chain", "branches") else xy[:1]
        _assert_same(_arrays(getattr(programs, name)(*args)), _arrays(getattr(unoptimized, name)(*args)))


def test_strings(programs):
    assert programs.strings(rt.constant("hi\n\"é")).numpy() == "hi\n\"é!".encode()


def test_shape_mismatch_is_an_invalid_argument_error(programs):
    with pytest.raises(rt.errors.InvalidArgumentError):
        programs.products(rt.ones([2, 3]), rt.ones([2, 4]))
    with pytest.raises(rt.errors.InvalidArgumentError, match="too small"):
        programs.checked(rt.constant([-1000.0, 1.0]))
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"GatherV2: .* is not in \[0, 0\)"):
        programs.checked(rt.zeros([0]))      # the min of nothing is inf (TF), so the assert passes


def test_python_print_runs_only_while_tracing(programs):
    assert programs.bump.experimental_get_tracing_count() == 0
    before = int(programs.counter.numpy())
    out = io.StringIO()
    with redirect_stdout(out):
        result = programs.bump(rt.constant(5))
    assert "tracing bump" not in out.getvalue()
    assert out.getvalue().strip() == f"bumped {before + 5}"
    assert int(result) == before + 5 == int(programs.counter.numpy())


def test_new_signature_retraces_once_on_the_generic_executor(programs):
    f = programs.polymorphic
    assert f.experimental_get_tracing_count() == 0
    assert [c.native for c in f.concrete_functions()] == [True]
    assert f(rt.constant([1, 2, 3])).numpy().tolist() == [2, 5, 10]
    assert f.experimental_get_tracing_count() == 0
    assert f(rt.constant([1.5, 2.0])).numpy().tolist() == [3.25, 5.0]
    assert f(rt.constant([0.5, 1.0])).numpy().tolist() == [1.25, 2.0]
    assert f.experimental_get_tracing_count() == 1
    assert [c.native for c in f.concrete_functions()] == [True, False]


def test_input_signature_is_enforced(programs):
    with pytest.raises(ValueError, match="input_signature"):
        programs.chain(rt.constant([1, 2]), rt.constant([1, 2]))


def test_threads_get_identical_results(programs):
    x = rt.constant(np.linspace(-3, 3, 50000, dtype=np.float32))
    expected = programs.chain(x, x).numpy()
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(programs.chain(x, x).numpy())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 80 and all((r == expected).all() for r in results)


def test_gil_is_released_while_native_code_runs(programs):
    m = rt.constant(np.full((2000, 2000), 0.5, np.float32))
    rt.config.threading.set_intra_op_parallelism_threads(1)
    try:
        programs.heavy(m)
        start = time.perf_counter()
        programs.heavy(m)
        alone = time.perf_counter() - start
        ticks = []
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks.append(time.perf_counter())
                time.sleep(0.001)
        spinner = threading.Thread(target=spin)
        spinner.start()
        time.sleep(0.01)
        begin = time.perf_counter()
        programs.heavy(m)
        end = time.perf_counter()
        stop.set()
        spinner.join()
    finally:
        rt.config.threading.set_intra_op_parallelism_threads(0)
    during = [t for t in ticks if begin < t < end]
    # with the GIL held, the spinner could not tick at all while heavy() runs
    assert alone > 0.02 and len(during) >= 3, (alone, len(during))


SMALL = '''
"""A module with hostile strings: quotes ' " \\\\ ''' + "'''" + ''' , newlines, */ and é."""
import sys
import runtime as rt

WEIRD = "q'\\"\\\\ */ \\n é {{x}} %s"

@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def shout(x):
    rt.print(WEIRD, x, output_stream=sys.stdout)
    return rt.constant(WEIRD) + rt.constant("!")

def helper():
    return "still here"
'''


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    (root / "rt_small_mod.py").write_text(SMALL)
    _build(root)
    return root


def test_hostile_string_constants(small):
    module = _import(small, "rt_small_mod")
    out = io.StringIO()
    with redirect_stdout(out):
        result = module.shout(rt.constant(3))
    assert out.getvalue() == module.WEIRD + " 3\n"
    assert result.numpy() == (module.WEIRD + "!").encode()
    assert module.shout.get_concrete_function().native
    assert "hostile" in module.__doc__


def test_imports_without_the_py_file(small, tmp_path):
    for path in small.iterdir():
        if path.suffix == ".so":
            shutil.copy(path, tmp_path / path.name)
    assert not (tmp_path / "rt_small_mod.py").exists()
    code = textwrap.dedent("""
        import io, contextlib, rt_small_mod, runtime as rt
        assert rt_small_mod.__file__.endswith('.so')
        assert rt_small_mod.helper() == 'still here'
        assert rt_small_mod.shout.get_concrete_function().native
        with contextlib.redirect_stdout(io.StringIO()):
            assert rt_small_mod.shout(rt.constant(1)).numpy().endswith(b'!')
        print(rt.autograph.to_code(rt_small_mod.shout).splitlines()[0])
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("def shout(x)")


def test_stale_build_warns(small, tmp_path):
    for path in small.iterdir():
        if path.is_file():
            shutil.copy(path, tmp_path / path.name)
    code = "import warnings; warnings.simplefilter('always'); import rt_small_mod"
    fresh = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert fresh.returncode == 0 and "stale" not in fresh.stderr, fresh.stderr
    (tmp_path / "rt_small_mod.py").write_text(SMALL + "\n# edited\n")
    stale = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert stale.returncode == 0, stale.stderr
    assert "RuntimeWarning" in stale.stderr and "stale" in stale.stderr and "rt_small_mod.py" in stale.stderr


def test_nm_shows_openmp(programs):
    path = programs.__file__
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    nm = subprocess.run(["nm", "-D", path], capture_output=True, text=True).stdout
    assert "libgomp" in ldd or "GOMP_" in nm, ldd + nm[:2000]
    assert "GOMP_parallel" in nm


def test_generated_code_is_dumped_with_rt_debug(tmp_path):
    (tmp_path / "rt_debug_mod.py").write_text(SMALL)
    env = dict(os.environ, RT_DEBUG="1")
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(tmp_path)], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout + proc.stderr
    kept = [line.split()[-1] for line in text.splitlines() if "kept" in line.lower() or "build dir" in line.lower()]
    assert kept, text
    kept_dir = Path(kept[-1].strip(".:"))
    try:
        assert kept_dir.exists(), text
        assert list(kept_dir.rglob("*.c")) and list(kept_dir.rglob("*_rt_native.h")), text
        loops = list(kept_dir.rglob("*.loops.txt"))
        assert loops and "function rt_fn_0(x: int32[]):" in loops[0].read_text(), text
    finally:
        shutil.rmtree(kept_dir, ignore_errors=True)


def test_shipped_with_the_same_results_as_eager_in_a_fresh_process(small):
    code = textwrap.dedent("""
        import io, contextlib, rt_small_mod, runtime as rt
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            native = rt_small_mod.shout(rt.constant(2)).numpy()
            rt.config.run_functions_eagerly(True)
            eager = rt_small_mod.shout(rt.constant(2)).numpy()
        assert native == eager, (native, eager)
        print(rt_small_mod.shout.experimental_get_tracing_count(), rt_small_mod.__file__.endswith('.so'))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=small, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "True"]
