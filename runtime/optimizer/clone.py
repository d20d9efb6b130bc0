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

from runtime.graph import Graph, copy_graph


def clone_graph(graph: Graph) -> Graph:
    """A modifiable deep copy of ``graph`` (not finalized, no cached executor plans).

    The copy keeps ``outer_graph`` pointing at the original's outer graph (it is shared, not copied).
    """
    copy = copy_graph(graph)
    for g in _all_graphs(copy):
        g.finalized = False
        g.drop_plans()
    return copy


def _all_graphs(graph: Graph):
    yield graph
    for op in graph.operations:
        for sub in op.subgraphs():
            yield from _all_graphs(sub)
