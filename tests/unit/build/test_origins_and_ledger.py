"""How the build finds, keys and attaches Functions, without a C compiler: origins, the declared interface of
``Function``/``ConcreteFunction``, the fast path's conversion of Python numbers, the signature ledger, and
``render_module``'s per-signature fallback."""
from __future__ import annotations

import importlib.util
import io
import json
import math
import multiprocessing
import sys
import textwrap

import numpy as np
import pytest
from runtime._native import python_scalar

import runtime as rt
from runtime import aot
from transpiler import cachedir
from runtime.graph import all_operations
from runtime.polymorphic_function import begin_module
from runtime.tensor import to_array
from transpiler import codegen
from transpiler.build import ledger as ledgers
from transpiler.build.driver import Outcome, _print_callbacks
from transpiler.build.setuptools_hook import read_config
from transpiler.codegen import render_module
from transpiler.codegen.targets import build_targets


def _load(tmp_path, name: str, source: str):
    """``source`` imported as module ``name`` (its Functions' origins count from 0)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    begin_module(name)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module, path


# -- origins: which Function of which module ------------------------------------------------------------

TWICE = """
import runtime as rt

def step(x):
    return x + 1

fixed = rt.function(step, input_signature=[rt.TensorSpec([8], rt.int32)])
generic = rt.function(step, input_signature=[rt.TensorSpec([None], rt.int32)])

def make():
    return rt.function(step)

made_at_import = make()

class Model(rt.Module):
    @rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
    def __call__(self, x):
        return x

model = Model()
"""


def test_two_functions_of_one_python_function_have_their_own_origin(tmp_path):
    module, _ = _load(tmp_path, "rt_origin_twice", TWICE)
    name = "rt_origin_twice"
    assert (module.fixed.origin.module, module.fixed.origin.key) == (name, f"{name}:step#0")
    assert module.generic.origin.key == f"{name}:step#1"
    assert module.made_at_import.origin.key == f"{name}:step#2"      # made by code the import ran
    assert module.Model.__call__.origin.key == f"{name}:Model.__call__#0"
    bound = module.model.__call__
    assert bound.origin is None and bound.unbound is module.Model.__call__ and bound.instance is module.model
    # the same source imported again counts from 0 again: the keys are stable from one import to the next
    again, _ = _load(tmp_path, "rt_origin_twice", TWICE)
    assert again.generic.origin.key == f"{name}:step#1"
    # a Function made later, by a call, belongs to no module being imported (at most to the main script)
    later = module.make()
    assert later.origin is None or later.origin.module not in (name, module.__name__)


def test_build_targets_key_each_function_and_bind_methods_to_their_instances(tmp_path):
    module, _ = _load(tmp_path, "rt_targets", TWICE + """
class Unused(rt.Module):
    @rt.function(input_signature=[rt.TensorSpec([], rt.float32)])
    def f(self, x):
        return x

