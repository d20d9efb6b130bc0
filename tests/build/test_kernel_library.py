"""The kernel library's archive (transpiler/build/kernel_library.py): built modules link the GEMM's kernels
compiled once (by the install, or into the cache for flags the install did not foresee) instead of compiling
them again, and inline them when the archive cannot be made. Every way gives numpy's products."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from transpiler.build import kernel_library
from transpiler.build.toolchain import compiler_command, compiler_of
from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

MODULE = '''
import runtime as rt


@rt.function(input_signature=[rt.TensorSpec([None, None], rt.float32), rt.TensorSpec([None, None], rt.float32)])
def product(a, b):
    return rt.matmul(a, b)


@rt.function(input_signature=[rt.TensorSpec([None, 64], rt.float64), rt.TensorSpec([64, 48], rt.float64)])
def dense(x, w):
    return rt.nn.relu(rt.matmul(x, w))
'''

CHECK = '''
import numpy as np
import {name} as m

rng = np.random.default_rng(0)
for m_, k, n in [(1, 300, 70), (70, 300, 1), (37, 129, 45), (256, 300, 200), (3, 5, 7)]:
    a = rng.standard_normal((m_, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = m.product(a, b).numpy()
    assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-4), (m_, k, n, np.abs(got - a @ b).max())
x, w = rng.standard_normal((100, 64)), rng.standard_normal((64, 48))
assert np.allclose(m.dense(x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-12, atol=1e-12)
assert m.product.get_concrete_function(a, b).native and m.dense.get_concrete_function(x, w).native
print("ok")
'''


def _build(tmp_path: Path, name: str, env: dict) -> str:
    """Build module ``name`` (MODULE) under tmp_path, check its products in a new process; returns its build log."""
    source = tmp_path / "src" / f"{name}.py"
    source.parent.mkdir(exist_ok=True)
    source.write_text(MODULE)
    subprocess.run([sys.executable, "-m", "transpiler", "build", str(source)], env=env, cwd=tmp_path, check=True,
                   capture_output=True, text=True, timeout=600)
    check = subprocess.run([sys.executable, "-c", textwrap.dedent(CHECK.format(name=name))], env=env,
                           cwd=source.parent, capture_output=True, text=True, timeout=300)
    assert check.stdout.strip() == "ok", check.stdout + check.stderr
    (log,) = (Path(env["RT_CACHE_DIR"]) / "build").glob(f"*/{name}.log")
    return log.read_text()


def _env(tmp_path: Path, **extra: str) -> dict:
    env = dict(os.environ, RT_CACHE_DIR=str(tmp_path / "cache"), **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT), env.get("PYTHONPATH")) if p)
    env.pop("RT_DEBUG", None)
    return env


def test_a_module_links_the_installed_archive(tmp_path):
    driver, flags = compiler_command()
    installed = Path(KERNELS_DIR) / kernel_library.INSTALLED / kernel_library.archive_name(
        compiler_of(driver), flags + list(COMPILE_ARGS), KERNELS_DIR)
    if not installed.is_file():
        pytest.skip(f"the install compiled no archive for these flags ({installed.name})")
    log = _build(tmp_path, "rt_kl_installed", _env(tmp_path))
    assert kernel_library.EXTERN_FLAG in log and str(installed) in log, log
    assert "compiling the kernel library" not in log


def test_the_cache_compiles_an_archive_the_install_lacks_once(tmp_path):
    # another CFLAGS: flags the install did not foresee
    env = _env(tmp_path, CFLAGS=(os.environ.get("CFLAGS", "") + " -DRT_KL_TEST_UNFORESEEN=1").strip())
    first = _build(tmp_path, "rt_kl_first", env)
    assert "compiling the kernel library into" in first and kernel_library.EXTERN_FLAG in first, first
    (archive,) = (tmp_path / "cache" / "kernels").glob("librt_kernels-*.a")
    second = _build(tmp_path, "rt_kl_second", env)
    assert "compiling the kernel library" not in second and str(archive) in second, second


def test_a_module_inlines_the_kernels_when_the_archive_cannot_be_made(tmp_path):
    env = _env(tmp_path, CFLAGS=(os.environ.get("CFLAGS", "") + " -DRT_KL_TEST_NO_AR=1").strip(), AR="false")
    log = _build(tmp_path, "rt_kl_inline", env)
    assert "the kernel library was not compiled" in log and kernel_library.EXTERN_FLAG not in log, log
    assert not list((tmp_path / "cache" / "kernels").glob("*.a"))


def test_the_archive_name_follows_the_flags_and_the_sources(tmp_path):
    for name in ("rt_kernels.h", kernel_library.SOURCE):
        (tmp_path / name).write_text(f"/* {name} */\n")
    base = kernel_library.archive_name(["gcc"], ["-O3"], tmp_path)
    assert base == kernel_library.archive_name(["gcc"], ["-O3"], tmp_path)
    assert base != kernel_library.archive_name(["gcc"], ["-O3", "-march=x86-64-v3"], tmp_path)
    (tmp_path / "rt_kernels.h").write_text("/* changed */\n")
    assert base != kernel_library.archive_name(["gcc"], ["-O3"], tmp_path)
