"""Layers and model structure as Keras 3 has them: the functional API, Sequential, custom layers, the new layers
(against Keras with our weights copied in, and against their definitions in numpy), summary()."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

L = rt.keras.layers


def _keras():
    pytest.importorskip("tensorflow")
    import keras
    return keras


def _rng(seed=0):
    return np.random.default_rng(seed)


def _copy(ours, theirs):
    theirs.set_weights([v.numpy() for v in ours.weights])


# ---------------------------------------------------------------------------
# Functional models and Sequential.

def test_input_and_functional_model():
    rt.keras.backend.clear_session()
    x = rt.keras.Input(shape=(4,), name="features")
    assert x.shape == (None, 4) and x.dtype is rt.float32
    assert repr(x) == "<KerasTensor shape=(None, 4), dtype=float32, sparse=False, name=features>"
    h = L.Dense(8, activation="relu")(x)
    assert isinstance(h, rt.keras.KerasTensor) and h.shape == (None, 8)
    out = L.Dense(3)(h)
    model = rt.keras.Model(inputs=x, outputs=out)
    assert model.name == "functional"
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Dense", "Dense"]
    assert model.input_shape == (None, 4) and model.output_shape == (None, 3)
    assert [tuple(v.shape) for v in model.trainable_variables] == [(4, 8), (8,), (8, 3), (3,)]
    data = _rng().standard_normal((5, 4)).astype(np.float32)
    k, b = model.layers[1].kernel.numpy(), model.layers[1].bias.numpy()
    k2, b2 = model.layers[2].kernel.numpy(), model.layers[2].bias.numpy()
    np.testing.assert_allclose(model(data).numpy(), np.maximum(data @ k + b, 0) @ k2 + b2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rt.function(model)(data).numpy(), model(data).numpy(), rtol=1e-5, atol=1e-6)
    assert model.get_layer(model.layers[1].name) is model.layers[1]


def test_functional_model_with_two_inputs_casts_data_to_the_inputs_dtypes():
    a, b = rt.keras.Input((3,)), rt.keras.Input((2,))
    merged = L.Concatenate()([a, L.Activation("linear")(L.Reshape((2,))(b))])
    model = rt.keras.Model([a, b], L.Dense(1, kernel_initializer="ones")(merged))
    out = model([np.ones((2, 3), np.float64), np.array([[1, 2], [3, 4]], np.int32)])
    assert out.dtype is rt.float32 and out.numpy().ravel().tolist() == [6.0, 10.0]
    with pytest.raises(ValueError, match="expects 2 inputs"):
        model(np.ones((2, 3), np.float32))


def test_functional_model_errors_name_the_problem():
    a, b = rt.keras.Input((3,)), rt.keras.Input((3,))
    out = L.Add()([a, b])
    with pytest.raises(ValueError, match="not among the model's inputs"):
        rt.keras.Model(a, out)
    with pytest.raises(TypeError, match="KerasTensors"):
        rt.keras.Model(a, rt.constant([1.0]))
    with pytest.raises(TypeError, match="Operations on KerasTensors"):
        a + 1.0


def test_sequential_builds_at_once_with_an_input_shape():
    rt.keras.backend.clear_session()
    for first in ([rt.keras.Input((4,)), L.Dense(3)], [L.Dense(3, input_shape=(4,))], [L.Dense(3, input_dim=4)]):
        model = rt.keras.Sequential(first + [L.Dense(2)])
        assert model.built and [tuple(v.shape) for v in model.weights] == [(4, 3), (3,), (3, 2), (2,)]
        assert [type(layer).__name__ for layer in model.layers] == ["Dense", "Dense"]
        assert model.output_shape == (None, 2)
    model = rt.keras.Sequential()
    model.add(rt.keras.Input((5,)))
    model.add(L.Dense(2))
    assert model.weights[0].shape == (5, 2)
    model.add(L.Dense(7))
    assert model.output_shape == (None, 7) and len(model.layers) == 2
    assert isinstance(model.pop(), L.Dense) and model.output_shape == (None, 2)
    with pytest.raises(TypeError, match="Only instances of `rt.keras.Layer`"):
        model.add("dense")
    with pytest.raises(ValueError, match="may only come first"):
        model.add(rt.keras.Input((5,)))


def test_summary_is_keras_table():
    rt.keras.backend.clear_session()
    model = rt.keras.Sequential([rt.keras.Input((4,)), L.Dense(3), L.BatchNormalization(), L.Dropout(0.5)])
    lines = []
    model.summary(print_fn=lines.append)
    assert lines == [
        'Model: "sequential"',
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓",
        "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃",
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩",
        "│ dense (Dense)                   │ (None, 3)              │            15 │",
        "├─────────────────────────────────┼────────────────────────┼───────────────┤",
        "│ batch_normalization             │ (None, 3)              │            12 │",
        "│ (BatchNormalization)            │                        │               │",
        "├─────────────────────────────────┼────────────────────────┼───────────────┤",
        "│ dropout (Dropout)               │ (None, 3)              │             0 │",
        "└─────────────────────────────────┴────────────────────────┴───────────────┘",
        " Total params: 27 (108.00 B)",
        " Trainable params: 21 (84.00 B)",
        " Non-trainable params: 6 (24.00 B)",
    ]
    inputs = rt.keras.Input((4,))
    functional = rt.keras.Model(inputs, L.Dense(1000)(inputs))
    lines = []
    functional.summary(print_fn=lines.append)
    assert lines[4] == "│ input_layer_1 (InputLayer)      │ (None, 4)              │             0 │"
    assert lines[6] == "│ dense_1 (Dense)                 │ (None, 1000)           │         5,000 │"
    assert lines[-3] == " Total params: 5,000 (19.53 KB)"


def test_sequential_without_an_input_builds_its_graph_on_the_first_call():
    rt.keras.backend.clear_session()
    model = rt.keras.Sequential([L.Dense(3), L.Dense(2)])
    assert not model.built and model.weights == []
    model(np.ones((5, 4), np.float32))
    assert model.output_shape == (None, 2) and model.layers[0]._rt_output_shape == (None, 3)
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[4] == "│ dense (Dense)                   │ (None, 3)              │            15 │"


def test_subclassed_model_summary_before_and_after_building():
    class Net(rt.keras.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(3)

        def call(self, x):
            return self.d(x)
    net = Net()
    lines = []
    net.summary(print_fn=lines.append)
    assert "?" in lines[4] and "0 (unbuilt)" in lines[4]
    net(np.ones((2, 4), np.float32))
    lines = []
    net.summary(print_fn=lines.append)
    assert lines[4].rstrip("│ ").endswith("15") and lines[-3] == " Total params: 15 (60.00 B)"


# ---------------------------------------------------------------------------
# Custom layers.

def test_custom_layer_guide():
    class MyDenseLayer(L.Layer):
        def __init__(self, num_outputs):
            super().__init__()
            self.num_outputs = num_outputs

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", shape=[int(input_shape[-1]), self.num_outputs])

        def call(self, inputs):
            return rt.matmul(inputs, self.kernel)

    layer = MyDenseLayer(10)
    assert not layer.built and layer.weights == []
    out = layer(rt.zeros([10, 5]))
    assert out.shape == (10, 10) and layer.built
    assert [v.name for v in layer.trainable_variables] == ["kernel"]            # Keras 3: the name given ...
    assert [v.path for v in layer.trainable_variables] == [f"{layer.name}/kernel"]   # ... and the layer's path
    assert layer.kernel.shape == (5, 10)
    layer(rt.zeros([3, 5]))                                   # built once
    assert len(layer.weights) == 1


def test_add_weight_keras3_form_and_weight_order():
    class Block(L.Layer):
        def build(self, input_shape):
            self.moving = self.add_weight(shape=(2,), initializer="ones", trainable=False, name="moving")
            self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="zeros", name="w")
            self.steps = self.add_weight(shape=(), dtype="int64", name="steps", trainable=False)
            self.inner = L.Dense(2)

        def call(self, x):
            return self.inner(x @ self.w) * self.moving

    block = Block()
    block(np.ones((1, 3), np.float32))
    # created-trainable first (Keras 3), then the rest, then the sublayers'
    assert [v.name.split("/")[-1] for v in block.weights] == ["w", "moving", "steps", "kernel", "bias"]
    assert block.steps.dtype is rt.int64 and block.steps.numpy() == 0
    assert [v.name.split("/")[-1] for v in block.trainable_weights] == ["w", "kernel", "bias"]
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 5
    assert not block.inner.trainable and not block.inner.kernel.trainable
    block.trainable = True
    assert [v.name.split("/")[-1] for v in block.trainable_weights] == ["w", "kernel", "bias"]
    assert not block.moving.trainable


def test_unknown_layer_arguments_are_an_error():
    with pytest.raises(TypeError, match="Unrecognized keyword arguments passed to Dense"):
        L.Dense(3, foo=1)
    with pytest.raises(ValueError, match="units"):
        L.Dense(0)


def test_training_flag_reaches_layers_inside_a_subclassed_call():
    class Net(rt.keras.Model):
        def __init__(self):
            super().__init__()
            self.drop = L.Dropout(0.5, seed=3)

        def call(self, x, training=None):
            return self.drop(x) * 1.0

    x = np.ones((200, 10), np.float32)
    net = Net()
    np.testing.assert_array_equal(net(x).numpy(), x)
    np.testing.assert_array_equal(net(x, training=False).numpy(), x)
    dropped = net(x, training=True).numpy()
    assert set(np.unique(dropped)) == {0.0, 2.0}


# ---------------------------------------------------------------------------
# Dropout, normalization, embedding, pooling.

def test_dropout_is_seeded_and_draws_new_masks():
    x = np.ones((4000,), np.float32)
    a, b = L.Dropout(0.3, seed=7), L.Dropout(0.3, seed=7)
    first = a(x, training=True).numpy()
    np.testing.assert_array_equal(first, b(x, training=True).numpy())
    assert abs((first == 0).mean() - 0.3) < 0.03
    np.testing.assert_allclose(first[first != 0], 1 / 0.7, rtol=1e-6)
    assert not np.array_equal(first, a(x, training=True).numpy())          # a new mask per call
    step = rt.function(lambda v: a(v, training=True), autograph=False)
    one, two = step(x).numpy(), step(x).numpy()
    assert not np.array_equal(one, two) and step.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(a(x).numpy(), x)
    rt.keras.utils.set_random_seed(11)
    c = L.Dropout(0.5)(x, training=True).numpy()
    rt.keras.utils.set_random_seed(11)
    np.testing.assert_array_equal(L.Dropout(0.5)(x, training=True).numpy(), c)
    with pytest.raises(ValueError, match="between 0 and 1"):
        L.Dropout(1.5)


def test_batch_normalization_matches_keras_in_training_and_inference():
    keras = _keras()
    x = _rng(1).standard_normal((16, 5)).astype(np.float32) * 3 + 1
    ours, theirs = L.BatchNormalization(momentum=0.9), keras.layers.BatchNormalization(momentum=0.9)
    ours.build((None, 5))
    theirs.build((None, 5))
    ours.gamma.assign(_rng(2).uniform(0.5, 1.5, 5).astype(np.float32))
    _copy(ours, theirs)
    for _ in range(3):
        np.testing.assert_allclose(ours(x, training=True).numpy(), np.asarray(theirs(x, training=True)), rtol=1e-5,
                                   atol=1e-5)
    np.testing.assert_allclose(ours.moving_mean.numpy(), np.asarray(theirs.moving_mean), rtol=1e-6)
    np.testing.assert_allclose(ours.moving_variance.numpy(), np.asarray(theirs.moving_variance), rtol=1e-6)
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    # by the definition: training normalizes with the batch's statistics
    fresh = L.BatchNormalization(epsilon=1e-3)
    got = fresh(x, training=True).numpy()
    np.testing.assert_allclose(got, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fresh.moving_mean.numpy(), 0.01 * x.mean(0), rtol=1e-5)
    # frozen: inference mode even in training
    before = fresh.moving_mean.numpy().copy()
    fresh.trainable = False
    fresh(x, training=True)
    np.testing.assert_array_equal(fresh.moving_mean.numpy(), before)


def test_batch_normalization_on_images_and_inside_a_function():
    keras = _keras()
    x = _rng(3).standard_normal((2, 4, 4, 3)).astype(np.float32)
    ours, theirs = L.BatchNormalization(), keras.layers.BatchNormalization()
    ours.build(x.shape)
    theirs.build(x.shape)
    step = rt.function(lambda v: ours(v, training=True))
    np.testing.assert_allclose(step(x).numpy(), np.asarray(theirs(x, training=True)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.moving_variance.numpy(), np.asarray(theirs.moving_variance), rtol=1e-5)
    axis1 = L.BatchNormalization(axis=1)
    got = axis1(x, training=True).numpy()
    np.testing.assert_allclose(got.mean(axis=(0, 2, 3)), 0, atol=1e-5)


def test_layer_normalization_and_normalization_match_keras():
    keras = _keras()
    x = _rng(4).standard_normal((3, 4, 5)).astype(np.float32) * 2 + 0.5
    for axis in (-1, [1, 2]):
        ours, theirs = L.LayerNormalization(axis=axis), keras.layers.LayerNormalization(axis=axis)
        ours.build(x.shape)
        ours.gamma.assign(_rng(5).uniform(0.5, 2, ours.gamma.shape.as_list()).astype(np.float32))
        theirs.build(x.shape)
        _copy(ours, theirs)
        np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    data = _rng(6).standard_normal((50, 3)).astype(np.float32) * [1, 10, 100]
    ours, theirs = L.Normalization(), keras.layers.Normalization()
    ours.adapt(data)
    theirs.adapt(data)
    np.testing.assert_allclose(ours(data).numpy(), np.asarray(theirs(data)), rtol=1e-4, atol=1e-5)
    assert len(ours.weights) == len(theirs.weights) == 3
    given = L.Normalization(mean=2.0, variance=4.0)
    np.testing.assert_allclose(given(np.array([[4.0]], np.float32)).numpy(), [[1.0]])


def test_embedding_pooling_reshape_activation_match_keras():
    keras = _keras()
    ids = np.array([[1, 4, 2], [0, 0, 3]], np.int32)
    ours, theirs = L.Embedding(5, 3), keras.layers.Embedding(5, 3)
    ours.build(ids.shape)
    theirs.build(ids.shape)
    assert np.abs(ours.embeddings.numpy()).max() <= 0.05                 # "uniform" in [-0.05, 0.05]
    _copy(ours, theirs)
    np.testing.assert_array_equal(ours(ids).numpy(), np.asarray(theirs(ids)))
    np.testing.assert_array_equal(ours(ids.astype(np.float32)).numpy(), np.asarray(theirs(ids)))
    images = _rng(7).standard_normal((2, 5, 6, 3)).astype(np.float32)
    for ours, theirs, x in [(L.GlobalAveragePooling2D(), keras.layers.GlobalAveragePooling2D(), images),
                            (L.GlobalMaxPooling2D(), keras.layers.GlobalMaxPooling2D(), images),
                            (L.GlobalAveragePooling2D(keepdims=True), keras.layers.GlobalAveragePooling2D(keepdims=True),
                             images),
                            (L.Reshape((15, 6)), keras.layers.Reshape((15, 6)), images),
                            (L.Reshape((-1, 3)), keras.layers.Reshape((-1, 3)), images),
                            (L.Activation("softplus"), keras.layers.Activation("softplus"), images),
                            (L.Flatten(), keras.layers.Flatten(), images)]:
        np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-6, atol=1e-6)
    assert L.Flatten()(np.ones(4, np.float32)).shape == (4, 1)


def test_regularizers_and_add_loss_reach_model_losses():
    class Penalized(L.Layer):
        def call(self, x):
            self.add_loss(rt.reduce_sum(x) * 0.0 + 2.0)
            return x

    inputs = rt.keras.Input((2,))
    dense = L.Dense(3, kernel_regularizer=rt.keras.regularizers.L2(0.1), kernel_initializer="ones")
    model = rt.keras.Model(inputs, Penalized()(dense(inputs)))
    model(np.zeros((1, 2), np.float32))
    values = sorted(float(v) for v in model.losses)
    assert values == pytest.approx([0.6, 2.0])
    l1 = L.Dense(1, kernel_regularizer="l1", kernel_initializer="ones")
    l1(np.zeros((1, 3), np.float32))
    assert [float(v) for v in l1.losses] == pytest.approx([0.03])


# ---------------------------------------------------------------------------
# Activation layers (the beginner quickstart's probability model is Sequential([model, Softmax()])).

def test_activation_layers_against_numpy_and_keras():
    x = _rng(7).standard_normal((3, 5)).astype(np.float32) * 3
    mask = _rng(8).uniform(size=(3, 5)) > 0.3
    exp = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(L.Softmax()(x).numpy(), exp / exp.sum(-1, keepdims=True), rtol=1e-6)
    first_axis = np.exp(x - x.max(axis=0)) / np.exp(x - x.max(axis=0)).sum(0)
    np.testing.assert_allclose(L.Softmax(axis=0)(x).numpy(), first_axis, rtol=1e-6)
    masked = np.where(mask, x, x - 1e9)
    masked = np.exp(masked - masked.max(-1, keepdims=True))
    np.testing.assert_allclose(L.Softmax()(x, mask=mask).numpy(), masked / masked.sum(-1, keepdims=True),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(L.ReLU()(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(L.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.0)(x).numpy(),
                               np.minimum(np.where(x > 0, x, 0.1 * x), 1.5), rtol=1e-6)
    np.testing.assert_allclose(L.LeakyReLU()(x).numpy(), np.where(x > 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(L.LeakyReLU(negative_slope=0.1)(x).numpy(), np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    with pytest.raises(ValueError, match="negative"):
        L.ReLU(max_value=-1.0)
    model = rt.keras.Sequential([rt.keras.Input((5,)), L.Dense(4), L.Softmax()])
    np.testing.assert_allclose(model(x).numpy().sum(-1), 1.0, rtol=1e-6)
    keras = _keras()
    for ours, theirs, kwargs in ((L.Softmax(), keras.layers.Softmax(), {"mask": mask}),
                                 (L.ReLU(max_value=2.0, threshold=0.5), keras.layers.ReLU(max_value=2.0, threshold=0.5),
                                  {}),
                                 (L.LeakyReLU(), keras.layers.LeakyReLU(), {})):
        np.testing.assert_allclose(ours(x, **kwargs).numpy(), np.asarray(theirs(x, **kwargs)), rtol=1e-6, atol=1e-7)


def test_padding_upsampling_rescaling_elu_and_min_max_merges():
    img = np.random.default_rng(1).standard_normal((2, 3, 4, 2)).astype(np.float32)
    padded = rt.keras.layers.ZeroPadding2D(((1, 2), (0, 3)))(img).numpy()
    np.testing.assert_array_equal(padded, np.pad(img, [(0, 0), (1, 2), (0, 3), (0, 0)]))
    np.testing.assert_array_equal(rt.keras.layers.ZeroPadding2D(2)(img).numpy(),
                                  np.pad(img, [(0, 0), (2, 2), (2, 2), (0, 0)]))
    up = rt.keras.layers.UpSampling2D((2, 3))(img).numpy()
    np.testing.assert_array_equal(up, img.repeat(2, axis=1).repeat(3, axis=2))
    np.testing.assert_allclose(rt.keras.layers.Rescaling(1 / 255.0, offset=-1.0)(img * 255).numpy(), img - 1.0,
                               rtol=1e-5, atol=1e-5)
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(rt.keras.layers.ELU(0.5)(x).numpy(), [0.5 * (np.exp(-2.0) - 1), 0.0, 3.0], rtol=1e-6)
    a, b = img[0], img[1]
    np.testing.assert_array_equal(rt.keras.layers.Maximum()([a, b]).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(rt.keras.layers.Minimum()([a, b]).numpy(), np.minimum(a, b))
    with pytest.raises(ValueError, match="nearest"):
        rt.keras.layers.UpSampling2D(interpolation="bilinear")
    with pytest.raises(ValueError, match="padding"):
        rt.keras.layers.ZeroPadding2D((1, 2, 3))


def test_an_image_model_with_the_new_layers_fits():
    rng = np.random.default_rng(2)
    model = rt.keras.Sequential([
        rt.keras.Input((8, 8, 3)), rt.keras.layers.Rescaling(1 / 255.0), rt.keras.layers.ZeroPadding2D(1),
        rt.keras.layers.Conv2D(4, 3), rt.keras.layers.AveragePooling2D(2), rt.keras.layers.UpSampling2D(2),
        rt.keras.layers.ELU(), rt.keras.layers.Flatten(), rt.keras.layers.Dense(3)])
    assert model.output_shape == (None, 3)
    model.compile(optimizer="adam", loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = rng.random((32, 8, 8, 3)).astype(np.float32) * 255, rng.integers(0, 3, 32)
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
