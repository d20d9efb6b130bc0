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
from transpiler.lowering.ir import Assign, Call, Check, Poly, product, render_expr
from transpiler.lowering.kernels import Elements
from transpiler.lowering.nn import dense_ptr, output_ptr
from transpiler.lowering.shapes import check_count


def _value(lw, t, *index) -> str:
    """C text of an element of ``t`` (stored, or computed where it is read)."""
    return render_expr(Elements(lw).of(t, index))


def _int(lw, t, *index) -> str:
    return f"((int64_t){_value(lw, t, *index)})"


def _bind(lw, op, dim: Poly, value: str, what: str) -> None:
    """Give the output dim ``dim`` its run-time ``value``: assign a fresh symbol, check a known size."""
    if dim.const is None:
        lw.emit(Assign(str(dim), value))
    else:
        lw.emit(Check(f"({value}) != {dim}", lw.message(op, f"{what} is %lld, not {dim}"), [value]))


def _bind_shape(lw, op, shape_t, out) -> None:
    """The dims of ``out`` from the values of the shape vector ``shape_t`` (non-negative, not overflowing)."""
    dims = lw.dims[id(out)]
    if lw.const_value(shape_t) is not None:
        return          # the graph's static dims are its values
    for d, dim in enumerate(dims):
        v = _int(lw, shape_t, d)
        lw.emit(Check(f"{v} < 0", lw.message(op, f"dimensions must be non-negative, got %lld at dimension {d}"),
                      [v]))
        _bind(lw, op, dim, v, f"dimension {d}")
    check_count(lw, op, dims)


# ---------------------------------------------------------------------------
# Random numbers (runtime/ops/random_ops.py specifies the stream; rt_random.h computes it).

_FLOATS = ("float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8")
_STATELESS = ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2")
_FILL = {"RandomUniform": "uniform", "StatelessRandomUniformV2": "uniform", "RandomStandardNormal": "normal",
         "StatelessRandomNormalV2": "normal", "TruncatedNormal": "truncated", "StatelessTruncatedNormalV2": "truncated"}


def _key_and_call(lw, op) -> tuple[str, str]:
    """C expressions of the key and the call count of this run of a random op."""
    if op.type in _STATELESS:
        seed, counter = op.inputs[1], op.inputs[2]
        key = f"rt_random_key({_int(lw, seed, 0)}, {_int(lw, seed, 1)})"
        return key, f"((uint64_t){_int(lw, counter)})"
    seed, seed2 = op.attrs["seed"], op.attrs["seed2"]
    if seed is None:
        key = f"rt_random_fresh_key(&{lw.local('static uint64_t', 'rng_key', '0')})"
    else:
        key = f"{mix(seed, seed2)}ull"
    calls = lw.local("static uint64_t", "rng_calls", "0")
    call = lw.local("uint64_t", "rng_call")
    lw.emit(Assign(call, f"rt_random_next_call(&{calls})"))
    return key, call


def emit_random(lw, op) -> bool:
    out = op.outputs[0]
    kind = _FILL[op.type]
    name = out.dtype.name
    if id(out) not in lw.dims or not (name in _FLOATS or kind == "uniform" and name in _INTS):
        return False
    _bind_shape(lw, op, op.inputs[0], out)
    bounds = []
    if kind == "uniform":
        lo, hi = op.inputs[-2:]
        bounds = [_value(lw, lo), _value(lw, hi)]
        if out.dtype.is_integer:
            bounds = [f"((int64_t){b})" for b in bounds]
            lw.emit(Check(f"!({bounds[0]} < {bounds[1]})", lw.message(op, "need minval < maxval, got %lld and %lld"),
                          bounds))
    key, call = _key_and_call(lw, op)
    ptr, after = output_ptr(lw, out)
    n = product(lw.dims[id(out)])
    lw.emit(Call(f"rt_random_{kind}_{name}", [ptr, str(n), key, call, *bounds, "ctx->num_threads"]))
    lw.emit(*after)
    return True


def emit_categorical(lw, op) -> bool:
    logits, num = op.inputs
    out = op.outputs[0]
    if id(out) not in lw.dims or logits.dtype.name not in _FLOATS or id(logits) not in lw.dims:
        return False
    rows, classes = lw.dims[id(logits)]
    samples = _int(lw, num)
    lw.emit(Check(f"{samples} < 0", lw.message(op, "num_samples must be non-negative, got %lld"), [samples]))
    out_rows, out_samples = lw.dims[id(out)]
    _bind(lw, op, out_rows, str(rows), "the batch size")
    _bind(lw, op, out_samples, samples, "num_samples")
    lw.emit(Check(f"({classes}) == 0 && ({rows}) > 0 && {samples} > 0",
                  lw.message(op, "logits must have at least one class")))
    x = dense_ptr(lw, logits)
    key, call = _key_and_call(lw, op)
    ptr, after = output_ptr(lw, out)
    lw.emit(Call(f"rt_random_categorical_{logits.dtype.name}_{out.dtype.name}",
                 [x, str(rows), str(classes), str(out_samples), ptr, key, call, "ctx->num_threads"]))
    lw.emit(*after)
    return True


EMITTERS = {
    **{op_type: emit_random for op_type in _FILL},
    "Multinomial": emit_categorical,
}
