"""kraftlog.protocol.wire: every core message crosses Kafka's wire format and comes back equal.

Rules proved here (at each class's default version; tests/test_wire_versions.py covers every version
of each API's range, tests/test_wire_lossless.py the simulator's whole traffic): each message maps to
the Kafka API version its class names (Fetch v15,
AlterPartition v3, BrokerRegistration v4, BrokerHeartbeat v1, Produce v9, ListOffsets v7,
OffsetForLeaderEpoch v4, Metadata v12, CreateTopics v7, IncrementalAlterConfigs v1, ElectLeaders v2,
DescribeTopicPartitions v0, FindCoordinator v4, OffsetCommit v8, OffsetFetch v8 -- one group of v8's
``Groups``; JoinGroup v9, SyncGroup v5, Heartbeat v4, LeaveGroup v5, ApiVersions v3, DeleteTopics v6,
DescribeConfigs v4 -- tests/test_wire_client_apis.py covers what real clients send of those; KRaft's
Vote v2, BeginQuorumEpoch v1, EndQuorumEpoch v1, DescribeQuorum v2, AddRaftVoter, RemoveRaftVoter and
UpdateRaftVoter v0, each naming __cluster_metadata partition 0 only);
record batches are Kafka v2 (magic 2, CRC-32C) with exact ms timestamps and record headers; the
metadata log travels as a
Fetch of METADATA_TOPIC_ID; where kafka-python has the API at that version, it decodes our bytes and
re-encodes them byte for byte.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import struct
import uuid

import pytest
from kafka.protocol.admin import (
    DeleteRecordsRequest as KpDeleteRecordsRequest,
)
from kafka.protocol.admin import (
    DeleteRecordsResponse as KpDeleteRecordsResponse,
)
from kafka.protocol.admin.cluster import DescribeQuorumRequest as KpDescribeQuorumRequest
from kafka.protocol.admin.cluster import DescribeQuorumResponse as KpDescribeQuorumResponse
from kafka.protocol.admin.configs import (
    DescribeConfigsRequest as KpDescribeConfigsRequest,
)
from kafka.protocol.admin.configs import (
    DescribeConfigsResponse as KpDescribeConfigsResponse,
)
from kafka.protocol.admin.configs import (
    IncrementalAlterConfigsRequest as KpIncrementalAlterConfigsRequest,
)
from kafka.protocol.admin.configs import (
    IncrementalAlterConfigsResponse as KpIncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.topics import (
    CreateTopicsRequest as KpCreateTopicsRequest,
)
from kafka.protocol.admin.topics import (
    CreateTopicsResponse as KpCreateTopicsResponse,
)
from kafka.protocol.admin.topics import (
    DeleteTopicsRequest as KpDeleteTopicsRequest,
)
from kafka.protocol.admin.topics import (
    DeleteTopicsResponse as KpDeleteTopicsResponse,
)
from kafka.protocol.admin.topics import (
    DescribeTopicPartitionsRequest as KpDescribeTopicPartitionsRequest,
)
from kafka.protocol.admin.topics import (
    DescribeTopicPartitionsResponse as KpDescribeTopicPartitionsResponse,
)
from kafka.protocol.admin.topics import (
    ElectLeadersRequest as KpElectLeadersRequest,
)
from kafka.protocol.admin.topics import (
    ElectLeadersResponse as KpElectLeadersResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest as KpFetchRequest
from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest as KpHeartbeatRequest,
)
from kafka.protocol.consumer.group import (
    HeartbeatResponse as KpHeartbeatResponse,
)
from kafka.protocol.consumer.group import (
    JoinGroupRequest as KpJoinGroupRequest,
)
from kafka.protocol.consumer.group import (
    JoinGroupResponse as KpJoinGroupResponse,
)
from kafka.protocol.consumer.group import (
    LeaveGroupRequest as KpLeaveGroupRequest,
)
from kafka.protocol.consumer.group import (
    LeaveGroupResponse as KpLeaveGroupResponse,
)
from kafka.protocol.consumer.group import (
    OffsetCommitRequest as KpOffsetCommitRequest,
)
from kafka.protocol.consumer.group import (
    OffsetCommitResponse as KpOffsetCommitResponse,
)
from kafka.protocol.consumer.group import (
    OffsetFetchRequest as KpOffsetFetchRequest,
)
from kafka.protocol.consumer.group import (
    OffsetFetchResponse as KpOffsetFetchResponse,
)
from kafka.protocol.consumer.group import (
    SyncGroupRequest as KpSyncGroupRequest,
)
from kafka.protocol.consumer.group import (
    SyncGroupResponse as KpSyncGroupResponse,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest as KpListOffsetsRequest,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsResponse as KpListOffsetsResponse,
)
from kafka.protocol.consumer.offsets import (
    OffsetForLeaderEpochRequest as KpOffsetForLeaderEpochRequest,
)
from kafka.protocol.consumer.offsets import (
    OffsetForLeaderEpochResponse as KpOffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest as KpApiVersionsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsResponse as KpApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest as KpFindCoordinatorRequest,
)
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorResponse as KpFindCoordinatorResponse,
)
from kafka.protocol.metadata.metadata import MetadataRequest as KpMetadataRequest
from kafka.protocol.metadata.metadata import MetadataResponse as KpMetadataResponse
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest
from kafka.protocol.producer.produce import ProduceResponse as KpProduceResponse
from kafka.record.default_records import DefaultRecordBatch
from kio.records.readers import read_batch as kio_read_batch
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v15 import request as kio_fetch_request
from kio.schema.fetch.v15 import response as kio_fetch_response
from kio.schema.offset_fetch.v8 import request as kio_offset_fetch_request
from kio.schema.offset_fetch.v8 import response as kio_offset_fetch_response
from kio.schema.types import GroupId
from kio.serial import entity_writer

from kraftlog.metadata import codec
from kraftlog.metadata import records as mdr
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.raft_records import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    RaftBatch,
    RaftEndpoint,
    Voter,
    VotersRecord,
)
from kraftlog.protocol.records import ATTR_CONTROL, Record, RecordBatch

T1 = uuid.UUID("6f1c1a2e-0000-4000-8000-000000000001")
T2 = uuid.UUID("6f1c1a2e-0000-4000-8000-000000000002")
INCARNATION = uuid.UUID("0b5e7c1d-1111-4222-8333-444455556666")
DIR1 = uuid.UUID("d1d1d1d1-0000-4000-8000-000000000001")  # KIP-853 directory ids of KRaft voters
DIR2 = uuid.UUID("d1d1d1d1-0000-4000-8000-000000000002")

BATCH_A = RecordBatch(
    base_offset=10,
    partition_leader_epoch=4,
    records=(
        Record(1_700_000_000_123, b"key-0", b"value-0"),
        Record(1_700_000_000_001, None, b"value-1"),  # earlier than the first: negative delta
        Record(1_700_000_000_999, b"key-2", None),
    ),
    producer_id=1234,
    producer_epoch=2,
    base_sequence=17,
)
BATCH_B = RecordBatch(base_offset=13, partition_leader_epoch=5, records=(Record(-1, None, None),))
UNSTAMPED = RecordBatch(base_offset=-1, partition_leader_epoch=-1, records=(Record(1, b"k", b"v"),))

ALL_METADATA_RECORDS = (
    mdr.RegisterBrokerRecord(1, INCARNATION, 7, rack="rack-a", previous_broker_epoch=3),
    mdr.RegisterBrokerRecord(2, INCARNATION, 8),
    mdr.BrokerRegistrationChangeRecord(1, 7, fenced=False),
    mdr.BrokerRegistrationChangeRecord(2, 8, in_controlled_shutdown=True),
    mdr.TopicRecord("orders", T1),
    mdr.PartitionRecord(0, T1, (1, 2, 3), (1, 2), 1, leader_epoch=3, partition_epoch=5,
                        eligible_leader_replicas=(3,), last_known_elr=(4,)),
    mdr.PartitionChangeRecord(0, T1, isr=(1,), eligible_leader_replicas=(2,)),
    mdr.PartitionChangeRecord(1, T1, leader=mdr.NO_LEADER, leader_recovery_state=mdr.RECOVERING,
                              last_known_elr=()),
    mdr.ConfigRecord(2, "orders", "min.insync.replicas", "2"),
    mdr.ConfigRecord(4, "", "unclean.recovery.strategy", None),
    mdr.ClearElrRecord("orders"),
    mdr.ClearElrRecord(),
    mdr.RemoveTopicRecord(T1),
    mdr.UserScramCredentialRecord("alice", 2, b"salt", b"s" * 64, b"k" * 64, 8192),
    mdr.RemoveUserScramCredentialRecord("bob", 1),
)

#: A KRaft log's batches (raft_records): a control batch of every control record type, then data batches.
RAFT_BATCHES = (
    RaftBatch(40, 3, (
        LeaderChangeMessage(1, (1, 2, 3), (1, 3)),
        VotersRecord((Voter(1, DIR1, (RaftEndpoint("CONTROLLER", "c1", 9093),), 0, 1),
                      Voter(2, None, ()),
                      Voter(3, DIR2, (RaftEndpoint("CONTROLLER", "c3", 9093), RaftEndpoint("ALT", "c3b", 19093))))),
        KRaftVersionRecord(1),
    ), control=True, append_time_ms=1_700_000_000_100),
    RaftBatch(43, 3, ALL_METADATA_RECORDS[:4], append_time_ms=1_700_000_000_200),
    RaftBatch(47, 4, (LeaderChangeMessage(2, (1, 2, 3), (2,)),), control=True, append_time_ms=1_700_000_000_300),
    RaftBatch(48, 4, ALL_METADATA_RECORDS[4:], append_time_ms=1_700_000_000_400),
)

#: One non-trivial instance of every core message type (requests and responses).
SAMPLES: dict[type, object] = {
    m.FetchRequest: m.FetchRequest(
        replica_id=2,
        replica_epoch=41,
        max_wait_ms=500,
        min_bytes=1,
        partitions=(
            m.FetchPartition(T1, 0, current_leader_epoch=4, fetch_offset=10, last_fetched_epoch=3,
                             log_start_offset=0, partition_max_bytes=65536),
            m.FetchPartition(T1, 2, current_leader_epoch=-1, fetch_offset=0),
            m.FetchPartition(T2, 1, current_leader_epoch=7, fetch_offset=99, last_fetched_epoch=7),
        ),
        max_bytes=1_000_000,
        isolation_level=1,
    ),
    m.FetchResponse: m.FetchResponse(
        error_code=Errors.NONE,
        partitions=(
            m.FetchPartitionResponse(T1, 0, Errors.NONE, high_watermark=14, last_stable_offset=14,
                                     log_start_offset=0, records=(BATCH_A, BATCH_B)),
            m.FetchPartitionResponse(T1, 2, Errors.NONE, high_watermark=9, last_stable_offset=9,
                                     log_start_offset=0, diverging_epoch=m.EpochEndOffset(3, 8)),
            m.FetchPartitionResponse(T2, 1, Errors.FENCED_LEADER_EPOCH, current_leader=(3, 8)),
        ),
        throttle_time_ms=25,
        session_id=0,
    ),
    m.MetadataFetchRequest: m.MetadataFetchRequest(
        replica_id=3, replica_epoch=12, fetch_offset=40, max_wait_ms=250
    ),
    m.MetadataFetchResponse: m.MetadataFetchResponse(
        error_code=Errors.NONE, high_watermark=52, base_offset=40, records=ALL_METADATA_RECORDS
    ),
    m.AlterPartitionRequest: m.AlterPartitionRequest(
        broker_id=1,
        broker_epoch=7,
        partitions=(
            m.AlterPartitionItem(T1, 0, leader_epoch=4,
                                 new_isr_with_epochs=(m.BrokerState(1, 7), m.BrokerState(2, -1)),
                                 partition_epoch=9),
            m.AlterPartitionItem(T1, 1, 2, (m.BrokerState(1, 7),), 3, leader_recovery_state=1),
            m.AlterPartitionItem(T2, 0, 0, (m.BrokerState(1, 7), m.BrokerState(3, 12)), 0),
        ),
    ),
    m.AlterPartitionResponse: m.AlterPartitionResponse(
        error_code=Errors.NONE,
        partitions=(
            m.AlterPartitionResponseItem(T1, 0, Errors.NONE, leader_id=1, leader_epoch=4,
                                         isr=(1, 2), partition_epoch=10),
            m.AlterPartitionResponseItem(T1, 1, Errors.INELIGIBLE_REPLICA),
            m.AlterPartitionResponseItem(T2, 0, Errors.NONE, 1, 0, (1, 3), 1, 1),
        ),
        throttle_time_ms=3,
    ),
    m.BrokerRegistrationRequest: m.BrokerRegistrationRequest(
        broker_id=3, cluster_id="kraftlog-test", incarnation_id=INCARNATION, rack="rack-b",
        previous_broker_epoch=12,
    ),
    m.BrokerRegistrationResponse: m.BrokerRegistrationResponse(
        error_code=Errors.NONE, broker_epoch=57, throttle_time_ms=0
    ),
    m.BrokerHeartbeatRequest: m.BrokerHeartbeatRequest(
        broker_id=3, broker_epoch=57, current_metadata_offset=123, want_fence=False,
        want_shut_down=True,
    ),
    m.BrokerHeartbeatResponse: m.BrokerHeartbeatResponse(
        error_code=Errors.STALE_BROKER_EPOCH, is_caught_up=True, is_fenced=False,
        should_shut_down=True, throttle_time_ms=1,
    ),
    m.ProduceRequest: m.ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        partitions=(
            m.ProducePartition("orders", 0, (UNSTAMPED,)),
            m.ProducePartition("orders", 1, (BATCH_A,)),
            m.ProducePartition("payments", 0, (BATCH_B, UNSTAMPED)),
        ),
        transactional_id=None,
    ),
    m.ProduceResponse: m.ProduceResponse(
        partitions=(
            m.ProducePartitionResponse("orders", 0, Errors.NONE, base_offset=100,
                                       log_append_time_ms=1_700_000_000_456, log_start_offset=0),
            m.ProducePartitionResponse("orders", 1, Errors.NOT_ENOUGH_REPLICAS),
            m.ProducePartitionResponse("payments", 0, Errors.NONE, 5, -1, 2),
            # KIP-467 (v8+): a compacted topic's refusal of records without a key (LogValidator.validateKey)
            m.ProducePartitionResponse(
                "payments", 1, Errors.INVALID_RECORD, error_message="One or more records have been rejected",
                record_errors=((0, "Compacted topic cannot accept message without key in topic partition payments-1."),
                               (2, None))),
        ),
        throttle_time_ms=12,
    ),
    m.ListOffsetsRequest: m.ListOffsetsRequest(
        replica_id=-1,
        partitions=(
            m.ListOffsetsPartition("orders", 0, m.EARLIEST_TIMESTAMP, current_leader_epoch=4),
            m.ListOffsetsPartition("orders", 1, m.LATEST_TIMESTAMP),
            m.ListOffsetsPartition("payments", 0, 1_700_000_000_000, 2),
        ),
        isolation_level=1,
    ),
    m.ListOffsetsResponse: m.ListOffsetsResponse(
        partitions=(
            m.ListOffsetsPartitionResponse("orders", 0, Errors.NONE, -1, 0, 4),
            m.ListOffsetsPartitionResponse("orders", 1, Errors.FENCED_LEADER_EPOCH),
            m.ListOffsetsPartitionResponse("payments", 0, Errors.NONE, 1_700_000_000_003, 17, 2),
        ),
        throttle_time_ms=0,
    ),
    m.DeleteRecordsRequest: m.DeleteRecordsRequest(
        partitions=(
            m.DeleteRecordsPartition("orders", 0, 100),
            m.DeleteRecordsPartition("orders", 1, -1),
            m.DeleteRecordsPartition("payments", 0, 7),
        ),
        timeout_ms=30_000,
    ),
    m.DeleteRecordsResponse: m.DeleteRecordsResponse(
        partitions=(
            m.DeleteRecordsPartitionResponse("orders", 0, 100),
            m.DeleteRecordsPartitionResponse("orders", 1, -1, Errors.OFFSET_OUT_OF_RANGE),
            m.DeleteRecordsPartitionResponse("payments", 0, 7),
        ),
        throttle_time_ms=3,
    ),
    m.OffsetForLeaderEpochRequest: m.OffsetForLeaderEpochRequest(
        replica_id=2,
        partitions=(
            m.OffsetForLeaderEpochPartition("orders", 0, current_leader_epoch=4, leader_epoch=1),
            m.OffsetForLeaderEpochPartition("orders", 1, -1, 3),
            m.OffsetForLeaderEpochPartition("payments", 2, 7, 7),
        ),
    ),
    m.OffsetForLeaderEpochResponse: m.OffsetForLeaderEpochResponse(
        partitions=(
            m.OffsetForLeaderEpochPartitionResponse("orders", 0, Errors.NONE, 0, 13),
            m.OffsetForLeaderEpochPartitionResponse("orders", 1, Errors.UNKNOWN_LEADER_EPOCH),
            m.OffsetForLeaderEpochPartitionResponse("payments", 2, Errors.NONE, 7, 99),
        ),
        throttle_time_ms=4,
    ),
    m.MetadataRequest: m.MetadataRequest(topics=("orders", "payments")),
    m.MetadataResponse: m.MetadataResponse(
        brokers=(m.MetadataBroker(1, "localhost", 9092, "rack-a"), m.MetadataBroker(2, "h2", 9093)),
        controller_id=1,
        topics=(
            m.MetadataTopic(Errors.NONE, "orders", T1, (
                m.MetadataPartition(Errors.NONE, 0, 1, 4, (1, 2, 3), (1, 2), (3,)),
                m.MetadataPartition(Errors.LEADER_NOT_AVAILABLE, 1, -1, 5, (2, 3), ()),
            )),
            m.MetadataTopic(Errors.UNKNOWN_TOPIC_OR_PARTITION, "missing", uuid.UUID(int=0), ()),
        ),
        cluster_id="kraftlog-test",
        throttle_time_ms=0,
    ),
    m.CreateTopicsRequest: m.CreateTopicsRequest(
        topics=(
            m.CreatableTopic("orders", num_partitions=3, replication_factor=3,
                             configs=(("min.insync.replicas", "2"),
                                      ("unclean.recovery.strategy", "Balanced"))),
            m.CreatableTopic("payments", assignment=((1, 2, 3), (2, 3, 1))),
        ),
        timeout_ms=15000,
    ),
    m.CreateTopicsResponse: m.CreateTopicsResponse(
        topics=(
            m.CreateTopicResult("orders", Errors.NONE, topic_id=T1),
            m.CreateTopicResult("payments", Errors.TOPIC_ALREADY_EXISTS, None, "exists"),
        ),
        throttle_time_ms=0,
    ),
    m.IncrementalAlterConfigsRequest: m.IncrementalAlterConfigsRequest(
        resources=(
            m.AlterConfigsResource(m.RESOURCE_TOPIC, "orders", (
                m.AlterableConfig("min.insync.replicas", m.OP_SET, "3"),
                m.AlterableConfig("unclean.leader.election.enable", m.OP_DELETE, None),
            )),
            m.AlterConfigsResource(m.RESOURCE_BROKER, "", (
                m.AlterableConfig("unclean.recovery.strategy", m.OP_SET, "Aggressive"),
            )),
        ),
        validate_only=True,
    ),
    m.IncrementalAlterConfigsResponse: m.IncrementalAlterConfigsResponse(
        responses=(
            m.AlterConfigsResourceResponse(Errors.NONE, m.RESOURCE_TOPIC, "orders"),
            m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, m.RESOURCE_BROKER, "", "bad value"),
        ),
        throttle_time_ms=2,
    ),
    m.ListGroupsRequest: m.ListGroupsRequest(("Stable", "Empty"), ("classic",)),
    m.ListGroupsResponse: m.ListGroupsResponse(Errors.NONE, (
        m.ListedGroup("orders-app", "consumer", "Stable", "classic"),
        m.ListedGroup("audit", "", "Empty", "classic"),
    ), throttle_time_ms=3),
    m.DescribeGroupsRequest: m.DescribeGroupsRequest(("orders-app", "audit"), include_authorized_operations=True),
    m.DescribeGroupsResponse: m.DescribeGroupsResponse((
        m.DescribedGroup(Errors.NONE, "orders-app", "Stable", "consumer", "range", (
            m.DescribedGroupMember("rdkafka-1", "rdkafka", "/127.0.0.1", b"\x00\x01sub", b"\x00\x01asg", "static-1"),
            m.DescribedGroupMember("rdkafka-2", "rdkafka", "/127.0.0.1", b"", b""),
        ), 123),
        m.DescribedGroup(Errors.NOT_COORDINATOR, "audit"),
    ), throttle_time_ms=4),
    m.DeleteGroupsRequest: m.DeleteGroupsRequest(("orders-app", "audit")),
    m.DeleteGroupsResponse: m.DeleteGroupsResponse((
        m.DeletableGroupResult("orders-app", Errors.NON_EMPTY_GROUP),
        m.DeletableGroupResult("audit", Errors.NONE),
    ), throttle_time_ms=1),
    m.OffsetDeleteRequest: m.OffsetDeleteRequest("orders-app", (
        m.OffsetDeleteRequestPartition("orders", 0), m.OffsetDeleteRequestPartition("orders", 1),
        m.OffsetDeleteRequestPartition("payments", 0),
    )),
    m.OffsetDeleteResponse: m.OffsetDeleteResponse(Errors.NONE, (
        m.OffsetDeleteResponsePartition("orders", 0, Errors.GROUP_SUBSCRIBED_TO_TOPIC),
        m.OffsetDeleteResponsePartition("payments", 0, Errors.NONE),
    ), throttle_time_ms=2),
    m.CreatePartitionsRequest: m.CreatePartitionsRequest(
        topics=(
            m.CreatePartitionsTopic("orders", 3),
            m.CreatePartitionsTopic("payments", 4, (m.CreatePartitionsAssignment((1, 2)),
                                                    m.CreatePartitionsAssignment((2, 3)))),
        ),
        timeout_ms=15000,
        validate_only=True,
    ),
    m.CreatePartitionsResponse: m.CreatePartitionsResponse(
        results=(
            m.CreatePartitionsTopicResult("orders", Errors.NONE),
            m.CreatePartitionsTopicResult("payments", Errors.INVALID_PARTITIONS, "not an increase"),
        ),
        throttle_time_ms=2,
    ),
    m.AlterConfigsRequest: m.AlterConfigsRequest(
        resources=(
            m.LegacyAlterConfigsResource(m.RESOURCE_TOPIC, "orders", (
                m.LegacyAlterableConfig("min.insync.replicas", "2"),
                m.LegacyAlterableConfig("flush.messages", None),
            )),
            m.LegacyAlterConfigsResource(m.RESOURCE_BROKER, "", ()),
        ),
        validate_only=True,
    ),
    m.AlterConfigsResponse: m.AlterConfigsResponse(
        responses=(
            m.LegacyAlterConfigsResourceResponse(Errors.NONE, m.RESOURCE_TOPIC, "orders"),
            m.LegacyAlterConfigsResourceResponse(Errors.INVALID_CONFIG, m.RESOURCE_BROKER, "", "bad value"),
        ),
        throttle_time_ms=2,
    ),
    m.ElectLeadersRequest: m.ElectLeadersRequest(
        election_type=m.ELECTION_UNCLEAN,
        partitions=(
            m.ElectLeadersPartition("orders", 0),
            m.ElectLeadersPartition("orders", 2),
            m.ElectLeadersPartition("payments", 1),
        ),
        timeout_ms=20000,
    ),
    m.ElectLeadersResponse: m.ElectLeadersResponse(
        error_code=Errors.NONE,
        results=(
            m.ElectLeadersResult("orders", 0, Errors.NONE),
            m.ElectLeadersResult("orders", 2, Errors.ELECTION_NOT_NEEDED, "not needed"),
            m.ElectLeadersResult("payments", 1, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE),
        ),
        throttle_time_ms=0,
    ),
    m.DescribeTopicPartitionsRequest: m.DescribeTopicPartitionsRequest(
        topics=("orders", "payments"),
        response_partition_limit=3,
        cursor=m.DescribeTopicPartitionsCursor("orders", 2),
    ),
    m.DescribeTopicPartitionsResponse: m.DescribeTopicPartitionsResponse(
        topics=(
            m.DescribeTopicPartitionsResponseTopic(Errors.NONE, "orders", T1, False, (
                m.DescribeTopicPartitionsResponsePartition(
                    Errors.NONE, 2, leader_id=1, leader_epoch=4, replica_nodes=(1, 2, 3),
                    isr_nodes=(1,), eligible_leader_replicas=(2,), last_known_elr=(3,),
                    offline_replicas=(3,)),
                m.DescribeTopicPartitionsResponsePartition(Errors.NONE, 3, -1, 5, (2, 3), ()),
            )),
            m.DescribeTopicPartitionsResponseTopic(Errors.UNKNOWN_TOPIC_OR_PARTITION, "missing",
                                                   uuid.UUID(int=0)),
            m.DescribeTopicPartitionsResponseTopic(Errors.NONE, "payments", T2, False, (
                m.DescribeTopicPartitionsResponsePartition(Errors.NONE, 0, 2, 0, (2,), (2,)),
            )),
        ),
        next_cursor=m.DescribeTopicPartitionsCursor("payments", 1),
        throttle_time_ms=5,
    ),
    m.InitProducerIdRequest: m.InitProducerIdRequest(transaction_timeout_ms=45000),
    m.InitProducerIdResponse: m.InitProducerIdResponse(Errors.NONE, producer_id=(17 << 20) | 3,
                                                       producer_epoch=0, throttle_time_ms=2),
    m.FindCoordinatorRequest: m.FindCoordinatorRequest(
        coordinator_keys=("orders-app", "payments-app"), key_type=m.COORDINATOR_GROUP
    ),
    m.FindCoordinatorResponse: m.FindCoordinatorResponse(
        coordinators=(
            m.Coordinator("orders-app", node_id=2, host="broker-2.local", port=9093),
            m.Coordinator("payments-app", -1, "", -1, Errors.COORDINATOR_NOT_AVAILABLE,
                          "The coordinator is not available."),
        ),
        throttle_time_ms=7,
    ),
    m.OffsetCommitRequest: m.OffsetCommitRequest(
        group_id="orders-app",
        partitions=(
            m.OffsetCommitPartition("orders", 0, committed_offset=42, committed_leader_epoch=4,
                                    committed_metadata="consumer-a"),
            m.OffsetCommitPartition("orders", 2, 7),  # epoch unknown (-1), null metadata
            m.OffsetCommitPartition("payments", 1, 1_000, 7, ""),
        ),
    ),
    m.OffsetCommitResponse: m.OffsetCommitResponse(
        partitions=(
            m.OffsetCommitPartitionResponse("orders", 0, Errors.NONE),
            m.OffsetCommitPartitionResponse("orders", 2, Errors.OFFSET_METADATA_TOO_LARGE),
            m.OffsetCommitPartitionResponse("payments", 1, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ),
        throttle_time_ms=3,
    ),
    m.OffsetFetchRequest: m.OffsetFetchRequest(
        group_id="orders-app",
        partitions=(("orders", 0), ("orders", 2), ("payments", 1)),
        require_stable=True,
    ),
    m.OffsetFetchResponse: m.OffsetFetchResponse(
        group_id="orders-app",
        error_code=Errors.NONE,
        partitions=(
            m.OffsetFetchPartition("orders", 0, 42, committed_leader_epoch=4, metadata="consumer-a"),
            m.OffsetFetchPartition("orders", 2, -1),  # nothing committed: -1, -1, null metadata
            m.OffsetFetchPartition("payments", 1, 1_000, 7, "", Errors.UNSTABLE_OFFSET_COMMIT),
        ),
        throttle_time_ms=6,
    ),
    m.JoinGroupRequest: m.JoinGroupRequest(
        group_id="orders-app",
        session_timeout_ms=45000,
        member_id="rdkafka-0b5e7c1d",
        protocol_type="consumer",
        protocols=(m.JoinGroupRequestProtocol("range", b"\x00\x01sub-range"),
                   m.JoinGroupRequestProtocol("roundrobin", b"\x00\x01sub-rr")),
        rebalance_timeout_ms=300000,
        group_instance_id="instance-a",
        reason="rebalance after metadata change",
    ),
    m.JoinGroupResponse: m.JoinGroupResponse(
        error_code=Errors.NONE,
        member_id="rdkafka-0b5e7c1d",
        generation_id=3,
        protocol_type="consumer",
        protocol_name="range",
        leader="rdkafka-0b5e7c1d",
        members=(m.JoinGroupResponseMember("rdkafka-0b5e7c1d", b"\x00\x01sub-a", "instance-a"),
                 m.JoinGroupResponseMember("kafka-python-9f1e", b"\x00\x01sub-b")),
        skip_assignment=False,
        throttle_time_ms=4,
    ),
    m.SyncGroupRequest: m.SyncGroupRequest(
        group_id="orders-app",
        generation_id=3,
        member_id="rdkafka-0b5e7c1d",
        assignments=(m.SyncGroupRequestAssignment("rdkafka-0b5e7c1d", b"\x00\x01assign-a"),
                     m.SyncGroupRequestAssignment("kafka-python-9f1e", b"")),
        group_instance_id="instance-a",
        protocol_type="consumer",
        protocol_name="range",
    ),
    m.SyncGroupResponse: m.SyncGroupResponse(
        error_code=Errors.NONE, assignment=b"\x00\x01assign-a", protocol_type="consumer",
        protocol_name="range", throttle_time_ms=2,
    ),
    m.HeartbeatRequest: m.HeartbeatRequest("orders-app", 3, "rdkafka-0b5e7c1d", "instance-a"),
    m.HeartbeatResponse: m.HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS, throttle_time_ms=1),
    m.LeaveGroupRequest: m.LeaveGroupRequest(
        group_id="orders-app",
        members=(m.MemberIdentity("rdkafka-0b5e7c1d", "instance-a", "the consumer is closing"),
                 m.MemberIdentity("kafka-python-9f1e")),
    ),
    m.LeaveGroupResponse: m.LeaveGroupResponse(
        error_code=Errors.NONE,
        members=(m.LeaveGroupMemberResponse("rdkafka-0b5e7c1d", Errors.NONE, "instance-a"),
                 m.LeaveGroupMemberResponse("kafka-python-9f1e", Errors.UNKNOWN_MEMBER_ID)),
        throttle_time_ms=3,
    ),
    m.ApiVersionsRequest: m.ApiVersionsRequest("librdkafka", "2.16.0"),
    m.ApiVersionsResponse: m.ApiVersionsResponse(
        error_code=Errors.NONE,
        api_keys=(m.ApiVersion(0, 3, 9), m.ApiVersion(1, 4, 15), m.ApiVersion(18, 0, 3)),
        throttle_time_ms=0,
    ),
    m.DeleteTopicsRequest: m.DeleteTopicsRequest(("orders", "payments"), timeout_ms=15000),
    m.DeleteTopicsResponse: m.DeleteTopicsResponse(
        responses=(m.DeletableTopicResult("orders", Errors.NONE, T1),
                   m.DeletableTopicResult("payments", Errors.UNKNOWN_TOPIC_OR_PARTITION, None,
                                          "This server does not host this topic-partition.")),
        throttle_time_ms=5,
    ),
    m.DescribeUserScramCredentialsRequest: m.DescribeUserScramCredentialsRequest(("alice", "bob")),
    m.DescribeUserScramCredentialsResponse: m.DescribeUserScramCredentialsResponse(Errors.NONE, (
        m.DescribeUserScramCredentialsResult("alice", Errors.NONE, None, (
            m.CredentialInfo(m.SCRAM_SHA_256, 4096), m.CredentialInfo(m.SCRAM_SHA_512, 8192))),
        m.DescribeUserScramCredentialsResult("bob", Errors.RESOURCE_NOT_FOUND,
                                             "Attempt to describe a user credential that does not exist: bob"))),
    m.AlterUserScramCredentialsRequest: m.AlterUserScramCredentialsRequest(
        (m.ScramCredentialDeletion("bob", m.SCRAM_SHA_256),),
        (m.ScramCredentialUpsertion("alice", m.SCRAM_SHA_512, 8192, b"salt-16-bytes-xx", b"p" * 64),)),
    m.AlterUserScramCredentialsResponse: m.AlterUserScramCredentialsResponse((
        m.AlterUserScramCredentialsResult("bob", Errors.NONE),
        m.AlterUserScramCredentialsResult("alice", Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"))),
    m.DescribeConfigsRequest: m.DescribeConfigsRequest(
        resources=(m.DescribeConfigsResource(m.RESOURCE_TOPIC, "orders",
                                             ("min.insync.replicas", "cleanup.policy")),
                   m.DescribeConfigsResource(m.RESOURCE_BROKER, "1")),
        include_synonyms=True,
        include_documentation=True,
    ),
    m.DescribeConfigsResponse: m.DescribeConfigsResponse(
        results=(
            m.DescribeConfigsResult(Errors.NONE, m.RESOURCE_TOPIC, "orders", (
                m.DescribeConfigsResourceResult("min.insync.replicas", "2", config_source=1),
                m.DescribeConfigsResourceResult("cleanup.policy", "delete"),
            )),
            m.DescribeConfigsResult(Errors.NONE, m.RESOURCE_BROKER, "1", (
                m.DescribeConfigsResourceResult("unclean.recovery.strategy", "Balanced", True, 4),
                m.DescribeConfigsResourceResult("ssl.key.password", None, False, 4, True),
            )),
            m.DescribeConfigsResult(Errors.UNKNOWN_TOPIC_OR_PARTITION, m.RESOURCE_TOPIC, "missing",
                                    error_message="Topic missing does not exist"),
        ),
        throttle_time_ms=1,
    ),
    # KIP-966 part 2 (level urm): the controller's query of a replica's log.
    m.GetReplicaLogInfoRequest: m.GetReplicaLogInfoRequest((
        m.GetReplicaLogInfoPartition(T1, 0), m.GetReplicaLogInfoPartition(T2, 1))),
    m.GetReplicaLogInfoResponse: m.GetReplicaLogInfoResponse(
        broker_epoch=41,
        partitions=(m.PartitionLogInfo(T1, 0, last_written_leader_epoch=2, current_leader_epoch=3,
                                       log_end_offset=120),
                    m.PartitionLogInfo(T2, 1, -1, -1, -1, Errors.NOT_LEADER_OR_FOLLOWER)),
        throttle_time_ms=3),
    # KRaft's quorum (KIP-595, KIP-996, KIP-853): controller to controller.
    m.VoteRequest: m.VoteRequest(
        cluster_id="kraftlog-test", voter_id=2, voter_directory_id=DIR2, replica_id=1, replica_epoch=5,
        replica_directory_id=DIR1, last_offset_epoch=4, last_offset=120, pre_vote=True),
    m.VoteResponse: m.VoteResponse(
        error_code=Errors.NONE, partition_error_code=Errors.FENCED_LEADER_EPOCH, leader_id=3, leader_epoch=6,
        vote_granted=False),
    m.BeginQuorumEpochRequest: m.BeginQuorumEpochRequest(
        cluster_id="kraftlog-test", voter_id=2, voter_directory_id=DIR2, leader_id=1, leader_epoch=5),
    m.BeginQuorumEpochResponse: m.BeginQuorumEpochResponse(
        error_code=Errors.NONE, partition_error_code=Errors.NONE, leader_id=1, leader_epoch=5),
    m.EndQuorumEpochRequest: m.EndQuorumEpochRequest(
        cluster_id="kraftlog-test", leader_id=1, leader_epoch=5,
        preferred_candidates=(m.QuorumCandidate(3, DIR2), m.QuorumCandidate(2, None))),
    m.EndQuorumEpochResponse: m.EndQuorumEpochResponse(
        error_code=Errors.NONE, partition_error_code=Errors.UNKNOWN_LEADER_EPOCH, leader_id=-1, leader_epoch=7),
    m.DescribeQuorumRequest: m.DescribeQuorumRequest(),
    m.DescribeQuorumResponse: m.DescribeQuorumResponse(
        error_code=Errors.NONE, error_message=None, partition_error_code=Errors.NONE, partition_error_message=None,
        leader_id=1, leader_epoch=5, high_watermark=118,
        current_voters=(m.QuorumReplicaState(1, DIR1, 120, 1_700_000_000_500, 1_700_000_000_500),
                        m.QuorumReplicaState(2, None, 118, 1_700_000_000_450, 1_700_000_000_400),
                        m.QuorumReplicaState(3, DIR2, -1)),
        observers=(m.QuorumReplicaState(100, None, 90, 1_700_000_000_480, -1),)),
    m.FetchSnapshotRequest: m.FetchSnapshotRequest(
        current_leader_epoch=5, snapshot_end_offset=4200, snapshot_epoch=5, position=65536, cluster_id="kraftlog-test",
        replica_id=1, max_bytes=1 << 20, replica_directory_id=DIR1),
    m.FetchSnapshotResponse: m.FetchSnapshotResponse(
        error_code=Errors.NONE, partition_error_code=Errors.NONE, snapshot_end_offset=4200, snapshot_epoch=5,
        current_leader_id=3000, current_leader_epoch=5, size=70000, position=65536, unaligned_records=b"\x00" * 4464),
    m.AddRaftVoterRequest: m.AddRaftVoterRequest(
        cluster_id="kraftlog-test", timeout_ms=30_000, voter_id=4, voter_directory_id=DIR2,
        listeners=(RaftEndpoint("CONTROLLER", "c4", 9093), RaftEndpoint("ALT", "c4b", 19093))),
    m.AddRaftVoterResponse: m.AddRaftVoterResponse(
        error_code=Errors.NOT_LEADER_OR_FOLLOWER, error_message="not the leader", throttle_time_ms=2),
    m.RemoveRaftVoterRequest: m.RemoveRaftVoterRequest(cluster_id=None, voter_id=2, voter_directory_id=DIR1),
    m.RemoveRaftVoterResponse: m.RemoveRaftVoterResponse(error_code=Errors.NONE, error_message=None),
    m.UpdateRaftVoterRequest: m.UpdateRaftVoterRequest(
        cluster_id="kraftlog-test", current_leader_epoch=5, voter_id=3, voter_directory_id=DIR2,
        listeners=(RaftEndpoint("CONTROLLER", "c3", 9093),), kraft_version_min=0, kraft_version_max=1),
    m.UpdateRaftVoterResponse: m.UpdateRaftVoterResponse(
        error_code=Errors.NONE, current_leader_id=1, current_leader_epoch=5, throttle_time_ms=1),
}


def _sample(cls: type) -> object:
    if cls not in SAMPLES:
        pytest.fail(f"{cls.__name__} has no sample in tests/test_wire.py: add one (and its wire mapping)")
    return SAMPLES[cls]



# ------------------------------------------------------------------ generic round trips
@pytest.mark.parametrize("request_type", m.REQUEST_TYPES, ids=lambda t: t.__name__)
def test_every_request_type_roundtrips(request_type: type) -> None:
    """Wire switch: every request class in messages.REQUEST_TYPES crosses the wire unchanged."""
    msg = _sample(request_type)
    out = wire.roundtrip(msg, correlation_id=77)
    assert type(out) is request_type
    assert out == msg
    assert out is not msg


@pytest.mark.parametrize("request_type", m.REQUEST_TYPES, ids=lambda t: t.__name__)
def test_every_response_type_roundtrips(request_type: type) -> None:
    """Wire switch: the response to every request class crosses the wire unchanged."""
    response_type = wire.response_type_for(request_type)
    msg = _sample(response_type)
    out = wire.roundtrip(msg, correlation_id=78, as_response_to=request_type)
    assert type(out) is response_type
    assert out == msg
    assert wire.roundtrip(msg) == msg  # the paired request type is the default


@pytest.mark.parametrize("request_type", m.REQUEST_TYPES, ids=lambda t: t.__name__)
def test_kio_entity_is_the_named_version(request_type: type) -> None:
    """Each request maps to kio's entity for its API key and VERSION; its response to the same version."""
    req = wire.to_kio(_sample(request_type))
    assert req.__api_key__ == request_type.API_KEY
    assert req.__version__ == request_type.VERSION
    resp = wire.to_kio(_sample(wire.response_type_for(request_type)))
    assert resp.__api_key__ == request_type.API_KEY
    assert resp.__version__ == request_type.VERSION
    assert wire.from_kio(req) == _sample(request_type)


