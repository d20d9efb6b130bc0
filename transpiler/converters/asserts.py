"""assert c, msg -> rt__.assert_stmt(c, lambda: msg)."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, expr
from transpiler.converters.logical_expressions import _lambda


class AssertTransformer(Converter):
    TRIGGERS = (cst.Assert,)

    def leave_Assert(self, original_node, updated_node):
        msg = updated_node.msg if updated_node.msg is not None else cst.Name("None")
        call = expr("rt__.assert_stmt({c}, {m})", c=updated_node.test, m=_lambda(msg))
        return cst.Expr(call)
