"""Side effects that run on every call: ``rt.print``, assertions, ``check_numerics``."""
from __future__ import annotations

import sys

import numpy as np

from runtime import dtypes, errors
from runtime.ops import math_ops
from runtime.ops.registry import OpDef, apply, convert, convert_same, gradient, is_tensor_like, register


def format_value(array: np.ndarray) -> str:
    """How ``rt.print`` shows a tensor's value (strings without b'' quotes)."""
    if array.dtype == object:
        if array.ndim == 0:
            item = array[()]
            return item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
        return "[" + " ".join(format_value(np.asarray(v, dtype=object)) for v in array) + "]"
    return str(array)


def _stream(name):
    if name == "stdout":
        return sys.stdout
    if name == "stderr":
        return sys.stderr
    return name.stream


class _Stream:
    """A user-supplied stream kept as an attribute (by identity)."""

    def __init__(self, stream):
        self.stream = stream

    def __repr__(self):
        return "<stream>"


def _print_kernel(inputs, attrs):
    parts, values = [], iter(inputs)
    for item in attrs["template"]:
        parts.append(format_value(next(values)) if item is None else item)
    stream = _stream(attrs["output_stream"])
    stream.write(attrs["sep"].join(parts) + attrs["end"])
    if hasattr(stream, "flush"):
        stream.flush()
    return ()


register(OpDef("PrintV2", "PrintV2", lambda specs, attrs: [], _print_kernel, None, stateful=True,
               side_effect=True, foldable=False))


def print(*inputs, output_stream=None, sep=" ", end="\n", name=None):
    """Print tensors and Python values every time it runs (eagerly, in graphs and in native code).

    Writes through ``sys.stderr`` (default) or ``sys.stdout`` as they are when it runs.
    """
    template, tensors = [], []
    for value in inputs:
        if is_tensor_like(value):
            tensors.append(convert(value))
            template.append(None)
        else:
            template.append(value if isinstance(value, str) else str(value))
    if output_stream is sys.stdout or output_stream == "stdout":
        stream = "stdout"
    elif output_stream is None or output_stream is sys.stderr or output_stream == "stderr":
        stream = "stderr"
    else:
        stream = _Stream(output_stream)
    return apply("PrintV2", tensors, {"template": tuple(template), "output_stream": stream,
                                      "sep": sep, "end": end}, name=name)


def _assert_kernel(inputs, attrs):
    condition, data = inputs[0], inputs[1:]
    if not np.all(condition):
        template = attrs["template"]
        values = iter(data)
        parts = [format_value(next(values)) if item is None else item for item in template]
        raise errors.InvalidArgumentError(" ".join(parts) if parts else "Assertion failed")
    return ()


def _assert_infer(specs, attrs):
    if specs[0].dtype is not dtypes.bool_:
        raise TypeError(f"Assert: the condition must be bool, got {specs[0].dtype}")
    return []


register(OpDef("Assert", "Assert", _assert_infer, _assert_kernel, None, stateful=True, side_effect=True,
               foldable=False))


def Assert(condition, data, summarize=None, name=None):
    """Raise ``InvalidArgumentError`` with ``data`` when ``condition`` is false (on every run)."""
    condition = convert(condition, dtypes.bool_, "Assert: condition")
    template, tensors = [], []
    for value in data:
        if is_tensor_like(value):
            tensors.append(convert(value))
            template.append(None)
        else:
            template.append(str(value))
    return apply("Assert", [condition] + tensors, {"template": tuple(template)}, name=name)


def _check_numerics_kernel(inputs, attrs):
    x = inputs[0]
    if not np.all(np.isfinite(x)):
        kind = "NaN" if np.any(np.isnan(x)) else "Inf"
        raise errors.InvalidArgumentError(f"{attrs['message']} : Tensor had {kind} values")
    return (x,)


def _check_numerics_infer(specs, attrs):
    if not specs[0].dtype.is_floating:
        raise TypeError(f"CheckNumerics needs a floating tensor, got {specs[0].dtype}")
    return [(specs[0].dtype, specs[0].shape.dims)]


register(OpDef("CheckNumerics", "CheckNumerics", _check_numerics_infer, _check_numerics_kernel, 1,
               stateful=True, side_effect=True, foldable=False))


def check_numerics(tensor, message, name=None):
    return apply("CheckNumerics", [convert(tensor)], {"message": str(message)}, name=name)


@gradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    return [check_numerics(grad, f"Not a number (NaN) or infinity (Inf) values detected in the gradient. "
                                 f"{op.attrs['message']}")]


def _compare_assert(op, symbol):
    def check(x, y, message=None, summarize=None, name=None):
        x, y = convert_same(f"assert_{op}", [x, y])
        cond = math_ops.reduce_all(getattr(math_ops, op)(x, y))
        text = message + ". " if message else ""
        return Assert(cond, [f"{text}Condition x {symbol} y did not hold element-wise: x =", x, "y =", y],
                      name=name)
    check.__name__ = f"assert_{op}"
    return check


assert_equal = _compare_assert("equal", "==")
assert_greater = _compare_assert("greater", ">")
assert_less = _compare_assert("less", "<")
assert_greater_equal = _compare_assert("greater_equal", ">=")
assert_less_equal = _compare_assert("less_equal", "<=")
