"""Activity analysis: which names a piece of code reads and which it modifies (binds).

Nested scopes (``def``, ``lambda``, ``class``, comprehensions) are not entered
for bindings: a nested ``def g`` modifies only ``g``; the names its body reads
count as reads (conservative: they may be read whenever ``g`` is called).

Assignments to items and attributes are composite modifications, recorded by their
canonical source (AutoGraph's qualified names): ``d['b'] = 1``, ``self.x += 1`` and
``del l[0]`` modify ``d['b']``, ``self.x`` and ``l[0]``. A target whose key is not a
constant, a name or an attribute chain (``d[k + 1]``, ``a[1:3]``) cannot be named that
way: it is recorded as untracked.

``next(it)`` (also as converted code writes it, ``rt__.converted_call(next, (it,), None)``) records ``it``
as advanced: the call changes the iterator's position, which a tensor loop or ``if`` must then carry
(the control-flow converter makes a local ``it`` part of the statement's state). ``for x in it`` records
``it`` as iterated (it advances ``it`` when ``it`` is an iterator: ``iterator_names`` gives the names a
function binds to ``iter(...)``).

``ActivityProvider`` attaches an ``Activity`` to every ``If``, ``While``,
``For`` and ``FunctionDef`` (for loops and ifs: the activity of their bodies).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst

from transpiler.analysis.provider import AnalysisProvider
from transpiler.cst_walk import SCOPES, walk


@dataclass(frozen=True)
class Activity:
    """Names read and names modified (bound or deleted) by a block of code."""

    read: frozenset[str]
    modified: frozenset[str]
    appended_lists: frozenset[str] = frozenset()   # names `x` with `x.append(...)` calls
    composites: frozenset[str] = frozenset()       # items/attributes assigned: "d['b']", "self.x"
    untracked: frozenset[str] = frozenset()        # items/attributes assigned with a computed key: "d[k + 1]"
    deleted: frozenset[str] = frozenset()          # names removed by `del`
    advanced: frozenset[str] = frozenset()         # names `it` with `next(it)` calls
    iterated: frozenset[str] = frozenset()         # names `it` of `for x in it` loops


def _key_code(node: cst.BaseExpression) -> str | None:
    """Canonical source of a subscript key that names one slot: a constant, a name, an attribute chain."""
    if isinstance(node, cst.SimpleString):
        return repr(node.evaluated_value)     # d["b"] and d['b'] are one slot, spelled as TensorFlow does
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return "-" + node.expression.value
    return composite_name(node, allow_name=True)


def composite_name(node: cst.BaseExpression, allow_name: bool = False) -> str | None:
    """``d['b']``, ``self.x.y``, ``l[i]`` as canonical source; None for anything else (calls, slices, ``d[k + 1]``)."""
    if isinstance(node, cst.Name):
        return node.value if allow_name else None
    if isinstance(node, cst.Attribute):
        base = composite_name(node.value, allow_name=True)
        return None if base is None else f"{base}.{node.attr.value}"
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        base = composite_name(node.value, allow_name=True)
        key = _key_code(node.slice[0].slice.value)
        return None if base is None or key is None else f"{base}[{key}]"
    return None


def _advanced_iterator(node: cst.Call) -> str | None:
    """``it`` of ``next(it[, default])`` or of its converted form ``rt__.converted_call(next, (it, ...), ...)``."""
    args = node.args
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "converted_call" \
            and isinstance(node.func.value, cst.Name) and node.func.value.value == "rt__" and len(args) >= 2:
        if not (isinstance(args[0].value, cst.Name) and args[0].value.value == "next"
                and isinstance(args[1].value, cst.Tuple) and args[1].value.elements):
            return None
        first = args[1].value.elements[0]
        value = None if isinstance(first, cst.StarredElement) else first.value
    elif isinstance(node.func, cst.Name) and node.func.value == "next" and args and not args[0].star \
            and args[0].keyword is None:
        value = args[0].value
    else:
        return None
    return value.value if isinstance(value, cst.Name) else None


def composite_parts(code: str) -> tuple[str | None, frozenset[str]]:
    """(root name, names used in keys) of a composite's source: ``d[k].x`` -> ('d', {'k'})."""
    node = cst.parse_expression(code)
    keys: set[str] = set()
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(node, cst.Subscript):
            reads = _ActivityVisitor()
            for element in node.slice:
                element.visit(reads)
            keys |= reads.read
        node = node.func if isinstance(node, cst.Call) else node.value
    return (node.value if isinstance(node, cst.Name) else None), frozenset(keys)


