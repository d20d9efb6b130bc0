"""The dataset ops native code runs itself: ``ShuffleIndices`` (``shuffle`` over a pass of known length) calls
``rt_shuffle_indices`` of the kernel library on its indices, contiguous. ``from_generator`` sources and
iterator arguments call back into Python (``ops.callback``).
"""
from __future__ import annotations

from transpiler.lowering.ir import Call, Cast, Poly, Ptr, Store, Var
from transpiler.lowering.kernels import Elements
from transpiler.lowering.nn import dense_ptr, output_ptr
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Scalar


def emit_shuffle_indices(cx, op) -> list | None:
    indices, window, rng = op.inputs
    perm, state = op.outputs
    if any(id(t) not in cx.dims for t in (indices, window, rng, perm)):
        return None                 # a rank only the run time tells: the numpy kernel
    stmts: list = []
    elements = Elements(cx)
    scalars = [Cast(elements.of(t, (0,) * len(cx.dims[id(t)])), "int64_t") for t in (window, rng)]
    src = dense_ptr(cx, indices, stmts)
    ptr, after = output_ptr(cx, perm, stmts)
    target, allocs = storage(cx, state)
    stmts += allocs
    cx.values[id(state)] = target
    result = target.expr.name if isinstance(target, Scalar) else cx.local("int64_t", "rng_state")
    stmts += [Call("rt_shuffle_indices", [Ptr(src), Ptr(ptr), cx.dims[id(perm)][0], *scalars], result=result)]
    if not isinstance(target, Scalar):
        stmts += [Store(target.ptr, Poly.of(0), Var(result, "int64_t"))]
    return stmts + after


EMITTERS = {
    "ShuffleIndices": emit_shuffle_indices,
}
