"""What every benchmark class shares: the registry of classes, the peers, timing, checks and the table.

A benchmark class is one function registered with ``@bench_class(name)``; it receives a ``Bench`` and
returns ``Row``s. To add a class (training step, convolution, jit_compile, ...), write its built
functions in a module under ``benchmarks/`` (built by ``bench.module(name)``), its class function in
a module listed in ``benchmarks.__main__.CLASS_MODULES``, and measure with ``bench.measure``:

    @bench_class("my class")
    def my_class(bench):
        built = bench.module("my_module")           # benchmarks/my_module.py, built ahead of time
        x = ...
        row = bench.measure("my class: what it computes", {
            "built": lambda: built.f(x),
            "numpy": lambda: numpy_f(x),
            "jax.jit": lambda jax: (lambda f, xj: lambda: f(xj).block_until_ready())(jax.jit(jax_f), ...),
            "tf.function": lambda tf: ...,
        })
        bench.faster_than(row, "jax.jit", 1.0)      # target: jax.jit time / built time >= 1
        return [row]

Implementations named after a peer (``jax.jit``, ``tf.function``, ``numba``, or a variant such as
``tf.function hand-written``) are factories: called with
the peer's module only when it is installed (and not in ``--built-only`` runs), they return the callable
to time. Every callable returns its result, and ``measure`` checks that each one agrees with the built
result within the row's ``tolerance`` (``Tolerance``; ``EXACT`` for integers): a row whose built result
differs from a peer's beyond it fails (``Agreement``), and ``python -m benchmarks`` exits 1, with or
without ``--strict``: a wrong answer is not a slow one.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from benchmarks.support import best_time, best_times, build_module, fmt_time, mean_time

PEERS = {"jax.jit": "jax", "tf.function": "tensorflow", "numba": "numba"}


def peer_package(label: str) -> str | None:
    """The package an implementation label names: a peer (``tf.function``) or a variant of one
    (``tf.function hand-written``); None for the built code and numpy."""
    for peer, package in PEERS.items():
        if label == peer or label.startswith(peer + " "):
            return package
    return None


@dataclass
class Check:
    """One target: ``ratio`` against ``threshold`` (at most, or at least); no threshold: a figure to report."""
    label: str
    ratio: float | None          # None: the peer is not installed
    threshold: float | None
    at_most: bool = False
    unit: str = "x"

    @property
    def passed(self) -> bool | None:
        if self.ratio is None or self.threshold is None:
            return None
        return self.ratio <= self.threshold if self.at_most else self.ratio >= self.threshold

    correctness = False           # a speed target; an Agreement is a check of the results

    def cells(self) -> list[str]:
        ratio = "-" if self.ratio is None else f"{self.ratio:.3g}{self.unit}"
        if self.threshold is None:
            return [self.label, ratio, "info"]
        sign = "<=" if self.at_most else ">="
        status = {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]
        return [f"{self.label} {sign} {self.threshold:g}{self.unit}", ratio, status]


class Accuracy(Check):
    """A check of the results (not of speed) given as a figure against a threshold, e.g. ulps from numpy."""
    correctness = True


@dataclass(frozen=True)
class Tolerance:
    """How far another implementation's result may be from the built one, element by element:
    ``|other - built| <= atol + rtol * |other|`` (NaN only where the other has NaN), except at most a fraction
    ``outliers`` of the elements (a chaotic iteration, where a peer's fused multiply-adds change a few points'
    fate). ``EXACT`` (all 0): the same values."""
    rtol: float = 0.0
    atol: float = 0.0
    outliers: float = 0.0

    def __str__(self) -> str:
        text = ", ".join(f"{name} {value:g}" for name, value in (("rtol", self.rtol), ("atol", self.atol)) if value)
        text = text or "exact"
        return f"{text} but at {self.outliers:.2%} of the elements" if self.outliers else text

    def excess(self, result: np.ndarray, built: np.ndarray) -> tuple[float, str | None]:
        """(how far past the tolerance ``result`` is: max |result - built| / (atol + rtol |result|), at most 1
        when within it; why they cannot be compared, or None)."""
        if result.shape != built.shape:
            return float("inf"), f"shape {result.shape} vs built {built.shape}"
        if result.dtype.kind in "biu" and built.dtype.kind in "biu":
            result, built = result.astype(np.int64), built.astype(np.int64)
        else:
            result, built = result.astype(np.float64), built.astype(np.float64)
        nan_r, nan_b = np.isnan(result), np.isnan(built)
        if not np.array_equal(nan_r, nan_b):
            return float("inf"), f"NaN at {int(np.sum(nan_r != nan_b))} element(s) where the other is a number"
        ok = ~nan_r
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.abs(result[ok] - built[ok]).astype(np.float64)
            allowed = self.atol + self.rtol * np.abs(result[ok]).astype(np.float64)
            ratio = np.where(diff == 0, 0.0, diff / allowed)     # inf where nothing is allowed but they differ
        spared = int(self.outliers * ratio.size)
        if spared and ratio.size:
            ratio = np.sort(ratio)[:ratio.size - spared]             # the worst ``spared`` elements may differ
        return float(np.max(ratio, initial=0.0)), None


EXACT = Tolerance()


@dataclass(frozen=True)
class PeerTolerances:
    """A tolerance per implementation: ``default``, and ``peers`` (label, Tolerance) pairs for some."""
    default: Tolerance
    peers: tuple = ()

    def of(self, label: str) -> Tolerance:
        return dict(self.peers).get(label, self.default)

    def __str__(self) -> str:
        return "; ".join([str(self.default)] + [f"{label} {tolerance}" for label, tolerance in self.peers])


@dataclass
class Agreement(Check):
    """The built result against every other implementation's, within ``tolerance``: ``ratio`` is the worst
    ``Tolerance.excess`` (at most 1 passes)."""
    tolerance: Tolerance | PeerTolerances = EXACT
    others: tuple = ()
    problems: tuple = ()
    correctness = True

    def cells(self) -> list[str]:
        status = {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]
        names = ", ".join(self.others) or "nothing to compare"
        figure = "-" if self.ratio is None else f"{self.ratio:.2g} of tol"
        note = f" ({'; '.join(self.problems)})" if self.problems else ""
        return [f"built == {names}: {self.tolerance}{note}", figure, status]


@dataclass
class Row:
    """One measured line: seconds per call of each implementation, the targets, and how far results differ."""
    name: str
    times: dict[str, float] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    diffs: dict[str, float] = field(default_factory=dict)


@dataclass
class BenchClass:
    name: str
    function: Callable[[Bench], list[Row]]
    wave: str
    modules: tuple[str, ...]     # the benchmarks/<name>.py modules it times, built before the classes run


CLASSES: list[BenchClass] = []
WAVES = {"first": "SPEC speed targets", "second": "ML workloads (SPEC second wave)",
         "third": "The same workloads spelled otherwise, tensor and dataset loops (SPEC third wave)",
         "build": "Build times (SPEC third wave)"}
_DEFAULT_MODULES = {"first": ("kernels",), "second": ("ml",), "third": ("ml", "variants"), "build": ()}


def bench_class(name: str, wave: str = "second", modules: tuple[str, ...] | None = None) -> Callable:
    """Register a benchmark class (``wave``: "first" for SPEC's speed targets, "second" for ML workloads, "third"
    for other spellings of them and tensor loops, "build" for build times). ``modules``: the built modules it uses
    (default: the wave's)."""
    if wave not in WAVES:
        raise ValueError(f"unknown wave {wave!r}: one of {sorted(WAVES)}")

    def register(function):
        CLASSES.append(BenchClass(name, function, wave, _DEFAULT_MODULES[wave] if modules is None else modules))
        return function
    return register


class Peers:
    """jax, tensorflow and numba, imported on first use (None when not installed)."""

    def __init__(self):
        self._modules: dict[str, object] = {}

    def get(self, package: str):
        if package not in self._modules:
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            try:
                self._modules[package] = __import__(package)
            except ImportError:
                self._modules[package] = None
        return self._modules[package]

    def versions(self) -> str:
        found = []
        for package in ("jax", "tensorflow", "numba"):
            module = self.get(package)
            found.append(f"{package} {module.__version__}" if module else f"{package} not installed")
        return ", ".join(found)


def as_arrays(value) -> list[np.ndarray]:
    """A result of any implementation (rt / tf / jax tensors, numpy arrays, scalars, or lists and tuples of
    them) as the list of its arrays."""
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in as_arrays(v)]
    if hasattr(value, "numpy"):
        value = value.numpy()
    return [np.asarray(value)]


