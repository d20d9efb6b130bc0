"""Guide: "Graph execution vs. eager execution": Python ``print`` runs only while tracing.

The built module traced ``get_MSE`` at build time, so importing it and calling it
prints nothing; running it eagerly prints "Calculating MSE!" on every call.
"""
import runtime as rt
from examples._check import eagerly


@rt.function
def get_MSE(y_true, y_pred):
    print("Calculating MSE!")
    sq_diff = rt.pow(y_true - y_pred, 2)
    return rt.reduce_mean(sq_diff)


get_MSE.get_concrete_function(rt.TensorSpec([5], rt.int32), rt.TensorSpec([5], rt.int32))


def run():
    y_true = rt.constant([4, 7, 4, 9, 0])
    y_pred = rt.constant([7, 4, 1, 6, 3])
    for _ in range(3):
        error = get_MSE(y_true, y_pred)
    return [("get_MSE(y_true, y_pred)", error, eagerly(get_MSE.python_function, y_true, y_pred))]
