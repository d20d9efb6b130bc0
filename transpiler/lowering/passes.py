"""The passes over a lowered function's IR: ``PASSES``, run in order by ``run_passes``.

Each pass is a function ``pass_(fn) -> bool`` that edits the ``Function`` in place (its nested blocks too)
and says whether it changed anything. With ``RT_DEBUG`` or ``RT_VERIFY_IR`` set (the tests set the latter),
``verify`` checks the function after lowering and after every pass (one that says it changed nothing too:
it may be wrong).
"""
from __future__ import annotations

import os
from collections.abc import Callable

from transpiler.lowering.epilogue import fuse_epilogues
from transpiler.lowering.ir import Function
from transpiler.lowering.lanes import peel_tails, sum_lanes
from transpiler.lowering.merge import merge_loops
from transpiler.lowering.pipeline import pipeline_rows
from transpiler.lowering.unit import unit_inner
from transpiler.lowering.verify import IRError, verify

Pass = Callable[[Function], bool]

PASSES: list[tuple[str, Pass]] = [
    # First: adjacent nests over the same elements become one (an optimizer's updates of a weight), so that the
    # epilogue pass sees one nest after a product where there were several.
    ("merge_loops", merge_loops),
    # After merging: a nest reading a GEMM's result runs on each of its parallel blocks; it moves statements
    # around the product, which would separate nests that merging joins.
    ("fuse_epilogues", fuse_epilogues),
    # A nest whose inner extent is known at run time only, when that extent is one: one vectorised loop (an
    # [n, 1] column declared [None, None]).
    ("unit_inner", unit_inner),
    # Last: they split a row's loops, which the passes above would no longer recognise; the sums of a row's
    # whole vectors and of its last one share their lanes.
    ("peel_tails", peel_tails),
    ("sum_lanes", sum_lanes),
    # After the row's loops have their final shape: a parallel row loop computes the next row's leading
    # reductions while it finishes this row.
    ("pipeline_rows", pipeline_rows),
]

PASS_NAMES = [name for name, _ in PASSES]


def verifying() -> bool:
    """Whether the IR is verified after lowering and after each pass."""
    return bool(os.environ.get("RT_DEBUG") or os.environ.get("RT_VERIFY_IR"))


def run_passes(fn: Function, passes: list[tuple[str, Pass]] | None = None) -> Function:
    """Run ``passes`` (default ``PASSES``) over ``fn`` in order, verifying it between them when asked to."""
    check = verifying()
    if check:
        checked(fn, "lowering")
    for name, pass_ in PASSES if passes is None else passes:
        pass_(fn)
        if check:
            checked(fn, f"the pass {name!r}")
    return fn


def checked(fn: Function, stage: str) -> None:
    try:
        verify(fn)
    except IRError as e:
        raise IRError(f"the loop IR is malformed after {stage}: {e}") from None
