"""The graph IR: ``Graph`` holds ``Operation``s in topological order; each output is a ``SymbolicTensor``.

An operation has a type (a key of the op registry), input tensors, frozen hashable
attributes, output tensors, control inputs (ordering between stateful ops) and the
user's source location. ``str(graph)`` prints an SSA listing; ``as_graph_def()``
gives TensorFlow-style nodes ``name, op, input, attr``.
"""
from __future__ import annotations

import io
import os
import pickle
import sys
from typing import Any, Iterable

import numpy as np

from runtime import context, dtypes
from runtime.ops.op_def import get_opdef, specs_of
from runtime.shapes import TensorShape
from runtime.tensor import EagerTensor, Tensor

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_DIRS = (_RUNTIME_DIR, os.path.join(os.path.dirname(_RUNTIME_DIR), "transpiler"))


class ConstValue:
    """A constant's numpy value as a hashable attribute (hash and equality by content)."""

    __slots__ = ("array", "_hash")

    def __init__(self, array: np.ndarray):
        self.array = array
        array.flags.writeable = False
        if array.dtype == object:
            self._hash = hash((array.shape, tuple(array.ravel().tolist())))
        else:
            self._hash = hash((array.dtype.str, array.shape, array.tobytes()))

    def __eq__(self, other):
        if not isinstance(other, ConstValue):
            return NotImplemented
        a, b = self.array, other.array
        if self._hash != other._hash or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == object:
            return a.ravel().tolist() == b.ravel().tolist()
        return a.tobytes() == b.tobytes()

    def __hash__(self):
        return self._hash

    def __repr__(self):
        text = np.array2string(self.array, threshold=8, separator=", ") \
            if self.array.dtype != object else repr(self.array.tolist())
        return text.replace("\n", "")


class Location:
    """Where the user's code created an op: file, line and function name."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename: str, lineno: int, function: str):
        self.filename, self.lineno, self.function = filename, lineno, function

    def __str__(self):
        return f'File "{self.filename}", line {self.lineno}, in {self.function}'

    def __repr__(self):
        return f"Location({self.filename!r}, {self.lineno}, {self.function!r})"


_location_hook = None


def set_location_hook(hook) -> None:
    """Let the converter map converted-code frames back to the user's source: hook(frame) -> Location|None."""
    global _location_hook
    _location_hook = hook


