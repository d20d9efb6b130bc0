"""The runtime half of the ahead-of-time build: what a built extension module does on import.

``install`` runs the module's embedded source in the extension's namespace (so
everything the module defines works as before, with or without the ``.py``),
having first registered the built concrete functions: each ``Function`` created
by that source starts with its built signatures in its cache, running native code.
A signature nobody built retraces at run time as usual.

A built signature belongs to one Function, found again by its origin
(``runtime.polymorphic_function.Origin``: ``rt.function(f, [4096])`` and
``rt.function(f, [None])`` are two) when the source creates it; a method's belong
to the instance the build found at a path from the module's globals (``model``),
attached once the source has put it there. A signature whose native code could not
be generated runs its stored graph on the generic executor
(``GenericBuiltConcreteFunction``).

The signature ledger: each run-time trace of a built module's Function, and at exit
the shapes its shape-generic native code ran, are appended to the module's ledger
(``transpiler.cachedir.ledger_path``), which ``python -m transpiler build --from-ledger``
compiles; writing it never fails a call.
"""
from __future__ import annotations

import ast
import atexit
import contextlib
import hashlib
import json
import linecache
import os
import pickle
import re
import warnings
import weakref
import zlib

from runtime import autograph, context, tf_compat
from runtime._native import NativeFunction
from transpiler.cachedir import append_ledger, build_record, ledger_path
from runtime.dtypes import as_dtype
from runtime.graph import SymbolicTensor, all_operations
from runtime.ops.functional_ops import call_native, replayable
from runtime.polymorphic_function import (ConcreteFunction, Function, begin_module, input_arrays, set_prebuilt_hook,
                                          set_trace_hook, tape_graph)
from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor
from runtime.variables import Variable


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Loading:
    """What a built module hands the Functions its source creates while it imports (``install``)."""

    def __init__(self, name: str, module_globals: dict, ledger):
        self.name = name
        self.module_globals = module_globals
        self.ledger = ledger                  # the module's signature ledger (a path)
        self.pending: dict[str, list] = {}    # origin key -> entries of a Function the source creates
        self.methods: dict[tuple, list] = {}  # (class Function's key, instance path, attribute) -> entries
        self.labels: dict[str, str] = {}      # origin key -> the name the build found it under

    def ledger_key(self, key: str, label: str) -> tuple:
        """What a Function records its run-time traces under (``Function.ledger_key``)."""
        return (self.ledger, key, label)


_LOADING: dict[str, _Loading] = {}


def same_object(value):
    """``value`` itself: how a build's payload refers again to an array it pickled once
    (``transpiler.codegen.dumps_sharing``)."""
    return value


def install(module_globals: dict, payload: bytes, capsules: list) -> None:
    """Run the embedded module source in ``module_globals`` with the native functions attached."""
    # zlib-compressed since 2026-11; an extension built before embeds the pickle itself (it starts with PROTO)
    data = pickle.loads(payload if payload[:1] == pickle.PROTO else zlib.decompress(payload))
    name = module_globals["__name__"]
    source, filename = data["source"], data["filename"]
    _warn_if_stale(module_globals, data)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    autograph.register_prebuilt(data.get("conversions", {}))
    loading = _Loading(name, module_globals, ledger_path(filename, name))
    for entry in data["functions"]:
        index = entry.get("index")
        entry["capsule"] = None if index is None else capsules[index]
        entry["module_globals"] = module_globals
        key = entry.get("key") or f"{name}:{entry['qualname']}#0"   # (built before origin keys: one per qualname)
        loading.labels.setdefault(key, entry.get("label") or key)
        if entry.get("instance") is None:
            loading.pending.setdefault(key, []).append(entry)
        else:
            loading.methods.setdefault((key, entry["instance"], entry["attribute"]), []).append(entry)
    for method in data.get("methods", []):
        loading.methods.setdefault((method["key"], method["instance"], method["attribute"]), [])
    for key, label in data.get("labels", {}).items():
        loading.labels[key] = label
    module_globals["__rt_built__"] = {"source_hash": data["source_hash"], "version": data["version"]}
    code = compile(source, filename, "exec")
    begin_module(name)
    _LOADING[name] = loading
    try:
        # a module built with --tf-compat reads tensorflow and keras as rt while it imports, as its build did
        with tf_compat.aliased() if data.get("tf_compat") else contextlib.nullcontext():
            exec(code, module_globals)
        for slot in list(loading.methods):       # the instances the module's source left at their paths
            _attach_method(loading, slot)
    finally:
        _LOADING.pop(name, None)


