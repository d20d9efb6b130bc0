"""Symbolic shapes: each tensor's dims as index polynomials, and the run-time checks that keep them true.

``infer(lw, op)`` sets the dims of ``op``'s outputs: constants where the graph knows them, the
inputs' symbols where they carry through (an elementwise op of two ``[n]`` tensors is ``[n]``), and
fresh symbols for sizes only known at run time (a broadcast of two different unknown dims, a
reshape to computed dims, a slice with tensor bounds). It also records the code that, at the op's
place in the program, assigns those symbols and checks the run-time sizes exactly as the generic
executor would (incompatible broadcasts, reshape element counts, out-of-range indices, element
counts that overflow): every error names the op and the user's line.
"""
from __future__ import annotations

import numpy as np

from runtime.ops import nn_ops
from transpiler.lowering.ir import Assign, Check, Declare, Fail, For, Load, Poly, product, render_expr
from transpiler.lowering.kernels import Elements, reduce_axes
from transpiler.lowering.values import Array, Scalar


def static_dims(tensor) -> tuple:
    return tuple(None if d is None else Poly.of(d) for d in tensor.shape.dims)


def infer(lw, op) -> None:
    """Set ``lw.dims`` for ``op``'s outputs and ``lw.shape_code[id(op)]`` (emitted at the op's place)."""
    rule = _RULES.get(op.type)
    if rule is None:
        if op.opdef.elementwise:
            rule = _elementwise
        elif op.opdef.reduction is not None:
            rule = _reduction
        else:
            rule = _opaque
    outs = rule(lw, op)
    for t, dims in zip(op.outputs, outs):
        if dims is not None:
            lw.dims[id(t)] = tuple(Poly.of(d) for d in dims)


def _code(lw, op, fn) -> None:
    lw.shape_code.setdefault(id(op), []).append(fn)


def _value(lw, tensor, *index):
    """C text of an element of ``tensor`` (an int64 value), read where the shape code runs."""
    return f"((int64_t){render_expr(Elements(lw).of(tensor, index))})"


def _fresh_dims(lw, op, tensor):
    """Static dims of ``tensor`` from the graph, fresh symbols for the unknown ones."""
    if tensor.shape.dims is None:
        return None
    return tuple(Poly.of(d) if d is not None else lw.new_dim() for d in tensor.shape.dims)


def _opaque(lw, op):
    return [_fresh_dims(lw, op, t) for t in op.outputs]


def check_count(lw, op, dims) -> None:
    """Emit a check that the element count of run-time ``dims`` neither overflows nor is negative."""
    symbolic = [d for d in dims if d.const is None]
    if not symbolic:
        return
    args = ", ".join(str(d) for d in dims)
    lw.emit(Check(f"rt_count_overflows({len(dims)}, (const int64_t[]){{{args}}}, {_itemsize(op)})",
                  lw.message(op, "the result would have more elements than memory can hold (or a negative "
                                 "dimension)")))


def _itemsize(op) -> int:
    return max(op.outputs[0].dtype.size, 1)


# ---------------------------------------------------------------------------
# Elementwise broadcasting.


def _elementwise(lw, op):
    out = op.outputs[0]
    if out.shape.rank is None or any(id(t) not in lw.dims for t in op.inputs):
        return _opaque(lw, op)
    rank = out.shape.rank
    in_dims = [lw.dims[id(t)] for t in op.inputs]
    dims, pending = [], []
    for d in range(rank):
        aligned = [ds[d - rank + len(ds)] for ds in in_dims if d - rank + len(ds) >= 0]
        static = [p for p in aligned if p.const is not None and p.const != 1]
        symbolic = []
        for p in aligned:
            if p.const is None and p not in symbolic:
                symbolic.append(p)
        if static:
            size = static[0]
            for p in symbolic:
                pending.append((d, p, size))
        elif len(symbolic) == 1:
            size = symbolic[0]
        elif len(symbolic) > 1 and lw.assume_equal(symbolic):
            size = symbolic[0]
        elif symbolic:
            size = lw.new_dim()
            pending.append((d, symbolic, size))
        else:
            size = Poly.of(1)
        dims.append(size)
    if pending:
        _code(lw, op, lambda: _broadcast_checks(lw, op, pending))
    return [tuple(dims)]


