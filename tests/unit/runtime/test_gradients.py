"""Walk the op registry: every differentiable op's gradient agrees with central finite differences (float64).

``GRAD_CASES`` maps each op type to a check: the op inside a small float64 program whose gradient is
taken eagerly (tape over eager ops) and inside ``rt.function`` (symbolic differentiation of the traced
graph), both compared with central differences of the program. ``NO_GRADIENT`` lists the ops with no
float-to-float path (with the reason). ``test_every_op_is_classified`` fails for an op in neither table
(unless it is marked non-differentiable in the registry), so a new differentiable op cannot go without a
gradient or a check.
"""
from __future__ import annotations

import numpy as np
import pytest
from runtime_test_helpers import op_types

import runtime as rt
from runtime.executor import execute
from runtime.ops import functional_ops, registry
from runtime.polymorphic_function import tape_graph
from runtime.ops.registry import Spec, apply
from runtime.shapes import TensorShape
from runtime.tensor_array import list_add

F64 = rt.float64
EPS = 1e-6


def _rng(seed=0):
    return np.random.default_rng(seed)


def normal(*shape, seed=0):
    return _rng(seed).standard_normal(shape)


def positive(*shape, seed=0):
    return _rng(seed).uniform(0.5, 2.0, shape)


def _flat_outputs(value):
    return [v for v in (value if isinstance(value, (list, tuple)) else [value]) if v is not None]


def _weighted_sum(fn, xs, weights):
    outs = _flat_outputs(fn(*xs))
    total = 0.0
    for out, w in zip(outs, weights):
        total += float(np.sum(np.asarray(out.numpy(), np.float64) * w))
    return total


def numeric_gradient(fn, arrays, weights, wrt):
    """Central differences of sum(weights * fn(arrays)) with respect to ``arrays[i]`` for i in ``wrt``."""
    grads = []
    for i in wrt:
        grad = np.zeros_like(arrays[i])
        for index in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][index] += EPS
            minus[i][index] -= EPS
            grad[index] = (_weighted_sum(fn, [rt.constant(a) for a in plus], weights) -
                           _weighted_sum(fn, [rt.constant(a) for a in minus], weights)) / (2 * EPS)
        grads.append(grad)
    return grads


def _with_arity(n, fn):
    """``fn(*xs)`` as a function of exactly ``n`` named parameters."""
    names = ", ".join(f"x{i}" for i in range(n))
    scope = {"fn": fn}
    exec(f"def program({names}):\n    return fn({names})\n", scope)  # noqa: S102 - a fixed template
    return scope["program"]


def fd_case(op_type, fn, inputs, wrt=None, eager=True, tol=(1e-6, 1e-8)):
    """A check that the gradient of ``fn`` (a program using ``op_type``) matches finite differences.

    ``inputs`` are numpy arrays (float64 ones are differentiated unless ``wrt`` names the positions);
    ``eager=False`` for ops that exist only in graphs (``If``, ``While``).
    """
    def check():
        arrays = [np.asarray(a) for a in inputs]
        positions = wrt if wrt is not None else [i for i, a in enumerate(arrays) if a.dtype == np.float64]
        consts = [rt.constant(a) for a in arrays]
        traced = rt.function(_with_arity(len(arrays), fn), autograph=False)
        evaluate = fn if eager else traced
        outs = _flat_outputs(evaluate(*consts))
        weights = [normal(*out.shape, seed=7 + k) for k, out in enumerate(outs)]
        expected = numeric_gradient(evaluate, arrays, weights, positions)

        def taped(*xs):
            sources = [xs[i] for i in positions]
            with rt.GradientTape(persistent=True) as tape:
                tape.watch(sources)
                ys = _flat_outputs(fn(*xs))
            grads = tape.gradient(ys, sources, output_gradients=[rt.constant(w) for w in weights])
            return grads, tape

        if eager:
            grads, tape = taped(*consts)
            recorded = {op.type for op in tape._records}
            assert op_type in recorded or op_type == "PartitionedCall", \
                f"the case for {op_type} does not run it eagerly (ran {sorted(recorded)})"
            _compare(op_type, "eager", grads, expected, tol)
        graph_fn = rt.function(_with_arity(len(arrays), lambda *xs: taped(*xs)[0]), autograph=False)
        concrete = graph_fn.get_concrete_function(*consts)
        concrete.graph.verify()
        if op_type != "PartitionedCall":
            assert op_type in op_types(concrete.graph), f"the case for {op_type} does not trace it"
        _compare(op_type, "traced", graph_fn(*consts), expected, tol)
    return check


