"""Hostile input on real processes (issue 24, findings 1 and 2): a bad request gets Kafka's error and
never crashes a node or corrupts a log.

One module cluster (a controller and 3 brokers, OS processes on loopback, free ports, stopped by PID in
a ``finally``) takes every bad topic name and count of the issue's finding 1, each answered with Kafka's
error while the cluster stays healthy and a valid topic created afterwards works; then the malformed
batches of finding 2 (a header record count that disagrees with the body both ways, 2^31-1 records
claimed in an 80-byte batch, a bad CRC-32C), each answered with Kafka's per-partition error on a
connection that stays open, the partition's offsets intact; and a 50 MB record refused with
MESSAGE_TOO_LARGE at default settings. The batches are built by hand from ``protocol/records.py``'s
codec and sent with ``KafkaConnection`` (``protocol/wire.py`` and the framing), as
``tests/test_real_fuzz.py`` does. A second test starts a cluster on a data directory whose metadata log
already holds topics with bad names (written with FileDisk, as a cluster from before this fix left it).
"""

from __future__ import annotations

import os
import struct
import time
import uuid

import pytest
from click.testing import CliRunner
from crc32c import crc32c

from conftest import apply_errors, running_cluster, wait_for
from kraftlog.controller.controller import METADATA_LOG
from kraftlog.metadata.records import ConfigRecord, PartitionRecord, TopicRecord
from kraftlog.net import cluster as cl
from kraftlog.net.cli import topics as topics_cli
from kraftlog.net.client import KafkaConnection
from kraftlog.net.disk import FileDisk
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
BROKERS = 3

#: Finding 1's names, each with the error Kafka's controller answers.
BAD_NAMES = [
    ("bad topic", Errors.INVALID_TOPIC_EXCEPTION),
    ("", Errors.INVALID_TOPIC_EXCEPTION),  # an unset $TOPIC
    ("../../escape", Errors.INVALID_TOPIC_EXCEPTION),
    ("x" * 300, Errors.INVALID_TOPIC_EXCEPTION),
    ("a/b", Errors.INVALID_TOPIC_EXCEPTION),
    ("..", Errors.INVALID_TOPIC_EXCEPTION),
    (".", Errors.INVALID_TOPIC_EXCEPTION),
    ("tópico", Errors.INVALID_TOPIC_EXCEPTION),
    ("__cluster_metadata", Errors.INVALID_REQUEST),
]
#: Finding 1's counts: (partitions, replication factor, Kafka's error).
BAD_COUNTS = [
    (0, 3, Errors.INVALID_PARTITIONS),
    (1, 0, Errors.INVALID_REPLICATION_FACTOR),
    (-2, 3, Errors.INVALID_PARTITIONS),
    (1, -2, Errors.INVALID_REPLICATION_FACTOR),
    (1, BROKERS + 1, Errors.INVALID_REPLICATION_FACTOR),
]


#: The HWM checkpoint, where a bad topic name crashed brokers (finding 1), every second instead of every 5 s,
#: so that the waits past a checkpoint are short.
FAST_CHECKPOINTS = {"replica.high.watermark.checkpoint.interval.ms": "1000"}


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("hostile-cluster"))
    with running_cluster(directory, BROKERS, config=FAST_CHECKPOINTS):
        yield directory


def bootstrap(directory: str) -> str:
    return ",".join(f"{HOST}:{e['port']}" for e in cl.load(directory)["nodes"] if e["role"] == "broker")


def create(directory: str, *topics: m.CreatableTopic) -> m.CreateTopicsResponse:
    with KafkaConnection(bootstrap(directory), timeout_s=30) as k:
        return k.request(m.CreateTopicsRequest(tuple(topics)))


