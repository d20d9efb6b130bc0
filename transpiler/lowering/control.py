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


def _one_element(cx, t) -> bool:
    return t.dtype.c_type is not None and id(t) in cx.dims and product(cx.dims[id(t)]).const == 1


def _slot(cx, t, base: str, on_stack: bool = False):
    """The value an If/While result lives in, and its (pointer, capacity) when it is an array."""
    if t.dtype is dtypes.variant and cx.native_lists:
        return Obj(Var(cx.local("rt_list *", base, NULL), "rt_list *"), t.dtype, "rt_list *"), None
    if t.dtype.c_type is None or t.shape.rank is None or id(t) not in cx.dims:
        return Obj(Var(cx.local("rt_tensor", base), "rt_tensor"), t.dtype), None
    dims = cx.dims[id(t)]
    if product(dims).const == 1:
        name = cx.local(t.dtype.c_type, base)
        return Scalar(Var(name, t.dtype.c_type), t.dtype, dims), None
    buffer = _buffer(cx, t.dtype, dims, base, on_stack)
    return Array.dense(buffer[0], t.dtype, dims, "stack" if on_stack else "reserve"), buffer


def _buffer(cx, dtype, dims, base: str, on_stack: bool) -> tuple[str, str | None]:
    """(pointer, capacity in bytes) of a buffer kept across iterations, grown when too small; ``on_stack``
    (static ``dims`` only): a local array of exactly that size, which never grows (no capacity)."""
    if on_stack:
        buf = cx.local(dtype.c_type, f"{base}buf", size=max(product(dims).const, 1))
        return cx.local(f"{dtype.c_type} *", base, Ptr(buf)), None
    return cx.pointer(dtype.c_type, base), cx.local("int64_t", "cap", Poly.of(0))


def _scalar_of(cx, t) -> Expr:
    return Elements(cx).of(t, (0,) * len(cx.dims[id(t)]))


def _produced_inside(cx, sub, t) -> bool:
    return t.op.graph is sub and t.op.type not in ("Placeholder", "Const")


def _put(cx, t, slot, buffer) -> list:
    """Make ``slot`` (an If/While result) hold subgraph result ``t``; its dims symbols follow ``t``'s."""
    if isinstance(slot, Obj):
        return [Assign(slot.name, cx.values[id(t)].ref)]
    if isinstance(slot, Scalar):
        return [Assign(slot.expr.name, _scalar_of(cx, t))]
    dims = cx.dims[id(t)]
    value = cx.values.get(id(t))
    out = []
    if not (isinstance(value, Array) and value.ptr == buffer[0]):
        if buffer[1] is not None:
            out.append(Alloc(buffer[0], t.dtype.c_type, product(dims), "reserve", capacity=buffer[1]))
        target = Array.dense(buffer[0], t.dtype, dims, "reserve")
        out += elementwise(cx, [target], dims, lambda el, index: [el.of(t, index)])
    for mine, theirs in zip(slot.dims, dims):
        if mine.const is None and mine != theirs:
            out.append(Assign(str(mine), theirs))
    return out


def _drops(names: list) -> list:
    return [_drop_stmt(ptr) for ptr in names]


def emit_if(cx, op) -> list | None:
    pred = op.inputs[0]
    if not _one_element(cx, pred):
        return None
    slots = [_slot(cx, t, "ifv") for t in op.outputs]
    cond = _scalar_of(cx, pred)
    branches = []
    for key in ("then_branch", "else_branch"):
        sub = op.attrs[key]
        with cx.enter(depth=cx.scope.depth + 1, drops=[], dests=dict(cx.scope.dests)) as scope:
            for t, (slot, buffer) in zip(sub.outputs, slots):
                if buffer is not None and _produced_inside(cx, sub, t) and id(t) not in scope.dests:
                    scope.dests[id(t)] = buffer
            bindings = {id(p): cx.values[id(x)] for p, x in zip(sub.all_inputs(), op.inputs[1:])}
            for p, x in zip(sub.all_inputs(), op.inputs[1:]):
                if id(x) in cx.dims:
                    cx.dims[id(p)] = cx.dims[id(x)]
            block = cx.lower_graph(sub, bindings)
            for t, (slot, buffer) in zip(sub.outputs, slots):
                block += _put(cx, t, slot, buffer)
            block += _drops(scope.drops)
        branches.append(block)
    for t, (slot, _) in zip(op.outputs, slots):
        cx.values[id(t)] = slot
    return [If(cond, branches[0], branches[1])]


