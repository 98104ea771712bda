"""Version ranges of the table-driven wire: a supported version is a row's range, not a function.

Rules proved here:

* ``decode_request_frame`` accepts every version in an API's range (``wire.supported_versions``) and
  returns the version it decoded; ``encode_response(..., version=v)`` answers at that version, with
  that version's response header (kio's ``__header_schema__``: v0 before flexible versions, v1 after);
  versions outside the range are Kafka's UNSUPPORTED_VERSION (35).
* A field a version does not carry is dropped on the way out and comes back as Kafka's default; every
  such loss is listed in DROPS below with the version that adds the field (from Kafka's message JSON
  files), and nothing else changes. A message re-sent at the same version comes back unchanged.
* Where kafka-python has the API at that version, it decodes our bytes and re-encodes them byte for byte.
* Fetch nests partitions by topic name at v4-v12 and by topic id at v13-v15: a partition naming both
  comes back with the other one cleared (DROPS). Fetch v16-v18 are the metadata fetch's only (KIP-853's
  ReplicaDirectoryId is v17, HighWatermark v18); a data Fetch at v16+ is UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest

from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from test_wire import DIR1, KAFKA_PYTHON, RAFT_BATCHES, SAMPLES, T1, T2

#: The supported ranges this change puts in the table (issue 11, "APIs for clients").
RANGES = {
    m.ProduceRequest: range(3, 10),
    m.FetchRequest: range(4, 16),  # 4-12 name topics (FetchPartition.topic), 13-15 use topic ids
    m.MetadataFetchRequest: range(15, 19),  # v17: ReplicaDirectoryId (KIP-853), v18: HighWatermark
    m.ListOffsetsRequest: range(1, 8),
    m.DeleteRecordsRequest: range(0, 3),
    m.OffsetForLeaderEpochRequest: range(2, 5),
    m.MetadataRequest: range(1, 13),
    m.InitProducerIdRequest: range(0, 5),
    m.FindCoordinatorRequest: range(0, 5),
    m.OffsetCommitRequest: range(2, 9),
    m.OffsetFetchRequest: range(1, 9),
    m.CreateTopicsRequest: range(2, 8),
    m.IncrementalAlterConfigsRequest: range(0, 2),
    m.CreatePartitionsRequest: range(0, 4),
    m.AlterConfigsRequest: range(0, 3),
    m.DescribeUserScramCredentialsRequest: range(0, 1),  # KIP-554: v0 only, in Kafka too
    m.AlterUserScramCredentialsRequest: range(0, 1),
    m.DescribeTopicPartitionsRequest: range(0, 1),
    m.ElectLeadersRequest: range(0, 4),  # v3 is KIP-966's (level urm, the default)
    m.GetReplicaLogInfoRequest: range(0, 1),  # KIP-966 part 2, the controller's query (level urm)
    m.AlterPartitionRequest: range(3, 4),
    m.BrokerRegistrationRequest: range(4, 5),
    m.BrokerHeartbeatRequest: range(1, 2),
    # Client APIs of the classic group protocol, ApiVersions and the admin client (wire.py's table
    # says which client sends which version).
    m.JoinGroupRequest: range(0, 10),
    m.SyncGroupRequest: range(0, 6),
    m.HeartbeatRequest: range(0, 5),
    m.LeaveGroupRequest: range(0, 6),
    m.ApiVersionsRequest: range(0, 4),
    m.DeleteTopicsRequest: range(1, 7),
    m.DescribeConfigsRequest: range(1, 5),
    # Group admin (issue 28): kafka-consumer-groups.sh's requests.
    m.ListGroupsRequest: range(0, 6),
    m.DescribeGroupsRequest: range(0, 6),
    m.DeleteGroupsRequest: range(0, 3),
    m.OffsetDeleteRequest: range(0, 1),
    # KRaft's quorum (KIP-595, KIP-996, KIP-853), controller to controller, at the versions Kafka 4 sends;
    # DescribeQuorum at every version kafka-metadata-quorum.sh has asked at.
    m.VoteRequest: range(2, 3),
    m.BeginQuorumEpochRequest: range(1, 2),
    m.EndQuorumEpochRequest: range(1, 2),
    m.DescribeQuorumRequest: range(0, 3),
    m.FetchSnapshotRequest: range(0, 2),
    m.AddRaftVoterRequest: range(0, 1),
    m.RemoveRaftVoterRequest: range(0, 1),
    m.UpdateRaftVoterRequest: range(0, 1),
}

#: (core type, versions, field path, value it comes back as): what a version cannot carry.
DROPS: list[tuple[type, range, str, Any]] = [
    (m.FetchRequest, range(0, 15), "replica_epoch", -1),  # ReplicaState is v15+ (KIP-903)
    (m.FetchRequest, range(0, 13), "partitions.topic_id", m.uuid.UUID(int=0)),  # names before v13
    (m.FetchRequest, range(13, 16), "partitions.topic", ""),  # topic ids from v13 (KIP-516)
    (m.FetchRequest, range(0, 5), "partitions.log_start_offset", -1),
    (m.FetchRequest, range(0, 9), "partitions.current_leader_epoch", -1),  # KIP-320
    (m.FetchRequest, range(0, 12), "partitions.last_fetched_epoch", -1),  # KIP-595
    (m.FetchResponse, range(0, 13), "partitions.topic_id", m.uuid.UUID(int=0)),
    (m.FetchResponse, range(13, 16), "partitions.topic", ""),
    (m.FetchResponse, range(0, 5), "partitions.log_start_offset", -1),
    (m.FetchResponse, range(0, 12), "partitions.diverging_epoch", None),
    (m.FetchResponse, range(0, 12), "partitions.current_leader", None),
    (m.ProduceResponse, range(0, 5), "partitions.log_start_offset", -1),
    (m.ProduceResponse, range(0, 8), "partitions.error_message", None),  # KIP-467
    (m.ProduceResponse, range(0, 8), "partitions.record_errors", ()),
    (m.ListOffsetsRequest, range(0, 2), "isolation_level", 0),
    (m.ListOffsetsRequest, range(0, 4), "partitions.current_leader_epoch", -1),
    (m.ListOffsetsResponse, range(0, 4), "partitions.leader_epoch", -1),
    (m.OffsetForLeaderEpochRequest, range(0, 3), "replica_id", -2),  # Kafka's consumer id
    (m.MetadataRequest, range(0, 4), "allow_auto_topic_creation", True),  # Kafka: always allowed before v4
    (m.MetadataResponse, range(0, 2), "cluster_id", None),
    (m.MetadataResponse, range(0, 5), "topics.partitions.offline_replicas", ()),
    (m.MetadataResponse, range(0, 7), "topics.partitions.leader_epoch", -1),
    (m.MetadataResponse, range(0, 10), "topics.topic_id", m.uuid.UUID(int=0)),
    (m.CreateTopicsResponse, range(0, 7), "topics.topic_id", None),
    (m.OffsetCommitRequest, range(0, 6), "partitions.committed_leader_epoch", -1),
    (m.OffsetCommitResponse, range(0, 3), "throttle_time_ms", 0),
    (m.OffsetFetchRequest, range(0, 7), "require_stable", False),
    (m.OffsetFetchResponse, range(0, 8), "group_id", ""),  # the asker knows its group
    (m.OffsetFetchResponse, range(0, 5), "partitions.committed_leader_epoch", -1),
    (m.OffsetFetchResponse, range(0, 3), "throttle_time_ms", 0),
    (m.FindCoordinatorResponse, range(0, 4), "coordinators.key", ""),
    (m.FindCoordinatorResponse, range(0, 1), "throttle_time_ms", 0),
    (m.JoinGroupRequest, range(0, 1), "rebalance_timeout_ms", -1),  # v0: the session timeout
    (m.JoinGroupRequest, range(0, 5), "group_instance_id", None),  # static membership (KIP-345)
    (m.JoinGroupRequest, range(0, 8), "reason", None),  # KIP-800
    (m.JoinGroupResponse, range(0, 2), "throttle_time_ms", 0),
    (m.JoinGroupResponse, range(0, 7), "protocol_type", None),
    (m.JoinGroupResponse, range(0, 5), "members.group_instance_id", None),
    (m.JoinGroupResponse, range(0, 9), "skip_assignment", False),  # KIP-814
    (m.SyncGroupRequest, range(0, 3), "group_instance_id", None),
    (m.SyncGroupRequest, range(0, 5), "protocol_type", None),
    (m.SyncGroupRequest, range(0, 5), "protocol_name", None),
    (m.SyncGroupResponse, range(0, 1), "throttle_time_ms", 0),
    (m.SyncGroupResponse, range(0, 5), "protocol_type", None),
    (m.SyncGroupResponse, range(0, 5), "protocol_name", None),
    (m.HeartbeatRequest, range(0, 3), "group_instance_id", None),
    (m.HeartbeatResponse, range(0, 1), "throttle_time_ms", 0),
    (m.LeaveGroupRequest, range(0, 3), "members.group_instance_id", None),
    (m.LeaveGroupRequest, range(0, 5), "members.reason", None),
    (m.LeaveGroupResponse, range(0, 1), "throttle_time_ms", 0),
    (m.LeaveGroupResponse, range(0, 3), "members", ()),
    # ... and the first member error becomes the top-level one (Kafka's LeaveGroupResponse, v0-v2).
    (m.LeaveGroupResponse, range(0, 3), "error_code", Errors.UNKNOWN_MEMBER_ID),
    (m.ApiVersionsRequest, range(0, 3), "client_software_name", ""),  # KIP-511
    (m.ApiVersionsRequest, range(0, 3), "client_software_version", ""),
    (m.ApiVersionsResponse, range(0, 1), "throttle_time_ms", 0),
    (m.DeleteTopicsResponse, range(0, 6), "responses.topic_id", None),
    (m.DeleteTopicsResponse, range(0, 5), "responses.error_message", None),
    (m.DescribeConfigsRequest, range(0, 3), "include_documentation", False),
    (m.ListGroupsRequest, range(0, 4), "states_filter", ()),  # KIP-518
    (m.ListGroupsRequest, range(0, 5), "types_filter", ()),  # KIP-848
    (m.ListGroupsResponse, range(0, 1), "throttle_time_ms", 0),
    (m.ListGroupsResponse, range(0, 4), "groups.group_state", ""),
    (m.ListGroupsResponse, range(0, 5), "groups.group_type", ""),
    (m.DescribeGroupsRequest, range(0, 3), "include_authorized_operations", False),
    (m.DescribeGroupsResponse, range(0, 1), "throttle_time_ms", 0),
    (m.DescribeGroupsResponse, range(0, 4), "groups.members.group_instance_id", None),  # KIP-345
    (m.DescribeGroupsResponse, range(0, 3), "groups.authorized_operations", -2147483648),  # KIP-430
    (m.MetadataFetchRequest, range(0, 17), "replica_directory_id", None),  # KIP-853
    (m.MetadataFetchRequest, range(0, 18), "high_watermark", -1),
    (m.FetchSnapshotRequest, range(0, 1), "replica_directory_id", None),  # KIP-853
    (m.DescribeQuorumResponse, range(0, 2), "error_message", None),  # v2
    (m.DescribeQuorumResponse, range(0, 2), "partition_error_message", None),
    (m.DescribeQuorumResponse, range(0, 2), "current_voters.replica_directory_id", None),  # KIP-853
    (m.DescribeQuorumResponse, range(0, 2), "observers.replica_directory_id", None),
    (m.DescribeQuorumResponse, range(0, 1), "current_voters.last_fetch_timestamp", -1),  # KIP-836
    (m.DescribeQuorumResponse, range(0, 1), "current_voters.last_caught_up_timestamp", -1),
    (m.DescribeQuorumResponse, range(0, 1), "observers.last_fetch_timestamp", -1),
    (m.DescribeQuorumResponse, range(0, 1), "observers.last_caught_up_timestamp", -1),
]

#: Content a version cannot express at all gets a sample that fits it.
_ONE_KEY = m.FindCoordinatorRequest(("orders-app",))
_ONE_COORDINATOR = m.FindCoordinatorResponse((m.Coordinator("orders-app", 2, "b2", 9093),),
                                             throttle_time_ms=5)
_COORDINATOR_NOT_AVAILABLE = m.FindCoordinatorResponse(
    (m.Coordinator("orders-app", -1, "", -1, Errors.COORDINATOR_NOT_AVAILABLE, "loading"),))
#: Fetch partitions naming their topic both ways: v4-v12 keep the name, v13-v15 the id.
_NAMES = {T1: "orders", T2: "payments"}
_FETCH_BOTH = {
    t: dataclasses.replace(SAMPLES[t], partitions=tuple(
        dataclasses.replace(p, topic=_NAMES[p.topic_id]) for p in SAMPLES[t].partitions))
    for t in (m.FetchRequest, m.FetchResponse)
}
#: A KRaft replica's metadata fetch, carrying every field (v15-v16 drop two: DROPS).
_KRAFT_FETCH = dataclasses.replace(SAMPLES[m.MetadataFetchRequest], current_leader_epoch=6, last_fetched_epoch=5,
                                   replica_directory_id=DIR1, high_watermark=38)
_KRAFT_FETCH_RESPONSE = dataclasses.replace(SAMPLES[m.MetadataFetchResponse], current_leader_id=1,
                                            current_leader_epoch=6, log_start_offset=0, records=(),
                                            batches=RAFT_BATCHES)
#: LeaveGroup v0-v2 name one member.
_ONE_LEAVER = dataclasses.replace(SAMPLES[m.LeaveGroupRequest],
                                  members=SAMPLES[m.LeaveGroupRequest].members[:1])


def _sample(core_type: type, version: int) -> object:
    if core_type is m.FindCoordinatorRequest and version < 4:
        return _ONE_KEY  # one key per request before v4 (KIP-699)
    if core_type is m.FindCoordinatorResponse and version < 4:
        return _COORDINATOR_NOT_AVAILABLE if version == 2 else _ONE_COORDINATOR
    if core_type is m.ElectLeadersRequest and version == 0:
        return dataclasses.replace(SAMPLES[core_type], election_type=m.ELECTION_PREFERRED)
    if core_type in _FETCH_BOTH:
        return _FETCH_BOTH[core_type]
    if core_type is m.LeaveGroupRequest and version < 3:
        return _ONE_LEAVER
    if core_type is m.MetadataFetchRequest:
        return _KRAFT_FETCH
    if core_type is m.MetadataFetchResponse and version > 15:
        return _KRAFT_FETCH_RESPONSE
    return SAMPLES[core_type]


def _set(obj: Any, path: str, value: Any) -> Any:
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: tuple(_set(x, rest, value) for x in getattr(obj, head))})


def _expected(core_type: type, version: int, msg: object) -> object:
    for t, versions, path, value in DROPS:
        if t is core_type and version in versions:
            msg = _set(msg, path, value)
    return msg


CASES = [(req, v) for req in m.REQUEST_TYPES for v in wire.supported_versions(req)]
_IDS = [f"{req.API}-{req.__name__}-v{v}" for req, v in CASES]


def test_the_table_supports_the_issue_ranges() -> None:
    assert {t: wire.supported_versions(t) for t in m.REQUEST_TYPES} == RANGES
    by_key = wire.supported_api_versions()
    assert list(by_key) == sorted(by_key)
    # the metadata fetch's v16-v18 are served on the controller's listener only (listeners.py)
    assert by_key[m.FetchRequest.API_KEY] == (4, 15) and by_key[m.MetadataRequest.API_KEY] == (1, 12)
    assert by_key[m.JoinGroupRequest.API_KEY] == (0, 9) and by_key[m.ApiVersionsRequest.API_KEY] == (0, 3)
    assert len(by_key) == len(m.REQUEST_TYPES) - 1  # MetadataFetchRequest is a Fetch


@pytest.mark.parametrize("request_type, version", CASES, ids=_IDS)
def test_request_roundtrips_at_every_supported_version(request_type: type, version: int) -> None:
    msg = _sample(request_type, version)
    data = wire.encode_request(msg, 41, client_id="rdkafka", version=version)
    api_key, api_version, cid, client_id, out = wire.decode_request_frame(data)
    assert (api_key, api_version, cid, client_id) == (request_type.API_KEY, version, 41, "rdkafka")
    assert type(out) is request_type
    assert out == _expected(request_type, version, msg)
    assert wire.roundtrip(out, version=version) == out
    assert wire.decode_request(data) == (41, out)


@pytest.mark.parametrize("request_type, version", CASES, ids=_IDS)
def test_response_answers_at_the_request_version(request_type: type, version: int) -> None:
    response_type = wire.response_type_for(request_type)
    msg = _sample(response_type, version)
    data = wire.encode_response(msg, 42, version=version)
    assert struct.unpack_from(">i", data)[0] == 42
    entity = wire.to_kio(msg, version)
    assert entity.__version__ == version
    # Flexible versions put a tagged-field count after the correlation id (response header v1).
    header_size = 5 if entity.__flexible__ else 4
    assert data[4:header_size] == (b"\x00" if entity.__flexible__ else b"")
    cid, out = wire.decode_response(data, request_type, version)
    assert cid == 42 and type(out) is response_type
    assert out == _expected(response_type, version, msg)
    assert wire.roundtrip(out, as_response_to=request_type, version=version) == out


_KP = {core: kp for core, kp, _ in KAFKA_PYTHON}


@pytest.mark.parametrize("request_type, version", CASES, ids=_IDS)
def test_kafka_python_reads_our_bytes_at_every_version(request_type: type, version: int) -> None:
    """kafka-python (an independent codec) decodes our frame at that version and writes it back
    byte for byte: our bytes are Kafka's format at that version, header included."""
    for core_type, is_request in ((request_type, True), (wire.response_type_for(request_type), False)):
        kp_type = _KP.get(core_type)
        if kp_type is None:
            continue  # inter-broker API: kafka-python does not have it
        if core_type in (m.ElectLeadersRequest, m.ElectLeadersResponse) and version == 3:
            continue  # KIP-966's v3 exists only in kraftlog (tests/test_wire_urm.py checks its bytes)
        assert version <= kp_type.max_version  # kafka-python 3 has every other version kraftlog maps
        msg = _sample(core_type, version)
        data = (wire.encode_request(msg, 9, client_id="kraftlog", version=version) if is_request
                else wire.encode_response(msg, 9, version=version))
        decoded = kp_type.decode(data, version=version, header=True)
        decoded.with_header(correlation_id=9, **({"client_id": "kraftlog"} if is_request else {}))
        assert decoded.encode(header=True) == data


