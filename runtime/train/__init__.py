"""``rt.train``: checkpoints (``Checkpoint``, ``CheckpointManager``, ``latest_checkpoint``).

See ``runtime.train.checkpoint`` for the on-disk format and ``runtime.train.tracking`` for how objects are
followed and how a restore waits for variables that are created later.
"""
from runtime.train.checkpoint import Checkpoint, CheckpointManager, LoadStatus, latest_checkpoint
from runtime.train.tracking import Trackable

__all__ = ["Checkpoint", "CheckpointManager", "LoadStatus", "Trackable", "latest_checkpoint"]
