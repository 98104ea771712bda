"""The wire table covers what real Kafka clients send a kraftlog broker (issue 11, "APIs for clients").

Clients: kcat (librdkafka 2.0.2), confluent-kafka (librdkafka 2.16) and kafka-python 3.0.12, each of
which picks the highest version both it and the broker support (wire.py's table says which version each
sends). Rules proved here:

* Every version of JoinGroup (0-9), SyncGroup (0-5), Heartbeat (0-4), LeaveGroup (0-5), ApiVersions
  (0-3), DeleteTopics (1-6) and DescribeConfigs (1-4): kafka-python encodes a message, kraftlog decodes
  it to the core message (what the version cannot carry coming back as test_wire_versions.DROPS says),
  and kraftlog's bytes decode in kafka-python to the same fields.
* LeaveGroup v0-v2 carry one member at the top level: one MemberIdentity in the core, more is refused;
  a response's member error becomes the top-level error, as Kafka's LeaveGroupResponse does.
* ApiVersions answers with response header v0 at every version, and an error answer has a v0 body (what
  kafka-python reads; the framing layer's UNSUPPORTED_VERSION answer is the same bytes).
* Fetch v4-v12 names topics (``topic``), v13-v15 identifies them (``topic_id``); responses carry the LSO,
  an empty (not null) AbortedTransactions, PreferredReadReplica -1 (v11+), LogStartOffset (v5+) and
  SessionId 0 (v7+: fetch sessions declined); a request's session fields are ignored.
* Record headers survive the v2 codec; a gzip batch built by kafka-python decodes to the uncompressed
  batch with the same records, producer fields and timestamps; a codec without its library here is
  UNSUPPORTED_COMPRESSION_TYPE; kio.records cannot replace the codec (it loses milliseconds).
"""

from __future__ import annotations

import dataclasses
import gzip
import struct
import typing
import uuid
from typing import Any

import pytest
from crc32c import crc32c
from kafka import codec as kafka_codec
from kafka.protocol.consumer.fetch import FetchRequest as KpFetchRequest
from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse as KpApiVersionsResponse
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.records.readers import read_batch as kio_read_batch

from kraftlog.protocol import framing, wire
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from test_wire import KAFKA_PYTHON, SAMPLES, T1, T2
from test_wire_versions import _expected, _sample

ZERO = uuid.UUID(int=0)
NEW_APIS = (m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest, m.LeaveGroupRequest,
            m.ApiVersionsRequest, m.DeleteTopicsRequest, m.DescribeConfigsRequest)
_KP = {core: kp for core, kp, _ in KAFKA_PYTHON}
CASES = [(t, v) for req in NEW_APIS for v in wire.supported_versions(req)
         for t in (req, wire.response_type_for(req))]
_IDS = [f"{t.__name__}-v{v}" for t, v in CASES]


# ---------------------------------------------- core <-> kafka-python, by Kafka's field names
def _nested(core_cls: type, name: str) -> type | None:
    """The dataclass inside a core field's annotation (``tuple[X, ...]``, ``X | None``), if any."""
    tp = typing.get_type_hints(core_cls)[name]
    for arg in (tp, *typing.get_args(tp)):
        for inner in (arg, *typing.get_args(arg)):
            if dataclasses.is_dataclass(inner):
                return inner
    return None


def _to_kp(kp_cls: type, obj: Any, version: int) -> Any:
    """kafka-python's message for a core message: both use Kafka's field names (``*_ms`` included);
    only the fields ``version`` has. The shapes that differ (LeaveGroup v0-v2's one member,
    DeleteTopics v6's topic structs) are built as a client builds them."""
    kwargs = {}
    if isinstance(obj, m.LeaveGroupRequest) and version < 3:
        kwargs["member_id"] = obj.members[0].member_id
    if isinstance(obj, m.LeaveGroupResponse) and version < 3:  # as Kafka's broker writes it
        errors = [obj.error_code] + [x.error_code for x in obj.members]
        kwargs["error_code"] = next((e for e in errors if e != Errors.NONE), Errors.NONE)
    if isinstance(obj, m.DeleteTopicsRequest) and version >= 6:
        state = kp_cls.DeleteTopicState
        kwargs["topics"] = [state(version=version, name=n) for n in obj.topic_names]
    for name, field in kp_cls._struct.fields.items():
        if name in kwargs or not field.for_version_q(version) or not hasattr(obj, name):
            continue
        value = getattr(obj, name)
        if field.is_struct_array():
            value = [_to_kp(field.data_class, x, version) for x in value]
        elif field.is_struct():
            value = _to_kp(field.data_class, value, version)
        elif isinstance(value, tuple):
            value = list(value)
        kwargs[name] = value
    return kp_cls(version=version, **kwargs)