def test_request_frame_header_and_size_prefix() -> None:
    """Request header v2: API key, version, correlation id, client id; frame adds the 4-byte size."""
    data = wire.encode_request(SAMPLES[m.AlterPartitionRequest], 4242, client_id="broker-1")
    assert wire.peek_request_header(data) == (56, 3, 4242)
    assert data[8:10] == struct.pack(">h", len("broker-1")) and data[10:18] == b"broker-1"
    framed = wire.frame(data)
    assert struct.unpack(">i", framed[:4])[0] == len(data) and framed[4:] == data
    assert wire.decode_request(data) == (4242, SAMPLES[m.AlterPartitionRequest])


def test_response_correlation_id_survives() -> None:
    data = wire.encode_response(SAMPLES[m.BrokerHeartbeatResponse], 2**31 - 1)
    assert struct.unpack(">i", data[:4])[0] == 2**31 - 1
    assert wire.decode_response(data, m.BrokerHeartbeatRequest)[0] == 2**31 - 1


def test_decode_rejects_unknown_api_wrong_version_and_missing_bytes_and_ignores_trailing_ones() -> None:
    """Kafka's RequestContext.parseRequest ignores bytes after a request's body (librdkafka's AdminClient
    sends Metadata v12 with three of them); missing bytes, an unknown key or version are refused."""
    data = bytearray(wire.encode_request(SAMPLES[m.BrokerHeartbeatRequest], 1))
    assert wire.decode_request(bytes(data) + b"\x00\x01\x00") == wire.decode_request(bytes(data))
    rdkafka_admin_metadata = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    assert wire.decode_request_frame(rdkafka_admin_metadata)[:4] == (3, 12, 3, "rdkafka")
    wrong_version = bytes(data[:2]) + struct.pack(">h", 0) + bytes(data[4:])
    with pytest.raises(wire.UnsupportedVersionError):
        wire.decode_request(wrong_version)
    unknown_key = struct.pack(">h", 93) + bytes(data[2:])
    with pytest.raises(wire.UnsupportedVersionError):
        wire.decode_request(unknown_key)
    with pytest.raises(wire.WireError):
        wire.decode_request(bytes(data[:-3]))


