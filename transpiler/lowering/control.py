"""``If`` and ``While``: subgraphs lowered inline as C control flow.

Loop variables and branch results of one element live in C locals (a loop over 0-d values runs in
registers). Tensors live in buffers kept across iterations: a ``While`` loop variable has two, the
current value and the next one, which the body's kernels write directly; at the end of an iteration
they swap (no copy, no allocation once the buffers are big enough). A branch writes its results into
the ``If``'s buffers the same way. Results of Python callbacks made inside are freed at the end of
each iteration or branch.
"""
from __future__ import annotations

from runtime import dtypes
from transpiler.lowering.ir import (
    CTX,
    NULL,
    Alloc,
    Assign,
    Break,
    Call,
    Comment,
    Compare,
    Declare,
    Expr,
    If,
    Loop,
    Not,
    Poly,
    Ptr,
    Swap,
    Text,
    Var,
    product,
)
from transpiler.lowering.kernels import Elements, elementwise
from transpiler.lowering.values import Array, Obj, Scalar


def _one_element(lw, t) -> bool:
    return t.dtype.c_type is not None and id(t) in lw.dims and product(lw.dims[id(t)]).const == 1


def _slot(lw, t, base: str, on_stack: bool = False):
    """The value an If/While result lives in, and its (pointer, capacity) when it is an array."""
    if t.dtype is dtypes.variant and lw.native_lists:
        return Obj(Var(lw.local("rt_list *", base, NULL), "rt_list *"), t.dtype, "rt_list *"), None
    if t.dtype.c_type is None or t.shape.rank is None or id(t) not in lw.dims:
        return Obj(Var(lw.local("rt_tensor", base), "rt_tensor"), t.dtype), None
    dims = lw.dims[id(t)]
    if product(dims).const == 1:
        name = lw.local(t.dtype.c_type, base)
        return Scalar(Var(name, t.dtype.c_type), t.dtype, dims), None
    buffer = _buffer(lw, t.dtype, dims, base, on_stack)
    return Array.dense(buffer[0], t.dtype, dims, "stack" if on_stack else "reserve"), buffer


def _buffer(lw, dtype, dims, base: str, on_stack: bool) -> tuple[str, str | None]:
    """(pointer, capacity in bytes) of a buffer kept across iterations, grown when too small; ``on_stack``
    (static ``dims`` only): a local array of exactly that size, which never grows (no capacity)."""
    if on_stack:
        buf = lw.local(dtype.c_type, f"{base}buf", size=max(product(dims).const, 1))
        return lw.local(f"{dtype.c_type} *", base, Ptr(buf)), None
    return lw.pointer(dtype.c_type, base), lw.local("int64_t", "cap", Poly.of(0))


def _scalar_of(lw, t) -> Expr:
    return Elements(lw).of(t, (0,) * len(lw.dims[id(t)]))


def _produced_inside(lw, sub, t) -> bool:
    return t.op.graph is sub and t.op.type not in ("Placeholder", "Const")


def _put(lw, t, slot, buffer) -> None:
    """Make ``slot`` (an If/While result) hold subgraph result ``t``; its dims symbols follow ``t``'s."""
    if isinstance(slot, Obj):
        lw.emit(Assign(slot.name, lw.values[id(t)].ref))
        return
    if isinstance(slot, Scalar):
        lw.emit(Assign(slot.expr.name, _scalar_of(lw, t)))
        return
    dims = lw.dims[id(t)]
    value = lw.values.get(id(t))
    if not (isinstance(value, Array) and value.ptr == buffer[0]):
        if buffer[1] is not None:
            lw.emit(Alloc(buffer[0], t.dtype.c_type, product(dims), "reserve", capacity=buffer[1]))
        target = Array.dense(buffer[0], t.dtype, dims, "reserve")
        lw.emit(*elementwise(lw, [target], dims, lambda el, index: [el.of(t, index)]))
    for mine, theirs in zip(slot.dims, dims):
        if mine.const is None and mine != theirs:
            lw.emit(Assign(str(mine), theirs))


def _drops(lw, names: list) -> None:
    for ptr in names:
        lw.emit(_drop_stmt(ptr))


def emit_if(lw, op) -> bool:
    pred = op.inputs[0]
    if not _one_element(lw, pred):
        return False
    slots = [_slot(lw, t, "ifv") for t in op.outputs]
    cond = _scalar_of(lw, pred)
    branches = []
    for key in ("then_branch", "else_branch"):
        sub = op.attrs[key]
        block: list = []
        with lw.block(block):
            saved_depth, saved_drops, saved_dests = lw.depth, lw.drops, dict(lw.dests)
            lw.depth += 1
            lw.drops = []
            for t, (slot, buffer) in zip(sub.outputs, slots):
                if buffer is not None and _produced_inside(lw, sub, t) and id(t) not in lw.dests:
                    lw.dests[id(t)] = buffer
            bindings = {id(p): lw.values[id(x)] for p, x in zip(sub.all_inputs(), op.inputs[1:])}
            for p, x in zip(sub.all_inputs(), op.inputs[1:]):
                if id(x) in lw.dims:
                    lw.dims[id(p)] = lw.dims[id(x)]
            lw.lower_graph(sub, bindings)
            for t, (slot, buffer) in zip(sub.outputs, slots):
                _put(lw, t, slot, buffer)
            _drops(lw, lw.drops)
            lw.depth, lw.drops, lw.dests = saved_depth, saved_drops, saved_dests
        branches.append(block)
    lw.emit(If(cond, branches[0], branches[1]))
    for t, (slot, _) in zip(op.outputs, slots):
        lw.values[id(t)] = slot
    return True


