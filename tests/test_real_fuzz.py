"""Fuzzing a real cluster (issue 11): "10,000 fuzzed frames (random bytes, bad lengths, unknown keys and
versions, truncated fields) against a broker and the controller: every node stays up and keeps serving."

A module fixture starts a 1-broker cluster (a controller and broker 0, OS processes on loopback, free
ports) in a temporary directory and always stops every node afterwards, by PID. The fuzz test (last in
this file, so that what it leaves behind cannot disturb the small tests) sends 10,000 frames from a
seeded ``random.Random`` (a fixed seed by default, so CI is deterministic; ``KRAFTLOG_FUZZ_SEED=<n>`` explores
or replays another; the seed is printed and named in
every failure) to the broker's client listener, its internal listener and the controller's listener,
one frame at a time per connection, reconnecting whenever the node closed the connection (closing it
is what Kafka does with bad input). Before, midway and after, every node must still run and serve:
ApiVersions on every listener, Metadata on the broker, and records produced with acks=all read back
unchanged; no node log may hold a Traceback.

The rules of :mod:`kraftlog.protocol.framing` are asserted where they are exact (a bad size, an unknown
API key or an unsupported version closes the connection; ApiVersions above the supported range gets a
v0 answer with UNSUPPORTED_VERSION; a request with missing bytes closes it, trailing bytes after a body
are ignored, as Kafka ignores them); what mutated
requests get is only recorded (answered, closed, or not answered within a short timeout). The small
tests check the same rules one case each, CLUSTER_AUTHORIZATION_FAILED for inter-broker and controller
requests on the broker's client listener, and the inputs the fuzzer found that made a node raise or
stall (empty produces, group ids that are not file names, an unknown election type, a replica fetch
naming the leader itself).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import re
import socket
import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.framing import DEFAULT_MAX_REQUEST_BYTES
from kraftlog.protocol.records import Record, RecordBatch

#: The seed CI uses (any other: KRAFTLOG_FUZZ_SEED=<n>).
DEFAULT_SEED = 20261123

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
#: Frames sent in all (split evenly across the three listeners).
FRAMES = 10_000
#: How long (s) a frame whose outcome is fixed by the framing rules may take to be answered or closed.
STRICT_WAIT_S = 3.0
#: How long (s) to wait for the answer to a mutated request before giving up on it (it may be parked
#: or never answered: that is allowed).
LOOSE_WAIT_S = 0.3
FUZZ_TOPIC = "fuzz"
DURABLE_TOPIC = "durable"
GROUP = "fuzz-group"
#: Broker id of the registrations the fuzzer sends the controller (no such broker runs).
PHANTOM = 1000
#: Bogus broker epoch of the fuzzer's heartbeats and AlterPartitions.
BOGUS_EPOCH = 999_999


def _seed() -> int:
    env = os.environ.get("KRAFTLOG_FUZZ_SEED")
    # A fixed default keeps CI deterministic; set KRAFTLOG_FUZZ_SEED to explore other seeds.
    return int(env) if env else DEFAULT_SEED


SEED = _seed()


# ----------------------------------------------------------------------------------- the cluster
@dataclass
class Cluster:
    directory: str
    controller_pid: int
    broker_pid: int
    client_port: int  # broker-0's CLIENT listener
    internal_port: int  # broker-0's INTERNAL listener
    controller_port: int  # the controller's CONTROLLER listener
    fuzz_topic_id: uuid.UUID
    durable_topic_id: uuid.UUID
    #: values produced to DURABLE_TOPIC so far, in offset order
    produced: list

    @property
    def listeners(self) -> dict[str, int]:
        return {lst.CLIENT: self.client_port, lst.INTERNAL: self.internal_port,
                lst.CONTROLLER: self.controller_port}

    def pids(self) -> dict[str, int]:
        return {"controller": self.controller_pid, "broker-0": self.broker_pid}

    def broker_epoch(self) -> int:
        return cl.status(self.directory)[1].broker_epoch



def _create_topic(port: int, name: str, partitions: int) -> uuid.UUID:
    """Create ``name`` (unless it exists) through the broker (forwarded to the controller) and wait until
    the broker leads every partition; its topic id."""
    with KafkaConnection(f"{HOST}:{port}", timeout_s=20) as k:
        resp = k.request(m.CreateTopicsRequest((m.CreatableTopic(name, partitions, 1),)))
        assert resp.topics[0].error_code in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS), resp
        deadline = time.monotonic() + 20
        while True:
            md = k.request(m.MetadataRequest((name,)))
            t = md.topics[0] if md.topics else None
            if (t is not None and t.error_code == Errors.NONE and len(t.partitions) == partitions
                    and all(p.leader_id == 0 for p in t.partitions)):
                return t.topic_id
            assert time.monotonic() < deadline, f"{name} has no leader: {md}"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Cluster:
    directory = str(tmp_path_factory.mktemp("fuzz-cluster"))
    try:
        cl.up(directory, 1, port=0)
        nodes = {e["id"]: e for e in cl.load(directory)["nodes"]}
        ctrl, b0 = nodes["controller"], nodes[0]
        fuzz_id = _create_topic(b0["port"], FUZZ_TOPIC, 2)
        durable_id = _create_topic(b0["port"], DURABLE_TOPIC, 1)
        yield Cluster(directory, ctrl["pid"], b0["pid"], b0["port"], b0["internal_port"], ctrl["port"],
                      fuzz_id, durable_id, [])
    finally:
        try:
            stopped = cl.down(directory)
            print(f"\ncluster down: {stopped}")
        except cl.ClusterError:
            pass
        finally:
            cl.kill(directory)


# ------------------------------------------------------------------------------- health checks
def _logs(directory: str) -> dict[str, str]:
    out = {}
    for name in ("controller", "broker-0"):
        with open(os.path.join(directory, f"{name}.log"), errors="replace") as f:
            out[name] = f.read()
    return out


def _produce_and_read_back(c: Cluster, label: str, count: int = 5) -> None:
    """Produce ``count`` records with acks=all to DURABLE_TOPIC and read the whole partition back: every
    record produced so far, in order, and the end offset, must be there."""
    now = int(time.time() * 1000)
    values = [f"{label}-{i}".encode() for i in range(count)]
    batch = RecordBatch(-1, -1, tuple(Record(now, f"k{i}".encode(), v) for i, v in enumerate(values)))
    with KafkaConnection(f"{HOST}:{c.client_port}", timeout_s=20) as k:
        resp = k.request(m.ProduceRequest(-1, 15_000, (m.ProducePartition(DURABLE_TOPIC, 0, (batch,)),)))
        (p,) = resp.partitions
        assert p.error_code == Errors.NONE, f"[seed {SEED}] produce ({label}): {resp}"
        assert p.base_offset == len(c.produced), f"[seed {SEED}] produce ({label}) at {p.base_offset}, " \
                                                 f"expected {len(c.produced)}"
        c.produced.extend(values)
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < len(c.produced):
            assert time.monotonic() < deadline, f"[seed {SEED}] read back ({label}): {got}"
            fetch = k.request(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(c.durable_topic_id, 0, -1, len(got)),)))
            (fp,) = fetch.partitions
            assert fp.error_code == Errors.NONE, f"[seed {SEED}] fetch ({label}): {fetch}"
            for b in fp.records:
                for i, r in enumerate(b.records):
                    if b.base_offset + i == len(got):
                        got.append(r.value)
        assert got == c.produced, f"[seed {SEED}] read back ({label}) differs"
        offsets = k.request(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(DURABLE_TOPIC, 0, -1),
                                                      m.ListOffsetsPartition(DURABLE_TOPIC, 0, -2))))
        latest, earliest = offsets.partitions
        assert (latest.error_code, latest.offset) == (Errors.NONE, len(c.produced)), offsets
        assert (earliest.error_code, earliest.offset) == (Errors.NONE, 0), offsets


def _exceptions(text: str) -> dict[str, int]:
    """The exception line ending each traceback in a log, with how often it occurs."""
    out: collections.Counter = collections.Counter()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            end = next((x for x in lines[i + 1:] if x and not x.startswith(" ")), "?")
            out[end[:200]] += 1
    return dict(out)


def _log_sizes(c: Cluster) -> dict[str, int]:
    return {name: len(text) for name, text in _logs(c.directory).items()}


def _assert_no_new_traceback(c: Cluster, sizes: dict[str, int], what: str) -> None:
    for name, text in _logs(c.directory).items():
        new = text[sizes[name]:]
        assert "Traceback" not in new, f"{what}: {name}.log: {_exceptions(new)}\n{new[-3000:]}"


def assert_healthy(c: Cluster, label: str, since: dict[str, int]) -> None:
    """Every node runs (not a zombie) and serves: ApiVersions v3 on every listener, Metadata on the
    broker, records produced and read back, and no Traceback in any node log past ``since`` (node ->
    log length when the test began)."""
    for name, pid in c.pids().items():
        assert cl.pid_alive(pid), f"[seed {SEED}] {label}: {name} (pid {pid}) is not running"
    for listener, port in c.listeners.items():
        with KafkaConnection(f"{HOST}:{port}", timeout_s=20) as k:
            av = k.request(m.ApiVersionsRequest("fuzz-check", "1"))
        assert av.error_code == Errors.NONE, f"[seed {SEED}] {label}: ApiVersions on {listener}: {av}"
        expected = lst.listener_api_versions(listener, wire.supported_api_versions())
        assert {a.api_key: (a.min_version, a.max_version) for a in av.api_keys} == expected
    with KafkaConnection(f"{HOST}:{c.client_port}", timeout_s=20) as k:
        md = k.request(m.MetadataRequest(None))
    assert [b.node_id for b in md.brokers] == [0], f"[seed {SEED}] {label}: {md}"
    assert {t.name for t in md.topics} >= {FUZZ_TOPIC, DURABLE_TOPIC}, f"[seed {SEED}] {label}: {md}"
    _produce_and_read_back(c, label)
    for name, text in _logs(c.directory).items():
        text = text[since[name]:]
        if "Traceback" in text:
            at = text.index("Traceback")
            pytest.fail(f"[seed {SEED}] {label}: {name}.log holds {text.count('Traceback')} Traceback(s); "
                        f"distinct exceptions: {_exceptions(text)}\nthe first:\n{text[max(0, at - 300):at + 3000]}")
    for name, pid in c.pids().items():
        assert cl.pid_alive(pid), f"[seed {SEED}] {label}: {name} (pid {pid}) is not running"


# ------------------------------------------------------------------------------------ the corpus
def _corpus(c: Cluster, listener: str) -> list[tuple[str, object, bool]]:
    """Real requests for ``listener``: (name, core message, may be sent unmutated/flipped). The ones
    that must not be sent intact (they would change the cluster) are only sent truncated, which the
    wire layer refuses."""
    fid = c.fuzz_topic_id
    cluster_actions = [
        ("replica-fetch", m.FetchRequest(77, 5, 0, 1, (m.FetchPartition(fid, 0, 0, 0, topic=FUZZ_TOPIC),)), True),
        ("metadata-fetch", m.MetadataFetchRequest(PHANTOM, 1, 0, 0), True),
        ("broker-heartbeat", m.BrokerHeartbeatRequest(PHANTOM, BOGUS_EPOCH, 0, False, False), True),
        ("alter-partition", m.AlterPartitionRequest(0, BOGUS_EPOCH, (m.AlterPartitionItem(
            fid, 0, 0, (m.BrokerState(0, BOGUS_EPOCH),), 0),)), True),
        ("broker-registration", m.BrokerRegistrationRequest(
            PHANTOM, "fuzz-cluster", uuid.UUID(int=7), listeners=(m.Listener("INTERNAL", HOST, 1),)), True),
    ]
    admin = [
        ("create-topics", m.CreateTopicsRequest((m.CreatableTopic("fuzz-created", 1, 1),)), False),
        ("alter-configs", m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            2, FUZZ_TOPIC, (m.AlterableConfig("retention.ms", 0, "1000"),)),)), False),
        ("delete-topics", m.DeleteTopicsRequest(("fuzz-absent",)), True),
        ("elect-leaders", m.ElectLeadersRequest(0, (m.ElectLeadersPartition(FUZZ_TOPIC, 0),)), True),
        ("api-versions", m.ApiVersionsRequest("fuzz", "0.1"), True),
    ]
    if listener == lst.CONTROLLER:
        return cluster_actions[1:] + admin
    batch = RecordBatch(-1, -1, (Record(1_700_000_000_000, b"k", b"v", (("h", b"x"),)),
                                 Record(1_700_000_000_001, None, b"w")))
    broker = [
        ("metadata-all", m.MetadataRequest(None), True),
        ("metadata-topic", m.MetadataRequest((FUZZ_TOPIC, "fuzz-absent")), True),
        ("produce", m.ProduceRequest(1, 5000, (m.ProducePartition(FUZZ_TOPIC, 0, (batch,)),)), True),
        ("produce-all", m.ProduceRequest(-1, 5000, (m.ProducePartition(FUZZ_TOPIC, 1, (batch,)),)), True),
        ("fetch", m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(fid, 0, -1, 0, topic=FUZZ_TOPIC),
                                                 m.FetchPartition(fid, 1, -1, 0, topic=FUZZ_TOPIC))), True),
        ("list-offsets", m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(FUZZ_TOPIC, 0, -1),
                                                    m.ListOffsetsPartition(FUZZ_TOPIC, 1, -2))), True),
        ("offset-for-leader-epoch", m.OffsetForLeaderEpochRequest(-1, (
            m.OffsetForLeaderEpochPartition(FUZZ_TOPIC, 0, -1, 0),)), True),
        ("describe-topic-partitions", m.DescribeTopicPartitionsRequest((FUZZ_TOPIC,)), True),
        ("init-producer-id", m.InitProducerIdRequest(), True),
        ("find-coordinator", m.FindCoordinatorRequest((GROUP,)), True),
        ("offset-commit", m.OffsetCommitRequest(GROUP, (m.OffsetCommitPartition(FUZZ_TOPIC, 0, 1),)), True),
        ("offset-fetch", m.OffsetFetchRequest(GROUP, ((FUZZ_TOPIC, 0),)), True),
        ("join-group", m.JoinGroupRequest(GROUP, 10_000, "", "consumer",
                                          (m.JoinGroupRequestProtocol("range", b"\x00\x01"),), 10_000), True),
        ("sync-group", m.SyncGroupRequest(GROUP, 1, "fuzz-member"), True),
        ("heartbeat", m.HeartbeatRequest(GROUP, 1, "fuzz-member"), True),
        ("leave-group", m.LeaveGroupRequest(GROUP, (m.MemberIdentity("fuzz-member"),)), True),
        ("describe-configs", m.DescribeConfigsRequest((m.DescribeConfigsResource(2, FUZZ_TOPIC),)), True),
    ]
    return broker + cluster_actions + admin


#: (listener, corpus name) of intact requests a node accepts but need not answer within LOOSE_WAIT_S:
#: controller APIs on a broker's internal listener (kraftlog parses them there but does not serve them),
#: and JoinGroup, which below v4 joins at once (no MEMBER_ID_REQUIRED round) and is parked until the
#: rebalance completes.
UNANSWERED = ({(lst.INTERNAL, n) for n in ("metadata-fetch", "broker-heartbeat", "alter-partition",
                                           "broker-registration")}
              | {(listener, "join-group") for listener in (lst.CLIENT, lst.INTERNAL)})


@dataclass
class Encoded:
    name: str
    msg: object
    version: int
    payload: bytes  # header + body, no size prefix
    intact_ok: bool


def _encoded(corpus) -> list[Encoded]:
    """Every corpus request at every version the wire layer can encode it at."""
    out = []
    for name, msg, ok in corpus:
        for v in wire.supported_versions(m.FetchRequest if type(msg) is m.MetadataFetchRequest else type(msg)):
            try:
                payload = wire.encode_request(msg, 1, client_id="fuzz", version=v)
            except Exception:  # a version that cannot carry this message
                continue
            out.append(Encoded(name, msg, v, payload, ok))
    assert out
    return out


# ------------------------------------------------------------------------------------ the frames
@dataclass
class Frame:
    category: str
    data: bytes
    #: "close" (the node must close the connection), "api_versions_35", "answer" (a decodable response to
    #: ``request``), "any" (any outcome but a dead node)
    expect: str
    #: wait for the outcome; False: send, then close the connection at once (an incomplete frame)
    wait: bool = True
    request: Encoded | None = None
    correlation_id: int | None = None


_SIZE = struct.Struct(">i")
#: API keys no kraftlog listener knows (and, per listener, the known ones it does not serve).
_UNKNOWN_KEYS = (9999, 1000, -1, -32768, 32767, 4, 5, 6, 7, 15, 16, 17, 21, 24, 25, 26, 27, 28, 29, 30, 31,
                 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 45, 46, 47, 48, 50, 51, 57, 60, 61, 64, 65, 68, 74, 76,
                 80, 200)
CATEGORIES = ("random-bytes", "garbage-body", "size-negative", "size-zero", "size-huge", "size-short",
              "unknown-key", "bad-version", "api-versions-v99", "truncated", "flipped", "trailing", "odd-values",
              "intact")
_WEIGHTS = (10, 10, 3, 2, 3, 4, 10, 8, 2, 12, 16, 8, 10, 5)
_ODD_INTS = (-1, 0, 1, 2, -2, 127, -128, 32767, -32768, 2 ** 31 - 1, -2 ** 31, 2 ** 63 - 1, -2 ** 63)
_ODD_STRINGS = ("", " ", "\x00", "..", "fuzz\u00fc\u4e2d", "x" * 300, FUZZ_TOPIC, DURABLE_TOPIC + "-no")


#: Fields ``_odd`` leaves alone: a broker epoch stays BOGUS_EPOCH, so that no mutated BrokerHeartbeat or
#: AlterPartition can pass for broker-0 (the controller listener trusts its callers: a heartbeat with
#: broker-0's real epoch asking to shut down would legitimately stop it).
_KEEP = frozenset({"broker_epoch"})


def _odd_request(rng: random.Random, msg: object) -> object:
    """:func:`_odd` of a request, except that a DeleteTopics never names the topics the health check
    needs (DeleteTopics is real: a mutated name equal to one of them would delete it, as it should)."""
    odd = _odd(rng, msg)
    if isinstance(odd, m.DeleteTopicsRequest):
        odd = dataclasses.replace(odd, topic_names=tuple(
            "fuzz-absent" if n in (FUZZ_TOPIC, DURABLE_TOPIC) else n for n in odd.topic_names))
    return odd


def _odd(rng: random.Random, value: object, depth: int = 0) -> object:
    """``value`` (a core message or a part of one) with some fields set to odd values: extreme ints,
    empty or repeated lists, odd strings, empty or random bytes, zero or random UUIDs, flipped booleans."""
    if isinstance(value, bool):
        return not value if rng.random() < 0.3 else value
    if isinstance(value, int):
        return rng.choice(_ODD_INTS) if rng.random() < 0.3 else value
    if isinstance(value, str):
        return rng.choice(_ODD_STRINGS) if rng.random() < 0.2 else value
    if isinstance(value, bytes):
        return rng.choice((b"", rng.randbytes(rng.randrange(1, 40)))) if rng.random() < 0.2 else value
    if isinstance(value, uuid.UUID):
        return rng.choice((uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128)))) if rng.random() < 0.2 else value
    if isinstance(value, tuple):
        roll = rng.random()
        if roll < 0.1:
            return ()
        if roll < 0.2 and value:
            return value + value
        return tuple(_odd(rng, v, depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and depth < 6:
        changes = {f.name: _odd(rng, getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
                   if f.name not in _KEEP}
        return dataclasses.replace(value, **changes)
    return value


def _header(api_key: int, version: int, corr: int, client_id: bytes = b"fuzz") -> bytes:
    """A v1 request header (no tagged fields: what every version's header starts with)."""
    return struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id


def _with_corr(payload: bytes, corr: int) -> bytes:
    return payload[:4] + struct.pack(">i", corr) + payload[8:]


class FrameMaker:
    def __init__(self, rng: random.Random, listener: str, corpus: list[Encoded]) -> None:
        self.rng = rng
        self.listener = listener
        self.supported = lst.listener_api_versions(listener, wire.supported_api_versions())
        self.corpus = corpus
        self.intact = [e for e in corpus if e.intact_ok]
        self.unknown = [k for k in _UNKNOWN_KEYS if k not in self.supported]
        self.corr = 0

    def _next_corr(self) -> int:
        self.corr += 1
        return self.corr

    def make(self, category: str) -> Frame:
        rng = self.rng
        corr = self._next_corr()
        if category == "random-bytes":
            data = rng.randbytes(rng.randrange(0, 300))
            if len(data) < 4:
                return Frame(category, data, "any", wait=False)
            (size,) = _SIZE.unpack_from(data)
            if size < 0 or size > DEFAULT_MAX_REQUEST_BYTES:
                return Frame(category, data, "close")
            return Frame(category, data, "any", wait=len(data) - 4 >= size)
        if category == "garbage-body":
            if rng.random() < 0.5:  # a header the listener accepts, then garbage
                key = rng.choice(sorted(self.supported))
                lo, hi = self.supported[key]
                body = struct.pack(">hhi", key, rng.randint(lo, hi), corr) + rng.randbytes(rng.randrange(0, 200))
            else:
                body = rng.randbytes(rng.randrange(0, 300))
            return Frame(category, _SIZE.pack(len(body)) + body, "close" if len(body) < 8 else "any")
        if category == "size-negative":
            size = rng.choice((-1, -2 ** 31, rng.randint(-2 ** 31, -1)))
            return Frame(category, _SIZE.pack(size) + rng.randbytes(rng.randrange(0, 64)), "close")
        if category == "size-zero":
            return Frame(category, _SIZE.pack(0), "close")
        if category == "size-huge":
            size = rng.choice((DEFAULT_MAX_REQUEST_BYTES + 1, 2 ** 31 - 1,
                               rng.randint(DEFAULT_MAX_REQUEST_BYTES + 1, 2 ** 31 - 1)))
            return Frame(category, _SIZE.pack(size) + _header(3, 12, corr) + rng.randbytes(rng.randrange(0, 64)),
                         "close")
        if category == "size-short":  # a size larger than what is sent, then the connection closed
            e = rng.choice(self.corpus)
            payload = _with_corr(e.payload, corr)
            sent = rng.randrange(0, len(payload))
            size = rng.choice((len(payload), rng.randint(len(payload), DEFAULT_MAX_REQUEST_BYTES)))
            return Frame(category, _SIZE.pack(size) + payload[:sent], "any", wait=False)
        if category == "unknown-key":
            key = rng.choice(self.unknown)
            payload = _header(key, rng.choice((0, 1, 3, 99, rng.randint(-5, 20))), corr)
            payload += rng.randbytes(rng.randrange(0, 100))
            return Frame(category, wire.frame(payload), "close")
        if category == "bad-version":
            key = rng.choice(sorted(self.supported))
            lo, hi = self.supported[key]
            below = [lo - 1, -1, -32768] if lo > 0 else [-1, -32768]
            version = rng.choice((hi + 1, 99, 32767, rng.randint(hi + 1, 32767), rng.choice(below)))
            if key == 18 and version > hi:  # ApiVersions above the range is answered (KIP-511)
                return Frame(category, wire.frame(_header(key, version, corr) + rng.randbytes(rng.randrange(0, 40))),
                             "api_versions_35", correlation_id=corr)
            return Frame(category, wire.frame(_header(key, version, corr) + rng.randbytes(rng.randrange(0, 60))),
                         "close")
        if category == "api-versions-v99":
            return Frame(category, wire.frame(_header(18, 99, corr)), "api_versions_35", correlation_id=corr)
        e = rng.choice(self.corpus if category == "truncated" else self.intact)
        payload = _with_corr(e.payload, corr)
        is_api_versions = type(e.msg) is m.ApiVersionsRequest
        if category == "truncated":
            cut = rng.randrange(0, len(payload))
            return Frame(category, wire.frame(payload[:cut]), "any" if is_api_versions else "close", request=e)
        if category == "trailing":  # Kafka ignores bytes after the body: answered as the intact request
            payload += rng.randbytes(rng.randint(1, 64))
            return Frame(category, wire.frame(payload), "any", request=e)
        if category == "odd-values":  # a well-formed request whose fields hold odd values
            for _ in range(10):
                try:
                    odd = wire.encode_request(_odd_request(rng, e.msg), corr, client_id="fuzz", version=e.version)
                except Exception:  # a value this field or version cannot carry: another draw
                    continue
                return Frame(category, wire.frame(odd), "any", request=e)
            return Frame(category, wire.frame(payload), "any", request=e)
        if category == "flipped":
            data = bytearray(payload)
            start = 8 if rng.random() < 0.8 and len(data) > 8 else 0  # mostly past the API key and version
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(start, len(data))] = rng.randrange(256)
            return Frame(category, wire.frame(bytes(data)), "any", request=e)
        assert category == "intact"
        expect = "any" if (self.listener, e.name) in UNANSWERED else "answer"
        return Frame(category, wire.frame(payload), expect, request=e, correlation_id=corr)