def test_unmapped_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        wire.to_kio(m.Envelope(1, 2, 3, None))
    with pytest.raises(TypeError):
        wire.roundtrip(m.Envelope(1, 2, 3, None))


# ------------------------------------------------------------------------------- Fetch
def test_fetch_request_groups_partitions_by_topic_in_first_appearance_order() -> None:
    """FetchRequest v15: flat partitions -> one FetchTopic per topic id; ReplicaState (KIP-903)."""
    entity = wire.to_kio(SAMPLES[m.FetchRequest])
    assert isinstance(entity, kio_fetch_request.FetchRequest)
    assert [t.topic_id for t in entity.topics] == [T1, T2]
    assert [p.partition for p in entity.topics[0].partitions] == [0, 2]
    assert entity.replica_state == kio_fetch_request.ReplicaState(replica_id=2, replica_epoch=41)
    assert entity.forgotten_topics_data == () and entity.rack_id == ""
    assert entity.max_wait == datetime.timedelta(milliseconds=500)


def test_fetch_request_interleaved_topics_come_back_grouped() -> None:
    p = [m.FetchPartition(T1, 0, 1, 0), m.FetchPartition(T2, 0, 1, 0), m.FetchPartition(T1, 1, 1, 0)]
    out = wire.roundtrip(m.FetchRequest(1, 1, 0, 1, tuple(p)))
    assert out.partitions == (p[0], p[2], p[1])


