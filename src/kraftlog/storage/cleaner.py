"""Compaction: Kafka's log cleaner (``LogCleaner``'s ``Cleaner``, ``LogCleanerManager``'s choice of a log,
``SkimpyOffsetMap``) as a sans-I/O step the driver runs in bounded slices.

A compacted log (``cleanup.policy`` holds ``compact``) keeps, for every key, at least its last record. Its
offsets ``[log start, first dirty offset)`` were cleaned before (the ``cleaner-offset-checkpoint``); the *dirty*
section runs from there to the *first uncleanable offset*: the base of the segment holding the smallest of the
HWM (kraftlog has no transactions, so the HWM is the last stable offset), the active segment's base and, with
``min.compaction.lag.ms``, the first segment holding a record younger than the lag (:func:`cleanable_offsets`,
Kafka's ``LogCleanerManager.cleanableOffsets`` and ``calculateCleanableBytes``). A log is cleaned when its dirty
bytes reach ``min.cleanable.dirty.ratio`` of its clean + dirty bytes, or when its oldest dirty batch is older
than ``max.compaction.lag.ms`` (:func:`log_to_clean`); the filthiest goes first (:func:`grab_filthiest`).

A :class:`Cleaning` (Kafka's ``Cleaner.doClean``) then

1. builds the key -> last offset map of the dirty section (``buildOffsetMap``), at most
   :attr:`OffsetMap.capacity` keys (``log.cleaner.dedupe.buffer.size`` over 24 bytes an entry, times
   ``log.cleaner.io.buffer.load.factor``): when it fills, the cleaning ends at the last offset it mapped and the
   rest waits for the next one; the map's end offset is moved to each fully mapped segment's end;
2. rewrites every segment from the log start up to the map's end, in groups that fit one segment
   (``groupSegmentsBySize``), each group into one cleaned segment (``cleanSegments``, ``cleanInto``): a record
   is kept when it lies past the map's end, or when it is its key's latest (offset >= the map's) and either
   has a value or is a tombstone still within its delete horizon (``shouldRetainRecord``); a keyless record is
   dropped (Kafka counts it invalid). A batch keeps its offsets, producer fields, partition leader epoch and
   codec (``MemoryRecords.filterTo``: an unchanged batch is copied as it is); a batch whose records all go is
   dropped, unless it is its producer's last batch, which stays, empty, so the producer's last sequence
   survives (``BatchRetention.RETAIN_EMPTY``). A batch holding a kept tombstone without a delete horizon gets one:
   the cleaning's time plus ``delete.retention.ms`` (KIP-534): the tombstone goes in the first cleaning after it;
3. swaps each cleaned segment in (:meth:`PartitionLog.replace_segments`) and, at the end, moves the log's first
   dirty offset to the map's end (``doneCleaning``).

Each :meth:`Cleaning.step` reads at most about ``budget`` bytes of batches (at least one batch) and returns, so a
large cleaning never holds the node for long. A cleaning gives up (its cleaned file deleted) when the log's
sealed segments changed meanwhile (a truncation, retention, Kafka's ``abortAndPauseCleaning``): the next one
starts again. Storage errors: OSError propagates; the caller takes the log directory offline (Kafka's cleaner
hands an IOException to the ``LogDirFailureChannel``). Times are ms, sizes bytes, offsets absolute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..protocol.record_filter import retain, scan_keys
from ..protocol.records import ATTR_DELETE_HORIZON, RecordBatch
from .disk import Disk
from .log import PartitionLog
from .log_loader import cleaned_file
from .producer_state import MAX_SEQUENCE
from .segment import LogSegment

__all__ = ["OffsetMap", "LogToClean", "CleanerStats", "Cleaning", "cleanable_offsets", "log_to_clean",
           "grab_filthiest", "group_segments_by_size", "segments_between", "filter_batch",
           "OFFSET_MAP_ENTRY_BYTES"]

#: Bytes an entry of Kafka's SkimpyOffsetMap takes: a 16-byte MD5 of the key and an 8-byte offset.
OFFSET_MAP_ENTRY_BYTES = 24
#: Java's Long.MAX_VALUE: ``max.compaction.lag.ms``' default ("never").
_LONG_MAX = (1 << 63) - 1


class OffsetMap:
    """Key -> the last offset seen for it (Kafka's ``SkimpyOffsetMap``; kraftlog keys a dict by the key bytes,
    so there are no hash collisions). ``slots``: ``memory_bytes`` // 24; ``capacity``: ``slots`` times
    ``load_factor``, the keys a map takes before it counts as full; ``latest_offset``: the largest offset put or
    moved to (-1 when cleared)."""

    __slots__ = ("slots", "capacity", "_map", "latest_offset")

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = max(1, memory_bytes // OFFSET_MAP_ENTRY_BYTES)
        self.capacity = max(1, int(self.slots * load_factor))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The key's last offset, -1 when the map does not hold it."""
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        """Kafka's ``updateLatestOffset``: the map covers the offsets up to ``offset`` (a segment mapped whole)."""
        self.latest_offset = max(self.latest_offset, offset)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.capacity

    @property
    def utilization(self) -> float:
        """Entries over slots (Kafka's ``utilization``, for ``max-buffer-utilization-percent``)."""
        return len(self._map) / self.slots

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)


