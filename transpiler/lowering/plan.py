"""Fusion: which tensors get their own storage, and in which order the kernels run.

Every op is one of:

- ``elementwise`` / ``generator`` / ``view`` / ``query`` (``Shape``, ``Size``, ``Rank``) / ``indexed`` (a
  broadcast, a one-hot, a padding: ``kernels.INDEXED``): its elements can be computed where they are
  read; the tensor is *lazy* unless it has to be stored;
- ``alias``: a reshape, or a view of a stored tensor: an ``Array`` over its input's memory with other
  dims and strides (no copy);
- ``reduction``: stored by a reduction kernel (its input's lazy producers fused in);
- ``const``: a static array or a C literal;
- ``opaque``: an op with its own emitter (matmul, concat, control flow, variables, Python callbacks),
  whose inputs are stored.

A lazy tensor is stored when it is an output of the graph, is read by an opaque op (but the value a
variable is assigned or a gradient summed: ``LAZY_VALUE``) or a reshape, is
a one-element value (kept in a register), or when computing it again at each read would cost too
much: several readers of an expensive expression, or one reader that broadcasts it.

A *row group* fuses reductions with what they feed: reductions over the same trailing axes of the
same domain, and the elementwise ops that read their results back over that domain, become one
loop over rows with a pass per reduction (``rows.py``): softmax and layer norm read each row once
from memory.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from transpiler.lowering import lists
from transpiler.lowering.ir import Poly, expensive, product
from transpiler.lowering.kernels import indexed

QUERIES = ("Shape", "Size", "Rank")
# Opaque ops that compute their first input's elements in their own loop (its producers fused in): a variable's
# update ``w -= lr * m / (sqrt(v) + eps)`` is one loop; a gradient summed to its operand's shape (each element
# read once) sums the product that made it, not a copy of it stored first.
LAZY_VALUE = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "SumToShape")
VIEWS = ("transpose", "expand_dims", "squeeze", "strided_slice", "unpack", "gather")


def native(tensor) -> bool:
    return tensor.dtype.c_type is not None and tensor.shape.rank is not None


def classify(op) -> str:
    """The op's kind (see the module docstring)."""
    opdef = op.opdef
    if op.type == "Const":
        if op.outputs[0].dtype.c_type is None:
            return "opaque"
        return "indexed" if indexed(op) else "const"
    if not op.outputs or not all(native(t) for t in op.outputs):
        return "opaque"
    if op.type in QUERIES:
        return "query" if native(op.inputs[0]) else "opaque"
    if not all(native(t) for t in op.inputs):
        return "opaque"
    if opdef.elementwise:
        return "elementwise"
    if opdef.generator:
        return "generator"
    if opdef.reduction is not None:
        return "reduction"
    if opdef.view == "reshape":
        return "alias"
    if opdef.view in VIEWS:
        return "view"
    if indexed(op):
        return "indexed"
    return "opaque"


@dataclass(eq=False)
class Region:
    """A row group: reductions over the trailing ``reduced`` axes of ``domain`` and the ops reading
    their results back, lowered as one loop over rows (``rows.py``)."""
    domain: tuple
    reduced: int                     # how many trailing axes are reduced
    members: list = field(default_factory=list)

    @property
    def row_dims(self) -> tuple:
        return self.domain[:len(self.domain) - self.reduced]


@dataclass
class Plan:
    kind: dict                       # id(op) -> kind
    stored: set                      # ids of tensors with their own storage
    units: list                      # emission order: ops, and Regions
    reads: list                      # per unit: ids of stored tensors it reads
    region_of: dict = field(default_factory=dict)
    readers: dict = field(default_factory=dict)   # id(tensor) -> how many op inputs read it
    fused: int = 0                   # ops computed inside another op's kernel


