"""Per-op C emitters, dispatched on the op type like ``runtime.executor`` dispatches kernels.

An emitter writes C for one op through a ``FunctionEmitter`` and returns True; returning
False (or having no emitter) makes the op run through the Python callback.
"""
from __future__ import annotations

import re

import numpy as np

from runtime import dtypes
from runtime.graph import Graph

from transpiler.codegen.native import FunctionEmitter, native_dtype

EMITTERS: dict = {}


def emitter(*op_types):
    def register(fn):
        for op_type in op_types:
            EMITTERS[op_type] = fn
        return fn
    return register


# ---------------------------------------------------------------------------
# Elementwise ops and fusion.

_GUARDED = {"FloorDiv", "FloorMod", "Pow"}   # integer forms need a check of the second operand first
PARALLEL_MIN = 65536                         # elements below which a loop stays on one thread


def _fusable(op) -> bool:
    if op.opdef.c_expr is None or not op.outputs:
        return False
    if not all(native_dtype(t.dtype) for t in op.inputs + op.outputs):
        return False
    if op.type in _GUARDED and op.inputs[0].dtype.is_integer:
        return False
    if EMITTERS.get(op.type) not in (emit_elementwise, emit_identity):
        return False
    return op.outputs[0].shape.rank is not None


def plan_fusion(em: FunctionEmitter, graph: Graph, ops: list) -> None:
    """Mark elementwise ops whose only consumer is another elementwise op: they become expressions."""
    if not em.fuse_elementwise:
        return
    consumers: dict[int, list] = {}
    for op in ops:
        for t in op.inputs:
            consumers.setdefault(id(t), []).append(op)
    outputs = {id(t) for t in graph.outputs}
    for op in ops:
        if not _fusable(op):
            continue
        out = op.outputs[0]
        users = consumers.get(id(out), [])
        if id(out) in outputs or len(users) != 1:
            continue
        user = users[0]
        if _fusable(user) and sum(1 for t in user.inputs if t is out) == 1:
            em.inlined[id(out)] = op.name
            em.report.fused += 1


def _c_expr(op, args: list[str]) -> str:
    template = op.opdef.c_expr
    suffix = op.inputs[0].dtype.name if op.inputs else op.outputs[0].dtype.name
    template = re.sub(r"\brt_(\w+)\(", lambda m: f"rt_{m.group(1)}_{suffix}(", template)
    text = template.replace("{T}", op.outputs[0].dtype.c_type)
    for i, a in enumerate(args):
        text = text.replace("{" + str(i) + "}", a)
    return f"(({op.outputs[0].dtype.c_type}){text})"


def _leaves(em, tensor, leaves):
    if id(tensor) in em.inlined:
        for t in tensor.op.inputs:
            _leaves(em, t, leaves)
    elif all(t is not tensor for t in leaves):
        leaves.append(tensor)


def _expression(em, tensor, access) -> str:
    if id(tensor) in em.inlined:
        return _c_expr(tensor.op, [_expression(em, t, access) for t in tensor.op.inputs])
    return access[id(tensor)]


