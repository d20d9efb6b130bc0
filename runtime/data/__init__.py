"""``rt.data``: input pipelines (``rt.data.Dataset``) in the shape of tf.data.

Example:
    >>> import runtime as rt
    >>> ds = rt.data.Dataset.from_tensor_slices(([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]))
    >>> [(float(x), float(y)) for x, y in ds.take(2)]
    [(1.0, 2.0), (2.0, 4.0)]
"""
from types import SimpleNamespace

from runtime.data.dataset_ops import (
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetSpec, Iterator,
)

# tf.data.experimental's constants, where older guides spell them (``rt.data.experimental.AUTOTUNE``).
experimental = SimpleNamespace(AUTOTUNE=AUTOTUNE, INFINITE_CARDINALITY=INFINITE_CARDINALITY,
                               UNKNOWN_CARDINALITY=UNKNOWN_CARDINALITY)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "DatasetSpec", "Iterator",
           "experimental"]
