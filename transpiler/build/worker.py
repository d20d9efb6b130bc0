"""One module's build, in its own process: ``python -m transpiler.build.worker REQUEST.json``.

Imports the module from source (with ``RT_BUILDING=1``; under ``--tf-compat`` with ``tensorflow`` and ``keras``
meaning rt, ``runtime.tf_compat``), renders it with the code generator, compiles it in a private build directory
and installs the extension atomically. Everything the user's code or
the compiler prints goes to this process's stdout/stderr, which the driver sends to the module's log
file; the outcome is written as JSON to the request's ``result`` path.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
import traceback
from pathlib import Path

from runtime import tf_compat
from transpiler.build.compile import (
    CompileError,
    compile_extension,
    install_file,
    remove_stale_temporaries,
    write_text_atomically,
)
from transpiler.build.hashing import toolchain_directories
from transpiler.build.loading import load_from_source, prefer_sources

_COMPILER_ERROR = re.compile(r"^\S+\.(?:pyx|pxd|pxi):\d+:\d+: .+|^\S+:\d+:\d+: (?:fatal )?error: .+")


def resolve_renderer(spec: str):
    """The render function named by ``"package.module:function"`` or ``"path/to/file.py:function"``."""
    module_name, _, attr = spec.rpartition(":") if spec.count(":") else (spec, "", "")
    if module_name.endswith(".py"):
        loader_spec = importlib.util.spec_from_file_location("rt_build_renderer", module_name)
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, attr or "render_module")


def _excluded_dirs() -> list[Path]:
    dirs = list(toolchain_directories())
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.append(Path(path).resolve())
    return dirs


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def user_location(exc: BaseException, user_root: Path) -> tuple[str | None, int | None]:
    """``(file, line)`` in the user's tree where ``exc`` happened: a ``SyntaxError``'s own location, or
    the innermost traceback frame under ``user_root`` that is not part of the toolchain or the stdlib."""
    excluded = _excluded_dirs()
    user_root = user_root.resolve()

    def is_user(filename: str | None) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = Path(filename).resolve()
        return _within(path, user_root) and not any(_within(path, d) for d in excluded if d != user_root)

    if isinstance(exc, SyntaxError) and is_user(exc.filename):
        return str(Path(exc.filename).resolve()), exc.lineno
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if is_user(frame.filename):
            return str(Path(frame.filename).resolve()), frame.lineno
    return None, None


def _compiler_message(log: Path | None) -> str | None:
    if log is None:
        return None
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if _COMPILER_ERROR.match(line.strip()):
            return line.strip()
    return None


def _failure_record(failure) -> dict:
    """A ``transpiler.codegen.Failure`` as JSON for the driver."""
    return {"text": failure.text(), "function": failure.function, "signature": failure.signature,
            "stage": failure.stage, "type": failure.type, "message": failure.message, "file": failure.file,
            "line": failure.line, "op": failure.op, "fallback": failure.fallback}


def describe_error(exc: BaseException, stage: str, request: dict) -> dict:
    """The report of a failed build: where in the user's code, what, and at which stage."""
    if isinstance(exc, StrictFailure):
        first = exc.failures[0]
        return {"stage": "strict", "type": "StrictFailure", "message": str(exc), "file": first.file or request["source"],
                "line": first.line}
    filename, line = user_location(exc, Path(request["root"]))
    message = str(exc).strip()
    if isinstance(exc, SyntaxError):
        message = exc.msg
    if stage == "compile":
        detail = _compiler_message(Path(request["log"]) if request.get("log") else None)
        message = "the generated code failed to compile" + (f": {detail}" if detail else f" ({message})")
    return {"stage": stage, "type": type(exc).__name__, "message": message,
            "file": filename or request["source"], "line": line}


def _call_renderer(render, module, request: dict, build_dir: Path, exclude: dict | None = None):
    kwargs = {"source_path": request["source"], "module_name": request["name"]}
    if exclude:
        kwargs["exclude"] = exclude
    try:
        parameters = inspect.signature(render).parameters
    except (TypeError, ValueError):
        parameters = {}
    if "build_dir" in parameters:
        kwargs["build_dir"] = str(build_dir)
    if "ledger" in parameters and request.get("ledger"):
        kwargs["ledger"] = request["ledger"]
    if request.get("tf_compat"):
        if "tf_compat" not in parameters:
            raise TypeError(f"--tf-compat: the renderer {request['renderer']} does not take tf_compat")
        kwargs["tf_compat"] = True
    return render(module, **kwargs)


_HEADER_ERROR = re.compile(r"^(?:\./)?(\S+_rt_native\.h):(\d+):\d+: (?:fatal )?error: .+")