def plan_graph(cx, graph, ops: list, fuse: bool = True) -> Plan:
    """Decide storage and order for the needed ``ops`` of ``graph`` (dims already in ``cx.dims``)."""
    kind = {id(op): classify(op) for op in ops}
    for op in ops:
        # a gradient summed to its own dims (a run-time shape the dims tell is its own: nothing was broadcast)
        # is that gradient, as an Identity is
        if op.type == "SumToShape" and fuse and id(op.inputs[0]) in cx.dims and \
                cx.dims.get(id(op.outputs[0])) == cx.dims[id(op.inputs[0])]:
            kind[id(op)] = "alias"
    users: dict[int, list] = {}
    for op in ops:
        for pos, t in enumerate(op.inputs):
            users.setdefault(id(t), []).append((op, pos))
    outputs = {id(t) for t in graph.outputs}
    stored: set[int] = set()
    for op in ops:
        k = kind[id(op)]
        for t in op.outputs:
            if k in ("opaque", "reduction", "const") or not fuse:
                stored.add(id(t))
            elif k == "alias":
                stored.add(id(t))      # an Array over its input's memory
            elif _must_store(cx, t, k, users.get(id(t), []), kind, outputs):
                stored.add(id(t))
    for op in ops:
        if kind[id(op)] == "alias":
            stored.add(id(op.inputs[0]))
        elif kind[id(op)] == "view" and op.opdef.view == "gather":
            stored.add(id(op.inputs[0]))
            if not _is_register(cx, op.inputs[1]):
                stored.add(id(op.inputs[1]))
        elif op.type in ("FloorDiv", "FloorMod", "Pow") and op.inputs[0].dtype.is_integer:
            stored.add(id(op.inputs[1]))
        elif kind[id(op)] == "indexed" and op.type in ("PadV2", "MirrorPad"):
            stored.add(id(op.inputs[0]))          # read through an indirect index
    produced = {id(t) for op in ops for t in op.outputs}
    planned = {id(op) for op in ops}

    def stored_view(op) -> bool:
        """A view of a stored tensor: an Array over the same memory, at no cost."""
        return kind[id(op)] == "view" and op.opdef.view != "gather" and fuse and (
            id(op.inputs[0]) in stored or id(op.inputs[0]) not in produced)
    for op in ops:
        # an Identity of a stored tensor (or of a view of one) nothing else reads (a graph's output) is that
        # tensor: a result that is not contiguous is copied when it is handed out (``output``)
        x = op.inputs[0] if op.inputs else None
        if op.type == "Identity" and kind[id(op)] == "elementwise" and fuse and \
                (id(x) in stored or id(x.op) in planned and stored_view(x.op)) \
                and id(x) in produced and len(users.get(id(x), [])) == 1 and id(x) not in outputs:
            kind[id(op)] = "alias"
            stored.add(id(op.outputs[0]))
    for op in ops:
        if stored_view(op):
            kind[id(op)] = "alias"
            stored.update(id(t) for t in op.outputs)
    regions = _regions(cx, ops, kind, users, stored, outputs) if fuse else []
    region_of = {id(op): r for r in regions for op in r.members}
    after = lists.order_constraints(graph) if cx.native_lists else []
    units = _order(ops, regions, region_of, after)
    plan = Plan(kind, stored, units, [], region_of, {k: len(v) for k, v in users.items()})
    plan.reads = [_unit_reads(plan, unit) for unit in units]
    plan.fused = sum(1 for op in ops if kind[id(op)] in ("elementwise", "generator", "view", "query", "indexed")
                     and not any(id(t) in stored for t in op.outputs))
    return plan


def _is_register(cx, t) -> bool:
    return product(cx.dims[id(t)]).const == 1


def _must_store(cx, t, k, readers, kind, outputs) -> bool:
    if id(t) in outputs or _is_register(cx, t):
        return True
    # a Shape or Size reads the dims only: the gradient of a mean reads its input's size, which made a squared
    # error computed once into memory and read back by its mean (a second reader)
    readers = [(op, pos) for op, pos in readers if kind[id(op)] != "query"]
    if not readers:
        return False
    for op, pos in readers:
        if kind[id(op)] in ("opaque", "alias", "const") and not (op.type in LAZY_VALUE and pos == 0):
            return True
    if k in ("view", "query", "generator", "indexed"):
        return False
    costly = expensive(t.op.opdef.c_expr) or any(
        kind.get(id(x.op)) == "elementwise" and not _is_register(cx, x) for x in t.op.inputs)
    if len(readers) > 1:
        return costly
    op, _ = readers[0]
    if kind[id(op)] == "indexed" and costly:       # a broadcast or padding reads elements more than once
        return True
    if kind[id(op)] == "elementwise" and costly:
        out = cx.dims[id(op.outputs[0])]
        mine = cx.dims[id(t)]
        if len(mine) < len(out) and product(out[:len(out) - len(mine)]) != 1:
            return True
        if any(a != b and a == 1 for a, b in zip(mine, out[len(out) - len(mine):])):
            return True
    return False


# ---------------------------------------------------------------------------
# Row groups.


def _regions(cx, ops, kind, users, stored, outputs) -> list:
    position = {id(op): i for i, op in enumerate(ops)}
    producer = {id(t): op for op in ops for t in op.outputs}
    taken: set[int] = set()
    regions = []
    for seed in ops:
        if kind[id(seed)] != "reduction" or id(seed) in taken:
            continue
        key = _row_key(cx, seed)
        if key is None:
            continue
        region = Region(key[0], key[1], [seed])
        member_ids = {id(seed)}
        tainted: set[int] = set(id(t) for t in seed.outputs)     # tensors depending on the region
        for op in ops[position[id(seed)] + 1:]:
            if id(op) in taken:
                continue
            inputs = [id(t) for t in op.inputs]
            touches = [i for i in inputs if i in tainted]
            if not touches:
                continue
            ok = _fits(cx, op, kind, region) and all(
                i not in tainted or producer[i] is not None and id(producer[i]) in member_ids for i in inputs)
            if ok:
                region.members.append(op)
                member_ids.add(id(op))
            for t in op.outputs:
                tainted.add(id(t))
        reductions = [op for op in region.members if kind[id(op)] == "reduction"]
        full = [op for op in region.members if cx.dims[id(op.outputs[0])] == region.domain
                and kind[id(op)] != "reduction"]
        if len(reductions) < 2 and not full:
            continue
        # a member whose result leaves the group, or no member reads, is stored
        _trim(cx, region, kind, users, stored, outputs)
        if not [op for op in region.members if kind[id(op)] == "reduction"]:
            continue
        regions.append(region)
        taken.update(id(op) for op in region.members)
    return regions


