"""The real cluster (issue 11): unmodified Kafka clients against kraftlog processes on loopback.

Every cluster here is started with ``kraftlog cluster up --port 0`` in a directory of its own (free
ports, so two runs can share a machine) and stopped in a ``finally``: ``cluster down``, then SIGKILL by
PID for any node still alive. Clients: confluent-kafka (librdkafka 2.16), kafka-python 3 and Debian's
kcat (librdkafka 2.0.2; skipped with a message when it is not installed).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import wait_for
from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.slow

KCAT = shutil.which("kcat")
#: Configs of every test cluster: a follower that stops fetching leaves the ISR after 5 s (Kafka: 30 s)
#: and a group forms without Kafka's 3 s initial delay, so the tests finish in minutes.
FAST = ("replica.lag.time.max.ms=5000", "group.initial.rebalance.delay.ms=0")


def kraftlog(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the ``kraftlog`` command line as a user types it."""
    proc = subprocess.run([sys.executable, "-m", "kraftlog.cli", *args], capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"kraftlog {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


class RealCluster:
    """A running cluster: its directory, bootstrap list (every broker) and helpers."""

    def __init__(self, directory: str) -> None:
        self.dir = directory

    @property
    def info(self) -> dict:
        return cl.load(self.dir)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n['port']}" for n in self.info["nodes"] if n["role"] == "broker")

    def create_topic(self, topic: str, partitions: int = 1, rf: int = 3, *configs: str) -> None:
        args = ["topics", "create", "--bootstrap-server", self.bootstrap, "--topic", topic,
                "--partitions", str(partitions), "--replication-factor", str(rf)]
        for c in configs:
            args += ["--config", c]
        kraftlog(*args)

    def describe(self, topic: str) -> list[dict]:
        """The rows of ``kraftlog topics describe --json`` (DescribeTopicPartitions), asked in this process:
        ``wait_for`` polls it every 0.3 s, and a new interpreter per poll took a core from the cluster. The
        command itself is tested by test_topics_describe_alter_config_and_delete and tests/test_real_delete_topic.py."""
        with KafkaConnection(self.bootstrap, timeout_s=10) as k:
            resp = k.request(m.DescribeTopicPartitionsRequest((topic,)))
        t = resp.topics[0] if resp.topics else None
        assert t is not None and t.error_code == Errors.NONE, f"describe {topic}: {resp}"
        return [{"partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                 "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
                 "elr": list(p.eligible_leader_replicas), "last_known_elr": list(p.last_known_elr),
                 "offline": list(p.offline_replicas)} for p in t.partitions]

    def wait_for(self, what: str, predicate, timeout_s: float = 60.0):
        return wait_for(what, predicate, timeout_s, interval_s=0.3)


def _stop_everything(directory: str) -> None:
    """Clean shutdown, then SIGKILL by PID whatever still runs (a failed test must not leak nodes)."""
    try:
        cl.down(directory)
    except Exception:
        pass
    finally:
        try:
            cl.kill(directory)
        except cl.ClusterError:  # no cluster.json: nothing was started
            pass


def _start(directory: str, brokers: int = 3) -> RealCluster:
    args = ["cluster", "up", "--brokers", str(brokers), "--dir", directory, "--port", "0", "--detach"]
    for c in FAST:
        args += ["--config", c]
    kraftlog(*args)
    return RealCluster(directory)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("cluster"))
    try:
        yield _start(directory)
    finally:
        _stop_everything(directory)


def fresh_cluster(tmp_path):
    """A three-broker cluster of a test's own in ``tmp_path`` (this module's settings), stopped by PID afterwards:
    the body of the ``fresh`` fixtures (here and in test_real_delete_topic.py)."""
    directory = str(tmp_path / "cluster")
    try:
        yield _start(directory)
    finally:
        _stop_everything(directory)


@pytest.fixture
def fresh(tmp_path):
    yield from fresh_cluster(tmp_path)