def _broadcast_checks(lw, op, pending) -> None:
    for d, p, size in pending:
        if isinstance(p, list):
            name = next(iter(size.symbols()))
            text = "1"
            for q in reversed(p):
                text = f"(({q}) != 1 ? ({q}) : {text})"
            lw.emit(Assign(name, text))
            for q in p:
                lw.emit(Check(f"({q}) != {name} && ({q}) != 1",
                              lw.message(op, f"incompatible shapes for broadcasting: dimension {d} is %lld in "
                                             f"one operand and %lld in another"), [str(q), name]))
        else:
            lw.emit(Check(f"({p}) != ({size}) && ({p}) != 1",
                          lw.message(op, f"incompatible shapes for broadcasting: dimension {d} is %lld in one "
                                         f"operand and {size} in another"), [str(p)]))


def guard_divisor(lw, op) -> None:
    """Integer FloorDiv/FloorMod by zero and Pow to negative powers are errors (as in eager)."""
    if op.type not in ("FloorDiv", "FloorMod", "Pow") or not op.inputs[0].dtype.is_integer:
        return
    bad = "< 0" if op.type == "Pow" else "== 0"
    message = ("Integers to negative integer powers are not allowed" if op.type == "Pow"
               else "Integer division by zero")
    divisor = op.inputs[1]
    value = lw.values.get(id(divisor))
    const = lw.const_value(divisor)
    if const is not None:
        if (const < 0).any() if op.type == "Pow" else (const == 0).any():
            lw.emit(Fail(lw.message(op, message)))
        return
    if isinstance(value, Scalar):
        lw.emit(Check(f"({render_expr(value.expr)}) {bad}", lw.message(op, message)))
        return
    k = lw.fresh("k")
    index = Poly.sym(k)
    count = product(lw.dims[id(divisor)])
    if isinstance(value, Array) and value.contiguous:
        element = render_expr(Load(value.ptr, index, value.ctype))
    else:
        raise ValueError(f"{op.name}: the divisor must be stored before the check")
    lw.emit(For(k, Poly.of(0), count, [Check(f"{element} {bad}", lw.message(op, message))]))


# ---------------------------------------------------------------------------
# Reductions and views.


def _reduction(lw, op):
    x = op.inputs[0]
    if x.shape.rank is None or id(x) not in lw.dims:
        return _opaque(lw, op)
    dims = lw.dims[id(x)]
    axes = reduce_axes(lw, op)
    if op.attrs["keepdims"]:
        out = tuple(Poly.of(1) if d in axes else dims[d] for d in range(len(dims)))
    else:
        out = tuple(dims[d] for d in range(len(dims)) if d not in axes)
    return [out]


def _transpose(lw, op):
    dims = lw.dims[id(op.inputs[0])]
    perm = op.attrs["perm"] or tuple(reversed(range(len(dims))))
    return [tuple(dims[p] for p in perm)]


def _expand_dims(lw, op):
    dims = list(lw.dims[id(op.inputs[0])])
    dims.insert(op.attrs["axis"] % (len(dims) + 1), Poly.of(1))
    return [tuple(dims)]


def _squeeze(lw, op):
    dims = lw.dims[id(op.inputs[0])]
    axes = op.attrs["axis"]
    if axes is None:
        axes = [d for d, n in enumerate(dims) if n == 1]
    axes = {a % len(dims) for a in axes}
    lw.squeezed[id(op)] = axes
    symbolic = [a for a in sorted(axes) if dims[a].const is None]
    if symbolic:
        def code():
            for a in symbolic:
                lw.emit(Check(f"({dims[a]}) != 1", lw.message(op, f"dimension {a} is %lld, not 1"), [str(dims[a])]))
        _code(lw, op, code)
    return [tuple(d for i, d in enumerate(dims) if i not in axes)]


def _unpack(lw, op):
    dims = list(lw.dims[id(op.inputs[0])])
    axis = op.attrs["axis"] % len(dims)
    size = dims.pop(axis)
    if size.const is None:
        _code(lw, op, lambda: lw.emit(Check(f"({size}) != {op.attrs['num']}", lw.message(
            op, f"dimension {axis} is %lld, not {op.attrs['num']}"), [str(size)])))
    return [tuple(dims)] * len(op.outputs)


