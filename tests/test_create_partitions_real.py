"""Issue 28 item 3 on a real cluster with unmodified clients: confluent-kafka's ``create_partitions`` from 1 to
3 (and a producer then writing to the new partitions), Kafka's INVALID_PARTITIONS for a count that does not
increase, and the legacy ``alter_configs`` (full replacement) in confluent-kafka and aiokafka. In process:
tests/test_create_partitions.py."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import running_cluster
from kraftlog.net import cluster as cl

confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory) -> str:
    """One 2-broker cluster for the module."""
    directory = str(tmp_path_factory.mktemp("parts") / "c")
    with running_cluster(directory, 2):
        yield cl.load(directory)["bootstrap"]


def admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import NewTopic
    client = admin(bootstrap)  # kept alive until the result is in (a destroyed handle fails its futures)
    client.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def topic_configs(bootstrap: str, name: str) -> dict:
    """The topic's configs set on the topic (DescribeConfigs' DYNAMIC_TOPIC_CONFIG source)."""
    from confluent_kafka.admin import ConfigResource, ConfigSource
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    client = admin(bootstrap)
    entries = client.describe_configs([res])[res].result(30)
    return {k: e.value for k, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


@pytest.mark.slow
def test_confluent_create_partitions_from_1_to_3_and_the_producer_uses_them(bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewPartitions
    create_topic(bootstrap, "grow")
    seen: set[int] = set()

    def report(err, msg) -> None:
        assert err is None, err
        seen.add(msg.partition())

    p = Producer({"bootstrap.servers": bootstrap, "topic.metadata.refresh.interval.ms": 500})
    p.produce("grow", b"v", key=b"k0", on_delivery=report)
    assert p.flush(30) == 0 and seen == {0}
    client = admin(bootstrap)
    client.create_partitions([NewPartitions("grow", 3)])["grow"].result(30)
    assert len(client.list_topics("grow", timeout=10).topics["grow"].partitions) == 3
    deadline = time.monotonic() + 30
    while seen != {0, 1, 2} and time.monotonic() < deadline:  # the producer refreshes its metadata
        for i in range(30):
            p.produce("grow", b"v", key=f"k{i}".encode(), on_delivery=report)
        assert p.flush(30) == 0
        time.sleep(0.5)
    assert seen == {0, 1, 2}


@pytest.mark.slow
def test_confluent_create_partitions_that_does_not_increase_is_invalid_partitions(bootstrap):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewPartitions
    create_topic(bootstrap, "fixed", 2)
    client = admin(bootstrap)
    with pytest.raises(KafkaException) as info:
        client.create_partitions([NewPartitions("fixed", 2)])["fixed"].result(30)
    assert info.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    with pytest.raises(KafkaException) as info:
        client.create_partitions([NewPartitions("nope", 2)])["nope"].result(30)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_confluent_legacy_alter_configs_replaces_the_topics_configs(bootstrap):
    """AdminClient.alter_configs is the legacy AlterConfigs: what it does not name is removed."""
    from confluent_kafka.admin import ConfigResource
    create_topic(bootstrap, "conf-ck")
    client = admin(bootstrap)
    res = ConfigResource(ConfigResource.Type.TOPIC, "conf-ck", set_config={"flush.messages": "5", "flush.ms": "700"})
    client.alter_configs([res])[res].result(30)
    assert topic_configs(bootstrap, "conf-ck") == {"flush.messages": "5", "flush.ms": "700"}
    res = ConfigResource(ConfigResource.Type.TOPIC, "conf-ck", set_config={"max.message.bytes": "20000"})
    client.alter_configs([res])[res].result(30)
    assert topic_configs(bootstrap, "conf-ck") == {"max.message.bytes": "20000"}


@pytest.mark.slow
def test_aiokafka_legacy_alter_configs_replaces_the_topics_configs(bootstrap):
    aiokafka_admin = pytest.importorskip("aiokafka.admin")
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    create_topic(bootstrap, "conf-aio")

    async def run() -> list:
        client = aiokafka_admin.AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
        await asyncio.wait_for(client.start(), 30)
        try:
            out = []
            for configs in ({"flush.messages": "9"}, {"flush.ms": "100"}):
                res = ConfigResource(ConfigResourceType.TOPIC, "conf-aio", configs)
                out += await asyncio.wait_for(client.alter_configs([res]), 30)
            return out
        finally:
            await asyncio.wait_for(client.close(), 30)

    first, second = asyncio.run(run())
    assert [r[0] for r in first.resources] == [0] and [r[0] for r in second.resources] == [0]
    assert topic_configs(bootstrap, "conf-aio") == {"flush.ms": "100"}


@pytest.mark.slow
def test_kafka_python_create_partitions_and_legacy_alter_configs(bootstrap):
    """kafka-python 3's KafkaAdminClient: create_partitions (v3 here) and alter_configs (the legacy API)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions
    create_topic(bootstrap, "kp")
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        resp = client.create_partitions({"kp": NewPartitions(3)})
        assert [(r.name, r.error_code) for r in resp.results] == [("kp", 0)]
        assert client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp", {"flush.messages": "7"})]) == {
            "topic": {"kp": "OK"}}
    finally:
        client.close()
    assert len(admin(bootstrap).list_topics("kp", timeout=10).topics["kp"].partitions) == 3
    assert topic_configs(bootstrap, "kp") == {"flush.messages": "7"}
