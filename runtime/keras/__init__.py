"""``rt.keras``: Keras 3 on the runtime's ops -- layers, functional and subclassed models, training
(``compile``/``fit``/``evaluate``/``predict``), losses, metrics, optimizers, callbacks.

Layers create their weights when they are first called (or built), initialized like Keras (Glorot uniform
kernels, zero biases) from a generator ``rt.keras.utils.set_random_seed`` seeds. Optimizers create their slot
variables on their first ``apply_gradients``: inside ``rt.function`` that is the first trace, so a second
optimizer passed to an already traced Function raises the singleton-variable ``ValueError``, as in
TensorFlow's guide. ``compile`` makes ``model.train_function``, an ``rt.function`` with a fixed signature that a
module's ahead-of-time build can compile (``runtime.keras.training``).

Where this differs from Keras 3 on TensorFlow:

- ``rt.Variable``s assigned to a layer's attributes are its weights (Keras 2 tracked ``tf.Variable``s so; Keras 3
  ignores them, and the basic-training-loops guide's Keras model would not train);
- ``add_weight("kernel", shape=...)``, the custom-layers guide's (Keras 2) spelling, is accepted;
- random numbers (initializers, ``Dropout``, ``fit``'s shuffling) come from numpy generators that
  ``set_random_seed`` seeds: repeatable, but not TensorFlow's numbers;
- whole-model saving (``Model.save``, ``load_model``) is not supported: ``save_weights`` and ``rt.train``
  checkpoints are; ``compile``'s metrics are for single-output models.

Example:
    >>> import runtime as rt
    >>> rt.keras.utils.set_random_seed(0)
    >>> model = rt.keras.Sequential([rt.keras.layers.Dense(2, activation="relu"), rt.keras.layers.Dense(1)])
    >>> model.build(input_shape=(None, 3))
    >>> [tuple(v.shape) for v in model.trainable_variables]
    [(3, 2), (2,), (2, 1), (1,)]
"""
from runtime.errors import missing_name
from runtime.keras import (
                           activations,
                           backend,
                           callbacks,
                           constraints,
                           initializers,
                           layers,
                           losses,
                           metrics,
                           optimizers,
                           regularizers,
                           utils,
)
from runtime.keras.functional import Input, InputLayer
from runtime.keras.keras_tensor import KerasTensor
from runtime.keras.layers import Layer
from runtime.keras.models import Model, Sequential

__all__ = ["Input", "InputLayer", "KerasTensor", "Layer", "Model", "Sequential", "activations", "backend", "callbacks",
           "constraints", "initializers", "layers", "losses", "metrics", "optimizers", "regularizers", "utils"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras")
