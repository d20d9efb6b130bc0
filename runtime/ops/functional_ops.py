"""``PartitionedCall``: a traced function called as one op, and its gradient (another traced graph).

A Function called eagerly under a gradient tape runs through ``call_graph``: the tape records one
``PartitionedCall`` op. Its gradient is a backward graph built once per forward graph by
differentiating the forward graph symbolically; the forward graph then also returns the values the
backward graph uses (TensorFlow's forward/backward function pair), so nothing is recomputed.
Called under a tape itself, the backward graph is recorded the same way (higher-order gradients).

A built function called under a tape runs its native code through ``call_native``: the tape records one
``NativeCall`` op. Native code returns only the function's outputs, so the op's gradient first runs the
forward graph again on the same inputs and on the variable values the call read (kept by
``Variable.snapshot``), for the values the backward graph uses, then runs the same backward graph. A graph
with side effects or random numbers cannot run again: ``replayable`` tells its caller to use
``call_graph`` instead.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from runtime import context
from runtime.executor import execute
from runtime.graph import Graph, all_operations
from runtime.ops.gradients import (backprop, differentiable_dtype, graph_variables_read, or_zeros,
                                   report_variable_gradient)
from runtime.ops.registry import OpDef, apply, gradient, register
from runtime.tensor import EagerTensor


def _call_infer(specs, attrs):
    return [(t.dtype, t.shape.dims) for t in attrs["f"].outputs]


def _call_kernel(inputs, attrs):
    return tuple(execute(attrs["f"], list(inputs)))


register(OpDef("PartitionedCall", "PartitionedCall", _call_infer, _call_kernel, None, foldable=False))


@dataclass
class _Backward:
    """A backward graph of a forward graph, and how their inputs and outputs line up."""
    graph: Graph               # inputs: one weight per weighted forward output, then saved forward values
    weighted: list             # indices of the forward outputs that take a weight
    sources: list              # indices of the forward inputs that get a gradient (in output order)
    handles: list              # variables that get a gradient (after the sources)


@dataclass
class _Pair:
    """What a forward graph returns for its backward graph, and the backward graphs built so far."""
    num_outputs: int           # the forward graph's own outputs (the saved values follow them)
    first: _Backward           # weights for the forward graph's own outputs
    full: _Backward | None = None   # weights for the saved values too (gradients of gradients)


_PAIRS: "weakref.WeakKeyDictionary[Graph, _Pair]" = weakref.WeakKeyDictionary()


def _build_backward(forward: Graph, weighted: list) -> _Backward:
    """Differentiate ``forward``'s outputs ``weighted`` with respect to its inputs and the variables it reads."""
    inputs = forward.all_inputs()
    candidates = [j for j, t in enumerate(inputs) if differentiable_dtype(t.dtype)]
    handles = list(graph_variables_read(forward).values())
    backward = Graph(f"{forward.name}_grad", outer_graph=forward)
    with context.graph_scope(backward):
        weights = [backward.add_placeholder(f"grad_{k}", forward.outputs[k].dtype, forward.outputs[k].shape)
                   for k in weighted]
        grads, variable_grads = backprop(list(forward.operations), [forward.outputs[k] for k in weighted], weights,
                                         [inputs[j] for j in candidates], handles)
        sources = [j for j, g in zip(candidates, grads) if g is not None]
        kept = [h for h in handles if variable_grads.get(id(h)) is not None]
        outputs = [g for g in grads if g is not None] + [variable_grads[id(h)] for h in kept]
        backward.outputs = [backward.internalize(g) for g in outputs]
    backward.finalized = True
    return _Backward(backward, weighted, sources, kept)


def _pair_of(forward: Graph) -> _Pair:
    """The backward graph of ``forward`` (built once); ``forward`` then also returns what the backward graph
    uses of it (TensorFlow's forward/backward function pair: nothing is recomputed)."""
    found = _PAIRS.get(forward)
    if found is None:
        num_outputs = len(forward.outputs)
        first = _build_backward(forward, [k for k, t in enumerate(forward.outputs) if differentiable_dtype(t.dtype)])
        forward.outputs = list(forward.outputs) + [outer for outer, _ in first.graph.captures]
        forward.drop_plans()
        found = _PAIRS[forward] = _Pair(num_outputs, first)
    return found


def _full_backward(forward: Graph, pair: _Pair) -> _Backward:
    """The backward graph that also takes gradients of the saved values (needed by higher-order gradients)."""
    if pair.full is None:
        full = _build_backward(forward, [k for k, t in enumerate(forward.outputs) if differentiable_dtype(t.dtype)])
        available = {id(t) for t in forward.outputs}
        if any(id(outer) not in available for outer, _ in full.graph.captures):
            raise NotImplementedError(f"the gradient of a gradient of '{forward.name}' needs values the forward "
                                      "function did not save")
        pair.full = full
    return pair.full


