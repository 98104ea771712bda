"""The KRaft controller as one sans-I/O node (Kafka's ``QuorumController``).

It owns the ``__cluster_metadata`` log (on its injected Disk, fsynced on every append, as a KRaft
quorum commits), the MetadataImage replayed from it, and the in-memory broker sessions. Pieces:

* cluster control: BrokerRegistration (broker epoch = offset of the RegisterBrokerRecord;
  DUPLICATE_BROKER_REGISTRATION while another incarnation's session is still valid), BrokerHeartbeat
  (unfence once caught up with the metadata log, fence after ``broker.session.timeout.ms`` without a
  heartbeat, controlled shutdown),
* replication control: CreateTopics, AlterPartition with Kafka's validation order (DESIGN.md), leader
  elections through :func:`build_partition_change`, ElectLeaders. As in Kafka, leaderless partitions are
  elected when a broker is unfenced (``handleBrokerUnfenced``) and, for topics with
  ``unclean.leader.election.enable``, by the periodic unclean-election task every
  ``unclean.leader.election.interval.ms`` (``maybeElectUncleanLeaders``) — never as a side effect of a
  config change,
* config control: IncrementalAlterConfigs → ConfigRecord,
* DeleteTopics → one RemoveTopicRecord per deleted topic, written atomically (``delete.topic.enable``),
* level ``urm`` (KIP-966 part 2): the Unclean Recovery Manager (:mod:`.unclean_recovery`) takes the place
  of the last-known-leader and unclean elections for partitions no ISR or ELR member can lead; it is
  reconsidered on every heartbeat, registration and unfencing, and asks the replicas with GetReplicaLogInfo
  (the controller's only requests); ElectLeaders v3 (LONGEST_LOG_*, DESIGNATION) drives it by hand,
* serving the metadata log to brokers (long-polled MetadataFetch).

Controller failover (``restart_controller``) builds a new instance over the same Disk: the log is
replayed and every registered broker gets a fresh session, as Kafka's new active controller does.

A metadata log that cannot be written (an OSError from the Disk: ENOSPC, EIO) stops the controller:
nothing is committed, ``fatal_error`` says why and the driver ends the process (Kafka's controller treats
a failed metadata log write as fatal and halts). With one controller the brokers keep serving the
leaders they have until it is back.
"""

from __future__ import annotations

from random import Random
import uuid

from ..metadata import config as cfg
from ..metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataApplyErrors, MetadataImage
from ..metadata.records import (
    NO_LEADER, RECOVERED, RECOVERING, BrokerRegistrationChangeRecord, ConfigRecord, PartitionRecord,
    RegisterBrokerRecord, RemoveTopicRecord, TopicRecord, ClearElrRecord,
)
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..level import Level
from ..protocol.node import NodeBase, earliest
from ..protocol.validation import (
    CLUSTER_METADATA_TOPIC, has_collision_chars, unify_collision_chars, validate_topic_name,
)
from ..storage.disk import Disk
from ..storage.meta_properties import read_identity
from .partition_change import Election, build_partition_change
from .unclean_recovery import AGGRESSIVE, BALANCED, Decision, UncleanRecoveryManager, recovery_decision

CONTROLLER = "controller"
#: Kafka's ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``: the most partitions one CreateTopics
#: request may create (POLICY_VIOLATION beyond).
MAX_PARTITIONS_PER_BATCH = 10_000
METADATA_LOG = "metadata/__cluster_metadata-0/00000000000000000000.log"
#: How many metadata records one MetadataFetch response carries at most.
MAX_RECORDS_PER_FETCH = 2000
#: Kafka's default messages (``Errors.message()``) that ``ApiError(error)`` puts into a DeleteTopics result.
_UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."
_UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def validate_new_topic_names(topics, existing) -> dict[str, tuple[int, str]]:
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


class MetadataLogFailure(Exception):
    """The metadata log could not be written: the controller has stopped (``fatal_error``); raised out of
    :meth:`QuorumController.append` to abandon the event that wanted the write."""


def _listener_strings(req: m.BrokerRegistrationRequest) -> tuple[str, ...]:
    """The request's listeners as Kafka's ``NAME://host:port`` strings, in the order sent."""
    return tuple(f"{lst.name}://{lst.host}:{lst.port}" for lst in req.listeners)


