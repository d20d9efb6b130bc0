"""The pass ``unit_inner``: a loop nest whose innermost extent is known only at run time gets a version for an
extent of one.

A ``[None, None]`` input that holds a column (a regression's targets ``[n, 1]``) makes every nest over it two
loops, the inner one of a single iteration: the outer loop runs one element at a time, and a broadcast
operand's index ``i * n2`` is a stride the C compiler cannot vectorise. Static code knows the extent is one and
has a single vectorised loop. So the nest runs, when its inner extent is one at run time, as that loop:

    for i in n1 [parallel]:                  if n2 == 1:
      for j in n2 [simd]:            ->        for i in n1 [parallel, simd]:
        y[i * n2 + j] = x[i * n2 + j]            y[i] = x[i]
                                             else:
                                               (the nest)

The outer loop's iterations are independent (it may run in parallel) and the inner one's too (it is
vectorised), so one loop over both is vectorisable; the inner index is 0 and the extent 1 in its body. Other
nests under a parallel loop (a row reduction's chunks and remainder over the extent) get the same loops with the
extent 1, which the C compiler folds to straight-line code. A regression trained in a tensor loop over such a
target ran 2.4x its static spelling (its gradient's SumToShape over the broadcast column among the nests), now
1.3-1.7x.

Inside a version, what the extent 1 makes known is folded: a serial loop around a one-iteration vectorised
reduction (a mean's rows, each reduced over its one column) becomes that reduction vectorised over the rows; a
row sum's chunk count (``extent / 512``) is 0 and its one-iteration remainder straight-line code, so the loop
over rows is vectorised as well. The regression over ``[None, None]`` targets: 1.9x -> 1.15x its static spelling.
"""
from __future__ import annotations

from copy import deepcopy

from transpiler.lowering.ir import Arith, Assign, Compare, Declare, For, Function, If, Lit, Poly, walk_stmts
from transpiler.lowering.kernels import substitute


def unit_inner(fn: Function) -> bool:
    """Give each qualifying nest of ``fn`` (and of its fallback) its unit-extent version, in place."""
    changed = False
    for f in (fn, fn.fallback):
        if f is not None:
            changed |= _version_block(f.body)
    return changed


def _version_block(block: list, chosen: frozenset = frozenset()) -> bool:
    """``chosen``: the symbols the enclosing ``if``s compare with a constant; a nest already chosen by its extent
    (a row group's versions for short rows: ``n <= 16``) is left as it is."""
    changed = False
    for i, s in enumerate(block):
        extent = _unit_candidate(s) if isinstance(s, For) else None
        if extent is not None and extent not in chosen:
            block[i] = If(Compare("==", Poly.sym(extent), Lit(1, "int64_t")), [_unit_version(s, extent)], [s])
            changed = True
            continue
        inner = chosen | _bounded(s.cond) if isinstance(s, If) else chosen
        for b in s.blocks():
            changed |= _version_block(b, inner)
    return changed


def _bounded(cond) -> frozenset:
    """The symbols ``cond`` compares with a constant."""
    known = cond.with_constant() if isinstance(cond, Compare) else None
    return frozenset(known[0].symbols()) if known is not None else frozenset()


def _unit_candidate(outer: For) -> str | None:
    """The run-time extent ``outer``'s inner loops run to (a symbol set outside it: a dim), when ``outer`` is a
    parallel-capable loop (its iterations independent) that is not vectorised itself; None otherwise."""
    if outer.parallel is None or outer.simd or outer.reductions:
        return None
    local = {s.name for s in walk_stmts(outer.body) if isinstance(s, (Declare, Assign))}
    for s in reversed(list(walk_stmts(outer.body))):
        if isinstance(s, For) and s.stop.const is None and len(s.stop.symbols()) == 1:
            name = next(iter(s.stop.symbols()))
            if s.stop == Poly.sym(name) and name not in local and name != outer.var:
                return name
    return None


def _unit_version(outer: For, extent: str) -> For:
    """``outer`` with ``extent`` 1, what that makes known folded: a loop around one vectorised loop of that extent
    becomes one vectorised loop (the inner index 0); other nests keep the loops left, which the C compiler folds."""
    flat = substitute([deepcopy(outer)], {extent: Poly.of(1)})[0]
    _fold_unit_reductions(flat.body)        # before _fold_known_loops makes their one iteration straight-line code
    _fold_known_loops(flat.body)
    if not any(isinstance(x, For) for x in walk_stmts(flat.body)):
        flat.simd = True        # its iterations are independent (it may run in parallel); nothing inside loops
    return flat


def _fold_known_loops(block: list) -> None:
    """With the extent 1, a row sum's chunk count (``chunks = 1 / 512``) is 0 and its remainder loop runs once: the
    count becomes a constant, loops of no iteration go, loops of one iteration become their body (in place). The
    loop around them then holds straight-line code, which ``_unit_version`` vectorises (a SumToShape's copy of a
    column ran one element at a time)."""
    i = 0
    while i < len(block):
        s = block[i]
        if isinstance(s, Declare) and s.ctype == "int64_t" and isinstance(s.init, Arith) and s.init.op == "/" \
                and isinstance(s.init.a, Poly) and isinstance(s.init.b, Poly) and s.init.a.const is not None \
                and s.init.b.const and s.init.a.const >= 0 and s.init.b.const > 0:
            del block[i]
            substitute(block[i:], {s.name: Poly.of(s.init.a.const // s.init.b.const)})
            continue
        if isinstance(s, For) and s.parallel is None and s.start.const is not None and s.stop.const is not None \
                and s.stop.const - s.start.const <= 1:
            block[i:i + 1] = substitute(s.body, {s.var: s.start}) if s.stop.const > s.start.const else []
            continue
        for b in s.blocks():
            _fold_known_loops(b)
        i += 1


def _fold_unit_reductions(block: list) -> None:
    """A serial loop around a vectorised reduction of one iteration (a mean over [n, 1] chunk by chunk: each row's
    reduction over its one column) becomes that reduction vectorised over the outer loop, the inner index 0, in
    place: the outer loop ran one element at a time, the reduction's variable a chain of dependent adds. Only
    when the inner loop's body just updates its reduction variables (nothing else carries from one outer
    iteration to the next); the sum is reassociated as a static vectorised reduction's is."""
    for i, s in enumerate(block):
        if not isinstance(s, For):
            continue
        inner = s.body[0] if len(s.body) == 1 and isinstance(s.body[0], For) else None
        if inner is not None and not s.simd and not s.reductions and s.parallel is None and inner.simd \
                and inner.reductions and inner.parallel is None and inner.start == 0 and inner.stop == Poly.of(1) \
                and all(isinstance(x, Assign) and x.name in {name for _, name in inner.reductions}
                        for x in inner.body):
            body = substitute(deepcopy(inner.body), {inner.var: Poly.of(0)})
            block[i] = For(s.var, s.start, s.stop, body, simd=True, reductions=list(inner.reductions))
            continue
        for b in s.blocks():
            _fold_unit_reductions(b)
