"""The kernel library's archive: the kernels every module would compile again, compiled once per compiler and flags.

The blocked GEMM's micro-kernels, packing and blocks, and the matrix-vector rows (``rt_gemm.h``) were 1.7 of the
2.3 s gcc took on a three-function module. ``runtime/kernels/rt_kernels_lib.c`` compiles them alone into an
archive named by a hash of the compile command, the compiler and the kernel sources; a module compiled with
``-DRT_KERNELS_EXTERN`` sees their declarations only and links the archive statically (the built extension
stays self-contained: wheels and ``-o`` trees need nothing beside it). The archive is looked up

- in ``runtime/kernels/lib/``, where installing the package (``setup.py``) compiles it for the machine's ISA
  level and the lower ones it supports (``RT_MARCH`` builds of every level find theirs), then
- in the cache (``$RT_CACHE_DIR/kernels/``), where a build compiles it when neither has it (a compiler or flags
  the install did not foresee; parallel builds wait on a lock for the one that compiles it).

When it cannot be compiled, the module inlines those kernels as before (its log says why). This file imports
only the standard library: ``setup.py`` loads it alone.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import fcntl
except ImportError:          # not POSIX: parallel builds may compile the archive twice (the last rename wins)
    fcntl = None

SOURCE = "rt_kernels_lib.c"
EXTERN_FLAG = "-DRT_KERNELS_EXTERN"
INSTALLED = "lib"                # runtime/kernels/lib/: the archives the install compiled


def archive_name(compiler: list[str], flags: list[str], kernels_dir: str | os.PathLike) -> str:
    """``librt_kernels-<hash>.a``: the hash of what the archive's code depends on (the compile command's
    flags, the compiler's version, the kernel sources)."""
    digest = hashlib.sha256()
    for part in (compiler, flags, _compiler_version(tuple(compiler))):
        digest.update(repr(part).encode("utf-8"))
    for path in sorted(Path(kernels_dir).glob("rt_*.[ch]")):
        digest.update(path.name.encode("utf-8"))
        digest.update(path.read_bytes())
    return f"librt_kernels-{digest.hexdigest()[:20]}.a"


def compile_archive(compiler: list[str], flags: list[str], kernels_dir: str | os.PathLike, dest: Path) -> None:
    """Compile the library into the archive ``dest`` (written under a temporary name, then renamed into
    place); raises ``RuntimeError`` with the compiler's messages when it fails."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    obj = dest.with_name(f".{dest.stem}.{os.getpid()}.o")
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        _run(compiler + flags + [f"-I{kernels_dir}", "-c", str(Path(kernels_dir) / SOURCE), "-o", str(obj)])
        _run(shlex.split(os.environ.get("AR") or sysconfig.get_config_var("AR") or "ar") + ["rcs", str(tmp), str(obj)])
        os.replace(tmp, dest)
    finally:
        for path in (obj, tmp):
            if path.exists():
                path.unlink()


def archive_for(compiler: list[str], flags: list[str], kernels_dir: str | os.PathLike, cache: Path) -> Path | None:
    """The archive for modules compiled by ``compiler`` with ``flags``: the installed one, else the one in
    ``cache`` (rt's cache directory; compiled now if needed). None when it cannot be compiled: the module then
    inlines the kernels."""
    name = archive_name(compiler, flags, kernels_dir)
    installed = Path(kernels_dir) / INSTALLED / name
    if installed.is_file():
        return installed
    cached = cache / "kernels" / name
    if cached.is_file():
        return cached
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with _locked(cached.with_suffix(".lock")):
            if not cached.is_file():
                print(f"compiling the kernel library into {cached}", flush=True)
                compile_archive(compiler, flags, kernels_dir, cached)
    except (OSError, RuntimeError) as e:
        print(f"the kernel library was not compiled ({e}): this module inlines its kernels", file=sys.stderr,
              flush=True)
        return None
    return cached


def install(compiler: list[str], flag_sets: list[list[str]], kernels_dir: str | os.PathLike, into: Path) -> list[Path]:
    """Compile the archive for each of ``flag_sets`` into ``into`` (the install's ``runtime/kernels/lib``), the
    compilers running in parallel; returns the archives. Stale archives there (other sources) are removed."""
    into.mkdir(parents=True, exist_ok=True)
    wanted = {archive_name(compiler, flags, kernels_dir): flags for flags in flag_sets}
    for old in into.glob("librt_kernels-*.a"):
        if old.name not in wanted:
            old.unlink()
    todo = [(into / name, flags) for name, flags in wanted.items() if not (into / name).is_file()]
    if todo:
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            list(pool.map(lambda job: compile_archive(compiler, job[1], kernels_dir, job[0]), todo))
    return [into / name for name in wanted]


@functools.lru_cache(maxsize=None)
def _compiler_version(compiler: tuple[str, ...]) -> str:
    try:
        result = subprocess.run([compiler[0], "--version"], capture_output=True, text=True, check=False)
        return result.stdout.splitlines()[0] if result.stdout else compiler[0]
    except OSError:
        return compiler[0]


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({result.returncode}):\n{result.stderr}")


class _locked:
    """An exclusive lock on ``path`` (fcntl.flock) while the block runs; no lock where flock is missing."""

    def __init__(self, path: Path):
        self.path = path
        self.file = None

    def __enter__(self):
        if fcntl is None:
            return self
        self.file = open(self.path, "a+b")
        fcntl.flock(self.file.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.file is not None:
            self.file.close()
        return False
