"""Guide: "Accumulating values in a loop": ``rt.TensorArray`` in a tensor loop."""
import numpy as np

import runtime as rt
from examples._check import compare


def rnn_step(inp, state):
    return inp + state


@rt.function
def dynamic_rnn(rnn_step, input_data, initial_state):
    input_data = rt.transpose(input_data, [1, 0, 2])   # [batch, time, features] -> [time, batch, features]
    max_seq_len = input_data.shape[0]
    states = rt.TensorArray(rt.float32, size=max_seq_len)
    state = initial_state
    for i in rt.range(max_seq_len):
        state = rnn_step(input_data[i], state)
        states = states.write(i, state)
    return rt.transpose(states.stack(), [1, 0, 2])


@rt.function(input_signature=(rt.TensorSpec([None, None, 4], rt.float32), rt.TensorSpec([None, 4], rt.float32)))
def cumulative_rnn(input_data, initial_state):
    """The guide's loop with ``rnn_step`` fixed and the sequence length known only at run time."""
    input_data = rt.transpose(input_data, [1, 0, 2])
    max_seq_len = rt.shape(input_data)[0]
    states = rt.TensorArray(rt.float32, size=max_seq_len)
    state = initial_state
    for i in rt.range(max_seq_len):
        state = rnn_step(input_data[i], state)
        states = states.write(i, state)
    return rt.transpose(states.stack(), [1, 0, 2])


def run():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    longer = np.arange(40, dtype=np.float32).reshape(2, 5, 4) / 10
    return [
        compare("dynamic_rnn(rnn_step, data[2, 3, 4], zeros([2, 4]))", dynamic_rnn, rnn_step, rt.constant(data),
                rt.zeros([2, 4])),
        compare("cumulative_rnn(data[2, 3, 4], zeros([2, 4]))", cumulative_rnn, rt.constant(data), rt.zeros([2, 4])),
        compare("cumulative_rnn(data[2, 5, 4], ones([2, 4]))", cumulative_rnn, rt.constant(longer), rt.ones([2, 4])),
        ("matches numpy cumsum", cumulative_rnn(rt.constant(data), rt.zeros([2, 4])), np.cumsum(data, axis=1)),
    ]
