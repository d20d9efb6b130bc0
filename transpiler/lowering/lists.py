"""TensorArray lists in native code: an ``rt_list`` (``rt_kernels.h``) updated in place.

A TensorArray is functional (``write`` returns a new array), so updating it in place is only right
when a version that is written (or passed into a loop or branch) is read by nothing else. When every
``variant`` tensor of the function (its subgraphs included) is either read only by reads, stacks and
size queries, or read once, every TensorList op has a native element dtype and no list crosses the
function's boundary, lists are native: a write copies the item (its producers fused in)
into the list's buffer, ``stack`` hands the buffer over, and a loop carries a pointer. Otherwise
every list op runs its numpy kernel through a callback, as before.
"""
from __future__ import annotations

from runtime import dtypes
from runtime.graph import Graph
from transpiler.lowering.ir import Assign, Call, Check, If, Lit, Poly, Store, Text, render_expr
from transpiler.lowering.kernels import Elements, elementwise
from transpiler.lowering.values import Array, Obj, Scalar

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


def _native_element(op) -> bool:
    if op.type in ("TensorListReserve", "TensorListGetItem", "TensorListStack"):
        dtype = op.attrs["element_dtype"]
        return dtype.c_type is not None and (op.type == "TensorListReserve" or op.outputs[0].shape.rank is not None)
    if op.type == "TensorListSetItem":
        return op.inputs[2].dtype.c_type is not None and op.inputs[2].shape.rank is not None
    if op.type == "TensorListFromTensor":
        return op.inputs[0].dtype.c_type is not None and bool(op.inputs[0].shape.rank)
    return True   # TensorListAdd: gradients, of floating lists (rt_list_add fails on others)


def _dims(dims) -> str:
    return "(const int64_t[]){" + ", ".join(str(d) for d in dims) + "}" if dims else "NULL"


def _where(op):
    return Text(op.type), Text(op.where())


def _scalar(lw, t) -> str:
    return f"((int64_t){render_expr(Elements(lw).of(t, (0,) * len(lw.dims[id(t)])))})"


def _list(lw, op, name: str) -> None:
    lw.values[id(op.outputs[0])] = Obj(name, dtypes.variant, "rt_list *")


def emit_reserve(lw, op) -> bool:
    name = lw.local("rt_list *", "list", "NULL")
    size = _scalar(lw, op.inputs[0])
    code = op.attrs["element_dtype"].code
    lw.emit(Call("rt_list_new", ["ctx", size, str(int(op.attrs["dynamic_size"])), str(code), *_where(op)],
                 checked=True, result=name))
    _list(lw, op, name)
    return True


def emit_from_tensor(lw, op) -> bool:
    x = op.inputs[0]
    dims = lw.dims[id(x)]
    name = lw.local("rt_list *", "list", "NULL")
    lw.emit(Call("rt_list_new", ["ctx", str(dims[0]), str(int(op.attrs["dynamic_size"])), str(x.dtype.code),
                                 *_where(op)], checked=True, result=name))
    lw.emit(Call("rt_list_shape", ["ctx", name, str(len(dims) - 1), _dims(dims[1:]), *_where(op)], checked=True))
    lw.emit(Call("rt_list_grow", ["ctx", name, str(dims[0])], checked=True))
    data = Array.dense(f"(({x.dtype.c_type} *){name}->data)", x.dtype, dims, "arena")
    lw.emit(*elementwise(lw, [data], dims, lambda el, index: [el.of(x, index)]))
    lw.emit(Call("memset", [f"{name}->written", "1", f"(size_t)({dims[0]})"]))
    _list(lw, op, name)
    return True


def emit_set_item(lw, op) -> bool:
    tl, index, item = op.inputs
    name = lw.values[id(tl)].name
    dims = lw.dims[id(item)]
    slot = lw.local(f"{item.dtype.c_type} *", "item", "NULL")
    lw.emit(Call("rt_list_set", ["ctx", name, _scalar(lw, index), str(len(dims)), _dims(dims), *_where(op)],
                 checked=True, result=f"{slot}"))
    target = Array.dense(slot, item.dtype, dims, "arena")
    value = lw.values.get(id(item))
    if isinstance(value, Scalar):
        lw.emit(Store(slot, Poly.of(0), value.expr))
    else:
        lw.emit(*elementwise(lw, [target], dims, lambda el, index: [el.of(item, index)]))
    _list(lw, op, name)
    return True


