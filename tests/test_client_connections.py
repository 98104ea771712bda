"""Client connections as Kafka's ``NetworkClient`` / ``ClusterConnectionStates`` handle them: connection
setup timeout (``socket.connection.setup.timeout.ms`` growing to ``socket.connection.setup.timeout.max.ms``),
reconnect backoff (``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``), ``leastLoadedNode`` skipping
nodes in backoff, ``request.timeout.ms`` once connected; and the ``produce`` step's default timeout
(120 s, Kafka's ``delivery.timeout.ms``, SCENARIOS.md)."""

from __future__ import annotations

from random import Random

import pytest

from kraftlog.client.consumer import Consumer
from kraftlog.client.metadata import ClientMetadata
from kraftlog.client.network import (
    CONNECTING,
    DISCONNECTED,
    READY,
    ClusterConnectionStates,
    ExponentialBackoff,
    NetworkClient,
)
from kraftlog.client.producer import Producer
from kraftlog.protocol import messages as m
from kraftlog.protocol.node import ConnectionSetup
from kraftlog.scenario import parse_scenario
from kraftlog.sim.runner import ScenarioRun, run_scenario

SETUP_MS, SETUP_MAX_MS = 10_000, 30_000  # socket.connection.setup.timeout.ms / .max.ms defaults
BACKOFF_MS, BACKOFF_MAX_MS = 50, 1000  # reconnect.backoff.ms / reconnect.backoff.max.ms defaults
REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms default

CLUSTER = """
name: connections
seed: 1
cluster:
  brokers: 3
  config: {min.insync.replicas: 1}
topics:
  - {name: t, assignment: [[1, 2, 0]]}
steps:
  - {run_for: 1s}
"""


class Probe(NetworkClient):
    """A bare NetworkClient that records how each request ended: (time ms, context, "response"|"failed")."""

    def __init__(self, rng: Random, bootstrap=(0, 1, 2), client_id="probe", **kw) -> None:
        super().__init__(client_id, rng, **kw)
        self.metadata = ClientMetadata(list(bootstrap))
        self.events: list[tuple[int, object, str]] = []

    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)

    def next_deadline(self):
        return self._network_deadline()

    def on_request(self, now_ms, envelope) -> None:
        pass

    def on_response(self, now_ms, context, message) -> None:
        self.events.append((now_ms, context, "response"))

    def on_timeout(self, now_ms, context) -> None:
        self.events.append((now_ms, context, "failed"))


def bootstrapped() -> ScenarioRun:
    """A running 3-broker cluster, t-0 led by broker 1 (replicas [1, 2, 0])."""
    run = ScenarioRun(parse_scenario(CLUSTER))
    assert run.run().exit_code == 0
    return run


def send(sim, client: NetworkClient, dst, context, timeout_ms=REQUEST_TIMEOUT_MS) -> int:
    t = sim.now
    client.send_request(dst, m.MetadataRequest(("t",)), t, timeout_ms, context)
    sim._after(client.node_id, client)
    return t


def record_sends(client, sim, kinds=(m.MetadataRequest,)):
    """Wrap ``client.send_request``: every request of ``kinds`` is recorded as (time ms, destination,
    was the destination in reconnect backoff when it was picked)."""
    sent = []
    original = client.send_request

    def send_request(dst, message, now_ms, timeout_ms, context):
        if isinstance(message, kinds):
            sent.append((now_ms, dst, client.connections.is_blacked_out(dst, now_ms)))
        return original(dst, message, now_ms, timeout_ms, context)

    client.send_request = send_request
    return sent


# ============================================================== connection setup timeout
def test_request_to_isolated_broker_fails_after_connection_setup_timeout_not_request_timeout():
    """Kafka's NetworkClient.handleTimedOutConnections: a connection still CONNECTING after
    socket.connection.setup.timeout.ms (10 s ± 20 % jitter) is closed and the request on it fails —
    well before request.timeout.ms (30 s); the node is then in reconnect backoff
    (reconnect.backoff.ms 50 ± 20 %)."""
    run = bootstrapped()
    sim = run.sim
    sim.isolate([0])  # silently unreachable: the connection setup is lost, nothing is refused
    probe = Probe(Random(1))
    sim.add_client(probe)
    t0 = send(sim, probe, 0, "metadata")
    assert probe.connections.state(0) == CONNECTING
    setup_ms = probe.connections.connection_setup_timeout_ms(0)
    assert SETUP_MS * 0.8 <= setup_ms <= SETUP_MS * 1.2
    sim.run_until(t0 + REQUEST_TIMEOUT_MS + 5000, lambda s: probe.events)
    assert probe.events == [(t0 + setup_ms, "metadata", "failed")]
    assert probe.connections.state(0) == DISCONNECTED
    backoff = probe.connections.reconnect_backoff_ms(0)
    assert BACKOFF_MS * 0.8 <= backoff <= BACKOFF_MS * 1.2
    assert probe.is_unavailable(0, sim.now) and not probe.is_unavailable(0, sim.now + backoff)
    assert probe.least_loaded_node(sim.now) in (1, 2)


