"""Lowering one function's graph into the loop IR: the driver, storage and the function's boundary.

``Lowerer.lower_graph`` walks a graph (the function's, or a branch or loop body nested in it): it
sets every tensor's symbolic dims (``shapes``), plans fusion (``plan``), then emits each unit in
order: the op's shape checks, then its kernel (``kernels``, ``rows``) or emitter (``ops``,
``control``).

Storage: a one-element value lives in a C local; a small tensor of static shape in a stack array
(reused once dead, or written in place by an elementwise kernel that reads it for the last time);
other tensors in the call's arena, or, inside loops and branches, in buffers kept across iterations
and grown only when too small, so that a loop iteration allocates nothing.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from runtime.executor import needed_ops
from runtime.graph import Graph, all_operations
from transpiler.lowering import lists, parallel, rows, shapes
from transpiler.lowering import ops as opaque
from transpiler.lowering.assume import Assumptions, discover
from transpiler.lowering.contract import contract_products
from transpiler.lowering.ir import (
    NULL,
    Alloc,
    Assign,
    Cast,
    Comment,
    Declare,
    Describe,
    Field,
    Function,
    Namer,
    Parts,
    Poly,
    SetTensor,
    Slot,
    Store,
    Var,
    literal,
    product,
)
from transpiler.lowering.kernels import Elements, elementwise, loads, reduce, scalar_assign, view_array
from transpiler.lowering.passes import checked, run_passes, verifying
from transpiler.lowering.plan import Plan, Region, plan_graph, unit_ops
from transpiler.lowering.values import Array, Obj, Scalar, contiguous_strides

STACK_BUFFER_MAX = 65536      # bytes: bigger tensors go to the arena
STACK_TOTAL_MAX = 262144      # bytes of stack arrays per function


@dataclass
class Report:
    """What the build report says about one function."""
    callbacks: dict = field(default_factory=dict)   # op type -> ops run through Python
    fused: int = 0                                   # ops computed inside another op's kernel
    groups: int = 0                                  # row groups (reductions fused with their readers)
    callback_ops: list = field(default_factory=list)   # the ops run through Python
    plans: list = field(default_factory=list)          # (graph, Plan) of the top graph and each subgraph


@dataclass
class LoweredFunction:
    """The loop IR of one function, the variables it uses (in order) and its report."""
    ir: Function
    variables: list
    report: Report


def lower_function(graph: Graph, name: str, fuse: bool = True, plan_memory: bool = True) -> LoweredFunction:
    """Lower a concrete function's (optimized) graph to the loop IR of ``static int name(...)``.

    Run-time dims are lowered under the ``assume`` module's facts: loop dims proven invariant, and input dims
    the program relates assumed equal; when it assumes any, the function's entry checks them (``guard``) and
    calls a version lowered without them (``fallback``) when they do not hold.
    """
    if fuse:
        graph = contract_products(graph)

    def lowered(assume: Assumptions, fn_name: str = name) -> Lowerer:
        lw = Lowerer(graph, fn_name, fuse=fuse, plan_memory=plan_memory, assume=assume)
        lw.lower_function()
        return lw

    assume = discover(lowered)
    lw = lowered(assume)
    ir = _finish(lw)
    ir.guard = [(_entry_dim(a), _entry_dim(b)) for a, b in assume.guard()]
    if ir.guard:
        general = lowered(discover(lowered, unions=False), f"{name}_any")
        if [id(h) for h in general.variables] != [id(h) for h in lw.variables]:
            raise AssertionError(f"{name}: the guarded versions use different variables")
        ir.fallback = _finish(general)
        if verifying():
            checked(ir, "guarding")
    return LoweredFunction(ir, lw.variables, lw.report)


def _finish(lw: Lowerer) -> Function:
    """The function's IR after the passes over finished loop nests (``passes.PASSES``; none without fusion)."""
    fn = Function(lw.name, lw.locals, lw.body, lw.signature(), len(lw.graph.inputs), names=lw.names)
    return run_passes(fn, None if lw.fuse else [])


