"""The conversion pipeline: user function -> converted function.

``transform`` lists the converters in the order they run. ``convert`` adds the
rest: reading the source, the conversion cache, the source map (converted line ->
user's line; the converted code is compiled *with the user's file name and line
numbers*, so tracebacks and op locations point at the user's code), and building
the converted function with the original globals and closure cells.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
import threading
import types
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import parse_template_module

from runtime.autograph.converted_code import FACTORY, OUTER_FACTORY, instantiate
from runtime.errors import ConversionError, SourceUnavailableError
from transpiler import origin_info
from transpiler.cst_walk import node_types
from transpiler.converters.asserts import AssertTransformer
from transpiler.converters.base import Context, Converter, one_pass
from transpiler.converters.break_statements import BreakTransformer
from transpiler.converters.call_trees import CallTreeTransformer
from transpiler.converters.comparisons import ComparisonTransformer
from transpiler.converters.conditional_expressions import ConditionalExpressionTransformer
from transpiler.converters.continue_statements import ContinueTransformer
from transpiler.converters.control_flow import ControlFlowTransformer
from transpiler.converters.function_scopes import FunctionScopeTransformer
from transpiler.converters.logical_expressions import LogicalTransformer
from transpiler.converters.return_statements import ReturnTransformer
from transpiler.converters.variables import VariableTransformer
from transpiler.naming import Namer


__all__ = ["ConversionError", "SourceUnavailableError", "convert_function", "convert_source", "to_code", "transform"]


_CALLS = one_pass(AssertTransformer, CallTreeTransformer)
_EXPRESSIONS = one_pass(ConditionalExpressionTransformer, ComparisonTransformer, LogicalTransformer)


def transform(module: cst.Module, ctx: Context) -> cst.Module:
    """Run every converter, in order, over a module holding one function definition (a converter with
    nothing to rewrite in it is skipped: ``Converter.needed``)."""
    present = node_types(module)

    def run(converter: type[Converter], node: cst.Module) -> cst.Module:
        nonlocal present
        if not converter.needed(present):
            return node
        node = converter.transform(node, ctx)
        present = node_types(node)
        return node

    node = run(FunctionScopeTransformer, module)   # drop decorators of the converted function
    # Loop jumps first: they turn `break`/`continue` into flags and `for...else` into plain code,
    # so the later converters only see structured control flow. `break` goes before `continue`
    # (its loop-test flag must not be reset by the continue flag's guard).
    node = run(BreakTransformer, node)
    node = run(ContinueTransformer, node)
    # `return` after the loop jumps: it adds `not rt__do_return` to the loop tests they built.
    node = run(ReturnTransformer, node)
    # Calls (and the assert statements that become calls) before control flow, so the rt__ calls control flow
    # generates are not wrapped.
    node = run(_CALLS, node)
    # Control flow needs the static analyses of the code as the user wrote it (after the
    # jump rewrites); it turns every if/while/for into local functions + an rt__ operator call.
    node = run(ControlFlowTransformer, node)
    # Expression-level rewrites after control flow: the tests it moved keep their `and`/`not`. One pass, bottom-up:
    # a comparison chain inside `and`/`or` is a call before the boolean operation around it is rewritten.
    node = run(_EXPRESSIONS, node)
    # Last: wrap reads of maybe-undefined names, which control flow introduced (if it did).
    if ctx.undefined_inits:
        node = run(VariableTransformer, node)
    return node


# ---------------------------------------------------------------------------
# Conversion of source text (cached on source + options)

@dataclass
class Converted:
    code: str                       # the converted function, readable (what to_code returns)
    module_code: types.CodeType     # the factory module, compiled with the user's file and lines
    line_map: dict[int, int]        # line in the factory module -> line in the user's file
    filename: str
    name: str


_cache: dict[tuple, Converted] = {}
_lock = threading.RLock()


def _parse_function(source: str) -> cst.Module:
    module = cst.parse_module(source)
    defs = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if len(defs) != 1:
        raise ConversionError("expected the source of exactly one function")
    return module


def convert_source(source: str, filename: str = "<string>", first_line: int = 1,
                   freevars: tuple[str, ...] = (), options: tuple = ()) -> Converted:
    """Convert the source of one function definition (cached on all arguments)."""
    key = (source, filename, first_line, freevars, options)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
    user_source = source          # columns are the user's file's, before the dedent
    source = textwrap.dedent(source)
    module = origin_info.mark_origins(_parse_function(source), first_line)
    fn_def = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    ctx = Context(Namer.for_module(module), dict(options))
    converted = transform(cst.Module(body=[fn_def]), ctx)
    fn_node = converted.body[0]
    factory = parse_template_module(
        "def {outer}():\n"
        "    pass\n"
        "    def {inner}(rt__):\n"
        "        pass\n"
        "        return {name}\n"
        "    return {inner}\n",
        outer=cst.Name(OUTER_FACTORY), inner=cst.Name(FACTORY), name=cst.Name(fn_node.name.value))
    outer = factory.body[0]
    inits = [cst.parse_statement(f"{v} = None") for v in freevars]
    inner = outer.body.body[1]
    inner = inner.with_changes(body=inner.body.with_changes(body=[fn_node, inner.body.body[1]]))
    outer = outer.with_changes(body=outer.body.with_changes(body=inits + [inner, outer.body.body[2]]))
    marked_code = cst.Module(body=[outer]).code
    line_map = origin_info.source_map(marked_code)
    module_code = origin_info.strip_marker_comments(marked_code)
    readable = origin_info.strip_marker_comments(cst.Module(body=[fn_node]).code)
    code_obj = _compile_mapped(module_code, line_map, filename, user_source, first_line)
    result = Converted(readable, code_obj, line_map, filename, fn_node.name.value)
    with _lock:
        _cache[key] = result
    return result


def conversions_in_file(filename: str) -> dict[tuple, Converted]:
    """The conversions made so far of functions defined in ``filename`` (default options only), by
    ``(absolute filename, first line, free variables)``: what a built module embeds so that a run-time
    retrace needs no converter."""
    path = os.path.abspath(filename)
    with _lock:
        items = list(_cache.items())
    return {(path, first_line, tuple(freevars)): converted
            for (_, name, first_line, freevars, options), converted in items
            if options == () and os.path.abspath(name) == path}


def _compile_mapped(code: str, line_map: dict[int, int], filename: str, source: str, first_line: int):
    """Compile ``code`` so that its positions are the user's.

    Lines come from ``line_map``. Columns are the user's where a converted line is the user's line re-indented
    (the shift is the change of indentation); on a line the converters rewrote there is no column to point at, and
    a node starting or ending there gets none (-1, as Python's own generated code has), so any layout compiles."""
    tree = ast.parse(code)
    conv_lines = code.splitlines()
    user_lines = source.splitlines()

    def indent(s):
        return len(s) - len(s.lstrip())

    shifts: dict[int, int | None] = {}

    def shift(conv_line):
        if conv_line not in shifts:
            user = line_map.get(conv_line, first_line) - first_line
            conv = conv_lines[conv_line - 1] if 0 < conv_line <= len(conv_lines) else None
            same = conv is not None and 0 <= user < len(user_lines) and conv.strip() == user_lines[user].strip()
            shifts[conv_line] = indent(conv) - indent(user_lines[user]) if same else None
        return shifts[conv_line]

    for node in ast.walk(tree):
        if getattr(node, "lineno", None) is None:
            continue
        start = node.lineno
        end = getattr(node, "end_lineno", None) or start
        node.lineno = line_map.get(start, first_line)
        node.end_lineno = max(line_map.get(end, node.lineno), node.lineno)
        if getattr(node, "col_offset", None) is None:
            continue
        first, last = shift(start), shift(end)
        columns = None
        if first is not None and last is not None and node.end_col_offset is not None:
            columns = (node.col_offset - first, node.end_col_offset - last)
            if columns[0] < 0 or (node.lineno == node.end_lineno and columns[0] > columns[1]):
                columns = None      # generated code moved the node's end before its start (reordered statements)
        node.col_offset, node.end_col_offset = columns if columns is not None else (-1, -1)
    return compile(tree, filename, "exec", dont_inherit=True)


# ---------------------------------------------------------------------------
# Conversion of function objects

def _source_of(fn) -> tuple[str, str, int]:
    """(source of a ``def``, file name, its first line) for a function or a lambda."""
    if _is_lambda(fn):
        return _lambda_source(fn)
    # by its code object: inspect follows a function's ``__wrapped__`` (functools.wraps) to another source
    try:
        lines, first_line = inspect.getsourcelines(fn.__code__)
    except (OSError, TypeError, AttributeError) as e:
        raise SourceUnavailableError(f"no source for {fn!r}: {e}") from None
    filename = inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    return "".join(lines), filename, first_line


_lambdas_of_files: dict[tuple[str, str], dict[int, list[ast.Lambda]]] = {}
_LAMBDA_FILES = 8          # the files whose lambdas are indexed (the ones converted last)


def _lambdas_by_line(filename: str, text: str, fn) -> dict[int, list[ast.Lambda]]:
    """The lambdas of a file by their first line (the file parsed and walked once, not once per lambda)."""
    key = (filename, text)
    index = _lambdas_of_files.pop(key, None)
    if index is None:
        try:
            tree = ast.parse(text, filename)
        except SyntaxError as e:
            raise SourceUnavailableError(f"the file of {fn!r} does not parse: {e}") from None
        index = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Lambda):
                index.setdefault(node.lineno, []).append(node)
        while len(_lambdas_of_files) >= _LAMBDA_FILES:
            _lambdas_of_files.pop(next(iter(_lambdas_of_files)))
    _lambdas_of_files[key] = index         # the most recent last
    return index


