"""Generated modules call the convolution and pooling kernels that runtime._native compiled (through the table
of runtime/kernels/rt_shared.h) instead of compiling their own copy: the same results, no copy of those kernels
in the module, and a clear error for a module compiled against the kernels of other sources. (The GEMM is
compiled into each module, specialised to each product's literal sizes.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import OTHER_KERNELS, OWN_KERNELS, PROJECT, import_built

import runtime as rt
from runtime import _native
from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR
from transpiler.codegen.flags import kernels_hash, shared_kernel_flags

pytestmark = pytest.mark.build

SOURCE = '''\
import runtime as rt


@rt.function(input_signature=[rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, None], rt.float32)])
def product(a, b):
    return rt.nn.relu(rt.matmul(a, b)) + 1.0


@rt.function(input_signature=[rt.TensorSpec([None, 12, 12, 3], rt.float32), rt.TensorSpec([3, 3, 3, 8], rt.float32)])
def conv_pool(x, f):
    return rt.nn.max_pool2d(rt.nn.conv2d(x, f, strides=1, padding="SAME"), 2, 2, "VALID")
'''

KERNEL_SYMBOLS = ("rt_conv2d_ws_float32", "rt_conv2d_direct_float32", "rt_max_pool_float32")


def _build(root: Path, name: str, renderer: str | None = None):
    (root / f"{name}.py").write_text(SOURCE)
    env = {k: v for k, v in os.environ.items() if k != "RT_DEBUG"}
    command = [sys.executable, "-m", "transpiler", "build", str(root)] + (["--renderer", renderer] if renderer else [])
    proc = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (extension,) = root.glob(f"{name}.*.so")
    return extension


def _symbols(extension: Path) -> set[str]:
    """The functions the extension defines (code symbols: a shared kernel's name is a data symbol there, the
    pointer to runtime._native's function)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("binutils' nm is not installed")
    lines = subprocess.run([nm, str(extension)], capture_output=True, text=True, check=True).stdout.splitlines()
    return {line.split()[-1].split(".")[0] for line in lines if len(line.split()) == 3 and line.split()[1] in "tT"}


def _inputs():
    rng = np.random.default_rng(0)
    return ((rng.standard_normal((100, 70)).astype(np.float32), rng.standard_normal((70, 90)).astype(np.float32)),
            (rng.standard_normal((2, 12, 12, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 8)).astype(np.float32)))


def _check_against_eager(module) -> None:
    for function, args in zip((module.product, module.conv_pool), _inputs()):
        assert function.get_concrete_function().native
        native = function(*args).numpy()
        rt.config.run_functions_eagerly(True)
        try:
            eager = function(*args).numpy()
        finally:
            rt.config.run_functions_eagerly(False)
        np.testing.assert_allclose(native, eager, rtol=1e-5, atol=1e-5)


def test_the_build_shares_the_installed_kernels():
    """In an up-to-date install runtime._native's kernels are those of the headers, so modules call them."""
    installed, _ = _native.shared_kernels()
    assert installed == kernels_hash(KERNELS_DIR), "runtime._native is older than the kernel headers: reinstall rt"
    assert "-DRT_SHARED_KERNELS" in COMPILE_ARGS
    assert shared_kernel_flags("0123456789abcdef", KERNELS_DIR) == []        # other sources: no sharing
    assert shared_kernel_flags(None, KERNELS_DIR) == []                      # a runtime._native without a table


def test_a_module_calls_the_shared_kernels_and_has_no_copy_of_them(tmp_path):
    extension = _build(tmp_path, "rt_shared_kernels_mod")
    symbols = _symbols(extension)
    assert not [s for s in KERNEL_SYMBOLS if s in symbols], "the module compiled its own kernels"
    _check_against_eager(import_built(tmp_path, "rt_shared_kernels_mod"))


def test_a_module_compiled_with_its_own_kernels_works_the_same(tmp_path):
    extension = _build(tmp_path, "rt_own_kernels_mod", OWN_KERNELS)
    assert any(s in _symbols(extension) for s in KERNEL_SYMBOLS)
    _check_against_eager(import_built(tmp_path, "rt_own_kernels_mod"))


def test_a_module_for_other_kernels_is_a_clear_import_error(tmp_path):
    _build(tmp_path, "rt_other_kernels_mod", OTHER_KERNELS)
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import rt_other_kernels_mod"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT)), check=False)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "0123456789abcdef" in proc.stderr and "rebuild the module" in proc.stderr
