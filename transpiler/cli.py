"""``python -m transpiler <command> ...``: the command-line interface.

Each command is a module-level ``add_<command>(subparsers)`` function that adds its
sub-parser and sets ``func``; ``COMMANDS`` lists them. To add a command, write its
``add_<command>(subparsers)`` in its own module and append it to ``COMMANDS`` (``build``, ``graph`` and
``ledger`` are in ``transpiler/build/cli.py``, which loads the build driver only when it runs).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
from typing import Callable, Sequence

from transpiler.build.cli import add_build, add_graph, add_ledger
from transpiler.lazy import lazy_import

conversion = lazy_import("transpiler.conversion")       # the runtime and the converters: only to_code needs them
tf_compat = lazy_import("runtime.tf_compat")            # the runtime: only run needs it
cst = lazy_import("libcst")                             # only to_code parses: `build` starts without it
cst_metadata = lazy_import("libcst.metadata")


# -- to_code -------------------------------------------------------------------

def _locate(target: str) -> tuple[str, str | None]:
    """``FILE.py[:NAME]`` or ``package.module[:NAME]`` -> (file path, NAME or None)."""
    path, _, name = target.partition(":")
    if path.endswith(".py") or os.path.sep in path or os.path.exists(path):
        if not os.path.exists(path):
            raise SystemExit(f"error: no such file: {path}")
        return os.path.abspath(path), name or None
    spec = importlib.util.find_spec(path)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise SystemExit(f"error: cannot find the source of module {path!r}")
    return spec.origin, name or None


def _is_rt_function_decorator(d: cst.Decorator) -> bool:
    node = d.decorator
    if isinstance(node, cst.Call):
        node = node.func
    return (isinstance(node, cst.Attribute) and node.attr.value == "function") or \
        (isinstance(node, cst.Name) and node.value == "function")


def find_functions(source: str, name: str | None) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of function ``name`` (``f``, ``Class.method``, ``outer.inner``),
    or, without a name, of every function decorated with ``rt.function`` or passed to ``rt.function(...)``."""
    module = cst.parse_module(source)
    wrapper = cst.MetadataWrapper(module)
    positions = wrapper.resolve(cst_metadata.PositionProvider)
    found: list[tuple[str, int, int, bool]] = []
    wrapped: set[str] = set()

    class _Visit(cst.CSTVisitor):
        def __init__(self):
            self.stack: list[str] = []

        def _enter(self, node):
            qual = ".".join(self.stack + [node.name.value])
            self.stack.append(node.name.value)
            return qual

        def visit_ClassDef(self, node):
            self._enter(node)

        def leave_ClassDef(self, node):
            self.stack.pop()

        def visit_FunctionDef(self, node):
            qual = self._enter(node)
            pos = positions[node]
            decorated = any(_is_rt_function_decorator(d) for d in node.decorators)
            start = positions[node.decorators[0]].start.line if node.decorators else pos.start.line
            found.append((qual, start, pos.end.line, decorated))

        def leave_FunctionDef(self, node):
            self.stack.pop()

        def visit_Call(self, node):
            f = node.func
            if ((isinstance(f, cst.Attribute) and f.attr.value == "function") or
                    (isinstance(f, cst.Name) and f.value == "function")) and node.args \
                    and isinstance(node.args[0].value, cst.Name):
                wrapped.add(node.args[0].value.value)

    wrapper.visit(_Visit())
    if name is not None:
        hits = [(q, a, b) for q, a, b, _ in found if q == name]
        if not hits:
            raise SystemExit(f"error: no function {name!r} (found: {', '.join(q for q, *_ in found) or 'none'})")
        return hits[-1:]
    return [(q, a, b) for q, a, b, dec in found if dec or q in wrapped]


def syntax_error(source: str, path: str) -> str | None:
    """A one-paragraph message (file, line, the offending line) if ``source`` does not parse, else None."""
    try:
        ast.parse(source, path)
        cst.parse_module(source)
    except SyntaxError as e:
        text = (e.text or "").rstrip("\n")
        caret = f"\n    {text}\n    {' ' * max((e.offset or 1) - 1, 0)}^" if text else ""
        return f"error: {path}:{e.lineno}: syntax error: {e.msg}{caret}"
    except cst.ParserSyntaxError as e:
        return f"error: {path}:{e.raw_line}: syntax error: {e.message}"
    return None


def to_code_command(args: argparse.Namespace) -> int:
    status = 0
    for target in args.targets:
        path, name = _locate(target)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        error = syntax_error(source, path)
        if error is not None:
            print(error, file=sys.stderr)
            status = 1
            continue
        lines = source.splitlines(keepends=True)
        functions = find_functions(source, name)
        if not functions:
            print(f"# {path}: no rt.function found", file=sys.stderr)
        for qual, start, end in functions:
            text = "".join(lines[start - 1:end])
            try:
                code = conversion.convert_source(text, path, start).code
            except conversion.ConversionError as e:
                print(f"error: {path}:{start}: {qual}: {e}", file=sys.stderr)
                status = 1
                continue
            if len(functions) > 1 or len(args.targets) > 1:
                print(f"# {path}:{start}: {qual}")
            print(code)
    return status


def add_to_code(subparsers) -> None:
    p = subparsers.add_parser("to_code", help="print the converted (AutoGraph-style) code of functions",
                              description="Print the converted code of FILE.py:NAME or package.module:NAME "
                                          "(NAME may be Class.method); without :NAME, of every rt.function.")
    p.add_argument("targets", nargs="+", metavar="FILE.py[:NAME]")
    p.set_defaults(func=to_code_command)


# -- run -----------------------------------------------------------------------

def add_run(subparsers) -> None:
    """``run script.py [args]`` / ``run -m module [args]``: the program's command line is its own, so ``main`` hands
    everything after ``run`` to ``runtime.tf_compat`` unparsed; this parser only lists the command."""
    p = subparsers.add_parser("run", add_help=False, help="run a program written against `import tensorflow as tf` "
                                                          "(or `import keras`) on rt: run script.py [args] | run -m "
                                                          "module [args]")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda args: tf_compat.main(args.argv, prog=f"{_prog()} run"))


# -- the command table ---------------------------------------------------------

COMMANDS: list[Callable] = [add_to_code, add_build, add_graph, add_ledger, add_run]


def _prog() -> str:
    # the same commands as ``python -m transpiler`` and as the ``rt`` console script
    return "rt" if os.path.basename(sys.argv[0]) == "rt" else "python -m transpiler"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_prog(), description="Convert, trace and build rt.function code, and run "
                                                               "TensorFlow programs on rt.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:         # the rest is the program's own command line (options included)
        return tf_compat.main(argv[1:], prog=f"{_prog()} run")
    args = build_parser().parse_args(argv)
    return args.func(args) or 0
