"""The build driver: discovery, hashing, incremental and parallel builds, failures, atomic outputs, ``graph``.

The compiling tests (marked ``build``) use a stand-in code generator (``conftest.render_standin``) so they
test the driver, not the generator; one test at the end goes through the real ``transpiler.codegen``.
"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STANDIN_PYX
from transpiler.build.compile import TMP_SUFFIX, extension_filename, install_file, remove_stale_temporaries
from transpiler.build.discovery import FactsCache, discover, module_name_for, scan_source
from transpiler.cachedir import build_log, build_record
from transpiler.build.driver import format_error
from transpiler.build.hashing import local_dependencies, module_hash

PROJECT = Path(__file__).resolve().parents[2]

GOOD = """
    import runtime as rt
    from . import helpers

    @rt.function(input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)])
    def next_collatz(x):
        print("Tracing with", x)
        return rt.where(x % 2 == 0, x // 2, 3 * x + 1)

    @rt.function
    def double(a):
        return a + a * helpers.SCALE

    double.get_concrete_function(rt.TensorSpec([None], rt.float32))
"""

TRACING_ERROR = """
    import runtime as rt

    @rt.function(input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)])
    def broken(x):
        y = x + 1
        return y + undefined_name
"""

IMPORT_ERROR = """
    import runtime as rt
    import no_such_module_anywhere

    @rt.function
    def f(x):
        return x