def _from_kp(core_cls: type, kp: Any, version: int) -> Any:
    """The core message with the fields a kafka-python message has at ``version`` (others: the core
    defaults, as test_wire_versions.DROPS lists them); LeaveGroup v0-v2's member as one member."""
    kwargs = {}
    fields = kp._struct.fields
    for f in dataclasses.fields(core_cls):
        field = fields.get(f.name)
        if field is None or not field.for_version_q(version):
            continue
        value = getattr(kp, f.name)
        inner = _nested(core_cls, f.name)
        if field.is_struct_array():
            value = None if value is None else tuple(_from_kp(inner, x, version) for x in value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    if core_cls is m.LeaveGroupRequest and version < 3:
        kwargs["members"] = (m.MemberIdentity(kp.member_id),)
    if core_cls is m.DeleteTopicsRequest and version >= 6:
        kwargs["topic_names"] = tuple(t.name for t in kp.topics)
    return core_cls(**kwargs)


def _kp_bytes(kp_msg: Any, is_request: bool, correlation_id: int = 5) -> bytes:
    kp_msg.with_header(correlation_id=correlation_id,
                       **({"client_id": "kafka-python"} if is_request else {}))
    return bytes(kp_msg.encode(header=True))


@pytest.mark.parametrize("core_type, version", CASES, ids=_IDS)
def test_kafka_python_encodes_and_kraftlog_decodes(core_type: type, version: int) -> None:
    """kafka-python's bytes of a message at every version of the new APIs decode to the core message
    (less what the version cannot carry)."""
    msg = _sample(core_type, version)
    is_request = core_type in m.REQUEST_TYPES
    data = _kp_bytes(_to_kp(_KP[core_type], msg, version), is_request)
    if is_request:
        api_key, api_version, cid, client_id, out = wire.decode_request_frame(data)
        assert (api_key, api_version, client_id) == (core_type.API_KEY, version, "kafka-python")
    else:
        request_type = {wire.response_type_for(r): r for r in NEW_APIS}[core_type]
        cid, out = wire.decode_response(data, request_type, version)
    assert cid == 5
    assert out == _expected(core_type, version, msg)


@pytest.mark.parametrize("core_type, version", CASES, ids=_IDS)
def test_kraftlog_encodes_and_kafka_python_decodes_the_same_fields(core_type: type, version: int) -> None:
    """kraftlog's bytes at every version decode in kafka-python to the fields of the core message."""
    msg = _sample(core_type, version)
    is_request = core_type in m.REQUEST_TYPES
    data = (wire.encode_request(msg, 6, client_id="kraftlog", version=version) if is_request
            else wire.encode_response(msg, 6, version=version))
    decoded = _KP[core_type].decode(data, version=version, header=True)
    assert decoded.header.correlation_id == 6
    assert _from_kp(core_type, decoded, version) == _expected(core_type, version, msg)


# ------------------------------------------------------------------ ranges: what clients send
def test_supported_api_versions_advertise_the_client_apis() -> None:
    """ApiVersions answers list the new APIs with the ranges clients pick from (highest common)."""
    by_key = wire.supported_api_versions()
    assert {k: by_key[k] for k in (1, 11, 12, 13, 14, 18, 20, 32)} == {
        1: (4, 15),  # Fetch: kafka-python v12, librdkafka 2.0.2 v11, 2.16 v15
        11: (0, 9),  # JoinGroup: librdkafka v5, kafka-python v7
        12: (0, 4),  # Heartbeat: librdkafka v3, kafka-python v4
        13: (0, 5),  # LeaveGroup: librdkafka v1, kafka-python v5
        14: (0, 5),  # SyncGroup: librdkafka v3, kafka-python v5
        18: (0, 3),  # ApiVersions: librdkafka v3, kafka-python v4 then v3
        20: (1, 6),  # DeleteTopics: librdkafka v1 (2.16: v4), kafka-python v6
        32: (1, 4),  # DescribeConfigs: librdkafka v1, kafka-python v4
    }


# ------------------------------------------------------------------------------ LeaveGroup
@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_group_before_v3_names_exactly_one_member(version: int) -> None:
    """LeaveGroup v0-v2 carry one top-level MemberId (KIP-345 batched members in v3)."""
    with pytest.raises(wire.WireError):
        wire.encode_request(SAMPLES[m.LeaveGroupRequest], 1, version=version)
    with pytest.raises(wire.WireError):
        wire.encode_request(m.LeaveGroupRequest("orders-app", ()), 1, version=version)
    one = m.LeaveGroupRequest("orders-app", (m.MemberIdentity("rdkafka-1"),))
    entity = wire.to_kio(one, version)
    assert entity.member_id == "rdkafka-1" and not hasattr(entity, "members")
    assert wire.roundtrip(one, version=version) == one


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_group_response_before_v3_folds_the_member_error(version: int) -> None:
    """Kafka's LeaveGroupResponse for v0-v2: the top-level error if set, else the first member error."""
    members = (m.LeaveGroupMemberResponse("a", Errors.NONE),
               m.LeaveGroupMemberResponse("b", Errors.UNKNOWN_MEMBER_ID),
               m.LeaveGroupMemberResponse("c", Errors.FENCED_INSTANCE_ID))
    folded = wire.roundtrip(m.LeaveGroupResponse(Errors.NONE, members), version=version)
    assert folded == m.LeaveGroupResponse(Errors.UNKNOWN_MEMBER_ID)
    top = wire.roundtrip(m.LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, members), version=version)
    assert top.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    # From v3 the members travel as they are.
    assert wire.roundtrip(m.LeaveGroupResponse(Errors.NONE, members), version=3).members == members


