"""A built function called under an eager GradientTape (issue 19, items 11 and 13; issue 22, item 6).

The call runs the native code (the tape records it as one op) and the op's gradient is the backward of the
function's graph: gradients for the inputs and for the Variables the function reads, equal to the traced and
eager ones. Before, the call ran the stored graph on the generic executor, the Variables it read got None
(item 13), and a loop tiling a value from outside it failed to differentiate (item 11).
"""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import import_built

import runtime as rt
from runtime.ops import functional_ops

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

SOURCE = '''
import runtime as rt

V = rt.Variable(2.0)
W = rt.Variable([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25]])
B = rt.Variable([0.1, -0.2])
COUNT = rt.Variable(0.0, trainable=False)


@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def scaled(x):
    return rt.reduce_sum(x * V)


@rt.function(input_signature=[rt.TensorSpec([3], rt.float32), rt.TensorSpec([3], rt.float32)])
def tiled(x, d):
    s = rt.zeros([4, 3])
    for i in rt.range(2):
        s = rt.tile(rt.expand_dims(d, 0), [4, 1]) * x + s
    return rt.reduce_sum(s)


@rt.function(input_signature=[rt.TensorSpec([None, 3], rt.float32)])
def dense(x):
    h = rt.tanh(rt.matmul(x, W) + B)
    total = rt.constant(0.0)
    for i in rt.range(3):
        total += rt.reduce_sum(h * h) * rt.cast(i + 1, rt.float32)
    return total, h


@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def counted(x):
    COUNT.assign_add(1.0)
    return rt.reduce_sum(x * V * V)


@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def cubed(x):
    return rt.reduce_sum(x * x * x * V)
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("native_under_tape")
    (root / "rt_native_under_tape.py").write_text(SOURCE)
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root)], cwd=PROJECT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return import_built(root, "rt_native_under_tape")


class _Counted:
    """Counts the calls of a NativeFunction (and runs it)."""

    def __init__(self, native):
        self.native, self.calls = native, 0

    def call(self, arrays):
        self.calls += 1
        return self.native.call(arrays)


@pytest.fixture
def counting(built, monkeypatch):
    """Count native calls of a built function's concrete function, and generic-executor runs of its graph."""
    generic = []
    original = functional_ops.execute

    def execute(graph, arrays, *rest, **kwargs):
        generic.append(graph.name)
        return original(graph, arrays, *rest, **kwargs)

    monkeypatch.setattr(functional_ops, "execute", execute)

    def install(function):
        concrete = function.get_concrete_function()
        counted = _Counted(concrete._native or concrete._native_function())
        monkeypatch.setattr(concrete, "_native", counted)
        return concrete, counted

    return install, generic


def _gradients(function, args, sources, watched):
    with rt.GradientTape(persistent=True) as tape:
        tape.watch(watched)
        out = function(*args)
    target = out[0] if isinstance(out, (tuple, list)) else out
    grads = tape.gradient(target, sources)
    return [None if g is None else g.numpy() for g in grads], target.numpy()


def _all_modes(function, args, sources, watched):
    """(built, traced, eager) gradients and values."""
    built = _gradients(function, args, sources, watched)
    traced = _gradients(rt.function(function.python_function, input_signature=function.input_signature), args,
                        sources, watched)
    rt.config.run_functions_eagerly(True)
    try:
        eager = _gradients(function, args, sources, watched)
    finally:
        rt.config.run_functions_eagerly(False)
    return built, traced, eager


def _assert_same(results, rtol=1e-6):
    (built_grads, built_value), *others = results
    for grads, value in others:
        np.testing.assert_allclose(built_value, value, rtol=rtol)
        assert [g is None for g in grads] == [g is None for g in built_grads]
        for a, b in zip(built_grads, grads):
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6)


def test_a_tape_gets_the_gradients_of_the_variables_a_built_function_reads(built, counting):
    install, _ = counting
    _, counted = install(built.scaled)
    x = rt.constant([1.0, 2.0, 3.0])
    results = _all_modes(built.scaled, [x], [x, built.V], [x])
    _assert_same(results)
    grads, _ = results[0]
    np.testing.assert_allclose(grads[0], [2.0, 2.0, 2.0])
    assert float(grads[1]) == 6.0                        # was None (item 13)
    assert counted.calls == 1                            # the built call ran its native code under the tape


def test_the_forward_runs_natively_and_the_gradient_on_the_graph(built, counting):
    install, generic = counting
    _, counted = install(built.dense)
    x = rt.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    with rt.GradientTape() as tape:
        tape.watch(x)
        total, _ = built.dense(x)
    assert counted.calls == 1 and generic == [], generic      # no generic executor in the call itself
    grads = tape.gradient(total, [x, built.W, built.B])
    assert generic, "the gradient runs the graph's backward"
    assert all(g is not None for g in grads)
    _assert_same(_all_modes(built.dense, [x], [x, built.W, built.B], [x]), rtol=1e-5)


def test_a_loop_tiling_a_value_from_outside_it(built, counting):
    install, _ = counting
    _, counted = install(built.tiled)
    x, d = rt.constant([1.0, 2.0, 3.0]), rt.constant([1.0, -1.0, 0.5])
    results = _all_modes(built.tiled, [x, d], [x, d], [x, d])
    _assert_same(results)                                # item 11: it raised a shape-invariant error
    assert counted.calls == 1


def test_the_gradient_uses_the_variables_as_the_call_read_them(built, counting):
    install, _ = counting
    _, counted = install(built.scaled)
    x = rt.constant([1.0, 2.0, 3.0])
    built.V.assign(2.0)
    with rt.GradientTape() as tape:
        tape.watch(x)
        y = built.scaled(x)
        built.V.assign(10.0)                             # after the call, before the gradient
        built.scaled(x)                                  # another native call (it writes nothing)
    grads = tape.gradient(y, [x, built.V])
    built.V.assign(2.0)
    assert counted.calls == 2
    np.testing.assert_allclose(grads[0].numpy(), [2.0, 2.0, 2.0])     # d/dx at V = 2, as the traced path gives
    assert float(grads[1]) == 6.0


def test_second_order_gradients_of_a_built_call(built, counting):
    install, _ = counting
    _, counted = install(built.cubed)
    x = rt.constant([1.0, -2.0, 0.5])

    def second(function):
        with rt.GradientTape() as outer:
            outer.watch(x)
            with rt.GradientTape() as inner:
                inner.watch(x)
                y = function(x)
            g = inner.gradient(y, x)
        return outer.gradient(g, x).numpy()

    native = second(built.cubed)
    traced = second(rt.function(built.cubed.python_function, input_signature=built.cubed.input_signature))
    np.testing.assert_allclose(native, traced)
    np.testing.assert_allclose(native, 6 * np.array([1.0, -2.0, 0.5]) * 2.0)
    assert counted.calls == 1


def test_a_built_function_with_side_effects_runs_once_under_a_tape_and_says_so(built, counting):
    # its gradient cannot run it again (the update would happen twice): the call runs the graph on the generic
    # executor, saving what the gradient needs, and warns once
    install, _ = counting
    _, counted = install(built.counted)
    x = rt.constant([1.0, 2.0, 3.0])
    before = float(built.COUNT.numpy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with rt.GradientTape() as tape:
                tape.watch(x)
                y = built.counted(x)
            grads = tape.gradient(y, [x, built.V])
    assert float(built.COUNT.numpy()) == before + 2
    assert counted.calls == 0
    assert sum("generic executor" in str(w.message) for w in caught) == 1, [str(w.message) for w in caught]
    np.testing.assert_allclose(grads[0].numpy(), [4.0, 4.0, 4.0])
    assert float(grads[1]) == 24.0
