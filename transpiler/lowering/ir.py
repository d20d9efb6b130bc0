"""The loop-level IR: what one built function does, as loop nests over index expressions.

The IR is closed: every value is a typed node, and C text exists only in the renderer
(``transpiler.codegen.c``). Strings in nodes are only names (``Name``: a local, a loop variable, a
buffer, a kernel-library function), C types (``TypeName``), user-facing messages (``Message``) and
string arguments of calls (``Text``); ``verify`` checks that they are what they claim to be.

- ``Poly``: integer index arithmetic over named ``int64_t`` symbols (dims known at run time, loop
  indices), kept as a polynomial so that strides compare and simplify (``3 * n + i``); it is also an
  expression (of type ``int64_t``).
- Expressions (``Expr``) compute one scalar: ``Lit`` (a Python value: the renderer spells it), ``Var``
  (a C local), ``Load`` (an element of a buffer at a ``Poly`` offset), ``Apply`` (an op's ``c_expr``
  from the op table), ``Combine`` (a reduction's combiner from the op table), ``Index`` (an index
  used as a value), ``Cast``, ``Arith``, ``Neg``, ``Compare``, ``And``, ``Or``, ``Not``, ``Select``,
  ``Helper`` (a pure function of the kernel library or libm), and the named values of the run time:
  ``Named`` (``ctx->num_threads``, ``RT_PARALLEL_MIN`` ...), ``Slot`` (an ``rt_tensor`` of the call:
  ``in[k]``, ``out[k]``, a callback's), ``Field`` (``in[0].shape[1]``, ``list->length``),
  ``DimsArray`` (a constant array of dims) and ``Ptr`` (a pointer into a buffer).
- Statements (``Stmt``) are C-shaped: ``Declare``, ``Assign``, ``Store``, ``For`` (with its
  parallel/simd/reduction annotations), ``If``, ``Check``/``Fail`` (run-time errors), ``Alloc``,
  ``Call`` (a kernel-library call, whose arguments are expressions, ``Text``, ``OutArg``: a local the
  call sets, or ``InArg``: a value passed by address), ``Callback`` (an op run through Python) ...

``str(function)`` prints the IR readably (``RT_DEBUG=1`` dumps it for each built function); the
C renderer (``transpiler.codegen.c``) prints the same tree as C.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NewType

from runtime import dtypes
from runtime.dtypes import DType
from runtime.ops.registry import OpDef, Reduction, c_expression

Name = NewType("Name", str)            # a C identifier (a local, a loop variable, a buffer, a function)
TypeName = NewType("TypeName", str)    # a C type (``float``, ``int64_t``, ``rt_list *``, ``const void *``)
Message = NewType("Message", str)      # text for people: an error message (printf format), a comment
Operator = NewType("Operator", str)    # an operator of a closed set (``Arith.OPS``, ``Compare.OPS``, reductions)

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TYPE_NAME = re.compile(r"(const )?(float|double|int|rt_bool|u?int(8|16|32|64)_t|size_t|char|void|rt_tensor|rt_list|"
                       r"rt_window|rt_ctx|rt_lanes16_float|rt_lanes16_double)( \*)?\Z")

# ---------------------------------------------------------------------------
# Integer index expressions.


class Expr:
    """A scalar expression; ``ctype`` is the C type of its value."""
    ctype: str

    def children(self) -> tuple:
        return ()

    def polys(self) -> tuple:
        """The index expressions this node reads itself (not its children's)."""
        return ()

    def rebuild(self, children: tuple, polys: tuple) -> Expr:
        return self

    def __str__(self) -> str:
        return format_expr(self)


class Poly(Expr):
    """An integer polynomial over symbols: ``terms`` maps a sorted tuple of symbol names to a coefficient.

    Example:
        >>> n, i = Poly.sym("n"), Poly.sym("i")
        >>> str(3 * n * i + i - 2)
        '3 * i * n + i - 2'
        >>> (n * 4 + i).coefficient("i") == Poly.of(1)
        True
    """

    __slots__ = ("_hash", "terms")
    ctype = "int64_t"

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c}
        self._hash = None

    @staticmethod
    def of(value) -> Poly:
        if isinstance(value, Poly):
            return value
        if isinstance(value, int):
            return Poly({(): value})
        if isinstance(value, str):
            return Poly.sym(value)
        raise TypeError(f"not an index expression: {value!r}")

    @staticmethod
    def sym(name: str) -> Poly:
        if not IDENTIFIER.match(name):
            raise ValueError(f"not a symbol: {name!r}")
        return Poly({(name,): 1})

    def __add__(self, other) -> Poly:
        other = Poly.of(other)
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other) -> Poly:
        return self + (-Poly.of(other))

    def __rsub__(self, other) -> Poly:
        return Poly.of(other) - self

    def __mul__(self, other) -> Poly:
        other = Poly.of(other)
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    __rmul__ = __mul__

    def __eq__(self, other) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            other = Poly.of(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def polys(self) -> tuple:
        return (self,)

    def rebuild(self, children: tuple, polys: tuple) -> Poly:
        return polys[0]

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

    def coefficient(self, var: str) -> Poly:
        """The factor multiplying ``var`` (the polynomial is linear in ``var``)."""
        terms: dict = {}
        for m, c in self.terms.items():
            if var in m:
                rest = list(m)
                rest.remove(var)
                terms[tuple(rest)] = terms.get(tuple(rest), 0) + c
        return Poly(terms)

    def without(self, names) -> Poly:
        """The terms that mention none of ``names``."""
        names = set(names)
        return Poly({m: c for m, c in self.terms.items() if not names & set(m)})

    def substitute(self, mapping: dict) -> Poly:
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


ZERO = Poly.of(0)

# ---------------------------------------------------------------------------
# Scalar expressions. Each is a frozen dataclass compared by value (two conditions built the same way are
# equal: loop merging compares parallel clauses).


@dataclass(frozen=True)
class Lit(Expr):
    """A constant: a Python int, float or bool of C type ``ctype`` (the renderer spells it: ``1.5f``, ``10LL``)."""
    value: int | float | bool
    ctype: TypeName


@dataclass(frozen=True)
class Var(Expr):
    """A C local holding a scalar (a promoted 0-d tensor, an accumulator) or a pointer."""
    name: Name
    ctype: TypeName


@dataclass(frozen=True)
class Load(Expr):
    """``ptr[index + sum(value * multiplier for value, multiplier in indirect)]``: an element of a buffer.

    ``indirect`` terms are data-dependent parts of the index (a gather's indices, already checked).
    """
    ptr: Name
    index: Poly
    ctype: TypeName
    indirect: tuple[tuple[Expr, Poly], ...] = ()

    def children(self):
        return tuple(e for e, _ in self.indirect)

    def polys(self):
        return (self.index,) + tuple(m for _, m in self.indirect)

    def rebuild(self, children, polys):
        return Load(self.ptr, polys[0], self.ctype, tuple(zip(children, polys[1:])))


@dataclass(frozen=True)
class Index(Expr):
    """An index expression used as a value of type ``ctype`` (a generator's ``{i0}``, a dim read by ``Shape``)."""
    value: Poly
    ctype: TypeName = "int64_t"

    def polys(self):
        return (self.value,)

    def rebuild(self, children, polys):
        return Index(polys[0], self.ctype)


@dataclass(frozen=True)
class Apply(Expr):
    """One element of an op of the op table: its ``c_expr`` over ``args`` (and the output ``index``)."""
    opdef: OpDef
    args: tuple[Expr, ...]
    in_dtypes: tuple[DType, ...]
    out_dtype: DType
    index: tuple[Poly, ...] = ()

    @property
    def ctype(self):
        return self.out_dtype.c_type

    def children(self):
        return self.args

    def polys(self):
        return self.index

    def rebuild(self, children, polys):
        return Apply(self.opdef, tuple(children), self.in_dtypes, self.out_dtype, tuple(polys))


@dataclass(frozen=True)
class Combine(Expr):
    """A reduction's combination of the accumulator ``acc`` and one ``value`` (the op table's ``combine``)."""
    reduction: Reduction
    acc: Expr
    value: Expr
    ctype: TypeName

    def children(self):
        return (self.acc, self.value)

    def rebuild(self, children, polys):
        return Combine(self.reduction, children[0], children[1], self.ctype)


@dataclass(frozen=True)
class Cast(Expr):
    """``value`` converted to ``ctype``."""
    value: Expr
    ctype: TypeName

    def children(self):
        return (self.value,)

    def rebuild(self, children, polys):
        return Cast(children[0], self.ctype)


@dataclass(frozen=True)
class Arith(Expr):
    """``a op b`` for an arithmetic or bitwise ``op``."""
    op: Operator
    a: Expr
    b: Expr
    ctype: TypeName
    OPS = ("+", "-", "*", "/", "%", "|", "&")

    def children(self):
        return (self.a, self.b)

    def rebuild(self, children, polys):
        return Arith(self.op, children[0], children[1], self.ctype)


@dataclass(frozen=True)
class Neg(Expr):
    """``-value``."""
    value: Expr
    ctype: TypeName

    def children(self):
        return (self.value,)

    def rebuild(self, children, polys):
        return Neg(children[0], self.ctype)


@dataclass(frozen=True)
class Compare(Expr):
    """``a op b`` (an ``int``: 1 or 0)."""
    op: Operator
    a: Expr
    b: Expr
    ctype: TypeName = "int"
    OPS = ("<", "<=", ">", ">=", "==", "!=")

    def children(self):
        return (self.a, self.b)

    def rebuild(self, children, polys):
        return Compare(self.op, children[0], children[1])

    def with_constant(self) -> tuple[Poly, int] | None:
        """``(a, c)`` when this compares a polynomial ``a`` with an integer constant ``c`` (``n <= 16``: the run-time
        choices that version loops by a dim), else None."""
        bound = self.b.value if isinstance(self.b, Lit) else self.b.const if isinstance(self.b, Poly) else None
        return (self.a, bound) if isinstance(self.a, Poly) and isinstance(bound, int) else None


@dataclass(frozen=True)
class And(Expr):
    """``args[0] && args[1] && ...``."""
    args: tuple[Expr, ...]
    ctype: TypeName = "int"

    def children(self):
        return self.args

    def rebuild(self, children, polys):
        return And(tuple(children))


@dataclass(frozen=True)
class Or(Expr):
    """``args[0] || args[1] || ...``."""
    args: tuple[Expr, ...]
    ctype: TypeName = "int"

    def children(self):
        return self.args

    def rebuild(self, children, polys):
        return Or(tuple(children))


@dataclass(frozen=True)
class Not(Expr):
    """``!value``."""
    value: Expr
    ctype: TypeName = "int"

    def children(self):
        return (self.value,)

    def rebuild(self, children, polys):
        return Not(children[0])


@dataclass(frozen=True)
class Select(Expr):
    """``cond ? then : orelse``."""
    cond: Expr
    then: Expr
    orelse: Expr
    ctype: TypeName

    def children(self):
        return (self.cond, self.then, self.orelse)

    def rebuild(self, children, polys):
        return Select(children[0], children[1], children[2], self.ctype)


@dataclass(frozen=True)
class Helper(Expr):
    """A pure function of the kernel library or libm applied to ``args`` (``rt_pad_source``, ``fabsf``): it reads
    nothing but its arguments."""
    name: Name
    args: tuple[Expr, ...]
    ctype: TypeName

    def children(self):
        return self.args

    def rebuild(self, children, polys):
        return Helper(self.name, tuple(children), self.ctype)


# value -> (C spelling, C type) of the run time's named values
RUNTIME_VALUES = {
    "ctx": ("ctx", "rt_ctx *"),
    "num_threads": ("ctx->num_threads", "int"),
    "parallel_min": ("RT_PARALLEL_MIN", "int64_t"),
    "gemm_parallel_min": ("RT_GEMM_PARALLEL_MIN", "int64_t"),
    "null": ("NULL", "void *"),
}


@dataclass(frozen=True)
class Named(Expr):
    """A value of the run time (``RUNTIME_VALUES``): the call's context, its number of threads, thresholds."""
    value: Name

    @property
    def ctype(self):
        return RUNTIME_VALUES.get(self.value, (None, "void"))[1]


@dataclass(frozen=True)
class Slot(Expr):
    """The ``rt_tensor`` at ``array[index]``: a function input or output (``in``, ``out``), a callback's argument."""
    array: Name
    index: int
    ctype: TypeName = "rt_tensor"


@dataclass(frozen=True)
class Field(Expr):
    """A field of a struct (``in[0].shape[1]``, ``win.oh``) or of what a pointer points at (``list->length``),
    element ``index`` of it when it is an array."""
    base: Expr
    name: Name
    ctype: TypeName
    index: int | None = None

    def children(self):
        return (self.base,)

    def rebuild(self, children, polys):
        return Field(children[0], self.name, self.ctype, self.index)


@dataclass(frozen=True)
class DimsArray(Expr):
    """A constant array of ``int64_t`` (dims passed to the kernel library)."""
    values: tuple[Poly, ...]
    ctype: TypeName = "const int64_t *"

    def polys(self):
        return self.values

    def rebuild(self, children, polys):
        return DimsArray(tuple(polys))


@dataclass(frozen=True)
class Ptr(Expr):
    """A pointer to element ``offset`` of buffer ``name``, converted to ``ctype`` when given."""
    name: Name
    offset: Poly = ZERO
    cast: TypeName | None = None

    @property
    def ctype(self):
        return self.cast or "void *"

    def polys(self):
        return (self.offset,)

    def rebuild(self, children, polys):
        return Ptr(self.name, polys[0], self.cast)


CTX = Named("ctx")
NULL = Named("null")
NUM_THREADS = Named("num_threads")
ALWAYS = Lit(1, "int")


# C element types of arrays whose bytes a build can embed (Declare.blob), and their numpy types
BLOB_TYPES = {"float": "float32", "double": "float64", "int8_t": "int8", "int16_t": "int16", "int32_t": "int32",
              "int64_t": "int64", "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32",
              "uint64_t": "uint64"}


def literal(value, dtype) -> Lit:
    """The constant of ``dtype`` for a Python/numpy scalar."""
    ctype = dtype.c_type
    if dtype.is_floating:
        return Lit(float(value), ctype)
    if dtype is dtypes.bool_:
        return Lit(bool(value), ctype)
    return Lit(int(value), ctype)


def spell(value, ctype: str) -> str:
    """C text of the constant ``value`` of C type ``ctype``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            text = "NAN"
        elif math.isinf(value):
            text = "INFINITY" if value > 0 else "-INFINITY"
        else:
            mantissa, exponent = math.frexp(abs(value))
            if mantissa == 0.5 and abs(exponent) > 20:       # a power of two far from 1: 0x1p-126
                text = ("-" if value < 0 else "") + f"0x1p{exponent - 1}"
            else:
                text = repr(value)
            text += "f" if ctype == "float" else ""
        return f"(({ctype}){text})" if text[0] in "-IN" else text
    if ctype == "int64_t":
        return "INT64_MIN" if value == -2 ** 63 else f"{value}LL"
    if ctype == "uint64_t":
        return f"{value}ull"
    return f"(({ctype}){value})" if value < 0 else str(value)


def map_expr(expr: Expr, on_poly: Callable[[Poly], Poly] | None = None,
             on_node: Callable[[Expr], Expr | None] | None = None) -> Expr:
    """Rebuild ``expr`` bottom-up: ``on_node`` may replace a node (None keeps it), ``on_poly`` maps indices."""
    if on_node is not None:
        replaced = on_node(expr)
        if replaced is not None:
            return replaced
    old = expr.children()
    children = tuple(map_expr(c, on_poly, on_node) for c in old)
    polys = tuple(on_poly(p) for p in expr.polys()) if on_poly is not None else expr.polys()
    if all(a is b for a, b in zip(children, old)) and all(a is b for a, b in zip(polys, expr.polys())):
        return expr
    return expr.rebuild(children, polys)


def walk_expr(expr: Expr):
    yield expr
    for c in expr.children():
        yield from walk_expr(c)


# ---------------------------------------------------------------------------
# Printing expressions: C (``render_expr``) and the IR listing (``format_expr``) share one printer, which
# parenthesises by C's precedence.

_ATOM, _UNARY, _MUL, _ADD, _REL, _EQ, _BITAND, _BITOR, _AND, _OR, _COND = 16, 15, 13, 12, 10, 9, 8, 6, 5, 4, 3
_BINARY = {"*": _MUL, "/": _MUL, "%": _MUL, "+": _ADD, "-": _ADD, "<": _REL, "<=": _REL, ">": _REL, ">=": _REL,
           "==": _EQ, "!=": _EQ, "&": _BITAND, "|": _BITOR}


def render_expr(expr: Expr) -> str:
    """``expr`` as C."""
    return _print(expr, True)[0]


def format_expr(expr: Expr) -> str:
    """``expr`` as the IR listing prints it (op-table applications by op name: ``Mul(a, b)``)."""
    return _print(expr, False)[0]


def _wrap(printed: tuple[str, int], level: int) -> str:
    text, prec = printed
    return text if prec >= level else f"({text})"


def _poly_prec(p: Poly) -> int:
    const = p.const
    if const is not None:
        return _ATOM if const >= 0 else _UNARY
    if len(p.terms) > 1:
        return _ADD
    (m, c), = p.terms.items()
    return _ATOM if c == 1 and len(m) == 1 else (_MUL if c > 0 else _UNARY)


def _print(e: Expr, c: bool) -> tuple[str, int]:
    """(text, precedence) of ``e`` (C when ``c``)."""
    if isinstance(e, Poly):
        return str(e), _poly_prec(e)
    if isinstance(e, Lit):
        text = spell(e.value, e.ctype)
        return text, _ATOM
    if isinstance(e, Var):
        return e.name, _ATOM
    if isinstance(e, Load):
        extra = ""
        for value, m in e.indirect:
            v = f"(int64_t){_wrap(_print(value, c), _UNARY)}" if c else _wrap(_print(value, c), _MUL)
            extra += f" + {v}" if m == 1 else f" + {v} * {_wrap((str(m), _poly_prec(m)), _MUL + 1)}"
        return f"{e.ptr}[{e.index}{extra}]", _ATOM
    if isinstance(e, Index):
        return (f"(({e.ctype})({e.value}))", _ATOM) if c else (f"({e.value})", _ATOM)
    if isinstance(e, Apply):
        if c:
            return c_expression(e.opdef, [_wrap(_print(a, c), _ATOM) for a in e.args], list(e.in_dtypes),
                                e.out_dtype, [f"({p})" for p in e.index]), _ATOM
        inner = ", ".join([_print(a, c)[0] for a in e.args] + [f"#{p}" for p in e.index])
        return f"{e.opdef.type}({inner})", _ATOM
    if isinstance(e, Combine):
        text = e.reduction.combine
        for i, a in enumerate((e.acc, e.value)):
            text = text.replace("{" + str(i) + "}", _wrap(_print(a, c), _ATOM))
        return text, _ATOM
    if isinstance(e, Cast):
        return (f"(({e.ctype}){_wrap(_print(e.value, c), _UNARY)})", _ATOM) if c else \
            (f"({e.ctype}){_wrap(_print(e.value, c), _UNARY)}", _UNARY)
    if isinstance(e, Arith):
        level = _BINARY[e.op]
        # an operand of a bitwise operator that is a comparison gets parentheses C's precedence does not need
        inner = _UNARY if e.op in ("|", "&") else level
        return (f"{_wrap(_print(e.a, c), level if isinstance(e.a, Arith) and e.a.op == e.op else inner)} {e.op} "
                f"{_wrap(_print(e.b, c), max(inner, level + 1))}"), level
    if isinstance(e, Compare):
        level = _BINARY[e.op]
        # a comparison of comparisons or of bitwise values is parenthesised although C's precedence would not need it
        return f"{_wrap(_print(e.a, c), level + 1)} {e.op} {_wrap(_print(e.b, c), level + 1)}", level
    if isinstance(e, Neg):
        return f"-{_wrap(_print(e.value, c), _UNARY + 1)}", _UNARY
    if isinstance(e, Not):
        return f"!{_wrap(_print(e.value, c), _UNARY + 1)}", _UNARY
    if isinstance(e, (And, Or)):
        level, op = (_AND, " && ") if isinstance(e, And) else (_OR, " || ")
        return op.join(_wrap(_print(a, c), level + 1 if isinstance(a, (And, Or)) else level) for a in e.args), level
    if isinstance(e, Select):
        return (f"{_wrap(_print(e.cond, c), _COND + 1)} ? {_wrap(_print(e.then, c), _COND + 1)} : "
                f"{_wrap(_print(e.orelse, c), _COND + 1)}"), _COND
    if isinstance(e, Helper):
        return f"{e.name}({', '.join(_print(a, c)[0] for a in e.args)})", _ATOM
    if isinstance(e, Named):
        return RUNTIME_VALUES.get(e.value, (f"<unknown value {e.value!r}>",))[0], _ATOM
    if isinstance(e, Slot):
        return f"{e.array}[{e.index}]", _ATOM
    if isinstance(e, Field):
        base = _wrap(_print(e.base, c), _ATOM)
        arrow = "->" if e.base.ctype.endswith("*") else "."
        return f"{base}{arrow}{e.name}" + ("" if e.index is None else f"[{e.index}]"), _ATOM
    if isinstance(e, DimsArray):
        values = ", ".join(str(v) for v in e.values) or "0"
        return (f"(const int64_t[]){{{values}}}", _ATOM) if c else (f"[{values}]", _ATOM)
    if isinstance(e, Ptr):
        text = e.name if e.offset == 0 else f"{e.name} + {_wrap((str(e.offset), _poly_prec(e.offset)), _ADD + 1)}"
        if e.cast is not None:
            return f"(({e.cast}){_wrap((text, _ADD if e.offset != 0 else _ATOM), _UNARY)})", _ATOM
        return text, (_ADD if e.offset != 0 else _ATOM)
    raise TypeError(f"not an expression: {e!r}")


CHEAP_HELPERS = ("rt_max(", "rt_min(", "rt_abs(", "rt_sign(", "rt_relu(", "rt_square(")


def expensive(c_expr: str | None) -> bool:
    """True when an op's ``c_expr`` calls a costly helper (exp, tanh, pow, an integer division ...)."""
    text = c_expr or ""
    for helper in CHEAP_HELPERS:
        text = text.replace(helper, "(")
    return "rt_" in text


# ---------------------------------------------------------------------------
# Arguments of calls that are not values.


@dataclass(frozen=True)
class Text:
    """A string argument of a call (the renderer makes it a C string literal)."""
    value: Message

    def __str__(self):
        return repr(self.value)


@dataclass(frozen=True)
class OutArg:
    """A local the call sets through a pointer. The renderer passes the address of a temporary declared around
    the call and copies it back after (so that no local's address is ever taken: a local whose address is
    taken is shared with OpenMP regions by reference, and GCC then reloads it after every store); ``inout``:
    the temporary starts with the local's value."""
    name: Name
    ctype: TypeName
    inout: bool = False

    def __str__(self):
        return f"&{self.name}"


@dataclass(frozen=True)
class InArg:
    """A value the call reads through a pointer: the address of a temporary holding it, declared around the call."""
    value: Expr
    ctype: TypeName

    def __str__(self):
        return f"&({self.value})"


def arg_exprs(args) -> list[Expr]:
    """The expressions call arguments read."""
    return [a.value if isinstance(a, InArg) else a for a in args if isinstance(a, (Expr, InArg))]


# ---------------------------------------------------------------------------
# Statements. ``exprs()`` gives the expressions a statement reads; ``map_exprs(f)`` replaces each of them by
# ``f(expr)`` in place (``f`` gets indices as ``Poly`` expressions too).


class Stmt:
    def blocks(self) -> tuple:
        """Nested statement lists."""
        return ()

    def exprs(self) -> tuple:
        return ()

    def map_exprs(self, f) -> None:
        return None


@dataclass(eq=False)
class Comment(Stmt):
    text: Message


@dataclass(eq=False)
class Declare(Stmt):
    """``ctype name[ = init];``: an array of ``size`` elements when given (64-byte aligned, its elements
    ``values`` when given, or ``blob``, their bytes, for a big constant the C file embeds as a binary file
    instead of an initializer), ``static`` storage, or ``const``."""
    name: Name
    ctype: TypeName
    init: Expr | None = None
    size: int | None = None
    values: tuple[Lit, ...] | None = None
    static: bool = False
    const: bool = False
    blob: bytes | None = None

    def exprs(self):
        return () if self.init is None else (self.init,)

    def map_exprs(self, f):
        if self.init is not None:
            self.init = f(self.init)


@dataclass(eq=False)
class Assign(Stmt):
    """``name = value;`` for a scalar local, a pointer or an index symbol."""
    name: Name
    value: Expr

    def exprs(self):
        return (self.value,)

    def map_exprs(self, f):
        self.value = f(self.value)


@dataclass(eq=False)
class SetTensor(Stmt):
    """``slot = value;``: an ``rt_tensor`` of the call (a result, a callback's argument) set to another."""
    slot: Slot
    value: Expr

    def exprs(self):
        return (self.value,)

    def map_exprs(self, f):
        self.value = f(self.value)


@dataclass(eq=False)
class Swap(Stmt):
    """Exchange the values of two C locals of type ``ctype`` (a loop variable's current and next buffers).

    Pointers only ever swapped with each other keep pointing at distinct memory, which passes over the IR
    may rely on (a plain ``Assign`` of a pointer makes its memory unknown)."""
    a: Name
    b: Name
    ctype: TypeName


@dataclass(eq=False)
class Store(Stmt):
    """``ptr[index] = value;``"""
    ptr: Name
    index: Poly
    value: Expr

    def exprs(self):
        return (self.index, self.value)

    def map_exprs(self, f):
        self.index, self.value = f(self.index), f(self.value)


@dataclass(eq=False)
class For(Stmt):
    """``for (var = start; var < stop; var++) body``.

    ``parallel``: None (serial), or a condition under which the loop runs on ``ctx->num_threads`` threads
    (``ALWAYS``: always; the renderer emits a parallel and a serial copy: a parallel region costs
    microseconds even when its ``if`` clause is false). ``simd`` marks a loop to vectorise; ``reductions``
    lists ``(operator, variable)`` pairs for its reduction clause. ``at_most``: for a run-time trip count, a
    bound the code around it guarantees, with the count a multiple of ``multiple_of`` (a short row's whole
    vectors: ``lanes.peel_tails``). ``independent``: the iterations touch disjoint memory and may run in any
    order, as a parallel loop's do, though this one runs on one thread (a row group under the parallel
    threshold: ``pipeline.py`` overlaps its rows as it does a parallel one's).
    """
    var: Name
    start: Poly
    stop: Poly
    body: list[Stmt]
    parallel: Expr | None = None
    simd: bool = False
    reductions: list[tuple[Operator, Name]] = field(default_factory=list)
    at_most: int | None = None
    multiple_of: int = 1
    independent: bool = False
    REDUCTIONS = ("+", "*", "max", "min", "|", "&")

    def blocks(self):
        return (self.body,)

    def exprs(self):
        return (self.start, self.stop) + (() if self.parallel is None else (self.parallel,))

    def map_exprs(self, f):
        self.start, self.stop = f(self.start), f(self.stop)
        if self.parallel is not None:
            self.parallel = f(self.parallel)


@dataclass(eq=False)
class Loop(Stmt):
    """``for (;;) body`` (left with ``Break``)."""
    body: list[Stmt]

    def blocks(self):
        return (self.body,)


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)

    def blocks(self):
        return (self.then, self.orelse)

    def exprs(self):
        return (self.cond,)

    def map_exprs(self, f):
        self.cond = f(self.cond)


