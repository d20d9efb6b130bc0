"""``rt.TensorArray``: a list of tensors that works in tensor loops (functional: ``write`` returns a new array).

Its graph value is a ``variant`` tensor (the "flow") threaded through TensorList ops.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops import array_ops
from runtime.ops.registry import OpDef, apply, convert, gradient, not_differentiable, register
from runtime.shapes import as_shape
from runtime.tensor import EagerTensor


class TensorList:
    """The run-time value of a TensorArray: immutable tuple of arrays (None = not written)."""

    __slots__ = ("items", "dynamic", "element_shape")

    def __init__(self, items: tuple, dynamic: bool, element_shape: tuple | None = None):
        self.items = items
        self.dynamic = dynamic
        self.element_shape = element_shape

    def __repr__(self):
        return f"TensorList({len(self.items)} items)"


def _box(value) -> np.ndarray:
    box = np.empty((), dtype=object)
    box[()] = value
    return box


def _scalar_variant(specs, attrs):
    return [(dtypes.variant, ())]


def _reserve_kernel(inputs, attrs):
    n = int(inputs[0])
    if n < 0:
        raise errors.InvalidArgumentError(f"TensorArray: size must be non-negative, got {n}")
    return (_box(TensorList((None,) * n, attrs["dynamic_size"])),)


def _set_item_kernel(inputs, attrs):
    tl, index, item = inputs[0][()], int(inputs[1]), inputs[2]
    items = tl.items
    if index < 0:
        raise errors.InvalidArgumentError(f"TensorArray.write: index {index} is negative")
    if index >= len(items):
        if not tl.dynamic:
            raise errors.InvalidArgumentError(
                f"TensorArray.write: index {index} is out of range for a TensorArray of size {len(items)} "
                "(use dynamic_size=True to grow it)")
        items = items + (None,) * (index + 1 - len(items))
    # every written item has the list's element shape (kept by each write): one comparison, not one per item
    # (a dataset's shuffle buffer of 4096 rows in a traced function took 10 s an epoch)
    shape = tl.element_shape if tl.element_shape is not None else next(
        (other.shape for other in items if other is not None), None)
    if shape is not None and tuple(shape) != item.shape:
        raise errors.InvalidArgumentError(
            f"TensorArray.write: element of shape {item.shape} does not match earlier elements of shape "
            f"{tuple(shape)}")
    return (_box(TensorList(items[:index] + (np.array(item, copy=True),) + items[index + 1:], tl.dynamic,
                            item.shape)),)


def _item_infer(specs, attrs):
    return [(attrs["element_dtype"], attrs["element_shape"].dims)]


def _element_shape(tl, attrs):
    for item in tl.items:
        if item is not None:
            return item.shape
    if tl.element_shape is not None:
        return tl.element_shape
    shape = attrs["element_shape"]
    if shape.is_fully_defined():
        return tuple(shape.dims)
    return None


def _get_item_kernel(inputs, attrs):
    tl, index = inputs[0][()], int(inputs[1])
    if not 0 <= index < len(tl.items):
        raise errors.InvalidArgumentError(
            f"TensorArray.read: index {index} is out of range for a TensorArray of size {len(tl.items)}")
    item = tl.items[index]
    if item is None:
        shape = _element_shape(tl, attrs)
        if shape is None:
            raise errors.InvalidArgumentError(f"TensorArray.read: element {index} was never written")
        return (np.zeros(shape, attrs["element_dtype"].np),)
    return (item,)


def _stack_infer(specs, attrs):
    shape = attrs["element_shape"]
    if shape.dims is None:
        return [(attrs["element_dtype"], None)]
    return [(attrs["element_dtype"], (attrs.get("num_elements"),) + shape.dims)]


def _stack_kernel(inputs, attrs):
    tl = inputs[0][()]
    shape = _element_shape(tl, attrs)
    if shape is None:
        if not tl.items and attrs["element_shape"].dims is not None:
            dims = attrs["element_shape"].dims
            return (np.zeros((0,) + tuple(d or 0 for d in (dims or ())), attrs["element_dtype"].np),)
        raise errors.InvalidArgumentError("TensorArray.stack: no element was written, the element shape is unknown")
    dtype = attrs["element_dtype"].np
    return (np.stack([np.zeros(shape, dtype) if item is None else item for item in tl.items])
            if tl.items else np.zeros((0,) + tuple(shape), dtype),)


def _from_tensor_kernel(inputs, attrs):
    x = inputs[0]
    return (_box(TensorList(tuple(np.array(x[i], copy=True) for i in range(x.shape[0])), attrs["dynamic_size"],
                            x.shape[1:])),)


def _length_kernel(inputs, attrs):
    return (np.array(len(inputs[0][()].items), dtype=np.int32),)


register(OpDef("TensorListReserve", "TensorArrayV3", _scalar_variant, _reserve_kernel, 1, foldable=False))
register(OpDef("TensorListSetItem", "TensorArrayWrite", _scalar_variant, _set_item_kernel, 3, foldable=False))
register(OpDef("TensorListGetItem", "TensorArrayRead", _item_infer, _get_item_kernel, 2, foldable=False))
register(OpDef("TensorListStack", "TensorArrayStack", _stack_infer, _stack_kernel, 1, foldable=False))
register(OpDef("TensorListFromTensor", "TensorArrayUnstack", _scalar_variant, _from_tensor_kernel, 1,
               foldable=False))
register(OpDef("TensorListLength", "TensorArraySize", lambda specs, attrs: [(dtypes.int32, ())], _length_kernel, 1,
               foldable=False))


def _zeros_like_kernel(inputs, attrs):
    tl = inputs[0][()]
    shape = next((item.shape for item in tl.items if item is not None), tl.element_shape)
    return (_box(TensorList((None,) * len(tl.items), tl.dynamic, shape)),)


def _add_kernel(inputs, attrs):
    a, b = inputs[0][()], inputs[1][()]
    n = max(len(a.items), len(b.items))
    left = a.items + (None,) * (n - len(a.items))
    right = b.items + (None,) * (n - len(b.items))
    items = tuple(x if y is None else y if x is None else x + y for x, y in zip(left, right))
    return (_box(TensorList(items, a.dynamic or b.dynamic, a.element_shape or b.element_shape)),)


# Gradients of lists are lists: an item never written (None) is a zero.
register(OpDef("TensorListZerosLike", "TensorListZerosLike", _scalar_variant, _zeros_like_kernel, 1,
               foldable=False))
register(OpDef("TensorListAdd", "TensorListAdd", _scalar_variant, _add_kernel, 2, foldable=False))


def list_zeros_like(flow):
    """A list as long as ``flow``'s with no item written: the zero gradient of a TensorArray."""
    return apply("TensorListZerosLike", [flow])