def segments_between(log: PartitionLog, start: int, end: int) -> list[LogSegment]:
    """The segments of ``log`` holding any offset in ``[start, end)`` (Kafka's ``logSegments(from, to)``: from the
    segment holding ``start`` to the last one starting below ``end``)."""
    segs = log.segments
    out = []
    for k, seg in enumerate(segs):
        upper = segs[k + 1].base_offset if k + 1 < len(segs) else _LONG_MAX
        if seg.base_offset < end and upper > start:
            out.append(seg)
    return out


def _segment_at(log: PartitionLog, offset: int) -> LogSegment:
    """The non-active segment holding ``offset``, else the active one (Kafka's
    ``nonActiveLogSegmentsFrom(offset).headOption.getOrElse(activeSegment)``)."""
    segs = log.segments
    for k, seg in enumerate(segs[:-1]):
        if segs[k + 1].base_offset > offset:
            return seg
    return segs[-1]


def cleanable_offsets(log: PartitionLog, now_ms: int) -> tuple[int, int]:
    """(first dirty offset, first uncleanable dirty offset) of ``log`` at ``now_ms`` (Kafka's
    ``LogCleanerManager.cleanableOffsets``). The first dirty offset is the log's (its cleaner checkpoint), reset to
    the log start offset when outside [log start, LEO]. The first uncleanable dirty offset is the smallest of the
    HWM (the last stable offset), the active segment's base and, with ``min.compaction.lag.ms`` > 0, the base of
    the first dirty non-active segment whose largest timestamp lies within the lag of ``now_ms``; never below the
    first dirty offset (Kafka returns the larger of the two)."""
    dirty = log.first_dirty_offset
    if not log.log_start_offset <= dirty <= log.log_end_offset:
        dirty = log.log_start_offset
    uncleanable = min(log.high_watermark, log.active_segment.base_offset)
    lag = max(log.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in segments_between(log, dirty, log.active_segment.base_offset):
            if seg is not log.active_segment and seg.largest_timestamp() > now_ms - lag:
                uncleanable = min(uncleanable, seg.base_offset)
                break
    return dirty, max(dirty, uncleanable)


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log's cleanable state (Kafka's ``LogToClean``): ``first_dirty_offset``,
    ``first_uncleanable_offset`` (the base of the segment holding :func:`cleanable_offsets`' uncleanable offset:
    a segment is cleaned whole or not at all, Kafka's ``calculateCleanableBytes``), ``clean_bytes`` (the segments
    below the first dirty offset), ``cleanable_bytes`` (the segments from it to the first uncleanable offset) and
    ``max_compaction_delay_ms`` (how far past ``max.compaction.lag.ms`` its oldest dirty batch is; 0 when not)."""

    key: tuple[str, int]
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_delay_ms: int

    @property
    def cleanable_ratio(self) -> float:
        """Dirty bytes over clean + dirty bytes (0 when both are 0)."""
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def need_compaction_now(self) -> bool:
        """``max.compaction.lag.ms`` ran out for its oldest dirty batch (Kafka's ``needCompactionNow``)."""
        return self.max_compaction_delay_ms > 0


def log_to_clean(key: tuple[str, int], log: PartitionLog, now_ms: int) -> LogToClean:
    """``log``'s :class:`LogToClean` at ``now_ms``. The compaction delay (Kafka's ``maxCompactionDelay``) counts
    from the earliest first-batch timestamp of the dirty non-active segments (a segment's first batch's max
    timestamp, Kafka's ``getFirstBatchTimestamp``; only those above 0 count)."""
    dirty, uncleanable = cleanable_offsets(log, now_ms)
    first_uncleanable = _segment_at(log, uncleanable).base_offset
    clean_bytes = sum(s.size for s in segments_between(log, -1, dirty))
    dirty_segments = segments_between(log, min(dirty, first_uncleanable), first_uncleanable)
    cleanable_bytes = sum(s.size for s in dirty_segments)
    delay = 0
    lag = log.config.max_compaction_lag_ms
    if lag < _LONG_MAX:
        firsts = [s.rolling_timestamp for s in segments_between(log, dirty, log.active_segment.base_offset)
                  if s is not log.active_segment and s.rolling_timestamp > 0]
        if firsts and min(firsts) < now_ms - lag:
            delay = now_ms - lag - min(firsts)
    return LogToClean(key, dirty, first_uncleanable, clean_bytes, cleanable_bytes, delay)


def grab_filthiest(logs: Mapping[tuple[str, int], PartitionLog], now_ms: int,
                   skip: Iterable[tuple[str, int]] = ()) -> LogToClean | None:
    """The compacted log to clean next (Kafka's ``grabFilthiestCompactedLog``): among the logs whose
    ``cleanup.policy`` holds ``compact`` (not in ``skip``: the uncleanable ones) with cleanable bytes, those whose
    ratio is above ``min.cleanable.dirty.ratio`` (strictly, as Kafka) or whose compaction delay ran out, the one
    with the highest ratio (ties: the first key in order). None when none needs cleaning. A log whose first dirty
    offset lay outside it gets the reset one, chosen or not (Kafka's ``forceUpdateCheckpoint``)."""
    skipped = set(skip)
    best: LogToClean | None = None
    for key in sorted(logs):
        log = logs[key]
        if not log.config.compact or key in skipped:
            continue
        ltc = log_to_clean(key, log, now_ms)
        log.first_dirty_offset = ltc.first_dirty_offset
        if ltc.cleanable_bytes <= 0:
            continue
        if not (ltc.need_compaction_now or ltc.cleanable_ratio > log.config.min_cleanable_ratio):
            continue
        if best is None or ltc.cleanable_ratio > best.cleanable_ratio:
            best = ltc
    return best


def group_segments_by_size(segments: Sequence[LogSegment], max_size: int, max_index_entries: int,
                           first_uncleanable_offset: int) -> list[list[LogSegment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments whose bytes together stay within ``max_size``
    (``segment.bytes``), whose index entries together stay within ``max_index_entries`` and whose offsets fit
    32 bits relative to the group's base; each group becomes one cleaned segment."""
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size = group[0].size
        entries = len(group[0].offset_index)
        time_entries = len(group[0].time_index)
        while rest:
            nxt = rest[0]
            last_offset = (rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable_offset - 1)
            if (size + nxt.size > max_size or entries + len(nxt.offset_index) > max_index_entries
                    or time_entries + len(nxt.time_index) > max_index_entries
                    or (nxt.size and last_offset - group[0].base_offset > (1 << 31) - 1)):
                break
            group.append(rest.pop(0))
            size += nxt.size
            entries += len(nxt.offset_index)
            time_entries += len(nxt.time_index)
        groups.append(group)
    return groups


@dataclass(slots=True)
class CleanerStats:
    """One cleaning's counts (Kafka's ``CleanerStats``): bytes and messages read and written, the dirty bytes and
    messages the map read, keyless records dropped (``invalid_messages``), and when it began and ended (ms)."""

    start_ms: int = 0
    end_ms: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    tombstones_removed: int = 0

    @property
    def recopy_ratio(self) -> float:
        """Bytes written over bytes read (Kafka's ``cleaner-recopy-percent``)."""
        return self.bytes_written / self.bytes_read if self.bytes_read else 0.0


def producer_last_offsets(log: PartitionLog) -> dict[int, int]:
    """Producer id -> the last offset of its last batch (Kafka's ``lastRecordsOfActiveProducers``)."""
    out = {}
    for pid, entry in log.producer_state.producers.items():
        if entry.batches:
            first, last, base = entry.batches[-1]
            out[pid] = base + (last - first) % (MAX_SEQUENCE + 1)
    return out


def filter_batch(batch: RecordBatch, offset_map: OffsetMap, now_ms: int, delete_retention_ms: int,
                 producer_last: Mapping[int, int], stats: CleanerStats, upper_bound: int = -1) -> RecordBatch | None:
    """What a cleaning keeps of ``batch`` (Kafka's ``MemoryRecords.filterTo`` with the cleaner's
    ``shouldRetainRecord`` and ``checkBatchRetention``; module docstring): the batch itself when nothing changes,
    a rewritten batch (same base offset, last offset, producer fields, leader epoch and codec) or None when it
    goes. ``now_ms`` is the cleaning's time; a batch ending just below ``upper_bound`` (the cleaning round's end
    offset) is kept even when emptied, so the cleaned log keeps its end (Kafka's ``checkBatchRetention``). The
    records are read from the bytes without being built
    (:mod:`kraftlog.protocol.record_filter`); only a batch that gets a delete horizon is decoded and encoded
    again (its record timestamps count from the horizon)."""
    scan = scan_keys(batch)
    base = batch.base_offset
    horizon = batch.delete_horizon_ms
    keep_deletes = horizon is None or now_ms < horizon
    kept: list[int] = []
    tombstone = False
    latest = offset_map.latest_offset
    get = offset_map.get
    for i, delta in enumerate(scan.deltas):
        offset = base + delta
        key = scan.keys[i]
        has_value = scan.has_value[i]
        if offset > latest:
            keep = True
        elif key is None:
            stats.invalid_messages += 1
            keep = False
        else:
            newest = offset >= get(key)
            keep = newest and (has_value or keep_deletes)
            if newest and not keep:
                stats.tombstones_removed += 1
        if keep:
            kept.append(i)
            tombstone = tombstone or not has_value
    n = len(scan.deltas)
    stats.messages_read += n
    stats.bytes_read += batch.size_bytes
    needs_horizon = tombstone and horizon is None
    last_of_producer = ((batch.producer_id >= 0 and producer_last.get(batch.producer_id) == batch.last_offset)
                        or batch.next_offset == upper_bound)
    if len(kept) == n and not needs_horizon and (n or last_of_producer):
        stats.messages_written += n
        stats.bytes_written += batch.size_bytes
        return batch  # Kafka writes the original batch
    if not kept and not last_of_producer:
        return None  # BatchRetention.DELETE_EMPTY
    if needs_horizon:
        records, deltas = batch.records, batch.offset_deltas
        out = RecordBatch(base, batch.partition_leader_epoch, tuple(records[i] for i in kept),
                          batch.producer_id, batch.producer_epoch, batch.base_sequence,
                          batch.attributes & ~ATTR_DELETE_HORIZON, tuple(deltas[i] for i in kept),
                          batch.last_offset_delta, now_ms + delete_retention_ms, batch.max_timestamp)
    else:
        out = retain(batch, scan, kept)
    stats.messages_written += len(kept)
    stats.bytes_written += out.size_bytes
    return out


@dataclass(slots=True)
class _Cursor:
    """Where a phase stands: segment ``k`` of its list, batch position ``i`` in it."""

    k: int = 0
    i: int = 0


@dataclass(slots=True)
class Cleaning:
    """One cleaning of ``log`` (module docstring), driven by :meth:`step`. ``disk``: the log's disk (the cleaned
    files are written there); ``target``: what :func:`grab_filthiest` chose; ``offset_map``: the cleaner's map
    (cleared here); ``now_ms``: when it starts (the time tombstones' horizons count from)."""

    disk: Disk
    log: PartitionLog
    target: LogToClean
    offset_map: OffsetMap
    now_ms: int
    stats: CleanerStats = field(default_factory=CleanerStats)
    #: "map", "clean", "done" or "aborted"
    phase: str = "map"
    #: why it gave up ("" unless aborted)
    reason: str = ""
    #: the offset the next cleaning's dirty section starts at (the map's end once mapped)
    end_offset: int = -1
    _dirty: list[LogSegment] = field(default_factory=list)
    _groups: list[list[LogSegment]] = field(default_factory=list)
    _cursor: _Cursor = field(default_factory=_Cursor)
    _group: int = 0
    _cleaned: LogSegment | None = None
    _producer_last: dict[int, int] = field(default_factory=dict)
    _mutations: int = 0

    def __post_init__(self) -> None:
        self.offset_map.clear()
        self.stats.start_ms = self.now_ms
        self._dirty = segments_between(self.log, self.target.first_dirty_offset, self.target.first_uncleanable_offset)
        self._producer_last = producer_last_offsets(self.log)
        self._mutations = self.log.mutations

    @property
    def finished(self) -> bool:
        return self.phase in ("done", "aborted")

    def abort(self, reason: str, now_ms: int) -> None:
        """Give up: the cleaned file being written is deleted. OSError propagates."""
        self.phase, self.reason = "aborted", reason
        self.stats.end_ms = now_ms
        if self._cleaned is not None:
            path = self._cleaned_path()
            if self.disk.exists(path):
                self.disk.delete(path, now_ms)
            self._cleaned = None

    def _cleaned_path(self) -> str:
        return f"{self.log.directory}/{cleaned_file(self._groups[self._group][0].base_offset)}"

    def step(self, now_ms: int, budget: int) -> int:
        """Run the cleaning on until about ``budget`` bytes of batches were read (at least one batch) or it
        finishes. Returns the bytes read and written (for a throttle). OSError propagates."""
        if self.finished:
            return 0
        if self.log.mutations != self._mutations:
            self.abort("the log's segments changed (a truncation or retention)", now_ms)
            return 0
        if self.phase == "map":
            return self._map_step(budget, now_ms)
        return self._clean_step(budget, now_ms)

    # ------------------------------------------------------------------ phase 1: the offset map
    def _map_step(self, budget: int, now_ms: int) -> int:
        start, end = self.target.first_dirty_offset, self.target.first_uncleanable_offset
        omap, cur, done = self.offset_map, self._cursor, 0
        full = False
        while cur.k < len(self._dirty) and done < budget and not full:
            seg = self._dirty[cur.k]
            batches = self.log.segment_batches(seg, cur.i, cur.i + 1)
            if not batches:
                # the segment is mapped whole (Kafka: "fast forward to the latest expected offset")
                nxt = self._dirty[cur.k + 1].base_offset if cur.k + 1 < len(self._dirty) else end
                omap.update_latest_offset(min(nxt, end) - 1)
                cur.k, cur.i = cur.k + 1, 0
                continue
            cur.i += 1
            batch = batches[0]
            done += batch.size_bytes
            self.stats.map_bytes_read += batch.size_bytes
            if batch.last_offset < start:
                continue
            scan = scan_keys(batch)
            base = batch.base_offset
            for delta, key in zip(scan.deltas, scan.keys, strict=True):
                offset = base + delta
                if offset < start or offset >= end or key is None:
                    continue
                if omap.full:
                    full = True  # the cleaning ends at the last offset mapped; the rest waits
                    break
                omap.put(key, offset)
                self.stats.map_messages_read += 1
        if full or cur.k >= len(self._dirty):
            self._start_clean_phase(now_ms)
        return done

    def _start_clean_phase(self, now_ms: int) -> None:
        self.end_offset = self.offset_map.latest_offset + 1
        log = self.log
        segs = segments_between(log, -1, self.end_offset)
        segs = [s for s in segs if s is not log.active_segment]
        self._groups = group_segments_by_size(segs, log.config.segment_bytes, log.config.max_index_entries,
                                              self.target.first_uncleanable_offset)
        self._cursor.k = self._cursor.i = 0
        self._group = 0
        self.phase = "clean"
        if not self._groups:
            self._finish(now_ms)

    # ------------------------------------------------------------------ phase 2: the rewrite
    def _clean_step(self, budget: int, now_ms: int) -> int:
        log, cur, done = self.log, self._cursor, 0
        config = log.config
        while done < budget and self.phase == "clean":
            group = self._groups[self._group]
            if self._cleaned is None:
                self._cleaned = LogSegment(log.directory, group[0].base_offset, now_ms, 0, config)
                self.disk.create(self._cleaned_path(), now_ms)
            if cur.k == len(group):
                self._swap(group, now_ms)
                continue
            seg = group[cur.k]
            batches = log.segment_batches(seg, cur.i, cur.i + 1)
            if not batches:
                cur.k, cur.i = cur.k + 1, 0
                continue
            cur.i += 1
            batch = batches[0]
            done += batch.size_bytes
            kept = filter_batch(batch, self.offset_map, self.now_ms, config.delete_retention_ms,
                                self._producer_last, self.stats, self.end_offset)
            if kept is not None:
                self.disk.append(self._cleaned_path(), kept, now_ms)
                self._cleaned.index(kept, kept.max_timestamp, now_ms, config.index_interval_bytes)
                done += kept.size_bytes
        return done

    def _swap(self, group: list[LogSegment], now_ms: int) -> None:
        cleaned = self._cleaned
        assert cleaned is not None
        cleaned.last_modified_ms = group[-1].last_modified_ms  # Kafka keeps the group's last modified time
        self.log.replace_segments(group, self._cleaned_path(), cleaned, now_ms)
        self._mutations = self.log.mutations
        self._cleaned = None
        self._group += 1
        self._cursor.k = self._cursor.i = 0
        if self._group == len(self._groups):
            self._finish(now_ms)

    def _finish(self, now_ms: int) -> None:
        log = self.log
        log.first_dirty_offset = max(log.log_start_offset, min(self.end_offset, log.log_end_offset))
        self.phase = "done"
        self.stats.end_ms = now_ms
