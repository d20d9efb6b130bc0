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
from transpiler.lowering.ir import Apply, Assign, Call, Check, Describe, For, Gemm, Poly, Raw, Var, product
from transpiler.lowering.kernels import INDEXED, Elements, elementwise, loads
from transpiler.lowering.plan import QUERIES, unit_ops
from transpiler.lowering.values import Array, Obj, Scalar, contiguous_strides


def emit(lw, op) -> None:
    emitter = EMITTERS.get(op.type)
    if emitter is None and lw.native_lists:
        emitter = lists.EMITTERS.get(op.type)
    if emitter is None or not emitter(lw, op):
        callback(lw, op)


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
    ptr: str
    transposed: bool
    ld: Poly
    batch_strides: tuple
    natural: bool            # dense matrices (ld is the row length): rt_gemm_batch can take them
    memory: str              # the buffer it reads


def _layout(value: Array, rows: Poly, cols: Poly):
    """(stored transposed, ld) when the last two dims of ``value`` are row- or column-contiguous, else None."""
    sr, sc = value.strides[-2], value.strides[-1]
    if sc == 1 or cols == 1:
        return False, (sr if rows != 1 else cols)
    if sr == 1 or rows == 1:
        return True, (sc if cols != 1 else rows)
    return None


def _operand(lw, t, transpose: bool, batch: tuple) -> _Operand:
    """``t`` as a GEMM operand (op(t) = t, or its transpose when ``transpose``) of a product with ``batch``."""
    value = lw.values.get(id(t))
    dims = lw.dims[id(t)]
    layout = _layout(value, dims[-2], dims[-1]) if isinstance(value, Array) else None
    if layout is None:
        ptr, alloc = lw.temporary(t.dtype.c_type, product(dims))
        lw.emit(alloc)
        value = Array.dense(ptr, t.dtype, dims, "arena")
        lw.emit(*elementwise(lw, [value], dims, lambda el, index: [el.of(t, index)]))
        layout = (False, dims[-1])
    stored_transposed, ld = layout
    own_batch = dims[:-2]
    pad = len(batch) - len(own_batch)
    batch_strides = [Poly.of(0)] * pad
    for d, b, s in zip(own_batch, batch[pad:], value.strides[:-2]):
        if d == b or d.const is not None:
            batch_strides.append(Poly.of(0) if d == 1 and b != 1 else s)
        else:      # broadcast when the run-time size is 1
            flag = lw.local("int64_t", "nb")
            lw.emit(Assign(flag, f"({d}) != 1"))
            batch_strides.append(s * Poly.sym(flag))
    ptr = value.ptr if value.offset == 0 else f"({value.ptr} + ({value.offset}))"
    natural = ld == (dims[-2] if stored_transposed else dims[-1])
    return _Operand(ptr, transpose != stored_transposed, ld, tuple(batch_strides), natural, value.ptr)


def _dims_array(values) -> str:
    return "(const int64_t[]){" + ", ".join(str(v) for v in values) + "}"


