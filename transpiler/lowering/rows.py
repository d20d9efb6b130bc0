"""Row groups: reductions over trailing axes fused with the ops that read their results.

A group over a domain ``[*rows, *cols]`` becomes one loop over rows (in parallel), and in each row
one pass per reduction over the columns, accumulating in a register, then a last pass storing the
group's results. For a softmax: pass 1 finds the row's max, pass 2 sums ``exp(x - max)``, keeping
each exponential where a later pass reads it (a per-thread row buffer, or the result's own row when the
row is too long for one: chosen at run time for rows of unknown length), pass 3 writes ``e / sum`` over
it; a layer norm is two reduction passes and a store pass. Values of one row (a mean, a ``sqrt(var + eps)``) are
computed once per row, in registers; float32 sums add chunks of ``SUM_CHUNK`` columns in float and
the chunks in double; a division by a row value is a multiplication by its reciprocal in rows where
that reciprocal is a normal number.
"""
from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass, field

from runtime import dtypes
from transpiler.lowering.ir import (
    And,
    Apply,
    Arith,
    Assign,
    Call,
    Cast,
    Compare,
    Declare,
    Helper,
    If,
    Lit,
    Load,
    Poly,
    Ptr,
    Store,
    Var,
    expensive,
    map_expr,
    product,
    walk_expr,
    walk_stmts,
)
from transpiler.lowering.kernels import (
    HEAVY_WEIGHT,
    PAD_LANES,
    PAD_MAX,
    SCRATCH_MAX,
    Accumulator,
    NotInRow,
    acc_ctype,
    chunked_sum,
    float_partial,
    merged_loops,
    pad_inner,
    padded_length,
    parallel_condition,
    versions,
    wrap_loops,
)
from transpiler.lowering.plan import Region
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Array, Scalar


@dataclass
class RowState:
    """What one build of the group's loops knows: which group values exist in this row, and where."""
    cx: object
    region: Region
    knames: list
    rnames: list
    members: dict                        # id(tensor) -> its op, for the group's tensors
    row_stmts: list = field(default_factory=list)     # statements of the row body being built
    pass_stmts: list | None = None                    # statements of the current pass's loop body
    row_values: dict = field(default_factory=dict)    # id(tensor) -> Var of a row value
    scratch: dict = field(default_factory=dict)       # id(tensor) -> scratch buffer name
    hosted: dict = field(default_factory=dict)        # id(tensor) -> the Array whose row holds it instead
    computed: dict = field(default_factory=dict)      # id(tensor) -> Var computed in the current pass
    saved: set = field(default_factory=set)           # ids of scratch values stored by an earlier pass
    computing: set = field(default_factory=set)       # full values being computed now (no self-reads)

    def _row_index(self, t, index) -> bool:
        dims = self.cx.dims[id(t)]
        k = len(self.knames)
        domain = self.region.domain
        for d in range(k):
            if not (index[d] == Poly.sym(self.knames[d]) or domain[d] == 1 and index[d] == 0):
                return False
        return all(i == 0 for i in index[k:]) and len(dims) in (k, len(domain))

    def _full_index(self, index) -> bool:
        names = self.knames + self.rnames
        if len(index) != len(names):
            return False
        return all(i == Poly.sym(n) or self.region.domain[d] == 1 and i == 0
                   for d, (i, n) in enumerate(zip(index, names)))

    def read(self, el, t, index):
        """Region hook of ``Elements.of``: group values at this row; None for everything else."""
        if id(t) not in self.members:
            return None
        dims = self.cx.dims[id(t)]
        if dims != self.region.domain:
            if not self._row_index(t, index):
                raise NotInRow(t.name)
            return self.row_value(el, t)
        if not self._full_index(index):
            raise NotInRow(t.name)
        if id(t) in self.computed:
            return self.computed[id(t)]
        if id(t) in self.saved:
            return self._slot(t)
        if (id(t) in self.scratch or id(t) in self.hosted) and self.pass_stmts is not None:
            value = el.compute(t.op, t.index, index)
            tmp = self.cx.fresh("e")
            slot = self._slot(t)
            self.pass_stmts.append(Declare(tmp, t.dtype.c_type, value))
            self.pass_stmts.append(Store(slot.ptr, slot.index, Var(tmp, t.dtype.c_type)))
            self.computed[id(t)] = Var(tmp, t.dtype.c_type)
            return self.computed[id(t)]
        return None

    def _slot(self, t) -> Load:
        """Where a shared value's element at this row and column is kept: its scratch row, or the row of the
        output hosting it."""
        if id(t) in self.hosted:
            return self.hosted[id(t)].load(tuple(Poly.sym(n) for n in self.knames + self.rnames))
        return Load(self.scratch[id(t)], self._col_offset(), t.dtype.c_type)

    def _col_offset(self) -> Poly:
        dims = self.region.domain[len(self.knames):]
        offset, step = Poly.of(0), Poly.of(1)
        for name, d in reversed(list(zip(self.rnames, dims))):
            offset = offset + Poly.sym(name) * step
            step = step * d
        return offset

    def row_value(self, el, t):
        if id(t) in self.row_values:
            return self.row_values[id(t)]
        op = self.members[id(t)]
        if op.opdef.reduction is not None:
            raise NotInRow(f"{t.name} is read before its pass")
        index = tuple(Poly.sym(n) for n in self.knames)
        index = index + (Poly.of(0),) * (len(self.cx.dims[id(t)]) - len(index))
        saved = self.pass_stmts
        self.pass_stmts = None
        value = el.compute(op, t.index, index)
        self.pass_stmts = saved
        tmp = self.cx.fresh("row")
        self.row_stmts.append(Declare(tmp, t.dtype.c_type, value))
        self.row_values[id(t)] = Var(tmp, t.dtype.c_type)
        return self.row_values[id(t)]


