"""The GEMM of the kernel library compiled for each x86-64 level (AVX-512, AVX2, SSE2) and run in C.

Built modules use the build machine's level only; this compiles ``c/gemm_check.c`` (exact checks of every
entry point on tile edges, transposes, strides, batches, 1-3 threads) with the generated code's flags and
each ``-march`` the machine can run, with the kernels inlined and linked from the kernel library's archive
(``RT_KERNELS_EXTERN``, as built modules link them).
"""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import pytest

from transpiler.build import kernel_library
from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR, LINK_ARGS
from transpiler.codegen.flags import cpu_flags

pytestmark = pytest.mark.build

SOURCE = Path(__file__).parent / "c" / "gemm_check.c"
LEVELS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl"}, "x86-64-v3": {"avx2", "fma"}, "x86-64": set()}


@pytest.mark.parametrize("linked", [False, True], ids=["inlined", "archive"])
@pytest.mark.parametrize("level", list(LEVELS))
def test_gemm_at_each_isa_level(tmp_path, level, linked):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 levels")
    if not LEVELS[level] <= cpu_flags():
        pytest.skip(f"this machine cannot run {level}")
    flags = [f for f in COMPILE_ARGS if not f.startswith("-march=")] + [f"-march={level}"]
    binary = tmp_path / "gemm_check"
    cc = os.environ.get("CC", "gcc")
    flags += ["-Wall", "-Werror", "-Wno-unused-function"]
    archive = []
    if linked:
        kernel_library.compile_archive([cc], flags, KERNELS_DIR, tmp_path / "librt_kernels.a")
        flags.append(kernel_library.EXTERN_FLAG)
        archive = [str(tmp_path / "librt_kernels.a")]
    subprocess.run([cc, *flags, "-I", KERNELS_DIR, str(SOURCE), *archive, "-o", str(binary), *LINK_ARGS], check=True,
                   capture_output=True, text=True)
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
