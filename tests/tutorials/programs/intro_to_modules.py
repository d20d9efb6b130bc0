"""TensorFlow's guide "Introduction to modules, layers, and models", as a program.

``tf.Module``s with variables (trainable or not), modules of modules, variables created on the first call, a
checkpoint written and restored into a new model, ``tf.function`` methods traced per shape, Keras layers (weights
made in ``build``), a subclassed Keras model and a functional one. The guide's SavedModel and TensorBoard cells
are left out (rt has neither). ``main(initialize=...)`` lets a caller set every model's variables (two libraries
draw different random numbers).
"""
import os
import tempfile

import tensorflow as tf

tf.random.set_seed(42)
tf.keras.utils.set_random_seed(42)         # the Keras layers' initializers too (every run the same numbers)


class SimpleModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.a_variable = tf.Variable(5.0, name="train_me")
        self.non_trainable_variable = tf.Variable(5.0, trainable=False, name="do_not_train_me")

    def __call__(self, x):
        return self.a_variable * x + self.non_trainable_variable


class Dense(tf.Module):
    def __init__(self, in_features, out_features, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.random.normal([in_features, out_features]), name="w")
        self.b = tf.Variable(tf.zeros([out_features]), name="b")

    def __call__(self, x):
        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y)


class SequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


class FlexibleDenseModule(tf.Module):
    # Note: No need for `in_features`
    def __init__(self, out_features, name=None):
        super().__init__(name=name)
        self.is_built = False
        self.out_features = out_features

    def __call__(self, x):
        # Create variables on first call.
        if not self.is_built:
            self.w = tf.Variable(tf.random.normal([x.shape[-1], self.out_features]), name="w")
            self.b = tf.Variable(tf.zeros([self.out_features]), name="b")
            self.is_built = True
        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y)


class MySequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = FlexibleDenseModule(out_features=3)
        self.dense_2 = FlexibleDenseModule(out_features=2)

    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


class MyTracedModule(tf.Module):
    """The guide's "Saving functions" module: its ``__call__`` is a ``tf.function``."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    @tf.function
    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


class FlexibleDense(tf.keras.layers.Layer):
    # Note the added `**kwargs`, as Keras supports many arguments
    def __init__(self, out_features, **kwargs):
        super().__init__(**kwargs)
        self.out_features = out_features

    def build(self, input_shape):  # Create the state of the layer (weights)
        self.w = self.add_weight(shape=(input_shape[-1], self.out_features), initializer="random_normal", name="w")
        self.b = self.add_weight(shape=(self.out_features,), initializer="zeros", name="b")

    def call(self, inputs):  # Defines the computation from inputs to outputs
        return tf.matmul(inputs, self.w) + self.b


class MySequentialModel(tf.keras.Model):
    def __init__(self, name=None, **kwargs):
        super().__init__(**kwargs)
        self.dense_1 = FlexibleDense(out_features=3)
        self.dense_2 = FlexibleDense(out_features=2)

    def call(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


traced_model = MyTracedModule(name="the_model")


def main(initialize=None):
    initialize = initialize or (lambda variables: None)
    out = {}
    simple_module = SimpleModule(name="simple")
    out["simple"] = simple_module(tf.constant(5.0)).numpy()
    out["simple_trainable"] = [v.numpy() for v in simple_module.trainable_variables]
    out["simple_all"] = [v.numpy() for v in simple_module.variables]
    out["simple_name"] = simple_module.name

    my_model = SequentialModule(name="the_model")
    initialize(my_model.variables)
    out["sequential"] = my_model(tf.constant([[2.0, 2.0, 2.0]])).numpy()
    out["submodules"] = [type(m).__name__ for m in my_model.submodules]
    out["variable_shapes"] = [tuple(v.shape) for v in my_model.variables]

    my_model = MySequentialModule(name="the_model")
    x = tf.constant([[2.0, 2.0, 2.0]])
    my_model(x)
    initialize(my_model.variables)
    out["flexible"] = my_model(x).numpy()

    # Saving weights
    with tempfile.TemporaryDirectory() as directory:
        chkp_path = os.path.join(directory, "my_checkpoint")
        checkpoint = tf.train.Checkpoint(model=my_model)
        checkpoint.write(chkp_path)
        out["checkpoint_variables"] = sorted((name, tuple(shape)) for name, shape in tf.train.list_variables(chkp_path)
                                             if "OBJECT_GRAPH" not in name)
        new_model = MySequentialModule()
        new_checkpoint = tf.train.Checkpoint(model=new_model)
        new_checkpoint.restore(chkp_path)
        # Should be the same result as above
        out["restored"] = new_model(x).numpy()

    # Saving functions: one trace per input shape
    initialize(traced_model.variables)
    out["traced"] = [traced_model([[2.0, 2.0, 2.0]]).numpy(),
                     traced_model([[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]]).numpy()]
    out["traces"] = len(traced_model.__call__.concrete_functions()) if hasattr(traced_model.__call__, "concrete_functions") \
        else traced_model.__call__.experimental_get_tracing_count()

    # Keras layers
    flexible_dense = FlexibleDense(out_features=3)
    out["unbuilt_variables"] = len(flexible_dense.variables)
    flexible_dense.build((None, 3))
    initialize(flexible_dense.variables)
    out["flexible_dense"] = flexible_dense(tf.constant([[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]])).numpy()
    out["flexible_dense_variables"] = len(flexible_dense.variables)
    try:
        flexible_dense(tf.constant([[2.0, 2.0, 2.0, 2.0]]))
        out["wrong_shape"] = None
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        print("Failed:", e)
        out["wrong_shape"] = "raised"

    # Keras models
    my_sequential_model = MySequentialModel(name="the_model")
    my_sequential_model(tf.constant([[2.0, 2.0, 2.0]]))     # a subclassed model makes its weights on its first call
    initialize(my_sequential_model.variables)
    out["keras_sequential"] = my_sequential_model(tf.constant([[2.0, 2.0, 2.0]])).numpy()
    out["keras_variable_shapes"] = [tuple(v.shape) for v in my_sequential_model.variables]

    inputs = tf.keras.Input(shape=[3, ])
    h = FlexibleDense(3)(inputs)
    h = FlexibleDense(2)(h)
    my_functional_model = tf.keras.Model(inputs=inputs, outputs=h)
    my_functional_model.summary()
    initialize(my_functional_model.variables)
    out["functional"] = my_functional_model(tf.constant([[2.0, 2.0, 2.0]])).numpy()
    out["functional_params"] = my_functional_model.count_params()
    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
