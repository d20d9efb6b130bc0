"""Ops computable at build time become ``Const``: ``Add(Const 1, Const 2) -> Const 3``.

An op folds when it is ``foldable``, not stateful, holds no subgraph, and either all its inputs are
constants (its numpy kernel -- the reference semantics -- computes the value) or it only asks for a
statically known shape (``Shape``/``Size``/``ZerosLike``/``OnesLike`` of a fully defined shape that no
run-time check of its producer could contradict, ``Rank`` of a known rank).
Results larger than ``MAX_ELEMENTS`` stay computed at run time (they would bloat the graph), and so
do ops whose kernel raises: the error belongs to the run, not to the build.
"""
from __future__ import annotations

import warnings

import numpy as np

from runtime.graph import Graph, Operation
from runtime.optimizer.rewrite import (
    const_value,
    insert_before,
    is_output_identity,
    make_const,
    remove_unused,
    replace_many,
    subgraphs_first,
)

MAX_ELEMENTS = 100_000

_SHAPE_ONLY = {"Shape": "fully_defined", "Size": "fully_defined", "Rank": "rank",
               "ZerosLike": "fully_defined", "OnesLike": "fully_defined"}


def fold_constants(graph: Graph) -> bool:
    """Fold constant ops of ``graph`` and its subgraphs in place; True if any op was folded."""
    changed = False
    for g in subgraphs_first(graph):
        changed |= _fold(g)
    return changed


def _fold(graph: Graph) -> bool:
    folded: list[Operation] = []
    for op in list(graph.operations):
        if is_output_identity(graph, op):
            continue
        values = _evaluate(op)
        if values is None:
            continue
        consts = [make_const(graph, v, t.dtype, location=op.location) for v, t in zip(values, op.outputs)]
        insert_before(graph, consts, op)
        replace_many(graph, {id(t): c.outputs[0] for t, c in zip(op.outputs, consts)})
        folded.append(op)
    remove_unused(graph, folded)
    return bool(folded)


def _evaluate(op: Operation) -> list[np.ndarray] | None:
    """The output values of ``op`` if it can be folded, else None."""
    opdef = op.opdef
    if op.type in ("Const", "Placeholder") or not opdef.foldable or op.stateful or op.subgraphs():
        return None
    if not op.outputs or any(t.dtype.name == "variant" for t in op.outputs):
        return None
    for t in op.outputs:
        if t.shape.is_fully_defined() and t.shape.num_elements() > MAX_ELEMENTS:
            return None
    inputs = [const_value(t) for t in op.inputs]
    if any(v is None for v in inputs):
        inputs = _shape_stand_in(op)
        if inputs is None:
            return None
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = opdef.kernel(inputs, op.attrs)
    except Exception:  # noqa: BLE001 - a failing op fails at run time, as unoptimized
        return None
    if len(results) != len(op.outputs):
        return None
    values = []
    for value, t in zip(results, op.outputs):
        value = np.asarray(value)
        if value.dtype != t.dtype.np:
            value = value.astype(t.dtype.np)
        if value.size > MAX_ELEMENTS or not t.shape.is_compatible_with(value.shape):
            return None
        values.append(value)
    return values


# Producers whose output has its static shape whenever their inputs have theirs: nothing about sizes is left to
# check at run time (a reshape of a fully known input was checked while tracing, a gather's indices were not).
_SHAPE_SAFE_VIEWS = ("expand_dims", "squeeze", "reshape", "transpose", "unpack")
_SHAPE_SAFE_OPS = ("Placeholder", "Const", "Identity", "ReadVariableOp")
_MAY_FAIL = ("FloorDiv", "FloorMod", "Pow")       # integer division by zero, integer negative powers


def _shape_is_certain(t) -> bool:
    """Whether ``t``'s static shape holds without running its producer: folding ``Shape(t)`` prunes the producer,
    and with it a check that would fail at run time (``rt.shape(rt.reshape(z, [4, 2]))`` of a ``z`` of 12
    elements must raise, as in TensorFlow, which keeps the producer alive)."""
    op = t.op
    if op.type in _SHAPE_SAFE_OPS:
        return True
    if not all(x.shape.is_fully_defined() for x in op.inputs):
        return False
    if op.opdef.view is not None:
        return op.opdef.view in _SHAPE_SAFE_VIEWS
    return op.opdef.elementwise and not (op.type in _MAY_FAIL and any(x.dtype.is_integer for x in op.inputs))


def _shape_stand_in(op: Operation) -> list[np.ndarray] | None:
    """For ops that read only their input's shape: a zero-cost array of that (static) shape, when it is certain."""
    need = _SHAPE_ONLY.get(op.type)
    if need is None:
        return None
    if need == "fully_defined" and not _shape_is_certain(op.inputs[0]):
        return None
    shape = op.inputs[0].shape
    if need == "fully_defined" and not shape.is_fully_defined():
        return None
    if shape.rank is None:
        return None
    dims = tuple(0 if d is None else d for d in shape.dims)
    return [np.broadcast_to(np.zeros((), np.int8), dims)]