def _row_key(cx, op):
    """(domain, number of trailing reduced axes) when ``op`` reduces trailing axes and keeps some rows."""
    x = op.inputs[0]
    dims = cx.dims.get(id(x))
    if dims is None:
        return None             # a rank only the run time tells
    axes = op.attrs["axis"]
    rank = len(dims)
    axes = list(range(rank)) if axes is None else sorted({a % rank for a in axes}) if rank else []
    if not axes or axes != list(range(rank - len(axes), rank)) or len(axes) == rank:
        return None
    if product(dims[:rank - len(axes)]).const == 1:
        return None
    if product(dims[rank - len(axes):]).const == 1:
        # over static axes of size 1 the reduced values have the domain's dims: a group could not tell them
        # from the values it reads at every element (a softmax over one class); a plain reduction copies them
        return None
    return dims, len(axes)


def _row_shaped(dims, region) -> bool:
    rows = region.row_dims
    return dims == rows or dims == rows + (Poly.of(1),) * region.reduced


def _fits(cx, op, kind, region) -> bool:
    k = kind[id(op)]
    dims = cx.dims.get(id(op.outputs[0])) if op.outputs else None
    if dims is None or any(id(t) not in cx.dims for t in op.inputs):
        return False            # a rank only the run time tells (a py_function's result): not in a row group
    if k == "reduction":
        return _row_key(cx, op) == (region.domain, region.reduced)
    if k == "elementwise":
        return dims == region.domain or _row_shaped(dims, region)
    if k == "view" and op.opdef.view in ("expand_dims", "squeeze"):
        return _row_shaped(dims, region) and _row_shaped(cx.dims[id(op.inputs[0])], region)
    return False


def _trim(cx, region, kind, users, stored, outputs) -> None:
    """Members read outside the group (or graph outputs) are stored; the others live in the group's
    loops (registers per row, per-row scratch buffers)."""
    member_ids = {id(op) for op in region.members}
    for op in region.members:
        for t in op.outputs:
            readers = users.get(id(t), [])
            outside = [r for r, _ in readers if id(r) not in member_ids]
            if outside or id(t) in outputs:
                stored.add(id(t))
            else:
                stored.discard(id(t))


# ---------------------------------------------------------------------------
# Order and liveness.


def _order(ops, regions, region_of, after=()) -> list:
    """A topological order of the units (ops outside groups, and groups), close to the graph's; ``after``:
    (first, then) pairs of ops to order besides their data dependencies."""
    units: list = []
    unit_of: dict[int, int] = {}
    for op in ops:
        region = region_of.get(id(op))
        if region is not None:
            if id(region) not in unit_of:
                unit_of[id(region)] = len(units)
                units.append(region)
            unit_of[id(op)] = unit_of[id(region)]
        else:
            unit_of[id(op)] = len(units)
            units.append(op)
    producer_unit = {}
    for op in ops:
        for t in op.outputs:
            producer_unit[id(t)] = unit_of[id(op)]
    deps: list[set] = [set() for _ in units]
    for op in ops:
        u = unit_of[id(op)]
        for t in op.inputs:
            p = producer_unit.get(id(t))
            if p is not None and p != u:
                deps[u].add(p)
        for c in op.control_inputs:
            p = unit_of.get(id(c))
            if p is not None and p != u:
                deps[u].add(p)
    for first, then in after:
        p, u = unit_of.get(id(first)), unit_of.get(id(then))
        if p is not None and u is not None and p != u:
            deps[u].add(p)
    waiting = [len(d) for d in deps]
    dependents: list[list] = [[] for _ in units]
    for u, d in enumerate(deps):
        for p in d:
            dependents[p].append(u)
    ready = [u for u in range(len(units)) if not waiting[u]]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(units[u])
        for v in dependents[u]:
            waiting[v] -= 1
            if not waiting[v]:
                heapq.heappush(ready, v)
    if len(order) != len(units):
        raise ValueError("fusion made a cycle between kernels")
    return order


def unit_ops(unit) -> list:
    return unit.members if isinstance(unit, Region) else [unit]


def _unit_reads(plan: Plan, unit) -> set:
    inside = {id(op) for op in unit_ops(unit)}
    found: set[int] = set()
    for op in unit_ops(unit):
        for t in op.inputs:
            if id(t.op) not in inside:
                found |= leaves(plan, t)
    return found


def leaves(plan: Plan, t, seen=None) -> set:
    """The stored tensors whose memory reading ``t`` touches."""
    seen = set() if seen is None else seen
    if id(t) in seen:
        return set()
    seen.add(id(t))
    k = plan.kind.get(id(t.op))
    if k == "alias":
        return {id(t)} | leaves(plan, t.op.inputs[0], seen)
    if id(t) in plan.stored or k is None:
        return {id(t)}
    out: set[int] = set()
    for x in t.op.inputs:
        out |= leaves(plan, x, seen)
    return out
