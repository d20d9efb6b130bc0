"""Neural-network ops: 2-D convolution, max and average pooling (NHWC), log-softmax and sparse softmax cross
entropy.

Each op has its numpy kernel here; ``Conv2D``, its two backprop ops, ``MaxPool`` and ``MaxPoolGrad``
also have C kernels (``runtime/kernels/rt_nn.h``) that the generic executor uses for float32/float64; native
code also runs ``AvgPool`` and ``AvgPoolGrad`` there.
Padding follows TensorFlow: ``VALID`` keeps whole windows; ``SAME`` gives ``ceil(size / stride)``
outputs and pads the excess, the smaller half before.
"""
from __future__ import annotations

import numpy as np

from runtime import dtypes, errors
from runtime.ops import array_ops, math_ops, random_ops
from runtime.ops.math_ops import FLOATS, shape_tensor
from runtime.ops.registry import OpDef, apply, convert, convert_same, gradient, not_differentiable, register


# ---------------------------------------------------------------------------
# Windows: output sizes and padding.

def _pair(value, name: str) -> tuple[int, int]:
    """``strides``/``ksize`` as (height, width) from an int, a pair, or TF's 4-element NHWC form."""
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    values = [int(v) for v in value]
    if len(values) == 1:
        return values[0], values[0]
    if len(values) == 2:
        return values[0], values[1]
    if len(values) == 4:
        if values[0] != 1 or values[3] != 1:
            raise ValueError(f"{name} over the batch or channel dimension is not supported, got {values}")
        return values[1], values[2]
    raise ValueError(f"{name} must be an int or a list of 1, 2 or 4 ints, got {value!r}")


def _padding(value) -> str:
    padding = str(value).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError(f"padding must be 'VALID' or 'SAME', got {value!r}")
    return padding


def out_size(size, window: int, stride: int, padding: str):
    """Output length of one spatial dimension (None stays None)."""
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    return (size - window) // stride + 1 if size >= window else 0


def pad_before(size: int, window: int, stride: int, padding: str) -> int:
    """Padding added before the first element (``SAME``: half the excess, rounded down)."""
    if padding == "VALID":
        return 0
    total = max((out_size(size, window, stride, padding) - 1) * stride + window - size, 0)
    return total // 2


def _window_geometry(in_h, in_w, kh, kw, strides, padding):
    sh, sw = strides
    oh, ow = out_size(in_h, kh, sh, padding), out_size(in_w, kw, sw, padding)
    return oh, ow, pad_before(in_h, kh, sh, padding), pad_before(in_w, kw, sw, padding)


def _padded(x, oh, ow, kh, kw, strides, top, left, fill=0.0):
    """``x`` [N, H, W, C] padded so every window of the output fits: [N, (oh-1)*sh+kh, (ow-1)*sw+kw, C]."""
    n, h, w, c = x.shape
    hp, wp = max((oh - 1) * strides[0] + kh, h + top), max((ow - 1) * strides[1] + kw, w + left)
    if top == 0 and left == 0 and hp == h and wp == w:
        return x
    out = np.full((n, hp, wp, c), fill, x.dtype)
    out[:, top:top + h, left:left + w, :] = x
    return out


def _window(xp, i, j, oh, ow, strides):
    """The input elements each output position sees at window offset (i, j): [N, oh, ow, C]."""
    sh, sw = strides
    return xp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw, :]


def _check_rank4(op_type, spec, what):
    if spec.shape.rank not in (4, None):
        raise ValueError(f"{op_type}: {what} must be 4-D (NHWC), got shape {spec.shape}")


# ---------------------------------------------------------------------------
# Conv2D and its gradients.

def _conv_infer(specs, attrs):
    x, w = specs
    if x.dtype is not w.dtype:
        raise TypeError(f"Conv2D: input and filters must have one dtype, got {x.dtype} and {w.dtype}")
    math_ops._check_dtype("Conv2D", x.dtype, FLOATS)
    _check_rank4("Conv2D", x, "the input")
    _check_rank4("Conv2D", w, "the filters")
    xd = x.shape.dims or (None,) * 4
    wd = w.shape.dims or (None,) * 4
    if xd[3] is not None and wd[2] is not None and xd[3] != wd[2]:
        raise ValueError(f"Conv2D: the input has {xd[3]} channels but the filters expect {wd[2]} "
                         f"(input {x.shape}, filters {w.shape})")
    padding, strides = attrs["padding"], attrs["strides"]
    for size, k in ((xd[1], wd[0]), (xd[2], wd[1])):
        if padding == "VALID" and size is not None and k is not None and size < k:
            raise ValueError(f"Conv2D: a {wd[0]}x{wd[1]} window does not fit in the input {x.shape} with "
                             "padding VALID")
    oh = None if wd[0] is None else out_size(xd[1], wd[0], strides[0], padding)
    ow = None if wd[1] is None else out_size(xd[2], wd[1], strides[1], padding)
    return [(x.dtype, (xd[0], oh, ow, wd[3]))]


