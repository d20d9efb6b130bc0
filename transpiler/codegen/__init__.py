"""Code generation for the ahead-of-time build: a module's traced graphs -> a C extension module.

``render_module`` collects every built signature of the module's ``rt.function``s (``targets.build_targets``:
module-level ones, methods of the instances the module creates, Functions stored on objects), optimizes each
graph (``runtime.optimizer``), lowers it to loop nests (``transpiler.lowering``), prints them as C
(``transpiler.codegen.c``), and renders the extension's C (its CPython glue and the header of the
generated functions) from ``templates/``. A signature that fails to trace or lower is reported (``Failure``)
and, when its graph exists, embedded without native code: the built module runs it on the generic executor, and
the module's other signatures are native as usual.
``emit_function`` does the middle part for one graph (what a JIT needs).
"""
from __future__ import annotations

import hashlib
import io
import marshal
import os
import pickle
import traceback
import zlib
from dataclasses import dataclass, field

import numpy as np

from runtime import autograph, nest, version
from runtime.aot import decode_signature, same_object
from runtime.graph import Operation, all_operations
from runtime.optimizer import optimize
from runtime.shapes import TensorSpec
from transpiler import conversion
from transpiler.codegen.c import render_function
from transpiler.codegen.flags import compile_args
from transpiler.codegen.render import render
from transpiler.codegen.targets import PATH_DEPTH, build_targets, variable_paths
from transpiler.lowering import Report, lower_function
from transpiler.lowering.function import BLOB_MIN_BYTES

_variable_paths = variable_paths       # (the name the tests of the paths know)

KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(version.__file__)), "kernels")     # runtime/kernels

# -fno-strict-aliasing and -fwrapv: generated code relies on neither type-based aliasing nor signed
# overflow being undefined (integer tensors wrap, as in numpy).
# -ffp-contract=off: a fused chain rounds each multiply and add as numpy's separate ops do (GCC contracted
# x * y + z into one FMA, so built code disagreed with eager code in the last bit, and a Mandelbrot loop's
# escape counts with it); the matmul and convolution kernels keep their FMAs (RT_FMA_KERNEL in rt_kernels.h).
COMPILE_ARGS = compile_args()
LINK_ARGS = ["-fopenmp", "-lm"]


@dataclass
class RenderedModule:
    """Files for one extension module and how to compile them."""
    name: str
    files: dict           # file name -> text (or bytes), written into the build's source directory
    source: str           # the main file among them: C, or Cython (.pyx) that is translated to C first
    include_dirs: list = field(default_factory=list)
    extra_compile_args: list = field(default_factory=list)
    extra_link_args: list = field(default_factory=list)
    libraries: list = field(default_factory=list)
    kernel_library: str | None = None   # the kernel headers' directory: link its archive (build/kernel_library.py)
    report: list = field(default_factory=list)
    failures: list = field(default_factory=list)   # Failure: signatures without native code, and why
    notes: list = field(default_factory=list)      # rt.functions with nothing to compile, and why
    callbacks: dict = field(default_factory=dict)  # signature -> {op type: ops} run through Python callbacks
    titles: dict = field(default_factory=dict)     # line of the native header -> the function starting there


class CompilerRejected(Exception):
    """The C compiler rejected a function's generated code (``render_module(exclude=...)``): a code generator
    bug, which costs that signature its native code, not the module its build."""


EMITTER_PASSES = ("fuse_elementwise", "plan_memory")   # done while lowering, switchable like graph passes


def emit_function(graph, c_name: str, fuse_elementwise: bool = True, plan_memory: bool = True,
                  debug: list | None = None, blobs: dict | None = None) -> tuple[str, list, Report]:
    """C for ``static int c_name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)`` computing ``graph``.

    Returns (C code, the variable handles whose storage follows the inputs, in order, the report:
    ops run through Python callbacks and ops fused). ``debug``, when given, gets the loop IR text.
    """
    lowered = lower_function(graph, c_name, fuse=fuse_elementwise, plan_memory=plan_memory)
    if debug is not None:
        debug.append(str(lowered.ir))
    return render_function(lowered.ir, blobs), lowered.variables, lowered.report


@dataclass
class Failure:
    """A signature the build could not compile to native code (or could not trace), and where."""
    function: str              # the Function as the user names it (``scale``, ``model.__call__``)
    signature: str             # ``scale(x: float32[None])``
    stage: str                 # "trace" or "lower"
    type: str
    message: str
    file: str | None = None
    line: int | None = None
    op: str | None = None      # ``op 'Sum' (Sum) created at File ..., line 3, in f`` when an op failed
    fallback: bool = False     # its optimized graph is stored: the generic executor runs it without a trace

    def text(self) -> str:
        """``models.py:5: center(x: float32[3,1]): ValueError: Sum has no element rule (op 'Sum' (Sum)); ...``"""
        where = f"{self.file}:{self.line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        op = f" (op {self.op.split(' created at ')[0][3:]})" if self.op else ""
        if self.stage == "trace":
            then = "calls with this signature trace at run time and raise it"
        elif self.fallback:
            then = "this signature runs its optimized graph on the generic executor (not native)"
        else:
            then = "this signature is traced at run time and runs on the generic executor"
        return f"{where}{self.signature}: {self.type}: {self.message}{op}; {then}"


