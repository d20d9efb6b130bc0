"""Callbacks of ``fit``/``evaluate``/``predict``: ``Callback``, ``History``, ``ProgbarLogger`` (the per-epoch
progress line), ``LambdaCallback``, ``EarlyStopping``, ``ModelCheckpoint`` (weights), ``LearningRateScheduler``.

Logs reach callbacks as Python floats, keys sorted (Keras 3's order), at the end of each epoch; batch-level
hooks get the step's results as tensors (reading them costs a copy; the progress line does not).
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from runtime.errors import missing_name

BAR_WIDTH = 20


class Callback:
    """Base class: override the ``on_*`` hooks; ``self.model`` and ``self.params`` are set by ``fit``."""

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


class CallbackList(Callback):
    """Several callbacks called in order. ``wants(hook)`` tells whether any callback overrides ``hook`` (so a
    loop can skip the per-batch hooks nobody listens to)."""

    def __init__(self, callbacks=None, model=None, **params):
        super().__init__()
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be rt.keras.callbacks.Callback objects, got {cb!r}")
        if model is not None:
            self.set_model(model)
        self.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)
        callback.set_model(self.model)
        callback.set_params(self.params)

    def set_model(self, model) -> None:
        self.model = model
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict) -> None:
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)

    def wants(self, hook: str) -> bool:
        default = getattr(Callback, hook)
        return any(hook in vars(cb) or getattr(type(cb), hook) is not default for cb in self.callbacks)

    def _call(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)


for _hook in [name for name in vars(Callback) if name.startswith("on_")]:
    setattr(CallbackList, _hook, lambda self, *args, _hook=_hook: self._call(_hook, *args))


class History(Callback):
    """Records the logs of every epoch: ``history.history["loss"]`` is the list of epoch losses."""

    def __init__(self):
        super().__init__()
        self.history: dict = {}
        self.epoch: list = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self


def format_time(seconds: float, unit: str = "step") -> str:
    """Keras' duration per unit: ``2s/step``, ``146ms/step``, ``18us/step``."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def format_logs(logs: dict) -> str:
    """`` - loss: 0.1234 - accuracy: 0.9000`` (four decimals, or scientific below 1e-3, as Keras prints)."""
    out = ""
    for key, value in logs.items():
        value = float(value)
        out += f" - {key}: " + (f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}")
    return out


def progress_line(current: int, target: int, elapsed: float, logs: dict, verbose: int) -> str:
    """The line Keras prints when an epoch (or an evaluation) ends."""
    digits = int(math.log10(max(target, 1))) + 1
    count = f"{current:>{digits}d}/{target}"
    per_step = format_time(elapsed / max(current, 1))
    if verbose == 2:
        return f"{count} - {elapsed:.0f}s - {per_step}" + format_logs(logs)
    filled = int(BAR_WIDTH * current / max(target, 1))
    bar = "━" * filled + "━" * (BAR_WIDTH - filled)
    return f"{count} {bar} {elapsed:.0f}s {per_step}" + format_logs(logs)


class ProgbarLogger(Callback):
    """Prints ``Epoch i/n`` (when there are several) and, when an epoch ends, its line:
    ``32/32 ━━━━━━━━━━━━━━━━━━━━ 0s 3ms/step - accuracy: 0.8750 - loss: 0.3421`` (verbose 1) or
    ``32/32 - 0s - 3ms/step - accuracy: 0.8750 - loss: 0.3421`` (verbose 2)."""

    def __init__(self, verbose: int = 1, stream=None):
        super().__init__()
        self.verbose = verbose
        self.stream = stream
        self._start = None

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        if self.verbose and self.params.get("epochs", 1) > 1:
            self._print(f"Epoch {epoch + 1}/{self.params['epochs']}")

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose:
            seen = self.params.get("seen", 0)              # the loop records the steps it ran
            target = self.params.get("steps") or seen
            self._print(progress_line(seen, target, time.perf_counter() - self._start, logs or {}, self.verbose))

    def on_test_begin(self, logs=None):
        if not self.params.get("in_fit"):
            self._start = time.perf_counter()

    def on_test_end(self, logs=None):
        if self.verbose and not self.params.get("in_fit"):
            seen = self.params.get("seen_test", 0)
            self._print(progress_line(seen, seen, time.perf_counter() - self._start, logs or {}, self.verbose))

    def on_predict_begin(self, logs=None):
        self._start = time.perf_counter()

    def on_predict_end(self, logs=None):
        if self.verbose:
            seen = self.params.get("seen_predict", 0)
            self._print(progress_line(seen, seen, time.perf_counter() - self._start, {}, self.verbose))


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in given.items():
            if fn is not None:
                setattr(self, name, fn)


def _improvement(mode: str, monitor: str):
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure"))):
        return np.greater, -np.inf
    return np.less, np.inf


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved by ``min_delta`` for ``patience`` epochs."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0, verbose: int = 0,
                 mode: str = "auto", baseline=None, restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.baseline, self.restore_best_weights, self.start_from_epoch = baseline, restore_best_weights, \
            start_from_epoch
        self.monitor_op, self._worst = _improvement(mode, monitor)
        self.min_delta = abs(min_delta) * (1 if self.monitor_op is np.greater else -1)
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0
        self.best = self._worst

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self.monitor_op(current - self.min_delta, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self.monitor_op(current - self.min_delta, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Save the model's weights (``save_weights_only=True``) after each epoch, or when ``monitor`` improves
    (``save_best_only``); ``filepath`` may hold ``{epoch}`` and log keys (``"ckpt-{epoch:02d}.weights.h5"``)."""

    def __init__(self, filepath, monitor: str = "val_loss", verbose: int = 0, save_best_only: bool = False,
                 save_weights_only: bool = False, mode: str = "auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        if not save_weights_only:
            raise NotImplementedError("ModelCheckpoint: only save_weights_only=True is supported (rt saves weights "
                                      "and checkpoints, not whole models)")
        if save_freq != "epoch":
            raise NotImplementedError("ModelCheckpoint: only save_freq='epoch' is supported")
        self.filepath, self.monitor, self.verbose, self.save_best_only = str(filepath), monitor, verbose, \
            save_best_only
        self.monitor_op, worst = _improvement(mode, monitor)
        self.best = worst if initial_value_threshold is None else initial_value_threshold

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or not self.monitor_op(current, self.best):
                return
            if self.verbose:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, saving "
                      f"model to {path}")
            self.best = current
        elif self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        self.model.save_weights(path)


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch to ``schedule(epoch, lr)``."""

    def __init__(self, schedule, verbose: int = 0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(np.asarray(self.model.optimizer.learning_rate))
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        self.model.optimizer.learning_rate = float(new)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(new)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(np.asarray(self.model.optimizer.learning_rate))


__all__ = ["Callback", "CallbackList", "EarlyStopping", "History", "LambdaCallback", "LearningRateScheduler",
           "ModelCheckpoint", "ProgbarLogger"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.callbacks")
