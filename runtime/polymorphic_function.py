"""``rt.function``: ``Function`` (polymorphic, one trace per input signature) and ``ConcreteFunction``.

Calling a ``Function`` computes a cache key from the arguments (tensors by dtype
and shape, Python primitives by value, other objects by identity); a new key
traces the (AutoGraph-converted) Python function into a ``Graph``; a known key
runs that graph. Inside another trace, a Function is inlined into the caller's graph.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pickle
import sys
import weakref

import numpy as np

from runtime import autograph, config, context, errors, jit, nest
from runtime.composite import CompositeValue, IdentityKey, composite_key, is_composite, spec_of
from runtime.dtypes import as_dtype
from runtime.executor import execute
from runtime.graph import Graph, SymbolicTensor, copy_graph
from runtime.ops.functional_ops import call_graph
from runtime.ops.registry import apply, convert
from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor, Tensor, native_order
from runtime.tensor_array import TensorArray
from runtime.variables import Variable

_PRIMITIVES = (int, float, bool, str, bytes, type(None), complex)


class _WeakLeaf:
    """An object argument as a concrete function remembers it: its key and its repr, not the object."""

    __slots__ = ("key", "text")

    def __init__(self, obj):
        self.key = _leaf_key(obj)
        self.text = repr(spec_of(obj)) if is_composite(obj) else repr(obj)

    def __repr__(self):
        return self.text


def _weak_leaves(value):
    def leaf(v):
        if isinstance(v, _PRIMITIVES) or _is_tensor_leaf(v):
            return v
        return _WeakLeaf(v)
    return nest.map_structure(leaf, value) if nest.is_sequence(value) else leaf(value)


_NP_DTYPES: dict = {}


def _np_dtype(np_dtype):
    """rt dtype of a numpy dtype (cached: on the call path)."""
    dtype = _NP_DTYPES.get(np_dtype)
    if dtype is None:
        dtype = _NP_DTYPES[np_dtype] = as_dtype(np_dtype)
    return dtype


def _leaf_key(value):
    """Cache-key part for one leaf (see the module docstring)."""
    if isinstance(value, EagerTensor):
        return (value.dtype, value._value.shape)
    if isinstance(value, (TensorSpec, SymbolicTensor)):
        return (value.dtype, value.shape.dims)
    if isinstance(value, np.ndarray):
        return (_np_dtype(value.dtype), value.shape)
    if isinstance(value, np.generic):          # a numpy scalar is a 0-d tensor, like a 0-d array
        return (_np_dtype(value.dtype), ())
    if isinstance(value, _PRIMITIVES):
        return ("py", type(value), value)
    if isinstance(value, Variable):
        return ("var", IdentityKey(value))
    if isinstance(value, _WeakLeaf):
        return value.key
    if is_composite(value):
        return composite_key(value)
    return ("obj", IdentityKey(value))


def _structure_key(value):
    if isinstance(value, (tuple, list, dict)):
        return (nest.structure_key(value), tuple(_leaf_key(v) for v in nest.flatten(value)))
    return _leaf_key(value)


def _is_tensor_leaf(value) -> bool:
    return isinstance(value, (Tensor, TensorSpec, np.ndarray, np.generic))


def _flat_tensors(values) -> list:
    """The tensors a call feeds: tensor leaves, and the components of composite leaves (datasets)."""
    flat = []
    for v in nest.flatten(values):
        if _is_tensor_leaf(v):
            flat.append(_to_tensor(v))
        elif isinstance(v, CompositeValue):
            flat.extend(v._components())
    return flat


def _spec_of(value, name=None) -> TensorSpec:
    if isinstance(value, TensorSpec):
        return TensorSpec(value.shape, value.dtype, name)
    if isinstance(value, (np.ndarray, np.generic)):
        return TensorSpec(np.shape(value), _np_dtype(value.dtype), name)
    return TensorSpec(value.shape, value.dtype, name)


try:
    from runtime._native import FunctionBase as _FunctionBase, install_fast_call
except ImportError:  # not compiled: calls always take the Python path
    _FunctionBase, install_fast_call = object, None


# Built extension modules hand each Function their source creates its built signatures, and record the
# signatures traced at run time: the AOT loader (runtime.aot, a higher layer) sets these hooks when a built
# module imports it.
_prebuilt_hook = None
_trace_hook = None


def set_prebuilt_hook(hook) -> None:
    """Called by ``runtime.aot`` on import: ``hook(function)`` preloads a new Function's built signatures (for
    every new Function, bound methods included)."""
    global _prebuilt_hook
    _prebuilt_hook = hook


def set_trace_hook(hook) -> None:
    """Called by ``runtime.aot`` on import: ``hook(function, concrete)`` after each trace of a Function that has
    a ``ledger_key`` (one of a built module's); it must never raise."""
    global _trace_hook
    _trace_hook = hook


@dataclasses.dataclass(frozen=True)
class Origin:
    """Which Function of which module this is, the same from one import of the module to the next.

    ``module`` is the module whose top-level code created the Function (directly, or through code it called:
    ``model.compile()`` at import creates ``model.train_function``); ``key`` is the Python function's module
    and qualified name and how many Functions of that Python function the module's import had created before
    (``"models:scale#1"`` is the second ``rt.function(scale, ...)``). The build keys a module's native code by
    it, so two Functions of one Python function each get their own.
    """
    module: str
    key: str


_origin_counts: dict[str, dict[str, int]] = {}


def begin_module(name: str) -> None:
    """The top-level code of module ``name`` starts (again): its Functions count from 0 (the AOT loader and the
    build call this before running a module's source)."""
    _origin_counts.pop(name, None)


def created_origins(module: str) -> list[str]:
    """The keys of every Function the top-level code of ``module`` created (since ``begin_module``)."""
    return [f"{name}#{i}" for name, count in _origin_counts.get(module, {}).items() for i in range(count)]


def _origin_of(python_function) -> Origin | None:
    """The origin of a Function being created now (see ``Origin``): the innermost module-level frame names the
    module; None when no module's top-level code is running (a Function made inside a call at run time)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    module = frame.f_globals.get("__name__") if frame is not None else None
    if not isinstance(module, str):
        return None
    name = f"{getattr(python_function, '__module__', None)}:{getattr(python_function, '__qualname__', '?')}"
    counts = _origin_counts.setdefault(module, {})
    ordinal = counts.get(name, 0)
    counts[name] = ordinal + 1
    return Origin(module, f"{name}#{ordinal}")


@dataclasses.dataclass(frozen=True)
class Signature:
    """A traced signature as the build, the AOT loader, ``jit_compile`` and the test plugin exchange it.

    ``structured_inputs`` has one item per parameter (a method's ``self`` excluded): a ``TensorSpec``, a Python
    value fixed at trace time, or a nested structure of them; ``input_specs`` are the graph's inputs in order;
    ``text`` is ``f(x, n=3)``.
    """
    structured_inputs: list
    input_specs: list
    text: str


def _generality(concrete) -> int:
    """How many shapes a concrete function accepts, roughly: its unknown dims (an unknown rank counts 64).
    Calls try exact-shape signatures before general ones."""
    total = 0
    for spec in concrete._input_specs:
        dims = spec.shape.dims
        total += 64 if dims is None else sum(d is None for d in dims)
    return total


class Function(_FunctionBase):
    """A polymorphic graph function: ``rt.function(f)``.

    Example:
        >>> import runtime as rt
        >>> @rt.function
        ... def double(a):
        ...     return a + a
        >>> double(rt.constant(2))
        <rt.Tensor: shape=(), dtype=int32, numpy=4>
    """

    def __init__(self, python_function, input_signature=None, autograph=True, reduce_retracing=False,
                 name=None, _instance=None, jit_compile=None):
        if isinstance(python_function, Function):
            python_function = python_function.python_function
        self.python_function = python_function
        self._instance_ref = None if _instance is None else weakref.ref(_instance)
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = bool(jit_compile)
        self._signature = inspect.signature(python_function)
        params = list(self._signature.parameters.values())
        if _instance is not None:
            params = params[1:]
        self._params = params
        self._simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self._num_params = len(params)
        self.input_signature = None if input_signature is None else tuple(input_signature)
        if self.input_signature is not None:
            for spec in nest.flatten(list(self.input_signature)):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"input_signature must contain rt.TensorSpec objects, got {spec!r}")
        self._cache: dict = {}
        self._fast_natives: list = []     # built signatures the compiled __call__ tries first
        self._concrete: list[ConcreteFunction] = []
        self._declared = None             # with an input_signature: its concrete function
        self._specialized: list = []      # with an input_signature: exact-shape ones (the build's, see specialize)
        self._fast: dict = {}             # id(concrete) -> its NativeFunction on the fast path
        self._tracing_count = 0
        self._created_variables: list = []
        self._shapes_seen: dict = {}
        self._converted_fn = None
        self._bound: dict = {}
        self.__name__ = name or getattr(python_function, "__name__", "function")
        self.__qualname__ = getattr(python_function, "__qualname__", self.__name__)
        self.__doc__ = getattr(python_function, "__doc__", None)
        self.__module__ = getattr(python_function, "__module__", None)
        self.__wrapped__ = python_function
        self.origin = _origin_of(python_function) if _instance is None else None
        self.unbound = None               # a method bound to an instance: the class's Function
        self.ledger_key = None            # set by the AOT loader: run-time traces are recorded under it
        if _instance is None and _prebuilt_hook is not None:
            _prebuilt_hook(self)

    # -- binding to instances (methods) ------------------------------------------
    def __get__(self, instance, owner=None):
        if instance is None or self._instance_ref is not None:
            return self
        bound = self._bound.get(id(instance))
        if bound is not None and bound._instance_ref() is instance:
            return bound
        bound = Function(self.python_function, self.input_signature, self._autograph, self._reduce_retracing,
                         self.__name__, _instance=instance, jit_compile=self._jit_compile)
        bound.unbound = self
        self._bound[id(instance)] = bound
        try:
            weakref.finalize(instance, self._bound.pop, id(instance), None)
        except TypeError:
            pass
        if _prebuilt_hook is not None:
            _prebuilt_hook(bound)
        return bound

    def _with_instance(self, args):
        if self._instance_ref is None:
            return args
        instance = self._instance_ref()
        if instance is None:
            raise ReferenceError(f"The object bound to {self.__name__} no longer exists")
        return (instance,) + args

    # -- the converted Python function -----------------------------------------------
    def _traced_python_function(self):
        if self._converted_fn is None:
            if self._autograph:
                self._converted_fn = autograph.convert(self.python_function)
            else:
                self._converted_fn = self.python_function
        return self._converted_fn

    # -- calling ------------------------------------------------------------------------
    def _call_python(self, *args, **kwargs):
        if config.functions_run_eagerly():
            return self.python_function(*self._with_instance(args), **kwargs)
        if context.current_graph() is not None:
            return self._call_inline(args, kwargs)
        if not kwargs and self._simple and len(args) == self._num_params and self.input_signature is None:
            key = None
            if all(type(a) is EagerTensor for a in args):
                key = tuple([(a.dtype, a._value.shape) for a in args])
            elif all(type(a) is EagerTensor or (type(a) is np.ndarray and a.dtype.isnative) for a in args):
                key = tuple([(a.dtype, a._value.shape) if type(a) is EagerTensor else (_np_dtype(a.dtype), a.shape)
                             for a in args])
            if key is not None:
                concrete = self._cache.get(key)
                if concrete is not None:
                    return concrete._call_flat(args)
        concrete, flat = self._lookup(args, kwargs)
        return concrete._call_flat(flat)

    def _argument_values(self, bound) -> list:
        """The bound arguments in parameter order, without the instance of a method."""
        values = list(bound.arguments.values())
        return values[1:] if self._instance_ref is not None else values

    def _bind(self, args, kwargs) -> inspect.BoundArguments:
        args = self._with_instance(args)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        bound.apply_defaults()
        return bound

    def _lookup(self, args, kwargs):
        """Find (or trace) the concrete function for a call; also return the flat tensor arguments."""
        if self.input_signature is not None:
            return self._lookup_signature(args, kwargs)
        bound = self._bind(args, kwargs)
        values = self._argument_values(bound)
        key = tuple(_structure_key(v) for v in values)
        flat = _flat_tensors(values)
        concrete = self._cache.get(key)
        if concrete is None:
            concrete = self._compatible(values) or self._trace(bound, self._relaxed(values, key))
            self._cache[key] = concrete
        return concrete, flat

    def _signature_structure(self, bound) -> list:
        """Per parameter: its spec(s) from input_signature, or (past the signature) its Python value."""
        specs = list(self.input_signature)
        out = []
        for param in self._params:
            if param.kind is param.VAR_POSITIONAL:
                out.append(tuple(specs))
                specs = []
            elif specs and param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                out.append(specs.pop(0))
            else:
                out.append(bound.arguments.get(param.name, param.default))
        if specs:
            raise TypeError(f"{self.__name__}: input_signature has {len(self.input_signature)} specs, more than "
                            "the function's positional parameters")
        return out

    def _lookup_signature(self, args, kwargs):
        bound = self._bind(args, kwargs)
        values = self._argument_values(bound)
        structure = self._signature_structure(bound)
        converted = []
        reason = ""
        ok = len(values) == len(structure)
        try:
            pairs = [(v, w) for value, want in zip(values, structure)
                     for v, w in zip(nest.flatten_up_to(want, value), nest.flatten(want))] if ok else []
        except ValueError:
            ok = False
        if ok:
            for value, want in pairs:
                if not isinstance(want, TensorSpec):
                    if _leaf_key(value) != _leaf_key(want):
                        ok = False
                        break
                    continue
                try:
                    t = value if isinstance(value, Tensor) else _to_tensor(value, want.dtype)
                except (TypeError, ValueError) as e:
                    ok, reason = False, f"\n  ({e})"
                    break
                if t.dtype is not want.dtype or not want.shape.is_compatible_with(t.shape):
                    ok = False
                    break
                converted.append(t)
        if not ok:
            inputs = ",\n    ".join(repr(v) for v in values)
            signature = ",\n    ".join(repr(s) for s in self.input_signature)
            raise ValueError(f"Python inputs incompatible with input_signature:\n  inputs: (\n    {inputs})\n"
                             f"  input_signature: (\n    {signature}).{reason}")
        for concrete in self._specialized:       # an exact-shape specialisation first (the build's)
            if all(t.shape == spec.shape for t, spec in zip(converted, concrete._input_specs)):
                return concrete, converted
        if self._declared is None:
            self._declared = self._trace(bound, structure)
        return self._declared, converted

    def _compatible(self, values):
        """An existing concrete function whose (more general) signature accepts these arguments."""
        leaves = nest.flatten(values)
        for concrete in sorted(self._concrete, key=_generality):     # the most specific first
            if concrete._accepts(values, leaves):
                return concrete
        return None

    def _relaxed(self, values, key):
        """With reduce_retracing, tensor dims that vary between calls become None."""
        if not self._reduce_retracing:
            return values
        leaves = nest.flatten(values)
        pattern = tuple((v.dtype.name,) if _is_tensor_leaf(v) else _leaf_key(v) for v in leaves)
        seen = self._shapes_seen.setdefault((nest.structure_key(values), pattern), [])
        shapes = [tuple(v.shape) for v in leaves if _is_tensor_leaf(v)]
        seen.append(shapes)
        if len(seen) < 2:
            return values
        out, index = [], 0
        for leaf in leaves:
            if _is_tensor_leaf(leaf):
                dims = []
                variants = [s[index] for s in seen]
                if len({len(v) for v in variants}) > 1:
                    out.append(TensorSpec(None, leaf.dtype))
                else:
                    for axis in range(len(variants[0])):
                        col = {v[axis] for v in variants}
                        dims.append(col.pop() if len(col) == 1 else None)
                    out.append(TensorSpec(dims, leaf.dtype))
                index += 1
            else:
                out.append(leaf)
        return nest.pack_sequence_as(values, out)

    def _call_inline(self, args, kwargs):
        """Called while another function is being traced: trace into the caller's graph."""
        bound = self._bind(args, kwargs)
        key = (self, tuple(_structure_key(v) for v in bound.arguments.values()))
        stack = context.tracing_stack()
        if any(entry[1] == key for entry in stack):
            raise RecursionError(
                f"rt.function '{self.__name__}' calls itself recursively with the same input signature "
                "while tracing; recursive Functions are not supported (use a loop).")
        stack.append((self, key))
        try:
            return self._traced_python_function()(*bound.args, **bound.kwargs)
        finally:
            stack.pop()

    # -- tracing -------------------------------------------------------------------------
    def _trace(self, bound, values):
        """Trace the Python function for arguments ``values`` (tensors replaced by placeholders)."""
        graph = Graph(self.__name__)
        names = [p.name for p in self._params]
        structured_inputs = []
        placeholder_args = []
        specs_for_signature = []
        with context.graph_scope(graph):
            for name, value in zip(names, values):
                def make(leaf, name=name):
                    if _is_tensor_leaf(leaf):
                        spec = _spec_of(leaf)
                        placeholder = graph.add_placeholder(name, spec.dtype, spec.shape)
                        specs_for_signature.append(TensorSpec(spec.shape, spec.dtype, placeholder.op.name))
                        return placeholder
                    if is_composite(leaf):
                        spec = spec_of(leaf)
                        return spec.from_components([graph.add_placeholder(name, s.dtype, s.shape)
                                                     for s in spec.component_specs])
                    return leaf
                placeholder_args.append(nest.map_structure(make, value) if nest.is_sequence(value) else make(value))
        structured_inputs = [_weak_leaves(nest.map_structure(lambda leaf: _spec_of(leaf) if _is_tensor_leaf(leaf)
                                                             else leaf, v)
                                          if nest.is_sequence(v) else (_spec_of(v) if _is_tensor_leaf(v) else v))
                             for v in values]
        arguments = dict(zip(names, placeholder_args))
        call_args, call_kwargs = [], {}
        if self._instance_ref is not None:
            call_args.append(self._instance_ref())
        for param in self._params:
            value = arguments[param.name]
            if param.kind is param.VAR_POSITIONAL:
                call_args.extend(value)
            elif param.kind is param.VAR_KEYWORD:
                call_kwargs.update(value)
            elif param.kind is param.KEYWORD_ONLY:
                call_kwargs[param.name] = value
            else:
                call_args.append(value)
        fn = self._traced_python_function()
        stack = context.tracing_stack()
        key = (self, tuple(_structure_key(v) for v in values))
        stack.append((self, key))
        self._created_variables = []
        try:
            with context.graph_scope(graph):
                result = fn(*call_args, **call_kwargs)
                outputs = _outputs_of(graph, result, self.__name__)
        except Exception as e:
            raise autograph.annotate_error(e)
        finally:
            stack.pop()
        if self._created_variables and self._tracing_count > 0:
            raise ValueError(
                f"rt.function '{self.__name__}' only supports singleton rt.Variables created on the first "
                "call: this call traced the function again and it created a new rt.Variable. Make sure "
                "the rt.Variable is only created once (e.g. `if self.v is None: self.v = rt.Variable(...)`) "
                "or create it outside rt.function.")
        graph.outputs = [t for t in nest.flatten(outputs) if t is not None]
        graph.finalized = True
        self._tracing_count += 1
        concrete = ConcreteFunction(graph, self, structured_inputs, outputs, specs_for_signature)
        if self._jit_compile:
            concrete = jit.compile_concrete(concrete)
        if concrete not in self._concrete:          # (jit_compile attached its native version already)
            self._concrete.append(concrete)
        if self.ledger_key is not None and _trace_hook is not None:
            _trace_hook(self, concrete)
        return concrete

    def get_concrete_function(self, *args, **kwargs) -> "ConcreteFunction":
        """The ConcreteFunction for these arguments (tensors, ``rt.TensorSpec``s or Python values); traces if new."""
        if self.input_signature is not None:
            if self._declared is None:
                if args or kwargs:
                    self._lookup_signature(args, kwargs)
                else:
                    bound = self._signature.bind_partial(*self._with_instance(()))
                    bound.apply_defaults()
                    self._declared = self._trace(bound, self._signature_structure(bound))
            return self._declared
        bound = self._bind(args, kwargs)
        values = self._argument_values(bound)
        key = tuple(_structure_key(v) for v in values)
        concrete = self._cache.get(key)
        if concrete is None:
            # Tensors: as a call does, an existing, more general trace serves them. A TensorSpec asks for that
            # signature: it is traced (the ahead-of-time build compiles each signature a module asks for, so a
            # static shape gets its own specialised native code even after a general one).
            asks = any(isinstance(leaf, TensorSpec) for leaf in nest.flatten(values))
            concrete = (None if asks else self._compatible(values)) or self._trace(bound, values)
            self._cache[key] = concrete
        return concrete

    def experimental_get_tracing_count(self) -> int:
        return self._tracing_count

    # -- the interface of the build, the AOT loader, jit_compile and the test plugin -------------------------
    @property
    def parameter_names(self) -> tuple:
        """The parameters' names, a method's ``self`` excluded."""
        return tuple(p.name for p in self._params)

    def call_arguments(self, values) -> tuple[list, dict]:
        """``(args, kwargs)`` that call this Function with ``values``, one per parameter as a signature's
        ``structured_inputs`` holds them (a ``*args`` parameter's value is the tuple of its arguments, a
        ``**kwargs`` one's the dict): what ``specialize(*args, **kwargs)`` takes for a recorded signature."""
        values = list(values)
        if len(values) != len(self._params):
            raise ValueError(f"{self.__name__}: {len(values)} values for {len(self._params)} parameters")
        args, kwargs = [], {}
        for param, value in zip(self._params, values):
            if param.kind is param.VAR_POSITIONAL:
                args.extend(value)
            elif param.kind is param.VAR_KEYWORD:
                kwargs.update(value)
            elif param.kind is param.KEYWORD_ONLY:
                kwargs[param.name] = value
            else:
                args.append(value)
        return args, kwargs

    @property
    def instance(self):
        """The instance a method is bound to (None for a plain Function or one not bound)."""
        return None if self._instance_ref is None else self._instance_ref()

    @property
    def autograph(self) -> bool:
        """Whether the Python function is converted (AutoGraph) before tracing."""
        return self._autograph

    def note_variable_created(self, variable) -> None:
        """This trace created ``variable`` (``runtime.context`` tells the Function being traced; a Function may
        create variables on its first trace only)."""
        self._created_variables.append(variable)

    def copy(self) -> "Function":
        """A new Function of the same Python function and options, sharing no trace with this one."""
        return Function(self.python_function, input_signature=self.input_signature, autograph=self._autograph,
                        reduce_retracing=self._reduce_retracing, name=self.__name__, jit_compile=self._jit_compile)

    def specialize(self, *args, **kwargs) -> "ConcreteFunction":
        """The concrete function for exactly these ``TensorSpec``s (and Python values), traced if new.

        For a Function with an ``input_signature`` the specs must fit it (same dtypes, dims equal or
        declared None): the result is a specialisation next to the declared signature, which calls whose
        tensors have exactly its shapes run instead (the build compiles the hot shapes a run recorded this
        way). Without an input_signature it is ``get_concrete_function``.
        """
        if self.input_signature is None:
            return self.get_concrete_function(*args, **kwargs)
        bound = self._bind(args, kwargs)
        values = self._argument_values(bound)
        declared = self._signature_structure(bound)
        try:
            pairs = [(v, w) for value, want in zip(values, declared)
                     for v, w in zip(nest.flatten_up_to(want, value), nest.flatten(want))]
        except ValueError as e:
            raise ValueError(f"{self.__name__}.specialize: {e}") from None
        for value, want in pairs:
            if isinstance(want, TensorSpec):
                if not isinstance(value, TensorSpec) or value.dtype is not want.dtype \
                        or not value.shape.is_subshape_of(want.shape):
                    raise ValueError(f"{self.__name__}.specialize: {value!r} does not fit the input_signature's "
                                     f"{want!r}")
            elif _leaf_key(value) != _leaf_key(want):
                raise ValueError(f"{self.__name__}.specialize: {value!r} differs from the fixed {want!r}")
        key = tuple(_structure_key(v) for v in values)
        if key == tuple(_structure_key(v) for v in declared):
            return self.get_concrete_function()        # the declared signature itself
        concrete = self._cache.get(key)
        if concrete is None:
            concrete = self._cache[key] = self._trace(bound, values)
            self._specialized.append(concrete)
            self._specialized.sort(key=_generality)
        return concrete

    def attach(self, concrete: "ConcreteFunction", native=None, specialized: bool = False) -> None:
        """Add a concrete function made elsewhere (a built module's, ``jit_compile``'s): calls with its signature
        run it, in place of one traced before for the same signature.

        ``native(arguments, convert_scalars)``, when given, makes the ``runtime._native.NativeFunction`` that
        ``__call__`` tries first, in C (``arguments``: per positional parameter, True for a tensor or
        ``(value,)`` for a fixed Python value; ``convert_scalars``: Python numbers convert to its 0-d tensors,
        as ``input_signature`` does). ``specialized``: an exact-shape specialisation of an input_signature
        (see ``specialize``), not the declared signature.
        """
        key = tuple(_structure_key(v) for v in concrete._structured_inputs)
        previous = self._cache.get(key)
        self._cache[key] = concrete
        if previous is not None and previous in self._concrete:
            self._concrete[self._concrete.index(previous)] = concrete
            self._fast.pop(id(previous), None)
        else:
            self._concrete.append(concrete)
        if self.input_signature is not None:
            if specialized:
                self._specialized = sorted([c for c in self._specialized if c is not previous] + [concrete],
                                           key=_generality)
            elif self._declared is None or self._declared is previous:
                self._declared = concrete
        if native is not None:
            arguments = self._fast_arguments(concrete._structured_inputs)
            if arguments is not None and isinstance(concrete.structured_outputs, SymbolicTensor):
                self._fast[id(concrete)] = native(arguments, self.input_signature is not None)
        self._fast_natives = [self._fast[id(c)] for c in sorted(self._concrete, key=_generality)
                              if id(c) in self._fast]

    def _fast_arguments(self, structured_inputs):
        """Per positional parameter: True for a tensor, (value,) for a fixed primitive; None if not that simple."""
        params = self._params
        if len(params) != len(structured_inputs) or any(
                p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
            return None
        out = []
        for value in structured_inputs:
            if isinstance(value, TensorSpec):
                out.append(True)
            elif isinstance(value, (int, float, bool, str, type(None))):
                out.append((value,))
            else:
                return None
        return out

    def pretty_printed_concrete_signatures(self, verbose=True) -> str:
        return "\n\n".join(c.pretty_printed_signature(verbose) for c in self._concrete)

    def concrete_functions(self) -> list["ConcreteFunction"]:
        return list(self._concrete)

    def specializations(self) -> list["ConcreteFunction"]:
        """With an input_signature: the exact-shape concrete functions next to the declared one (``specialize``)."""
        return list(self._specialized)

    def __repr__(self):
        return f"<rt.Function {self.__name__}>"

    # -- pickling -------------------------------------------------------------------------
    def __reduce__(self):
        """Pickle by reference, as functions are: the module and the attribute that hold this Function.
        Unpickling imports the module -- a built extension where there is one, so a worker process runs
        the native code -- and looks the Function up again."""
        module_name = getattr(self.python_function, "__module__", None)
        path = _attribute_path(sys.modules.get(module_name), self) if self._instance_ref is None else None
        if path is None:
            where = "a method bound to an instance" if self._instance_ref is not None else \
                f"not a module-level attribute (or class attribute) of module {module_name!r}"
            raise pickle.PicklingError(f"cannot pickle rt.function {self.__name__!r}: it is pickled by reference "
                                       f"(module and name), and it is {where}")
        return _function_by_reference, (module_name, path)


def _attribute_path(module, function) -> str | None:
    """``"name"`` or ``"Class.name"`` under which ``module`` holds ``function``, if it does."""
    if module is None:
        return None
    for name, value in vars(module).items():
        if value is function:
            return name
    for name, value in vars(module).items():
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if member is function:
                    return f"{name}.{attr}"
    return None


def _function_by_reference(module_name: str, path: str) -> "Function":
    """Unpickle a ``Function``: import its module and follow ``path`` (see ``Function.__reduce__``)."""
    value = importlib.import_module(module_name)
    for part in path.split("."):
        value = getattr(value, part)
    return value


if install_fast_call is None:
    Function.__call__ = Function._call_python
else:
    install_fast_call(Function)


def _to_tensor(value, dtype=None):
    if isinstance(value, Tensor):
        return value
    if isinstance(value, TensorSpec):
        return value
    return convert(value, dtype)


def input_arrays(tensors) -> list:
    """The arrays of a call's flat tensor arguments (eager tensors, or numpy values whose rt dtype the
    signature already matched), in native byte order."""
    return [t._value if type(t) is EagerTensor else native_order(np.asarray(t)) for t in tensors]


def _outputs_of(graph, result, name):
    """The traced return value as graph tensors passed through Identity (Python values become constants)."""
    def leaf(value):
        if value is None:
            return None
        if isinstance(value, TensorArray):
            value = value.stack()
        if isinstance(value, Variable):
            value = value.read_value()
        try:
            tensor = graph.internalize(convert(value))
        except (TypeError, ValueError) as e:
            raise TypeError(f"rt.function '{name}' returned {value!r}, which cannot be converted to a tensor: "
                            f"{e}") from None
        return apply("Identity", [tensor], name="Identity")
    if nest.is_sequence(result):
        return nest.map_structure(leaf, result)
    return leaf(result)


def _is_input(leaf) -> bool:
    """A structured-input leaf that the call feeds: a tensor spec, or a composite (dataset) spec."""
    return isinstance(leaf, TensorSpec) or (isinstance(leaf, _WeakLeaf) and leaf.key[0] == "composite")


def _describe_spec(spec) -> str:
    return f"{spec.dtype} Tensor, shape={spec.shape}"


def _describe_structure(value) -> str:
    if isinstance(value, TensorSpec):
        return _describe_spec(value)
    if isinstance(value, SymbolicTensor):
        return f"{value.dtype} Tensor, shape={value.shape}"
    if value is None:
        return "None"
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {_describe_structure(v)}]" for k, v in value.items()) + "]"
    if isinstance(value, tuple):
        return "Tuple[" + ", ".join(_describe_structure(v) for v in value) + "]"
    if isinstance(value, list):
        return "List[" + ", ".join(_describe_structure(v) for v in value) + "]"
    return repr(value)


class ConcreteFunction:
    """One traced graph of a Function for one input signature; callable on tensors."""

    native = False

    def __init__(self, graph: Graph, function: Function, structured_inputs: list, structured_outputs,
                 input_specs: list[TensorSpec]):
        self.graph = graph
        self._function = function
        self.name = function.__name__
        self._structured_inputs = structured_inputs
        self.structured_outputs = structured_outputs
        self._input_specs = input_specs
        self._param_names = [p.name for p in function._params]
        self._runner = None
        self.executor = execute           # runs the graph on arrays (the test plugin's reference run swaps it)

    # -- the interface of the build, the AOT loader, jit_compile and the test plugin -------------------------
    @property
    def function(self) -> Function:
        """The Function this concrete function is a signature of."""
        return self._function

    @property
    def signature(self) -> Signature:
        """The traced signature (see ``Signature``)."""
        return Signature(self._structured_inputs, self._input_specs, self.signature_text())

    @property
    def inputs(self) -> list:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list:
        return list(self.graph.outputs)

    @property
    def structured_input_signature(self):
        args = []
        index = iter(self._input_specs)
        for value in self._structured_inputs:
            if nest.is_sequence(value):
                args.append(nest.map_structure(lambda leaf: next(index) if isinstance(leaf, TensorSpec) else leaf,
                                               value))
            elif isinstance(value, TensorSpec):
                args.append(next(index))
            else:
                args.append(value)
        return (tuple(args), {})

    def _accepts(self, values, leaves) -> bool:
        """True when a call with these argument values fits this (possibly more general) signature."""
        if len(values) != len(self._structured_inputs):
            return False
        for value, expected in zip(values, self._structured_inputs):
            if nest.structure_key(value) != nest.structure_key(expected):
                return False
            for got, want in zip(nest.flatten(value), nest.flatten(expected)):
                if isinstance(want, TensorSpec):
                    if not _is_tensor_leaf(got):
                        return False
                    spec = _spec_of(got)        # a TensorSpec argument fits only a signature at least as general
                    if spec.dtype is not want.dtype or not spec.shape.is_subshape_of(want.shape):
                        return False
                elif _leaf_key(got) != _leaf_key(want):
                    return False
        return True

    # -- calling ----------------------------------------------------------------------------
    def _plain_specs(self):
        """(dtype, dims) per parameter when every parameter is one tensor, else None (computed once)."""
        plain = self.__dict__.get("_plain")
        if plain is None:
            values = self._structured_inputs
            plain = self._plain = [(v.dtype, v.shape.dims) for v in values] \
                if all(isinstance(v, TensorSpec) for v in values) and self._function._instance_ref is None \
                and len(values) == len(self._function._params) else False
        return plain

    def __call__(self, *args, **kwargs):
        plain = self._plain_specs()
        if plain and not kwargs and len(args) == len(plain):
            for a, (dtype, dims) in zip(args, plain):
                if type(a) is not EagerTensor or a.dtype is not dtype or (dims is not None and (
                        len(dims) != a._value.ndim
                        or any(d is not None and d != n for d, n in zip(dims, a._value.shape)))):
                    break
            else:
                return self._call_flat(args)
        params = self._function._params
        instance = self._function._with_instance(())
        signature = self.__dict__.get("_call_signature")
        if signature is None:
            signature = self._call_signature = inspect.Signature(params)
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"ConcreteFunction {self.name}: {e}") from None
        flat = []
        for param, fixed in zip(params, self._structured_inputs):
            if param.name not in bound.arguments:
                if nest.flatten(fixed) and any(isinstance(x, TensorSpec) for x in nest.flatten(fixed)):
                    raise TypeError(f"ConcreteFunction {self.name}: missing argument '{param.name}'")
                continue
            value = bound.arguments[param.name]
            try:
                got_leaves = nest.flatten_up_to(fixed, value)
            except ValueError as e:
                raise TypeError(f"ConcreteFunction {self.name}: argument '{param.name}': {e}") from None
            for got, want in zip(got_leaves, nest.flatten(fixed)):
                if isinstance(want, TensorSpec):
                    try:      # a Python or numpy value converts by the one rule (runtime.tensor.to_array)
                        tensor = _to_tensor(got, None if isinstance(got, Tensor) else want.dtype)
                    except (TypeError, ValueError) as e:
                        raise errors.InvalidArgumentError(
                            f"ConcreteFunction {self.name}: argument '{param.name}' must be a {want.dtype} tensor "
                            f"of shape {want.shape}: {e}") from None
                    if tensor.dtype is not want.dtype or not want.shape.is_compatible_with(tensor.shape):
                        raise errors.InvalidArgumentError(
                            f"ConcreteFunction {self.name}: argument '{param.name}' must be a {want.dtype} tensor "
                            f"of shape {want.shape}, got {tensor.dtype} of shape {tensor.shape}")
                    flat.append(tensor)
                elif _leaf_key(got) != _leaf_key(want):
                    raise TypeError(
                        f"ConcreteFunction {self.name}: argument '{param.name}' was fixed to {want!r} when the "
                        f"function was traced; got {got!r}. Trace a new ConcreteFunction for other values.")
                elif isinstance(got, CompositeValue):
                    flat.extend(got._components())
        del instance
        return self._call_flat(flat)

    def _call_flat(self, tensors):
        if context.tapes_active():
            return self._pack(_call_recorded(self, tensors))
        results = self.executor(self.graph, input_arrays(tensors))
        return self._pack(results)

    def _pack(self, results):
        outs = self.graph.outputs
        tensors = [r if type(r) is EagerTensor else EagerTensor(r, t.dtype) for r, t in zip(results, outs)]
        structure = self.structured_outputs
        if structure is None:
            return None
        if isinstance(structure, SymbolicTensor):
            return tensors[0]
        it = iter(tensors)
        return nest.map_structure(lambda leaf: None if leaf is None else next(it), structure)

    # -- printing -----------------------------------------------------------------------------
    def signature_text(self) -> str:
        """``f(x, n=3)``: the parameters, Python values fixed at trace time shown with their value."""
        parts = []
        for param, value in zip(self._function._params, self._structured_inputs):
            tensor_like = any(_is_input(x) for x in nest.flatten(value)) if nest.is_sequence(value) \
                else _is_input(value)
            parts.append(param.name if tensor_like else f"{param.name}={value!r}")
        return f"{self.name}({', '.join(parts)})"

    def pretty_printed_signature(self, verbose=True) -> str:
        lines = [self.signature_text(), "  Args:"]
        for param, value in zip(self._function._params, self._structured_inputs):
            tensor_like = any(_is_input(x) for x in nest.flatten(value)) if nest.is_sequence(value) \
                else _is_input(value)
            if tensor_like:
                lines.append(f"    {param.name}: {_describe_structure(value)}")
        lines += ["  Returns:", f"    {_describe_structure(self.structured_outputs)}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return "ConcreteFunction " + self.pretty_printed_signature()

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.signature_text()} at 0x{id(self):X}>"