@pytest.mark.parametrize("request_type", m.REQUEST_TYPES, ids=lambda t: t.__name__)
def test_versions_outside_the_range_are_unsupported_version(request_type: type) -> None:
    """Kafka answers an unsupported version with UNSUPPORTED_VERSION (35); so does decoding one. The
    codec's range is the table row's (``mapped_versions``: ElectLeaders v3 included, which only level
    ``urm`` serves: tests/test_wire_urm.py)."""
    versions = wire.mapped_versions(request_type)
    data = bytearray(wire.encode_request(_sample(request_type, versions.stop - 1), 1))
    for bad in (versions.start - 1, versions.stop):
        struct.pack_into(">h", data, 2, bad)
        if request_type is not m.MetadataFetchRequest:  # its key's range is Fetch's: see below
            with pytest.raises(wire.UnsupportedVersionError) as err:
                wire.decode_request_frame(bytes(data))
            assert err.value.error_code == Errors.UNSUPPORTED_VERSION == 35
        with pytest.raises(wire.UnsupportedVersionError):
            wire.encode_response(_sample(wire.response_type_for(request_type), versions.stop - 1), 1,
                                 version=bad)


def test_elect_leaders_v0_elects_preferred_leaders_only() -> None:
    """ElectLeaders v0 has no ElectionType: it is always PREFERRED, so UNCLEAN cannot be sent."""
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_request(SAMPLES[m.ElectLeadersRequest], 1, version=0)


