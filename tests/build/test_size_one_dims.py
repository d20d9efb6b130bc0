"""Size-1 dims are ordinary static dims, and a shape the graph knows statically still checks its producer.

Each of these failed a whole module's build or gave a value where eager raises (issue "A build never fails a
module for one function"): a keepdims reduction over an axis of size 1 feeding an elementwise op (a softmax over
one class), a gather or a pad reading a one-element tensor (kept in a register, not in memory), and
``rt.shape(rt.reshape(z, [4, 2]))`` of a ``z`` whose size is only known at run time.
"""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from conftest import build_source

pytestmark = pytest.mark.build

SOURCE = '''
import runtime as rt

F = rt.float32


@rt.function(input_signature=[rt.TensorSpec([3, 1], F)])
def centred(x):
    return x - rt.reduce_sum(x, axis=1, keepdims=True)


@rt.function(input_signature=[rt.TensorSpec([3, 1], F)])
def shifted_exp(x):
    return rt.exp(x - rt.reduce_max(x, axis=1, keepdims=True))


@rt.function(input_signature=[rt.TensorSpec([None, 1], F)])
def one_class_softmax(x):
    return rt.nn.softmax(x * 2.0)


@rt.function(input_signature=[rt.TensorSpec([1, 1], F), rt.TensorSpec([None], rt.int32)])
def gathered_loop(x, idx):
    y = rt.gather(x * 2.0, idx, axis=1)
    s = rt.zeros_like(y[:, 0])
    for i in rt.range(rt.shape(y)[1]):
        s += y[:, i]
    return s


@rt.function(input_signature=[rt.TensorSpec([1, 1], F)])
def padded(x):
    return rt.pad(x * 2.0, [[1, 2], [0, 1]]) + 1.0


@rt.function(input_signature=[rt.TensorSpec([None], F)])
def reshaped_rows(z):
    return rt.shape(rt.reshape(z, [4, 2]))[0]
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_source(tmp_path_factory.mktemp("size_one"), "rt_size_one", SOURCE)


def _eager(fn, *args):
    rt.config.run_functions_eagerly(True)
    try:
        return fn(*args)
    finally:
        rt.config.run_functions_eagerly(False)


def test_one_element_axes_and_values_build_and_agree_with_eager(built):
    x = np.array([[1.0], [-2.0], [0.5]], np.float32)
    one = np.array([[3.0]], np.float32)
    cases = [(built.centred, x), (built.shifted_exp, x), (built.one_class_softmax, x),
             (built.gathered_loop, one, np.array([0, 0, 0], np.int32)), (built.padded, one)]
    for fn, *args in cases:
        assert fn.get_concrete_function(*args).native, fn.__name__
        np.testing.assert_array_equal(fn(*args).numpy(), _eager(fn, *args).numpy(), err_msg=fn.__name__)
    with pytest.raises(rt.errors.InvalidArgumentError, match=r"indices\[1\] = 1 is not in \[0, 1\)"):
        built.gathered_loop(one, np.array([0, 1], np.int32))


def test_a_statically_known_shape_still_checks_its_producer(built):
    assert int(built.reshaped_rows(np.zeros(8, np.float32))) == 4
    with pytest.raises(rt.errors.InvalidArgumentError, match="cannot reshape a tensor of 12 elements"):
        built.reshaped_rows(np.zeros(12, np.float32))
    with pytest.raises(rt.errors.InvalidArgumentError):
        _eager(built.reshaped_rows, np.zeros(12, np.float32))
