"""Tracing rules: cache keys, input_signature, get_concrete_function, printing, variables, leaks, methods."""
from __future__ import annotations

import collections
import contextlib
import io
import sys

import numpy as np
import pytest
from runtime_test_helpers import assert_matches_numpy

import runtime as rt


def counting(fn=None, **kwargs):
    """``rt.function(fn, autograph=False)`` that also counts how many times Python ran (traced) it."""
    def decorate(fn):
        calls = []

        def wrapper(*args, **kw):
            calls.append(1)
            return fn(*args, **kw)
        import functools
        functools.update_wrapper(wrapper, fn)
        f = rt.function(wrapper, autograph=False, **kwargs)
        f.python_calls = calls
        return f
    return decorate(fn) if fn is not None else decorate


# ---------------------------------------------------------------------------
# Cache keys

def test_tensors_key_by_shape_and_dtype():
    @counting
    def f(x):
        return x + 1
    f(rt.constant(1))
    f(rt.constant(2))
    assert f.experimental_get_tracing_count() == 1
    f(rt.constant([1]))
    f(rt.constant(1.0))
    f(rt.constant([5]))
    assert f.experimental_get_tracing_count() == 3
    f(np.array(1, np.int32))                        # numpy arrays key like tensors
    assert f.experimental_get_tracing_count() == 3
    f(np.array([1, 2], np.int64))
    assert f.experimental_get_tracing_count() == 4
    assert len(f.python_calls) == 4


def test_python_values_key_by_value():
    @counting
    def f(x, n):
        return x * n
    assert int(f(rt.constant(2), 3)) == 6
    assert int(f(rt.constant(2), 3)) == 6
    assert f.experimental_get_tracing_count() == 1
    assert int(f(rt.constant(2), 4)) == 8
    assert f.experimental_get_tracing_count() == 2
    f(rt.constant(2.0), 1.5)
    f(rt.constant(2.0), 2.5)
    assert f.experimental_get_tracing_count() == 4
    # 1 and True and 1.0 are different keys (types differ)
    g = counting(lambda x, flag: x)
    g(rt.constant(1), 1)
    g(rt.constant(1), True)
    g(rt.constant(1), 1.0)
    g(rt.constant(1), "1")
    g(rt.constant(1), None)
    assert g.experimental_get_tracing_count() == 5


def test_python_return_values_become_tensors():
    f = rt.function(lambda: (1, 2.5, [True], None, "x", np.arange(2)), autograph=False)
    out = f()
    assert isinstance(out, tuple) and len(out) == 6
    assert_matches_numpy(out[0], np.int32(1))
    assert_matches_numpy(out[1], np.float32(2.5))
    assert isinstance(out[2], list) and out[2][0].dtype is rt.bool
    assert out[3] is None
    assert out[4].numpy() == b"x"
    assert out[5].dtype is rt.int64
    with pytest.raises(TypeError, match="returned"):
        rt.function(lambda: object(), autograph=False)()


def test_objects_key_by_identity():
    class Box:
        def __init__(self, value):
            self.value = value

    @counting
    def f(x, box):
        return x + box.value
    a, b = Box(1), Box(1)
    assert int(f(rt.constant(1), a)) == 2
    assert int(f(rt.constant(1), a)) == 2
    assert f.experimental_get_tracing_count() == 1
    f(rt.constant(1), b)
    assert f.experimental_get_tracing_count() == 2
    a.value = 100                       # a Python attribute was baked in while tracing: no retrace
    assert int(f(rt.constant(1), a)) == 2


def test_object_keys_are_weak():
    import gc
    import weakref

    class Box:
        pass

    f = rt.function(lambda x, box: x, autograph=False)
    box = Box()
    ref = weakref.ref(box)
    f(rt.constant(1), box)
    del box
    gc.collect()
    assert ref() is None, "a cache key must not keep its object alive"


