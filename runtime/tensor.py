"""``rt.Tensor``: eager tensors (wrapping a numpy array) and the shared operator API.

Symbolic (graph) tensors subclass ``Tensor`` in ``runtime.graph``. Python values
convert like ``tf.constant``: float -> float32, int -> int32, bool -> bool,
str/bytes -> string; numpy arrays and numpy scalars keep their dtype (in either byte order).

Conversion to a requested dtype (``rt.constant(v, dtype)``, an ``input_signature``, a
ConcreteFunction's argument, a Python value next to a tensor) follows one rule, ``to_array``:

- a tensor must already have that dtype (there is no implicit conversion between tensors);
- a numeric or bool numpy array or numpy scalar converts as TensorFlow converts it, by a cast
  whatever its values (floats round to the nearest, floats to integers truncate, integers wrap,
  nonzero is True): whether it is accepted depends on its dtype and shape only; its byte order
  does not matter; a numpy array of strings or objects does not convert to a number;
- a Python number converts by ``tf.constant``'s rules: to an integer dtype only when it is an
  integer in range, to a float dtype always (rounded to the nearest representable value).
"""
from __future__ import annotations

import numbers
from types import SimpleNamespace

import numpy as np

from runtime import dtypes
from runtime.shapes import TensorShape


# The op functions behind Python's operators on tensors (``add`` for ``+``), from ``register_operators``.
_operators = SimpleNamespace()


def register_operators(**functions) -> None:
    """Called by ``runtime.ops.api`` on import: ``add=..., less=...`` for ``Tensor.__add__``, ``__lt__`` ...

    Tensors sit below the ops in the layers, so the ops hand their functions down instead of being imported.
    """
    for name, function in functions.items():
        setattr(_operators, name, function)


class Tensor:
    """Base class of eager and symbolic tensors; Python operators build ops."""

    __slots__ = ()
    __array_priority__ = 100

    # -- arithmetic -----------------------------------------------------
    def __add__(self, other):
        return _operators.add(self, other)

    def __radd__(self, other):
        return _operators.add(other, self)

    def __sub__(self, other):
        return _operators.subtract(self, other)

    def __rsub__(self, other):
        return _operators.subtract(other, self)

    def __mul__(self, other):
        return _operators.multiply(self, other)

    def __rmul__(self, other):
        return _operators.multiply(other, self)

    def __truediv__(self, other):
        return _operators.divide(self, other)

    def __rtruediv__(self, other):
        return _operators.divide(other, self)

    def __floordiv__(self, other):
        return _operators.floordiv(self, other)

    def __rfloordiv__(self, other):
        return _operators.floordiv(other, self)

    def __mod__(self, other):
        return _operators.floormod(self, other)

    def __rmod__(self, other):
        return _operators.floormod(other, self)

    def __pow__(self, other):
        return _operators.pow(self, other)

    def __rpow__(self, other):
        return _operators.pow(other, self)

    def __matmul__(self, other):
        return _operators.matmul(self, other)

    def __rmatmul__(self, other):
        return _operators.matmul(other, self)

    def __neg__(self):
        return _operators.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _operators.abs(self)

    def __invert__(self):
        return _operators.logical_not(self)

    def __and__(self, other):
        return _operators.logical_and(self, other)

    def __rand__(self, other):
        return _operators.logical_and(other, self)

    def __or__(self, other):
        return _operators.logical_or(self, other)

    def __ror__(self, other):
        return _operators.logical_or(other, self)

    def __xor__(self, other):
        return _operators.logical_xor(self, other)

    # -- comparisons (elementwise, as in TF2) ------------------------------
    def __lt__(self, other):
        return _operators.less(self, other)

    def __le__(self, other):
        return _operators.less_equal(self, other)

    def __gt__(self, other):
        return _operators.greater(self, other)

    def __ge__(self, other):
        return _operators.greater_equal(self, other)

    def __eq__(self, other):
        if other is None:
            return False
        return _operators.equal(self, other)

    def __ne__(self, other):
        if other is None:
            return True
        return _operators.not_equal(self, other)

    __hash__ = object.__hash__

    def __getitem__(self, key):
        return _operators.strided_slice(self, key)

    @property
    def ndim(self) -> int | None:
        return self.shape.rank

    def get_shape(self) -> TensorShape:
        return self.shape

    def set_shape(self, shape) -> None:
        """Make a graph tensor's static shape more specific, checked when the graph runs (``tf.Tensor.set_shape``;
        ``runtime.ops.manip_ops.set_shape`` says how)."""
        _operators.set_shape(self, shape)


class EagerTensor(Tensor):
    """A concrete tensor holding a numpy array."""

    __slots__ = ("_value", "dtype")

    def __init__(self, value: np.ndarray, dtype: dtypes.DType | None = None):
        self._value = value
        self.dtype = dtype if dtype is not None else dtypes.as_dtype(value.dtype)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    def numpy(self):
        """The value as numpy: an ndarray, or a numpy scalar (bytes for strings) for rank 0."""
        value = self._value
        return value[()] if value.ndim == 0 else value

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)

    def __bool__(self) -> bool:
        if self._value.size != 1:
            raise ValueError(
                f"The truth value of a tensor with shape {self.shape} is ambiguous; "
                "use rt.reduce_any or rt.reduce_all")
        return bool(self._value.reshape(()))

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise TypeError(f"Only integer scalar tensors can be used as an index, got {self.dtype}")
        return int(self._value)

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        for item in self._value:
            yield EagerTensor(np.asarray(item), self.dtype)

    def __format__(self, spec):
        if self._value.ndim == 0 and spec:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __str__(self) -> str:
        text = str(self._value)
        if "\n" in text:
            text = "\n" + text
        return f"rt.Tensor({text}, shape={self.shape}, dtype={self.dtype})"

    def __repr__(self) -> str:
        value = self._value
        text = str(value) if value.ndim == 0 else repr(value)
        if "\n" in text:
            text = "\n" + text
        return f"<rt.Tensor: shape={self.shape}, dtype={self.dtype}, numpy={text}>"

    def __reduce__(self):
        return (EagerTensor, (self._value,))


