"""The benchmark harness gates correctness: a row whose built result differs from another implementation's
beyond the row's stated tolerance fails, and ``python -m benchmarks`` exits 1 for it, ``--strict`` or not."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks import harness  # noqa: E402
from benchmarks.__main__ import summarize  # noqa: E402
from benchmarks.harness import EXACT, Bench, PeerTolerances, Tolerance, agreement, print_table  # noqa: E402


@pytest.fixture
def bench(monkeypatch):
    """A Bench whose timing is instant (the checks of the results are what is tested)."""
    monkeypatch.setattr(harness, "best_times", lambda fns, repeat, min_seconds: [1e-6 * (i + 1) for i in
                                                                                 range(len(fns))])
    return Bench(repeat=1)


TANH = Tolerance(rtol=1e-5, atol=1e-6)


def _row(bench, built):
    x = np.linspace(-2, 2, 101, dtype=np.float32)
    return bench.measure("tanh of x", {"built": lambda: built(x), "numpy": lambda: np.tanh(x)}, tolerance=TANH)


def test_a_correct_built_result_passes(bench):
    row = _row(bench, lambda x: np.tanh(x.astype(np.float64)).astype(np.float32))   # within an ulp of numpy's
    (check,) = [c for c in row.checks if c.correctness]
    assert check.passed and check.ratio <= 1
    assert summarize([("second", [row])], strict=False) == 0


def test_a_wrong_built_result_fails_the_row_and_the_run(bench, capsys):
    row = _row(bench, lambda x: np.tanh(x) + np.float32(1e-3) * (x > 1))     # wrong past x = 1
    (check,) = [c for c in row.checks if c.correctness]
    assert check.passed is False and check.ratio > 1
    print_table([row])
    table = capsys.readouterr().out
    assert "built == numpy: rtol 1e-05, atol 1e-06" in table and "FAIL" in table    # the tolerance is stated
    assert summarize([("second", [row])], strict=False) == 1                         # without --strict too
    assert "FAILED: tanh of x: the built result differs" in capsys.readouterr().out


def test_a_slow_row_fails_only_with_strict(bench):
    row = _row(bench, np.tanh)
    bench.faster_than(row, "numpy", 10.0)           # the instant timing makes built 2x as fast: a miss
    assert summarize([("second", [row])], strict=False) == 0
    assert summarize([("second", [row])], strict=True) == 1


def test_a_row_with_peers_must_state_its_tolerance(bench):
    with pytest.raises(ValueError, match="give the tolerance"):
        bench.measure("no tolerance", {"built": lambda: 1, "numpy": lambda: 1})


@pytest.mark.parametrize("built, other, passes", [
    (np.array([1, 2, 3], np.int32), np.array([1, 2, 3], np.int64), True),
    (np.array([1, 2, 3], np.int32), np.array([1, 2, 4], np.int32), False),           # exact: one off fails
    (np.array([1.0, np.nan]), np.array([1.0, np.nan]), True),
    (np.array([1.0, np.nan]), np.array([1.0, 2.0]), False),                           # NaN where the peer has none
    (np.zeros((2, 3)), np.zeros((3, 2)), False),                                       # another shape
    ((np.zeros(2), np.ones(2)), (np.zeros(2), np.ones(2)), True),                     # every value of a tuple
    ((np.zeros(2), np.ones(2)), (np.zeros(2), np.zeros(2)), False),
    ((np.zeros(2), np.ones(2)), np.zeros(2), False),                                  # fewer values
])
def test_exact_agreement(built, other, passes):
    check, _ = agreement(built, {"peer": other}, EXACT)
    assert check.passed is passes


def test_tolerance_is_relative_to_the_peer_plus_absolute():
    tolerance = Tolerance(rtol=1e-3, atol=1e-6)
    assert agreement(np.array([1000.0, 0.0]), {"p": np.array([1000.9, 1e-6])}, tolerance)[0].passed
    assert not agreement(np.array([1000.0, 0.0]), {"p": np.array([1001.1, 0.0])}, tolerance)[0].passed
    assert not agreement(np.array([0.0]), {"p": np.array([2e-6])}, tolerance)[0].passed


def test_outliers_and_tolerances_per_peer():
    """A chaotic iteration may differ at a few points for a peer that fuses multiply-adds, and nowhere else."""
    built = np.arange(1000, dtype=np.float32)
    peer = built.copy()
    peer[:3] += 7
    assert Tolerance(outliers=0.001).excess(peer, built)[0] > 1            # 3 points, 1 spared
    assert Tolerance(outliers=0.005).excess(peer, built)[0] == 0           # 5 spared
    per_peer = PeerTolerances(EXACT, (("jax.jit", Tolerance(outliers=0.005)),))
    check, _ = agreement(built, {"numpy": built, "jax.jit": peer}, per_peer)
    assert check.passed and "jax.jit exact but at 0.50% of the elements" in str(per_peer)
    check, _ = agreement(built, {"numpy": peer, "jax.jit": peer}, per_peer)
    assert not check.passed                                                # numpy must agree exactly
