"""``rt.function(jit_compile=True)``: compiled at run time, cached on disk across processes.

Each scenario runs ``PROGRAM`` in fresh processes sharing one ``RT_CACHE_DIR``: the first compiles,
a second one (with no C compiler on its PATH) loads the cached module, two at once both succeed
with one compilation, a corrupted entry is rebuilt, and with no compiler at all the program warns
once and runs on the generic executor.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

PROGRAM = '''
import json, warnings
import numpy as np
import runtime as rt

counter = rt.Variable(0.0)


@rt.function(jit_compile=True)
def step(x, y):
    counter.assign_add(rt.reduce_sum(x))
    z = rt.tanh(x * 1.5 + 0.5) * 2.0 - y / (rt.abs(y) + 1.0)
    total = rt.constant(0.0)
    for i in rt.range(rt.size(z)):
        if z[i] > 0:
            total += z[i]
    return total + counter.read_value()


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = rt.constant(np.linspace(-1, 1, 9).astype(np.float32))
    results = [float(step(x, x)), float(step(x * 2.0, x))]
    results.append(float(step(rt.constant(np.ones(4, np.float32)), rt.constant(np.ones(4, np.float32)))))
    native = [c.native for c in step.concrete_functions()]

import sys
jit = sys.modules.get("transpiler.jit")
print(json.dumps({"results": results, "native": native, "stats": jit.STATS if jit else None,
                  "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]}))
'''


def _expected() -> list[float]:
    counter = 0.0
    out = []
    cases = [(np.linspace(-1, 1, 9).astype(np.float32), np.linspace(-1, 1, 9).astype(np.float32))]
    cases.append((cases[0][0] * 2, cases[0][1]))
    cases.append((np.ones(4, np.float32), np.ones(4, np.float32)))
    for x, y in cases:
        counter += float(x.sum())
        z = np.tanh(x * 1.5 + 0.5) * 2.0 - y / (np.abs(y) + 1.0)
        out.append(float(z[z > 0].sum()) + counter)
    return out


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "jit_program.py"
    path.write_text(PROGRAM)
    return path


def _env(cache: Path, no_compiler: Path | None = None) -> dict:
    env = dict(os.environ, RT_CACHE_DIR=str(cache), PYTHONPATH=str(PROJECT))
    env.pop("CC", None)
    if no_compiler is not None:
        no_compiler.mkdir(exist_ok=True)
        env["PATH"] = str(no_compiler)          # an empty directory: no gcc, no cc
    return env


def _start(program: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(program)], env=env, cwd=program.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    report = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(report["results"], _expected(), rtol=1e-5)
    return report


def _run(program: Path, env: dict) -> dict:
    return _finish(_start(program, env))


def test_second_process_loads_from_the_cache_without_a_compiler(program, tmp_path):
    cache = tmp_path / "cache"
    first = _run(program, _env(cache))
    assert first["native"] == [True, True] and first["stats"]["compiled"] == 2 and not first["warnings"]
    second = _run(program, _env(cache, no_compiler=tmp_path / "empty_path"))
    assert second["native"] == [True, True]
    assert second["stats"] == {"compiled": 0, "loaded": 2, "corrupt": 0}, "the compiler must not run"
    assert not second["warnings"]
    entries = [p for p in (cache / "jit").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(entries) == 2 and all((p / "manifest.json").is_file() for p in entries)


def test_two_processes_compiling_the_same_graph_at_once(program, tmp_path):
    cache = tmp_path / "cache"
    procs = [_start(program, _env(cache)) for _ in range(2)]
    reports = [_finish(p) for p in procs]
    assert all(r["native"] == [True, True] for r in reports)
    assert sum(r["stats"]["compiled"] for r in reports) == 2, "each graph is compiled once, the other process waits"
    assert not any(r["warnings"] for r in reports)


def test_a_corrupted_entry_is_detected_and_rebuilt(program, tmp_path):
    cache = tmp_path / "cache"
    _run(program, _env(cache))
    entries = sorted(p for p in (cache / "jit").iterdir() if p.is_dir() and not p.name.startswith("."))
    module = next(entries[0].glob("*.so"))
    data = bytearray(module.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = b"\x00" * 64
    module.write_bytes(bytes(data))
    (entries[1] / "manifest.json").write_text("{not json")
    report = _run(program, _env(cache))
    assert report["native"] == [True, True]
    assert report["stats"] == {"compiled": 2, "loaded": 2, "corrupt": 2}
    again = _run(program, _env(cache, no_compiler=tmp_path / "empty_path"))
    assert again["stats"] == {"compiled": 0, "loaded": 2, "corrupt": 0}


def test_without_a_compiler_it_warns_once_and_runs_the_generic_executor(program, tmp_path):
    report = _run(program, _env(tmp_path / "cache", no_compiler=tmp_path / "empty_path"))
    assert report["native"] == [False, False]
    assert len(report["warnings"]) == 1 and "no C compiler" in report["warnings"][0], report["warnings"]