def test_fetch_response_diverging_epoch_and_current_leader() -> None:
    """KIP-320: DivergingEpoch and CurrentLeader are tagged fields; None <-> kio's (-1, -1) default."""
    msg = SAMPLES[m.FetchResponse]
    entity = wire.to_kio(msg)
    parts = [p for t in entity.responses for p in t.partitions]
    assert parts[0].diverging_epoch == kio_fetch_response.EpochEndOffset()
    assert parts[1].diverging_epoch == kio_fetch_response.EpochEndOffset(epoch=3, end_offset=8)
    assert parts[2].current_leader == kio_fetch_response.LeaderIdAndEpoch(leader_id=3, leader_epoch=8)
    assert parts[2].error_code is ErrorCode.fenced_leader_epoch
    assert parts[1].records == b""
    out = wire.roundtrip(msg)
    assert out.partitions[1].diverging_epoch == m.EpochEndOffset(3, 8)
    assert out.partitions[0].diverging_epoch is None and out.partitions[0].current_leader is None
    assert out.partitions[2].current_leader == (3, 8)
    assert out.partitions[0].records == (BATCH_A, BATCH_B)
    assert out.throttle_time_ms == 25


def test_error_codes_convert_both_ways() -> None:
    """Kafka's error codes on both sides of the mapping: a core error code (KIP-903's INELIGIBLE_REPLICA,
    Kafka's 107) becomes that kio ErrorCode in the entity and comes back as the core's member."""
    assert Errors.INELIGIBLE_REPLICA == 107
    msg = SAMPLES[m.AlterPartitionResponse]
    entity = wire.to_kio(msg)
    codes = [p.error_code for t in entity.topics for p in t.partitions]
    assert codes == [ErrorCode.none, ErrorCode.ineligible_replica, ErrorCode.none]
    out = wire.roundtrip(msg)
    assert [p.error_code for p in out.partitions] == [Errors.NONE, Errors.INELIGIBLE_REPLICA, Errors.NONE]


