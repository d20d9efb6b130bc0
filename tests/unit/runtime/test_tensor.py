"""dtypes, TensorShape, TensorSpec and eager tensors: printing, conversion rules, operators, indexing."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from runtime_test_helpers import FLOATS, INTS, NUMERIC, RUNTIME_SETTINGS, arrays, assert_matches_numpy

import runtime as rt

# ---------------------------------------------------------------------------
# dtypes

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64", "string"]


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_names_and_printing(name):
    dtype = getattr(rt, name)
    assert dtype is getattr(rt.dtypes, name if name != "bool" else "bool_")
    assert str(dtype) == name
    assert repr(dtype) == f"rt.{name}"
    assert dtype.name == name
    assert rt.as_dtype(name) is dtype
    assert pickle.loads(pickle.dumps(dtype)) is dtype


def test_as_dtype_from_python_and_numpy():
    assert rt.as_dtype(float) is rt.float32
    assert rt.as_dtype(int) is rt.int32
    assert rt.as_dtype(bool) is rt.bool
    assert rt.as_dtype(str) is rt.string and rt.as_dtype(bytes) is rt.string
    assert rt.as_dtype(np.int16) is rt.int16
    assert rt.as_dtype(np.dtype("float64")) is rt.float64
    assert rt.as_dtype(np.complex64) is rt.complex64 and rt.as_dtype(complex) is rt.complex128
    with pytest.raises(TypeError):
        rt.as_dtype(np.uint16)
    with pytest.raises(TypeError):
        rt.as_dtype("no such dtype")


def test_dtype_properties():
    assert rt.float16.is_floating and not rt.float16.is_integer
    assert rt.uint8.is_integer and rt.uint8.is_numeric
    assert rt.bool.is_bool and not rt.bool.is_numeric
    assert not rt.string.is_numeric
    assert rt.int64.as_numpy_dtype is np.int64


# ---------------------------------------------------------------------------
# TensorShape and TensorSpec

@pytest.mark.parametrize("dims, text", [([2, 3], "(2, 3)"), ([None], "(None,)"), ([], "()"), ([4], "(4,)"),
                                        ([None, 3], "(None, 3)"), (None, "<unknown>")])
def test_tensor_shape_str(dims, text):
    assert str(rt.TensorShape(dims)) == text


def test_tensor_shape_equality_and_queries():
    s = rt.TensorShape([2, 3])
    assert s == (2, 3) and s == [2, 3] and s == rt.TensorShape((2, 3))
    assert s != (3, 2) and s != [2]
    assert rt.TensorShape([None, 3]) == (None, 3)
    assert rt.TensorShape(None) != ()
    assert s.as_list() == [2, 3] and s.rank == 2 and s.ndims == 2
    assert rt.TensorShape([None]).rank == 1
    assert rt.TensorShape(None).rank is None
    with pytest.raises(ValueError):
        rt.TensorShape(None).as_list()
    assert s.num_elements() == 6 and rt.TensorShape([None, 2]).num_elements() is None
    assert s.is_fully_defined() and not rt.TensorShape([None]).is_fully_defined()
    assert rt.TensorShape([None, 3]).is_compatible_with([5, 3])
    assert not rt.TensorShape([None, 3]).is_compatible_with([5, 4])
    assert not rt.TensorShape([None]).is_compatible_with([1, 1])
    assert rt.TensorShape(None).is_compatible_with([1, 2, 3])
    assert rt.TensorShape([None, 3]).merge_with([2, None]) == (2, 3)
    assert rt.TensorShape([2, 3]).most_specific_compatible_shape([2, 4]) == (2, None)
    assert s[0] == 2 and s[1:] == (3,) and list(s) == [2, 3] and len(s) == 2
    assert repr(rt.TensorShape([None, 3])) == "TensorShape([None, 3])"
    assert hash(rt.TensorShape([1, 2])) == hash(rt.TensorShape((1, 2)))
    assert pickle.loads(pickle.dumps(rt.TensorShape([None, 2]))) == (None, 2)


def test_tensor_spec():
    spec = rt.TensorSpec([None], rt.int32)
    assert repr(spec) == "TensorSpec(shape=(None,), dtype=rt.int32, name=None)"
    assert rt.TensorSpec(shape=[2], dtype="int32", name="x") == rt.TensorSpec((2,), rt.int32, "x")
    assert rt.TensorSpec([2], rt.int32) != rt.TensorSpec([None], rt.int32)
    assert rt.TensorSpec([2], rt.int32) != rt.TensorSpec([2], rt.int64)
    assert rt.TensorSpec([]).dtype is rt.float32
    assert spec.is_compatible_with(rt.constant([1, 2, 3]))
    assert not spec.is_compatible_with(rt.constant([[1]]))
    assert not spec.is_compatible_with(rt.constant([1.0]))
    assert rt.TensorSpec.from_tensor(rt.constant([1.0, 2.0])) == rt.TensorSpec([2], rt.float32)
    assert len({rt.TensorSpec([2], rt.int32), rt.TensorSpec([2], rt.int32)}) == 1
    with pytest.raises(TypeError):
        rt.TensorSpec([2], "nonsense")


# ---------------------------------------------------------------------------
# str / repr exactly as in SPEC

def test_str_and_repr_scalars():
    assert str(rt.constant(5.5)) == "rt.Tensor(5.5, shape=(), dtype=float32)"
    assert repr(rt.constant(9)) == "<rt.Tensor: shape=(), dtype=int32, numpy=9>"
    assert str(rt.constant(True)) == "rt.Tensor(True, shape=(), dtype=bool)"
    assert repr(rt.constant("a")) == "<rt.Tensor: shape=(), dtype=string, numpy=b'a'>"
    assert str(rt.constant("a")) == "rt.Tensor(b'a', shape=(), dtype=string)"


def test_str_and_repr_arrays():
    t = rt.constant([1, 2])
    assert str(t) == "rt.Tensor([1 2], shape=(2,), dtype=int32)"
    assert repr(t) == "<rt.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>"
    m = rt.constant([[1.0, 2.0], [3.0, 4.0]])
    assert str(m) == "rt.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)"
    assert repr(m) == ("<rt.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[1., 2.],\n"
                       "       [3., 4.]], dtype=float32)>")
    assert str(rt.constant(["a", "b"])) == "rt.Tensor([b'a' b'b'], shape=(2,), dtype=string)"


def test_symbolic_tensor_str_and_numpy_error():
    seen = []

    @rt.function(input_signature=[rt.TensorSpec(shape=[None], dtype=rt.int32)], autograph=False)
    def f(x):
        seen.append(str(x))
        with pytest.raises(AttributeError, match="numpy"):
            x.numpy()
        with pytest.raises(TypeError):
            bool(x)
        with pytest.raises(TypeError):
            int(x)
        return x
    f(rt.constant([1]))
    assert seen == ['Tensor("x:0", shape=(None,), dtype=int32)']


def test_format_and_python_conversions():
    assert f"{rt.constant(2.5):.2f}" == "2.50"
    assert bool(rt.constant(True)) is True and bool(rt.constant([0])) is False
    assert int(rt.constant(3)) == 3 and float(rt.constant(2.5)) == 2.5
    assert int(rt.constant(np.int64(2**40))) == 2**40
    assert [1, 2, 3][rt.constant(1)] == 2           # __index__ on integer scalars
    with pytest.raises(TypeError):
        [1, 2][rt.constant(1.0)]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(rt.constant([1, 2]))
    assert len(rt.constant([1, 2, 3])) == 3
    with pytest.raises(TypeError):
        len(rt.constant(1))
    assert [int(x) for x in rt.constant([4, 5])] == [4, 5]
    assert all(isinstance(x, rt.Tensor) for x in rt.constant([[1], [2]]))
    assert np.asarray(rt.constant([1, 2])).tolist() == [1, 2]
    assert rt.constant([1, 2]).ndim == 1 and rt.constant(5).shape.rank == 0
    assert rt.constant([[1, 2, 3]]).get_shape() == (1, 3)
    assert rt.is_tensor(rt.constant(1)) and not rt.is_tensor(1)


def test_numpy_values():
    assert rt.constant(5).numpy() == 5 and isinstance(rt.constant(5).numpy(), np.int32)
    assert rt.constant("ab").numpy() == b"ab"
    assert rt.constant([1.0]).numpy().dtype == np.float32
    assert pickle.loads(pickle.dumps(rt.constant([1, 2]))).numpy().tolist() == [1, 2]


# ---------------------------------------------------------------------------
# Conversion rules

@pytest.mark.parametrize("value, dtype", [
    (1.5, rt.float32), (1, rt.int32), (True, rt.bool), ("s", rt.string), (b"s", rt.string),
    ([1, 2], rt.int32), ([1, 2.5], rt.float32), ([[True], [False]], rt.bool), (["a", "b"], rt.string),
    (2**40, rt.int64), ([], rt.float32),
    (np.array([1, 2], np.int16), rt.int16), (np.array(1.0, np.float64), rt.float64), (np.float32(1.5), rt.float32),
    (np.int64(3), rt.int64), (np.uint8(3), rt.uint8), (np.bool_(True), rt.bool), (np.float16(1), rt.float16),
    (np.array(["x"]), rt.string),
])
def test_conversion_dtypes(value, dtype):
    t = rt.constant(value)
    assert t.dtype is dtype
    assert rt.convert_to_tensor(value).dtype is dtype
    assert t.shape == np.asarray(value).shape


def test_numpy_float64_scalar_keeps_its_dtype():
    assert rt.constant(np.float64(1.5)).dtype is rt.float64


def test_conversion_with_dtype():
    assert rt.constant(3, dtype=rt.float16).dtype is rt.float16
    assert rt.constant([1, 2], dtype=rt.int64).numpy().tolist() == [1, 2]
    assert rt.constant(1, dtype="float64").dtype is rt.float64
    with pytest.raises(TypeError):
        rt.constant(1.5, dtype=rt.int32)
    with pytest.raises(TypeError):
        rt.constant(300, dtype=rt.uint8)
    with pytest.raises(TypeError):
        rt.constant("a", dtype=rt.int32)
    with pytest.raises(TypeError):
        rt.convert_to_tensor(rt.constant(1), dtype=rt.int64)
    t = rt.constant(1)
    assert rt.convert_to_tensor(t) is t
    assert rt.constant([[1, 2]], shape=[2, 1]).shape == (2, 1)
    assert rt.constant(0, shape=[2, 3]).numpy().tolist() == [[0, 0, 0]] * 2
    with pytest.raises((TypeError, ValueError)):
        rt.constant([1, 2, 3], shape=[2, 2])


def test_constant_copies_numpy_input():
    a = np.array([1, 2])
    t = rt.constant(a)
    a[0] = 100
    assert t.numpy().tolist() == [1, 2]


def test_ragged_list_is_a_value_error():
    with pytest.raises(ValueError):
        rt.constant([[1], [2, 3]])


def test_no_implicit_promotion_between_tensors():
    with pytest.raises(TypeError, match="AddV2"):
        rt.constant(1) + rt.constant(1.0)
    with pytest.raises(TypeError, match="MatMul"):
        rt.matmul(rt.constant([[1]]), rt.constant([[1.0]]))
    with pytest.raises(TypeError, match="Maximum"):
        rt.maximum(rt.constant([1], rt.int64), rt.constant([1], rt.int32))
    with pytest.raises(TypeError, match="Sub"):
        rt.constant(1.0, rt.float64) - rt.constant(1.0)
    with pytest.raises(TypeError, match="Less"):
        rt.constant(1, rt.uint8) < rt.constant(1)


def test_python_scalars_adopt_the_tensor_dtype():
    assert (rt.constant([1, 2], dtype=rt.int64) + 1).dtype is rt.int64
    assert (rt.constant(np.float64(2.0).reshape(1)) * 2.5).dtype is rt.float64
    assert (2 - rt.constant(1, rt.int8)).dtype is rt.int8
    assert (1.5 * rt.constant(2.0, rt.float16)).dtype is rt.float16
    t = rt.maximum(0., rt.constant([1., -1.]))
    assert t.dtype is rt.float32 and t.numpy().tolist() == [1.0, 0.0]
    # my_relu([1, -1]) with rt.maximum(0., x): the first value fixes the dtype, the list adopts it
    relu = rt.maximum(0., [1, -1])
    assert relu.dtype is rt.float32 and relu.numpy().tolist() == [1.0, 0.0]
    assert (rt.constant(1, rt.uint8) - 2).numpy() == 255          # wraps like the native types
    with pytest.raises(TypeError):
        rt.constant([1, 2]) + 1.5                                  # not an integer: no silent truncation
    with pytest.raises(TypeError):
        rt.constant(1, rt.uint8) - 300
    assert (rt.constant([1.0]) + np.float32(1)).dtype is rt.float32


def test_integer_division_rules():
    assert_matches_numpy(rt.constant(1) / rt.constant(2), np.float64(0.5))
    assert_matches_numpy(rt.constant(7, rt.int64) / 2, np.float64(3.5))
    assert_matches_numpy(rt.constant(1, rt.int8) / rt.constant(2, rt.int8), np.float32(0.5))
    assert_matches_numpy(rt.constant(1, rt.uint8) / rt.constant(4, rt.uint8), np.float32(0.25))
    assert_matches_numpy(2 / rt.constant(4), np.float64(0.5))
    assert_matches_numpy(rt.constant(1.0) / 0.0, np.float32(np.inf))
    assert_matches_numpy(rt.constant(1) / 0, np.float64(np.inf))
    # // and % floor like Python (numpy's floor_divide/mod agree; C's / and % truncate)
    for a, b in [(-7, 2), (7, -2), (-7, -2), (7, 2), (0, 3)]:
        assert int(rt.constant(a) // b) == a // b
        assert int(rt.constant(a) % b) == a % b
        assert float(rt.constant(float(a)) // float(b)) == a // b
        assert float(rt.constant(float(a)) % float(b)) == a % b
    assert int(-7 // rt.constant(2)) == -4 and int(-7 % rt.constant(2)) == 1
    with pytest.raises(rt.errors.InvalidArgumentError, match="division by zero"):
        rt.constant(1) // 0
    with pytest.raises(rt.errors.InvalidArgumentError, match="division by zero"):
        rt.constant([1, 2]) % rt.constant([1, 0])
    assert rt.mod is rt.floormod
    assert rt.truediv is rt.divide


def test_reductions_follow_tf_dtype_rules():
    assert_matches_numpy(rt.reduce_mean(rt.constant([1, 2])), np.int32(1))              # truncates
    assert_matches_numpy(rt.reduce_mean(rt.constant([-1, -2])), np.int32(-1))           # toward zero
    assert_matches_numpy(rt.reduce_mean(rt.constant([1.0, 2.0])), np.float32(1.5))
    assert_matches_numpy(rt.argmax(rt.constant([1, 3, 2])), np.int64(1))
    assert_matches_numpy(rt.argmin(rt.constant([[1, 3], [0, 4]]), axis=1), np.array([0, 0], np.int64))
    assert_matches_numpy(rt.reduce_sum(rt.constant(np.zeros((0, 2), np.float32))), np.float32(0))
    assert_matches_numpy(rt.reduce_sum(rt.constant([100, 100], rt.int8)), np.int8(-56))  # stays int8, wraps
    assert_matches_numpy(rt.reduce_max(rt.constant(np.zeros(0, np.float32))), np.float32(-np.inf))   # as TF
    with pytest.raises(rt.errors.InvalidArgumentError):
        rt.argmax(rt.constant(np.zeros(0, np.float32)))
    with pytest.raises(TypeError):
        rt.reduce_sum(rt.constant([True]))
    with pytest.raises(TypeError):
        rt.reduce_any(rt.constant([1]))


def test_pow_of_integers():
    assert_matches_numpy(rt.constant(2) ** 10, np.int32(1024))
    assert_matches_numpy(rt.constant([2.0]) ** -1, np.array([0.5], np.float32))
    with pytest.raises(rt.errors.InvalidArgumentError, match="negative"):
        rt.constant(2) ** -1


def test_clip_and_where_and_softmax():
    assert rt.clip_by_value(rt.constant([-2, 0, 5]), 0, 3).numpy().tolist() == [0, 0, 3]
    assert rt.clip_by_value(rt.constant([-2.5, 9.0]), -1.0, 1.0).numpy().tolist() == [-1.0, 1.0]
    x = rt.constant([1, 2, 3, 4])
    assert rt.where(x % 2 == 0, x // 2, 3 * x + 1).numpy().tolist() == [4, 1, 10, 2]
    with pytest.raises(ValueError):
        rt.where(rt.constant([True]), x)
    with pytest.raises(TypeError):
        rt.where(rt.constant([1]), x, x)
    s = rt.nn.softmax(rt.constant([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(s.numpy().sum(), 1.0, rtol=1e-6)
    assert rt.nn.relu(rt.constant([-1.0, 2.0])).numpy().tolist() == [0.0, 2.0]


# ---------------------------------------------------------------------------
# Strings

def test_string_tensors():
    assert (rt.constant("a") + rt.constant("a")).numpy() == b"aa"
    assert (rt.constant(["a", "b"]) + "c").numpy().tolist() == [b"ac", b"bc"]
    assert ("x" + rt.constant("y")).numpy() == b"xy"
    assert bool(rt.constant("a") == rt.constant("a"))
    assert bool(rt.constant("a") != "b")
    assert rt.constant("é").numpy() == "é".encode()
    assert rt.constant(["a", "bc"])[1].numpy() == b"bc"
    assert rt.constant([["a", "bc"]])[0, 1].numpy() == b"bc"
    assert [t.numpy() for t in rt.unstack(rt.constant(["a", "bc"]))] == [b"a", b"bc"]
    assert rt.transpose(rt.constant("a")).numpy() == b"a"
    assert rt.transpose(rt.constant([["a", "b"]])).numpy().tolist() == [[b"a"], [b"b"]]
    g = rt.function(lambda t: t[0][1], autograph=False)
    assert g(rt.constant([["a", "bc"]])).numpy() == b"bc"
    with pytest.raises(TypeError):
        rt.constant("a") - rt.constant("a")
    f = rt.function(lambda a: a + a, autograph=False)
    assert f(rt.constant("ab")).numpy() == b"abab"


def test_number_does_not_convert_to_string():
    with pytest.raises(TypeError):
        rt.constant("a") + 1
    with pytest.raises(TypeError):
        rt.constant(5, dtype=rt.string)


# ---------------------------------------------------------------------------
# Operators

_BINARY = [("+", np.add), ("-", np.subtract), ("*", np.multiply), ("//", np.floor_divide), ("%", np.mod),
           ("<", np.less), ("<=", np.less_equal), (">", np.greater), (">=", np.greater_equal),
           ("==", np.equal), ("!=", np.not_equal)]


@pytest.mark.parametrize("symbol, ref", _BINARY, ids=[s for s, _ in _BINARY])
@RUNTIME_SETTINGS
@given(data=st.data())
def test_binary_operators_match_numpy(symbol, ref, data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
    lo2 = 1 if symbol in ("//", "%") and dtype.is_integer else None
    x = data.draw(arrays(dtype, shapes[0], lo=-50, hi=50))
    y = data.draw(arrays(dtype, shapes[1], lo=lo2 if lo2 else -50, hi=50))
    ns = {"x": rt.constant(x), "y": rt.constant(y)}
    out = eval(f"x {symbol} y", {}, ns)
    with np.errstate(all="ignore"):
        expected = ref(x, y)
    assert_matches_numpy(out, expected)
    # a Python scalar on the left adopts the tensor's dtype
    scalar = 3
    out = eval(f"{scalar} {symbol} y", {}, ns)
    with np.errstate(all="ignore"):
        expected = ref(np.asarray(scalar, dtype.np), y)
    if symbol in ("//", "%") and dtype.is_integer and np.any(y == 0):
        return
    assert_matches_numpy(out, expected)


def test_unary_operators_and_matmul():
    x = rt.constant([[-1, 2], [3, -4]])
    assert (-x).numpy().tolist() == [[1, -2], [-3, 4]]
    assert (+x) is x
    assert abs(x).numpy().tolist() == [[1, 2], [3, 4]]
    assert (x @ x).numpy().tolist() == (x.numpy() @ x.numpy()).tolist()
    assert ([[1, 0], [0, 1]] @ x).numpy().tolist() == x.numpy().tolist()
    assert (x ** 2).numpy().tolist() == [[1, 4], [9, 16]]
    assert (2 ** rt.constant(3)).numpy() == 8
    b = rt.constant([True, False])
    assert (~b).numpy().tolist() == [False, True]
    assert (b & True).numpy().tolist() == [True, False]
    assert (False | b).numpy().tolist() == [True, False]
    assert (b ^ rt.constant([True, True])).numpy().tolist() == [False, True]
    assert (rt.constant(1) == None) is False and (rt.constant(1) != None) is True  # noqa: E711
    assert len({rt.constant(1), rt.constant(1)}) == 2           # hashable by identity


# ---------------------------------------------------------------------------
# Indexing and slicing vs numpy

_INDEX = st.one_of(
    st.integers(-4, 4),
    st.builds(slice, st.one_of(st.none(), st.integers(-6, 6)), st.one_of(st.none(), st.integers(-6, 6)),
              st.one_of(st.none(), st.integers(-3, 3).filter(bool))),
    st.just(None), st.just(Ellipsis))


@RUNTIME_SETTINGS
@given(st.data())
def test_indexing_matches_numpy(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    key = data.draw(st.lists(_INDEX, max_size=4))
    if sum(k is Ellipsis for k in key) > 1:
        with pytest.raises(ValueError, match="ellipsis"):
            rt.constant(x)[tuple(key)]
        return
    key = tuple(key) if len(key) != 1 else key[0]
    try:
        expected = x[key]
    except IndexError:
        with pytest.raises((ValueError, rt.errors.InvalidArgumentError)):
            rt.constant(x)[key]
        return
    assert_matches_numpy(rt.constant(x)[key], expected)
    f = rt.function(lambda t: t[key], input_signature=[rt.TensorSpec([None] * len(shape), rt.int32)],
                    autograph=False)
    assert_matches_numpy(f(rt.constant(x)), expected)


def test_indexing_errors():
    x = rt.constant([[1, 2], [3, 4]])
    with pytest.raises(ValueError):
        x[5]                                     # known out of bounds: a trace-time style error
    with pytest.raises(ValueError):
        x[0, 0, 0]
    with pytest.raises(TypeError, match="gather"):
        x[[0, 1]]
    with pytest.raises(TypeError):
        x["a"]
    with pytest.raises(TypeError):
        x[1.5]
    with pytest.raises(ValueError, match="StridedSlice"):
        x[::0]
    step0 = rt.function(lambda t, k: t[::k], input_signature=[rt.TensorSpec([None, 2], rt.int32),
                                                              rt.TensorSpec([], rt.int32)], autograph=False)
    with pytest.raises(rt.errors.InvalidArgumentError, match="StridedSlice"):
        step0(x, rt.constant(0))
    assert x[rt.constant(1)].numpy().tolist() == [3, 4]
    assert x[rt.constant(0):rt.constant(1), -1].numpy().tolist() == [2]
    f = rt.function(lambda t, i: t[i], input_signature=[rt.TensorSpec([None, 2], rt.int32),
                                                         rt.TensorSpec([], rt.int32)], autograph=False)
    assert f(x, rt.constant(-1)).numpy().tolist() == [3, 4]
    with pytest.raises(rt.errors.InvalidArgumentError, match="StridedSlice"):
        f(x, rt.constant(2))


def test_variable_behaves_like_a_tensor():
    v = rt.Variable([1.0, 2.0], name="v")
    assert (v + 1).numpy().tolist() == [2.0, 3.0]
    assert (1 + v).numpy().tolist() == [2.0, 3.0]
    assert v[1].numpy() == 2.0
    assert v.dtype is rt.float32 and v.shape == (2,) and v.ndim == 1
    assert str(v).startswith("<rt.Variable 'v' shape=(2,) dtype=float32")
    assert rt.reduce_sum(v).numpy() == 3.0
    assert np.asarray(v).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        v.assign(rt.constant([1, 2]))
    s = rt.Variable(3)
    assert int(s) == 3 and float(s) == 3.0 and bool(s)
    s.assign_add(2)
    s.assign_sub(1)
    assert s.numpy() == 4 and s.read_value().dtype is rt.int32


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_creation_defaults(dtype):
    assert rt.zeros([2], dtype).dtype is dtype
    assert rt.ones_like(rt.zeros([2, 1], dtype)).numpy().tolist() == [[1], [1]]
    assert rt.zeros([3]).dtype is rt.float32
    assert rt.eye(2).dtype is rt.float32
    assert rt.range(3).dtype is rt.int32 and rt.range(0.0, 1.0, 0.5).dtype is rt.float32
    assert rt.linspace(0.0, 1.0, 3).dtype is rt.float32
