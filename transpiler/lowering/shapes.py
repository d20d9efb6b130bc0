"""Symbolic shapes: each tensor's dims as index polynomials, and the run-time checks that keep them true.

``infer(cx, op)`` sets the dims of ``op``'s outputs: constants where the graph knows them, the
inputs' symbols where they carry through (an elementwise op of two ``[n]`` tensors is ``[n]``), and
fresh symbols for sizes only known at run time (a broadcast of two different unknown dims, a
reshape to computed dims, a slice with tensor bounds). It also records the op's *shape code*: the
statements that, at the op's place in the program, assign those symbols and check the run-time sizes
exactly as the generic executor would (incompatible broadcasts, reshape element counts, out-of-range
indices, element counts that overflow): every error names the op and the user's line. Shape code is IR,
except that a value it reads from a tensor (a reshape's target, a slice's bounds) is an ``Element``
placeholder: where the tensor's elements are is only known where the op runs, and ``code(cx, op)``
replaces each by the element's expression there (a load, a register, or the expression of a fused
producer).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.ops import nn_ops
from transpiler.lowering.ir import (
    And,
    Arith,
    Assign,
    Call,
    Cast,
    Check,
    Compare,
    Declare,
    DimsArray,
    Fail,
    Field,
    For,
    Helper,
    Lit,
    Load,
    Neg,
    Or,
    OutArg,
    Poly,
    Ptr,
    Select,
    Var,
    map_expr,
    product,
)
from transpiler.lowering.kernels import Elements, reduce_axes, slice_index
from transpiler.lowering.values import Array, Scalar


def static_dims(tensor) -> tuple:
    return tuple(None if d is None else Poly.of(d) for d in tensor.shape.dims)


def infer(cx, op) -> None:
    """Set ``cx.dims`` for ``op``'s outputs, and record its shape code (``cx.shapes.code``)."""
    rule = _RULES.get(op.type)
    if rule is None:
        if op.opdef.elementwise:
            rule = _elementwise
        elif op.opdef.reduction is not None:
            rule = _reduction
        else:
            rule = _opaque
    code: list = []
    outs = rule(cx, op, code)
    for t, dims in zip(op.outputs, outs):
        if dims is not None:
            cx.dims[id(t)] = tuple(Poly.of(d) for d in dims)
    if code:
        cx.shapes.code[id(op)] = code


def code(cx, op) -> list:
    """``op``'s shape code, to run where ``op`` runs: its ``Element`` placeholders replaced by the elements'
    expressions there, and a gather's check of its indices."""
    stmts = cx.shapes.code.pop(id(op), [])
    elements = Elements(cx)

    def element(e):
        if isinstance(e, Element):
            value = elements.of(e.tensor, e.index)
            return value if e.cast is None else Cast(value, e.cast)
        return None
    out = []
    for s in stmts:
        if isinstance(s, IndicesInRange):
            out += _indices_in_range(cx, s)
            continue
        s.map_exprs(lambda e: map_expr(e, on_node=element))
        out.append(s)
    return out


@dataclass(frozen=True, eq=False)
class Element:
    """A placeholder in shape code for element ``index`` of ``tensor`` (cast to ``cast`` when given), replaced
    where the op runs (``code``); it never reaches a finished function (``verify`` would reject it)."""
    tensor: object
    index: tuple
    cast: str | None = "int64_t"

    @property
    def ctype(self):
        return self.cast or self.tensor.dtype.c_type

    def children(self):
        return ()

    def polys(self):
        return ()

    def __str__(self):
        return f"{self.tensor.name}[{', '.join(map(str, self.index))}]"


@dataclass(frozen=True, eq=False)
class IndicesInRange:
    """A placeholder in shape code: every element of ``indices`` is in ``[0, bound)``, checked where the op runs
    (one check of a register, or a loop over the indices in memory)."""
    indices: object
    bound: Poly
    message: str

    def map_exprs(self, f) -> None:
        return None


def _value(cx, tensor, *index) -> Element:
    """An element of ``tensor`` as an int64 value, read where the shape code runs."""
    return Element(tensor, tuple(index))


ZERO = Lit(0, "int")


def _ne(a, b) -> Compare:
    return Compare("!=", a, b)


def _one(p) -> Compare:
    """``p != 1``."""
    return Compare("!=", p, Poly.of(1))


def _fresh_dims(cx, op, tensor):
    """Static dims of ``tensor`` from the graph, fresh symbols for the unknown ones."""
    if tensor.shape.dims is None:
        return None
    return tuple(Poly.of(d) if d is not None else cx.new_dim() for d in tensor.shape.dims)


def _opaque(cx, op, code: list):
    """Dims from the graph (fresh symbols for the unknown ones), no shape code: what the op's emitter binds."""
    code.clear()
    return [_fresh_dims(cx, op, t) for t in op.outputs]


def check_count(cx, op, dims) -> list:
    """A check that the element count of run-time ``dims`` neither overflows nor is negative (none for static
    dims)."""
    if all(d.const is not None for d in dims):
        return []
    return [Check(Helper("rt_count_overflows", (Lit(len(dims), "int"), DimsArray(tuple(dims)),
                                                Lit(_itemsize(op), "int")), "int"),
                  cx.message(op, "the result would have more elements than memory can hold (or a negative "
                                 "dimension)"))]


def _itemsize(op) -> int:
    return max(op.outputs[0].dtype.size, 1)


