"""A broker as one sans-I/O node (Kafka's ``BrokerServer``): the node contract (``deliver``/``tick``/``poll``/
``next_deadline``) over Kafka's components, each an object owning its state:

* :class:`~kraftlog.broker.lifecycle.BrokerLifecycleManager`: registration, heartbeats, controlled shutdown;
* :class:`~kraftlog.broker.metadata_publisher.MetadataLoader` and
  :class:`~kraftlog.broker.metadata_publisher.BrokerMetadataPublisher`: the metadata log, applied;
* :class:`~kraftlog.broker.replica_manager.ReplicaManager`: produce, fetch, delayed operations, ISR and HWM;
* :class:`~kraftlog.broker.replica_fetcher.ReplicaFetcherManager`: follower fetching and truncation;
* :class:`~kraftlog.broker.log_manager.LogManager`: the log directory, checkpoints, its failure;
* :class:`~kraftlog.broker.apis.KafkaApis`: the request handlers' dispatch table;
* :class:`~kraftlog.broker.group_coordinator.GroupCoordinator` over the offset store.

The broker routes what arrives to them (a response goes to the component whose request it answers) and
does what spans several: a registration starts the metadata fetches and the follower fetches; a
granted controlled shutdown flushes the logs, writes the HWM checkpoint and the clean-shutdown file
(KIP-966) and stops; a log directory failure (an I/O error anywhere) goes to
:meth:`ReplicaManager.handle_log_dir_failure`; an unacknowledged one stops the broker (KIP-858).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from random import Random
from typing import Any

from ..level import Level
from ..metadata.image import MetadataApplyErrors, MetadataImage
from ..metrics import KafkaMetrics
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.listeners import error_response
from ..protocol.node import Address, Envelope, Message, NodeBase
from ..raft.config import QuorumConfig
from ..storage.disk import Disk, LoadDrop
from ..storage.log import PartitionLog
from ..storage.meta_properties import NodeIdentityError, read_identity
from .apis import ForwardingManager, GroupAdminApis, GroupApis, KafkaApis, MetadataApis, ReplicationApis
from .channel import (
    CONTROLLER,
    AlterPartitionContext,
    BrokerContext,
    FetchContext,
    FetchSnapshotContext,
    ForwardContext,
    HeartbeatContext,
    MetadataFetchContext,
    RegisterContext,
)
from .config import BrokerConfig, parse_listeners
from .coordinator_runtime import CoordinatorRuntime
from .group_coordinator import GroupCoordinator
from .group_metadata import offsets_partitions
from .lifecycle import (
    CONTROLLED_SHUTDOWN_MAX_MS,
    PENDING_CONTROLLED_SHUTDOWN,
    RECOVERY,
    RUNNING,
    SHUTDOWN,
    STARTING,
    BrokerLifecycleManager,
)
from .log_manager import (
    LOG_DIR,
    PARTITION_METADATA_FILE,
    LogManager,
    decode_partition_metadata,
    derived_directory_id,
    directory_id_of,
    encode_partition_metadata,
)
from .metadata_cache import MetadataCache
from .metadata_loader import MetadataLoader
from .metadata_publisher import BrokerMetadataPublisher
from .metrics import RequestMetrics, register_broker_metrics
from .partition import Partition
from .raft_loader import RaftMetadataLoader
from .replica_fetcher import ReplicaFetcherManager
from .replica_manager import DelayedProduce, ReplicaManager

__all__ = [  # the names callers import from here
    "Broker", "CONTROLLER", "LOG_DIR", "CONTROLLED_SHUTDOWN_MAX_MS", "PARTITION_METADATA_FILE",
    "STARTING", "RECOVERY", "RUNNING", "PENDING_CONTROLLED_SHUTDOWN", "SHUTDOWN", "DelayedProduce",
    "parse_listeners", "derived_directory_id", "encode_partition_metadata", "decode_partition_metadata",
]


#: Where kraftlog kept committed offsets before they were records of ``__consumer_offsets`` (issue 32).
OLD_OFFSETS_DIR = f"{LOG_DIR}/__consumer_offsets/"


def refuse_old_offset_files(disk: Disk) -> None:
    """Raise :class:`NodeIdentityError` (the node does not start) when the log directory holds committed offsets
    in the files kraftlog wrote before ``__consumer_offsets`` was a replicated topic: one line naming them, so
    that no group silently loses its offsets by an upgrade."""
    files = sorted(disk.list(OLD_OFFSETS_DIR))
    if files:
        shown = ", ".join(f[len(OLD_OFFSETS_DIR):] for f in files[:5]) + (", ..." if len(files) > 5 else "")
        raise NodeIdentityError(
            f"{OLD_OFFSETS_DIR} holds {len(files)} committed-offset file(s) of an older kraftlog ({shown}), which "
            "kept offsets outside __consumer_offsets; they are not read: commit the groups' offsets again "
            "through a running cluster, then move the directory away")


class Broker(NodeBase[BrokerContext]):
    """Broker ``broker_id``. ``config``: static broker configs (Kafka names → strings); ``level``: the
    protocol level; ``disk``: this broker's log dir; ``rng``: seeded (incarnation id); ``cluster_id``: sent
    in BrokerRegistration and the metadata Fetch; times in ms.

    ``verify_identity`` (the drivers pass True): before touching the disk, the broker verifies its
    ``meta.properties`` (:func:`kraftlog.storage.meta_properties.read_identity`: formatted, this node id,
    this cluster id) and raises :class:`~kraftlog.storage.meta_properties.NodeIdentityError` otherwise,
    as a Kafka broker refuses to start on an unformatted or foreign log dir; ``directory_id`` is the log
    dir's ``directory.id`` (KIP-858). An I/O error while loading the logs takes the directory offline at
    once: the broker registers, reports it in its first heartbeat and waits for a restart. ``controller_quorum``:
    the static voters' ids, or bootstrap servers' with ``quorum_static_voters`` False (KIP-853; RaftMetadataLoader)."""

    def __init__(self, broker_id: int, config: dict[str, str], level: Level, disk: Disk, rng: Random,
                 now_ms: int, cluster_id: str = "kraftlog", *, verify_identity: bool = False,
                 controller_quorum: Sequence[int] | None = None, quorum_static_voters: bool = True) -> None:
        super().__init__(broker_id)
        identity = read_identity(disk, broker_id, cluster_id) if verify_identity else None
        refuse_old_offset_files(disk)
        self.broker_id = broker_id
        self.static = dict(config)
        self.level = level
        self.disk = disk
        self.rng = rng
        self.cluster_id = cluster_id
        self.incarnation_id = uuid.UUID(int=rng.getrandbits(128))
        self.config = BrokerConfig.from_static(self.static)
        #: Lines for the node's log (the driver takes them with :meth:`take_log_lines`).
        self.log_lines: list[str] = []
        #: Why the broker stopped by itself (an unacknowledged log directory failure), None otherwise.
        self.fatal_error: str | None = None
        self.stopped = False
        self.cache = MetadataCache(self.static)
        # Stray names draw from a Random of their own (seeded by the incarnation id), so that the broker's
        # own draws do not depend on whether a stray was found.
        self.log_manager = LogManager(disk, self.cache, directory_id_of(disk, broker_id, identity),
                                      Random(f"stray:{self.incarnation_id}"), self._note, self._log_dir_failed)
        load_error: OSError | None = None
        try:  # Log recovery (Kafka's LogManager.loadLogs)
            self.log_manager.load(now_ms)
        except OSError as exc:  # taken offline once the broker is set up (below)
            load_error = exc
        self.lifecycle = BrokerLifecycleManager(broker_id, cluster_id, self.incarnation_id, level, self.config, self,
                                                self.cache, self.log_manager, self._note, now_ms)
        self.replica_manager = ReplicaManager(broker_id, level, self.config, self.cache, self.log_manager,
                                              self.lifecycle, self, self._log_dir_failed, now_ms)
        self.fetcher = ReplicaFetcherManager(broker_id, self.config, self.cache, self.replica_manager,
                                             self.lifecycle, self, self._log_dir_failed)
        #: the __consumer_offsets partitions this broker leads, loaded (Kafka's CoordinatorRuntime)
        self.coordinator_runtime = CoordinatorRuntime(
            self.replica_manager, lambda: offsets_partitions(self.cache.image, self.static),
            int(self.cache.image.config("offsets.commit.timeout.ms", static=self.static)))
        # Member ids come from a Random of its own, seeded by the incarnation id, so that the broker's
        # own draws (and so every simulated history) do not depend on whether a group ever formed.
        self.groups: GroupCoordinator[Envelope] = GroupCoordinator(self.coordinator_runtime, self.static,
                                                                   Random(self.incarnation_id.int))
        self.coordinator_runtime.on_load = lambda now, index, stored: self.groups.load_groups(now, stored)
        self.coordinator_runtime.on_unload = lambda now, index: self.groups.resign(
            now, self.coordinator_runtime.groups_of(index, self.groups.groups()))
        self.replica_manager.hwm_listener = self.coordinator_runtime.on_high_watermark
        self.publisher = BrokerMetadataPublisher(broker_id, self.cache, self.log_manager, self.replica_manager,
                                                 self.fetcher, self.groups, self._log_dir_failed)
        self.loader: MetadataLoader | RaftMetadataLoader
        if controller_quorum is None:
            self.loader = MetadataLoader(broker_id, cluster_id, self.config, self.cache, self.publisher,
                                         self.lifecycle, self, disk, self.static, self._note, now_ms)
        else:  # a quorum of controllers: the broker is a KRaft observer
            self.loader = RaftMetadataLoader(broker_id, cluster_id, self.directory_id,
                                             QuorumConfig.from_configs(self.static), self.publisher, self.lifecycle,
                                             self, disk, Random(rng.getrandbits(64)), now_ms, controller_quorum,
                                             self.static, self._note, static_voters=quorum_static_voters)
        metadata_apis = MetadataApis(broker_id, cluster_id, self.cache, self)
        self.group_apis = GroupApis(broker_id, self.cache, self.groups, self.log_manager, self.lifecycle, self,
                                    self._log_dir_failed, metadata_apis.auto_topic_creation)
        self.apis = KafkaApis(
            self, self.config.super_users, ForwardingManager(self, self.config.request_timeout_ms),
            ReplicationApis(broker_id, self.cache, self.replica_manager, self.log_manager, self.lifecycle, self),
            metadata_apis, self.group_apis,
            GroupAdminApis(broker_id, self.cache, self.groups, self.log_manager, self, self._log_dir_failed))
        self.next_hwm_checkpoint_ms = now_ms + self.config.hwm_checkpoint_interval_ms
        #: Kafka's broker and request metrics (:mod:`.metrics`), over this node's clock
        self.metrics = KafkaMetrics()
        register_broker_metrics(self.metrics, self)
        self.request_metrics = RequestMetrics(self.metrics)
        #: the latest time (ms) the driver handed this broker: when a response is queued
        self._now_ms = now_ms
        if load_error is not None:
            self._log_dir_failed(now_ms, load_error, "loading the logs")

    # ================================================================= what drivers and tests read
    @property
    def image(self) -> MetadataImage:
        """The metadata image replayed so far."""
        return self.cache.image

    @image.setter
    def image(self, image: MetadataImage) -> None:
        self.cache.image = image

    @property
    def broker_epoch(self) -> int:
        """The broker epoch of the registration (-1 while not registered)."""
        return self.lifecycle.broker_epoch

    @broker_epoch.setter
    def broker_epoch(self, epoch: int) -> None:
        self.lifecycle.broker_epoch = epoch

    @property
    def state(self) -> str:
        """STARTING, RECOVERY, RUNNING, PENDING_CONTROLLED_SHUTDOWN or SHUTDOWN."""
        return self.lifecycle.state

    @property
    def fenced(self) -> bool:
        return self.lifecycle.fenced

    @property
    def next_heartbeat_ms(self) -> int | None:
        return self.lifecycle.next_heartbeat_ms

    @property
    def log_dir_failure_deadline_ms(self) -> int | None:
        return self.lifecycle.log_dir_failure_deadline_ms

    @property
    def partitions(self) -> dict[tuple[str, int], Partition]:
        """The replicas this broker hosts, keyed (topic, partition)."""
        return self.replica_manager.partitions

    @property
    def delayed_fetches(self) -> list[tuple[int, Envelope[m.FetchRequest]]]:
        return self.replica_manager.delayed_fetches

    @property
    def delayed_produces(self) -> list[DelayedProduce]:
        return self.replica_manager.delayed_produces

    @property
    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        """The logs of the log directory, keyed (topic, partition)."""
        return self.log_manager.logs

    @property
    def directory_id(self) -> uuid.UUID:
        return self.log_manager.directory_id

    @property
    def previous_broker_epoch(self) -> int:
        return self.log_manager.previous_broker_epoch

    @property
    def log_dir_offline(self) -> bool:
        return self.log_manager.offline

    @property
    def log_dir_failure(self) -> str | None:
        return self.log_manager.failure

    @property
    def storage_error_count(self) -> int:
        return self.log_manager.storage_error_count

    @property
    def dropped_at_load(self) -> list[LoadDrop]:
        return self.log_manager.dropped_at_load

    @property
    def strays(self) -> list[tuple[str, str, str]]:
        """Partition directories renamed ``-stray`` by this incarnation: (directory, new name, reason)."""
        return self.log_manager.strays

    @property
    def metadata_apply_errors(self) -> MetadataApplyErrors:
        return self.publisher.metadata_apply_errors

    @property
    def metadata_offset(self) -> int:
        return self.cache.image.offset

    def min_isr(self, topic: str) -> int:
        """Effective min ISR of ``topic`` (cached per metadata image)."""
        return self.cache.min_isr(topic)

    def _member_epochs(self, p: Partition, members: Sequence[int]) -> dict[int, int]:
        """:meth:`ReplicaManager.member_epochs`."""
        return self.replica_manager.member_epochs(p, members)

    def apply_metadata(self, now_ms: int, records: Sequence[object], base_offset: int, caught_up: bool = True) -> None:
        """Replay metadata records and apply them (:meth:`BrokerMetadataPublisher.apply_metadata`)."""
        self.publisher.apply_metadata(now_ms, records, base_offset, caught_up)

    def _note(self, line: str) -> None:
        """One line for the node's log (:meth:`take_log_lines`)."""
        self.log_lines.append(line)

    def take_log_lines(self) -> list[str]:
        """The log lines noted since the last call (storage faults, drops at load), oldest first."""
        lines, self.log_lines = self.log_lines, []
        return lines

    # ================================================================= shutdown and failure
    def _log_dir_failed(self, now_ms: int, exc: OSError, what: str) -> None:
        """An I/O error while doing ``what``: :meth:`ReplicaManager.handle_log_dir_failure`; the
        ``__consumer_offsets`` shards of the offline directory are unloaded."""
        self.replica_manager.handle_log_dir_failure(now_ms, exc, what)
        self.coordinator_runtime.sync(now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """Start a clean shutdown: ask the controller to move leadership away, then stop. Without a
        registration (STARTING, or broker epoch -1: a heartbeat could not be sent, so the shutdown could
        never be granted) the broker stops at once, as Kafka's ``BrokerLifecycleManager`` skips the
        controlled shutdown outside RUNNING."""
        lifecycle = self.lifecycle
        if lifecycle.state in (SHUTDOWN, PENDING_CONTROLLED_SHUTDOWN) or self.stopped:
            return
        if lifecycle.state == STARTING or lifecycle.broker_epoch < 0:
            self._finish_shutdown(now_ms)
            return
        lifecycle.begin_controlled_shutdown(now_ms)

    def _finish_shutdown(self, now_ms: int) -> None:
        """Flush every log, checkpoint HWMs, write the clean-shutdown file (:meth:`LogManager.shutdown`),
        stop."""
        self.log_manager.shutdown(now_ms, self.lifecycle.broker_epoch)
        self._stop()

    def _stop(self) -> None:
        self.lifecycle.state = SHUTDOWN
        self.stopped = True
        self._outbox.clear()

    def _stop_after_failure(self) -> None:
        """KIP-858's ``OfflineDirBrokerFailureEvent``: the controller did not acknowledge the failed log
        directory within ``log.dir.failure.timeout.ms``: stop at once, without a clean-shutdown file (the
        driver ends the process with :attr:`fatal_error` as its reason)."""
        self.fatal_error = (f"log directory {LOG_DIR} failed ({self.log_manager.failure}) and the controller did "
                            f"not acknowledge it within log.dir.failure.timeout.ms "
                            f"({self.config.log_dir_failure_timeout_ms} ms)")
        self._note(f"stopping: {self.fatal_error}")
        self._stop()

    # ================================================================= node contract
    def tick(self, now_ms: int) -> None:
        if self.stopped:
            return
        try:
            self._tick(now_ms)
        except OSError as exc:  # a disk operation this broker did not guard: the directory fails all the same
            self._log_dir_failed(now_ms, exc, "ticking")

    def _tick(self, now_ms: int) -> None:
        self._now_ms = now_ms
        lifecycle = self.lifecycle
        if lifecycle.log_dir_failure_deadline_ms is not None and now_ms >= lifecycle.log_dir_failure_deadline_ms:
            self._stop_after_failure()
            return
        self._expire_requests(now_ms)
        lifecycle.maybe_send(now_ms)
        self.loader.maybe_send(now_ms)
        if lifecycle.controlled_shutdown_deadline is not None and now_ms >= lifecycle.controlled_shutdown_deadline:
            self._finish_shutdown(now_ms)
            return
        replicas = self.replica_manager
        replicas.complete_due_fetches(now_ms)
        if replicas.delayed_produces:
            replicas.complete_delayed_produces(now_ms)
        replicas.delete_records.try_complete(now_ms)
        replicas.maybe_shrink_isrs(now_ms)
        if now_ms >= self.next_hwm_checkpoint_ms:
            self.next_hwm_checkpoint_ms = now_ms + self.config.hwm_checkpoint_interval_ms
            self.log_manager.checkpoint_hwms_or_fail(now_ms)
        self.log_manager.tick(now_ms)
        if self.groups.busy:
            self.groups.tick(now_ms)
            self.group_apis.send_responses(now_ms)
        replicas.send_alter_partitions(now_ms)
        self.fetcher.send_fetches(now_ms)

    @property
    def now_ms(self) -> int:
        """The latest time (ms) the driver handed this broker (gauges read the node's clock through it)."""
        return self._now_ms

    def next_deadline(self) -> int | None:
        """The earliest of this broker's timers (ms); None once stopped. Called after every event, so
        it keeps a running minimum instead of building a list."""
        if self.stopped:
            return None
        d = self.lifecycle.next_deadline(self.next_hwm_checkpoint_ms)
        r = self._request_deadline()
        if r is not None and r < d:
            d = r
        d = self.loader.next_deadline(d)
        if self.groups.busy:
            g = self.groups.next_deadline()
            if g is not None and g < d:
                d = g
        d = self.log_manager.next_deadline(d)
        d = self.replica_manager.next_deadline(d)
        return self.fetcher.next_deadline(d)

    def on_response(self, now_ms: int, context: BrokerContext, message: Message) -> None:
        if self.stopped:
            return
        try:
            self._on_response(now_ms, context, message)
        except OSError as exc:  # an unguarded disk operation: the directory fails all the same
            self._log_dir_failed(now_ms, exc, f"handling a {type(message).__name__}")
            self._after_event(now_ms)

    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int, context: Any) -> int:
        """NodeBase's; a controller-bound request goes to the active controller of a quorum (the Raft leader)."""
        if dst == CONTROLLER and isinstance(self.loader, RaftMetadataLoader):
            dst = self.loader.controller_id()
        return super().send_request(dst, message, now_ms, timeout_ms, context)

    def _on_response(self, now_ms: int, context: BrokerContext, message: Message) -> None:
        """Hand a response to the component whose request it answers."""
        self._now_ms = now_ms
        if isinstance(context, tuple):  # the Raft observer's ("raft", ...)
            assert isinstance(self.loader, RaftMetadataLoader)
            self.loader.handle_response(now_ms, context, message)
        elif isinstance(context, FetchContext):
            assert isinstance(message, m.FetchResponse)
            self.fetcher.on_fetch_response(now_ms, context, message)
        elif isinstance(context, MetadataFetchContext):
            assert isinstance(message, m.MetadataFetchResponse) and isinstance(self.loader, MetadataLoader)
            self.loader.on_fetch(now_ms, message)
        elif isinstance(context, FetchSnapshotContext):
            assert isinstance(message, m.FetchSnapshotResponse) and isinstance(self.loader, MetadataLoader)
            self.loader.on_fetch_snapshot(now_ms, context, message)
        elif isinstance(context, HeartbeatContext):
            assert isinstance(message, m.BrokerHeartbeatResponse)
            if self.lifecycle.on_heartbeat(now_ms, context, message):
                self._finish_shutdown(now_ms)
        elif isinstance(context, AlterPartitionContext):
            assert isinstance(message, m.AlterPartitionResponse)
            self.replica_manager.on_alter_partition(now_ms, context, message)
        elif isinstance(context, RegisterContext):
            assert isinstance(message, m.BrokerRegistrationResponse)
            if self.lifecycle.on_registration(now_ms, message):
                self.fetcher.dirty = True
                self.lifecycle.send_heartbeat(now_ms)
                self.loader.start(now_ms)
        else:
            self.apis.forwarding.on_response(context, message)
        self._after_event(now_ms)

    def on_timeout(self, now_ms: int, context: BrokerContext) -> None:
        if self.stopped:
            return
        self._now_ms = now_ms
        if isinstance(context, tuple):  # the Raft observer's ("raft", ...)
            assert isinstance(self.loader, RaftMetadataLoader)
            self.loader.handle_timeout(now_ms, context)
        elif isinstance(context, FetchContext):
            self.fetcher.on_fetch_timeout(now_ms, context)
        elif isinstance(context, (MetadataFetchContext, FetchSnapshotContext)):
            assert isinstance(self.loader, MetadataLoader)
            self.loader.on_timeout(now_ms)
        elif isinstance(context, HeartbeatContext):
            self.lifecycle.heartbeat_inflight = False
        elif isinstance(context, AlterPartitionContext):
            self.replica_manager.retry_alter(now_ms, context)
        elif isinstance(context, RegisterContext):
            self.lifecycle.on_registration_timeout(now_ms)
        elif isinstance(context, ForwardContext):
            self.apis.forwarding.on_timeout(context)

    def on_request(self, now_ms: int, envelope: Envelope) -> None:
        if self.stopped:
            return
        self._now_ms = now_ms
        self.request_metrics.on_request(now_ms, envelope)
        try:
            if self.apis.handle(now_ms, envelope):
                self._after_event(now_ms)
        except OSError as exc:  # an unguarded disk operation: fail the directory, answer the request
            self._log_dir_failed(now_ms, exc, f"handling a {type(envelope.message).__name__}")
            self.send_response(envelope, error_response(envelope.message, Errors.KAFKA_STORAGE_ERROR))
            self._after_event(now_ms)

    def send_response(self, request: Envelope, message: Message) -> None:
        """NodeBase's, counting the response in the request metrics (at the latest time seen)."""
        self.request_metrics.on_response(self._now_ms, request, message)
        super().send_response(request, message)

    def _after_event(self, now_ms: int) -> None:
        """Send what the event made due: pending AlterPartition items, follower fetches (each only when
        its dirty flag says there may be something to send), completed group requests."""
        if self.stopped:
            return
        if self.groups.busy:
            self.group_apis.send_responses(now_ms)
        if self.replica_manager.alter_dirty:
            self.replica_manager.send_alter_partitions(now_ms)
        if self.fetcher.dirty:
            self.fetcher.send_fetches(now_ms)