def render_module(module, source_path: str, module_name: str, passes=None, ledger=None,
                  tf_compat: bool = False, exclude: dict | None = None) -> RenderedModule:
    """Generate the extension for an imported module (see the module docstring).

    ``passes`` (names, or None for all) selects graph passes (``runtime.optimizer.PASSES``) and the
    emitter's ``fuse_elementwise`` / ``plan_memory``. ``ledger`` maps a Function's ledger key to the
    encoded signatures (``runtime.aot.encode_signature``) to build for it besides its own: the
    signatures a run of the built module traced (``build --from-ledger``). ``tf_compat``: the module is written
    against ``import tensorflow as tf``; the built module runs its source with ``tensorflow`` and ``keras``
    meaning rt (``runtime.tf_compat``), as the build did.

    A signature that fails to trace or to lower does not fail the module: it is listed in the result's
    ``failures`` with its function, op and line, and (when its graph exists) embedded without native code,
    so the generic executor runs it. ``notes`` name the ``rt.function``s that have nothing to compile.
    ``exclude`` maps functions' titles (``RenderedModule.titles``) to the C compiler's error in their code: those
    signatures are rendered without native code, as failures of the "compile" stage.
    """
    if passes is None and os.environ.get("RT_PASSES"):
        passes = os.environ["RT_PASSES"]
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    graph_passes = None if passes is None else [p for p in passes if p not in EMITTER_PASSES]
    emit_options = {name: passes is None or name in passes for name in EMITTER_PASSES}
    debug, debug_loops = [], []
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    short = module_name.rsplit(".", 1)[-1]
    targets, notes = build_targets(module)
    failures: list[Failure] = []
    for target in targets:
        _trace_target(target, (ledger or {}).get(target.ledger_key, ()), source_path, failures, notes)
    # after every trace: a trace may create variables (an optimizer's slots, a layer's weights)
    paths = variable_paths(module)
    functions_c, entries, report = [], [], []
    blobs: dict = {}          # big constants' bytes, embedded by the header's .incbin lines
    methods, callbacks = [], {}
    for target in targets:
        function = target.function
        if target.path is not None:
            methods.append({"key": target.key, "instance": target.path, "attribute": target.attribute})
        concretes = [c for c in function.concrete_functions() if not c.native]
        if not concretes:
            if not any(f.function == target.label for f in failures):
                notes.append(f"{target.label}: not compiled: no input_signature and no concrete function at import: "
                             "traced at run time; use --from-ledger after a first run")
            continue
        specialized = {id(c) for c in function.specializations()}
        for concrete in concretes:
            entry = {"key": target.key, "instance": target.path, "attribute": target.attribute,
                     "label": target.label, "specialized": id(concrete) in specialized,
                     "structured_inputs": concrete.signature.structured_inputs,
                     "input_specs": concrete.signature.input_specs}
            index = len(functions_c)
            loops = [] if os.environ.get("RT_DEBUG") else None
            graph = concrete.graph
            title = f"{target.label}: {concrete.signature_text()}"
            try:
                graph = optimize(concrete.graph, passes=graph_passes)
                structured_outputs = remap_outputs(concrete, graph)
                if exclude and title in exclude:
                    raise CompilerRejected(exclude[title])
                code, variables, function_report = emit_function(graph, f"rt_fn_{index}", debug=loops,
                                                                 blobs=blobs, **emit_options)
                _set_paths(target, variables, paths)
            except Exception as error:  # noqa: BLE001 - reported with the signature; the rest still builds
                stage = "compile" if isinstance(error, CompilerRejected) else "lower"
                failures.append(_failure(target, concrete, stage, error, source_path))
                if _fallback(entry, concrete, graph, paths):
                    failures[-1].fallback = True
                    entries.append(entry)
                continue
            if loops is not None:
                debug.append(f"# {title}\n## traced\n{concrete.graph}\n## optimized\n{graph}\n")
                debug_loops.append(f"# {title}\n{loops[0]}\n")
            functions_c.append((title, f"/* {title} */\n{code}"))
            entry.update({"index": index, "graph": graph, "structured_outputs": structured_outputs,
                          "variables": list(variables), "callbacks": function_report.calls_python(),
                          "small": not function_report.calls_python() and is_small(graph)})
            entries.append(entry)
            before, after = len(all_operations(concrete.graph)), len(all_operations(graph))
            line = f"  {_signature_label(target, concrete)}: {before} nodes, {after} after optimization"
            if function_report.fused:
                line += f", {function_report.fused} ops fused"
            if function_report.groups:
                line += f", {function_report.groups} row groups"
            if function_report.callbacks:
                line += ", through Python: " + ", ".join(
                    f"{k} x{v}" for k, v in sorted(function_report.callbacks.items()))
                callbacks[_signature_label(target, concrete)] = dict(function_report.callbacks)
            report.append(line)
    # compressed: pickled graphs compress about 7 times (the extension is assembled from the file as it is)
    payload = zlib.compress(dumps_sharing({"source": source, "filename": os.path.abspath(source_path),
                            "conversions": _conversions(source_path),
                            "source_hash": hashlib.sha256(source.encode("utf-8")).hexdigest(),
                            "version": version.__version__, "functions": entries, "methods": methods,
                            "labels": {t.key: t.label for t in targets if t.path is None},
                            "tf_compat": tf_compat}), 6)
    header_name = f"{short}_rt_native.h"
    functions_text = "\n\n".join(code for _, code in functions_c)
    header = render("native.h.tmpl", source_name=("c_comment", os.path.basename(source_path)),
                    functions=("raw", functions_text),
                    table=("raw", ", ".join(f"(void *)rt_fn_{i}" for i in range(len(functions_c))) or "NULL"),
                    count=("raw", str(len(functions_c))))
    glue = render("module.c.tmpl", source_name=("c_comment", os.path.basename(source_path)),
                  module_name_comment=("c_comment", module_name), module_name=("c_string", module_name),
                  init_name=("ident", short), header=("c_string", header_name),
                  payload_file=("c_string", f"{short}.payload"))
    titles, first = {}, header.index(functions_text) if functions_c else 0
    line = header.count("\n", 0, first) + 1
    for title, code in functions_c:
        titles[line] = title
        line += code.count("\n") + 2
    files = {f"{short}.c": glue, header_name: header, f"{short}.payload": payload, **blobs}
    if debug:
        files[f"{short}.graphs.txt"] = "\n".join(debug)
        files[f"{short}.loops.txt"] = "\n".join(debug_loops)
    return RenderedModule(name=module_name, files=files, source=f"{short}.c",
                          include_dirs=[KERNELS_DIR], extra_compile_args=list(COMPILE_ARGS),
                          extra_link_args=list(LINK_ARGS), kernel_library=KERNELS_DIR, report=report,
                          failures=failures, notes=notes, callbacks=callbacks, titles=titles)


