"""Liveness: the names whose current value may still be read later.

A backward analysis over the structured statements of each function (no CFG
is needed for structured code): ``live_in(stmt) = uses(stmt) | (live_out(stmt) - defs(stmt))``,
with fixed points for loops and ``break``/``continue`` jumping to the loop's exit/head.
``LivenessProvider`` attaches ``Liveness(live_in, live_out)`` to every ``If``, ``While``
and ``For``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import libcst as cst

from transpiler.analysis.activity import _ActivityVisitor, activity_of
from transpiler.analysis.provider import AnalysisProvider


@dataclass(frozen=True)
class Liveness:
    live_in: frozenset[str]
    live_out: frozenset[str]


class _Loop:
    def __init__(self, break_live: frozenset[str], continue_live: frozenset[str]):
        self.break_live, self.continue_live = break_live, continue_live


class _Analyzer:
    def __init__(self) -> None:
        self.results: dict[cst.CSTNode, Liveness] = {}

    def block(self, stmts: Sequence[cst.CSTNode], live: frozenset[str], loop: _Loop | None) -> frozenset[str]:
        for stmt in reversed(list(stmts)):
            live = self.stmt(stmt, live, loop)
        return live

    def suite(self, suite, live, loop):
        if suite is None:
            return live
        if isinstance(suite, cst.If):
            return self.stmt(suite, live, loop)
        return self.block(suite.body.body if isinstance(suite, (cst.Else, cst.Finally)) else suite.body, live, loop)

    def small(self, node: cst.CSTNode, live: frozenset[str], loop: _Loop | None) -> frozenset[str]:
        if isinstance(node, cst.Return):
            return activity_of(node.value).read if node.value is not None else frozenset()
        if isinstance(node, cst.Raise):
            return activity_of(node).read
        if isinstance(node, cst.Break):
            return loop.break_live if loop else live
        if isinstance(node, cst.Continue):
            return loop.continue_live if loop else live
        a = activity_of(node)
        return (live - a.modified) | a.read

    def stmt(self, node: cst.CSTNode, live: frozenset[str], loop: _Loop | None) -> frozenset[str]:
        if isinstance(node, cst.SimpleStatementLine):
            for small in reversed(node.body):
                live = self.small(small, live, loop)
            return live
        if isinstance(node, cst.If):
            out = live
            live_in = activity_of(node.test).read | self.block(node.body.body, out, loop) | self.suite(node.orelse, out, loop)
            self.results[node] = Liveness(frozenset(live_in), frozenset(out))
            return frozenset(live_in)
        if isinstance(node, cst.While):
            out = live
            exit_live = self.suite(node.orelse, out, loop)
            test = activity_of(node.test).read
            head = test | exit_live
            for _ in range(10):
                body_in = self.block(node.body.body, head, _Loop(out, head))
                new_head = test | exit_live | body_in
                if new_head == head:
                    break
                head = new_head
            self.results[node] = Liveness(frozenset(head), frozenset(out))
            return frozenset(head)
        if isinstance(node, cst.For):
            out = live
            exit_live = self.suite(node.orelse, out, loop)
            target = _ActivityVisitor()
            target.bind(node.target)
            head = exit_live
            for _ in range(10):
                body_in = self.block(node.body.body, head, _Loop(out, head))
                new_head = exit_live | ((body_in - target.modified) | target.read)
                if new_head == head:
                    break
                head = new_head
            live_in = frozenset(activity_of(node.iter).read | head)
            self.results[node] = Liveness(live_in, frozenset(out))
            return live_in
        if isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            fin = self.suite(node.finalbody, live, loop) if node.finalbody else live
            body_out = self.suite(node.orelse, fin, loop) if node.orelse else fin
            live_in = self.block(node.body.body, body_out, loop)
            for h in node.handlers:
                live_in |= self.block(h.body.body, fin, loop)
            return frozenset(live_in | activity_of(node).read)
        if isinstance(node, cst.With):
            body_in = self.block(node.body.body, live, loop)
            a = _ActivityVisitor()
            for item in node.items:
                item.visit(a)
            return frozenset((body_in - a.modified) | a.read)
        a = activity_of(node)       # def, class, match, ...
        return frozenset((live - a.modified) | a.read)


def analyze_function(body: Sequence[cst.CSTNode]) -> dict[cst.CSTNode, Liveness]:
    analyzer = _Analyzer()
    analyzer.block(body, frozenset(), None)
    return analyzer.results


class LivenessProvider(AnalysisProvider[Liveness]):
    """``Liveness(live_in, live_out)`` of every ``If``/``While``/``For`` inside a function."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for stmt, value in analyze_function(node.body.body).items():
            self.set_metadata(stmt, value)
