"""An admin-request fuzzer (issue 24, "What to build" 6): random sequences of CreateTopics, DeleteTopics,
IncrementalAlterConfigs and ElectLeaders -- names empty, long, unicode, path-like, colliding, internal;
counts zero, negative, huge; assignments with unknown, repeated or missing brokers and partition
indexes; configs known and unknown, of every type, null -- must never make a node raise or stop
applying metadata.

* ``test_admin_fuzz_in_the_simulator`` (hypothesis, fast): each example bootstraps a 3-broker SimCluster,
  sends a random sequence through the simulator's admin client to the controller (as the scenario
  runner's ``_admin_call`` does), then checks that no node raised (the simulator would raise), that no
  node counted a metadata record it could not apply, that every broker caught up with the controller's
  metadata log, and that a valid topic created afterwards gets a leader and takes an acks=all record.
* ``test_admin_fuzz_on_a_real_cluster`` (slow): 500 such requests to a real 3-broker cluster (OS
  processes on loopback) through a broker (forwarded to the controller) and to the controller; no process
  dies, every node stays healthy, a valid topic works afterwards; it prints the requests tried and the
  errors by code (README, "Hostile input").

Requests come from a seeded ``random.Random`` (:func:`random_request`), so a failing example names its
seed; every request is encodable at the version the core message names (i16/i32 counts in range).
"""

from __future__ import annotations

import collections
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import apply_errors, running_cluster, wait_for
from kraftlog.client.admin import Admin
from kraftlog.client.producer import Producer
from kraftlog.level import Level
from kraftlog.metadata import config as cfg
from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.sim.cluster import SimCluster

BROKERS = 3
HOST = "127.0.0.1"

# ------------------------------------------------------------------------------ the generator
FIXED_NAMES = ["", ".", "..", "a/b", "../../escape", "bad topic", "tópico", "日本", "x" * 249, "y" * 250,
               "z" * 300, "__cluster_metadata", "__consumer_offsets", "a.b", "a_b", "t", "T", "-", "_", "\n",
               "con", "nul\x00byte", "/", "\\", "a" * 1000]
CONFIG_NAMES = sorted(cfg.KNOWN_CONFIGS) + ["retention.ms", "", "x" * 300, "min.insync.replica", "élan"]
CONFIG_VALUES = ["1", "0", "-1", "2", "3", "abc", "", "true", "false", "TRUE", "2.5", "9223372036854775807",
                 "9223372036854775808", "-9223372036854775809", "2147483648", "None", "Balanced", "aggressive",
                 None, " 7 ", "1e3", "１"]
COUNTS = [-2**31, -3, -2, -1, -1, 0, 1, 1, 2, 3, 10_001, 2**31 - 1]
REPLICATION = [-32768, -3, -2, -1, -1, 0, 1, 2, 3, 3, 4, 32767]


def random_name(rng: random.Random, known: list[str]) -> str:
    kind = rng.randrange(6)
    if kind == 0 and known:
        return rng.choice(known)
    if kind == 1:
        return rng.choice(FIXED_NAMES)
    if kind == 2:
        return "".join(rng.choice("ab._-/ éé\u00e9\u4e2d") for _ in range(rng.randrange(0, 12)))
    if kind == 3:
        return "../" * rng.randrange(1, 4) + rng.choice(["etc", "data", "x"])
    return f"f{rng.randrange(30)}" + rng.choice(["", ".x", "_x", "-x"])


def random_configs(rng: random.Random) -> tuple:
    return tuple((rng.choice(CONFIG_NAMES), rng.choice(CONFIG_VALUES)) for _ in range(rng.randrange(0, 3)))