def leaders(directory: str, topic: str) -> list[int] | None:
    with KafkaConnection(bootstrap(directory), timeout_s=30) as k:
        md = k.request(m.MetadataRequest((topic,)))
    t = md.topics[0] if md.topics else None
    if t is None or t.error_code != Errors.NONE or not t.partitions:
        return None
    got = [p.leader_id for p in sorted(t.partitions, key=lambda p: p.partition_index)]
    return got if all(b >= 0 for b in got) else None


def new_topic(directory: str, name: str, partitions: int = 1) -> tuple[uuid.UUID, int]:
    """Create ``name`` (replication factor 3) and wait until it is led; (its topic id, the port of
    partition 0's leader)."""
    (r,) = create(directory, m.CreatableTopic(name, partitions, 3)).topics
    assert r.error_code == Errors.NONE, r
    assert (r.num_partitions, r.replication_factor) == (partitions, 3), r
    leader = wait_for(f"{name} led", lambda: leaders(directory, name))[0]
    return r.topic_id, next(e["port"] for e in cl.load(directory)["nodes"] if e["id"] == leader)


def assert_healthy(directory: str) -> None:
    """Every node runs, every broker is unfenced, no node counted a metadata record it could not apply."""
    nodes = cl.status(directory)
    assert all(n.alive for n in nodes), [n.as_dict() for n in nodes]
    assert all(n.fenced is False for n in nodes if n.role == "broker"), [n.as_dict() for n in nodes]
    assert all(apply_errors(n) == 0 for n in nodes), [n.as_dict() for n in nodes]


def produce(conn: KafkaConnection, topic: str, records, partition: int = 0) -> m.ProducePartitionResponse:
    resp = conn.request(m.ProduceRequest(-1, 15_000, (m.ProducePartition(topic, partition, tuple(records)),)))
    (p,) = resp.partitions
    return p


def valid_topic_works(directory: str, name: str) -> None:
    """A topic created now gets leaders on every partition and takes records that read back in order."""
    _, port = new_topic(directory, name, 3)
    now = int(time.time() * 1000)
    with KafkaConnection(f"{HOST}:{port}", timeout_s=30) as k:
        p = produce(k, name, [RecordBatch(-1, -1, (Record(now, b"k", b"after"),))])
        assert (p.error_code, p.base_offset) == (Errors.NONE, 0), p


# ============================================================================== finding 1
def test_bad_topic_names_and_counts_get_kafkas_errors_and_the_cluster_stays_healthy(real):
    """Issue 24 finding 1: every bad name and count is refused with Kafka's error (Topic.validate:
    INVALID_TOPIC_EXCEPTION; ControllerApis: INVALID_REQUEST for __cluster_metadata;
    ReplicationControlManager.createTopic: INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR), nothing is
    created, every node stays up with no metadata record it could not apply, and a valid topic created
    afterwards works. ``kraftlog topics create`` exits 1 naming the error."""
    for name, error in BAD_NAMES:
        (r,) = create(real, m.CreatableTopic(name, 1, 3)).topics
        assert (r.name, r.error_code) == (name, error), r
    for partitions, rf, error in BAD_COUNTS:
        (r,) = create(real, m.CreatableTopic(f"counts-{partitions}-{rf}", partitions, rf)).topics
        assert r.error_code == error, (partitions, rf, r)
    (r,) = create(real, m.CreatableTopic("a.b", 1, 3)).topics
    assert r.error_code == Errors.NONE, r
    (r,) = create(real, m.CreatableTopic("a_b", 1, 3)).topics
    assert r.error_code == Errors.INVALID_TOPIC_EXCEPTION and "collides" in r.error_message, r
    cli = CliRunner().invoke(topics_cli, ["create", "--bootstrap-server", bootstrap(real), "--topic", "bad topic"])
    assert cli.exit_code == 1 and "INVALID_TOPIC_EXCEPTION" in cli.output, cli.output
    cli = CliRunner().invoke(topics_cli, ["create", "--bootstrap-server", bootstrap(real), "--topic", "by-default",
                                          "--partitions", "-1", "--replication-factor", "-1"])
    # -1: num.partitions (1) and default.replication.factor, which `cluster up` set to min(3, brokers)
    assert cli.exit_code == 0 and f"(1 partitions, replication factor {min(3, BROKERS)}" in cli.output, cli.output
    time.sleep(1.5)  # past a HWM checkpoint (1 s interval) on every broker: the crash of finding 1 came there
    with KafkaConnection(bootstrap(real), timeout_s=30) as k:
        md = k.request(m.MetadataRequest(None))
    assert {t.name for t in md.topics} == {"a.b", "by-default"}, md
    valid_topic_works(real, "valid-after-names")
    time.sleep(1.5)
    assert_healthy(real)


