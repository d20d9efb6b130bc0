"""What one function's lowering shares, passed explicitly to every part of it (``cx``).

- ``Context``: the graph being lowered and the lowering's options, the function's ``Namer``, the assumptions
  on its run-time dims (``assume.py``) with the input dims they name (``EntryDims``), what is known of each
  tensor (``dims``: index polynomials; ``values``: where its elements are, ``values.py``), the facts shape
  inference records for an op's lowering (``ShapeFacts``), the function's storage (``Storage``: its locals,
  stack arrays, the tensors that must outlive the call), the variables it uses and the build report.
- ``Scope``: where the statements being built go: inside how many loops and branches, inside a concurrent
  part, the plan and liveness of the graph being lowered, the results of Python callbacks to free at its
  end, where a subgraph's results must be written. ``cx.enter(...)`` replaces it for a nested graph and puts
  the outer one back after.

The parts of the lowering take ``cx`` and return the statements they build (``list[Stmt]``); they record a
tensor's value in ``cx.values`` (and its dims in ``cx.dims``) for the ops that read it.
"""
from __future__ import annotations

import abc
import contextlib
import dataclasses
from dataclasses import dataclass, field

from runtime.graph import Graph, all_operations
from transpiler.lowering.assume import Assumptions
from transpiler.lowering.ir import NULL, Declare, Namer, Poly
from transpiler.lowering.lists import native_lists, stacked_layouts


@dataclass
class Options:
    """Switches of the lowering (``render_module``'s emitter passes)."""
    fuse: bool = True              # fusion, row groups, contractions, tiles and the IR passes
    plan_memory: bool = True       # stack arrays, reuse of dead buffers, in-place kernels


@dataclass
class Report:
    """What the build report says about one function."""
    callbacks: dict = field(default_factory=dict)   # op type -> ops run through Python
    fused: int = 0                                   # ops computed inside another op's kernel
    groups: int = 0                                  # row groups (reductions fused with their readers)
    callback_ops: list = field(default_factory=list)   # the ops run through Python
    failure_callbacks: int = 0      # ops run through Python only when a native check fails (a false Assert)

    def calls_python(self) -> bool:
        """Whether the function can call into Python (its native call then needs the per-call state)."""
        return bool(self.callbacks) or self.failure_callbacks > 0
    plans: list = field(default_factory=list)          # (graph, Plan) of the top graph and each subgraph


@dataclass
class ShapeFacts:
    """What shape inference (``shapes.py``) records of an op for its lowering, by ``id(op)``."""
    code: dict = field(default_factory=dict)         # the op's shape code (assignments of symbols and checks)
    squeezed: dict = field(default_factory=dict)     # a Squeeze's axes
    slices: dict = field(default_factory=dict)       # a slice's index map (``shapes.slice_plan``)
    windows: dict = field(default_factory=dict)      # a convolution's or pooling's rt_window array
    pads: dict = field(default_factory=dict)         # [(before, after)] per dim of a padding or its gradient
    hypotheses: dict = field(default_factory=dict)   # a While's {(loop variable, axis)} assumed invariant


@dataclass
class Storage:
    """The function's locals and how its stack arrays are used."""
    locals: list = field(default_factory=list)       # Declare statements at function level
    stack_bytes: int = 0                             # bytes of stack arrays declared
    pool: dict = field(default_factory=dict)         # (ctype, count) -> free stack arrays
    stack_of: dict = field(default_factory=dict)     # id(tensor) -> (buffer, key) of its stack array
    escaping: set = field(default_factory=set)       # ids of tensors read after the call (results)


@dataclass
class Variables:
    """The variables the function uses: their handles in order (their storage follows the inputs: in[n + k]),
    and the value of each (an Array over its ``rt_tensor``)."""
    handles: list = field(default_factory=list)
    storage: dict = field(default_factory=dict)      # id(handle) -> its value


@dataclass
class Scope:
    """Where the statements being built go (see the module docstring)."""
    depth: int = 0                                   # loops and branches around (> 0: buffers are kept, not arena)
    in_parts: bool = False                           # inside a part run concurrently
    drops: list | None = None                        # callback results to free at the end of the scope
    dests: dict = field(default_factory=dict)        # id(tensor) -> (pointer, capacity) it must be written to
    plan: object = None                              # the Plan of the graph being lowered
    last_use: dict = field(default_factory=dict)     # id(stored tensor) -> index of the last unit reading it
    unit_index: int = -1                             # the unit being lowered
    aliased: set = field(default_factory=set)        # ids of tensors that are views of others or have views


