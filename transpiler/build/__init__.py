"""The ahead-of-time build: ``python -m transpiler build PATH...``.

Finds (statically) the modules that define ``rt.function``s, imports each from source in its own
process, renders it with ``transpiler.codegen.render_module``, compiles it with Cython + setuptools
and installs the extension atomically beside the source (or under OUTDIR). Content hashes make
unchanged modules free. The driver is ``transpiler.build.driver.build``.

This package's ``__init__`` imports nothing: setuptools loads ``transpiler.build.setuptools_hook`` in
every run, and each build worker (``python -m transpiler.build.worker``) starts light.

Example:
    >>> from transpiler.build.driver import build
    >>> build(["examples/"])  # doctest: +SKIP
    0
"""
