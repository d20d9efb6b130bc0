"""Guide: "AutoGraph transformations": ``while``, ``for`` and ``if`` on tensors become graph control flow."""
import sys

import numpy as np

import runtime as rt
from examples._check import compare


@rt.function
def f(x):
    while rt.reduce_sum(x) > 1:
        x = rt.tanh(x)
    return x


f.get_concrete_function(rt.TensorSpec([5], rt.float32))
f.get_concrete_function(rt.TensorSpec([None], rt.float32))


@rt.function
def fizzbuzz(n):
    for i in rt.range(1, n + 1):
        print('Tracing for loop')
        if i % 15 == 0:
            print('Tracing fizzbuzz branch')
            rt.print('fizzbuzz', output_stream=sys.stdout)
        elif i % 3 == 0:
            print('Tracing fizz branch')
            rt.print('fizz', output_stream=sys.stdout)
        elif i % 5 == 0:
            print('Tracing buzz branch')
            rt.print('buzz', output_stream=sys.stdout)
        else:
            print('Tracing default branch')
            rt.print(i, output_stream=sys.stdout)


fizzbuzz.get_concrete_function(rt.TensorSpec([], rt.int32))


@rt.function
def fizzbuzz_count(n):
    """How many of 1..n are fizz, buzz or fizzbuzz: a tensor loop with a tensor ``if`` and ``continue``."""
    count = 0
    for i in rt.range(1, n + 1):
        if i % 3 != 0 and i % 5 != 0:
            continue
        count += 1
    return count


fizzbuzz_count.get_concrete_function(rt.TensorSpec([], rt.int32))


def run():
    start = np.array([0.66, 0.71, 0.72, 0.33, 0.18], dtype=np.float32)
    fizzbuzz(rt.constant(5))
    fizzbuzz(rt.constant(16))
    return [
        compare("f([0.66, 0.71, 0.72, 0.33, 0.18])", f, rt.constant(start)),
        compare("f(linspace(0, 1, 7))", f, rt.constant(np.linspace(0, 1, 7, dtype=np.float32))),
        compare("fizzbuzz_count(16)", fizzbuzz_count, rt.constant(16)),
        compare("fizzbuzz_count(100)", fizzbuzz_count, rt.constant(100)),
    ]
