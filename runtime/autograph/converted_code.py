"""Converted code at run time: how to recognise it, name the user's function, and build it from its factory.

The converter (``transpiler.conversion``) wraps each converted function in a factory named ``FACTORY``;
that name in a code object's qualified name marks converted code. This module needs no converter (no
libcst): built extension modules embed their conversions and use only this.

Example:
    >>> code = compile("def rt__inner_factory():\\n    def f():\\n        pass\\n    return f", "<x>", "exec")
    >>> namespace = {}
    >>> exec(code, namespace)
    >>> f = namespace["rt__inner_factory"]()
    >>> is_converted_code(f.__code__), user_function_name(f.__code__)
    (True, 'f')
"""
from __future__ import annotations

import linecache
import types

# The factory function that converted code is wrapped in (see transpiler.conversion): its name
# marks converted code objects. The outer factory, run once, gives it the closure cells of the user's function.
FACTORY = "rt__inner_factory"
OUTER_FACTORY = "rt__outer_factory"


def is_converted_code(code: types.CodeType) -> bool:
    return f"{FACTORY}.<locals>." in code.co_qualname


def user_function_name(code: types.CodeType) -> str:
    """``rt__inner_factory.<locals>.f.<locals>.rt__if_body`` -> ``f``."""
    rest = code.co_qualname.split(f"{FACTORY}.<locals>.", 1)[-1]
    parts = [p for p in rest.split(".<locals>.") if not p.startswith("rt__")]
    return parts[-1] if parts else code.co_name


def instantiate(module_code: types.CodeType, fn: types.FunctionType, operators_module):
    """The converted function from its compiled factory module: ``fn``'s globals, closure cells and metadata."""
    namespace: dict = {}
    exec(module_code, namespace)
    proto = namespace[OUTER_FACTORY]()
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    inner_code = proto.__code__
    closure = tuple(cells[name] if name in cells else types.CellType(None) for name in inner_code.co_freevars)
    factory = types.FunctionType(inner_code, fn.__globals__, FACTORY, None, closure or None)
    new_fn = factory(operators_module)
    new_fn.__defaults__ = fn.__defaults__
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    new_fn.__name__ = fn.__name__
    new_fn.__qualname__ = fn.__qualname__
    new_fn.__doc__ = fn.__doc__
    new_fn.__module__ = fn.__module__
    new_fn.__dict__.update(fn.__dict__)
    new_fn.__rt_converted__ = True
    new_fn.__rt_original__ = fn
    return new_fn


# ---------------------------------------------------------------------------
# Errors that point at the user's code

def user_frame(tb) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost converted-code frame in a traceback."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_converted_code(code):
            found = (code.co_filename, tb.tb_lineno, user_function_name(code))
        tb = tb.tb_next
    return found


def rewrite_traceback(exc: BaseException) -> BaseException:
    """Add a note naming the user's file and line where ``exc`` was raised in converted code."""
    if getattr(exc, "__rt_annotated__", False):
        return exc
    where = user_frame(exc.__traceback__)
    if where is None:
        return exc
    filename, line, name = where
    text = linecache.getline(filename, line).strip()
    note = f'  File "{filename}", line {line}, in {name}' + (f"\n    {text}" if text else "")
    try:
        exc.__rt_annotated__ = True
        exc.add_note("In the user's code (converted by rt.function):\n" + note)
    except (AttributeError, TypeError):
        pass
    return exc
