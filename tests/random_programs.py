"""Random tensor programs for the differential tests: eager == traced == built native.

``programs()`` is a hypothesis strategy of function bodies over a fixed signature
``(x: float32[n], v: int32[n], m: float32[n, 3], k: int32[])``: elementwise ops, broadcasting,
reductions, gather, matmul, slicing, casts, tensor ``if``/``while``/``for`` with ``break``,
``continue`` and ``return`` (also inside loops), Python loops that unroll, chained comparisons,
``in`` on tensors and a TensorArray. Every statement keeps each variable's dtype and shape, and
every float value stays an integer below 2**24 in magnitude (clipped after each assignment), so
all modes must agree exactly on control flow; the returned tuple also holds a transcendental
expression, compared with a tolerance.

``module_source(bodies)`` renders programs ``prog_0 ... prog_N`` as one module of module-level
``rt.function``s with an ``input_signature``; ``inputs(seed)`` draws argument sets.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

HEADER = '''\
import runtime as rt

F = rt.TensorSpec([None], rt.float32)
I = rt.TensorSpec([None], rt.int32)
M = rt.TensorSpec([None, 3], rt.float32)
K = rt.TensorSpec([], rt.int32)
W = rt.constant([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0], [2.0, 1.0, 0.0]])
ROW = rt.constant([1.0, -2.0, 3.0])
'''

PROLOGUE = [
    "y = x * 2.0 - 1.0",
    "s = rt.reduce_sum(x)",
    "a = rt.reduce_max(v)",
    "b = k + 1",
    "ta = rt.TensorArray(rt.float32, size=0, dynamic_size=True)",
    "ta = ta.write(0, s)",
]

RESULT = ("x + y, s + rt.reduce_sum(ta.stack()), a * 10 + b, v, m, "
          "rt.tanh(x * 0.01) + rt.sigmoid(rt.reduce_sum(m, axis=1) * 0.01)")

FLOAT_LIMIT, INT_LIMIT = "1000.0", "1000"

# Expressions per variable type; {i} is an int32 scalar in scope (a loop index or `a`).
VECTOR_F = ["x + y", "x - y * 2.0", "rt.maximum(x, y)", "rt.minimum(x, -y)", "rt.abs(x) - 3.0", "x * s",
            "rt.floormod(x, 7.0)", "rt.floordiv(y, 3.0)", "rt.cast(v, rt.float32) + x",
            "rt.gather(x, rt.floormod(v + {i}, rt.size(x)))", "rt.reduce_sum(m, axis=1)", "rt.where(v > {i}, x, y)",
            "rt.cumsum(x)", "x[::-1] + 1.0", "rt.square(rt.sign(x)) * y", "rt.nn.relu(x - s)",
            "rt.reduce_max(m, axis=1) - rt.reduce_min(m, axis=1)", "(x + y) % 5.0 - x // 4.0",
            "-x + rt.cast({i}, rt.float32)"]
SCALAR_F = ["rt.reduce_sum(x)", "rt.reduce_max(y) - s", "s + rt.reduce_min(m)",
            "rt.reduce_sum(rt.matmul(rt.transpose(m), m))", "s * 2.0 - rt.cast({i}, rt.float32)",
            "rt.cast(rt.reduce_sum(v), rt.float32)", "x[0] + s", "s - y[-1]", "rt.reduce_prod(rt.sign(x)) * s",
            "rt.reduce_sum(rt.gather(y, [0, 0]))"]
SCALAR_I = ["a + b", "a - 1", "rt.reduce_sum(v) % 5", "rt.cast(rt.argmax(x), rt.int32)", "rt.size(x) + {i}",
            "rt.cast(s, rt.int32) % 11", "a * 2 % 7", "rt.maximum(a, b)", "k - {i}", "v[0] + {i}", "b // 2 - a % 3"]
VECTOR_I = ["v + {i}", "v * 2 - 1", "rt.floormod(v, 4)", "rt.floordiv(v, 3)", "rt.cast(x, rt.int32)",
            "rt.gather(v, rt.floormod(v, rt.size(v)))", "rt.where(x > y, v, -v)", "rt.abs(v) - {i}"]
MATRIX_F = ["m + rt.expand_dims(x, 1)", "m * ROW", "rt.matmul(m, W)", "m - s", "m[:, ::-1]",
            "rt.maximum(m, 0.0) - 1.0", "m + x[:, rt.newaxis] * 0.0 + rt.cast(rt.expand_dims(v, 1), rt.float32)",
            "rt.transpose(rt.transpose(m)) * 2.0"]

TYPES = {"x": VECTOR_F, "y": VECTOR_F, "s": SCALAR_F, "a": SCALAR_I, "b": SCALAR_I, "v": VECTOR_I, "m": MATRIX_F}
FLOATS = {"x", "y", "s", "m"}

CONDITIONS = ["a > b", "s > 0.0", "rt.reduce_sum(v) % 2 == 0", "rt.reduce_any(x > s)", "a < k and s < 50.0",
              "not a > 2", "b == a", "a in v", "0 < a < k", "rt.reduce_all(v >= 0) or b > 3", "{i} % 2 == 0",
              "{i} > a", "s >= rt.cast({i}, rt.float32)"]
BOUNDS = ["k", "rt.minimum(k, 3)", "rt.size(x)", "a % 4"]


class _Names:
    def __init__(self):
        self.counter = itertools.count()

    def new(self, base):
        return f"{base}{next(self.counter)}"


@st.composite
def _assignment(draw, index):
    var = draw(st.sampled_from(sorted(TYPES)))
    expr = draw(st.sampled_from(TYPES[var])).format(i=index)
    limit = FLOAT_LIMIT if var in FLOATS else INT_LIMIT
    return [f"{var} = rt.clip_by_value({expr}, -{limit}, {limit})"]


@st.composite
def _block(draw, names, depth, loop_index, in_loop, jumps=True, max_depth=2, width=3):
    """Statements at nesting ``depth``; ``jumps=False`` inside a Python loop, which unrolls and so cannot
    stop on a tensor condition (a `break`/`return` there is an error, as in TensorFlow)."""
    lines = []

    def inner(index, loop, may_jump):
        return ["    " + s for s in draw(_block(names, depth + 1, index, loop, may_jump, max_depth, width))]
    for _ in range(draw(st.integers(1, width))):
        kinds = ["assign", "assign", "ta"]
        if depth < max_depth:
            kinds += ["if", "for", "while", "pyfor"]
        if in_loop and jumps:
            kinds += ["break", "continue"]
        if jumps:
            kinds += ["return"]
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            lines += draw(_assignment(loop_index))
        elif kind == "ta":
            lines.append(f"ta = ta.write(ta.size(), s + rt.cast({loop_index}, rt.float32))")
        elif kind == "if":
            lines.append(f"if {draw(st.sampled_from(CONDITIONS)).format(i=loop_index)}:")
            lines += inner(loop_index, in_loop, jumps)
            if draw(st.booleans()):
                lines.append("else:")
                lines += inner(loop_index, in_loop, jumps)
        elif kind == "for":
            i = names.new("i")
            lines.append(f"for {i} in rt.range({draw(st.sampled_from(BOUNDS))}):")
            lines += inner(i, True, jumps)
        elif kind == "pyfor":
            j = names.new("j")
            lines.append(f"for {j} in range(2):")
            lines.append(f"    a = rt.clip_by_value(a + {j}, -{INT_LIMIT}, {INT_LIMIT})")
            lines += inner(loop_index, in_loop, False)
        elif kind == "while":
            w = names.new("w")
            lines.append(f"{w} = 0")
            lines.append(f"while {w} < rt.minimum(k, {draw(st.integers(1, 4))}):")
            lines.append(f"    {w} += 1")
            lines += inner(w, True, jumps)
        elif kind in ("break", "continue"):
            lines.append(f"if {draw(st.sampled_from(CONDITIONS)).format(i=loop_index)}:")
            lines.append(f"    {kind}")
        else:
            lines.append(f"if {draw(st.sampled_from(CONDITIONS)).format(i=loop_index)}:")
            lines.append(f"    return {RESULT}")
    return lines


@st.composite
def programs(draw, max_depth: int = 2, width: int = 3) -> str:
    """The body of one program (statements, one per line, not indented): blocks of 1 to ``width``
    statements, control flow nested up to ``max_depth`` deep (code size grows quickly with both)."""
    body = draw(_block(_Names(), 0, "a", False, True, max_depth, width))
    return "\n".join(PROLOGUE + body + [f"return {RESULT}"]) + "\n"


@functools.cache
def draw_programs(count: int) -> tuple[str, ...]:
    """``count`` distinct program bodies (``programs(max_depth=2, width=2)``), the same on every run: derandomized
    hypothesis draws, so that tests can split them into batches and a failure names a program that stays."""
    bodies: list[str] = []

    @settings(max_examples=3 * count, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(programs(max_depth=2, width=2))
    def collect(body):
        if body not in bodies and len(bodies) < count:
            bodies.append(body)
    collect()
    assert len(bodies) == count, f"hypothesis drew only {len(bodies)} distinct programs"
    return tuple(bodies)


def function_source(name: str, body: str, decorated: bool = True) -> str:
    head = "@rt.function(input_signature=[F, I, M, K])\n" if decorated else ""
    return head + f"def {name}(x, v, m, k):\n" + "".join(f"    {line}\n" for line in body.splitlines())


def module_source(bodies: list[str]) -> str:
    """One module defining ``prog_0 ... prog_N`` as rt.functions with an input_signature."""
    return HEADER + "".join("\n\n" + function_source(f"prog_{i}", body) for i, body in enumerate(bodies))


def inputs(seed: int) -> tuple:
    """One argument set (numpy arrays): n in 1..5, small integer values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    x = rng.integers(-5, 6, n).astype(np.float32)
    v = rng.integers(-5, 6, n).astype(np.int32)
    m = rng.integers(-3, 4, (n, 3)).astype(np.float32)
    k = np.int32(rng.integers(0, 6))
    return x, v, m, np.asarray(k)


def same_results(expected, actual, where: str) -> None:
    """Exact for integers and control flow, a few float32 ulps for the transcendental part."""
    assert isinstance(actual, tuple) and len(actual) == len(expected), where
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        assert e.shape == a.shape and e.dtype == a.dtype, f"{where}: output {i}: {e!r} vs {a!r}"
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=f"{where}: output {i}")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"{where}: output {i}")


def render_for_tests(module, source_path, module_name):
    """The real code generator, compiled with ``-O1`` unless the module's name ends with ``_o3``: the C
    compiler's optimizer dominates a build of many programs (a build renderer, ``--renderer FILE:NAME``)."""
    from transpiler.codegen import render_module
    rendered = render_module(module, source_path=source_path, module_name=module_name)
    if not module_name.endswith("_o3"):
        rendered.extra_compile_args = ["-O1" if a == "-O3" else a for a in rendered.extra_compile_args]
    return rendered
