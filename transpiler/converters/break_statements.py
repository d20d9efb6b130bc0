"""break -> rt__break = True (the loop test gets ``not rt__break``; what follows is guarded);
for/while ... else -> the else part runs after the loop under ``if not rt__break:``."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, body_of, marker_of, mark_all, stmt, with_marker
from transpiler.converters.jumps import Jump, add_loop_test, contains


class BreakTransformer(Converter):
    TRIGGERS = (cst.Break, cst.Else)      # a loop's else part moves after the loop

    def _leave_loop(self, original, loop):
        has_break = any(contains(s, cst.Break, into_loops=False) for s in body_of(loop.body))
        else_body = body_of(loop.orelse)
        loop = loop.with_changes(orelse=None)
        if not has_break:
            if not else_body:
                return loop
            return cst.FlattenSentinel([loop] + else_body)
        flag = self.ctx.namer.new("break")
        jump = Jump(cst.Break, flag, lambda _: [stmt("{f} = True\n", f=cst.Name(flag))], into_loops=False)
        loop = loop.with_changes(body=loop.body.with_changes(body=jump.block(body_of(loop.body))))
        loop = add_loop_test(loop, cst.parse_expression(f"not {flag}"))
        marker = marker_of(original)
        out = [with_marker(stmt("{f} = False\n", f=cst.Name(flag)), marker), loop]
        if else_body:
            guarded = stmt("if not {f}:\n    pass\n", f=cst.Name(flag)).with_changes(
                body=cst.IndentedBlock(body=else_body))
            out.append(with_marker(guarded, marker_of(else_body[0])))
        return cst.FlattenSentinel(mark_all(out, marker))

    def leave_While(self, original_node, updated_node):
        return self._leave_loop(original_node, updated_node)

    def leave_For(self, original_node, updated_node):
        return self._leave_loop(original_node, updated_node)
