"""The immutable MetadataImage built by replaying metadata records (Kafka's ``MetadataImage``).

``replay(image, records, base_offset)`` returns a new image and a :class:`MetadataDelta` naming
what changed; the old image is untouched (copy-on-write of the top-level maps), so a broker or a
checker can hold an image while the controller moves on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from . import config as cfg
from .records import (
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from .topic_names import validate_topic_name

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


class _Unapplicable(Exception):
    """A metadata record the image cannot apply (MetadataImage.replay skips it and names it)."""


class MetadataApplyErrors:
    """A node's count of metadata records it could not apply, Kafka's ``metadata-apply-error-count``
    (the brokers' ``BrokerServerMetrics`` / the controller's fault handler), and the lines a driver logs
    for them (:meth:`take`, at most the latest 100 kept)."""

    KEEP = 100

    def __init__(self) -> None:
        self.count = 0
        self._lines: list[str] = []

    def add(self, offset: int, record: object, reason: str) -> None:
        """Count one record (at metadata ``offset``, -1 when not known) that could not be applied."""
        self.count += 1
        self._lines.append(f"metadata record at offset {offset} not applied ({reason}): {record!r}"[:2000])
        if len(self._lines) > self.KEEP:
            del self._lines[0]

    def take(self) -> list[str]:
        """The lines not yet taken (oldest first), for the node's log."""
        lines, self._lines = self._lines, []
        return lines


@dataclass(slots=True, frozen=True)
class BrokerRegistration:
    """A broker as the controller registered it. ``broker_epoch`` = offset of its RegisterBrokerRecord."""

    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    fenced: bool = True
    in_controlled_shutdown: bool = False
    previous_broker_epoch: int = -1
    rack: str | None = None
    #: ``"NAME://host:port"`` endpoints (RegisterBrokerRecord's EndPoints); empty in the simulator.
    listeners: tuple[str, ...] = ()
    #: The online log directories (KIP-858's LogDirs: registered, minus those reported offline); None when
    #: the registration predates them (every directory counts as online).
    log_dirs: tuple[uuid.UUID, ...] | None = None

    @property
    def has_online_log_dir(self) -> bool:
        """Whether the broker has an online log directory, so that it can host a replica. A kraftlog
        broker has one log directory: with it offline it leads nothing and joins no ISR until it restarts.
        (Kafka's ``DirectoryId.isOnline`` takes an empty list as "unknown, online", since Kafka halts a
        broker whose last directory fails; kraftlog keeps such a broker up, so empty means none online.)"""
        return self.log_dirs is None or len(self.log_dirs) > 0

    def endpoint(self, name: str) -> tuple[str, int] | None:
        """(host, port) of listener ``name``, None when the broker registered no such listener."""
        prefix = name + "://"
        for listener in self.listeners:
            if listener.startswith(prefix):
                host, _, port = listener[len(prefix):].rpartition(":")
                return host, int(port)
        return None