def test_request_to_crashed_broker_is_refused_at_once_and_backs_off():
    """A crashed node refuses the connection (Kafka: the connect fails, ClusterConnectionStates.disconnected):
    the request fails after one network delay, not after a timeout, and the node is in reconnect backoff."""
    run = bootstrapped()
    sim = run.sim
    sim.crash(0)
    sim.run_until(sim.now + 10)
    probe = Probe(Random(1))
    sim.add_client(probe)
    t0 = send(sim, probe, 0, "metadata")
    sim.run_until(t0 + 1000, lambda s: probe.events)
    assert probe.events == [(t0 + sim.delay_min, "metadata", "failed")]
    assert probe.is_unavailable(0, sim.now)


def test_connection_setup_reaches_a_live_node_without_disturbing_it():
    """The simulator answers a ConnectionSetup itself (a TCP handshake): the broker never sees it and the
    client's connection is READY one round trip later."""
    run = bootstrapped()
    sim = run.sim
    seen = []
    sim.message_observers[ConnectionSetup] = lambda s, env: seen.append(env)  # never called: not a Kafka message
    probe = Probe(Random(1))
    sim.add_client(probe)
    t0 = send(sim, probe, 1, "metadata")
    sim.run_until(t0 + 100, lambda s: probe.events)
    assert probe.connections.state(1) == READY
    assert [e[1:] for e in probe.events] == [("metadata", "response")]
    assert seen == []


# ============================================================== reconnect backoff and leastLoadedNode
def seed_whose_first_pick_is(node: int, n: int = 3) -> int:
    """A seed whose generator makes least_loaded_node start its scan at ``node`` (its first draw)."""
    return next(s for s in range(1000) if Random(s).randrange(n) == node)


def test_after_a_connection_setup_timeout_the_next_metadata_request_goes_to_another_node():
    """Kafka's leastLoadedNode skips a node in reconnect backoff: a producer whose first Metadata request
    went to an isolated bootstrap broker gives up after the connection setup timeout, asks another broker,
    and its records are acknowledged long before request.timeout.ms would have expired."""
    run = bootstrapped()
    sim = run.sim
    sim.isolate([0])
    prod = Producer("px", [0, 1, 2], 1, Random(seed_whose_first_pick_is(0)))
    sent = record_sends(prod, sim)
    sim.add_client(prod)
    t0 = sim.now
    for i in range(3):
        prod.send("t", 0, f"x{i}".encode(), t0)
    sim._after(prod.node_id, prod)
    setup_ms = prod.connections.connection_setup_timeout_ms(0)
    done = []
    sim.run_until(t0 + REQUEST_TIMEOUT_MS, lambda s: done.extend(prod.take_completions()) or len(done) == 3)
    assert sent[0] == (t0, 0, False)
    # retry.backoff.ms (100) after the failure, to a node that is not in backoff
    assert sent[1][0] == t0 + setup_ms + 100 and sent[1][1] in (1, 2) and not sent[1][2]
    assert [c.error for c in done] == [0, 0, 0]
    assert sim.now < t0 + setup_ms + 1000 < t0 + REQUEST_TIMEOUT_MS


def test_metadata_never_goes_to_a_node_in_backoff_over_many_seeds():
    """The "same dead broker five times in a row" case: over 40 seeded consumers bootstrapped with an
    isolated broker, no Metadata request is ever sent to a node in reconnect backoff while another node
    is available (Kafka's leastLoadedNode), so none asks the isolated broker twice in a row."""
    run = bootstrapped()
    sim = run.sim
    sim.isolate([0])
    clients = []
    for seed in range(40):
        c = Consumer(f"c{seed}", [0, 1, 2], [("t", 0)], "earliest", Random(seed))
        clients.append((c, record_sends(c, sim)))
        sim.add_client(c)
    sim.run_until(sim.now + 60_000)
    first_to_isolated = 0
    for c, sent in clients:
        assert sent, c.node_id
        assert not any(blacked_out for _, _, blacked_out in sent), (c.node_id, sent)
        dsts = [dst for _, dst, _ in sent]
        assert not any(a == b == 0 for a, b in zip(dsts, dsts[1:], strict=False)), (c.node_id, sent)
        first_to_isolated += dsts[0] == 0
        assert c.records or c.state[("t", 0)].position is not None  # every consumer got going
    assert first_to_isolated >= 5  # the isolated broker was really picked first by some seeds


