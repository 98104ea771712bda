"""The log of one partition replica: Kafka's ``UnifiedLog`` reduced to what replication needs.

One segment, ``{directory}/00000000000000000000.log``, holds :class:`RecordBatch` items on a
:class:`~kraftlog.storage.disk.Disk`; the partition's :class:`LeaderEpochCache` lives in
``{directory}/leader-epoch-checkpoint``. Offsets are absolute ints; the LEO is the offset after the last
record; ``max_bytes`` counts :attr:`RecordBatch.size_bytes` (exact encoded bytes). Times are ints in ms.

The log holds no batches in memory: it keeps the offset index (each batch's base offset and size, in
item order) and asks the disk for the items between two index positions (``Disk.read_range``), as
Kafka's ``LogSegment.read`` translates an offset to a file position through its offset index and reads
that byte range. Batches pass through untouched (an encoded batch from the wire stays bytes); only
:meth:`PartitionLog.record_at` and a truncation inside a batch decode records.

Durability follows Kafka: an append reaches the page cache only; the segment is fsynced when
``log.flush.interval.messages`` unflushed messages accumulate (checked on append) or when
``log.flush.interval.ms`` has passed since the last flush (:meth:`PartitionLog.maybe_flush`, which
the node calls at :meth:`PartitionLog.next_flush_deadline`). Both default to never, as in Kafka, so
by default only the OS writeback makes data durable.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from ..protocol.records import Record, RecordBatch
from .disk import Disk, LoadDrop
from .epoch_cache import LeaderEpochCache
from .producer_state import ProducerStateManager

__all__ = ["LogConfig", "PartitionLog", "SEGMENT_FILE", "EPOCH_CHECKPOINT_FILE"]

#: File names inside a partition directory (Kafka's).
SEGMENT_FILE = "00000000000000000000.log"
EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"


@dataclass(slots=True, frozen=True)
class LogConfig:
    """Flush policy of a partition log.

    ``flush_interval_messages``: Kafka's ``log.flush.interval.messages``: fsync once this many messages
    are unflushed (>= 1; None = never, Kafka's default). ``flush_interval_ms``: Kafka's
    ``log.flush.interval.ms``: fsync once this many ms have passed since the last flush while messages
    are unflushed (>= 0; None = never).
    """

    flush_interval_messages: int | None = None
    flush_interval_ms: int | None = None

    def __post_init__(self) -> None:
        if self.flush_interval_messages is not None and self.flush_interval_messages < 1:
            raise ValueError(f"flush_interval_messages must be >= 1 or None, got {self.flush_interval_messages}")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise ValueError(f"flush_interval_ms must be >= 0 or None, got {self.flush_interval_ms}")


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

    ``PartitionLog(disk, directory, config, now_ms)`` recovers from the disk: the disk's own check of the
    segment (:meth:`Disk.recover`: lengths and CRC-32Cs, an invalid tail truncated), then the batches found
    (the contiguous prefix from offset 0; a non-contiguous tail is truncated away as Kafka's segment
    recovery truncates invalid bytes); every truncation is kept in :attr:`dropped_at_load` (a list of
    :class:`~kraftlog.storage.disk.LoadDrop`: a replica that dropped data at load after a clean shutdown
    is not clean, DESIGN.md), then the epoch cache is truncated from the end to the LEO
    (Kafka's ``LogLoader``). If the remaining entries disagree with the recovered batches' epochs (only
    possible when a crash lost a truncation), the cache is rebuilt from the batches, as Kafka's segment
    recovery re-assigns epochs from the batches it reads.

    Storage errors: an appending, truncating or flushing method that meets an OSError from the disk
    (ENOSPC, EIO) lets it propagate; the caller takes the log directory offline and drops this object.
    Nothing in memory (offset index, LEO, producer state, epoch cache) changes before the disk accepted
    the bytes (stricter than Kafka, which halts the broker instead).

    Attributes: ``log_end_offset`` (the LEO: offset after the last record, ``log_start_offset`` when empty;
    read-only for callers, a plain attribute because it is read on every fetch), ``log_start_offset``
    (always 0 here: no retention), ``high_watermark`` (offset, starts at
    0; set by the replica layer via :meth:`update_high_watermark`), ``epoch_cache``, ``recovery_point``
    (offset below which the segment is known durable), ``config``.
    """

    __slots__ = (
        "_disk",
        "directory",
        "config",
        "segment_path",
        "log_start_offset",
        "high_watermark",
        "epoch_cache",
        "producer_state",
        "recovery_point",
        "last_flush_ms",
        "_bases",
        "_sizes",
        "log_end_offset",
        "dropped_at_load",
    )

    def __init__(self, disk: Disk, directory: str, config: LogConfig, now_ms: int) -> None:
        self._disk = disk
        self.directory = directory
        self.config = config
        self.segment_path = f"{directory}/{SEGMENT_FILE}"
        self.log_start_offset = 0
        self.high_watermark = 0
        self.last_flush_ms = now_ms

        # Recovery, one batch at a time: the offset index, the epochs the batches carry and the producer
        # state are rebuilt from the contiguous prefix; the batches themselves are not kept.
        bases: list[int] = []
        sizes: list[int] = []
        epochs: list[int] = []
        epoch_starts: list[int] = []
        producer_state = ProducerStateManager()
        #: what the recovery dropped at load (LoadDrop entries; empty for an intact segment)
        self.dropped_at_load: list[LoadDrop] = list(disk.recover(self.segment_path, now_ms))
        expected = self.log_start_offset
        torn = None
        position = 0
        for b in _scan(disk, self.segment_path):
            if b.base_offset != expected or b.record_count <= 0:
                torn = (f"offset gap: the batch at byte {position} starts at offset {b.base_offset} where "
                        f"{expected} was expected" if b.base_offset != expected
                        else f"the batch at byte {position} holds {b.record_count} records")
                break
            bases.append(b.base_offset)
            sizes.append(b.size_bytes)
            position += b.size_bytes
            _assign_derived(epochs, epoch_starts, b.partition_leader_epoch, b.base_offset)
            producer_state.update(b)
            expected = b.next_offset
        if torn is not None:
            kept = len(bases)
            rest = disk.read_range(self.segment_path, kept, 2**62)
            end = position + sum(getattr(b, "size_bytes", 0) for b in rest)
            self.dropped_at_load.append(LoadDrop(self.segment_path, position, end, len(rest), torn))
            disk.truncate(self.segment_path, kept, now_ms)
            disk.fsync(self.segment_path, now_ms)
        self._bases = bases
        self._sizes = sizes
        self.log_end_offset = expected
        # What the disk holds at load is what survived; treat it as flushed (Kafka's recovery point
        # after recovery is the LEO).
        self.recovery_point = expected

        cache = LeaderEpochCache(disk, f"{directory}/{EPOCH_CHECKPOINT_FILE}", now_ms)
        cache.truncate_from_end(expected, now_ms)
        derived = list(zip(epochs, epoch_starts, strict=True))
        if cache.entries() != derived:
            cache.clear(now_ms)
            for epoch, start in derived:
                cache.assign(epoch, start, now_ms)
        self.epoch_cache = cache
        #: Idempotent-producer state rebuilt from the batches (Kafka rebuilds it on log load).
        self.producer_state = producer_state

    # ------------------------------------------------------------------ offsets
    @property
    def size(self) -> int:
        """Bytes of the batches the log holds (Kafka's ``UnifiedLog.size``, the ``Size`` gauge)."""
        return sum(self._sizes)

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
    def _append_stamped(self, batch: RecordBatch, now_ms: int) -> None:
        """Write ``batch`` (stamped), then index it: an OSError from the disk leaves the log unchanged."""
        self._disk.append(self.segment_path, batch, now_ms)
        if batch.producer_id >= 0:
            self.producer_state.update(batch)
        self._bases.append(batch.base_offset)
        self._sizes.append(batch.size_bytes)
        self.log_end_offset = batch.base_offset + batch.record_count

    def _apply_flush_policy(self, now_ms: int) -> None:
        fim = self.config.flush_interval_messages
        if fim is not None and self.log_end_offset - self.recovery_point >= fim:
            self.flush(now_ms)

    def append_as_leader(self, batch: RecordBatch, leader_epoch: int, now_ms: int) -> RecordBatch:
        """Append ``batch`` as the leader in ``leader_epoch`` and return it as stored.

        Kafka's leader append: base offset := LEO, partition leader epoch := ``leader_epoch``; the epoch
        cache gets (``leader_epoch``, base offset) when the epoch is new; then the
        ``log.flush.interval.messages`` policy is applied. Raises ValueError for an empty batch or a
        negative epoch, OSError from the disk (nothing changed in memory then: the batch is written before
        the producer state, the offset index and the epoch cache learn of it; Kafka assigns the epoch
        first and halts on an I/O error).
        """
        if batch.record_count <= 0:
            raise ValueError("cannot append an empty record batch")
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
        ValueError is raised before anything is appended (a caller bug, not a fault). The epoch cache is
        assigned from each batch's partition leader epoch (skipped when -1), as Kafka does on follower
        append; then the ``log.flush.interval.messages`` policy is applied. Returns the new LEO.
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
    def read(self, fetch_offset: int, max_offset: int, max_bytes: int) -> tuple[RecordBatch, ...]:
        """Whole batches with ``last_offset >= fetch_offset`` and ``base_offset < max_offset``.

        ``max_offset`` is exclusive (the HWM for consumers, the LEO for followers). At least one batch is
        returned when one qualifies, even if larger than ``max_bytes`` (Kafka's ``minOneMessage``); further
        batches are added while the total ``size_bytes`` stays <= ``max_bytes``. The first batch may
        start before ``fetch_offset`` (Kafka returns whole batches). Returns ``()`` when nothing
        qualifies, including ``fetch_offset >= max_offset`` (Kafka: nothing to read at the HWM/LEO even
        if a batch straddles it); range checks are the caller's. O(log n + result).
        """
        bases = self._bases
        n = len(bases)
        if n == 0 or fetch_offset >= self.log_end_offset or fetch_offset >= max_offset:
            return ()
        i = bisect_right(bases, fetch_offset) - 1
        if i < 0:
            i = 0
        sizes = self._sizes
        if bases[i] >= max_offset:
            return ()
        total = sizes[i]
        j = i + 1
        while j < n and bases[j] < max_offset:
            total += sizes[j]
            if total > max_bytes:
                break
            j += 1
        return tuple(_read_range(self._disk, self.segment_path, i, j))

    def batches(self) -> Iterator[RecordBatch]:
        """Iterate over the stored batches in offset order, read from the disk (for checkers and tools;
        do not change the log meanwhile)."""
        return _scan(self._disk, self.segment_path)

    def record_at(self, offset: int) -> tuple[Record, int] | None:
        """(record, partition leader epoch of its batch) at ``offset``, None outside [start, LEO)."""
        if offset < self.log_start_offset or offset >= self.log_end_offset:
            return None
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            return None
        (b,) = _read_range(self._disk, self.segment_path, i, i + 1)
        return (b.records[offset - b.base_offset], b.partition_leader_epoch)

    def _count(self, i: int) -> int:
        """Records in the batch at index position ``i`` (the next base offset, or the LEO, minus its own)."""
        bases = self._bases
        return (bases[i + 1] if i + 1 < len(bases) else self.log_end_offset) - bases[i]

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int, now_ms: int) -> None:
        """Remove every offset >= ``offset`` (Kafka's ``truncateTo``): a batch straddling ``offset`` is cut
        with :meth:`RecordBatch.truncated_before`; the epoch cache is truncated from the end; the HWM and
        recovery point are clamped. When ``offset`` >= LEO only the epoch cache is truncated (to the LEO):
        Kafka always does, since a former leader may hold an epoch entry at the log end with no batch
        (it became leader, appended nothing, and lost leadership). Like ``ftruncate``, the truncation is
        not durable until the next flush. Raises ValueError below ``log_start_offset``.
        """
        if offset >= self.log_end_offset:
            self.epoch_cache.truncate_from_end(self.log_end_offset, now_ms)
            return
        if offset < self.log_start_offset:
            raise ValueError(f"cannot truncate to {offset} below log start offset {self.log_start_offset}")
        bases = self._bases
        sizes = self._sizes
        keep = bisect_left(bases, offset)  # batches starting below offset
        disk = self._disk
        path = self.segment_path
        head = None
        if keep and bases[keep - 1] + self._count(keep - 1) > offset:
            (straddling,) = _read_range(disk, path, keep - 1, keep)
            head = straddling.truncated_before(offset)
            keep -= 1
        disk.truncate(path, keep, now_ms)
        del bases[keep:]
        del sizes[keep:]
        if head is not None:
            disk.append(path, head, now_ms)
            bases.append(head.base_offset)
            sizes.append(head.size_bytes)
        self.log_end_offset = offset
        self.epoch_cache.truncate_from_end(offset, now_ms)
        self.producer_state.rebuild(_scan(disk, path))
        if self.high_watermark > offset:
            self.high_watermark = offset
        if self.recovery_point > offset:
            self.recovery_point = offset

    # ------------------------------------------------------------------ flushing
    def flush(self, now_ms: int) -> None:
        """fsync the segment: everything up to the LEO becomes durable (the epoch cache already is)."""
        self._disk.fsync(self.segment_path, now_ms)
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = now_ms

    def next_flush_deadline(self) -> int | None:
        """When (ms) ``log.flush.interval.ms`` requires a flush: last flush + interval while messages are
        unflushed (may be <= now: due at once); None when the policy is off or nothing is unflushed."""
        fms = self.config.flush_interval_ms
        if fms is None or self.log_end_offset == self.recovery_point:
            return None
        return self.last_flush_ms + fms

    def maybe_flush(self, now_ms: int) -> bool:
        """Apply the ``log.flush.interval.ms`` policy at ``now_ms`` (Kafka's ``flushDirtyLogs``: flush when
        ms since the last flush >= the interval and messages are unflushed). Returns whether it flushed."""
        deadline = self.next_flush_deadline()
        if deadline is None or now_ms < deadline:
            return False
        self.flush(now_ms)
        return True

    def __repr__(self) -> str:
        return (f"PartitionLog({self.directory!r}, leo={self.log_end_offset}, hwm={self.high_watermark}, "
                f"batches={len(self._bases)}, epochs={self.epoch_cache.entries()})")


# A partition's segment file holds RecordBatch items only (the Disk interface stores any object).
def _scan(disk: Disk, path: str) -> Iterator[RecordBatch]:
    return cast(Iterator[RecordBatch], disk.scan(path))


def _read_range(disk: Disk, path: str, start: int, stop: int) -> Sequence[RecordBatch]:
    return cast(Sequence[RecordBatch], disk.read_range(path, start, stop))
