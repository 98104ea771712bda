"""The bootstrap checkpoint of a KRaft log directory (Kafka's ``kafka-storage format`` for ``kraft.version`` 1):
:func:`format_quorum` writes it, :func:`read_bootstrap` reads the first voter set from it."""

from __future__ import annotations

from ..protocol.raft_records import VotersRecord
from ..storage.disk import Disk
from .log import METADATA_LOG_DIR
from .voters import VoterSet

__all__ = ["format_quorum", "read_bootstrap", "BOOTSTRAP_CHECKPOINT"]

#: The bootstrap checkpoint of a KRaft log directory formatted for dynamic voters (Kafka's
#: ``00000000000000000000-0000000000.checkpoint``, holding KRaftVersionRecord and VotersRecord).
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"


def format_quorum(disk: Disk, now_ms: int, initial_voters: VotersRecord | None,
                  directory: str = METADATA_LOG_DIR) -> None:
    """``kafka-storage format`` for kraft.version 1: with ``--initial-controllers`` (``initial_voters``) the
    bootstrap checkpoint names the first voter set; with ``--no-initial-controllers`` (None) the controller
    starts as an observer and learns the voters from the leader's log. Static quorums (kraft.version 0)
    need no bootstrap checkpoint. OSError when the disk fails."""
    if initial_voters is not None:
        disk.write_atomic(f"{directory}/{BOOTSTRAP_CHECKPOINT}", initial_voters, now_ms)


def read_bootstrap(disk: Disk, directory: str = METADATA_LOG_DIR) -> VoterSet | None:
    """The voter set of the bootstrap checkpoint, None when there is none."""
    value = disk.read_value(f"{directory}/{BOOTSTRAP_CHECKPOINT}")
    if value is None:
        return None
    if not isinstance(value, VotersRecord):
        raise ValueError(f"{directory}/{BOOTSTRAP_CHECKPOINT} does not hold a VotersRecord")
    return VoterSet.of(value)
