"""GEMM epilogues: the loops that read a product's result run inside the product's parallel parts.

The GEMM splits ``C`` into blocks, one per thread (``rt_gemm_grid_S``). A loop nest over ``C``'s
elements that follows the product -- a layer's ``relu(x @ w + b)``, the optimizer's update of a
weight from its gradient ``x^T @ dy`` -- would run afterwards as a pass of its own: on one thread when
it is under the parallel-loop threshold, reading ``C`` back from memory. Fused, each thread runs the
nest over its own block right after computing it, while the block is in its cache:

    parts = rt_gemm_grid(m, k, n, ta, tb, threads, &tn)
    for part in parts  [parallel if parts > 1]:
      rt_gemm_part(..., part, &i0, &i1, &j0, &j1)      # C[i0:i1, j0:j1]
      for i in i0..i1:
        for j in j0..j1  [simd]:
          <the nest's body at element (i, j)>

A nest fuses when it covers ``C``'s elements (one loop over ``m * n`` of a dense ``C``, or ``m`` x ``n``),
reads ``C`` only at the element it is at, writes every buffer at one element per iteration (never
two iterations the same one, see ``merge.injective``) and writes neither operand (other threads are
still reading them). Scalar statements and checks between the product and the nest that do not read ``C``
move before the product. Other statements between them (a later layer's gradient, its product) stay after the
fused product when the nest neither reads what they write nor writes what they touch: the update of a
hidden layer's weights, which the gradients of the layers below separate from its gradient's product,
runs in that product's parts too. The blocks and their order within each are the GEMM's own, so the
result is the same bits as the product followed by the loop.

Nests right after the fused one that read what it writes at the element it writes it (and ``C``), and write
other memory at one element per iteration, join it in the parts (``_chained``): a TensorArray's write of a
recurrence's state stores each thread's rows of the state to the list, its ``rt_list_set`` moved before the
product.

One kind of nest that could fuse runs apart instead (``_apart``): one that streams several big arrays
besides ``C`` (Adam's moments and weight). Fused, those streams evict the packed operands each thread's
part reuses; apart, the nest runs right after the product, on threads whenever the product did.
"""
from __future__ import annotations

from runtime.config import PARALLEL_MIN_ELEMENTS
from transpiler.lowering.ir import (
    NUM_THREADS,
    Alloc,
    And,
    Arith,
    Assign,
    Call,
    Cast,
    Check,
    Comment,
    Compare,
    Declare,
    Field,
    For,
    Function,
    Lit,
    Load,
    Named,
    Namer,
    OutArg,
    Poly,
    Ptr,
    Store,
    Var,
    names_in,
    walk_expr,
    walk_stmts,
)
from transpiler.lowering.merge import accesses, injective, memory_owners, perfect_nest, rename_indices
from transpiler.lowering.ops import PARALLEL_GEMM


def fuse_epilogues(fn: Function) -> bool:
    """Fuse the loop nests that read a GEMM's result into its parts, in ``fn``'s body and every nested block."""
    return _fuse_block(fn.body, fn.locals, memory_owners(fn), fn.names)


def _fuse_block(stmts: list, locals_: list, owner: dict, names: Namer) -> bool:
    changed = False
    for s in stmts:
        for block in s.blocks():
            changed |= _fuse_block(block, locals_, owner, names)
    k = 0
    while k < len(stmts):
        s = stmts[k]
        if isinstance(s, Call) and s.gemm is not None:
            found = _consumer(stmts, k, owner)
            if found is not None and _apart(s.gemm, found[2], owner):
                outer = found[2][0][0]
                if outer.parallel is None:
                    outer.parallel = _apart_condition(s.gemm)
                    changed = True
            elif found is not None:
                end, moved, nest, passed = found
                nests, lists = [nest], {}
                while not passed:
                    chained = _chained(stmts, end + 1, s, nests, {**owner, **lists})
                    if chained is None:
                        break
                    end, more, nest = chained
                    moved += more
                    nests.append(nest)
                    lists.update(_list_data(more))
                stmts[k:end + 1] = moved + _fused(s, nests, locals_, names.fresh("g")) + passed
                k += len(moved)
                changed = True
        k += 1
    return changed


PASS_MAX = 400     # statements a consumer nest may move up past to reach its product


