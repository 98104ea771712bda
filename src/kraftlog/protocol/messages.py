"""The core's message types: Kafka's schemas, Kafka's field names, lightweight slotted dataclasses.

Every request class has ``API`` (Kafka's API name, e.g. ``"AlterPartition"``), ``API_KEY`` and
``VERSION`` (the Kafka version whose semantics it carries); its response class has the same ``API``.
Nested Kafka structures are flattened where Kafka nests by topic: each partition entry names its topic
(``topic`` for APIs keyed by name, ``topic_id`` for Fetch v13+ and AlterPartition v2+).
``kraftlog.protocol.wire`` maps every class to kio entities and bytes and back.

Field conventions: offsets and epochs are ints (-1 = none), durations are ints in ms, error codes are
``Errors`` values (ints).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

from .records import RecordBatch

#: Kafka's fixed topic id of ``__cluster_metadata`` (``Uuid.METADATA_TOPIC_ID``).
METADATA_TOPIC_ID = uuid.UUID(int=1)
METADATA_TOPIC = "__cluster_metadata"


# --------------------------------------------------------------------------- Fetch (API key 1, v15+)
@dataclass(slots=True)
class FetchPartition:
    """FetchRequest.Topics[].Partitions[] (v15): ``last_fetched_epoch`` drives KIP-320 divergence.
    ``topic``: the topic's name, which Fetch v4-v12 carry instead of ``topic_id`` (then the zero
    UUID); "" at v13+."""

    topic_id: uuid.UUID
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    partition_max_bytes: int = 1048576
    topic: str = ""


@dataclass(slots=True)
class FetchRequest:
    """Fetch v15: ``replica_id``/``replica_epoch`` are ReplicaState (KIP-903); -1 for consumers."""

    API: ClassVar[str] = "Fetch"
    API_KEY: ClassVar[int] = 1
    VERSION: ClassVar[int] = 15
    replica_id: int
    replica_epoch: int
    max_wait_ms: int
    min_bytes: int
    partitions: tuple[FetchPartition, ...]
    max_bytes: int = 52428800
    isolation_level: int = 0


@dataclass(slots=True)
class EpochEndOffset:
    """A (leader epoch, end offset) pair: DivergingEpoch in Fetch, answers of OffsetForLeaderEpoch."""

    epoch: int
    end_offset: int


@dataclass(slots=True)
class FetchPartitionResponse:
    """FetchResponse partition data. ``diverging_epoch`` is set when the follower's log diverged
    (KIP-320 / KIP-595); then ``records`` is empty. ``current_leader`` is (leader_id, leader_epoch).
    ``topic``: the topic's name, answering a Fetch v4-v12 (which names topics; ``topic_id`` is then
    the zero UUID); "" at v13+."""

    topic_id: uuid.UUID
    partition: int
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    current_leader: tuple[int, int] | None = None
    records: tuple[RecordBatch, ...] = ()
    topic: str = ""


@dataclass(slots=True)
class FetchResponse:
    API: ClassVar[str] = "Fetch"
    error_code: int
    partitions: tuple[FetchPartitionResponse, ...]
    throttle_time_ms: int = 0
    session_id: int = 0


# ---------------------------------------------------------------- AlterPartition (API key 56, v3)
@dataclass(slots=True)
class BrokerState:
    """NewIsrWithEpochs entry (KIP-903): ``broker_epoch`` -1 when the epoch check is not used."""

    broker_id: int
    broker_epoch: int = -1


@dataclass(slots=True)
class AlterPartitionItem:
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    partition_epoch: int
    leader_recovery_state: int = 0


@dataclass(slots=True)
class AlterPartitionRequest:
    """AlterPartition v3 (KIP-497, KIP-903): the leader proposes a new ISR to the controller."""

    API: ClassVar[str] = "AlterPartition"
    API_KEY: ClassVar[int] = 56
    VERSION: ClassVar[int] = 3
    broker_id: int
    broker_epoch: int
    partitions: tuple[AlterPartitionItem, ...]


@dataclass(slots=True)
class AlterPartitionResponseItem:
    topic_id: uuid.UUID
    partition: int
    error_code: int
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    partition_epoch: int = -1


@dataclass(slots=True)
class AlterPartitionResponse:
    API: ClassVar[str] = "AlterPartition"
    error_code: int
    partitions: tuple[AlterPartitionResponseItem, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------------ BrokerRegistration (API key 62, v4)
@dataclass(slots=True)
class Listener:
    """BrokerRegistrationRequest.Listeners[]: an endpoint the broker serves on (Kafka's EndPoint);
    ``security_protocol`` 0 = PLAINTEXT."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(slots=True)
class BrokerRegistrationRequest:
    """``previous_broker_epoch``: the epoch in the clean-shutdown file, -1 if none (KIP-966)."""

    API: ClassVar[str] = "BrokerRegistration"
    API_KEY: ClassVar[int] = 62
    VERSION: ClassVar[int] = 4
    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    rack: str | None = None
    previous_broker_epoch: int = -1
    listeners: tuple[Listener, ...] = ()
    #: the broker's log directories (KIP-858's LogDirs); empty: not reported (every one counts as online,
    #: as in Kafka); a failed one is reported offline in the broker's heartbeats
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(slots=True)
class BrokerRegistrationResponse:
    API: ClassVar[str] = "BrokerRegistration"
    error_code: int
    broker_epoch: int = -1
    throttle_time_ms: int = 0


# --------------------------------------------------------------- BrokerHeartbeat (API key 63, v1)
@dataclass(slots=True)
class BrokerHeartbeatRequest:
    """``offline_log_dirs``: the broker's log directories that failed (KIP-858's OfflineLogDirs, a v1
    tagged field), sent in every heartbeat until the broker restarts."""

    API: ClassVar[str] = "BrokerHeartbeat"
    API_KEY: ClassVar[int] = 63
    VERSION: ClassVar[int] = 1
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(slots=True)
class BrokerHeartbeatResponse:
    API: ClassVar[str] = "BrokerHeartbeat"
    error_code: int
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    throttle_time_ms: int = 0


# ---------------------------------------------- metadata log fetch (Fetch on __cluster_metadata)
@dataclass(slots=True)
class MetadataFetchRequest:
    """A broker's Fetch of the ``__cluster_metadata`` log from the controller (KRaft observer fetch).

    On the wire it is a Fetch v15 for METADATA_TOPIC_ID, partition 0, ReplicaState = the broker.
    ``cluster_id``: Fetch's ClusterId tagged field (KIP-595), the broker's cluster id; None (not sent) is
    accepted, as ``KafkaRaftClient.hasValidClusterId`` accepts it, another one is INCONSISTENT_CLUSTER_ID."""

    API: ClassVar[str] = "Fetch"
    API_KEY: ClassVar[int] = 1
    VERSION: ClassVar[int] = 15
    replica_id: int
    replica_epoch: int
    fetch_offset: int
    max_wait_ms: int
    cluster_id: str | None = None


@dataclass(slots=True)
class MetadataFetchResponse:
    """``records``: metadata records from ``fetch_offset`` on (``kraftlog.metadata.records``);
    ``high_watermark``: the metadata log end offset."""

    API: ClassVar[str] = "Fetch"
    error_code: int
    high_watermark: int
    base_offset: int
    records: tuple = ()


# ---------------------------------------------------------------------- Produce (API key 0, v9)
@dataclass(slots=True)
class ProducePartition:
    topic: str
    partition: int
    records: tuple[RecordBatch, ...]


@dataclass(slots=True)
class ProduceRequest:
    """``acks``: 0, 1 or -1 (all); ``timeout_ms``: how long the leader waits for acks=all."""

    API: ClassVar[str] = "Produce"
    API_KEY: ClassVar[int] = 0
    VERSION: ClassVar[int] = 9
    acks: int
    timeout_ms: int
    partitions: tuple[ProducePartition, ...]
    transactional_id: str | None = None


@dataclass(slots=True)
class ProducePartitionResponse:
    """``error_message``: Kafka's ErrorMessage (Produce v8+), why a batch was refused (INVALID_RECORD)."""

    topic: str
    partition: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@dataclass(slots=True)
class ProduceResponse:
    API: ClassVar[str] = "Produce"
    partitions: tuple[ProducePartitionResponse, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------------------ ListOffsets (API key 2, v7)
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


@dataclass(slots=True)
class ListOffsetsPartition:
    topic: str
    partition: int
    timestamp: int
    current_leader_epoch: int = -1


@dataclass(slots=True)
class ListOffsetsRequest:
    API: ClassVar[str] = "ListOffsets"
    API_KEY: ClassVar[int] = 2
    VERSION: ClassVar[int] = 7
    replica_id: int
    partitions: tuple[ListOffsetsPartition, ...]
    isolation_level: int = 0


@dataclass(slots=True)
class ListOffsetsPartitionResponse:
    topic: str
    partition: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(slots=True)
class ListOffsetsResponse:
    API: ClassVar[str] = "ListOffsets"
    partitions: tuple[ListOffsetsPartitionResponse, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------- OffsetForLeaderEpoch (API key 23, v4)
@dataclass(slots=True)
class OffsetForLeaderEpochPartition:
    topic: str
    partition: int
    current_leader_epoch: int
    leader_epoch: int


@dataclass(slots=True)
class OffsetForLeaderEpochRequest:
    API: ClassVar[str] = "OffsetForLeaderEpoch"
    API_KEY: ClassVar[int] = 23
    VERSION: ClassVar[int] = 4
    replica_id: int
    partitions: tuple[OffsetForLeaderEpochPartition, ...]


@dataclass(slots=True)
class OffsetForLeaderEpochPartitionResponse:
    topic: str
    partition: int
    error_code: int
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(slots=True)
class OffsetForLeaderEpochResponse:
    API: ClassVar[str] = "OffsetForLeaderEpoch"
    partitions: tuple[OffsetForLeaderEpochPartitionResponse, ...]
    throttle_time_ms: int = 0


# ---------------------------------------------------------------------- Metadata (API key 3, v12)
@dataclass(slots=True)
class MetadataRequest:
    """``topics`` None asks for every topic."""

    API: ClassVar[str] = "Metadata"
    API_KEY: ClassVar[int] = 3
    VERSION: ClassVar[int] = 12
    topics: tuple[str, ...] | None = None


@dataclass(slots=True)
class MetadataBroker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(slots=True)
class MetadataPartition:
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(slots=True)
class MetadataTopic:
    error_code: int
    name: str
    topic_id: uuid.UUID
    partitions: tuple[MetadataPartition, ...]


@dataclass(slots=True)
class MetadataResponse:
    API: ClassVar[str] = "Metadata"
    brokers: tuple[MetadataBroker, ...]
    controller_id: int
    topics: tuple[MetadataTopic, ...]
    cluster_id: str | None = None
    throttle_time_ms: int = 0


# ------------------------------------------------------------------ CreateTopics (API key 19, v7)
@dataclass(slots=True)
class CreatableTopic:
    """``assignment``: replica list per partition (preferred leader first), or empty to use
    ``num_partitions``/``replication_factor``; ``configs``: Kafka topic config names to string values."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: tuple[tuple[int, ...], ...] = ()
    configs: tuple[tuple[str, str | None], ...] = ()
    #: The partition index of each ``assignment`` entry when a client sent indexes other than 0..n-1 in
    #: some order (duplicates, gaps): the controller answers INVALID_REPLICA_ASSIGNMENT. Empty: entry i
    #: is partition i.
    assignment_partitions: tuple[int, ...] = ()


@dataclass(slots=True)
class CreateTopicsRequest:
    API: ClassVar[str] = "CreateTopics"
    API_KEY: ClassVar[int] = 19
    VERSION: ClassVar[int] = 7
    topics: tuple[CreatableTopic, ...]
    timeout_ms: int = 30000


@dataclass(slots=True)
class CreateTopicResult:
    """A created topic's ``num_partitions`` and ``replication_factor`` are what the controller created
    (CreateTopics v5+; the request's -1 resolved to ``num.partitions`` / ``default.replication.factor``,
    KIP-464); -1 for a topic that was not created."""

    name: str
    error_code: int
    topic_id: uuid.UUID | None = None
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass(slots=True)
class CreateTopicsResponse:
    API: ClassVar[str] = "CreateTopics"
    topics: tuple[CreateTopicResult, ...]
    throttle_time_ms: int = 0


# ---------------------------------------------------- IncrementalAlterConfigs (API key 44, v1)
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3


@dataclass(slots=True)
class AlterableConfig:
    name: str
    config_operation: int
    value: str | None


@dataclass(slots=True)
class AlterConfigsResource:
    """``resource_type`` 2 = topic, 4 = broker (resource_name "" = cluster default)."""

    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]


@dataclass(slots=True)
class IncrementalAlterConfigsRequest:
    API: ClassVar[str] = "IncrementalAlterConfigs"
    API_KEY: ClassVar[int] = 44
    VERSION: ClassVar[int] = 1
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False


@dataclass(slots=True)
class AlterConfigsResourceResponse:
    error_code: int
    resource_type: int
    resource_name: str
    error_message: str | None = None


@dataclass(slots=True)
class IncrementalAlterConfigsResponse:
    API: ClassVar[str] = "IncrementalAlterConfigs"
    responses: tuple[AlterConfigsResourceResponse, ...]
    throttle_time_ms: int = 0


# --------------------------------------------------- ElectLeaders (API key 43, v2; v3 KIP-966)
#: Election types (Kafka's ``ElectionType``; 2..4 are KIP-966's ElectLeaders v3): ElectLeaders v0
#: elects preferred leaders only, v1-v2 know 0 and 1, v3 all five (DESIGNATION with DesiredLeaders).
ELECTION_PREFERRED = 0
ELECTION_UNCLEAN = 1
ELECTION_LONGEST_LOG_BALANCED = 2
ELECTION_LONGEST_LOG_AGGRESSIVE = 3
ELECTION_DESIGNATION = 4

ELECTION_TYPES = {
    "preferred": ELECTION_PREFERRED,
    "unclean": ELECTION_UNCLEAN,
    "longest_log_balanced": ELECTION_LONGEST_LOG_BALANCED,
    "longest_log_aggressive": ELECTION_LONGEST_LOG_AGGRESSIVE,
    "designation": ELECTION_DESIGNATION,
}


@dataclass(slots=True)
class ElectLeadersPartition:
    topic: str
    partition: int
    #: DESIGNATION's desired leader (v3's DesiredLeaders, matched with Partitions by index); -1: none.
    desired_leader: int = -1


@dataclass(slots=True)
class ElectLeadersRequest:
    """Types 0 PREFERRED and 1 UNCLEAN (v1-v2); 2..4 and a partition's ``desired_leader`` (DesiredLeaders)
    are KIP-966's v3, served from level ``urm`` on (``wire.supported_versions(ElectLeadersRequest,
    level)``). ``VERSION`` stays 2, the version every level serves."""

    API: ClassVar[str] = "ElectLeaders"
    API_KEY: ClassVar[int] = 43
    VERSION: ClassVar[int] = 2
    election_type: int
    partitions: tuple[ElectLeadersPartition, ...]
    timeout_ms: int = 30000


@dataclass(slots=True)
class ElectLeadersResult:
    topic: str
    partition: int
    error_code: int
    error_message: str | None = None


@dataclass(slots=True)
class ElectLeadersResponse:
    API: ClassVar[str] = "ElectLeaders"
    error_code: int
    results: tuple[ElectLeadersResult, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------- GetReplicaLogInfo (API key 93, v0; KIP-966)
# The controller's Unclean Recovery Manager asks each replica of a leaderless partition for its log
# (KIP-966 part 2). Fields as Kafka trunk's GetReplicaLogInfo{Request,Response}.json (where the KIP's
# JSON differs, trunk wins: see kraftlog.protocol.kio_extra.get_replica_log_info).
@dataclass(slots=True)
class GetReplicaLogInfoPartition:
    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True)
class GetReplicaLogInfoRequest:
    """The controller's Unclean Recovery Manager asks a replica for its log (level ``urm``; brokers serve
    it on their internal listener; advertised from level ``urm`` on)."""

    API: ClassVar[str] = "GetReplicaLogInfo"
    API_KEY: ClassVar[int] = 93
    VERSION: ClassVar[int] = 0
    partitions: tuple[GetReplicaLogInfoPartition, ...]


@dataclass(slots=True)
class PartitionLogInfo:
    topic_id: uuid.UUID
    partition: int
    last_written_leader_epoch: int
    #: The partition's leader epoch in the answering broker's metadata (fences stale answers).
    current_leader_epoch: int
    log_end_offset: int
    error_code: int = 0


@dataclass(slots=True)
class GetReplicaLogInfoResponse:
    API: ClassVar[str] = "GetReplicaLogInfo"
    #: The answering broker's epoch (its RegisterBrokerRecord's offset), fencing answers from before a
    #: restart.
    broker_epoch: int
    partitions: tuple[PartitionLogInfo, ...]
    #: Trunk's HasMoreData: only the first 1,000 partitions asked for were answered.
    has_more_data: bool = False
    throttle_time_ms: int = 0


# --------------------------------------------- DescribeTopicPartitions (API key 75, v0; KIP-966)
@dataclass(slots=True)
class DescribeTopicPartitionsCursor:
    """Where a page starts (request ``Cursor``) or where the next one should (response ``NextCursor``):
    the first topic and the partition index within it to describe."""

    topic_name: str
    partition_index: int


@dataclass(slots=True)
class DescribeTopicPartitionsRequest:
    """DescribeTopicPartitions v0 (KIP-966; the KIP says key 74, Kafka assigned 75).

    ``topics`` empty asks for every topic. ``response_partition_limit`` caps the partitions in the
    response (the broker also caps it with ``max.request.partition.size.limit``); ``cursor`` resumes
    where a previous response's ``next_cursor`` pointed. Admin-facing: topics by name only."""

    API: ClassVar[str] = "DescribeTopicPartitions"
    API_KEY: ClassVar[int] = 75
    VERSION: ClassVar[int] = 0
    topics: tuple[str, ...]
    response_partition_limit: int = 2000
    cursor: DescribeTopicPartitionsCursor | None = None


