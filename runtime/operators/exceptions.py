"""``assert c, msg``: a Python assert for Python conditions, ``rt.Assert`` for tensors."""
from __future__ import annotations

from runtime import errors
from runtime.ops import api as rt
from runtime.tensor import is_symbolic, is_tensor


def assert_stmt(expression, msg_thunk):
    if is_tensor(expression):
        msg = msg_thunk()
        data = [msg if msg is not None else "Assertion failed"]
        if is_symbolic(expression):
            return rt.Assert(expression, data)
        if not bool(rt.reduce_all(expression)):
            raise errors.InvalidArgumentError(str(data[0]))
        return None
    if not expression:
        msg = msg_thunk()
        raise AssertionError(msg) if msg is not None else AssertionError()
    return None
