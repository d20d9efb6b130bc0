"""``rt.Module``: a base class for objects that hold variables and ``rt.function`` methods."""
from __future__ import annotations

from typing import Callable

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
        return gather_variables(vars(self).values())

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)


def gather_variables(values, keep: Callable = lambda v: True, held_by: Callable = lambda m: None) -> tuple:
    """The variables in ``values`` and in the lists, tuples, dicts and Modules among them, in order, once each.

    ``keep(variable)`` filters them; ``held_by(module)`` may give what a nested Module contributes instead of
    its attributes (a Keras layer's ``trainable_variables``: none when it is frozen).
    """
    found: dict[int, Variable] = {}

    def walk(value):
        if isinstance(value, Variable):
            if keep(value):
                found.setdefault(id(value), value)
        elif isinstance(value, Module):
            held = held_by(value)
            for item in vars(value).values() if held is None else held:
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
    for item in values:
        walk(item)
    return tuple(found.values())
