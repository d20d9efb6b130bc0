"""Kernels: the loop nests that compute stored tensors, built from what the op table says of each op.

``Elements.of(t, index)`` is the expression of one element of tensor ``t`` at a symbolic index: a
load when ``t`` is in memory, a register when it is a ``Scalar``, else the op's own element rule
applied to its inputs' elements: ``c_expr`` for elementwise ops and generators, an index map for
views (transpose, slice, expand/squeeze, unpack, gather). Broadcasting is part of the index map: a
dim of size 1 reads index 0 (a zero stride).

``nest`` turns a body over one index variable per dim into loops: adjacent dims that every index
expression walks contiguously become one loop, the innermost loop is vectorised (``omp simd``), and
the outermost big one runs on several threads. ``elementwise``, ``reduce`` and ``rows`` (a fused
row-wise group: softmax, layer norm) build on them.
"""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from dataclasses import dataclass, field

import numpy as np

from runtime import dtypes
from runtime.config import PARALLEL_MIN_ELEMENTS
from transpiler.lowering.ir import (
    NUM_THREADS,
    And,
    Apply,
    Arith,
    Assign,
    Cast,
    Combine,
    Compare,
    Declare,
    Expr,
    For,
    Helper,
    If,
    Index,
    Lit,
    Load,
    Named,
    Neg,
    Poly,
    Select,
    Store,
    Var,
    literal,
    map_expr,
    product,
    rename,
    walk_expr,
    walk_stmts,
)
from transpiler.lowering.storage import temporary
from transpiler.lowering.values import Array, Obj, Scalar

UNROLL_MAX = 8         # a reduction over at most this many static elements is unrolled (the row loop vectorises)
UNROLL_SUM_MAX = 16    # ... a sum over at most this many (pairwise distances of 16-d points 2.4x faster; a max
                       # of 12 was slower: its NaN flags unrolled cost more than a padded vector of the row)
CHUNKS = 16            # a big full reduction: partial results per chunk, combined in order (deterministic)
SCRATCH_MAX = 16384    # elements of a per-row scratch buffer (on the stack of each thread)
SUM_CHUNK = 512        # elements of a row that a float32 sum adds up in float before adding them to its double total
COLUMN_LOCAL_MAX = 512  # kept elements of a column reduction accumulated in a local array
COLUMN_PARTIAL_MAX = 4096   # ... in a row of partial results per chunk of rows (32 KiB of doubles)
# a row group calling vector math (exp, tanh, log) costs about this many plain ops per element: softmax over
# [8192, 10] (82K elements, under PARALLEL_MIN_ELEMENTS) took 117 us on one thread, 60 us on two
HEAVY_WEIGHT = 4
PAD_LANES = 16         # a short static innermost loop runs a whole number of these (64 bytes of float32)
PAD_MAX = 128          # ... when it has fewer iterations than this


class NotInRow(Exception):
    """A row group read one of its row values at another row: the group cannot be fused."""


# ---------------------------------------------------------------------------
# Elements of tensors at symbolic indices.


def _below_its_max(t) -> bool:
    """Whether ``t`` is ``x - reduce_max(x, axes, keepdims=True)``: at most 0 (or NaN) at every element, each
    element of ``x`` minus the max of a set that holds it (a softmax's, a log-softmax's shift)."""
    if t.op.type != "Sub":
        return False
    x, top = t.op.inputs
    return top.op.type == "Max" and bool(top.op.attrs.get("keepdims")) and top.op.inputs[0].name == x.name


@dataclass
class Elements:
    """Builds element expressions for one kernel.

    ``general``: run-time dims that may broadcast (size 1 or not) read through a 0/1 ``flag``;
    otherwise they are assumed equal to the dims they broadcast with, and ``assumptions`` collects
    the pairs that the kernel's fast version checks before running.
    """
    cx: object
    general: bool = False
    region: object = None
    assumptions: list = field(default_factory=list)
    flags: dict = field(default_factory=dict)

    def of(self, t, index) -> Expr:
        index = tuple(Poly.of(i) for i in index)
        if self.region is not None:
            hit = self.region.read(self, t, index)
            if hit is not None:
                return hit
        value = self.cx.values.get(id(t))
        if isinstance(value, Scalar):
            return value.expr
        if isinstance(value, Array):
            return value.load(index)
        if isinstance(value, Obj):
            raise ValueError(f"{t.name}: elements of a {t.dtype} value are not native")
        return self.compute(t.op, t.index, index)

    def compute(self, op, position: int, index: tuple) -> Expr:
        """An element of output ``position`` of ``op`` from its inputs' elements (the op's rule)."""
        cx = self.cx
        index = tuple(Poly.of(i) for i in index)
        opdef = op.opdef
        out = op.outputs[position]
        if opdef.elementwise:
            args = tuple(self.of(x, self.broadcast(x, out, index)) for x in op.inputs)
            if op.type == "Exp" and out.dtype == dtypes.float32 and _below_its_max(op.inputs[0]):
                return Helper("rt_exp_nonpositive_float32", args, "float")
            return Apply(opdef, args, tuple(x.dtype for x in op.inputs), out.dtype)
        if opdef.generator:
            args = tuple(self.of(x, (0,) * len(cx.dims[id(x)])) if "{" + str(k) + "}" in opdef.c_expr
                         else Lit(0, "int") for k, x in enumerate(op.inputs))
            return Apply(opdef, args, tuple(x.dtype for x in op.inputs), out.dtype, index)
        if op.type == "Shape":
            dims = cx.dims[id(op.inputs[0])]
            if index[0].const is not None:
                return Index(dims[index[0].const], out.dtype.c_type)
            value = Poly.of(0)
            for d in reversed(range(len(dims))):
                value = Select(Compare("==", index[0], Poly.of(d)), dims[d], value, "int64_t")
            return Cast(value, out.dtype.c_type)
        if op.type == "Size":
            return Index(product(cx.dims[id(op.inputs[0])]), out.dtype.c_type)
        if op.type == "Rank":
            return Lit(len(cx.dims[id(op.inputs[0])]), out.dtype.c_type)
        if opdef.view == "gather":
            return self._gather(op, index)
        if op.type == "Const":       # a constant of one repeated value (zeros_like folded): a literal
            return literal(op.attrs["value"].array.reshape(-1)[0], out.dtype)
        rule = INDEXED.get(op.type)
        if rule is not None:
            return rule(self, op, index)
        if opdef.view is not None:
            source, mapped = view_index(cx, op, position, index)
            return self.of(source, mapped)
        raise ValueError(f"{op.type} has no element rule")

    def broadcast(self, x, out, index: tuple) -> tuple:
        """``x``'s index for element ``index`` of ``out`` (numpy broadcasting: right-aligned dims)."""
        xd, od = self.cx.dims[id(x)], self.cx.dims[id(out)]
        shift = len(od) - len(xd)
        mapped = []
        for e, dim in enumerate(xd):
            d = e + shift
            if dim == 1:
                mapped.append(Poly.of(0))
            elif dim == od[d] or dim.const is not None:
                mapped.append(index[d])
            elif self.general:
                mapped.append(index[d] * self.flag(dim))
            else:
                if (dim, od[d]) not in self.assumptions:
                    self.assumptions.append((dim, od[d]))
                mapped.append(index[d])
        return tuple(mapped)

    def flag(self, dim: Poly) -> Poly:
        """A symbol that is 0 when ``dim`` is 1 at run time (a broadcast), else 1."""
        if dim not in self.flags:
            self.flags[dim] = self.cx.fresh("nb")
        return Poly.sym(self.flags[dim])

    def _gather(self, op, index: tuple) -> Expr:
        params, indices = op.inputs
        axis = op.attrs["axis"] % len(self.cx.dims[id(params)])
        ri = len(self.cx.dims[id(indices)])
        value = self.cx.values.get(id(params))
        if isinstance(value, Scalar):
            return value.expr         # one element: every index that passed the range check picks it
        if not isinstance(value, Array):
            raise ValueError("gather from a tensor that is not in memory")
        which = self.of(indices, index[axis:axis + ri])
        rest = index[:axis] + (Poly.of(0),) + index[axis + ri:]
        load = value.load(rest)
        return Load(load.ptr, load.index, load.ctype, ((which, value.strides[axis]),))


