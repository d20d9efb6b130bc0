"""Scanning a source file with libcst for what the build needs (``FileFacts``): the ``rt.function``
applications, under any alias (libcst's ``QualifiedNameProvider`` resolves them), the ``tf.function`` ones and
Keras ``model.compile(optimizer=..., loss=...)`` calls (which count under ``--tf-compat``: ``compile`` makes
``model.train_function``, an ``rt.function`` the build compiles), and the imports.

Loaded only when a file's facts are not cached (``transpiler.build.discovery.FactsCache``): libcst is the
biggest import of the build driver, and a no-op build needs none of it.
"""
from __future__ import annotations

from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from transpiler.build.facts import FUNCTION_QUALNAMES, TF_FUNCTION_QUALNAMES, FileFacts, FoundFunction, Import


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
        if isinstance(func, cst.Call) and self._kind(func.func) is not None:
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
    """The ``rt.function`` (and ``tf.function``) applications, Keras ``compile`` calls and the imports of one
    module's source."""
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


def scan_file(source: bytes, path: Path) -> FileFacts:
    """``scan_source`` of a file's bytes; a file that does not parse raises ``SyntaxError`` with CPython's
    message where CPython gives one."""
    try:
        return scan_source(source.decode("utf-8"))
    except cst.ParserSyntaxError as error:
        try:  # CPython's own message is the one users know ("'(' was never closed")
            compile(source, str(path), "exec", dont_inherit=True)
        except SyntaxError as python_error:
            raise python_error from None
        raise SyntaxError(str(error).splitlines()[0] if str(error) else "invalid syntax",
                          (str(path), error.raw_line, error.raw_column + 1, "")) from None
