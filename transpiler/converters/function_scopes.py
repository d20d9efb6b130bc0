"""@decorators def f(...) -> def f(...): the converted function is the undecorated one (its
decorators, e.g. rt.function, already wrap the original)."""
from __future__ import annotations

from transpiler.converters.base import Converter


class FunctionScopeTransformer(Converter):
    def visit_FunctionDef(self, node):
        return False        # the module's one function: what it nests keeps its decorators

    def leave_FunctionDef(self, original_node, updated_node):
        return updated_node.with_changes(decorators=[])
