"""Building what the benchmarks measure, timing it, and describing the machine."""
from __future__ import annotations

import ctypes
import filecmp
import os
import platform
import shutil
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_DIR = HERE / "_build"
KERNELS_MODULE = "rt_bench_kernels"


def machine() -> str:
    """``CPU model, N cores, Python x.y, numpy x.y``."""
    import numpy
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


def build_kernels(force: bool = False):
    """Build ``kernels.py`` with ``python -m transpiler build`` in ``_build/`` and import it.

    The source is copied under another name so that the build and the import do not
    see ``benchmarks/kernels.py`` itself; an unchanged copy keeps the build incremental.
    """
    BUILD_DIR.mkdir(exist_ok=True)
    source = BUILD_DIR / f"{KERNELS_MODULE}.py"
    if not source.exists() or not filecmp.cmp(HERE / "kernels.py", source, shallow=False):
        shutil.copyfile(HERE / "kernels.py", source)
    command = [sys.executable, "-m", "transpiler", "build", str(source)] + (["--force"] if force else [])
    proc = subprocess.run(command, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}")
    sys.path.insert(0, str(BUILD_DIR))
    import importlib
    return importlib.import_module(KERNELS_MODULE)


def build_power_ref() -> ctypes.CDLL:
    """Compile ``power_ref.c`` with ``gcc -O3`` into a shared library and load it."""
    BUILD_DIR.mkdir(exist_ok=True)
    library = BUILD_DIR / "libpower_ref.so"
    subprocess.run([os.environ.get("CC", "gcc"), "-O3", "-shared", "-fPIC", "-o", str(library),
                    str(HERE / "power_ref.c")], check=True)
    lib = ctypes.CDLL(str(library))
    pointer = ctypes.c_void_p
    lib.power_ref.argtypes = [pointer, pointer, ctypes.c_int]
    lib.power_ref.restype = None
    lib.power_ref_batch.argtypes = [pointer, pointer, ctypes.c_int, ctypes.c_int]
    lib.power_ref_batch.restype = ctypes.c_double
    return lib


def best_time(fn: Callable[[], object], repeat: int = 7, min_seconds: float = 0.2) -> float:
    """Seconds per call: the minimum over ``repeat`` timeit runs, after a warm-up.

    Each run makes enough calls to last about ``min_seconds / repeat``.
    """
    fn()
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * (min_seconds / repeat) / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
