"""Kafka configuration names, defaults and resolution.

Broker/controller configs come from a node's static config (``cluster.config`` in a scenario) and
from dynamic cluster-default configs (ConfigRecord on resource ``(BROKER, "")``); topic configs
(ConfigRecord on ``(TOPIC, name)``) override them for the names Kafka lets topics override.
Durations are ms (ints); booleans are the strings ``"true"``/``"false"`` as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Kafka's defaults for the configs kraftlog uses (Kafka 4.x values).
DEFAULTS: dict[str, str] = {
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "unclean.leader.election.interval.ms": "300000",  # the controller's periodic unclean-election task
    "unclean.recovery.strategy": "Balanced",
    "unclean.recovery.manager.enabled": "true",
    "unclean.recovery.timeout.ms": "300000",
    "max.request.partition.size.limit": "2000",
    "replica.lag.time.max.ms": "30000",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.min.bytes": "1",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.backoff.ms": "1000",
    "replica.socket.timeout.ms": "30000",
    "replica.high.watermark.checkpoint.interval.ms": "5000",
    "request.timeout.ms": "30000",
    "log.flush.interval.messages": "",  # empty: never (Kafka: Long.MAX_VALUE)
    "log.flush.interval.ms": "",  # empty: never (Kafka: null)
    "metadata.max.idle.interval.ms": "500",
    "default.replication.factor": "1",
    "num.partitions": "1",
    # Kafka's delete.topic.enable (a boolean): false makes the controller answer DeleteTopics with
    # TOPIC_DELETION_DISABLED (ControllerApis.deleteTopics).
    "delete.topic.enable": "true",
    # The real cluster (net/): a broker's endpoints, Kafka's "NAME://host:port,..." (empty in the
    # simulator, whose nodes need none).
    "advertised.listeners": "",
    # The classic group coordinator (Kafka's group.* broker configs).
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.max.size": "2147483647",
}

#: Broker config name -> the topic-level name that overrides it (Kafka's synonyms).
TOPIC_SYNONYMS: dict[str, str] = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "unclean.recovery.strategy": "unclean.recovery.strategy",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
}

#: Every config name a scenario or AlterConfigs may set (broker names and topic-level names).
KNOWN_CONFIGS: frozenset[str] = frozenset(DEFAULTS) | frozenset(TOPIC_SYNONYMS.values())


def lookup(name: str, *layers: Mapping[str, str] | None) -> str:
    """The value of broker config ``name`` from the first layer that sets it, else Kafka's default.

    Raises KeyError for a name kraftlog does not know."""
    for layer in layers:
        if layer and name in layer:
            return str(layer[name])
    return DEFAULTS[name]


def as_int(value: str) -> int | None:
    """An int config value; the empty string (unset) gives None."""
    value = str(value).strip()
    return None if value == "" else int(value)


def as_bool(value: str) -> bool:
    """Kafka boolean: ``"true"``/``"false"`` (case-insensitive)."""
    return str(value).strip().lower() == "true"
