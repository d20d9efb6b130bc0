"""``rt.function``s pickle by reference (module and name), so a worker process re-imports their module."""
from __future__ import annotations

import pickle
import sys
import textwrap

import pytest

MODULE = """
    import runtime as rt


    @rt.function
    def double(x):
        return x + x


    alias = rt.function(lambda x: x * 3)


    class Model(rt.Module):
        @rt.function
        def __call__(self, x):
            return x
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "rt_pickle_mod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    import rt_pickle_mod
    yield rt_pickle_mod
    sys.modules.pop("rt_pickle_mod", None)


def test_functions_pickle_by_module_and_name(module):
    payload = pickle.dumps(module.double)
    assert b"rt_pickle_mod" in payload and b"double" in payload and len(payload) < 150
    assert pickle.loads(payload) is module.double
    assert pickle.loads(pickle.dumps(module.alias)) is module.alias          # found under its module attribute
    assert pickle.loads(pickle.dumps(module.Model.__call__)) is module.Model.__call__


def test_unpickling_imports_the_module(module):
    payload = pickle.dumps(module.double)
    sys.modules.pop("rt_pickle_mod")
    restored = pickle.loads(payload)
    assert restored is sys.modules["rt_pickle_mod"].double and restored is not module.double


def test_what_cannot_be_found_again_is_a_clear_error(module):
    import runtime as rt
    with pytest.raises(pickle.PicklingError, match="method bound to an instance"):
        pickle.dumps(module.Model().__call__)
    local = rt.function(lambda x: x)
    local.python_function.__module__ = "rt_pickle_mod"
    with pytest.raises(pickle.PicklingError, match="not a module-level attribute .* of module 'rt_pickle_mod'"):
        pickle.dumps(local)
