"""Short rows' loops in whole vectors: the passes ``peel_tails`` and ``sum_lanes``.

``peel_tails``: a row padded to whole vectors (``kernels.pad_inner``: 100 floats run 112 iterations) loads,
stores and folds under ``r < n`` in every vector; the loop is split into its whole vectors, unmasked, and its
last one, masked.

``sum_lanes``: GCC vectorises ``#pragma omp simd reduction(+:s)`` over floats by giving each lane its own
partial sum and, after the loop, adding the lanes into ``s`` one after another: without
``-fassociative-math`` (which the generated code must not have: it would reorder the user's own arithmetic)
that order is kept, 16 dependent adds at AVX-512 (8 at AVX2). A row loop pays them on every row: softmax over
rows of 16 columns spent a third of its time there (14.4 ns a row on one core; 9.2 ns with the lanes added
as a tree, jax.jit's time). The pass gives such a loop a lane array instead: its first block of ``LANES``
iterations stores its terms in ``lanes[i - block start]``, the next blocks add to them (one vector add per
block at AVX-512, two at AVX2), the iterations after the last whole block to the first lanes, and the lanes
are added pairwise, 8 + 8, 4 + 4, 2 + 2, 1 + 1 (``rt_tree_sum16_*``). The sum changes only by the order of
its additions, as with the partial sums GCC's lanes already made.

A loop qualifies for ``sum_lanes`` when it is vectorised, serial (a parallel loop's reduction clause combines
its threads), runs a static number of iterations from ``LANES`` to ``LANES * MAX_BLOCKS`` (or a run-time number
of whole blocks the code around bounds by as many: ``For.at_most``, a short row's whole vectors), its every
reduction is a float or double ``+``, and each reduction variable is only updated ``s = s + x`` in it.
Consecutive loops adding to the same sums (a row's whole vectors, then its last, under an ``if`` when the row's
length is known at run time only) share one lane array. A run-time number of blocks runs as one block under its
own ``if`` for each block the bound allows, its lanes vector registers (``rt_lanes16_*``): the same additions in
the same order as the static row's, so the ``None`` spelling gives the static one's sums.

Measured on softmax and layer norm over about 1M floats, rows of 16 to 128 (x86-64-v4): 0.51-0.85x the time
before, layer norm 0.58-0.77x; at x86-64-v3 0.57-1.0x; rows of 200 and more unchanged. Rows of run-time length
(an Intel Xeon of family 6 model 167, one thread): layer norm over rows of 20 to 128 0.68-0.84x the time before, rows of 100
1.32x -> 1.08x the static spelling (x86-64-v3: 1.15x -> 1.09x).
"""
from __future__ import annotations

from copy import deepcopy

