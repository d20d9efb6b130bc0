"""Typed random tensor programs for differential fuzzing: eager == traced (generic executor) == reference
executor == built native code. ``python tests/fuzz_programs.py --help`` runs them in bulk.

``program(seed)`` is the body of ``prog(x, y, m, v, k, c, w)`` with
``x, y: float32[None]`` (n), ``m: float32[None, 3]``, ``v: int32[None]``, ``k: int32[]``, ``c: float32[None]``
fed with 1 or n elements (broadcast against n at run time) and ``w: float32[3]``. Statements assign typed
variables from a catalogue of expressions (elementwise math, broadcasting, reductions over axis subsets,
slices with negative steps, gathers with run-time indices, concat/stack/unstack, where, cumsum, matmul
with transposes, casts to bool/int8/uint8/float16/int64/float64, negative divisors, pad, linspace, one_hot,
unsorted_segment_sum, rotations by a run-time index), tensor ``if``/``while``/``for`` (over ranges, tensors
and datasets) with ``break``/``continue``/``return``, Python loops that unroll, a vector whose length
varies in loops (declared with ``shape_invariants``), a TensorArray and module-level variables updated
with ``assign``/``assign_add``. ``inputs(seed)`` draws n from 0 to 17 (empty, short, past vector widths
and GEMM tiles) and feeds contiguous or strided arrays.

When the eager run raises, the graph modes are compared with each other: tracing drops ops nothing uses, so
an error in dead code is raised eagerly only (as in TensorFlow).

Two worlds of values keep every mode's control flow identical: *exact* values (integers, and floats that
hold integers below 2**24 in magnitude, clipped after every assignment) decide every condition and index;
*approximate* floats (transcendental functions, true division, means, softmax) only flow to outputs and
compare with a tolerance. Every variable is an output.

Kinds (``KINDS``; ``--kinds all`` runs them round robin, one kind per generated module): ``general`` (the
above); ``variables`` (mostly Variable updates inside tensor control flow); ``pyfunc`` (py_function and
numpy_function, ``Tout`` a dtype or a list, also in loops); ``size1`` (inputs of 0 to 2 rows, reductions
and softmaxes over axes of size 1, keepdims; static ones with the ``size1static`` feature); ``gather1``
(gathers along axis 1 with run-time indices, also bounding loops); ``gradients`` (a tape inside the
function differentiates a loss of smooth ops and tensor control flow with respect to float64 inputs and a
Variable; compared across modes and with central differences); ``datasets`` (loops over pipelines with
map/filter/batch/shuffle/take/skip/repeat/zip, iterators advanced by ``next(it, default)`` in tensor loops
and ifs, ``for`` over an iterator left by ``break`` and continued); ``retrace`` (functions without an
input_signature, built for one signature, called with shapes, ranks and dtypes nobody built).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import runtime as rt
from runtime import executor

HEADER = '''\
import numpy as np
import runtime as rt

F = rt.TensorSpec([None], rt.float32)
I = rt.TensorSpec([None], rt.int32)
M = rt.TensorSpec([None, 3], rt.float32)
K = rt.TensorSpec([], rt.int32)
W3 = rt.TensorSpec([3], rt.float32)
W = rt.constant([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0], [2.0, 1.0, 0.0]])
ROW = rt.constant([1.0, -2.0, 3.0])
VS = rt.Variable(0.0)
VI = rt.Variable(0)
VV = rt.Variable(rt.zeros([3]))
GX = rt.TensorSpec([None], rt.float64)
GM = rt.TensorSpec([None, 3], rt.float64)
GW = rt.Variable(rt.constant([0.5, -1.0, 0.25], rt.float64))
G3 = rt.constant([[0.5, 0.0, -0.5], [0.25, 1.0, 0.0], [-1.0, 0.5, 0.75]], rt.float64)


def pyf(a):
    return a * 2.0 - 1.0


def npf(a):
    return np.floor(a * 0.5)
'''

SIGNATURE = "x, y, m, v, k, c, w"
INPUT_SIGNATURE = "[F, F, M, I, K, F, W3]"

PROLOGUE = [
    "fx = x * 2.0 - y",
    "fm = m + rt.expand_dims(x, 1)",
    "fs = rt.reduce_sum(y)",
    "ax = rt.tanh(x * 0.3) + y * 0.25",
    "am = rt.sigmoid(m * 0.5)",
    "as_ = rt.reduce_mean(ax)",
    "iv = v + 1",
    "is_ = rt.reduce_max(v) - k",
    "dx = rt.cast(x, rt.float64) * 3.0",
    "bx = v > 0",
    "g = x[:1]",
    "ta = rt.TensorArray(rt.float32, size=0, dynamic_size=True, element_shape=[])",
    "ta = ta.write(0, fs)",
]

RESULT = ("fx, fm, fs, ax, am, as_, iv, is_, dx, bx, g, ta.stack(), VS.read_value(), VI.read_value(), "
          "VV.read_value()")
# which outputs compare exactly (the others with a tolerance)
EXACT = (True, True, True, False, False, False, True, True, True, True, True, True, True, True, True)

LIMIT = {"fx": "300.0", "fm": "300.0", "fs": "300.0", "ax": "100.0", "am": "100.0", "as_": "100.0",
         "iv": "1000", "is_": "1000", "dx": "300.0", "g": "300.0"}
EXACT_FLOATS = {"N": "300.0", "M": "300.0", "S": "300.0", "D": "300.0"}

# Expressions by the type of their value. {N}/{M}/{S}/{I}/{J}/{B}/{A}/{AM}/{AS}/{D}/{C} are replaced by
# expressions of the types: exact float32 vector [n], matrix [n, 3], scalar; int32 vector, int32 scalar;
# bool vector; approximate float32 vector, matrix, scalar; float64 vector; the broadcast input c.
# {J:1} is one expression however often the template uses it.
CATALOGUE = {
    "N": ["rt.cast(rt.cast({N}, rt.bool), rt.float32) * {N}", "rt.floormod({N}, -3.0)", "rt.floordiv({N}, -4.0)",
          "rt.cast(rt.cast(rt.cast({N}, rt.int32), rt.int8), rt.float32)", "rt.pad({N}, [[2, 1]])[1:-2]",
          "rt.concat([{N}[rt.abs({J:1}) % rt.size({N}):], {N}[:rt.abs({J:1}) % rt.size({N})]], 0)",
          "rt.concat([{N}[rt.abs({J:1}) % rt.size({N})::-1], {N}[:rt.abs({J:1}) % rt.size({N}):-1]], 0)",
          "rt.linspace(0.0, rt.cast(rt.size({N}), rt.float32) - 1.0, rt.size({N})) + {N}",
          "rt.cast(rt.cast({N}, rt.float16), rt.float32)", "rt.cast(rt.cast({N} * 0.5, rt.int32), rt.float32)",
          "rt.floordiv({N} * 0.5, 1.0)", "rt.pow(rt.abs({N}) % 4.0, 2.0)", "rt.sign({N}) * rt.abs({N})",
          ("rt.matmul(rt.clip_by_value(rt.matmul({M}, {M}, transpose_b=True), -50.0, 50.0), "
           "rt.expand_dims({N}, 1))[:, 0]"),
          "{N} + {N}", "{N} - {N} * 2.0", "rt.maximum({N}, {N})", "rt.minimum({N}, -{N})", "rt.abs({N}) - 3.0",
          "{N} * {S}", "rt.floormod({N}, 7.0)", "rt.floordiv({N}, 3.0)", "rt.floordiv({N}, rt.abs({S}) + 1.0)",
          "rt.cast({I}, rt.float32) + {N}", "rt.gather({N}, rt.floormod({I} + {J}, rt.size({N})))",
          "rt.reduce_sum({M}, axis=1)", "rt.reduce_max({M}, axis=-1)", "rt.reduce_min({M}, 1, keepdims=True)[:, 0]",
          "rt.where({B}, {N}, {N})", "rt.cumsum({N})", "rt.cumsum({N}, exclusive=True, reverse=True)",
          "{N}[::-1] + 1.0", "rt.concat([{N}[1:], {N}[:1]], 0)", "rt.square(rt.sign({N})) * {N}",
          "rt.nn.relu({N} - {S})", "({N} + {N}) % 5.0 - {N} // 4.0", "-{N} + rt.cast({J}, rt.float32)",
          "{N} + {C}", "{N} * {C} - {C}", "rt.maximum({C}, {N})", "rt.matmul({M}, W)[:, 1]",
          "rt.reduce_sum(rt.matmul({M}, {M}, transpose_b=True), axis=0)", "rt.unstack({M}, axis=1)[2]",
          "rt.reduce_sum(rt.stack([{N}, {N}], axis=1), axis=1)", "rt.stack([{N}, {N}])[1]",
          "rt.squeeze(rt.expand_dims({N}, 1), axis=1)", "rt.reshape({M}, [-1])[1::3]",
          "rt.tile({N}, [2])[:rt.size({N})]", "rt.clip_by_value({N}, -2.0, {S})",
          "rt.gather({M}, [2, 0, 1], axis=1)[:, 0]",
          "rt.cast({D}, rt.float32)", "rt.where({N} > {S}, {N}, rt.zeros_like({N}))", "{N} * rt.cast({B}, rt.float32)",
          "rt.reduce_sum({M} * w, axis=1)", "rt.gather(w, rt.floormod({I}, 3)) + {N}",
          "rt.cast(rt.cast({N}, rt.int64) * 2, rt.float32)", "rt.ones_like({N}) * {S}",
          "rt.fill(rt.shape({N}), {S})"],
    "M": ["rt.one_hot(rt.floormod({I}, 4), 3) * {S}", "rt.reduce_sum({M}, axis=0, keepdims=True) + {M}",
          "{M} - rt.reduce_min({M}, axis=0)", "rt.cast(rt.cast({M}, rt.bool), rt.float32)",
          "{M} + rt.expand_dims({N}, 1)", "{M} * ROW", "rt.matmul({M}, W)", "{M} - {S}", "{M}[:, ::-1]",
          "rt.maximum({M}, 0.0) - 1.0", "{M} + {N}[:, rt.newaxis] * 0.0 + rt.cast(rt.expand_dims({I}, 1), rt.float32)",
          "rt.transpose(rt.transpose({M})) * 2.0", "rt.concat([{M}[:, 1:], {M}[:, :1]], 1)",
          "rt.stack([{N}, {N}, {N}], axis=1)", "rt.tile(rt.expand_dims({N}, 1), [1, 3])",
          "rt.reshape(rt.reshape({M}, [-1]), [-1, 3])", "rt.cumsum({M}, axis=1)",
          "rt.cumsum({M}, axis=0, reverse=True)",
          "rt.where({M} > 0.0, {M}, -{M})", "rt.gather({M}, rt.floormod({I}, rt.shape({M})[0]))",
          "rt.matmul(rt.transpose({M}), W, transpose_a=True)", "rt.matmul({M}, rt.transpose(W), transpose_b=True)",
          "{M} * w", "{M}[::-1] - w", "{M} + rt.expand_dims({C}, 1)"],
    "S": ["rt.reduce_sum(rt.unsorted_segment_sum({N}, rt.floormod({I}, 4), 3) * w)",
          "rt.reduce_sum(rt.matmul(rt.expand_dims({N}, 0), {M}))", "rt.reduce_sum(rt.reduce_max({M}, axis=0) * w)",
          "rt.reduce_sum({N})", "rt.reduce_max({N}) - {S}", "{S} + rt.reduce_min({M})",
          "rt.reduce_sum(rt.matmul(rt.transpose({M}), {M}))", "{S} * 2.0 - rt.cast({J}, rt.float32)",
          "rt.cast(rt.reduce_sum({I}), rt.float32)", "{N}[0] + {S}", "{S} - {N}[-1]",
          "rt.reduce_prod(rt.sign({N})) * {S}",
          "rt.reduce_sum(rt.gather({N}, [0, 0]))", "rt.reduce_max({M}, axis=[0, 1])", "rt.reduce_sum({M}, axis=[1, 0])",
          "{N}[rt.floormod({J}, rt.size({N}))]", "rt.reduce_min(rt.reduce_max({M}, axis=0))", "rt.reduce_sum({C})",
          "rt.cast({J}, rt.float32)", "VS.read_value()", "rt.reduce_sum(VV.read_value())", "w[1] * {S}"],
    "I": ["rt.range(rt.size({I}), 0, -1) + {I}", "rt.cast(rt.cast({I}, rt.uint8), rt.int32)",
          "rt.cast(rt.cast({I}, rt.int8) * rt.cast(100, rt.int8), rt.int32)", "rt.pow({I}, 2) % 1000",
          "rt.cast(rt.cast({I}, rt.int64) * rt.cast({J}, rt.int64) % 1000, rt.int32)", "rt.floormod({I}, -3)",
          "rt.floordiv({I}, -4)", "rt.where({B}, {I}, rt.zeros_like({I}))",
          "rt.cast(rt.cast({I}, rt.bool), rt.int32)",
          "{I} + {J}", "{I} * 2 - 1", "rt.floormod({I}, 4)", "rt.floordiv({I}, 3)", "rt.cast({N}, rt.int32)",
          "rt.gather({I}, rt.floormod({I}, rt.size({I})))", "rt.where({B}, {I}, -{I})", "rt.abs({I}) - {J}",
          "rt.cumsum({I}, reverse=True)", "rt.cast(rt.argmax({M}, axis=1), rt.int32)", "{I}[::-1]",
          "rt.floordiv({I}, rt.abs({J}) + 1)", "rt.floormod({I}, rt.abs({J}) + 2)", "rt.minimum({I}, {J})",
          "rt.cast(rt.cast({I}, rt.int64) * 3, rt.int32)", "rt.cast(rt.cast({I}, rt.int16), rt.int32)",
          "rt.cast(rt.argmin({N}, output_type=rt.int32) + {I}, rt.int32)",
          "rt.reduce_sum(rt.cast(rt.stack([{B}, {B}]), rt.int32), 0)"],
    "J": ["rt.reduce_prod(rt.clip_by_value({I}, -2, 2))", "rt.cast(rt.argmin({M}[:, 1]), rt.int32)",
          "rt.reduce_min(rt.cast(rt.one_hot({I}, 3), rt.int32))",
          "{J} + {J}", "{J} - 1", "rt.reduce_sum({I}) % 5", "rt.cast(rt.argmax({N}), rt.int32)", "rt.size({N}) + {J}",
          "rt.cast({S}, rt.int32) % 11", "{J} * 2 % 7", "rt.maximum({J}, k)", "k - {J}", "{I}[0] + {J}",
          "{J} // 2 - {J} % 3",
          "rt.reduce_max({I})", "rt.shape({M})[0]", "rt.reduce_sum(rt.cast({B}, rt.int32))", "VI.read_value()",
          "rt.cast(rt.reduce_any({B}), rt.int32)"],
    "B": ["rt.cast({N}, rt.bool)", "rt.cast({I} * 0, rt.bool)", "rt.logical_not(rt.cast({I}, rt.bool))",
          "{N} > {S}", "{I} >= {J}", "rt.logical_and({B}, {N} < 2.0)", "rt.logical_or({B}, {I} == 0)",
          "rt.logical_not({B})", "rt.equal(rt.floormod({I}, 2), 0)", "{N} != {N}", "rt.reduce_any({M} > 0.0, axis=1)",
          "rt.reduce_all({M} >= {S}, axis=1)", "rt.logical_xor({B}, {C} > 0.0)"],
    "A": ["rt.tanh({A})", "rt.sigmoid({A}) * 3.0", "rt.sin({A}) + rt.cos({N})",
          "rt.exp(rt.clip_by_value({A}, -5.0, 5.0))",
          "rt.log(rt.abs({A}) + 1.0)", "rt.sqrt(rt.abs({A}))", "{A} / (rt.abs({N}) + 1.0)", "{A} * 0.37 + {N}",
          "rt.reduce_mean({AM}, axis=1)", "rt.reduce_logsumexp({AM}, axis=1)", "rt.nn.softmax({AM}, axis=1)[:, 0]",
          "rt.nn.relu({A} - {AS})", "rt.pow(rt.abs({A}) + 1.0, 0.5)", "{A} + {C} * 0.5", "rt.cumsum({A}, reverse=True)",
          "rt.matmul({AM}, W)[:, 2]", "rt.where({B}, {A}, {A} * 0.5)", "rt.gather({A}, rt.floormod({I}, rt.size({A})))",
          "{A}[::-2][:1] + {A}[::-1][:rt.size({A})]", "rt.cast(rt.cast({A}, rt.float64) * 1.5, rt.float32)",
          "rt.divide({A}, 3.0)", "rt.square({A}) * 0.1", "{N}"],
    "AM": ["rt.sigmoid({AM})", "{AM} * {AS}", "rt.nn.softmax({AM})", "rt.nn.log_softmax({AM}) * 0.1",
           "rt.matmul({AM}, W) / 4.0", "rt.matmul({AM}, {AM}, transpose_a=True)[:1] + {AM}",
           "{AM} + rt.expand_dims({A}, 1)", "rt.tanh({M})", "rt.reduce_mean({AM}, axis=0, keepdims=True) * {AM}"],
    "AS": ["rt.reduce_mean({A})", "rt.reduce_logsumexp({A})", "{AS} * 0.5 + rt.tanh({S})", "rt.reduce_sum({AM}) / 7.0",
           "rt.exp(rt.clip_by_value({AS}, -4.0, 4.0))", "rt.reduce_prod(rt.sigmoid({A}))", "{AS} - rt.reduce_max({A})"],
    "D": ["{D} + rt.cast({N}, rt.float64)", "{D} * 2.0 - 1.0", "rt.floormod({D}, 5.0)", "rt.cumsum({D})",
          "rt.maximum({D}, rt.cast({I}, rt.float64))", "{D}[::-1]", "rt.where({B}, {D}, -{D})"],
    "C": ["c"],
}

VARIABLES = {"fx": "N", "fm": "M", "fs": "S", "ax": "A", "am": "AM", "as_": "AS", "iv": "I", "is_": "J", "dx": "D",
             "bx": "B"}
LEAVES = {"N": ["fx", "x", "y"], "M": ["fm", "m"], "S": ["fs"], "I": ["iv", "v"], "J": ["is_", "k"], "B": ["bx"],
          "A": ["ax"], "AM": ["am"], "AS": ["as_"], "D": ["dx"], "C": ["c"]}

CONDITIONS = ["{J} > {J}", "{S} > 0.0", "rt.reduce_sum({I}) % 2 == 0", "rt.reduce_any({B})", "{J} < k and {S} < 50.0",
              "not {J} > 2", "{J} == {J}", "{J} in {I}", "0 < {J} < k", "rt.reduce_all({I} >= 0) or {J} > 3",
              "{J} % 2 == 0", "{S} >= rt.cast({J}, rt.float32)", "rt.reduce_max({N}) > {S}"]
BOUNDS = ["k", "rt.minimum(k, 3)", "rt.size(x)", "{J} % 4", "rt.reduce_sum(rt.cast({B}, rt.int32))"]


# Expressions and loop bounds a kind adds to the catalogue (see KINDS).
EXTRA = {
    # axes of size 1: a keepdims reduction over one feeding an elementwise op (a softmax over one class), a
    # reduction over an expanded axis, a squeezed slice
    "size1": {"M": ["{M} - rt.reduce_sum({M}[:, :1], axis=1, keepdims=True)",
                    "{M} * rt.reduce_max({M}[:, 2:], axis=1, keepdims=True)",
                    "rt.nn.softmax({M}[:, 1:2] * 0.0, axis=1) * {M}",
                    "rt.tile({M}[:, :1], [1, 3]) - {M}"],
              "N": ["rt.reduce_max(rt.expand_dims({N}, 1), axis=1)", "rt.squeeze({M}[:, 1:2], axis=1)",
                    "rt.reduce_sum(rt.expand_dims({N}, 0), axis=0) - {N}",
                    "{N} - rt.reduce_sum(rt.expand_dims({N}, 1), axis=1, keepdims=True)[:, 0]"]},
    # static size-1 axes (w is float32[3]): [3, 1] minus its keepdims reduction, a softmax over one class (issue 19,
    # item 1: "Sum has no element rule" fails the module's build; --exclude size1static leaves them out)
    "size1static": {"S": ["rt.reduce_sum((w[:, None] - rt.reduce_sum(w[:, None], axis=1, keepdims=True)) * {S})",
                    "rt.reduce_sum(rt.nn.softmax(w[:, None] * {S}, axis=1) * w[:, None])",
                    "rt.reduce_sum(w[:, None] * rt.reduce_max(w[:, None], axis=1, keepdims=True))"]},
    # gathers along axis 1 with run-time indices, also bounding a loop
    "gather1": {"M": ["rt.gather({M}, rt.floormod(rt.range(3) + {J}, 3), axis=1)",
                      "rt.gather({M}, rt.floormod({J:1} + rt.constant([0, 2, 1]), 3), axis=1) * 2.0"],
                "N": ["rt.gather({M}, rt.floormod({J}, 3), axis=1)",
                      "rt.reduce_sum(rt.gather({M}, rt.floormod(rt.range(rt.abs({J}) % 3 + 1), 3), axis=1), 1)"]},
}
EXTRA_BOUNDS = {"gather1": ["rt.shape(rt.gather(m, rt.floormod(rt.range(k % 3 + 1) + {J}, 3), axis=1))[1]",
                            "rt.size(rt.gather(m, rt.floormod({J}, 3), axis=1))"]}

PLACEHOLDER = re.compile(r"\{([A-Z]+(?::\w+)?)\}")


class Generator:
    """One program from one seed; ``features`` (of its kind, see KINDS) add expressions and statements."""

    def __init__(self, seed: int, max_depth: int = 2, width: int = 3, expr_depth: int = 2,
                 features: frozenset = frozenset()):
        self.rng = random.Random(seed)
        self.max_depth, self.width, self.expr_depth = max_depth, width, expr_depth
        self.features = features
        self.catalogue = {kind: list(entries) for kind, entries in CATALOGUE.items()}
        self.bounds = list(BOUNDS)
        for feature in sorted(features):
            for kind, entries in EXTRA.get(feature, {}).items():
                self.catalogue[kind] += entries * 3           # (often: they are what the kind is about)
            self.bounds += EXTRA_BOUNDS.get(feature, []) * 2
        self.counter = 0

    def name(self, base):
        self.counter += 1
        return f"{base}{self.counter}"

    def expr(self, kind: str, depth: int, scalars: list[str]) -> str:
        """An expression of ``kind``; ``scalars`` are int32 scalars in scope (loop indices)."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            leaves = LEAVES[kind] + (scalars if kind == "J" else [])
            return rng.choice(leaves)
        text = self._fill(rng.choice(self.catalogue[kind]), depth - 1, scalars)
        if kind in EXACT_FLOATS:     # every exact float stays an integer far below 2**24: no rounding anywhere
            bound = EXACT_FLOATS[kind]
            return f"rt.clip_by_value({text}, -{bound}, {bound})"
        return f"({text})"

    def condition(self, scalars):
        return self._fill(self.rng.choice(CONDITIONS), 1, scalars)

    def _fill(self, template: str, depth: int, scalars) -> str:
        """``template`` with each ``{KIND}`` replaced by a new expression of that kind and every ``{KIND:tag}``
        by one expression shared by the template's uses of that tag (the same run-time index twice)."""
        shared: dict[str, str] = {}

        def replace(match):
            kind, _, tag = match.group(1).partition(":")
            if not tag:
                return self.expr(kind, depth, scalars)
            if match.group(1) not in shared:
                shared[match.group(1)] = self.expr(kind, depth, scalars)
            return shared[match.group(1)]
        return PLACEHOLDER.sub(replace, template)

    def assignment(self, scalars) -> list[str]:
        var = self.rng.choice(sorted(VARIABLES))
        kind = VARIABLES[var]
        value = self.expr(kind, self.expr_depth, scalars)
        if var in LIMIT:
            limit = LIMIT[var]
            return [f"{var} = rt.clip_by_value({value}, -{limit}, {limit})"]
        return [f"{var} = {value}"]

    def block(self, depth, scalars, in_loop, jumps, growing) -> list[str]:
        """Statements; ``growing``: the loops around set g's shape invariant, so g may grow here."""
        rng = self.rng
        lines: list[str] = []

        def inner(scalars_, in_loop_, jumps_, growing_):
            return ["    " + s for s in self.block(depth + 1, scalars_, in_loop_, jumps_, growing_)]
        for _ in range(rng.randint(1, self.width)):
            kinds = ["assign"] * 4 + ["ta", "var"]
            if "variables" in self.features:
                kinds += ["var"] * 4
            if "pyfunc" in self.features:
                kinds += ["py"] * 3
            if growing:
                kinds.append("grow")
            if depth < self.max_depth:
                kinds += ["if", "for", "while", "pyfor", "foreach", "dataset"]
            if in_loop and jumps:
                kinds += ["break", "continue"]
            if jumps:
                kinds.append("return")
            kind = rng.choice(kinds)
            j = rng.choice(scalars) if scalars else "is_"
            if kind == "assign":
                lines += self.assignment(scalars)
            elif kind == "ta":
                lines.append(f"ta = ta.write(ta.size(), {self.expr('S', 1, scalars)} + rt.cast({j}, rt.float32))")
            elif kind == "var":
                lines.append(rng.choice([
                    f"VS.assign_add(rt.clip_by_value({self.expr('S', 1, scalars)}, -10.0, 10.0))",
                    f"VI.assign(rt.clip_by_value({self.expr('J', 1, scalars)}, -100, 100))",
                    # floor keeps VV's values whole: halving them over many iterations made sums depend on order
                    (f"VV.assign(rt.clip_by_value(rt.floor(VV * 0.5) + rt.reduce_sum({self.expr('M', 1, scalars)}, "
                     "axis=0), -100.0, 100.0))"),
                    "VI.assign_add(1)", "VS.assign_sub(0.5)"]))
            elif kind == "py":       # Python called on every run (in loops too): exact values in, exact out
                lines.append(rng.choice([
                    (f"fx = rt.clip_by_value(rt.reshape(rt.py_function(pyf, [{self.expr('N', 1, scalars)}], "
                     "rt.float32), [-1]), -300.0, 300.0)"),
                    f"fx = rt.reshape(rt.numpy_function(npf, [{self.expr('N', 1, scalars)}], [rt.float32])[0], [-1])",
                    (f"fs = rt.clip_by_value(rt.reduce_sum(rt.py_function(pyf, [{self.expr('S', 1, scalars)}], "
                     "[rt.float32])[0]), -300.0, 300.0)")]))
            elif kind == "grow":
                lines.append(f"g = rt.concat([g, rt.reshape({self.expr('S', 1, scalars)}, [1])], 0)")
                lines.append("g = rt.clip_by_value(g[-4:], -300.0, 300.0)")
            elif kind == "if":
                lines.append(f"if {self.condition(scalars)}:")
                lines += inner(scalars, in_loop, jumps, growing)
                if rng.random() < 0.5:
                    lines.append("else:")
                    lines += inner(scalars, in_loop, jumps, growing)
            elif kind in ("for", "foreach", "dataset", "while"):
                i = self.name("i")
                if kind == "for":
                    lines.append(f"for {i} in rt.range({self._fill(rng.choice(self.bounds), 1, scalars)}):")
                elif kind == "foreach":
                    lines.append(f"for {i} in {rng.choice(['v', 'iv', 'rt.cast(x, rt.int32)', 'v[::-1]'])}:")
                elif kind == "dataset":
                    lines.append(f"for {i} in rt.data.Dataset.from_tensor_slices(v):")
                else:
                    lines.append(f"{i} = 0")
                    lines.append(f"while {i} < rt.minimum(k, {rng.randint(1, 4)}):")
                    lines.append(f"    {i} += 1")
                grows = rng.random() < 0.3
                if grows:
                    lines.append("    rt.autograph.experimental.set_loop_options("
                                 "shape_invariants=[(g, rt.TensorShape([None]))])")
                lines += inner(scalars + [i], True, jumps, grows)
            elif kind == "pyfor":
                p = self.name("p")
                lines.append(f"for {p} in range(2):")
                lines.append(f"    is_ = rt.clip_by_value(is_ + {p}, -1000, 1000)")
                lines += inner(scalars, in_loop, False, False)
            elif kind in ("break", "continue"):
                lines.append(f"if {self.condition(scalars)}:")
                lines.append(f"    {kind}")
            else:
                lines.append(f"if {self.condition(scalars)}:")
                lines.append(f"    return {RESULT}")
        return lines


