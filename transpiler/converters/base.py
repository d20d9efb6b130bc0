"""What every converter shares: the conversion context, the transformer base class,
and small helpers for source-line markers and generated statements."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import libcst as cst
from libcst.helpers import parse_template_expression, parse_template_statement

from transpiler.naming import Namer

MARKER_RE = re.compile(r"\s*#\s*rt__L(\d+)$")
_MARKER_ANY = re.compile(r"rt__L(\d+)")


@dataclass
class Context:
    """State shared by the converters of one function: the namer and the options."""

    namer: Namer
    options: dict = field(default_factory=dict)
    undefined_inits: bool = False      # control flow initialized some name with rt__.Undefined


class Converter(cst.CSTTransformer):
    """A libcst transformer with a conversion ``Context``; ``transform`` runs it with its metadata.

    ``TRIGGERS``: the node types it rewrites. A libcst pass costs a visit and a rebuild of every node of the
    function whether it changes anything or not, so the pipeline runs a converter only where ``needed`` says
    the function has something for it (an empty ``TRIGGERS``: always)."""

    TRIGGERS: ClassVar[tuple[type[cst.CSTNode], ...]] = ()

    def __init__(self, ctx: Context):
        super().__init__()
        self.ctx = ctx

    @classmethod
    def needed(cls, present: frozenset[type]) -> bool:
        """Whether a function whose nodes have the types ``present`` (``cst_walk.node_types``) has work for it."""
        return not cls.TRIGGERS or any(t in present for t in cls.TRIGGERS)

    @classmethod
    def transform(cls, module: cst.Module, ctx: Context) -> cst.Module:
        if cls.METADATA_DEPENDENCIES:
            return cst.MetadataWrapper(module, unsafe_skip_copy=True).visit(cls(ctx))
        return module.visit(cls(ctx))


def one_pass(*converters: type[Converter]) -> type[Converter]:
    """``converters`` run as one libcst pass (a pass costs a visit and a rebuild of the whole function). Only for
    converters that rewrite disjoint node types on the way up (``leave_*``, no metadata) and never produce a node
    another of them rewrites: each node is then rewritten after its children, as when they run one after the
    other."""
    methods = [{m for m in vars(c) if m.startswith(("visit_", "leave_"))} for c in converters]
    if any(m.startswith("visit_") for ms in methods for m in ms) or any(c.METADATA_DEPENDENCIES for c in converters) \
            or sum(len(ms) for ms in methods) != len(set().union(*methods)):
        raise TypeError(f"{[c.__name__ for c in converters]} cannot share a pass")

    def needed(cls, present: frozenset[type]) -> bool:
        return any(c.needed(present) for c in converters)

    return type("+".join(c.__name__ for c in converters), converters, {"needed": classmethod(needed)})


# -- source-line markers -----------------------------------------------------
# Every statement of the user's code carries a trailing comment ``# rt__L<line>``
# (added before conversion, removed after). Converters copy the marker of a
# statement they replace onto the statements they generate, so the final code
# maps back to the user's lines.

def marker_of(node: cst.CSTNode) -> str | None:
    """The ``# rt__L<n>`` marker of a statement (simple or compound), if any."""
    comment = None
    if isinstance(node, cst.SimpleStatementLine):
        comment = node.trailing_whitespace.comment
    elif isinstance(node, cst.BaseCompoundStatement) and isinstance(getattr(node, "body", None), cst.IndentedBlock):
        comment = node.body.header.comment
    if comment is None:
        return None
    m = _MARKER_ANY.search(comment.value)
    return f"# rt__L{m.group(1)}" if m else None


def with_marker(stmt: cst.CSTNode, marker: str | None) -> cst.CSTNode:
    """``stmt`` carrying ``marker`` (replacing any comment it had)."""
    if marker is None:
        return stmt
    comment = cst.Comment(marker)
    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt.with_changes(trailing_whitespace=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=comment))
    if isinstance(stmt, cst.BaseCompoundStatement) and isinstance(getattr(stmt, "body", None), cst.IndentedBlock):
        return stmt.with_changes(body=stmt.body.with_changes(header=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=comment)))
    return stmt


def mark_all(stmts: Sequence[cst.CSTNode], marker: str | None) -> list[cst.CSTNode]:
    """Give ``marker`` to every statement that has none (recursively into generated blocks)."""
    out = []
    for s in stmts:
        if marker_of(s) is None:
            s = with_marker(s, marker)
        out.append(s)
    return out


# -- statement helpers ---------------------------------------------------------

def stmt(template: str, **kw) -> cst.BaseStatement:
    return parse_template_statement(template, **kw)


def expr(template: str, **kw) -> cst.BaseExpression:
    return parse_template_expression(template, **kw)


def block(stmts: Sequence[cst.BaseStatement]) -> cst.IndentedBlock:
    stmts = list(stmts) or [cst.SimpleStatementLine([cst.Pass()])]
    return cst.IndentedBlock(body=stmts)


def body_of(suite) -> list[cst.BaseStatement]:
    """The statements of an ``IndentedBlock``/``Else``/``Finally`` (or a one-line ``SimpleStatementSuite``)."""
    if suite is None:
        return []
    if isinstance(suite, (cst.Else, cst.Finally)):
        suite = suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(suite.body))]
    return list(suite.body)


def names_tuple(names: Sequence[str]) -> cst.BaseExpression:
    """``(a, b)`` / ``(a,)`` / ``()`` of Name nodes."""
    if not names:
        return cst.Tuple([])
    return cst.Tuple([cst.Element(cst.Name(n)) for n in names])


def strings_tuple(names: Sequence[str]) -> cst.BaseExpression:
    if not names:
        return cst.Tuple([])
    return cst.Tuple([cst.Element(cst.SimpleString(repr(n))) for n in names])


def is_docstring(s: cst.CSTNode) -> bool:
    return (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