def _reshape(lw, op):
    x, target = op.inputs
    out = op.outputs[0]
    if out.shape.rank is None or x.shape.rank is None:
        return _opaque(lw, op)
    count = product(lw.dims[id(x)])
    const = lw.const_value(target)
    if const is not None:
        wanted = [int(v) for v in const.reshape(-1)]
        known = 1
        for v in wanted:
            if v != -1:
                known *= v
        if -1 in wanted:
            if count.const is not None:
                dims = [count.const // known if v == -1 and known else v for v in wanted]
                return [tuple(dims)]
            unknown = lw.new_dim()
            dims = [unknown if v == -1 else Poly.of(v) for v in wanted]

            def code():
                lw.emit(Check(f"{known} == 0 || ({count}) % {known} != 0", lw.message(
                    op, f"cannot reshape a tensor of %lld elements into {wanted}"), [str(count)]))
                lw.emit(Assign(str(unknown), f"({count}) / {known}"))
            _code(lw, op, code)
            return [tuple(dims)]
        if count.const is None:
            _code(lw, op, lambda: lw.emit(Check(f"({count}) != {known}", lw.message(
                op, f"cannot reshape a tensor of %lld elements into {wanted}"), [str(count)])))
        return [tuple(wanted)]
    rank = out.shape.rank
    dims = [Poly.of(d) if d is not None else lw.new_dim() for d in out.shape.dims]

    def code():
        values = [_value(lw, target, d) for d in range(rank)]
        known = lw.fresh("known")
        unknown = lw.fresh("unknown")
        lw.emit(Declare(known, "int64_t", "1"))
        lw.emit(Declare(unknown, "int", "-1"))
        for d in range(rank):
            v = values[d]
            lw.emit(Check(f"{v} < -1 || ({v} == -1 && {unknown} >= 0)", lw.message(
                op, f"bad target shape: dimension {d} is %lld"), [v]))
            lw.emit(Assign(unknown, f"{v} == -1 ? {d} : {unknown}"))
            lw.emit(Assign(known, f"{v} == -1 ? {known} : {known} * {v}"))
        lw.emit(Check(f"{unknown} >= 0 && ({known} == 0 || ({count}) % {known} != 0)", lw.message(
            op, "cannot reshape a tensor of %lld elements into a shape of %lld elements and one -1"),
            [str(count), known]))
        lw.emit(Check(f"{unknown} < 0 && ({count}) != {known}", lw.message(
            op, "cannot reshape a tensor of %lld elements into a shape of %lld elements"), [str(count), known]))
        for d in range(rank):
            if dims[d].const is None:
                lw.emit(Assign(str(dims[d]), f"{unknown} == {d} ? ({count}) / {known} : {values[d]}"))
            else:
                lw.emit(Check(f"{unknown} == {d} ? ({count}) / {known} != {dims[d]} : {values[d]} != {dims[d]}",
                              lw.message(op, f"dimension {d} is not {dims[d]}")))
    _code(lw, op, code)
    return [tuple(dims)]


def _strided_slice(lw, op):
    x = op.inputs[0]
    if x.shape.rank is None or op.outputs[0].shape.rank is None:
        return _opaque(lw, op)
    code: list = []
    plan, out = slice_plan(lw, op, lw.dims[id(x)], op.attrs["spec"], op.inputs[1:], code)
    lw.slices[id(op)] = plan
    if code:
        _code(lw, op, lambda: [fn() for fn in code])
    return [out]


def slice_plan(lw, op, dims, spec, dynamic, code: list) -> tuple[list, tuple]:
    """How ``x[spec]`` of an ``x`` of ``dims`` reads ``x`` (``kernels.slice_index``), and the slice's dims;
    ``code`` computes run-time bounds and checks them."""
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
            plan.append(("fixed",) + _slice_index(lw, op, item[1], n, d, dynamic, code))
        else:
            begin, step, count = _slice_range(lw, op, item, n, d, dynamic, code)
            plan.append(("range", begin, step))
            out.append(count)
        d += 1
    return plan, tuple(out)


def _slice_index(lw, op, k, n: Poly, d: int, dynamic, code) -> tuple:
    if isinstance(k, int) and n.const is not None:
        return (Poly.of(k + n.const if k < 0 else k),)
    sym = lw.new_dim()

    def emit():
        value = _value(lw, dynamic[k[1]]) if isinstance(k, tuple) else str(k)
        lw.emit(Assign(str(sym), value))
        lw.emit(Assign(str(sym), f"{sym} < 0 ? {sym} + ({n}) : {sym}"))
        lw.emit(Check(f"{sym} < 0 || {sym} >= ({n})", lw.message(
            op, f"index %lld is out of bounds for dimension {d} of size %lld"), [value, str(n)]))
    code.append(emit)
    return (sym,)


def _slice_range(lw, op, item, n: Poly, d: int, dynamic, code) -> tuple:
    _, start, stop, step = item
    if start in (None, 0) and stop is None and step in (None, 1):
        return Poly.of(0), Poly.of(1), n                    # the whole dim
    if all(not isinstance(v, tuple) for v in (start, stop, step)) and n.const is not None:
        r = range(n.const)[slice(start, stop, step)]
        return Poly.of(r.start if len(r) else 0), Poly.of(r.step), Poly.of(len(r))
    begin, count = lw.new_dim(), lw.new_dim()
    step_poly = Poly.of(step) if isinstance(step, int) else (Poly.of(1) if step is None else lw.new_dim())

    def value(v, default):
        if v is None:
            return default
        if isinstance(v, tuple):
            return _value(lw, dynamic[v[1]])
        return str(v)

    def emit():
        st = value(step, "1")
        if step_poly.const is None:
            lw.emit(Assign(str(step_poly), st))
        lw.emit(Check(f"({step_poly}) == 0", lw.message(op, "slice step cannot be zero")))
        lo, hi = lw.fresh("lo"), lw.fresh("hi")
        lw.emit(Declare(lo, "int64_t", f"({step_poly}) > 0 ? {value(start, '0')} : {value(start, f'({n}) - 1')}"))
        lw.emit(Declare(hi, "int64_t", f"({step_poly}) > 0 ? {value(stop, f'({n})')} : "
                                       f"{value(stop, f'-({n}) - 1')}"))
        lw.emit(Assign(lo, f"{lo} < 0 ? {lo} + ({n}) : {lo}"))
        lw.emit(Assign(hi, f"{hi} < 0 ? {hi} + ({n}) : {hi}"))
        lw.emit(Assign(str(count), f"rt_slice_count({lo}, {hi}, {step_poly}, {n}, &{begin})"))
    code.append(emit)
    return begin, step_poly, count


def _gather(lw, op):
    params, indices = op.inputs
    if params.shape.rank is None or indices.shape.rank is None:
        return _opaque(lw, op)
    pd, idx = lw.dims[id(params)], lw.dims[id(indices)]
    axis = op.attrs["axis"] % len(pd)
    _code(lw, op, lambda: _gather_check(lw, op, axis))
    return [tuple(pd[:axis]) + tuple(idx) + tuple(pd[axis + 1:])]


def _gather_check(lw, op, axis: int) -> None:
    params, indices = op.inputs
    n = lw.dims[id(params)][axis]
    value = lw.values.get(id(indices))
    message = lw.message(op, "indices[%lld] = %lld is not in [0, %lld)")
    if isinstance(value, Scalar):
        v = f"((int64_t){render_expr(value.expr)})"
        lw.emit(Check(f"{v} < 0 || {v} >= ({n})", message, ["0", v, str(n)]))
        return
    k = lw.fresh("k")
    v = f"((int64_t){render_expr(Load(value.ptr, Poly.sym(k), value.ctype))})"
    lw.emit(For(k, Poly.of(0), product(lw.dims[id(indices)]),
                [Check(f"{v} < 0 || {v} >= ({n})", message, [k, v, str(n)])]))


# ---------------------------------------------------------------------------
# Generators, shape queries, data movement.


def _fill(lw, op):
    dims_t = op.inputs[0]
    out = op.outputs[0]
    if out.shape.rank is None:
        return _opaque(lw, op)
    const = lw.const_value(dims_t)
    if const is not None:
        return [tuple(int(v) for v in const.reshape(-1))]
    dims = [Poly.of(d) if d is not None else lw.new_dim() for d in out.shape.dims]

    def code():
        for d in range(len(dims)):
            v = _value(lw, dims_t, d)
            lw.emit(Check(f"{v} < 0", lw.message(op, f"dimensions must be non-negative, dimension {d} is %lld"), [v]))
            if dims[d].const is None:
                lw.emit(Assign(str(dims[d]), v))
            else:
                lw.emit(Check(f"{v} != {dims[d]}", lw.message(op, f"dimension {d} is %lld, not {dims[d]}"), [v]))
        check_count(lw, op, dims)
    _code(lw, op, code)
    return [tuple(dims)]


def _range(lw, op):
    out = op.outputs[0]
    if out.shape.dims[0] is not None:
        count = Poly.of(out.shape.dims[0])
    else:
        count = lw.new_dim()

    def code():
        start, limit, delta = (render_expr(Elements(lw).of(t, ())) for t in op.inputs)
        lw.emit(Check(f"({delta}) == 0", lw.message(op, "delta must not be zero")))
        if out.dtype.is_integer:
            n = (f"(({delta}) > 0 ? (({limit}) > ({start}) ? (((int64_t)({limit}) - ({start}) + ({delta}) - 1) / "
                 f"({delta})) : 0) : (({limit}) < ({start}) ? (((int64_t)({start}) - ({limit}) - ({delta}) - 1) / "
                 f"-({delta})) : 0))")
        else:
            n = f"(int64_t)fmax(0.0, ceil(((double)({limit}) - (double)({start})) / (double)({delta})))"
        if count.const is None:
            lw.emit(Assign(str(count), n))
            check_count(lw, op, [count])
        else:
            lw.emit(Check(f"{n} != {count}", lw.message(op, f"the range does not have {count} elements")))
    _code(lw, op, code)
    return [(count,)]


def _concat(lw, op):
    out = op.outputs[0]
    if out.shape.rank is None or any(id(t) not in lw.dims or t.shape.rank is None for t in op.inputs):
        return _opaque(lw, op)
    rank = out.shape.rank
    axis = op.attrs["axis"] % rank
    parts = [lw.dims[id(t)] for t in op.inputs]
    if op.type == "Pack":
        first = parts[0]
        dims = list(first)
        dims.insert(axis, Poly.of(len(parts)))
        pairs = [(d, p[d], first[d]) for p in parts[1:] for d in range(len(first)) if not lw.unify(p[d], first[d])]
    else:
        dims = [sum((p[axis] for p in parts), Poly.of(0)) if d == axis else parts[0][d] for d in range(rank)]
        pairs = [(d, p[d], parts[0][d]) for p in parts[1:] for d in range(rank)
                 if d != axis and not lw.unify(p[d], parts[0][d])]
    if pairs:
        def code():
            for d, a, b in pairs:
                lw.emit(Check(f"({a}) != ({b})", lw.message(op, f"input shapes differ at dimension {d}: %lld vs %lld"),
                              [str(a), str(b)]))
        _code(lw, op, code)
    return [tuple(dims)]


def _matmul(lw, op):
    a, b = op.inputs
    if a.shape.rank is None or b.shape.rank is None or op.outputs[0].shape.rank is None:
        return _opaque(lw, op)
    ad, bd = list(lw.dims[id(a)]), list(lw.dims[id(b)])
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
        if y == 1 or lw.unify(x, y):
            batch.append(x)
        elif x == 1:
            batch.append(y)
        elif x.const is not None and y.const is not None:
            batch.append(x)
        else:
            size = lw.new_dim()
            checks.append((x, y, size))
            batch.append(size)
    k1, k2 = ad[-1], bd[-2]

    inner_checked = not lw.unify(k1, k2)

    def code():
        if inner_checked:
            lw.emit(Check(f"({k1}) != ({k2})", lw.message(
                op, "inner dimensions differ: %lld vs %lld"), [str(k1), str(k2)]))
        for x, y, size in checks:
            lw.emit(Assign(str(size), f"({x}) != 1 ? ({x}) : ({y})"))
            lw.emit(Check(f"({x}) != ({y}) && ({x}) != 1 && ({y}) != 1", lw.message(
                op, "batch dimensions differ: %lld vs %lld"), [str(x), str(y)]))
    _code(lw, op, code)
    return [tuple(batch) + (ad[-2], bd[-1])]


def shape_input_dims(lw, op, t, code: list) -> tuple | None:
    """The dims a shape tensor ``t`` (an int vector input, e.g. a gradient's ``sizes``) holds: constants,
    the dims of the tensor a ``Shape`` op measured (the same symbols), or symbols the run-time values are
    assigned to (checked non-negative) by ``code``."""
    const = lw.const_value(t)
    if const is not None:
        return tuple(Poly.of(int(v)) for v in const.reshape(-1))
    if t.op.type == "Shape" and id(t.op.inputs[0]) in lw.dims:
        return lw.dims[id(t.op.inputs[0])]
    if t.shape.rank != 1 or t.shape.dims[0] is None:
        return None
    dims = tuple(lw.new_dim() for _ in range(t.shape.dims[0]))

    def emit():
        for d, dim in enumerate(dims):
            v = _value(lw, t, d)
            lw.emit(Check(f"{v} < 0", lw.message(op, f"dimension {d} of the shape is %lld"), [v]))
            lw.emit(Assign(str(dim), v))
    code.append(emit)
    return dims


def _same_dims(lw, op, pairs, what: str, code: list) -> None:
    """Check at run time that each (actual, expected) pair of dims agrees (symbols that are equal need nothing)."""
    pairs = [(a, b) for a, b in pairs if not lw.unify(a, b)]
    if not pairs:
        return

    def emit():
        for a, b in pairs:
            lw.emit(Check(f"({a}) != ({b})", lw.message(op, f"{what}: a dimension is %lld where %lld was expected"),
                          [str(a), str(b)]))
    code.append(emit)


# ---------------------------------------------------------------------------
# Windows of convolutions and pooling (NHWC): rt_window_init (rt_nn.h) computes the geometry at run time.


def _window(lw, op, dims, kh: Poly, kw: Poly, f: Poly, code: list) -> tuple[Poly, Poly]:
    """The output rows and columns of ``op``'s windows over an input of ``dims``; ``code`` fills the
    ``rt_window`` local the op's kernel takes (``lw.windows[id(op)]``) and fails when a window cannot fit."""
    n, h, w, c = dims
    sh, sw = op.attrs["strides"]
    padding = op.attrs["padding"]
    out = []
    for size, k, s in ((h, kh, sh), (w, kw, sw)):
        if size.const is not None and k.const is not None:
            count = nn_ops.out_size(size.const, k.const, s, padding)
            out.append(Poly.of(count) if count > 0 else lw.new_dim())
        else:
            out.append(lw.new_dim())
    oh, ow = out
    name = lw.local("rt_window", "win")
    lw.windows[id(op)] = name
    same = int(padding == "SAME")

    message = f"a %lldx%lld window does not fit in an input of %lldx%lld with padding {padding}"

    def emit():
        lw.emit(Check(f"rt_window_init(&{name}, {n}, {h}, {w}, {c}, {kh}, {kw}, {f}, {sh}, {sw}, {same}) != 0",
                      lw.message(op, message), [str(kh), str(kw), str(h), str(w)]))
        for dim, field in ((oh, "oh"), (ow, "ow")):
            if dim.const is None:
                lw.emit(Assign(str(dim), f"{name}.{field}"))
    code.append(emit)
    return oh, ow


def _conv(lw, op):
    code: list = []
    if op.type == "Conv2D":
        x, w = op.inputs
        if x.shape.rank != 4 or w.shape.rank != 4:
            return _opaque(lw, op)
        dims, (kh, kw, c, f) = lw.dims[id(x)], lw.dims[id(w)]
        out_dims = None
    elif op.type == "Conv2DBackpropInput":
        sizes, w, dy = op.inputs
        dims = shape_input_dims(lw, op, sizes, code)
        if dims is None or len(dims) != 4 or w.shape.rank != 4 or dy.shape.rank != 4:
            return _opaque(lw, op)
        kh, kw, c, f = lw.dims[id(w)]
        out_dims = dims
    else:
        x, sizes, dy = op.inputs
        filt = shape_input_dims(lw, op, sizes, code)
        if filt is None or len(filt) != 4 or x.shape.rank != 4 or dy.shape.rank != 4:
            return _opaque(lw, op)
        dims = lw.dims[id(x)]
        kh, kw, c, f = out_dims = filt
    _same_dims(lw, op, [(dims[3], c)], "the input's channels do not match the filters'", code)
    oh, ow = _window(lw, op, dims, kh, kw, f, code)
    if op.type != "Conv2D":
        _same_dims(lw, op, zip(lw.dims[id(dy)], (dims[0], oh, ow, f)), "the gradient's shape does not match", code)
    _code(lw, op, lambda: [fn() for fn in code])
    return [out_dims or (dims[0], oh, ow, f)]


def _pool(lw, op):
    x = op.inputs[0]
    if x.shape.rank != 4 or any(t.shape.rank != 4 for t in op.inputs):
        return _opaque(lw, op)
    code: list = []
    dims = lw.dims[id(x)]
    kh, kw = op.attrs["ksize"]
    oh, ow = _window(lw, op, dims, Poly.of(kh), Poly.of(kw), dims[3], code)
    pooled = (dims[0], oh, ow, dims[3])
    if op.type == "MaxPoolGrad":
        _same_dims(lw, op, zip(lw.dims[id(op.inputs[1])] + lw.dims[id(op.inputs[2])], pooled + pooled),
                   "the pooled output or its gradient does not match the input", code)
    elif op.type == "MaxPoolGradGrad":
        _same_dims(lw, op, zip(lw.dims[id(op.inputs[1])] + lw.dims[id(op.inputs[2])], pooled + dims),
                   "the pooled output or the gradient does not match the input", code)
    _code(lw, op, lambda: [fn() for fn in code])
    return [dims if op.type == "MaxPoolGrad" else pooled]


# ---------------------------------------------------------------------------
# Broadcasts, one-hot rows, paddings (``kernels.INDEXED``) and the ops that write parts of their output
# (``scatter``).


def _broadcast_to(lw, op):
    x, shape = op.inputs
    code: list = []
    dims = shape_input_dims(lw, op, shape, code)
    if dims is None or x.shape.rank is None or len(dims) < x.shape.rank:
        return _opaque(lw, op)
    xd = lw.dims[id(x)]
    code.append(_broadcast_to_checks(lw, op, xd, dims[len(dims) - len(xd):],
                                     "a tensor whose dimension {d} is %lld cannot broadcast to %lld"))
    _code(lw, op, lambda: [fn() for fn in code])
    return [dims]


def _broadcast_to_checks(lw, op, sources, targets, message: str):
    """A code step checking at run time that each of ``sources`` is 1 or its ``targets`` dim (pairs known equal
    or 1 are left out); ``message`` names the dim as ``{d}``."""
    pending = [(d, a, b) for d, (a, b) in enumerate(zip(sources, targets)) if a != b and a != 1]

    def emit():
        for d, a, b in pending:
            lw.emit(Check(f"({a}) != 1 && ({a}) != ({b})", lw.message(op, message.format(d=d)), [str(a), str(b)]))
    return emit


def _one_hot(lw, op):
    dims = list(lw.dims[id(op.inputs[0])])
    axis = op.attrs["axis"]
    dims.insert(len(dims) if axis == -1 else axis, Poly.of(op.attrs["depth"]))
    return [tuple(dims)]


def _paddings(lw, op, paddings, rank: int, code: list) -> list | None:
    """[(before, after)] per dim: constants, or symbols the run-time values go to (checked non-negative)."""
    const = lw.const_value(paddings)
    if const is not None:
        return [(Poly.of(int(b)), Poly.of(int(a))) for b, a in np.asarray(const).reshape(-1, 2)]
    if paddings.shape.rank != 2 or paddings.shape.dims[0] not in (rank, None):
        return None
    pads = [(lw.new_dim(), lw.new_dim()) for _ in range(rank)]

    def emit():
        if paddings.shape.dims[0] is None:
            rows = lw.dims[id(paddings)][0]
            lw.emit(Check(f"({rows}) != {rank}", lw.message(op, f"paddings has %lld rows for a tensor of rank {rank}"),
                          [str(rows)]))
        for d, pair in enumerate(pads):
            for k, sym in enumerate(pair):
                v = _value(lw, paddings, d, k)
                lw.emit(Check(f"{v} < 0", lw.message(op, f"paddings must be non-negative, got %lld for dimension {d}"),
                              [v]))
                lw.emit(Assign(str(sym), v))
    code.append(emit)
    return pads


def _pad(lw, op):
    x = op.inputs[0]
    if x.shape.rank is None:
        return _opaque(lw, op)
    code: list = []
    dims = lw.dims[id(x)]
    pads = _paddings(lw, op, op.inputs[1], len(dims), code)
    if pads is None:
        return _opaque(lw, op)
    lw.pads[id(op)] = pads
    mode = op.attrs["mode"]
    if mode != "CONSTANT":
        limit = 1 if mode == "REFLECT" else 0
        checks = [(d, p, n) for d, (pair, n) in enumerate(zip(pads, dims)) for p in pair
                  if p.const is None or n.const is None or p.const > n.const - limit]

        def emit():
            for d, p, n in checks:
                lw.emit(Check(f"({p}) > ({n}) - {limit}", lw.message(
                    op, f"a padding of %lld is too large for dimension {d} of size %lld in {mode} mode"),
                    [str(p), str(n)]))
        code.append(emit)
    out = tuple(n + b + a for n, (b, a) in zip(dims, pads))
    _code(lw, op, lambda: [fn() for fn in code])
    return [out]


def _pad_grad(lw, op):
    grad = op.inputs[0]
    if grad.shape.rank is None:
        return _opaque(lw, op)
    code: list = []
    dims = lw.dims[id(grad)]
    pads = _paddings(lw, op, op.inputs[1], len(dims), code)
    if pads is None:
        return _opaque(lw, op)
    lw.pads[id(op)] = pads
    out = tuple(n - b - a for n, (b, a) in zip(dims, pads))
    symbolic = [(d, n) for d, n in enumerate(out) if n.const is None or n.const < 0]

    def emit():
        for d, n in symbolic:
            lw.emit(Check(f"({n}) < 0", lw.message(op, f"the paddings are larger than dimension {d} of the gradient")))
    code.append(emit)
    _code(lw, op, lambda: [fn() for fn in code])
    return [out]


def _strided_slice_grad(lw, op):
    shape, grad = op.inputs[0], op.inputs[1]
    code: list = []
    dims = shape_input_dims(lw, op, shape, code)
    if dims is None or grad.shape.rank is None:
        return _opaque(lw, op)
    plan, sliced = slice_plan(lw, op, dims, op.attrs["spec"], op.inputs[2:], code)
    lw.slices[id(op)] = plan
    gd = lw.dims[id(grad)]
    if len(gd) != len(sliced):
        code.append(lambda: lw.emit(Fail(lw.message(op, "the gradient's rank does not match the slice's"))))
    else:
        _same_dims(lw, op, zip(gd, sliced), "the gradient's shape does not match the slice's", code)
    _code(lw, op, lambda: [fn() for fn in code])
    return [dims]


def _segment_sum(lw, op):
    data, ids, num = op.inputs
    if data.shape.rank is None or ids.shape.rank is None:
        return _opaque(lw, op)
    dd, idd = lw.dims[id(data)], lw.dims[id(ids)]
    const = lw.const_value(num)
    code: list = []
    if const is not None:
        segments = Poly.of(int(const))
    else:
        segments = lw.new_dim()

        def emit():
            v = _value(lw, num)
            lw.emit(Check(f"{v} < 0", lw.message(op, "num_segments must be non-negative, got %lld"), [v]))
            lw.emit(Assign(str(segments), v))
        code.append(emit)
    if len(idd) > len(dd):
        code.append(lambda: lw.emit(Fail(lw.message(op, "the segment ids have more dimensions than the data"))))
    else:
        _same_dims(lw, op, zip(idd, dd), "the segment ids do not prefix the data's shape", code)
    _code(lw, op, lambda: [fn() for fn in code])
    return [(segments,) + tuple(dd[len(idd):])]


def _sum_to_shape(lw, op):
    grad, shape = op.inputs
    code: list = []
    dims = shape_input_dims(lw, op, shape, code)
    if dims is None or grad.shape.rank is None:
        return _opaque(lw, op)
    gd = lw.dims[id(grad)]
    lead = len(gd) - len(dims)
    if lead < 0:
        code.append(lambda: lw.emit(Fail(lw.message(op, "a tensor of lower rank cannot be summed to this shape"))))
    else:
        code.append(_broadcast_to_checks(lw, op, dims, gd[lead:],
                                         "dimension {d} of the shape is %lld, which does not broadcast to %lld"))
    _code(lw, op, lambda: [fn() for fn in code])
    return [dims]


def _check_labels(lw, op):
    labels, logits = op.inputs
    if labels.shape.rank is None or logits.shape.rank is None:
        return _opaque(lw, op)
    code: list = []
    ld, gd = lw.dims[id(labels)], lw.dims[id(logits)]
    where = f"\n  [[{op.where().replace('%', '%%')}]]"
    if len(ld) != len(gd) - 1:
        text = (f"{op.attrs['op']}: labels of shape {list(labels.shape.dims)} do not match logits of shape "
                f"{list(logits.shape.dims)}")
        code.append(lambda: lw.emit(Fail(text.replace("%", "%%") + where)))
    else:
        pairs = [(d, a, b) for d, (a, b) in enumerate(zip(ld, gd)) if a != b]

        def emit():
            for d, a, b in pairs:
                text = f"{op.attrs['op']}: labels do not match logits: dimension {d} is %lld in the labels and %lld in "
                lw.emit(Check(f"({a}) != ({b})", f"{text}the logits{where}", [str(a), str(b)]))
        code.append(emit)
    _code(lw, op, lambda: [fn() for fn in code])
    return [tuple(gd[:-1])]


def _while(lw, op):
    """A loop variable keeps the dims it enters the loop with, unless discovery found that dim varies
    (``assume.py``); ``control.emit_while`` proves the assumption by induction when it lowers the body."""
    varying = lw.assume.varying
    outs, assumed = [], set()
    for k, t in enumerate(op.outputs):
        if t.shape.rank is None:
            outs.append(None)
            continue
        entry = lw.dims.get(id(op.inputs[k]))
        dims = []
        for d, size in enumerate(t.shape.dims):
            if size is not None:
                dims.append(Poly.of(size))
            elif entry is not None and len(entry) == t.shape.rank and "*" not in varying \
                    and (id(op), k, d) not in varying:
                dims.append(entry[d])
                assumed.add((k, d))
            else:
                dims.append(lw.new_dim())
        outs.append(tuple(dims))
    lw.hypotheses[id(op)] = assumed
    return outs


def _shape(lw, op):
    return [(Poly.of(len(lw.dims[id(op.inputs[0])])),)] if id(op.inputs[0]) in lw.dims else _opaque(lw, op)


def _const(lw, op):
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
    "Eye": lambda lw, op: [(op.attrs["num_rows"], op.attrs["num_columns"])],
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
    "ShuffleIndices": lambda lw, op: [lw.dims.get(id(op.inputs[0])), ()],
    "Size": lambda lw, op: [()],
    "Rank": lambda lw, op: [()],
}