def make_frames(seed: int, listener: str, corpus: list[Encoded], count: int) -> list[Frame]:
    rng = random.Random(f"{seed}:{listener}")
    maker = FrameMaker(rng, listener, corpus)
    return [maker.make(cat) for cat in rng.choices(CATEGORIES, _WEIGHTS, k=count)]


# ------------------------------------------------------------------------------------- sending
class NodeDown(Exception):
    pass


class Sender:
    """Sends frames to one listener, one at a time, on a connection kept while the node keeps it open."""

    def __init__(self, listener: str, port: int) -> None:
        self.listener = listener
        self.port = port
        self.sock: socket.socket | None = None
        self.outcomes: collections.Counter = collections.Counter()  # (category, outcome)
        self.failures: list[str] = []
        self.connections = 0
        self.recent: collections.deque = collections.deque(maxlen=8)

    def _connect(self) -> socket.socket:
        if self.sock is None:
            try:
                self.sock = socket.create_connection((HOST, self.port), timeout=5)
            except OSError as exc:
                raise NodeDown(f"cannot connect to {self.listener} (port {self.port}): {exc}") from exc
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections += 1
        return self.sock

    def _drop(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def send(self, index: int, f: Frame) -> None:
        self.recent.append((index, f.category, f.data[:200].hex()))
        sock = self._connect()
        try:
            sock.sendall(f.data)
        except (BrokenPipeError, ConnectionResetError):
            self._drop()
            self._record(index, f, "closed", b"")
            return
        if not f.wait:
            self._drop()
            self._record(index, f, "abandoned", b"")
            return
        outcome, payload = self._observe(sock, STRICT_WAIT_S if f.expect != "any" else LOOSE_WAIT_S)
        if outcome != "answered":
            self._drop()
        self._record(index, f, outcome, payload)

    def _observe(self, sock: socket.socket, wait_s: float) -> tuple[str, bytes]:
        deadline = time.monotonic() + wait_s
        buf = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", buf
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                return "timeout", buf
            except ConnectionResetError:
                return "closed", buf
            if not chunk:
                return ("closed" if not buf else "closed-mid-response"), buf
            buf += chunk
            if len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf)
                if len(buf) >= 4 + size:
                    if len(buf) > 4 + size:  # more than one answer to one frame: start afresh
                        self._drop()
                    return "answered", buf[4:4 + size]

    def _record(self, index: int, f: Frame, outcome: str, payload: bytes) -> None:
        self.outcomes[f.category, outcome] += 1
        problem = None
        if outcome == "closed-mid-response":
            problem = "the node closed the connection in the middle of a response"
        elif f.expect == "close" and outcome != "closed":
            problem = f"expected the connection closed, got {outcome}"
        elif f.expect == "api_versions_35":
            problem = _check_api_versions_35(outcome, payload, f.correlation_id, self.listener)
        elif f.expect == "answer":
            if outcome != "answered":
                problem = f"expected an answer, got {outcome}"
            else:
                e = f.request
                try:
                    corr, _ = wire.decode_response(payload, type(e.msg), e.version)
                    if corr != f.correlation_id:
                        problem = f"answer to correlation id {corr}, expected {f.correlation_id}"
                except Exception as exc:
                    problem = f"undecodable answer: {exc!r}"
        if problem is not None:
            what = f" ({f.request.name} v{f.request.version})" if f.request else ""
            self.failures.append(f"{self.listener} frame #{index} {f.category}{what}: {problem}; "
                                 f"frame {f.data[:120].hex()}")


