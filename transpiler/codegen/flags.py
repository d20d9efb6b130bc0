"""Compiler flags for generated code: optimisation, OpenMP, and the build machine's vector ISA.

The ISA level is the highest x86-64 micro-architecture level the build machine
supports (v4: AVX-512, v3: AVX2+FMA, v2: SSE4.2), so that vectorised math
(libmvec) uses the widest lanes (``tests/build/test_march.py`` checks every level
the machine has); set ``RT_MARCH`` (e.g. ``x86-64-v2`` or
``native``, or ``none``) to choose another target for machines you ship to.
"""
from __future__ import annotations

import os
import platform

LEVELS = [
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi2"}),
    ("x86-64-v3", {"avx2", "fma", "bmi1", "bmi2", "movbe", "f16c"}),
    ("x86-64-v2", {"sse4_2", "popcnt", "ssse3"}),
]


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def arch_flags() -> list[str]:
    choice = os.environ.get("RT_MARCH", "").strip()
    if choice == "none":
        return []
    if choice:
        return [f"-march={choice}"]
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    flags = cpu_flags()
    for level, needed in LEVELS:
        if needed <= flags:
            return [f"-march={level}"]
    return []


def compile_args(arch: list[str] | None = None) -> list[str]:
    """The C compiler's options for generated code (and the kernel library's archive): optimisation, OpenMP,
    IEEE floats without errno, wrapping integers, and ``arch`` (default: ``arch_flags()``)."""
    return (["-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fno-strict-aliasing",
             "-fwrapv", "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-label",
             "-Wno-unused-but-set-variable"] + (arch_flags() if arch is None else arch))


def supported_levels() -> list[list[str]]:
    """``-march`` options of every x86-64 level this machine runs, highest first (none elsewhere)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    flags = cpu_flags()
    return [[f"-march={level}"] for level, needed in LEVELS if needed <= flags]
