"""Emitters of the opaque ops: what is not one element at a time.

``MatMul`` calls the kernel library's GEMM on its operands where they are (transposed views and
row-strided slices included); ``ConcatV2``/``Pack`` write each input into its
slice of the output (the inputs' producers fused into those copies); variables read and update the
storage that follows the function's inputs; ``If``/``While`` are in ``control``; every other op runs
its numpy kernel through a callback into Python, which takes the GIL (the build report lists them).
"""
from __future__ import annotations

from dataclasses import dataclass

from runtime import dtypes
from runtime.ops.registry import all_opdefs, get_opdef
from transpiler.lowering import control, dataset, library_calls, lists, nn, scatter, tiles
from transpiler.lowering.ir import (
    ALWAYS,
    CTX,
    Apply,
    Assign,
    Call,
    Callback,
    Cast,
    Check,
    Compare,
    Declare,
    Describe,
    DimsArray,
    Fail,
    Field,
    For,
    Gemm,
    If,
    Lit,
    Load,
    Named,
    Or,
    Poly,
    Ptr,
    SetTensor,
    Slot,
    Store,
    Var,
    product,
)
from transpiler.lowering.kernels import INDEXED, Elements, elementwise, loads
from transpiler.lowering.plan import QUERIES, unit_ops
from transpiler.lowering.storage import storage, temporary
from transpiler.lowering.values import Array, Obj, Scalar, contiguous_strides


def emit(cx, op) -> list:
    """The statements of an opaque op: its emitter's, or a callback into Python when it has none or declines."""
    emitter = EMITTERS.get(op.type)
    if emitter is None and cx.native_lists:
        emitter = lists.EMITTERS.get(op.type)
    stmts = emitter(cx, op) if emitter is not None else None
    return callback(cx, op) if stmts is None else stmts


# ---------------------------------------------------------------------------
# Matmul: the kernel library's GEMM reads each operand where it is, transposed or not, rows any distance
# apart (``rt_gemm_ld_S``); batches of dense matrices go to ``rt_gemm_batch_S`` (small products spread over
# threads). Only an operand whose elements are neither row- nor column-contiguous (a strided slice of the
# last dim, a one-element value) is copied first. A product of at most SMALL_MATMUL multiply-adds whose sizes
# and row strides are all known calls ``rt_matmul_small_S`` with them as literals instead: the C compiler
# specialises its loops to those sizes (no packing, no threads, nothing to fail).

# m * k * n at or below which a product of static sizes takes rt_matmul_small_S: measured on Zen 4 (AVX-512),
# it beats the GEMM 2-3x at 10^3 and 16^3, ties from 32^3 to 64^3 (float32) and stays one-threaded, while the
# GEMM splits products of RT_GEMM_PARALLEL_MIN (2^22) multiply-adds over threads.
SMALL_MATMUL = 1 << 16
PARALLEL_GEMM = 1 << 22      # RT_GEMM_PARALLEL_MIN of rt_kernels.h: products worth more than one thread


@dataclass
class _Operand:
    """A GEMM operand: ``ptr`` + batch offsets, stored transposed or not, rows ``ld`` elements apart."""
    ptr: Ptr
    transposed: bool
    ld: Poly
    batch_strides: tuple
    natural: bool            # dense matrices (ld is the row length): rt_gemm_batch can take them


def _layout(value: Array, rows: Poly, cols: Poly):
    """(stored transposed, ld) when the last two dims of ``value`` are row- or column-contiguous, else None."""
    sr, sc = value.strides[-2], value.strides[-1]
    if sc == 1 or cols == 1:
        return False, (sr if rows != 1 else cols)
    if sr == 1 or rows == 1:
        return True, (sc if cols != 1 else rows)
    return None


