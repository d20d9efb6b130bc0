"""Hypothesis: random tensor programs (tests/random_programs.py) give the same results run as plain
Python on eager tensors, traced on the generic executor, and on the reference executor. No C compiler
needed; tests/build/test_random_programs_native.py adds built native code for 200 of them."""
from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings

import runtime as rt
from runtime import executor

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from random_programs import HEADER, function_source, inputs, programs, same_results  # noqa: E402

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


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate, Phase.shrink])
@given(programs(max_depth=2, width=2))
def test_eager_equals_traced(tmp_path_factory, body):
    prog = _load(tmp_path_factory.getbasetemp(), body)
    concrete = prog.get_concrete_function()
    for seed in (0, 1):
        args = inputs(seed)
        eager = _as_tuple(prog.python_function(*[rt.constant(a) for a in args]))
        where = f"program:\n{body}\ninputs {args}"
        same_results(eager, _as_tuple(prog(*args)), "traced (generic executor), " + where)
        same_results(eager, tuple(executor.run_graph(concrete.graph, list(args))), "reference executor, " + where)
