"""The tutorial programs are written against ``import tensorflow as tf``: pytest must not import them itself (its
doctest collection would import TensorFlow, or fail without it). The tests' helpers are ``tutorial_support``."""

collect_ignore_glob = ["programs/*.py"]
