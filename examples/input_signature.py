"""Guide: "Controlling retracing": ``input_signature`` and ``None`` dimensions."""
import runtime as rt
from examples._check import compare, error_name


@rt.function(input_signature=(rt.TensorSpec(shape=[None], dtype=rt.int32),))
def next_collatz(x):
    print("Tracing with", x)
    return rt.where(x % 2 == 0, x // 2, 3 * x + 1)


@rt.function(input_signature=(rt.TensorSpec(shape=[None], dtype=rt.int32),))
def g(x):
    print('Tracing with', x)
    return x


def run():
    return [
        compare("next_collatz([1, 2])", next_collatz, rt.constant([1, 2])),
        compare("next_collatz([5, 6, 7, 8, 27])", next_collatz, rt.constant([5, 6, 7, 8, 27])),
        ("next_collatz([[1, 2], [3, 4]])", error_name(next_collatz, rt.constant([[1, 2], [3, 4]])), "ValueError"),
        ("next_collatz([1.0, 2.0])", error_name(next_collatz, rt.constant([1.0, 2.0])), "ValueError"),
        compare("g([1, 2, 3])", g, rt.constant([1, 2, 3])),
        compare("g([1, 2, 3, 4, 5])", g, rt.constant([1, 2, 3, 4, 5])),
        ("traces at run time", g.experimental_get_tracing_count() + next_collatz.experimental_get_tracing_count(),
         0),
    ]
