"""Golden generated C for a few programs, and the kernel table generated from the op registry.

When the code generator changes on purpose, regenerate the golden files with

    RT_REGEN_GOLDEN=1 python -m pytest tests/unit/codegen

and review the diff; a failing test prints the diff and this command.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

import runtime as rt
from transpiler.codegen import kernel_table
from transpiler.codegen import emit_function

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = "RT_REGEN_GOLDEN=1 python -m pytest tests/unit/codegen"


def _double(a):
    return a + a


def _chain(x):
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - x


def _collatz(x):
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)


def _power(x, y):
    result = rt.eye(3, dtype=rt.int32)
    for _ in range(y):
        result = rt.matmul(x, result)
    return result


def _countdown(n):
    total = rt.constant(0)
    while n > 0:
        total += n
        n -= 1
    return total


def _bias_relu(x, b):
    return rt.nn.relu(x + b)


PROGRAMS = {
    "bias_relu": (_bias_relu, [rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None], rt.float32)]),
    "double": (_double, [rt.TensorSpec([], rt.int32)]),
    "chain": (_chain, [rt.TensorSpec([None], rt.float32)]),
    "collatz": (_collatz, [rt.TensorSpec([None], rt.int32)]),
    "power": (_power, [rt.TensorSpec([3, 3], rt.int32), 3]),
    "countdown": (_countdown, [rt.TensorSpec([], rt.int32)]),
}


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("RT_REGEN_GOLDEN"):
        path.write_text(text)
        return
    want = path.read_text() if path.exists() else ""
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), f"golden/{name}", "now"))
        pytest.fail(f"generated code changed:\n{diff}\nIf intended, regenerate with: {REGENERATE}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_generated_c_matches_golden(name):
    fn, args = PROGRAMS[name]
    concrete = rt.function(fn).get_concrete_function(*args)
    code, _, _ = emit_function(concrete.graph, f"rt_fn_{name}")
    _check_golden(f"{name}.c", code + "\n")


@pytest.mark.parametrize("path", sorted(kernel_table.GENERATED))
def test_generated_kernel_headers_are_current(path):
    with open(path, encoding="utf-8") as f:
        committed = f.read()
    if committed != kernel_table.GENERATED[path]():
        pytest.fail(f"{os.path.relpath(path)} is out of date with the Python tables; regenerate with: "
                    "python -m transpiler.codegen.kernel_table")
