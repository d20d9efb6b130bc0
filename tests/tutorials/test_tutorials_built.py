"""The tutorial programs built ahead of time, as a user would: ``python -m transpiler build --tf-compat``, a first
run, ``build --tf-compat --from-ledger``, a second run.

- The first build compiles what the programs declare: ``input_signature``s (the core guides' export modules) and
  ``fit``'s train step of a model compiled at import; the steps the guides write as ``@tf.function def
  train_step(x, y)`` (no signature) are noted as traced at run time.
- The first run traces those steps (on the generic executor) and records their signatures in the ledger.
- After ``--from-ledger`` every training step (and the test steps beside them) runs native code, and nothing
  traces at run time (issue 21 item 6: signatures from a first run).
- Native and traced runs give the same numbers (trajectories within float32 round-off).
- The built modules import ``tensorflow`` as rt by themselves (no compat run), and leave no alias behind.

Each run is a plain Python process importing the built module (``run_built.py``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tutorial_support import PROGRAMS, PROJECT, TRAINED, converts_float64_arrays

pytestmark = pytest.mark.build

# program -> (its step Functions, as paths from the module; main()'s options: small, batches in order)
STEPS = {
    "autodiff": (["dense_grads"], {}),
    "variables": (["tally"], {}),
    "basic_training_loops": (["train_step"], {}),
    "intro_to_modules": (["traced_model.__call__"], {}),
    "custom_layers": (["train_step"], {}),
    "training_loop_from_scratch": (["train_step", "test_step", "regularized_train_step"],
                                   {"epochs": 1, "shuffle": False}),
    "advanced_quickstart": (["train_step", "test_step"], {"epochs": 1, "shuffle": False}),
    "mlp_core": (["train_step", "val_step", "mlp_model_export.__call__"], {"epochs": 1}),
    "data_in_memory": (["window_means"], {"sections": ["time_series"]}),
    "quickstart_beginner": (["model.train_function", "model.test_function"], {"epochs": 1}),
}
if converts_float64_arrays():          # the logistic regression needs branch bugs (see test_tutorials.py)
    STEPS["logistic_regression_core"] = (["train_step", "test_step", "log_reg_export.__call__"],
                                         {"epochs": 3, "shuffle": False})

# built by the first build already: declared input_signatures, and fit's step of a model compiled at import
DECLARED = {"mlp_core": ["mlp_model_export.__call__"], "logistic_regression_core": ["log_reg_export.__call__"],
            "quickstart_beginner": ["model.train_function", "model.test_function"]}


def _environment(root: Path, **extra) -> dict:
    environment = dict(os.environ, RT_CACHE_DIR=str(root / "cache"), **extra)
    environment.pop("RT_DEBUG", None)
    return environment


def _build(root: Path, *options: str) -> str:
    result = subprocess.run([sys.executable, "-m", "transpiler", "build", "--tf-compat", "--strict", *options,
                             str(root / "src"), "-o", str(root / "built")], cwd=PROJECT, capture_output=True,
                            text=True, timeout=3600, check=False, env=_environment(root, PYTHONPATH=str(PROJECT)))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _run(root: Path, name: str) -> dict:
    steps, options = STEPS[name]
    result = subprocess.run([sys.executable, str(Path(__file__).with_name("run_built.py")), name, json.dumps(steps),
                             json.dumps(options)], cwd=root, capture_output=True, text=True, timeout=900, check=False,
                            env=_environment(root, PYTHONPATH=os.pathsep.join([str(root / "built"), str(PROJECT)])))
    assert result.returncode == 0, f"{name}:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    root = tmp_path_factory.mktemp("tutorials_built")
    shutil.copytree(PROGRAMS, root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    if "logistic_regression_core" not in STEPS:
        (root / "src" / "logistic_regression_core.py").unlink()
    first_build = _build(root)
    first = {name: _run(root, name) for name in STEPS}
    second_build = _build(root, "--from-ledger")
    second = {name: _run(root, name) for name in STEPS}
    return {"root": root, "first_build": first_build, "first": first, "second_build": second_build, "second": second}


def test_the_first_build_compiles_what_the_programs_declare(flow):
    for name, paths in DECLARED.items():
        if name not in STEPS:
            continue
        for path in paths:
            assert flow["first"][name]["steps"][path] == {"traces": 0, "native": [True]}, (name, path)
    assert "train_step: not compiled: no input_signature and no concrete function at import" in flow["first_build"]
    assert "use --from-ledger after a first run" in flow["first_build"]


@pytest.mark.parametrize("name", sorted(STEPS))
def test_the_first_run_traces_the_undeclared_steps(flow, name):
    for path, step in flow["first"][name]["steps"].items():
        if path in DECLARED.get(name, ()):
            continue
        assert step["traces"] >= 1 and not any(step["native"]), (path, step)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_after_from_ledger_every_step_runs_native_code_without_a_trace(flow, name):
    """Issue 21 item 6: a tutorial's ``@tf.function def train_step(x, y)`` (no input_signature) run once, rebuilt
    with ``--from-ledger``, runs natively with no run-time trace."""
    for path, step in flow["second"][name]["steps"].items():
        assert step["traces"] == 0 and step["native"] and all(step["native"]), (name, path, step)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_native_steps_give_the_traced_steps_numbers(flow, name):
    first, second = flow["first"][name]["result"], flow["second"][name]["result"]
    _assert_close(second, first, name)


def test_built_modules_read_tensorflow_as_rt_and_leave_no_alias(flow):
    for name, run in flow["second"].items():
        assert run["file"].endswith(".so") and str(flow["root"] / "built") in run["file"], run["file"]
        assert run["aliased_after_import"] is False, name


def _numeric(value) -> bool:
    """A number, or a (nested) list of numbers of one shape."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, dict)):
        return False
    if isinstance(value, list):
        if not all(_numeric(v) for v in value):
            return False
        try:
            np.asarray(value, dtype=float)
        except ValueError:          # lists of different shapes
            return False
        return True
    return isinstance(value, (int, float))


def _assert_close(actual, expected, where):
    if _numeric(expected):
        assert _numeric(actual), where
        np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                                   err_msg=where, **TRAINED)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            _assert_close(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_close(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, where