# ------------------------------------------------------------------------------- JoinGroup
@pytest.mark.parametrize("version", range(0, 10))
def test_join_group_error_answer_has_no_protocol_name(version: int) -> None:
    """An error answer has no chosen protocol: null from v7, "" before (non-nullable there, and what
    Kafka writes)."""
    msg = m.JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id="rdkafka-0b5e")
    entity = wire.to_kio(msg, version)
    assert entity.protocol_name == ("" if version < 7 else None)
    out = wire.roundtrip(msg, version=version)
    assert out.protocol_name == ("" if version < 7 else None)
    assert (out.error_code, out.member_id, out.generation_id) == (Errors.MEMBER_ID_REQUIRED,
                                                                  "rdkafka-0b5e", -1)


def test_join_group_v0_has_no_rebalance_timeout() -> None:
    """JoinGroup v0 (librdkafka's 0.9.0 fallback table) has no RebalanceTimeout: -1, the session timeout."""
    out = wire.roundtrip(SAMPLES[m.JoinGroupRequest], version=0)
    assert out.rebalance_timeout_ms == -1 and out.session_timeout_ms == 45000


# ----------------------------------------------------------------------------- ApiVersions
@pytest.mark.parametrize("version", range(0, 4))
def test_api_versions_answers_with_response_header_v0(version: int) -> None:
    """KIP-511: the ApiVersions response header is v0 (no tagged fields) even at flexible v3, and
    kafka-python's own ApiVersions parser reads our answer."""
    msg = SAMPLES[m.ApiVersionsResponse]
    data = wire.encode_response(msg, 12, version=version)
    header_v0 = wire.to_kio(msg, version).__header_schema__
    assert header_v0.__name__ == "ResponseHeader" and "response_header.v0" in header_v0.__module__
    assert data[:4] == struct.pack(">i", 12) and data[4:6] == b"\x00\x00"  # error code right after
    kp = KpApiVersionsResponse.decode(data, version=version, header=True)
    assert [(a.api_key, a.min_version, a.max_version) for a in kp.api_keys] == [
        (0, 3, 9), (1, 4, 15), (18, 0, 3)]
    assert wire.decode_response(data, m.ApiVersionsRequest, version) == (12, _expected(
        m.ApiVersionsResponse, version, msg))


