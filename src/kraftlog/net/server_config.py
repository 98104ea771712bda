"""A node's ``server.properties`` as ``kraftlog server`` reads it: Kafka's KRaft node configuration, checked.

:func:`load_server_config` reads a properties file (``java.util.Properties`` text) and returns a
:class:`ServerConfig`, or raises :class:`ServerConfigError` with one line naming the key and the problem (the
CLI exits 2 with it). What it reads, with Kafka's names and rules (``KafkaConfig``'s KRaft validation):

* ``node.id`` (required, an int >= 0) and ``process.roles`` (``broker`` or ``controller``; the combined
  ``broker,controller`` is refused: kraftlog runs a broker and a controller as two processes, as Kafka
  recommends for production);
* ``listeners`` (``NAME://HOST:PORT``, an empty host binding every interface, ``[v6]`` in brackets),
  ``advertised.listeners`` (default: ``listeners``; a broker's controller listener is never advertised),
  ``listener.security.protocol.map`` (Kafka's default maps PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL to
  themselves, and, when the map is not given, each controller listener to PLAINTEXT, as Kafka's
  ``effectiveListenerSecurityProtocolMap``; every listener must be mapped; any listener may be SASL_PLAINTEXT,
  SSL or SASL_SSL, with the SASL and TLS keys :mod:`.listener_security` reads, and how the node authenticates to
  the other nodes' inter-broker and controller listeners: ``sasl.mechanism.inter.broker.protocol``,
  ``sasl.mechanism.controller.protocol`` and the listeners' JAAS ``username`` / ``password``),
  ``controller.listener.names`` (required: a controller listens on the first one; a broker must not list it in
  ``listeners``), ``inter.broker.listener.name`` (default ``PLAINTEXT``; must be a broker listener);
* ``controller.quorum.voters`` (``ID@HOST:PORT,...``, static voters, kraft.version 0): a controller must be
  in it with the host and port of its own controller listener, a broker must not; or, without it,
  ``controller.quorum.bootstrap.servers`` (``HOST:PORT,...``, KIP-853's dynamic quorum, kraft.version 1: the
  voters are in the bootstrap checkpoint ``storage format`` wrote and in the log; the servers are where a node
  asks first, and an answer names the leader's endpoint);
* ``log.dirs`` (or ``log.dir``): one directory (kraftlog's broker has one log directory, see the JBOD
  rules in the README), ``metadata.log.dir`` (a controller's directory; a broker's must be its log
  directory); a relative directory is taken from the working directory, as Kafka does),
  ``metrics.port`` (the ``/metrics`` endpoint, on the host of the node's first listener),
  ``kraftlog.level`` (the protocol level, ``classic|kip903|elr|urm``: the same on every node),
  ``kraftlog.controller.single`` (true: the one voter runs kraftlog's single controller, no Raft; what
  ``kraftlog cluster up --controllers 1`` writes, :mod:`kraftlog.net.cluster_properties`);
* every broker and topic default kraftlog knows (:data:`kraftlog.metadata.config.KNOWN_CONFIGS`, checked with
  Kafka's types and bounds) and the ``log.*`` logging keys (:mod:`kraftlog.net.node_logging`).

An unknown key is refused with its name and the closest known one.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

from ..level import DEFAULT, Level
from ..metadata import config as cfg
from ..storage.meta_properties import load_properties
from .listener_security import (
    LISTENER_KEYS,
    PeerSecurity,
    SaslListener,
    TlsListener,
    peer_security,
    security_of_listeners,
)
from .node_logging import LOG_CONFIGS

__all__ = ["ServerConfig", "ServerConfigError", "Endpoint", "load_server_config", "parse_server_config",
           "parse_endpoint", "parse_voters", "SERVER_KEYS", "BROKER", "CONTROLLER_ROLE", "SINGLE_CONTROLLER_KEY",
           "config_problem", "SaslListener", "TlsListener", "LISTENER_KEYS"]

BROKER = "broker"
CONTROLLER_ROLE = "controller"

#: Kafka's default ``listener.security.protocol.map`` (each security protocol's name maps to itself).
DEFAULT_PROTOCOL_MAP = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                        "SASL_SSL": "SASL_SSL"}
#: The security protocols kraftlog serves (on a broker's client listener: see :mod:`.listener_security`).
SERVED_PROTOCOLS = frozenset({"PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"})

#: The keys of a node's own configuration (the rest are broker and topic defaults: ``KNOWN_CONFIGS``).
SERVER_KEYS: frozenset[str] = frozenset({
    "node.id", "process.roles", "listeners", "advertised.listeners", "listener.security.protocol.map",
    "controller.listener.names", "inter.broker.listener.name", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "log.dirs", "log.dir", "metadata.log.dir", "metrics.port",
    "kraftlog.level", "security.inter.broker.protocol", "kraftlog.controller.single", "sasl.enabled.mechanisms",
    "connection.failed.authentication.delay.ms", "ssl.keystore.type", "ssl.keystore.location", "ssl.key.password",
    "ssl.keystore.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.client.auth", "ssl.principal.mapping.rules", "sasl.mechanism.inter.broker.protocol",
    "sasl.mechanism.controller.protocol",
})
#: kraftlog's single controller (no Raft; ``cluster up --controllers 1``): the one voter of
#: ``controller.quorum.voters`` runs it, and the brokers know it as ``controller``.
SINGLE_CONTROLLER_KEY = "kraftlog.controller.single"


class ServerConfigError(ValueError):
    """A properties file kraftlog cannot run a node from; the message is one line naming the key."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: its ``name`` (``listeners``' NAME), ``host`` ("" binds every interface) and ``port``
    (0: a free one), and its security protocol."""

    name: str
    host: str
    port: int
    protocol: str = "PLAINTEXT"

    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class ServerConfig:
    """A checked ``server.properties``: what one node binds, advertises, stores and runs with.

    ``node_id``; ``roles``: ``("broker",)`` or ``("controller",)``; ``listeners``: by name, in file order;
    ``advertised``: a broker's advertised endpoints by listener name (a controller advertises nothing);
    ``controller_listener``: the first of ``controller.listener.names``; ``inter_broker_listener``: a
    broker's listener for replica fetches; ``voters``: node id -> (host, port) of
    ``controller.quorum.voters`` ({} for a dynamic quorum); ``bootstrap_servers``: (host, port) of
    ``controller.quorum.bootstrap.servers`` when there are no static voters, else (); ``data_dir``: the node's
    directory (absolute); ``metrics_port``: None for
    no endpoint; ``level``; ``config``: the broker/topic defaults and ``log.*`` keys, as strings, for the
    node's core; ``source``: the file read."""

    node_id: int
    roles: tuple[str, ...]
    listeners: dict[str, Endpoint]
    advertised: dict[str, Endpoint]
    controller_listener: str
    inter_broker_listener: str | None
    voters: dict[int, tuple[str, int]]
    bootstrap_servers: tuple[tuple[str, int], ...]
    #: ``kraftlog.controller.single``: the one voter is kraftlog's single controller, not a Raft quorum
    single_controller: bool
    data_dir: str
    metrics_port: int | None
    level: Level
    config: dict[str, str] = field(default_factory=dict)
    source: str = ""
    #: listener name -> its SASL settings, for each ``SASL_PLAINTEXT`` or ``SASL_SSL`` listener
    sasl: dict[str, SaslListener] = field(default_factory=dict)
    #: listener name -> its TLS settings, for each ``SSL`` or ``SASL_SSL`` listener
    tls: dict[str, TlsListener] = field(default_factory=dict)
    #: how this node connects to the controllers' listener (``controller.listener.names``' first)
    controller_peer: PeerSecurity = field(default_factory=lambda: PeerSecurity("CONTROLLER"))
    #: how this node connects to the brokers' inter-broker listener
    inter_broker_peer: PeerSecurity = field(default_factory=lambda: PeerSecurity("PLAINTEXT"))

    @property
    def dynamic_quorum(self) -> bool:
        """KIP-853's dynamic quorum (kraft.version 1): no static voters, bootstrap servers instead."""
        return not self.voters

    @property
    def is_controller(self) -> bool:
        return CONTROLLER_ROLE in self.roles

    @property
    def name(self) -> str:
        """``controller-<id>``, ``broker-<id>`` or ``controller`` (the single controller): the node's client id
        and the name in its log lines."""
        if self.is_controller and self.single_controller:
            return CONTROLLER_ROLE
        return f"{CONTROLLER_ROLE if self.is_controller else BROKER}-{self.node_id}"

    def client_listener(self) -> str | None:
        """A broker's listener for clients: the first that is not the inter-broker one, else that one."""
        others = [n for n in self.listeners if n != self.inter_broker_listener]
        return others[0] if others else self.inter_broker_listener


