"""The loop-level IR: what one built function does, as loop nests over index expressions.

- ``Poly``: integer index arithmetic over named ``int64_t`` symbols (dims known at run time, loop
  indices), kept as a polynomial so that strides compare and simplify (``3 * n + i``).
- Expressions (``Expr``) compute one scalar: ``Lit``, ``Var`` (a C local), ``Load`` (an element of a
  buffer at a ``Poly`` offset), ``Apply`` (an op's ``c_expr`` from the op table), ``CExpr`` (a small
  C template: accumulator combinations, casts), ``Index`` (an index used as a value).
- Statements (``Stmt``) are C-shaped: ``Declare``, ``Assign``, ``Store``, ``For`` (with its
  parallel/simd/reduction annotations), ``If``, ``Fail`` (a run-time error), ``Alloc``, ``Call``, ...

``str(function)`` prints the IR readably (``RT_DEBUG=1`` dumps it for each built function); the
C renderer (``transpiler.codegen.c``) prints the same tree as C.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from runtime import dtypes
from runtime.ops.registry import OpDef, c_expression

# ---------------------------------------------------------------------------
# Integer index expressions.


class Poly:
    """An integer polynomial over symbols: ``terms`` maps a sorted tuple of symbol names to a coefficient.

    Example:
        >>> n, i = Poly.sym("n"), Poly.sym("i")
        >>> str(3 * n * i + i - 2)
        '3 * i * n + i - 2'
        >>> (n * 4 + i).coefficient("i") == Poly.of(1)
        True
    """

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c}
        self._hash = None

    @staticmethod
    def of(value) -> "Poly":
        if isinstance(value, Poly):
            return value
        if isinstance(value, int):
            return Poly({(): value})
        if isinstance(value, str):
            return Poly({(value,): 1})
        raise TypeError(f"not an index expression: {value!r}")

    @staticmethod
    def sym(name: str) -> "Poly":
        return Poly({(name,): 1})

    def __add__(self, other) -> "Poly":
        other = Poly.of(other)
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other) -> "Poly":
        return self + (-Poly.of(other))

    def __rsub__(self, other) -> "Poly":
        return Poly.of(other) - self

    def __mul__(self, other) -> "Poly":
        other = Poly.of(other)
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    __rmul__ = __mul__

    def __eq__(self, other) -> bool:
        if isinstance(other, int):
            other = Poly.of(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    @property
    def const(self) -> int | None:
        """The value when the polynomial has no symbol, else None."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}

    def coefficient(self, var: str) -> "Poly":
        """The factor multiplying ``var`` (the polynomial is linear in ``var``)."""
        terms: dict = {}
        for m, c in self.terms.items():
            if var in m:
                rest = list(m)
                rest.remove(var)
                terms[tuple(rest)] = terms.get(tuple(rest), 0) + c
        return Poly(terms)

    def without(self, names) -> "Poly":
        """The terms that mention none of ``names``."""
        names = set(names)
        return Poly({m: c for m, c in self.terms.items() if not names & set(m)})

    def substitute(self, mapping: dict) -> "Poly":
        """Replace symbols by polynomials (``{name: Poly}``)."""
        if not mapping or not self.symbols() & mapping.keys():
            return self
        out = Poly({})
        for m, c in self.terms.items():
            term = Poly.of(c)
            for s in m:
                term = term * mapping.get(s, Poly.sym(s))
            out = out + term
        return out

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
            if not m:
                text = _int_text(abs(c))
            elif abs(c) == 1:
                text = " * ".join(m)
            else:
                text = " * ".join((_int_text(abs(c)),) + m)
            parts.append(("- " if c < 0 else "+ ") + text)
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def __repr__(self) -> str:
        return f"Poly({self})"


def _int_text(value: int) -> str:
    return str(value) if value < 2 ** 31 else f"{value}LL"


def product(values) -> Poly:
    out = Poly.of(1)
    for v in values:
        out = out * Poly.of(v)
    return out


# ---------------------------------------------------------------------------
# Scalar expressions. ``ctype`` is the C type of the value.


class Expr:
    ctype: str

    def children(self) -> tuple:
        return ()

    def polys(self) -> tuple:
        """The index expressions this node reads itself (not its children's)."""
        return ()

    def rebuild(self, children: tuple, polys: tuple) -> "Expr":
        return self


