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
from transpiler.lowering.values import Array, Scalar, contiguous_strides


def _target(lw, t) -> tuple[Array, list]:
    """(``t``'s storage as an Array, statements to run after it is written): a one-element result is written
    into a one-element array, then kept in its C local."""
    target = lw.storage(t)
    lw.values[id(t)] = target
    if isinstance(target, Scalar):
        one = lw.local(t.dtype.c_type, "one", size=1)
        return Array.dense(one, t.dtype, lw.dims[id(t)], "stack"), [
            Assign(target.expr.name, Load(one, Poly.of(0), t.dtype.c_type))]
    return target, []


def _zeros(lw, target: Array) -> None:
    lw.emit(*elementwise(lw, [target], target.dims, lambda el, index: [Lit(0, target.ctype)]))


def _add(target: Array, at: Poly, value) -> Store:
    """``target[at] += value``."""
    return Store(target.ptr, at, Arith("+", Load(target.ptr, at, target.ctype), value, target.ctype))


def _loops(lw, dims) -> tuple[list, tuple]:
    names = [lw.fresh("i") for _ in dims]
    return [(n, d, None) for n, d in zip(names, dims)], tuple(Poly.sym(n) for n in names)


def emit_strided_slice_grad(lw, op) -> bool:
    out, grad = op.outputs[0], op.inputs[1]
    if out.dtype.c_type is None or id(op) not in lw.slices or id(grad) not in lw.dims:
        return False
    target, after = _target(lw, out)
    _zeros(lw, target)
    gd = lw.dims[id(grad)]
    names = [lw.fresh("v") for _ in gd]
    offset = target.load(slice_index(lw.slices[id(op)], tuple(Poly.sym(n) for n in names))).index
    view = Array(target.ptr, out.dtype, gd, tuple(offset.coefficient(n) for n in names), offset.without(names),
                 target.storage)
    lw.emit(*elementwise(lw, [view], gd, lambda el, index: [el.of(grad, index)]), *after)
    return True


def emit_segment_sum(lw, op) -> bool:
    data, ids = op.inputs[0], op.inputs[1]
    out = op.outputs[0]
    if out.dtype.c_type is None or any(id(t) not in lw.dims for t in (out, data, ids)):
        return False          # a rank only the run time tells: the numpy kernel
    target, after = _target(lw, out)
    _zeros(lw, target)
    dims = lw.dims[id(out)]
    segments, rest = dims[0], dims[1:]
    rows = lw.dims[id(ids)]
    row_size = product(rest)
    message = lw.message(op, "segment id %lld (at position %lld) is not in [0, %lld)")

    def build(el):
        row_loops, row_index = _loops(lw, rows)
        col_loops, col_index = _loops(lw, rest)
        seg = Poly.sym(lw.fresh("seg"))
        at = seg * row_size + target.load((0,) + col_index).index
        position = Array.dense("?", ids.dtype, rows, "arena").load(row_index).index
        body = [Declare(str(seg), "int64_t", Cast(el.of(ids, row_index), "int64_t")),
                Check(Or((Compare("<", seg, Poly.of(0)), Compare(">=", seg, segments))), message,
                      (seg, position, segments))]
        body += wrap_loops(col_loops, [_add(target, at, el.of(data, row_index + col_index))])
        return wrap_loops(row_loops, body, simd=False)
    lw.emit(*versions(lw, build), *after)
    return True


def emit_sum_to_shape(lw, op) -> bool:
    grad = op.inputs[0]
    out = op.outputs[0]
    if out.dtype.c_type is None or id(out) not in lw.dims or id(grad) not in lw.dims:
        return False          # a rank only the run time tells: the numpy kernel
    gd, dims = lw.dims[id(grad)], lw.dims[id(out)]
    lead = len(gd) - len(dims)
    if lead < 0:
        return True           # the shape code fails first
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
        target = lw.storage(out)
        lw.values[id(out)] = target
        if isinstance(target, Scalar):
            where = target.expr.name
        else:
            where = Array(target.ptr, out.dtype, full, (Poly.of(0),) * lead + contiguous_strides(dims), Poly.of(0),
                          target.storage)
        total = SimpleNamespace(type="Sum", inputs=[grad], outputs=[out], attrs={"axis": axes, "keepdims": True},
                                opdef=get_opdef("Sum"), name=op.name)
        lw.emit(*reduce(lw, total, where))
        return True
    target, after = _target(lw, out)
    _zeros(lw, target)
    flags = {d: lw.fresh("nb") for d in unknown}
    lw.emit(*[Declare(name, "int64_t", Compare("!=", full[d], Poly.of(1))) for d, name in flags.items()])
    strides = (Poly.of(0),) * lead + contiguous_strides(dims)

    def build(el):
        loops, index = _loops(lw, gd)
        at = Poly.of(0)
        for d, (i, s) in enumerate(zip(index, strides)):
            if d in axes or full[d] == 1:
                continue
            at = at + i * s * (Poly.sym(flags[d]) if d in flags else 1)
        return wrap_loops(loops, [_add(target, at, el.of(grad, index))], simd=False)
    lw.emit(*versions(lw, build), *after)
    return True


def emit_mirror_pad_grad(lw, op) -> bool:
    grad = op.inputs[0]
    out = op.outputs[0]
    if out.dtype.c_type is None or id(op) not in lw.pads:
        return False
    target, after = _target(lw, out)
    _zeros(lw, target)
    dims, gd = lw.dims[id(out)], lw.dims[id(grad)]
    mode = PAD_MODES[op.attrs["mode"]]

    def build(el):
        loops, index = _loops(lw, gd)
        offset = Index(Poly.of(0))
        for i, n, s, (before, end) in zip(index, dims, target.strides, lw.pads[id(op)]):
            if before == 0 and end == 0:
                offset = Index(offset.value + i * s)
        for i, n, s, (before, end) in zip(index, dims, target.strides, lw.pads[id(op)]):
            if before != 0 or end != 0:
                offset = Arith("+", offset, Arith("*", pad_source(Index(i - before), n, mode), s, "int64_t"), "int64_t")
        off = lw.fresh("off")
        at = Poly.sym(off)
        body = [Declare(off, "int64_t", offset), _add(target, at, el.of(grad, index))]
        return wrap_loops(loops, body, simd=False)
    lw.emit(*versions(lw, build), *after)
    return True


def emit_pad_grad(lw, op) -> bool:
    return op.attrs["mode"] != "CONSTANT" and emit_mirror_pad_grad(lw, op)


EMITTERS = {
    "StridedSliceGrad": emit_strided_slice_grad,
    "UnsortedSegmentSum": emit_segment_sum,
    "SumToShape": emit_sum_to_shape,
    "PadGrad": emit_pad_grad,
}