@dataclass(eq=False)
class Fail(Stmt):
    """Stop with an ``InvalidArgumentError``: ``message`` is printf-style over ``args`` (int64 values)."""
    message: Message
    args: tuple[Expr, ...] = ()

    def exprs(self):
        return tuple(self.args)

    def map_exprs(self, f):
        self.args = tuple(f(a) for a in self.args)


@dataclass(eq=False)
class Check(Stmt):
    """``if (bad) Fail(message, args)``."""
    bad: Expr
    message: Message
    args: tuple[Expr, ...] = ()

    def exprs(self):
        return (self.bad,) + tuple(self.args)

    def map_exprs(self, f):
        self.bad = f(self.bad)
        self.args = tuple(f(a) for a in self.args)


@dataclass(eq=False)
class Alloc(Stmt):
    """Point ``ptr`` at storage for ``count`` elements of ``ctype``.

    ``kind``: ``"arena"`` (freed when the call ends, or handed to the caller as a result),
    ``"reserve"`` (a buffer kept across loop iterations, grown when too small; ``capacity`` is its
    size variable), ``"stack"`` (``buffer``, a function-level array).
    """
    ptr: Name
    ctype: TypeName
    count: Poly
    kind: Name
    capacity: Name | None = None
    buffer: Name | None = None
    KINDS = ("arena", "reserve", "stack")

    def exprs(self):
        return (self.count,)

    def map_exprs(self, f):
        self.count = f(self.count)


