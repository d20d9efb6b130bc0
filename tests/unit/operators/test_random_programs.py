"""Random tensor programs (tests/random_programs.py, 300 distinct derandomized hypothesis draws) give the same
results run as plain Python on eager tensors, traced on the generic executor, and on the reference executor.
No C compiler needed; tests/build/test_random_programs_native.py adds built native code for 200 of them.

The programs run in batches of 30: the first batch with the fast unit tests, the other nine on the slow side
(marked ``build``: ``python -m pytest -m build``, which CI runs too), since converting and tracing a program
takes about 0.2 s."""
from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from runtime import executor

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from random_programs import HEADER, draw_programs, function_source, inputs, same_results  # noqa: E402

PROGRAMS, PER_BATCH = 300, 30
_count = itertools.count()


def _load(tmp_dir: Path, body: str):
    path = tmp_dir / f"rt_random_program_{next(_count)}.py"
    path.write_text(HEADER + "\n\n" + function_source("prog", body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.prog


def _as_tuple(result):
    return tuple(np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in result)


@pytest.mark.parametrize("batch", [0] + [pytest.param(b, marks=pytest.mark.build)
                                        for b in range(1, PROGRAMS // PER_BATCH)])
def test_eager_equals_traced(tmp_path, batch):
    failures = []
    for index in range(batch * PER_BATCH, (batch + 1) * PER_BATCH):
        body = draw_programs(PROGRAMS)[index]
        prog = _load(tmp_path, body)
        concrete = prog.get_concrete_function()
        for seed in (0, 1):
            args = inputs(seed)
            where = f"program {index}:\n{body}\ninputs {args}"
            try:
                eager = _as_tuple(prog.python_function(*[rt.constant(a) for a in args]))
                same_results(eager, _as_tuple(prog(*args)), "traced (generic executor), " + where)
                same_results(eager, tuple(executor.run_graph(concrete.graph, list(args))),
                             "reference executor, " + where)
            except AssertionError as error:
                failures.append(str(error))
    assert not failures, "\n\n".join(failures)
