"""Snapshots in :class:`~kraftlog.raft.client.KafkaRaftClient`, a part of it (Kafka's KIP-630 handlers in
``KafkaRaftClient``):

* **Leader.** A Fetch whose position the log no longer holds (below the log start, or an epoch the oldest snapshot
  replaced: :meth:`~kraftlog.raft.log.RaftLog.validate_offset_and_epoch`), or any Fetch from offset 0 while a
  snapshot exists, is answered with the latest snapshot's id (Kafka's ``SnapshotId`` in the FetchResponse).
  FetchSnapshot (API 59) serves that snapshot's bytes in chunks (``handleFetchSnapshotRequest``: a leader-only
  request; SNAPSHOT_NOT_FOUND for a snapshot not kept, POSITION_OUT_OF_RANGE for a position outside it; it counts
  as a fetch for check-quorum).
* **Follower** (a voter or an observer: a broker). A Fetch answered with a SnapshotId makes it fetch that snapshot
  (``state.setFetchingSnapshot``) instead of the log, chunk by chunk from its leader; a chunk at another position
  or for another snapshot is an impossible message (Kafka's IllegalStateException); SNAPSHOT_NOT_FOUND (the leader
  cleaned it meanwhile) starts over with a Fetch. Complete, the snapshot is checked (it decodes whole), written,
  and the log truncated to it (``truncateToLatestSnapshot``); the high watermark moves up to its end offset.
* **Listener** (the host): :meth:`~kraftlog.raft.client.KafkaRaftClient.take_snapshot` hands it the latest
  snapshot when it starts (Kafka's ``updateListenersProgress``: a new listener loads the latest snapshot) or when
  the offset it reads next is below the log start (it fetched one); it then reads the commits after it.

Sizes are bytes; times ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..metadata.image import MetadataImage
from ..metadata.snapshot import SnapshotGenerator, SnapshotId, image_records, records_bytes
from ..protocol import messages as m
from ..protocol.errors import Errors, WireError
from ..protocol.node import Envelope
from ..protocol.raft_records import KRaftVersionRecord, RaftBatch, VotersRecord
from ..storage.metadata_log import MetadataLogConfig
from ..storage.snapshot_files import LoadedSnapshot
from .leader_state import LeaderState
from .states import Follower, RaftSafetyError
from .voters import ControlRecordState, ReplicaKey, VoterSet

__all__ = ["SnapshotFetching", "CommittedSnapshots", "FETCH_SNAPSHOT_MAX_BYTES", "control_from_snapshot"]

#: How many bytes of a snapshot a FetchSnapshot asks for (Kafka's ``controller.quorum.fetch.snapshot.max.bytes``
#: is not a config; KafkaRaftClient asks for ``MAX_FETCH_SIZE_BYTES``, 8 MiB).
FETCH_SNAPSHOT_MAX_BYTES = 8 * 1024 * 1024


def control_from_snapshot(snapshot: LoadedSnapshot, current: ControlRecordState) -> ControlRecordState:
    """The control-record state a log starting at ``snapshot`` has: based on the snapshot's voters and kraft.version
    (KIP-853: the cleaned log no longer holds the VotersRecord), ``current`` when it holds none (kraft.version 0)."""
    version = next((r.kraft_version for r in snapshot.control if isinstance(r, KRaftVersionRecord)), None)
    voters = next((r for r in snapshot.control if isinstance(r, VotersRecord)), None)
    if voters is None:
        return current
    return ControlRecordState(VoterSet.of(voters), version if version is not None else 1)


class SnapshotFetching:
    """The snapshot handlers of ``client`` (a :class:`~kraftlog.raft.client.KafkaRaftClient`)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        #: lines about snapshots fetched and installed, for the host's log
        self.log_lines: list[str] = []

    # ------------------------------------------------------------------ leader
    def handle_fetch_snapshot(self, now_ms: int, env: Envelope[m.FetchSnapshotRequest]) -> None:
        """Kafka's ``handleFetchSnapshotRequest``."""
        c = self.client
        req = env.message
        state = c.state
        if req.cluster_id is not None and req.cluster_id != c.cluster_id:
            c.channel.send_response(env, m.FetchSnapshotResponse(Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE, -1, -1))
            return
        error = Errors.NONE
        if req.current_leader_epoch < state.epoch:
            error = Errors.FENCED_LEADER_EPOCH
        elif req.current_leader_epoch > state.epoch:
            error = Errors.UNKNOWN_LEADER_EPOCH
        elif not isinstance(state, LeaderState):
            error = Errors.NOT_LEADER_OR_FOLLOWER
        sid = SnapshotId(req.snapshot_end_offset, req.snapshot_epoch)
        data = c.log.files.data(sid) if error == Errors.NONE and sid in c.log.files.ids else None
        if error == Errors.NONE and data is None:
            error = Errors.SNAPSHOT_NOT_FOUND
        elif data is not None and (req.position < 0 or req.position >= len(data)):
            error = Errors.POSITION_OUT_OF_RANGE
        leader = state.leader_id if state.leader_id is not None else -1
        if error != Errors.NONE:
            c.channel.send_response(env, m.FetchSnapshotResponse(
                Errors.NONE, error, sid.end_offset, sid.epoch, current_leader_id=leader,
                current_leader_epoch=state.epoch, size=len(data) if data is not None else -1, position=req.position))
            return
        assert data is not None and isinstance(state, LeaderState)
        state.update_check_quorum(ReplicaKey(req.replica_id, req.replica_directory_id), now_ms)
        chunk = data[req.position:req.position + max(1, min(req.max_bytes, len(data)))]
        c.channel.send_response(env, m.FetchSnapshotResponse(
            Errors.NONE, Errors.NONE, sid.end_offset, sid.epoch, current_leader_id=leader,
            current_leader_epoch=state.epoch, size=len(data), position=req.position, unaligned_records=chunk))

    # ------------------------------------------------------------------ follower
    def start(self, state: Follower, end_offset: int, epoch: int) -> bool:
        """The leader's Fetch answer named snapshot (``end_offset``, ``epoch``): fetch it next. False for an id
        with a negative part (Kafka logs it and backs off)."""
        if end_offset < 0 or epoch < 0:
            return False
        sid = SnapshotId(end_offset, epoch)
        if sid not in self.client.log.files.ids:  # Kafka's createNewSnapshotUnchecked: none when already stored
            state.fetching_snapshot = sid
            state.snapshot_bytes = bytearray()
        return True

    def request(self, state: Follower) -> m.FetchSnapshotRequest:
        """Kafka's ``buildFetchSnapshotRequest``: the next chunk of the snapshot being fetched."""
        c = self.client
        sid = state.fetching_snapshot
        assert sid is not None
        return m.FetchSnapshotRequest(
            current_leader_epoch=state.epoch, snapshot_end_offset=sid.end_offset, snapshot_epoch=sid.epoch,
            position=len(state.snapshot_bytes), cluster_id=c.cluster_id, replica_id=c.local.id,
            max_bytes=FETCH_SNAPSHOT_MAX_BYTES, replica_directory_id=c.local.directory_id)

    def handle_response(self, now_ms: int, src: int, resp: m.FetchSnapshotResponse) -> bool:
        """Kafka's ``handleFetchSnapshotResponse``: True when handled, False to back off."""
        c = self.client
        if resp.error_code != Errors.NONE:
            return False
        leader = resp.current_leader_id if resp.current_leader_id >= 0 else None
        handled = c._handle_common_response(resp.partition_error_code, leader, resp.current_leader_epoch, now_ms)
        if handled is not None:
            return bool(handled)
        state = c.state
        if not isinstance(state, Follower):
            return False
        if resp.partition_error_code == Errors.SNAPSHOT_NOT_FOUND or resp.snapshot_end_offset < 0 \
                or resp.snapshot_epoch < 0:
            # the leader deleted the snapshot before the follower fetched it whole: start over with a Fetch
            state.fetching_snapshot = None
            state.snapshot_bytes = bytearray()
            state.fetch_deadline = now_ms + c.config.fetch_timeout_ms
            return True
        if resp.partition_error_code != Errors.NONE:
            return False
        sid = SnapshotId(resp.snapshot_end_offset, resp.snapshot_epoch)
        if state.fetching_snapshot is None:
            raise RaftSafetyError(f"an unexpected FetchSnapshot response for {sid.file_name()}")
        if sid != state.fetching_snapshot:
            raise RaftSafetyError(f"a FetchSnapshot response for {sid.file_name()} while fetching "
                                  f"{state.fetching_snapshot.file_name()}")
        if resp.position != len(state.snapshot_bytes):
            raise RaftSafetyError(f"a FetchSnapshot response at position {resp.position}, "
                                  f"{len(state.snapshot_bytes)} expected")
        state.snapshot_bytes += resp.unaligned_records
        state.fetch_deadline = now_ms + c.config.fetch_timeout_ms
        if len(state.snapshot_bytes) < resp.size:
            return True
        data, state.fetching_snapshot, state.snapshot_bytes = bytes(state.snapshot_bytes), None, bytearray()
        try:
            c.log.install_snapshot(sid, data, now_ms)
        except WireError as exc:  # a chunk damaged on the way: Kafka's CRC check fails the load; start over
            self.log_lines.append(f"snapshot {sid.file_name()} from leader {src} does not decode ({exc}): refetched")
            return True
        self._installed()
        self.log_lines.append(f"installed snapshot {sid.file_name()} from leader {src}: the log starts at "
                              f"{c.log.start_offset}")
        return True

    def _installed(self) -> None:
        """A snapshot fetched from the leader was installed (the log starts at its end): the control-record state
        starts from its voters, the high watermark moves up to its end (Kafka's ``updateFollowerHighWatermark``
        after ``truncateToLatestSnapshot``), and the host loads it next (``take_snapshot``)."""
        c = self.client
        snapshot = c.log.latest_snapshot()
        assert snapshot is not None
        c.control = control_from_snapshot(snapshot, c.control)
        c.high_watermark = max(c.high_watermark, c.log.start_offset)
        c.on_log_restarted(snapshot)

    def control_records(self, end_offset: int) -> list[object]:
        """The control records a snapshot ending at ``end_offset`` holds: at kraft.version 1, the KRaftVersionRecord
        and the VotersRecord in force at ``end_offset - 1`` (Kafka's ``RecordsSnapshotWriter``); none at 0."""
        c = self.client
        if c.kraft_version < 1:
            return []
        return [KRaftVersionRecord(c.kraft_version), c.control.voter_set_at(end_offset - 1).to_record()]