def random_request(rng: random.Random, known: list[str]):
    """One admin request, or a few topics of one, drawn from ``rng``; ``known``: topic names seen."""
    kind = rng.randrange(4)
    if kind == 0:
        topics = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            name = random_name(rng, known)
            if rng.random() < 0.2:
                brokers = [rng.choice([-1, 0, 1, 2, 3, 7, 0, 1, 2]) for _ in range(rng.randrange(0, 4))]
                entries = tuple(tuple(rng.sample(brokers, len(brokers))) for _ in range(rng.randrange(1, 4)))
                indexes = tuple(rng.choice([0, 1, 2, 5, -1]) for _ in entries) if rng.random() < 0.3 else ()
                topics.append(m.CreatableTopic(name, rng.choice([-1, -1, 2]), rng.choice([-1, -1, 3]), entries,
                                               random_configs(rng), indexes))
            else:
                topics.append(m.CreatableTopic(name, rng.choice(COUNTS), rng.choice(REPLICATION),
                                               configs=random_configs(rng)))
        return m.CreateTopicsRequest(tuple(topics))
    if kind == 1:
        return m.DeleteTopicsRequest(tuple(random_name(rng, known) for _ in range(rng.randrange(0, 3))))
    if kind == 2:
        resources = []
        for _ in range(rng.randrange(0, 3)):
            rtype = rng.choice([2, 2, 4, 4, 0, 1, 99])
            rname = random_name(rng, known) if rtype == 2 else rng.choice(["", "", "0", "7", "x"])
            configs = tuple(m.AlterableConfig(rng.choice(CONFIG_NAMES), rng.choice([0, 0, 1, 2, 3, 9]),
                                              rng.choice(CONFIG_VALUES)) for _ in range(rng.randrange(0, 3)))
            resources.append(m.AlterConfigsResource(rtype, rname, configs))
        return m.IncrementalAlterConfigsRequest(tuple(resources), validate_only=rng.random() < 0.1)
    parts = tuple(m.ElectLeadersPartition(random_name(rng, known), rng.choice([-1, 0, 1, 2, 2**31 - 1]))
                  for _ in range(rng.randrange(0, 3)))
    return m.ElectLeadersRequest(rng.choice([0, 0, 1, 1, 2, 3, 4, 9, -1]), parts, timeout_ms=rng.choice([0, 100, 1000]))


def created_names(resp) -> list[str]:
    return [t.name for t in getattr(resp, "topics", ()) if isinstance(resp, m.CreateTopicsResponse)
            and t.error_code == Errors.NONE]


def error_codes(resp) -> list[int]:
    """Every per-item error code of an admin response."""
    if isinstance(resp, m.CreateTopicsResponse):
        return [t.error_code for t in resp.topics]
    if isinstance(resp, m.DeleteTopicsResponse):
        return [t.error_code for t in resp.responses]
    if isinstance(resp, m.IncrementalAlterConfigsResponse):
        return [r.error_code for r in resp.responses]
    if isinstance(resp, m.ElectLeadersResponse):
        return [resp.error_code] + [r.error_code for r in resp.results]
    return [int(resp)] if isinstance(resp, int) else []


#: A valid topic created after the fuzzing, with topic-level configs that override whatever cluster-level
#: values the fuzzer set (a cluster-wide message.max.bytes=0 is a legitimate config, not a fault).
SAFE_CONFIGS = (("max.message.bytes", "1048588"), ("message.timestamp.before.max.ms", str((1 << 63) - 1)),
                ("message.timestamp.after.max.ms", "3600000"), ("min.insync.replicas", "1"))


# ------------------------------------------------------------------------------ the simulator
class SimFuzz:
    def __init__(self, seed: int) -> None:
        self.sim = SimCluster(BROKERS, {}, Level.URM, seed, writeback_ms=None)
        self.sim.start_controller()
        for b in range(BROKERS):
            self.sim.start_broker(b)
        self.admin = Admin("fuzz-admin")
        self.sim.add_client(self.admin)
        assert self.sim.run_until(30_000, lambda s: all(s.controller.image.is_active(b) for b in range(BROKERS)))

    def call(self, request, timeout_ms: int = 5000):
        sim = self.sim
        rid = self.admin.submit(request, sim.now, timeout_ms)
        sim._after(self.admin.node_id, self.admin)
        sim.run_until(sim.now + timeout_ms + 1, lambda s: rid in self.admin.results)
        return self.admin.results.pop(rid, Errors.REQUEST_TIMED_OUT)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