@dataclass(slots=True)
class DescribeTopicPartitionsResponsePartition:
    """One partition: ``leader_id`` -1 when none; ``eligible_leader_replicas`` / ``last_known_elr``
    are KIP-966's ELR and LastKnownELR (empty when none, as Kafka sends them); ``offline_replicas``
    are replicas whose broker is unregistered or fenced."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int = -1
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


@dataclass(slots=True)
class DescribeTopicPartitionsResponseTopic:
    """One topic; ``topic_id`` is the zero UUID for a topic in error (Kafka's ``Uuid.ZERO_UUID``)."""

    error_code: int
    name: str
    topic_id: uuid.UUID
    is_internal: bool = False
    partitions: tuple[DescribeTopicPartitionsResponsePartition, ...] = ()


@dataclass(slots=True)
class DescribeTopicPartitionsResponse:
    """``next_cursor`` None when the response holds everything that was asked for."""

    API: ClassVar[str] = "DescribeTopicPartitions"
    topics: tuple[DescribeTopicPartitionsResponseTopic, ...]
    next_cursor: DescribeTopicPartitionsCursor | None = None
    throttle_time_ms: int = 0


# ------------------------------------------------ group coordinator: FindCoordinator (10, v4),
# OffsetCommit (8, v8) and OffsetFetch (9, v8). KIP-320: committed offsets carry the leader epoch.
COORDINATOR_GROUP = 0


@dataclass(slots=True)
class FindCoordinatorRequest:
    """FindCoordinator v4: ``key_type`` 0 = group; ``coordinator_keys`` are group ids."""

    API: ClassVar[str] = "FindCoordinator"
    API_KEY: ClassVar[int] = 10
    VERSION: ClassVar[int] = 4
    coordinator_keys: tuple[str, ...]
    key_type: int = COORDINATOR_GROUP


@dataclass(slots=True)
class Coordinator:
    key: str
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True)
class FindCoordinatorResponse:
    API: ClassVar[str] = "FindCoordinator"
    coordinators: tuple[Coordinator, ...]
    throttle_time_ms: int = 0