def user_location() -> Location | None:
    """The innermost stack frame that belongs to the user's code (not runtime/transpiler)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _location_hook is not None:
            mapped = _location_hook(frame)
            if mapped is not None:
                return mapped
        if not filename.startswith(_PACKAGE_DIRS) and not filename.startswith("<rt"):
            return Location(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


class SymbolicTensor(Tensor):
    """A graph tensor: output ``index`` of operation ``op``.

    ``str`` is ``Tensor("x:0", shape=(None,), dtype=int32)``.
    """

    __slots__ = ("op", "index", "dtype", "shape", "__weakref__")

    def __init__(self, op: "Operation", index: int, dtype: dtypes.DType, shape: TensorShape):
        self.op = op
        self.index = index
        self.dtype = dtype
        self.shape = shape

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.index}"

    def numpy(self):
        raise AttributeError(
            f"Symbolic tensor {self.name} has no value: .numpy() is only available on eager tensors. "
            "Inside rt.function, values exist only when the graph runs; return the tensor "
            "from the function instead (did a tensor leak out of a traced function?)")

    def __bool__(self):
        raise TypeError(
            f"Using the symbolic tensor {self.name} as a Python bool is not allowed while tracing; "
            "write the condition in a function converted by rt.function (autograph=True) "
            "or use rt.cond / rt.while_loop")

    def __len__(self):
        dim = self.shape[0] if self.shape.rank else None
        if dim is None:
            raise TypeError(f"len() of the symbolic tensor {self.name} with shape {self.shape} is not known "
                            "while tracing; use rt.shape(x)[0] or rt.size")
        return dim

    def __iter__(self):
        dim = self.shape[0] if self.shape.rank else None
        if dim is None:
            raise TypeError(f"Cannot iterate over the symbolic tensor {self.name} with shape {self.shape} "
                            "in Python; use a tensor for-loop in rt.function")
        return (self[i] for i in range(dim))

    def __index__(self):
        raise TypeError(f"The symbolic tensor {self.name} cannot be used as a Python integer while tracing")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        raise TypeError(f"The symbolic tensor {self.name} cannot be used as a Python float while tracing")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"The symbolic tensor {self.name} cannot be converted to a numpy array while tracing")

    def __str__(self):
        return f'Tensor("{self.name}", shape={self.shape}, dtype={self.dtype})'

    __repr__ = __str__


class Attrs(dict):
    """An op's attributes (``Operation.attrs``): a dict that cannot change, so that an op's attributes are what
    it was created with (CSE keys, plans and pickled graphs rely on it). ``replace(**changes)`` gives a copy
    with some changed, for a pass that builds an op anew."""

    __slots__ = ()

    def _frozen(self, *args, **kwargs):
        raise TypeError("an op's attrs are frozen: give the op new ones with op.attrs.replace(...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen

    def replace(self, **changes) -> "Attrs":
        return Attrs({**self, **changes})

    def __reduce__(self):
        return Attrs, (dict(self),)


class Operation:
    """One node: ``type`` (registry key), ``inputs``, frozen ``attrs`` (``Attrs``), ``outputs``."""

    __slots__ = ("graph", "type", "name", "inputs", "attrs", "outputs", "control_inputs", "location",
                 "opdef", "__weakref__")

    def __init__(self, graph, opdef, name, inputs, attrs, control_inputs, location):
        self.graph = graph
        self.opdef = opdef
        self.type = opdef.type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = Attrs(attrs)
        self.control_inputs = tuple(control_inputs)
        self.location = location
        self.outputs: tuple = ()

    @property
    def stateful(self) -> bool:
        return self.opdef.stateful or any(g.has_side_effects() for g in self.subgraphs())

    def subgraphs(self) -> list["Graph"]:
        return [v for v in self.attrs.values() if isinstance(v, Graph)]

    def attr_key(self) -> tuple:
        return tuple(sorted(self.attrs.items()))

    def where(self) -> str:
        """``op 'add' (Add) created at File "x.py", line 3, in f`` for error messages."""
        text = f"op '{self.name}' ({self.type})"
        if self.location is not None:
            text += f" created at {self.location}"
        return text

    def __repr__(self):
        return f"<Operation {self.name!r} type={self.type}>"

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__ if k not in ("opdef", "__weakref__")}

    def __setstate__(self, state):
        for key, value in state.items():
            setattr(self, key, value)
        if type(self.attrs) is not Attrs:      # pickled before attrs were frozen
            self.attrs = Attrs(self.attrs)
        self.opdef = get_opdef(self.type)


class Graph:
    """A dataflow graph: ``get_operations()``, ``as_graph_def()``, ``verify()``, SSA ``str``."""

    def __init__(self, name: str = "graph", outer_graph: "Graph | None" = None):
        self.name = name
        self.outer_graph = outer_graph
        self.operations: list[Operation] = []
        self.inputs: list[SymbolicTensor] = []
        self.outputs: list[SymbolicTensor] = []
        self.captures: list[tuple[Tensor, SymbolicTensor]] = []  # (outer tensor, placeholder)
        self._capture_map: dict[int, SymbolicTensor] = {}
        self._const_map: dict[int, tuple[EagerTensor, SymbolicTensor]] = {}
        self._names: dict[str, int] = {}
        self._last_stateful: Operation | None = None
        self.finalized = False
        self.variables: list = []          # variables created while tracing this graph
        # While a gradient graph is built: maps a tensor of a graph that is not an ancestor (the forward
        # graph being differentiated) to a stand-in usable here (see ``internalize``), or returns None.
        self.resolver = None
        self.plans: dict = {}              # the executors' plans for this graph (runtime.executor), by kind

    # -- building -----------------------------------------------------------
    def unique_name(self, base: str) -> str:
        if base not in self._names:
            self._names[base] = 1
            return base
        while True:
            count = self._names[base]
            self._names[base] = count + 1
            name = f"{base}_{count}"
            if name not in self._names:
                self._names[name] = 1
                return name

    def create_op(self, opdef, inputs: Iterable[Tensor], attrs: dict | None = None,
                  name: str | None = None, output_specs=None) -> Operation:
        """Add an op; ``output_specs`` (list of (dtype, shape)) defaults to the op's inference rule."""
        if self.finalized:
            raise RuntimeError(f"Graph {self.name} is finalized and cannot be modified")
        attrs = attrs or {}
        inputs = [self.internalize(t) for t in inputs]
        if output_specs is None:
            output_specs = opdef.infer(specs_of(inputs), attrs)
        control = ()
        if opdef.stateful or any(isinstance(v, Graph) and v.has_side_effects() for v in attrs.values()):
            if self._last_stateful is not None:
                control = (self._last_stateful,)
        op = Operation(self, opdef, self.unique_name(context.current_name_scope() + (name or opdef.default_name)),
                       inputs, attrs, control, user_location())
        op.outputs = tuple(SymbolicTensor(op, i, dtype, TensorShape(shape))
                           for i, (dtype, shape) in enumerate(output_specs))
        if control or opdef.stateful or op.stateful:
            self._last_stateful = op
        self.operations.append(op)
        if context.tapes_active():
            context.record_operation(op)
        return op

    def add_placeholder(self, name: str, dtype, shape) -> SymbolicTensor:
        op = self.create_op(get_opdef("Placeholder"), [], {"dtype": dtype, "shape": TensorShape(shape)},
                            name=name, output_specs=[(dtype, shape)])
        self.inputs.append(op.outputs[0])
        return op.outputs[0]

    def is_ancestor_of(self, other: "Graph") -> bool:
        g = other.outer_graph
        while g is not None:
            if g is self:
                return True
            g = g.outer_graph
        return False

    def internalize(self, tensor: Tensor) -> SymbolicTensor:
        """A tensor of this graph for ``tensor``: captures constants and outer-graph tensors."""
        if isinstance(tensor, SymbolicTensor):
            owner = tensor.op.graph
            if owner is self:
                return tensor
            if owner.is_ancestor_of(self):
                return self.capture(tensor)
            stand_in = self._stand_in(tensor)
            if stand_in is not None:
                return self.internalize(stand_in)
            raise TypeError(
                f"{tensor} is out of scope and cannot be used here: it belongs to the graph of "
                f"'{owner.name}', not to the graph of '{self.name}' being traced. A tensor leaked "
                "out of a traced function (e.g. through a global or an attribute); return it from "
                "the function instead, and pass it in as an argument.")
        if isinstance(tensor, EagerTensor):
            hit = self._const_map.get(id(tensor))
            if hit is not None and hit[0] is tensor:
                return hit[1]
            value = tensor._value
            op = self.create_op(get_opdef("Const"), [], {"value": ConstValue(value.copy()), "dtype": tensor.dtype},
                                output_specs=[(tensor.dtype, value.shape)])
            self._const_map[id(tensor)] = (tensor, op.outputs[0])
            return op.outputs[0]
        raise TypeError(f"Expected a tensor, got {type(tensor).__name__} {tensor!r}")

    def _stand_in(self, tensor: SymbolicTensor):
        """What the innermost ``resolver`` of this graph or its outer graphs gives for a foreign tensor."""
        graph = self
        while graph is not None:
            if graph.resolver is not None:
                found = graph.resolver(tensor)
                if found is not None:
                    return found
            graph = graph.outer_graph
        return None

    def capture(self, tensor: SymbolicTensor) -> SymbolicTensor:
        """A placeholder standing for the outer-graph ``tensor`` (captured into nested graphs first)."""
        hit = self._capture_map.get(id(tensor))
        if hit is not None:
            return hit
        outer = tensor if tensor.op.graph is self.outer_graph else self.outer_graph.capture(tensor)
        op = self.create_op(get_opdef("Placeholder"), [],
                            {"dtype": tensor.dtype, "shape": tensor.shape},
                            name=f"capture_{tensor.op.name}", output_specs=[(tensor.dtype, tensor.shape)])
        placeholder = op.outputs[0]
        self.captures.append((outer, placeholder))
        self._capture_map[id(tensor)] = placeholder
        return placeholder

    # -- queries --------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self.operations)

    def get_operation_by_name(self, name: str) -> Operation:
        for op in self.operations:
            if op.name == name:
                return op
        raise KeyError(name)

    def has_side_effects(self) -> bool:
        return any(op.opdef.stateful and op.opdef.side_effect or
                   any(g.has_side_effects() for g in op.subgraphs()) for op in self.operations)

    def all_inputs(self) -> list[SymbolicTensor]:
        """Inputs followed by capture placeholders: what a caller must feed."""
        return list(self.inputs) + [p for _, p in self.captures]

    # -- printing -------------------------------------------------------------
    def as_graph_def(self) -> "GraphDef":
        return GraphDef([NodeDef.from_op(op) for op in self.operations])

    def __str__(self) -> str:
        return "\n".join(self._ssa_lines(""))

    def _ssa_lines(self, indent: str) -> list[str]:
        args = ", ".join(f"%{t.op.name}: {_type_str(t)}" for t in self.all_inputs())
        lines = [f"{indent}graph {self.name}({args}) {{"]
        for op in self.operations:
            if op.type == "Placeholder":
                continue
            outs = ", ".join(f"%{op.name}" + (f":{t.index}" if len(op.outputs) > 1 else "")
                             for t in op.outputs)
            ins = ", ".join(_ref(t) for t in op.inputs)
            attrs = {k: v for k, v in op.attrs.items() if not isinstance(v, Graph)}
            attr_text = ", ".join(f"{k}={_attr_str(v)}" for k, v in sorted(attrs.items()))
            types = ", ".join(_type_str(t) for t in op.outputs)
            ctrl = "".join(f" ^{c.name}" for c in op.control_inputs)
            head = f"{indent}  {outs + ' = ' if outs else ''}{op.type}({ins})"
            if attr_text:
                head += f" {{{attr_text}}}"
            if ctrl:
                head += ctrl
            if types:
                head += f" : {types}"
            lines.append(head)
            for key, sub in sorted((k, v) for k, v in op.attrs.items() if isinstance(v, Graph)):
                lines.append(f"{indent}    {key}:")
                lines.extend(sub._ssa_lines(indent + "    "))
        lines.append(f"{indent}  return {', '.join(_ref(t) for t in self.outputs)}")
        lines.append(f"{indent}}}")
        return lines

    def __repr__(self):
        return f"<rt.Graph {self.name!r} with {len(self.operations)} operations>"

    def drop_plans(self) -> None:
        """Forget the executor plans cached on this graph (after a change to its ops or outputs)."""
        self.plans = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        for transient in ("plans", "_const_map", "_capture_map", "_last_stateful", "variables", "resolver"):
            state.pop(transient, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._const_map, self._capture_map, self._last_stateful, self.variables = {}, {}, None, []
        self.resolver = None
        self.plans = {}

    # -- checking -------------------------------------------------------------
    def verify(self) -> None:
        """Check single assignment, topological order, arity, dtypes and shapes; raise ValueError."""
        defined: set[int] = set()
        names: set[str] = set()
        for op in self.operations:
            if op.name in names:
                raise ValueError(f"graph {self.name}: name {op.name!r} assigned twice")
            names.add(op.name)
            if op.graph is not self:
                raise ValueError(f"graph {self.name}: {op.name} belongs to another graph")
            opdef = get_opdef(op.type)
            if opdef.num_inputs is not None and len(op.inputs) != opdef.num_inputs:
                raise ValueError(f"graph {self.name}: {op.name} has {len(op.inputs)} inputs, "
                                 f"{op.type} takes {opdef.num_inputs}")
            for t in op.inputs:
                if id(t) not in defined:
                    raise ValueError(f"graph {self.name}: {op.name} uses {t.name} before it is defined")
            for c in op.control_inputs:
                if c.graph is not self or c.name not in names:
                    raise ValueError(f"graph {self.name}: control input {c.name} of {op.name} is not earlier")
            if op.type not in ("Placeholder", "Const") and opdef.infer is not None and not opdef.dynamic_infer:
                expected = opdef.infer(specs_of(op.inputs), op.attrs)
                got = [(t.dtype, t.shape) for t in op.outputs]
                if len(expected) != len(got):
                    raise ValueError(f"graph {self.name}: {op.name} has {len(got)} outputs, expected {len(expected)}")
                for (edt, esh), (gdt, gsh) in zip(expected, got):
                    if edt is not gdt or not TensorShape(esh).is_compatible_with(gsh):
                        raise ValueError(f"graph {self.name}: {op.name} output {gdt}{gsh} does not match "
                                         f"its inference {edt}{TensorShape(esh)}")
            for index, t in enumerate(op.outputs):
                if t.op is not op or t.index != index:
                    raise ValueError(f"graph {self.name}: output {index} of {op.name} is malformed")
                defined.add(id(t))
            for sub in op.subgraphs():
                sub.verify()
        for t in self.outputs:
            if id(t) not in defined:
                raise ValueError(f"graph {self.name}: output {t.name} is not defined in the graph")
        for _, placeholder in self.captures:
            if id(placeholder) not in defined:
                raise ValueError(f"graph {self.name}: capture {placeholder.name} is not defined")


def all_operations(graph: Graph) -> list[Operation]:
    """Every op of ``graph`` and of the graphs nested in it, depth first in program order.

    This order numbers the ops of a built function: generated code names an op by its index here
    when it calls back into Python, and the runtime finds the op by the same index.
    """
    found: list[Operation] = []

    def walk(g: Graph) -> None:
        for op in g.operations:
            found.append(op)
            for _, sub in sorted((k, v) for k, v in op.attrs.items() if isinstance(v, Graph)):
                walk(sub)
    walk(graph)
    return found


def _ref(t: SymbolicTensor) -> str:
    return f"%{t.op.name}" + (f":{t.index}" if len(t.op.outputs) > 1 else "")


def _type_str(t) -> str:
    if t.shape.dims is None:
        return f"{t.dtype}[*]"
    return f"{t.dtype}[{','.join('?' if d is None else str(d) for d in t.shape.dims)}]"


def _attr_str(value: Any) -> str:
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, TensorShape):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(_attr_str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


class NodeDef:
    """One node of ``as_graph_def()``: ``name``, ``op``, ``input`` (list of names), ``attr`` (dict)."""

    def __init__(self, name: str, op: str, input: list[str], attr: dict):
        self.name, self.op, self.input, self.attr = name, op, input, attr

    @classmethod
    def from_op(cls, op: Operation) -> "NodeDef":
        inputs = [t.op.name if t.index == 0 else f"{t.op.name}:{t.index}" for t in op.inputs]
        inputs += [f"^{c.name}" for c in op.control_inputs]
        attr = {}
        for key, value in sorted(op.attrs.items()):
            attr[key] = value.name if isinstance(value, Graph) else value
        if op.outputs and "T" not in attr and "dtype" not in attr:
            attr["T"] = op.outputs[0].dtype
        return cls(op.name, op.type, inputs, attr)

    def __str__(self) -> str:
        lines = ["node {", f'  name: "{self.name}"', f'  op: "{self.op}"']
        lines += [f'  input: "{i}"' for i in self.input]
        for key, value in self.attr.items():
            lines += ["  attr {", f'    key: "{key}"', f"    value {{ {_proto_value(value)} }}", "  }"]
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, input={self.input!r})"


