"""How built functions are found, keyed, attached and called, built for real:

- a signature that cannot be lowered runs its stored graph on the generic executor while the rest of the module is
  native, and the build names it (function, op, file:line); ``--strict`` fails the module, listing every one;
- two Functions of one Python function each run their own code;
- Python numbers reach native code through C, as fast as 0-d arrays;
- ``rt.function`` methods of the instances a module creates, and Functions stored on objects at import, are built;
- the signature ledger: what a run traced (and the shapes generic code ran most) is compiled by
  ``build --from-ledger``, and then runs natively without a trace.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import timeit
from pathlib import Path

import numpy as np
import pytest
from conftest import MISCOMPILED, PLANTED, import_built

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

MODULE = '''
import runtime as rt

def step(x):
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)

fixed = rt.function(step, input_signature=[rt.TensorSpec([8], rt.int32)])
generic = rt.function(step, input_signature=[rt.TensorSpec([None], rt.int32)])

spec = rt.TensorSpec([], rt.float32)

@rt.function(input_signature=[spec, spec, spec])
def bisect(target, lo, hi):
    for _ in rt.range(50):
        mid = (lo + hi) / 2.0
        if mid * mid * mid > target:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2.0

@rt.function(input_signature=[rt.TensorSpec([], rt.int32), rt.TensorSpec([], rt.bool)])
def count(n, flag):
    return rt.where(flag, n * 2, n)

@rt.function
def by_value(x, scale):
    return x * scale

by_value.get_concrete_function(rt.TensorSpec([], rt.float32), rt.TensorSpec([], rt.float32))

# issue 19 item 1: a keepdims reduction over a size-1 axis feeding an elementwise op
@rt.function(input_signature=[rt.TensorSpec([3, 1], rt.float32)])
def center(x):
    return x - rt.reduce_sum(x, axis=1, keepdims=True)

# ... and a gather along axis 1 whose result's shape bounds a tensor loop
@rt.function(input_signature=[rt.TensorSpec([3, 4], rt.float32), rt.TensorSpec([2], rt.int32)])
def gathered(x, idx):
    y = rt.gather(x, idx, axis=1)
    s = rt.zeros([3])
    for i in rt.range(rt.shape(y)[1]):
        s += y[:, i]
    return s

class Scaler(rt.Module):
    def __init__(self, w):
        super().__init__()
        self.w = rt.Variable(w)
        self.norm_x = 2.0

    @rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
    def __call__(self, x):
        return x * self.w / self.norm_x

    @rt.function
    def shifted(self, x):
        return x + self.w

class Trainer:
    """Makes its step Function at import and keeps it (as Keras's compile() keeps model.train_function)."""
    def __init__(self, model):
        self.model = model
        self.train_function = rt.function(self._step, input_signature=[rt.TensorSpec([None], rt.float32)])

    def _step(self, x):
        loss = rt.reduce_sum(self.model(x))
        self.model.w.assign_sub(0.5)
        return loss

model = Scaler(3.0)
other = Scaler(10.0)
model.shifted.get_concrete_function(rt.TensorSpec([2], rt.float32))
trainer = Trainer(Scaler(1.0))

class Net(rt.keras.Model):
    """A Keras model with its own training step (Adam: its slots are made by the first step)."""
    def __init__(self):
        super().__init__()
        self.dense = rt.keras.layers.Dense(3)
        self.out = rt.keras.layers.Dense(1)
        self.opt = rt.keras.optimizers.Adam(0.01)

    def call(self, x):
        return self.out(rt.nn.relu(self.dense(x)))

    @rt.function(input_signature=[rt.TensorSpec([None, 4], rt.float32), rt.TensorSpec([None, 1], rt.float32)])
    def train_step(self, x, y):
        with rt.GradientTape() as tape:
            loss = rt.reduce_mean((self(x) - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.trainable_variables))
        return loss

rt.keras.utils.set_random_seed(0)
net = Net()
net.build((None, 4))
'''


def _build(root: Path, *args: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(PROJECT)
    environment.pop("RT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), *args], cwd=PROJECT,
                          env=environment, capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("callpath")
    (root / "rt_callpath.py").write_text(MODULE)
    result = _build(root)
    assert result.returncode == 0, result.stdout + result.stderr
    return import_built(root, "rt_callpath"), result.stdout


def test_two_functions_of_one_python_function_each_run_their_own_code(built):
    module, _ = built
    [fixed], [generic] = module.fixed.concrete_functions(), module.generic.concrete_functions()
    assert fixed.native and generic.native
    assert fixed.graph.inputs[0].shape == (8,) and generic.graph.inputs[0].shape.as_list() == [None]
    x = np.arange(1, 9, dtype=np.int32)
    np.testing.assert_array_equal(module.fixed(x).numpy(), module.generic(x).numpy())
    with pytest.raises(ValueError, match="input_signature"):     # the [None] code must not answer for [8]
        module.fixed(np.arange(1, 6, dtype=np.int32))
    np.testing.assert_array_equal(module.generic(np.arange(1, 6, dtype=np.int32)).numpy(), [4, 1, 10, 2, 16])
    assert module.fixed.experimental_get_tracing_count() == module.generic.experimental_get_tracing_count() == 0


def test_python_numbers_run_the_native_code_as_0d_arrays_do(built):
    module, _ = built
    arrays = [np.float32(27.0), np.float32(0.0), np.float32(5.0)]
    expected = module.bisect(*[np.asarray(a) for a in arrays]).numpy()
    for args in ((27.0, 0.0, 5.0), (27, 0, 5), (27.0, False, 5)):
        np.testing.assert_array_equal(module.bisect(*args).numpy(), expected)
    assert module.bisect.experimental_get_tracing_count() == 0
    assert int(module.count(3, True)) == 6 and int(module.count(3.0, 0)) == 3
    with pytest.raises(ValueError, match="input_signature"):     # the one conversion rule: 1.5 is no int32
        module.count(1.5, True)
    with pytest.raises(ValueError, match="input_signature"):
        module.count(2**40, True)
    # a Function without input_signature keeps Python numbers in its signature by value, as TensorFlow does
    assert float(module.by_value(np.float32(2.0), 3.0)) == 6.0
    assert module.by_value.experimental_get_tracing_count() == 1
    module.by_value(np.float32(2.0), 3.0)
    assert module.by_value.experimental_get_tracing_count() == 1


def test_a_python_float_call_is_within_twice_a_0d_array_call(built):
    module, _ = built
    floats = (27.0, 0.0, 5.0)
    arrays = tuple(np.asarray(v, np.float32) for v in floats)
    timings = {"floats": [], "arrays": []}
    for _ in range(7):              # interleaved rounds: a burst of noise spoils a round, not a column
        for name, args in (("floats", floats), ("arrays", arrays)):
            timings[name].append(timeit.timeit(lambda args=args: module.bisect(*args), number=2000))
    ratio = min(timings["floats"]) / min(timings["arrays"])
    assert ratio < 2.0, f"a call with Python floats took {ratio:.2f}x a call with 0-d arrays"


def test_methods_of_instances_and_functions_stored_at_import_are_built(built):
    module, _ = built
    x = np.array([1.0, 2.0], np.float32)
    call = module.model.__call__
    assert [c.native for c in call.concrete_functions()] == [True]
    np.testing.assert_allclose(module.model(x).numpy(), x * 3.0 / 2.0)
    np.testing.assert_allclose(module.other(x).numpy(), x * 10.0 / 2.0)   # its own instance, its own variable
    assert [c.native for c in module.model.shifted.concrete_functions()] == [True]
    np.testing.assert_allclose(module.model.shifted(x).numpy(), x + 3.0)
    module.model.w.assign(4.0)                                  # variables are read from the instance
    np.testing.assert_allclose(module.model(x).numpy(), x * 4.0 / 2.0)
    step = module.trainer.train_function
    assert [c.native for c in step.concrete_functions()] == [True]
    assert float(step(x)) == pytest.approx(1.5) and float(module.trainer.model.w.numpy()) == 0.5
    assert call.experimental_get_tracing_count() == step.experimental_get_tracing_count() == 0
    # made at import (model.shifted.get_concrete_function(...)): attached before that call, so it did not trace
    assert module.model.shifted.experimental_get_tracing_count() == 0


def test_a_keras_models_own_train_step_is_built_and_trains_as_from_source(built, tmp_path):
    module, _ = built
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    y = np.arange(8, dtype=np.float32).reshape(8, 1)
    step = module.net.train_step
    native = [float(step(x, y)) for _ in range(3)]
    assert [c.native for c in step.concrete_functions()] == [True] and step.experimental_get_tracing_count() == 0
    source = tmp_path / "rt_callpath_source.py"
    source.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("rt_callpath_source", source)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    traced = [float(reference.net.train_step(x, y)) for _ in range(3)]
    np.testing.assert_allclose(native, traced, rtol=1e-5)
    assert native[2] < native[0]


def test_the_issue_repros_build_and_agree_with_eager(built):
    module, output = built
    x = np.array([[1.0], [2.0], [4.0]], np.float32)
    np.testing.assert_array_equal(module.center(x).numpy(), np.zeros((3, 1), np.float32))
    xs, idx = np.arange(12, dtype=np.float32).reshape(3, 4), np.array([3, 1], np.int32)
    np.testing.assert_array_equal(module.gathered(xs, idx).numpy(), xs[:, 3] + xs[:, 1])
    for name in ("center", "gathered"):
        function = getattr(module, name)
        assert function.experimental_get_tracing_count() == 0
        if not function.get_concrete_function().native:        # the fallback: the build said so
            assert f"{name}(x: float32[" in output and "generic executor" in output
    assert module.fixed.get_concrete_function().native


FALLBACK = '''
import runtime as rt

v = rt.Variable(2.0)

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def uses_sin(x):
    y = x * v
    return rt.sin(y)

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def plain(x):
    return x + 1.0

@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def also_sin(x):
    return rt.sin(x) + x
'''


def test_a_signature_that_fails_to_lower_runs_its_graph_and_the_rest_stays_native(tmp_path):
    (tmp_path / "rt_planted.py").write_text(FALLBACK)
    result = _build(tmp_path, "--renderer", PLANTED)
    assert result.returncode == 0, result.stdout + result.stderr
    source = tmp_path / "rt_planted.py"
    warnings = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("warning:")]
    assert any(w.startswith(f"warning: {source}:9: uses_sin(x: float32[3]): ValueError: planted: Sin cannot be "
                            "lowered (op 'sin' (Sin))") for w in warnings), result.stdout
    assert any(w.startswith(f"warning: {source}:17: also_sin(x: float32[None])") for w in warnings), result.stdout
    assert "2 signatures not compiled to native code" in result.stdout
    module = import_built(tmp_path, "rt_planted")
    assert module.plain.get_concrete_function().native
    for name in ("uses_sin", "also_sin"):
        assert not getattr(module, name).get_concrete_function().native
    x = np.array([0.0, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(module.uses_sin(x).numpy(), np.sin(x * 2.0), rtol=1e-6)
    module.v.assign(3.0)                                     # the stored graph reads the module's variable
    np.testing.assert_allclose(module.uses_sin(x).numpy(), np.sin(x * 3.0), rtol=1e-6)
    np.testing.assert_allclose(module.also_sin(x).numpy(), np.sin(x) + x, rtol=1e-6)
    np.testing.assert_array_equal(module.plain(x).numpy(), x + 1.0)
    assert module.uses_sin.experimental_get_tracing_count() == module.also_sin.experimental_get_tracing_count() == 0

    strict = _build(tmp_path, "--renderer", PLANTED, "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "StrictFailure: 2 signatures not compiled to native code (--strict)" in strict.stdout
    assert "uses_sin(x: float32[3])" in strict.stdout and "also_sin(x: float32[None])" in strict.stdout


def test_a_function_the_c_compiler_rejects_runs_its_graph_and_the_rest_stays_native(tmp_path):
    """A code generator bug that yields C the compiler rejects costs the functions it is in their native code
    (each named with the compiler's error), not the module its build."""
    (tmp_path / "rt_planted.py").write_text(FALLBACK)
    result = _build(tmp_path, "--renderer", MISCOMPILED)
    assert result.returncode == 0, result.stdout + result.stderr
    source = tmp_path / "rt_planted.py"
    warnings = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("warning:")]
    for signature in ("uses_sin(x: float32[3])", "also_sin(x: float32[None])"):
        assert any(w.startswith(f"warning: {source}: {signature}: CompilerRejected: rt_planted_rt_native.h:")
                   and "undefined_in_generated_code" in w for w in warnings), result.stdout
    assert "2 signatures not compiled to native code" in result.stdout
    module = import_built(tmp_path, "rt_planted")
    assert module.plain.get_concrete_function().native
    assert not module.uses_sin.get_concrete_function().native and not module.also_sin.get_concrete_function().native
    x = np.array([0.0, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(module.uses_sin(x).numpy(), np.sin(x * 2.0), rtol=1e-6)
    np.testing.assert_allclose(module.also_sin(x).numpy(), np.sin(x) + x, rtol=1e-6)
    np.testing.assert_array_equal(module.plain(x).numpy(), x + 1.0)
    assert module.uses_sin.experimental_get_tracing_count() == 0

    strict = _build(tmp_path, "--renderer", MISCOMPILED, "--strict")
    assert strict.returncode == 1 and "StrictFailure: 2 signatures not compiled" in strict.stdout, strict.stdout


LEDGER = '''
import runtime as rt

w = rt.Variable([[0.5], [0.25]])

@rt.function
def train_step(x, y):
    return rt.reduce_mean((rt.matmul(x, w) - y) ** 2)

@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def smooth(x):
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - x

def run():
    import numpy as np
    x, y = np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32)
    losses = [float(train_step(x, y)), float(train_step(x[:3], y[:3]))]
    for n in (64, 64, 64, 5):
        smooth(np.ones(n, np.float32))
    specs = sorted(str(c.graph.inputs[0].shape) for c in smooth.concrete_functions() if c.native)
    natives = [c.native for c in train_step.concrete_functions()]
    print(losses, train_step.experimental_get_tracing_count(), natives, specs)
