"""Issue 23, finding 3 and items 3-4: cluster identity (``meta.properties`` as ``kafka-storage.sh format``
writes it, verified by every node at start; INCONSISTENT_CLUSTER_ID for BrokerRegistration and the
metadata Fetch) and stray partitions (renamed ``-stray``, never deleted, unless the broker replayed the
topic's RemoveTopicRecord); the controller's ``crash`` with ``lose: all`` in scenario files.

The sans-I/O rules (storage/meta_properties, the controller's answers, the broker's stray handling,
SimCluster, Disk.rename_dir and the scenario verb). The real-process story of the issue (the lost
controller directory) is tests/test_real_cluster_identity.py.
"""

from __future__ import annotations

import os
import random
import re
import uuid

import pytest

from kraftlog.broker.broker import LOG_DIR, PARTITION_METADATA_FILE, Broker, encode_partition_metadata
from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.level import Level
from kraftlog.metadata.records import RemoveTopicRecord
from kraftlog.net.shadow import ShadowFileDisk, restore_fsynced
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.scenario import ScenarioError, dump_scenario, load_scenario, parse_scenario
from kraftlog.scenario.generator import data_losing_shutdowns, describe_step
from kraftlog.sim.cluster import SimCluster
from kraftlog.sim.runner import ScenarioRun
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import SEGMENT_FILE
from kraftlog.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    NodeIdentityError,
    decode_properties,
    encode_properties,
    format_disk,
    read_identity,
    verify_ensemble,
)
from test_broker import MiniCluster, batch

CLUSTER = "GeCTMmaFFeJxl0hRW3n7cQ"
STRAY = re.compile(r"^(?P<name>.+-\d+)\.[0-9a-f]{32}-stray$")


DIRECTORY_ID = uuid.UUID(int=12345)


def text(cluster_id=CLUSTER, node_id="1", directory_id=DIRECTORY_ID) -> str:
    return encode_properties(MetaProperties(cluster_id, node_id, directory_id).to_properties())


# ================================================================ meta.properties (MetaPropertiesEnsemble)
def test_format_writes_kafkas_v1_meta_properties_and_the_node_reads_it_back():
    """kafka-storage.sh format: version=1, cluster.id, node.id, directory.id (Kafka's Uuid.toString)."""
    disk = SimDisk()
    identity = MetaProperties(CLUSTER, "2", uuid.UUID(int=(34 << 64) | 98))
    format_disk(disk, identity, 0)
    props = decode_properties(disk.read_value(META_PROPERTIES))
    assert props == {"version": "1", "cluster.id": CLUSTER, "node.id": "2", "directory.id": "AAAAAAAAACIAAAAAAAAAYg"}
    assert read_identity(disk, 2, CLUSTER) == identity


@pytest.mark.parametrize("texts, node, reason", [
    ({"": None}, 1, "not formatted: no meta.properties"),
    ({"": "node.id=1\n"}, 1, "unreadable"),
    ({"": "version=0\ncluster.id=c\nnode.id=1\n"}, 1, "has version '0'"),
    ({"": "version=1\nnode.id=1\n"}, 1, "has no cluster.id"),
    ({"": text(node_id="2")}, 1, "belongs to node 2, not to node 1"),
    ({"": text(cluster_id="other")}, 1, f"belongs to cluster other, not to this cluster {CLUSTER}"),
    ({"a": text(), "b": text(cluster_id="other", directory_id=uuid.UUID(int=777))}, 1,
     "the directories disagree on cluster.id"),
    ({"a": text(), "b": text(node_id="3", directory_id=uuid.UUID(int=777))}, 1, "the directories disagree on node.id"),
    ({"a": text(), "b": text()}, 1, "is both a's and b's"),
])
def test_a_node_refuses_directories_that_are_not_formatted_or_not_its_own(texts, node, reason):
    """MetaPropertiesEnsemble.verify: unformatted, unreadable, another version, no cluster.id, another node
    id, another cluster id, directories that disagree or share a directory.id: a one-line refusal."""
    with pytest.raises(NodeIdentityError) as err:
        verify_ensemble(texts, node, CLUSTER)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_directories_that_agree_are_accepted_and_a_pre_kip858_file_has_no_directory_id():
    found = verify_ensemble({"a": text(), "b": text(directory_id=uuid.UUID(int=777)),
                             "c": f"version=1\ncluster.id={CLUSTER}\nnode.id=1\nincarnation=4\n"}, 1, CLUSTER)
    assert [mp.directory_id for mp in found.values()] == [uuid.UUID(int=12345), uuid.UUID(int=777), None]


