"""f(a, *b, k=c) -> rt__.converted_call(f, (a, *b), {'k': c}): user functions are converted on the fly."""
from __future__ import annotations

import libcst as cst

from transpiler.converters.base import Converter

# Builtins that look at their caller's frame: calling them through converted_call would change their meaning.
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


def _is_runtime_call(func: cst.BaseExpression) -> bool:
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value == "rt__"


class CallTreeTransformer(Converter):
    TRIGGERS = (cst.Call,)

    def leave_Call(self, original_node, updated_node):
        func = updated_node.func
        if _is_runtime_call(func) or (isinstance(func, cst.Name) and func.value in _FRAME_BUILTINS) or \
                (isinstance(func, cst.Attribute) and func.attr.value == "set_loop_options"):
            return updated_node
        positional, keywords = [], []
        for a in updated_node.args:
            if isinstance(a.value, cst.GeneratorExp) and not a.value.lpar:    # f(x for x in y): parenthesize
                a = a.with_changes(value=a.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
            if a.keyword is not None:
                keywords.append(cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value))
            elif a.star == "**":
                keywords.append(cst.StarredDictElement(a.value))
            elif a.star == "*":
                positional.append(cst.StarredElement(a.value))
            else:
                positional.append(cst.Element(a.value))
        args = cst.Tuple(positional) if positional else cst.Tuple([])
        if len(positional) == 1 and not isinstance(positional[0], cst.StarredElement):
            args = cst.Tuple([positional[0].with_changes(comma=cst.Comma())])
        kwargs = cst.Dict(keywords) if keywords else cst.Name("None")
        call = cst.Call(func=cst.parse_expression("rt__.converted_call"),
                        args=[cst.Arg(func), cst.Arg(args), cst.Arg(kwargs)])
        return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
