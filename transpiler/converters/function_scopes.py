"""@decorators def f(...) -> def f(...): the converted function is the undecorated one (its
decorators, e.g. rt.function, already wrap the original)."""
from __future__ import annotations

from transpiler.converters.base import Converter


class FunctionScopeTransformer(Converter):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.depth = 0

    def visit_FunctionDef(self, node):
        self.depth += 1

    def leave_FunctionDef(self, original_node, updated_node):
        self.depth -= 1
        if self.depth == 0:
            return updated_node.with_changes(decorators=[])
        return updated_node
