"""One collision-free namer for every identifier the converters generate.

All generated names start with the reserved prefix ``rt__``; a user name that
already uses the prefix is never reused.

    >>> namer = Namer({"rt__if_body"})
    >>> namer.new("if_body"), namer.new("if_body")
    ('rt__if_body_1', 'rt__if_body_2')
"""
from __future__ import annotations

import libcst as cst

from transpiler.cst_walk import walk

PREFIX = "rt__"
RUNTIME_MODULE = "rt__"          # the name under which converted code sees runtime.operators


class Namer:
    """Hands out fresh ``rt__`` names that collide neither with the user's names nor with each other."""

    def __init__(self, used: set[str] | None = None):
        self.used: set[str] = set(used or ())
        self.used.add(RUNTIME_MODULE)

    @classmethod
    def for_module(cls, module: cst.CSTNode) -> "Namer":
        """A namer that avoids every identifier already present in ``module``."""
        return cls({n.value for n in walk(module) if isinstance(n, cst.Name)})

    def new(self, base: str) -> str:
        """A fresh name ``rt__<base>`` (``rt__<base>_<n>`` when taken)."""
        base = base[len(PREFIX):] if base.startswith(PREFIX) else base
        name = PREFIX + base
        n = 0
        while name in self.used:
            n += 1
            name = f"{PREFIX}{base}_{n}"
        self.used.add(name)
        return name

    def reserve(self, name: str) -> None:
        self.used.add(name)


def is_generated(name: str) -> bool:
    return name.startswith(PREFIX)
