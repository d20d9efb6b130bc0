"""The public API surface as a markdown table: ``python -m runtime.api_table [--no-tf]``.

One row per public name of ``rt`` and of its TensorFlow namespaces (``rt.math``, ``rt.nn``, ``rt.linalg`` ...):
the name, TensorFlow's name (``tf.X``; checked against an installed TensorFlow unless ``--no-tf``: ``-`` where
TensorFlow has no such name), and how built native code runs it. That column is derived, not maintained: the op
types a function can create are read from its code (the op-type strings it names, and the functions, closures
and modules of ``runtime`` it calls, transitively; a composite op's expansion in its place), and each is native
when the lowering has a native form for it (``transpiler.lowering.native_op_types``):

- ``native``: every op it creates runs as generated C (for the dtypes C has: bool, integers, float32, float64;
  float16, complex and string tensors go through Python);
- ``callback: Op, ...``: these ops (which it may create: an ``Assert`` only when a size is known at run time
  only, say) run their numpy kernel through a Python callback (the build report lists them);
- ``-``: it creates no op (configuration, classes of the Python layer, dtypes).

Ops only complex tensors reach (``Real``, ``Imag``, ``Conj``, ``ComplexAbs``) are noted apart, for a function whose
own code has a branch for complex tensors: ``rt.abs`` is ``native (complex: callback)``. ``PartitionedCall`` is a Function called eagerly under a tape, ``NativeCall`` a
built function's native code called under a tape; in built code a Function calling another traces it inline. The classes of the tracing layer (``rt.Function``, ``rt.Graph`` ...) show
``-``: what runs is the code traced with them.
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
import types

import runtime as rt
from runtime.ops.registry import all_opdefs
from transpiler.lowering import native_op_types

# The namespaces TensorFlow has (tf.math ...); rt's other attributes are its own modules.
NAMESPACES = ("autograph", "config", "data", "debugging", "dtypes", "errors", "keras", "linalg", "math", "nn",
              "random", "test")
ALWAYS_NATIVE = {"Placeholder", "Const", "PartitionedCall", "NativeCall"}
COMPLEX_ONLY = {"Real", "Imag", "Conj", "ComplexAbs"}
TRACING = ("runtime.graph", "runtime.polymorphic_function", "runtime.module", "runtime.shapes", "runtime.tensor")


def _runtime_object(value) -> bool:
    module = getattr(value, "__module__", None) or ""
    return module == "runtime" or module.startswith("runtime.")


def op_types(value, seen: set | None = None) -> set[str]:
    """The op types ``value`` (a function, class or method) can create, read from its code (see the module
    docstring)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return set()
    seen.add(id(value))
    registered = all_opdefs()
    found: set[str] = set()
    if isinstance(value, type):
        for member in vars(value).values():
            member = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if inspect.isfunction(member) or isinstance(member, property):
                for part in (member.fget, member.fset) if isinstance(member, property) else (member,):
                    if part is not None:
                        found |= op_types(part, seen)
        return found
    function = getattr(value, "__func__", value)
    code = getattr(function, "__code__", None)
    if code is None:
        return found
    scope = getattr(function, "__globals__", {})
    cells = [c.cell_contents for c in (function.__closure__ or ()) if _filled(c)]

    def walk(code_object):
        for constant in code_object.co_consts:
            if isinstance(constant, str) and constant in registered:
                found.add(constant)
            elif isinstance(constant, types.CodeType):
                walk(constant)
        for name in code_object.co_names:
            target = scope.get(name)
            if isinstance(target, types.ModuleType) and target.__name__.startswith("runtime"):
                for attribute in code_object.co_names:
                    member = getattr(target, attribute, None)
                    if callable(member) and _runtime_object(member):
                        found.update(op_types(member, seen))
            elif callable(target) and _runtime_object(target):
                found.update(op_types(target, seen))
    walk(code)
    for cell in cells:
        if isinstance(cell, str) and cell in registered:
            found.add(cell)
        elif callable(cell) and _runtime_object(cell):
            found |= op_types(cell, seen)
    return found


