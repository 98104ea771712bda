"""Topic deletion (DeleteTopics under KRaft), in process: the controller's rules (Kafka's
``ControllerApis.deleteTopics`` / ``ReplicationControlManager.deleteTopics``), the RemoveTopicRecord in
the metadata image (``TopicsDelta`` / ``ConfigurationsDelta``) and what a broker does when the metadata it
applies removes a topic it hosts (``ReplicaManager.applyDelta`` → ``stopPartitions``, the stray-log check
``LogManager.isStrayKraftReplica`` at startup, ``partition.metadata``, ``onPartitionsDeleted`` for
committed offsets). The real-cluster story is tests/test_real_delete_topic.py.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest

from kraftlog.broker.broker import (
    LOG_DIR,
    PARTITION_METADATA_FILE,
    Broker,
    decode_partition_metadata,
    encode_partition_metadata,
)
from kraftlog.broker.coordinator_runtime import OFFSETS_TOPIC, CoordinatorRuntime
from kraftlog.controller.controller import CONTROLLER, METADATA_LOG, QuorumController
from kraftlog.level import Level
from kraftlog.metadata import codec
from kraftlog.metadata import config as cfg
from kraftlog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataImage
from kraftlog.metadata.records import (
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from kraftlog.net.disk import FileDisk
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import RecordBatch
from kraftlog.storage.checkpoints import read_hwm_checkpoint
from test_broker import MiniCluster, batch
from test_broker_listeners import ask

ZERO = uuid.UUID(int=0)
T_DIR = f"{LOG_DIR}/t-0/"


def delete(c: MiniCluster, *names: str, ids: tuple = ()) -> m.DeleteTopicsResponse:
    """DeleteTopics sent straight to the controller (the broker forwards it there unchanged)."""
    return c.send(m.DeleteTopicsRequest(names, topic_ids=ids), "admin", CONTROLLER)


def create(c: MiniCluster, name: str, assignment=((0, 1, 2),)) -> uuid.UUID:
    r = c.send(m.CreateTopicsRequest((m.CreatableTopic(name, assignment=assignment),)), "admin", CONTROLLER)
    assert r.topics[0].error_code == Errors.NONE
    return r.topics[0].topic_id


def by_name(resp: m.DeleteTopicsResponse) -> dict:
    return {(r.name, r.topic_id): (r.error_code, r.error_message) for r in resp.responses}


class RecordingDisk:
    """A Disk that records each append_many (one write) and passes everything to ``inner``."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.appends: list = []

    def append_many(self, path: str, items: list, now_ms: int) -> None:
        self.appends.append((path, list(items)))
        self.inner.append_many(path, items, now_ms)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def c():
    return MiniCluster()


# ============================================================================ the controller
def test_each_deleted_topic_is_one_remove_topic_record_written_in_one_atomic_append(c):
    """ReplicationControlManager.deleteTopics: one RemoveTopicRecord(topic id) per deleted topic, every
    record of the request in one atomic append (ControllerResult.atomicOf); each topic answered NONE with
    its name and id; the image no longer has them."""
    t2 = create(c, "t2")
    c.ctl.disk = c.ctl.single.log.disk = disk = RecordingDisk(c.ctl.disk)
    start = c.ctl.end_offset
    resp = delete(c, "t", "t2")
    assert by_name(resp) == {("t", c.topic_id): (Errors.NONE, None), ("t2", t2): (Errors.NONE, None)}
    assert disk.appends == [(METADATA_LOG, [RemoveTopicRecord(c.topic_id), RemoveTopicRecord(t2)])]
    assert c.ctl.log[start:] == [RemoveTopicRecord(c.topic_id), RemoveTopicRecord(t2)]
    assert "t" not in c.ctl.image.topics and "t2" not in c.ctl.image.topics


def test_a_restarted_controller_replays_the_remove_topic_record_from_its_metadata_log(c):
    """The record is in the controller's fsynced metadata log: a new controller over the same Disk
    (failover) rebuilds an image without the topic."""
    delete(c, "t")
    again = QuorumController({}, Level.CLASSIC, c.ctl.disk, random.Random(5), c.now)
    assert "t" not in again.image.topics and again.image.topic_name(c.topic_id) is None


