"""Code generation for the ahead-of-time build: a module's traced graphs -> a C extension module.

``render_module`` collects every built signature of the module's ``rt.function``s, optimizes each
graph (``runtime.optimizer``), lowers it to loop nests (``transpiler.lowering``), prints them as C
(``transpiler.codegen.c``), and renders the extension's C (its CPython glue and the header of the
generated functions) from ``templates/``.
``emit_function`` does the middle part for one graph (what a JIT needs).
"""
from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import types
import zlib
from dataclasses import dataclass, field

from runtime import autograph, nest, version
from runtime.graph import all_operations
from runtime.aot import format_path
from runtime.polymorphic_function import ConcreteFunction, Function
from runtime.variables import Variable

from runtime.optimizer import optimize
from transpiler.codegen.flags import arch_flags
from transpiler.codegen.c import render_function
from transpiler.lowering import Report, lower_function
from transpiler import conversion
from transpiler.codegen.render import render

KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(version.__file__)), "kernels")     # runtime/kernels

# -fno-strict-aliasing and -fwrapv: generated code relies on neither type-based aliasing nor signed
# overflow being undefined (integer tensors wrap, as in numpy).
# -ffp-contract=off: a fused chain rounds each multiply and add as numpy's separate ops do (GCC contracted
# x * y + z into one FMA, so built code disagreed with eager code in the last bit, and a Mandelbrot loop's
# escape counts with it); the matmul and convolution kernels keep their FMAs (RT_FMA_KERNEL in rt_kernels.h).
COMPILE_ARGS = ["-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fno-strict-aliasing",
                "-fwrapv", "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-label",
                "-Wno-unused-but-set-variable"] + arch_flags()
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
    report: list = field(default_factory=list)


def module_functions(module) -> list[tuple[str, Function]]:
    """The module's Functions (module-level and class attributes), by qualified name."""
    found = []
    for name, value in sorted(vars(module).items()):
        if isinstance(value, Function) and getattr(value.python_function, "__module__", None) == module.__name__:
            found.append((value.python_function.__qualname__, value))
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in sorted(vars(value).items()):
                if isinstance(member, Function):
                    found.append((member.python_function.__qualname__, member))
    return found


PATH_DEPTH = 8              # attribute/item steps followed from a global to find a variable
PATH_OBJECTS = 50_000      # objects visited at most (a module holding a huge structure stays cheap)


def _variable_paths(module) -> dict[int, str]:
    """id(variable) -> the shortest path to it from the module's globals (``model.layers[0].kernel``).

    Breadth first from the globals (in definition order), through the attributes of any object (callables
    included: a Keras model is one), list and tuple items and dict values under str/int keys, at most
    ``PATH_DEPTH`` steps deep. Modules, classes, functions and ``rt.function``s are not entered (what they
    hold is no place a built module could find again). ``runtime.aot.resolve_path`` follows the same syntax.
    """
    paths: dict[int, str] = {}
    seen: set[int] = set()
    level = [(value, name, []) for name, value in vars(module).items() if not name.startswith("__")]
    for _ in range(PATH_DEPTH + 1):
        following = []
        for value, name, steps in level:
            if id(value) in seen or len(seen) >= PATH_OBJECTS:
                continue
            seen.add(id(value))
            if isinstance(value, Variable):
                paths.setdefault(id(value), format_path(name, steps))
                continue
            for kind, key, member in _members(value)[:PATH_OBJECTS]:
                following.append((member, name, steps + [(kind, key)]))
        level = following
    return paths


_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, Function,
           ConcreteFunction, str, bytes, int, float, complex, bool, type(None))