def direct_op_types(value) -> set[str]:
    """The op types ``value``'s own code names (its constants and closure, not what it calls)."""
    function = getattr(value, "__func__", value)
    code = getattr(function, "__code__", None)
    if code is None:
        return set()
    registered = all_opdefs()
    found = {c.cell_contents for c in (function.__closure__ or ()) if _filled(c)
             and isinstance(c.cell_contents, str) and c.cell_contents in registered}

    def walk(code_object):
        for constant in code_object.co_consts:
            if isinstance(constant, str) and constant in registered:
                found.add(constant)
            elif isinstance(constant, types.CodeType):
                walk(constant)
    walk(code)
    return found


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:          # a closure variable not assigned yet
        return False
    return True


def lowered(ops: set[str], seen: set | None = None) -> set[str]:
    """``ops`` with each composite op replaced by what it expands into (what the lowering sees)."""
    seen = set() if seen is None else seen
    out: set[str] = set()
    for op_type in ops:
        opdef = all_opdefs()[op_type]
        if opdef.expand is not None and op_type not in seen:
            seen.add(op_type)
            out |= lowered(op_types(opdef.expand) - {op_type}, seen)
        else:
            out.add(op_type)
    return out


def native_status(value, native: set[str]) -> str:
    if isinstance(value, type) and value.__module__ in TRACING:
        return "-"
    ops = lowered(op_types(value))
    complex_only = direct_op_types(value) & COMPLEX_ONLY       # a branch of its own for complex tensors
    ops -= COMPLEX_ONLY
    if not ops - ALWAYS_NATIVE and not complex_only:
        return "-"
    missing = sorted(ops - native - ALWAYS_NATIVE)
    status = "native" if not missing else "callback: " + ", ".join(missing)
    return f"{status} (complex: callback)" if complex_only else status


def public_names() -> list[tuple[str, object]]:
    """(path, value) of every public name: ``rt``'s own, then each TensorFlow namespace's, one level deep."""
    rows = []
    for name in sorted(dir(rt)):
        value = getattr(rt, name)
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        rows.append((name, value))
    for namespace in NAMESPACES:
        module = getattr(rt, namespace)
        for name in sorted(getattr(module, "__all__", None) or dir(module)):
            if name.startswith("_"):
                continue
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):
                if not value.__name__.startswith("runtime"):
                    continue
                for inner in sorted(getattr(value, "__all__", None) or dir(value)):
                    member = getattr(value, inner)
                    if inner.startswith("_") or isinstance(member, types.ModuleType) or not _exported(member, value):
                        continue
                    rows.append((f"{namespace}.{name}.{inner}", member))
                continue
            if not _exported(value, module):
                continue
            rows.append((f"{namespace}.{name}", value))
    return rows


def _exported(value, module) -> bool:
    """Public members a namespace defines or re-exports on purpose (not the typing names or numpy it imports)."""
    if isinstance(value, (int, float, str, rt.DType)):
        return True
    return _runtime_object(value) or getattr(module, "__all__", None) is not None


def _tf_has(tf, path: str) -> bool:
    target = tf
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            return False
    return True


def table(check_tf: bool = True) -> str:
    tf = None
    if check_tf:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        try:
            import tensorflow as tf  # optional: only to check the names
        except ImportError:
            tf = None
    native = native_op_types()
    lines = ["| rt | TensorFlow | built native code |", "|---|---|---|"]
    for path, value in public_names():
        tf_name = f"tf.{path}" if tf is None or _tf_has(tf, path) else "-"
        lines.append(f"| `rt.{path}` | {f'`{tf_name}`' if tf_name != '-' else '-'} | {native_status(value, native)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.api_table", description=__doc__.split("\n")[0])
    parser.add_argument("--no-tf", action="store_true", help="do not check the names against TensorFlow")
    args = parser.parse_args(argv)
    sys.stdout.write(table(check_tf=not args.no_tf) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
