"""The kernel library's thread choice for one long parallel region (``rt_region_threads``), compiled and run in C."""
from __future__ import annotations

import pytest
from c_checks import level_flags, run_check

pytestmark = pytest.mark.build


def test_a_long_region_takes_the_threads_the_settings_ask_for_and_a_short_one_those_the_load_left(tmp_path):
    run_check("region_threads_check", tmp_path / "region_threads_check", level_flags(None), timeout=60)
