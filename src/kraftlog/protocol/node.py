"""The sans-I/O node contract shared by controller, brokers and clients.

A node never reads a clock or a socket. A driver (the simulator or the asyncio TCP driver):

* hands it messages with ``deliver(now_ms, envelope)``,
* calls ``tick(now_ms)`` once ``now_ms >= next_deadline()``,
* collects what it wants sent with ``poll() -> list[Envelope]``.

:class:`NodeBase` implements request/response correlation and request timeouts: a request that gets
no response within its timeout is completed with ``Errors.REQUEST_TIMED_OUT`` through ``on_timeout``,
and a response arriving after that is discarded (Kafka's NetworkClient drops the connection, so a late
response is never seen).

Clients also open connections (:class:`ConnectionSetup`): the driver answers a connection setup once
the connection is established, reports a refused one through ``connection_failed``, and says nothing
while the destination is unreachable. Brokers and the controller never ask for one.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeAlias

from typing_extensions import TypeVar

#: A node's id on the (simulated or real) network: a broker's ``node.id`` (an int, Kafka's ``node.id``),
#: ``"controller"`` (the controller quorum's one id here) or a client's id (a str).
NodeId: TypeAlias = int | str

#: Where an :class:`Envelope` comes from or goes to: a :data:`NodeId`, except that the TCP driver puts the
#: connection a request was read from as its ``src`` (so that the response goes back on that connection).
Address: TypeAlias = Hashable


class Message(Protocol):
    """What travels in an :class:`Envelope`: one of the core's request or response classes
    (``kraftlog.protocol.messages``: slotted dataclasses named after Kafka's schemas) or
    :data:`CONNECTION_SETUP`. ``API`` is Kafka's API name (``"Fetch"``, ``"AlterPartition"``...), shared
    by a request class and its response class."""

    API: ClassVar[str]


class Request(Message, Protocol):
    """A request class of the core: ``API_KEY`` is Kafka's API key, ``VERSION`` the version whose semantics
    it carries (the version it goes out at unless told otherwise)."""

    API_KEY: ClassVar[int]
    VERSION: ClassVar[int]


#: The message type an :class:`Envelope` carries (``Envelope`` alone means any :class:`Message`).
M_co = TypeVar("M_co", bound=Message, default=Message, covariant=True)
#: The context a :class:`NodeBase` subclass attaches to each request it sends (``object`` by default).
C = TypeVar("C", default=object)


@dataclass(slots=True)
class Envelope(Generic[M_co]):
    """A message in transit: ``src``/``dst`` are addresses (node ids: broker int, ``"controller"`` or a
    client id), ``correlation_id`` matches a response to its request (Kafka's request header
    ``correlationId``), ``is_response`` tells which it is. ``Envelope[FetchRequest]`` is an envelope whose
    message is a FetchRequest (a request handler's parameter, for instance)."""

    src: Address
    dst: Address
    correlation_id: int
    message: M_co
    is_response: bool = False
    #: The listener a request arrived on (Kafka's ``RequestContext.listenerName``): the TCP driver sets
    #: it ("CLIENT", "INTERNAL", "CONTROLLER"); None in the simulator, where every link is internal.
    listener: str | None = None
    #: The client id of the request header (Kafka's ``RequestHeader.clientId``); None when unknown.
    client_id: str | None = None
    #: The request's API version as the client sent it (the TCP driver; None in the simulator: the
    #: request class's VERSION).
    api_version: int | None = None
    #: The client's address as Kafka's ``RequestContext.clientAddress`` prints it (``"/127.0.0.1"``): the
    #: TCP driver sets it; None in the simulator. DescribeGroups shows it as each member's host.
    client_host: str | None = None
    #: Who sent the request (Kafka's ``RequestContext.principal``, ``User:<name>``): the SASL user, a TLS client
    #: certificate's principal or ``User:ANONYMOUS``, set by the TCP driver; None in the simulator.
    principal: str | None = None


class ConnectionSetup:
    """Not a Kafka message: the opening of a connection (a TCP handshake), which clients ask for before
    their first request to a node (Kafka's ``NetworkClient.initiateConnect``).

    A client queues ``Envelope(client, node, correlation_id, CONNECTION_SETUP, False)`` with a negative
    correlation id (Kafka's correlation ids number requests only). The driver never hands it to ``node``:

    * connection established: it delivers ``Envelope(node, client, correlation_id, CONNECTION_SETUP,
      True)`` to the client (the simulator: when the setup reaches a live node over links that are up,
      after one more network delay for the reply; the TCP driver: when ``connect()`` succeeds);
    * connection refused (the node is down): it calls the client's ``connection_failed``;
    * unreachable (a cut link drops it): nothing happens; the client gives up after its
      ``socket.connection.setup.timeout.ms``.
    """

    __slots__ = ()
    API: ClassVar[str] = "ConnectionSetup"


#: The one ConnectionSetup instance, in both directions (``is_response`` tells the reply apart).
CONNECTION_SETUP = ConnectionSetup()


class NodeBase(Generic[C]):
    """Outbox, correlation ids and request timeouts for a sans-I/O node.

    Subclasses implement ``on_request(now_ms, envelope)``, ``on_response(now_ms, context, message)``,
    ``on_timeout(now_ms, context)``, ``tick(now_ms)`` and ``next_deadline()`` (calling
    ``_expire_requests`` and ``_request_deadline`` respectively). ``C`` is the type of the context a
    subclass attaches to its requests (``NodeBase[tuple[str, int]]``, say); times are ms."""

    def __init__(self, node_id: NodeId) -> None:
        self.node_id: NodeId = node_id
        self._outbox: list[Envelope] = []
        self._next_correlation = 0
        #: correlation id -> (context, destination) of every request awaiting its response
        self._inflight: dict[int, tuple[C, Address]] = {}
        #: request timeouts: timeout ms -> FIFO of (deadline ms, correlation id). A node uses a few
        #: timeout values and sends in time order, so each FIFO is sorted by deadline and the
        #: timeouts of answered requests drop off its front in O(1) (a heap kept thousands of them).
        self._timeouts: dict[int, deque[tuple[int, int]]] = {}

    # ------------------------------------------------------------------ sending
    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int, context: C) -> int:
        """Queue ``message`` for ``dst``; ``context`` comes back to on_response/on_timeout."""
        self._next_correlation += 1
        corr = self._next_correlation
        self._inflight[corr] = (context, dst)
        fifo = self._timeouts.get(timeout_ms)
        if fifo is None:
            fifo = self._timeouts[timeout_ms] = deque()
        entry = (now_ms + timeout_ms, corr)
        if fifo and entry < fifo[-1]:
            insort(fifo, entry)  # only if a caller's clock went backwards: keep the FIFO sorted
        else:
            fifo.append(entry)
        self._outbox.append(Envelope(self.node_id, dst, corr, message, False))
        return corr

    def send_response(self, request: Envelope, message: Message) -> None:
        """Queue the response to ``request``."""
        self._outbox.append(Envelope(self.node_id, request.src, request.correlation_id, message, True))

    def cancel_request(self, correlation_id: int) -> None:
        """Forget an in-flight request: its response, if any, will be discarded."""
        self._inflight.pop(correlation_id, None)

    def poll(self) -> list[Envelope]:
        """Messages to send, oldest first; the outbox is emptied."""
        out = self._outbox
        self._outbox = []
        return out

    # ---------------------------------------------------------------- receiving
    def deliver(self, now_ms: int, envelope: Envelope) -> None:
        """Hand the node one message."""
        if envelope.is_response:
            entry = self._inflight.pop(envelope.correlation_id, None)
            if entry is not None:
                self.on_response(now_ms, entry[0], envelope.message)
        else:
            self.on_request(now_ms, envelope)

    def peer_disconnected(self, now_ms: int, peer: Address) -> None:
        """The connection to ``peer`` closed (its process died): fail every request in flight to it,
        as Kafka's NetworkClient does when a connection is reset."""
        for corr in sorted(c for c, (_, p) in self._inflight.items() if p == peer):
            self.connection_failed(now_ms, corr)

    def connection_failed(self, now_ms: int, correlation_id: int) -> None:
        """The driver could not deliver request ``correlation_id`` (peer down, connection refused):
        complete it at once through ``on_timeout``, as Kafka's NetworkClient fails it on disconnect."""
        entry = self._inflight.pop(correlation_id, None)
        if entry is not None:
            self.on_timeout(now_ms, entry[0])

    def _expire_requests(self, now_ms: int) -> None:
        """Complete every in-flight request whose deadline is <= ``now_ms`` through ``on_timeout``, in
        (deadline, correlation id) order."""
        while True:
            deadline = self._request_deadline()  # every non-empty FIFO now starts with a live request
            if deadline is None or deadline > now_ms:
                return
            due = min((fifo for fifo in self._timeouts.values() if fifo), key=lambda fifo: fifo[0])
            _, corr = due.popleft()
            context, _ = self._inflight.pop(corr)
            self.on_timeout(now_ms, context)

    def _request_deadline(self) -> int | None:
        """The earliest deadline (ms) of an in-flight request, None when none is in flight. Drops the
        timeouts of answered requests from the fronts of the FIFOs."""
        best = None
        inflight = self._inflight
        for fifo in self._timeouts.values():
            while fifo and fifo[0][1] not in inflight:
                fifo.popleft()
            if fifo and (best is None or fifo[0][0] < best):
                best = fifo[0][0]
        return best

    # ------------------------------------------------------------- to override
    def on_request(self, now_ms: int, envelope: Envelope) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_response(self, now_ms: int, context: C, message: Message) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_timeout(self, now_ms: int, context: C) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def tick(self, now_ms: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def next_deadline(self) -> int | None:  # pragma: no cover - abstract
        raise NotImplementedError


def earliest(*deadlines: int | None) -> int | None:
    """The smallest of the given deadlines, ignoring None."""
    best = None
    for d in deadlines:
        if d is not None and (best is None or d < best):
            best = d
    return best
