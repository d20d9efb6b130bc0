"""The jit cache key: a canonical hash of the optimized graph, the same in every process (no object ids)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import runtime as rt
from runtime.optimizer import optimize
from transpiler import jit

PROJECT = Path(__file__).resolve().parents[3]

PROGRAM = '''
import runtime as rt
from runtime.optimizer import optimize
from transpiler import jit

v = rt.Variable([1.0, 2.0])


def f(x):
    v.assign_add(x)
    total = rt.constant(0.0)
    for i in rt.range(rt.size(x)):
        total += x[i] * 2.0
    return total + rt.reduce_sum(v)


graph = optimize(rt.function(f).get_concrete_function(rt.TensorSpec([2], rt.float32)).graph)
print(jit.graph_hash(graph))
'''


def _hash_in_new_process(tmp_path) -> str:
    path = tmp_path / "key_program.py"
    path.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=str(PROJECT), PYTHONHASHSEED="random")
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_graph_hash_is_the_same_in_every_process(tmp_path):
    first, second = _hash_in_new_process(tmp_path), _hash_in_new_process(tmp_path)
    assert first == second and len(first) == 64


def _graph(scale: float, shape=(2,)):
    return optimize(rt.function(lambda x: x * scale + 1.0, autograph=False)
                    .get_concrete_function(rt.TensorSpec(shape, rt.float32)).graph)


def test_graph_hash_follows_what_the_code_depends_on():
    assert jit.graph_hash(_graph(2.0)) == jit.graph_hash(_graph(2.0))
    assert jit.graph_hash(_graph(2.0)) != jit.graph_hash(_graph(3.0)), "constants by value"
    assert jit.graph_hash(_graph(2.0)) != jit.graph_hash(_graph(2.0, (3,))), "static shapes"
    assert jit.graph_hash(_graph(2.0)) != jit.graph_hash(_graph(2.0, (None,)))


def test_cache_dir_follows_rt_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("RT_CACHE_DIR", str(tmp_path))
    assert jit.cache_dir() == tmp_path / "jit"
    monkeypatch.delenv("RT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jit.cache_dir() == tmp_path / "xdg" / "rt" / "jit"