def test_an_unknown_name_is_unknown_topic_or_partition_and_changes_nothing(c):
    """ReplicationControlManager.findTopicIds: a name the image lacks → UNKNOWN_TOPIC_OR_PARTITION with
    Kafka's default message and the zero topic id; nothing is appended."""
    start = c.ctl.end_offset
    resp = delete(c, "absent")
    assert by_name(resp) == {("absent", None): (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                "This server does not host this topic-partition.")}
    assert c.ctl.end_offset == start


def test_deletion_by_topic_id_and_an_unknown_id(c):
    """DeleteTopics v6 (KIP-516) by id: a known id is deleted and answered with its name; an unknown id
    is UNKNOWN_TOPIC_ID with a null name (findTopicNames)."""
    stranger = uuid.UUID(int=12345)
    resp = delete(c, ids=(c.topic_id, stranger))
    assert by_name(resp) == {
        ("t", c.topic_id): (Errors.NONE, None),
        (None, stranger): (Errors.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."),
    }
    assert "t" not in c.ctl.image.topics


@pytest.mark.parametrize("names, ids, expected", [
    (("t", "t"), (), {("t", None): (Errors.INVALID_REQUEST, "Duplicate topic name.")}),
    ((), ("ID", "ID"), {(None, "ID"): (Errors.INVALID_REQUEST, "Duplicate topic id.")}),
    (("t",), ("ID",), {("t", "ID"): (Errors.INVALID_REQUEST,
                                     "The provided topic name maps to an ID that was already supplied.")}),
    ((), (ZERO,), {(None, None): (Errors.INVALID_REQUEST, "Neither topic name nor id were specified.")}),
], ids=["duplicate-name", "duplicate-id", "name-and-its-id", "zero-id"])
def test_duplicates_in_one_request_are_invalid_request_and_nothing_is_deleted(c, names, ids, expected):
    """ControllerApis.deleteTopics: a name or id given twice, a name whose id is also given, or the zero
    id → one INVALID_REQUEST answer with Kafka's message; the topic stays and nothing is appended."""
    ids = tuple(c.topic_id if i == "ID" else i for i in ids)
    expected = {(n, c.topic_id if i == "ID" else i): v for (n, i), v in expected.items()}
    start = c.ctl.end_offset
    assert by_name(delete(c, *names, ids=ids)) == expected
    assert "t" in c.ctl.image.topics and c.ctl.end_offset == start


def test_a_duplicate_does_not_stop_the_other_topics_of_the_request(c):
    """Errors are per topic: a duplicated name is refused while another named topic is deleted."""
    t2 = create(c, "t2")
    resp = delete(c, "t", "t", "t2")
    assert by_name(resp) == {("t", None): (Errors.INVALID_REQUEST, "Duplicate topic name."),
                             ("t2", t2): (Errors.NONE, None)}
    assert "t" in c.ctl.image.topics and "t2" not in c.ctl.image.topics


def test_delete_topic_enable_false_refuses_every_topic_with_topic_deletion_disabled():
    """ControllerApis.deleteTopics with delete.topic.enable=false: the whole request fails with
    TOPIC_DELETION_DISABLED (getErrorResponse: every topic, its request name or id, no message); nothing
    changes."""
    c = MiniCluster(config={"delete.topic.enable": "false"})
    start = c.ctl.end_offset
    resp = delete(c, "t", "absent", ids=(c.topic_id,))
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in resp.responses] == [
        ("t", None, Errors.TOPIC_DELETION_DISABLED, None),
        ("absent", None, Errors.TOPIC_DELETION_DISABLED, None),
        (None, c.topic_id, Errors.TOPIC_DELETION_DISABLED, None)]
    assert c.ctl.end_offset == start and "t" in c.ctl.image.topics


def test_a_cluster_level_delete_topic_enable_false_also_disables_deletion(c):
    """kraftlog resolves delete.topic.enable like its other configs: a cluster-level dynamic value (broker
    resource "") overrides the static default true."""
    r = c.send(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
        RESOURCE_BROKER, "", (m.AlterableConfig("delete.topic.enable", m.OP_SET, "false"),)),)), "admin", CONTROLLER)
    assert r.responses[0].error_code == Errors.NONE
    assert delete(c, "t").responses[0].error_code == Errors.TOPIC_DELETION_DISABLED


