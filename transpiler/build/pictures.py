"""Pictures of an ``rt.function``'s graphs: ``python -m transpiler graph FILE.py:NAME --format svg|html``.

For each signature, the graph as traced and the graph after optimization, side by side, laid out by
Graphviz. In the optimized graph, what the native code generator makes of each op is drawn:

- the elementwise ops fused into one loop sit in a green cluster ("fused loop");
- ops that run as native C are blue boxes;
- ops that call back into Python for their numpy kernel (taking the GIL) are amber, dashed boxes.

``If``/``While`` bodies are dashed clusters inside their op. The layout engine is Graphviz's ``dot``,
through the ``graphviz`` Python package when it is installed, else the ``dot`` program on ``PATH``.

Example:
    >>> import runtime as rt
    >>> @rt.function
    ... def f(x):
    ...     return rt.tanh(x * 2.0) + 1.0
    >>> graph = f.get_concrete_function(rt.TensorSpec([None], rt.float32)).graph
    >>> facts = emission_facts(graph)
    >>> [sorted(op.type for op in group) for group in facts.fused_groups]
    [['AddV2', 'Identity', 'Mul', 'Tanh']]
"""
from __future__ import annotations

import dataclasses
import html
import shutil
import string
import subprocess
from pathlib import Path

from runtime.graph import Graph, Operation
from transpiler.codegen import emit_function
from transpiler.codegen.render import TEMPLATES
from transpiler.lowering.plan import Region


# Fill colours: tests and readers of the SVG tell the kinds of op apart by them.
NATIVE_FILL, CALLBACK_FILL, TRACED_FILL, FUSED_FILL = "#dbeafe", "#fde68a", "#f3f4f6", "#dcfce7"
NATIVE_STYLE = f'style="rounded,filled", fillcolor="{NATIVE_FILL}", color="#1d4ed8"'
CALLBACK_STYLE = f'style="rounded,filled,dashed", fillcolor="{CALLBACK_FILL}", color="#b45309", penwidth=2'
TRACED_STYLE = f'style="rounded,filled", fillcolor="{TRACED_FILL}", color="#6b7280"'
INPUT_STYLE = 'shape=ellipse, style=filled, fillcolor="#ffffff", color="#6b7280"'
FUSED_CLUSTER_STYLE = f'style="rounded,filled"; fillcolor="{FUSED_FILL}"; color="#15803d"'


class LayoutEngineMissing(RuntimeError):
    """Neither the ``graphviz`` package with its ``dot`` program nor ``dot`` on ``PATH`` is available."""


@dataclasses.dataclass
class EmissionFacts:
    """What the native code generator does with a graph's ops."""
    fused_groups: list[list[Operation]]   # each: the ops computed in one fused loop (the emitted op last)
    callbacks: set[int]                    # id(op) of the ops that run their numpy kernel through Python

    def group_of(self) -> dict[int, int]:
        return {id(op): index for index, group in enumerate(self.fused_groups) for op in group}


def emission_facts(graph: Graph, fuse_elementwise: bool = True, plan_memory: bool = True) -> EmissionFacts:
    """Lower ``graph`` as the build does and report which ops share one loop and which call back into Python.

    This is the one place that reads the lowering's bookkeeping: its fusion plans (per graph, which
    tensors are stored and which ops form a row group) and the ops it sends through callbacks.
    """
    _, _, report = emit_function(graph, "rt_fn_picture", fuse_elementwise=fuse_elementwise,
                                 plan_memory=plan_memory)
    groups: list[list[Operation]] = []
    for sub, plan in report.plans:
        groups.extend(_fused_groups(sub, plan))
    return EmissionFacts(groups, {id(op) for op in report.callback_ops})


_LAZY_KINDS = ("elementwise", "generator", "view", "query")


def _fused_groups(graph: Graph, plan) -> list[list[Operation]]:
    """Per kernel of one graph's plan: the ops computed in its loop (lazy producers, then the op itself).

    A row group is one kernel; any other op that stores a result computes there the lazy (not stored)
    elementwise ops, views and queries that feed it.
    """
    order = {id(op): i for i, op in enumerate(graph.operations)}

    def lazy(op) -> bool:
        return plan.kind.get(id(op)) in _LAZY_KINDS and not any(id(t) in plan.stored for t in op.outputs)

    def with_producers(roots: list[Operation]) -> list[Operation]:
        members = list(roots)
        pending = [t.op for op in roots for t in op.inputs]
        while pending:
            producer = pending.pop()
            if id(producer) in order and lazy(producer) and all(producer is not m for m in members):
                members.append(producer)
                pending += [t.op for t in producer.inputs]
        return sorted(members, key=lambda o: order[id(o)])

    groups, in_region = [], set()
    for unit in plan.units:
        if not isinstance(unit, Region):
            continue
        members = with_producers(list(unit.members))
        in_region.update(id(op) for op in members)
        groups.append(members)
    for op in graph.operations:
        if id(op) in in_region or id(op) not in plan.kind or lazy(op) or plan.kind[id(op)] == "opaque":
            continue
        members = with_producers([op])
        if len(members) > 1:
            groups.append(members)
    return groups


