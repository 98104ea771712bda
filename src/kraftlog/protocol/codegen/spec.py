"""The table the generator turns into :mod:`kraftlog.protocol.messages`: one row per API.

Each :class:`Api` names Kafka's API (name, key, the version whose semantics the core carries), where its
schema is read (:class:`Kio`: kio's entity classes at a version; :class:`Json`: one of Kafka's message
JSON files in ``codegen/schemas/``) and the core classes made from it. A :class:`Struct` is one core
class: the side (request or response) and the path of the Kafka struct it flattens, from the top-level
struct (``""``: the request or response itself; ``"topics.partitions"``: each partition of each topic).
Its fields, in the core's order:

* :class:`F` -- a field of the schema: its type, default and ``about`` text come from the schema.
  ``kio``: the schema path when the name differs (``"partition_index"``), or a field of an enclosing
  struct (``"../topic_id"``: the topic a flattened partition belongs to), or one deeper down
  (``"topics.partitions"``: a flattened list). A core name ``x_ms`` reads Kafka's ``XMs`` (kio: ``x``,
  a timedelta). ``type``, ``default`` and ``nullable`` say where the core differs from the schema
  (each such place says why, in ``doc`` or a comment); ``version`` reads the field from another
  version of the API (Fetch's topic names, v12).
* :class:`Extra` -- kraftlog's own field, in no schema (``doc`` says what it is for).

A struct-valued field's type is the core class made from the struct at its path; a ``type`` override
names another representation (Fetch's ``current_leader`` as a ``(leader_id, leader_epoch)`` pair).

Not generated: the APIs kio has that the core does not speak (kio's entities serve them at the edge
if ever needed, and a mirror nobody uses would only drift); the core's classes hold what the protocol
uses, not every field (DESIGN.md: kio stays at the edge).
"""

from __future__ import annotations

from .spec_groups import GROUP_APIS
from .spec_model import (
    FROM_SCHEMA,
    REQUEST,
    REQUIRED,
    RESPONSE,
    Api,
    Const,
    Expr,
    Extra,
    F,
    Json,
    Kio,
    Struct,
)
from .spec_raft import RAFT_APIS
from .spec_security import SECURITY_APIS

# The model's names, as the generator reads them from here, and the table.
__all__ = ["FROM_SCHEMA", "REQUEST", "REQUIRED", "RESPONSE", "Api", "Const", "Expr", "Extra", "F", "Json", "Kio",
           "Struct", "HEAD_CONSTANTS", "APIS", "GROUP_APIS", "RAFT_APIS", "SECURITY_APIS"]

_TOPIC_BY_NAME = 'the topic\'s name (Kafka nests partitions by topic; the core flattens them).'

#: Module constants before the first API.
HEAD_CONSTANTS: tuple[Const, ...] = (
    Const("METADATA_TOPIC_ID", "uuid.UUID(int=1)", "Kafka's fixed topic id of ``__cluster_metadata`` "
          "(``Uuid.METADATA_TOPIC_ID``)."),
    Const("METADATA_TOPIC", '"__cluster_metadata"'),
)

