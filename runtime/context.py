"""Where ops go: the stack of graphs being built (per thread) and eager mode; which tapes listen.

``rt.inside_function()`` is True while a graph is being traced. ``rt.init_scope()``
steps out of every graph being built, back to eager execution.

Gradient tapes (``runtime.backprop``, a higher layer) register here: the op layer tells
every active tape about each op it runs or records (``record_operation``) and about each
variable a Function reads (``variables_accessed``), without importing the tape.
"""
from __future__ import annotations

import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.graphs: list = []          # graphs being built, innermost last
        self.tracing_functions: list = []  # (Function, key) pairs being traced, for recursion checks
        self.tapes: list = []           # active gradient tapes, innermost last
        self.name_scopes: list[str] = []   # full prefixes of the open rt.name_scopes ("a/", "a/b/"), innermost last
        self.variable_values: dict | None = None   # id(variable) -> the value its reads give (variable_values)


_state = _State()


def current_graph():
    """The graph ops are added to, or None in eager mode."""
    graphs = _state.graphs
    return graphs[-1] if graphs else None


def inside_function() -> bool:
    """True while a graph is being traced (``tf.inside_function``)."""
    return bool(_state.graphs)


def executing_eagerly() -> bool:
    return not _state.graphs


def _no_hook() -> None:
    pass


# Told when a graph starts or stops being built and when a tape starts or stops recording: the compiled
# call path (``runtime._native``, a higher layer) registers its counter here when it is imported.
_trace_enter = _trace_exit = _no_hook


def set_trace_hooks(enter, exit) -> None:
    """Called by ``runtime._native`` on import: ``enter()``/``exit()`` around every trace and recording tape."""
    global _trace_enter, _trace_exit
    _trace_enter, _trace_exit = enter, exit


@contextlib.contextmanager
def graph_scope(graph):
    """Make ``graph`` the target of new ops while the block runs."""
    _state.graphs.append(graph)
    _trace_enter()
    try:
        yield graph
    finally:
        _trace_exit()
        _state.graphs.pop()


@contextlib.contextmanager
def init_scope():
    """Run the block eagerly, outside every graph being traced (``tf.init_scope``)."""
    saved = _state.graphs
    _state.graphs = []
    try:
        yield
    finally:
        _state.graphs = saved


@contextlib.contextmanager
def name_scope(name: str):
    """``with rt.name_scope("layer1") as scope:``: ops created in the block are named ``layer1/<op>``
    (in graphs; eagerly the scope only names itself). ``scope`` is ``"layer1/"``; scopes nest. As in
    TensorFlow, a name ending in ``/`` is absolute (it replaces the enclosing scopes) and ``""`` is the root."""
    if not isinstance(name, str):
        raise ValueError(f"rt.name_scope: the name must be a string, got {name!r}")
    if not name or name.endswith("/"):
        prefix = name
    else:
        prefix = current_name_scope() + name + "/"
    _state.name_scopes.append(prefix)
    try:
        yield prefix
    finally:
        _state.name_scopes.pop()


def current_name_scope() -> str:
    """The prefix of op names in the current ``rt.name_scope`` (``"a/b/"``, or ``""`` outside any)."""
    return _state.name_scopes[-1] if _state.name_scopes else ""


def tracing_stack() -> list:
    return _state.tracing_functions


def note_variable_created(variable) -> None:
    """Tell the Function being traced (if any) that this trace created ``variable`` (the singleton rule)."""
    stack = _state.tracing_functions
    if stack:
        stack[-1][0].note_variable_created(variable)


# ---------------------------------------------------------------------------
# Gradient tapes. A tape is any object with ``_record(op)``, ``_accessed(variables)``
# and ``_watches(tensors, variables) -> bool``.

def tapes_active() -> bool:
    """True when some gradient tape of this thread is recording."""
    return bool(_state.tapes)


def push_tape(tape) -> None:
    """Start sending ops to ``tape``; calls of built Functions then take the Python path (it records)."""
    _state.tapes.append(tape)
    _trace_enter()


def pop_tape(tape) -> None:
    _state.tapes.remove(tape)
    _trace_exit()


def record_operation(op) -> None:
    """Tell the active tapes that ``op`` ran eagerly or was added to a graph being traced."""
    for tape in list(_state.tapes):
        tape._record(op)


def variables_accessed(variables) -> None:
    """Tell the active tapes that these variables were read (e.g. inside a called Function)."""
    for tape in list(_state.tapes):
        tape._accessed(variables)


def tapes_watch(tensors, variables=()) -> bool:
    """True when an active tape watches one of ``tensors`` or ``variables``: an op on them must be recorded."""
    return any(tape._watches(tensors, variables) for tape in _state.tapes)


# ---------------------------------------------------------------------------
# Variable values a replay reads. A built function's forward runs natively under a tape; its gradient runs
# the function's graph again to get the values the backward graph needs, and that replay must read the
# variables as the call read them (a later update may have changed them since).

@contextlib.contextmanager
def variable_values(values: dict):
    """In this thread, while the block runs, a read of variable ``v`` gives ``values[id(v)]`` when it is there."""
    saved = _state.variable_values
    _state.variable_values = {**(saved or {}), **values}
    try:
        yield
    finally:
        _state.variable_values = saved


def variable_value(variable):
    """The value a read of ``variable`` gives in a ``variable_values`` block, or None."""
    values = _state.variable_values
    return values.get(id(variable)) if values else None