"""


def _package(tmp_path: Path, **extra: str) -> Path:
    files = {"pkg/__init__.py": "", "pkg/helpers.py": "SCALE = 2\n", "pkg/models.py": GOOD}
    files.update({f"pkg/{name}.py": text for name, text in extra.items()})
    return _write(tmp_path / "src", files)


def _write(root: Path, files: dict[str, str]) -> Path:
    import textwrap
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _ext(directory: Path, name: str) -> Path:
    return directory / extension_filename(name)


def _toolchain(renderer: str) -> str:
    from transpiler.build.hashing import toolchain_fingerprint
    return toolchain_fingerprint({"renderer": renderer})


def _skip_if_toolchain_changed(before: str, renderer: str) -> None:
    """Builds depend on the code of runtime/, transpiler/ and templates/: when those are edited while a test
    runs (concurrent development), "cached" cannot be expected."""
    if _toolchain(renderer) != before:
        pytest.skip("the toolchain (runtime/, transpiler/, templates/) changed during the test")


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(TMP_SUFFIX)]


# -- discovery (static, fast) ---------------------------------------------------------------------------

@pytest.mark.parametrize("source, names", [
    ("import runtime as rt\n@rt.function\ndef f(x): return x\n", ["f"]),
    ("import runtime as rt\n@rt.function(input_signature=[])\ndef f(x): return x\n", ["f"]),
    ("import runtime\n@runtime.function\ndef f(x): return x\n", ["f"]),
    ("import runtime\n@runtime.function(autograph=False)\ndef f(x): return x\n", ["f"]),
    ("from runtime import function\n@function\ndef f(x): return x\n", ["f"]),
    ("from runtime import function as compiled\n@compiled()\ndef g(x): return x\n", ["g"]),
    ("import runtime as tf\ndef f(x): return x\nh = tf.function(f)\n", ["f"]),
    ("import runtime as rt\ndef f(x): return x\nh = rt.function(input_signature=None)(f)\n", ["f"]),
    ("import runtime as rt\nclass M:\n    @rt.function\n    def call(self, x): return x\n", ["call"]),
    ("def outer():\n    import runtime as rt\n    @rt.function\n    def inner(x): return x\n", ["inner"]),
    ("import runtime.polymorphic_function as pf\n@pf.function\ndef f(x): return x\n", ["f"]),
])
def test_discovery_finds_rt_function_forms(source, names):
    assert [f.name for f in scan_source(source).functions] == names


@pytest.mark.parametrize("source", [
    "import numpy as rt\n@rt.function\ndef f(x): return x\n",          # another module under the alias
    "def function(f): return f\n@function\ndef f(x): return x\n",      # a local 'function'
    "import runtime as rt\n@rt.other\ndef f(x): return x\n",
    "import runtime as rt\nx = 'rt.function'\n# @rt.function\n",       # strings and comments
    "import runtime as rt\ndef g(function): return function(1)\n",
])
def test_discovery_ignores_lookalikes(source):
    assert scan_source(source).functions == ()


def test_discovery_reports_lines():
    facts = scan_source("import runtime as rt\n\n\n@rt.function(\n  input_signature=None)\ndef f(x):\n  return x\n")
    assert [(f.name, f.line) for f in facts.functions] == [("f", 4)]


def test_discover_tree_names_and_skips(tmp_path):
    fn = "import runtime as rt\n@rt.function\ndef f(x):\n    return x\n"
    _write(tmp_path, {
        "app/main.py": fn,                       # not a package: root is app/
        "app/plain.py": "x = 1\n",
        "app/lib/__init__.py": "",
        "app/lib/sub/__init__.py": fn,          # a package that defines one
        "app/lib/sub/deep.py": fn,
        "app/.hidden/x.py": fn,
        "app/__pycache__/y.py": fn,
        "app/build/z.py": fn,
        "app/out/w.py": fn,
        "app/broken.py": "import runtime as rt\n@rt.function\ndef f(x:\n",
    })
    errors = []
    found = discover([tmp_path / "app"], exclude=[tmp_path / "app" / "out"], errors=errors)
    app = (tmp_path / "app").resolve()
    assert [(m.name, m.root) for m in found] == [("lib.sub", app), ("lib.sub.deep", app), ("main", app)]
    assert found[0].is_package and found[0].package == "lib.sub"
    assert found[1].package == "lib.sub"
    assert [(p.name, type(e).__name__, e.lineno) for p, e in errors] == [("broken.py", "SyntaxError", 3)]
    # a single file argument
    assert [m.name for m in discover([tmp_path / "app" / "lib" / "sub" / "deep.py"])] == ["lib.sub.deep"]


def test_module_name_for_packages(tmp_path):
    _write(tmp_path, {"a/__init__.py": "", "a/b/__init__.py": "", "a/b/c.py": ""})
    assert module_name_for(tmp_path / "a" / "b" / "c.py") == (tmp_path.resolve(), "a.b.c")
    assert module_name_for(tmp_path / "a" / "b" / "__init__.py") == (tmp_path.resolve(), "a.b")


def test_facts_cache_reuses_and_invalidates(tmp_path):
    path = _write(tmp_path, {"m.py": "import runtime as rt\n@rt.function\ndef f(x): return x\n"}) / "m.py"
    cache_file = tmp_path / "cache.json"
    cache = FactsCache(cache_file)
    assert [f.name for f in cache.facts(path).functions] == ["f"]
    cache.save()
    assert FactsCache(cache_file).facts(path) == cache.facts(path)
    path.write_text("import runtime as rt\n@rt.function\ndef g(x): return x\n")
    assert [f.name for f in FactsCache(cache_file).facts(path).functions] == ["g"]


# -- hashing --------------------------------------------------------------------------------------------

def test_local_dependencies_follow_imports(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/models.py": "import runtime as rt\nfrom . import layers\nfrom .util import x\nimport numpy\n"
                         "@rt.function\ndef f(a): return a\n",
        "pkg/layers.py": "from pkg.sub import deep\n",
        "pkg/util.py": "x = 1\n",
        "pkg/unrelated.py": "y = 2\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "z = 3\n",
    })
    (module,) = discover([tmp_path / "pkg"])
    deps = local_dependencies(module, FactsCache())
    assert sorted(deps) == ["pkg", "pkg.layers", "pkg.sub", "pkg.sub.deep", "pkg.util"]


def test_local_dependencies_stop_at_rt_itself():
    """The examples sit beside runtime/ in a checkout: their ``import runtime`` is rt's, which the toolchain
    fingerprint covers, not a local module to scan and hash (a hundred files)."""
    (module,) = discover([PROJECT / "examples" / "function_basics.py"])
    deps = local_dependencies(module, FactsCache())
    assert deps and not [name for name in deps if name.split(".")[0] in ("runtime", "transpiler")], sorted(deps)


def test_module_hash_tracks_source_and_dependencies(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": "SCALE = 2\n", "pkg/models.py": GOOD,
                          "pkg/other.py": "q = 1\n"})
    (module,) = discover([tmp_path / "pkg"])

    def digest():
        return module_hash(module, FactsCache(), "toolchain")

    first = digest()
    assert digest() == first
    (tmp_path / "pkg" / "other.py").write_text("q = 2\n")          # not imported: same hash
    assert digest() == first
    (tmp_path / "pkg" / "helpers.py").write_text("SCALE = 3\n")     # imported: new hash
    second = digest()
    assert second != first
    (tmp_path / "pkg" / "models.py").write_text((tmp_path / "pkg" / "models.py").read_text() + "\n# edit\n")
    assert digest() not in (first, second)
    assert module_hash(module, FactsCache(), "another toolchain") != digest()


# -- atomic installation --------------------------------------------------------------------------------

def test_install_file_is_atomic_and_leaves_no_temporaries(tmp_path):
    src = tmp_path / "built.so"
    src.write_bytes(b"new")
    dest = tmp_path / "out" / "models.so"
    dest.parent.mkdir()
    dest.write_bytes(b"old")
    stale = dest.with_name(f".{dest.name}.999999999{TMP_SUFFIX}")   # left by a killed build
    stale.write_bytes(b"half")
    remove_stale_temporaries(dest)
    install_file(src, dest)
    assert dest.read_bytes() == b"new"
    assert _temporaries(tmp_path) == []


def test_two_sources_for_one_output_conflict(tmp_path):
    from transpiler.build.driver import _conflicting_outputs, plan
    _write(tmp_path, {"a/models.py": GOOD.replace("from . import helpers", "helpers = None"),
                      "b/models.py": GOOD.replace("from . import helpers", "helpers = None")})
    modules = discover([tmp_path / "a", tmp_path / "b"])
    jobs = plan(modules, tmp_path / "out", FactsCache(), "toolchain", force=False)
    assert [job.dest for job in jobs] == [tmp_path / "out" / extension_filename("models")] * 2
    ((job, first),) = _conflicting_outputs(jobs).values()
    assert (job.module.path.parent.name, first.module.path.parent.name) == ("b", "a")
    assert _conflicting_outputs(plan(modules, None, FactsCache(), "toolchain", force=False)) == {}


def test_format_error_names_file_and_line(tmp_path):
    text = format_error({"file": str(tmp_path / "m.py"), "line": 7, "type": "NameError",
                         "message": "name 'x' is not defined", "stage": "import"})
    assert text.endswith("m.py:7: NameError: name 'x' is not defined")


# -- graph ------------------------------------------------------------------------------------------------

GRAPH_MODULE = """
    import runtime as rt

    @rt.function
    def f(x):
        if rt.reduce_sum(x) > 0:
            y = x * 2
        else:
            y = x - 1
        i = rt.constant(0)
        while i < 3:
            i += 1
        return y + rt.cast(i, rt.float32)

    f.get_concrete_function(rt.TensorSpec([None], rt.float32))

    @rt.function(input_signature=[rt.TensorSpec([2], rt.int32)])
    def g(x):
        return x + 1

    class Model:
        @rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
        def call(self, x):
            return x * 3.0

    @rt.function
    def untraced(x):
        return x