def _compare(op_type, mode, grads, expected, tol):
    assert len(grads) == len(expected)
    for k, (got, want) in enumerate(zip(grads, expected)):
        assert got is not None, f"{op_type} ({mode}): no gradient for input {k}"
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want, rtol=tol[0], atol=tol[1],
                                   err_msg=f"{op_type} ({mode}): gradient of input {k}")


# ---------------------------------------------------------------------------
# The cases.

def _unary(op_type, fn, x=None):
    return fd_case(op_type, fn, [normal(2, 3) if x is None else x])


def _binary(op_type, fn, x=None, y=None):
    """Both operands, broadcasting ([2, 3] with [3]; [2, 1] with [1, 3])."""
    a = normal(2, 3, seed=1) if x is None else x
    b = normal(3, seed=2) if y is None else y
    first = fd_case(op_type, fn, [a, b])
    second = fd_case(op_type, fn, [a[:, :1], b[None, :]])

    def check():
        first()
        second()
    return check


def _variable_case():
    """Gradients with respect to a variable (read by ``ReadVariableOp``), eagerly and traced."""
    def check():
        start = normal(2, 2)
        v = rt.Variable(start)
        x = rt.constant(normal(2, 2, seed=3))

        def loss():
            return rt.reduce_sum(rt.sin(v * x) * v)

        def numeric():
            grad = np.zeros_like(start)
            for index in np.ndindex(start.shape):
                values = []
                for sign in (1, -1):
                    moved = start.copy()
                    moved[index] += sign * EPS
                    v.assign(moved)
                    values.append(float(loss()))
                grad[index] = (values[0] - values[1]) / (2 * EPS)
            v.assign(start)
            return grad

        expected = numeric()
        with rt.GradientTape() as tape:
            y = loss()
        np.testing.assert_allclose(tape.gradient(y, v).numpy(), expected, rtol=1e-6, atol=1e-8)

        @rt.function
        def traced():
            with rt.GradientTape() as tape:
                y = loss()
            return tape.gradient(y, v)
        assert "ReadVariableOp" in op_types(traced.get_concrete_function().graph)
        np.testing.assert_allclose(traced().numpy(), expected, rtol=1e-6, atol=1e-8)
    return check


def _call_case():
    """A Function called eagerly under a tape is one PartitionedCall op."""
    inner = rt.function(lambda x, y: rt.tanh(rt.matmul(x, y)) * x[:, :1], autograph=False)

    def check():
        fd_case("PartitionedCall", inner, [normal(2, 3), normal(3, 2, seed=1)])()
        x, y = rt.constant(normal(2, 3)), rt.constant(normal(3, 2, seed=1))
        with rt.GradientTape() as tape:
            tape.watch(x)
            inner(x, y)
        assert [op.type for op in tape._records] == ["PartitionedCall"]
    return check


