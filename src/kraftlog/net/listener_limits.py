"""What a node's listeners allow a connection (:class:`ListenerLimits`: Kafka's ``socket.request.max.bytes``,
``queued.max.request.bytes``, ``max.connections``, ``max.connections.per.ip``, ``connections.max.idle.ms``
and kraftlog's ``kraftlog.request.receive.timeout.ms``), and the bookkeeping of ``queued.max.request.bytes``
across the connections (:class:`RequestMemory`, Kafka's ``MemoryPool``). Pure; the TCP driver
(:mod:`kraftlog.net.driver`) charges, releases and closes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from ..metadata import config as cfg

__all__ = ["ListenerLimits", "RequestMemory"]

#: ListenerLimits' fields and their configs (Kafka's names but the last, kraftlog's own); their defaults
#: are :data:`kraftlog.metadata.config.DEFAULTS`', their types and lower bounds its ``invalid_value``'s.
_LIMIT_CONFIGS = (
    ("max_request_bytes", "socket.request.max.bytes"),
    ("queued_max_request_bytes", "queued.max.request.bytes"),
    ("max_connections", "max.connections"),
    ("max_connections_per_ip", "max.connections.per.ip"),
    ("connections_max_idle_ms", "connections.max.idle.ms"),
    ("request_receive_timeout_ms", "kraftlog.request.receive.timeout.ms"),
)


@dataclass(frozen=True)
class ListenerLimits:
    """What one node's listeners allow a connection, in bytes, counts and ms. Kafka's names and meanings;
    kraftlog's defaults (``metadata/config.py``) are bounded where Kafka's are not.

    * ``max_request_bytes`` (``socket.request.max.bytes``, 104,857,600 as Kafka): the largest request
      frame; a larger size closes the connection (Kafka's InvalidReceiveException).
    * ``queued_max_request_bytes`` (``queued.max.request.bytes``; Kafka: -1, unbounded; kraftlog
      268,435,456 = 256 MiB; -1 here too means unbounded): bytes of requests read but not yet handed to
      the node, across the node's connections: the buffers of large requests being received and the
      requests queued behind one in flight. A connection whose large request needs a bigger buffer than
      what is left waits, not reading, until enough is handled (see :class:`RequestMemory`).
    * ``max_connections`` / ``max_connections_per_ip`` (Kafka: 2,147,483,647 each; kraftlog 1,000
      each): connections a listener holds at once, in all and from one address; one over the limit is
      closed at once, counted and logged. Counted per listener, so clients filling the client listener
      never lock the brokers out of the internal one (Kafka counts per broker and exempts its
      inter-broker listener). On loopback every client has the same address, so the two are equal.
    * ``connections_max_idle_ms`` (600,000 as Kafka): a connection with no byte read or written for
      this long is closed.
    * ``request_receive_timeout_ms`` (``kraftlog.request.receive.timeout.ms``, 30,000; Kafka has none):
      a request whose first byte arrived must be received whole within this long while the connection
      is read, else the connection is closed (a slow-loris client).

    :meth:`from_config` reads them from a node's static config; ValueError names a bad value."""

    max_request_bytes: int = int(cfg.DEFAULTS["socket.request.max.bytes"])
    queued_max_request_bytes: int = int(cfg.DEFAULTS["queued.max.request.bytes"])
    max_connections: int = int(cfg.DEFAULTS["max.connections"])
    max_connections_per_ip: int = int(cfg.DEFAULTS["max.connections.per.ip"])
    connections_max_idle_ms: int = int(cfg.DEFAULTS["connections.max.idle.ms"])
    request_receive_timeout_ms: int = int(cfg.DEFAULTS["kraftlog.request.receive.timeout.ms"])

    @classmethod
    def from_config(cls, config: Mapping[str, str] | None) -> ListenerLimits:
        """The limits a static config (name -> value) sets, kraftlog's defaults for the rest. ValueError
        with Kafka's wording (``Invalid value 0 for configuration max.connections: Value must be at least
        1``) for a value of the wrong type or below its bound (:func:`kraftlog.metadata.config.invalid_value`),
        or 0 for queued.max.request.bytes."""
        values = {}
        for attr, name in _LIMIT_CONFIGS:
            text = str(cfg.lookup(name, config)).strip()
            problem = cfg.invalid_value(name, text)
            if problem is None and name == "queued.max.request.bytes" and int(text) == 0:
                problem = f"Invalid value 0 for configuration {name}: must be -1 (unbounded) or at least 1"
            if problem is not None:
                raise ValueError(problem)
            values[attr] = int(text)
        return cls(**values)

    def check_interval_ms(self) -> int:
        """How often (ms) the driver looks for connections past their deadlines: every second, or a
        quarter of the shorter deadline when that is shorter (a deadline is met to within this)."""
        return max(10, min(1000, self.request_receive_timeout_ms // 4, self.connections_max_idle_ms // 4))


class RequestMemory:
    """``queued.max.request.bytes`` for one node: the bytes of requests read but not yet handed to the
    node (``used``), across its listener connections, as Kafka's ``MemoryPool`` bounds the request
    buffers of its ``SocketServer``. Pure bookkeeping; the driver charges and releases.

    Charged: the buffer of a large request being received, before it is allocated or grown (a
    :class:`~kraftlog.protocol.framing.ServerConnection`'s ``next_allocation``; ``frames`` of ``used``), and
    every request queued behind the one in flight on its connection (until its queue empties). A request
    that fits a connection's 64 KiB staging buffer is read whatever the budget (that buffer is the
    connection's own, and muting bounds what queues behind it), so small requests -- a probe's
    ApiVersions, a heartbeat -- are never held up by large ones.

    A connection whose next buffer does not fit waits in ``waiting`` (FIFO) without reading; it goes on
    when its buffer fits, or when every other large request holding part of the budget is itself waiting
    (nothing else could free it: it then goes over, as Kafka's non-strict pool allocates past its limit
    while any memory is left), so no set of half-received requests can wedge the listener. ``limit`` -1:
    unbounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.frames = 0  # of used: buffers of large requests being received
        self.waiting_frames = 0  # of frames: those of connections in ``waiting``
        self.waiting: deque = deque()

    def fits(self, nbytes: int, own_frame: int, own_waiting: bool) -> bool:
        """Whether a connection holding ``own_frame`` bytes of frame buffer (in ``waiting`` or not) may
        allocate ``nbytes`` more now."""
        if self.limit < 0 or self.used + nbytes <= self.limit:
            return True
        others = self.frames - own_frame
        others_waiting = self.waiting_frames - (own_frame if own_waiting else 0)
        return others == others_waiting  # every other holder waits too: go over rather than wedge