@dataclass(slots=True)
class OffsetCommitPartition:
    """``committed_leader_epoch``: the leader epoch of the last consumed record (KIP-320), -1 if unknown."""

    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = None


@dataclass(slots=True)
class OffsetCommitRequest:
    """OffsetCommit v8 for a consumer using ``assign()`` (generation -1, empty member id)."""

    API: ClassVar[str] = "OffsetCommit"
    API_KEY: ClassVar[int] = 8
    VERSION: ClassVar[int] = 8
    group_id: str
    partitions: tuple[OffsetCommitPartition, ...]
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(slots=True)
class OffsetCommitPartitionResponse:
    topic: str
    partition: int
    error_code: int


@dataclass(slots=True)
class OffsetCommitResponse:
    API: ClassVar[str] = "OffsetCommit"
    partitions: tuple[OffsetCommitPartitionResponse, ...]
    throttle_time_ms: int = 0


@dataclass(slots=True)
class OffsetFetchRequest:
    """OffsetFetch v8 for one group; ``partitions`` None asks for every committed partition."""

    API: ClassVar[str] = "OffsetFetch"
    API_KEY: ClassVar[int] = 9
    VERSION: ClassVar[int] = 8
    group_id: str
    partitions: tuple[tuple[str, int], ...] | None
    require_stable: bool = False