def test_structures_key_by_structure_and_leaves():
    Point = collections.namedtuple("Point", "x y")

    @counting
    def f(arg):
        leaves = _flatten(arg)
        return sum(leaves[1:], leaves[0])
    f([rt.constant(1), rt.constant(2)])
    f([rt.constant(3), rt.constant(4)])
    assert f.experimental_get_tracing_count() == 1
    f((rt.constant(1), rt.constant(2)))                    # tuple vs list
    f([rt.constant(1), rt.constant(2), rt.constant(3)])    # length
    assert f.experimental_get_tracing_count() == 3
    f({"a": rt.constant(1), "b": rt.constant(2)})
    f({"b": rt.constant(5), "a": rt.constant(6)})          # same keys, other insertion order
    assert f.experimental_get_tracing_count() == 4
    f({"a": rt.constant(1), "c": rt.constant(2)})
    assert f.experimental_get_tracing_count() == 5
    assert int(f(Point(rt.constant(1), rt.constant(2)))) == 3
    assert f.experimental_get_tracing_count() == 6
    f([rt.constant([1]), rt.constant([2])])                # leaf shapes
    assert f.experimental_get_tracing_count() == 7


def _flatten(value):
    from runtime import nest
    return nest.flatten(value)


def test_structured_outputs_and_inputs():
    @rt.function(autograph=False)
    def f(d, pair):
        return {"sum": d["x"] + pair[0], "pair": (pair[1], 3)}
    out = f({"x": rt.constant(1)}, (rt.constant(2), rt.constant(2.5)))
    assert set(out) == {"sum", "pair"}
    assert int(out["sum"]) == 3 and float(out["pair"][0]) == 2.5 and int(out["pair"][1]) == 3
    concrete = f.get_concrete_function({"x": rt.constant(1)}, (rt.constant(2), rt.constant(2.5)))
    args, kwargs = concrete.structured_input_signature
    assert kwargs == {}
    assert args[0] == {"x": rt.TensorSpec([], rt.int32, "d")}
    assert isinstance(args[1], tuple) and args[1][1].dtype is rt.float32
    outputs = concrete.structured_outputs
    assert set(outputs) == {"sum", "pair"}
    assert str(outputs["sum"]).startswith('Tensor("Identity')
    assert len(concrete.outputs) == 3 and all(isinstance(t, rt.Tensor) for t in concrete.outputs)
    assert [t.op.type for t in concrete.inputs] == ["Placeholder"] * 3


def test_variables_key_by_identity():
    v1, v2 = rt.Variable(1.0), rt.Variable(1.0)

    @counting
    def f(v):
        return v.read_value() * 2
    assert float(f(v1)) == 2.0
    assert float(f(v2)) == 2.0
    assert f.experimental_get_tracing_count() == 2
    v1.assign(5.0)
    assert float(f(v1)) == 10.0                  # read by reference, no retrace
    assert f.experimental_get_tracing_count() == 2


def test_variable_argument_after_tensor_argument_retraces():
    @rt.function(autograph=False)
    def f(x):
        if isinstance(x, rt.Variable):
            x.assign_add(1.0)
        return x + 0
    assert float(f(rt.constant(1.0))) == 1.0
    v = rt.Variable(1.0)
    assert float(f(v)) == 2.0
    assert float(v.numpy()) == 2.0
    assert f.experimental_get_tracing_count() == 2


def test_separate_functions_never_share_traces():
    def double(a):
        return a + a
    f, g = rt.function(double, autograph=False), rt.function(double, autograph=False)
    f(rt.constant(1))
    assert f.experimental_get_tracing_count() == 1
    assert g.experimental_get_tracing_count() == 0
    g(rt.constant(1))
    assert g.get_concrete_function(rt.constant(1)) is not f.get_concrete_function(rt.constant(1))


