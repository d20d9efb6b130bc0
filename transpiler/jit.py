"""``rt.function(jit_compile=True)``: compile each newly traced signature to native code at run time.

For a new signature the traced graph is optimized, emitted with the build's code generator
(``emit_function``), rendered through ``templates/jit_module.c.tmpl`` and compiled with the
build's compile helper and flags (``transpiler/build/compile.py``); the call then runs through
the same ``runtime._native.NativeFunction`` capsule path as ahead-of-time built functions
(with the same C fast path for plain tensor signatures).

The compiled module is cached on disk, keyed by a hash of the optimized graph (a canonical
serialization: op types, names, attributes, constants by content, shapes, dtypes, nested
graphs; no Python object ids) and of the machine (``-march`` level, compile flags, compiler
name, Python ABI, package version, and the code generator's, kernels' and templates' sources)::

    $RT_CACHE_DIR/jit/<key>/rt_jit_<key[:24]><EXT_SUFFIX>   the extension module
    $RT_CACHE_DIR/jit/<key>/manifest.json                     its size and sha256, written last
    $RT_CACHE_DIR/jit/<key>.lock                              held while compiling that entry

``RT_CACHE_DIR`` defaults to ``$XDG_CACHE_HOME/rt`` (``~/.cache/rt``); deleting the directory
clears the cache. A second process finds the entry and loads it without running the compiler;
two processes compiling the same graph serialize on the lock (the second loads what the first
built), and files are installed by atomic rename, so a reader never sees a partial module. An
entry whose module does not match its manifest (or does not import) is rebuilt. Without a C
compiler the first ``jit_compile`` trace warns once and calls run on the generic executor.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import sys
import sysconfig
import tempfile
import threading
import types
import warnings
from pathlib import Path

import numpy as np

from runtime.aot import NativeConcreteFunction
from transpiler.cachedir import cache_root
from runtime.dtypes import DType
from runtime.graph import ConstValue, Graph, all_operations
from runtime.optimizer import optimize
from runtime.shapes import TensorShape
from runtime.version import __version__
from transpiler.build.compile import compile_extension, install_file, write_text_atomically
from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR, LINK_ARGS, emit_function, is_small, remap_outputs
from transpiler.codegen.flags import arch_flags
from transpiler.codegen.render import TEMPLATES, render

try:
    import fcntl
except ImportError:  # not POSIX: atomic renames alone keep concurrent builds correct
    fcntl = None

C_NAME = "rt_jit_fn"
TEMPLATE_FILES = ("jit_module.c.tmpl", "jit_native.h.tmpl")

# What this process did, for tests and diagnostics: compilations run, entries loaded from disk,
# entries found corrupted (and rebuilt).
STATS = {"compiled": 0, "loaded": 0, "corrupt": 0}

_lock = threading.Lock()
_modules: dict[str, types.ModuleType] = {}     # key -> loaded extension module (one import per process)
_warned_no_compiler = False


# ---------------------------------------------------------------------------
# Cache keys.

def cache_dir() -> Path:
    """Where compiled functions live: ``jit/`` under rt's cache root (``transpiler.cachedir``)."""
    return cache_root() / "jit"


def graph_hash(graph: Graph) -> str:
    """sha256 of a canonical serialization of ``graph`` (and its nested graphs)."""
    digest = hashlib.sha256()
    handles: dict[int, int] = {}
    for line in _serialize(graph, handles):
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _serialize(graph: Graph, handles: dict[int, int]):
    yield f"graph inputs={[t.name for t in graph.inputs]} captures={[p.name for _, p in graph.captures]}"
    for op in graph.operations:
        attrs = ",".join(f"{k}={_attr_text(v, handles)}" for k, v in sorted(op.attrs.items()))
        ins = ",".join(t.name for t in op.inputs)
        outs = ",".join(f"{t.dtype.name}{t.shape.dims}" for t in op.outputs)
        ctrl = ",".join(c.name for c in op.control_inputs)
        yield f"{op.name}={op.type}({ins}) ^({ctrl}) {{{attrs}}} -> {outs}"
    yield f"return {[t.name for t in graph.outputs]}"