def program(seed: int, max_depth: int = 2, width: int = 3, kind: str = "general", exclude=()) -> str:
    """The body of one program of ``kind`` (statements, not indented), without the features ``exclude`` names."""
    spec = KINDS[kind]
    if spec.generate is not None:
        return spec.generate(seed, max_depth, width)
    gen = Generator(seed, max_depth, width, features=spec.features - frozenset(exclude))
    body = gen.block(0, [], False, True, False)
    return "\n".join(PROLOGUE + body + [f"return {RESULT}"]) + "\n"


# ---------------------------------------------------------------------------------------------------
# Gradients: a tape inside the function differentiates a loss built with smooth ops and tensor control flow
# with respect to float64 inputs and a variable; modes are compared, and with central differences.

GRAD_CATALOGUE = {
    "A": ["rt.tanh({A})", "rt.sin({A}) * 0.5", "{A} * {A} * 0.1", "{A} + rt.reduce_sum({B}, axis=1) * 0.1",
          "rt.sigmoid({A})", "{A} * {S}", "rt.matmul({B}, rt.reshape(GW, [3, 1]))[:, 0]", "{A}[::-1] * 0.5",
          "rt.where(gx > 0.0, {A}, {A} * 0.5)", "rt.cumsum({A}) * 0.1", "rt.exp(rt.tanh({A})) * 0.1",
          "rt.gather({A}, rt.floormod(rt.range(rt.size({A})) + 1, rt.maximum(rt.size({A}), 1)))",
          "rt.concat([{A}[1:], {A}[:1]], 0)", "rt.reduce_sum({B} * GW, axis=1)", "rt.square({A}) * {S}"],
    "B": ["rt.tanh({B})", "{B} * GW", "{B} + rt.expand_dims({A}, 1) * 0.1", "rt.matmul({B}, G3) * 0.3",
          "rt.nn.softmax({B})", "{B} * {S}", "rt.transpose(rt.transpose({B})) * 0.5",
          "rt.concat([{B}[:, 1:], {B}[:, :1]], 1)", "rt.sigmoid({B}) - 0.5", "{B} * rt.gather(GW, [2, 0, 1])"],
    "S": ["rt.reduce_sum({A}) * 0.1", "rt.reduce_mean({B})", "{S} * {S} * 0.1", "rt.tanh({S})",
          "GW[0] * {S}", "rt.reduce_sum(GW * GW) * {S} * 0.1", "rt.reduce_sum(rt.matmul({B}, G3)) * 0.05",
          "rt.reduce_max(rt.abs({A})) * 0.1"],
}
GRAD_LEAVES = {"A": ["a", "gx"], "B": ["b", "gm"], "S": ["s"]}
GRAD_VARIABLES = {"a": "A", "b": "B", "s": "S"}
GRAD_CONDITIONS = ["rt.reduce_sum(gx) > 0.0", "k % 2 == 0", "rt.reduce_max(gm) > 0.5", "{S} > 0.0", "k > 2"]
GRAD_RESULT = "loss, grads[0], grads[1], grads[2]"


