"""What a no-op rebuild pays for: the driver's imports and its fork server (no compiler needed).

A rebuild with nothing to do is a few file reads; it took 0.56 s while the driver imported the runtime (numpy,
the graph, AutoGraph) for the cache directory's paths, and the fork server it starts early is killed unused.
"""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from transpiler.build.driver import _Workers
from transpiler.build.forkserver import ForkServer

PROJECT = Path(__file__).resolve().parents[3]


def test_the_build_driver_imports_neither_the_runtime_nor_numpy():
    code = ("import sys, transpiler.build.driver, transpiler.build.cli, transpiler.cli; "
            "print(sorted(m for m in ('runtime', 'numpy', 'libcst') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_fork_server_that_forked_nothing_is_killed_not_waited_for():
    server = ForkServer(_Workers.environment())
    server.close()
    assert server._process.returncode == -signal.SIGKILL     # a server closed normally exits with 0
