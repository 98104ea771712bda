"""Issue 28 item 1 on a real cluster with unmodified clients: confluent-kafka, kafka-python and aiokafka
list, describe and delete consumer groups and list a group's offsets; ``kraftlog groups describe`` shows
each partition's lag and the member holding it, and ``groups reset-offsets`` moves an inactive group."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from conftest import running_cluster
from kraftlog.net import cluster as cl

pytestmark = pytest.mark.slow
confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "orders"
RECORDS = 90  # 30 per partition


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    directory = str(tmp_path_factory.mktemp("groups") / "c")
    with running_cluster(directory, 3):
        bs = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": bs, "acks": "all"})
        for i in range(RECORDS):
            p.produce(TOPIC, f"v{i}".encode(), partition=i % 3)
        assert p.flush(30) == 0
        yield bs


def _consume(bs: str, group: str, count: int):
    """A confluent-kafka consumer of ``group`` that consumed ``count`` records and committed them; still a
    member (the caller closes it)."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": f"{group}-client"})
    c.subscribe([TOPIC])
    got, deadline = 0, time.monotonic() + 40
    while got < count and time.monotonic() < deadline:
        msg = c.poll(1)
        got += msg is not None and msg.error() is None
    assert got >= count
    c.commit(asynchronous=False)
    return c


def _kraftlog(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftlog.cli", *args], capture_output=True, text=True, timeout=120)


def test_confluent_kafka_lists_describes_deletes_groups_and_lists_their_offsets(bootstrap):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    consumer = _consume(bootstrap, "ck-group", 45)
    try:
        listed = admin.list_consumer_groups(request_timeout=20).result(30)
        assert listed.errors == []
        mine = {g.group_id: g for g in listed.valid}["ck-group"]
        assert mine.state == ConsumerGroupState.STABLE and not mine.is_simple_consumer_group
        described = admin.describe_consumer_groups(["ck-group"], request_timeout=20)["ck-group"].result(30)
        assert described.state == ConsumerGroupState.STABLE and described.partition_assignor
        (member,) = described.members
        assert member.client_id == "ck-group-client" and member.host == "/127.0.0.1"
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1, 2]
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("ck-group")],
                                                    request_timeout=20)["ck-group"].result(30)
        assert sum(tp.offset for tp in offsets.topic_partitions) >= 45
        with pytest.raises(confluent_kafka.KafkaException) as refused:
            admin.delete_consumer_groups(["ck-group"], request_timeout=20)["ck-group"].result(30)
        assert refused.value.args[0].code() == confluent_kafka.KafkaError.NON_EMPTY_GROUP
    finally:
        consumer.close()
    admin.delete_consumer_groups(["ck-group"], request_timeout=20)["ck-group"].result(30)
    assert "ck-group" not in [g.group_id for g in admin.list_consumer_groups(request_timeout=20).result(30).valid]


def test_kafka_python_lists_describes_deletes_groups_and_lists_their_offsets(bootstrap):
    from kafka import KafkaAdminClient
    consumer = _consume(bootstrap, "kp-group", 30)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        assert "kp-group" in [g["group_id"] for g in admin.list_groups()]
        described = admin.describe_groups(["kp-group"])["kp-group"]
        assert described["group_state"] == "Stable" and len(described["members"]) == 1
        offsets = admin.list_group_offsets("kp-group")["kp-group"]
        assert {tp.partition for tp in offsets} <= {0, 1, 2} and sum(o.offset for o in offsets.values()) >= 30
        consumer.close()
        deadline = time.monotonic() + 30
        while admin.describe_groups(["kp-group"])["kp-group"]["members"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert admin.delete_groups(["kp-group"]) == {"kp-group": "OK"}
        assert "kp-group" not in [g["group_id"] for g in admin.list_groups()]
    finally:
        admin.close()


def test_aiokafka_lists_and_describes_groups_and_lists_their_offsets(bootstrap):
    """aiokafka 0.14's admin client has no group deletion; listing, describing and offsets work."""
    async def run():
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="aio-group",
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            got, deadline = 0, time.monotonic() + 40
            while got < 30 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=1000)
                got += sum(len(v) for v in batch.values())
            await consumer.commit()
            assert ("aio-group", "consumer") in await admin.list_consumer_groups()
            (response,) = await admin.describe_consumer_groups(["aio-group"])
            group = response.groups[0]
            assert (group[0], group[1], group[2]) == (0, "aio-group", "Stable") and len(group[5]) == 1
            offsets = await admin.list_consumer_group_offsets("aio-group")
            assert sum(o.offset for o in offsets.values()) >= got > 0
        finally:
            await consumer.stop()
            await admin.close()

    asyncio.run(run())


def test_kraftlog_groups_describe_shows_lag_and_reset_offsets_moves_an_inactive_group(bootstrap):
    """With a member holding every partition after committing 45 of 90 records: describe shows per
    partition CURRENT-OFFSET, LOG-END-OFFSET 30 and LAG = 30 - CURRENT-OFFSET, and the member; a reset is
    refused while it is a member; once it left, a dry run changes nothing and --execute commits offset 0."""
    consumer = _consume(bootstrap, "cli-group", 45)
    try:
        out = _kraftlog("groups", "describe", "--bootstrap-server", bootstrap, "--group", "cli-group", "--json")
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["state"] == "Stable" and report["members"] == 1
        rows = report["partitions"]
        assert [r["partition"] for r in rows] == [0, 1, 2]
        for r in rows:
            assert r["log_end_offset"] == 30
            assert r["lag"] == (None if r["current_offset"] is None else 30 - r["current_offset"])
            assert r["client_id"] == "cli-group-client" and r["consumer_id"] and r["host"] == "/127.0.0.1"
        assert sum(r["current_offset"] or 0 for r in rows) >= 45
        table = _kraftlog("groups", "describe", "--bootstrap-server", bootstrap, "--group", "cli-group")
        assert table.stdout.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                                        "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        refused = _kraftlog("groups", "reset-offsets", "--bootstrap-server", bootstrap, "--group", "cli-group",
                            "--all-topics", "--to-earliest", "--execute")
        assert refused.returncode == 1 and "can only be reset if the group 'cli-group' is inactive" in refused.stderr
    finally:
        consumer.close()
    dry = _kraftlog("groups", "reset-offsets", "--bootstrap-server", bootstrap, "--group", "cli-group",
                    "--topic", TOPIC, "--to-earliest")
    assert dry.returncode == 0 and "dry run" in dry.stdout
    done = _kraftlog("groups", "reset-offsets", "--bootstrap-server", bootstrap, "--group", "cli-group",
                     "--topic", TOPIC, "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    after = json.loads(_kraftlog("groups", "describe", "--bootstrap-server", bootstrap, "--group", "cli-group",
                                 "--json").stdout)
    assert [(r["current_offset"], r["lag"]) for r in after["partitions"]] == [(0, 30)] * 3
    listed = _kraftlog("groups", "list", "--bootstrap-server", bootstrap, "--json")
    assert {"group": "cli-group", "state": "Empty", "protocol_type": "consumer"} in json.loads(listed.stdout)
    gone = _kraftlog("groups", "delete", "--bootstrap-server", bootstrap, "--group", "cli-group")
    assert gone.returncode == 0 and "was successful" in gone.stdout
    again = _kraftlog("groups", "delete", "--bootstrap-server", bootstrap, "--group", "cli-group")
    assert again.returncode == 1 and again.stderr.strip() == "error: deletion failed: cli-group: GROUP_ID_NOT_FOUND"
