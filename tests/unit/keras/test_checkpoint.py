"""rt.train.Checkpoint / CheckpointManager / latest_checkpoint and Model.save_weights / load_weights: the on-disk
format, restoring into objects created later (TF's deferred restoration), mismatches, and a training run that
continues bit-identically in a fresh process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import runtime as rt

L = rt.keras.layers
PROJECT = Path(__file__).resolve().parents[3]


def _model(seed=0, units=3):
    rt.keras.utils.set_random_seed(seed)
    return rt.keras.Sequential([L.Dense(units, activation="relu"), L.BatchNormalization(), L.Dense(2)])


def _data(seed=0, n=24):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] > x[:, 1]).astype(np.int32)


def _step_fn(model, opt):
    loss_fn = rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @rt.function(autograph=False)
    def step(x, y):
        with rt.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


def _values(*objects):
    return [v.numpy().copy() for obj in objects for v in (obj.variables if not isinstance(obj, rt.Variable) else [obj])]


def test_save_restore_round_trip_and_format(tmp_path):
    model, opt = _model(), rt.keras.optimizers.Adam(0.05)
    step_count = rt.Variable(0, dtype=rt.int64)
    step = _step_fn(model, opt)
    x, y = _data()
    for _ in range(3):
        step(x, y)
        step_count.assign_add(1)
    ckpt = rt.train.Checkpoint(model=model, optimizer=opt, step=step_count)
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-1") and int(ckpt.save_counter.numpy()) == 1
    saved = _values(model, opt, step_count)
    with zipfile.ZipFile(path + ".rtckpt") as archive:
        index = json.loads(archive.read("index.json"))
    assert index["format"] == "rt-checkpoint" and index["version"] == 1 and index["kind"] == "checkpoint"
    entries = {e["path"]: e for e in index["entries"]}
    assert entries["model/layers/0/kernel"]["shape"] == [4, 3] and entries["model/layers/0/kernel"]["dtype"] == \
        "float32"
    assert entries["optimizer/iterations"]["dtype"] == "int64" and entries["step"]["shape"] == []
    assert entries["optimizer/m_0"]["slot"] == {"kind": "m", "owner": ["model", "layers", "0", "kernel"]}
    assert {"save_counter", "optimizer/_learning_rate", "model/layers/1/moving_variance"} <= set(entries)
    step(x, y)
    step_count.assign(100)
    status = ckpt.restore(path)
    status.assert_consumed()
    for a, b in zip(saved, _values(model, opt, step_count)):
        np.testing.assert_array_equal(a, b)
    assert ckpt.write(str(tmp_path / "plain")) == str(tmp_path / "plain")       # write: no counter, no state file
    assert int(ckpt.save_counter.numpy()) == 1
    assert rt.train.latest_checkpoint(str(tmp_path)) == path
    ckpt.read(str(tmp_path / "plain")).assert_consumed()
    ckpt.restore(str(tmp_path / "plain.rtckpt")).assert_consumed()              # the file name works too
    assert ckpt.restore(None).restored_paths == []
    listed = dict(rt.train.list_variables(path))      # TensorFlow's keys
    assert listed["model/layers/0/kernel/.ATTRIBUTES/VARIABLE_VALUE"] == [4, 3]
    assert listed["step/.ATTRIBUTES/VARIABLE_VALUE"] == []
    bias_index = [id(v) for v in model.variables].index(id(model.layers[2].bias))
    np.testing.assert_array_equal(rt.train.load_variable(path, "model/layers/2/bias"), saved[bias_index])
    np.testing.assert_array_equal(rt.train.load_variable(path, "model/layers/2/bias/.ATTRIBUTES/VARIABLE_VALUE"),
                                  saved[bias_index])
    reader = rt.train.load_checkpoint(path)
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["optimizer/iterations/.ATTRIBUTES/VARIABLE_VALUE"] is rt.int64 and reader.has_tensor("step")
    with pytest.raises(ValueError, match="has no value 'nope'"):
        reader.get_tensor("nope")


def test_restore_before_the_variables_exist_then_continue_identically(tmp_path):
    x, y = _data(1)
    model, opt = _model(1), rt.keras.optimizers.Adam(0.05)
    step = _step_fn(model, opt)
    for _ in range(2):
        step(x, y)
    path = rt.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    expected = [float(step(x, y)) for _ in range(3)]
    fresh, fresh_opt = _model(7), rt.keras.optimizers.Adam(0.05)          # other initial weights, no slots yet
    status = rt.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(path)
    assert "model/layers/0/kernel" in status.waiting_paths and "optimizer/m_0" in status.waiting_paths
    with pytest.raises(AssertionError, match="not matched to a variable"):
        status.assert_consumed()
    status.assert_existing_objects_matched()
    got = [float(v) for v in (_step_fn(fresh, fresh_opt)(x, y) for _ in range(3))]
    assert got == expected                                                  # bit for bit
    status.assert_consumed()
    assert int(fresh_opt.iterations.numpy()) == 5


def test_slots_restore_to_the_variable_they_belong_to(tmp_path):
    a, b = rt.Variable([1.0, 2.0], name="a"), rt.Variable([3.0], name="b")
    opt = rt.keras.optimizers.Adam(0.1)
    opt.apply_gradients([(rt.constant([0.5, -0.5]), a), (rt.constant([2.0]), b)])
    path = rt.train.Checkpoint(a=a, b=b, optimizer=opt).save(str(tmp_path / "s"))
    m_a = opt.get_slot(a, "m").numpy().copy()
    a2, b2 = rt.Variable([0.0, 0.0]), rt.Variable([0.0])
    other = rt.keras.optimizers.Adam(0.1)
    other.apply_gradients([(rt.constant([0.0]), b2)])          # b2 takes position 0 here: a's saved m_0 must not go there
    rt.train.Checkpoint(a=a2, b=b2, optimizer=other).restore(path)
    other.apply_gradients([(rt.constant([0.0, 0.0]), a2)])     # a2's slots are created now, and restored
    np.testing.assert_allclose(other.get_slot(a2, "m").numpy(), m_a * 0.9, rtol=1e-6)   # restored, then one step
    assert other.get_slot(b2, "m").shape == (1,)


def test_module_variables_created_later_are_restored(tmp_path):
    class Flexible(rt.Module):
        def __init__(self):
            super().__init__()
            self.built_ = False

        def __call__(self, x):
            if not self.built_:
                self.w = rt.Variable(rt.random.normal([x.shape[-1], 2]), name="w")
                self.built_ = True
            return rt.matmul(x, self.w)

    first = Flexible()
    first(rt.ones([1, 3]))
    path = rt.train.Checkpoint(net=first).write(str(tmp_path / "m"))
    second = Flexible()
    rt.train.Checkpoint(net=second).read(path)
    rt.function(second)(rt.ones([1, 3]))                        # created inside a trace: restored there
    np.testing.assert_array_equal(second.w.numpy(), first.w.numpy())


def test_mismatches_are_errors_naming_the_variable(tmp_path):
    model = _model()
    model.build((None, 4))
    path = rt.train.Checkpoint(model=model).save(str(tmp_path / "x"))
    wider = _model(units=5)
    wider.build((None, 4))
    before = [v.numpy().copy() for v in wider.weights]
    with pytest.raises(ValueError, match=r"'model/layers/0/bias' has shape \(3,\) in the checkpoint but \(5,\) here"):
        rt.train.Checkpoint(model=wider).restore(path)
    for a, b in zip(before, wider.weights):                     # checked before anything was assigned
        np.testing.assert_array_equal(a, b.numpy())
    ints = rt.train.Checkpoint(v=rt.Variable(np.int64(1))).write(str(tmp_path / "ints"))
    with pytest.raises(ValueError, match="the variable 'v' is int64 in the checkpoint but float32 here"):
        rt.train.Checkpoint(v=rt.Variable(0.0)).read(ints)
    partial = rt.train.Checkpoint(model=_model(), extra=rt.Variable(1.0))
    partial.model.build((None, 4))
    status = partial.restore(path)
    with pytest.raises(AssertionError, match="variables with no value in the checkpoint: 'extra'"):
        status.assert_consumed()
    assert status.expect_partial() is status
    with pytest.raises(TypeError, match="cannot be checkpointed"):
        rt.train.Checkpoint(data=[1, 2])
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        rt.train.Checkpoint(model=model).restore(str(tmp_path / "missing"))
    (tmp_path / "bad.rtckpt").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable rt checkpoint"):
        rt.train.Checkpoint(model=model).restore(str(tmp_path / "bad"))


def test_checkpoint_manager(tmp_path):
    step = rt.Variable(0, dtype=rt.int64)
    ckpt = rt.train.Checkpoint(step=step)
    manager = rt.train.CheckpointManager(ckpt, str(tmp_path / "ckpts"), max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.restore_or_initialize() is None
    paths = []
    for i in range(4):
        step.assign(i)
        paths.append(manager.save())
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2", "ckpt-3", "ckpt-4"]
    assert manager.checkpoints == paths[2:] and manager.latest_checkpoint == paths[3]
    assert sorted(os.listdir(tmp_path / "ckpts")) == ["checkpoint", "ckpt-3.rtckpt", "ckpt-4.rtckpt"]
    assert rt.train.latest_checkpoint(str(tmp_path / "ckpts")) == paths[3]
    state = json.loads((tmp_path / "ckpts" / "checkpoint").read_text())
    assert state == {"model_checkpoint_path": "ckpt-4", "all_model_checkpoint_paths": ["ckpt-3", "ckpt-4"]}
    step.assign(99)
    again = rt.train.CheckpointManager(rt.train.Checkpoint(step=step), str(tmp_path / "ckpts"), max_to_keep=2)
    assert again.checkpoints == paths[2:]
    assert again.restore_or_initialize() == paths[3] and int(step.numpy()) == 3
    numbered = rt.train.CheckpointManager(ckpt, str(tmp_path / "n"), step_counter=step, checkpoint_name="model")
    assert os.path.basename(numbered.save()) == "model-3"
    assert os.path.basename(numbered.save(checkpoint_number=10)) == "model-10"
    assert rt.train.latest_checkpoint(str(tmp_path / "empty")) is None


def test_save_weights_and_load_weights(tmp_path):
    x, y = _data(2)
    model = _model(3)
    model.compile(optimizer="adam", loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    with zipfile.ZipFile(path) as archive:
        index = json.loads(archive.read("index.json"))
    assert index["kind"] == "weights"
    assert all(not e["path"].startswith(("optimizer", "_loss_tracker")) for e in index["entries"])
    assert len(index["entries"]) == len(model.weights) == 8
    fresh = _model(4)
    fresh.load_weights(path)                                      # not built yet: assigned when built
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), model.predict(x, verbose=0))
    prefix = str(tmp_path / "checkpoints" / "my_checkpoint")      # the TF 2 guides' spelling: a prefix
    model.save_weights(prefix)
    assert os.path.exists(prefix + ".rtckpt")
    built = _model(5)
    built.build((None, 4))
    built.load_weights(prefix)
    np.testing.assert_array_equal(built.predict(x, verbose=0), model.predict(x, verbose=0))
    other = rt.keras.Sequential([L.Dense(3), L.Dense(2)])
    other.build((None, 4))
    with pytest.raises(ValueError, match="weights of this model missing from the file|no layer weight to go to"):
        other.load_weights(prefix)
    with pytest.raises(NotImplementedError, match="save_weights"):
        model.save(str(tmp_path / "model.keras"))


def test_a_checkpoint_continues_bit_identically_in_a_fresh_process(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent('''
        import json, sys
        import numpy as np
        import runtime as rt

        mode, prefix = sys.argv[1], sys.argv[2]
        rng = np.random.default_rng(0)
        x = rng.standard_normal((60, 5)).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int32)
        rt.keras.utils.set_random_seed(1 if mode == "first" else 2)
        model = rt.keras.Sequential([rt.keras.Input((5,)), rt.keras.layers.Dense(8, activation="relu"),
                                     rt.keras.layers.BatchNormalization(), rt.keras.layers.Dense(2)])
        model.compile(optimizer=rt.keras.optimizers.Adam(0.01),
                      loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        ckpt = rt.train.Checkpoint(model=model, optimizer=model.optimizer)
        if mode == "first":
            model.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0)
            path = ckpt.save(prefix)
            history = model.fit(x, y, batch_size=10, epochs=3, shuffle=False, verbose=0).history
        else:
            path = rt.train.latest_checkpoint(prefix.rsplit("/", 1)[0])
            status = ckpt.restore(path)                # the optimizer's slots wait for its first step
            history = model.fit(x, y, batch_size=10, epochs=3, shuffle=False, verbose=0).history
            status.assert_consumed()
        print(json.dumps({"path": path, "history": history, "iterations": int(model.optimizer.iterations.numpy())}))
    '''))
    env = dict(os.environ, PYTHONPATH=str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for mode in ("first", "second"):
        proc = subprocess.run([sys.executable, str(script), mode, str(tmp_path / "ckpt")], capture_output=True,
                              text=True, env=env, cwd=str(tmp_path), timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["path"] == runs[1]["path"]
    assert runs[1]["history"] == runs[0]["history"]                 # the same floats, bit for bit
    assert runs[0]["iterations"] == runs[1]["iterations"] == 30
