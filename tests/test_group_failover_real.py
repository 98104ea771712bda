"""Issue 32 on a real cluster: a consumer group's commits survive the SIGKILL of its coordinator. Unmodified
confluent-kafka and kafka-python groups commit every 100 records; the broker leading the group's
``__consumer_offsets`` partition is killed mid-run; the group goes on with the partition's new leader; a new
consumer of the group resumes exactly at the last commit the group was acknowledged and nothing is skipped;
``kraftlog groups describe`` shows the group and its lag after the failover."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import running_cluster
from kraftlog.net import cluster as cl

pytestmark = pytest.mark.slow
confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 400
COMMIT_EVERY = 100
#: fast failure detection, so that the killed coordinator's partitions move within seconds
CONFIG = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500",
          "min.insync.replicas": "2"}


@pytest.fixture()
def cluster(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    directory = str(tmp_path / "c")
    with running_cluster(directory, 3, config=dict(CONFIG)):
        # every broker (cluster.json's bootstrap is broker 0 alone, which a test may kill)
        bs = ",".join(f"127.0.0.1:{e['port']}" for e in cl.load(directory)["nodes"] if e["id"] != "controller")
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": bs, "acks": "all"})
        for i in range(PARTITIONS * PER_PARTITION):
            p.produce(TOPIC, f"v{i}".encode(), partition=i % PARTITIONS)
        assert p.flush(30) == 0
        yield directory, bs


def _coordinator(bs: str, group: str) -> int:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bs})
    return admin.describe_consumer_groups([group])[group].result(30).coordinator.id


def _kill_broker(directory: str, broker: int) -> None:
    (pid,) = [e["pid"] for e in cl.load(directory)["nodes"] if e["id"] == broker]
    os.kill(pid, signal.SIGKILL)


def _describe(bs: str, group: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "kraftlog.cli", "groups", "describe", "--bootstrap-server", bs,
                          "--group", group, "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


class _ConfluentMember:
    def __init__(self, bs: str, group: str) -> None:
        from confluent_kafka import Consumer
        self.c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                           "enable.auto.commit": False, "session.timeout.ms": 10000})
        self.c.subscribe([TOPIC])
        self.errors: list[str] = []

    def poll(self) -> list[tuple[int, int]]:
        msg = self.c.poll(0.5)
        return [] if msg is None or msg.error() is not None else [(msg.partition(), msg.offset())]

    def commit(self) -> dict[int, int] | None:
        from confluent_kafka import KafkaError, KafkaException
        try:
            parts = self.c.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError._NO_OFFSET:
                return {}  # nothing consumed since the last commit
            self.errors.append(exc.args[0].name() if exc.args else str(exc))
            return None
        return {tp.partition: tp.offset for tp in parts if tp.error is None and tp.offset >= 0}

    def close(self) -> None:
        self.c.close()


class _KafkaPythonMember:
    def __init__(self, bs: str, group: str) -> None:
        from kafka import KafkaConsumer
        self.c = KafkaConsumer(TOPIC, bootstrap_servers=bs.split(","), group_id=group, auto_offset_reset="earliest",
                               enable_auto_commit=False, session_timeout_ms=10000, request_timeout_ms=31000)
        self.errors: list[str] = []

    def poll(self) -> list[tuple[int, int]]:
        out = []
        for tp, records in self.c.poll(timeout_ms=500).items():
            out += [(tp.partition, r.offset) for r in records]
        return out

    def commit(self) -> dict[int, int] | None:
        from kafka.errors import KafkaError
        positions = {tp: self.c.position(tp) for tp in self.c.assignment()}  # what commit() commits
        try:
            self.c.commit()
        except KafkaError as exc:
            self.errors.append(type(exc).__name__)
            return None
        return {tp.partition: offset for tp, offset in positions.items() if offset is not None}

    def close(self) -> None:
        self.c.close(autocommit=False)


def _failover(directory: str, bs: str, member_cls, group: str) -> None:
    member = member_cls(bs, group)
    delivered: set[tuple[int, int]] = set()
    acknowledged: dict[int, int] = {}
    since_commit = 0
    killed = None
    deadline = time.monotonic() + 120
    try:
        # Consume about two thirds (committing every 100 records), killing the coordinator midway.
        while len(delivered) < PARTITIONS * PER_PARTITION * 2 // 3 and time.monotonic() < deadline:
            for record in member.poll():
                delivered.add(record)
                since_commit += 1
            if since_commit >= COMMIT_EVERY:
                committed = member.commit()
                if committed is not None:  # acknowledged: the group's position now
                    acknowledged.update(committed)
                    since_commit = 0
            if killed is None and len(delivered) >= PARTITIONS * PER_PARTITION // 3 and acknowledged:
                killed = _coordinator(bs, group)
                _kill_broker(directory, killed)
        assert killed is not None and len(delivered) >= PARTITIONS * PER_PARTITION * 2 // 3
        # a last commit, after the failover: to the new coordinator
        last = member.commit()
        while last is None and time.monotonic() < deadline:
            member.poll()
            last = member.commit()
        assert last is not None, member.errors
        acknowledged.update(last)
    finally:
        member.close()  # no commit on close: the next member resumes from the last acknowledged commit
    assert _coordinator(bs, group) != killed
    # A new member resumes exactly at the acknowledged commits, and the group skips nothing.
    resumed = member_cls(bs, group)
    first: dict[int, int] = {}
    try:
        while len(delivered) < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
            for partition, offset in resumed.poll():
                first.setdefault(partition, offset)
                delivered.add((partition, offset))
        assert len(delivered) == PARTITIONS * PER_PARTITION, "records the group never delivered"
        assert first == {p: acknowledged.get(p, 0) for p in first}, (first, acknowledged)  # 0: never committed
        assert resumed.commit() is not None
        report = _describe(bs, group)
        assert report["group"] == group and report["state"] == "Stable" and report["members"] == 1
        assert [(r["current_offset"], r["log_end_offset"], r["lag"]) for r in report["partitions"]] == [
            (PER_PARTITION, PER_PARTITION, 0)] * PARTITIONS
    finally:
        resumed.close()


def test_a_confluent_kafka_group_resumes_from_its_last_commit_after_its_coordinator_is_killed(cluster):
    directory, bs = cluster
    _failover(directory, bs, _ConfluentMember, "confluent-group")


def test_a_kafka_python_group_resumes_from_its_last_commit_after_its_coordinator_is_killed(cluster):
    pytest.importorskip("kafka")
    directory, bs = cluster
    _failover(directory, bs, _KafkaPythonMember, "kafka-python-group")
