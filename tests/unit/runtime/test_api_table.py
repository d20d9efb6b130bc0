"""``python -m runtime.api_table``: the table of the public API and how built code runs each name, derived from the
op table and the lowering (not written by hand)."""
from __future__ import annotations

import pytest

import runtime as rt
from runtime import api_table
from transpiler.lowering import native_op_types


@pytest.fixture(scope="module")
def rows() -> dict[str, str]:
    lines = api_table.table(check_tf=False).splitlines()
    assert lines[:2] == ["| rt | TensorFlow | built native code |", "|---|---|---|"]
    out = {}
    for line in lines[2:]:
        name, tf_name, status = (cell.strip() for cell in line.strip("|").split("|"))
        out[name.strip("`")] = (tf_name.strip("`"), status)
    return out


def test_every_namespace_is_in_the_table(rows):
    for name in ("rt.argmax", "rt.einsum", "rt.math.top_k", "rt.linalg.inv", "rt.nn.gelu" if hasattr(rt.nn, "gelu")
                 else "rt.nn.elu", "rt.random.Generator", "rt.config.list_physical_devices", "rt.keras.layers.Dense"):
        assert name in rows, name
    assert rows["rt.linalg.inv"][0] == "tf.linalg.inv"


def test_the_native_column_follows_the_lowering(rows):
    assert rows["rt.argmax"][1] == "native"              # ArgMax has a native form
    assert rows["rt.math.argmax"][1] == "native"
    assert rows["rt.unique"][1] == "callback: Unique"    # Unique runs its numpy kernel through Python
    assert rows["rt.random.uniform"][1] == "native"
    assert rows["rt.einsum"][1] == "native"              # a composite: transposes, reshapes, MatMul, sums
    assert rows["rt.nn.softmax"][1] == "native"          # Softmax expands into ops with native forms
    assert rows["rt.complex"][1] == "callback: Complex"
    assert rows["rt.abs"][1] == "native (complex: callback)"     # ComplexAbs only for complex tensors
    assert rows["rt.math.real"][1] == "native (complex: callback)"
    assert rows["rt.Graph"][1] == "-" and rows["rt.Variable"][1] == "native"
    assert rows["rt.config.list_physical_devices"][1] == "-"
    assert rows["rt.float32"][1] == "-"


def test_op_types_are_read_from_the_code():
    assert {"MatMul", "Transpose", "Reshape"} <= api_table.op_types(rt.einsum)
    assert "Softmax" in api_table.op_types(rt.nn.softmax)
    expanded = api_table.lowered({"Softmax"})
    assert {"Max", "Sub", "Exp", "Sum", "RealDiv"} <= expanded and "Softmax" not in expanded
    assert "ArgMax" in native_op_types() and "Unique" not in native_op_types()
    assert api_table.native_status(rt.unique, native_op_types() | {"Unique"}) == "native"


def test_the_command_prints_the_table(capsys):
    assert api_table.main(["--no-tf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| rt | TensorFlow | built native code |") and "| `rt.sort` | `tf.sort` | native |" in out
