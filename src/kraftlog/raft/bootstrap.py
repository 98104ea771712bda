"""The bootstrap checkpoint of a KRaft log directory (Kafka's ``kafka-storage format`` for ``kraft.version`` 1):
:func:`format_quorum` writes it, :func:`read_bootstrap` reads the first voter set from it.

The file is Kafka's checkpoint layout (:mod:`kraftlog.protocol.wire.snapshots`): a snapshot of no metadata
record whose control batch holds a ``KRaftVersionRecord`` (1) and the ``VotersRecord``; the same bytes on a
simulated and on a real disk."""

from __future__ import annotations

from ..protocol.errors import WireError
from ..protocol.raft_records import KRaftVersionRecord, VotersRecord
from ..protocol.wire.snapshots import decode_snapshot_with_control, encode_snapshot
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
        data = encode_snapshot([], 0, now_ms, [KRaftVersionRecord(1), initial_voters])
        disk.write_atomic(f"{directory}/{BOOTSTRAP_CHECKPOINT}", data, now_ms)


def read_bootstrap(disk: Disk, directory: str = METADATA_LOG_DIR) -> VoterSet | None:
    """The voter set of the bootstrap checkpoint, None when there is none. ValueError when it does not decode or
    holds no VotersRecord (the node must not start on it)."""
    value = disk.read_value(f"{directory}/{BOOTSTRAP_CHECKPOINT}")
    if value is None:
        return None
    try:
        control, _records, _ts = decode_snapshot_with_control(value.encode() if isinstance(value, str)
                                                              else value if isinstance(value, bytes) else b"")
    except WireError as exc:
        raise ValueError(f"{directory}/{BOOTSTRAP_CHECKPOINT} cannot be read: {exc}") from exc
    voters = next((r for r in control if isinstance(r, VotersRecord)), None)
    if voters is None:
        raise ValueError(f"{directory}/{BOOTSTRAP_CHECKPOINT} does not hold a VotersRecord")
    return VoterSet.of(voters)
