"""rt.Module walks its attributes as tf.Module does; set_random_seed seeds what Keras 3's does; a Variable made
inside a Function's first trace from ops of the trace gets its value (TF lifts the initializer)."""
from __future__ import annotations

import random

import numpy as np
import pytest

import runtime as rt


def _tf():
    return pytest.importorskip("tensorflow")


def _tree(lib):
    class Leaf(lib.Module):
        def __init__(self, name):
            super().__init__(name=name)
            self.z = lib.Variable(1.0, name=f"{name}_z")
            self.a = lib.Variable(2.0, name=f"{name}_a", trainable=False)

    class Root(lib.Module):
        def __init__(self):
            super().__init__()
            self.second = Leaf("second")
            self.weights_by_key = {"b": lib.Variable(3.0, name="dict_b"), "a": lib.Variable(4.0, name="dict_a")}
            self.first = Leaf("first")
            self.blocks = [Leaf("block0"), Leaf("block1")]
            self.bias = lib.Variable(5.0, name="bias")
    return Root()


def _names(variables):
    return [v.name.split(":")[0] for v in variables]


def test_variables_are_ordered_as_tf_module_orders_them():
    root = _tree(rt)
    expected = ["bias", "dict_a", "dict_b", "block0_a", "block0_z", "block1_a", "block1_z", "first_a", "first_z",
                "second_a", "second_z"]
    assert _names(root.variables) == expected
    assert _names(root.trainable_variables) == [n for n in expected if n.endswith(("_z", "bias", "dict_a", "dict_b"))]
    assert _names(root.non_trainable_variables) == [n for n in expected if n.endswith("_a") and "dict" not in n]
    assert [m.name for m in root.submodules] == ["block0", "block1", "first", "second"]
    assert root.name == "root"
    tf = _tf()
    theirs = _tree(tf)
    assert _names(theirs.variables) == expected
    assert _names(theirs.trainable_variables) == _names(root.trainable_variables)
    assert [m.name for m in theirs.submodules] == [m.name for m in root.submodules]


def test_each_variable_and_module_once_and_cycles_end():
    shared = rt.Variable(1.0, name="shared")

    class Node(rt.Module):
        def __init__(self):
            super().__init__()
            self.v = shared
            self.again = [shared]
    a, b = Node(), Node()
    a.other, b.other = b, a
    assert _names(a.variables) == ["shared"] and list(a.submodules) == [b]


def test_keras_layers_inside_a_module_contribute_their_weights():
    class Holder(rt.Module):
        def __init__(self):
            super().__init__()
            self.dense = rt.keras.layers.Dense(2, name="dense")
            self.scale = rt.Variable(1.0, name="scale")
    holder = Holder()
    holder.dense(np.ones((1, 3), np.float32))
    assert _names(holder.variables) == ["scale", "kernel", "bias"]               # Keras 3's names ...
    assert [getattr(v, "path", None) for v in holder.variables] == [None, "dense/kernel", "dense/bias"]  # ... paths


def test_set_random_seed_seeds_numpy_python_and_rt(monkeypatch):
    seen = []
    monkeypatch.setattr(rt.random, "set_seed", seen.append, raising=False)
    rt.keras.utils.set_random_seed(123)
    first = (np.random.random(), random.random(), rt.keras.layers.Dense(2)(np.ones((1, 2), np.float32)).numpy())
    rt.keras.utils.set_random_seed(123)
    second = (np.random.random(), random.random(), rt.keras.layers.Dense(2)(np.ones((1, 2), np.float32)).numpy())
    assert first[:2] == second[:2]
    np.testing.assert_array_equal(first[2], second[2])
    assert seen == [123, 123]
    with pytest.raises(ValueError, match="integer"):
        rt.keras.utils.set_random_seed(1.5)


def test_variable_created_in_a_first_trace_from_ops_of_the_trace():
    """The intro-to-modules guide's FlexibleDenseModule inside a Function."""
    class FlexibleDense(rt.Module):
        def __init__(self, out_features, name=None):
            super().__init__(name=name)
            self.is_built = False
            self.out_features = out_features

        def __call__(self, x):
            if not self.is_built:
                self.w = rt.Variable(rt.random.normal([x.shape[-1], self.out_features]), name="w")
                self.b = rt.Variable(rt.zeros([self.out_features]), name="b")
                self.is_built = True
            return rt.nn.relu(rt.matmul(x, self.w) + self.b)

    class MySequentialModule(rt.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.dense_1 = FlexibleDense(out_features=3)
            self.dense_2 = FlexibleDense(out_features=2)

        @rt.function
        def __call__(self, x):
            return self.dense_2(self.dense_1(x))

    model = MySequentialModule(name="the_model")
    x = rt.constant([[2.0, 2.0, 2.0]])
    out = model(x)
    w1, b1, w2, b2 = model.dense_1.w.numpy(), model.dense_1.b.numpy(), model.dense_2.w.numpy(), model.dense_2.b.numpy()
    assert w1.shape == (3, 3) and np.all(b1 == 0) and w1.std() > 0.1
    np.testing.assert_allclose(out.numpy(), np.maximum(np.maximum(x.numpy() @ w1 + b1, 0) @ w2 + b2, 0), rtol=1e-6)
    np.testing.assert_array_equal(model(x).numpy(), out.numpy())            # the same variables, no retrace
    assert model.__call__.experimental_get_tracing_count() == 1
    assert _names(model.variables) == ["b", "w", "b", "w"]


def test_variable_from_a_function_argument_is_a_clear_error():
    @rt.function
    def bad(x):
        v = rt.Variable(x * 2.0)
        return v.read_value()
    with pytest.raises(ValueError, match="depends on the function's input 'x'"):
        bad(rt.constant(1.0))

    @rt.function
    def from_other_variable():
        v = rt.Variable(source * 2.0)
        return v.read_value()
    source = rt.Variable(3.0)
    assert float(from_other_variable()) == 6.0
