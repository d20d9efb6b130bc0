"""Opaque ops computed by one call into the kernel library: random numbers (``rt_random.h``), sorting, linear
algebra and index-tuple gathers (``rt_linalg.h``), and ``ArgMax``/``ArgMin`` as a loop nest.

Each emitter (1) binds the run-time dims of its outputs (the shape rule of an opaque op leaves fresh
symbols where the graph does not know a size) and checks what the op's numpy kernel checks, with the same
errors; (2) passes its inputs as contiguous buffers (``nn.dense_ptr``: a strided view is copied first); (3)
emits the call. It returns False for what it does not handle (a dtype without a C type, an unknown rank):
the op then runs its numpy kernel through a Python callback, as every op without an emitter does.

Stateful random ops keep their run count in a ``static`` local of the built function (one per op:
``rt_random_next_call``); without seeds, their key too, drawn at the first run (``rt_random_fresh_key``).
"""
from __future__ import annotations

from runtime.ops.random_ops import mix
from transpiler.lowering.ir import (
    CTX,
    NUM_THREADS,
    And,
    Assign,
    Call,
    Cast,
    Check,
    Compare,
    Declare,
    DimsArray,
    Expr,
    Fail,
    For,
    Helper,
    If,
    Lit,
    Not,
    Or,
    OutArg,
    Poly,
    Ptr,
    Store,
    Text,
    Var,
    product,
)
from transpiler.lowering.kernels import Elements, parallel_condition, wrap_loops
from transpiler.lowering.nn import dense_ptr, output_ptr
from transpiler.lowering.shapes import check_count
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Array, Scalar


def _value(cx, t, *index) -> Expr:
    """An element of ``t`` (stored, or computed where it is read)."""
    return Elements(cx).of(t, index)


def _int(cx, t, *index) -> Expr:
    return Cast(_value(cx, t, *index), "int64_t")


def _bind(cx, op, dim: Poly, value: Expr, what: str, stmts: list) -> None:
    """Give the output dim ``dim`` its run-time ``value``: assign a fresh symbol, check a known size."""
    if dim.const is None:
        stmts += [Assign(str(dim), value)]
    else:
        stmts += [Check(Compare("!=", value, dim), cx.message(op, f"{what} is %lld, not {dim}"), (value,))]


def _bind_shape(cx, op, shape_t, out, stmts: list) -> None:
    """The dims of ``out`` from the values of the shape vector ``shape_t`` (non-negative, not overflowing)."""
    dims = cx.dims[id(out)]
    if cx.const_value(shape_t) is not None:
        return          # the graph's static dims are its values
    for d, dim in enumerate(dims):
        v = _int(cx, shape_t, d)
        stmts += [Check(Compare("<", v, Lit(0, "int")),
                      cx.message(op, f"dimensions must be non-negative, got %lld at dimension {d}"), (v,))]
        _bind(cx, op, dim, v, f"dimension {d}", stmts)
    stmts += check_count(cx, op, dims)


# ---------------------------------------------------------------------------
# Random numbers (runtime/ops/random_ops.py specifies the stream; rt_random.h computes it).

_FLOATS = ("float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8")
_STATELESS = ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2")
_FILL = {"RandomUniform": "uniform", "StatelessRandomUniformV2": "uniform", "RandomStandardNormal": "normal",
         "StatelessRandomNormalV2": "normal", "TruncatedNormal": "truncated", "StatelessTruncatedNormalV2": "truncated"}


def _key_and_call(cx, op, stmts: list) -> tuple[Expr, Expr]:
    """The key and the call count of this run of a random op."""
    if op.type in _STATELESS:
        seed, counter = op.inputs[1], op.inputs[2]
        key = Helper("rt_random_key", (_int(cx, seed, 0), _int(cx, seed, 1)), "uint64_t")
        return key, Cast(_int(cx, counter), "uint64_t")
    seed, seed2 = op.attrs["seed"], op.attrs["seed2"]
    calls = cx.local("uint64_t", "rng_calls", Lit(0, "uint64_t"), static=True)
    call = cx.local("uint64_t", "rng_call")
    stmts += [Call("rt_random_next_call", [OutArg(calls, "uint64_t", inout=True)], result=call)]
    if seed is None:
        state = cx.local("uint64_t", "rng_key", Lit(0, "uint64_t"), static=True)
        key = cx.local("uint64_t", "rng_k")
        stmts += [Call("rt_random_fresh_key", [OutArg(state, "uint64_t", inout=True)], result=key)]
        return Var(key, "uint64_t"), Var(call, "uint64_t")
    return Lit(mix(seed, seed2), "uint64_t"), Var(call, "uint64_t")