def load_server_config(path: str) -> ServerConfig:
    """:func:`parse_server_config` of the file at ``path``; ServerConfigError when it cannot be read."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("latin-1")  # java.util.Properties.load reads ISO 8859-1
    except OSError as exc:
        raise ServerConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return parse_server_config(text, path)


def parse_endpoint(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; an empty host allowed) as (host, port); ServerConfigError naming ``what``."""
    host, sep, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not port.isascii() or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ServerConfigError(f"{what}: {text.strip()!r} is not HOST:PORT with a port within 0..65535")
    return host, int(port)


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters``: ``ID@HOST:PORT,...`` as {id: (host, port)}; ServerConfigError otherwise."""
    voters: dict[int, tuple[str, int]] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        ident, sep, rest = item.partition("@")
        if not sep or not ident.isascii() or not ident.isdigit():
            raise ServerConfigError(f"controller.quorum.voters: {item!r} is not ID@HOST:PORT")
        host, port = parse_endpoint(rest, "controller.quorum.voters")
        if not host or port == 0:
            raise ServerConfigError(f"controller.quorum.voters: {item!r} needs a host and a port")
        if int(ident) in voters:
            raise ServerConfigError(f"controller.quorum.voters: voter {int(ident)} is named twice")
        voters[int(ident)] = (host, port)
    return voters


def _listeners(text: str, key: str, protocols: dict[str, str]) -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, rest = item.partition("://")
        if not sep or not name:
            raise ServerConfigError(f"{key}: {item!r} is not NAME://HOST:PORT")
        name = name.upper()
        if name in out:
            raise ServerConfigError(f"{key}: listener {name} is named twice")
        if name not in protocols:
            raise ServerConfigError(f"{key}: no security protocol for listener {name} in "
                                    "listener.security.protocol.map")
        host, port = parse_endpoint(rest, key)
        out[name] = Endpoint(name, host, port, protocols[name])
    return out


def _names(text: str) -> list[str]:
    return [s.strip().upper() for s in text.split(",") if s.strip()]


def _int(props: dict[str, str], key: str, minimum: int, maximum: int) -> int | None:
    value = props.get(key)
    if value is None:
        return None
    text = value.strip()
    if not text.lstrip("-").isascii() or not text.lstrip("-").isdigit() or not minimum <= int(text) <= maximum:
        raise ServerConfigError(f"Invalid value {value} for configuration {key}: must be an integer within "
                                f"{minimum}..{maximum}")
    return int(text)


def _protocol_map(props: dict[str, str]) -> dict[str, str]:
    text = props.get("listener.security.protocol.map")
    if text is None:
        return dict(DEFAULT_PROTOCOL_MAP)
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or not name.strip() or proto.strip().upper() not in DEFAULT_PROTOCOL_MAP:
            raise ServerConfigError(f"listener.security.protocol.map: {item!r} is not LISTENER:PROTOCOL with "
                                    f"PROTOCOL one of {', '.join(DEFAULT_PROTOCOL_MAP)}")
        out[name.strip().upper()] = proto.strip().upper()
    return out


#: What a node's file may set beside its own keys: broker and topic defaults, the logging keys.
_DEFAULT_KEYS: frozenset[str] = cfg.KNOWN_CONFIGS | frozenset(LOG_CONFIGS)


def config_problem(key: str, value: str) -> str | None:
    """None when ``key=value`` may stand in a node's file as a broker or topic default or a logging key (what
    ``cluster up --config`` passes to every node), else the one-line problem (an unknown key with the closest known
    one, a value of the wrong type or range)."""
    if key in SERVER_KEYS or key not in _DEFAULT_KEYS:
        known = sorted(_DEFAULT_KEYS | SERVER_KEYS)
        close = difflib.get_close_matches(key, known, n=1)
        if key in SERVER_KEYS:
            return f"{key} is a node's own key, not a cluster config"
        return f"unknown configuration {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    return cfg.invalid_value(key, value.strip()) if key in cfg.KNOWN_CONFIGS else None


def _check_keys(props: dict[str, str]) -> dict[str, str]:
    """The broker/topic defaults and log keys of ``props``, checked; ServerConfigError for an unknown key."""
    config: dict[str, str] = {}
    for key in sorted(props):
        if key in SERVER_KEYS or key.startswith("listener.name."):
            continue
        problem = config_problem(key, props[key])
        if problem is not None:
            raise ServerConfigError(problem)
        config[key] = props[key].strip()
    return config


def parse_server_config(text: str, source: str = "server.properties") -> ServerConfig:
    """Check properties ``text`` as a KRaft node's configuration (the module doc); ServerConfigError with one
    line naming the key and the problem."""
    try:
        props = {k.strip(): v for k, v in load_properties(text).items()}
    except ValueError as exc:
        raise ServerConfigError(f"not a properties file: {exc}") from None
    config = _check_keys(props)
    node_id = _int(props, "node.id", 0, 2**31 - 1)
    if node_id is None:
        raise ServerConfigError('Missing required configuration "node.id" which has no default value')
    roles_text = props.get("process.roles")
    if roles_text is None:
        raise ServerConfigError('Missing required configuration "process.roles" (broker or controller)')
    roles = tuple(sorted({r.strip().lower() for r in roles_text.split(",") if r.strip()}))
    if not roles or set(roles) - {BROKER, CONTROLLER_ROLE}:
        raise ServerConfigError(f"process.roles: {roles_text!r} is not broker or controller")
    if len(roles) == 2:
        raise ServerConfigError("process.roles: broker,controller (combined mode) is not served: run the broker "
                                "and the controller as two processes with their own node.id")
    controller = roles == (CONTROLLER_ROLE,)
    sip = props.get("security.inter.broker.protocol", "PLAINTEXT").strip().upper()
    if sip not in SERVED_PROTOCOLS:
        raise ServerConfigError(f"security.inter.broker.protocol: {sip} is not a security protocol")
    protocols = _protocol_map(props)
    controller_names = _names(props.get("controller.listener.names", ""))
    if "listener.security.protocol.map" not in props:  # Kafka's effectiveListenerSecurityProtocolMap
        for name in controller_names:
            protocols.setdefault(name, "PLAINTEXT")
    if "listeners" not in props:
        raise ServerConfigError('Missing required configuration "listeners" (NAME://HOST:PORT,...)')
    listeners = _listeners(props["listeners"], "listeners", protocols)
    if not listeners:
        raise ServerConfigError("listeners: no listener")
    for ep in listeners.values():
        if ep.protocol not in SERVED_PROTOCOLS:
            raise ServerConfigError(f"listeners: listener {ep.name} uses {ep.protocol}, which kraftlog does not "
                                    "serve")
    if not controller_names:
        raise ServerConfigError("controller.listener.names must contain at least one value")
    if controller:
        if controller_names[0] not in listeners:
            raise ServerConfigError(f"controller.listener.names: {controller_names[0]} must appear in listeners "
                                    "when process.roles=controller")
        extra = [n for n in listeners if n not in controller_names]
        if extra:
            raise ServerConfigError(f"listeners: {', '.join(extra)} is not in controller.listener.names: a "
                                    "controller listens only on its controller listeners")
        if len(listeners) > 1:
            raise ServerConfigError(f"listeners: a controller serves one controller listener, got "
                                    f"{', '.join(listeners)}")
        inter = None
        advertised: dict[str, Endpoint] = {}
    else:
        clash = [n for n in listeners if n in controller_names]
        if clash:
            raise ServerConfigError(f"controller.listener.names must not contain a value appearing in listeners "
                                    f"when process.roles=broker ({', '.join(clash)})")
        inter = props.get("inter.broker.listener.name", sip).strip().upper()
        if inter not in listeners:
            raise ServerConfigError(f"inter.broker.listener.name: {inter} is not one of the listeners "
                                    f"({', '.join(listeners)})")
        if len(listeners) > 2:
            raise ServerConfigError("listeners: a kraftlog broker serves one client listener and the inter-broker "
                                    f"one, got {', '.join(listeners)}")
        advertised = dict(listeners)
        if "advertised.listeners" in props:
            given = _listeners(props["advertised.listeners"], "advertised.listeners", protocols)
            unknown = [n for n in given if n not in listeners]
            if unknown:
                raise ServerConfigError(f"advertised.listeners: {', '.join(unknown)} is not in listeners")
            advertised.update(given)
    voters = parse_voters(props.get("controller.quorum.voters", "").strip())
    servers = props.get("controller.quorum.bootstrap.servers", "").split(",")
    bootstrap = tuple(parse_endpoint(item, "controller.quorum.bootstrap.servers")
                      for item in filter(None, (x.strip() for x in servers)))
    if any(not host or port == 0 for host, port in bootstrap):
        raise ServerConfigError("controller.quorum.bootstrap.servers: each server needs a host and a port")
    if not voters and not bootstrap:
        raise ServerConfigError('Missing required configuration "controller.quorum.voters" (static voters, '
                                'ID@HOST:PORT,...) or "controller.quorum.bootstrap.servers" (dynamic, HOST:PORT,...)')
    if not voters:
        pass  # KIP-853's dynamic quorum: the voters are in the bootstrap checkpoint and the log
    elif controller:
        if node_id not in voters:
            raise ServerConfigError(f"controller.quorum.voters: the node id {node_id} must be in the voters "
                                    f"({', '.join(map(str, sorted(voters)))}) when process.roles=controller")
        own = listeners[controller_names[0]]
        vhost, vport = voters[node_id]
        if vport != own.port or (own.host and vhost != own.host):
            raise ServerConfigError(f"controller.quorum.voters: voter {node_id}@{vhost}:{vport} is not this node's "
                                    f"controller listener {own.name}://{own.address()}")
    elif node_id in voters:
        raise ServerConfigError(f"controller.quorum.voters: the node id {node_id} must not be in the voters when "
                                "process.roles=broker")
    dirs = [d.strip() for d in props.get("log.dirs", props.get("log.dir", "")).split(",") if d.strip()]
    if not dirs:
        raise ServerConfigError('Missing required configuration "log.dirs" (the node\'s data directory)')
    if len(dirs) > 1:
        raise ServerConfigError(f"log.dirs: kraftlog's broker has one log directory, got {len(dirs)} (JBOD is not "
                                "served)")
    meta_dir = props.get("metadata.log.dir", "").strip()
    data_dir = dirs[0]
    if meta_dir:
        if controller:
            data_dir = meta_dir
        elif os.path.abspath(meta_dir) != os.path.abspath(dirs[0]):
            raise ServerConfigError("metadata.log.dir: a kraftlog broker keeps its metadata log in its log "
                                    f"directory ({dirs[0]}), not {meta_dir}")
    single = props.get(SINGLE_CONTROLLER_KEY, "false").strip().lower()
    if single not in ("true", "false"):
        raise ServerConfigError(f"{SINGLE_CONTROLLER_KEY}: {single!r} is not true or false")
    if single == "true" and len(voters) != 1:
        raise ServerConfigError(f"{SINGLE_CONTROLLER_KEY}=true needs exactly one voter in controller.quorum.voters")
    # the inter-broker listener a controller reaches brokers on (KIP-966's GetReplicaLogInfo): Kafka's default names
    peer_inter = inter or props.get("inter.broker.listener.name", sip).strip().upper()
    try:
        sasl, tls = security_of_listeners(props, {n: ep.protocol for n, ep in listeners.items()},
                                          {*controller_names, peer_inter})
        controller_peer = peer_security(props, controller_names[0], protocols.get(controller_names[0], "PLAINTEXT"),
                                        "sasl.mechanism.controller.protocol")
        inter_peer = peer_security(props, peer_inter, protocols.get(peer_inter, "PLAINTEXT"),
                                   "sasl.mechanism.inter.broker.protocol")
    except ValueError as exc:
        raise ServerConfigError(str(exc)) from None
    metrics_port = _int(props, "metrics.port", 0, 65535)
    try:
        level = Level.parse(props["kraftlog.level"]) if "kraftlog.level" in props else DEFAULT
    except ValueError as exc:
        raise ServerConfigError(f"kraftlog.level: {exc}") from None
    return ServerConfig(node_id=node_id, roles=roles, listeners=listeners, advertised=advertised,
                        controller_listener=controller_names[0], inter_broker_listener=inter, voters=voters,
                        bootstrap_servers=() if voters else bootstrap, single_controller=single == "true",
                        data_dir=os.path.abspath(os.path.expanduser(data_dir)), metrics_port=metrics_port,
                        level=level, config=config, source=source, sasl=sasl, tls=tls,
                        controller_peer=controller_peer, inter_broker_peer=inter_peer)