@dataclass(slots=True, frozen=True)
class PartitionRegistration:
    """A partition's committed state (Kafka's ``PartitionRegistration``).

    ``leader`` -1 = none; ``elr``/``last_known_elr`` are KIP-966's Eligible Leader Replicas and
    LastKnownELR; ``leader_recovery_state`` 1 = RECOVERING after an unclean election (KIP-704)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = RECOVERED
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    last_known_leader: int = -1

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """Apply a PartitionChangeRecord: a leader change bumps the leader epoch; the partition
        epoch is always bumped (Kafka's ``PartitionRegistration.merge``)."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader is not None and change.leader != self.leader:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        elif change.leader is not None:
            # Kafka bumps the epoch whenever the record carries a leader, even the same one.
            leader_epoch = self.leader_epoch + 1
        return PartitionRegistration(
            replicas=self.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            leader_recovery_state=(self.leader_recovery_state if change.leader_recovery_state is None
                                   else change.leader_recovery_state),
            elr=self.elr if change.eligible_leader_replicas is None else change.eligible_leader_replicas,
            last_known_elr=self.last_known_elr if change.last_known_elr is None else change.last_known_elr,
            last_known_leader=(self.last_known_leader if change.last_known_leader is None
                               else change.last_known_leader),
        )

    @property
    def recovering(self) -> bool:
        return self.leader_recovery_state == RECOVERING

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER


@dataclass(slots=True, frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partition_count: int


@dataclass(slots=True)
class MetadataDelta:
    """What one replay changed: partitions as (topic, index), broker ids, topic names, config resources,
    and ``deleted_topics`` (topic id -> name) for every RemoveTopicRecord replayed (Kafka's
    ``TopicsDelta.deletedTopicIds``). A deleted topic's partitions and name leave ``partitions`` and
    ``topics`` (Kafka's ``changedTopics`` drops a deleted topic); its config resource is in ``configs``."""

    partitions: set[tuple[str, int]] = field(default_factory=set)
    brokers: set[int] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    configs: set[tuple[int, str]] = field(default_factory=set)
    deleted_topics: dict[uuid.UUID, str] = field(default_factory=dict)
    #: (offset, record, reason) of every record that could not be applied (skipped; see ``replay``).
    errors: list[tuple[int, object, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.partitions or self.brokers or self.topics or self.configs or self.deleted_topics)


@dataclass(slots=True, frozen=True)
class MetadataImage:
    """An immutable view of the cluster at metadata offset ``offset`` (-1 = empty).

    ``partitions`` is keyed by (topic name, partition index); ``configs`` by (resource type, name)."""

    offset: int = -1
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[str, TopicImage] = field(default_factory=dict)
    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionRegistration] = field(default_factory=dict)
    #: (resource type, resource name) -> config name -> value (ConfigRecords replayed)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    #: (user name, SCRAM mechanism type) -> its credential (KIP-554: UserScramCredentialRecords replayed)
    scram_credentials: dict[tuple[str, int], UserScramCredentialRecord] = field(default_factory=dict)

    # ----------------------------------------------------------------- queries
    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def snapshot(self) -> dict[str, object]:
        """The image as JSON-able data, what a node reports of its committed state (the controller's is
        what the simulator's conditions read): ``{"offset", "brokers": {"<id>": {"fenced",
        "in_controlled_shutdown", "broker_epoch", "log_dir_offline"}}, "partitions": {"<topic>-<p>": {"replicas", "isr",
        "elr", "last_known_elr", "leader" (None for none), "leader_epoch", "partition_epoch",
        "recovering", "last_known_leader" (None for none)}}}``, sorted by id and name."""
        return {
            "offset": self.offset,
            "brokers": {str(b): {"fenced": r.fenced, "in_controlled_shutdown": r.in_controlled_shutdown,
                                 "broker_epoch": r.broker_epoch, "log_dir_offline": not r.has_online_log_dir}
                        for b, r in sorted(self.brokers.items())},
            "partitions": {f"{t}-{i}": {
                "replicas": list(p.replicas), "isr": list(p.isr), "elr": list(p.elr),
                "last_known_elr": list(p.last_known_elr), "leader": p.leader if p.leader >= 0 else None,
                "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                "recovering": p.recovering,
                "last_known_leader": p.last_known_leader if p.last_known_leader >= 0 else None}
                for (t, i), p in sorted(self.partitions.items())},
        }

    def partition(self, topic: str, index: int) -> PartitionRegistration | None:
        return self.partitions.get((topic, index))

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topic_names.get(topic_id)

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not in controlled shutdown: an acceptable leader / ISR member."""
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def is_acceptable_leader(self, broker_id: int) -> bool:
        """Active (:meth:`is_active`) with an online log directory for its replicas (Kafka's
        ``ReplicationControlManager.LeaderAcceptor``: ``isActive`` and ``hasOnlineDir``). A kraftlog broker
        has one log directory, so this holds for all its partitions or none."""
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown and b.has_online_log_dir

    def config(self, name: str, topic: str | None = None, static: Mapping[str, str] | None = None) -> str:
        """Resolve a broker config ``name`` for ``topic``: topic override → cluster default → the
        node's static config → Kafka's default."""
        layers: list[Mapping[str, str] | None] = []
        if topic is not None:
            tconf = self.configs.get((RESOURCE_TOPIC, topic))
            if tconf:
                synonym = cfg.TOPIC_SYNONYMS.get(name)
                if synonym is not None and synonym in tconf:
                    return tconf[synonym]
        layers.append(self.configs.get((RESOURCE_BROKER, "")))
        layers.append(static)
        return cfg.lookup(name, *layers)

    def unclean_recovery_strategy(self, topic: str | None, static: Mapping[str, str] | None = None) -> str:
        """``None``/``Balanced``/``Aggressive`` for ``topic`` (KIP-966): topic configs, then cluster-level
        dynamic configs, then the static config, each layer's explicit strategy before its mapped
        ``unclean.leader.election.enable`` (:func:`kraftlog.metadata.config.unclean_recovery_strategy`)."""
        topic_layer = self.configs.get((RESOURCE_TOPIC, topic)) if topic is not None else None
        return cfg.unclean_recovery_strategy(topic_layer, self.configs.get((RESOURCE_BROKER, "")), static)

    def min_isr(self, topic: str, static: Mapping[str, str] | None = None) -> int:
        """Effective min ISR = min(min.insync.replicas, replication factor) (KIP-966)."""
        configured = int(self.config("min.insync.replicas", topic, static))
        t = self.topics.get(topic)
        if t is None:
            return configured
        rf = len(self.partitions[(topic, 0)].replicas)
        return max(1, min(configured, rf))

    # ----------------------------------------------------------------- replay
    def replay(self, records: Iterable[object], base_offset: int) -> tuple[MetadataImage, MetadataDelta]:
        """Apply ``records`` (the first at ``base_offset``) and return (new image, delta).

        A record that cannot be applied is skipped and named in ``delta.errors`` as (offset, record,
        reason), and the rest are applied (Kafka's metadata publishing fault handler, which logs and counts
        the fault and goes on): a TopicRecord whose name Kafka's ``Topic.validate`` refuses (a metadata log
        written before names were validated) or whose name is taken, a record naming a topic id or
        partition the image does not have, a ConfigRecord whose value is not of its config's type or range
        (:func:`kraftlog.metadata.config.invalid_value`), a record type kraftlog does not know, and any
        other error raised while applying one record (an AssertionError, a broken invariant of our own, is
        raised)."""
        brokers, topics, topic_names, partitions, configs, scram = (
            self.brokers, self.topics, self.topic_names, self.partitions, self.configs, self.scram_credentials)
        copied: set[str] = set()
        delta = MetadataDelta()
        offset = self.offset
        for i, rec in enumerate(records):
            offset = base_offset + i
            try:
                if type(rec) is PartitionChangeRecord:
                    if "p" not in copied:
                        partitions = dict(partitions)
                        copied.add("p")
                    key = (topic_names.get(rec.topic_id), rec.partition_id)
                    if key not in partitions:
                        raise _Unapplicable(
                            f"PartitionChangeRecord for unknown partition {rec.topic_id}:{rec.partition_id}")
                    partitions[key] = partitions[key].merge(rec)
                    delta.partitions.add(key)
                elif type(rec) is RegisterBrokerRecord:
                    if "b" not in copied:
                        brokers = dict(brokers)
                        copied.add("b")
                    brokers[rec.broker_id] = BrokerRegistration(
                        broker_id=rec.broker_id, broker_epoch=rec.broker_epoch,
                        incarnation_id=rec.incarnation_id, fenced=rec.fenced,
                        in_controlled_shutdown=rec.in_controlled_shutdown,
                        previous_broker_epoch=rec.previous_broker_epoch, rack=rec.rack,
                        listeners=rec.listeners, log_dirs=rec.log_dirs)
                    delta.brokers.add(rec.broker_id)
                elif type(rec) is BrokerRegistrationChangeRecord:
                    old = brokers.get(rec.broker_id)
                    if old is None or old.broker_epoch != rec.broker_epoch:
                        continue  # a change for an older registration: Kafka ignores it
                    if "b" not in copied:
                        brokers = dict(brokers)
                        copied.add("b")
                    brokers[rec.broker_id] = replace(
                        old,
                        fenced=old.fenced if rec.fenced is None else rec.fenced,
                        in_controlled_shutdown=(old.in_controlled_shutdown if rec.in_controlled_shutdown is None
                                                else rec.in_controlled_shutdown),
                        log_dirs=old.log_dirs if rec.log_dirs is None else rec.log_dirs)
                    delta.brokers.add(rec.broker_id)
                elif type(rec) is PartitionRecord:
                    if "p" not in copied:
                        partitions = dict(partitions)
                        copied.add("p")
                    name = topic_names.get(rec.topic_id)
                    if name is None or rec.partition_id < 0:
                        raise _Unapplicable(f"PartitionRecord for unknown topic id {rec.topic_id} "
                                            f"or partition {rec.partition_id}")
                    key = (name, rec.partition_id)
                    partitions[key] = PartitionRegistration(
                        replicas=rec.replicas, isr=rec.isr, leader=rec.leader, leader_epoch=rec.leader_epoch,
                        partition_epoch=rec.partition_epoch, leader_recovery_state=rec.leader_recovery_state,
                        elr=rec.eligible_leader_replicas, last_known_elr=rec.last_known_elr,
                        last_known_leader=rec.last_known_leader)
                    if "t" not in copied:
                        topics = dict(topics)
                        copied.add("t")
                    t = topics[name]
                    topics[name] = replace(t, partition_count=max(t.partition_count, rec.partition_id + 1))
                    delta.partitions.add(key)
                elif type(rec) is TopicRecord:
                    problem = validate_topic_name(rec.name)
                    if problem is not None:
                        raise _Unapplicable(problem)
                    if rec.name in topics or rec.topic_id in topic_names:
                        raise _Unapplicable(f"topic {rec.name} (id {rec.topic_id}) exists already")
                    if "t" not in copied:
                        topics = dict(topics)
                        copied.add("t")
                    if "n" not in copied:
                        topic_names = dict(topic_names)
                        copied.add("n")
                    topics[rec.name] = TopicImage(rec.name, rec.topic_id, 0)
                    topic_names[rec.topic_id] = rec.name
                    delta.topics.add(rec.name)
                elif type(rec) is ConfigRecord:
                    if rec.value is not None and rec.name in cfg.KNOWN_CONFIGS:
                        problem = cfg.invalid_value(rec.name, rec.value)
                        if problem is not None:
                            raise _Unapplicable(problem)
                    if "c" not in copied:
                        configs = dict(configs)
                        copied.add("c")
                    res = (rec.resource_type, rec.resource_name)
                    entry = dict(configs.get(res, {}))
                    if rec.value is None:
                        entry.pop(rec.name, None)
                    else:
                        entry[rec.name] = rec.value
                    if entry:
                        configs[res] = entry
                    else:  # Kafka's ConfigurationImage drops a resource left with no config
                        configs.pop(res, None)
                    delta.configs.add(res)
                elif type(rec) is RemoveTopicRecord:
                    # Kafka's TopicsDelta.replay(RemoveTopicRecord) and ConfigurationsDelta.replay: the topic,
                    # its partitions and its topic-level configs go; its name is free for a new topic.
                    name = topic_names.get(rec.topic_id)
                    if name is None:
                        # Kafka: "Unable to delete topic with id ...: no such topic found."
                        raise _Unapplicable(f"RemoveTopicRecord for unknown topic id {rec.topic_id}")
                    if "t" not in copied:
                        topics = dict(topics)
                        copied.add("t")
                    if "n" not in copied:
                        topic_names = dict(topic_names)
                        copied.add("n")
                    if "p" not in copied:
                        partitions = dict(partitions)
                        copied.add("p")
                    count = topics.pop(name).partition_count
                    del topic_names[rec.topic_id]
                    for index in range(count):
                        partitions.pop((name, index), None)
                        delta.partitions.discard((name, index))
                    delta.topics.discard(name)
                    delta.deleted_topics[rec.topic_id] = name
                    res = (RESOURCE_TOPIC, name)
                    if res in configs:
                        if "c" not in copied:
                            configs = dict(configs)
                            copied.add("c")
                        del configs[res]
                        delta.configs.add(res)
                elif type(rec) is ClearElrRecord:
                    if "p" not in copied:
                        partitions = dict(partitions)
                        copied.add("p")
                    for key, part in list(partitions.items()):
                        if rec.topic_name is not None and key[0] != rec.topic_name:
                            continue
                        if part.elr or part.last_known_elr or part.last_known_leader >= 0:
                            # Kafka merges ELR=[] and LastKnownELR=[], which holds its last known leader:
                            # the last known leader is forgotten too.
                            partitions[key] = replace(part, elr=(), last_known_elr=(), last_known_leader=-1,
                                                      partition_epoch=part.partition_epoch + 1)
                            delta.partitions.add(key)
                elif type(rec) is UserScramCredentialRecord or type(rec) is RemoveUserScramCredentialRecord:
                    # Kafka's ScramDelta.replay: a credential replaces the user's for that mechanism; a removal of
                    # one that does not exist cannot be applied
                    key = (rec.name, rec.mechanism)
                    if type(rec) is RemoveUserScramCredentialRecord and key not in scram:
                        raise _Unapplicable(f"RemoveUserScramCredentialRecord for {rec.name} without a credential "
                                            f"of mechanism {rec.mechanism}")
                    if "s" not in copied:
                        scram = dict(scram)
                        copied.add("s")
                    if type(rec) is UserScramCredentialRecord:
                        scram[key] = rec
                    else:
                        del scram[key]
                else:
                    raise _Unapplicable(f"unknown metadata record {type(rec).__name__}")
            except _Unapplicable as exc:
                delta.errors.append((offset, rec, str(exc)))
            except AssertionError:
                raise
            except Exception as exc:  # noqa: BLE001 - the fault handler: count it, apply the rest
                delta.errors.append((offset, rec, f"{type(exc).__name__}: {exc}"))
        image = MetadataImage(offset=offset, brokers=brokers, topics=topics, topic_names=topic_names,
                              partitions=partitions, configs=configs, scram_credentials=scram)
        return image, delta