def _conv_kernel(inputs, attrs):
    x, w = inputs
    kh, kw, c, f = w.shape
    if x.ndim != 4 or x.shape[3] != c:
        raise errors.InvalidArgumentError(f"Conv2D: input of shape {x.shape} does not match filters {w.shape}")
    strides, padding = attrs["strides"], attrs["padding"]
    oh, ow, top, left = _window_geometry(x.shape[1], x.shape[2], kh, kw, strides, padding)
    if oh <= 0 or ow <= 0:
        raise errors.InvalidArgumentError(f"Conv2D: a {kh}x{kw} window does not fit in the input {x.shape} "
                                          f"with padding {padding}")
    xp = _padded(x, oh, ow, kh, kw, strides, top, left)
    out = np.zeros((x.shape[0], oh, ow, f), x.dtype)
    for i in range(kh):
        for j in range(kw):
            out += np.matmul(_window(xp, i, j, oh, ow, strides), w[i, j])
    return (out,)


register(OpDef("Conv2D", "Conv2D", _conv_infer, _conv_kernel, 2))


def _conv_input_infer(specs, attrs):
    sizes, w, dy = specs
    if w.dtype is not dy.dtype:
        raise TypeError(f"Conv2DBackpropInput: filters and gradient dtypes differ: {w.dtype} and {dy.dtype}")
    return [(dy.dtype, array_ops._dims_from(sizes, "Conv2DBackpropInput"))]


def _conv_input_kernel(inputs, attrs):
    sizes, w, dy = inputs
    n, h, width, c = (int(s) for s in sizes)
    kh, kw = w.shape[0], w.shape[1]
    strides = attrs["strides"]
    oh, ow, top, left = _window_geometry(h, width, kh, kw, strides, attrs["padding"])
    if dy.shape != (n, oh, ow, w.shape[3]):
        raise errors.InvalidArgumentError(f"Conv2DBackpropInput: gradient of shape {dy.shape} does not match input "
                                          f"{[n, h, width, c]} and filters {w.shape}")
    hp, wp = max((oh - 1) * strides[0] + kh, h + top), max((ow - 1) * strides[1] + kw, width + left)
    dxp = np.zeros((n, hp, wp, c), dy.dtype)
    for i in range(kh):
        for j in range(kw):
            _window(dxp, i, j, oh, ow, strides)[...] += np.matmul(dy, w[i, j].T)
    return (np.ascontiguousarray(dxp[:, top:top + h, left:left + width, :]),)


register(OpDef("Conv2DBackpropInput", "Conv2DBackpropInput", _conv_input_infer, _conv_input_kernel, 3,
               dynamic_infer=True))


def _conv_filter_infer(specs, attrs):
    x, sizes, dy = specs
    if x.dtype is not dy.dtype:
        raise TypeError(f"Conv2DBackpropFilter: input and gradient dtypes differ: {x.dtype} and {dy.dtype}")
    return [(dy.dtype, array_ops._dims_from(sizes, "Conv2DBackpropFilter"))]


def _conv_filter_kernel(inputs, attrs):
    x, sizes, dy = inputs
    kh, kw, c, f = (int(s) for s in sizes)
    strides = attrs["strides"]
    oh, ow, top, left = _window_geometry(x.shape[1], x.shape[2], kh, kw, strides, attrs["padding"])
    if dy.shape != (x.shape[0], oh, ow, f) or x.shape[3] != c:
        raise errors.InvalidArgumentError(f"Conv2DBackpropFilter: gradient of shape {dy.shape} does not match input "
                                          f"{x.shape} and filters {[kh, kw, c, f]}")
    xp = _padded(x, oh, ow, kh, kw, strides, top, left)
    dw = np.empty((kh, kw, c, f), dy.dtype)
    rows = dy.reshape(-1, f)
    for i in range(kh):
        for j in range(kw):
            dw[i, j] = np.matmul(_window(xp, i, j, oh, ow, strides).reshape(-1, c).T, rows)
    return (dw,)


