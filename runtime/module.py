"""``rt.Module``: a base class for objects that hold variables and ``rt.function`` methods."""
from __future__ import annotations

from runtime.variables import Variable


class Module:
    """Holds ``rt.Variable``s as attributes; methods may be ``rt.function``s (traced per instance)."""

    def __init__(self, name: str | None = None):
        self._name = name or type(self).__name__

    @property
    def name(self) -> str:
        return getattr(self, "_name", type(self).__name__)

    @property
    def variables(self) -> tuple:
        found, seen = [], set()

        def walk(value):
            if isinstance(value, Variable):
                if id(value) not in seen:
                    seen.add(id(value))
                    found.append(value)
            elif isinstance(value, Module):
                for item in vars(value).values():
                    walk(item)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    walk(item)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
        for item in vars(self).values():
            walk(item)
        return tuple(found)

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)
