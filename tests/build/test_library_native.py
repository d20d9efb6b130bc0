"""Built native code of the kernel library's calls (transpiler/lowering/library_calls.py) against eager code.

- Random numbers: a seeded op's stream in native code is eager code's, call after call, bit for bit (uniform,
  integers, normal, truncated normal in float32 and float64, categorical, shuffle, stateless ops, Generators);
  ops without seeds draw different numbers in two processes.
- Sort, argsort, top_k, ArgMax/ArgMin (ties, NaN, integers), linear algebra, gather_nd/scatter_nd/boolean_mask
  and composites (einsum, norm, split, roll, map_fn) run natively and agree with eager code.
- Complex numbers go through Python callbacks, which the build report lists.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import import_built
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from runtime.ops import random_ops

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent('''
    import runtime as rt

    F = rt.float32
    D = rt.float64


    @rt.function
    def unseeded():
        return rt.random.uniform([8])


    unseeded.get_concrete_function()      # traced before the global seed is set: no seeds at all

    GLOBAL_SEED = 1234
    rt.random.set_seed(GLOBAL_SEED)


    @rt.function(input_signature=[])
    def seeded():
        return (rt.random.uniform([5], seed=1), rt.random.uniform([3], -2.0, 3.0, D, seed=2),
                rt.random.uniform([9], -4, 7, rt.int32, seed=3), rt.random.uniform([3], 0, 2 ** 40, rt.int64, seed=4),
                rt.random.normal([7], seed=5), rt.random.normal([4], 1.0, 2.0, D, seed=6),
                rt.random.truncated_normal([6], seed=7), rt.random.truncated_normal([5], dtype=D, seed=8),
                rt.random.categorical(rt.math.log([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]]), 4, seed=9),
                rt.random.shuffle(rt.reshape(rt.range(12), [6, 2]), seed=10))


    @rt.function(input_signature=[])
    def global_only():
        return rt.random.uniform([4]), rt.random.normal([3])


    @rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
    def sized(n):
        return rt.random.uniform(rt.concat([n, [2]], 0), seed=11), rt.random.normal(n[:1], seed=12)


    @rt.function(input_signature=[rt.TensorSpec([2], rt.int64), rt.TensorSpec([], rt.int32)])
    def stateless(seed, hi):
        return (rt.random.stateless_uniform([5], seed), rt.random.stateless_uniform([4], seed, 0, hi, rt.int32),
                rt.random.stateless_normal([3, 2], seed, dtype=D), rt.random.stateless_truncated_normal([6], seed))


    generator = rt.random.Generator.from_seed(77)


    @rt.function(input_signature=[])
    def generated():
        return generator.normal([4]), generator.uniform([3], dtype=D), generator.truncated_normal([2])


    @rt.function(input_signature=[rt.TensorSpec([None, None], F)])
    def sorting(x):
        return (rt.sort(x), rt.sort(x, 0, "DESCENDING"), rt.argsort(x), rt.argsort(x, 0, "DESCENDING"),
                rt.math.top_k(x, 1).values, rt.math.top_k(x, 1).indices, rt.argmax(x, 1), rt.argmin(x, 0),
                rt.math.argmax(x, 0, output_type=rt.int32), *rt.math.top_k(x, rt.minimum(3, rt.shape(x)[1])))


    @rt.function(input_signature=[rt.TensorSpec([None, None], D)])
    def arg_only(x):
        return rt.argmax(x, 1), rt.argmin(x, 1, output_type=rt.int32)


    @rt.function(input_signature=[rt.TensorSpec([None, None], rt.int32), rt.TensorSpec([], rt.int32)])
    def int_sorting(x, k):
        top = rt.math.top_k(x, k)
        return rt.sort(x, direction="DESCENDING"), top.values, top.indices, rt.argmax(x, 0), rt.argmin(x, 1)


    @rt.function(input_signature=[rt.TensorSpec([None, None, None], D), rt.TensorSpec([None, None, 2], D)])
    def linalg(a, b):
        return rt.linalg.inv(a), rt.linalg.det(a), rt.linalg.solve(a, b), rt.linalg.inv(a, adjoint=True)


    @rt.function(input_signature=[rt.TensorSpec([3, 3], F)])
    def linalg_small(a):
        return rt.linalg.inv(a), rt.linalg.det(a), rt.linalg.solve(a, rt.ones([3, 1]), adjoint=True)


    @rt.function(input_signature=[rt.TensorSpec([None, None], F), rt.TensorSpec([None, 2], rt.int64),
                                  rt.TensorSpec([None], rt.bool)])
    def indexing(x, ids, mask):
        rows = rt.gather_nd(x, ids)
        return (rows, rt.gather_nd(x, ids[:, :1]), rt.scatter_nd(ids, rows * 2.0, rt.shape(x, out_type=rt.int64)),
                rt.boolean_mask(x, mask), rt.where(x > 0.0), rt.ensure_shape(x, [None, 3]))


    @rt.function(input_signature=[rt.TensorSpec([None, 3], F), rt.TensorSpec([3, 4], F)])
    def composites(x, w):
        return (rt.einsum("ij,jk->ik", x, w), rt.einsum("ij,ij->i", x, x), rt.einsum("ij->ji", x),
                rt.einsum("bi,bj->bij", x, x), rt.linalg.norm(x, axis=1), rt.linalg.norm(w, ord=1, axis=[0, 1]),
                rt.split(x, [1, 2], 1)[1], rt.roll(x, 1, 0), rt.reverse(x, [0]),
                rt.map_fn(lambda r: rt.reduce_sum(r * r), x), rt.linalg.diag_part(w), rt.linalg.trace(w[:, :3]),
                rt.nn.leaky_relu(x), rt.nn.sigmoid_cross_entropy_with_logits(labels=x * 0.0 + 1.0, logits=x))


    @rt.function(input_signature=[rt.TensorSpec([None], D), rt.TensorSpec([None], D)])
    def complex_numbers(re, im):
        z = rt.complex(re, im)
        return rt.math.abs(z * z), rt.math.real(rt.math.conj(z) * z), rt.math.imag(z + z)
''')


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("library")
    (root / "rt_library_programs.py").write_text(SOURCE)
    env = dict(os.environ)
    env.pop("RT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "-v"], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    module = import_built(root, "rt_library_programs")
    module.BUILD_REPORT = proc.stdout
    module.ROOT = root
    return module


def _native(function, *specs):
    concrete = function.get_concrete_function(*specs)
    assert concrete.native, function
    return concrete


def _arrays(values) -> list:
    return [np.asarray(v.numpy()) for v in rt.nest.flatten(values)]


def _eager(function, *args):
    rt.config.run_functions_eagerly(True)
    try:
        return _arrays(function(*args))
    finally:
        rt.config.run_functions_eagerly(False)


def _same(native: list, eager: list, exact: bool = True, rtol: float = 1e-6) -> None:
    assert len(native) == len(eager)
    for k, (a, b) in enumerate(zip(native, eager)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a, b)
        if exact or a.dtype.kind != "f":
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"output {k}")


# ---------------------------------------------------------------------------
# Random numbers.

def test_the_build_runs_the_library_ops_natively(library):
    report = library.BUILD_REPORT
    for name in ("seeded", "stateless", "generated", "sorting", "int_sorting", "linalg", "indexing", "composites"):
        line = next(line for line in report.splitlines() if line.strip().startswith(name + "("))
        assert "through Python" not in line, line
    line = next(line for line in report.splitlines() if line.strip().startswith("complex_numbers("))
    assert "through Python: " in line and "Complex x1" in line and "ComplexAbs x1" in line, line


def test_seeded_streams_are_eager_code_streams_call_after_call(library):
    native = _native(library.seeded)
    rt.random.set_seed(library.GLOBAL_SEED)      # eager ops with these seeds count their runs from 0 again
    for call in range(3):
        _same(_arrays(native()), _eager(library.seeded))
    # and the stream is the documented one: element e of call c of the op seeded (global, 1)
    key = random_ops.mix(library.GLOBAL_SEED, 1)
    first = _arrays(native())[0]
    np.testing.assert_array_equal(first, random_ops.uniform_array(key, 3, (5,), np.float32, 0, 1))


def test_a_global_seed_alone_seeds_a_function_by_its_ops_order(library):
    native = _native(library.global_only)
    out = _arrays(native())
    keys = [random_ops.mix(library.GLOBAL_SEED, k) for k in range(2)]       # the function's 1st and 2nd random op
    np.testing.assert_array_equal(out[0], random_ops.uniform_array(keys[0], 0, (4,), np.float32, 0, 1))
    np.testing.assert_array_equal(out[1], random_ops.normal_array(keys[1], 0, (3,), np.float32))
    again = _arrays(native())
    np.testing.assert_array_equal(again[0], random_ops.uniform_array(keys[0], 1, (4,), np.float32, 0, 1))
    # eagerly, right after set_seed, the same program draws the same first numbers (op seeds 0, 1)
    rt.random.set_seed(library.GLOBAL_SEED)
    _same(out, _eager(library.global_only))


def test_run_time_shapes_and_their_errors(library):
    native = _native(library.sized)
    rt.random.set_seed(library.GLOBAL_SEED)
    for n in ([3], [0], [5]):
        _same(_arrays(native(rt.constant(n))), _eager(library.sized, rt.constant(n)))
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"(?s)RandomUniform.*non-negative.*rt_library_programs"):
        native(rt.constant([-1]))


def test_ops_without_seeds_draw_new_numbers_in_every_process(library):
    native = _native(library.unseeded)
    a, b = native().numpy(), native().numpy()
    assert not np.array_equal(a, b)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import rt_library_programs as m; "
            "print(m.unseeded.get_concrete_function()().numpy().tolist())")
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    runs = [subprocess.run([sys.executable, "-c", code, str(library.ROOT)], capture_output=True, text=True, env=env,
                           timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout != runs[1].stdout
    assert all(0 <= v < 1 for v in ast.literal_eval(runs[0].stdout))


def test_stateless_ops_are_functions_of_their_seed(library):
    native = _native(library.stateless)
    for seed, hi in (([1, 2], 10), ([-5, 2 ** 40], 3)):
        args = (rt.constant(seed, rt.int64), rt.constant(hi))
        out = _arrays(native(*args))
        _same(out, _arrays(native(*args)))
        _same(out, _eager(library.stateless, *args))


def test_generator_draws_advance_its_state_in_native_code(library):
    native = _native(library.generated)
    library.generator.reset_from_seed(77)
    out = [_arrays(native()) for _ in range(2)]
    np.testing.assert_array_equal(library.generator.state.numpy(), [77, 0, 6])
    eager = rt.random.Generator.from_seed(77)
    for k in range(2):
        expected = [eager.normal([4]), eager.uniform([3], dtype=rt.float64), eager.truncated_normal([2])]
        _same(out[k], _arrays(expected))


# ---------------------------------------------------------------------------
# Sorting and arg-reductions.

HYP = settings(max_examples=20, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@HYP
@given(st.data())
def test_sorting_and_arg_reductions(library, data):
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40))
    values = st.sampled_from([-2.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, -np.inf, np.nan])
    x = data.draw(hnp.arrays(np.float32, shape, elements=values))
    native = _native(library.sorting, rt.TensorSpec([None, None], rt.float32))
    _same(_arrays(native(rt.constant(x))), _eager(library.sorting, rt.constant(x)))
    ints = data.draw(hnp.arrays(np.int32, shape, elements=st.integers(-3, 3)))
    k = data.draw(st.integers(0, shape[1]))
    native = _native(library.int_sorting, rt.TensorSpec([None, None], rt.int32), rt.TensorSpec([], rt.int32))
    _same(_arrays(native(rt.constant(ints), rt.constant(k))), _eager(library.int_sorting, rt.constant(ints),
                                                                       rt.constant(k)))
    with pytest.raises(rt.errors.InvalidArgumentError, match="TopKV2"):
        native(rt.constant(ints), rt.constant(shape[1] + 1))


def test_arg_reductions_of_big_inputs_run_on_threads(library):
    x = np.random.default_rng(0).standard_normal((3000, 200)).astype(np.float32)
    native = _native(library.sorting, rt.TensorSpec([None, None], rt.float32))
    out = _arrays(native(rt.constant(x)))
    np.testing.assert_array_equal(out[6], np.argmax(x, 1))
    np.testing.assert_array_equal(out[7], np.argmin(x, 0))
    np.testing.assert_array_equal(out[0], np.sort(x, 1))
    order = np.argsort(-x, 1, kind="stable")[:, :3]          # the three largest of 200 (one pass each row)
    np.testing.assert_array_equal(out[-1], order)
    np.testing.assert_array_equal(out[-2], np.take_along_axis(x, order, 1))


def test_arg_reductions_of_float64_and_their_errors(library):
    native = _native(library.arg_only)
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    _same(_arrays(native(rt.constant(x))), _eager(library.arg_only, rt.constant(x)))
    _same(_arrays(native(rt.constant(np.zeros((0, 3))))), _eager(library.arg_only, rt.constant(np.zeros((0, 3)))))
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"(?s)ArgMax: argmax/argmin over an empty dimension.*\[\[op"):
        native(rt.constant(np.zeros((2, 0))))


# ---------------------------------------------------------------------------
# Linear algebra, index tuples, composites, complex numbers.

def test_linear_algebra(library):
    rng = np.random.default_rng(1)
    for batch, n in ((2, 3), (1, 1), (0, 2), (3, 6)):
        a = rng.standard_normal((batch, n, n)) + n * np.eye(n)
        b = rng.standard_normal((batch, n, 2))
        native = _native(library.linalg, rt.TensorSpec([None, None, None], rt.float64),
                         rt.TensorSpec([None, None, 2], rt.float64))
        _same(_arrays(native(rt.constant(a), rt.constant(b))), _eager(library.linalg, rt.constant(a), rt.constant(b)),
              exact=False, rtol=1e-10)
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"(?s)MatrixInverse: the input is not invertible"):
        native(rt.constant(np.zeros((1, 2, 2))), rt.constant(np.zeros((1, 2, 2))))
    with pytest.raises(rt.errors.InvalidArgumentError, match="square"):
        native(rt.constant(np.zeros((1, 2, 3))), rt.constant(np.zeros((1, 2, 2))))
    a = (rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
    small = _native(library.linalg_small)
    _same(_arrays(small(rt.constant(a))), _eager(library.linalg_small, rt.constant(a)), exact=False, rtol=1e-5)
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.float32)
    with pytest.raises(rt.errors.InvalidArgumentError, match="not invertible"):
        small(rt.constant(singular))


@HYP
@given(st.data())
def test_index_tuples_and_masks(library, data):
    rows = data.draw(st.integers(1, 5))
    x = data.draw(hnp.arrays(np.float32, (rows, 3), elements=st.floats(-2, 2, width=32)))
    ids = np.array(data.draw(st.lists(st.tuples(st.integers(0, rows - 1), st.integers(0, 2)), max_size=6)),
                   np.int64).reshape(-1, 2)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)))
    native = _native(library.indexing, rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, 2], rt.int64),
                     rt.TensorSpec([None], rt.bool))
    args = (rt.constant(x), rt.constant(ids), rt.constant(mask))
    _same(_arrays(native(*args)), _eager(library.indexing, *args))
    bad = np.array([[0, 3]], np.int64)
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"GatherNd: index \[0, 3\] .* out of bounds"):
        native(rt.constant(x), rt.constant(bad), rt.constant(mask))
    with pytest.raises(rt.errors.InvalidArgumentError, match="EnsureShape"):
        native(rt.constant(np.zeros((rows, 4), np.float32)), rt.constant(ids), rt.constant(mask))


def test_composites_and_complex_numbers(library):
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    native = _native(library.composites)
    _same(_arrays(native(rt.constant(x), rt.constant(w))), _eager(library.composites, rt.constant(x), rt.constant(w)),
          exact=False, rtol=1e-5)
    re, im = np.array([1.0, -2.0, 0.5]), np.array([0.5, 3.0, -1.0])
    native = _native(library.complex_numbers)
    _same(_arrays(native(rt.constant(re), rt.constant(im))), _eager(library.complex_numbers, rt.constant(re),
                                                                     rt.constant(im)))
