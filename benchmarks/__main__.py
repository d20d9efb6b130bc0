"""python -m benchmarks [--strict] [--quick] [--force]: the speed targets, measured in one run.

Prints the machine, then one table: each figure, the ratio it gives, the target
threshold and PASS/FAIL. Exit status 0 even when a target is missed, unless
``--strict``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

import runtime as rt
from benchmarks.support import best_time, build_kernels, build_power_ref, fmt_time, machine


@dataclass
class Target:
    """One speed target: ``ratio`` compared with ``threshold`` (``at_most`` or at least)."""
    name: str
    figures: str
    ratio: float
    threshold: float
    at_most: bool
    unit: str = "x"

    @property
    def passed(self) -> bool:
        return self.ratio <= self.threshold if self.at_most else self.ratio >= self.threshold

    def row(self) -> list[str]:
        sign = "<=" if self.at_most else ">="
        return [self.name, self.figures, f"{self.ratio:.3g}{self.unit}", f"{sign} {self.threshold:g}{self.unit}",
                "PASS" if self.passed else "FAIL"]


def intra_threads(n: int) -> None:
    rt.config.threading.set_intra_op_parallelism_threads(n)


def bench_power(kernels, lib, notes: list[str], repeat: int) -> list[Target]:
    """The guide's power(x, 100): built vs hand-written C (-O3) vs the numpy eager loop."""
    x = rt.random.uniform(shape=[10, 10], minval=-1, maxval=2, dtype=rt.int32, seed=1)
    xn = np.ascontiguousarray(x.numpy())
    out = np.empty((10, 10), np.int32)
    x_ptr, out_ptr = xn.ctypes.data, out.ctypes.data   # plain ints: no ctypes object built per call

    def numpy_loop():
        r = np.eye(10, dtype=np.int32)
        for _ in range(100):
            r = xn @ r
        return r

    built = kernels.power_as_graph(x, 100).numpy()
    lib.power_ref(x_ptr, out_ptr, 100)
    agree = bool((built == numpy_loop()).all() and (built == out).all())
    notes.append(f"power: built == C == numpy: {agree}; traces at run time: "
                 f"{kernels.power_as_graph.experimental_get_tracing_count()}")
    intra_threads(1)
    t_built = best_time(lambda: kernels.power_as_graph(x, 100), repeat)
    t_c = best_time(lambda: lib.power_ref(x_ptr, out_ptr, 100), repeat)
    t_c_inside = min(lib.power_ref_batch(x_ptr, out_ptr, 100, 2000) for _ in range(repeat))
    t_numpy = best_time(numpy_loop, repeat)
    t_eager = best_time(lambda: kernels.power(x, 100), max(3, repeat // 2), min_seconds=0.5)
    notes.append(f"power: C per call timed inside C (no Python call) {fmt_time(t_c_inside)}, so the ctypes call "
                 f"costs {fmt_time(t_c - t_c_inside)}; rt eager power(x, 100) {fmt_time(t_eager)}")
    return [
        Target("power(x, 100): built / C -O3", f"{fmt_time(t_built)} vs {fmt_time(t_c)}", t_built / t_c, 1.5, True),
        Target("power(x, 100): numpy loop / built", f"{fmt_time(t_numpy)} vs {fmt_time(t_built)}",
               t_numpy / t_built, 10, False),
        Target("power(x, 100): built / C in-C batch", f"{fmt_time(t_built)} vs {fmt_time(t_c_inside)}",
               t_built / t_c_inside, 1.5, True),
    ]


def bench_call(kernels, notes: list[str], repeat: int) -> list[Target]:
    """A built one-op function on two 0-d float32 arrays vs numpy.add on the same arrays."""
    a, b = np.array(1.5, np.float32), np.array(2.5, np.float32)
    assert float(kernels.add(a, b).numpy()) == 4.0
    t_built = best_time(lambda: kernels.add(a, b), repeat)
    t_numpy = best_time(lambda: np.add(a, b), repeat)
    ta, tb = rt.constant(1.5), rt.constant(2.5)
    concrete = kernels.add.concrete_functions()[0]
    t_tensors = best_time(lambda: kernels.add(ta, tb), repeat)
    t_concrete = best_time(lambda: concrete(ta, tb), repeat)
    notes.append(f"add: with rt tensors {fmt_time(t_tensors)}, calling the ConcreteFunction {fmt_time(t_concrete)}; "
                 f"native {concrete.native}, traces at run time {kernels.add.experimental_get_tracing_count()}")
    return [Target("add(a, b) 0-d: built / numpy.add", f"{fmt_time(t_built)} vs {fmt_time(t_numpy)}",
                   t_built / t_numpy, 2, True)]


def float32_ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 units in the last place (adjacent floats are 1 apart, +0 and -0 are 0)."""
    def ordered(v):
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(2 ** 31) - i, i)
    return np.abs(ordered(a) - ordered(b))


def bench_chain(kernels, notes: list[str], repeat: int, n: int) -> list[Target]:
    """rt.tanh(x * 1.5 + 0.5) * 2.0 - x on float32 vs numpy, one and two threads."""
    x = np.random.default_rng(0).uniform(-3, 3, n).astype(np.float32)

    def numpy_chain():
        return np.tanh(x * np.float32(1.5) + np.float32(0.5)) * np.float32(2.0) - x

    reference = numpy_chain()
    intra_threads(1)
    result = kernels.chain(x).numpy()
    raw = float32_ulps(result, reference)
    # The last subtraction cancels (2 tanh(1.5x + 0.5) ~ x near x = -1.97), so the error is measured in ulps of
    # the operands' magnitude, the precision float32 can give the result there.
    scale = np.maximum(np.abs(x), np.abs(np.float32(2.0) * np.tanh(x * np.float32(1.5) + np.float32(0.5))))
    scaled = np.abs(result.astype(np.float64) - reference) / np.spacing(scale).astype(np.float64)
    worst = int(raw.argmax())
    notes.append(f"chain: max |built - numpy| = {np.abs(result - reference).max():.3g}; max {scaled.max():.3g} ulp "
                 f"of the operands' magnitude; max {raw.max()} ulp of the result itself, at x={x[worst]:.6g} "
                 f"(numpy {reference[worst]:.8g}, built {result[worst]:.8g}, cancellation)")
    t_numpy = best_time(numpy_chain, repeat)
    t_one = best_time(lambda: kernels.chain(x), repeat)
    intra_threads(2)
    t_two = best_time(lambda: kernels.chain(x), repeat)
    intra_threads(1)
    size = f"{n:.0e}".replace("+0", "")
    return [
        Target(f"tanh chain {size}, 1 thread: numpy / built", f"{fmt_time(t_numpy)} vs {fmt_time(t_one)}",
               t_numpy / t_one, 2.5, False),
        Target(f"tanh chain {size}, 2 threads: numpy / built", f"{fmt_time(t_numpy)} vs {fmt_time(t_two)}",
               t_numpy / t_two, 3, False),
        Target("tanh chain: max difference from numpy", f"{np.abs(result - reference).max():.3g} abs",
               float(scaled.max()), 4, True, unit=" ulp"),
    ]


def bench_retrace(kernels, notes: list[str], repeat: int) -> list[Target]:
    """The first call of a built module's 20-op function with a signature nobody built."""
    fn = kernels.twenty_ops
    rng = np.random.default_rng(1)
    times = []
    for rows in range(3, 3 + max(repeat, 5) * 2):   # every shape is a new signature: a retrace
        x = rng.standard_normal((rows, 9)).astype(np.float64)
        y = rng.standard_normal((rows, 9)).astype(np.float64)
        start = time.perf_counter()
        value = fn(x, y)
        times.append(time.perf_counter() - start)
    rt.config.run_functions_eagerly(True)
    try:
        expected = fn(x, y)
    finally:
        rt.config.run_functions_eagerly(False)
    notes.append(f"retrace: {fn.experimental_get_tracing_count()} run-time traces; first ever "
                 f"{fmt_time(times[0])}, median {fmt_time(statistics.median(times))}; result == eager: "
                 f"{bool(np.allclose(value.numpy(), expected.numpy()))}; built signatures native: "
                 f"{[c.native for c in fn.concrete_functions()][:1]}")
    best = min(times)
    return [Target("retrace 20-op fn, unseen signature", f"first result in {fmt_time(best)} (min)", best * 1e3, 20,
                   True, unit=" ms"),
            Target("  ... first retrace in the process", f"{fmt_time(times[0])}", times[0] * 1e3, 20, True,
                   unit=" ms")]


def bench_branches(kernels, notes: list[str], repeat: int, n: int) -> list[Target]:
    """Two independent heavy branches of one graph with 1 vs 2 inter-op threads (1 intra-op thread)."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    intra_threads(1)
    rt.config.threading.set_inter_op_parallelism_threads(1)
    t_one = best_time(lambda: kernels.two_branches(a, b), max(3, repeat // 2), min_seconds=1.0)
    one = float(kernels.two_branches(a, b).numpy())
    rt.config.threading.set_inter_op_parallelism_threads(2)
    t_two = best_time(lambda: kernels.two_branches(a, b), max(3, repeat // 2), min_seconds=1.0)
    two = float(kernels.two_branches(a, b).numpy())
    rt.config.threading.set_inter_op_parallelism_threads(1)
    notes.append(f"branches: same result with 1 and 2 inter-op threads: {one == two}")
    return [Target("two branches: 1 / 2 inter-op threads", f"{fmt_time(t_one)} vs {fmt_time(t_two)}",
                   t_one / t_two, 1.3, False)]


def print_table(rows: list[list[str]]) -> None:
    header = ["benchmark", "figures", "ratio", "target", ""]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller arrays (not the targets' "
                                                            "sizes: for trying the benchmark out)")
    parser.add_argument("--force", action="store_true", help="rebuild the benchmark module")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    print(f"machine: {machine()}")
    start = time.perf_counter()
    kernels = build_kernels(force=args.force)
    lib = build_power_ref()
    built = [kernels.power_as_graph, kernels.add, kernels.chain, kernels.twenty_ops, kernels.two_branches]
    native = all(c.native for f in built for c in f.concrete_functions())
    print(f"built benchmarks/kernels.py and power_ref.c in {time.perf_counter() - start:.1f}s; "
          f"built signatures native: {native}")
    print()
    notes: list[str] = []
    targets: list[Target] = []
    targets += bench_power(kernels, lib, notes, repeat)
    targets += bench_call(kernels, notes, repeat)
    targets += bench_chain(kernels, notes, repeat, 1_000_000 if args.quick else 10_000_000)
    targets += bench_retrace(kernels, notes, repeat)
    targets += bench_branches(kernels, notes, repeat, 200_000 if args.quick else 1_000_000)
    print_table([t.row() for t in targets])
    print()
    for note in notes:
        print(f"  {note}")
    failed = [t.name for t in targets if not t.passed]
    print()
    print(f"{len(targets) - len(failed)} of {len(targets)} targets met" + (" (--quick: not the targets' sizes)"
                                                                          if args.quick else ""))
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
