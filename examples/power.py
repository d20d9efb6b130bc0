"""Guide: "Seeing the speed-up": 100 chained 10x10 int32 matmuls, the Python loop unrolled while tracing."""
import numpy as np

import runtime as rt


def power(x, y):
    result = rt.eye(10, dtype=rt.dtypes.int32)
    for _ in range(y):
        result = rt.matmul(x, result)
    return result


power_as_graph = rt.function(power)
power_as_graph.get_concrete_function(rt.TensorSpec([10, 10], rt.int32), 100)


def run():
    x = rt.random.uniform(shape=[10, 10], minval=-1, maxval=2, dtype=rt.int32, seed=1)
    reference = np.linalg.matrix_power(x.numpy().astype(np.int64), 100).astype(np.int32)
    return [
        ("power_as_graph(x, 100) vs eager power(x, 100)", power_as_graph(x, 100), power(x, 100)),
        ("power_as_graph(x, 100) vs numpy matrix_power", power_as_graph(x, 100), reference),
    ]