def test_least_loaded_node_prefers_ready_then_connecting_then_oldest_attempt():
    """Kafka's leastLoadedNode order: a READY node with no request in flight, else the READY node with
    the fewest in flight, else a CONNECTING node, else the node that may connect whose last attempt is
    oldest; nodes in reconnect backoff never."""
    probe = Probe(Random(3))
    conns = probe.connections
    # 0 failed at t=100 (backoff ~50 ms), 1 failed at t=10 and its backoff has ended, 2 never tried.
    for node, t in ((0, 100), (1, 10)):
        conns.connecting(node, t)
        conns.disconnected(node, t)
    picks = {probe.least_loaded_node(110) for _ in range(20)}
    assert picks == {2}  # never tried (last attempt 0) beats 1; 0 is in backoff
    probe.send_request(2, m.MetadataRequest(()), 110, 30000, "a")
    assert {probe.least_loaded_node(110) for _ in range(20)} == {2}  # CONNECTING beats can-connect
    conns.ready(2)
    probe.send_request(1, m.MetadataRequest(()), 200, 30000, "b")
    conns.ready(1)
    probe.send_request(1, m.MetadataRequest(()), 200, 30000, "c")
    assert {probe.least_loaded_node(200) for _ in range(20)} == {2}  # 1 in flight < 2 in flight
    probe._inflight.clear()
    assert {probe.least_loaded_node(200) for _ in range(40)} == {1, 2}  # random start among equals
    conns.disconnected(1, 300)
    conns.disconnected(2, 300)
    conns.connecting(0, 300)
    conns.disconnected(0, 300)
    assert probe.least_loaded_node(301) is None  # every node in backoff
    assert probe._wake_ms == min(conns.reconnect_at(n) for n in (0, 1, 2)) > 301


# ============================================================== exponential growth
def test_connection_setup_timeout_and_reconnect_backoff_grow_exponentially_to_their_max():
    """Kafka's ClusterConnectionStates with ExponentialBackoff (base 2, jitter ±20 %): after n failed
    setups the setup timeout is 10 s × 2^n, at most socket.connection.setup.timeout.max.ms (30 s); the
    reconnect backoff after the n-th failure is 50 ms × 2^(n-1), at most reconnect.backoff.max.ms
    (1 s); both reset once a connection is established."""
    for seed in range(20):
        conns = ClusterConnectionStates(Random(seed))
        t = 0
        setups, backoffs = [], []
        for _ in range(8):
            conns.connecting(0, t)
            setups.append(conns.connection_setup_timeout_ms(0))
            t += setups[-1]
            conns.disconnected(0, t)
            backoffs.append(conns.reconnect_backoff_ms(0))
            t += backoffs[-1]
        for n, ms in enumerate(setups):
            base = min(SETUP_MS * 2 ** n, SETUP_MAX_MS)
            assert base * 0.8 <= ms <= min(base * 1.2, SETUP_MAX_MS), (n, ms)
        for n, ms in enumerate(backoffs):
            base = min(BACKOFF_MS * 2 ** n, BACKOFF_MAX_MS)
            assert base * 0.8 <= ms <= min(base * 1.2, BACKOFF_MAX_MS), (n, ms)
        assert max(setups) <= SETUP_MAX_MS and setups[2] >= SETUP_MAX_MS * 0.8
        conns.connecting(0, t)
        conns.ready(0)
        assert SETUP_MS * 0.8 <= conns.connection_setup_timeout_ms(0) <= SETUP_MS * 1.2
        conns.disconnected(0, t)
        assert BACKOFF_MS * 0.8 <= conns.reconnect_backoff_ms(0) <= BACKOFF_MS * 1.2


def test_exponential_backoff_without_room_to_grow_has_no_jitter():
    """Kafka's ExponentialBackoff: max <= initial gives the initial value, without jitter."""
    rng = Random(0)
    assert {ExponentialBackoff(50, 2, 50, 0.2).backoff(n, rng) for n in range(5)} == {50}
    assert rng.random() == Random(0).random()  # nothing drawn