holder = rt.Module()
holder.inner = Model()
""")
    targets, notes = build_targets(module)
    found = {t.label: (t.key, t.path, t.attribute) for t in targets}
    assert found["fixed"] == ("rt_targets:step#0", None, None)
    assert found["generic"] == ("rt_targets:step#1", None, None)
    assert found["model.__call__"] == ("rt_targets:Model.__call__#0", "model", "__call__")
    assert found["holder.inner.__call__"] == ("rt_targets:Model.__call__#0", "holder.inner", "__call__")
    assert "Model.__call__" not in found                  # never traced unbound (self would be a tensor)
    assert any(n.startswith("Unused.f: not compiled: a method, and no instance of Unused") for n in notes)


# -- the declared interface -----------------------------------------------------------------------------

def test_specialize_adds_exact_shapes_next_to_the_declared_signature():
    @rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
    def double(x):
        return x * 2.0

    declared = double.get_concrete_function()
    special = double.specialize(rt.TensorSpec([4], rt.float32))
    assert double.get_concrete_function() is declared and double.specializations() == [special]
    assert double.specialize(rt.TensorSpec([4], rt.float32)) is special            # not traced again
    with pytest.raises(ValueError, match="does not fit"):
        double.specialize(rt.TensorSpec([4], rt.int32))
    calls = []
    special.executor = lambda graph, arrays: calls.append("special") or [arrays[0] * 2]
    np.testing.assert_array_equal(double(np.ones(4, np.float32)).numpy(), [2, 2, 2, 2])
    np.testing.assert_array_equal(double(np.ones(3, np.float32)).numpy(), [2, 2, 2])
    assert calls == ["special"]                          # the exact shape ran the specialisation, 3 the declared


def test_attach_replaces_a_trace_of_the_same_signature_and_orders_exact_before_general():
    @rt.function
    def f(x):
        return x + 1.0

    general = f.get_concrete_function(rt.TensorSpec([None], rt.float32))
    traced = f.get_concrete_function(rt.TensorSpec([3], rt.float32))
    replacement = rt.function(lambda x: x + 1.0).get_concrete_function(rt.TensorSpec([3], rt.float32))
    replacement._function = f
    f.attach(replacement)
    assert traced not in f.concrete_functions() and replacement in f.concrete_functions()
    assert f._compatible([np.ones(3, np.float32)]) is replacement
    assert f._compatible([np.ones(5, np.float32)]) is general


def test_copy_and_parameter_names():
    @rt.function(input_signature=[rt.TensorSpec([], rt.int32)], autograph=False)
    def g(a):
        return a

    fresh = g.copy()
    assert fresh is not g and fresh.input_signature == g.input_signature and not fresh.autograph
    assert g.parameter_names == ("a",) and fresh.concrete_functions() == []


# -- Python numbers on the fast path: the conversion rule of every other path ------------------------------

VALUES = [0, 1, -1, 2, 255, 256, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**70,
          0.0, -0.0, 1.0, 0.5, 1.5, 0.1, 3e9, 16777217.0, 2.0**31, -2.0**31, 2.0**63, -2.0**63, 1e300, -1e300,
          math.inf, -math.inf, math.nan, True, False]
DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool, rt.uint8, rt.int16, rt.float16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_fast_conversion_of_python_numbers_follows_to_array(dtype):
    handled = {"float32", "float64", "int32", "int64", "bool"}
    for value in VALUES:
        try:
            expected = to_array(value, dtype)
        except (TypeError, ValueError, OverflowError):
            expected = None
        fast = python_scalar(value, dtype)
        if fast is None:
            # deferred to the Python path: an error, a dtype it does not handle, or an overflow to inf
            assert expected is None or dtype.name not in handled or (
                isinstance(value, float) and math.isfinite(value) and abs(value) > 3.5e38), (value, dtype)
            continue
        assert expected is not None, f"{value!r} -> {dtype}: the fast path converts what the rule rejects"
        assert fast.dtype == expected.dtype and fast.shape == ()
        assert fast.tobytes() == expected.tobytes(), (value, dtype, fast, expected)


# -- the ledger ----------------------------------------------------------------------------------------------

def test_signatures_encode_and_decode():
    signature = [rt.TensorSpec([None, 3], rt.float32), 2.5, True, None, "s", [rt.TensorSpec([], rt.int32), 1],
                 (4,), {"k": rt.TensorSpec(None, rt.int64)}]
    encoded = aot.encode_signature(signature)
    assert json.loads(json.dumps(encoded)) == encoded
    decoded = aot.decode_signature(json.loads(json.dumps(encoded)))
    assert decoded[0] == rt.TensorSpec([None, 3], rt.float32) and decoded[1:5] == [2.5, True, None, "s"]
    assert isinstance(decoded[1], float) and decoded[2] is True
    assert decoded[6] == (4,) and decoded[7]["k"].shape.rank is None
    assert aot.encode_signature([object()]) is None
    with pytest.raises(ValueError):
        aot.decode_signature([{"bogus": 1}])


def test_the_ledger_appends_reads_and_selects(tmp_path):
    path = tmp_path / "m.jsonl"
    spec = aot.encode_signature([rt.TensorSpec([4], rt.float32)])
    other = aot.encode_signature([rt.TensorSpec([7], rt.float32)])
    once = aot.encode_signature([rt.TensorSpec([9], rt.float32)])
    for record in ({"function": "m:f#0", "signature": spec, "kind": "trace", "count": 1},
                   {"function": "m:f#0", "signature": spec, "kind": "trace", "count": 1},
                   {"function": "m:g#0", "signature": other, "kind": "call", "count": 40},
                   {"function": "m:g#0", "signature": once, "kind": "call", "count": 1}):
        cachedir.append_ledger(path, record)
    with open(path, "a") as f:
        f.write('{"function": "m:f#0", "signa')          # a line a crash cut short
    records = cachedir.read_ledger(path)
    assert len(records) == 4 and all("pid" in r and "time" in r for r in records)
    selection = ledgers.select(records)
    assert selection == {"m:f#0": [spec], "m:g#0": [other]}      # a shape called once is not compiled
    more = records + [{"function": "m:g#0", "signature": other, "kind": "call", "count": 5}]
    assert ledgers.digest(ledgers.select(more)) == ledgers.digest(selection)   # counts do not rebuild
    new = records + [{"function": "m:f#0", "signature": other, "kind": "trace", "count": 1}]
    assert ledgers.digest(ledgers.select(new)) != ledgers.digest(selection)    # a new signature does


def test_a_ledger_that_cannot_be_written_never_fails_a_call(tmp_path, monkeypatch):
    @rt.function
    def f(x):
        return x + 1

    blocked = tmp_path / "file"
    blocked.write_text("")
    f.ledger_key = (blocked / "under_a_file.jsonl", "m:f#0", "f")      # its directory is a file
    assert float(f(np.float32(1.0))) == 2.0 and f.experimental_get_tracing_count() == 1


# -- per-signature fallback in render_module --------------------------------------------------------------

FALLBACK = """
import runtime as rt

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def uses_sin(x):
    y = x * 2.0
    return rt.sin(y)

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def plain(x):
    return x + 1.0

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def also_sin(x):
    return rt.sin(x) + rt.cos(x)

