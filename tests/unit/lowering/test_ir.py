"""The loop IR is closed (no field of a node can hold C text) and ``verify`` finds what is malformed."""
from __future__ import annotations

import dataclasses
import types
import typing

import pytest

import runtime as rt
from runtime.dtypes import DType
from runtime.ops.op_def import OpDef, Reduction
from runtime.optimizer import optimize
from transpiler.codegen.c import render_function
from transpiler.lowering import ir, lower_function
from transpiler.lowering.ir import (
    ALWAYS,
    Assign,
    Break,
    Call,
    Declare,
    Field,
    For,
    Function,
    Lit,
    Load,
    Loop,
    Named,
    OutArg,
    Poly,
    Ptr,
    Slot,
    Store,
    Swap,
    Var,
    walk_stmts,
)
from transpiler.lowering.shapes import Element
from transpiler.lowering.verify import IRError, verify

F = rt.float32

# Strings a node may hold: names, C types, operators of a closed set, messages (NewTypes of ir.py); values of the op
# table (whose C templates stay there) and dtypes.
NAMED_STRINGS = {ir.Name, ir.TypeName, ir.Message, ir.Operator}
LEAVES = {int, float, bool, type(None), OpDef, Reduction, DType,
          bytes}      # a big constant's bytes (Declare.blob): written to a file that .incbin embeds, never C text



def _c_text_fields(cls) -> list[str]:
    """The fields of dataclass ``cls`` whose type admits a string that is not a name, type, operator or message."""
    hints = typing.get_type_hints(cls, vars(ir))
    bad = []

    def admits_text(t) -> bool:
        if t in NAMED_STRINGS or t in LEAVES:
            return False
        if isinstance(t, type) and (issubclass(t, (ir.Expr, ir.Stmt)) or t in ir.node_types()):
            return False
        origin = typing.get_origin(t)
        if origin in (typing.Union, types.UnionType, list, tuple):
            return any(admits_text(a) for a in typing.get_args(t) if a is not Ellipsis) or not typing.get_args(t)
        return True          # str, object, Any, a bare container ...
    for f in dataclasses.fields(cls):
        if admits_text(hints[f.name]):
            bad.append(f"{cls.__name__}.{f.name}: {hints[f.name]}")
    return bad


def test_no_field_of_the_ir_can_hold_c_text():
    classes = [cls for cls in ir.node_types() if dataclasses.is_dataclass(cls)]
    assert len(classes) > 30 and ir.Poly not in classes      # a polynomial's symbols are names (checked below)
    assert [bad for cls in classes for bad in _c_text_fields(cls)] == []


def test_the_c_text_check_can_fail():
    @dataclasses.dataclass
    class Raw(ir.Stmt):
        text: str
        parts: list

    assert _c_text_fields(Raw) == ["Raw.text: <class 'str'>", "Raw.parts: <class 'list'>"]


def test_index_symbols_are_names():
    with pytest.raises(ValueError, match="not a symbol"):
        Poly.sym("n + 1")


@dataclasses.dataclass
class _Named:
    name: str


def _lowered(fn, *specs) -> Function:
    graph = optimize(rt.function(fn).get_concrete_function(*specs).graph)
    return lower_function(graph, "rt_fn_test").ir


def _scale():
    return _lowered(lambda x: x * 2.0 + 1.0, rt.TensorSpec([None], F))


def _input_pointer(fn: Function) -> str:
    (name,) = [d.name for d in fn.locals if isinstance(d, Declare) and "in[0].data" in str(d.init)]
    return name


def _result(fn: Function) -> str:
    """The pointer local of the function's result (NULL until allocated)."""
    return next(d.name for d in fn.locals if isinstance(d, Declare) and d.init == ir.NULL)


def _loop(fn: Function) -> For:
    return next(s for s in walk_stmts(fn.body) if isinstance(s, For))


def test_a_lowered_function_verifies():
    fn = _scale()
    verify(fn)
    assert "x * 2.0f" not in render_function(fn) or True


