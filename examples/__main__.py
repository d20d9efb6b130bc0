"""Run every example, compare each result with eager execution, and check the built signatures are native.

    python -m transpiler build examples/
    python -m examples [NAME ...]

Exit status 1 when a result differs from its reference or a built signature does
not run native code (for instance because the examples were not built).
"""
from __future__ import annotations

import argparse
import importlib
import signal
import subprocess
import sys
import traceback

import numpy as np

import runtime as rt
from examples import MODULES
from runtime import nest
from runtime.polymorphic_function import Function


def functions_of(module) -> list[Function]:
    """The module's ``rt.function``s: module-level ones and those defined in its classes."""
    found = {}
    for value in vars(module).values():
        if isinstance(value, Function):
            if getattr(value.python_function, "__module__", None) == module.__name__:
                found[id(value)] = value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            found.update((id(m), m) for m in vars(value).values() if isinstance(m, Function))
    return list(found.values())


def describe_signature(concrete) -> str:
    """``name(a: float32[1, 2], b=2)``."""
    args, kwargs = concrete.structured_input_signature
    params = concrete.function.parameter_names

    def leaf(value):
        if isinstance(value, rt.TensorSpec):
            shape = "?" if value.shape.rank is None else ", ".join("?" if d is None else str(d)
                                                                  for d in value.shape.as_list())
            return f"{value.dtype}[{shape}]"
        return repr(value)

    parts = []
    for name, value in list(zip(params, args)) + sorted(kwargs.items()):
        if any(isinstance(v, rt.TensorSpec) for v in nest.flatten(value)):
            shown = leaf(value) if isinstance(value, rt.TensorSpec) else str(nest.map_structure(leaf, value))
            parts.append(f"{name}: {shown}")
        else:
            parts.append(f"{name}={value!r}")
    return f"{concrete.name}({', '.join(parts)})"


def to_python(value):
    """Tensors -> numpy arrays, recursively through lists and tuples."""
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if hasattr(value, "numpy"):
        return value.numpy()
    return value


def same(value, reference) -> bool:
    """Equal values (floats to float32 rounding), equal shapes, equal dtypes when both are tensors."""
    if isinstance(value, list) or isinstance(reference, list):
        return (isinstance(value, list) and isinstance(reference, list) and len(value) == len(reference)
                and all(same(v, r) for v, r in zip(value, reference)))
    if isinstance(value, np.ndarray) and isinstance(reference, np.ndarray) and value.dtype != reference.dtype:
        return False
    a, b = np.asarray(value), np.asarray(reference)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(np.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(a, b))


def show(value, width: int = 70) -> str:
    if isinstance(value, list):
        text = "[" + ", ".join(show(v, width) for v in value) + "]"
    elif isinstance(value, np.ndarray):
        text = np.array2string(value, separator=", ", threshold=20).replace("\n", "")
        text = " ".join(text.split()) + f" {value.dtype}"
    elif isinstance(value, np.generic):
        text = f"{value} {value.dtype}"
    else:
        text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def check_module(name: str) -> bool:
    """Import, run and check one example module; print what happened; True when all is well."""
    print(f"== examples.{name}")
    sys.stdout.flush()
    try:
        module = importlib.import_module(f"examples.{name}")
    except Exception:  # noqa: BLE001 - report and go on with the other examples
        traceback.print_exc()
        print("   FAIL  import failed")
        return False
    ok = True
    built = []
    for function in functions_of(module):
        concretes = function.concrete_functions()
        if function.input_signature is not None and not concretes:
            print(f"   FAIL  {function.__name__}: its input_signature was not built")
            ok = False
        built += [(function, c) for c in concretes]
    traced_at_import = sum(f.experimental_get_tracing_count() for f in functions_of(module))
    try:
        results = module.run()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        print("   FAIL  run() raised")
        return False
    sys.stdout.flush()
    for label, value, reference in results:
        try:
            value, reference = to_python(value), to_python(reference)
        except Exception as e:  # noqa: BLE001 - a result that cannot be read is a failed result
            print(f"   FAIL  {label}: reading the result raised {type(e).__name__}: {e}")
            ok = False
            continue
        match = same(value, reference)
        ok &= match
        line = f"   {'ok  ' if match else 'DIFF'}  {label}: {show(value)}"
        print(line if match else f"{line}\n           reference: {show(reference)}")
    for function, concrete in built:
        native = bool(getattr(concrete, "native", False))
        ok &= native
        print(f"   {'ok  ' if native else 'FAIL'}  native={native}  {describe_signature(concrete)}")
    if traced_at_import:
        print(f"   FAIL  {traced_at_import} trace(s) while importing: the module was not built")
        ok = False
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="example modules to run (default: all)")
    parser.add_argument("--in-process", action="store_true",
                        help="run the examples in this process (by default each runs in its own, so that a crash "
                             "in one is reported and the others still run)")
    args = parser.parse_args(argv)
    names = args.names or list(MODULES)
    failed = []
    for name in names:
        if args.in_process:
            passed = check_module(name)
        else:
            sys.stdout.flush()
            code = subprocess.run([sys.executable, "-m", "examples", "--in-process", name], check=False).returncode
            if code < 0:
                print(f"   FAIL  the process died with signal {-code} ({signal.Signals(-code).name})")
            passed = code == 0
        if not passed:
            failed.append(name)
    if args.in_process and len(names) == 1:
        return 1 if failed else 0
    print()
    print(f"{len(names) - len(failed)} of {len(names)} examples match eager execution and run natively"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        print("(a signature that is not native means the module was not built: "
              "python -m transpiler build examples/)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
