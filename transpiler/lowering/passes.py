"""The passes over a lowered function's IR: ``PASSES``, run in order by ``run_passes``.

Each pass is a function ``pass_(fn) -> bool`` that edits the ``Function`` in place (its nested blocks too)
and says whether it changed anything.
"""
from __future__ import annotations

from collections.abc import Callable

from transpiler.lowering.epilogue import fuse_epilogues
from transpiler.lowering.ir import Function
from transpiler.lowering.merge import merge_loops

Pass = Callable[[Function], bool]

PASSES: list[tuple[str, Pass]] = [
    # First: adjacent nests over the same elements become one (an optimizer's updates of a weight), so that the
    # epilogue pass sees one nest after a product where there were several.
    ("merge_loops", merge_loops),
    # After merging: a nest reading a GEMM's result runs on each of its parallel blocks; it moves statements
    # around the product, which would separate nests that merging joins.
    ("fuse_epilogues", fuse_epilogues),
]

PASS_NAMES = [name for name, _ in PASSES]


def run_passes(fn: Function, passes: list[tuple[str, Pass]] | None = None) -> Function:
    """Run ``passes`` (default ``PASSES``) over ``fn`` in order."""
    for _, pass_ in PASSES if passes is None else passes:
        pass_(fn)
    return fn
