"""The KRaft controller as one sans-I/O node (Kafka's ``QuorumController``).

It owns the ``__cluster_metadata`` log (on its injected Disk, fsynced on every append, as a KRaft
quorum commits) and the MetadataImage replayed from it, serves that log to brokers (long-polled
MetadataFetch), dispatches requests, runs the periodic tasks, and delegates the rest to its managers,
each an object owning its state (as Kafka's controller is split):

* :class:`~.cluster_control.ClusterControlManager`: BrokerRegistration (broker epoch = offset of the
  RegisterBrokerRecord), BrokerHeartbeat (unfencing, session expiry, controlled shutdown);
* :class:`~.replication_control.ReplicationControlManager`: CreateTopics, DeleteTopics, CreatePartitions,
  AlterPartition with Kafka's validation order (DESIGN.md), leader elections through
  :func:`~.partition_change.build_partition_change`, the periodic unclean-election task, ElectLeaders
  and, at level ``urm`` (KIP-966 part 2), the unclean recoveries the
  :class:`~.unclean_recovery.UncleanRecoveryManager` runs (reconsidered on every heartbeat, registration
  and unfencing; ElectLeaders v3 drives it by hand);
* :class:`~.configuration_control.ConfigurationControlManager`: IncrementalAlterConfigs and the legacy
  AlterConfigs → ConfigRecord, and the configs the others read as they are now.

The controller's only requests are the URM's GetReplicaLogInfo, sent here after each event.

Controller failover (``restart_controller``) builds a new instance over the same Disk: the log is
replayed and every registered broker gets a fresh session, as Kafka's new active controller does.

A metadata log that cannot be written (an OSError from the Disk: ENOSPC, EIO) stops the controller:
nothing is committed, ``fatal_error`` says why and the driver ends the process (Kafka's controller treats
a failed metadata log write as fatal and halts). With one controller the brokers keep serving the
leaders they have until it is back.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from random import Random
from typing import TYPE_CHECKING, TypeAlias, cast

from ..level import Level
from ..metadata import config as cfg
from ..metadata.image import MetadataApplyErrors, MetadataImage
from ..metadata.snapshot import image_from_snapshot
from ..metrics import KafkaMetrics
from ..protocol import messages as m
from ..protocol.listeners import node_identity_refusal
from ..protocol.node import Envelope, Message, NodeBase, earliest
from ..protocol.raft_records import RaftEndpoint
from ..raft.bootstrap import read_bootstrap_records
from ..raft.config import QuorumConfig
from ..storage.disk import Disk
from ..storage.meta_properties import read_identity
from ..storage.metadata_log import METADATA_LOG_DIR, RecordsByOffset
from .cluster_control import ClusterControlManager
from .configuration_control import ConfigurationControlManager
from .context import MetadataRecord
from .metrics import count_elections, register_controller_metrics
from .quorum_mode import ControllerQuorum, NotControllerError
from .replication_control import ReplicationControlManager
from .scram_control import ScramControlManager
from .single_node_quorum import SingleNodeQuorum
from .unclean_recovery import PartitionKey, UncleanRecoveryManager

if TYPE_CHECKING:
    from ..raft.client import RaftContext

CONTROLLER = "controller"
#: The metadata log's first segment (a log that was never cleaned: every record from offset 0).
METADATA_LOG = f"{METADATA_LOG_DIR}/00000000000000000000.log"

#: The context of the controller's requests: ("log_info", broker, the partitions asked about).
LogInfoContext: TypeAlias = tuple[str, int, tuple[PartitionKey, ...]]


class MetadataLogFailure(Exception):
    """The metadata log could not be written: the controller has stopped (``fatal_error``); raised out of
    :meth:`QuorumController.append` to abandon the event that wanted the write."""


class QuorumController(NodeBase[LogInfoContext]):
    """The controller node. ``config``: static configs (Kafka names → strings); ``disk`` holds the
    metadata log; ``rng`` is seeded by the driver (topic ids, replica placement); ``cluster_id``: a
    BrokerRegistration or metadata Fetch carrying another gets INCONSISTENT_CLUSTER_ID (104).

    ``verify_identity`` (the drivers pass True): before reading the metadata log the controller verifies
    its ``meta.properties`` (:func:`kraftlog.storage.meta_properties.read_identity`) and raises
    :class:`~kraftlog.storage.meta_properties.NodeIdentityError` when the directory is not formatted
    or belongs to another node or cluster: a lost metadata directory must not come back as an empty
    metadata log (the brokers would then forget every topic).

    A controller of a KRaft quorum (``node_id`` given): ``quorum_voters`` are ``controller.quorum.voters``' ids
    (kraft.version 0), None for the bootstrap checkpoint's voters (kraft.version 1, KIP-853);
    ``quorum_bootstrap``: ``controller.quorum.bootstrap.servers`` as node ids; ``listeners``: its controller
    listener's endpoints (none in the simulator)."""

    def __init__(self, config: dict[str, str], level: Level, disk: Disk, rng: Random, now_ms: int,
                 cluster_id: str = "kraftlog", *, verify_identity: bool = False, node_id: int | None = None,
                 quorum_voters: Sequence[int] | None = None, directory_id: uuid.UUID | None = None,
                 quorum_bootstrap: Sequence[int] = (), listeners: Sequence[RaftEndpoint] = ()) -> None:
        super().__init__(CONTROLLER if node_id is None else node_id)
        if verify_identity:
            identity = read_identity(disk, CONTROLLER if node_id is None else str(node_id), cluster_id)
            directory_id = directory_id or identity.directory_id  # Kafka's meta.properties directory.id
        self.static = dict(config)
        self.level = level
        self.disk = disk
        self.rng = rng
        self.cluster_id = cluster_id
        #: the Raft side of a controller of a quorum (``node_id`` given), None for the single controller
        self.quorum: ControllerQuorum | None = None
        #: Metadata records this controller could not apply (Kafka's ``metadata-apply-error-count``; Kafka's
        #: controller exits on one, kraftlog's logs it, counts it and applies the rest: a metadata log
        #: written before CreateTopics validated names still loads).
        self.metadata_apply_errors = MetadataApplyErrors()
        self.image = MetadataImage()
        #: The single controller's metadata log and its serving (:class:`SingleNodeQuorum`), None in a quorum.
        self.single: SingleNodeQuorum | None = None
        #: The committed records by offset: the single controller's metadata log, a quorum controller's copy.
        self.log: RecordsByOffset
        if node_id is None:
            self.single = SingleNodeQuorum(disk, self.static, cluster_id, now_ms, self.send_raw_response)
            self.log = self.single.log
            snapshot, snapshot_id, base, records = self.single.load(now_ms)  # MetadataLogLoadError: not started
            if snapshot is not None and snapshot_id is not None:
                self.image, delta = image_from_snapshot(snapshot, snapshot_id)
                for offset, record, reason in delta.errors:
                    self.metadata_apply_errors.add(offset, record, reason)
            if records:
                self._replay(cast(Sequence[MetadataRecord], records), base)
        else:
            self.log = RecordsByOffset()
        self.unclean_election_interval_ms = int(cfg.lookup("unclean.leader.election.interval.ms", self.static))
        #: ``super.users``: exempt from the node identity rule (``protocol.listeners.node_identity_refusal``)
        self.super_users = cfg.parse_super_users(cfg.lookup("super.users", self.static)) or frozenset()
        self.next_unclean_election_ms = now_ms + self.unclean_election_interval_ms
        #: KIP-966's Unclean Recovery Manager (level ``urm``; in memory, empty after a failover).
        self.urm: UncleanRecoveryManager
        #: why the controller stopped by itself (its metadata log could not be written), None otherwise
        self.fatal_error: str | None = None
        self.rebuild_managers(now_ms)
        #: Kafka's controller metrics (:mod:`.metrics`); a failover's new instance starts them anew
        self.metrics = KafkaMetrics()
        register_controller_metrics(self.metrics, self)
        if self.single is not None and self.image.offset < 0:  # Kafka's bootstrap metadata into an empty log
            self.append(cast(Sequence[MetadataRecord], read_bootstrap_records(disk)), now_ms)
        if node_id is not None:
            self.quorum = ControllerQuorum(self, node_id, directory_id or uuid.UUID(int=rng.getrandbits(128)),
                                           cluster_id, QuorumConfig.from_configs(self.static), disk, rng, now_ms,
                                           quorum_voters, quorum_bootstrap, listeners)
            self.quorum.after_event(now_ms)

    def rebuild_managers(self, now_ms: int) -> None:
        """Build the managers over the current image: at start, and when a controller of a quorum becomes active
        or standby (every registered broker gets a fresh session; the URM starts empty)."""
        self.urm = UncleanRecoveryManager()
        self.configs = ConfigurationControlManager(self, self.level, self.static)
        self.scram = ScramControlManager(self)
        self.replication = ReplicationControlManager(self, self.level, self.configs, self.urm, self.rng)
        self.cluster = ClusterControlManager(self, self.level, self.configs, self.replication, self.urm, now_ms,
                                             self.cluster_id)
        self.next_unclean_election_ms = now_ms + self.unclean_election_interval_ms

    def reset_image(self, image: MetadataImage) -> None:
        """Replace the image (a controller of a quorum reverting to what committed)."""
        self.image = image

    def replay_committed(self, records: Sequence[MetadataRecord], base: int) -> None:
        """Apply committed records a controller of a quorum did not write itself (a standby's replay)."""
        count_elections(self.metrics, self.image, records)
        self._replay(records, base)

    def send_raw_response(self, request: Envelope, message: Message) -> None:
        """Queue ``message`` now (NodeBase's send_response)."""
        NodeBase.send_response(self, request, message)

    def send_response(self, request: Envelope, message: Message) -> None:
        """Queue the response to ``request``; a controller of a quorum holds it until what it wrote committed."""
        if self.quorum is not None:
            self.quorum.respond(request, message)
        else:
            NodeBase.send_response(self, request, message)

    @property
    def committed_image(self) -> MetadataImage:
        """The image of the committed metadata: the single controller's image (it commits on write), a quorum
        controller's image without its own writes not yet committed."""
        return self.image if self.quorum is None else self.quorum.committed_image

    @property
    def is_active(self) -> bool:
        """This controller serves: the single controller always, a quorum's only when it leads."""
        return self.quorum is None or self.quorum.is_active

    # ================================================================= the metadata log
    @property
    def end_offset(self) -> int:
        """The metadata log end offset (next offset to be written)."""
        if self.quorum is not None:
            return self.quorum.next_offset
        assert self.single is not None
        return self.single.end_offset

    def append(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """Append records and replay them into the image: the single controller commits them at once (a
        single-node quorum, fsynced), a quorum's active controller writes them as one Raft batch (its response
        waits for the commit; :class:`NotControllerError` on a standby)."""
        if not records:
            return
        if self.quorum is not None:
            base = self.quorum.append(records, now_ms)
            count_elections(self.metrics, self.image, records)
            self._replay(records, base)
            return
        single = self.single
        assert single is not None
        base = single.end_offset
        # One write for the records of one event (KRaft appends them as one batch): a controller killed
        # around it restarts with all of them or none.
        try:
            single.append(records, now_ms)
        except OSError as exc:
            self.fatal_error = f"the metadata log cannot be written: {exc}"
            self._outbox.clear()
            raise MetadataLogFailure(self.fatal_error) from exc
        count_elections(self.metrics, self.image, records)
        self._replay(records, base)
        single.after_append(records, self.image, self.metadata_apply_errors.count, now_ms)

    def take_log_lines(self) -> list[str]:
        """The lines about the metadata log (snapshots written or not, a load's problems) not yet taken, for the
        node's log."""
        if self.quorum is not None:
            return self.quorum.snapshots.take_lines()
        if self.single is None:
            return []
        lines, self.single.log_lines = self.single.log_lines, []
        return lines

    def _replay(self, records: Sequence[MetadataRecord], base: int) -> None:
        """Replay ``records`` (the first at metadata offset ``base``) into the image, counting those it
        cannot apply (``MetadataImage.replay`` skips them)."""
        self.image, delta = self.image.replay(records, base)
        for offset, record, reason in delta.errors:
            self.metadata_apply_errors.add(offset, record, reason)

    # ================================================================= what drivers and tests read
    @property
    def controlled_shutdown_offset(self) -> dict[int, int]:
        """Broker -> the metadata offset its controlled shutdown began at (the cluster control's)."""
        return self.cluster.controlled_shutdown_offset

    def recovery_timeout_ms(self) -> int:
        """``unclean.recovery.timeout.ms`` now (ms; :meth:`ConfigurationControlManager.recovery_timeout_ms`)."""
        return self.configs.recovery_timeout_ms()

    def recovery_metrics(self) -> dict[str, int]:
        """KIP-966's controller metrics now (:meth:`ReplicationControlManager.recovery_metrics`)."""
        return self.replication.recovery_metrics()

    def handle_alter_partition(self, now_ms: int, req: m.AlterPartitionRequest) -> m.AlterPartitionResponse:
        """An AlterPartition (:meth:`ReplicationControlManager.handle_alter_partition`)."""
        return self.replication.handle_alter_partition(now_ms, req)

    # ================================================================= node contract
    def tick(self, now_ms: int) -> None:
        """Expire requests, answer parked fetches that are due, fence expired sessions, run the periodic
        unclean-election task and the unclean recoveries, then send the URM's due requests."""
        if self.fatal_error is not None:
            return
        if self.quorum is not None:
            self._expire_requests(now_ms)
            if self.quorum.is_active:
                try:
                    self._run_tasks(now_ms)
                except NotControllerError:
                    pass  # lost the epoch meanwhile: after_event renounces
            self._after_quorum_event(now_ms)
            return
        try:
            self._expire_requests(now_ms)
            self._run_tasks(now_ms)
        except MetadataLogFailure:
            pass  # stopped: the driver ends the process

    def _after_quorum_event(self, now_ms: int) -> None:
        """A quorum controller after every event: Raft's poll, leadership, commits, held responses; a Raft
        client that stopped (its log could not be written) stops the controller."""
        assert self.quorum is not None
        self.quorum.after_event(now_ms)
        if self.quorum.raft.fatal_error is not None:
            self.fatal_error = self.quorum.raft.fatal_error
            self._outbox.clear()

    def _run_tasks(self, now_ms: int) -> None:
        if self.single is not None:
            if self.single.parked_fetches:
                self.single.expire_fetches(now_ms)
            self.single.maybe_clean(now_ms)
        self.cluster.fence_expired_sessions(now_ms)
        if now_ms >= self.next_unclean_election_ms:
            self.next_unclean_election_ms = now_ms + self.unclean_election_interval_ms
            self.replication.maybe_elect_unclean_leaders(now_ms)
        if self.urm.tasks or self.replication.parked_elections:
            self.replication.consider_recoveries(now_ms)
        self._after_event(now_ms)

    def next_deadline(self) -> int | None:
        """The earliest of: a request's timeout, a parked fetch's or ElectLeaders' deadline, a session's
        expiry, the next periodic unclean election, the URM's next timer (ms); None once stopped."""
        if self.fatal_error is not None:
            return None
        if self.quorum is not None:
            raft_deadline = earliest(self.quorum.raft.next_deadline(), self.quorum.next_deadline())
            if not self.quorum.is_active:
                return earliest(self._request_deadline(), raft_deadline)
            return earliest(self._request_deadline(), raft_deadline, self.cluster.next_deadline(),
                            self.next_unclean_election_ms, self.urm.next_deadline(), self.replication.next_deadline())
        parked = self.single.next_deadline() if self.single is not None else None
        return earliest(self._request_deadline(), parked, self.cluster.next_deadline(),
                        self.next_unclean_election_ms, self.urm.next_deadline(), self.replication.next_deadline())

    def deliver(self, now_ms: int, envelope: m.Envelope) -> None:
        """NodeBase's, unless stopped; a metadata log that fails meanwhile stops the controller."""
        if self.fatal_error is not None:
            return
        try:
            super().deliver(now_ms, envelope)
        except MetadataLogFailure:
            pass  # stopped: the driver ends the process

    def on_response(self, now_ms: int, context: LogInfoContext, message: Message) -> None:
        """The controller's only requests: the URM's GetReplicaLogInfo (context ``("log_info", broker,
        partitions)``)."""
        if context[0] == "raft":
            assert self.quorum is not None
            self.quorum.handle_response(now_ms, cast("RaftContext", context), message)
            self._after_quorum_event(now_ms)
            return
        _, broker, keys = context
        assert isinstance(message, m.GetReplicaLogInfoResponse), message
        self.urm.on_answer(now_ms, broker, keys, message, self.image)
        try:
            self.replication.consider_recoveries(now_ms)
            self._after_event(now_ms)
        except NotControllerError:
            pass
        if self.quorum is not None:
            self._after_quorum_event(now_ms)

    def on_timeout(self, now_ms: int, context: LogInfoContext) -> None:
        if context[0] == "raft":
            assert self.quorum is not None
            self.quorum.handle_timeout(now_ms, cast("RaftContext", context))
            self._after_quorum_event(now_ms)
            return
        _, broker, keys = context
        self.urm.on_failure(now_ms, broker, keys)
        self._after_event(now_ms)
        if self.quorum is not None:
            self._after_quorum_event(now_ms)

    def on_request(self, now_ms: int, env: m.Envelope) -> None:
        """Dispatch a request to its manager by its type and queue the response. MetadataFetch and
        ElectLeaders may wait and answer themselves. Other APIs are broker APIs; a client sending them
        here gets no answer and times out, as a Kafka controller listener does not expose them."""
        req = env.message
        refusal = node_identity_refusal(env, self.super_users)  # a secured cluster: a node acts only as itself
        if refusal is not None:
            self.send_response(env, refusal)
            return
        if self.quorum is not None:
            self._on_quorum_request(now_ms, env)
            return
        if isinstance(req, m.MetadataFetchRequest):
            assert self.single is not None
            self.single.handle_fetch(now_ms, env, req)  # may be parked: answers itself
            return
        if isinstance(req, m.ElectLeadersRequest):
            self.replication.handle_elect_leaders(now_ms, env, req)  # may wait for recoveries: answers itself
        else:
            response = self._dispatch(now_ms, req)
            if response is not None:
                self.send_response(env, response)
        self._after_event(now_ms)

    def _on_quorum_request(self, now_ms: int, env: Envelope) -> None:
        """A quorum controller's request: the quorum APIs (and the metadata Fetch) go to Raft; the others are
        served by the active controller (their answers wait for the commit) and refused NOT_CONTROLLER by a
        standby."""
        quorum = self.quorum
        assert quorum is not None
        if not quorum.handle_request(now_ms, env):
            if not quorum.is_active:
                quorum.refuse(env)
            else:
                try:
                    req = env.message
                    if isinstance(req, m.ElectLeadersRequest):
                        self.replication.handle_elect_leaders(now_ms, env, req)
                    else:
                        response = self._dispatch(now_ms, req)
                        if response is not None:
                            self.send_response(env, response)
                    self._after_event(now_ms)
                except NotControllerError:
                    quorum.refuse(env)
        self._after_quorum_event(now_ms)

    def _dispatch(self, now_ms: int, req: Message) -> Message | None:
        """The response of the manager that serves ``req``'s API, None for an API the controller does not
        serve."""
        if isinstance(req, m.BrokerHeartbeatRequest):
            return self.cluster.handle_heartbeat(now_ms, req)
        if isinstance(req, m.AlterPartitionRequest):
            return self.replication.handle_alter_partition(now_ms, req)
        if isinstance(req, m.BrokerRegistrationRequest):
            return self.cluster.handle_registration(now_ms, req)
        if isinstance(req, m.CreateTopicsRequest):
            return self.replication.handle_create_topics(now_ms, req)
        if isinstance(req, m.IncrementalAlterConfigsRequest):
            return self.configs.handle_incremental_alter_configs(now_ms, req)
        if isinstance(req, m.DeleteTopicsRequest):
            return self.replication.handle_delete_topics(now_ms, req)
        if isinstance(req, m.CreatePartitionsRequest):
            return self.replication.handle_create_partitions(now_ms, req)
        if isinstance(req, m.AlterConfigsRequest):
            return self.configs.handle_legacy_alter_configs(now_ms, req)
        if isinstance(req, m.AlterUserScramCredentialsRequest):
            return self.scram.handle_alter(now_ms, req)
        if isinstance(req, m.FetchSnapshotRequest) and self.single is not None:  # a quorum's: its Raft client's
            return self.single.handle_fetch_snapshot(req)
        return None

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
            context: LogInfoContext = ("log_info", broker, keys)
            corr = self.send_request(broker, m.GetReplicaLogInfoRequest(parts), now_ms, timeout_ms, context)
            self.urm.sent(broker, keys, now_ms, timeout_ms, corr)
