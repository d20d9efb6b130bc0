"""Shared machinery of the ``break``/``continue``/``return`` converters: replace a
jump statement by an assignment to a flag, and guard the statements that follow
it with ``if not <flag>:``."""
from __future__ import annotations

from typing import Callable, Sequence

import libcst as cst

from transpiler.converters.base import body_of, expr, marker_of, mark_all, stmt, with_marker
from transpiler.cst_walk import SCOPES, walk

_LOOPS = (cst.While, cst.For)


def contains(node: cst.CSTNode, kind: type, into_loops: bool) -> bool:
    """Whether ``node`` holds a ``kind`` statement that belongs to it (not to a nested scope or loop)."""
    stop = SCOPES if into_loops else SCOPES + _LOOPS
    if isinstance(node, SCOPES):
        node = node.body
    return any(isinstance(n, kind) for n in walk(node, lambda n: not isinstance(n, stop)))


def is_generator(fn: cst.FunctionDef) -> bool:
    return contains(fn, (cst.Yield,), into_loops=True)


class Jump:
    """One rewrite: which statement kind, what replaces it, how to guard the rest."""

    def __init__(self, kind: type, flag: str, replace: Callable[[cst.CSTNode], list[cst.BaseStatement]],
                 into_loops: bool, on_loop: Callable[[cst.CSTNode], cst.CSTNode] | None = None,
                 guard_else: Sequence[cst.BaseStatement] = ()):
        self.kind, self.flag, self.replace = kind, flag, replace
        self.into_loops, self.on_loop = into_loops, on_loop
        self.guard_else = list(guard_else)      # the else part of each ``if not <flag>:`` guard

    def has(self, node: cst.CSTNode) -> bool:
        return contains(node, self.kind, self.into_loops)

    def block(self, stmts: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        stmts = list(stmts)
        for i, s in enumerate(stmts):
            if not self.has(s):
                out.append(s)
                continue
            out.extend(self.statement(s))
            rest = stmts[i + 1:]
            if rest:
                guarded = stmt("if not {flag}:\n    pass\n", flag=cst.Name(self.flag))
                guarded = guarded.with_changes(body=cst.IndentedBlock(body=self.block(rest)))
                if self.guard_else:
                    marker = marker_of(rest[0])
                    guarded = guarded.with_changes(orelse=cst.Else(body=cst.IndentedBlock(
                        body=mark_all(self.guard_else, marker))))
                out.append(with_marker(guarded, marker_of(rest[0])))
            return out
        return out

    def suite(self, suite):
        if suite is None:
            return None
        if isinstance(suite, cst.If):
            return self.statement(suite)[0]
        new_body = self.block(body_of(suite))
        if isinstance(suite, (cst.Else, cst.Finally)):
            return suite.with_changes(body=indented(suite.body, new_body))
        return indented(suite, new_body)

    def statement(self, s: cst.BaseStatement) -> list[cst.BaseStatement]:
        if isinstance(s, cst.SimpleStatementLine):
            kept = []
            for small in s.body:
                if isinstance(small, self.kind):
                    head = [s.with_changes(body=kept)] if kept else []
                    return head + mark_all(self.replace(small), marker_of(s))
                kept.append(small)
            return [s]
        if isinstance(s, cst.If):
            return [s.with_changes(body=self.suite(s.body), orelse=self.suite(s.orelse))]
        if isinstance(s, (cst.With,)):
            return [s.with_changes(body=self.suite(s.body))]
        if isinstance(s, cst.Try):
            return [s.with_changes(
                body=self.suite(s.body),
                handlers=[h.with_changes(body=self.suite(h.body)) for h in s.handlers],
                orelse=self.suite(s.orelse),
                finalbody=self.suite(s.finalbody))]
        if isinstance(s, _LOOPS) and self.into_loops:
            s = s.with_changes(body=self.suite(s.body), orelse=self.suite(s.orelse))
            return [self.on_loop(s) if self.on_loop else s]
        return [s]


def indented(old, new_body):
    """``old`` (an ``IndentedBlock`` or a one-line suite) holding ``new_body``."""
    if isinstance(old, cst.IndentedBlock):
        return old.with_changes(body=new_body)
    return cst.IndentedBlock(body=new_body)


def add_loop_test(loop: cst.CSTNode, test: cst.BaseExpression) -> cst.CSTNode:
    """``while c`` -> ``while <test> and c``; a ``for`` gets ``rt__.loop_while(<test>)`` as first body statement
    (the control-flow converter turns it into the loop's extra test)."""
    if isinstance(loop, cst.While):
        return loop.with_changes(test=expr("{t} and {c}", t=test, c=_paren(loop.test)))
    directive = stmt("rt__.loop_while({t})\n", t=test)
    directive = with_marker(directive, marker_of(loop))
    return loop.with_changes(body=loop.body.with_changes(body=[directive] + list(loop.body.body)))


def _paren(e: cst.BaseExpression) -> cst.BaseExpression:
    if not isinstance(e, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) or e.lpar:
        return e
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