@dataclass(frozen=True, eq=False)
class Lit(Expr):
    """A C constant, e.g. ``1.5f``."""
    text: str
    ctype: str

    def __str__(self):
        return self.text


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A C local holding a scalar (a promoted 0-d tensor, an accumulator)."""
    name: str
    ctype: str

    def __str__(self):
        return self.name


@dataclass(frozen=True, eq=False)
class Load(Expr):
    """``ptr[index + sum(value * multiplier for value, multiplier in indirect)]``: an element of a buffer.

    ``indirect`` terms are data-dependent parts of the index (a gather's indices, already checked).
    """
    ptr: str
    index: Poly
    ctype: str
    indirect: tuple = ()

    def children(self):
        return tuple(e for e, _ in self.indirect)

    def polys(self):
        return (self.index,) + tuple(m for _, m in self.indirect)

    def rebuild(self, children, polys):
        return Load(self.ptr, polys[0], self.ctype, tuple(zip(children, polys[1:])))

    def __str__(self):
        extra = "".join(f" + {e} * {m}" if m != 1 else f" + {e}" for e, m in self.indirect)
        return f"{self.ptr}[{self.index}{extra}]"


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """An index expression used as a value (a generator's ``{i0}``, a dim read by ``Shape``)."""
    value: Poly
    ctype: str = "int64_t"

    def polys(self):
        return (self.value,)

    def rebuild(self, children, polys):
        return Index(polys[0], self.ctype)

    def __str__(self):
        return f"({self.value})"


@dataclass(frozen=True, eq=False)
class Apply(Expr):
    """One element of an op of the op table: its ``c_expr`` over ``args`` (and the output ``index``)."""
    opdef: OpDef
    args: tuple
    in_dtypes: tuple
    out_dtype: object
    index: tuple = ()

    @property
    def ctype(self):
        return self.out_dtype.c_type

    def children(self):
        return self.args

    def polys(self):
        return self.index

    def rebuild(self, children, polys):
        return Apply(self.opdef, tuple(children), self.in_dtypes, self.out_dtype, tuple(polys))

    def __str__(self):
        inner = ", ".join([str(a) for a in self.args] + [f"#{p}" for p in self.index])
        return f"{self.opdef.type}({inner})"


@dataclass(frozen=True, eq=False)
class CExpr(Expr):
    """A small C template over expressions: ``{0}``, ``{1}`` ... (combinations, casts)."""
    template: str
    args: tuple
    ctype: str

    def children(self):
        return self.args

    def rebuild(self, children, polys):
        return CExpr(self.template, tuple(children), self.ctype)

    def __str__(self):
        text = self.template
        for i, a in enumerate(self.args):
            text = text.replace("{" + str(i) + "}", str(a))
        return text


def literal(value, dtype) -> Lit:
    """A C constant of ``dtype`` for a Python/numpy scalar."""
    ctype = dtype.c_type
    if dtype.is_floating:
        value = float(value)
        if math.isnan(value):
            text = "NAN"
        elif math.isinf(value):
            text = "INFINITY" if value > 0 else "-INFINITY"
        else:
            text = repr(value) + ("f" if ctype == "float" else "")
        return Lit(f"(({ctype}){text})" if text[0] in "-IN" else text, ctype)
    if dtype is dtypes.bool_:
        return Lit("1" if value else "0", ctype)
    value = int(value)
    if dtype is dtypes.int64:
        return Lit("INT64_MIN" if value == -2 ** 63 else f"{value}LL", ctype)
    return Lit(f"(({ctype}){value})" if value < 0 else str(value), ctype)


def map_expr(expr: Expr, on_poly: Callable[[Poly], Poly] | None = None,
             on_node: Callable[[Expr], Expr | None] | None = None) -> Expr:
    """Rebuild ``expr`` bottom-up: ``on_node`` may replace a node (None keeps it), ``on_poly`` maps indices."""
    if on_node is not None:
        replaced = on_node(expr)
        if replaced is not None:
            return replaced
    children = tuple(map_expr(c, on_poly, on_node) for c in expr.children())
    polys = tuple(on_poly(p) for p in expr.polys()) if on_poly is not None else expr.polys()
    if children == expr.children() and all(a is b for a, b in zip(polys, expr.polys())):
        return expr
    return expr.rebuild(children, polys)


def walk_expr(expr: Expr):
    yield expr
    for c in expr.children():
        yield from walk_expr(c)


def render_expr(expr: Expr) -> str:
    """``expr`` as C."""
    if isinstance(expr, Apply):
        return c_expression(expr.opdef, [render_expr(a) for a in expr.args], list(expr.in_dtypes),
                            expr.out_dtype, [f"({p})" for p in expr.index])
    if isinstance(expr, CExpr):
        text = expr.template
        for i, a in enumerate(expr.args):
            text = text.replace("{" + str(i) + "}", render_expr(a))
        return text
    if isinstance(expr, Index):
        return f"(({expr.ctype})({expr.value}))"
    if isinstance(expr, Load) and expr.indirect:
        extra = "".join(f" + (int64_t){render_expr(e)} * ({m})" for e, m in expr.indirect)
        return f"{expr.ptr}[{expr.index}{extra}]"
    return str(expr)


CHEAP_HELPERS = ("rt_max(", "rt_min(", "rt_abs(", "rt_sign(", "rt_relu(", "rt_square(")


def expensive(c_expr: str | None) -> bool:
    """True when an op's ``c_expr`` calls a costly helper (exp, tanh, pow, an integer division ...)."""
    text = c_expr or ""
    for helper in CHEAP_HELPERS:
        text = text.replace(helper, "(")
    return "rt_" in text


# ---------------------------------------------------------------------------
# Statements.


class Stmt:
    def blocks(self) -> tuple:
        """Nested statement lists."""
        return ()


@dataclass(eq=False)
class Comment(Stmt):
    text: str


@dataclass(eq=False)
class Declare(Stmt):
    """``ctype name[ = init];`` (an array of ``size`` elements when given, 64-byte aligned)."""
    name: str
    ctype: str
    init: Expr | Poly | str | None = None
    size: int | None = None


@dataclass(eq=False)
class Assign(Stmt):
    """``name = value;`` for a scalar local or an index symbol."""
    name: str
    value: Expr | Poly | str


@dataclass(eq=False)
class Swap(Stmt):
    """Exchange the values of two C locals of type ``ctype`` (a loop variable's current and next buffers).

    Pointers only ever swapped with each other keep pointing at distinct memory, which passes over the IR
    may rely on (a plain ``Assign`` of a pointer makes its memory unknown)."""
    a: str
    b: str
    ctype: str


@dataclass(eq=False)
class Store(Stmt):
    """``ptr[index] = value;``"""
    ptr: str
    index: Poly
    value: Expr


@dataclass(eq=False)
class For(Stmt):
    """``for (var = start; var < stop; var++) body``.

    ``parallel``: None (serial), True, or a C condition under which the loop runs on
    ``ctx->num_threads`` threads (the renderer then emits a parallel and a serial copy: a parallel
    region costs microseconds even when its ``if`` clause is false). ``simd`` marks a loop to
    vectorise; ``reductions`` lists ``(operator, variable)`` pairs for its reduction clause.
    """
    var: str
    start: Poly
    stop: Poly
    body: list
    parallel: bool | str | None = None
    simd: bool = False
    reductions: list = field(default_factory=list)

    def blocks(self):
        return (self.body,)


@dataclass(eq=False)
class Loop(Stmt):
    """``for (;;) body`` (left with ``Break``)."""
    body: list

    def blocks(self):
        return (self.body,)


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class If(Stmt):
    cond: Expr | str
    then: list
    orelse: list = field(default_factory=list)

    def blocks(self):
        return (self.then, self.orelse)


@dataclass(eq=False)
class Fail(Stmt):
    """Stop with an ``InvalidArgumentError``: ``message`` is printf-style over the C ``args`` (int64)."""
    message: str
    args: list = field(default_factory=list)


@dataclass(eq=False)
class Check(Stmt):
    """``if (bad) Fail(...)``."""
    bad: str
    message: str
    args: list = field(default_factory=list)


@dataclass(eq=False)
class Alloc(Stmt):
    """Point ``ptr`` at storage for ``count`` elements of ``ctype``.

    ``kind``: ``"arena"`` (freed when the call ends, or handed to the caller as a result),
    ``"reserve"`` (a buffer kept across loop iterations, grown when too small; ``capacity`` is its
    size variable), ``"stack"`` (``buffer``, a function-level array).
    """
    ptr: str
    ctype: str
    count: Poly
    kind: str
    capacity: str | None = None
    buffer: str | None = None


@dataclass(frozen=True)
class Text:
    """A string argument of a call (the renderer makes it a C string literal)."""
    value: str

    def __str__(self):
        return repr(self.value)


@dataclass(frozen=True)
class Gemm:
    """What a float GEMM call computes: ``c[m, n]`` (rows ``ldc`` apart) ``= op(a) @ op(b)``, with ``a`` and
    ``b`` the C expressions of the operands and ``memory`` the buffers they read. The epilogue pass
    (``epilogue.py``) fuses the loops that read ``c`` into the GEMM's parallel parts."""
    suffix: str
    a: str
    lda: Poly
    b: str
    ldb: Poly
    c: str
    ldc: Poly
    m: Poly
    k: Poly
    n: Poly
    ta: int
    tb: int
    memory: tuple


@dataclass(eq=False)
class Call(Stmt):
    """A kernel-library call: ``name(args);``, or ``if (name(args)) fail`` when ``checked``; with
    ``result``, ``result = name(args);`` (and ``checked``: fail when the result is NULL). ``gemm``
    describes a GEMM call's product."""
    name: str
    args: list
    checked: bool = False
    result: str | None = None
    gemm: Gemm | None = None


@dataclass(eq=False)
class Describe(Stmt):
    """Fill the ``rt_tensor`` lvalue ``target``: data ``ptr``, shape ``dims``, dtype ``code``."""
    target: str
    ptr: str
    dims: list
    code: int


@dataclass(eq=False)
class Raw(Stmt):
    """A line of C for the few things the IR does not model (rt_tensor descriptors for callbacks)."""
    text: str


@dataclass(eq=False)
class Parts(Stmt):
    """Independent blocks run concurrently (inter-op parallelism), each with its own arena."""
    parts: list

    def blocks(self):
        return tuple(self.parts)


@dataclass
class Function:
    """One built function: ``static int name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)``.

    ``guard``: pairs of input dims (``in[k].shape[d]``) the body assumes equal (``lowering/assume.py``); when
    one differs at run time the call goes to ``fallback``, lowered without the assumption.
    """
    name: str
    locals: list          # Declare statements at function level
    body: list
    signature: str = ""
    guard: list = field(default_factory=list)
    fallback: "Function | None" = None

    def __str__(self) -> str:
        return format_function(self)


# ---------------------------------------------------------------------------
# Printing.


def format_function(fn: Function) -> str:
    lines = []
    if fn.fallback is not None:
        lines += [format_function(fn.fallback), ""]
    lines.append(f"function {fn.name}{fn.signature}:")
    if fn.guard:
        lines.append("  guard " + " and ".join(f"{a} == {b}" for a, b in fn.guard) + f" else {fn.fallback.name}")
    for d in fn.locals:
        lines.append("  " + _format_stmt(d))
    _format_block(fn.body, 1, lines)
    return "\n".join(lines)


def _format_block(stmts: list, depth: int, lines: list) -> None:
    pad = "  " * depth
    for s in stmts:
        if isinstance(s, For):
            notes = []
            if s.parallel:
                notes.append("parallel" if s.parallel is True else f"parallel if {s.parallel}")
            if s.simd:
                notes.append("simd")
            if s.reductions:
                notes.append("reduce(" + ", ".join(f"{op}:{v}" for op, v in s.reductions) + ")")
            start = "" if s.start == 0 else f"{s.start}.."
            lines.append(f"{pad}for {s.var} in {start}{s.stop}" + (f"  [{', '.join(notes)}]" if notes else "") + ":")
            _format_block(s.body, depth + 1, lines)
        elif isinstance(s, Loop):
            lines.append(f"{pad}loop:")
            _format_block(s.body, depth + 1, lines)
        elif isinstance(s, If):
            lines.append(f"{pad}if {s.cond}:")
            _format_block(s.then, depth + 1, lines)
            if s.orelse:
                lines.append(f"{pad}else:")
                _format_block(s.orelse, depth + 1, lines)
        elif isinstance(s, Parts):
            for k, part in enumerate(s.parts):
                lines.append(f"{pad}part {k} (concurrently):")
                _format_block(part, depth + 1, lines)
        else:
            lines.append(pad + _format_stmt(s))


def _format_stmt(s: Stmt) -> str:
    if isinstance(s, Comment):
        return f"# {s.text}"
    if isinstance(s, Declare):
        size = f"[{s.size}]" if s.size is not None else ""
        init = "" if s.init is None else f" = {s.init}"
        return f"let {s.name}: {s.ctype}{size}{init}"
    if isinstance(s, Assign):
        return f"{s.name} = {s.value}"
    if isinstance(s, Store):
        return f"{s.ptr}[{s.index}] = {s.value}"
    if isinstance(s, Swap):
        return f"swap {s.a}, {s.b}"
    if isinstance(s, Break):
        return "break"
    if isinstance(s, Fail):
        return f"fail {s.message!r}"
    if isinstance(s, Check):
        return f"check not ({s.bad}) else {s.message!r}"
    if isinstance(s, Alloc):
        where = {"arena": "arena", "reserve": f"reserve {s.capacity}", "stack": f"stack {s.buffer}"}[s.kind]
        return f"{s.ptr} = alloc {s.ctype}[{s.count}] ({where})"
    if isinstance(s, Call):
        text = f"{'checked ' if s.checked else ''}call {s.name}({', '.join(map(str, s.args))})"
        return f"{s.result} = {text}" if s.result else text
    if isinstance(s, Describe):
        return f"{s.target} = tensor({s.ptr}, [{', '.join(map(str, s.dims))}], dtype {s.code})"
    if isinstance(s, Raw):
        return f"c: {s.text}"
    return repr(s)


def walk_stmts(stmts: list):
    """Every statement, nested ones included, in order."""
    for s in stmts:
        yield s
        for block in s.blocks():
            yield from walk_stmts(block)
