"""TensorArray lists in native code: an ``rt_list`` (``rt_kernels.h``) updated in place.

A TensorArray is functional (``write`` returns a new array), so updating it in place is only right
when a version that is written (or passed into a loop or branch) is read by nothing else. When every
``variant`` tensor of the function (its subgraphs included) is either read only by reads, stacks and
size queries, or read once, every TensorList op has a native element dtype and no list crosses the
function's boundary, lists are native: a write copies the item (its producers fused in)
into the list's buffer, ``stack`` hands the buffer over, and a loop carries a pointer. Otherwise
every list op runs its numpy kernel through a callback, as before.

A list of fixed size whose stacks are all transposed the same way (``transpose(states.stack(), [1, 0, 2])``
after a recurrence, as the guide's ``dynamic_rnn`` writes it) keeps its items in that order
(``stacked_layouts``): a write stores the item at its place in the transposed result, and the transpose is a
view of the buffer, contiguous, which the caller adopts; no copy of the stack at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

from runtime import dtypes
from runtime.graph import Graph, Operation, all_operations
from transpiler.lowering.ir import (
    CTX,
    NULL,
    And,
    Assign,
    Call,
    Cast,
    Check,
    Compare,
    DimsArray,
    Field,
    For,
    If,
    Lit,
    Load,
    Not,
    OutArg,
    Poly,
    Select,
    Store,
    Text,
    Var,
)
from transpiler.lowering.kernels import Elements, elementwise
from transpiler.lowering.storage import storage
from transpiler.lowering.values import Array, Obj, Scalar, contiguous_strides

LIST_OPS = ("TensorListReserve", "TensorListSetItem", "TensorListGetItem", "TensorListStack", "TensorListFromTensor",
            "TensorListLength", "TensorListZerosLike", "TensorListAdd")
PASS_THROUGH = ("While", "If", "Identity")
READ_ONLY = ("TensorListGetItem", "TensorListStack", "TensorListLength", "TensorListZerosLike")
COPYING_READS = ("TensorListGetItem", "TensorListLength")      # their results do not point into the list


def native_lists(graph: Graph) -> bool:
    """True when the function's TensorArrays can be native (see the module docstring)."""
    if any(t.dtype is dtypes.variant for t in list(graph.inputs) + list(graph.outputs)):
        return False
    return _check(graph)


def _writes(op, position: int) -> bool:
    """Whether ``op`` may change the list it reads at input ``position`` (``TensorListAdd`` adds into its first)."""
    if op.type in READ_ONLY:
        return False
    return not (op.type == "TensorListAdd" and position == 1)


def _check(graph: Graph) -> bool:
    readers: dict[int, list] = {}
    writers: dict[int, list] = {}
    for op in graph.operations:
        for position, t in enumerate(op.inputs):
            readers.setdefault(id(t), []).append(op)
            if _writes(op, position):
                writers.setdefault(id(t), []).append(op)
    for t in graph.outputs:
        readers.setdefault(id(t), []).append(None)
        writers.setdefault(id(t), []).append(None)
    for t in graph.all_inputs():
        if t.dtype is dtypes.variant and not _used_once(graph, t, readers, writers):
            return False
    for op in graph.operations:
        variants = [t for t in list(op.inputs) + list(op.outputs) if t.dtype is dtypes.variant]
        if variants and op.type not in LIST_OPS + PASS_THROUGH and op.type != "Placeholder":
            return False
        if op.type in LIST_OPS and not _native_element(op):
            return False
        for t in op.outputs:
            if t.dtype is dtypes.variant and not _used_once(graph, t, readers, writers):
                return False
        for sub in op.subgraphs():
            if not _check(sub):
                return False
    return True


def _used_once(graph: Graph, t, readers: dict, writers: dict) -> bool:
    """A list version that is written (or passed on) is read by nothing else, except reads that copy out of it
    (its length, an item) and that can run before the writer (``order_constraints`` makes them): they do not
    depend on what it writes (``i = ta.size(); ta = ta.write(i, x)``, or a gradient reading an item and then
    clearing it). A version passed on out of a loop body or branch (a result of the subgraph) may be read there
    too: those reads run before the subgraph ends, and whatever writes the list afterwards runs after it (a
    dataset's loop reading its shuffle's permutation, a table it does not change)."""
    written = writers.get(id(t), [])
    others = [op for op in readers.get(id(t), []) if op not in written]
    if not others and len(written) > 1 and t.op.type == "TensorListReserve" and \
            all(op is written[0] and op is not None and op.type == "While" for op in written):
        return True        # a new list passed to several loop variables (merged by CSE): each gets a copy
    if not written or not others:
        return len(written) <= 1
    if len(written) > 1 or any(op is None or op.type not in COPYING_READS for op in others):
        return False
    return written[0] is None or all(id(written[0]) not in _ancestors(graph, op) for op in others)


