"""The bootstrap checkpoint of a KRaft log directory (Kafka's ``kafka-storage format``): :func:`format_quorum`
writes it, :func:`read_bootstrap` reads the first voter set from it (``kraft.version`` 1) and
:func:`read_bootstrap_records` the metadata records the first active controller writes into an empty metadata log
(Kafka's bootstrap metadata: here the SCRAM credentials of ``storage format --add-scram``, KIP-900).

The file is Kafka's checkpoint layout (:mod:`kraftlog.protocol.wire.snapshots`): a snapshot of the bootstrap
metadata records whose control batch holds a ``KRaftVersionRecord`` (1) and the ``VotersRecord`` of a dynamic
quorum (none for static voters); the same bytes on a simulated and on a real disk."""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.errors import WireError
from ..protocol.raft_records import KRaftVersionRecord, VotersRecord
from ..protocol.wire.snapshots import decode_snapshot_with_control, encode_snapshot
from ..storage.disk import Disk
from .log import METADATA_LOG_DIR
from .voters import VoterSet

__all__ = ["format_quorum", "read_bootstrap", "read_bootstrap_records", "BOOTSTRAP_CHECKPOINT"]

#: The bootstrap checkpoint of a KRaft log directory formatted for dynamic voters (Kafka's
#: ``00000000000000000000-0000000000.checkpoint``, holding KRaftVersionRecord and VotersRecord).
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"


def format_quorum(disk: Disk, now_ms: int, initial_voters: VotersRecord | None,
                  directory: str = METADATA_LOG_DIR, records: Sequence[object] = ()) -> None:
    """``kafka-storage format``: with ``--initial-controllers`` (``initial_voters``, kraft.version 1) the bootstrap
    checkpoint names the first voter set; with ``--no-initial-controllers`` (None) the controller starts as an
    observer and learns the voters from the leader's log; static quorums (kraft.version 0) name no voters.
    ``records``: bootstrap metadata records (``--add-scram``'s UserScramCredentialRecords). Nothing is written when
    there are neither voters nor records. OSError when the disk fails."""
    if initial_voters is None and not records:
        return
    control = [KRaftVersionRecord(1), initial_voters] if initial_voters is not None else []
    data = encode_snapshot(list(records), 0, now_ms, control)
    disk.write_atomic(f"{directory}/{BOOTSTRAP_CHECKPOINT}", data, now_ms)


def _decode(disk: Disk, directory: str) -> tuple[list[object], list[object]] | None:
    value = disk.read_value(f"{directory}/{BOOTSTRAP_CHECKPOINT}")
    if value is None:
        return None
    try:
        control, records, _ts = decode_snapshot_with_control(value.encode() if isinstance(value, str)
                                                              else value if isinstance(value, bytes) else b"")
    except WireError as exc:
        raise ValueError(f"{directory}/{BOOTSTRAP_CHECKPOINT} cannot be read: {exc}") from exc
    return control, records


def read_bootstrap(disk: Disk, directory: str = METADATA_LOG_DIR) -> VoterSet | None:
    """The voter set of the bootstrap checkpoint, None when there is none or it names no voters (static voters).
    ValueError when it does not decode, or holds neither voters nor records (the node must not start on it)."""
    found = _decode(disk, directory)
    if found is None:
        return None
    control, records = found
    voters = next((r for r in control if isinstance(r, VotersRecord)), None)
    if voters is None:
        if not records:
            raise ValueError(f"{directory}/{BOOTSTRAP_CHECKPOINT} does not hold a VotersRecord")
        return None
    return VoterSet.of(voters)


def read_bootstrap_records(disk: Disk, directory: str = METADATA_LOG_DIR) -> list[object]:
    """The bootstrap metadata records of the checkpoint (none without one). ValueError when it does not decode."""
    found = _decode(disk, directory)
    return [] if found is None else found[1]