class _ActivityVisitor(cst.CSTVisitor):
    def __init__(self) -> None:
        self.read: set[str] = set()
        self.modified: set[str] = set()
        self.appended: set[str] = set()
        self.composites: set[str] = set()
        self.untracked: set[str] = set()
        self.deleted: set[str] = set()
        self.advanced: set[str] = set()
        self.iterated: set[str] = set()

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
            name = composite_name(target)
            if name is not None:
                self.composites.add(name)
            elif isinstance(target, (cst.Attribute, cst.Subscript)):
                self.untracked.add(cst.Module([]).code_for_node(target))
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
        if isinstance(node.iter, cst.Name):
            self.iterated.add(node.iter.value)
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

        def names(target):
            if isinstance(target, cst.Name):
                self.deleted.add(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    names(element.value)
        names(node.target)
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
        self.advanced |= inner.advanced - inner.modified - params
        self.iterated |= inner.iterated - inner.modified - params
        self.modified.add(node.name.value)
        return False      # (its item/attribute writes happen when it is called: not this block's state)

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
        self.advanced |= inner.advanced - params      # (a lambda called in the block advances them too)
        self.iterated |= inner.iterated - params
        return False

    def _comprehension(self, node) -> bool:
        inner = _ActivityVisitor()
        for child in node.children:
            child.visit(inner)
        self.read |= inner.read - inner.modified
        self.advanced |= inner.advanced - inner.modified
        self.iterated |= inner.iterated - inner.modified
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
        iterator = _advanced_iterator(node)
        if iterator is not None:
            self.advanced.add(iterator)

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
    return Activity(frozenset(visitor.read), frozenset(visitor.modified), frozenset(visitor.appended),
                    frozenset(visitor.composites), frozenset(visitor.untracked), frozenset(visitor.deleted),
                    frozenset(visitor.advanced), frozenset(visitor.iterated))


def _is_iter_call(node: cst.BaseExpression) -> bool:
    """``iter(x)``, or its converted form ``rt__.converted_call(iter, (x,), None)``."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "converted_call" and node.args:
        func = node.args[0].value
    return isinstance(func, cst.Name) and func.value == "iter"


def iterator_names(nodes: Sequence[cst.CSTNode]) -> frozenset[str]:
    """Names the code binds to ``iter(...)`` (``it = iter(dataset)``), nested scopes excluded."""
    return frozenset(t.target.value for node in nodes
                     for n in walk(node, lambda n: not isinstance(n, (cst.FunctionDef, cst.Lambda)))
                     if isinstance(n, cst.Assign) and _is_iter_call(n.value)
                     for t in n.targets if isinstance(t.target, cst.Name))


def declared_names(body: Iterable[cst.CSTNode]) -> tuple[frozenset[str], frozenset[str]]:
    """(globals, nonlocals) declared by ``global``/``nonlocal`` in a function body (not nested scopes)."""
    declarations = [n for stmt in body for n in walk(stmt, lambda n: not isinstance(n, SCOPES))
                    if isinstance(n, (cst.Global, cst.Nonlocal))]
    return tuple(frozenset(name.name.value for d in declarations if isinstance(d, kind) for name in d.names)
                 for kind in (cst.Global, cst.Nonlocal))


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


class ActivityProvider(AnalysisProvider[Activity]):
    """Activity of each ``If`` (both branches), ``While``/``For`` (body, target) and ``FunctionDef`` (body)."""

    def visit_If(self, node: cst.If) -> None:
        self.set_metadata(node, activity_of(block_of(node)))

    def visit_While(self, node: cst.While) -> None:
        self.set_metadata(node, activity_of(list(node.body.body)))

    def visit_For(self, node: cst.For) -> None:
        a = activity_of(list(node.body.body))
        t = _ActivityVisitor()
        t.bind(node.target)
        self.set_metadata(node, Activity(a.read | t.read, a.modified | t.modified, a.appended_lists,
                                         a.composites | frozenset(t.composites), a.untracked | frozenset(t.untracked),
                                         a.deleted, a.advanced, a.iterated))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.set_metadata(node, activity_of(list(node.body.body)))