def emit_while(lw, op, on_stack: bool = False) -> bool:
    """The loop as written; ``on_stack``: array loop variables (all of static sizes) in local arrays (a tile's,
    ``tiles.py``)."""
    n = op.attrs["num_loop_vars"]
    cond_g, body = op.attrs["cond"], op.attrs["body"]
    entry = op.inputs[:n]
    captures = op.inputs[n:n + len(body.captures)]
    slots = [_slot(lw, t, "lv", on_stack) for t in op.outputs]
    nexts = []
    for t, (slot, buffer) in zip(op.outputs, slots):
        if buffer is None:
            nexts.append(None)
        else:
            nexts.append(_buffer(lw, t.dtype, slot.dims, "nx", on_stack))
    taken: set[str] = set()
    for x, t, (slot, buffer) in zip(entry, op.outputs, slots):
        value = lw.values.get(id(x))
        if isinstance(slot, Obj) and slot.ctype == "rt_list *" and value.name in taken:
            # one list passed to several loop variables: each writes its own copy
            lw.emit(Call("rt_list_copy", [CTX, value.ref, Text(op.type), Text(op.where())], checked=True,
                         result=slot.name))
        else:
            _put(lw, x, slot, buffer)
        if isinstance(value, Obj):
            taken.add(value.name)
        lw.values[id(t)] = slot
    counter = lw.local("int64_t", "iter", Poly.of(0))
    lw.emit(Assign(counter, Poly.of(0)))
    limit = _scalar_of(lw, op.inputs[-1]) if op.attrs["has_max_iter"] else None
    loop: list = []
    with lw.block(loop):
        saved_depth, saved_drops, saved_dests = lw.depth, lw.drops, dict(lw.dests)
        lw.depth += 1
        lw.drops = []
        if limit is not None:
            lw.emit(If(Compare(">=", Poly.sym(counter), limit), [Break()]))
        values = [slot for slot, _ in slots] + [lw.values[id(c)] for c in captures]
        _bind(lw, cond_g, values, list(op.outputs) + list(captures))
        lw.lower_graph(cond_g, {id(p): v for p, v in zip(cond_g.all_inputs(), values)})
        done = Not(_scalar_of(lw, cond_g.outputs[0]))
        lw.emit(If(done, [_drop_stmt(name) for name in lw.drops] + [Break()]))
        _drops(lw, lw.drops)
        lw.drops = []
        _bind(lw, body, values, list(op.outputs) + list(captures))
        placeholders = body.all_inputs()
        for k, t in enumerate(body.outputs):
            if nexts[k] is not None and _produced_inside(lw, body, t) and id(t) not in lw.dests:
                lw.dests[id(t)] = nexts[k]
        lw.lower_graph(body, {id(p): v for p, v in zip(placeholders, values)})
        _prove_invariant_dims(lw, op, body)
        lw.emit(Comment("next values of the loop variables"))
        updates = []
        for k, (t, (slot, buffer)) in enumerate(zip(body.outputs, slots)):
            if t is placeholders[k]:
                continue                      # unchanged
            if isinstance(slot, Scalar):
                tmp = lw.fresh("next")
                lw.emit(Declare(tmp, slot.expr.ctype, _scalar_of(lw, t)))
                updates.append(Assign(slot.expr.name, Var(tmp, slot.expr.ctype)))
            elif isinstance(slot, Obj):
                tmp = lw.fresh("next")
                lw.emit(Declare(tmp, slot.ctype, lw.values[id(t)].ref))
                updates.append(Assign(slot.name, Var(tmp, slot.ctype)))
            else:
                nx = Array.dense(nexts[k][0], t.dtype, slot.dims, "reserve")
                _put(lw, t, nx, nexts[k])
                ptr, cap = buffer
                updates.append(Swap(ptr, nexts[k][0], f"{t.dtype.c_type} *"))
                if cap is not None:
                    updates.append(Swap(cap, nexts[k][1], "int64_t"))
        lw.emit(*updates)
        _drops(lw, lw.drops)
        lw.emit(Assign(counter, Poly.sym(counter) + 1))
        lw.depth, lw.drops, lw.dests = saved_depth, saved_drops, saved_dests
    lw.emit(Loop(loop))
    for t, (slot, _) in zip(op.outputs, slots):
        lw.values[id(t)] = slot
    return True


def _prove_invariant_dims(lw, op, body) -> None:
    """The induction step of the loop dims assumed invariant (``shapes._while``): the body, lowered with each
    loop variable of the dims it entered with, gives its next value the same dims. While discovering, a dim
    for which it does not is marked varying (the next round gives it a symbol of its own)."""
    for k, d in sorted(lw.hypotheses.get(id(op), ())):
        after = lw.dims.get(id(body.outputs[k]))
        if after is not None and lw.same_dim(after[d], lw.dims[id(op.outputs[k])][d]):
            continue
        if not lw.assume.learning:
            raise AssertionError(f"{op.name}: loop variable {k}'s dim {d} was assumed invariant and is not")
        lw.assume.vary((id(op), k, d))


def _bind(lw, sub, values, sources) -> None:
    for p, v, src in zip(sub.all_inputs(), values, sources):
        if isinstance(v, (Array, Scalar)):
            lw.dims[id(p)] = v.dims
        elif id(src) in lw.dims:
            lw.dims[id(p)] = lw.dims[id(src)]


def _drop_stmt(ptr: str):
    return Call("rt_drop", [CTX, Ptr(ptr)])
