"""``rt.train.Checkpoint``, ``CheckpointManager``, ``latest_checkpoint``: saving variables by object path.

A checkpoint holds every variable reachable from its root objects (``Checkpoint(model=..., optimizer=...,
step=rt.Variable(0))``), each under its path of attribute names: ``model/dense1/kernel``,
``optimizer/iterations``, ``optimizer/m_0`` (an optimizer's slot), ``step``, ``save_counter``. Restoring assigns
each saved value to the variable at the same path in the objects given to the restoring checkpoint; a variable
that does not exist yet (a layer before its first call, an optimizer's slots before its first step) receives its
value when it is created (see ``runtime.train.tracking``). ``Model.save_weights`` writes the same format with
the model's layer weights only.

On-disk format, version 1: one file, ``<prefix>.rtckpt`` (``Model.save_weights`` writes the path it is given),
a zip archive holding

- ``index.json``: ``{"format": "rt-checkpoint", "version": 1, "kind": "checkpoint" | "weights",
  "entries": [...]}``, each entry ``{"path": "model/dense1/kernel", "steps": ["model", "dense1", "kernel"],
  "name": <the variable's name>, "dtype": "float32", "shape": [3, 4], "trainable": true, "array": "arrays/0.npy"}``
  and, for an optimizer's slot, ``"slot": {"kind": "m", "owner": <the steps of the variable it belongs to>}``
  (a restore that finds the owner already known to the optimizer uses the slot name the optimizer gives it);
- ``arrays/<n>.npy``: each value in numpy's ``.npy`` format (dtype and shape exactly as saved).

The file is written to a temporary name and renamed, so a crash never leaves half a checkpoint. A restore
refuses a value whose dtype or shape differs from the variable's, naming the variable's path.
``CheckpointManager`` keeps ``<directory>/checkpoint``, a JSON file ``{"model_checkpoint_path": ...,
"all_model_checkpoint_paths": [...]}`` (paths relative to the directory) that ``latest_checkpoint`` reads.

Example:
    >>> import os, tempfile, runtime as rt
    >>> step = rt.Variable(3, dtype=rt.int64)
    >>> ckpt = rt.train.Checkpoint(step=step)
    >>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> _ = step.assign(10)
    >>> status = ckpt.restore(path)
    >>> int(step.numpy()), os.path.basename(path)
    (3, 'ckpt-1')
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zipfile

import numpy as np

from runtime import dtypes
from runtime.train.tracking import _MISSING, Restoration, Trackable, child, is_followed, walk_variables
from runtime.variables import Variable

FORMAT = "rt-checkpoint"
VERSION = 1
SUFFIX = ".rtckpt"
STATE_FILE = "checkpoint"


# ---------------------------------------------------------------------------
# Files.

def checkpoint_file(path: str) -> str:
    """The file a checkpoint path names: ``path`` itself when it is a file, else ``path + ".rtckpt"``."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return path
    if os.path.isfile(path + SUFFIX):
        return path + SUFFIX
    raise FileNotFoundError(f"no checkpoint at {path!r} (looked for {path!r} and {path + SUFFIX!r})")


def write_file(filename: str, root, kind: str = "checkpoint", follow=is_followed) -> list[str]:
    """Write every variable reachable from ``root`` to ``filename`` (the format above); returns the paths."""
    found = walk_variables(root, follow)
    slots = {}
    for owner_steps, holder in _optimizers(root, follow):
        for slot_id, (kind_name, owner) in holder._slot_owners().items():
            owner_entry = found.get(id(owner))
            if owner_entry is not None:
                slots[slot_id] = {"kind": kind_name, "owner": list(owner_entry[0])}
    entries, arrays = [], []
    for steps, variable in sorted(found.values(), key=lambda item: item[0]):
        path = "/".join(steps)
        if variable.dtype not in _SAVABLE:
            raise TypeError(f"checkpoint: the variable {path!r} has dtype {variable.dtype}, which checkpoints cannot "
                            "hold (numeric and bool variables only)")
        value = np.array(variable._value, order="C", copy=True)
        member = f"arrays/{len(arrays)}.npy"
        entry = {"path": path, "steps": list(steps), "name": variable.name, "dtype": variable.dtype.name,
                 "shape": list(value.shape), "trainable": bool(variable.trainable), "array": member}
        if id(variable) in slots:
            entry["slot"] = slots[id(variable)]
        entries.append(entry)
        arrays.append((member, value))
    index = {"format": FORMAT, "version": VERSION, "kind": kind, "entries": entries}
    directory = os.path.dirname(os.path.abspath(filename))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rtckpt-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr("index.json", json.dumps(index, indent=1))
            for member, value in arrays:
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, value, allow_pickle=False)
                archive.writestr(member, buffer.getvalue())
        os.replace(tmp, filename)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return [e["path"] for e in entries]