def order_constraints(graph: Graph) -> list[tuple]:
    """(reader, writer) pairs of ``graph``'s ops: a read that copies out of a list version runs before the op
    that updates that version in place."""
    readers: dict[int, list] = {}
    writers: dict[int, list] = {}
    for op in graph.operations:
        for position, t in enumerate(op.inputs):
            if t.dtype is dtypes.variant:
                (writers if _writes(op, position) else readers).setdefault(id(t), []).append(op)
    pairs = []
    for key, written in writers.items():
        if len(written) == 1:
            pairs += [(op, written[0]) for op in readers.get(key, []) if op.type in COPYING_READS]
    return pairs


def _ancestors(graph: Graph, op) -> set[int]:
    """ids of the ops of ``graph`` whose results ``op`` depends on."""
    found: set[int] = set()
    stack = [op]
    while stack:
        for t in stack.pop().inputs:
            producer = t.op
            if producer.graph is graph and id(producer) not in found:
                found.add(id(producer))
                stack.append(producer)
    return found


@dataclass(frozen=True)
class Layout:
    """Where a list's items go: the stacked tensor ``[n, *element]`` stored as ``transpose(stacked, perm)``,
    row-major; ``reserve`` made the list (its size ``n`` never changes)."""
    perm: tuple
    reserve: Operation


def stacked_layouts(graph: Graph) -> dict[int, Layout]:
    """The ``Layout`` of each version (``id`` of a variant tensor, in ``graph`` and its subgraphs) of the lists
    that may keep their items in the order their stacks are read: a list made by a ``TensorListReserve`` of fixed
    size, written, passed through loops and branches, its length read, and stacked only into ``Transpose`` ops of
    one ``perm`` (nothing reads an item back, nothing else reads a stack)."""
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(*tensors) -> None:
        keys = [find(id(t)) for t in tensors if t.dtype is dtypes.variant]
        for k in keys[1:]:
            parent[find(k)] = keys[0]

    ops = all_operations(graph)
    readers: dict[int, list] = {}
    for op in ops:
        for t in op.inputs:
            readers.setdefault(id(t), []).append(op)
    for t in graph.outputs:
        readers.setdefault(id(t), []).append(None)
    blocked: list = []          # versions of lists that must stay dense
    reserves, stacks, copies = [], [], []
    for op in ops:
        versions = [t for t in list(op.inputs) + list(op.outputs) if t.dtype is dtypes.variant]
        if not versions or op.type in ("Placeholder", "TensorListLength"):
            continue
        if op.type in ("TensorListSetItem", "Identity"):
            union(op.inputs[0], op.outputs[0])
        elif op.type == "TensorListReserve" and not op.attrs["dynamic_size"]:
            reserves.append(op)
        elif op.type == "TensorListStack":
            stacks.append(op)
        elif op.type == "While":
            n = op.attrs["num_loop_vars"]
            body, cond = op.attrs["body"], op.attrs["cond"]
            entries = [id(x) for x in op.inputs[:n]]
            for k, (x, t) in enumerate(zip(op.inputs[:n], op.outputs)):
                union(t, body.all_inputs()[k], body.outputs[k], cond.all_inputs()[k])
                if entries.count(id(x)) == 1:
                    union(x, t)
                elif x.dtype is dtypes.variant and x.op.type == "TensorListReserve" and \
                        not x.op.attrs["dynamic_size"]:
                    copies.append((t, x.op))    # one new list passed to several loop variables: each gets a copy
                else:
                    blocked += [x, t]
            for j, x in enumerate(op.inputs[n:n + len(body.captures)]):
                union(x, body.all_inputs()[n + j], cond.all_inputs()[n + j])
        elif op.type == "If":
            for key in ("then_branch", "else_branch"):
                sub = op.attrs[key]
                for p, x in zip(sub.all_inputs(), op.inputs[1:]):
                    union(p, x)
                for r, t in zip(sub.outputs, op.outputs):
                    union(r, t)
        else:
            blocked += versions
    perms: dict[int, set] = {}
    for op in stacks:
        perm = set()
        for reader in readers.get(id(op.outputs[0]), []):
            if reader is None or reader.type != "Transpose":
                perm.add(None)
            else:
                rank = len(op.outputs[0].shape.dims or ())
                perm.add(tuple(reader.attrs["perm"] or reversed(range(rank))))
        perms.setdefault(find(id(op.inputs[0])), set()).update(perm or {None})
    for t in blocked:
        perms.setdefault(find(id(t)), set()).add(None)
    roots: dict[int, list] = {}
    for op in reserves:
        roots.setdefault(find(id(op.outputs[0])), []).append(op)
    for t, op in copies:
        roots.setdefault(find(id(t)), []).append(op)
    layouts: dict[int, Layout] = {}
    for key, found in perms.items():
        perm = next(iter(found))
        if len(found) == 1 and perm is not None and perm != tuple(range(len(perm))) and len(roots.get(key, ())) == 1:
            layouts[key] = Layout(perm, roots[key][0])
    return {k: layouts[find(k)] for k in list(parent) if find(k) in layouts}


