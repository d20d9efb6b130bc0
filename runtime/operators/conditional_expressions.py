"""``a if c else b``: Python for Python conditions, ``rt.cond`` for symbolic ones."""
from __future__ import annotations

from runtime.ops import api as rt
from runtime.tensor import is_symbolic


def if_exp(cond, if_true, if_false, expr_repr: str = "condition"):
    if is_symbolic(cond):
        return rt.cond(cond, if_true, if_false)
    return if_true() if cond else if_false()