@dataclass(frozen=True)
class Gemm:
    """What a float GEMM call computes: ``c[m, n]`` (rows ``ldc`` apart) ``= op(a) @ op(b)``. The epilogue pass
    (``epilogue.py``) fuses the loops that read ``c`` into the GEMM's parallel parts."""
    suffix: Name
    a: Ptr
    lda: Poly
    b: Ptr
    ldb: Poly
    c: Name
    ldc: Poly
    m: Poly
    k: Poly
    n: Poly
    ta: int
    tb: int

    @property
    def memory(self) -> tuple:
        """The buffers the product reads."""
        return (self.a.name, self.b.name)

    def sizes(self) -> tuple:
        return (self.lda, self.ldb, self.ldc, self.m, self.k, self.n)


@dataclass(eq=False)
class Call(Stmt):
    """A kernel-library call: ``name(args);``, or ``if (name(args)) fail`` when ``checked``; with
    ``result``, ``result = name(args);`` (and ``checked``: fail when the result is NULL). ``gemm``
    describes a GEMM call's product."""
    name: Name
    args: list[Expr | Text | OutArg | InArg]
    checked: bool = False
    result: Name | None = None
    gemm: Gemm | None = None

    def exprs(self):
        return tuple(arg_exprs(self.args))

    def map_exprs(self, f):
        self.args = [f(a) if isinstance(a, Expr) else InArg(f(a.value), a.ctype) if isinstance(a, InArg) else a
                     for a in self.args]

    def out_names(self) -> list[str]:
        """The locals the call sets."""
        return [a.name for a in self.args if isinstance(a, OutArg)] + ([self.result] if self.result else [])


