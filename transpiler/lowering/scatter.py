"""Opaque ops that write parts of their output: the gradients of slicing, gathering, broadcasting and padding.

- ``StridedSliceGrad``: zeros, then the gradient stored through the slice's index map (a strided view of
  the output), its producers fused into that loop;
- ``UnsortedSegmentSum``: zeros, then each row of the data added to the row its segment id names (ids
  checked as eager checks them), in order, as ``numpy.add.at`` adds;
- ``SumToShape``: a reduction over the axes that were broadcast (``kernels.reduce``, the same kernels as
  ``Sum``) when the dims tell them; when only the run-time sizes tell (a run-time dim that may be 1), each
  element is added where a 0/1 stride sends it;
- ``PadGrad`` of a mirrored pad: zeros, then each element of the padded gradient added to the input
  position it copied (``rt_pad_source``).
"""
from __future__ import annotations

from types import SimpleNamespace

from runtime.ops.registry import get_opdef
from transpiler.lowering.ir import (
    Arith,
    Assign,
    Cast,
    Check,
    Compare,
    Declare,
    Index,
    Lit,
    Load,
    Or,
    Poly,
    Store,
    product,
)
from transpiler.lowering.kernels import PAD_MODES, elementwise, pad_source, reduce, slice_index, versions, wrap_loops
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Array, Scalar, contiguous_strides


def _target(cx, t, stmts: list) -> tuple[Array, list]:
    """(``t``'s storage as an Array, statements to run after it is written): a one-element result is written
    into a one-element array, then kept in its C local."""
    target, allocs = storage(cx, t)
    stmts += allocs
    cx.values[id(t)] = target
    if isinstance(target, Scalar):
        one = cx.local(t.dtype.c_type, "one", size=1)
        return Array.dense(one, t.dtype, cx.dims[id(t)], "stack"), [
            Assign(target.expr.name, Load(one, Poly.of(0), t.dtype.c_type))]
    return target, []


def _zeros(cx, target: Array, stmts: list) -> None:
    stmts += elementwise(cx, [target], target.dims, lambda el, index: [Lit(0, target.ctype)])


def _add(target: Array, at: Poly, value) -> Store:
    """``target[at] += value``."""
    return Store(target.ptr, at, Arith("+", Load(target.ptr, at, target.ctype), value, target.ctype))


def _loops(cx, dims) -> tuple[list, tuple]:
    names = [cx.fresh("i") for _ in dims]
    return [(n, d, None) for n, d in zip(names, dims)], tuple(Poly.sym(n) for n in names)


def emit_strided_slice_grad(cx, op) -> list | None:
    stmts: list = []
    out, grad = op.outputs[0], op.inputs[1]
    if out.dtype.c_type is None or id(op) not in cx.shapes.slices or id(grad) not in cx.dims:
        return None
    target, after = _target(cx, out, stmts)
    _zeros(cx, target, stmts)
    gd = cx.dims[id(grad)]
    names = [cx.fresh("v") for _ in gd]
    offset = target.load(slice_index(cx.shapes.slices[id(op)], tuple(Poly.sym(n) for n in names))).index
    view = Array(target.ptr, out.dtype, gd, tuple(offset.coefficient(n) for n in names), offset.without(names),
                 target.storage)
    stmts += [*elementwise(cx, [view], gd, lambda el, index: [el.of(grad, index)]), *after]
    return stmts


def emit_segment_sum(cx, op) -> list | None:
    stmts: list = []
    data, ids = op.inputs[0], op.inputs[1]
    out = op.outputs[0]
    if out.dtype.c_type is None or any(id(t) not in cx.dims for t in (out, data, ids)):
        return None          # a rank only the run time tells: the numpy kernel
    target, after = _target(cx, out, stmts)
    _zeros(cx, target, stmts)
    dims = cx.dims[id(out)]
    segments, rest = dims[0], dims[1:]
    rows = cx.dims[id(ids)]
    row_size = product(rest)
    message = cx.message(op, "segment id %lld (at position %lld) is not in [0, %lld)")

    def build(el):
        row_loops, row_index = _loops(cx, rows)
        col_loops, col_index = _loops(cx, rest)
        seg = Poly.sym(cx.fresh("seg"))
        at = seg * row_size + target.load((0,) + col_index).index
        position = Array.dense("q", ids.dtype, rows, "arena").load(row_index).index
        body = [Declare(str(seg), "int64_t", Cast(el.of(ids, row_index), "int64_t")),
                Check(Or((Compare("<", seg, Poly.of(0)), Compare(">=", seg, segments))), message,
                      (seg, position, segments))]
        body += wrap_loops(col_loops, [_add(target, at, el.of(data, row_index + col_index))])
        return wrap_loops(row_loops, body, simd=False)
    stmts += [*versions(cx, build), *after]
    return stmts


