"""Reverse-mode differentiation over recorded ops: ``backprop``, and what gradient functions share.

Each differentiable op has one gradient function beside its definition (``@gradient("Mul")`` in
``runtime/ops/*_ops.py``), registered in the op table. ``backprop`` walks ops in reverse creation
order and calls those functions; they build their results with the public op API, so the same code
runs eagerly (a tape's recorded eager ops) and while tracing (ops of a graph: the backward pass is
then a graph like the forward one, optimized and compiled alike).

Gradients with respect to variables: ``ReadVariableOp``'s gradient reports the gradient of the value
read with ``report_variable_gradient``; ops that read variables inside their subgraphs (``If``,
``While``, ``PartitionedCall``) report what their inner backward pass found.

A gradient function may refer to tensors of a graph that is not an ancestor of the graph it builds
into (the body of a loop being differentiated): ``Graph.resolver`` of the gradient graph supplies
stand-ins (e.g. the values a forward loop accumulated, one per iteration).

Example:
    >>> import runtime as rt
    >>> from runtime.ops import math_ops
    >>> x = rt.constant(3.0)
    >>> with rt.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> float(tape.gradient(y, x))
    6.0
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

from runtime import context, dtypes
from runtime.graph import Graph, SymbolicTensor
from runtime.ops import array_ops, math_ops
from runtime.ops.registry import get_opdef
from runtime.tensor_array import list_add, list_zeros_like


def differentiable_dtype(dtype) -> bool:
    """Gradients flow through floating and complex tensors and TensorArray lists (``variant``), not integers or
    bools."""
    return dtype.is_floating or dtype.is_complex or dtype is dtypes.variant


def zeros_like(tensor):
    """A zero gradient for ``tensor`` (an empty list of the same length for a TensorArray list)."""
    if tensor.dtype is dtypes.variant:
        return list_zeros_like(tensor)
    return array_ops.zeros_like(tensor)


def or_zeros(grad, tensor):
    """``grad``, or a zero gradient for ``tensor`` when nothing depends on it (``grad`` is None)."""
    return zeros_like(tensor) if grad is None else grad


def add(a, b):
    """The sum of two gradients of one tensor (item-wise for TensorArray lists)."""
    return list_add(a, b) if a.dtype is dtypes.variant else math_ops.add(a, b)


def with_shape_of(grad, tensor):
    """``grad`` (a gradient of ``tensor``) stating ``tensor``'s static shape where its own shape rule lost it (the
    gradient of ``x[:, 2]`` for an ``x`` of shape [1, None] is built from ``rt.shape(x)``: (None, None)): a sum of
    such gradients in a backward loop then keeps the shape its loop variable has."""
    if not isinstance(grad, SymbolicTensor) or grad.dtype is dtypes.variant or tensor.shape.rank is None:
        return grad
    if grad.shape == tensor.shape or not grad.shape.is_compatible_with(tensor.shape):
        return grad
    shape = grad.shape.merge_with(tensor.shape)
    if shape == grad.shape:
        return grad
    graph = context.current_graph() or grad.op.graph
    return graph.create_op(get_opdef("Identity"), [graph.internalize(grad)], name="gradient_shape",
                           output_specs=[(grad.dtype, shape.dims)]).outputs[0]


def aggregate(parts: list):
    """The sum of the partial gradients of one tensor (None when there are none)."""
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = add(total, part)
    return total


# ---------------------------------------------------------------------------
# Variables read by an op (also inside its subgraphs).

def variable_handle(handle):
    """The handle that stands for a variable in gradients: the variable's own (a built module's graphs hold
    handles of their own, bound to the same variables when the module imports)."""
    ref = getattr(handle, "ref", None)
    variable = ref() if ref is not None else None
    own = getattr(variable, "handle", None)
    return own if own is not None else handle


def variables_read(op) -> dict:
    """``{id(handle): handle}`` of the variables ``op`` reads, itself or in its subgraphs (recursively)."""
    found: dict = {}
    if op.type == "ReadVariableOp":
        handle = variable_handle(op.attrs["variable"])
        found[id(handle)] = handle
    for sub in op.subgraphs():
        found.update(graph_variables_read(sub))
    return found


def graph_variables_read(graph: Graph) -> dict:
    """``{id(handle): handle}`` of the variables read anywhere in ``graph``."""
    found: dict = {}
    for op in graph.operations:
        if op.type == "ReadVariableOp" or op.subgraphs():
            found.update(variables_read(op))
    return found


# ---------------------------------------------------------------------------
# Gradients of variables, reported by the ops that read them.

class _Frames(threading.local):
    def __init__(self):
        self.stack: list[dict] = []


_frames = _Frames()


def report_variable_gradient(handle, grad) -> None:
    """Add ``grad`` to the gradient of the variable behind ``handle`` in the backward pass being built."""
    if grad is None or not _frames.stack:
        return
    handle = variable_handle(handle)
    entry = _frames.stack[-1].setdefault(id(handle), (handle, []))
    entry[1].append(grad)


# ---------------------------------------------------------------------------
# The backward pass.

def backprop(ops: Iterable, targets: list, target_grads: list, sources: list, variables: Iterable = ()):
    """Gradients of ``targets`` (weighted by ``target_grads``) with respect to ``sources`` and ``variables``.

    Args:
        ops: the recorded ops, in the order they were created (eager ops of a tape, or operations of a
            graph); only those on a path from a source (or a read of a variable) to a target are used.
        targets: tensors to differentiate.
        target_grads: one gradient per target (the weight of each target element).
        sources: tensors to differentiate with respect to.
        variables: variable handles to differentiate with respect to.

    Returns:
        ``(grads, variable_grads)``: one gradient per source (None when a source does not reach any
        target), and ``{id(handle): gradient}`` for the variables that do.

    Raises:
        LookupError: an op on the path has no registered gradient (and is not marked non-differentiable).
    """
    variable_ids = {id(h) for h in variables}
    reached = {id(t) for t in sources}
    live = []
    for op in ops:
        if any(id(t) in reached for t in op.inputs) or (variable_ids and variable_ids & set(variables_read(op))):
            live.append(op)
            reached.update(id(t) for t in op.outputs if differentiable_dtype(t.dtype))
    needed = {id(t) for t in targets}
    path = []
    for op in reversed(live):
        if any(id(t) in needed for t in op.outputs):
            path.append(op)
            needed.update(id(t) for t in op.inputs)
    partials: dict[int, list] = {}
    for target, grad in zip(targets, target_grads):
        if grad is not None and differentiable_dtype(target.dtype):
            partials.setdefault(id(target), []).append(grad)
    _frames.stack.append({})
    try:
        for op in path:
            out_grads = [aggregate(partials.get(id(t), [])) for t in op.outputs]
            if all(g is None for g in out_grads) or not op.opdef.differentiable:
                continue
            for t, g in zip(op.outputs, out_grads):
                if g is not None:
                    partials[id(t)] = [g]          # summed once (a source may be an op's output)
            in_grads = _call_gradient(op, out_grads)
            for t, g in zip(op.inputs, in_grads):
                if g is not None and id(t) in reached and differentiable_dtype(t.dtype):
                    partials.setdefault(id(t), []).append(with_shape_of(g, t))
        reported = _frames.stack[-1]
    finally:
        _frames.stack.pop()
    grads = [aggregate(partials.get(id(s), [])) for s in sources]
    variable_grads = {key: aggregate(parts) for key, (_, parts) in reported.items() if key in variable_ids}
    return grads, variable_grads


def _call_gradient(op, out_grads: list) -> list:
    fn = op.opdef.grad
    if fn is None:
        where = op.where() if hasattr(op, "where") else f"op {op.type}"
        raise LookupError(f"No gradient defined for operation {where} (op type: {op.type}); mark it with "
                          "runtime.ops.registry.not_differentiable if it has none")
    result = fn(op, *out_grads)
    if result is None or not isinstance(result, (list, tuple)):
        result = [result]
    result = list(result)
    if len(result) != len(op.inputs):
        raise ValueError(f"the gradient of {op.type} returned {len(result)} gradients for {len(op.inputs)} inputs")
    return result