# ------------------------------------------------------------------------ record batches
def test_record_batch_crc_validates_with_kafka_python_and_kio() -> None:
    """v2 batches: magic 2, CRC-32C; kafka-python and kio parse them and agree on every field."""
    data = wire.encode_batches((BATCH_A, BATCH_B))
    first_size = DefaultRecordBatch(data).size_in_bytes
    kp = DefaultRecordBatch(data[:first_size])  # kafka-python reads exactly one batch per buffer
    assert kp.magic == 2 and kp.validate_crc()
    assert (kp.base_offset, kp.leader_epoch, kp.producer_id, kp.producer_epoch, kp.base_sequence) == (
        10, 4, 1234, 2, 17)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in kp] == [
        (10 + i, r.timestamp, r.key, r.value) for i, r in enumerate(BATCH_A.records)
    ]
    assert kp.max_timestamp == 1_700_000_000_999
    kio_batch, size = kio_read_batch(data, 0)  # raises on a CRC mismatch
    assert size == first_size
    assert kio_batch.base_offset == 10 and kio_batch.partition_leader_epoch == 4
    assert [(r.offset, r.key, r.value) for r in kio_batch.records] == [
        (10, b"key-0", b"value-0"), (11, None, b"value-1"), (12, b"key-2", None)]
    second = DefaultRecordBatch(data[size:])
    assert second.validate_crc() and second.base_offset == 13


def test_record_batches_roundtrip_exact_ms_timestamps() -> None:
    batches = (BATCH_A, BATCH_B, UNSTAMPED)
    assert wire.decode_batches(wire.encode_batches(batches)) == batches
    assert wire.decode_batches(b"") == () and wire.decode_batches(None) == ()
    assert wire.encode_batches(()) == b""


def test_corrupt_batch_is_rejected() -> None:
    data = bytearray(wire.encode_batches((BATCH_A,)))
    data[-1] ^= 0xFF
    with pytest.raises(wire.CorruptRecordError):
        wire.decode_batches(bytes(data))


def test_trailing_partial_batch_is_ignored() -> None:
    """A fetch response cut at max_bytes may end in a partial batch; consumers skip it."""
    data = wire.encode_batches((BATCH_A, BATCH_B))
    assert wire.decode_batches(data[:-5]) == (BATCH_A,)


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_a_records_batch_asking_for_compression_is_compressed(codec: int) -> None:
    """The log cleaner rewrites a batch with its original codec (Kafka's MemoryRecords.filterTo): a records
    batch whose attributes name a codec encodes compressed, kafka-python's reader reads it, and it decodes
    back to the same records."""
    from kafka.record.default_records import DefaultRecordBatch

    compressed = RecordBatch(BATCH_B.base_offset, BATCH_B.partition_leader_epoch, BATCH_B.records,
                             attributes=codec)
    data = wire.encode_batches((compressed,))
    assert DefaultRecordBatch(bytearray(data)).compression_type == codec
    assert [r.value for r in DefaultRecordBatch(bytearray(data))] == [r.value for r in BATCH_B.records]
    (back,) = wire.decode_batches(data)
    assert back.records == BATCH_B.records and back.attributes == codec
    assert compressed.size_bytes == len(data)