def _segment(lines: list[str], node: ast.expr) -> str:
    """``ast.get_source_segment`` on the file's lines (it splits the whole file again at every call); the
    columns are UTF-8 byte offsets."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
    return (lines[first].encode()[node.col_offset:].decode() + "".join(lines[first + 1:last])
            + lines[last].encode()[:node.end_col_offset].decode())


def _lambda_source(fn) -> tuple[str, str, int]:
    """A lambda as the source of an equivalent one-line ``def``, found in its file.

    The lambda is the ``ast.Lambda`` on its first line whose body holds the positions of the
    lambda's own bytecode (so two lambdas on one line are told apart) and whose parameters match.
    """
    code = fn.__code__
    filename = inspect.getsourcefile(fn) or code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    text = "".join(lines)
    if not text:
        raise SourceUnavailableError(f"no source for {fn!r}")
    on_line = _lambdas_by_line(filename, text, fn).get(code.co_firstlineno, ())
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                              + bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)]
    positions = [(line, col) for line, _, col, end_col in code.co_positions()
                 if line is not None and col is not None and end_col != col]

    def inside(node, line, col):
        return (node.lineno, node.col_offset) <= (line, col) and (line, col) < (node.end_lineno, node.end_col_offset)

    candidates = []
    for node in on_line:
        args = node.args
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        if sorted(names) != sorted(params):
            continue
        hits = sum(inside(node.body, line, col) for line, col in positions)
        span = (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)
        candidates.append((-hits, span, node))
    if not candidates:
        raise SourceUnavailableError(f"cannot find the source of {fn!r} in {filename}")
    node = min(candidates, key=lambda c: c[:2])[2]
    lam = cst.parse_expression(f"({_segment(lines, node)})")
    params_code = cst.Module([]).code_for_node(lam.params)
    body_code = _segment(lines, node.body)
    return f"def rt__lambda({params_code}): return ({body_code})\n", filename, node.lineno


def _check_not_generator(fn) -> None:
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        code = fn.__code__
        raise ConversionError(
            f"generator function {fn.__qualname__} ({code.co_filename}, line {code.co_firstlineno}) is not "
            "supported in rt.function: return a tensor or a list instead of using yield")


def _is_lambda(fn) -> bool:
    return fn.__name__ == "<lambda>"


def convert_function(fn: types.FunctionType, operators_module, options: tuple = ()):
    """The converted version of ``fn``: same signature, same globals, same closure cells."""
    _check_not_generator(fn)
    source, filename, first_line = _source_of(fn)
    freevars = fn.__code__.co_freevars
    converted = convert_source(source, filename, first_line, tuple(freevars), options)
    return instantiate(converted.module_code, fn, operators_module)


def to_code(fn) -> str:
    """The converted source of ``fn`` as readable Python (a ``def`` with the same name).

    Example:
        >>> def f(x):
        ...     if x > 0:
        ...         x = -x
        ...     return x
        >>> code = to_code(f)
        >>> code.splitlines()[0], "rt__.if_stmt" in code
        ('def f(x):', True)
    """
    fn = inspect.unwrap(getattr(fn, "python_function", fn))
    if isinstance(fn, (types.MethodType, staticmethod, classmethod)):
        fn = fn.__func__
    _check_not_generator(fn)
    source, filename, first_line = _source_of(fn)
    return convert_source(source, filename, first_line, tuple(fn.__code__.co_freevars)).code
