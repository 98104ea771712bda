"""Issue 30 on real processes: segmented storage, retention and recovery from the recovery point.

* A confluent-kafka producer writes to a topic with small segments and ``retention.bytes``: the broker's
  partition directories hold Kafka's segment files, retention deletes the oldest ones, the low watermark
  (``get_watermark_offsets``, ListOffsets EARLIEST) moves on every replica, and a consumer that starts from the
  beginning reads from the new log start. DeleteRecords from confluent-kafka's admin client moves it further.
* A broker SIGKILLed while a producer writes recovers only the segments from its checkpointed recovery point
  on: ``cluster status --json`` counts the batches recovered one by one and those trusted by length, and
  nothing acknowledged is lost.

Every cluster runs on loopback in a directory of its own and is stopped in a ``finally`` (``running_cluster``:
clean shutdown, then SIGKILL by PID of whatever still runs).
"""

from __future__ import annotations

import os
import time

import pytest

from conftest import running_cluster, wait_for
from kraftlog.net import cluster as cl
from kraftlog.net.readback import read_replica_disks

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

#: Fast log-manager tasks (Kafka's settings "for testing"): retention and the checkpoints every 500 ms.
TASKS = {"log.initial.task.delay.ms": "500", "log.retention.check.interval.ms": "500",
         "log.segment.delete.delay.ms": "1000",
         "log.flush.offset.checkpoint.interval.ms": "500", "log.flush.start.offset.checkpoint.interval.ms": "500"}


def _segments(directory: str, broker: int, topic: str) -> list[str]:
    part = os.path.join(directory, f"broker-{broker}", "data", f"{topic}-0")
    return sorted(n for n in os.listdir(part) if n.endswith(".log"))


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def test_retention_bytes_moves_the_low_watermark_for_confluent_kafka(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    directory = str(tmp_path / "c")
    with running_cluster(directory, 3, config=TASKS):
        bootstrap = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("r", 1, 3, config={"segment.bytes": "4096", "retention.bytes": "16384",
                                                         "min.insync.replicas": "2"})])["r"].result(30)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 1})
        for i in range(400):
            p.produce("r", (f"{i:05d}-" + "x" * 200).encode(), partition=0)
            if i % 50 == 0:
                p.poll(0)
        assert p.flush(30) == 0
        wait_for("retention to move the low watermark", lambda: _watermarks(bootstrap, "r")[0] > 0, 30)
        low, high = _watermarks(bootstrap, "r")
        assert high == 400 and 0 < low < 400
        for b in (0, 1, 2):  # every replica rolled segments named by base offset and deleted the old ones
            names = wait_for(f"broker {b} to delete its oldest segments", lambda b=b: [
                n for n in [_segments(directory, b, "r")] if n[0] != "00000000000000000000.log"], 15)[0]
            assert len(names) >= 2 and all(len(n) == 24 for n in names), (b, names)
        status = {s.id: s for s in cl.status(directory)}
        assert sum(status[b].counters["segments-deleted"] for b in (0, 1, 2)) >= 3
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "from-start", "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition("r", 0, 0)])  # offset 0 is below the log start: reset to the earliest
            msg, deadline = None, time.monotonic() + 30
            while msg is None and time.monotonic() < deadline:
                m = c.poll(1)
                msg = m if m is not None and m.error() is None else None
            assert msg is not None and msg.offset() >= low
            assert msg.value().decode().startswith(f"{msg.offset():05d}-")
        finally:
            c.close()
        # DeleteRecords (confluent-kafka's admin delete_records) moves the log start further, up to the HWM.
        futures = admin.delete_records([TopicPartition("r", 0, 390)], operation_timeout=20)
        result = futures[TopicPartition("r", 0, 390)].result(30)
        assert result.low_watermark == 390
        assert _watermarks(bootstrap, "r") == (390, 400)


def test_a_broker_killed_mid_write_recovers_only_past_its_recovery_point(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    directory = str(tmp_path / "c")
    with running_cluster(directory, 3, config=TASKS):
        bootstrap = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("k", 1, 3, config={"segment.bytes": "8192",
                                                         "min.insync.replicas": "2"})])["k"].result(30)
        leader = admin.list_topics("k", timeout=10).topics["k"].partitions[0].leader
        victim = min({0, 1, 2} - {leader})
        acked: list[str] = []

        def on_delivery(err, msg):
            if err is None:
                acked.append(msg.value().decode())

        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 1,
                      "enable.idempotence": True})

        def produce(first: int, count: int, kill_at: int | None = None) -> None:
            for i in range(first, first + count):
                p.produce("k", f"{i:05d}-{'y' * 100}".encode(), partition=0, on_delivery=on_delivery)
                p.poll(0)
                if i == kill_at:
                    assert cl.kill_node(directory, victim)  # a follower, SIGKILLed while the producer writes

        produce(0, 500)
        assert p.flush(30) == 0
        checkpoint = os.path.join(directory, f"broker-{victim}", "data", "recovery-point-offset-checkpoint")
        # The rolls flushed the victim's segments; its recovery-point checkpoint (every 500 ms) says so.
        wait_for("the victim's recovery point checkpoint", lambda: os.path.exists(checkpoint) and int(
            open(checkpoint).read().split()[-1]) >= 400, 15)
        produce(500, 100, kill_at=550)
        assert p.flush(30) == 0
        cl.start_broker(directory, victim)
        node = {s.id: s for s in cl.status(directory)}[victim]
        recovered, trusted = node.counters["batches-recovered-at-load"], node.counters["batches-trusted-at-load"]
        # The rolled segments below the checkpointed recovery point were loaded by length only; the ones from
        # it on (the active segment at least) batch by batch.
        assert trusted > 0 and 0 < recovered < trusted, node.counters
        assert len(acked) == 600
        cl.down(directory)
        replicas, _leos = read_replica_disks(directory, 3, [("k", 0)])
        for b, (content, _hwm) in replicas["k-0"].items():  # every replica holds every acknowledged record
            assert set(acked) <= {v for v, _epoch in content.values()}, b