def _proto_value(value) -> str:
    if isinstance(value, dtypes.DType):
        return f"type: DT_{value.name.upper()}"
    if isinstance(value, TensorShape):
        if value.dims is None:
            return "shape { unknown_rank: true }"
        return "shape { " + " ".join(f"dim {{ size: {-1 if d is None else d} }}" for d in value.dims) + " }"
    if isinstance(value, bool):
        return f"b: {str(value).lower()}"
    if isinstance(value, int):
        return f"i: {value}"
    if isinstance(value, float):
        return f"f: {value}"
    if isinstance(value, str):
        return "s: " + '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, ConstValue):
        return f"tensor {{ dtype: {value.array.dtype} shape: {list(value.array.shape)} value: {value!r} }}"
    return f"s: {str(value)!r}"


class GraphDef:
    """``graph.as_graph_def()``: ``.node`` is the list of ``NodeDef``s; ``str`` is protobuf-text-like."""

    def __init__(self, node: list[NodeDef]):
        self.node = node

    def __str__(self) -> str:
        return "\n".join(str(n) for n in self.node) + "\nversions {\n  producer: 1\n}"


class _CopyPickler(pickle.Pickler):
    """Pickles the IR (graphs, ops, tensors, their containers); everything else is passed by reference."""

    _COPIED = (list, dict, Attrs, tuple, set, str, int, float, bool, type(None))

    def __init__(self, file, shared: list):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def persistent_id(self, obj):
        if isinstance(obj, (Graph, Operation, SymbolicTensor)) and obj is not self.shared[0] \
                or type(obj) in self._COPIED:
            return None
        self.shared.append(obj)
        return len(self.shared) - 1


class _CopyUnpickler(pickle.Unpickler):
    def __init__(self, file, shared: list):
        super().__init__(file)
        self.shared = shared

    def persistent_load(self, pid):
        return self.shared[pid]


def copy_graph(graph: Graph) -> Graph:
    """A deep copy of ``graph``'s ops, tensors and subgraphs; attribute values (constants, variable
    handles, dtypes) are shared, and so is ``outer_graph``. The copy can be changed without
    changing ``graph`` (e.g. a loop body a gradient adds accumulators to)."""
    shared: list = [graph.outer_graph]
    buffer = io.BytesIO()
    _CopyPickler(buffer, shared).dump(graph)
    buffer.seek(0)
    return _CopyUnpickler(buffer, shared).load()
