"""The C renderer: prints a lowered function (``transpiler.lowering``) as C over ``rt_kernels.h``.

It decides nothing: loops, pragmas, storage and checks are all in the IR. A ``For`` marked
parallel under a run-time condition is printed twice, as an OpenMP loop and as a plain one (a
parallel region costs microseconds even when its ``if`` clause is false). Errors jump to the
function's ``fail`` label, or, inside a part run concurrently, to that part's.
"""
from __future__ import annotations

from transpiler.lowering.ir import (
    Alloc, Assign, Break, Call, Check, Comment, Declare, Describe, Expr, Fail, For, Function, If, Loop, Parts,
    Poly, Raw, Store, Swap, Text, render_expr, walk_stmts,
)


def render_function(fn: Function) -> str:
    """``static int name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)`` for a lowered function."""
    r = _Renderer()
    if fn.guard:
        same = " && ".join(f"{a} == {b}" for a, b in fn.guard)
        r.line(1, f"if (!({same})) return {fn.fallback.name}(ctx, in, out);")
    for d in fn.locals:
        r.stmt(d, 1)
    r.block(fn.body, 1)
    head = f"static int {fn.name}(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {{"
    text = "\n".join([head] + r.lines + ["    return 0;", "fail:", "    return -1;", "}"])
    if fn.fallback is not None:
        text = render_function(fn.fallback) + "\n\n" + text
    return text


