"""Where a built module finds its variables: paths from the module's globals, written by the build after
tracing (``transpiler.codegen._variable_paths``) and followed on the first native call (``runtime.aot``)."""
from __future__ import annotations

import types

import numpy as np
import pytest

import runtime as rt
from runtime.aot import format_path, parse_path, resolve_path, resolve_variable
from transpiler.codegen import PATH_DEPTH, _variable_paths


@pytest.mark.parametrize("name, steps, text", [
    ("model", [("attr", "layers"), ("item", 0), ("attr", "kernel")], "model.layers[0].kernel"),
    ("opt", [("attr", "_slots"), ("item", "m"), ("item", 2)], "opt._slots['m'][2]"),
    ("odd", [("item", "a'b\"c]")], "odd['a\\'b\"c]']"),
    ("v", [], "v"),
])
def test_paths_format_and_parse_back(name, steps, text):
    assert format_path(name, steps) == text
    assert parse_path(text) == (name, steps)


@pytest.mark.parametrize("bad", ["", "1x", "a..b", "a[b]", "a[0", "a.b c"])
def test_a_malformed_path_is_an_error(bad):
    with pytest.raises(ValueError, match="not a variable path"):
        parse_path(bad)


class _Slots:
    def __init__(self):
        self._slots = {"m": [], "v": []}


def _module(**names):
    module = types.ModuleType("fake_built_module")
    vars(module).update(names)
    return module


def test_the_walk_follows_callables_lists_and_dicts_to_the_shortest_path():
    rt.keras.utils.set_random_seed(0)
    model = rt.keras.Sequential([rt.keras.layers.Dense(3), rt.keras.layers.Dense(2)])
    model.build((None, 4))
    assert callable(model)
    slots = _Slots()
    slots._slots["m"] += [rt.Variable(1.0), rt.Variable(2.0), rt.Variable(3.0)]
    second = model.layers[1]
    table = {"scale": rt.Variable(0.5), 7: rt.Variable(0.25)}
    module = _module(model=model, opt=slots, head=second, table=table, np=np, rt=rt)
    paths = _variable_paths(module)
    assert paths[id(model.layers[0].kernel)] == "model.layers[0].kernel"
    assert paths[id(second.bias)] == "head.bias"                       # shorter than model.layers[1].bias
    assert paths[id(slots._slots["m"][2])] == "opt._slots['m'][2]"
    assert paths[id(table["scale"])] == "table['scale']" and paths[id(table[7])] == "table[7]"
    for variable_id, path in paths.items():
        assert id(resolve_path(vars(module), path)) == variable_id


def test_the_walk_is_bounded():
    deep = rt.Variable(1.0)
    holder = deep
    for _ in range(PATH_DEPTH + 1):
        holder = [holder]
    shallow = rt.Variable(2.0)
    paths = _variable_paths(_module(deep=holder, shallow=[[shallow]]))
    assert id(deep) not in paths and paths[id(shallow)] == "shallow[0][0]"


class _Handle:
    def __init__(self, path, created=None, name="v"):
        self.path, self.created, self.name = path, created, name


def test_a_variable_the_trace_created_is_created_again_at_its_path():
    slots = _Slots()
    namespace = {"opt": slots, "box": types.SimpleNamespace()}
    created = {"value": np.float32(4.0), "trainable": False}
    made = resolve_variable(namespace, _Handle("opt._slots['m'][2]", created))
    assert slots._slots["m"][2] is made and float(made.numpy()) == 4.0 and not made.trainable
    assert resolve_variable(namespace, _Handle("opt._slots['m'][2]", created)) is made     # found the next time
    attr = resolve_variable(namespace, _Handle("box.count", created))
    assert namespace["box"].count is attr


def test_a_missing_variable_is_a_clear_error():
    namespace = {"box": types.SimpleNamespace()}
    with pytest.raises(RuntimeError, match=r"box\.gone.*does not exist"):
        resolve_variable(namespace, _Handle("box.gone"))
    with pytest.raises(RuntimeError, match="what should hold it does not exist"):
        resolve_variable(namespace, _Handle("nothing.here['k']", {"value": np.float32(1), "trainable": True}))