def test_python_side_effects_only_while_tracing_and_rt_print_every_call():
    seen = []

    @rt.function(autograph=False)
    def f(x):
        seen.append("traced")
        rt.print("running", x, output_stream=sys.stdout)
        return x
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        f(rt.constant(1))
        f(rt.constant(2))
        f(rt.constant(3))
    assert seen == ["traced"]
    assert buf.getvalue() == "running 1\nrunning 2\nrunning 3\n"


# ---------------------------------------------------------------------------
# input_signature and reduce_retracing

def test_input_signature_with_none_dims():
    @counting(input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)])
    def next_collatz(x):
        return rt.where(x % 2 == 0, x // 2, 3 * x + 1)
    assert next_collatz(rt.constant([1, 2])).numpy().tolist() == [4, 1]
    assert next_collatz(rt.constant([5, 6, 7, 8])).numpy().tolist() == [16, 3, 22, 4]
    assert next_collatz(rt.constant(np.zeros(0, np.int32))).shape == (0,)
    assert next_collatz.experimental_get_tracing_count() == 1
    assert len(next_collatz.python_calls) == 1
    assert next_collatz.input_signature == (rt.TensorSpec([None], rt.int32),)
    assert next_collatz(np.array([3], np.int32)).numpy().tolist() == [10]
    concrete = next_collatz.get_concrete_function()
    assert concrete is next_collatz.get_concrete_function(rt.TensorSpec([None], rt.int32))
    assert str(concrete.inputs[0]) == 'Tensor("x:0", shape=(None,), dtype=int32)'


@pytest.mark.parametrize("bad", [rt.constant([1.0]), rt.constant([[1]]), rt.constant(1)])
def test_input_signature_mismatch_message(bad):
    f = rt.function(lambda x: x, input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)], autograph=False)
    with pytest.raises(ValueError) as info:
        f(bad)
    message = str(info.value)
    assert "Python inputs incompatible with input_signature" in message
    assert repr(bad) in message
    assert "TensorSpec(shape=(None,), dtype=rt.int32, name=None)" in message
    assert f.experimental_get_tracing_count() == 0


def test_input_signature_argument_count_and_python_scalars():
    f = rt.function(lambda x, y: x + y, input_signature=[rt.TensorSpec([], rt.float32)] * 2, autograph=False)
    assert float(f(1.0, 2.0)) == 3.0               # Python values convert to the spec's dtype
    assert float(f(rt.constant(1.0), y=2.0)) == 3.0
    with pytest.raises((TypeError, ValueError)):
        f(rt.constant(1.0))
    with pytest.raises(TypeError):
        rt.function(lambda x: x, input_signature=[rt.int32])


def test_input_signature_accepts_a_python_list_for_a_vector():
    f = rt.function(lambda x: x, input_signature=[rt.TensorSpec([None], rt.int32)], autograph=False)
    assert f([1, 2]).numpy().tolist() == [1, 2]


def test_input_signature_with_varargs():
    f = rt.function(lambda *xs: xs[0] + xs[1], input_signature=[rt.TensorSpec([], rt.int32)] * 2,
                    autograph=False)
    assert int(f(rt.constant(1), rt.constant(2))) == 3


def test_input_signature_with_defaulted_python_parameters():
    def f(x, scale=3):
        return x * scale
    g = rt.function(f, input_signature=[rt.TensorSpec([None], rt.int32)], autograph=False)
    assert g.get_concrete_function() is not None
    assert g(rt.constant([1, 2])).numpy().tolist() == [3, 6]


def test_concrete_function_accepts_a_python_list_for_a_vector():
    c = rt.function(lambda x: x * 2, autograph=False).get_concrete_function(rt.TensorSpec([None], rt.float32))
    assert c(np.array([1.0, 2.0], np.float32)).numpy().tolist() == [2.0, 4.0]
    assert c([1.0, 2.0]).numpy().tolist() == [2.0, 4.0]


