"""Guide: "Pass tensors instead of Python literals".

``train(num_steps=10)`` and ``train(num_steps=20)`` are two signatures (a Python
value is part of the key); a tensor argument is one signature for every value.
``rt.print`` runs on every call, also in native code.
"""
import sys

import runtime as rt
from examples._check import compare

steps_run = rt.Variable(0)


def train_one_step():
    steps_run.assign_add(1)


@rt.function
def train(num_steps):
    print("Tracing with num_steps = ", num_steps)
    rt.print("Executing with num_steps = ", num_steps, output_stream=sys.stdout)
    for _ in rt.range(num_steps):
        train_one_step()
    return steps_run.read_value()


train.get_concrete_function(num_steps=10)
train.get_concrete_function(num_steps=20)
train.get_concrete_function(num_steps=rt.TensorSpec([], rt.int32))


def _steps(num_steps):
    """How many steps ``train(num_steps)`` runs, read from the variable it increments."""
    before = int(steps_run.numpy())
    train(num_steps=num_steps)
    return int(steps_run.numpy()) - before


def run():
    results = [
        compare("steps of train(num_steps=10)", _steps, 10),
        compare("steps of train(num_steps=20)", _steps, 20),
        compare("steps of train(num_steps=constant(10))", _steps, rt.constant(10)),
        compare("steps of train(num_steps=constant(20))", _steps, rt.constant(20)),
    ]
    results.append(("traces at run time", train.experimental_get_tracing_count(), 0))
    return results
