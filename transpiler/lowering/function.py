"""Lowering one function's graph into the loop IR: the driver and the function's boundary.

``lower_function`` lowers the graph under the assumptions ``assume.discover`` finds, runs the IR passes
(``passes.PASSES``) and, when it assumed input dims equal, adds the guarded fallback. ``Lowering`` is the
``Context`` of one lowering with the driver's steps: ``lower_graph`` walks a graph (the function's, or a
branch or loop body nested in it): it sets every tensor's symbolic dims (``shapes``), plans fusion
(``plan``), then builds each unit in order: the op's shape code, then its kernel (``kernels``, ``rows``) or
emitter (``ops``, ``control`` ...). Every step returns the statements it builds. Where stored tensors live
is ``storage.py``'s decision.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.executor import needed_ops
from runtime.graph import Graph
from transpiler.lowering import ops as opaque
from transpiler.lowering import parallel, rows, shapes
from transpiler.lowering.assume import Assumptions, discover
from transpiler.lowering.context import Context, Options, Report
from transpiler.lowering.contract import contract_products
from transpiler.lowering.ir import (
    BLOB_TYPES,
    Alloc,
    Assign,
    Cast,
    Comment,
    Declare,
    Describe,
    Field,
    Function,
    Parts,
    Poly,
    SetTensor,
    Slot,
    Store,
    literal,
    product,
)
from transpiler.lowering.kernels import Elements, elementwise, loads, reduce, scalar_assign, view_array
from transpiler.lowering.passes import checked, run_passes, verifying
from transpiler.lowering.plan import Region, plan_graph, unit_ops
from transpiler.lowering.storage import release_dead, storage, temporary
from transpiler.lowering.values import Array, Obj, Scalar, contiguous_strides

BLOB_MIN_BYTES = 1 << 14     # a constant at least this big is embedded as a binary file, not C literals


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
    options = Options(fuse=fuse, plan_memory=plan_memory)

    def lowered(assume: Assumptions, fn_name: str = name) -> Function:
        return Lowering(graph, fn_name, options, assume).lower()

    assume = discover(lowered)
    cx = Lowering(graph, name, options, assume)
    ir = _finish(cx, cx.lower())
    ir.guard = [(_entry_dim(a), _entry_dim(b)) for a, b in assume.guard()]
    if ir.guard:
        general = Lowering(graph, f"{name}_any", options, discover(lowered, unions=False))
        fallback = general.lower()
        if [id(h) for h in general.variables.handles] != [id(h) for h in cx.variables.handles]:
            raise AssertionError(f"{name}: the guarded versions use different variables")
        ir.fallback = _finish(general, fallback)
        if verifying():
            checked(ir, "guarding")
    return LoweredFunction(ir, cx.variables.handles, cx.report)


def _finish(cx: Context, fn: Function) -> Function:
    """The function's IR after the passes over finished loop nests (``passes.PASSES``; none without fusion)."""
    return run_passes(fn, None if cx.options.fuse else [])


def _entry_dim(key: tuple) -> Field:
    """``in[k].shape[d]`` for the entry-dim key ``(k, d)``."""
    return Field(Slot("in", key[0]), "shape", "int64_t", key[1])