def test_delete_topic_enable_is_a_known_config_defaulting_to_kafkas_true():
    assert cfg.DEFAULTS["delete.topic.enable"] == "true" and "delete.topic.enable" in cfg.KNOWN_CONFIGS


def test_a_broker_forwards_delete_topics_on_its_client_listener_and_relays_the_answer(c):
    """Kafka's ForwardingManager: DeleteTopics sent to a broker's client listener reaches the controller."""
    resp = ask(c, m.DeleteTopicsRequest(("t",)), listener=lst.CLIENT)
    assert [(r.name, r.error_code) for r in resp.responses] == [("t", Errors.NONE)]
    assert "t" not in c.ctl.image.topics


# ============================================================================ the record and the image
def test_remove_topic_record_travels_as_metadata_json_and_in_a_file_metadata_log(tmp_path):
    """RemoveTopicRecord is a registered metadata record type: the JSON codec of the metadata fetch and
    the file-backed metadata log both carry it."""
    rec = RemoveTopicRecord(uuid.UUID(int=77))
    assert json.loads(codec.encode_metadata_record(rec)) == {"type": "RemoveTopicRecord",
                                                            "topic_id": str(uuid.UUID(int=77))}
    assert codec.decode_metadata_record(codec.encode_metadata_record(rec)) == rec
    with FileDisk(tmp_path) as d:
        d.append_many(METADATA_LOG, [TopicRecord("x", rec.topic_id), rec], 0)
        d.fsync(METADATA_LOG, 0)
    with FileDisk(tmp_path) as d:
        assert d.read(METADATA_LOG) == [TopicRecord("x", rec.topic_id), rec]


TID = uuid.UUID(int=1)
OTHER = uuid.UUID(int=2)


def image_with_two_topics() -> MetadataImage:
    image, _ = MetadataImage().replay([
        RegisterBrokerRecord(1, uuid.UUID(int=11), 0, fenced=False),
        TopicRecord("t", TID),
        PartitionRecord(0, TID, (1,), (1,), 1),
        PartitionRecord(1, TID, (1,), (1,), 1),
        TopicRecord("u", OTHER),
        PartitionRecord(0, OTHER, (1,), (1,), 1),
        ConfigRecord(RESOURCE_TOPIC, "t", "min.insync.replicas", "1"),
        ConfigRecord(RESOURCE_TOPIC, "u", "flush.messages", "5"),
        ConfigRecord(RESOURCE_BROKER, "", "min.insync.replicas", "1"),
    ], 0)
    return image


def test_replaying_remove_topic_record_removes_the_topic_its_partitions_and_its_configs():
    """TopicsDelta / ConfigurationsDelta.replay(RemoveTopicRecord): the topic, its name mapping, every
    partition and its topic-level configs go; another topic and the cluster configs stay; the delta names
    the deleted topic (deletedTopicIds) and its config resource; the old image is untouched."""
    before = image_with_two_topics()
    after, delta = before.replay([RemoveTopicRecord(TID)], before.offset + 1)
    assert "t" not in after.topics and after.topic_name(TID) is None
    assert ("t", 0) not in after.partitions and ("t", 1) not in after.partitions
    assert (RESOURCE_TOPIC, "t") not in after.configs
    assert after.topics["u"].topic_id == OTHER and ("u", 0) in after.partitions
    assert after.configs[(RESOURCE_TOPIC, "u")] == {"flush.messages": "5"}
    assert after.configs[(RESOURCE_BROKER, "")] == {"min.insync.replicas": "1"}
    assert delta.deleted_topics == {TID: "t"} and delta.configs == {(RESOURCE_TOPIC, "t")}
    assert not delta.partitions and bool(delta)
    assert "t" in before.topics and ("t", 1) in before.partitions and (RESOURCE_TOPIC, "t") in before.configs


def test_a_topic_changed_and_deleted_in_one_replay_is_only_deleted():
    """Kafka's TopicsDelta drops a deleted topic from changedTopics: its partitions leave the delta."""
    image = image_with_two_topics()
    _, delta = image.replay([PartitionChangeRecord(0, TID, isr=(1,)), RemoveTopicRecord(TID)], image.offset + 1)
    assert delta.partitions == set() and delta.deleted_topics == {TID: "t"}