def emit_matmul(lw, op) -> bool:
    a, b = op.inputs
    out = op.outputs[0]
    if a.dtype.c_type is None or a.dtype is dtypes.float16 or id(out) not in lw.dims or a.shape.rank is None:
        return False
    dims = lw.dims[id(out)]
    m, n = dims[-2], dims[-1]
    ad = lw.dims[id(a)]
    k = ad[-2] if op.attrs.get("transpose_a") else ad[-1]
    batch = dims[:-2]
    left = _operand(lw, a, bool(op.attrs.get("transpose_a")), batch)
    right = _operand(lw, b, bool(op.attrs.get("transpose_b")), batch)
    target = lw.storage(out)
    lw.values[id(out)] = target
    if isinstance(target, Scalar):
        c = lw.local(out.dtype.c_type, "mm")
        c_ptr = f"&{c}"
    else:
        c_ptr = target.ptr
    suffix = a.dtype.name
    flags = [str(int(left.transposed)), str(int(right.transposed))]
    work = m * k * n
    if work.const is not None and work.const <= SMALL_MATMUL and left.ld.const is not None \
            and right.ld.const is not None:
        total = product(batch) * work        # a batch of many small products spreads over threads
        parallel = f"({total}) >= RT_GEMM_PARALLEL_MIN" if total.const is None else total.const >= PARALLEL_GEMM
        lw.emit(*_each_matrix(lw, batch, dims, left, right, c_ptr, lambda a_ptr, b_ptr, c_at: Call(
            f"rt_matmul_small_{suffix}", [a_ptr, str(left.ld), b_ptr, str(right.ld), c_at, str(n), str(m), str(k),
                                          str(n), *flags]), parallel=parallel or None))
    elif batch and left.natural and right.natural:
        lw.emit(Call(f"rt_gemm_batch_{suffix}", [
            "ctx", left.ptr, right.ptr, c_ptr, str(len(batch)), _dims_array(batch), _dims_array(left.batch_strides),
            _dims_array(right.batch_strides), str(m), str(k), str(n), *flags], checked=True))
    else:
        gemm = None
        if not batch and a.dtype.is_floating and not isinstance(target, Scalar):
            gemm = Gemm(suffix, left.ptr, left.ld, right.ptr, right.ld, c_ptr, n, m, k, n, int(left.transposed),
                        int(right.transposed), (left.memory, right.memory))
        lw.emit(*_each_matrix(lw, batch, dims, left, right, c_ptr, lambda a_ptr, b_ptr, c_at: Call(
            f"rt_gemm_ld_{suffix}", ["ctx", a_ptr, str(left.ld), b_ptr, str(right.ld), c_at, str(n), str(m), str(k),
                                     str(n), *flags], checked=True, gemm=gemm)))
    if isinstance(target, Scalar):
        lw.emit(Assign(target.expr.name, Var(c, out.dtype.c_type)))
    return True


def _each_matrix(lw, batch: tuple, dims: tuple, left: _Operand, right: _Operand, c_ptr: str, call,
                 parallel: bool | str | None = None) -> list:
    """``call(a, b, c)`` on the pointers to each matrix of the product: loops over ``batch`` when there is one
    (the outermost ``parallel`` as ``For`` has it)."""
    if not batch:
        return [call(left.ptr, right.ptr, c_ptr)]
    index = [lw.fresh("b") for _ in batch]
    a_off = sum((Poly.sym(i) * s for i, s in zip(index, left.batch_strides)), Poly.of(0))
    b_off = sum((Poly.sym(i) * s for i, s in zip(index, right.batch_strides)), Poly.of(0))
    c_off = sum((Poly.sym(i) * s for i, s in zip(index, contiguous_strides(dims)[:-2])), Poly.of(0))
    body = [call(f"{left.ptr} + ({a_off})", f"{right.ptr} + ({b_off})", f"{c_ptr} + ({c_off})")]
    for i, extent in reversed(list(zip(index, batch))):
        body = [For(i, Poly.of(0), extent, body)]
    body[0].parallel = parallel
    return body


# ---------------------------------------------------------------------------
# Concatenation.


def emit_concat(lw, op) -> bool:
    out = op.outputs[0]
    if id(out) not in lw.dims:
        return False
    dims = lw.dims[id(out)]
    axis = op.attrs["axis"] % len(dims)
    target = lw.storage(out)
    lw.values[id(out)] = target
    if isinstance(target, Scalar):
        x = op.inputs[0]
        value = lw.values.get(id(x))
        lw.emit(Assign(target.expr.name, value.expr if isinstance(value, Scalar) else
                       value.load((0,) * len(lw.dims[id(x)]))))
        return True
    strides = contiguous_strides(dims)
    offset = Poly.of(0)
    for x in op.inputs:
        xd = lw.dims[id(x)]
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
        lw.emit(*elementwise(lw, [view], part_dims, make))
        offset = offset + size * strides[axis]
    return True


# ---------------------------------------------------------------------------
# Variables: their storage follows the function's inputs (in[num_inputs + k]).


