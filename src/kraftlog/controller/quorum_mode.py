"""The controller as one voter of a KRaft quorum (Kafka's ``QuorumController`` over its ``RaftClient``): the part of
:class:`~kraftlog.controller.controller.QuorumController` that hosts a :class:`~kraftlog.raft.client.KafkaRaftClient`.

* **Active and standby.** The voter that leads the Raft epoch becomes the active controller once its
  LeaderChangeMessage committed (Kafka's ``claim``: its image is then the committed one): it builds its
  managers anew (every registered broker gets a fresh session, as after a failover) and serves. The others
  are standbys: they replay what commits and answer every controller request NOT_CONTROLLER.
* **Writes.** An event's records are one Raft batch (atomic: all or none, at most 10,000 records, Kafka's
  ``MAX_RECORDS_PER_BATCH``); the active applies them to its image at once, as Kafka's controller does, and
  the event's response waits until they commit (the high watermark passed them). Every event that writes is
  atomic here (Kafka makes most of them atomic; kraftlog makes them all).
* **Losing leadership** (a newer epoch, check-quorum, a resignation): the image reverts to the committed
  records (Kafka's revert to the last committed snapshot), the managers are built anew as a standby's, and
  every response still waiting for a commit is answered NOT_CONTROLLER.

* **Snapshots** (KIP-630, Kafka's ``SnapshotGenerator`` in every controller's ``MetadataLoader``): every controller,
  active or standby, writes a snapshot of its *committed* image at a batch boundary once
  ``metadata.log.max.record.bytes.between.snapshots`` bytes committed since the last one or
  ``metadata.log.max.snapshot.interval.ms`` passed (never after a metadata record failed to apply), and cleans its
  log by retention on Kafka's cleaner timer. A controller starts from its latest snapshot (then the committed
  batches after it), and loads the snapshot its Raft client fetched from the leader when its log was too far
  behind (FetchSnapshot).

The metadata log is the Raft log (``metadata/__cluster_metadata-0``): segments whose items are Raft batches, and
snapshots (:class:`~kraftlog.raft.log.RaftLog`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from random import Random
from typing import TYPE_CHECKING, Any, cast

from ..metadata.image import MetadataImage
from ..metadata.snapshot import image_from_snapshot
from ..protocol.errors import Errors
from ..protocol.listeners import error_response
from ..protocol.node import Address, Envelope, Message
from ..protocol.raft_records import RaftEndpoint
from ..raft.bootstrap import read_bootstrap_records
from ..raft.client import KafkaRaftClient, NotLeaderError, RaftContext
from ..raft.config import QuorumConfig
from ..raft.snapshots import CommittedSnapshots
from ..storage.disk import Disk
from ..storage.metadata_log import MetadataLogConfig
from ..storage.snapshot_files import LoadedSnapshot

if TYPE_CHECKING:
    from ..metadata.records import MetadataRecord
    from .controller import QuorumController

__all__ = ["ControllerQuorum", "NotControllerError"]


class NotControllerError(Exception):
    """A write on a controller that is not the active one (Kafka's ``NotControllerException``): the event is
    abandoned and its request answered NOT_CONTROLLER."""


class _RaftChannel:
    """The raft client's sends, straight to the controller's outbox (a quorum response never waits for a commit)."""

    def __init__(self, controller: QuorumController) -> None:
        self._controller = controller

    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int, context: Any) -> int:
        return self._controller.send_request(dst, message, now_ms, timeout_ms, context)

    def send_response(self, request: Envelope, message: Message) -> None:
        self._controller.send_raw_response(request, message)

    def cancel_request(self, correlation_id: int) -> None:
        self._controller.cancel_request(correlation_id)


class ControllerQuorum:
    """The Raft side of controller ``node_id``: ``voters`` are ``controller.quorum.voters``' ids (kraft.version
    0) or None for the voters of the bootstrap checkpoint (kraft.version 1); ``bootstrap_servers``:
    ``controller.quorum.bootstrap.servers`` as node ids (how a controller that is no voter finds the leader);
    ``listeners``: its controller listener's endpoints (none in the simulator); times are ms."""

    def __init__(self, controller: QuorumController, node_id: int, directory_id: uuid.UUID, cluster_id: str,
                 config: QuorumConfig, disk: Disk, rng: Random, now_ms: int, voters: Sequence[int] | None,
                 bootstrap_servers: Sequence[int] = (), listeners: Sequence[RaftEndpoint] = ()) -> None:
        self.controller = controller
        #: Kafka's bootstrap metadata (``storage format --add-scram``): written by the first active controller
        self.bootstrap_records = read_bootstrap_records(disk)
        log_config = MetadataLogConfig.from_configs(controller.static)
        self.raft = KafkaRaftClient(node_id=node_id, directory_id=directory_id, cluster_id=cluster_id, config=config,
                                    disk=disk, rng=rng, now_ms=now_ms, channel=_RaftChannel(controller),
                                    static_voters=voters, bootstrap_servers=bootstrap_servers, log_config=log_config,
                                    local_listeners=listeners)
        #: snapshots of the committed image and the log's cleaning (Kafka's SnapshotGenerator, cleaner)
        self.snapshots = CommittedSnapshots(self.raft, log_config, now_ms)
        self.snapshots.log_lines.extend(self.raft.log.load_problems)
        #: the epoch this controller is active in, None while standby
        self.active_epoch: int | None = None
        #: the last offset applied to the controller's image (active: its own writes, at once)
        self.applied_offset = -1
        #: responses waiting for their records to commit: (last offset, request, response)
        self.deferred: list[tuple[int, Envelope, Message]] = []
        #: the last offset this controller wrote while active (its responses wait for it)
        self.last_written = -1
        #: epochs in which this controller was active (the simulator's checks read it)
        self.active_epochs: list[int] = []
        #: the image of the committed records only (the active controller's own image runs ahead of it)
        self.committed_image = MetadataImage()

    @property
    def is_active(self) -> bool:
        """This controller is the active one."""
        return self.active_epoch is not None

    @property
    def next_offset(self) -> int:
        """The offset the next record written will have (a RegisterBrokerRecord's is the broker epoch)."""
        return self.raft.next_offset

    # ------------------------------------------------------------------ writes
    def append(self, records: Sequence[Any], now_ms: int) -> int:
        """Write ``records`` as one batch (active only); returns the offset of the first. Raises
        :class:`NotControllerError` on a standby or a leader of another epoch."""
        if self.active_epoch is None:
            raise NotControllerError("not the active controller")
        try:
            last = self.raft.append(self.active_epoch, records, now_ms)
        except NotLeaderError as exc:
            raise NotControllerError(str(exc)) from exc
        self.last_written = last
        base = last - len(records) + 1
        self.applied_offset = last
        return base

    def respond(self, request: Envelope, message: Message) -> None:
        """Answer ``request`` once everything this controller wrote so far committed (at once if it has)."""
        if self.last_written >= self.raft.high_watermark:
            self.deferred.append((self.last_written, request, message))
        else:
            self.controller.send_raw_response(request, message)

    # ------------------------------------------------------------------ after every event
    def after_event(self, now_ms: int) -> None:
        """Poll Raft, follow leadership (claim / renounce), apply what committed and answer the responses whose
        records committed."""
        raft = self.raft
        raft.poll(now_ms)
        if self.active_epoch is not None and (not raft.is_leader or raft.epoch != self.active_epoch
                                              or raft.fatal_error is not None):
            self._renounce(now_ms)
        snapshot = raft.take_snapshot()
        if snapshot is not None:
            self._load_snapshot(snapshot, now_ms)
        batches = raft.take_committed()
        standby_records: list[tuple[int, list[Any]]] = []
        log = self.controller.log
        for batch in batches:
            if batch.base_offset == len(log):  # the committed metadata log, records (and control records) by offset
                log.extend(cast(Any, batch.records))
            if batch.control or batch.last_offset <= self.applied_offset:
                continue
            standby_records.append((batch.base_offset, list(batch.records)))
            self.applied_offset = batch.last_offset
        for base, records in standby_records:
            self.controller.replay_committed(records, base)
        if self.active_epoch is None:
            self.committed_image = self.controller.image
        else:
            for batch in batches:
                if not batch.control and batch.last_offset > self.committed_image.offset:
                    self.committed_image, _ = self.committed_image.replay(list(batch.records), batch.base_offset)
        if batches:
            self.snapshots.after_commits(batches, self.committed_image,
                                         self.controller.metadata_apply_errors.count, now_ms)
        if self.snapshots.maybe_clean(now_ms):
            log, start = self.controller.log, self.raft.log.start_offset
            if log.start_offset < start <= log.end_offset:  # the committed records by offset follow the log start
                del log.records[:start - log.start_offset]
                log.start_offset = start
        if self.active_epoch is None and raft.ready_for_writes and raft.fatal_error is None:
            self._claim(now_ms)
        if self.deferred:
            hwm = raft.high_watermark
            keep = []
            for entry in self.deferred:
                if entry[0] < hwm:
                    self.controller.send_raw_response(entry[1], entry[2])
                else:
                    keep.append(entry)
            self.deferred = keep

    def _claim(self, now_ms: int) -> None:
        """Kafka's ``QuorumController.claim``: the image is the committed one; the managers start anew."""
        self.active_epoch = self.raft.epoch
        self.active_epochs.append(self.raft.epoch)
        self.snapshots.log_lines.append(f"became the active controller (leader of epoch {self.raft.epoch})")
        self.last_written = self.raft.next_offset - 1
        self.controller.rebuild_managers(now_ms)
        if self.bootstrap_records and self.committed_image.offset < 0:  # Kafka: an empty log gets the bootstrap
            self.controller.append(cast("Sequence[MetadataRecord]", self.bootstrap_records), now_ms)

    def _renounce(self, now_ms: int) -> None:
        """Kafka's ``QuorumController.renounce``: back to the committed image, managers anew, waiting answers
        NOT_CONTROLLER."""
        self.snapshots.log_lines.append(f"no longer the active controller (epoch {self.active_epoch}; now epoch "
                                        f"{self.raft.epoch}, leader {self.raft.leader_id})")
        self.active_epoch = None
        deferred, self.deferred = self.deferred, []
        for _, request, _message in deferred:
            self.controller.send_raw_response(request, error_response(request.message, Errors.NOT_CONTROLLER))
        # the committed image is kept as commits arrive (from the latest snapshot on)
        self.applied_offset = self.committed_image.offset
        self.controller.reset_image(self.committed_image)
        self.controller.rebuild_managers(now_ms)

    # ------------------------------------------------------------------ snapshots
    def _load_snapshot(self, snapshot: LoadedSnapshot, now_ms: int) -> None:
        """Kafka's ``MetadataLoader.handleLoadSnapshot`` on a controller: the image becomes the snapshot's whole
        (at start, or after the Raft client installed one from the leader); the managers are built anew."""
        sid = snapshot.snapshot_id
        image, delta = image_from_snapshot(snapshot.records, sid)
        for offset, record, reason in delta.errors:
            self.controller.metadata_apply_errors.add(offset, record, reason)
        log = self.controller.log
        log.records = []
        log.start_offset = sid.end_offset
        self.applied_offset = sid.end_offset - 1
        self.committed_image = image
        self.controller.reset_image(image)
        self.controller.rebuild_managers(now_ms)
        self.snapshots.generator.reset(now_ms)
        self.snapshots.log_lines.append(f"loaded metadata snapshot {sid.file_name()}")

    def next_deadline(self) -> int | None:
        """The next cleaning of the log (ms), None when none is due; Raft's timers are the client's."""
        return self.snapshots.next_deadline()

    def refuse(self, request: Envelope) -> None:
        """Answer a controller request on a standby: NOT_CONTROLLER (Kafka's controller APIs on a non-active
        controller)."""
        try:
            message = error_response(request.message, Errors.NOT_CONTROLLER)
        except TypeError:
            return  # an API a controller never answers
        self.controller.send_raw_response(request, message)

    def handle_request(self, now_ms: int, env: Envelope) -> bool:
        """A quorum API request (Vote, BeginQuorumEpoch, EndQuorumEpoch, the metadata Fetch, DescribeQuorum,
        Add/Remove/UpdateRaftVoter): served by Raft; False for any other."""
        return self.raft.handle_request(now_ms, env)

    def handle_response(self, now_ms: int, context: RaftContext, message: Message) -> None:
        self.raft.handle_response(now_ms, context, message)

    def handle_timeout(self, now_ms: int, context: RaftContext) -> None:
        self.raft.handle_timeout(now_ms, context)
