"""Compiler flags for generated code: optimisation, OpenMP, and the build machine's vector ISA.

The ISA level is the highest x86-64 micro-architecture level the build machine
supports (v4: AVX-512, v3: AVX2+FMA, v2: SSE4.2), so that vectorised math
(libmvec) uses the widest lanes (``tests/build/test_march.py`` checks every level
the machine has); set ``RT_MARCH`` (e.g. ``x86-64-v2`` or
``native``, or ``none``) to choose another target for machines you ship to.

It also names the kernel library's sources (``kernels_hash``), so that generated code calls the kernels
``runtime._native`` compiled once, when they are compiled from the same sources (``shared_kernel_flags``).
This file is loaded on its own by ``setup.py``: it imports only the standard library.
"""
from __future__ import annotations

import hashlib
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


# The headers runtime._native's shared kernels are compiled from (rt_nn.h includes the others).
SHARED_KERNEL_SOURCES = ("rt_config.h", "rt_kernels.h", "rt_gemm.h", "rt_nn.h", "rt_shared.h")


def kernels_hash(directory: str) -> str:
    """A hash of the kernel library's headers that the shared kernels are compiled from: the sources
    ``runtime._native``'s kernels were compiled from must be those a module that calls them is compiled with
    (``rt_shared.h``)."""
    digest = hashlib.sha256()
    for name in SHARED_KERNEL_SOURCES:
        digest.update(name.encode("utf-8") + b"\0")
        with open(os.path.join(directory, name), "rb") as f:
            digest.update(f.read())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def kernels_hash_macro(directory: str) -> tuple[str, str]:
    """``RT_KERNELS_HASH`` as a C string, for the compiler's ``-D``."""
    return "RT_KERNELS_HASH", f'"{kernels_hash(directory)}"'


def shared_kernel_flags(installed_hash: str | None, directory: str) -> list[str]:
    """Flags that make generated code call ``runtime._native``'s compiled kernels (``installed_hash``: the hash
    of the sources they were compiled from, None when it has none) instead of compiling its own copy; none
    when they are not compiled from the kernel headers in ``directory`` (edited since rt was installed)."""
    name, value = kernels_hash_macro(directory)
    if installed_hash is None or f'"{installed_hash}"' != value:
        return []
    return ["-DRT_SHARED_KERNELS", f"-D{name}={value}"]
