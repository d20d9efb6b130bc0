"""y -> rt__.ld(y) for every read of a name that may hold ``rt__.Undefined`` (reading it raises a clear error)."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import ExpressionContext, ExpressionContextProvider

from transpiler.converters.base import Converter, expr
from transpiler.naming import is_generated


def _undefined_inits(fn: cst.FunctionDef) -> set[str]:
    names = set()
    for s in fn.body.body:
        if (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)
                and isinstance(s.body[0].value, cst.Call)):
            f = s.body[0].value.func
            if isinstance(f, cst.Attribute) and f.attr.value == "Undefined" and isinstance(f.value, cst.Name) \
                    and f.value.value == "rt__":
                t = s.body[0].targets[0].target
                if isinstance(t, cst.Name):
                    names.add(t.value)
    return names


class VariableTransformer(Converter):
    METADATA_DEPENDENCIES = (ExpressionContextProvider,)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.stack: list[set[str]] = [set()]

    def visit_FunctionDef(self, node):
        name = node.name.value
        if name.startswith(("rt__get_state", "rt__set_state")):
            self.stack.append(set())      # state functions must see Undefined values as they are
        elif is_generated(name):
            self.stack.append(set(self.stack[-1]))
        else:
            self.stack.append(_undefined_inits(node))

    def leave_FunctionDef(self, original_node, updated_node):
        self.stack.pop()
        return updated_node

    def visit_Lambda(self, node):
        self.stack.append(set(self.stack[-1]) - {p.name.value for p in node.params.params})

    def leave_Lambda(self, original_node, updated_node):
        self.stack.pop()
        return updated_node

    def visit_Nonlocal(self, node):
        return False

    def visit_Global(self, node):
        return False

    def visit_Attribute(self, node):
        return True

    def leave_Name(self, original_node, updated_node):
        if original_node.value not in self.stack[-1] or is_generated(original_node.value):
            return updated_node
        try:
            ctx = self.get_metadata(ExpressionContextProvider, original_node)
        except KeyError:
            return updated_node
        if ctx is not ExpressionContext.LOAD:
            return updated_node
        return expr("rt__.ld({n})", n=updated_node)
