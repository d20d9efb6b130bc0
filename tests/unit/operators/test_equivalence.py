"""Execution equivalence: each program run eagerly (plain Python on eager tensors) and converted + traced
(rt.function) gives the same result, for tensor and Python inputs."""
import numpy as np
import pytest

import runtime as rt


def nested_loops(n):
    s = 0
    for i in rt.range(n):
        j = 0
        while j < i:
            s += j
            j += 1
    return s


def early_return(x):
    if x > 10:
        return x * 2
    if x < 0:
        return -x
    return x + 1


def return_in_loop(n):
    i = 0
    while i < n:
        if i * i > 20:
            return i
        i += 1
    return -1


def return_in_for(n):
    for i in rt.range(n):
        if i > 3:
            return i * 10
    return -1


def break_continue_nested(n):
    total = 0
    for i in rt.range(n):
        if i % 3 == 0:
            continue
        j = 0
        while j <= i + 5:
            j += 1
            if j > i:
                break
            if j % 2 == 0:
                continue
            total += j
        if total > 40:
            break
    return total


def for_else(n):
    found = -1
    for i in rt.range(n):
        if i == 7:
            found = i
            break
    else:
        found = 100
    return found


def while_else(n):
    i = 0
    while i < n:
        i += 2
        if i == 9:
            break
    else:
        i = i + 1000
    return i


def logical_ops(x):
    if x > 0 and x < 5 or not x > -3:
        y = 1
    else:
        y = 0
    return y


def ifexp(x):
    return x * 2 if x > 0 else -x


def elif_chain(x):
    if x > 10:
        y = 3
    elif x > 5:
        y = 2
    elif x > 0:
        y = 1
    else:
        y = 0
    return y


def calls_helper(x):
    return helper(x) + 1


def helper(x):
    if x > 0:
        return x
    return -x


def python_loop_unrolls(x):
    for k in [1, 2, 3]:
        x = x + k
    return x


def tensor_array(n):
    ta = rt.TensorArray(rt.int32, size=0, dynamic_size=True)
    for i in rt.range(n):
        ta = ta.write(i, i * i)
    return ta.stack()


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def fizz(n):
    count = 0
    for i in rt.range(1, n + 1):
        if i % 15 == 0:
            count += 15
        elif i % 3 == 0:
            count += 3
        elif i % 5 == 0:
            count += 5
        else:
            count += 1
    return count


CASES = [
    (nested_loops, [0, 1, 5]),
    (early_return, [-3, 4, 20]),
    (return_in_loop, [0, 3, 10]),
    (return_in_for, [0, 3, 10]),
    (break_continue_nested, [0, 4, 12]),
    (for_else, [3, 10]),
    (while_else, [5, 12, 20]),
    (logical_ops, [-5, -1, 3, 7]),
    (ifexp, [-3, 3]),
    (elif_chain, [-1, 3, 7, 11]),
    (calls_helper, [-4, 4]),
    (python_loop_unrolls, [1]),
    (collatz, [1, 6, 27]),
    (fizz, [1, 15, 31]),
]


def _value(x):
    return x.numpy() if hasattr(x, "numpy") else x


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_eager_equals_graph(fn, inputs):
    traced = rt.function(fn)
    for v in inputs:
        eager = _value(fn(rt.constant(v)))
        graph = _value(traced(rt.constant(v)))
        assert np.array_equal(np.asarray(eager), np.asarray(graph)), (fn.__name__, v, eager, graph)


def test_tensor_array_loop():
    out = rt.function(tensor_array)(rt.constant(4))
    assert out.numpy().tolist() == [0, 1, 4, 9]


def test_tensor_loop_is_one_loop_in_graph():
    f = rt.function(nested_loops)
    small = len(f.get_concrete_function(rt.constant(3)).graph.as_graph_def().node)
    assert small < 40


def test_python_values_run_as_python():
    f = rt.function(early_return)
    assert _value(f(20)) == 40 and _value(f(-3)) == 3


def test_side_effects_traced_once_per_branch(capsys):
    def g(x):
        if x > 0:
            print("main")
            y = x
        else:
            print("else")
            y = -x
        for i in rt.range(x):
            print("body")
            y += i
        return y

    f = rt.function(g)
    f(rt.constant(3))
    f(rt.constant(4))
    out = capsys.readouterr().out.split()
    assert sorted(out) == ["body", "else", "main"]
