"""The wire for KIP-966 part 2 (level ``urm``): GetReplicaLogInfo v0 (API key 93) and ElectLeaders v3.

kio 0.6.5 has neither schema; ``kraftlog.protocol.kio_extra`` writes them in kio's generated style
(from Kafka trunk's GetReplicaLogInfo{Request,Response}.json and KIP-966's ElectLeaders v3 JSON) and
the table-driven wire maps them. Rules proved here:

* each new message round-trips at its version through encode_request/decode_request_frame and
  encode_response/decode_response, and kio's own entity_reader/entity_writer read and write the
  kio_extra entities;
* the bytes are Kafka's layout, field by field, as the JSON specs give it (hand-built below);
* ElectLeaders v3 carries election types 2..4 and DesiredLeaders; v0..v2 still refuse them;
* nothing is advertised that no node implements (DESIGN.md): ApiVersions still says ElectLeaders 0-2
  and has no key 93, on every listener.
"""

from __future__ import annotations

import io
import struct
import uuid

import pytest
from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest as KioElectLeadersV2
from kio.serial import entity_reader, entity_writer

from kraftlog.level import Level
from kraftlog.protocol import kio_extra, wire
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors

T1 = uuid.UUID("5c1a7e0e-0000-4000-8000-000000000001")
T2 = uuid.UUID("5c1a7e0e-0000-4000-8000-000000000002")