def test_decodes_a_batch_built_by_kafka_python() -> None:
    """A batch as kafka-python's producer builds it (with a record header) decodes to the core form,
    the header kept."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_321, key=b"k", value=b"v", headers=[("h", b"x")])
    builder.append(1, timestamp=1_700_000_000_322, key=None, value=b"w", headers=[])
    (batch,) = wire.decode_batches(bytes(builder.build()))
    assert batch.base_offset == 0
    assert batch.records == (Record(1_700_000_000_321, b"k", b"v", (("h", b"x"),)),
                             Record(1_700_000_000_322, None, b"w"))


# ------------------------------------------------------------------- metadata log fetch
@pytest.mark.parametrize("record", ALL_METADATA_RECORDS, ids=lambda r: type(r).__name__)
def test_metadata_fetch_response_carries_each_metadata_record_type(record: object) -> None:
    msg = m.MetadataFetchResponse(Errors.NONE, high_watermark=8, base_offset=7, records=(record,))
    assert wire.roundtrip(msg) == msg
    assert codec.decode_metadata_record(codec.encode_metadata_record(record)) == record


def test_every_metadata_record_type_is_covered() -> None:
    assert {type(r) for r in ALL_METADATA_RECORDS} == set(mdr.METADATA_RECORD_TYPES)


def test_metadata_records_travel_as_one_v2_batch_of_compact_json() -> None:
    msg = SAMPLES[m.MetadataFetchResponse]
    entity = wire.to_kio(msg)
    (topic,) = entity.responses
    assert topic.topic_id == m.METADATA_TOPIC_ID
    (part,) = topic.partitions
    assert part.partition_index == 0 and part.high_watermark == 52
    kp = DefaultRecordBatch(part.records)
    assert kp.validate_crc() and kp.base_offset == 40
    assert len(part.records) == kp.size_in_bytes  # exactly one batch
    values = [r.value for r in kp]
    assert len(values) == len(ALL_METADATA_RECORDS)
    first = json.loads(values[0])
    assert first == {"type": "RegisterBrokerRecord", "broker_id": 1,
                     "incarnation_id": str(INCARNATION), "broker_epoch": 7, "rack": "rack-a",
                     "fenced": True, "in_controlled_shutdown": False, "previous_broker_epoch": 3,
                     "listeners": [], "log_dirs": None}
    assert b" " not in values[5]
    assert json.loads(values[6])["leader"] is None and json.loads(values[6])["isr"] == [1]


def test_empty_metadata_fetch_response_has_no_batch_and_keeps_base_offset() -> None:
    msg = m.MetadataFetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, high_watermark=30, base_offset=25)
    entity = wire.to_kio(msg)
    assert entity.responses[0].partitions[0].records == b""
    assert wire.roundtrip(msg) == msg


def test_metadata_fetch_request_is_a_fetch_of_the_metadata_topic() -> None:
    """KRaft: brokers fetch __cluster_metadata partition 0 with ReplicaState = (id, broker epoch)."""
    msg = SAMPLES[m.MetadataFetchRequest]
    data = wire.encode_request(msg, 5)
    assert wire.peek_request_header(data) == (1, 15, 5)
    entity = wire.to_kio(msg)
    (topic,) = entity.topics
    assert topic.topic_id == m.METADATA_TOPIC_ID
    assert [(p.partition, p.fetch_offset) for p in topic.partitions] == [(0, 40)]
    assert entity.replica_state == kio_fetch_request.ReplicaState(replica_id=3, replica_epoch=12)
    assert wire.decode_request(data) == (5, msg)
    # A data fetch stays a FetchRequest, even when it names the metadata topic among others.
    mixed = m.FetchRequest(1, 1, 0, 1, (m.FetchPartition(T1, 0, 0, 0),
                                        m.FetchPartition(m.METADATA_TOPIC_ID, 0, 0, 0)))
    assert wire.roundtrip(mixed) == mixed


def test_the_legacy_records_batch_has_no_leader_epoch() -> None:
    """The non-replicated controller's ``records`` travel in partition leader epoch -1 (Kafka's
    NO_PARTITION_LEADER_EPOCH: its log has no epochs), which tells them from KRaft ``batches`` (always in a
    leader epoch >= 0) when decoding."""
    part = wire.to_kio(SAMPLES[m.MetadataFetchResponse]).responses[0].partitions[0]
    assert DefaultRecordBatch(part.records).leader_epoch == -1


# ------------------------------------------------------------ the KRaft log in a metadata fetch
KRAFT_FETCH_RESPONSE = m.MetadataFetchResponse(
    error_code=Errors.NONE, high_watermark=52, base_offset=40, current_leader_id=1, current_leader_epoch=4,
    log_start_offset=0, batches=RAFT_BATCHES)
#: Kafka's ControlRecordType ids.
LEADER_CHANGE, KRAFT_VERSION, KRAFT_VOTERS = 2, 5, 6


def _kafka_batches(data: bytes) -> list[DefaultRecordBatch]:
    """kafka-python's reading of concatenated batches (it reads one batch per buffer)."""
    out, pos = [], 0
    while pos < len(data):
        size = DefaultRecordBatch(bytearray(data[pos:])).size_in_bytes
        out.append(DefaultRecordBatch(bytearray(data[pos:pos + size])))
        pos += size
    return out


def test_a_control_batch_and_data_batches_round_trip_through_metadata_fetch_response_bytes() -> None:
    """KRaft (KIP-595): each RaftBatch is one Kafka v2 batch -- base offset, the leader epoch as its partition
    leader epoch, the control attribute for a control batch, every record stamped with the append time; a
    control record's key is (version 0, type) and its value Kafka's version-prefixed record; a data record's
    value a metadata record. The response's bytes decode back to the same core message."""
    msg = KRAFT_FETCH_RESPONSE
    data = wire.encode_response(msg, 7)
    assert wire.decode_response(data, m.MetadataFetchRequest) == (7, msg)
    assert wire.roundtrip(msg) == msg
    part = wire.to_kio(msg).responses[0].partitions[0]
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch, part.log_start_offset) == (1, 4, 0)
    kafka = _kafka_batches(part.records)
    assert len(kafka) == len(RAFT_BATCHES)
    for kp, batch in zip(kafka, RAFT_BATCHES, strict=True):
        assert kp.validate_crc() and kp.magic == 2
        assert (kp.base_offset, kp.leader_epoch, kp.is_control_batch) == (batch.base_offset, batch.epoch,
                                                                           batch.control)
        assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (-1, -1, -1)
        records = list(kp)
        assert [r.offset for r in records] == list(range(batch.base_offset, batch.next_offset))
        assert {r.timestamp for r in records} == {batch.append_time_ms}
        if batch.control:
            types = [{LeaderChangeMessage: LEADER_CHANGE, KRaftVersionRecord: KRAFT_VERSION,
                      VotersRecord: KRAFT_VOTERS}[type(rec)] for rec in batch.records]
            assert [(r.version, r.type) for r in records] == [(0, t) for t in types]
            assert all(r.value[:2] == b"\x00\x00" for r in records)  # the record's schema version, 0
        else:
            assert [(r.key, r.value) for r in records] == [(None, codec.encode_metadata_record(rec))
                                                           for rec in batch.records]


def test_a_leader_change_record_is_kafkas_bytes() -> None:
    """LeaderChangeMessage v0 as Kafka's ControlRecordUtils writes it: the int16 schema version, then the
    flexible struct (Version int16, LeaderId int32, Voters and GrantingVoters compact arrays of {VoterId int32,
    tagged fields}, tagged fields)."""
    msg = dataclasses.replace(KRAFT_FETCH_RESPONSE, batches=(
        RaftBatch(7, 2, (LeaderChangeMessage(1, (1, 2), (1,)),), control=True),))
    (kp,) = _kafka_batches(wire.to_kio(msg).responses[0].partitions[0].records)
    (record,) = list(kp)
    assert (record.key, record.value) == (bytes.fromhex("00000002"), bytes.fromhex(
        "0000" "0000" "00000001" "03" "00000001" "00" "00000002" "00" "02" "00000001" "00" "00"))
    assert wire.roundtrip(msg) == msg


def test_batches_win_over_records_when_both_are_set() -> None:
    """``records`` and ``batches`` are alternatives: with both set the wire carries the batches."""
    both = dataclasses.replace(KRAFT_FETCH_RESPONSE, records=ALL_METADATA_RECORDS)
    assert wire.roundtrip(both) == KRAFT_FETCH_RESPONSE


@pytest.mark.parametrize("base_offset", [40, -1, 7])
def test_an_empty_or_diverging_kraft_fetch_response_keeps_its_fields(base_offset: int) -> None:
    msg = m.MetadataFetchResponse(Errors.NONE, high_watermark=30, base_offset=base_offset, current_leader_id=2,
                                  current_leader_epoch=6, diverging_epoch=5, diverging_end_offset=28,
                                  log_start_offset=0)
    part = wire.to_kio(msg).responses[0].partitions[0]
    assert (part.diverging_epoch.epoch, part.diverging_epoch.end_offset, part.records) == (5, 28, b"")
    assert wire.roundtrip(msg) == msg


def _with_records(msg: m.MetadataFetchResponse, records: bytes) -> object:
    entity = wire.to_kio(msg)
    (topic,) = entity.responses
    (part,) = topic.partitions
    topic = dataclasses.replace(topic, partitions=(dataclasses.replace(part, records=records),))
    return dataclasses.replace(entity, responses=(topic,))