def test_an_unformatted_controller_refuses_to_start_and_writes_nothing():
    """The issue's finding 3: a controller over an empty directory must not start with an empty metadata
    log. It raises before touching its Disk; unchecked (unit tests) it still starts empty."""
    disk = SimDisk()
    with pytest.raises(NodeIdentityError, match="not formatted"):
        QuorumController({}, Level.URM, disk, random.Random(0), 0, CLUSTER, verify_identity=True)
    assert disk.list("") == []
    format_disk(disk, MetaProperties(CLUSTER, CONTROLLER, uuid.UUID(int=500)), 0)
    assert QuorumController({}, Level.URM, disk, random.Random(0), 0, CLUSTER, verify_identity=True).end_offset == 0


def test_a_broker_on_another_nodes_directory_refuses_before_touching_its_logs():
    """Kafka's broker refuses a log dir whose meta.properties names another node: nothing is loaded, the
    clean-shutdown file is not consumed."""
    disk = SimDisk()
    format_disk(disk, MetaProperties(CLUSTER, "1", uuid.UUID(int=501)), 0)
    disk.write_atomic(f"{LOG_DIR}/.kafka_cleanshutdown", '{"version":0,"brokerEpoch":7}', 0)
    before = {p: disk.read_value(p) for p in disk.list("")}
    with pytest.raises(NodeIdentityError, match="belongs to node 1, not to node 0"):
        Broker(0, {}, Level.URM, disk, random.Random(1), 0, CLUSTER, verify_identity=True)
    assert {p: disk.read_value(p) for p in disk.list("")} == before
    b = Broker(1, {}, Level.URM, disk, random.Random(1), 0, CLUSTER, verify_identity=True)
    assert b.directory_id == uuid.UUID(int=501)


# ================================================================ INCONSISTENT_CLUSTER_ID
def test_registration_with_another_cluster_id_is_inconsistent_cluster_id_and_writes_nothing():
    """ClusterControlManager.registerBroker checks the ClusterId first: INCONSISTENT_CLUSTER_ID (104)."""
    ctl = QuorumController({}, Level.URM, SimDisk(), random.Random(0), 0, CLUSTER)
    ctl.deliver(0, m.Envelope(1, CONTROLLER, 1, m.BrokerRegistrationRequest(1, "another", uuid.UUID(int=9))))
    (resp,) = [e.message for e in ctl.poll()]
    assert resp.error_code == Errors.INCONSISTENT_CLUSTER_ID == 104 and ctl.end_offset == 0
    ctl.deliver(0, m.Envelope(1, CONTROLLER, 2, m.BrokerRegistrationRequest(1, CLUSTER, uuid.UUID(int=9))))
    (resp,) = [e.message for e in ctl.poll()]
    assert resp.error_code == Errors.NONE and ctl.end_offset == 1


@pytest.mark.parametrize("cluster_id, expected", [("another", Errors.INCONSISTENT_CLUSTER_ID),
                                                  (None, Errors.NONE), (CLUSTER, Errors.NONE)])
def test_a_metadata_fetch_with_another_cluster_id_is_inconsistent_cluster_id(cluster_id, expected):
    """KafkaRaftClient.handleFetchRequest: hasValidClusterId accepts an absent ClusterId (older fetchers)
    and the controller's own; another is INCONSISTENT_CLUSTER_ID, no records."""
    ctl = QuorumController({}, Level.URM, SimDisk(), random.Random(0), 0, CLUSTER)
    ctl.deliver(0, m.Envelope(1, CONTROLLER, 1, m.BrokerRegistrationRequest(1, CLUSTER, uuid.UUID(int=9))))
    ctl.poll()
    ctl.deliver(0, m.Envelope(1, CONTROLLER, 2, m.MetadataFetchRequest(1, 0, 0, 0, cluster_id)))
    (resp,) = [e.message for e in ctl.poll()]
    assert resp.error_code == expected and len(resp.records) == (0 if expected else 1)


def test_the_cluster_id_crosses_the_wire_in_fetch_v15_and_104_comes_back_request_level():
    """Fetch v15's ClusterId tagged field carries the broker's cluster id; INCONSISTENT_CLUSTER_ID is a
    top-level error of the Fetch response (no partition data), read back as such."""
    req = m.MetadataFetchRequest(1, 5, 10, 500, CLUSTER)
    assert wire.roundtrip(req) == req
    entity = wire.to_kio(req)
    assert entity.cluster_id == CLUSTER
    resp = m.MetadataFetchResponse(Errors.INCONSISTENT_CLUSTER_ID, -1, -1)
    assert wire.roundtrip(resp) == resp
    assert wire.to_kio(resp).responses == ()


