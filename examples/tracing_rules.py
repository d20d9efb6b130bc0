"""Guide: "When is a Function tracing?" and "Tracing rules".

A tensor argument is keyed by shape and dtype, a Python value by its value: the
module builds ``a_function_with_python_side_effect`` for an int32 scalar tensor
and for the Python ints 2 and 3, and ``double`` for int32, float32 and string.
"""
import runtime as rt
from examples._check import compare


@rt.function
def a_function_with_python_side_effect(x):
    print("Tracing!")
    return x * x + rt.constant(2)


a_function_with_python_side_effect.get_concrete_function(rt.TensorSpec([], rt.int32))
a_function_with_python_side_effect.get_concrete_function(2)
a_function_with_python_side_effect.get_concrete_function(3)


@rt.function
def double(a):
    print("Tracing with", a)
    return a + a


double.get_concrete_function(rt.TensorSpec([], rt.int32))
double.get_concrete_function(rt.TensorSpec([], rt.float32))
double.get_concrete_function(rt.TensorSpec([], rt.string))


def run():
    f = a_function_with_python_side_effect
    return [
        compare("a_function_with_python_side_effect(constant(2))", f, rt.constant(2)),
        compare("a_function_with_python_side_effect(constant(3))", f, rt.constant(3)),
        compare("a_function_with_python_side_effect(2)", f, 2),
        compare("a_function_with_python_side_effect(3)", f, 3),
        compare("double(constant(1))", double, rt.constant(1)),
        compare("double(constant(1.1))", double, rt.constant(1.1)),
        compare("double(constant('a'))", double, rt.constant("a")),
        compare("double(constant('b'))", double, rt.constant("b")),
        ("signatures", len(double.concrete_functions()), 3),
    ]
