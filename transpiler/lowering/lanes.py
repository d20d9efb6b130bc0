"""Float sums kept in vector lanes and added up as a tree: the pass ``sum_lanes``.

GCC vectorises ``#pragma omp simd reduction(+:s)`` over floats by giving each lane its own partial sum and,
after the loop, adding the lanes into ``s`` one after another: without ``-fassociative-math`` (which the
generated code must not have: it would reorder the user's own arithmetic) that order is kept, 16 dependent
adds at AVX-512 (8 at AVX2). A row loop pays them on every row: softmax over rows of 16 columns spent a
third of its time there (14.4 ns a row on one core; 9.2 ns with the lanes added as a tree, jax.jit's time).

The pass gives such a loop a lane array instead: whole blocks of ``LANES`` iterations each add into
``lanes[i - block start]`` (one vector add per block at AVX-512, two at AVX2), the iterations after the last
whole block into the first lanes, and the lanes are then added pairwise, 8 + 8, 4 + 4, 2 + 2, 1 + 1, into the
sum: four vector adds. The sum's value changes only by the order of its additions, as with the partial sums
GCC's lanes already made.

A loop qualifies when it is vectorised, serial (a parallel loop's reduction clause combines its threads), its
every reduction is a float or double ``+``, and each reduction variable is only updated ``s = s + x`` in it.
"""
from __future__ import annotations

from copy import deepcopy

from transpiler.lowering.ir import (
    Arith,
    Assign,
    Combine,
    Compare,
    Declare,
    Expr,
    For,
    Function,
    Helper,
    If,
    Lit,
    Load,
    Namer,
    Poly,
    Ptr,
    Select,
    Store,
    Var,
    map_expr,
    names_in,
    walk_expr,
    walk_stmts,
)

LANES = 16          # a block of iterations: one AVX-512 vector of float32 (two of AVX2)
FLOATS = ("float", "double")


def sum_lanes(fn: Function) -> bool:
    """Give every qualifying loop of ``fn`` (and of its fallback) lane arrays, in place."""
    changed = False
    for f in (fn, fn.fallback) if fn.fallback is not None else (fn,):
        blocks = [f.body] + [b for s in walk_stmts(f.body) for b in s.blocks()]
        for block in blocks:
            changed |= _rewrite_block(block, f.names)
    return changed


def peel_tails(fn: Function) -> bool:
    """Split each padded row loop of ``fn`` (``kernels.pad_inner``) into its whole vectors, unmasked, and its
    last vector, masked, in place.

    A row of 100 floats runs 112 iterations, every vector loading, storing and folding under ``r < n``: GCC
    computed that mask from 64-bit indices for each of the 7 vectors (two compares and a merge), and the masked
    loads and stores of the 6 whole ones cost as much again. Only the last vector needs the mask."""
    return any([_peel_block(f.body, {}) for f in (fn, fn.fallback) if f is not None])


def _peel_block(block: list, lengths: dict) -> bool:
    """``peel_tails`` in ``block`` and the blocks nested in it; ``lengths``: the row lengths hidden from the C
    compiler (``rt_opaque_i64``) declared around ``block``, name -> value."""
    changed = False
    lengths = dict(lengths)
    i = 0
    while i < len(block):
        s = block[i]
        if isinstance(s, Declare) and isinstance(s.init, Helper) and s.init.name == "rt_opaque_i64" \
                and isinstance(s.init.args[0], Poly) and s.init.args[0].const is not None:
            lengths[s.name] = s.init.args[0].const
        elif isinstance(s, For) and s.simd and s.start == 0 and s.parallel is None:
            main = _whole_vectors(s, lengths)
            if main is not None:
                block[i:i] = [main]
                i += 1
                changed = True
        for b in s.blocks():
            changed |= _peel_block(b, lengths)
        i += 1
    return changed


def _whole_vectors(loop: For, lengths: dict) -> For | None:
    """The loop over ``loop``'s whole vectors with its mask taken as true, ``loop`` left with the last vector;
    None when ``loop`` is not a padded row loop with whole vectors before its last."""
    for length, value in lengths.items():
        mask = Compare("<", Poly.sym(loop.var), Poly.sym(length))
        whole = value // LANES * LANES
        if whole and loop.stop == whole + LANES and any(e == mask for s in walk_stmts(loop.body)
                                                         for x in s.exprs() for e in walk_expr(x)):
            break
    else:
        return None
    main = For(loop.var, Poly.of(0), Poly.of(whole), _unmasked(deepcopy(loop.body), mask), simd=True,
               reductions=list(loop.reductions))
    loop.start = Poly.of(whole)
    return main


def _unmasked(body: list, mask: Compare) -> list:
    """``body`` with ``mask`` true: conditional loads and stores made plain (the C compiler folds the rest)."""
    def unmask(e):
        if isinstance(e, Select) and e.cond == mask:
            return map_expr(e.then, on_node=unmask)
        return Lit(1, "int") if e == mask else None
    out = []
    for s in body:
        if isinstance(s, If) and s.cond == mask:
            out += _unmasked(s.then, mask)
            continue
        s.map_exprs(lambda e: map_expr(e, on_node=unmask))
        for b in s.blocks():
            b[:] = _unmasked(b, mask)
        out.append(s)
    return out


def _rewrite_block(block: list, names: Namer) -> bool:
    changed = False
    i = 0
    while i < len(block):
        sums = _sums(block[i]) if isinstance(block[i], For) else None
        if not sums:
            i += 1
            continue
        # the loops right after it adding to the same sums (a padded row's whole vectors, then its last
        # vector: ``peel_tails``) share its lanes
        j = i + 1
        while j < len(block) and isinstance(block[j], For) and _sums(block[j]) == sums:
            j += 1
        new = _in_lanes(block[i:j], sums, names)
        block[i:j] = new
        i += len(new)
        changed = True
    return changed