def _native_call_case():
    """A built function called under a tape is one NativeCall op, whose gradient runs its graph again (on the
    variable values the call read). Its native code is stood in for by the executor here;
    tests/build/test_native_under_tape.py runs real native code."""
    v = rt.Variable(normal(2, 2, seed=2))
    inner = rt.function(lambda x, y: rt.tanh(rt.matmul(x, y) + v) * x[:, :1], autograph=False)
    concrete = inner.get_concrete_function(rt.TensorSpec([2, 3], F64), rt.TensorSpec([3, 2], F64))

    def native(x, y):
        run = lambda arrays: execute(concrete.graph, arrays)  # noqa: E731 -- the native code's stand-in
        return functional_ops.call_native(tape_graph(concrete), [x, y], run, 1)[0]

    def check():
        arrays = [normal(2, 3), normal(3, 2, seed=1)]
        consts = [rt.constant(a) for a in arrays]
        weights = [normal(2, 2, seed=7)]
        expected = numeric_gradient(native, arrays, weights, [0, 1])
        with rt.GradientTape() as tape:
            tape.watch(consts)
            y = native(*consts)
            assert [op.type for op in tape._records] == ["NativeCall"]
            v.assign(v * 3.0)                   # the gradient reads v as the call did
        grads = tape.gradient(y, consts + [v], output_gradients=rt.constant(weights[0]))
        v.assign(v / 3.0)
        _compare("NativeCall", "eager", grads[:2], expected, (1e-6, 1e-8))
        with rt.GradientTape() as tape:
            y = inner(*consts)
        np.testing.assert_allclose(grads[2].numpy(), tape.gradient(y, v, output_gradients=rt.constant(weights[0])))
    return check


def _tensor_list_case(op_type):
    def write_read(x):
        ta = rt.TensorArray(F64, size=3)
        for i in range(3):
            ta = ta.write(i, x[i] * (i + 1.0))
        return ta.read(1) + ta.stack()[2]

    def unstack_stack(x):
        return rt.TensorArray(F64, size=3).unstack(rt.sin(x)).stack()

    def add(x, y):
        a = rt.TensorArray(F64, size=3).unstack(x)
        b = rt.TensorArray(F64, size=3).unstack(y * y)
        return apply("TensorListStack", [list_add(a.flow, b.flow)],
                     {"element_dtype": F64, "element_shape": TensorShape([2]), "num_elements": 3})

    programs = {"TensorListSetItem": (write_read, 1), "TensorListGetItem": (write_read, 1),
                "TensorListStack": (unstack_stack, 1), "TensorListFromTensor": (unstack_stack, 1),
                "TensorListAdd": (add, 2)}
    fn, n = programs[op_type]
    return fd_case(op_type, fn, [normal(3, 2, seed=s) for s in range(n)])


def _if_case():
    def program(x, y):
        return rt.cond(rt.reduce_sum(x) > 0, lambda: rt.sin(x) * y, lambda: x / y)
    positive_sum = np.abs(normal(2, 2)) + 0.1
    first = fd_case("If", program, [positive_sum, positive(2, 2)], eager=False)
    second = fd_case("If", program, [-positive_sum, positive(2, 2)], eager=False)

    def check():
        first()
        second()
    return check


def _while_case():
    def program(x, w):
        def body(i, h, acc):
            h = rt.tanh(rt.matmul(h, w) + x[i])
            return i + 1, h, acc + rt.reduce_sum(h * h)
        _, h, acc = rt.while_loop(lambda i, h, acc: i < 3, body,
                                  (rt.constant(0), rt.zeros([1, 2], F64), rt.constant(0.0, F64)))
        return h * acc
    return fd_case("While", program, [normal(3, 1, 2), normal(2, 2, seed=1) * 0.7], eager=False)


def _conv_input(op_type):
    x, w = normal(1, 5, 4, 2), normal(3, 2, 2, 3, seed=1)
    dy = normal(1, 3, 2, 3, seed=2)
    if op_type == "Conv2D":
        cases = [fd_case(op_type, lambda x, w: rt.nn.conv2d(x, w, strides, padding), [x, w])
                 for strides, padding in ((1, "VALID"), (2, "SAME"))]
    elif op_type == "Conv2DBackpropInput":
        cases = [fd_case(op_type, lambda w, dy: apply("Conv2DBackpropInput", [rt.constant([1, 5, 4, 2]), w, dy],
                                                      {"strides": (2, 2), "padding": "SAME"}), [w, dy])]
    else:
        cases = [fd_case(op_type, lambda x, dy: apply("Conv2DBackpropFilter", [x, rt.constant([3, 2, 2, 3]), dy],
                                                      {"strides": (2, 2), "padding": "SAME"}), [x, dy])]

    def check():
        for case in cases:
            case()
    return check