def _check_api_versions_35(outcome: str, payload: bytes, corr: int, listener: str) -> str | None:
    """None when ``payload`` is the v0 ApiVersionsResponse with UNSUPPORTED_VERSION listing exactly the
    listener's supported ranges, else what is wrong."""
    if outcome != "answered":
        return f"expected a v0 ApiVersionsResponse with error 35, got {outcome}"
    if len(payload) < 10:
        return f"ApiVersions answer of {len(payload)} bytes"
    got_corr, error, count = struct.unpack_from(">ihi", payload)
    if got_corr != corr or error != Errors.UNSUPPORTED_VERSION:
        return f"ApiVersions answer: correlation id {got_corr} (sent {corr}), error {error}"
    if len(payload) != 10 + 6 * count:  # v0: no throttle time, no tagged fields
        return f"ApiVersions answer is not v0: {len(payload)} bytes for {count} keys"
    keys = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", payload[10:])}
    if keys != lst.listener_api_versions(listener, wire.supported_api_versions()):
        return f"ApiVersions answer lists {keys}"
    return None


def _close_reasons(directory: str) -> dict[str, collections.Counter]:
    """Per node log, how many connections it closed for bad input, by kind of reason."""
    pattern = re.compile(r"closing conn-\d+\((\w+) [^)]*\): (.*)")
    kinds = (("invalid frame size", "bad size"), ("shorter than a request header", "short header"),
             ("unknown or unsupported API key", "unknown API key"), ("outside the supported", "bad version"),
             ("malformed request header", "bad header"), ("malformed request", "undecodable body"),
             ("cannot encode", "response not encodable"))
    out = {}
    for name, text in _logs(directory).items():
        counts: collections.Counter = collections.Counter()
        for match in pattern.finditer(text):
            reason = match.group(2)
            kind = next((k for prefix, k in kinds if prefix in reason), reason[:60])
            counts[match.group(1), kind] += 1
        out[name] = counts
    return out


