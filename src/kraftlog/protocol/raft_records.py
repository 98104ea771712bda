"""What the KRaft log (``__cluster_metadata``) holds, batch by batch: :class:`RaftBatch`, and KRaft's control
records (Kafka's ``ControlRecordType``): :class:`LeaderChangeMessage`, :class:`VotersRecord`,
:class:`KRaftVersionRecord`.

A :class:`RaftBatch` is one record batch of the KRaft log, written whole or not at all (one CRC on a real
disk): a batch's records share its leader epoch (Kafka's ``partitionLeaderEpoch``), a control batch holds
control records only, a data batch holds the state machine's records (kraftlog's metadata records,
:mod:`kraftlog.metadata.records`). Offsets are log offsets; ``base_offset`` is the first record's.

The control records follow Kafka's schemas (``LeaderChangeMessage.json``, ``VotersRecord.json``,
``KRaftVersionRecord.json`` in ``clients/src/main/resources/common/message``), with Kafka's field names.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["RaftBatch", "LeaderChangeMessage", "VotersRecord", "Voter", "KRaftVersionRecord", "ControlRecord",
           "RaftEndpoint"]


@dataclass(slots=True, frozen=True)
class RaftEndpoint:
    """A listener of a voter (``VotersRecord.Endpoints``, AddRaftVoter's ``Listeners``): its name, host and
    port. The simulator's voters have none: a node id is their address there."""

    name: str
    host: str
    port: int


@dataclass(slots=True, frozen=True)
class Voter:
    """One voter of a :class:`VotersRecord`: ``voter_id`` (its ``node.id``), ``voter_directory_id`` (the id
    of its metadata log directory, KIP-853: a voter that lost its disk comes back with another one and is
    not this voter any more), its endpoints and the ``kraft.version`` range it supports (``[min, max]``)."""

    voter_id: int
    voter_directory_id: uuid.UUID | None
    endpoints: tuple[RaftEndpoint, ...] = ()
    min_supported_version: int = 0
    max_supported_version: int = 1


@dataclass(slots=True, frozen=True)
class LeaderChangeMessage:
    """The control record a new leader writes first in its epoch (Kafka's ``LeaderChangeMessage``):
    ``leader_id``, the voters of the epoch and those that granted it their vote (ids, sorted). It is what
    the leader commits before it accepts writes (KIP-595: a leader commits an entry of its own epoch first)."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class VotersRecord:
    """The voter set from this record's offset on (KIP-853, ``kraft.version`` 1): it takes effect when it is
    appended, not when it commits (Raft's one-at-a-time membership change), and a truncation removing it
    reverts to the voter set before it."""

    voters: tuple[Voter, ...]


@dataclass(slots=True, frozen=True)
class KRaftVersionRecord:
    """The finalized ``kraft.version`` from this record's offset on (0: static voters from
    ``controller.quorum.voters``; 1: dynamic voters, KIP-853)."""

    kraft_version: int


#: A KRaft control record.
ControlRecord: TypeAlias = LeaderChangeMessage | VotersRecord | KRaftVersionRecord
CONTROL_RECORD_TYPES: tuple[type, ...] = (LeaderChangeMessage, VotersRecord, KRaftVersionRecord)


@dataclass(slots=True, frozen=True)
class RaftBatch:
    """One batch of the KRaft log: ``records`` at offsets ``base_offset`` .. ``base_offset + len(records) - 1``,
    all written in leader epoch ``epoch``; ``control`` when they are control records. ``append_time_ms`` is
    the leader's clock when it appended the batch (ms). An empty batch is never written."""

    base_offset: int
    epoch: int
    records: tuple[object, ...]
    control: bool = False
    append_time_ms: int = 0

    @property
    def last_offset(self) -> int:
        """The offset of the batch's last record."""
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        """The offset after the batch (the log end offset once it is the last batch)."""
        return self.base_offset + len(self.records)