@rt.function(input_signature=[rt.TensorSpec([3], rt.float32)])
def broken(x):
    return x + undefined_name

@rt.function
def untraced(x):
    return x
"""


def planted_lowering(monkeypatch, op_type="Sin"):
    """Make the lowering fail on every op of ``op_type`` (as a lowering bug would)."""
    real = codegen.lower_function

    def lower_function(graph, *args, **kwargs):
        for op in all_operations(graph):
            if op.type == op_type:
                raise ValueError(f"planted: {op_type} cannot be lowered")
        return real(graph, *args, **kwargs)
    monkeypatch.setattr(codegen, "lower_function", lower_function)


def test_a_failing_signature_is_reported_and_the_rest_is_built(tmp_path, monkeypatch):
    planted_lowering(monkeypatch)
    module, path = _load(tmp_path, "rt_fallback_unit", FALLBACK)
    rendered = render_module(module, str(path), "rt_fallback_unit")
    failures = {f.function: f for f in rendered.failures}
    assert sorted(failures) == ["also_sin", "broken", "uses_sin"]            # every one, not only the first
    sin = failures["uses_sin"]
    assert (sin.stage, sin.type, sin.line, sin.fallback) == ("lower", "ValueError", 7, True)
    assert sin.op.startswith("op 'Sin' (Sin)") or "(Sin)" in sin.op
    assert sin.text().startswith(f"{path}:7: uses_sin(x: float32[3]): ValueError: planted: Sin cannot be lowered")
    assert failures["also_sin"].line == 15
    broken = failures["broken"]
    assert (broken.stage, broken.type, broken.line) == ("trace", "NameError", 19)
    assert any(line.strip().startswith("plain(x: float32[3]):") for line in rendered.report)
    assert not any("uses_sin" in line for line in rendered.report)
    assert any(n.startswith("untraced: not compiled: no input_signature") for n in rendered.notes)
    header = rendered.files["rt_fallback_unit_rt_native.h"]
    assert "rt_fn_0" in header and "rt_fn_1" not in header                  # only `plain` has native code


def test_a_function_the_import_created_out_of_reach_is_named(tmp_path):
    module, _ = _load(tmp_path, "rt_unreachable", """
import runtime as rt

def make():
    return rt.function(lambda x: x * 2, input_signature=[rt.TensorSpec([], rt.float32)])

hidden = [make()][0:0]          # made at import, then dropped from every global
kept = make()
""")
    targets, notes = build_targets(module)
    assert [t.label for t in targets] == ["kept"]
    assert any("not reachable from its globals" in n and "make.<locals>.<lambda>#0" in n for n in notes), notes


def test_tool_rt_from_ledger_is_read_and_checked(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.rt]\nbuild = ["pkg"]\nfrom-ledger = true\n')
    assert read_config(pyproject) == {"build": ["pkg"], "include_sources": True, "from_ledger": True,
                                      "tf_compat": False}
    pyproject.write_text('[tool.rt]\nbuild = ["pkg"]\n')
    assert read_config(pyproject)["from_ledger"] is False
    pyproject.write_text('[tool.rt]\nbuild = ["pkg"]\nfrom-ledger = "yes"\n')
    with pytest.raises(ValueError, match="from-ledger must be true or false"):
        read_config(pyproject)


def test_build_v_sums_up_the_ops_run_through_python():
    outcomes = [Outcome(None, "ok", name="pkg.a", callbacks={"f(x: float32[None])": {"RandomUniform": 1},
                                                             "g(s: string[])": {"StringJoin": 2}}),
                Outcome(None, "ok", name="pkg.b", callbacks={"h(x: float32[3])": {"StringJoin": 1}})]
    out = io.StringIO()
    _print_callbacks(outcomes, out)
    assert out.getvalue().splitlines()[1:] == [
        "  StringJoin x3: pkg.a.g(s: string[]), pkg.b.h(x: float32[3])",
        "  RandomUniform x1: pkg.a.f(x: float32[None])"]


def test_specializing_the_declared_signature_gives_the_declared_concrete_function():
    @rt.function(input_signature=[rt.TensorSpec([2], rt.float32)])
    def f(x):
        return x

    assert f.specialize(rt.TensorSpec([2], rt.float32)) is f.get_concrete_function()
    assert f.specializations() == [] and f.experimental_get_tracing_count() == 1


def _append_many(path, worker: int) -> None:
    for i in range(200):
        cachedir.append_ledger(path, {"function": f"m:f#{worker}", "signature": [{"value": i, "type": "int"}],
                                      "kind": "trace", "count": 1, "padding": "x" * 300})


def test_processes_appending_to_one_ledger_at_once_lose_and_mangle_no_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(path, k)) for k in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(30)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 800 and len(cachedir.read_ledger(path)) == 800