def _fuzz_phase(senders: dict[str, Sender], frames: dict[str, list[Frame]], start: int, stop: int) -> None:
    """Send frames ``start``..``stop - 1`` of every listener, one thread per listener."""
    def run(listener: str) -> None:
        s = senders[listener]
        try:
            for i in range(start, min(stop, len(frames[listener]))):
                s.send(i, frames[listener][i])
        finally:
            s._drop()

    with ThreadPoolExecutor(max_workers=len(senders)) as pool:
        futures = {pool.submit(run, listener): listener for listener in senders}
        for fut, listener in futures.items():
            try:
                fut.result()
            except NodeDown as exc:
                recent = "\n".join(f"  #{i} {cat}: {hexdata}" for i, cat, hexdata in senders[listener].recent)
                pytest.fail(f"[seed {SEED}] {exc}; the last frames sent to {listener}:\n{recent}")


# --------------------------------------------------------------------------------------- tests
def _raw(port: int, data: bytes, wait_s: float = STRICT_WAIT_S) -> bytes | str | None:
    """Send ``data`` on a fresh connection; the bytes of the first answer frame (size prefix included),
    b"" when the node closed the connection (recv returned b""), "reset" when it reset it, None when
    nothing happened within ``wait_s``."""
    with socket.create_connection((HOST, port), timeout=wait_s) as sock:
        sock.sendall(data)
        buf = b""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                return None
            except ConnectionResetError:
                return "reset"
            if not chunk:
                assert not buf, f"closed in the middle of an answer: {buf.hex()}"
                return b""
            buf += chunk
            if len(buf) >= 4 and len(buf) >= 4 + _SIZE.unpack_from(buf)[0]:
                return buf
    return None