def _consumer(stmts: list, k: int, owner: dict):
    """(index of the nest, the statements moved before the product, the nest's (loops, body), the statements
    the nest moves up past) for the loop nest that can run as the epilogue of the GEMM call ``stmts[k]``, or
    None."""
    gemm = stmts[k].gemm
    c_memory = owner.get(gemm.c, gemm.c)
    moved, passed = [], []
    effects = [set(), set(), set(), set()]      # of the passed statements: memory read, written, names read, set
    for end in range(k + 1, min(len(stmts), k + 1 + PASS_MAX)):
        s = stmts[end]
        if isinstance(s, Comment):
            (passed if passed else moved).append(s)
            continue
        if (isinstance(s, (Assign, Alloc, Check)) or (isinstance(s, Declare) and s.size is None)) \
                and _movable(s, gemm, c_memory, owner) and _precedes(_footprint(s, owner), effects):
            moved.append(s)          # before the product (and the statements the nest moves up past)
            continue
        nest = perfect_nest(s) if isinstance(s, For) else None
        if nest is not None and _reads_block(gemm, nest, owner):
            if nest[0][0].parallel and not _parallel_with(gemm):
                return None      # a big loop after a product too small for threads: keep the loop parallel
            if not _precedes(_footprint(s, owner), effects):
                return None
            return end, moved, nest, passed
        footprint = _footprint(s, owner)
        if footprint is None:
            return None          # a statement whose effects are not known: the nest stays after it
        for total, part in zip(effects, footprint):
            total |= part
        passed.append(s)
    return None


CHAINED_CALLS = frozenset({"rt_list_set"})     # calls that touch only their list: they move up past a product


def _chained(stmts: list, start: int, call: Call, nests: list, owner: dict):
    """(index of the nest, the statements moved before the product) for a nest right after the nests fused into
    the GEMM call ``call``'s parts (``nests``, before it was fused) that can run in the same parts after them, or
    None. It covers ``C``'s elements too, reads what the fused nests write (and ``C``) only at the element they
    write it, writes memory no one else in the parts touches, at one element per iteration, with rows that do not
    overlap: a TensorArray's write of a recurrence's state, ``tanh(h @ w + x[t])``, copied by each thread from its
    own rows of the state to the list (on the main thread, at AVX2 with the rows split over two threads, the
    copy pulled half the state from the other core at every step). The statements between (the list's
    ``rt_list_set``, the item's address) move before the product."""
    gemm = call.gemm
    block = [call] + [For("_", Poly.of(0), Poly.of(1), body) for _, body in nests]
    effects = [set(), set(), set(), set()]
    for s in block:
        footprint = _footprint(s, owner)
        if footprint is None:
            return None
        for total, part in zip(effects, footprint):
            total |= part
    if None in effects[0] | effects[1]:
        return None
    element = {owner.get(gemm.c, gemm.c): Poly.sym("i") * gemm.ldc + Poly.sym("j")}
    for loops, body in nests:
        mapping = _element_index(gemm, loops)
        for memory, index, written in accesses([rename_indices(s, mapping) for s in body], owner):
            if written:
                element[memory] = index
    moved = []
    for end in range(start, min(len(stmts), start + PASS_MAX)):
        s = stmts[end]
        if isinstance(s, Comment):
            moved.append(s)
            continue
        if isinstance(s, (Assign, Alloc, Check)) or (isinstance(s, Declare) and s.size is None) or \
                (isinstance(s, Call) and s.name in CHAINED_CALLS):
            if _precedes(_footprint(s, owner), effects):
                moved.append(s)
                continue
            return None
        nest = perfect_nest(s) if isinstance(s, For) else None
        if nest is None or (nest[0][0].parallel and not _parallel_with(gemm)):
            return None
        mapping = _element_index(gemm, nest[0])
        if mapping is None:
            return None
        seen = list(accesses([rename_indices(t, mapping) for t in nest[1]], {**owner, **_list_data(moved)}))
        touched = effects[0] | effects[1]
        pseudo = [For("i", Poly.of(0), gemm.m, []), For("j", Poly.of(0), gemm.n, [])]
        for memory, index, written in seen:
            if memory is None or index is None:
                return None
            if memory in element:
                if written or index != element[memory]:
                    return None
            elif written:
                indices = {ix for m, ix, _ in seen if m == memory}
                if memory in touched or len(indices) != 1 or not _rows_apart(index, pseudo, _list_lengths(moved)):
                    return None
        if not any(m in element for m, _, _ in seen):
            return None
        return end, moved, nest
    return None