def _pool_case(op_type):
    # distinct values, far apart: small steps never change which element is a window's maximum
    x = _rng(3).permutation(48).reshape(1, 4, 6, 2).astype(np.float64) * 0.1
    attrs = {"ksize": (2, 3), "strides": (2, 2), "padding": "SAME"}
    y = apply("MaxPool", [rt.constant(x)], attrs).numpy()
    if op_type == "MaxPool":
        return fd_case(op_type, lambda x: rt.nn.max_pool2d(x, (2, 3), 2, "SAME"), [x], tol=(1e-5, 1e-7))
    if op_type == "MaxPoolGrad":
        return fd_case(op_type, lambda g: apply("MaxPoolGrad", [rt.constant(x), rt.constant(y), g], attrs),
                       [normal(*y.shape)])
    return fd_case(op_type, lambda g: apply("MaxPoolGradGrad", [rt.constant(x), rt.constant(y), g], attrs),
                   [normal(*x.shape)])


def _py_sin_times(x, y):
    """A py_function body: its gradient differentiates these (eager) ops, as TensorFlow's does."""
    return rt.sin(x) * y + x * x


GRAD_CASES = {
    "EagerPyFunc": fd_case("EagerPyFunc", lambda x, y: rt.py_function(_py_sin_times, [x, y], F64),
                           [normal(2, 3), normal(2, 3, seed=1)]),
    "AddV2": _binary("AddV2", rt.add),
    "Sub": _binary("Sub", rt.subtract),
    "Mul": _binary("Mul", rt.multiply),
    "RealDiv": _binary("RealDiv", rt.divide, y=positive(3, seed=2)),
    "FloorMod": _binary("FloorMod", rt.math.floormod, x=positive(2, 3, seed=1) * 3 + 0.05, y=positive(3, seed=2) + 0.5),
    "Pow": _binary("Pow", rt.pow, x=positive(2, 3, seed=1)),
    "Maximum": _binary("Maximum", rt.maximum),
    "Minimum": _binary("Minimum", rt.minimum),
    "SelectV2": fd_case("SelectV2", lambda x, y: rt.where(rt.constant([[True, False, True]]), x, y),
                        [normal(2, 3), normal(3, seed=1)]),
    "Neg": _unary("Neg", rt.negative),
    "Abs": _unary("Abs", rt.abs),
    "Sign": _unary("Sign", lambda x: rt.sign(x) * x),
    "Square": _unary("Square", rt.square),
    "Sqrt": _unary("Sqrt", rt.sqrt, positive(2, 3)),
    "Rsqrt": _unary("Rsqrt", rt.math.rsqrt, positive(2, 3)),
    "Exp": _unary("Exp", rt.exp),
    "Log": _unary("Log", rt.math.log, positive(2, 3)),
    "Tanh": _unary("Tanh", rt.tanh),
    "Sigmoid": _unary("Sigmoid", rt.sigmoid),
    "Sin": _unary("Sin", rt.sin),
    "Erf": _unary("Erf", rt.math.erf),
    "Erfc": _unary("Erfc", rt.math.erfc),
    "Softplus": _unary("Softplus", rt.math.softplus),
    "Cos": _unary("Cos", rt.cos),
    "Relu": _unary("Relu", rt.nn.relu),
    "Cast": _unary("Cast", lambda x: rt.cast(x, F64) * x),
    "MatMul": fd_case("MatMul", lambda a, b: rt.matmul(a, b) + rt.matmul(a, b, transpose_a=True, transpose_b=True)
                      + rt.matmul(b, a, transpose_b=True) @ a, [normal(3, 3), normal(3, 3, seed=1)]),
    "Sum": _unary("Sum", lambda x: rt.reduce_sum(x, 1) + rt.reduce_sum(x, keepdims=True)),
    "Mean": _unary("Mean", lambda x: rt.reduce_mean(x, 0, keepdims=True) * rt.reduce_mean(x)),
    "Max": _unary("Max", lambda x: rt.reduce_max(x, 1)),
    "Min": _unary("Min", lambda x: rt.reduce_min(x, 0, keepdims=True)),
    "Prod": _unary("Prod", lambda x: rt.reduce_prod(x, 1) + rt.reduce_prod(x * rt.constant([[1.0, 0.0, 1.0]], F64), 1)
                   + rt.reduce_prod(x * rt.constant([[0.0, 0.0, 1.0]], F64), 1)),
    "Cumsum": _unary("Cumsum", lambda x: rt.cumsum(x, 1) * rt.cumsum(x, 0, exclusive=True, reverse=True)),
    "Softmax": _unary("Softmax", rt.nn.softmax),
    "SumToShape": fd_case("SumToShape", lambda g: apply("SumToShape", [g, rt.constant([2, 1])]), [normal(3, 2, 4)]),
    "UnsortedSegmentSum": fd_case("UnsortedSegmentSum",
                                  lambda x: rt.unsorted_segment_sum(x, rt.constant([2, 0, 2]), 4), [normal(3, 2)]),
    "Identity": _unary("Identity", rt.identity),
    "Fill": fd_case("Fill", lambda v: rt.fill([2, 3], v), [np.float64(1.5)]),
    "Reshape": _unary("Reshape", lambda x: rt.reshape(x, [3, 2])),
    "BroadcastTo": fd_case("BroadcastTo", lambda x: rt.broadcast_to(x, [2, 3, 4]), [normal(3, 1)]),
    "Transpose": fd_case("Transpose", lambda x: rt.transpose(x, [1, 2, 0]), [normal(2, 3, 4)]),
    "ConcatV2": fd_case("ConcatV2", lambda x, y: rt.concat([x, y, x], 1), [normal(2, 3), normal(2, 1, seed=1)]),
    "Pack": fd_case("Pack", lambda x, y: rt.stack([x, y], 1), [normal(2, 3), normal(2, 3, seed=1)]),
    "Unpack": _unary("Unpack", lambda x: rt.unstack(x, axis=1)[0] * rt.unstack(x, axis=1)[2]),
    "ExpandDims": _unary("ExpandDims", lambda x: rt.expand_dims(x, 1)),
    "Squeeze": fd_case("Squeeze", lambda x: rt.squeeze(x, 1), [normal(2, 1, 3)]),
    "Tile": _unary("Tile", lambda x: rt.tile(x, [2, 3])),
    "PadV2": fd_case("PadV2", lambda x, c: rt.pad(x, [[1, 2], [0, 1]], constant_values=c) ** 2,
                     [normal(2, 3), np.float64(0.5)]),
    "MirrorPad": fd_case("MirrorPad", lambda x: rt.pad(x, [[1, 1], [2, 0]], "REFLECT") ** 2
                         + rt.pad(x, [[2, 0], [0, 2]], "SYMMETRIC"), [normal(3, 4)]),
    "PadGrad": fd_case("PadGrad", lambda g: apply("PadGrad", [g, rt.constant([[1, 1], [1, 0]])], {"mode": "REFLECT"})
                       * apply("PadGrad", [g, rt.constant([[1, 1], [1, 0]])], {"mode": "CONSTANT"}),
                       [normal(6, 4)]),
    "GatherV2": fd_case("GatherV2",
                        lambda x: rt.gather(x, [[2, 0], [2, 2]], axis=1) + rt.gather(x, [1, 1])[:, :1, None],
                        [normal(2, 3)]),
    "StridedSlice": fd_case("StridedSlice", lambda x: x[1:, ::-2, None, 0], [normal(3, 4, 2)]),
    "StridedSliceGrad": fd_case("StridedSliceGrad", lambda g: apply(
        "StridedSliceGrad", [rt.constant([3, 4]), g], {"spec": (("s", 1, None, None), ("s", None, None, -2))}),
        [normal(2, 2)]),
    "CheckNumerics": _unary("CheckNumerics", lambda x: rt.debugging.check_numerics(x, "x") * x),
    "ReadVariableOp": _variable_case(),
    "PartitionedCall": _call_case(),
    "NativeCall": _native_call_case(),
    "If": _if_case(),
    "While": _while_case(),
    "TensorListSetItem": _tensor_list_case("TensorListSetItem"),
    "TensorListGetItem": _tensor_list_case("TensorListGetItem"),
    "TensorListStack": _tensor_list_case("TensorListStack"),
    "TensorListFromTensor": _tensor_list_case("TensorListFromTensor"),
    "TensorListAdd": _tensor_list_case("TensorListAdd"),
    "Conv2D": _conv_input("Conv2D"),
    "Conv2DBackpropInput": _conv_input("Conv2DBackpropInput"),
    "Conv2DBackpropFilter": _conv_input("Conv2DBackpropFilter"),
    "MaxPool": _pool_case("MaxPool"),
    "MaxPoolGrad": _pool_case("MaxPoolGrad"),
    "MaxPoolGradGrad": _pool_case("MaxPoolGradGrad"),
    "AvgPool": fd_case("AvgPool", lambda x: rt.nn.avg_pool2d(x, (2, 3), 2, "SAME"), [normal(1, 4, 6, 2)]),
    "AvgPoolGrad": fd_case("AvgPoolGrad", lambda g: apply("AvgPoolGrad", [rt.constant(normal(1, 4, 6, 2)), g], {
        "ksize": (2, 3), "strides": (2, 2), "padding": "SAME"}), [normal(1, 2, 3, 2)]),
    "LogSoftmax": _unary("LogSoftmax", rt.nn.log_softmax),
    "SparseSoftmaxCrossEntropyWithLogits": fd_case(
        "SparseSoftmaxCrossEntropyWithLogits",
        lambda x: rt.nn.sparse_softmax_cross_entropy_with_logits(labels=rt.constant([2, 0]), logits=x),
        [normal(2, 3)]),
    "Log1p": _unary("Log1p", rt.math.log1p, positive(2, 3)),
    "Expm1": _unary("Expm1", rt.math.expm1),
    "Erf": _unary("Erf", rt.math.erf),
    "SquaredDifference": _binary("SquaredDifference", rt.math.squared_difference),
    # complex numbers: real programs of real inputs through complex products (the gradients' conjugates)
    "Complex": fd_case("Complex", lambda x, y: rt.math.real(rt.complex(x, y) * rt.complex(y, x))
                       + rt.math.imag(rt.complex(x, y) * rt.complex(y, x) / rt.complex(x, 1.0 + y * y)),
                       [normal(2, 3), normal(2, 3, seed=1)]),
    "Real": fd_case("Real", lambda x, y: rt.math.real(rt.complex(x, y) * rt.complex(x, x)), [normal(3), normal(3, seed=1)]),
    "Imag": fd_case("Imag", lambda x, y: rt.math.imag(rt.complex(x, y) * rt.complex(y, x)), [normal(3), normal(3, seed=1)]),
    "Conj": fd_case("Conj", lambda x, y: rt.math.real(rt.math.conj(rt.complex(x, y)) * rt.complex(y, x * x)),
                    [normal(3), normal(3, seed=1)]),
    "ComplexAbs": fd_case("ComplexAbs", lambda x, y: rt.math.abs(rt.complex(x, y) * rt.complex(y, x)),
                          [normal(3), normal(3, seed=1)]),
    "Sort": fd_case("Sort", lambda x: rt.sort(x, axis=0) * rt.sort(x, direction="DESCENDING"), [normal(3, 4)]),
    "TopKV2": fd_case("TopKV2", lambda x: rt.math.top_k(x, 2).values, [normal(3, 4)]),
    "MatrixInverse": fd_case("MatrixInverse", lambda a: rt.linalg.inv(a) + rt.linalg.inv(a, adjoint=True) * a,
                             [normal(3, 3) + 3 * np.eye(3)]),
    "MatrixDeterminant": fd_case("MatrixDeterminant", lambda a: rt.linalg.det(a), [normal(2, 3, 3)]),
    "MatrixSolve": fd_case("MatrixSolve", lambda a, b: rt.linalg.solve(a, b) + rt.linalg.solve(a, b, adjoint=True),
                           [normal(3, 3) + 3 * np.eye(3), normal(3, 2, seed=1)]),
    "GatherNd": fd_case("GatherNd", lambda x: rt.gather_nd(x, [[1, 0], [0, 2], [1, 0]]) + rt.gather_nd(x, [[1]])[0],
                        [normal(2, 3)]),
    "ScatterNd": fd_case("ScatterNd", lambda u: rt.scatter_nd([[1], [3], [1]], u, [4, 2]) ** 2, [normal(3, 2)]),
    "EnsureShape": _unary("EnsureShape", lambda x: rt.ensure_shape(x, [2, None]) * x),
}

