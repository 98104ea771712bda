"""Storage: partition logs over a Disk interface, the leader-epoch cache, checkpoint files.

Also a node's identity on its disk (``meta.properties``, :mod:`.meta_properties`).

Sans-I/O: every file operation goes through a :class:`Disk` (``SimDisk`` in the simulation, a
file-backed disk in the real driver) and every time is an int ``now_ms`` argument.
"""

from .checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    HWM_CHECKPOINT_FILE,
    delete_clean_shutdown,
    read_clean_shutdown,
    read_hwm_checkpoint,
    write_clean_shutdown,
    write_hwm_checkpoint,
)
from .disk import CRASH_MODES, Disk, SimDisk
from .epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochCache,
    format_epoch_checkpoint,
    parse_epoch_checkpoint,
)
from .log import EPOCH_CHECKPOINT_FILE, SEGMENT_FILE, LogConfig, PartitionLog
from .meta_properties import META_PROPERTIES, MetaProperties, NodeIdentityError, format_disk, read_identity

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "CRASH_MODES",
    "Disk",
    "EPOCH_CHECKPOINT_FILE",
    "HWM_CHECKPOINT_FILE",
    "LeaderEpochCache",
    "LogConfig",
    "META_PROPERTIES",
    "MetaProperties",
    "NodeIdentityError",
    "PartitionLog",
    "SEGMENT_FILE",
    "SimDisk",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "delete_clean_shutdown",
    "format_disk",
    "format_epoch_checkpoint",
    "parse_epoch_checkpoint",
    "read_clean_shutdown",
    "read_hwm_checkpoint",
    "read_identity",
    "write_clean_shutdown",
    "write_hwm_checkpoint",
]