def _warn_if_stale(module_globals, data) -> None:
    """Warn when a source the build read changed since: the ``.py`` beside the extension, or (from the
    build record in rt's cache, when this machine built the extension) the module's source and the local
    modules it imports."""
    extension = module_globals.get("__file__") or "."
    here = os.path.dirname(os.path.abspath(extension))
    py = os.path.join(here, os.path.basename(data["filename"]))
    changed = []
    if os.path.exists(py):
        with open(py, encoding="utf-8") as f:
            current = f.read()
        if source_hash(current) != data["source_hash"]:
            changed.append(py)
    changed += [path for path in changed_inputs(extension, module_globals["__name__"]) if path not in changed]
    if changed:
        warnings.warn(f"{module_globals['__name__']}: the compiled module is stale: {', '.join(changed)} changed "
                      "since it was built; rebuild it with `python -m transpiler build`",
                      RuntimeWarning, stacklevel=3)


def changed_inputs(extension: str, module_name: str) -> list[str]:
    """The source files recorded by the build of ``extension`` whose content changed since; empty when there
    is no record of this very extension file (built elsewhere, cache cleared). Removed files are not
    reported: the tree an ``-o`` build came from may be gone while the built tree is still in use."""
    try:
        with open(build_record(extension, module_name), encoding="utf-8") as f:
            record = json.load(f)
        installed = os.stat(extension)
    except (OSError, ValueError):
        return []
    if (record.get("extension_size"), record.get("extension_mtime_ns")) != (installed.st_size,
                                                                              installed.st_mtime_ns):
        return []
    changed = []
    for path, digest in record.get("inputs", {}).items():
        try:
            with open(path, "rb") as f:
                current = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue
        if current != digest:
            changed.append(path)
    return changed


def attach_prebuilt(function) -> None:
    """Preload the built signatures of a new Function (``Function.__init__`` and ``__get__`` call this hook)
    while its built module imports: by its origin (``runtime.polymorphic_function.Origin``), or, for a method
    bound to an instance the build found, by the instance's path from the module's globals."""
    if function.unbound is not None:
        origin = function.unbound.origin
        loading = _LOADING.get(origin.module) if origin is not None else None
        if loading is not None:
            for slot in [s for s in loading.methods if s[0] == origin.key]:
                _attach_method(loading, slot, function)
        return
    origin = function.origin
    loading = _LOADING.get(origin.module) if origin is not None else None
    if loading is None:
        return
    function.ledger_key = loading.ledger_key(origin.key, loading.labels.get(origin.key, origin.key))
    for entry in loading.pending.pop(origin.key, ()):
        _attach_entry(function, entry)


def _attach_method(loading: _Loading, slot: tuple, bound=None) -> None:
    """Attach the built signatures of method ``slot`` (class Function's key, instance path, attribute) to the
    Function bound to the instance at that path: ``bound`` when it is that, else the one the attribute gives."""
    key, path, attribute = slot
    try:
        instance = resolve_path(loading.module_globals, path)
    except (KeyError, AttributeError, IndexError, TypeError, ValueError):
        return                                   # not (yet) there
    if bound is None:
        try:
            bound = getattr(instance, attribute)
        except Exception:  # noqa: BLE001 - the user's class may raise anything from its attributes
            return
    if not isinstance(bound, Function) or bound.instance is not instance or bound.unbound is None \
            or bound.unbound.origin is None or bound.unbound.origin.key != key:
        return
    entries = loading.methods.pop(slot, ())
    bound.ledger_key = loading.ledger_key(f"{key}@{path}", f"{path}.{attribute}")
    for entry in entries:
        _attach_entry(bound, entry)


