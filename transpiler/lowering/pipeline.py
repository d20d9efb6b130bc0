"""The pass ``pipeline_rows``: a row loop computes the next row's reductions while it finishes this row.

A softmax's row is a chain: its max, then ``exp(x - max)`` and their sum, then the scaled values. The first
reduction's result gates everything after it, and a row of a few hundred floats is shorter than the reorder
window of the CPU, so each row waited for its own max. The loop is software-pipelined: each thread runs its
rows in order, and the iteration for row ``k`` first computes the leading reductions of row ``k + 1`` (their
loads and combines independent of row ``k``'s work), then the rest of row ``k`` with its values computed one
iteration earlier:

    for k in n  [parallel]:                 for t in num_threads  [parallel]:
      m = max(x[k, :])                        lo, hi = t's rows
      (the rest of row k, reading m)          if lo < hi:
                                                m' = max(x[lo, :])
                                                for k in lo..hi:
                                                  m = m'
                                                  if k + 1 < hi:
                                                    m' = max(x[k + 1, :])
                                                  (the rest of row k, reading m)

The loop is parallel, or a row group too small for threads whose rows are as independent (``For.independent``:
one chunk, all its rows), so computing part of row ``k + 1`` before the rest of row ``k`` reorders nothing that
one iteration writes and another reads. The part moved ("the head") is the longest leading run of statements
that write only their own locals (no buffer, no run-time error, no callback) and loop over the row, such that
what the rest reads of it is at most ``CARRIED`` scalars: a softmax's max, a layer norm's mean and scale. Rows of
up to ``SHORT_ROW`` elements only, chosen at run time when the length is.
Built, on a Zen 5 (2 threads): softmax over [8192, 100] AVX2 205 -> 185 us, AVX-512 151 -> 112 us; over
[8192, 10] 62 -> 51 and 49 -> 38 us; layer norm over [8192, 100] AVX-512 94 -> 73 us.
"""
from __future__ import annotations

import re
from copy import deepcopy

from transpiler.lowering.ir import (Assign, Call, Comment, Compare, Declare, For, Function, If, Lit, Named, Namer,
                                    Poly, Store, Var, names_in, rename, walk_stmts)
from transpiler.lowering.kernels import chunk_bounds, loads, substitute

# the head's values the rest of a row reads, carried from one iteration to the next
CARRIED = 4
# the longest rows (elements) pipelined: longer ones are not latency-bound (a softmax over [4096, 1024] ran 2-5%
# slower pipelined, its 16 MiB streamed from memory either way)
SHORT_ROW = 512
# calls a head may make: they write nothing the program reads
HARMLESS_CALLS = frozenset({"rt_prefetch_bytes"})
SCALAR_TYPES = frozenset({"float", "double", "int", "int64_t", "int32_t", "uint8_t", "rt_bool"})


def pipeline_rows(fn: Function) -> bool:
    """Pipeline each qualifying row loop of ``fn`` (and of its fallback), in place."""
    changed = False
    for f in (fn, fn.fallback):
        if f is not None:
            changed |= _pipeline_block(f.body, f.names)
    return changed


def _pipeline_block(block: list, names: Namer, bounds: dict | None = None) -> bool:
    """``bounds``: what the enclosing ``if``s tell of the dims (``n <= 128``: ``{"n": 128}``)."""
    bounds = bounds or {}
    changed = False
    i = 0
    while i < len(block):
        s = block[i]
        split = _split(s) if isinstance(s, For) else None
        length = None if split is None else _row_length(split[0], s.var)
        if length is not None and bounds.get(_symbol(length), SHORT_ROW + 1) <= SHORT_ROW:
            length = Poly.of(SHORT_ROW)         # a row group's version for short rows
        if length is not None and (length.const is None or length.const <= SHORT_ROW):
            head, rest, carried = split
            # the rest's statements are still the original loop's, which the run-time choice keeps
            pipelined = _pipelined(s, head, deepcopy(rest), carried, names)
            if length.const is None:        # chosen at run time: the original loop for long rows
                pipelined = [If(Compare("<=", length, Lit(SHORT_ROW, "int64_t")), pipelined, [s])]
            block[i:i + 1] = pipelined
            i += len(pipelined)
            changed = True
            continue
        if isinstance(s, If):
            changed |= _pipeline_block(s.then, names, bounds | _upper_bounds(s.cond))
            changed |= _pipeline_block(s.orelse, names, bounds)
        else:
            for b in s.blocks():
                changed |= _pipeline_block(b, names, bounds)
        i += 1
    return changed


