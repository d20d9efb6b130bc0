"""``rt.Module``: a base class for objects that hold variables and ``rt.function`` methods.

``variables``, ``trainable_variables`` and ``submodules`` walk the module as ``tf.Module`` does: its
attributes sorted by name (values inside lists, tuples and dicts too, dicts by sorted key), every
variable or module once; the module's own attributes first, then each submodule found, recursively.
So two modules built alike list their variables alike, whatever order ``__init__`` assigned them in.

Example:
    >>> import runtime as rt
    >>> class Pair(rt.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = rt.Variable(1.0, name="w")
    ...         self.b = rt.Variable(0.0, name="b", trainable=False)
    >>> [v.name for v in Pair().variables], [v.name for v in Pair().trainable_variables]
    (['b', 'w'], ['w'])
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from runtime.train.tracking import Trackable
from runtime.variables import Variable


class Module(Trackable):
    """Holds ``rt.Variable``s as attributes; methods may be ``rt.function``s (traced per instance).

    Checkpoints follow its attributes (``rt.train.Checkpoint(model=module)``).
    """

    def __init__(self, name: str | None = None):
        self._name = name or _snake_case(type(self).__name__)

    @property
    def name(self) -> str:
        return getattr(self, "_name", _snake_case(type(self).__name__))

    @property
    def variables(self) -> tuple:
        """Every variable of this module and of its submodules (see the module docstring for the order)."""
        return tuple(walk(self, lambda v: isinstance(v, Variable)))

    @property
    def trainable_variables(self) -> tuple:
        return tuple(walk(self, lambda v: isinstance(v, Variable) and v.trainable))

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(walk(self, lambda v: isinstance(v, Variable) and not v.trainable))

    @property
    def submodules(self) -> tuple:
        """Every module inside this one (attributes, their lists and dicts, recursively), each once."""
        return tuple(walk(self, lambda v: isinstance(v, Module)))

    def _tracked_values(self) -> Iterator:
        """The values a walk looks into, in order: the attributes sorted by name."""
        attributes = vars(self)
        for key in sorted(attributes):
            yield attributes[key]


def _snake_case(name: str) -> str:
    """``tf.Module``'s default name: the class name in snake case (``MyDense`` -> ``my_dense``)."""
    return re.sub(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))", r"_\1", name).lower()


def _leaves(value) -> Iterator:
    """``value`` flattened as ``tf.nest`` flattens: lists and tuples in order, dicts by sorted key."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        for key in keys:
            yield from _leaves(value[key])
    else:
        yield value


def walk(module: Module, predicate: Callable) -> Iterator:
    """The values of ``module`` that ``predicate`` accepts, in ``tf.Module``'s order, each once.

    A module's own values come first, then those of each submodule it holds (in the order found), recursively.
    A module decides what it exposes with ``_tracked_values`` (a Keras layer: its weights in creation order,
    then its layers).
    """
    seen = {id(module)}
    return _walk(module, predicate, seen)


def _walk(module, predicate, seen: set) -> Iterator:
    submodules = []
    for value in module._tracked_values():
        for leaf in _leaves(value):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if isinstance(leaf, Module):
                submodules.append(leaf)
    for submodule in submodules:
        yield from _walk(submodule, predicate, seen)