def test_a_same_name_topic_after_the_removal_is_a_new_topic():
    """The name is free after the removal: a new TopicRecord under it starts with no partitions and no
    configs of the old topic."""
    image = image_with_two_topics()
    new = uuid.UUID(int=3)
    image, delta = image.replay([RemoveTopicRecord(TID), TopicRecord("t", new), PartitionRecord(0, new, (1,), (1,), 1)],
                                image.offset + 1)
    assert image.topics["t"].topic_id == new and image.topics["t"].partition_count == 1
    assert image.topic_name(TID) is None and (RESOURCE_TOPIC, "t") not in image.configs
    assert delta.deleted_topics == {TID: "t"} and delta.partitions == {("t", 0)}


def test_removing_an_unknown_topic_id_is_an_error():
    """TopicsDelta.replay: "Unable to delete topic with id ...: no such topic found". Since issue 24 the
    replay skips the record and names it in ``delta.errors`` (the node counts it: Kafka's metadata
    publishing fault handler) instead of raising; the image is otherwise unchanged."""
    before = image_with_two_topics()
    image, delta = before.replay([RemoveTopicRecord(uuid.UUID(int=99))], 20)
    assert [(offset, reason) for offset, _, reason in delta.errors] == [
        (20, f"RemoveTopicRecord for unknown topic id {uuid.UUID(int=99)}")]
    assert image.topics == before.topics and image.partitions == before.partitions


def test_create_topics_after_deletion_gives_the_name_a_new_topic_id(c):
    """A recreated topic is a new topic: CreateTopics under the deleted name succeeds with a new id and
    fresh partitions (leader epoch 0, partition epoch 0)."""
    delete(c, "t")
    new = create(c, "t")
    assert new != c.topic_id
    part = c.ctl.image.partitions[("t", 0)]
    assert (part.leader_epoch, part.partition_epoch) == (0, 0)


# ============================================================================ the broker
def test_a_leader_drops_the_deleted_partition_and_deletes_its_files(c):
    """ReplicaManager.applyDelta → stopPartitions: once broker 0 applies the RemoveTopicRecord it no longer
    hosts t-0 (no Partition, no log, not leader), every file of data/t-0 is deleted from its Disk, and the
    HWM checkpoint no longer lists it."""
    assert c.produce(5).partitions[0].error_code == Errors.NONE
    c.advance(c.now + 6000)  # the HWM checkpoint (every 5 s) lists t-0
    assert ("t", 0) in read_hwm_checkpoint(c.b.disk, LOG_DIR)
    files = c.b.disk.list(T_DIR)
    assert f"{T_DIR}{PARTITION_METADATA_FILE}" in files and len(files) >= 2
    delete(c, "t")
    c.advance(c.now + 10)
    assert ("t", 0) not in c.b.partitions and ("t", 0) not in c.b.logs
    assert c.b.disk.list(T_DIR) == []
    assert ("t", 0) not in read_hwm_checkpoint(c.b.disk, LOG_DIR)