def _attr_text(value, handles: dict[int, int]) -> str:
    if isinstance(value, Graph):
        return "{" + ";".join(_serialize(value, handles)) + "}"
    if isinstance(value, ConstValue):
        array = value.array
        data = repr(array.tolist()).encode("utf-8") if array.dtype == object else array.tobytes()
        return f"const({array.dtype.str},{array.shape},{hashlib.sha256(data).hexdigest()})"
    if isinstance(value, TensorShape):
        return f"shape{value.dims}"
    if isinstance(value, DType):
        return f"dtype:{value.name}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_attr_text(v, handles) for v in value) + ")"
    if isinstance(value, (bool, int, float, str, bytes, type(None))):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value!r}"
    if type(value).__name__ == "_Handle":          # a variable: by its first appearance in this graph
        return f"variable#{handles.setdefault(id(value), len(handles))}"
    # Python objects used only by ops that call back into Python (their C code does not depend on them).
    return f"object:{type(value).__module__}.{type(value).__qualname__}"


_machine: str | None = None


def machine_key() -> str:
    """What else the compiled code depends on: target, flags, compiler, Python ABI, sources of the generator."""
    global _machine
    if _machine is None:
        digest = hashlib.sha256()
        compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
        for part in (arch_flags(), COMPILE_ARGS, LINK_ARGS, compiler, sysconfig.get_config_var("EXT_SUFFIX"),
                     sys.version, __version__, np.__version__):
            digest.update(repr(part).encode("utf-8"))
        sources = sorted(Path(KERNELS_DIR).glob("rt_*.[ch]")) + sorted(Path(__file__).parent.glob("codegen/*.py")) \
            + [Path(TEMPLATES) / name for name in TEMPLATE_FILES] + [Path(__file__)]
        for path in sources:
            digest.update(path.name.encode("utf-8"))
            digest.update(path.read_bytes())
        _machine = digest.hexdigest()
    return _machine


# ---------------------------------------------------------------------------
# Compiling and loading.

def compile_concrete(concrete):
    """The native version of a freshly traced concrete function, or ``concrete`` if none can be made."""
    function = concrete.function
    graph = optimize(concrete.graph)
    key = hashlib.sha256((graph_hash(graph) + machine_key()).encode("utf-8")).hexdigest()
    try:
        module = _module_for(key, graph)
    except _NoCompiler as e:
        _warn_no_compiler(str(e))
        return concrete
    except Exception as e:  # noqa: BLE001 - any failure to build leaves the traced function working
        warnings.warn(f"rt.function(jit_compile=True) could not compile {function.__name__}: {type(e).__name__}: "
                      f"{e}; it runs on the generic executor", RuntimeWarning, stacklevel=4)
        return concrete
    metadata = json.loads(module.METADATA)
    handles = _variable_handles(graph)
    signature = concrete.signature
    entry = {"graph": graph, "structured_inputs": signature.structured_inputs,
             "structured_outputs": remap_outputs(concrete, graph), "input_specs": signature.input_specs,
             "capsule": module.capsule(), "variables": [handles[i] for i in metadata["variables"]],
             "module_globals": {}, "callbacks": metadata["callbacks"], "small": metadata["small"]}
    native = NativeConcreteFunction(function, entry)
    function.attach(native, native=native.fast_native)
    return native


class _NoCompiler(RuntimeError):
    """No C compiler in this process."""


def _warn_no_compiler(reason: str) -> None:
    global _warned_no_compiler
    if not _warned_no_compiler:
        _warned_no_compiler = True
        warnings.warn(f"rt.function(jit_compile=True): {reason}; jit-compiled functions run on the generic "
                      "executor", RuntimeWarning, stacklevel=5)


def _module_for(key: str, graph: Graph) -> types.ModuleType:
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = _modules[key] = _load_or_build(key, graph)
        return module


def _paths(key: str) -> tuple[Path, Path, Path]:
    entry = cache_dir() / key
    name = f"rt_jit_{key[:24]}"
    return entry / (name + sysconfig.get_config_var("EXT_SUFFIX")), entry / "manifest.json", \
        cache_dir() / f"{key}.lock"


def _load_or_build(key: str, graph: Graph) -> types.ModuleType:
    so, manifest, lock = _paths(key)
    module = _load(key, so, manifest)
    if module is not None:
        return module
    lock.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(lock):
        module = _load(key, so, manifest)         # another process may have built it meanwhile
        if module is not None:
            return module
        _build(key, graph, so, manifest)
        module = _load(key, so, manifest)
        if module is None:
            raise RuntimeError(f"the module compiled into {so} does not load")
        return module