def _native_element(op) -> bool:
    if op.type in ("TensorListReserve", "TensorListGetItem", "TensorListStack"):
        dtype = op.attrs["element_dtype"]
        return dtype.c_type is not None and (op.type == "TensorListReserve" or op.outputs[0].shape.rank is not None)
    if op.type == "TensorListSetItem":
        return op.inputs[2].dtype.c_type is not None and op.inputs[2].shape.rank is not None
    if op.type == "TensorListFromTensor":
        return op.inputs[0].dtype.c_type is not None and bool(op.inputs[0].shape.rank)
    return True   # TensorListAdd: gradients, of floating lists (rt_list_add fails on others)


def _dims(dims) -> DimsArray:
    return DimsArray(tuple(Poly.of(d) for d in dims))


def _where(op):
    return Text(op.type), Text(op.where())


def _scalar(cx, t):
    return Cast(Elements(cx).of(t, (0,) * len(cx.dims[id(t)])), "int64_t")


def _list(cx, op, name: str) -> None:
    cx.values[id(op.outputs[0])] = Obj(Var(name, "rt_list *"), dtypes.variant, "rt_list *")


def _ref(cx, t) -> Var:
    """The ``rt_list *`` local holding TensorArray ``t``."""
    return cx.values[id(t)].ref


def _field(lst: Var, name: str, ctype: str, index: int | None = None) -> Field:
    return Field(lst, name, ctype, index)


def _data(cx, lst: Var, dtype, stmts: list) -> str:
    """A pointer local set to the list's buffer (as ``dtype``'s elements)."""
    ptr = cx.pointer(dtype.c_type, "ld")
    stmts += [Assign(ptr, Cast(_field(lst, "data", "void *"), f"{dtype.c_type} *"))]
    return ptr


def emit_reserve(cx, op) -> list | None:
    stmts: list = []
    name = cx.pointer("rt_list", "list")
    size = _scalar(cx, op.inputs[0])
    code = op.attrs["element_dtype"].code
    stmts += [Call("rt_list_new", [CTX, size, Lit(int(op.attrs["dynamic_size"]), "int"), Lit(code, "int"), *_where(op)],
                 checked=True, result=name)]
    _list(cx, op, name)
    return stmts


def emit_from_tensor(cx, op) -> list | None:
    stmts: list = []
    x = op.inputs[0]
    dims = cx.dims[id(x)]
    name = cx.pointer("rt_list", "list")
    lst = Var(name, "rt_list *")
    stmts += [Call("rt_list_new", [CTX, dims[0], Lit(int(op.attrs["dynamic_size"]), "int"), Lit(x.dtype.code, "int"),
                                 *_where(op)], checked=True, result=name)]
    stmts += [Call("rt_list_shape", [CTX, lst, Lit(len(dims) - 1, "int"), _dims(dims[1:]), *_where(op)], checked=True)]
    stmts += [Call("rt_list_grow", [CTX, lst, dims[0]], checked=True)]
    data = Array.dense(_data(cx, lst, x.dtype, stmts), x.dtype, dims, "list")
    stmts += elementwise(cx, [data], dims, lambda el, index: [el.of(x, index)])
    stmts += [Call("memset", [_field(lst, "written", "char *"), Lit(1, "int"), Cast(dims[0], "size_t")])]
    _list(cx, op, name)
    return stmts