# ---------------------------------------------------------------------------
# Element rules of the "indexed" ops: an element is an input element picked by an index map that is
# not a strided view (a broadcast that may be decided at run time, a one-hot row, a padding).


def _broadcast_to(el, op, index: tuple) -> Expr:
    x = op.inputs[0]
    return el.of(x, el.broadcast(x, op.outputs[0], index))


def _one_hot(el, op, index: tuple) -> Expr:
    out = op.outputs[0]
    axis = op.attrs["axis"] % len(index)
    on, off = (literal(op.attrs[k], out.dtype) for k in ("on_value", "off_value"))
    hot = el.of(op.inputs[0], index[:axis] + index[axis + 1:])
    return Select(Compare("==", Cast(hot, "int64_t"), Index(index[axis])), on, off, out.dtype.c_type)


def _pad(el, op, index: tuple) -> Expr:
    """``PadV2``/``MirrorPad``: padded dims read through ``rt_pad_source`` (an indirect index); a constant pad
    selects the constant outside the input."""
    x = op.inputs[0]
    value = el.cx.values.get(id(x))
    if not isinstance(value, (Array, Scalar)):
        raise ValueError("a pad reads a tensor that is not in memory")
    dims = el.cx.dims[id(x)]
    mode = PAD_MODES[op.attrs["mode"]]
    direct, indirect, inside = [], [], []
    for d, (before, after) in enumerate(el.cx.shapes.pads[id(op)]):
        shifted = index[d] - before
        if before == 0 and after == 0:
            direct.append(shifted)
            continue
        direct.append(Poly.of(0))
        j = Index(shifted)
        if isinstance(value, Array):
            indirect.append((pad_source(j, dims[d], mode), value.strides[d]))
        inside.append(Compare("<", Cast(j, "uint64_t"), Cast(dims[d], "uint64_t")))
    if isinstance(value, Scalar):
        load = value.expr              # one element: every position inside (or mirrored inside) reads it
    else:
        base = value.load(direct)
        load = Load(base.ptr, base.index, base.ctype, tuple(indirect))
    if mode or not inside:
        return load
    constant = el.of(op.inputs[2], ())
    return Select(And(tuple(inside)), load, constant, x.dtype.c_type)


def pad_source(j: Expr, n: Poly, mode: int) -> Expr:
    """The position of an input of ``n`` elements that position ``j`` of a padded axis reads (``rt_pad_source``)."""
    return Helper("rt_pad_source", (j, n, Lit(mode, "int")), "int64_t")


def _pad_grad(el, op, index: tuple) -> Expr:
    """The gradient of a constant pad: the input's part of the padded gradient (a shifted read)."""
    pads = el.cx.shapes.pads[id(op)]
    return el.of(op.inputs[0], tuple(i + before for i, (before, _) in zip(index, pads)))


PAD_MODES = {"CONSTANT": 0, "REFLECT": 1, "SYMMETRIC": 2}

INDEXED = {"BroadcastTo": _broadcast_to, "OneHot": _one_hot, "PadV2": _pad, "MirrorPad": _pad,
           "PadGrad": _pad_grad}


def indexed(op) -> bool:
    """True for an op computed element by element through ``INDEXED`` (a mirrored ``PadGrad`` sums: opaque), or
    a constant array of one repeated value (a literal where it is read, not an array in the binary)."""
    if op.type == "PadGrad":
        return op.attrs["mode"] == "CONSTANT"
    if op.type == "Const":
        flat = np.ascontiguousarray(op.attrs["value"].array).reshape(-1)
        if flat.size < 2 or flat.dtype == object:
            return False
        raw = flat.view(np.uint8).reshape(flat.size, -1)
        return bool((raw == raw[:1]).all())
    return op.type in INDEXED


def view_index(cx, op, position: int, index: tuple) -> tuple:
    """(input tensor, its index) that element ``index`` of a view op's output reads."""
    family = op.opdef.view
    x = op.inputs[0]
    if family == "transpose":
        rank = len(index)
        perm = op.attrs["perm"] or tuple(reversed(range(rank)))
        mapped = [None] * rank
        for d, p in enumerate(perm):
            mapped[p] = index[d]
        return x, tuple(mapped)
    if family == "expand_dims":
        axis = op.attrs["axis"] % len(index)
        return x, index[:axis] + index[axis + 1:]
    if family == "squeeze":
        mapped = list(index)
        for a in sorted(cx.shapes.squeezed[id(op)]):
            mapped.insert(a, Poly.of(0))
        return x, tuple(mapped)
    if family == "unpack":
        axis = op.attrs["axis"] % (len(index) + 1)
        return x, index[:axis] + (Poly.of(position),) + index[axis:]
    if family == "reshape":
        # a reshape of a tensor not in memory: the planner stores its input, so this is an alias
        raise ValueError("reshape is an alias of its stored input")
    if family == "strided_slice":
        return x, slice_index(cx.shapes.slices[id(op)], index)
    raise ValueError(f"unknown view family {family!r}")