def _upper_bounds(cond) -> dict:
    """``{dim: bound}`` when ``cond`` is ``dim <= bound`` or ``dim < bound + 1``."""
    known = cond.with_constant() if isinstance(cond, Compare) and cond.op in ("<=", "<") else None
    if known is None or _symbol(known[0]) is None:
        return {}
    return {_symbol(known[0]): known[1] - (cond.op == "<")}


def _symbol(p) -> str | None:
    """The name of the one symbol ``p`` is, if it is one."""
    names = p.symbols() if isinstance(p, Poly) else set()
    return next(iter(names)) if len(names) == 1 and p == Poly.sym(next(iter(names))) else None


def _split(loop: For) -> tuple[list, list, list] | None:
    """``(head, rest, carried)`` for a loop worth pipelining: the head's statements, the rest of the body and the
    head's declarations the rest reads (scalars); None when the loop does not qualify."""
    if (loop.parallel is None and not loop.independent) or loop.simd or loop.reductions:
        return None
    body, declared, end = loop.body, set(), 0
    for s in body:
        if not _harmless([s], declared):
            break
        if isinstance(s, Declare):
            declared.add(s.name)
        end += 1
    for j in range(end, 0, -1):
        head, rest = _trimmed(body[:j], body[j:])
        carried, invariant = _carried(head, rest, loop.var)
        rest = deepcopy(invariant) + rest
        if carried is not None and any(isinstance(x, For) for x in walk_stmts(head)) \
                and any(isinstance(x, For) for x in walk_stmts(rest)):
            return head, rest, carried
    return None


def _row_length(head: list, k: str) -> Poly | None:
    """How far apart the rows the head reads are (the coefficient of ``k`` in its loads' indices): a constant, or
    one expression of the dims outside the loop; None otherwise."""
    inner = {x.name for x in walk_stmts(head) if isinstance(x, Declare)} | {
        x.var for x in walk_stmts(head) if isinstance(x, For)}
    strides = set()
    for load in loads(e for x in walk_stmts(head) for e in x.exprs()):
        stride = load.index.coefficient(k)
        if stride.symbols() & inner:
            return None
        strides.add(stride)
    constant = [p.const for p in strides if p.const is not None]
    symbolic = [p for p in strides if p.const is None]
    if len(symbolic) > 1 or not strides:
        return None
    return symbolic[0] if symbolic else Poly.of(max(constant))


def _harmless(stmts: list, writable: set) -> bool:
    """Whether ``stmts`` write only ``writable`` names and their own locals, and cannot fail or call out."""
    writable = set(writable)
    for s in stmts:
        if isinstance(s, Comment):
            continue
        if isinstance(s, Declare):
            if s.blob is not None:      # a big constant: not worth three copies
                return False
            writable.add(s.name)
        elif isinstance(s, Assign):
            if s.name not in writable:
                return False
        elif isinstance(s, Store):
            if s.ptr not in writable:
                return False
        elif isinstance(s, For):
            if s.parallel is not None or any(v not in writable for _, v in s.reductions) \
                    or not _harmless(s.body, writable | {s.var}):
                return False
        elif isinstance(s, If):
            if not (_harmless(s.then, writable) and _harmless(s.orelse, writable)):
                return False
        elif not (isinstance(s, Call) and s.name in HARMLESS_CALLS and not s.checked and not s.out_names()):
            return False
    return True


def _trimmed(head: list, rest: list) -> tuple[list, list]:
    """``head`` without what it need not compute ahead, and ``rest`` with it: declarations without a value that
    the head does not use (a row's scratch array) and trailing declarations that depend on nothing of the head
    (a row length)."""
    head, moved = list(head), []
    for s in list(head):
        if isinstance(s, Declare) and s.init is None and s.name not in _used(x for x in head if x is not s):
            head.remove(s)
            moved.append(s)
    own = {s.name for s in head if isinstance(s, Declare)}
    tail = []
    while head and isinstance(head[-1], Declare) and head[-1].init is not None and not names_in(head[-1].init) & own:
        tail.insert(0, head.pop())
        own.discard(tail[0].name)
    return head, moved + tail + list(rest)


