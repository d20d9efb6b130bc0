"""if/while/for -> rt__.if_stmt / rt__.while_stmt / rt__.for_stmt, with the bodies as local functions.

    if c:                     def rt__get_state(): return (y,)
        y = 1          ->     def rt__set_state(rt__vars): nonlocal y; (y,) = rt__vars
    else:                     def rt__if_body(): nonlocal y; y = 1
        y = 2                 def rt__else_body(): nonlocal y; y = 2
                              rt__.if_stmt(c, rt__if_body, rt__else_body, rt__get_state, rt__set_state, ('y',), 1)

The state of a statement (what the runtime passes through a graph conditional or
loop) is the set of names it modifies that are live on entry or exit; a local iterator
the statement advances (``next(it)``, or ``for x in it`` when the function binds ``it``
to ``iter(...)``) is modified too: its position is state (a dataset iterator's position
lives in tensors the loop must carry). A state
name that is not certainly bound is initialized with ``rt__.Undefined('y')`` at
the top of the user's function, so the runtime can say which branch forgot it.

Items and attributes the statement assigns (``d['b'] = 1``, ``self.x += 1``) are state
too when their object comes from outside the statement (AutoGraph's composite symbols):
``get_state`` reads them with ``rt__.ldu(lambda: d['b'], "d['b']")`` (undefined when the
key or attribute is missing) and ``set_state`` writes them back with ``rt__.store_item`` /
``rt__.store_attr`` (which delete an undefined one); a name the statement deletes is read
with ``rt__.ldu`` too. An item whose key is computed, or
changes inside the statement (``l[i] = ...`` in a loop over ``i``), cannot be state: its
slot is ``rt__.Untracked("l[i]")``, and the runtime raises naming it if the statement
becomes a graph conditional or loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from transpiler.analysis import ActivityProvider, DefinednessProvider, LivenessProvider, declared_names
from transpiler.analysis.activity import _ActivityVisitor, activity_of, composite_parts, iterator_names, param_names
from transpiler.converters.base import (Converter, body_of, expr, is_docstring, marker_of, mark_all, names_tuple, stmt,
                                        strings_tuple, with_marker)
from transpiler.converters.jumps import is_generator
from transpiler.naming import is_generated


@dataclass
class _Frame:
    bound: frozenset[str]            # names bound at the function's own level (not inside if/while/for)
    local: frozenset[str]            # every name the function binds (its parameters too)
    iterators: frozenset[str]        # names the function binds to iter(...)
    globals: frozenset[str]
    nonlocals: frozenset[str]
    skip: bool = False
    undefined: list[str] = field(default_factory=list)


def top_level_bindings(fn: cst.FunctionDef) -> frozenset[str]:
    """Names bound by the function's own statements, outside if/while/for bodies (those become functions)."""
    visitor = _ActivityVisitor()

    def walk(stmts):
        for s in stmts:
            if isinstance(s, (cst.If, cst.While)):
                continue
            if isinstance(s, cst.For):
                continue
            if isinstance(s, cst.With):
                for item in s.items:
                    item.visit(visitor)
                walk(body_of(s.body))
            elif isinstance(s, cst.Try):
                walk(body_of(s.body))
                for h in s.handlers:
                    if h.name is not None:
                        visitor.bind(h.name.name)
                    walk(body_of(h.body))
                walk(body_of(s.orelse))
                walk(body_of(s.finalbody))
            else:
                s.visit(visitor)

    walk(body_of(fn.body))
    return frozenset(visitor.modified) | frozenset(param_names(fn.params))


def _declarations(state, globals_, nonlocals) -> list[cst.BaseStatement]:
    out = []
    if nonlocals:
        out.append(cst.SimpleStatementLine([cst.Nonlocal(names=[cst.NameItem(cst.Name(n)) for n in nonlocals])]))
    if globals_:
        out.append(cst.SimpleStatementLine([cst.Global(names=[cst.NameItem(cst.Name(n)) for n in globals_])]))
    return out


def _function(name: str, params: str, decls, body, marker) -> cst.FunctionDef:
    fn = stmt(f"def {{name}}({params}):\n    pass\n", name=cst.Name(name))
    return with_marker(fn.with_changes(body=cst.IndentedBlock(body=mark_all(decls, marker) + list(body) or
                                                             [cst.SimpleStatementLine([cst.Pass()])])), marker)


def _is_call_to(s: cst.BaseStatement, name: str) -> cst.Call | None:
    if (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, cst.Call)):
        call = s.body[0].value
        f = call.func
        last = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else None
        if last == name:
            if name == "loop_while" and not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)
                                             and f.value.value == "rt__"):
                return None
            return call
    return None


def _composite_state(act, live) -> tuple[list[str], list[str]]:
    """(tracked, untracked) items/attributes of a statement whose object comes from outside it."""
    tracked, untracked = [], []
    for name in sorted(act.composites | act.untracked):
        root, keys = composite_parts(name)
        if root is None or root not in live.live_in or root in act.modified:
            continue       # an object the statement creates itself (or rebinds): its items are not state
        if name in act.untracked or keys & act.modified:
            untracked.append(name)
        else:
            tracked.append(name)
    return tracked, untracked