@dataclass(slots=True)
class OffsetFetchPartition:
    """``committed_offset`` -1 when nothing is committed."""

    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None = None
    error_code: int = 0


@dataclass(slots=True)
class OffsetFetchResponse:
    API: ClassVar[str] = "OffsetFetch"
    group_id: str
    error_code: int
    partitions: tuple[OffsetFetchPartition, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------------- InitProducerId (API key 22, v4)
@dataclass(slots=True)
class InitProducerIdRequest:
    """InitProducerId v4 for an idempotent (non-transactional) producer."""

    API: ClassVar[str] = "InitProducerId"
    API_KEY: ClassVar[int] = 22
    VERSION: ClassVar[int] = 4
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(slots=True)
class InitProducerIdResponse:
    API: ClassVar[str] = "InitProducerId"
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1
    throttle_time_ms: int = 0


# ------------------------------------------------- classic consumer groups (JoinGroup key 11 ...)
@dataclass(slots=True)
class JoinGroupRequestProtocol:
    """One assignment protocol a member supports: ``name`` (e.g. ``"range"``) and its opaque metadata
    (the client's subscription; the coordinator never decodes it)."""

    name: str
    metadata: bytes


@dataclass(slots=True)
class JoinGroupRequest:
    """JoinGroup v9 (classic group protocol). ``member_id`` "" on a first join: the coordinator answers
    MEMBER_ID_REQUIRED with a new id (KIP-394); ``rebalance_timeout_ms`` -1 means the session timeout
    (v0 has none)."""

    API: ClassVar[str] = "JoinGroup"
    API_KEY: ClassVar[int] = 11
    VERSION: ClassVar[int] = 9
    group_id: str
    session_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class JoinGroupResponseMember:
    """A member and the metadata of the group's chosen protocol, sent to the group leader only."""

    member_id: str
    metadata: bytes
    group_instance_id: str | None = None


@dataclass(slots=True)
class JoinGroupResponse:
    API: ClassVar[str] = "JoinGroup"
    error_code: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()
    skip_assignment: bool = False
    throttle_time_ms: int = 0


@dataclass(slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes


@dataclass(slots=True)
class SyncGroupRequest:
    """SyncGroup v5: the leader sends every member's assignment (computed by the client's assignor);
    the others send none and wait for theirs."""

    API: ClassVar[str] = "SyncGroup"
    API_KEY: ClassVar[int] = 14
    VERSION: ClassVar[int] = 5
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class SyncGroupResponse:
    API: ClassVar[str] = "SyncGroup"
    error_code: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None
    throttle_time_ms: int = 0


@dataclass(slots=True)
class HeartbeatRequest:
    """Heartbeat v4: REBALANCE_IN_PROGRESS tells the member to rejoin."""

    API: ClassVar[str] = "Heartbeat"
    API_KEY: ClassVar[int] = 12
    VERSION: ClassVar[int] = 4
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(slots=True)
class HeartbeatResponse:
    API: ClassVar[str] = "Heartbeat"
    error_code: int
    throttle_time_ms: int = 0


@dataclass(slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class LeaveGroupRequest:
    """LeaveGroup v5 (v0-v2 carry one ``member_id`` at the top level: one MemberIdentity here)."""

    API: ClassVar[str] = "LeaveGroup"
    API_KEY: ClassVar[int] = 13
    VERSION: ClassVar[int] = 5
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(slots=True)
class LeaveGroupMemberResponse:
    member_id: str
    error_code: int
    group_instance_id: str | None = None


@dataclass(slots=True)
class LeaveGroupResponse:
    API: ClassVar[str] = "LeaveGroup"
    error_code: int
    members: tuple[LeaveGroupMemberResponse, ...] = ()
    throttle_time_ms: int = 0


# ------------------------------------------------------------------ ApiVersions (API key 18, v3)
@dataclass(slots=True)
class ApiVersionsRequest:
    """ApiVersions v3 (KIP-511: the client names its software)."""

    API: ClassVar[str] = "ApiVersions"
    API_KEY: ClassVar[int] = 18
    VERSION: ClassVar[int] = 3
    client_software_name: str = ""
    client_software_version: str = ""


@dataclass(slots=True)
class ApiVersion:
    api_key: int
    min_version: int
    max_version: int


@dataclass(slots=True)
class ApiVersionsResponse:
    API: ClassVar[str] = "ApiVersions"
    error_code: int
    api_keys: tuple[ApiVersion, ...]
    throttle_time_ms: int = 0


# ------------------------------------------------------------------ DeleteTopics (API key 20, v6)
@dataclass(slots=True)
class DeleteTopicsRequest:
    """DeleteTopics v6: the topics to delete by name (``topic_names``) and by topic id (``topic_ids``:
    v6's DeleteTopicState entries with a null Name, KIP-516; the zero id stands for an entry naming
    neither). Versions before 6 carry names only."""

    API: ClassVar[str] = "DeleteTopics"
    API_KEY: ClassVar[int] = 20
    VERSION: ClassVar[int] = 6
    topic_names: tuple[str, ...]
    timeout_ms: int = 30000
    topic_ids: tuple[uuid.UUID, ...] = ()


@dataclass(slots=True)
class DeletableTopicResult:
    """One topic's answer. ``name`` None for a topic named by an id the controller does not know (v6's
    nullable Name); ``topic_id`` None travels as Kafka's ZERO_UUID."""

    name: str | None
    error_code: int
    topic_id: uuid.UUID | None = None
    error_message: str | None = None


@dataclass(slots=True)
class DeleteTopicsResponse:
    API: ClassVar[str] = "DeleteTopics"
    responses: tuple[DeletableTopicResult, ...]
    throttle_time_ms: int = 0


# --------------------------------------------------------------- DescribeConfigs (API key 32, v4)
@dataclass(slots=True)
class DescribeConfigsResource:
    """``resource_type`` 2 = topic, 4 = broker (Kafka's ConfigResource.Type); ``configuration_keys``
    None = every config."""

    resource_type: int
    resource_name: str
    configuration_keys: tuple[str, ...] | None = None


@dataclass(slots=True)
class DescribeConfigsRequest:
    API: ClassVar[str] = "DescribeConfigs"
    API_KEY: ClassVar[int] = 32
    VERSION: ClassVar[int] = 4
    resources: tuple[DescribeConfigsResource, ...]
    include_synonyms: bool = False
    include_documentation: bool = False


@dataclass(slots=True)
class DescribeConfigsResourceResult:
    """``config_source``: Kafka's ``DescribeConfigsResponse.ConfigSource`` id: 1 TOPIC_CONFIG (set on the
    topic), 3 DYNAMIC_DEFAULT_BROKER_CONFIG (set cluster-wide), 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG."""

    name: str
    value: str | None
    read_only: bool = False
    config_source: int = 5
    is_sensitive: bool = False


@dataclass(slots=True)
class DescribeConfigsResult:
    error_code: int
    resource_type: int
    resource_name: str
    configs: tuple[DescribeConfigsResourceResult, ...] = ()
    error_message: str | None = None


@dataclass(slots=True)
class DescribeConfigsResponse:
    API: ClassVar[str] = "DescribeConfigs"
    results: tuple[DescribeConfigsResult, ...]
    throttle_time_ms: int = 0


#: Every request class, keyed by API name (MetadataFetchRequest shares "Fetch").
REQUEST_TYPES: tuple[type, ...] = (
    FetchRequest, MetadataFetchRequest, AlterPartitionRequest, BrokerRegistrationRequest,
    BrokerHeartbeatRequest, ProduceRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest,
    MetadataRequest, CreateTopicsRequest, IncrementalAlterConfigsRequest, ElectLeadersRequest,
    DescribeTopicPartitionsRequest, FindCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest,
    InitProducerIdRequest, JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest,
    ApiVersionsRequest, DeleteTopicsRequest, DescribeConfigsRequest, GetReplicaLogInfoRequest,
)
#: The Kafka API names a scenario's ``hold``/``release`` may name.
API_NAMES: frozenset[str] = frozenset(cls.API for cls in REQUEST_TYPES)


@dataclass(slots=True)
class Envelope:
    """A message in transit: ``src``/``dst`` are node ids (broker int, ``"controller"`` or a client id),
    ``correlation_id`` matches a response to its request, ``is_response`` tells which it is."""

    src: object
    dst: object
    correlation_id: int
    message: object
    is_response: bool = False
    #: The listener a request arrived on (Kafka's ``RequestContext.listenerName``): the TCP driver sets
    #: it ("CLIENT", "INTERNAL", "CONTROLLER"); None in the simulator, where every link is internal.
    listener: str | None = None
    #: The client id of the request header (Kafka's ``RequestHeader.clientId``); None when unknown.
    client_id: str | None = None
    #: The request's API version as the client sent it (the TCP driver; None in the simulator: the
    #: request class's VERSION).
    api_version: int | None = None
