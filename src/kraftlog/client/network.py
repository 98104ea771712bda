"""Connections of a sans-I/O client (Kafka's ``NetworkClient`` and ``ClusterConnectionStates``).

A client keeps one connection per node, in one of three states (Kafka's ``ConnectionState``, without
the TLS/SASL and ApiVersions steps, which the simulation has no use for):

* ``DISCONNECTED``: never connected, or closed. After a failure the node is *blacked out* for its
  reconnect backoff: no request goes to it and ``least_loaded_node`` skips it.
* ``CONNECTING``: a :class:`~kraftlog.protocol.node.ConnectionSetup` was sent; requests already queued
  for the node follow it on the same link. If the node has not answered the setup (or any request)
  within the node's connection setup timeout, the attempt is abandoned: every request in flight to it
  fails and it is blacked out (Kafka's ``NetworkClient.handleTimedOutConnections``). A silently
  unreachable (isolated) node is therefore given up after ``socket.connection.setup.timeout.ms``,
  not ``request.timeout.ms``; a crashed node refuses at once.
* ``READY``: the node answered. Requests time out after ``request.timeout.ms``; a request timeout
  closes the connection like any other disconnect (Kafka's ``handleTimedOutRequests``).

Every disconnect (refused, reset, setup timeout, request timeout) fails every request in flight to
the node through ``on_timeout`` (Kafka's ``cancelInFlightRequests``), puts the node in reconnect
backoff and asks for a metadata refresh (Kafka's ``handleServerDisconnect``).

Backoffs and setup timeouts grow as Kafka's ``ExponentialBackoff`` (base 2, jitter ±20 %), drawn
from the client's injected, seeded ``random.Random``:

* reconnect backoff after the n-th consecutive failure (n >= 1): ``reconnect.backoff.ms`` (50) ×
  2^(n-1) ± 20 %, at most ``reconnect.backoff.max.ms`` (1000); reset when a connection is established;
* connection setup timeout after n consecutive failed setups: ``socket.connection.setup.timeout.ms``
  (10000) × 2^n ± 20 %, at most ``socket.connection.setup.timeout.max.ms`` (30000); reset when a
  connection is established or an established one closes.

Where kraftlog differs from Kafka, on purpose: a request for a CONNECTING node is queued behind the
connection setup on the same link instead of waiting in the client until the node is READY (the
simulated link is FIFO, so the node sees the setup first; a request the broker holds for long, e.g. an
acks=all Produce, is therefore on an established connection and gets ``request.timeout.ms``, as in
Kafka). There is no ApiVersions exchange, no ``max.in.flight.requests.per.connection`` limit in
``least_loaded_node``, and no metadata rebootstrap (``metadata.recovery.strategy``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from random import Random
from typing import cast

from ..protocol.messages import Envelope
from ..protocol.node import CONNECTION_SETUP, Address, C, Message, NodeBase, earliest
from .metadata import ClientMetadata

#: Connection states (Kafka's ``ConnectionState``: DISCONNECTED, CONNECTING, READY).
DISCONNECTED, CONNECTING, READY = 0, 1, 2
STATE_NAMES = {DISCONNECTED: "DISCONNECTED", CONNECTING: "CONNECTING", READY: "READY"}

#: Kafka's ``ClusterConnectionStates.RECONNECT_BACKOFF_EXP_BASE`` / ``RECONNECT_BACKOFF_JITTER``.
RECONNECT_BACKOFF_EXP_BASE, RECONNECT_BACKOFF_JITTER = 2, 0.2
#: Kafka's ``CONNECTION_SETUP_TIMEOUT_EXP_BASE`` / ``CONNECTION_SETUP_TIMEOUT_JITTER``.
CONNECTION_SETUP_TIMEOUT_EXP_BASE, CONNECTION_SETUP_TIMEOUT_JITTER = 2, 0.2

#: Client defaults (Kafka's ``CommonClientConfigs`` / ``ProducerConfig`` / ``ConsumerConfig``), ms.
DEFAULT_RECONNECT_BACKOFF_MS = 50
DEFAULT_RECONNECT_BACKOFF_MAX_MS = 1000
DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MS = 10_000
DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS = 30_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000

#: The context under which a connection setup waits in ``NodeBase._inflight`` (never shown to subclasses).
SETUP_CONTEXT: tuple[str] = ("connection-setup",)


class ExponentialBackoff:
    """Kafka's ``org.apache.kafka.common.utils.ExponentialBackoff``: ``backoff(n)`` =
    ``initial_ms`` × ``multiplier``^min(n, exp_max) × a jitter factor drawn uniformly from
    [1 - jitter, 1 + jitter), truncated to an int and capped at ``max_ms`` (ms). When ``max_ms`` <=
    ``initial_ms`` it is always ``initial_ms``, with no jitter (and no draw)."""

    def __init__(self, initial_ms: int, multiplier: int, max_ms: int, jitter: float) -> None:
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, but got {jitter}")
        self.initial_ms = min(max_ms, initial_ms)
        self.multiplier = multiplier
        self.max_ms = max_ms
        self.jitter = jitter
        self.exp_max = (math.log(max_ms / max(initial_ms, 1)) / math.log(multiplier)
                        if max_ms > initial_ms else 0.0)

    def backoff(self, attempts: int, rng: Random) -> int:
        """The interval (ms) after ``attempts`` failures; one draw from ``rng`` unless there is no jitter."""
        if self.exp_max == 0:
            return self.initial_ms
        term = self.initial_ms * self.multiplier ** min(attempts, self.exp_max)
        factor = rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(int(factor * term), self.max_ms)


@dataclass(slots=True)
class NodeConnectionState:
    """One node's connection (Kafka's ``ClusterConnectionStates.NodeConnectionState``); times in ms."""

    state: int
    last_connect_attempt_ms: int
    reconnect_backoff_ms: int
    connection_setup_timeout_ms: int
    failed_attempts: int = 0
    failed_connect_attempts: int = 0


class ClusterConnectionStates:
    """Per-node connection states, reconnect backoff and connection setup timeout, as Kafka's
    ``ClusterConnectionStates`` keeps them; ``rng`` draws the jitter. Node ids are ints or strings."""

    def __init__(self, rng: Random, *, reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS,
                 reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS,
                 connection_setup_timeout_ms: int = DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
                 connection_setup_timeout_max_ms: int = DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS) -> None:
        self.rng = rng
        self.reconnect_backoff = ExponentialBackoff(reconnect_backoff_ms, RECONNECT_BACKOFF_EXP_BASE,
                                                    reconnect_backoff_max_ms, RECONNECT_BACKOFF_JITTER)
        self.connection_setup_timeout = ExponentialBackoff(
            connection_setup_timeout_ms, CONNECTION_SETUP_TIMEOUT_EXP_BASE, connection_setup_timeout_max_ms,
            CONNECTION_SETUP_TIMEOUT_JITTER)
        self.nodes: dict[object, NodeConnectionState] = {}
        #: nodes in CONNECTING -> the ms at which their connection setup times out
        self.setup_deadlines: dict[object, int] = {}

    # ---------------------------------------------------------------- queries
    def state(self, node: object) -> int:
        st = self.nodes.get(node)
        return DISCONNECTED if st is None else st.state

    def can_connect(self, node: object, now_ms: int) -> bool:
        """Not connected, and the reconnect backoff since the last attempt has passed (Kafka's ``canConnect``)."""
        st = self.nodes.get(node)
        return st is None or (st.state == DISCONNECTED
                              and now_ms - st.last_connect_attempt_ms >= st.reconnect_backoff_ms)

    def is_blacked_out(self, node: object, now_ms: int) -> bool:
        """Disconnected and still in reconnect backoff (Kafka's ``isBlackedOut``)."""
        st = self.nodes.get(node)
        return (st is not None and st.state == DISCONNECTED
                and now_ms - st.last_connect_attempt_ms < st.reconnect_backoff_ms)

    def reconnect_at(self, node: object) -> int:
        """When (ms) a new connection to ``node`` may be attempted (0: at any time)."""
        st = self.nodes.get(node)
        if st is None or st.state != DISCONNECTED:
            return 0
        return st.last_connect_attempt_ms + st.reconnect_backoff_ms

    def last_connect_attempt_ms(self, node: object) -> int:
        st = self.nodes.get(node)
        return 0 if st is None else st.last_connect_attempt_ms

    def connection_setup_timeout_ms(self, node: object) -> int:
        """The setup timeout (ms) the node's current or next connection attempt gets."""
        st = self.nodes.get(node)
        return self.connection_setup_timeout.initial_ms if st is None else st.connection_setup_timeout_ms

    def reconnect_backoff_ms(self, node: object) -> int:
        st = self.nodes.get(node)
        return 0 if st is None else st.reconnect_backoff_ms

    def timed_out_setups(self, now_ms: int) -> list[object]:
        """CONNECTING nodes whose setup deadline is <= ``now_ms``, in (deadline, node) order."""
        return sorted((n for n, d in self.setup_deadlines.items() if d <= now_ms),
                      key=lambda n: (self.setup_deadlines[n], str(n)))

    # ---------------------------------------------------------------- transitions
    def connecting(self, node: object, now_ms: int) -> None:
        """A connection attempt starts now (Kafka's ``connecting``): a node seen for the first time gets
        the base reconnect backoff and setup timeout (two draws), a known one keeps its current ones."""
        st = self.nodes.get(node)
        if st is None:
            backoff = self.reconnect_backoff.backoff(0, self.rng)
            st = self.nodes[node] = NodeConnectionState(
                CONNECTING, now_ms, backoff, self.connection_setup_timeout.backoff(0, self.rng))
        else:
            assert st.state == DISCONNECTED, f"connecting to {node} in state {STATE_NAMES[st.state]}"
            st.state = CONNECTING
            st.last_connect_attempt_ms = now_ms
        self.setup_deadlines[node] = now_ms + st.connection_setup_timeout_ms

    def ready(self, node: object) -> None:
        """The node answered: the connection is established (Kafka's ``ready``); reconnect backoff and
        setup timeout go back to their base values."""
        st = self.nodes[node]
        st.state = READY
        st.failed_attempts = 0
        st.reconnect_backoff_ms = self.reconnect_backoff.backoff(0, self.rng)
        st.failed_connect_attempts = 0
        st.connection_setup_timeout_ms = self.connection_setup_timeout.backoff(0, self.rng)
        self.setup_deadlines.pop(node, None)

    def disconnected(self, node: object, now_ms: int) -> None:
        """The connection closed or the attempt failed (Kafka's ``disconnected``): the reconnect backoff
        grows with each consecutive failure; a failed setup also grows the setup timeout, the close of
        an established connection resets it."""
        st = self.nodes[node]
        st.last_connect_attempt_ms = now_ms
        st.reconnect_backoff_ms = self.reconnect_backoff.backoff(st.failed_attempts, self.rng)
        st.failed_attempts += 1
        if st.state == CONNECTING:
            st.failed_connect_attempts += 1
            st.connection_setup_timeout_ms = self.connection_setup_timeout.backoff(st.failed_connect_attempts,
                                                                                   self.rng)
            del self.setup_deadlines[node]
        else:
            st.failed_connect_attempts = 0
            st.connection_setup_timeout_ms = self.connection_setup_timeout.backoff(0, self.rng)
        st.state = DISCONNECTED


class NetworkClient(NodeBase[C]):
    """A client node with Kafka's connection handling (see the module docstring); times in ms.

    Configs (Kafka's names and defaults): ``request_timeout_ms`` (``request.timeout.ms``, 30000),
    ``reconnect_backoff_ms`` (``reconnect.backoff.ms``, 50), ``reconnect_backoff_max_ms``
    (``reconnect.backoff.max.ms``, 1000), ``socket_connection_setup_timeout_ms``
    (``socket.connection.setup.timeout.ms``, 10000), ``socket_connection_setup_timeout_max_ms``
    (``socket.connection.setup.timeout.max.ms``, 30000). ``rng`` draws the backoff jitter and the
    random start of ``least_loaded_node``.

    Subclasses send with ``send_request`` (which opens the connection when needed) only to a node for
    which ``is_unavailable`` is False, call ``_expire_requests`` in ``tick`` and take
    ``_network_deadline()`` into ``next_deadline``; ``metadata`` (a ClientMetadata, optional) lists
    the nodes and is marked stale on every disconnect."""

    def __init__(self, client_id: str, rng: Random, *, request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
                 reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS,
                 reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS,
                 socket_connection_setup_timeout_ms: int = DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
                 socket_connection_setup_timeout_max_ms: int = DEFAULT_SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS) -> None:
        super().__init__(client_id)
        self.rng = rng
        self.request_timeout_ms = request_timeout_ms
        self.connections = ClusterConnectionStates(
            rng, reconnect_backoff_ms=reconnect_backoff_ms, reconnect_backoff_max_ms=reconnect_backoff_max_ms,
            connection_setup_timeout_ms=socket_connection_setup_timeout_ms,
            connection_setup_timeout_max_ms=socket_connection_setup_timeout_max_ms)
        self.metadata: ClientMetadata | None = None
        self._setup_ids = 0  # connection setups are numbered -1, -2, ... (apart from Kafka's correlation ids)
        #: the earliest end (ms) of a reconnect backoff that kept the last work pass from sending
        self._wake_ms: int | None = None

    # ---------------------------------------------------------------- connections
    def is_unavailable(self, node: object, now_ms: int) -> bool:
        """True while ``node`` is in reconnect backoff (Kafka's ``NetworkClientUtils.isUnavailable``):
        nothing may be sent to it, and the client wakes when the backoff ends."""
        st = self.connections.nodes.get(node)
        if st is None or st.state != DISCONNECTED:  # the common case first: connected or connecting
            return False
        wake = st.last_connect_attempt_ms + st.reconnect_backoff_ms
        if now_ms >= wake:
            return False
        if self._wake_ms is None or wake < self._wake_ms:
            self._wake_ms = wake
        return True

    def _note_wake(self, t: int) -> None:
        if self._wake_ms is None or t < self._wake_ms:
            self._wake_ms = t

    def least_loaded_node(self, now_ms: int) -> int | None:
        """The node to send a Metadata (or InitProducerId, FindCoordinator) request to, or None when every
        node is in reconnect backoff (the client then wakes when the first backoff ends).

        Kafka's ``NetworkClient.leastLoadedNode``: scanning the known nodes from a random offset, a
        READY node with no request in flight is taken at once; otherwise the READY node with the fewest
        in flight, else a CONNECTING node, else the node that may connect whose last attempt is
        oldest; nodes in reconnect backoff are skipped."""
        nodes = self.metadata.nodes() if self.metadata is not None else []
        if not nodes:
            return None
        inflight: dict[object, int] = {}
        for context, dst in self._inflight.values():
            if context is not SETUP_CONTEXT:
                inflight[dst] = inflight.get(dst, 0) + 1
        conns = self.connections
        fewest: int | None = None
        found_ready: int | None = None
        found_connecting: int | None = None
        found_can_connect: int | None = None
        n = len(nodes)
        offset = self.rng.randrange(n)
        for i in range(n):
            node = nodes[(offset + i) % n]
            state = conns.state(node)
            if state == READY:
                count = inflight.get(node, 0)
                if count == 0:
                    return node
                if fewest is None or count < fewest:
                    fewest, found_ready = count, node
            elif state == CONNECTING:
                found_connecting = node
            elif conns.can_connect(node, now_ms):
                if found_can_connect is None or (conns.last_connect_attempt_ms(found_can_connect)
                                                 > conns.last_connect_attempt_ms(node)):
                    found_can_connect = node
        for found in (found_ready, found_connecting, found_can_connect):
            if found is not None:
                return found
        self._note_wake(self.reconnect_at_earliest())
        return None

    def _metadata_node(self, now_ms: int) -> int | None:
        """``least_loaded_node`` for a metadata refresh; when none is available the refresh waits for
        the first reconnect backoff to end (Kafka's ``maybeUpdate`` then waits ``reconnect.backoff.ms``)."""
        node = self.least_loaded_node(now_ms)
        if node is None and self.metadata is not None:
            self.metadata.next_refresh_ms = max(self.metadata.next_refresh_ms, self.reconnect_at_earliest())
        return node

    def reconnect_at_earliest(self) -> int:
        """When (ms) the first of the known nodes leaves reconnect backoff (0 when one already has)."""
        nodes = self.metadata.nodes() if self.metadata is not None else []
        return min((self.connections.reconnect_at(node) for node in nodes), default=0)

    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int, context: C) -> int:
        """Queue ``message`` for ``dst`` (see NodeBase), opening the connection first if there is none
        (Kafka's ``initiateConnect``); ``dst`` must not be in reconnect backoff."""
        st = self.connections.nodes.get(dst)
        if st is None or st.state == DISCONNECTED:
            self._connect(dst, now_ms)
        return NodeBase.send_request(self, dst, message, now_ms, timeout_ms, context)

    def send_without_response(self, dst: Address, message: Message, now_ms: int) -> None:
        """Queue a request that gets no response (Produce with acks=0), opening the connection first
        if there is none; ``dst`` must not be in reconnect backoff."""
        st = self.connections.nodes.get(dst)
        if st is None or st.state == DISCONNECTED:
            self._connect(dst, now_ms)
        self._outbox.append(Envelope(self.node_id, dst, 0, message, False))

    def _connect(self, dst: object, now_ms: int) -> None:
        assert self.connections.can_connect(dst, now_ms), f"{self.node_id}: {dst} is in reconnect backoff"
        self.connections.connecting(dst, now_ms)
        self._setup_ids -= 1
        corr = self._setup_ids
        # a marker context: deliver() and the failure paths recognise it and never hand it to a subclass
        self._inflight[corr] = (cast(C, SETUP_CONTEXT), dst)
        self._outbox.append(Envelope(self.node_id, dst, corr, CONNECTION_SETUP, False))

    def _disconnect(self, now_ms: int, node: object) -> None:
        """Close the connection to ``node`` (Kafka's ``processDisconnection``): reconnect backoff, a
        metadata refresh, and every request in flight to it failed through ``on_timeout``, in
        correlation-id order."""
        if node in self.connections.nodes:
            self.connections.disconnected(node, now_ms)
        if self.metadata is not None:
            self.metadata.stale = True
        inflight = self._inflight
        for corr in sorted([c for c, (_, d) in inflight.items() if d == node]):
            entry = inflight.pop(corr, None)
            if entry is not None and entry[0] is not SETUP_CONTEXT:
                self.on_timeout(now_ms, entry[0])

    # ---------------------------------------------------------------- NodeBase overrides
    def deliver(self, now_ms: int, envelope: Envelope) -> None:
        """A response (or the driver's connection-setup reply) marks its node connected."""
        if not envelope.is_response:
            self.on_request(now_ms, envelope)
            return
        entry = self._inflight.pop(envelope.correlation_id, None)
        if entry is None:
            return
        context, node = entry
        st = self.connections.nodes.get(node)
        if st is not None and st.state != READY:
            self.connections.ready(node)
        if context is not SETUP_CONTEXT:
            self.on_response(now_ms, context, envelope.message)

    def connection_failed(self, now_ms: int, correlation_id: int) -> None:
        """The driver could not deliver ``correlation_id`` (connection refused): the node is disconnected."""
        entry = self._inflight.get(correlation_id)
        if entry is not None:
            self._disconnect(now_ms, entry[1])

    def peer_disconnected(self, now_ms: int, peer: object) -> None:
        """The connection to ``peer`` was reset (its process died): disconnect, if there was one."""
        if self.connections.state(peer) != DISCONNECTED:
            self._disconnect(now_ms, peer)

    def _expire_requests(self, now_ms: int) -> None:
        """Connection setups past their timeout, then requests past theirs, each close their node's
        connection (Kafka's ``handleTimedOutConnections`` then ``handleTimedOutRequests``)."""
        if self.connections.setup_deadlines:
            for node in self.connections.timed_out_setups(now_ms):
                self._disconnect(now_ms, node)
        while True:
            deadline = self._request_deadline()
            if deadline is None or deadline > now_ms:
                return
            due = min((fifo for fifo in self._timeouts.values() if fifo), key=lambda fifo: fifo[0])
            self._disconnect(now_ms, self._inflight[due[0][1]][1])

    def _network_deadline(self) -> int | None:
        """The earliest request timeout, connection setup timeout or end of a reconnect backoff that
        the last work pass waited for (ms)."""
        d = self._request_deadline()
        setups = self.connections.setup_deadlines
        if setups:
            d = earliest(d, min(setups.values()))
        wake = self._wake_ms
        if wake is not None and (d is None or wake < d):
            d = wake
        return d
