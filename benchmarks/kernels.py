"""The functions the benchmarks build ahead of time (``python -m benchmarks`` builds this module).

Each signature measured with native code is declared here; ``twenty_ops`` is also
called at run time with shapes nobody built, to time a run-time retrace.
"""
import runtime as rt


def power(x, y):
    """The guide's ``power``: the Python loop unrolls into ``y`` chained matmuls while tracing."""
    result = rt.eye(10, dtype=rt.dtypes.int32)
    for _ in range(y):
        result = rt.matmul(x, result)
    return result


power_as_graph = rt.function(power)
power_as_graph.get_concrete_function(rt.TensorSpec([10, 10], rt.int32), 100)


@rt.function
def add(a, b):
    """One op: the cost of a call."""
    return a + b


add.get_concrete_function(rt.TensorSpec([], rt.float32), rt.TensorSpec([], rt.float32))


@rt.function(input_signature=[rt.TensorSpec([], rt.float32), rt.TensorSpec([], rt.float32)])
def add_declared(a, b):
    """One op with a declared signature: Python numbers convert to it on the C call path."""
    return a + b


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32)])
def chain(x):
    """An elementwise chain with a transcendental: one fused loop."""
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - x


@rt.function
def twenty_ops(x, y):
    """20 ops (elementwise, matmul, reductions) for timing a run-time retrace."""
    a = x * 2.0 + y                      # 2
    b = rt.tanh(a) - rt.sigmoid(y)       # 5
    c = rt.matmul(b, rt.transpose(x))    # 7
    d = rt.maximum(c, 0.0) / 3.0         # 9
    e = rt.exp(-rt.abs(d))               # 12
    f = rt.reduce_sum(e, axis=1)         # 13
    g = rt.sqrt(rt.square(f) + 1.0)      # 16
    h = rt.reduce_max(g) - rt.reduce_min(g)  # 19
    return rt.cast(h, rt.float64)        # 20


twenty_ops.get_concrete_function(rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, None], rt.float32))


def _branch(x):
    for _ in range(4):
        x = rt.sqrt(rt.abs(rt.sin(x) * 1.25 + rt.cos(x))) + rt.tanh(x)
        x = rt.reduce_sum(x) * 1e-9 + x    # a reduction between loops: each round is its own loop
    return rt.reduce_sum(x)


@rt.function(input_signature=[rt.TensorSpec([None], rt.float32), rt.TensorSpec([None], rt.float32)])
def two_branches(a, b):
    """Two independent heavy branches, joined only at the end."""
    return _branch(a) + _branch(b)