class _SharingPickler(pickle.Pickler):
    """Pickles equal big arrays once: the graphs of functions that capture one array hold a copy each (four
    functions iterating a dataset over a 12.8 MB array made a 59 MB extension); later copies are pickled as a
    reference to the first (``runtime.aot.same_object``)."""

    def __init__(self, file):
        super().__init__(file, protocol=4)
        self._first: dict = {}

    def reducer_override(self, obj):
        if type(obj) is np.ndarray and obj.nbytes >= BLOB_MIN_BYTES and not obj.dtype.hasobject:
            data = np.ascontiguousarray(obj)
            key = (data.dtype.str, data.shape, hashlib.sha256(data.view(np.uint8).reshape(-1)).digest())
            first = self._first.setdefault(key, obj)
            if first is not obj:
                return same_object, (first,)
        return NotImplemented


def dumps_sharing(value) -> bytes:
    """``pickle.dumps(value)`` with equal big arrays stored once (``_SharingPickler``)."""
    buffer = io.BytesIO()
    _SharingPickler(buffer).dump(value)
    return buffer.getvalue()


def _signature_label(target, concrete) -> str:
    """``scale(x: float32[None])`` for the build's report."""
    return describe_signature(target.label, concrete.signature.structured_inputs, concrete.function.parameter_names)


def describe_signature(label: str, structured_inputs, names) -> str:
    """``scale(x: float32[None], n=3)``: the Function as the user names it, with its argument types."""
    def leaf(value):
        if isinstance(value, TensorSpec):
            dims = value.shape.dims
            return f"{value.dtype.name}[*]" if dims is None else \
                f"{value.dtype.name}[{', '.join('None' if d is None else str(d) for d in dims)}]"
        return repr(value)
    parts = []
    for name, value in zip(names, structured_inputs):
        if any(isinstance(v, TensorSpec) for v in nest.flatten(value)):
            shown = leaf(value) if isinstance(value, TensorSpec) else str(nest.map_structure(leaf, value))
            parts.append(f"{name}: {shown}")
        else:
            parts.append(f"{name}={value!r}")
    return f"{label}({', '.join(parts)})"