def emit_elementwise(em: FunctionEmitter, op) -> bool:
    if not all(native_dtype(t.dtype) for t in op.inputs + op.outputs) or op.outputs[0].shape.rank is None:
        return False
    out = op.outputs[0]
    rank = out.shape.rank
    leaves: list = []
    for t in op.inputs:
        _leaves(em, t, leaves)
    if any(t.shape.rank is None or t.shape.rank > rank for t in leaves):
        return False
    name = em.var(out)
    # output shape: static, or the broadcast of the leaves at run time
    if out.shape.is_fully_defined():
        em.alloc(out)
    else:
        em.line(f"{name}.ndim = {rank};")
        for d in range(rank):
            em.line(f"{name}.shape[{d}] = 1;")
            for t in leaves:
                offset = d - (rank - t.shape.rank)
                if offset < 0:
                    continue
                ld = em.dim(t, offset)
                em.line(f"if ({ld} != 1) {{ if ({name}.shape[{d}] == 1) {name}.shape[{d}] = {ld}; "
                        f"else if ({name}.shape[{d}] != {ld}) "
                        + em.fail(f"{op.type} ({op.name}): incompatible shapes for broadcasting at dimension "
                                  f"{d}: %lld vs %lld", f"{name}.shape[{d}]", ld) + " }")
        em.line(f"if (rt_alloc_tensor(ctx, &{name})) goto fail;")
    if op.type in _GUARDED and op.inputs[0].dtype.is_integer:
        divisor = op.inputs[1]
        check = "< 0" if op.type == "Pow" else "== 0"
        message = ("Integers to negative integer powers are not allowed" if op.type == "Pow"
                   else "Integer division by zero")
        with em.block(f"for (int64_t k = 0; k < {em.numel(divisor)}; k++)"):
            em.line(f"if ({em.ptr(divisor)}[k] {check}) " + em.fail(f"{op.type} ({op.name}): {message}"))
    n = em.numel(out)
    ctype = out.dtype.c_type
    static_ok = all(t.shape.is_fully_defined() and (t.shape.num_elements() == 1 or t.shape == out.shape)
                    for t in leaves) and out.shape.is_fully_defined()
    flat_access = {}
    conditions = []
    pointers = []
    for t in leaves:
        p = em.fresh("p")
        pointers.append(f"const {t.dtype.c_type} *restrict {p} = {em.ptr(t)};")
        if t.shape.is_fully_defined() and t.shape.num_elements() == 1:
            flat_access[id(t)] = f"{p}[0]"
        else:
            flat_access[id(t)] = f"{p}[k]"
            if not (t.shape.is_fully_defined() and t.shape == out.shape):
                conditions.append(f"rt_same_shape(&{em.var(t)}, &{name})")
    flat_expr = _c_expr(op, [_expression(em, t, flat_access) for t in op.inputs])
    pointers = " ".join(pointers)
    cond = " && ".join(conditions) if conditions else "1"
    with em.block(f"if ({cond})"):
        em.line(f"{ctype} *restrict po = ({ctype} *){name}.data;{pointers}")
        em.line(f"const int64_t rt_n = {n};")
        loop = f"for (int64_t k = 0; k < rt_n; k++) po[k] = {flat_expr};"
        small = n.isdigit() and int(n) < PARALLEL_MIN
        if not small:
            # a parallel region costs microseconds even when its if() clause is false: branch in C instead
            with em.block(f"if (rt_n >= {PARALLEL_MIN} && ctx->num_threads > 1)"):
                em.line("#pragma omp parallel for simd schedule(static) num_threads(ctx->num_threads)")
                em.line(loop)
            em.line("else")
        with em.block(""):
            em.line("#pragma omp simd")
            em.line(loop)
    if static_ok:
        return True
    _emit_row_broadcast(em, op, out, leaves, name, ctype)
    with em.block("else"):
        # general broadcasting: an odometer over the output index with per-leaf strides
        em.line(f"{ctype} *po = ({ctype} *){name}.data;")
        em.line(f"int64_t idx[{rank}]; for (int d = 0; d < {rank}; d++) idx[d] = 0;")
        access = {}
        for j, t in enumerate(leaves):
            lr = t.shape.rank
            em.line(f"int64_t off{j} = 0, st{j}[{max(rank, 1)}];")
            em.line(f"{{ int64_t s = 1; for (int d = {rank} - 1; d >= 0; d--) {{ int ld = d - {rank - lr}; "
                    f"if (ld < 0) {{ st{j}[d] = 0; continue; }} st{j}[d] = ({em.var(t)}.shape[ld] == 1) ? 0 : s; "
                    f"s *= {em.var(t)}.shape[ld]; }} }}")
            access[id(t)] = f"{em.ptr(t)}[off{j}]"
        expr = _c_expr(op, [_expression(em, t, access) for t in op.inputs])
        with em.block(f"for (int64_t k = 0; k < {n}; k++)"):
            em.line(f"po[k] = {expr};")
            with em.block(f"for (int d = {rank} - 1; d >= 0; d--)"):
                em.line("idx[d]++;" + "".join(f" off{j} += st{j}[d];" for j in range(len(leaves))))
                em.line(f"if (idx[d] < {name}.shape[d]) break;")
                em.line("idx[d] = 0;" + "".join(f" off{j} -= st{j}[d] * {name}.shape[d];" for j in range(len(leaves))))
    return True