def emit_random(cx, op) -> list | None:
    stmts: list = []
    out = op.outputs[0]
    kind = _FILL[op.type]
    name = out.dtype.name
    if id(out) not in cx.dims or not (name in _FLOATS or kind == "uniform" and name in _INTS):
        return None
    _bind_shape(cx, op, op.inputs[0], out, stmts)
    bounds = []
    if kind == "uniform":
        lo, hi = op.inputs[-2:]
        bounds = [_value(cx, lo), _value(cx, hi)]
        if out.dtype.is_integer:
            bounds = [Cast(b, "int64_t") for b in bounds]
            stmts += [Check(Not(Compare("<", bounds[0], bounds[1])),
                          cx.message(op, "need minval < maxval, got %lld and %lld"), tuple(bounds))]
    key, call = _key_and_call(cx, op, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    n = product(cx.dims[id(out)])
    stmts += [Call(f"rt_random_{kind}_{name}", [Ptr(ptr), n, key, call, *bounds, NUM_THREADS])]
    stmts += after
    return stmts


def emit_categorical(cx, op) -> list | None:
    stmts: list = []
    logits, num = op.inputs
    out = op.outputs[0]
    if id(out) not in cx.dims or logits.dtype.name not in _FLOATS or id(logits) not in cx.dims:
        return None
    rows, classes = cx.dims[id(logits)]
    samples = _int(cx, num)
    zero = Lit(0, "int")
    stmts += [Check(Compare("<", samples, zero), cx.message(op, "num_samples must be non-negative, got %lld"),
                  (samples,))]
    out_rows, out_samples = cx.dims[id(out)]
    _bind(cx, op, out_rows, rows, "the batch size", stmts)
    _bind(cx, op, out_samples, samples, "num_samples", stmts)
    stmts += [Check(And((Compare("==", classes, Poly.of(0)), Compare(">", rows, Poly.of(0)), Compare(">", samples, zero))),
                  cx.message(op, "logits must have at least one class"))]
    x = dense_ptr(cx, logits, stmts)
    key, call = _key_and_call(cx, op, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call(f"rt_random_categorical_{logits.dtype.name}_{out.dtype.name}",
                 [Ptr(x), rows, classes, out_samples, Ptr(ptr), key, call, NUM_THREADS])]
    stmts += after
    return stmts


def emit_shuffle(cx, op) -> list | None:
    stmts: list = []
    x, out = op.inputs[0], op.outputs[0]
    if x.dtype.c_type is None or id(x) not in cx.dims or id(out) not in cx.dims:
        return None
    dims = cx.dims[id(x)]
    for d, (dim, value) in enumerate(zip(cx.dims[id(out)], dims)):
        _bind(cx, op, dim, value, f"dimension {d}", stmts)
    rows = dims[0] if dims else Poly.of(1)
    row_bytes = product(dims[1:]) * x.dtype.size
    src = dense_ptr(cx, x, stmts)
    key, call = _key_and_call(cx, op, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call("rt_random_shuffle", [CTX, Ptr(src, cast="const char *"), Ptr(ptr, cast="char *"), rows, row_bytes,
                                       key, call, Text(op.where())], checked=True)]
    stmts += after
    return stmts


# ---------------------------------------------------------------------------
# Sorting (rt_sort.h).

_SORTABLE = ("int8", "int16", "int32", "int64", "uint8", "float32", "float64")


def _same_dims(cx, op, out, dims, stmts: list) -> None:
    for d, (dim, value) in enumerate(zip(cx.dims[id(out)], dims)):
        _bind(cx, op, dim, value, f"dimension {d}", stmts)


def emit_sort(cx, op) -> list | None:
    stmts: list = []
    x = op.inputs[0]
    values, indices = op.outputs
    if x.dtype.name not in _SORTABLE or any(id(t) not in cx.dims for t in (x, values, indices)):
        return None
    dims = cx.dims[id(x)]
    axis = op.attrs["axis"] % len(dims)
    _same_dims(cx, op, values, dims, stmts)
    _same_dims(cx, op, indices, dims, stmts)
    src = dense_ptr(cx, x, stmts)
    value_ptr, after_values = output_ptr(cx, values, stmts)
    index_ptr, after_indices = output_ptr(cx, indices, stmts)
    stmts += [Call(f"rt_sort_{x.dtype.name}", [
        CTX, Ptr(src), Ptr(value_ptr), Ptr(index_ptr), product(dims[:axis]), dims[axis], product(dims[axis + 1:]),
        Lit(int(op.attrs["descending"]), "int"), Text(op.where())], checked=True)]
    stmts += [*after_values, *after_indices]
    return stmts


def emit_top_k(cx, op) -> list | None:
    stmts: list = []
    x, k = op.inputs
    values, indices = op.outputs
    if x.dtype.name not in _SORTABLE or any(id(t) not in cx.dims for t in (x, values, indices)):
        return None
    dims = cx.dims[id(x)]
    kv = _int(cx, k)
    for out in (values, indices):
        _same_dims(cx, op, out, dims[:-1], stmts)
        _bind(cx, op, cx.dims[id(out)][-1], kv, "k", stmts)
    src = dense_ptr(cx, x, stmts)
    value_ptr, after_values = output_ptr(cx, values, stmts)
    index_ptr, after_indices = output_ptr(cx, indices, stmts)
    stmts += [Call(f"rt_top_k_{x.dtype.name}", [CTX, Ptr(src), Ptr(value_ptr), Ptr(index_ptr), product(dims[:-1]),
                                               dims[-1], kv, Text(op.where())], checked=True)]
    stmts += [*after_values, *after_indices]
    return stmts


# ---------------------------------------------------------------------------
# Linear algebra (rt_linalg.h).

def _square(cx, op, dims, stmts: list) -> None:
    stmts += [Check(Compare("!=", dims[-1], dims[-2]),
                  cx.message(op, "the input must be a square matrix, got %lld x %lld"), (dims[-2], dims[-1]))]


def emit_linalg(cx, op) -> list | None:
    stmts: list = []
    a, out = op.inputs[0], op.outputs[0]
    if a.dtype.name not in _FLOATS or any(id(t) not in cx.dims for t in (*op.inputs, out)):
        return None
    dims = cx.dims[id(a)]
    _square(cx, op, dims, stmts)
    batch, n = product(dims[:-2]), dims[-1]
    src = dense_ptr(cx, a, stmts)
    where = Text(op.where())
    adjoint = Lit(int(bool(op.attrs.get("adjoint"))), "int")
    if op.type == "MatrixDeterminant":
        _same_dims(cx, op, out, dims[:-2], stmts)
        ptr, after = output_ptr(cx, out, stmts)
        call = Call(f"rt_matrix_determinant_{a.dtype.name}", [CTX, Ptr(src), Ptr(ptr), batch, n, where],
                    checked=True)
    elif op.type == "MatrixInverse":
        _same_dims(cx, op, out, dims, stmts)
        ptr, after = output_ptr(cx, out, stmts)
        call = Call(f"rt_matrix_inverse_{a.dtype.name}", [CTX, Ptr(src), Ptr(ptr), batch, n, adjoint, where],
                    checked=True)
    else:
        b = op.inputs[1]
        bd = cx.dims[id(b)]
        if len(bd) != len(dims):
            return None
        bad = [Compare("!=", x, y) for x, y in zip(bd[:-1], dims[:-1]) if x != y]
        if bad:
            stmts += [Check(Or(tuple(bad)), cx.message(op, "the right-hand sides do not match the matrix's shape"))]
        _same_dims(cx, op, out, bd, stmts)
        rhs = dense_ptr(cx, b, stmts)
        ptr, after = output_ptr(cx, out, stmts)
        call = Call(f"rt_matrix_solve_{a.dtype.name}", [CTX, Text("MatrixSolve"), Ptr(src), Ptr(rhs), Ptr(ptr), batch,
                                                        n, bd[-1], adjoint, where], checked=True)
    stmts += [call, *after]
    return stmts


# ---------------------------------------------------------------------------
# Index tuples and masks (rt_index.h).

def _dims_literal(dims) -> DimsArray:
    return DimsArray(tuple(dims))


def emit_gather_nd(cx, op) -> list | None:
    stmts: list = []
    params, indices = op.inputs
    out = op.outputs[0]
    if params.dtype.c_type is None or any(id(t) not in cx.dims for t in (params, indices, out)):
        return None
    pd, idd = cx.dims[id(params)], cx.dims[id(indices)]
    m = idd[-1].const
    if m is None or m > len(pd) or indices.dtype.name not in ("int32", "int64"):
        return None
    _same_dims(cx, op, out, tuple(idd[:-1]) + tuple(pd[m:]), stmts)
    src, idx = dense_ptr(cx, params, stmts), dense_ptr(cx, indices, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call("rt_gather_nd", [CTX, Ptr(src, cast="const char *"), _dims_literal(pd), Lit(len(pd), "int"),
                                  Lit(m, "int"), Ptr(idx), Lit(int(indices.dtype.name == "int64"), "int"),
                                  product(idd[:-1]), product(pd[m:]) * params.dtype.size, Ptr(ptr, cast="char *"),
                                  Text(op.where())], checked=True)]
    stmts += after
    return stmts


def emit_scatter_nd(cx, op) -> list | None:
    stmts: list = []
    indices, updates, shape = op.inputs
    out = op.outputs[0]
    if updates.dtype.name not in _SORTABLE or any(id(t) not in cx.dims for t in (indices, updates, out)):
        return None
    idd, ud, od = cx.dims[id(indices)], cx.dims[id(updates)], cx.dims[id(out)]
    m = idd[-1].const
    if m is None or m > len(od) or indices.dtype.name not in ("int32", "int64"):
        return None
    _bind_shape(cx, op, shape, out, stmts)
    want = tuple(idd[:-1]) + tuple(od[m:])
    if len(want) != len(ud):
        stmts += [Fail(cx.message(op, "the updates do not match the indices and the shape"))]
    else:
        bad = [Compare("!=", x, y) for x, y in zip(ud, want) if x != y]
        if bad:
            stmts += [Check(Or(tuple(bad)), cx.message(op, "the updates do not match the indices and the shape"))]
    idx, src = dense_ptr(cx, indices, stmts), dense_ptr(cx, updates, stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call(f"rt_scatter_nd_{updates.dtype.name}", [
        CTX, Ptr(idx), Lit(int(indices.dtype.name == "int64"), "int"), product(idd[:-1]), Lit(m, "int"), Ptr(src),
        product(od[m:]), Ptr(ptr), _dims_literal(od), Lit(len(od), "int"), Text(op.where())], checked=True)]
    stmts += after
    return stmts


def emit_where(cx, op) -> list | None:
    stmts: list = []
    mask, out = op.inputs[0], op.outputs[0]
    if mask.dtype.name != "bool" or id(mask) not in cx.dims or id(out) not in cx.dims:
        return None
    dims = cx.dims[id(mask)]
    src = dense_ptr(cx, mask, stmts)
    count = cx.dims[id(out)][0]
    found = cx.local("int64_t", "count")
    stmts += [Call("rt_where_count", [Ptr(src), product(dims)], result=found)]
    _bind(cx, op, count, Var(found, "int64_t"), "the count", stmts)
    ptr, after = output_ptr(cx, out, stmts)
    stmts += [Call("rt_where_fill", [Ptr(src), _dims_literal(dims), Lit(len(dims), "int"), product(dims), Ptr(ptr)])]
    stmts += after
    return stmts


def emit_ensure_shape(cx, op) -> list | None:
    """The input's value (copied: the plan gives the output storage of its own), its dims checked against the
    expected shape."""
    stmts: list = []
    x, out = op.inputs[0], op.outputs[0]
    value = cx.values.get(id(x))
    if not isinstance(value, (Array, Scalar)) or id(out) not in cx.dims:
        return None
    dims = cx.dims[id(x)]
    expected = op.attrs["shape"]
    for d, want in enumerate(expected.dims or ()):
        if want is not None and dims[d].const is None:
            stmts += [Check(Compare("!=", dims[d], Poly.of(want)), cx.message(op, f"dimension {d} is %lld, not {want}"),
                          (dims[d],))]
    _same_dims(cx, op, out, dims, stmts)
    out_dims = cx.dims[id(out)]
    if isinstance(value, Scalar):
        cx.values[id(out)] = Scalar(value.expr, value.dtype, out_dims)
    else:
        cx.values[id(out)] = Array(value.ptr, value.dtype, out_dims, value.strides, value.offset, value.storage)
    stmts += cx.copy_into_storage(out)
    return stmts


# ---------------------------------------------------------------------------
# ArgMax / ArgMin: a loop over the kept dims around a scan of the reduced axis (a register with the best value
# and its position): the first extreme wins ties, and a NaN wins over every number, as numpy's argmax does.

def emit_arg_reduce(cx, op) -> list | None:
    stmts: list = []
    x, out = op.inputs[0], op.outputs[0]
    if x.dtype.c_type is None or x.dtype.is_bool or id(x) not in cx.dims or id(out) not in cx.dims:
        return None
    dims = cx.dims[id(x)]
    if not dims:
        return None
    axis = op.attrs["axis"] % len(dims)
    kept = [d for d in range(len(dims)) if d != axis]
    _same_dims(cx, op, out, [dims[d] for d in kept], stmts)
    n = dims[axis]
    stmts += [Check(Compare("==", n, Poly.of(0)), cx.message(op, "argmax/argmin over an empty dimension"))]
    target, allocs = storage(cx, out)
    stmts += allocs
    cx.values[id(out)] = target
    names = [cx.fresh("i") for _ in kept]
    k = cx.fresh("k")
    at = {d: Poly.sym(name) for d, name in zip(kept, names)}
    element = Elements(cx)

    def x_at(position: Poly):
        return element.of(x, tuple(at.get(d, position) for d in range(len(dims))))
    ctype = x.dtype.c_type
    best, index, value = Var(cx.fresh("best"), ctype), Var(cx.fresh("pos"), "int64_t"), Var(cx.fresh("v"), ctype)
    better = Compare(">" if op.type == "ArgMax" else "<", value, best)
    if x.dtype.is_floating:
        better = Or((better, And((Compare("!=", value, value), Compare("==", best, best)))))
    scan = For(k, Poly.of(1), n, [Declare(value.name, ctype, x_at(Poly.sym(k))),
                                  If(better, [Assign(best.name, value), Assign(index.name, Poly.sym(k))])])
    result = Cast(index, out.dtype.c_type)
    if isinstance(target, Scalar):
        store = Assign(target.expr.name, result)
    else:
        store = Store(target.ptr, target.load(tuple(Poly.sym(name) for name in names)).index, result)
    body = [Declare(best.name, ctype, x_at(Poly.of(0))), Declare(index.name, "int64_t", Poly.of(0)), scan, store]
    loops = [(name, dims[d], "k") for name, d in zip(names, kept)]
    stmts += wrap_loops(loops, body, parallel_condition(product(dims)), simd=False)
    return stmts


EMITTERS = {
    **{op_type: emit_random for op_type in _FILL},
    "Multinomial": emit_categorical,
    "RandomShuffle": emit_shuffle,
    "Sort": emit_sort,
    "TopKV2": emit_top_k,
    "MatrixInverse": emit_linalg,
    "MatrixDeterminant": emit_linalg,
    "MatrixSolve": emit_linalg,
    "GatherNd": emit_gather_nd,
    "ScatterNd": emit_scatter_nd,
    "Where": emit_where,
    "EnsureShape": emit_ensure_shape,
    "ArgMax": emit_arg_reduce,
    "ArgMin": emit_arg_reduce,
}