def test_after_deletion_produce_is_refused_and_metadata_names_the_topic_unknown(c):
    """A produce to the deleted partition is refused and appends nothing; Metadata for the name answers
    UNKNOWN_TOPIC_OR_PARTITION (KafkaApis.handleTopicMetadataRequest without auto-creation), and
    DescribeTopicPartitions does too."""
    delete(c, "t")
    c.advance(c.now + 10)
    resp = c.produce(3)
    assert resp.partitions[0].error_code != Errors.NONE
    assert c.b.disk.list(T_DIR) == []
    md = c.send(m.MetadataRequest(("t",)), "client")
    assert [(t.name, t.error_code) for t in md.topics] == [("t", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    dtp = c.send(m.DescribeTopicPartitionsRequest(("t",)), "client")
    assert dtp.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_a_produce_to_a_deleted_topic_is_unknown_topic_or_partition(c):
    """Kafka's KafkaApis.handleProduceRequest: a partition missing from the metadata cache is
    UNKNOWN_TOPIC_OR_PARTITION (getPartitionOrError), not NOT_LEADER_OR_FOLLOWER."""
    delete(c, "t")
    c.advance(c.now + 10)
    assert c.produce(3).partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_an_acks_all_produce_waiting_on_a_deleted_partition_is_answered_unknown_topic_or_partition(c):
    """DelayedProduce.tryComplete, case A: once the partition is gone and the metadata lacks it,
    getPartitionOrError is UNKNOWN_TOPIC_OR_PARTITION, and stopPartitions completes the waiting produce at
    once (it does not wait for its timeout)."""
    c.hold = lambda env: env.dst == "client"
    c.send(m.ProduceRequest(-1, 30000, (m.ProducePartition("t", 0, (batch(2),)),)), "client")
    assert not c.held and len(c.b.delayed_produces) == 1  # followers have not fetched: waiting for the HWM
    delete(c, "t")
    c.advance(c.now + 10)
    (resp,) = [e.message for e in c.held]
    assert resp.partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert not c.b.delayed_produces


def test_a_parked_consumer_fetch_on_a_deleted_partition_is_answered_at_once(c):
    """stopPartitions completes the delayed fetches of the partition (completeDelayedOperationsWhen
    NotPartitionLeader): a consumer long-polling t-0 gets an error for it and no records, before its
    max wait runs out."""
    c.hold = lambda env: env.dst == "consumer"
    c.send(m.FetchRequest(-1, -1, 60000, 1, (m.FetchPartition(c.topic_id, 0, -1, 0),)), "consumer")
    assert not c.held and c.b.delayed_fetches
    delete(c, "t")
    c.advance(c.now + 10)
    (resp,) = [e.message for e in c.held]
    assert resp.partitions[0].error_code != Errors.NONE and not resp.partitions[0].records
    assert not c.b.delayed_fetches


def follower_with_data(c: MiniCluster, n: int = 4):
    """Topic "f" led by broker 1 and followed by broker 0, which fetched ``n`` records from it."""
    c.hold = lambda env: env.dst == 1 and type(env.message) is m.FetchRequest
    fid = create(c, "f", assignment=((1, 0, 2),))
    c.advance(c.now + 10)
    p = c.b.partitions[("f", 0)]
    assert not p.is_leader and p.leader_id == 1
    (req,) = [e for e in c.held if e.message.partitions[0].topic_id == fid]
    c.held.clear()
    stamped = RecordBatch(0, 0, batch(n).records)
    c.b.deliver(c.now, m.Envelope(1, 0, req.correlation_id, m.FetchResponse(Errors.NONE, (
        m.FetchPartitionResponse(fid, 0, Errors.NONE, n, n, 0, records=(stamped,)),)), True))
    c.pump()
    assert p.log.log_end_offset == n
    return fid, p, req


def test_a_follower_stops_fetching_the_deleted_partition_and_deletes_its_files(c):
    """stopPartitions removes the fetcher first: a follower of the deleted topic sends no more Fetch for
    it, drops the replica and deletes data/f-0; a late answer to a fetch for the old topic id writes
    nothing."""
    fid, p, req = follower_with_data(c)
    assert c.b.disk.list(f"{LOG_DIR}/f-0/")
    delete(c, "f")
    c.advance(c.now + 10)
    c.held.clear()
    c.advance(c.now + 3000)
    assert ("f", 0) not in c.b.partitions and ("f", 0) not in c.b.logs
    assert c.b.disk.list(f"{LOG_DIR}/f-0/") == []
    assert not [e for e in c.held if any(fp.topic_id == fid for fp in e.message.partitions)]
    late = RecordBatch(4, 0, batch(2).records)
    c.b.deliver(c.now, m.Envelope(1, 0, req.correlation_id + 1, m.FetchResponse(Errors.NONE, (
        m.FetchPartitionResponse(fid, 0, Errors.NONE, 6, 6, 0, records=(late,)),)), True))
    c.pump()
    assert c.b.disk.list(f"{LOG_DIR}/f-0/") == []


def test_a_recreated_topic_starts_with_an_empty_log_and_its_own_topic_id(c):
    """A topic deleted and created again under the same name is a new topic on the broker too: a new
    Partition with the new id, an empty log (the old records are gone), partition.metadata naming the new
    id; produced records start at offset 0 and a consumer reads only them."""
    c.produce(5)
    delete(c, "t")
    new = create(c, "t")
    c.advance(c.now + 10)
    p = c.b.partitions[("t", 0)]
    assert p.topic_id == new and p.is_leader and p.log.log_end_offset == 0
    assert decode_partition_metadata(c.b.disk.read_value(f"{T_DIR}{PARTITION_METADATA_FILE}")) == new
    assert c.produce(2).partitions[0].base_offset == 0
    for f in (1, 2):
        c.send(m.FetchRequest(f, c.epoch[f], 0, 1, (m.FetchPartition(new, 0, p.leader_epoch, 2, 0),)), f)
    got = c.send(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(new, 0, -1, 0),)), "client")
    records = [r.value for b in got.partitions[0].records for r in b.records]
    assert records == [b"v0", b"v1"]