# ---------------------------------------------------------------------------
# Elementwise broadcasting.


def _elementwise(cx, op, code: list):
    out = op.outputs[0]
    if out.shape.rank is None or any(id(t) not in cx.dims for t in op.inputs):
        return _opaque(cx, op, code)
    rank = out.shape.rank
    in_dims = [cx.dims[id(t)] for t in op.inputs]
    dims = []
    for d in range(rank):
        aligned = [ds[d - rank + len(ds)] for ds in in_dims if d - rank + len(ds) >= 0]
        static = [p for p in aligned if p.const is not None and p.const != 1]
        symbolic = []
        for p in aligned:
            if p.const is None and p not in symbolic:
                symbolic.append(p)
        message = f"incompatible shapes for broadcasting: dimension {d} is %lld in one operand and "
        if static:
            size = static[0]
            for p in symbolic:
                code.append(Check(And((_ne(p, size), _one(p))), cx.message(op, f"{message}{size} in another"), (p,)))
        elif len(symbolic) == 1 or len(symbolic) > 1 and cx.entry.assume_equal(symbolic):
            size = symbolic[0]
        elif symbolic:
            size = cx.new_dim()
            value = Poly.of(1)
            for q in reversed(symbolic):
                value = Select(_one(q), q, value, "int64_t")
            code.append(Assign(str(size), value))
            for q in symbolic:
                code.append(Check(And((_ne(q, size), _one(q))), cx.message(op, f"{message}%lld in another"),
                                  (q, size)))
        else:
            size = Poly.of(1)
        dims.append(size)
    return [tuple(dims)]


def guard_divisor(cx, op) -> list:
    """Integer FloorDiv/FloorMod by zero and Pow to negative powers are errors (as in eager)."""
    if op.type not in ("FloorDiv", "FloorMod", "Pow") or not op.inputs[0].dtype.is_integer:
        return []
    bad = "<" if op.type == "Pow" else "=="
    message = ("Integers to negative integer powers are not allowed" if op.type == "Pow"
               else "Integer division by zero")
    divisor = op.inputs[1]
    value = cx.values.get(id(divisor))
    const = cx.const_value(divisor)
    if const is not None:
        if (const < 0).any() if op.type == "Pow" else (const == 0).any():
            return [Fail(cx.message(op, message))]
        return []
    if isinstance(value, Scalar):
        return [Check(Compare(bad, value.expr, ZERO), cx.message(op, message))]
    k = cx.fresh("k")
    index = Poly.sym(k)
    count = product(cx.dims[id(divisor)])
    if isinstance(value, Array) and value.contiguous:
        element = Load(value.ptr, index, value.ctype)
    else:
        raise ValueError(f"{op.name}: the divisor must be stored before the check")
    return [For(k, Poly.of(0), count, [Check(Compare(bad, element, ZERO), cx.message(op, message))])]


# ---------------------------------------------------------------------------
# Reductions and views.


def _reduction(cx, op, code: list):
    x = op.inputs[0]
    if x.shape.rank is None or id(x) not in cx.dims:
        return _opaque(cx, op, code)
    dims = cx.dims[id(x)]
    axes = reduce_axes(cx, op)
    if op.attrs["keepdims"]:
        out = tuple(Poly.of(1) if d in axes else dims[d] for d in range(len(dims)))
    else:
        out = tuple(dims[d] for d in range(len(dims)) if d not in axes)
    return [out]


def _transpose(cx, op, code: list):
    dims = cx.dims[id(op.inputs[0])]
    perm = op.attrs["perm"] or tuple(reversed(range(len(dims))))
    return [tuple(dims[p] for p in perm)]


def _expand_dims(cx, op, code: list):
    dims = list(cx.dims[id(op.inputs[0])])
    dims.insert(op.attrs["axis"] % (len(dims) + 1), Poly.of(1))
    return [tuple(dims)]


def _squeeze(cx, op, code: list):
    dims = cx.dims[id(op.inputs[0])]
    axes = op.attrs["axis"]
    if axes is None:
        axes = [d for d, n in enumerate(dims) if n == 1]
    axes = {a % len(dims) for a in axes}
    cx.shapes.squeezed[id(op)] = axes
    for a in sorted(axes):
        if dims[a].const is None:
            code.append(Check(_one(dims[a]), cx.message(op, f"dimension {a} is %lld, not 1"), (dims[a],)))
    return [tuple(d for i, d in enumerate(dims) if i not in axes)]


def _unpack(cx, op, code: list):
    dims = list(cx.dims[id(op.inputs[0])])
    axis = op.attrs["axis"] % len(dims)
    size = dims.pop(axis)
    if size.const is None:
        code.append(Check(_ne(size, Poly.of(op.attrs["num"])), cx.message(
            op, f"dimension {axis} is %lld, not {op.attrs['num']}"), (size,)))
    return [tuple(dims)] * len(op.outputs)


