"""``f(*args, **kwargs)`` from converted code: rt.function objects are called (inlined by the core),
user functions are converted (once, cached) and called, everything else is called as is."""
from __future__ import annotations

import inspect
import os
import sys
import sysconfig
import types
import weakref

from runtime.autograph.converted_code import is_converted_code
from runtime.operators.control_flow import outer_list_name, where
from runtime.operators.py_builtins import OVERRIDES

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRANSPILER_DIR = os.path.join(os.path.dirname(_RUNTIME_DIR), "transpiler")
_LIBRARY_DIRS = tuple(p for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
                      if p) + (_RUNTIME_DIR + os.sep, _TRANSPILER_DIR + os.sep, sys.prefix + os.sep + "lib")

_converted: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

# The converter (runtime.autograph.convert): autograph imports the operators, so it registers itself here.
_convert = None


def set_converter(convert) -> None:
    """Called by ``runtime.autograph`` on import: ``convert(fn)`` converts a function that converted code calls."""
    global _convert
    _convert = convert
_LIST_METHODS = {"append", "extend", "insert"}


def is_library_code(fn) -> bool:
    """Functions of runtime, transpiler, the standard library and installed packages are not converted."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    filename = os.path.abspath(code.co_filename)
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("runtime", "transpiler", "numpy", "libcst"):
        return True
    if "site-packages" in filename or "dist-packages" in filename:
        return True
    return filename.startswith(_LIBRARY_DIRS) or code.co_filename.startswith("<")


def _should_convert(fn) -> bool:
    """User functions not converted yet; a function defined inside converted code was converted with it."""
    return (isinstance(fn, types.FunctionType) and not getattr(fn, "__rt_converted__", False)
            and not is_converted_code(fn.__code__) and not inspect.isgeneratorfunction(fn)
            and not is_library_code(fn))


def converted(fn):
    """The converted version of a plain function (cached); ``fn`` itself when it has no source.

    A function the converter fails on raises ``rt.errors.ConversionError`` (running it unconverted
    would silently take one path of its tensor control flow).
    """
    try:
        return _converted[fn]
    except KeyError:
        pass
    new = _convert(fn)
    _converted[fn] = new
    return new


def converted_call(f, args, kwargs):
    kwargs = kwargs or {}
    if type(f).__name__ in ("Function", "ConcreteFunction") and type(f).__module__.startswith("runtime"):
        return f(*args, **kwargs)
    try:
        override = OVERRIDES.get(f)
    except TypeError:        # unhashable callable
        override = None
    if override is not None:
        return override(*args, **kwargs)
    if isinstance(f, types.BuiltinMethodType) and isinstance(getattr(f, "__self__", None), list) \
            and f.__name__ in _LIST_METHODS:
        name = outer_list_name(f.__self__)
        if name is not None:
            raise TypeError(
                f"the Python list '{name}' is modified with .{f.__name__}() inside a tensor loop; the loop body "
                f"is traced only once, so the list would not grow per iteration. Use rt.TensorArray instead "
                f"(e.g. {name} = rt.TensorArray(rt.float32, size=0, dynamic_size=True) before the loop and "
                f"{name} = {name}.write(i, value) in it){where()}")
        return f(*args, **kwargs)
    if isinstance(f, types.FunctionType):
        if _should_convert(f):
            return converted(f)(*args, **kwargs)
        return f(*args, **kwargs)
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        if _should_convert(f.__func__):
            return converted(f.__func__)(f.__self__, *args, **kwargs)
        return f(*args, **kwargs)
    if not isinstance(f, type) and not isinstance(f, types.BuiltinFunctionType):
        call = getattr(type(f), "__call__", None)
        if isinstance(call, types.FunctionType) and _should_convert(call) and not type(f).__module__.startswith("runtime"):
            return converted(call)(f, *args, **kwargs)
    return f(*args, **kwargs)
