"""``verify(fn)``: the loop IR is well formed (``lower_function`` runs it after every pass under ``RT_DEBUG`` or
``RT_VERIFY_IR``; the tests set the latter).

It checks, walking the function in program order:

- every name is declared before it is used (function-level locals, declarations of a block, loop variables,
  the parameters ``ctx``, ``in`` and ``out``), every symbol of every index polynomial included, and every name,
  C type and operator is one (no C text in disguise);
- every buffer (a pointer local) is pointed at memory (allocated, assigned, set by a call) before it is read or
  written, and one the IR frees (``rt_drop``) is freed once before it is set again;
- nothing is stored into a function input's memory;
- ``Swap`` exchanges two locals of its one type;
- ``Break`` is inside a ``Loop`` (not across a parallel loop or a concurrent part);
- a guarded function has a fallback of the same signature, itself unguarded.

A problem raises ``IRError`` naming the function and the statement.
"""
from __future__ import annotations

from transpiler.lowering.ir import (
    IDENTIFIER,
    RUNTIME_VALUES,
    TYPE_NAME,
    Alloc,
    And,
    Arith,
    Assign,
    Break,
    Call,
    Callback,
    Cast,
    Check,
    Combine,
    Comment,
    Compare,
    Declare,
    Describe,
    Expr,
    Fail,
    Field,
    For,
    Function,
    Helper,
    If,
    InArg,
    Index,
    Lit,
    Load,
    Loop,
    Named,
    Neg,
    Or,
    OutArg,
    Parts,
    Ptr,
    Select,
    SetTensor,
    Slot,
    Store,
    Swap,
    Text,
    Var,
    format_stmt,
    names_in,
    walk_expr,
)

TYPED = (Lit, Var, Load, Index, Cast, Arith, Neg, Compare, Select, Helper, Slot, Field, Combine, And, Or)

PARAMETERS = {"ctx": "rt_ctx *", "in": "rt_tensor *", "out": "rt_tensor *"}


class IRError(ValueError):
    """The loop IR is malformed."""


def verify(fn: Function) -> None:
    """Raise ``IRError`` when ``fn`` (and its fallback) is malformed (see the module docstring)."""
    if fn.guard and fn.fallback is None:
        raise IRError(f"{fn.name}: guarded, but without a fallback")
    if fn.fallback is not None:
        if fn.fallback.signature != fn.signature or fn.fallback.num_inputs != fn.num_inputs:
            raise IRError(f"{fn.name}: its fallback {fn.fallback.name} has another signature "
                          f"({fn.fallback.signature} vs {fn.signature})")
        if fn.fallback.guard:
            raise IRError(f"{fn.name}: its fallback {fn.fallback.name} is guarded itself")
        verify(fn.fallback)
    _Checker(fn).run()


