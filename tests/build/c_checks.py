"""Helpers of the build tests that compile a C check of ``tests/build/c/`` with the generated code's flags (at an
x86-64 level, optionally linking the kernel library's archive), run it, and expect it to print "ok"."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import pytest

from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR, LINK_ARGS
from transpiler.codegen.flags import cpu_flags

C_DIR = Path(__file__).parent / "c"
LEVELS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl"}, "x86-64-v3": {"avx2", "fma"}, "x86-64": set()}
WARNINGS = ["-Wall", "-Werror", "-Wno-unused-function"]


def level_flags(level: str | None) -> list[str]:
    """The generated code's compile flags at ``level`` (None: the build's own); skips the test where this machine
    cannot run that level."""
    if level is None:
        return list(COMPILE_ARGS)
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 levels")
    if not LEVELS[level] <= cpu_flags():
        pytest.skip(f"this machine cannot run {level}")
    return [f for f in COMPILE_ARGS if not f.startswith("-march=")] + [f"-march={level}"]


def compiler() -> str:
    return os.environ.get("CC", "gcc")


def run_check(name: str, binary: Path, flags: list[str], archive: tuple = (), timeout: float = 120,
              env: dict | None = None) -> None:
    """Compile ``c/<name>.c`` into ``binary`` with ``flags`` (and the warnings as errors), run it, and assert it
    exits 0 printing "ok"."""
    subprocess.run([compiler(), *flags, *WARNINGS, "-I", KERNELS_DIR, str(C_DIR / f"{name}.c"), *map(str, archive),
                    "-o", str(binary), *LINK_ARGS], check=True, capture_output=True, text=True)
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else dict(os.environ, **env))
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
