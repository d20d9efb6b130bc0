"""Helpers for the build-driver tests: temp source trees, a stand-in code generator, running the CLI."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # tests/: the fuzzer's helpers
from fuzz_programs import import_built  # noqa: E402,F401 -- one copy, used by build tests and the fuzzer's CLI

PROJECT = Path(__file__).resolve().parents[2]

# The loop IR is verified after lowering and after every IR pass, in the builds these tests start too
# (transpiler/lowering/verify.py).
os.environ.setdefault("RT_VERIFY_IR", "1")

# The stand-in renderer, by file path, so the build's worker processes can load it (see render_standin).
STANDIN = f"{Path(__file__).resolve()}:render_standin"

_STANDIN_PYX = '''\
# cython: language_level=3
"""Stand-in build of {module_name} (tests only)."""
BUILT_BY = "stand-in"
MODULE_NAME = {module_name!r}
SIGNATURES = {signatures!r}

def answer():
    return 42
'''

_STANDIN_C = '''\
/* Stand-in build of {module_name} (tests only). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static const char *signatures[] = {{{signatures}}};

static PyObject *answer(PyObject *module, PyObject *unused) {{
    return PyLong_FromLong(42);
}}

static int exec_module(PyObject *module) {{
    PyObject *list = PyList_New(0);
    if (list == NULL) return -1;
    for (size_t i = 0; i < sizeof(signatures) / sizeof(*signatures) - 1; i++) {{
        PyObject *text = PyUnicode_FromString(signatures[i]);
        if (text == NULL || PyList_Append(list, text) < 0) {{ Py_XDECREF(text); Py_DECREF(list); return -1; }}
        Py_DECREF(text);
    }}
    if (PyModule_AddObject(module, "SIGNATURES", list) < 0) {{ Py_DECREF(list); return -1; }}
    if (PyModule_AddStringConstant(module, "BUILT_BY", "stand-in") < 0) return -1;
    return PyModule_AddStringConstant(module, "MODULE_NAME", "{module_name}");
}}

static PyMethodDef methods[] = {{{{"answer", answer, METH_NOARGS, NULL}}, {{NULL, NULL, 0, NULL}}}};
static PyModuleDef_Slot slots[] = {{{{Py_mod_exec, (void *)exec_module}}, {{0, NULL}}}};
static struct PyModuleDef module_def = {{PyModuleDef_HEAD_INIT, "{module_name}", NULL, 0, methods, slots}};

PyMODINIT_FUNC PyInit_{stem}(void) {{
    return PyModuleDef_Init(&module_def);
}}
'''


def _c_string(text: str) -> str:
    return "".join(c if c.isalnum() or c in " _.:,[]()-" else f"\\{b:03o}" for c in text for b in c.encode())


def _standin_signatures(module) -> list[str]:
    import runtime as rt
    signatures = []
    for name, value in sorted(vars(module).items()):
        if isinstance(value, rt.Function):
            if value.input_signature is not None:
                value.get_concrete_function()
            signatures += [f"{name}: {c.signature_text()}" for c in value.concrete_functions()]
    return signatures


def render_standin(module, source_path, module_name):
    """A tiny stand-in for ``transpiler.codegen.render_module`` (the tests of the driver must not depend on
    the code generator): traces every ``input_signature`` like the real one, and renders a small C extension
    that records which signatures it saw."""
    signatures = _standin_signatures(module)
    stem = module_name.rpartition(".")[2]
    text = _STANDIN_C.format(module_name=module_name, stem=stem,
                             signatures="".join(f'"{_c_string(s)}", ' for s in signatures) + "NULL")
    return types.SimpleNamespace(
        files={f"{stem}.c": text}, source=f"{stem}.c", include_dirs=[], extra_compile_args=["-O0", "-g0"],
        extra_link_args=[], libraries=[],
        report=[f"stand-in: {len(signatures)} signature(s)"] + [f"  {s}" for s in signatures])


def render_standin_pyx(module, source_path, module_name):
    """The stand-in as Cython (a renderer may hand over a .pyx, which Cython translates to C first)."""
    signatures = _standin_signatures(module)
    stem = module_name.rpartition(".")[2]
    pyx = f"{stem}.pyx"
    return types.SimpleNamespace(
        files={pyx: _STANDIN_PYX.format(module_name=module_name, signatures=signatures)}, pyx=pyx, include_dirs=[],
        extra_compile_args=["-O0", "-g0"], extra_link_args=[], libraries=[],
        report=[f"stand-in: {len(signatures)} signature(s)"] + [f"  {s}" for s in signatures])


def render_uncompilable(module, source_path, module_name):
    """A stand-in renderer whose C does not compile (for the compile-error report)."""
    rendered = render_standin(module, source_path, module_name)
    rendered.files[rendered.source] += "\nstatic int broken = undefined_in_generated_code;\n"
    return rendered


UNCOMPILABLE = f"{Path(__file__).resolve()}:render_uncompilable"
STANDIN_PYX = f"{Path(__file__).resolve()}:render_standin_pyx"



def render_planted(module, source_path, module_name, ledger=None):
    """The real code generator, with a planted lowering bug: every graph holding a ``Sin`` op fails to lower
    (for the tests of the per-signature fallback, which must not depend on a real bug staying unfixed)."""
    from runtime.graph import all_operations
    from transpiler import codegen
    real = codegen.lower_function

    def lower_function(graph, *args, **kwargs):
        for op in all_operations(graph):
            if op.type == "Sin":
                raise ValueError("planted: Sin cannot be lowered")
        return real(graph, *args, **kwargs)
    codegen.lower_function = lower_function
    try:
        return codegen.render_module(module, source_path, module_name, ledger=ledger)
    finally:
        codegen.lower_function = real


PLANTED = f"{Path(__file__).resolve()}:render_planted"


def render_miscompiled(module, source_path, module_name, ledger=None, exclude=None):
    """The real code generator, with a planted C bug: the code of every graph holding a ``Sin`` op does not
    compile (for the fallback when the C compiler rejects a function: the build renders the module again with
    ``exclude``, and those signatures run their graphs on the generic executor)."""
    from runtime.graph import all_operations
    from transpiler import codegen
    real = codegen.emit_function

    def emit_function(graph, *args, **kwargs):
        code, variables, report = real(graph, *args, **kwargs)
        if any(op.type == "Sin" for op in all_operations(graph)):
            code = code.replace("{\n", "{\n    int planted = undefined_in_generated_code;\n", 1)
        return code, variables, report
    codegen.emit_function = emit_function
    try:
        return codegen.render_module(module, source_path, module_name, ledger=ledger, exclude=exclude)
    finally:
        codegen.emit_function = real


MISCOMPILED = f"{Path(__file__).resolve()}:render_miscompiled"


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> dedented source) under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _run_cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m transpiler <args>`` in ``cwd``; returns the completed process (text output)."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT), environment.get("PYTHONPATH")) if p)
    environment.pop("RT_DEBUG", None)
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "transpiler", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def _import_fresh(root: Path, name: str):
    """Import ``name`` with ``root`` first on ``sys.path`` in a new interpreter; returns its stdout."""
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); import importlib; "
            f"m = importlib.import_module({name!r}); print(m.__file__); print(getattr(m, 'BUILT_BY', None))")
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(PROJECT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                          env=environment, timeout=60)


def build_source(root: Path, name: str, source: str, timeout: float = 900):
    """``source`` written to ``root/<name>.py``, built with ``python -m transpiler build root`` and imported."""
    (root / f"{name}.py").write_text(source)
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "--strict"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return import_built(root, name)


@pytest.fixture(scope="session", autouse=True)
def rt_cache_dir(tmp_path_factory):
    """Build records and logs of the tests go to a private cache directory (``RT_CACHE_DIR``), which the
    build processes the tests start inherit."""
    previous = os.environ.get("RT_CACHE_DIR")
    os.environ["RT_CACHE_DIR"] = str(tmp_path_factory.mktemp("rt-cache"))
    yield Path(os.environ["RT_CACHE_DIR"])
    if previous is None:
        os.environ.pop("RT_CACHE_DIR", None)
    else:
        os.environ["RT_CACHE_DIR"] = previous


@pytest.fixture
def standin() -> str:
    """The stand-in renderer, as a ``--renderer`` value."""
    return STANDIN


@pytest.fixture
def uncompilable() -> str:
    """A renderer whose output does not compile, as a ``--renderer`` value."""
    return UNCOMPILABLE


@pytest.fixture
def write_tree():
    """``write_tree(root, {relative path: source})`` writes dedented sources."""
    return _write_tree


@pytest.fixture
def run_cli():
    """``run_cli(*args, cwd=...)`` runs ``python -m transpiler`` and returns the completed process."""
    return _run_cli


@pytest.fixture
def import_fresh():
    """``import_fresh(root, name)`` imports a module in a new interpreter; stdout is its file and BUILT_BY."""
    return _import_fresh


# -- the README's sections: the commands they show are the commands the tests run ------------------------

def readme_blocks(title: str) -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced code block in the README section ``## title``."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end != -1 else len(text)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", section, re.S)]


def readme_files(title: str) -> dict[str, str]:
    """The files a README section shows: code blocks whose first line is ``# path/of/the/file``."""
    files = {}
    for language, text in readme_blocks(title):
        first = text.splitlines()[0] if text.strip() else ""
        if language in ("python", "toml") and re.fullmatch(r"# [\w./-]+\.(py|toml)", first):
            files[first[2:]] = text
    return files


def readme_commands(title: str) -> list[str]:
    """The shell commands a README section shows (``sh`` blocks, one command a line)."""
    return [line for language, text in readme_blocks(title) if language == "sh"
            for line in text.splitlines() if line.strip() and not line.startswith("#")]


def run_command(command: str, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """``bash -c command`` in its own process group, killed whole if it outlives ``timeout``."""
    process = subprocess.Popen(["/bin/bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        raise AssertionError(f"{command!r} did not finish in {timeout}s:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def plugin_env() -> dict:
    """Environment for running pytest with rt's plugin: through its ``pytest11`` entry point when rt is
    installed with it, otherwise named in ``PYTEST_PLUGINS`` (a checkout whose install predates it)."""
    from importlib.metadata import entry_points
    registered = any(ep.value == "transpiler.testing.pytest_plugin" for ep in entry_points(group="pytest11"))
    return {} if registered else {"PYTEST_PLUGINS": "transpiler.testing.pytest_plugin"}
