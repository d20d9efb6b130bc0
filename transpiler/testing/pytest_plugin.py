"""The pytest plugin of rt (entry point ``pytest11``: ``rt``): check built modules in a test suite.

``pytest --rt-check PKG`` collects one test per built signature of every built module in PKG (a package
directory, a ``.py`` file or an importable package name) and compares it with the traced and eager runs
on inputs generated from the signature (``transpiler.testing.check``); a disagreement fails that test
with the inputs and the differing elements. Without other paths on the command line, only the check runs.

    python -m transpiler build mymodels/
    python -m pytest --rt-check mymodels

The ``rt_built`` fixture builds a module into a temporary directory and imports the built module:

    def test_scaled(rt_built):
        models = rt_built("mymodels/models.py")
        assert models.scaled.get_concrete_function().native

pytest loads this plugin in every run in an environment where rt is installed, so it imports only pytest
and the standard library: the checker (the runtime, hypothesis) and the build driver are declared with
``lazy_import`` and load when a run uses them.
"""
from __future__ import annotations

import importlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

from transpiler.lazy import lazy_import

check = lazy_import("transpiler.testing.check")
discovery = lazy_import("transpiler.build.discovery")
driver = lazy_import("transpiler.build.driver")
hashing = lazy_import("transpiler.build.hashing")

_TARGETS = pytest.StashKey[list]()
_CHECK_ONLY = pytest.StashKey[bool]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("rt", "rt: check built modules (python -m transpiler build)")
    group.addoption("--rt-check", action="append", default=[], metavar="PKG", dest="rt_check",
                    help="compare every built signature of every built module in PKG (a package directory, a .py "
                         "file or an importable package name) with traced and eager runs on generated inputs; "
                         "may be given more than once")
    group.addoption("--rt-check-examples", type=int, default=20, metavar="N", dest="rt_check_examples",
                    help="inputs generated per signature (default: 20)")
    group.addoption("--rt-check-rtol", type=float, default=1e-5, metavar="R", dest="rt_check_rtol",
                    help="relative tolerance for floating-point results (default: 1e-5)")
    group.addoption("--rt-check-atol", type=float, default=1e-6, metavar="A", dest="rt_check_atol",
                    help="absolute tolerance for floating-point results (default: 1e-6)")


def resolve_target(text: str) -> Path:
    """``--rt-check`` argument -> a directory or ``.py`` file: a path, else an importable package's location."""
    path = Path(text)
    if path.exists():
        return path.resolve()
    try:
        spec = importlib.util.find_spec(text)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise pytest.UsageError(f"--rt-check {text}: no such file or directory, and no importable module {text!r}")
    origin = Path(spec.origin).resolve()
    return origin.parent if spec.submodule_search_locations else origin


def pytest_configure(config) -> None:
    targets = [resolve_target(text) for text in config.getoption("rt_check")]
    config.stash[_TARGETS] = targets
    if not targets:
        return
    args_source = getattr(config, "args_source", None)
    explicit = args_source is not None and args_source == pytest.Config.ArgsSource.ARGS
    config.stash[_CHECK_ONLY] = not explicit
    config.args = (list(config.args) if explicit else []) + [str(t) for t in targets]


def pytest_collection_modifyitems(config, items) -> None:
    """Without other paths on the command line only the check runs: other items collected under the
    targets (the doctests of a helper module, under ``--doctest-modules``) are deselected."""
    if not config.stash.get(_CHECK_ONLY, False):
        return
    kept = [item for item in items if isinstance(item, (RtCheckItem, RtNotBuilt))]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_collect_file(file_path: Path, parent):
    """A module of ``--rt-check`` is collected by the check alone: any collector that imports the file as a
    module (``--doctest-modules``, set in many projects' pytest settings) would import the built extension
    that shadows it and fail with "import file mismatch"."""
    outcome = yield
    if not _is_checked(file_path, parent.config):
        return
    others = [c for c in outcome.get_result() if not isinstance(c, pytest.Module)]
    outcome.force_result(others + [RtCheckFile.from_parent(parent, path=file_path)])


