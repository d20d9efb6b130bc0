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


def test_big_constants_are_embedded_as_binary_files_shared_by_content():
    """A constant of at least BLOB_MIN_BYTES becomes a file the C embeds with .incbin (3.2 million C literals
    took 70 s to render and compile); two functions capturing one array share its file; without a place for
    files the constant is spelled as an initializer."""
    import numpy as np

    import runtime as rt
    from transpiler.lowering.function import BLOB_MIN_BYTES
    table = np.arange(BLOB_MIN_BYTES // 4 + 3, dtype=np.float32)

    def graph_of(fn):
        return rt.function(fn, input_signature=[rt.TensorSpec([None], rt.int32)]).get_concrete_function().graph
    blobs: dict = {}
    first, _, _ = emit_function(graph_of(lambda i: rt.gather(table, i)), "rt_fn_a", blobs=blobs)
    second, _, _ = emit_function(graph_of(lambda i: rt.gather(table, i) * 2.0), "rt_fn_b", blobs=blobs)
    assert len(blobs) == 1
    (name, data), = blobs.items()
    assert data == table.tobytes() and f'.incbin \\"{name}\\"' in first and ".incbin" not in second
    assert name[:-4] in second and len(first) < 2000
    small, _, _ = emit_function(graph_of(lambda i: rt.gather(table[:8], i)), "rt_fn_c", blobs=blobs)
    assert ".incbin" not in small and len(blobs) == 1
    spelled, _, _ = emit_function(graph_of(lambda i: rt.gather(table, i)), "rt_fn_d")
    assert ".incbin" not in spelled and f"{float(table[-1])}" in spelled.replace("f", "")


def test_the_payload_pickles_equal_big_arrays_once():
    """Functions that capture one array hold a copy each in their graphs: the payload stores it once and its
    other places refer to it (four functions over one 12.8 MB array made a 59 MB extension, now 25 MB)."""
    import pickle

    import numpy as np

    from transpiler.codegen import dumps_sharing
    big = np.random.default_rng(0).random(20_000).astype(np.float32)
    other = big * 2
    value = {"a": big.copy(), "b": [big.copy(), other], "c": (big.copy(), np.arange(4))}
    data = dumps_sharing(value)
    assert len(data) < big.nbytes * 2 + 4096 < len(pickle.dumps(value, protocol=4))
    back = pickle.loads(data)
    assert back["a"] is back["b"][0] is back["c"][0] and back["b"][1] is not back["a"]
    np.testing.assert_array_equal(back["a"], big)
    np.testing.assert_array_equal(back["b"][1], other)
    np.testing.assert_array_equal(back["c"][1], np.arange(4))
