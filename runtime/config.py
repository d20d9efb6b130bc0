"""``rt.config``: eager mode switch and threading settings."""
from __future__ import annotations

import os

_run_eagerly = False

# Loops over fewer elements than this run on one thread: starting a parallel region costs microseconds.
# The one copy of this threshold: native code reads it as RT_PARALLEL_MIN from the generated
# ``runtime/kernels/rt_config.h``, and the code generator from here.
PARALLEL_MIN_ELEMENTS = 65536


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every ``rt.function`` run its Python code eagerly (for debugging)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)
    try:
        from runtime import _native
        _native.set_run_eagerly(_run_eagerly)
    except ImportError:
        pass


def functions_run_eagerly() -> bool:
    return _run_eagerly


class threading:  # noqa: N801 - mirrors tf.config.threading
    """Thread counts used by native code: intra-op (parallel loops) and inter-op (independent ops)."""

    _intra = 0
    _inter = 0

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads: int) -> None:
        threading._intra = int(num_threads)
        _apply_threads()

    @staticmethod
    def get_intra_op_parallelism_threads() -> int:
        return threading._intra

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads: int) -> None:
        threading._inter = int(num_threads)
        _apply_threads()

    @staticmethod
    def get_inter_op_parallelism_threads() -> int:
        return threading._inter


_cpu_count = None


def intra_op_threads() -> int:
    """Threads for parallel loops: the setting, else OMP_NUM_THREADS, else the CPU count."""
    global _cpu_count
    if threading._intra > 0:
        return threading._intra
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    if _cpu_count is None:
        _cpu_count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return _cpu_count


def inter_op_threads() -> int:
    if threading._inter > 0:
        return threading._inter
    return intra_op_threads()


_listeners: list = []


def _apply_threads() -> None:
    try:
        from runtime import _native
        _native.forget_threads()
    except ImportError:
        pass
    for listener in _listeners:
        listener()