def _list_data(moved: list) -> dict:
    """{pointer: its memory} for the pointers ``moved`` sets into a list's buffer: ``(float *)lst->data``, or the
    item ``rt_list_set`` returns. Only pointers whose memory is not known statically (``merge.memory_owners``:
    None) can point into a list: the block a chained nest joins touches none but those of the lists of the nests
    chained before (its footprint has no None), so each list's buffer is memory of its own; two list variables
    are two buffers (a native list is used linearly: ``lists.py`` copies one passed to two loop variables)."""
    data = {}
    for s in moved:
        if isinstance(s, Assign) and isinstance(s.value, Cast) and isinstance(s.value.value, Field) \
                and s.value.value.name == "data" and isinstance(s.value.value.base, Var):
            data[s.name] = f"{s.value.value.base.name}->data"
        elif isinstance(s, Call) and s.name in CHAINED_CALLS and s.result is not None:
            data[s.result] = f"{s.args[1].name}->data"
    return data


def _rows_apart(index: Poly, loops: list, at_least_one: set = frozenset()) -> bool:
    """True when no two iterations of the nest ``loops`` give the same ``index``: dense (``merge.injective``), or
    with each loop's coefficient at least the extent of the loops inside it (``c * n`` for an inner loop of ``n``
    iterations ``c`` apart): by constants (a row of a transposed stack, ``6400 * i + j`` for ``j`` in ``[0, 64)``),
    equal, or the extent times one of the symbols ``at_least_one`` (``64 * n * i + j``: a stack of ``n`` states,
    ``n`` a list's length once an item is set)."""
    if injective(index, loops):
        return True
    names = {f.var for f in loops}
    extent = None           # the loops inside reach offsets in [0, extent)
    for f in reversed(loops):
        coefficient = index.coefficient(f.var)
        if f.start != 0 or coefficient.symbols() & names:
            return False
        if coefficient.const is not None and coefficient.const <= 0:
            return False
        by_constants = coefficient.const is not None and extent is not None and extent.const is not None \
            and coefficient.const >= extent.const
        if extent is not None and coefficient != extent and not by_constants \
                and not any(coefficient == extent * Poly.sym(n) for n in at_least_one):
            return False
        extent = coefficient * f.stop
    return True


def _list_lengths(moved: list) -> set:
    """The names ``moved`` sets to a list's length after setting one of its items (``rt_list_set`` checked the
    index against the length, or grew the list past it): each is at least 1 where the nest runs."""
    lengths, set_lists = set(), set()
    for s in moved:
        if isinstance(s, Call) and s.name in CHAINED_CALLS:
            set_lists.add(s.args[1].name)
        elif isinstance(s, Assign) and isinstance(s.value, Field) and s.value.name == "length" \
                and isinstance(s.value.base, Var) and s.value.base.name in set_lists:
            lengths.add(s.name)
    return lengths


def _parallel_with(gemm) -> bool:
    """Whether the product runs on threads whenever a loop over its result would: static sizes of at least
    PARALLEL_GEMM multiply-adds, or run-time ones with an inner size of at least PARALLEL_GEMM /
    RT_PARALLEL_MIN (then m * n elements worth threads make m * k * n multiply-adds worth them too)."""
    work = (gemm.m * gemm.k * gemm.n).const
    if work is not None:
        return work >= PARALLEL_GEMM
    k = gemm.k.const
    return k is not None and k * PARALLEL_MIN_ELEMENTS >= PARALLEL_GEMM


STREAMS_APART = 2      # arrays besides the product's that make a nest better run apart...
ELEMENTS_APART = PARALLEL_MIN_ELEMENTS     # ... when they hold at least this many elements in all


def _apart(gemm, nest, owner: dict) -> bool:
    """True when the nest streams at least STREAMS_APART arrays besides ``C``, element by element, of
    ELEMENTS_APART elements in all (Adam's update of a weight: its two moments and the weight), and the
    product may run on threads: then the nest runs after the product as a parallel loop of its own. Fused,
    each thread's part would stream those arrays' rows through the cache that holds the part's packed
    operands: on Zen 4 (1 MB L2 a core, 2 threads), the dW1 product of an MLP step (784 x 256 x 128,
    259 us) took about 100 us more with Adam fused into it, where the update alone takes 26-40 us; the
    step ran 717-739 us fused, 647-664 us apart (x86-64-v3), 582-619 against 571-609 (v4). One array
    besides ``C`` (SGD's weight) or a bias row: fused is as fast or faster, and stays."""
    m_n = (gemm.m * gemm.n).const
    if m_n is None or not _may_thread(gemm):
        return False
    loops, body = nest
    body = [rename_indices(s, _element_index(gemm, loops)) for s in body]
    c_memory = owner.get(gemm.c, gemm.c)
    streams = {m for m, index, _ in accesses(body, owner)
               if m != c_memory and index is not None and {"i", "j"} <= index.symbols()}
    return len(streams) >= STREAMS_APART and len(streams) * m_n >= ELEMENTS_APART


