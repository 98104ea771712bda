"""How kraftlog's own admin commands reach a secured listener: Kafka's client properties, as its tools read them
from ``--command-config FILE``, and the client side of TLS and SASL on a blocking socket
(:class:`kraftlog.net.client.KafkaConnection`).

:func:`load_command_config` reads ``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
``sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; Kafka's default GSSAPI is not served),
``sasl.jaas.config`` (its ``username="..."`` and ``password="..."``; librdkafka's ``sasl.username`` and
``sasl.password`` are taken too), ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` (or librdkafka's
``ssl.ca.location``) and ``ssl.endpoint.identification.algorithm`` (``https``, the default, checks the broker's host
name; empty does not). Other keys (``client.id``, ``request.timeout.ms`` ...) are left to the command. A file it
cannot use raises ValueError with one line naming the key (the command exits 2); a password never appears in it.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from ..protocol.sasl import MECHANISMS, SaslClientSession, jaas_options
from ..storage.meta_properties import load_properties

__all__ = ["ClientSecurity", "load_command_config", "secure_socket", "command_config_option", "current_security"]

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """A client's ``security_protocol``; for SASL its ``mechanism``, ``username`` and ``password``; for TLS the
    ``cafile`` it trusts (None: the system's) and whether it checks the broker's host name."""

    security_protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    cafile: str | None = None
    check_hostname: bool = True

    def __repr__(self) -> str:  # never a password in a log line or a traceback
        return (f"ClientSecurity({self.security_protocol}, mechanism={self.mechanism}, username={self.username}, "
                f"cafile={self.cafile})")


def load_command_config(path: str) -> ClientSecurity:
    """The client security of the Kafka client properties file at ``path`` (the module doc)."""
    try:
        with open(path, "rb") as f:
            props = {k.strip(): v.strip() for k, v in load_properties(f.read().decode("latin-1")).items()}
    except OSError as exc:
        raise ValueError(f"--command-config {path}: cannot read it: {exc.strerror or exc}") from None
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise ValueError(f"security.protocol: {protocol} is not one of {', '.join(_PROTOCOLS)}")
    mechanism = username = password = None
    if protocol.startswith("SASL_"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"sasl.mechanism: {mechanism} is not served (kraftlog speaks {', '.join(MECHANISMS)})")
        username, password = props.get("sasl.username"), props.get("sasl.password")
        if "sasl.jaas.config" in props:
            options = jaas_options(props["sasl.jaas.config"])
            username, password = options.get("username", username), options.get("password", password)
        if not username or password is None:
            raise ValueError("sasl.jaas.config: username=\"...\" and password=\"...\" are required for "
                             f"{mechanism}")
    cafile = props.get("ssl.truststore.location", props.get("ssl.ca.location"))
    if "ssl.truststore.location" in props and props.get("ssl.truststore.type", "JKS").upper() != "PEM":
        raise ValueError("ssl.truststore.type: kraftlog reads PEM truststores (set ssl.truststore.type=PEM)")
    check = props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    return ClientSecurity(protocol, mechanism, username, password, cafile, check)


def secure_socket(sock: socket.socket, host: str, security: ClientSecurity, client_id: str,
                  timeout_s: float) -> socket.socket:
    """``sock`` (connected to ``host``) made ready for Kafka requests as ``security`` says: wrapped in TLS, then
    SASL-authenticated (SaslHandshake v1, SaslAuthenticate v2). Raises PermissionError with the broker's message
    when authentication fails, ssl.SSLError when TLS does, OSError when the connection breaks."""
    protocol = security.security_protocol
    if protocol.endswith("SSL"):
        context = ssl.create_default_context(cafile=security.cafile)
        context.check_hostname = security.check_hostname
        sock = context.wrap_socket(sock, server_hostname=host)
    if not protocol.startswith("SASL_"):
        return sock
    assert security.mechanism is not None and security.username is not None and security.password is not None
    sock.settimeout(timeout_s)
    session = SaslClientSession(security.mechanism, security.username, security.password, client_id)
    frame: bytes | None = session.start()
    try:
        while frame is not None:
            sock.sendall(frame)
            size = int.from_bytes(_read(sock, 4), "big")
            if not 4 <= size <= 1 << 20:
                raise ConnectionError(f"a SASL response of {size} bytes")
            frame = session.receive(_read(sock, size))
    except PermissionError as exc:
        raise PermissionError(f"{host}: {exc}") from None
    return sock


def _read(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection during SASL authentication")
        out += chunk
    return bytes(out)


_META_KEY = "kraftlog.command_config"


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    try:
        ctx.meta[_META_KEY] = load_command_config(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def command_config_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--command-config FILE`` as Kafka's tools take it (the module doc): read before the command runs (a file it
    cannot use is a usage error naming the key, exit 2) and used by every connection the command opens
    (:func:`current_security`)."""
    return click.option("--command-config", type=click.Path(dir_okay=False), expose_value=False,
                        callback=_remember, is_eager=True, metavar="FILE",
                        help="Kafka client properties for a secured listener: security.protocol, sasl.mechanism, "
                             "sasl.jaas.config, ssl.truststore.location.")(f)


def current_security() -> ClientSecurity | None:
    """The ``--command-config`` of the command running now, None without one (or outside a command)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_META_KEY)

