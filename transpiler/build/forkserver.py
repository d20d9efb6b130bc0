"""Build workers forked from one process that has imported the toolchain: ``python -m transpiler.build.forkserver``.

Each module is built in a process of its own (its import must not see another module's), and a new Python
process spent most of a small module's build importing numpy, the runtime, the converter and the code
generator again: 0.4 s of CPU with bytecode caches, 0.8 s without, against about 0.5 s for the rest of the
build. The driver starts this server once per build; it imports all that, then forks one child per module,
which runs ``transpiler.build.worker`` on the module's request as a fresh worker process would, its output
going to the module's log.

The protocol is lines of text. The driver writes ``spawn TOKEN REQUEST LOG`` (paths hex-encoded) and
``signal TOKEN SIGNUM``; the server answers ``started TOKEN PID`` and, once it reaped the child,
``exited TOKEN STATUS`` (a negative status: killed by that signal). The server signals only children it has
not reaped (so never a process that took a reused pid), ignores Ctrl-C (the driver and the children handle
it), and exits when its input closes, after its children.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import traceback

from transpiler.lazy import lazy_import

# What every module's build imports (the runtime with them), loaded by the server before it forks; the
# driver, which imports this module for ForkServer, does not load them.
codegen = lazy_import("transpiler.codegen")
conversion = lazy_import("transpiler.conversion")
worker = lazy_import("transpiler.build.worker")


class ForkServer:
    """The driver's side: starts the server and forks children through it (thread-safe)."""

    def __init__(self, env: dict):
        self._process = subprocess.Popen(
            [sys.executable, "-m", "transpiler.build.forkserver"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, text=True, bufsize=1)
        self._lock = threading.Lock()
        self._children: dict[str, Child] = {}
        self._tokens = iter(range(1, 1 << 62))
        self._reader = threading.Thread(target=self._read, name="rt-forkserver-reader", daemon=True)
        self._reader.start()

    def spawn(self, request_path: str, log_path: str) -> Child:
        """A child building the module of ``request_path``, its stdout and stderr going to ``log_path``."""
        with self._lock:
            token = str(next(self._tokens))
            child = self._children[token] = Child(self, token)
            self._send(f"spawn {token} {os.fsencode(request_path).hex()} {os.fsencode(log_path).hex()}")
        child.wait_started()
        return child

    def signal(self, token: str, signum: int) -> None:
        with self._lock:
            self._send(f"signal {token} {signum}")

    def _send(self, line: str) -> None:
        try:
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass              # the server is gone: _read releases every child

    def _read(self) -> None:
        for line in self._process.stdout:
            kind, token, value = (line.split() + ["", "", ""])[:3]
            child = self._children.get(token)
            if child is None:
                continue
            if kind == "started":
                child.started(int(value))
            elif kind == "exited":
                child.exited(int(value))
        for child in list(self._children.values()):     # the server ended: nothing more will be reaped
            child.exited(-1)

    def close(self) -> None:
        """Close the server's input (it exits after its children) and wait for it; a server that forked
        nothing (the build had nothing to do) is killed, not waited for while it imports."""
        if not self._children and self._process.poll() is None:
            self._process.kill()
        try:
            self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(timeout=5)


class Child:
    """A forked worker, with the part of ``subprocess.Popen``'s interface the driver uses."""

    def __init__(self, server: ForkServer, token: str):
        self._server = server
        self.token = token
        self.pid: int | None = None
        self.returncode: int | None = None
        self._started = threading.Event()
        self._exited = threading.Event()

    def started(self, pid: int) -> None:
        self.pid = pid
        self._started.set()

    def exited(self, status: int) -> None:
        if self.returncode is None:
            self.returncode = status
        self._started.set()
        self._exited.set()

    def wait_started(self) -> None:
        self._started.wait()

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"build worker {self.token}", timeout)
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        self._server.signal(self.token, signal.SIGTERM)

    def kill(self) -> None:
        self._server.signal(self.token, signal.SIGKILL)


# ---------------------------------------------------------------------------
# The server.

def _child(request_path: str, log_path: str) -> None:
    """In the forked child: the worker, as ``python -m transpiler.build.worker REQUEST`` with its output in the log."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.argv = [worker.main.__globals__["__file__"], request_path]      # as `python -m` would have
        if "numpy" in sys.modules:                  # a fresh process seeds numpy's global generator afresh
            sys.modules["numpy"].random.seed()
        status = worker.main([request_path])
    except BaseException:  # noqa: BLE001 - nothing may return into the server's loop
        status = 70
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001, S110 - the log may be what failed
            pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def serve() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    codegen.render_module, conversion.convert_source, worker.main   # noqa: B018 - loads them, for every child
    live: dict[int, str] = {}        # pid -> token of the children not reaped yet
    stdin = sys.stdin.fileno()
    pending = b""
    closed = False

    def answer(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    while not closed or live:
        ready = select.select([stdin] if not closed else [], [], [], 0.02)[0]
        if ready:
            data = os.read(stdin, 65536)
            closed = not data
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                parts = line.decode().split()
                if parts[:1] == ["spawn"] and len(parts) == 4:
                    token, request, log = parts[1], os.fsdecode(bytes.fromhex(parts[2])), \
                        os.fsdecode(bytes.fromhex(parts[3]))
                    sys.stdout.flush()
                    pid = os.fork()
                    if pid == 0:
                        _child(request, log)
                    live[pid] = token
                    answer(f"started {token} {pid}")
                elif parts[:1] == ["signal"] and len(parts) == 3:
                    for pid, token in live.items():
                        if token == parts[1]:
                            os.kill(pid, int(parts[2]))
        while live:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            token = live.pop(pid, None)
            if token is not None:
                answer(f"exited {token} {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    serve()