def _attach_entry(function, entry) -> None:
    if entry["capsule"] is None:       # its lowering failed at build time: the generic executor runs its graph
        function.attach(GenericBuiltConcreteFunction(function, entry), specialized=entry.get("specialized", False))
        return
    generic = any(spec.shape.rank is None or None in spec.shape.dims for spec in entry["input_specs"])
    entry["sample"] = generic and function.ledger_key is not None
    concrete = NativeConcreteFunction(function, entry)
    function.attach(concrete, native=concrete.fast_native, specialized=entry.get("specialized", False))
    if entry["sample"]:
        _SAMPLED.append((weakref.ref(function), weakref.ref(concrete)))


# ---------------------------------------------------------------------------
# The signature ledger: what the built module traced at run time, for ``build --from-ledger``.

def encode_signature(structured_inputs) -> list | None:
    """The JSON form of a signature's structured inputs (per parameter: ``{"spec": dims, "dtype": name}``, a
    Python value as ``{"value": v, "type": "float"}``, lists, tuples and str-keyed dicts of them); None when
    something in it has no such form (a dataset, an object)."""
    def encode(value):
        if isinstance(value, TensorSpec):
            dims = None if value.shape.rank is None else list(value.shape.dims)
            return {"spec": dims, "dtype": value.dtype.name}
        if value is None or isinstance(value, (bool, int, float, str)):
            return {"value": value, "type": type(value).__name__}
        if isinstance(value, (list, tuple)):
            return {type(value).__name__: [encode(v) for v in value]}
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {"dict": [[k, encode(v)] for k, v in value.items()]}
        raise TypeError(type(value).__name__)
    try:
        return [encode(v) for v in structured_inputs]
    except TypeError:
        return None


_PY_TYPES = {"bool": bool, "int": int, "float": float, "str": str, "NoneType": type(None)}


def decode_signature(encoded: list) -> list:
    """The arguments (``TensorSpec``s and Python values) of an encoded signature (``encode_signature``);
    ``ValueError`` when it is not one."""
    def decode(item):
        if not isinstance(item, dict) or len(item) not in (1, 2):
            raise ValueError(f"not an encoded signature item: {item!r}")
        if "dtype" in item:
            return TensorSpec(item["spec"], as_dtype(item["dtype"]))
        if "type" in item:
            kind, value = _PY_TYPES.get(item["type"]), item["value"]
            fits = kind is not None and (isinstance(value, kind) or (kind is float and isinstance(value, int)))
            if not fits:
                raise ValueError(f"not an encoded Python value: {item!r}")
            return None if value is None else kind(value)
        if "list" in item:
            return [decode(v) for v in item["list"]]
        if "tuple" in item:
            return tuple(decode(v) for v in item["tuple"])
        if "dict" in item:
            return {k: decode(v) for k, v in item["dict"]}
        raise ValueError(f"not an encoded signature item: {item!r}")
    if not isinstance(encoded, list):
        raise ValueError(f"not an encoded signature: {encoded!r}")
    try:
        return [decode(v) for v in encoded]
    except (TypeError, KeyError) as e:
        raise ValueError(f"not an encoded signature: {encoded!r} ({e})") from None


# Shape-generic native code counts the shapes it runs (``NativeFunction.seen``); when the process ends they go
# into the ledger, so that ``build --from-ledger`` can compile the hot ones as specialisations.
_SAMPLED: list[tuple] = []


def _record_calls() -> None:
    """The exit hook: each sampled function's shapes and calls into its module's ledger. Never raises."""
    for function_ref, concrete_ref in _SAMPLED:
        function, concrete = function_ref(), concrete_ref()
        try:
            native = concrete._native if concrete is not None else None
            if native is None or function is None or function.ledger_key is None:
                continue
            path, key, label = function.ledger_key
            for shapes, calls in native.seen():
                exact = iter(shapes)
                specs = [_with_shapes(value, exact) for value in concrete.signature.structured_inputs]
                signature = encode_signature(specs)
                if signature is not None:
                    append_ledger(path, {"function": key, "label": label, "signature": signature, "kind": "call",
                                         "count": calls})
        except Exception:  # noqa: BLE001, S112 - the ledger is advice: a process must exit whatever it holds
            continue


