"""Native code checks run-time sizes like the generic executor: bad sizes raise, never read out of bounds.

Every op that indexes or broadcasts is called natively with run-time sizes that do not fit, in a
subprocess (a segfault fails the test instead of killing pytest). Each call must raise an
``InvalidArgumentError`` that names the op and the user's line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.build

PROJECT = Path(__file__).resolve().parents[2]

# Each case's op is on the line marked ``# case: NAME``.
PROGRAMS = '''
import runtime as rt

V = rt.TensorSpec([None], rt.float32)
M = rt.TensorSpec([None, None], rt.float32)
I = rt.TensorSpec([], rt.int32)
state = rt.Variable(rt.zeros([3]))


@rt.function(input_signature=[V, V])
def broadcast(w, x):
    return w + x  # case: broadcast


@rt.function(input_signature=[V, rt.TensorSpec([None], rt.int32)])
def gather(x, i):
    return rt.gather(x, i) * 2.0  # case: gather


@rt.function(input_signature=[V, I])
def index(x, i):
    return x[i] + 1.0  # case: index


@rt.function(input_signature=[V])
def reshape(x):
    return rt.reshape(x, [3, 2])  # case: reshape


@rt.function(input_signature=[M, M])
def concat(a, b):
    return rt.concat([a, b], axis=0)  # case: concat


@rt.function(input_signature=[V, V])
def stack(a, b):
    return rt.stack([a, b])  # case: stack


@rt.function(input_signature=[M, M])
def matmul(a, b):
    return rt.matmul(a, b)  # case: matmul


@rt.function(input_signature=[rt.TensorSpec([None, None, None], rt.float32)] * 2)
def batched(a, b):
    return rt.matmul(a, b)  # case: batched


@rt.function(input_signature=[M])
def squeeze(x):
    return rt.squeeze(x, axis=[1]) * 2.0  # case: squeeze


@rt.function(input_signature=[M])
def unstack(x):
    a, b = rt.unstack(x, num=2)  # case: unstack
    return a - b


@rt.function(input_signature=[V])
def assign(x):
    state.assign(x)  # case: assign
    return state.read_value()


@rt.function(input_signature=[V, I])
def write(x, i):
    ta = rt.TensorArray(rt.float32, size=2)
    ta = ta.write(i, x)  # case: write
    return ta.stack()


@rt.function(input_signature=[V, I])
def read(x, i):
    ta = rt.TensorArray(rt.float32, size=2).write(0, x).write(1, x)
    return ta.read(i)  # case: read


@rt.function(input_signature=[I])
def fill(n):
    return rt.fill([n, 2], 1.0)  # case: fill


@rt.function(input_signature=[I])
def overflow(n):
    return rt.reduce_sum(rt.ones([n, n, n, n]))  # case: overflow


@rt.function(input_signature=[I, I])
def range_(n, d):
    return rt.range(0, n, d)  # case: range_


@rt.function(input_signature=[rt.TensorSpec([None], rt.int32), rt.TensorSpec([None], rt.int32)])
def divide(a, b):
    return a // b  # case: divide

'''

OP_TYPES = {"broadcast": "AddV2", "gather": "GatherV2", "index": "StridedSlice", "reshape": "Reshape",
            "concat": "ConcatV2", "stack": "Pack", "matmul": "MatMul", "batched": "MatMul", "squeeze": "Squeeze",
            "unstack": "Unpack", "assign": "AssignVariableOp", "write": "TensorListSetItem",
            "read": "TensorListGetItem", "fill": "Fill", "overflow": "Fill", "range_": "Range", "divide": "FloorDiv"}

CALLS = {
    "broadcast": "rt.ones([3]), rt.ones([1000000])",
    "gather": "rt.ones([3]), rt.constant([0, 3000000])",
    "index": "rt.ones([3]), rt.constant(-4)",
    "reshape": "rt.ones([5]),",
    "concat": "rt.ones([2, 3]), rt.ones([2, 4])",
    "stack": "rt.ones([3]), rt.ones([200000])",
    "matmul": "rt.ones([2, 3]), rt.ones([4, 2])",
    "batched": "rt.ones([2, 2, 3]), rt.ones([3, 3, 2])",
    "squeeze": "rt.ones([2, 3]),",
    "unstack": "rt.ones([3, 2]),",
    "assign": "rt.ones([4]),",
    "write": "rt.ones([3]), rt.constant(2)",
    "read": "rt.ones([3]), rt.constant(5)",
    "fill": "rt.constant(-1),",
    "overflow": "rt.constant(65536),",
    "range_": "rt.constant(5), rt.constant(0)",
    "divide": "rt.constant([4, 5]), rt.constant([2, 0])",
}

RUNNER = '''
import json, sys
import runtime as rt
import rt_bounds_programs as m
for name, args in {calls!r}.items():
    function = getattr(m, name)
    assert function.get_concrete_function().native, name
    print(json.dumps({{"case": name, "started": True}}), flush=True)
    try:
        function(*eval(args))
        outcome = {{"case": name, "error": None}}
    except Exception as e:
        outcome = {{"case": name, "error": type(e).__name__, "message": str(e)}}
    print(json.dumps(outcome), flush=True)
'''


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    (root / "rt_bounds_programs.py").write_text(PROGRAMS)
    env = dict(os.environ)
    env.pop("RT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "transpiler", "build", str(root), "--strict"], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(PROJECT), env.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(RUNNER.format(calls=CALLS))], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    done = {r["case"]: r for r in lines if "started" not in r}
    started = [r["case"] for r in lines if "started" in r]
    assert run.returncode == 0, f"the process died (exit {run.returncode}) in case {started[-1:]}: {run.stderr[-2000:]}"
    return done


def _line_of(case: str) -> int:
    for number, line in enumerate(PROGRAMS.splitlines(), 1):
        if line.endswith(f"# case: {case}"):
            return number
    raise KeyError(case)


@pytest.mark.parametrize("case", sorted(CALLS))
def test_bad_runtime_sizes_raise_naming_the_op_and_line(results, case):
    result = results[case]
    assert result["error"] == "InvalidArgumentError", result
    message = result["message"]
    op_type = OP_TYPES[case]
    assert message.startswith(f"{op_type}: "), message
    assert f"({op_type}) created at File " in message, message
    assert f"rt_bounds_programs.py\", line {_line_of(case)}," in message, message
