"""Find the modules that define ``rt.function``s, statically (libcst, no import).

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

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

# The names ``rt.function`` resolves to, whichever way it is imported.
FUNCTION_QUALNAMES = frozenset({
    "runtime.function", "runtime.Function",
    "runtime.polymorphic_function.function", "runtime.polymorphic_function.Function",
})

# What ``tf.function`` resolves to in a program written against TensorFlow: under ``--tf-compat``, rt.function.
TF_FUNCTION_QUALNAMES = frozenset({"tensorflow.function"})

# Directories never searched: build outputs, caches, virtual environments.
SKIPPED_DIRS = frozenset({"__pycache__", "build", "dist", "node_modules", "site-packages", "venv"})

# Bump when the analysis changes, so cached facts are recomputed.
_FACTS_VERSION = 2


@dataclasses.dataclass(frozen=True)
class FoundFunction:
    """One ``rt.function`` application: the function's name and the line of the decorator or call."""
    name: str
    line: int


@dataclasses.dataclass(frozen=True)
class Import:
    """A statically visible import: ``module`` (dotted, may be empty for ``from . import x``),
    ``names`` imported from it (empty for ``import a.b``) and the relative ``level``."""
    module: str
    names: tuple[str, ...] = ()
    level: int = 0


@dataclasses.dataclass(frozen=True)
class FileFacts:
    """What the build needs to know about one source file: its ``rt.function`` applications, its
    ``tf.function`` ones (which count under ``--tf-compat``) and its imports."""
    functions: tuple[FoundFunction, ...]
    imports: tuple[Import, ...]
    tf_functions: tuple[FoundFunction, ...] = ()
    compiles: tuple[FoundFunction, ...] = ()       # Keras ``model.compile(optimizer=..., loss=...)`` calls

    def to_json(self) -> dict:
        return {"functions": [[f.name, f.line] for f in self.functions],
                "tf_functions": [[f.name, f.line] for f in self.tf_functions],
                "compiles": [[f.name, f.line] for f in self.compiles],
                "imports": [[i.module, list(i.names), i.level] for i in self.imports]}

    @classmethod
    def from_json(cls, data: dict) -> "FileFacts":
        return cls(tuple(FoundFunction(n, line) for n, line in data["functions"]),
                   tuple(Import(m, tuple(names), level) for m, names, level in data["imports"]),
                   tuple(FoundFunction(n, line) for n, line in data.get("tf_functions", ())),
                   tuple(FoundFunction(n, line) for n, line in data.get("compiles", ())))


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


class _FactsCollector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)

    def __init__(self):
        super().__init__()
        self.functions: list[FoundFunction] = []
        self.tf_functions: list[FoundFunction] = []
        self.compiles: list[FoundFunction] = []
        self.imports: list[Import] = []
        self._decorator_calls: set[int] = set()

    def _kind(self, node: cst.CSTNode) -> list[FoundFunction] | None:
        """The list an application of ``node`` goes to: rt.function's, tf.function's, or None."""
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}
        if names & FUNCTION_QUALNAMES:
            return self.functions
        if names & TF_FUNCTION_QUALNAMES:
            return self.tf_functions
        return None

    def _is_rt_function(self, node: cst.CSTNode) -> bool:
        return self._kind(node) is not None

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                self._decorator_calls.add(id(target))
                target = target.func
            found = self._kind(target)
            if found is not None:
                found.append(FoundFunction(node.name.value, self._line(decorator)))

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) in self._decorator_calls:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "compile" and any(
                arg.keyword is not None and arg.keyword.value in ("optimizer", "loss") for arg in node.args):
            owner = func.value.value if isinstance(func.value, cst.Name) else "<expression>"
            self.compiles.append(FoundFunction(f"{owner}.compile", self._line(node)))
            return
        found = self._kind(func)
        if isinstance(func, cst.Call) and self._is_rt_function(func.func):
            self._decorator_calls.add(id(func))  # rt.function(input_signature=...)(f)
            found = self._kind(func.func)
        elif found is None:
            return
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        name = "<decorator>"
        if positional:
            first = positional[0]
            name = first.value if isinstance(first, cst.Name) else \
                first.attr.value if isinstance(first, cst.Attribute) else "<expression>"
        found.append(FoundFunction(name, self._line(node)))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self.imports.append(Import(_dotted(alias.name)))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        names: tuple[str, ...] = ()
        if not isinstance(node.names, cst.ImportStar):
            names = tuple(_dotted(alias.name) for alias in node.names)
        module = _dotted(node.module) if node.module is not None else ""
        self.imports.append(Import(module, names, len(node.relative)))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise TypeError(f"not a dotted name: {node!r}")


def scan_source(source: str) -> FileFacts:
    """The ``rt.function`` (and ``tf.function``) applications and the imports of one module's source."""
    module = cst.parse_module(source)
    if "runtime" not in source and "tensorflow" not in source and "keras" not in source:
        # Cheap path: without the words, nothing can resolve to runtime.function or tensorflow.function, and no
        # Keras model is compiled.
        return FileFacts((), tuple(_imports_only(module)))
    facts = _FactsCollector()
    MetadataWrapper(module, unsafe_skip_copy=True).visit(facts)
    return FileFacts(tuple(facts.functions), tuple(facts.imports), tuple(facts.tf_functions), tuple(facts.compiles))


def _imports_only(module: cst.Module) -> list[Import]:
    class Imports(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.imports: list[Import] = []
        visit_Import = _FactsCollector.visit_Import
        visit_ImportFrom = _FactsCollector.visit_ImportFrom
    visitor = Imports()
    module.visit(visitor)
    return visitor.imports


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
        try:
            facts = scan_source(source.decode("utf-8"))
        except cst.ParserSyntaxError as error:
            try:  # CPython's own message is the one users know ("'(' was never closed")
                compile(source, str(path), "exec", dont_inherit=True)
            except SyntaxError as python_error:
                raise python_error from None
            raise SyntaxError(str(error).splitlines()[0] if str(error) else "invalid syntax",
                              (str(path), error.raw_line, error.raw_column + 1, "")) from None
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