def emit_sum_to_shape(cx, op) -> list | None:
    stmts: list = []
    grad = op.inputs[0]
    out = op.outputs[0]
    if out.dtype.c_type is None or id(out) not in cx.dims or id(grad) not in cx.dims:
        return None          # a rank only the run time tells: the numpy kernel
    gd, dims = cx.dims[id(grad)], cx.dims[id(out)]
    lead = len(gd) - len(dims)
    if lead < 0:
        return stmts           # the shape code fails first
    axes, unknown = list(range(lead)), []
    for d, (t, g) in enumerate(zip(dims, gd[lead:])):
        if t == g:
            continue
        if t == 1:
            axes.append(lead + d)
        elif t.const is None:
            unknown.append(lead + d)          # 1 or g: only the run-time sizes tell
    full = tuple([Poly.of(1)] * lead) + tuple(dims)
    if not unknown:
        target, allocs = storage(cx, out)
        stmts += allocs
        cx.values[id(out)] = target
        if isinstance(target, Scalar):
            where = target.expr.name
        else:
            where = Array(target.ptr, out.dtype, full, (Poly.of(0),) * lead + contiguous_strides(dims), Poly.of(0),
                          target.storage)
        total = SimpleNamespace(type="Sum", inputs=[grad], outputs=[out], attrs={"axis": axes, "keepdims": True},
                                opdef=get_opdef("Sum"), name=op.name)
        stmts += reduce(cx, total, where)
        return stmts
    target, after = _target(cx, out, stmts)
    _zeros(cx, target, stmts)
    flags = {d: cx.fresh("nb") for d in unknown}
    stmts += [Declare(name, "int64_t", Compare("!=", full[d], Poly.of(1))) for d, name in flags.items()]
    strides = (Poly.of(0),) * lead + contiguous_strides(dims)

    def build(el):
        loops, index = _loops(cx, gd)
        at = Poly.of(0)
        for d, (i, s) in enumerate(zip(index, strides)):
            if d in axes or full[d] == 1:
                continue
            at = at + i * s * (Poly.sym(flags[d]) if d in flags else 1)
        return wrap_loops(loops, [_add(target, at, el.of(grad, index))], simd=False)
    stmts += [*versions(cx, build), *after]
    return stmts


def emit_mirror_pad_grad(cx, op) -> list | None:
    stmts: list = []
    grad = op.inputs[0]
    out = op.outputs[0]
    if out.dtype.c_type is None or id(op) not in cx.shapes.pads:
        return None
    target, after = _target(cx, out, stmts)
    _zeros(cx, target, stmts)
    dims, gd = cx.dims[id(out)], cx.dims[id(grad)]
    mode = PAD_MODES[op.attrs["mode"]]

    def build(el):
        loops, index = _loops(cx, gd)
        offset = Index(Poly.of(0))
        for i, n, s, (before, end) in zip(index, dims, target.strides, cx.shapes.pads[id(op)]):
            if before == 0 and end == 0:
                offset = Index(offset.value + i * s)
        for i, n, s, (before, end) in zip(index, dims, target.strides, cx.shapes.pads[id(op)]):
            if before != 0 or end != 0:
                offset = Arith("+", offset, Arith("*", pad_source(Index(i - before), n, mode), s, "int64_t"), "int64_t")
        off = cx.fresh("off")
        at = Poly.sym(off)
        body = [Declare(off, "int64_t", offset), _add(target, at, el.of(grad, index))]
        return wrap_loops(loops, body, simd=False)
    stmts += [*versions(cx, build), *after]
    return stmts


def emit_pad_grad(cx, op) -> list | None:
    return emit_mirror_pad_grad(cx, op) if op.attrs["mode"] != "CONSTANT" else None


EMITTERS = {
    "StridedSliceGrad": emit_strided_slice_grad,
    "UnsortedSegmentSum": emit_segment_sum,
    "SumToShape": emit_sum_to_shape,
    "PadGrad": emit_pad_grad,
}
