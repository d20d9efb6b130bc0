"""Hypothesis: small random programs with tensor control flow give the same result eagerly and traced."""
import atexit
import importlib.util
import itertools
import os
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import runtime as rt

VARS = ["a", "b", "c"]
_counter = itertools.count()
_dir = tempfile.mkdtemp(prefix="rt_generated_")
atexit.register(shutil.rmtree, _dir, True)


@st.composite
def expressions(draw):
    v = draw(st.sampled_from(VARS))
    k = draw(st.integers(1, 5))
    return draw(st.sampled_from([f"{v} + {k}", f"{v} - {k}", f"({v} * 3 + x) % 23", f"x + {v}", f"{k}"]))


@st.composite
def conditions(draw):
    v = draw(st.sampled_from(VARS + ["x"]))
    k = draw(st.integers(0, 6))
    return draw(st.sampled_from([f"{v} > {k}", f"{v} % 2 == 0", f"{v} < {k} and x > 1", f"not {v} > {k}"]))


@st.composite
def blocks(draw, depth, in_loop):
    n = draw(st.integers(1, 3))
    lines = []
    for _ in range(n):
        kinds = ["assign", "assign"]
        if depth < 3:
            kinds += ["if", "for", "while"]
        if in_loop:
            kinds += ["break", "continue"]
        if depth > 0:
            kinds += ["return"]
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            lines.append(f"{draw(st.sampled_from(VARS))} = {draw(expressions())}")
        elif kind == "if":
            lines.append(f"if {draw(conditions())}:")
            lines += ["    " + s for s in draw(blocks(depth + 1, in_loop))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + s for s in draw(blocks(depth + 1, in_loop))]
        elif kind == "for":
            i = f"i{next(_counter)}"
            lines.append(f"for {i} in rt.range(x % 4):")
            lines.append(f"    a = a + {i}")
            lines += ["    " + s for s in draw(blocks(depth + 1, True))]
        elif kind == "while":
            w = f"w{next(_counter)}"
            lines.append(f"{w} = rt.constant(0)")
            lines.append(f"while {w} < x % 3:")
            lines.append(f"    {w} += 1")
            lines += ["    " + s for s in draw(blocks(depth + 1, True))]
        elif kind in ("break", "continue"):
            lines.append(f"if {draw(conditions())}:")
            lines.append(f"    {kind}")
        else:
            lines.append(f"if {draw(conditions())}:")
            lines.append(f"    return {draw(st.sampled_from(VARS))} % 1000")
    return lines


@st.composite
def programs(draw):
    body = ["a = x * 0", "b = x * 0 + 1", "c = x * 0 + 2"] + draw(blocks(0, False)) + ["return (a + b + c) % 1000"]
    return "import runtime as rt\n\ndef f(x):\n" + "".join(f"    {line}\n" for line in body)


def _load(source):
    path = os.path.join(_dir, f"prog_{next(_counter)}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def _check(source, x):
    fn = _load(source)
    eager = fn(rt.constant(x))
    graph = rt.function(fn)(rt.constant(x))
    value = lambda v: np.asarray(v.numpy() if hasattr(v, "numpy") else v)  # noqa: E731
    assert np.array_equal(value(eager), value(graph)), source


# A program takes about 0.4 s to convert and trace: 10 with the fast unit tests, 30 more on the slow side
# (marked ``build``, which CI runs too).
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(programs(), st.integers(0, 7))
def test_eager_equals_graph(source, x):
    _check(source, x)


@pytest.mark.build
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(programs(), st.integers(0, 7))
def test_eager_equals_graph_bulk(source, x):
    _check(source, x)
