"""The graph optimizer: ``optimize(graph)`` returns an optimized copy; ``PASSES`` is the pipeline.

Each pass is a function ``pass_(graph) -> bool`` in its own file, editing a graph (and the graphs
nested in its ``If``/``While`` ops) in place and saying whether it changed anything. Every pass keeps
the results the reference executor computes identical (tests/unit/optimizer runs each one
differentially and ``graph.verify()``s after it).

Example:
    >>> import numpy as np
    >>> import runtime as rt
    >>> from runtime.executor import run_graph
    >>> @rt.function(autograph=False)
    ... def f(x):
    ...     return x * (rt.constant(2.0) + 1.0) + 0.0 * 1.0
    >>> graph = f.get_concrete_function(rt.TensorSpec([2], rt.float32)).graph
    >>> small = optimize(graph)
    >>> len(small.operations) < len(graph.operations)
    True
    >>> run_graph(small, [np.ones(2, np.float32)])[0].tolist()
    [3.0, 3.0]
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from runtime.graph import Graph
from runtime.optimizer.clone import clone_graph
from runtime.optimizer.cse import cse
from runtime.optimizer.expand_composites import expand_composites
from runtime.optimizer.fold_constants import fold_constants
from runtime.optimizer.hoist_loop_invariants import hoist_loop_invariants
from runtime.optimizer.prune import prune
from runtime.optimizer.rewrite import subgraphs_first
from runtime.optimizer.simplify_arithmetic import simplify_arithmetic

Pass = Callable[[Graph], bool]

PASSES: list[tuple[str, Pass]] = [
    # First: later passes then only look at ops that run (and folding skips dead expensive constants).
    ("prune", prune),
    # Before folding and CSE: the primitive ops a composite op expands into fold and merge like the others.
    ("expand_composites", expand_composites),
    # Before CSE: folded constants with equal values then merge into one Const.
    ("fold_constants", fold_constants),
    # Before simplification: x*1 patterns see one shared Const, and equal subtrees are already one.
    ("cse", cse),
    # After folding: constants computed from constants (1.0 * 1.0) are already plain Consts.
    ("simplify_arithmetic", simplify_arithmetic),
    # Last: moves out only what folding/CSE/simplification left in the loop; the next round of the
    # pipeline folds and merges what it moved into the outer graph.
    ("hoist_loop_invariants", hoist_loop_invariants),
]

PASS_NAMES = [name for name, _ in PASSES]

MAX_ROUNDS = 4


def optimize(graph: Graph, passes: Iterable[str] | str | None = None) -> Graph:
    """An optimized copy of ``graph``: the ``passes`` (names in ``PASS_NAMES``, default all; a
    comma-separated string is accepted) run in pipeline order until nothing changes (at most
    ``MAX_ROUNDS`` rounds). ``graph`` itself is not modified. With ``RT_DEBUG`` set, ``verify()``
    checks the graph after every pass (one that says it changed nothing too: it may be wrong)."""
    selected = _select(passes)
    copy = clone_graph(graph)
    check = bool(os.environ.get("RT_DEBUG"))
    for _ in range(MAX_ROUNDS):
        changed = False
        for name, pass_ in selected:
            if pass_(copy):
                changed = True
                for g in subgraphs_first(copy):
                    g.drop_plans()
            if check:
                _verify_after(copy, name)
        if not changed:
            break
    return copy


def _verify_after(graph: Graph, pass_name: str) -> None:
    try:
        graph.verify()
    except ValueError as e:
        raise ValueError(f"the graph is malformed after the optimization pass {pass_name!r}: {e}") from None


def _select(passes) -> list[tuple[str, Pass]]:
    if passes is None:
        return list(PASSES)
    if isinstance(passes, str):
        passes = [p for p in passes.split(",") if p.strip()]
    wanted = [p.strip() for p in passes]
    unknown = [p for p in wanted if p not in PASS_NAMES]
    if unknown:
        raise ValueError(f"unknown optimization pass(es) {', '.join(unknown)}; "
                         f"the passes are {', '.join(PASS_NAMES)}")
    return [(name, fn) for name, fn in PASSES if name in wanted]


__all__ = [
    "PASSES",
    "PASS_NAMES",
    "clone_graph",
    "cse",
    "expand_composites",
    "fold_constants",
    "hoist_loop_invariants",
    "optimize",
    "prune",
    "simplify_arithmetic",
]
