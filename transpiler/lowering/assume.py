"""What a function over ``None`` dims may assume of its sizes, so that its code is as good as static code.

Run-time dims that nothing relates are separate symbols: ``cr + ci`` over two ``[None, None]`` inputs
computes a broadcast size per op and checks it, a loop variable gets fresh dims every iteration, and
kernels over different symbols can neither merge nor share an index. Two kinds of facts remove that:

- **Entry equalities** (assumed, then guarded): input dims that the program broadcasts, multiplies or
  concatenates against each other are assumed equal; the function is lowered with one symbol for each
  class, and its entry checks the assumption (``Function.guard``) and calls a version lowered without it
  (``Function.fallback``) when it fails, as with ``x [n, m] + y [1, m]``.
- **Loop-invariant dims** (proven): a loop variable's dims are assumed to be those it enters the loop
  with; if the body, lowered under that assumption, gives the next value the same dims, the assumption
  holds by induction (no run-time check). Otherwise that dim is *varying* and gets a symbol of its own.

``discover`` finds both by lowering the function repeatedly until nothing new is learnt (unions only grow,
varying dims only grow, so it ends); the last round's ``Assumptions`` then drive the real lowering.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_ROUNDS = 16          # lowerings before giving up (then: no entry equalities, every loop dim varying)


@dataclass
class Assumptions:
    """Entry-dim classes (``key`` is ``(k, d)`` for dim ``d`` of ``in[k]``) and loop dims known to vary.

    ``unions``: whether entry equalities may be assumed at all (False for a guarded function's fallback).
    ``learning``: while discovering, new facts are recorded (and ``changed`` set) instead of being errors.
    """
    unions: bool = True
    learning: bool = False
    parent: dict = field(default_factory=dict)
    varying: set = field(default_factory=set)
    changed: bool = False

    def find(self, key: tuple) -> tuple:
        while self.parent.get(key, key) != key:
            key = self.parent[key]
        return key

    def union(self, keys) -> None:
        """Record that entry dims ``keys`` are assumed equal."""
        roots = sorted({self.find(k) for k in keys})
        for other in roots[1:]:
            self.parent[other] = roots[0]
            self.changed = True

    def vary(self, key) -> None:
        if key not in self.varying:
            self.varying.add(key)
            self.changed = True

    def guard(self) -> list[tuple[tuple, tuple]]:
        """(dim, representative) pairs the function's entry must find equal."""
        return sorted(((k, self.find(k)) for k in self.parent if self.find(k) != k), key=lambda p: p[0])


def discover(lower, unions: bool = True) -> Assumptions:
    """The fixpoint of ``lower(assumptions)`` (a function lowering the graph under them in learning mode)."""
    assume = Assumptions(unions=unions, learning=True)
    for _ in range(MAX_ROUNDS):
        assume.changed = False
        lower(assume)
        if not assume.changed:
            assume.learning = False
            return assume
    return Assumptions(unions=False, varying={"*"})