def _emit_row_broadcast(em, op, out, leaves, name, ctype) -> None:
    """``else if`` branch: leaves that are the output's trailing dims (a bias row) or the whole output.

    The common ``x + b`` with ``b`` of shape ``x.shape[-1:]``: an outer loop over rows and a
    contiguous, vectorised inner loop, instead of the general odometer.
    """
    rank = out.shape.rank
    trailing = [t for t in leaves if t.shape.rank < rank and not _static_scalar(t)]
    ranks = {t.shape.rank for t in trailing}
    if not trailing or len(ranks) != 1 or 0 in ranks:
        return
    r = ranks.pop()
    conditions, access, pointers = [], {}, []
    for t in leaves:
        p = em.fresh("p")
        pointers.append(f"const {t.dtype.c_type} *restrict {p} = {em.ptr(t)};")
        if _static_scalar(t):
            access[id(t)] = f"{p}[0]"
        elif t.shape.rank < rank:
            conditions += [f"{em.var(t)}.shape[{d}] == {name}.shape[{rank - r + d}]" for d in range(r)]
            access[id(t)] = f"{p}[i]"
        else:
            conditions.append(f"rt_same_shape(&{em.var(t)}, &{name})")
            access[id(t)] = f"{p}[o * inner + i]"
    expr = _c_expr(op, [_expression(em, t, access) for t in op.inputs])
    inner = " * ".join(f"{name}.shape[{d}]" for d in range(rank - r, rank))
    em.line(f"else if ({' && '.join(conditions)})")
    with em.block(""):
        em.line(f"{ctype} *restrict po = ({ctype} *){name}.data; {' '.join(pointers)}")
        em.line(f"const int64_t inner = {inner}, outer = inner ? rt_numel(&{name}) / inner : 0;")
        loop = f"for (int64_t o = 0; o < outer; o++) {{ {ctype} *restrict row = po + o * inner;"
        body = f"_Pragma(\"omp simd\") for (int64_t i = 0; i < inner; i++) row[i] = {expr}; }}"
        with em.block(f"if (outer * inner >= {PARALLEL_MIN} && outer > 1 && ctx->num_threads > 1)"):
            em.line("#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)")
            em.line(f"{loop} {body}")
        em.line("else")
        with em.block(""):
            em.line(f"{loop} {body}")


def _static_scalar(t) -> bool:
    return t.shape.is_fully_defined() and t.shape.num_elements() == 1


def _register_elementwise():
    from runtime.ops.registry import all_opdefs
    for op_type, opdef in all_opdefs().items():
        if opdef.c_expr is not None and op_type != "Identity":
            EMITTERS[op_type] = emit_elementwise


_register_elementwise()


# ---------------------------------------------------------------------------
# Data movement.

def copy_value(em: FunctionEmitter, dst_c: str, src_c: str, dtype) -> None:
    """C tensor ``dst_c`` becomes a copy of ``src_c``: a fresh buffer for C values; for Python
    objects (strings, TensorArray lists) the shared index, which is never freed."""
    if not native_dtype(dtype):
        em.line(f"{dst_c} = {src_c};")
        return
    em.line(f"{dst_c} = {src_c}; {dst_c}.owner = NULL;")
    em.line(f"if (rt_alloc_tensor(ctx, &{dst_c})) goto fail;")
    em.line(f"memcpy({dst_c}.data, {src_c}.data, (size_t)rt_numel(&{src_c}) * rt_itemsize({src_c}.dtype));")


def copy_into(em: FunctionEmitter, dst, src_c: str) -> None:
    """Graph tensor ``dst`` gets a fresh buffer with a copy of C tensor ``src_c``."""
    copy_value(em, em.var(dst), src_c, dst.dtype)


@emitter("Identity")
def emit_identity(em, op):
    src = op.inputs[0]
    if native_dtype(src.dtype) and src.shape.rank is not None:
        return emit_elementwise(em, op)      # a copy loop, into which the producer's chain fuses
    copy_into(em, op.outputs[0], em.var(src))
    return True


def _literal(value, ctype) -> str:
    if ctype == "float":
        return "NAN" if np.isnan(value) else ("INFINITY" if value > 0 else "-INFINITY") if np.isinf(value) \
            else repr(float(value)) + "f"
    if ctype == "double":
        return "NAN" if np.isnan(value) else ("INFINITY" if value > 0 else "-INFINITY") if np.isinf(value) \
            else repr(float(value))
    if ctype == "int64_t":
        return f"{int(value)}LL"
    return str(int(value))