class QuorumController(NodeBase):
    """The controller node. ``config``: static configs (Kafka names → strings); ``disk`` holds the
    metadata log; ``rng`` is seeded by the driver (topic ids, replica placement); ``cluster_id``: a
    BrokerRegistration or metadata Fetch carrying another gets INCONSISTENT_CLUSTER_ID (104).

    ``verify_identity`` (the drivers pass True): before reading the metadata log the controller verifies
    its ``meta.properties`` (:func:`kraftlog.storage.meta_properties.read_identity`) and raises
    :class:`~kraftlog.storage.meta_properties.NodeIdentityError` when the directory is not formatted
    or belongs to another node or cluster: a lost metadata directory must not come back as an empty
    metadata log (the brokers would then forget every topic)."""

    def __init__(self, config: dict, level: Level, disk: Disk, rng: Random, now_ms: int,
                 cluster_id: str = "kraftlog", *, verify_identity: bool = False) -> None:
        super().__init__(CONTROLLER)
        if verify_identity:
            read_identity(disk, CONTROLLER, cluster_id)
        self.static = dict(config)
        self.level = level
        self.disk = disk
        self.rng = rng
        self.cluster_id = cluster_id
        self.log: list = list(disk.read(METADATA_LOG))
        #: Metadata records this controller could not apply (Kafka's ``metadata-apply-error-count``; Kafka's
        #: controller exits on one, kraftlog's logs it, counts it and applies the rest: a metadata log
        #: written before CreateTopics validated names still loads).
        self.metadata_apply_errors = MetadataApplyErrors()
        self.image = MetadataImage()
        if self.log:
            self._replay(self.log, 0)
        self.session_timeout_ms = int(cfg.lookup("broker.session.timeout.ms", self.static))
        # In-memory broker state (lost on failover; Kafka's BrokerHeartbeatManager).
        self.last_heartbeat_ms: dict[int, int] = {b: now_ms for b, reg in self.image.brokers.items()}
        self.controlled_shutdown_offset: dict[int, int] = {}
        #: The metadata offset each broker reported in its last heartbeat (Kafka's BrokerHeartbeatState).
        self.broker_metadata_offset: dict[int, int] = {}
        self.parked_fetches: list[tuple[int, m.Envelope, int]] = []
        self.unclean_election_interval_ms = int(cfg.lookup("unclean.leader.election.interval.ms", self.static))
        self.next_unclean_election_ms = now_ms + self.unclean_election_interval_ms
        #: KIP-966's Unclean Recovery Manager (level ``urm``; in memory, empty after a failover).
        self.urm = UncleanRecoveryManager()
        #: ElectLeaders requests waiting for recoveries they started: [deadline ms, envelope, results]
        #: where results[i] is an ElectLeadersResult or the (topic, index) still recovering.
        self.parked_elections: list[list] = []
        #: why the controller stopped by itself (its metadata log could not be written), None otherwise
        self.fatal_error: str | None = None
        #: request type -> handler(now_ms, request) -> response
        self._handlers = {
            m.BrokerHeartbeatRequest: self._handle_heartbeat,
            m.AlterPartitionRequest: self.handle_alter_partition,
            m.BrokerRegistrationRequest: self._handle_registration,
            m.CreateTopicsRequest: self._handle_create_topics,
            m.IncrementalAlterConfigsRequest: self._handle_alter_configs,
            m.DeleteTopicsRequest: self._handle_delete_topics,
        }

    # ================================================================= the metadata log
    @property
    def end_offset(self) -> int:
        """The metadata log end offset (next offset to be written)."""
        return len(self.log)

    @property
    def urm_enabled(self) -> bool:
        """Level ``urm`` with ``unclean.recovery.manager.enabled`` (a cluster config, static or dynamic):
        the Unclean Recovery Manager replaces the last-known-leader and unclean elections. False makes
        level ``urm`` behave exactly as ``elr``."""
        return self.level >= Level.URM and cfg.as_bool(
            self.image.config("unclean.recovery.manager.enabled", None, self.static))

    def append(self, records: list, now_ms: int) -> None:
        """Append records (committed at once: single-node quorum), replay them, wake parked fetches."""
        if not records:
            return
        base = len(self.log)
        # One write for the records of one event (KRaft appends them as one batch): a controller killed
        # around it restarts with all of them or none.
        try:
            self.disk.append_many(METADATA_LOG, records, now_ms)
            self.disk.fsync(METADATA_LOG, now_ms)
        except OSError as exc:
            self.fatal_error = f"the metadata log cannot be written: {exc}"
            self._outbox.clear()
            raise MetadataLogFailure(self.fatal_error) from exc
        self.log.extend(records)
        self._replay(records, base)
        if self.parked_fetches:
            parked, self.parked_fetches = self.parked_fetches, []
            for _, env, _ in parked:
                self._answer_metadata_fetch(env)

    def _replay(self, records, base: int) -> None:
        """Replay ``records`` (the first at metadata offset ``base``) into the image, counting those it
        cannot apply (``MetadataImage.replay`` skips them)."""
        self.image, delta = self.image.replay(records, base)
        for offset, record, reason in delta.errors:
            self.metadata_apply_errors.add(offset, record, reason)

    # ================================================================= node contract
    def tick(self, now_ms: int) -> None:
        if self.fatal_error is not None:
            return
        try:
            self._tick(now_ms)
        except MetadataLogFailure:
            pass  # stopped: the driver ends the process

    def _tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)
        if self.parked_fetches:
            keep = []
            for deadline, env, offset in self.parked_fetches:
                if deadline <= now_ms:
                    self._answer_metadata_fetch(env)
                else:
                    keep.append((deadline, env, offset))
            self.parked_fetches = keep
        self._fence_expired_sessions(now_ms)
        if now_ms >= self.next_unclean_election_ms:
            self.next_unclean_election_ms = now_ms + self.unclean_election_interval_ms
            self._maybe_elect_unclean_leaders(now_ms)
        if self.urm.tasks or self.parked_elections:
            self._consider_recoveries(now_ms)
        self._after_event(now_ms)

    def next_deadline(self) -> int | None:
        if self.fatal_error is not None:
            return None
        session = None
        for b, reg in self.image.brokers.items():
            if not reg.fenced:
                t = self.last_heartbeat_ms.get(b, 0) + self.session_timeout_ms
                session = t if session is None or t < session else session
        parked = min((d for d, _, _ in self.parked_fetches), default=None)
        elections = min((p[0] for p in self.parked_elections), default=None)
        return earliest(self._request_deadline(), parked, session, self.next_unclean_election_ms,
                        self.urm.next_deadline(), elections)

    def deliver(self, now_ms: int, envelope: m.Envelope) -> None:
        """NodeBase's, unless stopped; a metadata log that fails meanwhile stops the controller."""
        if self.fatal_error is not None:
            return
        try:
            super().deliver(now_ms, envelope)
        except MetadataLogFailure:
            pass  # stopped: the driver ends the process

    def on_response(self, now_ms, context, message) -> None:
        """The controller's only requests: the URM's GetReplicaLogInfo (context ``("log_info", broker,
        partitions)``)."""
        _, broker, keys = context
        self.urm.on_answer(now_ms, broker, keys, message, self.image)
        self._consider_recoveries(now_ms)
        self._after_event(now_ms)

    def on_timeout(self, now_ms, context) -> None:
        _, broker, keys = context
        self.urm.on_failure(now_ms, broker, keys)
        self._after_event(now_ms)

    def on_request(self, now_ms: int, env: m.Envelope) -> None:
        kind = type(env.message)
        if kind is m.MetadataFetchRequest:
            self._handle_metadata_fetch(now_ms, env)  # may be parked: answers itself
            return
        if kind is m.ElectLeadersRequest:
            self._handle_elect_leaders(now_ms, env)  # may wait for recoveries: answers itself
        else:
            handler = self._handlers.get(kind)
            if handler is not None:
                self.send_response(env, handler(now_ms, env.message))
            # Other APIs are broker APIs; a client sending them here gets no answer and times out,
            # as a Kafka controller listener does not expose them.
        self._after_event(now_ms)

    def _after_event(self, now_ms: int) -> None:
        """Send the GetReplicaLogInfo requests the URM's request sender has due (one per broker), each
        with ``unclean.recovery.timeout.ms`` as it is now for its timeout."""
        if not self.urm.queued:
            return
        image = self.image
        timeout_ms = self.recovery_timeout_ms()
        for broker, keys in self.urm.requests_due(now_ms):
            parts = tuple(m.GetReplicaLogInfoPartition(image.topics[t].topic_id, i) for t, i in keys
                          if t in image.topics)
            if not parts:
                self.urm.not_sent(broker)
                continue
            corr = self.send_request(broker, m.GetReplicaLogInfoRequest(parts), now_ms, timeout_ms,
                                     ("log_info", broker, keys))
            self.urm.sent(broker, keys, now_ms, timeout_ms, corr)

    def recovery_timeout_ms(self) -> int:
        """``unclean.recovery.timeout.ms`` now (ms): the cluster's dynamic value, else the static config,
        else KIP-966's 5 minutes. A recovery reads it when it starts (issue 25, rule 5)."""
        return int(self.image.config("unclean.recovery.timeout.ms", None, self.static))

    def _reask(self, now_ms: int, broker: int, reason: str) -> None:
        """Drop ``broker``'s outstanding GetReplicaLogInfo, if any, and ask it again at once (issue 25,
        rule 3); an answer to the dropped request is not read."""
        corr = self.urm.reask(now_ms, broker, reason)
        if corr is not None:
            self.cancel_request(corr)

    def _handle_delete_topics(self, now_ms: int, req: m.DeleteTopicsRequest) -> m.DeleteTopicsResponse:
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
        if not cfg.as_bool(self.image.config("delete.topic.enable", None, self.static)):
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
        image = self.image
        id_to_name: dict[uuid.UUID, str] = {}
        for topic_id in ids:  # findTopicNames
            name = image.topic_name(topic_id)
            if name is None:
                results.append(m.DeletableTopicResult(None, Errors.UNKNOWN_TOPIC_ID, topic_id,
                                                      _UNKNOWN_TOPIC_ID_MESSAGE))
            else:
                id_to_name[topic_id] = name
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
        self.append([RemoveTopicRecord(topic_id) for topic_id in to_delete], now_ms)
        results.extend(m.DeletableTopicResult(name, Errors.NONE, topic_id) for topic_id, name in to_delete.items())
        return m.DeleteTopicsResponse(tuple(results))

    # ================================================================= metadata fetch
    def _handle_metadata_fetch(self, now_ms: int, env: m.Envelope) -> None:
        """KafkaRaftClient.handleFetchRequest: a ClusterId other than ours (an absent one is accepted,
        ``hasValidClusterId``) → INCONSISTENT_CLUSTER_ID; a fetch offset past the log end or negative →
        OFFSET_OUT_OF_RANGE; otherwise the records from the fetch offset on, parked up to ``max_wait_ms``
        when there are none yet."""
        req: m.MetadataFetchRequest = env.message
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self.send_response(env, m.MetadataFetchResponse(Errors.INCONSISTENT_CLUSTER_ID, -1, -1))
        elif req.fetch_offset > self.end_offset or req.fetch_offset < 0:
            self.send_response(env, m.MetadataFetchResponse(Errors.OFFSET_OUT_OF_RANGE, self.end_offset,
                                                            req.fetch_offset))
        elif req.fetch_offset < self.end_offset or req.max_wait_ms <= 0:
            self._answer_metadata_fetch(env)
        else:
            self.parked_fetches.append((now_ms + req.max_wait_ms, env, req.fetch_offset))

    def _answer_metadata_fetch(self, env: m.Envelope) -> None:
        req = env.message
        start = req.fetch_offset
        records = tuple(self.log[start:start + MAX_RECORDS_PER_FETCH])
        self.send_response(env, m.MetadataFetchResponse(Errors.NONE, self.end_offset, start, records))

    # ================================================================= cluster control
    def _handle_registration(self, now_ms: int, req: m.BrokerRegistrationRequest) -> m.BrokerRegistrationResponse:
        """Kafka's ``ClusterControlManager.registerBroker``.

        * Another incarnation while the old one's session is still valid → DUPLICATE_BROKER_REGISTRATION.
        * The *same* incarnation id as the registered one is an amendment (a retry whose first response
          was lost): the RegisterBrokerRecord keeps the broker epoch and the fencing/shutdown state, and
          no shutdown handling runs.
        * A new incarnation gets a new broker epoch (the record's offset) and the previous incarnation's
          shutdown is handled (``BrokerShutdownHandler``): level ``elr``+ with PreviousBrokerEpoch different
          from the stored epoch is an unclean shutdown (KIP-966: the broker leaves every ISR and ELR, its
          ELR memberships go to LastKnownELR); otherwise it is handled as a fencing.

        First of all, a ClusterId other than the controller's → INCONSISTENT_CLUSTER_ID, nothing written."""
        if req.cluster_id != self.cluster_id:
            return m.BrokerRegistrationResponse(Errors.INCONSISTENT_CLUSTER_ID)
        old = self.image.brokers.get(req.broker_id)
        if old is not None and old.incarnation_id == req.incarnation_id:
            self.append([RegisterBrokerRecord(
                broker_id=req.broker_id, incarnation_id=req.incarnation_id, broker_epoch=old.broker_epoch,
                rack=req.rack, fenced=old.fenced, in_controlled_shutdown=old.in_controlled_shutdown,
                previous_broker_epoch=req.previous_broker_epoch, listeners=_listener_strings(req),
                log_dirs=tuple(req.log_dirs) or None)], now_ms)
            self.last_heartbeat_ms[req.broker_id] = now_ms
            return m.BrokerRegistrationResponse(Errors.NONE, broker_epoch=old.broker_epoch)
        records: list = []
        if old is not None:
            if not old.fenced and now_ms - self.last_heartbeat_ms.get(req.broker_id, -10**12) < self.session_timeout_ms:
                # Kafka: another incarnation still holds a valid session.
                if self.urm.tasks:  # ... but the process that answered GetReplicaLogInfo is gone
                    self.urm.forget_answers(now_ms, req.broker_id, "a new incarnation is registering")
                return m.BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION)
            clean = self.level < Level.ELR or req.previous_broker_epoch == old.broker_epoch
            if not old.fenced:
                records += self._fence_records(req.broker_id, old.broker_epoch)
            if not clean:
                records += self._unclean_shutdown_records(req.broker_id, records)
        epoch = self.end_offset + len(records)
        records.append(RegisterBrokerRecord(
            broker_id=req.broker_id, incarnation_id=req.incarnation_id, broker_epoch=epoch,
            rack=req.rack, fenced=True, in_controlled_shutdown=False,
            previous_broker_epoch=req.previous_broker_epoch, listeners=_listener_strings(req),
            log_dirs=tuple(req.log_dirs) or None))
        self.append(records, now_ms)
        self.last_heartbeat_ms[req.broker_id] = now_ms
        self.controlled_shutdown_offset.pop(req.broker_id, None)
        self.broker_metadata_offset.pop(req.broker_id, None)
        if self.urm.tasks:
            # The new broker epoch makes this broker's earlier answers stale, and a question to the
            # previous incarnation will not be answered: ask it again at once.
            self._reask(now_ms, req.broker_id, "registered again")
            self.urm.retry_failed(req.broker_id)
            self._consider_recoveries(now_ms)
        return m.BrokerRegistrationResponse(Errors.NONE, broker_epoch=epoch)

    def _handle_heartbeat(self, now_ms: int, req: m.BrokerHeartbeatRequest) -> m.BrokerHeartbeatResponse:
        """Kafka's ``BrokerHeartbeatManager.calculateNextBrokerState`` and
        ``ReplicationControlManager.processBrokerHeartbeat``:

        * fenced: a shutdown request is granted at once; otherwise unfence once the broker's metadata
          offset reached its RegisterBrokerRecord, and elect leaderless partitions (``handleBrokerUnfenced``);
        * unfenced, wanting to shut down: with no leaderships, fenced and granted at once; else enter
          controlled shutdown (leave every ISR, move leaderships: ``handleBrokerInControlledShutdown``);
        * in controlled shutdown: granted (and fenced) once it leads nothing and every active broker
          (unfenced, not shutting down) reported a metadata offset at or past the controlled shutdown
          offset (``lowestActiveOffset``)."""
        reg = self.image.brokers.get(req.broker_id)
        if reg is None:
            return m.BrokerHeartbeatResponse(Errors.BROKER_ID_NOT_REGISTERED)
        if reg.broker_epoch != req.broker_epoch:
            return m.BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH)
        b = req.broker_id
        self.last_heartbeat_ms[b] = now_ms
        self.broker_metadata_offset[b] = req.current_metadata_offset
        if req.offline_log_dirs:
            # KIP-858 (handleDirectoriesOffline). Kafka runs it after the state change, but a Kafka broker
            # never registers a failed directory as online; a kraftlog broker registers its one directory
            # and reports it offline in its first heartbeat, so it is applied first: an unfencing in the same
            # heartbeat must not make the broker a leader.
            self.append(self._directories_offline_records(b, req.offline_log_dirs), now_ms)
            reg = self.image.brokers[b]
        caught_up = req.current_metadata_offset >= reg.broker_epoch
        should_shut_down = False
        was_fenced = reg.fenced
        if reg.fenced:
            if req.want_shut_down:
                should_shut_down = True
            elif not req.want_fence and caught_up:
                self.append([BrokerRegistrationChangeRecord(b, reg.broker_epoch, fenced=False)]
                            + self._elect_leaderless_records(b), now_ms)
        elif not reg.in_controlled_shutdown:
            if req.want_fence or (req.want_shut_down and not self._has_leaderships(b)):
                self.append(self._fence_records(b, reg.broker_epoch), now_ms)
                should_shut_down = req.want_shut_down
            elif req.want_shut_down:
                records = [BrokerRegistrationChangeRecord(b, reg.broker_epoch, in_controlled_shutdown=True)]
                records += self._remove_from_partitions(b)
                self.append(records, now_ms)
                self.controlled_shutdown_offset[b] = self.end_offset - 1
        elif not self._has_leaderships(b) and self.controlled_shutdown_offset.get(b, -1) <= self._lowest_active_offset():
            # SHUTDOWN_NOW: the broker is fenced as it leaves (handleBrokerFenced).
            self.append(self._fence_records(b, reg.broker_epoch, in_controlled_shutdown=False), now_ms)
            should_shut_down = True
        reg = self.image.brokers[b]
        if self.urm_enabled or self.urm.tasks:
            # KIP-966: recovery is reconsidered on every heartbeat (and so on every unfencing); a
            # request to this broker that failed is sent again, and one still outstanding is sent again
            # at once when the broker was just unfenced or the question is overdue (issue 25, rule 3).
            if was_fenced and not reg.fenced:
                self._reask(now_ms, b, "is unfenced")
            elif self.urm.question_overdue(now_ms, b):
                self._reask(now_ms, b, "heartbeated after its question's timeout")
            self.urm.retry_failed(b)
            self._consider_recoveries(now_ms)
        return m.BrokerHeartbeatResponse(Errors.NONE, is_caught_up=caught_up, is_fenced=reg.fenced,
                                         should_shut_down=should_shut_down)

    def _directories_offline_records(self, broker_id: int, offline_dirs) -> list:
        """Kafka's ``ReplicationControlManager.handleDirectoriesOffline``: for the reported directories that
        the registration still lists as online, the broker leaves the ISR of its partitions in them and
        their leaderships move (as a fencing removes it: ``generateLeaderAndIsrUpdates`` with the broker to
        remove; a kraftlog broker has one log directory, so that is every partition it hosts), then a
        BrokerRegistrationChangeRecord with the directories left online. Nothing when none is newly
        offline (the broker repeats its offline directories in every heartbeat). The broker stays
        registered and unfenced: it keeps heartbeating and serving metadata, and can lead again only
        after a restart with the directory back (KIP-858)."""
        reg = self.image.brokers[broker_id]
        offline = set(offline_dirs)
        known = reg.log_dirs if reg.log_dirs is not None else tuple(sorted(offline))
        if not any(d in offline for d in known):
            return []
        remaining = tuple(d for d in known if d not in offline)
        return (self._remove_from_partitions(broker_id)
                + [BrokerRegistrationChangeRecord(broker_id, reg.broker_epoch, log_dirs=remaining)])

    def _has_leaderships(self, broker_id: int) -> bool:
        """Does the broker lead any partition? (Kafka's ``brokersToIsrs.hasLeaderships``)."""
        return any(part.leader == broker_id for part in self.image.partitions.values())

    def _lowest_active_offset(self) -> int:
        """The lowest metadata offset reported by an active broker (unfenced, not in controlled shutdown),
        or a huge number when there is none (Kafka's ``BrokerHeartbeatManager.lowestActiveOffset``)."""
        offsets = [self.broker_metadata_offset.get(b, -1) for b in sorted(self.image.brokers)
                   if self.image.is_active(b)]
        return min(offsets) if offsets else 2**63 - 1

    def _fence_expired_sessions(self, now_ms: int) -> None:
        for b in sorted(self.image.brokers):
            reg = self.image.brokers[b]
            if not reg.fenced and now_ms - self.last_heartbeat_ms.get(b, now_ms) >= self.session_timeout_ms:
                self.append(self._fence_records(b, reg.broker_epoch), now_ms)

    def _fence_records(self, broker_id: int, broker_epoch: int, in_controlled_shutdown: bool | None = None) -> list:
        """Fence a broker: BrokerRegistrationChangeRecord + its removal from every ISR (Kafka's
        ``handleBrokerFenced``; fencing removes from the ISR, not from the ELR). ``in_controlled_shutdown``
        False also ends a controlled shutdown (SHUTDOWN_NOW)."""
        return ([BrokerRegistrationChangeRecord(broker_id, broker_epoch, fenced=True,
                                                in_controlled_shutdown=in_controlled_shutdown)]
                + self._remove_from_partitions(broker_id))

    def _remove_from_partitions(self, broker_id: int) -> list:
        """PartitionChangeRecords removing ``broker_id`` from ISRs and moving its leaderships
        (fencing and controlled shutdown: Kafka's ``handleBrokerFenced`` /
        ``handleBrokerInControlledShutdown``)."""
        image = self.image
        keys = [k for k in sorted(image.partitions)
                if broker_id in image.partitions[k].isr or image.partitions[k].leader == broker_id]
        return self._generate_leader_and_isr_updates(image, keys, broker_to_remove=broker_id)

    def _unclean_shutdown_records(self, broker_id: int, pending: list) -> list:
        """PartitionChangeRecords for a broker that restarted after an unclean shutdown (KIP-966, Kafka's
        ``handleBrokerShutdown`` with isCleanShutdown false): the partitions with it in the ISR, then
        those with it in the ELR."""
        image = self.image
        if pending:
            image, _ = image.replay(pending, self.end_offset)
        keys = [k for k in sorted(image.partitions) if broker_id in image.partitions[k].isr]
        records = self._generate_leader_and_isr_updates(image, keys, broker_with_unclean_shutdown=broker_id)
        if records:
            image, _ = image.replay(records, self.end_offset + len(pending))
        keys = [k for k in sorted(image.partitions) if broker_id in image.partitions[k].elr]
        return records + self._generate_leader_and_isr_updates(image, keys, broker_with_unclean_shutdown=broker_id)

    def _elect_leaderless_records(self, broker_to_add: int) -> list:
        """Elections for every leaderless partition when ``broker_to_add`` is unfenced (Kafka's
        ``handleBrokerUnfenced``: it counts as acceptable although the image still shows it fenced)."""
        image = self.image
        keys = [k for k in sorted(image.partitions) if image.partitions[k].leader == NO_LEADER]
        return self._generate_leader_and_isr_updates(image, keys, broker_to_add=broker_to_add)

    def _generate_leader_and_isr_updates(self, image, keys, *, broker_to_remove: int = NO_LEADER,
                                         broker_to_add: int = NO_LEADER,
                                         broker_with_unclean_shutdown: int = NO_LEADER) -> list:
        """Kafka's ``ReplicationControlManager.generateLeaderAndIsrUpdates`` over the partitions ``keys``
        ((topic, index), sorted): the removed and the unclean-shutdown broker leave the target ISR and
        may not lead; the added broker may lead although still fenced in ``image``; topics with
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
        for topic, index in keys:
            part = image.partitions[(topic, index)]
            rec = build_partition_change(
                part, image.topics[topic].topic_id, index, is_acceptable_leader=acceptable,
                level=self.level, min_isr=image.min_isr(topic, self.static),
                election=self._election_for(topic, image),
                target_isr=tuple(r for r in part.isr if r not in excluded),
                unclean_shutdown_replicas=unclean_shutdown, unclean_recovery=self.urm_enabled)
            if rec is not None:
                records.append(rec)
        return records

    def _election_for(self, topic: str, image=None) -> Election:
        """``Election.UNCLEAN`` when ``unclean.leader.election.enable`` holds for the topic, else ONLINE."""
        image = self.image if image is None else image
        enabled = cfg.as_bool(image.config("unclean.leader.election.enable", topic, self.static))
        return Election.UNCLEAN if enabled else Election.ONLINE

    def _maybe_elect_unclean_leaders(self, now_ms: int) -> None:
        """The periodic unclean-election task (every ``unclean.leader.election.interval.ms``): an unclean
        election for each leaderless partition of a topic with ``unclean.leader.election.enable``
        (Kafka's ``maybeTriggerUncleanLeaderElectionForLeaderlessPartitions``)."""
        if self.urm_enabled:
            return  # KIP-966: the unclean recovery replaces the unclean leader election
        image = self.image
        keys = [(topic, index) for topic, index in sorted(image.partitions)
                if image.partitions[(topic, index)].leader == NO_LEADER
                and self._election_for(topic) is Election.UNCLEAN]
        self.append(self._generate_leader_and_isr_updates(image, keys), now_ms)

    # ================================================================= AlterPartition
    def handle_alter_partition(self, now_ms: int, req: m.AlterPartitionRequest) -> m.AlterPartitionResponse:
        """Validate and apply an AlterPartition (KIP-497 / KIP-903) in Kafka's order:
        STALE_BROKER_EPOCH, UNKNOWN_TOPIC_ID, NOT_CONTROLLER (newer epochs), FENCED_LEADER_EPOCH,
        INVALID_REQUEST (sender not leader), INVALID_UPDATE_VERSION, INVALID_REQUEST (ISR not within
        replicas or without the leader), INELIGIBLE_REPLICA (unregistered, fenced, shutting down, or —
        level ``kip903``+ — a stale broker epoch)."""
        reg = self.image.brokers.get(req.broker_id)
        if reg is None or reg.broker_epoch != req.broker_epoch:
            return m.AlterPartitionResponse(Errors.STALE_BROKER_EPOCH, ())
        results = []
        records = []
        for item in req.partitions:
            error, rec = self._validate_alter_partition(req.broker_id, item)
            if error != Errors.NONE:
                results.append(m.AlterPartitionResponseItem(item.topic_id, item.partition, error))
                continue
            if rec is not None:
                records.append(rec)
            results.append(item)
        self.append(records, now_ms)
        out = []
        for r in results:
            if isinstance(r, m.AlterPartitionResponseItem):
                out.append(r)
                continue
            name = self.image.topic_name(r.topic_id)
            part = self.image.partitions[(name, r.partition)]
            out.append(m.AlterPartitionResponseItem(
                r.topic_id, r.partition, Errors.NONE, leader_id=part.leader, leader_epoch=part.leader_epoch,
                isr=part.isr, leader_recovery_state=part.leader_recovery_state,
                partition_epoch=part.partition_epoch))
        return m.AlterPartitionResponse(Errors.NONE, tuple(out))

    def _validate_alter_partition(self, broker_id: int, item: m.AlterPartitionItem):
        image = self.image
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
            min_isr=image.min_isr(name, self.static), election=self._election_for(name),
            target_isr=new_isr, target_leader_recovery_state=item.leader_recovery_state,
            unclean_recovery=self.urm_enabled)
        return Errors.NONE, rec

    # ================================================================= topics & configs
    def _handle_create_topics(self, now_ms: int, req: m.CreateTopicsRequest) -> m.CreateTopicsResponse:
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
        * configs (``computeConfigChanges`` and ConfigurationControlManager's validation): a null value, a
          name kraftlog does not know or a value of the wrong type or range: INVALID_CONFIG naming it;
        * then :meth:`_create_topic` (counts, assignments, placement).

        Each created topic is appended at once (one atomic append of its TopicRecord, ConfigRecords and
        PartitionRecords), so a later topic of the request sees it."""
        default_partitions = int(cfg.lookup("num.partitions", self.static))
        total = sum((default_partitions if t.num_partitions == -1 else max(0, t.num_partitions))
                    if not t.assignment else len(t.assignment) for t in topics)
        if total > MAX_PARTITIONS_PER_BATCH:
            return [m.CreateTopicResult(t.name, Errors.POLICY_VIOLATION,
                                        error_message="Excessively large number of partitions per request.")
                    for t in topics]
        errors = validate_new_topic_names(topics, self.image.topics)
        results = []
        for t in topics:
            error = errors.get(t.name)
            if error is None and t.name in self.image.topics:
                error = (Errors.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
            if error is None:
                error = self._invalid_topic_configs(t.configs)
            if error is None:
                result = self._create_topic(now_ms, t)
                if result.error_code == Errors.NONE:
                    results.append(result)
                    continue
                error = (result.error_code, result.error_message)
            results.append(m.CreateTopicResult(t.name, error[0], error_message=error[1]))
        return results

    def _invalid_topic_configs(self, configs) -> tuple[int, str] | None:
        """A topic's configs as Kafka's ``computeConfigChanges`` and ConfigurationControlManager check them:
        (INVALID_CONFIG, message) for null values, names kraftlog does not know (a broker config name is
        accepted and has no effect, docs/SCENARIOS.md), names of a higher level, and values of the wrong
        type or range (:func:`kraftlog.metadata.config.invalid_value`); else None."""
        nulls = [name for name, value in configs if value is None]
        if nulls:
            return Errors.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}"
        unknown = [name for name, _ in configs if name not in cfg.KNOWN_CONFIGS]
        if unknown:
            return Errors.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}"
        for name, value in configs:
            problem = cfg.unknown_at_level(name, self.level) or cfg.invalid_value(name, value)
            if problem:
                return Errors.INVALID_CONFIG, problem
        return None

    def _create_topic(self, now_ms: int, t: m.CreatableTopic) -> m.CreateTopicResult:
        """Kafka's ``ReplicationControlManager.createTopic`` for one validated name: a manual assignment
        (replication factor and partition count must then be -1: INVALID_REQUEST;
        :meth:`_validate_manual_assignment`: INVALID_REPLICA_ASSIGNMENT) or a count and replication factor
        (-1: ``num.partitions`` / ``default.replication.factor``, KIP-464; 0 or below -1:
        INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR; more replicas than unfenced brokers:
        INVALID_REPLICATION_FACTOR) placed round-robin from a seeded start over the unfenced brokers; the
        ISR is the unfenced replicas, the leader the first of them. On success the topic's records are
        appended and the result carries what was created."""
        image = self.image
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
            rf = t.replication_factor if t.replication_factor > 0 else int(
                cfg.lookup("default.replication.factor", self.static))
            n = t.num_partitions if t.num_partitions > 0 else int(cfg.lookup("num.partitions", self.static))
            if rf > len(active) or rf < 1:
                return _refused(t, Errors.INVALID_REPLICATION_FACTOR,
                                f"Unable to replicate the partition {rf} time(s): The target replication factor "
                                f"of {rf} cannot be reached because only {len(active)} broker(s) are unfenced "
                                "with an online log directory.")
            start = self.rng.randrange(len(active))
            assignment = [tuple(active[(start + p + i) % len(active)] for i in range(rf)) for p in range(n)]
        topic_id = uuid.UUID(int=self.rng.getrandbits(128))
        records: list = [TopicRecord(t.name, topic_id)]
        for name, value in t.configs:
            records.append(ConfigRecord(RESOURCE_TOPIC, t.name, name, value))
        for p, replicas in enumerate(assignment):
            isr = tuple(r for r in replicas if image.is_acceptable_leader(r))
            records.append(PartitionRecord(partition_id=p, topic_id=topic_id, replicas=replicas, isr=isr,
                                           leader=isr[0], leader_epoch=0, partition_epoch=0))
        self.append(records, now_ms)
        return m.CreateTopicResult(t.name, Errors.NONE, topic_id=topic_id, num_partitions=len(assignment),
                                   replication_factor=len(assignment[0]))

    def _validate_manual_assignment(self, t: m.CreatableTopic) -> str | None:
        """Kafka's checks of a manual assignment (``createTopic`` and ``validateManualPartitionAssignment``):
        each partition once, an entry that is not empty, names registered brokers each once, has as many
        replicas as the first and at least one unfenced replica, and the partitions are 0..n-1. The
        INVALID_REPLICA_ASSIGNMENT message, or None."""
        indexes = t.assignment_partitions or tuple(range(len(t.assignment)))
        seen: set[int] = set()
        rf = None
        for index, replicas in zip(indexes, t.assignment):
            if index in seen:
                return f"Found multiple manual partition assignments for partition {index}"
            seen.add(index)
            if not replicas:
                return "The manual partition assignment includes an empty replica list."
            previous = None
            for broker in sorted(replicas):
                if broker not in self.image.brokers:
                    return (f"The manual partition assignment includes broker {broker}, but no such broker is "
                            "registered.")
                if broker == previous:
                    return f"The manual partition assignment includes the broker {broker} more than once."
                previous = broker
            if rf is not None and len(replicas) != rf:
                return (f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                        f"but this is not consistent with previous partitions, which have {rf} replica(s).")
            rf = len(replicas)
            if not any(self.image.is_acceptable_leader(b) for b in replicas):
                return (f"All brokers specified in the manual partition assignment for partition {index} are "
                        "fenced, in controlled shutdown or without an online log directory.")
        if seen != set(range(len(seen))):
            return "partitions should be a consecutive 0-based integer sequence"
        return None

    def _handle_alter_configs(self, now_ms: int, req: m.IncrementalAlterConfigsRequest):
        out = []
        for res in req.resources:
            if res.resource_type == RESOURCE_TOPIC and res.resource_name not in self.image.topics:
                out.append(m.AlterConfigsResourceResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, res.resource_type,
                                                          res.resource_name))
                continue
            if res.resource_type not in (RESOURCE_TOPIC, RESOURCE_BROKER):
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_REQUEST, res.resource_type,
                                                          res.resource_name))
                continue
            ops = [c.config_operation for c in res.configs if c.config_operation not in (m.OP_SET, m.OP_DELETE)]
            if ops:
                # Kafka's OpType: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (for list configs, which kraftlog has
                # none of: INVALID_CONFIG); another id is INVALID_REQUEST.
                known = ops[0] in (m.OP_APPEND, m.OP_SUBTRACT)
                out.append(m.AlterConfigsResourceResponse(
                    Errors.INVALID_CONFIG if known else Errors.INVALID_REQUEST, res.resource_type, res.resource_name,
                    f"Can not apply {'APPEND' if ops[0] == m.OP_APPEND else 'SUBTRACT'} operation to a non-list "
                    "configuration" if known else f"Unknown operation type {ops[0]}"))
                continue
            bad = [c.name for c in res.configs if c.name not in cfg.KNOWN_CONFIGS]
            if bad:
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, f"unknown configs {bad}"))
                continue
            invalid = [cfg.unknown_at_level(c.name, self.level) for c in res.configs]
            invalid += [cfg.invalid_value(c.name, c.value) for c in res.configs if c.config_operation != m.OP_DELETE]
            if any(invalid):  # Kafka's ConfigDef validation: the whole resource is refused
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, next(x for x in invalid if x)))
                continue
            refused = self._refused_min_isr_change(res)
            if refused:
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, refused))
                continue
            if not req.validate_only:
                records: list = []
                for c in res.configs:
                    value = None if c.config_operation == m.OP_DELETE else c.value
                    records.append(ConfigRecord(res.resource_type, res.resource_name, c.name, value))
                if self.level >= Level.ELR and any(c.name == "min.insync.replicas" for c in res.configs):
                    # KIP-966: any min.insync.replicas change clears the ELR, LastKnownELR and the last
                    # known leader (Kafka's createClearElrRecordsAsNeeded).
                    topic = res.resource_name if res.resource_type == RESOURCE_TOPIC else None
                    records.append(ClearElrRecord(topic))
                self.append(records, now_ms)
            out.append(m.AlterConfigsResourceResponse(Errors.NONE, res.resource_type, res.resource_name))
        # No election here: Kafka elects on unfencing and in the periodic unclean-election task only.
        return m.IncrementalAlterConfigsResponse(tuple(out))

    def _refused_min_isr_change(self, res) -> str | None:
        """While ELR is enabled (level ``elr``+) Kafka refuses a broker-level ``min.insync.replicas`` and
        the removal of the cluster-level one with INVALID_CONFIG (``ConfigurationControlManager``
        ``isDisallowedBrokerMinIsrTransition`` / ``isDisallowedClusterMinIsrTransition``); the message."""
        if self.level < Level.ELR or res.resource_type != RESOURCE_BROKER:
            return None
        for c in res.configs:
            if c.name != "min.insync.replicas":
                continue
            if res.resource_name != "":
                return "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
            if c.config_operation == m.OP_DELETE:
                return "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
        return None

    # ================================================================= unclean recovery (level urm)
    def _consider_recoveries(self, now_ms: int) -> None:
        """KIP-966 part 2, run on every heartbeat, registration, GetReplicaLogInfo answer and due timer:
        for each leaderless partition (in (topic, index) order) apply the decision order
        (:func:`~.unclean_recovery.recovery_decision`) under its ``unclean.recovery.strategy``: start the
        recoveries it calls for (each with ``unclean.recovery.timeout.ms`` as it is now), drop those no
        longer needed (a leader came back, the topic was deleted, the strategy changed; a recovery an
        operator started stays until the partition has a leader; a Balanced recovery whose LastKnownELR
        member was fenced again after it started stays too, and elects only once that member is back and
        has answered), and elect the replica each ready recovery chose (ISR [it], RECOVERING, ELR and
        LastKnownELR cleared)."""
        urm = self.urm
        image = self.image
        enabled = self.urm_enabled
        for key in sorted(urm.tasks):
            part = image.partitions.get(key)
            if part is None or part.leader != NO_LEADER or not enabled:
                urm.drop(now_ms, key, "the topic is gone" if part is None else
                         f"broker {part.leader} leads" if part.leader != NO_LEADER else "the URM is disabled")
        if not enabled:
            return
        is_unfenced = self._is_unfenced
        for key in sorted(image.partitions):
            part = image.partitions[key]
            if part.leader != NO_LEADER:
                continue
            task = urm.tasks.get(key)
            if task is not None and task.manual:
                continue
            strategy = image.unclean_recovery_strategy(key[0], self.static)
            decision = recovery_decision(part, strategy, is_unfenced)
            if task is not None and decision in (Decision.RECOVER, Decision.PENDING) and task.strategy != strategy:
                urm.drop(now_ms, key, f"the strategy is now {strategy}")
                task = None
            if decision is Decision.RECOVER and task is None:
                urm.start(now_ms, key, part, strategy, self.recovery_timeout_ms())
            elif task is not None and decision not in (Decision.RECOVER, Decision.PENDING):
                urm.drop(now_ms, key, {Decision.CLEAN: "an ISR or unfenced ELR member can lead",
                                       Decision.WAIT: "waiting for fenced ELR members",
                                       Decision.MANUAL: "the strategy is None"}[decision])
        records = []
        elected = []
        for key in sorted(urm.tasks):
            task = urm.tasks[key]
            part = image.partitions[key]
            urm.revalidate(now_ms, task, image, part)
            leader = urm.ready_leader(now_ms, task, part, is_unfenced)
            if leader == NO_LEADER:
                continue
            rec = build_partition_change(
                part, image.topics[key[0]].topic_id, key[1], is_acceptable_leader=image.is_acceptable_leader,
                level=self.level, min_isr=image.min_isr(key[0], self.static), unclean_recovery=True,
                recovery_leader=leader)
            if rec is not None and rec.leader == leader:
                records.append(rec)
                elected.append((task, leader))
        if records:
            self.append(records, now_ms)
            for task, leader in elected:
                urm.elected(now_ms, task, leader)
        if self.parked_elections:
            self._answer_parked_elections(now_ms)

    def _is_unfenced(self, broker_id: int) -> bool:
        """Registered, unfenced, not shutting down and with an online log directory: may lead (KIP-966:
        only unfenced replicas count; Kafka's LeaderAcceptor also wants the replica's directory online)."""
        return self.image.is_acceptable_leader(broker_id)

    def recovery_metrics(self) -> dict[str, int]:
        """KIP-966's controller metrics now: ``unclean_recovery_partitions_count`` (gauge: recoveries in
        progress, plus the Balanced ones pending until every LastKnownELR member is unfenced: KIP-966
        "it is also counted as a live recovery"), ``manual_leader_election_required_partition_count``
        (gauge: every leaderless partition that waits for an operator: no recovery runs for it and none
        will start by itself — strategy None with no ELR member, the one case the decision order leaves to
        ElectLeaders), ``unclean_recovery_finished_count`` (counter since this controller started; Kafka
        resets it on failover) and ``electable_replicas_count`` (gauge: the sum over partitions of |ISR| +
        |ELR|)."""
        image = self.image
        manual = pending = 0
        electable = 0
        enabled = self.urm_enabled
        for key in sorted(image.partitions):
            part = image.partitions[key]
            electable += len(part.isr) + len(part.elr)
            if not enabled or part.leader != NO_LEADER or key in self.urm.tasks:
                continue
            decision = recovery_decision(part, image.unclean_recovery_strategy(key[0], self.static),
                                         self._is_unfenced)
            manual += decision is Decision.MANUAL
            pending += decision is Decision.PENDING
        return {"unclean_recovery_partitions_count": len(self.urm.tasks) + pending,
                "manual_leader_election_required_partition_count": manual,
                "unclean_recovery_finished_count": self.urm.finished_count,
                "electable_replicas_count": electable}

    # ================================================================= ElectLeaders
    def _handle_elect_leaders(self, now_ms: int, env: m.Envelope) -> None:
        """ElectLeaders (Kafka's ``ReplicationControlManager.electLeaders``; v3 from KIP-966).

        An unknown election type fails the whole request with INVALID_REQUEST. Per partition: PREFERRED
        and UNCLEAN as Kafka; at level ``urm`` (URM enabled) UNCLEAN runs an Aggressive recovery instead of
        the unclean election, LONGEST_LOG_BALANCED / LONGEST_LOG_AGGRESSIVE run a recovery with that
        strategy and DESIGNATION elects the partition's desired leader — each only for a partition without
        a leader (else ELECTION_NOT_NEEDED); a recovery that elects answers NONE, one still running when
        the request's ``timeout_ms`` ends answers REQUEST_TIMED_OUT (Kafka's DelayedElectLeader) and goes
        on. Only the first ``max.request.partition.size.limit`` partitions (when set; else KIP-966's 1,000)
        of a v3 request are served, the others get REQUEST_LIMIT_REACHED (KIP-966). Below level ``urm`` types 2-4 are INVALID_REQUEST."""
        req = env.message
        if req.election_type not in m.ELECTION_TYPES.values():
            # Kafka's ElectionType.valueOf refuses an unknown type: the whole request is INVALID_REQUEST.
            self.send_response(env, m.ElectLeadersResponse(Errors.INVALID_REQUEST, tuple(
                m.ElectLeadersResult(p.topic, p.partition, Errors.INVALID_REQUEST,
                                     f"unknown election type {req.election_type}") for p in req.partitions)))
            return
        limit = None
        if self.urm_enabled and (env.api_version is None or env.api_version >= 3):
            name = "max.request.partition.size.limit"
            dynamic = self.image.configs.get((RESOURCE_BROKER, "")) or {}
            limit = int(cfg.lookup(name, dynamic, self.static)) if name in dynamic or name in self.static \
                else cfg.ELECT_LEADERS_PARTITION_LIMIT
        results: list = []
        for i, p in enumerate(req.partitions):
            if limit is not None and i >= limit:
                results.append(m.ElectLeadersResult(
                    p.topic, p.partition, Errors.REQUEST_LIMIT_REACHED,
                    f"only the first {limit} partitions of a request are served (max.request.partition.size.limit)"))
                continue
            results.append(self._elect_one(now_ms, req.election_type, p))
        if any(isinstance(r, tuple) for r in results):
            self._consider_recoveries(now_ms)  # a recovery may elect at once (answers kept, or none needed)
            self.parked_elections.append([now_ms + max(0, req.timeout_ms), env, results])
            self._answer_parked_elections(now_ms)
        else:
            self.send_response(env, m.ElectLeadersResponse(Errors.NONE, tuple(results)))

    def _answer_parked_elections(self, now_ms: int) -> None:
        """Answer the ElectLeaders requests whose recoveries all ended (NONE for a partition that has a
        leader now) or whose timeout passed (REQUEST_TIMED_OUT for those still leaderless)."""
        keep = []
        for entry in self.parked_elections:
            deadline, env, results = entry
            done = True
            for i, r in enumerate(results):
                if not isinstance(r, tuple):
                    continue
                part = self.image.partitions.get(r)
                if part is None:
                    results[i] = m.ElectLeadersResult(r[0], r[1], Errors.UNKNOWN_TOPIC_OR_PARTITION)
                elif part.leader != NO_LEADER:
                    results[i] = m.ElectLeadersResult(r[0], r[1], Errors.NONE)
                elif now_ms >= deadline:
                    results[i] = m.ElectLeadersResult(r[0], r[1], Errors.REQUEST_TIMED_OUT,
                                                      "the unclean recovery has not elected a leader yet")
                else:
                    done = False
            if done:
                self.send_response(env, m.ElectLeadersResponse(Errors.NONE, tuple(results)))
            else:
                keep.append(entry)
        self.parked_elections = keep

    def _elect_one(self, now_ms: int, election_type: int, p: m.ElectLeadersPartition):
        """One partition of an ElectLeaders request: its ElectLeadersResult, or its (topic, index) when a
        recovery started for it must elect first."""
        image = self.image
        part = image.partitions.get((p.topic, p.partition))
        if part is None:
            return m.ElectLeadersResult(p.topic, p.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        key = (p.topic, p.partition)
        urm = self.urm_enabled
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
            level=self.level, min_isr=image.min_isr(p.topic, self.static), election=election,
            unclean_recovery=urm, recovery_leader=recovery_leader)
        if rec is not None and rec.leader is not None and rec.leader != NO_LEADER:
            self.append([rec], now_ms)
            self.urm.drop(now_ms, key, f"ElectLeaders elected broker {rec.leader}")
            return m.ElectLeadersResult(p.topic, p.partition, Errors.NONE)
        if urm and election_type in (m.ELECTION_UNCLEAN, m.ELECTION_LONGEST_LOG_BALANCED,
                                     m.ELECTION_LONGEST_LOG_AGGRESSIVE):
            # KIP-966: the longest-log elections, and UNCLEAN at level urm, run an unclean recovery.
            strategy = BALANCED if election_type == m.ELECTION_LONGEST_LOG_BALANCED else AGGRESSIVE
            self.urm.start(now_ms, key, part, strategy, self.recovery_timeout_ms(), manual=True)
            return key
        if election is Election.PREFERRED:
            return m.ElectLeadersResult(p.topic, p.partition, Errors.PREFERRED_LEADER_NOT_AVAILABLE)
        return m.ElectLeadersResult(p.topic, p.partition, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE)