def _produce(bootstrap: str, topic: str, values: list[bytes], **config) -> list[tuple[int, int, bytes]]:
    """Produce ``values`` with confluent-kafka; returns (partition, offset, value) of each acknowledged one."""
    acked, errors = [], []

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": bootstrap, **config})
    for v in values:  # keyed by value: librdkafka's partitioner spreads them over the partitions
        p.produce(topic, key=v, value=v, callback=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0, "messages still in flight after 60 s"
    assert not errors, errors[:5]
    return acked


def _consume(consumer, expected: int, timeout_s: float = 60.0) -> list:
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append(msg)
    return got


# ============================================================================ clients work unmodified
def test_cluster_up_writes_cluster_json_and_every_broker_is_unfenced(shared):
    """`cluster up --detach` returns once every broker is unfenced and writes cluster.json as the issue
    specifies; `cluster status --json` adds alive, fenced and the broker epoch."""
    info = shared.info
    assert info["level"] == "urm" and isinstance(info["seed"], int)  # the default level
    assert info["bootstrap"] == f"127.0.0.1:{info['nodes'][1]['port']}"
    roles = [(n["id"], n["role"]) for n in info["nodes"]]
    assert roles == [("controller", "controller"), (0, "broker"), (1, "broker"), (2, "broker")]
    for n in info["nodes"]:
        assert set(n) == {"id", "role", "pid", "host", "port", "internal_port", "metrics_port", "incarnation"}
        assert n["host"] == "127.0.0.1" and n["incarnation"] == 1  # started once
    status = json.loads(kraftlog("cluster", "status", "--dir", shared.dir, "--json").stdout)
    brokers = [s for s in status if s["role"] == "broker"]
    assert all(s["alive"] for s in status)
    assert [s["fenced"] for s in brokers] == [False, False, False]
    assert sorted(s["broker_epoch"] for s in brokers) == sorted({s["broker_epoch"] for s in brokers})
    assert all(s["broker_epoch"] >= 0 for s in brokers)


def test_cluster_up_on_a_directory_of_another_size_exits_2(shared):
    proc = kraftlog("cluster", "up", "--brokers", "2", "--dir", shared.dir, "--port", "0", "--detach", check=False)
    assert proc.returncode == 2 and "holds a cluster of 3 brokers, not 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_confluent_idempotent_acks_all_producer_and_assign_consumer(shared):
    """confluent-kafka's idempotent producer (acks=all, InitProducerId + sequences) and a consumer with
    assign() read every acknowledged record back, in order per partition, with its headers."""
    shared.create_topic("ck-assign", 3)
    values = [f"ck-{i}".encode() for i in range(2000)]
    acked = _produce(shared.bootstrap, "ck-assign", values, **{"acks": "all", "enable.idempotence": True,
                                                              "linger.ms": 5})
    assert sorted(v for _, _, v in acked) == sorted(values)
    c = Consumer({"bootstrap.servers": shared.bootstrap, "group.id": "ck-assign", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("ck-assign", p, 0) for p in range(3)])
        got = _consume(c, len(values))
    finally:
        c.close()
    assert sorted(msg.value() for msg in got) == sorted(values)
    by_partition: dict[int, list[int]] = {}
    for msg in got:
        by_partition.setdefault(msg.partition(), []).append(msg.offset())
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # dense and in order: no duplicates, no gaps
    assert {(p, o) for p, o, _ in acked} == {(msg.partition(), msg.offset()) for msg in got}


def test_confluent_headers_and_keys_survive(shared):
    shared.create_topic("ck-headers", 1)
    p = Producer({"bootstrap.servers": shared.bootstrap, "acks": "all"})
    p.produce("ck-headers", key=b"k1", value=b"v1", headers=[("trace", b"abc"), ("empty", None)])
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": shared.bootstrap, "group.id": "ck-headers"})
    try:
        c.assign([TopicPartition("ck-headers", 0, 0)])
        (msg,) = _consume(c, 1)
    finally:
        c.close()
    assert (msg.key(), msg.value()) == (b"k1", b"v1")
    assert msg.headers() == [("trace", b"abc"), ("empty", None)]


def test_confluent_subscribe_group_reads_everything_and_commits(shared):
    """A confluent-kafka consumer in a group (subscribe: FindCoordinator, JoinGroup with MEMBER_ID_REQUIRED,
    SyncGroup, Heartbeat, OffsetCommit) gets every partition and every record; its committed offsets come
    back from OffsetFetch with the leader epoch of the last record (KIP-320)."""
    shared.create_topic("ck-group", 3)
    values = [f"g-{i}".encode() for i in range(600)]
    _produce(shared.bootstrap, "ck-group", values, acks="all")
    c = Consumer({"bootstrap.servers": shared.bootstrap, "group.id": "ck-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe(["ck-group"])
        got = _consume(c, len(values))
        assert sorted(msg.value() for msg in got) == sorted(values)
        assert sorted(tp.partition for tp in c.assignment()) == [0, 1, 2]
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition("ck-group", p) for p in range(3)], timeout=10)
    finally:
        c.close()
    ends = {}
    for msg in got:
        ends[msg.partition()] = max(ends.get(msg.partition(), 0), msg.offset() + 1)
    assert len(ends) == 3, "keyed records should reach every partition"
    assert {tp.partition: tp.offset for tp in committed} == ends
    assert all(tp.leader_epoch == 0 for tp in committed)


def test_two_consumers_in_one_group_split_the_partitions(shared):
    """Two group members: the coordinator rebalances, the leader's assignor splits the four partitions
    between them (disjoint, together all four), and together they read every record once."""
    shared.create_topic("ck-split", 4)
    values = [f"s-{i}".encode() for i in range(400)]
    _produce(shared.bootstrap, "ck-split", values, acks="all")
    conf = {"bootstrap.servers": shared.bootstrap, "group.id": "ck-split", "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    a, b = Consumer(conf), Consumer(conf)
    try:
        a.subscribe(["ck-split"])
        b.subscribe(["ck-split"])
        got = set()  # a record read before the rebalance may be read again after it (at-least-once)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in (a, b):
                msg = c.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.add(msg.value())
            if len(got) == len(values) and a.assignment() and b.assignment():
                break
        pa = {tp.partition for tp in a.assignment()}
        pb = {tp.partition for tp in b.assignment()}
    finally:
        a.close()
        b.close()
    assert pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}
    assert got == set(values)


def test_kafka_python_producer_and_group_consumer(shared):
    """kafka-python 3's KafkaProducer (acks=all) and KafkaConsumer in a group work unmodified; it infers the
    broker version from the advertised API maxima (ApiVersions) as Kafka 3.5's."""
    kafka = pytest.importorskip("kafka")
    shared.create_topic("kp", 2)
    producer = kafka.KafkaProducer(bootstrap_servers=shared.bootstrap, acks="all")
    try:
        futures = [producer.send("kp", value=f"kp-{i}".encode()) for i in range(300)]
        producer.flush(30)
        assert all(f.succeeded() for f in futures)
        inferred = producer.config["api_version"]
    finally:
        producer.close()
    assert inferred == (3, 5)
    consumer = kafka.KafkaConsumer("kp", bootstrap_servers=shared.bootstrap, group_id="kp",
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        values = [msg.value for msg in consumer]
        assigned = sorted(tp.partition for tp in consumer.assignment())
    finally:
        consumer.close()
    assert sorted(values) == sorted(f"kp-{i}".encode() for i in range(300))
    assert assigned == [0, 1]


@pytest.mark.skipif(KCAT is None, reason="Debian's kcat is not installed (apt-get install kcat): kcat tests skipped")
def test_kcat_lists_produces_and_consumes(shared):
    """`kcat -L` shows the three brokers at their client listeners; `kcat -P` then `kcat -C` (librdkafka
    2.0.2: Fetch v11 by topic name, Produce v7, Metadata v4) read back what was produced."""
    shared.create_topic("kcat", 1)
    listing = subprocess.run([KCAT, "-b", shared.bootstrap, "-L", "-t", "kcat"], capture_output=True, text=True,
                             timeout=30)
    assert listing.returncode == 0, listing.stderr
    for n in shared.info["nodes"][1:]:
        assert f"broker {n['id']} at 127.0.0.1:{n['port']}" in listing.stdout
    assert 'topic "kcat" with 1 partitions' in listing.stdout
    lines = "".join(f"line-{i}\n" for i in range(50))
    produced = subprocess.run([KCAT, "-b", shared.bootstrap, "-P", "-t", "kcat", "-X", "acks=all"], input=lines,
                              capture_output=True, text=True, timeout=30)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([KCAT, "-b", shared.bootstrap, "-C", "-t", "kcat", "-e", "-q", "-f", "%o %s\n"],
                              capture_output=True, text=True, timeout=30)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == [f"{i} line-{i}" for i in range(50)]


def test_topics_describe_alter_config_and_delete(shared):
    """`topics describe` lists leader, epoch, ISR, ELR and LastKnownELR per partition; `alter-config`
    changes a topic config (seen through DescribeConfigs); `delete` removes the topic (a second delete is
    Kafka's UNKNOWN_TOPIC_OR_PARTITION, exit 1). The whole deletion story, files and re-creation
    included, is tests/test_real_delete_topic.py."""
    shared.create_topic("admin", 2, 3, "min.insync.replicas=2")
    text = kraftlog("topics", "describe", "--bootstrap-server", shared.bootstrap, "--topic", "admin").stdout
    assert "PartitionCount: 2" in text and "Elr:" in text and "LastKnownElr:" in text
    kraftlog("topics", "alter-config", "--bootstrap-server", shared.bootstrap, "--topic", "admin",
             "--config", "min.insync.replicas=3")
    with KafkaConnection(shared.bootstrap) as conn:
        resource = m.DescribeConfigsResource(2, "admin", ("min.insync.replicas",))
        resp = conn.request(m.DescribeConfigsRequest((resource,)))
    (result,) = resp.results
    assert [(c.name, c.value, c.config_source) for c in result.configs] == [("min.insync.replicas", "3", 1)]
    deleted = kraftlog("topics", "delete", "--bootstrap-server", shared.bootstrap, "--topic", "admin")
    assert "deleted topic admin" in deleted.stdout
    again = kraftlog("topics", "delete", "--bootstrap-server", shared.bootstrap, "--topic", "admin", check=False)
    assert again.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in again.stderr


def test_confluent_admin_client_creates_and_deletes_topics(shared):
    """librdkafka's AdminClient sends CreateTopics/DeleteTopics to the Metadata response's controller id
    and waits for one: a KRaft broker names an alive broker there (Kafka's
    KRaftMetadataCache.getControllerId), which forwards the request. With -1 it timed out after 30 s."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": shared.bootstrap})
    md = admin.list_topics(timeout=10)
    assert md.controller_id in md.brokers, md.controller_id
    futures = admin.create_topics([NewTopic("via-admin", num_partitions=2, replication_factor=3,
                                            config={"min.insync.replicas": "2"})], operation_timeout=20)
    futures["via-admin"].result(timeout=30)
    deadline = time.monotonic() + 20
    while "via-admin" not in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "the topic never appeared in Metadata"
        time.sleep(0.2)
    assert len(admin.list_topics(topic="via-admin", timeout=10).topics["via-admin"].partitions) == 2
    admin.delete_topics(["via-admin"], operation_timeout=20)["via-admin"].result(timeout=30)


def test_cluster_actions_are_refused_on_the_client_listener(shared):
    """Kafka's CLUSTER_ACTION rule: a BrokerHeartbeat sent to a broker's client listener is answered with
    CLUSTER_AUTHORIZATION_FAILED; a consumer's Fetch on the same connection is served."""
    with KafkaConnection(shared.bootstrap) as conn:
        resp = conn.request(m.BrokerHeartbeatRequest(0, 0, 0, False, False))
        assert resp.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        meta = conn.request(m.MetadataRequest(None))
        assert sorted(b.node_id for b in meta.brokers) == [0, 1, 2]


def _coordinated(bootstrap: str, group: str, request):
    """``request`` answered by ``group``'s coordinator, found with FindCoordinator and asked again while the
    coordinator is not there yet (the first FindCoordinator creates __consumer_offsets; a new leader of its
    partition loads it first)."""
    deadline = time.monotonic() + 60
    while True:
        with KafkaConnection(bootstrap) as conn:
            coord = conn.request(m.FindCoordinatorRequest((group,))).coordinators[0]
        if coord.error_code == Errors.NONE:
            with KafkaConnection(f"127.0.0.1:{coord.port}") as conn:
                resp = conn.request(request)
            errors = [resp.error_code] if hasattr(resp, "error_code") else [p.error_code for p in resp.partitions]
            if not set(errors) & {Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                  Errors.COORDINATOR_NOT_AVAILABLE}:
                return coord.node_id, resp
        assert time.monotonic() < deadline, coord
        time.sleep(0.3)


def test_committed_offsets_survive_a_coordinator_restart(shared):
    """Committed offsets are records of the replicated __consumer_offsets (issue 32): after a clean restart of
    the coordinator broker, the group's coordinator (the partition's leader, wherever it is now) answers
    OffsetFetch with them, leader epoch and metadata included."""
    shared.create_topic("commits", 1)
    group = f"commits-{uuid.uuid4().hex[:6]}"
    node, resp = _coordinated(shared.bootstrap, group,
                              m.OffsetCommitRequest(group, (m.OffsetCommitPartition("commits", 0, 42, 0, "meta"),)))
    assert [p.error_code for p in resp.partitions] == [Errors.NONE]
    kraftlog("cluster", "stop", "--dir", shared.dir, "--broker", str(node))
    kraftlog("cluster", "start", "--dir", shared.dir, "--broker", str(node))
    _node, fetched = _coordinated(shared.bootstrap, group, m.OffsetFetchRequest(group, (("commits", 0),)))
    assert [(p.committed_offset, p.committed_leader_epoch, p.metadata) for p in fetched.partitions] == [(42, 0, "meta")]


# ============================================================================ failures on real processes
def test_sigkill_of_the_leader_while_producing_acks_all_loses_nothing(fresh):
    """SIGKILL the partition leader while a confluent-kafka producer sends with acks=all: the controller
    fences it and elects an ISR member, the producer keeps going, and reading back from the beginning finds
    every acknowledged record; the killed broker restarts with `cluster start`, recovers its log from disk
    and rejoins the ISR."""
    fresh.create_topic("kill", 1, 3, "min.insync.replicas=2")
    leader = fresh.describe("kill")[0]["leader"]
    acked, errors = [], []

    def on_delivery(err, msg):
        (errors if err else acked).append(str(err) if err else msg.value())

    p = Producer({"bootstrap.servers": fresh.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2})
    start = time.monotonic()
    sent = 0
    killed_at = None
    while time.monotonic() - start < 20:
        p.produce("kill", value=f"k-{sent}".encode(), callback=on_delivery)
        sent += 1
        p.poll(0.001)
        if killed_at is None and time.monotonic() - start > 3:
            kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(leader), "--kill")
            killed_at = len(acked)
    assert p.flush(90) == 0
    assert not errors, errors[:5]
    assert len(acked) - killed_at > 100, "the producer did not keep going after the election"
    after = fresh.describe("kill")[0]
    assert after["leader"] not in (-1, leader) and leader not in after["isr"]

    c = Consumer({"bootstrap.servers": fresh.bootstrap, "group.id": "kill-check", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("kill", 0, 0)])
        got = {msg.value() for msg in _consume(c, len(set(acked)), timeout_s=90)}
    finally:
        c.close()
    missing = set(acked) - got
    assert not missing, f"{len(missing)} acknowledged records lost"

    kraftlog("cluster", "start", "--dir", fresh.dir, "--broker", str(leader))
    fresh.wait_for(f"broker {leader} back in the ISR", lambda: leader in fresh.describe("kill")[0]["isr"])
    log = open(os.path.join(fresh.dir, f"broker-{leader}.log")).read()
    assert "Traceback" not in log


class _LibrdkafkaLog:
    """A ``logger`` for a confluent-kafka client: keeps librdkafka's last log lines (its ``debug`` output)
    in memory, for a failing test's message."""

    def __init__(self, keep: int = 400) -> None:
        self.lines: collections.deque = collections.deque(maxlen=keep)

    def log(self, level, msg, *args, **kwargs) -> None:
        self.lines.append(msg % args if args else str(msg))

    # confluent-kafka calls the logging.Logger methods it finds
    debug = info = warning = error = critical = log

    def tail(self) -> str:
        return "\n".join(self.lines)


def test_kip320_real_consumers_report_truncation_after_an_unclean_election(fresh):
    """KIP-320 with real clients: the ISR shrinks to the leader, which takes records 100..199 alone; both
    consumers read to offset 200; the leader dies and an out-of-sync replica (LEO 100) is elected with
    `kraftlog elect --type unclean`, then takes 50 new records. kafka-python with auto_offset_reset='none',
    polling all along, raises instead of silently skipping to the new records; confluent-kafka with
    auto.offset.reset=error, resuming at offset 200 with the leader epoch of the record it read last (as from
    a committed offset, which carries it), reports the log truncation (OffsetForLeaderEpoch: epoch 0 ends at
    100 < 200)."""
    kafka = pytest.importorskip("kafka")
    # At level urm `elect --type unclean` runs an Aggressive recovery, which waits for every replica or
    # unclean.recovery.timeout.ms (issue 25; 5 minutes by default): 5 s here, a cluster-level dynamic config.
    # The confluent consumer's group.id makes its broker create __consumer_offsets (issue 32): one partition
    # here rather than 50, whose leaderships would all move with the kills below (the test is about KIP-320).
    with KafkaConnection(fresh.bootstrap) as k:
        resp = k.request(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            m.RESOURCE_BROKER, "", (m.AlterableConfig("unclean.recovery.timeout.ms", m.OP_SET, "5000"),
                                    m.AlterableConfig("offsets.topic.num.partitions", m.OP_SET, "1"))),)))
    assert resp.responses[0].error_code == Errors.NONE, resp
    fresh.create_topic("k320", 1, 3, "min.insync.replicas=1")
    part = fresh.describe("k320")[0]
    leader = part["leader"]
    followers = [r for r in part["replicas"] if r != leader]
    _produce(fresh.bootstrap, "k320", [f"a-{i}".encode() for i in range(100)], acks="all")
    fresh.wait_for("followers caught up", lambda: sorted(fresh.describe("k320")[0]["isr"]) == [0, 1, 2])
    # kafka-python finds the new leader through the old one, restarted after the election (see below).
    kp = kafka.KafkaConsumer(bootstrap_servers=fresh.bootstrap, group_id=None, auto_offset_reset="none",
                             enable_auto_commit=False, reconnect_backoff_max_ms=1000)
    tp = kafka.TopicPartition("k320", 0)
    kp.assign([tp])
    kp.seek(tp, 0)
    # librdkafka's own log of how it validates its position (kept, printed only if the test fails)
    rdlog = _LibrdkafkaLog()
    config = {"bootstrap.servers": fresh.bootstrap, "group.id": "k320-ck", "auto.offset.reset": "error",
              "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000,
              "debug": "consumer,cgrp,topic,fetch,metadata,broker"}
    ck: Consumer | None = Consumer(config, logger=rdlog)
    try:
        read = 0
        deadline = time.monotonic() + 30
        while read < 100 and time.monotonic() < deadline:
            read += sum(len(v) for v in kp.poll(timeout_ms=500).values())
        assert read == 100
        for f in followers:
            kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(f), "--kill")
        fresh.wait_for("ISR = the leader alone", lambda: fresh.describe("k320")[0]["isr"] == [leader])
        _produce(fresh.bootstrap, "k320", [f"b-{i}".encode() for i in range(100)], acks="all")
        assert ck is not None
        ck.assign([TopicPartition("k320", 0, 0)])
        consumed = _consume(ck, 200)
        assert len(consumed) == 200 and consumed[-1].offset() == 199
        last_epoch = consumed[-1].leader_epoch()
        assert last_epoch == part["leader_epoch"], "librdkafka reads each record's leader epoch (KIP-320)"
        # A live librdkafka consumer that sees the partition leaderless (leader -1 in a Metadata response)
        # can keep it without a leader for good (librdkafka issue 5430; it failed this test once in CI with
        # no Metadata request after that response in 150 s): it resumes after the election instead.
        _close_within(ck, 30, rdlog)
        ck = None
        deadline = time.monotonic() + 30
        while read < 200 and time.monotonic() < deadline:
            read += sum(len(v) for v in kp.poll(timeout_ms=500).values())
        assert read == 200 and kp.position(tp) == 200

        kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(leader), "--kill")
        kraftlog("cluster", "start", "--dir", fresh.dir, "--broker", str(followers[0]))
        fresh.wait_for("the partition leaderless", lambda: fresh.describe("k320")[0]["leader"] == -1)
        kraftlog("elect", "--bootstrap-server", fresh.bootstrap, "--type", "unclean", "--topic", "k320",
                 "--partition", "0")
        after = fresh.describe("k320")[0]
        assert after["leader"] == followers[0] and after["leader_epoch"] > part["leader_epoch"]
        _produce(fresh.bootstrap, "k320", [f"c-{i}".encode() for i in range(50)], acks="all")
        # kafka-python learned brokers from Metadata only, and fenced brokers are not listed (as in Kafka):
        # once the followers died it knew the old leader alone, and it never goes back to its bootstrap list.
        # So the old leader is started again (it truncates its diverged records 100..199 and follows the new
        # leader) for it to find the new leader through it; the new leader answers its OffsetForLeaderEpoch.
        kraftlog("cluster", "start", "--dir", fresh.dir, "--broker", str(leader))

        rdlog = _LibrdkafkaLog()
        ck = Consumer(config, logger=rdlog)
        ck.assign([TopicPartition("k320", 0, 200, leader_epoch=last_epoch)])
        error = None
        skipped = []
        # librdkafka validates its position after a metadata refresh and a backoff: under load (CI beside a
        # benchmark) that took over 60 s once, while an idle machine takes seconds. The loop ends at once on
        # the error; the bound only caps a failing run.
        deadline = time.monotonic() + 150
        while error is None and time.monotonic() < deadline:
            msg = ck.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                error = msg.error()
            else:
                skipped.append(msg.value())
        assert not skipped, f"confluent-kafka silently read {len(skipped)} records of the new log\n{rdlog.tail()}"
        assert error is not None and error.code() == confluent_kafka.KafkaError._AUTO_OFFSET_RESET, \
            f"confluent-kafka reported {error} instead of the truncation; its log:\n{rdlog.tail()}"
        assert "truncation" in error.str().lower()

        raised = None
        deadline = time.monotonic() + 60
        while raised is None and time.monotonic() < deadline:
            try:
                records = kp.poll(timeout_ms=500)
            except (kafka.errors.LogTruncationError, kafka.errors.OffsetOutOfRangeError) as exc:
                raised = exc
                break
            assert not records, "kafka-python silently read records of the new log"
        assert raised is not None, "kafka-python did not report the truncation"
        # the old leader truncated its diverged records 100..199 and follows the new leader
        fresh.wait_for("the old leader back in the ISR", lambda: leader in fresh.describe("k320")[0]["isr"])
    finally:
        if ck is not None:
            _close_within(ck, 30, rdlog)
        kp.close()


