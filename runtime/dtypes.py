"""The tensor element types: ``rt.int32``, ``rt.float32``, ``rt.string`` ...

A ``DType`` wraps a numpy dtype. Strings are numpy object arrays of ``bytes``;
``variant`` is the graph-only type of container values (TensorArray lists).
"""
from __future__ import annotations

import numpy as np


class DType:
    """An element type. ``str(rt.float32)`` is ``float32``; ``repr`` is ``rt.float32``."""

    __slots__ = ("name", "np", "c_type", "code", "is_floating", "is_integer", "is_bool", "is_complex", "size")

    def __init__(self, name: str, np_dtype, c_type: str | None, code: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.c_type = c_type              # the C element type in native code (None: not a C value)
        self.code = code                  # the ``rt_dtype`` enum value in C (``rt_tensor.dtype``)
        self.is_floating = self.np.kind == "f"
        self.is_integer = self.np.kind in "iu"
        self.is_bool = self.np.kind == "b"
        self.is_complex = self.np.kind == "c"
        self.size = self.np.itemsize

    @property
    def as_numpy_dtype(self):
        return self.np.type

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer or self.is_complex

    @property
    def real_dtype(self) -> "DType":
        """The dtype of the real and imaginary parts (``complex64`` -> ``float32``); the dtype itself otherwise."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"rt.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


# The codes are the one dtype table of native code: ``runtime/kernels/rt_config.h`` (the C enum) is
# generated from them by ``python -m transpiler.codegen.kernel_table``.
bool_ = DType("bool", np.bool_, "rt_bool", 0)
int8 = DType("int8", np.int8, "int8_t", 1)
int16 = DType("int16", np.int16, "int16_t", 2)
int32 = DType("int32", np.int32, "int32_t", 3)
int64 = DType("int64", np.int64, "int64_t", 4)
uint8 = DType("uint8", np.uint8, "uint8_t", 5)
float16 = DType("float16", np.float16, None, 6)
float32 = DType("float32", np.float32, "float", 7)
float64 = DType("float64", np.float64, "double", 8)
string = DType("string", object, None, 9)
variant = DType("variant", object, None, 10)
complex64 = DType("complex64", np.complex64, None, 11)      # not C values: native code calls back into Python
complex128 = DType("complex128", np.complex128, None, 12)

ALL = (bool_, int8, int16, int32, int64, uint8, float16, float32, float64, string, variant, complex64, complex128)
NUMERIC = (int8, int16, int32, int64, uint8, float16, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL if d is not variant}


def as_dtype(value) -> DType:
    """``rt.int32``, ``"int32"``, ``np.int32`` or ``np.dtype('int32')`` -> ``rt.int32``."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is complex:
        return complex128
    if value is int:
        return int32
    if value in (str, bytes):
        return string
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to an rt.DType") from None
    if np_dtype.kind in "SUO":
        return string
    if not np_dtype.isnative:       # '>f4' is float32 too (values convert to native order)
        np_dtype = np_dtype.newbyteorder("=")
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(f"Unsupported dtype {np_dtype}") from None
