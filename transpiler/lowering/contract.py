"""Sums of broadcast products -> matmuls, before planning: ``reduce_sum(a[:, :, None] * b[None], 1)`` is
``a @ b``, and ``reduce_sum(x[:, None, :] * y[None, :, :], -1)`` is ``x @ y^T``.

Fused as written, such a sum reads each operand element once per output element it meets, from a loop
nest with no register blocking (0.65x jax.jit on [256, 64] x [64, 256]); XLA rewrites it into a dot, and
so does this pass, into a ``MatMul`` the lowering runs through the kernel library's GEMM (with
transposes folded into the operands' strides: nothing is copied).

It applies to a ``Sum`` over one axis of a rank-3 float ``Mul`` (operands of rank 2 or 3, the reduced size
static), read by nothing else, whose operands each span the reduced axis and one of the two others,
the other size 1: the product ``[I, K, J]`` of ``a [I, K, 1]`` and ``b [1, K, J]``, in any order of
the axes. Only native code is rewritten: a matmul adds the products in another order than numpy's
sum (as every native reduction may; see the README's Semantics), while the graph optimizer's passes
keep the executor's results bit for bit.
"""
from __future__ import annotations

from runtime.graph import Graph, Operation
from runtime.ops import array_ops, math_ops
from runtime.optimizer.clone import clone_graph
from runtime.optimizer.rewrite import build_detached, remove_unused, replace_many, subgraphs_first, use_counts

FLOATS = ("float32", "float64")


def contract_products(graph: Graph) -> Graph:
    """``graph``, or a rewritten copy of it when one of its sums (nested graphs' too) is a matmul."""
    if not any(_has_contraction(g) for g in subgraphs_first(graph)):
        return graph
    copy = clone_graph(graph)
    for g in subgraphs_first(copy):
        _rewrite(g)
    return copy


def _has_contraction(graph: Graph) -> bool:
    counts = use_counts(graph)
    return any(_contraction(op, counts) is not None for op in graph.operations)


def _rewrite(graph: Graph) -> None:
    counts = use_counts(graph)
    mapping: dict = {}
    kept: list = []
    products: list = []
    for op in list(graph.operations):
        found = _contraction(op, counts)
        if found is None:
            kept.append(op)
            continue
        result, new_ops = build_detached(graph, op, _matmul, op, *found)
        kept.extend(new_ops)
        mapping[id(op.outputs[0])] = result
        products.append(op.inputs[0].op)
    if mapping:
        graph.operations = kept
        replace_many(graph, mapping)
        remove_unused(graph, products)


def _contraction(op: Operation, counts: dict):
    """(left, left_axis, right, right_axis, reduced axis) when ``op`` is a sum of a broadcast product
    (see the module docstring): out[a, b] = sum_k left[a, k] * right[k, b] over the product's axes a < b;
    else None. The kept axes' sizes may be unknown (``None``): each operand is 1 along the axis the other
    keeps, so the product's size there is the keeping operand's. The reduced axis must be of one static size in
    both operands (a run-time 1 would broadcast in the product, not in a matmul)."""
    if op.type != "Sum" or op.attrs["axis"] is None or len(op.attrs["axis"]) != 1:
        return None
    product = op.inputs[0]
    mul = product.op
    if mul.type != "Mul" or counts.get(id(product), 0) != 1 or product.dtype.name not in FLOATS:
        return None
    dims = product.shape.dims
    if dims is None or len(dims) != 3:
        return None
    shapes = []
    for t in mul.inputs:
        d = t.shape.dims
        if d is None or len(d) not in (2, 3):
            return None
        shapes.append((1,) * (3 - len(d)) + tuple(d))
    r = op.attrs["axis"][0] % 3
    a, b = (axis for axis in range(3) if axis != r)
    if dims[r] is None or any(shape[r] != dims[r] for shape in shapes):
        return None

    def spans(shape, kept, other):
        return shape[other] == 1 and (shape[kept] == dims[kept] or dims[kept] is None)

    x, y = mul.inputs
    if spans(shapes[0], a, b) and spans(shapes[1], b, a):
        return x, a, y, b, r
    if spans(shapes[0], b, a) and spans(shapes[1], a, b):
        return y, a, x, b, r
    return None


def _matrix(t, other: int):
    """Operand ``t`` (rank 3 with size 1 along ``other``, or rank 2: the product's last two axes) as a matrix
    over its two other axes in order (views: nothing is copied)."""
    if t.shape.rank == 2:
        if other == 0:
            return t
        t = array_ops.expand_dims(t, 0)
    return array_ops.squeeze(t, [other])


def _matmul(op: Operation, left, a: int, right, b: int, r: int):
    """The graph ops of out = left2 @ right2, shaped as the sum's output (a size-1 axis kept at ``r``)."""
    # each operand over (its kept axis, the reduced axis) in memory order: a view, nothing is copied
    out = math_ops.matmul(_matrix(left, b), _matrix(right, a), transpose_a=a > r, transpose_b=b < r)
    return array_ops.expand_dims(out, r) if op.attrs.get("keepdims") else out