@pytest.mark.parametrize("version", range(0, 4))
def test_api_versions_error_answer_has_a_v0_body(version: int) -> None:
    """An error answer is written and read as v0 at every version (kafka-python reads any error
    answer as v0; Kafka answers UNSUPPORTED_VERSION so): the same bytes as the framing layer's
    KIP-511 answer."""
    supported = wire.supported_api_versions()
    msg = m.ApiVersionsResponse(Errors.UNSUPPORTED_VERSION,
                                tuple(m.ApiVersion(k, lo, hi) for k, (lo, hi) in supported.items()))
    data = wire.encode_response(msg, 3, version=version)
    assert wire.frame(data) == framing.api_versions_error_reply(3, supported)
    kp = KpApiVersionsResponse.decode(data, version=version, header=True)
    assert kp.error_code == 35 and len(kp.api_keys) == len(supported)
    assert wire.decode_response(data, m.ApiVersionsRequest, version) == (3, msg)


def test_api_versions_v0_request_has_no_client_software() -> None:
    """librdkafka's fallback (and kafka-python's after v3 fails) is v0: no KIP-511 fields."""
    out = wire.roundtrip(SAMPLES[m.ApiVersionsRequest], version=0)
    assert out == m.ApiVersionsRequest()


# ---------------------------------------------------------------------------- DeleteTopics
def test_delete_topics_v6_by_name_is_a_list_of_topic_structs() -> None:
    """DeleteTopics v6 (KIP-516) lists {Name, TopicId}; by name the id is the zero UUID (kio: None)."""
    entity = wire.to_kio(SAMPLES[m.DeleteTopicsRequest], 6)
    assert [(t.name, t.topic_id) for t in entity.topics] == [("orders", None), ("payments", None)]


def test_delete_topics_v6_by_id_decodes_to_topic_ids() -> None:
    """KIP-516: a v6 entry with a null Name names its topic by id; the core keeps names and ids apart
    (Kafka's ControllerApis.deleteTopics), and both round-trip."""
    from kafka.protocol.admin.topics import DeleteTopicsRequest as KpDeleteTopicsRequest

    req = KpDeleteTopicsRequest(version=6, timeout_ms=1000, topics=[
        KpDeleteTopicsRequest.DeleteTopicState(version=6, name=None, topic_id=T1),
        KpDeleteTopicsRequest.DeleteTopicState(version=6, name="orders", topic_id=None)])
    *_, out = wire.decode_request_frame(_kp_bytes(req, True))
    assert (out.topic_names, out.topic_ids, out.timeout_ms) == (("orders",), (T1,), 1000)
    assert wire.roundtrip(out, version=6) == out


# ------------------------------------------------------------------------------ DescribeConfigs
def test_describe_configs_null_keys_ask_for_every_config() -> None:
    """librdkafka sends DescribeConfigs v1 with null ConfigurationKeys: every config."""
    msg = m.DescribeConfigsRequest((m.DescribeConfigsResource(m.RESOURCE_TOPIC, "orders"),))
    assert wire.to_kio(msg, 1).resources[0].configuration_keys is None
    assert wire.roundtrip(msg, version=1) == msg


# ------------------------------------------------------------------------------------ Fetch
BATCH_H = RecordBatch(
    base_offset=14, partition_leader_epoch=5,
    records=(Record(1_700_000_000_500, b"k", b"v", (("trace-id", b"\x01\x02"), ("empty", None))),
             Record(1_700_000_000_501, None, b"w")),
    producer_id=77, producer_epoch=1, base_sequence=3)