def test_client_gives_up_on_an_isolated_node_after_10_then_20_then_30_seconds():
    """A client that keeps asking an isolated broker: its attempts end after the growing connection setup
    timeout (~10 s, ~20 s, then capped at socket.connection.setup.timeout.max.ms 30 s), each after a
    reconnect backoff."""
    run = bootstrapped()
    sim = run.sim
    sim.isolate([0])
    probe = Probe(Random(5), bootstrap=(0,))
    sim.add_client(probe)
    starts, ends = [], []
    for _ in range(4):
        sim.run_until(sim.now + 2000, lambda s: probe.connections.can_connect(0, s.now))
        starts.append(send(sim, probe, 0, "metadata", timeout_ms=60_000))
        sim.run_until(sim.now + 60_000, lambda s: len(probe.events) == len(starts))
        ends.append(probe.events[-1][0])
    took = [e - s for s, e in zip(starts, ends, strict=True)]
    assert SETUP_MS * 0.8 <= took[0] <= SETUP_MS * 1.2
    assert 2 * SETUP_MS * 0.8 <= took[1] <= 2 * SETUP_MS * 1.2
    assert all(SETUP_MAX_MS * 0.8 <= x <= SETUP_MAX_MS for x in took[2:])
    assert all(e[2] == "failed" for e in probe.events)


# ============================================================== once connected
def test_once_connected_request_timeout_applies_and_the_timeout_closes_the_connection():
    """Kafka's NetworkClient.handleTimedOutRequests: on an established connection a request fails after
    request.timeout.ms (30 s), not the connection setup timeout, and the connection is closed (the node
    goes into reconnect backoff, every other request in flight to it fails too)."""
    run = bootstrapped()
    sim = run.sim
    probe = Probe(Random(2))
    sim.add_client(probe)
    t0 = send(sim, probe, 0, "first")
    sim.run_until(t0 + 100, lambda s: probe.events)
    assert probe.connections.state(0) == READY
    sim.isolate([0])
    t1 = send(sim, probe, 0, "second")
    send(sim, probe, 0, "third", timeout_ms=60_000)
    sim.run_until(t1 + 70_000, lambda s: len(probe.events) == 3)
    assert probe.events[1:] == [(t1 + REQUEST_TIMEOUT_MS, "second", "failed"),
                                (t1 + REQUEST_TIMEOUT_MS, "third", "failed")]
    assert probe.connections.state(0) == DISCONNECTED and probe.is_unavailable(0, sim.now)


def test_first_request_held_by_a_reachable_node_gets_request_timeout_not_setup_timeout():
    """A node that accepted the connection but holds the first request (here: the network holds every
    Metadata request) is connected: the request fails after request.timeout.ms, not after
    socket.connection.setup.timeout.ms (the setup timeout only covers establishing the connection)."""
    run = bootstrapped()
    sim = run.sim
    probe = Probe(Random(2))
    sim.add_client(probe)
    sim.hold(api="Metadata", src="probe", dst=1)
    t0 = send(sim, probe, 1, "held")
    sim.run_until(t0 + 40_000, lambda s: probe.events)
    assert probe.events == [(t0 + REQUEST_TIMEOUT_MS, "held", "failed")]


# ============================================================== produce step default timeout
def test_produce_step_default_timeout_is_delivery_timeout_120s():
    """SCENARIOS.md: `produce` retries until `timeout`, default 120 s (Kafka's delivery.timeout.ms).
    The leader is isolated and the controller only fences it after broker.session.timeout.ms (45 s here):
    the records wait more than 30 s for a leader and are still acknowledged."""
    text = """
name: produce-waits-for-a-leader
seed: 3
cluster:
  brokers: 3
  config: {min.insync.replicas: 2, broker.session.timeout.ms: 45000}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {isolate: {nodes: [0]}}
  - {produce: {topic: t, count: 3}}
  - {expect: {partition: t-0, leader: 1}}
until: 150s
"""
    scenario = parse_scenario(text)
    assert scenario.steps[1].args["timeout_ms"] == 120_000
    result = run_scenario(scenario)
    assert result.exit_code == 0, result.verdict["failed_expectations"]
    assert result.verdict["acked"]["all"] == 3 and result.verdict["lost_acked"] == 0
    started = int(next(x for x in result.timeline if "step 1 (isolate)" in x).split("ms")[0])
    done = next(x for x in result.timeline if "step 2 (produce)" in x)
    assert "3/3 records acknowledged" in done
    assert 30_000 < int(done.split("ms")[0]) - started < 120_000


@pytest.mark.parametrize("seed", [1, 2])
def test_same_seed_same_history_with_connection_failures(seed):
    """Determinism: backoff jitter and least-loaded starts come from the clients' seeded generators."""
    text = CLUSTER.replace("  - {run_for: 1s}", """  - {isolate: {nodes: [0]}}
  - {produce: {topic: t, count: 5, acks: 1}}
  - {run_for: 20s}""")
    digests = {run_scenario(parse_scenario(text), seed=seed).verdict["history_digest"] for _ in range(2)}
    assert len(digests) == 1