def _stacked_strides(n: Poly, dims, perm: tuple) -> tuple:
    """Element strides of ``stacked`` (``[n, *dims]``) stored as ``transpose(stacked, perm)``, row-major."""
    stacked = (n,) + tuple(dims)
    stored = contiguous_strides(tuple(stacked[p] for p in perm))
    strides = [None] * len(perm)
    for j, p in enumerate(perm):
        strides[p] = stored[j]
    return tuple(strides)


def _length(cx, layout: Layout, lst: Var, stmts: list) -> Poly:
    """The list's (fixed) size: its ``TensorListReserve``'s constant, else read from the list."""
    size = cx.const_value(layout.reserve.inputs[0])
    if size is not None and size.size == 1:
        return Poly.of(int(size.reshape(-1)[0]))
    n = cx.new_dim()
    stmts += [Assign(str(n), _field(lst, "length", "int64_t"))]
    return n


def emit_set_item(cx, op) -> list | None:
    stmts: list = []
    tl, index, item = op.inputs
    lst = _ref(cx, tl)
    dims = cx.dims[id(item)]
    slot = cx.pointer(item.dtype.c_type, "item")
    layout = cx.list_layouts.get(id(tl))
    at = _scalar(cx, index)
    if layout is not None:
        at = Poly.sym(cx.local("int64_t", "at", Poly.of(0)))
        stmts += [Assign(str(at), _scalar(cx, index))]
    stmts += [Call("rt_list_set", [CTX, lst, at, Lit(len(dims), "int"), _dims(dims), *_where(op)],
                 checked=True, result=slot)]
    if layout is None:
        target = Array.dense(slot, item.dtype, dims, "list")
    else:      # at its place in the transposed stack
        strides = _stacked_strides(_length(cx, layout, lst, stmts), dims, layout.perm)
        target = Array(_data(cx, lst, item.dtype, stmts), item.dtype, tuple(dims), strides[1:], at * strides[0],
                       "list")
    value = cx.values.get(id(item))
    if isinstance(value, Scalar):
        stmts += [Store(target.ptr, target.offset, value.expr)]
    else:
        stmts += elementwise(cx, [target], dims, lambda el, index: [el.of(item, index)])
    _list(cx, op, lst.name)
    return stmts


def _element_shape(cx, op, lst: Var, dims, stmts: list) -> None:
    """Make the list's element shape known from the attrs when nothing fixed it, and bind ``dims``."""
    shape = op.attrs["element_shape"]
    ndim = _field(lst, "ndim", "int")
    if shape.dims is not None and None not in shape.dims:
        stmts += [If(Compare("<", ndim, Lit(0, "int")), [Call("rt_list_shape", [
            CTX, lst, Lit(len(shape.dims), "int"), _dims(shape.dims), *_where(op)], checked=True)])]
    rank = len(dims)
    stmts += [Check(Compare("!=", ndim, Lit(rank, "int")), cx.message(
        op, f"the elements have rank %lld, not {rank} (or no element was written and the element shape is "
            f"unknown)"), (ndim,))]
    for d, n in enumerate(dims):
        size = _field(lst, "shape", "int64_t", d)
        if n.const is None:
            stmts += [Assign(str(n), size)]
        else:
            stmts += [Check(Compare("!=", size, n), cx.message(op, f"element dimension {d} is %lld, not {n}"), (size,))]


def emit_get_item(cx, op) -> list | None:
    stmts: list = []
    tl, index = op.inputs
    out = op.outputs[0]
    lst = _ref(cx, tl)
    dims = cx.dims[id(out)]
    _element_shape(cx, op, lst, dims, stmts)
    src = cx.local("const void *", "src", NULL)
    stmts += [Call("rt_list_get", [CTX, lst, _scalar(cx, index), OutArg(src, "const void *"), *_where(op)],
                 checked=True)]
    target, allocs = storage(cx, out)
    stmts += allocs
    cx.values[id(out)] = target
    ctype = out.dtype.c_type
    item = cx.pointer(ctype, "ld")
    stmts += [Assign(item, Cast(Var(src, "const void *"), f"{ctype} *"))]
    source = Array.dense(item, out.dtype, dims, "list")
    zero = Lit(0, ctype)
    found = Var(src, "const void *")
    if isinstance(target, Scalar):
        stmts += [Assign(target.expr.name, Select(found, Load(item, Poly.of(0), ctype), zero, ctype))]
        return stmts
    copy = elementwise(cx, [target], dims, lambda el, index: [source.load(index)])
    clear = elementwise(cx, [target], dims, lambda el, index: [zero])
    stmts += [If(found, copy, clear)]
    return stmts


