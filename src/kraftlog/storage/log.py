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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from random import Random
from typing import cast

from ..protocol.records import Record, RecordBatch
from .disk import Disk, LoadDrop
from .epoch_cache import LeaderEpochCache
from .producer_state import ProducerStateManager

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

#: A segment file's suffix, and its name: the base offset as 20 digits (Kafka's ``LogFileUtils``).
LOG_FILE_SUFFIX = ".log"
#: File names inside a partition directory (Kafka's): the first segment of a log that starts at 0.
SEGMENT_FILE = "00000000000000000000.log"
EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"

#: Kafka's index entry sizes (``OffsetIndex``: relative offset int32 + position int32; ``TimeIndex``:
#: timestamp int64 + relative offset int32).
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
_MAX_RELATIVE_OFFSET = 2**31 - 1


def segment_file(base_offset: int) -> str:
    """A segment's file name: ``base_offset`` as 20 digits + ``.log`` (Kafka's ``LogFileUtils.logFile``)."""
    return f"{base_offset:020d}{LOG_FILE_SUFFIX}"


def segment_paths(disk: Disk, directory: str) -> list[str]:
    """The segment files of the partition directory ``directory`` on ``disk``, in base-offset order."""
    prefix = directory.rstrip("/") + "/"
    return [p for p in disk.list(prefix) if _base_of(p[len(prefix):]) is not None]


def _base_of(name: str) -> int | None:
    """The base offset a segment file name carries, None for any other name."""
    if len(name) != 20 + len(LOG_FILE_SUFFIX) or not name.endswith(LOG_FILE_SUFFIX) or not name[:20].isdigit():
        return None
    return int(name[:20])


class RecordBatchTooLargeError(ValueError):
    """A batch larger than ``segment.bytes`` (Kafka's ``RecordBatchTooLargeException``: the produce answer
    is RECORD_LIST_TOO_LARGE). Nothing was appended."""


