"""``python -m transpiler build``: find, hash, build in parallel, report.

The pipeline, top to bottom (``build``):

1. discover the modules that define ``rt.function``s (``discovery.discover``, static);
2. plan each: where its extension goes, the signatures its ledger adds (``--from-ledger``), its build hash
   (which covers them), whether the previous build is still valid;
3. mirror the rest of the packages into OUTDIR (with ``-o``): other modules, ``__init__.py`` files, data;
4. build the stale modules, each in its own worker process, ``jobs`` at a time;
5. report progress (a bar on a terminal, one line per module otherwise), the failures with file and line,
   each signature not compiled to native code (a warning; an error with ``--strict``), each ``rt.function``
   with nothing compiled and why (a note), and a summary.

Build records and logs go to rt's cache directory (``transpiler.cachedir``), never into the user's tree.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TextIO

from transpiler.cachedir import build_log, build_record, build_state_dir, ledger_path, read_ledger
from transpiler.build import ledger as ledgers
from transpiler.build.compile import TMP_SUFFIX, extension_filename, install_file
from transpiler.build.discovery import FactsCache, ModuleInfo, discover, is_skipped_dir, module_name_for
from transpiler.build.forkserver import ForkServer
from transpiler.build.hashing import hash_bytes, module_hash, module_inputs, toolchain_fingerprint

DEFAULT_RENDERER = "transpiler.codegen:render_module"  # "module:function" or "file.py:function"

# Files never mirrored into OUTDIR: byte code and build temporaries.
_NOT_MIRRORED_SUFFIXES = (".pyc", ".pyo", TMP_SUFFIX)


@dataclasses.dataclass
class Job:
    """One module's build: where its outputs go and whether the previous build is still valid."""
    module: ModuleInfo
    dest: Path            # the extension file
    sidecar: Path         # JSON record of the build (in the cache directory)
    log: Path             # compiler and user output of the build (in the cache directory)
    hash: str
    inputs: dict          # absolute path -> content hash of every source file the build reads
    cached: bool = False
    ledger: dict = dataclasses.field(default_factory=dict)   # --from-ledger: ledger key -> signatures to add


@dataclasses.dataclass
class Outcome:
    job: Job | None
    status: str           # "ok", "cached", "failed", "interrupted"
    seconds: float = 0.0
    error: dict | None = None
    report: list = dataclasses.field(default_factory=list)
    build_dir: str | None = None
    name: str = ""
    warnings: list = dataclasses.field(default_factory=list)   # signatures not compiled natively (dicts)
    notes: list = dataclasses.field(default_factory=list)      # rt.functions with nothing compiled, and why
    callbacks: dict = dataclasses.field(default_factory=dict)  # signature -> {op type: ops through Python}