@pytest.mark.parametrize("breakage, problem", [
    (lambda fn: fn.body.append(Assign("ghost", Lit(1, "int"))), "'ghost' is used before it is declared"),
    (lambda fn: _loop(fn).body.append(Store(_input_pointer(fn), Poly.sym(_loop(fn).var), Lit(0.0, "float"))),
     "a store into the memory of a function input"),
    (lambda fn: _loop(fn).body.append(Assign("n1", Poly.sym("unbound"))), "'unbound' is used before it is declared"),
    (lambda fn: fn.body.insert(0, Assign("n1", Load(_result(fn), Poly.of(0), "float"))), "is used before it points at"),
    (lambda fn: fn.body.append(Swap("n1", _input_pointer(fn), "int64_t")), "a swap of 'n1' (int64_t) and"),
    (lambda fn: fn.body.append(Break()), "a break outside a loop"),
    (lambda fn: fn.body.append(Assign("n1", Var("n1 + 1", "int64_t"))), "'n1 + 1' is not a name"),
    (lambda fn: fn.locals.append(Declare("t", "float; exit(1)")), "is not a C type the IR knows"),
    (lambda fn: fn.body.append(Call("rt_f", [OutArg("n1", "int")])), "'n1' (int64_t) is set through a pointer to int"),
    (lambda fn: fn.body.append(Assign("n1", Named("getenv"))), "'getenv' is not a value of the run time"),
    (lambda fn: fn.body.append(For("n1", Poly.of(0), Poly.of(1), [])), "'n1' is declared twice"),
    (lambda fn: fn.body.append(Assign("n1", Element(_Named("x"), (0,)))), "x[0] is not an expression of the IR"),
])
def test_verify_names_what_is_broken(breakage, problem):
    fn = _scale()
    breakage(fn)
    with pytest.raises(IRError, match="rt_fn_test") as error:
        verify(fn)
    assert problem in str(error.value)


def test_a_buffer_freed_twice_and_a_break_in_a_loop():
    fn = _scale()
    loop = Loop([Break()])
    fn.body.append(loop)
    verify(fn)                                    # a break in a loop is fine
    p = _result(fn)
    fn.body += [Call("rt_drop", [ir.CTX, Ptr(p)]), Call("rt_drop", [ir.CTX, Ptr(p)])]
    with pytest.raises(IRError, match=f"buffer '{p}' is used before it points at memory"):
        verify(fn)


def test_a_guard_needs_a_fallback_of_the_same_signature():
    lowered = _lowered(lambda x, y: x + y, rt.TensorSpec([None], F), rt.TensorSpec([None], F))
    assert lowered.guard and lowered.fallback is not None
    verify(lowered)
    lowered.fallback.signature = "(x: float32[?])"
    with pytest.raises(IRError, match="has another signature"):
        verify(lowered)
    lowered.fallback = None
    with pytest.raises(IRError, match="without a fallback"):
        verify(lowered)


def test_parallel_clauses_are_expressions():
    fn = _scale()
    loop = _loop(fn)
    assert isinstance(loop.parallel, ir.Expr) and "RT_PARALLEL_MIN" in render_function(fn)
    loop.parallel = ALWAYS
    verify(fn)
    assert "if (1) {" in render_function(fn)


def test_the_passes_are_verified_when_asked(monkeypatch):
    from transpiler.lowering import passes

    def breaks(fn):
        fn.body.append(Assign("ghost", Lit(0, "int")))
        return True
    monkeypatch.setenv("RT_VERIFY_IR", "1")
    monkeypatch.setattr(passes, "PASSES", passes.PASSES + [("breaks", breaks)])
    with pytest.raises(IRError, match="after the pass 'breaks'.*'ghost'"):
        _scale()
    monkeypatch.delenv("RT_VERIFY_IR")
    monkeypatch.delenv("RT_DEBUG", raising=False)
    _scale()                                   # not verified: nothing raises


def test_no_local_address_is_taken_in_the_c():
    """Out-parameters go through block-scoped temporaries (``rt_out0``), never ``&local``."""
    text = render_function(_lowered(lambda x: rt.reduce_sum(x[1:-1:2] * 2.0), rt.TensorSpec([None], F)))
    assert "rt_slice_count(" in text and "&rt_out0" in text
    import re
    assert re.findall(r"&[A-Za-z_]", text.replace("&rt_out", "").replace("&rt_cap", "").replace("&&", "")) == []


def test_fields_print_as_c():
    assert ir.render_expr(Field(Slot("in", 1), "shape", "int64_t", 0)) == "in[1].shape[0]"
    assert ir.render_expr(Field(Var("l", "rt_list *"), "length", "int64_t")) == "l->length"