def emit_region(cx, region: Region) -> list:
    """The statements of a row group (or of its ops one by one when a read does not follow the rows)."""
    try:
        return _build(cx, region)
    except NotInRow:
        return _unfused(cx, region)


def _unfused(cx, region: Region) -> list:
    """The group's ops one by one, each result stored."""
    out = []
    for op in region.members:
        for t in op.outputs:
            cx.scope.plan.stored.add(id(t))
        out += cx.lower_op(op)
    return out


def _build(cx, region: Region) -> list:
    plan = cx.scope.plan
    members = {id(t): op for op in region.members for t in op.outputs}
    member_ids = {id(op) for op in region.members}
    domain = region.domain
    k = len(domain) - region.reduced
    stored = [t for op in region.members for t in op.outputs if id(t) in plan.stored]
    targets = {}
    prelude = []
    for t in stored:
        target, allocs = storage(cx, t)
        prelude += allocs
        cx.values[id(t)] = None
        targets[id(t)] = target
    shared = _shared(cx, region, members, member_ids)
    full = [t for t in stored if cx.dims[id(t)] == domain and members[id(t)].opdef.reduction is None]
    cols = product(domain[k:])
    fits = cols.const is not None and cols.const <= SCRATCH_MAX
    hosts = {} if fits else _hosts(cx, shared, full, targets)
    full.sort(key=lambda t: id(t) in hosts.values())     # a host's store last: the others read its row first

    def build(el, kept: list, hosting: dict, one_vector: bool = False, short: bool = False):
        """The group's loops with the shared values ``kept``: in the row of the output ``hosting`` names, else
        in a scratch row (the others are computed where they are read); ``one_vector``: for rows of unknown
        length up to ``PAD_LANES``, run as one whole vector; ``short``: for rows of unknown length up to
        ``PAD_MAX``, run as whole vectors and a masked last one (``pad_inner``)."""
        knames = [cx.fresh("k") for _ in range(k)]
        rnames = [cx.fresh("r") for _ in range(region.reduced)]
        state = RowState(cx, region, knames, rnames, members)
        el.region = state
        for t in kept:
            if id(t) in hosting:
                state.hosted[id(t)] = targets[hosting[id(t)]]
                continue
            state.scratch[id(t)] = cx.fresh("scratch")
            size = padded_length(cols.const) if cols.const is not None else PAD_LANES if one_vector else \
                PAD_MAX if short else SCRATCH_MAX
            state.row_stmts.append(Declare(state.scratch[id(t)], t.dtype.c_type, size=size))
        whole = frozenset(state.scratch.values())      # whole vectors: padded row loops need no masks there

        def row_loops(body: list, live: Var | None = None) -> tuple[list, list, list]:
            """``pad_inner`` of the loops over a row around ``body``."""
            return pad_inner(cx, *merged_loops(cx, list(domain[k:]), rnames, body), live, whole, one_vector, short)
        index = tuple(Poly.sym(n) for n in knames + rnames)
        reductions = [op for op in region.members if op.opdef.reduction is not None]
        for op in reductions:
            state.pass_stmts = []
            state.computed = {}
            value = el.of(op.inputs[0], index)
            if any(i in state.scratch for i in state.computed):
                # the pass computes shared values into scratch rows: a loop of its own stores them, and the
                # reduction reads them back from L1. With the accumulator in the same loop as their vector math
                # calls, it lived on the stack across each call (no vector register survives one), a
                # store-to-load chain per vector: softmax over [4096, 1024] at AVX2 took 1020 us, now 910 us
                state.saved |= set(state.computed)
                loops, body, prelude = row_loops(state.pass_stmts)
                state.row_stmts += prelude + wrap_loops(loops, body)
                state.pass_stmts = []
                state.computed = {}
                value = el.of(op.inputs[0], index)
            out = op.outputs[0]
            acc = Accumulator(op, cx.fresh("acc"), acc_ctype(op, op.inputs[0].dtype), out.dtype,
                              product(domain[k:]))
            part = float_partial(cx, acc, op)
            live = Var(cx.fresh("live"), "int")
            body = state.pass_stmts + (part or acc).update(cx, value, live)
            state.saved |= set(state.computed)
            loops, body, prelude = row_loops(body, live)
            state.row_stmts += prelude
            if part is None or not loops:
                state.row_stmts += acc.declare() + wrap_loops(loops, body, reductions=acc.clauses())
            elif short:          # a row shorter than a chunk: one chunk
                inner = wrap_loops(loops[-1:], body, reductions=part.clauses()) + acc.combine_with(part.name)
                state.row_stmts += acc.declare() + part.declare() + wrap_loops(loops[:-1], inner, simd=False)
            else:
                inner = chunked_sum(cx, loops[-1], body, part, acc)
                state.row_stmts += acc.declare() + part.declare() + wrap_loops(loops[:-1], inner, simd=False)
            if op is reductions[0] and not (one_vector or short):
                state.row_stmts += _prefetch_next_rows(state, body, cols)
            final = cx.fresh("row")
            state.row_stmts.append(Declare(final, out.dtype.c_type, acc.final()))
            state.row_values[id(out)] = Var(final, out.dtype.c_type)
        state.pass_stmts = []
        state.computed = {}
        stores = []
        for t in full:
            value = el.compute(members[id(t)], t.index, index)
            stores.append(_store(targets[id(t)], index, value))
        streamed = [] if hosting or one_vector or short else _streamable(state, full, targets, index, cols)
        stream_flag = cx.fresh("stream") if streamed else None
        if stores:
            body = state.pass_stmts + stores
            fast, cond = _reciprocals(cx, state, deepcopy(body))
            first = len(state.row_stmts)
            loops, body, prelude = row_loops(body)
            state.row_stmts += prelude
            if cond is None:
                state.row_stmts += wrap_loops(loops, body)
            else:
                fast_loops, fast, prelude = row_loops(fast)
                state.row_stmts += prelude
                state.row_stmts.append(If(cond, wrap_loops(fast_loops, fast), wrap_loops(loops, body)))
            if streamed:
                plain = state.row_stmts[first:]
                state.row_stmts[first:] = [If(Var(stream_flag, "int"),
                                              _streaming(cx, deepcopy(plain), streamed, state, cols), plain)]
        for t in stored:
            target = targets[id(t)]
            if cx.dims[id(t)] != domain or members[id(t)].opdef.reduction is not None:
                value = state.row_value(el, t)
                row_index = tuple(Poly.sym(n) for n in knames) + (Poly.of(0),) * (len(cx.dims[id(t)]) - k)
                state.row_stmts.append(_store(target, row_index, value))
        loops, body = merged_loops(cx, list(domain[:k]), knames, state.row_stmts)
        rows = product(domain[:k])
        cond = parallel_condition(product(domain), HEAVY_WEIGHT if any(map(_expensive, region.members)) else 1)
        if cond is not None and rows.const is not None and rows.const < 2:
            cond = None
        total = product(domain) * sum(nbytes for _, _, nbytes, _ in streamed)
        decide = [Declare(stream_flag, "int", Helper("rt_streams", (total,), "int"))] if streamed else []
        return decide + wrap_loops(loops, body, cond, simd=False, independent=True)
    if fits:
        return prelude + versions(cx, lambda el: build(el, shared, {})) + _values(cx, stored, targets)
    out = versions(cx, lambda el: build(el, [t for t in shared if id(t) in hosts], hosts))
    if cols.const is None and shared:
        # rows of unknown length: where a row fits a scratch row, the version that keeps the shared values
        # there (the result's row written once, the values computed in a loop of their own): softmax over
        # [None, None] ran 1.25x its [4096, 1024] spelling with AVX-512 without it
        scratch = versions(cx, lambda el: build(el, shared, {}))
        out = [If(Compare("<=", cols, Lit(SCRATCH_MAX, "int64_t")), scratch, out)]
    if cols.const is None:
        # rows of unknown length up to PAD_MAX: whole vectors, then a masked one, as static short rows run
        short = versions(cx, lambda el: build(el, shared, {}, short=True))
        out = [If(Compare("<=", cols, Lit(PAD_MAX, "int64_t")), short, out)]
        # rows of unknown length up to one vector (10 classes): as the static spelling runs them
        one = versions(cx, lambda el: build(el, shared, {}, one_vector=True))
        out = [If(Compare("<=", cols, Lit(PAD_LANES, "int64_t")), one, out)]
    return prelude + out + _values(cx, stored, targets)


