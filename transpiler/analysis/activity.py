"""Activity analysis: which names a piece of code reads and which it modifies (binds).

Nested scopes (``def``, ``lambda``, ``class``, comprehensions) are not entered
for bindings: a nested ``def g`` modifies only ``g``; the names its body reads
count as reads (conservative: they may be read whenever ``g`` is called).

``ActivityProvider`` attaches an ``Activity`` to every ``If``, ``While``,
``For`` and ``FunctionDef`` (for loops and ifs: the activity of their bodies).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst
from libcst.metadata import BatchableMetadataProvider


@dataclass(frozen=True)
class Activity:
    """Names read and names modified (bound or deleted) by a block of code."""

    read: frozenset[str]
    modified: frozenset[str]
    appended_lists: frozenset[str] = frozenset()   # names `x` with `x.append(...)` calls


class _ActivityVisitor(cst.CSTVisitor):
    def __init__(self) -> None:
        self.read: set[str] = set()
        self.modified: set[str] = set()
        self.appended: set[str] = set()

    # -- bindings --------------------------------------------------------
    def bind(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.modified.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.bind(el.value)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value)
        else:  # attribute / subscript targets read their base
            target.visit(self)

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        for t in node.targets:
            self.bind(t.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        node.value.visit(self)
        node.target.visit(self)      # reads the target too
        self.bind(node.target)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            node.value.visit(self)
            self.bind(node.target)
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        node.value.visit(self)
        self.bind(node.target)
        return False

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)
        self.bind(node.target)
        node.body.visit(self)
        if node.orelse is not None:
            node.orelse.visit(self)
        return False

    def visit_WithItem(self, node: cst.WithItem) -> bool:
        node.item.visit(self)
        if node.asname is not None:
            self.bind(node.asname.name)
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> bool:
        if node.type is not None:
            node.type.visit(self)
        if node.name is not None:
            self.bind(node.name.name)
        node.body.visit(self)
        return False

    def visit_Del(self, node: cst.Del) -> bool:
        self.bind(node.target)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            if alias.asname is not None:
                self.bind(alias.asname.name)
            else:
                root = alias.name
                while isinstance(root, cst.Attribute):
                    root = root.value
                self.bind(root)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            self.bind(alias.asname.name if alias.asname is not None else alias.name)
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    # -- nested scopes ---------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for d in node.decorators:
            d.visit(self)
        for p in _all_params(node.params):
            if p.default is not None:
                p.default.visit(self)
        inner = activity_of(node.body.body)
        params = {p.name.value for p in _all_params(node.params)}
        self.read |= inner.read - inner.modified - params
        self.modified.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for d in node.decorators:
            d.visit(self)
        for a in node.bases:
            a.visit(self)
        inner = activity_of(node.body.body)
        self.read |= inner.read
        self.modified.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        params = {p.name.value for p in _all_params(node.params)}
        inner = _ActivityVisitor()
        node.body.visit(inner)
        self.read |= inner.read - params
        return False

    def _comprehension(self, node) -> bool:
        inner = _ActivityVisitor()
        for child in node.children:
            child.visit(inner)
        self.read |= inner.read - inner.modified
        return False

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    # -- reads -----------------------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        self.read.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)      # `.attr` is not a variable
        return False

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)
                and f.attr.value in ("append", "extend", "insert")):
            self.appended.add(f.value.value)

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)      # keyword names are not variables
        return False


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def param_names(params: cst.Parameters) -> list[str]:
    return [p.name.value for p in _all_params(params)]


def activity_of(nodes: cst.CSTNode | Sequence[cst.CSTNode] | None) -> Activity:
    """Names read and modified by a node or a list of nodes (None: nothing)."""
    visitor = _ActivityVisitor()
    if nodes is None:
        nodes = ()
    elif isinstance(nodes, cst.CSTNode):
        nodes = (nodes,)
    for n in nodes:
        n.visit(visitor)
    return Activity(frozenset(visitor.read), frozenset(visitor.modified), frozenset(visitor.appended))


def declared_names(body: Iterable[cst.CSTNode]) -> tuple[frozenset[str], frozenset[str]]:
    """(globals, nonlocals) declared by ``global``/``nonlocal`` in a function body (not nested scopes)."""
    globals_: set[str] = set()
    nonlocals: set[str] = set()

    class _Decl(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return False

        def visit_ClassDef(self, node):
            return False

        def visit_Lambda(self, node):
            return False

        def visit_Global(self, node: cst.Global) -> None:
            globals_.update(n.name.value for n in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            nonlocals.update(n.name.value for n in node.names)

    for stmt in body:
        stmt.visit(_Decl())
    return frozenset(globals_), frozenset(nonlocals)


def block_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of an ``If``/``While``/``For`` body including its else part."""
    out: list[cst.CSTNode] = list(node.body.body)
    orelse = getattr(node, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):      # elif
            out.append(orelse)
            break
        out.extend(orelse.body.body)
        break
    return out


class ActivityProvider(BatchableMetadataProvider[Activity]):
    """Activity of each ``If`` (both branches), ``While``/``For`` (body, target) and ``FunctionDef`` (body)."""

    def visit_If(self, node: cst.If) -> None:
        self.set_metadata(node, activity_of(block_of(node)))

    def visit_While(self, node: cst.While) -> None:
        self.set_metadata(node, activity_of(list(node.body.body)))

    def visit_For(self, node: cst.For) -> None:
        a = activity_of(list(node.body.body))
        t = _ActivityVisitor()
        t.bind(node.target)
        self.set_metadata(node, Activity(a.read | t.read, a.modified | t.modified, a.appended_lists))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.set_metadata(node, activity_of(list(node.body.body)))