class CommittedSnapshots:
    """Kafka's ``SnapshotGenerator`` and metadata log cleaner for a host of ``raft`` (a controller of a quorum, a
    broker observing it): a snapshot of the host's *committed* image (at a batch boundary of the log) once
    ``config``'s byte or time rule says one is due (disabled for good once a record failed to apply: what the
    image could not apply must not be compacted away), and the log cleaned by retention on Kafka's cleaner timer.
    A write that fails (a full disk) is a line in :attr:`log_lines`, tried again later; the log stays whole."""

    def __init__(self, raft: Any, config: MetadataLogConfig, now_ms: int) -> None:
        self.raft = raft
        self.generator = SnapshotGenerator(config.max_bytes_between_snapshots, config.max_snapshot_interval_ms,
                                           now_ms)
        self.log_lines: list[str] = []

    def after_commits(self, batches: Sequence[RaftBatch], image: MetadataImage, apply_errors: int,
                      now_ms: int) -> None:
        """``batches`` committed and ``image`` is the committed image after them."""
        if apply_errors:
            self.generator.disable(f"{apply_errors} metadata record(s) not applied")
        reason = self.generator.publish_log_delta(sum(records_bytes(b.records) for b in batches if not b.control),
                                                  now_ms)
        log = self.raft.log
        last = batches[-1] if batches else None
        if reason is None or last is None or last.next_offset <= image.offset:
            return
        # Kafka's MetadataBatchLoader: the snapshot ends at the last committed batch, control batches included
        sid = SnapshotId(last.next_offset, last.epoch)
        try:
            if log.create_snapshot(sid, image_records(image), self.raft.snapshots.control_records(sid.end_offset),
                                   now_ms):
                self.log_lines.append(f"wrote metadata snapshot {sid.file_name()} because {reason}")
        except OSError as exc:
            self.log_lines.append(f"metadata snapshot {sid.file_name()} not written: {exc}")

    def maybe_clean(self, now_ms: int) -> bool:
        """The log cleaned by retention when the cleaner's timer is due; True when the log start moved."""
        log = self.raft.log
        if now_ms < log.next_clean_ms:
            return False
        try:
            if log.clean_due(now_ms):
                self.log_lines.append(f"cleaned the metadata log: it starts at offset {log.start_offset}")
                return True
        except OSError as exc:
            self.log_lines.append(f"the metadata log could not be cleaned: {exc}")
        return False

    def next_deadline(self) -> int | None:
        """The next cleaning (ms) once there are two snapshots (the least a clean needs), None otherwise."""
        log = self.raft.log
        return int(log.next_clean_ms) if len(log.files.ids) >= 2 else None

    def take_lines(self) -> list[str]:
        """The lines of this and of the Raft client's snapshot fetching not yet taken."""
        lines: list[str] = self.raft.snapshots.log_lines + self.log_lines
        self.log_lines, self.raft.snapshots.log_lines = [], []
        return lines