@emitter("Const")
def emit_const(em, op):
    out = op.outputs[0]
    if not native_dtype(out.dtype):
        return False
    array = op.attrs["value"].array
    ctype = out.dtype.c_type
    data = em.fresh("k")
    values = ", ".join(_literal(v, ctype) for v in array.reshape(-1).tolist()) or "0"
    em.line(f"static const {ctype} {data}[{max(array.size, 1)}] = {{{values}}};")
    em.set_shape(out, [str(d) for d in array.shape])
    em.line(f"{em.var(out)}.data = (void *){data};")
    return True


@emitter("Eye")
def emit_eye(em, op):
    out = op.outputs[0]
    name = em.alloc(out)
    rows, cols = op.attrs["num_rows"], op.attrs["num_columns"]
    em.line(f"memset({name}.data, 0, (size_t){rows * cols} * sizeof({out.dtype.c_type}));")
    em.line(f"for (int64_t i = 0; i < {min(rows, cols)}; i++) {em.ptr(out)}[i * {cols} + i] = 1;")
    return True


def _int_value(em, tensor, index: str = "0") -> str:
    return f"(int64_t){em.ptr(tensor)}[{index}]"


@emitter("Fill")
def emit_fill(em, op):
    dims_t, value = op.inputs
    out = op.outputs[0]
    if not native_dtype(out.dtype) or out.shape.rank is None:
        return False
    rank = out.shape.rank
    dims = [em.dim(out, d) if out.shape[d] is not None else _int_value(em, dims_t, str(d)) for d in range(rank)]
    name = em.var(out)
    for d in range(rank):
        em.line(f"if ({_int_value(em, dims_t, str(d))} < 0) " + em.fail("Fill: dimensions must be non-negative"))
    em.alloc(out, dims)
    em.line(f"{{ const {out.dtype.c_type} v = {em.ptr(value)}[0]; {out.dtype.c_type} *po = {em.ptr(out)}; "
            f"for (int64_t k = 0, n = rt_numel(&{name}); k < n; k++) po[k] = v; }}")
    return True


@emitter("Range")
def emit_range(em, op):
    out = op.outputs[0]
    if not native_dtype(out.dtype):
        return False
    start, limit, delta = (f"{em.ptr(t)}[0]" for t in op.inputs)
    name = em.var(out)
    ctype = out.dtype.c_type
    em.line(f"if ({delta} == 0) " + em.fail("Range: delta must not be zero"))
    if out.dtype.is_integer:
        count = (f"(({delta} > 0) ? (({limit} > {start}) ? (({limit} - {start} + {delta} - 1) / {delta}) : 0) : "
                 f"(({limit} < {start}) ? (({start} - {limit} - {delta} - 1) / -{delta}) : 0))")
    else:
        count = f"(int64_t)fmax(0.0, ceil(((double){limit} - (double){start}) / (double){delta}))"
    em.alloc(out, [f"(int64_t)({count})"])
    em.line(f"for (int64_t k = 0; k < {name}.shape[0]; k++) {em.ptr(out)}[k] = ({ctype})({start} + k * {delta});")
    return True


@emitter("Shape")
def emit_shape(em, op):
    x, out = op.inputs[0], op.outputs[0]
    if x.shape.rank is None:
        return False
    em.alloc(out, [str(x.shape.rank)])
    for d in range(x.shape.rank):
        em.line(f"{em.ptr(out)}[{d}] = ({out.dtype.c_type}){em.dim(x, d)};")
    return True


@emitter("Size")
def emit_size(em, op):
    em.alloc(op.outputs[0], [])
    em.line(f"{em.ptr(op.outputs[0])}[0] = ({op.outputs[0].dtype.c_type}){em.numel(op.inputs[0])};")
    return True


@emitter("Rank")
def emit_rank(em, op):
    x = op.inputs[0]
    em.alloc(op.outputs[0], [])
    em.line(f"{em.ptr(op.outputs[0])}[0] = (int32_t){em.var(x)}.ndim;")
    return True


def _reshape_to(em, op, dims):
    """Copy the input into the output with new dims (a copy keeps buffer ownership simple)."""
    x, out = op.inputs[0], op.outputs[0]
    name = em.var(out)
    em.set_shape(out, dims)
    em.line(f"if (rt_numel(&{name}) != rt_numel(&{em.var(x)})) "
            + em.fail(f"{op.type} ({op.name}): cannot reshape %lld elements into %lld",
                      f"rt_numel(&{em.var(x)})", f"rt_numel(&{name})"))
    em.line(f"if (rt_alloc_tensor(ctx, &{name})) goto fail;")
    em.line(f"memcpy({name}.data, {em.var(x)}.data, (size_t)rt_numel(&{name}) * rt_itemsize({name}.dtype));")