def _may_thread(gemm) -> bool:
    work = (gemm.m * gemm.k * gemm.n).const
    return work is None or work >= PARALLEL_GEMM


def _apart_condition(gemm):
    """The parallel condition of a nest run apart: the product's own (``ops.py``: threads when its
    multiply-adds reach RT_GEMM_PARALLEL_MIN), so that the nest runs on threads exactly when the product
    did."""
    threads = Compare(">", NUM_THREADS, Lit(1, "int"))
    work = gemm.m * gemm.k * gemm.n
    if work.const is not None:
        return threads
    return And((Compare(">=", work, Named("gemm_parallel_min")), threads))


def _precedes(footprint, effects) -> bool:
    """True when a statement of ``footprint`` can run before statements of ``effects`` (both as
    ``_footprint``): it writes nothing they read or write, reads nothing they write, reads no name they set
    and sets no name they use."""
    if footprint is None:
        return False
    reads, writes, names_read, names_written = footprint
    their_reads, their_writes, their_names_read, their_names = effects
    return not (writes & (their_reads | their_writes) or reads & their_writes or names_read & their_names
                or names_written & (their_names_read | their_names))


def _footprint(s, owner: dict):
    """(memory read, memory written, names read, names written) of a statement, or None when unknown."""
    if isinstance(s, Comment):
        return set(), set(), set(), set()
    if isinstance(s, Call) and s.name in CHAINED_CALLS:      # rt_list_set(ctx, list, ...): the list's memory
        lst = s.args[1].name
        names = set().union(*(names_in(e) for e in s.exprs()))
        return {owner.get(lst, lst)}, {owner.get(lst, lst)}, names, set(s.out_names())
    if isinstance(s, Call):
        if s.gemm is None:
            return None
        g = s.gemm
        names = {g.a.name, g.b.name, g.c}
        for p in (*g.sizes(), g.a.offset, g.b.offset):
            names |= p.symbols()
        return {owner.get(m, m) for m in g.memory}, {owner.get(g.c, g.c)}, names, set()
    if isinstance(s, Alloc):
        return set(), {owner.get(s.ptr, s.ptr)}, s.count.symbols(), {s.ptr}
    if isinstance(s, Check):
        # a check guards what reads the names it checks (a gather's index, a dim): it counts as setting them, so that
        # no nest reading them moves up past it (the nest would read memory the check has not validated yet)
        names = set().union(*(names_in(e) for e in s.exprs()))
        reads = {owner.get(n.ptr, n.ptr) for e in s.exprs() for n in walk_expr(e) if isinstance(n, Load)}
        return reads, set(), names, names
    if not isinstance(s, (For, Assign, Declare, Store)):
        return None
    reads, writes, names_read, names_written = set(), set(), set(), set()
    for t in walk_stmts([s]):
        if not isinstance(t, (For, Assign, Declare, Store, Comment)):
            return None
        if isinstance(t, For):
            names_written.add(t.var)
        if isinstance(t, (Assign, Declare)):
            names_written.add(t.name)
        for e in t.exprs():
            names_read |= names_in(e)
    for memory, _, written in accesses(list(walk_stmts([s])), owner):
        if memory is None:
            return None
        (writes if written else reads).add(memory)
    return reads, writes, names_read, names_written


def _movable(s, gemm, c_memory: str, owner: dict) -> bool:
    """True when ``s`` (a scalar statement, a check, or the allocation of the nest's result) can run before
    the product: it neither reads ``C`` nor sets a name the call reads. (A stack array the product reads and
    the nest then writes is caught as a written operand.) A check moved before the product (the bounds of
    ``x[t]``, which a recurrence's ``tanh(h @ w + x[t])`` reads) raises its error before the product runs
    instead of after: the product has no effect but ``C``."""
    if isinstance(s, Check):
        return not any(isinstance(e, Load) and owner.get(e.ptr, e.ptr) == c_memory
                       for x in s.exprs() for e in walk_expr(x))
    if isinstance(s, Alloc):
        name, value = s.ptr, s.count
    else:
        name, value = s.name, (s.value if isinstance(s, Assign) else s.init)
    if value is not None and any(isinstance(e, Load) and owner.get(e.ptr, e.ptr) == c_memory
                                 for e in walk_expr(value)):
        return False
    used = {gemm.a.name, gemm.b.name, gemm.c}
    for p in (*gemm.sizes(), gemm.a.offset, gemm.b.offset):
        used |= p.symbols()
    return name not in used