class EntryDims:
    """The symbols of the inputs' run-time dims and the classes of them assumed equal (``assume.py``)."""

    def __init__(self, assume: Assumptions):
        self.assume = assume
        self.keys: dict[str, tuple] = {}       # symbol -> its key (input slot, dim)
        self.symbols: dict[tuple, Poly] = {}    # class representative key -> its symbol

    def classes(self, polys) -> list[tuple] | None:
        """The entry-dim keys of ``polys`` when each is one input's run-time dim, else None."""
        keys = []
        for p in polys:
            symbols = p.symbols()
            if len(symbols) != 1 or p != Poly.sym(next(iter(symbols))):
                return None
            key = self.keys.get(next(iter(symbols)))
            if key is None:
                return None
            keys.append(key)
        return keys

    def assume_equal(self, polys) -> bool:
        """Whether run-time dims ``polys`` (distinct symbols) may be taken as one: while discovering, input dims
        are (the entry will check them); otherwise they are separate."""
        keys = self.classes(polys)
        if keys is None or not self.assume.unions or not self.assume.learning:
            return False
        self.assume.union(keys)
        return True

    def same(self, a: Poly, b: Poly) -> bool:
        """``a`` and ``b`` are the same size: equal, or input dims assumed equal."""
        if a == b:
            return True
        keys = self.classes([a, b])
        return keys is not None and self.assume.find(keys[0]) == self.assume.find(keys[1])

    def unify(self, a: Poly, b: Poly) -> bool:
        """Whether ``a`` and ``b`` may be taken as one size (no check needed): the same, or input dims assumed
        equal (while discovering, this assumes it)."""
        return self.same(a, b) or self.assume_equal([a, b])


class Context(abc.ABC):
    """The lowering of one function (see the module docstring). The driver (``function.Lowering``) adds the
    steps the parts of the lowering call back into: lowering a nested graph, an op, a stored tensor."""

    def __init__(self, graph: Graph, name: str, options: Options | None = None,
                 assume: Assumptions | None = None):
        self.graph = graph
        self.name = name
        self.options = options or Options()
        # what run-time dims may be assumed (``assume.py``); by default nothing: every loop dim varies
        self.assume = assume if assume is not None else Assumptions(unions=False, varying={"*"})
        self.entry = EntryDims(self.assume)
        self.names = Namer()
        self.dims: dict[int, tuple] = {}
        self.values: dict[int, object] = {}
        self.shapes = ShapeFacts()
        self.storage = Storage(escaping={id(t) for t in graph.outputs})
        self.variables = Variables()
        self.report = Report()
        self.scope = Scope()
        self.op_index = {id(op): i for i, op in enumerate(all_operations(graph))}
        self.native_lists = native_lists(graph)         # TensorArrays as native lists (``lists.py``)
        # the lists whose items are stored in the order their stacks are read (``lists.stacked_layouts``)
        self.list_layouts = stacked_layouts(graph) if self.native_lists else {}

    # -- names and locals ----------------------------------------------------------------------
    def fresh(self, base: str = "t") -> str:
        return self.names.fresh(base)

    def local(self, ctype: str, base: str, init=None, size=None, static: bool = False) -> str:
        """A function-level C local (an array of ``size`` elements when given)."""
        name = self.fresh(base)
        self.storage.locals.append(Declare(name, ctype, init, size, static=static))
        return name

    def pointer(self, ctype: str, base: str) -> str:
        """A function-level pointer to ``ctype``, NULL until set."""
        return self.local(f"{ctype} *", base, NULL)

    def new_dim(self) -> Poly:
        """A fresh run-time dim (an ``int64_t`` local, assigned by shape code)."""
        return Poly.sym(self.local("int64_t", "n", Poly.of(0)))

    # -- the scope -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def enter(self, **changes):
        """The scope with ``changes`` while the block runs (a nested graph), the outer one after."""
        outer = self.scope
        self.scope = dataclasses.replace(outer, **changes)
        try:
            yield self.scope
        finally:
            self.scope = outer

    # -- the driver's steps (``function.Lowering``) ------------------------------------------------
    @abc.abstractmethod
    def lower_graph(self, graph, bindings: dict) -> list:
        """The statements of a (nested) graph's needed ops; its inputs have the ``bindings`` values."""

    @abc.abstractmethod
    def lower_op(self, op) -> list:
        """The statements computing ``op``'s stored results."""

    @abc.abstractmethod
    def store_tensor(self, t) -> list:
        """The kernel computing stored tensor ``t`` (its lazy producers fused in)."""

    @abc.abstractmethod
    def copy_into_storage(self, t) -> list:
        """Give ``t`` storage of its own (a copy of its current value)."""

    @abc.abstractmethod
    def input_value(self, t, tensor):
        """The value of an ``rt_tensor`` of the call (an input, a variable's storage) for tensor ``t``."""

    # -- small helpers -------------------------------------------------------------------------
    @staticmethod
    def message(op, text: str) -> str:
        """An error message (printf format) naming ``op`` and the user's line, as the executors do."""
        return f"{op.type}: {text}\n  [[{op.where().replace('%', '%%')}]]"

    @staticmethod
    def const_value(t):
        return t.op.attrs["value"].array if t.op.type == "Const" else None

    def signature(self) -> str:
        ins = ", ".join(f"{t.op.name}: {t.dtype}{_shape_text(t)}" for t in self.graph.inputs)
        return f"({ins})"


def _shape_text(t) -> str:
    if t.shape.rank is None:
        return "[*]"
    return "[" + ",".join("?" if d is None else str(d) for d in t.shape.dims) + "]"