def agreement(built, others: dict[str, object],
              tolerance: Tolerance | PeerTolerances) -> tuple[Agreement, dict[str, float]]:
    """The check that ``built`` (a result) agrees with each of ``others`` (label -> result) within
    ``tolerance``, and each one's largest absolute difference from it."""
    built_arrays = as_arrays(built)
    worst, problems, diffs = 0.0, [], {}
    for label, result in others.items():
        arrays = as_arrays(result)
        if len(arrays) != len(built_arrays):
            worst = float("inf")
            problems.append(f"{label} returns {len(arrays)} values, built {len(built_arrays)}")
            continue
        mine = tolerance.of(label) if isinstance(tolerance, PeerTolerances) else tolerance
        for i, (a, b) in enumerate(zip(arrays, built_arrays)):
            excess, why = mine.excess(a, b)
            worst = max(worst, excess)
            if why:
                problems.append(f"{label}{f' value {i}' if len(arrays) > 1 else ''}: {why}")
            elif a.size:
                diffs[label] = max(diffs.get(label, 0.0), float(np.max(np.abs(a.astype(np.float64) - b))))
            else:
                diffs.setdefault(label, 0.0)
    check = Agreement("results", worst if others else None, 1.0 if others else None, at_most=True,
                      tolerance=tolerance, others=tuple(others), problems=tuple(problems))
    return check, diffs