register(OpDef("Conv2DBackpropFilter", "Conv2DBackpropFilter", _conv_filter_infer, _conv_filter_kernel, 3,
               dynamic_infer=True))


def _conv_attrs(op):
    return {"strides": op.attrs["strides"], "padding": op.attrs["padding"]}


@gradient("Conv2D")
def _conv_grad(op, grad):
    x, w = op.inputs
    return [apply("Conv2DBackpropInput", [shape_tensor(x), w, grad], _conv_attrs(op)),
            apply("Conv2DBackpropFilter", [x, shape_tensor(w), grad], _conv_attrs(op))]


@gradient("Conv2DBackpropInput")
def _conv_input_grad(op, grad):
    _, w, dy = op.inputs
    return [None, apply("Conv2DBackpropFilter", [grad, shape_tensor(w), dy], _conv_attrs(op)),
            apply("Conv2D", [grad, w], _conv_attrs(op))]


@gradient("Conv2DBackpropFilter")
def _conv_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [apply("Conv2DBackpropInput", [shape_tensor(x), grad, dy], _conv_attrs(op)), None,
            apply("Conv2D", [x, grad], _conv_attrs(op))]


def conv2d(input, filters, strides=1, padding="VALID", data_format="NHWC", dilations=None, name=None):
    """2-D convolution of ``input`` [batch, height, width, in_channels] with ``filters``
    [height, width, in_channels, out_channels] (``tf.nn.conv2d``; NHWC only, no dilation)."""
    if data_format != "NHWC":
        raise ValueError(f"conv2d supports data_format='NHWC' only, got {data_format!r}")
    if dilations is not None and _pair(dilations, "dilations") != (1, 1):
        raise ValueError(f"conv2d does not support dilations, got {dilations!r}")
    x, w = convert_same("Conv2D", [input, filters])
    return apply("Conv2D", [x, w], {"strides": _pair(strides, "strides"), "padding": _padding(padding)}, name=name)


# ---------------------------------------------------------------------------
# Max pooling and its gradients.

def _pooled(op_type: str, x, attrs, fits: bool):
    """The output (dtype, dims) of pooling ``x``; ``fits``: a VALID window larger than the input is an error."""
    math_ops._check_dtype(op_type, x.dtype, FLOATS)
    _check_rank4(op_type, x, "the input")
    xd = x.shape.dims or (None,) * 4
    (kh, kw), strides, padding = attrs["ksize"], attrs["strides"], attrs["padding"]
    for size, k in ((xd[1], kh), (xd[2], kw)):
        if fits and padding == "VALID" and size is not None and size < k:
            raise ValueError(f"{op_type}: a {kh}x{kw} window does not fit in the input {x.shape} with padding VALID")
    return x.dtype, (xd[0], out_size(xd[1], kh, strides[0], padding), out_size(xd[2], kw, strides[1], padding),
                     xd[3])


def _pool_infer(specs, attrs):
    return [_pooled("MaxPool", specs[0], attrs, fits=True)]


def _pool_geometry(x, attrs):
    (kh, kw), strides = attrs["ksize"], attrs["strides"]
    oh, ow, top, left = _window_geometry(x.shape[1], x.shape[2], kh, kw, strides, attrs["padding"])
    return kh, kw, strides, oh, ow, top, left


def _pool_kernel(inputs, attrs):
    x = inputs[0]
    kh, kw, strides, oh, ow, top, left = _pool_geometry(x, attrs)
    if oh <= 0 or ow <= 0:
        raise errors.InvalidArgumentError(f"MaxPool: a {kh}x{kw} window does not fit in the input {x.shape}")
    xp = _padded(x, oh, ow, kh, kw, strides, top, left, fill=-np.inf)
    out = np.array(_window(xp, 0, 0, oh, ow, strides))
    for i in range(kh):
        for j in range(kw):
            if i or j:
                np.maximum(out, _window(xp, i, j, oh, ow, strides), out=out)
    return (out,)


register(OpDef("MaxPool", "MaxPool", _pool_infer, _pool_kernel, 1))


def _first_max_positions(x, y, attrs):
    """Per window offset (i, j): where the window's first maximum is (row-major), as boolean masks."""
    kh, kw, strides, oh, ow, top, left = _pool_geometry(x, attrs)
    xp = _padded(x, oh, ow, kh, kw, strides, top, left, fill=-np.inf)
    taken = np.zeros(y.shape, np.bool_)
    for i in range(kh):
        for j in range(kw):
            hit = (_window(xp, i, j, oh, ow, strides) == y) & ~taken
            taken |= hit
            yield i, j, hit, xp.shape, (kh, kw, strides, oh, ow, top, left)