@dataclass(slots=True, frozen=True)
class LogConfig:
    """A partition log's topic configs (Kafka's ``LogConfig``; sizes in bytes, times in ms).

    ``flush_interval_messages``: ``flush.messages``: fsync once this many messages are unflushed (>= 1;
    None = never, Kafka's default). ``flush_interval_ms``: ``flush.ms``: the flush scheduler fsyncs a log
    whose last flush is this old (>= 0; None = never). ``segment_bytes`` (``segment.bytes``, 1 GiB),
    ``segment_ms`` (``segment.ms``, 7 days), ``segment_jitter_ms`` (``segment.jitter.ms``, 0: each segment's
    roll time is brought forward by a draw in [0, min(jitter, segment.ms))), ``segment_index_bytes``
    (``segment.index.bytes``, 10 MiB: the size of each index, so its entry capacity), ``index_interval_bytes``
    (``index.interval.bytes``, 4096), ``retention_ms`` (``retention.ms``, 7 days; -1: no time limit),
    ``retention_bytes`` (``retention.bytes``, -1: no size limit), ``delete`` (``cleanup.policy`` holds
    ``delete``: retention applies). ValueError for a value out of Kafka's range.
    """

    flush_interval_messages: int | None = None
    flush_interval_ms: int | None = None
    segment_bytes: int = 1 << 30
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 << 20
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    delete: bool = True

    def __post_init__(self) -> None:
        if self.flush_interval_messages is not None and self.flush_interval_messages < 1:
            raise ValueError(f"flush_interval_messages must be >= 1 or None, got {self.flush_interval_messages}")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise ValueError(f"flush_interval_ms must be >= 0 or None, got {self.flush_interval_ms}")
        for name, low in (("segment_bytes", 14), ("segment_ms", 1), ("segment_jitter_ms", 0),
                          ("segment_index_bytes", 4), ("index_interval_bytes", 0)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")

    @property
    def max_index_entries(self) -> int:
        """Entries the offset index holds (Kafka's ``maxEntries``: the index size over 8 bytes)."""
        return self.segment_index_bytes // OFFSET_INDEX_ENTRY_BYTES

    @property
    def max_time_index_entries(self) -> int:
        """Entries the time index holds (the index size over 12 bytes)."""
        return self.segment_index_bytes // TIME_INDEX_ENTRY_BYTES


class LogSegment:
    """One segment of a log (Kafka's ``LogSegment``): the file ``path`` holding the batches from
    ``base_offset``, its offset index in memory (``bases``/``sizes``: each batch's base offset and bytes) and
    the bookkeeping of Kafka's sparse indexes (entry counts, to roll when either is full).

    ``size``: bytes; ``next_offset``: the offset after its last record (its base when empty);
    ``max_timestamp``: the largest batch max timestamp (-1 when none); ``rolling_timestamp``: the first
    batch's max timestamp (``segment.ms`` counts from it; -1 when none); ``created_ms`` and
    ``last_modified_ms``: when it was created (or loaded) and last appended to; ``jitter_ms``: this
    segment's ``segment.jitter.ms`` draw."""

    __slots__ = ("base_offset", "path", "bases", "sizes", "timestamps", "size", "next_offset", "max_timestamp",
                 "rolling_timestamp", "created_ms", "last_modified_ms", "index_entries",
                 "time_index_entries", "last_time_index_ts", "bytes_since_index", "jitter_ms")

    def __init__(self, directory: str, base_offset: int, now_ms: int, jitter_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.path = f"{directory}/{segment_file(base_offset)}"
        self.bases: list[int] = []
        self.sizes: list[int] = []
        self.timestamps: list[int] = []  # each batch's max timestamp
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.rolling_timestamp = -1
        self.created_ms = now_ms
        self.last_modified_ms = now_ms
        self.index_entries = 0
        self.time_index_entries = 0
        self.last_time_index_ts = -1
        self.bytes_since_index = 0
        self.jitter_ms = jitter_ms

    def index(self, batch: RecordBatch, max_timestamp: int, now_ms: int, index_interval_bytes: int) -> None:
        """Account for ``batch`` just written at the end of the file (Kafka's ``LogSegment.append``): the
        offset index, the max timestamp, an index entry once ``index.interval.bytes`` have passed."""
        self._add(batch.base_offset, batch.size_bytes, max_timestamp, index_interval_bytes)
        self.next_offset = batch.base_offset + batch.record_count
        self.last_modified_ms = now_ms

    def _add(self, base_offset: int, size: int, max_timestamp: int, index_interval_bytes: int) -> None:
        if not self.bases:
            self.rolling_timestamp = max_timestamp
        if self.bytes_since_index > index_interval_bytes:
            self.index_entries += 1
            ts = max(self.max_timestamp, max_timestamp)
            if ts > self.last_time_index_ts:
                self.time_index_entries += 1
                self.last_time_index_ts = ts
            self.bytes_since_index = 0
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        self.bases.append(base_offset)
        self.sizes.append(size)
        self.timestamps.append(max_timestamp)
        self.size += size
        self.bytes_since_index += size

    def truncate_index(self, keep: int, next_offset: int, index_interval_bytes: int) -> None:
        """Forget every batch from index position ``keep`` on (the file was cut there) and recompute what
        depends on them (size, max timestamp, index entry counts), as Kafka's ``LogSegment.truncateTo``
        does; ``next_offset``: the offset after the last kept batch."""
        sizes, timestamps = self.sizes[:keep], self.timestamps[:keep]
        bases = self.bases[:keep]
        self.bases, self.sizes, self.timestamps = [], [], []
        self.size = self.index_entries = self.time_index_entries = self.bytes_since_index = 0
        self.max_timestamp = self.rolling_timestamp = self.last_time_index_ts = -1
        self.next_offset = self.base_offset
        last_modified = self.last_modified_ms
        for base, size, ts in zip(bases, sizes, timestamps, strict=True):
            self._add(base, size, ts, index_interval_bytes)
        if bases:
            self.next_offset = next_offset
        self.last_modified_ms = last_modified

    def should_roll(self, config: LogConfig, size: int, max_timestamp: int, last_offset: int,
                    now_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll`` for a batch of ``size`` bytes with ``max_timestamp`` ending at
        ``last_offset`` (module docstring)."""
        ts = self.rolling_timestamp
        waited = max_timestamp - ts if ts >= 0 else now_ms - self.created_ms
        return (self.size > config.segment_bytes - size
                or (self.size > 0 and waited > config.segment_ms - self.jitter_ms)
                or self.index_entries >= config.max_index_entries
                or self.time_index_entries >= config.max_time_index_entries
                or not 0 <= last_offset - self.base_offset <= _MAX_RELATIVE_OFFSET)

    def largest_timestamp(self) -> int:
        """Kafka's ``LogSegment.largestTimestamp``: the largest record timestamp, else the last-modified time."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def __repr__(self) -> str:
        return f"LogSegment({self.path!r}, {self.base_offset}..{self.next_offset}, {self.size} bytes)"


def _assign_derived(epochs: list[int], starts: list[int], e: int, base_offset: int) -> None:
    """Fold one batch's (epoch, base offset) into derived epoch entries (Kafka's assign rule)."""
    if e < 0 or (epochs and e == epochs[-1] and base_offset >= starts[-1]):
        return
    while epochs and (epochs[-1] >= e or starts[-1] >= base_offset):
        epochs.pop()
        starts.pop()
    epochs.append(e)
    starts.append(base_offset)


class PartitionLog:
    """The log of one partition replica over a :class:`Disk`.

    ``PartitionLog(disk, directory, config, now_ms, log_start_offset=0, recovery_point=0, rng=None)``
    recovers from the disk (Kafka's ``LogLoader``): every segment file of ``directory`` in base-offset
    order gets the disk's own check (:meth:`Disk.recover`: lengths and CRC-32Cs, an invalid tail truncated),
    then its batches are read: the contiguous run of offsets from the first segment's base; at the first
    gap, empty batch or a segment that does not start where the previous one ended, the rest of that
    segment is truncated and every later segment deleted (Kafka's recovery deletes the segments after a
    corrupt one). Every truncation is kept in :attr:`dropped_at_load` (:class:`~kraftlog.storage.disk.LoadDrop`:
    a replica that dropped data at load after a clean shutdown is not clean, DESIGN.md). The log start
    offset is max(``log_start_offset``: the checkpointed one, the first segment's base); the recovery point
    is min(``recovery_point``, LEO) (Kafka's ``LogLoader``: only a flush moves it; the log manager passes
    the LEO after a clean shutdown). The epoch cache is truncated from the end to the LEO and from the start
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
    first; the last is active), ``config``, ``dropped_at_load``, ``batches_loaded`` (batches read and
    checked at load).
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
        "batches_loaded",
        "_rng",
    )

    def __init__(self, disk: Disk, directory: str, config: LogConfig, now_ms: int, log_start_offset: int = 0,
                 recovery_point: int = 0, rng: Random | None = None) -> None:
        self._disk = disk
        self.directory = directory
        self.config = config
        self._rng = rng
        self.high_watermark = 0
        self.last_flush_ms = now_ms
        self.batches_loaded = 0

        # Recovery, one batch at a time: the offset indexes, the epochs the batches carry and the producer
        # state are rebuilt from the contiguous run; the batches themselves are not kept.
        epochs: list[int] = []
        epoch_starts: list[int] = []
        producer_state = ProducerStateManager()
        #: what the recovery dropped at load (LoadDrop entries; empty for an intact log)
        self.dropped_at_load: list[LoadDrop] = []
        segments: list[LogSegment] = []
        paths = segment_paths(disk, directory)
        expected: int | None = None
        broken = False
        for path in paths:
            if broken:
                rest = list(disk.scan(path))
                size = sum(getattr(b, "size_bytes", 0) for b in rest)
                if rest:
                    self.dropped_at_load.append(LoadDrop(path, 0, size, len(rest), "a segment after a truncated one"))
                disk.delete(path, now_ms)
                continue
            base = _base_of(path.rpartition("/")[2])
            assert base is not None
            drops = disk.recover(path, now_ms)
            self.dropped_at_load.extend(drops)
            if expected is not None and base != expected:
                self.dropped_at_load.append(LoadDrop(path, 0, 0, 0, f"segment base {base} where offset {expected} "
                                                     "was expected"))
                broken = True
                disk.delete(path, now_ms)
                continue
            seg = LogSegment(directory, base, now_ms, self._draw_jitter())
            position = 0
            torn = None
            for b in _scan(disk, path):
                if b.base_offset != seg.next_offset or b.record_count <= 0:
                    torn = (f"offset gap: the batch at byte {position} starts at offset {b.base_offset} where "
                            f"{seg.next_offset} was expected" if b.base_offset != seg.next_offset
                            else f"the batch at byte {position} holds {b.record_count} records")
                    break
                seg.index(b, b.max_timestamp, now_ms, config.index_interval_bytes)
                position += b.size_bytes
                _assign_derived(epochs, epoch_starts, b.partition_leader_epoch, b.base_offset)
                producer_state.update(b)
                self.batches_loaded += 1
            if torn is not None:
                kept = len(seg.bases)
                rest_items = disk.read_range(path, kept, 2**62)
                end = position + sum(getattr(b, "size_bytes", 0) for b in rest_items)
                self.dropped_at_load.append(LoadDrop(path, position, end, len(rest_items), torn))
                disk.truncate(path, kept, now_ms)
                disk.fsync(path, now_ms)
                broken = True
            if drops:
                broken = True  # the disk cut this segment's tail: the segments after it cannot follow on
            segments.append(seg)
            expected = seg.next_offset
        if not segments:
            segments.append(LogSegment(directory, max(0, log_start_offset), now_ms, self._draw_jitter()))
        self.segments = segments
        self._segment_bases = [s.base_offset for s in segments]
        leo = segments[-1].next_offset
        self.log_end_offset = leo
        self.log_start_offset = min(max(log_start_offset, segments[0].base_offset), leo)
        self.recovery_point = min(max(recovery_point, self.log_start_offset), leo)

        cache = LeaderEpochCache(disk, f"{directory}/{EPOCH_CHECKPOINT_FILE}", now_ms)
        cache.truncate_from_end(leo, now_ms)
        derived = list(zip(epochs, epoch_starts, strict=True))
        if cache.entries() != derived:
            cache.clear(now_ms)
            for epoch, start in derived:
                cache.assign(epoch, start, now_ms)
        first = cache.earliest_entry()
        if first is not None and first[1] < self.log_start_offset:
            cache.truncate_from_start(self.log_start_offset, now_ms)
        self.epoch_cache = cache
        #: Idempotent-producer state rebuilt from the batches (Kafka rebuilds it on log load).
        self.producer_state = producer_state
        if log_start_offset > leo:
            # Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd: the records below the checkpointed log start
            # were deleted (DeleteRecords, retention) before a crash cut the log shorter: start empty there.
            self.truncate_fully_and_start_at(log_start_offset, now_ms)

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
        seg = LogSegment(self.directory, self.log_end_offset, now_ms, self._draw_jitter())
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

        Each batch must start exactly at the LEO (after the previous one) and hold records; otherwise
        ValueError is raised before anything is appended (a caller bug, not a fault). Each batch rolls the
        segment when due (Kafka rolls once per fetched set; one batch at a time keeps every segment within
        ``segment.bytes`` whatever the fetch size; a single batch larger than it gets a segment of its own:
        a follower cannot refuse what its leader holds). The epoch cache is assigned from each batch's
        partition leader epoch (skipped when -1), as Kafka does on follower append; then the
        ``flush.messages`` policy is applied. Returns the new LEO.
        """
        batches = tuple(batches)
        expected = self.log_end_offset
        for b in batches:
            if b.base_offset != expected:
                raise ValueError(
                    f"follower append at offset {b.base_offset} is not contiguous with LEO {expected}"
                    f" in {self.directory}")
            if b.record_count <= 0:
                raise ValueError("cannot append an empty record batch")
            expected = b.base_offset + b.record_count
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
        while not seg.bases or seg.next_offset <= fetch_offset:
            k += 1  # an empty segment, or one that ends before the offset: the next one holds it
            if k == len(segments):
                return ()
            seg = segments[k]
        bases = seg.bases
        n = len(bases)
        i = bisect_right(bases, fetch_offset) - 1
        if i < 0:
            i = 0
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
        return tuple(_read_range(self._disk, seg.path, i, j))

    def batches(self) -> Iterator[RecordBatch]:
        """Iterate over the stored batches of every segment in offset order, read from the disk (for
        checkers and tools; do not change the log meanwhile). The first segment may hold batches below the
        log start offset (until retention deletes it)."""
        for seg in list(self.segments):
            yield from _scan(self._disk, seg.path)

    def record_at(self, offset: int) -> tuple[Record, int] | None:
        """(record, partition leader epoch of its batch) at ``offset``, None outside [start, LEO)."""
        if offset < self.log_start_offset or offset >= self.log_end_offset:
            return None
        seg = self.segments[self._segment_of(offset)]
        i = bisect_right(seg.bases, offset) - 1
        if i < 0:
            return None
        (b,) = _read_range(self._disk, seg.path, i, i + 1)
        return (b.records[offset - b.base_offset], b.partition_leader_epoch)

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
        # Segments that start above the offset go (Kafka deletes the ones whose base > offset; one starting
        # exactly there is emptied and kept as the active segment).
        for seg in self.segments[k + 1:]:
            disk.delete(seg.path, now_ms)
        del self.segments[k + 1:]
        del self._segment_bases[k + 1:]
        seg = self.segments[k]
        bases = seg.bases
        keep = bisect_left(bases, offset)  # batches starting below offset
        head = None
        if keep and (bases[keep] if keep < len(bases) else seg.next_offset) > offset:
            (straddling,) = _read_range(disk, seg.path, keep - 1, keep)
            head = straddling.truncated_before(offset)
            keep -= 1
        disk.truncate(seg.path, keep, now_ms)
        end = bases[keep] if keep < len(bases) else seg.next_offset
        seg.truncate_index(keep, end, self.config.index_interval_bytes)
        if head is not None:
            disk.append(seg.path, head, now_ms)
            seg.index(head, head.max_timestamp, now_ms, self.config.index_interval_bytes)
        self.log_end_offset = offset
        self.epoch_cache.truncate_from_end(offset, now_ms)
        self.producer_state.rebuild(self.batches())
        if self.log_start_offset > offset:
            self.log_start_offset = offset
        if self.high_watermark > offset:
            self.high_watermark = offset
        if self.recovery_point > offset:
            self.recovery_point = offset

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment and start an empty log at ``offset`` (Kafka's ``truncateFullyAndStartAt``: a
        follower whose fetch offset fell below its leader's log start offset, or a truncation below the first
        segment): LEO, log start offset, HWM and recovery point become ``offset``; the epoch cache is
        cleared; the producer state is emptied. OSError propagates."""
        if offset < 0:
            raise ValueError(f"cannot start a log at a negative offset ({offset})")
        disk = self._disk
        for seg in self.segments:
            disk.delete(seg.path, now_ms)
        seg = LogSegment(self.directory, offset, now_ms, self._draw_jitter())
        disk.create(seg.path, now_ms)
        disk.fsync(seg.path, now_ms)  # Kafka's truncateFullyAndStartAt creates the new segment's file
        self.segments = [seg]
        self._segment_bases = [offset]
        self.log_end_offset = offset
        self.log_start_offset = offset
        self.high_watermark = offset
        self.recovery_point = offset
        self.epoch_cache.clear(now_ms)
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
            self.maybe_increment_log_start_offset(self.segments[n].base_offset, now_ms)
            del self.segments[:n]
            del self._segment_bases[:n]
            for seg in doomed:
                self._disk.delete(seg.path, now_ms)
            total += n
            reason = reason or rule

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

