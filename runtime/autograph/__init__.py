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
    >>> "rt__.while_stmt" in rt.autograph.to_code(f)
    True
"""
from __future__ import annotations

import inspect
import marshal
import os
import sys
import types
import weakref
from types import SimpleNamespace

from runtime import operators
from runtime.autograph.converted_code import instantiate, is_converted_code, rewrite_traceback, user_function_name
from runtime.errors import ConversionError, SourceUnavailableError
from runtime.graph import Location, set_location_hook
from runtime.operators import call_trees
from transpiler.lazy import lazy_import

# The converter, loaded by the first conversion (libcst is heavy: ``import runtime`` does not need it, and
# a built module, which embeds its conversions, never does).
conversion = lazy_import("transpiler.conversion")

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

# Conversions embedded in built extension modules: (filename, first line) -> factory module code.
_prebuilt: dict = {}


def register_prebuilt(entries: dict) -> None:
    """Conversions made at build time: {(filename, first_line, freevars): (marshalled code, readable code)}."""
    _prebuilt.update(entries)


def _from_prebuilt(fn):
    code = fn.__code__
    hit = _prebuilt.get((code.co_filename, code.co_firstlineno, code.co_freevars))
    if hit is None:
        return None
    return instantiate(marshal.loads(hit[0]), fn, operators)


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
    code = fn.__code__
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise NotImplementedError(f"generators are not supported in rt.function: {fn.__qualname__} "
                        f"({code.co_filename}, line {code.co_firstlineno}) uses yield; return a tensor or a list")
    if call_trees.is_library_code(fn) or is_converted_code(code):     # nested in converted code: converted with it
        return fn
    try:
        new = conversion.convert_function(fn, operators)
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
    return conversion.to_code(fn)


def annotate_error(exc: BaseException) -> BaseException:
    """Add to ``exc`` a note with the user's file and line where converted code raised it; returns ``exc``."""
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
    return Location(code.co_filename, frame.f_lineno, user_function_name(code))


# The lower layers call back into this one: the graph for op locations, converted code to convert callees.
set_location_hook(_location_hook)
call_trees.set_converter(convert)

__all__ = ["convert", "to_code", "annotate_error", "experimental", "set_loop_options"]
