"""Check a built module's native code against the traced graph and eager execution, on generated inputs.

For every built signature (a ``ConcreteFunction`` whose ``native`` is True) of every ``rt.function`` of a
module, hypothesis draws arguments from the signature (a ``TensorSpec([None, 3], rt.float32)`` gives
float32 arrays of shape ``(n, 3)``; fixed Python arguments stay fixed) and each draw is run three ways:

- **native**: the built signature (the generated C code);
- **traced**: the function traced again from its Python source, run on the reference executor (numpy);
- **eager**: the Python function run op by op (``rt.config.run_functions_eagerly(True)``).

The three must agree: same structure, dtypes and shapes, equal values (floats within a tolerance), or the
same error (except that eager may raise where the graphs do not: see ``compare_results``). Variables
reachable from the module are restored before each run, so functions that update
them are compared from the same state. Graphs that draw random numbers are compared by dtype and shape.

Example:
    >>> import examples.power as power                              # doctest: +SKIP
    >>> [s.label for s in built_signatures(power)]                  # doctest: +SKIP
    ['power_as_graph(x: int32[10,10], y=100)']
    >>> check(built_signatures(power)[0], max_examples=10)          # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
from types import ModuleType

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from runtime import config, errors, executor, nest
from runtime.graph import all_operations
from runtime.ops.array_ops import constant
from runtime.ops.random_ops import STATEFUL_RANDOM_OPS
from runtime.polymorphic_function import ConcreteFunction, Function
from runtime.shapes import TensorSpec
from runtime.tensor import Tensor
from runtime.variables import Variable

# Ops whose results differ from run to run: their outputs are compared by dtype and shape only.
RANDOM_OPS = frozenset(STATEFUL_RANDOM_OPS)

# Unknown dimensions and ranks are drawn this small: enough to exercise loops and broadcasting.
MAX_DIM = 4
MAX_RANK = 3

DEFAULT_EXAMPLES = 20
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6


class Mismatch(AssertionError):
    """A built signature disagreed with the traced or eager run (the message says where and on what)."""


@dataclasses.dataclass(frozen=True)
class BuiltSignature:
    """One built signature: ``module.name`` is the ``Function``, ``concrete`` its native concrete function."""
    module: ModuleType
    name: str
    function: Function
    concrete: ConcreteFunction

    @property
    def label(self) -> str:
        """``power_as_graph(x: int32[10,10], y=100)``."""
        args, _ = self.concrete.structured_input_signature
        params = self.function.parameter_names
        parts = []
        for param, value in zip(params, args):
            leaves = nest.flatten(value)
            if any(isinstance(leaf, TensorSpec) for leaf in leaves):
                shown = _spec_text(value) if isinstance(value, TensorSpec) else \
                    str(nest.map_structure(lambda v: _spec_text(v) if isinstance(v, TensorSpec) else repr(v), value))
                parts.append(f"{param}: {shown}")
            else:
                parts.append(f"{param}={value!r}")
        return f"{self.name}({', '.join(parts)})"

    @property
    def random(self) -> bool:
        return any(op.type in RANDOM_OPS for op in all_operations(self.concrete.graph))


def _spec_text(spec: TensorSpec) -> str:
    dims = spec.shape.dims
    if dims is None:
        return f"{spec.dtype.name}[*]"
    return f"{spec.dtype.name}[{','.join('None' if d is None else str(d) for d in dims)}]"


def is_built(module: ModuleType) -> bool:
    """True when ``module`` was loaded from an extension made by ``python -m transpiler build``."""
    return "__rt_built__" in vars(module)


def built_signatures(module: ModuleType) -> list[BuiltSignature]:
    """Every native concrete function of the module-level ``rt.function``s of ``module``."""
    found, seen = [], set()
    for name, value in vars(module).items():
        if not isinstance(value, Function) or id(value) in seen or value.instance is not None:
            continue
        if getattr(value.python_function, "__module__", None) != module.__name__:
            continue
        seen.add(id(value))
        found += [BuiltSignature(module, name, value, concrete) for concrete in value.concrete_functions()
                  if concrete.native]
    return sorted(found, key=lambda s: s.label)


# -- inputs ----------------------------------------------------------------------------------------------

def _elements(dtype) -> st.SearchStrategy:
    if dtype.name == "bool":
        return st.booleans()
    if dtype.is_integer:
        return st.integers(0 if dtype.name.startswith("uint") else -9, 9)
    if dtype.is_floating:
        width = {"float16": 16, "float32": 32}.get(dtype.name, 64)
        return st.floats(-4, 4, width=width, allow_nan=False, allow_infinity=False)
    if dtype.name == "string":
        return st.text("abcxyz", max_size=4).map(str.encode)
    raise TypeError(f"cannot generate values of dtype {dtype.name}")


def _shape(spec: TensorSpec) -> st.SearchStrategy:
    dims = spec.shape.dims
    if dims is None:
        return st.lists(st.integers(1, MAX_DIM), max_size=MAX_RANK).map(tuple)
    return st.tuples(*[st.just(d) if d is not None else st.integers(1, MAX_DIM) for d in dims])


def _tensor(spec: TensorSpec) -> st.SearchStrategy:
    np_dtype = np.dtype(object) if spec.dtype.name == "string" else np.dtype(spec.dtype.np)
    arrays = _shape(spec).flatmap(lambda shape: hnp.arrays(np_dtype, shape, elements=_elements(spec.dtype)))
    return arrays.map(lambda array: constant(array, dtype=spec.dtype))


def inputs_strategy(concrete: ConcreteFunction) -> st.SearchStrategy:
    """Argument tuples for ``concrete``: tensors drawn from its specs, its fixed Python values as they are."""
    args, _ = concrete.structured_input_signature

    def one(value):
        if isinstance(value, TensorSpec):
            return _tensor(value)
        if nest.is_sequence(value):
            leaves = [one(leaf) for leaf in nest.flatten(value)]
            return st.tuples(*leaves).map(lambda drawn, value=value: nest.pack_sequence_as(value, list(drawn)))
        return st.just(value)
    return st.tuples(*[one(value) for value in args])


# -- three runs ------------------------------------------------------------------------------------------

def module_variables(module: ModuleType) -> list[Variable]:
    """The ``rt.Variable``s at module level and in the attributes of module-level objects."""
    found: dict[int, Variable] = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, Variable):
            found.setdefault(id(value), value)
        elif hasattr(value, "__dict__") and not isinstance(value, (type, ModuleType)) and not callable(value):
            for member in vars(value).values():
                if isinstance(member, Variable):
                    found.setdefault(id(member), member)
    return list(found.values())


def graph_variables(graph) -> list[Variable]:
    """The variables a graph reads or updates, nested graphs included (a Keras layer's kernel, an optimizer's
    slots: found through the graph, wherever the program keeps them)."""
    found: dict[int, Variable] = {}
    for op in all_operations(graph):
        handle = op.attrs.get("variable")
        variable = handle.ref() if handle is not None and handle.ref is not None else None
        if variable is not None:      # a built graph binds its handles on its first call
            found.setdefault(id(variable), variable)
    return list(found.values())


def _traced_on_reference(sig: BuiltSignature) -> ConcreteFunction:
    """The signature traced again from the Python source, its calls run on the reference executor."""
    function = sig.function
    fresh = function.copy()
    args, _ = sig.concrete.structured_input_signature
    concrete = fresh.get_concrete_function() if function.input_signature is not None else \
        fresh.get_concrete_function(*args)
    concrete.executor = executor.run_graph
    return concrete


def _as_numpy(value):
    if value is None:
        return None
    if isinstance(value, (Tensor, Variable)):
        return ("tensor", np.asarray(value.numpy()))
    if nest.is_sequence(value):
        return nest.map_structure(lambda leaf: _as_numpy(leaf), value)
    return ("python", np.asarray(value))


def run_three_ways(sig: BuiltSignature, args: tuple, traced: ConcreteFunction | None = None) -> dict:
    """``{"native": result, "traced": result, "eager": result}``; a result is the output as numpy arrays or
    the exception raised. The variables of the module and those the function reads or updates start from the
    same values in every run and are restored."""
    traced = traced or _traced_on_reference(sig)
    variables = list({id(v): v for v in module_variables(sig.module) + graph_variables(sig.concrete.graph)
                      + graph_variables(traced.graph)}.values())
    saved = [v.numpy().copy() for v in variables]
    runs = {"native": lambda: sig.concrete(*args), "traced": lambda: traced(*args),
            "eager": lambda: sig.function(*args)}
    results = {}
    try:
        for mode, run in runs.items():
            for variable, value in zip(variables, saved):
                variable.assign(value)
            previous = config.functions_run_eagerly()
            config.run_functions_eagerly(mode == "eager")
            try:
                results[mode] = _as_numpy(run())
            except (errors.OpError, ValueError, TypeError, ArithmeticError, IndexError, RuntimeError) as error:
                results[mode] = error
            finally:
                config.run_functions_eagerly(previous)
    finally:
        for variable, value in zip(variables, saved):
            variable.assign(value)
    return results


# -- comparing -------------------------------------------------------------------------------------------

def _differences(name: str, got, want, rtol: float, atol: float, values: bool) -> list[str]:
    """How ``got`` differs from the reference ``want`` (both from ``_as_numpy``); empty when they agree."""
    if isinstance(got, BaseException) or isinstance(want, BaseException):
        if isinstance(got, BaseException) and isinstance(want, BaseException):
            return []
        error, other = (got, "returned a value") if isinstance(got, BaseException) else (want, "raised nothing")
        side = name if isinstance(got, BaseException) else "the reference"
        return [f"{side} raised {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''} "
                f"while the other {other}"]
    if got is None or want is None:
        return [] if got is None and want is None else [f"{name}: {got!r} vs {want!r}"]
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str):
        if not (isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], str)):
            return [f"{name}: a tensor where the reference has {type(want).__name__}"]
        (got_kind, a), (want_kind, b) = got, want
        strict = got_kind == "tensor" and want_kind == "tensor"   # an eager Python value has no dtype to match
        if strict and a.dtype != b.dtype:
            return [f"{name}: dtype {a.dtype} vs {b.dtype}"]
        if a.shape != b.shape and (strict or a.size != b.size):
            return [f"{name}: shape {a.shape} vs {b.shape}"]
        if not values:
            return []
        a, b = a.reshape(b.shape), b
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            same = np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            same = a == b
        same = np.asarray(same)
        if same.all():
            return []
        index = tuple(int(i) for i in np.argwhere(~same)[0]) if same.ndim else ()
        return [f"{name}: {int((~same).sum())} of {same.size} elements differ; at {list(index)}: "
                f"{a[index].tolist()!r} vs {b[index].tolist()!r}"]
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in
                _differences(f"{name}[{i}]", g, w, rtol, atol, values)]
    if isinstance(got, dict) and isinstance(want, dict) and got.keys() == want.keys():
        return [d for k in got for d in _differences(f"{name}[{k!r}]", got[k], want[k], rtol, atol, values)]
    return [f"{name}: structure {type(got).__name__} vs {type(want).__name__}"]


def compare_results(results: dict, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
                    values: bool = True) -> list[str]:
    """The disagreements of ``run_three_ways`` results: native vs traced (strictly: values, dtypes, shapes,
    errors), native vs eager (values, dtypes and shapes of the tensors eager returns). When eager raises but
    the traced graph and the native code both return, that is not a disagreement: graphs run only the ops
    their outputs need (non-strict execution), so an error in an unused op does not happen there."""
    problems = [f"native vs traced: {d}" for d in
                _differences("output", results["native"], results["traced"], rtol, atol, values)]
    pruned_error = isinstance(results["eager"], BaseException) and not any(
        isinstance(results[mode], BaseException) for mode in ("native", "traced"))
    if not pruned_error:
        problems += [f"native vs eager: {d}" for d in
                     _differences("output", results["native"], results["eager"], rtol, atol, values)]
    return problems


def _describe(args: tuple) -> str:
    def one(value):
        if isinstance(value, Tensor):
            return np.array2string(np.asarray(value.numpy()), threshold=20, separator=", ")
        return repr(value)
    return ", ".join(one(a) if not nest.is_sequence(a) else str(nest.map_structure(one, a)) for a in args)


def check(sig: BuiltSignature, max_examples: int = DEFAULT_EXAMPLES, rtol: float = DEFAULT_RTOL,
          atol: float = DEFAULT_ATOL, derandomize: bool = False) -> None:
    """Run ``sig`` three ways on ``max_examples`` generated inputs; raise ``Mismatch`` on a disagreement."""
    traced = _traced_on_reference(sig)
    values = not sig.random

    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(inputs_strategy(sig.concrete))
    def agree(args):
        problems = compare_results(run_three_ways(sig, args, traced), rtol, atol, values)
        if problems:
            raise Mismatch(f"{sig.module.__name__}.{sig.label} on ({_describe(args)}):\n  " + "\n  ".join(problems))

    try:
        agree()
    except Mismatch as mismatch:
        raise Mismatch(str(mismatch)) from None