def _variable(lw, op, tensor):
    """(``rt_tensor`` of the variable, its storage: one Array per variable, so that reads and writes name the
    same pointer); ``tensor`` gets the storage's dims."""
    handle = op.attrs["variable"]
    k = _var_index(lw, handle)
    name = f"in[{len(lw.graph.inputs)} + {k}]"
    value = lw.variable_storage.get(id(handle))
    if value is None or isinstance(value, Obj):
        value = lw.variable_storage[id(handle)] = lw.input_value(tensor, name)
    elif id(tensor) not in lw.dims or tuple(lw.dims[id(tensor)]) != tuple(value.dims):
        lw.dims[id(tensor)] = value.dims
    return name, value


def _var_index(lw, handle) -> int:
    for i, h in enumerate(lw.variables):
        if h is handle:
            return i
    lw.variables.append(handle)
    return len(lw.variables) - 1


def _written_while_read(lw, handle, t) -> bool:
    """Whether the variable of ``handle`` may be written between now and the last read of ``t`` (a value read
    from it, or assigned to it): ``t`` then needs a copy of its own. A graph output is read after the call."""
    if id(t) in lw.escaping or lw.plan is None:
        return True
    start = lw.unit_index
    last = lw.last_use.get(id(t), start)
    for position, unit in enumerate(lw.plan.units[start + 1:last + 1], start + 1):
        for op in unit_ops(unit):
            if op.type in _ASSIGN and op.attrs["variable"] is handle:
                if position == last:
                    continue        # it reads t in its own loop, at the element it writes (or copies first)
                return True
            if op.subgraphs() or (op.opdef.stateful and op.type not in _ASSIGN and op.type != "ReadVariableOp"):
                return True         # a loop, a branch or a Python function may assign any variable
    return False


def emit_read_variable(lw, op) -> bool:
    """A read is the variable's storage itself while nothing writes the variable before the value's last use;
    otherwise a copy."""
    out = op.outputs[0]
    if out.dtype.c_type is None or out.shape.rank is None:
        return False
    _, storage = _variable(lw, op, out)
    dims = lw.dims[id(out)]
    if product(dims).const != 1 and not _written_while_read(lw, op.attrs["variable"], out):
        lw.values[id(out)] = storage
        return True
    target = lw.storage(out)
    lw.values[id(out)] = target
    if isinstance(target, Scalar):
        lw.emit(Assign(target.expr.name, storage.load((0,) * len(dims))))
    else:
        lw.emit(*elementwise(lw, [target], dims, lambda el, index: [storage.load(index)]))
    return True


_ASSIGN = {"AssignVariableOp": None, "AssignAddVariableOp": "AddV2", "AssignSubVariableOp": "Sub"}


def emit_assign(lw, op) -> bool:
    value, out = op.inputs[0], op.outputs[0]
    if out.dtype.c_type is None or out.shape.rank is None or value.shape.rank is None:
        return False
    _, storage = _variable(lw, op, out)
    dims = lw.dims[id(out)]
    vd = lw.dims[id(value)]
    scalar = product(vd).const == 1
    if not scalar:
        if len(vd) != len(dims):
            lw.emit(Check("1", lw.message(op, "the value's shape does not match the variable's")))
        else:
            bad = " || ".join(f"({a}) != ({b})" for a, b in zip(vd, dims) if a != b)
            if bad:
                lw.emit(Check(bad, lw.message(op, "the value's shape does not match the variable's")))
    if _reads_elsewhere(lw, value, storage, len(vd), scalar):
        lw.store_tensor(value)       # v.assign(transpose(v)): computed in full before v changes
    combine = _ASSIGN[op.type]

    def make(el, index):
        v = el.of(value, (0,) * len(vd) if scalar else index)
        if combine is None:
            return [v]
        return [Apply(get_opdef(combine), (storage.load(index), v), (out.dtype, out.dtype), out.dtype)]
    lw.emit(*elementwise(lw, [storage], dims, make))
    lw.values[id(out)] = storage
    if (lw.plan.readers.get(id(out)) or id(out) in lw.escaping) and (
            product(dims).const == 1 or _written_while_read(lw, op.attrs["variable"], out)):
        lw.copy_into_storage(out)      # a snapshot: later assignments change the storage
    return True