def _entry_dim(key: tuple) -> Field:
    """``in[k].shape[d]`` for the entry-dim key ``(k, d)``."""
    return Field(Slot("in", key[0]), "shape", "int64_t", key[1])


class Lowerer:
    """The state of one function's lowering (see the module docstring)."""

    def __init__(self, graph: Graph, name: str, fuse: bool = True, plan_memory: bool = True,
                 assume: Assumptions | None = None):
        self.graph = graph
        # what run-time dims may be assumed (``assume.py``); by default nothing: every loop dim varies
        self.assume = assume if assume is not None else Assumptions(unions=False, varying={"*"})
        self.entry_keys: dict[str, tuple] = {}   # symbol of an input's run-time dim -> its key (slot, dim)
        self.entry_symbols: dict[str, Poly] = {}   # class representative key -> its symbol
        self.hypotheses: dict[int, set] = {}   # id(While op) -> {(loop variable, axis)} assumed invariant
        self.name = name
        self.fuse = fuse
        self.plan_memory = plan_memory
        self.locals: list = []
        self.body: list = []
        self.out: list = self.body
        self.names = Namer()
        self.dims: dict[int, tuple] = {}
        self.values: dict[int, object] = {}
        self.shape_code: dict[int, list] = {}
        self.squeezed: dict[int, set] = {}
        self.slices: dict[int, list] = {}
        self.windows: dict[int, str] = {}     # id(op) -> its rt_window local (convolutions, pooling)
        self.pads: dict[int, list] = {}       # id(op) -> [(before, after)] per dim of a padding or its gradient
        self.variables: list = []
        self.variable_storage: dict = {}      # id(variable handle) -> its storage (an Array over in[...])
        self.report = Report()
        self.op_index = {id(op): i for i, op in enumerate(all_operations(graph))}
        self.depth = 0                       # > 0 inside a loop or branch
        self.in_parts = False
        self.stack_bytes = 0
        self.pool: dict[tuple, list] = {}    # (ctype, count) -> free stack arrays
        self.stack_of: dict[int, tuple] = {}  # id(tensor) -> (buffer, key) of its stack array
        self.dests: dict[int, object] = {}   # id(tensor) -> where a branch/loop body must put it
        self.drops: list | None = None       # callback results to free at the end of the scope
        self.plan: Plan | None = None
        self.escaping: set[int] = {id(t) for t in graph.outputs}
        self.native_lists = lists.native_lists(graph)

    # -- names and statements ---------------------------------------------------------------
    def fresh(self, base: str = "t") -> str:
        return self.names.fresh(base)

    def local(self, ctype: str, base: str, init=None, size=None, static: bool = False) -> str:
        """A function-level C local (an array of ``size`` elements when given)."""
        name = self.fresh(base)
        self.locals.append(Declare(name, ctype, init, size, static=static))
        return name

    def pointer(self, ctype: str, base: str) -> str:
        """A function-level pointer to ``ctype``, NULL until set."""
        return self.local(f"{ctype} *", base, NULL)

    def new_dim(self) -> Poly:
        """A fresh run-time dim (an ``int64_t`` local, assigned by shape code)."""
        return Poly.sym(self.local("int64_t", "n", Poly.of(0)))

    def emit(self, *stmts) -> None:
        self.out.extend(stmts)

    @contextlib.contextmanager
    def block(self, target: list):
        saved = self.out
        self.out = target
        try:
            yield target
        finally:
            self.out = saved

    def entry_classes(self, polys) -> list[str] | None:
        """The entry-dim keys of ``polys`` when each is one input's run-time dim, else None."""
        keys = []
        for p in polys:
            symbols = p.symbols()
            if len(symbols) != 1 or p != Poly.sym(next(iter(symbols))):
                return None
            key = self.entry_keys.get(next(iter(symbols)))
            if key is None:
                return None
            keys.append(key)
        return keys

    def assume_equal(self, polys) -> bool:
        """Whether run-time dims ``polys`` (distinct symbols) may be taken as one: while discovering, input dims
        are (the entry will check them); otherwise they are separate."""
        keys = self.entry_classes(polys)
        if keys is None or not self.assume.unions or not self.assume.learning:
            return False
        self.assume.union(keys)
        return True

    def same_dim(self, a: Poly, b: Poly) -> bool:
        """``a`` and ``b`` are the same size: equal, or input dims assumed equal."""
        if a == b:
            return True
        keys = self.entry_classes([a, b])
        return keys is not None and self.assume.find(keys[0]) == self.assume.find(keys[1])

    def unify(self, a: Poly, b: Poly) -> bool:
        """Whether ``a`` and ``b`` may be taken as one size (no check needed): the same, or input dims assumed
        equal (while discovering, this assumes it)."""
        return self.same_dim(a, b) or self.assume_equal([a, b])

    def message(self, op, text: str) -> str:
        """An error message (printf format) naming ``op`` and the user's line, as the executors do."""
        return f"{op.type}: {text}\n  [[{op.where().replace('%', '%%')}]]"

    def const_value(self, t):
        return t.op.attrs["value"].array if t.op.type == "Const" else None

    def signature(self) -> str:
        ins = ", ".join(f"{t.op.name}: {t.dtype}{_shape_text(t)}" for t in self.graph.inputs)
        return f"({ins})"

    # -- storage -----------------------------------------------------------------------------
    def temporary(self, ctype: str, count: Poly) -> tuple[str, object]:
        """(pointer, its allocation statement) of a scratch buffer for one kernel."""
        ptr = self.pointer(ctype, "w")
        if count.const is not None and count.const * 8 <= STACK_BUFFER_MAX and \
                self.stack_bytes + count.const * 8 <= STACK_TOTAL_MAX:
            buf = self.local(ctype, "wbuf", size=max(count.const, 1))
            self.stack_bytes += max(count.const, 1) * 8
            return ptr, Alloc(ptr, ctype, count, "stack", buffer=buf)
        if self.depth:
            return ptr, Alloc(ptr, ctype, count, "reserve", capacity=self.local("int64_t", "cap", Poly.of(0)))
        return ptr, Alloc(ptr, ctype, count, "arena")

    def storage(self, t, reads: list | None = None, index: tuple | None = None):
        """Where stored tensor ``t`` goes (allocation statements emitted): a Scalar or an Array.

        ``reads``: the loads of the kernel computing element ``index`` of ``t``; a buffer read there for
        the last time, at the element being written, is written in place.
        """
        dest = self.dests.get(id(t))
        dims = self.dims[id(t)]
        if dest is not None:
            ptr, capacity = dest
            if capacity is not None:            # None: a local array of the exact size (``control._buffer``)
                self.emit(Alloc(ptr, t.dtype.c_type, product(dims), "reserve", capacity=capacity))
            return Array.dense(ptr, t.dtype, dims, "reserve")
        if product(dims).const == 1:
            name = self.local(t.dtype.c_type, "s")
            return Scalar(Var(name, t.dtype.c_type), t.dtype, dims)
        if reads and self.plan_memory:
            reuse = self._in_place(t, reads, index)
            if reuse is not None:
                return reuse
        count = product(dims)
        nbytes = None if count.const is None else max(count.const, 1) * t.dtype.size
        ptr = self.pointer(t.dtype.c_type, "p")
        if nbytes is not None and nbytes <= STACK_BUFFER_MAX and id(t) not in self.escaping and self.plan_memory:
            key = (t.dtype.c_type, count.const)
            free = self.pool.get(key)
            if free and not self.depth and not self.in_parts:
                buf = free.pop()
            elif self.stack_bytes + nbytes <= STACK_TOTAL_MAX:
                buf = self.local(t.dtype.c_type, "buf", size=max(count.const, 1))
                self.stack_bytes += nbytes
            else:
                buf = None
            if buf is not None:
                self.emit(Alloc(ptr, t.dtype.c_type, count, "stack", buffer=buf))
                self.stack_of[id(t)] = (buf, key)
                return Array.dense(ptr, t.dtype, dims, "stack")
        if self.depth:
            cap = self.local("int64_t", "cap", Poly.of(0))
            self.emit(Alloc(ptr, t.dtype.c_type, count, "reserve", capacity=cap))
            return Array.dense(ptr, t.dtype, dims, "reserve")
        self.emit(Alloc(ptr, t.dtype.c_type, count, "arena"))
        return Array.dense(ptr, t.dtype, dims, "arena")

    def _in_place(self, t, reads: list, index: tuple):
        """A stored tensor with ``t``'s dims and dtype whose last reader is this kernel, which reads it
        only at the element it writes: ``t`` takes over its memory."""
        if self.depth or self.in_parts or self.plan is None or index is None:
            return None
        dims = self.dims[id(t)]
        at = Array.dense("?", t.dtype, dims, "arena").load(index).index
        for x_id, last in self.last_use.items():
            if last != self.unit_index or x_id in self.escaping or x_id in self.aliased:
                continue
            value = self.values.get(x_id)
            if not isinstance(value, Array) or value.storage not in ("arena", "stack") or value.dims != dims \
                    or value.dtype is not t.dtype or not value.contiguous:
                continue
            if value.storage == "stack" and id(t) in self.escaping:
                continue
            mine = [ld for ld in reads if ld.ptr == value.ptr]
            if not mine or any(ld.index != at or ld.indirect for ld in mine):
                continue
            if x_id in self.stack_of:
                self.stack_of[id(t)] = self.stack_of.pop(x_id)
            self.last_use[x_id] = -1
            return Array.dense(value.ptr, t.dtype, dims, value.storage)
        return None

    def release_dead(self) -> None:
        """Return the stack arrays whose last reader was the current unit to the pool."""
        for x_id, last in list(self.last_use.items()):
            if last == self.unit_index and x_id in self.stack_of:
                buf, key = self.stack_of.pop(x_id)
                self.pool.setdefault(key, []).append(buf)

    # -- the function --------------------------------------------------------------------------
    def lower_function(self) -> None:
        graph = self.graph
        bindings = {}
        for i, t in enumerate(graph.inputs):
            bindings[id(t)] = self.input_value(t, Slot("in", i))
        self.lower_graph(graph, bindings)
        for i, t in enumerate(graph.outputs):
            self.emit_output(t, Slot("out", i))

    def input_value(self, t, tensor: Slot):
        """The value of an ``rt_tensor`` (a function input, a variable's storage) of tensor ``t``'s type."""
        if t.dtype.c_type is None or t.shape.rank is None:
            return Obj(tensor, t.dtype)
        dims = []
        for d, n in enumerate(t.shape.dims):
            if n is None:
                key = (tensor.index, d)
                rep = self.assume.find(key) if self.assume.unions else key
                if rep not in self.entry_symbols:
                    symbol = self.local("int64_t", "n", _entry_dim(rep))
                    self.entry_symbols[rep] = Poly.sym(symbol)
                    self.entry_keys[symbol] = rep
                dims.append(self.entry_symbols[rep])
            else:
                dims.append(Poly.of(n))
        self.dims[id(t)] = tuple(dims)
        ptr = self.local(f"{t.dtype.c_type} *", "x", Cast(Field(tensor, "data", "void *"), f"{t.dtype.c_type} *"))
        return Array.dense(ptr, t.dtype, dims, "input")

    def emit_output(self, t, target: Slot) -> None:
        """Describe a result in ``out[i]``: arena (or input, const) memory the caller copies or adopts."""
        value = self.values[id(t)]
        if isinstance(value, Obj):
            self.emit(SetTensor(target, value.ref))
            return
        dims = self.dims[id(t)]
        if isinstance(value, Scalar) or value.storage == "stack" or not value.contiguous:
            ptr = self.pointer(t.dtype.c_type, "p")
            self.emit(Alloc(ptr, t.dtype.c_type, product(dims), "arena"))
            array = Array.dense(ptr, t.dtype, dims, "arena")
            if isinstance(value, Scalar):
                self.emit(Store(ptr, Poly.of(0), value.expr))
            else:
                self.emit(*elementwise(self, [array], dims, lambda el, index: [value.load(index)]))
            value = array
        self.emit(Describe(target, value.ptr, list(dims), t.dtype.code))

    # -- graphs ----------------------------------------------------------------------------------
    def lower_graph(self, graph: Graph, bindings: dict) -> None:
        """Emit ``graph``'s needed ops into the current block; its inputs have the ``bindings`` values."""
        for placeholder in graph.all_inputs():
            value = bindings[id(placeholder)]
            self.values[id(placeholder)] = value
            if id(placeholder) not in self.dims:
                if isinstance(value, (Array, Scalar)):
                    self.dims[id(placeholder)] = value.dims
                elif placeholder.shape.rank is not None and placeholder.dtype.c_type is not None:
                    self.dims[id(placeholder)] = shapes.static_dims(placeholder)
        needed = needed_ops(graph)
        ops = [op for op in graph.operations if id(op) in needed and op.type != "Placeholder"]
        for op in ops:
            if any(t.shape.rank is None for t in op.inputs if t.dtype.c_type is not None) \
                    or any(id(t) not in self.dims for t in op.inputs if t.dtype.c_type is not None
                           and t.shape.rank is not None):
                for t in op.outputs:
                    if t.shape.rank is not None:
                        self.dims[id(t)] = tuple(Poly.of(d) if d is not None else self.new_dim() for d in t.shape.dims)
                continue
            shapes.infer(self, op)
        saved = (self.plan, getattr(self, "last_use", {}), getattr(self, "unit_index", -1),
                 getattr(self, "aliased", set()))
        plan = plan_graph(self, graph, ops, fuse=self.fuse)
        self.plan = plan
        self.report.plans.append((graph, plan))
        self.report.fused += plan.fused
        last_use: dict[int, int] = {}
        for u, reads in enumerate(plan.reads):
            for x in reads:
                last_use[x] = u
        self.last_use = last_use
        self.aliased = {id(x) for op in ops if plan.kind[id(op)] == "alias" for x in (op.inputs[0], op.outputs[0])}
        if graph is self.graph:     # what a result aliases is a result too (arena memory, not the stack)
            for op in reversed(ops):
                if plan.kind[id(op)] == "alias" and any(id(t) in self.escaping for t in op.outputs):
                    self.escaping.add(id(op.inputs[0]))
        split = parallel.split_parts(self, plan, ops) if graph is self.graph and self.fuse else None
        if split is None:
            self._emit_units(plan.units)
        else:
            pre, parts, post = split
            self._emit_units(pre)
            blocks = []
            self.in_parts = True
            for part in parts:
                with self.block([]) as block:
                    self._emit_units(part)
                blocks.append(block)
            self.in_parts = False
            self.emit(Parts(blocks))
            self._emit_units(post)
        self.plan, self.last_use, self.unit_index, self.aliased = saved

    def _emit_units(self, units: list) -> None:
        position = {id(unit): u for u, unit in enumerate(self.plan.units)}
        for unit in units:
            self.unit_index = position[id(unit)]
            for op in unit_ops(unit):
                for fn in self.shape_code.pop(id(op), []):
                    fn()
            if isinstance(unit, Region):
                self.report.groups += 1
                rows.emit_region(self, unit)
            else:
                self.lower_op(unit)
            if not self.depth and not self.in_parts:
                self.release_dead()

    def lower_op(self, op) -> None:
        plan = self.plan
        kind = plan.kind[id(op)]
        if kind == "const":
            self.values[id(op.outputs[0])] = self.const(op)
            return
        if kind == "alias":
            base = self.values[id(op.inputs[0])]
            for position, t in enumerate(op.outputs):
                if isinstance(base, Scalar):
                    self.values[id(t)] = Scalar(base.expr, base.dtype, self.dims[id(t)])
                elif op.opdef.view is None:                 # Identity
                    self.values[id(t)] = base
                elif op.opdef.view == "reshape":
                    if not base.contiguous:           # a reshape of a strided view: copy it first
                        ptr, alloc = self.temporary(base.ctype, base.count())
                        self.emit(alloc)
                        copy = Array.dense(ptr, base.dtype, base.dims, "arena")
                        self.emit(*elementwise(self, [copy], base.dims, lambda el, index: [base.load(index)]))
                        base = copy
                    self.values[id(t)] = Array(base.ptr, base.dtype, self.dims[id(t)],
                                               contiguous_strides(self.dims[id(t)]), base.offset, base.storage)
                else:
                    self.values[id(t)] = view_array(self, op, position, base)
                if id(t) in self.dests:
                    self.copy_into_storage(t)
            return
        if kind == "opaque":
            self.emit(Comment(f"{op.name} = {op.type}"))
            opaque.emit(self, op)
            return
        if kind == "reduction":
            t = op.outputs[0]
            if id(t) not in plan.stored:
                return
            self.emit(Comment(f"{op.name} = {op.type}"))
            target = self.storage(t)
            self.values[id(t)] = target
            self.emit(*reduce(self, op, target.expr.name if isinstance(target, Scalar) else target))
            return
        if op.type in ("FloorDiv", "FloorMod", "Pow"):
            shapes.guard_divisor(self, op)
        for t in op.outputs:
            if id(t) in plan.stored:
                self.emit(Comment(f"{op.name} = {op.type}"))
                self.store_tensor(t)

    def store_tensor(self, t) -> None:
        """Compute a stored fusible tensor with one kernel (its lazy producers fused in)."""
        op = t.op
        dims = self.dims[id(t)]
        index = tuple(Poly.sym(self.fresh("i")) for _ in dims)
        probe = Elements(self).compute(op, t.index, index)
        target = self.storage(t, loads([probe]), index)
        self.values[id(t)] = target
        make = lambda el, idx: [el.compute(op, t.index, idx)]
        if isinstance(target, Scalar):
            self.emit(*scalar_assign(self, target.expr.name, lambda el: el.compute(op, t.index, (0,) * len(dims))))
        else:
            self.emit(*elementwise(self, [target], dims, make))

    def copy_into_storage(self, t) -> None:
        """Give ``t`` storage of its own (a copy of its current value)."""
        value = self.values[id(t)]
        target = self.storage(t)
        if isinstance(target, Scalar):
            src = value.expr if isinstance(value, Scalar) else value.load((0,) * len(self.dims[id(t)]))
            self.emit(Assign(target.expr.name, src))
        else:
            self.emit(*elementwise(self, [target], self.dims[id(t)], lambda el, idx: [
                value.expr if isinstance(value, Scalar) else value.load(idx)]))
        self.values[id(t)] = target

    def const(self, op):
        array = op.attrs["value"].array
        dtype = op.outputs[0].dtype
        if array.size == 1:
            return Scalar(literal(array.reshape(-1)[0], dtype), dtype, self.dims[id(op.outputs[0])])
        values = tuple(literal(v, dtype) for v in array.reshape(-1).tolist())
        data = self.fresh("k")
        self.locals.append(Declare(data, dtype.c_type, size=max(array.size, 1), values=values, static=True, const=True))
        return Array.dense(data, dtype, self.dims[id(op.outputs[0])], "const")


def _shape_text(t) -> str:
    if t.shape.rank is None:
        return "[*]"
    return "[" + ",".join("?" if d is None else str(d) for d in t.shape.dims) + "]"