@dataclass(eq=False)
class Callback(Stmt):
    """Run op ``op_index`` of the function's graph through Python: inputs in ``ins[0:n_in]``, results into
    ``outs[0:n_out]`` (``rt_tensor`` arrays)."""
    op_index: int
    ins: Name
    n_in: int
    outs: Name
    n_out: int


@dataclass(eq=False)
class Describe(Stmt):
    """Fill the ``rt_tensor`` ``target``: data ``ptr``, shape ``dims``, dtype ``code``."""
    target: Slot
    ptr: Name
    dims: list[Poly]
    code: int

    def exprs(self):
        return tuple(self.dims)

    def map_exprs(self, f):
        self.dims = [f(d) for d in self.dims]


@dataclass(eq=False)
class Parts(Stmt):
    """Independent blocks run concurrently (inter-op parallelism), each with its own arena."""
    parts: list[list[Stmt]]

    def blocks(self):
        return tuple(self.parts)


class Namer:
    """The one source of a function's local names (the lowering's and its passes'): ``base`` and a counter
    (``p3``, ``acc12``). ``derived`` names one that belongs to another (``acc12_nan``): a fresh name ends in a
    digit and a derived one in a letter, so none is given twice. No name starts with ``rt_``, the prefix of
    the kernel library and of the renderer's own names (``rt_swap``, ``rt_out0``)."""

    RESERVED = "rt_"

    def __init__(self):
        self.counter = 0

    def fresh(self, base: str = "t") -> str:
        if base.startswith(self.RESERVED) or not IDENTIFIER.match(base):
            raise ValueError(f"not a base for a local's name: {base!r}")
        self.counter += 1
        return f"{base}{self.counter}"

    @staticmethod
    def derived(name: str, suffix: str) -> str:
        """``name`` + ``_suffix`` (letters)."""
        if not re.fullmatch(r"[a-z]+", suffix) or not name[-1:].isdigit():
            raise ValueError(f"not a derived name: {name!r} + {suffix!r}")
        return f"{name}_{suffix}"