def emit_stack(cx, op) -> list | None:
    stmts: list = []
    tl = op.inputs[0]
    out = op.outputs[0]
    lst = _ref(cx, tl)
    dims = cx.dims[id(out)]
    shape = op.attrs["element_shape"]
    length = _field(lst, "length", "int64_t")
    if shape.dims is not None and None in shape.dims:
        # an empty list of unknown elements stacks to zeros of shape (0, dims with None as 0), as in eager
        zeros = [d or 0 for d in shape.dims]
        stmts += [If(And((Compare("<", _field(lst, "ndim", "int"), Lit(0, "int")), Compare("==", length, Poly.of(0)))),
                   [Call("rt_list_shape", [CTX, lst, Lit(len(zeros), "int"), _dims(zeros), *_where(op)],
                         checked=True)])]
    _element_shape(cx, op, lst, dims[1:], stmts)
    if dims[0].const is None:
        stmts += [Assign(str(dims[0]), length)]
    else:
        stmts += [Check(Compare("!=", length, dims[0]), cx.message(op, f"the TensorArray has %lld elements, not "
                                                                     f"{dims[0]}"), (length,))]
    layout = cx.list_layouts.get(id(tl))
    if layout is None:
        stmts += [Call("rt_list_fill", [CTX, lst, *_where(op)], checked=True)]
        cx.values[id(out)] = Array.dense(_data(cx, lst, out.dtype, stmts), out.dtype, dims, "list")
        return stmts
    # items in the transposed order: the unwritten ones are zeros, stored in place
    stmts += [Call("rt_list_grow", [CTX, lst, dims[0]], checked=True)]
    strides = _stacked_strides(dims[0], dims[1:], layout.perm)
    data = _data(cx, lst, out.dtype, stmts)
    written = cx.pointer("uint8_t", "wr")
    stmts += [Assign(written, _field(lst, "written", "uint8_t *"))]
    i = cx.fresh("i")
    item = Array(data, out.dtype, dims[1:], strides[1:], Poly.sym(i) * strides[0], "list")
    zeros = elementwise(cx, [item], dims[1:], lambda el, index: [Lit(0, out.dtype.c_type)])
    unwritten = Not(Load(written, Poly.sym(i), "uint8_t"))
    stmts += [For(i, Poly.of(0), dims[0], [If(unwritten, zeros + [Store(written, Poly.sym(i), Lit(1, "uint8_t"))])])]
    cx.values[id(out)] = Array(data, out.dtype, dims, strides, Poly.of(0), "list")
    return stmts


def emit_length(cx, op) -> list | None:
    stmts: list = []
    lst = _ref(cx, op.inputs[0])
    target, allocs = storage(cx, op.outputs[0])
    stmts += allocs
    cx.values[id(op.outputs[0])] = target
    stmts += [Assign(target.expr.name, Cast(_field(lst, "length", "int64_t"), "int32_t"))]
    return stmts


def emit_zeros_like(cx, op) -> list | None:
    stmts: list = []
    name = cx.pointer("rt_list", "list")
    stmts += [Call("rt_list_zeros_like", [CTX, _ref(cx, op.inputs[0]), *_where(op)], checked=True, result=name)]
    _list(cx, op, name)
    return stmts


def emit_add(cx, op) -> list | None:
    stmts: list = []
    a, b = (_ref(cx, t) for t in op.inputs)
    stmts += [Call("rt_list_add", [CTX, a, b, *_where(op)], checked=True)]
    _list(cx, op, a.name)
    return stmts


EMITTERS = {
    "TensorListZerosLike": emit_zeros_like,
    "TensorListAdd": emit_add,
    "TensorListReserve": emit_reserve,
    "TensorListFromTensor": emit_from_tensor,
    "TensorListSetItem": emit_set_item,
    "TensorListGetItem": emit_get_item,
    "TensorListStack": emit_stack,
    "TensorListLength": emit_length,
}
