"""Definedness: the names certainly bound on entry to each ``If``/``While``/``For``.

A forward analysis: a name is defined after a statement that binds it, after an
``if`` whose branches both bind it, but not after a loop body (it may run zero
times). ``DefinednessProvider`` attaches a ``frozenset`` of names to each
``If``/``While``/``For`` and ``FunctionDef`` (its parameters).
"""
from __future__ import annotations

from typing import Sequence

import libcst as cst

from transpiler.analysis.activity import _ActivityVisitor, activity_of, param_names
from transpiler.analysis.provider import AnalysisProvider

ALL = None          # "every name": the state after return/raise/break/continue (unreachable)


def _meet(a, b):
    if a is ALL:
        return b
    if b is ALL:
        return a
    return a & b


class _Analyzer:
    def __init__(self) -> None:
        self.results: dict[cst.CSTNode, frozenset[str]] = {}

    def block(self, stmts: Sequence[cst.CSTNode], d):
        for s in stmts:
            if d is ALL:
                d = frozenset()     # unreachable code: analyze it with nothing defined
            d = self.stmt(s, d)
        return d

    def suite(self, suite, d):
        if suite is None:
            return d
        if isinstance(suite, cst.If):
            return self.stmt(suite, d)
        return self.block(suite.body.body, d)

    def stmt(self, node: cst.CSTNode, d):
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, (cst.Return, cst.Raise, cst.Break, cst.Continue)):
                    return ALL
                if isinstance(small, cst.Del):
                    d = d - activity_of(small).modified
                else:
                    d = d | activity_of(small).modified
            return d
        if isinstance(node, cst.If):
            self.results[node] = d
            return _meet(self.block(node.body.body, d), self.suite(node.orelse, d))
        if isinstance(node, (cst.While, cst.For)):
            self.results[node] = d
            body_d = d
            if isinstance(node, cst.For):
                t = _ActivityVisitor()
                t.bind(node.target)
                body_d = d | t.modified
            self.block(node.body.body, body_d)
            if node.orelse is not None:
                self.suite(node.orelse, d)
            return d
        if isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            # Normal exit: through the body (and else) or through one of the handlers (which may start
            # anywhere in the body, so from ``d``); the finally block runs after either.
            out = self.suite(node.orelse, self.block(node.body.body, d))
            for h in node.handlers:
                handler_d = d | activity_of(h.name.name).modified if h.name is not None else d
                out = _meet(out, self.block(h.body.body, handler_d))
            if node.finalbody is not None:
                out = self.suite(node.finalbody, d if out is ALL else out)
            return out
        if isinstance(node, cst.With):
            a = _ActivityVisitor()
            for item in node.items:
                item.visit(a)
            return self.block(node.body.body, d | a.modified)
        return d | activity_of(node).modified


def analyze_function(node: cst.FunctionDef) -> dict[cst.CSTNode, frozenset[str]]:
    analyzer = _Analyzer()
    params = frozenset(param_names(node.params))
    analyzer.results[node] = params
    analyzer.block(node.body.body, params)
    return analyzer.results


class DefinednessProvider(AnalysisProvider[frozenset]):
    """Names certainly defined on entry to each ``If``/``While``/``For`` (and a function's parameters)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for stmt, value in analyze_function(node).items():
            self.set_metadata(stmt, value)
