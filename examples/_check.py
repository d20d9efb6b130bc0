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