# ============================================================================== finding 2
def _fix_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def _batch(values: list[bytes], now: int) -> bytearray:
    return bytearray(RecordBatch(0, -1, tuple(Record(now, None, v) for v in values)).data)


def _claiming(data: bytearray, count: int) -> RecordBatch:
    """The batch's bytes with ``recordsCount`` = ``count`` and a matching ``lastOffsetDelta`` (so the
    header agrees with itself and only the body disagrees), CRC-32C fixed."""
    struct.pack_into(">i", data, 23, count - 1)
    struct.pack_into(">i", data, 57, count)
    return RecordBatch.from_bytes(_fix_crc(data))


def test_malformed_batches_get_kafkas_errors_offsets_intact_connection_open(real):
    """Issue 24 finding 2: a batch claiming 5 records with 1 in its body, one claiming 1 with 5, one
    claiming 2^31-1 in 80 bytes get INVALID_RECORD; a bad CRC-32C gets CORRUPT_MESSAGE (Kafka's
    DefaultRecordBatch iterator, LogValidator, analyzeAndValidateRecords); nothing is appended (the LEO
    and the records read back are those of the valid batches around them) and the same connection keeps
    serving; producing to an internal topic is INVALID_TOPIC_EXCEPTION."""
    topic_id, port = new_topic(real, "batches")
    now = int(time.time() * 1000)
    five = [f"v{i}".encode() for i in range(5)]
    one_of_five = _claiming(_batch([b"lonely"], now), 5)
    five_as_one = _claiming(_batch(five, now), 1)
    huge = _claiming(_batch([b"x"], now), 2**31 - 1)
    assert len(huge.data) < 80
    bad_crc = _batch([b"flipped"], now)
    bad_crc[-1] ^= 0xFF
    bad_crc_batch = RecordBatch.from_bytes(bytes(bad_crc), verify_crc=False)
    with KafkaConnection(f"{HOST}:{port}", timeout_s=30) as k:
        p = produce(k, "batches", [RecordBatch(-1, -1, (Record(now, None, b"first"),))])
        assert (p.error_code, p.base_offset) == (Errors.NONE, 0), p
        for batch, error in ((one_of_five, Errors.INVALID_RECORD), (five_as_one, Errors.INVALID_RECORD),
                             (huge, Errors.INVALID_RECORD), (bad_crc_batch, Errors.CORRUPT_MESSAGE)):
            p = produce(k, "batches", [batch])
            assert p.error_code == error, p
        p = produce(k, "__consumer_offsets", [RecordBatch(-1, -1, (Record(now, None, b"x"),))])
        assert p.error_code == Errors.INVALID_TOPIC_EXCEPTION, p
        p = produce(k, "batches", [RecordBatch(-1, -1, (Record(now, None, b"second"),))])
        assert (p.error_code, p.base_offset) == (Errors.NONE, 1), p  # the same connection, LEO 1 before
        offsets = k.request(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("batches", 0, -1),)))
        assert offsets.partitions[0].offset == 2, offsets
        got = []
        for b in k.request(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(topic_id, 0, -1, 0),))).partitions[0].records:
            got += [(b.base_offset + i, rec.value) for i, rec in enumerate(b.records)]
        assert got == [(0, b"first"), (1, b"second")]
    assert_healthy(real)


