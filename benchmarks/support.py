"""Building what the benchmarks measure, timing it, and describing the machine."""
from __future__ import annotations

import ctypes
import filecmp
import importlib
import os
import platform
import shutil
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy

from transpiler.codegen import COMPILE_ARGS, LINK_ARGS
from transpiler.codegen.flags import LEVELS, arch_flags, cpu_flags

HERE = Path(__file__).resolve().parent
BUILD_DIR = HERE / "_build"


_ISA_NAMES = {"x86-64-v4": "AVX-512", "x86-64-v3": "AVX2 + FMA, no AVX-512", "x86-64-v2": "SSE4.2, no AVX"}


def isa() -> str:
    """The x86-64 level generated code targets (``-march``; ``RT_MARCH`` chooses another) and what it means."""
    march = next((f.split("=", 1)[1] for f in arch_flags() if f.startswith("-march=")), None)
    if march is None:
        return "the compiler's default (no -march)"
    return f"{march} ({_ISA_NAMES.get(march, 'as the compiler defines it')})" + \
        (", chosen by RT_MARCH" if os.environ.get("RT_MARCH") else ", the highest level of this machine")


# The peers pick their kernels at run time for the CPU they run on (numpy's dispatch, OpenBLAS's core type, XLA's
# and oneDNN's ISA, Numba's target). Generated code built for a lower level than this machine's (RT_MARCH) is
# compared with peers held to that level, as on a machine of that level; ``--peers-full-isa`` keeps them free.
PEER_ISA_LIMITS = {
    "x86-64-v3": {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2",
                  "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell", "NUMBA_CPU_NAME": "haswell"},
    "x86-64-v2": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
                  "XLA_FLAGS": "--xla_cpu_max_isa=SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41",
                  "OPENBLAS_CORETYPE": "Nehalem", "NUMBA_CPU_NAME": "nehalem"},
}
PEERS_LIMITED = "RT_BENCH_PEER_ISA"      # set in the re-executed process: the level the peers are held to


def peer_isa_environment() -> dict[str, str]:
    """The variables that hold the peers to the level RT_MARCH chose, when it is below this machine's (else {})."""
    chosen = os.environ.get("RT_MARCH", "").strip()
    if chosen not in PEER_ISA_LIMITS or platform.machine() not in ("x86_64", "AMD64"):
        return {}
    flags = cpu_flags()
    machine_level = next((level for level, needed in LEVELS if needed <= flags), None)
    order = [level for level, _ in LEVELS]
    if machine_level is None or order.index(chosen) <= order.index(machine_level):
        return {}
    limits = dict(PEER_ISA_LIMITS[chosen])
    limits["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS", ""), limits["XLA_FLAGS"]]))
    limits[PEERS_LIMITED] = chosen
    return limits


def machine() -> str:
    """``CPU model, N cores, Python x.y, numpy x.y``."""
    model = platform.processor() or "unknown CPU"
    info = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" in info:
        flags = set(info.get("flags", "").split())
        simd = [f for f in ("avx512f", "avx2", "fma") if f in flags]
        model = (f"{info['model name']} (family {info.get('cpu family', '?')} model {info.get('model', '?')}, "
                 f"{'/'.join(simd) or 'no AVX'})")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{model}, {cores} cores available, Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"{platform.system()} {platform.machine()}")


def build_module(name: str, force: bool = False):
    """Build ``benchmarks/<name>.py`` with ``python -m transpiler build`` in ``_build/`` and import it.

    The source is copied as ``rt_bench_<name>.py`` so that the build and the import do not see
    ``benchmarks/<name>.py`` itself; an unchanged copy keeps the build incremental.
    """
    BUILD_DIR.mkdir(exist_ok=True)
    module_name = f"rt_bench_{name}"
    source = BUILD_DIR / f"{module_name}.py"
    if not source.exists() or not filecmp.cmp(HERE / f"{name}.py", source, shallow=False):
        shutil.copyfile(HERE / f"{name}.py", source)
    command = [sys.executable, "-m", "transpiler", "build", str(source)] + (["--force"] if force else [])
    proc = subprocess.run(command, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}")
    if str(BUILD_DIR) not in sys.path:
        sys.path.insert(0, str(BUILD_DIR))
    return importlib.import_module(module_name)


def c_flags() -> list[str]:
    """The flags the code generator compiles generated C with (optimisation, OpenMP, the machine's ISA)."""
    return list(COMPILE_ARGS)


def build_c_reference(name: str) -> ctypes.CDLL:
    """Compile ``benchmarks/<name>.c`` with the generated code's flags into a shared library and load it."""
    BUILD_DIR.mkdir(exist_ok=True)
    library = BUILD_DIR / f"lib{name}.so"
    command = [os.environ.get("CC", "gcc"), *c_flags(), "-shared", "-fPIC", "-o", str(library),
               str(HERE / f"{name}.c"), *LINK_ARGS]
    subprocess.run(command, check=True)
    return ctypes.CDLL(str(library))


def best_time(fn: Callable[[], object], repeat: int = 7, min_seconds: float = 0.2) -> float:
    """Seconds per call: the minimum over ``repeat`` timeit runs, after a warm-up.

    Each run makes enough calls to last about ``min_seconds / repeat``.
    """
    fn()
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * (min_seconds / repeat) / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def mean_time(fn: Callable[[], object], seconds: float = 1.0) -> float:
    """Seconds per call: the mean over the calls made in ``seconds`` of wall time, after a warm-up: what a loop of
    calls takes. Under another busy process a call waits now and then for a scheduler time slice (a 100 us call
    took up to 4 ms on two threads), which the best block of ``best_time`` leaves out."""
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls


def best_times(fns: list[Callable[[], object]], repeat: int = 7, min_seconds: float = 0.2,
               rounds: int = 3) -> list[float]:
    """Seconds per call of each of ``fns``: each function is timed as ``best_time`` does, one after the other,
    and that ``rounds`` times; the minimum of each function's rounds. A burst of noise on the machine then
    spoils at most one round of a function, not its only measurement. Three rounds, not two: on a VM whose
    memory bandwidth moved by 2x within seconds (a 16 MB copy took 630-1190 us), layer norm's static spelling
    measured 1.34x its `None` spelling in one run and 1.0x in the next. (Timing the functions in alternation
    call by call is not fair: right after another function, TensorFlow's training step ran 1.5x slower and
    JAX's 1.2x, their thread pools and caches cold, which flattered the built code.)
    """
    best = [float("inf")] * len(fns)
    for _ in range(rounds if len(fns) > 1 else 1):
        for k, fn in enumerate(fns):
            best[k] = min(best[k], best_time(fn, repeat, min_seconds))
    return best


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
