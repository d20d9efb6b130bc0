"""Weight constraints (``rt.keras.constraints``): their numbers against Keras 3's and by hand, the layers that pass
them to their weights, and the optimizers applying them after each step, eagerly, in a Function and in the lowered
(native) code of a training step."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

C = rt.keras.constraints
L = rt.keras.layers
EPSILON = 1e-7


def _keras():
    pytest.importorskip("tensorflow")
    import keras
    return keras


def _rng(seed=0):
    return np.random.default_rng(seed)


def _eager_and_traced(constraint, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    traced = rt.function(lambda x: constraint(x), autograph=False)
    return constraint(rt.constant(w)).numpy(), traced(rt.constant(w)).numpy()


# ---------------------------------------------------------------------------
# The constraints' numbers.

# column norms 5, 0.5, 1 and 1e-6 (where epsilon shows: 1e-6 / (1e-7 + 1e-6) = 0.909...)
W = np.array([[3.0, 0.5, -1.0, 6e-7], [4.0, 0.0, 0.0, 8e-7]], np.float32)
TINY = 1e-6


def _columns(*scales) -> np.ndarray:
    return (W.astype(np.float64) * np.array(scales)).astype(np.float32)


BY_HAND = {
    # clip(norm, 0, 1) / (eps + norm) per column
    "max_norm": (C.MaxNorm(1.0), _columns(1 / (5 + EPSILON), 0.5 / (0.5 + EPSILON), 1 / (1 + EPSILON),
                                          TINY / (TINY + EPSILON))),
    "unit_norm": (C.UnitNorm(), _columns(1 / (5 + EPSILON), 1 / (0.5 + EPSILON), 1 / (1 + EPSILON),
                                         1 / (TINY + EPSILON))),
    "non_neg": (C.NonNeg(), np.array([[3.0, 0.5, 0.0, 6e-7], [4.0, 0.0, 0.0, 8e-7]], np.float32)),
    # desired = 0.5 * clip(norm, 0.8, 2) + 0.5 * norm: 3.5, 0.65, 1, 0.4 + 0.5e-6
    "min_max_norm": (C.MinMaxNorm(0.8, 2.0, rate=0.5), _columns(3.5 / (5 + EPSILON), 0.65 / (0.5 + EPSILON),
                                                               1 / (1 + EPSILON), (0.4 + TINY / 2) / (TINY + EPSILON))),
    # one norm over both axes: sqrt(9 + 16 + 0.25 + 1 + 1e-12)
    "max_norm_all_axes": (C.MaxNorm(2.0, axis=[0, 1]), _columns(*[2 / (np.sqrt(26.25 + TINY**2) + EPSILON)] * 4)),
    # the row norms 3.2015..., 4: both above 1
    "max_norm_rows": (C.MaxNorm(1.0, axis=1),
                      (W.astype(np.float64) / (np.linalg.norm(W.astype(np.float64), axis=1, keepdims=True)
                                               + EPSILON)).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_constraints_by_hand(name):
    constraint, expected = BY_HAND[name]
    eager, traced = _eager_and_traced(constraint, W)
    np.testing.assert_allclose(eager, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(traced, eager)
    assert eager.dtype == np.float32


def test_the_base_constraint_returns_its_input():
    w = rt.constant(W)
    assert C.Constraint()(w) is w
    assert C.Constraint().get_config() == {}


KERAS_CASES = {
    "max_norm": lambda m: m.MaxNorm(),
    "max_norm_small": lambda m: m.MaxNorm(max_value=0.5, axis=0),
    "max_norm_conv_filters": lambda m: m.MaxNorm(max_value=1.0, axis=[0, 1, 2]),
    "max_norm_last_axis": lambda m: m.MaxNorm(max_value=0.7, axis=-1),
    "unit_norm": lambda m: m.UnitNorm(),
    "unit_norm_axis_1": lambda m: m.UnitNorm(axis=1),
    "non_neg": lambda m: m.NonNeg(),
    "min_max_norm": lambda m: m.MinMaxNorm(),
    "min_max_norm_rate": lambda m: m.MinMaxNorm(min_value=0.9, max_value=1.5, rate=0.3, axis=1),
}


@pytest.mark.parametrize("name", sorted(KERAS_CASES))
def test_constraints_match_keras(name):
    keras = _keras()
    shape = (3, 3, 4, 5) if name == "max_norm_conv_filters" else (6, 4)
    w = (_rng(3).standard_normal(shape) * 0.8).astype(np.float32)
    ours, theirs = KERAS_CASES[name](C), KERAS_CASES[name](keras.constraints)
    expected = keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(w)))
    eager, traced = _eager_and_traced(ours, w)
    np.testing.assert_allclose(eager, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(traced, expected, rtol=1e-6, atol=1e-7)
    assert ours.get_config() == theirs.get_config()


# ---------------------------------------------------------------------------
# get, serialize, deserialize.

def test_get_takes_names_configs_classes_and_callables():
    assert C.get(None) is None
    for name, cls in [("max_norm", C.MaxNorm), ("MaxNorm", C.MaxNorm), ("non_neg", C.NonNeg), ("NonNeg", C.NonNeg),
                      ("unit_norm", C.UnitNorm), ("min_max_norm", C.MinMaxNorm), ("MinMaxNorm", C.MinMaxNorm)]:
        assert type(C.get(name)) is cls, name
    assert C.get("max_norm").get_config() == {"max_value": 2, "axis": 0}           # Keras' defaults
    assert C.get("min_max_norm").get_config() == {"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0}
    assert type(C.get(C.UnitNorm)) is C.UnitNorm
    instance = C.MaxNorm(3)
    assert C.get(instance) is instance

    def clip(w):
        return rt.clip_by_value(w, -1.0, 1.0)
    assert C.get(clip) is clip
    assert C.max_norm is C.MaxNorm and C.non_neg is C.NonNeg and C.unit_norm is C.UnitNorm
    assert C.min_max_norm is C.MinMaxNorm


def test_serialize_and_get_round_trip():
    for constraint in [C.MaxNorm(0.5, axis=[0, 1]), C.MinMaxNorm(0.1, 3.0, 0.25, 1), C.NonNeg(), C.UnitNorm(-1)]:
        config = C.serialize(constraint)
        assert config == {"module": "keras.constraints", "class_name": type(constraint).__name__,
                          "config": constraint.get_config(), "registered_name": None}
        again = C.get(config)
        assert type(again) is type(constraint) and again.get_config() == constraint.get_config()
        assert type(constraint).from_config(constraint.get_config()).get_config() == constraint.get_config()
    assert C.serialize(None) is None


def test_serialize_matches_keras():
    keras = _keras()
    for make in KERAS_CASES.values():
        assert C.serialize(make(C)) == keras.constraints.serialize(make(keras.constraints))
    theirs = keras.constraints.serialize(keras.constraints.MinMaxNorm(0.2, 2.0, 0.5, 1))
    assert C.get(theirs).get_config() == {"min_value": 0.2, "max_value": 2.0, "rate": 0.5, "axis": 1}


def test_a_custom_constraint_round_trips_through_custom_objects():
    class Halve(C.Constraint):
        def __init__(self, factor=0.5):
            self.factor = factor

        def __call__(self, w):
            return rt.multiply(w, self.factor)

        def get_config(self):
            return {"factor": self.factor}

    config = C.serialize(Halve(0.25))
    assert config == {"module": None, "class_name": "Halve", "config": {"factor": 0.25}, "registered_name": "Halve"}
    with pytest.raises(ValueError, match="unknown class_name 'Halve'"):
        C.get(config)
    again = C.deserialize(config, custom_objects={"Halve": Halve})
    assert isinstance(again, Halve) and again.factor == 0.25


@pytest.mark.parametrize("identifier, shown", [("maxnorm", "'maxnorm'"), ("MAX_NORM", "'MAX_NORM'"), (3, "3"),
                                               ({"class_name": "Nope", "config": {}}, "'Nope'"),
                                               ({"config": {}}, "'config'")])
def test_a_bad_identifier_is_a_value_error_naming_it(identifier, shown):
    with pytest.raises(ValueError, match="Could not interpret constraint identifier") as info:
        C.get(identifier)
    assert shown in str(info.value)
    with pytest.raises(ValueError, match="'maxnorm'"):
        L.Dense(2, kernel_constraint="maxnorm")


def test_a_variable_constraint_must_be_callable():
    with pytest.raises(ValueError, match="rt.Variable 'w' must be a callable"):
        rt.Variable(1.0, name="w", constraint=2.0)
    assert rt.Variable(1.0).constraint is None
    assert rt.Variable([1.0], constraint=C.NonNeg()).constraint.get_config() == {}


# ---------------------------------------------------------------------------
# Layers keep their constraints on their weights and report them in get_config.

LAYERS = {
    "dense": (lambda m: m.layers.Dense(3, kernel_constraint=m.constraints.MaxNorm(1.5), bias_constraint="non_neg"),
              (None, 4), {"kernel": "kernel_constraint", "bias": "bias_constraint"}),
    "conv2d": (lambda m: m.layers.Conv2D(2, 3, kernel_constraint=m.constraints.MaxNorm(1.0, axis=[0, 1, 2])),
               (None, 5, 5, 3), {"kernel": "kernel_constraint", "bias": "bias_constraint"}),
    "embedding": (lambda m: m.layers.Embedding(10, 4, embeddings_constraint="unit_norm"), (None, 3),
                  {"embeddings": "embeddings_constraint"}),
    "batch_normalization": (lambda m: m.layers.BatchNormalization(beta_constraint="non_neg",
                                                                  gamma_constraint=m.constraints.MinMaxNorm(0.5, 2.0)),
                            (None, 4), {"beta": "beta_constraint", "gamma": "gamma_constraint"}),
    "layer_normalization": (lambda m: m.layers.LayerNormalization(gamma_constraint=m.constraints.NonNeg()),
                            (None, 4), {"gamma": "gamma_constraint", "beta": "beta_constraint"}),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_put_their_constraints_on_their_weights(name):
    make, shape, weights = LAYERS[name]
    layer = make(rt.keras)
    layer.build(shape)
    config = layer.get_config()
    for attribute, key in weights.items():
        variable = getattr(layer, attribute)
        assert C.serialize(variable.constraint) == config[key], (attribute, key)
    assert any(config[key] is not None for key in weights.values())
    for variable in layer.weights:
        if not variable.trainable:
            assert variable.constraint is None                 # moving statistics have none


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_configs_report_constraints_as_keras_does(name):
    keras = _keras()
    make, _, weights = LAYERS[name]
    ours, theirs = make(rt.keras).get_config(), make(keras).get_config()
    for key in weights.values():
        assert ours[key] == theirs[key], key


def test_add_weight_keeps_the_constraint():
    class Positive(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(int(input_shape[-1]),), initializer="ones", constraint="non_neg", name="w")
            self.free = self.add_weight(shape=(), initializer="zeros", name="free")

        def call(self, x):
            return x * self.w + self.free

    layer = Positive()
    layer.build((None, 2))
    assert isinstance(layer.w.constraint, C.NonNeg) and layer.free.constraint is None
    opt = rt.keras.optimizers.SGD(1.0)
    opt.apply_gradients([(rt.constant([3.0, -1.0]), layer.w), (rt.constant(-2.0), layer.free)])
    assert layer.w.numpy().tolist() == [0.0, 2.0]            # 1 - 3 clipped to 0
    assert float(layer.free.numpy()) == 2.0


# ---------------------------------------------------------------------------
# Training: the optimizer applies the constraint after each step.

MAX = 0.5


def _start():
    rng = _rng(7)
    return [(rng.standard_normal((4, 3)) * 2).astype(np.float32), (rng.standard_normal(3) * 0.1).astype(np.float32)]


def _batches():
    rng = _rng(8)
    return [(rng.standard_normal((16, 4)).astype(np.float32), rng.standard_normal((16, 3)).astype(np.float32))
            for _ in range(4)]


def _train_rt(optimizer: str, traced: bool) -> np.ndarray:
    model = rt.keras.Sequential([L.Dense(3, kernel_constraint=C.MaxNorm(MAX))])
    model.build((None, 4))
    model.set_weights(_start())
    opt = {"sgd": rt.keras.optimizers.SGD(0.1, momentum=0.5), "adam": rt.keras.optimizers.Adam(0.05)}[optimizer]

    def step(x, y):
        with rt.GradientTape() as tape:
            loss = rt.reduce_mean(rt.square(model(x) - y))
        variables = model.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    run = rt.function(step) if traced else step
    for x, y in _batches():
        run(rt.constant(x), rt.constant(y))
    if traced:
        assert run.experimental_get_tracing_count() == 1
    return [v.numpy() for v in model.weights]


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_max_norm_kernel_stays_within_its_norm(optimizer, traced):
    assert np.linalg.norm(_start()[0], axis=0).min() > 2 * MAX               # the start is far outside
    kernel, _ = _train_rt(optimizer, traced)
    norms = np.linalg.norm(kernel.astype(np.float64), axis=0)
    assert norms.max() <= MAX * (1 + 1e-6), norms


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_max_norm_model_trains_like_keras(optimizer):
    keras = _keras()
    import tensorflow as tf
    dense = keras.layers.Dense(3, kernel_constraint=keras.constraints.MaxNorm(MAX))
    model = keras.Sequential([keras.Input((4,)), dense])
    model.set_weights(_start())
    opt = {"sgd": keras.optimizers.SGD(0.1, momentum=0.5), "adam": keras.optimizers.Adam(0.05)}[optimizer]
    for x, y in _batches():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    theirs = model.get_weights()
    for traced in (False, True):
        for ours, expected in zip(_train_rt(optimizer, traced), theirs):
            np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6, err_msg=f"traced={traced}")


def test_fit_applies_the_constraints():
    rt.keras.utils.set_random_seed(0)
    model = rt.keras.Sequential([L.Dense(3, kernel_constraint="unit_norm", bias_constraint="non_neg")])
    model.compile(optimizer=rt.keras.optimizers.SGD(0.5), loss="mse")
    x, y = _batches()[0]
    model.fit(x, y - 5.0, epochs=2, batch_size=8, verbose=0)        # targets below: the bias wants to go negative
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(np.linalg.norm(kernel, axis=0), 1.0, rtol=1e-5)
    assert (bias >= 0).all() and (bias == 0).any()


def test_a_restored_model_keeps_applying_its_constraints(tmp_path):
    def model():
        return rt.keras.Sequential([L.Dense(3, kernel_constraint=C.MaxNorm(MAX))])
    trained = model()
    trained.build((None, 4))
    trained.set_weights([w * 0.1 for w in _start()])               # inside the bound
    path = str(tmp_path / "constrained.weights.h5")
    trained.save_weights(path)
    fresh = model()
    fresh.load_weights(path)                                          # assigned when built
    fresh.build((None, 4))
    np.testing.assert_array_equal(fresh.get_weights()[0], trained.get_weights()[0])
    kernel = fresh.layers[0].kernel
    assert isinstance(kernel.constraint, C.MaxNorm)
    rt.keras.optimizers.SGD(1.0).apply_gradients([(rt.constant(-_start()[0]), kernel)])
    assert np.linalg.norm(kernel.numpy(), axis=0).max() <= MAX * (1 + 1e-6)


def test_the_constraint_is_in_a_training_step_lowered_to_native_code():
    """The constraint's ops are graph ops after the update in the traced step, and the lowering gives every op of
    the step a native form (no Python callback): built code applies the constraint as eager code does."""
    from runtime.optimizer import optimize
    from transpiler.lowering import lower_function

    model = rt.keras.Sequential([L.Dense(3, kernel_constraint=C.MaxNorm(MAX), bias_constraint=C.NonNeg())])
    model.build((None, 4))
    opt = rt.keras.optimizers.Adam(0.05)

    @rt.function(input_signature=[rt.TensorSpec([None, 4], rt.float32), rt.TensorSpec([None, 3], rt.float32)])
    def step(x, y):
        with rt.GradientTape() as tape:
            loss = rt.reduce_mean(rt.square(model(x) - y))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    graph = optimize(step.get_concrete_function().graph)
    kernel = model.layers[0].kernel.handle
    writes = [op.type for op in graph.get_operations() if op.attrs.get("variable") is kernel
              and op.type != "ReadVariableOp"]
    assert writes == ["AssignSubVariableOp", "AssignVariableOp"]      # Adam's update, then the constraint
    assert {"Sqrt", "Minimum", "Maximum"} <= {op.type for op in graph.get_operations()}
    report = lower_function(graph, "rt_fn_constrained_step").report
    assert report.callbacks == {}
