"""Compile a rendered module (C, or Cython then C) and install the extension atomically.

The compile happens in a private build directory; the finished extension is copied next to its
destination under a hidden temporary name and then ``os.replace``d into place, so an interrupted build
never leaves a half-written extension where Python would import it.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from transpiler.cachedir import cache_root
from transpiler.build import kernel_library
from transpiler.build.toolchain import compiler_command, compiler_of

# Temporary files beside a destination are named ``.<final name>.<pid>.rt-tmp``.
TMP_SUFFIX = ".rt-tmp"


def extension_filename(module_name: str, is_package: bool = False) -> str:
    """The file name CPython imports ``module_name`` from (``models.cpython-311-x86_64-linux-gnu.so``).

    Example:
        >>> extension_filename("pkg.models").startswith("models.")
        True
    """
    stem = "__init__" if is_package else module_name.rpartition(".")[2]
    return stem + sysconfig.get_config_var("EXT_SUFFIX")


def write_files(files: dict[str, str | bytes], directory: Path) -> None:
    """Write the rendered ``files`` (name -> text) into ``directory``."""
    for name, content in files.items():
        path = directory / name
        if directory.resolve() not in path.resolve().parents:
            raise ValueError(f"rendered file name escapes the build directory: {name!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def compile_extension(rendered, module_name: str, build_dir: Path) -> Path:
    """Compile ``rendered`` (a ``render_module`` result) into an extension named ``module_name``; returns the
    path of the built file inside ``build_dir``.

    ``rendered.source`` names the main file among ``rendered.files``: C (the code generator's modules: the
    CPython glue of ``templates/module.c.tmpl`` and the generated functions), or Cython (``.pyx``, which
    Cython translates to C first; ``rendered.pyx`` is the older name of the attribute). One compiler process
    compiles and links it (no setuptools in between: its command objects cost half a second a module).
    The commands and the compiler's messages go to this process's stdout/stderr (the build log).
    """
    src = build_dir / "src"
    src.mkdir(parents=True, exist_ok=True)
    write_files(dict(rendered.files), src)
    main_name = getattr(rendered, "source", None) or getattr(rendered, "pyx", None)
    main = src / str(main_name)
    if not main_name or not main.is_file():
        raise FileNotFoundError(f"the renderer named {main_name!r} as the main source, but did not render it")
    include_dirs = [str(d) for d in (getattr(rendered, "include_dirs", None) or [])]
    if main.suffix == ".pyx":
        main = _cythonize(main, module_name, include_dirs + [str(src)])
    elif main.suffix != ".c":
        raise ValueError(f"cannot compile {main.name}: the main source is C (.c) or Cython (.pyx)")
    lib = build_dir / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    built = lib / extension_filename(module_name)
    driver, flags = compiler_command()
    includes = [f"-I{d}" for d in include_dirs + [str(src), sysconfig.get_paths()["include"],
                                                    sysconfig.get_paths()["platinclude"]]]
    compile_args = list(getattr(rendered, "extra_compile_args", None) or [])
    archives = []
    kernels = getattr(rendered, "kernel_library", None)
    if kernels:             # the kernels compiled once (kernel_library.py), linked instead of compiled again
        archive = kernel_library.archive_for(compiler_of(driver), flags + compile_args, kernels, cache_root())
        if archive is not None:
            compile_args.append(kernel_library.EXTERN_FLAG)
            archives.append(str(archive))
    command = (driver + flags + includes + compile_args + [main.name] + archives + ["-o", str(built)]
               + list(getattr(rendered, "extra_link_args", None) or [])
               + [f"-l{name}" for name in (getattr(rendered, "libraries", None) or [])])
    print(shlex.join(command), flush=True)
    # in the source directory: an assembler .incbin names a file beside the source
    result = subprocess.run(command, cwd=src, check=False, stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stderr.write(result.stderr)          # the build log keeps the compiler's messages
    sys.stderr.flush()
    if result.returncode != 0:
        raise CompileError(f"{shlex.join(command[:1])} failed with exit status {result.returncode}",
                           result.stderr)
    if not built.is_file():
        raise FileNotFoundError(f"the compiler reported success but {built} does not exist")
    return built


class CompileError(RuntimeError):
    """The C compiler (or Cython) failed; its messages are in the build log and in ``messages``."""

    def __init__(self, text: str, messages: str = ""):
        super().__init__(text)
        self.messages = messages


def _cythonize(pyx: Path, module_name: str, include_path: list[str]) -> Path:
    """Translate a ``.pyx`` to C with Cython (imported only here: the code generator's modules do not need it)."""
    from Cython.Build import cythonize
    from setuptools import Extension

    extension = Extension(module_name, [str(pyx)])
    cythonize([extension], language_level=3, include_path=include_path, force=True, quiet=True,
              annotate=bool(os.environ.get("RT_DEBUG")))
    c_file = pyx.with_suffix(".c")
    if not c_file.is_file():
        raise CompileError(f"Cython did not translate {pyx.name}")
    return c_file


def temporary_name(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}.{os.getpid()}{TMP_SUFFIX}")


def remove_stale_temporaries(dest: Path) -> None:
    """Remove temporaries of ``dest`` left by killed builds (not those of live processes)."""
    for tmp in dest.parent.glob(f".{dest.name}.*{TMP_SUFFIX}"):
        pid = tmp.name[len(dest.name) + 2:-len(TMP_SUFFIX)]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue
        try:
            tmp.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def install_file(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` atomically: a reader sees either the old file or the complete new one."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(dest)
    try:
        with open(src, "rb") as reader, open(tmp, "wb") as writer:
            shutil.copyfileobj(reader, writer)
            writer.flush()
            os.fsync(writer.fileno())
        shutil.copymode(src, tmp)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text_atomically(dest: Path, text: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(dest)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
