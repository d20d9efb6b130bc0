"""The C renderer: prints a lowered function (``transpiler.lowering``) as C over ``rt_kernels.h``.

It decides nothing: loops, pragmas, storage and checks are all in the IR, and every value is a typed node
that it spells (``ir.render_expr``). A ``For`` marked parallel under a run-time condition is printed twice,
as an OpenMP loop and as a plain one (a parallel region costs microseconds even when its ``if`` clause is
false). Errors jump to the function's ``fail`` label, or, inside a part run concurrently, to that part's.

No local's address is taken: a call's ``OutArg`` goes through a temporary declared in a block around the
call and copied back after it, an ``InArg`` through a temporary holding the value, and a reserved buffer's
capacity likewise (a local whose address is taken is shared with OpenMP regions by reference: GCC then
reloads it after every store and leaves the loops reading it scalar; see ``rt_reserved`` in ``rt_kernels.h``).
"""
from __future__ import annotations

import hashlib

import numpy as np

from transpiler.lowering.ir import (
    BLOB_TYPES,
    Alloc,
    And,
    Assign,
    Break,
    Call,
    Callback,
    Check,
    Comment,
    Compare,
    Declare,
    Describe,
    Fail,
    For,
    Function,
    If,
    InArg,
    Lit,
    Loop,
    OutArg,
    Parts,
    SetTensor,
    Store,
    Swap,
    Text,
    render_expr,
    spell,
    walk_stmts,
)


def render_function(fn: Function, blobs: dict | None = None) -> str:
    """``static int name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)`` for a lowered function.

    Big constants (``Declare.blob``) go to ``blobs`` (file name -> bytes, files to write beside the C file),
    which a file-scope ``.incbin`` embeds; without ``blobs`` they are spelled as initializers."""
    r = _Renderer(fn.name, blobs)
    if fn.guard:
        same = render_expr(And(tuple(Compare("==", a, b) for a, b in fn.guard)))
        r.line(1, f"if (!({same})) return {fn.fallback.name}(ctx, in, out);")
    for d in fn.locals:
        r.stmt(d, 1)
    r.block(fn.body, 1)
    head = f"static int {fn.name}(rt_ctx *ctx, rt_tensor *in, rt_tensor *out) {{"
    text = "\n".join(r.globals + [head] + r.lines + ["    return 0;", "fail:", "    return -1;", "}"])
    if fn.fallback is not None:
        text = render_function(fn.fallback, blobs) + "\n\n" + text
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


