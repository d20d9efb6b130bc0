"""The dataset ops native code runs itself: ``ShuffleIndices`` (``shuffle`` over a pass of known length) calls
``rt_shuffle_indices`` of the kernel library on its indices, contiguous. ``from_generator`` sources and
iterator arguments call back into Python (``ops.callback``).
"""
from __future__ import annotations

from transpiler.lowering.ir import Call, render_expr
from transpiler.lowering.kernels import Elements
from transpiler.lowering.nn import dense_ptr, output_ptr
from transpiler.lowering.values import Scalar


def _scalar(lw, t) -> str:
    return f"((int64_t){render_expr(Elements(lw).of(t, (0,) * len(lw.dims[id(t)])))})"


def emit_shuffle_indices(lw, op) -> bool:
    indices, window, rng = op.inputs
    perm, state = op.outputs
    if any(id(t) not in lw.dims for t in (indices, window, rng, perm)):
        return False                # a rank only the run time tells: the numpy kernel
    n = lw.dims[id(perm)][0]
    src = dense_ptr(lw, indices)
    ptr, after = output_ptr(lw, perm)
    target = lw.storage(state)
    lw.values[id(state)] = target
    args = [src, ptr, str(n), _scalar(lw, window), _scalar(lw, rng)]
    if isinstance(target, Scalar):
        lw.emit(Call("rt_shuffle_indices", args, result=target.expr.name))
    else:
        lw.emit(Call("rt_shuffle_indices", args, result=f"{target.ptr}[0]"))
    lw.emit(*after)
    return True


EMITTERS = {
    "ShuffleIndices": emit_shuffle_indices,
}