def test_admin_fuzz_in_the_simulator(seed, n):
    """No node raises and metadata keeps applying under random admin requests; a valid topic created
    afterwards gets a leader on every replica's image and takes an acks=all record."""
    f = SimFuzz(seed)
    rng = random.Random(seed)
    known: list[str] = []
    for _ in range(n):
        resp = f.call(random_request(rng, known))
        known += created_names(resp)
    sim = f.sim
    ctl = sim.controller
    assert ctl.metadata_apply_errors.count == 0, (seed, ctl.metadata_apply_errors.take())
    resp = f.call(m.CreateTopicsRequest((m.CreatableTopic("valid-after", 1, BROKERS, configs=SAFE_CONFIGS),)))
    assert resp.topics[0].error_code == Errors.NONE, (seed, resp)

    def ready(s) -> bool:
        part = s.controller.image.partitions.get(("valid-after", 0))
        return part is not None and part.leader >= 0 and all(
            s.broker(b).image.offset == s.controller.end_offset - 1 for b in range(BROKERS))

    assert sim.run_until(sim.now + 30_000, ready), seed
    for b in range(BROKERS):
        assert sim.broker(b).metadata_apply_errors.count == 0, (seed, b, sim.broker(b).metadata_apply_errors.take())
    prod = Producer("fuzz-producer", list(range(BROKERS)), -1, random.Random(seed))
    sim.add_client(prod)
    prod.send("valid-after", 0, b"after", sim.now)
    sim._after(prod.node_id, prod)
    assert sim.run_until(sim.now + 60_000, lambda s: prod.idle), seed
    (done,) = prod.take_completions()
    assert (done.error, done.offset) == (Errors.NONE, 0), (seed, done)


# ------------------------------------------------------------------------------ a real cluster
REAL_REQUESTS = 500
REAL_SEED = 2024_24


@pytest.mark.slow
def test_admin_fuzz_on_a_real_cluster(tmp_path):
    """500 random admin requests to a real 3-broker cluster, through a broker and to the controller: every
    one answered, no process dies, no node counts a metadata record it could not apply, and a valid topic
    created afterwards takes a record."""
    directory = str(tmp_path / "fuzz")
    rng = random.Random(REAL_SEED)
    tried = 0
    by_code: collections.Counter = collections.Counter()
    with running_cluster(directory, BROKERS):
        nodes = cl.load(directory)["nodes"]
        pids = [e["pid"] for e in nodes]
        brokers = [f"{HOST}:{e['port']}" for e in nodes if e["role"] == "broker"]
        controller = next(f"{HOST}:{e['port']}" for e in nodes if e["role"] == "controller")
        known: list[str] = []
        started = time.monotonic()
        for i in range(REAL_REQUESTS):
            target = controller if i % 4 == 3 else brokers[i % BROKERS]
            request = random_request(rng, known)
            with KafkaConnection(target, timeout_s=30) as k:
                # ElectLeaders v3 (KIP-966, served at level urm) carries every election type.
                resp = k.request(request, version=3 if isinstance(request, m.ElectLeadersRequest) else None)
            tried += 1
            known += created_names(resp)
            by_code.update(Errors(c).name for c in error_codes(resp))
        elapsed = time.monotonic() - started
        print(f"\nadmin fuzz on a real cluster: {tried} requests in {elapsed:.0f} s (seed {REAL_SEED}); "
              f"errors by code: {dict(sorted(by_code.items(), key=lambda kv: -kv[1]))}")
        status = cl.status(directory)
        assert all(n.alive for n in status) and all(cl.pid_alive(p) for p in pids), [n.as_dict() for n in status]
        print("nodes crashed: 0; metadata-apply-error-count:", {n.id: apply_errors(n) for n in status})
        assert all(apply_errors(n) == 0 for n in status), [n.as_dict() for n in status]
        with KafkaConnection(brokers[0], timeout_s=30) as k:
            resp = k.request(m.CreateTopicsRequest((m.CreatableTopic("valid-after", 1, BROKERS,
                                                                     configs=SAFE_CONFIGS),)))
            assert resp.topics[0].error_code == Errors.NONE, resp

        def leader():
            with KafkaConnection(brokers[0], timeout_s=30) as k:
                md = k.request(m.MetadataRequest(("valid-after",)))
            parts = md.topics[0].partitions if md.topics and md.topics[0].error_code == Errors.NONE else ()
            return parts[0].leader_id + 1 if parts and parts[0].leader_id >= 0 else None

        lead = wait_for("valid-after led", leader) - 1
        with KafkaConnection(brokers[lead], timeout_s=30) as k:
            batch = RecordBatch(-1, -1, (Record(int(time.time() * 1000), None, b"after"),))
            resp = k.request(m.ProduceRequest(-1, 15_000, (m.ProducePartition("valid-after", 0, (batch,)),)))
        assert (resp.partitions[0].error_code, resp.partitions[0].base_offset) == (Errors.NONE, 0), resp
        for name in ("controller", *(f"broker-{b}" for b in range(BROKERS))):
            with open(f"{directory}/{name}.log", errors="replace") as f:
                assert "Traceback" not in f.read(), name
    assert tried == REAL_REQUESTS
