"""The TCP driver's connections (:mod:`kraftlog.net.driver`): an accepted listener connection
(:class:`Connection`) and its asyncio protocol (:class:`ListenerProtocol`), an outbound connection to a peer
node (:class:`Peer`, one per channel: :func:`channel_of`) and its protocol (:class:`PeerProtocol`). The
protocols only hand bytes and events to the driver, which owns every rule (muting, bounds, link faults).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..protocol import messages as m
from ..protocol.framing import ResponseDecoder, ServerConnection
from ..protocol.sasl import SaslClientSession
from .link_filter import CLIENTS

if TYPE_CHECKING:
    from .driver import NodeDriver

__all__ = ["Connection", "Peer", "ListenerProtocol", "PeerProtocol", "channel_of", "DEFAULT_CHANNEL",
           "METADATA_CHANNEL"]

@dataclass(eq=False)
class Connection:
    """One accepted client or peer connection on a listener (the ``src`` of the requests it carries)."""

    number: int
    listener: str
    peer: str
    #: the connection's transport (``write``, ``writelines``, ``close``, ``pause_reading``, ...)
    writer: asyncio.Transport
    framing: ServerConnection
    #: requests decoded but not yet handed to the node (the channel is muted while one is in flight)
    queued: deque = field(default_factory=deque)
    #: correlation id of the request the node is working on, with its API version; None when idle
    inflight: tuple[int, int] | None = None
    closed: bool = False
    #: who is at the other end, for the link filter: the node named by the client id of its requests
    #: (``broker-<id>``, ``controller``) on a node listener, else :data:`CLIENTS`
    identity: object = CLIENTS
    #: the address the connection comes from (``max.connections.per.ip``); "" when not counted
    ip: str = ""
    #: whether its transport is reading (False: muted or waiting, see :meth:`NodeDriver._update_reading`)
    reading: bool = True
    #: its transport's write buffer holds a response not yet written to the socket (``pause_writing``)
    write_paused: bool = False
    #: waiting in :class:`RequestMemory`'s queue for its next request buffer
    memory_wait: bool = False
    #: bytes charged to ``queued.max.request.bytes``: its large request's buffer, its queued requests
    frame_charge: int = 0
    queued_charge: int = 0
    #: the driver's coarse clock (ms) at the last byte read or written, and at the first byte of the
    #: request being received (None: none begun)
    last_io_ms: int = 0
    receive_started_ms: int | None = None

    def __repr__(self) -> str:
        return f"conn-{self.number}({self.listener} {self.peer})"


DEFAULT_CHANNEL = "default"
METADATA_CHANNEL = "metadata"


def channel_of(message: object) -> str:
    """Which of a node's outbound connections to a peer carries ``message``. A receiving node serves one
    request per connection at a time (muting), so the metadata log's fetch, a long poll held up to its
    max wait (500 ms), has a connection of its own: an admin request a broker forwards to the controller,
    a heartbeat or an AlterPartition never waits behind it. Kafka's broker likewise talks to the
    controller over separate channels (the KRaft client's fetches, and NodeToControllerChannelManager's
    forwarding, heartbeat and AlterPartition channels)."""
    return METADATA_CHANNEL if type(message) is m.MetadataFetchRequest else DEFAULT_CHANNEL


class Peer:
    """One outbound connection to a peer node (a node may have one per channel, :func:`channel_of`): queued
    frames, requests in flight (correlation id -> request type)."""

    def __init__(self, peer) -> None:
        self.peer = peer
        self.writer: asyncio.Transport | None = None
        self.pending: list[tuple[int, bytes]] = []  # (correlation id, frame) waiting for the connection
        #: correlation id -> (the request type, the version it was sent at): its response is read at that version
        self.inflight: dict[int, tuple[type, int]] = {}
        self.connecting = False
        #: counts this peer's connections: a response held on one connection is lost if it closed since
        self.generation = 0
        #: correlation ids of a client node's ConnectionSetups waiting for the connection
        self.setups: list[int] = []
        #: why the last authentication to this peer failed (logged once until it succeeds or the reason changes)
        self.auth_failure: str | None = None



class ListenerProtocol(asyncio.BufferedProtocol):
    """One accepted connection on a listener: the socket reads into the buffers its framing gives
    (:meth:`ServerConnection.get_buffer`), the events go to :meth:`NodeDriver._on_events`."""

    def __init__(self, driver: NodeDriver, listener: str) -> None:
        self.driver = driver
        self.listener = listener
        self.conn: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn = self.driver._accepted(self.listener, transport)  # type: ignore[arg-type]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.framing.get_buffer()  # type: ignore[union-attr]

    def buffer_updated(self, nbytes: int) -> None:
        conn = self.conn
        if not conn.closed:  # type: ignore[union-attr]
            self.driver._on_read(conn, nbytes)  # type: ignore[arg-type]

    def eof_received(self) -> bool:
        return False  # the client closed its side: close ours (connection_lost follows)

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.driver._write_paused(self.conn, True)

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.driver._write_paused(self.conn, False)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.driver._close(self.conn, None)


class PeerProtocol(asyncio.BufferedProtocol):
    """The outbound connection to a peer node: the socket reads into the buffers its decoder gives
    (:meth:`ResponseDecoder.get_buffer`), responses go to :meth:`NodeDriver._on_peer_data`; its loss to
    :meth:`NodeDriver._peer_lost` once the driver attached it to the peer."""

    def __init__(self, driver: NodeDriver, peer: Peer) -> None:
        self.driver = driver
        self.peer = peer
        self.decoder = ResponseDecoder()
        self.transport: asyncio.Transport | None = None
        self.attached = False  # the peer's writer is this connection (set by _connect)
        self.lost = False
        #: a SASL exchange under way (:meth:`authenticate`) and its outcome
        self._session: SaslClientSession | None = None
        self._authenticated: asyncio.Future | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    async def authenticate(self, session: SaslClientSession) -> None:
        """Run ``session``'s SASL exchange on this connection before it is attached: PermissionError when the
        peer refuses, ConnectionError when the connection closes first."""
        assert self.transport is not None
        self._session = session
        self._authenticated = asyncio.get_running_loop().create_future()
        self.transport.write(session.start())
        await self._authenticated

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self.attached:
            self.driver._on_peer_data(self, nbytes)
        elif self._session is not None:
            self._authentication_data(nbytes)

    def _authentication_data(self, nbytes: int) -> None:
        done = self._authenticated
        assert self._session is not None and done is not None and self.transport is not None
        try:
            for _, payload in self.decoder.buffer_updated(nbytes):
                frame = self._session.receive(bytes(payload))
                if frame is None:
                    self._session = None
                    if not done.done():
                        done.set_result(None)
                    return
                self.transport.write(frame)
        except (PermissionError, ValueError) as exc:  # refused, or a broken stream
            self._session = None
            if not done.done():
                done.set_exception(exc if isinstance(exc, PermissionError) else ConnectionError(str(exc)))

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        done = self._authenticated
        if self._session is not None and done is not None and not done.done():
            done.set_exception(ConnectionError("the peer closed the connection during SASL authentication"))
        self.driver._peer_lost(self)