@emitter("Reshape")
def emit_reshape(em, op):
    x, target = op.inputs
    out = op.outputs[0]
    if not native_dtype(x.dtype) or out.shape.rank is None:
        return False
    rank = out.shape.rank
    if out.shape.is_fully_defined():
        _reshape_to(em, op, [str(d) for d in out.shape.dims])
        return True
    name = em.var(out)
    em.line(f"{{ int64_t known = 1; int unknown = -1; {name}.ndim = {rank};")
    em.line(f"  for (int d = 0; d < {rank}; d++) {{ int64_t v = {_int_value(em, target, 'd')}; "
            f"if (v == -1) unknown = d; else known *= v; {name}.shape[d] = v; }}")
    em.line(f"  if (unknown >= 0) {{ if (known == 0 || rt_numel(&{em.var(x)}) % known) "
            + em.fail(f"Reshape ({op.name}): cannot infer the -1 dimension") +
            f" {name}.shape[unknown] = rt_numel(&{em.var(x)}) / known; }} }}")
    _reshape_to(em, op, [f"{name}.shape[{d}]" for d in range(rank)])
    return True


@emitter("ExpandDims", "Squeeze")
def emit_expand_squeeze(em, op):
    out = op.outputs[0]
    if not native_dtype(out.dtype) or out.shape.rank is None:
        return False
    x = op.inputs[0]
    if op.type == "ExpandDims":
        axis = op.attrs["axis"] % (x.shape.rank + 1)
        dims = [em.dim(x, d) for d in range(x.shape.rank)]
        dims.insert(axis, "1")
    else:
        axes = op.attrs["axis"]
        if axes is None:
            if not x.shape.is_fully_defined():
                return False
            axes = [d for d, n in enumerate(x.shape.dims) if n == 1]
        axes = {a % x.shape.rank for a in axes}
        for a in axes:
            em.line(f"if ({em.dim(x, a)} != 1) " + em.fail(f"Squeeze ({op.name}): dimension {a} is not 1"))
        dims = [em.dim(x, d) for d in range(x.shape.rank) if d not in axes]
    _reshape_to(em, op, dims)
    return True


@emitter("Transpose")
def emit_transpose(em, op):
    x, out = op.inputs[0], op.outputs[0]
    if not native_dtype(x.dtype) or x.shape.rank is None:
        return False
    perm = op.attrs["perm"] or tuple(reversed(range(x.shape.rank)))
    em.alloc(out, [em.dim(x, p) for p in perm])
    em.line(f"{{ static const int perm[{max(len(perm), 1)}] = {{{', '.join(map(str, perm)) or '0'}}}; "
            f"rt_transpose(&{em.var(x)}, &{em.var(out)}, perm); }}")
    return True


@emitter("MatMul")
def emit_matmul(em, op):
    a, b = op.inputs
    out = op.outputs[0]
    if not native_dtype(a.dtype) or a.dtype is dtypes.float16 or a.shape.rank != 2 or b.shape.rank != 2 \
            or op.attrs.get("transpose_a") or op.attrs.get("transpose_b"):
        return False
    m, k, k2, n = em.dim(a, 0), em.dim(a, 1), em.dim(b, 0), em.dim(b, 1)
    if not (k.isdigit() and k2.isdigit()):
        em.line(f"if ({k} != {k2}) " + em.fail(f"MatMul ({op.name}): inner dimensions differ: %lld vs %lld", k, k2))
    em.alloc(out, [m, n])
    em.line(f"rt_matmul_{a.dtype.name}({em.ptr(a)}, {em.ptr(b)}, {em.ptr(out)}, {m}, {k}, {n});")
    return True


_REDUCE = {"Sum": "sum", "Prod": "prod", "Max": "max", "Min": "min", "Any": "any", "All": "all", "Mean": "sum"}


