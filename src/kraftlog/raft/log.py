"""The KRaft log (Kafka's ``ReplicatedLog`` / ``KafkaMetadataLog``): :class:`~kraftlog.protocol.raft_records.RaftBatch`
items in segment files on an injected :class:`~kraftlog.storage.disk.Disk`, its snapshots, and its leader-epoch
cache.

Files (under ``metadata/__cluster_metadata-0/``):

* segments ``<base offset, 20 digits>.log`` whose items are batches, the first batch at the base offset (a node
  formatted before segments existed has only ``00000000000000000000.log``), rolled at
  ``metadata.log.segment.bytes`` or once ``metadata.log.segment.ms`` old;
* ``log-start-offset``: the log start offset a clean advanced to (Kafka's log-start-offset checkpoint);
* snapshots ``<end offset>-<epoch>.checkpoint`` (:class:`~kraftlog.storage.snapshot_files.SnapshotFiles`), each the
  committed metadata image up to ``end offset - 1`` with the voter set in force there (kraft.version 1).

A batch is one item of a segment: written whole or not at all (a real disk frames it with one CRC), so an
event of the controller that is one batch survives a crash entirely or not at all. The log load runs the
Disk's recovery (a damaged tail is dropped) and then drops any batch that does not follow its predecessor
(a torn tail) with every later segment. Every write may raise :class:`OSError` (ENOSPC, EIO): the caller treats
it as fatal, as Kafka's KRaft does.

Kafka's snapshot rules, where Kafka states them:

* ``validateOffsetAndEpoch``: a fetch below the log start, at it with another epoch than the oldest snapshot's, or
  with an epoch below that snapshot's, is answered with the latest snapshot's id (the follower fetches it);
* ``endOffsetForEpoch``: an epoch below the log's first epoch ends at the oldest snapshot;
* ``truncateToLatestSnapshot``: a snapshot beyond the log (a later epoch, or the same epoch and a larger offset)
  restarts the log at it (a follower that fetched it; a load whose log lost its unflushed tail);
* ``maybeClean`` (on the owner's timer, :meth:`RaftLog.clean_due`): while the log and its snapshots take more
  than ``metadata.max.retention.bytes`` or the oldest snapshot is older than ``metadata.max.retention.ms``, and
  two snapshots or more exist, the log start advances to the second oldest (``deleteBeforeSnapshot``): the
  segments wholly below it and the older snapshots are deleted. A snapshot is never taken beyond the high
  watermark (the owner writes snapshots of committed data only), so the log start never passes it.

Offsets are log offsets, epochs leader epochs. The leader-epoch cache (Kafka's ``LeaderEpochFileCache``) is
rebuilt from the batches held: (epoch, start offset) for every epoch whose batches the log holds, the first
entry's start moved up to the log start (``truncateFromStart``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ..metadata.codec import MetadataRecordError
from ..metadata.snapshot import RECORD_BATCH_OVERHEAD, SnapshotId, metadata_record_bytes
from ..protocol.errors import WireError
from ..protocol.raft_records import RaftBatch
from ..storage.disk import Disk, LoadDrop
from ..storage.metadata_log import MetadataLogConfig, MetadataLogLoadError
from ..storage.snapshot_files import LoadedSnapshot, SnapshotFiles, SnapshotRetention
from .states import RaftSafetyError

__all__ = ["RaftLog", "OffsetAndEpoch", "ValidOffsetAndEpoch", "METADATA_LOG_DIR", "raft_batch_bytes"]

#: The KRaft log's directory on a node's metadata disk (Kafka's ``__cluster_metadata-0``).
METADATA_LOG_DIR = "metadata/__cluster_metadata-0"
#: The bytes counted for a record that is not a metadata record (a control record; a test's string).
_OTHER_RECORD_BYTES = 24


def raft_batch_bytes(batch: RaftBatch) -> int:
    """The bytes ``batch`` takes in a segment: one v2 batch header and its records (a metadata record's as the
    metadata log holds it, :func:`~kraftlog.metadata.snapshot.metadata_record_bytes`, less its own header)."""
    total = RECORD_BATCH_OVERHEAD
    for r in batch.records:
        try:
            total += metadata_record_bytes(r) - RECORD_BATCH_OVERHEAD
        except MetadataRecordError:
            total += _OTHER_RECORD_BYTES
    return total


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A log position (Kafka's ``OffsetAndEpoch``): compared by epoch first, then offset, as Raft compares
    logs ("the log with the later last epoch is more up to date; with equal epochs the longer one")."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    """The leader's check of a follower's fetch position (Kafka's ``ValidOffsetAndEpoch``): ``diverging`` is
    the (end offset, epoch) to truncate to, ``snapshot`` the snapshot to fetch instead; both None when the
    position is on the leader's log."""

    diverging: OffsetAndEpoch | None = None
    snapshot: SnapshotId | None = None


class _Segment:
    __slots__ = ("base", "count", "bytes", "created_ms", "path")

    def __init__(self, directory: str, base: int, created_ms: int) -> None:
        self.base, self.count, self.bytes, self.created_ms = base, 0, 0, created_ms
        self.path = f"{directory}/{base:020d}.log"


class RaftLog(SnapshotRetention):
    """The KRaft log of one node (module docstring). ``config``: the segment, retention and cleaning settings
    (Kafka's defaults when None). ``load_drops`` says what the load dropped (recovery of a damaged tail, a batch
    not following its predecessor), ``load_problems`` which snapshots it could not use. Raises
    :class:`~kraftlog.storage.metadata_log.MetadataLogLoadError` when the log no longer starts at offset 0 and no
    snapshot at or above its start can be read (a node must not come up with part of the metadata)."""

    def __init__(self, disk: Disk, now_ms: int, directory: str = METADATA_LOG_DIR,
                 config: MetadataLogConfig | None = None) -> None:
        self.disk = disk
        self.directory = directory
        self.config = config if config is not None else MetadataLogConfig()
        self.load_drops: list[LoadDrop] = []
        self.load_problems: list[str] = []
        self.files = SnapshotFiles(disk, directory)
        self._segments: list[_Segment] = []
        self._batches: list[RaftBatch] = []
        self._bases: list[int] = []
        #: the leader-epoch cache: epochs and their start offsets, in order
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        #: the first offset the log holds (Kafka's log start offset)
        self.start_offset = 0
        #: the epoch of the snapshot the log starts at (the last fetched epoch of a log holding no batch)
        self._start_epoch = 0
        #: (items, bytes) at the head of the first segment's file below the log start (not held in memory)
        self._head = (0, 0)
        #: segments written since the last :meth:`flush`
        self._unsynced: set[str] = set()
        #: the snapshot the load read whole (the first :meth:`latest_snapshot` hands it over: read once)
        self._preloaded: LoadedSnapshot | None = None
        #: when :meth:`clean_due` cleans next (ms)
        self.next_clean_ms = now_ms + self.config.cleanup_interval_ms
        self._load(now_ms)

    @staticmethod
    def delete_files(disk: Disk, now_ms: int, directory: str = METADATA_LOG_DIR) -> None:
        """Delete every segment, snapshot and the log-start checkpoint under ``directory`` (a broker's copy that
        cannot be loaded: it is fetched again); ``quorum-state`` and the bootstrap checkpoint stay."""
        for path in disk.list(directory + "/"):
            name = path.rpartition("/")[2]
            if name.endswith(".log") or SnapshotId.from_file_name(name) is not None or name == "log-start-offset":
                disk.delete(path, now_ms)

    # ------------------------------------------------------------------ loading
    def _load(self, now_ms: int) -> None:
        names = [p.rpartition("/")[2] for p in self.disk.list(self.directory + "/")]
        self.files.scan(names)
        bases = sorted(int(n[:20]) for n in names if n.endswith(".log") and len(n) == 24 and n[:20].isdigit())
        checkpoint = self.disk.read_value(f"{self.directory}/log-start-offset")
        start = int(checkpoint) if isinstance(checkpoint, str) and checkpoint.strip().isdigit() else 0
        for i, base in enumerate(bases):
            seg = _Segment(self.directory, base, now_ms)
            recovered = self.disk.recover(seg.path, now_ms)
            self.load_drops.extend(recovered)
            items = self.disk.read(seg.path)
            kept = 0
            for item in items:
                batch = cast(RaftBatch, item)
                # every batch follows its predecessor; a segment's first batch starts at the segment's base
                expected = self.end_offset if kept or self._segments else base
                if not isinstance(item, RaftBatch) or not batch.records or batch.base_offset != expected \
                        or (self._epochs and batch.epoch < self._epochs[-1]):
                    break
                seg.count += 1
                seg.bytes += raft_batch_bytes(batch)
                self._add(batch)
                kept += 1
            if not self._segments:
                self.start_offset = base
            self._segments.append(seg)
            if kept < len(items):
                self.load_drops.append(LoadDrop(seg.path, kept, len(items), len(items) - kept,
                                                "a batch that does not follow its predecessor"))
                self.disk.truncate(seg.path, kept, now_ms)
                self.disk.fsync(seg.path, now_ms)
            if recovered or kept < len(items):
                # Kafka's log recovery: nothing after a damaged or torn batch is part of the log (the later
                # segments go; what committed is fetched again from the leader)
                for later in bases[i + 1:]:
                    self.disk.delete(f"{self.directory}/{later:020d}.log", now_ms)
                break
        if start > self.start_offset:  # a clean advanced the start into the first segment
            self._drop_below(min(start, self.end_offset) if self._batches else start, now_ms)
        self._load_snapshots(now_ms)

    def _load_snapshots(self, now_ms: int) -> None:
        usable = None
        for sid in reversed(self.files.ids):
            if sid.end_offset < self.start_offset:
                break
            try:
                self._preloaded = self.files.read(sid)
            except WireError as exc:
                self.load_problems.append(f"snapshot {sid.file_name()} not used: {exc}")
                self.files.ids.remove(sid)  # the file stays (evidence); it is neither served nor loaded
                continue
            usable = sid
            break
        if usable is None:
            if self.start_offset > 0:
                raise MetadataLogLoadError(
                    f"the metadata log starts at offset {self.start_offset} and no snapshot at or above it can be "
                    f"read" + (f" ({'; '.join(self.load_problems)})" if self.load_problems else ""))
            self.files.ids = [s for s in self.files.ids if s < SnapshotId(0, 0)]
            return
        for old in [s for s in self.files.ids if s.end_offset < self.start_offset]:
            self.files.delete(old, now_ms)  # Kafka's recoverSnapshots: below the log start, never loaded again
        self.files.ids = [s for s in self.files.ids if s <= usable]
        if self.truncate_to_latest_snapshot(now_ms):
            self.load_problems.append(f"the metadata log ends below snapshot {usable.file_name()}: it restarts there")
        earliest = self.files.earliest
        if earliest is not None and earliest.end_offset == self.start_offset:
            self._start_epoch = earliest.epoch

    # ------------------------------------------------------------------ reading
    @property
    def path(self) -> str:
        """The active segment's file (where the next batch goes)."""
        return self._segments[-1].path if self._segments else f"{self.directory}/{self.start_offset:020d}.log"

    @property
    def end_offset(self) -> int:
        """The log end offset (the next batch's base offset)."""
        return self._batches[-1].next_offset if self._batches else self.start_offset

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch; of the snapshot the log starts at when it holds none; 0 for an empty log
        (Kafka's ``lastFetchedEpoch``)."""
        return self._batches[-1].epoch if self._batches else self._start_epoch

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        """(last epoch, log end offset): what a Vote request compares."""
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    def batches(self) -> Sequence[RaftBatch]:
        """Every batch held (from the log start), in offset order (the caller must not change the list)."""
        return self._batches

    def read(self, offset: int, max_records: int) -> tuple[RaftBatch, ...]:
        """The batches from the one holding ``offset`` on, at least one if any, and no more once
        ``max_records`` records were collected. ``offset`` is at a batch boundary when fetchers truncate as
        told; a batch is never split."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        out: list[RaftBatch] = []
        count = 0
        for batch in self._batches[i:]:
            if out and count + len(batch.records) > max_records:
                break
            out.append(batch)
            count += len(batch.records)
        return tuple(out)

    def batch_at(self, offset: int) -> RaftBatch | None:
        """The batch holding ``offset``, None past the end or below the start."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0 or offset >= self.end_offset:
            return None
        return self._batches[i]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch | None:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: for the latest epoch, (epoch, log end offset); for an
        earlier one, (the largest epoch <= it, the start offset of the next epoch); for one below the first,
        (it, the first epoch's start offset); None for an epoch above every epoch of the log or a log holding no
        batch."""
        if not self._epochs or epoch < 0:
            return None
        if epoch == self._epochs[-1]:
            return OffsetAndEpoch(epoch, self.end_offset)
        higher = bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return None
        if higher == 0:
            return OffsetAndEpoch(epoch, self._epoch_starts[0])
        return OffsetAndEpoch(self._epochs[higher - 1], self._epoch_starts[higher])

    def metadata_end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's ``KafkaMetadataLog.endOffsetForEpoch``: the cache's answer, except that an epoch below the log's
        first epoch ends at the oldest snapshot (its offset and epoch) when the log starts there; (last fetched
        epoch, log end) when the cache has no answer."""
        found = self.end_offset_for_epoch(epoch)
        earliest = self.files.earliest
        if found is not None and earliest is not None and found.offset == earliest.end_offset \
                and found.epoch == epoch:
            return OffsetAndEpoch(earliest.epoch, earliest.end_offset)
        return found if found is not None else OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Kafka's ``ReplicatedLog.validateOffsetAndEpoch``: (0, any) on a log starting at 0 is valid; with a
        snapshot, a fetch below the log start, at it with an epoch other than the oldest snapshot's, or with an
        epoch below that snapshot's → the latest snapshot's id; otherwise the follower's (fetch offset, last
        fetched epoch) is on this log when this log's end offset for that epoch is that epoch and not below the
        offset, and diverges at that end offset and epoch when not."""
        if self.start_offset == 0 and offset == 0:
            return ValidOffsetAndEpoch()
        earliest = self.files.earliest
        if earliest is not None and (offset < self.start_offset
                                     or (offset == self.start_offset and epoch != earliest.epoch)
                                     or epoch < earliest.epoch):
            return ValidOffsetAndEpoch(snapshot=self.files.latest)
        found = self.metadata_end_offset_for_epoch(epoch)
        if found.epoch != epoch or found.offset < offset:
            return ValidOffsetAndEpoch(found)
        return ValidOffsetAndEpoch()

    # ------------------------------------------------------------------ writing
    def append_as_leader(self, records: Sequence[object], epoch: int, now_ms: int, *,
                         control: bool = False) -> RaftBatch:
        """Append ``records`` as one batch of leader epoch ``epoch`` at the log end; returns it. Raises
        ValueError for an empty batch or an epoch below the last one; OSError when the disk fails (nothing
        appended)."""
        if not records:
            raise ValueError("an empty batch is never appended")
        if self._epochs and epoch < self._epochs[-1]:
            raise ValueError(f"epoch {epoch} is below the log's last epoch {self._epochs[-1]}")
        batch = RaftBatch(self.end_offset, epoch, tuple(records), control, now_ms)
        self._write([batch], now_ms)
        return batch

    def append_as_follower(self, batches: Sequence[RaftBatch], now_ms: int,
                           max_epoch: int | None = None) -> list[RaftBatch]:
        """Append the leader's ``batches`` that follow this log's end (one write); returns those appended.
        A batch that does not start at the log end, goes back in epoch or is of an epoch above ``max_epoch``
        (the replica's own: Kafka's ``appendAsFollower(records, epoch)``) ends the append (Kafka rejects such
        records). Raises OSError when the disk fails (nothing appended)."""
        accepted: list[RaftBatch] = []
        end = self.end_offset
        last_epoch = self._epochs[-1] if self._epochs else self._start_epoch
        for batch in batches:
            if batch.base_offset != end or not batch.records or batch.epoch < last_epoch or (
                    max_epoch is not None and batch.epoch > max_epoch):
                break
            accepted.append(batch)
            end = batch.next_offset
            last_epoch = batch.epoch
        if accepted:
            self._write(accepted, now_ms)
        return accepted

    def _write(self, batches: list[RaftBatch], now_ms: int) -> None:
        """``batches`` as one write to the active segment, rolled first when full or old (Kafka's ``maybeRoll``)."""
        seg = self._segments[-1] if self._segments else None
        if seg is None or (seg.count and (seg.bytes >= self.config.segment_bytes
                                          or now_ms - seg.created_ms >= self.config.segment_ms)):
            seg = _Segment(self.directory, batches[0].base_offset, now_ms)
            self.disk.create(seg.path, now_ms)
            self._segments.append(seg)
        self.disk.append_many(seg.path, batches, now_ms)
        self._unsynced.add(seg.path)
        for batch in batches:
            seg.count += 1
            seg.bytes += raft_batch_bytes(batch)
            self._add(batch)

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (a batch is removed whole, so the new end may be
        below ``offset``); returns the new end offset. Durable after :meth:`flush`. Raises
        :class:`~kraftlog.raft.states.RaftSafetyError` below the log start (committed data a snapshot holds)."""
        if offset < self.start_offset:
            raise RaftSafetyError(f"a truncation to offset {offset}, below the log start {self.start_offset}")
        keep = bisect_right(self._bases, offset - 1)
        while keep and self._batches[keep - 1].next_offset > offset:
            keep -= 1
        if keep < len(self._batches):
            del self._batches[keep:], self._bases[keep:]
            end = self.end_offset
            while len(self._segments) > 1 and self._segments[-1].base >= end:
                self.disk.delete(self._segments.pop().path, now_ms)
            seg = self._segments[-1]
            held = [b for b in self._batches if b.base_offset >= seg.base]
            head = self._head if seg is self._segments[0] else (0, 0)
            seg.count = head[0] + len(held)
            seg.bytes = head[1] + sum(raft_batch_bytes(b) for b in held)
            self.disk.truncate(seg.path, seg.count, now_ms)
            self._unsynced.add(seg.path)
            while self._epoch_starts and self._epoch_starts[-1] >= end:
                self._epochs.pop()
                self._epoch_starts.pop()
        return self.end_offset

    def truncate_to_end_offset(self, diverging: OffsetAndEpoch, now_ms: int) -> int:
        """Kafka's ``ReplicatedLog.truncateToEndOffset``: at epoch 0, the smaller of the leader's end offset and
        this log's end; else, when this log has the leader's epoch, the smaller of the two ends of that epoch,
        and when it has not, this log's own end for the epoch below it. Returns the new end offset."""
        if diverging.epoch == 0:
            target = min(diverging.offset, self.end_offset)
        else:
            local = self.metadata_end_offset_for_epoch(diverging.epoch)
            target = min(local.offset, diverging.offset) if local.epoch == diverging.epoch else local.offset
        return self.truncate_to(target, now_ms)

    def flush(self, now_ms: int) -> None:
        """fsync every segment written since the last flush (several when a segment rolled between: Kafka's
        ``log.flush`` up to the log end); OSError when the disk fails."""
        live = {seg.path for seg in self._segments}
        for path in sorted(self._unsynced & live):
            self.disk.fsync(path, now_ms)
        self._unsynced.clear()

    def _add(self, batch: RaftBatch) -> None:
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        if not self._epochs or batch.epoch > self._epochs[-1]:
            self._epochs.append(batch.epoch)
            self._epoch_starts.append(batch.base_offset)

    # ------------------------------------------------------------------ snapshots and cleaning
    def latest_snapshot(self) -> LoadedSnapshot | None:
        """The latest snapshot read whole, None when there is none. Raises :class:`WireError` when it no longer
        decodes."""
        sid = self.files.latest
        preloaded, self._preloaded = self._preloaded, None
        if preloaded is not None and preloaded.snapshot_id == sid:
            return preloaded
        return self.files.read(sid) if sid is not None else None

    def create_snapshot(self, snapshot_id: SnapshotId, records: Sequence[object], control: Sequence[object],
                        now_ms: int) -> bool:
        """Write snapshot ``snapshot_id`` of ``records`` (the committed image at ``end_offset - 1``) and the KRaft
        ``control`` records (kraft.version and voters in force there; none at kraft.version 0). False when it
        exists or is not above the log start. OSError propagates (nothing changed)."""
        if snapshot_id.end_offset <= self.start_offset and self.start_offset > 0:
            return False
        return self.files.write(snapshot_id, records, now_ms, control)

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes, now_ms: int) -> LoadedSnapshot:
        """A snapshot fetched whole from the leader (FetchSnapshot): checked (:class:`WireError` when it does not
        decode; nothing changed then), written, and the log truncated to it (:meth:`truncate_to_latest_snapshot`).
        OSError propagates."""
        loaded = self.files.install(snapshot_id, data, now_ms)
        self.truncate_to_latest_snapshot(now_ms, force=True)
        return loaded

    def truncate_to_latest_snapshot(self, now_ms: int, *, force: bool = False) -> bool:
        """Kafka's ``truncateToLatestSnapshot``: when the latest snapshot is beyond the log (a later epoch than its
        last batch, or the same epoch and an end offset past the log end), every segment is deleted, the log
        starts empty at the snapshot's end offset and the older snapshots go. True when it did. ``force``: a
        snapshot fetched from the leader, which said this log's position is not on its log (Kafka throws when that
        does not truncate fully; kraftlog truncates: the snapshot is committed data, the log after it is not)."""
        sid = self.files.latest
        last_epoch = self._epochs[-1] if self._epochs else 0
        if sid is None or (not force and (sid.epoch < last_epoch
                                          or (sid.epoch == last_epoch and sid.end_offset <= self.end_offset))):
            return False
        for seg in self._segments:
            self.disk.delete(seg.path, now_ms)
        self._segments = []
        self._batches, self._bases, self._epochs, self._epoch_starts = [], [], [], []
        self._head = (0, 0)
        self.start_offset = sid.end_offset
        self._start_epoch = sid.epoch
        self.disk.write_atomic(f"{self.directory}/log-start-offset", f"{sid.end_offset}\n", now_ms)
        self.files.delete_older_than(sid, now_ms)
        return True

    def size_bytes(self) -> int:
        """The log's segments and its snapshots, in bytes."""
        return sum(s.bytes for s in self._segments) + self.files.total_bytes()

    def _log_bounds(self) -> tuple[int, int]:
        return self.start_offset, self.end_offset

    def _advance_start(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        new_start = snapshot_id.end_offset
        self.disk.write_atomic(f"{self.directory}/log-start-offset", f"{new_start}\n", now_ms)
        self._drop_below(new_start, now_ms)
        self._start_epoch = snapshot_id.epoch

    def _drop_below(self, new_start: int, now_ms: int) -> None:
        """Delete the segments wholly below ``new_start``, forget the batches below it (those of the first segment
        stay in its file until it goes) and move the first epoch's start up to it (Kafka's
        ``LeaderEpochFileCache.truncateFromStart``)."""
        while len(self._segments) > 1 and self._segments[1].base <= new_start:
            self.disk.delete(self._segments.pop(0).path, now_ms)
            self._head = (0, 0)
        drop = bisect_right(self._bases, new_start - 1)
        while drop and self._batches[drop - 1].next_offset > new_start:
            drop -= 1
        if drop:
            first = self._segments[0].base if self._segments else 0
            gone = [b for b in self._batches[:drop] if b.base_offset >= first]
            self._head = (self._head[0] + len(gone), self._head[1] + sum(raft_batch_bytes(b) for b in gone))
            del self._batches[:drop], self._bases[:drop]
        self.start_offset = new_start
        while len(self._epoch_starts) > 1 and self._epoch_starts[1] <= new_start:
            del self._epochs[0], self._epoch_starts[0]
        if not self._batches:  # nothing held: the epoch is the snapshot's (last_fetched_epoch), as after truncate_to
            self._epochs, self._epoch_starts = [], []
        elif self._epoch_starts:
            self._epoch_starts[0] = max(self._epoch_starts[0], new_start)