def _kp_fetch_request(version: int) -> Any:
    """A consumer's Fetch as kafka-python's fetcher builds it (session fields set, as with KIP-227)."""
    topic_cls, part_cls = KpFetchRequest.FetchTopic, KpFetchRequest.FetchTopic.FetchPartition

    def topic(name: str, tid: uuid.UUID, parts: list[tuple[int, int]]) -> Any:
        key = {"topic": name} if version < 13 else {"topic_id": tid}
        return topic_cls(version=version, **key, partitions=[
            part_cls(version=version, partition=p, current_leader_epoch=4, fetch_offset=off,
                     last_fetched_epoch=3, log_start_offset=-1, partition_max_bytes=1 << 20)
            for p, off in parts])

    replica = ({"replica_id": -1} if version < 15
               else {"replica_state": KpFetchRequest.ReplicaState(version=version, replica_id=-1,
                                                                  replica_epoch=-1)})
    return KpFetchRequest(
        version=version, **replica, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
        isolation_level=1, session_id=0, session_epoch=0,
        topics=[topic("orders", T1, [(0, 10), (2, 0)]), topic("payments", T2, [(1, 99)])],
        forgotten_topics_data=[], rack_id="")


@pytest.mark.parametrize("version", range(4, 16))
def test_fetch_request_from_kafka_python_names_topics_before_v13_and_ids_after(version: int) -> None:
    """kafka-python's Fetch decodes with ``topic`` (v4-v12, topic_id the zero UUID) or ``topic_id``
    (v13-v15, topic "") on each partition, its fields as far as the version has them."""
    _, _, _, _, out = wire.decode_request_frame(_kp_bytes(_kp_fetch_request(version), True))
    assert type(out) is m.FetchRequest
    assert (out.replica_id, out.max_wait_ms, out.min_bytes, out.max_bytes, out.isolation_level) == (
        -1, 500, 1, 52428800, 1)
    names = {T1: "orders", T2: "payments"}
    got = [(p.topic, p.topic_id, p.partition, p.fetch_offset) for p in out.partitions]
    want = [(names[t], t, p, off) for t, p, off in ((T1, 0, 10), (T1, 2, 0), (T2, 1, 99))]
    if version < 13:
        assert got == [(name, ZERO, p, off) for name, _, p, off in want]
    else:
        assert got == [("", tid, p, off) for _, tid, p, off in want]
    first = out.partitions[0]
    assert first.current_leader_epoch == (4 if version >= 9 else -1)
    assert first.last_fetched_epoch == (3 if version >= 12 else -1)
    assert first.partition_max_bytes == 1 << 20


@pytest.mark.parametrize("version", range(7, 16))
def test_fetch_request_session_fields_are_ignored(version: int) -> None:
    """KIP-227 sessions: a request's SessionId/SessionEpoch decode to the same core message, and the
    core's request goes out sessionless (SessionId 0, SessionEpoch -1: a full fetch)."""
    kp = _kp_fetch_request(version)
    plain = wire.decode_request_frame(_kp_bytes(kp, True))[4]
    kp.session_id, kp.session_epoch = 42, 7
    assert wire.decode_request_frame(_kp_bytes(kp, True))[4] == plain
    entity = wire.to_kio(plain, version)
    assert (entity.session_id, entity.session_epoch) == (0, -1)


def _fetch_response(version: int) -> m.FetchResponse:
    """What the broker answers a client: ``topic`` filled when the request named topics."""
    by_name = version < 13
    return m.FetchResponse(Errors.NONE, (
        m.FetchPartitionResponse(ZERO if by_name else T1, 0, Errors.NONE, high_watermark=16,
                                 last_stable_offset=15, log_start_offset=2, records=(BATCH_H,),
                                 topic="orders" if by_name else ""),
        m.FetchPartitionResponse(ZERO if by_name else T2, 1, Errors.NOT_LEADER_OR_FOLLOWER,
                                 topic="payments" if by_name else ""),
    ), throttle_time_ms=0)


