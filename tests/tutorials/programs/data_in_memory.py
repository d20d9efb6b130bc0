"""TensorFlow's guide "tf.data: Build TensorFlow input pipelines", its in-memory sections, as a program.

Basic mechanics (iterating, ``reduce``), dataset structure (``element_spec``, ``zip``), consuming numpy arrays
and Python generators, batching (``drop_remainder``, ``padded_batch``), training workflows (``repeat``,
``shuffle``, epochs), preprocessing with ``map``, time-series batching and windows, and ``tf.keras`` models fed
by datasets (``fit``/``evaluate``/``predict``). Downloads are replaced by synthetic arrays: Fashion-MNIST by
``synthetic.mnist_like`` images, the Titanic CSV lines by their row numbers. Each section is a function of its
own returning its numbers; ``window_means`` loops over a dataset inside a ``tf.function``.
"""
import numpy as np
import tensorflow as tf
from synthetic import mnist_like

tf.random.set_seed(0)
tf.keras.utils.set_random_seed(0)

range_ds = tf.data.Dataset.range(100000)
titanic_lines = tf.data.Dataset.from_tensor_slices(np.arange(627, dtype=np.int64))    # one element per CSV row
(fashion_images, fashion_labels), _ = mnist_like(n_train=640, n_test=1, seed=2)


@tf.function
def window_means():
    """The mean of each batch of 15 consecutive numbers, for the first 20 batches: a loop over a dataset inside a
    ``tf.function``."""
    batches = range_ds.batch(15, drop_remainder=True).take(20)
    means = tf.TensorArray(tf.float64, size=20)
    i = 0
    for batch in batches:
        means = means.write(i, tf.reduce_mean(tf.cast(batch, tf.float64)))
        i += 1  # noqa: SIM113 - a tensor loop's counter, as the guides write it
    return means.stack()


def basic_mechanics():
    dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    elements = [elem.numpy() for elem in dataset]
    it = iter(dataset)
    first = next(it).numpy()
    total = dataset.reduce(0, lambda state, value: state + value).numpy()
    return {"elements": elements, "first": first, "reduce": total}


def structure():
    dataset1 = tf.data.Dataset.from_tensor_slices(tf.random.uniform([4, 10]))
    dataset2 = tf.data.Dataset.from_tensor_slices(
        (tf.random.uniform([4]),
         tf.random.uniform([4, 100], maxval=100, dtype=tf.int32)))
    dataset3 = tf.data.Dataset.zip((dataset1, dataset2))
    shapes = [(tuple(a.shape), tuple(b.shape), tuple(c.shape)) for a, (b, c) in dataset3]
    spec = dataset3.element_spec
    return {"spec1": (tuple(dataset1.element_spec.shape), dataset1.element_spec.dtype.name),
            "spec3": [(tuple(s.shape), s.dtype.name) for s in tf.nest.flatten(spec)],
            "shapes": shapes, "cardinality": int(dataset3.cardinality())}


def numpy_arrays():
    images, labels = fashion_images, fashion_labels
    images = images / 255
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    spec = dataset.element_spec
    first_image, first_label = next(iter(dataset))
    return {"spec": [(tuple(s.shape), s.dtype.name) for s in spec], "first_label": first_label.numpy(),
            "first_sum": float(tf.reduce_sum(first_image))}


def count(stop):
    i = 0
    while i < stop:
        yield i
        i += 1


def generators():
    ds_counter = tf.data.Dataset.from_generator(count, args=[25], output_types=tf.int32, output_shapes=())
    batches = [count_batch.numpy() for count_batch in ds_counter.repeat().batch(10).take(10)]
    return {"batches": batches}


def batching():
    inc_dataset = tf.data.Dataset.range(100)
    dec_dataset = tf.data.Dataset.range(0, -100, -1)
    dataset = tf.data.Dataset.zip((inc_dataset, dec_dataset))
    batched_dataset = dataset.batch(4)
    batches = [[arr.numpy() for arr in batch] for batch in batched_dataset.take(4)]
    spec = [tuple(s.shape.as_list()) for s in batched_dataset.element_spec]
    dropped = dataset.batch(7, drop_remainder=True)
    return {"batches": batches, "spec": spec, "dropped_spec": [tuple(s.shape) for s in dropped.element_spec],
            "dropped_count": len(list(dropped))}


def padded_batching():
    dataset = tf.data.Dataset.range(100)
    dataset = dataset.map(lambda x: tf.fill([tf.cast(x, tf.int32)], x))
    dataset = dataset.padded_batch(4, padded_shapes=(None,))
    return {"batches": [batch.numpy() for batch in dataset.take(2)]}