def test_a_kraft_batch_with_a_bad_crc_is_a_wire_error() -> None:
    data = bytearray(wire.to_kio(KRAFT_FETCH_RESPONSE).responses[0].partitions[0].records)
    data[-1] ^= 0xFF
    with pytest.raises(wire.CorruptRecordError):
        wire.from_kio(_with_records(KRAFT_FETCH_RESPONSE, bytes(data)), m.MetadataFetchResponse)


@pytest.mark.parametrize("kind, value, match", [
    (7, b"\x00\x00", "control record type 7"),  # not a ControlRecordType
    (0, b"\x00\x00\x00\x00\x00\x00", "control record type 0"),  # a transaction marker (ABORT)
    (LEADER_CHANGE, b"\x00\x05", "version 5"),  # a schema version kraftlog does not read
    (KRAFT_VERSION, b"\x00\x00\x00", "control record type 5"),  # a value that does not parse
])
def test_a_control_batch_kraftlog_does_not_read_is_a_wire_error(kind: int, value: bytes, match: str) -> None:
    bad = RecordBatch(40, 3, (Record(0, struct.pack(">hh", 0, kind), value),), attributes=ATTR_CONTROL)
    with pytest.raises(wire.WireError, match=match):
        wire.from_kio(_with_records(KRAFT_FETCH_RESPONSE, wire.encode_batches((bad,))), m.MetadataFetchResponse)


def test_a_kraft_batch_in_no_epoch_or_of_other_records_is_not_encoded() -> None:
    for batch in (RaftBatch(0, -1, ALL_METADATA_RECORDS[:1]), RaftBatch(0, 1, ("not a record",)),
                  RaftBatch(0, 1, ALL_METADATA_RECORDS[:1], control=True)):
        with pytest.raises(wire.WireError):
            wire.to_kio(dataclasses.replace(KRAFT_FETCH_RESPONSE, batches=(batch,)))


def test_a_kraft_fetch_goes_out_at_the_lowest_version_that_carries_it() -> None:
    """KRaft's fetch (KIP-595): current leader epoch and last fetched epoch at every version; the fetcher's
    directory id (KIP-853) needs Fetch v17 and its high watermark v18, so a request carrying them goes out
    at that version (a broker's v15 stays v15) and comes back equal."""
    base = m.MetadataFetchRequest(replica_id=2, replica_epoch=-1, fetch_offset=40, max_wait_ms=500,
                                  cluster_id="kraftlog-test", current_leader_epoch=4, last_fetched_epoch=3)
    cases = [(base, 15), (dataclasses.replace(base, replica_directory_id=DIR1), 17),
             (dataclasses.replace(base, high_watermark=38), 18),
             (dataclasses.replace(base, replica_directory_id=DIR1, high_watermark=38), 18)]
    for msg, version in cases:
        data = wire.encode_request(msg, 3)
        assert wire.peek_request_header(data) == (1, version, 3)
        assert wire.decode_request(data) == (3, msg)
        assert wire.roundtrip(msg) == msg
        (part,) = wire.to_kio(msg, version).topics[0].partitions
        assert (part.current_leader_epoch, part.last_fetched_epoch) == (4, 3)
    (part,) = wire.to_kio(cases[3][0], 18).topics[0].partitions
    assert (part.replica_directory_id, part.high_watermark) == (DIR1, 38)


# ------------------------------------------------------------------- KRaft's quorum APIs
def test_kraft_quorum_messages_name_the_metadata_partition_only() -> None:
    """Vote, BeginQuorumEpoch, EndQuorumEpoch and DescribeQuorum nest __cluster_metadata partition 0 in
    Topics[].Partitions[]; the core's fields are that partition's."""
    for cls in (m.VoteRequest, m.VoteResponse, m.BeginQuorumEpochRequest, m.BeginQuorumEpochResponse,
                m.EndQuorumEpochRequest, m.EndQuorumEpochResponse, m.DescribeQuorumRequest,
                m.DescribeQuorumResponse):
        (topic,) = wire.to_kio(SAMPLES[cls]).topics
        assert topic.topic_name == m.METADATA_TOPIC and [p.partition_index for p in topic.partitions] == [0]
    (part,) = wire.to_kio(SAMPLES[m.VoteRequest]).topics[0].partitions
    assert (part.replica_id, part.replica_epoch, part.replica_directory_id, part.voter_directory_id,
            part.last_offset_epoch, part.last_offset, part.pre_vote) == (1, 5, DIR1, DIR2, 4, 120, True)
    (part,) = wire.to_kio(SAMPLES[m.VoteResponse]).topics[0].partitions
    assert (part.error_code, part.leader_id, part.leader_epoch) == (ErrorCode.fenced_leader_epoch, 3, 6)


@pytest.mark.parametrize("request_type", [m.VoteRequest, m.BeginQuorumEpochRequest, m.EndQuorumEpochRequest,
                                          m.DescribeQuorumRequest], ids=lambda t: t.__name__)
@pytest.mark.parametrize("change", ["other topic", "partition 1", "two partitions", "two topics", "no topic"])
def test_a_quorum_request_naming_anything_but_the_metadata_partition_is_refused(request_type: type,
                                                                                 change: str) -> None:
    """KafkaRaftClient answers INVALID_REQUEST (hasValidTopicPartition); kraftlog's wire refuses the bytes as
    malformed (WireError), as it refuses a metadata fetch of another partition."""
    entity = wire.to_kio(SAMPLES[request_type])
    (topic,) = entity.topics
    (part,) = topic.partitions
    topics = {
        "other topic": (dataclasses.replace(topic, topic_name="orders"),),
        "partition 1": (dataclasses.replace(topic, partitions=(dataclasses.replace(part, partition_index=1),)),),
        "two partitions": (dataclasses.replace(topic, partitions=(part, part)),),
        "two topics": (topic, topic),
        "no topic": (),
    }[change]
    with pytest.raises(wire.WireError, match="__cluster_metadata partition 0"):
        wire.decode_request(_request_bytes(dataclasses.replace(entity, topics=topics)))


def test_a_quorum_response_to_a_top_level_error_has_no_topics() -> None:
    """Kafka answers a top-level error (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST) without topics: such an
    answer decodes with the partition's fields at their none values, and a core response whose partition
    fields all hold them goes out so; one with a leader keeps its partition."""
    bare = m.VoteResponse(Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE, -1, -1, False)
    assert wire.to_kio(bare).topics == ()
    assert wire.roundtrip(bare) == bare
    with_leader = dataclasses.replace(bare, leader_id=2, leader_epoch=5)
    assert len(wire.to_kio(with_leader).topics) == 1
    assert wire.roundtrip(with_leader) == with_leader
    described = m.DescribeQuorumResponse(Errors.NOT_CONTROLLER, "not a controller", Errors.NONE, None, -1, -1, -1,
                                         (), ())
    assert wire.to_kio(described).topics == ()
    assert wire.roundtrip(described) == described


def test_raft_voter_apis_carry_endpoints_and_the_kraft_version_range() -> None:
    """KIP-853: AddRaftVoter's and UpdateRaftVoter's Listeners are the core's RaftEndpoints; UpdateRaftVoter's
    KRaftVersionFeature is (kraft_version_min, kraft_version_max), its response's CurrentLeader (id, epoch)."""
    add = wire.to_kio(SAMPLES[m.AddRaftVoterRequest])
    assert [(e.name, e.host, e.port) for e in add.listeners] == [("CONTROLLER", "c4", 9093), ("ALT", "c4b", 19093)]
    assert add.timeout == datetime.timedelta(seconds=30) and add.voter_directory_id == DIR2
    update = wire.to_kio(SAMPLES[m.UpdateRaftVoterRequest])
    assert (update.k_raft_version_feature.min_supported_version,
            update.k_raft_version_feature.max_supported_version) == (0, 1)
    leader = wire.to_kio(SAMPLES[m.UpdateRaftVoterResponse]).current_leader
    assert (leader.leader_id, leader.leader_epoch) == (1, 5)


# -------------------------------------------------------------------------- ElectLeaders
@pytest.mark.parametrize("election_type", [m.ELECTION_LONGEST_LOG_BALANCED,
                                           m.ELECTION_LONGEST_LOG_AGGRESSIVE,
                                           m.ELECTION_DESIGNATION])
def test_elect_leaders_v3_types_go_out_as_v3_by_default(election_type: int) -> None:
    """KIP-966's election types 2-4 need ElectLeaders v3: without an explicit version (a broker forwarding
    to the controller, the simulator's wire switch) they are written at v3 and read back unchanged."""
    msg = m.ElectLeadersRequest(election_type, (m.ElectLeadersPartition("orders", 0, 2),))
    assert wire.peek_request_header(wire.encode_request(msg, 1))[1] == 3
    assert wire.roundtrip(msg) == msg


def test_elect_leaders_desired_leader_is_unsupported_in_v2() -> None:
    msg = m.ElectLeadersRequest(m.ELECTION_PREFERRED, (m.ElectLeadersPartition("orders", 0, 2),))
    with pytest.raises(wire.UnsupportedVersionError):
        wire.roundtrip(msg)


def test_produce_response_log_append_time_keeps_milliseconds() -> None:
    entity = wire.to_kio(SAMPLES[m.ProduceResponse])
    first = entity.responses[0].partition_responses[0]
    assert first.log_append_time == datetime.datetime(2023, 11, 14, 22, 13, 20, 456000,
                                                      tzinfo=datetime.UTC)
    assert entity.responses[0].partition_responses[1].log_append_time is None


