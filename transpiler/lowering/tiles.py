"""A tensor ``while`` of elementwise updates runs tile by tile: each tile of its arrays runs the whole loop.

``while i < 100: zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci`` lowered as written sweeps every array
once per iteration: the arrays stream through the caches 100 times and each iteration pays a pass's (and
a parallel region's) start. When the loop's condition reads only one-element values and its body computes
each array element only from the same element of the loop's arrays (elementwise ops, one-element values,
arrays of the loop's shape), element ``k``'s orbit depends on nothing else, so the loops can be
interchanged: for each tile of ``TILE_BYTES`` of the arrays, run the whole loop on the tile, kept on the
stack, then store it. The tiles run on threads; each computes the same one-element recurrence (the trip
count) itself. The last, partial tile runs after them on one thread, and gives the loop's one-element
results (it runs even when it is empty). Every element sees the same operations in the same order as
the loop written out, so the results are the same bits.
"""
from __future__ import annotations

from runtime.executor import needed_ops
from transpiler.lowering import control
from transpiler.lowering.ir import (
    NUM_THREADS,
    Alloc,
    And,
    Arith,
    Assign,
    Call,
    Callback,
    Check,
    Comment,
    Compare,
    Fail,
    For,
    Lit,
    Named,
    Poly,
    product,
    walk_stmts,
)
from transpiler.lowering.kernels import elementwise
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Array, Scalar, contiguous_strides

TILE_BYTES = 256          # per array: four AVX-512 vectors, enough independent chains to hide latency
PARALLEL_DIVISOR = 16     # tiles go to threads from RT_PARALLEL_MIN / 16 elements: each runs a whole loop
_PASSIVE = ("Identity", "Const")


def emit_while(cx, op) -> list | None:
    """The ``While`` emitter: tile by tile when the loop qualifies, else as written (``control``)."""
    tiled = emit_tiled_while(cx, op)
    return tiled if tiled is not None else control.emit_while(cx, op)


