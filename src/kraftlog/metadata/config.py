"""Kafka configuration names, defaults and resolution.

Broker/controller configs come from a node's static config (``cluster.config`` in a scenario) and
from dynamic cluster-default configs (ConfigRecord on resource ``(BROKER, "")``); topic configs
(ConfigRecord on ``(TOPIC, name)``) override them for the names Kafka lets topics override.
Durations are ms (ints); booleans are the strings ``"true"``/``"false"`` as in Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from ..level import Level

#: Kafka's defaults for the configs kraftlog uses (Kafka 4.x values).
DEFAULTS: dict[str, str] = {
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "unclean.leader.election.interval.ms": "300000",  # the controller's periodic unclean-election task
    # KIP-966 part 2 (level urm). The KIP's default for unclean.recovery.manager.enabled is false; level
    # urm exists to turn the manager on, so kraftlog's default is true (false: urm behaves as elr).
    "unclean.recovery.strategy": "Balanced",
    "unclean.recovery.manager.enabled": "true",
    "unclean.recovery.timeout.ms": "300000",
    # Kafka's default (DescribeTopicPartitions' page limit). ElectLeaders v3 serves the first 1,000
    # partitions of a request (KIP-966) unless this is set explicitly: ELECT_LEADERS_PARTITION_LIMIT.
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
    # KIP-858: a broker that cannot tell the controller of a failed log directory within this many ms
    # (no heartbeat answered since) stops.
    "log.dir.failure.timeout.ms": "30000",
    "log.flush.interval.messages": "",  # empty: never (Kafka: Long.MAX_VALUE)
    # empty: unset (Kafka: null), so flush.ms falls back to log.flush.scheduler.interval.ms (SYNONYM_FALLBACKS)
    "log.flush.interval.ms": "",
    # How often the flush scheduler checks flush.ms (Kafka's LogManager "kafka-log-flusher"); Kafka's default
    # Long.MAX_VALUE: never, so by default no log is flushed by time.
    "log.flush.scheduler.interval.ms": "9223372036854775807",
    # Segmented storage (Kafka's ServerLogConfigs; topic names in TOPIC_SYNONYMS). "" = unset (Kafka: null):
    # the next synonym of SYNONYM_FALLBACKS is used.
    "log.segment.bytes": "1073741824",
    "log.roll.ms": "",
    "log.roll.hours": "168",
    "log.roll.jitter.ms": "",
    "log.roll.jitter.hours": "0",
    "log.index.size.max.bytes": "10485760",
    "log.index.interval.bytes": "4096",
    "log.retention.bytes": "-1",
    "log.retention.ms": "",
    "log.retention.minutes": "",
    "log.retention.hours": "168",
    # How often retention runs (Kafka's "kafka-log-retention" task) and the log manager's checkpoints of
    # recovery points and log start offsets are written.
    "log.retention.check.interval.ms": "300000",
    # How long a segment retention deleted stays on disk before its file is removed (Kafka renames it .deleted
    # and removes it after this delay; reads already under way finish).
    "log.segment.delete.delay.ms": "60000",
    # How long the idempotent-producer state of a producer outlives its last batch (Kafka's
    # TransactionLogConfigs), and how often expired producers are removed.
    "producer.id.expiration.ms": "86400000",
    "producer.id.expiration.check.interval.ms": "600000",
    # Kafka's LogManager InitialTaskDelayMs: its periodic tasks first run this long after start ("for testing").
    "log.initial.task.delay.ms": "30000",
    # Compaction (Kafka's CleanerConfig and ServerLogConfigs; topic names in TOPIC_SYNONYMS). cleanup.policy is a
    # comma-separated list of delete and compact.
    "log.cleanup.policy": "delete",
    "log.cleaner.min.cleanable.ratio": "0.5",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.cleaner.max.compaction.lag.ms": "9223372036854775807",
    "log.cleaner.delete.retention.ms": "86400000",
    # The cleaner itself (static): whether it runs, how long it waits when no log needs cleaning, the memory of
    # its key -> offset map (Kafka's SkimpyOffsetMap: 24 bytes an entry, filled to log.cleaner.io.buffer.load.factor)
    # and its throttle (bytes read + written per second; Kafka's default Double.MAX_VALUE: none).
    "log.cleaner.enable": "true",
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.dedupe.buffer.size": "134217728",
    "log.cleaner.io.buffer.load.factor": "0.9",
    "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
    # kraftlog's own: the bytes of batches one slice of a cleaning reads before the node handles requests again
    # (Kafka's cleaner is a thread; kraftlog's runs between requests, in slices).
    "kraftlog.log.cleaner.slice.bytes": "65536",
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "log.flush.start.offset.checkpoint.interval.ms": "60000",
    "metadata.max.idle.interval.ms": "500",
    "default.replication.factor": "1",
    "num.partitions": "1",
    # A Metadata request naming a topic that does not exist creates it (with num.partitions and
    # default.replication.factor) when the client allows it (Kafka's KafkaApis / AutoTopicCreationManager).
    "auto.create.topics.enable": "true",
    # Kafka's delete.topic.enable (a boolean): false makes the controller answer DeleteTopics with
    # TOPIC_DELETION_DISABLED (ControllerApis.deleteTopics).
    "delete.topic.enable": "true",
    # The real cluster (net/): a broker's endpoints, Kafka's "NAME://host:port,..." (empty in the
    # simulator, whose nodes need none).
    "advertised.listeners": "",
    # The listeners' bounds (net/listener_limits.py's ListenerLimits; static, read at start). Kafka's names and
    # meanings; kraftlog's defaults are bounded where Kafka's are not (Kafka: queued.max.request.bytes -1,
    # max.connections and max.connections.per.ip 2147483647, no deadline for receiving a request).
    "socket.request.max.bytes": "104857600",
    "queued.max.request.bytes": "268435456",
    "max.connections": "1000",
    "max.connections.per.ip": "1000",
    "connections.max.idle.ms": "600000",
    "kraftlog.request.receive.timeout.ms": "30000",
    # A controller quorum (Kafka's QuorumConfig; static, read at start by the controllers and the brokers'
    # Raft observers): raft/config.py reads them.
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.election.backoff.max.ms": "1000",
    "controller.quorum.request.timeout.ms": "2000",
    "controller.quorum.retry.backoff.ms": "20",
    "controller.quorum.append.linger.ms": "25",
    "controller.quorum.auto.join.enable": "false",
    # The metadata log's segments, retention and snapshots (Kafka's MetadataLogConfig and the SnapshotGenerator's
    # configs; static, read at start by the controller and by each broker for its local copy).
    "metadata.log.segment.bytes": "1073741824",
    "metadata.log.segment.ms": "604800000",
    "metadata.max.retention.bytes": "104857600",
    "metadata.max.retention.ms": "604800000",
    "metadata.log.max.record.bytes.between.snapshots": "20971520",
    "metadata.log.max.snapshot.interval.ms": "3600000",
    # kraftlog's own: how often the metadata log is cleaned by retention (Kafka's RaftMetadataLogCleanerManager runs
    # every 60 s and has no config); stories that cross snapshots in seconds set it lower.
    "kraftlog.metadata.log.cleanup.interval.ms": "60000",
    # The classic group coordinator (Kafka's group.* broker configs).
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.max.size": "2147483647",
    # The group coordinator's storage, __consumer_offsets (Kafka's GroupCoordinatorConfig names and defaults).
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.segment.bytes": "104857600",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offsets.commit.timeout.ms": "5000",
    # What a producer may append (Kafka's LogValidator / UnifiedLog.analyzeAndValidateRecords): the
    # largest batch in bytes (Kafka's default: 1 MiB + LOG_OVERHEAD) and how far a record's CreateTime may
    # lie before / after the broker's clock (Kafka 4.x: unbounded, i.e. Long.MAX_VALUE, and 1 hour).
    "message.max.bytes": "1048588",
    "log.message.timestamp.before.max.ms": "9223372036854775807",
    "log.message.timestamp.after.max.ms": "3600000",
    # Kafka's super.users (static, read at start): principals (`User:<name>`, `;`-separated) every authorization
    # rule lets through; in kraftlog, the node identity rule of a secured cluster (protocol/listeners.py).
    "super.users": "",
}

#: Broker config name -> the topic-level name that overrides it (Kafka's synonyms).
TOPIC_SYNONYMS: dict[str, str] = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "unclean.recovery.strategy": "unclean.recovery.strategy",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.retention.bytes": "retention.bytes",
    "log.retention.ms": "retention.ms",
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
}

#: A topic config's further broker synonyms after its first (TOPIC_SYNONYMS' key), in Kafka's order of
#: precedence (``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``), each with the factor that turns its
#: value into the first one's unit (hours and minutes to ms). The first synonym set wins, whichever layer
#: (dynamic cluster default or static config) sets it, as Kafka merges the layers before reading them.
SYNONYM_FALLBACKS: dict[str, tuple[tuple[str, int], ...]] = {
    "log.roll.ms": (("log.roll.hours", 3_600_000),),
    "log.roll.jitter.ms": (("log.roll.jitter.hours", 3_600_000),),
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.flush.interval.ms": (("log.flush.scheduler.interval.ms", 1),),
}

#: Every config name a scenario or AlterConfigs may set (broker names and topic-level names).
KNOWN_CONFIGS: frozenset[str] = frozenset(DEFAULTS) | frozenset(TOPIC_SYNONYMS.values())


#: Configs that exist only from a protocol level up, with the level that brings them. As a Kafka
#: version refuses a config name it does not define (INVALID_CONFIG, "Unknown topic config name"),
#: a controller below that level refuses them in CreateTopics and IncrementalAlterConfigs, and a
#: scenario file that declares a lower ``level:`` is refused. KIP-966 part 2's configs come with ``urm``
#: (Kafka never shipped them).
CONFIG_LEVELS: dict[str, Level] = {
    "unclean.recovery.strategy": Level.URM,
    "unclean.recovery.manager.enabled": Level.URM,
    "unclean.recovery.timeout.ms": Level.URM,
}


def unknown_at_level(name: str, level: Level) -> str | None:
    """None when config ``name`` exists at ``level`` (:data:`CONFIG_LEVELS`; every other known name
    exists at every level), else the message an INVALID_CONFIG answer or a scenario file error carries,
    e.g. ``Unknown config name unclean.recovery.strategy at level elr: it comes with level urm``."""
    needed = CONFIG_LEVELS.get(name)
    if needed is None or level >= needed:
        return None
    return f"Unknown config name {name} at level {level.label}: it comes with level {needed.label}"


#: KIP-966: "Limit: 1000 partitions per request" for ElectLeaders v3 -- its default for
#: ``max.request.partition.size.limit``, whose Kafka default (2000) is DescribeTopicPartitions'.
ELECT_LEADERS_PARTITION_LIMIT = 1000

#: KIP-966's ``unclean.recovery.strategy`` values (Kafka's spelling; compared case-insensitively).
UNCLEAN_RECOVERY_STRATEGIES: tuple[str, ...] = ("None", "Balanced", "Aggressive")


def _is_bool(value: str) -> bool:
    return str(value).strip().lower() in ("true", "false")


def _is_int(value: str, minimum: int) -> bool:
    try:
        return int(str(value).strip()) >= minimum
    except ValueError:
        return False


#: Config name (broker or topic-level) -> (check(value) -> ok, what a valid value is): the configs level
#: urm brought, with the messages scenario files have always had for them.
_VALIDATORS: dict[str, tuple[Callable[[str], bool], str]] = {
    "unclean.recovery.strategy": (
        lambda v: parse_strategy(v) is not None, "one of None, Balanced, Aggressive"),
    "unclean.recovery.manager.enabled": (_is_bool, "true or false"),
    "unclean.recovery.timeout.ms": (lambda v: _is_int(v, 1), "an integer number of ms >= 1"),
    "max.request.partition.size.limit": (lambda v: _is_int(v, 1), "an integer >= 1"),
    # Kafka's ValidList.in("compact", "delete"): a comma-separated list of the two policies
    "cleanup.policy": (lambda v: parse_cleanup_policy(v) is not None, "a list of compact and delete"),
    "log.cleanup.policy": (lambda v: parse_cleanup_policy(v) is not None, "a list of compact and delete"),
    "super.users": (lambda v: parse_super_users(v) is not None, "a ;-separated list of principals User:<name>"),
}

_INT = "INT"
_LONG = "LONG"
_BOOLEAN = "BOOLEAN"
_STRING = "STRING"
_DOUBLE = "DOUBLE"
_BOUNDS = {_INT: (-(1 << 31), (1 << 31) - 1), _LONG: (-(1 << 63), (1 << 63) - 1)}
_NUMBER = re.compile(r"[+-]?[0-9]+")

#: Every other config's Kafka type and lower bound (Kafka's ``ConfigDef``: KafkaConfig, ServerLogConfigs,
#: LogConfig, ReplicationConfigs, GroupCoordinatorConfig), and whether "" (kraftlog's "unset", for the
#: configs whose Kafka default is null or "never") is allowed. A topic-level name has its broker name's
#: type; ``log.flush.interval.ms`` takes ``flush.ms``'s lower bound 0 and
#: ``unclean.leader.election.interval.ms`` the bound 1, which Kafka's broker names lack.
_TYPES: dict[str, tuple[str, int | None, bool]] = {
    "min.insync.replicas": (_INT, 1, False),
    "controller.quorum.election.timeout.ms": (_INT, 0, False),
    "controller.quorum.fetch.timeout.ms": (_INT, 0, False),
    "controller.quorum.election.backoff.max.ms": (_INT, 0, False),
    "controller.quorum.request.timeout.ms": (_INT, 0, False),
    "controller.quorum.retry.backoff.ms": (_INT, 0, False),
    "controller.quorum.append.linger.ms": (_INT, 0, False),
    "controller.quorum.auto.join.enable": (_BOOLEAN, None, False),
    "metadata.log.segment.bytes": (_INT, 12, False),
    "metadata.log.segment.ms": (_LONG, 1, False),
    "metadata.max.retention.bytes": (_LONG, None, False),
    "metadata.max.retention.ms": (_LONG, None, False),
    "metadata.log.max.record.bytes.between.snapshots": (_LONG, 1, False),
    "metadata.log.max.snapshot.interval.ms": (_LONG, 0, False),
    "kraftlog.metadata.log.cleanup.interval.ms": (_INT, 1, False),
    "unclean.leader.election.enable": (_BOOLEAN, None, False),
    "unclean.leader.election.interval.ms": (_LONG, 1, False),
    "replica.lag.time.max.ms": (_LONG, None, False),
    "broker.session.timeout.ms": (_INT, None, False),
    "broker.heartbeat.interval.ms": (_INT, None, False),
    "replica.fetch.wait.max.ms": (_INT, None, False),
    "replica.fetch.min.bytes": (_INT, None, False),
    "replica.fetch.max.bytes": (_INT, 0, False),
    "replica.fetch.backoff.ms": (_INT, 0, False),
    "replica.socket.timeout.ms": (_INT, None, False),
    "replica.high.watermark.checkpoint.interval.ms": (_LONG, None, False),
    "request.timeout.ms": (_INT, 0, False),
    "log.flush.interval.messages": (_LONG, 1, True),
    "log.flush.interval.ms": (_LONG, 0, True),
    "log.flush.scheduler.interval.ms": (_LONG, 0, False),
    # segment.bytes: Kafka 3.x's lower bound (LegacyRecord.RECORD_OVERHEAD_V0, 14 bytes). Kafka 4.0 (KIP-1030)
    # raised it to 1 MiB; kraftlog keeps 3.x's so that a simulated story can roll segments in seconds.
    "log.segment.bytes": (_INT, 14, False),
    "segment.bytes": (_INT, 14, False),
    "log.roll.ms": (_LONG, 1, True),
    "log.roll.hours": (_INT, 1, False),
    "segment.ms": (_LONG, 1, False),
    "log.roll.jitter.ms": (_LONG, 0, True),
    "log.roll.jitter.hours": (_INT, 0, False),
    "segment.jitter.ms": (_LONG, 0, False),
    "log.index.size.max.bytes": (_INT, 4, False),
    "segment.index.bytes": (_INT, 4, False),
    "log.index.interval.bytes": (_INT, 0, False),
    "index.interval.bytes": (_INT, 0, False),
    "log.retention.bytes": (_LONG, None, False),
    "retention.bytes": (_LONG, None, False),
    "log.retention.ms": (_LONG, -1, True),
    "log.retention.minutes": (_INT, None, True),
    "log.retention.hours": (_INT, None, False),
    "retention.ms": (_LONG, -1, False),
    "log.retention.check.interval.ms": (_LONG, 1, False),
    "log.initial.task.delay.ms": (_LONG, 0, False),
    "log.segment.delete.delay.ms": (_LONG, 0, False),
    "log.cleaner.min.cleanable.ratio": (_DOUBLE, 0, False),
    "min.cleanable.dirty.ratio": (_DOUBLE, 0, False),
    "log.cleaner.min.compaction.lag.ms": (_LONG, 0, False),
    "min.compaction.lag.ms": (_LONG, 0, False),
    "log.cleaner.max.compaction.lag.ms": (_LONG, 1, False),
    "max.compaction.lag.ms": (_LONG, 1, False),
    "log.cleaner.delete.retention.ms": (_LONG, 0, False),
    "delete.retention.ms": (_LONG, 0, False),
    "log.cleaner.enable": (_BOOLEAN, None, False),
    "log.cleaner.backoff.ms": (_LONG, 0, False),
    "log.cleaner.dedupe.buffer.size": (_LONG, 24, False),
    "log.cleaner.io.buffer.load.factor": (_DOUBLE, None, False),
    "log.cleaner.io.max.bytes.per.second": (_DOUBLE, None, False),
    "kraftlog.log.cleaner.slice.bytes": (_INT, 1, False),
    "file.delete.delay.ms": (_LONG, 0, False),
    "producer.id.expiration.ms": (_INT, 1, False),
    "producer.id.expiration.check.interval.ms": (_INT, 1, False),
    "log.flush.offset.checkpoint.interval.ms": (_INT, 0, False),
    "log.flush.start.offset.checkpoint.interval.ms": (_INT, 0, False),
    "flush.messages": (_LONG, 1, True),
    "flush.ms": (_LONG, 0, True),
    "metadata.max.idle.interval.ms": (_INT, 0, False),
    "default.replication.factor": (_INT, None, False),
    "num.partitions": (_INT, 1, False),
    "auto.create.topics.enable": (_BOOLEAN, None, False),
    "delete.topic.enable": (_BOOLEAN, None, False),
    "advertised.listeners": (_STRING, None, True),
    "group.min.session.timeout.ms": (_INT, None, False),
    "group.max.session.timeout.ms": (_INT, None, False),
    "group.initial.rebalance.delay.ms": (_INT, None, False),
    "group.max.size": (_INT, 1, False),
    "offsets.topic.num.partitions": (_INT, 1, False),
    "offsets.topic.replication.factor": (_INT, 1, False),
    "offsets.topic.segment.bytes": (_INT, 1, False),
    "offsets.retention.minutes": (_INT, 1, False),
    "offsets.retention.check.interval.ms": (_LONG, 1, False),
    "offsets.commit.timeout.ms": (_INT, 1, False),
    "message.max.bytes": (_INT, 0, False),
    "max.message.bytes": (_INT, 0, False),
    "log.message.timestamp.before.max.ms": (_LONG, 0, False),
    "log.message.timestamp.after.max.ms": (_LONG, 0, False),
    "message.timestamp.before.max.ms": (_LONG, 0, False),
    "message.timestamp.after.max.ms": (_LONG, 0, False),
    "log.dir.failure.timeout.ms": (_LONG, 1, False),
    # The listeners' bounds: Kafka's types; lower bounds 1 where Kafka allows 0 (a listener that takes no
    # connection, a zero deadline), and -1 (unbounded, Kafka's default) for queued.max.request.bytes.
    "socket.request.max.bytes": (_INT, 1, False),
    "queued.max.request.bytes": (_LONG, -1, False),
    "max.connections": (_INT, 1, False),
    "max.connections.per.ip": (_INT, 1, False),
    "connections.max.idle.ms": (_LONG, 1, False),
    "kraftlog.request.receive.timeout.ms": (_LONG, 1, False),
}


def _type_problem(name: str, value: str) -> str | None:
    """Kafka's ``ConfigDef.parseType`` and ``Range.atLeast`` for ``name``'s type: the reason ``value`` is
    refused (Kafka's wording), or None."""
    spec = _TYPES.get(name)
    if spec is None:
        return None
    kind, minimum, empty_ok = spec
    text = str(value).strip()
    if text == "" and empty_ok:
        return None
    if kind == _BOOLEAN:
        return None if text.lower() in ("true", "false") else "Expected value to be either true or false"
    if kind == _DOUBLE:
        try:
            number = float(text)
        except ValueError:
            return "Not a number of type DOUBLE"
        if number != number or number in (float("inf"), float("-inf")):
            return "Not a number of type DOUBLE"
        if minimum is not None and number < minimum:
            return f"Value must be at least {minimum}"
        if name in ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio") and number > 1:
            return "Value must be no more than 1"  # Kafka's between(0, 1)
        return None
    if kind in _BOUNDS:
        low, high = _BOUNDS[kind]
        if not _NUMBER.fullmatch(text) or not low <= int(text) <= high:
            return f"Not a number of type {kind}"
        if minimum is not None and int(text) < minimum:
            return f"Value must be at least {minimum}"
    return None


def invalid_value(name: str, value: str | None) -> str | None:
    """Kafka's ConfigDef validation: None when ``value`` is valid for config ``name``, else the message
    Kafka's INVALID_CONFIG answer (or a scenario file error) carries, naming the config, e.g. ``Invalid
    value Fast for configuration unclean.recovery.strategy: must be one of None, Balanced, Aggressive``
    or ``Invalid value 0 for configuration min.insync.replicas: Value must be at least 1``. Each known
    config is checked against its Kafka type (INT, LONG, BOOLEAN) and lower bound (:data:`_TYPES`); a
    None value is refused (Kafka: "Null value not supported")."""
    if value is None:
        return f"Null value not supported for configuration {name}"
    check = _VALIDATORS.get(name)
    if check is not None:
        if check[0](value):
            return None
        return f"Invalid value {value} for configuration {name}: must be {check[1]}"
    problem = _type_problem(name, value)
    return None if problem is None else f"Invalid value {value} for configuration {name}: {problem}"


def parse_super_users(value: str) -> frozenset[str] | None:
    """The principals of a ``super.users`` value (Kafka's ``StandardAuthorizer``: ``;``-separated, each
    ``<type>:<name>`` with a non-empty type and name, spaces around items ignored), or None when it is not one.
    ``""`` gives none."""
    out = set()
    for item in (x.strip() for x in str(value).split(";")):
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            return None
        out.add(item)
    return frozenset(out)


#: ``cleanup.policy``'s two policies (Kafka's TopicConfig.CLEANUP_POLICY_COMPACT / _DELETE).
CLEANUP_POLICIES: tuple[str, ...] = ("compact", "delete")


def parse_cleanup_policy(value: str) -> frozenset[str] | None:
    """The policies of a ``cleanup.policy`` value (Kafka's ``ValidList.in("compact", "delete")``: a
    comma-separated list, spaces around items ignored, case-sensitive, at least one item), or None when
    ``value`` is not one. ``"compact,delete"`` gives both."""
    items = [item.strip() for item in str(value).split(",")]
    if not items or any(item not in CLEANUP_POLICIES for item in items):
        return None
    return frozenset(items)


def parse_strategy(value: str) -> str | None:
    """``unclean.recovery.strategy``'s canonical spelling (``None``/``Balanced``/``Aggressive``) of
    ``value`` (any case), or None when it is not a strategy."""
    text = str(value).strip().lower()
    for strategy in UNCLEAN_RECOVERY_STRATEGIES:
        if strategy.lower() == text:
            return strategy
    return None


def unclean_recovery_strategy(*layers: Mapping[str, str] | None) -> str:
    """The effective ``unclean.recovery.strategy`` from config layers, most specific first (topic
    configs, cluster-level dynamic configs, static configs), KIP-966 "Other" 3: at each layer an
    explicit ``unclean.recovery.strategy`` wins; else ``unclean.leader.election.enable`` set at that layer
    maps true -> Aggressive, false -> Balanced; else the next layer; else Kafka's default Balanced.
    A topic layer uses the topic-level names (the same for both)."""
    for layer in layers:
        if not layer:
            continue
        if "unclean.recovery.strategy" in layer:
            strategy = parse_strategy(layer["unclean.recovery.strategy"])
            if strategy is not None:
                return strategy
        if "unclean.leader.election.enable" in layer:
            return "Aggressive" if as_bool(layer["unclean.leader.election.enable"]) else "Balanced"
    return parse_strategy(DEFAULTS["unclean.recovery.strategy"]) or "Balanced"


def lookup(name: str, *layers: Mapping[str, str] | None) -> str:
    """The value of broker config ``name`` from the first layer that sets it, else Kafka's default. A name
    with further synonyms (:data:`SYNONYM_FALLBACKS`: ``log.retention.ms`` then ``log.retention.minutes``
    then ``log.retention.hours``) takes the first synonym any layer sets, converted to ``name``'s unit, else
    the first non-empty default among them (``log.retention.hours``' 168, as 604800000 ms).

    Raises KeyError for a name kraftlog does not know."""
    fallbacks = SYNONYM_FALLBACKS.get(name)
    if fallbacks is None:
        for layer in layers:
            if layer and name in layer:
                return str(layer[name])
        return DEFAULTS[name]
    chain = ((name, 1), *fallbacks)
    for synonym, factor in chain:
        for layer in layers:
            if layer and synonym in layer and str(layer[synonym]).strip() != "":
                return _scaled(str(layer[synonym]), factor)
    for synonym, factor in chain:
        if DEFAULTS[synonym] != "":
            return _scaled(DEFAULTS[synonym], factor)
    return ""


def synonym_source(name: str, *layers: Mapping[str, str] | None) -> tuple[int, str] | None:
    """Which layer sets broker config ``name`` (directly or through a :data:`SYNONYM_FALLBACKS` synonym),
    as (position of the layer in ``layers``, the value in ``name``'s unit); None when only defaults apply.
    For DescribeConfigs' source."""
    chain = ((name, 1), *SYNONYM_FALLBACKS.get(name, ()))
    for synonym, factor in chain:
        for i, layer in enumerate(layers):
            if layer and synonym in layer and (factor == 1 or str(layer[synonym]).strip() != ""):
                return i, _scaled(str(layer[synonym]), factor) if factor != 1 else str(layer[synonym])
    return None


def _scaled(value: str, factor: int) -> str:
    """``value`` (an int config) times ``factor``, as a string; ``value`` as it is when factor is 1."""
    if factor == 1:
        return value
    return str(int(value.strip()) * factor)


def as_int(value: str) -> int | None:
    """An int config value; the empty string (unset) gives None."""
    value = str(value).strip()
    return None if value == "" else int(value)


def as_bool(value: str) -> bool:
    """Kafka boolean: ``"true"``/``"false"`` (case-insensitive)."""
    return str(value).strip().lower() == "true"
