"""Disagreements between modes found by the differential fuzzer (tests/fuzz_programs.py), minimised: each
program must give the same answer eagerly, traced on the generic executor and on the reference executor
(the answer TensorFlow gives). tests/build/test_fuzz_programs_native.py runs the same programs natively."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import executor


def cast_to_bool(x, v):
    # the generic executor's compiled Cast converted to uint8: 0.5 -> False, 256 -> False, NaN -> False
    return rt.cast(x, rt.bool), rt.cast(v, rt.bool), rt.cast(rt.cast(x * 0.5, rt.float64), rt.bool)


def extrema_of_empty_rows(m, k):
    # TF: a max over nothing is the lowest value, a min the highest (every mode raised before)
    return rt.reduce_max(m, axis=1), rt.reduce_min(m, axis=-1, keepdims=True), rt.reduce_max(k), rt.reduce_min(k)


def extrema_of_no_rows(m):
    # a max over the columns of a (0, 3) matrix reduces nothing into nothing: every mode raised "reduction
    # over an empty dimension has no identity" (TF: an empty result); built log_softmax/softmax too
    return rt.reduce_max(m, axis=1), rt.reduce_min(m, axis=-1, keepdims=True), rt.nn.log_softmax(m), rt.nn.softmax(m)


CASES = [
    (cast_to_bool, (np.array([0.5, np.nan, -0.0, -0.25, 0.0, np.inf], np.float32), np.array([256, 0, -512], np.int32)),
     (np.array([True, True, False, True, False, True]), np.array([True, False, True]),
      np.array([True, True, False, True, False, True]))),
    (extrema_of_empty_rows, (np.zeros((2, 0), np.float32), np.zeros((0,), np.int32)),
     (np.full(2, -np.inf, np.float32), np.full((2, 1), np.inf, np.float32), np.int32(-2 ** 31), np.int32(2 ** 31 - 1))),
    (extrema_of_no_rows, (np.zeros((0, 3), np.float32),),
     (np.zeros(0, np.float32), np.zeros((0, 1), np.float32), np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))),
]


def _values(result):
    return [np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in result]


@pytest.mark.parametrize("function, args, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_every_mode_gives_the_tensorflow_answer(function, args, expected):
    traced = rt.function(function)
    outcomes = {"eager": _values(function(*[rt.constant(a) for a in args])), "traced": _values(traced(*args)),
                "reference": [np.asarray(v) for v in executor.run_graph(traced.get_concrete_function(*args).graph,
                                                                          list(args))]}
    for mode, got in outcomes.items():
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert g.dtype == e.dtype, f"{mode}, output {i}: {g.dtype}"
            np.testing.assert_array_equal(g, e, err_msg=f"{mode}, output {i}")


def test_an_output_element_that_reduces_nothing_is_the_lowest_or_highest_value():
    for axis in (0, None):
        assert (rt.reduce_max(rt.zeros([0, 3]), axis=axis).numpy() == -np.inf).all()
        assert (rt.reduce_min(rt.zeros([0, 3], rt.int64), axis=axis).numpy() == np.iinfo(np.int64).max).all()
