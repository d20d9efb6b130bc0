"""``graph --format svg|html``: fused loops and Python callbacks drawn distinctly, laid out by Graphviz."""
from __future__ import annotations

import io
import re
import shutil
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

import runtime as rt
from runtime.optimizer import optimize
from transpiler.build import pictures
from transpiler.build.graph import show_graphs
from transpiler.build.pictures import CALLBACK_FILL, FUSED_FILL, NATIVE_FILL, TRACED_FILL, emission_facts

SVG = "{http://www.w3.org/2000/svg}"

MODULE = """
    import sys
    import runtime as rt

    @rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
    def chain_and_print(x):
        y = rt.tanh(x * 2.0) + 1.0
        rt.print("y", y, output_stream=sys.stdout)
        if rt.reduce_sum(y) > 0:
            y = y * 3.0
        return y
"""

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed (.ci/run installs it with apt-get)")


def _graph():
    @rt.function
    def f(x):
        y = rt.tanh(x * 2.0) + 1.0
        rt.print("y", y, output_stream=sys.stdout)
        return y
    return optimize(f.get_concrete_function(rt.TensorSpec([None], rt.float32)).graph)


def test_emission_facts_name_the_fused_loop_and_the_callback():
    graph = _graph()
    facts = emission_facts(graph)
    assert [[op.type for op in group] for group in facts.fused_groups] == [["Mul", "Tanh", "AddV2"]]
    assert [op.type for op in graph.operations if id(op) in facts.callbacks] == ["PrintV2"]
    unfused = emission_facts(graph, fuse_elementwise=False)
    assert unfused.fused_groups == [] and len(unfused.callbacks) == 1


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "rt_picture_mod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("rt_picture_mod", None)


def _show(*args, **kwargs):
    out, err = io.StringIO(), io.StringIO()
    status = show_graphs(*args, out=out, err=err, **kwargs)
    return status, out.getvalue(), err.getvalue()


def _box(element) -> tuple[float, float, float, float]:
    """The bounding box of an SVG polygon/ellipse/path element."""
    if element.tag == SVG + "ellipse":
        cx, cy, rx, ry = (float(element.get(k)) for k in ("cx", "cy", "rx", "ry"))
        return cx - rx, cy - ry, cx + rx, cy + ry
    text = element.get("points") or element.get("d")
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", text)]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _shape(group):
    return next(e for e in group.iter() if e.tag in (SVG + "polygon", SVG + "path", SVG + "ellipse"))


def _inside(inner, outer) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


@needs_dot
def test_svg_draws_fused_clusters_and_callbacks_distinctly(module, tmp_path):
    status, _, err = _show("rt_picture_mod.py:chain_and_print", fmt="svg", output=str(tmp_path / "g.svg"))
    assert status == 0, err
    root = ET.parse(tmp_path / "g.svg").getroot()
    nodes = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("class") == "node"}
    clusters = {g.find(SVG + "title").text: g for g in root.iter(SVG + "g") if g.get("class") == "cluster"}

    def label(node):
        return " ".join(t.text for t in node.iter(SVG + "text"))

    optimized = {k: v for k, v in nodes.items() if k.startswith("s0_optimized_op")}
    traced = {k: v for k, v in nodes.items() if k.startswith("s0_traced_op")}
    callbacks = [k for k in optimized if k.endswith("_callback")]
    assert [label(optimized[k]) for k in callbacks] == ["PrintV2 PrintV2 (Python callback)"]
    assert _shape(optimized[callbacks[0]]).get("fill") == CALLBACK_FILL
    native = [k for k, v in optimized.items() if not k.endswith("_callback") and "Placeholder" not in label(v)]
    assert native and all(_shape(optimized[k]).get("fill") == NATIVE_FILL for k in native)
    assert all(_shape(v).get("fill") in (TRACED_FILL, "#ffffff") for v in traced.values())
    # the fused loop is a cluster around exactly its ops
    fused = [name for name in clusters if name.startswith("cluster_s0_optimized_fused")]
    assert fused, sorted(clusters)
    box = _box(_shape(clusters[fused[0]]))
    assert _shape(clusters[fused[0]]).get("fill") == FUSED_FILL
    inside = sorted(label(v).split()[0] for v in optimized.values() if _inside(_box(_shape(v)), box))
    assert inside == ["AddV2", "Mul", "Tanh"]
    # the If's branches are drawn as clusters too, in both graphs
    for stage in ("traced", "optimized"):
        for branch in ("then_branch", "else_branch"):
            assert any(re.fullmatch(f"cluster_s0_{stage}_op\\d+_{branch}", name) for name in clusters), sorted(clusters)


@needs_dot
def test_html_page_holds_one_picture_per_signature(module, tmp_path):
    status, out, err = _show("rt_picture_mod.py:chain_and_print", fmt="html")
    assert status == 0, err
    assert out.startswith("<!DOCTYPE html>") and out.count("<section") == 1
    assert "chain_and_print(x)" in out and "1 fused loop(s) holding 3 ops; 1 op(s) through Python callbacks" in out
    svg = out[out.index("<svg"):out.index("</svg>") + len("</svg>")]
    assert ET.fromstring(svg).tag == SVG + "svg"


@needs_dot
def test_no_optimize_draws_only_the_traced_graph(module):
    status, out, err = _show("rt_picture_mod.py:chain_and_print", fmt="svg", optimize=False)
    assert status == 0, err
    root = ET.fromstring(out)
    ids = [g.get("id") for g in root.iter(SVG + "g") if g.get("class") == "node"]
    assert any(i.startswith("s0_traced_op") for i in ids) and not any(i.startswith("s0_optimized") for i in ids)


def test_a_missing_layout_engine_is_a_clear_error(module, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)          # the Python package: not installed
    monkeypatch.setattr(pictures.shutil, "which", lambda name: None)   # and no dot on PATH
    status, out, err = _show("rt_picture_mod.py:chain_and_print", fmt="svg")
    assert status == 2 and out == ""
    assert "needs Graphviz's `dot` layout program" in err and "apt-get install graphviz" in err
    assert "--format dot" in err
