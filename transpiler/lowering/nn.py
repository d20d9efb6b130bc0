"""Convolutions and max pooling: opaque ops that call the kernel library's NHWC kernels (``rt_nn.h``).

The geometry (output size, padding) is an ``rt_window`` that the op's shape code fills and checks
(``shapes._window``); the kernels take their threads from the call's context and, for convolutions, an
im2col panel from its arena. Inputs are passed as contiguous buffers (a strided view is copied first).
"""
from __future__ import annotations

from transpiler.lowering.ir import (
    CTX,
    NUM_THREADS,
    Assign,
    Call,
    Cast,
    Check,
    Compare,
    Lit,
    Load,
    Or,
    Poly,
    Ptr,
    Store,
    product,
)
from transpiler.lowering.kernels import Elements, elementwise, wrap_loops
from transpiler.lowering.storage import storage, temporary
from transpiler.lowering.values import Array, Scalar

NATIVE_DTYPES = ("float32", "float64")
_CONV_KIND = {"Conv2D": 0, "Conv2DBackpropInput": 1, "Conv2DBackpropFilter": 2}


def dense_ptr(cx, t, stmts: list) -> str:
    """A buffer holding ``t``'s elements, contiguous and row-major (copied into a scratch buffer when they are not;
    a one-element value into a one-element array: no local's address is taken); what computes it is appended to
    ``stmts``."""
    value = cx.values.get(id(t))
    if isinstance(value, Array) and value.contiguous:
        return value.ptr
    if isinstance(value, Scalar):
        spill = cx.local(t.dtype.c_type, "spill", size=1)
        stmts += [Store(spill, Poly.of(0), value.expr)]
        return spill
    dims = cx.dims[id(t)]
    ptr, alloc = temporary(cx, t.dtype.c_type, product(dims))
    stmts += [alloc]
    copy = Array.dense(ptr, t.dtype, dims, "arena")
    stmts += elementwise(cx, [copy], dims, lambda el, index: [el.of(t, index)])
    return ptr


def output_ptr(cx, t, stmts: list) -> tuple[str, list]:
    """(buffer a kernel writes ``t`` to, statements to run after it): ``t``'s storage (its allocation appended to
    ``stmts``), or a one-element array for a one-element result (kept in a register afterwards)."""
    target, allocs = storage(cx, t)
    stmts += allocs
    cx.values[id(t)] = target
    if isinstance(target, Scalar):
        one = cx.local(t.dtype.c_type, "one", size=1)
        return one, [Assign(target.expr.name, Load(one, Poly.of(0), t.dtype.c_type))]
    return target.ptr, []


def emit_conv(cx, op) -> list | None:
    stmts: list = []
    out = op.outputs[0]
    if out.dtype.name not in NATIVE_DTYPES or id(op) not in cx.shapes.windows or id(out) not in cx.dims:
        return None
    if op.type == "Conv2D":
        a, b = op.inputs
    elif op.type == "Conv2DBackpropInput":
        _, a, b = op.inputs
    else:
        a, _, b = op.inputs
    a_ptr, b_ptr = dense_ptr(cx, a, stmts), dense_ptr(cx, b, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call(f"rt_conv2d_run_{out.dtype.name}", [CTX, Lit(_CONV_KIND[op.type], "int"), Ptr(a_ptr), Ptr(b_ptr),
                                                      Ptr(ptr), Ptr(cx.shapes.windows[id(op)])], checked=True)]
    stmts += after
    return stmts


def emit_pool(cx, op) -> list | None:
    stmts: list = []
    out = op.outputs[0]
    if out.dtype.name not in NATIVE_DTYPES or id(op) not in cx.shapes.windows or id(out) not in cx.dims:
        return None
    if any(t.dtype is not out.dtype for t in op.inputs):
        return None
    names = {"MaxPool": "rt_max_pool", "MaxPoolGrad": "rt_max_pool_grad", "MaxPoolGradGrad": "rt_max_pool_grad_grad",
             "AvgPool": "rt_avg_pool", "AvgPoolGrad": "rt_avg_pool_grad"}
    ins = [Ptr(dense_ptr(cx, t, stmts)) for t in op.inputs]
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call(f"{names[op.type]}_{out.dtype.name}", ins + [Ptr(ptr), Ptr(cx.shapes.windows[id(op)]), NUM_THREADS])]
    stmts += after
    return stmts


def emit_check_labels(cx, op) -> list | None:
    """Labels checked against the logits (each in ``[0, classes)``; the shapes by the shape code) with the error
    of the op they feed (``attrs["op"]``), then passed on."""
    stmts: list = []
    labels, logits = op.inputs
    out = op.outputs[0]
    if id(out) not in cx.dims or labels.dtype.c_type is None:
        return None
    dims = cx.dims[id(labels)]
    names = [cx.fresh("k") for _ in dims]
    index = tuple(Poly.sym(n) for n in names)
    n = cx.dims[id(logits)][-1]
    value = Cast(Elements(cx).of(labels, index), "int64_t")
    text = "received a label value of %lld which is outside the valid range of [0, %lld)"
    message = f"{op.attrs['op']}: {text}\n  [[{op.where().replace('%', '%%')}]]"
    body = [Check(Or((Compare("<", value, Lit(0, "int")), Compare(">=", value, n))), message, (value, n))]
    stmts += wrap_loops([(k, d, None) for k, d in zip(names, dims)], body, simd=False)
    cx.values[id(out)] = cx.values[id(labels)]
    stmts += cx.copy_into_storage(out)
    return stmts


EMITTERS = {
    "CheckLabels": emit_check_labels,
    "Conv2D": emit_conv,
    "Conv2DBackpropInput": emit_conv,
    "Conv2DBackpropFilter": emit_conv,
    "MaxPool": emit_pool,
    "MaxPoolGrad": emit_pool,
    "MaxPoolGradGrad": emit_pool,
    "AvgPool": emit_pool,
    "AvgPoolGrad": emit_pool,
}

