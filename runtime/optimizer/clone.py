"""``clone_graph(graph)``: a deep copy of a graph's ops, tensors and subgraphs that passes may edit.

Only the IR objects (``Graph``, ``Operation``, ``SymbolicTensor``) and the containers holding them are
copied; everything else an op refers to -- constant values (read-only), dtypes, shapes, source
locations, variable handles -- is shared with the original, so a copied ``AssignVariableOp`` still
updates the user's variable.

Example:
    >>> import runtime as rt
    >>> from runtime.graph import Graph
    >>> g = Graph("g")
    >>> x = g.add_placeholder("x", rt.float32, [2])
    >>> g.outputs = [x]
    >>> g.finalized = True
    >>> copy = clone_graph(g)
    >>> copy.finalized, copy.outputs[0] is x, copy.outputs[0].name
    (False, False, 'x:0')
"""
from __future__ import annotations

import io
import pickle

from runtime.graph import Graph, Operation, SymbolicTensor

_COPIED = (Graph, Operation, SymbolicTensor, list, dict, tuple, set, str, int, float, bool, type(None))


class _Pickler(pickle.Pickler):
    def __init__(self, file, shared: list):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def persistent_id(self, obj):
        if type(obj) in _COPIED and not (self.shared and obj is self.shared[0]):
            return None
        self.shared.append(obj)
        return len(self.shared) - 1


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, shared: list):
        super().__init__(file)
        self.shared = shared

    def persistent_load(self, pid):
        return self.shared[pid]


def clone_graph(graph: Graph) -> Graph:
    """A modifiable deep copy of ``graph`` (not finalized, no cached executor plans).

    The copy keeps ``outer_graph`` pointing at the original's outer graph (it is shared, not copied).
    """
    shared: list = [graph.outer_graph]  # shared[0] is kept by reference, not copied
    buffer = io.BytesIO()
    _Pickler(buffer, shared).dump(graph)
    buffer.seek(0)
    copy = _Unpickler(buffer, shared).load()
    for g in _all_graphs(copy):
        g.finalized = False
        drop_plans(g)
    return copy


def drop_plans(graph: Graph) -> None:
    """Forget the executor plans cached on ``graph`` (they name ops a pass may have removed)."""
    for key in ("_plan", "_generic_plan"):
        graph.__dict__.pop(key, None)


def _all_graphs(graph: Graph):
    yield graph
    for op in graph.operations:
        for sub in op.subgraphs():
            yield from _all_graphs(sub)