@pytest.mark.parametrize("size", [DEFAULT_MAX_REQUEST_BYTES + 1, 2 ** 31 - 1, -1, -2 ** 31, 0])
@pytest.mark.parametrize("listener", [lst.CLIENT, lst.INTERNAL, lst.CONTROLLER])
def test_a_bad_frame_size_closes_the_connection(real: Cluster, listener: str, size: int) -> None:
    port = real.listeners[listener]
    assert _raw(port, _SIZE.pack(size) + _header(3, 12, 1) + b"\x00" * 16) == b""
    assert _raw(port, _SIZE.pack(size)) == b""
    assert cl.pid_alive(real.broker_pid) and cl.pid_alive(real.controller_pid)


@pytest.mark.parametrize("key", [9999, 1000, -1, 4])
@pytest.mark.parametrize("listener", [lst.CLIENT, lst.INTERNAL, lst.CONTROLLER])
def test_an_unknown_api_key_closes_the_connection(real: Cluster, listener: str, key: int) -> None:
    assert _raw(real.listeners[listener], wire.frame(_header(key, 0, 1) + b"\x00" * 8)) == b""


def test_a_broker_api_on_the_controller_listener_closes_the_connection(real: Cluster) -> None:
    assert _raw(real.controller_port, wire.frame(wire.encode_request(m.MetadataRequest(None), 1))) == b""