def _display_path(path: str | Path) -> str:
    """Relative to the current directory when under it, else absolute."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def extension_path(module: ModuleInfo, outdir: Path | None) -> Path:
    """Where the extension of ``module`` goes: beside its source, or in the tree mirrored under ``outdir``."""
    directory = module.path.parent
    if outdir is not None:
        directory = outdir / directory.relative_to(module.root)
    return directory / extension_filename(module.name, module.is_package)


def plan(modules: list[ModuleInfo], outdir: Path | None, cache: FactsCache, toolchain: str,
         force: bool, from_ledger: bool = False) -> list[Job]:
    jobs = []
    for module in modules:
        dest = extension_path(module, outdir)
        inputs = module_inputs(module, cache)
        digest = module_hash(module, cache, toolchain, inputs)
        selection = ledgers.select(read_ledger(ledger_path(module.path, module.name))) if from_ledger else {}
        if selection:       # the signatures it adds are part of what is built: a new one rebuilds the module
            digest = hash_bytes(f"{digest}\0ledger={ledgers.digest(selection)}".encode())
        job = Job(module, dest, build_record(dest, module.name), build_log(dest, module.name), digest, inputs,
                  ledger=selection)
        job.cached = not force and _up_to_date(job)
        jobs.append(job)
    return jobs


def _recorded(job: Job) -> dict:
    """The record of the job's last build (empty when unreadable)."""
    try:
        record = json.loads(job.sidecar.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _conflicting_outputs(jobs: list[Job]) -> dict[int, tuple[Job, Job]]:
    """Jobs whose extension would overwrite an earlier job's (two roots mirrored into one OUTDIR)."""
    seen: dict[Path, Job] = {}
    conflicts = {}
    for job in jobs:
        first = seen.setdefault(job.dest, job)
        if first is not job:
            conflicts[id(job)] = (job, first)
    return conflicts


def _up_to_date(job: Job) -> bool:
    try:
        record = json.loads(job.sidecar.read_text())
    except (OSError, ValueError):
        return False
    try:
        installed = job.dest.stat()
    except OSError:
        return False
    return (record.get("hash") == job.hash and record.get("extension") == job.dest.name
            and record.get("extension_size") == installed.st_size
            and record.get("extension_mtime_ns") == installed.st_mtime_ns)


def mirror_packages(modules: list[ModuleInfo], outdir: Path) -> None:
    """Copy the ``__init__.py`` of every package on the way to each module into OUTDIR."""
    done: set[Path] = set()
    for module in modules:
        directory = module.path.parent
        while directory != module.root and directory not in done:
            done.add(directory)
            init = directory / "__init__.py"
            if init.is_file():
                copy_if_changed(init, outdir / directory.relative_to(module.root) / "__init__.py")
            directory = directory.parent


def mirror_tree(paths: list[Path], modules: list[ModuleInfo], outdir: Path) -> int:
    """Copy into OUTDIR everything under the directory ``paths`` that the built modules do not replace:
    modules without ``rt.function``s, ``__init__.py`` files and package data, at the place they have
    relative to their ``sys.path`` root. The sources of the modules being built are left out (their
    extensions are self-contained), and so are byte code, extensions of those modules built beside their
    sources, hidden and build directories. Returns the number of files copied."""
    built_sources = {m.path for m in modules}
    built_extensions = {m.path.parent / extension_filename(m.name, m.is_package) for m in modules}
    copied = 0
    for path in paths:
        if not path.is_dir():
            continue
        base, _ = module_name_for(path / "__init__.py")
        for dirpath, dirnames, filenames in os.walk(path):
            current = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not is_skipped_dir(d) and (current / d) != outdir)
            for name in sorted(filenames):
                file = current / name
                if file in built_sources or file in built_extensions or name.endswith(_NOT_MIRRORED_SUFFIXES):
                    continue
                copied += copy_if_changed(file, outdir / file.relative_to(base))
    mirror_packages(modules, outdir)
    return copied


