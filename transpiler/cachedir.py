"""Where rt keeps its own files: build records, build logs, kept debug builds.

It is ``transpiler.cachedir``, not part of ``runtime``: the build driver reads records here, and importing any
``runtime`` submodule runs the package's ``__init__`` (numpy, the graph, AutoGraph: 0.23 s of a 0.27 s no-op
rebuild). Built modules and the runtime import it from here too.

Never in the user's tree: under ``$RT_CACHE_DIR`` when it is set, otherwise under the user cache
(``$XDG_CACHE_HOME/rt`` or ``~/.cache/rt``). The build keeps one directory per output directory
(``build/<name>-<hash of its path>/``), holding for each module it built a record
(``<module>.json``: build hash, the source files it depends on and their content hashes, the installed
extension's size and time stamp) and the log of its last build (``<module>.log``). A built module reads its
record on import to tell whether the modules it imports changed since the build.

A built module's signature ledger (what it traced at run time, for ``build --from-ledger``) is
``ledger/<module>-<hash of its source's path>.jsonl``: keyed by the source, so that the module records into
the same ledger wherever its extension was built to (beside the source, ``-o OUTDIR``, a wheel).

Example:
    >>> import os
    >>> os.environ["RT_CACHE_DIR"] = "/tmp/rt-cache"
    >>> str(cache_root())
    '/tmp/rt-cache'
    >>> str(build_record("/src/pkg/models.so", "pkg.models")).startswith("/tmp/rt-cache/build/pkg-")
    True
    >>> del os.environ["RT_CACHE_DIR"]
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

CACHE_ENV = "RT_CACHE_DIR"


def cache_root() -> Path:
    """The root of rt's cache: ``$RT_CACHE_DIR``, ``$XDG_CACHE_HOME/rt`` or ``~/.cache/rt``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).resolve() / "rt"


def build_state_dir(directory: str | os.PathLike) -> Path:
    """The cache directory for the build outputs that go into ``directory`` (records, logs, debug files)."""
    directory = Path(os.path.abspath(directory))
    digest = hashlib.sha256(str(directory).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache_root() / "build" / f"{directory.name or 'root'}-{digest}"


def build_record(extension: str | os.PathLike, module_name: str) -> Path:
    """The record of the build that installed ``extension`` (the file of module ``module_name``)."""
    return build_state_dir(Path(os.path.abspath(extension)).parent) / f"{module_name}.json"


def build_log(extension: str | os.PathLike, module_name: str) -> Path:
    """The log of the last build of ``extension``."""
    return build_state_dir(Path(os.path.abspath(extension)).parent) / f"{module_name}.log"


def ledger_path(source: str | os.PathLike, module_name: str) -> Path:
    """The signature ledger of module ``module_name`` built from ``source`` (one JSON object a line, see
    ``append_ledger``)."""
    digest = hashlib.sha256(os.path.abspath(source).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache_root() / "ledger" / f"{module_name}-{digest}.jsonl"


LEDGER_MAX_BYTES = 4 << 20     # a ledger stops growing here (`python -m transpiler ledger --clear` empties it)


def append_ledger(path: str | os.PathLike, record: dict) -> None:
    """Append ``record`` (with the time and process id added) to the ledger at ``path`` as one line.

    One ``write`` on a file opened with ``O_APPEND``: lines of processes writing at once do not interleave,
    and a reader skips a line it cannot parse (a crash mid-write). A ledger of ``LEDGER_MAX_BYTES`` takes no
    more. Raises ``OSError`` when the file cannot be written; the caller decides whether that matters (a call
    must not fail for it).
    """
    line = json.dumps({**record, "time": round(time.time(), 3), "pid": os.getpid()}, separators=(",", ":"))
    path = Path(path)
    try:
        if path.stat().st_size >= LEDGER_MAX_BYTES:
            return
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def read_ledger(path: str | os.PathLike) -> list[dict]:
    """The records of the ledger at ``path`` (empty when there is none), unreadable lines skipped."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("function"), str) and "signature" in record:
            records.append(record)
    return records
