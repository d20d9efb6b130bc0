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
to time. Every callable returns its result; ``measure`` prints the largest difference from the built
result.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from benchmarks.support import best_time, best_times, build_module, fmt_time

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

    def cells(self) -> list[str]:
        ratio = "-" if self.ratio is None else f"{self.ratio:.3g}{self.unit}"
        if self.threshold is None:
            return [self.label, ratio, "info"]
        sign = "<=" if self.at_most else ">="
        status = {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]
        return [f"{self.label} {sign} {self.threshold:g}{self.unit}", ratio, status]


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


CLASSES: list[BenchClass] = []


def bench_class(name: str, wave: str = "second") -> Callable:
    """Register a benchmark class (``wave``: "first" for SPEC's speed targets, "second" for ML workloads, "third"
    for other spellings of them and tensor loops)."""
    def register(function):
        CLASSES.append(BenchClass(name, function, wave))
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


def as_array(value) -> np.ndarray:
    """A result of any implementation (rt / tf / jax tensor, numpy array, scalar) as a numpy array."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


class Bench:
    """What a class function works with: built modules, peers, timing and notes."""

    def __init__(self, repeat: int = 7, quick: bool = False, built_only: bool = False, force: bool = False):
        self.repeat = repeat
        self.quick = quick
        self.built_only = built_only
        self.force = force
        self.peers = Peers()
        self.notes: list[str] = []
        self._modules: dict[str, object] = {}

    def module(self, name: str):
        """``benchmarks/<name>.py`` built ahead of time (once per run) and imported."""
        if name not in self._modules:
            self._modules[name] = build_module(name, force=self.force)
        return self._modules[name]

    def time(self, fn: Callable[[], object], min_seconds: float = 0.2) -> float:
        return best_time(fn, max(3, self.repeat), min_seconds=min_seconds)

    def times(self, fns: list[Callable[[], object]], min_seconds: float = 0.2) -> list[float]:
        """Seconds per call of each of ``fns``, each timed in blocks repeated over rounds (``best_times``)."""
        return best_times(fns, max(3, self.repeat), min_seconds=min_seconds)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def measure(self, name: str, implementations: dict[str, Callable], min_seconds: float = 0.2) -> Row:
        """Time the implementations (``best_times``: a block each, repeated over rounds) and record each
        one's largest difference from the built result."""
        row = Row(name)
        reference = None
        timed: dict[str, Callable] = {}
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
            result = as_array(fn())
            if label == "built":
                reference = result
            elif reference is not None:
                row.diffs[label] = float(np.max(np.abs(result.astype(np.float64) - reference), initial=0.0))
            timed[label] = fn
        for label, seconds in zip(timed, self.times(list(timed.values()), min_seconds)):
            row.times[label] = seconds
        return row

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