def _carried(head: list, rest: list, k: str) -> tuple[list | None, list]:
    """The head's declarations that ``rest`` reads: ``(carried, invariant)``, those whose value depends on the
    row (at most ``CARRIED`` scalars, else None) and those the rest declares again (the same for every row: a row
    length, its whole vectors)."""
    used = _used(rest)
    own = {s.name for s in head if isinstance(s, Declare)}
    written = _written(head)
    invariant, carried, same = [], [], set()
    for s in head:
        if not isinstance(s, Declare):
            continue
        if s.init is not None and s.name not in written \
                and not (names_in(s.init) & (own - same) or k in names_in(s.init)) \
                and not loads([s.init]):
            same.add(s.name)
            if s.name in used:
                invariant.append(s)
        elif s.name in used:
            carried.append(s)
    if len(carried) > CARRIED or any(s.size is not None or s.static or s.ctype not in SCALAR_TYPES
                                     for s in carried):
        return None, invariant
    return carried, invariant


def _written(stmts: list) -> set:
    """The names the statements set after declaring them: assignments, reductions, stores, a call's results."""
    found = set()
    for s in walk_stmts(stmts):
        if isinstance(s, Assign):
            found.add(s.name)
        elif isinstance(s, Store):
            found.add(s.ptr)
        elif isinstance(s, For):
            found |= {v for _, v in s.reductions}
        elif isinstance(s, Call):
            found |= set(s.out_names())
    return found


def _used(stmts) -> set:
    """Every name the statements read or write (nested ones included)."""
    found = set()
    for s in walk_stmts(list(stmts)):
        for e in s.exprs():
            found |= names_in(e)
        for attr in ("name", "ptr"):
            value = getattr(s, attr, None)
            if isinstance(value, str) and not isinstance(s, (Declare, Call)):
                found.add(value)
        if isinstance(s, For):
            found |= {v for _, v in s.reductions}
        if isinstance(s, Call):
            found |= set(s.out_names())
    return found


def _pipelined(loop: For, head: list, rest: list, carried: list, names: Namer) -> list:
    """The loop as one chunk of rows per thread, each row's head computed one iteration ahead (module doc)."""
    k = loop.var
    threads, t, lo, hi = names.fresh("nt"), names.fresh("t"), names.fresh("lo"), names.fresh("hi")
    slots = {s.name: names.fresh("ahead") for s in carried}
    first, last = loop.start + Poly.sym(lo), loop.start + Poly.sym(hi)
    body = ([Declare(s.name, s.ctype, Var(slots[s.name], s.ctype)) for s in carried]
            + [If(Compare("<", Poly.sym(k) + 1, last), _ahead(head, slots, {k: Poly.sym(k) + 1}, names))]
            + rest)
    rows = For(k, first, last, body)
    run = (chunk_bounds(lo, hi, loop.stop - loop.start, Poly.sym(t), Poly.sym(threads))
           + [Declare(slots[s.name], s.ctype) for s in carried]
           + [If(Compare("<", Poly.sym(lo), Poly.sym(hi)), _ahead(head, slots, {k: first}, names) + [rows])])
    serial = loop.parallel is None      # an independent loop on one thread: one chunk, all the rows
    return [Declare(threads, "int64_t", Lit(1, "int64_t") if serial else Named("num_threads")),
            For(t, Poly.of(0), Poly.sym(threads), run, parallel=loop.parallel)]


def _ahead(head: list, slots: dict, at: dict, names: Namer) -> list:
    """A copy of ``head`` for the row ``at`` gives: its carried values assigned to their slots, its other locals
    renamed afresh (the copies share a scope with the rows' loop)."""
    copy = substitute(deepcopy(head), at)
    own = [s.name for s in walk_stmts(copy) if isinstance(s, Declare) and s.name not in slots]
    fresh: dict = {}
    for name in own:
        derived = re.fullmatch(r"(.*\d)_([a-z]+)", name)
        if derived and derived.group(1) in fresh:
            fresh[name] = Namer.derived(fresh[derived.group(1)], derived.group(2))
        else:
            fresh[name] = names.fresh(re.sub(r"\d+$", "", name) or "t")
    out = []
    for s in copy:
        if isinstance(s, Declare) and s.name in slots:
            if s.init is not None:
                out.append(Assign(s.name, s.init))
            continue
        out.append(s)
    return rename(rename(out, fresh), slots)
