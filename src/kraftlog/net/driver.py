"""The asyncio TCP driver: one sans-I/O node (broker or controller) on real sockets.

The same node objects the simulator drives run here, through the same contract (``deliver``, ``tick``,
``poll``, ``next_deadline``, ``connection_failed``, ``peer_disconnected``); this module only moves bytes
and time. No protocol rule lives here: framing and ApiVersions are :mod:`kraftlog.protocol.framing`,
messages are :mod:`kraftlog.protocol.wire`, authorization per listener is the node's
(:mod:`kraftlog.protocol.listeners`).

* **Listeners.** One asyncio server per listener (``CLIENT``/``INTERNAL`` on a broker, ``CONTROLLER``
  on the controller). Each connection has a :class:`~kraftlog.protocol.framing.ServerConnection`; a
  decoded request becomes an :class:`~kraftlog.protocol.messages.Envelope` whose ``src`` is the
  connection, with the listener, client id and API version the client sent.
* **One request at a time per connection**, as Kafka's SocketServer mutes a channel until the response
  to its current request is sent: responses leave in request order (kafka-python requires it), while
  the node may still park a request (a long-polled Fetch, an acks=all Produce). A Produce with acks=0
  gets no response and unmutes the connection at once (Kafka's ``sendNoOpResponse``). No request is
  handed to the node until the response before it has been written whole to the socket (the
  transport's write buffer is empty again), and the connection is not read while a response waits in
  that buffer or a complete request waits behind the one in flight. Per connection: one request in
  flight, what one read completed queued behind it, one response in memory; a client that pipelines
  requests and never reads holds that and what its socket buffers take, and stalls only itself.
  (Kafka stops reading a channel from the moment a request is complete until its response is sent;
  kraftlog goes on reading the next request while one is in flight, so that receiving it overlaps
  the wait for replication.)
* **Bounds** (:class:`~kraftlog.net.listener_limits.ListenerLimits`, from the node's config; kraftlog's
  defaults are bounded where Kafka's are not): ``socket.request.max.bytes`` per request;
  ``queued.max.request.bytes`` across connections (:class:`~kraftlog.net.listener_limits.RequestMemory`: a
  large request's buffer grows as its bytes arrive and each step is charged first; a connection whose step
  does not fit is not read until it does);
  ``max.connections`` / ``max.connections.per.ip`` per listener (one over is closed at once);
  ``connections.max.idle.ms``; ``kraftlog.request.receive.timeout.ms`` for a begun request. What the
  listeners refused and closed is counted (:meth:`NodeDriver.listener_stats`) and logged once a check.
* **Bad input.** A frame the framing refuses, or a body the wire layer cannot decode, closes that
  connection (Kafka's InvalidRequestException) and is logged once; the node never sees it.
* **Peers.** Requests the node sends to another node go over one outbound connection per peer: the
  controller at its configured address, broker ``b`` at the ``INTERNAL`` endpoint of its registration
  in the node's metadata image (Kafka resolves inter-broker endpoints the same way). A refused connection
  fails the request at once (``connection_failed``); a connection that drops fails every request in
  flight on it (``peer_disconnected``), as Kafka's NetworkClient does.
* **I/O.** Connections are asyncio buffered protocols: the socket reads into the buffers the framing
  gives (:meth:`~kraftlog.protocol.framing.ServerConnection.get_buffer`; a frame larger than 64 KiB,
  e.g. a produce request or a fetch response with records, straight into a buffer of its own that
  grows as the bytes arrive),
  with no stream reader in between and no task per connection; a Fetch response goes out as
  a list of buffers (``transport.writelines``: one ``writev``) whose record batches are the bytes read
  from the log, not copied into one response buffer (:func:`~kraftlog.protocol.wire.frame_response`).
* **Time.** ``now_ms`` is wall-clock ms that never goes backwards (the wall clock at start plus the
  monotonic clock since), handed to the node as the simulator hands it virtual time.
* **Link faults (chaos mode).** With a :class:`~kraftlog.net.link_filter.LinkFilter` (``link_filter=``),
  every message crossing this node's edge is judged by the simulator's rules: the rules and where they
  apply in :mod:`kraftlog.net.link_filter`, the control channel that changes them in
  :mod:`kraftlog.net.control`.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
import traceback
from collections.abc import Callable

from ..metrics import Histogram
from ..protocol import listeners as lst
from ..protocol import messages as m
from ..protocol import wire
from ..protocol.framing import Authenticated, Close, Reply, Request, ServerConnection
from ..protocol.node import CONNECTION_SETUP, ConnectionSetup
from ..protocol.sasl import ANONYMOUS, SaslClientSession, SaslConfig
from .clock import Clock, Wake
from .connections import DEFAULT_CHANNEL, Connection, ListenerProtocol, Peer, PeerProtocol, channel_of
from .control import ControlChannel
from .link_filter import CLIENTS, DROP, HOLD, PASS, LinkFilter, api_name, node_of_client_id
from .listener_limits import ListenerLimits, RequestMemory
from .listener_security import PeerSecurity, principal_of_certificate

__all__ = ["Clock", "NodeDriver"]

#: How long (ms) an outbound connection attempt may take (Kafka's socket.connection.setup.timeout.ms).
CONNECT_TIMEOUT_MS = 10_000


class NodeDriver:
    """Drives ``node`` over TCP. ``listeners``: name -> bound listening socket; ``address_of(peer)``:
    (host, port) or (host, port, listener role) of a peer node, None when unknown yet (``peer_security``: role ->
    how this node authenticates there: TLS, then SASL, before any request goes out); ``log(text)``: one line to
    the node's log; ``client_id``: the client id of the node's own requests; ``after_event``: called after every event
    (the process entry point writes its status file from it); ``link_filter``: chaos mode's
    :class:`~kraftlog.net.link_filter.LinkFilter` (None: every message passes, no rule is ever looked at).

    Chaos mode, where the filter applies (every message crossing this node's edge) and what a drop or a
    hold does to connections and ordering: :mod:`kraftlog.net.link_filter`."""

    def __init__(self, node, listeners: dict, address_of: Callable[[object], tuple | None],
                 log: Callable[[str], None], client_id: str, clock: Clock | None = None,
                 max_request_bytes: int | None = None, link_filter: LinkFilter | None = None,
                 control_handlers: dict[str, Callable[[dict], dict]] | None = None,
                 limits: ListenerLimits | None = None, sasl: dict[str, SaslConfig] | None = None,
                 tls: dict[str, ssl.SSLContext] | None = None,
                 peer_security: dict[str, PeerSecurity] | None = None) -> None:
        self.node = node
        self.listeners = listeners
        #: listener role -> its SASL settings (a ``SASL_PLAINTEXT`` listener); the others are PLAINTEXT
        self.sasl = dict(sasl or {})
        #: listener role -> [successful, failed] SASL authentications (Kafka's socket-server-metrics
        #: ``successful-authentication-total`` and ``failed-authentication-total``)
        self.authentications: dict[str, list[int]] = {name: [0, 0] for name in self.sasl}
        #: listener role -> its server TLS context (an ``SSL`` or ``SASL_SSL`` listener: asyncio's TLS transport,
        #: OpenSSL over memory BIOs, hands the framing the plaintext)
        self.tls = dict(tls or {})
        #: listener role -> (how this node connects to the other nodes' listener of that role, its client TLS
        #: context or None): ``address_of`` names the role; a role not here is PLAINTEXT
        self.peer_security = {role: (sec, sec.client_context()) for role, sec in (peer_security or {}).items()}
        self.address_of = address_of
        self.log = log
        self.client_id = client_id
        self.clock = clock or Clock()
        self.limits = limits or ListenerLimits()
        self.max_request_bytes = max_request_bytes if max_request_bytes is not None else (
            self.limits.max_request_bytes if limits is not None else None)
        self.memory = RequestMemory(self.limits.queued_max_request_bytes)
        self.supported = {name: None for name in listeners}
        self._numbers = itertools.count(1)
        #: outbound connections by (peer node, channel): see :func:`~kraftlog.net.connections.channel_of`
        self._peers: dict[tuple[object, str], Peer] = {}
        self._wake = Wake()
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task] = set()
        self.connections: set[Connection] = set()
        self._failed: list[int] = []  # correlation ids of requests that could not be encoded
        self.stopping = False
        self.link_filter = link_filter
        #: chaos mode's control channel; ``control_handlers``: the commands served by the process rather
        #: than the link filter (``disk_full``): cmd -> handler(command) -> answer fields; ValueError for a
        #: malformed command
        self.control_channel = ControlChannel(self, control_handlers)
        self.control_port: int | None = None
        #: the clock (ms) as of the last deadline check: stamps connections' reads and writes (coarse, cheap)
        self._coarse_ms = self.clock.now_ms()
        self._counts: dict[str, int] = {}  # listener -> connections it holds
        self._ip_counts: dict[tuple[str, str], int] = {}  # (listener, address) -> connections
        #: what the listeners refused and closed (the run file's ``listeners``), and what was not yet logged
        self.stats = {"refused": 0, "closed_idle": 0, "closed_receive_timeout": 0}
        self._unlogged = {"refused": 0, "closed_idle": 0, "closed_receive_timeout": 0}
        self._warned_past_deadline = False
        #: (queue time, processing time) histograms (ms) fed for each request handed to the node: the
        #: controller's EventQueueTimeMs and EventQueueProcessingTimeMs; None: not measured
        self.event_timers: tuple[Histogram, Histogram] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self, versions_for: Callable[[str], dict[int, tuple[int, int]]]) -> None:
        """Start serving every listener; ``versions_for(listener)`` gives its API version ranges."""
        loop = asyncio.get_running_loop()
        for name, sock in self.listeners.items():
            self.supported[name] = versions_for(name)
            server = await loop.create_server(lambda name=name: ListenerProtocol(self, name), sock=sock,
                                              ssl=self.tls.get(name))
            self._servers.append(server)
        if self.listeners:
            self._spawn(self._check_deadlines_forever())
        self._flush()

    async def run_until(self, done: Callable[[], bool], wake_every_ms: int = 1000,
                        on_wake: Callable[[], None] | None = None) -> None:
        """Tick the node at its deadlines until ``done()`` is true; wakes at least every
        ``wake_every_ms`` to call ``on_wake``.

        Every pass yields to the event loop at least once (its sockets, timers and signal handlers run),
        even when the node's deadline is already due: a node that kept asking to be woken in the past
        (a timer it cannot act on and never moves) once made this loop tick it without ever awaiting, so
        the process stopped reading its sockets and ignored SIGTERM (issue 24). Such a node breaks the
        node contract (``next_deadline()`` after ``tick(now)`` lies after ``now``); the driver logs it
        once and then ticks it at most once a millisecond."""
        past = False  # the last tick left the deadline at or before its own time
        while not done():
            deadline = self.node.next_deadline()
            now = self.clock.now_ms()
            wait_ms = wake_every_ms if deadline is None else max(0, min(wake_every_ms, deadline - now))
            if past:  # a node stuck in the past: tick it at most once a millisecond
                await asyncio.sleep(0.001)
            elif wait_ms > 0 and not self._wake.is_set():
                await self._wake.wait(wait_ms / 1000)
            else:
                await asyncio.sleep(0)
            self._wake.clear()
            now = self.clock.now_ms()
            deadline = self.node.next_deadline()
            past = False
            if deadline is not None and now >= deadline:
                self.node.tick(now)
                self._flush()
                after = self.node.next_deadline()
                past = after is not None and after <= now
                if past and not self._warned_past_deadline:
                    self._warned_past_deadline = True
                    self.log(f"the node asks to be woken at {after} ms, not after its tick at {now} ms "
                             "(a node contract bug): ticking it at most once a millisecond")
            if on_wake is not None:
                on_wake()

    async def close(self) -> None:
        """Stop listening and close every connection."""
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            self._close(conn, None)
        for peer in self._peers.values():
            if peer.writer is not None:
                peer.writer.close()
        for task in list(self._tasks):
            task.cancel()

    def flush_outbox(self) -> None:
        """Send what the node queued outside an event (a client given work between events), without
        waking the loop again at once: its next deadline is looked at on the next pass anyway."""
        self._flush()
        self._wake.clear()

    def kick(self) -> None:
        """Re-examine the node's deadline now (after a change made outside an event, e.g. shutdown)."""
        self._flush()
        self._wake.set()

    def listener_stats(self) -> dict:
        """The listeners' state, for the node's run file: ``connections`` per listener, ``refused`` (over
        max.connections / max.connections.per.ip), ``closed_idle`` (connections.max.idle.ms),
        ``closed_receive_timeout`` (kraftlog.request.receive.timeout.ms), ``queued_request_bytes`` (charged
        to queued.max.request.bytes), ``waiting_for_memory`` (connections not read until it has room) and, with
        a SASL listener, ``authentications``: listener -> successful and failed SASL authentications."""
        out = {"connections": dict(sorted(self._counts.items())), **self.stats,
               "queued_request_bytes": self.memory.used, "waiting_for_memory": len(self.memory.waiting)}
        if self.authentications:
            out["authentications"] = {name: {"successful": ok, "failed": failed}
                                      for name, (ok, failed) in sorted(self.authentications.items())}
        return out

    # ------------------------------------------------------------------ inbound
    def _accepted(self, listener: str, transport: asyncio.Transport) -> Connection:
        """A new connection on ``listener``: counted, or closed at once when the listener already holds
        ``max.connections`` connections, or ``max.connections.per.ip`` from its address (Kafka's
        ``ConnectionQuotas``; Kafka's acceptor waits for a free slot instead at max.connections)."""
        peername = transport.get_extra_info("peername")
        ip = str(peername[0]) if peername else "?"
        kwargs = {} if self.max_request_bytes is None else {"max_request_bytes": self.max_request_bytes}
        conn = Connection(next(self._numbers), listener, f"{ip}:{peername[1]}" if peername else "?",
                          transport, ServerConnection(self.supported[listener], **kwargs,
                                                      sasl=self.sasl.get(listener),
                                                      principal=principal_of_certificate(
                                                          transport.get_extra_info("peercert")) or ANONYMOUS),
                          last_io_ms=self._coarse_ms)
        limits = self.limits
        if (self._counts.get(listener, 0) >= limits.max_connections
                or self._ip_counts.get((listener, ip), 0) >= limits.max_connections_per_ip):
            conn.closed = True
            conn.framing.closed = "refused"  # late bytes land in a scratch buffer
            self.stats["refused"] += 1
            self._unlogged["refused"] += 1
            transport.close()
            return conn
        conn.ip = ip
        self._counts[listener] = self._counts.get(listener, 0) + 1
        self._ip_counts[(listener, ip)] = self._ip_counts.get((listener, ip), 0) + 1
        # Muting: no further request is handed over, nor read, while a response is not yet written whole
        # to the socket (pause_writing at the first byte buffered, resume_writing once it is empty). A TLS
        # transport (asyncio's and uvloop's SSL protocol) pauses when its buffer is >= high, not > high: high=1
        # there, or it would pause with nothing buffered and never resume.
        transport.set_write_buffer_limits(high=1 if listener in self.tls else 0, low=0)
        self.connections.add(conn)
        return conn

    def _on_read(self, conn: Connection, nbytes: int) -> None:
        """``nbytes`` arrived on a listener connection, in the buffer its framing gave."""
        conn.last_io_ms = self._coarse_ms
        self._on_events(conn, conn.framing.buffer_updated(nbytes))

    def _on_events(self, conn: Connection, events: list) -> None:
        """What the framing made of a listener connection's bytes: hand its complete requests to the node
        (one at a time), answer or close as it says; then decide whether to read it further."""
        try:
            for event in events:
                if isinstance(event, Request):
                    self._on_request(conn, event)
                elif isinstance(event, Reply):
                    conn.queued.append(event)  # answered in turn: responses leave in request order
                elif isinstance(event, Authenticated):
                    self.authentications[conn.listener][0] += 1
                elif isinstance(event, Close):
                    if event.failed_authentication:
                        self.authentications[conn.listener][1] += 1
                    if event.delay_ms > 0:  # connection.failed.authentication.delay.ms: the answer goes first
                        self._pump(conn)
                        asyncio.get_running_loop().call_later(event.delay_ms / 1000, self._close, conn,
                                                              event.reason)
                        return
                    self._close(conn, event.reason)
                    break
            self._pump(conn)
            self._flush()
            if not conn.closed:
                held = conn.framing.held_bytes
                if held != conn.frame_charge:  # a large request completed (its buffer is now queued)
                    self._set_frame_charge(conn, held)
                self._update_reading(conn)
        except Exception:  # a bug: log it, drop this connection, keep serving the others
            self.log(f"error serving {conn}:\n{traceback.format_exc()}")
            self._close(conn, "internal error")

    def _on_request(self, conn: Connection, event: Request) -> None:
        try:
            api_key, version, corr, client_id, msg = wire.decode_request_frame(event.payload)
        except Exception as exc:  # any decoding failure is the client's malformed request
            self._close(conn, f"malformed request (API key {event.header.api_key} version "
                              f"{event.header.api_version}): {exc}")
            return
        if conn.listener != lst.CLIENT:  # a node introduces itself by its client id, on a node listener
            node = node_of_client_id(client_id)
            conn.identity = CLIENTS if node is None else node
        conn.queued.append((corr, version, client_id, msg, self.clock.now_ms()))
        size = len(event.payload)
        conn.queued_charge += size
        self.memory.used += size

    def _pump(self, conn: Connection) -> None:
        """Hand the node the next queued request of ``conn`` when none is in flight and the last response
        has been written (muting); answers of the framing (ApiVersions) leave in turn."""
        lf = self.link_filter
        while conn.inflight is None and conn.queued and not conn.closed and not conn.write_paused:
            item = conn.queued.popleft()
            if type(item) is Reply:
                self._reply(conn, item.data)
                continue
            corr, version, client_id, msg, queued_ms = item
            if lf is not None and lf.active:
                api = api_name(msg)
                verdict = lf.decide(api, conn.identity, self.node.node_id)
                if verdict is DROP:
                    continue
                if verdict is HOLD:
                    lf.hold_message(api, conn.identity, self.node.node_id, ("request", conn, item))
                    continue
            conn.inflight = (corr, version)
            env = m.Envelope(conn, self.node.node_id, corr, msg, False, conn.listener, client_id, version,
                             f"/{conn.ip}" if conn.ip else None, conn.framing.principal)
            timers = self.event_timers
            try:
                if timers is None:
                    self.node.deliver(self.clock.now_ms(), env)
                else:  # the time it waited here and the time the node took, as Kafka's event queue measures
                    now = self.clock.now_ms()
                    started = time.perf_counter()
                    self.node.deliver(now, env)
                    timers[0].update(max(0, now - queued_ms))
                    timers[1].update((time.perf_counter() - started) * 1000.0)
            except Exception:  # a bug in the node: log it loudly, drop this client, keep serving others
                self.log(f"error handling {type(msg).__name__} v{version} from {conn}:\n{traceback.format_exc()}")
                self._close(conn, "the request could not be handled")
                return
            if type(msg) is m.ProduceRequest and msg.acks == 0:
                conn.inflight = None  # no response comes: Kafka unmutes the channel at once
        if not conn.queued and conn.queued_charge:  # every queued request handed over: released
            self.memory.used -= conn.queued_charge
            conn.queued_charge = 0
            self._wake_memory_waiters()

    # ------------------------------------------------------------------ muting and request memory
    def _update_reading(self, conn: Connection) -> None:
        """Read ``conn`` only while no complete request waits behind the one in flight and its last
        response has been written to the socket (muting), and the next buffer its large request needs
        fits ``queued.max.request.bytes`` (charged here, before the framing allocates it); pause its
        transport otherwise. The receive deadline runs only while the connection is read."""
        if conn.closed:
            return
        framing = conn.framing
        read = not conn.queued and not conn.write_paused
        if read:
            need = framing.held_bytes + framing.next_allocation - conn.frame_charge
            if need <= 0 and conn.memory_wait:  # nothing to wait for any more
                self.memory.waiting.remove(conn)
                self.memory.waiting_frames -= conn.frame_charge
                conn.memory_wait = False
            elif need > 0:
                memory = self.memory
                if conn.memory_wait and memory.waiting[0] is not conn:
                    read = False  # first come, first served
                elif memory.fits(need, conn.frame_charge, conn.memory_wait):
                    if conn.memory_wait:
                        memory.waiting.popleft()
                        memory.waiting_frames -= conn.frame_charge
                        conn.memory_wait = False
                    self._set_frame_charge(conn, conn.frame_charge + need)
                else:
                    read = False
                    if not conn.memory_wait:
                        conn.memory_wait = True
                        memory.waiting.append(conn)
                        memory.waiting_frames += conn.frame_charge
        if read != conn.reading:
            conn.reading = read
            if read:
                conn.writer.resume_reading()
                conn.receive_started_ms = None  # the deadline restarts: the wait was not the client's
            else:
                conn.writer.pause_reading()
        if not framing.receiving:
            conn.receive_started_ms = None
        elif conn.receive_started_ms is None:
            conn.receive_started_ms = self._coarse_ms

    def _set_frame_charge(self, conn: Connection, nbytes: int) -> None:
        memory = self.memory
        delta = nbytes - conn.frame_charge
        conn.frame_charge = nbytes
        memory.used += delta
        memory.frames += delta
        if conn.memory_wait:
            memory.waiting_frames += delta
        if delta < 0:
            self._wake_memory_waiters()

    def _wake_memory_waiters(self) -> None:
        """Let the connections waiting for request memory go on, first come first served, while the
        first one's buffer fits."""
        waiting = self.memory.waiting
        while waiting:
            conn = waiting[0]
            self._update_reading(conn)
            if conn.memory_wait:
                return

    def _write_paused(self, conn: Connection, paused: bool) -> None:
        """The transport's write buffer filled (a response not yet written whole to the socket) or
        emptied: the connection is muted until then, then its next request goes on."""
        conn.write_paused = paused
        if paused or conn.closed:
            return
        conn.last_io_ms = self._coarse_ms
        self._pump(conn)
        self._flush()
        self._update_reading(conn)

    # ------------------------------------------------------------------ deadlines
    async def _check_deadlines_forever(self) -> None:
        interval_s = self.limits.check_interval_ms() / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                self._check_deadlines()
            except Exception:  # a bug: log it and go on checking
                self.log(f"error checking connection deadlines:\n{traceback.format_exc()}")

    def _check_deadlines(self) -> None:
        """Close the connections past a deadline: a request begun and not received whole within
        ``kraftlog.request.receive.timeout.ms`` while the connection was read, or nothing read or written
        for ``connections.max.idle.ms``; log what the listeners closed and refused since the last check
        (one line each, not one per connection)."""
        now = self._coarse_ms = self.clock.now_ms()
        limits = self.limits
        for conn in sorted(self.connections, key=lambda c: c.number):
            started = conn.receive_started_ms
            if conn.reading and started is not None and now - started >= limits.request_receive_timeout_ms:
                self._closed_for("closed_receive_timeout", conn)
            elif now - conn.last_io_ms >= limits.connections_max_idle_ms:
                self._closed_for("closed_idle", conn)
        unlogged = self._unlogged
        if unlogged["closed_receive_timeout"]:
            self.log(f"closed {unlogged['closed_receive_timeout']} connection(s) whose request was not received "
                     f"within kraftlog.request.receive.timeout.ms ({limits.request_receive_timeout_ms} ms)")
        if unlogged["closed_idle"]:
            self.log(f"closed {unlogged['closed_idle']} connection(s) idle for connections.max.idle.ms "
                     f"({limits.connections_max_idle_ms} ms)")
        if unlogged["refused"]:
            self.log(f"refused {unlogged['refused']} connection(s) over max.connections ({limits.max_connections}) "
                     f"or max.connections.per.ip ({limits.max_connections_per_ip}) of a listener")
        for key in unlogged:
            unlogged[key] = 0

    def _closed_for(self, why: str, conn: Connection) -> None:
        self.stats[why] += 1
        self._unlogged[why] += 1
        self._close(conn, None)

    def _close(self, conn: Connection, reason: str | None) -> None:
        if conn.closed:
            return
        conn.closed = True
        conn.queued.clear()
        self.connections.discard(conn)
        if conn.ip:
            self._counts[conn.listener] -= 1
            key = (conn.listener, conn.ip)
            if self._ip_counts[key] <= 1:
                del self._ip_counts[key]
            else:
                self._ip_counts[key] -= 1
        memory = self.memory
        if conn.memory_wait:
            memory.waiting.remove(conn)
            memory.waiting_frames -= conn.frame_charge
            conn.memory_wait = False
        if conn.frame_charge or conn.queued_charge:
            memory.used -= conn.frame_charge + conn.queued_charge
            memory.frames -= conn.frame_charge
            conn.frame_charge = conn.queued_charge = 0
            self._wake_memory_waiters()
        if self.link_filter is not None and self.link_filter.held:
            self.link_filter.forget(lambda item: item[0] != "send" and item[1] is conn)
        if reason is not None:
            self.log(f"closing {conn}: {reason}")
        try:
            conn.writer.close()
        except Exception:  # the transport may already be gone
            pass

    # ------------------------------------------------------------------ outbound
    def _flush(self) -> None:
        """Send everything the node's outbox holds; a request that cannot be encoded fails at once
        (``connection_failed``), as one whose connection cannot be made."""
        while True:
            out = self.node.poll()
            if not out:
                if not self._failed:
                    break
                failed, self._failed = self._failed, []
                now = self.clock.now_ms()
                for corr in failed:
                    self.node.connection_failed(now, corr)
                continue
            for env in out:
                if env.is_response:
                    self._send_response(env)
                else:
                    self._send_request(env)
        self._wake.set()

    def _reply(self, conn: Connection, data: bytes) -> None:
        """An answer of the framing layer itself (ApiVersions): judged as a response to the connection
        (the request and its answer cross the same two links)."""
        lf = self.link_filter
        if lf is not None and lf.active:
            me = self.node.node_id
            for src, dst in ((conn.identity, me), (me, conn.identity)):
                verdict = lf.decide("ApiVersions", src, dst)
                if verdict is DROP:
                    return
                if verdict is HOLD:
                    lf.hold_message("ApiVersions", src, dst, ("reply", conn, data))
                    return
        conn.last_io_ms = self._coarse_ms
        conn.writer.write(data)

    def _send_response(self, env: m.Envelope) -> None:
        conn = env.dst
        if not isinstance(conn, Connection) or conn.closed:
            return  # the client went away: Kafka drops the response
        current = conn.inflight is not None and conn.inflight[0] == env.correlation_id
        version = conn.inflight[1] if current else None
        lf = self.link_filter
        if lf is not None and lf.active:
            api = api_name(env.message)
            verdict = lf.decide(api, self.node.node_id, conn.identity)
            if verdict is not PASS:
                if verdict is HOLD:
                    lf.hold_message(api, self.node.node_id, conn.identity, ("response", conn, env, version))
                if current:  # dropped or held, it counts as sent: the connection goes on
                    conn.inflight = None
                    self._pump(conn)
                    self._update_reading(conn)
                return
        self._write_response(conn, env, version)
        if current and conn.inflight is not None and conn.inflight[0] == env.correlation_id:
            conn.inflight = None
            self._pump(conn)
            self._update_reading(conn)

    def _write_response(self, conn: Connection, env: m.Envelope, version: int | None) -> None:
        conn.last_io_ms = self._coarse_ms
        try:
            if type(env.message) is m.FetchResponse:  # record batches sent as read, not copied
                conn.writer.writelines(wire.frame_response(env.message, env.correlation_id, version))
                return
            data = wire.frame(wire.encode_response(env.message, env.correlation_id, version))
        except Exception as exc:
            self._close(conn, f"cannot encode {type(env.message).__name__} v{version}: {exc}")
            return
        conn.writer.write(data)

    def _send_request(self, env: m.Envelope) -> None:
        if isinstance(env.message, ConnectionSetup):
            self._setup_connection(env)
            return
        lf = self.link_filter
        if lf is not None and lf.active:
            api = api_name(env.message)
            verdict = lf.decide(api, self.node.node_id, env.dst)
            if verdict is DROP:
                return  # lost on the cut link: the node times the request out
            if verdict is HOLD:
                lf.hold_message(api, self.node.node_id, env.dst, ("send", env))
                return
        peer = self._peer(env.dst, channel_of(env.message))
        version = wire.default_version(env.message)  # the response is read at the version the request went at
        try:
            frame = wire.frame(wire.encode_request(env.message, env.correlation_id, client_id=self.client_id,
                                                   version=version))
        except Exception as exc:  # e.g. a forwarded admin request the wire cannot express at our version
            self.log(f"cannot send {type(env.message).__name__} to {env.dst}: {exc}")
            self._failed.append(env.correlation_id)
            return
        peer.inflight[env.correlation_id] = (type(env.message), version)
        if peer.writer is not None:
            peer.writer.write(frame)
            return
        peer.pending.append((env.correlation_id, frame))
        if not peer.connecting:
            peer.connecting = True
            self._spawn(self._connect(peer))

    def _peer(self, node, channel: str) -> Peer:
        """The outbound connection to ``node`` for ``channel`` (made on first use)."""
        peer = self._peers.get((node, channel))
        if peer is None:
            peer = self._peers[(node, channel)] = Peer(node)
        return peer

    def _setup_connection(self, env: m.Envelope) -> None:
        """A client node's ConnectionSetup (:mod:`kraftlog.protocol.node`; brokers and the controller
        connect on demand and never send one): answered once the TCP connection to ``env.dst`` is open,
        at once if it already is; a connection that cannot be made fails it (``connection_failed``), as
        the simulator's network does. No link rule applies: link faults are the nodes' own filters."""
        peer = self._peer(env.dst, DEFAULT_CHANNEL)
        if peer.writer is not None:
            self.node.deliver(self.clock.now_ms(), m.Envelope(env.dst, self.node.node_id, env.correlation_id,
                                                              env.message, True))
            return
        peer.setups.append(env.correlation_id)
        if not peer.connecting:
            peer.connecting = True
            self._spawn(self._connect(peer))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self, peer: Peer) -> None:
        address = self.address_of(peer.peer)
        transport = None
        try:
            if address is None:
                raise ConnectionError(f"no address known for {peer.peer}")
            security, context = self.peer_security.get(address[2], (None, None)) if len(address) > 2 else (None, None)
            loop = asyncio.get_running_loop()
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(lambda: PeerProtocol(self, peer), address[0], address[1], ssl=context,
                                       server_hostname=address[0] if context is not None else None),
                CONNECT_TIMEOUT_MS / 1000)
            if security is not None and security.sasl:  # authenticated before any request goes out
                await asyncio.wait_for(protocol.authenticate(SaslClientSession(
                    security.mechanism, security.username, security.password, self.client_id)),
                    CONNECT_TIMEOUT_MS / 1000)
        except (TimeoutError, OSError, ConnectionError) as exc:
            if transport is not None:
                transport.close()
            if isinstance(exc, (ssl.SSLError, PermissionError)):  # logged once per peer and reason
                self._log_auth_failure(peer, f"{type(exc).__name__}: {exc}")
            peer.connecting = False
            failed = [corr for corr, _ in peer.pending] + peer.setups
            peer.pending.clear()
            peer.setups.clear()
            now = self.clock.now_ms()
            for corr in failed:
                peer.inflight.pop(corr, None)
                self.node.connection_failed(now, corr)
            self._flush()
            return
        peer.writer = transport
        peer.connecting = False
        peer.auth_failure = None
        peer.generation += 1
        protocol.attached = True
        if not protocol.lost:
            transport.writelines([frame for _, frame in peer.pending])
        peer.pending.clear()
        if peer.setups:
            setups, peer.setups = peer.setups, []
            now = self.clock.now_ms()
            for corr in setups:
                self.node.deliver(now, m.Envelope(peer.peer, self.node.node_id, corr, CONNECTION_SETUP, True))
            self._flush()
        if protocol.lost:  # closed before it was attached: lost now
            self._peer_lost(protocol)

    def _log_auth_failure(self, peer: Peer, reason: str) -> None:
        if peer.auth_failure != reason:
            peer.auth_failure = reason
            self.log(f"cannot authenticate to {peer.peer}: {reason}")

    def _on_peer_data(self, protocol: PeerProtocol, nbytes: int) -> None:
        """``nbytes`` from a peer: its responses, each to the request in flight with its correlation id.
        A broken stream or an undecodable response drops the connection."""
        peer = protocol.peer
        try:
            for corr, payload in protocol.decoder.buffer_updated(nbytes):
                sent = peer.inflight.pop(corr, None)
                if sent is None:
                    continue
                _, msg = wire.decode_response(payload, sent[0], sent[1])
                self._receive_response(peer, peer.generation, corr, msg)
            self._flush()
        except Exception as exc:  # a broken stream or an undecodable response: drop the connection
            self.log(f"connection to {peer.peer} broken: {exc}")
            self._peer_lost(protocol)

    def _peer_lost(self, protocol: PeerProtocol) -> None:
        """The connection to a peer closed or broke: every request in flight on it fails
        (``peer_disconnected``), as Kafka's NetworkClient does on a disconnect."""
        if not protocol.attached:
            return
        protocol.attached = False
        peer = protocol.peer
        if protocol.transport is not None:
            protocol.transport.close()
        if peer.writer is protocol.transport:
            peer.writer = None
        peer.inflight.clear()
        if self.link_filter is not None and self.link_filter.held:
            gone = peer.generation
            self.link_filter.forget(lambda item: item[0] == "receive" and item[1] is peer and item[2] == gone)
        if not self.stopping:
            self.node.peer_disconnected(self.clock.now_ms(), peer.peer)
            self._flush()

    def _receive_response(self, peer: Peer, generation: int, corr: int, msg) -> None:
        lf = self.link_filter
        if lf is not None and lf.active:
            api = api_name(msg)
            verdict = lf.decide(api, peer.peer, self.node.node_id)
            if verdict is DROP:
                return  # lost on the cut link: the node times the request out
            if verdict is HOLD:
                lf.hold_message(api, peer.peer, self.node.node_id, ("receive", peer, generation, corr, msg))
                return
        self.node.deliver(self.clock.now_ms(), m.Envelope(peer.peer, self.node.node_id, corr, msg, True))

    # ------------------------------------------------------------------ chaos mode: the control channel
    def control(self, command: object) -> dict[str, object]:
        """Answer one control command (:meth:`kraftlog.net.control.ControlChannel.control`)."""
        return self.control_channel.control(command)

    async def start_control(self, host: str, port: int = 0) -> int:
        """Serve the control channel on ``host`` (loopback), closed with the listeners; returns its port
        (:meth:`kraftlog.net.control.ControlChannel.start`)."""
        server = await self.control_channel.start(host, port)
        self._servers.append(server)
        self.control_port = server.sockets[0].getsockname()[1]
        return self.control_port

    def deliver_released(self, items: list) -> None:
        """Put released messages back on their way, in their original order, each judged again."""
        requeue: dict[Connection, list] = {}
        for item in items:
            kind = item[0]
            if kind == "request":
                _, conn, request = item
                if not conn.closed:
                    requeue.setdefault(conn, []).append(request)
            elif kind == "response":
                _, conn, env, version = item
                if not conn.closed:
                    self._release_response(conn, env, version)
            elif kind == "reply":
                _, conn, data = item
                if not conn.closed:
                    self._reply(conn, data)
            elif kind == "send":
                self._send_request(item[1])
            elif kind == "receive":
                _, peer, generation, corr, msg = item
                if peer.writer is not None and peer.generation == generation:
                    self._receive_response(peer, generation, corr, msg)
        for conn, requests in requeue.items():
            conn.queued.extendleft(reversed(requests))  # ahead of what arrived after them
            self._pump(conn)
        self._flush()
        for conn in requeue:
            self._update_reading(conn)

    def _release_response(self, conn: Connection, env: m.Envelope, version: int | None) -> None:
        lf = self.link_filter
        api = api_name(env.message)
        verdict = lf.decide(api, self.node.node_id, conn.identity)
        if verdict is HOLD:
            lf.hold_message(api, self.node.node_id, conn.identity, ("response", conn, env, version))
        elif verdict is PASS:
            self._write_response(conn, env, version)
