"""a if c else b -> rt__.if_exp(c, lambda: a, lambda: b, 'c')."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, expr
from transpiler.converters.logical_expressions import _lambda, _unsafe_in_lambda


class ConditionalExpressionTransformer(Converter):
    TRIGGERS = (cst.IfExp,)

    def leave_IfExp(self, original_node, updated_node):
        if _unsafe_in_lambda(updated_node):
            return updated_node
        source = cst.Module([]).code_for_node(original_node.test.with_changes(lpar=[], rpar=[]))
        call = expr("rt__.if_exp({c}, {a}, {b}, {s})", c=updated_node.test, a=_lambda(updated_node.body),
                    b=_lambda(updated_node.orelse), s=cst.SimpleString(repr(source)))
        return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