def _pool_grad_infer(specs, attrs):
    x, y, dy = specs
    if not (x.dtype is y.dtype is dy.dtype):
        raise TypeError(f"MaxPoolGrad: dtypes differ: {x.dtype}, {y.dtype}, {dy.dtype}")
    return [(x.dtype, x.shape.dims)]


def _pool_grad_kernel(inputs, attrs):
    """The gradient goes to the first maximum of each window (windows may overlap: contributions add)."""
    x, y, dy = inputs
    if y.shape != dy.shape:
        raise errors.InvalidArgumentError(f"MaxPoolGrad: gradient of shape {dy.shape} does not match the output "
                                          f"{y.shape}")
    dxp = None
    for i, j, hit, padded_shape, geometry in _first_max_positions(x, y, attrs):
        if dxp is None:
            dxp = np.zeros(padded_shape, dy.dtype)
        _, _, strides, oh, ow, top, left = geometry
        _window(dxp, i, j, oh, ow, strides)[...] += np.where(hit, dy, 0)
    h, w = x.shape[1], x.shape[2]
    return (np.ascontiguousarray(dxp[:, top:top + h, left:left + w, :]),)


register(OpDef("MaxPoolGrad", "MaxPoolGrad", _pool_grad_infer, _pool_grad_kernel, 3))


def _pool_grad_grad_infer(specs, attrs):
    x, y, ddx = specs
    return [(y.dtype, y.shape.dims)]


def _pool_grad_grad_kernel(inputs, attrs):
    """The adjoint of MaxPoolGrad: each output takes the value at its window's first maximum."""
    x, y, ddx = inputs
    out = np.zeros(y.shape, ddx.dtype)
    ddxp = None
    for i, j, hit, padded_shape, geometry in _first_max_positions(x, y, attrs):
        _, _, strides, oh, ow, top, left = geometry
        if ddxp is None:
            ddxp = _padded(ddx, oh, ow, attrs["ksize"][0], attrs["ksize"][1], strides, top, left)
        out += np.where(hit, _window(ddxp, i, j, oh, ow, strides), 0)
    return (out,)


register(OpDef("MaxPoolGradGrad", "MaxPoolGradGrad", _pool_grad_grad_infer, _pool_grad_grad_kernel, 3))


def _pool_attrs(op):
    return {"ksize": op.attrs["ksize"], "strides": op.attrs["strides"], "padding": op.attrs["padding"]}


