"""continue -> rt__continue = True, with the rest of the loop body guarded by ``if not rt__continue:``."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, body_of, marker_of, stmt, with_marker
from transpiler.converters.jumps import Jump, contains


class ContinueTransformer(Converter):
    TRIGGERS = (cst.Continue,)

    def _leave_loop(self, original, loop):
        body = body_of(loop.body)
        if not any(contains(s, cst.Continue, into_loops=False) for s in body):
            return loop
        flag = self.ctx.namer.new("continue")
        jump = Jump(cst.Continue, flag, lambda _: [stmt("{f} = True\n", f=cst.Name(flag))], into_loops=False)
        reset = with_marker(stmt("{f} = False\n", f=cst.Name(flag)), marker_of(original))
        return loop.with_changes(body=loop.body.with_changes(body=[reset] + jump.block(body)))

    def leave_While(self, original_node, updated_node):
        return self._leave_loop(original_node, updated_node)

    def leave_For(self, original_node, updated_node):
        return self._leave_loop(original_node, updated_node)
