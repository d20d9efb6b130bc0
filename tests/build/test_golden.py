"""The golden C (``tests/unit/codegen/golden``) is the code that gets compiled, and it runs right.

The golden programs are built as an extension module; the C functions the build generates for them
are the golden files (up to the function's name and the source path in messages), and each built
function gives eager's results.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import build_source

import runtime as rt
from transpiler.codegen import render_module

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]
GOLDEN = PROJECT / "tests" / "unit" / "codegen" / "golden"
NAME = "rt_golden_programs"

INPUTS = {
    "bias_relu": lambda: [rt.constant(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)),
                          rt.constant(np.array([0.5, -0.5, 1.0, 0.0], np.float32))],
    "double": lambda: [rt.constant(np.int32(21))],
    "chain": lambda: [rt.constant(np.linspace(-3, 3, 70001, dtype=np.float32))],
    "collatz": lambda: [rt.constant(np.arange(1, 200, dtype=np.int32))],
    "power": lambda: [rt.constant(np.arange(9, dtype=np.int32).reshape(3, 3) % 4 - 1), 3],
    "countdown": lambda: [rt.constant(np.int32(100))],
    "softmax": lambda: [rt.constant(np.linspace(-5, 5, 16 * 300, dtype=np.float32).reshape(300, 16))],
    "pairwise": lambda: [rt.constant(np.linspace(-1, 1, 30, dtype=np.float32).reshape(10, 3)),
                         rt.constant(np.linspace(2, -1, 21, dtype=np.float32).reshape(7, 3))],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    source = root / f"{NAME}.py"
    shutil.copyfile(GOLDEN / "programs.py", source)
    module = build_source(root, NAME, source.read_text())
    return root, module


def _rendered_header(root: Path) -> str:
    """The header the build generated (rendered again from the same source: the generator is deterministic)."""
    spec = importlib.util.spec_from_file_location(f"{NAME}_source", root / f"{NAME}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = render_module(module, str(root / f"{NAME}.py"), NAME)
    header = rendered.files[f"{NAME}_rt_native.h"]
    return header.replace(str(root / f"{NAME}.py"), "<golden>/programs.py")


def test_the_golden_c_is_what_the_build_compiles(built):
    root, _ = built
    header = _rendered_header(root)
    for name in INPUTS:
        golden = (GOLDEN / f"{name}.c").read_text()
        # the function and, for one with a guard, its fallback (``rt_fn_<name>_any``)
        found = [k for k in range(len(INPUTS))
                 if re.sub(rf"rt_fn_{name}(?=\(|_any\()", f"rt_fn_{k}", golden) in header]
        assert found, f"golden/{name}.c is not among the functions the build generated"


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_golden_programs_run_natively_like_eager(built, name):
    _, module = built
    function = getattr(module, name)
    args = INPUTS[name]()
    concrete = function.get_concrete_function(*args)
    assert concrete.native
    native = concrete(*[a for a in args if isinstance(a, rt.Tensor)]).numpy()
    rt.config.run_functions_eagerly(True)
    try:
        eager = function(*args).numpy()
    finally:
        rt.config.run_functions_eagerly(False)
    assert native.dtype == eager.dtype and native.shape == eager.shape
    np.testing.assert_allclose(native, eager, rtol=2e-6, atol=1e-6)