def test_a_broker_sends_its_cluster_id_and_a_foreign_controller_never_registers_it():
    """The broker's BrokerRegistration and metadata Fetch carry its cluster id; a controller of another
    cluster answers 104 and the broker stays unregistered (it retries, as BrokerLifecycleManager does)."""
    ctl = QuorumController({}, Level.URM, SimDisk(), random.Random(0), 0, "another")
    b = Broker(0, {}, Level.URM, SimDisk(), random.Random(1), 0, CLUSTER)
    nodes = {CONTROLLER: ctl, 0: b}
    seen = []
    for now in range(0, 5000, 10):
        for node in (ctl, b):
            node.tick(now)
        for _ in range(3):
            for node in list(nodes.values()):
                for env in node.poll():
                    seen.append(env.message)
                    nodes[env.dst].deliver(now, env)
    regs = [x for x in seen if isinstance(x, m.BrokerRegistrationRequest)]
    answers = [x.error_code for x in seen if isinstance(x, m.BrokerRegistrationResponse)]
    assert len(regs) >= 2 and {r.cluster_id for r in regs} == {CLUSTER}
    assert set(answers) == {Errors.INCONSISTENT_CLUSTER_ID} and b.broker_epoch == -1 and ctl.end_offset == 0
    c = MiniCluster()
    fetches = []
    c.hold = lambda env: isinstance(env.message, m.MetadataFetchRequest) and not fetches.append(env.message)
    c.advance(c.now + 1000)
    assert fetches and {f.cluster_id for f in fetches} == {c.ctl.cluster_id}


# ================================================================ stray partitions (LogManager)
def plant(disk, directory: str, topic_id: uuid.UUID | None, n: int = 3) -> list:
    """A partition directory on ``disk``: a segment of ``n`` records and, with ``topic_id``, its
    partition.metadata."""
    disk.append(f"{LOG_DIR}/{directory}/{SEGMENT_FILE}", batch(n, directory).with_offsets(0, 0), 0)
    if topic_id is not None:
        disk.write_atomic(f"{LOG_DIR}/{directory}/{PARTITION_METADATA_FILE}", encode_partition_metadata(topic_id), 0)
    return list(disk.read(f"{LOG_DIR}/{directory}/{SEGMENT_FILE}"))


def restart_broker(c: MiniCluster) -> Broker:
    b = Broker(0, c.config, Level.CLASSIC, c.b.disk, random.Random(7), c.now)
    c.b = c.nodes[0] = b
    return b


def stray_dirs(disk) -> dict[str, str]:
    """Original partition directory -> its -stray name, from the disk's paths."""
    out = {}
    for p in disk.list(f"{LOG_DIR}/"):
        parts = p.split("/")
        if len(parts) >= 3 and (match := STRAY.match(parts[1])):
            out[match["name"]] = parts[1]
    return out


def test_every_directory_the_image_does_not_assign_here_is_renamed_stray_and_kept_whole():
    """Kafka 3.7+'s stray log dirs: at the first publish an unknown topic, an unknown topic id, a partition
    the topic does not have, a replica assigned elsewhere and a directory without partition.metadata that
    is not assigned here are each renamed <topic>-<partition>.<32 hex>-stray with every file, listed with
    Kafka's reason, and never loaded again (a second restart keeps them as they are)."""
    c = MiniCluster()
    w = c.send(m.CreateTopicsRequest((m.CreatableTopic("w", assignment=((1, 2),)),)), "admin", CONTROLLER)
    w_id = w.topics[0].topic_id
    c.produce(5)
    c.advance(c.now + 100)
    del c.nodes[0]
    disk = c.b.disk
    planted = {"u-0": plant(disk, "u-0", uuid.UUID(int=41)),          # a topic the image does not know
               "t-1": plant(disk, "t-1", c.topic_id),                 # a partition t does not have
               "w-0": plant(disk, "w-0", w_id),                       # assigned to 1 and 2 only
               "v-0": plant(disk, "v-0", None)}                       # no partition.metadata, unknown
    b = restart_broker(c)
    c.advance(c.now + 15000)
    assert c.ctl.image.is_active(0)
    strays = stray_dirs(disk)
    assert sorted(strays) == ["t-1", "u-0", "v-0", "w-0"]
    for name, stray in strays.items():
        assert list(disk.read(f"{LOG_DIR}/{stray}/{SEGMENT_FILE}")) == planted[name]
        assert disk.list(f"{LOG_DIR}/{name}/") == []
    reasons = {old: reason for old, _new, reason in b.strays}
    assert "the topic does not exist in the metadata image" in reasons["u-0"]
    assert reasons["v-0"].startswith("no partition.metadata")
    assert "does not contain the local broker id 0" in reasons["w-0"]
    assert {new for _old, new, _reason in b.strays} == set(strays.values())
    assert b.partitions[("t", 0)].log.log_end_offset == 5  # the assigned replica is kept and served
    again = restart_broker(c)
    c.advance(c.now + 15000)
    assert again.strays == [] and stray_dirs(disk) == strays and set(again.logs) == {("t", 0)}