@pytest.mark.parametrize("key,version", [(0, 99), (0, 2), (1, 99), (3, 0), (3, 13), (62, 99)])
def test_an_unsupported_version_closes_the_connection(real: Cluster, key: int, version: int) -> None:
    assert _raw(real.client_port, wire.frame(_header(key, version, 1) + b"\x00" * 8)) == b""


@pytest.mark.parametrize("listener", [lst.CLIENT, lst.INTERNAL, lst.CONTROLLER])
def test_api_versions_v99_is_answered_with_unsupported_version_in_v0(real: Cluster, listener: str) -> None:
    port = real.listeners[listener]
    with socket.create_connection((HOST, port), timeout=STRICT_WAIT_S) as sock:
        sock.sendall(wire.frame(_header(18, 99, 4242)))
        answer = _read_frame(sock)
        assert _check_api_versions_35("answered", answer, 4242, listener) is None, answer.hex()
        # the connection stays open: the client retries at a version it now knows
        sock.sendall(wire.frame(wire.encode_request(m.ApiVersionsRequest("fuzz", "1"), 4243, version=3)))
        corr, resp = wire.decode_response(_read_frame(sock), m.ApiVersionsRequest, 3)
    assert corr == 4243 and resp.error_code == Errors.NONE


def _read_frame(sock: socket.socket) -> bytes:
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf)[0]:
        chunk = sock.recv(1 << 16)
        assert chunk, f"the node closed the connection ({buf.hex()})"
        buf += chunk
    return buf[4:]


def test_a_truncated_request_closes_the_connection(real: Cluster) -> None:
    payload = wire.encode_request(m.MetadataRequest((FUZZ_TOPIC,)), 1)
    assert _raw(real.client_port, wire.frame(payload[:-3])) == b""
    assert _raw(real.client_port, wire.frame(payload[:6])) == b""  # shorter than a request header


def test_trailing_bytes_after_a_request_are_ignored_as_kafka_ignores_them(real: Cluster) -> None:
    """librdkafka's AdminClient sends Metadata v12 with three bytes after the body; Kafka answers it."""
    payload = wire.encode_request(m.MetadataRequest((FUZZ_TOPIC,)), 7)
    answer = _raw(real.client_port, wire.frame(payload + b"\x01\x00\x00"))
    assert isinstance(answer, bytes) and answer != b"", f"not answered: {answer!r}"
    corr, resp = wire.decode_response(answer[4:], m.MetadataRequest)
    assert corr == 7 and [t.name for t in resp.topics] == [FUZZ_TOPIC]


