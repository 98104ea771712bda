"""Issue 31 on real processes: a compacted topic used by confluent-kafka.

A confluent-kafka producer (idempotent, lz4-compressed batches) writes 20 keys over and over, and a tombstone for
one of them, to a topic with ``cleanup.policy=compact`` and small segments; filler records roll the segments
so that everything before them is cleanable; a record without a key is refused with INVALID_RECORD. Every
broker's log cleaner cleans its own replica (``cluster status`` counts the cleanings); a consumer from the beginning
then reads one record per key, its latest value, and the
tombstone. The leader is then SIGKILLed and restarted: it loads its cleaned segments (offset gaps, emptied
producer batches) without dropping anything, and the consumer reads the same.

Every cluster runs on loopback in a directory of its own and is stopped in a ``finally`` (``running_cluster``:
clean shutdown, then SIGKILL by PID of whatever still runs).
"""

from __future__ import annotations

import os
import time

import pytest

from conftest import running_cluster, wait_for
from kraftlog.net import cluster as cl
from test_metrics_real import scrape

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

#: The cleaner looks for work every 200 ms (Kafka's default: 15 s).
CLEANER = {"log.cleaner.backoff.ms": "200"}
KEYS = 20
ROUNDS = 40


def _read_all(bootstrap: str, topic: str, group: str) -> list[tuple[int, str, str | None]]:
    """(offset, key, value) of every record a consumer reads from the beginning up to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    out: list[tuple[int, str, str | None]] = []
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                if c.position([TopicPartition(topic, 0)])[0].offset >= high:
                    break
                continue
            assert msg.error() is None, msg.error()
            value = msg.value()
            out.append((msg.offset(), msg.key().decode(), None if value is None else value.decode()))
            if msg.offset() >= high - 1:
                break
    finally:
        c.close()
    return out


def _cleanings(directory: str) -> dict[int, int]:
    return {s.id: (s.counters or {}).get("cleanings", 0) for s in cl.status(directory) if s.id != "controller"}


def test_a_compacted_topic_gives_confluent_kafka_one_record_per_key_with_its_latest_value(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    directory = str(tmp_path / "c")
    with running_cluster(directory, 3, config=CLEANER):
        bootstrap = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("table", 1, 3, config={
            "cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
            "min.insync.replicas": "2"})])["table"].result(30)
        before = _cleanings(directory)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "lz4",
                      "batch.size": 2048, "enable.idempotence": True})
        failed: list[str] = []

        def on_delivery(err, msg):
            if err is not None:
                failed.append(str(err))

        for r in range(ROUNDS):
            for k in range(KEYS):
                p.produce("table", key=f"key-{k:02d}", value=f"v{r:03d}-{'x' * 100}", partition=0,
                          on_delivery=on_delivery)
            p.poll(0)
        p.produce("table", key="key-07", value=None, partition=0, on_delivery=on_delivery)  # a tombstone
        assert p.flush(30) == 0
        # Then more than a segment of incompressible filler, so that every record before it lies in sealed
        # segments (the active one is never cleaned).
        for i in range(40):
            p.produce("table", key=f"filler-{i:02d}", value=os.urandom(150).hex(), partition=0,
                      on_delivery=on_delivery)
        assert p.flush(30) == 0
        assert failed == []
        written = ROUNDS * KEYS + 1 + 40
        # A record without a key: refused (LogValidator.validateKey), nothing appended.
        from confluent_kafka import KafkaError
        refused: list = []
        keyless = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False})
        keyless.produce("table", value="no key", partition=0, on_delivery=lambda err, _msg: refused.append(err))
        assert keyless.flush(30) == 0
        assert [e.code() for e in refused] == [KafkaError.INVALID_RECORD], refused
        # (counted from the topic's creation: with a 200 ms backoff a broker may already have cleaned all it can
        # while the keyless record was refused, and then has nothing left to clean)
        wait_for("every broker's cleaner to clean the topic", lambda: all(
            n > before.get(b, 0) for b, n in _cleanings(directory).items()), 60)

        def one_per_key() -> list[tuple[int, str, str | None]] | None:
            records = _read_all(bootstrap, "table", f"g{time.monotonic_ns()}")
            keys = [k for _o, k, _v in records if k.startswith("key-")]
            return records if len(keys) == len(set(keys)) == KEYS else None

        records = wait_for("a reader to see one record per key", one_per_key, 60)
        latest = {k: v for _o, k, v in records if k.startswith("key-")}
        assert latest.pop("key-07") is None  # the tombstone, within delete.retention.ms (1 day)
        assert latest == {f"key-{k:02d}": f"v{ROUNDS - 1:03d}-{'x' * 100}" for k in range(KEYS) if k != 7}
        offsets = [o for o, _k, _v in records]
        assert offsets == sorted(offsets) and offsets[-1] == written - 1  # offsets kept: the gaps are skipped
        assert len(records) < written / 4
        leader = admin.list_topics("table", timeout=10).topics["table"].partitions[0].leader
        nodes = {e["id"]: e for e in cl.load(directory)["nodes"]}
        scraped = scrape(nodes[leader]["metrics_port"])  # Kafka's LogCleaner gauges
        recopy = scraped["kafka_log_logcleaner_cleaner_recopy_percent"][0][1]
        # (Kafka's gauge is the last cleaning's: a later pass over already-clean segments copies all it reads)
        assert 0 < recopy <= 100 and scraped["kafka_log_logcleaner_max_buffer_utilization_percent"][0][1] >= 0
        assert scraped["kafka_log_logcleanermanager_time_since_last_run_ms"][0][1] >= 0
        part = os.path.join(directory, f"broker-{leader}", "data", "table-0")
        assert os.path.exists(os.path.join(directory, f"broker-{leader}", "data", "cleaner-offset-checkpoint"))
        assert not [n for n in os.listdir(part) if n.endswith((".cleaned.log", ".swap.log"))]
        # SIGKILL the leader and restart it: its cleaned segments load as they are.
        assert cl.kill_node(directory, leader)
        cl.start_broker(directory, leader)
        node = {s.id: s for s in cl.status(directory)}[leader]
        assert node.counters is not None and node.counters["dropped-at-load-count"] == 0, node.counters
        again = wait_for("a reader after the restart", one_per_key, 60)
        assert {k: v for _o, k, v in again if k.startswith("key-")} == {**latest, "key-07": None}
