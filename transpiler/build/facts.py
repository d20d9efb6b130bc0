"""What the build learns about a source file without importing it: its ``rt.function`` applications (and
``tf.function`` ones and Keras ``compile`` calls, for ``--tf-compat``) and its imports (``transpiler.build.scanning`` finds them; ``transpiler.build.discovery`` caches them)."""
from __future__ import annotations

import dataclasses

# The names ``rt.function`` resolves to, whichever way it is imported.
FUNCTION_QUALNAMES = frozenset({
    "runtime.function", "runtime.Function",
    "runtime.polymorphic_function.function", "runtime.polymorphic_function.Function",
})
# What ``tf.function`` resolves to in a program written against TensorFlow: under ``--tf-compat``, rt.function.
TF_FUNCTION_QUALNAMES = frozenset({"tensorflow.function"})


@dataclasses.dataclass(frozen=True)
class FoundFunction:
    """One ``rt.function`` application: the function's name and the line of the decorator or call."""
    name: str
    line: int


@dataclasses.dataclass(frozen=True)
class Import:
    """A statically visible import: ``module`` (dotted, may be empty for ``from . import x``),
    ``names`` imported from it (empty for ``import a.b``) and the relative ``level``."""
    module: str
    names: tuple[str, ...] = ()
    level: int = 0


@dataclasses.dataclass(frozen=True)
class FileFacts:
    """What the build needs to know about one source file: its ``rt.function`` applications, its
    ``tf.function`` ones (which count under ``--tf-compat``), its Keras ``model.compile(optimizer=..., loss=...)``
    calls and its imports."""
    functions: tuple[FoundFunction, ...]
    imports: tuple[Import, ...]
    tf_functions: tuple[FoundFunction, ...] = ()
    compiles: tuple[FoundFunction, ...] = ()

    def to_json(self) -> dict:
        return {"functions": [[f.name, f.line] for f in self.functions],
                "tf_functions": [[f.name, f.line] for f in self.tf_functions],
                "compiles": [[f.name, f.line] for f in self.compiles],
                "imports": [[i.module, list(i.names), i.level] for i in self.imports]}

    @classmethod
    def from_json(cls, data: dict) -> FileFacts:
        return cls(tuple(FoundFunction(n, line) for n, line in data["functions"]),
                   tuple(Import(m, tuple(names), level) for m, names, level in data["imports"]),
                   tuple(FoundFunction(n, line) for n, line in data.get("tf_functions", ())),
                   tuple(FoundFunction(n, line) for n, line in data.get("compiles", ())))