def test_find_coordinator_before_v4_asks_for_one_key() -> None:
    """KIP-699 batched coordinator keys in v4; v0-v3 carry exactly one."""
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_request(SAMPLES[m.FindCoordinatorRequest], 1, version=3)
    entity = wire.to_kio(_ONE_COORDINATOR, 3)
    assert (entity.node_id, entity.host, entity.port) == (2, "b2", 9093)


def test_metadata_fetch_is_fetch_v15_to_v18_and_a_data_fetch_stops_at_v15() -> None:
    """A broker's metadata-log fetch is Fetch v15 (ReplicaState), a KRaft replica's up to v18; an older
    Fetch of only the metadata topic decodes as Fetch and is then refused as UNSUPPORTED_VERSION, and so is
    a data Fetch at v16+ (the Fetch row's v16-v18 are the metadata fetch's)."""
    old = m.FetchRequest(3, -1, 250, 1, (m.FetchPartition(m.METADATA_TOPIC_ID, 0, -1, 40),))
    with pytest.raises(wire.UnsupportedVersionError):
        wire.decode_request_frame(wire.encode_request(old, 1, version=14))
    assert wire.decode_request_frame(wire.encode_request(old, 1, version=15))[4] == (
        m.MetadataFetchRequest(3, -1, 40, 250))
    data = bytearray(wire.encode_request(SAMPLES[m.FetchRequest], 1, version=15))
    struct.pack_into(">h", data, 2, 16)  # Fetch v16's request is v15's
    with pytest.raises(wire.UnsupportedVersionError) as err:
        wire.decode_request_frame(bytes(data))
    assert err.value.error_code == Errors.UNSUPPORTED_VERSION
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_response(SAMPLES[m.FetchResponse], 1, version=16)
    assert wire.mapped_versions(m.FetchRequest) == range(4, 16)
    assert wire.mapped_versions(m.MetadataFetchRequest) == range(15, 19)


def test_a_metadata_fetch_response_is_the_same_bytes_at_v15_to_v18() -> None:
    """The TCP driver reads every response at its request class's VERSION (v15 for the metadata fetch),
    whatever version the request went at (v17/v18 for a KRaft replica's): that holds because v16's only
    addition to the response, NodeEndpoints (KIP-951), is a tagged field kraftlog leaves empty, so not
    written."""
    for msg in (SAMPLES[m.MetadataFetchResponse], _KRAFT_FETCH_RESPONSE):
        data = {v: wire.encode_response(msg, 9, version=v) for v in range(15, 19)}
        assert len(set(data.values())) == 1
        assert wire.decode_response(data[18], m.MetadataFetchRequest) == (9, msg)