def slice_index(plan: list, index: tuple) -> tuple:
    """The index into a sliced tensor that element ``index`` of the slice reads (``plan`` from
    ``shapes.slice_plan``: ``("new",)``, ``("fixed", k)`` or ``("range", begin, step)`` per item)."""
    mapped, j = [], 0
    for item in plan:
        if item[0] == "new":
            j += 1
        elif item[0] == "fixed":
            mapped.append(item[1])
        else:
            _, begin, step = item
            mapped.append(begin + step * index[j])
            j += 1
    return tuple(mapped)


def view_array(cx, op, position: int, base: Array) -> Array:
    """A view op's output over its stored input's memory: the index map folded into the strides."""
    dims = cx.dims[id(op.outputs[position])]
    names = [cx.fresh("v") for _ in dims]
    source, mapped = view_index(cx, op, position, tuple(Poly.sym(n) for n in names))
    offset = base.load(mapped).index
    strides = tuple(offset.coefficient(n) for n in names)
    return Array(base.ptr, base.dtype, dims, strides, offset.without(names), base.storage)


def loads(exprs) -> list[Load]:
    return [n for e in exprs for n in walk_expr(e) if isinstance(n, Load)]


# ---------------------------------------------------------------------------
# Loop nests.


def _body_polys(body: list) -> list[Poly]:
    return [p for s in walk_stmts(body) for e in s.exprs() for node in walk_expr(e) for p in node.polys()]


def substitute(body: list, mapping: dict) -> list:
    """``body`` with index symbols replaced (``{name: Poly}``), in place of the statements' polys."""
    def expr(e):
        return map_expr(e, lambda p: p.substitute(mapping))
    for s in walk_stmts(body):
        s.map_exprs(expr)
    return body


def merge_plan(dims: list, names: list, body: list, kinds: list | None = None) -> list[list[int]]:
    """Groups of adjacent dims (of the same kind) that every index in ``body`` walks contiguously."""
    polys = _body_polys(body)
    groups: list[list[int]] = []
    for d in range(len(dims)):
        if groups and (kinds is None or kinds[groups[-1][-1]] == kinds[d]):
            a = groups[-1][-1]
            if all(p.coefficient(names[a]) == p.coefficient(names[d]) * dims[d] for p in polys):
                groups[-1].append(d)
                continue
        groups.append([d])
    return groups


def merged_loops(cx, dims: list, names: list, body: list, kinds: list | None = None):
    """Merge dims (see ``merge_plan``) and substitute: -> (loops as (var, extent, kind), body)."""
    groups = merge_plan(dims, names, body, kinds)
    mapping, loops = {}, []
    for g in groups:
        extent = product(dims[d] for d in g)
        kind = kinds[g[0]] if kinds is not None else None
        if extent == 1:
            for d in g:
                mapping[names[d]] = Poly.of(0)
            continue
        if len(g) == 1:
            loops.append((names[g[0]], extent, kind))
            continue
        var = cx.fresh("i")
        for d in g[:-1]:
            mapping[names[d]] = Poly.of(0)
        mapping[names[g[-1]]] = Poly.sym(var)
        loops.append((var, extent, kind))
    return loops, substitute(body, mapping)


def parallel_condition(total: Poly, weight: int = 1) -> Expr | None:
    """When a loop nest over ``total`` elements should run on several threads (None: never); ``weight``: the
    elements' cost in plain arithmetic ops' (``HEAVY_WEIGHT`` for a vector math call per element)."""
    value = total.const
    threads = Compare(">", NUM_THREADS, Lit(1, "int"))
    if value is not None:
        return threads if value * weight >= PARALLEL_MIN_ELEMENTS else None
    return And((Compare(">=", total * weight, Named("parallel_min")), threads))


def wrap_loops(loops: list, body: list, parallel=None, simd: bool = True, reductions=None,
               parallel_at: int | None = None, independent: bool = False) -> list:
    """``loops`` (outermost first) around ``body``: the innermost vectorised, loop ``parallel_at``
    (default: the outermost with more than 3 iterations) parallel under condition ``parallel``, and marked
    ``independent`` when its iterations are (``For.independent``) whether or not it runs on threads."""
    if not loops:
        return body
    if (parallel is not None or independent) and parallel_at is None:
        parallel_at = 0
        for k, (_, extent, _) in enumerate(loops[:-1]):
            if extent.const is None or extent.const > 3:
                break
            parallel_at = k + 1
    for k in reversed(range(len(loops))):
        var, extent, _ = loops[k]
        inner = k == len(loops) - 1
        before = []
        if inner and simd and len(loops) > 1:
            before, body = hoist_row_indices(var, body)
        body = before + [For(var, Poly.of(0), extent, body, parallel=parallel if k == parallel_at else None,
                             simd=simd and inner, reductions=list(reductions or []) if inner else [],
                             independent=independent and k == parallel_at)]
    return body


def hoist_row_indices(var: str, body: list) -> tuple[list, list]:
    """``(declarations, body)``: a gather's index that the vectorised loop over ``var`` does not change (the
    row of ``x[idx[r], j]`` in the loop over ``j``) read once, into a local declared before that loop. GCC
    does not move such a load out of an ``omp simd`` loop itself and leaves the loop scalar: a batch of rows
    gathered by a permutation and summed ran at a quarter of the speed of contiguous rows."""
    if not all(isinstance(s, (Declare, Assign, Store)) for s in body):
        return [], body
    hoisted: dict[Expr, Var] = {}
    declarations: list = []
    local = {var} | {s.name for s in body if isinstance(s, (Declare, Assign))}

    def invariant(e) -> bool:
        return all(var not in p.symbols() for node in walk_expr(e) for p in node.polys()) and \
            not any(isinstance(node, Var) and node.name in local for node in walk_expr(e))

    def on_node(e):
        if not (isinstance(e, Load) and e.indirect and any(invariant(x) for x, _ in e.indirect)):
            return None
        terms = []
        for x, multiplier in e.indirect:
            if invariant(x):
                key = x                 # expressions are values: equal ones read the same index
                if key not in hoisted:
                    # derived from the loop variable's name, ending in a letter (ir.Namer's fresh names end in a digit)
                    hoisted[key] = Var(f"{var}_row{_letters(len(hoisted))}", "int64_t")
                    declarations.append(Declare(hoisted[key].name, "int64_t", Cast(x, "int64_t")))
                x = hoisted[key]
            terms.append((x, multiplier))
        return Load(e.ptr, e.index, e.ctype, tuple(terms))

    out = []
    for s in body:
        if isinstance(s, Declare) and isinstance(s.init, Expr):
            s = Declare(s.name, s.ctype, map_expr(s.init, on_node=on_node), s.size)
        elif isinstance(s, Assign) and isinstance(s.value, Expr):
            s = Assign(s.name, map_expr(s.value, on_node=on_node))
        elif isinstance(s, Store) and isinstance(s.value, Expr):
            s = Store(s.ptr, s.index, map_expr(s.value, on_node=on_node))
        out.append(s)
    return declarations, out


