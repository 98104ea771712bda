"""Issue 28 item 2 on a real cluster with unmodified clients: producing to a topic that does not exist
creates it (Kafka's automatic topic creation: confluent-kafka's and kafka-python's producers, kcat), with
``num.partitions`` partitions and the ``default.replication.factor`` that ``cluster up`` wrote (min(3,
brokers)); a client that does not allow it (allow_auto_topic_creation false) creates nothing. In process:
tests/test_auto_create.py."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import running_cluster
from kraftlog.net import cluster as cl

confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory) -> str:
    """One 2-broker cluster for the module (``cluster up``'s default.replication.factor: 2)."""
    directory = str(tmp_path_factory.mktemp("auto") / "c")
    with running_cluster(directory, 2):
        info = cl.load(directory)
        assert info["config"]["default.replication.factor"] == "2"
        yield info["bootstrap"]


def topic_metadata(bootstrap: str, name: str):
    """The topic's metadata as an admin client sees it (all topics: never a creation), None when absent."""
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return md.topics.get(name)


@pytest.mark.slow
def test_confluent_producer_to_a_new_topic_creates_it(bootstrap):
    """librdkafka's producer asks Metadata with allow_auto_topic_creation: the broker creates the topic
    (1 partition, replication factor 2) and the record is delivered, instead of waiting out
    message.timeout.ms."""
    from confluent_kafka import Producer
    assert topic_metadata(bootstrap, "auto-ck") is None
    delivered = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000})
    p.produce("auto-ck", b"hello", on_delivery=lambda err, msg: delivered.append((err, msg.partition())))
    assert p.flush(40) == 0
    assert delivered == [(None, 0)]
    t = topic_metadata(bootstrap, "auto-ck")
    assert t is not None and list(t.partitions) == [0] and len(t.partitions[0].replicas) == 2


@pytest.mark.slow
def test_kafka_python_producer_to_a_new_topic_creates_it(bootstrap):
    """kafka-python 3's producer (allow_auto_create_topics, default true) likewise."""
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        md = p.send("auto-kp", b"hello").get(timeout=30)
    finally:
        p.close(10)
    assert (md.topic, md.partition, md.offset) == ("auto-kp", 0, 0)
    assert topic_metadata(bootstrap, "auto-kp") is not None


@pytest.mark.slow
def test_kcat_producer_to_a_new_topic_creates_it(bootstrap):
    """kcat (librdkafka 2.0.2) produces to a missing topic; both records are delivered and read back."""
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (apt-get install kcat)")
    put = subprocess.run([kcat, "-b", bootstrap, "-t", "auto-kcat", "-P", "-X", "message.timeout.ms=30000"],
                         input=b"one\ntwo\n", capture_output=True, timeout=60)
    assert put.returncode == 0, put.stderr.decode()
    got = subprocess.run([kcat, "-b", bootstrap, "-t", "auto-kcat", "-C", "-o", "beginning", "-e", "-q"],
                         capture_output=True, timeout=60)
    assert got.returncode == 0 and got.stdout.split() == [b"one", b"two"], got.stderr.decode()


@pytest.mark.slow
def test_a_client_that_does_not_allow_creation_creates_nothing(bootstrap):
    """librdkafka with allow.auto.create.topics=false asks Metadata with allow_auto_topic_creation false:
    the topic stays unknown (UNKNOWN_TOPIC_OR_PARTITION)."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient
    client = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": "false"})
    md = client.list_topics(topic="auto-never", timeout=10)
    assert md.topics["auto-never"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic_metadata(bootstrap, "auto-never") is None
