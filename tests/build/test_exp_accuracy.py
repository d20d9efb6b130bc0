"""float32's exp and tanh of the generated code (``rt_exp_float32``, ``rt_tanh_float32``, inline in ``rt_kernels.h``)
at each x86-64 level.

The exp replaced libmvec's ``expf`` (a call per vector): ``c/exp_check.c`` checks every 61st float32 against exp in
double, vectorised and scalar (the same result either way), and the special cases (NaN, infinities, overflow,
denormal results, underflow to zero) exactly, compiled with the generated code's flags at each ``-march`` the
machine runs (with FMA at x86-64-v3 and v4, without at x86-64).
"""
from __future__ import annotations

import pytest
from c_checks import level_flags, run_check

pytestmark = pytest.mark.build


@pytest.mark.parametrize("level", ["x86-64-v4", "x86-64-v3", "x86-64"])
def test_exp_float32_within_an_ulp_at_each_isa_level(tmp_path, level):
    run_check("exp_check", tmp_path / "exp_check", level_flags(level), timeout=300)


@pytest.mark.parametrize("level", ["x86-64-v4", "x86-64-v3", "x86-64"])
def test_tanh_float32_within_its_bound_at_each_isa_level(tmp_path, level):
    """``rt_tanh_float32``: inline at AVX2 with FMA (1.5 ulp, the same bits vectorised or not), libmvec's elsewhere
    (2.5 ulp): ``c/tanh_check.c``."""
    run_check("tanh_check", tmp_path / "tanh_check", level_flags(level), timeout=300)
