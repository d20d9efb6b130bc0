"""Differential test of built native code: 200 random programs (tests/random_programs.py, drawn by
hypothesis) give the same results run as plain Python on eager tensors, traced in this process on the
generic executor, and as the built extension's native code (``concrete.native`` must be True).

The programs are module-level ``rt.function``s with an ``input_signature``, 50 to a module, built
by one ``python -m transpiler build`` of 4 modules. The C compiler's optimizer dominates the time:
the first module is compiled as users' code is (``-O3``), the other three with ``-O1`` (the same
generated code), which keeps the run near two minutes on two cores.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from random_programs import draw_programs, inputs, module_source, same_results  # noqa: E402

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]
MODULES, PER_MODULE = 4, 50


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(program bodies, built modules): builds the 4 modules once."""
    bodies = draw_programs(MODULES * PER_MODULE)
    root = tmp_path_factory.mktemp("random_programs")
    names = [f"rt_random_programs_{i}" + ("_o3" if i == 0 else "") for i in range(MODULES)]
    for i, name in enumerate(names):
        (root / f"{name}.py").write_text(module_source(bodies[i * PER_MODULE:(i + 1) * PER_MODULE]))
    renderer = f"{Path(__file__).resolve().parents[1] / 'random_programs.py'}:render_for_tests"
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "-j", "2", "--strict",
                           "--renderer", renderer],
                          cwd=PROJECT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    modules = []
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        for name in names:
            module = importlib.import_module(name)
            assert module.__file__.endswith(".so"), module.__file__
            modules.append(module)
    finally:
        sys.path.remove(str(root))
    return bodies, modules


def _values(result) -> tuple:
    return tuple(np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in result)


@pytest.mark.parametrize("module_index", range(MODULES))
def test_eager_equals_traced_equals_native(built, module_index):
    bodies, modules = built
    module = modules[module_index]
    for j in range(PER_MODULE):
        index = module_index * PER_MODULE + j
        native = getattr(module, f"prog_{j}")
        concrete = native.get_concrete_function()
        assert concrete.native, f"prog_{j} of {module.__name__} does not run native code"
        traced = rt.function(native.python_function, input_signature=native.input_signature)
        for seed in (index, index + 10_000):
            args = inputs(seed)
            where = f"program {index} ({module.__name__}.prog_{j}):\n{bodies[index]}\ninputs {args}"
            eager = _values(native.python_function(*[rt.constant(a) for a in args]))
            same_results(eager, _values(traced(*args)), "traced (generic executor), " + where)
            same_results(eager, _values(native(*args)), "native, " + where)
            same_results(eager, _values(concrete(*args)), "native ConcreteFunction, " + where)
