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
from transpiler.lowering.ir import CExpr, Check, Declare, Index, Lit, Load, Poly, Store, product
from transpiler.lowering.kernels import PAD_MODES, elementwise, reduce, slice_index, versions, wrap_loops
from transpiler.lowering.values import Array, Scalar, contiguous_strides


def _target(lw, t) -> Array:
    """``t``'s storage as an Array (a one-element result is the C local's address)."""
    target = lw.storage(t)
    lw.values[id(t)] = target
    if isinstance(target, Scalar):
        return Array.dense(f"(&{target.expr.name})", t.dtype, lw.dims[id(t)], "local")
    return target


def _zeros(lw, target: Array) -> None:
    lw.emit(*elementwise(lw, [target], target.dims, lambda el, index: [Lit("0", target.ctype)]))


def _loops(lw, dims) -> tuple[list, tuple]:
    names = [lw.fresh("i") for _ in dims]
    return [(n, d, None) for n, d in zip(names, dims)], tuple(Poly.sym(n) for n in names)


def emit_strided_slice_grad(lw, op) -> bool:
    out, grad = op.outputs[0], op.inputs[1]
    if out.dtype.c_type is None or id(op) not in lw.slices or id(grad) not in lw.dims:
        return False
    target = _target(lw, out)
    _zeros(lw, target)
    gd = lw.dims[id(grad)]
    names = [lw.fresh("v") for _ in gd]
    offset = target.load(slice_index(lw.slices[id(op)], tuple(Poly.sym(n) for n in names))).index
    view = Array(target.ptr, out.dtype, gd, tuple(offset.coefficient(n) for n in names), offset.without(names),
                 target.storage)
    lw.emit(*elementwise(lw, [view], gd, lambda el, index: [el.of(grad, index)]))
    return True


def emit_segment_sum(lw, op) -> bool:
    data, ids = op.inputs[0], op.inputs[1]
    out = op.outputs[0]
    if out.dtype.c_type is None or any(id(t) not in lw.dims for t in (out, data, ids)):
        return False          # a rank only the run time tells: the numpy kernel
    target = _target(lw, out)
    _zeros(lw, target)
    dims = lw.dims[id(out)]
    segments, rest = dims[0], dims[1:]
    rows = lw.dims[id(ids)]
    row_size = product(rest)
    message = lw.message(op, "segment id %lld (at position %lld) is not in [0, %lld)")

    def build(el):
        row_loops, row_index = _loops(lw, rows)
        col_loops, col_index = _loops(lw, rest)
        seg = lw.fresh("seg")
        at = Poly.sym(seg) * row_size + target.load((0,) + col_index).index
        add = CExpr("({0} + {1})", (Load(target.ptr, at, out.dtype.c_type), el.of(data, row_index + col_index)),
                    out.dtype.c_type)
        position = Array.dense("?", ids.dtype, rows, "arena").load(row_index).index
        body = [Declare(seg, "int64_t", CExpr("((int64_t){0})", (el.of(ids, row_index),), "int64_t")),
                Check(f"{seg} < 0 || {seg} >= ({segments})", message, [seg, str(position), str(segments)])]
        body += wrap_loops(col_loops, [Store(target.ptr, at, add)])
        return wrap_loops(row_loops, body, simd=False)
    lw.emit(*versions(lw, build))
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
    target = _target(lw, out)
    _zeros(lw, target)
    flags = {d: lw.fresh("nb") for d in unknown}
    lw.emit(*[Declare(name, "int64_t", f"({full[d]}) != 1") for d, name in flags.items()])
    strides = (Poly.of(0),) * lead + contiguous_strides(dims)

    def build(el):
        loops, index = _loops(lw, gd)
        at = Poly.of(0)
        for d, (i, s) in enumerate(zip(index, strides)):
            if d in axes or full[d] == 1:
                continue
            at = at + i * s * (Poly.sym(flags[d]) if d in flags else 1)
        add = CExpr("({0} + {1})", (Load(target.ptr, at, out.dtype.c_type), el.of(grad, index)), out.dtype.c_type)
        return wrap_loops(loops, [Store(target.ptr, at, add)], simd=False)
    lw.emit(*versions(lw, build))
    return True


def emit_mirror_pad_grad(lw, op) -> bool:
    grad = op.inputs[0]
    out = op.outputs[0]
    if out.dtype.c_type is None or id(op) not in lw.pads:
        return False
    target = _target(lw, out)
    _zeros(lw, target)
    dims, gd = lw.dims[id(out)], lw.dims[id(grad)]
    mode = PAD_MODES[op.attrs["mode"]]

    def build(el):
        loops, index = _loops(lw, gd)
        direct = Poly.of(0)
        terms = []
        for i, n, s, (before, after) in zip(index, dims, target.strides, lw.pads[id(op)]):
            if before == 0 and after == 0:
                direct = direct + i * s
            else:
                terms.append(CExpr(f"rt_pad_source({{0}}, {n}, {mode}) * ({s})", (Index(i - before),), "int64_t"))
        off = lw.fresh("off")
        template = " + ".join("{" + str(k) + "}" for k in range(len(terms) + 1))
        at = Poly.sym(off)
        add = CExpr("({0} + {1})", (Load(target.ptr, at, out.dtype.c_type), el.of(grad, index)), out.dtype.c_type)
        body = [Declare(off, "int64_t", CExpr(template, (Index(direct), *terms), "int64_t")),
                Store(target.ptr, at, add)]
        return wrap_loops(loops, body, simd=False)
    lw.emit(*versions(lw, build))
    return True


def emit_pad_grad(lw, op) -> bool:
    return op.attrs["mode"] != "CONSTANT" and emit_mirror_pad_grad(lw, op)


EMITTERS = {
    "StridedSliceGrad": emit_strided_slice_grad,
    "UnsortedSegmentSum": emit_segment_sum,
    "SumToShape": emit_sum_to_shape,
    "PadGrad": emit_pad_grad,
}