def _operand(cx, t, transpose: bool, batch: tuple, stmts: list) -> _Operand:
    """``t`` as a GEMM operand (op(t) = t, or its transpose when ``transpose``) of a product with ``batch``."""
    value = cx.values.get(id(t))
    dims = cx.dims[id(t)]
    layout = _layout(value, dims[-2], dims[-1]) if isinstance(value, Array) else None
    if layout is None:
        ptr, alloc = temporary(cx, t.dtype.c_type, product(dims))
        stmts += [alloc]
        value = Array.dense(ptr, t.dtype, dims, "arena")
        stmts += elementwise(cx, [value], dims, lambda el, index: [el.of(t, index)])
        layout = (False, dims[-1])
    stored_transposed, ld = layout
    own_batch = dims[:-2]
    pad = len(batch) - len(own_batch)
    batch_strides = [Poly.of(0)] * pad
    for d, b, s in zip(own_batch, batch[pad:], value.strides[:-2]):
        if d == b or d.const is not None:
            batch_strides.append(Poly.of(0) if d == 1 and b != 1 else s)
        else:      # broadcast when the run-time size is 1
            flag = cx.local("int64_t", "nb")
            stmts += [Assign(flag, Compare("!=", d, Poly.of(1)))]
            batch_strides.append(s * Poly.sym(flag))
    ptr = Ptr(value.ptr, value.offset)
    natural = ld == (dims[-2] if stored_transposed else dims[-1])
    return _Operand(ptr, transpose != stored_transposed, ld, tuple(batch_strides), natural)


def _dims_array(values) -> DimsArray:
    return DimsArray(tuple(values))


def emit_matmul(cx, op) -> list | None:
    stmts: list = []
    a, b = op.inputs
    out = op.outputs[0]
    if a.dtype.c_type is None or a.dtype is dtypes.float16 or id(out) not in cx.dims or a.shape.rank is None:
        return None
    dims = cx.dims[id(out)]
    m, n = dims[-2], dims[-1]
    ad = cx.dims[id(a)]
    k = ad[-2] if op.attrs.get("transpose_a") else ad[-1]
    batch = dims[:-2]
    left = _operand(cx, a, bool(op.attrs.get("transpose_a")), batch, stmts)
    right = _operand(cx, b, bool(op.attrs.get("transpose_b")), batch, stmts)
    target, allocs = storage(cx, out)
    stmts += allocs
    cx.values[id(out)] = target
    if isinstance(target, Scalar):       # a one-element product: into a one-element array, then the register
        c_ptr = cx.local(out.dtype.c_type, "mm", size=1)
    else:
        c_ptr = target.ptr
    suffix = a.dtype.name
    flags = [Lit(int(left.transposed), "int"), Lit(int(right.transposed), "int")]
    work = m * k * n
    if work.const is not None and work.const <= SMALL_MATMUL and left.ld.const is not None \
            and right.ld.const is not None:
        total = product(batch) * work        # a batch of many small products spreads over threads
        parallel = Compare(">=", total, Named("gemm_parallel_min")) if total.const is None else \
            (ALWAYS if total.const >= PARALLEL_GEMM else None)
        stmts += _each_matrix(cx, batch, dims, left, right, Ptr(c_ptr), lambda a_ptr, b_ptr, c_at: Call(
            f"rt_matmul_small_{suffix}", [a_ptr, left.ld, b_ptr, right.ld, c_at, n, m, k, n, *flags]),
            parallel=parallel)
    elif batch and left.natural and right.natural:
        stmts += [Call(f"rt_gemm_batch_{suffix}", [
            CTX, left.ptr, right.ptr, Ptr(c_ptr), Lit(len(batch), "int"), _dims_array(batch),
            _dims_array(left.batch_strides), _dims_array(right.batch_strides), m, k, n, *flags], checked=True)]
    else:
        gemm = None
        if not batch and a.dtype.is_floating and not isinstance(target, Scalar):
            gemm = Gemm(suffix, left.ptr, left.ld, right.ptr, right.ld, c_ptr, n, m, k, n, int(left.transposed),
                        int(right.transposed))
        stmts += _each_matrix(cx, batch, dims, left, right, Ptr(c_ptr), lambda a_ptr, b_ptr, c_at: Call(
            f"rt_gemm_ld_{suffix}", [CTX, a_ptr, left.ld, b_ptr, right.ld, c_at, n, m, k, n, *flags], checked=True,
            gemm=gemm))
    if isinstance(target, Scalar):
        stmts += [Assign(target.expr.name, Load(c_ptr, Poly.of(0), out.dtype.c_type))]
    return stmts