def _gradient_program(seed: int, max_depth: int = 2, width: int = 3) -> str:
    rng = random.Random(seed)

    def expr(kind, depth):
        if depth <= 0 or rng.random() < 0.3:
            return rng.choice(GRAD_LEAVES[kind])
        return "(" + PLACEHOLDER.sub(lambda m: expr(m.group(1), depth - 1), rng.choice(GRAD_CATALOGUE[kind])) + ")"

    def bounded(var):        # tanh keeps every value small, so nothing overflows however often loops repeat
        return f"{var} = rt.tanh({expr(GRAD_VARIABLES[var], 2)})"

    def block(depth):
        lines = []
        for _ in range(rng.randint(1, width)):
            kinds = ["assign"] * 3 + (["if", "for", "while"] if depth < max_depth else [])
            kind = rng.choice(kinds)
            if kind == "assign":
                lines.append(bounded(rng.choice(sorted(GRAD_VARIABLES))))
                continue
            body = ["    " + line for line in block(depth + 1)]
            if kind == "if":
                condition = PLACEHOLDER.sub(lambda m: expr(m.group(1), 1), rng.choice(GRAD_CONDITIONS))
                lines += [f"if {condition}:"] + body
                if rng.random() < 0.5:
                    lines += ["else:"] + ["    " + line for line in block(depth + 1)]
            elif kind == "for":
                lines += [f"for _ in rt.range(k % {rng.randint(2, 4)}):"] + body
            else:
                w = f"w{depth}"
                lines += [f"{w} = rt.constant(0)", f"while {w} < rt.minimum(k, {rng.randint(1, 3)}):",
                          f"    {w} += 1"] + body
        return lines

    lines = ["with rt.GradientTape(persistent=True) as tape:",
             "    tape.watch([gx, gm])",
             "    a = rt.tanh(gx * 0.5)",
             "    b = rt.tanh(gm * GW)",
             "    s = rt.reduce_sum(a) * 0.1"]
    lines += ["    " + line for line in block(0)]
    lines += ["    loss = rt.reduce_sum(a * a) + rt.reduce_sum(rt.tanh(b) * G3[0]) + s * s",
              "grads = tape.gradient(loss, [gx, gm, GW], unconnected_gradients='zero')",
              f"return {GRAD_RESULT}"]
    return "\n".join(lines) + "\n"