def test_reduce_retracing_generalizes_shapes():
    @counting(reduce_retracing=True)
    def f(x):
        return x * 2
    for n in range(1, 6):
        assert f(rt.constant(np.arange(n, dtype=np.float32))).shape == (n,)
    assert f.experimental_get_tracing_count() == 2
    signatures = f.pretty_printed_concrete_signatures()
    assert "shape=(None,)" in signatures
    f(rt.constant(np.zeros((2, 2), np.float32)))     # another rank: traces again
    assert f.experimental_get_tracing_count() == 3
    g = counting(lambda x: x, reduce_retracing=False)
    for n in range(1, 4):
        g(rt.constant(np.zeros(n)))
    assert g.experimental_get_tracing_count() == 3


# ---------------------------------------------------------------------------
# get_concrete_function and ConcreteFunction

def test_get_concrete_function_with_specs_tensors_and_python_values():
    @counting
    def f(x, n):
        return x * n
    c1 = f.get_concrete_function(rt.TensorSpec([None], rt.int32), 3)
    assert f.experimental_get_tracing_count() == 1
    assert f.get_concrete_function(rt.TensorSpec([None], rt.int32), 3) is c1
    assert c1(rt.constant([1, 2]), 3).numpy().tolist() == [3, 6]
    assert c1(rt.constant([1, 2, 3])).numpy().tolist() == [3, 6, 9]         # fixed value may be omitted
    assert c1(x=rt.constant([1]), n=3).numpy().tolist() == [3]              # by keyword
    with pytest.raises(TypeError, match="fixed to 3"):
        c1(rt.constant([1]), 4)
    with pytest.raises(rt.errors.InvalidArgumentError):
        c1(rt.constant([1.0]), 3)
    with pytest.raises(rt.errors.InvalidArgumentError):
        c1(rt.constant([[1]]), 3)
    c2 = f.get_concrete_function(rt.constant(1), 2)
    assert c2 is not c1 and int(c2(rt.constant(5), 2)) == 10
    assert int(f(rt.constant(7), 2)) == 14                                   # the Function reuses c2
    assert f.experimental_get_tracing_count() == 2
    # a call matching the more general signature reuses it
    f(rt.constant([4, 5, 6]), 3)
    assert f.experimental_get_tracing_count() == 2


def test_concrete_function_str_and_pretty_printed_signatures():
    @rt.function(autograph=False)
    def double(a):
        return a + a
    concrete = double.get_concrete_function(rt.constant("a"))
    assert str(concrete) == ("ConcreteFunction double(a)\n  Args:\n    a: string Tensor, shape=()\n"
                             "  Returns:\n    string Tensor, shape=()")
    double(rt.constant(1))
    double(rt.constant([1.0, 2.0]))
    assert double.pretty_printed_concrete_signatures() == (
        "double(a)\n  Args:\n    a: string Tensor, shape=()\n  Returns:\n    string Tensor, shape=()\n\n"
        "double(a)\n  Args:\n    a: int32 Tensor, shape=()\n  Returns:\n    int32 Tensor, shape=()\n\n"
        "double(a)\n  Args:\n    a: float32 Tensor, shape=(2,)\n  Returns:\n    float32 Tensor, shape=(2,)")
    assert concrete.pretty_printed_signature() == str(concrete)[len("ConcreteFunction "):]
    assert repr(concrete).startswith("<ConcreteFunction double(a) at 0x")
    assert concrete.native is False

    @rt.function(autograph=False)
    def scaled(x, factor=2):
        return x * factor, None
    c = scaled.get_concrete_function(rt.TensorSpec([None, 3], rt.float64))
    assert str(c) == ("ConcreteFunction scaled(x, factor=2)\n  Args:\n    x: float64 Tensor, shape=(None, 3)\n"
                      "  Returns:\n    Tuple[float64 Tensor, shape=(None, 3), None]")


