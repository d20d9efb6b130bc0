"""Testing and scaling out built modules: ``pytest --rt-check``, ``rt_built``, pickling by reference, Dask,
and the import-time warning when a module the built module imports changed.

The README's "Testing built modules" and "Running on a cluster (Dask)" sections are run as they are shown.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import PROJECT, plugin_env, readme_blocks, readme_commands, readme_files, run_command

pytestmark = pytest.mark.build

TESTING = "Testing built modules"
DASK = "Running on a cluster (Dask)"


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RT_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT), env.get("PYTHONPATH")) if p)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"   # `python` is this Python
    env.update(plugin_env())
    env.update(extra)
    return env


def _run(command: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    result = run_command(command, cwd=cwd, env=_env(**extra), timeout=600)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The README's mymodels package (Shipping section) and the files of these sections, built once."""
    root = tmp_path_factory.mktemp("project")
    shipping = readme_files("Shipping built modules")
    files = {name: text for name, text in shipping.items() if name.startswith("mymodels/")}
    files.update(readme_files(TESTING))
    files.update(readme_files(DASK))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _run(readme_commands(DASK)[0], cwd=root)           # python -m transpiler build mymodels/
    return root


def test_readme_rt_check_of_the_examples(tmp_path):
    """The README's commands, run where the README runs them: beside this repository's pytest settings
    (``--doctest-modules`` collects the examples too), and it checks as many signatures as the README says."""
    shutil.copytree(PROJECT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(PROJECT / "pyproject.toml", tmp_path / "pyproject.toml")
    build, check, _ = readme_commands(TESTING)
    _run(build, cwd=tmp_path)
    result = _run(check, cwd=tmp_path)
    summary = result.stdout.strip().splitlines()[-1]
    # nothing skipped, nothing failing to collect; the helper modules' doctests are deselected (only the check runs)
    passed = re.fullmatch(r"=+ (\d+) passed(, \d+ deselected)?(, \d+ warnings?)? in .*", summary)
    assert passed, result.stdout
    claimed = re.search(r"reports each\s+signature as a test \((\d+) for the examples\)",
                        (PROJECT / "README.md").read_text(encoding="utf-8"))
    assert claimed and int(passed.group(1)) == int(claimed.group(1)), (summary, claimed and claimed.group(0))
    # the README's first command, on the same build: every example matches eager execution, natively
    examples = _run("python -m examples", cwd=tmp_path)
    assert re.search(r"(\d+) of \1 examples match eager execution and run natively", examples.stdout)


def test_readme_rt_built_fixture(project):
    result = _run(readme_commands(TESTING)[2], cwd=project)      # python -m pytest tests/test_models.py
    assert "1 passed" in result.stdout, result.stdout


BROKEN = """
    # A miscompiled build, simulated: the native result of scaled_tanh is off by one.
    from runtime import aot

    _call_flat = aot.NativeConcreteFunction._call_flat


    def _broken(self, tensors):
        result = _call_flat(self, tensors)
        return result + 1.0 if self.name == "scaled_tanh" else result


    aot.NativeConcreteFunction._call_flat = _broken
"""

SECOND = """
    import runtime as rt


    @rt.function(input_signature=[rt.TensorSpec([None, 2], rt.int32)])
    def clipped_sum(m):
        return rt.reduce_sum(rt.minimum(m, 5), axis=1)


    @rt.function
    def unbuilt_alone(x):
        return x
"""


def test_rt_check_catches_a_broken_build_and_reports_per_function(project, tmp_path):
    root = tmp_path / "checked"
    shutil.copytree(project / "mymodels", root / "mymodels")
    (root / "mymodels" / "second.py").write_text(textwrap.dedent(SECOND))
    (root / "mymodels" / "notbuilt.py").write_text("import runtime as rt\n\n\n@rt.function\ndef f(x):\n    return x\n")
    _run("python -m transpiler build mymodels/second.py", cwd=root)
    good = _run("python -m pytest --rt-check mymodels -rs -v", cwd=root)
    assert "mymodels/models.py::scaled_tanh(x: float32[None]) PASSED" in good.stdout, good.stdout
    assert "mymodels/second.py::clipped_sum(m: int32[None,2]) PASSED" in good.stdout
    assert "notbuilt.py is not built: run python -m transpiler build" in good.stdout
    assert "2 passed, 1 skipped" in good.stdout

    (root / "conftest.py").write_text(textwrap.dedent(BROKEN))
    broken = run_command("python -m pytest --rt-check mymodels", cwd=root, env=_env())
    assert broken.returncode == 1, broken.stdout + broken.stderr
    out = broken.stdout
    assert "1 failed, 1 passed, 1 skipped" in out, out
    (shown,) = [text for language, text in readme_blocks(TESTING) if language == "text"]   # the README's report
    for line in shown.splitlines():
        assert line in out.splitlines() or line.startswith("FAILED") and line + " - built code" in out, (line, out)


def test_readme_dask_chunks(project):
    result = _run(readme_commands(DASK)[1], cwd=project)          # python chunks.py
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    expected = float((np.tanh(np.linspace(-1, 1, 4_000_000, dtype=np.float32) * 3.0) + 1.0).sum(dtype=np.float64))
    assert abs(float(lines["threads"]) - expected) < 1e-4 * expected
    assert float(lines["processes"]) == float(lines["threads"])
    assert lines["native in the workers"] == "{True}"


def test_built_function_pickles_by_reference(project):
    dump = ("import pickle, sys; from mymodels.models import scaled_tanh; "
            "sys.stdout.buffer.write(pickle.dumps(scaled_tanh))")
    payload = subprocess.run([sys.executable, "-c", dump], cwd=project, env=_env(), capture_output=True,
                             timeout=120, check=True).stdout
    assert b"mymodels.models" in payload and len(payload) < 200, "by reference: the module and the name"
    load = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); import mymodels.models as m; "
            "print(f is m.scaled_tanh, m.__file__.endswith('.so'), f.get_concrete_function().native, "
            "float(f([0.0]).numpy()[0]))")
    result = subprocess.run([sys.executable, "-c", load], cwd=project, env=_env(), input=payload,
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().split() == ["True", "True", "True", "1.0"]


def test_a_changed_imported_module_makes_the_build_stale(project):
    code = "import warnings; warnings.simplefilter('always'); import mymodels.models"
    util = project / "mymodels" / "util.py"
    original = util.read_text()
    assert "stale" not in _run(f'python -c "{code}"', cwd=project).stderr
    try:
        util.write_text("SCALE = 4.0\n")
        warned = _run(f'python -c "{code}"', cwd=project).stderr
        assert "RuntimeWarning: mymodels.models: the compiled module is stale" in warned, warned
        assert str(util) in warned and "models.py" not in warned.split("stale:")[1].split("changed")[0]
        rebuilt = _run("python -m transpiler build mymodels/", cwd=project)
        assert "building mymodels.models ... ok" in rebuilt.stdout, rebuilt.stdout
        assert "stale" not in _run(f'python -c "{code}"', cwd=project).stderr
    finally:
        util.write_text(original)
        _run("python -m transpiler build mymodels/", cwd=project)