def test_deleted_and_recreated_in_one_metadata_batch_the_old_replica_is_still_dropped(c):
    """Deletes first (ReplicaManager.applyDelta): when one batch of metadata records deletes t and creates
    t again, the old partition (old topic id, its records) is stopped and its files deleted before the new
    one is made; an acks=all produce waiting on the old one gets NOT_LEADER_OR_FOLLOWER (the metadata now
    has a t-0: getPartitionOrError), not an answer computed from the new log."""
    c.produce(5)
    c.hold = lambda env: env.dst == "client" or type(env.message) is m.MetadataFetchResponse
    c.send(m.ProduceRequest(-1, 30000, (m.ProducePartition("t", 0, (batch(2),)),)), "client")
    delete(c, "t")
    new = create(c, "t")
    c.held = [e for e in c.held if type(e.message) is not m.MetadataFetchResponse]  # lost: refetched below
    base = c.b.image.offset + 1
    c.b.apply_metadata(c.now, c.ctl.log[base:], base)
    c.pump()
    p = c.b.partitions[("t", 0)]
    assert p.topic_id == new and p.log.log_end_offset == 0 and p is not c.p
    (resp,) = [e.message for e in c.held if type(e.message) is m.ProduceResponse]
    assert resp.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert decode_partition_metadata(c.b.disk.read_value(f"{T_DIR}{PARTITION_METADATA_FILE}")) == new


def restart_broker(c: MiniCluster) -> Broker:
    """Broker 0 started again over its Disk (a new incarnation), run until it is caught up and unfenced
    (the controller first lets the old incarnation's session expire)."""
    b = Broker(0, c.config, Level.CLASSIC, c.b.disk, random.Random(7), c.now)
    c.b = c.nodes[0] = b
    return b


def test_a_restarted_broker_deletes_the_log_of_a_topic_deleted_while_it_was_down(c):
    """LogManager.isStrayKraftReplica at the first publish: the log of a topic the image no longer has is
    loaded at startup but deleted, not served, once the broker has caught up with the metadata log."""
    c.produce(5)
    del c.nodes[0]  # broker 0 is down
    delete(c, "t")
    b = restart_broker(c)
    assert ("t", 0) in b.logs and b.logs[("t", 0)].log_end_offset == 5  # loaded from its directory
    c.advance(c.now + 15000)
    assert c.ctl.image.is_active(0)
    assert ("t", 0) not in b.logs and ("t", 0) not in b.partitions
    assert b.disk.list(T_DIR) == []


def test_a_restarted_broker_does_not_resurrect_the_old_log_under_a_recreated_topic(c):
    """partition.metadata keeps the topic id of each log dir: a topic deleted and recreated under the same
    name while the broker was down is told apart from its old log, which is deleted; the broker's replica
    of the new topic starts empty."""
    c.produce(5)
    del c.nodes[0]
    delete(c, "t")
    new = create(c, "t")
    b = restart_broker(c)
    assert b.logs[("t", 0)].log_end_offset == 5
    c.advance(c.now + 15000)
    assert c.ctl.image.is_active(0)
    p = b.partitions[("t", 0)]
    assert p.topic_id == new and p.log.log_end_offset == 0
    assert decode_partition_metadata(b.disk.read_value(f"{T_DIR}{PARTITION_METADATA_FILE}")) == new


