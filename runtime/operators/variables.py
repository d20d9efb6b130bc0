"""Undefined values: what a state variable holds before any code assigned it.

``rt__.Undefined('y')`` marks a name that a conditional or loop may leave unset;
``rt__.ld(y)`` (emitted for reads of such names) raises a clear error when it is.
Items and attributes in the state of a conditional or loop are read with
``rt__.ldu(lambda: d['b'], "d['b']")`` (undefined when missing) and written back with
``rt__.store_item(d, 'b', value)`` / ``rt__.store_attr(obj, 'x', value)``.
"""
from __future__ import annotations


class Undefined:
    """The value of variable ``symbol_name`` before it is assigned."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        self.symbol_name = symbol_name

    def __repr__(self):
        return f"<undefined {self.symbol_name!r}>"

    def __getattribute__(self, name):
        if name in ("symbol_name", "__class__", "__repr__", "__slots__", "__reduce_ex__", "__reduce__"):
            return object.__getattribute__(self, name)
        raise UnboundLocalError(f"local variable '{object.__getattribute__(self, 'symbol_name')}' "
                                "is used before it is assigned")

    def __bool__(self):
        raise UnboundLocalError(f"local variable '{self.symbol_name}' is used before it is assigned")


class UndefinedReturnValue:
    """The return value of a function before a ``return`` statement ran."""

    def __repr__(self):
        return "<no return value>"


def ld(value):
    """Load a variable: raise ``UnboundLocalError`` naming it if it holds ``Undefined``."""
    if isinstance(value, Undefined):
        raise UnboundLocalError(f"local variable '{value.symbol_name}' is used before it is assigned "
                                "(it is assigned only on some paths of the code before this line)")
    return value


def ldu(load, name: str):
    """``load()``, or ``Undefined(name)`` when the item or attribute it reads does not exist (yet)."""
    try:
        return load()
    except (KeyError, IndexError, AttributeError, NameError):
        return Undefined(name)


def store_item(obj, key, value) -> None:
    """``obj[key] = value``; an undefined value deletes the item (it did not exist before the statement)."""
    if isinstance(value, Undefined):
        try:
            del obj[key]
        except (KeyError, IndexError):
            pass
        return
    obj[key] = value


def store_attr(obj, name: str, value) -> None:
    """``setattr(obj, name, value)``; an undefined value deletes the attribute."""
    if isinstance(value, Undefined):
        try:
            delattr(obj, name)
        except AttributeError:
            pass
        return
    setattr(obj, name, value)


class Untracked:
    """The state slot of an item assigned with a key that cannot be tracked (``d[k + 1] = ...``)."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        self.symbol_name = symbol_name

    def __repr__(self):
        return f"<untracked {self.symbol_name!r}>"


def is_undefined(value) -> bool:
    return isinstance(value, (Undefined, UndefinedReturnValue))
