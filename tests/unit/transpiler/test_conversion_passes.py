"""The conversion pipeline skips converters with nothing to rewrite and runs the expression converters as one
libcst pass; neither may change what a conversion produces."""
from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import BatchableMetadataProvider

from transpiler import conversion
from transpiler.analysis import ActivityProvider, DefinednessProvider, LivenessProvider
from transpiler.converters.base import Context, one_pass
from transpiler.converters.break_statements import BreakTransformer
from transpiler.converters.comparisons import ComparisonTransformer
from transpiler.converters.conditional_expressions import ConditionalExpressionTransformer
from transpiler.converters.continue_statements import ContinueTransformer
from transpiler.converters.control_flow import ControlFlowTransformer
from transpiler.converters.logical_expressions import LogicalTransformer
from transpiler.cst_walk import node_types
from transpiler.naming import Namer

TANGLED = '''\
def f(x, y, z):
    a = x if not (0 < y <= z or x in z) else (y if y and not z else x < y < z)
    return (not a) or (x if a < b else y) and z
'''


def _sequential(source: str) -> str:
    """The expression converters one pass after the other, as the pipeline ran them before ``one_pass``."""
    module = cst.parse_module(source)
    ctx = Context(Namer.for_module(module))
    for converter in (ConditionalExpressionTransformer, ComparisonTransformer, LogicalTransformer):
        module = converter.transform(module, ctx)
    return module.code


def test_the_expression_converters_in_one_pass_rewrite_as_they_do_one_after_the_other():
    module = cst.parse_module(TANGLED)
    merged = one_pass(ConditionalExpressionTransformer, ComparisonTransformer, LogicalTransformer)
    together = merged.transform(module, Context(Namer.for_module(module))).code
    assert together == _sequential(TANGLED)
    assert "rt__.compare_chain" in together and "rt__.if_exp" in together and "rt__.not_" in together


def test_converters_that_rewrite_the_same_node_type_cannot_share_a_pass():
    with pytest.raises(TypeError, match="cannot share a pass"):
        one_pass(BreakTransformer, ContinueTransformer)         # both rewrite loops
    with pytest.raises(TypeError, match="cannot share a pass"):
        one_pass(ControlFlowTransformer, LogicalTransformer)    # control flow reads metadata


def test_a_function_without_control_flow_skips_the_control_flow_converter(monkeypatch):
    def refuse(cls, module, ctx):
        raise AssertionError(f"{cls.__name__} ran on a function without if/while/for")
    for converter in (ControlFlowTransformer, BreakTransformer, ContinueTransformer):
        monkeypatch.setattr(converter, "transform", classmethod(refuse))
    code = conversion.convert_source("def g(x):\n    return x * 2 + abs(x)\n").code
    assert "rt__.converted_call(abs" in code


def test_node_types_sees_every_node_of_the_tree():
    present = node_types(cst.parse_module("def f(x):\n    while x:\n        x = not x\n"))
    assert {cst.FunctionDef, cst.While, cst.UnaryOperation, cst.Not, cst.Name} <= present
    assert cst.If not in present


@pytest.mark.parametrize("provider", [ActivityProvider, DefinednessProvider, LivenessProvider])
def test_the_analyses_list_the_visitor_methods_libcst_would_find(provider):
    instance = provider()
    assert instance.get_visitors().keys() == BatchableMetadataProvider.get_visitors(instance).keys() != set()