def emit_tiled_while(cx, op) -> list | None:
    """Lower ``op`` tile by tile when it qualifies (see the module docstring); None to lower it as written."""
    shape = _lanes(cx, op)
    if shape is None:
        return None
    dims, lanes, lane_captures = shape
    n = op.attrs["num_loop_vars"]
    body = op.attrs["body"]
    entry, captures = op.inputs[:n], op.inputs[n:n + len(body.captures)]
    tile = max(1, TILE_BYTES // max(op.outputs[lanes[0]].dtype.size, 1))
    count = product(dims)
    out = [Comment(f"{op.name} = While, tile by tile ({tile} elements)")]
    results = {}
    for k in lanes:
        results[k], allocs = storage(cx, op.outputs[k])
        out += allocs
    tiles = cx.local("int64_t", "ntiles", Poly.of(0))
    out.append(Assign(tiles, Arith("/", count, Poly.of(tile), "int64_t")))
    c = cx.fresh("c")
    rest_start = Poly.sym(tiles) * tile
    full = _tile(cx, op, entry, captures, lanes, lane_captures, results, Poly.sym(c) * tile, Poly.of(tile),
                 private=True)
    # a statement that can fail (a run-time check: an integer division by zero) cannot leave a parallel loop
    threshold = Arith("/", Named("parallel_min"), Poly.of(PARALLEL_DIVISOR), "int64_t")
    parallel = None if _may_fail(full) else \
        And((Compare(">=", count, threshold), Compare(">", NUM_THREADS, Lit(1, "int"))))
    out.append(For(c, Poly.of(0), Poly.sym(tiles), full, parallel=parallel))
    out += _tile(cx, op, entry, captures, lanes, lane_captures, results, rest_start, count - rest_start,
                 private=False)
    for k in lanes:
        cx.values[id(op.outputs[k])] = results[k]
        cx.dims[id(op.outputs[k])] = dims
    return out


def _tile(cx, op, entry, captures, lanes, lane_captures, results, start: Poly, size: Poly, private: bool) -> list:
    """The loop over one tile of ``size`` elements from flat element ``start``, then its stores into
    ``results``; its locals are declared in the block when ``private`` (each thread has its own)."""
    rank = len(cx.dims[id(op.outputs[lanes[0]])])
    tile_dims = (Poly.of(1),) * (rank - 1) + (size,)
    saved = {}

    def bind(t, tiled: bool):
        """``t`` as its tile (a view of its array), or, ``tiled`` False, a result of the tile's loop."""
        saved.setdefault(id(t), (cx.values.get(id(t)), cx.dims.get(id(t))))
        original = saved[id(t)][0]
        if tiled:
            cx.values[id(t)] = _view(original, tile_dims, start)
        else:
            cx.values.pop(id(t), None)
        cx.dims[id(t)] = tile_dims

    for k in lanes:
        bind(entry[k], True)
        bind(op.outputs[k], False)
    for k in lane_captures:
        bind(captures[k], True)
    outer_locals = cx.storage.locals
    if private:
        cx.storage.locals = []
    block = control.emit_while(cx, op, on_stack=private)
    for k in lanes:
        slot = cx.values[id(op.outputs[k])]
        target = _view(results[k], tile_dims, start)
        block += elementwise(cx, [target], tile_dims, lambda el, index, slot=slot: [slot.load(index)])
    if private:
        block = cx.storage.locals + block
        cx.storage.locals = outer_locals
    for key, (value, dims) in saved.items():
        if value is None:
            cx.values.pop(key, None)
        else:
            cx.values[key] = value
        if dims is None:
            cx.dims.pop(key, None)
        else:
            cx.dims[key] = dims
    return block


def _may_fail(block: list) -> bool:
    return any(isinstance(s, (Alloc, Check, Fail, Callback)) or (isinstance(s, Call) and s.checked)
               for s in walk_stmts(block))


def _view(value: Array, dims: tuple, start: Poly) -> Array:
    """Elements ``start ..`` of a contiguous array, as a dense array of ``dims``."""
    return Array(value.ptr, value.dtype, dims, contiguous_strides(dims), value.offset + start, value.storage)


def _lanes(cx, op):
    """(the loop's array dims, loop variables that are arrays, captures that are arrays) when ``op`` can run
    tile by tile, else None."""
    if cx.scope.plan is None or not cx.options.fuse:
        return None
    n = op.attrs["num_loop_vars"]
    cond, body = op.attrs["cond"], op.attrs["body"]
    entry, captures = op.inputs[:n], op.inputs[n:n + len(body.captures)]
    dims, lanes, lane_captures = None, [], []
    for k, (x, t) in enumerate(zip(entry, op.outputs)):
        kind = _kind(cx, x, t)
        if kind is None:
            return None
        if kind == "array":
            if dims is None:
                dims = cx.dims[id(t)]
            elif cx.dims[id(t)] != dims:
                return None
            lanes.append(k)
    if dims is None:
        return None
    for k, x in enumerate(captures):
        value = cx.values.get(id(x))
        if isinstance(value, Scalar) or (id(x) in cx.dims and product(cx.dims[id(x)]).const == 1):
            continue
        if not isinstance(value, Array) or cx.dims.get(id(x)) != dims or not value.contiguous:
            return None
        lane_captures.append(k)
    arrays_in = [k for k in lanes] + [n + k for k in lane_captures]
    if not _elementwise_graph(cond, set(arrays_in), []) or \
            not _elementwise_graph(body, set(arrays_in), [k in lanes for k in range(n)]):
        return None
    return dims, lanes, lane_captures


def _kind(cx, x, t) -> str | None:
    """"scalar" for a one-element loop variable, "array" for one of a fixed shape held in memory, else None."""
    if t.dtype.c_type is None or id(t) not in cx.dims or id(x) not in cx.dims:
        return None
    dims = cx.dims[id(t)]
    if product(dims).const == 1:
        return "scalar"
    value = cx.values.get(id(x))
    if not isinstance(value, Array) or not value.contiguous or cx.dims[id(x)] != dims:
        return None
    return "array"


def _elementwise_graph(graph, arrays: set, outputs_are_arrays: list) -> bool:
    """Whether every op of ``graph`` computes an element of its result from the same element of its array
    inputs (placeholders at ``arrays`` positions) and one-element values, ``graph``'s outputs are arrays
    exactly where ``outputs_are_arrays`` says (a condition: a one-element value), and nothing has effects."""
    placeholders = graph.all_inputs()
    is_array = {id(p): k in arrays for k, p in enumerate(placeholders)}
    needed = needed_ops(graph)
    for op in graph.operations:
        if id(op) not in needed or op.type == "Placeholder":
            continue
        opdef = op.opdef
        if op.subgraphs() or opdef.stateful or opdef.side_effect:
            return False
        from_array = any(is_array.get(id(t), False) for t in op.inputs)
        if op.type == "Const":
            if op.outputs[0].shape.num_elements() != 1:
                return False
        elif not (opdef.elementwise or op.type in _PASSIVE):
            return False
        for t in op.outputs:
            is_array[id(t)] = from_array
    outs = [is_array.get(id(t), False) for t in graph.outputs]
    if not outputs_are_arrays:
        return outs == [False]
    return outs == outputs_are_arrays