# Rows shorter than this many bytes are not prefetched: the next row is in the lines this one brought.
PREFETCH_MIN_BYTES = 256


def _prefetch_next_rows(state: RowState, body: list, cols) -> list:
    """``rt_prefetch_bytes`` of the next row of each array the first pass reads a whole contiguous row of
    (``x[k, r]``, not a broadcast ``gamma[r]``): issued after that pass, it brings the next row into L2 while
    this row's other passes compute from L1 (the first pass of a row otherwise waits for memory)."""
    calls, seen = [], set(state.scratch.values())
    col = state._col_offset()
    rows = set(state.knames)
    for s in walk_stmts(body):
        for e in s.exprs():
            for node in walk_expr(e):
                if not isinstance(node, Load) or node.indirect or node.ptr in seen:
                    continue
                start = node.index.substitute({r: Poly.of(0) for r in state.rnames})
                size = _ELEMENT_BYTES.get(node.ctype)
                if size is None or node.index - start != col or not start.symbols() & rows:
                    continue
                if cols.const is not None and cols.const * size < PREFETCH_MIN_BYTES:
                    continue
                seen.add(node.ptr)
                calls.append(Call("rt_prefetch_bytes", [Ptr(node.ptr, start + cols), cols * size]))
    return calls


_ELEMENT_BYTES = {d.c_type: d.size for d in dtypes.ALL if d.c_type}


