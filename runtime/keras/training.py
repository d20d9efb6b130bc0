"""``compile`` / ``fit`` / ``evaluate`` / ``predict``: Keras 3's training loop on ``rt.function`` steps.

``compile()`` resolves the optimizer, loss and metrics and -- when the model's input shape is known (``Input``,
``input_shape=``, ``build``) -- creates ``model.train_function``, ``model.test_function`` and
``model.predict_function``: ``rt.function``s with a fixed ``input_signature`` (batch dimension ``None``) that run
``train_step`` / ``test_step`` / ``predict_step`` on one batch. A train step is the forward pass, the gradient
tape, the optimizer's update and the metrics' updates; everything it keeps between calls lives in variables
(the weights, the optimizer's slots and step, the metrics' totals), so the same function runs traced or as the
native code of a built module (a module-level model compiled at import). The signature's targets follow the
loss: integer class labels ``[batch]`` for sparse cross entropy, the output's shape and dtype otherwise; data
that differs only in dtype, or by a trailing axis of size 1, is converted to it per batch, anything else gets a
step function of its own (traced on first use).

``fit`` loops over epochs and batches (numpy arrays, tensors, or an ``rt.data.Dataset``), resets the metrics
at each epoch, evaluates ``validation_data``, runs callbacks and prints Keras' progress line; it returns a
``History``. A ``train_step(self, data)`` defined in a ``Model`` subclass replaces the default one (``data`` is
the batch: ``(x, y)``, ``(x, y, sample_weight)``, ``(x,)``, or a dataset's element as it is). As in Keras 3,
the steps run as plain Python while tracing (no AutoGraph conversion): use ``rt.cond`` for tensor conditions.
"""
from __future__ import annotations

import math

import numpy as np

from runtime import dtypes, nest
from runtime.backprop import GradientTape
from runtime.data import Dataset
from runtime.keras import callbacks as callbacks_module
from runtime.keras import losses as losses_module
from runtime.keras import metrics as metrics_module
from runtime.keras import optimizers as optimizers_module
from runtime.ops import array_ops, math_ops
from runtime.ops.registry import convert
from runtime.polymorphic_function import function
from runtime.shapes import TensorSpec
from runtime.tensor import EagerTensor, Tensor
from runtime.variables import Variable

# ---------------------------------------------------------------------------
# Data: the batches of an epoch.


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from a batch (missing parts are None), as Keras unpacks ``data``."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, found: "
                     f"a tuple of {len(data)} items")


def _as_array(value, what: str):
    if isinstance(value, (Variable, EagerTensor)):
        value = value.numpy()
    elif isinstance(value, Tensor):
        raise TypeError(f"{what}: fit/evaluate/predict take data (arrays, eager tensors, datasets), not symbolic "
                        f"tensors")
    array = np.asarray(value)
    if array.dtype == np.float64:
        array = array.astype(np.float32)      # Keras feeds float data in float32 (its float type)
    if array.dtype == object:
        raise TypeError(f"{what}: expected numeric arrays, got an array of Python objects")
    if array.ndim == 0:
        raise ValueError(f"{what}: expected arrays with a batch dimension, got a scalar")
    return array


