"""Objects a checkpoint follows by attribute, and restorations that wait for a variable to be created.

A ``Trackable`` (``rt.Module``, every Keras layer and model, optimizers, metrics, ``rt.train.Checkpoint``) is
saved through its attributes: the path to a variable is the attribute names (list positions, dict keys) that
lead to it from the checkpoint's root, ``model/dense1/kernel`` or ``optimizer/m_0``. A restore assigns each
saved value to the variable at its path. A variable that does not exist yet -- a layer's weights before its
first call, an optimizer's slots before its first step -- gets its value when it is assigned to the attribute
its path names (``Trackable.__setattr__``): TensorFlow's deferred restoration.

Attributes whose names start with ``_rt_`` are bookkeeping that checkpoints do not follow.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from runtime.variables import Variable

_MISSING = object()


class Trackable:
    """Base of objects whose attributes a checkpoint follows (``tf.train``'s AutoTrackable)."""

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        waiting = self.__dict__.get("_rt_waiting")
        if waiting and name in waiting and value is not None:
            for restoration in waiting.pop(name):
                restoration.place(value)

    def _checkpoint_children(self) -> Iterator[tuple[str, object]]:
        """(name, value) of what a checkpoint follows from this object: its attributes, sorted by name."""
        attributes = vars(self)
        for name in sorted(attributes):
            if not name.startswith("_rt_"):
                yield name, attributes[name]

    def _checkpoint_child(self, name: str):
        """The value at ``name`` (``_MISSING`` when there is none yet): a restore's next step from this object."""
        if name.startswith("_rt_"):
            return _MISSING
        value = self.__dict__.get(name, _MISSING)
        return _MISSING if value is None else value

    def _wait_for(self, name: str, restoration) -> None:
        """Hold ``restoration`` until a value is assigned to attribute ``name`` of this object."""
        waiting = self.__dict__.get("_rt_waiting")
        if waiting is None:
            waiting = {}
            object.__setattr__(self, "_rt_waiting", waiting)
        queue = waiting.setdefault(name, [])
        queue[:] = [r for r in queue if r.steps != restoration.steps]      # the latest restore of a path wins
        queue.append(restoration)


def children(value) -> Iterator[tuple[str, object]]:
    """What a checkpoint follows from ``value``: a Trackable's attributes, list items, dict values (str keys)."""
    if isinstance(value, Trackable):
        yield from value._checkpoint_children()
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield str(i), item
    elif isinstance(value, dict):
        for key in sorted(k for k in value if isinstance(k, str)):
            yield key, value[key]


def child(value, name: str):
    """The next step of a path from ``value`` (``_MISSING`` when it does not exist)."""
    if isinstance(value, Trackable):
        return value._checkpoint_child(name)
    if isinstance(value, (list, tuple)):
        try:
            return value[int(name)]
        except (ValueError, IndexError):
            return _MISSING
    if isinstance(value, dict):
        found = value.get(name, _MISSING)
        return _MISSING if found is None else found
    return _MISSING


def is_followed(value) -> bool:
    return isinstance(value, (Trackable, Variable, list, tuple, dict))


class Restoration:
    """One saved value on its way to the variable at ``steps`` (a path from the root of a restore)."""

    def __init__(self, path: str, steps: tuple, array: np.ndarray, dtype, status):
        self.path, self.steps, self.array, self.dtype, self.status = path, tuple(steps), array, dtype, status
        self.remaining = self.steps

    def place(self, value) -> None:
        """Follow the rest of the path from ``value`` (the object at the steps done so far)."""
        steps = self.remaining[1:] if value is not self.status.root else self.remaining
        while steps:
            found = child(value, steps[0])
            if found is _MISSING:
                if isinstance(value, Trackable):
                    self.remaining = steps
                    value._wait_for(steps[0], self)
                    self.status.waiting(self)
                else:
                    self.status.unresolved(self)
                return
            value, steps = found, steps[1:]
        self.remaining = ()
        self.assign(value)

    def assign(self, variable) -> None:
        self.check(variable)
        with variable.lock:
            variable._value = np.array(self.array, dtype=variable.dtype.np, copy=True)
        self.status.restored(self, variable)

    def check(self, variable) -> None:
        """A clear error when the saved value cannot go to ``variable`` (not a variable, other dtype or shape)."""
        if not isinstance(variable, Variable):
            raise ValueError(f"checkpoint {self.status.source}: {self.path!r} holds a variable's value, but the object "
                             f"at that path is a {type(variable).__name__}")
        if variable.dtype.name != self.dtype:
            raise ValueError(f"checkpoint {self.status.source}: the variable {self.path!r} is {self.dtype} in the "
                             f"checkpoint but {variable.dtype.name} here")
        if tuple(variable.shape.dims) != self.array.shape:
            raise ValueError(f"checkpoint {self.status.source}: the variable {self.path!r} has shape "
                             f"{tuple(self.array.shape)} in the checkpoint but {tuple(variable.shape.dims)} here")


def walk_variables(root, follow=is_followed) -> dict[int, tuple[tuple, Variable]]:
    """id(variable) -> (steps, variable) for every variable reachable from ``root``: breadth first, children in
    name order, so each variable gets its shortest path (the first in name order among equals)."""
    found: dict[int, tuple[tuple, Variable]] = {}
    seen: set[int] = set()
    level = [((), root)]
    while level:
        following = []
        for steps, value in level:
            if isinstance(value, Variable):
                found.setdefault(id(value), (steps, value))
                continue
            if id(value) in seen:
                continue
            seen.add(id(value))
            for name, item in children(value):
                if follow(item):
                    following.append((steps + (name,), item))
        level = following
    return found