def _reshape(cx, op, code: list):
    x, target = op.inputs
    out = op.outputs[0]
    if out.shape.rank is None or x.shape.rank is None:
        return _opaque(cx, op, code)
    count = product(cx.dims[id(x)])
    const = cx.const_value(target)
    if const is not None:
        wanted = [int(v) for v in const.reshape(-1)]
        known = 1
        for v in wanted:
            if v != -1:
                known *= v
        k = Poly.of(known)
        if -1 in wanted:
            if count.const is not None:
                dims = [count.const // known if v == -1 and known else v for v in wanted]
                return [tuple(dims)]
            unknown = cx.new_dim()
            dims = [unknown if v == -1 else Poly.of(v) for v in wanted]
            code.append(Check(Or((Compare("==", k, Poly.of(0)), _ne(Arith("%", count, k, "int64_t"), Poly.of(0)))),
                              cx.message(op, f"cannot reshape a tensor of %lld elements into {wanted}"), (count,)))
            code.append(Assign(str(unknown), Arith("/", count, k, "int64_t")))
            return [tuple(dims)]
        if count.const is None:
            code.append(Check(_ne(count, k), cx.message(op, f"cannot reshape a tensor of %lld elements into {wanted}"),
                              (count,)))
        return [tuple(wanted)]
    rank = out.shape.rank
    dims = [Poly.of(d) if d is not None else cx.new_dim() for d in out.shape.dims]
    values = [_value(cx, target, d) for d in range(rank)]
    known = Var(cx.fresh("known"), "int64_t")
    unknown = Var(cx.fresh("unknown"), "int")
    code += [Declare(known.name, "int64_t", Poly.of(1)), Declare(unknown.name, "int", Lit(-1, "int"))]
    for d in range(rank):
        v = values[d]
        code.append(Check(Or((Compare("<", v, Poly.of(-1)), And((Compare("==", v, Poly.of(-1)),
                                                                   Compare(">=", unknown, ZERO))))),
                          cx.message(op, f"bad target shape: dimension {d} is %lld"), (v,)))
        code.append(Assign(unknown.name, Select(Compare("==", v, Poly.of(-1)), Lit(d, "int"), unknown, "int")))
        code.append(Assign(known.name, Select(Compare("==", v, Poly.of(-1)), known, Arith("*", known, v, "int64_t"),
                                              "int64_t")))
    divides = Or((Compare("==", known, ZERO), _ne(Arith("%", count, known, "int64_t"), ZERO)))
    code.append(Check(And((Compare(">=", unknown, ZERO), divides)), cx.message(
        op, "cannot reshape a tensor of %lld elements into a shape of %lld elements and one -1"), (count, known)))
    code.append(Check(And((Compare("<", unknown, ZERO), _ne(count, known))), cx.message(
        op, "cannot reshape a tensor of %lld elements into a shape of %lld elements"), (count, known)))
    for d in range(rank):
        inferred = Compare("==", unknown, Lit(d, "int"))
        quotient = Arith("/", count, known, "int64_t")
        if dims[d].const is None:
            code.append(Assign(str(dims[d]), Select(inferred, quotient, values[d], "int64_t")))
        else:
            code.append(Check(Select(inferred, _ne(quotient, dims[d]), _ne(values[d], dims[d]), "int"),
                              cx.message(op, f"dimension {d} is not {dims[d]}")))
    return [tuple(dims)]


def _strided_slice(cx, op, code: list):
    x = op.inputs[0]
    if x.shape.rank is None or op.outputs[0].shape.rank is None:
        return _opaque(cx, op, code)
    plan, out = slice_plan(cx, op, cx.dims[id(x)], op.attrs["spec"], op.inputs[1:], code)
    cx.shapes.slices[id(op)] = plan
    return [out]


def slice_plan(cx, op, dims, spec, dynamic, code: list) -> tuple[list, tuple]:
    """How ``x[spec]`` of an ``x`` of ``dims`` reads ``x`` (``kernels.slice_index``), and the slice's dims;
    ``code`` gets the statements computing run-time bounds and checking them."""
    rank = len(dims)
    consumed = sum(1 for item in spec if item[0] in ("i", "s"))
    items = []
    for item in spec:
        if item[0] == "e":
            items.extend([("s", None, None, None)] * (rank - consumed))
        else:
            items.append(item)
    items.extend([("s", None, None, None)] * (rank - sum(1 for i in items if i[0] != "n")))
    plan, out = [], []
    d = 0
    for item in items:
        if item[0] == "n":
            plan.append(("new",))
            out.append(Poly.of(1))
            continue
        n = dims[d]
        if item[0] == "i":
            plan.append(("fixed",) + _slice_index(cx, op, item[1], n, d, dynamic, code))
        else:
            begin, step, count = _slice_range(cx, op, item, n, d, dynamic, code)
            plan.append(("range", begin, step))
            out.append(count)
        d += 1
    return plan, tuple(out)


def _slice_index(cx, op, k, n: Poly, d: int, dynamic, code: list) -> tuple:
    if isinstance(k, int) and n.const is not None:
        return (Poly.of(k + n.const if k < 0 else k),)
    sym = cx.new_dim()
    value = _value(cx, dynamic[k[1]]) if isinstance(k, tuple) else Poly.of(k)
    code += [Assign(str(sym), value),
             Assign(str(sym), Select(Compare("<", sym, Poly.of(0)), sym + n, sym, "int64_t")),
             Check(Or((Compare("<", sym, Poly.of(0)), Compare(">=", sym, n))), cx.message(
                 op, f"index %lld is out of bounds for dimension {d} of size %lld"), (value, n))]
    return (sym,)


def _slice_range(cx, op, item, n: Poly, d: int, dynamic, code: list) -> tuple:
    _, start, stop, step = item
    if start in (None, 0) and stop is None and step in (None, 1):
        return Poly.of(0), Poly.of(1), n                    # the whole dim
    if all(not isinstance(v, tuple) for v in (start, stop, step)) and n.const is not None:
        r = range(n.const)[slice(start, stop, step)]
        return Poly.of(r.start if len(r) else 0), Poly.of(r.step), Poly.of(len(r))
    begin, count = cx.new_dim(), cx.new_dim()
    step_poly = Poly.of(step) if isinstance(step, int) else (Poly.of(1) if step is None else cx.new_dim())

    def value(v, default):
        if v is None:
            return default
        if isinstance(v, tuple):
            return _value(cx, dynamic[v[1]])
        return Poly.of(v)
    if step_poly.const is None:
        code.append(Assign(str(step_poly), value(step, Poly.of(1))))
    code.append(Check(Compare("==", step_poly, Poly.of(0)), cx.message(op, "slice step cannot be zero")))
    lo, hi = Poly.sym(cx.fresh("lo")), Poly.sym(cx.fresh("hi"))
    forward = Compare(">", step_poly, Poly.of(0))
    code.append(Declare(str(lo), "int64_t", Select(forward, value(start, Poly.of(0)), value(start, n - 1), "int64_t")))
    code.append(Declare(str(hi), "int64_t", Select(forward, value(stop, n), value(stop, -n - 1), "int64_t")))
    for bound in (lo, hi):
        code.append(Assign(str(bound), Select(Compare("<", bound, Poly.of(0)), bound + n, bound, "int64_t")))
    code.append(Call("rt_slice_count", [lo, hi, step_poly, n, OutArg(str(begin), "int64_t")], result=str(count)))
    return begin, step_poly, count


def _gather(cx, op, code: list):
    params, indices = op.inputs
    if params.shape.rank is None or indices.shape.rank is None:
        return _opaque(cx, op, code)
    pd, idx = cx.dims[id(params)], cx.dims[id(indices)]
    axis = op.attrs["axis"] % len(pd)
    code.append(IndicesInRange(indices, pd[axis], cx.message(op, "indices[%lld] = %lld is not in [0, %lld)")))
    return [tuple(pd[:axis]) + tuple(idx) + tuple(pd[axis + 1:])]


def _indices_in_range(cx, check: IndicesInRange) -> list:
    n = check.bound
    value = cx.values.get(id(check.indices))
    if isinstance(value, Scalar):
        v = Cast(value.expr, "int64_t")
        return [Check(Or((Compare("<", v, ZERO), Compare(">=", v, n))), check.message, (Poly.of(0), v, n))]
    k = Poly.sym(cx.fresh("k"))
    v = Cast(Load(value.ptr, k, value.ctype), "int64_t")
    return [For(str(k), Poly.of(0), product(cx.dims[id(check.indices)]),
                [Check(Or((Compare("<", v, ZERO), Compare(">=", v, n))), check.message, (k, v, n))])]


# ---------------------------------------------------------------------------
# Generators, shape queries, data movement.


def known_element(cx, t, index: tuple) -> Poly | None:
    """Element ``index`` (ints) of the int tensor ``t`` as a polynomial of the dims, when the ops that made it
    say which: ``rt.shape(x)[1]`` is ``x``'s dim 1, a ``Pack`` of such scalars a shape of them. Sizes computed
    from sizes so keep the dims' symbols: ``rt.zeros([rt.shape(x)[1], 1])`` is ``[m, 1]`` for an ``x`` of
    ``[n, m]``, the same size as ``x``'s columns (a fresh symbol for it made a loop variable's dims vary, every
    broadcast against it computed and checked per iteration: a regression over ``None`` dims 1.3x its static
    spelling). None when the value is only known at run time."""
    if not t.dtype.is_integer:
        return None
    op = t.op
    const = cx.const_value(t)
    if const is not None:
        inside = const.ndim == len(index) and all(0 <= i < n for i, n in zip(index, const.shape))
        return Poly.of(int(const[index])) if inside else None
    if op.type == "Shape" and id(op.inputs[0]) in cx.dims and len(index) == 1:
        dims = cx.dims[id(op.inputs[0])]
        return dims[index[0]] if 0 <= index[0] < len(dims) else None
    if op.type == "Size" and id(op.inputs[0]) in cx.dims and not index:
        return product(cx.dims[id(op.inputs[0])])
    if op.type == "Pack" and len(index) == 1 and op.attrs["axis"] == 0 and 0 <= index[0] < len(op.inputs):
        return known_element(cx, op.inputs[index[0]], ())
    if op.type == "StridedSlice" and id(op) in cx.shapes.slices:
        mapped = slice_index(cx.shapes.slices[id(op)], tuple(Poly.of(i) for i in index))
        if all(isinstance(m, Poly) and m.const is not None for m in mapped):
            return known_element(cx, op.inputs[0], tuple(m.const for m in mapped))
    if op.type in ("Identity", "Cast") and op.inputs[0].dtype.is_integer and \
            op.inputs[0].dtype.size <= t.dtype.size:          # not narrowed: the same value
        return known_element(cx, op.inputs[0], index)
    return None


def _fill(cx, op, code: list):
    dims_t = op.inputs[0]
    out = op.outputs[0]
    if out.shape.rank is None:
        return _opaque(cx, op, code)
    const = cx.const_value(dims_t)
    if const is not None:
        return [tuple(int(v) for v in const.reshape(-1))]
    dims = [Poly.of(d) if d is not None else cx.new_dim() for d in out.shape.dims]
    for d in range(len(dims)):
        known = known_element(cx, dims_t, (d,))
        # dims and products of them are never negative; a constant is checked while tracing
        if known is not None and (known.const is None or known.const >= 0) and \
                (dims[d].const is None or known == dims[d]):
            dims[d] = known
            continue
        v = _value(cx, dims_t, d)
        code.append(Check(Compare("<", v, ZERO), cx.message(op, f"dimensions must be non-negative, dimension {d} is "
                                                                "%lld"), (v,)))
        if dims[d].const is None:
            code.append(Assign(str(dims[d]), v))
        else:
            code.append(Check(_ne(v, dims[d]), cx.message(op, f"dimension {d} is %lld, not {dims[d]}"), (v,)))
    code += check_count(cx, op, dims)
    return [tuple(dims)]


def _range(cx, op, code: list):
    out = op.outputs[0]
    if out.shape.dims[0] is not None:
        count = Poly.of(out.shape.dims[0])
    else:
        count = cx.new_dim()
    start, limit, delta = (Element(t, (), None) for t in op.inputs)
    code.append(Check(Compare("==", delta, ZERO), cx.message(op, "delta must not be zero")))
    if out.dtype.is_integer:
        one = Lit(1, "int")

        def steps(lo, hi, step):          # ((int64_t)hi - lo + step - 1) / step, for hi > lo
            return Arith("/", Arith("-", Arith("+", Arith("-", Cast(hi, "int64_t"), lo, "int64_t"), step,
                                               "int64_t"), one, "int64_t"), step, "int64_t")
        up = Select(Compare(">", limit, start), steps(start, limit, delta), ZERO, "int64_t")
        down = Select(Compare("<", limit, start),
                      Arith("/", Arith("-", Arith("-", Arith("-", Cast(start, "int64_t"), limit, "int64_t"), delta,
                                                  "int64_t"), one, "int64_t"), Neg(delta, delta.ctype), "int64_t"),
                      ZERO, "int64_t")
        n = Select(Compare(">", delta, ZERO), up, down, "int64_t")
    else:
        span = Arith("/", Arith("-", Cast(limit, "double"), Cast(start, "double"), "double"), Cast(delta, "double"),
                     "double")
        n = Cast(Helper("fmax", (Lit(0.0, "double"), Helper("ceil", (span,), "double")), "double"), "int64_t")
    if count.const is None:
        code.append(Assign(str(count), n))
        code += check_count(cx, op, [count])
    else:
        code.append(Check(_ne(n, count), cx.message(op, f"the range does not have {count} elements")))
    return [(count,)]


def _concat(cx, op, code: list):
    out = op.outputs[0]
    if out.shape.rank is None or any(id(t) not in cx.dims or t.shape.rank is None for t in op.inputs):
        return _opaque(cx, op, code)
    rank = out.shape.rank
    axis = op.attrs["axis"] % rank
    parts = [cx.dims[id(t)] for t in op.inputs]
    unify = cx.entry.unify
    if op.type == "Pack":
        first = parts[0]
        dims = list(first)
        dims.insert(axis, Poly.of(len(parts)))
        pairs = [(d, p[d], first[d]) for p in parts[1:] for d in range(len(first)) if not unify(p[d], first[d])]
    else:
        dims = [sum((p[axis] for p in parts), Poly.of(0)) if d == axis else parts[0][d] for d in range(rank)]
        pairs = [(d, p[d], parts[0][d]) for p in parts[1:] for d in range(rank)
                 if d != axis and not unify(p[d], parts[0][d])]
    for d, a, b in pairs:
        code.append(Check(_ne(a, b), cx.message(op, f"input shapes differ at dimension {d}: %lld vs %lld"), (a, b)))
    return [tuple(dims)]


def _matmul(cx, op, code: list):
    a, b = op.inputs
    if a.shape.rank is None or b.shape.rank is None or op.outputs[0].shape.rank is None:
        return _opaque(cx, op, code)
    ad, bd = list(cx.dims[id(a)]), list(cx.dims[id(b)])
    if op.attrs.get("transpose_a"):
        ad[-1], ad[-2] = ad[-2], ad[-1]
    if op.attrs.get("transpose_b"):
        bd[-1], bd[-2] = bd[-2], bd[-1]
    batch = []
    ab, bb = ad[:-2], bd[:-2]
    rank = max(len(ab), len(bb))
    ab = [Poly.of(1)] * (rank - len(ab)) + ab
    bb = [Poly.of(1)] * (rank - len(bb)) + bb
    checks = []
    for x, y in zip(ab, bb):
        if y == 1 or cx.entry.unify(x, y):
            batch.append(x)
        elif x == 1:
            batch.append(y)
        elif x.const is not None and y.const is not None:
            batch.append(x)
        else:
            size = cx.new_dim()
            checks.append((x, y, size))
            batch.append(size)
    k1, k2 = ad[-1], bd[-2]
    if not cx.entry.unify(k1, k2):
        code.append(Check(_ne(k1, k2), cx.message(op, "inner dimensions differ: %lld vs %lld"), (k1, k2)))
    for x, y, size in checks:
        code.append(Assign(str(size), Select(_one(x), x, y, "int64_t")))
        code.append(Check(And((_ne(x, y), _one(x), _one(y))), cx.message(
            op, "batch dimensions differ: %lld vs %lld"), (x, y)))
    return [tuple(batch) + (ad[-2], bd[-1])]


def shape_input_dims(cx, op, t, code: list) -> tuple | None:
    """The dims a shape tensor ``t`` (an int vector input, e.g. a gradient's ``sizes``) holds: constants,
    the dims of the tensor a ``Shape`` op measured (the same symbols), or symbols the run-time values are
    assigned to (checked non-negative) by statements appended to ``code``."""
    const = cx.const_value(t)
    if const is not None:
        return tuple(Poly.of(int(v)) for v in const.reshape(-1))
    if t.op.type == "Shape" and id(t.op.inputs[0]) in cx.dims:
        return cx.dims[id(t.op.inputs[0])]
    if t.shape.rank != 1 or t.shape.dims[0] is None:
        return None
    known = [known_element(cx, t, (d,)) for d in range(t.shape.dims[0])]
    dims = tuple(k if k is not None and k.const is None else cx.new_dim() for k in known)
    for d, dim in enumerate(dims):
        if dim is known[d]:
            continue
        v = _value(cx, t, d)
        code += [Check(Compare("<", v, ZERO), cx.message(op, f"dimension {d} of the shape is %lld"), (v,)),
                 Assign(str(dim), v)]
    return dims


def _same_dims(cx, op, pairs, what: str, code: list) -> None:
    """Check at run time that each (actual, expected) pair of dims agrees (symbols that are equal need nothing)."""
    for a, b in pairs:
        if not cx.entry.unify(a, b):
            code.append(Check(_ne(a, b), cx.message(op, f"{what}: a dimension is %lld where %lld was expected"),
                              (a, b)))


# ---------------------------------------------------------------------------
# Windows of convolutions and pooling (NHWC): rt_window_init (rt_nn.h) computes the geometry at run time.


def _window(cx, op, dims, kh: Poly, kw: Poly, f: Poly, code: list) -> tuple[Poly, Poly]:
    """The output rows and columns of ``op``'s windows over an input of ``dims``; ``code`` fills the
    ``rt_window`` the op's kernel takes (``cx.shapes.windows[id(op)]``) and fails when a window cannot fit."""
    n, h, w, c = dims
    sh, sw = op.attrs["strides"]
    padding = op.attrs["padding"]
    out = []
    for size, k, s in ((h, kh, sh), (w, kw, sw)):
        if size.const is not None and k.const is not None:
            count = nn_ops.out_size(size.const, k.const, s, padding)
            out.append(Poly.of(count) if count > 0 else cx.new_dim())
        else:
            out.append(cx.new_dim())
    oh, ow = out
    name = cx.local("rt_window", "win", size=1)      # an array: the kernels read it through a pointer
    cx.shapes.windows[id(op)] = name
    same = int(padding == "SAME")
    message = f"a %lldx%lld window does not fit in an input of %lldx%lld with padding {padding}"
    rc = cx.local("int", "rc")
    code.append(Call("rt_window_init", [Ptr(name), n, h, w, c, kh, kw, f, Lit(sh, "int"), Lit(sw, "int"),
                                        Lit(same, "int")], result=rc))
    if not op.type.startswith("AvgPool"):        # an average pool of a window that does not fit is empty
        code.append(Check(_ne(Var(rc, "int"), ZERO), cx.message(op, message), (kh, kw, h, w)))
    for dim, field in ((oh, "oh"), (ow, "ow")):
        if dim.const is None:
            code.append(Assign(str(dim), Field(Var(name, "rt_window *"), field, "int64_t")))
    return oh, ow


def _conv(cx, op, code: list):
    if op.type == "Conv2D":
        x, w = op.inputs
        if x.shape.rank != 4 or w.shape.rank != 4:
            return _opaque(cx, op, code)
        dims, (kh, kw, c, f) = cx.dims[id(x)], cx.dims[id(w)]
        out_dims = None
    elif op.type == "Conv2DBackpropInput":
        sizes, w, dy = op.inputs
        dims = shape_input_dims(cx, op, sizes, code)
        if dims is None or len(dims) != 4 or w.shape.rank != 4 or dy.shape.rank != 4:
            return _opaque(cx, op, code)
        kh, kw, c, f = cx.dims[id(w)]
        out_dims = dims
    else:
        x, sizes, dy = op.inputs
        filt = shape_input_dims(cx, op, sizes, code)
        if filt is None or len(filt) != 4 or x.shape.rank != 4 or dy.shape.rank != 4:
            return _opaque(cx, op, code)
        dims = cx.dims[id(x)]
        kh, kw, c, f = out_dims = filt
    _same_dims(cx, op, [(dims[3], c)], "the input's channels do not match the filters'", code)
    oh, ow = _window(cx, op, dims, kh, kw, f, code)
    if op.type != "Conv2D":
        _same_dims(cx, op, zip(cx.dims[id(dy)], (dims[0], oh, ow, f)), "the gradient's shape does not match", code)
    return [out_dims or (dims[0], oh, ow, f)]


def _pool(cx, op, code: list):
    x = op.inputs[0]
    if x.shape.rank != 4 or any(t.shape.rank != 4 for t in op.inputs):
        return _opaque(cx, op, code)
    dims = cx.dims[id(x)]
    kh, kw = op.attrs["ksize"]
    oh, ow = _window(cx, op, dims, Poly.of(kh), Poly.of(kw), dims[3], code)
    pooled = (dims[0], oh, ow, dims[3])
    if op.type == "MaxPoolGrad":
        _same_dims(cx, op, zip(cx.dims[id(op.inputs[1])] + cx.dims[id(op.inputs[2])], pooled + pooled),
                   "the pooled output or its gradient does not match the input", code)
    elif op.type == "AvgPoolGrad":
        _same_dims(cx, op, zip(cx.dims[id(op.inputs[1])], pooled), "the gradient does not match the pooled output",
                   code)
    elif op.type == "MaxPoolGradGrad":
        _same_dims(cx, op, zip(cx.dims[id(op.inputs[1])] + cx.dims[id(op.inputs[2])], pooled + dims),
                   "the pooled output or the gradient does not match the input", code)
    return [dims if op.type in ("MaxPoolGrad", "AvgPoolGrad") else pooled]


# ---------------------------------------------------------------------------
# Broadcasts, one-hot rows, paddings (``kernels.INDEXED``) and the ops that write parts of their output
# (``scatter``).


def _broadcast_to(cx, op, code: list):
    x, shape = op.inputs
    dims = shape_input_dims(cx, op, shape, code)
    if dims is None or x.shape.rank is None or len(dims) < x.shape.rank:
        return _opaque(cx, op, code)
    xd = cx.dims[id(x)]
    code += _broadcast_to_checks(cx, op, xd, dims[len(dims) - len(xd):],
                                 "a tensor whose dimension {d} is %lld cannot broadcast to %lld")
    return [dims]


def _broadcast_to_checks(cx, op, sources, targets, message: str) -> list:
    """Checks that each of ``sources`` is 1 or its ``targets`` dim at run time (pairs known equal or 1 are left
    out); ``message`` names the dim as ``{d}``."""
    return [Check(And((_one(a), _ne(a, b))), cx.message(op, message.format(d=d)), (a, b))
            for d, (a, b) in enumerate(zip(sources, targets)) if a != b and a != 1]


def _one_hot(cx, op, code: list):
    dims = list(cx.dims[id(op.inputs[0])])
    axis = op.attrs["axis"]
    dims.insert(len(dims) if axis == -1 else axis, Poly.of(op.attrs["depth"]))
    return [tuple(dims)]


def _paddings(cx, op, paddings, rank: int, code: list) -> list | None:
    """[(before, after)] per dim: constants, or symbols the run-time values go to (checked non-negative)."""
    const = cx.const_value(paddings)
    if const is not None:
        return [(Poly.of(int(b)), Poly.of(int(a))) for b, a in np.asarray(const).reshape(-1, 2)]
    if paddings.shape.rank != 2 or paddings.shape.dims[0] not in (rank, None):
        return None
    pads = [(cx.new_dim(), cx.new_dim()) for _ in range(rank)]
    if paddings.shape.dims[0] is None:
        rows = cx.dims[id(paddings)][0]
        code.append(Check(_ne(rows, Poly.of(rank)), cx.message(op, f"paddings has %lld rows for a tensor of rank "
                                                                   f"{rank}"), (rows,)))
    for d, pair in enumerate(pads):
        for k, sym in enumerate(pair):
            v = _value(cx, paddings, d, k)
            code += [Check(Compare("<", v, ZERO), cx.message(op, f"paddings must be non-negative, got %lld for "
                                                                 f"dimension {d}"), (v,)),
                     Assign(str(sym), v)]
    return pads


def _pad(cx, op, code: list):
    x = op.inputs[0]
    if x.shape.rank is None:
        return _opaque(cx, op, code)
    dims = cx.dims[id(x)]
    pads = _paddings(cx, op, op.inputs[1], len(dims), code)
    if pads is None:
        return _opaque(cx, op, code)
    cx.shapes.pads[id(op)] = pads
    mode = op.attrs["mode"]
    if mode != "CONSTANT":
        limit = 1 if mode == "REFLECT" else 0
        for d, (pair, n) in enumerate(zip(pads, dims)):
            for p in pair:
                if p.const is None or n.const is None or p.const > n.const - limit:
                    code.append(Check(Compare(">", p, n - limit), cx.message(
                        op, f"a padding of %lld is too large for dimension {d} of size %lld in {mode} mode"), (p, n)))
    return [tuple(n + b + a for n, (b, a) in zip(dims, pads))]


def _pad_grad(cx, op, code: list):
    grad = op.inputs[0]
    if grad.shape.rank is None:
        return _opaque(cx, op, code)
    dims = cx.dims[id(grad)]
    pads = _paddings(cx, op, op.inputs[1], len(dims), code)
    if pads is None:
        return _opaque(cx, op, code)
    cx.shapes.pads[id(op)] = pads
    out = tuple(n - b - a for n, (b, a) in zip(dims, pads))
    for d, n in enumerate(out):
        if n.const is None or n.const < 0:
            code.append(Check(Compare("<", n, Poly.of(0)),
                              cx.message(op, f"the paddings are larger than dimension {d} of the gradient")))
    return [out]


def _strided_slice_grad(cx, op, code: list):
    shape, grad = op.inputs[0], op.inputs[1]
    dims = shape_input_dims(cx, op, shape, code)
    if dims is None or grad.shape.rank is None:
        return _opaque(cx, op, code)
    plan, sliced = slice_plan(cx, op, dims, op.attrs["spec"], op.inputs[2:], code)
    cx.shapes.slices[id(op)] = plan
    gd = cx.dims[id(grad)]
    if len(gd) != len(sliced):
        code.append(Fail(cx.message(op, "the gradient's rank does not match the slice's")))
    else:
        _same_dims(cx, op, zip(gd, sliced), "the gradient's shape does not match the slice's", code)
    return [dims]


def _segment_sum(cx, op, code: list):
    data, ids, num = op.inputs
    if data.shape.rank is None or ids.shape.rank is None:
        return _opaque(cx, op, code)
    dd, idd = cx.dims[id(data)], cx.dims[id(ids)]
    const = cx.const_value(num)
    if const is not None:
        segments = Poly.of(int(const))
    else:
        segments = cx.new_dim()
        v = _value(cx, num)
        code += [Check(Compare("<", v, ZERO), cx.message(op, "num_segments must be non-negative, got %lld"), (v,)),
                 Assign(str(segments), v)]
    if len(idd) > len(dd):
        code.append(Fail(cx.message(op, "the segment ids have more dimensions than the data")))
    else:
        _same_dims(cx, op, zip(idd, dd), "the segment ids do not prefix the data's shape", code)
    return [(segments,) + tuple(dd[len(idd):])]


def _sum_to_shape(cx, op, code: list):
    grad, shape = op.inputs
    dims = shape_input_dims(cx, op, shape, code)
    if dims is None or grad.shape.rank is None:
        return _opaque(cx, op, code)
    gd = cx.dims[id(grad)]
    lead = len(gd) - len(dims)
    if lead < 0:
        code.append(Fail(cx.message(op, "a tensor of lower rank cannot be summed to this shape")))
    else:
        code += _broadcast_to_checks(cx, op, dims, gd[lead:],
                                     "dimension {d} of the shape is %lld, which does not broadcast to %lld")
    return [dims]


def _check_labels(cx, op, code: list):
    labels, logits = op.inputs
    if labels.shape.rank is None or logits.shape.rank is None:
        return _opaque(cx, op, code)
    ld, gd = cx.dims[id(labels)], cx.dims[id(logits)]
    where = f"\n  [[{op.where().replace('%', '%%')}]]"
    if len(ld) != len(gd) - 1:
        text = (f"{op.attrs['op']}: labels of shape {list(labels.shape.dims)} do not match logits of shape "
                f"{list(logits.shape.dims)}")
        code.append(Fail(text.replace("%", "%%") + where))
    else:
        for d, (a, b) in enumerate(zip(ld, gd)):
            if a != b:
                text = f"{op.attrs['op']}: labels do not match logits: dimension {d} is %lld in the labels and %lld in "
                code.append(Check(_ne(a, b), f"{text}the logits{where}", (a, b)))
    return [tuple(gd[:-1])]


def _while(cx, op, code: list):
    """A loop variable keeps the dims it enters the loop with, unless discovery found that dim varies
    (``assume.py``); ``control.emit_while`` proves the assumption by induction when it lowers the body."""
    varying = cx.assume.varying
    outs, assumed = [], set()
    for k, t in enumerate(op.outputs):
        if t.shape.rank is None:
            outs.append(None)
            continue
        entry = cx.dims.get(id(op.inputs[k]))
        dims = []
        for d, size in enumerate(t.shape.dims):
            if size is not None:
                dims.append(Poly.of(size))
            elif entry is not None and len(entry) == t.shape.rank and "*" not in varying \
                    and (id(op), k, d) not in varying:
                dims.append(entry[d])
                assumed.add((k, d))
            else:
                dims.append(cx.new_dim())
        outs.append(tuple(dims))
    cx.shapes.hypotheses[id(op)] = assumed
    return outs


def _shape(cx, op, code: list):
    return [(Poly.of(len(cx.dims[id(op.inputs[0])])),)] if id(op.inputs[0]) in cx.dims else _opaque(cx, op, code)


def _const(cx, op, code: list):
    return [op.attrs["value"].array.shape]


_RULES = {
    "Const": _const,
    "Transpose": _transpose,
    "ExpandDims": _expand_dims,
    "Squeeze": _squeeze,
    "Unpack": _unpack,
    "Reshape": _reshape,
    "StridedSlice": _strided_slice,
    "GatherV2": _gather,
    "Fill": _fill,
    "Range": _range,
    "Eye": lambda cx, op, code: [(op.attrs["num_rows"], op.attrs["num_columns"])],
    "ConcatV2": _concat,
    "Pack": _concat,
    "MatMul": _matmul,
    "While": _while,
    "Shape": _shape,
    "BroadcastTo": _broadcast_to,
    "CheckLabels": _check_labels,
    "OneHot": _one_hot,
    "PadV2": _pad,
    "MirrorPad": _pad,
    "PadGrad": _pad_grad,
    "StridedSliceGrad": _strided_slice_grad,
    "UnsortedSegmentSum": _segment_sum,
    "SumToShape": _sum_to_shape,
    "Conv2D": _conv,
    "Conv2DBackpropInput": _conv,
    "Conv2DBackpropFilter": _conv,
    "MaxPool": _pool,
    "MaxPoolGrad": _pool,
    "MaxPoolGradGrad": _pool,
    "AvgPool": _pool,
    "AvgPoolGrad": _pool,
    "ShuffleIndices": lambda cx, op, code: [cx.dims.get(id(op.inputs[0])), ()],
    "Size": lambda cx, op, code: [()],
    "Rank": lambda cx, op, code: [()],
}
