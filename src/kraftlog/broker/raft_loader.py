"""A broker of a controller quorum learns metadata as a KRaft observer (Kafka's ``KafkaRaftClient`` in a broker,
feeding its ``MetadataLoader``): :class:`RaftMetadataLoader` fetches the metadata log from the quorum's leader
(found through ``controller.quorum.bootstrap.servers``, the voters here), truncates on divergence, and publishes
only what committed, batch by batch. It also names the active controller for the broker's controller-bound
requests (Kafka's ``NodeToControllerChannelManager`` follows the Raft leader): the leader of the current epoch,
or, while none is known, the first voter (a NOT_CONTROLLER answer makes the sender retry).

Snapshots (KIP-630): the broker starts from the latest snapshot of its own metadata log, fetches the leader's
snapshot when the leader's log no longer holds what it lacks (FetchSnapshot, in the Raft client), writes snapshots
of its committed image as Kafka's broker does (``SnapshotGenerator``), and cleans its log by retention. A snapshot
loaded while published replaces the image whole: a replica of a topic it no longer holds becomes ``-stray``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from random import Random

from ..metadata.snapshot import image_from_snapshot
from ..protocol.node import Message, NodeBase
from ..raft.client import KafkaRaftClient, RaftChannel, RaftContext
from ..raft.config import QuorumConfig
from ..raft.log import RaftLog
from ..raft.snapshots import CommittedSnapshots
from ..storage.disk import Disk
from ..storage.metadata_log import MetadataLogConfig, MetadataLogLoadError
from .lifecycle import PENDING_CONTROLLED_SHUTDOWN, BrokerLifecycleManager
from .metadata_publisher import BrokerMetadataPublisher

__all__ = ["RaftMetadataLoader"]


class RaftMetadataLoader:
    """The metadata log of broker ``broker_id`` as an observer of the quorum ``controllers`` (their node ids).
    Its Raft log lives on the broker's ``disk`` (``metadata/__cluster_metadata-0``, not flushed: an observer
    acknowledges nothing); ``static``: the broker's static configs (the metadata log's segment, retention and
    snapshot settings); ``note`` writes a line to the node's log; ``static_voters``: ``controllers`` are the
    static voters (kraft.version 0), else only where to fetch from (bootstrap servers: the voters come from the
    log); times are ms."""

    def __init__(self, broker_id: int, cluster_id: str, directory_id: uuid.UUID, config: QuorumConfig,
                 publisher: BrokerMetadataPublisher, lifecycle: BrokerLifecycleManager, channel: RaftChannel,
                 disk: Disk, rng: Random, now_ms: int, controllers: Sequence[int],
                 static: dict[str, str] | None = None, note: Callable[[str], None] | None = None,
                 static_voters: bool = True) -> None:
        self.controllers = tuple(sorted(controllers))
        self._publisher = publisher
        self._lifecycle = lifecycle
        self._node = channel
        log_config = MetadataLogConfig.from_configs(static or {})
        self._note = note if note is not None else (lambda line: None)

        def client() -> KafkaRaftClient:
            return KafkaRaftClient(node_id=broker_id, directory_id=directory_id, cluster_id=cluster_id,
                                   config=config, disk=disk, rng=rng, now_ms=now_ms, channel=channel,
                                   static_voters=self.controllers if static_voters else None,
                                   bootstrap_servers=self.controllers,
                                   can_become_voter=False, log_config=log_config)
        try:
            self.raft = client()
        except MetadataLogLoadError as exc:  # an observer's copy is refetched, as the single controller's brokers do
            self._note(f"the local metadata log cannot be loaded ({exc}): it is deleted and fetched again")
            RaftLog.delete_files(disk, now_ms)
            self.raft = client()
        self._leader: tuple[int | None, int] = (None, -1)
        #: snapshots of the committed (published) image and the log's cleaning
        self.snapshots = CommittedSnapshots(self.raft, log_config, now_ms)
        self.snapshots.log_lines.extend(self.raft.log.load_problems)

    def controller_id(self) -> int:
        """Where controller-bound requests go: the Raft leader, or the first voter while none is known."""
        leader = self.raft.leader_id
        return leader if leader is not None else self.controllers[0]

    # ------------------------------------------------------------------ MetadataLoader's face
    def start(self, now_ms: int) -> None:
        """The broker registered (an observer fetches from its start already)."""
        self.after_event(now_ms)

    def maybe_send(self, now_ms: int) -> None:
        """A broker tick: Raft's timers."""
        self.after_event(now_ms)

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and Raft's next timer (ms)."""
        for r in (self.raft.next_deadline(), self.snapshots.next_deadline()):
            if r is not None and r < d:
                d = r
        return d

    def handle_response(self, now_ms: int, context: RaftContext, message: Message) -> None:
        self.raft.handle_response(now_ms, context, message)
        self.after_event(now_ms)

    def handle_timeout(self, now_ms: int, context: RaftContext) -> None:
        self.raft.handle_timeout(now_ms, context)
        self.after_event(now_ms)

    def after_event(self, now_ms: int) -> None:
        """Poll Raft and, once the broker registered, hand every data batch that committed to the publisher, which
        publishes once the committed metadata holds the broker's registration record."""
        self.raft.poll(now_ms)
        leader = (self.raft.leader_id, self.raft.epoch)
        if leader != self._leader:
            old = self._leader[0]
            self._leader = leader
            if old is not None and old != leader[0] and isinstance(self._node, NodeBase):
                # Kafka's NodeToControllerRequestThread: the active controller changed, so the connection to the
                # old one is dropped and what was in flight to it (a heartbeat, an AlterPartition) is retried
                self._node.peer_disconnected(now_ms, old)
        broker_epoch = self._lifecycle.broker_epoch
        snapshot = self.raft.take_snapshot()
        if snapshot is not None:
            image, delta = image_from_snapshot(snapshot.records, snapshot.snapshot_id)
            self._publisher.load_snapshot(now_ms, image, delta.errors)
            if 0 <= broker_epoch < snapshot.snapshot_id.end_offset and not self._publisher.published:
                # the snapshot holds the broker's registration: caught up
                self._publisher.apply_metadata(now_ms, [], snapshot.snapshot_id.end_offset, caught_up=True)
        self.snapshots.maybe_clean(now_ms)
        for line in self.snapshots.take_lines():
            self._note(f"metadata log: {line}")
        if broker_epoch < 0:
            return  # Kafka's BrokerServer installs its publishers only once registered and caught up (below)
        committed = self.raft.take_committed()
        data = [b for b in committed if not b.control]
        for i, batch in enumerate(data):
            # caught up once the committed metadata holds the broker's own registration (its offset is the
            # broker epoch: Kafka's initialCatchUpFuture): a restarted broker must not act on the leaderships of
            # its previous incarnation before the controller handled its return
            self._publisher.apply_metadata(now_ms, list(batch.records), batch.base_offset,
                                           caught_up=i == len(data) - 1 and batch.next_offset > broker_epoch)
        if committed and self._publisher.published:
            self.snapshots.after_commits(committed, self._publisher.image, self._publisher.metadata_apply_errors.count,
                                         now_ms)
        if data and self._lifecycle.state == PENDING_CONTROLLED_SHUTDOWN:
            self._lifecycle.next_heartbeat_ms = now_ms
