"""``rt.keras.layers``: the ``Layer`` base class and the built-in layers.

Core: ``Dense``, ``Activation``, ``Softmax``, ``ReLU``, ``LeakyReLU``, ``Dropout``, ``Flatten``, ``Reshape``,
``Embedding``, ``Lambda``, ``ELU``, ``Rescaling``, ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``,
``Minimum``, ``Concatenate``; images (NHWC): ``Conv2D``, ``MaxPooling2D`` (``MaxPool2D``), ``AveragePooling2D``
(``AvgPool2D``), ``GlobalAveragePooling2D``, ``GlobalMaxPooling2D``, ``ZeroPadding2D``, ``UpSampling2D``;
normalization: ``BatchNormalization``, ``LayerNormalization``, ``Normalization``; ``Input`` and ``InputLayer``
for functional models.
"""
from runtime.errors import missing_name
from runtime.keras.functional import Input, InputLayer
from runtime.keras.layers.base import Layer
from runtime.keras.layers.convolutional import (
                                                AveragePooling2D,
                                                AvgPool2D,
                                                Conv2D,
                                                GlobalAveragePooling2D,
                                                GlobalAvgPool2D,
                                                GlobalMaxPool2D,
                                                GlobalMaxPooling2D,
                                                MaxPool2D,
                                                MaxPooling2D,
                                                UpSampling2D,
                                                ZeroPadding2D,
)
from runtime.keras.layers.core import (
                                                Activation,
                                                Add,
                                                Average,
                                                Concatenate,
                                                Dense,
                                                Dropout,
                                                ELU,
                                                Embedding,
                                                Flatten,
                                                Lambda,
                                                LeakyReLU,
                                                Maximum,
                                                Minimum,
                                                Multiply,
                                                ReLU,
                                                Rescaling,
                                                Reshape,
                                                Softmax,
                                                Subtract,
)
from runtime.keras.layers.normalization import BatchNormalization, LayerNormalization, Normalization

__all__ = [
                                                "Activation",
                                                "Add",
                                                "Average",
                                                "AveragePooling2D",
                                                "AvgPool2D",
                                                "BatchNormalization",
                                                "Concatenate",
                                                "Conv2D",
                                                "Dense",
                                                "Dropout",
                                                "ELU",
                                                "Embedding",
                                                "Flatten",
                                                "GlobalAveragePooling2D",
                                                "GlobalAvgPool2D",
                                                "GlobalMaxPool2D",
                                                "GlobalMaxPooling2D",
                                                "Input",
                                                "InputLayer",
                                                "Lambda",
                                                "Layer",
                                                "LayerNormalization",
                                                "LeakyReLU",
                                                "MaxPool2D",
                                                "MaxPooling2D",
                                                "Maximum",
                                                "Minimum",
                                                "Multiply",
                                                "Normalization",
                                                "ReLU",
                                                "Rescaling",
                                                "Reshape",
                                                "Softmax",
                                                "Subtract",
                                                "UpSampling2D",
                                                "ZeroPadding2D",
]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.layers")
