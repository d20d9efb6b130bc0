"""The C compiler a module build runs, as setuptools' ``build_ext`` would choose it (standard library only:
``setup.py`` loads this file alone to compile the kernel library's archives with the same command)."""
from __future__ import annotations

import os
import shlex
import sysconfig


def compiler_command() -> tuple[list[str], list[str]]:
    """``(compile-and-link command, its flags)`` for a CPython extension, as setuptools' ``build_ext`` makes it
    from Python's own configuration (``sysconfig``) and the environment: ``LDSHARED`` (``gcc -shared ...``, or
    ``$CC`` in its place) runs the compiler, with ``CFLAGS`` + ``CCSHARED`` and the environment's ``CFLAGS``,
    ``CPPFLAGS`` and ``LDFLAGS``. Python's ``-g`` is turned off (``-g0``) unless ``RT_DEBUG`` is set: debug
    information made a fifth of a small module's compile time."""
    config = sysconfig.get_config_vars()
    cc = os.environ.get("CC") or config.get("CC") or "cc"
    ldshared = os.environ.get("LDSHARED") or config.get("LDSHARED") or f"{cc} -shared"
    if os.environ.get("CC") and not os.environ.get("LDSHARED") and config.get("CC") \
            and ldshared.startswith(config["CC"]):
        ldshared = os.environ["CC"] + ldshared[len(config["CC"]):]     # as distutils' customize_compiler
    flags = shlex.split(config.get("CFLAGS") or "") + shlex.split(config.get("CCSHARED") or "")
    for name in ("CFLAGS", "CPPFLAGS", "LDFLAGS"):
        flags += shlex.split(os.environ.get(name, ""))
    flags.append("-g" if os.environ.get("RT_DEBUG") else "-g0")
    return shlex.split(ldshared), flags


def compiler_of(driver: list[str]) -> list[str]:
    """The compiler of a link command (``gcc`` of ``gcc -shared -L...``, ``ccache gcc`` of ``ccache gcc -shared``):
    its words before the first option."""
    words = []
    for word in driver:
        if word.startswith("-"):
            break
        words.append(word)
    return words or driver[:1]
