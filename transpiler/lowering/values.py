"""Where a tensor's value lives in a lowered function.

- ``Scalar``: one element in a C local (a register): promoted 0-d and other one-element tensors.
- ``Array``: elements in memory at ``ptr[offset + sum(i_d * strides[d])]``; a stride of 0 is a broadcast,
  a view (transpose, slice, reshape of a contiguous array) is an ``Array`` over another's memory.
- ``Obj``: an ``rt_tensor`` descriptor the native code only passes along (strings, tensors of unknown
  rank), or a native TensorArray (an ``rt_list *`` local).

A tensor with none of these is *lazy*: its elements are computed where they are read, inside the loop
of the kernel that reads them (``kernels.element``).
"""
from __future__ import annotations

from dataclasses import dataclass

from transpiler.lowering.ir import Expr, Load, Poly, product


def contiguous_strides(dims) -> tuple:
    """Row-major element strides of ``dims``."""
    strides = []
    step = Poly.of(1)
    for d in reversed(dims):
        strides.append(step)
        step = step * d
    return tuple(reversed(strides))


@dataclass
class Array:
    """A tensor in memory.

    ``storage`` says who owns ``ptr``'s memory: ``input``, ``const`` (a static array), ``variable``,
    ``stack`` (a function-level array), ``arena`` (freed when the call ends or handed out as a
    result), ``reserve`` (kept across loop iterations), ``callback`` (a Python kernel's result), or
    ``list`` (a native TensorArray's buffer).
    """
    ptr: str
    dtype: object
    dims: tuple
    strides: tuple
    offset: Poly
    storage: str

    @staticmethod
    def dense(ptr: str, dtype, dims, storage: str) -> Array:
        dims = tuple(Poly.of(d) for d in dims)
        return Array(ptr, dtype, dims, contiguous_strides(dims), Poly.of(0), storage)

    @property
    def ctype(self) -> str:
        return self.dtype.c_type

    @property
    def contiguous(self) -> bool:
        if self.offset != 0:
            return False
        return all(s == c for s, c, d in zip(self.strides, contiguous_strides(self.dims), self.dims) if d != 1)

    def count(self) -> Poly:
        return product(self.dims)

    def load(self, index) -> Load:
        offset = self.offset
        for i, s in zip(index, self.strides):
            offset = offset + Poly.of(i) * s
        return Load(self.ptr, offset, self.ctype)


@dataclass
class Scalar:
    """A one-element tensor held in a C local (``expr`` is a ``Var``) or a constant (a ``Lit``)."""
    expr: Expr
    dtype: object
    dims: tuple


@dataclass
class Obj:
    """A value native code passes along: an ``rt_tensor`` (``ref``: a ``Slot`` of the call or a local), or a
    native TensorArray (``ctype`` ``rt_list *``: ``ref`` is the local holding it)."""
    ref: Expr
    dtype: object
    ctype: str = "rt_tensor"

    @property
    def name(self) -> str:
        """The local holding the value (a TensorArray's list)."""
        return self.ref.name