def _gradient_inputs(seed: int) -> list[tuple]:
    """Continuous values (no ties for max, no kinks at 0), n from 1 to 9."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice((1, 1, 2, 3, 5, 9)))
    return [(rng.standard_normal(n), rng.standard_normal((n, 3)), np.asarray(np.int32(rng.integers(0, 5))))]


# ---------------------------------------------------------------------------------------------------
# Datasets: loops over pipelines, iterators advanced by next() in tensor loops and ifs, break out of them.

DATASETS = ["rt.data.Dataset.from_tensor_slices(x)", "rt.data.Dataset.from_tensor_slices(x).map(lambda e: e * 2.0)",
            "rt.data.Dataset.from_tensor_slices(x).filter(lambda e: e > 0.0)",
            "rt.data.Dataset.from_tensor_slices(rt.cast(v, rt.float32)).skip(1).take(k)",
            "rt.data.Dataset.range(k).map(lambda e: rt.cast(e, rt.float32) - 1.5)",
            "rt.data.Dataset.from_tensor_slices(x).repeat(2).take(5)",
            "rt.data.Dataset.from_tensor_slices((x, rt.cast(v, rt.float32))).map(lambda a, b: a * b)"]
BATCHED = ["rt.data.Dataset.from_tensor_slices(x).batch(2)", "rt.data.Dataset.from_tensor_slices(x).batch(3, True)",
           "rt.data.Dataset.from_tensor_slices(rt.cast(v, rt.float32)).shuffle(4, seed=7).batch(2)"]


def _dataset_program(seed: int, max_depth: int = 2, width: int = 3) -> str:
    rng = random.Random(seed)
    counter = iter(range(1000))

    def update(e):
        return rng.choice([f"s = rt.clip_by_value(s * 2.0 + {e}, -1000.0, 1000.0)", f"s = s + {e}",
                           f"t = t * 3 % 1009 + rt.cast({e}, rt.int32)", f"s = rt.maximum(s, {e}) - 1.0"])

    def block(depth, iterators):
        lines = []
        for _ in range(rng.randint(2 if depth == 0 else 1, width)):
            kinds = ["update"] + (["loop", "loop", "batched", "iter", "iter"] if depth < max_depth else [])
            kinds += ["next"] * 4 if iterators else []
            kind = rng.choice(kinds)
            n = next(counter)
            if kind == "update" or (kind == "next" and not iterators):
                lines.append(update(rng.choice(["rt.reduce_sum(x)", "rt.cast(k, rt.float32)", "1.0"])))
            elif kind == "loop":
                lines.append(f"for e{n} in {rng.choice(DATASETS)}:")
                lines += ["    " + line for line in [update(f"e{n}")] + block(depth + 1, iterators)]
                if rng.random() < 0.4:
                    lines += [f"    if s > {rng.choice(['3.0', '0.0', 'rt.cast(k, rt.float32)'])}:", "        break"]
            elif kind == "batched":
                lines.append(f"for e{n} in {rng.choice(BATCHED)}:")
                lines += ["    " + update(f"rt.reduce_sum(e{n})"), "    t = t + rt.size(e" + f"{n})"]
            elif kind == "iter":
                it = f"it{n}"
                lines.append(f"{it} = iter({rng.choice(DATASETS)})")
                lines += block(depth, iterators + [it])
                if rng.random() < 0.3:
                    lines += [f"for e{n} in {it}:", "    " + update(f"e{n}"),
                              f"    if e{n} > 1.0:", "        break"]
            else:
                it = rng.choice(iterators)
                default = rng.choice(["-1.0", "rt.constant(-2.0)", "0.5"])
                taken = rng.choice([f"next({it}, {default})", f"next({it}, {default}) * 2.0"])
                shape = rng.choice(["for", "if", "while", "plain"])
                if shape == "for":
                    lines += [f"for i{n} in rt.range(k % 4):", "    " + update(taken)]
                elif shape == "if":
                    lines += [f"if rt.reduce_sum(x) > {rng.choice(['0.0', '2.0'])}:", "    " + update(taken)]
                elif shape == "while":
                    lines += [f"e{n} = {taken}", f"c{n} = 0",
                              f"while e{n} > -1.0 and c{n} < 6:", "    " + update(f"e{n}"), f"    c{n} += 1",
                              f"    e{n} = next({it}, -5.0)"]
                else:
                    lines.append(update(taken))
        return lines

    lines = ["s = rt.constant(0.0)", "t = rt.constant(0)"] + block(0, []) + ["return s, t"]
    return "\n".join(lines) + "\n"


def _dataset_inputs(seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    n = int(rng.choice((0, 1, 2, 3, 4, 6, 9)))
    return [(rng.integers(-3, 4, n).astype(np.float32), rng.integers(-3, 4, n).astype(np.int32),
             np.asarray(np.int32(rng.integers(0, 5))))]


# ---------------------------------------------------------------------------------------------------
# Retracing: functions without an input_signature, built for one signature, then called with shapes and dtypes
# nobody built (they retrace at run time), in an order that revisits built and traced signatures.

RETRACE_STATEMENTS = ["y = y + x", "y = rt.maximum(y, x * 2)", "y = y[::-1] - x", "s = s + rt.reduce_sum(y)",
                      "y = rt.abs(y) + rt.cast(rt.size(v), y.dtype)", "s = s * 2 + rt.reduce_max(x)",
                      "y = rt.where(y > x, y, x)", "s = s + rt.cast(rt.reduce_sum(v), s.dtype)",
                      "y = rt.reduce_sum(rt.expand_dims(y, 0), 0)", "y = rt.stack([y, x])[1] + y"]


def _retrace_program(seed: int, max_depth: int = 2, width: int = 3) -> str:
    rng = random.Random(seed)

    def block(depth):
        lines = []
        for _ in range(rng.randint(1, width)):
            kind = rng.choice(["stmt"] * 3 + (["if", "for"] if depth < max_depth else []))
            if kind == "stmt":
                lines.append(rng.choice(RETRACE_STATEMENTS))
            elif kind == "if":
                lines += [f"if rt.reduce_sum(y) > {rng.choice(['0', 's', 'rt.reduce_min(x)'])}:"]
                lines += ["    " + line for line in block(depth + 1)]
            else:
                lines += [f"for _ in rt.range(rt.size(v) % {rng.randint(2, 4)}):"]
                lines += ["    " + line for line in block(depth + 1)]
        return lines
    lines = ["y = x * 1", "s = rt.reduce_sum(x)"] + block(0)
    lines += ["y = rt.clip_by_value(y, -1000, 1000)", "s = rt.clip_by_value(s, -10000, 10000)", "return y, s"]
    return "\n".join(lines) + "\n"


RETRACE_DTYPES = (np.float32, np.float64, np.int32, np.int64)


def _retrace_inputs(seed: int) -> list[tuple]:
    """Argument sets of several shapes and dtypes (the built one first and again later)."""
    rng = np.random.default_rng(seed)
    sets = []
    for dtype, shape in [(np.float32, (int(rng.integers(0, 6)),)),
                         (RETRACE_DTYPES[int(rng.integers(0, 4))], (int(rng.integers(1, 5)),)),
                         (RETRACE_DTYPES[int(rng.integers(0, 4))], (int(rng.integers(0, 4)), 2)),
                         (np.float32, (int(rng.integers(0, 7)),))]:
        x = rng.integers(-4, 5, shape).astype(dtype)
        v = rng.integers(-4, 5, int(rng.integers(0, 5))).astype(np.int32)
        sets.append((x, v))
    return sets


# ---------------------------------------------------------------------------------------------------
# Kinds of programs. A kind gives its programs' parameters and input_signature (None: retraced at run time,
# one signature built), the bodies (``generate``, or the common generator with ``features``), argument sets
# (a list per seed) and which outputs compare exactly.

@dataclass(frozen=True)
class Kind:
    signature: str
    input_signature: str | None
    generate: object = None
    features: frozenset = frozenset()
    inputs: object = None
    exact: tuple = EXACT
    built: str | None = None           # without an input_signature: the signature the module builds


def _general_inputs(seed):
    return [inputs(seed)]


def _small_inputs(seed):
    return [inputs(seed, n=int(np.random.default_rng(seed).choice((0, 1, 1, 2))))]


KINDS = {
    "general": Kind(SIGNATURE, INPUT_SIGNATURE, inputs=_general_inputs),
    "variables": Kind(SIGNATURE, INPUT_SIGNATURE, features=frozenset({"variables"}), inputs=_general_inputs),
    "pyfunc": Kind(SIGNATURE, INPUT_SIGNATURE, features=frozenset({"pyfunc"}), inputs=_general_inputs),
    "size1": Kind(SIGNATURE, INPUT_SIGNATURE, features=frozenset({"size1", "size1static"}), inputs=_small_inputs),
    "gather1": Kind(SIGNATURE, INPUT_SIGNATURE, features=frozenset({"gather1"}), inputs=_general_inputs),
    "gradients": Kind("gx, gm, k", "[GX, GM, K]", generate=_gradient_program, inputs=_gradient_inputs,
                      exact=(False, False, False, False)),
    "datasets": Kind("x, v, k", "[F, I, K]", generate=_dataset_program, inputs=_dataset_inputs,
                     exact=(True, True)),
    "retrace": Kind("x, v", None, generate=_retrace_program, inputs=_retrace_inputs, exact=(True, True),
                    built="rt.TensorSpec([None], rt.float32), I"),
}


def kind_of(seed: int, kinds=None) -> str:
    """The kind of program ``seed`` in a run over ``kinds`` (all by default): round robin."""
    kinds = list(kinds or KINDS)
    return kinds[seed % len(kinds)]


def function_source(name: str, body: str, decorated: bool = True, kind: str = "general") -> str:
    spec = KINDS[kind]
    head = ""
    if decorated:
        head = "@rt.function\n" if spec.input_signature is None else \
            f"@rt.function(input_signature={spec.input_signature})\n"
    text = head + f"def {name}({spec.signature}):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    if decorated and spec.built is not None:
        text += f"\n\n{name}.get_concrete_function({spec.built})\n"
    return text


def module_source(bodies: list[str], kinds: list[str] | None = None) -> str:
    """A module of ``prog_<i>`` for each body (of kind ``kinds[i]``, general by default); ``PROG_KINDS`` lists
    them for ``run_modes``."""
    kinds = list(kinds) if kinds is not None else ["general"] * len(bodies)
    return (HEADER + "".join("\n\n" + function_source(f"prog_{i}", body, kind=kind)
                             for i, (body, kind) in enumerate(zip(bodies, kinds)))
            + f"\n\nPROG_KINDS = {kinds!r}\n")


SIZES = (1, 1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 12, 16, 17)


def inputs(seed: int, n: int | None = None, broadcast: bool | None = None, strided: bool | None = None) -> tuple:
    """One argument set: n drawn from ``SIZES`` (empty, short, and past vector widths and GEMM tiles; below 18,
    so that sums of products of clipped values stay exact in float32) or ``n``, small integer values; ``c`` has
    1 or n elements; ``strided`` feeds non-contiguous views (every other element of a larger array)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice(SIZES)) if n is None else n
    broadcast = bool(rng.integers(0, 2)) if broadcast is None else broadcast
    strided = bool(rng.integers(0, 4) == 0) if strided is None else strided
    step = 2 if strided else 1

    def draw(low, high, shape, dtype):
        shape = (shape,) if isinstance(shape, int) else shape
        full = rng.integers(low, high, (shape[0] * step,) + shape[1:]).astype(dtype)
        return full[::step]
    x = draw(-5, 6, n, np.float32)
    y = draw(-5, 6, n, np.float32)
    m = draw(-3, 4, (n, 3), np.float32)
    v = draw(-5, 6, n, np.int32)
    k = np.asarray(np.int32(rng.integers(0, 6)))
    c = draw(-3, 4, 1 if broadcast else n, np.float32)
    w = draw(-2, 3, 3, np.float32)
    return x, y, m, v, k, c, w