from transpiler.lowering.ir import (
    Arith,
    Assign,
    Cast,
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
from transpiler.lowering.kernels import PAD_LANES, PAD_MAX, padded_extent

LANES = PAD_LANES   # a block of iterations: one AVX-512 vector of float32 (two of AVX2)
# ... and the most blocks a loop of lanes has: GCC unrolls them, the lanes stay in registers. Over more blocks (or
# a number known at run time) it kept them on the stack, a store and a load on each block's chain: softmax over
# rows of 512 at AVX2 took 1.15x, layer norm 1.4x the time of the reduction clause's loop, whose in-order end is
# paid once per long row
MAX_BLOCKS = 8
FLOATS = ("float", "double")


def sum_lanes(fn: Function) -> bool:
    """Give every qualifying loop of ``fn`` (and of its fallback) lane arrays, in place."""
    changed = False
    for f in (fn, fn.fallback):
        if f is not None:
            for block in _lists(f.body):
                changed |= _rewrite_block(block, f.names)
    return changed


def _lists(body: list) -> list:
    """``body`` and every statement list nested in it."""
    return [body] + [b for s in walk_stmts(body) for b in s.blocks()]


def peel_tails(fn: Function) -> bool:
    """Split each padded row loop of ``fn`` (``kernels.pad_inner``) into its whole vectors, unmasked, and its
    last vector, masked, in place.

    A row of 100 floats runs 112 iterations, every vector loading, storing and folding under ``r < n``: GCC
    computed that mask from 64-bit indices for each of the 7 vectors (two compares and a merge), and the masked
    loads and stores of the 6 whole ones cost as much again. Only the last vector needs the mask. A row of
    unknown length (``pad_inner(short=True)``) runs its whole vectors, then, when the row has more, one masked
    vector of 16 iterations."""
    return any([_peel_block(f.body, {}, {}, {}, f.names) for f in (fn, fn.fallback) if f is not None])


def _peel_block(block: list, lengths: dict, padded: dict, arrays: dict, names: Namer) -> bool:
    """``peel_tails`` in ``block`` and the blocks nested in it; ``lengths``: the static row lengths hidden from
    the C compiler (``rt_opaque_i64``) declared around ``block``, name -> value; ``padded``: the run-time row
    lengths rounded up to whole vectors, name -> the length's name; ``arrays``: the local arrays declared around
    it, name -> size."""
    changed = False
    lengths, padded, arrays = dict(lengths), dict(padded), dict(arrays)
    i = 0
    while i < len(block):
        s = block[i]
        if isinstance(s, Declare) and isinstance(s.init, Helper) and s.init.name == "rt_opaque_i64" \
                and isinstance(s.init.args[0], Poly) and s.init.args[0].const is not None:
            lengths[s.name] = s.init.args[0].const
        elif isinstance(s, Declare) and _padded(s.init) is not None:
            padded[s.name] = next(iter(s.init.a.symbols()))
        elif isinstance(s, Declare) and s.size is not None and not s.static:
            arrays[s.name] = s.size
        elif isinstance(s, For) and s.simd and s.start == 0 and s.parallel is None:
            split = _split(s, lengths, padded, arrays, names)
            if split is not None:
                block[i:i + 1] = split
                i += len(split) - 1
                changed = True
        for b in s.blocks():
            changed |= _peel_block(b, lengths, padded, arrays, names)
        i += 1
    return changed


def _padded(e) -> Expr | None:
    """``e`` when it is ``pad_inner``'s run-time length rounded up to whole vectors (``padded_extent``)."""
    if isinstance(e, Arith) and isinstance(e.a, Poly) and len(e.a.symbols()) == 1:
        length = Poly.sym(next(iter(e.a.symbols())))
        return e if e == padded_extent(length) else None
    return None


def _split(loop: For, lengths: dict, padded: dict, arrays: dict, names: Namer) -> list | None:
    """The statements replacing ``loop``, a padded row loop: its whole vectors with the mask taken as true, then
    its last vector; None when ``loop`` is not one."""
    def masked(length: str) -> Compare | None:
        mask = Compare("<", Poly.sym(loop.var), Poly.sym(length))
        return mask if any(e == mask for s in walk_stmts(loop.body) for x in s.exprs() for e in walk_expr(x)) \
            else None
    stop = next(iter(loop.stop.symbols())) if loop.stop.const is None and len(loop.stop.symbols()) == 1 else None
    if stop in padded and loop.stop == Poly.sym(stop) and (mask := masked(padded[stop])):
        length = Poly.sym(padded[stop])
        whole = Poly.sym(names.fresh("whole"))
        # a row of run-time length is padded only when it is short (``pad_inner(short=True)``): its whole
        # vectors are at most PAD_MAX iterations
        main = For(loop.var, Poly.of(0), whole, _unmasked(deepcopy(loop.body), mask), simd=True,
                   reductions=list(loop.reductions), at_most=PAD_MAX, multiple_of=LANES)
        # the last vector counted from 0 (``sum_lanes``'s blocks say why)
        lane = names.fresh("l")
        _substitute(loop.body, {loop.var: whole + Poly.sym(lane)})
        _load_rows_whole(loop.body, whole + Poly.sym(lane), arrays, names)
        last = For(lane, Poly.of(0), Poly.of(LANES), loop.body, simd=True, reductions=list(loop.reductions))
        return [Declare(str(whole), "int64_t", Arith("&", length, Lit(-LANES, "int64_t"), "int64_t")), main,
                If(Compare("<", whole, length), _last_vector(last, length - whole, names))]
    for length, value in lengths.items():
        whole = value // LANES * LANES
        if whole and loop.stop == whole + LANES and (mask := masked(length)):
            main = For(loop.var, Poly.of(0), Poly.of(whole), _unmasked(deepcopy(loop.body), mask), simd=True,
                       reductions=list(loop.reductions))
            loop.start = Poly.of(whole)
            return [main] + _last_vector(loop, Poly.of(value - whole), names)
    return None


def _load_rows_whole(body: list, index: Poly, arrays: dict, names: Namer) -> None:
    """In a row's masked last block, make the masked loads ``live ? row[index] : x`` of local row arrays (a
    softmax's exponentials, of ``PAD_MAX`` elements: every lane in bounds) plain loads before the select, in
    place. GCC made them masked loads, which wait for the stores of the block before them to reach the cache
    instead of taking their values: the sum of softmax's last vector over rows of 100 cost 9% of its time at
    AVX2 on a Zen 5."""
    loads: dict = {}

    def plain(e):
        if isinstance(e, Select) and isinstance(e.then, Load) and not e.then.indirect and e.then.index == index \
                and arrays.get(e.then.ptr, 0) >= PAD_MAX:
            if e.then.ptr not in loads:
                loads[e.then.ptr] = (names.fresh("ld"), e.then)
            return Select(map_expr(e.cond, on_node=plain), Var(loads[e.then.ptr][0], e.then.ctype),
                          map_expr(e.orelse, on_node=plain), e.ctype)
        return None
    for s in walk_stmts(body):
        s.map_exprs(lambda e: map_expr(e, on_node=plain))
    body[:0] = [Declare(name, load.ctype, load) for name, load in loads.values()]


def _last_vector(loop: For, rest: Poly, names: Namer) -> list:
    """A row's masked last block of ``LANES`` iterations, ``rest`` of them live, with its stores after it
    (``_stores_after``); a loop without reductions also as a block of ``LANES / 2`` iterations, taken where
    those fill a vector and cover the rest (``rt_tail_in_half``: at AVX2 and below, at most 8 live). 16 floats
    are two AVX2 vectors: softmax over rows of 100 (a last block of 4) computed the exp of a dead vector in
    every row, 1.20x the time of rows of 96 on one thread of a Zen 5 (rows of 112: 0.98x). A reduction's block
    stays whole: ``sum_lanes`` adds its terms as whole lane vectors, and its loops are cheap."""
    if loop.reductions or (rest.const is not None and rest.const > LANES // 2):
        return _stores_after(loop, names)
    half = deepcopy(loop)
    half.stop = half.start + LANES // 2
    return [If(Helper("rt_tail_in_half", (rest,), "int"), _stores_after(half, names), _stores_after(loop, names))]


def _stores_after(loop: For, names: Namer) -> list:
    """``loop``, a row's masked last vector, with its stores under the mask (``if (r < n) p[i] = v``) made
    stores of every lane to a local vector, then a loop storing the live lanes from it; ``loop`` alone when it
    has no such store.

    With the store under the mask in the loop that computes it, GCC loaded the value's operands with
    merge-masked loads whose other lanes came from registers it spilled at AVX-512, a store-to-load chain from
    one row's last vector to the next's: layer norm with gamma and beta over rows of 100 took 162-260 us on two
    threads and 179 us on one (now 99 us), with `None` columns 304 us (now 130 us)."""
    lane = Poly.sym(loop.var) - loop.start
    after = []
    for i, s in enumerate(loop.body):
        if isinstance(s, If) and not s.orelse and len(s.then) == 1 and isinstance(s.then[0], Store):
            store = s.then[0]
            values = names.fresh("vals")
            after.append((values, s, store))
            loop.body[i] = Store(values, lane, store.value)
    if not after:
        return [loop]
    return [Declare(values, store.value.ctype, size=LANES) for values, _, store in after] + [loop] + [
        For(loop.var, loop.start, loop.stop, [If(cond.cond, [Store(store.ptr, store.index, Load(
            values, lane, store.value.ctype))]) for values, cond, store in after], simd=True)]


def _substitute(body: list, at: dict) -> None:
    """Replace index symbols in ``body`` by polynomials (``{name: Poly}``), in place."""
    for s in walk_stmts(body):
        s.map_exprs(lambda e: e.substitute(at) if isinstance(e, Poly) else map_expr(e, lambda p: p.substitute(at)))


def _unmasked(body: list, mask: Compare, flags: set | None = None) -> list:
    """``body`` with ``mask`` true: conditional loads and stores made plain (the C compiler folds the rest).
    ``flags``: the locals holding ``mask`` (a reduction's ``live``), true as well."""
    flags = set() if flags is None else flags

    def true(e) -> bool:
        return e == mask or isinstance(e, Var) and e.name in flags

    def unmask(e):
        if isinstance(e, Select) and true(e.cond):
            return map_expr(e.then, on_node=unmask)
        return Lit(1, "int") if true(e) else None
    out = []
    for s in body:
        if isinstance(s, If) and true(s.cond):
            out += _unmasked(s.then, mask, flags)
            continue
        if isinstance(s, Declare) and s.init is not None and true(s.init):
            flags.add(s.name)
        s.map_exprs(lambda e: map_expr(e, on_node=unmask))
        for b in s.blocks():
            b[:] = _unmasked(b, mask, flags)
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
        # vector, alone under an ``if`` when the row's length is known at run time: ``peel_tails``) share its
        # lanes
        j = i + 1
        while j < len(block) and _sums(_guarded_loop(block[j]) or block[j]) == sums:
            j += 1
        new = _in_lanes(block[i:j], sums, names)
        block[i:j] = new
        i += len(new)
        changed = True
    return changed


def _guarded_loop(s) -> For | None:
    """The loop of ``s`` when ``s`` is ``if (c) loop`` alone."""
    if isinstance(s, If) and not s.orelse and len(s.then) == 1 and isinstance(s.then[0], For):
        return s.then[0]
    return None


def _sums(loop) -> dict | None:
    """Reduction variable -> its C type, when ``loop`` qualifies (see the module docstring)."""
    if not isinstance(loop, For) or not loop.simd or loop.parallel is not None or not loop.reductions:
        return None
    trip = loop.stop - loop.start
    if trip.const is None and not (loop.at_most is not None and loop.at_most <= LANES * MAX_BLOCKS
                                   and loop.multiple_of % LANES == 0):
        return None
    if trip.const is not None and not LANES <= trip.const <= LANES * MAX_BLOCKS:
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
    registers = _registers(loops)
    # the first block of an array's static loop stores its terms in the lanes: with the lanes zeroed before the
    # loop, GCC kept them in memory between blocks (a store and a load on each block's chain)
    init = not registers and isinstance(loops[0], For) and (loops[0].stop - loops[0].start).const is not None \
        and not _loads_under_conditions(loops[0].body) and _updated_once(loops[0].body, sums)
    if registers:
        out = [Declare(lanes[name], _lanes_type(ctype), init=Helper(f"rt_lanes16_zero_{ctype}", (), _lanes_type(ctype)))
               for name, ctype in sums.items()]
    else:
        out = [Declare(lanes[name], ctype, size=LANES, values=None if init else (Lit(0, ctype),))
               for name, ctype in sums.items()]
    for i, loop in enumerate(loops):
        if isinstance(loop, If):
            out.append(If(loop.cond, _blocks(loop.then[0], sums, lanes, names, registers=registers)))
        else:
            out += _blocks(loop, sums, lanes, names, init and i == 0, registers)
    for name, ctype in sums.items():
        tree = Helper(f"rt_lanes16_sum_{ctype}", (Var(lanes[name], _lanes_type(ctype)),), ctype) if registers else \
            Helper(f"rt_tree_sum16_{ctype}", (Ptr(lanes[name], cast=f"const {ctype} *"),), ctype)
        out.append(Assign(name, Arith("+", Var(name, ctype), tree, ctype)))
    return out


def _registers(loops: list) -> bool:
    """Whether the lanes of ``loops`` are vector registers (``rt_lanes16_*``, the blocks' terms stored and added as
    whole vectors) rather than an array: when a loop runs a run-time number of whole blocks and every loop's
    blocks are whole. Its blocks under their own ``if`` kept a lane array on the stack, each storing its vectors
    for the next one's merge (layer norm over rows of 100 of unknown length: 1.24x the static rows' time at
    x86-64-v4, 1.28x at x86-64-v3; with registers 1.0x). A static number of blocks, which GCC unrolls into
    straight-line code, keeps the array: it adds each block's terms as it computes them (registers cost those
    rows 3-6% more)."""
    trips = [(loop.stop - loop.start).const for loop in (_guarded_loop(s) or s for s in loops)]
    return None in trips and all(t % LANES == 0 for t in trips if t is not None)


def _lanes_type(ctype: str) -> str:
    return f"rt_lanes16_{ctype}"


def _updated_once(body: list, sums) -> bool:
    """Whether each sum is updated once in ``body``, by a statement of the body itself (not under an ``if``)."""
    top = [s.name for s in body if isinstance(s, Assign) and s.name in sums]
    every = [s.name for s in walk_stmts(body) if isinstance(s, Assign) and s.name in sums]
    return sorted(top) == sorted(every) == sorted(sums)


def _blocks(loop: For, sums: dict, lanes: dict, names: Namer, init: bool = False, registers: bool = False) -> list:
    """``loop`` (a static number of iterations, or a run-time number of whole blocks ``loop.at_most`` bounds)
    as whole blocks of ``LANES`` iterations, then the rest, adding to ``lanes`` (``init``: the first block of a
    static loop stores to them; ``registers``: they are ``rt_lanes16_*`` values, see ``_registers``)."""
    out = []
    trip = (loop.stop - loop.start).const

    def block(start: Poly, count: int, body: list, first: bool = False) -> list:
        """The iterations ``start + lane`` for ``lane`` below ``count``, counted from 0: with ``-fwrapv``, GCC
        cannot tell that a loop from ``16 * b`` to ``16 * b + 16`` runs 16 times, and left it scalar."""
        lane = names.fresh("l")
        _substitute(body, {loop.var: start + Poly.sym(lane)})
        if registers and (rows := _contiguous_terms(body, sums, lane)) is not None:
            # a block adding 16 consecutive elements of a buffer adds them from the buffer
            return [Assign(lanes[name], Helper(f"rt_lanes16_add_{ctype}", (
                Var(lanes[name], _lanes_type(ctype)), rows[name]), _lanes_type(ctype))) for name, ctype in sums.items()]
        if not registers and not _loads_under_conditions(body):
            return [For(lane, Poly.of(0), Poly.of(count), _to_lanes(body, sums, lanes, Poly.sym(lane), first),
                        simd=True)]
        # the terms stored in ``values`` by the block's loop, then added to the lanes: in registers as whole
        # vectors (``0 + x`` keeps a block that only copies its terms a loop: GCC made a copy a memcpy of 16-byte
        # moves, which the 32-byte loads of the add waited on at AVX2, 1.9x the time; the lanes start at 0, so
        # the sums are the same), else a masked last vector's by a second loop (with ``lanes[l] += x`` in the loop
        # that loads under a condition, GCC did not vectorise it; without such loads the terms' copy cost AVX2 a
        # store-forwarding stall per vector, layer norm 3x its time)
        values = {name: names.fresh("terms") for name in sums}
        fill = [Declare(values[name], ctype, size=LANES) for name, ctype in sums.items()] + [
            For(lane, Poly.of(0), Poly.of(count), _terms(body, sums, values, Poly.sym(lane), plus_zero=registers),
                simd=True)]
        if registers:
            return fill + [Assign(lanes[name], Helper(f"rt_lanes16_add_{ctype}", (
                Var(lanes[name], _lanes_type(ctype)), Ptr(values[name], cast=f"const {ctype} *")), _lanes_type(ctype)))
                for name, ctype in sums.items()]
        add = names.fresh("l")
        return fill + [For(add, Poly.of(0), Poly.of(count), [
            _add(lanes[name], Poly.sym(add), Load(values[name], Poly.sym(add), ctype))
            for name, ctype in sums.items()], simd=True)]
    if trip is None:
        # a run-time number of whole blocks, at most ``loop.at_most // LANES``: each block under its own ``if``
        # (the reduction clause's in-order end cost layer norm over rows of 100 of unknown length 1.4x its static
        # spelling), the lanes in registers (``_registers``)
        count = loop.stop - loop.start
        return [If(Compare("<", Poly.of(LANES * k), count),
                   block(loop.start + LANES * k, LANES, deepcopy(loop.body)))
                for k in range(loop.at_most // LANES)]
    whole = trip // LANES
    first = 1 if init else 0
    if init:
        out += block(loop.start, LANES, deepcopy(loop.body), first=True)
    if whole - first == 1:
        out += block(loop.start + first * LANES, LANES, deepcopy(loop.body))
    elif whole - first > 1:
        b = names.fresh("b")
        out.append(For(b, Poly.of(first), Poly.of(whole),
                       block(loop.start + Poly.sym(b) * LANES, LANES, deepcopy(loop.body))))
    if trip % LANES:
        out += block(loop.start + whole * LANES, trip % LANES, loop.body)
    return out


def _contiguous_terms(body: list, sums: dict, lane: str) -> dict | None:
    """Sum -> a pointer to its terms, when ``body`` (a block's, over ``lane``) only declares locals and adds to
    each sum once an element ``buffer[start + lane]`` of the sum's type; else None."""
    inits = {s.name: s.init for s in body if isinstance(s, Declare) and s.size is None and s.init is not None}
    rows = {}
    for s in body:
        if isinstance(s, Declare) and s.size is None and s.init is not None:
            continue
        if not (isinstance(s, Assign) and s.name in sums and s.name not in rows and _update(s) is not None):
            return None
        x = _update(s)[1]
        while isinstance(x, Cast) and x.ctype == sums[s.name] or isinstance(x, Var) and x.name in inits:
            x = x.value if isinstance(x, Cast) else inits[x.name]
        if not (isinstance(x, Load) and not x.indirect and x.ctype == sums[s.name]):
            return None
        start = x.index.substitute({lane: Poly.of(0)})
        if x.index - start != Poly.sym(lane):
            return None
        rows[s.name] = Ptr(x.ptr, start, cast=f"const {x.ctype} *")
    return rows if rows.keys() == sums.keys() else None


def _add(array: str, index: Poly, value: Expr) -> Store:
    """``array[index] = array[index] + value``."""
    return Store(array, index, Arith("+", Load(array, index, value.ctype), value, value.ctype))


def _loads_under_conditions(body: list) -> bool:
    """Whether ``body`` loads under a condition (``c ? p[i] : 0``) or has an ``if``."""
    for s in walk_stmts(body):
        if isinstance(s, If):
            return True
        for e in s.exprs():
            if any(isinstance(x, Select) and any(isinstance(y, Load) for branch in (x.then, x.orelse)
                                                 for y in walk_expr(branch)) for x in walk_expr(e)):
                return True
    return False


def _to_lanes(body: list, sums: dict, lanes: dict, lane: Poly, first: bool = False) -> list:
    """``body`` with each ``s = s + x`` made ``lanes[s][lane] = lanes[s][lane] + x``, in place; ``first``:
    ``lanes[s][lane] = 0 + x``, what zeroed lanes would hold (-0.0 becomes 0.0), and not a copy: GCC made a
    copy a memcpy of 16-byte moves, which the tree's 32-byte loads then waited on at AVX2."""
    for block in _lists(body):
        for i, s in enumerate(block):
            if isinstance(s, Assign) and s.name in sums:
                x = _update(s)[1]
                block[i] = Store(lanes[s.name], lane, Arith("+", Lit(0, x.ctype), x, x.ctype)) if first \
                    else _add(lanes[s.name], lane, x)
    return body


def _terms(body: list, sums: dict, values: dict, lane: Poly, plus_zero: bool = False) -> list:
    """``body`` storing what it adds to each sum in ``values[sum][lane]``, in place: one update at the top of
    the body stores its term (``0 + x`` with ``plus_zero``), others (several, or under a condition) add to a 0
    stored first."""
    alone = {name for name in sums if _updated_once(body, {name})}
    for block in _lists(body):
        for i, s in enumerate(block):
            if isinstance(s, Assign) and s.name in sums:
                ctype, x = _update(s)
                term = Arith("+", Lit(0, ctype), x, ctype) if plus_zero else x
                block[i] = Store(values[s.name], lane, term) if s.name in alone else _add(values[s.name], lane, x)
    return [Store(values[name], lane, Lit(0, ctype)) for name, ctype in sums.items() if name not in alone] + body
