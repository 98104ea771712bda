"""CreatePartitions and the legacy AlterConfigs, in process: the controller's rules (Kafka's
``ReplicationControlManager.createPartitions`` / ``validateManualPartitionAssignment`` and
``ConfigurationControlManager.legacyAlterConfigs``), forwarding from a broker's client listener, and a broker
picking up the partitions a topic gained (``BrokerMetadataPublisher``). Real clients:
tests/test_create_partitions_real.py."""

from __future__ import annotations

import pytest

from kraftlog.controller.controller import CONTROLLER
from kraftlog.level import Level
from kraftlog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC
from kraftlog.metadata.records import ClearElrRecord, ConfigRecord, PartitionRecord
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from test_broker import MiniCluster, batch
from test_broker_listeners import ask


@pytest.fixture
def c() -> MiniCluster:
    return MiniCluster()


def grow(c: MiniCluster, *topics: m.CreatePartitionsTopic, validate_only: bool = False) -> dict:
    """CreatePartitions sent to the controller: name -> (error code, message)."""
    r = c.send(m.CreatePartitionsRequest(topics, validate_only=validate_only), "admin", CONTROLLER)
    return {t.name: (t.error_code, t.error_message) for t in r.results}


def assign(*replicas: tuple[int, ...]) -> tuple[m.CreatePartitionsAssignment, ...]:
    return tuple(m.CreatePartitionsAssignment(r) for r in replicas)


def test_create_partitions_adds_one_partition_record_per_new_partition(c):
    """Kafka writes a PartitionRecord per new partition: index = the old count + i, the topic's replication
    factor, ISR = the usable replicas, leader the first of them, epochs 0."""
    end = c.ctl.end_offset
    assert grow(c, m.CreatePartitionsTopic("t", 3)) == {"t": (Errors.NONE, None)}
    new = c.ctl.log[end:]
    assert [type(r) for r in new] == [PartitionRecord, PartitionRecord]
    assert [r.partition_id for r in new] == [1, 2]
    for r in new:
        assert r.topic_id == c.topic_id and len(r.replicas) == 3 and sorted(r.replicas) == [0, 1, 2]
        assert r.isr == r.replicas and r.leader == r.replicas[0] and r.leader_epoch == 0
    assert c.ctl.image.topics["t"].partition_count == 3


def test_the_broker_picks_up_the_new_partitions_and_serves_them(c):
    """BrokerMetadataPublisher: a topic whose partition count grows gets the new replicas on the broker
    (leader where it is first in the ISR); Metadata lists all three and Produce to a new one is served."""
    assert grow(c, m.CreatePartitionsTopic("t", 3, assign((0, 1, 2), (1, 2, 0)))) == {"t": (Errors.NONE, None)}
    c.advance(c.now + 600)
    assert c.b.partitions[("t", 1)].is_leader and not c.b.partitions[("t", 2)].is_leader
    md = ask(c, m.MetadataRequest(("t",)))
    assert [(p.partition_index, p.leader_id) for p in md.topics[0].partitions] == [(0, 0), (1, 0), (2, 1)]
    r = c.send(m.ProduceRequest(1, 30000, (m.ProducePartition("t", 1, (batch(2),)),)), "client")
    assert r.partitions[0].error_code == Errors.NONE and c.b.partitions[("t", 1)].log.log_end_offset == 2


@pytest.mark.parametrize("count, code, message", [
    (1, Errors.INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
    (0, Errors.INVALID_PARTITIONS, "The topic t currently has 1 partition(s); 0 would not be an increase."),
])
def test_a_count_that_does_not_increase_is_invalid_partitions(c, count, code, message):
    end = c.ctl.end_offset
    assert grow(c, m.CreatePartitionsTopic("t", count)) == {"t": (code, message)}
    assert c.ctl.end_offset == end


def test_an_unknown_topic_is_unknown_topic_or_partition_and_a_duplicate_invalid_request(c):
    """Kafka: UNKNOWN_TOPIC_OR_PARTITION (no message); a name given twice is answered once, INVALID_REQUEST
    "Duplicate topic name.", after the others, and nothing is created for it."""
    r = c.send(m.CreatePartitionsRequest((m.CreatePartitionsTopic("t", 2), m.CreatePartitionsTopic("nope", 2),
                                          m.CreatePartitionsTopic("t", 3))), "admin", CONTROLLER)
    assert [(t.name, t.error_code, t.error_message) for t in r.results] == [
        ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION, None), ("t", Errors.INVALID_REQUEST, "Duplicate topic name.")]
    assert c.ctl.image.topics["t"].partition_count == 1