@gradient("MaxPool")
def _pool_grad(op, grad):
    return [apply("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs(op))]


@gradient("MaxPoolGrad")
def _pool_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [None, None, apply("MaxPoolGradGrad", [x, y, grad], _pool_attrs(op))]


@gradient("MaxPoolGradGrad")
def _pool_grad_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [None, None, apply("MaxPoolGrad", [x, y, grad], _pool_attrs(op))]


# ---------------------------------------------------------------------------
# Average pooling and its gradient.

def _avg_pool_infer(specs, attrs):
    return [_pooled("AvgPool", specs[0], attrs, fits=False)]        # an average of no window is empty


def _window_sums(x, attrs, oh, ow, top, left):
    """Per output position: the sum of its window's input elements, and how many there are (padding not
    counted)."""
    (kh, kw), strides = attrs["ksize"], attrs["strides"]
    n, h, w, c = x.shape
    xp = _padded(x, oh, ow, kh, kw, strides, top, left)
    ones = _padded(np.ones((1, h, w, 1), x.dtype), oh, ow, kh, kw, strides, top, left)
    total = np.zeros((n, oh, ow, c), x.dtype)
    count = np.zeros((1, oh, ow, 1), x.dtype)
    for i in range(kh):
        for j in range(kw):
            total += _window(xp, i, j, oh, ow, strides)
            count += _window(ones, i, j, oh, ow, strides)
    return total, count


def _avg_pool_kernel(inputs, attrs):
    x = inputs[0]
    _, _, _, oh, ow, top, left = _pool_geometry(x, attrs)
    if oh <= 0 or ow <= 0:
        return (np.zeros((x.shape[0], max(oh, 0), max(ow, 0), x.shape[3]), x.dtype),)
    total, count = _window_sums(x, attrs, oh, ow, top, left)
    return (total / count,)


register(OpDef("AvgPool", "AvgPool", _avg_pool_infer, _avg_pool_kernel, 1))


def _avg_pool_grad_infer(specs, attrs):
    x, dy = specs
    if x.dtype is not dy.dtype:
        raise TypeError(f"AvgPoolGrad: dtypes differ: {x.dtype}, {dy.dtype}")
    return [(x.dtype, x.shape.dims)]


def _avg_pool_grad_kernel(inputs, attrs):
    """Each window's gradient divided by its count, added to every input element of the window (``x`` gives
    the input's shape)."""
    x, dy = inputs
    kh, kw, strides, oh, ow, top, left = _pool_geometry(x, attrs)
    oh, ow = max(oh, 0), max(ow, 0)
    if dy.shape != (x.shape[0], oh, ow, x.shape[3]):
        raise errors.InvalidArgumentError(f"AvgPoolGrad: gradient of shape {dy.shape} does not match the output "
                                          f"{(x.shape[0], oh, ow, x.shape[3])}")
    if oh == 0 or ow == 0:
        return (np.zeros(x.shape, dy.dtype),)
    _, count = _window_sums(np.zeros((1,) + x.shape[1:3] + (1,), dy.dtype), attrs, oh, ow, top, left)
    share = dy / count
    dxp = np.zeros(_padded(np.zeros((1,) + x.shape[1:3] + (1,), dy.dtype), oh, ow, kh, kw, strides, top,
                           left).shape[:3] + (x.shape[3],), dy.dtype)
    dxp = np.repeat(dxp, x.shape[0], axis=0)
    for i in range(kh):
        for j in range(kw):
            _window(dxp, i, j, oh, ow, strides)[...] += share
    h, w = x.shape[1], x.shape[2]
    return (np.ascontiguousarray(dxp[:, top:top + h, left:left + w, :]),)


register(OpDef("AvgPoolGrad", "AvgPoolGrad", _avg_pool_grad_infer, _avg_pool_grad_kernel, 2))


@gradient("AvgPool")
def _avg_pool_grad(op, grad):
    return [apply("AvgPoolGrad", [op.inputs[0], grad], _pool_attrs(op))]


@gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):          # linear in dy: its adjoint is the pool itself
    return [None, apply("AvgPool", [grad], _pool_attrs(op))]


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The maximum of each ``ksize`` window of ``input`` [batch, height, width, channels] (``tf.nn.max_pool2d``)."""
    if data_format != "NHWC":
        raise ValueError(f"max_pool2d supports data_format='NHWC' only, got {data_format!r}")
    x = convert(input)
    return apply("MaxPool", [x], {"ksize": _pair(ksize, "ksize"), "strides": _pair(strides, "strides"),
                                  "padding": _padding(padding)}, name=name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The mean of each ``ksize`` window of ``input`` [batch, height, width, channels], the padding of
    ``SAME`` not counted (``tf.nn.avg_pool2d``); a window larger than a ``VALID`` input gives an empty result."""
    if data_format != "NHWC":
        raise ValueError(f"avg_pool2d supports data_format='NHWC' only, got {data_format!r}")
    (kh, kw), (sh, sw) = _pair(ksize, "ksize"), _pair(strides, "strides")
    if min(kh, kw, sh, sw) < 1:
        raise ValueError(f"avg_pool2d: ksize and strides must be positive, got ksize {(kh, kw)}, strides {(sh, sw)}")
    x = convert(input)
    return apply("AvgPool", [x], {"ksize": (kh, kw), "strides": (sh, sw), "padding": _padding(padding)}, name=name)


# ---------------------------------------------------------------------------
# Log-softmax and sparse softmax cross entropy.

def _log_softmax_infer(specs, attrs):
    math_ops._check_dtype("LogSoftmax", specs[0].dtype, FLOATS)
    rank = specs[0].shape.rank
    if rank is not None and not -rank <= attrs["axis"] < rank:
        raise ValueError(f"LogSoftmax: axis {attrs['axis']} is out of range for a tensor of rank {rank}")
    return [(specs[0].dtype, specs[0].shape.dims)]


def _log_softmax(x, axis):
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        return (shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))).astype(x.dtype)


def _log_softmax_ops(x, axis):
    """``_log_softmax`` from primitive ops (the same ops in the same order): native code fuses them into one
    loop over rows."""
    keep = {"axis": axis, "keepdims": True}
    shifted = math_ops.subtract(x, apply("Max", [x], keep))
    return math_ops.subtract(shifted, math_ops.log(apply("Sum", [math_ops.exp(shifted)], keep)))


def _log_softmax_expand(inputs, attrs):
    x = inputs[0]
    return (_log_softmax_ops(x, (attrs["axis"] % x.shape.rank,)),)