def _trace_target(target, ledger_signatures, source_path: str, failures: list, notes: list) -> None:
    """Trace what ``target`` builds beyond its import-time concrete functions: its input_signature, and the
    signatures the ledger recorded for it. A declared signature that fails to trace is a ``Failure``; a recorded
    one (the code may have changed since) a note."""
    function = target.function
    if function.autograph:
        try:
            autograph.convert(function.python_function)   # embedded, so run-time retraces skip the converter
        except Exception:  # noqa: BLE001, S110 - the trace below reports it, with the line
            pass
    if function.input_signature is not None:
        try:
            function.get_concrete_function()
        except Exception as error:  # noqa: BLE001
            text = describe_signature(target.label, function.input_signature, function.parameter_names)
            failures.append(_failure(target, None, "trace", error, source_path, text))
    for encoded in ledger_signatures:
        try:
            arguments = decode_signature(encoded)
            args, kwargs = function.call_arguments(arguments)      # one value per parameter: *args splatted
        except ValueError:
            continue                                       # (a ledger line from another version)
        try:
            function.specialize(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - the ledger is advice: what no longer traces is left out
            text = describe_signature(target.label, arguments, function.parameter_names)
            notes.append(f"{text}: recorded in the ledger, not compiled: it does not trace now "
                         f"({type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]})")


def _fallback(entry: dict, concrete, graph, paths: dict) -> bool:
    """Complete ``entry`` as a signature without native code, whose graph the generic executor runs; False when
    the built module could not find a variable it uses (the signature is then traced at run time)."""
    handles, seen = [], set()
    for op in all_operations(graph):
        handle = op.attrs.get("variable")
        if handle is not None and id(handle) not in seen:
            seen.add(id(handle))
            handles.append(handle)
    for handle in handles:
        path = paths.get(id(handle.get()))
        if path is None:
            return False
        handle.path = path
    entry.update({"index": None, "graph": graph, "structured_outputs": remap_outputs(concrete, graph),
                  "variables": handles, "callbacks": True, "small": False})
    return True


def _set_paths(target, variables, paths: dict) -> None:
    for handle in variables:
        variable = handle.get()
        path = paths.get(id(variable))
        if path is None:
            raise ValueError(
                f"{target.label}: the rt.Variable {variable.name!r} it uses is not reachable from the module's "
                f"globals (through at most {PATH_DEPTH} attributes, list items or dict values), so the built "
                "module could not find it again at import")
        handle.path = path


def _failure(target, concrete, stage: str, error: BaseException, source_path: str, signature: str | None = None):
    """The ``Failure`` of ``error``: the op that failed (the innermost frame holding one, with the line that
    created it), else the innermost line of the module's source in the traceback."""
    op = None
    tb = error.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("op")
        if isinstance(candidate, Operation):
            op = candidate
        tb = tb.tb_next
    file, line = None, None
    if op is not None and op.location is not None:
        file, line = op.location.filename, op.location.lineno
    else:
        source = os.path.abspath(source_path)
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if os.path.abspath(frame.f_code.co_filename) == source:
                file, line = source_path, lineno
        if file is None and isinstance(error, SyntaxError) and error.filename:
            file, line = error.filename, error.lineno
    message = (str(error).strip().splitlines() or [""])[0]
    if signature is None:
        signature = describe_signature(target.label, concrete.signature.structured_inputs,
                                       concrete.function.parameter_names)
    return Failure(target.label, signature, stage,
                   type(error).__name__, message, file or source_path, line, op.where() if op is not None else None)


def remap_outputs(concrete, graph):
    """The concrete function's output structure over the optimized graph's output tensors."""
    position = {id(t): i for i, t in enumerate(concrete.graph.outputs)}
    structure = concrete.structured_outputs
    if structure is None:
        return None
    if not nest.is_sequence(structure):
        return graph.outputs[position[id(structure)]]
    return nest.map_structure(lambda t: None if t is None else graph.outputs[position[id(t)]], structure)


def is_small(graph, limit: int = 4096) -> bool:
    """Straight-line code over a few static elements: the GIL is cheaper to keep than to release (the
    rule of the build and of ``jit_compile``)."""
    total = 0
    for op in graph.operations:
        if op.subgraphs() or op.type == "MatMul":
            return False
        for t in op.outputs:
            if not t.shape.is_fully_defined():
                return False
            total += t.shape.num_elements()
    return total <= limit


def _conversions(source_path: str) -> dict:
    """The AutoGraph conversions of this file's functions, compiled: a run-time retrace needs no converter."""
    return {key: (marshal.dumps(converted.module_code), converted.code)
            for key, converted in conversion.conversions_in_file(source_path).items()}

