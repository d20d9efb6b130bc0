"""Helpers for the examples' ``run()``: call a function, and call it again eagerly to compare.

Example:
    >>> import runtime as rt
    >>> double = rt.function(lambda a: a + a)
    >>> label, value, reference = compare("double(1)", double, rt.constant(1))
    >>> int(value), int(reference)
    (2, 2)
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

import runtime as rt


@contextlib.contextmanager
def eager_execution():
    """Run every ``rt.function`` eagerly (op by op on numpy) inside the block."""
    previous = rt.config.functions_run_eagerly()
    rt.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        rt.config.run_functions_eagerly(previous)


def eagerly(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with eager execution."""
    with eager_execution():
        return fn(*args, **kwargs)


def compare(label: str, fn: Callable, *args: Any, **kwargs: Any) -> tuple[str, Any, Any]:
    """``(label, fn(...) as a graph / native call, fn(...) run eagerly)``."""
    value = fn(*args, **kwargs)
    return label, value, eagerly(fn, *args, **kwargs)


def error_name(fn: Callable, *args: Any, **kwargs: Any) -> str:
    """The name of the exception ``fn(...)`` raises, or ``"no error"``."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the examples show which error a call raises
        return type(e).__name__
    return "no error"


def train_natively_and_eagerly(train_step: Callable, model: Any, optimizer: Any, inputs: tuple,
                               steps: int) -> tuple[list, list, list, list]:
    """Train ``steps`` native steps, then again from the same start eagerly (weights back, the optimizer's
    slots zero and its step 0). Returns (native losses, eager losses, native weights, eager weights)."""
    def weights() -> list:
        return [v.numpy().copy() for v in model.trainable_variables]

    def train() -> list:
        return [float(train_step(*inputs)) for _ in range(steps)]

    start = weights()
    native_losses = train()
    native_weights = weights()
    for variable, value in zip(model.trainable_variables, start):
        variable.assign(value)
    for variable in optimizer.variables:
        variable.assign(np.zeros(variable.shape.as_list(), variable.dtype.np))
    with eager_execution():
        eager_losses = train()
    return native_losses, eager_losses, native_weights, weights()


def all_close(a: list, b: list, rtol: float, atol: float) -> bool:
    """Every pair of arrays equal within the tolerances (native sums run in another order than numpy's)."""
    return all(np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(a, b))