def copy_if_changed(src: Path, dest: Path) -> bool:
    """Copy ``src`` to ``dest`` atomically, keeping its time stamp, unless ``dest`` has the same size and
    time stamp already (as rsync decides). Returns whether it copied."""
    stat = src.stat()
    try:
        existing = dest.stat()
        if existing.st_size == stat.st_size and existing.st_mtime_ns == stat.st_mtime_ns:
            return False
    except OSError:
        pass
    install_file(src, dest)
    os.utime(dest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return True


# The directory the worker processes import ``runtime`` and ``transpiler`` from: this one's.
_TOOLCHAIN_PATH = str(Path(__file__).resolve().parents[2])


class _Workers:
    """Runs worker processes (forked by the build's ``ForkServer``, which ``build`` starts and closes, where the
    platform forks; ``server`` is None elsewhere); remembers the live ones so an interrupt can stop them."""

    def __init__(self, renderer: str, user_roots: list[Path], server: ForkServer | None,
                 progress: "Progress | None" = None, strict: bool = False, tf_compat: bool = False):
        self.renderer = renderer
        self.strict = strict
        self.tf_compat = tf_compat
        self.progress = progress
        self.user_roots = [str(p) for p in user_roots]
        self._live: set = set()
        self._lock = threading.Lock()
        self._server = server
        self.stopping = False

    def _start(self, request_path: Path, log_path: Path):
        """A worker process for one request (called with the lock held)."""
        if self._server is None:
            with open(log_path, "wb") as log:
                return subprocess.Popen([sys.executable, "-m", "transpiler.build.worker", str(request_path)],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        env=self.environment())
        return self._server.spawn(str(request_path), str(log_path))

    @staticmethod
    def environment() -> dict:
        """The workers' environment: the caller's, with the toolchain importable."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_TOOLCHAIN_PATH, env.get("PYTHONPATH")) if p)
        return env

    def run(self, job: Job) -> Outcome:
        started = time.monotonic()
        job.log.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="rt-build-request-") as scratch:
            request_path = Path(scratch) / "request.json"
            result_path = Path(scratch) / "result.json"
            request = {"name": job.module.name, "source": str(job.module.path), "root": str(job.module.root),
                       "dest": str(job.dest), "sidecar": str(job.sidecar), "log": str(job.log),
                       "hash": job.hash, "inputs": job.inputs, "renderer": self.renderer,
                       "user_roots": self.user_roots, "result": str(result_path), "scratch": scratch,
                       "strict": self.strict, "ledger": job.ledger, "tf_compat": self.tf_compat,
                       "debug_dir": str(build_state_dir(job.dest.parent) / f"{job.module.name}.debug")}
            request_path.write_text(json.dumps(request))
            with self._lock:
                if self.stopping:
                    return Outcome(job, "interrupted", name=job.module.name)
                process = self._start(request_path, job.log)
                self._live.add(process)
            if self.progress is not None:
                self.progress.started(job.module.name)
            try:
                returncode = process.wait()
            finally:
                with self._lock:
                    self._live.discard(process)
            seconds = time.monotonic() - started
            try:
                result = json.loads(result_path.read_text())
            except (OSError, ValueError):
                if self.stopping:
                    return Outcome(job, "interrupted", seconds, name=job.module.name)
                error = {"stage": "worker", "type": "WorkerCrash",
                         "message": f"the build process exited with status {returncode} without a result",
                         "file": str(job.module.path), "line": None}
                return Outcome(job, "failed", seconds, error, name=job.module.name)
        return Outcome(job, result["status"], seconds, result.get("error"), result.get("report", []),
                       result.get("build_dir"), name=job.module.name, warnings=result.get("warnings", []),
                       notes=result.get("notes", []), callbacks=result.get("callbacks", {}))

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            live = list(self._live)
        for process in live:
            if process.poll() is None:
                process.terminate()
        for process in live:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


class Progress:
    """Reports each finished module. On a terminal, a bar at the bottom shows how many are done and which
    are building; otherwise (a pipe, a CI log) each module gets one plain line and nothing is redrawn."""

    BAR_WIDTH = 24

    def __init__(self, total: int, verbose: bool, out: TextIO | None, tty: bool | None = None):
        self.total = total
        self.count = 0
        self.verbose = verbose
        self.out = out
        self.tty = _is_terminal(out) if tty is None else tty
        self.building: list[str] = []
        self._lock = threading.Lock()
        self._bar_shown = False

    def started(self, name: str) -> None:
        with self._lock:
            self.building.append(name)
            self._write([])

    def show(self, outcome: Outcome) -> None:
        with self._lock:
            self.count += 1
            if outcome.name in self.building:
                self.building.remove(outcome.name)
            self._write(self._lines(outcome))

    def finish(self) -> None:
        """Remove the bar (before the summary line)."""
        with self._lock:
            if self._bar_shown:
                self._emit("\r\x1b[K")
                self._bar_shown = False

    def _lines(self, outcome: Outcome) -> list[str]:
        status = {"ok": f"ok ({outcome.seconds:.1f}s)", "cached": "cached",
                  "failed": f"FAILED ({outcome.seconds:.1f}s)" if outcome.seconds else "FAILED",
                  "interrupted": "interrupted"}[outcome.status]
        width = len(str(self.total))
        lines = [f"[{self.count:>{width}}/{self.total}] building {outcome.name} ... {status}"]
        lines += [f"    warning: {_display_failure(w)}" for w in outcome.warnings if outcome.status != "failed"]
        lines += [f"    note: {note}" for note in outcome.notes if outcome.status != "failed"]
        if outcome.status == "failed" and outcome.error:
            lines += ["    " + line for line in format_error(outcome.error).splitlines()]
            if outcome.job is not None and outcome.job.log.is_file():
                lines.append(f"    log: {_display_path(outcome.job.log)}")
        if self.verbose:
            lines += [f"    {line}" for line in outcome.report]
        if outcome.build_dir:
            lines.append(f"    RT_DEBUG: the generated sources and compiler files are kept in {outcome.build_dir}")
        return lines

    def _bar(self) -> str:
        done = round(self.BAR_WIDTH * self.count / max(self.total, 1))
        bar = "#" * done + "-" * (self.BAR_WIDTH - done)
        building = ", ".join(self.building[:3]) + (" ..." if len(self.building) > 3 else "")
        return f"[{bar}] {self.count}/{self.total}" + (f"  building {building}" if building else "")

    def _write(self, lines: list[str]) -> None:
        if not self.tty:
            if lines:
                self._emit("\n".join(lines) + "\n")
            return
        text = "\r\x1b[K" if self._bar_shown else ""
        text += "".join(line + "\n" for line in lines)
        if self.count < self.total:
            text += self._bar()
            self._bar_shown = True
        else:
            self._bar_shown = False
        self._emit(text)

    def _emit(self, text: str) -> None:
        if self.out is None:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:  # e.g. piped into `head`: keep building, stop printing
            self.out = None


def _is_terminal(out: TextIO | None) -> bool:
    try:
        return bool(out is not None and out.isatty() and os.environ.get("TERM") != "dumb")
    except (AttributeError, ValueError):
        return False


def _display_failure(warning: dict) -> str:
    """A signature not compiled natively (``transpiler.codegen.Failure.text``), its file shown relative."""
    text = warning.get("text") or ""
    if warning.get("file") and text.startswith(str(warning["file"])):
        text = _display_path(warning["file"]) + text[len(str(warning["file"])):]
    return text


def format_error(error: dict) -> str:
    """``pkg/models.py:12: NameError: name 'x' is not defined`` (and the stage when it is not the import)."""
    where = _display_path(error["file"]) if error.get("file") else "?"
    if error.get("line"):
        where += f":{error['line']}"
    message = error.get("message") or ""
    first, *rest = message.splitlines() or [""]
    stage = {"render": " (while tracing/generating code)", "compile": "", "install": " (while installing)",
             "strict": ""}
    text = f"{where}: {error.get('type', 'Error')}: {first}{stage.get(error.get('stage'), '')}"
    if rest:
        limit = 50 if error.get("stage") == "strict" else 8      # --strict lists every signature
        text += "\n" + "\n".join("  " + line for line in rest[:limit])
        if len(rest) > limit:
            text += "\n  ..."
    return text


def _print_callbacks(outcomes: list[Outcome], out: TextIO) -> None:
    """``build -v``: the ops that run through Python callbacks in the native code built now, by op type."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for signature, ops in outcome.callbacks.items():
            for op, times in ops.items():
                counts.setdefault(op, {})[f"{outcome.name}.{signature}"] = times
    if counts:
        print("ops run through Python in native code (a callback that takes the GIL, per call):", file=out)
        for op, where in sorted(counts.items(), key=lambda item: (-sum(item[1].values()), item[0])):
            print(f"  {op} x{sum(where.values())}: {', '.join(sorted(where))}", file=out)


def build(paths: list[str | Path], outdir: str | Path | None = None, jobs: int | None = None, force: bool = False,
          verbose: bool = False, renderer: str = DEFAULT_RENDERER, out: TextIO | None = None,
          mirror: bool = True, strict: bool = False, from_ledger: bool = False, tf_compat: bool = False) -> int:
    """Build the extension modules of every module under ``paths`` that defines ``rt.function``s.

    With ``outdir``, the extensions go into a tree mirrored under it and, when ``mirror`` is true, the rest
    of each directory in ``paths`` is copied there too (``mirror_tree``), so that OUTDIR imports on its own.

    A signature that cannot be compiled to native code is a warning naming its function, op and line (its
    graph then runs on the generic executor); with ``strict`` it fails its module. ``from_ledger`` adds the
    signatures each built module recorded at run time (``transpiler.build.ledger``). ``tf_compat`` builds
    programs written against ``import tensorflow as tf``: their ``tf.function``s are found, and they import (at
    build time, and whenever the built module imports) with ``tensorflow`` and ``keras`` meaning rt
    (``runtime.tf_compat``).

    Returns the exit status: 0 when everything built (or was up to date), 1 when a module failed,
    2 for bad arguments, 130 when interrupted.

    Example:
        >>> build(["examples/"], jobs=2)  # doctest: +SKIP
        [1/1] building examples.basics ... ok (4.2s)
        1 module: 1 built
        0
    """
    out = out or sys.stdout
    roots = [Path(p).resolve() for p in paths]
    missing = [str(p) for p, r in zip(paths, roots) if not r.exists()]
    if missing:
        print(f"error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    outdir_path = Path(outdir).resolve() if outdir is not None else None
    if outdir_path is not None and outdir_path.exists() and not outdir_path.is_dir():
        print(f"error: -o/--outdir: {outdir} is a file, not a directory (give the directory the built tree "
              "goes into; it is created when missing)", file=sys.stderr)
        return 2
    jobs = max(1, jobs or os.cpu_count() or 1)
    # The fork server imports the runtime, the converter and the code generator (0.45 s with bytecode caches)
    # while this process discovers and plans; with nothing to build it is killed unused.
    server = ForkServer(_Workers.environment()) if hasattr(os, "fork") else None
    try:
        return _build(paths, roots, outdir, outdir_path, jobs, force, verbose, renderer, out, mirror, strict,
                      from_ledger, tf_compat, server)
    finally:
        if server is not None:
            server.close()


def _build(paths: list[str | Path], roots: list[Path], outdir: str | Path | None, outdir_path: Path | None, jobs: int,
           force: bool, verbose: bool, renderer: str, out: TextIO, mirror: bool, strict: bool, from_ledger: bool,
           tf_compat: bool, server: ForkServer | None) -> int:
    """``build`` once its arguments are checked and its fork server started."""
    # 1. discovery (static; facts cached by content hash in the cache directory)
    cache_home = outdir_path or (roots[0] if roots[0].is_dir() else roots[0].parent)
    cache = FactsCache(build_state_dir(cache_home) / "discovery.json")
    syntax_errors: list = []
    modules = discover(roots, exclude=[outdir_path] if outdir_path else [], cache=cache, errors=syntax_errors,
                       tf_compat=tf_compat)
    if not modules and not syntax_errors:
        what = "rt.function or tf.function" if tf_compat else "rt.function"
        print(f"no modules defining {what} found under {', '.join(map(str, paths))}", file=out)
        return 0

    # 2. plan: output paths, hashes, cache hits (a --tf-compat build is another build of the same source)
    toolchain = toolchain_fingerprint({"renderer": renderer, **({"tf_compat": True} if tf_compat else {})})
    planned = plan(modules, outdir_path, cache, toolchain, force, from_ledger)
    cache.save()

    conflicts = _conflicting_outputs(planned)
    planned = [job for job in planned if id(job) not in conflicts]

    # 3. OUTDIR gets the rest of the packages too
    if outdir_path is not None:
        try:
            if mirror:
                copied = mirror_tree(roots, modules, outdir_path)
                if verbose and copied:
                    print(f"copied {copied} other file{'s' if copied != 1 else ''} into {outdir}", file=out)
            else:
                mirror_packages(modules, outdir_path)
        except OSError as error:
            print(f"error: -o/--outdir: cannot write the built tree into {outdir}: {error}", file=sys.stderr)
            return 2

    # 4. build, 5. report
    if strict:       # an up-to-date module whose build warned is built again, to fail as --strict says
        for job in planned:
            if job.cached and _recorded(job).get("warnings"):
                job.cached = False
    todo = [job for job in planned if not job.cached]
    total = len(planned) + len(syntax_errors) + len(conflicts)
    if todo:
        print(f"building {len(todo)} of {total} module{'s' if total != 1 else ''} "
              f"({min(jobs, len(todo))} in parallel)", file=out)
    progress = Progress(total, verbose, out)
    outcomes: list[Outcome] = []
    for job, first in conflicts.values():
        outcome = Outcome(None, "failed", error={
            "stage": "plan", "type": "OutputConflict", "file": str(job.module.path), "line": None,
            "message": f"{_display_path(job.module.path)} and {_display_path(first.module.path)} would both be "
                       f"built to {_display_path(job.dest)}"}, name=job.module.name)
        outcomes.append(outcome)
        progress.show(outcome)
    for path, error in syntax_errors:
        outcome = Outcome(None, "failed", error={"stage": "import", "type": type(error).__name__,
                                                 "message": getattr(error, "msg", str(error)),
                                                 "file": str(path), "line": getattr(error, "lineno", None)},
                          name=module_name_for(path)[1])
        outcomes.append(outcome)
        progress.show(outcome)
    for job in planned:
        if job.cached:
            record = _recorded(job)
            outcome = Outcome(job, "cached", name=job.module.name, warnings=record.get("warnings", []),
                              notes=record.get("notes", []))
            outcomes.append(outcome)
            progress.show(outcome)

    workers = _Workers(renderer, roots, server, progress, strict, tf_compat)
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        pending = {pool.submit(workers.run, job) for job in todo}
        while pending:
            # Woken at least every quarter second: the kernel may hand a Ctrl-C to a pool thread, and the
            # main thread only runs Python's handler (KeyboardInterrupt) once it wakes.
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for future in done:
                outcome = future.result()
                outcomes.append(outcome)
                progress.show(outcome)
    except KeyboardInterrupt:
        workers.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        progress.finish()
        print("interrupted: no partial extension was installed", file=out)
        return 130
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

    progress.finish()
    counts = {status: sum(o.status == status for o in outcomes) for status in ("ok", "cached", "failed")}
    parts = [f"{counts['ok']} built"] if counts["ok"] else []
    parts += [f"{counts['cached']} up to date"] if counts["cached"] else []
    parts += [f"{counts['failed']} failed"] if counts["failed"] else []
    not_native = sum(len(o.warnings) for o in outcomes if o.status in ("ok", "cached"))
    if not_native:
        parts.append(f"{not_native} signature{'s' if not_native != 1 else ''} not compiled to native code "
                     "(warnings above)")
    print(f"{total} module{'s' if total != 1 else ''}: {', '.join(parts)}", file=out)
    if verbose:
        _print_callbacks(outcomes, out)
    if any(o.status == "interrupted" for o in outcomes):
        return 130
    return 1 if counts["failed"] else 0


def show_ledgers(paths: list[str | Path], clear: bool = False, out: TextIO | None = None,
                 tf_compat: bool = False) -> int:
    """``python -m transpiler ledger [PATH ...]``: print (or, with ``clear``, empty) the signature ledgers of the
    modules under ``paths`` (``tf_compat``: ``tf.function`` modules too), or every ledger in the cache."""
    out = out or sys.stdout
    if paths:
        roots = [Path(p).resolve() for p in paths]
        missing = [str(p) for p, r in zip(paths, roots) if not r.exists()]
        if missing:
            print(f"error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
            return 2
        modules = discover(roots, tf_compat=tf_compat)
        found = [(m.name, ledger_path(m.path, m.name)) for m in modules]
    else:
        found = ledgers.all_ledgers()
    if clear:
        cleared = 0
        for _, path in found:
            try:
                path.unlink()
                cleared += 1
            except FileNotFoundError:
                pass
        print(f"cleared {cleared} ledger{'s' if cleared != 1 else ''}", file=out)
        return 0
    return ledgers.show(found, out)
