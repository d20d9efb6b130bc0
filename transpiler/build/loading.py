"""Import a user's module from its ``.py`` source, even when a built extension sits beside it.

CPython prefers ``models.cpython-*.so`` over ``models.py`` in the same directory, so a plain import in a
build process would load the previous build. ``load_from_source`` loads the ``.py`` explicitly
(``spec_from_file_location`` + ``SourceFileLoader``), and ``prefer_sources`` makes the other imports of
local modules (parent packages, sibling modules) do the same.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from runtime.polymorphic_function import begin_module


class _SourceFirstFinder(importlib.abc.MetaPathFinder):
    """Finds local modules as source when a compiled extension of the same name shadows the ``.py``."""

    def __init__(self, roots: list[Path]):
        self.roots = [r.resolve() for r in roots]

    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return None
        origin = Path(spec.origin).resolve()
        if not any(root == origin.parent or root in origin.parents for root in self.roots):
            return None
        source = origin.with_name(origin.name.split(".", 1)[0] + ".py")
        if not source.is_file():
            return None
        return source_spec(name, source)


def source_spec(name: str, source: Path) -> importlib.machinery.ModuleSpec:
    source = Path(source).resolve()
    locations = [str(source.parent)] if source.name == "__init__.py" else None
    return importlib.util.spec_from_file_location(
        name, str(source), loader=importlib.machinery.SourceFileLoader(name, str(source)),
        submodule_search_locations=locations)


@contextlib.contextmanager
def prefer_sources(roots: list[Path]):
    """While active, local modules under ``roots`` import from ``.py`` even beside built extensions."""
    finder = _SourceFirstFinder(roots)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


def load_from_source(name: str, source: Path, root: Path) -> ModuleType:
    """Import module ``name`` from ``source`` (with ``root`` on ``sys.path``), registered in
    ``sys.modules`` under ``name``; its parent packages are imported first. Call inside ``prefer_sources``
    so that the module's own imports skip built extensions too."""
    source = Path(source).resolve()
    root_text = str(Path(root).resolve())
    if root_text not in sys.path:
        sys.path.insert(0, root_text)
    parent, _, last = name.rpartition(".")
    if parent:
        importlib.import_module(parent)
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) and \
            Path(existing.__file__).resolve() == source:
        return existing  # the parent package imported it already (from source)
    spec = source_spec(name, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    begin_module(name)      # its Functions' origins count from 0, as when the built module imports
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if parent:
        setattr(sys.modules[parent], last, module)
    return module
