"""The log of one partition replica: Kafka's ``UnifiedLog`` and ``LogSegment`` over a Disk.

A log is a sequence of segments, ``{directory}/<20-digit base offset>.log`` (Kafka's layout), each holding
:class:`RecordBatch` items on a :class:`~kraftlog.storage.disk.Disk`; the last one, the *active* segment,
takes the appends. The partition's :class:`LeaderEpochCache` lives in ``{directory}/leader-epoch-checkpoint``.
Offsets are absolute ints; the LEO is the offset after the last record; byte counts are
:attr:`RecordBatch.size_bytes` (exact encoded bytes). Times are ints in ms.

Segments (Kafka's ``LogSegment.shouldRoll``): before a batch is appended, the active segment is rolled when
the batch would push it past ``segment.bytes``, when the batch's max timestamp is more than ``segment.ms``
minus the segment's jitter after the segment's first batch's max timestamp, when its sparse offset index
(an entry after every ``index.interval.bytes``) or time index holds ``segment.index.bytes`` worth of
entries, or when the batch's last offset no longer fits a 32-bit offset relative to the segment's base.
A leader's batch larger than ``segment.bytes`` is refused (:class:`RecordBatchTooLargeError`, Kafka's
RECORD_LIST_TOO_LARGE). Rolling flushes the segments before the new one (Kafka's roll schedules
``flushUptoOffsetExclusive(newSegment.baseOffset)``): the recovery point advances to the new base.

The log holds no batches in memory: each segment keeps its offset index (each batch's base offset and size,
in item order) and asks the disk for the items between two index positions (``Disk.read_range``), as
Kafka's ``LogSegment.read`` translates an offset to a file position and reads that byte range; a read
returns batches of one segment, as Kafka's.

Retention (Kafka's ``UnifiedLog.deleteOldSegments``): :meth:`PartitionLog.delete_old_segments` deletes the
oldest whole segments whose offsets lie below the HWM and that breach the log start offset, ``retention.bytes``
or ``retention.ms`` (by the segment's largest timestamp); the log start offset advances to the first remaining
segment's base and the epoch cache is truncated from the start. :meth:`PartitionLog.maybe_increment_log_start_offset`
moves the log start offset up to the HWM (DeleteRecords, a follower learning its leader's) without deleting;
the next retention pass deletes the segments wholly below it.

Durability follows Kafka: an append reaches the page cache only; the log is fsynced when ``flush.messages``
unflushed messages accumulate (checked on append), on a roll (the segments before the new one), and by time
only through the broker's flush scheduler (:meth:`PartitionLog.maybe_flush`, run every
``log.flush.scheduler.interval.ms``: Kafka's ``LogManager.flushDirtyLogs``). The recovery point (the offset
below which the log is known durable) advances only on a flush.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from random import Random
from typing import cast

from ..protocol.records import Record, RecordBatch
from .disk import Disk, LoadDrop
from .epoch_cache import LeaderEpochCache
from .log_loader import deleted_file, load_segments, swap_file
from .producer_snapshot import decode_snapshot, encode_snapshot, snapshot_file, snapshot_offset
from .segment import (
    LOG_FILE_SUFFIX,
    SEGMENT_FILE,
    LogConfig,
    LogSegment,
    RecordBatchTooLargeError,
    segment_file,
    segment_paths,
)

__all__ = [
    "LogConfig",
    "LogSegment",
    "PartitionLog",
    "RecordBatchTooLargeError",
    "SEGMENT_FILE",
    "EPOCH_CHECKPOINT_FILE",
    "LOG_FILE_SUFFIX",
    "segment_file",
    "segment_paths",
]

#: The partition's leader-epoch cache file (Kafka's).
EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"

class PartitionLog:
    """The log of one partition replica over a :class:`Disk`.

    ``PartitionLog(disk, directory, config, now_ms, log_start_offset=0, recovery_point=0, rng=None,
    clean_shutdown=False)`` recovers from the disk (Kafka's ``LogLoader``): every segment file of ``directory``
    in base-offset order gets the disk's own check (:meth:`Disk.recover`: lengths and CRC-32Cs, an invalid tail
    truncated; lengths only for a segment wholly below ``recovery_point`` after an unclean shutdown, as Kafka
    trusts what was flushed; after a ``clean_shutdown`` every segment is checked, kraftlog's rule),
    then its batches are read: the contiguous run of offsets from the first segment's base; at the first
    gap, empty batch or a segment that does not start where the previous one ended, the rest of that
    segment is truncated and every later segment deleted (Kafka's recovery deletes the segments after a
    corrupt one). Every truncation is kept in :attr:`dropped_at_load` (:class:`~kraftlog.storage.disk.LoadDrop`:
    a replica that dropped data at load after a clean shutdown is not clean, DESIGN.md). The log start
    offset is max(``log_start_offset``: the checkpointed one, the first segment's base); the recovery point
    is min(``recovery_point``, LEO), the LEO after a clean shutdown (Kafka's ``LogLoader``: only a flush moves
    it). The epoch cache is truncated from the end to the LEO and from the start
    to the log start; if the remaining entries disagree with the recovered batches' epochs (only possible
    when a crash lost a truncation), it is rebuilt from the batches. ``rng`` draws each segment's
    ``segment.jitter.ms`` (needed only when that is > 0).

    Storage errors: an appending, truncating, rolling, deleting or flushing method that meets an OSError
    from the disk (ENOSPC, EIO) lets it propagate; the caller takes the log directory offline and drops
    this object. Nothing in memory (offset index, LEO, producer state, epoch cache) changes before the disk
    accepted the bytes (stricter than Kafka, which halts the broker instead).

    Attributes: ``log_end_offset`` (the LEO; a plain attribute, read on every fetch), ``log_start_offset``
    (the first offset a reader may ask for), ``high_watermark`` (set through :meth:`update_high_watermark`),
    ``epoch_cache``, ``recovery_point`` (offset below which the log is known durable), ``segments`` (oldest
    first; the last is active), ``config``, ``dropped_at_load``, ``batches_recovered`` and ``batches_trusted``
    (batches checked one by one at load, and loaded by their lengths only).
    """

    __slots__ = (
        "_disk",
        "directory",
        "config",
        "segments",
        "_segment_bases",
        "log_start_offset",
        "high_watermark",
        "epoch_cache",
        "producer_state",
        "recovery_point",
        "last_flush_ms",
        "log_end_offset",
        "dropped_at_load",
        "batches_recovered",
        "batches_trusted",
        "checksum_mismatches",
        "pending_deletes",
        "segments_unread",
        "swaps_completed",
        "first_dirty_offset",
        "mutations",
        "_rng",
    )

    def __init__(self, disk: Disk, directory: str, config: LogConfig, now_ms: int, log_start_offset: int = 0,
                 recovery_point: int = 0, rng: Random | None = None, clean_shutdown: bool = False,
                 first_dirty_offset: int = 0) -> None:
        self._disk = disk
        self.directory = directory
        self.config = config
        self._rng = rng
        self.high_watermark = 0
        self.last_flush_ms = now_ms
        #: batches checked one by one at load (CRC-32C, offsets): the segments from the one holding the
        #: recovery point on, or every segment after a clean shutdown
        self.batches_recovered = 0
        #: batches loaded by their lengths only (segments wholly below the recovery point, Kafka's rule, or
        #: whose checksum matched after a clean shutdown)
        self.batches_trusted = 0
        #: segments whose checksum did not match after a clean shutdown (recovered batch by batch)
        self.checksum_mismatches: list[str] = []
        #: (due ms, path) of the files of segments retention deleted, removed after file.delete.delay.ms
        self.pending_deletes: list[tuple[int, str]] = []
        #: sealed segments loaded from their checksum and index files only (their batches read on first use)
        self.segments_unread = 0

        loaded = load_segments(disk, directory, config, now_ms, log_start_offset, recovery_point, clean_shutdown,
                               self._draw_jitter, first_dirty_offset)
        #: what the recovery dropped at load (LoadDrop entries; empty for an intact log)
        self.dropped_at_load: list[LoadDrop] = loaded.dropped
        self.batches_recovered = loaded.batches_recovered
        self.batches_trusted = loaded.batches_trusted
        self.checksum_mismatches = loaded.checksum_mismatches
        self.segments_unread = loaded.segments_unread
        #: the cleaner's swaps a crash interrupted, completed at load (a line each)
        self.swaps_completed = loaded.swaps
        segments = loaded.segments
        producer_state = loaded.producer_state
        self.segments = segments
        self._segment_bases = [s.base_offset for s in segments]
        leo = segments[-1].next_offset
        self.log_end_offset = leo
        self.log_start_offset = min(max(log_start_offset, segments[0].base_offset), leo)
        self.recovery_point = leo if clean_shutdown else min(max(recovery_point, self.log_start_offset), leo)
        #: the log cleaner's first dirty offset (Kafka's cleaner checkpoint: below it the log was cleaned);
        #: lowered by a truncation (Kafka's ``maybeTruncateCheckpoint``)
        self.first_dirty_offset = min(max(first_dirty_offset, self.log_start_offset), leo)
        #: counts the changes to the segments below the active one (truncation, deletion, a cleaner's swap): a
        #: cleaning under way gives up when it moved (Kafka's ``abortAndPauseCleaning``)
        self.mutations = 0

        cache = LeaderEpochCache(disk, f"{directory}/{EPOCH_CHECKPOINT_FILE}", now_ms)
        cache.truncate_from_end(leo, now_ms)
        derived = loaded.epochs
        # (With sealed segments left unread after a clean shutdown the checkpoint is trusted: it was written
        # before the shutdown, and the batches read are only the later segments'.)
        if cache.entries() != derived and not self.segments_unread:
            cache.clear(now_ms)
            for epoch, start in derived:
                cache.assign(epoch, start, now_ms)
        first = cache.earliest_entry()
        if first is not None and first[1] < self.log_start_offset:
            cache.truncate_from_start(self.log_start_offset, now_ms)
        self.epoch_cache = cache
        #: Idempotent-producer state rebuilt from the batches, plus the producers of the latest snapshot at or
        #: below the LEO whose batches retention deleted (Kafka loads the snapshot, then the segments after it).
        self.producer_state = producer_state
        self._load_snapshot(now_ms)
        if log_start_offset > leo:
            # Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd: the records below the checkpointed log start
            # were deleted (DeleteRecords, retention) before a crash cut the log shorter: start empty there.
            self.truncate_fully_and_start_at(log_start_offset, now_ms)

    # ------------------------------------------------------------------ producer snapshots
    def _snapshots(self) -> list[tuple[int, str]]:
        """(offset, path) of this log's producer snapshot files, by offset."""
        prefix = self.directory + "/"
        out = []
        for path in self._disk.list(prefix):
            offset = snapshot_offset(path[len(prefix):])
            if offset is not None:
                out.append((offset, path))
        return out

    def _load_snapshot(self, now_ms: int) -> None:
        """Delete the snapshots above the LEO (Kafka's ``truncateAndReload``) and take from the latest other one
        the producers the batches did not give; a snapshot that does not decode is deleted and the next older
        one tried (Kafka: CorruptSnapshotException)."""
        for offset, path in reversed(self._snapshots()):
            if offset > self.log_end_offset:
                self._disk.delete(path, now_ms)
                continue
            value = self._disk.read_value(path)
            try:
                data = value.encode() if isinstance(value, str) else bytes(cast(bytes, value))
                entries = decode_snapshot(data)
            except (ValueError, TypeError):
                self._disk.delete(path, now_ms)
                continue
            self.producer_state.load_missing(entries)
            return

    def take_snapshot(self, now_ms: int) -> None:
        """Write the producer state at the LEO as ``<LEO>.snapshot`` (Kafka's ``takeSnapshot``: at a roll and
        at a clean shutdown). OSError propagates."""
        self._disk.write_atomic(f"{self.directory}/{snapshot_file(self.log_end_offset)}",
                                encode_snapshot(self.producer_state.producers), now_ms)

    def seal(self, now_ms: int) -> None:
        """Flush, then write the producer snapshot at the LEO and the active segment's checksum and indexes: a
        clean shutdown's last writes to the log, so that the next load checks each segment in one pass. OSError
        propagates."""
        self.flush(now_ms)
        self.take_snapshot(now_ms)
        self.segments[-1].write_sidecars(self._disk, now_ms)

    def _delete_sidecars(self, segments: Iterable[LogSegment], now_ms: int) -> None:
        for seg in segments:
            seg.delete_sidecars(self._disk, now_ms)

    def _delete_snapshots(self, keep: Callable[[int], bool], now_ms: int) -> None:
        for offset, path in self._snapshots():
            if not keep(offset):
                self._disk.delete(path, now_ms)

    def _ensure_loaded(self, seg: LogSegment) -> None:
        if not seg.loaded:
            seg.load_headers(self._disk, self.config)

    def segment_batches(self, seg: LogSegment, start: int, stop: int) -> Sequence[RecordBatch]:
        """The batches at index positions ``start`` .. ``stop - 1`` of ``seg`` (one of :attr:`segments`), read
        from the disk (the log cleaner's reads: Kafka's ``FileRecords.readInto``)."""
        self._ensure_loaded(seg)
        return _read_range(self._disk, seg.path, start, stop)

    def replace_segments(self, old: Sequence[LogSegment], cleaned_path: str, new: LogSegment, now_ms: int) -> None:
        """Swap the consecutive segments ``old`` for the cleaned segment ``new`` (its batches written to
        ``cleaned_path``, not yet fsynced; ``new.base_offset`` is ``old[0]``'s), Kafka's ``replaceSegments``:
        the cleaned file is fsynced and renamed ``<base>.swap.log`` (from here a crash completes the swap at load:
        :func:`~kraftlog.storage.log_loader.complete_swaps`), the old segments' checksum and index files deleted
        and their segment files renamed ``<base>.deleted.log``, to be deleted after ``file.delete.delay.ms``
        (:attr:`pending_deletes`; Kafka's ``asyncDelete``: unlinking a large file can take a disk tens of ms,
        the load deletes leftovers), the swap file renamed ``<base>.log``, and the new segment's checksum and
        index files written. ValueError when ``old`` are not consecutive segments of this log; OSError
        propagates (the directory goes offline; the load completes or discards the swap)."""
        first = next((k for k, seg in enumerate(self.segments) if seg is old[0]), None)
        if (first is None or new.base_offset != old[0].base_offset or first + len(old) >= len(self.segments)
                or any(self.segments[first + k] is not seg for k, seg in enumerate(old))):
            raise ValueError(f"{self.directory}: the segments to replace are not consecutive sealed segments")
        disk = self._disk
        swap = f"{self.directory}/{swap_file(new.base_offset)}"
        disk.rename(cleaned_path, swap, now_ms)
        for seg in old:
            seg.delete_sidecars(disk, now_ms)
        delay = self.config.file_delete_delay_ms
        for seg in old:
            deleted = f"{self.directory}/{deleted_file(seg.base_offset)}"
            disk.rename(seg.path, deleted, now_ms)
            if delay > 0:
                self.pending_deletes.append((now_ms + delay, deleted))
            else:
                disk.delete(deleted, now_ms)
        disk.rename(swap, new.path, now_ms)
        self.segments[first:first + len(old)] = [new]
        self._segment_bases[first:first + len(old)] = [new.base_offset]
        self.mutations += 1
        new.write_sidecars(disk, now_ms)
    def _draw_jitter(self) -> int:
        """A new segment's ``segment.jitter.ms`` draw (Kafka: a random int modulo min(jitter, segment.ms))."""
        jitter = self.config.segment_jitter_ms
        if jitter <= 0 or self._rng is None:
            return 0
        return self._rng.randrange(min(jitter, self.config.segment_ms))

    # ------------------------------------------------------------------ offsets
    @property
    def active_segment(self) -> LogSegment:
        """The segment that takes appends (the last one)."""
        return self.segments[-1]

    @property
    def segment_path(self) -> str:
        """The active segment's file."""
        return self.segments[-1].path

    @property
    def size(self) -> int:
        """Bytes of the batches the log holds (Kafka's ``UnifiedLog.size``, the ``Size`` gauge)."""
        return sum(s.size for s in self.segments)

    @property
    def unflushed_messages(self) -> int:
        """Messages appended since the last flush: LEO - recovery point (Kafka's ``unflushedMessages``)."""
        return self.log_end_offset - self.recovery_point

    def update_high_watermark(self, offset: int) -> int:
        """Set the HWM to ``offset`` clamped to [log_start_offset, LEO] (Kafka's ``updateHighWatermark``);
        returns the new HWM."""
        if offset < self.log_start_offset:
            offset = self.log_start_offset
        elif offset > self.log_end_offset:
            offset = self.log_end_offset
        self.high_watermark = offset
        return offset

    # ------------------------------------------------------------------ appends
    def _roll(self, now_ms: int) -> LogSegment:
        """Start a new active segment at the LEO (Kafka's ``roll``), after flushing the log up to it (Kafka
        schedules ``flushUptoOffsetExclusive(newSegment.baseOffset)`` at once). An empty active segment is
        kept as it is. OSError propagates (nothing changed then)."""
        active = self.segments[-1]
        if not active.bases:
            return active
        self.flush(now_ms)
        self.take_snapshot(now_ms)
        active.write_sidecars(self._disk, now_ms)
        seg = LogSegment(self.directory, self.log_end_offset, now_ms, self._draw_jitter(), self.config)
        self._disk.create(seg.path, now_ms)
        self.segments.append(seg)
        self._segment_bases.append(seg.base_offset)
        return seg

    def _append_stamped(self, batch: RecordBatch, now_ms: int) -> None:
        """Roll if due, write ``batch`` (stamped), then index it: an OSError from the disk leaves the log's
        offsets unchanged."""
        config = self.config
        size = batch.size_bytes
        max_ts = batch.max_timestamp
        seg = self.segments[-1]
        if seg.should_roll(config, size, max_ts, batch.base_offset + batch.record_count - 1, now_ms):
            seg = self._roll(now_ms)
        self._disk.append(seg.path, batch, now_ms)
        if batch.producer_id >= 0:
            self.producer_state.update(batch)
        seg.index(batch, max_ts, now_ms, config.index_interval_bytes)
        self.log_end_offset = seg.next_offset

    def _apply_flush_policy(self, now_ms: int) -> None:
        fim = self.config.flush_interval_messages
        if fim is not None and self.log_end_offset - self.recovery_point >= fim:
            self.flush(now_ms)

    def append_as_leader(self, batch: RecordBatch, leader_epoch: int, now_ms: int) -> RecordBatch:
        """Append ``batch`` as the leader in ``leader_epoch`` and return it as stored.

        Kafka's leader append: base offset := LEO, partition leader epoch := ``leader_epoch``; the segment is
        rolled first when due; the epoch cache gets (``leader_epoch``, base offset) when the epoch is new;
        then the ``flush.messages`` policy is applied. Raises :class:`RecordBatchTooLargeError` for a batch
        larger than ``segment.bytes``, ValueError for an empty batch or a negative epoch, OSError from the
        disk (nothing changed in memory then: the batch is written before the producer state, the offset
        index and the epoch cache learn of it; Kafka assigns the epoch first and halts on an I/O error).
        """
        if batch.record_count <= 0:
            raise ValueError("cannot append an empty record batch")
        if batch.size_bytes > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {batch.size_bytes} bytes in append to partition {self.directory} which "
                f"exceeds the maximum configured segment size of {self.config.segment_bytes}.")
        leo = self.log_end_offset
        if batch.base_offset != leo or batch.partition_leader_epoch != leader_epoch:
            batch = batch.with_offsets(leo, leader_epoch)
        self._append_stamped(batch, now_ms)
        self.epoch_cache.assign(leader_epoch, leo, now_ms)
        self._apply_flush_policy(now_ms)
        return batch

    def append_as_follower(self, batches: Iterable[RecordBatch], now_ms: int) -> int:
        """Append batches fetched from the leader, offsets and epochs as the leader stamped them.

        Each batch must start at or after the LEO (after the previous one's last offset: Kafka's follower
        append checks that offsets increase, as a compacted leader's log has gaps) with a last offset delta
        >= 0 (a batch the leader's cleaner emptied holds no record); otherwise ValueError is raised before
        anything is appended (a caller bug, not a fault). Each batch rolls the
        segment when due (Kafka rolls once per fetched set; one batch at a time keeps every segment within
        ``segment.bytes`` whatever the fetch size; a single batch larger than it gets a segment of its own:
        a follower cannot refuse what its leader holds). The epoch cache is assigned from each batch's
        partition leader epoch (skipped when -1), as Kafka does on follower append; then the
        ``flush.messages`` policy is applied. Returns the new LEO.
        """
        batches = tuple(batches)
        expected = self.log_end_offset
        for b in batches:
            if b.base_offset < expected:
                raise ValueError(
                    f"follower append at offset {b.base_offset} is below LEO {expected} in {self.directory}")
            if b.last_offset_delta < 0 or b.record_count < 0:
                raise ValueError(f"cannot append a batch with last offset delta {b.last_offset_delta}")
            expected = b.next_offset
        cache = self.epoch_cache
        for b in batches:
            self._append_stamped(b, now_ms)  # written first: an OSError leaves the earlier batches only
            if b.partition_leader_epoch >= 0:
                cache.assign(b.partition_leader_epoch, b.base_offset, now_ms)
        if batches:
            self._apply_flush_policy(now_ms)
        return self.log_end_offset

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int, now_ms: int) -> None:
        """Assign ``leader_epoch`` at ``start_offset`` in the epoch cache (Kafka's
        ``maybeAssignEpochStartOffset``, called with the LEO when a replica becomes leader)."""
        self.epoch_cache.assign(leader_epoch, start_offset, now_ms)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetsForLeaderEpoch for ``leader_epoch`` against this log's
        LEO; (-1, -1) when undefined. See :meth:`LeaderEpochCache.end_offset_for`."""
        return self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # ------------------------------------------------------------------ reads
    def _segment_of(self, offset: int) -> int:
        """Position in :attr:`segments` of the segment holding ``offset`` (the last one starting at or
        before it; 0 below the first)."""
        i = bisect_right(self._segment_bases, offset) - 1
        return i if i > 0 else 0

    def read(self, fetch_offset: int, max_offset: int, max_bytes: int) -> tuple[RecordBatch, ...]:
        """Whole batches of one segment with ``last_offset >= fetch_offset`` and ``base_offset < max_offset``.

        ``max_offset`` is exclusive (the HWM for consumers, the LEO for followers). At least one batch is
        returned when one qualifies, even if larger than ``max_bytes`` (Kafka's ``minOneMessage``); further
        batches of the same segment are added while the total ``size_bytes`` stays <= ``max_bytes`` (Kafka's
        ``LogSegment.read``: a fetch reads from one segment). The first batch may start before
        ``fetch_offset`` (Kafka returns whole batches). Returns ``()`` when nothing qualifies, including
        ``fetch_offset >= max_offset`` and ``fetch_offset`` below the log start offset; range checks are the
        caller's. O(log n + result).
        """
        if fetch_offset >= self.log_end_offset or fetch_offset >= max_offset or fetch_offset < self.log_start_offset:
            return ()
        segments = self.segments
        k = self._segment_of(fetch_offset)
        seg = segments[k]
        self._ensure_loaded(seg)
        while not seg.bases or seg.next_offset <= fetch_offset:
            k += 1  # an empty segment, or one that ends before the offset: the next one holds it
            if k == len(segments):
                return ()
            seg = segments[k]
            self._ensure_loaded(seg)
        bases = seg.bases
        n = len(bases)
        i = bisect_right(bases, fetch_offset) - 1
        if i < 0:
            i = 0
        while True:
            if bases[i] >= max_offset:
                return ()
            sizes = seg.sizes
            total = sizes[i]
            j = i + 1
            while j < n and bases[j] < max_offset:
                total += sizes[j]
                if total > max_bytes:
                    break
                j += 1
            out = tuple(_read_range(self._disk, seg.path, i, j))
            if out[0].next_offset > fetch_offset:
                return out
            # The batch ends before the fetch offset: the cleaner removed the batches in between (Kafka's
            # translateOffset finds the first batch whose last offset reaches the fetch offset).
            i += 1
            if i == n:
                return self.read(seg.next_offset, max_offset, max_bytes) if seg is not segments[-1] else ()

    def offset_for_timestamp(self, target_ms: int, max_offset: int) -> tuple[int, int, int] | None:
        """(offset, leader epoch of its batch, timestamp) of the first record at or above the log start offset
        and below ``max_offset`` whose timestamp is at least ``target_ms``; None when none is (ListOffsets by
        timestamp). Kafka's ``fetchOffsetByTimestamp`` and ``LogSegment.findOffsetByTimestamp``: the first
        segment whose largest timestamp reaches the target; its time index gives the offset to start from, its
        offset index the batch holding it; from there only batches whose max timestamp reaches the target are
        read and decoded. Later segments are searched when the records that qualify lie at or above
        ``max_offset`` (the HWM)."""
        start = self.log_start_offset
        for seg in self.segments:
            if seg.next_offset == seg.base_offset or seg.max_timestamp < target_ms or seg.next_offset <= start:
                continue
            self._ensure_loaded(seg)
            _ts, from_offset = seg.time_index.lookup(target_ms)
            entry_offset, _position = seg.offset_index.lookup(max(from_offset, start))
            bases = seg.bases
            i = max(0, bisect_right(bases, entry_offset) - 1)
            for j in range(i, len(bases)):
                if bases[j] >= max_offset:
                    return None
                if seg.timestamps[j] < target_ms:
                    continue  # this batch's records are all older: not read
                (b,) = _read_range(self._disk, seg.path, j, j + 1)
                for offset, rec in zip(b.record_offsets(), b.records, strict=True):
                    if offset >= max_offset:
                        return None
                    if offset >= start and rec.timestamp >= target_ms:
                        return offset, b.partition_leader_epoch, rec.timestamp
        return None

    def batches(self) -> Iterator[RecordBatch]:
        """Iterate over the stored batches of every segment in offset order, read from the disk (for
        checkers and tools; do not change the log meanwhile). The first segment may hold batches below the
        log start offset (until retention deletes it)."""
        for seg in list(self.segments):
            yield from _scan(self._disk, seg.path)

    def record_at(self, offset: int) -> tuple[Record, int] | None:
        """(record, partition leader epoch of its batch) at ``offset``, None outside [start, LEO) or when the
        log cleaner removed it."""
        if offset < self.log_start_offset or offset >= self.log_end_offset:
            return None
        seg = self.segments[self._segment_of(offset)]
        self._ensure_loaded(seg)
        i = bisect_right(seg.bases, offset) - 1
        if i < 0:
            return None
        (b,) = _read_range(self._disk, seg.path, i, i + 1)
        offsets = b.record_offsets()
        k = bisect_left(offsets, offset)
        if k == len(offsets) or offsets[k] != offset:
            return None  # the log cleaner removed it
        return (b.records[k], b.partition_leader_epoch)

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int, now_ms: int) -> None:
        """Remove every offset >= ``offset`` (Kafka's ``truncateTo``): the segments starting above it are
        deleted, a batch straddling ``offset`` is cut with :meth:`RecordBatch.truncated_before`; the epoch
        cache is truncated from the end; the HWM and recovery point are clamped; the log start offset becomes
        min(itself, ``offset``). Below the first segment's base the log is emptied and starts at ``offset``
        (:meth:`truncate_fully_and_start_at`). When ``offset`` >= LEO only the epoch cache is truncated (to
        the LEO): Kafka always does, since a former leader may hold an epoch entry at the log end with no
        batch. Like ``ftruncate``, the truncation is not durable until the next flush (deleted segment files
        are gone at once). ValueError for a negative offset.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset ({offset})")
        if offset >= self.log_end_offset:
            self.epoch_cache.truncate_from_end(self.log_end_offset, now_ms)
            return
        if offset < self.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset, now_ms)
            return
        disk = self._disk
        k = self._segment_of(offset)
        self._delete_sidecars(self.segments[k:], now_ms)  # the segment holding the offset changes
        # Segments that start above the offset go (Kafka deletes the ones whose base > offset; one starting
        # exactly there is emptied and kept as the active segment).
        for seg in self.segments[k + 1:]:
            disk.delete(seg.path, now_ms)
        del self.segments[k + 1:]
        del self._segment_bases[k + 1:]
        seg = self.segments[k]
        self._ensure_loaded(seg)
        bases = seg.bases
        keep = bisect_left(bases, offset)  # batches starting below offset
        head = None
        end = seg.base_offset
        if keep:
            (last,) = _read_range(disk, seg.path, keep - 1, keep)
            end = last.next_offset  # (below the next batch's base when the cleaner removed the offsets between)
            if end > offset:
                head = last.truncated_before(offset)
                keep -= 1
                end = last.base_offset
        disk.truncate(seg.path, keep, now_ms)
        seg.truncate_index(keep, end, self.config.index_interval_bytes)
        if head is not None:
            disk.append(seg.path, head, now_ms)
            seg.index(head, head.max_timestamp, now_ms, self.config.index_interval_bytes)
        self.log_end_offset = offset
        self.epoch_cache.truncate_from_end(offset, now_ms)
        self._delete_snapshots(lambda o: o <= offset, now_ms)
        self.producer_state.rebuild(self.batches())
        self._load_snapshot(now_ms)  # Kafka's rebuildProducerState: the snapshot, then the segments
        if self.log_start_offset > offset:
            self.log_start_offset = offset
        if self.high_watermark > offset:
            self.high_watermark = offset
        if self.recovery_point > offset:
            self.recovery_point = offset
        if self.first_dirty_offset > offset:
            self.first_dirty_offset = offset
        self.mutations += 1

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment and start an empty log at ``offset`` (Kafka's ``truncateFullyAndStartAt``: a
        follower whose fetch offset fell below its leader's log start offset, or a truncation below the first
        segment): LEO, log start offset, HWM and recovery point become ``offset``; the epoch cache is
        cleared; the producer state is emptied. OSError propagates."""
        if offset < 0:
            raise ValueError(f"cannot start a log at a negative offset ({offset})")
        disk = self._disk
        self._delete_sidecars(self.segments, now_ms)
        for seg in self.segments:
            disk.delete(seg.path, now_ms)
        seg = LogSegment(self.directory, offset, now_ms, self._draw_jitter(), self.config)
        disk.create(seg.path, now_ms)
        disk.fsync(seg.path, now_ms)  # Kafka's truncateFullyAndStartAt creates the new segment's file
        self.segments = [seg]
        self._segment_bases = [offset]
        self.log_end_offset = offset
        self.log_start_offset = offset
        self.high_watermark = offset
        self.recovery_point = offset
        self.first_dirty_offset = offset
        self.mutations += 1
        self.epoch_cache.clear(now_ms)
        self._delete_snapshots(lambda o: False, now_ms)
        self.producer_state.rebuild(())

    # ------------------------------------------------------------------ retention
    def maybe_increment_log_start_offset(self, offset: int, now_ms: int) -> bool:
        """Move the log start offset up to ``offset`` (Kafka's ``maybeIncrementLogStartOffset``: DeleteRecords
        on a leader, a follower learning its leader's, a segment deletion); the epoch cache is truncated from
        the start. No segment is deleted here (:meth:`delete_old_segments` does). Returns whether it moved.
        Raises ValueError (Kafka's OffsetOutOfRangeException) for an offset above the HWM."""
        if offset > self.high_watermark:
            raise ValueError(f"Cannot increment the log start offset to {offset} of {self.directory} since it is "
                             f"larger than the high watermark {self.high_watermark}")
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        if self.recovery_point < offset:
            self.recovery_point = offset
        if self.first_dirty_offset < offset:
            self.first_dirty_offset = offset
        self.epoch_cache.truncate_from_start(offset, now_ms)
        return True

    def deletable_segments(self, now_ms: int) -> tuple[int, str]:
        """How many of the oldest segments retention would delete at ``now_ms`` and why (Kafka's
        ``deleteOldSegments``: the log start offset breached, then ``retention.bytes``, then ``retention.ms``,
        the first rule that deletes any wins; each walks segments from the oldest while the segment's offsets
        lie below the HWM and the rule holds). ``(0, "")`` when none."""
        for rule in ("log start offset", "retention.bytes", "retention.ms"):
            if rule != "log start offset" and not self.config.delete:
                break
            n = self._deletable(rule, now_ms)
            if n:
                return n, rule
        return 0, ""

    def _deletable(self, rule: str, now_ms: int) -> int:
        config = self.config
        segments = self.segments
        diff = 0
        if rule == "retention.bytes":
            if config.retention_bytes < 0:
                return 0
            diff = self.size - config.retention_bytes
            if diff < 0:
                return 0
        elif rule == "retention.ms" and config.retention_ms < 0:
            return 0
        n = 0
        for k, seg in enumerate(segments):
            last = k == len(segments) - 1
            upper = self.log_end_offset if last else segments[k + 1].base_offset
            if last and seg.size == 0:
                break
            if self.high_watermark < upper:
                break
            if rule == "log start offset":
                ok = not last and segments[k + 1].base_offset <= self.log_start_offset
            elif rule == "retention.bytes":
                ok = diff - seg.size >= 0
                if ok:
                    diff -= seg.size
            else:
                ok = now_ms - seg.largest_timestamp() > config.retention_ms
            if not ok:
                break
            n += 1
        return n

    def delete_old_segments(self, now_ms: int) -> tuple[int, str]:
        """Delete the segments :meth:`deletable_segments` names (Kafka's ``deleteSegments``: when every
        segment goes, a new empty active segment is rolled at the LEO first); the log start offset moves to
        the first remaining segment's base (:meth:`maybe_increment_log_start_offset`). Returns (segments
        deleted, the rule). OSError propagates (a deleted file is gone; the offsets are updated first, as
        Kafka increments the log start offset before removing the segments)."""
        total = 0
        reason = ""
        while True:  # Kafka runs the three rules one after another in one pass
            n, rule = self.deletable_segments(now_ms)
            if n == 0:
                return total, reason
            if n == len(self.segments):
                self._roll(now_ms)
                self._disk.fsync(self.segments[-1].path, now_ms)  # the LEO survives the deletion below
            doomed = self.segments[:n]
            self.mutations += 1
            self.maybe_increment_log_start_offset(self.segments[n].base_offset, now_ms)
            del self.segments[:n]
            del self._segment_bases[:n]
            self._delete_sidecars(doomed, now_ms)
            delay = self.config.file_delete_delay_ms
            for seg in doomed:
                if delay > 0:  # Kafka's asyncDelete: the file goes after file.delete.delay.ms
                    self.pending_deletes.append((now_ms + delay, seg.path))
                else:
                    self._disk.delete(seg.path, now_ms)
            self._delete_snapshots(self.segments[0].base_offset.__le__, now_ms)  # Kafka's deleteProducerSnapshots
            total += n
            reason = reason or rule

    def delete_due_files(self, now_ms: int) -> int:
        """Remove the files of deleted segments whose ``file.delete.delay.ms`` ran out (Kafka's scheduled
        ``deleteSegmentFiles``); how many. OSError propagates."""
        due = [path for t, path in self.pending_deletes if t <= now_ms]
        if due:
            self.pending_deletes = [(t, path) for t, path in self.pending_deletes if t > now_ms]
            for path in due:
                self._disk.delete(path, now_ms)
        return len(due)

    def next_file_delete_ms(self) -> int | None:
        """When (ms) the next deleted segment's file is due for removal; None when none waits."""
        return min((t for t, _ in self.pending_deletes), default=None)

    # ------------------------------------------------------------------ flushing
    def flush(self, now_ms: int) -> None:
        """fsync every segment holding unflushed data: everything up to the LEO becomes durable (the epoch
        cache already is); the recovery point moves to the LEO (Kafka's ``flush``)."""
        rp = self.recovery_point
        for seg in reversed(self.segments):
            if seg.next_offset > rp or seg is self.segments[-1]:
                self._disk.fsync(seg.path, now_ms)
            if seg.base_offset <= rp:
                break
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = now_ms

    def maybe_flush(self, now_ms: int) -> bool:
        """The flush scheduler's check of this log at ``now_ms`` (Kafka's ``LogManager.flushDirtyLogs``: flush
        when ms since the last flush >= ``flush.ms`` and messages are unflushed). Returns whether it
        flushed."""
        fms = self.config.flush_interval_ms
        if fms is None or self.log_end_offset == self.recovery_point or now_ms - self.last_flush_ms < fms:
            return False
        self.flush(now_ms)
        return True

    def __repr__(self) -> str:
        return (f"PartitionLog({self.directory!r}, start={self.log_start_offset}, leo={self.log_end_offset}, "
                f"hwm={self.high_watermark}, segments={len(self.segments)}, epochs={self.epoch_cache.entries()})")


# A partition's segment file holds RecordBatch items only (the Disk interface stores any object).
def _scan(disk: Disk, path: str) -> Iterator[RecordBatch]:
    return cast(Iterator[RecordBatch], disk.scan(path))




def _read_range(disk: Disk, path: str, start: int, stop: int) -> Sequence[RecordBatch]:
    return cast(Sequence[RecordBatch], disk.read_range(path, start, stop))