# Ops with no path from a float input to a float output, and why.
NO_GRADIENT = {
    "Placeholder": "no inputs", "Const": "no inputs", "Eye": "no inputs",
    "Shape": "integer output", "Size": "integer output", "Rank": "integer output",
    "ArgMax": "integer output", "ArgMin": "integer output", "Where": "integer output",
    "Greater": "bool output", "GreaterEqual": "bool output", "Less": "bool output", "LessEqual": "bool output",
    "Equal": "bool output", "NotEqual": "bool output",
    "LogicalAnd": "bool only", "LogicalOr": "bool only", "LogicalXor": "bool only", "LogicalNot": "bool only",
    "Any": "bool only", "All": "bool only",
    "PrintV2": "no outputs", "Assert": "no outputs",
    "IsNan": "bool output", "IsInf": "bool output", "IsFinite": "bool output",
}


def _float_to_float(opdef) -> bool | None:
    """Whether an op with scalar float64 inputs and no attributes infers a float output (None: can't tell)."""
    if opdef.num_inputs in (None, 0) or opdef.infer is None:
        return None
    try:
        outs = opdef.infer([Spec(F64, TensorShape(()))] * opdef.num_inputs, {})
    except Exception:  # noqa: BLE001 - ops that need attributes or other dtypes: the tables decide
        return None
    return any(dtype.is_floating for dtype, _ in outs)


