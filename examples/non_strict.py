"""Guide: "Non-strict execution": an unused op is not run in a graph."""
import runtime as rt
from examples._check import error_name


def unused_return_eager(x):
    rt.gather(x, [1])  # unused
    return x


@rt.function
def unused_return_graph(x):
    rt.gather(x, [1])  # unused
    return x


unused_return_graph.get_concrete_function(rt.TensorSpec([1], rt.float32))


def run():
    x = rt.constant([0.0])
    return [
        ("eagerly, the unused out-of-range gather fails", error_name(unused_return_eager, x),
         "InvalidArgumentError"),
        ("unused_return_graph([0.])", unused_return_graph(x), x),
    ]