@emitter(*_REDUCE)
def emit_reduce(em, op):
    x, out = op.inputs[0], op.outputs[0]
    if not native_dtype(x.dtype) or x.shape.rank is None or x.dtype is dtypes.float16:
        return False
    rank = x.shape.rank
    axes = op.attrs["axis"]
    axes = sorted(range(rank)) if axes is None else sorted(a % rank for a in axes) if rank else []
    if axes and axes != list(range(axes[0], axes[-1] + 1)):
        return False
    first, last = (axes[0], axes[-1]) if axes else (rank, rank - 1)
    prod = lambda ds: " * ".join(ds) if ds else "1"   # noqa: E731
    outer = prod([em.dim(x, d) for d in range(first)])
    count = prod([em.dim(x, d) for d in range(first, last + 1)])
    inner = prod([em.dim(x, d) for d in range(last + 1, rank)])
    if op.attrs["keepdims"]:
        dims = ["1" if d in axes else em.dim(x, d) for d in range(rank)]
    else:
        dims = [em.dim(x, d) for d in range(rank) if d not in axes]
    em.alloc(out, dims)
    kind = _REDUCE[op.type]
    suffix = "bool" if kind in ("any", "all") else x.dtype.name
    if kind in ("max", "min"):
        em.line(f"if (({count}) == 0) " + em.fail(f"{op.type} ({op.name}): reduction over an empty dimension"))
    if kind == "sum" and inner == "1":
        em.line(f"rt_reduce_sum_rows_{suffix}({em.ptr(x)}, {em.ptr(out)}, {outer}, {count}, ctx->num_threads);")
    else:
        em.line(f"rt_reduce_{kind}_{suffix}({em.ptr(x)}, {em.ptr(out)}, {outer}, {count}, {inner});")
    if op.type == "Mean":
        ctype = out.dtype.c_type
        em.line(f"{{ const int64_t c = {count}; {ctype} *po = {em.ptr(out)}; "
                f"for (int64_t k = 0, n = rt_numel(&{em.var(out)}); k < n; k++) "
                f"po[k] = c ? ({ctype})(po[k] / ({ctype})c) : 0; }}")
    return True


@emitter("GatherV2")
def emit_gather(em, op):
    params, indices = op.inputs
    out = op.outputs[0]
    if not native_dtype(params.dtype) or params.shape.rank is None or indices.shape.rank is None \
            or indices.dtype not in (dtypes.int32, dtypes.int64):
        return False
    axis = op.attrs["axis"] % params.shape.rank
    dims = [em.dim(params, d) for d in range(axis)] + [em.dim(indices, d) for d in range(indices.shape.rank)] \
        + [em.dim(params, d) for d in range(axis + 1, params.shape.rank)]
    em.alloc(out, dims)
    em.line(f"if (rt_gather(ctx, &{em.var(params)}, &{em.var(indices)}, {axis}, &{em.var(out)})) goto fail;")
    return True


@emitter("ConcatV2", "Pack")
def emit_concat(em, op):
    out = op.outputs[0]
    if not native_dtype(out.dtype) or out.shape.rank is None or any(t.shape.rank is None for t in op.inputs):
        return False
    rank = out.shape.rank
    axis = op.attrs["axis"] % rank
    if op.type == "Pack":
        first = op.inputs[0]
        dims = [em.dim(first, d) for d in range(first.shape.rank)]
        dims.insert(axis, str(len(op.inputs)))
        for t in op.inputs[1:]:
            for d in range(t.shape.rank):
                em.line(f"if ({em.dim(t, d)} != {em.dim(first, d)}) "
                        + em.fail(f"Pack ({op.name}): input shapes differ"))
    else:
        total = " + ".join(em.dim(t, axis) for t in op.inputs)
        dims = [total if d == axis else em.dim(op.inputs[0], d) for d in range(rank)]
        for t in op.inputs[1:]:
            for d in range(rank):
                if d != axis:
                    em.line(f"if ({em.dim(t, d)} != {em.dim(op.inputs[0], d)}) "
                            + em.fail(f"ConcatV2 ({op.name}): dimension {d} differs"))
    em.alloc(out, dims)
    arr = em.fresh("parts")
    em.line(f"const rt_tensor *{arr}[{len(op.inputs)}] = {{{', '.join('&' + em.var(t) for t in op.inputs)}}};")
    if op.type == "Pack":
        # stacking = concatenating the inputs viewed with a dim of 1 inserted at `axis`
        views = em.fresh("views")
        em.line(f"rt_tensor {views}[{len(op.inputs)}];")
        for i, t in enumerate(op.inputs):
            em.line(f"{views}[{i}] = {em.var(t)}; {views}[{i}].ndim = {rank};")
            for d in range(rank):
                src = "1" if d == axis else em.dim(t, d if d < axis else d - 1)
                em.line(f"{views}[{i}].shape[{d}] = {src};")
            em.line(f"{arr}[{i}] = &{views}[{i}];")
    em.line(f"rt_concat({arr}, {len(op.inputs)}, {axis}, &{em.var(out)});")
    return True


