"""Kafka's ``ReplicationControlManager``: topics and partitions, and every change to a partition.

* CreateTopics (name and config validation, manual assignments, round-robin placement), DeleteTopics
  (one RemoveTopicRecord per deleted topic, written atomically; ``delete.topic.enable``), CreatePartitions
  (:mod:`.partition_creation`);
* AlterPartition with Kafka's validation order (DESIGN.md, KIP-497 / KIP-903);
* the partition changes a broker's state change brings (``handleBrokerFenced``, ``handleBrokerUnfenced``,
  ``handleBrokerInControlledShutdown``, ``handleBrokerShutdown`` for KIP-966's unclean shutdown,
  ``handleDirectoriesOffline``), all through :func:`~.partition_change.build_partition_change` (leader
  elections, ISR, ELR). As in Kafka, leaderless partitions are elected when a broker is unfenced and, for
  topics with ``unclean.leader.election.enable``, by the periodic unclean-election task
  (``maybeElectUncleanLeaders``) — never as a side effect of a config change;
* ElectLeaders (v3 from KIP-966) and, at level ``urm``, the leaderless partitions' unclean recoveries: the
  decision order, starting and dropping recoveries in the :class:`~.unclean_recovery.UncleanRecoveryManager`
  and electing the replica a finished recovery chose (:meth:`ReplicationControlManager.consider_recoveries`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from random import Random

from ..level import Level
from ..metadata.image import RESOURCE_TOPIC, MetadataImage
from ..metadata.records import (
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.validation import (
    CLUSTER_METADATA_TOPIC,
    has_collision_chars,
    unify_collision_chars,
    validate_topic_name,
)
from .configuration_control import ConfigurationControlManager
from .context import ControllerContext, MetadataRecord
from .partition_change import Election, build_partition_change
from .partition_creation import create_partitions
from .unclean_recovery import (
    AGGRESSIVE,
    BALANCED,
    Decision,
    PartitionKey,
    RecoveryTask,
    UncleanRecoveryManager,
    recovery_decision,
)

#: Kafka's ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``: the most partitions one CreateTopics
#: request may create (POLICY_VIOLATION beyond).
MAX_PARTITIONS_PER_BATCH = 10_000
#: Kafka's default messages (``Errors.message()``) that ``ApiError(error)`` puts into a DeleteTopics result.
_UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."
_UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def validate_new_topic_names(topics: list[m.CreatableTopic], existing: Collection[str]) -> dict[str, tuple[int, str]]:
    """Kafka's ``ReplicationControlManager.validateNewTopicNames``: name -> (INVALID_TOPIC_EXCEPTION,
    message) for each name ``Topic.validate`` refuses (:func:`kraftlog.protocol.validation
    .validate_topic_name`) and each name that collides with an ``existing`` topic's once '.' and '_' are
    unified ("Topic 'a.b' collides with existing topic: a_b"); a name equal to an existing one is left to
    TOPIC_ALREADY_EXISTS."""
    colliding: dict[str, str] = {}
    for name in sorted(existing):
        if has_collision_chars(name):
            colliding.setdefault(unify_collision_chars(name), name)
    errors: dict[str, tuple[int, str]] = {}
    for t in topics:
        problem = validate_topic_name(t.name)
        if problem is not None:
            errors[t.name] = (Errors.INVALID_TOPIC_EXCEPTION, problem)
        elif has_collision_chars(t.name) and t.name not in existing:
            other = colliding.get(unify_collision_chars(t.name))
            if other is not None:
                errors[t.name] = (Errors.INVALID_TOPIC_EXCEPTION,
                                  f"Topic '{t.name}' collides with existing topic: {other}")
    return errors


def _refused(t: m.CreatableTopic, code: int, message: str) -> m.CreateTopicResult:
    return m.CreateTopicResult(t.name, code, error_message=message)


#: One partition's answer in an ElectLeaders request: its result, or its (topic, index) while the recovery
#: the request started for it has not elected yet.
ElectionOutcome = m.ElectLeadersResult | PartitionKey


@dataclass(slots=True)
class ParkedElection:
    """An ElectLeaders request waiting for the recoveries it started (Kafka's DelayedElectLeader): its
    deadline (ms: now + the request's ``timeout_ms``), the request, and its results so far."""

    deadline_ms: int
    request: m.Envelope
    results: list[ElectionOutcome]


class ReplicationControlManager:
    """The controller's replication control (module docstring). ``ctx``: the controller (image, append,
    outbox); ``configs``: the config control it reads configs through; ``urm``: KIP-966's Unclean
    Recovery Manager, owned by the controller; ``rng``: the controller's seeded Random (topic ids and
    replica placement)."""

    def __init__(self, ctx: ControllerContext, level: Level, configs: ConfigurationControlManager,
                 urm: UncleanRecoveryManager, rng: Random) -> None:
        self.ctx = ctx
        self.level = level
        self.configs = configs
        self.urm = urm
        self.rng = rng
        #: ElectLeaders requests waiting for recoveries they started, in arrival order.
        self.parked_elections: list[ParkedElection] = []

    def next_deadline(self) -> int | None:
        """The earliest parked ElectLeaders request's deadline (ms), None when none is parked."""
        return min((p.deadline_ms for p in self.parked_elections), default=None)

    # ================================================================= CreateTopics
    def handle_create_topics(self, now_ms: int, req: m.CreateTopicsRequest) -> m.CreateTopicsResponse:
        """CreateTopics as Kafka's ``ControllerApis.createTopics``: a name given twice is INVALID_REQUEST
        "Duplicate topic name." and ``__cluster_metadata`` INVALID_REQUEST "Creation of internal topic
        __cluster_metadata is prohibited." (both answered after the others, as Kafka does); the rest go to
        :meth:`create_topics`."""
        counts: dict[str, int] = {}
        for t in req.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        topics = [t for t in req.topics if counts[t.name] == 1 and t.name != CLUSTER_METADATA_TOPIC]
        results = self.create_topics(now_ms, topics)
        results += [m.CreateTopicResult(name, Errors.INVALID_REQUEST, error_message="Duplicate topic name.")
                    for name, n in counts.items() if n > 1]
        if counts.get(CLUSTER_METADATA_TOPIC) == 1:
            results.append(m.CreateTopicResult(
                CLUSTER_METADATA_TOPIC, Errors.INVALID_REQUEST,
                error_message=f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."))
        return m.CreateTopicsResponse(tuple(results))

    def create_topics(self, now_ms: int, topics: list[m.CreatableTopic]) -> list[m.CreateTopicResult]:
        """Kafka's ``ReplicationControlManager.createTopics``, one result per topic in order:

        * more than 10,000 partitions in the request (``validateTotalNumberOfPartitions``, -1 counting as
          ``num.partitions``): every topic POLICY_VIOLATION, nothing created;
        * :func:`validate_new_topic_names`: INVALID_TOPIC_EXCEPTION; an existing name: TOPIC_ALREADY_EXISTS;
        * configs (:meth:`ConfigurationControlManager.invalid_topic_configs`): a null value, a name
          kraftlog does not know or a value of the wrong type or range: INVALID_CONFIG naming it;
        * then :meth:`_create_topic` (counts, assignments, placement).

        Each created topic is appended at once (one atomic append of its TopicRecord, ConfigRecords and
        PartitionRecords), so a later topic of the request sees it."""
        default_partitions = self.configs.lookup_static("num.partitions")
        total = sum((default_partitions if t.num_partitions == -1 else max(0, t.num_partitions))
                    if not t.assignment else len(t.assignment) for t in topics)
        if total > MAX_PARTITIONS_PER_BATCH:
            return [m.CreateTopicResult(t.name, Errors.POLICY_VIOLATION,
                                        error_message="Excessively large number of partitions per request.")
                    for t in topics]
        errors = validate_new_topic_names(topics, self.ctx.image.topics)
        results = []
        for t in topics:
            error: tuple[int, str | None] | None = errors.get(t.name)
            if error is None and t.name in self.ctx.image.topics:
                error = (Errors.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
            if error is None:
                error = self.configs.invalid_topic_configs(t.configs)
            if error is None:
                result = self._create_topic(now_ms, t)
                if result.error_code == Errors.NONE:
                    results.append(result)
                    continue
                error = (result.error_code, result.error_message)
            results.append(m.CreateTopicResult(t.name, error[0], error_message=error[1]))
        return results

    def _create_topic(self, now_ms: int, t: m.CreatableTopic) -> m.CreateTopicResult:
        """Kafka's ``ReplicationControlManager.createTopic`` for one validated name: a manual assignment
        (replication factor and partition count must then be -1: INVALID_REQUEST;
        :meth:`_validate_manual_assignment`: INVALID_REPLICA_ASSIGNMENT) or a count and replication factor
        (-1: ``num.partitions`` / ``default.replication.factor``, KIP-464; 0 or below -1:
        INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR; more replicas than unfenced brokers:
        INVALID_REPLICATION_FACTOR) placed round-robin from a seeded start over the unfenced brokers; the
        ISR is the unfenced replicas, the leader the first of them. On success the topic's records are
        appended and the result carries what was created."""
        image = self.ctx.image
        assignment: list[tuple[int, ...]]
        if t.assignment:
            if t.replication_factor != -1:
                return _refused(t, Errors.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                "replication factor was not set to -1.")
            if t.num_partitions != -1:
                return _refused(t, Errors.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                "numPartitions was not set to -1.")
            problem = self._validate_manual_assignment(t)
            if problem is not None:
                return _refused(t, Errors.INVALID_REPLICA_ASSIGNMENT, problem)
            assignment = [tuple(a) for a in t.assignment]
        elif t.replication_factor < -1 or t.replication_factor == 0:
            return _refused(t, Errors.INVALID_REPLICATION_FACTOR,
                            "Replication factor must be larger than 0, or -1 to use the default value.")
        elif t.num_partitions < -1 or t.num_partitions == 0:
            return _refused(t, Errors.INVALID_PARTITIONS,
                            "Number of partitions was set to an invalid non-positive value.")
        else:
            # Usable brokers: unfenced, not shutting down, with an online log directory (a Kafka broker with
            # none left would have halted: it is never placed on; kraftlog keeps such a broker up).
            active = sorted(b for b in image.brokers if image.is_acceptable_leader(b))
            rf = t.replication_factor if t.replication_factor > 0 else self.configs.lookup_static(
                "default.replication.factor")
            n = t.num_partitions if t.num_partitions > 0 else self.configs.lookup_static("num.partitions")
            if rf > len(active) or rf < 1:
                return _refused(t, Errors.INVALID_REPLICATION_FACTOR,
                                f"Unable to replicate the partition {rf} time(s): The target replication factor "
                                f"of {rf} cannot be reached because only {len(active)} broker(s) are unfenced "
                                "with an online log directory.")
            start = self.rng.randrange(len(active))
            assignment = [tuple(active[(start + p + i) % len(active)] for i in range(rf)) for p in range(n)]
        topic_id = uuid.UUID(int=self.rng.getrandbits(128))
        records: list[MetadataRecord] = [TopicRecord(t.name, topic_id)]
        for name, value in t.configs:
            records.append(ConfigRecord(RESOURCE_TOPIC, t.name, name, value))
        for p, replicas in enumerate(assignment):
            isr = tuple(r for r in replicas if image.is_acceptable_leader(r))
            records.append(PartitionRecord(partition_id=p, topic_id=topic_id, replicas=replicas, isr=isr,
                                           leader=isr[0], leader_epoch=0, partition_epoch=0))
        self.ctx.append(records, now_ms)
        return m.CreateTopicResult(t.name, Errors.NONE, topic_id=topic_id, num_partitions=len(assignment),
                                   replication_factor=len(assignment[0]))

    def _validate_manual_assignment(self, t: m.CreatableTopic) -> str | None:
        """Kafka's checks of a manual assignment (``createTopic`` and ``validateManualPartitionAssignment``):
        each partition once, an entry that is not empty, names registered brokers each once, has as many
        replicas as the first and at least one unfenced replica, and the partitions are 0..n-1. The
        INVALID_REPLICA_ASSIGNMENT message, or None."""
        image = self.ctx.image
        indexes = t.assignment_partitions or tuple(range(len(t.assignment)))
        seen: set[int] = set()
        rf = None
        for index, replicas in zip(indexes, t.assignment, strict=False):
            if index in seen:
                return f"Found multiple manual partition assignments for partition {index}"
            seen.add(index)
            if not replicas:
                return "The manual partition assignment includes an empty replica list."
            previous = None
            for broker in sorted(replicas):
                if broker not in image.brokers:
                    return (f"The manual partition assignment includes broker {broker}, but no such broker is "
                            "registered.")
                if broker == previous:
                    return f"The manual partition assignment includes the broker {broker} more than once."
                previous = broker
            if rf is not None and len(replicas) != rf:
                return (f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                        f"but this is not consistent with previous partitions, which have {rf} replica(s).")
            rf = len(replicas)
            if not any(image.is_acceptable_leader(b) for b in replicas):
                return (f"All brokers specified in the manual partition assignment for partition {index} are "
                        "fenced, in controlled shutdown or without an online log directory.")
        if seen != set(range(len(seen))):
            return "partitions should be a consecutive 0-based integer sequence"
        return None

    # ================================================================= CreatePartitions
    def handle_create_partitions(self, now_ms: int, req: m.CreatePartitionsRequest) -> m.CreatePartitionsResponse:
        """CreatePartitions (:func:`~.partition_creation.create_partitions`: Kafka's validation, one
        PartitionRecord per new partition, appended together unless ``validate_only``)."""
        records, results = create_partitions(self.ctx.image, self.rng, req)
        self.ctx.append(records, now_ms)
        return m.CreatePartitionsResponse(tuple(results))

    # ================================================================= DeleteTopics
    def handle_delete_topics(self, now_ms: int, req: m.DeleteTopicsRequest) -> m.DeleteTopicsResponse:
        """DeleteTopics (Kafka's ``ControllerApis.deleteTopics`` and ``ReplicationControlManager
        .deleteTopics``), topics named by ``topic_names`` and ``topic_ids``:

        * ``delete.topic.enable`` false (a cluster config: the static config or a cluster-level dynamic
          value; Kafka's is static only) fails the whole request: every topic gets TOPIC_DELETION_DISABLED
          and nothing changes (Kafka's ``getErrorResponse``: the request's name and id, no message).
          Kafka answers INVALID_REQUEST below DeleteTopics v3; the core message carries no version and the
          wire row serves v1 up, so kraftlog answers TOPIC_DELETION_DISABLED at every version.
        * a name given twice → INVALID_REQUEST "Duplicate topic name." (once, no topic id); an id given
          twice → INVALID_REQUEST "Duplicate topic id." (name None); the zero (or None) id → INVALID_REQUEST
          "Neither topic name nor id were specified."; none of them is deleted.
        * an unknown id → UNKNOWN_TOPIC_ID (name None); an unknown name → UNKNOWN_TOPIC_OR_PARTITION (no
          topic id), with Kafka's default messages; a name that maps to an id also given by id →
          INVALID_REQUEST "The provided topic name maps to an ID that was already supplied." (neither is
          deleted).
        * every other topic is deleted: one RemoveTopicRecord(topic_id) each, all of them written with one
          atomic append (Kafka's ``ControllerResult.atomicOf``), answered NONE with its name and id.

        Replaying a RemoveTopicRecord removes the topic, its partitions and its topic configs from the
        image; brokers drop the replicas and delete their files when they apply it. Kafka shuffles the
        results (so absent and unauthorised topics look alike); kraftlog keeps one deterministic order:
        the request's errors first, then the deleted topics in request order (names, then ids)."""
        if not self.configs.delete_topic_enabled():
            return m.DeleteTopicsResponse(
                tuple(m.DeletableTopicResult(name, Errors.TOPIC_DELETION_DISABLED) for name in req.topic_names)
                + tuple(m.DeletableTopicResult(None, Errors.TOPIC_DELETION_DISABLED, topic_id)
                        for topic_id in req.topic_ids))
        results: list[m.DeletableTopicResult] = []
        # dicts as insertion-ordered sets: the request's order, deterministically
        names: dict[str, None] = {}
        duplicate_names: dict[str, None] = {}
        for name in req.topic_names:
            if name in duplicate_names or name in names:
                duplicate_names[name] = None
                names.pop(name, None)
            else:
                names[name] = None
        ids: dict[uuid.UUID, None] = {}
        duplicate_ids: dict[uuid.UUID, None] = {}
        for topic_id in req.topic_ids:
            if topic_id is None or topic_id.int == 0:
                results.append(m.DeletableTopicResult(None, Errors.INVALID_REQUEST, None,
                                                      "Neither topic name nor id were specified."))
            elif topic_id in duplicate_ids or topic_id in ids:
                duplicate_ids[topic_id] = None
                ids.pop(topic_id, None)
            else:
                ids[topic_id] = None
        for name in duplicate_names:
            results.append(m.DeletableTopicResult(name, Errors.INVALID_REQUEST, None, "Duplicate topic name."))
        for topic_id in duplicate_ids:
            results.append(m.DeletableTopicResult(None, Errors.INVALID_REQUEST, topic_id, "Duplicate topic id."))
        image = self.ctx.image
        id_to_name: dict[uuid.UUID, str] = {}
        for topic_id in ids:  # findTopicNames
            found = image.topic_name(topic_id)
            if found is None:
                results.append(m.DeletableTopicResult(None, Errors.UNKNOWN_TOPIC_ID, topic_id,
                                                      _UNKNOWN_TOPIC_ID_MESSAGE))
            else:
                id_to_name[topic_id] = found
        by_name: dict[uuid.UUID, str] = {}
        for name in names:  # findTopicIds
            topic = image.topics.get(name)
            if topic is None:
                results.append(m.DeletableTopicResult(name, Errors.UNKNOWN_TOPIC_OR_PARTITION, None,
                                                      _UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
            elif topic.topic_id in duplicate_ids or topic.topic_id in id_to_name:
                id_to_name.pop(topic.topic_id, None)
                duplicate_ids[topic.topic_id] = None
                results.append(m.DeletableTopicResult(
                    name, Errors.INVALID_REQUEST, topic.topic_id,
                    "The provided topic name maps to an ID that was already supplied."))
            else:
                by_name[topic.topic_id] = name
        to_delete = {**by_name, **id_to_name}
        self.ctx.append([RemoveTopicRecord(topic_id) for topic_id in to_delete], now_ms)
        results.extend(m.DeletableTopicResult(name, Errors.NONE, topic_id) for topic_id, name in to_delete.items())
        return m.DeleteTopicsResponse(tuple(results))

    # ================================================================= AlterPartition
    def handle_alter_partition(self, now_ms: int, req: m.AlterPartitionRequest) -> m.AlterPartitionResponse:
        """Validate and apply an AlterPartition (KIP-497 / KIP-903) in Kafka's order:
        STALE_BROKER_EPOCH, UNKNOWN_TOPIC_ID, NOT_CONTROLLER (newer epochs), FENCED_LEADER_EPOCH,
        INVALID_REQUEST (sender not leader), INVALID_UPDATE_VERSION, INVALID_REQUEST (ISR not within
        replicas or without the leader), INELIGIBLE_REPLICA (unregistered, fenced, shutting down, or —
        level ``kip903``+ — a stale broker epoch)."""
        reg = self.ctx.image.brokers.get(req.broker_id)
        if reg is None or reg.broker_epoch != req.broker_epoch:
            return m.AlterPartitionResponse(Errors.STALE_BROKER_EPOCH, ())
        results: list[m.AlterPartitionResponseItem | m.AlterPartitionItem] = []
        records: list[MetadataRecord] = []
        for item in req.partitions:
            error, rec = self._validate_alter_partition(req.broker_id, item)
            if error != Errors.NONE:
                results.append(m.AlterPartitionResponseItem(item.topic_id, item.partition, error))
                continue
            if rec is not None:
                records.append(rec)
            results.append(item)
        self.ctx.append(records, now_ms)
        image = self.ctx.image
        out = []
        for r in results:
            if isinstance(r, m.AlterPartitionResponseItem):
                out.append(r)
                continue
            name = image.topic_name(r.topic_id)
            assert name is not None, r  # validated against this image above
            part = image.partitions[(name, r.partition)]
            out.append(m.AlterPartitionResponseItem(
                r.topic_id, r.partition, Errors.NONE, leader_id=part.leader, leader_epoch=part.leader_epoch,
                isr=part.isr, leader_recovery_state=part.leader_recovery_state,
                partition_epoch=part.partition_epoch))
        return m.AlterPartitionResponse(Errors.NONE, tuple(out))

    def _validate_alter_partition(self, broker_id: int, item: m.AlterPartitionItem
                                  ) -> tuple[int, PartitionChangeRecord | None]:
        """One partition of an AlterPartition: (error code, the change to append or None)."""
        image = self.ctx.image
        name = image.topic_name(item.topic_id)
        if name is None:
            return Errors.UNKNOWN_TOPIC_ID, None
        part = image.partitions.get((name, item.partition))
        if part is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
        if item.leader_epoch > part.leader_epoch or item.partition_epoch > part.partition_epoch:
            return Errors.NOT_CONTROLLER, None
        if item.leader_epoch < part.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH, None
        if broker_id != part.leader:
            return Errors.INVALID_REQUEST, None
        if item.partition_epoch < part.partition_epoch:
            return Errors.INVALID_UPDATE_VERSION, None
        new_isr = tuple(s.broker_id for s in item.new_isr_with_epochs)
        if (len(set(new_isr)) != len(new_isr) or any(b not in part.replicas for b in new_isr)
                or part.leader not in new_isr):
            return Errors.INVALID_REQUEST, None
        if item.leader_recovery_state not in (RECOVERED, RECOVERING) or (
                item.leader_recovery_state == RECOVERING and
                (part.leader_recovery_state == RECOVERED or len(new_isr) > 1)):
            return Errors.INVALID_REQUEST, None
        for state in item.new_isr_with_epochs:
            if state.broker_id in part.isr and state.broker_id == part.leader:
                continue
            b = image.brokers.get(state.broker_id)
            if b is None or b.fenced or b.in_controlled_shutdown:
                return Errors.INELIGIBLE_REPLICA, None
            if (self.level >= Level.KIP903 and state.broker_epoch != -1
                    and state.broker_epoch != b.broker_epoch):
                return Errors.INELIGIBLE_REPLICA, None
        rec = build_partition_change(
            part, item.topic_id, item.partition, is_acceptable_leader=image.is_acceptable_leader, level=self.level,
            min_isr=self.configs.min_isr(name), election=self.election_for(name),
            target_isr=new_isr, target_leader_recovery_state=item.leader_recovery_state,
            unclean_recovery=self.configs.unclean_recovery_enabled)
        return Errors.NONE, rec

    # ================================================================= a broker's state changes
    def has_leaderships(self, broker_id: int) -> bool:
        """Does the broker lead any partition? (Kafka's ``brokersToIsrs.hasLeaderships``)."""
        return any(part.leader == broker_id for part in self.ctx.image.partitions.values())

    def handle_broker_fenced(self, broker_id: int, broker_epoch: int,
                             in_controlled_shutdown: bool | None = None) -> list[MetadataRecord]:
        """Fence a broker: BrokerRegistrationChangeRecord + its removal from every ISR (Kafka's
        ``handleBrokerFenced``; fencing removes from the ISR, not from the ELR). ``in_controlled_shutdown``
        False also ends a controlled shutdown (SHUTDOWN_NOW)."""
        return [BrokerRegistrationChangeRecord(broker_id, broker_epoch, fenced=True,
                                               in_controlled_shutdown=in_controlled_shutdown),
                *self.remove_from_partitions(broker_id)]

    def handle_broker_unfenced(self, broker_id: int, broker_epoch: int) -> list[MetadataRecord]:
        """Unfence a broker: BrokerRegistrationChangeRecord, then elections for every leaderless partition
        (Kafka's ``handleBrokerUnfenced``: the broker counts as acceptable although the image still shows
        it fenced)."""
        image = self.ctx.image
        keys = [k for k in sorted(image.partitions) if image.partitions[k].leader == NO_LEADER]
        return [BrokerRegistrationChangeRecord(broker_id, broker_epoch, fenced=False),
                *self.generate_leader_and_isr_updates(image, keys, broker_to_add=broker_id)]

    def handle_broker_in_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[MetadataRecord]:
        """A broker enters controlled shutdown: BrokerRegistrationChangeRecord, then it leaves every ISR and
        its leaderships move (Kafka's ``handleBrokerInControlledShutdown``)."""
        return [BrokerRegistrationChangeRecord(broker_id, broker_epoch, in_controlled_shutdown=True),
                *self.remove_from_partitions(broker_id)]

    def remove_from_partitions(self, broker_id: int) -> list[PartitionChangeRecord]:
        """PartitionChangeRecords removing ``broker_id`` from ISRs and moving its leaderships
        (fencing, controlled shutdown and an offline directory)."""
        image = self.ctx.image
        keys = [k for k in sorted(image.partitions)
                if broker_id in image.partitions[k].isr or image.partitions[k].leader == broker_id]
        return self.generate_leader_and_isr_updates(image, keys, broker_to_remove=broker_id)

    def handle_broker_shutdown(self, broker_id: int, pending: list[MetadataRecord]) -> list[PartitionChangeRecord]:
        """PartitionChangeRecords for a broker that restarted after an unclean shutdown (KIP-966, Kafka's
        ``handleBrokerShutdown`` with isCleanShutdown false), after the ``pending`` records of the same
        registration: the partitions with it in the ISR, then those with it in the ELR."""
        image = self.ctx.image
        end_offset = self.ctx.end_offset
        if pending:
            image, _ = image.replay(pending, end_offset)
        keys = [k for k in sorted(image.partitions) if broker_id in image.partitions[k].isr]
        records = self.generate_leader_and_isr_updates(image, keys, broker_with_unclean_shutdown=broker_id)
        if records:
            image, _ = image.replay(records, end_offset + len(pending))
        keys = [k for k in sorted(image.partitions) if broker_id in image.partitions[k].elr]
        return records + self.generate_leader_and_isr_updates(image, keys, broker_with_unclean_shutdown=broker_id)

    def handle_directories_offline(self, broker_id: int, offline_dirs: Collection[uuid.UUID]) -> list[MetadataRecord]:
        """Kafka's ``ReplicationControlManager.handleDirectoriesOffline``: for the reported directories that
        the registration still lists as online, the broker leaves the ISR of its partitions in them and
        their leaderships move (as a fencing removes it: ``generateLeaderAndIsrUpdates`` with the broker to
        remove; a kraftlog broker has one log directory, so that is every partition it hosts), then a
        BrokerRegistrationChangeRecord with the directories left online. Nothing when none is newly
        offline (the broker repeats its offline directories in every heartbeat). The broker stays
        registered and unfenced: it keeps heartbeating and serving metadata, and can lead again only
        after a restart with the directory back (KIP-858)."""
        reg = self.ctx.image.brokers[broker_id]
        offline = set(offline_dirs)
        known = reg.log_dirs if reg.log_dirs is not None else tuple(sorted(offline))
        if not any(d in offline for d in known):
            return []
        remaining = tuple(d for d in known if d not in offline)
        return [*self.remove_from_partitions(broker_id),
                BrokerRegistrationChangeRecord(broker_id, reg.broker_epoch, log_dirs=remaining)]

    # ================================================================= elections
    def generate_leader_and_isr_updates(self, image: MetadataImage, keys: list[PartitionKey], *,
                                        broker_to_remove: int = NO_LEADER, broker_to_add: int = NO_LEADER,
                                        broker_with_unclean_shutdown: int = NO_LEADER) -> list[PartitionChangeRecord]:
        """Kafka's ``ReplicationControlManager.generateLeaderAndIsrUpdates`` over the partitions ``keys``
        ((topic, index), sorted) of ``image``: the removed and the unclean-shutdown broker leave the target
        ISR and may not lead; the added broker may lead although still fenced in ``image``; topics with
        ``unclean.leader.election.enable`` run an unclean election (``Election.UNCLEAN``)."""
        excluded = {broker_to_remove, broker_with_unclean_shutdown} - {NO_LEADER}
        unclean_shutdown = (frozenset((broker_with_unclean_shutdown,)) if broker_with_unclean_shutdown != NO_LEADER
                            else frozenset())

        def acceptable(b: int) -> bool:
            # Kafka's LeaderAcceptor: the broker to add counts as active, but needs an online log dir too.
            if b in excluded:
                return False
            if b == broker_to_add:
                reg = image.brokers.get(b)
                return reg is not None and reg.has_online_log_dir
            return image.is_acceptable_leader(b)

        records = []
        unclean_recovery = self.configs.unclean_recovery_enabled
        for topic, index in keys:
            part = image.partitions[(topic, index)]
            rec = build_partition_change(
                part, image.topics[topic].topic_id, index, is_acceptable_leader=acceptable,
                level=self.level, min_isr=self.configs.min_isr(topic, image),
                election=self.election_for(topic, image),
                target_isr=tuple(r for r in part.isr if r not in excluded),
                unclean_shutdown_replicas=unclean_shutdown, unclean_recovery=unclean_recovery)
            if rec is not None:
                records.append(rec)
        return records

    def election_for(self, topic: str, image: MetadataImage | None = None) -> Election:
        """``Election.UNCLEAN`` when ``unclean.leader.election.enable`` holds for the topic, else ONLINE."""
        return Election.UNCLEAN if self.configs.unclean_leader_election_enabled(topic, image) else Election.ONLINE

    def maybe_elect_unclean_leaders(self, now_ms: int) -> None:
        """The periodic unclean-election task (every ``unclean.leader.election.interval.ms``): an unclean
        election for each leaderless partition of a topic with ``unclean.leader.election.enable``
        (Kafka's ``maybeTriggerUncleanLeaderElectionForLeaderlessPartitions``)."""
        if self.configs.unclean_recovery_enabled:
            return  # KIP-966: the unclean recovery replaces the unclean leader election
        image = self.ctx.image
        keys = [(topic, index) for topic, index in sorted(image.partitions)
                if image.partitions[(topic, index)].leader == NO_LEADER
                and self.election_for(topic) is Election.UNCLEAN]
        self.ctx.append(self.generate_leader_and_isr_updates(image, keys), now_ms)

    # ================================================================= unclean recovery (level urm)
    def is_unfenced(self, broker_id: int) -> bool:
        """Registered, unfenced, not shutting down and with an online log directory: may lead (KIP-966:
        only unfenced replicas count; Kafka's LeaderAcceptor also wants the replica's directory online)."""
        return self.ctx.image.is_acceptable_leader(broker_id)

    def consider_recoveries(self, now_ms: int) -> None:
        """KIP-966 part 2, run on every heartbeat, registration, GetReplicaLogInfo answer and due timer:
        for each leaderless partition (in (topic, index) order) apply the decision order
        (:func:`~.unclean_recovery.recovery_decision`) under its ``unclean.recovery.strategy``: start the
        recoveries it calls for (each with ``unclean.recovery.timeout.ms`` as it is now), drop those no
        longer needed (a leader came back, the topic was deleted, the strategy changed; a recovery an
        operator started stays until the partition has a leader; a Balanced recovery whose LastKnownELR
        member was fenced again after it started stays too, and elects only once that member is back and
        has answered), and elect the replica each ready recovery chose (ISR [it], RECOVERING, ELR and
        LastKnownELR cleared); then answer the parked ElectLeaders requests that are done."""
        urm = self.urm
        image = self.ctx.image
        enabled = self.configs.unclean_recovery_enabled
        for key in sorted(urm.tasks):
            part = image.partitions.get(key)
            if part is None or part.leader != NO_LEADER or not enabled:
                urm.drop(now_ms, key, "the topic is gone" if part is None else
                         f"broker {part.leader} leads" if part.leader != NO_LEADER else "the URM is disabled")
        if not enabled:
            return
        is_unfenced = self.is_unfenced
        for key in sorted(image.partitions):
            part = image.partitions[key]
            if part.leader != NO_LEADER:
                continue
            task = urm.tasks.get(key)
            if task is not None and task.manual:
                continue
            strategy = self.configs.unclean_recovery_strategy(key[0])
            decision = recovery_decision(part, strategy, is_unfenced)
            if task is not None and decision in (Decision.RECOVER, Decision.PENDING) and task.strategy != strategy:
                urm.drop(now_ms, key, f"the strategy is now {strategy}")
                task = None
            if decision is Decision.RECOVER and task is None:
                urm.start(now_ms, key, part, strategy, self.configs.recovery_timeout_ms())
            elif task is not None and decision not in (Decision.RECOVER, Decision.PENDING):
                urm.drop(now_ms, key, {Decision.CLEAN: "an ISR or unfenced ELR member can lead",
                                       Decision.WAIT: "waiting for fenced ELR members",
                                       Decision.MANUAL: "the strategy is None"}[decision])
        records: list[MetadataRecord] = []
        elected: list[tuple[RecoveryTask, int]] = []
        for key in sorted(urm.tasks):
            task = urm.tasks[key]
            part = image.partitions[key]
            urm.revalidate(now_ms, task, image, part)
            leader = urm.ready_leader(now_ms, task, part, is_unfenced)
            if leader == NO_LEADER:
                continue
            rec = build_partition_change(
                part, image.topics[key[0]].topic_id, key[1], is_acceptable_leader=image.is_acceptable_leader,
                level=self.level, min_isr=self.configs.min_isr(key[0]), unclean_recovery=True,
                recovery_leader=leader)
            if rec is not None and rec.leader == leader:
                records.append(rec)
                elected.append((task, leader))
        if records:
            self.ctx.append(records, now_ms)
            for task, leader in elected:
                urm.elected(now_ms, task, leader)
        if self.parked_elections:
            self._answer_parked_elections(now_ms)

    def recovery_metrics(self) -> dict[str, int]:
        """KIP-966's controller metrics now: ``unclean_recovery_partitions_count`` (gauge: recoveries in
        progress, plus the Balanced ones pending until every LastKnownELR member is unfenced: KIP-966
        "it is also counted as a live recovery"), ``manual_leader_election_required_partition_count``
        (gauge: every leaderless partition that waits for an operator: no recovery runs for it and none
        will start by itself — strategy None with no ELR member, the one case the decision order leaves to
        ElectLeaders), ``unclean_recovery_finished_count`` (counter since this controller started; Kafka
        resets it on failover) and ``electable_replicas_count`` (gauge: the sum over partitions of |ISR| +
        |ELR|)."""
        image = self.ctx.image
        manual = pending = 0
        electable = 0
        enabled = self.configs.unclean_recovery_enabled
        for key in sorted(image.partitions):
            part = image.partitions[key]
            electable += len(part.isr) + len(part.elr)
            if not enabled or part.leader != NO_LEADER or key in self.urm.tasks:
                continue
            decision = recovery_decision(part, self.configs.unclean_recovery_strategy(key[0]), self.is_unfenced)
            manual += decision is Decision.MANUAL
            pending += decision is Decision.PENDING
        return {"unclean_recovery_partitions_count": len(self.urm.tasks) + pending,
                "manual_leader_election_required_partition_count": manual,
                "unclean_recovery_finished_count": self.urm.finished_count,
                "electable_replicas_count": electable}

    # ================================================================= ElectLeaders
    def handle_elect_leaders(self, now_ms: int, env: m.Envelope, req: m.ElectLeadersRequest) -> None:
        """ElectLeaders (Kafka's ``ReplicationControlManager.electLeaders``; v3 from KIP-966); ``req`` is
        ``env``'s message. Answers itself, at once or once parked (:class:`ParkedElection`).

        An unknown election type fails the whole request with INVALID_REQUEST. Per partition: PREFERRED
        and UNCLEAN as Kafka; at level ``urm`` (URM enabled) UNCLEAN runs an Aggressive recovery instead of
        the unclean election, LONGEST_LOG_BALANCED / LONGEST_LOG_AGGRESSIVE run a recovery with that
        strategy and DESIGNATION elects the partition's desired leader — each only for a partition without
        a leader (else ELECTION_NOT_NEEDED); a recovery that elects answers NONE, one still running when
        the request's ``timeout_ms`` ends answers REQUEST_TIMED_OUT (Kafka's DelayedElectLeader) and goes
        on. Only the first ``max.request.partition.size.limit`` partitions (when set; else KIP-966's 1,000)
        of a v3 request are served, the others get REQUEST_LIMIT_REACHED (KIP-966). Below level ``urm``
        types 2-4 are INVALID_REQUEST."""
        if req.election_type not in m.ELECTION_TYPES.values():
            # Kafka's ElectionType.valueOf refuses an unknown type: the whole request is INVALID_REQUEST.
            self.ctx.send_response(env, m.ElectLeadersResponse(Errors.INVALID_REQUEST, tuple(
                m.ElectLeadersResult(p.topic, p.partition, Errors.INVALID_REQUEST,
                                     f"unknown election type {req.election_type}") for p in req.partitions)))
            return
        limit = None
        if self.configs.unclean_recovery_enabled and (env.api_version is None or env.api_version >= 3):
            limit = self.configs.elect_leaders_partition_limit()
        results: list[ElectionOutcome] = []
        for i, p in enumerate(req.partitions):
            if limit is not None and i >= limit:
                results.append(m.ElectLeadersResult(
                    p.topic, p.partition, Errors.REQUEST_LIMIT_REACHED,
                    f"only the first {limit} partitions of a request are served (max.request.partition.size.limit)"))
                continue
            results.append(self._elect_one(now_ms, req.election_type, p))
        if any(isinstance(r, tuple) for r in results):
            self.consider_recoveries(now_ms)  # a recovery may elect at once (answers kept, or none needed)
            self.parked_elections.append(ParkedElection(now_ms + max(0, req.timeout_ms), env, results))
            self._answer_parked_elections(now_ms)
        else:
            self.ctx.send_response(env, m.ElectLeadersResponse(Errors.NONE, tuple(
                r for r in results if isinstance(r, m.ElectLeadersResult))))

    def _answer_parked_elections(self, now_ms: int) -> None:
        """Answer the ElectLeaders requests whose recoveries all ended (NONE for a partition that has a
        leader now) or whose timeout passed (REQUEST_TIMED_OUT for those still leaderless)."""
        keep = []
        for entry in self.parked_elections:
            results = entry.results
            for i, r in enumerate(results):
                if isinstance(r, tuple):
                    results[i] = self._parked_outcome(r, entry.deadline_ms, now_ms)
            answered = [r for r in results if isinstance(r, m.ElectLeadersResult)]
            if len(answered) == len(results):
                self.ctx.send_response(entry.request, m.ElectLeadersResponse(Errors.NONE, tuple(answered)))
            else:
                keep.append(entry)
        self.parked_elections = keep

    def _parked_outcome(self, key: PartitionKey, deadline_ms: int, now_ms: int) -> ElectionOutcome:
        """A parked partition's result once its recovery ended or its request's deadline passed; else
        ``key`` (still waiting)."""
        part = self.ctx.image.partitions.get(key)
        if part is None:
            return m.ElectLeadersResult(key[0], key[1], Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if part.leader != NO_LEADER:
            return m.ElectLeadersResult(key[0], key[1], Errors.NONE)
        if now_ms >= deadline_ms:
            return m.ElectLeadersResult(key[0], key[1], Errors.REQUEST_TIMED_OUT,
                                        "the unclean recovery has not elected a leader yet")
        return key

    def _elect_one(self, now_ms: int, election_type: int, p: m.ElectLeadersPartition) -> ElectionOutcome:
        """One partition of an ElectLeaders request: its ElectLeadersResult, or its (topic, index) when a
        recovery started for it must elect first."""
        image = self.ctx.image
        part = image.partitions.get((p.topic, p.partition))
        if part is None:
            return m.ElectLeadersResult(p.topic, p.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        key = (p.topic, p.partition)
        urm = self.configs.unclean_recovery_enabled
        recovery_leader = NO_LEADER
        if election_type == m.ELECTION_PREFERRED:
            if part.leader == part.replicas[0]:
                return m.ElectLeadersResult(p.topic, p.partition, Errors.ELECTION_NOT_NEEDED)
            election = Election.PREFERRED
        elif election_type == m.ELECTION_UNCLEAN or (urm and election_type in (
                m.ELECTION_LONGEST_LOG_BALANCED, m.ELECTION_LONGEST_LOG_AGGRESSIVE, m.ELECTION_DESIGNATION)):
            if part.leader != NO_LEADER:
                return m.ElectLeadersResult(p.topic, p.partition, Errors.ELECTION_NOT_NEEDED)
            election = Election.UNCLEAN if election_type == m.ELECTION_UNCLEAN else Election.ONLINE
            if election_type == m.ELECTION_DESIGNATION:
                if p.desired_leader not in part.replicas or not image.is_acceptable_leader(p.desired_leader):
                    return m.ElectLeadersResult(
                        p.topic, p.partition, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                        f"the desired leader {p.desired_leader} is not an unfenced replica of {list(part.replicas)}")
                recovery_leader = p.desired_leader
        else:
            return m.ElectLeadersResult(p.topic, p.partition, Errors.INVALID_REQUEST,
                                        f"election type {election_type} needs ElectLeaders v3 at level urm "
                                        "with unclean.recovery.manager.enabled")
        rec = build_partition_change(
            part, image.topics[p.topic].topic_id, p.partition, is_acceptable_leader=image.is_acceptable_leader,
            level=self.level, min_isr=self.configs.min_isr(p.topic), election=election,
            unclean_recovery=urm, recovery_leader=recovery_leader)
        if rec is not None and rec.leader is not None and rec.leader != NO_LEADER:
            self.ctx.append([rec], now_ms)
            self.urm.drop(now_ms, key, f"ElectLeaders elected broker {rec.leader}")
            return m.ElectLeadersResult(p.topic, p.partition, Errors.NONE)
        if urm and election_type in (m.ELECTION_UNCLEAN, m.ELECTION_LONGEST_LOG_BALANCED,
                                     m.ELECTION_LONGEST_LOG_AGGRESSIVE):
            # KIP-966: the longest-log elections, and UNCLEAN at level urm, run an unclean recovery.
            strategy = BALANCED if election_type == m.ELECTION_LONGEST_LOG_BALANCED else AGGRESSIVE
            self.urm.start(now_ms, key, part, strategy, self.configs.recovery_timeout_ms(), manual=True)
            return key
        if election is Election.PREFERRED:
            return m.ElectLeadersResult(p.topic, p.partition, Errors.PREFERRED_LEADER_NOT_AVAILABLE)
        return m.ElectLeadersResult(p.topic, p.partition, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE)