# Static rows shorter than this many bytes are not streamed (the rows of unknown length that can be are longer
# than PAD_MAX elements): a row buffer and a copy per row of a few lines would double the stores' code for little.
STREAM_ROW_MIN_BYTES = 1024


def _streamable(state: RowState, full: list, targets: dict, index: tuple, cols) -> list:
    """``(buffer, element type, element bytes, row start)`` of each full-row result whose rows are contiguous in its
    memory: written through a row buffer and ``rt_stream_copy`` when the results are too big for the cache
    (``rt_streams``, decided once per call)."""
    out = []
    col = state._col_offset()
    for t in full:
        target = targets[id(t)]
        if not isinstance(target, Array) or cols.const is not None and cols.const * t.dtype.size < STREAM_ROW_MIN_BYTES:
            continue
        at = target.load(index).index
        start = at.substitute({r: Poly.of(0) for r in state.rnames})
        if at - start == col:
            out.append((target.ptr, t.dtype.c_type, t.dtype.size, start))
    # results in one buffer (parts of a concatenation) are told apart by their row starts only: written plainly
    ptrs = [ptr for ptr, *_ in out]
    return [entry for entry in out if ptrs.count(entry[0]) == 1]


def _streaming(cx, stmts: list, streamed: list, state: RowState, cols) -> list:
    """The store pass ``stmts`` writing the rows of the ``streamed`` results into row buffers instead, then each
    buffer streamed to its row (``rt_stream_copy``)."""
    size = padded_length(cols.const) if cols.const is not None else SCRATCH_MAX
    rows = set(state.knames)
    buffers = {ptr: (cx.fresh("row_out"), start) for ptr, _, _, start in streamed}
    out = [Declare(buffers[ptr][0], ctype, size=size) for ptr, ctype, _, _ in streamed]
    for s in walk_stmts(stmts):
        if isinstance(s, Store) and s.ptr in buffers:
            buffer, start = buffers[s.ptr]
            s.ptr, s.index = buffer, s.index.without(rows) - start.without(rows)
    out += stmts
    for ptr, _, nbytes, start in streamed:
        out.append(Call("rt_stream_copy", [Ptr(ptr, start), Ptr(buffers[ptr][0]), cols * nbytes]))
    return out


