"""Golden generated C for a few programs (``golden/programs.py``), and the generated kernel headers.

When the code generator changes on purpose, regenerate the golden files with

    RT_REGEN_GOLDEN=1 python -m pytest tests/unit/codegen

and review the diff (``git diff tests/unit/codegen/golden``); a failing test prints the diff and this
command. ``tests/build/test_golden.py`` compiles the same programs and runs them against eager.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import pytest

from transpiler.codegen import emit_function, kernel_table

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = "RT_REGEN_GOLDEN=1 python -m pytest tests/unit/codegen"

sys.path.insert(0, str(GOLDEN))
import programs  # noqa: E402  (the golden programs, beside their C)

sys.path.remove(str(GOLDEN))


@pytest.fixture(autouse=True)
def _verify_ir(monkeypatch):
    """The loop IR is verified after lowering and after every IR pass (``transpiler/lowering/verify.py``)."""
    monkeypatch.setenv("RT_VERIFY_IR", "1")


def _check_golden(name: str, text: str) -> None:
    text = text.replace(str(GOLDEN), "<golden>")      # error messages name the user's file
    path = GOLDEN / name
    want = path.read_text() if path.exists() else ""
    if text == want:
        return
    diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), f"golden/{name}", "now"))
    if os.environ.get("RT_REGEN_GOLDEN"):
        path.write_text(text)
        print(f"regenerated golden/{name}:\n{diff}")
        return
    pytest.fail(f"generated code changed:\n{diff}\nIf intended, regenerate with: {REGENERATE}")


@pytest.mark.parametrize("name", programs.GOLDEN)
def test_generated_c_matches_golden(name):
    code, _, _ = emit_function(programs.graphs()[name], f"rt_fn_{name}")
    _check_golden(f"{name}.c", code + "\n")


@pytest.mark.parametrize("path", sorted(kernel_table.GENERATED))
def test_generated_kernel_headers_are_current(path):
    with open(path, encoding="utf-8") as f:
        committed = f.read()
    if committed != kernel_table.GENERATED[path]():
        pytest.fail(f"{os.path.relpath(path)} is out of date with the Python tables; regenerate with: "
                    "python -m transpiler.codegen.kernel_table")
