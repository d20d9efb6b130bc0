"""The package's import structure: layers that import only from below, no cycle, no import inside a function.

The sources of ``runtime/`` and ``transpiler/`` are parsed (nothing is imported, no compiler is needed);
``runtime/_native.pyx`` counts too. An import is an edge from the importing module to the deepest
module of the package it names; ``lazy_import("x")`` at module top (``transpiler/lazy.py``) is an edge
like any other import, only loaded later. The layers, lowest first, are ``LAYERS`` below: a module
may import from its own layer and the layers below it, never from a layer above.

Run as a script to draw the graph (clustered by layer, lowest at the bottom; an edge that breaks a rule
would be red; ``--packages`` draws one node per package and layer):

    python tests/unit/test_architecture.py --packages | dot -Tsvg -o deps.svg
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "transpiler")

# The declared layer order, lowest first. A name ending in ".*" covers a package's submodules; the most
# specific pattern that matches a module gives its layer.
LAYERS: list[tuple[str, list[str]]] = [
    ("1 foundation: dtypes, shapes, errors, config, utilities", [
        "runtime.dtypes", "runtime.shapes", "runtime.errors", "runtime.config", "runtime.nest", "transpiler.cachedir",
        "runtime.version",
        "transpiler.lazy"]),
    ("2 graph IR and tensors", [
        "runtime.tensor", "runtime.context", "runtime.ops.op_def", "runtime.graph", "runtime.composite"]),
    ("3 ops and the executor", [
        "runtime.ops", "runtime.ops.*", "runtime.tensor_array", "runtime.executor", "runtime._native"]),
    ("4 AutoGraph: converter and its runtime operators", [
        "runtime.autograph", "runtime.autograph.*", "runtime.operators", "runtime.operators.*",
        "transpiler", "transpiler.conversion", "transpiler.converters", "transpiler.converters.*", "transpiler.analysis",
        "transpiler.analysis.*", "transpiler.naming", "transpiler.origin_info", "transpiler.cst_walk"]),
    ("5 tracing, Function, variables, tape, keras, data, optimizer", [
        "runtime.variables", "runtime.module", "runtime.jit", "runtime.polymorphic_function", "runtime.backprop",
        "runtime.keras", "runtime.keras.*", "runtime.data", "runtime.data.*", "runtime.optimizer",
        "runtime.optimizer.*", "runtime.train", "runtime.train.*"]),
    ("6 AOT loader, and the TensorFlow-compat import hook it runs a --tf-compat module's source under", [
        "runtime.aot", "runtime.tf_compat"]),
    ("7 build driver, lowering, code generation, JIT compiler, testing plugin, CLI", [
        "transpiler.build", "transpiler.build.*", "transpiler.lowering", "transpiler.lowering.*",
        "transpiler.codegen", "transpiler.codegen.*", "transpiler.jit", "transpiler.testing",
        "transpiler.testing.*", "transpiler.cli", "transpiler.__main__"]),
    ("8 the public API: import runtime as rt", ["runtime", "runtime.api_table"]),
]

# Imports inside functions that stay: optional or heavy third-party dependencies, loaded only by the code
# that needs them. Never a module of this package (declare those at the top, with lazy_import if heavy).
ALLOWED_IN_FUNCTIONS: dict[tuple[str, str], str] = {
    ("transpiler.build.pictures", "graphviz"): "optional extra [graph]: only `graph --format svg|html` draws",
    ("transpiler.build.compile", "Cython"): "the compile toolchain, loaded only when something is compiled",
    ("transpiler.build.compile", "setuptools"): "the compile toolchain, loaded only when something is compiled",
    ("runtime.api_table", "tensorflow"): "optional: the API table checks its names against an installed TensorFlow",
}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str          # a module of the package, or a top-level third-party/stdlib name
    line: int
    in_function: bool
    lazy: bool           # lazy_import("...") at module top


def module_files() -> dict[str, Path]:
    """Every module of the package: dotted name -> file (``__init__.py`` for packages, the ``.pyx``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*")):
            if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(PROJECT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The deepest module of the package that ``name`` (a dotted module or module attribute) names."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]):
        self.module, self.is_package, self.modules = module, is_package, modules
        self.imports: list[Import] = []
        self.misplaced_lazy: list[int] = []
        self.lazy_names = {"lazy_import"}
        self.depth = 0

    def _add(self, name: str, line: int, lazy: bool = False) -> None:
        internal = _resolve(name, self.modules) if name.split(".")[0] in PACKAGES else ""
        self.imports.append(Import(self.module, internal or name.split(".")[0], line, self.depth > 0, lazy))

    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(self.module, self.is_package, node)
        for alias in node.names:
            if base == "transpiler.lazy" and alias.name == "lazy_import":
                self.lazy_names.add(alias.asname or alias.name)
            full = f"{base}.{alias.name}"
            self._add(full if full in self.modules else base, node.lineno)

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):    # annotations only: never executed
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = ast.unparse(node.func)
        literal = node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        if (name in self.lazy_names or name in ("importlib.import_module", "__import__")) and literal:
            lazy = name in self.lazy_names
            if lazy and self.depth:
                self.misplaced_lazy.append(node.lineno)
            self._add(node.args[0].value, node.lineno, lazy=lazy)
        self.generic_visit(node)


_PYX_IMPORT = re.compile(r"^(?:from\s+([\w.]+)\s+c?import\s+([\w, ]+)|c?import\s+([\w.]+))", re.M)


def _pyx_imports(module: str, source: str, modules: dict[str, Path]) -> list[Import]:
    """The Python imports of a Cython module (its top-level ``import`` / ``from ... import`` lines)."""
    found = []
    for match in _PYX_IMPORT.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        base, names, plain = match.groups()
        for name in ([f"{base}.{n.strip()}" for n in names.split(",")] if base else [plain]):
            internal = _resolve(name, modules) if name.split(".")[0] in PACKAGES else ""
            found.append(Import(module, internal or name.split(".")[0], line, False, False))
    return found


@functools.lru_cache(maxsize=None)
def collect() -> tuple[dict[str, Path], list[Import], list[str]]:
    """(modules, every import (one per line and target), problems found while parsing)."""
    modules = module_files()
    imports, problems = [], []
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        if path.suffix == ".pyx":
            imports += _pyx_imports(module, source, modules)
            continue
        collector = _Collector(module, path.name == "__init__.py", modules)
        collector.visit(ast.parse(source, str(path)))
        imports += collector.imports
        problems += [f"{path.relative_to(PROJECT)}:{line}: lazy_import inside a function (declare it at module top)"
                     for line in collector.misplaced_lazy]
    return modules, list(dict.fromkeys(imports)), problems


def layer_of(module: str) -> int | None:
    """The index in ``LAYERS`` of the most specific pattern that matches ``module``."""
    best, best_length = None, -1
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern.endswith(".*"):
                matches, length = module.startswith(pattern[:-1]), len(pattern) - 2
            else:
                matches, length = module == pattern, len(pattern) + 1
            if matches and length > best_length:
                best, best_length = index, length
    return best


def module_graph(modules, imports) -> dict[str, set[str]]:
    """Edges between modules of the package: imports at module top (lazy ones included)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if imp.target in modules and imp.target != imp.importer and not imp.in_function:
            graph[imp.importer].add(imp.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path(graph: dict[str, set[str]], start: str, members: set[str]) -> list[str]:
    """One cycle through ``start`` inside the component ``members`` (breadth first), for the message."""
    parents = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return path[::-1] + [start]
            if w not in parents:
                parents[w] = v
                queue.append(w)
    return [start]


def layer_violations(modules, imports) -> list[str]:
    out = []
    for imp in imports:
        if imp.target not in modules or imp.target == imp.importer:
            continue
        low, high = layer_of(imp.target), layer_of(imp.importer)
        if low is not None and high is not None and low > high:
            out.append(f"{modules[imp.importer].relative_to(PROJECT)}:{imp.line}: {imp.importer} (layer "
                       f"{LAYERS[high][0]!r}) imports {imp.target} from the higher layer {LAYERS[low][0]!r}")
    return out


def function_imports(modules, imports) -> list[str]:
    out = []
    for imp in imports:
        if imp.in_function and (imp.importer, imp.target) not in ALLOWED_IN_FUNCTIONS:
            what = "a module of this package" if imp.target in modules else "not in the allow-list"
            out.append(f"{modules[imp.importer].relative_to(PROJECT)}:{imp.line}: {imp.importer} imports "
                       f"{imp.target} inside a function ({what}); import it at module top (lazy_import if it is "
                       "heavy) or add an optional dependency to ALLOWED_IN_FUNCTIONS with the reason")
    return out


# ---------------------------------------------------------------------------
# The tests.

def test_every_module_has_a_layer():
    modules, _, _ = collect()
    assert [m for m in modules if layer_of(m) is None] == []


def test_no_import_cycle():
    modules, imports, _ = collect()
    graph = module_graph(modules, imports)
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(
        f"  {len(c)} modules: {' -> '.join(_path(graph, c[0], set(c)))}" + (f" (and {', '.join(c)})" if len(c) > 3
                                                                               else "")
        for c in found)


def test_imports_follow_the_layers():
    modules, imports, _ = collect()
    problems = layer_violations(modules, imports)
    assert not problems, "imports against the layer order:\n" + "\n".join(problems)


def test_no_import_inside_a_function():
    modules, imports, problems = collect()
    problems = problems + function_imports(modules, imports)
    assert not problems, "\n".join(problems)


def test_the_allow_list_is_used():
    """Each allowed import inside a function still exists (the list stays short and true)."""
    _, imports, _ = collect()
    used = {(imp.importer, imp.target) for imp in imports if imp.in_function}
    assert sorted(set(ALLOWED_IN_FUNCTIONS) - used) == []


def test_the_checks_see_a_cycle_and_a_wrong_layer():
    """The checks themselves: a made-up cycle and an upward import are reported."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert _path(graph, "a", {"a", "b", "c"}) == ["a", "b", "c", "a"]
    modules = {"runtime.graph": PROJECT / "runtime" / "graph.py", "runtime.aot": PROJECT / "runtime" / "aot.py"}
    upward = [Import("runtime.graph", "runtime.aot", 1, False, False)]
    assert len(layer_violations(modules, upward)) == 1
    assert layer_violations(modules, [Import("runtime.aot", "runtime.graph", 1, False, False)]) == []
    inside = [Import("runtime.aot", "runtime.graph", 1, True, False)]
    assert "inside a function" in function_imports(modules, inside)[0]


def _group(module: str) -> str:
    """A module's node in the package-level picture: its package (modules of the top package stand alone)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in ("runtime.autograph", "runtime.operators") else module


def to_dot(packages: bool = False) -> str:
    """The module graph as Graphviz DOT, one cluster per layer (importers above); an edge that breaks a rule
    is red, a lazy_import edge dashed. ``packages`` draws one node per package and layer."""
    modules, imports, _ = collect()
    graph = module_graph(modules, imports)
    in_cycle = {m for c in cycles(graph) for m in c}
    lazy = {(i.importer, i.target) for i in imports if i.lazy}
    node = (lambda m: f"{_group(m)} ({layer_of(m) + 1})") if packages else (lambda m: m)
    edges: dict[tuple[str, str], set[str]] = {}
    for importer in graph:
        for target in graph[importer]:
            style = set()
            if layer_of(target) > layer_of(importer) or (importer in in_cycle and target in in_cycle):
                style.add("color=red")
            if (importer, target) in lazy:
                style.add("style=dashed")
            if node(importer) != node(target):
                edges.setdefault((node(importer), node(target)), set()).update(style)
    lines = ["digraph rt {", "  newrank=true; ranksep=0.8; node [shape=box, fontsize=10, fontname=monospace];",
             "  edge [color=gray40, arrowsize=0.5];"]
    for index, (name, _) in enumerate(LAYERS):
        lines.append(f'  subgraph cluster_{index} {{ label="{name}"; style=rounded; color=gray60;'
                     + (" rank=same;" if packages else ""))
        lines += sorted({f'    "{node(m)}";' for m in modules if layer_of(m) == index})
        lines.append("  }")
    for (a, b), style in sorted(edges.items()):
        lines.append(f'  "{a}" -> "{b}"' + (f" [{', '.join(sorted(style))}]" if style else "") + ";")
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(to_dot(packages="--packages" in sys.argv))


def test_every_folder_of_code_is_a_regular_package():
    """A folder of modules without ``__init__.py`` is a namespace package: it imports from a checkout, but
    ``find_packages`` leaves it out of a non-editable install (transpiler.converters once went missing)."""
    missing = sorted({str(path.parent.relative_to(PROJECT)) for path in module_files().values()
                      if path.suffix == ".py" and not (path.parent / "__init__.py").exists()})
    assert missing == []
