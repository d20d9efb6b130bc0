"""Guide: "Taking advantage of graphs": a Function is called like the Python function it wraps."""
import runtime as rt
from examples._check import compare


def a_regular_function(x, y, b):
    x = rt.matmul(x, y)
    x = x + b
    return x


a_function_that_uses_a_graph = rt.function(a_regular_function)
a_function_that_uses_a_graph.get_concrete_function(
    rt.TensorSpec([1, 2], rt.float32), rt.TensorSpec([2, 1], rt.float32), rt.TensorSpec([], rt.float32))


def inner_function(x, y, b):
    x = rt.matmul(x, y)
    x = x + b
    return x


@rt.function
def outer_function(x):
    y = rt.constant([[2.0], [3.0]])
    b = rt.constant(4.0)
    return inner_function(x, y, b)


outer_function.get_concrete_function(rt.TensorSpec([1, 2], rt.float32))


@rt.function
def add(a, b):
    return a + b


@rt.function
def dense_layer(x, w, b):
    return add(rt.matmul(x, w), b)


add.get_concrete_function(rt.TensorSpec([2, 2], rt.float32), rt.TensorSpec([2, 2], rt.float32))
dense_layer.get_concrete_function(
    rt.TensorSpec([3, 2], rt.float32), rt.TensorSpec([2, 2], rt.float32), rt.TensorSpec([2], rt.float32))


def run():
    x1 = rt.constant([[1.0, 2.0]])
    y1 = rt.constant([[2.0], [3.0]])
    b1 = rt.constant(4.0)
    return [
        ("a_function_that_uses_a_graph(x1, y1, b1)", a_function_that_uses_a_graph(x1, y1, b1),
         a_regular_function(x1, y1, b1)),
        compare("outer_function([[1., 2.]])", outer_function, rt.constant([[1.0, 2.0]])),
        compare("dense_layer(ones([3, 2]), ones([2, 2]), ones([2]))", dense_layer,
                rt.ones([3, 2]), rt.ones([2, 2]), rt.ones([2])),
        compare("add(ones([2, 2]), ones([2, 2]))", add, rt.ones([2, 2]), rt.ones([2, 2])),
    ]