def test_every_op_is_classified():
    unclassified, wrong = [], []
    for op_type, opdef in sorted(registry.all_opdefs().items()):
        if op_type in GRAD_CASES:
            if opdef.grad is None:
                wrong.append(f"{op_type} has a gradient case but no registered gradient")
            if not opdef.differentiable:
                wrong.append(f"{op_type} has a gradient case but is marked non-differentiable")
        elif op_type in NO_GRADIENT:
            if _float_to_float(opdef):
                wrong.append(f"{op_type} is listed as having no float path, but it maps floats to floats")
        elif opdef.differentiable:
            unclassified.append(op_type)
    assert not unclassified, (f"differentiable ops without a gradient case: {unclassified}; register a gradient "
                              "beside the op and add a finite-difference case to GRAD_CASES (or mark the op "
                              "with registry.not_differentiable, or list it in NO_GRADIENT with the reason)")
    assert not wrong, "\n".join(wrong)
    stale = sorted((set(GRAD_CASES) | set(NO_GRADIENT)) - set(registry.all_opdefs()))
    assert not stale, f"cases for ops that are not registered: {stale}"


@pytest.mark.parametrize("op_type", sorted(GRAD_CASES))
def test_gradient_matches_finite_differences(op_type):
    GRAD_CASES[op_type]()
