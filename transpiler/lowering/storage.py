"""Where a stored tensor lives: a register, a stack array, the call's arena, or a buffer kept across iterations.

A one-element value lives in a C local; a small tensor of static shape in a stack array (reused once dead, or
written in place by an elementwise kernel that reads it for the last time); other tensors in the call's arena,
or, inside loops and branches, in buffers kept across iterations and grown only when too small, so that a
loop iteration allocates nothing. Each function returns the value and the statements that allocate it.
"""
from __future__ import annotations

from transpiler.lowering.ir import Alloc, Poly, Var, product
from transpiler.lowering.values import Array, Scalar

STACK_BUFFER_MAX = 65536      # bytes: bigger tensors go to the arena
STACK_TOTAL_MAX = 262144      # bytes of stack arrays per function


def temporary(cx, ctype: str, count: Poly) -> tuple[str, Alloc]:
    """(pointer, its allocation statement) of a scratch buffer for one kernel."""
    ptr = cx.pointer(ctype, "w")
    st = cx.storage
    if count.const is not None and count.const * 8 <= STACK_BUFFER_MAX and \
            st.stack_bytes + count.const * 8 <= STACK_TOTAL_MAX:
        buf = cx.local(ctype, "wbuf", size=max(count.const, 1))
        st.stack_bytes += max(count.const, 1) * 8
        return ptr, Alloc(ptr, ctype, count, "stack", buffer=buf)
    if cx.scope.depth:
        return ptr, Alloc(ptr, ctype, count, "reserve", capacity=cx.local("int64_t", "cap", Poly.of(0)))
    return ptr, Alloc(ptr, ctype, count, "arena")


def storage(cx, t, reads: list | None = None, index: tuple | None = None) -> tuple[object, list]:
    """(where stored tensor ``t`` goes: a Scalar or an Array, the statements allocating it).

    ``reads``: the loads of the kernel computing element ``index`` of ``t``; a buffer read there for the last
    time, at the element being written, is written in place.
    """
    dest = cx.scope.dests.get(id(t))
    dims = cx.dims[id(t)]
    if dest is not None:
        ptr, capacity = dest
        stmts = []
        if capacity is not None:            # None: a local array of the exact size (``control._buffer``)
            stmts.append(Alloc(ptr, t.dtype.c_type, product(dims), "reserve", capacity=capacity))
        return Array.dense(ptr, t.dtype, dims, "reserve"), stmts
    if product(dims).const == 1:
        name = cx.local(t.dtype.c_type, "s")
        return Scalar(Var(name, t.dtype.c_type), t.dtype, dims), []
    if reads and cx.options.plan_memory:
        reuse = _in_place(cx, t, reads, index)
        if reuse is not None:
            return reuse, []
    st = cx.storage
    count = product(dims)
    nbytes = None if count.const is None else max(count.const, 1) * t.dtype.size
    ptr = cx.pointer(t.dtype.c_type, "p")
    if nbytes is not None and nbytes <= STACK_BUFFER_MAX and id(t) not in st.escaping and cx.options.plan_memory:
        key = (t.dtype.c_type, count.const)
        free = st.pool.get(key)
        if free and not cx.scope.depth and not cx.scope.in_parts:
            buf = free.pop()
        elif st.stack_bytes + nbytes <= STACK_TOTAL_MAX:
            buf = cx.local(t.dtype.c_type, "buf", size=max(count.const, 1))
            st.stack_bytes += nbytes
        else:
            buf = None
        if buf is not None:
            st.stack_of[id(t)] = (buf, key)
            return Array.dense(ptr, t.dtype, dims, "stack"), [Alloc(ptr, t.dtype.c_type, count, "stack", buffer=buf)]
    if cx.scope.depth:
        cap = cx.local("int64_t", "cap", Poly.of(0))
        return Array.dense(ptr, t.dtype, dims, "reserve"), [
            Alloc(ptr, t.dtype.c_type, count, "reserve", capacity=cap)]
    return Array.dense(ptr, t.dtype, dims, "arena"), [Alloc(ptr, t.dtype.c_type, count, "arena")]


def _in_place(cx, t, reads: list, index: tuple):
    """A stored tensor with ``t``'s dims and dtype whose last reader is this kernel, which reads it
    only at the element it writes: ``t`` takes over its memory.

    Of several such tensors, the one first read last: the most recent, whose lines are likeliest in this core's
    cache and held by no other (a backward pass's ``select(h > 0, dh, 0)`` written over ``h``, which a 2-thread
    product had written and both threads had read, waited on the other core for every line it stored: 14.8 us
    of a training step at AVX2; written over ``dh``, which this thread had just computed, 4.4 us)."""
    scope = cx.scope
    if scope.depth or scope.in_parts or scope.plan is None or index is None:
        return None
    dims = cx.dims[id(t)]
    at = Array.dense("q", t.dtype, dims, "arena").load(index).index
    st = cx.storage
    for x_id, last in reversed(scope.last_use.items()):
        if last != scope.unit_index or x_id in st.escaping or x_id in scope.aliased:
            continue
        value = cx.values.get(x_id)
        if not isinstance(value, Array) or value.storage not in ("arena", "stack") or value.dims != dims \
                or value.dtype is not t.dtype or not value.contiguous:
            continue
        if value.storage == "stack" and id(t) in st.escaping:
            continue
        mine = [ld for ld in reads if ld.ptr == value.ptr]
        if not mine or any(ld.index != at or ld.indirect for ld in mine):
            continue
        if x_id in st.stack_of:
            st.stack_of[id(t)] = st.stack_of.pop(x_id)
        scope.last_use[x_id] = -1
        return Array.dense(value.ptr, t.dtype, dims, value.storage)
    return None


def release_dead(cx) -> None:
    """Return the stack arrays whose last reader was the current unit to the pool."""
    st = cx.storage
    for x_id, last in list(cx.scope.last_use.items()):
        if last == cx.scope.unit_index and x_id in st.stack_of:
            buf, key = st.stack_of.pop(x_id)
            st.pool.setdefault(key, []).append(buf)