def test_a_log_under_an_unknown_topic_id_is_stray_and_the_replica_starts_empty():
    """t-0's partition.metadata names a topic id the metadata never removed (another cluster's t): the
    directory is kept as -stray, not deleted, and the broker's replica of this cluster's t starts empty."""
    c = MiniCluster()
    c.produce(5)
    del c.nodes[0]
    disk = c.b.disk
    disk.write_atomic(f"{LOG_DIR}/t-0/{PARTITION_METADATA_FILE}", encode_partition_metadata(uuid.UUID(int=77)), 0)
    before = list(disk.read(f"{LOG_DIR}/t-0/{SEGMENT_FILE}"))
    b = restart_broker(c)
    c.advance(c.now + 15000)
    stray = stray_dirs(disk)["t-0"]
    assert list(disk.read(f"{LOG_DIR}/{stray}/{SEGMENT_FILE}")) == before and len(before) == 1
    assert b.partitions[("t", 0)].topic_id == c.topic_id and b.partitions[("t", 0)].log.log_end_offset == 0


def test_only_a_replayed_remove_topic_record_deletes_even_when_it_came_in_an_earlier_batch():
    """A partition directory is deleted only for a topic id whose RemoveTopicRecord the broker replayed;
    the removals of metadata batches replayed before the first publish (not yet caught up) count too."""
    c = MiniCluster()
    c.produce(5)
    del c.nodes[0]
    c.send(m.DeleteTopicsRequest(("t",)), "admin", CONTROLLER)
    c.send(m.CreateTopicsRequest((m.CreatableTopic("later", assignment=((1, 2),)),)), "admin", CONTROLLER)
    log = c.ctl.log
    k = next(i for i, rec in enumerate(log) if isinstance(rec, RemoveTopicRecord)) + 1
    b = restart_broker(c)
    b.apply_metadata(c.now, log[:k], 0, caught_up=False)
    assert b.disk.list(f"{LOG_DIR}/t-0/")  # nothing happens before the first publish
    b.apply_metadata(c.now, log[k:], k, caught_up=True)
    assert b.disk.list(f"{LOG_DIR}/t-0/") == [] and stray_dirs(b.disk) == {} and b.strays == []


def test_the_simulator_keeps_strays_when_the_controller_is_formatted_again():
    """SimCluster: the controller loses its disk and is formatted again by hand (an empty metadata log,
    as `kraftlog cluster format --controller` gives it); a broker restarted into it keeps its partition
    as -stray, every record still on its disk. The brokers not restarted find the controller's log ending below
    their local copies (OFFSET_OUT_OF_RANGE with a high watermark below their fetch offset): they refetch it from
    offset 0 and, once caught up, keep their partitions as -stray too, deleting nothing."""
    scn = parse_scenario("name: s\nseed: 4\ncluster: {brokers: 3, config: {min.insync.replicas: 2}}\n"
                         "topics:\n  - {name: t, assignment: [[0, 1, 2]]}\nsteps:\n"
                         "  - {produce: {topic: t, count: 30, acks: all}}\n")
    run = ScenarioRun(scn)
    assert run.run().verdict["passed"]
    sim = run.sim
    segments = {b: list(sim.disks[b].read(f"{LOG_DIR}/t-0/{SEGMENT_FILE}")) for b in range(3)}
    sim.crash(CONTROLLER, "all")
    assert not sim.restart(CONTROLLER) and "not formatted" in sim.refused[-1][2]
    sim.format(CONTROLLER)
    assert sim.restart(CONTROLLER) and sim.controller.end_offset == 0
    sim.crash(1, "none")
    sim.restart(1)
    sim.run_until(sim.now + 30000)
    stray = stray_dirs(sim.disks[1])["t-0"]
    assert list(sim.disks[1].read(f"{LOG_DIR}/{stray}/{SEGMENT_FILE}")) == segments[1]
    assert sum(b.record_count for b in segments[1]) == 30
    for b in (0, 2):
        stray = stray_dirs(sim.disks[b])["t-0"]
        assert list(sim.disks[b].read(f"{LOG_DIR}/{stray}/{SEGMENT_FILE}")) == segments[b]
        assert sim.nodes[b].image.offset == sim.controller.end_offset - 1  # refetched from 0, caught up


