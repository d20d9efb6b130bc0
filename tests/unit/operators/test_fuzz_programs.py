"""Differential fuzzing in process: 100 typed random programs (tests/fuzz_programs.py, seeds 0..99) give the
same results run eagerly, traced on the generic executor and on the reference executor, on argument sets of
sizes 0 to 17, contiguous or strided. The first batch of 25 runs with the fast unit tests, the other three on
the slow side (marked ``build``, which CI runs too). tests/build/test_fuzz_programs_native.py adds built
native code; ``python tests/fuzz_programs.py --help`` runs thousands."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import fuzz_programs

PROGRAMS, PER_MODULE = 100, 25


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """``modules(batch)``: the batch's 25 programs as a plain Python module: (bodies, module)."""
    root = tmp_path_factory.mktemp("fuzz_programs")

    def load(batch: int):
        start = batch * PER_MODULE
        bodies = [fuzz_programs.program(seed, max_depth=2, width=3) for seed in range(start, start + PER_MODULE)]
        path = root / f"rt_fuzz_unit_{start}.py"
        path.write_text(fuzz_programs.module_source(bodies))
        return bodies, fuzz_programs.load(path, path.stem)
    return load


@pytest.mark.parametrize("batch", [0] + [pytest.param(b, marks=pytest.mark.build)
                                        for b in range(1, PROGRAMS // PER_MODULE)])
def test_eager_equals_traced_equals_reference(modules, batch):
    bodies, module = modules(batch)
    failures = []
    for i, body in enumerate(bodies):
        seed = batch * PER_MODULE + i
        found = fuzz_programs.run_modes(module, i, (seed, seed + 100_000))
        if found:
            failures.append(f"program seed {seed}:\n{body}" + "\n".join(found))
    assert not failures, "\n\n".join(failures)