def _reads_elsewhere(lw, value, storage: Array, rank: int, scalar: bool) -> bool:
    """Whether computing element i of ``value`` reads the variable's storage at another element (the assignment
    would see its own writes)."""
    if isinstance(lw.values.get(id(value)), (Array, Scalar)) and lw.values[id(value)] is not storage:
        return False
    index = tuple(Poly.sym(lw.fresh("q")) for _ in range(rank))
    probe = Elements(lw).of(value, (0,) * rank if scalar else index)
    at = storage.load(index).index if not scalar else None
    return any(ld.ptr == storage.ptr and (ld.indirect or at is None or ld.index != at) for ld in loads([probe]))


# ---------------------------------------------------------------------------
# Python callbacks.


def callback(lw, op) -> None:
    """Run the op's numpy kernel through Python (the GIL is taken only here)."""
    lw.report.callbacks[op.type] = lw.report.callbacks.get(op.type, 0) + 1
    lw.report.callback_ops.append(op)
    n_in, n_out = len(op.inputs), len(op.outputs)
    ins, outs = lw.fresh("cb_in"), lw.fresh("cb_out")
    lw.emit(Raw(f"rt_tensor {ins}[{max(n_in, 1)}], {outs}[{max(n_out, 1)}];"))
    for i, t in enumerate(op.inputs):
        describe(lw, t, f"{ins}[{i}]")
    lw.emit(Call("ctx->callback", ["ctx", str(lw.op_index[id(op)]), ins, str(n_in), outs, str(n_out)],
                 checked=True))
    for i, t in enumerate(op.outputs):
        result = f"{outs}[{i}]"
        if t.dtype.c_type is None or t.shape.rank is None:
            name = lw.local("rt_tensor", "obj")
            lw.emit(Assign(name, result))
            lw.values[id(t)] = Obj(name, t.dtype)
            continue
        dims = lw.dims.get(id(t))
        rank = len(dims)
        bad = [f"{result}.ndim != {rank}"]
        for d, n in enumerate(dims):
            if n.const is not None:
                bad.append(f"{result}.shape[{d}] != {n}")
        lw.emit(Check(" || ".join(bad), lw.message(op, "the Python kernel returned a tensor of another shape")))
        for d, n in enumerate(dims):
            if n.const is None:
                lw.emit(Assign(str(n), f"{result}.shape[{d}]"))
        ptr = lw.local(f"{t.dtype.c_type} *", "p", "NULL")
        lw.emit(Assign(ptr, f"({t.dtype.c_type} *){result}.data"))
        if lw.drops is not None:
            lw.drops.append(ptr)
        array = Array.dense(ptr, t.dtype, dims, "callback")
        lw.values[id(t)] = array
        if product(dims).const == 1:
            lw.values[id(t)] = array
            lw.copy_into_storage(t)


def describe(lw, t, target: str) -> None:
    """Fill the ``rt_tensor`` ``target`` with tensor ``t`` (stored contiguously first if needed)."""
    value = lw.values.get(id(t))
    if isinstance(value, Obj):
        lw.emit(Assign(target, value.name))
        return
    dims = lw.dims[id(t)]
    if isinstance(value, Scalar):
        spill = lw.local(t.dtype.c_type, "spill")
        lw.emit(Assign(spill, value.expr))
        lw.emit(Describe(target, f"&{spill}", list(dims), t.dtype.code))
        return
    if value is None or not value.contiguous:
        ptr, alloc = lw.temporary(t.dtype.c_type, product(dims))
        lw.emit(alloc)
        array = Array.dense(ptr, t.dtype, dims, "arena")
        lw.emit(*elementwise(lw, [array], dims, lambda el, index: [el.of(t, index)]))
        value = array
    lw.emit(Describe(target, value.ptr, list(dims), t.dtype.code))


def emit_identity(lw, op) -> bool:
    """A value native code only passes along (a string, a TensorArray list) stays the same value."""
    value = lw.values.get(id(op.inputs[0]))
    if not isinstance(value, Obj):
        return False
    lw.values[id(op.outputs[0])] = value
    return True


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