APIS: tuple[Api, ...] = (
    Api("Fetch", 1, 15, Kio(15), title="Fetch (API key 1, v15+)", classes=(
        Struct("FetchPartition", REQUEST, "topics.partitions", doc=(
            "FetchRequest.Topics[].Partitions[] (v15): ``last_fetched_epoch`` drives KIP-320 divergence.\n"
            "``topic``: the topic's name, which Fetch v4-v12 carry instead of ``topic_id`` (then the zero\n"
            'UUID); "" at v13+.'), fields=(
            F("topic_id", "../topic_id"),
            F("partition"),
            F("current_leader_epoch", default=REQUIRED),
            F("fetch_offset"),
            F("last_fetched_epoch"),
            F("log_start_offset"),
            F("partition_max_bytes", default=1048576),
            F("topic", "../topic", version=12, default=""),
        )),
        Struct("FetchRequest", REQUEST, "", doc=(
            "Fetch v15: ``replica_id``/``replica_epoch`` are ReplicaState (KIP-903); -1 for consumers."),
            fields=(
            F("replica_id", "replica_state.replica_id", default=REQUIRED),
            F("replica_epoch", "replica_state.replica_epoch", default=REQUIRED),
            F("max_wait_ms"),
            F("min_bytes"),
            F("partitions", "topics.partitions"),
            F("max_bytes", default=52428800),
            F("isolation_level"),
        )),
        Struct("EpochEndOffset", RESPONSE, "responses.partitions.diverging_epoch", doc=(
            "A (leader epoch, end offset) pair: DivergingEpoch in Fetch, answers of OffsetForLeaderEpoch."),
            fields=(F("epoch", default=REQUIRED), F("end_offset", default=REQUIRED))),
        Struct("FetchPartitionResponse", RESPONSE, "responses.partitions", doc=(
            "FetchResponse partition data. ``diverging_epoch`` is set when the follower's log diverged\n"
            "(KIP-320 / KIP-595); then ``records`` is empty. ``current_leader`` is (leader_id, leader_epoch).\n"
            "``topic``: the topic's name, answering a Fetch v4-v12 (which names topics; ``topic_id`` is then\n"
            'the zero UUID); "" at v13+.'), fields=(
            F("topic_id", "../topic_id"),
            F("partition", "partition_index"),
            F("error_code"),
            F("high_watermark", default=-1),
            F("last_stable_offset"),
            F("log_start_offset"),
            # None: no divergence (Kafka's all-default tagged struct).
            F("diverging_epoch", nullable=True, default=None),
            # A pair rather than a class: (-1, -1) on the wire is None here.
            F("current_leader", type="tuple[int, int] | None", default=None),
            F("records", default=()),
            F("topic", "../topic", version=12, default=""),
        )),
        Struct("FetchResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("partitions", "responses.partitions"),
            F("throttle_time_ms", default=0),
            F("session_id"),
        )),
    )),
    Api("AlterPartition", 56, 3, Kio(3), classes=(
        Struct("BrokerState", REQUEST, "topics.partitions.new_isr_with_epochs", doc=(
            "NewIsrWithEpochs entry (KIP-903): ``broker_epoch`` -1 when the epoch check is not used."),
            fields=(F("broker_id"), F("broker_epoch"))),
        Struct("AlterPartitionItem", REQUEST, "topics.partitions", fields=(
            F("topic_id", "../topic_id"),
            F("partition", "partition_index"),
            F("leader_epoch"),
            F("new_isr_with_epochs"),
            F("partition_epoch"),
            F("leader_recovery_state"),
        )),
        Struct("AlterPartitionRequest", REQUEST, "", doc=(
            "AlterPartition v3 (KIP-497, KIP-903): the leader proposes a new ISR to the controller."), fields=(
            F("broker_id"),
            F("broker_epoch", default=REQUIRED),
            F("partitions", "topics.partitions"),
        )),
        Struct("AlterPartitionResponseItem", RESPONSE, "topics.partitions", fields=(
            F("topic_id", "../topic_id"),
            F("partition", "partition_index"),
            F("error_code"),
            F("leader_id", default=-1),
            F("leader_epoch", default=-1),
            F("isr"),
            F("leader_recovery_state"),
            F("partition_epoch", default=-1),
        )),
        Struct("AlterPartitionResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("partitions", "topics.partitions"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("BrokerRegistration", 62, 4, Kio(4), classes=(
        Struct("Listener", REQUEST, "listeners", doc=(
            "BrokerRegistrationRequest.Listeners[]: an endpoint the broker serves on (Kafka's EndPoint);\n"
            "``security_protocol`` 0 = PLAINTEXT."), fields=(
            F("name"), F("host"), F("port"), F("security_protocol", default=0))),
        Struct("BrokerRegistrationRequest", REQUEST, "", doc=(
            "``previous_broker_epoch``: the epoch in the clean-shutdown file, -1 if none (KIP-966)."), fields=(
            F("broker_id"),
            F("cluster_id"),
            F("incarnation_id"),
            F("rack", default=None),
            F("previous_broker_epoch"),
            F("listeners", default=()),
            F("log_dirs", doc=(
                "the broker's log directories (KIP-858's LogDirs); empty: not reported (every one counts as "
                "online, as in Kafka); a failed one is reported offline in the broker's heartbeats")),
        )),
        Struct("BrokerRegistrationResponse", RESPONSE, "", fields=(
            F("error_code"), F("broker_epoch"), F("throttle_time_ms", default=0))),
    )),
    Api("BrokerHeartbeat", 63, 1, Kio(1), classes=(
        Struct("BrokerHeartbeatRequest", REQUEST, "", doc=(
            "``offline_log_dirs``: the broker's log directories that failed (KIP-858's OfflineLogDirs, a v1\n"
            "tagged field), sent in every heartbeat until the broker restarts."), fields=(
            F("broker_id"),
            F("broker_epoch", default=REQUIRED),
            F("current_metadata_offset"),
            F("want_fence"),
            F("want_shut_down"),
            F("offline_log_dirs"),
        )),
        Struct("BrokerHeartbeatResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("is_caught_up"),
            F("is_fenced"),
            F("should_shut_down", default=False),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("Fetch", 1, 15, Kio(15), title="metadata log fetch (Fetch on __cluster_metadata)", classes=(
        Struct("MetadataFetchRequest", REQUEST, "", doc=(
            "A broker's Fetch of the ``__cluster_metadata`` log from the controller (KRaft observer fetch), or a\n"
            "KRaft voter's or observer's fetch from the quorum's leader (KIP-595).\n"
            "\n"
            "On the wire it is a Fetch for METADATA_TOPIC_ID, partition 0, ReplicaState = the fetcher: v15, v17\n"
            "when ``replica_directory_id`` is set, v18 when ``high_watermark`` is (``wire.default_version``).\n"
            "``cluster_id``: Fetch's ClusterId tagged field (KIP-595), the broker's cluster id; None (not "
            "sent) is\naccepted, as ``KafkaRaftClient.hasValidClusterId`` accepts it, another one is "
            "INCONSISTENT_CLUSTER_ID."), fields=(
            F("replica_id", "replica_state.replica_id", default=REQUIRED),
            F("replica_epoch", "replica_state.replica_epoch", default=REQUIRED),
            F("fetch_offset", "topics.partitions.fetch_offset", type="int", doc=(
                "The next metadata log offset to fetch (the one partition of ``__cluster_metadata``).")),
            F("max_wait_ms"),
            F("cluster_id"),
            # KRaft's fetch (KIP-595): a voter or observer of the quorum fetches as a follower does.
            F("current_leader_epoch", "topics.partitions.current_leader_epoch", type="int", default=-1),
            F("last_fetched_epoch", "topics.partitions.last_fetched_epoch", type="int", default=-1),
            F("replica_directory_id", "topics.partitions.replica_directory_id", type="uuid.UUID | None",
              default=None, version=17, doc=(
                "The fetcher's metadata log directory id (KIP-853; Fetch v17+, None: none).")),
            F("high_watermark", "topics.partitions.high_watermark", type="int", default=-1, version=18, doc=(
                "The fetcher's high watermark, -1 when unknown (Fetch v18, KIP-1166): the leader answers at "
                "once when its own is higher.")),
        )),
        Struct("RaftNodeEndpoint", RESPONSE, "node_endpoints", doc=(
            "Where a node named in a response listens (Fetch v16+'s NodeEndpoints, KIP-853): the leader's endpoint\n"
            "on the listener the request came in on, so that an observer that found the quorum through\n"
            "``controller.quorum.bootstrap.servers`` can reach the leader."), fields=(
            F("node_id", version=16),
            F("host", version=16),
            F("port", version=16),
        )),
        Struct("MetadataFetchResponse", RESPONSE, "", doc=(
            "``records``: metadata records from ``fetch_offset`` on (``kraftlog.metadata.records``), the\n"
            "non-replicated controller's form; ``batches``: the KRaft log's batches from ``fetch_offset`` on\n"
            "(``kraftlog.protocol.raft_records.RaftBatch``). The two are alternatives: on the wire each batch of\n"
            "``batches`` is one record batch, and when both are set ``batches`` is what is sent.\n"
            "``high_watermark``: the metadata log's high watermark. ``current_leader_*`` / ``diverging_*``: Kafka's\n"
            "CurrentLeader and DivergingEpoch (KIP-595), -1 for none."), fields=(
            F("error_code"),
            F("high_watermark", "responses.partitions.high_watermark", type="int"),
            Extra("base_offset", "int", "the offset of ``records[0]`` (the metadata batch's base offset); "
                  "without ``records``, the sender's value (the fetch offset), kept on the wire"),
            F("records", "responses.partitions.records", type="tuple[MetadataRecord, ...]", default=(), doc=(
                "The metadata records, decoded (``kraftlog.protocol.wire`` maps them to one batch's records).")),
            F("current_leader_id", "responses.partitions.current_leader.leader_id", type="int", default=-1),
            F("current_leader_epoch", "responses.partitions.current_leader.leader_epoch", type="int",
              default=-1),
            F("diverging_epoch", "responses.partitions.diverging_epoch.epoch", type="int", default=-1),
            F("diverging_end_offset", "responses.partitions.diverging_epoch.end_offset", type="int", default=-1),
            F("log_start_offset", "responses.partitions.log_start_offset", type="int", default=-1),
            F("snapshot_end_offset", "responses.partitions.snapshot_id.end_offset", type="int", default=-1, doc=(
                "The snapshot to fetch (FetchSnapshot) when the fetch offset is below the log start offset "
                "(KIP-630's SnapshotId), -1: none.")),
            F("snapshot_epoch", "responses.partitions.snapshot_id.epoch", type="int", default=-1),
            F("batches", "responses.partitions.records", type="tuple[RaftBatch, ...]", default=(), doc=(
                "The KRaft log's batches, decoded: data batches of metadata records and control batches of "
                "KRaft's control records (``kraftlog.protocol.wire`` maps each to one record batch).")),
            F("node_endpoints", "node_endpoints", type="tuple[RaftNodeEndpoint, ...]", default=(), version=16,
              doc="The current leader's endpoint (KIP-853's NodeEndpoints, Fetch v16+), () when unknown."),
        )),
    )),
    Api("Produce", 0, 9, Kio(9), title="Produce (API key 0, v9)", classes=(
        Struct("ProducePartition", REQUEST, "topic_data.partition_data", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "index"),
            F("records", nullable=False),
        )),
        Struct("ProduceRequest", REQUEST, "", doc=(
            "``acks``: 0, 1 or -1 (all); ``timeout_ms``: how long the leader waits for acks=all."), fields=(
            F("acks"),
            F("timeout_ms"),
            F("partitions", "topic_data.partition_data"),
            F("transactional_id"),
        )),
        Struct("ProducePartitionResponse", RESPONSE, "responses.partition_responses", doc=(
            "``error_message``: Kafka's ErrorMessage (Produce v8+), why a batch was refused (INVALID_RECORD)."),
            fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "index"),
            F("error_code"),
            F("base_offset", default=-1),
            F("log_append_time_ms", nullable=False, default=-1),  # -1: none (kio's null datetime)
            F("log_start_offset"),
            F("error_message"),
            F("record_errors", type="tuple[tuple[int, str | None], ...]", default=(), doc=(
                "KIP-467's RecordErrors (Produce v8+): (batch index, message) of each record that made the batch "
                "refused, the index being the record's position in the batch.")),
        )),
        Struct("ProduceResponse", RESPONSE, "", fields=(
            F("partitions", "responses.partition_responses"),
            F("throttle_time_ms"),
        )),
    )),
    Api("ListOffsets", 2, 7, Kio(7), constants=(
        Const("EARLIEST_TIMESTAMP", "-2"), Const("LATEST_TIMESTAMP", "-1"),
        Const("MAX_TIMESTAMP", "-3")), classes=(  # KIP-734 (v7)
        Struct("ListOffsetsPartition", REQUEST, "topics.partitions", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("timestamp"),
            F("current_leader_epoch"),
        )),
        Struct("ListOffsetsRequest", REQUEST, "", fields=(
            F("replica_id"),
            F("partitions", "topics.partitions"),
            F("isolation_level", default=0),
        )),
        Struct("ListOffsetsPartitionResponse", RESPONSE, "topics.partitions", fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("error_code"),
            F("timestamp"),
            F("offset"),
            F("leader_epoch"),
        )),
        Struct("ListOffsetsResponse", RESPONSE, "", fields=(
            F("partitions", "topics.partitions"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("DeleteRecords", 21, 2, Kio(2), classes=(
        Struct("DeleteRecordsPartition", REQUEST, "topics.partitions", doc=(
            "``offset``: delete every record below it (the new log start offset); -1: up to the HWM."), fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("offset"),
        )),
        Struct("DeleteRecordsRequest", REQUEST, "", doc=(
            "DeleteRecords v2: move each partition's log start offset up (Kafka's ``deleteRecords``); the\n"
            "answer waits up to ``timeout_ms`` until every live replica's log start offset reached it."), fields=(
            F("partitions", "topics.partitions"),
            F("timeout_ms"),
        )),
        Struct("DeleteRecordsPartitionResponse", RESPONSE, "topics.partitions", doc=(
            "``low_watermark``: the least log start offset among the partition's live replicas."), fields=(
            F("topic", "../name", doc=_TOPIC_BY_NAME),
            F("partition", "partition_index"),
            F("low_watermark", default=-1),
            F("error_code", default=0),
        )),
        Struct("DeleteRecordsResponse", RESPONSE, "", fields=(
            F("partitions", "topics.partitions"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("OffsetForLeaderEpoch", 23, 4, Kio(4), classes=(
        Struct("OffsetForLeaderEpochPartition", REQUEST, "topics.partitions", fields=(
            F("topic", "../topic"),
            F("partition"),
            F("current_leader_epoch", default=REQUIRED),
            F("leader_epoch"),
        )),
        Struct("OffsetForLeaderEpochRequest", REQUEST, "", fields=(
            F("replica_id", default=REQUIRED),
            F("partitions", "topics.partitions"),
        )),
        Struct("OffsetForLeaderEpochPartitionResponse", RESPONSE, "topics.partitions", fields=(
            F("topic", "../topic"),
            F("partition"),
            F("error_code"),
            F("leader_epoch"),
            F("end_offset"),
        )),
        Struct("OffsetForLeaderEpochResponse", RESPONSE, "", fields=(
            F("partitions", "topics.partitions"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("Metadata", 3, 12, Kio(12), classes=(
        Struct("MetadataRequest", REQUEST, "", doc="``topics`` None asks for every topic.", fields=(
            # topic names only: the core asks by name
            F("topics", "topics.name", type="tuple[str, ...] | None", default=None),
            F("allow_auto_topic_creation", default=False),  # Kafka's true; the simulator's clients create nothing
        )),
        Struct("MetadataBroker", RESPONSE, "brokers", fields=(
            F("node_id"), F("host"), F("port"), F("rack"))),
        Struct("MetadataPartition", RESPONSE, "topics.partitions", fields=(
            F("error_code"),
            F("partition_index"),
            F("leader_id"),
            F("leader_epoch", default=REQUIRED),
            F("replica_nodes", default=REQUIRED),
            F("isr_nodes", default=REQUIRED),
            F("offline_replicas"),
        )),
        Struct("MetadataTopic", RESPONSE, "topics", fields=(
            F("error_code"),
            F("name", nullable=False),
            F("topic_id"),
            F("partitions"),
        )),
        Struct("MetadataResponse", RESPONSE, "", fields=(
            F("brokers"),
            F("controller_id", default=REQUIRED),
            F("topics"),
            F("cluster_id"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("CreateTopics", 19, 7, Kio(7), classes=(
        Struct("CreatableTopic", REQUEST, "topics", doc=(
            "``assignment``: replica list per partition (preferred leader first), or empty to use\n"
            "``num_partitions``/``replication_factor``; ``configs``: Kafka topic config names to string "
            "values."), fields=(
            F("name"),
            F("num_partitions", default=-1),
            F("replication_factor", default=-1),
            # the broker ids of each assignment, in partition order (see assignment_partitions)
            F("assignment", "assignments.broker_ids", type="tuple[tuple[int, ...], ...]", default=()),
            # (name, value) pairs
            F("configs", type="tuple[tuple[str, str | None], ...]", default=()),
            F("assignment_partitions", "assignments.partition_index", type="tuple[int, ...]", default=(), doc=(
                "The partition index of each ``assignment`` entry when a client sent indexes other than "
                "0..n-1 in some order (duplicates, gaps): the controller answers INVALID_REPLICA_ASSIGNMENT. "
                "Empty: entry i is partition i.")),
        )),
        Struct("CreateTopicsRequest", REQUEST, "", fields=(
            F("topics"),
            F("timeout_ms", default=30000),
        )),
        Struct("CreateTopicResult", RESPONSE, "topics", doc=(
            "A created topic's ``num_partitions`` and ``replication_factor`` are what the controller created\n"
            "(CreateTopics v5+; the request's -1 resolved to ``num.partitions`` / "
            "``default.replication.factor``,\nKIP-464); -1 for a topic that was not created."), fields=(
            F("name"),
            F("error_code"),
            F("topic_id", nullable=True, default=None),
            F("error_message", default=None),
            F("num_partitions"),
            F("replication_factor"),
        )),
        Struct("CreateTopicsResponse", RESPONSE, "", fields=(
            F("topics"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("IncrementalAlterConfigs", 44, 1, Kio(1), constants=(
        Const("RESOURCE_TOPIC", "2"), Const("RESOURCE_BROKER", "4"), Const("OP_SET", "0"),
        Const("OP_DELETE", "1"), Const("OP_APPEND", "2"), Const("OP_SUBTRACT", "3")), classes=(
        Struct("AlterableConfig", REQUEST, "resources.configs", fields=(
            F("name"), F("config_operation"), F("value"))),
        Struct("AlterConfigsResource", REQUEST, "resources", doc=(
            '``resource_type`` 2 = topic, 4 = broker (resource_name "" = cluster default).'), fields=(
            F("resource_type"), F("resource_name"), F("configs"))),
        Struct("IncrementalAlterConfigsRequest", REQUEST, "", fields=(
            F("resources"), F("validate_only", default=False))),
        Struct("AlterConfigsResourceResponse", RESPONSE, "responses", fields=(
            F("error_code"), F("resource_type"), F("resource_name"), F("error_message", default=None))),
        Struct("IncrementalAlterConfigsResponse", RESPONSE, "", fields=(
            F("responses"), F("throttle_time_ms", default=0))),
    )),
    Api("CreatePartitions", 37, 3, Kio(3), classes=(
        Struct("CreatePartitionsAssignment", REQUEST, "topics.assignments", fields=(F("broker_ids"),)),
        Struct("CreatePartitionsTopic", REQUEST, "topics", doc="``assignments``: each new partition's replicas, "
               "or None: placed as CreateTopics does.", fields=(F("name"), F("count"), F("assignments", default=None))),
        Struct("CreatePartitionsRequest", REQUEST, "", fields=(
            F("topics"), F("timeout_ms", default=30000), F("validate_only", default=False))),
        Struct("CreatePartitionsTopicResult", RESPONSE, "results", fields=(
            F("name"), F("error_code"), F("error_message", default=None))),
        Struct("CreatePartitionsResponse", RESPONSE, "", fields=(F("results"), F("throttle_time_ms", default=0))),
    )),
    # Kafka's legacy AlterConfigs names its structs as IncrementalAlterConfigs does: the core's get "Legacy".
    Api("AlterConfigs", 33, 2, Kio(2), classes=(
        Struct("LegacyAlterableConfig", REQUEST, "resources.configs", fields=(F("name"), F("value"))),
        Struct("LegacyAlterConfigsResource", REQUEST, "resources", fields=(
            F("resource_type"), F("resource_name"), F("configs")), doc=(
            "``configs`` replace the resource's dynamic configs (those not named are removed).")),
        Struct("AlterConfigsRequest", REQUEST, "", fields=(F("resources"), F("validate_only", default=False))),
        Struct("LegacyAlterConfigsResourceResponse", RESPONSE, "responses", fields=(
            F("error_code"), F("resource_type"), F("resource_name"), F("error_message", default=None))),
        Struct("AlterConfigsResponse", RESPONSE, "", fields=(F("responses"), F("throttle_time_ms", default=0))),
    )),
    Api("ElectLeaders", 43, 2, Json(3), title="ElectLeaders (API key 43, v2; v3 KIP-966)", constants=(
        Const("ELECTION_PREFERRED", "0", (
            "Election types (Kafka's ``ElectionType``; 2..4 are KIP-966's ElectLeaders v3): ElectLeaders v0\n"
            "elects preferred leaders only, v1-v2 know 0 and 1, v3 all five (DESIGNATION with DesiredLeaders).")),
        Const("ELECTION_UNCLEAN", "1"),
        Const("ELECTION_LONGEST_LOG_BALANCED", "2"),
        Const("ELECTION_LONGEST_LOG_AGGRESSIVE", "3"),
        Const("ELECTION_DESIGNATION", "4"),
        Const("ELECTION_TYPES", (
            '{\n    "preferred": ELECTION_PREFERRED,\n    "unclean": ELECTION_UNCLEAN,\n'
            '    "longest_log_balanced": ELECTION_LONGEST_LOG_BALANCED,\n'
            '    "longest_log_aggressive": ELECTION_LONGEST_LOG_AGGRESSIVE,\n'
            '    "designation": ELECTION_DESIGNATION,\n}'), "Election types by the names scenarios use."),
    ), classes=(
        Struct("ElectLeadersPartition", REQUEST, "topic_partitions.partitions", fields=(
            F("topic", "../topic"),
            F("partition", "", type="int"),  # the partition index itself (Partitions is []int32)
            F("desired_leader", "../desired_leaders", type="int", default=-1, doc=(
                "DESIGNATION's desired leader (v3's DesiredLeaders, matched with Partitions by index); "
                "-1: none.")),
        )),
        Struct("ElectLeadersRequest", REQUEST, "", doc=(
            "Types 0 PREFERRED and 1 UNCLEAN (v1-v2); 2..4 and a partition's ``desired_leader`` "
            "(DesiredLeaders)\nare KIP-966's v3, served from level ``urm`` on "
            "(``wire.supported_versions(ElectLeadersRequest,\nlevel)``). ``VERSION`` stays 2, the version "
            "every level serves."), fields=(
            F("election_type"),
            F("partitions", "topic_partitions.partitions", nullable=False),
            F("timeout_ms", default=30000),
        )),
        Struct("ElectLeadersResult", RESPONSE, "replica_election_results.partition_result", fields=(
            F("topic", "../topic"),
            F("partition", "partition_id"),
            F("error_code"),
            F("error_message", default=None),
        )),
        Struct("ElectLeadersResponse", RESPONSE, "", fields=(
            F("error_code"),
            F("results", "replica_election_results.partition_result"),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("GetReplicaLogInfo", 93, 0, Json(0), title="GetReplicaLogInfo (API key 93, v0; KIP-966)", note=(
        "The controller's Unclean Recovery Manager asks each replica of a leaderless partition for its log\n"
        "(KIP-966 part 2). Fields as Kafka trunk's GetReplicaLogInfo{Request,Response}.json (where the KIP's\n"
        "JSON differs, trunk wins: see kraftlog.protocol.kio_extra.get_replica_log_info)."), classes=(
        Struct("GetReplicaLogInfoPartition", REQUEST, "topic_partitions.partitions", fields=(
            F("topic_id", "../topic_id"),
            F("partition", "", type="int"),  # the partition index itself (Partitions is []int32)
        )),
        Struct("GetReplicaLogInfoRequest", REQUEST, "", doc=(
            "The controller's Unclean Recovery Manager asks a replica for its log (level ``urm``; brokers "
            "serve\nit on their internal listener; advertised from level ``urm`` on)."), fields=(
            F("partitions", "topic_partitions.partitions", nullable=False),
        )),
        Struct("PartitionLogInfo", RESPONSE, "topic_partition_log_info_list.partition_log_info", fields=(
            F("topic_id", "../topic_id"),
            F("partition"),
            F("last_written_leader_epoch"),
            F("current_leader_epoch", doc=(
                "The partition's leader epoch in the answering broker's metadata (fences stale answers).")),
            F("log_end_offset"),
            F("error_code", default=0),
        )),
        Struct("GetReplicaLogInfoResponse", RESPONSE, "", fields=(
            F("broker_epoch", doc=(
                "The answering broker's epoch (its RegisterBrokerRecord's offset), fencing answers from before "
                "a restart.")),
            F("partitions", "topic_partition_log_info_list.partition_log_info"),
            F("has_more_data", default=False, doc=(
                "Trunk's HasMoreData: only the first 1,000 partitions asked for were answered.")),
            F("throttle_time_ms", default=0),
        )),
    )),
    Api("DescribeTopicPartitions", 75, 0, Kio(0), title="DescribeTopicPartitions (API key 75, v0; KIP-966)",
        classes=(
        Struct("DescribeTopicPartitionsCursor", REQUEST, "cursor", doc=(
            "Where a page starts (request ``Cursor``) or where the next one should (response ``NextCursor``):\n"
            "the first topic and the partition index within it to describe."), fields=(
            F("topic_name"), F("partition_index"))),
        Struct("DescribeTopicPartitionsRequest", REQUEST, "", doc=(
            "DescribeTopicPartitions v0 (KIP-966; the KIP says key 74, Kafka assigned 75).\n"
            "\n"
            "``topics`` empty asks for every topic. ``response_partition_limit`` caps the partitions in the\n"
            "response (the broker also caps it with ``max.request.partition.size.limit``); ``cursor`` resumes\n"
            "where a previous response's ``next_cursor`` pointed. Admin-facing: topics by name only."), fields=(
            F("topics", "topics.name", type="tuple[str, ...]"),
            F("response_partition_limit"),
            F("cursor"),
        )),
        Struct("DescribeTopicPartitionsResponsePartition", RESPONSE, "topics.partitions", doc=(
            "One partition: ``leader_id`` -1 when none; ``eligible_leader_replicas`` / ``last_known_elr``\n"
            "are KIP-966's ELR and LastKnownELR (empty when none, as Kafka sends them); ``offline_replicas``\n"
            "are replicas whose broker is unregistered or fenced."), fields=(
            F("error_code"),
            F("partition_index"),
            F("leader_id"),
            F("leader_epoch"),
            F("replica_nodes"),
            F("isr_nodes"),
            F("eligible_leader_replicas", nullable=False, default=()),
            F("last_known_elr", nullable=False, default=()),
            F("offline_replicas"),
        )),
        Struct("DescribeTopicPartitionsResponseTopic", RESPONSE, "topics", doc=(
            "One topic; ``topic_id`` is the zero UUID for a topic in error (Kafka's ``Uuid.ZERO_UUID``)."),
            fields=(
            F("error_code"),
            F("name", nullable=False),
            F("topic_id"),
            F("is_internal"),
            F("partitions", default=()),
        )),
        Struct("DescribeTopicPartitionsResponse", RESPONSE, "", doc=(
            "``next_cursor`` None when the response holds everything that was asked for."), fields=(
            F("topics"),
            # the request's cursor class: the two structs are the same
            F("next_cursor", type="DescribeTopicPartitionsCursor | None"),
            F("throttle_time_ms", default=0),
        )),
    )),
    *GROUP_APIS,
    *SECURITY_APIS,
    Api("ApiVersions", 18, 3, Kio(3), classes=(
        Struct("ApiVersionsRequest", REQUEST, "", doc="ApiVersions v3 (KIP-511: the client names its software).",
               fields=(F("client_software_name", default=""), F("client_software_version", default=""))),
        Struct("ApiVersion", RESPONSE, "api_keys", fields=(F("api_key"), F("min_version"), F("max_version"))),
        Struct("ApiVersionsResponse", RESPONSE, "", fields=(
            F("error_code"), F("api_keys"), F("throttle_time_ms", default=0))),
    )),
    Api("DeleteTopics", 20, 6, Kio(6), classes=(
        Struct("DeleteTopicsRequest", REQUEST, "", doc=(
            "DeleteTopics v6: the topics to delete by name (``topic_names``) and by topic id (``topic_ids``:\n"
            "v6's DeleteTopicState entries with a null Name, KIP-516; the zero id stands for an entry naming\n"
            "neither). Versions before 6 carry names only."), fields=(
            F("topic_names", "topics.name", type="tuple[str, ...]"),
            F("timeout_ms", default=30000),
            F("topic_ids", "topics.topic_id", type="tuple[uuid.UUID, ...]", default=()),
        )),
        Struct("DeletableTopicResult", RESPONSE, "responses", doc=(
            "One topic's answer. ``name`` None for a topic named by an id the controller does not know (v6's\n"
            "nullable Name); ``topic_id`` None travels as Kafka's ZERO_UUID."), fields=(
            F("name"),
            F("error_code"),
            F("topic_id", nullable=True, default=None),
            F("error_message"),
        )),
        Struct("DeleteTopicsResponse", RESPONSE, "", fields=(
            F("responses"), F("throttle_time_ms", default=0))),
    )),
    Api("DescribeConfigs", 32, 4, Kio(4), classes=(
        Struct("DescribeConfigsResource", REQUEST, "resources", doc=(
            "``resource_type`` 2 = topic, 4 = broker (Kafka's ConfigResource.Type); ``configuration_keys``\n"
            "None = every config."), fields=(
            F("resource_type"), F("resource_name"), F("configuration_keys", default=None))),
        Struct("DescribeConfigsRequest", REQUEST, "", fields=(
            F("resources"), F("include_synonyms"), F("include_documentation"))),
        Struct("DescribeConfigsResourceResult", RESPONSE, "results.configs", doc=(
            "``config_source``: Kafka's ``DescribeConfigsResponse.ConfigSource`` id: 1 TOPIC_CONFIG (set on "
            "the\ntopic), 3 DYNAMIC_DEFAULT_BROKER_CONFIG (set cluster-wide), 4 STATIC_BROKER_CONFIG, 5 "
            "DEFAULT_CONFIG."), fields=(
            F("name"),
            F("value"),
            F("read_only", default=False),
            F("config_source", default=5),
            F("is_sensitive", default=False),
        )),
        Struct("DescribeConfigsResult", RESPONSE, "results", fields=(
            F("error_code"),
            F("resource_type"),
            F("resource_name"),
            F("configs", default=()),
            F("error_message", default=None),
        )),
        Struct("DescribeConfigsResponse", RESPONSE, "", fields=(
            F("results"), F("throttle_time_ms", default=0))),
    )),
    *RAFT_APIS,
)

#: kraftlog's own classes after the APIs (not Kafka messages): the message in transit.
