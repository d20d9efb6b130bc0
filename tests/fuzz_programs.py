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
from pathlib import Path

import numpy as np

import runtime as rt
from runtime import executor

HEADER = '''\
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


PLACEHOLDER = re.compile(r"\{([A-Z]+(?::\w+)?)\}")


class Generator:
    """One program from one seed."""

    def __init__(self, seed: int, max_depth: int = 2, width: int = 3, expr_depth: int = 2):
        self.rng = random.Random(seed)
        self.max_depth, self.width, self.expr_depth = max_depth, width, expr_depth
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
        text = self._fill(rng.choice(CATALOGUE[kind]), depth - 1, scalars)
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
                    lines.append(f"for {i} in rt.range({self._fill(rng.choice(BOUNDS), 1, scalars)}):")
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


def program(seed: int, max_depth: int = 2, width: int = 3) -> str:
    """The body of one program (statements, not indented)."""
    gen = Generator(seed, max_depth, width)
    body = gen.block(0, [], False, True, False)
    return "\n".join(PROLOGUE + body + [f"return {RESULT}"]) + "\n"


def function_source(name: str, body: str, decorated: bool = True) -> str:
    head = f"@rt.function(input_signature={INPUT_SIGNATURE})\n" if decorated else ""
    return head + f"def {name}({SIGNATURE}):\n" + "".join(f"    {line}\n" for line in body.splitlines())


def module_source(bodies: list[str]) -> str:
    return HEADER + "".join("\n\n" + function_source(f"prog_{i}", body) for i, body in enumerate(bodies))


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


def differences(expected, actual) -> list[str]:
    """Output-by-output differences (exact outputs exactly, approximate ones within a tolerance)."""
    if not isinstance(actual, tuple) or len(actual) != len(expected):
        return [f"{len(expected)} outputs vs {actual!r}"]
    problems = []
    for i, (e, a, exact) in enumerate(zip(expected, actual, EXACT)):
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


def _same(expected, actual) -> list[str]:
    """Differences of two runs' outcomes (values, or an error's ``"Type: message"``): errors match by type."""
    if isinstance(expected, str) or isinstance(actual, str):
        if isinstance(expected, str) and isinstance(actual, str) and _error_type(expected) == _error_type(actual):
            return []
        return [f"{expected!r} vs {actual!r}"] if expected != actual else []
    return differences(expected, actual)


def run_modes(module, index: int, seeds, native=None, counts: dict | None = None) -> list[str]:
    """Run ``prog_<index>`` of ``module`` eagerly, traced (generic and reference executors) and, with a built
    ``native`` module, natively, on the argument sets of ``seeds``; the disagreements found.

    When the eager run raises, the graph modes are compared with the traced run instead: a traced function
    drops ops whose values nothing uses, so an error in dead code is raised eagerly only (as in TensorFlow).
    ``counts`` (mode -> runs) is updated.
    """
    prog = getattr(module, f"prog_{index}")
    traced = rt.function(prog.python_function, input_signature=prog.input_signature)
    modes = {"eager": (module, lambda args: prog.python_function(*[rt.constant(a) for a in args])),
             "traced": (module, lambda args: traced(*args)),
             "reference": (module, lambda args: _on_reference_executor(traced, args))}
    if native is not None:
        modes["native"] = (native, getattr(native, f"prog_{index}"))
    found = []
    for seed in seeds:
        args = inputs(seed)
        where = f"seed {seed}, n={len(args[0])}, c={len(args[5])}, contiguous={args[0].flags.c_contiguous}"
        results = {}
        for label, (variables, run) in modes.items():
            reset_variables(variables)
            if counts is not None:
                counts[label] = counts.get(label, 0) + 1
            try:
                results[label] = values(run(*args) if label == "native" else run(args))
            except Exception as e:  # noqa: BLE001 -- a crash is a finding
                results[label] = f"{type(e).__name__}: {e}"
        base_label = "eager"
        if isinstance(results["eager"], str) and not isinstance(results["traced"], str):
            del results["eager"]
            base_label = "traced"
        base = results.pop(base_label)
        for label, got in results.items():
            problems = _same(base, got)
            if problems:
                found.append(f"{label} vs {base_label} ({where}): " + "; ".join(problems))
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
    parser.add_argument("--out", default=None, help="directory for the generated modules (default: a temporary one)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="rt_fuzz_"))
    out.mkdir(parents=True, exist_ok=True)
    batches = []
    for batch_start in range(args.start, args.start + args.count, args.per_module):
        seeds = list(range(batch_start, min(batch_start + args.per_module, args.start + args.count)))
        bodies = [program(s, args.depth, args.width) for s in seeds]
        name = f"rt_fuzz_{batch_start}"
        (out / f"{name}.py").write_text(module_source(bodies))
        batches.append((name, seeds, bodies))
    print(f"{args.count} programs in {len(batches)} modules under {out}", flush=True)
    if args.native:
        failed = build(out, args.jobs)
        if failed:
            print(f"BUILD FAILED:\n{failed}", flush=True)
            return args.count
    failures, counts = 0, {}
    for name, seeds, bodies in batches:
        module = load(out / f"{name}.py", name + "_py")
        native = import_built(out, name) if args.native else None
        for i, (seed, body) in enumerate(zip(seeds, bodies)):
            try:
                found = run_modes(module, i, [seed + 100_000 * r for r in range(args.runs)], native, counts)
            except Exception as e:  # noqa: BLE001 -- a harness failure is reported like a finding
                found = [f"harness: {type(e).__name__}: {e}"]
            if found:
                failures += 1
                print(f"=== program seed {seed} ({out / name}.py, prog_{i})\n{body}" + "\n".join(found[:6]) + "\n",
                      flush=True)
        print(f"{name}: seeds {seeds[0]}..{seeds[-1]} done, {failures} failing so far", flush=True)
    print(f"runs per mode: {counts}; {failures} of {args.count} programs disagree", flush=True)
    return failures


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)