def _close_within(consumer, timeout_s: float, log) -> None:
    """``consumer.close()`` (confluent-kafka) bounded: librdkafka's close waits for its group's coordinator
    requests, and once in a CI run it never returned after this story (the worker hung until it was killed).
    A close still running after ``timeout_s`` is left to its daemon thread and reported as a warning with
    librdkafka's log; the test's verdict is what it asserted before."""
    import threading
    import warnings
    closer = threading.Thread(target=consumer.close, name="confluent-kafka close", daemon=True)
    closer.start()
    closer.join(timeout_s)
    if closer.is_alive():
        warnings.warn(f"confluent-kafka's Consumer.close() did not return within {timeout_s:.0f} s; its log:\n"
                      f"{log.tail()}", stacklevel=2)


def test_foreground_cluster_up_shows_status_and_ctrl_c_shuts_down_cleanly(tmp_path):
    """`cluster up` without --detach stays in the foreground printing node status; Ctrl-C (SIGINT) shuts
    every node down cleanly: each broker writes its clean-shutdown file (KIP-966) and every process exits."""
    from kraftlog.storage.checkpoints import CLEAN_SHUTDOWN_FILE
    directory = str(tmp_path / "fg")
    proc = subprocess.Popen([sys.executable, "-m", "kraftlog.cli", "cluster", "up", "--brokers", "2", "--dir",
                             directory, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def unfenced():
            try:
                return [n.fenced for n in cl.status(directory) if n.role == "broker"] == [False, False]
            except cl.ClusterError:
                return False
        RealCluster(directory).wait_for("both brokers unfenced", unfenced)
        time.sleep(1.0)  # a status line is printed within 0.5 s of a change
        pids = [n["pid"] for n in cl.load(directory)["nodes"]]
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0, out
        assert "Ctrl-C shuts every node down cleanly" in out
        assert any("broker-0 :" in line and "broker-1 :" in line and "unfenced" in line for line in out.splitlines())
        assert "broker-0: stopped cleanly" in out and "controller: stopped cleanly" in out
        for b in (0, 1):
            assert os.path.exists(os.path.join(directory, f"broker-{b}", "data", CLEAN_SHUTDOWN_FILE))
        assert not any(cl.pid_alive(pid) for pid in pids)
    finally:
        if proc.poll() is None:
            proc.kill()
        _stop_everything(directory)


# ============================================================================ level urm over TCP
def test_unclean_recovery_over_tcp_none_waits_then_longest_log_balanced_elects(fresh):
    """KIP-966 part 2 on real processes (level urm, the default): with unclean.recovery.strategy=None a
    partition whose replicas all restarted after a SIGKILL (unclean shutdowns: ISR and ELR empty, the
    replicas in LastKnownELR) stays leaderless; `kraftlog elect --type longest_log_balanced` (ElectLeaders
    v3, forwarded by a broker) makes the controller ask every replica with GetReplicaLogInfo over the
    brokers' internal listeners and elect one; the acknowledged records are all there."""
    fresh.create_topic("urm", 1, 3, "min.insync.replicas=2", "unclean.recovery.strategy=None")
    part = fresh.describe("urm")[0]
    leader = part["leader"]
    followers = [r for r in part["replicas"] if r != leader]
    values = [f"u-{i}".encode() for i in range(100)]
    assert len(_produce(fresh.bootstrap, "urm", values, acks="all")) == 100
    fresh.wait_for("every replica in the ISR", lambda: sorted(fresh.describe("urm")[0]["isr"]) == [0, 1, 2])
    # SIGKILLs one by one: the ISR shrinks to the leader (the second follower goes to the ELR), then empties
    kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(followers[0]), "--kill")
    fresh.wait_for("ISR without the first follower",
                   lambda: sorted(fresh.describe("urm")[0]["isr"]) == sorted([leader, followers[1]]))
    kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(followers[1]), "--kill")
    fresh.wait_for("ISR = the leader alone", lambda: fresh.describe("urm")[0]["isr"] == [leader])
    kraftlog("cluster", "stop", "--dir", fresh.dir, "--broker", str(leader), "--kill")
    for b in [leader] + followers:
        kraftlog("cluster", "start", "--dir", fresh.dir, "--broker", str(b))
    fresh.wait_for("ISR and ELR empty, every replica in LastKnownELR",
                   lambda: (lambda p: p["leader"] == -1 and not p["isr"] and not p["elr"]
                            and len(p["last_known_elr"]) >= 2)(fresh.describe("urm")[0]), timeout_s=90)
    time.sleep(5)  # strategy None: no recovery starts by itself
    assert fresh.describe("urm")[0]["leader"] == -1
    out = kraftlog("elect", "--bootstrap-server", fresh.bootstrap, "--type", "longest_log_balanced",
                   "--topic", "urm", "--partition", "0")
    assert "longest_log_balanced election done for urm-0" in out.stdout
    after = fresh.describe("urm")[0]
    assert after["leader"] in part["replicas"] and after["leader_epoch"] > part["leader_epoch"]
    fresh.wait_for("the recovery in the controller's log", lambda: "unclean recovery of urm-0: elected: broker "
                   f"{after['leader']}" in open(os.path.join(fresh.dir, "controller.log")).read(), timeout_s=10)
    c = Consumer({"bootstrap.servers": fresh.bootstrap, "group.id": "urm-check", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition("urm", 0, 0)])
        assert sorted(msg.value() for msg in _consume(c, 100)) == sorted(values)
    finally:
        c.close()