@emitter("StridedSlice")
def emit_slice(em, op):
    x, out = op.inputs[0], op.outputs[0]
    if not native_dtype(x.dtype) or x.shape.rank is None or out.shape.rank is None:
        return False
    dynamic = op.inputs[1:]
    rank = x.shape.rank
    spec = op.attrs["spec"]
    consumed = sum(1 for item in spec if item[0] in ("i", "s"))
    items = []
    for item in spec:
        if item[0] == "e":
            items.extend([("s", None, None, None)] * (rank - consumed))
        elif item[0] != "n":
            items.append(item)
    items.extend([("s", None, None, None)] * (rank - len(items)))

    def value(v, default):
        if v is None:
            return default
        if isinstance(v, tuple):
            return f"(int64_t){em.ptr(dynamic[v[1]])}[0]"
        return str(v)
    b, s, c = em.fresh("begin"), em.fresh("step"), em.fresh("count")
    em.line(f"int64_t {b}[{max(rank, 1)}], {s}[{max(rank, 1)}], {c}[{max(rank, 1)}];")
    for d, item in enumerate(items):
        n = em.dim(x, d)
        if item[0] == "i":
            em.line(f"{{ int64_t i = {value(item[1], '0')}; if (i < 0) i += {n}; if (i < 0 || i >= {n}) "
                    + em.fail(f"StridedSlice ({op.name}): index %lld is out of bounds for dimension {d} of size %lld",
                              value(item[1], '0'), n) + f" {b}[{d}] = i; {s}[{d}] = 1; {c}[{d}] = 1; }}")
        else:
            step = value(item[3], "1")
            em.line(f"{{ int64_t n = {n}, st = {step}; if (st == 0) "
                    + em.fail(f"StridedSlice ({op.name}): slice step cannot be zero") +
                    f" int64_t lo, hi;"
                    f" if (st > 0) {{ lo = {value(item[1], '0')}; hi = {value(item[2], 'n')}; }}"
                    f" else {{ lo = {value(item[1], 'n - 1')}; hi = {value(item[2], '-n - 1')}; }}"
                    f" if (lo < 0) lo += n; if (hi < 0) hi += n;"
                    f" if (st > 0) {{ lo = lo < 0 ? 0 : (lo > n ? n : lo); hi = hi < 0 ? 0 : (hi > n ? n : hi);"
                    f" {c}[{d}] = hi > lo ? (hi - lo + st - 1) / st : 0; }}"
                    f" else {{ lo = lo < -1 ? -1 : (lo > n - 1 ? n - 1 : lo);"
                    f" hi = hi < -1 ? -1 : (hi > n - 1 ? n - 1 : hi);"
                    f" {c}[{d}] = lo > hi ? (lo - hi - st - 1) / -st : 0; }}"
                    f" {b}[{d}] = {c}[{d}] ? lo : 0; {s}[{d}] = st; }}")
    # output dims: kept (sliced) dims in order, with newaxis inserted
    dims, d = [], 0
    for item in spec:
        if item[0] == "n":
            dims.append("1")
        elif item[0] == "e":
            for _ in range(rank - consumed):
                dims.append(f"{c}[{d}]")
                d += 1
        elif item[0] == "i":
            d += 1
        else:
            dims.append(f"{c}[{d}]")
            d += 1
    while d < rank:
        dims.append(f"{c}[{d}]")
        d += 1
    em.alloc(out, dims)
    em.line(f"rt_strided_copy(&{em.var(x)}, {b}, {s}, {c}, &{em.var(out)});")
    return True


# ---------------------------------------------------------------------------
# Variables: their storage follows the function's inputs (in[num_inputs + k]).

@emitter("ReadVariableOp")
def emit_read_variable(em, op):
    out = op.outputs[0]
    if not native_dtype(out.dtype):
        return False
    k = em.var_index(op.attrs["variable"])
    copy_into(em, out, f"in[{len(em.graph.inputs)} + {k}]")
    return True