GRLI_REQUEST = m.GetReplicaLogInfoRequest((
    m.GetReplicaLogInfoPartition(T1, 0),
    m.GetReplicaLogInfoPartition(T1, 2),
    m.GetReplicaLogInfoPartition(T2, 1),
))
GRLI_RESPONSE = m.GetReplicaLogInfoResponse(
    broker_epoch=4242,
    partitions=(
        m.PartitionLogInfo(T1, 0, last_written_leader_epoch=3, current_leader_epoch=4, log_end_offset=120),
        m.PartitionLogInfo(T1, 2, 3, 4, 97),
        m.PartitionLogInfo(T2, 1, -1, -1, -1, Errors.NOT_LEADER_OR_FOLLOWER),
    ),
    has_more_data=True,
    throttle_time_ms=7,
)
DESIGNATION = m.ElectLeadersRequest(
    election_type=m.ELECTION_DESIGNATION,
    partitions=(
        m.ElectLeadersPartition("orders", 0, desired_leader=2),
        m.ElectLeadersPartition("orders", 1, desired_leader=3),
        m.ElectLeadersPartition("payments", 0, desired_leader=1),
    ),
    timeout_ms=15000,
)
ELECT_RESPONSE = m.ElectLeadersResponse(Errors.NONE, (
    m.ElectLeadersResult("orders", 0, Errors.NONE),
    m.ElectLeadersResult("orders", 1, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no eligible leader"),
    m.ElectLeadersResult("payments", 0, Errors.ELECTION_NOT_NEEDED),
))


# ----------------------------------------------------------------- byte helpers (Kafka's encodings)
def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _compact_len(n: int) -> bytes:  # compact arrays and strings: length + 1 (0 = null)
    return _uvarint(n + 1)


def _compact_str(s: str) -> bytes:
    return _compact_len(len(s.encode())) + s.encode()


def _i32s(values: tuple[int, ...]) -> bytes:
    return _compact_len(len(values)) + b"".join(struct.pack(">i", v) for v in values)


NO_TAGS = b"\x00"


def _request_header_v2(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    # Request header v2: key, version, correlation id, client id (a *non-compact* nullable string), tags.
    return (struct.pack(">hhi", api_key, version, correlation_id)
            + struct.pack(">h", len(client_id)) + client_id.encode() + NO_TAGS)


# ------------------------------------------------------------------------------- the schemas
def test_kio_has_no_schema_for_these_so_kio_extra_does() -> None:
    """kio 0.6.5 has no GetReplicaLogInfo (key 93) and no ElectLeaders v3 (issue 10, "Wire"); kio_extra
    supplies exactly those, and the wire picks them up as the fallback (wire._schema). If kio ever
    ships them, this test says the fallback is no longer needed."""
    for key, version in ((93, 0), (43, 3)):
        with pytest.raises(KioIndexError):
            load_request_schema(key, version)
        with pytest.raises(KioIndexError):
            load_response_schema(key, version)
    assert set(kio_extra.REQUESTS) == set(kio_extra.RESPONSES) == {(43, 3), (93, 0)}
    with pytest.raises(KioIndexError):
        kio_extra.load_request_schema(93, 1)
    assert wire.to_kio(GRLI_REQUEST).__class__ is kio_extra.load_request_schema(93, 0)
    assert wire.to_kio(ELECT_RESPONSE, 3).__class__ is kio_extra.load_response_schema(43, 3)


@pytest.mark.parametrize("entity_type", [*kio_extra.REQUESTS.values(), *kio_extra.RESPONSES.values()],
                         ids=lambda t: f"{t.__module__.split('kio_extra.')[1]}")
def test_kio_reads_and_writes_the_kio_extra_entities(entity_type: type) -> None:
    """kio's generated shape (kio/schema/elect_leaders/v2/*.py): ``__type__``, ``__version__``,
    ``__flexible__`` (every version here is flexible), ``__api_key__``, ``__header_schema__`` (request
    header v2 / response header v1); kio's entity_reader/entity_writer accept them as they are."""
    version = 0 if entity_type.__api_key__ == 93 else 3
    assert entity_type.__version__ == version and entity_type.__flexible__ is True
    is_request = entity_type in kio_extra.REQUESTS.values()
    assert entity_type.__header_schema__.__module__.endswith(
        "request_header.v2.header" if is_request else "response_header.v1.header")
    core = {(93, True): GRLI_REQUEST, (93, False): GRLI_RESPONSE,
            (43, True): DESIGNATION, (43, False): ELECT_RESPONSE}[(entity_type.__api_key__, is_request)]
    entity = wire.to_kio(core, version)
    assert type(entity) is entity_type
    out = io.BytesIO()
    entity_writer(entity_type)(out, entity)
    data = out.getvalue()
    back, size = entity_reader(entity_type)(data, 0)
    assert size == len(data) and back == entity


# ------------------------------------------------------------------------- GetReplicaLogInfo v0
def test_get_replica_log_info_request_roundtrips_at_v0() -> None:
    """GetReplicaLogInfo v0 request (trunk's JSON): partitions grouped by topic id on the wire,
    flattened in the core; decode_request_frame returns key 93, version 0."""
    data = wire.encode_request(GRLI_REQUEST, 11, client_id="controller", version=0)
    assert wire.decode_request_frame(data) == (93, 0, 11, "controller", GRLI_REQUEST)
    assert wire.roundtrip(GRLI_REQUEST) == GRLI_REQUEST
    empty = m.GetReplicaLogInfoRequest(())
    assert wire.roundtrip(empty) == empty


def test_get_replica_log_info_response_roundtrips_at_v0() -> None:
    """GetReplicaLogInfo v0 response: BrokerEpoch, HasMoreData, and per partition LastWrittenLeaderEpoch,
    CurrentLeaderEpoch, LogEndOffset, ErrorCode (trunk's JSON; KIP-966 "GetReplicaLogInfo Response")."""
    data = wire.encode_response(GRLI_RESPONSE, 12, version=0)
    assert wire.decode_response(data, m.GetReplicaLogInfoRequest, 0) == (12, GRLI_RESPONSE)
    assert wire.roundtrip(GRLI_RESPONSE) == GRLI_RESPONSE


def test_get_replica_log_info_request_bytes_are_trunks_layout() -> None:
    """Hand-built from trunk's GetReplicaLogInfoRequest.json (flexibleVersions 0+): request header v2,
    then TopicPartitions as a compact array of {TopicId uuid, Partitions compact []int32, tags}, then
    the top-level tags. No BrokerId (the KIP's JSON had one; trunk has none)."""
    msg = m.GetReplicaLogInfoRequest((m.GetReplicaLogInfoPartition(T1, 0), m.GetReplicaLogInfoPartition(T1, 5)))
    expected = (_request_header_v2(93, 0, 7, "ctl")
                + _compact_len(1) + T1.bytes + _i32s((0, 5)) + NO_TAGS
                + NO_TAGS)
    assert wire.encode_request(msg, 7, client_id="ctl") == expected
    assert wire.decode_request(expected) == (7, msg)


def test_get_replica_log_info_response_bytes_are_trunks_layout() -> None:
    """Hand-built from trunk's GetReplicaLogInfoResponse.json: response header v1 (correlation id, tags),
    ThrottleTimeMs int32, BrokerEpoch int64, HasMoreData bool, TopicPartitionLogInfoList compact array
    of {TopicId, PartitionLogInfo compact array of {Partition int32, LastWrittenLeaderEpoch int32,
    CurrentLeaderEpoch int32, LogEndOffset int64, ErrorCode int16, tags}, tags}, tags."""
    msg = m.GetReplicaLogInfoResponse(
        broker_epoch=2 ** 40 + 3,
        partitions=(m.PartitionLogInfo(T2, 4, 6, 7, 2 ** 33, Errors.NOT_LEADER_OR_FOLLOWER),),
        has_more_data=True, throttle_time_ms=9)
    expected = (struct.pack(">i", 21) + NO_TAGS
                + struct.pack(">iq?", 9, 2 ** 40 + 3, True)
                + _compact_len(1) + T2.bytes
                + _compact_len(1) + struct.pack(">iiiqh", 4, 6, 7, 2 ** 33, 6) + NO_TAGS
                + NO_TAGS
                + NO_TAGS)
    assert wire.encode_response(msg, 21) == expected
    assert wire.decode_response(expected, m.GetReplicaLogInfoRequest) == (21, msg)


# ----------------------------------------------------------------------------- ElectLeaders v3
@pytest.mark.parametrize("election_type", [m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN,
                                           m.ELECTION_LONGEST_LOG_BALANCED, m.ELECTION_LONGEST_LOG_AGGRESSIVE,
                                           m.ELECTION_DESIGNATION])
def test_elect_leaders_v3_carries_every_election_type(election_type: int) -> None:
    """KIP-966's ElectLeaders v3: election types 0..4 (PREFERRED, UNCLEAN, LONGEST_LOG_BALANCED,
    LONGEST_LOG_AGGRESSIVE, DESIGNATION) cross the wire at v3, with or without DesiredLeaders."""
    for msg in (DESIGNATION,
                m.ElectLeadersRequest(election_type, (m.ElectLeadersPartition("orders", 4),), 1000)):
        msg = m.ElectLeadersRequest(election_type, msg.partitions, msg.timeout_ms)
        data = wire.encode_request(msg, 5, client_id="admin", version=3)
        assert wire.decode_request_frame(data) == (43, 3, 5, "admin", msg)
        assert wire.roundtrip(msg, version=3) == msg


def test_elect_leaders_v3_response_roundtrips() -> None:
    """The KIP changes no response field: v3's response is v2's layout at version 3."""
    data = wire.encode_response(ELECT_RESPONSE, 6, version=3)
    assert wire.decode_response(data, m.ElectLeadersRequest, 3) == (6, ELECT_RESPONSE)
    assert data == wire.encode_response(ELECT_RESPONSE, 6, version=2)


def test_elect_leaders_v3_desired_leaders_match_partitions_by_index() -> None:
    """KIP-966: "The entry [of DesiredLeaders] should match with the entry in Partitions by the index";
    DesiredLeaders sits after Partitions in each topic entry. Hand-built v3 bytes: ElectionType int8,
    TopicPartitions compact array of {Topic compact string, Partitions, DesiredLeaders, tags},
    TimeoutMs int32, tags. A topic with no desired leader sends an empty DesiredLeaders."""
    msg = m.ElectLeadersRequest(m.ELECTION_DESIGNATION, (
        m.ElectLeadersPartition("a", 0, desired_leader=5),
        m.ElectLeadersPartition("a", 3, desired_leader=6),
        m.ElectLeadersPartition("b", 1),
    ), timeout_ms=1500)
    expected = (_request_header_v2(43, 3, 8, "admin")
                + struct.pack(">b", 4)
                + _compact_len(2)
                + _compact_str("a") + _i32s((0, 3)) + _i32s((5, 6)) + NO_TAGS
                + _compact_str("b") + _i32s((1,)) + _i32s(()) + NO_TAGS
                + struct.pack(">i", 1500) + NO_TAGS)
    assert wire.encode_request(msg, 8, client_id="admin", version=3) == expected
    assert wire.decode_request(expected) == (8, msg)


def test_elect_leaders_v3_is_kios_v2_plus_desired_leaders() -> None:
    """Against kio's own generated v2 (an independent encoding of the fields v2 and v3 share): without
    desired leaders, v3's bytes are v2's with one empty DesiredLeaders (0x01) after each topic's
    Partitions, and the header's version 3 instead of 2."""
    msg = m.ElectLeadersRequest(m.ELECTION_UNCLEAN, (m.ElectLeadersPartition("orders", 1),), 20000)
    v2 = wire.encode_request(msg, 3, version=2)
    assert type(wire.to_kio(msg, 2)) is KioElectLeadersV2
    v3 = wire.encode_request(msg, 3, version=3)
    header = len(_request_header_v2(43, 2, 3, "kraftlog"))
    topic_end = header + 1 + 1 + len(_compact_str("orders")) + len(_i32s((1,)))
    assert v3[:2] == v2[:2] and struct.unpack_from(">h", v3, 2)[0] == 3 and v3[4:header] == v2[4:header]
    assert v3[header:] == v2[header:topic_end] + _compact_len(0) + v2[topic_end:]


def test_elect_leaders_v3_null_desired_leaders_means_none() -> None:
    """DesiredLeaders is nullable from v3 (KIP-966): null decodes like empty, every partition without a
    desired leader (-1)."""
    data = (_request_header_v2(43, 3, 1, "x") + struct.pack(">b", 0) + _compact_len(1)
            + _compact_str("a") + _i32s((0, 1)) + b"\x00" + NO_TAGS + struct.pack(">i", 100) + NO_TAGS)
    assert wire.decode_request(data)[1] == m.ElectLeadersRequest(
        m.ELECTION_PREFERRED, (m.ElectLeadersPartition("a", 0), m.ElectLeadersPartition("a", 1)), 100)


def test_elect_leaders_v3_desired_leaders_of_another_length_are_refused() -> None:
    """DesiredLeaders must match Partitions entry for entry (KIP-966): other lengths are a WireError."""
    data = (_request_header_v2(43, 3, 1, "x") + struct.pack(">b", 4) + _compact_len(1)
            + _compact_str("a") + _i32s((0, 1)) + _i32s((2,)) + NO_TAGS + struct.pack(">i", 100) + NO_TAGS)
    with pytest.raises(wire.WireError, match="match by index"):
        wire.decode_request(data)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_before_v3_still_refuses_kip_966_content(version: int) -> None:
    """Types 2..4 and DesiredLeaders are v3-only: v0..v2 refuse them with UNSUPPORTED_VERSION (35)
    rather than drop them (v0 also refuses UNCLEAN: it elects preferred leaders only)."""
    for election_type in (m.ELECTION_LONGEST_LOG_BALANCED, m.ELECTION_LONGEST_LOG_AGGRESSIVE,
                          m.ELECTION_DESIGNATION):
        msg = m.ElectLeadersRequest(election_type, (m.ElectLeadersPartition("orders", 0),))
        with pytest.raises(wire.UnsupportedVersionError) as err:
            wire.encode_request(msg, 1, version=version)
        assert err.value.error_code == Errors.UNSUPPORTED_VERSION
    preferred = m.ElectLeadersRequest(m.ELECTION_PREFERRED, (m.ElectLeadersPartition("orders", 0, 2),))
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_request(preferred, 1, version=version)
    assert m.ElectLeadersRequest.VERSION == 2  # types 0 and 1 still go out as v2 by default
    assert wire.roundtrip(DESIGNATION) == DESIGNATION  # types 2-4 as v3


def test_versions_beyond_the_kip_are_unsupported() -> None:
    """Nothing maps ElectLeaders v4 or GetReplicaLogInfo v1: Kafka's UNSUPPORTED_VERSION (35)."""
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_request(DESIGNATION, 1, version=4)
    with pytest.raises(wire.UnsupportedVersionError):
        wire.encode_request(GRLI_REQUEST, 1, version=1)
    data = bytearray(wire.encode_request(GRLI_REQUEST, 1))
    struct.pack_into(">h", data, 2, 1)
    with pytest.raises(wire.UnsupportedVersionError):
        wire.decode_request_frame(bytes(data))


# ------------------------------------------------------------------------------- advertisement
def test_api_versions_advertise_both_at_level_urm_and_neither_below() -> None:
    """DESIGN.md: advertise only what is implemented. Level ``urm`` serves ElectLeaders v3 (on the client
    listener, forwarded, and the controller's) and GetReplicaLogInfo v0 (a broker's internal listener; the
    client listener parses it to refuse it with CLUSTER_AUTHORIZATION_FAILED); below ``urm`` the served
    ranges stay ElectLeaders 0-2 and no key 93, on every listener, while the codec maps both."""
    assert wire.mapped_versions(m.ElectLeadersRequest) == range(0, 4)
    assert wire.mapped_versions(m.GetReplicaLogInfoRequest) == range(0, 1)
    assert wire.supported_versions(m.ElectLeadersRequest, Level.URM) == range(0, 4)
    assert wire.supported_versions(m.GetReplicaLogInfoRequest, Level.URM) == range(0, 1)
    at_urm = wire.supported_api_versions(Level.URM)
    assert at_urm == wire.supported_api_versions()  # urm is the default level
    assert at_urm[43] == (0, 3) and at_urm[93] == (0, 0)
    assert lst.listener_api_versions(lst.CLIENT, at_urm)[43] == (0, 3)
    assert lst.listener_api_versions(lst.INTERNAL, at_urm)[93] == (0, 0)
    assert lst.listener_api_versions(lst.CONTROLLER, at_urm)[43] == (0, 3)
    assert 93 not in lst.listener_api_versions(lst.CONTROLLER, at_urm)
    for level in (Level.CLASSIC, Level.KIP903, Level.ELR):
        assert wire.supported_versions(m.ElectLeadersRequest, level) == range(0, 3)
        assert not wire.supported_versions(m.GetReplicaLogInfoRequest, level)
        supported = wire.supported_api_versions(level)
        assert supported[m.ElectLeadersRequest.API_KEY] == (0, 2)
        assert m.GetReplicaLogInfoRequest.API_KEY not in supported
        for listener in (lst.CLIENT, lst.INTERNAL, lst.CONTROLLER):
            advertised = lst.listener_api_versions(listener, supported)
            assert advertised[43] == (0, 2)
            assert 93 not in advertised
    # A request type nodes serve and scenarios may hold.
    assert m.GetReplicaLogInfoRequest in m.REQUEST_TYPES
    assert "GetReplicaLogInfo" in m.API_NAMES