def rejected_functions(rendered, messages: str) -> dict:
    """The titles of the generated functions the compiler's ``messages`` name errors in, with the first error in
    each (``RenderedModule.titles`` gives the line where each function starts in the native header)."""
    starts = sorted((getattr(rendered, "titles", None) or {}).items())
    out: dict = {}
    for line in messages.splitlines():
        match = _HEADER_ERROR.match(line.strip())
        if not match:
            continue
        number = int(match.group(2))
        owner = None
        for start, title in starts:
            if start > number:
                break
            owner = title
        if owner is not None:
            out.setdefault(owner, line.strip())
    return out


def _compile_without_rejected(rendered, render, module, request: dict, build_dir: Path):
    """Compile ``rendered``; when the compiler rejects generated functions (a code generator bug), render the
    module again without their native code (the generic executor runs those signatures, each reported) and
    compile that. Returns the built file and the rendering it was built from."""
    excluded: dict = {}
    while True:
        try:
            return compile_extension(rendered, request["name"], build_dir), rendered
        except CompileError as error:
            rejected = rejected_functions(rendered, getattr(error, "messages", ""))
            if not rejected or set(rejected) <= set(excluded) or not _accepts(render, "exclude"):
                raise
            excluded.update(rejected)
            print(f"rt: the C compiler rejected the generated code of {', '.join(rejected)}: building the module "
                  "without it", file=sys.stderr, flush=True)
            rendered = _call_renderer(render, module, request, build_dir, exclude=excluded)


def _accepts(function, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class StrictFailure(Exception):
    """``build --strict``: signatures that would not run native code fail the module."""

    def __init__(self, failures: list):
        self.failures = failures
        lines = [f.text() for f in failures]
        super().__init__(f"{len(lines)} signature{'s' if len(lines) != 1 else ''} not compiled to native code "
                         "(--strict):\n" + "\n".join(lines))


def build(request: dict) -> dict:
    """Build one module as described by ``request``; returns the result record."""
    started = time.monotonic()
    keep = bool(os.environ.get("RT_DEBUG"))
    if keep and request.get("debug_dir"):   # a debug build keeps its files in the cache, replacing the last
        build_dir = Path(request["debug_dir"])
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(parents=True)
    else:
        # inside the driver's scratch directory, which the driver removes however this process ends
        build_dir = Path(tempfile.mkdtemp(prefix=f"rt-build-{request['name']}-", dir=request.get("scratch")))
    result: dict = {"status": "failed", "report": [], "build_dir": str(build_dir) if keep else None}
    stage = "import"
    try:
        os.environ["RT_BUILDING"] = "1"
        root = Path(request["root"])
        compat = tf_compat.aliased() if request.get("tf_compat") else contextlib.nullcontext()
        with prefer_sources([root] + [Path(p) for p in request.get("user_roots", [])]), compat:
            module = load_from_source(request["name"], Path(request["source"]), root)
            stage = "render"
            render = resolve_renderer(request["renderer"])
            rendered = _call_renderer(render, module, request, build_dir)
            result["report"] = [str(line) for line in (getattr(rendered, "report", None) or [])]
            failures = list(getattr(rendered, "failures", None) or [])
            result["warnings"] = [_failure_record(f) for f in failures]
            result["notes"] = [str(note) for note in (getattr(rendered, "notes", None) or [])]
            result["callbacks"] = dict(getattr(rendered, "callbacks", None) or {})
            if failures and request.get("strict"):
                raise StrictFailure(failures)
            stage = "compile"
            sys.stdout.flush()
            built, rendered = _compile_without_rejected(rendered, render, module, request, build_dir)
            failures = list(getattr(rendered, "failures", None) or [])
            result["warnings"] = [_failure_record(f) for f in failures]
            if failures and request.get("strict"):
                raise StrictFailure(failures)
        stage = "install"
        dest = Path(request["dest"])
        remove_stale_temporaries(dest)
        install_file(built, dest)
        installed = dest.stat()
        record = {"module": request["name"], "source": request["source"], "hash": request["hash"],
                  "extension": dest.name, "extension_size": installed.st_size,
                  "extension_mtime_ns": installed.st_mtime_ns, "inputs": request.get("inputs", {}),
                  "built_at": time.time(), "warnings": result.get("warnings", []), "notes": result.get("notes", [])}
        write_text_atomically(Path(request["sidecar"]), json.dumps(record, indent=1))
        result["status"] = "ok"
    except KeyboardInterrupt:
        result["status"] = "interrupted"
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, SystemExit included
        traceback.print_exc()
        result["error"] = describe_error(exc, stage, request)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        if not keep:
            shutil.rmtree(build_dir, ignore_errors=True)
    result["seconds"] = time.monotonic() - started
    return result


def _interrupt(signum, frame):
    # The first SIGINT/SIGTERM stops the build; later ones (Ctrl-C reaches the whole process group, then the
    # driver sends SIGTERM) must not interrupt the cleanup.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    request = json.loads(Path(argv[0]).read_text())
    result = build(request)
    Path(request["result"]).write_text(json.dumps(result))
    return 130 if result["status"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(main())