class Bench:
    """What a class function works with: built modules, peers, timing and notes."""

    def __init__(self, repeat: int = 7, quick: bool = False, built_only: bool = False, force: bool = False,
                 mean: bool = False):
        self.repeat = repeat
        self.mean = mean            # time each implementation as the mean of its calls (``mean_time``)
        self.quick = quick
        self.built_only = built_only
        self.force = force
        self.peers = Peers()
        self.notes: list[str] = []
        self.cache: dict[str, object] = {}      # figures measured once per run, shared by classes
        self._modules: dict[str, object] = {}

    def module(self, name: str):
        """``benchmarks/<name>.py`` built ahead of time (once per run) and imported."""
        if name not in self._modules:
            self._modules[name] = build_module(name, force=self.force)
        return self._modules[name]

    def time(self, fn: Callable[[], object], min_seconds: float = 0.2) -> float:
        return best_time(fn, max(3, self.repeat), min_seconds=min_seconds)

    def times(self, fns: list[Callable[[], object]], min_seconds: float = 0.2) -> list[float]:
        """Seconds per call of each of ``fns``, each timed in blocks repeated over rounds (``best_times``), or
        the mean of its calls over a window when ``mean``."""
        if self.mean:
            return [mean_time(fn, max(5 * min_seconds, 0.5)) for fn in fns]
        return best_times(fns, max(3, self.repeat), min_seconds=min_seconds)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def measure(self, name: str, implementations: dict[str, Callable], min_seconds: float = 0.2,
                tolerance: Tolerance | PeerTolerances | None = None) -> Row:
        """Time the implementations (``best_times``: a block each, repeated over rounds) and check that each
        one's result agrees with the built result within ``tolerance`` (required when there is anything to
        compare: the row states it)."""
        row = Row(name)
        timed: dict[str, Callable] = {}
        results: dict[str, object] = {}
        for label, make in implementations.items():
            package = peer_package(label)
            if package is not None:
                if self.built_only:
                    continue
                module = self.peers.get(package)
                if module is None:
                    continue
                fn = make(module)
            elif not label.startswith("built") and self.built_only:     # "built" or a variant "built: ..."
                continue
            else:
                fn = make
            results[label] = fn()
            timed[label] = fn
        if "built" in results and len(results) > 1:
            if tolerance is None:
                raise ValueError(f"{name}: measure() compares results with the built one: give the tolerance")
            self.agree(row, results.pop("built"), results, tolerance)
        for label, seconds in zip(timed, self.times(list(timed.values()), min_seconds)):
            row.times[label] = seconds
        return row

    def agree(self, row: Row, built, others: dict[str, object], tolerance: Tolerance | PeerTolerances) -> None:
        """Check (a row's first check) that ``built`` agrees with each result of ``others`` within ``tolerance``."""
        check, diffs = agreement(built, others, tolerance)
        row.checks.insert(0, check)
        row.diffs.update(diffs)

    def faster_than(self, row: Row, peer: str, at_least: float) -> None:
        """Target: ``peer``'s time / built time >= ``at_least`` (built is that many times as fast)."""
        ratio = row.times[peer] / row.times["built"] if peer in row.times and "built" in row.times else None
        row.checks.append(Check(f"{peer} / built", ratio, at_least))

    def within(self, row: Row, peer: str, at_most: float) -> None:
        """Target: built time / ``peer``'s time <= ``at_most``."""
        ratio = row.times["built"] / row.times[peer] if peer in row.times and "built" in row.times else None
        row.checks.append(Check(f"built / {peer}", ratio, at_most, at_most=True))


COLUMNS = ["built", "numpy", "jax.jit", "tf.function"]


def print_table(rows: list[Row]) -> None:
    """One line per target: the row's times (on its first line), the target, the ratio, the status."""
    header = ["benchmark", *COLUMNS, "other", "target", "ratio", "", "max |diff| from built"]
    lines = []
    for row in rows:
        other = ", ".join(f"{k} {fmt_time(v)}" for k, v in row.times.items() if k not in COLUMNS)
        times = [fmt_time(row.times[c]) if c in row.times else "-" for c in COLUMNS]
        diffs = ", ".join(f"{k} {v:.2g}" for k, v in row.diffs.items())
        checks = row.checks or [None]
        for i, check in enumerate(checks):
            cells = check.cells() if check else ["", "", ""]
            if i == 0:
                lines.append([row.name, *times, other, *cells, diffs])
            else:
                lines.append(["", *[""] * len(COLUMNS), "", *cells, ""])
    widths = [max(len(r[i]) for r in lines + [header]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
