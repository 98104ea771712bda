"""Kafka connection framing (``kraftlog.protocol.framing``): Kafka's connection rules, and 10,000 fuzzed
frames that never crash the framing, the wire decoder, a broker or the controller (issue 11, "Bad input").
"""

from __future__ import annotations

import random
import struct
import uuid

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.response_header.v0.header import ResponseHeader
from kio.serial import entity_reader

from kraftlog.broker.broker import Broker
from kraftlog.controller.controller import QuorumController
from kraftlog.level import Level
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.framing import (
    DEFAULT_MAX_REQUEST_BYTES,
    Close,
    Reply,
    Request,
    ResponseDecoder,
    ServerConnection,
)
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage.disk import SimDisk

#: The versions the tests pretend to support: the one the wire layer maps per request, plus
#: ApiVersions 0..3 (its out-of-range answer is the framing layer's own).
SAMPLES: list = [
    m.MetadataRequest(("t",)),
    m.ProduceRequest(-1, 30000, (m.ProducePartition("t", 0, (RecordBatch(-1, -1, (Record(0, b"k", b"v"),)),)),)),
    m.FetchRequest(-1, -1, 500, 1, (m.FetchPartition(uuid.UUID(int=5), 0, 3, 10, 2),)),
    m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("t", 0, m.LATEST_TIMESTAMP, 3),)),
    m.OffsetForLeaderEpochRequest(-1, (m.OffsetForLeaderEpochPartition("t", 0, 3, 2),)),
    m.InitProducerIdRequest(),
    m.FindCoordinatorRequest(("g",)),
    m.CreateTopicsRequest((m.CreatableTopic("t", 1, 1),)),
    m.BrokerHeartbeatRequest(1, 7, 10, False, False),
    m.DescribeTopicPartitionsRequest(()),
    m.ElectLeadersRequest(m.ELECTION_PREFERRED, (m.ElectLeadersPartition("t", 0),)),
]
SUPPORTED = {type(wire.to_kio(s)).__api_key__: (type(wire.to_kio(s)).__version__,) * 2 for s in SAMPLES}
SUPPORTED[18] = (0, 3)
VALID = [wire.frame(wire.encode_request(s, correlation_id=i + 1, client_id="fuzz")) for i, s in enumerate(SAMPLES)]


def events_of(data: bytes, chunks=None, supported=SUPPORTED, max_bytes=DEFAULT_MAX_REQUEST_BYTES):
    conn = ServerConnection(supported, max_bytes)
    if chunks is None:
        return conn.receive_data(data)
    out, pos = [], 0
    for n in chunks:
        out += conn.receive_data(data[pos:pos + n])
        pos += n
    return out + conn.receive_data(data[pos:])


# ------------------------------------------------------------------------------------- the rules
def test_a_request_split_at_every_byte_boundary_gives_the_same_request():
    """Framing: a frame arriving in any two pieces is one request, with the header kio parses (API key,
    version, correlation id, client id) and the body after it; the body decodes to the message sent."""
    data = VALID[0]
    whole = events_of(data)
    assert len(whole) == 1 and isinstance(whole[0], Request)
    h = whole[0].header
    assert (h.api_key, h.correlation_id, h.client_id) == (3, 1, "fuzz")
    for cut in range(1, len(data)):
        assert events_of(data, [cut]) == whole
    assert wire.decode_request(whole[0].payload)[1] == SAMPLES[0]


def test_several_frames_in_one_read_come_out_in_order():
    events = events_of(b"".join(VALID))
    assert [e.header.correlation_id for e in events] == list(range(1, len(VALID) + 1))


@pytest.mark.parametrize("size", [-1, -2**31, DEFAULT_MAX_REQUEST_BYTES + 1, 2**31 - 1])
def test_a_size_outside_socket_request_max_bytes_closes_at_once(size):
    """Kafka's InvalidReceiveException: a negative size or one above socket.request.max.bytes closes
    the connection as soon as the 4 size bytes arrive — nothing of the body is buffered."""
    events = events_of(struct.pack(">i", size))
    assert len(events) == 1 and isinstance(events[0], Close) and "invalid frame size" in events[0].reason


def test_socket_request_max_bytes_is_configurable():
    data = VALID[1]
    assert isinstance(events_of(data, max_bytes=len(data) - 4)[0], Request)
    assert isinstance(events_of(data, max_bytes=len(data) - 5)[0], Close)


def test_a_frame_shorter_than_a_request_header_closes():
    events = events_of(struct.pack(">i", 3) + b"abc")
    assert isinstance(events[0], Close) and "shorter than a request header" in events[0].reason


def test_an_unknown_api_key_closes():
    events = events_of(wire.frame(struct.pack(">hhih", 999, 0, 7, -1)))
    assert isinstance(events[0], Close) and "API key 999" in events[0].reason


def test_an_unsupported_version_closes_except_for_api_versions():
    """Kafka closes the connection on a request at an unsupported version, except ApiVersions (KIP-511),
    which is answered in v0 format with UNSUPPORTED_VERSION and the supported ranges."""
    assert isinstance(events_of(wire.frame(struct.pack(">hhih", 3, 99, 7, -1)))[0], Close)
    events = events_of(wire.frame(struct.pack(">hhih", 18, 99, 42, -1) + b"\x00"))
    assert len(events) == 1 and isinstance(events[0], Reply)
    data = events[0].data
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    header, header_size = entity_reader(ResponseHeader)(data[4:], 0)
    response, body_size = entity_reader(ApiVersionsResponse)(data[4:], header_size)
    assert header.correlation_id == 42 and header_size + body_size == size
    assert int(response.error_code) == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (k, lo, hi) for k, (lo, hi) in sorted(SUPPORTED.items())]


