"""a and b -> rt__.and_(lambda: a, lambda: b); a or b -> rt__.or_(...); not a -> rt__.not_(a)."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, expr
from transpiler.cst_walk import walk


def _unsafe_in_lambda(node: cst.CSTNode) -> bool:
    """Walrus, yield and await change meaning inside a lambda: leave such expressions alone."""
    return any(isinstance(n, (cst.NamedExpr, cst.Yield, cst.Await)) for n in walk(node))


def _operands(node: cst.BooleanOperation, op_type) -> list[cst.BaseExpression]:
    out = []
    for side in (node.left, node.right):
        if isinstance(side, cst.BooleanOperation) and isinstance(side.operator, op_type) and not side.lpar:
            out.extend(_operands(side, op_type))
        else:
            out.append(side)
    return out


def _lambda(e: cst.BaseExpression) -> cst.Lambda:
    return expr("lambda: {e}", e=e.with_changes(lpar=[], rpar=[]) if len(getattr(e, "lpar", ())) == 1 else e)


class LogicalTransformer(Converter):
    TRIGGERS = (cst.BooleanOperation, cst.Not)

    def leave_BooleanOperation(self, original_node, updated_node):
        if _unsafe_in_lambda(updated_node):
            return updated_node
        op_type = type(updated_node.operator)
        fn = "rt__.and_" if isinstance(updated_node.operator, cst.And) else "rt__.or_"
        args = []
        for orig, new in ((original_node.left, updated_node.left), (original_node.right, updated_node.right)):
            if (isinstance(orig, cst.BooleanOperation) and isinstance(orig.operator, op_type) and not orig.lpar
                    and isinstance(new, cst.Call)):
                args.extend(new.args)       # a and b and c -> one call with three operands
            else:
                args.append(cst.Arg(_lambda(new)))
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
        call = cst.Call(func=cst.parse_expression(fn), args=args)
        return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar) if updated_node.lpar else call

    def leave_UnaryOperation(self, original_node, updated_node):
        if not isinstance(updated_node.operator, cst.Not):
            return updated_node
        operand = updated_node.expression
        if len(getattr(operand, "lpar", ())) == 1:
            operand = operand.with_changes(lpar=[], rpar=[])
        return expr("rt__.not_({e})", e=operand).with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
