"""``python -m transpiler graph FILE.py:NAME``: print the graph of each signature of an ``rt.function``.

The module is imported from its ``.py`` source (as the build does), the function's ``input_signature``
is traced, and every concrete function -- those traced at import time included -- is printed: its
signature, then its graph as an SSA listing (``--format text``) or a Graphviz digraph (``--format dot``),
or drawn before and after optimization (``--format svg|html``, see ``transpiler.build.pictures``).

Example:
    >>> import runtime as rt
    >>> @rt.function
    ... def double(a):
    ...     return a + a
    >>> text = to_dot(double.get_concrete_function(rt.TensorSpec([None], rt.float32)).graph)
    >>> text.splitlines()[0]
    'digraph "double" {'
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from runtime import tf_compat as tf_compat_module
from runtime.graph import Graph
from runtime.optimizer import optimize as optimize_graph
from runtime.polymorphic_function import Function
from transpiler.build.discovery import module_name_for
from transpiler.build.hashing import module_file
from transpiler.build.loading import load_from_source, prefer_sources
from transpiler.build.pictures import LayoutEngineMissing, Picture, emission_facts, picture_dot, render_html, render_svg
from transpiler.build.worker import user_location
from transpiler.codegen import EMITTER_PASSES


class TargetError(Exception):
    """The target cannot be found or is not an ``rt.function``."""


def locate(target: str, search: list[Path] | None = None) -> tuple[Path, Path, str, str]:
    """``FILE.py:NAME`` or ``package.module:NAME`` -> ``(source, root, dotted module name, NAME)``."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise TargetError(f"expected FILE.py:NAME or package.module:NAME, got {target!r}")
    if where.endswith(".py") or os.sep in where or Path(where).exists():
        source = Path(where).resolve()
        if not source.is_file():
            raise TargetError(f"no such file: {where}")
        root, dotted = module_name_for(source)
        return source, root, dotted, name
    for entry in search if search is not None else [Path.cwd()] + [Path(p) for p in sys.path if p]:
        source = module_file(Path(entry).resolve(), where)
        if source is not None:
            return source.resolve(), Path(entry).resolve(), where, name
    raise TargetError(f"cannot find the source of module {where!r} (from the current directory or sys.path)")


def find_function(module, name: str):
    """The ``rt.Function`` at ``name`` (``f``, ``Class.method``) in ``module``; methods are bound to a fresh
    instance when the class can be created without arguments (needed to trace their input_signature)."""
    owner, value = None, module
    for part in name.split("."):
        if not hasattr(value, part):
            raise TargetError(f"{module.__name__} has no attribute {name!r}")
        owner, value = value, getattr(value, part)
    if not isinstance(value, Function):
        raise TargetError(f"{module.__name__}.{name} is not an rt.function (it is {type(value).__name__})")
    if isinstance(owner, type) and value.input_signature is not None and not value.concrete_functions():
        try:
            instance = owner()
        except Exception as error:  # noqa: BLE001
            raise TargetError(f"{name} is a method: tracing its input_signature needs an instance, and "
                              f"{owner.__name__}() failed: {error}") from None
        value = getattr(instance, name.rpartition(".")[2])
        value._rt_graph_instance = instance  # keep the instance alive while its method is traced
    return value


def _escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _type(tensor) -> str:
    dims = tensor.shape.dims
    if dims is None:
        return f"{tensor.dtype.name}[*]"
    return f"{tensor.dtype.name}[{','.join('?' if d is None else str(d) for d in dims)}]"


