"""The GEMM of the kernel library, and the convolutions built on it, compiled for each x86-64 level (AVX-512,
AVX2, SSE2) and run in C.

Built modules use the build machine's level only; this compiles ``c/gemm_check.c`` (exact checks of every
entry point on tile edges, transposes, strides, batches, 1-3 threads) and ``c/conv_check.c`` (the convolution
and its gradients, exact, on every path: direct, packed filters with windows in place, edges, strides, padding)
with the generated code's flags and each ``-march`` the machine can run, with the kernels inlined and linked from
the kernel library's archive (``RT_KERNELS_EXTERN``, as built modules link them).
"""
from __future__ import annotations

import pytest
from c_checks import WARNINGS, compiler, level_flags, run_check

from transpiler.build import kernel_library
from transpiler.codegen import KERNELS_DIR

pytestmark = pytest.mark.build


@pytest.mark.parametrize("check", ["gemm_check", "conv_check"])
@pytest.mark.parametrize("linked", [False, True], ids=["inlined", "archive"])
@pytest.mark.parametrize("level", ["x86-64-v4", "x86-64-v3", "x86-64"])
def test_gemm_at_each_isa_level(tmp_path, level, linked, check):
    flags = level_flags(level)
    archive = ()
    if linked:
        kernel_library.compile_archive([compiler()], flags + WARNINGS, KERNELS_DIR, tmp_path / "librt_kernels.a")
        flags.append(kernel_library.EXTERN_FLAG)
        archive = (tmp_path / "librt_kernels.a",)
    run_check(check, tmp_path / check, flags, archive, env={"OMP_WAIT_POLICY": "PASSIVE"})