def call_graph(graph: Graph, tensors: list, num_outputs: int | None = None) -> list:
    """Run ``graph`` eagerly on ``tensors`` (inputs then captures); under a tape that watches them (or a
    variable the graph reads), as one recorded ``PartitionedCall`` op. Returns the first
    ``num_outputs`` results (default: all of the graph's outputs)."""
    if num_outputs is None:
        num_outputs = len(graph.outputs)
    if context.tapes_active():
        handles = graph_variables_read(graph)
        context.variables_accessed([h.get() for h in handles.values()])
        if context.tapes_watch(tensors, handles.values()):
            _pair_of(graph)
            out = apply("PartitionedCall", list(tensors), {"f": graph})
            out = list(out) if isinstance(out, tuple) else [out]
            return out[:num_outputs]
    arrays = [t._value if isinstance(t, EagerTensor) else np.asarray(t) for t in tensors]
    results = execute(graph, arrays)
    return [EagerTensor(r, t.dtype) for r, t in zip(results[:num_outputs], graph.outputs)]


@gradient("PartitionedCall")
def _call_grad(op, *grads):
    return _backward(op.attrs["f"], len(op.inputs), list(op.outputs), grads)


def _backward(forward: Graph, num_inputs: int, outputs: list, grads) -> list:
    """The gradients of a call of ``forward`` (with ``num_inputs`` inputs) that gave ``outputs`` (its own outputs,
    then the values its backward graph uses), for the gradients ``grads`` of its outputs."""
    pair = _pair_of(forward)
    higher = any(g is not None for g in grads[pair.num_outputs:])
    info = _full_backward(forward, pair) if higher else pair.first
    weights = [or_zeros(grads[k] if k < len(grads) else None, outputs[k]) for k in info.weighted]
    saved = {id(t): value for t, value in zip(forward.outputs, outputs)}
    feeds = weights + [saved[id(outer)] for outer, _ in info.graph.captures]
    results = call_graph(info.graph, feeds, len(info.sources) + len(info.handles))
    out = [None] * num_inputs
    for j, g in zip(info.sources, results):
        out[j] = g
    for h, g in zip(info.handles, results[len(info.sources):]):
        report_variable_gradient(h, g)
    return out


# ---------------------------------------------------------------------------
# Built native code under a tape.

_REPLAYABLE_STATEFUL = {"ReadVariableOp", "Assert", "CheckNumerics"}     # reads and checks: the same again


def replayable(graph: Graph) -> bool:
    """Whether running ``graph`` again gives what its first run gave, with no effect of its own: no variable
    update, print, Python callback, data source or random number, in it or in its subgraphs."""
    return all(not op.opdef.stateful or op.type in _REPLAYABLE_STATEFUL for op in all_operations(graph))


def _native_call_infer(specs, attrs):
    return [(t.dtype, t.shape.dims) for t in attrs["f"].outputs[:attrs["num_outputs"]]]


def _native_call_kernel(inputs, attrs):
    return tuple(attrs["run"](list(inputs)))


register(OpDef("NativeCall", "NativeCall", _native_call_infer, _native_call_kernel, None, stateful=True,
               foldable=False))


_READS: "weakref.WeakKeyDictionary[Graph, dict]" = weakref.WeakKeyDictionary()   # the variables a graph reads


def call_native(graph: Graph, tensors: list, run, num_outputs: int) -> list:
    """Run a built function's native code, ``run(arrays) -> arrays`` (its ``num_outputs`` outputs), on ``tensors``;
    under a tape that watches them (or a variable ``graph`` reads), recorded as one ``NativeCall`` op whose
    gradient is ``graph``'s backward. ``graph`` (replayable, see ``replayable``) is a private copy of the function's
    graph that the backward may extend with outputs, as ``call_graph``'s."""
    arrays = [t._value for t in tensors]
    if context.tapes_active():
        handles = _READS.get(graph)
        if handles is None:
            handles = _READS[graph] = graph_variables_read(graph)
        variables = [h.get() for h in handles.values()]
        context.variables_accessed(variables)
        if context.tapes_watch(tensors, handles.values()):
            # the values the call reads, for the gradient's replay (a later update writes another array)
            snapshot = {id(v): v.snapshot() for v in variables}
            out = apply("NativeCall", list(tensors), {"f": graph, "run": run, "num_outputs": num_outputs,
                                                      "variables": snapshot})
            return list(out) if isinstance(out, tuple) else [out]
    return [EagerTensor(r, t.dtype) for r, t in zip(run(arrays), graph.outputs[:num_outputs])]


@gradient("NativeCall")
def _native_call_grad(op, *grads):
    forward = op.attrs["f"]
    _pair_of(forward)       # the forward graph returns what the backward graph uses
    with context.variable_values(op.attrs["variables"]):
        replay = call_graph(forward, list(op.inputs))
        return _backward(forward, len(op.inputs), replay, grads)
