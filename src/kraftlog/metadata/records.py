"""KRaft metadata records (Kafka's ``metadata/src/main/resources/common/metadata/*.json``).

The controller appends these to the ``__cluster_metadata`` log; brokers fetch and replay them into a
:class:`kraftlog.metadata.image.MetadataImage`. Field names follow Kafka's schemas. The offset of a
``RegisterBrokerRecord`` in the log is that broker's *broker epoch* (KRaft rule).

Conventions for ``PartitionChangeRecord`` (Kafka's): a field left ``None`` means "no change";
``leader = -1`` means no leader; a leader change bumps the leader epoch; every change bumps the
partition epoch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypeAlias

NO_LEADER = -1

#: LeaderRecoveryState values (KIP-704): RECOVERED = 0, RECOVERING = 1.
RECOVERED = 0
RECOVERING = 1


@dataclass(slots=True, frozen=True)
class RegisterBrokerRecord:
    """A broker (re-)registered. ``broker_epoch`` is the record's own offset, filled in on append.
    ``fenced`` starts True; ``previous_broker_epoch`` is what the broker reported (KIP-966)."""

    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    previous_broker_epoch: int = -1
    #: The broker's endpoints as Kafka's listener strings, ``"NAME://host:port"`` (RegisterBrokerRecord's
    #: EndPoints); empty in the simulator.
    listeners: tuple[str, ...] = ()
    #: The broker's log directories (RegisterBrokerRecord's LogDirs, KIP-858), as it registered them; None
    #: when it reported none (and in records written before kraftlog kept them): every directory counts
    #: as online then, as in Kafka.
    log_dirs: tuple[uuid.UUID, ...] | None = None


@dataclass(slots=True, frozen=True)
class BrokerRegistrationChangeRecord:
    """Fencing / unfencing / controlled shutdown of a registration, and its online log directories
    (``log_dirs``, KIP-858: what is left after the broker reported some offline); None = unchanged."""

    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None
    log_dirs: tuple[uuid.UUID, ...] | None = None


@dataclass(slots=True, frozen=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID


@dataclass(slots=True, frozen=True)
class RemoveTopicRecord:
    """A topic was deleted (Kafka's ``RemoveTopicRecord``, written by ``ReplicationControlManager
    .deleteTopic``, one per deleted topic): replaying it removes the topic, its partitions and its
    topic-level configs (Kafka's ``TopicsDelta`` / ``ConfigurationsDelta``). A later topic of the same
    name is a new topic with a new id."""

    topic_id: uuid.UUID


@dataclass(slots=True, frozen=True)
class PartitionRecord:
    """A partition's full state (on creation). ``leader`` -1 = none."""

    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = RECOVERED
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    last_known_leader: int = -1


@dataclass(slots=True, frozen=True)
class PartitionChangeRecord:
    """A change to a partition; None fields are unchanged. A new ``leader`` bumps the leader epoch;
    the partition epoch is bumped by every change record. KIP-966: ``last_known_leader`` is the last ISR
    member (the leader) recorded when the ISR became empty; -1 clears it once a leader is elected."""

    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    leader_recovery_state: int | None = None
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    last_known_leader: int | None = None


@dataclass(slots=True, frozen=True)
class ConfigRecord:
    """``resource_type`` 2 = topic, 4 = broker (``resource_name`` "" for the cluster default);
    ``value`` None deletes the config."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(slots=True, frozen=True)
class ClearElrRecord:
    """KIP-966: clear ELR, LastKnownELR and the last known leader of every partition of ``topic_name``,
    or of every partition when ``topic_name`` is None (written on any ``min.insync.replicas`` change)."""

    topic_name: str | None = None


@dataclass(slots=True, frozen=True)
class UserScramCredentialRecord:
    """KIP-554: user ``name``'s SCRAM credential for ``mechanism`` (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512):
    ``salt``, ``stored_key`` and ``server_key`` (bytes; RFC 5802) and ``iterations``. A later record for the same
    (name, mechanism) replaces it. The password itself is never in the log."""

    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(slots=True, frozen=True)
class RemoveUserScramCredentialRecord:
    """KIP-554: user ``name`` has no SCRAM credential for ``mechanism`` any more."""

    name: str
    mechanism: int


#: Any metadata record (what the ``__cluster_metadata`` log holds).
MetadataRecord: TypeAlias = (
    RegisterBrokerRecord | BrokerRegistrationChangeRecord | TopicRecord | PartitionRecord
    | PartitionChangeRecord | ConfigRecord | ClearElrRecord | RemoveTopicRecord | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
)

METADATA_RECORD_TYPES: tuple[type, ...] = (
    RegisterBrokerRecord, BrokerRegistrationChangeRecord, TopicRecord, PartitionRecord,
    PartitionChangeRecord, ConfigRecord, ClearElrRecord, RemoveTopicRecord, UserScramCredentialRecord,
    RemoveUserScramCredentialRecord,
)
