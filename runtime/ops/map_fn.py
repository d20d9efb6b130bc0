"""``rt.map_fn``: a function applied to each element along the first axis, the results stacked.

Eagerly it is a Python loop. In a graph it is what TensorFlow builds: the inputs unstacked into
TensorArrays, one ``While`` loop whose body reads element ``i``, calls the function (traced once) and writes
its results into output TensorArrays, which are stacked after the loop; so the loop's size does not grow
with the number of elements, and it differentiates and builds to native code like any tensor loop.
"""
from __future__ import annotations

from runtime import context, dtypes, nest
from runtime.ops import array_ops, control_flow_ops, math_ops
from runtime.ops.array_ops import dim_size
from runtime.ops.registry import convert
from runtime.shapes import TensorShape, TensorSpec
from runtime.tensor_array import TensorArray


def _output_specs(fn_output_signature, elems_flat: list):
    """The (dtype, element shape) of each output leaf from ``fn_output_signature``, or None to use ``fn``'s."""
    if fn_output_signature is None:
        return None
    leaves = nest.flatten(fn_output_signature)
    specs = []
    for leaf in leaves:
        if isinstance(leaf, TensorSpec):
            specs.append((leaf.dtype, leaf.shape))
        else:
            specs.append((dtypes.as_dtype(leaf), TensorShape(None)))
    return specs


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """``fn`` applied to each element of ``elems`` along axis 0 (a tensor or a nested structure of tensors with
    the same first dimension), the results stacked (``tf.map_fn``). ``fn_output_signature`` (``dtype``, its old
    name) gives the results' dtypes when they differ from ``elems``'.

    Example:
        >>> import runtime as rt
        >>> rt.map_fn(lambda row: rt.reduce_sum(row), rt.constant([[1, 2], [3, 4]])).numpy().tolist()
        [3, 7]
    """
    signature = fn_output_signature if fn_output_signature is not None else dtype
    flat = [convert(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("map_fn: elems must contain at least one tensor")
    for e in flat:
        if e.shape.rank == 0:
            raise ValueError(f"map_fn: elements are taken along the first axis; got a scalar {e}")
    n = dim_size(flat[0], 0)
    for e in flat[1:]:
        other = dim_size(e, 0)
        if isinstance(n, int) and isinstance(other, int) and n != other:
            raise ValueError(f"map_fn: all elems must have the same first dimension, got {n} and {other}")
    specs = _output_specs(signature, flat)

    def element(values):
        return nest.pack_sequence_as(elems, values)

    if context.current_graph() is None:
        values = [fn(element([e[i] for e in flat])) for i in range(n)]
        if not values:
            out_specs = specs or [(e.dtype, e.shape[1:]) for e in flat]
            stacked = [array_ops.zeros([0] + [d or 0 for d in (shape.as_list() if shape.rank is not None else [])],
                                       dt) for dt, shape in out_specs]
            structure = signature if signature is not None else elems
            return nest.pack_sequence_as(structure, stacked)
        results = [nest.flatten(v) for v in values]
        stacked = [array_ops.stack([convert(r[k]) for r in results]) for k in range(len(results[0]))]
        return nest.pack_sequence_as(values[0], stacked)

    inputs = [TensorArray(e.dtype, size=n, element_shape=e.shape[1:]).unstack(e) for e in flat]
    structure = {}

    def body(i, *outputs):
        value = fn(element([ta.read(i) for ta in inputs]))
        leaves = [convert(v) for v in nest.flatten(value)]
        structure["out"] = value
        if len(leaves) != len(outputs):
            raise ValueError(f"map_fn: fn returned {len(leaves)} tensor(s) but its output signature has "
                             f"{len(outputs)}; pass fn_output_signature=")
        written = []
        for ta, leaf in zip(outputs, leaves):
            if leaf.dtype is not ta.dtype:
                raise TypeError(f"map_fn: fn returned a {leaf.dtype} tensor where its output signature says "
                                f"{ta.dtype}; pass fn_output_signature=")
            written.append(ta.write(i, leaf))
        return (math_ops.add(i, 1), *written)

    out_specs = specs or [(e.dtype, TensorShape(None)) for e in flat]
    outputs = [TensorArray(dt, size=n, element_shape=shape) for dt, shape in out_specs]
    result = control_flow_ops.while_loop(lambda i, *_: math_ops.less(i, n), body,
                                         (convert(0), *outputs), name=name or "map")
    stacked = [ta.stack() for ta in result[1:]]
    return nest.pack_sequence_as(structure["out"], stacked)
