"""``rt.train``: checkpoints (``Checkpoint``, ``CheckpointManager``, ``latest_checkpoint``, ``list_variables``,
``load_variable``, ``load_checkpoint``).

See ``runtime.train.checkpoint`` for the on-disk format and ``runtime.train.tracking`` for how objects are
followed and how a restore waits for variables that are created later.
"""
from runtime.errors import missing_name
from runtime.train.checkpoint import (
                                      Checkpoint,
                                      CheckpointManager,
                                      CheckpointReader,
                                      LoadStatus,
                                      latest_checkpoint,
                                      list_variables,
                                      load_checkpoint,
                                      load_variable,
)
from runtime.train.tracking import Trackable

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointReader", "LoadStatus", "Trackable", "latest_checkpoint",
           "list_variables", "load_checkpoint", "load_variable"]

# a name TensorFlow has and rt lacks: an AttributeError pointing at the API table
__getattr__ = missing_name("train")