def reset_variables(module) -> None:
    """Module-level variables back to their initial values (each run starts from the same state)."""
    module.VS.assign(0.0)
    module.VI.assign(0)
    module.VV.assign(np.zeros(3, np.float32))
    module.GW.assign(np.array([0.5, -1.0, 0.25]))


def differences(expected, actual, exact_outputs=EXACT) -> list[str]:
    """Output-by-output differences (exact outputs exactly, approximate ones within a tolerance)."""
    if not isinstance(actual, tuple) or len(actual) != len(expected):
        return [f"{len(expected)} outputs vs {actual!r}"]
    problems = []
    for i, (e, a, exact) in enumerate(zip(expected, actual, exact_outputs)):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            problems.append(f"output {i}: {e.dtype}{list(e.shape)} vs {a.dtype}{list(a.shape)}")
        elif exact and not np.array_equal(e, a, equal_nan=True):
            problems.append(f"output {i}: {e!r} vs {a!r}")
        elif not exact and not np.allclose(a, e, rtol=2e-4, atol=2e-4, equal_nan=True):
            problems.append(f"output {i}: {e!r} vs {a!r} (max diff {np.max(np.abs(a - e)):.3g})")
    return problems


def values(result) -> tuple:
    return tuple(np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in result)


# ---------------------------------------------------------------------------------------------------
# Bulk runs (not a test): python tests/fuzz_programs.py --start 0 --count 1000 [--native]

