"""The native emitter: C code for one concrete function's graph.

It is the sibling of ``runtime.executor``: it walks the same graph in the same
order and dispatches on the op type, but instead of running numpy kernels it
writes C that calls the kernel library (``runtime/kernels/rt_kernels.h``).
Elementwise chains become one loop (fusion); ``If``/``While`` become C control
flow; an op with no C emitter calls back into Python (with the GIL) to run its
numpy kernel, and the build report names it.

Every tensor is an ``rt_tensor`` local named by one namer; buffers come from the
call's arena and are released at the end of the scope (branch, loop iteration)
that made them, except the scope's results.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from runtime.graph import Graph, Operation, SymbolicTensor, all_operations

_HEAVY_TYPES = {"MatMul", "Sum", "Mean", "Max", "Min", "Prod", "Any", "All", "Cumsum", "Softmax", "Transpose",
                "Tanh", "Exp", "Log", "Sin", "Cos", "Sigmoid", "Sqrt"}
PARALLEL_MIN_ELEMENTS = 65536


def plan_parallel(em, graph: Graph, ops: list):
    """(pre, parts, post) when the graph has independent heavy parts, else None.

    Look for a join: an op whose inputs come from two or more subgraphs with no op in
    common (e.g. ``branch1(x) + branch2(y)``, or ``branch1(x) + branch2(x)``). Each such
    subgraph, closed over its ancestors, is a part; two or more heavy parts run
    concurrently, after the leaf ops (constants: pre) and before everything else (post).
    Graphs with stateful ops or control flow stay sequential.
    """
    if any(op.opdef.stateful or op.subgraphs() for op in ops):
        return None
    emitted = [op for op in ops if not any(id(t) in em.inlined for t in op.outputs)]
    position = {id(op): i for i, op in enumerate(emitted)}

    def producer(t):
        """The emitted op a tensor comes from (through fused producers), or None for leaves."""
        op = t.op
        if op.type == "Placeholder" or not op.inputs:
            return None
        return op if id(op) in position else None

    ancestors: dict[int, frozenset] = {}
    for op in emitted:
        found = set()
        for t in em._effective_inputs(op):
            p = producer(t)
            if p is not None:
                found.add(id(p))
                found |= ancestors[id(p)]
        ancestors[id(op)] = frozenset(found)

    def heavy(ids):
        """Worth a thread: matmuls, reductions or transcendentals that are big (or of unknown size)."""
        for op in emitted:
            if id(op) not in ids:
                continue
            for t in op.outputs:
                n = t.shape.num_elements()
                work = None if n is None or any(x.shape.num_elements() is None for x in op.inputs) else \
                    max([n] + [x.shape.num_elements() for x in op.inputs])
                if op.type in _HEAVY_TYPES and (work is None or work >= PARALLEL_MIN_ELEMENTS):
                    return True
                if work is not None and work >= 4 * PARALLEL_MIN_ELEMENTS:
                    return True
        return False

    best = None
    for join in reversed(emitted):
        groups: list[set] = []
        for t in em._effective_inputs(join):
            p = producer(t)
            if p is None:
                continue
            closure = set(ancestors[id(p)]) | {id(p)}
            overlapping = [g for g in groups if g & closure]
            for g in overlapping:
                groups.remove(g)
                closure |= g
            groups.append(closure)
        heavy_groups = [g for g in groups if heavy(g)]
        if len(heavy_groups) >= 2:
            best = heavy_groups
            break
    if best is None:
        return None
    in_parts = set().union(*best)
    parts = [[op for op in emitted if id(op) in g] for g in best]
    pre = [op for op in emitted if id(op) not in in_parts and not op.inputs]
    in_pre = {id(op) for op in pre}
    post = [op for op in emitted if id(op) not in in_parts and id(op) not in in_pre]
    return pre, parts, post


def native_dtype(dtype) -> bool:
    """True when values of this dtype live in C buffers (strings and variants stay Python objects)."""
    return dtype.c_type is not None


@dataclass
class EmitReport:
    callbacks: dict = field(default_factory=dict)   # op type -> count of ops run through Python
    fused: int = 0                                   # elementwise ops folded into another op's loop


class FunctionEmitter:
    """Emits ``static int NAME(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)`` for one graph."""

    def __init__(self, graph: Graph, c_name: str, variables: list, fuse_elementwise: bool = True,
                 plan_memory: bool = True):
        self.graph = graph
        self.c_name = c_name
        self.variables = variables            # variable handles, in order; storage follows the inputs
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}
        self.counter = 0
        self.table = {id(op): i for i, op in enumerate(all_operations(graph))}
        self.report = EmitReport()
        self.inlined: dict[int, str] = {}     # id(tensor) -> C expression (fused, no buffer)
        # memory planning (top-level graph only): small static buffers on the stack, reused once dead
        self.depth = 0
        self.prologue: list[str] = []
        self.pool: dict[int, list[str]] = {}
        self.buffer_of: dict[int, tuple[str, int]] = {}
        self.stack_bytes = 0
        self.graph_outputs = {id(t) for t in graph.outputs}
        self.parts: list[str] = []            # functions for graph parts run concurrently (inter-op)
        self.no_reuse = False
        self.fuse_elementwise = fuse_elementwise
        self.plan_memory = plan_memory

    # -- naming & lines -------------------------------------------------------------
    def fresh(self, base: str = "t") -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def var(self, tensor: SymbolicTensor) -> str:
        name = self.names.get(id(tensor))
        if name is None:
            name = self.names[id(tensor)] = self.fresh("t")
            self.line(f"rt_tensor {name}; {name}.owner = NULL; {name}.dtype = {tensor.dtype.code};")
        return name

    def alias(self, tensor: SymbolicTensor, c_var: str) -> None:
        self.names[id(tensor)] = c_var

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def block(self, head: str):
        emitter = self

        class _Block:
            def __enter__(self):
                emitter.line(head + " {")
                emitter.indent += 1

            def __exit__(self, *exc):
                emitter.indent -= 1
                emitter.line("}")
        return _Block()

    # -- shapes -----------------------------------------------------------------------
    def dim(self, tensor: SymbolicTensor, axis: int) -> str:
        """C expression for one dim: a constant when the graph knows it."""
        dims = tensor.shape.dims
        if dims is not None and dims[axis] is not None:
            return str(dims[axis])
        return f"{self.var(tensor)}.shape[{axis}]"

    def numel(self, tensor: SymbolicTensor) -> str:
        if tensor.shape.is_fully_defined():
            return str(tensor.shape.num_elements())
        return f"rt_numel(&{self.var(tensor)})"

    def ptr(self, tensor: SymbolicTensor) -> str:
        return f"(({tensor.dtype.c_type} *){self.var(tensor)}.data)"

    def set_shape(self, tensor: SymbolicTensor, dims: list[str]) -> None:
        name = self.var(tensor)
        self.line(f"{name}.ndim = {len(dims)};" + "".join(f" {name}.shape[{i}] = {d};" for i, d in enumerate(dims)))

    def alloc(self, tensor: SymbolicTensor, dims: list[str] | None = None) -> str:
        """Set the shape (static dims, or the given C expressions) and allocate the buffer."""
        if dims is None:
            dims = [self.dim(tensor, i) for i in range(tensor.shape.rank)]
        self.set_shape(tensor, dims)
        name = self.var(tensor)
        buffer = self._planned_buffer(tensor, dims)
        if buffer is not None:
            self.line(f"{name}.data = (void *){buffer};")
        else:
            self.line(f"if (rt_alloc_tensor(ctx, &{name})) goto fail;")
        return name

    STACK_BUFFER_MAX = 65536
    STACK_TOTAL_MAX = 262144

    def _planned_buffer(self, tensor, dims) -> str | None:
        """A stack buffer for a small static tensor of the top-level graph (reusing a dead one's)."""
        if not self.plan_memory or self.depth or id(tensor) in self.graph_outputs or not native_dtype(tensor.dtype) \
                or not tensor.shape.is_fully_defined() or [str(d) for d in tensor.shape.dims] != list(dims):
            return None
        nbytes = max(tensor.shape.num_elements(), 1) * tensor.dtype.size
        free = self.pool.get(nbytes)
        if free:
            buffer = free.pop()
        else:
            if nbytes > self.STACK_BUFFER_MAX or self.stack_bytes + nbytes > self.STACK_TOTAL_MAX:
                return None
            buffer = self.fresh("buf")
            self.stack_bytes += nbytes
            self.prologue.append(f"__attribute__((aligned(64))) char {buffer}[{nbytes}];")
        self.buffer_of[id(tensor)] = (buffer, nbytes)
        return buffer

    def _release_dead(self, op, index: int, last_use: dict) -> None:
        if self.no_reuse:
            return
        seen = set()
        for t in self._effective_inputs(op):
            if id(t) in seen or last_use.get(id(t)) != index:
                continue
            seen.add(id(t))
            planned = self.buffer_of.pop(id(t), None)
            if planned is not None:
                self.pool.setdefault(planned[1], []).append(planned[0])

    def _effective_inputs(self, op) -> list:
        """The tensors an op reads once fused producers are expanded into its loop."""
        out = []
        for t in op.inputs:
            if id(t) in self.inlined:
                out.extend(self._effective_inputs(t.op))
            else:
                out.append(t)
        return out

    def fail(self, message: str, *args: str) -> str:
        """C statement: format an error message (printf-style) and jump to the failure exit."""
        fmt = message.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        extra = "".join(f", (long long)({a})" for a in args)
        return f'{{ snprintf(ctx->msg, sizeof(ctx->msg), "{fmt}"{extra}); goto fail; }}'

    # -- the function ---------------------------------------------------------------------
    def emit(self) -> str:
        from transpiler.codegen import emitters
        graph = self.graph
        for i, t in enumerate(graph.inputs):
            self.alias(t, f"in[{i}]")
        self.emit_graph(graph, emitters)
        for i, t in enumerate(graph.outputs):
            self.line(f"out[{i}] = {self.var(t)};")
        self.line("return 0;")
        self.indent = 0
        self.line("fail:")
        self.indent = 1
        self.line("return -1;")
        head = f"static int {self.c_name}(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {{"
        main = "\n".join([head] + ["    " + line for line in self.prologue] + self.lines + ["}"])
        return "\n\n".join(self.parts + [main])

    def emit_graph(self, graph: Graph, emitters) -> None:
        from runtime.executor import needed_ops
        needed = needed_ops(graph)
        ops = [op for op in graph.operations if id(op) in needed and op.type != "Placeholder"]
        emitters.plan_fusion(self, graph, ops)
        top = graph is self.graph
        if not top:
            self.depth += 1
        if top:
            plan = plan_parallel(self, graph, ops)
            if plan is not None:
                self.emit_parallel(plan, emitters)
                return
        last_use: dict = {}
        if top:
            for index, op in enumerate(ops):
                if not any(id(t) in self.inlined for t in op.outputs):
                    for t in self._effective_inputs(op):
                        last_use[id(t)] = index
        for index, op in enumerate(ops):
            if any(id(t) in self.inlined for t in op.outputs):
                continue
            self.line(f"/* {op.name} = {op.type} */")
            emitter = emitters.EMITTERS.get(op.type)
            if emitter is None or not emitter(self, op):
                self.callback(op)
            if top:
                self._release_dead(op, index, last_use)
        if not top:
            self.depth -= 1

    def emit_op(self, op, emitters) -> None:
        if any(id(t) in self.inlined for t in op.outputs):
            return
        self.line(f"/* {op.name} = {op.type} */")
        emitter = emitters.EMITTERS.get(op.type)
        if emitter is None or not emitter(self, op):
            self.callback(op)

    def emit_parallel(self, plan, emitters) -> None:
        """Independent parts of the graph as functions run by an OpenMP loop (inter-op parallelism).

        Each part gets its own arena; tensors crossing into or out of a part travel through
        ``rt_shared``. Stack buffers are not reused here (the parts' lifetimes overlap).
        """
        pre, parts, post = plan
        self.no_reuse = True
        for op in pre:
            self.emit_op(op, emitters)
        part_ops = [{id(op) for op in part} for part in parts]
        later = [t for op in post for t in self._effective_inputs(op)] + list(self.graph.outputs)
        crossing, slot = [], {}

        def share(t):
            if id(t) not in slot:
                slot[id(t)] = len(crossing)
                crossing.append(t)
        for k, part in enumerate(parts):
            for op in part:
                for t in self._effective_inputs(op):
                    if t.op.type != "Placeholder" and id(t.op) not in part_ops[k]:
                        share(t)
            for t in later:
                if id(t.op) in part_ops[k]:
                    share(t)
        shared = self.fresh("rt_shared")
        self.line(f"rt_tensor {shared}[{max(len(crossing), 1)}];")
        produced_in_part = {id(t) for t in crossing if any(id(t.op) in ids for ids in part_ops)}
        for t in crossing:
            if id(t) not in produced_in_part:
                self.line(f"{shared}[{slot[id(t)]}] = {self.var(t)};")
        main_state = (self.lines, self.indent, self.prologue, self.depth, self.graph_outputs)
        for k, part in enumerate(parts):
            saved_names = {id(t): self.names.get(id(t)) for t in crossing}
            for t in crossing:
                self.names[id(t)] = f"shared[{slot[id(t)]}]"
            self.lines, self.indent, self.prologue, self.depth = [], 1, [], 1
            for t in crossing:
                if id(t.op) in part_ops[k]:
                    self.line(f"shared[{slot[id(t)]}].owner = NULL; shared[{slot[id(t)]}].dtype = "
                              f"{t.dtype.code};")
            for op in part:
                self.emit_op(op, emitters)
            name = f"{self.c_name}_part{k}"
            self.parts.append("\n".join(
                [f"static int {name}(rt_ctx *ctx, rt_tensor *in, rt_tensor *shared) {{"] + self.lines
                + ["    return 0;", "fail:", "    return -1;", "}"]))
            for t in crossing:
                if saved_names[id(t)] is None:
                    self.names.pop(id(t), None)
                else:
                    self.names[id(t)] = saved_names[id(t)]
        self.lines, self.indent, self.prologue, self.depth, self.graph_outputs = main_state
        for t in crossing:
            if id(t) in produced_in_part:
                self.names[id(t)] = f"{shared}[{slot[id(t)]}]"
        n = len(parts)
        subs, rcs = self.fresh("rt_parts"), self.fresh("rt_rcs")
        self.line(f"rt_ctx {subs}[{n}]; int {rcs}[{n}];")
        self.line(f"for (int p = 0; p < {n}; p++) {{ rt_ctx_part(&{subs}[p], ctx); {rcs}[p] = 0; }}")
        self.line("#pragma omp parallel for schedule(static, 1) num_threads(ctx->inter_threads > 0 ? "
                  "ctx->inter_threads : 1) if(ctx->inter_threads > 1)")
        with self.block(f"for (int p = 0; p < {n}; p++)"):
            with self.block("switch (p)"):
                for k in range(n):
                    self.line(f"case {k}: {rcs}[p] = {self.c_name}_part{k}(&{subs}[p], in, {shared}); break;")
        self.line(f"{{ int rc = 0; for (int p = 0; p < {n}; p++) rc |= rt_ctx_join(ctx, &{subs}[p], {rcs}[p]); "
                  f"if (rc) goto fail; }}")
        for op in post:
            self.emit_op(op, emitters)

    def var_index(self, handle) -> int:
        for i, h in enumerate(self.variables):
            if h is handle:
                return i
        self.variables.append(handle)
        return len(self.variables) - 1

    def callback(self, op: Operation) -> None:
        """Run the op's numpy kernel through Python (the GIL is taken only here)."""
        self.report.callbacks[op.type] = self.report.callbacks.get(op.type, 0) + 1
        n_in, n_out = len(op.inputs), len(op.outputs)
        ins = self.fresh("cb_in")
        outs = self.fresh("cb_out")
        self.line(f"rt_tensor {ins}[{max(n_in, 1)}], {outs}[{max(n_out, 1)}];")
        for i, t in enumerate(op.inputs):
            self.line(f"{ins}[{i}] = {self.var(t)};")
        self.line(f"if (ctx->callback(ctx, {self.table[id(op)]}, {ins}, {n_in}, {outs}, {n_out})) goto fail;")
        for i, t in enumerate(op.outputs):
            name = self.var(t)
            self.line(f"{name} = {outs}[{i}];")
