"""Find the modules that define ``rt.function``s, statically (libcst, no import; ``scanning.py``).

A module qualifies when it applies ``runtime.function`` (or ``runtime.Function``)
under any alias: ``@rt.function``, ``@rt.function(...)``, ``@runtime.function``,
``@function`` after ``from runtime import function``, or a call ``rt.function(f)``.
Aliases are resolved by libcst's ``QualifiedNameProvider``. With ``tf_compat`` (``build --tf-compat``, for
programs written against ``import tensorflow as tf``: see ``runtime.tf_compat``), ``tensorflow.function``
counts too. A module that compiles a Keras model at import (``model.compile(optimizer=..., loss=...)``) qualifies
as well: ``compile`` makes ``model.train_function``, an ``rt.function`` the build compiles.

Example:
    >>> facts = scan_source("import runtime as rt\\n@rt.function\\ndef f(x):\\n    return x\\n")
    >>> [(fn.name, fn.line) for fn in facts.functions]
    [('f', 2)]
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

from transpiler.build.facts import FUNCTION_QUALNAMES, TF_FUNCTION_QUALNAMES, FileFacts, FoundFunction, Import
from transpiler.lazy import lazy_import

# libcst, loaded only for files whose facts are not cached: a no-op build needs none of it
scanning = lazy_import("transpiler.build.scanning")

__all__ = ["FUNCTION_QUALNAMES", "TF_FUNCTION_QUALNAMES", "FactsCache", "FileFacts", "FoundFunction", "Import", "ModuleInfo", "discover",
           "is_skipped_dir", "iter_python_files", "module_name_for", "scan_source"]

# Directories never searched: build outputs, caches, virtual environments.
SKIPPED_DIRS = frozenset({"__pycache__", "build", "dist", "node_modules", "site-packages", "venv"})

# Bump when the analysis changes, so cached facts are recomputed.
_FACTS_VERSION = 2


@dataclasses.dataclass(frozen=True)
class ModuleInfo:
    """A module to build: its source file, the ``sys.path`` root it imports from, and its dotted name."""
    path: Path
    root: Path
    name: str
    functions: tuple[FoundFunction, ...] = ()

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def package(self) -> str:
        """The package relative imports resolve against."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def scan_source(source: str) -> FileFacts:
    """The ``rt.function`` applications and the imports of one module's source (``scanning.scan_source``)."""
    return scanning.scan_source(source)


class FactsCache:
    """Per-file ``FileFacts`` keyed by content hash, persisted as JSON (libcst analysis is the slow part
    of a no-op build)."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._entries: dict[str, dict] = {}
        self._dirty = False
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text())
                if data.get("version") == _FACTS_VERSION:
                    self._entries = data.get("files", {})
            except (OSError, ValueError):
                pass

    def facts(self, path: Path, source: bytes | None = None) -> FileFacts:
        """Facts of ``path`` (``source`` is its bytes, when already read). Raises ``SyntaxError``."""
        if source is None:
            source = path.read_bytes()
        digest = hashlib.sha256(source).hexdigest()
        key = str(path)
        entry = self._entries.get(key)
        if entry is not None and entry.get("sha256") == digest:
            return FileFacts.from_json(entry["facts"])
        facts = scanning.scan_file(source, path)
        self._entries[key] = {"sha256": digest, "facts": facts.to_json()}
        self._dirty = True
        return facts

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": _FACTS_VERSION, "files": self._entries}))
            os.replace(tmp, self.path)
        except OSError:
            pass


def iter_python_files(paths: Iterable[Path], exclude: Iterable[Path] = ()) -> Iterator[Path]:
    """Every ``.py`` file under ``paths`` (files or directories), in sorted order, skipping hidden and build
    directories and anything under ``exclude``."""
    excluded = {p.resolve() for p in exclude}
    seen: set[Path] = set()
    for path in paths:
        path = Path(path).resolve()
        if path.is_file():
            if path.suffix == ".py" and path not in seen:
                seen.add(path)
                yield path
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            current = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not is_skipped_dir(d) and current / d not in excluded)
            for filename in sorted(filenames):
                file = current / filename
                if filename.endswith(".py") and not filename.startswith(".") and file not in seen:
                    seen.add(file)
                    yield file


def is_skipped_dir(name: str) -> bool:
    """Hidden, cache, build-output and virtual-environment directories, which the build never searches."""
    return name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info")


def module_name_for(path: Path) -> tuple[Path, str]:
    """``(root, dotted name)`` of the module at ``path``: the root is the first directory above it that is
    not a package (has no ``__init__.py``) -- the one to put on ``sys.path``.

    Example:
        >>> module_name_for(Path("/nonexistent/models.py"))
        (PosixPath('/nonexistent'), 'models')
    """
    path = Path(path).resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.append(directory.name)
        directory = directory.parent
    if not parts:  # a bare __init__.py outside any package
        parts = [path.parent.name]
    return directory, ".".join(reversed(parts))


def discover(paths: Iterable[Path], exclude: Iterable[Path] = (), cache: FactsCache | None = None,
             errors: list | None = None, tf_compat: bool = False) -> list[ModuleInfo]:
    """The modules under ``paths`` that define ``rt.function``s (and, with ``tf_compat``, ``tf.function``s),
    sorted by dotted name.

    Files that do not parse are reported in ``errors`` (as ``(path, SyntaxError)``) when it is given, and
    otherwise skipped.
    """
    words = (b"runtime", b"tensorflow", b"keras") if tf_compat else (b"runtime",)
    cache = cache or FactsCache()
    modules = []
    for path in iter_python_files(paths, exclude):
        try:
            source = path.read_bytes()
        except OSError:
            continue
        if not any(word in source for word in words):
            continue
        try:
            facts = cache.facts(path, source)
        except (SyntaxError, UnicodeDecodeError) as error:
            if errors is not None and b"function" in source:
                errors.append((path, error))
            continue
        functions = facts.functions + (facts.tf_functions if tf_compat else ()) + facts.compiles
        if functions:
            root, name = module_name_for(path)
            modules.append(ModuleInfo(path, root, name, functions))
    return sorted(modules, key=lambda m: (m.name, str(m.path)))
