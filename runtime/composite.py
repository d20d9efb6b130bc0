"""Composite arguments: values made of several tensors that a Function takes as one argument.

A ``CompositeValue`` (an ``rt.data.Dataset``, a dataset iterator) describes itself with a ``TypeSpec``
(TensorFlow's ``CompositeTensor``/``TypeSpec`` split): the spec's ``key`` goes into the Function's
cache key, its ``component_specs`` become the graph's placeholders, and ``from_components`` rebuilds
the value inside the trace from those placeholders. The value's ``components()`` are what a call
feeds (in-memory tensors, Python objects as ``variant`` tensors), so one traced graph serves every
value with the same spec.

Example:
    >>> spec = TypeSpec(("example",), [])
    >>> composite_key(spec) == ("composite", ("example",))
    True
"""
from __future__ import annotations

import hashlib
import os
import weakref

import numpy as np

from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor


class TypeSpec:
    """What a composite argument is, without its tensors: ``key``, ``component_specs``, ``from_components``.

    A spec pickles without its Python objects (a built module keeps only what the cache key needs);
    such a "frozen" spec cannot rebuild a value.
    """

    def __init__(self, key, component_specs: list[TensorSpec], rebuild=None, text: str | None = None):
        self.key = key
        self.component_specs = list(component_specs)
        self._rebuild = rebuild
        self._text = text

    def from_components(self, components: list):
        """The composite value over ``components`` (placeholders while tracing)."""
        if self._rebuild is None:
            raise TypeError(f"{self!r} was loaded from a build and cannot be traced again")
        return self._rebuild(components)

    def __eq__(self, other) -> bool:
        return isinstance(other, TypeSpec) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return self._text or f"TypeSpec({self.key!r})"

    def __reduce__(self):
        return (TypeSpec, (self.key, self.component_specs, None, self._text))


class CompositeValue:
    """Base of values a Function takes as one argument made of several tensors (see the module docstring)."""

    __slots__ = ()

    @property
    def _type_spec(self) -> TypeSpec:
        raise NotImplementedError

    def _components(self) -> list:
        """The tensors a call feeds, in the order of ``_type_spec.component_specs``."""
        raise NotImplementedError


def is_composite(value) -> bool:
    return isinstance(value, (CompositeValue, TypeSpec))


def spec_of(value) -> TypeSpec:
    return value if isinstance(value, TypeSpec) else value._type_spec


def composite_key(value) -> tuple:
    """The cache-key part of a composite value or spec."""
    return ("composite", spec_of(value).key)


# ---------------------------------------------------------------------------
# Keys for Python objects inside a spec (functions a pipeline applies, their closures).

_PROCESS = os.urandom(8).hex()


class IdentityKey:
    """An object in a key, by identity (weakly held when possible); pickles to a key nothing matches."""

    __slots__ = ("ident", "ref", "__weakref__")

    def __init__(self, obj):
        self.ident = id(obj)
        try:
            self.ref = weakref.ref(obj)
        except TypeError:
            self.ref = lambda obj=obj: obj

    def __eq__(self, other) -> bool:
        return isinstance(other, IdentityKey) and self.ident == other.ident and self.ref() is not None \
            and self.ref() is other.ref()

    def __hash__(self) -> int:
        return self.ident

    def __reduce__(self):
        return (_Unmatched, (_PROCESS, self.ident))


class _Unmatched:
    """What an identity key becomes in another process: equal to nothing but itself."""

    __slots__ = ("origin",)

    def __init__(self, *origin):
        self.origin = origin

    def __eq__(self, other) -> bool:
        return self is other

    def __hash__(self) -> int:
        return hash(self.origin)


def value_key(value):
    """A stable key for a value a traced function bakes in: primitives and small arrays by content."""
    if isinstance(value, (int, float, bool, str, bytes, type(None), complex)):
        return (type(value).__name__, value)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(value_key(v) for v in value))
    array = value._value if isinstance(value, EagerTensor) else value
    if isinstance(array, np.ndarray) and array.dtype != object:
        return ("array", array.dtype.str, array.shape, hashlib.sha256(array.tobytes()).hexdigest())
    return ("id", IdentityKey(value))


def function_key(fn) -> tuple:
    """A key for a Python function that is the same in every process for the same code and closure.

    Code by content (bytecode, constants, names), closure cells and defaults by ``value_key``;
    an ``rt.Function`` by its Python function.
    """
    fn = getattr(fn, "python_function", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ("callable", value_key(fn))
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(value_key(cell.cell_contents))
        except ValueError:          # an empty cell
            cells.append(("empty",))
    defaults = tuple(value_key(v) for v in fn.__defaults__ or ())
    return ("fn", getattr(fn, "__module__", None), fn.__qualname__, _code_key(code), tuple(cells), defaults)


def _code_key(code) -> str:
    digest = hashlib.sha256()

    def add(c):
        digest.update(c.co_code)
        digest.update(repr(c.co_names).encode())
        digest.update(repr(c.co_varnames).encode())
        for const in c.co_consts:
            if hasattr(const, "co_code"):
                add(const)
            else:
                digest.update(repr(const).encode())
    add(code)
    return digest.hexdigest()