def _each_matrix(cx, batch: tuple, dims: tuple, left: _Operand, right: _Operand, c_ptr: Ptr, call,
                 parallel=None) -> list:
    """``call(a, b, c)`` on the pointers to each matrix of the product: loops over ``batch`` when there is one
    (the outermost ``parallel`` as ``For`` has it)."""
    if not batch:
        return [call(left.ptr, right.ptr, c_ptr)]
    index = [cx.fresh("b") for _ in batch]
    a_off = sum((Poly.sym(i) * s for i, s in zip(index, left.batch_strides)), Poly.of(0))
    b_off = sum((Poly.sym(i) * s for i, s in zip(index, right.batch_strides)), Poly.of(0))
    c_off = sum((Poly.sym(i) * s for i, s in zip(index, contiguous_strides(dims)[:-2])), Poly.of(0))
    body = [call(_at(left.ptr, a_off), _at(right.ptr, b_off), _at(c_ptr, c_off))]
    for i, extent in reversed(list(zip(index, batch))):
        body = [For(i, Poly.of(0), extent, body)]
    body[0].parallel = parallel
    return body


def _at(ptr: Ptr, offset: Poly) -> Ptr:
    return Ptr(ptr.name, ptr.offset + offset, ptr.cast)


# ---------------------------------------------------------------------------
# Concatenation.


def emit_concat(cx, op) -> list | None:
    stmts: list = []
    out = op.outputs[0]
    if id(out) not in cx.dims:
        return None
    dims = cx.dims[id(out)]
    axis = op.attrs["axis"] % len(dims)
    target, allocs = storage(cx, out)
    stmts += allocs
    cx.values[id(out)] = target
    if isinstance(target, Scalar):
        x = op.inputs[0]
        value = cx.values.get(id(x))
        stmts += [Assign(target.expr.name, value.expr if isinstance(value, Scalar) else
                       value.load((0,) * len(cx.dims[id(x)])))]
        return stmts
    strides = contiguous_strides(dims)
    offset = Poly.of(0)
    for x in op.inputs:
        xd = cx.dims[id(x)]
        if op.type == "Pack":
            part_dims = tuple(xd[:axis]) + (Poly.of(1),) + tuple(xd[axis:])
            size = Poly.of(1)
        else:
            part_dims = tuple(xd)
            size = xd[axis]
        view = Array(target.ptr, out.dtype, part_dims, strides, offset, target.storage)

        def make(el, index, x=x):
            if op.type == "Pack":
                index = index[:axis] + index[axis + 1:]
            return [el.of(x, index)]
        stmts += elementwise(cx, [view], part_dims, make)
        offset = offset + size * strides[axis]
    return stmts


# ---------------------------------------------------------------------------
# Variables: their storage follows the function's inputs (in[num_inputs + k]).


def _variable(cx, op, tensor):
    """(``rt_tensor`` of the variable, its storage: one Array per variable, so that reads and writes name the
    same pointer); ``tensor`` gets the storage's dims."""
    handle = op.attrs["variable"]
    k = _var_index(cx, handle)
    name = Slot("in", len(cx.graph.inputs) + k)
    value = cx.variables.storage.get(id(handle))
    if value is None or isinstance(value, Obj):
        value = cx.variables.storage[id(handle)] = cx.input_value(tensor, name)
    elif id(tensor) not in cx.dims or tuple(cx.dims[id(tensor)]) != tuple(value.dims):
        cx.dims[id(tensor)] = value.dims
    return name, value


def _var_index(cx, handle) -> int:
    handles = cx.variables.handles
    for i, h in enumerate(handles):
        if h is handle:
            return i
    handles.append(handle)
    return len(handles) - 1


def _written_while_read(cx, handle, t) -> bool:
    """Whether the variable of ``handle`` may be written between now and the last read of ``t`` (a value read
    from it, or assigned to it): ``t`` then needs a copy of its own. A graph output is read after the call."""
    scope = cx.scope
    if id(t) in cx.storage.escaping or scope.plan is None:
        return True
    start = scope.unit_index
    last = scope.last_use.get(id(t), start)
    for position, unit in enumerate(scope.plan.units[start + 1:last + 1], start + 1):
        for op in unit_ops(unit):
            if op.type in _ASSIGN and op.attrs["variable"] is handle:
                if position == last:
                    continue        # it reads t in its own loop, at the element it writes (or copies first)
                return True
            if op.subgraphs() or (op.opdef.stateful and op.type not in _ASSIGN and op.type != "ReadVariableOp"):
                return True         # a loop, a branch or a Python function may assign any variable
    return False


