"""The programs whose generated C is kept in this folder (``<name>.c``): a unit test compares the code
generator's output with it, and a build test compiles this module and runs it against eager."""
import runtime as rt
from runtime.optimizer import optimize

F = rt.float32


@rt.function(input_signature=[rt.TensorSpec([None, None], F), rt.TensorSpec([None], F)])
def bias_relu(x, b):
    return rt.nn.relu(x + b)


@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def double(a):
    return a + a


@rt.function(input_signature=[rt.TensorSpec([None], F)])
def chain(x):
    return rt.tanh(x * 1.5 + 0.5) * 2.0 - x


@rt.function(input_signature=[rt.TensorSpec([None], rt.int32)])
def collatz(x):
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)


@rt.function
def power(x, y):
    result = rt.eye(3, dtype=rt.int32)
    for _ in range(y):
        result = rt.matmul(x, result)
    return result


power.get_concrete_function(rt.TensorSpec([3, 3], rt.int32), 3)


@rt.function(input_signature=[rt.TensorSpec([], rt.int32)])
def countdown(n):
    total = rt.constant(0)
    while n > 0:
        total += n
        n -= 1
    return total


@rt.function(input_signature=[rt.TensorSpec([None, 16], F)])
def softmax(x):
    return rt.nn.softmax(x)


@rt.function(input_signature=[rt.TensorSpec([None, 3], F), rt.TensorSpec([None, 3], F)])
def pairwise(a, b):
    return rt.reduce_sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


GOLDEN = ["bias_relu", "chain", "collatz", "countdown", "double", "pairwise", "power", "softmax"]


def graphs():
    """name -> the optimized graph of the program's one signature, as the build lowers it."""
    out = {}
    for name in GOLDEN:
        function = globals()[name]
        concrete = (function.concrete_functions() or [function.get_concrete_function()])[0]
        out[name] = optimize(concrete.graph)
    return out
