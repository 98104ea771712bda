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
  gets no response and unmutes the connection at once (Kafka's ``sendNoOpResponse``).
* **Bad input.** A frame the framing refuses, or a body the wire layer cannot decode, closes that
  connection (Kafka's InvalidRequestException) and is logged once; the node never sees it.
* **Peers.** Requests the node sends to another node go over one outbound connection per peer: the
  controller at its configured address, broker ``b`` at the ``INTERNAL`` endpoint of its registration
  in the node's metadata image (Kafka resolves inter-broker endpoints the same way). A refused connection
  fails the request at once (``connection_failed``); a connection that drops fails every request in
  flight on it (``peer_disconnected``), as Kafka's NetworkClient does.
* **Time.** ``now_ms`` is wall-clock ms that never goes backwards (the wall clock at start plus the
  monotonic clock since), handed to the node as the simulator hands it virtual time.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import messages as m
from ..protocol import wire
from ..protocol.framing import Close, Reply, Request, ResponseDecoder, ServerConnection
from ..protocol.node import ConnectionSetup

__all__ = ["Clock", "NodeDriver", "Connection"]

#: Bytes read from a socket per call.
READ_BYTES = 256 * 1024
#: How long (ms) an outbound connection attempt may take (Kafka's socket.connection.setup.timeout.ms).
CONNECT_TIMEOUT_MS = 10_000


class Clock:
    """Wall-clock milliseconds that never go backwards: the wall clock at construction plus the
    monotonic clock since."""

    def __init__(self) -> None:
        self._wall0 = int(time.time() * 1000)
        self._mono0 = time.monotonic()

    def now_ms(self) -> int:
        return self._wall0 + int((time.monotonic() - self._mono0) * 1000)


@dataclass(eq=False)
class Connection:
    """One accepted client or peer connection on a listener (the ``src`` of the requests it carries)."""

    number: int
    listener: str
    peer: str
    writer: asyncio.StreamWriter
    framing: ServerConnection
    #: requests decoded but not yet handed to the node (the channel is muted while one is in flight)
    queued: deque = field(default_factory=deque)
    #: correlation id of the request the node is working on, with its API version; None when idle
    inflight: tuple[int, int] | None = None
    closed: bool = False

    def __repr__(self) -> str:
        return f"conn-{self.number}({self.listener} {self.peer})"


class _Peer:
    """The outbound connection to one peer node: queued frames, requests in flight (correlation id ->
    request type)."""

    def __init__(self, peer) -> None:
        self.peer = peer
        self.writer: asyncio.StreamWriter | None = None
        self.pending: list[tuple[int, bytes]] = []  # (correlation id, frame) waiting for the connection
        self.inflight: dict[int, type] = {}
        self.connecting = False


class NodeDriver:
    """Drives ``node`` over TCP. ``listeners``: name -> bound listening socket; ``address_of(peer)``:
    (host, port) of a peer node or None when unknown yet; ``log(text)``: one line to the node's log;
    ``client_id``: the client id of the node's own requests; ``after_event``: called after every event
    (the process entry point writes its status file from it)."""

    def __init__(self, node, listeners: dict, address_of: Callable[[object], tuple[str, int] | None],
                 log: Callable[[str], None], client_id: str, clock: Clock | None = None,
                 max_request_bytes: int | None = None) -> None:
        self.node = node
        self.listeners = listeners
        self.address_of = address_of
        self.log = log
        self.client_id = client_id
        self.clock = clock or Clock()
        self.max_request_bytes = max_request_bytes
        self.supported = {name: None for name in listeners}
        self._numbers = itertools.count(1)
        self._peers: dict[object, _Peer] = {}
        self._wake = asyncio.Event()
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task] = set()
        self.connections: set[Connection] = set()
        self._failed: list[int] = []  # correlation ids of requests that could not be encoded
        self.stopping = False

    # ------------------------------------------------------------------ lifecycle
    async def start(self, versions_for: Callable[[str], dict[int, tuple[int, int]]]) -> None:
        """Start serving every listener; ``versions_for(listener)`` gives its API version ranges."""
        for name, sock in self.listeners.items():
            self.supported[name] = versions_for(name)
            server = await asyncio.start_server(
                lambda r, w, name=name: self._serve(name, r, w), sock=sock, limit=READ_BYTES)
            self._servers.append(server)
        self._flush()

    async def run_until(self, done: Callable[[], bool], wake_every_ms: int = 1000,
                        on_wake: Callable[[], None] | None = None) -> None:
        """Tick the node at its deadlines until ``done()`` is true; wakes at least every
        ``wake_every_ms`` to call ``on_wake``."""
        while not done():
            deadline = self.node.next_deadline()
            now = self.clock.now_ms()
            wait_ms = wake_every_ms if deadline is None else max(0, min(wake_every_ms, deadline - now))
            if wait_ms > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
                except asyncio.TimeoutError:
                    pass
            self._wake.clear()
            now = self.clock.now_ms()
            deadline = self.node.next_deadline()
            if deadline is not None and now >= deadline:
                self.node.tick(now)
                self._flush()
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

    def kick(self) -> None:
        """Re-examine the node's deadline now (after a change made outside an event, e.g. shutdown)."""
        self._flush()
        self._wake.set()

    # ------------------------------------------------------------------ inbound
    async def _serve(self, listener: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peername = writer.get_extra_info("peername")
        kwargs = {} if self.max_request_bytes is None else {"max_request_bytes": self.max_request_bytes}
        conn = Connection(next(self._numbers), listener, f"{peername[0]}:{peername[1]}" if peername else "?",
                          writer, ServerConnection(self.supported[listener], **kwargs))
        self.connections.add(conn)
        try:
            while not conn.closed:
                try:
                    data = await reader.read(READ_BYTES)
                except (ConnectionError, OSError):
                    break
                if not data:
                    break
                for event in conn.framing.receive_data(data):
                    if isinstance(event, Request):
                        self._on_request(conn, event)
                    elif isinstance(event, Reply):
                        writer.write(event.data)
                    elif isinstance(event, Close):
                        self._close(conn, event.reason)
                        break
                self._pump(conn)
                self._flush()
        finally:
            self._close(conn, None)

    def _on_request(self, conn: Connection, event: Request) -> None:
        try:
            api_key, version, corr, client_id, msg = wire.decode_request_frame(event.payload)
        except Exception as exc:  # any decoding failure is the client's malformed request
            self._close(conn, f"malformed request (API key {event.header.api_key} version "
                              f"{event.header.api_version}): {exc}")
            return
        conn.queued.append((corr, version, client_id, msg))

    def _pump(self, conn: Connection) -> None:
        """Hand the node the next queued request of ``conn`` when none is in flight."""
        while conn.inflight is None and conn.queued and not conn.closed:
            corr, version, client_id, msg = conn.queued.popleft()
            conn.inflight = (corr, version)
            env = m.Envelope(conn, self.node.node_id, corr, msg, False, conn.listener, client_id, version)
            try:
                self.node.deliver(self.clock.now_ms(), env)
            except Exception:  # a bug in the node: log it loudly, drop this client, keep serving others
                self.log(f"error handling {type(msg).__name__} v{version} from {conn}:\n{traceback.format_exc()}")
                self._close(conn, "the request could not be handled")
                return
            if type(msg) is m.ProduceRequest and msg.acks == 0:
                conn.inflight = None  # no response comes: Kafka unmutes the channel at once

    def _close(self, conn: Connection, reason: str | None) -> None:
        if conn.closed:
            return
        conn.closed = True
        conn.queued.clear()
        self.connections.discard(conn)
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

    def _send_response(self, env: m.Envelope) -> None:
        conn = env.dst
        if not isinstance(conn, Connection) or conn.closed:
            return  # the client went away: Kafka drops the response
        version = conn.inflight[1] if conn.inflight and conn.inflight[0] == env.correlation_id else None
        try:
            data = wire.frame(wire.encode_response(env.message, env.correlation_id, version))
        except Exception as exc:
            self._close(conn, f"cannot encode {type(env.message).__name__} v{version}: {exc}")
            return
        conn.writer.write(data)
        if conn.inflight is not None and conn.inflight[0] == env.correlation_id:
            conn.inflight = None
            self._pump(conn)

    def _send_request(self, env: m.Envelope) -> None:
        if isinstance(env.message, ConnectionSetup):
            return  # only clients ask for connection setups; nodes connect on demand
        peer = self._peers.get(env.dst)
        if peer is None:
            peer = self._peers[env.dst] = _Peer(env.dst)
        try:
            frame = wire.frame(wire.encode_request(env.message, env.correlation_id, client_id=self.client_id))
        except Exception as exc:  # e.g. a forwarded admin request the wire cannot express at our version
            self.log(f"cannot send {type(env.message).__name__} to {env.dst}: {exc}")
            self._failed.append(env.correlation_id)
            return
        peer.inflight[env.correlation_id] = type(env.message)
        if peer.writer is not None:
            peer.writer.write(frame)
            return
        peer.pending.append((env.correlation_id, frame))
        if not peer.connecting:
            peer.connecting = True
            self._spawn(self._connect(peer))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self, peer: _Peer) -> None:
        address = self.address_of(peer.peer)
        try:
            if address is None:
                raise ConnectionError(f"no address known for {peer.peer}")
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(address[0], address[1], limit=READ_BYTES), CONNECT_TIMEOUT_MS / 1000)
        except (OSError, asyncio.TimeoutError, ConnectionError):
            peer.connecting = False
            failed = [corr for corr, _ in peer.pending]
            peer.pending.clear()
            now = self.clock.now_ms()
            for corr in failed:
                peer.inflight.pop(corr, None)
                self.node.connection_failed(now, corr)
            self._flush()
            return
        peer.writer = writer
        peer.connecting = False
        for _, frame in peer.pending:
            writer.write(frame)
        peer.pending.clear()
        await self._read_responses(peer, reader)

    async def _read_responses(self, peer: _Peer, reader: asyncio.StreamReader) -> None:
        decoder = ResponseDecoder()
        try:
            while True:
                data = await reader.read(READ_BYTES)
                if not data:
                    break
                for corr, payload in decoder.feed(data):
                    request_type = peer.inflight.pop(corr, None)
                    if request_type is None:
                        continue
                    _, msg = wire.decode_response(payload, request_type)
                    self.node.deliver(self.clock.now_ms(), m.Envelope(peer.peer, self.node.node_id, corr, msg, True))
                self._flush()
        except Exception as exc:  # a broken stream or an undecodable response: drop the connection
            self.log(f"connection to {peer.peer} broken: {exc}")
        finally:
            if peer.writer is not None:
                peer.writer.close()
            peer.writer = None
            peer.inflight.clear()
            if not self.stopping:
                self.node.peer_disconnected(self.clock.now_ms(), peer.peer)
                self._flush()