def _with_shapes(value, shapes):
    """``value`` (structured inputs) with each TensorSpec, in order, given the next of ``shapes``."""
    if isinstance(value, TensorSpec):
        return TensorSpec(next(shapes), value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_with_shapes(v, shapes) for v in value)
    if isinstance(value, dict):
        return {k: _with_shapes(v, shapes) for k, v in value.items()}
    return value


atexit.register(_record_calls)


def _record_trace(function, concrete) -> None:
    """The trace hook: a run-time trace of a built module's Function goes into the module's ledger. Never
    raises (a ledger that cannot be written is no reason to fail a call)."""
    try:
        path, key, label = function.ledger_key
        signature = encode_signature(concrete.signature.structured_inputs)
        if signature is not None:
            append_ledger(path, {"function": key, "label": label, "signature": signature, "kind": "trace",
                                 "count": 1})
    except Exception:  # noqa: BLE001, S110 - a ledger that cannot be written is no reason to fail a call
        pass


# ---------------------------------------------------------------------------
# Paths: where a built function's variables are found from the module's globals.
#
# A path is a global name followed by attribute and item steps, as Python spells them:
# ``model.layers[0].kernel``, ``opt._slots["m"][2]``. The build writes them (``format_path``); the
# built module follows them on its first call (``resolve_path``), creating a variable the build's trace
# created at the end of its path (``resolve_variable``).

_STEP = re.compile(r"""\.([A-Za-z_]\w*)|\[(-?\d+|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]""")


def format_path(name: str, steps) -> str:
    """``name`` then each step: ``("attr", "kernel")``, ``("item", 0)`` or ``("item", "m")``.

    Example:
        >>> format_path("opt", [("attr", "_slots"), ("item", "m"), ("item", 2)])
        "opt._slots['m'][2]"
    """
    text = name
    for kind, key in steps:
        text += f".{key}" if kind == "attr" else f"[{key!r}]"
    return text


def parse_path(path: str) -> tuple[str, list]:
    """The global name and the steps of ``path`` (the inverse of ``format_path``)."""
    head = re.match(r"[A-Za-z_]\w*", path)
    if head is None:
        raise ValueError(f"not a variable path: {path!r}")
    steps, at = [], head.end()
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:
            raise ValueError(f"not a variable path: {path!r} (at {path[at:]!r})")
        if step.group(1) is not None:
            steps.append(("attr", step.group(1)))
        else:
            steps.append(("item", ast.literal_eval(step.group(2))))
        at = step.end()
    return head.group(0), steps


def _step(value, kind: str, key):
    return getattr(value, key) if kind == "attr" else value[key]


def resolve_path(module_globals: dict, path: str):
    """Follow ``path`` (``"model.layers[0].kernel"``) from the module's globals."""
    name, steps = parse_path(path)
    value = module_globals[name]
    for kind, key in steps:
        value = _step(value, kind, key)
    return value


def _put(owner, kind: str, key, value) -> None:
    """``owner.key = value`` or ``owner[key] = value`` (a list grows to reach ``key``)."""
    if kind == "attr":
        setattr(owner, key, value)
    elif isinstance(owner, list) and isinstance(key, int) and key >= len(owner):
        owner.extend([None] * (key + 1 - len(owner)))
        owner[key] = value
    else:
        owner[key] = value


def resolve_variable(module_globals: dict, handle) -> Variable:
    """The variable a built function uses, found at its path; one the build's trace created (an optimizer's
    slot, made by the first step) is created again there, with the value it started with."""
    try:
        found = resolve_path(module_globals, handle.path)
    except (KeyError, AttributeError, IndexError, TypeError):
        found = None
    if isinstance(found, Variable):
        return found
    if handle.created is None:
        raise RuntimeError(f"the built module uses the variable {handle.name!r} at {handle.path!r}, which does not "
                           "exist (or is not an rt.Variable) now that the module is imported")
    name, steps = parse_path(handle.path)
    if not steps:
        raise RuntimeError(f"the built module uses the variable {handle.name!r} at {handle.path!r}, which its "
                           "first trace created; a module-level name cannot be created again")
    try:
        owner = module_globals[name]
        for kind, key in steps[:-1]:
            owner = _step(owner, kind, key)
    except (KeyError, AttributeError, IndexError, TypeError):
        raise RuntimeError(f"the built module uses the variable {handle.name!r} at {handle.path!r}, which its first "
                           "trace created; what should hold it does not exist now that the module is imported") \
            from None
    variable = Variable(handle.created["value"].copy(), trainable=handle.created["trainable"], name=handle.name)
    _put(owner, *steps[-1], variable)
    return variable


