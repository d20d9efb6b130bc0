"""The kernel library's thread choice for one long parallel region (``rt_region_threads``), compiled and run in C."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from transpiler.codegen import COMPILE_ARGS, KERNELS_DIR, LINK_ARGS

pytestmark = pytest.mark.build

SOURCE = Path(__file__).parent / "c" / "region_threads_check.c"


def test_a_long_region_takes_the_threads_the_settings_ask_for_and_a_short_one_those_the_load_left(tmp_path):
    binary = tmp_path / "region_threads_check"
    cc = os.environ.get("CC", "gcc")
    subprocess.run([cc, *COMPILE_ARGS, "-Wall", "-Werror", "-Wno-unused-function", "-I", KERNELS_DIR, str(SOURCE),
                    "-o", str(binary), *LINK_ARGS], check=True, capture_output=True, text=True)
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
