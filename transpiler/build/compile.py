"""Compile a rendered module (Cython + setuptools) and install the extension atomically.

The compile happens in a private build directory; the finished extension is copied next to its
destination under a hidden temporary name and then ``os.replace``d into place, so an interrupted build
never leaves a half-written extension where Python would import it.
"""
from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

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
    """Cythonize and compile ``rendered`` (a ``render_module`` result) into an extension named
    ``module_name``; returns the path of the built file inside ``build_dir``.

    Cython and compiler messages go to this process's stdout/stderr (the build log).
    """
    from Cython.Build import cythonize
    from setuptools import Extension
    from setuptools.dist import Distribution

    src = build_dir / "src"
    src.mkdir(parents=True, exist_ok=True)
    write_files(dict(rendered.files), src)
    pyx = src / rendered.pyx
    if not pyx.is_file():
        raise FileNotFoundError(f"render_module named {rendered.pyx!r} as the main .pyx, but did not render it")
    include_dirs = [str(d) for d in (getattr(rendered, "include_dirs", None) or [])]
    extension = Extension(
        module_name, [str(pyx)],
        include_dirs=include_dirs + [str(src)],
        extra_compile_args=list(getattr(rendered, "extra_compile_args", None) or []),
        extra_link_args=list(getattr(rendered, "extra_link_args", None) or []),
        libraries=list(getattr(rendered, "libraries", None) or []),
    )
    extensions = cythonize(
        [extension], language_level=3, include_path=[str(src)] + include_dirs, force=True, quiet=True,
        annotate=bool(os.environ.get("RT_DEBUG")),
    )
    distribution = Distribution({"name": module_name, "ext_modules": extensions})
    distribution.script_name = "rt-build"
    command = distribution.get_command_obj("build_ext")
    command.build_lib = str(build_dir / "lib")
    command.build_temp = str(build_dir / "tmp")
    command.inplace = False
    command.ensure_finalized()
    command.run()
    built = Path(command.get_ext_fullpath(module_name))
    if not built.is_file():
        raise FileNotFoundError(f"the compiler reported success but {built} does not exist")
    return built


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