@pytest.mark.parametrize("version", range(4, 16))
def test_fetch_response_reads_in_kafka_python(version: int) -> None:
    """Our Fetch response as kafka-python reads it: topics by name (v4-v12) or id (v13+), LSO,
    AbortedTransactions an empty list (not null), LogStartOffset (v5+), PreferredReadReplica -1 (v11+),
    SessionId 0 (v7+: session declined), and the batch with its record headers."""
    msg = _fetch_response(version)
    data = wire.encode_response(msg, 8, version=version)
    kp = KpFetchResponse.decode(data, version=version, header=True)
    if version >= 7:
        assert (kp.error_code, kp.session_id) == (0, 0)
    keys = [t.topic if version < 13 else t.topic_id for t in kp.responses]
    assert keys == (["orders", "payments"] if version < 13 else [T1, T2])
    p0 = kp.responses[0].partitions[0]
    assert (p0.partition_index, p0.error_code, p0.high_watermark, p0.last_stable_offset) == (0, 0, 16, 15)
    assert p0.aborted_transactions == []
    if version >= 5:
        assert p0.log_start_offset == 2
    if version >= 11:
        assert p0.preferred_read_replica == -1
    batch = DefaultRecordBatch(bytes(p0.records))
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch] == [
        (14, 1_700_000_000_500, b"k", b"v", [("trace-id", b"\x01\x02"), ("empty", None)]),
        (15, 1_700_000_000_501, None, b"w", [])]
    if version < 5:  # LogStartOffset is v5+
        msg.partitions = tuple(dataclasses.replace(p, log_start_offset=-1) for p in msg.partitions)
    assert wire.decode_response(data, m.FetchRequest, version) == (8, msg)


@pytest.mark.parametrize("version", range(4, 16))
def test_fetch_response_from_kafka_python_decodes(version: int) -> None:
    """A Fetch response kafka-python writes (null AbortedTransactions, as some brokers send) decodes."""
    data_cls = KpFetchResponse.FetchableTopicResponse.PartitionData
    key = {"topic": "orders"} if version < 13 else {"topic_id": T1}
    kp = KpFetchResponse(version=version, throttle_time_ms=3, error_code=0, session_id=0, responses=[
        KpFetchResponse.FetchableTopicResponse(version=version, **key, partitions=[data_cls(
            version=version, partition_index=0, error_code=0, high_watermark=16, last_stable_offset=15,
            log_start_offset=2, aborted_transactions=None, preferred_read_replica=-1,
            records=wire.encode_batches((BATCH_H,)))])])
    _, out = wire.decode_response(_kp_bytes(kp, False), m.FetchRequest, version)
    (p,) = out.partitions
    assert (p.topic, p.topic_id) == (("orders", ZERO) if version < 13 else ("", T1))
    assert (p.high_watermark, p.last_stable_offset, p.records) == (16, 15, (BATCH_H,))
    assert p.log_start_offset == (2 if version >= 5 else -1)
    assert out.throttle_time_ms == 3


# ---------------------------------------------------------------------------- record headers
def test_record_headers_roundtrip_in_order_with_repeats_and_null_values() -> None:
    """Kafka's headers are an ordered list: repeated keys and null values survive the codec."""
    batch = RecordBatch(0, 0, (Record(5, b"k", b"v", (("a", b"1"), ("a", b"2"), ("b", None), ("", b""))),
                               Record(6, None, None)))
    assert wire.decode_batches(wire.encode_batches((batch,))) == (batch,)
    kp = DefaultRecordBatch(wire.encode_batches((batch,)))
    assert [r.headers for r in kp][0] == [("a", b"1"), ("a", b"2"), ("b", None), ("", b"")]


def test_record_header_key_that_is_not_utf8_survives() -> None:
    """A header key is bytes on the wire: bytes that are not UTF-8 (here the lone byte e9) decode to a
    str through surrogateescape and go back out as the same bytes."""
    batch = RecordBatch(0, 0, (Record(5, None, b"v", (("k\udce9", b"x"),)),))
    data = wire.encode_batches((batch,))
    assert b"\x04k\xe9\x02x" in data  # key length 2 (zig-zag 4), "k" e9, value length 1, "x"
    assert wire.decode_batches(data) == (batch,)
    utf8 = RecordBatch(0, 0, (Record(5, None, b"v", (("k\xe9", b"x"),)),))  # "ké": c3 a9 on the wire
    assert b"\x06k\xc3\xa9" in wire.encode_batches((utf8,))
    assert wire.decode_batches(wire.encode_batches((utf8,))) == (utf8,)


