"""Linear algebra: ``rt.linalg`` (inverse, solve, determinant, norms, diagonals, ``eye``) and ``rt.einsum``.

``MatrixInverse``, ``MatrixSolve`` and ``MatrixDeterminant`` are ops (numpy's LAPACK eagerly; the kernel
library's LU with partial pivoting in native code, ``runtime/kernels/rt_linalg.h``). Everything else is
composed from other ops, so it is differentiated, optimized and built to native code as they are:
``einsum`` becomes transposes, reshapes, one ``MatMul`` per pair of operands and sums; ``norm``, ``diag``,
``diag_part`` and ``trace`` are reductions, selections and strided views.
"""
from __future__ import annotations

import builtins

import numpy as np

from runtime import dtypes, errors
from runtime.ops import array_ops, math_ops
from runtime.ops.array_ops import dim_size, size_product
from runtime.ops.math_ops import FLOATS, matmul
from runtime.ops.registry import OpDef, apply, convert, gradient, register
from runtime.tensor import Tensor

_range = builtins.range


def _square_infer(op_type):
    def infer(specs, attrs):
        x = specs[0]
        math_ops._check_dtype(op_type, x.dtype, FLOATS[1:])
        dims = x.shape.dims
        if dims is None:
            return [(x.dtype, None)]
        if len(dims) < 2:
            raise ValueError(f"{op_type}: the input must be a matrix (at least 2-D), got shape {x.shape}")
        if dims[-1] is not None and dims[-2] is not None and dims[-1] != dims[-2]:
            raise ValueError(f"{op_type}: the input must be a square matrix, got shape {x.shape}")
        n = dims[-1] if dims[-1] is not None else dims[-2]
        if op_type == "MatrixDeterminant":
            return [(x.dtype, dims[:-2])]
        return [(x.dtype, dims[:-2] + (n, n))]
    return infer


def _check_square(op_type: str, x: np.ndarray) -> None:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(f"{op_type}: the input must be a square matrix, got shape {list(x.shape)}")


def _inverse_kernel(inputs, attrs):
    x = inputs[0]
    _check_square("MatrixInverse", x)
    if attrs.get("adjoint"):
        x = np.swapaxes(x, -1, -2)
    try:
        return (np.linalg.inv(x).astype(x.dtype),)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError("MatrixInverse: the input is not invertible") from None


def _determinant_kernel(inputs, attrs):
    x = inputs[0]
    _check_square("MatrixDeterminant", x)
    return (np.asarray(np.linalg.det(x)).astype(x.dtype),)


def _solve_infer(specs, attrs):
    a, b = specs
    out = _square_infer("MatrixSolve")([a], attrs)[0]
    if b.dtype is not a.dtype:
        raise TypeError(f"MatrixSolve: the matrix and the right-hand sides must have one dtype, got {a.dtype} and "
                        f"{b.dtype}")
    if b.shape.rank is not None and b.shape.rank < 2:
        raise ValueError(f"MatrixSolve: the right-hand sides must be at least 2-D [..., n, k], got {b.shape}")
    if a.shape.rank is None or b.shape.rank is None:
        return [(a.dtype, b.shape.dims)]
    n_a, n_b = out[1][-1], b.shape.dims[-2]
    if n_a is not None and n_b is not None and n_a != n_b:
        raise ValueError(f"MatrixSolve: a matrix of shape {a.shape} does not match right-hand sides of shape "
                         f"{b.shape}")
    if a.shape.rank != b.shape.rank:
        raise ValueError(f"MatrixSolve: the matrix {a.shape} and the right-hand sides {b.shape} must have the same "
                         "batch dimensions")
    batch = tuple(x if x is not None else y for x, y in zip(a.shape.dims[:-2], b.shape.dims[:-2]))
    return [(a.dtype, batch + (n_a if n_a is not None else n_b, b.shape.dims[-1]))]


