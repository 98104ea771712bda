"""A blocking Kafka connection for kraftlog's own command-line tools (``topics``, ``elect``, ``cluster``).

One TCP connection, one request at a time: the core message is encoded by
:mod:`kraftlog.protocol.wire` at the version its class names, framed, sent, and the response decoded
back into a core message. Loopback clusters answer in milliseconds; every call has a timeout.
"""

from __future__ import annotations

import socket

from ..protocol import wire
from ..protocol.framing import ResponseDecoder

__all__ = ["KafkaConnection", "parse_address"]


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
    ``timeout_s`` seconds without an answer."""

    def __init__(self, address: str, timeout_s: float = 30.0, client_id: str = "kraftlog-cli") -> None:
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

    def __enter__(self) -> "KafkaConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
