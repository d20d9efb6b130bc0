"""The ahead-of-time build: ``python -m transpiler build PATH...``.

Finds (statically) the modules that define ``rt.function``s, imports each from source in its own
process, renders it with ``transpiler.codegen.render_module``, compiles it with Cython + setuptools
and installs the extension atomically beside the source (or under OUTDIR). Content hashes make
unchanged modules free.

Example:
    >>> from transpiler.build import build
    >>> build(["examples/"])  # doctest: +SKIP
    0
"""
__all__ = ["build", "discover", "scan_source", "ModuleInfo"]


def __getattr__(name):
    # Lazy, so that ``python -m transpiler.build.worker`` does not import the driver first.
    if name == "build":
        from transpiler.build.driver import build
        return build
    if name in ("discover", "scan_source", "ModuleInfo"):
        from transpiler.build import discovery
        return getattr(discovery, name)
    raise AttributeError(f"module 'transpiler.build' has no attribute {name!r}")