# -- DOT --------------------------------------------------------------------------------------------------

def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type(tensor) -> str:
    dims = tensor.shape.dims
    if dims is None:
        return f"{tensor.dtype.name}[*]"
    return f"{tensor.dtype.name}[{','.join('?' if d is None else str(d) for d in dims)}]"


class _Drawing:
    """DOT statements of one graph (traced or optimized) under a unique node-id prefix."""

    def __init__(self, prefix: str, facts: EmissionFacts | None):
        self.prefix = prefix
        self.facts = facts
        self.group = facts.group_of() if facts else {}
        self.ids: dict[int, str] = {}
        self.lines: list[str] = []

    def node_id(self, op: Operation) -> str:
        if id(op) not in self.ids:
            self.ids[id(op)] = f"{self.prefix}_op{len(self.ids)}"
        return self.ids[id(op)]

    def style(self, op: Operation) -> tuple[str, str]:
        label = f"{op.type}\n{op.name}"
        if op.type == "Placeholder":
            return label, INPUT_STYLE
        if self.facts is None:
            return label, TRACED_STYLE
        if id(op) in self.facts.callbacks:
            return label + "\n(Python callback)", CALLBACK_STYLE
        return label, NATIVE_STYLE

    def node(self, op: Operation, indent: str) -> None:
        label, style = self.style(op)
        node = self.node_id(op)
        kind = "callback" if self.facts and id(op) in self.facts.callbacks else "op"
        self.lines.append(f"{indent}{node} [id={_quote(f'{node}_{kind}')}, label={_quote(label)}, "
                          f"tooltip={_quote(op.where())}, {style}];")

    def graph(self, graph: Graph, indent: str, owner: Operation | None = None) -> None:
        clusters: dict[int, list[Operation]] = {}
        for op in graph.operations:
            group = self.group.get(id(op))
            if group is None:
                self.node(op, indent)
            else:
                clusters.setdefault(group, []).append(op)
        for group, members in clusters.items():
            name = f"cluster_{self.prefix}_fused{group}"
            self.lines.append(f"{indent}subgraph {name} {{")
            self.lines.append(f"{indent}  id={_quote(name)}; label={_quote(f'fused loop ({len(members)} ops)')}; "
                              f"{FUSED_CLUSTER_STYLE};")
            for op in members:
                self.node(op, indent + "  ")
            self.lines.append(f"{indent}}}")
        for op in graph.operations:
            for tensor in op.inputs:
                self.lines.append(f"{indent}{self.node_id(tensor.op)} -> {self.node_id(op)} "
                                  f"[label={_quote(_type(tensor))}];")
            for control in op.control_inputs:
                self.lines.append(f"{indent}{self.node_id(control)} -> {self.node_id(op)} [style=dotted];")
            for key, sub in sorted((k, v) for k, v in op.attrs.items() if isinstance(v, Graph)):
                name = f"cluster_{self.node_id(op)}_{key}"
                self.lines.append(f"{indent}subgraph {name} {{")
                self.lines.append(f"{indent}  id={_quote(name)}; label={_quote(f'{op.name}.{key}')}; style=dashed;")
                self.graph(sub, indent + "  ", op)
                self.lines.append(f"{indent}}}")
        for outer, placeholder in graph.captures:
            self.lines.append(f"{indent}{self.node_id(outer.op)} -> {self.node_id(placeholder.op)} "
                              f'[style=dashed, label="capture"];')
        if owner is not None:
            for tensor in graph.inputs:
                self.lines.append(f"{indent}{self.node_id(owner)} -> {self.node_id(tensor.op)} [style=dashed];")
            for tensor in graph.outputs:
                self.lines.append(f"{indent}{self.node_id(tensor.op)} -> {self.node_id(owner)} [style=dotted];")

    def outputs(self, graph: Graph, indent: str) -> None:
        node = f"{self.prefix}_return"
        self.lines.append(f'{indent}{node} [id={_quote(node)}, label="return", shape=plaintext];')
        for index, tensor in enumerate(graph.outputs):
            self.lines.append(f"{indent}{self.node_id(tensor.op)} -> {node} "
                              f"[label={_quote(f'{index}: {_type(tensor)}')}];")


