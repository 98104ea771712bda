"""Topic deletion on a real cluster (``kraftlog cluster up`` processes on loopback, confluent-kafka as the
client): `kraftlog topics delete` removes the topic from the metadata every broker serves and its
partition files from every broker's data directory; a topic created again under the same name is a new,
empty topic (Kafka's DeleteTopics under KRaft). The in-process rules are tests/test_delete_topics.py.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition  # noqa: E402  (test_real_cluster skips without it)

from kraftlog.broker.broker import PARTITION_METADATA_FILE, decode_partition_metadata
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from test_real_cluster import _consume, _produce, fresh_cluster, kraftlog

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh(tmp_path):
    yield from fresh_cluster(tmp_path)

TOPIC = "doomed"
PARTITIONS = 3



def partition_files(cluster) -> dict[int, list[str]]:
    """Broker id -> the files under its data/<TOPIC>-<p>/ directories (paths relative to the cluster dir)."""
    out = {}
    for node in cluster.info["nodes"]:
        if node["role"] != "broker":
            continue
        data = os.path.join(cluster.dir, f"broker-{node['id']}", "data")
        files = []
        for p in range(PARTITIONS):
            for root, _, names in os.walk(os.path.join(data, f"{TOPIC}-{p}")):
                files += [os.path.relpath(os.path.join(root, n), cluster.dir) for n in names]
        out[node["id"]] = sorted(files)
    return out


def metadata_errors(cluster) -> dict[int, int]:
    """Broker id -> the error Metadata(TOPIC) answers on that broker's client listener."""
    out = {}
    for node in cluster.info["nodes"]:
        if node["role"] == "broker":
            with KafkaConnection(f"127.0.0.1:{node['port']}") as conn:
                out[node["id"]] = conn.request(m.MetadataRequest((TOPIC,))).topics[0].error_code
    return out


def topic_id(cluster) -> uuid.UUID:
    out = kraftlog("topics", "describe", "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC, "--json")
    return uuid.UUID(json.loads(out.stdout)["topic_id"])


def read_all(cluster, expected: int, timeout_s: float = 60.0) -> tuple[list, list]:
    """Up to ``expected`` records of every partition from offset 0 (confluent-kafka, assign()), and each
    partition's (low, high) watermarks."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        got = _consume(c, expected, timeout_s)
        watermarks = [c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10) for p in range(PARTITIONS)]
    finally:
        c.close()
    return got, watermarks


def test_delete_removes_the_topic_and_its_files_and_a_recreated_topic_starts_empty(fresh):
    """Kafka's DeleteTopics under KRaft, end to end: `topics delete` succeeds; every broker's Metadata then
    answers UNKNOWN_TOPIC_OR_PARTITION for the name and `topics describe` fails with it; no broker keeps a
    file of the topic's partitions; deleting it again fails with UNKNOWN_TOPIC_OR_PARTITION. Created again
    under the same name it has a new topic id, holds nothing (watermarks 0/0, no record to read), and
    a consumer reads back exactly the records produced after the recreation, from offset 0."""
    cluster = fresh
    cluster.create_topic(TOPIC, PARTITIONS)
    old_id = topic_id(cluster)
    old = [f"old-{i}".encode() for i in range(300)]
    _produce(cluster.bootstrap, TOPIC, old, acks="all", **{"enable.idempotence": True})
    files = partition_files(cluster)
    assert all(files[b] for b in files), files  # every broker holds replicas of the topic (RF 3)

    out = kraftlog("topics", "delete", "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC)
    assert out.stdout.strip() == f"deleted topic {TOPIC}"
    cluster.wait_for("every broker to drop the topic from Metadata", lambda: set(metadata_errors(cluster).values())
                     == {Errors.UNKNOWN_TOPIC_OR_PARTITION})
    described = kraftlog("topics", "describe", "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC, check=False)
    assert described.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in described.stderr
    cluster.wait_for("every broker to delete the partition files",
                     lambda: not any(partition_files(cluster).values()))
    leftover = [d for node in cluster.info["nodes"] if node["role"] == "broker" for p in range(PARTITIONS)
                if os.path.exists(d := os.path.join(cluster.dir, f"broker-{node['id']}", "data", f"{TOPIC}-{p}"))]
    assert leftover == []  # the partition directories go too, as Kafka deletes the log dir
    again = kraftlog("topics", "delete", "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC, check=False)
    assert again.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in again.stderr, again.stderr

    cluster.create_topic(TOPIC, PARTITIONS)
    new_id = topic_id(cluster)
    assert new_id != old_id
    got, watermarks = read_all(cluster, 1, timeout_s=5)
    assert got == [] and watermarks == [(0, 0)] * PARTITIONS
    new = [f"new-{i}".encode() for i in range(120)]
    acked = _produce(cluster.bootstrap, TOPIC, new, acks="all", **{"enable.idempotence": True})
    got, _ = read_all(cluster, len(new))
    assert sorted(msg.value() for msg in got) == sorted(new)
    assert {(msg.partition(), msg.offset()) for msg in got} == {(p, o) for p, o, _ in acked}
    for p in range(PARTITIONS):  # offsets restart at 0 in the new topic: dense, nothing of the old one
        offsets = sorted(msg.offset() for msg in got if msg.partition() == p)
        assert offsets == list(range(len(offsets)))
    for broker, paths in partition_files(cluster).items():  # each replica's dir names the new topic id
        ids = {decode_partition_metadata(open(os.path.join(cluster.dir, path)).read())
               for path in paths if path.endswith(PARTITION_METADATA_FILE)}
        assert ids == {new_id}, (broker, paths)