def _element_shape(lw, op, name: str, dims) -> None:
    """Make the list's element shape known from the attrs when nothing fixed it, and bind ``dims``."""
    shape = op.attrs["element_shape"]
    if shape.dims is not None and None not in shape.dims:
        lw.emit(If(f"{name}->ndim < 0", [Call("rt_list_shape", ["ctx", name, str(len(shape.dims)), _dims(shape.dims),
                                                                *_where(op)], checked=True)]))
    rank = len(dims)
    lw.emit(Check(f"{name}->ndim != {rank}", lw.message(
        op, f"the elements have rank %lld, not {rank} (or no element was written and the element shape is "
            f"unknown)"), [f"{name}->ndim"]))
    for d, n in enumerate(dims):
        if n.const is None:
            lw.emit(Assign(str(n), f"{name}->shape[{d}]"))
        else:
            lw.emit(Check(f"{name}->shape[{d}] != {n}", lw.message(op, f"element dimension {d} is %lld, not {n}"),
                          [f"{name}->shape[{d}]"]))


def emit_get_item(lw, op) -> bool:
    tl, index = op.inputs
    out = op.outputs[0]
    name = lw.values[id(tl)].name
    dims = lw.dims[id(out)]
    _element_shape(lw, op, name, dims)
    src = lw.local("const void *", "src", "NULL")
    lw.emit(Call("rt_list_get", ["ctx", name, _scalar(lw, index), f"&{src}", *_where(op)], checked=True))
    target = lw.storage(out)
    lw.values[id(out)] = target
    ctype = out.dtype.c_type
    source = Array.dense(f"(({ctype} *){src})", out.dtype, dims, "arena")
    zero = Lit("0", ctype)
    if isinstance(target, Scalar):
        lw.emit(Assign(target.expr.name, f"{src} ? *(const {ctype} *){src} : ({ctype})0"))
        return True
    copy = elementwise(lw, [target], dims, lambda el, index: [source.load(index)])
    clear = elementwise(lw, [target], dims, lambda el, index: [zero])
    lw.emit(If(src, copy, clear))
    return True


def emit_stack(lw, op) -> bool:
    tl = op.inputs[0]
    out = op.outputs[0]
    name = lw.values[id(tl)].name
    dims = lw.dims[id(out)]
    shape = op.attrs["element_shape"]
    if shape.dims is not None and None in shape.dims:
        # an empty list of unknown elements stacks to zeros of shape (0, dims with None as 0), as in eager
        zeros = [d or 0 for d in shape.dims]
        lw.emit(If(f"{name}->ndim < 0 && {name}->length == 0", [Call(
            "rt_list_shape", ["ctx", name, str(len(zeros)), _dims(zeros), *_where(op)], checked=True)]))
    _element_shape(lw, op, name, dims[1:])
    if dims[0].const is None:
        lw.emit(Assign(str(dims[0]), f"{name}->length"))
    else:
        lw.emit(Check(f"{name}->length != {dims[0]}", lw.message(op, f"the TensorArray has %lld elements, not "
                                                                      f"{dims[0]}"), [f"{name}->length"]))
    lw.emit(Call("rt_list_fill", ["ctx", name, *_where(op)], checked=True))
    lw.values[id(out)] = Array.dense(f"(({out.dtype.c_type} *){name}->data)", out.dtype, dims, "arena")
    return True


def emit_length(lw, op) -> bool:
    name = lw.values[id(op.inputs[0])].name
    target = lw.storage(op.outputs[0])
    lw.values[id(op.outputs[0])] = target
    lw.emit(Assign(target.expr.name, f"(int32_t){name}->length"))
    return True


def emit_zeros_like(lw, op) -> bool:
    name = lw.local("rt_list *", "list", "NULL")
    lw.emit(Call("rt_list_zeros_like", ["ctx", lw.values[id(op.inputs[0])].name, *_where(op)], checked=True,
                 result=name))
    _list(lw, op, name)
    return True


def emit_add(lw, op) -> bool:
    a, b = (lw.values[id(t)].name for t in op.inputs)
    lw.emit(Call("rt_list_add", ["ctx", a, b, *_where(op)], checked=True))
    _list(lw, op, a)
    return True


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
