"""``rt.keras.layers``: the ``Layer`` base class and the built-in layers.

Core: ``Dense``, ``Activation``, ``Softmax``, ``ReLU``, ``LeakyReLU``, ``Dropout``, ``Flatten``, ``Reshape``,
``Embedding``, ``Lambda``, ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Concatenate``; images (NHWC):
``Conv2D``, ``MaxPooling2D`` (``MaxPool2D``), ``AveragePooling2D`` (``AvgPool2D``), ``GlobalAveragePooling2D``,
``GlobalMaxPooling2D``; normalization: ``BatchNormalization``, ``LayerNormalization``, ``Normalization``;
``Input`` and ``InputLayer`` for functional models.
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
)
from runtime.keras.layers.core import (
                                                Activation,
                                                Add,
                                                Average,
                                                Concatenate,
                                                Dense,
                                                Dropout,
                                                Embedding,
                                                Flatten,
                                                Lambda,
                                                LeakyReLU,
                                                Multiply,
                                                ReLU,
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
                                                "Embedding",
                                                "Flatten",
                                                "GlobalAveragePooling2D",
                                                "GlobalAvgPool2D",
                                                "GlobalMaxPool2D",
                                                "GlobalMaxPooling2D",
                                                "Input",
                                                "InputLayer",
                                                "Lambda",
                                                "LeakyReLU",
                                                "Layer",
                                                "LayerNormalization",
                                                "MaxPool2D",
                                                "MaxPooling2D",
                                                "Multiply",
                                                "Normalization",
                                                "ReLU",
                                                "Reshape",
                                                "Softmax",
                                                "Subtract",
]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("keras.layers")