def test_function_attributes():
    def original(x):
        """Doc."""
        return x
    f = rt.function(original, autograph=False)
    assert f.__name__ == "original" and f.__doc__ == "Doc."
    assert f.python_function is original
    assert f.input_signature is None
    assert rt.function(f).python_function is original
    assert isinstance(f, rt.Function)
    assert isinstance(f.get_concrete_function(rt.constant(1)), rt.ConcreteFunction)

    @rt.function
    def plain(x):
        return x
    assert isinstance(plain, rt.Function) and plain.__name__ == "plain"
    assert int(plain(rt.constant(3))) == 3


def test_calling_with_wrong_arguments_is_a_type_error():
    f = rt.function(lambda x, y: x + y, autograph=False)
    with pytest.raises(TypeError):
        f(rt.constant(1))
    with pytest.raises(TypeError):
        f(rt.constant(1), rt.constant(2), rt.constant(3))
    with pytest.raises(TypeError):
        f(rt.constant(1), z=rt.constant(2))


def test_keyword_and_default_arguments():
    @counting
    def f(x, y=None, *, scale=1):
        return x * scale if y is None else (x + y) * scale
    assert int(f(rt.constant(2))) == 2
    assert int(f(x=rt.constant(2))) == 2
    assert f.experimental_get_tracing_count() == 1
    assert int(f(rt.constant(2), rt.constant(3), scale=2)) == 10
    assert int(f(rt.constant(2), y=rt.constant(3), scale=2)) == 10
    assert f.experimental_get_tracing_count() == 2


# ---------------------------------------------------------------------------
# run_functions_eagerly

def test_run_functions_eagerly():
    seen = []

    @rt.function(autograph=False)
    def f(x):
        seen.append(rt.inside_function())
        return x + 1
    rt.config.run_functions_eagerly(True)
    assert rt.config.functions_run_eagerly()
    assert int(f(rt.constant(1))) == 2
    assert int(f(rt.constant(1))) == 2
    assert seen == [False, False]
    assert f.experimental_get_tracing_count() == 0
    rt.config.run_functions_eagerly(False)
    assert not rt.config.functions_run_eagerly()
    f(rt.constant(1))
    f(rt.constant(1))
    assert seen == [False, False, True]


# ---------------------------------------------------------------------------
# Variables created while tracing

def test_singleton_variable_rule():
    class Counter:
        def __init__(self):
            self.count = None

        @rt.function(autograph=False)
        def __call__(self):
            if self.count is None:
                self.count = rt.Variable(0)
            self.count.assign_add(1)
            return self.count.read_value()
    c = Counter()
    assert [int(c()) for _ in range(3)] == [1, 2, 3]

    @rt.function(autograph=False)
    def bad(x):
        v = rt.Variable(1.0)
        return v + x
    assert float(bad(rt.constant(1.0))) == 2.0
    with pytest.raises(ValueError, match="singleton"):
        bad(rt.constant([1.0]))


def test_variable_initial_value_must_not_depend_on_inputs():
    @rt.function(autograph=False)
    def f(x):
        return rt.Variable(x)
    with pytest.raises(ValueError, match="initial value"):
        f(rt.constant(1.0))


# ---------------------------------------------------------------------------
# Leaked tensors and recursion

def test_leaked_tensors():
    leaked = []

    @rt.function(autograph=False)
    def f(x):
        leaked.append(x * 2)
        return x
    f(rt.constant(1))
    with pytest.raises(AttributeError, match="numpy"):
        leaked[0].numpy()
    with pytest.raises(TypeError, match="leaked"):
        leaked[0] + 1

    @rt.function(autograph=False)
    def g(y):
        return y + leaked[0]
    with pytest.raises(TypeError, match="out of scope"):
        g(rt.constant(1))


def test_recursion_is_a_one_line_error():
    @rt.function(autograph=False)
    def rec(n):
        return rt.cond(n > 0, lambda: rec(n - 1), lambda: n)
    with pytest.raises(RecursionError) as info:
        rec(rt.constant(3))
    assert "recursive" in str(info.value) and "\n" not in str(info.value)


