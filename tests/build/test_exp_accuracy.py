"""float32's exp of the generated code (``rt_exp_float32``, inline in ``rt_kernels.h``) at each x86-64 level.

It replaced libmvec's ``expf`` (a call per vector): ``c/exp_check.c`` checks every 61st float32 against exp in
double, vectorised and scalar (the same result either way), and the special cases (NaN, infinities, overflow,
denormal results, underflow to zero) exactly, compiled with the generated code's flags at each ``-march`` the
machine runs (with FMA at x86-64-v3 and v4, without at x86-64).
"""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import pytest

from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR, LINK_ARGS
from transpiler.codegen.flags import cpu_flags

pytestmark = pytest.mark.build

SOURCE = Path(__file__).parent / "c" / "exp_check.c"
LEVELS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl"}, "x86-64-v3": {"avx2", "fma"}, "x86-64": set()}


@pytest.mark.parametrize("level", list(LEVELS))
def test_exp_float32_within_an_ulp_at_each_isa_level(tmp_path, level):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 levels")
    if not LEVELS[level] <= cpu_flags():
        pytest.skip(f"this machine cannot run {level}")
    flags = [f for f in COMPILE_ARGS if not f.startswith("-march=")] + [f"-march={level}"]
    binary = tmp_path / "exp_check"
    cc = os.environ.get("CC", "gcc")
    subprocess.run([cc, *flags, "-Wall", "-Werror", "-Wno-unused-function", "-I", KERNELS_DIR, str(SOURCE),
                    "-o", str(binary), *LINK_ARGS], check=True, capture_output=True, text=True)
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
