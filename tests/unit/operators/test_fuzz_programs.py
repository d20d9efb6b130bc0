"""Differential fuzzing in process: 100 typed random programs (tests/fuzz_programs.py, seeds 0..99) give the
same results run eagerly, traced on the generic executor and on the reference executor, on argument sets of
sizes 0 to 17, contiguous or strided (the first batch of 25 with the fast unit tests, the other three on the
slow side, marked ``build``, which CI runs too); and a few programs of each kind of ``fuzz_programs.KINDS`` (Variables
updated in tensor control flow, gradients also against central differences, dataset loops and iterators,
retracing with shapes and dtypes nobody traced, py_function in loops, axes of size 1 and 0, axis-1 gathers).
tests/build/test_fuzz_programs_native.py adds built native code; ``python tests/fuzz_programs.py --help``
runs thousands."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import fuzz_programs

PROGRAMS, PER_MODULE = 100, 25
PER_KIND = 2               # programs of each kind (seeds chosen round robin, as the command line does)


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


@pytest.mark.parametrize("kind", [k for k in fuzz_programs.KINDS if k != "general"])
def test_each_kind_agrees_in_every_mode(kind, tmp_path):
    kinds = list(fuzz_programs.KINDS)
    seeds = [s for s in range(PER_KIND * len(kinds)) if fuzz_programs.kind_of(s, kinds) == kind]
    bodies = [fuzz_programs.program(seed, max_depth=2, width=2, kind=kind) for seed in seeds]
    path = tmp_path / f"rt_fuzz_kind_{kind}.py"
    path.write_text(fuzz_programs.module_source(bodies, [kind] * len(seeds)))
    module = fuzz_programs.load(path, path.stem)
    failures = []
    for i, (seed, body) in enumerate(zip(seeds, bodies)):
        found = fuzz_programs.run_modes(module, i, (seed,), finite_differences=i == 0)
        if found:
            failures.append(f"{kind} program seed {seed}:\n{body}" + "\n".join(found))
    assert not failures, "\n\n".join(failures)
