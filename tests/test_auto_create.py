"""Automatic topic creation, in process (Kafka's ``KafkaApis.handleTopicMetadataRequest`` and
``AutoTopicCreationManager``): a Metadata request that allows it and names a topic that does not exist makes
the broker send the controller a CreateTopics (``num.partitions``, ``default.replication.factor``) and answer
LEADER_NOT_AVAILABLE, so the client retries. Real clients: tests/test_auto_create_real.py."""

from __future__ import annotations

from kraftlog.controller.controller import CONTROLLER
from kraftlog.metadata import config as cfg
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire as wire_codec
from kraftlog.protocol.errors import Errors
from test_broker import MiniCluster
from test_broker_listeners import ask


def md(c: MiniCluster, *names: str, allow: bool = True) -> dict:
    """Metadata for ``names`` on broker 0's client listener: name -> (error, partition count)."""
    r = ask(c, m.MetadataRequest(names, allow_auto_topic_creation=allow))
    return {t.name: (t.error_code, len(t.partitions)) for t in r.topics}


def creates_sent(c: MiniCluster) -> list:
    return [e.message for e in c.held if type(e.message) is m.CreateTopicsRequest]


def test_kafkas_defaults():
    """auto.create.topics.enable true, num.partitions 1, default.replication.factor 1 (Kafka's)."""
    assert (cfg.DEFAULTS["auto.create.topics.enable"], cfg.DEFAULTS["num.partitions"],
            cfg.DEFAULTS["default.replication.factor"]) == ("true", "1", "1")


def test_a_missing_topic_is_created_and_answered_leader_not_available_until_it_exists():
    c = MiniCluster(config={"num.partitions": "2", "default.replication.factor": "3"})
    assert md(c, "new") == {"new": (Errors.LEADER_NOT_AVAILABLE, 0)}
    t = c.ctl.image.topics["new"]
    assert t.partition_count == 2
    assert all(len(c.ctl.image.partitions[("new", i)].replicas) == 3 for i in range(2))
    c.advance(c.now + 600)  # the broker's metadata catches up
    assert md(c, "new") == {"new": (Errors.NONE, 2)}


def test_the_broker_sends_one_create_topics_while_one_is_in_flight():
    """Kafka's inflightTopics: while the controller has not answered, a retry is UNKNOWN_TOPIC_OR_PARTITION
    and sends nothing; once it has, the topic is no longer in flight."""
    c = MiniCluster()
    c.hold = lambda env: env.dst == CONTROLLER and type(env.message) is m.CreateTopicsRequest
    assert md(c, "a", "b") == {"a": (Errors.LEADER_NOT_AVAILABLE, 0), "b": (Errors.LEADER_NOT_AVAILABLE, 0)}
    assert md(c, "a") == {"a": (Errors.UNKNOWN_TOPIC_OR_PARTITION, 0)}
    (sent,) = creates_sent(c)
    assert [(t.name, t.num_partitions, t.replication_factor) for t in sent.topics] == [("a", 1, 1), ("b", 1, 1)]
    c.hold = lambda env: False
    c.release()
    metadata_apis = c.b.apis.table[m.MetadataRequest].__self__  # the MetadataApis its handler is bound to
    assert metadata_apis.auto_topic_creation.inflight == {}
    assert {"a", "b"} <= set(c.ctl.image.topics)


def test_an_unanswered_create_topics_stops_being_in_flight_after_request_timeout():
    c = MiniCluster()
    c.hold = lambda env: env.dst == CONTROLLER and type(env.message) is m.CreateTopicsRequest
    assert md(c, "a") == {"a": (Errors.LEADER_NOT_AVAILABLE, 0)}
    c.now += c.b.config.request_timeout_ms
    assert md(c, "a") == {"a": (Errors.LEADER_NOT_AVAILABLE, 0)}  # sent again
    assert len(creates_sent(c)) == 2


def test_no_creation_when_the_request_or_the_broker_does_not_allow_it():
    """allow_auto_topic_creation false (the core's default: the simulator's clients), a request for all
    topics, or auto.create.topics.enable=false: UNKNOWN_TOPIC_OR_PARTITION, nothing created."""
    c = MiniCluster()
    assert md(c, "x", allow=False) == {"x": (Errors.UNKNOWN_TOPIC_OR_PARTITION, 0)}
    assert "x" not in c.ctl.image.topics
    off = MiniCluster(config={"auto.create.topics.enable": "false"})
    assert md(off, "x") == {"x": (Errors.UNKNOWN_TOPIC_OR_PARTITION, 0)}
    assert "x" not in off.ctl.image.topics
    assert m.MetadataRequest(("x",)).allow_auto_topic_creation is False


def test_invalid_and_internal_names_are_never_created():
    """Kafka: an illegal name is INVALID_TOPIC_EXCEPTION (allowed or not); an internal name (leading "__")
    is not created for a client."""
    c = MiniCluster()
    assert md(c, "bad name", "__consumer_offsets", "..") == {
        "bad name": (Errors.INVALID_TOPIC_EXCEPTION, 0), "__consumer_offsets": (Errors.UNKNOWN_TOPIC_OR_PARTITION, 0),
        "..": (Errors.INVALID_TOPIC_EXCEPTION, 0)}
    assert md(c, "bad name", allow=False) == {"bad name": (Errors.INVALID_TOPIC_EXCEPTION, 0)}
    assert not {"bad name", "__consumer_offsets", ".."} & set(c.ctl.image.topics)


def test_a_metadata_request_before_v4_always_allows_creation():
    """AllowAutoTopicCreation is v4+; Kafka's broker creates for every older request."""
    for version, expected in ((3, True), (4, False), (12, False)):
        out = wire_codec.roundtrip(m.MetadataRequest(("t",)), version=version)
        assert out.allow_auto_topic_creation is expected
    assert wire_codec.roundtrip(m.MetadataRequest(("t",), True), version=12).allow_auto_topic_creation is True


def test_creation_on_the_internal_listener_too():
    """Every listener serves Metadata the same way (the simulator's brokers have none)."""
    c = MiniCluster()
    r = ask(c, m.MetadataRequest(("viaint",), True), listener=lst.INTERNAL)
    assert r.topics[0].error_code == Errors.LEADER_NOT_AVAILABLE and "viaint" in c.ctl.image.topics