def _is_checked(file_path: Path, config) -> bool:
    targets = config.stash.get(_TARGETS, [])
    if not targets or file_path.suffix != ".py" or file_path.name.startswith(("test_", "conftest")):
        return False
    if not any(file_path == target or target in file_path.parents for target in targets):
        return False
    return _defines_rt_functions(file_path)


def _defines_rt_functions(path: Path) -> bool:
    source = path.read_bytes()
    if b"runtime" not in source:
        return False
    try:
        return bool(discovery.scan_source(source.decode("utf-8")).functions)
    except Exception:  # noqa: BLE001 - a file that does not parse is the import's error to report
        return True


class RtCheckFile(pytest.File):
    """A module that defines ``rt.function``s: one item per built signature."""

    def collect(self):
        root, name = discovery.module_name_for(self.path)
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        module = importlib.import_module(name)
        location = Path(getattr(module, "__file__", "") or "").resolve().parent
        if location != self.path.parent:
            raise pytest.UsageError(f"--rt-check: {self.path} is module {name}, but {name} was imported from "
                                    f"{location} (another copy on sys.path?)")
        if not check.is_built(module):
            yield RtNotBuilt.from_parent(self, name="not built")
            return
        for signature in check.built_signatures(module):
            yield RtCheckItem.from_parent(self, name=signature.label, signature=signature)


class RtCheckItem(pytest.Item):
    """Native vs traced vs eager for one built signature."""

    def __init__(self, *, signature, **kwargs):
        super().__init__(**kwargs)
        self.signature = signature

    def runtest(self) -> None:
        options = self.config.option
        check.check(self.signature, max_examples=options.rt_check_examples, rtol=options.rt_check_rtol,
                    atol=options.rt_check_atol)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, check.Mismatch):
            return f"built code disagrees: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"rt-check {self.signature.module.__name__}.{self.signature.label}"


class RtNotBuilt(pytest.Item):
    """A module with ``rt.function``s and no built extension: skipped, with the command that builds it."""

    def runtest(self) -> None:
        pytest.skip(f"{self.path.name} is not built: run python -m transpiler build {self.path.parent}")

    def reportinfo(self):
        return self.path, None, f"rt-check {self.path.name}: not built"


@pytest.fixture(scope="session")
def rt_built(tmp_path_factory):
    """``rt_built(path)`` builds the module at ``path`` (a ``.py`` file, or a package directory for its
    ``__init__``) into a temporary directory, once per session, and returns the built module. The local
    modules it imports are copied beside it as sources. What ``import`` gives elsewhere in the tests is
    unchanged. A signature the build cannot compile to native code fails the test (``build --strict``);
    ``rt_built(path, strict=False)`` accepts it (it then runs on the generic executor)."""
    outdir = tmp_path_factory.mktemp("rt_built")
    built: dict[Path, object] = {}

    def build_and_import(path, strict: bool = True):
        source = Path(path).resolve()
        if source.is_dir():
            source = source / "__init__.py"
        if source in built:
            return built[source]
        modules = discovery.discover([source])
        if not modules:
            pytest.fail(f"rt_built: {path} defines no rt.function", pytrace=False)
        output = io.StringIO()
        if driver.build([source], outdir=outdir, out=output, strict=strict) != 0:
            pytest.fail(f"python -m transpiler build {path} failed:\n{output.getvalue()}", pytrace=False)
        module = modules[0]
        for dependency in hashing.local_dependencies(module, discovery.FactsCache()).values():
            driver.copy_if_changed(dependency, outdir / dependency.relative_to(module.root))
        built[source] = _import_isolated(module.name, outdir)
        return built[source]
    return build_and_import


def _import_isolated(name: str, directory: Path):
    """Import ``name`` from ``directory`` and put back whatever ``sys.modules`` held for it and its packages."""
    parts = name.split(".")
    names = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    previous = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.path.insert(0, str(directory))
    try:
        importlib.invalidate_caches()
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(directory))
        sys.modules.update(previous)
    if not Path(module.__file__).resolve().is_relative_to(directory.resolve()):
        pytest.fail(f"rt_built: {name} was imported from {module.__file__}, not from the build in {directory}",
                    pytrace=False)
    return module
