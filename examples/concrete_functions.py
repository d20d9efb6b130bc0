"""Guide: "Obtaining concrete functions" and "Obtaining graphs"."""
import runtime as rt
from examples._check import compare, error_name


@rt.function
def double(a):
    return a + a


double_strings = double.get_concrete_function(rt.TensorSpec(shape=[], dtype=rt.string))


@rt.function
def pow(a, b):
    return a ** b


square = pow.get_concrete_function(a=rt.TensorSpec(None, rt.float32), b=2)


def run():
    concrete = double.get_concrete_function(rt.constant("a"))
    square_fn = pow.get_concrete_function(a=rt.TensorSpec(None, rt.float32), b=2)
    nodes = [f"{node.input} -> {node.name}" for node in concrete.graph.as_graph_def().node]
    return [
        ("get_concrete_function(constant('a')) is the built one", concrete is double_strings, True),
        compare("double_strings(constant('a'))", concrete, rt.constant("a")),
        ("double_strings(a=constant('b'))", concrete(a=rt.constant("b")), double.python_function(rt.constant("b"))),
        ("double_strings(constant(1))", error_name(concrete, rt.constant(1)), "InvalidArgumentError"),
        ("square(constant(10.))", square_fn(rt.constant(10.0)), pow.python_function(rt.constant(10.0), 2)),
        ("square([[1., 2.], [3., 4.]])", square_fn(rt.constant([[1.0, 2.0], [3.0, 4.0]])),
         pow.python_function(rt.constant([[1.0, 2.0], [3.0, 4.0]]), 2)),
        ("square(constant(10.), b=3)", error_name(square_fn, rt.constant(10.0), b=3), "TypeError"),
        ("graph nodes", nodes, ["[] -> a", "['a', 'a'] -> add", "['add'] -> Identity"]),
    ]