register(OpDef("LogSoftmax", "LogSoftmax", _log_softmax_infer,
               lambda inputs, attrs: (_log_softmax(inputs[0], attrs["axis"]),), 1, expand=_log_softmax_expand))


@gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    axis = op.attrs["axis"]
    softmax = math_ops.exp(op.outputs[0])
    return [math_ops.subtract(grad, math_ops.multiply(softmax, math_ops.reduce_sum(grad, axis, keepdims=True)))]


def log_softmax(logits, axis=-1, name=None):
    """``logits - log(reduce_sum(exp(logits), axis))``, computed stably (``tf.nn.log_softmax``)."""
    return apply("LogSoftmax", [convert(logits)], {"axis": int(axis)}, name=name)


def _xent_infer(specs, attrs):
    logits, labels = specs
    math_ops._check_dtype("SparseSoftmaxCrossEntropyWithLogits", logits.dtype, FLOATS)
    if not labels.dtype.is_integer:
        raise TypeError(f"SparseSoftmaxCrossEntropyWithLogits: labels must be integers, got {labels.dtype}")
    if logits.shape.rank == 0:
        raise ValueError("SparseSoftmaxCrossEntropyWithLogits: logits must have at least one dimension")
    if logits.shape.rank is not None and labels.shape.rank is not None:
        if labels.shape.rank != logits.shape.rank - 1 or \
                not labels.shape.is_compatible_with(logits.shape[:-1]):
            raise ValueError(f"SparseSoftmaxCrossEntropyWithLogits: labels of shape {labels.shape} do not match "
                             f"logits of shape {logits.shape} (labels need the logits' shape without the last axis)")
        batch = labels.shape.merge_with(logits.shape[:-1]).dims
        return [(logits.dtype, batch), (logits.dtype, batch + (logits.shape[-1],))]
    return [(logits.dtype, None), (logits.dtype, logits.shape.dims)]


def _label_range_message(op_type: str, bad, depth) -> str:
    return f"{op_type}: received a label value of {bad} which is outside the valid range of [0, {depth})"


