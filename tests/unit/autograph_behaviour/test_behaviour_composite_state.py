"""Composite state in tensor control flow: dict and list items, object attributes, nested objects and
namedtuples assigned in if/while/for (composite_names_in_control_flow_test and more)."""
from __future__ import annotations

import collections

import pytest
from behaviour_harness import T, assert_matches_python, assert_matches_tf, cases

import runtime as rt


def _tensor(v):
    return T(v)


def if_basic_dict(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = 1
    else:
        x["b"] = -1
    return x


def if_basic_list(a):
    x = [a, 0]
    if x[0] > 0:
        x[1] = 1
    else:
        x[1] = -1
    return x


def if_nested_dict(a):
    x = {"a": {"a": a, "b": 0}}
    if x["a"]["a"] > 0:
        x["a"]["b"] = 1
    else:
        x["a"]["b"] = x["a"]["a"] * 2
    return x


def if_imbalanced(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = 1
    return x


def else_imbalanced(a):
    x = {"a": a}
    if x["a"] > 0:
        pass
    else:
        x["b"] = 1
    return x


def if_imbalanced_nested(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["a"]["b"] = 1
    return x


def else_imbalanced_nested(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        pass
    else:
        x["a"]["b"] = 1
    return x


def if_buggy(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    else:
        x["b"]["a"] = -1
    return x


def while_basic_dict(x, a, b):
    y = {"a": a, "b": b}
    while x > 0:
        x -= 1
        y["a"] += 1
    return y


def while_basic_list(x, a, b):
    y = [a, b]
    while x > 0:
        x -= 1
        y[0] += 1
    return y


def while_state_only_dict(a, b):
    y = {"a": a, "b": b}
    while y["b"] <= 10:
        y["a"] += 1
        y["b"] *= 2
    return y


def while_state_only_list(a, b):
    y = [a, b]
    while y[1] <= 10:
        y[0] += 1
        y[1] *= 2
    return y


def while_imbalanced(b):
    y = {"b": b}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] *= 2
    return y


def for_basic_dict(n, x, a, b):
    y = {"a": a, "b": b}
    for i in range(n):
        x -= 1
        y["a"] += i
    return y


def for_basic_list(n, x, a, b):
    y = [a, b]
    for i in range(n):
        x -= 1
        y[0] += i
    return y


def for_state_only_dict(n, a, b):
    y = {"a": a, "b": b}
    for _ in range(n):
        y["a"] += 1
    return y


def for_imbalanced(n, x):
    y = {}
    for i in range(n):
        x -= i
        y["a"] = x
    return y


def tensor_for_dict_of_lists(n):
    d = {"acc": [rt.constant(0), rt.constant(1)]}
    for i in rt.range(n):
        d["acc"][0] += i
        d["acc"][1] *= 2
    return d


def negative_index_in_loop(n):
    l = [rt.constant(1), rt.constant(2), rt.constant(3)]
    for i in rt.range(n):
        l[-1] = l[-1] + l[0]
        l[0] = l[0] * 2
    return l


@pytest.mark.parametrize("target,a,type_", cases(
    (if_basic_dict, if_basic_list, if_nested_dict), (-1, 0, 1), (bool, _tensor)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_if_basic(target, a, type_):
    assert_matches_python(target, type_(a))


@pytest.mark.parametrize("target,a", cases(
    (if_imbalanced, else_imbalanced, if_imbalanced_nested, else_imbalanced_nested), (0, 1)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_if_imbalanced_legal(target, a):
    assert_matches_python(target, a)


@pytest.mark.parametrize("target,a,match", [
    (if_imbalanced, 0, r"'x\['b'\]' must also be initialized in the else"),
    (if_imbalanced, 1, r"'x\['b'\]' must also be initialized in the else"),
    (else_imbalanced, 0, r"'x\['b'\]' must also be initialized in the main"),
    (if_imbalanced_nested, 1, r"'x\['a'\]\['b'\]' must also be initialized in the else"),
    (else_imbalanced_nested, 0, r"'x\['a'\]\['b'\]' must also be initialized in the main"),
    (if_buggy, 1, "'b'"),
    (if_buggy, 0, "'b'"),
], ids=lambda v: getattr(v, "__name__", repr(v)))
def test_if_imbalanced_illegal_like_tf(target, a, match):
    assert_matches_tf(target, T(a), match=match)


def test_if_buggy_with_a_python_condition():
    assert_matches_python(if_buggy, 1, allow_exceptions=True)


@pytest.mark.parametrize("target,x,type_,a", cases(
    (while_basic_dict, while_basic_list), (0, 1, 2), (bool, _tensor), (3, 7)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_while_basic(target, x, type_, a):
    assert_matches_python(target, type_(x), a, 0)


@pytest.mark.parametrize("target,type_,b", cases(
    (while_state_only_dict, while_state_only_list), (int, _tensor), (3, 4, 5, 6, 11)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_while_state_only(target, type_, b):
    assert_matches_python(target, 0, type_(b))


@pytest.mark.parametrize("b,type_", cases((5, 10, 11), (int, _tensor)))
def test_while_imbalanced(b, type_):
    if b == 11 and type_ is _tensor:
        assert_matches_tf(while_imbalanced, T(b), match="loop must iterate at least once")
    else:
        assert_matches_python(while_imbalanced, type_(b))


@pytest.mark.parametrize("target,n,type_", cases(
    (for_basic_dict, for_basic_list), (0, 1, 2), (int, _tensor)),
    ids=lambda v: getattr(v, "__name__", repr(v)))
def test_for_basic(target, n, type_):
    assert_matches_python(target, type_(n), 1, 1, 1)


@pytest.mark.parametrize("n,type_", cases((0, 1, 2), (int, _tensor)))
def test_for_state_only_and_imbalanced(n, type_):
    assert_matches_python(for_state_only_dict, type_(n), 1, 1)
    if n == 0 and type_ is _tensor:
        assert_matches_tf(for_imbalanced, T(n), 0, match="loop must iterate at least once")
    else:
        assert_matches_python(for_imbalanced, type_(n), 0)


@pytest.mark.parametrize("n", (0, 1, 3))
def test_nested_containers_and_negative_indices_in_tensor_loops(n):
    assert_matches_python(tensor_for_dict_of_lists, T(n))
    assert_matches_python(negative_index_in_loop, T(n))


# -- attributes, objects, namedtuples -----------------------------------------------------------


class State:
    def __init__(self):
        self.x = rt.constant(0)
        self.inner = Inner()


class Inner:
    def __init__(self):
        self.y = rt.constant(10)
        self.items = [rt.constant(1), rt.constant(2)]


def attribute_in_if(c):
    s = State()
    if c > 0:
        s.x = s.x + c
        s.inner.y = s.inner.y * 2
    else:
        s.x = s.x - 1
        s.inner.y = s.inner.y - c
    return s.x, s.inner.y


def attribute_in_while(n):
    s = State()
    while s.x < n:
        s.x = s.x + 1
        s.inner.items[1] = s.inner.items[1] + s.x
    return s.x, s.inner.items


def attribute_in_for(n):
    s = State()
    for i in rt.range(n):
        s.inner.y -= i
        s.x += 1
    return s.x, s.inner.y


class Accumulator:
    def __init__(self):
        self.total = rt.constant(0)
        self.count = 0

    def add_while_positive(self, values):
        for v in values:
            if v > 0:
                self.total = self.total + v
            else:
                self.total = self.total - 1
        return self.total

    def run(self, n):
        i = 0
        while i < n:
            self.total += i
            i += 1
        return self.total


@pytest.mark.parametrize("c,type_", cases((-2, 0, 3), (int, _tensor)))
def test_attributes_of_nested_objects(c, type_):
    assert_matches_python(attribute_in_if, type_(c))
    assert_matches_python(attribute_in_while, type_(c))
    if type_ is _tensor:
        assert_matches_python(attribute_in_for, T(c))


@pytest.mark.parametrize("values,type_", cases(([], [1, -2, 3]), (list, lambda v: T(v, "int32"))))
def test_method_updating_self_in_loops(values, type_):
    python = Accumulator().add_while_positive(rt.constant(values, rt.int32) if type_ is not list else values)
    traced = rt.function(Accumulator().add_while_positive)(type_(values) if type_ is list else
                                                          rt.constant(values, rt.int32))
    assert int(python) == int(traced)
    for n in (0, 3):
        assert int(Accumulator().run(n)) == int(rt.function(Accumulator().run)(rt.constant(n)))


Pair = collections.namedtuple("Pair", ["a", "b"])


def namedtuple_state_in_while(n):
    p = Pair(rt.constant(0), rt.constant(1))
    i = 0
    while i < n:
        p = Pair(p.a + p.b, p.a)
        i += 1
    return p


def namedtuple_state_in_if(c):
    p = Pair(a=c, b=c * 2)
    if c > 0:
        p = p._replace(a=p.a * 10)
    return p


def inline_namedtuple(x):
    nt = collections.namedtuple("TestNamedTuple", ("a", "b"))
    return nt(a=1, b=x)


class NamedTupleSubclass(collections.namedtuple("TestNamedTuple", ("a",))):
    def foo(self):
        return self.a + 1


def namedtuple_subclass(x):
    return NamedTupleSubclass(x).foo()


@pytest.mark.parametrize("n,type_", cases((-1, 0, 1, 5), (int, _tensor)))
def test_namedtuples(n, type_):
    assert_matches_python(namedtuple_state_in_while, type_(n))
    assert_matches_python(namedtuple_state_in_if, type_(n))
    assert_matches_python(inline_namedtuple, type_(n))
    assert_matches_python(namedtuple_subclass, type_(n))


def dict_of_tensors_across_branches_and_loops(x, n):
    d = {"sum": rt.zeros_like(x), "max": rt.reduce_max(x)}
    for i in rt.range(n):
        if rt.reduce_sum(d["sum"]) > 5.0:
            d["sum"] = d["sum"] - x
        else:
            d["sum"] = d["sum"] + x * rt.cast(i, rt.float32)
        d["max"] = rt.maximum(d["max"], rt.reduce_max(d["sum"]))
    return d


@pytest.mark.parametrize("n", (0, 1, 4))
def test_dict_of_vector_tensors(n):
    assert_matches_python(dict_of_tensors_across_branches_and_loops, T([1.0, 2.0, -0.5]), T(n))