@emitter("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")
def emit_assign(em, op):
    value, out = op.inputs[0], op.outputs[0]
    if not native_dtype(out.dtype):
        return False
    k = em.var_index(op.attrs["variable"])
    store = f"in[{len(em.graph.inputs)} + {k}]"
    ctype = out.dtype.c_type
    em.line(f"if (!rt_same_shape(&{store}, &{em.var(value)}) && rt_numel(&{em.var(value)}) != 1) "
            + em.fail(f"{op.type}: the value's shape does not match the variable's"))
    sym = {"AssignVariableOp": "", "AssignAddVariableOp": "+", "AssignSubVariableOp": "-"}[op.type]
    idx = "0" if value.shape.is_fully_defined() and value.shape.num_elements() == 1 else \
        f"(rt_numel(&{em.var(value)}) == 1 ? 0 : k)"
    rhs = f"{em.ptr(value)}[{idx}]"
    expr = rhs if not sym else f"({ctype})(ps[k] {sym} {rhs})"
    em.line(f"{{ {ctype} *ps = ({ctype} *){store}.data; for (int64_t k = 0, n = rt_numel(&{store}); k < n; k++) "
            f"ps[k] = {expr}; }}")
    copy_into(em, out, store)
    return True


# ---------------------------------------------------------------------------
# Control flow: subgraphs emitted inline as C control flow.

def _bind_inputs(em, sub: Graph, c_names: list[str]) -> None:
    for placeholder, c_name in zip(sub.all_inputs(), c_names):
        em.alias(placeholder, c_name)


def _scope_results(em, sub: Graph, targets: list[str], mark: str) -> None:
    """Copy the subgraph's outputs into the target tensors, then free the scope's temporaries."""
    keep = []
    for target, t in zip(targets, sub.outputs):
        copy_value(em, target, em.var(t), t.dtype)
        if native_dtype(t.dtype):
            keep.append(f"{target}.data")
    keep_arr = em.fresh("keep")
    em.line(f"void *{keep_arr}[{max(len(keep), 1)}] = {{{', '.join(keep) or 'NULL'}}};")
    em.line(f"rt_release(ctx, {mark}, {keep_arr}, {len(keep)});")


@emitter("If")
def emit_if(em, op):
    pred = op.inputs[0]
    outs = [em.var(t) for t in op.outputs]
    inputs = [em.var(t) for t in op.inputs[1:]]
    mark = em.fresh("mark")
    em.line(f"int64_t {mark} = rt_mark(ctx);")
    from transpiler.codegen import emitters
    for head, key in ((f"if ({em.ptr(pred)}[0])", "then_branch"), ("else", "else_branch")):
        sub = op.attrs[key]
        with em.block(head):
            _bind_inputs(em, sub, inputs)
            em.emit_graph(sub, emitters)
            _scope_results(em, sub, outs, mark)
    return True


@emitter("While")
def emit_while(em, op):
    from transpiler.codegen import emitters
    n_vars = op.attrs["num_loop_vars"]
    cond, body = op.attrs["cond"], op.attrs["body"]
    entry = op.inputs[:n_vars]
    captures = [em.var(t) for t in op.inputs[n_vars:n_vars + len(body.captures)]]
    lvs = [em.var(t) for t in op.outputs]
    for lv, t in zip(lvs, entry):
        copy_value(em, lv, em.var(t), t.dtype)
    limit = None
    if op.attrs["has_max_iter"]:
        limit = f"{em.ptr(op.inputs[-1])}[0]"
    counter = em.fresh("iter")
    em.line(f"int64_t {counter} = 0;")
    with em.block("for (;;)"):
        if limit is not None:
            em.line(f"if ({counter} >= {limit}) break;")
        mark = em.fresh("mark")
        em.line(f"int64_t {mark} = rt_mark(ctx);")
        _bind_inputs(em, cond, lvs + captures)
        em.emit_graph(cond, emitters)
        em.line(f"if (!{em.ptr(cond.outputs[0])}[0]) {{ rt_release(ctx, {mark}, NULL, 0); break; }}")
        _bind_inputs(em, body, lvs + captures)
        em.emit_graph(body, emitters)
        new = [em.fresh("next") for _ in lvs]
        for name in new:
            em.line(f"rt_tensor {name};")
        _scope_results(em, body, new, mark)
        for lv, name, t in zip(lvs, new, op.outputs):
            if native_dtype(t.dtype):
                em.line(f"rt_drop(ctx, {lv}.data);")
            em.line(f"{lv} = {name};")
        em.line(f"{counter}++;")
    return True
