"""``rt.cond`` and ``rt.while_loop``: control flow as ops (``If``, ``While``) holding subgraphs.

A branch or loop body is traced once into its own ``Graph``; tensors it uses from
enclosing graphs become extra inputs of the op (captures), so every subgraph is a
closed function of its inputs.
"""
from __future__ import annotations


import weakref

import numpy as np

from runtime import context, dtypes, nest
from runtime.executor import execute
from runtime.graph import Graph, SymbolicTensor, copy_graph
from runtime.ops import array_ops, math_ops
from runtime.ops import gradients
from runtime.ops.gradients import (backprop, differentiable_dtype, graph_variables_read, or_zeros,
                                   report_variable_gradient)
from runtime.ops.registry import OpDef, apply, convert, get_opdef, gradient, register
from runtime.shapes import TensorShape, as_shape
from runtime.tensor import EagerTensor, is_symbolic
from runtime.tensor_array import TensorArray


def _if_kernel(inputs, attrs):
    pred = inputs[0]
    branch = attrs["then_branch"] if bool(pred) else attrs["else_branch"]
    return tuple(execute(branch, list(inputs[1:])))


def _while_kernel(inputs, attrs):
    n_vars = attrs["num_loop_vars"]
    n_caps = len(inputs) - n_vars - (1 if attrs["has_max_iter"] else 0)
    values = list(inputs[:n_vars])
    captures = list(inputs[n_vars:n_vars + n_caps])
    limit = int(inputs[-1]) if attrs["has_max_iter"] else None
    cond, body = attrs["cond"], attrs["body"]
    count = 0
    while (limit is None or count < limit) and bool(execute(cond, values + captures)[0]):
        values = list(execute(body, values + captures))
        count += 1
    return tuple(values)


_IF = register(OpDef("If", "cond", None, _if_kernel, None, foldable=False))
_WHILE = register(OpDef("While", "while", None, _while_kernel, None, foldable=False))


# ---------------------------------------------------------------------------

def _flat_leaves(structure):
    """Flatten, replacing each TensorArray with its flow tensor; returns (flat, arrays-by-position)."""
    flat, arrays = [], {}
    for i, leaf in enumerate(nest.flatten(structure)):
        if isinstance(leaf, TensorArray):
            arrays[i] = leaf
            flat.append(leaf.flow)
        else:
            flat.append(leaf)
    return flat, arrays


def _rebuild(structure, flat, arrays):
    leaves = [arrays[i]._with(t) if i in arrays else t for i, t in enumerate(flat)]
    return nest.pack_sequence_as(structure, leaves)


def _names(names, n, what):
    if names is not None and len(names) == n:
        return [f"'{name}'" for name in names]
    return [f"{what} {i}" for i in range(n)]


def _trace_branch(graph, fn):
    with context.graph_scope(graph):
        out = fn()
        flat, arrays = _flat_leaves(out)
        tensors = []
        for value in flat:
            if value is None:
                tensors.append(None)
            else:
                tensors.append(graph.internalize(convert(value)))
    return out, tensors, arrays


