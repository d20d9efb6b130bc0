"""The runtime half of the ahead-of-time build: what a built extension module does on import.

``install`` runs the module's embedded source in the extension's namespace (so
everything the module defines works as before, with or without the ``.py``),
having first registered the built concrete functions: each ``Function`` created
by that source starts with its built signatures in its cache, running native code.
A signature nobody built retraces at run time as usual.
"""
from __future__ import annotations

import hashlib
import linecache
import os
import pickle
import warnings

from runtime.graph import SymbolicTensor
from runtime.polymorphic_function import ConcreteFunction, _structure_key

_PENDING: dict[tuple[str, str], list] = {}


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def install(module_globals: dict, payload: bytes, capsules: list) -> None:
    """Run the embedded module source in ``module_globals`` with the native functions attached."""
    data = pickle.loads(payload)
    name = module_globals["__name__"]
    source, filename = data["source"], data["filename"]
    _warn_if_stale(module_globals, data)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    from runtime import autograph
    autograph.register_prebuilt(data.get("conversions", {}))
    # what a run-time retrace needs, loaded with the module rather than on the first unseen call
    import runtime.executor  # noqa: F401
    import runtime.operators  # noqa: F401
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
    here = os.path.dirname(os.path.abspath(module_globals.get("__file__") or "."))
    py = os.path.join(here, os.path.basename(data["filename"]))
    if not os.path.exists(py):
        return
    with open(py, encoding="utf-8") as f:
        current = f.read()
    if source_hash(current) != data["source_hash"]:
        warnings.warn(f"{module_globals['__name__']}: the compiled module is stale: {py} changed since it was "
                      "built; rebuild it with `python -m transpiler build`", RuntimeWarning, stacklevel=3)


def attach_prebuilt(function) -> None:
    """Called by ``Function.__init__``: preload the built signatures of this Python function."""
    python_function = function.python_function
    key = (getattr(python_function, "__module__", None), getattr(python_function, "__qualname__", None))
    entries = _PENDING.get(key)
    if not entries or function._instance_ref is not None:
        return
    from runtime.graph import SymbolicTensor
    for entry in entries:
        concrete = NativeConcreteFunction(function, entry)
        function._concrete.append(concrete)
        function._cache[tuple(_structure_key(v) for v in entry["structured_inputs"])] = concrete
        arguments = _fast_arguments(function, entry["structured_inputs"])
        if arguments is not None and isinstance(entry["structured_outputs"], SymbolicTensor):
            function._fast_natives.append(concrete._native_function(arguments))


def _fast_arguments(function, structured_inputs):
    """Per positional parameter: True for a tensor, (value,) for a fixed primitive; None if not that simple."""
    from runtime.shapes import TensorSpec
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


def resolve_path(module_globals: dict, path: str):
    """Follow ``"model.v"`` from the module's globals."""
    head, *rest = path.split(".")
    value = module_globals[head]
    for part in rest:
        value = getattr(value, part)
    return value


class NativeConcreteFunction(ConcreteFunction):
    """A concrete function whose calls run the generated native code."""

    native = True

    def __init__(self, function, entry):
        super().__init__(entry["graph"], function, entry["structured_inputs"], entry["structured_outputs"],
                         entry["input_specs"])
        self._entry = entry
        self._native = None

    def _native_function(self, arguments=None):
        if self._native is None:
            from runtime._native import NativeFunction
            entry = self._entry

            def resolve():
                for handle in entry["variables"]:
                    if handle.ref is None:
                        handle.bind(resolve_path(entry["module_globals"], handle.path))
            self._native = NativeFunction(entry["capsule"], self.graph, op_table(self.graph), entry["variables"],
                                          self.name, resolve=resolve,
                                          single_output=isinstance(self.structured_outputs, SymbolicTensor),
                                          needs_state=entry.get("callbacks", True),
                                          small=entry.get("small", False), arguments=arguments)
        return self._native

    def _call_flat(self, tensors):
        from runtime.polymorphic_function import input_arrays
        native = self._native or self._native_function()
        results = native.call(input_arrays(tensors))
        return self._pack(results)


def op_table(graph) -> list:
    """Every op of a graph and its subgraphs in the order the code generator numbered them."""
    from runtime.graph import Graph
    table: list = []

    def walk(g):
        for op in g.operations:
            table.append(op)
            for _, sub in sorted((k, v) for k, v in op.attrs.items() if isinstance(v, Graph)):
                walk(sub)
    walk(graph)
    return table
