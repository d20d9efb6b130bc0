"""``RtExtension``: the setuptools extension of one Python module whose ``rt.function``s are built.

A module of its own, below both halves of the setuptools integration: the entry point
(``setuptools_hook``, loaded by every setuptools run) looks for these, and ``setuptools_ext``
(the build itself) makes and builds them.
"""
from __future__ import annotations

from setuptools import Extension


class RtExtension(Extension):
    """The extension module of one Python module that defines ``rt.function``s.

    ``sources`` is the module's ``.py`` file: ``python -m transpiler build`` traces it and generates and
    compiles the extension's code during ``build_ext``. With ``include_sources=False`` the ``.py`` is left
    out of the built package (the extension is self-contained). With ``from_ledger=True`` the build adds the
    signatures the module recorded at run time (``python -m transpiler build --from-ledger``). With
    ``tf_compat=True`` the module is written against ``import tensorflow as tf`` (``build --tf-compat``).
    """

    def __init__(self, name: str, source: str, include_sources: bool = True, from_ledger: bool = False,
                 tf_compat: bool = False):
        super().__init__(name, [source])
        self.rt_source = source
        self.include_sources = include_sources
        self.from_ledger = from_ledger
        self.tf_compat = tf_compat
