"""``rt.config``: eager mode switch, threading settings and the devices (one CPU).

The device calls tutorials make before any math work as in TensorFlow on a machine without accelerators:
``list_physical_devices()`` is ``[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]``,
``list_physical_devices('GPU')`` is ``[]``; the CPU is always visible; setting memory growth on it is
TensorFlow's ``ValueError``.
"""
from __future__ import annotations

import contextlib
import os
from typing import NamedTuple

__all__ = ["LogicalDevice", "PhysicalDevice", "experimental", "functions_run_eagerly", "get_soft_device_placement",
           "get_visible_devices", "list_logical_devices", "list_physical_devices", "run_functions_eagerly",
           "set_soft_device_placement", "set_visible_devices", "threading"]

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


# ---------------------------------------------------------------------------
# Devices: rt runs on the CPU (native code's threads are set above), as TensorFlow does without accelerators.

class PhysicalDevice(NamedTuple):
    """A device of the machine (``tf.config.PhysicalDevice``)."""
    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device ops are placed on (``tf.config.LogicalDevice``)."""
    name: str
    device_type: str


_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_CPU_LOGICAL = LogicalDevice(name="/device:CPU:0", device_type="CPU")
_soft_placement = True


def _matches(device, device_type) -> bool:
    return device_type is None or str(device_type).upper() == device.device_type


def list_physical_devices(device_type=None) -> list:
    """The machine's devices of ``device_type`` (all when None): the CPU (``tf.config.list_physical_devices``)."""
    return [d for d in (_CPU,) if _matches(d, device_type)]


def list_logical_devices(device_type=None) -> list:
    """The devices ops run on (``tf.config.list_logical_devices``): the CPU."""
    return [d for d in (_CPU_LOGICAL,) if _matches(d, device_type)]


def get_visible_devices(device_type=None) -> list:
    """The visible physical devices (``tf.config.get_visible_devices``): the CPU, which is always visible."""
    return list_physical_devices(device_type)


def set_visible_devices(devices, device_type=None) -> None:
    """Choose the visible devices (``tf.config.set_visible_devices``): every device given must be one of
    ``list_physical_devices()``; the CPU cannot be hidden (``set_visible_devices([], 'GPU')`` is accepted)."""
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    devices = list(devices)
    for device in devices:
        if device not in list_physical_devices():
            raise ValueError(f"Unrecognized device: {device!r} (the devices are {list_physical_devices()})")
        if not _matches(device, device_type):
            raise ValueError(f"set_visible_devices: {device!r} is not of device_type {device_type!r}")
    if _matches(_CPU, device_type) and _CPU not in devices:
        raise ValueError("set_visible_devices: rt runs on the CPU, which cannot be hidden")


def set_soft_device_placement(enabled: bool) -> None:
    global _soft_placement
    _soft_placement = bool(enabled)


def get_soft_device_placement() -> bool:
    return _soft_placement


# ``rt.debugging.set_log_device_placement(True)``: each op run eagerly says where it runs (registry.apply reads it)
LOG_DEVICE_PLACEMENT = False
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def set_log_device_placement(enabled: bool) -> None:
    """``tf.debugging.set_log_device_placement``: each op run eagerly writes ``Executing op MatMul in device
    /job:localhost/replica:0/task:0/device:CPU:0`` to stderr, as TensorFlow's eager ops do (rt runs everything on
    the CPU); Functions' graphs and built code log nothing."""
    global LOG_DEVICE_PLACEMENT
    LOG_DEVICE_PLACEMENT = bool(enabled)


def get_log_device_placement() -> bool:
    return LOG_DEVICE_PLACEMENT


def _check_gpu(device, what: str) -> None:
    if not isinstance(device, PhysicalDevice) or device.device_type != "GPU":
        raise ValueError(f"Cannot {what} on non-GPU and non-Pluggable devices")


class experimental:  # noqa: N801 - mirrors tf.config.experimental
    """``tf.config.experimental``: memory growth (for GPUs, which rt has none of) and the device lists."""

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    get_visible_devices = staticmethod(get_visible_devices)
    set_visible_devices = staticmethod(set_visible_devices)

    @staticmethod
    def set_memory_growth(device, enable: bool) -> None:
        """``ValueError`` on the CPU, as in TensorFlow (rt sees no GPU to set it on)."""
        _check_gpu(device, "set memory growth")

    @staticmethod
    def get_memory_growth(device) -> bool:
        _check_gpu(device, "get memory growth")
        return False

    @staticmethod
    def enable_op_determinism() -> None:
        """Accepted: rt's results do not depend on thread timing (reductions combine in a fixed order)."""

    @staticmethod
    def disable_op_determinism() -> None:
        """Accepted (see ``enable_op_determinism``)."""


@contextlib.contextmanager
def device(device_name):
    """``with rt.device('CPU:0'):`` (``tf.device``): everything runs on the CPU; any device name is accepted, as
    TensorFlow's soft placement accepts a missing GPU's."""
    if device_name is not None and not isinstance(device_name, str):
        raise TypeError(f"rt.device: the device name must be a string, got {type(device_name).__name__}")
    yield


def _missing(name: str):
    raise AttributeError(f"rt has no config.{name} (TensorFlow's tf.config.{name}); see the README's API table")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _missing(name)