@pytest.mark.parametrize("records", [
    (Record(1, b"kk", b"vvv"),),
    (Record(1, b"kk", b"vvv", (("trace", b"0123"), ("x", None), ("k\udce9", b""))),),
    (Record(1_700_000_000_000, None, None), Record(1_699_999_999_000, b"k" * 300, b"v" * 70_000)),
    tuple(Record(i * 1000, None, b"%d" % i) for i in range(200)),
], ids=["plain", "headers", "negative-delta-and-long-values", "200-records"])
def test_size_bytes_is_the_exact_encoded_size(records) -> None:
    """size_bytes is Kafka's sizeInBytes, computed without encoding: it equals the encoded length
    (varint lengths of deltas, keys, values and headers included) and the encoded batch's own size."""
    batch = RecordBatch(7, 3, records, producer_id=9, producer_epoch=1, base_sequence=5)
    data = wire.encode_batches((batch,))
    assert batch.size_bytes == len(data)
    (encoded,) = wire.decode_batches(data)
    assert encoded.size_bytes == len(data) and encoded.is_encoded and encoded == batch


def test_null_header_key_is_corrupt() -> None:
    """Kafka's header key is a non-null String: a null key is CORRUPT_MESSAGE."""
    good = bytearray(wire.encode_batches((RecordBatch(0, 0, (Record(5, None, b"v", (("h", b"x"),)),)),)))
    at = good.index(b"\x02h")  # key length 1 (zig-zag 2), "h"
    bad = bytes(good[:at]) + b"\x01" + bytes(good[at + 2:])  # null key (zig-zag -1), one byte shorter
    bad = bytearray(bad)
    bad[61] -= 1  # record length
    bad[8:12] = struct.pack(">i", len(bad) - 12)
    bad[17:21] = struct.pack(">I", crc32c(bytes(bad[21:])))
    (batch,) = wire.decode_batches(bytes(bad))  # the framing and CRC are valid: kept opaque
    with pytest.raises(wire.CorruptRecordError):
        _ = batch.records


# ------------------------------------------------------------------------- compressed batches
def _kp_batch(compression: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=4321,
        producer_epoch=3, base_sequence=40, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_100, key=b"k0", value=b"v" * 200,
                   headers=[("trace-id", b"abc"), ("n", None)])
    builder.append(1, timestamp=1_700_000_000_050, key=None, value=b"w" * 200, headers=[])
    builder.append(2, timestamp=1_700_000_000_900, key=b"k2", value=None, headers=[("x", b"")])
    return bytes(builder.build())


GZIP_RECORDS = (
    Record(1_700_000_000_100, b"k0", b"v" * 200, (("trace-id", b"abc"), ("n", None))),
    Record(1_700_000_000_050, None, b"w" * 200),
    Record(1_700_000_000_900, b"k2", None, (("x", b""),)),
)


def test_gzip_batch_from_kafka_python_stays_compressed_and_its_records_decode() -> None:
    """A producer's gzip batch is kept as the producer's bytes (Kafka's compression.type=producer):
    header fields read, compression bits kept, re-encoded verbatim; its records inflate on demand to
    the same records (headers, exact ms timestamps, a negative delta). Stamped by a leader, the copy
    keeps a valid CRC, and kafka-python reads the same records from it."""
    data = _kp_batch(DefaultRecordBatch.CODEC_GZIP)
    assert DefaultRecordBatch(data).compression_type == 1
    (batch,) = wire.decode_batches(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.record_count,
            batch.attributes & 7) == (4321, 3, 40, 3, 1)
    assert wire.encode_batches((batch,)) == data
    assert batch.records == GZIP_RECORDS
    stamped = DefaultRecordBatch(wire.encode_batches((batch.with_offsets(500, 7),)))
    assert stamped.compression_type == 1 and stamped.validate_crc()
    assert (stamped.base_offset, stamped.leader_epoch) == (500, 7)
    assert [(r.timestamp, r.key, r.value, r.headers) for r in stamped] == [
        (r.timestamp, r.key, r.value, list(r.headers)) for r in GZIP_RECORDS]
    head = batch.truncated_before(2)  # a cut inside the batch: an uncompressed prefix
    assert head.attributes & 7 == 0 and head.records == GZIP_RECORDS[:2]


