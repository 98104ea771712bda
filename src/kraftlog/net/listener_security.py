"""A node's listener security from its ``server.properties`` (Kafka's names), and the TLS context a listener
serves with.

:func:`security_of_listeners` reads, for each listener whose security protocol is ``SASL_PLAINTEXT``,
``SSL`` or ``SASL_SSL``:

* SASL (``SASL_*``): ``sasl.enabled.mechanisms`` (Kafka's default is GSSAPI, which kraftlog does not serve:
  it must be set; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), PLAIN's users from
  ``listener.name.<l>.plain.sasl.jaas.config``'s ``user_<name>="<password>"`` entries (Kafka's
  ``PlainServerCallbackHandler``), ``connection.failed.authentication.delay.ms`` (default 100);
* TLS (``SSL``, ``SASL_SSL``): ``ssl.keystore.type=PEM`` and ``ssl.keystore.location`` (one PEM file: the
  private key, then the certificate chain), ``ssl.key.password`` (an encrypted key's), ``ssl.truststore.type=PEM``
  and ``ssl.truststore.location`` (the CAs a client certificate is checked against), ``ssl.client.auth``
  (``none``, ``requested``, ``required``: mTLS), ``ssl.principal.mapping.rules`` (``DEFAULT`` only: the principal
  of a client certificate is ``User:`` + its subject's distinguished name, RFC 2253, as Kafka's default).
  JKS and PKCS12 keystores are refused (convert them to PEM).

Each key may be given for one listener as ``listener.name.<listener in lower case>.<key>``, which wins. Errors are
ValueError with one line naming the key, never a password.

:func:`peer_security` reads how this node connects to the other nodes' listeners (the inter-broker listener and
the controller listener, each a client of the other nodes as in Kafka): the listener's security protocol from
``listener.security.protocol.map``, for SASL the mechanism (``sasl.mechanism.inter.broker.protocol``,
``sasl.mechanism.controller.protocol``; Kafka's default GSSAPI is not served) and this node's own credentials,
the ``username="..."`` and ``password="..."`` of ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (the same
entry whose ``user_<name>`` options a PLAIN server checks, as Kafka's); for TLS the truststore the other node's
certificate is checked against (its host name too, Kafka's ``ssl.endpoint.identification.algorithm=https``) and
the keystore presented when that listener asks for a client certificate.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass

from ..protocol.sasl import (
    DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
    MECHANISMS,
    PLAIN,
    jaas_options,
    parse_plain_jaas_users,
)

__all__ = ["SaslListener", "TlsListener", "PeerSecurity", "LISTENER_KEYS", "security_of_listeners", "peer_security",
           "server_context", "principal_of_certificate"]

#: What a listener-prefixed key (``listener.name.<listener>.<key>``, the listener's name in lower case as Kafka
#: writes it) may set.
LISTENER_KEYS = frozenset({
    "sasl.enabled.mechanisms", "plain.sasl.jaas.config", "scram-sha-256.sasl.jaas.config",
    "scram-sha-512.sasl.jaas.config", "ssl.keystore.type", "ssl.keystore.location", "ssl.key.password",
    "ssl.keystore.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.client.auth", "ssl.principal.mapping.rules",
})
_CLIENT_AUTH = ("none", "requested", "required")


@dataclass(frozen=True)
class SaslListener:
    """A ``SASL_PLAINTEXT`` or ``SASL_SSL`` listener's settings: ``mechanisms`` (``sasl.enabled.mechanisms``, in
    order), ``plain_users`` (user -> password: its PLAIN JAAS configuration's ``user_<name>`` entries) and
    ``failed_delay_ms`` (``connection.failed.authentication.delay.ms``)."""

    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]
    failed_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS


@dataclass(frozen=True)
class TlsListener:
    """An ``SSL`` or ``SASL_SSL`` listener's settings: ``keystore`` (a PEM file: key and certificate chain),
    ``key_password`` (None: the key is not encrypted), ``truststore`` (a PEM file of CAs, None: none) and
    ``client_auth`` (``none``, ``requested`` or ``required``)."""

    keystore: str
    key_password: str | None
    truststore: str | None
    client_auth: str = "none"


def security_of_listeners(props: dict[str, str], protocols: dict[str, str],
                          known: set[str]) -> tuple[dict[str, SaslListener], dict[str, TlsListener]]:
    """The SASL and TLS settings of each secured listener the node serves (``protocols``: listener name -> security
    protocol), after checking every listener-prefixed key names a listener the node serves or connects to
    (``known``) and a key kraftlog reads (the module doc)."""
    by_prefix = {name.lower(): name for name in sorted(known | set(protocols))}
    for key in sorted(props):
        if not key.startswith("listener.name."):
            continue
        listener, _, rest = key[len("listener.name."):].partition(".")
        if listener not in by_prefix:
            raise ValueError(f"{key}: no listener {listener.upper()} in listeners, controller.listener.names or "
                             "inter.broker.listener.name (the prefix is listener.name.<listener in lower case>.)")
        if rest not in LISTENER_KEYS:
            raise ValueError(f"{key}: unknown listener configuration {rest!r} (kraftlog reads "
                             f"{', '.join(sorted(LISTENER_KEYS))})")
    delay = _delay(props)
    sasl: dict[str, SaslListener] = {}
    tls: dict[str, TlsListener] = {}
    for name, protocol in protocols.items():
        if protocol == "PLAINTEXT":
            continue
        prefix = f"listener.name.{name.lower()}."
        if protocol.startswith("SASL_"):
            sasl[name] = _sasl(props, name, prefix, delay)
        if protocol.endswith("SSL"):
            tls[name] = _tls(props, name, prefix)
    return sasl, tls


def _get(props: dict[str, str], prefix: str, key: str, default: str | None = None) -> tuple[str, str | None]:
    """(the key that set it, its value): the listener's own key first, then the node's."""
    if prefix + key in props:
        return prefix + key, props[prefix + key].strip()
    return key, props[key].strip() if key in props else default


def _delay(props: dict[str, str]) -> int:
    text = props.get("connection.failed.authentication.delay.ms")
    if text is None:
        return DEFAULT_FAILED_AUTHENTICATION_DELAY_MS
    if not text.strip().isdigit() or int(text) > 2**31 - 1:
        raise ValueError(f"Invalid value {text} for configuration connection.failed.authentication.delay.ms: "
                         "must be an integer within 0..2147483647")
    return int(text)


def _sasl(props: dict[str, str], name: str, prefix: str, delay: int) -> SaslListener:
    key, text = _get(props, prefix, "sasl.enabled.mechanisms", "GSSAPI")
    mechanisms = tuple(dict.fromkeys(x.strip().upper() for x in (text or "").split(",") if x.strip()))
    unknown = [x for x in mechanisms if x not in MECHANISMS]
    if not mechanisms or unknown:
        raise ValueError(f"{key}: {', '.join(unknown) or 'no mechanism'} is not served for listener {name} "
                         f"(kraftlog serves {', '.join(MECHANISMS)})")
    users: dict[str, str] = {}
    if PLAIN in mechanisms:
        jaas = props.get(prefix + "plain.sasl.jaas.config")
        if jaas is None:
            raise ValueError(f"{prefix}plain.sasl.jaas.config is required: PLAIN is enabled on listener {name} and "
                             'its users are the user_<name>="<password>" entries')
        try:
            users = parse_plain_jaas_users(jaas)
        except ValueError as exc:
            raise ValueError(f"{prefix}plain.sasl.jaas.config: {exc}") from None
    return SaslListener(mechanisms, users, delay)


def _tls(props: dict[str, str], name: str, prefix: str) -> TlsListener:
    for store in ("keystore", "truststore"):
        key, kind = _get(props, prefix, f"ssl.{store}.type", "JKS")
        location_key, location = _get(props, prefix, f"ssl.{store}.location")
        if location is not None and (kind or "").upper() != "PEM":
            raise ValueError(f"{key}: {kind} is not served: kraftlog reads PEM files (set {key}=PEM; convert a JKS "
                             "or PKCS12 store with keytool and openssl)")
        if location is not None and not os.path.isfile(location):
            raise ValueError(f"{location_key}: {location} is not a readable file")
    keystore_key, keystore = _get(props, prefix, "ssl.keystore.location")
    if keystore is None:
        raise ValueError(f"ssl.keystore.location (or {prefix}ssl.keystore.location) is required: listener {name} "
                         "uses TLS")
    _, password = _get(props, prefix, "ssl.key.password")
    _, truststore = _get(props, prefix, "ssl.truststore.location")
    auth_key, client_auth = _get(props, prefix, "ssl.client.auth", "none")
    if client_auth not in _CLIENT_AUTH:
        raise ValueError(f"{auth_key}: {client_auth!r} is not one of {', '.join(_CLIENT_AUTH)}")
    if client_auth != "none" and truststore is None:
        raise ValueError(f"{auth_key}={client_auth} needs ssl.truststore.location (the CAs of client certificates)")
    rules_key, rules = _get(props, prefix, "ssl.principal.mapping.rules", "DEFAULT")
    if rules != "DEFAULT":
        raise ValueError(f"{rules_key}: only DEFAULT is served (the principal is the certificate's subject)")
    listener = TlsListener(keystore, password, truststore, client_auth or "none")
    try:
        server_context(listener)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ValueError(f"{keystore_key}: cannot load {keystore} as a PEM key and certificate chain: "
                         f"{getattr(exc, 'reason', None) or exc}") from None
    return listener


@dataclass(frozen=True)
class PeerSecurity:
    """How this node connects to another node's ``listener`` (the module doc): its security ``protocol``; for SASL
    the ``mechanism`` and this node's ``username`` / ``password``; for TLS the ``truststore`` (None: the system's
    CAs) and the ``keystore`` / ``key_password`` presented as a client certificate (None: none)."""

    listener: str
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    truststore: str | None = None
    keystore: str | None = None
    key_password: str | None = None

    def __repr__(self) -> str:  # never a password in a log line or a traceback
        return f"PeerSecurity({self.listener}, {self.protocol}, mechanism={self.mechanism}, user={self.username})"

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def client_context(self) -> ssl.SSLContext | None:
        """The client TLS context (TLS 1.2 or later; the peer's certificate and host name checked against the
        truststore), None for a protocol without TLS. OSError or ssl.SSLError when a file cannot be loaded."""
        if not self.protocol.endswith("SSL"):
            return None
        context = ssl.create_default_context(cafile=self.truststore)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.keystore is not None:
            context.load_cert_chain(self.keystore, password=self.key_password)
        return context


def peer_security(props: dict[str, str], listener: str, protocol: str, mechanism_key: str) -> PeerSecurity:
    """How this node connects to the other nodes' ``listener`` (security ``protocol``), its SASL mechanism named
    by ``mechanism_key`` (``sasl.mechanism.inter.broker.protocol`` or ``sasl.mechanism.controller.protocol``):
    the module doc. ValueError with one line naming the key."""
    prefix = f"listener.name.{listener.lower()}."
    mechanism = username = password = None
    if protocol.startswith("SASL_"):
        mechanism = props.get(mechanism_key, "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"{mechanism_key}: {mechanism} is not served (kraftlog speaks {', '.join(MECHANISMS)}); "
                             f"this node authenticates with it to the other nodes' {listener} listener")
        key = f"{prefix}{mechanism.lower()}.sasl.jaas.config"
        if key not in props:
            raise ValueError(f"{key} is required: this node authenticates to the other nodes' {listener} listener "
                             f"with {mechanism} as its username=\"...\" password=\"...\"")
        try:
            options = jaas_options(props[key])
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
        username, password = options.get("username"), options.get("password")
        if not username or password is None:
            raise ValueError(f"{key}: username=\"...\" and password=\"...\" are required (this node's own "
                             f"credentials on the {listener} listener)")
    truststore = keystore = key_password = None
    if protocol.endswith("SSL"):
        _, truststore = _get(props, prefix, "ssl.truststore.location")
        _, keystore = _get(props, prefix, "ssl.keystore.location")
        _, key_password = _get(props, prefix, "ssl.key.password")
    out = PeerSecurity(listener, protocol, mechanism, username, password, truststore, keystore, key_password)
    try:
        out.client_context()
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ValueError(f"{prefix}ssl.truststore.location / ssl.keystore.location: cannot load the files this node "
                         f"connects to the {listener} listener with: {getattr(exc, 'reason', None) or exc}") from None
    return out


def server_context(listener: TlsListener) -> ssl.SSLContext:
    """The server TLS context of ``listener``: TLS 1.2 or later, its key and certificate chain, and, with
    ``ssl.client.auth`` requested or required, its truststore's CAs for client certificates. OSError or
    ssl.SSLError when a file cannot be loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(listener.keystore, password=listener.key_password)
    if listener.truststore is not None:
        context.load_verify_locations(cafile=listener.truststore)
    context.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                           "required": ssl.CERT_REQUIRED}[listener.client_auth]
    return context


#: OpenSSL's long attribute names -> RFC 2253's short ones (those Java's X500Principal.getName() writes).
_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "localityName": "L",
          "stateOrProvinceName": "ST", "countryName": "C", "domainComponent": "DC", "streetAddress": "STREET",
          "userId": "UID"}


def principal_of_certificate(peercert: dict | None) -> str | None:
    """Kafka's DEFAULT ``ssl.principal.mapping.rules``: ``User:`` + the client certificate's subject as RFC 2253
    writes it (most specific first: ``CN=alice,O=kraftlog``), from ``ssl``'s ``getpeercert()``; None without one."""
    if not peercert or "subject" not in peercert:
        return None
    parts = []
    for rdn in reversed(peercert["subject"]):
        for attribute, value in rdn:
            text = str(value)
            for ch in ("\\", ",", "+", '"', "<", ">", ";", "="):
                text = text.replace(ch, "\\" + ch)
            parts.append(f"{_SHORT.get(attribute, attribute)}={text}")
    return "User:" + ",".join(parts)