@dataclass
class Function:
    """One built function: ``static int name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)``.

    ``num_inputs``: how many of ``in`` are the function's inputs (the variables' storage follows them).
    ``guard``: pairs of input dims (``in[k].shape[d]``) the body assumes equal (``lowering/assume.py``); when
    one differs at run time the call goes to ``fallback``, lowered without the assumption.
    """
    name: Name
    locals: list[Stmt]          # Declare statements at function level
    body: list[Stmt]
    signature: Message = ""
    num_inputs: int = 0
    guard: list[tuple[Field, Field]] = field(default_factory=list)
    fallback: Function | None = None
    names: Namer = field(default_factory=Namer, repr=False, compare=False)

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
            if s.parallel is not None:
                notes.append("parallel" if s.parallel == ALWAYS else f"parallel if {s.parallel}")
            elif s.independent:
                notes.append("independent")
            if s.simd:
                notes.append("simd")
            if s.reductions:
                notes.append("reduce(" + ", ".join(f"{op}:{v}" for op, v in s.reductions) + ")")
            if s.at_most is not None:
                notes.append(f"at most {s.at_most}, a multiple of {s.multiple_of}")
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


def format_stmt(s: Stmt) -> str:
    """One line for ``s`` (a compound statement's head)."""
    if isinstance(s, For):
        lines: list = []
        _format_block([replace(s, body=[])], 0, lines)
        return lines[0]
    if isinstance(s, Loop):
        return "loop"
    if isinstance(s, If):
        return f"if {s.cond}"
    if isinstance(s, Parts):
        return f"{len(s.parts)} parts (concurrently)"
    return _format_stmt(s)


