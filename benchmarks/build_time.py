"""SPEC's third-wave build targets: how long users wait for ``python -m transpiler build`` and ``jit_compile``.

Each figure is a whole command, timed from outside (its Python start-up and imports included), in a fresh
cache directory (``RT_CACHE_DIR``) so that nothing a previous build recorded is reused:

- a small module (three functions: an elementwise chain, a Collatz step, a dense layer) built cold: <= 3 s;
- ``examples/`` built cold (``-o`` into a temporary directory, ``-j`` the cores): <= 60 s;
- a no-op rebuild of the small module (nothing changed): <= 0.5 s;
- the first call of a small ``jit_compile=True`` function in a new process (trace, compile, load): <= 2 s.

The median of a few runs counts (``--quick``: fewer); the rows also show the CPU time the command and its
children used (user + system), which a busy machine does not inflate as it does the wall time. Whether
Python could write its bytecode caches is printed with the rows: with ``PYTHONDONTWRITEBYTECODE`` set, every
process compiles the toolchain's sources again, a few tenths of a second a process.

``python -m benchmarks --only "build times"`` runs it; ``python -m benchmarks.build_time`` too.
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.harness import Bench, Check, Row, bench_class, print_table

PROJECT = Path(__file__).resolve().parents[1]

SMALL_MODULE = '''\
"""A small module: what the build-time benchmark builds."""
import runtime as rt


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def scaled_tanh(x):
    return rt.tanh(x * 3.0) + 1.0


@rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
def next_collatz(x):
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)


@rt.function(input_signature=[rt.TensorSpec([None, 64], rt.float32), rt.TensorSpec([64, 32], rt.float32)])
def dense(x, w):
    return rt.nn.relu(rt.matmul(x, w))
'''

FIRST_JIT_CALL = '''\
import resource
import time
import numpy as np
import runtime as rt


def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@rt.function(jit_compile=True)
def chain(x, y):
    return rt.tanh(x * 2.0 + y) - x


x = np.linspace(-1, 1, 1000, dtype=np.float32)
start, start_cpu = time.perf_counter(), cpu()
chain(x, x)
seconds, cpu_seconds = time.perf_counter() - start, cpu() - start_cpu
assert chain.get_concrete_function(x, x).native, "jit_compile did not produce native code"
print(seconds, cpu_seconds)
'''

TARGETS = {"small": 3.0, "examples": 60.0, "noop": 0.5, "jit": 2.0}


def _env(cache: Path) -> dict:
    env = dict(os.environ)
    env.pop("RT_DEBUG", None)
    env["RT_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT), env.get("PYTHONPATH")) if p)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(command: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """(wall seconds of ``command``, the CPU seconds it and its children used, its stdout); raises with its
    output when it fails."""
    start, start_cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - start_cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return seconds, cpu, proc.stdout


def _build(paths: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "transpiler", "build", *paths, *options]


def measure(runs: int = 3, examples_runs: int = 2) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each run of each case: ``small``, ``examples``, ``noop``, ``jit``."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in TARGETS}
    jobs = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="rt-build-time-") as scratch:
        root = Path(scratch)
        source = root / "small" / "rt_build_time_small.py"
        source.parent.mkdir()
        source.write_text(SMALL_MODULE)
        script = root / "first_jit_call.py"
        script.write_text(FIRST_JIT_CALL)
        for run in range(runs):
            cache = root / f"cache-small-{run}"
            times["small"].append(_run(_build([str(source.parent)], "--force"), root, _env(cache))[:2])
            times["noop"].append(min(_run(_build([str(source.parent)]), root, _env(cache))[:2] for _ in range(3)))
            out = _run([sys.executable, str(script)], root, _env(root / f"cache-jit-{run}"))[2]
            wall, cpu = out.split()[-2:]
            times["jit"].append((float(wall), float(cpu)))
        for run in range(examples_runs):
            outdir = root / f"examples-{run}"
            times["examples"].append(_run(_build(["examples/"], "-o", str(outdir), "-j", jobs, "--force"), PROJECT,
                                          _env(root / f"cache-examples-{run}"))[:2])
            shutil.rmtree(outdir, ignore_errors=True)
    return times


def rows(times: dict[str, list[tuple[float, float]]]) -> list[Row]:
    """A row per case: the median wall time against the target, and the median CPU time (user + system, the
    command and its children: what the time would be on idle cores, for the single-process cases)."""
    names = {"small": "build a small module (3 functions), cold",
             "examples": "build examples/, cold, -j cores",
             "noop": "rebuild the small module, nothing changed",
             "jit": "first call of a small jit_compile=True function"}
    result = []
    for key, name in names.items():
        walls = [wall for wall, _ in times[key]]
        median = statistics.median(walls)
        spread = f"{min(walls):.2f}-{max(walls):.2f} s over {len(walls)} runs"
        row = Row(name, {"built": median, "CPU": statistics.median(cpu for _, cpu in times[key])})
        row.checks.append(Check(f"median s ({spread})", median, TARGETS[key], at_most=True, unit=" s"))
        result.append(row)
    return result


def bytecode_note() -> str:
    if os.environ.get("PYTHONDONTWRITEBYTECODE") or sys.dont_write_bytecode:
        return ("build times: PYTHONDONTWRITEBYTECODE is set, so every process compiles the toolchain's Python "
                "sources again (the times include it)")
    return "build times: Python writes its bytecode caches (as in an installed rt)"


@bench_class("build times", wave="build")
def build_times(bench: Bench) -> list[Row]:
    """Cold and no-op builds and the first jit_compile call, each a whole command (see the module docstring)."""
    bench.note(bytecode_note())
    return rows(measure(runs=2 if bench.quick else 3, examples_runs=1 if bench.quick else 2))


def main() -> int:
    table = rows(measure())
    print(textwrap.fill(bytecode_note(), 110))
    print_table(table)
    return 0 if all(c.passed for row in table for c in row.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
