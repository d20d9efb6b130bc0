"""a < b < c -> rt__.compare_chain(a, '<', lambda: b, '<', lambda: c); x in t -> rt__.in_(x, t).

A chain compares each operand once, left to right, and stops at the first false comparison, as
Python does; a symbolic comparison stages the rest in a graph conditional (like ``and``).
``in``/``not in`` on a symbolic tensor is an elementwise test reduced with ``any``.
"""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter, expr
from transpiler.converters.logical_expressions import _lambda, _unsafe_in_lambda

_OPERATORS = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
              cst.Equal: "==", cst.NotEqual: "!=", cst.In: "in", cst.NotIn: "not in", cst.Is: "is",
              cst.IsNot: "is not"}


class ComparisonTransformer(Converter):
    TRIGGERS = (cst.Comparison,)

    def leave_Comparison(self, original_node, updated_node):
        if _unsafe_in_lambda(updated_node):
            return updated_node
        targets = updated_node.comparisons
        if len(targets) == 1:
            op = targets[0].operator
            if not isinstance(op, (cst.In, cst.NotIn)):
                return updated_node
            fn = "rt__.in_" if isinstance(op, cst.In) else "rt__.not_in"
            call = expr(f"{fn}({{a}}, {{b}})", a=updated_node.left, b=targets[0].comparator)
            return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        args = [cst.Arg(updated_node.left)]
        for target in targets:
            args.append(cst.Arg(cst.SimpleString(repr(_OPERATORS[type(target.operator)]))))
            args.append(cst.Arg(_lambda(target.comparator)))
        call = cst.Call(func=cst.parse_expression("rt__.compare_chain"), args=args)
        return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