def _format_stmt(s: Stmt) -> str:
    if isinstance(s, Comment):
        return f"# {s.text}"
    if isinstance(s, Declare):
        size = f"[{s.size}]" if s.size is not None else ""
        init = "" if s.init is None else f" = {s.init}"
        if s.values is not None:
            init = " = {" + ", ".join(map(str, s.values)) + "}"
        elif s.blob is not None:
            init = f" = <{len(s.blob)} bytes>"
        kind = ("static " if s.static else "") + ("const " if s.const else "")
        return f"let {kind}{s.name}: {s.ctype}{size}{init}"
    if isinstance(s, Assign):
        return f"{s.name} = {s.value}"
    if isinstance(s, SetTensor):
        return f"{s.slot} = {s.value}"
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
    if isinstance(s, Callback):
        return f"callback op {s.op_index}({s.ins}[0:{s.n_in}]) -> {s.outs}[0:{s.n_out}]"
    if isinstance(s, Describe):
        return f"{s.target} = tensor({s.ptr}, [{', '.join(map(str, s.dims))}], dtype {s.code})"
    return repr(s)


def walk_stmts(stmts: list):
    """Every statement, nested ones included, in order."""
    for s in stmts:
        yield s
        for block in s.blocks():
            yield from walk_stmts(block)