"""


def _show(target: str, **kwargs) -> tuple[int, str, str]:
    from transpiler.build.graph import show_graphs
    out, err = io.StringIO(), io.StringIO()
    status = show_graphs(target, out=out, err=err, **kwargs)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def graph_module(tmp_path, monkeypatch):
    _write(tmp_path, {"graphmod.py": GRAPH_MODULE})
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("graphmod", None)


def test_graph_text(graph_module):
    status, out, _ = _show("graphmod.py:f", optimize=False)
    assert status == 0
    assert out.startswith("f(x)\n  Args:\n    x: float32 Tensor, shape=(None,)")
    assert "graph f(%x: float32[?]) {" in out and "If(" in out and "While(" in out
    status, out, _ = _show("graphmod:g", optimize=False)          # package.module form, input_signature traced
    assert status == 0 and "x: int32 Tensor, shape=(2,)" in out and "AddV2" in out
    status, out, _ = _show("graphmod.py:Model.call", optimize=False)
    assert status == 0 and "call(x)" in out and "Mul" in out


def test_graph_dot(graph_module):
    status, out, _ = _show("graphmod.py:f", fmt="dot", optimize=False)
    assert status == 0
    assert 'digraph "f" {' in out and "subgraph cluster_" in out
    assert 'label="If\\ncond"' in out and 'label="While\\nwhile"' in out
    assert out.count("{") == out.count("}")


def test_graph_errors(graph_module):
    assert _show("graphmod.py:nothing")[0] == 2
    status, _, err = _show("graphmod.py:untraced")
    assert status == 1 and "no input_signature" in err
    assert _show("graphmod.py")[0] == 2
    assert _show("no/such/file.py:f")[0] == 2


# -- building (compiles) ------------------------------------------------------------------------------------

@pytest.mark.build
def test_failing_modules_do_not_stop_the_others(tmp_path, run_cli, standin):
    root = _package(tmp_path, bad=TRACING_ERROR, noimport=IMPORT_ERROR)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run_cli("build", "src", "--renderer", standin, "-j", "2", cwd=tmp_path, env={"TMPDIR": str(scratch)})
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "building pkg.models ... ok" in out
    assert "building pkg.bad ... FAILED" in out and "building pkg.noimport ... FAILED" in out
    bad = os.path.join("src", "pkg", "bad.py")
    assert f"{bad}:6: NameError: name 'undefined_name' is not defined" in out
    noimport = os.path.join("src", "pkg", "noimport.py")
    assert f"{noimport}:2: ModuleNotFoundError: No module named 'no_such_module_anywhere'" in out
    assert "3 modules: 1 built, 2 failed" in out
    log = build_log(_ext(root / "pkg", "pkg.bad"), "pkg.bad")
    assert f"log: {log}" in out and log.is_file()
    assert "Traceback" in log.read_text()
    pkg = root / "pkg"
    assert _ext(pkg, "pkg.models").is_file()
    assert not _ext(pkg, "pkg.bad").exists() and not _ext(pkg, "pkg.noimport").exists()
    assert _temporaries(tmp_path) == []
    assert list(scratch.iterdir()) == []   # build dirs removed (no RT_DEBUG)
    # the Python print ran at build time (tracing), into the log, not the progress output
    assert "Tracing with" not in out
    assert "Tracing with" in build_log(_ext(pkg, "pkg.models"), "pkg.models").read_text()
    written = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix != ".py"
                     and "__pycache__" not in p.parts)
    assert written == [str(_ext(pkg, "pkg.models").relative_to(root))], "only the extension goes into the tree"


@pytest.mark.build
def test_built_extension_is_imported_and_rebuilds_come_from_source(tmp_path, run_cli, import_fresh, standin):
    root = _package(tmp_path)
    assert run_cli("build", "src", "--renderer", standin, cwd=tmp_path).returncode == 0
    probe = import_fresh(root, "pkg.models")
    assert probe.returncode == 0, probe.stderr
    file, built_by = probe.stdout.split()
    assert file == str(_ext(root / "pkg", "pkg.models")) and built_by == "stand-in"
    # a new signature in the source is seen by the next build although the extension shadows the .py
    models = root / "pkg" / "models.py"
    models.write_text(models.read_text() + "double.get_concrete_function(rt.TensorSpec([2, 2], rt.int32))\n")
    result = run_cli("build", "src", "--renderer", standin, "-v", cwd=tmp_path)
    assert result.returncode == 0 and "stand-in: 3 signature(s)" in result.stdout


@pytest.mark.build
def test_incremental_rebuild_and_force(tmp_path, run_cli, standin):
    root = _package(tmp_path, second=GOOD.replace("next_collatz", "other"))
    toolchain = _toolchain(standin)
    first = run_cli("build", "src", "--renderer", standin, cwd=tmp_path)
    assert first.returncode == 0 and first.stdout.count("... ok") == 2
    extension = _ext(root / "pkg", "pkg.models")
    stamp = extension.stat().st_mtime_ns

    started = time.monotonic()
    again = run_cli("build", "src", "--renderer", standin, cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert again.returncode == 0, again.stdout + again.stderr
    _skip_if_toolchain_changed(toolchain, standin)
    assert again.stdout.count("... cached") == 2 and "2 modules: 2 up to date" in again.stdout
    assert elapsed < 10, f"a no-op build took {elapsed:.1f}s"
    assert extension.stat().st_mtime_ns == stamp

    # a local dependency changed: both modules import helpers
    (root / "pkg" / "helpers.py").write_text("SCALE = 5\n")
    changed = run_cli("build", "src", "--renderer", standin, cwd=tmp_path)
    assert changed.stdout.count("... ok") == 2
    # only one module's source changed
    second = root / "pkg" / "second.py"
    second.write_text(second.read_text() + "\n# edited\n")
    one = run_cli("build", "src", "--renderer", standin, cwd=tmp_path)
    assert "building pkg.second ... ok" in one.stdout and "building pkg.models ... cached" in one.stdout
    # a deleted extension is rebuilt
    extension.unlink()
    assert "building pkg.models ... ok" in run_cli("build", "src", "--renderer", standin, cwd=tmp_path).stdout

    forced = run_cli("build", "src", "--renderer", standin, "--force", "-j", "1", cwd=tmp_path)
    assert forced.returncode == 0 and forced.stdout.count("... ok") == 2 and "cached" not in forced.stdout


@pytest.mark.build
def test_outdir_mirrors_the_whole_package(tmp_path, run_cli, standin):
    root = _package(tmp_path)
    _write(root, {"pkg/sub/__init__.py": "VALUE = 1\n",
                  "pkg/sub/layer.py": GOOD.replace("from . import", "from .. import"),
                  "pkg/plain.py": "from .sub import VALUE\nPLAIN = VALUE + 1\n"})
    (root / "pkg" / "data").mkdir()
    (root / "pkg" / "data" / "table.csv").write_text("a,b\n1,2\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "junk.pyc").write_bytes(b"")
    result = run_cli("build", "src", "-o", "out", "--renderer", standin, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == sorted(["pkg/__init__.py", "pkg/helpers.py", "pkg/plain.py", "pkg/data/table.csv",
                            "pkg/sub/__init__.py", str(_ext(Path("pkg"), "pkg.models")),
                            str(_ext(Path("pkg/sub"), "pkg.sub.layer"))]), "no sources of built modules, no litter"
    assert (out / "pkg" / "sub" / "__init__.py").read_text() == "VALUE = 1\n"
    assert not list(root.rglob("*.so")), "nothing is written beside the sources"
    # the OUTDIR tree imports on its own: the built modules and the plain ones they import
    code = ("import sys; sys.path.insert(0, 'out'); import pkg.models, pkg.plain, pkg.sub.layer; "
            "print(pkg.models.BUILT_BY, pkg.sub.layer.BUILT_BY, pkg.plain.PLAIN)")
    probe = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=str(PROJECT)))
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["stand-in", "stand-in", "2"]
    toolchain = _toolchain(standin)
    (root / "pkg" / "data" / "table.csv").write_text("a,b\n3,4\n")
    again = run_cli("build", "src", "-o", "out", "--renderer", standin, cwd=tmp_path)
    _skip_if_toolchain_changed(toolchain, standin)
    assert again.stdout.count("cached") == 2
    assert (out / "pkg" / "data" / "table.csv").read_text() == "a,b\n3,4\n", "changed data is copied again"


@pytest.mark.build
def test_outdir_that_is_a_file_is_a_clear_error(tmp_path, run_cli, standin):
    _package(tmp_path)
    (tmp_path / "out.txt").write_text("not a directory")
    result = run_cli("build", "src", "-o", "out.txt", "--renderer", standin, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == ("error: -o/--outdir: out.txt is a file, not a directory (give the directory "
                                     "the built tree goes into; it is created when missing)")


def test_jobs_that_is_not_a_number_names_the_option(tmp_path, run_cli):
    result = run_cli("build", ".", "-j", "abc", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "argument -j/--jobs: expected a number of parallel builds (1, 2, ...), got 'abc'" in result.stderr
    assert "argument -j/--jobs: must be at least 1, got 0" in run_cli("build", ".", "-j", "0", cwd=tmp_path).stderr


@pytest.mark.build
def test_compile_error_is_reported_with_log(tmp_path, run_cli, uncompilable):
    root = _package(tmp_path)
    result = run_cli("build", "src", "--renderer", uncompilable, cwd=tmp_path)
    assert result.returncode == 1
    assert "building pkg.models ... FAILED" in result.stdout
    assert "the generated code failed to compile" in result.stdout
    assert os.path.join("src", "pkg", "models.py") in result.stdout
    log = build_log(_ext(root / "pkg", "pkg.models"), "pkg.models")
    assert "log: " in result.stdout and log.is_file() and "undefined_in_generated_code" in log.read_text()
    assert not _ext(root / "pkg", "pkg.models").exists() and _temporaries(tmp_path) == []


@pytest.mark.build
def test_syntax_error_is_reported(tmp_path, run_cli, standin):
    _package(tmp_path, syntax="import runtime as rt\n\n@rt.function\ndef f(x:\n    return x\n")
    result = run_cli("build", "src", "--renderer", standin, cwd=tmp_path)
    assert result.returncode == 1
    assert f"{os.path.join('src', 'pkg', 'syntax.py')}:4: SyntaxError: '(' was never closed" in result.stdout
    assert "building pkg.syntax ... FAILED" in result.stdout
    assert "building pkg.models ... ok" in result.stdout


@pytest.mark.build
@pytest.mark.parametrize("whole_group", [False, True], ids=["driver", "terminal-ctrl-c"])
def test_interrupted_build_leaves_no_partial_output(tmp_path, standin, whole_group):
    root = _package(tmp_path, slow="import time\nimport runtime as rt\ntime.sleep(60)\n"
                                   "@rt.function\ndef f(x):\n    return x\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    environment = dict(os.environ, PYTHONPATH=str(PROJECT), TMPDIR=str(scratch))
    process = subprocess.Popen([sys.executable, "-m", "transpiler", "build", "src", "-j", "2",
                                "--renderer", standin], cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               # a Ctrl-C must reach it even when the suite was started with SIGINT ignored (&, nohup)
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not _ext(root / "pkg", "pkg.models").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        if whole_group:  # Ctrl-C in a terminal reaches the driver and its workers
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, out
    assert "interrupted" in out
    assert not _ext(root / "pkg", "pkg.slow").exists()
    assert _temporaries(tmp_path) == []
    assert not build_record(_ext(root / "pkg", "pkg.slow"), "pkg.slow").exists()
    assert list(scratch.iterdir()) == [], "the interrupted worker removed its build directory"


@pytest.mark.build
def test_rt_debug_keeps_the_build_dir(tmp_path, run_cli, import_fresh, rt_cache_dir):
    """With a renderer that hands over Cython (a .pyx, translated to C first)."""
    root = _package(tmp_path)
    result = run_cli("build", "src", "--renderer", STANDIN_PYX, cwd=tmp_path, env={"RT_DEBUG": "1"})
    assert result.returncode == 0
    (line,) = [line for line in result.stdout.splitlines() if "RT_DEBUG:" in line]
    build_dir = Path(line.split(" kept in ", 1)[1].strip())
    assert build_dir == rt_cache_dir.joinpath(*build_dir.relative_to(rt_cache_dir).parts)  # in the cache
    assert (build_dir / "src" / "models.pyx").is_file() and (build_dir / "src" / "models.c").is_file()
    assert import_fresh(root, "pkg.models").stdout.split()[-1] == "stand-in"
    again = run_cli("build", "src", "--renderer", STANDIN_PYX, "--force", cwd=tmp_path, env={"RT_DEBUG": "1"})
    assert again.returncode == 0 and (build_dir / "src" / "models.pyx").is_file()   # replaced, not piled up


@pytest.mark.build
def test_nothing_to_build(tmp_path, run_cli):
    _write(tmp_path, {"plain.py": "x = 1\n"})
    result = run_cli("build", ".", cwd=tmp_path)
    assert result.returncode == 0 and "no modules defining rt.function" in result.stdout
    assert run_cli("build", "missing_dir", cwd=tmp_path).returncode == 2


@pytest.mark.build
def test_real_code_generator_end_to_end(tmp_path, run_cli):
    codegen = pytest.importorskip("transpiler.codegen")
    if not hasattr(codegen, "render_module"):
        pytest.skip("transpiler.codegen.render_module is not available")
    _write(tmp_path, {"models.py": """
        import runtime as rt

        @rt.function(input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)])
        def next_collatz(x):
            return rt.where(x % 2 == 0, x // 2, 3 * x + 1)
    """})
    result = run_cli("build", ".", "-v", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    code = ("import numpy as np, models, runtime as rt; "
            "print(models.next_collatz(rt.constant(np.array([1, 2, 3], np.int32))).numpy().tolist())")
    probe = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(PROJECT)), timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split("\n")[-2] == "[4, 1, 10]"
