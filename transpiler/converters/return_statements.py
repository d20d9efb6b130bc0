"""return x -> rt__retval = x; rt__do_return = True (what follows is guarded); the function ends with
``return rt__.retval(rt__retval, rt__do_return)``. Only functions that return from inside an if/while/for
are rewritten.

The guard of the code after a returning statement is ``if not rt__do_return: ... else: rt__do_return = True``:
the else part restates what the guard's test says, so that when every path returns, the flag stays the
Python value True even where the test was a tensor, and ``rt__.retval`` knows the value is defined."""
from __future__ import annotations

from typing import Sequence

import libcst as cst

from transpiler.converters.base import Converter, body_of, is_docstring, marker_of, mark_all, stmt, with_marker
from transpiler.converters.jumps import Jump, add_loop_test, contains, indented, is_generator
from transpiler.cst_walk import SCOPES, walk

_CONTROL_FLOW = (cst.If, cst.While, cst.For)


def returns_inside_control_flow(fn: cst.FunctionDef) -> bool:
    """Whether an if/while/for of ``fn`` (not of a nested scope) holds a ``return`` of ``fn``."""
    outermost = walk(fn.body, lambda n: not isinstance(n, SCOPES + _CONTROL_FLOW))
    return any(isinstance(n, _CONTROL_FLOW) and contains(n, cst.Return, into_loops=True) for n in outermost)


def _always_returns(stmts: Sequence[cst.BaseStatement]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Return) for s in last.body)
    if isinstance(last, cst.If):
        return _always_returns(body_of(last.body)) and last.orelse is not None and _always_returns(_orelse(last))
    return False


def _orelse(node: cst.If) -> list[cst.BaseStatement]:
    if node.orelse is None:
        return []
    if isinstance(node.orelse, cst.If):
        return [node.orelse]
    return body_of(node.orelse)


def _set_block(node, stmts):
    """``node`` with a new body (the old block's header keeps its source-line marker)."""
    if isinstance(node.body, cst.IndentedBlock):
        return node.with_changes(body=node.body.with_changes(body=list(stmts)))
    return node.with_changes(body=cst.IndentedBlock(body=list(stmts)))


def conditional_returns(stmts: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``if c: return a`` followed by more code -> the code moves into the ``else``, so both branches return."""
    out: list[cst.BaseStatement] = []
    stmts = list(stmts)
    for i, s in enumerate(stmts):
        s = _rewrite_inner(s)
        rest = stmts[i + 1:]
        if isinstance(s, cst.If) and rest:
            if _always_returns(body_of(s.body)):
                new_else = conditional_returns(_orelse(s) + rest)
                out.append(s.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=new_else))))
                return out
            if s.orelse is not None and _always_returns(_orelse(s)):
                out.append(_set_block(s, conditional_returns(body_of(s.body) + rest)))
                return out
        out.append(s)
    return out


def _rewrite_inner(s):
    if isinstance(s, cst.If):
        orelse = s.orelse
        if isinstance(orelse, cst.If):
            orelse = _rewrite_inner(orelse)
        elif isinstance(orelse, cst.Else):
            orelse = _set_block(orelse, conditional_returns(body_of(orelse)))
        return _set_block(s, conditional_returns(body_of(s.body))).with_changes(orelse=orelse)
    if isinstance(s, (cst.While, cst.For, cst.With)):
        return _set_block(s, conditional_returns(body_of(s.body)))
    if isinstance(s, cst.Try):
        # a `finally` runs after the `try` returned: its own `if c: return a` + `return b` must become
        # if/else, not a guard on the flag the `try` already set (Python returns b, not the try's value)
        return _set_block(s, conditional_returns(body_of(s.body))).with_changes(
            handlers=[_set_block(h, conditional_returns(body_of(h.body))) for h in s.handlers],
            orelse=s.orelse and _set_block(s.orelse, conditional_returns(body_of(s.orelse))),
            finalbody=s.finalbody and _set_block(s.finalbody, conditional_returns(body_of(s.finalbody))))
    return s


class _ReturnsInFinally(cst.CSTTransformer):
    """A ``finally`` that returns runs even when its ``try`` has returned, and its own returns win: it
    starts with the flag cleared (the pending return saved) and restores the pending return at its end
    unless it returned itself. (Nested functions keep their own flags.)"""

    def __init__(self, do_return: str, namer):
        super().__init__()
        self.do_return, self.namer = do_return, namer

    def visit_FunctionDef(self, node):
        return False

    def visit_ClassDef(self, node):
        return False

    def visit_Lambda(self, node):
        return False

    def leave_Try(self, original_node, updated_node):
        final = updated_node.finalbody
        if final is None or not contains(final, cst.Return, into_loops=True):
            return updated_node
        pending, flag = cst.Name(self.namer.new("pending_return")), cst.Name(self.do_return)
        stmts = body_of(final)
        head = mark_all([stmt("{p} = {d}\n", p=pending, d=flag), stmt("{d} = False\n", d=flag)], marker_of(stmts[0]))
        tail = mark_all([stmt("{d} = {d} or {p}\n", d=flag, p=pending)], marker_of(stmts[-1]))
        return updated_node.with_changes(finalbody=final.with_changes(body=indented(final.body, head + stmts + tail)))


class ReturnTransformer(Converter):
    TRIGGERS = (cst.Return,)

    @classmethod
    def needed(cls, present):
        """Only a function with a ``return`` and an if/while/for can return from inside control flow."""
        return cst.Return in present and any(t in present for t in (cst.If, cst.While, cst.For))

    def leave_FunctionDef(self, original_node, updated_node):
        fn = updated_node
        if is_generator(fn) or not returns_inside_control_flow(fn):
            return fn
        do_return = self.ctx.namer.new("do_return")
        retval = self.ctx.namer.new("retval")

        def replace(ret: cst.Return):
            # The value first: if computing it raises (and a handler catches it), the function has not
            # returned, and the code after the handler must still run.
            value = ret.value if ret.value is not None else cst.Name("None")
            return [stmt("{r} = {v}\n", r=cst.Name(retval), v=value),
                    stmt("{d} = True\n", d=cst.Name(do_return))]

        jump = Jump(cst.Return, do_return, replace, into_loops=True,
                    on_loop=lambda loop: add_loop_test(loop, cst.parse_expression(f"not {do_return}")),
                    guard_else=[stmt("{d} = True\n", d=cst.Name(do_return))])
        body = body_of(fn.body)
        doc = [body.pop(0)] if body and is_docstring(body[0]) else []
        body = [s.visit(_ReturnsInFinally(do_return, self.ctx.namer)) for s in conditional_returns(body)]
        body = jump.block(body)
        marker = marker_of(fn)
        init = mark_all([stmt("{d} = False\n", d=cst.Name(do_return)),
                         stmt("{r} = rt__.UndefinedReturnValue()\n", r=cst.Name(retval))], marker)
        final = with_marker(stmt("return rt__.retval({r}, {d})\n", r=cst.Name(retval), d=cst.Name(do_return)),
                            marker)
        return fn.with_changes(body=fn.body.with_changes(body=doc + init + body + [final]))
