"""Guide: variables are captured by reference; the counter pitfall; ``init_scope``; creating variables once.

The methods of ``rt.Module`` instances are keyed by their instance, so they trace
at run time; the module-level ``counter`` functions are built ahead of time and
update the variable's shared storage from native code.
"""
import runtime as rt
from examples._check import compare, error_name


class Model(rt.Module):
    def __init__(self):
        self.v = rt.Variable(0)
        self.counter = 0

    @rt.function
    def __call__(self):
        if self.counter == 0:
            self.counter += 1
            self.v.assign_add(1)
        return self.v


class Model2(rt.Module):
    def __init__(self):
        self.v = rt.Variable(0)
        self.counter = 0

    @rt.function
    def __call__(self):
        if self.counter == 0:
            with rt.init_scope():
                self.counter += 1
                self.v.assign_add(1)
        return self.v


@rt.function
def make_variable(x):
    v = rt.Variable(1.0)
    return v


class Count(rt.Module):
    def __init__(self):
        self.count = None

    @rt.function
    def __call__(self):
        if self.count is None:
            self.count = rt.Variable(0)
        return self.count.assign_add(1)


counter = rt.Variable(0)


@rt.function
def increment(by):
    counter.assign_add(by)
    return counter.read_value()


increment.get_concrete_function(rt.TensorSpec([], rt.int32))


def _three_calls(model_class):
    model = model_class()
    return [int(model().numpy()) for _ in range(3)]


def _make_twice():
    make_variable(1.0)
    make_variable(2.0)


def run():
    counter.assign(0)
    native = [int(increment(rt.constant(n))) for n in (1, 2, 3)]
    counter.assign(0)
    _, eager, _ = compare("", lambda: [int(increment(rt.constant(n))) for n in (1, 2, 3)])
    return [
        ("increment(1), increment(2), increment(3)", native, eager),
        ("Model()() three times: the counter pitfall", _three_calls(Model), [1, 2, 3]),
        ("Model2()() three times: init_scope", _three_calls(Model2), [1, 1, 1]),
        ("make_variable twice", error_name(_make_twice), "ValueError"),
        ("Count()() twice", _three_calls(Count)[:2], [1, 2]),
    ]