def cond(pred, true_fn=None, false_fn=None, name=None, output_names=None):
    """Run ``true_fn()`` if ``pred`` else ``false_fn()``; in a graph both are traced into an ``If`` op.

    ``output_names`` (one per flattened output) lets errors name the user's variables.
    """
    if true_fn is None or false_fn is None:
        raise TypeError("rt.cond needs both true_fn and false_fn")
    if not is_symbolic(pred):
        return true_fn() if bool(pred) else false_fn()
    outer = context.current_graph()
    if outer is None:
        raise TypeError(f"{pred} is a symbolic tensor used outside its function (leaked?)")
    pred = outer.internalize(pred)
    if pred.dtype is not dtypes.bool_:
        raise TypeError(f"rt.cond: the condition must be a bool tensor, got {pred.dtype} ({pred})")
    if pred.shape.rank not in (0, None):
        raise ValueError(f"rt.cond: the condition must be a scalar, got shape {pred.shape}; "
                         "use rt.reduce_all/rt.reduce_any or rt.where")
    then_graph = Graph(f"{outer.name}_{name or 'cond'}_true", outer)
    else_graph = Graph(f"{outer.name}_{name or 'cond'}_false", outer)
    then_out, then_flat, then_arrays = _trace_branch(then_graph, true_fn)
    else_out, else_flat, else_arrays = _trace_branch(else_graph, false_fn)
    if nest.structure_key(then_out) != nest.structure_key(else_out):
        raise ValueError(
            "rt.cond: true_fn and false_fn must return the same structure; got "
            f"{_describe(then_out)} in the true branch and {_describe(else_out)} in the false branch")
    labels = _names(output_names, len(then_flat), "output")
    specs, kept = [], []
    for i, (label, a, b) in enumerate(zip(labels, then_flat, else_flat)):
        if (a is None) != (b is None):
            raise ValueError(f"rt.cond: {label} is None in one branch only")
        if a is None:
            continue             # None in both branches: stays None (e.g. branches with only side effects)
        if a.dtype is not b.dtype:
            raise TypeError(f"{label} has dtype {a.dtype} in the main branch but {b.dtype} in the else branch; "
                            "both branches of a tensor `if` must give it the same dtype (use rt.cast)")
        specs.append((a.dtype, a.shape.most_specific_compatible_shape(b.shape).dims))
        kept.append(i)
    then_graph.outputs = [then_flat[i] for i in kept]
    else_graph.outputs = [else_flat[i] for i in kept]
    captured = _unify_captures([then_graph, else_graph])
    with context.graph_scope(outer):
        op = outer.create_op(_IF, [pred] + captured, {"then_branch": then_graph, "else_branch": else_graph},
                             name=name, output_specs=specs)
    results = [None] * len(then_flat)
    for i, t in zip(kept, op.outputs):
        results[i] = t
    arrays = {i: then_arrays.get(i) or else_arrays.get(i) for i in set(then_arrays) | set(else_arrays)}
    if then_out is None:
        return None
    return _rebuild(then_out, results, arrays)


def _describe(structure):
    key = nest.structure_key(structure)
    return "a single value" if key == "*" else repr(structure)


def _unify_captures(graphs):
    """Give every subgraph the same capture list (union, in first-seen order); return the outer tensors."""
    order, seen = [], {}
    for g in graphs:
        for outer, _ in g.captures:
            if id(outer) not in seen:
                seen[id(outer)] = outer
                order.append(outer)
    for g in graphs:
        mine = {id(o): p for o, p in g.captures}
        unified = []
        for outer in order:
            placeholder = mine.get(id(outer))
            if placeholder is None:
                placeholder = g.capture(outer) if outer.op.graph is g.outer_graph else _dummy(g, outer)
            unified.append((outer, placeholder))
        g.captures = unified
    return order


def _dummy(graph, outer):
    op = graph.create_op(get_opdef("Placeholder"), [], {"dtype": outer.dtype, "shape": outer.shape},
                         name="unused_capture", output_specs=[(outer.dtype, outer.shape)])
    return op.outputs[0]


def _as_loop_result(value):
    """An eager loop's final value as a tensor (TensorArrays stay as they are)."""
    return value if isinstance(value, TensorArray) else convert(value)