def test_a_header_whose_client_id_runs_past_the_frame_closes():
    events = events_of(wire.frame(struct.pack(">hhih", 3, 12, 7, 50) + b"short"))
    assert isinstance(events[0], Close) and "malformed request header" in events[0].reason


def test_nothing_is_read_after_a_close():
    conn = ServerConnection(SUPPORTED)
    assert isinstance(conn.receive_data(struct.pack(">i", -5))[-1], Close)
    assert conn.receive_data(VALID[0]) == [] and conn.closed


def test_response_decoder_splits_frames_and_refuses_a_broken_stream():
    payload = wire.encode_response(m.MetadataResponse((), -1, (), "c"), 9)
    dec = ResponseDecoder()
    data = wire.frame(payload) * 2
    assert dec.feed(data[:5]) == []
    assert dec.feed(data[5:]) == [(9, payload), (9, payload)]
    with pytest.raises(ValueError):
        ResponseDecoder().feed(struct.pack(">i", -1))


# ------------------------------------------------------------------------------------- the fuzz
def _fuzzed(rng: random.Random) -> bytes:
    """One fuzzed input: random bytes, a valid frame with flipped bytes, a wrong size, an unknown key or
    version, or a truncated field — sometimes followed by a valid frame."""
    kind = rng.randrange(6)
    base = bytearray(rng.choice(VALID))
    if kind == 0:
        data = bytearray(rng.randbytes(rng.randrange(0, 200)))
    elif kind == 1:  # flip bytes in the body (header intact or not)
        for _ in range(rng.randrange(1, 6)):
            base[rng.randrange(4, len(base))] = rng.randrange(256)
        data = base
    elif kind == 2:  # a lying size
        lie = rng.choice([0, 1, 7, len(base) - 4 + rng.randrange(-8, 9), -rng.randrange(1, 99)])
        struct.pack_into(">i", base, 0, lie)
        data = base
    elif kind == 3:  # unknown key or version
        struct.pack_into(">hh", base, 4, rng.choice([rng.randrange(-5, 200), 18, 3]), rng.randrange(-3, 40))
        data = base
    elif kind == 4:  # truncated fields: cut the frame and fix its size
        cut = rng.randrange(4, len(base))
        data = bytearray(struct.pack(">i", cut - 4)) + base[4:cut]
    else:  # a valid frame, then garbage
        data = base + rng.randbytes(rng.randrange(1, 40))
    if rng.random() < 0.3:
        data += rng.choice(VALID)
    return bytes(data)


class _Nodes:
    """A broker and a controller that fuzzed-but-decodable requests are delivered to."""

    def __init__(self) -> None:
        self.ctl = QuorumController({}, Level.ELR, SimDisk(None), random.Random(0), 0)
        self.broker = Broker(0, {}, Level.ELR, SimDisk(None), random.Random(1), 0)
        self.now = 0

    def deliver(self, corr: int, msg) -> None:
        self.now += 1
        for node in (self.broker, self.ctl):
            node.deliver(self.now, m.Envelope("fuzz", node.node_id, corr, msg))
            node.tick(self.now)
            node.poll()


def test_ten_thousand_fuzzed_frames_never_crash_framing_decoding_or_a_node():
    """Issue 11, bad input: 10,000 fuzzed inputs (random bytes, bad sizes, unknown keys and versions,
    truncated fields, flipped bytes), each in random chunks. The framing layer only ever answers with
    Request / Reply / Close events (Close last); every Request either decodes or raises the wire layer's
    WireError (Kafka's InvalidRequestException: close the connection); every decoded request is handled
    by a live broker and controller without an exception, and both still serve a valid request after."""
    rng = random.Random(20261123)
    nodes = _Nodes()
    counts = {"request": 0, "decoded": 0, "reply": 0, "close": 0}
    for _ in range(10_000):
        data = _fuzzed(rng)
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(0, 4)))) if len(data) > 1 else []
        chunks = [b - a for a, b in zip([0, *cuts], cuts, strict=False)]
        events = events_of(data, chunks)
        for i, e in enumerate(events):
            assert isinstance(e, (Request, Reply, Close))
            if isinstance(e, Close):
                counts["close"] += 1
                assert i == len(events) - 1
            elif isinstance(e, Reply):
                counts["reply"] += 1
            else:
                counts["request"] += 1
                lo, hi = SUPPORTED[e.header.api_key]
                assert lo <= e.header.api_version <= hi
                if e.header.api_key == 18:
                    continue  # ApiVersions is answered by the driver from the wire layer's table
                try:
                    corr, msg = wire.decode_request(e.payload)
                except wire.WireError:
                    continue
                counts["decoded"] += 1
                nodes.deliver(corr, msg)
    assert min(counts.values()) > 100, counts  # every path was exercised
    # Both nodes still serve.
    nodes.broker.deliver(nodes.now + 1, m.Envelope("client", 0, 1, m.MetadataRequest(None)))
    assert any(e.is_response for e in nodes.broker.poll())