def _solve_kernel(inputs, attrs):
    a, b = inputs
    _check_square("MatrixSolve", a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise errors.InvalidArgumentError(f"MatrixSolve: a matrix of shape {list(a.shape)} does not match "
                                          f"right-hand sides of shape {list(b.shape)}")
    if attrs.get("adjoint"):
        a = np.swapaxes(a, -1, -2)
    try:
        return (np.linalg.solve(a, b).astype(a.dtype),)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError("MatrixSolve: the matrix is not invertible") from None


register(OpDef("MatrixInverse", "MatrixInverse", _square_infer("MatrixInverse"), _inverse_kernel, 1))
register(OpDef("MatrixDeterminant", "MatrixDeterminant", _square_infer("MatrixDeterminant"), _determinant_kernel, 1))
register(OpDef("MatrixSolve", "MatrixSolve", _solve_infer, _solve_kernel, 2))


@gradient("MatrixInverse")
def _inverse_grad(op, grad):
    """d(A^-1) = -A^-1 dA A^-1, so dA = -A^-T grad A^-T (A^-T of the adjoint's input when adjoint)."""
    y = op.outputs[0]
    adjoint = bool(op.attrs.get("adjoint"))
    out = math_ops.negative(matmul(y, matmul(grad, y, transpose_b=True), transpose_a=True))
    return [matrix_transpose(out) if adjoint else out]


@gradient("MatrixDeterminant")
def _determinant_grad(op, grad):
    """d det(A) / dA = det(A) A^-T."""
    x, det = op.inputs[0], op.outputs[0]
    scale = array_ops.expand_dims(array_ops.expand_dims(math_ops.multiply(grad, det), -1), -1)
    return [math_ops.multiply(scale, matrix_transpose(inv(x)))]


@gradient("MatrixSolve")
def _solve_grad(op, grad):
    """X = A^-1 B: dB = A^-T grad, dA = -dB X^T (adjoint: A^T X = B, dA = -X dB^T)."""
    a = op.inputs[0]
    x = op.outputs[0]
    adjoint = bool(op.attrs.get("adjoint"))
    grad_b = solve(a, grad, adjoint=not adjoint)
    grad_a = math_ops.negative(matmul(x, grad_b, transpose_b=True) if adjoint else
                               matmul(grad_b, x, transpose_b=True))
    return [grad_a, grad_b]


def inv(input, adjoint=False, name=None):
    """The inverse of each square matrix of ``input`` [..., n, n] (``tf.linalg.inv``); a singular matrix is an
    ``InvalidArgumentError``."""
    return apply("MatrixInverse", [convert(input)], {"adjoint": bool(adjoint)}, name=name)


def det(input, name=None):
    """The determinant of each square matrix of ``input`` [..., n, n] (``tf.linalg.det``)."""
    return apply("MatrixDeterminant", [convert(input)], name=name)


def solve(matrix, rhs, adjoint=False, name=None):
    """``X`` with ``matrix @ X = rhs`` for [..., n, n] and [..., n, k] (``tf.linalg.solve``; ``adjoint``:
    ``matrix^T @ X = rhs``)."""
    a = convert(matrix)
    return apply("MatrixSolve", [a, convert(rhs, a.dtype, "rhs")], {"adjoint": bool(adjoint)}, name=name)


# ---------------------------------------------------------------------------
# Composites.



def _rank(x, api: str) -> int:
    if x.shape.rank is None:
        raise ValueError(f"{api} needs the rank of its input, unknown for {x}")
    return x.shape.rank


def matrix_transpose(a, name=None, conjugate=False):
    """``a`` with its last two dimensions swapped (``tf.linalg.matrix_transpose``)."""
    a = convert(a)
    rank = _rank(a, "linalg.matrix_transpose")
    if rank < 2:
        raise ValueError(f"linalg.matrix_transpose: the input must be at least 2-D, got shape {a.shape}")
    out = array_ops.transpose(a, list(_range(rank - 2)) + [rank - 1, rank - 2], name=name)
    return math_ops.conj(out) if conjugate else out


def linalg_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
                  b_is_sparse=False, output_type=None, name=None):
    """``tf.linalg.matmul``: ``matmul`` with ``adjoint_*`` (the conjugate transpose; a transpose for reals)."""
    a, b = convert(a), convert(b)
    if adjoint_a:
        a, transpose_a = math_ops.conj(a), not transpose_a
    if adjoint_b:
        b, transpose_b = math_ops.conj(b), not transpose_b
    out = matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name)
    return out if output_type is None else math_ops.cast(out, output_type)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """``a @ b`` for matrices ``a`` [..., m, n] and vectors ``b`` [..., n] (``tf.linalg.matvec``)."""
    out = linalg_matmul(a, array_ops.expand_dims(convert(b), -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return array_ops.squeeze(out, -1, name=name)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """Identity matrices (``tf.linalg.eye``), repeated over ``batch_shape``."""
    out = array_ops.eye(num_rows, num_columns, dtype=dtype, name=None if batch_shape else name)
    if not batch_shape:
        return out
    batch = [int(b) for b in batch_shape]
    return array_ops.broadcast_to(out, batch + out.shape.as_list(), name=name)


def _diagonal_mask(n):
    ids = array_ops.range(0, n)
    return math_ops.equal(array_ops.expand_dims(ids, 1), array_ops.expand_dims(ids, 0))


def diag(diagonal, name=None, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """Square matrices with ``diagonal`` [..., n] on their main diagonal, ``padding_value`` elsewhere
    (``tf.linalg.diag``; the main diagonal only, ``k=0``)."""
    if k != 0 or num_rows != -1 or num_cols != -1:
        raise NotImplementedError("rt.linalg.diag supports the main diagonal of square matrices only (k=0)")
    d = convert(diagonal)
    _rank(d, "linalg.diag")
    mask = _diagonal_mask(dim_size(d, -1))
    return math_ops.where(mask, array_ops.expand_dims(d, -1), convert(padding_value, d.dtype), name=name)


def diag_part(input, name=None, k=0, padding_value=0, align="RIGHT_LEFT"):
    """The main diagonal of each matrix of ``input`` [..., m, n]: [..., min(m, n)] (``tf.linalg.diag_part``,
    ``k=0``): a strided view of the flattened matrices."""
    if k != 0:
        raise NotImplementedError("rt.linalg.diag_part supports the main diagonal only (k=0)")
    x = convert(input)
    rank = _rank(x, "linalg.diag_part")
    if rank < 2:
        raise ValueError(f"linalg.diag_part: the input must be at least 2-D, got shape {x.shape}")
    m, n = dim_size(x, -2), dim_size(x, -1)
    batch = [dim_size(x, d) for d in _range(rank - 2)]
    flat = array_ops.reshape(x, batch + [size_product([m, n])])
    count = builtins.min(m, n) if isinstance(m, int) and isinstance(n, int) else math_ops.minimum(m, n)
    step = n + 1 if isinstance(n, int) else math_ops.add(n, 1)
    stop = size_product([count, step])
    return array_ops.strided_slice(flat, (Ellipsis, slice(0, stop, step)), name=name)


def band_part(input, num_lower, num_upper, name=None):
    """Each matrix of ``input`` [..., m, n] with the elements outside a band around its diagonal zeroed: row ``i``
    keeps columns ``j`` with ``i - j <= num_lower`` and ``j - i <= num_upper``, a negative bound keeping that
    whole triangle (``tf.linalg.band_part``; ``band_part(ones([t, t]), -1, 0)`` is a causal mask). A comparison
    of two ranges and a selection, so it is built natively as they are."""
    x = convert(input)
    rank = _rank(x, "linalg.band_part")
    if rank < 2:
        raise ValueError(f"linalg.band_part: the input must be at least 2-D, got shape {x.shape}")
    rows = array_ops.expand_dims(array_ops.range(0, dim_size(x, -2)), 1)
    cols = array_ops.expand_dims(array_ops.range(0, dim_size(x, -1)), 0)
    keep = None
    for below, bound, what, size in ((math_ops.subtract(rows, cols), num_lower, "num_lower", x.shape.dims[-2]),
                                     (math_ops.subtract(cols, rows), num_upper, "num_upper", x.shape.dims[-1])):
        if isinstance(bound, (int, np.integer)) and bound < 0:
            continue
        if isinstance(bound, (int, np.integer)) and size is not None and bound > size:
            raise errors.InvalidArgumentError(
                f"linalg.band_part: {what} must be negative or at most the number of "
                f"{'rows' if what == 'num_lower' else 'columns'} ({size}), got {bound}")
        bound = math_ops.cast(convert(bound), dtypes.int32)
        inside = math_ops.logical_or(math_ops.less(bound, 0), math_ops.less_equal(below, bound))
        keep = inside if keep is None else math_ops.logical_and(keep, inside)
    if keep is None:
        return array_ops.identity(x, name=name)
    return math_ops.where(keep, x, array_ops.zeros_like(x), name=name)


def trace(x, name=None):
    """The sum of each matrix's main diagonal (``tf.linalg.trace``)."""
    return math_ops.reduce_sum(diag_part(x), -1, name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (``tf.math.l2_normalize``, as TensorFlow computes it)."""
    x = convert(x)
    axis = dim if axis is None else axis
    square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
    inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, convert(epsilon, x.dtype)))
    return math_ops.multiply(x, inv_norm, name=name)


def _is_int_axis(axis) -> bool:
    return isinstance(axis, (int, np.integer))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """Vector and matrix norms (``tf.norm``, ``tf.linalg.norm``).

    ``axis`` None: the whole tensor as one vector; an int: vectors along it; a pair: matrices over those two
    axes. ``ord``: ``'euclidean'`` (the 2-norm of vectors, Frobenius of matrices), ``'fro'`` (matrices), ``1``,
    ``2`` (vectors), ``np.inf`` and any positive p for vectors; ``1`` and ``np.inf`` (largest column / row sum
    of magnitudes) for matrices.
    """
    x = convert(tensor)
    keepdims = bool(keepdims)
    if axis is not None and not _is_int_axis(axis):
        axis = [int(a) for a in axis]
        if len(axis) == 1:
            axis = axis[0]
    matrix = isinstance(axis, list)
    if matrix and (len(axis) != 2 or axis[0] == axis[1]):
        raise ValueError(f"norm: axis must be None, an int or a pair of distinct ints, got {axis}")
    if isinstance(ord, str) and ord not in ("euclidean", "fro"):
        raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2, np.inf or a positive number, got {ord!r}")
    if ord == "fro" and not matrix:
        raise ValueError("norm: ord='fro' is for matrices (give a pair of axes); use 'euclidean' for vectors")
    if not isinstance(ord, str) and not (isinstance(ord, (int, float, np.number)) and float(ord) > 0):
        raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2, np.inf or a positive number, got {ord!r}")
    magnitude = math_ops.abs(x)
    if ord in ("euclidean", "fro") or (not matrix and ord == 2):
        return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(x), axis, keepdims=keepdims), name=name)
    if matrix:
        rank = _rank(x, "norm")
        rows, cols = (a % rank for a in axis)
        if ord == 1:        # the largest sum over rows of a column
            inner, outer = rows, cols
        elif ord == np.inf:
            inner, outer = cols, rows
        else:
            raise ValueError(f"norm: matrix norms support ord 'euclidean', 'fro', 1 and np.inf, got {ord!r} (the "
                             "2-norm of a matrix needs a singular value decomposition, which rt does not have)")
        sums = math_ops.reduce_sum(magnitude, inner, keepdims=True)
        out = math_ops.reduce_max(sums, outer, keepdims=True)
        if not keepdims:
            out = array_ops.squeeze(out, sorted([rows, cols]))
        return array_ops.identity(out, name=name)
    if ord == np.inf:
        return math_ops.reduce_max(magnitude, axis, keepdims=keepdims, name=name)
    if ord == 1:
        return math_ops.reduce_sum(magnitude, axis, keepdims=keepdims, name=name)
    p = convert(float(ord), x.dtype)
    total = math_ops.reduce_sum(math_ops.pow(magnitude, p), axis, keepdims=keepdims)
    return math_ops.pow(total, math_ops.divide(convert(1.0, x.dtype), p), name=name)


# ---------------------------------------------------------------------------
# einsum: operands combined pairwise, left to right, each pair by one MatMul over the letters they share
# (a broadcasting product when they share none that is summed).

_ELLIPSIS_LETTERS = [chr(0x100 + i) for i in _range(64)]     # stand-ins for the dims of "..."


def _parse_einsum(equation: str, ranks: list) -> tuple[list, str]:
    text = equation.replace(" ", "")
    if "->" in text:
        lhs, out = text.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = text, "", False
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: the equation {equation!r} has {len(terms)} operand(s), got {len(ranks)} input(s)")
    widest = 0
    for term, rank in zip(terms, ranks):
        if "..." in term:
            if rank is None:
                raise ValueError(f"einsum: an operand with '...' needs a known rank ({equation!r})")
            widest = builtins.max(widest, rank - (len(term) - 3))
    parsed = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            count = rank - (len(term) - 3)
            if count < 0:
                raise ValueError(f"einsum: operand {term!r} of {equation!r} has rank {rank}, fewer than its letters")
            term = term.replace("...", "".join(_ELLIPSIS_LETTERS[widest - count:widest]))
        if not all(c.isalpha() or c in _ELLIPSIS_LETTERS for c in term):
            raise ValueError(f"einsum: invalid subscripts {term!r} in {equation!r}")
        if rank is not None and len(term) != rank:
            raise ValueError(f"einsum: operand {term!r} of {equation!r} has {len(term)} subscripts for a tensor of "
                             f"rank {rank}")
        parsed.append(term)
    dots = "".join(_ELLIPSIS_LETTERS[:widest])
    if explicit:
        out = out.replace("...", dots)
    else:
        counts = {}
        for term in parsed:
            for c in term:
                if c not in _ELLIPSIS_LETTERS:
                    counts[c] = counts.get(c, 0) + 1
        out = dots + "".join(sorted(c for c, k in counts.items() if k == 1))
    used = set("".join(parsed))
    for c in out:
        if c not in used:
            raise ValueError(f"einsum: output subscript {c!r} of {equation!r} appears in no operand")
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: an output subscript repeats in {equation!r}")
    return parsed, out


def _take_diagonals(x, letters: str):
    """Repeated letters of one operand (``ii``): keep the elements where their indices agree (a mask, then a
    sum over the repeated axis)."""
    while len(set(letters)) != len(letters):
        for first, c in enumerate(letters):
            second = letters.find(c, first + 1)
            if second >= 0:
                break
        n = dim_size(x, first)
        mask = _diagonal_mask(n)
        shape = [1] * len(letters)
        shape[first] = shape[second] = n
        mask = array_ops.reshape(math_ops.cast(mask, x.dtype), shape)
        x = math_ops.reduce_sum(math_ops.multiply(x, mask), second)
        letters = letters[:second] + letters[second + 1:]
    return x, letters


def _sum_out(x, letters: str, keep) -> tuple:
    axes = [i for i, c in enumerate(letters) if c not in keep]
    if axes:
        x = math_ops.reduce_sum(x, axes)
        letters = "".join(c for c in letters if c in keep)
    return x, letters


def _arranged(x, letters: str, order: str):
    if letters == order:
        return x
    return array_ops.transpose(x, [letters.index(c) for c in order])


def _contract(a, la: str, b, lb: str, keep: set) -> tuple:
    """``a`` and ``b`` multiplied and summed over the letters they share that ``keep`` does not need."""
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = "".join(c for c in la if c in lb and c in keep)
    summed = "".join(c for c in la if c in lb and c not in keep)
    left = "".join(c for c in la if c not in lb)
    right = "".join(c for c in lb if c not in la)
    if not summed:
        shape_a = _arranged(a, la, batch + left)
        shape_b = _arranged(b, lb, batch + right)
        for _ in right:
            shape_a = array_ops.expand_dims(shape_a, -1)
        for _ in left:
            shape_b = array_ops.expand_dims(shape_b, len(batch))
        return math_ops.multiply(shape_a, shape_b), batch + left + right
    a = _arranged(a, la, batch + left + summed)
    b = _arranged(b, lb, batch + summed + right)
    nb = len(batch)
    a_batch = [dim_size(a, d) for d in _range(nb)]
    b_batch = [dim_size(b, d) for d in _range(nb)]
    left_dims = [dim_size(a, nb + d) for d in _range(len(left))]
    right_dims = [dim_size(b, nb + len(summed) + d) for d in _range(len(right))]
    summed_dims = [dim_size(a, nb + len(left) + d) for d in _range(len(summed))]
    a2 = array_ops.reshape(a, a_batch + [size_product(left_dims), size_product(summed_dims)])
    b2 = array_ops.reshape(b, b_batch + [size_product(summed_dims), size_product(right_dims)])
    product = matmul(a2, b2)
    out_batch = [dim_size(product, d) for d in _range(nb)]
    return array_ops.reshape(product, out_batch + left_dims + right_dims), batch + left + right


def einsum(equation, *inputs, **kwargs):
    """Sums of products over the indices an Einstein-summation ``equation`` names (``tf.einsum``):
    ``einsum("ij,jk->ik", a, b)`` is ``a @ b``; ``...`` stands for broadcast leading dims; without ``->`` the
    output has the letters that occur once, in alphabetical order.

    Example:
        >>> import runtime as rt
        >>> rt.einsum("ij,j->i", [[1, 2], [3, 4]], [1, 1]).numpy().tolist()
        [3, 7]
    """
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected arguments {sorted(kwargs)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) and inputs[0] and any(
            isinstance(v, Tensor) for v in inputs[0]) and equation.count(",") + 1 == len(inputs[0]):
        inputs = tuple(inputs[0])
    tensors = [convert(x) for x in inputs]
    if not tensors:
        raise ValueError("einsum needs at least one operand")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            raise TypeError(f"einsum: all operands must have one dtype, got {', '.join(str(t.dtype) for t in tensors)}")
    terms, out = _parse_einsum(str(equation), [t.shape.rank for t in tensors])
    operands = []
    for t, letters in zip(tensors, terms):
        operands.append(_take_diagonals(t, letters))
    x, lx = operands[0]
    for k, (y, ly) in enumerate(operands[1:], 1):
        later = set(out) | {c for _, lz in operands[k + 1:] for c in lz}
        x, lx = _contract(x, lx, y, ly, later)
    x, lx = _sum_out(x, lx, set(out))
    return array_ops.identity(_arranged(x, lx, out), name=name)


def tensordot(a, b, axes, name=None):
    """Sums of products over ``axes`` of ``a`` and ``b`` (``tf.tensordot``): an int (the last ``axes`` of ``a``
    with the first of ``b``) or a pair of axis lists."""
    a, b = convert(a), convert(b)
    ra, rb = _rank(a, "tensordot"), _rank(b, "tensordot")
    if isinstance(axes, (int, np.integer)):
        axes = (list(_range(ra - int(axes), ra)), list(_range(int(axes))))
    axes_a, axes_b = ([axes[0]] if _is_int_axis(axes[0]) else list(axes[0]),
                      [axes[1]] if _is_int_axis(axes[1]) else list(axes[1]))
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot: {len(axes_a)} axes of a against {len(axes_b)} of b")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in _range(ra)]
    lb = [next(letters) for _ in _range(rb)]
    for i, j in zip(axes_a, axes_b):
        lb[j % rb] = la[i % ra]
    shared = {la[i % ra] for i in axes_a}
    out = "".join(c for c in la if c not in shared) + "".join(c for c in lb if c not in shared)
    return einsum(f"{''.join(la)},{''.join(lb)}->{out}", a, b, name=name)