def names_in(expr: Expr) -> set[str]:
    """Every name ``expr`` reads: locals, index symbols, buffers."""
    found: set[str] = set()
    for node in walk_expr(expr):
        if isinstance(node, Var):
            found.add(node.name)
        elif isinstance(node, (Load, Ptr)):
            found.add(node.ptr if isinstance(node, Load) else node.name)
        elif isinstance(node, Slot):
            found.add(node.array)
        for p in node.polys():
            found |= p.symbols()
    return found


def rename(stmts: list, names: dict) -> list:
    """``stmts`` with the locals of ``names`` (old -> new) renamed, in place: declarations, assignments, loop
    variables and reduction clauses, and every read (variables, index symbols, buffers)."""
    if not names:
        return stmts
    polys = {old: Poly.sym(new) for old, new in names.items()}

    def node(e):
        if isinstance(e, Var) and e.name in names:
            return Var(names[e.name], e.ctype)
        if isinstance(e, Load) and (e.ptr in names or any(names_in(x) & names.keys() for x, _ in e.indirect)):
            return Load(names.get(e.ptr, e.ptr), e.index.substitute(polys), e.ctype,
                        tuple((expr(x), m.substitute(polys)) for x, m in e.indirect))
        if isinstance(e, Ptr) and e.name in names:
            return Ptr(names[e.name], e.offset.substitute(polys), e.cast)
        return None

    def expr(e):
        return map_expr(e, lambda p: p.substitute(polys), node)
    for s in walk_stmts(stmts):
        s.map_exprs(expr)
        for attr in ("name", "ptr", "var", "a", "b", "capacity", "buffer", "result"):
            value = getattr(s, attr, None)
            if isinstance(value, str) and value in names:
                setattr(s, attr, names[value])
        if isinstance(s, For):
            s.reductions = [(op, names.get(v, v)) for op, v in s.reductions]
        if isinstance(s, Call):
            s.args = [OutArg(names.get(a.name, a.name), a.ctype, a.inout) if isinstance(a, OutArg) else a
                      for a in s.args]
    return stmts


def node_types() -> list[type]:
    """Every node class of the IR (for the test that no field can hold C text)."""
    found = [Poly, Text, OutArg, InArg, Gemm, Function, Namer]
    for base in (Expr, Stmt):
        stack = [base]
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            if cls not in found and cls not in (Expr, Stmt):
                found.append(cls)
    return found
