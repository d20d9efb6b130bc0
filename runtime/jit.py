"""``rt.function(jit_compile=True)``: the runtime's side of compiling traced graphs at run time.

The runtime owns this registry; the compiler lives with the code generator
(``transpiler/jit.py``, a higher layer) and registers itself here when imported.
The first ``jit_compile=True`` trace imports it: the one dynamic import below,
because the runtime must not import the code generator at module top.

A compiler is ``compile(concrete) -> ConcreteFunction``: it returns a concrete
function whose calls run native code, or ``concrete`` itself when it cannot
compile (no C compiler: it warns once and the generic executor runs the graph).
"""
from __future__ import annotations

import importlib
from typing import Callable

JIT_MODULE = "transpiler.jit"

_compiler: Callable | None = None


def register_compiler(compile_fn: Callable) -> None:
    """Called by the JIT module on import: ``compile_fn(concrete) -> ConcreteFunction``."""
    global _compiler
    _compiler = compile_fn


def compile_concrete(concrete):
    """The native version of a freshly traced concrete function (or ``concrete`` when none can be made)."""
    if _compiler is None:
        importlib.import_module(JIT_MODULE)   # registers the compiler (documented in the module docstring)
    return _compiler(concrete)
