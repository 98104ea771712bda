"""A broker's static configuration as its components read it (a slice of Kafka's ``KafkaConfig``).

Values come from the node's static config (Kafka's names → strings), else Kafka's defaults
(:mod:`kraftlog.metadata.config`); durations and timeouts are ms, sizes bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..metadata import config as cfg
from ..protocol import messages as m


def parse_listeners(text: str) -> tuple[m.Listener, ...]:
    """Kafka's listener list ``"NAME://host:port,..."`` as Listener entries (PLAINTEXT); "" gives ().
    Raises ValueError for an entry that is not ``NAME://host:port``."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        if not sep or not name or not host or not port.isdigit():
            raise ValueError(f"listener {item!r} is not NAME://host:port")
        out.append(m.Listener(name, host, int(port)))
    return tuple(out)


@dataclass(slots=True, frozen=True)
class BrokerConfig:
    """The static timings and limits of one broker (Kafka's config names in the field docs)."""

    #: ``broker.heartbeat.interval.ms``
    heartbeat_interval_ms: int
    #: ``replica.lag.time.max.ms``
    lag_max_ms: int
    #: ``replica.fetch.wait.max.ms``
    fetch_wait_max_ms: int
    #: ``replica.fetch.backoff.ms``
    fetch_backoff_ms: int
    #: ``replica.socket.timeout.ms``
    replica_timeout_ms: int
    #: ``request.timeout.ms``
    request_timeout_ms: int
    #: ``replica.fetch.max.bytes``
    fetch_max_bytes: int
    #: ``replica.high.watermark.checkpoint.interval.ms``
    hwm_checkpoint_interval_ms: int
    #: ``metadata.max.idle.interval.ms``
    metadata_idle_ms: int
    #: ``log.dir.failure.timeout.ms`` (KIP-858)
    log_dir_failure_timeout_ms: int
    #: ``advertised.listeners``, parsed (:func:`parse_listeners`)
    advertised_listeners: tuple[m.Listener, ...]
    #: ``auto.create.topics.enable``
    auto_create_topics_enable: bool = True
    #: ``num.partitions`` (a topic this broker auto-creates)
    num_partitions: int = 1
    #: ``default.replication.factor`` (a topic this broker auto-creates)
    default_replication_factor: int = 1
    #: ``super.users``: principals exempt from the node identity rule (``protocol.listeners.node_identity_refusal``)
    super_users: frozenset[str] = frozenset()

    @classmethod
    def from_static(cls, static: dict[str, str]) -> BrokerConfig:
        """Read from the node's static config; raises ValueError for a malformed value."""
        def g(name: str) -> int:
            return int(cfg.lookup(name, static))
        return cls(
            heartbeat_interval_ms=g("broker.heartbeat.interval.ms"),
            lag_max_ms=g("replica.lag.time.max.ms"),
            fetch_wait_max_ms=g("replica.fetch.wait.max.ms"),
            fetch_backoff_ms=g("replica.fetch.backoff.ms"),
            replica_timeout_ms=g("replica.socket.timeout.ms"),
            request_timeout_ms=g("request.timeout.ms"),
            fetch_max_bytes=g("replica.fetch.max.bytes"),
            hwm_checkpoint_interval_ms=g("replica.high.watermark.checkpoint.interval.ms"),
            metadata_idle_ms=g("metadata.max.idle.interval.ms"),
            advertised_listeners=parse_listeners(cfg.lookup("advertised.listeners", static)),
            log_dir_failure_timeout_ms=g("log.dir.failure.timeout.ms"),
            auto_create_topics_enable=cfg.as_bool(cfg.lookup("auto.create.topics.enable", static)),
            num_partitions=g("num.partitions"),
            default_replication_factor=g("default.replication.factor"),
            super_users=cfg.parse_super_users(cfg.lookup("super.users", static)) or frozenset(),
        )
