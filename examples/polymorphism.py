"""Guide: "Polymorphism: one Function, many graphs"."""
import runtime as rt
from examples._check import compare


@rt.function
def my_relu(x):
    return rt.maximum(0., x)


my_relu.get_concrete_function(rt.TensorSpec([], rt.float32))
my_relu.get_concrete_function([1, -1])
my_relu.get_concrete_function(rt.TensorSpec([2], rt.float32))


def run():
    results = [
        compare("my_relu(5.5)", my_relu, rt.constant(5.5)),
        compare("my_relu([1, -1])", my_relu, [1, -1]),
        compare("my_relu([3., -3.])", my_relu, rt.constant([3., -3.])),
        compare("my_relu(-2.5)", my_relu, rt.constant(-2.5)),
        compare("my_relu([-1., 1.])", my_relu, rt.constant([-1., 1.])),
    ]
    # Three signatures, all built ahead of time: no call above traced.
    results.append(("traces at run time", my_relu.experimental_get_tracing_count(), 0))
    return results