def test_a_restarted_broker_keeps_its_log_when_the_topic_is_unchanged(c):
    """Control: the same topic id in partition.metadata keeps the log, records and all."""
    c.produce(5)
    del c.nodes[0]
    b = restart_broker(c)
    c.advance(c.now + 15000)
    assert b.partitions[("t", 0)].topic_id == c.topic_id and b.partitions[("t", 0)].log.log_end_offset == 5


def test_a_log_dir_without_partition_metadata_is_adopted_when_the_image_still_assigns_it(c):
    """A log dir written before kraftlog kept topic ids has no partition.metadata: kraftlog keeps it when
    the image still has the partition on this broker (Kafka would treat it as stray) and writes the
    file."""
    c.produce(5)
    del c.nodes[0]
    c.b.disk.delete(f"{T_DIR}{PARTITION_METADATA_FILE}", c.now)
    b = restart_broker(c)
    c.advance(c.now + 15000)
    assert b.partitions[("t", 0)].log.log_end_offset == 5
    assert decode_partition_metadata(b.disk.read_value(f"{T_DIR}{PARTITION_METADATA_FILE}")) == c.topic_id


def commit(c: MiniCluster, group: str, offsets: dict) -> None:
    r = c.send(m.OffsetCommitRequest(group, tuple(
        m.OffsetCommitPartition(t, i, o, 0) for (t, i), o in offsets.items())), "client")
    assert [p.error_code for p in r.partitions] == [Errors.NONE] * len(offsets)


def test_committed_offsets_of_a_deleted_topic_are_tombstoned_in_consumer_offsets(c):
    """GroupCoordinator.onPartitionsDeleted: the coordinator writes a tombstone for each committed offset of the
    deleted topic in every group; a group keeps its offsets of other topics. The tombstones are records of
    ``__consumer_offsets``: a coordinator that loads the partition again agrees."""
    create(c, OFFSETS_TOPIC, ((0,),))
    create(c, "u")
    c.advance(c.now + 10)
    commit(c, "g1", {("t", 0): 7, ("u", 0): 3})
    commit(c, "g2", {("t", 0): 9})
    delete(c, "t")
    c.advance(c.now + 10)
    runtime = c.b.coordinator_runtime
    assert {k: v.offset for k, v in runtime.committed("g1").items()} == {("u", 0): 3}
    assert runtime.committed("g2") == {}
    again = CoordinatorRuntime(c.b.replica_manager, lambda: 1, 5000)
    again.sync(c.now)
    again.load_pending(c.now)
    assert {k: v.offset for k, v in again.committed("g1").items()} == {("u", 0): 3}
    assert again.committed("g2") == {} and again.group_ids() == ["g1"]


def test_partition_metadata_is_kafkas_text_format():
    """Kafka's PartitionMetadata.encode: "version: 0" and "topic_id: " + Uuid.toString (URL-safe base64 of
    the 16 bytes, no padding); the reader refuses a malformed file or the zero id."""
    tid = uuid.UUID(int=(34 << 64) | 98)  # Kafka's new Uuid(34L, 98L)
    text = encode_partition_metadata(tid)
    assert text == "version: 0\ntopic_id: AAAAAAAAACIAAAAAAAAAYg"
    assert decode_partition_metadata(text) == tid
    for bad in (None, "", "version: 0", "version: x\ntopic_id: AAAAAAAAACIAAAAAAAAAYg",
                "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "version: 0\ntopic_id: short"):
        assert decode_partition_metadata(bad) is None


def test_a_log_directory_with_offset_files_of_an_older_kraftlog_is_refused_with_one_line():
    """Issue 32: committed offsets used to be files under ``data/__consumer_offsets/``; a broker that finds any
    refuses to start, naming them, instead of serving its groups without their offsets."""
    from kraftlog.broker.broker import Broker, refuse_old_offset_files
    from kraftlog.storage.disk import SimDisk
    from kraftlog.storage.meta_properties import NodeIdentityError
    disk = SimDisk(None)
    refuse_old_offset_files(disk)  # none: starts
    disk.write_atomic(f"{LOG_DIR}/__consumer_offsets/orders%2Dapp", '{"group_id": "orders-app"}', 0)
    with pytest.raises(NodeIdentityError) as err:
        Broker(0, {}, Level.CLASSIC, disk, random.Random(0), 0)
    assert "orders%2Dapp" in str(err.value) and "\n" not in str(err.value)