def _cluster_actions(c: Cluster) -> list[tuple[str, object, int | None]]:
    fid = c.fuzz_topic_id
    epoch = c.broker_epoch()
    part = m.FetchPartition(fid, 0, 0, 0, topic=FUZZ_TOPIC)
    return [
        ("replica fetch v15", m.FetchRequest(0, epoch, 0, 1, (part,)), 15),
        ("replica fetch v12", m.FetchRequest(0, epoch, 0, 1, (part,)), 12),
        ("metadata fetch", m.MetadataFetchRequest(0, epoch, 0, 0), None),
        ("broker heartbeat", m.BrokerHeartbeatRequest(0, epoch, 0, False, False), None),
        ("alter partition", m.AlterPartitionRequest(0, epoch, (m.AlterPartitionItem(
            fid, 0, 0, (m.BrokerState(0, epoch),), 0),)), None),
        ("broker registration", m.BrokerRegistrationRequest(
            0, "x", uuid.UUID(int=9), listeners=(m.Listener("INTERNAL", HOST, 1),)), None),
    ]


@pytest.mark.parametrize("case", range(6), ids=["replica-fetch-v15", "replica-fetch-v12", "metadata-fetch",
                                                "broker-heartbeat", "alter-partition", "broker-registration"])
def test_cluster_actions_on_the_client_listener_are_refused(real: Cluster, case: int) -> None:
    name, msg, version = _cluster_actions(real)[case]
    before = cl.status(real.directory)[1]
    assert (before.alive, before.fenced) == (True, False), before
    with KafkaConnection(f"{HOST}:{real.client_port}", timeout_s=10) as k:
        resp = k.request(msg, version=version)
    assert resp.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED, f"{name}: {resp}"
    if isinstance(resp, m.FetchResponse):
        assert not any(p.records for p in resp.partitions), f"{name} was served: {resp}"
    elif isinstance(resp, m.MetadataFetchResponse):
        assert not resp.records, f"{name} was served: {resp}"
    # nothing changed: broker-0 is still registered and unfenced, with the same broker epoch
    time.sleep(1.2)  # the node rewrites its status file every second
    after = cl.status(real.directory)[1]
    assert (after.alive, after.fenced, after.broker_epoch) == (True, False, before.broker_epoch), after


# ------------------------------------------------- inputs the fuzzer found that broke a node (issue 11)
def _request_raw(port: int, msg: object, corr: int = 1, version: int | None = None, payload: bytes | None = None,
                 wait_s: float = 10.0):
    """Send one request (``payload`` overrides its bytes) on a fresh connection; the decoded answer, or
    "closed" / "no answer"."""
    data = wire.frame(payload if payload is not None else wire.encode_request(msg, corr, version=version))
    answer = _raw(port, data, wait_s)
    if answer is None:
        return "no answer"
    if answer in (b"", "reset"):
        return "closed"
    return wire.decode_response(answer[4:], type(msg), version)[1]


@pytest.mark.parametrize("acks", [1, -1])
@pytest.mark.parametrize("records", ["no-batch", "empty-batch"])
def test_a_produce_without_records_is_refused_not_crashing(real: Cluster, acks: int, records: str) -> None:
    """A partition entry with no record batch (null or empty records), or a v2 batch that holds no record,
    is an invalid produce (Kafka: ProduceRequest.validateRecords needs one batch from v3; LogValidator
    refuses a batch whose count is not positive: INVALID_RECORD). Found by the fuzzer: the broker raised
    (TypeError in _handle_produce for acks=-1 / could not encode its answer for acks=1; ValueError
    "cannot append an empty record batch") and dropped the connection."""
    topic = "fuzz-empty-produce"
    _create_topic(real.client_port, topic, 1)
    batches = () if records == "no-batch" else (RecordBatch(-1, -1, ()),)
    sizes = _log_sizes(real)
    before = _request_raw(real.client_port, m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(topic, 0, -1),)))
    resp = _request_raw(real.client_port, m.ProduceRequest(acks, 3000, (m.ProducePartition(topic, 0, batches),)))
    assert isinstance(resp, m.ProduceResponse), f"the produce got {resp!r}"
    assert resp.partitions[0].error_code != Errors.NONE, resp
    after = _request_raw(real.client_port, m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(topic, 0, -1),)))
    assert after.partitions[0].offset == before.partitions[0].offset, (before, after)
    _assert_no_new_traceback(real, sizes, f"produce ({records}, acks={acks})")


@pytest.mark.parametrize("group", ["", ".", "..", "a/b", "a/../../x", "x" * 300, "g.tmp", "g.log", "\x00"],
                         ids=["empty", "dot", "dotdot", "slash", "traversal", "long", "tmp-suffix", "log-suffix",
                              "nul"])
def test_offset_commit_with_any_group_id_is_answered(real: Cluster, group: str) -> None:
    """Kafka commits offsets for any group id, the empty one included ("for backwards compatibility, we
    support offset commits for the empty groupId"), and they read back. Found by the fuzzer: the group id
    was a file name under __consumer_offsets/ and the broker raised (ValueError for "", ".", "..",
    "x.tmp", "x.log", NUL; OSError "File name too long" for 300 characters) and dropped the connection,
    having already updated the offsets in memory."""
    sizes = _log_sizes(real)
    # the group's coordinator: broker 0 once __consumer_offsets exists (the first FindCoordinator creates it)
    deadline = time.monotonic() + 30
    while True:
        found = _request_raw(real.client_port, m.FindCoordinatorRequest((group,)))
        assert isinstance(found, m.FindCoordinatorResponse), f"FindCoordinator {group[:20]!r} got {found!r}"
        if found.coordinators[0].error_code == Errors.NONE:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    commit = _request_raw(real.client_port, m.OffsetCommitRequest(group, (m.OffsetCommitPartition(FUZZ_TOPIC, 0, 1),)))
    while isinstance(commit, m.OffsetCommitResponse) and commit.partitions[0].error_code in (
            Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR) and time.monotonic() < deadline:
        time.sleep(0.2)  # a new __consumer_offsets partition's leader loads it first
        commit = _request_raw(real.client_port,
                              m.OffsetCommitRequest(group, (m.OffsetCommitPartition(FUZZ_TOPIC, 0, 1),)))
    assert isinstance(commit, m.OffsetCommitResponse), f"OffsetCommit {group[:20]!r} got {commit!r}"
    assert commit.partitions[0].error_code == Errors.NONE, commit
    fetched = _request_raw(real.client_port, m.OffsetFetchRequest(group, ((FUZZ_TOPIC, 0),)))
    assert isinstance(fetched, m.OffsetFetchResponse), f"OffsetFetch {group[:20]!r} got {fetched!r}"
    assert [p.committed_offset for p in fetched.partitions] == [1], fetched
    _assert_no_new_traceback(real, sizes, f"OffsetCommit {group[:20]!r}")


