"""Clients of a real cluster for kraftlog's own tools.

* :class:`KafkaConnection`: a blocking connection for the command-line tools (``topics``, ``elect``,
  ``cluster``). One TCP connection, one request at a time: the core message is encoded by
  :mod:`kraftlog.protocol.wire` at the version its class names, framed, sent, and the response decoded
  back into a core message. Loopback clusters answer in milliseconds; every call has a timeout.
* :class:`ClientLoop`: a sans-I/O client node of :mod:`kraftlog.client` (the KIP-320 consumer, the
  producer) driven over TCP by :class:`~kraftlog.net.driver.NodeDriver` on its own asyncio loop in a
  thread: the very client the simulator runs, against real brokers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterator

from ..protocol import wire
from ..protocol.framing import ResponseDecoder
from .client_security import ClientSecurity, current_security, secure_socket

__all__ = ["KafkaConnection", "ClientLoop", "ConsumerRecorder", "parse_address", "cli_connection"]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as (host, port); ValueError naming the problem otherwise."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host, int(port)


class KafkaConnection:
    """A connection to the first reachable of ``address`` (``"host:port"``, or a comma-separated list as
    Kafka's ``bootstrap.servers``); ``request(msg)`` returns the decoded response. Raises ValueError for a
    malformed address, OSError when no node can be reached or the connection breaks, TimeoutError after
    ``timeout_s`` seconds without an answer. ``security``: how to reach a secured listener (``--command-config``:
    TLS and SASL); PermissionError when the broker refuses the credentials."""

    def __init__(self, address: str, timeout_s: float = 30.0, client_id: str = "kraftlog-cli",
                 security: ClientSecurity | None = None) -> None:
        addresses = [parse_address(a) for a in address.split(",") if a.strip()]
        if not addresses:
            raise ValueError(f"{address!r} names no HOST:PORT")
        self.timeout_s = timeout_s
        self.client_id = client_id
        error: OSError | None = None
        for candidate in addresses:
            try:
                self._sock = socket.create_connection(candidate, timeout=timeout_s)
            except OSError as exc:
                error = exc
                continue
            self.address = candidate
            if security is not None:  # TLS, then SASL (kraftlog.net.client_security); PermissionError if refused
                try:
                    self._sock = secure_socket(self._sock, candidate[0], security, client_id, timeout_s)
                except BaseException:
                    self._sock.close()
                    raise
            break
        else:
            raise error
        self._decoder = ResponseDecoder()
        self._correlation = 0

    def request(self, msg: object, version: int | None = None) -> object:
        self._correlation += 1
        corr = self._correlation
        if version is None:
            version = wire.default_version(msg)
        self._sock.sendall(wire.frame(wire.encode_request(msg, corr, client_id=self.client_id, version=version)))
        while True:
            data = self._sock.recv(1 << 16)
            if not data:
                raise ConnectionError(f"{self.address[0]}:{self.address[1]} closed the connection")
            for got, payload in self._decoder.feed(data):
                if got == corr:
                    return wire.decode_response(payload, type(msg), version)[1]

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def cli_connection(address: str, fail: Callable[[str, int], None], client_id: str = "kraftlog-cli",
                   timeout_s: float = 30.0) -> Iterator[KafkaConnection]:
    """A :class:`~kraftlog.net.client.KafkaConnection` for an admin command, with its ``--command-config``; every
    failure is one line through ``fail(message, exit code)``: a malformed address (2), credentials refused (1), no
    connection or one that breaks mid-request (1: a TLS or SASL listener closes a client that does not speak it)."""
    try:
        conn = KafkaConnection(address, timeout_s=timeout_s, client_id=client_id, security=current_security())
    except ValueError as exc:
        fail(str(exc), 2)
        raise AssertionError("fail exits") from None
    except PermissionError as exc:
        fail(str(exc), 1)
        raise AssertionError("fail exits") from None
    except OSError as exc:
        fail(f"cannot connect to {address}: {exc}", 1)
        raise AssertionError("fail exits") from None
    try:
        yield conn
    except (ConnectionError, ssl.SSLError, TimeoutError) as exc:
        hint = "" if current_security() is not None else " (a TLS or SASL listener needs --command-config)"
        fail(f"{address}: the connection broke: {exc or type(exc).__name__}{hint}", 1)
    finally:
        conn.close()


class ClientLoop:
    """Runs the sans-I/O client ``node`` (a :class:`~kraftlog.client.network.NetworkClient`: its
    ``node_id`` is its client id, its bootstrap and metadata name brokers by id) against a real cluster,
    on an asyncio loop in a daemon thread.

    ``address_of(broker_id)``: the broker's client listener as (host, port), or None when unknown;
    ``observe(node)``: called on the loop's thread after every event the node handled and at least every
    ``wake_every_ms`` (take the node's records there, or give it work: a true return value says it was
    given some, and what it queued is sent at once; it must not block); ``log(text)``: one line per
    connection problem. :meth:`start` returns at once; :meth:`stop` ends the loop, closes every
    connection and joins the thread (at most ``timeout_s``). Nothing here is a protocol rule: connection
    setups, timeouts, backoffs and retries are the node's own (Kafka's NetworkClient)."""

    def __init__(self, node, address_of: Callable[[object], tuple[str, int] | None],
                 observe: Callable[[object], None], log: Callable[[str], None] = lambda text: None,
                 wake_every_ms: int = 100) -> None:
        self.node = node
        self.address_of = address_of
        self.observe = observe
        self.log = log
        self.wake_every_ms = wake_every_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: the exception that ended the loop, if one did
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"client-{self.node.node_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # kept for the owner to report; the thread ends
            self.error = exc

    async def _main(self) -> None:
        from .driver import NodeDriver
        driver = NodeDriver(self.node, {}, self.address_of, self.log, client_id=str(self.node.node_id))
        await driver.start(lambda listener: {})
        driver.kick()
        try:
            def on_wake() -> None:
                if self.observe(self.node):
                    driver.flush_outbox()

            await driver.run_until(self._stop.is_set, wake_every_ms=self.wake_every_ms, on_wake=on_wake)
        finally:
            driver.stopping = True
            await driver.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)


class ConsumerRecorder:
    """What KIP-320 consumers (:class:`kraftlog.client.consumer.Consumer` in :class:`ClientLoop` threads)
    read and detected, in :mod:`kraftlog.check.checkers`' shapes: ``consumed`` (client, partition name,
    offset, value, time ms, seq), ``truncations`` (client, partition name, position, divergence offset,
    time ms, seq) and ``hwms`` (client, partition name, HWM, time ms); ``seq`` orders events across
    consumers. ``now_ms()``: the run's clock (ms from cluster ready). :meth:`observe` is a ClientLoop
    ``observe`` callback; the lists are appended under ``lock``."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.lock = threading.Lock()
        self.consumed: list = []
        self.truncations: list = []
        self.hwms: list = []
        #: what the consumers' group coordinators told them (``kraftlog.check.groups.GroupEvent``)
        self.group_events: list = []
        self.seq = 0

    def observe(self, node) -> bool:
        from ..client.consumer import LogTruncationError, OffsetOutOfRangeError
        if (not node.records and not node.truncations and not node.has_errors and not node.hwms
                and not node.group_events):
            return False
        try:
            records = node.poll_records()
        except (LogTruncationError, OffsetOutOfRangeError):  # recorded below, as the simulator's runner does
            records = node.take_records()
        now = self.now_ms()
        with self.lock:
            for r in records:
                self.seq += 1
                self.consumed.append((node.node_id, f"{r.topic}-{r.partition}", r.offset,
                                      r.value.decode() if r.value is not None else None, now, self.seq))
            for tr in node.take_truncations():
                self.seq += 1
                self.truncations.append((node.node_id, f"{tr.topic}-{tr.partition}", tr.position,
                                         tr.divergence_offset, now, self.seq))
            for _at, t, p, h in node.hwms:
                self.hwms.append((node.node_id, f"{t}-{p}", h, now))
            node.hwms.clear()
            for kind, t, p, offset in node.take_group_events():
                self.group_events.append((node.group_id or "", node.node_id, f"{t}-{p}", kind, offset, now))
        return False