def _letters(n: int) -> str:
    """``n`` in base 26 written with the letters a-z (0 -> a, 25 -> z, 26 -> ba): a name part without digits."""
    out = chr(ord("a") + n % 26)
    while n >= 26:
        n //= 26
        out = chr(ord("a") + n % 26) + out
    return out


def pad_inner(cx, loops: list, body: list, live: Var | None = None, whole: frozenset = frozenset(),
              one_vector: bool = False, short: bool = False) -> tuple[list, list, list]:
    """The innermost of ``loops`` over whole vectors when it is short and static: a row of 10 logits runs 16
    iterations, the last 6 doing nothing, instead of one vector of 8 and 2 scalar iterations (each calling
    ``expf`` on its own: 2.5x slower for a cross entropy over 10 classes).

    In the extra iterations, loads that depend on the loop (or read through an index) read nothing (masked
    loads: nothing past the row is touched), stores are skipped, and reductions fold their identity:
    ``live`` is the flag the accumulators' updates were given (``Accumulator.update(..., live)``). Unpadded,
    those updates fold their value as usual. Returns ``(loops, body, prelude)``: ``prelude`` goes before the
    loops (the row's length, hidden from the C compiler: see ``rt_opaque_i64``).

    ``whole`` names buffers indexed by the loop alone and sized to whole vectors (a row group's scratch row):
    a single loop stores and loads them unmasked. A masked store read back by a masked load cannot forward
    from the store buffer: softmax over rows of 10 waited on it in every row.

    ``one_vector``: the extent, known only at run time, is at most ``PAD_LANES`` (the caller's version for
    such rows checks it): the loop runs ``PAD_LANES`` iterations as a short static row does. Left to the C
    compiler, a row of 10 ran as a scalar remainder calling ``expf`` per element (softmax over [8192, None]
    3.2x its [8192, 10] spelling).

    ``short``: the extent, known only at run time, is at most ``PAD_MAX`` (the caller checks it): the loop runs
    to the next whole vector (``pad``), which ``lanes.peel_tails`` splits into the whole vectors, unmasked, and a
    masked last one. Left to the C compiler, the rest after the whole vectors ran as scalar iterations calling
    ``expf`` each: softmax over rows of 50 of unknown length took 1.95x its static spelling. (Padded but not
    split, GCC vectorised the masked loop 8 lanes wide with a scalar remainder still.)
    """
    if not loops:
        return loops, _unlive(body, live), []
    var, extent, kind = loops[-1]
    n = extent.const
    if not all(isinstance(s, (Declare, Assign, Store)) for s in body) or (
            padded_length(n) == n if n is not None else not (one_vector or short)):
        return loops, _unlive(body, live), []
    length = cx.fresh("n")
    if n is not None:
        prelude = [Declare(length, "int64_t", Helper("rt_opaque_i64", (Poly.of(n),), "int64_t"))]
        stop = Poly.of(padded_length(n))
    else:
        prelude = [Declare(length, "int64_t", extent)]
        stop = Poly.of(PAD_LANES)
        if not one_vector:
            stop = Poly.sym(cx.fresh("pad"))
            prelude.append(Declare(str(stop), "int64_t", padded_extent(Poly.sym(length))))
    cond = Compare("<", Poly.sym(var), Poly.sym(length))
    out = [Declare(live.name, "int", cond)] if live is not None else []

    if len(loops) > 1:
        whole = frozenset()

    def guarded(value):
        """``value`` reading its loads from locals, each declared (as a masked load) before the statement: a
        load under a condition nested in another (``live ? f(c ? p[i] : 0) : 0``) is not vectorised by GCC."""
        if not isinstance(value, Expr):
            return value
        seen: dict = {}

        def guard(e):
            if not (isinstance(e, Load) and (var in e.index.symbols() or e.indirect)) or \
                    e.ptr in whole and not e.indirect:
                return None
            key = str(e)
            if key not in seen:
                seen[key] = Var(cx.fresh("ld"), e.ctype)
                out.append(Declare(seen[key].name, e.ctype, Select(cond, e, Lit(0, "int"), e.ctype)))
            return seen[key]
        return map_expr(value, on_node=guard)
    for s in body:
        if isinstance(s, Store) and s.ptr in whole:
            out.append(Store(s.ptr, s.index, guarded(s.value)))
        elif isinstance(s, Store):     # the value computed in every lane, only the store masked (GCC leaves a
            value = Var(cx.fresh("st"), s.value.ctype)        # value computed under the `if` scalar)
            out.append(Declare(value.name, value.ctype, guarded(s.value)))
            out.append(If(cond, [Store(s.ptr, s.index, value)]))
        elif isinstance(s, Declare):
            init = guarded(s.init)
            out.append(Declare(s.name, s.ctype, init, s.size))
        else:
            value = guarded(s.value)
            out.append(Assign(s.name, value))
    return loops[:-1] + [(var, stop, kind)], out, prelude


def padded_extent(length: Poly) -> Arith:
    """``length`` rounded up to whole vectors of ``PAD_LANES``, at run time."""
    return Arith("&", length + (PAD_LANES - 1), Lit(-PAD_LANES, "int64_t"), "int64_t")


def padded_length(n: int) -> int:
    """The iterations ``pad_inner`` gives a static innermost loop of ``n``."""
    if n < 2 or n >= PAD_MAX or n % PAD_LANES == 0:
        return n
    return (n + PAD_LANES - 1) // PAD_LANES * PAD_LANES


def _unlive(body: list, live: Var | None) -> list:
    """``body`` with the updates ``Accumulator.update`` guarded by ``live`` folding their value as they would
    unguarded (no padding): ``acc + (live ? value : 0)`` is ``acc + value`` again."""
    if live is None:
        return body

    def node(e):
        if isinstance(e, Select) and isinstance(e.cond, Var) and e.cond.name == live.name:
            return map_expr(e.then, on_node=node)
        return None
    for s in body:
        if isinstance(s, Declare) and isinstance(s.init, Expr):
            s.init = map_expr(s.init, on_node=node)
        elif isinstance(s, Assign) and isinstance(s.value, Expr):
            s.value = map_expr(s.value, on_node=node)
    return body


