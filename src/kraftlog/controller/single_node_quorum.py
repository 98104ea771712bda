"""The single controller's metadata log as a single-node KRaft quorum: what ``KafkaRaftClient`` and the
controller's ``SnapshotGenerator`` do for a quorum of one voter, which commits what it writes at once.

:class:`SingleNodeQuorum` owns the controller's :class:`~kraftlog.storage.metadata_log.MetadataLog` (segments and
snapshots, fsynced on every append) and serves it to the brokers:

* ``append``: the records of one event, one write (all or none after a crash), then a snapshot of the image when
  the :class:`~kraftlog.metadata.snapshot.SnapshotGenerator` says one is due (Kafka's
  ``metadata.log.max.record.bytes.between.snapshots`` / ``metadata.log.max.snapshot.interval.ms``); the log is
  cleaned by retention every 60 s (``KafkaMetadataLog.maybeClean`` on Kafka's cleaner timer);
* MetadataFetch (Kafka's ``handleFetchRequest``): records from the fetch offset on, parked up to ``max_wait_ms``
  when there are none yet; below the log start offset, the latest snapshot's id (the FetchResponse's SnapshotId);
* FetchSnapshot (API 59, ``handleFetchSnapshotRequest``): a snapshot's bytes, in chunks.

Times are ms; sans-I/O (the Disk is injected).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from ..metadata.image import MetadataImage
from ..metadata.snapshot import SnapshotGenerator, SnapshotId, image_records, records_bytes
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..storage.disk import Disk
from ..storage.metadata_log import MetadataLog, MetadataLogConfig
from .context import MetadataRecord

__all__ = ["SingleNodeQuorum", "MAX_RECORDS_PER_FETCH"]

#: How many metadata records one MetadataFetch response carries at most.
MAX_RECORDS_PER_FETCH = 2000


class SingleNodeQuorum:
    """The single controller's metadata log on ``disk`` (module docstring). ``static``: the controller's static
    configs (the log's segment, retention and snapshot configs); ``cluster_id``: a fetch naming another gets
    INCONSISTENT_CLUSTER_ID; ``respond(request, message)`` queues an answer. Raises
    :class:`~kraftlog.storage.metadata_log.MetadataLogLoadError` when the log cannot be loaded whole."""

    def __init__(self, disk: Disk, static: dict[str, str], cluster_id: str, now_ms: int,
                 respond: Callable[[m.Envelope, m.MetadataFetchResponse], None]) -> None:
        config = MetadataLogConfig.from_configs(static)
        self.cluster_id = cluster_id
        self._respond = respond
        #: the metadata log (its records by offset are what the simulator's checks read)
        self.log = MetadataLog(disk, config, now_ms, flush=True)
        #: when to write a snapshot (Kafka's SnapshotGenerator)
        self.snapshot_generator = SnapshotGenerator(config.max_bytes_between_snapshots,
                                                    config.max_snapshot_interval_ms, now_ms)
        #: lines about snapshots (written, not written, a load's problems) for the node's log
        self.log_lines: list[str] = []
        #: MetadataFetches waiting for records: (deadline ms, request, fetch offset)
        self.parked_fetches: list[tuple[int, m.Envelope, int]] = []

    def load(self, now_ms: int) -> tuple[list[object] | None, SnapshotId | None, int, Sequence[object]]:
        """(the newest usable snapshot's records or None, its id, the offset of the first record after it, those
        records): what the controller rebuilds its image from."""
        snapshot, base, records = self.log.load(now_ms)
        self.log_lines.extend(self.log.load_problems)
        if snapshot is None:
            return None, None, base, records
        return snapshot.records, snapshot.snapshot_id, base, records

    @property
    def end_offset(self) -> int:
        return self.log.end_offset

    # ------------------------------------------------------------------ writing
    def append(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """The records of one event as one fsynced write. OSError propagates (nothing is kept then)."""
        self.log.append(records, now_ms)

    def after_append(self, records: Sequence[MetadataRecord], image: MetadataImage, apply_errors: int,
                     now_ms: int) -> None:
        """After ``records`` were appended and replayed into ``image``: a snapshot of ``image`` when one is due
        (disabled for good once ``apply_errors`` > 0: Kafka disables snapshots on a metadata fault, so that a
        record the image could not apply is not compacted away), then the parked fetches are answered. A snapshot
        that cannot be written (OSError: a full disk) is skipped with a line: the log is intact."""
        if apply_errors:
            self.snapshot_generator.disable(f"{apply_errors} metadata record(s) not applied")
        reason = self.snapshot_generator.publish_log_delta(records_bytes(records), now_ms)
        if reason is not None:
            log = self.log
            snapshot_id = SnapshotId(log.end_offset, log.epoch)
            try:
                if log.create_snapshot(snapshot_id, image_records(image), now_ms):
                    self.log_lines.append(f"wrote metadata snapshot {snapshot_id.file_name()} because {reason}")
            except OSError as exc:
                self.log_lines.append(f"metadata snapshot {snapshot_id.file_name()} not written: {exc}")
        if self.parked_fetches:
            parked, self.parked_fetches = self.parked_fetches, []
            for _, env, offset in parked:
                self._answer(env, offset)

    def maybe_clean(self, now_ms: int) -> None:
        """The periodic cleaning by retention (Kafka's RaftMetadataLogCleanerManager, every 60 s); a failure (a full
        disk) is a line, tried again at the next run."""
        log = self.log
        try:
            if log.clean_due(now_ms):
                self.log_lines.append(f"cleaned the metadata log: it starts at offset {log.start_offset}, latest "
                                      f"snapshot {log.snapshots[-1].file_name()}")
        except OSError as exc:
            self.log_lines.append(f"the metadata log could not be cleaned: {exc}")

    # ------------------------------------------------------------------ serving
    def handle_fetch(self, now_ms: int, env: m.Envelope, req: m.MetadataFetchRequest) -> None:
        """KafkaRaftClient.handleFetchRequest (``req`` is ``env``'s message): a ClusterId other than ours (an absent
        one is accepted, ``hasValidClusterId``) → INCONSISTENT_CLUSTER_ID; an offset below the log start → the
        latest snapshot's id (validateOffsetAndEpoch's SNAPSHOT); past the log end or negative →
        OFFSET_OUT_OF_RANGE; otherwise the records from the fetch offset on, parked up to ``max_wait_ms`` when
        there are none yet."""
        log = self.log
        end = log.end_offset
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self._respond(env, m.MetadataFetchResponse(Errors.INCONSISTENT_CLUSTER_ID, -1, -1))
        elif 0 <= req.fetch_offset < log.start_offset and log.latest_snapshot_id is not None:
            sid = log.latest_snapshot_id
            self._respond(env, m.MetadataFetchResponse(
                Errors.NONE, end, req.fetch_offset, log_start_offset=log.start_offset,
                snapshot_end_offset=sid.end_offset, snapshot_epoch=sid.epoch))
        elif req.fetch_offset > end or req.fetch_offset < 0:
            self._respond(env, m.MetadataFetchResponse(Errors.OFFSET_OUT_OF_RANGE, end, req.fetch_offset))
        elif req.fetch_offset < end or req.max_wait_ms <= 0:
            self._answer(env, req.fetch_offset)
        else:
            self.parked_fetches.append((now_ms + req.max_wait_ms, env, req.fetch_offset))

    def expire_fetches(self, now_ms: int) -> None:
        """Answer the parked fetches whose wait is over (with what there is: nothing)."""
        keep = []
        for deadline, env, offset in self.parked_fetches:
            if deadline <= now_ms:
                self._answer(env, offset)
            else:
                keep.append((deadline, env, offset))
        self.parked_fetches = keep

    def next_deadline(self) -> int | None:
        """The earliest of a parked fetch's deadline and the next cleaning (ms; a cleaning only once there are two
        snapshots, the least it needs), None when there is neither."""
        clean = self.log.next_clean_ms if len(self.log.snapshots) >= 2 else None
        return min((d for d in (*(d for d, _, _ in self.parked_fetches), clean) if d is not None), default=None)

    def _answer(self, env: m.Envelope, start: int) -> None:
        """Answer a MetadataFetch from offset ``start``: at most :data:`MAX_RECORDS_PER_FETCH` records; nothing
        when the log was cleaned below it meanwhile (the fetcher asks again and gets the snapshot's id)."""
        log = self.log
        records = () if start < log.start_offset else log.read(start, MAX_RECORDS_PER_FETCH)
        self._respond(env, m.MetadataFetchResponse(Errors.NONE, log.end_offset, start,
                                                   cast(tuple[MetadataRecord, ...], tuple(records)),
                                                   log_start_offset=log.start_offset))

    def handle_fetch_snapshot(self, req: m.FetchSnapshotRequest) -> m.FetchSnapshotResponse:
        """KafkaRaftClient.handleFetchSnapshotRequest: a ClusterId other than ours → INCONSISTENT_CLUSTER_ID; a
        snapshot not kept (cleaned meanwhile) → SNAPSHOT_NOT_FOUND; a position outside it → POSITION_OUT_OF_RANGE;
        else at most ``max_bytes`` (at least 1) of its bytes from ``position``, with its ``size``."""
        sid = SnapshotId(req.snapshot_end_offset, req.snapshot_epoch)
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            return m.FetchSnapshotResponse(Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE, -1, -1)
        data = self.log.snapshot_data(sid) if sid in self.log.snapshots else None
        if data is None:
            return m.FetchSnapshotResponse(Errors.NONE, Errors.SNAPSHOT_NOT_FOUND, sid.end_offset, sid.epoch)
        if req.position < 0 or req.position >= len(data):
            return m.FetchSnapshotResponse(Errors.NONE, Errors.POSITION_OUT_OF_RANGE, sid.end_offset, sid.epoch,
                                           size=len(data), position=req.position)
        chunk = data[req.position:req.position + max(1, req.max_bytes)]
        return m.FetchSnapshotResponse(Errors.NONE, Errors.NONE, sid.end_offset, sid.epoch, size=len(data),
                                       position=req.position, unaligned_records=chunk)
