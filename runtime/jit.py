"""``rt.function(jit_compile=True)``: the runtime's side of compiling traced graphs at run time.

The runtime owns this registry; the compiler lives with the code generator (``transpiler/jit.py``,
a higher layer). ``runtime/__init__``, the public API at the top of the layers, registers it when
``runtime`` is imported, declared with ``lazy_import``: it loads on the first ``jit_compile=True`` trace.

A compiler has ``compile_concrete(concrete) -> ConcreteFunction``: it returns a concrete function whose
calls run native code, or ``concrete`` itself when it cannot compile (no C compiler: it warns once and
the generic executor runs the graph).
"""
from __future__ import annotations

_compiler = None


def register_compiler(compiler) -> None:
    """Make ``compiler.compile_concrete(concrete)`` compile the traces of ``jit_compile=True`` Functions."""
    global _compiler
    _compiler = compiler


def compile_concrete(concrete):
    """The native version of a freshly traced concrete function (or ``concrete`` when none can be made)."""
    if _compiler is None:
        raise RuntimeError("rt.function(jit_compile=True): no JIT compiler is registered (importing runtime "
                           "registers transpiler.jit)")
    return _compiler.compile_concrete(concrete)