def _element_index(gemm, loops: list):
    """{loop var: its value at element (i, j) of C} when the nest covers C's elements in order, else None."""
    i, j = Poly.sym("i"), Poly.sym("j")
    if any(f.start != 0 for f in loops):
        return None
    if len(loops) == 1 and loops[0].stop == gemm.m * gemm.n and gemm.ldc == gemm.n:
        return {loops[0].var: i * gemm.n + j}
    if len(loops) == 2 and loops[0].stop == gemm.m and loops[1].stop == gemm.n:
        return {loops[0].var: i, loops[1].var: j}
    return None


def _reads_block(gemm, nest, owner: dict) -> bool:
    loops, body = nest
    mapping = _element_index(gemm, loops)
    if mapping is None:
        return False
    body = [rename_indices(s, mapping) for s in body]
    c_memory = owner.get(gemm.c, gemm.c)
    element = Poly.sym("i") * gemm.ldc + Poly.sym("j")
    seen = list(accesses(body, owner))
    if not any(m == c_memory for m, _, _ in seen):
        return False
    if any(m == c_memory and index != element for m, index, _ in seen):
        return False
    pseudo = [For("i", Poly.of(0), gemm.m, []), For("j", Poly.of(0), gemm.n, [])]
    written = {m for m, _, w in seen if w}
    operands = {owner.get(p, p) for p in gemm.memory}
    if None in written or written & operands:
        return False
    for memory in written:
        indices = {index for m, index, _ in seen if m == memory}
        if len(indices) != 1 or None in indices or not injective(indices.pop(), pseudo):
            return False
    return True


def _fused(call: Call, nests: list, locals_: list, g: str) -> list:
    """The GEMM's parts, each followed by the nests over its block, one after the other at each element (see the
    module docstring); ``g``: the fresh name the names of its locals derive from."""
    gemm = call.gemm

    def name(suffix: str) -> str:
        return Namer.derived(g, suffix)
    parts, tn, failed, part = Var(name("parts"), "int"), name("tn"), Var(name("failed"), "int"), name("part")
    i, j = name("i"), name("j")
    body = []
    for loops, nest_body in nests:
        mapping = {var: value.substitute({"i": Poly.sym(i), "j": Poly.sym(j)})
                   for var, value in _element_index(gemm, loops).items()}
        body += [rename_indices(s, mapping) for s in nest_body]
    one, zero = Lit(1, "int"), Lit(0, "int")
    locals_ += [Declare(tn, "int", one), Declare(parts.name, "int", one), Declare(failed.name, "int", zero)]
    bounds = [name(b) for b in ("ilo", "ihi", "jlo", "jhi")]
    rc = name("rc")
    inner = For(j, Poly.sym(bounds[2]), Poly.sym(bounds[3]), body, simd=all(loops[-1].simd for loops, _ in nests))
    part_body = [Declare(b, "int64_t", Poly.of(0)) for b in bounds] + [
        Declare(rc, "int"),
        Call(f"rt_gemm_part_{gemm.suffix}", [
            gemm.a, gemm.lda, gemm.b, gemm.ldb, Ptr(gemm.c), gemm.ldc, gemm.m, gemm.k, gemm.n, Lit(gemm.ta, "int"),
            Lit(gemm.tb, "int"), parts, Var(tn, "int"), Poly.sym(part), *(OutArg(b, "int64_t") for b in bounds)],
            result=rc),
        Assign(failed.name, Arith("|", failed, Var(rc, "int"), "int")),
        For(i, Poly.sym(bounds[0]), Poly.sym(bounds[1]), [inner]),
    ]
    return [
        Comment(f"{call.name} with the loop below run on each part of the product (epilogue)"),
        Call(f"rt_gemm_grid_{gemm.suffix}", [gemm.m, gemm.k, gemm.n, Lit(gemm.ta, "int"), Lit(gemm.tb, "int"),
                                              NUM_THREADS, OutArg(tn, "int")],
             result=parts.name),
        Assign(failed.name, zero),
        For(part, Poly.of(0), Poly.sym(parts.name), part_body, parallel=Compare(">", parts, one),
            reductions=[("|", failed.name)]),
        Check(failed, "MatMul: out of memory for packing the operands"),
    ]