_NORMAL = {"float": ("fabsf", 2.0 ** -126, 2.0 ** 126), "double": ("fabs", 2.0 ** -1022, 2.0 ** 1022)}


def _reciprocals(cx, state: RowState, body: list) -> tuple[list, object]:
    """``body`` with each division by a row value (``e / sum``, ``(x - mean) / std``) a multiplication by its
    reciprocal, computed once per row, and the condition under which that version runs (None: no such
    division).

    ``a * (1 / d)`` differs from ``a / d`` by at most an ulp or so while ``1 / d`` is a normal number; rows
    whose divisor is out of that range (0, subnormal, huge, inf, NaN) run the divisions as written, so that
    infinities, NaN and underflow come out as numpy's.
    """
    row_vars = {v.name: v for v in state.row_values.values()}
    inverses: dict[str, Var] = {}

    def swap(e):
        if isinstance(e, Apply) and e.opdef.type == "RealDiv" and isinstance(e.args[1], Var) \
                and e.args[1].name in row_vars and e.out_dtype.c_type in _NORMAL \
                and all(t.c_type == e.out_dtype.c_type for t in e.in_dtypes):
            d = e.args[1]
            if d.name not in inverses:
                inverses[d.name] = Var(cx.fresh("inv"), d.ctype)
                one = Cast(Lit(1, "int"), d.ctype)
                state.row_stmts.append(Declare(inverses[d.name].name, d.ctype, Arith("/", one, d, d.ctype)))
            return Arith("*", map_expr(e.args[0], on_node=swap), inverses[d.name], e.ctype)
        return None
    for stmt in body:
        if isinstance(stmt, (Store, Declare)):
            stmt.map_exprs(lambda e: e if isinstance(e, Poly) else map_expr(e, on_node=swap))
    if not inverses:
        return body, None
    conds = []
    for name in inverses:
        d = row_vars[name]
        fabs, low, high = _NORMAL[d.ctype]
        size = Helper(fabs, (d,), d.ctype)
        conds += [Compare(">=", size, Lit(low, d.ctype)), Compare("<=", size, Lit(high, d.ctype))]
    return body, And(tuple(conds))


def _values(cx, stored, targets) -> list:
    for t in stored:
        cx.values[id(t)] = targets[id(t)]
    return []


def _store(target, index, value):
    if isinstance(target, Scalar):
        return Assign(target.expr.name, value)
    return Store(target.ptr, target.load(index).index, value)


def _shared(cx, region, members, member_ids) -> list:
    """Full-domain group values that several group members read and that cost more than a few ops."""
    readers: dict[int, int] = {}
    for op in region.members:
        for t in op.inputs:
            if id(t) in members:
                readers[id(t)] = readers.get(id(t), 0) + 1
    out = []
    for op in region.members:
        for t in op.outputs:
            if cx.dims[id(t)] == region.domain and op.opdef.reduction is None and readers.get(id(t), 0) > 1 \
                    and _expensive(op):
                out.append(t)
    return out


def _hosts(cx, shared, full, targets) -> dict:
    """id(shared value) -> id(output) for the one shared value kept in the row of a full-domain output, for rows
    too long (or possibly too long) for a scratch row.

    The output's row is written only by the last pass, after every pass that reads the shared value, and its
    element is read there just before it is overwritten. A scratch row is better where it fits: the output's
    row then is written once, by the last pass, and the values go to the scratch row in a loop of their own
    (``_build``); together these took softmax over [4096, 1024] from 1020 to 910 us with AVX2 (either alone
    gained nothing in a C model of the loops). The output must be memory of its own (not a loop's or branch's
    destination, not a scalar) and not a shared value itself.
    """
    shared_ids = {id(t) for t in shared}
    for t in shared:
        for out in full:
            target = targets[id(out)]
            if isinstance(target, Array) and target.storage in ("arena", "stack", "reserve") \
                    and id(out) not in cx.scope.dests and id(out) not in shared_ids \
                    and out.dtype.c_type == t.dtype.c_type:
                return {id(t): id(out)}
    return {}


def _expensive(op) -> bool:
    return expensive(op.opdef.c_expr)
