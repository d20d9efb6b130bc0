"""Native TensorArrays (``transpiler/lowering/lists.py``) without a compiler: which lists keep their items in the
order their stacks are transposed to (``stacked_layouts``), and what that lowers to."""
from __future__ import annotations

import re

import pytest

import runtime as rt
from runtime.graph import all_operations
from runtime.optimizer import optimize
from transpiler.lowering import lower_function
from transpiler.lowering.lists import stacked_layouts

F = rt.float32
SEQ, STATE, W = rt.TensorSpec([None, None, 8], F), rt.TensorSpec([None, 8], F), rt.TensorSpec([8, 8], F)



def _graph(fn, *specs):
    return optimize(rt.function(fn).get_concrete_function(*specs).graph)


def _written_layouts(graph) -> list:
    """The layout (its perm, or None) of the list each TensorListSetItem writes, in program order."""
    layouts = stacked_layouts(graph)
    return [getattr(layouts.get(id(op.inputs[0])), "perm", None) for op in all_operations(graph)
            if op.type == "TensorListSetItem"]


def dynamic_rnn(xs, h, w):
    """The guide's dynamic_rnn: the states stacked, then batch-major again."""
    seq = rt.transpose(xs, [1, 0, 2])
    states = rt.TensorArray(F, size=rt.shape(xs)[1])
    for t in rt.range(rt.shape(xs)[1]):
        h = rt.tanh(h @ w + seq[t])
        states = states.write(t, h)
    return rt.transpose(states.stack(), [1, 0, 2])


def test_the_states_of_a_recurrence_are_written_where_the_transposed_stack_has_them():
    graph = _graph(dynamic_rnn, rt.TensorSpec([4, 6, 8], F), rt.TensorSpec([4, 8], F), W)
    assert _written_layouts(graph) == [(1, 0, 2)]
    text = str(lower_function(graph, "f").ir)
    # state t, row b goes to [b, t, :] of the [4, 6, 8] result: rows 48 floats apart, states 8 apart
    assert re.search(r"ld\d+\[8 \* at\d+ \+ 48 \* i\d+ \+ i\d+\] = ", text), text
    # the transposed stack is the list's buffer, handed out as it is (no copy, no arena buffer)
    assert re.search(r"out\[0\] = tensor\(ld\d+, \[4, (6|n\d+), 8\]", text), text
    assert "alloc float[192]" not in text


def test_with_unknown_dims_the_strides_come_from_the_list_and_the_state():
    graph = _graph(dynamic_rnn, SEQ, STATE, W)
    assert _written_layouts(graph) == [(1, 0, 2)]
    text = str(lower_function(graph, "f").ir)
    assert re.search(r"n\d+ = lv\d+->length", text), text
    assert re.search(r"out\[0\] = tensor\(ld\d+, ", text), text


def two_arrays(xs, h, w):
    """One TensorArray(...) spelled twice (the optimizer merges them into one list given to two loop variables),
    stacked and transposed two ways; the second written on even steps only (its other items stack as zeros)."""
    seq = rt.transpose(xs, [1, 0, 2])
    states = rt.TensorArray(F, size=rt.shape(xs)[1])
    moved = rt.TensorArray(F, size=rt.shape(xs)[1])
    for t in rt.range(rt.shape(xs)[1]):
        h = rt.tanh(h @ w + seq[t])
        states = states.write(t, h)
        if t % 2 == 0:
            moved = moved.write(t, h * 2.0)
    return rt.transpose(states.stack(), [1, 0, 2]), rt.transpose(moved.stack(), [1, 2, 0])


def test_each_list_takes_the_order_of_its_own_stack_through_branches_and_copies():
    graph = _graph(two_arrays, SEQ, STATE, W)
    assert sorted(_written_layouts(graph)) == [(1, 0, 2), (1, 2, 0)]
    text = str(lower_function(graph, "f").ir)
    # both stacks fill their unwritten items with zeros in place, in each version of the function
    versions = len(re.findall(r"^function ", text, re.M))
    assert len(re.findall(r"if !wr\d+\[i\d+\]:", text)) == 2 * versions, text


def _recurrence(xs, h, w, states):
    """dynamic_rnn's loop, writing each state into ``states``."""
    seq = rt.transpose(xs, [1, 0, 2])
    for t in rt.range(rt.shape(xs)[1]):
        h = rt.tanh(h @ w + seq[t])
        states = states.write(t, h)
    return states


def read_back(xs, h, w):
    states = _recurrence(xs, h, w, rt.TensorArray(F, size=rt.shape(xs)[1]))
    return rt.transpose(states.stack(), [1, 0, 2]), states.read(0)


def growing(xs, h, w):
    states = _recurrence(xs, h, w, rt.TensorArray(F, size=0, dynamic_size=True))
    return rt.transpose(states.stack(), [1, 0, 2])


def stacked_and_transposed(xs, h, w):
    stacked = _recurrence(xs, h, w, rt.TensorArray(F, size=rt.shape(xs)[1])).stack()
    return stacked, rt.transpose(stacked, [1, 0, 2])


@pytest.mark.parametrize("fn", [read_back, growing, stacked_and_transposed],
                         ids=["an item read back", "a growing list", "the stack read as it is too"])
def test_lists_whose_items_are_read_otherwise_stay_in_item_order(fn):
    graph = _graph(fn, SEQ, STATE, W)
    assert _written_layouts(graph) == [None]
    assert "lv" in str(lower_function(graph, "f").ir)
