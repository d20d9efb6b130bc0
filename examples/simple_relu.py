"""Guide: "Converting Python functions to graphs": a tensor ``if`` becomes a graph conditional."""
import runtime as rt
from examples._check import compare


def simple_relu(x):
    if rt.greater(x, 0):
        return x
    else:
        return 0


tf_simple_relu = rt.function(simple_relu)
tf_simple_relu.get_concrete_function(rt.TensorSpec([], rt.int32))


def run():
    graph = tf_simple_relu.get_concrete_function(rt.TensorSpec([], rt.int32)).graph
    ops = [node.op for node in graph.as_graph_def().node]
    return [
        ("first branch: tf_simple_relu(1)", tf_simple_relu(rt.constant(1)), simple_relu(rt.constant(1))),
        ("second branch: tf_simple_relu(-1)", tf_simple_relu(rt.constant(-1)), simple_relu(rt.constant(-1))),
        compare("tf_simple_relu(7)", tf_simple_relu, rt.constant(7)),
        ("graph has a conditional", any("if" in op.lower() or "cond" in op.lower() for op in ops), True),
    ]
