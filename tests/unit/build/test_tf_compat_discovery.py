"""``build --tf-compat``'s static half: tf.function applications are found (only when asked), the facts cache keeps
them apart, and ``[tool.rt] tf-compat`` is read and checked."""
from __future__ import annotations

import argparse

import pytest

from transpiler.build.cli import add_parsers
from transpiler.build.discovery import FileFacts, discover, scan_source
from transpiler.build.setuptools_hook import read_config

TF_PROGRAM = '''
import tensorflow as tf
from tensorflow import function as tf_function

@tf.function
def step(x):
    return x * 2

@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
def scaled(x):
    return x * 3

double = tf.function(lambda x: x + x)
plain = tf_function(step)
'''


def test_tf_functions_are_found_apart_from_rt_functions():
    facts = scan_source(TF_PROGRAM)
    assert facts.functions == ()
    assert [(f.name, f.line) for f in facts.tf_functions] == [("step", 5), ("scaled", 9), ("<expression>", 13),
                                                              ("step", 14)]
    mixed = scan_source("import runtime as rt\nimport tensorflow as tf\n@rt.function\ndef f(x):\n    return x\n"
                        "@tf.function\ndef g(x):\n    return x\n")
    assert [f.name for f in mixed.functions] == ["f"] and [f.name for f in mixed.tf_functions] == ["g"]
    assert FileFacts.from_json(facts.to_json()) == facts
    assert FileFacts.from_json({"functions": [], "imports": []}).tf_functions == ()   # a cache entry of before


def test_discovery_finds_tf_function_modules_only_under_tf_compat(tmp_path):
    (tmp_path / "program.py").write_text(TF_PROGRAM)
    (tmp_path / "other.py").write_text("import tensorflow as tf\nx = tf.constant(1)\n")
    assert discover([tmp_path]) == []
    [found] = discover([tmp_path], tf_compat=True)
    assert found.name == "program" and [f.name for f in found.functions][:2] == ["step", "scaled"]


def test_the_command_line_and_tool_rt_take_tf_compat(tmp_path):
    parser = argparse.ArgumentParser()
    add_parsers(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["build", "--tf-compat", "pkg"]).tf_compat is True
    assert parser.parse_args(["build", "pkg"]).tf_compat is False
    assert parser.parse_args(["graph", "--tf-compat", "m.py:f"]).tf_compat is True
    assert parser.parse_args(["ledger", "--tf-compat", "pkg"]).tf_compat is True
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.rt]\nbuild = ["pkg"]\ntf-compat = true\n')
    assert read_config(pyproject)["tf_compat"] is True
    pyproject.write_text('[tool.rt]\nbuild = ["pkg"]\ntf-compat = "yes"\n')
    with pytest.raises(ValueError, match="tf-compat must be true or false"):
        read_config(pyproject)


def test_a_module_compiling_a_keras_model_at_import_is_found(tmp_path):
    (tmp_path / "fit_model.py").write_text(
        "import runtime as rt\nimport re\nPATTERN = re.compile('x')\n"
        "model = rt.keras.Sequential([rt.keras.Input((4,)), rt.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n")
    (tmp_path / "regex.py").write_text("import runtime as rt\nimport re\nPATTERN = re.compile('x', re.I)\n")
    (tmp_path / "keras_program.py").write_text("import keras\nmodel = keras.Sequential([keras.layers.Dense(1)])\n"
                                               "model.compile(loss='mse', optimizer='adam')\n")
    assert [(m.name, [f.name for f in m.functions]) for m in discover([tmp_path])] == [
        ("fit_model", ["model.compile"])]
    assert [m.name for m in discover([tmp_path], tf_compat=True)] == ["fit_model", "keras_program"]