def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None, name=None,
               loop_var_names=None, relax_shapes=False):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; a ``While`` op in graphs.

    Loop variables keep their dtype and shape (``shape_invariants``, parallel to the
    flattened loop variables, may relax shapes with ``None`` dims). With ``relax_shapes`` (a loop over
    a dataset, as ``tf.data``'s reduce does), a variable without an invariant whose shape changes takes
    the most specific shape compatible with both, and the loop is traced again.
    """
    single = not isinstance(loop_vars, (tuple, list))
    structure = (loop_vars,) if single else loop_vars
    outer = context.current_graph()
    if outer is None:
        values = structure
        count = 0
        while (maximum_iterations is None or count < int(maximum_iterations)) and bool(cond(*values)):
            out = body(*values)
            values = (out,) if single or not isinstance(out, (tuple, list)) else out
            count += 1
        values = nest.map_structure(_as_loop_result, tuple(values))       # tensors out, as in TensorFlow
        return values[0] if single else type(structure)(values) if isinstance(structure, list) else values

    flat, arrays = _flat_leaves(structure)
    entry = [outer.internalize(convert(v)) for v in flat]
    labels = _names(loop_var_names, len(entry), "loop variable")
    invariants = list(nest.flatten(shape_invariants)) if shape_invariants is not None else [None] * len(entry)
    if len(invariants) != len(entry):
        raise ValueError(f"rt.while_loop: {len(invariants)} shape invariants for {len(entry)} loop variables")
    shapes = []
    for label, t, inv in zip(labels, entry, invariants):
        if inv is None:
            shapes.append(t.shape)
        else:
            inv = as_shape(inv)
            if not t.shape.is_subshape_of(inv):
                raise ValueError(f"{label} has shape {t.shape} before the loop, which does not conform with "
                                 f"its shape invariant {inv}")
            shapes.append(inv)

    def placeholders(graph):
        with context.graph_scope(graph):
            return [graph.add_placeholder(f"loop_var_{i}", t.dtype, s) for i, (t, s) in enumerate(zip(entry, shapes))]

    def wrap(values):
        return _rebuild(list(structure), values, arrays)

    # Each retrace relaxes a shape (a dim to None, or the rank to unknown), which can happen only finitely
    # often, so this ends; a fixed count of attempts could stop with a graph traced for shapes that do not hold.
    while True:
        cond_graph = Graph(f"{outer.name}_{name or 'while'}_cond", outer)
        body_graph = Graph(f"{outer.name}_{name or 'while'}_body", outer)
        cond_inputs = placeholders(cond_graph)
        body_inputs = placeholders(body_graph)
        with context.graph_scope(cond_graph):
            pred = convert(cond(*wrap(cond_inputs)))
            pred = cond_graph.internalize(pred)
            if pred.dtype is not dtypes.bool_ or pred.shape.rank not in (0, None):
                raise TypeError(f"rt.while_loop: the loop condition must be a scalar bool tensor, got {pred}")
            cond_graph.outputs = [pred]
        with context.graph_scope(body_graph):
            out = body(*wrap(body_inputs))
            out_struct = (out,) if single or (len(structure) == 1 and not isinstance(out, (tuple, list))) else out
            if not isinstance(out_struct, (tuple, list)) or \
                    nest.structure_key(list(out_struct)) != nest.structure_key(list(structure)):
                raise ValueError("rt.while_loop: the body must return the same structure as loop_vars; got "
                                 f"{out!r} for loop_vars {loop_vars!r}")
            out_flat, out_arrays = _flat_leaves(list(out_struct))
            body_out = [body_graph.internalize(convert(v)) for v in out_flat]
        relaxed = False
        for i, (label, t, new, shape, inv) in enumerate(zip(labels, entry, body_out, shapes, invariants)):
            if new.dtype is not t.dtype:
                raise TypeError(f"{label} has dtype {t.dtype} before the loop, but dtype {new.dtype} after one "
                                "iteration; a loop variable must keep its dtype (use rt.cast)")
            if not new.shape.is_subshape_of(shape) and relax_shapes and inv is None:
                shapes[i] = shape.most_specific_compatible_shape(new.shape)
                relaxed = True
            elif not new.shape.is_subshape_of(shape):
                # Checked at trace time, as TensorFlow does: a loop variable whose shape grows or becomes
                # unknown would otherwise run with a wrong static shape (or forever, under `while True`).
                if inv is not None:
                    raise ValueError(f"{label} has shape {new.shape} after one iteration, which does not conform to "
                                     f"its shape invariant {shape}")
                raise ValueError(
                    f"{label} has shape {shape} before the loop, but shape {new.shape} after one iteration; a loop "
                    "variable must keep its shape, or declare the shapes it may take with "
                    "rt.autograph.experimental.set_loop_options(shape_invariants=[(var, rt.TensorShape([None]))])")
        if not relaxed:
            break
    body_graph.outputs = body_out
    captured = _unify_captures([cond_graph, body_graph])
    inputs = entry + captured
    attrs = {"cond": cond_graph, "body": body_graph, "num_loop_vars": len(entry),
             "has_max_iter": maximum_iterations is not None}
    if maximum_iterations is not None:
        inputs.append(outer.internalize(convert(maximum_iterations, dtypes.int32, "maximum_iterations")))
    op = outer.create_op(_WHILE, inputs, attrs, name=name, output_specs=[(t.dtype, s.dims)
                                                                          for t, s in zip(entry, shapes)])
    arrays = {i: out_arrays.get(i, arrays.get(i)) for i in set(arrays) | set(out_arrays)}
    result = _rebuild(list(structure), list(op.outputs), arrays)
    if single:
        return result[0]
    return tuple(result) if isinstance(loop_vars, tuple) else result


# ---------------------------------------------------------------------------
# Gradients of If and While.

def _variable_zeros(handle):
    variable = handle.get()
    return array_ops.zeros(variable.shape.as_list(), variable.dtype)


def _const_stand_in(tensor):
    """A Const of a forward graph is simply made again where it is needed."""
    return EagerTensor(tensor.op.attrs["value"].array, tensor.dtype) if tensor.op.type == "Const" else None


class _Recompute:
    """Resolver of an ``If`` gradient's branch: forward branch tensors are computed again from the If's inputs.

    Only the ops the gradient needs are recomputed. Variable updates are not repeated (the value read
    after them stands in); an op whose result would differ (random numbers) cannot be recomputed.
    """

    def __init__(self, branch: Graph, inputs: list, graph: Graph):
        self.branch, self.graph = branch, graph
        self.values = {id(p): x for p, x in zip(branch.all_inputs(), inputs)}
        self.copies: dict[int, object] = {}

    def __call__(self, tensor):
        if tensor.op.graph is not self.branch:
            return None
        if id(tensor) in self.values:
            return self.values[id(tensor)]
        op = tensor.op
        const = _const_stand_in(tensor)
        if const is not None:
            return const
        copy = self.copies.get(id(op))
        if copy is None or tensor.index >= len(copy.outputs):
            copy = self.copies[id(op)] = self._recompute(op)
        return copy.outputs[tensor.index]

    def _recompute(self, op):
        with context.graph_scope(self.graph):
            if op.type in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
                handle = op.attrs["variable"]
                return apply("ReadVariableOp", [], {"variable": handle, "dtype": op.attrs["dtype"],
                                                    "shape": op.attrs["shape"]}).op
            if op.type == "CheckNumerics":
                return apply("Identity", [op.inputs[0]]).op
            if op.opdef.stateful and op.type != "ReadVariableOp":
                raise ValueError(f"cannot differentiate through a tensor `if` whose branch uses {op.where()}: "
                                 "the gradient would compute it again and get another result")
            attrs = {k: copy_graph(v) if isinstance(v, Graph) else v for k, v in op.attrs.items()}
            return self.graph.create_op(op.opdef, op.inputs, attrs, name=op.name,
                                        output_specs=[(t.dtype, t.shape.dims) for t in op.outputs])


@gradient("If")
def _if_grad(op, *grads):
    """A conditional of the two branches' gradients (each recomputes what it needs of its branch)."""
    pred, inputs = op.inputs[0], list(op.inputs[1:])
    branches = (op.attrs["then_branch"], op.attrs["else_branch"])
    wanted = [k for k, t in enumerate(op.outputs) if grads[k] is not None and differentiable_dtype(t.dtype)]
    sources = [j for j, t in enumerate(inputs) if differentiable_dtype(t.dtype)]
    handles = list({**graph_variables_read(branches[0]), **graph_variables_read(branches[1])}.values())
    if not wanted or not (sources or handles):
        return [None] * len(op.inputs)
    weights = [grads[k] for k in wanted]
    resolved = []

    def branch_gradient(branch):
        def run():
            graph = context.current_graph()
            graph.resolver = _Recompute(branch, inputs, graph)
            resolved.append(graph)
            placeholders = branch.all_inputs()
            in_grads, variable_grads = backprop(list(branch.operations), [branch.outputs[k] for k in wanted],
                                                weights, [placeholders[j] for j in sources], handles)
            found = [variable_grads.get(id(h)) for h in handles]
            return ([or_zeros(g, inputs[j]) for j, g in zip(sources, in_grads)] +
                    [_variable_zeros(h) if g is None else g for h, g in zip(handles, found)])
        return run

    try:
        results = cond(pred, branch_gradient(branches[0]), branch_gradient(branches[1]), name="cond_grad")
    finally:
        for graph in resolved:
            graph.resolver = None
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    for h, g in zip(handles, results[len(sources):]):
        report_variable_gradient(h, g)
    out = [None] * len(op.inputs)
    for j, g in zip(sources, results):
        out[1 + j] = g
    return out


class _ForwardLoop:
    """A forward ``While`` being differentiated: it also counts its iterations and, on demand, stacks
    per-iteration values of its body (TensorLists carried as extra loop variables) for the backward loop.
    """

    def __init__(self, op):
        self.op = op
        self.num_vars = op.attrs["num_loop_vars"]          # the user's loop variables
        self.stacks: dict[int, SymbolicTensor] = {}
        self.count = None

    def iterations(self) -> SymbolicTensor:
        if self.count is None:
            self.count = self._add_loop_var("iterations", dtypes.int32, (),
                                            lambda: convert(np.int32(0)),
                                            lambda previous: math_ops.add(previous, 1))
        return self.count

    def stack(self, tensor) -> SymbolicTensor:
        """The forward loop's output listing ``tensor`` (a tensor of its body) at every iteration."""
        found = self.stacks.get(id(tensor))
        if found is None:
            found = self.stacks[id(tensor)] = self._add_loop_var(
                f"stack_{tensor.op.name}", dtypes.variant, (),
                lambda: apply("TensorListReserve", [convert(np.int32(0))],
                              {"element_dtype": tensor.dtype, "dynamic_size": True}),
                lambda previous: apply("TensorListSetItem",
                                       [previous, apply("TensorListLength", [previous]), tensor]))
        return found

    def _add_loop_var(self, name, dtype, shape, initial, step) -> SymbolicTensor:
        op = self.op
        graph, body, test = op.graph, op.attrs["body"], op.attrs["cond"]
        n = op.attrs["num_loop_vars"]
        start = len(graph.operations)
        with context.graph_scope(graph):
            init = graph.internalize(initial())
        new_ops = graph.operations[start:]              # the initial value is computed before the loop
        del graph.operations[start:]
        at = graph.operations.index(op)
        graph.operations[at:at] = new_ops
        with context.graph_scope(body):
            previous = body.add_placeholder(f"{name}_in", dtype, shape)
            body.outputs.append(body.internalize(step(previous)))
        with context.graph_scope(test):
            test.add_placeholder(f"{name}_in", dtype, shape)
        op.inputs = op.inputs[:n] + (init,) + op.inputs[n:]
        op.attrs = op.attrs.replace(num_loop_vars=n + 1)
        out = SymbolicTensor(op, len(op.outputs), dtype, TensorShape(shape))
        op.outputs = op.outputs + (out,)
        for g in (graph, body, test):
            g.drop_plans()
        return out


_FORWARD_LOOPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _forward_loop(op) -> _ForwardLoop:
    found = _FORWARD_LOOPS.get(op)
    if found is None:
        found = _FORWARD_LOOPS[op] = _ForwardLoop(op)
    return found


class _Stacked:
    """Resolver of a ``While`` gradient's body: a forward body tensor is read from its stack at iteration i."""

    def __init__(self, loop: _ForwardLoop, captures: list, graph: Graph, index):
        self.loop, self.graph, self.index = loop, graph, index
        body = loop.op.attrs["body"]
        self.body = body
        self.captured = {id(p): x for (_, p), x in zip(body.captures, captures)}
        self.reads: dict[int, object] = {}

    def __call__(self, tensor):
        if tensor.op.graph is not self.body:
            return None
        if id(tensor) in self.captured:                # loop-invariant: the forward loop's input
            return self.captured[id(tensor)]
        const = _const_stand_in(tensor)
        if const is not None:
            return const
        read = self.reads.get(id(tensor))
        if read is None:
            stack = self.loop.stack(tensor)
            with context.graph_scope(self.graph):
                read = apply("TensorListGetItem", [stack, self.index],
                             {"element_dtype": tensor.dtype, "element_shape": tensor.shape, "num_elements": None})
            self.reads[id(tensor)] = read
        return read


@gradient("While")
def _while_grad(op, *grads):
    """A backward loop over the iterations in reverse: each runs the gradient of the body on the values
    that iteration saw (stacked by the forward loop) and adds up the gradients of loop invariants."""
    loop = _forward_loop(op)
    n = loop.num_vars
    body = op.attrs["body"]
    n_now = op.attrs["num_loop_vars"]
    captures = list(op.inputs[n_now:n_now + len(body.captures)])
    # the user's loop variables, and stacks of earlier gradients when a gradient of them is asked for
    var_ks = [k for k in range(n_now) if differentiable_dtype(op.outputs[k].dtype) and (k < n or grads[k] is not None)]
    cap_js = [j for j, t in enumerate(captures) if differentiable_dtype(t.dtype)]
    handles = list(graph_variables_read(body).values())
    if all(grads[k] is None for k in var_ks) or not (var_ks or cap_js or handles):
        return [None] * len(op.inputs)
    body_ops = list(body.operations)
    targets = [body.outputs[k] for k in var_ks]
    var_inputs = [body.inputs[k] for k in var_ks]
    cap_inputs = [body.captures[j][1] for j in cap_js]
    count = loop.iterations()
    initial = ([math_ops.subtract(count, 1)] + [or_zeros(grads[k], op.outputs[k]) for k in var_ks] +
               [or_zeros(None, captures[j]) for j in cap_js] + [_variable_zeros(h) for h in handles])
    invariants = ([TensorShape(())] + [op.outputs[k].shape for k in var_ks] + [captures[j].shape for j in cap_js]
                  + [h.get().shape for h in handles])
    nv, nc = len(var_ks), len(cap_js)
    resolved = []

    def test(i, *_):
        return math_ops.greater_equal(i, 0)

    def step(i, *values):
        graph = context.current_graph()
        graph.resolver = _Stacked(loop, captures, graph, i)
        resolved.append(graph)
        weights, cap_sums, var_sums = values[:nv], values[nv:nv + nc], values[nv + nc:]
        in_grads, variable_grads = backprop(body_ops, targets, list(weights), var_inputs + cap_inputs, handles)
        new_weights = [or_zeros(g, w) for g, w in zip(in_grads[:nv], weights)]
        new_caps = [s if g is None else gradients.add(s, g) for s, g in zip(cap_sums, in_grads[nv:])]
        new_vars = [s if variable_grads.get(id(h)) is None else gradients.add(s, variable_grads[id(h)])
                    for s, h in zip(var_sums, handles)]
        return tuple([math_ops.subtract(i, 1)] + new_weights + new_caps + new_vars)

    try:
        final = while_loop(test, step, tuple(initial), shape_invariants=invariants, name="while_grad")
    finally:
        for graph in resolved:
            graph.resolver = None
    final = list(final)
    out = [None] * len(op.inputs)                   # the forward loop has gained loop variables by now
    for k, g in zip(var_ks, final[1:1 + nv]):
        out[k] = g
    first_capture = op.attrs["num_loop_vars"]
    for j, g in zip(cap_js, final[1 + nv:1 + nv + nc]):
        out[first_capture + j] = g
    for h, g in zip(handles, final[1 + nv + nc:]):
        report_variable_gradient(h, g)
    return out
