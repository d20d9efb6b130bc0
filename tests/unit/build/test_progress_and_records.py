"""The build's progress display and its records in the cache directory (no compiler needed)."""
from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

from runtime import aot
from transpiler.cachedir import build_record, build_state_dir, cache_root
from transpiler.build.driver import Outcome, Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _outcome(name: str, status: str = "ok") -> Outcome:
    return Outcome(None, status, 1.25, name=name)


def test_progress_on_a_terminal_draws_one_bar_that_it_redraws(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    out = _Terminal()
    progress = Progress(3, verbose=False, out=out)
    progress.started("pkg.a")
    progress.started("pkg.b")
    progress.show(_outcome("pkg.a"))
    text = out.getvalue()
    assert "[" + "-" * Progress.BAR_WIDTH + "] 0/3  building pkg.a" in text
    assert "\r\x1b[K[1/3] building pkg.a ... ok (1.2s)\n" in text
    assert text.endswith("] 1/3  building pkg.b")
    progress.show(_outcome("pkg.b"))
    progress.show(_outcome("pkg.c", "cached"))
    progress.finish()
    lines = out.getvalue().replace("\r\x1b[K", "\n").splitlines()
    assert [line for line in lines if line.startswith("[") and "building pkg" in line and "..." in line] == [
        "[1/3] building pkg.a ... ok (1.2s)", "[2/3] building pkg.b ... ok (1.2s)", "[3/3] building pkg.c ... cached"]
    assert not out.getvalue().endswith("] 3/3"), "no bar is left behind once every module is done"


def test_progress_elsewhere_prints_plain_lines():
    out = io.StringIO()
    progress = Progress(2, verbose=False, out=out)
    progress.started("pkg.a")
    progress.show(_outcome("pkg.a"))
    progress.show(_outcome("pkg.b", "failed"))
    progress.finish()
    assert out.getvalue() == "[1/2] building pkg.a ... ok (1.2s)\n[2/2] building pkg.b ... FAILED (1.2s)\n"


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RT_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_root() == (tmp_path / "cache").resolve()
    assert build_state_dir(tmp_path / "pkg").parent == (tmp_path / "cache" / "build").resolve()
    assert build_state_dir(tmp_path / "a" / "pkg") != build_state_dir(tmp_path / "b" / "pkg")
    monkeypatch.delenv("RT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == (tmp_path / "xdg" / "rt").resolve()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path(os.path.expanduser("~")).resolve() / ".cache" / "rt"


def _record(tmp_path: Path, inputs: dict[Path, str]) -> Path:
    extension = tmp_path / "pkg" / "models.so"
    extension.parent.mkdir(parents=True, exist_ok=True)
    extension.write_bytes(b"built")
    stat = extension.stat()
    record = build_record(extension, "pkg.models")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({
        "extension_size": stat.st_size, "extension_mtime_ns": stat.st_mtime_ns,
        "inputs": {str(path): hashlib.sha256(text.encode()).hexdigest() for path, text in inputs.items()}}))
    return extension


def test_changed_inputs_compares_the_recorded_hashes(monkeypatch, tmp_path):
    monkeypatch.setenv("RT_CACHE_DIR", str(tmp_path / "cache"))
    source, helper, gone = tmp_path / "pkg" / "models.py", tmp_path / "pkg" / "helpers.py", tmp_path / "gone.py"
    extension = _record(tmp_path, {source: "import helpers\n", helper: "SCALE = 2\n", gone: "x = 1\n"})
    source.write_text("import helpers\n")
    helper.write_text("SCALE = 2\n")
    assert aot.changed_inputs(str(extension), "pkg.models") == []
    helper.write_text("SCALE = 3\n")
    assert aot.changed_inputs(str(extension), "pkg.models") == [str(helper)]
    # a record of another build of this file (the extension was replaced since) says nothing
    extension.write_bytes(b"built again, elsewhere")
    assert aot.changed_inputs(str(extension), "pkg.models") == []
    assert aot.changed_inputs(str(tmp_path / "unknown.so"), "unknown") == []