def _members(value) -> list:
    """(kind, key, member) of what a path may step into from ``value``."""
    if isinstance(value, _OPAQUE):
        return []
    if isinstance(value, (list, tuple)):
        return [("item", i, v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [("item", k, v) for k, v in value.items() if isinstance(k, (str, int)) and not isinstance(k, bool)]
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict):
        return []
    return [("attr", k, v) for k, v in attributes.items() if isinstance(k, str) and k.isidentifier()]


EMITTER_PASSES = ("fuse_elementwise", "plan_memory")   # done while lowering, switchable like graph passes


def emit_function(graph, c_name: str, fuse_elementwise: bool = True, plan_memory: bool = True,
                  debug: list | None = None) -> tuple[str, list, Report]:
    """C for ``static int c_name(rt_ctx *ctx, rt_tensor *in, rt_tensor *out)`` computing ``graph``.

    Returns (C code, the variable handles whose storage follows the inputs, in order, the report:
    ops run through Python callbacks and ops fused). ``debug``, when given, gets the loop IR text.
    """
    lowered = lower_function(graph, c_name, fuse=fuse_elementwise, plan_memory=plan_memory)
    if debug is not None:
        debug.append(str(lowered.ir))
    return render_function(lowered.ir), lowered.variables, lowered.report


def render_module(module, source_path: str, module_name: str, passes=None) -> RenderedModule:
    """Generate the extension for an imported module (see the module docstring).

    ``passes`` (names, or None for all) selects graph passes (``runtime.optimizer.PASSES``) and the
    emitter's ``fuse_elementwise`` / ``plan_memory``.
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
    functions = module_functions(module)
    for _, function in functions:
        if function._autograph:
            autograph.convert(function.python_function)   # embedded, so run-time retraces skip the converter
        if function.input_signature is not None and not function.concrete_functions():
            function.get_concrete_function()
    # after every trace: a trace may create variables (an optimizer's slots, a layer's weights)
    paths = _variable_paths(module)
    functions_c, entries, report = [], [], []
    for qualname, function in functions:
        for concrete in function.concrete_functions():
            if getattr(concrete, "native", False):
                continue
            index = len(entries)
            graph = optimize(concrete.graph, passes=graph_passes)
            structured_outputs = remap_outputs(concrete, graph)
            loops = [] if os.environ.get("RT_DEBUG") else None
            code, variables, function_report = emit_function(graph, f"rt_fn_{index}", debug=loops, **emit_options)
            if loops is not None:
                title = f"# {qualname}: {concrete._signature_text()}"
                debug.append(f"{title}\n## traced\n{concrete.graph}\n## optimized\n{graph}\n")
                debug_loops.append(f"{title}\n{loops[0]}\n")
            for handle in variables:
                variable = handle.get()
                path = paths.get(id(variable))
                if path is None:
                    raise ValueError(
                        f"{qualname}: the rt.Variable {variable.name!r} it uses is not reachable from the module's "
                        f"globals (through at most {PATH_DEPTH} attributes, list items or dict values), so the built "
                        "module could not find it again at import")
                handle.path = path
            functions_c.append(f"/* {concrete._signature_text()} */\n{code}")
            entries.append({"index": index, "qualname": qualname, "graph": graph,
                            "structured_inputs": concrete._structured_inputs,
                            "structured_outputs": structured_outputs,
                            "input_specs": concrete._input_specs, "variables": list(variables),
                            "callbacks": bool(function_report.callbacks),
                            "small": not function_report.callbacks and is_small(graph)})
            before, after = len(all_operations(concrete.graph)), len(all_operations(graph))
            line = f"  {concrete._signature_text()}: {before} nodes, {after} after optimization"
            if function_report.fused:
                line += f", {function_report.fused} ops fused"
            if function_report.groups:
                line += f", {function_report.groups} row groups"
            if function_report.callbacks:
                line += ", through Python: " + ", ".join(
                    f"{k} x{v}" for k, v in sorted(function_report.callbacks.items()))
            report.append(line)
    # compressed: pickled graphs compress about 7 times (the extension is assembled from the file as it is)
    payload = zlib.compress(pickle.dumps({"source": source, "filename": os.path.abspath(source_path),
                            "conversions": _conversions(source_path),
                            "source_hash": hashlib.sha256(source.encode("utf-8")).hexdigest(),
                            "version": version.__version__, "functions": entries}, protocol=4), 6)
    header_name = f"{short}_rt_native.h"
    header = render("native.h.tmpl", source_name=("c_comment", os.path.basename(source_path)),
                    functions=("raw", "\n\n".join(functions_c)),
                    table=("raw", ", ".join(f"(void *)rt_fn_{i}" for i in range(len(entries))) or "NULL"),
                    count=("raw", str(len(entries))))
    glue = render("module.c.tmpl", source_name=("c_comment", os.path.basename(source_path)),
                  module_name_comment=("c_comment", module_name), module_name=("c_string", module_name),
                  init_name=("ident", short), header=("c_string", header_name),
                  payload_file=("c_string", f"{short}.payload"))
    files = {f"{short}.c": glue, header_name: header, f"{short}.payload": payload}
    if debug:
        files[f"{short}.graphs.txt"] = "\n".join(debug)
        files[f"{short}.loops.txt"] = "\n".join(debug_loops)
    return RenderedModule(name=module_name, files=files, source=f"{short}.c",
                          include_dirs=[KERNELS_DIR], extra_compile_args=list(COMPILE_ARGS),
                          extra_link_args=list(LINK_ARGS), report=report)


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

