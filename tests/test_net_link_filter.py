"""Issue 13, link faults on a real cluster: the TCP driver's link filter and its control channel.

The rule object (:class:`kraftlog.net.link_filter.LinkFilter`) is checked against the simulator's own
semantics (:class:`kraftlog.sim.cluster.SimCluster`): each verb on its own, then random sequences of
verbs judged link by link by both. The driver's plumbing (held requests back in order at their
connection, a dropped response does not block the connection) runs on a fake node, without sockets. The
slow tests start a real 3-broker chaos-mode cluster (free loopback ports, a tmp directory, every process
SIGKILLed by PID in a ``finally``) and drive it through the control channel.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque

import pytest

from conftest import wait_for
from kraftlog.controller.controller import CONTROLLER
from kraftlog.level import DEFAULT
from kraftlog.net import cluster as cl
from kraftlog.net.connections import Connection
from kraftlog.net.driver import NodeDriver
from kraftlog.net.link_filter import CLIENTS, DROP, HOLD, PASS, LinkFilter, node_of_client_id
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol.framing import ServerConnection
from kraftlog.sim.cluster import SimCluster

C = CONTROLLER
BROKERS = (0, 1, 2)
NODES = (*BROKERS, C)
#: every endpoint a real node can tell apart: the brokers, the controller, and the clients
ENDPOINTS = (*NODES, CLIENTS)


def links(f: LinkFilter) -> set:
    """The directed links that are cut."""
    return {(a, b) for a in ENDPOINTS for b in ENDPOINTS if a != b and f.is_cut(a, b)}


def both_ways(*pairs) -> set:
    return {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}


# ====================================================================== each verb
def test_isolate_cuts_the_nodes_from_every_other_endpoint_clients_included():
    f = LinkFilter()
    f.isolate([0])
    assert links(f) == both_ways((0, 1), (0, 2), (0, C), (0, CLIENTS))
    assert f.decide("Produce", CLIENTS, 0) == DROP and f.decide("Produce", 0, CLIENTS) == DROP
    assert f.decide("Fetch", 1, 2) == PASS and f.decide("Metadata", CLIENTS, 1) == PASS


def test_isolating_several_nodes_keeps_the_links_among_them():
    f = LinkFilter()
    f.isolate([0, 1])
    assert (0, 1) not in links(f) and (1, 0) not in links(f)
    assert links(f) == both_ways(*[(a, b) for a in (0, 1) for b in (2, C, CLIENTS)])


def test_partition_cuts_between_groups_and_clients_in_no_group_reach_all():
    f = LinkFilter()
    f.partition([[0, 1], [2, C]])
    assert links(f) == both_ways((0, 2), (0, C), (1, 2), (1, C))
    for node in NODES:  # clients are in no group
        assert f.decide("Produce", CLIENTS, node) == PASS and f.decide("Produce", node, CLIENTS) == PASS


def test_a_node_in_no_group_reaches_every_group():
    f = LinkFilter()
    f.partition([[0], [1]])
    assert links(f) == both_ways((0, 1))


def test_cut_is_one_direction():
    f = LinkFilter()
    f.cut_link(0, 1)
    assert links(f) == {(0, 1)}
    assert f.decide("Fetch", 0, 1) == DROP and f.decide("Fetch", 1, 0) == PASS


def test_heal_of_some_nodes_then_of_all():
    f = LinkFilter()
    f.isolate([0, 1])
    f.cut_link(2, C)
    f.partition([[0, 2], [1, C]])
    f.heal([0])  # 0 leaves the isolated set and its group; the cut 2 -> C does not touch 0
    assert links(f) == both_ways((1, 0), (1, 2), (1, C), (1, CLIENTS), (2, C))
    f.heal([C])
    assert links(f) == both_ways((1, 0), (1, 2), (1, C), (1, CLIENTS))
    f.heal()
    assert links(f) == set() and not f.active


def test_heal_leaves_holds_alone():
    f = LinkFilter()
    f.hold("AlterPartition", 0, C)
    f.heal()
    assert f.decide("AlterPartition", 0, C) == HOLD


def test_hold_matches_api_src_dst_and_release_gives_back_in_order():
    f = LinkFilter()
    f.hold("AlterPartition", 0, C)
    f.hold("Fetch", None, 1)
    assert f.decide("AlterPartition", 0, C) == HOLD
    assert f.decide("AlterPartition", 1, C) == PASS  # another src
    assert f.decide("AlterPartition", C, 0) == PASS  # the other direction
    assert f.decide("BrokerHeartbeat", 0, C) == PASS  # another api
    assert f.decide("Fetch", 2, 1) == HOLD and f.decide("Fetch", CLIENTS, 1) == HOLD  # any src
    for i, (api, src, dst) in enumerate([("AlterPartition", 0, C), ("Fetch", 2, 1), ("AlterPartition", 0, C),
                                         ("Fetch", 0, 1), ("AlterPartition", 0, C)]):
        f.hold_message(api, src, dst, i)
    assert f.status()["held"] == 5
    assert f.release("AlterPartition") == [0, 2, 4]  # in the order held
    assert f.decide("AlterPartition", 0, C) == PASS and f.decide("Fetch", 2, 1) == HOLD
    assert f.release(src=0) == [3]  # the held message from 0, though the Fetch hold (src any) stays
    assert f.decide("Fetch", 0, 1) == HOLD
    assert f.release() == [1] and not f.holds and not f.held


def test_release_with_wildcards_ends_only_the_holds_it_matches():
    """SimCluster.release: a None field of the release matches anything; a None field of a hold is only
    matched by a None release field."""
    f = LinkFilter()
    f.hold(None, 0, None)
    f.hold("Fetch", 1, 2)
    f.release("Fetch")  # (None, 0, None) has api None != "Fetch": it stays
    assert f.holds == [(None, 0, None)]
    f.release(src=0)
    assert f.holds == []


def test_a_cut_drops_before_a_hold_holds():
    f = LinkFilter()
    f.hold("Fetch")
    f.cut_link(1, 0)
    assert f.decide("Fetch", 1, 0) == DROP and f.decide("Fetch", 0, 1) == HOLD


# ====================================================================== the simulator's semantics
def _sim() -> SimCluster:
    return SimCluster(3, {}, DEFAULT, seed=1)


def _random_command(rng: random.Random) -> dict:
    kind = rng.choice(["isolate", "partition", "cut", "heal", "heal", "hold", "release"])
    nodes = list(NODES)
    if kind == "isolate":
        return {"cmd": kind, "nodes": rng.sample(nodes, rng.randint(1, 3))}
    if kind == "partition":
        rng.shuffle(nodes)
        members = nodes[:rng.randint(2, 4)]
        cut = rng.randint(1, len(members) - 1)
        return {"cmd": kind, "groups": [members[:cut], members[cut:]]}
    if kind == "cut":
        src, dst = rng.sample(nodes, 2)
        return {"cmd": kind, "from": src, "to": dst}
    if kind == "heal":
        return {"cmd": kind, "nodes": None if rng.random() < 0.3 else rng.sample(nodes, rng.randint(1, 2))}
    pick = lambda: None if rng.random() < 0.4 else rng.choice(nodes)  # noqa: E731
    return {"cmd": kind, "api": rng.choice([None, "Fetch", "AlterPartition"]), "from": pick(), "to": pick()}


def _apply_to_sim(sim: SimCluster, c: dict) -> None:
    kind = c["cmd"]
    if kind == "isolate":
        sim.isolate(c["nodes"])
    elif kind == "partition":
        sim.partition(c["groups"])
    elif kind == "cut":
        sim.cut_link(c["from"], c["to"])
    elif kind == "heal":
        sim.heal(c["nodes"])
    elif kind == "hold":
        sim.hold(c["api"], c["from"], c["to"])
    else:
        sim.release(c["api"], c["from"], c["to"])


class _Msg:
    def __init__(self, api: str) -> None:
        self.API = api


@pytest.mark.parametrize("seed", range(20))
def test_random_commands_judge_every_link_as_the_simulator(seed):
    """Random verb sequences through ``apply`` (the control channel's path) against SimCluster: every
    directed link, with a client named ``p1`` in the simulator (CLIENTS here), and every hold."""
    rng = random.Random(seed)
    sim = _sim()
    f = LinkFilter()
    sim_ends = (*NODES, "p1")
    for _ in range(25):
        command = _random_command(rng)
        f.apply(json.loads(json.dumps(command)))  # as it travels, through JSON
        _apply_to_sim(sim, command)
        f = LinkFilter.from_rules(json.loads(json.dumps(f.to_rules())))  # links.json keeps the same rules
        for a, ea in zip(sim_ends, ENDPOINTS, strict=True):
            for b, eb in zip(sim_ends, ENDPOINTS, strict=True):
                if a == b:
                    continue
                assert f.is_cut(ea, eb) == sim.is_cut(a, b), (command, a, b)
                for api in ("Fetch", "AlterPartition", "Produce"):
                    held = sim.links.is_held(api, a, b)
                    assert f.is_held(api, ea, eb) == held, (command, api, a, b)


# ====================================================================== commands
def test_commands_are_checked_and_a_bad_one_changes_nothing():
    f = LinkFilter()
    for bad in ([], {"cmd": "isolate"}, {"cmd": "isolate", "nodes": []}, {"cmd": "isolate", "nodes": ["broker-0"]},
                {"cmd": "isolate", "nodes": [True]}, {"cmd": "isolate", "nodes": [0, 0]},
                {"cmd": "isolate", "nodes": [0], "extra": 1}, {"cmd": "partition", "groups": [[0], [0, 1]]},
                {"cmd": "cut", "from": 0}, {"cmd": "cut", "from": 0, "to": 0},
                {"cmd": "cut", "from": 0, "dst": 1}, {"cmd": "hold", "api": "NoSuchApi"},
                {"cmd": "hold", "from": "clients"}, {"cmd": "explode"}, {"cmd": "status", "x": 1}):
        with pytest.raises(ValueError):
            f.apply(bad)
        assert not f.active
    f.apply({"cmd": "cut", "src": 0, "dst": C})  # SimCluster's argument names work too
    assert links(f) == {(0, C)}


def test_rules_round_trip_through_json_and_status_counts_held_messages():
    f = LinkFilter()
    for c in ({"cmd": "isolate", "nodes": [2, C]}, {"cmd": "partition", "groups": [[0], [1, 2]]},
              {"cmd": "cut", "from": C, "to": 1}, {"cmd": "hold", "api": "AlterPartition", "from": 0, "to": C}):
        f.apply(c)
    rules = json.loads(json.dumps(f.to_rules()))
    assert rules == {"cut": [[C, 1]], "isolated": [[2, C]], "partitioned": [[[0], [1, 2]]],
                     "holds": [{"api": "AlterPartition", "from": 0, "to": C}]}
    assert LinkFilter.from_rules(rules).to_rules() == rules
    f.hold_message("AlterPartition", 0, C, "a")
    f.hold_message("AlterPartition", 0, C, "b")
    assert f.status()["held"] == 2
    assert f.status()["held_by"] == [{"api": "AlterPartition", "from": 0, "to": C, "count": 2}]
    assert f.apply({"cmd": "release", "api": "AlterPartition"}) == ["a", "b"]


def test_node_of_client_id():
    assert node_of_client_id("broker-0") == 0 and node_of_client_id("broker-12") == 12
    assert node_of_client_id("controller") == C
    for other in ("rdkafka", "kraftlog-cli", "broker-", "broker-01", "broker-x", "broker-²", None):
        assert node_of_client_id(other) is None


# ====================================================================== the driver, without sockets
class _Writer:
    def __init__(self) -> None:
        self.data: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Node:
    """A sans-I/O node that records what it is handed and answers every request at once."""

    def __init__(self, node_id) -> None:
        self.node_id = node_id
        self.got: list = []
        self.outbox: list = []
        self.answer = True

    def deliver(self, now, env) -> None:
        self.got.append((env.correlation_id, type(env.message).__name__, env.is_response))
        if self.answer and not env.is_response:
            self.outbox.append(m.Envelope(env.dst, env.src, env.correlation_id, _Response(env.message.API), True))

    def poll(self):
        out, self.outbox = self.outbox, []
        return out

    def next_deadline(self):
        return None


class _Response:
    def __init__(self, api: str) -> None:
        self.API = api


class _Request:
    def __init__(self, api: str) -> None:
        self.API = api


def _driver(node_id=C) -> tuple[NodeDriver, _Node, list]:
    node = _Node(node_id)
    d = NodeDriver(node, {}, lambda peer: None, lambda text: None, client_id="controller", link_filter=LinkFilter())
    written: list = []
    d._write_response = lambda conn, env, version: written.append((conn.number, env.correlation_id))
    return d, node, written


def _conn(number: int, identity, listener=lst.CONTROLLER) -> Connection:
    return Connection(number, listener, "127.0.0.1:1", _Writer(), ServerConnection({}), queued=deque(),
                      identity=identity)


def _arrive(d: NodeDriver, conn: Connection, *requests: tuple[int, str]) -> None:
    for corr, api in requests:
        conn.queued.append((corr, 0, "x", _Request(api), 0))
    d._pump(conn)
    d._flush()


def test_held_requests_do_not_block_their_connection_and_come_back_in_order():
    d, node, written = _driver()
    conn = _conn(1, 0)
    d.control({"cmd": "hold", "api": "AlterPartition", "from": 0, "to": C})
    _arrive(d, conn, (1, "AlterPartition"), (2, "BrokerHeartbeat"), (3, "AlterPartition"), (4, "BrokerHeartbeat"))
    assert [g[0] for g in node.got] == [2, 4] and written == [(1, 2), (1, 4)]
    answer = d.control({"cmd": "status"})
    assert answer["ok"] and answer["held"] == 2
    answer = d.control({"cmd": "release", "api": "AlterPartition"})
    assert answer["ok"] and answer["released"] == 2 and answer["held"] == 0
    assert [g[0] for g in node.got] == [2, 4, 1, 3] and written[2:] == [(1, 1), (1, 3)]


def test_a_dropped_or_held_response_still_unmutes_the_connection():
    d, node, written = _driver()
    conn = _conn(1, 0)
    d.control({"cmd": "cut", "from": C, "to": 0})  # responses to broker 0 are lost, its requests arrive
    _arrive(d, conn, (1, "BrokerHeartbeat"), (2, "BrokerHeartbeat"))
    assert [g[0] for g in node.got] == [1, 2] and written == [] and conn.inflight is None
    d.control({"cmd": "heal"})
    d.control({"cmd": "hold", "api": "BrokerHeartbeat", "from": C})
    _arrive(d, conn, (3, "BrokerHeartbeat"), (4, "BrokerHeartbeat"))
    assert [g[0] for g in node.got] == [1, 2, 3, 4] and written == []
    assert d.control({"cmd": "release"})["released"] == 2 and written == [(1, 3), (1, 4)]


def test_a_client_connection_is_cut_by_isolate_and_closing_it_forgets_its_held_messages():
    d, node, written = _driver(node_id=0)
    client = _conn(1, CLIENTS, listener=lst.CLIENT)
    d.control({"cmd": "isolate", "nodes": [0]})
    _arrive(d, client, (1, "Produce"))
    assert node.got == []
    d.control({"cmd": "heal"})
    d.control({"cmd": "hold", "api": "Produce"})
    _arrive(d, client, (2, "Produce"))
    assert d.control({"cmd": "status"})["held"] == 1
    d._close(client, None)
    assert d.control({"cmd": "status"})["held"] == 0
    assert d.control({"cmd": "release"})["released"] == 0 and node.got == []


def test_a_node_connection_is_named_by_its_client_id_on_a_node_listener_only():
    d, node, written = _driver(node_id=0)
    internal = _conn(1, CLIENTS, listener=lst.INTERNAL)
    client = _conn(2, CLIENTS, listener=lst.CLIENT)

    class _Event:
        payload = b""

    import kraftlog.net.driver as drv
    real = drv.wire.decode_request_frame
    try:
        drv.wire.decode_request_frame = lambda payload: (1, 0, 7, "broker-1", _Request("Fetch"))
        d._on_request(internal, _Event())
        d._on_request(client, _Event())  # a client calling itself broker-1 on the CLIENT listener
    finally:
        drv.wire.decode_request_frame = real
    assert internal.identity == 1 and client.identity == CLIENTS


def test_control_answers_errors_and_a_driver_without_filter_refuses():
    d, node, written = _driver()
    answer = d.control({"cmd": "isolate", "nodes": "0"})
    assert answer["ok"] is False and "nodes" in answer["error"]
    plain = NodeDriver(_Node(0), {}, lambda peer: None, lambda text: None, client_id="broker-0")
    assert plain.control({"cmd": "status"})["ok"] is False


# ====================================================================== a real chaos-mode cluster
#: Fast failure detection: a broker is fenced 3 s after its last heartbeat, a follower leaves the ISR
#: after 2 s without fetching; a request lost on a cut link times out after 3 s (a follower's Fetch) or
#: 5 s (the others), not Kafka's 30 s.
CHAOS_CONFIG = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500",
                "replica.lag.time.max.ms": "2000", "replica.socket.timeout.ms": "3000",
                "request.timeout.ms": "5000", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def chaos(tmp_path):
    directory = str(tmp_path / "cluster")
    try:
        cl.up(directory, 3, port=0, config=dict(CHAOS_CONFIG), chaos=True)
        yield directory
    finally:
        try:  # SIGKILL by PID: a clean shutdown of an isolated broker would wait for its controlled shutdown
            cl.kill(directory)
        except cl.ClusterError:  # no cluster.json: nothing was started
            pass


def _port(directory: str, broker: int) -> str:
    return f"127.0.0.1:{cl._entry(cl.load(directory), broker)['port']}"


def _admin(directory: str, via: int, msg):
    from kraftlog.net.client import KafkaConnection
    with KafkaConnection(_port(directory, via), timeout_s=5.0) as conn:
        return conn.request(msg)


def _describe(directory: str, topic: str, via: int):
    """Partition 0 of ``topic`` as broker ``via`` describes it; None while that broker does not know it."""
    resp = _admin(directory, via, m.DescribeTopicPartitionsRequest((topic,)))
    t = resp.topics[0] if resp.topics else None
    if t is None or t.error_code != 0 or not t.partitions:
        return None
    return t.partitions[0]


def _isr(directory: str, topic: str, via: int) -> list:
    p = _describe(directory, topic, via)
    return [] if p is None else list(p.isr_nodes)


def _create(directory: str, topic: str) -> tuple[int, list[int]]:
    resp = _admin(directory, 0, m.CreateTopicsRequest((m.CreatableTopic(topic, 1, 3),)))
    assert resp.topics[0].error_code == 0, resp
    p = wait_for("the partition to have a leader and a full ISR", lambda: (
        (q := _describe(directory, topic, 0)) is not None and q.leader_id >= 0 and len(q.isr_nodes) == 3 and q), 15)
    return p.leader_id, list(p.isr_nodes)


def _produce(directory: str, topic: str, count: int) -> None:
    """``count`` records with acks=1 (the leader alone acknowledges: the ISR does not matter)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    bootstrap = ",".join(_port(directory, b) for b in BROKERS)
    errors: list = []
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": 1, "enable.idempotence": False})
    for i in range(count):
        p.produce(topic, value=b"v%d" % i, on_delivery=lambda err, msg: err and errors.append(str(err)))
    assert p.flush(15) == 0 and not errors, errors


def _all_ok(answers: dict, expect: int = 4) -> None:
    assert len(answers) == expect and all(a["ok"] for a in answers.values()), answers


@pytest.mark.slow
def test_isolating_the_leader_moves_leadership_and_heal_brings_it_back_into_the_isr(chaos):
    started = time.monotonic()
    leader, _ = _create(chaos, "iso")
    other = next(b for b in BROKERS if b != leader)
    run = cl._run_file(chaos, leader)
    assert run["chaos"] is True and run["control_port"]
    _all_ok(cl.control_all(chaos, {"cmd": "isolate", "nodes": [leader]}))
    status = cl.control(chaos, leader, {"cmd": "status"})
    assert status["rules"]["isolated"] == [[leader]]
    with open(f"{chaos}/links.json") as f:
        assert json.load(f)["isolated"] == [[leader]]
    moved = wait_for("the controller to move leadership off the isolated broker", lambda: (
        (p := _describe(chaos, "iso", other)) is not None and p.leader_id not in (leader, -1)
        and leader not in p.isr_nodes and p), 20)
    assert moved.leader_epoch > 0
    _all_ok(cl.control_all(chaos, {"cmd": "heal"}))
    wait_for("the isolated broker to rejoin the ISR", lambda: leader in _isr(chaos, "iso", other), 20)
    assert cl.control(chaos, leader, {"cmd": "status"})["rules"] == {
        "cut": [], "isolated": [], "partitioned": [], "holds": []}
    assert time.monotonic() - started < 40


@pytest.mark.slow
def test_a_held_alter_partition_changes_the_isr_only_once_released(chaos):
    started = time.monotonic()
    leader, _ = _create(chaos, "held")
    follower = next(b for b in BROKERS if b != leader)
    _all_ok(cl.control_all(chaos, {"cmd": "hold", "api": "AlterPartition", "from": leader, "to": C}))
    # The follower can no longer fetch from the leader (its heartbeats still reach the controller), and
    # the leader has records it lacks: the leader wants it out of the ISR after replica.lag.time.max.ms,
    # and its AlterPartition is held. (A follower as long as the leader stays in sync, as in Kafka.)
    _all_ok(cl.control_all(chaos, {"cmd": "partition", "groups": [[leader], [follower]]}))
    _produce(chaos, "held", 5)
    held = wait_for("the leader to hold an AlterPartition", lambda: (
        (s := cl.control(chaos, leader, {"cmd": "status"}))["held"] >= 1 and s), 15)
    assert {"api": "AlterPartition", "from": leader, "to": C} == {
        k: held["held_by"][0][k] for k in ("api", "from", "to")}
    time.sleep(1.0)
    assert follower in _isr(chaos, "held", leader)  # the controller has not seen it
    answers = cl.control_all(chaos, {"cmd": "release", "api": "AlterPartition"})
    _all_ok(answers)
    assert sum(a["released"] for a in answers.values()) >= 1
    wait_for("the released AlterPartition to shrink the ISR", lambda: (
        follower not in _isr(chaos, "held", leader)), 10)
    _all_ok(cl.control_all(chaos, {"cmd": "heal"}))
    wait_for("the follower to rejoin the ISR", lambda: follower in _isr(chaos, "held", leader), 15)
    assert time.monotonic() - started < 40


@pytest.mark.slow
def test_pause_resume_kill_and_a_restarted_node_starts_with_the_cluster_rules(chaos):
    started = time.monotonic()
    assert cl.pause(chaos, 2)
    try:
        answers = cl.control_all(chaos, {"cmd": "cut", "from": 2, "to": 1}, timeout_s=1.0)
        assert [n for n, a in answers.items() if not a["ok"]] == [2]  # paused: no answer in time
    finally:
        assert cl.resume(chaos, 2)
    # the command waited in the paused node's socket: applied once it runs again
    wait_for("the resumed node to apply the cut", lambda: cl.control(chaos, 2, {"cmd": "status"})["rules"]["cut"]
          == [[2, 1]], 5)
    pid = cl._entry(cl.load(chaos), 2)["pid"]
    assert cl.kill_node(chaos, 2) and not cl.pid_alive(pid)
    answers = cl.control_all(chaos, {"cmd": "isolate", "nodes": [2]})
    assert sorted(answers, key=str) == [0, 1, C]  # running nodes only
    with pytest.raises(cl.ClusterError):
        cl.control(chaos, 2, {"cmd": "status"})
    cl.start_broker(chaos, 2, wait=False)  # isolated, it cannot register: do not wait for it
    rules = cl.control(chaos, 2, {"cmd": "status"})["rules"]
    assert rules["cut"] == [[2, 1]] and rules["isolated"] == [[2]]
    _all_ok(cl.control_all(chaos, {"cmd": "heal"}))
    cl.wait_ready(chaos, [2], timeout_s=20)
    assert time.monotonic() - started < 40


def _fake_cluster(directory, chaos: bool) -> None:
    from kraftlog.net.node import write_json
    directory.mkdir()
    write_json(str(directory / "cluster.json"), {
        "bootstrap": None, "level": DEFAULT.label, "seed": 1, "cluster_id": "x", "brokers": 1, "config": {},
        "chaos": chaos, "nodes": [{"id": C, "role": "controller", "pid": None, "host": "127.0.0.1", "port": 0,
                                   "internal_port": None},
                                  {"id": 0, "role": "broker", "pid": None, "host": "127.0.0.1", "port": 0,
                                   "internal_port": 0}]})


def test_a_chaos_cluster_is_not_restarted_without_chaos_and_a_plain_one_has_no_control(tmp_path):
    _fake_cluster(tmp_path / "chaos", chaos=True)
    with pytest.raises(cl.ClusterError) as exc:
        cl.up(str(tmp_path / "chaos"), 1, port=0)
    assert exc.value.code == 2 and "--chaos" in str(exc.value)
    _fake_cluster(tmp_path / "plain", chaos=False)
    for call in (lambda: cl.control(str(tmp_path / "plain"), 0, {"cmd": "status"}),
                 lambda: cl.control_all(str(tmp_path / "plain"), {"cmd": "status"})):
        with pytest.raises(cl.ClusterError) as exc:
            call()
        assert exc.value.code == 2 and "chaos" in str(exc.value)
    with pytest.raises(cl.ClusterError) as exc:  # checked before anything is sent or recorded
        cl.control_all(str(tmp_path / "chaos"), {"cmd": "isolate", "nodes": ["nobody"]})
    assert exc.value.code == 2 and not (tmp_path / "chaos" / "links.json").exists()