def list_add(a, b):
    """Item-wise sum of two lists (unwritten items count as zeros): gradients of a TensorArray add up."""
    return apply("TensorListAdd", [a, b])


def _item_attrs(item) -> dict:
    return {"element_dtype": item.dtype, "element_shape": item.shape, "num_elements": None}


@gradient("TensorListSetItem")
def _set_item_grad(op, grad):
    _, index, item = op.inputs
    if grad is None:
        return [None, None, None]
    return [apply("TensorListSetItem", [grad, index, array_ops.zeros_like(item)]), None,
            apply("TensorListGetItem", [grad, index], _item_attrs(item))]


@gradient("TensorListGetItem")
def _get_item_grad(op, grad):
    flow, index = op.inputs
    return [apply("TensorListSetItem", [list_zeros_like(flow), index, grad]), None]


@gradient("TensorListStack")
def _stack_grad(op, grad):
    return [apply("TensorListFromTensor", [grad], {"dynamic_size": True})]


@gradient("TensorListFromTensor")
def _from_tensor_grad(op, grad):
    value = op.inputs[0]
    shape = value.shape
    attrs = {"element_dtype": value.dtype, "element_shape": shape[1:] if shape.rank else as_shape(None),
             "num_elements": shape[0] if shape.rank else None}
    return [apply("TensorListStack", [grad], attrs)]


@gradient("TensorListAdd")
def _add_grad(op, grad):
    return [grad, grad]


not_differentiable("TensorListReserve", "TensorListLength", "TensorListZerosLike")


class TensorArray:
    """A growable/fixed list of same-shape tensors usable inside tensor loops.

    Example:
        >>> ta = TensorArray(dtypes.float32, size=2)
        >>> ta = ta.write(0, 1.0).write(1, 2.0)
        >>> ta.stack().numpy().tolist()
        [1.0, 2.0]
    """

    def __init__(self, dtype, size=None, dynamic_size=False, clear_after_read=None, element_shape=None,
                 infer_shape=True, _flow=None, _size_hint=None):
        self.dtype = dtypes.as_dtype(dtype)
        self.dynamic_size = bool(dynamic_size)
        self.element_shape = as_shape(element_shape)
        if _flow is not None:
            self.flow = _flow
            self._size_hint = _size_hint
            return
        if size is None:
            size = 0
            self.dynamic_size = True
        size_t = convert(size, dtypes.int32, "size")
        self._size_hint = int(size) if isinstance(size, (int, np.integer)) else (
            int(size_t) if isinstance(size_t, EagerTensor) else None)
        self.flow = apply("TensorListReserve", [size_t], {"element_dtype": self.dtype,
                                                        "dynamic_size": self.dynamic_size})

    def _with(self, flow, element_shape=None, size_hint=None):
        return TensorArray(self.dtype, dynamic_size=self.dynamic_size,
                           element_shape=self.element_shape if element_shape is None else element_shape,
                           _flow=flow, _size_hint=self._size_hint if size_hint is None else size_hint)

    def _attrs(self):
        return {"element_dtype": self.dtype, "element_shape": self.element_shape,
                "num_elements": None if self.dynamic_size else self._size_hint}

    def write(self, index, value, name=None):
        value = convert(value, self.dtype, "TensorArray.write")
        if not self.element_shape.is_compatible_with(value.shape):
            raise ValueError(f"TensorArray.write: element of shape {value.shape} is incompatible with "
                             f"the element shape {self.element_shape}")
        flow = apply("TensorListSetItem", [self.flow, convert(index, dtypes.int32, "index"), value])
        return self._with(flow, self.element_shape.merge_with(value.shape))

    def read(self, index, name=None):
        return apply("TensorListGetItem", [self.flow, convert(index, dtypes.int32, "index")], self._attrs())

    def stack(self, name=None):
        return apply("TensorListStack", [self.flow], self._attrs())

    def unstack(self, value, name=None):
        value = convert(value, self.dtype, "TensorArray.unstack")
        flow = apply("TensorListFromTensor", [value], {"dynamic_size": self.dynamic_size})
        n = value.shape[0] if value.shape.rank else None
        return self._with(flow, value.shape[1:], n)

    def size(self, name=None):
        return apply("TensorListLength", [self.flow])

    def __repr__(self):
        return f"<rt.TensorArray dtype={self.dtype} element_shape={self.element_shape}>"