@dataclasses.dataclass
class Picture:
    """One signature's graphs: as traced, and (when optimized) after optimization with emission facts."""
    signature: str
    traced: Graph
    optimized: Graph | None = None
    facts: EmissionFacts | None = None


def picture_dot(pictures: list[Picture], title: str) -> str:
    """One Graphviz digraph: per signature a cluster holding the traced and the optimized graph."""
    lines = [f"digraph {_quote(title)} {{", "  compound=true; rankdir=TB; newrank=true;",
             f"  label={_quote(title)}; labelloc=t; fontsize=16;",
             '  node [shape=box, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=8, color="#4b5563"];']
    for index, picture in enumerate(pictures):
        lines.append(f"  subgraph cluster_s{index} {{")
        lines.append(f'    id="cluster_s{index}"; label={_quote(picture.signature)}; style=rounded; color="#9ca3af";')
        stages = [("traced", "as traced", picture.traced, None)]
        if picture.optimized is not None:
            stages.append(("optimized", "after optimization", picture.optimized, picture.facts))
        for stage, label, graph, facts in stages:
            drawing = _Drawing(f"s{index}_{stage}", facts)
            drawing.graph(graph, "      ")
            drawing.outputs(graph, "      ")
            lines.append(f"    subgraph cluster_s{index}_{stage} {{")
            lines.append(f'      id="cluster_s{index}_{stage}"; label={_quote(label)}; style=dashed; color="#d1d5db";')
            lines += drawing.lines
            lines.append("    }")
        lines.append("  }")
    lines += _legend()
    lines.append("}")
    return "\n".join(lines)


def _legend() -> list[str]:
    return ["  subgraph cluster_legend {", '    id="cluster_legend"; label="legend"; style=rounded; color="#9ca3af";',
            f'    legend_native [id="legend_native", label="native C", {NATIVE_STYLE}];',
            f'    legend_callback [id="legend_callback", label="Python callback (takes the GIL)", {CALLBACK_STYLE}];',
            "    subgraph cluster_legend_fused {",
            f'      id="cluster_legend_fused"; label="fused loop"; {FUSED_CLUSTER_STYLE};',
            f'      legend_fused [id="legend_fused", label="elementwise op", {NATIVE_STYLE}];',
            "    }",
            f'    legend_traced [id="legend_traced", label="op as traced", {TRACED_STYLE}];',
            "  }"]


# -- rendering --------------------------------------------------------------------------------------------

def render_svg(dot_source: str) -> str:
    """Lay out ``dot_source`` with Graphviz and return the SVG text."""
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        try:
            return graphviz.Source(dot_source).pipe(format="svg", encoding="utf-8")
        except graphviz.ExecutableNotFound:
            pass
        except graphviz.CalledProcessError as error:
            raise RuntimeError(f"dot failed: {(error.stderr or '').strip()}") from None
    dot = shutil.which("dot")
    if dot is None:
        raise LayoutEngineMissing(
            "drawing the graph as SVG needs Graphviz's `dot` layout program, which is not installed: install "
            "it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; conda: conda install "
            "graphviz) and optionally the Python package (pip install 'rt-transpiler[graph]'), or use "
            "--format dot to get the DOT text")
    result = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"dot failed: {result.stderr.strip()}")
    return result.stdout


def render_html(pictures: list[Picture], title: str) -> str:
    """A self-contained HTML page: per signature its description and the SVG picture of its graphs."""
    sections = []
    for index, picture in enumerate(pictures):
        svg = render_svg(picture_dot([picture], picture.signature))
        svg = svg[svg.index("<svg"):]   # drop the XML prolog and doctype: inline SVG in HTML5
        notes = ""
        if picture.facts is not None:
            fused = sum(len(g) for g in picture.facts.fused_groups)
            notes = (f"{len(picture.optimized.operations)} ops after optimization; "
                     f"{len(picture.facts.fused_groups)} fused loop(s) holding {fused} ops; "
                     f"{len(picture.facts.callbacks)} op(s) through Python callbacks")
        sections.append(f'<section id="signature-{index}">\n<h2>{html.escape(picture.signature.splitlines()[0])}</h2>\n'
                        f"<pre>{html.escape(picture.signature)}</pre>\n<p>{html.escape(notes)}</p>\n{svg}\n</section>")
    page = string.Template((Path(TEMPLATES) / "graph.html.tmpl").read_text(encoding="utf-8"))
    return page.substitute(title=html.escape(title), sections="\n".join(sections))