_SAVABLE = tuple(d for d in (dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                             dtypes.float16, dtypes.float32, dtypes.float64))


def _optimizers(root, follow):
    """(steps, object) of the objects under ``root`` that own slot variables (optimizers)."""
    seen, level = set(), [((), root)]
    while level:
        following = []
        for steps, value in level:
            if id(value) in seen or isinstance(value, Variable):
                continue
            seen.add(id(value))
            if hasattr(value, "_slot_owners"):
                yield steps, value
            from_value = value._checkpoint_children() if isinstance(value, Trackable) else _container_items(value)
            for name, item in from_value:
                if follow(item):
                    following.append((steps + (name,), item))
        level = following


def _container_items(value):
    if isinstance(value, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [(k, value[k]) for k in sorted(k for k in value if isinstance(k, str))]
    return []


def read_file(filename: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The index and the arrays (by member name) of a checkpoint file; a clear error for anything else."""
    try:
        with zipfile.ZipFile(filename) as archive:
            index = json.loads(archive.read("index.json"))
            if index.get("format") != FORMAT:
                raise ValueError(f"{filename!r} is not an rt checkpoint (format {index.get('format')!r})")
            if index.get("version") != VERSION:
                raise ValueError(f"{filename!r} is an rt checkpoint of version {index.get('version')}; this rt reads "
                                 f"version {VERSION}")
            arrays = {}
            for entry in index["entries"]:
                with archive.open(entry["array"]) as f:
                    arrays[entry["array"]] = np.lib.format.read_array(f, allow_pickle=False)
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise ValueError(f"{filename!r} is not a readable rt checkpoint ({type(e).__name__}: {e})") from None
    return index, arrays


# ---------------------------------------------------------------------------
# Restoring.

class LoadStatus:
    """What a restore did (``tf.train.Checkpoint.restore``'s status): ``assert_consumed()``,
    ``assert_existing_objects_matched()``, ``assert_nontrivial_match()``, ``expect_partial()``."""

    def __init__(self, root, source: str, follow=is_followed):
        self.root, self.source, self._follow = root, source, follow
        self._restored: dict[str, int] = {}        # path -> id(variable)
        self._waiting: dict[str, Restoration] = {}
        self._unresolved: dict[str, Restoration] = {}

    # -- bookkeeping (called by Restoration) ------------------------------------------------------
    def restored(self, restoration: Restoration, variable) -> None:
        self._waiting.pop(restoration.path, None)
        self._restored[restoration.path] = id(variable)

    def waiting(self, restoration: Restoration) -> None:
        self._waiting[restoration.path] = restoration

    def unresolved(self, restoration: Restoration) -> None:
        self._unresolved[restoration.path] = restoration

    # -- checks ---------------------------------------------------------------------------------------
    def _unrestored_variables(self) -> list[str]:
        restored = set(self._restored.values())
        return sorted("/".join(steps) for steps, variable in walk_variables(self.root, self._follow).values()
                      if id(variable) not in restored)

    def assert_consumed(self) -> LoadStatus:
        """Every value in the checkpoint reached its variable, and every variable reachable now got a value."""
        problems = []
        pending = sorted(set(self._waiting) | set(self._unresolved))
        if pending:
            problems.append(f"values in the checkpoint not matched to a variable (yet): {_listing(pending)}")
        missing = self._unrestored_variables()
        if missing:
            problems.append(f"variables with no value in the checkpoint: {_listing(missing)}")
        if problems:
            raise AssertionError(f"restore of {self.source}: " + "; ".join(problems))
        return self

    def assert_existing_objects_matched(self) -> LoadStatus:
        """Every variable reachable now got a value (values for objects not created yet may wait)."""
        missing = self._unrestored_variables()
        unresolved = sorted(self._unresolved)
        if missing or unresolved:
            raise AssertionError(f"restore of {self.source}: variables with no value in the checkpoint: "
                                 f"{_listing(missing)}" + (f"; values with no object to go to: {_listing(unresolved)}"
                                                           if unresolved else ""))
        return self

    def assert_nontrivial_match(self) -> LoadStatus:
        if not self._restored:
            raise AssertionError(f"restore of {self.source}: no value of the checkpoint matched a variable")
        return self

    def expect_partial(self) -> LoadStatus:
        """Accept that some values or variables stay unmatched (nothing is reported about them)."""
        return self

    def run_restore_ops(self, session=None) -> None:
        """Values are assigned as they are matched (eagerly): nothing left to run."""

    def initialize_or_restore(self, session=None) -> None:
        """Values are assigned as they are matched (eagerly): nothing left to run."""

    @property
    def restored_paths(self) -> list[str]:
        return sorted(self._restored)

    @property
    def waiting_paths(self) -> list[str]:
        """Saved values waiting for their variable to be created."""
        return sorted(self._waiting)


def _listing(paths: list[str], limit: int = 12) -> str:
    shown = ", ".join(repr(p) for p in paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def restore_file(filename: str, root, follow=is_followed) -> LoadStatus:
    """Assign the values of checkpoint ``filename`` to the variables at their paths from ``root``."""
    index, arrays = read_file(filename)
    status = LoadStatus(root, repr(filename), follow)
    restorations = []
    for entry in index["entries"]:
        steps = list(entry["steps"])
        slot = entry.get("slot")
        if slot is not None and len(steps) >= 2:
            steps[-1] = _slot_attribute(root, steps, slot)
        restorations.append(Restoration(entry["path"], steps, arrays[entry["array"]], entry["dtype"], status))
    for restoration in restorations:          # every variable that exists is checked before any is assigned
        found = _resolve(root, restoration.steps)
        if isinstance(found, Variable):
            restoration.check(found)
    for restoration in restorations:
        restoration.place(root)
    return status


def _resolve(root, steps):
    value = root
    for step in steps:
        value = child(value, step)
        if value is _MISSING:
            return _MISSING
    return value


def _slot_attribute(root, steps: list, slot: dict) -> str:
    """The attribute a saved slot goes to: the name its optimizer gives the owner's slot of that kind."""
    optimizer = _resolve(root, steps[:-1])
    owner = _resolve(root, slot["owner"])
    if optimizer is _MISSING or not isinstance(owner, Variable) or not hasattr(optimizer, "_slot_attribute"):
        return steps[-1]
    return optimizer._slot_attribute(owner, slot["kind"], steps[-1])


# ---------------------------------------------------------------------------
# Reading a checkpoint's values by name (tf.train.list_variables / load_variable / load_checkpoint).

# TensorFlow names a variable's value in a checkpoint by its object path and this suffix
# (``model/dense_1/w/.ATTRIBUTES/VARIABLE_VALUE``); programs read values by those keys.
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


class CheckpointReader:
    """The values of one checkpoint file by key (``tf.train.load_checkpoint``'s reader).

    Keys are TensorFlow's: a variable's object path and ``/.ATTRIBUTES/VARIABLE_VALUE``
    (``model/dense_1/w/.ATTRIBUTES/VARIABLE_VALUE``, ``save_counter/.ATTRIBUTES/VARIABLE_VALUE``); the bare path
    (``model/dense_1/w``) names the same value. A Keras model's paths are rt's (``model/layers/0/kernel``), which
    TensorFlow's Keras 3 spells after its own internals (``model/_functional/_operations/1/...``).
    """

    def __init__(self, path):
        self._file = checkpoint_file(path)
        index, self._arrays = read_file(self._file)
        self._entries = {e["path"] + VALUE_SUFFIX: e for e in index["entries"]}

    def _entry(self, name: str):
        return self._entries.get(name) or self._entries.get(name + VALUE_SUFFIX)

    def get_variable_to_shape_map(self) -> dict:
        return {key: list(e["shape"]) for key, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict:
        return {key: dtypes.as_dtype(e["dtype"]) for key, e in self._entries.items()}

    def has_tensor(self, name: str) -> bool:
        return self._entry(name) is not None

    def get_tensor(self, name: str) -> np.ndarray:
        entry = self._entry(name)
        if entry is None:
            raise ValueError(f"checkpoint {self._file!r} has no value {name!r}; it has "
                             f"{_listing(sorted(self._entries))}")
        return self._arrays[entry["array"]].copy()


def load_checkpoint(path) -> CheckpointReader:
    return CheckpointReader(path)


def list_variables(path) -> list[tuple[str, list]]:
    """(key, shape) of every value in a checkpoint, sorted by key (TensorFlow's keys: see ``CheckpointReader``)."""
    return sorted(CheckpointReader(path).get_variable_to_shape_map().items())


def load_variable(path, name: str) -> np.ndarray:
    return CheckpointReader(path).get_tensor(name)


# ---------------------------------------------------------------------------
# Checkpoint.

class Checkpoint(Trackable):
    """Groups objects to save and restore together: ``rt.train.Checkpoint(model=model, optimizer=opt, step=v)``.

    Args:
        root: an object whose attributes become the checkpoint's top level (optional).
        **kwargs: the objects to save, by name: ``rt.Module``s, Keras layers and models, optimizers, metrics,
            ``rt.Variable``s, other checkpoints.
    """

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_rt_root", root)
        object.__setattr__(self, "_rt_save_counter", None)
        if root is not None:
            _check_trackable("root", root)
        for name, value in kwargs.items():
            if name.startswith("_rt_") or name in ("save_counter",):
                raise ValueError(f"Checkpoint: {name!r} is a reserved name")
            _check_trackable(name, value)
            setattr(self, name, value)

    # -- what it holds --------------------------------------------------------------------------------
    @property
    def save_counter(self) -> Variable:
        """The number of ``save()`` calls (saved with the checkpoint; created on first use)."""
        if self._rt_save_counter is None:
            object.__setattr__(self, "_rt_save_counter", Variable(np.int64(0), trainable=False, name="save_counter"))
            waiting = self.__dict__.get("_rt_waiting")
            if waiting and "save_counter" in waiting:
                for restoration in waiting.pop("save_counter"):
                    restoration.place(self._rt_save_counter)
        return self._rt_save_counter

    def _checkpoint_children(self):
        items = dict(Trackable._checkpoint_children(self))
        if self._rt_root is not None:
            for name, value in self._rt_root._checkpoint_children() if isinstance(self._rt_root, Trackable) else ():
                items.setdefault(name, value)
        if self._rt_save_counter is not None:
            items["save_counter"] = self._rt_save_counter
        for name in sorted(items):
            yield name, items[name]

    def _checkpoint_child(self, name: str):
        if name == "save_counter":
            return self.save_counter
        found = Trackable._checkpoint_child(self, name)
        if found is _MISSING and isinstance(self._rt_root, Trackable):
            found = self._rt_root._checkpoint_child(name)
        return found

    # -- saving ---------------------------------------------------------------------------------------------
    def write(self, file_prefix, options=None) -> str:
        """Write the checkpoint to ``file_prefix + ".rtckpt"``; returns ``file_prefix``. Counts nothing."""
        file_prefix = os.fspath(file_prefix)
        write_file(file_prefix + SUFFIX, self)
        return file_prefix

    def save(self, file_prefix, options=None) -> str:
        """``write`` to ``file_prefix-<n>`` where ``n`` counts the saves (``save_counter``); returns that path and
        records it as the latest checkpoint of its directory."""
        self.save_counter.assign_add(np.int64(1))
        path = self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter.numpy())}")
        _record_checkpoint(os.path.dirname(os.path.abspath(path)), path)
        return path

    # -- restoring ------------------------------------------------------------------------------------------
    def read(self, save_path, options=None) -> LoadStatus:
        """Assign the values saved at ``save_path`` (a path ``write`` or ``save`` returned)."""
        return restore_file(checkpoint_file(save_path), self)

    def restore(self, save_path, options=None) -> LoadStatus:
        """``read``; ``None`` (no checkpoint yet, as ``latest_checkpoint`` gives) restores nothing."""
        if save_path is None:
            return LoadStatus(self, "None")
        return self.read(save_path)

    def __repr__(self):
        names = [n for n, _ in Trackable._checkpoint_children(self)]
        return f"<rt.train.Checkpoint {', '.join(names)}>"


def _check_trackable(name: str, value) -> None:
    if not isinstance(value, (Trackable, Variable)):
        raise TypeError(f"Checkpoint: {name}={value!r} cannot be checkpointed: expected an rt.Module, a Keras layer, "
                        "model, optimizer or metric, an rt.Variable, or another Checkpoint")


# ---------------------------------------------------------------------------
# The state file of a directory and CheckpointManager.

def _state_path(directory: str) -> str:
    return os.path.join(directory, STATE_FILE)


def _read_state(directory: str) -> dict | None:
    try:
        with open(_state_path(directory), encoding="utf-8") as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{_state_path(directory)!r} is not an rt checkpoint state file ({e})") from None
    return state


def _write_state(directory: str, latest: str, paths: list[str]) -> None:
    def relative(p):
        return os.path.relpath(p, directory) if os.path.dirname(os.path.abspath(p)) == os.path.abspath(directory) \
            else p
    state = {"model_checkpoint_path": relative(latest), "all_model_checkpoint_paths": [relative(p) for p in paths]}
    fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, _state_path(directory))


def _record_checkpoint(directory: str, path: str) -> list[str]:
    state = _read_state(directory) or {}
    paths = [os.path.join(directory, p) for p in state.get("all_model_checkpoint_paths", [])]
    paths = [p for p in paths if os.path.abspath(p) != os.path.abspath(path)] + [path]
    _write_state(directory, path, paths)
    return paths


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> str | None:
    """The path of the newest checkpoint saved in ``checkpoint_dir`` (``None`` when there is none)."""
    directory = os.fspath(checkpoint_dir)
    state = _read_state(directory) if latest_filename is None else None
    if latest_filename is not None:
        try:
            with open(os.path.join(directory, latest_filename), encoding="utf-8") as f:
                state = json.load(f)
        except FileNotFoundError:
            return None
    if not state or not state.get("model_checkpoint_path"):
        return None
    path = os.path.join(directory, state["model_checkpoint_path"])
    return path if os.path.isfile(path + SUFFIX) or os.path.isfile(path) else None


class CheckpointManager:
    """Numbered checkpoints of one ``Checkpoint`` in a directory, keeping the newest ``max_to_keep``.

    Args:
        checkpoint: the ``rt.train.Checkpoint`` to save and restore.
        directory: where the checkpoints go (created if needed).
        max_to_keep: how many to keep (older ones are deleted); None keeps all.
        checkpoint_name: the files' prefix (``ckpt-1.rtckpt`` ...).
        step_counter: an int ``rt.Variable`` whose value numbers the checkpoints (the save counter otherwise).
    """

    def __init__(self, checkpoint: Checkpoint, directory, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours=None, checkpoint_name: str = "ckpt", step_counter=None,
                 checkpoint_interval=None, init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: expected an rt.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"CheckpointManager: max_to_keep must be positive or None, got {max_to_keep}")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every = keep_checkpoint_every_n_hours
        self._name = checkpoint_name
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_kept_time = time.time()
        self._last_step = None
        os.makedirs(self._directory, exist_ok=True)
        state = _read_state(self._directory) or {}
        self._paths = [os.path.join(self._directory, p) for p in state.get("all_model_checkpoint_paths", [])
                       if os.path.isfile(os.path.join(self._directory, p) + SUFFIX)]

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoints, oldest first."""
        return list(self._paths)

    @property
    def latest_checkpoint(self) -> str | None:
        return self._paths[-1] if self._paths else None

    @property
    def checkpoint_interval(self):
        return self._interval

    def save(self, checkpoint_number=None, check_interval: bool = True, options=None) -> str | None:
        """Save a numbered checkpoint (the save counter's next value unless ``checkpoint_number`` or the
        ``step_counter`` gives it); returns its path (None when ``checkpoint_interval`` skips this step)."""
        if self._interval is not None and check_interval:
            if self._step_counter is None:
                raise ValueError("CheckpointManager: checkpoint_interval needs a step_counter")
            step = int(np.asarray(self._step_counter))
            if self._last_step is not None and step < self._last_step + self._interval:
                return None
            self._last_step = step
        if checkpoint_number is None and self._step_counter is not None:
            checkpoint_number = int(np.asarray(self._step_counter))
        self._checkpoint.save_counter.assign_add(np.int64(1))
        if checkpoint_number is None:
            checkpoint_number = int(self._checkpoint.save_counter.numpy())
        if isinstance(checkpoint_number, Variable):
            checkpoint_number = int(checkpoint_number.numpy())
        path = self._checkpoint.write(os.path.join(self._directory, f"{self._name}-{int(checkpoint_number)}"))
        self._paths = [p for p in self._paths if os.path.abspath(p) != os.path.abspath(path)] + [path]
        self._sweep()
        _write_state(self._directory, path, self._paths)
        return path

    def _sweep(self) -> None:
        if self._max_to_keep is None:
            return
        while len(self._paths) > self._max_to_keep:
            oldest = self._paths.pop(0)
            if self._keep_every is not None and time.time() - self._last_kept_time >= self._keep_every * 3600:
                self._last_kept_time = time.time()
                continue                    # kept for good, no longer managed
            for filename in (oldest + SUFFIX,):
                if os.path.exists(filename):
                    os.remove(filename)

    def restore_or_initialize(self):
        """Restore the latest checkpoint (returns its path), or run ``init_fn`` and return None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