def emit_while(cx, op, on_stack: bool = False) -> list | None:
    """The loop as written; ``on_stack``: array loop variables (all of static sizes) in local arrays (a tile's,
    ``tiles.py``)."""
    n = op.attrs["num_loop_vars"]
    cond_g, body = op.attrs["cond"], op.attrs["body"]
    entry = op.inputs[:n]
    captures = op.inputs[n:n + len(body.captures)]
    slots = [_slot(cx, t, "lv", on_stack) for t in op.outputs]
    nexts = []
    for t, (slot, buffer) in zip(op.outputs, slots):
        if buffer is None:
            nexts.append(None)
        else:
            nexts.append(_buffer(cx, t.dtype, slot.dims, "nx", on_stack))
    out = []
    taken: set[str] = set()
    for x, t, (slot, buffer) in zip(entry, op.outputs, slots):
        value = cx.values.get(id(x))
        if isinstance(slot, Obj) and slot.ctype == "rt_list *" and value.name in taken:
            # one list passed to several loop variables: each writes its own copy
            out.append(Call("rt_list_copy", [CTX, value.ref, Text(op.type), Text(op.where())], checked=True,
                            result=slot.name))
        else:
            out += _put(cx, x, slot, buffer)
        if isinstance(value, Obj):
            taken.add(value.name)
        cx.values[id(t)] = slot
    counter = cx.local("int64_t", "iter", Poly.of(0))
    out.append(Assign(counter, Poly.of(0)))
    limit = _scalar_of(cx, op.inputs[-1]) if op.attrs["has_max_iter"] else None
    loop: list = []
    with cx.enter(depth=cx.scope.depth + 1, drops=[], dests=dict(cx.scope.dests)) as scope:
        if limit is not None:
            loop.append(If(Compare(">=", Poly.sym(counter), limit), [Break()]))
        values = [slot for slot, _ in slots] + [cx.values[id(c)] for c in captures]
        _bind(cx, cond_g, values, list(op.outputs) + list(captures))
        loop += cx.lower_graph(cond_g, {id(p): v for p, v in zip(cond_g.all_inputs(), values)})
        done = Not(_scalar_of(cx, cond_g.outputs[0]))
        loop.append(If(done, _drops(scope.drops) + [Break()]))
        loop += _drops(scope.drops)
        scope.drops = []
        _bind(cx, body, values, list(op.outputs) + list(captures))
        placeholders = body.all_inputs()
        for k, t in enumerate(body.outputs):
            if nexts[k] is not None and _produced_inside(cx, body, t) and id(t) not in scope.dests:
                scope.dests[id(t)] = nexts[k]
        loop += cx.lower_graph(body, {id(p): v for p, v in zip(placeholders, values)})
        _prove_invariant_dims(cx, op, body)
        loop.append(Comment("next values of the loop variables"))
        updates = []
        for k, (t, (slot, buffer)) in enumerate(zip(body.outputs, slots)):
            if t is placeholders[k]:
                continue                      # unchanged
            if isinstance(slot, Scalar):
                tmp = cx.fresh("next")
                loop.append(Declare(tmp, slot.expr.ctype, _scalar_of(cx, t)))
                updates.append(Assign(slot.expr.name, Var(tmp, slot.expr.ctype)))
            elif isinstance(slot, Obj):
                tmp = cx.fresh("next")
                loop.append(Declare(tmp, slot.ctype, cx.values[id(t)].ref))
                updates.append(Assign(slot.name, Var(tmp, slot.ctype)))
            else:
                nx = Array.dense(nexts[k][0], t.dtype, slot.dims, "reserve")
                loop += _put(cx, t, nx, nexts[k])
                ptr, cap = buffer
                updates.append(Swap(ptr, nexts[k][0], f"{t.dtype.c_type} *"))
                if cap is not None:
                    updates.append(Swap(cap, nexts[k][1], "int64_t"))
        loop += updates
        loop += _drops(scope.drops)
        loop.append(Assign(counter, Poly.sym(counter) + 1))
    out.append(Loop(loop))
    for t, (slot, _) in zip(op.outputs, slots):
        cx.values[id(t)] = slot
    return out


def _prove_invariant_dims(cx, op, body) -> None:
    """The induction step of the loop dims assumed invariant (``shapes._while``): the body, lowered with each
    loop variable of the dims it entered with, gives its next value the same dims. While discovering, a dim
    for which it does not is marked varying (the next round gives it a symbol of its own)."""
    for k, d in sorted(cx.shapes.hypotheses.get(id(op), ())):
        after = cx.dims.get(id(body.outputs[k]))
        if after is not None and cx.entry.same(after[d], cx.dims[id(op.outputs[k])][d]):
            continue
        if not cx.assume.learning:
            raise AssertionError(f"{op.name}: loop variable {k}'s dim {d} was assumed invariant and is not")
        cx.assume.vary((id(op), k, d))


def _bind(cx, sub, values, sources) -> None:
    for p, v, src in zip(sub.all_inputs(), values, sources):
        if isinstance(v, (Array, Scalar)):
            cx.dims[id(p)] = v.dims
        elif id(src) in cx.dims:
            cx.dims[id(p)] = cx.dims[id(src)]


def _drop_stmt(ptr: str):
    return Call("rt_drop", [CTX, Ptr(ptr)])