def _load(key: str, so: Path, manifest: Path) -> types.ModuleType | None:
    """The cached module, or None when it is absent or corrupted (then it is removed)."""
    if not manifest.is_file():
        return None
    try:
        expected = json.loads(manifest.read_text(encoding="utf-8"))
        data = so.read_bytes()
        if expected.get("key") != key or len(data) != expected["size"] or \
                hashlib.sha256(data).hexdigest() != expected["sha256"]:
            raise ValueError("the module does not match its manifest")
        spec = importlib.util.spec_from_file_location(so.name.split(".")[0], so)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if module.GRAPH_HASH != expected["graph_hash"]:
            raise ValueError("the module was compiled for another graph")
    except (OSError, ValueError, KeyError, ImportError, AttributeError):
        STATS["corrupt"] += 1
        with contextlib.suppress(OSError):
            manifest.unlink()
        with contextlib.suppress(OSError):
            so.unlink()
        return None
    STATS["loaded"] += 1
    return module


def _build(key: str, graph: Graph, so: Path, manifest: Path) -> None:
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        raise _NoCompiler(f"no C compiler ({compiler}) on PATH")
    blobs: dict = {}
    code, variables, report = emit_function(graph, C_NAME, blobs=blobs)
    handles = _variable_handles(graph)
    position = {id(h): i for i, h in enumerate(handles)}
    hash_text = graph_hash(graph)
    metadata = json.dumps({"variables": [position[id(h)] for h in variables], "callbacks": report.calls_python(),
                           "small": not report.calls_python() and is_small(graph)})
    name = so.name.split(".")[0]
    header = f"{name}_native.h"
    files = {
        f"{name}.c": render("jit_module.c.tmpl", graph_hash=("c_comment", hash_text),
                            graph_hash_string=("c_string", hash_text), metadata=("c_string", metadata),
                            header=("c_string", header), module_name=("c_string", name), init_name=("ident", name)),
        header: render("jit_native.h.tmpl", graph_hash=("c_comment", hash_text), function=("raw", code)),
        **blobs,
    }
    rendered = types.SimpleNamespace(files=files, source=f"{name}.c", include_dirs=[KERNELS_DIR],
                                     extra_compile_args=list(COMPILE_ARGS), extra_link_args=list(LINK_ARGS),
                                     libraries=[], kernel_library=KERNELS_DIR)
    so.parent.mkdir(parents=True, exist_ok=True)
    build_dir = Path(tempfile.mkdtemp(prefix=".build-", dir=cache_dir()))
    try:
        with _quiet(build_dir / "compile.log") as log, _building():
            try:
                built = compile_extension(rendered, name, build_dir)
            except Exception as e:
                raise RuntimeError(f"{e}\n{_tail(log)}") from None
        STATS["compiled"] += 1
        install_file(built, so)
        data = so.read_bytes()
        write_text_atomically(manifest, json.dumps({
            "key": key, "graph_hash": hash_text, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "python": sys.version.split()[0], "rt": __version__}))
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock on ``path`` (between processes; a no-op where fcntl is missing)."""
    if fcntl is None:
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _building():
    """``RT_BUILDING=1`` while compiling, as in a build worker: setuptools' rt entry point then leaves this
    compile alone (it would otherwise start the rt build of a project whose pyproject.toml is in the cwd)."""
    saved = os.environ.get("RT_BUILDING")
    os.environ["RT_BUILDING"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["RT_BUILDING"]
        else:
            os.environ["RT_BUILDING"] = saved


@contextlib.contextmanager
def _quiet(log_path: Path):
    """Send the compiler's output (file descriptors 1 and 2) to a log instead of the user's terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "w+b") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield log_path
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _tail(log_path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _variable_handles(graph: Graph) -> list:
    """The variable handles of a graph, in op-table order (the numbering the metadata refers to)."""
    handles, seen = [], set()
    for op in all_operations(graph):
        handle = op.attrs.get("variable")
        if handle is not None and id(handle) not in seen:
            seen.add(id(handle))
            handles.append(handle)
    return handles
