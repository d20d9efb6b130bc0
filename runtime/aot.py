"""The runtime half of the ahead-of-time build: what a built extension module does on import.

``install`` runs the module's embedded source in the extension's namespace (so
everything the module defines works as before, with or without the ``.py``),
having first registered the built concrete functions: each ``Function`` created
by that source starts with its built signatures in its cache, running native code.
A signature nobody built retraces at run time as usual.
"""
from __future__ import annotations

import ast
import hashlib
import json
import linecache
import os
import pickle
import re
import warnings
import zlib

from runtime import autograph, context
from runtime._native import NativeFunction
from runtime.cachedir import build_record
from runtime.graph import SymbolicTensor, all_operations
from runtime.ops.functional_ops import call_native, replayable
from runtime.polymorphic_function import ConcreteFunction, _structure_key, input_arrays, set_prebuilt_hook, tape_graph
from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor
from runtime.variables import Variable

_PENDING: dict[tuple[str, str], list] = {}


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def install(module_globals: dict, payload: bytes, capsules: list) -> None:
    """Run the embedded module source in ``module_globals`` with the native functions attached."""
    # zlib-compressed since 2026-11; an extension built before embeds the pickle itself (it starts with PROTO)
    data = pickle.loads(payload if payload[:1] == pickle.PROTO else zlib.decompress(payload))
    name = module_globals["__name__"]
    source, filename = data["source"], data["filename"]
    _warn_if_stale(module_globals, data)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    autograph.register_prebuilt(data.get("conversions", {}))
    for entry in data["functions"]:
        entry["capsule"] = capsules[entry["index"]]
        entry["module_globals"] = module_globals
        _PENDING.setdefault((name, entry["qualname"]), []).append(entry)
    module_globals["__rt_built__"] = {"source_hash": data["source_hash"], "version": data["version"]}
    code = compile(source, filename, "exec")
    try:
        exec(code, module_globals)
    finally:
        for entry in data["functions"]:
            _PENDING.pop((name, entry["qualname"]), None)


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
    """Preload the built signatures of this Python function (``Function.__init__`` calls it: the hook below)."""
    python_function = function.python_function
    key = (getattr(python_function, "__module__", None), getattr(python_function, "__qualname__", None))
    entries = _PENDING.get(key)
    if not entries or function._instance_ref is not None:
        return
    for entry in entries:
        concrete = NativeConcreteFunction(function, entry)
        function._concrete.append(concrete)
        function._cache[tuple(_structure_key(v) for v in entry["structured_inputs"])] = concrete
        arguments = _fast_arguments(function, entry["structured_inputs"])
        if arguments is not None and isinstance(entry["structured_outputs"], SymbolicTensor):
            function._fast_natives.append(concrete._native_function(arguments))


def _fast_arguments(function, structured_inputs):
    """Per positional parameter: True for a tensor, (value,) for a fixed primitive; None if not that simple."""
    params = function._params
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

    def _native_function(self, arguments=None):
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
                                          small=entry.get("small", False), arguments=arguments)
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
            warnings.warn(f"{self._signature_text()}: under a GradientTape this built function runs on the generic "
                          f"executor, not its native code: its graph has effects ({', '.join(kinds)}) that its "
                          f"gradient could not run again", RuntimeWarning, stacklevel=4)


set_prebuilt_hook(attach_prebuilt)