def nest(cx, dims: list, names: list, body: list, parallel: bool = True) -> list:
    """Loops over ``dims`` (index variables ``names``) around ``body``, merged, vectorised, parallel."""
    loops, body = merged_loops(cx, dims, names, body)
    cond = parallel_condition(product(dims)) if parallel else None
    return wrap_loops(loops, body, cond)


# ---------------------------------------------------------------------------
# Kernels over an output domain.


def versions(cx, build) -> list:
    """``build(elements) -> statements`` for the fast version (run-time dims that may broadcast taken
    as equal) and, when it assumed anything, a guarded general version (0/1 stride flags, one thread)."""
    fast = Elements(cx)
    stmts = build(fast)
    if not fast.assumptions:
        return stmts
    general = Elements(cx, general=True)
    other = build(general)
    for s in walk_stmts(other):
        if isinstance(s, For):
            s.parallel = None          # the rare path: one copy of the loops, on one thread
    prelude = [Declare(name, "int64_t", Compare("!=", dim, Poly.of(1))) for dim, name in general.flags.items()]
    cond = And(tuple(Compare("==", a, b) for a, b in fast.assumptions))
    return [If(cond, stmts, prelude + other)]


def elementwise(cx, targets: list, dims: tuple, make) -> list:
    """A loop nest over ``dims`` storing ``make(elements, index)`` (one expression per target Array)."""
    names = [cx.fresh("i") for _ in dims]
    index = tuple(Poly.sym(n) for n in names)

    def build(el):
        exprs = make(el, index)
        body = [Store(a.ptr, a.load(index).index, e) for a, e in zip(targets, exprs)]
        return nest(cx, list(dims), names, body)
    return versions(cx, build)


def scalar_assign(cx, name: str, make) -> list:
    """``name = make(elements)`` for a one-element result (no loop)."""
    return versions(cx, lambda el: [Assign(name, make(el))])


# ---------------------------------------------------------------------------
# Reductions.


def acc_ctype(op, dtype) -> str:
    """The accumulator's C type: sums of floats in double, of integers in int64_t."""
    red = op.opdef.reduction
    if red.omp == "+" and dtype.is_floating:
        return "double"
    if red.omp == "+" and dtype.is_integer:
        return "int64_t"
    return dtype.c_type


def _extreme(dtype, highest: bool):
    """The dtype's lowest / highest value (-inf / inf for floats)."""
    if dtype.is_floating:
        return math.inf if highest else -math.inf
    info = np.iinfo(dtype.np)
    return int(info.max if highest else info.min)


@dataclass
class Accumulator:
    """How one reduction accumulates: its register, start value, update and final value."""
    op: object
    name: str
    ctype: str
    dtype: object
    count: Poly

    @property
    def red(self):
        return self.op.opdef.reduction

    @property
    def nan_flag(self) -> bool:
        return self.red.omp in ("max", "min") and self.dtype.is_floating

    def init(self) -> Lit:
        red = self.red
        if red.identity is not None:
            return Lit(int(red.identity), self.ctype)
        return Lit(_extreme(self.dtype, red.omp == "min"), self.ctype)

    def declare(self) -> list:
        out = [Declare(self.name, self.ctype, self.init())]
        if self.nan_flag:
            out.append(Declare(self.name + "_nan", "int", Lit(0, "int")))
        return out

    def clauses(self) -> list:
        out = [(self.red.omp, self.name)]
        if self.nan_flag:
            out.append(("|", self.name + "_nan"))
        return out

    def update(self, cx, value: Expr, live: Var | None = None) -> list:
        """Statements folding ``value`` into the accumulator (vectorisable with ``clauses``); with ``live``, the
        identity where that flag is 0 (``pad_inner``'s extra iterations)."""
        acc = Var(self.name, self.ctype)
        if live is not None:
            value = Select(live, value, self.init(), self.ctype)
        if self.red.omp in ("max", "min"):
            v = Var(cx.fresh("v"), self.ctype)
            out = [Declare(v.name, self.ctype, value), Assign(self.name, self._pick(v))]
            if self.nan_flag:
                flag = Var(self.name + "_nan", "int")
                out.append(Assign(flag.name, Arith("|", flag, Compare("!=", v, v), "int")))
            return out
        return [Assign(self.name, Combine(self.red, acc, Cast(value, self.ctype), self.ctype))]

    def _pick(self, v: Expr) -> Expr:
        """``v`` when it beats the accumulator (max/min), else the accumulator."""
        acc = Var(self.name, self.ctype)
        return Select(Compare(">" if self.red.omp == "max" else "<", v, acc), v, acc, self.ctype)

    def combine_with(self, other: str) -> list:
        """Fold another accumulator of the same kind (a chunk's partial result) into this one."""
        if self.red.omp in ("max", "min"):
            out = [Assign(self.name, self._pick(Var(other, self.ctype)))]
            if self.nan_flag:
                flag = Var(self.name + "_nan", "int")
                out.append(Assign(flag.name, Arith("|", flag, Var(other + "_nan", "int"), "int")))
            return out
        return [Assign(self.name, Combine(self.red, Var(self.name, self.ctype), Var(other, self.ctype), self.ctype))]

    def final(self, acc: Expr | None = None) -> Expr:
        """The reduction's value, in the output dtype (from ``acc``, default the register with its NaN flag)."""
        ctype = self.dtype.c_type
        if acc is None and self.nan_flag:
            return Select(Var(self.name + "_nan", "int"), Lit(math.nan, ctype), Var(self.name, self.ctype), ctype)
        if acc is None:
            acc = Var(self.name, self.ctype)
        if self.red.mean:
            if self.dtype.is_floating:
                return Cast(Arith("/", acc, Cast(self.count, "double"), "double"), ctype)
            n = Cast(self.count, "int64_t")
            zero = Lit(0, "int")
            mean = Select(Compare(">=", acc, zero), Arith("/", acc, n, "int64_t"),
                          Neg(Arith("/", Neg(acc, "int64_t"), n, "int64_t"), "int64_t"), "int64_t")
            return Cast(Select(n, mean, zero, "int64_t"), ctype)
        return Cast(acc, ctype)


