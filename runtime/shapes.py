"""``rt.TensorShape`` (partial shapes, ``None`` dims) and ``rt.TensorSpec``."""
from __future__ import annotations

from typing import Iterable

from runtime import dtypes


class TensorShape:
    """A possibly partial shape: ``TensorShape([None, 3])``; ``TensorShape(None)`` is unknown rank.

    Example:
        >>> str(TensorShape([None, 3]))
        '(None, 3)'
        >>> TensorShape([2, 3]) == (2, 3)
        True
    """

    __slots__ = ("dims",)

    def __init__(self, dims: Iterable | None):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        if dims is None:
            self.dims = None
        else:
            if isinstance(dims, int):
                dims = (dims,)
            self.dims = tuple(None if d is None else int(d) for d in dims)

    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    @property
    def ndims(self) -> int | None:
        return self.rank

    def as_list(self) -> list:
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self.dims)

    def is_fully_defined(self) -> bool:
        return self.dims is not None and None not in self.dims

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def is_subshape_of(self, other) -> bool:
        """True when every tensor of this shape also has shape ``other`` (this one is at least as specific).

        ``(3,)`` is a subshape of ``(None,)`` but not the reverse; anything is a subshape of ``<unknown>``.
        """
        other = as_shape(other)
        if other.dims is None:
            return True
        if self.dims is None or len(self.dims) != len(other.dims):
            return False
        return all(b is None or a == b for a, b in zip(self.dims, other.dims))

    def most_specific_compatible_shape(self, other) -> "TensorShape":
        """The most specific shape that both shapes are compatible with (differences -> None)."""
        other = as_shape(other)
        if self.dims is None or other.dims is None or len(self.dims) != len(other.dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self.dims, other.dims)])

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self.dims, other.dims)])

    def __len__(self) -> int:
        if self.dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self.dims)

    def __getitem__(self, key):
        if self.dims is None:
            return None if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return self.dims[key]

    def __eq__(self, other) -> bool:
        if isinstance(other, TensorShape):
            return self.dims == other.dims
        if isinstance(other, (tuple, list)):
            return self.dims is not None and self.dims == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dims)

    def __bool__(self) -> bool:
        return self.dims is not None

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        if len(self.dims) == 1:
            return f"({self.dims[0]},)"
        return "(" + ", ".join(str(d) for d in self.dims) + ")"

    def __repr__(self) -> str:
        if self.dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self.dims)})"

    def __reduce__(self):
        return (TensorShape, (self.dims,))


def as_shape(value) -> TensorShape:
    return value if isinstance(value, TensorShape) else TensorShape(value)


class TensorSpec:
    """Describes a tensor argument: ``rt.TensorSpec(shape=[None], dtype=rt.int32)``."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape=None, dtype=dtypes.float32, name: str | None = None):
        self.shape = as_shape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name: str | None = None) -> "TensorSpec":
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, value) -> bool:
        """True when a tensor or spec ``value`` fits this spec (dtype equal, shape compatible)."""
        return self.dtype is value.dtype and self.shape.is_compatible_with(value.shape)

    def _key(self):
        return (self.shape.dims, self.dtype.name, self.name)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"

    def __reduce__(self):
        return (TensorSpec, (self.shape.dims, self.dtype.name, self.name))
