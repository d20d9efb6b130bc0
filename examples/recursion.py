"""Guide: "Recursive Functions are not supported" and "All outputs of a Function must be return values"."""
import runtime as rt
from examples._check import compare, error_name


@rt.function
def recursive_fn(n):
    if n > 0:
        return recursive_fn(n - 1)
    else:
        return 1


@rt.function
def recursive_py(n):
    if n > 0:
        print('tracing')
        return recursive_py(n - 1)
    else:
        return 1


recursive_py.get_concrete_function(5)

x = None


@rt.function
def leaky_function(a):
    global x
    x = a + 1
    return a + 2


leaky_function.get_concrete_function(rt.TensorSpec([], rt.int32))


def _one_line_error():
    try:
        recursive_fn(rt.constant(5))
    except Exception as e:  # noqa: BLE001 - the guide shows that the error message is short
        return len(str(e).splitlines()) <= 3
    return False


def run():
    return [
        ("recursion with a tensor condition: a short error", _one_line_error(), True),
        compare("recursive_py(5): Python recursion unrolls", recursive_py, 5),
        ("leaky_function(constant(1))", leaky_function(rt.constant(1)), rt.constant(1) + 2),
        # Read before anything runs leaky_function eagerly (which would leave an eager tensor in x).
        ("the leaked global is not a value", error_name(lambda: x.numpy()), "AttributeError"),
    ]
