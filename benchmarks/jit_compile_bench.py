"""``rt.function(jit_compile=True)`` vs the ahead-of-time build, after the first call.

The same Python functions are built ahead of time (``python -m transpiler build`` of the source
below) and wrapped in ``rt.function(jit_compile=True)``, whose signatures nobody built: its first
call compiles (or loads from the on-disk cache), later calls must run within 1.3x of the built ones.

Part of ``python -m benchmarks`` as the "jit_compile" class (``--only jit_compile``); run alone with
``python -m benchmarks.jit_compile_bench``. ``run()`` returns the rows ``(name, figures, ratio, threshold)``
(ratio = jit time / built time, at most the threshold).
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

import runtime as rt
from benchmarks.harness import EXACT, Check, Row, bench_class

BUILD_DIR = Path(__file__).resolve().parent / "_build"
MODULE = "rt_bench_jit"
THRESHOLD = 1.3

SOURCE = '''\
"""Built ahead of time by benchmarks/jit_compile_bench.py."""
import runtime as rt


def twenty_ops(x, y):
    a = x * 2.0 + y
    b = rt.tanh(a) - rt.sigmoid(y)
    c = rt.matmul(b, rt.transpose(x))
    d = rt.maximum(c, 0.0) / 3.0
    e = rt.exp(-rt.abs(d))
    f = rt.reduce_sum(e, axis=1)
    g = rt.sqrt(rt.square(f) + 1.0)
    h = rt.reduce_max(g) - rt.reduce_min(g)
    return rt.cast(h, rt.float64)


def newton(a):
    x = a
    i = rt.constant(0)
    while i < 1000:
        x = x - (x * x - a) / (2.0 * x)
        i += 1
    return x


def add(a, b):
    return a + b


M = rt.TensorSpec([64, 64], rt.float32)
S = rt.TensorSpec([], rt.float32)
twenty_ops_built = rt.function(twenty_ops)
twenty_ops_built.get_concrete_function(M, M)
newton_built = rt.function(newton)
newton_built.get_concrete_function(S)
add_built = rt.function(add)
add_built.get_concrete_function(S, S)
'''


def _build():
    """The built module (rebuilt only when its source changed)."""
    BUILD_DIR.mkdir(exist_ok=True)
    source = BUILD_DIR / f"{MODULE}.py"
    if not source.exists() or source.read_text() != SOURCE:
        source.write_text(SOURCE)
    command = [sys.executable, "-m", "transpiler", "build", str(source)]
    proc = subprocess.run(command, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}")
    if str(BUILD_DIR) not in sys.path:
        sys.path.insert(0, str(BUILD_DIR))
    module = importlib.import_module(MODULE)
    if module.__file__.endswith(".py"):
        raise RuntimeError(f"{MODULE} did not load as a built extension ({module.__file__})")
    return module


def _best(fn, repeat: int = 7, seconds: float = 0.3) -> float:
    """Seconds per call: the minimum over ``repeat`` runs of ``timeit`` (after a warm-up)."""
    fn()
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * (seconds / repeat) / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _row(name, built_fn, jit_fn, args) -> tuple:
    concrete = built_fn.get_concrete_function(*args)
    if not concrete.native:
        raise RuntimeError(f"{name}: the built signature is not native")
    start = time.perf_counter()
    first = jit_fn(*args)
    first_call = time.perf_counter() - start
    if not jit_fn.get_concrete_function(*args).native:
        raise RuntimeError(f"{name}: jit_compile did not produce native code (is a C compiler installed?)")
    np.testing.assert_allclose(np.asarray(first.numpy()), np.asarray(built_fn(*args).numpy()), rtol=1e-5)
    built, jit = [], []
    for _ in range(3):                      # interleaved: both see the same machine load
        built.append(_best(lambda: built_fn(*args)))
        jit.append(_best(lambda: jit_fn(*args)))
    b, j = min(built), min(jit)
    figures = f"{_fmt(j)} vs {_fmt(b)} (first call {_fmt(first_call)})"
    return f"jit_compile {name}, unseen signature vs built", figures, j / b, THRESHOLD


def _cases(module) -> list[tuple]:
    """``(name, built function, jit_compile function, arguments)`` of each case."""
    rng = np.random.default_rng(0)
    m = rt.constant(rng.standard_normal((64, 64)).astype(np.float32))
    n = rt.constant(rng.standard_normal((64, 64)).astype(np.float32))
    a, b = rt.constant(np.float32(2.0)), rt.constant(np.float32(3.0))
    jit = lambda fn: rt.function(fn, jit_compile=True)  # noqa: E731
    return [
        ("jit_compile: 20-op fn [64,64]", module.twenty_ops_built, jit(module.twenty_ops), (m, n)),
        ("jit_compile: 1000 Newton steps (tensor while)", module.newton_built, jit(module.newton), (a,)),
        ("jit_compile: one-op add (call cost)", module.add_built, jit(module.add), (a, b)),
    ]


def run() -> list:
    """Rows ``(name, figures, ratio, threshold)``: jit-compiled time / ahead-of-time built time."""
    return [_row(*case) for case in _cases(_build())]


@bench_class("jit_compile", wave="first", modules=())
def jit_compile_class(bench) -> list[Row]:
    """The rows of ``run()`` in the main table: built vs jit time, target jit / built <= 1.3x."""
    module = _build()
    rows = []
    for (name, built_fn, jit_fn, args) in _cases(module):
        row = bench.measure(name, {"built": lambda: built_fn(*args)})
        _row(name, built_fn, jit_fn, args)           # compiles, checks native
        bench.agree(row, built_fn(*args), {"jit_compile": jit_fn(*args)}, EXACT)     # one code generator: same bits
        row.times["jit_compile"], row.times["built"] = bench.times([lambda: jit_fn(*args), lambda: built_fn(*args)])
        row.checks.append(Check("jit_compile / built", row.times["jit_compile"] / row.times["built"], THRESHOLD,
                                at_most=True))
        rows.append(row)
    return rows


def main() -> int:
    rows = run()
    width = max(len(r[0]) for r in rows)
    for name, figures, ratio, threshold in rows:
        verdict = "PASS" if ratio <= threshold else "FAIL"
        print(f"{name:<{width}}  {figures:<40}  {ratio:.3g}x  <= {threshold:g}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
