"""Constant-heavy programs built for every x86-64 level (``RT_MARCH``) give eager's results.

An AVX-512 build once returned a folded ``concat`` constant with its first 16 floats wrong. The old
generator reused ``char`` stack arrays for tensors of different element types (int32 then float32
through typed pointers: a strict-aliasing violation the compiler may exploit); generated code now
declares each stack array with its element type and is compiled with ``-fno-strict-aliasing``.
This test builds random programs mixing folded constants (concatenations, stacks, slices, casts)
with inputs at each level the CPU supports, and compares every result with eager.
"""
from __future__ import annotations

import importlib
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from transpiler.codegen.flags import LEVELS, cpu_flags

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]
COUNT = 24


def _program(seed: int, k: int) -> str:
    r = random.Random(seed)
    n = r.choice([16, 17, 31, 32, 33, 48, 64, 100])
    lines = [f"@rt.function(input_signature=[rt.TensorSpec([{n}], rt.float32)])", f"def f{k}(x):"]
    parts, left = [], n
    while left:
        m = r.randint(1, left) if r.random() < 0.7 else left
        values = [round(r.uniform(-9, 9), 2) for _ in range(m)]
        lines.append(f"    c{len(parts)} = rt.constant({values}, rt.float32)")
        parts.append(f"c{len(parts)}")
        left -= m
    lines += [f"    c = rt.concat([{', '.join(parts)}], axis=0)",
              "    i = rt.cast(x * 10.0, rt.int32) + rt.cast(c, rt.int32)",
              "    y = rt.cast(i % 7, rt.float32) + c",
              "    z = rt.where(i > 0, y, c) * 1.5",
              "    w = rt.concat([z[:3], c[3:]], axis=0)"]
    exprs = ["c", "c + 0.0", "x * c", "rt.where(x > 0.0, c, x)", "c[::-1]", "rt.maximum(c, x)", "c[1:] * c[:-1]",
             "rt.reduce_sum(c) + x", "rt.stack([c, x])", "rt.reshape(rt.stack([c, c * 3.0]), [-1])",
             "rt.tanh(c) + c", "rt.cast(rt.cast(c, rt.int32), rt.float32)", "y", "z", "w",
             "rt.reduce_sum(y * z) + w", "rt.cast(i, rt.float32) - c"]
    lines.append(f"    return {', '.join(r.sample(exprs, 5))}")
    return "\n".join(lines)


# Short rows (transpiler/lowering/lanes.py): whole vectors, then a masked last block of 16 lanes, run as 8 where
# 8 floats fill a vector (AVX2 and below: rt_tail_in_half), its exponentials' scratch row loaded unmasked
SHORT_ROWS = """
def _softmax_rows(x):
    e = rt.exp(x - rt.reduce_max(x, axis=-1, keepdims=True))
    return e / rt.reduce_sum(e, axis=-1, keepdims=True), rt.reduce_sum(x * e, axis=-1)


softmax_any = rt.function(_softmax_rows, input_signature=[rt.TensorSpec([None, None], rt.float32)])
softmax_100 = rt.function(_softmax_rows, input_signature=[rt.TensorSpec([5, 100], rt.float32)])
softmax_104 = rt.function(_softmax_rows, input_signature=[rt.TensorSpec([5, 104], rt.float32)])
softmax_9 = rt.function(_softmax_rows, input_signature=[rt.TensorSpec([5, 9], rt.float32)])
"""
SOURCE = "import runtime as rt\n\n\n" + "\n\n\n".join(_program(9000 + k, k) for k in range(COUNT)) + "\n" \
    + SHORT_ROWS


def _levels() -> list[str]:
    flags = cpu_flags()
    return [level for level, needed in reversed(LEVELS) if needed <= flags]


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """One build per level, run concurrently."""
    builds = {}
    for level in _levels():
        root = tmp_path_factory.mktemp(level.replace("-", "_"))
        name = f"rt_march_{level.replace('-', '_')}"
        (root / f"{name}.py").write_text(SOURCE)
        env = dict(os.environ, RT_MARCH=level)
        env.pop("RT_DEBUG", None)
        builds[level] = (root, name, subprocess.Popen(
            [sys.executable, "-m", "transpiler", "build", str(root), "--strict"], cwd=PROJECT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    out = {}
    for level, (root, name, proc) in builds.items():
        text, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, text
        sys.path.insert(0, str(root))
        try:
            importlib.invalidate_caches()
            out[level] = importlib.import_module(name)
        finally:
            sys.path.remove(str(root))
    return out


def _eager(function, *args):
    rt.config.run_functions_eagerly(True)
    try:
        return [t.numpy() for t in function(*args)]
    finally:
        rt.config.run_functions_eagerly(False)


def test_the_cpu_levels_are_known():
    assert _levels(), "this test needs an x86-64 CPU with SSE4.2 or better"


@pytest.mark.parametrize("k", range(COUNT))
def test_constant_heavy_programs_at_every_level(modules, k):
    for level, module in modules.items():
        function = getattr(module, f"f{k}")
        concrete = function.get_concrete_function()
        assert concrete.native
        n = concrete.graph.inputs[0].shape[0]
        x = rt.constant(np.linspace(-1, 1, n, dtype=np.float32))
        native = [t.numpy() for t in function(x)]
        for index, (a, b) in enumerate(zip(native, _eager(function, x))):
            assert a.shape == b.shape and a.dtype == b.dtype, (level, k, index)
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-5, err_msg=f"{level} f{k} result {index}")


def test_short_rows_of_every_length_at_every_level(modules):
    """Rows of 1 to 40 and around 100 and 128 floats, of run-time and of static length, with inf and NaN in
    some rows: eager's results at each level (the 8-lane last block runs at AVX2 and below only)."""
    rng = np.random.default_rng(11)
    for level, module in modules.items():
        cases = [(module.softmax_any, n) for n in [*range(1, 41), 100, 104, 120, 127, 128, 129]]
        cases += [(module.softmax_100, 100), (module.softmax_104, 104), (module.softmax_9, 9)]
        for function, n in cases:
            x = (rng.standard_normal((5, n)) * 4).astype(np.float32)
            x[1, n - 1], x[3, 0] = np.nan, np.inf
            x[4, n // 2] = -np.inf
            assert function.get_concrete_function().native
            native = [t.numpy() for t in function(rt.constant(x))]
            for a, b in zip(native, _eager(function, rt.constant(x))):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{level}, rows of {n}")