def _read_state(name: str, maybe_missing: bool, untracked: bool) -> cst.BaseExpression:
    """How get_state reads one state entry (an item, attribute or deleted name may not exist)."""
    if untracked:
        return expr("rt__.Untracked({s})", s=cst.SimpleString(repr(name)))
    if maybe_missing:
        return expr("rt__.ldu(lambda: {v}, {s})", v=cst.parse_expression(name), s=cst.SimpleString(repr(name)))
    return cst.Name(name)


def _write_state(name: str, composite: bool, index: int) -> cst.BaseStatement:
    value = expr("rt__vars[{i}]", i=cst.Integer(str(index)))
    if not composite:
        return stmt("{n} = {v}\n", n=cst.Name(name), v=value)
    target = cst.parse_expression(name)
    if isinstance(target, cst.Attribute):
        return stmt("rt__.store_attr({o}, {a}, {v})\n", o=target.value, a=cst.SimpleString(repr(target.attr.value)),
                    v=value)
    return stmt("rt__.store_item({o}, {k}, {v})\n", o=target.value, k=target.slice[0].slice.value, v=value)


class ControlFlowTransformer(Converter):
    METADATA_DEPENDENCIES = (ActivityProvider, LivenessProvider, DefinednessProvider)
    TRIGGERS = (cst.If, cst.While, cst.For)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.frames: list[_Frame] = []

    # -- functions: collect the names that need an rt__.Undefined initial value
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        globals_, nonlocals = declared_names(body_of(node.body))
        local = activity_of(body_of(node.body)).modified | frozenset(param_names(node.params))
        frame = _Frame(top_level_bindings(node), local, iterator_names(body_of(node.body)), globals_, nonlocals,
                       skip=is_generator(node))
        self.frames.append(frame)
        return not frame.skip

    def leave_FunctionDef(self, original_node, updated_node):
        frame = self.frames.pop()
        if not frame.undefined:
            return updated_node
        self.ctx.undefined_inits = True
        body = body_of(updated_node.body)
        doc = [body.pop(0)] if body and is_docstring(body[0]) else []
        inits = [stmt("{n} = rt__.Undefined({s})\n", n=cst.Name(n), s=cst.SimpleString(repr(n)))
                 for n in frame.undefined]
        inits = mark_all(inits, marker_of(original_node))
        return updated_node.with_changes(body=updated_node.body.with_changes(body=doc + inits + body))

    # -- shared: state of a statement ---------------------------------------
    def _state(self, node, outputs_first: bool):
        """(state names, number of outputs, declarations for the body functions, items/attributes).

        The state names are the plain names, then the composites (always outputs of an ``if``: the
        object outlives it), then the untracked writes, then (for an ``if``) the input-only names."""
        frame = self.frames[-1]
        act = self.get_metadata(ActivityProvider, node)
        live = self.get_metadata(LivenessProvider, node)
        defined = self.get_metadata(DefinednessProvider, node)
        advanced = (act.advanced | (act.iterated & frame.iterators)) & frame.local
        modified = (act.modified | advanced) - frame.globals - frame.nonlocals
        # A deleted name is state even when dead: the body's `del` must reach the function's own binding.
        deleted = act.deleted - frame.globals - frame.nonlocals
        state = (modified & (live.live_in | live.live_out)) | deleted
        composites, untracked = _composite_state(act, live)
        extra = composites + untracked
        if outputs_first:
            outs = sorted(state & live.live_out)
            names = outs + extra + sorted(state - live.live_out)
            nouts = len(outs) + len(extra)
        else:
            names = sorted(state) + extra
            nouts = len(names)
        plain = [n for n in names if n in state]
        for n in plain:
            if (n not in defined or n not in frame.bound or n in deleted) and n not in frame.undefined \
                    and not is_generated(n):
                frame.undefined.append(n)
        nonlocal_names = plain + sorted(act.modified & frame.nonlocals)
        global_names = sorted(act.modified & frame.globals)
        kinds = (set(composites), set(untracked), set(deleted))
        return names, nouts, _declarations(plain, global_names, nonlocal_names), kinds

    def _state_functions(self, names, marker, kinds=(set(), set(), set())):
        if not names:
            return [], cst.Name("None"), cst.Name("None")
        composites, untracked, deleted = kinds
        get, set_ = self.ctx.namer.new("get_state"), self.ctx.namer.new("set_state")
        reads = [cst.Element(_read_state(n, n in composites or n in deleted, n in untracked)) for n in names]
        get_fn = _function(get, "", [], [stmt("return {t}\n", t=cst.Tuple(reads))], marker)
        plain = [n for n in names if n not in composites and n not in untracked]
        writes = []
        if plain and len(plain) == len(names):
            writes.append(cst.SimpleStatementLine([cst.Assign(
                targets=[cst.AssignTarget(names_tuple(plain).with_changes(lpar=[cst.LeftParen()],
                                                                          rpar=[cst.RightParen()]))],
                value=cst.Name("rt__vars"))]))
        else:
            for i, n in enumerate(names):
                if n not in untracked:
                    writes.append(_write_state(n, n in composites, i))
        decls = _declarations(plain, [], plain)
        set_fn = _function(set_, "rt__vars", decls, writes, marker)
        return [get_fn, set_fn], cst.Name(get), cst.Name(set_)

    # -- if ------------------------------------------------------------------
    def leave_If(self, original_node, updated_node):
        if self.frames[-1].skip:
            return updated_node
        marker = marker_of(original_node)
        names, nouts, decls, kinds = self._state(original_node, outputs_first=True)
        state_fns, get, set_ = self._state_functions(names, marker, kinds)
        body_name, else_name = self.ctx.namer.new("if_body"), self.ctx.namer.new("else_body")
        fns = [_function(body_name, "", decls, body_of(updated_node.body), marker)]
        orelse = updated_node.orelse
        if isinstance(orelse, cst.If):     # elif chains are canonicalized away before conversion
            orelse = cst.Else(body=cst.IndentedBlock(body=[orelse]))
        fns.append(_function(else_name, "", decls, body_of(orelse), marker))
        call = stmt("rt__.if_stmt({test}, {body}, {orelse}, {get}, {set}, {names}, {nouts})\n",
                    test=updated_node.test.with_changes(lpar=[], rpar=[]) if len(updated_node.test.lpar) == 1 else updated_node.test,
                    body=cst.Name(body_name), orelse=cst.Name(else_name),
                    get=get, set=set_, names=strings_tuple(names), nouts=cst.Integer(str(nouts)))
        return cst.FlattenSentinel(mark_all(state_fns + fns + [call], marker))

    # -- loops -----------------------------------------------------------------
    def _loop_parts(self, loop):
        """(body statements without directives, extra tests, options dict expression)."""
        body, extra, opts = [], [], []
        for s in body_of(loop.body):
            call = _is_call_to(s, "loop_while")
            if call is not None:
                extra.append(call.args[0].value)
                continue
            call = _is_call_to(s, "set_loop_options")
            if call is not None:
                for a in call.args:
                    if a.keyword is not None:
                        opts.append(cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value))
                continue
            body.append(s)
        return body, extra, cst.Dict(opts)

    def leave_While(self, original_node, updated_node):
        if self.frames[-1].skip:
            return updated_node
        marker = marker_of(original_node)
        names, _, decls, kinds = self._state(original_node, outputs_first=False)
        state_fns, get, set_ = self._state_functions(names, marker, kinds)
        body, _, opts = self._loop_parts(updated_node)
        test_name, body_name = self.ctx.namer.new("loop_test"), self.ctx.namer.new("loop_body")
        test_fn = _function(test_name, "", [], [stmt("return {t}\n", t=updated_node.test)], marker)
        body_fn = _function(body_name, "", decls, body, marker)
        call = stmt("rt__.while_stmt({test}, {body}, {get}, {set}, {names}, {opts})\n",
                    test=cst.Name(test_name), body=cst.Name(body_name), get=get, set=set_,
                    names=strings_tuple(names), opts=opts)
        return cst.FlattenSentinel(mark_all(state_fns + [test_fn, body_fn, call], marker))

    def leave_For(self, original_node, updated_node):
        if self.frames[-1].skip:
            return updated_node
        marker = marker_of(original_node)
        names, _, decls, kinds = self._state(original_node, outputs_first=False)
        state_fns, get, set_ = self._state_functions(names, marker, kinds)
        body, extra, opts = self._loop_parts(updated_node)
        body_name = self.ctx.namer.new("loop_body")
        target = updated_node.target
        unpack = cst.SimpleStatementLine([cst.Assign(targets=[cst.AssignTarget(target)], value=cst.Name("rt__itr"))])
        body_fn = _function(body_name, "rt__itr", decls, mark_all([unpack], marker) + body, marker)
        fns = state_fns + [body_fn]
        extra_test = cst.Name("None")
        if extra:
            test_name = self.ctx.namer.new("extra_test")
            test = extra[0]
            for e in extra[1:]:
                test = expr("{a} and {b}", a=test, b=e)
            fns.append(_function(test_name, "", [], [stmt("return {t}\n", t=test)], marker))
            extra_test = cst.Name(test_name)
        call = stmt("rt__.for_stmt({iter}, {extra}, {body}, {get}, {set}, {names}, {opts})\n",
                    iter=updated_node.iter, extra=extra_test, body=cst.Name(body_name), get=get, set=set_,
                    names=strings_tuple(names), opts=opts)
        return cst.FlattenSentinel(mark_all(fns + [call], marker))