# ------------------------------------------------------------- group coordinator APIs
def test_offset_commit_groups_partitions_and_keeps_leader_epoch_and_metadata() -> None:
    """OffsetCommit v8: flat partitions -> one topic entry per name; KIP-320 committed leader epoch."""
    entity = wire.to_kio(SAMPLES[m.OffsetCommitRequest])
    assert [t.name for t in entity.topics] == ["orders", "payments"]
    first, second = entity.topics[0].partitions
    assert (first.partition_index, first.committed_offset, first.committed_leader_epoch,
            first.committed_metadata) == (0, 42, 4, "consumer-a")
    assert (second.committed_leader_epoch, second.committed_metadata) == (-1, None)
    assert entity.topics[1].partitions[0].committed_metadata == ""
    assert (entity.generation_id_or_member_epoch, entity.member_id, entity.group_instance_id) == (
        -1, "", None)


def test_offset_commit_from_a_group_member_roundtrips() -> None:
    """Generation, member id and static instance id cross the wire too (a subscribe()d consumer)."""
    msg = dataclasses.replace(SAMPLES[m.OffsetCommitRequest], generation_id_or_member_epoch=5,
                              member_id="consumer-1-0b5e", group_instance_id="instance-a")
    assert wire.roundtrip(msg) == msg
    data = wire.encode_request(msg, 9)
    decoded = KpOffsetCommitRequest.decode(data, version=8, header=True)
    decoded.with_header(correlation_id=9, client_id="kraftlog")
    assert decoded.encode(header=True) == data


def test_offset_fetch_is_one_group_of_v8_groups() -> None:
    """OffsetFetch v8 (KIP-709) nests groups: the core's one group is a one-element Groups list."""
    entity = wire.to_kio(SAMPLES[m.OffsetFetchRequest])
    (group,) = entity.groups
    assert group.group_id == "orders-app" and entity.require_stable is True
    assert [(t.name, list(t.partition_indexes)) for t in group.topics] == [
        ("orders", [0, 2]), ("payments", [1])]
    resp = wire.to_kio(SAMPLES[m.OffsetFetchResponse])
    (rgroup,) = resp.groups
    assert rgroup.group_id == "orders-app" and rgroup.error_code is ErrorCode.none
    p0, p2 = rgroup.topics[0].partitions
    assert (p0.committed_offset, p0.committed_leader_epoch, p0.metadata) == (42, 4, "consumer-a")
    assert (p2.committed_offset, p2.committed_leader_epoch, p2.metadata) == (-1, -1, None)
    assert rgroup.topics[1].partitions[0].error_code is ErrorCode.unstable_offset_commit


def test_offset_fetch_all_partitions_is_null_topics() -> None:
    """partitions None ("every committed partition") is Kafka's null Topics; () stays an empty list."""
    every = m.OffsetFetchRequest("orders-app", None)
    (group,) = wire.to_kio(every).groups
    assert group.topics is None
    assert wire.roundtrip(every) == every
    data = wire.encode_request(every, 3)
    decoded = KpOffsetFetchRequest.decode(data, version=8, header=True)
    decoded.with_header(correlation_id=3, client_id="kraftlog")
    assert decoded.encode(header=True) == data
    none = m.OffsetFetchRequest("orders-app", ())
    assert wire.to_kio(none).groups[0].topics == ()
    assert wire.roundtrip(none) == none


def test_offset_fetch_group_error_roundtrips() -> None:
    msg = m.OffsetFetchResponse("orders-app", Errors.COORDINATOR_LOAD_IN_PROGRESS, ())
    assert wire.roundtrip(msg) == msg
    assert wire.to_kio(msg).groups[0].error_code is ErrorCode.coordinator_load_in_progress


def _request_bytes(entity: object, correlation_id: int = 1) -> bytes:
    header = entity.__header_schema__(request_api_key=entity.__api_key__,
                                      request_api_version=entity.__version__,
                                      correlation_id=correlation_id, client_id="other")
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


@pytest.mark.parametrize("n_groups", [0, 2])
def test_offset_fetch_with_other_than_one_group_is_refused(n_groups: int) -> None:
    groups = tuple(
        kio_offset_fetch_request.OffsetFetchRequestGroup(group_id=GroupId(f"g{i}"), topics=None)
        for i in range(n_groups)
    )
    data = _request_bytes(kio_offset_fetch_request.OffsetFetchRequest(groups=groups))
    with pytest.raises(wire.WireError):
        wire.decode_request(data)
    resp = kio_offset_fetch_response.OffsetFetchResponse(
        throttle_time=datetime.timedelta(0),
        groups=tuple(kio_offset_fetch_response.OffsetFetchResponseGroup(group_id=GroupId(f"g{i}"),
                                                                        topics=())
                     for i in range(n_groups)),
    )
    with pytest.raises(wire.WireError):
        wire.from_kio(resp)


def test_find_coordinator_v4_batches_keys_and_carries_per_key_errors() -> None:
    entity = wire.to_kio(SAMPLES[m.FindCoordinatorRequest])
    assert entity.key_type == 0 and entity.coordinator_keys == ("orders-app", "payments-app")
    resp = wire.to_kio(SAMPLES[m.FindCoordinatorResponse])
    ok, failed = resp.coordinators
    assert (ok.key, ok.node_id, ok.host, ok.port, ok.error_message) == (
        "orders-app", 2, "broker-2.local", 9093, None)
    assert failed.error_code is ErrorCode.coordinator_not_available
    assert wire.peek_request_header(wire.encode_request(SAMPLES[m.FindCoordinatorRequest], 8)) == (
        10, 4, 8)


# ------------------------------------------------ cross-check against kafka-python's protocol
KAFKA_PYTHON = [
    (m.FetchRequest, KpFetchRequest, True),
    (m.FetchResponse, KpFetchResponse, False),
    (m.MetadataFetchRequest, KpFetchRequest, True),
    (m.MetadataFetchResponse, KpFetchResponse, False),
    (m.ProduceRequest, KpProduceRequest, True),
    (m.ProduceResponse, KpProduceResponse, False),
    (m.ListOffsetsRequest, KpListOffsetsRequest, True),
    (m.ListOffsetsResponse, KpListOffsetsResponse, False),
    (m.DeleteRecordsRequest, KpDeleteRecordsRequest, True),
    (m.DeleteRecordsResponse, KpDeleteRecordsResponse, False),
    (m.OffsetForLeaderEpochRequest, KpOffsetForLeaderEpochRequest, True),
    (m.OffsetForLeaderEpochResponse, KpOffsetForLeaderEpochResponse, False),
    (m.MetadataRequest, KpMetadataRequest, True),
    (m.MetadataResponse, KpMetadataResponse, False),
    (m.CreateTopicsRequest, KpCreateTopicsRequest, True),
    (m.CreateTopicsResponse, KpCreateTopicsResponse, False),
    (m.IncrementalAlterConfigsRequest, KpIncrementalAlterConfigsRequest, True),
    (m.IncrementalAlterConfigsResponse, KpIncrementalAlterConfigsResponse, False),
    (m.ElectLeadersRequest, KpElectLeadersRequest, True),
    (m.ElectLeadersResponse, KpElectLeadersResponse, False),
    (m.DescribeTopicPartitionsRequest, KpDescribeTopicPartitionsRequest, True),
    (m.DescribeTopicPartitionsResponse, KpDescribeTopicPartitionsResponse, False),
    (m.FindCoordinatorRequest, KpFindCoordinatorRequest, True),
    (m.FindCoordinatorResponse, KpFindCoordinatorResponse, False),
    (m.OffsetCommitRequest, KpOffsetCommitRequest, True),
    (m.OffsetCommitResponse, KpOffsetCommitResponse, False),
    (m.OffsetFetchRequest, KpOffsetFetchRequest, True),
    (m.OffsetFetchResponse, KpOffsetFetchResponse, False),
    (m.JoinGroupRequest, KpJoinGroupRequest, True),
    (m.JoinGroupResponse, KpJoinGroupResponse, False),
    (m.SyncGroupRequest, KpSyncGroupRequest, True),
    (m.SyncGroupResponse, KpSyncGroupResponse, False),
    (m.HeartbeatRequest, KpHeartbeatRequest, True),
    (m.HeartbeatResponse, KpHeartbeatResponse, False),
    (m.LeaveGroupRequest, KpLeaveGroupRequest, True),
    (m.LeaveGroupResponse, KpLeaveGroupResponse, False),
    (m.ApiVersionsRequest, KpApiVersionsRequest, True),
    (m.ApiVersionsResponse, KpApiVersionsResponse, False),
    (m.DeleteTopicsRequest, KpDeleteTopicsRequest, True),
    (m.DeleteTopicsResponse, KpDeleteTopicsResponse, False),
    (m.DescribeConfigsRequest, KpDescribeConfigsRequest, True),
    (m.DescribeConfigsResponse, KpDescribeConfigsResponse, False),
    (m.DescribeQuorumRequest, KpDescribeQuorumRequest, True),
    (m.DescribeQuorumResponse, KpDescribeQuorumResponse, False),
]
_VERSION = {wire.response_type_for(t): t.VERSION for t in m.REQUEST_TYPES} | {
    t: t.VERSION for t in m.REQUEST_TYPES}


@pytest.mark.parametrize("core_type, kp_type, is_request", KAFKA_PYTHON,
                         ids=[t.__name__ for t, _, _ in KAFKA_PYTHON])
def test_kafka_python_decodes_and_reencodes_our_bytes_identically(core_type, kp_type, is_request):
    """Where kafka-python has the API at our version, it parses our frame and writes the same bytes."""
    msg = SAMPLES[core_type]
    version = _VERSION[core_type]
    data = (wire.encode_request(msg, 31, client_id="kraftlog") if is_request
            else wire.encode_response(msg, 31))
    decoded = kp_type.decode(data, version=version, header=True)
    assert decoded.header.correlation_id == 31
    decoded.with_header(correlation_id=31, **({"client_id": "kraftlog"} if is_request else {}))
    assert decoded.encode(header=True) == data