@pytest.mark.parametrize("assignments, message", [
    (assign((0, 1, 2)), "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    (assign((0, 1, 2), ()), "The manual partition assignment includes an empty replica list."),
    (assign((0, 1, 2), (0, 1, 7)), "The manual partition assignment includes broker 7, but no such broker is "
     "registered."),
    (assign((0, 1, 2), (0, 1, 1)), "The manual partition assignment includes the broker 1 more than once."),
    (assign((0, 1, 2), (0, 1)), "The manual partition assignment includes a partition with 2 replica(s), but "
     "this is not consistent with previous partitions, which have 3 replica(s)."),
])
def test_a_bad_assignment_is_invalid_replica_assignment_and_creates_nothing(c, assignments, message):
    end = c.ctl.end_offset
    assert grow(c, m.CreatePartitionsTopic("t", 3, assignments)) == {"t": (Errors.INVALID_REPLICA_ASSIGNMENT, message)}
    assert c.ctl.end_offset == end and c.ctl.image.topics["t"].partition_count == 1


def test_an_assignment_of_fenced_brokers_only_is_invalid_replica_assignment():
    """Kafka: a new partition needs an ISR: "All brokers specified in the manual partition assignment for
    partition N are fenced or in controlled shutdown." A one-replica topic on a fenced broker shows it."""
    c = MiniCluster()
    c.send(m.CreateTopicsRequest((m.CreatableTopic("one", assignment=((0,),)),)), "admin", CONTROLLER)
    del c.epoch[2]  # broker 2 stops heartbeating: fenced after its session
    c.advance(c.now + 12_000)
    assert not c.ctl.image.is_active(2)
    assert grow(c, m.CreatePartitionsTopic("one", 2, assign((2,)))) == {"one": (
        Errors.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition assignment for partition "
        "1 are fenced or in controlled shutdown.")}
    assert grow(c, m.CreatePartitionsTopic("t", 2)) == {"t": (
        Errors.INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 3 time(s): The target replication "
        "factor of 3 cannot be reached because only 2 broker(s) are unfenced with an online log directory.")}


def test_a_huge_count_is_policy_violation_and_creates_nothing(c):
    """kraftlog's bound (CreateTopics' 10,000 partitions per request): a hostile count is refused at once."""
    end = c.ctl.end_offset
    assert grow(c, m.CreatePartitionsTopic("t", 2**31 - 1)) == {"t": (
        Errors.POLICY_VIOLATION, "Excessively large number of partitions per request.")}
    assert c.ctl.end_offset == end


def test_validate_only_answers_without_creating(c):
    end = c.ctl.end_offset
    assert grow(c, m.CreatePartitionsTopic("t", 3), validate_only=True) == {"t": (Errors.NONE, None)}
    assert grow(c, m.CreatePartitionsTopic("t", 1), validate_only=True)["t"][0] == Errors.INVALID_PARTITIONS
    assert c.ctl.end_offset == end and c.ctl.image.topics["t"].partition_count == 1


def test_create_partitions_and_alter_configs_are_forwarded_from_the_client_listener(c):
    """Both are admin APIs (FORWARDED_APIS): a broker forwards them to the controller and relays the answer."""
    r = ask(c, m.CreatePartitionsRequest((m.CreatePartitionsTopic("t", 2),)))
    assert r.results[0].error_code == Errors.NONE and c.ctl.image.topics["t"].partition_count == 2
    r = ask(c, m.AlterConfigsRequest((m.LegacyAlterConfigsResource(
        RESOURCE_TOPIC, "t", (m.LegacyAlterableConfig("flush.messages", "5"),)),)))
    assert r.responses[0].error_code == Errors.NONE and c.ctl.image.configs[(RESOURCE_TOPIC, "t")] == {
        "flush.messages": "5"}


# ===================================================================== the legacy AlterConfigs
def alter(c: MiniCluster, *resources: m.LegacyAlterConfigsResource, validate_only: bool = False) -> list:
    r = c.send(m.AlterConfigsRequest(resources, validate_only), "admin", CONTROLLER)
    return [(x.resource_type, x.resource_name, x.error_code, x.error_message) for x in r.responses]


def topic(name: str, **configs: str | None) -> m.LegacyAlterConfigsResource:
    return m.LegacyAlterConfigsResource(RESOURCE_TOPIC, name, tuple(
        m.LegacyAlterableConfig(k.replace("_", "."), v) for k, v in configs.items()))


def test_legacy_alter_configs_replaces_the_whole_set(c):
    """Kafka's legacyAlterConfigs: the named configs are set, every dynamic config not named is removed
    (a ConfigRecord with a null value), and an unchanged value writes no record."""
    assert alter(c, topic("t", flush_messages="5", flush_ms="1000")) == [(RESOURCE_TOPIC, "t", Errors.NONE, None)]
    assert c.ctl.image.configs[(RESOURCE_TOPIC, "t")] == {"flush.messages": "5", "flush.ms": "1000"}
    end = c.ctl.end_offset
    assert alter(c, topic("t", flush_messages="5", max_message_bytes="2000"))[0][2] == Errors.NONE
    assert c.ctl.image.configs[(RESOURCE_TOPIC, "t")] == {"flush.messages": "5", "max.message.bytes": "2000"}
    assert c.ctl.log[end:] == [ConfigRecord(RESOURCE_TOPIC, "t", "max.message.bytes", "2000"),
                               ConfigRecord(RESOURCE_TOPIC, "t", "flush.ms", None)]
    assert alter(c, topic("t"))[0][2] == Errors.NONE
    assert (RESOURCE_TOPIC, "t") not in c.ctl.image.configs  # no config left: Kafka drops the resource


def test_legacy_alter_configs_refusals(c):
    """Per resource, on what it would write: an unknown topic UNKNOWN_TOPIC_OR_PARTITION; an unknown name or a
    bad value INVALID_CONFIG (nothing written for that resource); a resource named twice INVALID_REQUEST
    "Duplicate resource.", answered once and last; the others are applied."""
    got = alter(c, topic("nope", flush_messages="5"), topic("t", no_such_config="1"), topic("t", flush_ms="1"),
                topic("t", flush_ms="2"), m.LegacyAlterConfigsResource(RESOURCE_BROKER, "", (
                    m.LegacyAlterableConfig("min.insync.replicas", "0"),)))
    assert got == [
        (RESOURCE_TOPIC, "nope", Errors.UNKNOWN_TOPIC_OR_PARTITION, None),
        (RESOURCE_BROKER, "", Errors.INVALID_CONFIG,
         "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (RESOURCE_TOPIC, "t", Errors.INVALID_REQUEST, "Duplicate resource."),
    ]
    assert (RESOURCE_TOPIC, "t") not in c.ctl.image.configs or c.ctl.image.configs[(RESOURCE_TOPIC, "t")] == {}
    assert alter(c, topic("t", no_such_config="1"))[0][2:] == (Errors.INVALID_CONFIG,
                                                              "unknown configs ['no.such.config']")


def test_legacy_alter_configs_validate_only_writes_nothing(c):
    end = c.ctl.end_offset
    assert alter(c, topic("t", flush_messages="5"), validate_only=True)[0][2] == Errors.NONE
    assert c.ctl.end_offset == end


def test_leaving_out_the_cluster_min_isr_is_refused_while_elr_is_enabled():
    """KIP-966 (Kafka's isDisallowedClusterMinIsrTransition): at level elr+ the cluster-level
    min.insync.replicas cannot be removed, and the legacy API removes what it does not name; changing it
    clears the ELR (ClearElrRecord), as IncrementalAlterConfigs does."""
    c = MiniCluster(level=Level.ELR)
    broker = m.LegacyAlterConfigsResource(RESOURCE_BROKER, "", (m.LegacyAlterableConfig("min.insync.replicas", "2"),))
    end = c.ctl.end_offset
    assert alter(c, broker)[0][2] == Errors.NONE
    assert c.ctl.log[end:] == [ConfigRecord(RESOURCE_BROKER, "", "min.insync.replicas", "2"), ClearElrRecord(None)]
    empty = m.LegacyAlterConfigsResource(RESOURCE_BROKER, "", ())
    assert alter(c, empty)[0][2:] == (Errors.INVALID_CONFIG,
                                      "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    assert c.ctl.image.configs[(RESOURCE_BROKER, "")] == {"min.insync.replicas": "2"}
