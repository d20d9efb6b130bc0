"""Differential fuzzing in process: 100 typed random programs (tests/fuzz_programs.py, seeds 0..99) give the
same results run eagerly, traced on the generic executor and on the reference executor, on argument sets of
sizes 0 to 17, contiguous or strided. tests/build/test_fuzz_programs_native.py adds built native code;
``python tests/fuzz_programs.py --help`` runs thousands."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import fuzz_programs

PROGRAMS, PER_MODULE = 100, 25


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """The programs as 4 plain Python modules of 25 (bodies, module) each."""
    root = tmp_path_factory.mktemp("fuzz_programs")
    loaded = []
    for start in range(0, PROGRAMS, PER_MODULE):
        bodies = [fuzz_programs.program(seed, max_depth=2, width=3) for seed in range(start, start + PER_MODULE)]
        path = root / f"rt_fuzz_unit_{start}.py"
        path.write_text(fuzz_programs.module_source(bodies))
        loaded.append((bodies, fuzz_programs.load(path, path.stem)))
    return loaded


@pytest.mark.parametrize("batch", range(PROGRAMS // PER_MODULE))
def test_eager_equals_traced_equals_reference(modules, batch):
    bodies, module = modules[batch]
    failures = []
    for i, body in enumerate(bodies):
        seed = batch * PER_MODULE + i
        found = fuzz_programs.run_modes(module, i, (seed, seed + 100_000))
        if found:
            failures.append(f"program seed {seed}:\n{body}" + "\n".join(found))
    assert not failures, "\n\n".join(failures)