class NativeConcreteFunction(ConcreteFunction):
    """A concrete function whose calls run the generated native code."""

    native = True

    def __init__(self, function, entry):
        super().__init__(entry["graph"], function, entry["structured_inputs"], entry["structured_outputs"],
                         entry["input_specs"])
        self._entry = entry
        self._native = None
        self._replayable = None      # whether the gradient of a call under a tape may run the graph again
        self._warned = False

    def fast_native(self, arguments, convert_scalars: bool):
        """The NativeFunction ``Function.__call__`` tries first (see ``Function.attach``)."""
        return self._native_function(arguments, convert_scalars)

    def _native_function(self, arguments=None, convert_scalars=False):
        if self._native is None:
            entry = self._entry

            def resolve():
                for handle in entry["variables"]:
                    if handle.ref is None:
                        handle.bind(resolve_variable(entry["module_globals"], handle))
            self._native = NativeFunction(entry["capsule"], self.graph, all_operations(self.graph), entry["variables"],
                                          self.name, resolve=resolve,
                                          single_output=isinstance(self.structured_outputs, SymbolicTensor),
                                          needs_state=entry.get("callbacks", True),
                                          small=entry.get("small", False), arguments=arguments,
                                          convert_scalars=convert_scalars, sample=entry.get("sample", False))
        return self._native

    def _call_flat(self, tensors):
        native = self._native or self._native_function()
        if context.tapes_active():
            # Under a tape the native code runs too, recorded as one op whose gradient is the graph's backward
            # (functional_ops.call_native). A graph with side effects cannot run again for its gradient: it runs
            # once on the generic executor, keeping what the gradient needs (and says so, once).
            for handle in self._entry["variables"]:
                if handle.ref is None:
                    handle.bind(resolve_variable(self._entry["module_globals"], handle))
            if self._replayable is None:
                self._replayable = replayable(self.graph)
            if not self._replayable:
                self._warn_generic_under_tape()
                return ConcreteFunction._call_flat(self, tensors)
            tensors = [t if type(t) is EagerTensor else EagerTensor(a, s.dtype)
                       for t, a, s in zip(tensors, input_arrays(tensors), self.graph.inputs)]
            return self._pack(call_native(tape_graph(self), tensors, native.call, len(self.graph.outputs)))
        results = native.call(input_arrays(tensors))
        return self._pack(results)

    def _warn_generic_under_tape(self) -> None:
        if not self._warned:
            self._warned = True
            kinds = sorted({op.type for op in all_operations(self.graph) if op.opdef.stateful} - {"ReadVariableOp"})
            warnings.warn(f"{self.signature_text()}: under a GradientTape this built function runs on the generic "
                          f"executor, not its native code: its graph has effects ({', '.join(kinds)}) that its "
                          f"gradient could not run again", RuntimeWarning, stacklevel=4)


class GenericBuiltConcreteFunction(ConcreteFunction):
    """A built signature whose native code could not be generated (the build warned): its optimized graph,
    stored in the extension, runs on the generic executor, without tracing again."""

    native = False

    def __init__(self, function, entry):
        super().__init__(entry["graph"], function, entry["structured_inputs"], entry["structured_outputs"],
                         entry["input_specs"])
        self._entry = entry
        self._bound_variables = False

    def _call_flat(self, tensors):
        if not self._bound_variables:
            for handle in self._entry["variables"]:
                if handle.ref is None:
                    handle.bind(resolve_variable(self._entry["module_globals"], handle))
            self._bound_variables = True
        return ConcreteFunction._call_flat(self, tensors)


set_prebuilt_hook(attach_prebuilt)
set_trace_hook(_record_trace)