def test_a_replaced_broker_disk_is_formatted_by_the_operator_and_the_broker_rejoins():
    """crash: {broker: N, lose: all} + restart keeps working: the blank disk gets a new meta.properties
    (a new directory.id) before the restart, as an operator formats a new disk."""
    sim = SimCluster(3, {}, Level.URM, 9)
    sim.run_until(5000)
    first = read_identity(sim.disks[2], 2, sim.cluster_id)
    sim.crash(2, "all")
    assert sim.restart(2) and sim.refused == []
    second = read_identity(sim.disks[2], 2, sim.cluster_id)
    assert second.directory_id != first.directory_id and sim.broker(2).directory_id == second.directory_id


# ================================================================ Disk.rename_dir
def test_simdisk_rename_dir_moves_every_file_and_keeps_what_was_not_yet_durable_undurable():
    disk = SimDisk(writeback_ms=None)
    disk.append("data/t-0/a.log", "x", 0)
    disk.fsync("data/t-0/a.log", 0)
    disk.append("data/t-0/a.log", "y", 1)
    disk.write_atomic("data/t-0/partition.metadata", "v", 1)
    disk.write_atomic("data/t-00/other", "keep", 1)
    disk.rename_dir("data/t-0", "data/t-0.ab-stray", 2)
    assert disk.list("data/") == ["data/t-0.ab-stray/a.log", "data/t-0.ab-stray/partition.metadata", "data/t-00/other"]
    with pytest.raises(FileExistsError):
        disk.rename_dir("data/t-00", "data/t-0.ab-stray", 3)
    disk.crash("unflushed", 4)
    assert disk.read("data/t-0.ab-stray/a.log") == ["x"]


def test_filedisk_rename_dir_is_a_durable_rename_and_the_shadow_follows(tmp_path):
    """FileDisk.rename_dir: rename(2) of the directory, parents fsynced; an open log reopens under its new
    name; a target that exists is refused, a missing source is a no-op; in chaos mode the shadow moves
    along, so restore_fsynced still drops what was never fsynced."""
    node = tmp_path / "node"
    seg = "00000000000000000000.log"
    d = ShadowFileDisk(node)
    d.append(f"data/t-0/{seg}", batch(2).with_offsets(0, 0), 0)
    d.fsync(f"data/t-0/{seg}", 0)
    durable = os.path.getsize(node / "data" / "t-0" / seg)
    d.append(f"data/t-0/{seg}", batch(3).with_offsets(2, 0), 1)
    d.write_atomic("data/t-0/partition.metadata", "version: 0", 1)
    d.rename_dir("data/t-0", "data/t-0.ab-stray", 2)
    assert d.list("data/") == [f"data/t-0.ab-stray/{seg}", "data/t-0.ab-stray/partition.metadata"]
    assert not os.path.exists(node / "data" / "t-0")
    assert [x.record_count for x in d.read_range(f"data/t-0.ab-stray/{seg}", 0, 9)] == [2, 3]
    d.write_atomic("data/z/f", "1", 3)
    with pytest.raises(FileExistsError):
        d.rename_dir("data/z", "data/t-0.ab-stray", 3)
    d.rename_dir("data/missing", "data/elsewhere", 3)
    assert d.list("data/z/") == ["data/z/f"] and not os.path.exists(node / "data" / "elsewhere")
    size = os.path.getsize(node / "data" / "t-0.ab-stray" / seg)
    d.close()
    assert restore_fsynced(node) == [f"data/t-0.ab-stray/{seg}: {size} -> {durable} bytes (appends lost)"]