def _check_labels(labels, logits, op_type: str) -> None:
    """Labels must have the logits' shape without the last axis, and values in [0, classes)."""
    depth = logits.shape[-1]
    if labels.shape != logits.shape[:-1]:
        raise errors.InvalidArgumentError(f"{op_type}: labels of shape {labels.shape} do not match logits of shape "
                                          f"{logits.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= depth):
        bad = labels[(labels < 0) | (labels >= depth)].reshape(-1)[0]
        raise errors.InvalidArgumentError(_label_range_message(op_type, bad, depth))


def _xent_kernel(inputs, attrs):
    logits, labels = inputs
    _check_labels(labels, logits, "SparseSoftmaxCrossEntropyWithLogits")
    log_probs = _log_softmax(logits, -1)
    picked = np.take_along_axis(log_probs, labels[..., None].astype(np.int64), axis=-1)[..., 0]
    backprop = np.exp(log_probs)
    np.put_along_axis(backprop, labels[..., None].astype(np.int64),
                      np.take_along_axis(backprop, labels[..., None].astype(np.int64), axis=-1) - 1, axis=-1)
    return (-picked, backprop.astype(logits.dtype))


def _check_labels_infer(specs, attrs):
    labels, logits = specs
    return [(labels.dtype, None if logits.shape.rank is None else logits.shape.dims[:-1])]


def _check_labels_kernel(inputs, attrs):
    _check_labels(inputs[0], inputs[1], attrs["op"])
    return (inputs[0],)


# The labels passed through, checked against the logits (their shape, and a class for each), with the error
# of the op they feed (attrs["op"]): what that op checks, when it is expanded into ops that do not.
register(OpDef("CheckLabels", "CheckLabels", _check_labels_infer, _check_labels_kernel, 2))
not_differentiable("CheckLabels")


def _xent_expand(inputs, attrs):
    """The loss and backprop from primitive ops (what ``_xent_kernel`` computes): the labels checked, then a row
    group (max, sum of exponentials, the label's log-probability) native code runs as one loop over rows."""
    logits, labels = inputs
    depth = logits.shape.dims[-1]
    if logits.shape.rank is None:
        return None
    axis = (logits.shape.rank - 1,)
    labels = apply("CheckLabels", [labels, logits], {"op": "SparseSoftmaxCrossEntropyWithLogits"})
    log_probs = _log_softmax_ops(logits, axis)
    if depth is None:                  # classes known at run time: each label compared with the column index
        classes = array_ops.shape(logits, out_type=labels.dtype)[-1]
        columns = array_ops.range(convert(np.zeros((), labels.dtype.np)), classes)
        hot = math_ops.equal(array_ops.expand_dims(labels, -1), columns)
    else:
        hot = apply("OneHot", [labels], {"depth": depth, "axis": -1, "dtype": dtypes.bool_, "on_value": True,
                                         "off_value": False})
    picked = apply("Sum", [math_ops.where(hot, log_probs, convert(np.zeros((), logits.dtype.np)))],
                   {"axis": axis, "keepdims": False})
    backprop = math_ops.subtract(math_ops.exp(log_probs), math_ops.cast(hot, logits.dtype))
    return math_ops.negative(picked), backprop


# Outputs: the loss per row and its gradient with respect to the logits (softmax - one_hot(labels)).
register(OpDef("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", _xent_infer,
               _xent_kernel, 2, expand=_xent_expand))


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad, grad_backprop):
    logits = op.inputs[0]
    backprop = op.outputs[1]
    result = None
    if grad is not None:
        result = math_ops.multiply(array_ops.expand_dims(grad, -1), backprop)
    if grad_backprop is not None:       # the backprop output is softmax(logits) minus a constant
        softmax = math_ops.softmax(logits)
        inner = math_ops.reduce_sum(math_ops.multiply(grad_backprop, softmax), -1, keepdims=True)
        term = math_ops.multiply(math_ops.subtract(grad_backprop, inner), softmax)
        result = term if result is None else math_ops.add(result, term)
    return [result, None]


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """``-log(softmax(logits)[label])`` per row (``tf.nn.sparse_softmax_cross_entropy_with_logits``).

    A label outside ``[0, num_classes)`` is an ``InvalidArgumentError``.
    """
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs labels= and logits=")
    logits, labels = convert(logits), convert(labels)
    if labels.dtype is not dtypes.int32 and labels.dtype is not dtypes.int64:
        labels = math_ops.cast(labels, dtypes.int32)
    loss, _ = apply("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return loss


# ---------------------------------------------------------------------------
# Activations and losses composed from other ops (each as TensorFlow computes it), so they fuse in native code
# and are differentiated through their parts.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _floats(api: str, x):
    x = convert(x)
    math_ops._check_dtype(api, x.dtype, FLOATS)
    return x


def gelu(features, approximate: bool = False, name=None):
    """Gaussian error linear unit (``tf.nn.gelu``): ``0.5 * x * erfc(-x / sqrt(2))`` (``x * Phi(x)``: accurate for
    negative x too); with ``approximate=True`` ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``, each as
    TensorFlow spells it.

    Example:
        >>> [round(v, 4) for v in gelu([-1.0, 0.0, 2.0]).numpy().tolist()]
        [-0.1587, 0.0, 1.9545]
    """
    x = convert(features)
    math_ops._check_dtype("Gelu", x.dtype, FLOATS)
    if approximate:
        cubic = math_ops.multiply(math_ops.pow(x, convert(np.asarray(3, x.dtype.np))), 0.044715)
        inner = math_ops.multiply(math_ops.add(x, cubic), 0.7978845608028654)
        return math_ops.multiply(math_ops.multiply(x, 0.5), math_ops.add(math_ops.tanh(inner), 1.0))
    return math_ops.multiply(math_ops.multiply(x, 0.5),
                             math_ops.erfc(math_ops.multiply(math_ops.negative(x), 0.7071067811865476)))


def elu(features, alpha: float = 1.0, name=None):
    """``x`` where x > 0, else ``alpha * (exp(x) - 1)`` (``tf.nn.elu``; the negative side is computed on
    ``min(x, 0)``, so a large x never reaches exp, nor its gradient)."""
    x = convert(features)
    math_ops._check_dtype("Elu", x.dtype, FLOATS)
    negative = math_ops.expm1(math_ops.minimum(x, convert(np.zeros((), x.dtype.np))))
    if alpha != 1.0:
        negative = math_ops.multiply(negative, alpha)
    return math_ops.where(math_ops.greater(x, 0.0), x, negative)


def selu(features, name=None):
    """``scale * elu(x, alpha)`` with SELU's constants (``tf.nn.selu``)."""
    return math_ops.multiply(elu(features, 1.6732632423543772), 1.0507009873554805)


def leaky_relu(features, alpha: float = 0.2, name=None):
    """``x`` where x > 0, else ``alpha * x`` (``tf.nn.leaky_relu``; integers are computed in float32, as there)."""
    x = convert(features)
    if x.dtype.is_integer:
        x = math_ops.cast(x, dtypes.float32)
    return math_ops.where(math_ops.greater(x, convert(np.zeros((), x.dtype.np))), x, math_ops.multiply(x, alpha))


def relu6(features, name=None):
    """``min(max(x, 0), 6)`` (``tf.nn.relu6``)."""
    x = convert(features)
    return math_ops.minimum(math_ops.relu(x), convert(np.asarray(6, x.dtype.np)))


def silu(features, beta=1.0, name=None):
    """``features * sigmoid(beta * features)`` (``tf.nn.silu``, ``tf.nn.swish``)."""
    x = _floats("silu", features)
    inner = x if beta == 1.0 else math_ops.multiply(x, convert(beta, x.dtype))
    return math_ops.multiply(x, math_ops.sigmoid(inner), name=name)


swish = silu


def l2_loss(t, name=None):
    """``sum(t ** 2) / 2`` (``tf.nn.l2_loss``)."""
    x = _floats("l2_loss", t)
    return math_ops.divide(math_ops.reduce_sum(math_ops.square(x)), convert(2, x.dtype), name=name)


def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` along the last axis (``tf.nn.bias_add``, NHWC)."""
    if data_format not in (None, "NHWC", "N...C"):
        raise ValueError(f"bias_add: only channels-last data is supported, got data_format={data_format!r}")
    value = convert(value)
    bias = convert(bias, value.dtype, "bias")
    if bias.shape.rank not in (1, None):
        raise ValueError(f"bias_add: bias must be a vector, got shape {bias.shape}")
    return math_ops.add(value, bias, name=name)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """``max(x, 0) - x * z + log(1 + exp(-|x|))`` elementwise (``tf.nn.sigmoid_cross_entropy_with_logits``)."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs labels= and logits=")
    logits = convert(logits)
    labels = convert(labels, logits.dtype)
    if labels.shape.rank is not None and logits.shape.rank is not None and \
            not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(f"sigmoid_cross_entropy_with_logits: logits and labels must have the same shape, got "
                         f"{logits.shape} and {labels.shape}")
    zeros = array_ops.zeros_like(logits)
    positive = math_ops.greater_equal(logits, zeros)
    relu_logits = math_ops.where(positive, logits, zeros)
    neg_abs_logits = math_ops.where(positive, math_ops.negative(logits), logits)
    return math_ops.add(math_ops.subtract(relu_logits, math_ops.multiply(logits, labels)),
                        math_ops.softplus(neg_abs_logits))


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    """``-sum(labels * log_softmax(logits), axis)`` (``tf.nn.softmax_cross_entropy_with_logits``): the cross
    entropy against a distribution over the classes (both inputs are differentiated)."""
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels= and logits=")
    x = _floats("softmax_cross_entropy_with_logits", logits)
    z = convert(labels, x.dtype, "labels")
    if not x.shape.is_compatible_with(z.shape):
        raise ValueError(f"softmax_cross_entropy_with_logits: logits and labels must have the same shape, got "
                         f"{x.shape} and {z.shape}")
    return math_ops.negative(math_ops.reduce_sum(math_ops.multiply(z, log_softmax(x, axis)), axis), name=name)


def moments(x, axes, shift=None, keepdims=False, name=None):
    """``(mean, variance)`` of ``x`` over ``axes`` (``tf.nn.moments``)."""
    x = convert(x)
    mean = math_ops.reduce_mean(x, axes, keepdims=True)
    variance = math_ops.reduce_mean(math_ops.squared_difference(x, array_ops.stop_gradient(mean)), axes,
                                    keepdims=True)
    if not keepdims:
        squeezed = [a % x.shape.rank for a in ([axes] if isinstance(axes, int) else axes)]
        mean, variance = array_ops.squeeze(mean, squeezed), array_ops.squeeze(variance, squeezed)
    return mean, variance


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Elements of ``x`` kept with probability ``1 - rate`` and scaled by ``1 / (1 - rate)``, the others zero
    (``tf.nn.dropout``; a random op, seeded as the others are)."""
    x = _floats("dropout", x)
    rate = float(rate)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if rate == 0:
        return array_ops.identity(x, name=name)
    shape = array_ops.shape(x) if noise_shape is None else noise_shape
    keep = math_ops.greater_equal(random_ops.uniform(shape, dtype=x.dtype, seed=seed), convert(rate, x.dtype))
    scaled = math_ops.multiply(x, convert(1 / (1 - rate), x.dtype))
    return math_ops.where(keep, scaled, array_ops.zeros_like(x), name=name)
