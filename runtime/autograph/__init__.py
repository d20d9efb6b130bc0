"""``rt.autograph``: convert Python functions into graph-building code.

``convert(fn)`` is what ``rt.function`` traces (when ``autograph=True``); ``to_code(fn)``
shows the converted code; ``annotate_error(exc)`` makes an error raised while
tracing converted code name the user's file and line.

Example:
    >>> import runtime as rt
    >>> def f(x):
    ...     while x > 1:
    ...         x = x // 2
    ...     return x
    >>> "rt__.while_stmt" in rt.autograph.to_code(f)  # doctest: +SKIP
    True
"""
from __future__ import annotations

import inspect
import os
import sys
import types
import weakref
from types import SimpleNamespace

from runtime.errors import ConversionError, SourceUnavailableError

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

# The factory function that converted code is wrapped in (see transpiler.conversion): its name
# marks converted code objects. Defined here so the runtime never needs the converter for it.
FACTORY = "rt__inner_factory"

# Conversions embedded in built extension modules: (filename, first line) -> factory module code.
_prebuilt: dict = {}


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
    proto = namespace["rt__outer_factory"]()
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


def register_prebuilt(entries: dict) -> None:
    """Conversions made at build time: {(filename, first_line, freevars): (marshalled code, readable code)}."""
    _prebuilt.update(entries)


def _from_prebuilt(fn):
    code = fn.__code__
    hit = _prebuilt.get((code.co_filename, code.co_firstlineno, code.co_freevars))
    if hit is None:
        return None
    import marshal
    return instantiate(marshal.loads(hit[0]), fn, _operators())


def _operators():
    import runtime.operators
    return runtime.operators


def convert(fn):
    """The converted version of ``fn``: same signature, the original globals (so ``global`` writes and
    late-bound reads behave as in ``fn``) and closure cells. Returns ``fn`` itself when it cannot be
    converted (builtins, no source, lambdas, library code). Generator functions raise ``TypeError``."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__rt_converted__", False):
        return fn
    try:
        return _cache[fn]
    except KeyError:
        pass
    new = _from_prebuilt(fn)
    if new is not None:
        _cache[fn] = new
        return new
    from transpiler.conversion import convert_function
    from runtime.operators.call_trees import is_library_code
    code = fn.__code__
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise NotImplementedError(f"generators are not supported in rt.function: {fn.__qualname__} "
                        f"({code.co_filename}, line {code.co_firstlineno}) uses yield; return a tensor or a list")
    if is_library_code(fn) or is_converted_code(code):     # nested in converted code: converted with it
        return fn
    try:
        new = convert_function(fn, _operators())
    except SourceUnavailableError:
        new = fn                 # nothing to convert (e.g. made by exec): it runs as plain Python
    except Exception as e:
        # Never run a function unconverted because the converter failed: its tensor control flow would
        # silently take one path.
        raise ConversionError(f"rt.autograph could not convert {fn.__qualname__} ({code.co_filename}, line "
                              f"{code.co_firstlineno}): {type(e).__name__}: {e}") from e
    if os.environ.get("RT_DEBUG") and new is not fn:
        print(f"# rt.autograph: converted {fn.__qualname__}\n{to_code(fn)}", file=sys.stderr)
    _cache[fn] = new
    return new


def to_code(fn) -> str:
    """The converted source of ``fn`` (the same string as ``transpiler.to_code(fn)``)."""
    target = inspect.unwrap(getattr(fn, "python_function", fn))
    code = getattr(target, "__code__", None)
    if code is not None and (code.co_filename, code.co_firstlineno, code.co_freevars) in _prebuilt:
        return _prebuilt[(code.co_filename, code.co_firstlineno, code.co_freevars)][1]
    from transpiler.conversion import to_code as _to_code
    return _to_code(fn)


def annotate_error(exc: BaseException) -> BaseException:
    """Add to ``exc`` a note with the user's file and line where converted code raised it; returns ``exc``."""
    from transpiler.conversion import rewrite_traceback
    return rewrite_traceback(exc)


def set_loop_options(shape_invariants=None, parallel_iterations=None, swap_memory=None,
                     maximum_iterations=None):
    """Options of the enclosing tensor loop (read by the converter; a no-op when run as plain Python)."""
    return None


experimental = SimpleNamespace(set_loop_options=set_loop_options)


def _location_hook(frame):
    """Op locations: converted-code frames already carry the user's file and line; name the user's function."""
    code = frame.f_code
    if not is_converted_code(code):
        return None
    from runtime.graph import Location
    return Location(code.co_filename, frame.f_lineno, user_function_name(code))


try:
    from runtime.graph import set_location_hook as _set_hook
    _set_hook(_location_hook)
except ImportError:  # pragma: no cover - older core
    pass

__all__ = ["convert", "to_code", "annotate_error", "experimental", "set_loop_options"]
