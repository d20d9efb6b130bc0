"""python -m benchmarks.dask_workers [--chunks N] [--chunk-size N]: a built function over chunks with Dask,
1 worker against 2, with threads and with processes.

The built function is a fused elementwise chain (``rt.tanh(x * 1.5 + 0.5) * 2.0 - x``, four times), built
ahead of time into ``benchmarks/_build``. Each call runs on one OpenMP thread
(``set_intra_op_parallelism_threads(1)``), so the speed-up comes from Dask's workers alone: threaded workers
scale because the native code releases the GIL; process workers scale because the function pickles by
reference and each worker imports the built module.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

import runtime as rt
from benchmarks.support import BUILD_DIR, machine

MODULE = "rt_dask_bench"
SOURCE = '''
import runtime as rt


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def chain(x):
    for _ in range(4):
        x = rt.tanh(x * 1.5 + 0.5) * 2.0 - x
    return x


def on_block(block):
    return chain(block).numpy()
'''


def build_module():
    BUILD_DIR.mkdir(exist_ok=True)
    source = BUILD_DIR / f"{MODULE}.py"
    if not source.exists() or source.read_text() != textwrap.dedent(SOURCE):
        source.write_text(textwrap.dedent(SOURCE))
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(source)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building {source} failed:\n{proc.stdout}\n{proc.stderr}")
    sys.path.insert(0, str(BUILD_DIR))
    # worker processes import the built module too
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(BUILD_DIR), os.environ.get("PYTHONPATH")) if p)
    import importlib
    module = importlib.import_module(MODULE)
    if not module.chain.get_concrete_function().native:
        raise RuntimeError(f"{MODULE}.chain does not run native code")
    return module


def best(fn, repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_workers", description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("--chunk-size", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    module = build_module()
    rt.config.threading.set_intra_op_parallelism_threads(1)
    data = np.random.default_rng(0).random(args.chunks * args.chunk_size, dtype=np.float32)
    x = da.from_array(data, chunks=args.chunk_size)
    y = x.map_blocks(module.on_block, meta=np.array((), np.float32))
    reference = float(module.chain(data).numpy().sum(dtype=np.float64))
    print(machine())
    print(f"{args.chunks} chunks of {args.chunk_size} float32, one OpenMP thread per call\n")
    rows = []
    for n in (1, 2):
        with dask.config.set(scheduler="threads", num_workers=n):
            total = float(y.sum(dtype=np.float64).compute())
            rows.append(("threads", n, best(lambda: y.sum().compute())))
        assert abs(total - reference) <= 1e-6 * abs(reference), (total, reference)
    for n in (1, 2):
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(n)
            client.run(rt.config.threading.set_intra_op_parallelism_threads, 1)
            resident = x.persist()            # the chunks live on the workers: time the compute, not the transfer
            wait(resident)
            on_cluster = resident.map_blocks(module.on_block, meta=np.array((), np.float32))
            total = float(on_cluster.sum(dtype=np.float64).compute())
            rows.append(("processes", n, best(lambda: on_cluster.sum().compute())))
        assert abs(total - reference) <= 1e-6 * abs(reference), (total, reference)
    print(f"{'workers':<12} {'n':>2} {'time':>10} {'speed-up':>9}")
    for kind, n, seconds in rows:
        one = next(s for k, m, s in rows if k == kind and m == 1)
        print(f"{kind:<12} {n:>2} {seconds * 1e3:>8.1f}ms {one / seconds:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
