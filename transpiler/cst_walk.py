"""A plain walk over a libcst tree, for the questions that only read it (which names, which node types).

A libcst visitor dispatches ``visit_*``/``leave_*`` for every node and a transformer rebuilds each one; reading
the dataclass fields directly costs a small fraction of either, which matters because every converted function
is asked these questions several times.

    >>> import libcst as cst
    >>> sorted(n.value for n in walk(cst.parse_expression("f(x, y.z)")) if isinstance(n, cst.Name))
    ['f', 'x', 'y', 'z']
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import libcst as cst

# the nodes that open a scope of their own: what a question about one function does not walk into
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def walk(node: cst.CSTNode, descend: Callable[[cst.CSTNode], bool] | None = None) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it (whitespace and punctuation included), in no particular order; with
    ``descend``, only under the nodes for which it is true (the others are yielded, their children not)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if descend is not None and not descend(n):
            continue
        cls = type(n)
        names = _CHILD_FIELDS.get(cls)
        if names is None:
            names = _CHILD_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
        for name in names:
            value = getattr(n, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))


def node_types(node: cst.CSTNode) -> frozenset[type]:
    """The types of ``node`` and of every node under it."""
    return frozenset(type(n) for n in walk(node))
