"""Random numbers as in TensorFlow: global and op seeds, stateful ops, stateless ops, ``rt.random.Generator``.

Seeds (TensorFlow's rules, ``tf.random.set_seed``)
---------------------------------------------------
A stateful op (``uniform``, ``normal``, ``truncated_normal``, ``categorical``, ``shuffle``) gets a pair of seeds
when it is created:

- global seed set (``rt.random.set_seed(g)``), op seed ``s`` given: ``(g, s)``;
- global seed set, no op seed: ``(g, k)`` with ``k`` the count of random ops created since ``set_seed`` (in
  eager code) or in the function being traced (counted over the function's graph and the graphs nested in
  it), so running a program again gives the same numbers, and two functions drawing in the same order draw
  the same numbers (as in TensorFlow, where a function's op seeds come from its graph);
- no global seed, op seed ``s``: ``(87654321, s)`` (TensorFlow's ``DEFAULT_GRAPH_SEED``);
- neither: no seeds: the op draws its key from the operating system the first time it runs (in built
  native code too: a built module does not repeat the numbers of the process that built it).

Like a TensorFlow kernel, a stateful op keeps a count of its runs: each run draws new numbers
(``uniform([2], seed=1)`` twice gives two different pairs, the same two after ``set_seed`` again). Eager
ops with the same seeds, type and dtype share that count, as TensorFlow's cached eager kernels do;
``set_seed`` starts every count again. Stateless ops (``stateless_uniform(shape, seed=[a, b])``) are pure
functions of their seed.

The stream (stable: changing it is a breaking change)
-----------------------------------------------------
Numbers come from Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), a
counter-based generator: a 64-bit key and a 128-bit counter give four 32-bit words, nothing is carried from
one draw to the next, so every element is computed on its own: numpy computes whole arrays, built native
code (``runtime/kernels/rt_random.h``) element by element on any number of threads, and they agree (bit for
bit for uniform numbers; normal ones go through ``log``/``cos`` in double, rounded to the dtype, which two
math libraries may round a last bit apart).

- Key: ``mix(a, b) = splitmix64(splitmix64(a) ^ b)`` of two seeds taken as 64-bit two's complement: a
  stateful op's (global, op) seeds, a stateless op's ``seed=[a, b]``, a Generator's state words 0 and 1.
- Counter: words 0-1 the block index; word 2 the low 32 bits of the *call*; word 3 the call's next 24 bits
  and, in its top 8 bits, the *attempt* (a truncated normal's redraws). The call is the op's run count
  (stateful ops), 0 (stateless ops) or the Generator's state word 2 (which each draw advances by 1).
- Element ``e`` of a result (row-major) reads:

  - uniform float32 / float16: word ``e % 4`` of block ``e // 4``; ``float32(w >> 9 | 0x3f800000) - 1``
    (float16: ``w & 0x3ff | 0x3c00``), as TensorFlow does; then ``u * (maxval - minval) + minval`` in the dtype;
  - uniform float64: words ``2 (e % 2)``, ``2 (e % 2) + 1`` of block ``e // 2`` as ``(hi << 32 | lo)``; its top
    52 bits as the mantissa of a double in [1, 2), minus 1;
  - uniform integers: the same 64 bits ``u``: ``minval + u % (maxval - minval)`` (modulo 2**64);
  - normal float32 / float16: words ``2 (e % 2)``, ``+1`` of block ``e // 2``: Box-Muller in double,
    ``sqrt(-2 log((w0 + 0.5) / 2**32)) * cos(2 pi w1 / 2**32)``, rounded to the dtype;
  - normal float64: the four words of block ``e``, two 52-bit fractions ``u1 = (m0 + 0.5) / 2**52`` and
    ``u2 = m1 / 2**52`` in the same formula;
  - truncated normal: block ``e`` at attempt 0, 1, ...: its candidates (two for float32 and float16, words 0-1
    then 2-3, one for float64) in order, the first with ``|z| <= 2``;
  - categorical: sample ``s`` of row ``r`` (``e = r * num_samples + s``) draws ``u`` as a uniform float64 and
    takes the first class whose running sum of ``exp(logit - max)`` (in double, in class order) exceeds
    ``u`` times the row's total;
  - shuffle: row ``i`` gets the 64-bit word ``u`` of element ``i`` (as for integers); rows are ordered by it
    (ties by position).

Example:
    >>> import runtime as rt
    >>> a = rt.random.stateless_uniform([3], seed=[1, 2])
    >>> bool(rt.reduce_all(a == rt.random.stateless_uniform([3], seed=[1, 2])))
    True
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from runtime import context, dtypes, errors
from runtime.ops import math_ops
from runtime.ops.array_ops import _dims_from, _shape_arg
from runtime.ops.registry import OpDef, apply, convert, not_differentiable, register
from runtime.tensor import Tensor

DEFAULT_GRAPH_SEED = 87654321     # the global seed of an op seed given alone (TensorFlow's constant)
TRUNCATE_AT = 2.0                 # truncated normals lie within this many standard deviations
MAX_ATTEMPTS = 256                # a truncated normal's redraws (8 bits of the counter); 0.0 after them all

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------
# The generator: Philox4x32-10, keys and words.

def splitmix64(x: int) -> int:
    """One step of SplitMix64 (Steele, Lea and Flood 2014): a 64-bit integer scrambled."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def mix(a: int, b: int) -> int:
    """The Philox key of two seeds (any Python ints, taken modulo 2**64)."""
    return splitmix64(splitmix64(int(a) & _MASK64) ^ (int(b) & _MASK64))


