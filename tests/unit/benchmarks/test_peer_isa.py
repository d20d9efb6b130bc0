"""``python -m benchmarks`` holds the peers to the ISA level ``RT_MARCH`` chose when it is below the machine's
(numpy, OpenBLAS, XLA, oneDNN and Numba pick their kernels for the CPU they run on), and only then."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks import support  # noqa: E402
from transpiler.codegen.flags import LEVELS  # noqa: E402

AVX512_MACHINE = set().union(*(needed for _, needed in LEVELS))
AVX2_MACHINE = AVX512_MACHINE - LEVELS[0][1] | LEVELS[1][1]


@pytest.fixture
def machine(monkeypatch):
    monkeypatch.setattr(support.platform, "machine", lambda: "x86_64")
    monkeypatch.delenv("XLA_FLAGS", raising=False)

    def on(flags, march=None):
        monkeypatch.setattr(support, "cpu_flags", lambda: flags)
        if march is None:
            monkeypatch.delenv("RT_MARCH", raising=False)
        else:
            monkeypatch.setenv("RT_MARCH", march)
        return support.peer_isa_environment()
    return on


def test_avx2_code_on_an_avx512_machine_holds_every_peer_to_avx2(machine):
    limits = machine(AVX512_MACHINE, "x86-64-v3")
    assert limits[support.PEERS_LIMITED] == "x86-64-v3"
    assert limits["XLA_FLAGS"] == "--xla_cpu_max_isa=AVX2"
    assert "X86_V4" in limits["NPY_DISABLE_CPU_FEATURES"].split()
    assert limits["OPENBLAS_CORETYPE"] == "Haswell" and limits["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert limits["NUMBA_CPU_NAME"] == "haswell"


def test_the_users_xla_flags_are_kept(machine, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    monkeypatch.setattr(support, "cpu_flags", lambda: AVX512_MACHINE)
    monkeypatch.setenv("RT_MARCH", "x86-64-v3")
    assert support.peer_isa_environment()["XLA_FLAGS"] == \
        "--xla_cpu_multi_thread_eigen=false --xla_cpu_max_isa=AVX2"


@pytest.mark.parametrize("flags, march", [(AVX512_MACHINE, None), (AVX512_MACHINE, "x86-64-v4"),
                                          (AVX2_MACHINE, "x86-64-v3"), (AVX512_MACHINE, "native"),
                                          (AVX512_MACHINE, "none")])
def test_peers_run_free_unless_the_code_is_built_below_the_machines_level(machine, flags, march):
    assert machine(flags, march) == {}


def test_sse_code_on_an_avx2_machine_holds_the_peers_to_sse(machine):
    limits = machine(AVX2_MACHINE, "x86-64-v2")
    assert limits["XLA_FLAGS"] == "--xla_cpu_max_isa=SSE4_2"
    assert {"X86_V3", "X86_V4"} <= set(limits["NPY_DISABLE_CPU_FEATURES"].split())
