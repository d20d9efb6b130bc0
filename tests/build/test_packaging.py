"""Shipping: rt installed non-editable builds; a user's project becomes a platform wheel that runs natively
where there is neither a compiler nor the project's sources.

Each test runs the commands of the README's "Shipping built modules" section, in virtual environments made
with ``--system-site-packages`` (numpy, libcst, Cython come from the running Python, nothing is downloaded:
``PIP_NO_INDEX=1``) into which rt itself is installed from a wheel built from this checkout.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import PROJECT, readme_commands, readme_files, run_command

pytestmark = pytest.mark.build

SECTION = "Shipping built modules"
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
PLATFORM = sysconfig.get_platform().replace("-", "_").replace(".", "_")
EXT = sysconfig.get_config_var("EXT_SUFFIX")


def _project_files() -> list[Path]:
    """The checkout's files (tracked, or new and not ignored), as a clean clone would have them."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=PROJECT,
                            capture_output=True, text=True)
    if listed.returncode == 0:
        return [PROJECT / name for name in listed.stdout.split("\0") if name and (PROJECT / name).is_file()]
    skipped = {".git", "build", "dist", "__pycache__", ".hypothesis"}
    return [p for p in PROJECT.rglob("*") if p.is_file() and not skipped & set(p.relative_to(PROJECT).parts)
            and p.suffix not in (".so", ".c") and ".egg-info" not in str(p)]


@pytest.fixture(scope="module")
def rt_wheel(tmp_path_factory) -> Path:
    """rt's own wheel, built from a copy of this checkout (what ``pip install .`` builds and installs)."""
    source = tmp_path_factory.mktemp("rt-source")
    for path in _project_files():
        target = source / path.relative_to(PROJECT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    dist = tmp_path_factory.mktemp("rt-wheel")
    result = run_command(f"{sys.executable} -m pip wheel --no-build-isolation --no-deps -q {source} -w {dist}",
                         cwd=source, env=_base_env(), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = dist.glob("rt_transpiler-*.whl")
    assert f"-{TAG}-{TAG}-{PLATFORM}.whl" in wheel.name, wheel.name
    return wheel


def _base_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "RT_DEBUG")}
    env["PIP_NO_INDEX"] = "1"                  # nothing is downloaded
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class Venv:
    """A ``--system-site-packages`` virtual environment with rt installed from its wheel."""

    def __init__(self, path: Path, rt_wheel: Path):
        self.path = path
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)],
                       check=True, timeout=120)
        result = self.run(f"python -m pip install -q --no-deps {rt_wheel}", cwd=path)
        assert result.returncode == 0, result.stdout + result.stderr

    def env(self, compiler: bool = True) -> dict:
        env = _base_env()
        env["VIRTUAL_ENV"] = str(self.path)
        # without a compiler: only the environment's own bin directory is on PATH (no gcc, cc, ld)
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env['PATH']}" if compiler else str(self.path / "bin")
        if not compiler:
            for name in ("CC", "CXX", "LDSHARED"):
                env.pop(name, None)
        return env

    def run(self, command: str, cwd: Path, compiler: bool = True) -> subprocess.CompletedProcess:
        return run_command(command, cwd=cwd, env=self.env(compiler))


@pytest.fixture(scope="module")
def builder(tmp_path_factory, rt_wheel) -> Venv:
    """A fresh environment where rt is installed non-editable, as `pip install .` installs it."""
    return Venv(tmp_path_factory.mktemp("venv") / "builder", rt_wheel)


def _write_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _user_project(root: Path, with_setup_py: bool) -> Path:
    """The README's project: with the [tool.rt] table, or with its setup.py instead."""
    files = readme_files(SECTION)
    setup_py = files.pop("setup.py")
    if with_setup_py:
        files["pyproject.toml"] = re.sub(r"\n\[tool\.rt\]\n(?:.+\n)+", "\n", files["pyproject.toml"])
        assert "[tool.rt]" not in files["pyproject.toml"]
        files["setup.py"] = setup_py
    return _write_project(root, files)


def test_non_editable_install_builds(builder, tmp_path):
    probe = builder.run("python -c 'import os, runtime, transpiler; print(runtime.__file__); "
                        "print(sorted(os.listdir(os.path.join(os.path.dirname(transpiler.__file__), \"templates\"))))'",
                        cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    runtime_file, templates = probe.stdout.splitlines()
    assert runtime_file.startswith(str(builder.path)), "rt comes from the installed wheel, not from the checkout"
    assert "module.c.tmpl" in templates and "native.h.tmpl" in templates
    project = _user_project(tmp_path / "project", with_setup_py=False)
    built = builder.run("rt build mymodels/", cwd=project)                        # the console script
    assert built.returncode == 0 and "building mymodels.models ... ok" in built.stdout, built.stdout + built.stderr
    again = builder.run("python -m transpiler build mymodels/", cwd=project)      # and the module
    assert again.returncode == 0 and "1 module: 1 up to date" in again.stdout, again.stdout + again.stderr
    assert [p.name for p in (project / "mymodels").iterdir() if p.suffix == ".so"] == [f"models{EXT}"]
    assert not list(project.rglob(".rt_build")), "no build litter in the project"


def _wheel(project: Path) -> tuple[Path, set[str], str]:
    (wheel,) = (project / "dist").glob("mymodels-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read("mymodels-1.0.dist-info/WHEEL").decode()
    return wheel, names, metadata


def test_user_wheel_runs_natively_without_compiler_or_sources(builder, rt_wheel, tmp_path):
    wheel_command, install_command, run = readme_commands(SECTION)
    project = _user_project(tmp_path / "project", with_setup_py=False)
    built = builder.run(wheel_command, cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel, names, metadata = _wheel(project)
    assert wheel.name == f"mymodels-1.0-{TAG}-{TAG}-{PLATFORM}.whl"
    assert "Root-Is-Purelib: false" in metadata and f"Tag: {TAG}-{TAG}-{PLATFORM}" in metadata
    assert f"mymodels/models{EXT}" in names and "mymodels/util.py" in names and "mymodels/__init__.py" in names
    assert "mymodels/models.py" not in names, "include-sources = false"
    assert not list(project.rglob(".rt_build")), "no build litter in the project"

    shutil.rmtree(project / "mymodels")                       # no sources anywhere near
    runner = Venv(tmp_path / "runner", rt_wheel)
    assert runner.run("command -v gcc || command -v cc", cwd=project, compiler=False).returncode != 0
    installed = runner.run(install_command, cwd=project, compiler=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    result = runner.run(run, cwd=project, compiler=False)
    assert result.returncode == 0, result.stderr
    readme = (PROJECT / "README.md").read_text()
    printed = re.search(r"which prints `(.+?)`", readme).group(1)
    assert result.stdout.strip() == printed


def test_setup_py_wheel_keeps_the_sources(builder, tmp_path):
    wheel_command = readme_commands(SECTION)[0]
    project = _user_project(tmp_path / "project", with_setup_py=True)
    built = builder.run(wheel_command, cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel, names, metadata = _wheel(project)
    assert wheel.name == f"mymodels-1.0-{TAG}-{TAG}-{PLATFORM}.whl" and "Root-Is-Purelib: false" in metadata
    assert {f"mymodels/models{EXT}", "mymodels/models.py", "mymodels/util.py"} <= names