_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_U32 = np.uint64(_MASK32)
_S32 = np.uint64(32)


def philox(key: int, c0, c1, c2, c3) -> tuple:
    """Philox4x32-10 of counter words ``c0..c3`` (uint64 arrays or scalars below 2**32) under a 64-bit key:
    four uint64 arrays of 32-bit words."""
    k0, k1 = key & _MASK32, (key >> 32) & _MASK32
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in (c0, c1, c2, c3))
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ np.uint64(k0), p1 & _U32, (p0 >> _S32) ^ c3 ^ np.uint64(k1), p0 & _U32
        k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


def blocks(key: int, call: int, count: int, attempt=0, first: int = 0) -> np.ndarray:
    """Blocks ``first`` .. ``first + count - 1`` of one draw: uint64 array [count, 4] of 32-bit words."""
    index = np.arange(first, first + count, dtype=np.uint64)
    high = np.uint64((call >> 32) & 0xFFFFFF) | (np.asarray(attempt, np.uint64) << np.uint64(24))
    words = philox(key, index & _U32, index >> _S32, np.uint64(call & _MASK32), high)
    return np.stack(words, axis=-1)


def _words(key: int, call: int, n: int, per_element: int) -> np.ndarray:
    """``per_element`` (1, 2 or 4) words for each of ``n`` elements: uint64 array [n, per_element]."""
    per_block = 4 // per_element
    count = -(-n // per_block)
    return blocks(key, call, count).reshape(count * per_block, per_element)[:n]


def _u64(words: np.ndarray) -> np.ndarray:
    return (words[:, 0] << _S32) | words[:, 1]


def _unit_double(bits64: np.ndarray) -> np.ndarray:
    """Top 52 bits as a double in [0, 1)."""
    return ((bits64 >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0


_TWO_PI = 6.283185307179586
_2_32 = 2.0 ** -32
_2_52 = 2.0 ** -52


def _box_muller(u1, u2) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(_TWO_PI * u2)


def _normal_candidates(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Standard normals from blocks [n, 4]: [n, 2] for float32/float16 (words 0-1, 2-3), [n, 1] for float64."""
    if dtype == np.float64:
        m0 = _u64(words[:, 0:2]) >> np.uint64(12)
        m1 = _u64(words[:, 2:4]) >> np.uint64(12)
        return _box_muller((m0.astype(np.float64) + 0.5) * _2_52, m1.astype(np.float64) * _2_52)[:, None]
    first = _box_muller((words[:, 0].astype(np.float64) + 0.5) * _2_32, words[:, 1].astype(np.float64) * _2_32)
    second = _box_muller((words[:, 2].astype(np.float64) + 0.5) * _2_32, words[:, 3].astype(np.float64) * _2_32)
    return np.stack([first, second], axis=1)


# -- distributions (the stream of the module docstring) ------------------------------------

def uniform_array(key: int, call: int, shape: tuple, dtype: np.dtype, lo, hi) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        span = (int(hi) - int(lo)) & _MASK64
        u = _u64(_words(key, call, n, 2))
        values = (np.uint64(int(lo) & _MASK64) + u % np.uint64(span)).view(np.int64)
        return values.astype(dtype).reshape(shape)
    if dtype == np.float64:
        u = _unit_double(_u64(_words(key, call, n, 2)))
    elif dtype == np.float16:
        w = _words(key, call, n, 1)[:, 0]
        u = ((w & np.uint64(0x3FF)) | np.uint64(0x3C00)).astype(np.uint16).view(np.float16) - np.float16(1)
    else:
        w = _words(key, call, n, 1)[:, 0]
        u = ((w >> np.uint64(9)) | np.uint64(0x3F800000)).astype(np.uint32).view(np.float32) - np.float32(1)
    lo, hi = dtype.type(lo), dtype.type(hi)
    with np.errstate(all="ignore"):
        return (u * (hi - lo) + lo).astype(dtype).reshape(shape)


def normal_array(key: int, call: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        z = _normal_candidates(blocks(key, call, n), dtype)[:, 0]
    else:
        pairs = _words(key, call, n, 2)
        z = _box_muller((pairs[:, 0].astype(np.float64) + 0.5) * _2_32, pairs[:, 1].astype(np.float64) * _2_32)
    return z.astype(dtype).reshape(shape)


def truncated_normal_array(key: int, call: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(dtype)
    out = np.zeros(n, np.float64)
    pending = np.arange(n, dtype=np.int64)
    for attempt in range(MAX_ATTEMPTS):
        if not pending.size:
            break
        index = pending.astype(np.uint64)
        high = np.uint64(((call >> 32) & 0xFFFFFF) | (attempt << 24))
        words = np.stack(philox(key, index & _U32, index >> _S32, np.uint64(call & _MASK32), high), axis=-1)
        candidates = _normal_candidates(words, dtype)
        ok = np.abs(candidates) <= TRUNCATE_AT
        hit = ok.any(axis=1)
        first = np.argmax(ok, axis=1)
        out[pending[hit]] = candidates[hit, first[hit]]
        pending = pending[~hit]
    return out.astype(dtype).reshape(shape)


def categorical_array(key: int, call: int, logits: np.ndarray, samples: int, dtype: np.dtype) -> np.ndarray:
    rows, classes = logits.shape
    out = np.zeros((rows, samples), dtype)
    if not rows or not samples:
        return out
    u = _unit_double(_u64(_words(key, call, rows * samples, 2))).reshape(rows, samples)
    x = logits.astype(np.float64)
    with np.errstate(all="ignore"):
        running = np.cumsum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1)
    for r in range(rows):
        target = u[r] * running[r, -1]
        out[r] = np.minimum(np.searchsorted(running[r], target, side="right"), classes - 1)
    return out


def permutation(key: int, call: int, n: int) -> np.ndarray:
    """The order of ``n`` rows a shuffle puts them in."""
    return np.argsort(_u64(_words(key, call, n, 2)), kind="stable")


# ---------------------------------------------------------------------------
# Seeds.

_global_seed: int | None = None
_eager_count = 0
_graph_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class KernelState:
    """What a stateful random op keeps between runs, as a TensorFlow kernel does: its run count and, without
    seeds, the key it drew at its first run. An op attribute hashed by identity (two random ops never
    merge); a graph that is pickled (a built module's) starts its ops afresh."""

    def __init__(self):
        self.calls = 0
        self.key: int | None = None
        self._lock = threading.Lock()

    def next_call(self, seed, seed2) -> tuple[int, int]:
        """(key, call) of the next run."""
        with self._lock:
            call = self.calls
            self.calls += 1
            if seed is not None:
                return mix(seed, seed2), call
            if self.key is None:
                self.key = int.from_bytes(os.urandom(8), "little")
            return self.key, call

    def __reduce__(self):
        return KernelState, ()

    def __repr__(self):
        return "<random state>"


_eager_states: dict[tuple, KernelState] = {}


def set_seed(seed) -> None:
    """Set the global random seed (``tf.random.set_seed``): later ops get seeds by TensorFlow's rules (see the
    module docstring), and every eager op's count of runs starts again.

    Example:
        >>> import runtime as rt
        >>> rt.random.set_seed(5)
        >>> a = rt.random.uniform([2])
        >>> rt.random.set_seed(5)
        >>> bool(rt.reduce_all(a == rt.random.uniform([2])))
        True
        >>> rt.random.set_seed(None)
    """
    global _global_seed, _eager_count
    with _lock:
        _global_seed = None if seed is None else int(seed)
        _eager_count = 0
        _eager_states.clear()


def get_global_seed() -> int | None:
    return _global_seed


def _root(graph):
    while graph.outer_graph is not None:
        graph = graph.outer_graph
    return graph


def get_seed(op_seed) -> tuple:
    """The (global, op) seed pair of a new stateful op (``tf.compat.v1.get_seed``): (None, None) without seeds."""
    global _eager_count
    if op_seed is not None:
        op_seed = int(op_seed)
    with _lock:
        seed = _global_seed
        if seed is None:
            return (DEFAULT_GRAPH_SEED, op_seed) if op_seed is not None else (None, None)
        if op_seed is None:
            graph = context.current_graph()
            if graph is None:
                op_seed = _eager_count
                _eager_count += 1
            else:
                root = _root(graph)
                op_seed = _graph_counts.get(root, 0)
                _graph_counts[root] = op_seed + 1
        return seed, op_seed


def _seed_attrs(op_type: str, dtype, op_seed) -> dict:
    """``seed``, ``seed2`` and the kernel ``state`` of a new stateful op."""
    seed, seed2 = get_seed(op_seed)
    if context.current_graph() is None and seed is not None:
        key = (op_type, getattr(dtype, "name", dtype), seed, seed2)
        with _lock:
            state = _eager_states.setdefault(key, KernelState())
    else:
        state = KernelState()
    return {"seed": seed, "seed2": seed2, "state": state}


# ---------------------------------------------------------------------------
# Stateful ops.

def _uniform_infer(specs, attrs):
    dtype = attrs["dtype"]
    for label, spec in zip(("minval", "maxval"), specs[1:]):
        if spec.dtype is not dtype or spec.shape.rank not in (0, None):
            raise TypeError(f"RandomUniform: {label} must be a scalar {dtype}, got {spec.dtype} of shape {spec.shape}")
    return [(dtype, _dims_from(specs[0], "RandomUniform"))]


def _check_bounds(op_type: str, dtype, lo, hi) -> None:
    if dtype.is_integer and not lo < hi:
        raise errors.InvalidArgumentError(f"{op_type}: need minval < maxval, got {lo} and {hi}")


def _shape_of(op_type: str, value) -> tuple:
    shape = tuple(int(d) for d in np.asarray(value).reshape(-1))
    if any(d < 0 for d in shape):
        raise errors.InvalidArgumentError(f"{op_type}: dimensions must be non-negative, got {list(shape)}")
    return shape


def _uniform_kernel(inputs, attrs):
    dtype = attrs["dtype"]
    shape = _shape_of("RandomUniform", inputs[0])
    lo, hi = inputs[1].item(), inputs[2].item()
    _check_bounds("RandomUniform", dtype, lo, hi)
    key, call = attrs["state"].next_call(attrs["seed"], attrs["seed2"])
    return (uniform_array(key, call, shape, dtype.np, lo, hi),)


def _sample_infer(op_type):
    def infer(specs, attrs):
        return [(attrs["dtype"], _dims_from(specs[0], op_type))]
    return infer


def _sample_kernel(op_type, fn):
    def run(inputs, attrs):
        shape = _shape_of(op_type, inputs[0])
        key, call = attrs["state"].next_call(attrs["seed"], attrs["seed2"])
        return (fn(key, call, shape, attrs["dtype"].np),)
    return run


def _multinomial_infer(specs, attrs):
    logits, num = specs
    math_ops._check_dtype("Multinomial", logits.dtype, math_ops.FLOATS)
    if logits.shape.rank not in (2, None):
        raise ValueError(f"Multinomial: logits must be 2-D [batch, classes], got shape {logits.shape}")
    if not num.dtype.is_integer or num.shape.rank not in (0, None):
        raise TypeError(f"Multinomial: num_samples must be an integer scalar, got {num.dtype}{num.shape}")
    batch = logits.shape[0] if logits.shape.rank == 2 else None
    return [(attrs["output_dtype"], (batch, None if num.const is None else int(num.const)))]


def _multinomial_kernel(inputs, attrs):
    logits, num = inputs[0], int(inputs[1])
    if num < 0:
        raise errors.InvalidArgumentError(f"Multinomial: num_samples must be non-negative, got {num}")
    if logits.shape[1] == 0 and logits.shape[0] and num:
        raise errors.InvalidArgumentError("Multinomial: logits must have at least one class")
    key, call = attrs["state"].next_call(attrs["seed"], attrs["seed2"])
    return (categorical_array(key, call, logits, num, attrs["output_dtype"].np),)


def _shuffle_infer(specs, attrs):
    return [(specs[0].dtype, specs[0].shape.dims)]


def _shuffle_kernel(inputs, attrs):
    value = inputs[0]
    key, call = attrs["state"].next_call(attrs["seed"], attrs["seed2"])
    if value.ndim == 0:
        return (value.copy(),)
    return (np.ascontiguousarray(value[permutation(key, call, value.shape[0])]),)


register(OpDef("RandomUniform", "random_uniform", _uniform_infer, _uniform_kernel, 3, stateful=True,
               dynamic_infer=True, foldable=False))
register(OpDef("RandomStandardNormal", "random_normal", _sample_infer("RandomStandardNormal"),
               _sample_kernel("RandomStandardNormal", normal_array), 1, stateful=True, dynamic_infer=True,
               foldable=False))
register(OpDef("TruncatedNormal", "truncated_normal", _sample_infer("TruncatedNormal"),
               _sample_kernel("TruncatedNormal", truncated_normal_array), 1, stateful=True, dynamic_infer=True,
               foldable=False))
register(OpDef("Multinomial", "categorical", _multinomial_infer, _multinomial_kernel, 2, stateful=True,
               dynamic_infer=True, foldable=False))
register(OpDef("RandomShuffle", "random_shuffle", _shuffle_infer, _shuffle_kernel, 1, stateful=True,
               foldable=False))
not_differentiable("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "Multinomial", "RandomShuffle")

# The ops whose results differ from run to run (a test harness compares only their dtypes and shapes).
STATEFUL_RANDOM_OPS = ("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "Multinomial", "RandomShuffle")


def _float_dtype(api: str, dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{api} needs a floating dtype, got {dtype}")
    return dtype


def _bounds(api: str, minval, maxval, dtype) -> list:
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"{api}: integer dtypes need maxval")
        maxval = 1.0
    if not (dtype.is_integer or dtype.is_floating):
        raise TypeError(f"{api} does not support dtype {dtype}")
    return [convert(minval, dtype, "minval"), convert(maxval, dtype, "maxval")]


def _is_number(value, number: float) -> bool:
    return not isinstance(value, Tensor) and np.ndim(value) == 0 and float(value) == number


def _scaled(z, mean, stddev, dtype, name):
    """``z * stddev + mean`` (as TensorFlow composes them); nothing for Python 1 and 0."""
    if not _is_number(stddev, 1.0):
        z = math_ops.multiply(z, convert(stddev, dtype, "stddev"))
    if not _is_number(mean, 0.0):
        z = math_ops.add(z, convert(mean, dtype, "mean"), name=name)
    return z


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform numbers in ``[minval, maxval)`` (``tf.random.uniform``); integer dtypes need ``maxval``.

    ``minval``/``maxval`` are Python numbers or scalar tensors of ``dtype``; ``seed`` is the op seed (see the
    module docstring).
    """
    dtype = dtypes.as_dtype(dtype)
    bounds = _bounds("random.uniform", minval, maxval, dtype)
    return apply("RandomUniform", [_shape_arg(shape)] + bounds, {"dtype": dtype, **_seed_attrs("RandomUniform",
                                                                                                dtype, seed)},
                 name=name)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal numbers (``tf.random.normal``): standard normals times ``stddev`` plus ``mean``."""
    dtype = _float_dtype("random.normal", dtype)
    z = apply("RandomStandardNormal", [_shape_arg(shape)],
              {"dtype": dtype, **_seed_attrs("RandomStandardNormal", dtype, seed)})
    return _scaled(z, mean, stddev, dtype, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal numbers within two standard deviations of ``mean``, others drawn again
    (``tf.random.truncated_normal``)."""
    dtype = _float_dtype("random.truncated_normal", dtype)
    z = apply("TruncatedNormal", [_shape_arg(shape)], {"dtype": dtype, **_seed_attrs("TruncatedNormal", dtype, seed)})
    return _scaled(z, mean, stddev, dtype, name)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``num_samples`` class indices per row of ``logits`` [batch, classes], drawn with probabilities
    ``softmax(logits)`` (``tf.random.categorical``); int64 unless ``dtype`` says int32."""
    dtype = dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)
    if dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"random.categorical: dtype must be int32 or int64, got {dtype}")
    logits = convert(logits)
    attrs = {"output_dtype": dtype, **_seed_attrs("Multinomial", logits.dtype, seed)}
    return apply("Multinomial", [logits, convert(num_samples, dtypes.int32, "num_samples")], attrs, name=name)


def shuffle(value, seed=None, name=None):
    """``value`` with its first dimension in a random order (``tf.random.shuffle``)."""
    value = convert(value)
    return apply("RandomShuffle", [value], _seed_attrs("RandomShuffle", value.dtype, seed), name=name)


# ---------------------------------------------------------------------------
# Stateless ops: (shape, seed [2], counter) -> numbers; the counter is 0 for the rt.random.stateless_* API and a
# Generator's state word 2 for its draws.

def _stateless_specs(op_type, specs):
    seed, counter = specs[1], specs[2]
    if not seed.dtype.is_integer or seed.shape.rank not in (1, None) or seed.shape.rank == 1 and \
            seed.shape[0] not in (2, None):
        raise ValueError(f"{op_type}: seed must be an integer tensor of shape [2], got {seed.dtype}{seed.shape}")
    if counter.dtype is not dtypes.int64 or counter.shape.rank not in (0, None):
        raise TypeError(f"{op_type}: the counter must be an int64 scalar, got {counter.dtype}{counter.shape}")


def _stateless_uniform_infer(specs, attrs):
    _stateless_specs("StatelessRandomUniformV2", specs)
    dtype = attrs["dtype"]
    for label, spec in zip(("minval", "maxval"), specs[3:]):
        if spec.dtype is not dtype or spec.shape.rank not in (0, None):
            raise TypeError(f"StatelessRandomUniformV2: {label} must be a scalar {dtype}, got {spec.dtype} of "
                            f"shape {spec.shape}")
    return [(dtype, _dims_from(specs[0], "StatelessRandomUniformV2"))]


def _stateless_key(op_type: str, seed: np.ndarray, counter) -> tuple[int, int]:
    seed = np.asarray(seed).reshape(-1)
    if seed.size != 2:
        raise errors.InvalidArgumentError(f"{op_type}: seed must have shape [2], got {list(np.shape(seed))}")
    return mix(int(seed[0]), int(seed[1])), int(counter) & _MASK64


def _stateless_uniform_kernel(inputs, attrs):
    dtype = attrs["dtype"]
    lo, hi = inputs[3].item(), inputs[4].item()
    _check_bounds("StatelessRandomUniformV2", dtype, lo, hi)
    key, call = _stateless_key("StatelessRandomUniformV2", inputs[1], inputs[2])
    return (uniform_array(key, call, _shape_of("StatelessRandomUniformV2", inputs[0]), dtype.np, lo, hi),)


def _stateless_infer(op_type):
    def infer(specs, attrs):
        _stateless_specs(op_type, specs)
        return [(attrs["dtype"], _dims_from(specs[0], op_type))]
    return infer


def _stateless_kernel(op_type, fn):
    def run(inputs, attrs):
        key, call = _stateless_key(op_type, inputs[1], inputs[2])
        return (fn(key, call, _shape_of(op_type, inputs[0]), attrs["dtype"].np),)
    return run


register(OpDef("StatelessRandomUniformV2", "stateless_random_uniform", _stateless_uniform_infer,
               _stateless_uniform_kernel, 5, dynamic_infer=True, foldable=False))
register(OpDef("StatelessRandomNormalV2", "stateless_random_normal", _stateless_infer("StatelessRandomNormalV2"),
               _stateless_kernel("StatelessRandomNormalV2", normal_array), 3, dynamic_infer=True, foldable=False))
register(OpDef("StatelessTruncatedNormalV2", "stateless_truncated_normal",
               _stateless_infer("StatelessTruncatedNormalV2"),
               _stateless_kernel("StatelessTruncatedNormalV2", truncated_normal_array), 3, dynamic_infer=True,
               foldable=False))
not_differentiable("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2")


def _seed_tensor(seed):
    if isinstance(seed, Tensor):
        return seed
    value = np.asarray(seed)
    if value.shape != (2,) or value.dtype.kind not in "iu":
        raise ValueError(f"a stateless random op's seed must be a pair of integers [a, b], got {seed!r}")
    return convert(value.astype(np.int64))


_ZERO_COUNTER = np.zeros((), np.int64)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Uniform numbers that depend only on ``seed`` (a pair of integers) and ``shape``
    (``tf.random.stateless_uniform``)."""
    dtype = dtypes.as_dtype(dtype)
    bounds = _bounds("random.stateless_uniform", minval, maxval, dtype)
    return apply("StatelessRandomUniformV2", [_shape_arg(shape), _seed_tensor(seed), convert(_ZERO_COUNTER)] + bounds,
                 {"dtype": dtype}, name=name)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None, alg="auto_select"):
    """Normal numbers that depend only on ``seed`` and ``shape`` (``tf.random.stateless_normal``)."""
    dtype = _float_dtype("random.stateless_normal", dtype)
    z = apply("StatelessRandomNormalV2", [_shape_arg(shape), _seed_tensor(seed), convert(_ZERO_COUNTER)],
              {"dtype": dtype})
    return _scaled(z, mean, stddev, dtype, name)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                               alg="auto_select"):
    """Truncated normal numbers that depend only on ``seed`` and ``shape``
    (``tf.random.stateless_truncated_normal``)."""
    dtype = _float_dtype("random.stateless_truncated_normal", dtype)
    z = apply("StatelessTruncatedNormalV2", [_shape_arg(shape), _seed_tensor(seed), convert(_ZERO_COUNTER)],
              {"dtype": dtype})
    return _scaled(z, mean, stddev, dtype, name)


# ---------------------------------------------------------------------------
# rt.random.Generator: a state variable [seed a, seed b, counter]; each draw is a stateless op of the state
# followed by an increment of the counter, so it runs eagerly, in graphs and in native code like any other
# variable update. The variable class is registered by the public API (a layer above this one).

_variable_class = None


def register_variable_class(cls) -> None:
    """Called by ``runtime/__init__.py``: the ``rt.Variable`` class Generators keep their state in."""
    global _variable_class
    _variable_class = cls


class Generator:
    """A random number generator with its state in a variable (``tf.random.Generator``, Philox only).

    Its state is three int64 words: two seeds and a counter; a draw uses them as a stateless op's
    ``seed`` and counter, then adds 1 to the counter. ``Generator.from_seed(s)`` starts at ``[s, 0, 0]``,
    so its first draw equals ``stateless_*(..., seed=[s, 0])``.

    Example:
        >>> import runtime as rt
        >>> g = rt.random.Generator.from_seed(7)
        >>> x = g.normal([2, 3])
        >>> x.shape
        TensorShape([2, 3])
    """

    def __init__(self, copy_from=None, state=None, alg=None):
        if _variable_class is None:
            raise RuntimeError("rt.random.Generator needs the rt.Variable class (import runtime first)")
        if copy_from is not None:
            state = copy_from.state.numpy()
        if state is None:
            raise ValueError("rt.random.Generator: give copy_from or state (or use Generator.from_seed)")
        if alg not in (None, "philox", 1):
            raise ValueError(f"rt.random.Generator supports the Philox algorithm only, got alg={alg!r}")
        words = np.zeros(3, np.int64)
        given = np.asarray(state.numpy() if hasattr(state, "numpy") else state, np.int64).reshape(-1)
        words[:min(3, given.size)] = given[:3]
        self._state = _variable_class(words, trainable=False, name="rng_state", dtype=dtypes.int64)

    @classmethod
    def from_seed(cls, seed, alg=None) -> Generator:
        return cls(state=[int(seed), 0, 0], alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None) -> Generator:
        fresh = np.frombuffer(os.urandom(16), np.int64)
        return cls(state=[int(fresh[0]), int(fresh[1]), 0], alg=alg)

    @classmethod
    def from_state(cls, state, alg=None) -> Generator:
        return cls(state=state, alg=alg)

    @property
    def state(self):
        """The state variable (int64 [3]: seeds a and b, the counter)."""
        return self._state

    @property
    def algorithm(self) -> int:
        return 1        # TF's RNG_ALG_PHILOX

    def reset(self, state) -> None:
        self._state.assign(np.asarray(state, np.int64))

    def reset_from_seed(self, seed) -> None:
        self._state.assign(np.array([int(seed), 0, 0], np.int64))

    def _draw(self, op_type: str, shape, dtype, extra=(), name=None):
        state = self._state.read_value()
        seed = state[0:2]
        counter = state[2]
        out = apply(op_type, [_shape_arg(shape), seed, counter, *extra], {"dtype": dtype}, name=name)
        self._state.assign_add(np.array([0, 0, 1], np.int64), read_value=False)
        return out

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        dtype = dtypes.as_dtype(dtype)
        bounds = _bounds("Generator.uniform", minval, maxval, dtype)
        return self._draw("StatelessRandomUniformV2", shape, dtype, bounds, name)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        dtype = _float_dtype("Generator.normal", dtype)
        return _scaled(self._draw("StatelessRandomNormalV2", shape, dtype), mean, stddev, dtype, name)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        dtype = _float_dtype("Generator.truncated_normal", dtype)
        return _scaled(self._draw("StatelessTruncatedNormalV2", shape, dtype), mean, stddev, dtype, name)

    def make_seeds(self, count=1):
        """``count`` new seed pairs for stateless ops: int64 [2, count] (``Generator.make_seeds``)."""
        return self.uniform([2, int(count)], minval=np.iinfo(np.int64).min, maxval=np.iinfo(np.int64).max,
                            dtype=dtypes.int64)

    def split(self, count=1) -> list:
        """``count`` new generators, seeded from this one (``Generator.split``)."""
        seeds = self.make_seeds(count).numpy()
        return [Generator(state=[int(seeds[0, i]), int(seeds[1, i]), 0]) for i in range(int(count))]


_global_generator: Generator | None = None


def get_global_generator() -> Generator:
    """The process's generator (``tf.random.get_global_generator``), created from a non-deterministic state."""
    global _global_generator
    if _global_generator is None:
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator: Generator) -> None:
    global _global_generator
    _global_generator = generator
