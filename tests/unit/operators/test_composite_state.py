"""Items and attributes assigned under a tensor `if`/`while`/`for` are state of the statement, as in
AutoGraph (composite symbols): the traced function gives Python's values, or an error naming the item."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def value(v):
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def check(fn, *args):
    python, traced = fn(*args), rt.function(fn)(*args)
    np.testing.assert_array_equal(value(traced), value(python))


def test_dict_item_set_in_both_branches():
    def f(x):
        d = {"a": 0, "b": 0}
        if x > 0:
            d["b"] = 1
        else:
            d["b"] = -1
        return d["b"] * 10 + d["a"]
    check(f, rt.constant(3))
    check(f, rt.constant(-3))


def test_dict_item_incremented_in_a_tensor_for():
    def f(n):
        d = {"a": 0}
        for i in rt.range(n):
            d["a"] += 1
        return d["a"]
    for n in (0, 1, 5):
        check(f, rt.constant(n))


def test_list_items_in_if_and_loops():
    def f(x, n):
        l = [rt.constant(0), rt.constant(1)]
        i = 1
        if x > 0:
            l[i] = x * 2
        for j in rt.range(n):
            l[0] = l[0] + j
        k = rt.constant(0)
        while k < n:
            l[-1] += 1
            k += 1
        return l[0] * 100 + l[1]
    check(f, rt.constant(4), rt.constant(3))
    check(f, rt.constant(-4), rt.constant(0))


class Counter:
    def __init__(self):
        self.x = rt.constant(0)
        self.stats = {"count": 0}

    def step(self, v):
        if v > 0:
            self.x = self.x + v
        else:
            self.x = self.x - 1
        return self.x

    def run(self, n):
        for i in rt.range(n):
            self.x = self.x + i
            self.stats["count"] += 1
        return self.x, self.stats["count"]


def test_object_attribute_in_a_method():
    for v in (5, -5):
        python, traced = Counter().step(rt.constant(v)), rt.function(Counter().step)(rt.constant(v))
        assert int(python) == int(traced)
    python, traced = Counter().run(rt.constant(4)), rt.function(Counter().run)(rt.constant(4))
    assert [int(a) for a in python] == [int(a) for a in traced]


def test_attribute_of_an_rt_module_method_in_a_while_loop():
    class Accumulate(rt.Module):
        def __init__(self):
            super().__init__()
            self.total = rt.constant(0.0)

        @rt.function
        def __call__(self, x):
            i = rt.constant(0)
            while i < rt.size(x):
                self.total = self.total + x[i]
                i += 1
            return self.total
    m = Accumulate()
    assert float(m(rt.constant([1.0, 2.0, 3.5]))) == 6.5


def test_new_key_set_in_both_branches_and_deleted_in_both():
    def f(x):
        d = {"a": 1}
        if x > 0:
            d["new"] = x
        else:
            d["new"] = -x
        out = d["new"]
        if x > 0:
            del d["a"]
        else:
            del d["a"]
        return out + len(d)
    check(f, rt.constant(2))
    check(f, rt.constant(-2))


def test_new_key_in_one_branch_only_is_an_error_naming_it():
    def f(x):
        d = {}
        if x > 0:
            d["only"] = x
        return x
    with pytest.raises(ValueError, match=r"'d\['only'\]' must also be initialized in the else branch"):
        rt.function(f)(rt.constant(1))


def test_item_with_a_key_that_changes_in_the_loop_is_an_error_naming_it():
    def f(n):
        l = [0, 0, 0]
        for i in rt.range(n):
            l[i] = i
        return l[0]
    with pytest.raises(ValueError, match=r"'l\[i\]' is assigned inside this tensor loop.*TensorArray"):
        rt.function(f)(rt.constant(3))


def test_item_with_a_computed_key_is_an_error_naming_it():
    def f(x, k):
        d = {1: 0, 2: 0}
        if x > 0:
            d[k + 1] = 5
        return d[1]
    with pytest.raises(ValueError, match=r"'d\[k \+ 1\]' is assigned inside this tensor `if`"):
        rt.function(f)(rt.constant(1), 0)
    assert rt.function(f)(1, 0) == 5          # a Python condition: plain Python, nothing to track


def test_items_of_an_object_created_inside_the_loop_are_not_state():
    def f(n):
        total = rt.constant(0)
        for i in rt.range(n):
            scratch = {"v": i}
            scratch["v"] = scratch["v"] * 2
            total += scratch["v"]
        return total
    check(f, rt.constant(4))


class Box:
    def __init__(self):
        self.total = rt.constant(0)


def test_attribute_set_in_a_loop_that_also_creates_a_variable():
    def f(n):
        box = Box()
        for i in rt.range(n):
            box.total = box.total + i
            last = i
        return box.total + last
    check(f, rt.constant(4))