def test_elect_leaders_with_an_unknown_election_type_is_answered(real: Cluster) -> None:
    """ElectLeaders v2 with election_type 119 (v2 knows 0 and 1; Kafka's controller answers
    INVALID_REQUEST). Found by the fuzzer: the broker decoded it, forwarded it, and the driver could not
    encode the forwarded request (UnsupportedVersionError raised out of NodeDriver._flush, losing the
    rest of that outbox batch); the client's connection was dropped."""
    msg = m.ElectLeadersRequest(0, (m.ElectLeadersPartition(FUZZ_TOPIC, 0),))
    preferred = wire.encode_request(msg, 1, version=2)
    unclean = wire.encode_request(m.ElectLeadersRequest(1, msg.partitions), 1, version=2)
    (at,) = [i for i in range(len(preferred)) if preferred[i] != unclean[i]]  # the election_type byte
    sizes = _log_sizes(real)
    resp = _request_raw(real.client_port, msg, version=2, payload=preferred[:at] + bytes([119]) + preferred[at + 1:])
    assert isinstance(resp, m.ElectLeadersResponse), f"ElectLeaders type 119 got {resp!r}"
    assert resp.error_code != Errors.NONE or any(r.error_code != Errors.NONE for r in resp.results), resp
    _assert_no_new_traceback(real, sizes, "ElectLeaders type 119")


def test_a_replica_fetch_naming_the_leader_itself_does_not_freeze_the_high_watermark(real: Cluster) -> None:
    """A replica Fetch on the INTERNAL listener whose replica_id is the leader's own id (Kafka:
    followerReplicaOrThrow finds no remote replica: NOT_LEADER_OR_FOLLOWER). Found by the fuzzer: the
    leader recorded itself as a follower at the fetch offset, and since it is in the ISR the high
    watermark stayed there: every later acks=all produce timed out."""
    topic = "fuzz-self-fetch"
    tid = _create_topic(real.client_port, topic, 1)
    batch = RecordBatch(-1, -1, (Record(0, None, b"v"),))
    produce = m.ProduceRequest(-1, 3000, (m.ProducePartition(topic, 0, (batch,)),))
    assert _request_raw(real.client_port, produce).partitions[0].error_code == Errors.NONE
    fetch = _request_raw(real.internal_port, m.FetchRequest(0, -1, 0, 1, (m.FetchPartition(tid, 0, -1, 0),)))
    assert isinstance(fetch, m.FetchResponse), fetch
    assert fetch.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER, fetch
    after = _request_raw(real.client_port, produce)
    assert after.partitions[0].error_code == Errors.NONE, after
    offsets = _request_raw(real.client_port, m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(topic, 0, -1),)))
    assert offsets.partitions[0].offset == 2, offsets


# ------------------------------------------------------------------------------ the fuzz test
def test_ten_thousand_fuzzed_frames_leave_every_node_up_and_serving(real: Cluster) -> None:
    """Last in this file: the state the fuzzer leaves (groups with members that never leave, phantom
    broker registrations, odd committed offsets) must not change what the tests above see."""
    began = time.monotonic()
    since = _log_sizes(real)
    print(f"\nfuzz seed {SEED} (KRAFTLOG_FUZZ_SEED={SEED} replays it)")
    assert_healthy(real, "before fuzzing", since)
    listeners = real.listeners
    per = {name: FRAMES // 3 + (1 if i < FRAMES % 3 else 0) for i, name in enumerate(listeners)}
    frames = {name: make_frames(SEED, name, _encoded(_corpus(real, name)), per[name]) for name in listeners}
    assert sum(len(f) for f in frames.values()) == FRAMES
    senders = {name: Sender(name, port) for name, port in listeners.items()}
    half = max(per.values()) // 2
    _fuzz_phase(senders, frames, 0, half)
    assert_healthy(real, f"midway (after {sum(min(half, n) for n in per.values())} frames)", since)
    _fuzz_phase(senders, frames, half, max(per.values()))
    assert_healthy(real, f"after {FRAMES} frames", since)
    elapsed = time.monotonic() - began

    # what was sent and what the nodes did
    total: collections.Counter = collections.Counter()
    for name, s in senders.items():
        print(f"{name}: {len(frames[name])} frames on {s.connections} connections")
        by_cat: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for (cat, outcome), n in s.outcomes.items():
            by_cat[cat][outcome] += n
            total[cat] += n
        for cat in CATEGORIES:
            if by_cat[cat]:
                print(f"  {cat:18} {sum(by_cat[cat].values()):5}  {dict(sorted(by_cat[cat].items()))}")
    print(f"frames by category: {dict(total)}")
    for node, counts in _close_reasons(real.directory).items():
        print(f"{node} closed connections for bad input: {dict(sorted(counts.items()))}")
    print(f"fuzzing took {elapsed:.1f} s")
    assert sum(total.values()) == FRAMES
    failures = [f for s in senders.values() for f in s.failures]
    assert not failures, (f"[seed {SEED}] {len(failures)} frames broke a framing rule:\n"
                          + "\n".join(failures[:30]))