def _sums(loop: For) -> dict | None:
    """Reduction variable -> its C type, when ``loop`` qualifies (see the module docstring)."""
    if not loop.simd or loop.parallel is not None or not loop.reductions:
        return None
    trip = loop.stop - loop.start
    if trip.const is not None and trip.const < LANES:
        return None
    wanted = {name for op, name in loop.reductions if op == "+"}
    if len(wanted) != len(loop.reductions):
        return None
    ctypes: dict = {}
    for s in walk_stmts(loop.body):
        update = _update(s) if isinstance(s, Assign) and s.name in wanted else None
        if update is not None:
            ctypes[s.name] = update[0]
            reads = [update[1]]
        elif isinstance(s, (Declare, Assign)) and s.name in wanted or isinstance(s, For) and s.reductions:
            return None
        else:
            reads = s.exprs()
        if update is not None and update[0] not in FLOATS or any(names_in(e) & wanted for e in reads):
            return None
    return ctypes if ctypes.keys() == wanted else None


def _update(s: Assign) -> tuple[str, Expr] | None:
    """``(ctype, x)`` when ``s`` is ``name = name + x`` (a ``+`` Combine or Arith), else None."""
    v = s.value
    if isinstance(v, Combine) and v.reduction.omp == "+" or isinstance(v, Arith) and v.op == "+":
        acc, x = (v.acc, v.value) if isinstance(v, Combine) else (v.a, v.b)
        if isinstance(acc, Var) and acc.name == s.name:
            return v.ctype, x
    return None


def _in_lanes(loops: list, sums: dict, names: Namer) -> list:
    lanes = {name: names.fresh("lanes") for name in sums}
    out = [Declare(lanes[name], ctype, size=LANES, values=(Lit(0, ctype),)) for name, ctype in sums.items()]
    for loop in loops:
        out += _blocks(loop, sums, lanes, names)
    for name, ctype in sums.items():
        tree = Helper(f"rt_tree_sum16_{ctype}", (Ptr(lanes[name], cast=f"const {ctype} *"),), ctype)
        out.append(Assign(name, Arith("+", Var(name, ctype), tree, ctype)))
    return out


def _blocks(loop: For, sums: dict, lanes: dict, names: Namer) -> list:
    """``loop`` as whole blocks of ``LANES`` iterations, then the rest, adding to ``lanes``."""
    out = []
    trip = loop.stop - loop.start
    if trip.const is not None:
        whole = Poly.of(trip.const // LANES)
    else:
        whole = Poly.sym(names.fresh("blocks"))
        out.append(Declare(str(whole), "int64_t", Arith("/", trip, Lit(LANES, "int64_t"), "int64_t")))

    def block(start: Poly, count: Poly, body: list) -> list:
        """The iterations ``start + lane`` for ``lane`` below ``count``, counted from 0 (with ``-fwrapv``, GCC
        cannot tell that a loop from ``16 * b`` to ``16 * b + 16`` runs 16 times, and left it scalar), their
        terms stored in ``values`` and added to the lanes by a second loop (with ``lanes[l] += x`` in the first,
        GCC did not vectorise a loop that loads under a condition: a padded row's masked loads)."""
        lane = names.fresh("l")
        at = {loop.var: start + Poly.sym(lane)}
        for s in walk_stmts(body):
            s.map_exprs(lambda e: e.substitute(at) if isinstance(e, Poly) else map_expr(e, lambda p: p.substitute(at)))
        values = {name: names.fresh("terms") for name in sums}
        add = names.fresh("l")
        return [Declare(values[name], ctype, size=LANES) for name, ctype in sums.items()] + [
            For(lane, Poly.of(0), count, _terms(body, sums, values, Poly.sym(lane)), simd=True),
            For(add, Poly.of(0), count, [_add(lanes[name], Poly.sym(add), Load(values[name], Poly.sym(add), ctype))
                                         for name, ctype in sums.items()], simd=True)]
    if whole == 1:
        out += block(loop.start, Poly.of(LANES), deepcopy(loop.body))
    elif whole != 0:
        b = names.fresh("b")
        out.append(For(b, Poly.of(0), whole, block(loop.start + Poly.sym(b) * LANES, Poly.of(LANES),
                                                   deepcopy(loop.body))))
    if trip.const is None or trip.const % LANES:
        done = loop.start + whole * LANES
        out += block(done, loop.stop - done, loop.body)
    return out


def _add(array: str, index: Poly, value: Expr) -> Store:
    """``array[index] = array[index] + value``."""
    return Store(array, index, Arith("+", Load(array, index, value.ctype), value, value.ctype))


def _terms(body: list, sums: dict, values: dict, lane: Poly) -> list:
    """``body`` storing what it adds to each sum in ``values[sum][lane]``, in place: one update at the top of
    the body stores its term, others (several, or under a condition) add to a 0 stored first."""
    top = [s for s in body if isinstance(s, Assign) and s.name in sums]
    alone = {s.name for s in top} if len(top) == len({s.name for s in top}) else set()
    alone -= {s.name for s in walk_stmts(body) if isinstance(s, Assign) and s not in top}
    for block in [body] + [b for s in walk_stmts(body) for b in s.blocks()]:
        for i, s in enumerate(block):
            if isinstance(s, Assign) and s.name in sums:
                ctype, x = _update(s)
                block[i] = Store(values[s.name], lane, x) if s.name in alone else _add(values[s.name], lane, x)
    return [Store(values[name], lane, Lit(0, ctype)) for name, ctype in sums.items() if name not in alone] + body