'''


def _run(root: Path) -> str:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(root), str(PROJECT)])
    result = subprocess.run([sys.executable, "-c", "import rt_ledger; rt_ledger.run()"], cwd=root, env=environment,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def test_signatures_traced_at_run_time_are_built_by_the_next_build_from_the_ledger(tmp_path):
    (tmp_path / "rt_ledger.py").write_text(LEDGER)
    first = _build(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "train_step: not compiled: no input_signature and no concrete function at import" in first.stdout
    assert _run(tmp_path) == "[0.5625, 0.5625] 2 [False, False] ['(None,)']"     # traced at run time

    environment = dict(os.environ, PYTHONPATH=str(PROJECT))
    shown = subprocess.run([sys.executable, "-m", "transpiler", "ledger", str(tmp_path)], cwd=PROJECT,
                           env=environment, capture_output=True, text=True, timeout=300, check=False).stdout
    assert "train_step" in shown and "(float32[4,2], float32[4,1])  traced 1x" in shown
    assert "(float32[64])  3 calls" in shown and "(float32[5])  1 calls" in shown

    rebuilt = _build(tmp_path, "--from-ledger")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "1 module: 1 up to date" in _build(tmp_path, "--from-ledger").stdout   # nothing new recorded
    # the traced signatures, and the shape called more than once, run native code; nothing traces
    assert _run(tmp_path) == "[0.5625, 0.5625] 0 [True, True] ['(64,)', '(None,)']"
    # that run called [5] once more: twice in all, it is worth its own code now, and the module rebuilds
    again = _build(tmp_path, "--from-ledger")
    assert "1 module: 1 built" in again.stdout, again.stdout + again.stderr
    assert _run(tmp_path) == "[0.5625, 0.5625] 0 [True, True] ['(5,)', '(64,)', '(None,)']"