def load(path, name: str):
    """The generated module at ``path``, imported as plain Python under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _on_reference_executor(function, args):
    """``function(*args)`` with its graph run by the reference (numpy) executor instead of the generic one."""
    previous = executor._runner.generic
    executor._runner.generic = False
    try:
        return function(*args)
    finally:
        executor._runner.generic = previous


# Eager checks static shapes as it goes and raises these subclasses of InvalidArgumentError (also a
# ValueError / TypeError); graph modes find the same error at run time and raise InvalidArgumentError.
_ERROR_FAMILIES = {"InvalidArgumentValueError": "InvalidArgumentError", "InvalidArgumentTypeError": "InvalidArgumentError"}


def _error_type(outcome: str) -> str:
    name = outcome.split(":")[0]
    return _ERROR_FAMILIES.get(name, name)


def _same(expected, actual, exact_outputs=EXACT) -> list[str]:
    """Differences of two runs' outcomes (values, or an error's ``"Type: message"``): errors match by type."""
    if isinstance(expected, str) or isinstance(actual, str):
        if isinstance(expected, str) and isinstance(actual, str) and _error_type(expected) == _error_type(actual):
            return []
        return [f"{expected!r} vs {actual!r}"] if expected != actual else []
    return differences(expected, actual, exact_outputs)


def _describe_args(seed, args) -> str:
    shapes = ", ".join(f"{np.asarray(a).dtype}{list(np.shape(a))}" for a in args)
    return f"seed {seed}, {shapes}, contiguous={all(np.asarray(a).flags.c_contiguous for a in args)}"


def _finite_differences(prog, module, args, eager_result) -> list[str]:
    """The gradients a ``gradients`` program returns (of its loss, output 0) against central differences of the
    loss, eagerly in float64, for its inputs ``gx``, ``gm`` and the variable ``GW``."""
    eps, problems = 1e-6, []

    def loss(values):
        return float(prog.python_function(*[rt.constant(a) for a in values])[0].numpy())
    for position, grad in ((0, eager_result[1]), (1, eager_result[2])):
        numeric = np.zeros_like(args[position])
        for index in np.ndindex(args[position].shape):
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[position][index] += eps
            minus[position][index] -= eps
            numeric[index] = (loss(plus) - loss(minus)) / (2 * eps)
        if not np.allclose(grad, numeric, rtol=1e-5, atol=1e-7):
            problems.append(f"gradient of input {position}: {np.asarray(grad)!r} vs finite differences {numeric!r}")
    base = module.GW.numpy()
    numeric = np.zeros_like(base)
    try:
        for j in range(base.size):
            step = np.zeros_like(base)
            step[j] = eps
            module.GW.assign(base + step)
            up = loss(args)
            module.GW.assign(base - step)
            numeric[j] = (up - loss(args)) / (2 * eps)
    finally:
        module.GW.assign(base)
    if not np.allclose(eager_result[3], numeric, rtol=1e-5, atol=1e-7):
        problems.append(f"gradient of GW: {np.asarray(eager_result[3])!r} vs finite differences {numeric!r}")
    return problems


def run_modes(module, index: int, seeds, native=None, counts: dict | None = None,
              finite_differences: bool = True) -> list[str]:
    """Run ``prog_<index>`` of ``module`` eagerly, traced (generic and reference executors) and, with a built
    ``native`` module, natively, on the argument sets of ``seeds`` (its kind's, see KINDS); the disagreements
    found. A ``gradients`` program's gradients are also compared with central differences (on the first seed's
    arguments, when ``finite_differences``).

    When the eager run raises, the graph modes are compared with the traced run instead: a traced function
    drops ops whose values nothing uses, so an error in dead code is raised eagerly only (as in TensorFlow).
    ``counts`` (mode -> runs) is updated.
    """
    kind = getattr(module, "PROG_KINDS", None)
    kind = kind[index] if kind is not None else "general"
    spec = KINDS[kind]
    prog = getattr(module, f"prog_{index}")
    traced = rt.function(prog.python_function, input_signature=prog.input_signature)
    modes = {"eager": (module, lambda args: prog.python_function(*[rt.constant(a) for a in args])),
             "traced": (module, lambda args: traced(*args)),
             "reference": (module, lambda args: _on_reference_executor(traced, args))}
    if native is not None:
        native_prog = getattr(native, f"prog_{index}")
        modes["native"] = (native, lambda args: native_prog(*args))
    found = []
    for seed_index, seed in enumerate(seeds):
        for args in spec.inputs(seed):
            where = _describe_args(seed, args)
            results = {}
            for label, (variables, run) in modes.items():
                reset_variables(variables)
                if counts is not None:
                    counts[label] = counts.get(label, 0) + 1
                try:
                    results[label] = values(run(args))
                except Exception as e:  # noqa: BLE001 -- a crash is a finding
                    results[label] = f"{type(e).__name__}: {e}"
            base_label = "eager"
            if isinstance(results["eager"], str) and not isinstance(results["traced"], str):
                del results["eager"]
                base_label = "traced"
            base = results.pop(base_label)
            for label, got in results.items():
                problems = _same(base, got, spec.exact)
                if problems:
                    found.append(f"{label} vs {base_label} ({where}): " + "; ".join(problems))
            if kind == "gradients" and finite_differences and seed_index == 0 and base_label == "eager" \
                    and not isinstance(base, str):
                found += [f"eager vs finite differences ({where}): {p}"
                          for p in _finite_differences(prog, module, list(args), base)]
    if kind == "retrace" and native is not None:
        concrete = native_prog.get_concrete_function(rt.TensorSpec([None], rt.float32),
                                                     rt.TensorSpec([None], rt.int32))
        if not concrete.native:
            found.append("native: the built signature does not run native code")
    return found


def build(directory, jobs: int = 2) -> str:
    """Build every module under ``directory`` with ``python -m transpiler build --strict`` (a signature the lowering
    cannot compile fails the build, instead of running on the generic executor unnoticed; ``-O1`` unless a module's
    name ends with ``_o3``: see random_programs.render_for_tests); the build's output when it fails, else ``""``."""
    project = Path(__file__).resolve().parents[1]
    renderer = f"{project / 'tests' / 'random_programs.py'}:render_for_tests"
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(directory), "-j", str(jobs), "--strict",
                           "--renderer", renderer], cwd=project, capture_output=True, text=True,
                          check=False)
    return proc.stdout[-3000:] + proc.stderr[-3000:] if proc.returncode else ""