class _Checker:
    def __init__(self, fn: Function):
        self.fn = fn
        self.scopes: list[dict] = [dict(PARAMETERS)]
        self.set: set[str] = set()           # pointer locals pointing at memory (arrays always do)
        self.inputs: set[str] = set()        # pointer locals into a function input's memory
        self.stmt = None

    def fail(self, problem: str):
        where = f" in `{format_stmt(self.stmt)}`" if self.stmt is not None else ""
        raise IRError(f"{self.fn.name}: {problem}{where}")

    # -- names ---------------------------------------------------------------------------------
    def ctype(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def use(self, *names) -> None:
        for name in names:
            if name is None:
                continue
            self.name(name)
            if self.ctype(name) is None:
                self.fail(f"'{name}' is used before it is declared")

    def name(self, name) -> None:
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            self.fail(f"{name!r} is not a name")

    def type_name(self, ctype) -> None:
        if not isinstance(ctype, str) or not TYPE_NAME.match(ctype):
            self.fail(f"{ctype!r} is not a C type the IR knows")

    def declare(self, name: str, ctype: str) -> None:
        self.name(name)
        self.type_name(ctype)
        if self.ctype(name) is not None:
            self.fail(f"'{name}' is declared twice (or hides a declaration around it)")
        self.scopes[-1][name] = ctype

    def pointer(self, name: str) -> bool:
        ctype = self.ctype(name)
        return ctype is not None and ctype.endswith("*")

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, e) -> None:
        for node in walk_expr(e):
            if not isinstance(node, Expr):
                self.fail(f"{node} is not an expression of the IR")
            if isinstance(node, (Arith, Compare)) and node.op not in type(node).OPS:
                self.fail(f"{node.op!r} is not an operator of {type(node).__name__}")
            if isinstance(node, Named) and node.value not in RUNTIME_VALUES:
                self.fail(f"{node.value!r} is not a value of the run time")
            if isinstance(node, TYPED):
                self.type_name(node.ctype)
            if isinstance(node, Ptr) and node.cast is not None:
                self.type_name(node.cast)
            if isinstance(node, (And, Or)) and not node.args:
                self.fail(f"an empty {type(node).__name__}")
            if isinstance(node, Load):
                self.read(node.ptr)
            elif isinstance(node, Ptr):
                self.read(node.name)
        self.use(*sorted(names_in(e)))

    def read(self, buffer: str) -> None:
        """``buffer`` is read or written through: it must point at memory."""
        self.use(buffer)
        if self.pointer(buffer) and buffer not in self.set:
            self.fail(f"buffer '{buffer}' is used before it points at memory (allocated, assigned or set by a call)")

    # -- statements ----------------------------------------------------------------------------
    def run(self) -> None:
        for d in self.fn.locals:
            if not isinstance(d, Declare):
                self.stmt = d
                self.fail("a function-level statement that is not a declaration")
            self.statement(d, loops=0)
        self.block(self.fn.body, loops=0, new_scope=False)

    def block(self, stmts: list, loops: int, new_scope: bool = True) -> None:
        if new_scope:
            self.scopes.append({})
        for s in stmts:
            self.statement(s, loops)
        if new_scope:
            self.scopes.pop()

    def branch(self, stmts: list, loops: int) -> set:
        """Check a block entered conditionally: the buffers set after it (the state is restored)."""
        before = set(self.set)
        self.block(stmts, loops)
        after, self.set = self.set, before
        return after

    def statement(self, s, loops: int) -> None:
        self.stmt = s
        if isinstance(s, Declare):
            if s.init is not None:
                self.expr(s.init)
            for v in s.values or ():
                self.expr(v)
            self.declare(s.name, s.ctype)
            if s.size is not None:
                self.set.add(s.name)
            elif s.ctype.endswith("*") and s.init is not None and s.init != Named("null"):
                self.point(s.name, s.init)
        elif isinstance(s, Assign):
            self.expr(s.value)
            self.use(s.name)
            if self.pointer(s.name):
                self.point(s.name, s.value)
        elif isinstance(s, SetTensor):
            self.expr(s.value)
            self.expr(s.slot)
        elif isinstance(s, Store):
            self.expr(s.index)
            self.expr(s.value)
            self.read(s.ptr)
            if s.ptr in self.inputs:
                self.fail(f"a store into the memory of a function input ('{s.ptr}')")
        elif isinstance(s, Swap):
            self.use(s.a, s.b)
            self.type_name(s.ctype)
            if not self.ctype(s.a) == self.ctype(s.b) == s.ctype:
                self.fail(f"a swap of '{s.a}' ({self.ctype(s.a)}) and '{s.b}' ({self.ctype(s.b)}) as {s.ctype}")
            if s.ctype.endswith("*"):
                self.read(s.a)
                self.read(s.b)
        elif isinstance(s, For):
            for e in s.exprs():
                self.expr(e)
            for op, var in s.reductions:
                if op not in For.REDUCTIONS:
                    self.fail(f"{op!r} is not a reduction operator")
                self.use(var)
            self.scopes.append({})
            self.declare(s.var, "int64_t")
            # the body may run no time: what it sets is not known to be set after it; a break in it would leave it,
            # not a Loop around it
            self.branch(s.body, 0)
            self.scopes.pop()
        elif isinstance(s, Loop):
            self.branch(s.body, loops + 1)
        elif isinstance(s, Break):
            if not loops:
                self.fail("a break outside a loop (or leaving a parallel loop or a concurrent part)")
        elif isinstance(s, If):
            self.expr(s.cond)
            then, orelse = self.branch(s.then, loops), self.branch(s.orelse, loops)
            self.set |= then & orelse
        elif isinstance(s, (Check, Fail)):
            for e in s.exprs():
                self.expr(e)
        elif isinstance(s, Alloc):
            self.use(s.ptr, s.capacity, s.buffer)
            self.type_name(s.ctype)
            self.expr(s.count)
            if s.kind not in Alloc.KINDS or (s.kind == "reserve") != (s.capacity is not None) or \
                    (s.kind == "stack") != (s.buffer is not None):
                self.fail(f"an allocation of kind {s.kind!r} with capacity {s.capacity!r} and buffer {s.buffer!r}")
            if s.ptr in self.inputs:
                self.fail(f"an allocation into the pointer of a function input ('{s.ptr}')")
            self.set.add(s.ptr)
        elif isinstance(s, Call):
            self.call(s)
        elif isinstance(s, Callback):
            self.use(s.ins, s.outs)
        elif isinstance(s, Describe):
            self.expr(s.target)
            for d in s.dims:
                self.expr(d)
            self.read(s.ptr)
        elif isinstance(s, Parts):
            after = set(self.set)
            for part in s.parts:
                after |= self.branch(part, 0)
            self.set = after
        elif isinstance(s, Comment):
            pass
        else:
            self.fail(f"{type(s).__name__} is not a statement of the IR")

    def call(self, s: Call) -> None:
        self.name(s.name)
        for a in s.args:
            if isinstance(a, InArg):
                self.type_name(a.ctype)
                self.expr(a.value)
            elif isinstance(a, OutArg):
                self.type_name(a.ctype)
                self.use(a.name)
                if a.ctype != self.ctype(a.name):
                    self.fail(f"'{a.name}' ({self.ctype(a.name)}) is set through a pointer to {a.ctype}")
            elif isinstance(a, Text):
                if not isinstance(a.value, str):
                    self.fail(f"a string argument that is not a string: {a.value!r}")
            elif isinstance(a, Expr):
                self.expr(a)
            else:
                self.fail(f"{a!r} is not an argument of a call")
        if s.gemm is not None:
            g = s.gemm
            for p in (*g.sizes(), g.a, g.b):
                self.expr(p)
            self.read(g.c)
            if g.c in self.inputs:
                self.fail(f"a product into the memory of a function input ('{g.c}')")
        if s.name == "rt_drop":
            (ptr,) = [a.name for a in s.args if isinstance(a, Ptr)]
            self.set.discard(ptr)               # freed: set again before it is used or freed again
        for a in s.args:
            if isinstance(a, OutArg) and self.pointer(a.name):
                self.set.add(a.name)
        if s.result is not None:
            self.use(s.result)
            if self.pointer(s.result):
                self.set.add(s.result)

    def point(self, name: str, value) -> None:
        """Pointer local ``name`` set to ``value``: it points at memory, a function input's when ``value`` is."""
        self.set.add(name)
        self.inputs.discard(name)
        for node in walk_expr(value):
            data = isinstance(node, Field) and node.name == "data" and isinstance(node.base, Slot)
            if data and node.base.array == "in" and node.base.index < self.fn.num_inputs or \
                    isinstance(node, (Var, Ptr)) and node.name in self.inputs:
                self.inputs.add(name)