def to_dot(graph, title: str | None = None) -> str:
    """A Graphviz digraph of ``graph``: one node per op (type and name), edges from each input tensor's
    op (labeled with the tensor type), and the subgraphs of ``If``/``While`` as clusters."""
    ids: dict[int, str] = {}

    def node(op) -> str:
        if id(op) not in ids:
            ids[id(op)] = f"n{len(ids)}"
        return ids[id(op)]

    lines = [f'digraph "{_escape(graph.name)}" {{', "  compound=true;",
             '  node [shape=box, style=rounded, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=8];']
    if title:
        lines.append(f'  label="{_escape(title)}"; labelloc=t;')

    def emit(g, indent: str, outer) -> None:
        for op in g.operations:
            shape = ", shape=ellipse" if op.type == "Placeholder" else ""
            lines.append(f'{indent}{node(op)} [label="{_escape(op.type)}\\n{_escape(op.name)}"{shape}];')
        for op in g.operations:
            for tensor in op.inputs:
                lines.append(f'{indent}{node(tensor.op)} -> {node(op)} [label="{_escape(_type(tensor))}"];')
            for control in op.control_inputs:
                lines.append(f"{indent}{node(control)} -> {node(op)} [style=dotted, arrowhead=odot];")
            for key, sub in sorted((k, v) for k, v in op.attrs.items() if isinstance(v, Graph)):
                lines.append(f'{indent}subgraph cluster_{node(op)}_{len(ids)} {{')
                lines.append(f'{indent}  label="{_escape(op.name)}.{_escape(key)}"; style=dashed;')
                emit(sub, indent + "  ", op)
                lines.append(f"{indent}}}")
        for outer_tensor, placeholder in g.captures:
            lines.append(f'{indent}{node(outer_tensor.op)} -> {node(placeholder.op)} '
                         f'[style=dashed, label="capture"];')
        if outer is not None:
            for tensor in g.inputs:
                lines.append(f"{indent}{node(outer)} -> {node(tensor.op)} [style=dashed];")
            for tensor in g.outputs:
                lines.append(f'{indent}{node(tensor.op)} -> {node(outer)} [style=dotted, label="return"];')

    emit(graph, "  ", None)
    if graph.outputs:
        lines.append('  rt__return [label="return", shape=plaintext];')
        for index, tensor in enumerate(graph.outputs):
            lines.append(f'  {node(tensor.op)} -> rt__return [label="{index}: {_escape(_type(tensor))}"];')
    lines.append("}")
    return "\n".join(lines)


def show_graphs(target: str, fmt: str = "text", optimize: bool = True, passes: list[str] | None = None,
                out: TextIO | None = None, err: TextIO | None = None, output: str | None = None,
                tf_compat: bool = False) -> int:
    """Print every concrete function of ``target`` with its graph (or, with ``output``, write it to that
    file); returns the exit status. ``fmt`` is ``text``, ``dot``, or ``svg``/``html`` (pictures of the graph
    as traced and after optimization, see ``transpiler.build.pictures``). ``tf_compat``: the module is written
    against ``import tensorflow as tf`` (``runtime.tf_compat``)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        source, root, dotted, name = locate(target)
    except TargetError as error:
        print(f"error: {error}", file=err)
        return 2
    stage = "importing"
    try:
        with prefer_sources([root]), (tf_compat_module.aliased() if tf_compat else contextlib.nullcontext()):
            module = load_from_source(dotted, source, root)
            function = find_function(module, name)
            stage = "tracing"
            if function.input_signature is not None:
                function.get_concrete_function()
    except TargetError as error:
        print(f"error: {error}", file=err)
        return 2
    except Exception as error:  # noqa: BLE001 - the user's module may raise anything
        filename, line = user_location(error, root)
        where = f"{os.path.relpath(filename)}:{line}: " if filename else ""
        print(f"error while {stage} {target}: {where}{type(error).__name__}: {error}", file=err)
        return 1
    concretes = function.concrete_functions()
    if not concretes:
        print(f"{name} has no signature to show: it has no input_signature and no concrete function was "
              f"created when {dotted} was imported (e.g. {name}.get_concrete_function(rt.TensorSpec(...)))",
              file=err)
        return 1
    optimizer = optimize_graph if optimize else None
    graph_passes = None if passes is None else [p for p in passes if p not in EMITTER_PASSES]
    emit_options = {p: passes is None or p in passes for p in EMITTER_PASSES}
    blocks, pictures = [], []
    for concrete in concretes:
        graph = concrete.graph
        if optimizer is not None:
            try:
                result = optimizer(graph, passes=graph_passes) if passes is not None else optimizer(graph)
            except ValueError as e:
                print(f"error: {e}", file=err)
                return 2
            graph = result if hasattr(result, "operations") else graph
        signature = concrete.pretty_printed_signature(verbose=True)
        if fmt == "dot":
            header = "\n".join(f"// {line}" for line in signature.splitlines())
            blocks.append(header + "\n" + to_dot(graph, title=concrete.signature_text()))
        elif fmt in ("svg", "html"):
            facts = emission_facts(graph, **emit_options) if optimizer is not None else None
            pictures.append(Picture(signature, concrete.graph, graph if optimizer is not None else None, facts))
        else:
            blocks.append(signature + "\n" + str(graph))
    try:
        if fmt == "svg":
            text = render_svg(picture_dot(pictures, f"{dotted}.{name}"))
        elif fmt == "html":
            text = render_html(pictures, f"{dotted}.{name}")
        else:
            text = "\n\n".join(blocks) + "\n"
    except LayoutEngineMissing as error:
        print(f"error: {error}", file=err)
        return 2
    if output is not None:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            print(f"error: -o/--output: cannot write {output}: {error.strerror or error}", file=err)
            return 2
        print(f"wrote {output}", file=err)
    else:
        out.write(text)
    return 0
