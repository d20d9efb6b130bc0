"""Testing built modules: the checker behind ``pytest --rt-check PKG`` and the ``rt_built`` fixture.

``transpiler.testing.check`` compares each built signature with the traced and eager runs on inputs
that hypothesis generates from the signature; ``transpiler.testing.pytest_plugin`` is the pytest plugin
(registered as the ``pytest11`` entry point ``rt``).
"""