def tape_graph(concrete) -> Graph:
    """The private copy of ``concrete``'s graph that calls under a gradient tape record (its gradient extends it
    with the values the backward graph uses)."""
    copy = concrete.__dict__.get("_tape_graph")
    if copy is None:
        copy = concrete._tape_graph = copy_graph(concrete.graph)
        copy.finalized = False
    return copy


def _call_recorded(concrete, tensors) -> list:
    """A call under a gradient tape: one recorded op (on a private copy of the graph, which the gradient extends)."""
    tensors = [t if isinstance(t, Tensor) else _to_tensor(t) for t in tensors]
    return call_graph(tape_graph(concrete), tensors, len(concrete.graph.outputs))


def function(func=None, *, input_signature=None, autograph=True, reduce_retracing=False,
             experimental_relax_shapes=None, jit_compile=None, name=None):
    """Make a ``Function`` from a Python function: as ``@rt.function``, ``@rt.function(...)`` or ``rt.function(f)``.

    ``jit_compile=True`` compiles each newly traced signature to native code at run time (cached on
    disk, see ``transpiler/jit.py``); without a C compiler it warns once and runs the generic executor.
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(fn):
        wrapped = Function(fn, input_signature=input_signature, autograph=autograph,
                           reduce_retracing=reduce_retracing, name=name, jit_compile=jit_compile)
        functools.update_wrapper(wrapped, fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"),
                                 updated=())
        return wrapped
    if func is None:
        return decorate
    return decorate(func)
