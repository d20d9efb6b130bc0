"""The setuptools entry point (``setuptools.finalize_distribution_options``) of the build integration.

setuptools calls ``finalize_distribution_options`` for every distribution it builds in an environment
where rt is installed, so this module stays small (stdlib and setuptools only): it reads the project's
``[tool.rt]`` table and looks for ``RtExtension``s, and only a project that uses one of them loads the
integration itself (``transpiler.build.setuptools_ext``: the build driver, libcst, the runtime).

A ``pyproject.toml`` names what to build::

    [tool.rt]
    build = ["mymodels"]        # directories or .py files, relative to the project
    include-sources = false     # ship the .py of built modules too (default: true)
    from-ledger = true          # also compile the signatures recorded at run time (default: false)
    tf-compat = true            # the modules are written against `import tensorflow as tf` (default: false)
"""
from __future__ import annotations

import os
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    from setuptools.extern import tomli as tomllib

from transpiler.build.extension import RtExtension
from transpiler.lazy import lazy_import

TOOL_TABLE = "rt"

# Loaded only by a project that builds rt modules: the build driver, libcst, the runtime.
setuptools_ext = lazy_import("transpiler.build.setuptools_ext")


def read_config(pyproject: Path) -> dict | None:
    """The ``[tool.rt]`` table of ``pyproject`` (None when absent); raises ``ValueError`` when it is wrong."""
    try:
        with open(pyproject, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return None
    config = data.get("tool", {}).get(TOOL_TABLE)
    if config is None:
        return None
    build = config.get("build")
    if not isinstance(build, list) or not build or not all(isinstance(p, str) for p in build):
        raise ValueError(f"{pyproject}: [tool.{TOOL_TABLE}] build must be a list of package directories or "
                         f".py files, e.g. build = [\"mypackage\"]; got {build!r}")
    include = config.get("include-sources", True)
    if not isinstance(include, bool):
        raise ValueError(f"{pyproject}: [tool.{TOOL_TABLE}] include-sources must be true or false, got {include!r}")
    from_ledger = config.get("from-ledger", False)
    if not isinstance(from_ledger, bool):
        raise ValueError(f"{pyproject}: [tool.{TOOL_TABLE}] from-ledger must be true or false, got {from_ledger!r}")
    tf_compat = config.get("tf-compat", False)
    if not isinstance(tf_compat, bool):
        raise ValueError(f"{pyproject}: [tool.{TOOL_TABLE}] tf-compat must be true or false, got {tf_compat!r}")
    unknown = sorted(set(config) - {"build", "include-sources", "from-ledger", "tf-compat"})
    if unknown:
        raise ValueError(f"{pyproject}: unknown key(s) in [tool.{TOOL_TABLE}]: {', '.join(unknown)} "
                         "(known: build, include-sources, from-ledger, tf-compat)")
    return {"build": build, "include_sources": include, "from_ledger": from_ledger, "tf_compat": tf_compat}


def finalize_distribution_options(dist) -> None:
    """Set up the rt build for a distribution that asks for one, and do nothing for any other."""
    if os.environ.get("RT_BUILDING"):
        # An rt build worker compiling one generated module: its own setuptools run, in the user's project
        # directory, must not start the project's rt build again.
        return
    config = read_config(Path("pyproject.toml"))
    wanted = any(isinstance(ext, RtExtension) for ext in dist.ext_modules or [])
    if config is None and not wanted:
        return
    setuptools_ext.configure(dist, config)