def import_built(directory, name: str):
    """The built extension module ``name`` from ``directory``, imported in this process (a module of that name
    imported before is dropped first); raises when what imports is not the extension (the source)."""
    sys.modules.pop(name, None)
    sys.path.insert(0, str(directory))
    try:
        importlib.invalidate_caches()
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(directory))
    if not module.__file__.endswith(".so"):
        raise RuntimeError(f"{name} was not built: {module.__file__}")
    return module


def main(argv=None) -> int:
    """The command line: generate, (build,) run, print every disagreement; the number of failing programs."""
    parser = argparse.ArgumentParser(
        prog="python tests/fuzz_programs.py",
        description="Differential fuzzing: random typed programs run eagerly, traced on the generic executor, "
                    "on the reference executor and (--native) as built native code must agree.")
    parser.add_argument("--start", type=int, default=0, help="first program seed (default 0)")
    parser.add_argument("--count", type=int, default=100, help="number of programs (default 100)")
    parser.add_argument("--per-module", type=int, default=50, help="programs per generated module (default 50)")
    parser.add_argument("--runs", type=int, default=3, help="argument sets per program (default 3)")
    parser.add_argument("--native", action="store_true", help="also build the modules and run them natively")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="modules built in parallel (default 2)")
    parser.add_argument("--depth", type=int, default=3, help="control-flow nesting depth (default 3)")
    parser.add_argument("--width", type=int, default=4, help="statements per block, at most (default 4)")
    parser.add_argument("--kinds", default="general",
                        help=f"kinds of programs, round robin over the seeds: 'all' or a comma-separated list of "
                             f"{', '.join(KINDS)} (default general)")
    parser.add_argument("--exclude", default="", help="features left out (comma-separated), e.g. size1static")
    parser.add_argument("--out", default=None, help="directory for the generated modules (default: a temporary one)")
    args = parser.parse_args(argv)
    exclude = [f.strip() for f in args.exclude.split(",") if f.strip()]
    kinds = list(KINDS) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"unknown kinds {unknown}; choose from {', '.join(KINDS)}")
    out = Path(args.out or tempfile.mkdtemp(prefix="rt_fuzz_"))
    out.mkdir(parents=True, exist_ok=True)
    batches = []
    for kind in kinds:        # one kind per module: a module that does not build names its kind
        kind_seeds = [s for s in range(args.start, args.start + args.count) if kind_of(s, kinds) == kind]
        for at in range(0, len(kind_seeds), args.per_module):
            seeds = kind_seeds[at:at + args.per_module]
            bodies = [program(s, args.depth, args.width, kind, exclude) for s in seeds]
            name = f"rt_fuzz_{kind}_{seeds[0]}"
            (out / f"{name}.py").write_text(module_source(bodies, [kind] * len(seeds)))
            batches.append((name, seeds, [kind] * len(seeds), bodies))
    print(f"{args.count} programs ({', '.join(kinds)}) in {len(batches)} modules under {out}", flush=True)
    unbuilt = set()
    if args.native:
        failed = build(out, args.jobs)
        if failed:       # the build reports each failing module; the others were built
            print(f"BUILD FAILED:\n{failed}", flush=True)
            unbuilt = {name for name, *_ in batches if not list(out.glob(f"{name}.*.so"))}
    failures, counts, by_kind = 0, {}, {}
    for name, seeds, seed_kinds, bodies in batches:
        module = load(out / f"{name}.py", name + "_py")
        native = None
        if args.native and name not in unbuilt:
            native = import_built(out, name)
        for i, (seed, kind, body) in enumerate(zip(seeds, seed_kinds, bodies)):
            tally = by_kind.setdefault(kind, [0, 0, 0])
            tally[0] += 1
            if args.native and native is None:
                tally[2] += 1
                failures += 1
                continue
            try:
                found = run_modes(module, i, [seed + 100_000 * r for r in range(args.runs)], native, counts)
            except Exception as e:  # noqa: BLE001 -- a harness failure is reported like a finding
                found = [f"harness: {type(e).__name__}: {e}"]
            if found:
                failures += 1
                tally[1] += 1
                print(f"=== program seed {seed} ({kind}; {out / name}.py, prog_{i})\n{body}" + "\n".join(found[:6])
                      + "\n", flush=True)
        print(f"{name}: seeds {seeds[0]}..{seeds[-1]} done, {failures} failing so far", flush=True)
    for kind, (total, disagree, not_built) in by_kind.items():
        print(f"  {kind}: {total} programs, {disagree} disagree" + (f", {not_built} in modules that did not build"
                                                                   if not_built else ""), flush=True)
    print(f"runs per mode: {counts}; {failures} of {args.count} programs disagree or did not build", flush=True)
    return failures


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
