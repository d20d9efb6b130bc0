"""Guide: "Depending on Python global and free variables" and "Depending on Python objects".

A Python global is read once, while tracing (at build time for a built
signature); an ``rt.Variable`` is read on every call.
"""
import runtime as rt
from examples._check import compare

foo = 1


@rt.function
def buggy_add():
    return 1 + foo


buggy_add.get_concrete_function()


@rt.function
def recommended_add(foo):
    return 1 + foo


recommended_add.get_concrete_function(rt.TensorSpec([], rt.int32))

foo_variable = rt.Variable(1)


@rt.function
def variable_add():
    return 1 + foo_variable


variable_add.get_concrete_function()


class SimpleModel(rt.Module):
    def __init__(self):
        self.bias = 0.
        self.weight = 2.


class BetterModel:
    def __init__(self):
        self.bias = rt.Variable(0.)
        self.weight = rt.Variable(2.)


@rt.function
def evaluate(model, x):
    return model.weight * x + model.bias


def run():
    global foo
    results = [("buggy_add() with foo = 1", buggy_add(), 1 + 1)]
    foo = 100
    results += [
        ("buggy_add() with foo = 100 (foo was read while tracing)", buggy_add(), 1 + 1),
        ("recommended_add(constant(100))", recommended_add(rt.constant(foo)), 1 + foo),
    ]
    foo = 1
    foo_variable.assign(1)
    results.append(compare("variable_add() with foo_variable = 1", variable_add))
    foo_variable.assign(100)
    results.append(compare("variable_add() with foo_variable = 100", variable_add))
    x = rt.constant(10.)
    simple_model = SimpleModel()
    results.append(compare("evaluate(simple_model, 10.)", evaluate, simple_model, x))
    simple_model.bias += 5.0
    results.append(("evaluate(simple_model, 10.) after bias += 5 (an object is keyed by identity)",
                    evaluate(simple_model, x), 2. * 10. + 0.))
    better_model = BetterModel()
    results.append(compare("evaluate(better_model, 10.)", evaluate, better_model, x))
    better_model.bias.assign_add(5.0)
    results.append(compare("evaluate(better_model, 10.) after bias += 5", evaluate, better_model, x))
    return results