def test_gzip_batch_in_a_produce_request_decodes() -> None:
    """The same batch inside a Produce v9 request as a client frames it."""
    from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest

    tp = KpProduceRequest.TopicProduceData
    req = KpProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        tp(version=9, name="orders", partition_data=[
            tp.PartitionProduceData(version=9, index=0, records=_kp_batch(1))])])
    _, _, _, _, out = wire.decode_request_frame(_kp_bytes(req, True))
    (part,) = out.partitions
    assert (part.topic, part.partition) == ("orders", 0)
    assert part.records[0].records == GZIP_RECORDS


def test_damaged_gzip_stream_is_corrupt() -> None:
    data = bytearray(_kp_batch(DefaultRecordBatch.CODEC_GZIP))
    data[-4:] = b"\xff\xff\xff\xff"  # gzip trailer (CRC-32/size of the stream), then fix the batch CRC
    data[17:21] = struct.pack(">I", crc32c(bytes(data[21:])))
    (batch,) = wire.decode_batches(bytes(data))
    with pytest.raises(wire.CorruptRecordError) as err:
        _ = batch.records
    assert err.value.error_code == Errors.CORRUPT_MESSAGE


def _with_codec(codec: int, payload: bytes) -> bytes:
    """An uncompressed batch's header with compression bits ``codec`` over ``payload``, CRC fixed."""
    plain = bytearray(wire.encode_batches((RecordBatch(0, 0, (Record(1, None, b"v"),)),)))
    head = plain[:61]
    struct.pack_into(">h", head, 21, codec)
    data = head + payload
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize("codec, name", [(2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_codec_without_its_library_is_unsupported_compression_type(codec: int, name: str) -> None:
    """snappy, lz4 and zstd batches are stored and served as they are; their records decode only where
    their Python libraries are installed; without, reading them is Kafka's UNSUPPORTED_COMPRESSION_TYPE
    (76)."""
    if getattr(kafka_codec, f"has_{name}")():
        pytest.skip(f"{name} is installed here")
    data = _with_codec(codec, b"\x00" * 8)
    (batch,) = wire.decode_batches(data)
    assert wire.encode_batches((batch,)) == data
    with pytest.raises(wire.UnsupportedCompressionError) as err:
        _ = batch.records
    assert err.value.error_code == Errors.UNSUPPORTED_COMPRESSION_TYPE == 76
    assert isinstance(err.value, wire.CorruptRecordError)


def test_unknown_codec_is_corrupt() -> None:
    """Compression types 5-7 are not Kafka's."""
    (batch,) = wire.decode_batches(_with_codec(5, gzip.compress(b"")))
    with pytest.raises(wire.CorruptRecordError) as err:
        _ = batch.records
    assert err.value.error_code == Errors.CORRUPT_MESSAGE


def test_kio_records_loses_what_the_codec_keeps() -> None:
    """Why wire.py keeps its own v2 codec (module docstring): kio 0.6.5's read_batch truncates
    timestamps to whole seconds and cannot read a record without a timestamp (-1). If a kio upgrade
    fixes both, the codec choice is worth measuring again."""
    data = wire.encode_batches((RecordBatch(0, 0, (Record(1_700_000_000_123, None, b"v"),)),))
    kio_batch, _ = kio_read_batch(data, 0)
    assert int(kio_batch.records[0].timestamp.timestamp() * 1000) == 1_700_000_000_000  # not ..._123
    assert wire.decode_batches(data)[0].records[0].timestamp == 1_700_000_000_123
    no_ts = wire.encode_batches((RecordBatch(0, 0, (Record(-1, None, b"v"),)),))
    with pytest.raises(TypeError):
        kio_read_batch(no_ts, 0)
    assert wire.decode_batches(no_ts)[0].records[0].timestamp == -1


def test_a_null_array_where_kafka_forbids_one_decodes_as_empty():
    """kio reads a -1 length array as None even where Kafka's schema says "not nullable"; the core, whose
    field cannot hold None, gets () (found by the real-cluster fuzz: a DescribeConfigs with null
    resources crashed the broker's handler)."""
    from kio.index import load_request_schema

    from kraftlog.protocol import wire
    kio_type = load_request_schema(32, 3)
    entity = kio_type(resources=None, include_synonyms=False, include_documentation=False)
    msg = wire.from_kio(entity, m.DescribeConfigsRequest)
    assert msg.resources == ()