def c_string(text: str) -> str:
    """A C string literal for ``text`` (printf format already: ``%`` kept)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "?":
            out.append("\\?")
        elif ord(ch) < 32 or ord(ch) > 126:
            out.append("".join(f"\\{b:03o}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(v) -> str:
    if isinstance(v, Expr):
        return render_expr(v)
    return str(v)


class _Renderer:
    def __init__(self):
        self.lines: list[str] = []
        self.fail_label = "fail"
        self.parts = 0
        self.parallel = 0         # depth of parallel loops around the statement being rendered

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, stmts: list, depth: int) -> None:
        for s in stmts:
            self.stmt(s, depth)

    def fail(self, message: str, args: list) -> str:
        extra = "".join(f", (long long)({a})" for a in args)
        return f"{{ snprintf(ctx->msg, sizeof(ctx->msg), {c_string(message)}{extra}); goto {self.fail_label}; }}"

    def stmt(self, s, depth: int) -> None:
        if isinstance(s, Comment):
            self.line(depth, "/* " + s.text.replace("*/", "* /") + " */")
        elif isinstance(s, Declare):
            self.declare(s, depth)
        elif isinstance(s, Assign):
            self.line(depth, f"{s.name} = {_value(s.value)};")
        elif isinstance(s, Store):
            self.line(depth, f"{s.ptr}[{s.index}] = {render_expr(s.value)};")
        elif isinstance(s, Swap):
            self.line(depth, f"{{ {s.ctype} rt_swap = {s.a}; {s.a} = {s.b}; {s.b} = rt_swap; }}")
        elif isinstance(s, For):
            self.loop(s, depth)
        elif isinstance(s, Loop):
            self.line(depth, "for (;;) {")
            # Ctrl-C (rt_kernels.h): leave the loop, and the call; inside a parallel loop only the loop (no jump
            # may leave a parallel region), the flag is read again after it
            self.line(depth + 1, "if (RT_INTERRUPTED) break;" if self.parallel else f"if (RT_INTERRUPTED) {self.stop()}")
            self.block(s.body, depth + 1)
            self.line(depth, "}")
        elif isinstance(s, Break):
            self.line(depth, "break;")
        elif isinstance(s, If):
            self.line(depth, f"if ({_value(s.cond)}) {{")
            self.block(s.then, depth + 1)
            if s.orelse:
                self.line(depth, "} else {")
                self.block(s.orelse, depth + 1)
            self.line(depth, "}")
        elif isinstance(s, Fail):
            self.line(depth, self.fail(s.message, s.args))
        elif isinstance(s, Check):
            self.line(depth, f"if ({s.bad}) " + self.fail(s.message, s.args))
        elif isinstance(s, Alloc):
            self.alloc(s, depth)
        elif isinstance(s, Call):
            call = f"{s.name}({', '.join(c_string(a.value) if isinstance(a, Text) else str(a) for a in s.args)})"
            if s.result is not None:
                self.line(depth, f"{s.result} = {call};")
                if s.checked:
                    self.line(depth, f"if (!{s.result}) goto {self.fail_label};")
            else:
                self.line(depth, f"if ({call}) goto {self.fail_label};" if s.checked else f"{call};")
        elif isinstance(s, Describe):
            text = f"{s.target}.data = (void *)({s.ptr}); {s.target}.ndim = {len(s.dims)};"
            text += "".join(f" {s.target}.shape[{d}] = {n};" for d, n in enumerate(s.dims))
            text += f" {s.target}.dtype = {s.code}; {s.target}.owner = NULL;"
            self.line(depth, text)
        elif isinstance(s, Raw):
            self.line(depth, s.text)
        elif isinstance(s, Parts):
            self.run_parts(s, depth)
        else:
            raise TypeError(f"cannot render {s!r}")

    def declare(self, s: Declare, depth: int) -> None:
        if s.size is not None:
            init = f" = {s.init}" if s.init is not None else ""
            self.line(depth, f"__attribute__((aligned(64))) {s.ctype} {s.name}[{s.size}]{init};")
        elif s.init is None:
            self.line(depth, f"{s.ctype} {s.name};")
        else:
            self.line(depth, f"{s.ctype} {s.name} = {_value(s.init)};")

    def alloc(self, s: Alloc, depth: int) -> None:
        size = f"sizeof({s.ctype})"
        if s.kind == "stack":
            self.line(depth, f"{s.ptr} = {s.buffer};")
        elif s.kind == "reserve":
            self.line(depth, f"if (!({s.ptr} = ({s.ctype} *)rt_reserved(ctx, {s.ptr}, &{s.capacity}, {s.count}, "
                             f"{size}))) goto {self.fail_label};")
        else:
            self.line(depth, f"if (!({s.ptr} = ({s.ctype} *)rt_alloc_array(ctx, {s.count}, {size}))) "
                             f"goto {self.fail_label};")

    def stop(self) -> str:
        """The statement that stops the call after Ctrl-C."""
        return self.fail("interrupted", [])

    def loop(self, s: For, depth: int) -> None:
        if s.parallel:
            cond = s.parallel if isinstance(s.parallel, str) else "1"
            self.line(depth, f"if ({cond}) {{")
            self.parallel += 1
            self.for_loop(s, depth + 1, parallel=True)
            self.parallel -= 1
            self.line(depth, "} else {")
            self.for_loop(s, depth + 1, parallel=False)
            self.line(depth, "}")
            if not self.parallel and any(isinstance(x, Loop) for x in walk_stmts(s.body)):
                self.line(depth, f"if (RT_INTERRUPTED) {self.stop()}")
        else:
            self.for_loop(s, depth, parallel=False)

    def for_loop(self, s: For, depth: int, parallel: bool) -> None:
        clauses = "".join(f" reduction({op}:{var})" for op, var in s.reductions)
        if parallel:
            simd = " simd" if s.simd else ""
            self.line(depth, f"#pragma omp parallel for{simd} schedule(static) num_threads(ctx->num_threads){clauses}")
        elif s.simd:
            self.line(depth, f"#pragma omp simd{clauses}")
        start = s.start if isinstance(s.start, Poly) else Poly.of(s.start)
        self.line(depth, f"for (int64_t {s.var} = {start}; {s.var} < {s.stop}; {s.var}++) {{")
        self.block(s.body, depth + 1)
        self.line(depth, "}")

    def run_parts(self, s: Parts, depth: int) -> None:
        """Independent blocks on an OpenMP loop over a switch: each with its own context and fail label."""
        n = len(s.parts)
        self.parts += 1
        k = self.parts
        subs, rcs = f"rt_parts{k}", f"rt_rcs{k}"
        self.line(depth, f"rt_ctx {subs}[{n}]; int {rcs}[{n}];")
        self.line(depth, f"for (int p = 0; p < {n}; p++) {{ rt_ctx_part(&{subs}[p], ctx); {rcs}[p] = 0; }}")
        self.line(depth, "#pragma omp parallel for schedule(static, 1) num_threads(ctx->inter_threads > 0 ? "
                         "ctx->inter_threads : 1) if(ctx->inter_threads > 1)")
        self.line(depth, f"for (int p = 0; p < {n}; p++) {{")
        self.line(depth + 1, "rt_ctx *parent = ctx;")
        self.line(depth + 1, "(void)parent;")
        self.line(depth + 1, "switch (p) {")
        saved = self.fail_label
        for i, part in enumerate(s.parts):
            self.fail_label = f"rt_part{k}_{i}_fail"
            self.line(depth + 1, f"case {i}: {{")
            self.line(depth + 2, f"rt_ctx *ctx = &{subs}[{i}];")
            self.block(part, depth + 2)
            self.line(depth + 2, "break;")
            self.line(depth + 1, f"{self.fail_label}:")
            self.line(depth + 2, f"{rcs}[{i}] = -1;")
            self.line(depth + 2, "break;")
            self.line(depth + 1, "}")
        self.fail_label = saved
        self.line(depth + 1, "}")
        self.line(depth, "}")
        self.line(depth, f"{{ int rc = 0; for (int p = 0; p < {n}; p++) rc |= rt_ctx_join(ctx, &{subs}[p], {rcs}[p]); "
                         f"if (rc) goto {self.fail_label}; }}")
