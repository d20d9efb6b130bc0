"""Guide: "Executing Python side effects" and iterators.

``print`` and ``external_list.append`` run while tracing, which for a built
signature happened at build time; ``rt.print`` runs on every call.
"""
import sys

import runtime as rt
from examples._check import compare


@rt.function
def f(x):
    print("Traced with", x)
    rt.print("Executed with", x, output_stream=sys.stdout)
    return x


f.get_concrete_function(1)
f.get_concrete_function(2)

external_list = []


@rt.function
def side_effect(x):
    print('Python side effect')
    external_list.append(x)
    return x + 1


side_effect.get_concrete_function(rt.TensorSpec([], rt.int32))


@rt.function
def buggy_consume_next(iterator):
    value = next(iterator)
    rt.print("Value:", value, output_stream=sys.stdout)
    return value


def run():
    appended = len(external_list)
    results = [
        compare("f(1)", f, 1),
        compare("f(1) again", f, 1),
        compare("f(2)", f, 2),
    ]
    for _ in range(3):
        side_effect(rt.constant(1))
    results.append(("external_list grows only while tracing", len(external_list) - appended, 0))
    iterator = iter([1, 2, 3])
    values = [int(buggy_consume_next(iterator)) for _ in range(3)]
    results.append(("buggy_consume_next: next() ran once, at trace", values, [1, 1, 1]))
    return results
