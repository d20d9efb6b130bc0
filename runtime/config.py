"""``rt.config``: eager mode switch and threading settings."""
from __future__ import annotations

import os

_run_eagerly = False

# Loops over fewer elements than this run on one thread. Waking the pool's sleeping workers
# (OMP_WAIT_POLICY=PASSIVE) took 30-50 us on the 2-core VM the benchmarks run on, while one thread copies
# 200K floats in 20 us: at 65536 elements a transpose inside the RNN benchmark ran 1.4x slower on two
# threads than on one. The one copy of this threshold: native code reads it as RT_PARALLEL_MIN from the
# generated ``runtime/kernels/rt_config.h``, and the code generator from here.
PARALLEL_MIN_ELEMENTS = 1 << 18


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every ``rt.function`` run its Python code eagerly (for debugging)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)
    _notify()


def functions_run_eagerly() -> bool:
    return _run_eagerly


class threading:  # noqa: N801 - mirrors tf.config.threading
    """Thread counts used by native code: intra-op (parallel loops, matmuls) and inter-op (independent ops).

    Native code has one thread pool, OpenMP's: the matmul kernels are the runtime's own, parallelised in
    the same pool, so no BLAS pool competes with it for the cores. A process forked after native code ran
    on several threads runs native code on one thread: OpenMP's pool does not survive ``fork()``.
    """

    _intra = 0
    _inter = 0

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads: int) -> None:
        threading._intra = int(num_threads)
        _notify()

    @staticmethod
    def get_intra_op_parallelism_threads() -> int:
        return threading._intra

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads: int) -> None:
        threading._inter = int(num_threads)
        _notify()

    @staticmethod
    def get_inter_op_parallelism_threads() -> int:
        return threading._inter


_cpu_count = None
_pool_may_run = False    # native code was handed more than one thread: OpenMP's pool may have started
_forked_child = False    # this process was forked after that: its copy of the pool has no threads


def intra_op_threads() -> int:
    """Threads for parallel loops: the setting, else OMP_NUM_THREADS, else the CPU count (1 in a forked child)."""
    global _cpu_count, _pool_may_run
    if _forked_child:
        return 1
    if threading._intra > 0:
        count = threading._intra
    else:
        env = os.environ.get("OMP_NUM_THREADS", "")
        if env.strip().isdigit() and int(env) > 0:
            count = int(env)
        else:
            if _cpu_count is None:
                _cpu_count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                    else (os.cpu_count() or 1)
            count = _cpu_count
    _pool_may_run = _pool_may_run or count > 1
    return count


def threads_follow_load() -> bool:
    """Whether native code may use fewer intra-op threads than ``intra_op_threads()`` while other processes
    keep the cores busy: when neither ``set_intra_op_parallelism_threads`` nor ``OMP_NUM_THREADS`` chose the
    count (``rt_available_threads`` in ``rt_kernels.h`` says why and how)."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    return threading._intra <= 0 and not (env.strip().isdigit() and int(env) > 0)


def inter_op_threads() -> int:
    """Threads for independent parts of a graph: the setting, else as many as intra-op (1 in a forked child)."""
    global _pool_may_run
    if _forked_child:
        return 1
    count = threading._inter if threading._inter > 0 else intra_op_threads()
    _pool_may_run = _pool_may_run or count > 1
    return count


def _after_fork_in_child() -> None:
    """libgomp's thread pool does not survive fork: a parallel region in the child would wait forever for
    workers that do not exist. A child of a process whose pool may have started runs on one thread."""
    global _forked_child
    if _pool_may_run:
        _forked_child = True
        _notify()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# Called after any setting changes: the compiled call path (``runtime._native``, a higher layer) keeps
# copies of the eager switch and the thread counts, and registers here to refresh them.
_listeners: list = []


def add_listener(listener) -> None:
    """``listener()`` runs after each change of a setting (``run_functions_eagerly``, thread counts, fork)."""
    _listeners.append(listener)


def _notify() -> None:
    for listener in _listeners:
        listener()