def test_a_50_mb_record_is_message_too_large_at_default_settings(real):
    """Issue 24 finding 2: ``message.max.bytes`` (Kafka's default 1,048,588) bounds a batch: a 50 MB
    record is refused with MESSAGE_TOO_LARGE and nothing is appended."""
    _, port = new_topic(real, "big")
    with KafkaConnection(f"{HOST}:{port}", timeout_s=60) as k:
        p = produce(k, "big", [RecordBatch(-1, -1, (Record(int(time.time() * 1000), None, os.urandom(50_000_000)),))])
        assert p.error_code == Errors.MESSAGE_TOO_LARGE, p
        offsets = k.request(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("big", 0, -1),)))
        assert offsets.partitions[0].offset == 0, offsets
    assert_healthy(real)


# ============================================================================== a log from before the fix
def test_a_metadata_log_holding_bad_names_from_before_the_fix_starts_and_serves(tmp_path):
    """Issue 24: a data directory whose metadata log already holds topics with bad names (what CreateTopics
    let through before names were validated) starts: every node comes up, the brokers unfenced, each bad
    record counted (metadata-apply-error-count in ``cluster status --json``) and logged, every valid topic
    served with its records, and a topic created afterwards works."""
    directory = str(tmp_path / "old-cluster")
    with running_cluster(directory, BROKERS, config=FAST_CHECKPOINTS):
        kept_id, port = new_topic(directory, "kept")
        now = int(time.time() * 1000)
        with KafkaConnection(f"{HOST}:{port}", timeout_s=30) as k:
            p = produce(k, "kept", [RecordBatch(-1, -1, tuple(Record(now, None, b"r%d" % i) for i in range(3)))])
            assert p.error_code == Errors.NONE, p
    # What the old controller wrote for `topics create --topic "bad topic"` and friends.
    disk = FileDisk(os.path.join(directory, "controller"))
    records: list = []
    for i, name in enumerate(("bad topic", "", "../../escape", "y" * 300, "a/b", "..")):
        tid = uuid.UUID(int=0xBAD0 + i)
        records += [TopicRecord(name, tid), ConfigRecord(2, name, "min.insync.replicas", "1"),
                    PartitionRecord(0, tid, (0, 1, 2), (0, 1, 2), 0)]
    records.append(ConfigRecord(2, "kept", "min.insync.replicas", "abc"))  # an unchecked config value
    disk.append_many(METADATA_LOG, records, now)
    disk.fsync(METADATA_LOG, now)
    disk.close()
    with running_cluster(directory, BROKERS, config=FAST_CHECKPOINTS):
        nodes = cl.status(directory)
        assert all(n.alive for n in nodes) and all(n.fenced is False for n in nodes if n.role == "broker"), \
            [n.as_dict() for n in nodes]
        # 6 TopicRecords with bad names, their 6 PartitionRecords (unknown topic ids) and the bad value.
        wait_for("every node counted the 13 records", lambda: all(
            apply_errors(n) == 13 for n in cl.status(directory)), timeout_s=30)
        with open(os.path.join(directory, "broker-0.log")) as f:
            assert "not applied (Topic name is invalid: 'bad topic'" in f.read()
        leader = wait_for("kept led", lambda: leaders(directory, "kept"))[0]
        port = next(e["port"] for e in cl.load(directory)["nodes"] if e["id"] == leader)

        def kept_values():
            with KafkaConnection(f"{HOST}:{port}", timeout_s=30) as k:
                fetched = k.request(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(kept_id, 0, -1, 0),)))
            return [rec.value for b in fetched.partitions[0].records for rec in b.records]
        wait_for("kept's records", lambda: kept_values() == [b"r0", b"r1", b"r2"], timeout_s=30)
        valid_topic_works(directory, "created-after-restart")
        time.sleep(2.5)  # HWM checkpoints on every broker (1 s interval)
        assert all(n.alive for n in cl.status(directory))