def emit_read_variable(cx, op) -> list | None:
    """A read is the variable's storage itself while nothing writes the variable before the value's last use;
    otherwise a copy."""
    stmts: list = []
    out = op.outputs[0]
    if out.dtype.c_type is None or out.shape.rank is None:
        return None
    _, held = _variable(cx, op, out)
    dims = cx.dims[id(out)]
    if product(dims).const != 1 and not _written_while_read(cx, op.attrs["variable"], out):
        cx.values[id(out)] = held
        return stmts
    target, allocs = storage(cx, out)
    stmts += allocs
    cx.values[id(out)] = target
    if isinstance(target, Scalar):
        stmts += [Assign(target.expr.name, held.load((0,) * len(dims)))]
    else:
        stmts += elementwise(cx, [target], dims, lambda el, index: [held.load(index)])
    return stmts


_ASSIGN = {"AssignVariableOp": None, "AssignAddVariableOp": "AddV2", "AssignSubVariableOp": "Sub"}


def emit_assign(cx, op) -> list | None:
    stmts: list = []
    value, out = op.inputs[0], op.outputs[0]
    if out.dtype.c_type is None or out.shape.rank is None or value.shape.rank is None:
        return None
    _, held = _variable(cx, op, out)
    dims = cx.dims[id(out)]
    vd = cx.dims[id(value)]
    scalar = product(vd).const == 1
    if not scalar:
        if len(vd) != len(dims):
            stmts += [Fail(cx.message(op, "the value's shape does not match the variable's"))]
        else:
            bad = [Compare("!=", a, b) for a, b in zip(vd, dims) if a != b]
            if bad:
                stmts += [Check(Or(tuple(bad)), cx.message(op, "the value's shape does not match the variable's"))]
    if _reads_elsewhere(cx, value, held, len(vd), scalar):
        stmts += cx.store_tensor(value)       # v.assign(transpose(v)): computed in full before v changes
    combine = _ASSIGN[op.type]

    def make(el, index):
        v = el.of(value, (0,) * len(vd) if scalar else index)
        if combine is None:
            return [v]
        return [Apply(get_opdef(combine), (held.load(index), v), (out.dtype, out.dtype), out.dtype)]
    stmts += elementwise(cx, [held], dims, make)
    cx.values[id(out)] = held
    if (cx.scope.plan.readers.get(id(out)) or id(out) in cx.storage.escaping) and (
            product(dims).const == 1 or _written_while_read(cx, op.attrs["variable"], out)):
        stmts += cx.copy_into_storage(out)      # a snapshot: later assignments change the storage
    return stmts


def _reads_elsewhere(cx, value, held: Array, rank: int, scalar: bool) -> bool:
    """Whether computing element i of ``value`` reads the variable's storage ``held`` at another element (the
    assignment would see its own writes)."""
    if isinstance(cx.values.get(id(value)), (Array, Scalar)) and cx.values[id(value)] is not held:
        return False
    index = tuple(Poly.sym(cx.fresh("q")) for _ in range(rank))
    probe = Elements(cx).of(value, (0,) * rank if scalar else index)
    at = held.load(index).index if not scalar else None
    return any(ld.ptr == held.ptr and (ld.indirect or at is None or ld.index != at) for ld in loads([probe]))


# ---------------------------------------------------------------------------
# Python callbacks.


def emit_assert(cx, op) -> list | None:
    """``Assert`` of a one-element condition (``rt.debugging.Assert``, ``rt.split``'s check of a run-time size):
    the condition tested natively, and only when it is false the kernel called through Python to format the
    message and raise. Through Python on every call, a check inside an LSTM's time loop took the GIL every step."""
    cond = op.inputs[0]
    if cond.shape.rank is None or product(cx.dims[id(cond)]).const != 1:
        return None
    ok = Elements(cx).of(cond, (Poly.of(0),) * len(cx.dims[id(cond)]))
    return [If(Compare("==", ok, Lit(0, "int")), callback(cx, op, per_call=False))]