def is_tensor(value) -> bool:
    """True for eager and symbolic tensors (``tf.is_tensor``)."""
    return isinstance(value, Tensor)


def is_symbolic(value) -> bool:
    """True for graph tensors (the ones whose value is known only when the graph runs)."""
    return isinstance(value, Tensor) and not isinstance(value, EagerTensor)


# ---------------------------------------------------------------------------
# Conversion of Python and numpy values.

_DEFAULT_BY_KIND = {"f": dtypes.float32, "i": dtypes.int32, "u": dtypes.int32, "b": dtypes.bool_}


def native_order(array: np.ndarray) -> np.ndarray:
    """``array`` in the machine's byte order (a big-endian ``'>f4'`` array is still float32)."""
    if array.dtype.isnative:
        return array
    return array.astype(array.dtype.newbyteorder("="))


def _python_to_array(value) -> np.ndarray:
    """Convert a Python scalar / nested list by tf.constant's rules (no target dtype)."""
    if isinstance(value, (np.ndarray, np.generic)):      # before float: np.float64 subclasses float
        array = np.asarray(value)
        if array.dtype.kind in "SUO":
            return _string_array(array)
        return native_order(array)
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype=np.int32 if -2**31 <= value < 2**31 else np.int64)
    if isinstance(value, float):
        return np.array(value, dtype=np.float32)
    if isinstance(value, (str, bytes)):
        return _string_array(value)
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, Tensor) for v in value):
            return np.stack([_python_to_array(v) if not isinstance(v, EagerTensor) else v._value
                             for v in value])
        array = np.array(value)
        if array.dtype.kind in "SU":
            return _string_array(value)
        if array.dtype == object:
            raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: {value!r}")
        if array.dtype.kind == "i" and (array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)):
            return array.astype(np.int32)
        return array.astype(_DEFAULT_BY_KIND.get(array.dtype.kind, dtypes.float32).np) \
            if array.dtype.kind in "fb" or array.size == 0 else array
    if isinstance(value, numbers.Number):
        return np.asarray(value)
    raise TypeError(f"Can't convert {type(value).__name__} {value!r} to a Tensor")


def _string_array(value) -> np.ndarray:
    def enc(v):
        if isinstance(v, str):
            return v.encode("utf-8")
        if isinstance(v, (bytes, np.bytes_)):
            return bytes(v)
        raise TypeError(f"Cannot convert {v!r} ({type(v).__name__}) to a string tensor: only str and bytes are strings")
    array = np.asarray(value, dtype=object)
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = enc(item)
    return out


def _same_values(converted: np.ndarray, source: np.ndarray) -> bool:
    """Every value of ``source`` survived the conversion to ``converted`` (compared as numbers both ways)."""
    if converted.dtype.kind == "c" and source.dtype.kind != "c":      # a real value as a complex one
        return _same_values(converted.real, source) and not np.any(converted.imag)
    with np.errstate(all="ignore"):
        back = converted.astype(source.dtype)
    nan = converted.dtype.kind == "f" and source.dtype.kind == "f"
    return bool(np.array_equal(converted, source, equal_nan=nan) and np.array_equal(back, source, equal_nan=nan))


def to_array(value, dtype: dtypes.DType | None = None) -> np.ndarray:
    """A numpy array for a Python/numpy value, of ``dtype`` when given (the rule is in the module docstring).

    A Python value that would change raises ``TypeError`` saying why (a Python ``1.5`` is not an integer,
    ``300`` is out of range for int8).
    """
    if isinstance(value, EagerTensor):
        array = value._value
        if dtype is not None and array.dtype != dtype.np:
            raise TypeError(f"Tensor of dtype {value.dtype} cannot be used as {dtype}")
        return array
    if dtype is None:
        return _python_to_array(value)
    if dtype is dtypes.string:
        return _string_array(value)
    is_numpy = isinstance(value, (np.ndarray, np.generic))
    source = _python_to_array(value)
    if source.dtype == dtype.np:
        return source
    if not is_numpy and dtype.is_floating and source.dtype.kind == "f":
        try:        # Python floats are doubles: round them once, to the target dtype (not through float32 first)
            source = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    if source.dtype.kind in "SUO" or dtype is dtypes.variant:
        raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype}")
    with np.errstate(all="ignore"):
        array = source.astype(dtype.np)
    if is_numpy or _same_values(array, source):
        return array                     # numpy values cast, as TensorFlow casts them
    if dtype.is_floating and source.dtype.kind in "iuf":
        return array                     # Python numbers round to the nearest float, as tf.constant
    what = repr(value)
    if source.dtype.kind == "f" and dtype.is_integer:
        with np.errstate(all="ignore"):
            integral = bool(np.all(source == np.round(source)))
        reason = "it is out of range" if integral else "it is not an integer"
    elif dtype.is_integer or dtype.is_bool:
        reason = "it is out of range"
    else:
        reason = f"it is not exactly representable in {dtype} (use rt.cast or numpy's astype to round)"
    raise TypeError(f"Cannot convert {what} to a tensor of dtype {dtype}: {reason}")