class ArrayAdapter:
    """Batches of in-memory arrays (``x``, ``y``, ``sample_weight``: arrays or nested lists/dicts of them)."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, steps=None, class_weight=None):
        parts = [x] if y is None and sample_weight is None else [x, y] if sample_weight is None else [x, y,
                                                                                                   sample_weight]
        if y is None and sample_weight is not None:
            raise ValueError("sample_weight needs targets y")
        self.data = tuple(nest.map_structure(lambda v: _as_array(v, "fit"), part) for part in parts)
        if class_weight is not None:
            if y is None:
                raise ValueError("class_weight needs targets y")
            self.data = _with_class_weight(self.data, class_weight)
        sizes = {len(a) for a in nest.flatten(self.data)}
        if len(sizes) != 1:
            names = ["x", "y", "sample_weight"]
            detail = "; ".join(f"{names[i]} sizes: {', '.join(str(len(a)) for a in nest.flatten(part))}"
                               for i, part in enumerate(self.data))
            raise ValueError(f"Data cardinality is ambiguous: {detail}. Make sure all arrays contain the same number "
                             f"of samples.")
        self.size = sizes.pop()
        self.batch_size = int(batch_size or 32)
        if self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.shuffle = shuffle
        self.num_batches = math.ceil(self.size / self.batch_size) if steps is None else int(steps)

    def epoch(self):
        order = np.random.permutation(self.size) if self.shuffle else None
        for step in range(self.num_batches):
            lo = (step * self.batch_size) % max(self.size, 1)
            hi = min(lo + self.batch_size, self.size)
            rows = slice(lo, hi) if order is None else order[lo:hi]
            yield step, nest.map_structure(lambda a, rows=rows: a[rows], self.data)


def _with_class_weight(data, class_weight: dict):
    y = data[1]
    if not isinstance(y, np.ndarray):
        raise ValueError("class_weight is supported for a single target array only")
    labels = np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y), -1)[:, 0]
    weights = np.array([class_weight.get(int(label), 1.0) for label in labels], np.float32)
    if len(data) == 3:
        weights = weights * np.asarray(data[2], np.float32).reshape(len(y), -1)[:, 0]
    return (data[0], data[1], weights)


class DatasetAdapter:
    """The elements of an ``rt.data.Dataset`` (batches already); ``steps`` bounds an epoch."""

    def __init__(self, dataset: Dataset, steps=None):
        self.dataset = dataset
        self.steps = None if steps is None else int(steps)
        n = int(dataset.cardinality())
        self.num_batches = self.steps if self.steps is not None else (n if n >= 0 else None)
        self._iterator = None

    def epoch(self):
        if self.steps is None:
            yield from enumerate(self.dataset)
            return
        for step in range(self.steps):
            if self._iterator is None:
                self._iterator = iter(self.dataset)
            try:
                element = next(self._iterator)
            except StopIteration:
                self._iterator = None
                return
            yield step, element


def make_adapter(x, y=None, sample_weight=None, batch_size=None, shuffle=False, steps=None, class_weight=None):
    if isinstance(x, Dataset):
        if y is not None:
            raise ValueError("`y` argument is not supported when using a dataset as input: the dataset's elements "
                             "hold the targets")
        if sample_weight is not None:
            raise ValueError("`sample_weight` argument is not supported when using a dataset as input")
        return DatasetAdapter(x, steps)
    if x is None:
        raise ValueError("fit/evaluate/predict need data: x was None")
    return ArrayAdapter(x, y, sample_weight, batch_size, shuffle, steps, class_weight)


def _split_validation(x, y, sample_weight, validation_split: float):
    """The last ``validation_split`` of the arrays held out (before any shuffling), as Keras does."""
    if not 0 < validation_split < 1:
        raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
    if isinstance(x, Dataset):
        raise ValueError("validation_split is not supported for datasets; pass validation_data")
    arrays = [nest.map_structure(lambda v: _as_array(v, "fit"), part) if part is not None else None
              for part in (x, y, sample_weight)]
    size = len(nest.flatten(arrays[0])[0])
    split = int(size * (1.0 - validation_split))
    train = [nest.map_structure(lambda a: a[:split], part) if part is not None else None for part in arrays]
    held = [nest.map_structure(lambda a: a[split:], part) if part is not None else None for part in arrays]
    return train, tuple(p for p in held if p is not None)


# ---------------------------------------------------------------------------
# Signatures: the specs of a batch, and converting a batch to a step function's signature.

def spec_of(value) -> TensorSpec:
    """The spec of a batch element with its batch dimension left open."""
    shape = list(value.shape)
    dtype = dtypes.as_dtype(value.dtype) if not isinstance(value, Tensor) else value.dtype
    return TensorSpec([None] + [int(d) for d in shape[1:]], dtype)


def _structure_specs(data):
    return nest.map_structure(spec_of, data)


def _converter(spec: TensorSpec, value_spec: TensorSpec):
    """A function making a batch element of ``value_spec`` fit ``spec`` (a dtype cast, a trailing axis of 1 added
    or dropped), or None when it cannot."""
    want, have = spec.shape, value_spec.shape
    reshape = None
    if want.rank != have.rank:
        if want.rank == have.rank + 1 and want[-1] == 1:
            reshape = "expand"
        elif have.rank == want.rank + 1 and have[-1] == 1:
            reshape = "squeeze"
        else:
            return None
    if reshape is None and not want.is_compatible_with(have):
        return None
    if reshape == "expand" and not want[:-1].is_compatible_with(have):
        return None
    if reshape == "squeeze" and not want.is_compatible_with(have[:-1]):
        return None
    cast = spec.dtype if spec.dtype is not value_spec.dtype else None
    if cast is not None and not (cast.is_floating or cast.is_integer or cast.is_bool) or \
            cast is not None and not (value_spec.dtype.is_floating or value_spec.dtype.is_integer or
                                      value_spec.dtype.is_bool):
        return None
    if reshape is None and cast is None:
        return _identity

    def convert_value(value):
        if isinstance(value, np.ndarray):
            if reshape == "expand":
                value = value[..., None]
            elif reshape == "squeeze":
                value = value[..., 0]
            return value.astype(cast.np) if cast is not None else value
        if reshape == "expand":
            value = array_ops.expand_dims(value, -1)
        elif reshape == "squeeze":
            value = array_ops.squeeze(value, [-1])
        return math_ops.cast(value, cast) if cast is not None else value
    return convert_value


def _identity(value):
    return value


def _batch_key(data):
    """What decides which step function (and conversions) a batch takes: its structure, and each leaf's shape
    without the batch dimension and dtype."""
    if type(data) is tuple and all(type(a) is np.ndarray for a in data):
        return tuple((a.shape[1:], a.dtype) for a in data)
    leaves = nest.flatten(data)
    return (nest.structure_key(data),) + tuple(
        (tuple(a.shape[1:]), a.dtype) if isinstance(a, np.ndarray) else (tuple(a.shape.dims or ())[1:], a.dtype)
        for a in leaves)


def _converters(signature, data_specs):
    """Per-leaf converters from batches of ``data_specs`` to ``signature`` (same structure), or None."""
    if nest.structure_key(signature) != nest.structure_key(data_specs):
        return None
    out = []
    for want, have in zip(nest.flatten(signature), nest.flatten(data_specs)):
        conv = _converter(want, have)
        if conv is None:
            return None
        out.append(conv)
    return out


# ---------------------------------------------------------------------------
# compile()'s loss and metrics.

class CompileLoss:
    """The loss (or one loss per output) given to ``compile``, summed with ``loss_weights``."""

    def __init__(self, loss, loss_weights=None):
        self.structure = loss
        self.losses = nest.map_structure(self._resolve, loss) if isinstance(loss, (list, tuple, dict)) else \
            self._resolve(loss)
        self.loss_weights = loss_weights
        self.metrics: list = []

    @staticmethod
    def _resolve(identifier):
        loss = losses_module.get(identifier)
        if loss is not None and not isinstance(loss, losses_module.Loss):
            loss = losses_module.LossFunctionWrapper(loss, name=identifier if isinstance(identifier, str) else None)
        return loss

    def single(self):
        """The one loss of a single-output model (None otherwise)."""
        return self.losses if isinstance(self.losses, losses_module.Loss) else None

    def __call__(self, y_true, y_pred, sample_weight=None):
        if isinstance(self.losses, losses_module.Loss) or self.losses is None:
            if self.losses is None:
                return None
            return self.losses(y_true, y_pred, sample_weight)
        if isinstance(self.losses, dict):
            keys = sorted(self.losses)
            pairs = [(self.losses[k], y_true[k], y_pred[k]) for k in keys]
            weights = [(self.loss_weights or {}).get(k, 1.0) for k in keys]
        else:
            y_pred = list(y_pred) if isinstance(y_pred, (list, tuple)) else [y_pred]
            y_true = list(y_true) if isinstance(y_true, (list, tuple)) else [y_true]
            if len(y_pred) != len(self.losses) or len(y_true) != len(self.losses):
                raise ValueError(f"compile got {len(self.losses)} losses but the model gives {len(y_pred)} outputs "
                                 f"and the data {len(y_true)} targets")
            pairs = list(zip(self.losses, y_true, y_pred))
            weights = list(self.loss_weights or [1.0] * len(pairs))
        total = None
        for (loss, t, p), w in zip(pairs, weights):
            if loss is None:
                continue
            value = loss(t, p, sample_weight)
            if w != 1.0:
                value = math_ops.multiply(value, float(w))
            total = value if total is None else math_ops.add(total, value)
        return total


class CompileMetrics(metrics_module.Metric):
    """The metrics given to ``compile``, as one metric whose result is a dict (Keras 3's ``compile_metrics``).

    Names are resolved when the targets' and outputs' specs are known: ``"accuracy"`` becomes binary accuracy for
    one output unit, sparse categorical accuracy for integer labels of one rank less than the outputs, and
    categorical accuracy otherwise.
    """

    def __init__(self, metrics, weighted_metrics=None, name: str = "compile_metrics"):
        super().__init__(name=name)
        self._rt_identifiers = list(metrics or [])
        self._rt_weighted_identifiers = list(weighted_metrics or [])
        self._metrics: list = []
        self._weighted_metrics: list = []
        self.built = False

    def build(self, y_spec, y_pred_spec) -> None:
        self._metrics = [self._resolve(m, y_spec, y_pred_spec) for m in self._rt_identifiers]
        self._weighted_metrics = [self._resolve(m, y_spec, y_pred_spec) for m in self._rt_weighted_identifiers]
        self.built = True

    @staticmethod
    def _resolve(identifier, y_spec, y_pred_spec):
        if isinstance(identifier, str) and identifier in ("accuracy", "acc"):
            true_rank = y_spec.shape.rank if y_spec is not None else None
            pred_rank = y_pred_spec.shape.rank if y_pred_spec is not None else None
            if y_pred_spec is not None and pred_rank and y_pred_spec.shape[-1] == 1:
                metric = metrics_module.BinaryAccuracy(name=identifier)
            elif true_rank is not None and pred_rank is not None and (
                    true_rank < pred_rank or (true_rank == pred_rank and y_spec.shape[-1] == 1)):
                metric = metrics_module.SparseCategoricalAccuracy(name=identifier)
            else:
                metric = metrics_module.CategoricalAccuracy(name=identifier)
            return metric
        metric = metrics_module.get(identifier)
        if isinstance(identifier, str):
            metric.name = identifier
        return metric

    @property
    def metrics(self) -> list:
        return self._metrics + self._weighted_metrics

    @property
    def variables(self) -> list:
        return [v for m in self.metrics for v in m.variables]

    def update_state(self, y_true, y_pred, sample_weight=None):
        if isinstance(y_pred, (list, tuple, dict)):
            raise NotImplementedError("compile(metrics=...) is supported for models with one output; for several, "
                                      "update metrics in a custom train_step")
        if not self.built:
            self.build(_maybe_spec(y_true), _maybe_spec(y_pred))
        for metric in self._metrics:
            metric.update_state(y_true, y_pred)
        for metric in self._weighted_metrics:
            metric.update_state(y_true, y_pred, sample_weight=sample_weight)

    def result(self) -> dict:
        return {m.name: m.result() for m in self.metrics}

    def reset_state(self) -> None:
        for metric in self.metrics:
            metric.reset_state()


def _maybe_spec(value):
    if value is None or isinstance(value, (list, tuple, dict)):
        return None
    return TensorSpec(value.shape, value.dtype)


def pythonify_logs(logs) -> dict:
    """Logs as Python floats, keys sorted, nested dicts (``compile_metrics``) merged in."""
    result = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            result.update(pythonify_logs(value))
        else:
            try:
                value = float(np.asarray(value.numpy() if hasattr(value, "numpy") else value))
            except (TypeError, ValueError):
                pass
            result[key] = value
    return result


# ---------------------------------------------------------------------------
# The trainer.

_STEP_METHODS = {"train": "train_step", "test": "test_step", "predict": "predict_step"}


class Trainer:
    """``compile`` / ``fit`` / ``evaluate`` / ``predict`` and the steps they run (mixed into ``Model``)."""

    def _rt_init_trainer(self) -> None:
        self.compiled = False
        self.optimizer = None
        self.loss = None
        self._loss_tracker = None
        self._compile_loss = None
        self._compile_metrics = None
        self.train_function = None
        self.test_function = None
        self.predict_function = None
        self.stop_training = False
        self.history = None
        self._rt_run_eagerly = False
        self._rt_jit_compile = False
        self._rt_functions: list = []        # (kind, step function) made so far
        self._rt_step_cache: dict = {}       # (kind, batch key) -> (step function, converters)

    # -- compile ----------------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly: bool = False, steps_per_execution: int = 1, jit_compile="auto",
                auto_scale_loss: bool = True):
        """Configure training: the optimizer (an instance or a name), the loss (a ``Loss``, a function or a name;
        a list or dict for several outputs) and metrics (names, ``Metric``s or functions)."""
        self.optimizer = optimizers_module.get(optimizer)
        self.loss = loss
        self._compile_loss = CompileLoss(loss, loss_weights) if loss is not None else None
        self._loss_tracker = metrics_module.Mean(name="loss")
        for label, given in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
            if isinstance(given, dict):
                raise NotImplementedError(f"compile: `{label}` per output (a dict) is not supported; give a list")
            if given is not None and not isinstance(given, (list, tuple)):
                raise TypeError(f"compile: `{label}` should be a list of metrics, got {given!r}")
        self._compile_metrics = CompileMetrics(metrics, weighted_metrics) \
            if metrics is not None or weighted_metrics is not None else None
        self._rt_run_eagerly = bool(run_eagerly)
        self._rt_jit_compile = jit_compile is True
        self.compiled = True
        self.stop_training = False
        self._rt_functions = []
        self._rt_step_cache = {}
        self.train_function = self.test_function = self.predict_function = None
        self.make_train_function()
        self.make_test_function()
        self.make_predict_function()

    @property
    def run_eagerly(self) -> bool:
        return self._rt_run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._rt_run_eagerly = bool(value)

    @property
    def compiled_loss(self):
        """Keras 2's ``compiled_loss(y, y_pred, sample_weight=None, regularization_losses=None)``."""
        def compiled_loss(y_true, y_pred, sample_weight=None, regularization_losses=None):
            loss = self._compile_loss(y_true, y_pred, sample_weight) if self._compile_loss is not None else None
            for extra in regularization_losses or ():
                loss = extra if loss is None else math_ops.add(loss, extra)
            return loss
        return compiled_loss

    @property
    def compiled_metrics(self):
        """Keras 2's ``compiled_metrics`` (``update_state(y, y_pred)``)."""
        return self._compile_metrics

    def _assert_compiled(self) -> None:
        if not self.compiled:
            raise RuntimeError("You must call `compile()` before using the model.")

    # -- specs of the data the steps take --------------------------------------------------------------
    def _rt_target_spec(self):
        """The targets' spec the compiled loss implies for the model's output (None when unknown)."""
        out = self._rt_output_spec()
        loss = self._compile_loss.single() if self._compile_loss is not None else None
        if out is None or loss is None or not isinstance(out, TensorSpec):
            return None
        fn = getattr(loss, "fn", None)
        if isinstance(loss, losses_module.SparseCategoricalCrossentropy) or \
                fn is losses_module.sparse_categorical_crossentropy:
            return TensorSpec(out.shape[:-1], dtypes.int32)
        return TensorSpec(out.shape, out.dtype)

    def _rt_compiled_data_spec(self, kind: str):
        """``(x_spec, y_spec)`` (``(x_spec,)`` to predict) known from the model alone, or None."""
        x = self._rt_input_spec()
        if x is None:
            return None
        if kind == "predict":
            return (x,)
        y = self._rt_target_spec()
        return None if y is None else (x, y)

    # -- step functions ------------------------------------------------------------------------------------
    def _rt_make_function(self, kind: str, data_spec):
        """An ``rt.function`` running ``<kind>_step`` on one batch of ``data_spec`` (a tuple: one argument per
        element; anything else: one argument)."""
        model = self
        method = _STEP_METHODS[kind]
        if isinstance(data_spec, tuple):
            def step(*data):
                return getattr(model, method)(tuple(data))
            signature = list(data_spec)
        else:
            def step(data):
                return getattr(model, method)(data)
            signature = [data_spec]
        step.__name__ = step.__qualname__ = f"{kind}_function"
        options = {"jit_compile": True} if self._rt_jit_compile else {}
        fn = function(step, input_signature=signature, autograph=False, **options)
        fn._rt_keras_data_spec = data_spec
        self._rt_functions.append((kind, fn))
        return fn

    def make_train_function(self, force: bool = False):
        """``model.train_function`` for the data the compiled model implies (None when its input is unknown)."""
        if self.train_function is None or force:
            spec = self._rt_compiled_data_spec("train")
            if spec is not None:
                self._rt_build_compile_metrics(spec)
                self.train_function = self._rt_make_function("train", spec)
        return self.train_function

    def make_test_function(self, force: bool = False):
        if self.test_function is None or force:
            spec = self._rt_compiled_data_spec("test")
            if spec is not None:
                self._rt_build_compile_metrics(spec)
                self.test_function = self._rt_make_function("test", spec)
        return self.test_function

    def make_predict_function(self, force: bool = False):
        if self.predict_function is None or force:
            spec = self._rt_compiled_data_spec("predict")
            if spec is not None:
                self.predict_function = self._rt_make_function("predict", spec)
        return self.predict_function

    def _rt_build_compile_metrics(self, data_spec) -> None:
        """Create the compiled metrics (their variables) before any step is traced."""
        if self._compile_metrics is None or self._compile_metrics.built:
            return
        _, y, _ = unpack_x_y_sample_weight(data_spec)
        self._compile_metrics.build(y if isinstance(y, TensorSpec) else None, self._rt_output_spec())

    def _rt_step_for(self, kind: str, data):
        """(function, converters) running ``kind`` on ``data``: the current step function when the batch fits its
        signature (after conversions), else one made for the batch's specs."""
        data_spec = _structure_specs(data)
        current = {"train": self.train_function, "test": self.test_function,
                   "predict": self.predict_function}[kind]
        candidates = ([current] if current is not None else []) + [fn for k, fn in self._rt_functions if k == kind]
        for fn in candidates:
            convs = _converters(fn._rt_keras_data_spec, data_spec)
            if convs is not None:
                return fn, convs
        if kind != "predict":
            self._rt_build_compile_metrics(data_spec if isinstance(data_spec, tuple) else (data_spec,))
        fn = self._rt_make_function(kind, data_spec)
        setattr(self, f"{kind}_function", fn)
        return fn, [_identity] * len(nest.flatten(data_spec))

    def _rt_lookup(self, kind: str, data):
        """(function, converters or None when the batch needs none), cached by the batch's key."""
        key = (kind, _batch_key(data))
        found = self._rt_step_cache.get(key)
        if found is None:
            fn, convs = self._rt_step_for(kind, data)
            found = self._rt_step_cache[key] = (fn, None if all(c is _identity for c in convs) else convs)
        return found

    def _rt_run_step(self, kind: str, data):
        if self._rt_run_eagerly:
            data = nest.map_structure(lambda v: convert(v) if isinstance(v, np.ndarray) else v, data)
            return getattr(self, _STEP_METHODS[kind])(data if not isinstance(data, list) else tuple(data))
        fn, convs = self._rt_lookup(kind, data)
        if convs is not None:
            data = nest.pack_sequence_as(data, [c(v) for c, v in zip(convs, nest.flatten(data))])
        return fn(*data) if isinstance(data, tuple) else fn(data)

    def _rt_prepare(self, kind: str, adapter) -> None:
        """Convert in-memory data to the step function's signature once, not batch by batch."""
        if self._rt_run_eagerly or not isinstance(adapter, ArrayAdapter) or adapter.size == 0:
            return
        first = nest.map_structure(lambda a: a[:1], adapter.data)
        _, convs = self._rt_lookup(kind, first)
        if convs is not None:
            adapter.data = nest.pack_sequence_as(adapter.data, [c(a) for c, a in zip(convs,
                                                                                    nest.flatten(adapter.data))])

    # -- the steps ----------------------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training: bool = True):
        """The compiled loss of ``(y, y_pred)`` plus the layers' ``losses`` (regularization, ``add_loss``)."""
        total = None
        if self._compile_loss is not None:
            total = self._compile_loss(y, y_pred, sample_weight)
        for extra in self.losses:
            extra = convert(extra)
            if extra.shape.rank:
                extra = math_ops.reduce_sum(extra)
            total = extra if total is None else math_ops.add(total, math_ops.cast(extra, total.dtype))
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Update the compiled metrics; the results of every metric in ``self.metrics``."""
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        out = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[metric.name] = result
        return out

    def _rt_call(self, x, training: bool):
        """``self(x, training=...)`` when ``call`` takes ``training`` (else ``self(x)``, as Keras 3 calls it)."""
        return self(x, training=training) if "training" in self._rt_call_parameters else self(x)

    def train_step(self, data):
        """One training step on a batch: forward, loss, gradients, optimizer update, metrics (Keras 3's)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self._rt_call(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        weights = self.trainable_weights
        if weights:
            grads = tape.gradient(loss, weights)
            self.optimizer.apply_gradients(zip(grads, weights))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self, data):
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self._rt_call(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self._rt_call(x, training=False)

    # -- metrics ---------------------------------------------------------------------------------------------
    @property
    def metrics(self) -> list:
        """The loss tracker, the compiled metrics, then metrics held by the model's attributes (Keras 3's order)."""
        found = []
        if self.compiled:
            if self._loss_tracker is not None:
                found.append(self._loss_tracker)
            if self._compile_metrics is not None:
                found.append(self._compile_metrics)
        seen = {id(m) for m in found}
        for key, value in vars(self).items():
            if key.startswith("_rt_") or key in ("_loss_tracker", "_compile_metrics"):
                continue
            for leaf in nest.flatten(value) if isinstance(value, (list, tuple)) else [value]:
                if isinstance(leaf, metrics_module.Metric) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    found.append(leaf)
        return found

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def _rt_flatten_metrics_in_order(self, logs: dict):
        names = []
        for metric in self.metrics:
            if isinstance(metric, CompileMetrics):
                names += [m.name for m in metric.metrics]
            else:
                names.append(metric.name)
        results = [logs[n] for n in names if n in logs] + [logs[k] for k in sorted(logs) if k not in names]
        return results[0] if len(results) == 1 else results

    # -- fit / evaluate / predict --------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs: int = 1, verbose="auto", callbacks=None,
            validation_split: float = 0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch: int = 0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq: int = 1):
        """Train for ``epochs`` epochs; returns the ``History`` (``history.history["loss"]`` ...)."""
        self._assert_compiled()
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = _split_validation(x, y, sample_weight, validation_split)
        adapter = make_adapter(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, class_weight)
        verbose = 1 if verbose == "auto" else int(verbose)
        history = callbacks_module.History()
        cbs = callbacks_module.CallbackList(list(callbacks or []) + [history], model=self, epochs=epochs,
                                            steps=adapter.num_batches, verbose=verbose, in_fit=True)
        if verbose:
            cbs.append(callbacks_module.ProgbarLogger(verbose))
        if validation_data is not None:
            validation_data = tuple(validation_data) if isinstance(validation_data, (list, tuple)) else \
                validation_data
        self.stop_training = False
        self._rt_prepare("train", adapter)
        batch_begin, batch_end = cbs.wants("on_train_batch_begin"), cbs.wants("on_train_batch_end")
        cbs.on_train_begin()
        logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            step_logs, steps = None, 0
            for step, data in adapter.epoch():
                if batch_begin:
                    cbs.on_train_batch_begin(step)
                step_logs = self._rt_run_step("train", data)
                steps = step + 1
                if batch_end:
                    cbs.on_train_batch_end(step, step_logs)
                if self.stop_training:
                    break
            cbs.params["seen"] = steps
            if step_logs is None:
                raise ValueError("fit: the data gave no batch in an epoch (empty data, or a dataset ran out: use "
                                 "repeat() or steps_per_epoch)")
            epoch_logs = pythonify_logs(step_logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                val_x, val_y, val_w = unpack_x_y_sample_weight(validation_data)
                val_logs = self._rt_evaluate(val_x, val_y, val_w, validation_batch_size or batch_size,
                                             validation_steps, cbs)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return history

    def _rt_evaluate(self, x, y, sample_weight, batch_size, steps, cbs) -> dict:
        adapter = make_adapter(x, y, sample_weight, batch_size, False, steps)
        self._rt_prepare("test", adapter)
        self.reset_metrics()
        batch_begin, batch_end = cbs.wants("on_test_batch_begin"), cbs.wants("on_test_batch_end")
        cbs.on_test_begin()
        step_logs, seen = None, 0
        for step, data in adapter.epoch():
            if batch_begin:
                cbs.on_test_batch_begin(step)
            step_logs = self._rt_run_step("test", data)
            seen = step + 1
            if batch_end:
                cbs.on_test_batch_end(step, step_logs)
        cbs.params["seen_test"] = seen
        if step_logs is None:
            raise ValueError("evaluate: the data gave no batch")
        logs = pythonify_logs(step_logs)
        cbs.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict: bool = False, **kwargs):
        """The loss and metrics over the data: a scalar (loss only), a list in ``metrics_names`` order, or a dict."""
        self._assert_compiled()
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = callbacks_module.CallbackList(list(callbacks or []), model=self, steps=None, verbose=verbose)
        if verbose:
            cbs.append(callbacks_module.ProgbarLogger(verbose))
        logs = self._rt_evaluate(x, y, sample_weight, batch_size, steps, cbs)
        return logs if return_dict else self._rt_flatten_metrics_in_order(logs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for ``x``, batch by batch, concatenated into numpy arrays."""
        verbose = 1 if verbose == "auto" else int(verbose)
        if isinstance(x, Dataset):
            adapter = DatasetAdapter(x, steps)
        else:
            adapter = ArrayAdapter(x, batch_size=batch_size, steps=steps)
        cbs = callbacks_module.CallbackList(list(callbacks or []), model=self, verbose=verbose)
        if verbose:
            cbs.append(callbacks_module.ProgbarLogger(verbose))
        self._rt_prepare("predict", adapter)
        batch_begin, batch_end = cbs.wants("on_predict_batch_begin"), cbs.wants("on_predict_batch_end")
        cbs.on_predict_begin()
        outputs = []
        for step, data in adapter.epoch():
            if batch_begin:
                cbs.on_predict_batch_begin(step)
            if isinstance(x, Dataset):
                xb, _, _ = unpack_x_y_sample_weight(data)
                data = (xb,)
            result = self._rt_run_step("predict", data)
            outputs.append(nest.map_structure(lambda t: t.numpy(), result))
            if batch_end:
                cbs.on_predict_batch_end(step, {"outputs": result})
        cbs.params["seen_predict"] = len(outputs)
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict: the data gave no batch")
        return nest.pack_sequence_as(outputs[0], [np.concatenate(parts) for parts in
                                                  zip(*[nest.flatten(o) for o in outputs])])

    def _rt_batch_data(self, x, y, sample_weight):
        parts = [x] if y is None and sample_weight is None else [x, y] if sample_weight is None else [x, y,
                                                                                                   sample_weight]
        return tuple(nest.map_structure(lambda v: v if isinstance(v, EagerTensor) else _as_array(v, "on_batch"), p)
                     for p in parts)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict: bool = False):
        """One training step on one batch (the metrics are reset first, as in Keras 3)."""
        self._assert_compiled()
        if class_weight is not None and sample_weight is not None:
            raise ValueError("Arguments `sample_weight` and `class_weight` cannot be specified at the same time.")
        data = self._rt_batch_data(x, y, sample_weight)
        if class_weight is not None:
            data = _with_class_weight(tuple(nest.map_structure(lambda v: np.asarray(v), data)), class_weight)
        self.reset_metrics()
        logs = pythonify_logs(self._rt_run_step("train", data))
        return logs if return_dict else self._rt_flatten_metrics_in_order(logs)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict: bool = False):
        self._assert_compiled()
        self.reset_metrics()
        logs = pythonify_logs(self._rt_run_step("test", self._rt_batch_data(x, y, sample_weight)))
        return logs if return_dict else self._rt_flatten_metrics_in_order(logs)

    def predict_on_batch(self, x):
        result = self._rt_run_step("predict", self._rt_batch_data(x, None, None))
        return nest.map_structure(lambda t: t.numpy(), result)


def _batch_size(x):
    """The batch size of ``x`` (its first leaf's first dimension) as a loss tracker's sample weight."""
    first = nest.flatten(x)[0]
    if first.shape.rank and first.shape[0] is not None:
        return float(first.shape[0])
    return array_ops.shape(first)[0]


__all__ = ["ArrayAdapter", "CompileLoss", "CompileMetrics", "DatasetAdapter", "Trainer", "pythonify_logs",
           "unpack_x_y_sample_weight"]