class _Renderer:
    def __init__(self, function: str = "rt_fn", blobs: dict | None = None):
        self.function = function
        self.blobs = blobs
        self.globals: list[str] = []     # file-scope lines before the function (the .incbin of its blobs)
        self.lines: list[str] = []
        self.fail_label = "fail"
        self.parts = 0
        self.parallel = 0         # depth of parallel loops around the statement being rendered

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, stmts: list, depth: int) -> None:
        for s in stmts:
            self.stmt(s, depth)

    def fail(self, message: str, args) -> str:
        extra = "".join(f", (long long)({render_expr(a)})" for a in args)
        return f"{{ snprintf(ctx->msg, sizeof(ctx->msg), {c_string(message)}{extra}); goto {self.fail_label}; }}"

    def stmt(self, s, depth: int) -> None:
        if isinstance(s, Comment):
            self.line(depth, "/* " + s.text.replace("*/", "* /") + " */")
        elif isinstance(s, Declare):
            self.declare(s, depth)
        elif isinstance(s, Assign):
            self.line(depth, f"{s.name} = {render_expr(s.value)};")
        elif isinstance(s, SetTensor):
            self.line(depth, f"{render_expr(s.slot)} = {render_expr(s.value)};")
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
            self.line(depth, f"if ({render_expr(s.cond)}) {{")
            self.block(s.then, depth + 1)
            if s.orelse:
                self.line(depth, "} else {")
                self.block(s.orelse, depth + 1)
            self.line(depth, "}")
        elif isinstance(s, Fail):
            self.line(depth, self.fail(s.message, s.args))
        elif isinstance(s, Check):
            self.line(depth, f"if ({render_expr(s.bad)}) " + self.fail(s.message, s.args))
        elif isinstance(s, Alloc):
            self.alloc(s, depth)
        elif isinstance(s, Call):
            self.call(s, depth)
        elif isinstance(s, Callback):
            self.line(depth, f"if (ctx->callback(ctx, {s.op_index}, {s.ins}, {s.n_in}, {s.outs}, {s.n_out})) "
                             f"goto {self.fail_label};")
        elif isinstance(s, Describe):
            target = render_expr(s.target)
            text = f"{target}.data = (void *)({s.ptr}); {target}.ndim = {len(s.dims)};"
            text += "".join(f" {target}.shape[{d}] = {n};" for d, n in enumerate(s.dims))
            text += f" {target}.dtype = {s.code}; {target}.owner = NULL;"
            self.line(depth, text)
        elif isinstance(s, Parts):
            self.run_parts(s, depth)
        else:
            raise TypeError(f"cannot render {s!r}")

    def declare(self, s: Declare, depth: int) -> None:
        kind = ("static " if s.static else "") + ("const " if s.const else "")
        if s.blob is not None and self.blobs is not None:
            # named by content: functions of a module that capture one array share its bytes
            symbol = f"rt_blob_{hashlib.sha256(s.blob).hexdigest()[:24]}"
            if f"{symbol}.bin" not in self.blobs:
                self.blobs[f"{symbol}.bin"] = s.blob
                self.globals += [
                    f'__asm__(".pushsection .rodata\\n.balign 64\\n.globl {symbol}\\n.hidden {symbol}\\n"',
                    f'        "{symbol}:\\n.incbin \\"{symbol}.bin\\"\\n.popsection\\n");']
            self.globals.append(f'extern const {s.ctype} {symbol}[] __attribute__((visibility("hidden")));')
            self.line(depth, f"const {s.ctype} *const {s.name} = {symbol};")
            return
        if s.blob is not None:
            s = Declare(s.name, s.ctype, size=s.size, static=s.static, const=s.const, values=_blob_values(s))
        if s.size is not None:
            if s.values is not None:
                init = " = {" + (", ".join(spell(v.value, v.ctype) for v in s.values) or "0") + "}"
            else:
                init = ""
            self.line(depth, f"__attribute__((aligned(64))) {kind}{s.ctype} {s.name}[{s.size}]{init};")
        elif s.init is None:
            self.line(depth, f"{kind}{s.ctype} {s.name};")
        else:
            self.line(depth, f"{kind}{s.ctype} {s.name} = {render_expr(s.init)};")

    def call(self, s: Call, depth: int) -> None:
        """The call, its ``OutArg``/``InArg`` temporaries in a block around it (see the module docstring)."""
        temps, after, args = [], [], []
        for a in s.args:
            if isinstance(a, Text):
                args.append(c_string(a.value))
            elif isinstance(a, OutArg):
                temp = f"rt_out{len(temps)}"
                temps.append(f"{a.ctype} {temp}" + (f" = {a.name};" if a.inout else ";"))
                after.append(f"{a.name} = {temp};")
                args.append(f"&{temp}")
            elif isinstance(a, InArg):
                temp = f"rt_in{len(temps)}"
                temps.append(f"{a.ctype} {temp} = {render_expr(a.value)};")
                args.append(f"&{temp}")
            else:
                args.append(render_expr(a))
        call = f"{s.name}({', '.join(args)})"
        if s.result is not None:
            lines = [f"{s.result} = {call};"]
            if s.checked:
                lines.append(f"if (!{s.result}) goto {self.fail_label};")
        else:
            lines = [f"if ({call}) goto {self.fail_label};" if s.checked else f"{call};"]
        if not temps:
            for text in lines:
                self.line(depth, text)
            return
        self.line(depth, "{")
        for text in temps + lines + after:
            self.line(depth + 1, text)
        self.line(depth, "}")

    def alloc(self, s: Alloc, depth: int) -> None:
        size = f"sizeof({s.ctype})"
        if s.kind == "stack":
            self.line(depth, f"{s.ptr} = {s.buffer};")
        elif s.kind == "reserve":
            # the capacity goes in and out through a temporary (no local's address is taken)
            self.line(depth, f"{{ int64_t rt_cap = {s.capacity}; if (!({s.ptr} = ({s.ctype} *)rt_reserved(ctx, {s.ptr}, "
                             f"&rt_cap, {s.count}, {size}))) goto {self.fail_label}; {s.capacity} = rt_cap; }}")
        else:
            self.line(depth, f"if (!({s.ptr} = ({s.ctype} *)rt_alloc_array(ctx, {s.count}, {size}))) "
                             f"goto {self.fail_label};")

    def stop(self) -> str:
        """The statement that stops the call after Ctrl-C."""
        return self.fail("interrupted", [])

    def loop(self, s: For, depth: int) -> None:
        if s.parallel is not None:
            self.line(depth, f"if ({render_expr(s.parallel)}) {{")
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
        self.line(depth, f"for (int64_t {s.var} = {s.start}; {s.var} < {s.stop}; {s.var}++) {{")
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


def _blob_values(s: Declare) -> tuple:
    """A blob's elements as literals (rendering without a place for files)."""
    return tuple(Lit(v, s.ctype) for v in np.frombuffer(s.blob, BLOB_TYPES[s.ctype]).tolist())