def test_nested_functions_trace_into_the_caller():
    @counting
    def inner(x):
        return x * 2

    @rt.function(autograph=False)
    def outer(x):
        return inner(x) + 1
    assert int(outer(rt.constant(3))) == 7
    graph = outer.get_concrete_function(rt.constant(3)).graph
    assert {op.type for op in graph.get_operations()} >= {"Mul", "AddV2"}
    assert inner.experimental_get_tracing_count() == 0     # inlined, not traced on its own
    assert int(inner(rt.constant(3))) == 6


# ---------------------------------------------------------------------------
# Methods

def test_methods_trace_per_instance():
    class Model(rt.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale
            self.v = rt.Variable(float(scale))

        @rt.function(autograph=False)
        def __call__(self, x):
            return x * self.v

        @rt.function(autograph=False)
        def python_scale(self, x):
            return x * self.scale
    a, b = Model(2), Model(3)
    assert float(a(rt.constant(1.0))) == 2.0
    assert float(b(rt.constant(1.0))) == 3.0
    assert float(a.python_scale(rt.constant(1.0))) == 2.0
    assert float(b.python_scale(rt.constant(1.0))) == 3.0
    assert a.python_scale is a.python_scale
    assert a.python_scale.experimental_get_tracing_count() == 1
    assert b.python_scale.experimental_get_tracing_count() == 1
    a.python_scale(rt.constant(5.0))
    assert a.python_scale.experimental_get_tracing_count() == 1
    a.v.assign(10.0)
    assert float(a(rt.constant(1.0))) == 10.0
    assert a.variables == (a.v,) and a.trainable_variables == (a.v,) and a.name == "model"   # snake case, as tf.Module
    concrete = a.python_scale.get_concrete_function(rt.TensorSpec([None], rt.float32))
    assert "python_scale(x)" in str(concrete)
    assert concrete(rt.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]


def test_method_with_input_signature():
    class Adder:
        def __init__(self, k):
            self.k = k

        @rt.function(input_signature=[rt.TensorSpec([None], rt.int32)], autograph=False)
        def add(self, x):
            return x + self.k
    a, b = Adder(1), Adder(10)
    assert a.add(rt.constant([1])).numpy().tolist() == [2]
    assert b.add(rt.constant([1, 2])).numpy().tolist() == [11, 12]
    with pytest.raises(ValueError):
        a.add(rt.constant([1.0]))


# ---------------------------------------------------------------------------
# Outputs are always eager rt.Tensors

def test_outputs_are_eager_tensors():
    f = rt.function(lambda x: (x, x + 1, [x * 2]), autograph=False)
    out = f(rt.constant(1))
    for t in (out[0], out[1], out[2][0]):
        assert isinstance(t, rt.Tensor) and not rt.is_symbolic(t)
    v = rt.Variable(3)
    assert int(rt.function(lambda: v, autograph=False)()) == 3
    ta = rt.function(lambda: rt.TensorArray(rt.int32, size=1).write(0, 4), autograph=False)()
    assert ta.numpy().tolist() == [4]
    assert rt.function(lambda: None, autograph=False)() is None


def test_varargs_and_kwargs():
    @counting
    def f(x, *rest, **kw):
        return x + rest[-1] + kw["y"]
    assert int(f(rt.constant(1), rt.constant(2), y=rt.constant(3))) == 6
    assert int(f(rt.constant(2), rt.constant(2), y=rt.constant(3))) == 7
    assert f.experimental_get_tracing_count() == 1
    assert int(f(rt.constant(1), rt.constant(2), rt.constant(5), y=rt.constant(3))) == 9
    assert f.experimental_get_tracing_count() == 2
    c = f.get_concrete_function(rt.constant(1), rt.constant(2), y=rt.constant(3))
    assert int(c(rt.constant(10), rt.constant(20), y=rt.constant(30))) == 60