class Lowering(Context):
    """One function's lowering: its ``Context`` and the driver's steps (see the module docstring)."""

    def lower(self) -> Function:
        """The function's IR (before the passes)."""
        graph = self.graph
        bindings = {id(t): self.input_value(t, Slot("in", i)) for i, t in enumerate(graph.inputs)}
        body = self.lower_graph(graph, bindings)
        for i, t in enumerate(graph.outputs):
            body += self.output(t, Slot("out", i))
        return Function(self.name, self.storage.locals, body, self.signature(), len(graph.inputs), names=self.names)

    # -- the function's boundary ---------------------------------------------------------------
    def input_value(self, t, tensor: Slot):
        """The value of an ``rt_tensor`` (a function input, a variable's storage) of tensor ``t``'s type."""
        if t.dtype.c_type is None or t.shape.rank is None:
            return Obj(tensor, t.dtype)
        dims = []
        entry = self.entry
        for d, n in enumerate(t.shape.dims):
            if n is None:
                key = (tensor.index, d)
                rep = self.assume.find(key) if self.assume.unions else key
                if rep not in entry.symbols:
                    symbol = self.local("int64_t", "n", _entry_dim(rep))
                    entry.symbols[rep] = Poly.sym(symbol)
                    entry.keys[symbol] = rep
                dims.append(entry.symbols[rep])
            else:
                dims.append(Poly.of(n))
        self.dims[id(t)] = tuple(dims)
        ptr = self.local(f"{t.dtype.c_type} *", "x", Cast(Field(tensor, "data", "void *"), f"{t.dtype.c_type} *"))
        return Array.dense(ptr, t.dtype, dims, "input")

    def output(self, t, target: Slot) -> list:
        """Describe a result in ``out[i]``: arena (or input, const) memory the caller copies or adopts."""
        value = self.values[id(t)]
        if isinstance(value, Obj):
            return [SetTensor(target, value.ref)]
        dims = self.dims[id(t)]
        out = []
        if isinstance(value, Scalar) or value.storage == "stack" or not value.contiguous:
            array, out = self._arena(t)
            if isinstance(value, Scalar):
                out.append(Store(array.ptr, Poly.of(0), value.expr))
            else:
                out += elementwise(self, [array], dims, lambda el, index: [value.load(index)])
            value = array
        out.append(Describe(target, value.ptr, list(dims), t.dtype.code))
        return out

    def _arena(self, t) -> tuple[Array, list]:
        """A buffer of the call's arena for ``t`` (a result the caller adopts)."""
        dims = self.dims[id(t)]
        ptr = self.pointer(t.dtype.c_type, "p")
        return Array.dense(ptr, t.dtype, dims, "arena"), [Alloc(ptr, t.dtype.c_type, product(dims), "arena")]

    # -- graphs ----------------------------------------------------------------------------------
    def lower_graph(self, graph: Graph, bindings: dict) -> list:
        """The statements of ``graph``'s needed ops; its inputs have the ``bindings`` values."""
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
        plan = plan_graph(self, graph, ops, fuse=self.options.fuse)
        self.report.plans.append((graph, plan))
        self.report.fused += plan.fused
        last_use: dict[int, int] = {}
        for u, reads in enumerate(plan.reads):
            for x in reads:
                last_use[x] = u
        aliased = {id(x) for op in ops if plan.kind[id(op)] == "alias" for x in (op.inputs[0], op.outputs[0])}
        escaping = self.storage.escaping
        if graph is self.graph:     # what a result aliases is a result too (arena memory, not the stack)
            for op in reversed(ops):
                if plan.kind[id(op)] == "alias" and any(id(t) in escaping for t in op.outputs):
                    escaping.add(id(op.inputs[0]))
        with self.enter(plan=plan, last_use=last_use, unit_index=-1, aliased=aliased):
            split = parallel.split_parts(self, plan, ops) if graph is self.graph and self.options.fuse else None
            if split is None:
                return self._units(plan.units)
            pre, parts, post = split
            out = self._units(pre)
            with self.enter(in_parts=True):
                blocks = [self._units(part) for part in parts]
            return out + [Parts(blocks)] + self._units(post)

    def _units(self, units: list) -> list:
        position = {id(unit): u for u, unit in enumerate(self.scope.plan.units)}
        out = []
        for unit in units:
            self.scope.unit_index = position[id(unit)]
            for op in unit_ops(unit):
                out += shapes.code(self, op)
            if isinstance(unit, Region):
                self.report.groups += 1
                out += rows.emit_region(self, unit)
            else:
                out += self.lower_op(unit)
            if not self.scope.depth and not self.scope.in_parts:
                release_dead(self)
        return out

    def lower_op(self, op) -> list:
        """The statements computing ``op``'s stored results (none for a lazy op: its readers compute it)."""
        plan = self.scope.plan
        kind = plan.kind[id(op)]
        if kind == "const":
            self.values[id(op.outputs[0])] = self.const(op)
            return []
        if kind == "alias":
            return self._alias(op)
        if kind == "opaque":
            return [Comment(f"{op.name} = {op.type}")] + opaque.emit(self, op)
        if kind == "reduction":
            t = op.outputs[0]
            if id(t) not in plan.stored:
                return []
            target, out = storage(self, t)
            self.values[id(t)] = target
            return [Comment(f"{op.name} = {op.type}")] + out + reduce(
                self, op, target.expr.name if isinstance(target, Scalar) else target)
        out = shapes.guard_divisor(self, op) if op.type in ("FloorDiv", "FloorMod", "Pow") else []
        for t in op.outputs:
            if id(t) in plan.stored:
                out += [Comment(f"{op.name} = {op.type}")] + self.store_tensor(t)
        return out

    def _alias(self, op) -> list:
        """A view of a stored tensor (an Array over its memory) or a copy of a register."""
        base = self.values[id(op.inputs[0])]
        out = []
        for position, t in enumerate(op.outputs):
            if isinstance(base, Scalar):
                self.values[id(t)] = Scalar(base.expr, base.dtype, self.dims[id(t)])
            elif op.opdef.view is None:                 # Identity, a SumToShape to its own dims
                self.values[id(t)] = base
            elif op.opdef.view == "reshape":
                if not base.contiguous:           # a reshape of a strided view: copy it first
                    ptr, alloc = temporary(self, base.ctype, base.count())
                    copy = Array.dense(ptr, base.dtype, base.dims, "arena")
                    out += [alloc] + elementwise(self, [copy], base.dims,
                                                 lambda el, index, base=base: [base.load(index)])
                    base = copy
                self.values[id(t)] = Array(base.ptr, base.dtype, self.dims[id(t)],
                                           contiguous_strides(self.dims[id(t)]), base.offset, base.storage)
            else:
                self.values[id(t)] = view_array(self, op, position, base)
            if id(t) in self.scope.dests:
                out += self.copy_into_storage(t)
        return out

    def store_tensor(self, t) -> list:
        """Compute a stored fusible tensor with one kernel (its lazy producers fused in)."""
        op = t.op
        dims = self.dims[id(t)]
        index = tuple(Poly.sym(self.fresh("i")) for _ in dims)
        probe = Elements(self).compute(op, t.index, index)
        target, out = storage(self, t, loads([probe]), index)
        self.values[id(t)] = target
        if isinstance(target, Scalar):
            return out + scalar_assign(self, target.expr.name, lambda el: el.compute(op, t.index, (0,) * len(dims)))
        return out + elementwise(self, [target], dims, lambda el, idx: [el.compute(op, t.index, idx)])

    def copy_into_storage(self, t) -> list:
        """Give ``t`` storage of its own (a copy of its current value)."""
        value = self.values[id(t)]
        target, out = storage(self, t)
        if isinstance(target, Scalar):
            src = value.expr if isinstance(value, Scalar) else value.load((0,) * len(self.dims[id(t)]))
            out.append(Assign(target.expr.name, src))
        else:
            out += elementwise(self, [target], self.dims[id(t)], lambda el, idx: [
                value.expr if isinstance(value, Scalar) else value.load(idx)])
        self.values[id(t)] = target
        return out

    def const(self, op):
        array = op.attrs["value"].array
        dtype = op.outputs[0].dtype
        if array.size == 1:
            return Scalar(literal(array.reshape(-1)[0], dtype), dtype, self.dims[id(op.outputs[0])])
        data = self.fresh("k")
        if array.nbytes >= BLOB_MIN_BYTES and BLOB_TYPES.get(dtype.c_type) == np.dtype(dtype.np).name:
            # its bytes, embedded as a file: a 4096 x 784 dataset spelled as 3.2 million C literals took 70 s to
            # render and compile
            blob = np.ascontiguousarray(array, dtype.np).tobytes()
            self.storage.locals.append(Declare(data, dtype.c_type, size=array.size, static=True, const=True,
                                               blob=blob))
            return Array.dense(data, dtype, self.dims[id(op.outputs[0])], "const")
        values = tuple(literal(v, dtype) for v in array.reshape(-1).tolist())
        self.storage.locals.append(Declare(data, dtype.c_type, size=max(array.size, 1), values=values, static=True,
                                           const=True))
        return Array.dense(data, dtype, self.dims[id(op.outputs[0])], "const")