def float_partial(cx, acc: Accumulator, op) -> Accumulator | None:
    """A float32 sum's partial accumulator: chunks of a row add up in float, the chunks in double.

    Converting every element to double halves the vector width and doubles the adds; a float partial
    over ``SUM_CHUNK`` elements (``SUM_CHUNK / lanes`` per vector lane, then the lanes) keeps the rounding error of
    each chunk near numpy's pairwise float32 sum, and the double total keeps it from growing with the row.
    """
    if acc.red.omp != "+" or acc.ctype != "double" or op.inputs[0].dtype.c_type != "float":
        return None
    return Accumulator(op, cx.fresh("part"), "float", acc.dtype, acc.count)


def chunked_sum(cx, loop, body: list, part: Accumulator, acc: Accumulator) -> list:
    """The innermost reduction loop ``(var, extent, kind)`` as full chunks of ``SUM_CHUNK`` then the rest, each
    summed in ``part`` (vectorised) and added to ``acc``."""
    var, extent, _ = loop
    full = Poly.sym(cx.fresh("chunks")) if extent.const is None else Poly.of(extent.const // SUM_CHUNK)
    out = [] if extent.const is not None else [Declare(str(full), "int64_t",
                                                       Arith("/", extent, Poly.of(SUM_CHUNK), "int64_t"))]

    def chunk(start: Poly, stop: Poly, stmts: list, first: bool = False) -> list:
        reset = [] if first else [Assign(part.name, part.init())]     # ``part`` was declared with its start value
        return reset + [For(var, start, stop, stmts, simd=True, reductions=part.clauses())] \
            + acc.combine_with(part.name)
    if full != 0:
        if full == 1:
            out += chunk(Poly.of(0), Poly.of(SUM_CHUNK), deepcopy(body), first=True)
        else:
            c = cx.fresh("c")
            out.append(For(c, Poly.of(0), full, chunk(Poly.sym(c) * SUM_CHUNK, Poly.sym(c) * SUM_CHUNK + SUM_CHUNK, deepcopy(body))))
    if extent.const is None or extent.const % SUM_CHUNK:
        out += chunk(full * SUM_CHUNK, extent, body, first=full == 0)
    return out


def reduce_axes(cx, op) -> list[int]:
    rank = len(cx.dims[id(op.inputs[0])])
    axes = op.attrs["axis"]
    return list(range(rank)) if axes is None else sorted({a % rank for a in axes}) if rank else []


def reduce(cx, op, target) -> list:
    """The loops of one reduction (its input's producers fused in) into ``target`` (Array or C local).

    Reduced dims that are innermost accumulate in a register (a row schedule, rows in parallel, or
    a full reduction in deterministic chunks); otherwise the output is accumulated in place while
    walking the input in memory order (a column schedule, parallel over a kept dim).
    """
    x = op.inputs[0]
    dims = list(cx.dims[id(x)])
    axes = reduce_axes(cx, op)
    names = [cx.fresh("r" if d in axes else "k") for d in range(len(dims))]
    kinds = ["r" if d in axes else "k" for d in range(len(dims))]
    index = tuple(Poly.sym(n) for n in names)
    count = product(dims[d] for d in axes)
    out_dtype = op.outputs[0].dtype
    kept = [d for d in range(len(dims)) if d not in axes]
    out_index = Poly.of(0)
    if isinstance(target, Array):
        out_index = target.load([index[d] for d in kept] if len(target.dims) == len(kept) else
                                [index[d] if d in kept else 0 for d in range(len(dims))]).index

    def build(el):
        value = el.of(x, index)
        probe = [Store("probe", out_index, value)]
        loops, body = merged_loops(cx, dims, names, probe, kinds)
        value, out_at = body[0].value, body[0].index
        tail = []
        while loops and len(tail) < len(loops) and loops[len(loops) - 1 - len(tail)][2] == "r":
            tail.insert(0, loops[len(loops) - 1 - len(tail)])
        head = loops[:len(loops) - len(tail)]
        acc = Accumulator(op, cx.fresh("acc"), acc_ctype(op, x.dtype), out_dtype, count)
        if all(kind == "k" for _, _, kind in head):
            return _row_schedule(cx, acc, head, tail, value, out_at, target)
        return _column_schedule(cx, acc, head, tail, value, out_at, target, kept, dims)
    return versions(cx, build)


def _store(target, index: Poly, value: Expr) -> list:
    if isinstance(target, Array):
        return [Store(target.ptr, index, value)]
    return [Assign(target, value)]


def _row_schedule(cx, acc, head, tail, value, out_at, target) -> list:
    if not head:
        return _full_reduction(cx, acc, tail, acc.update(cx, value)) + _store(target, Poly.of(0), acc.final())
    count = product([e for _, e, _ in tail]).const
    short = count is not None and count <= (UNROLL_SUM_MAX if acc.red.omp == "+" else UNROLL_MAX)
    part = float_partial(cx, acc, acc.op)
    if short:       # e.g. the 3 coordinates of a distance: unrolled, and the loop over rows vectorised
        reduced = unroll(cx, tail, acc.update(cx, value))
    elif part is not None:
        live = Var(cx.fresh("live"), "int")
        tail, sums, prelude = pad_inner(cx, tail, part.update(cx, value, live), live)
        sums = chunked_sum(cx, tail[-1], sums, part, acc)
        reduced = prelude + part.declare() + wrap_loops(tail[:-1], sums, simd=False)
    else:
        live = Var(cx.fresh("live"), "int")
        tail, inner, prelude = pad_inner(cx, tail, acc.update(cx, value, live), live)
        reduced = prelude + wrap_loops(tail, inner, reductions=acc.clauses())
    body = acc.declare() + reduced + _store(target, out_at, acc.final())
    total = product([e for _, e, _ in head]) * acc.count
    rows = product([e for _, e, _ in head])
    cond = parallel_condition(total)
    if cond is not None and rows.const is not None and rows.const < 2:
        cond = None
    return wrap_loops(head, body, cond, simd=short)


def unroll(cx, loops: list, body: list) -> list:
    """``body`` once per iteration of the static ``loops``, index variables replaced by constants and the
    locals it declares renamed."""
    out = []
    for values in itertools.product(*[range(extent.const) for _, extent, _ in loops]):
        copy = substitute(deepcopy(body), {var: Poly.of(v) for (var, _, _), v in zip(loops, values)})
        names = {s.name: cx.fresh(s.name.rstrip("0123456789") or "u") for s in walk_stmts(copy)
                 if isinstance(s, Declare)}
        out += rename(copy, names)
    return out


def _full_reduction(cx, acc, tail, inner) -> list:
    """All dims reduced: one register, or chunks of the outermost loop reduced in parallel and combined
    in chunk order (the same result on any number of threads)."""
    total = product([e for _, e, _ in tail])
    cond = parallel_condition(total)
    if cond is None or not tail:
        return acc.declare() + wrap_loops(tail, inner, reductions=acc.clauses())
    chunks = cx.fresh("nch")
    part = Accumulator(acc.op, cx.fresh("part"), acc.ctype, acc.dtype, acc.count)
    c, lo, hi = cx.fresh("c"), cx.fresh("lo"), cx.fresh("hi")
    var, extent, _ = tail[0]
    partial = cx.fresh("partial")
    chunk_loops = [(var, extent, "r")] + list(tail[1:])
    inner = wrap_loops(chunk_loops, list(inner), reductions=part.clauses())
    inner[0].start, inner[0].stop = Poly.sym(lo), Poly.sym(hi)     # this chunk of the outermost loop
    rename(inner, {acc.name: part.name, acc.name + "_nan": part.name + "_nan"})
    decl = [Declare(partial, acc.ctype, size=CHUNKS)]
    if acc.nan_flag:
        decl.append(Declare(partial + "_nan", "int", size=CHUNKS))
    chunk_body = chunk_bounds(lo, hi, extent, Poly.sym(c), Poly.sym(chunks)) + part.declare() + inner
    chunk_body.append(Store(partial, Poly.sym(c), Var(part.name, acc.ctype)))
    if acc.nan_flag:
        chunk_body.append(Store(partial + "_nan", Poly.sym(c), Var(part.name + "_nan", "int")))
    n = Poly.of(CHUNKS) if total.const is not None else \
        Select(Compare(">=", total, Named("parallel_min")), Poly.of(CHUNKS), Poly.of(1), "int64_t")
    out = decl + [Declare(chunks, "int64_t", n),
                  For(c, Poly.of(0), Poly.sym(chunks), chunk_body, parallel=cond)]
    out += acc.declare()
    k = cx.fresh("c")
    combine = [Declare(acc.name + "_p", acc.ctype, Load(partial, Poly.sym(k), acc.ctype))]
    if acc.nan_flag:
        combine.append(Declare(acc.name + "_p_nan", "int", Load(partial + "_nan", Poly.sym(k), "int")))
    combine += acc.combine_with(acc.name + "_p")
    out.append(For(k, Poly.of(0), Poly.sym(chunks), combine))
    return out


def chunk_bounds(lo: str, hi: str, extent: Poly, c: Poly, chunks: Poly) -> list:
    """``lo`` and ``hi`` of chunk ``c`` of ``chunks`` over ``extent`` iterations."""
    return [Declare(lo, "int64_t", Arith("/", Arith("*", extent, c, "int64_t"), chunks, "int64_t")),
            Declare(hi, "int64_t", Arith("/", Arith("*", extent, c + 1, "int64_t"), chunks, "int64_t"))]


def _column_schedule(cx, acc, head, tail, value, out_at, target, kept, dims) -> list:
    """Accumulate into an output-shaped buffer while walking the input in memory order. Max/min fold
    with the NaN-propagating helpers (``rt_max_float32``), elementwise over the kept dims."""
    local = _local_columns(cx, acc, head, tail, value, out_at, target)
    if local is not None:
        return local
    partials = _partial_columns(cx, acc, head, tail, value, out_at, target)
    if partials is not None:
        width = head[-1][1]
        if width.const is not None:
            return partials
        rest = _walked_columns(cx, acc, head, tail, value, out_at, target, kept, dims)
        return [If(Compare("<=", width, Lit(COLUMN_PARTIAL_MAX, "int64_t")), partials, rest)]
    return _walked_columns(cx, acc, head, tail, value, out_at, target, kept, dims)


def _walked_columns(cx, acc, head, tail, value, out_at, target, kept, dims) -> list:
    """``_column_schedule`` into an output-shaped buffer, in parallel over chunks of the innermost kept loop
    (each chunk walks every row) when there is one."""
    out = []
    out_count = product(dims[d] for d in kept)
    if isinstance(target, Array) and acc.ctype == target.ctype and not acc.red.mean:
        buf = target.ptr
    else:
        buf, alloc = temporary(cx, acc.ctype, out_count)
        out.append(alloc)
    j = cx.fresh("j")
    out.append(For(j, Poly.of(0), out_count, [Store(buf, Poly.sym(j), acc.init())], simd=True))
    if tail:
        inner = Accumulator(acc.op, cx.fresh("acc"), acc.ctype, acc.dtype, acc.count)
        step = inner.declare() + wrap_loops(tail, inner.update(cx, value), reductions=inner.clauses())
        value = Var(inner.name, acc.ctype)
        if inner.nan_flag:
            step.append(Assign(inner.name, Select(Var(inner.name + "_nan", "int"), Lit(math.nan, acc.ctype),
                                                  Var(inner.name, acc.ctype), acc.ctype)))
    else:
        step = []
        value = Cast(value, acc.ctype)
    step.append(Store(buf, out_at, _column_combine(acc, Load(buf, out_at, acc.ctype), value)))
    total = product([e for _, e, _ in head + tail])
    cond = parallel_condition(total)
    if cond is not None and head[0][2] != "k":
        if head[-1][2] == "k" and len(head) > 1:
            # parallel over chunks of the innermost kept loop: each thread owns its outputs
            return out + _chunked_columns(cx, head, step, cond) + _column_final(cx, acc, buf, target, out_count)
        cond = None
    out += wrap_loops(head, step, cond, simd=not tail, parallel_at=0 if cond is not None else None)
    return out + _column_final(cx, acc, buf, target, out_count)


def _column_combine(acc, cur: Expr, value: Expr) -> Expr:
    """``cur`` with ``value`` folded in, as a column reduction folds (max/min propagate NaN)."""
    if acc.red.omp in ("max", "min"):
        return Helper(f"rt_{acc.red.omp}_{acc.dtype.name}", (cur, value), acc.ctype)
    return Combine(acc.red, cur, value, acc.ctype)


def _local_columns(cx, acc, head, tail, value, out_at, target) -> list | None:
    """A column reduction whose loops are [kept...] [reduced...] [kept] (a bias gradient ``sum(dy, 0)``, a sum
    over a middle axis): per outer index, the inner kept run accumulates in a local array (registers, or L1)
    over the reduced rows, then is stored once. In parallel over the outer kept loop when it is long, else over
    ``CHUNKS`` chunks of the rows, each into a row of partial results combined in chunk order (the same result
    on any number of threads). None when the loops have another shape or the inner run is long or dynamic.

    Accumulating into the output itself made GCC store the sums to memory on every row, and the chunks of
    16 kept columns each walked all rows: a [21632, 16] bias gradient read its input 16 times.
    """
    if tail or not isinstance(target, Array):
        return None
    kinds = "".join(kind for _, _, kind in head)
    n_outer = len(kinds) - len(kinds.lstrip("k"))
    n_rows = len(kinds[n_outer:]) - len(kinds[n_outer:].lstrip("r"))
    outer, rows, inner = head[:n_outer], head[n_outer:n_outer + n_rows], head[n_outer + n_rows:]
    if not rows or len(inner) != 1 or inner[0][2] != "k" or inner[0][1].const is None \
            or inner[0][1].const > COLUMN_LOCAL_MAX:
        return None
    var, width, _ = inner[0]
    at = Poly.sym(var)
    sums = cx.fresh("cols")
    value = Cast(value, acc.ctype)
    fold = wrap_loops(rows + inner, [Store(sums, at, _column_combine(acc, Load(sums, at, acc.ctype), value))],
                      simd=True)
    init = [Declare(sums, acc.ctype, size=width.const),
            For(var, Poly.of(0), width, [Store(sums, at, acc.init())], simd=True)]
    store = [For(var, Poly.of(0), width, [Store(target.ptr, out_at, acc.final(Load(sums, at, acc.ctype)))],
                 simd=True)]
    outer_count = product(e for _, e, _ in outer)
    cond = parallel_condition(product(e for _, e, _ in head))
    if cond is None or outer and (outer_count.const is None or outer_count.const >= 4) or len(rows) > 1:
        return wrap_loops(outer, init + fold + store, cond if outer else None, simd=False, parallel_at=0)
    # few outer indices: chunks of the rows in parallel, partial sums combined in order
    partial, alloc = temporary(cx, acc.ctype, width * CHUNKS)
    _, extent, _ = rows[0]
    c, lo, hi = cx.fresh("c"), cx.fresh("lo"), cx.fresh("hi")
    fold[0].start, fold[0].stop = Poly.sym(lo), Poly.sym(hi)
    at_chunk = Poly.sym(c) * width + at
    chunk = chunk_bounds(lo, hi, extent, Poly.sym(c), Poly.of(CHUNKS)) + init + fold
    chunk.append(For(var, Poly.of(0), width, [Store(partial, at_chunk, Load(sums, at, acc.ctype))], simd=True))
    combined = [Declare(sums, acc.ctype, size=width.const),
                For(var, Poly.of(0), width, [Store(sums, at, Load(partial, at, acc.ctype))], simd=True)]
    k = cx.fresh("c")
    combined.append(For(k, Poly.of(1), Poly.of(CHUNKS), [For(var, Poly.of(0), width, [
        Store(sums, at, _column_combine(acc, Load(sums, at, acc.ctype), Load(partial, Poly.sym(k) * width + at,
                                                                               acc.ctype)))], simd=True)]))
    body = [For(c, Poly.of(0), Poly.of(CHUNKS), chunk, parallel=cond)] + combined + store
    return [alloc] + wrap_loops(outer, body, simd=False)


def _partial_columns(cx, acc, head, tail, value, out_at, target) -> list | None:
    """A column reduction [reduced] [kept] whose kept run is too long for a local array (``_local_columns``) or
    known only at run time, up to ``COLUMN_PARTIAL_MAX``: ``CHUNKS`` chunks of the rows, in parallel, each folding
    its rows into a row of partial results of its own (in L1 or L2), read in memory order; the rows combined in
    chunk order (the same result on any number of threads). None for other loops.

    Split by columns instead, each of 16 chunks walked every row for a few cache lines at the row's stride:
    column sums over [4096, None of 512] took 1.7x their static spelling, a batch norm over columns 1.9x.
    """
    if tail or not isinstance(target, Array) or [kind for _, _, kind in head] != ["r", "k"]:
        return None
    rows, (var, width, _) = head[0], head[1]
    if width.const is not None and not COLUMN_LOCAL_MAX < width.const <= COLUMN_PARTIAL_MAX:
        return None
    partial, alloc = temporary(cx, acc.ctype, width * CHUNKS)
    c, lo, hi = cx.fresh("c"), cx.fresh("lo"), cx.fresh("hi")
    at = Poly.sym(var)
    mine = Poly.sym(c) * width + at
    init = For(var, Poly.of(0), width, [Store(partial, mine, acc.init())], simd=True)
    fold = wrap_loops([rows, head[1]], [Store(partial, mine, _column_combine(
        acc, Load(partial, mine, acc.ctype), Cast(value, acc.ctype)))], simd=True)
    fold[0].start, fold[0].stop = Poly.sym(lo), Poly.sym(hi)
    chunk = chunk_bounds(lo, hi, rows[1], Poly.sym(c), Poly.of(CHUNKS)) + [init] + fold
    k = cx.fresh("c")
    combine = For(k, Poly.of(1), Poly.of(CHUNKS), [For(var, Poly.of(0), width, [Store(partial, at, _column_combine(
        acc, Load(partial, at, acc.ctype), Load(partial, Poly.sym(k) * width + at, acc.ctype)))], simd=True)])
    store = For(var, Poly.of(0), width, [Store(target.ptr, out_at, acc.final(Load(partial, at, acc.ctype)))],
                simd=True)
    cond = parallel_condition(rows[1] * width)
    return [alloc, For(c, Poly.of(0), Poly.of(CHUNKS), chunk, parallel=cond), combine, store]


def _chunked_columns(cx, head, step, cond) -> list:
    var, extent, _ = head[-1]
    c, lo, hi = cx.fresh("c"), cx.fresh("lo"), cx.fresh("hi")
    loops = wrap_loops(head, step, None, simd=True)
    innermost = loops[0]
    while innermost.var != var:
        innermost = innermost.body[0]
    innermost.start, innermost.stop = Poly.sym(lo), Poly.sym(hi)
    body = chunk_bounds(lo, hi, extent, Poly.sym(c), Poly.of(CHUNKS)) + loops
    return [For(c, Poly.of(0), Poly.of(CHUNKS), body, parallel=cond)]


def _column_final(cx, acc, buf, target, out_count) -> list:
    """The accumulated buffer -> the output (mean, cast), unless the output was the buffer."""
    if isinstance(target, Array) and buf == target.ptr:
        return []
    j = cx.fresh("j")
    if isinstance(target, Array):
        value = acc.final(Load(buf, Poly.sym(j), acc.ctype))
        return [For(j, Poly.of(0), out_count, [Store(target.ptr, Poly.sym(j), value)], simd=True)]
    return [Assign(target, acc.final(Load(buf, Poly.of(0), acc.ctype)))]
