"""python -m benchmarks: SPEC's speed targets and ML workloads against numpy, jax.jit, tf.function, Numba.

Prints the machine, then one table per wave: each implementation's time per call, each target, the ratio
it gives and PASS/FAIL, and whether each peer's result agrees with the built one within the row's stated
tolerance. Exit status 1 when a built result is wrong (differs beyond its tolerance); 0 when a speed
target is missed, unless ``--strict``. ``--threads-sweep`` runs the second wave in subprocesses under the
default environment and each OMP_NUM_THREADS / OPENBLAS_NUM_THREADS setting in {1, 2}, and compares the
default with the best setting (target: within 1.2x).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time

import runtime as rt
from benchmarks.harness import CLASSES, WAVES, Bench, Row, print_table
from benchmarks.support import PEERS_LIMITED, c_flags, fmt_time, isa, machine, peer_isa_environment

# Modules whose @bench_class functions make up the run, in order; add yours here.
CLASS_MODULES = ["benchmarks.first_wave", "benchmarks.second_wave", "benchmarks.training_bench",
                 "benchmarks.jit_compile_bench", "benchmarks.variants_bench", "benchmarks.data_bench",
                 "benchmarks.fit_bench", "benchmarks.build_time"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SWEEP_TARGET = 1.2
SWEEP_BUSY_TARGET = 1.3     # SPEC third wave: with another CPU-bound process running


def _load_classes() -> None:
    for name in CLASS_MODULES:
        __import__(name)


def _reset_threads() -> None:
    rt.config.threading.set_intra_op_parallelism_threads(0)
    rt.config.threading.set_inter_op_parallelism_threads(0)


def run_classes(args) -> list[tuple[str, list[Row]]]:
    bench = Bench(repeat=3 if args.quick else 7, quick=args.quick, built_only=args.built_only, force=args.force,
                  mean=args.mean)
    chosen = [c for c in CLASSES if (not args.only or c.name in args.only) and (not args.wave or c.wave == args.wave)]
    start = time.perf_counter()
    for module in sorted({module for c in chosen for module in c.modules}):
        bench.module(module)
    if not args.json:
        print(f"built the benchmark modules in {time.perf_counter() - start:.1f}s")
        if not args.built_only:
            print(f"peers: {bench.peers.versions()}")
        print()
    results = []
    for bench_class in chosen:
        _reset_threads()
        results.append((bench_class.wave, bench_class.function(bench)))
    _reset_threads()
    if args.json:
        print("JSON:" + json.dumps({row.name: row.times.get("built") for _, rows in results for row in rows}))
        return results
    for wave, title in WAVES.items():
        rows = [row for w, rs in results if w == wave for row in rs]
        if rows:
            print(f"== {title}")
            print_table(rows)
            print()
    for note in bench.notes:
        print(f"  {note}")
    return results


def threads_sweep(args) -> list[tuple[str, float]]:
    """Each second-wave row's built time under every thread setting, and default / best; with ``--busy``, while
    another process keeps one core busy (a Python busy loop), against SWEEP_BUSY_TARGET, each time the mean of a
    window's calls (``--mean``): two threads' best call is then much faster than their mean (all dot products:
    68 us best, 186 us mean, one thread 132 us), and a loop of calls takes the mean."""
    settings = [None] + list(itertools.product((1, 2), repeat=2))
    times: dict[object, dict[str, float]] = {}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        _sweep(args, settings, times)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    target = SWEEP_BUSY_TARGET if args.busy else SWEEP_TARGET
    labels = ["default"] + [f"OMP={o} BLAS={b}" for o, b in settings[1:]]
    header = ["benchmark (built)", *labels, "default / best", ""]
    lines, ratios = [], []
    for name in times[None]:
        row = [times[s][name] for s in settings]
        ratio = row[0] / min(row)
        ratios.append((name, ratio, target))
        lines.append([name, *[fmt_time(t) for t in row], f"{ratio:.2f}x", "PASS" if ratio <= target else "FAIL"])
    print("== default environment vs OMP_NUM_THREADS / OPENBLAS_NUM_THREADS in {1, 2}"
          + (" with another process keeping a core busy" if args.busy else "")
          + f" (target: default <= {target}x the best)")
    widths = [max(len(r[i]) for r in lines + [header]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths]] + lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return ratios


def _sweep(args, settings: list, times: dict) -> None:
    command = [sys.executable, "-m", "benchmarks", "--built-only", "--json", "--wave", "second"]
    command += ["--quick"] if args.quick else []
    command += ["--mean"] if args.busy else []      # the stalls a busy machine causes are the point: keep them
    for only in args.only or []:
        command += ["--only", only]
    for round_ in range(5):                # best of five rounds, each in another order: load drifts meanwhile
        for setting in settings[round_:] + settings[:round_]:
            env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
            if setting is not None:
                env.update({name: str(value) for name, value in zip(THREAD_VARIABLES, setting)})
            proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} ({setting}) failed:\n{proc.stdout}\n{proc.stderr}")
            line = next(s for s in proc.stdout.splitlines() if s.startswith("JSON:"))
            for name, seconds in json.loads(line[5:]).items():
                best = times.setdefault(setting, {}).get(name)
                times[setting][name] = seconds if best is None else min(best, seconds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller arrays (not the targets' "
                                                            "sizes: for trying the benchmark out)")
    parser.add_argument("--force", action="store_true", help="rebuild the benchmark modules")
    parser.add_argument("--only", action="append", metavar="CLASS", help="run this class (repeatable); --list")
    parser.add_argument("--wave", choices=sorted(WAVES), help="run one wave only")
    parser.add_argument("--list", action="store_true", help="list the benchmark classes")
    parser.add_argument("--built-only", action="store_true", help="time the built code only (no peers)")
    parser.add_argument("--json", action="store_true", help="print only a JSON line of built times")
    parser.add_argument("--threads-sweep", action="store_true",
                        help="compare the default environment with OMP/OPENBLAS_NUM_THREADS in {1, 2}")
    parser.add_argument("--busy", action="store_true",
                        help="with --threads-sweep: while another process keeps a core busy (target 1.3x)")
    parser.add_argument("--mean", action="store_true",
                        help="time each implementation as the mean of its calls over a window (what a loop of "
                             "calls takes) instead of the best block; --threads-sweep --busy uses it")
    parser.add_argument("--peers-full-isa", action="store_true",
                        help="with RT_MARCH below this machine's level: leave the peers their full ISA (by default "
                             "they are held to RT_MARCH's level, as on a machine of that level)")
    args = parser.parse_args(argv)
    limits = {} if args.peers_full_isa or os.environ.get(PEERS_LIMITED) else peer_isa_environment()
    if limits:       # the peers read these when they load: run again in a process that has them
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks", *(sys.argv[1:] if argv is None else argv)],
                  {**os.environ, **limits})
    _load_classes()
    if args.list:
        for c in CLASSES:
            print(f"{c.wave:6}  {c.name}")
        return 0
    unknown = set(args.only or []) - {c.name for c in CLASSES}
    if unknown:
        parser.error(f"unknown class {sorted(unknown)}; --list shows them")
    if not args.json:
        print(f"machine: {machine()}")
        print(f"ISA of the generated code: {isa()}")
        print(f"C references and generated code compiled with: {' '.join(c_flags())}")
        if os.environ.get(PEERS_LIMITED):
            held = ", ".join(f"{k}={os.environ[k]}" for k in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
                                                               "XLA_FLAGS", "ONEDNN_MAX_CPU_ISA", "NUMBA_CPU_NAME"))
            print(f"peers held to {os.environ[PEERS_LIMITED]} like the generated code (--peers-full-isa: not): {held}")
    if args.threads_sweep:
        failed = [name for name, ratio, target in threads_sweep(args) if ratio > target]
        return 1 if failed and args.strict else 0
    results = run_classes(args)
    if args.json:
        return 0
    return summarize(results, args.strict, args.quick)


def summarize(results: list[tuple[str, list[Row]]], strict: bool, quick: bool = False) -> int:
    """Print how many targets were met and which results disagree; the exit status: 1 when a built result
    differs from another implementation's beyond its row's tolerance (always) or, with ``strict``, when a
    speed target is missed."""
    rows = [row for _, rs in results for row in rs]
    checks = [c for row in rows for c in row.checks if c.threshold is not None and not c.correctness]
    failed = [c for c in checks if c.passed is False]
    missing = [c for c in checks if c.passed is None]
    wrong = [row.name for row in rows if any(c.correctness and c.passed is False for c in row.checks)]
    compared = sum(any(c.correctness and c.passed is not None for c in row.checks) for row in rows)
    print()
    print(f"{len(checks) - len(failed) - len(missing)} of {len(checks)} targets met"
          + (f", {len(missing)} not measured (peer not installed, or --built-only)" if missing else "")
          + (" (--quick: not the targets' sizes)" if quick else ""))
    if compared:
        print(f"results: {compared - len(wrong)} of {compared} rows agree with their peers within the rows' "
              "tolerances")
    for name in wrong:
        print(f"FAILED: {name}: the built result differs from another implementation's beyond the row's tolerance")
    return 1 if wrong or (failed and strict) else 0


if __name__ == "__main__":
    sys.exit(main())