def training_workflows():
    def sizes(ds):      # the guide plots these
        return [int(batch.shape[0]) for batch in ds]

    repeated_then_batched = sizes(titanic_lines.repeat(3).batch(128))
    batched_then_repeated = sizes(titanic_lines.batch(128).repeat(3))
    epochs = 3
    dataset = titanic_lines.batch(128)
    per_epoch = []
    for epoch in range(epochs):
        per_epoch.append([int(batch.shape[0]) for batch in dataset])
        print("End of epoch: ", epoch)
    return {"repeat_batch": repeated_then_batched, "batch_repeat": batched_then_repeated, "epochs": per_epoch}


def shuffling():
    dataset = titanic_lines.enumerate()
    dataset = dataset.shuffle(buffer_size=100)
    dataset = dataset.batch(20)
    n, line_batch = next(iter(dataset))
    # every element once, each drawn from the 100 after the last one taken
    everything = np.concatenate([b.numpy() for b, _ in dataset])
    return {"first_batch_in_range": bool(np.all(n.numpy() < 120)), "permutation": sorted(everything.tolist()),
            "lines_match": bool(np.all(n.numpy() == line_batch.numpy()))}


def preprocessing():
    images = tf.data.Dataset.from_tensor_slices(fashion_images[:8])

    def scale(image):
        image = tf.cast(image, tf.float32) / 255.0
        return image[::2, ::2]

    scaled = images.map(scale)
    return {"shapes": [tuple(x.shape) for x in scaled.take(2)], "sums": [float(tf.reduce_sum(x)) for x in scaled]}


def time_series():
    batches = range_ds.batch(10, drop_remainder=True)
    first = [batch.numpy() for batch in batches.take(5)]

    def dense_1_step(batch):
        # Shift features and labels one step relative to each other.
        return batch[:-1], batch[1:]

    predict_dense_1_step = batches.map(dense_1_step)
    one_step = [(f.numpy(), l.numpy()) for f, l in predict_dense_1_step.take(3)]
    batches = range_ds.batch(15, drop_remainder=True)

    def label_next_5_steps(batch):
        return (batch[:-5],   # Inputs: All except the last 5 steps
                batch[-5:])   # Labels: The last 5 steps

    predict_5_steps = batches.map(label_next_5_steps)
    five_steps = [(f.numpy(), l.numpy()) for f, l in predict_5_steps.take(3)]
    return {"batches": first, "one_step": one_step, "five_steps": five_steps, "window_means": window_means().numpy()}


def windows():
    window_size = 5
    windowed = range_ds.window(window_size, shift=1)
    flat = [x.numpy() for x in windowed.flat_map(lambda x: x).take(30)]

    def sub_to_batch(sub):
        return sub.batch(window_size, drop_remainder=True)

    examples = [example.numpy() for example in windowed.flat_map(sub_to_batch).take(5)]
    return {"flat": flat, "examples": examples}


def keras_with_datasets(initialize=None, shuffle=True):
    images, labels = fashion_images, fashion_labels
    images = images / 255.0
    labels = labels.astype(np.int32)
    fmnist_train_ds = tf.data.Dataset.from_tensor_slices((images, labels))
    if shuffle:
        fmnist_train_ds = fmnist_train_ds.shuffle(5000)
    fmnist_train_ds = fmnist_train_ds.batch(32)

    model = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10)
    ])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    if initialize is not None:
        model.build((None, 28, 28))
        initialize(model.trainable_variables)
    first = model.fit(fmnist_train_ds, epochs=2, verbose=0).history
    second = model.fit(fmnist_train_ds.repeat(), epochs=2, steps_per_epoch=20, verbose=0).history
    loss, accuracy = model.evaluate(fmnist_train_ds, verbose=0)
    repeated = model.evaluate(fmnist_train_ds.repeat(), steps=10, verbose=0)
    predict_ds = tf.data.Dataset.from_tensor_slices(images).batch(32)
    result = model.predict(predict_ds, steps=10, verbose=0)
    return {"fit": first, "fit_repeat": second, "evaluate": [loss, accuracy], "evaluate_repeat": repeated,
            "predict_shape": result.shape, "predict": result}


SECTIONS = [basic_mechanics, structure, numpy_arrays, generators, batching, padded_batching, training_workflows,
            shuffling, preprocessing, time_series, windows, keras_with_datasets]


def main(sections=None, **keras_options):
    out = {}
    for section in SECTIONS:
        if sections is None or section.__name__ in sections:
            out[section.__name__] = section(**keras_options) if section is keras_with_datasets else section()
            print(section.__name__, out[section.__name__])
    return out


if __name__ == "__main__":
    main()