# ================================================================ the scenario verb
def test_crash_and_restart_name_the_controller_with_node_and_brokers_either_way():
    """crash/restart take exactly one of broker: <id> and node: <id> | controller (backwards compatible:
    a broker's args stay {broker, lose}); the dump writes node: controller and round-trips."""
    s = parse_scenario("name: c\ncluster: {brokers: 3}\nsteps:\n  - {crash: {node: controller, lose: all}}\n"
                       "  - {crash: {node: 2}}\n  - {restart: {node: controller}}\n  - {restart: {node: 2}}\n")
    assert [st.args for st in s.steps] == [{"node": "controller", "lose": "all"}, {"broker": 2, "lose": "none"},
                                           {"node": "controller"}, {"broker": 2}]
    assert parse_scenario(dump_scenario(s)) == s and "{crash: {node: controller, lose: all}}" in dump_scenario(s)
    assert [describe_step(st) for st in s.steps][0].endswith("crash ctl (lose all)")
    for bad, message in (("{crash: {broker: 1, node: 1}}",
                          "names exactly one of 'broker: <id>', 'node"),
                         ("{crash: {lose: all}}",
                          "crash needs 'broker' (or 'node: <id> | controller', or 'controller: <id>')"),
                         ("{restart: {node: ctl}}", "node must be a broker id or 'controller'"),
                         ("{shutdown: {node: controller}}", "unknown key 'node' in shutdown")):
        with pytest.raises(ScenarioError, match=re.escape(message)):
            parse_scenario(f"name: c\ncluster: {{brokers: 3}}\nsteps:\n  - {bad}\n")


def test_a_controller_crash_is_no_replicas_data_losing_shutdown():
    """The fault budget counts crashes of a partition's replicas: the controller's, even lose: all, is
    none (it refuses to start unformatted; no replica loses anything)."""
    s = load_scenario("scenarios/controller-disk-lost.yaml")
    assert data_losing_shutdowns(s) == 1  # broker 2's crash only


@pytest.mark.parametrize("level", ["classic", "urm"])
def test_controller_disk_lost_story_refuses_the_controller_and_loses_nothing(level):
    """scenarios/controller-disk-lost.yaml: the controller refuses to start after its disk is lost (twice,
    logged); the leader keeps serving from the brokers' metadata; acks=all times out once the ISR cannot
    shrink, acks=1 does not; nothing acknowledged is lost and no partition file is deleted."""
    run = ScenarioRun(load_scenario("scenarios/controller-disk-lost.yaml"), Level.parse(level))
    result = run.run()
    v = result.verdict
    assert v["passed"] and v["safe"] and v["lost_acked"] == 0
    assert v["acked"] == {"all": 40, "1": 30} or v["acked"] == {"all": 40, "1": 30, "0": 0}
    refusals = [ev for ev in result.events if ev.get("refused")]
    assert [ev["verb"] for ev in refusals] == ["restart", "restart_controller"]
    assert all("not formatted" in ev["refused"] for ev in refusals)
    assert run.sim.controller is None and len(run.sim.refused) == 2
    for b in range(3):
        assert run.sim.disks[b].list(f"{LOG_DIR}/t-0/") and stray_dirs(run.sim.disks[b]) == {}


# ================================================================ kraftlog cluster format / status (no process)
def test_cluster_format_writes_a_new_identity_once_and_status_lists_strays(tmp_path):
    """`kraftlog cluster format`: meta.properties with cluster.json's id, the node id and a new directory id;
    formatting again is refused (exit 2), as kafka-storage.sh refuses a formatted directory. `strays` lists
    a broker's -stray directories, which status shows."""
    from kraftlog.net import cluster as cl
    from kraftlog.net.meta_properties import read_meta_properties
    directory = str(tmp_path)
    cluster = {"cluster_id": "GeCTMmaFFeJxl0hRW3n7cQ", "brokers": 1,
               "nodes": [{"id": CONTROLLER, "role": "controller", "pid": None},
                         {"id": 0, "role": "broker", "pid": None}]}
    first = cl.format_node(directory, 0, cluster)
    props = read_meta_properties(tmp_path / "broker-0")
    assert props["cluster.id"] == first.cluster_id == cluster["cluster_id"] and props["node.id"] == "0"
    with pytest.raises(cl.ClusterError, match="already formatted") as err:
        cl.format_node(directory, 0, cluster)
    assert err.value.code == 2
    assert cl.format_node(directory, CONTROLLER, cluster).directory_id != first.directory_id
    os.makedirs(tmp_path / "broker-0" / LOG_DIR / "t-0.0123456789abcdef0123456789abcdef-stray")
    os.makedirs(tmp_path / "broker-0" / LOG_DIR / "t-1")
    assert cl.strays(directory, 0) == ["t-0.0123456789abcdef0123456789abcdef-stray"]