def callback(cx, op, per_call: bool = True) -> list:
    """Run the op's numpy kernel through Python (the GIL is taken only here); ``per_call``: on every call (the
    build report lists it), not only when a native test failed."""
    stmts: list = []
    if per_call:
        cx.report.callbacks[op.type] = cx.report.callbacks.get(op.type, 0) + 1
        cx.report.callback_ops.append(op)
    else:
        cx.report.failure_callbacks += 1
    n_in, n_out = len(op.inputs), len(op.outputs)
    ins, outs = cx.fresh("cb_in"), cx.fresh("cb_out")
    stmts += [Declare(ins, "rt_tensor", size=max(n_in, 1)), Declare(outs, "rt_tensor", size=max(n_out, 1))]
    for i, t in enumerate(op.inputs):
        describe(cx, t, Slot(ins, i), stmts)
    stmts += [Callback(cx.op_index[id(op)], ins, n_in, outs, n_out)]
    for i, t in enumerate(op.outputs):
        result = Slot(outs, i)
        if t.dtype.c_type is None or t.shape.rank is None:
            name = cx.local("rt_tensor", "obj")
            stmts += [Assign(name, result)]
            cx.values[id(t)] = Obj(Var(name, "rt_tensor"), t.dtype)
            continue
        dims = cx.dims.get(id(t))
        rank = len(dims)
        bad = [Compare("!=", Field(result, "ndim", "int"), Lit(rank, "int"))]
        for d, n in enumerate(dims):
            if n.const is not None:
                bad.append(Compare("!=", Field(result, "shape", "int64_t", d), n))
        stmts += [Check(Or(tuple(bad)), cx.message(op, "the Python kernel returned a tensor of another shape"))]
        for d, n in enumerate(dims):
            if n.const is None:
                stmts += [Assign(str(n), Field(result, "shape", "int64_t", d))]
        ptr = cx.pointer(t.dtype.c_type, "p")
        stmts += [Assign(ptr, Cast(Field(result, "data", "void *"), f"{t.dtype.c_type} *"))]
        if cx.scope.drops is not None:
            cx.scope.drops.append(ptr)
        array = Array.dense(ptr, t.dtype, dims, "callback")
        cx.values[id(t)] = array
        if product(dims).const == 1:
            cx.values[id(t)] = array
            stmts += cx.copy_into_storage(t)
    return stmts


def describe(cx, t, target: Slot, stmts: list) -> None:
    """Fill the ``rt_tensor`` ``target`` with tensor ``t`` (stored contiguously first if needed; a one-element
    value in a one-element array: no local's address is taken)."""
    value = cx.values.get(id(t))
    if isinstance(value, Obj):
        stmts += [SetTensor(target, value.ref)]
        return
    dims = cx.dims[id(t)]
    if isinstance(value, Scalar):
        spill = cx.local(t.dtype.c_type, "spill", size=1)
        stmts += [Store(spill, Poly.of(0), value.expr)]
        stmts += [Describe(target, spill, list(dims), t.dtype.code)]
        return
    if value is None or not value.contiguous:
        ptr, alloc = temporary(cx, t.dtype.c_type, product(dims))
        stmts += [alloc]
        array = Array.dense(ptr, t.dtype, dims, "arena")
        stmts += elementwise(cx, [array], dims, lambda el, index: [el.of(t, index)])
        value = array
    stmts += [Describe(target, value.ptr, list(dims), t.dtype.code)]


def emit_identity(cx, op) -> list | None:
    """A value native code only passes along (a string, a TensorArray list) stays the same value."""
    stmts: list = []
    value = cx.values.get(id(op.inputs[0]))
    if not isinstance(value, Obj):
        return None
    cx.values[id(op.outputs[0])] = value
    return stmts


EMITTERS = {
    "Identity": emit_identity,
    "MatMul": emit_matmul,
    "ConcatV2": emit_concat,
    "Pack": emit_concat,
    "ReadVariableOp": emit_read_variable,
    "AssignVariableOp": emit_assign,
    "AssignAddVariableOp": emit_assign,
    "AssignSubVariableOp": emit_assign,
    "If": control.emit_if,
    "While": tiles.emit_while,
    "Assert": emit_assert,
    **nn.EMITTERS,
    **scatter.EMITTERS,
    **library_calls.EMITTERS,
    **dataset.EMITTERS,
}


def native_op_types() -> set[str]:
    """The op types native code computes without Python (when their dtypes and ranks are native)."""
    found = {"Const", *QUERIES, *EMITTERS, *lists.EMITTERS}
    for op_type, opdef in all_opdefs().items():
        if opdef.elementwise or opdef.generator or opdef.reduction is not None or opdef.view is not None:
            found.add(op_type)
    found |= set(INDEXED)
    return found
