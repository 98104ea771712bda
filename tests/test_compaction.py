"""Issue 31: Kafka's log cleaner. Each test ports one of Kafka's ``LogCleanerTest`` / ``LogCleanerManagerTest``
cases as a fact about kraftlog's cleaner (:mod:`kraftlog.storage.cleaner`) over a
:class:`~kraftlog.storage.log.PartitionLog` on a SimDisk; the property test at the end drives random keyed appends,
tombstones, cleanings, crashes and restarts."""

from __future__ import annotations

import dataclasses

import pytest

from kraftlog.protocol.records import ATTR_DELETE_HORIZON, Record, RecordBatch
from kraftlog.storage.cleaner import (
    Cleaning,
    OffsetMap,
    cleanable_offsets,
    grab_filthiest,
    group_segments_by_size,
    log_to_clean,
)
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog
from kraftlog.storage.log_loader import cleaned_file, swap_file

DIR = "data/t-0"
KEY = ("t", 0)
DAY = 86_400_000


def kv(*pairs: tuple[str, str | None], ts: int = 0, pid: int = -1, seq: int = -1, codec: int = 0) -> RecordBatch:
    """A batch of (key, value) records; a None value is a tombstone."""
    return RecordBatch(-1, -1, tuple(Record(ts, k.encode(), None if v is None else v.encode()) for k, v in pairs),
                       producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq, attributes=codec)


def new_log(disk: SimDisk | None = None, now: int = 0, **cfg: object) -> PartitionLog:
    config = {"compact": True, "delete": False, "min_cleanable_ratio": 0.0} | cfg
    disk = disk if disk is not None else SimDisk(None)
    return PartitionLog(disk, DIR, LogConfig(**config), now)  # type: ignore[arg-type]


def append(log: PartitionLog, *batches: RecordBatch, now: int = 0) -> None:
    for b in batches:
        log.append_as_leader(b, 0, now)
    log.update_high_watermark(log.log_end_offset)


def roll(log: PartitionLog, now: int = 0) -> None:
    """Close the active segment (Kafka's tests call ``log.roll()``)."""
    log._roll(now)


def clean(log: PartitionLog, now: int = 0, memory: int = 1 << 20, budget: int = 1 << 30) -> Cleaning:
    """Run one cleaning of ``log`` to its end (what the cleaner thread does with the filthiest log)."""
    target = grab_filthiest({KEY: log}, now)
    assert target is not None, "nothing to clean"
    c = Cleaning(log._disk, log, target, OffsetMap(memory, 1.0), now)
    while not c.finished:
        c.step(now, budget)
    assert c.phase == "done", c.reason
    return c


def contents(log: PartitionLog) -> list[tuple[int, str, str | None]]:
    """(offset, key, value) of every record the log holds from its start, in offset order."""
    out = []
    for b in log.batches():
        for offset, r in zip(b.record_offsets(), b.records, strict=True):
            if offset >= log.log_start_offset:
                out.append((offset, r.key.decode() if r.key else "", r.value.decode() if r.value is not None else None))
    return out


def latest(log: PartitionLog) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for _o, k, v in contents(log):
        out[k] = v
    return out


# =========================================================================== what a cleaning keeps
def test_the_last_value_of_each_key_is_kept_with_its_offset():
    """LogCleanerTest.testCleanSegments: keys 0..4 written three times over three segments; the cleaning keeps each
    key's last record in the cleaned segments, at the offset it was written at; the active segment is untouched."""
    log = new_log(segment_bytes=5 * kv(("0", "v0-0")).size_bytes)
    for round_ in range(3):
        append(log, *(kv((str(k), f"v{k}-{round_}")) for k in range(5)))
    append(log, kv(("9", "tail")))  # the active segment
    assert [s.base_offset for s in log.segments] == [0, 5, 10, 15]
    clean(log)
    assert contents(log) == [(10 + k, str(k), f"v{k}-2") for k in range(5)] + [(15, "9", "tail")]
    assert log.log_end_offset == 16 and log.first_dirty_offset == 15
    # the cleaned segments keep their base offsets; a reader at an offset the cleaner removed gets the next batch
    assert [s.base_offset for s in log.segments] == [0, 5, 10, 15]
    assert log.read(3, 16, 1 << 20)[0].base_offset == 10
    assert log.record_at(3) is None and log.record_at(12) is not None
    # the replaced segment files wait file.delete.delay.ms as <base>.deleted.log (Kafka's asyncDelete)
    waiting = sorted(p for _t, p in log.pending_deletes)
    assert waiting == [f"{DIR}/{b:020d}.deleted.log" for b in (0, 5, 10)]
    assert log.delete_due_files(59_999) == 0 and log.delete_due_files(60_000) == 3
    assert not [p for p in log._disk.list(DIR + "/") if p.endswith(".deleted.log")]


def test_a_cleaned_batch_keeps_its_base_and_last_offset_and_its_producer_fields():
    """Kafka's MemoryRecords.filterTo (buildRetainedRecordsInto: overrideLastOffset): a batch that loses records
    keeps its base offset, its last offset, its producer id, epoch and base sequence and its partition leader
    epoch."""
    log = new_log(segment_bytes=200)
    append(log, kv(("a", "1"), ("b", "1"), ("c", "1"), pid=4, seq=0))
    roll(log)
    append(log, kv(("c", "2")))
    roll(log)
    clean(log)
    first = next(iter(log.batches()))
    assert (first.base_offset, first.last_offset, first.record_count) == (0, 2, 2)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (4, 0, 0)
    assert first.record_offsets() == (0, 1)
    assert latest(log) == {"a": "1", "b": "1", "c": "2"}


def test_a_producers_last_batch_is_kept_empty_so_its_sequence_survives():
    """LogCleanerTest.testDuplicateCheckAfterCleaning / testLogCleanerRetainsProducerLastSequence
    (BatchRetention.RETAIN_EMPTY): producer 7's only batch is superseded record by record; the cleaner keeps the
    batch with no record, so after a restart the producer's last sequence is known and its retry is a duplicate."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=200)
    append(log, kv(("a", "old"), ("b", "old"), pid=7, seq=0))
    roll(log)
    append(log, kv(("a", "new"), ("b", "new")))
    roll(log)
    clean(log)
    kept = next(iter(log.batches()))
    assert (kept.producer_id, kept.base_offset, kept.last_offset, kept.record_count) == (7, 0, 1, 0)
    log.seal(1)
    again = PartitionLog(disk, DIR, log.config, 2, clean_shutdown=True)
    assert again.dropped_at_load == []
    assert again.producer_state.producers[7].last_sequence == 1
    assert again.producer_state.check(kv(("a", "old"), ("b", "old"), pid=7, seq=0)) == (0, 0)  # a duplicate
    # a batch of a producer that wrote again later goes when emptied
    log2 = new_log(segment_bytes=200)
    append(log2, kv(("a", "x"), pid=3, seq=0))
    roll(log2)
    append(log2, kv(("a", "y"), pid=3, seq=1))
    roll(log2)
    clean(log2)
    assert [b.base_offset for b in log2.batches()] == [1]


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_a_rewritten_batch_keeps_its_codec(codec: int):
    """LogCleanerParameterizedIntegrationTest.cleanerTest over every compression type (MemoryRecords.filterTo builds
    the retained records with the original batch's compression): a compressed batch that loses records is written
    back compressed with the same codec and reads back."""
    log = new_log(segment_bytes=1000)
    append(log, kv(("a", "1"), ("b", "1"), ("c", "1"), codec=codec))
    roll(log)
    append(log, kv(("b", "2")))
    roll(log)
    clean(log)
    first = next(iter(log.batches()))
    assert first.attributes & 0x07 == codec
    back = RecordBatch.from_bytes(first.data)
    assert back.attributes & 0x07 == codec
    assert [(r.key, r.value) for r in back.records] == [(b"a", b"1"), (b"c", b"1")]
    assert back.record_offsets() == (0, 2) and back.last_offset == 2


def test_keyless_records_are_removed_by_the_cleaner():
    """LogCleaner.shouldRetainRecord: a record without a key (written before the topic became compacted) is not
    kept; Kafka counts it as an invalid message."""
    log = new_log(segment_bytes=1000)
    append(log, RecordBatch(-1, -1, (Record(0, None, b"nokey"), Record(0, b"k", b"v"))))
    roll(log)
    append(log, kv(("z", "1")))
    roll(log)
    c = clean(log)
    assert c.stats.invalid_messages == 1
    assert contents(log) == [(1, "k", "v"), (2, "z", "1")]


# =========================================================================== tombstones (KIP-534)
def test_a_tombstone_outlives_the_first_cleaning_by_delete_retention_ms():
    """LogCleanerTest.testCleanTombstone (KIP-534): the first cleaning that reaches a tombstone
    sets its batch's delete horizon to the cleaning's time + delete.retention.ms, whatever the tombstone's own
    timestamp; cleanings before the horizon keep it; the first one after removes it (and the value it deleted)."""
    log = new_log(segment_bytes=1000, delete_retention_ms=DAY)
    append(log, kv(("a", "1"), ("b", "1"), ts=0))
    roll(log)
    append(log, kv(("a", None), ts=0))  # a tombstone written at t=0
    roll(log)
    t1 = 10 * DAY
    clean(log, now=t1)
    assert latest(log) == {"a": None, "b": "1"}
    tomb = [b for b in log.batches() if b.base_offset == 2][0]
    assert tomb.attributes & ATTR_DELETE_HORIZON and tomb.delete_horizon_ms == t1 + DAY
    assert tomb.records[0].timestamp == 0  # the record's own timestamp is kept
    append(log, kv(("c", "1")))
    roll(log)
    clean(log, now=t1 + DAY - 1)
    assert latest(log)["a"] is None  # still within its horizon
    append(log, kv(("d", "1")))
    roll(log)
    c = clean(log, now=t1 + DAY)
    assert "a" not in latest(log) and c.stats.tombstones_removed == 1
    assert latest(log) == {"b": "1", "c": "1", "d": "1"}


# =========================================================================== what is cleanable
def test_the_cleaning_stops_at_the_high_watermark_and_the_active_segment():
    """LogCleanerManagerTest.testCleanableOffsetsForNone / testCleanableOffsetsActiveSegment: the first uncleanable
    dirty offset is min(HWM (the last stable offset), active segment base); a cleaning goes up to the base of the
    segment holding it (calculateCleanableBytes); records above keep every version."""
    log = new_log(segment_bytes=3 * kv(("a", "1")).size_bytes)
    for i in range(9):
        log.append_as_leader(kv(("a", str(i))), 0, 0)
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    log.update_high_watermark(4)  # inside the second segment
    assert cleanable_offsets(log, 0) == (0, 4)
    ltc = log_to_clean(KEY, log, 0)
    assert (ltc.first_dirty_offset, ltc.first_uncleanable_offset) == (0, 3)
    clean(log)
    assert [o for o, _k, _v in contents(log)] == [2, 3, 4, 5, 6, 7, 8]
    log.update_high_watermark(9)
    assert log_to_clean(KEY, log, 0).first_uncleanable_offset == 6  # the active segment's base
    clean(log)
    assert [o for o, _k, _v in contents(log)] == [5, 6, 7, 8]


def test_the_dirty_ratio_decides_and_the_filthiest_log_goes_first():
    """LogCleanerManagerTest.testGrabFilthiestCompactedLogReturnsLogWithDirtiestRatio: cleanable ratio = dirty
    bytes / (clean + dirty bytes); a log below min.cleanable.dirty.ratio is not cleaned; of two, the dirtier goes
    first; a log without cleanup.policy=compact is never a candidate."""
    seg = 2 * kv(("a", "1")).size_bytes
    a = new_log(segment_bytes=seg, min_cleanable_ratio=0.5)
    for i in range(4):
        append(a, kv(("k", str(i))))
    append(a, kv(("z", "tail")))
    assert log_to_clean(KEY, a, 0).cleanable_ratio == 1.0
    clean(a)  # now everything below the active segment is clean
    append(a, kv(("k", "x")), kv(("k", "y")))
    ltc = log_to_clean(KEY, a, 0)
    assert ltc.clean_bytes > 0 and 0 < ltc.cleanable_ratio < 1
    assert ltc.cleanable_ratio == ltc.cleanable_bytes / (ltc.clean_bytes + ltc.cleanable_bytes)
    strict = new_log(segment_bytes=seg, min_cleanable_ratio=0.99)
    for i in range(3):
        append(strict, kv(("k", str(i))))
    roll(strict)
    assert grab_filthiest({KEY: strict}, 0) is not None  # all dirty: ratio 1
    deleting = new_log(segment_bytes=seg, compact=False, delete=True)
    for i in range(3):
        append(deleting, kv(("k", str(i))))
    roll(deleting)
    assert grab_filthiest({("d", 0): deleting}, 0) is None
    assert grab_filthiest({("d", 0): deleting, KEY: strict}, 0).key == KEY  # type: ignore[union-attr]


def test_min_compaction_lag_keeps_recent_segments_dirty():
    """LogCleanerManagerTest.testCleanableOffsetsForTime: with min.compaction.lag.ms, the first segment holding a
    record younger than the lag (its largest timestamp) is the first uncleanable one
    (testCleanableOffsetsForShortTime: once every sealed segment is older than the lag, the active segment
    bounds it)."""
    seg = 2 * kv(("a", "1")).size_bytes
    log = new_log(segment_bytes=seg, min_compaction_lag_ms=1000)
    append(log, kv(("a", "1"), ts=100), kv(("a", "2"), ts=100))  # segment 0: old
    append(log, kv(("a", "3"), ts=5000), kv(("a", "4"), ts=5000))  # segment 2: young at t=5500
    append(log, kv(("b", "tail"), ts=5000))
    assert log_to_clean(KEY, log, 5500).first_uncleanable_offset == 2
    assert log_to_clean(KEY, log, 6001).first_uncleanable_offset == 4


def test_max_compaction_lag_forces_a_cleaning_below_the_dirty_ratio():
    """LogCleanerIntegrationTest.testMaxLogCompactionLag (LogCleanerManager's needCompactionNow): a log whose oldest
    dirty batch is older than max.compaction.lag.ms is cleaned although its dirty ratio is below
    min.cleanable.dirty.ratio."""
    seg = 2 * kv(("a", "1")).size_bytes
    log = new_log(segment_bytes=seg, min_cleanable_ratio=0.9, max_compaction_lag_ms=1000)
    for i in range(4):
        append(log, kv(("k", str(i)), ts=0))
    append(log, kv(("z", "t"), ts=0))
    clean(log)
    append(log, kv(("k", "late"), ts=100))  # a small dirty section
    append(log, kv(("z", "t2"), ts=100))
    assert log_to_clean(KEY, log, 500).cleanable_ratio < 0.9
    assert grab_filthiest({KEY: log}, 500) is None
    assert grab_filthiest({KEY: log}, 1200) is not None and log_to_clean(KEY, log, 1200).need_compaction_now


def test_a_checkpoint_outside_the_log_is_reset_to_the_log_start():
    """LogCleanerManagerTest.testCleanableOffsetsNeedsCheckpointReset / testDirtyOffsetResetIfLargerThanEndOffset:
    a first dirty offset above the LEO or below the log start offset counts as the log start offset, and the
    log's is reset, chosen for cleaning or not (testCheckpointUpdatedForInvalidOffsetNoCleaning)."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=200)
    append(log, kv(("a", "1")), kv(("a", "2")))
    roll(log)
    log.first_dirty_offset = 99
    assert log_to_clean(KEY, log, 0).first_dirty_offset == 0
    assert grab_filthiest({KEY: log}, 0) is not None and log.first_dirty_offset == 0
    again = PartitionLog(disk, DIR, log.config, 0, first_dirty_offset=99)
    assert again.first_dirty_offset == again.log_end_offset == 2


# =========================================================================== the offset map and segment groups
def test_a_full_offset_map_ends_the_cleaning_where_it_stopped():
    """LogCleanerTest.testPartialSegmentClean / testCleaningWithUncleanableSection: with room for two keys, each
    cleaning maps the next two keys of the dirty section and ends at the last offset it mapped (the first dirty
    offset moves there); what lies past it keeps every version until a later cleaning maps it."""
    log = new_log(segment_bytes=10_000)
    append(log, *(kv((k, "1")) for k in "abcd"), *(kv((k, "2")) for k in "abcd"))
    roll(log)
    ends = [clean(log, memory=2 * 24).end_offset for _ in range(2)]
    assert ends == [2, 4] and log.first_dirty_offset == 4
    assert [o for o, _k, _v in contents(log)] == list(range(8))  # a@0..d@3 were each their key's latest so far
    assert clean(log, memory=2 * 24).end_offset == 6  # maps a@4, b@5: a@0 and b@1 go
    assert [o for o, _k, _v in contents(log)] == [2, 3, 4, 5, 6, 7]
    clean(log, memory=2 * 24)
    assert contents(log) == [(4, "a", "2"), (5, "b", "2"), (6, "c", "2"), (7, "d", "2")]


def test_small_segments_are_cleaned_into_one_segment():
    """LogCleanerTest.testSegmentGrouping: consecutive segments are grouped while their bytes stay within
    segment.bytes (and their indexes within segment.index.bytes); each group becomes one segment."""
    one = kv(("k0", "v")).size_bytes
    log = new_log(segment_bytes=one)
    for i in range(6):
        append(log, kv((f"k{i}", "v")))
    sealed = log.segments[:-1]
    groups = group_segments_by_size(sealed, 2 * one, 1000, log.active_segment.base_offset)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 1], [2, 3], [4]]
    assert group_segments_by_size(sealed, 2 * one, 1, log.active_segment.base_offset) == [[s] for s in sealed]
    big = new_log(segment_bytes=one)
    for i in range(6):
        append(big, kv((f"k{i}", "v")))
    big.config = dataclasses.replace(big.config, segment_bytes=3 * one)  # the topic's segment.bytes grew
    clean(big)
    assert [s.base_offset for s in big.segments] == [0, 3, 5]
    assert [o for o, _k, _v in contents(big)] == [0, 1, 2, 3, 4, 5]


# =========================================================================== crashes, aborts, I/O errors
def test_a_crash_mid_cleaning_leaves_the_log_as_it_was():
    """Kafka's LogLoader deletes a ``.cleaned`` file: a cleaning the node crashed in has changed nothing."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=10_000)
    append(log, *(kv(("a", str(i))) for i in range(20)))
    roll(log)
    log.flush(0)
    before = contents(log)
    target = grab_filthiest({KEY: log}, 0)
    assert target is not None
    c = Cleaning(disk, log, target, OffsetMap(1 << 20), 0)
    while c.phase == "map":
        c.step(0, 1)
    c.step(0, 3 * kv(("a", "1")).size_bytes)
    assert disk.exists(f"{DIR}/{cleaned_file(0)}")
    disk.crash("unflushed", 1)
    again = PartitionLog(disk, DIR, log.config, 2)
    assert contents(again) == before and not disk.exists(f"{DIR}/{cleaned_file(0)}")


class _SwapCrashDisk(SimDisk):
    """A SimDisk whose second rename of a replaced segment to ``.deleted.log`` fails (EIO): the process stops in
    the middle of a swap, the swap file written, one old segment set aside, the others still in place."""

    __slots__ = ("armed", "renames")

    def __init__(self) -> None:
        super().__init__(None)
        self.armed = True
        self.renames = 0

    def rename(self, src: str, dst: str, now_ms: int) -> None:
        if self.armed and dst.endswith(".deleted.log"):
            self.renames += 1
            if self.renames == 2:
                raise OSError(5, "Input/output error", src)
        super().rename(src, dst, now_ms)


def test_a_crash_during_the_swap_is_completed_at_load():
    """Kafka's LogLoader completes a ``.swap`` file: the cleaned segment replaces the segments it covers."""
    disk = _SwapCrashDisk()
    one = kv(("a", "1")).size_bytes
    log = new_log(disk, segment_bytes=one)
    for i in range(4):
        append(log, kv(("a", str(i))))
    append(log, kv(("b", "t")))
    log.config = dataclasses.replace(log.config, segment_bytes=10 * one)
    log.flush(0)
    target = grab_filthiest({KEY: log}, 0)
    assert target is not None
    c = Cleaning(disk, log, target, OffsetMap(1 << 20), 0)
    with pytest.raises(OSError):
        while not c.finished:
            c.step(0, 1 << 20)
    assert disk.exists(f"{DIR}/{swap_file(0)}")
    disk.armed = False
    disk.crash("unflushed", 1)
    again = PartitionLog(disk, DIR, log.config, 2)
    assert again.swaps_completed and again.dropped_at_load == []
    assert not [p for p in disk.list(DIR + "/") if p.endswith((".deleted.log", ".swap.log", ".cleaned.log"))]
    assert contents(again) == [(3, "a", "3"), (4, "b", "t")]
    assert [s.base_offset for s in again.segments] == [0, 4]


def test_a_truncation_during_a_cleaning_aborts_it():
    """LogCleanerManager.abortAndPauseCleaning (LogManager.truncateTo): a cleaning under way gives up when the log's
    sealed segments change, its cleaned file deleted; the log holds what the truncation left."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=3 * kv(("a", "1")).size_bytes)
    append(log, *(kv(("a", str(i))) for i in range(9)))
    target = grab_filthiest({KEY: log}, 0)
    assert target is not None
    c = Cleaning(disk, log, target, OffsetMap(1 << 20), 0)
    c.step(0, 1)
    log.truncate_to(4, 0)
    c.step(0, 1 << 20)
    assert c.phase == "aborted" and "changed" in c.reason
    assert [o for o, _k, _v in contents(log)] == [0, 1, 2, 3]
    assert not any(p.endswith(".cleaned.log") for p in disk.list(DIR + "/"))


# =========================================================================== property: what a reader sees
_KEYS = ("a", "b", "c", "d", "e")
_RETENTION_MS = 5_000


def _ops():
    from hypothesis import strategies as st

    append = st.tuples(st.just("append"), st.lists(st.tuples(st.sampled_from(_KEYS), st.booleans()), min_size=1,
                                                    max_size=3))
    clean = st.tuples(st.just("clean"), st.integers(1, 4))
    other = st.tuples(st.sampled_from(["roll", "crash", "restart", "wait"]), st.integers(1, 4))
    partial = st.tuples(st.just("crash-mid-cleaning"), st.integers(1, 6))
    return st.lists(st.one_of(append, append, append, clean, clean, other, partial), min_size=10, max_size=80)


def _check_reader(log: PartitionLog, acked: list[tuple[int, str, str | None]], now: int,
                  first_horizon_from: dict[int, int]) -> None:
    """What a reader from the log start sees: offsets increase, every record is one that was acknowledged at
    that offset, and every key's last record is its latest acknowledged one, or, for a tombstone, nothing once
    delete.retention.ms passed since a cleaning that could have reached it."""
    seen = contents(log)
    offsets = [o for o, _k, _v in seen]
    assert offsets == sorted(set(offsets))
    by_offset = {o: (k, v) for o, k, v in acked}
    assert all(by_offset.get(o) == (k, v) for o, k, v in seen), "a record that was never acknowledged there"
    last_seen: dict[str, tuple[int, str | None]] = {k: (o, v) for o, k, v in seen}
    last_acked: dict[str, tuple[int, str | None]] = {k: (o, v) for o, k, v in acked}
    for key, (offset, value) in last_acked.items():
        if key in last_seen:
            assert last_seen[key] == (offset, value), f"key {key}: {last_seen[key]} instead of {(offset, value)}"
        else:
            assert value is None, f"key {key} lost its latest value {value!r} at offset {offset}"
            start = first_horizon_from.get(offset)
            assert start is not None and now >= start + _RETENTION_MS, f"tombstone of {key} removed too early"


def _settings():
    from hypothesis import HealthCheck, settings

    return settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_a_reader_sees_every_keys_latest_acknowledged_value_through_cleanings_crashes_and_restarts():
    """Property (issue 31): random keyed appends and tombstones (each acknowledged once flushed), cleanings, rolls,
    time passing, crashes (losing what was not fsynced, sometimes in the middle of a cleaning) and clean restarts:
    a reader from the log start always sees, for every key, the latest acknowledged value, or its tombstone
    within delete.retention.ms of the first cleaning that could reach it."""
    from hypothesis import given

    @_settings()
    @given(_ops())
    def run(ops: list) -> None:
        disk = SimDisk(None)
        config = LogConfig(compact=True, delete=False, min_cleanable_ratio=0.0, segment_bytes=300,
                           delete_retention_ms=_RETENTION_MS)
        now = 0
        log = PartitionLog(disk, DIR, config, now)
        acked: list[tuple[int, str, str | None]] = []
        first_horizon_from: dict[int, int] = {}  # tombstone offset -> start of the first cleaning that covered it
        checkpoint = 0
        n = 0

        def start_cleaning() -> Cleaning | None:
            target = grab_filthiest({KEY: log}, now)
            if target is None:
                return None
            for o, _k, v in acked:
                if v is None and o < target.first_uncleanable_offset:
                    first_horizon_from.setdefault(o, now)
            return Cleaning(disk, log, target, OffsetMap(4 * 24, 1.0), now)

        def reload(clean_shutdown: bool) -> PartitionLog:
            again = PartitionLog(disk, DIR, config, now, clean_shutdown=clean_shutdown, first_dirty_offset=checkpoint)
            again.update_high_watermark(again.log_end_offset)
            assert again.log_end_offset == (acked[-1][0] + 1 if acked else 0)
            return again

        for op, arg in ops:
            now += 700
            if op == "append":
                pairs = [(k, None if tomb else f"v{n}-{i}") for i, (k, tomb) in enumerate(arg)]
                n += 1
                stored = log.append_as_leader(kv(*pairs, ts=now), 0, now)
                log.flush(now)  # acknowledged once durable
                log.update_high_watermark(log.log_end_offset)
                acked += [(o, k, v) for o, (k, v) in zip(stored.record_offsets(), pairs, strict=True)]
            elif op == "roll":
                log._roll(now)
            elif op == "wait":
                now += arg * 2_000
            elif op == "clean":
                c = start_cleaning()
                if c is not None:
                    while not c.finished:
                        c.step(now, arg * 60)
                    checkpoint = log.first_dirty_offset
            elif op == "crash-mid-cleaning":
                c = start_cleaning()
                for _ in range(arg):
                    if c is None or c.finished:
                        break
                    c.step(now, 60)
                disk.crash("unflushed", now)
                log = reload(False)
            elif op == "crash":
                disk.crash("unflushed", now)
                log = reload(False)
            else:  # a clean restart
                log.seal(now)
                log = reload(True)
                assert log.dropped_at_load == [] and log.checksum_mismatches == []
            _check_reader(log, acked, now, first_horizon_from)

    run()


# =========================================================================== the broker's cleaner
def _cleaner(logs: dict, disk: SimDisk, **settings: object):
    from kraftlog.broker.log_cleaner import CleanerSettings, LogCleaner

    failures: list[str] = []
    notes: list[str] = []
    checkpoints: list[int] = []
    cleaner = LogCleaner(disk, logs, CleanerSettings(**settings),  # type: ignore[arg-type]
                         lambda now, exc, what: failures.append(f"{what}: {exc}"), notes.append, checkpoints.append)
    return cleaner, failures, notes, checkpoints


def test_the_cleaner_runs_in_slices_backs_off_when_idle_and_checkpoints_when_done():
    """Kafka's CleanerThread.doWork: the filthiest log is cleaned, then cleaner-offset-checkpoint is written
    (doneCleaning); with nothing to clean the cleaner waits log.cleaner.backoff.ms. kraftlog's cleaning reads
    about kraftlog.log.cleaner.slice.bytes per tick, 1 ms apart, and log.cleaner.io.max.bytes.per.second spaces
    the slices further (Kafka's Throttler)."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=400)
    append(log, *(kv((f"k{i % 3}", str(i))) for i in range(30)))
    cleaner, failures, notes, checkpoints = _cleaner({KEY: log}, disk, backoff_ms=15_000, slice_bytes=100,
                                                     max_io_bytes_per_second=100_000.0)
    now, ticks = 0, 0
    assert cleaner.next_deadline(1 << 40) == 0
    while cleaner.cleanings == 0:
        cleaner.tick(now)
        ticks += 1
        assert cleaner.next_run_ms > now
        now = cleaner.next_run_ms
        assert ticks < 1000
    assert ticks > 10  # many slices
    assert checkpoints and failures == [] and "cleaned t-0 up to offset" in notes[-1]
    assert cleaner.last_stats is not None and cleaner.last_stats.recopy_ratio < 1
    cleaner.tick(now)  # nothing left to clean: back off
    assert cleaner.cleaning is None and cleaner.next_run_ms == now + 15_000
    assert cleaner.next_deadline(1 << 40) == now + 15_000
    assert _cleaner({KEY: new_log(compact=False)}, disk)[0].next_deadline(7) == 7  # no compacted log: no timer


def test_an_io_error_while_cleaning_takes_the_log_directory_offline():
    """Issue 31 / Kafka's LogCleaner: an IOException while cleaning goes to the LogDirFailureChannel: the cleaner
    hands the OSError to the directory's failure handler (the broker takes the directory offline) and stops;
    the log on the disk is as it was (a restart deletes the cleaned file)."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=400)
    append(log, *(kv((f"k{i % 3}", str(i))) for i in range(30)))
    log.flush(0)
    before = contents(log)
    cleaner, failures, _notes, _checkpoints = _cleaner({KEY: log}, disk, slice_bytes=100)
    cleaner.tick(0)
    disk.set_full(True)
    now = 1
    while not failures:
        cleaner.tick(now)
        now += 1
        assert now < 1000
    assert failures == ["cleaning t-0: [Errno 28] No space left on device: " + failures[0].split(": ", 2)[2]]
    assert cleaner.cleaning is None
    disk.set_full(False)
    disk.crash("unflushed", now)
    assert contents(PartitionLog(disk, DIR, log.config, now)) == before


def test_a_batch_rewritten_from_its_bytes_equals_one_built_from_its_records():
    """kraftlog.protocol.record_filter.retain (MemoryRecords.filterTo without building records) against the
    records path: for random batches, codecs and kept subsets, the rewritten batch holds the kept records at their
    offsets, keeps the header fields and last offset, and is valid Kafka v2 (its CRC checks); an emptied batch is
    written uncompressed, its timestamps the batch's max (Kafka's writeEmptyHeader)."""
    from hypothesis import given
    from hypothesis import strategies as st

    from kraftlog.protocol.record_filter import retain, scan_keys

    record = st.builds(Record, st.integers(0, 10**12), st.one_of(st.none(), st.binary(max_size=8)),
                       st.one_of(st.none(), st.binary(max_size=20)),
                       st.lists(st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))),
                                max_size=2).map(tuple))

    @_settings()
    @given(st.lists(record, min_size=1, max_size=8), st.sampled_from([0, 1, 2, 3, 4]), st.data())
    def run(records: list, codec: int, data) -> None:
        original = RecordBatch.from_bytes(RecordBatch(40, 3, tuple(records), 9, 1, 5, attributes=codec).data)
        keep = sorted(data.draw(st.sets(st.integers(0, len(records) - 1))))
        out = retain(original, scan_keys(original), keep)
        back = RecordBatch.from_bytes(out.data)  # the CRC-32C checks
        assert back.records == tuple(records[i] for i in keep)
        assert back.record_offsets() == tuple(40 + i for i in keep)
        assert (back.base_offset, back.last_offset, back.partition_leader_epoch) == (40, 40 + len(records) - 1, 3)
        assert (back.producer_id, back.producer_epoch, back.base_sequence) == (9, 1, 5)
        assert back.attributes & 0x07 == (codec if keep else 0)
        assert back.max_timestamp == (max(records[i].timestamp for i in keep) if keep else original.max_timestamp)

    run()


def test_retention_during_a_cleaning_of_a_compact_delete_log_aborts_it():
    """cleanup.policy=compact,delete: retention deletes old segments of a compacted log (Kafka's LogCleanerManager
    keeps the cleaner off a log while its segments are deleted); a cleaning under way gives up and the next one
    cleans what retention left."""
    disk = SimDisk(None)
    log = new_log(disk, delete=True, retention_bytes=2 * 200, segment_bytes=200)
    append(log, *(kv((f"k{i % 4}", str(i)), ts=i) for i in range(20)))
    target = grab_filthiest({KEY: log}, 0)
    assert target is not None
    c = Cleaning(disk, log, target, OffsetMap(1 << 20), 0)
    c.step(0, 1)
    deleted, rule = log.delete_old_segments(0)
    assert deleted and rule == "retention.bytes"
    c.step(0, 1 << 20)
    assert c.phase == "aborted"
    clean(log)
    assert all(o >= log.log_start_offset for o, _k, _v in contents(log))
    assert latest(log) == {f"k{k}": str(16 + k) for k in range(4)}


def test_a_log_whose_topic_stopped_being_compacted_loads_its_gaps_below_the_checkpoint():
    """A topic switched from compact to delete keeps its cleaned segments: the load tolerates the gaps below the
    cleaner checkpoint (cleaner-offset-checkpoint), and still treats a gap above it as damage."""
    disk = SimDisk(None)
    log = new_log(disk, segment_bytes=3 * kv(("a", "1")).size_bytes)
    append(log, *(kv(("a", str(i))) for i in range(9)))
    clean(log)
    assert log.first_dirty_offset == 6 and [o for o, _k, _v in contents(log)] == [5, 6, 7, 8]
    log.flush(0)
    deleting = LogConfig(compact=False, delete=True, segment_bytes=log.config.segment_bytes)
    kept = PartitionLog(disk, DIR, deleting, 1, first_dirty_offset=6)
    assert kept.dropped_at_load == [] and [o for o, _k, _v in contents(kept)] == [5, 6, 7, 8]
    # Without the checkpoint the first gap is damage: the load truncates there and reports it (dropped_at_load:
    # the broker registers as after an unclean shutdown, KIP-966), as it does for a lost segment file.
    cut = PartitionLog(disk, DIR, deleting, 2)
    assert cut.dropped_at_load and "where offset 0 was expected" in cut.dropped_at_load[0].reason


def test_the_checker_accounts_for_records_the_cleaner_removed_and_for_tombstones():
    """Issue 31's checker rule (kraftlog.check.checkers.compaction_state): a record missing from a compacted
    partition's final log is lost only if no later record with its key survives and no later acknowledged
    tombstone deleted its key; a tombstone the log still holds is present, and one missing is accounted for once
    delete.retention.ms passed since it was written (the earliest the cleaner may remove it)."""
    from kraftlog.check.checkers import Compaction, compaction_state, lost_acked

    c: Compaction = {
        "keys": {"v1": "a", "v2": "a", "t3": "b", "v4": "b", "t5": "c", "t6": "d", "v7": "e"},
        "latest": {"a": 2, "c": 5},  # a's last record (v2 at 2) and c's tombstone (t5 at 5) are in the log
        "acked_offsets": {"v1": 1, "v2": 2, "t3": 3, "v4": 0, "t5": 5, "t6": 6, "v7": 7},
        "tombstones": {"b": [(3, 1_000)], "c": [(5, 2_000)], "d": [(6, 9_000)]},
        "delete_retention_ms": 5_000, "end_ms": 10_000}
    assert compaction_state(c, 1, "v1") == "removed"  # a later record of a survives
    assert compaction_state(c, 0, "v4") == "removed"  # a later tombstone deleted b
    assert compaction_state(c, 3, "t3") == "removed"  # b's tombstone, written 9 s before the end: past 5 s
    assert compaction_state(c, 5, "t5") == "present"  # c's tombstone is still the log's last record of c
    assert compaction_state(c, 6, "t6") is None  # d's tombstone written 1 s before the end: removed too early
    assert compaction_state(c, 7, "v7") is None  # e has nothing later: lost
    final = {"t-0": {2: ("v2", 0), 5: (None, 0)}}
    acked = [("p", "t", 0, v, "all") for v in ("v1", "v2", "t3", "v4", "t5", "t6", "v7")]
    compacted: list = []
    lost, _ = lost_acked(acked, final, None, None, {"t-0": c}, compacted)
    assert [r["value"] for r in lost] == ["t6", "v7"]
    assert [r["value"] for r in compacted] == ["v1", "t3", "v4"]  # t5 is present, not counted


def test_a_batch_that_does_not_decode_makes_the_partition_uncleanable_not_the_node_fail():
    """Kafka's LogCleaningException (markPartitionUncleanable): damage the load did not check (a CRC-valid batch
    whose records do not frame, below the recovery point) stops the cleaning of that partition until a restart,
    with a line saying why; the other logs are still cleaned and nothing is raised to the node."""
    import struct

    from crc32c import crc32c

    disk = SimDisk(None)
    bad_log = new_log(disk, segment_bytes=400)
    good = kv(("a", "1"), ("b", "2"))
    data = bytearray(good.with_offsets(0, 0).data)
    data[61] = 0x7E  # the first record's length varint: far past the batch's end
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    bad_log.append_as_follower([RecordBatch.from_bytes(bytes(data))], 0)
    bad_log.append_as_follower([kv(("a", "3")).with_offsets(2, 0)], 0)
    roll(bad_log)
    bad_log.update_high_watermark(bad_log.log_end_offset)
    other = PartitionLog(disk, "data/u-0", bad_log.config, 0)
    append(other, *(kv(("k", str(i))) for i in range(6)))
    roll(other)
    cleaner, failures, notes, _checkpoints = _cleaner({KEY: bad_log, ("u", 0): other}, disk)
    now = 0
    while cleaner.cleanings == 0 and now < 100:
        cleaner.tick(now)
        now = cleaner.next_run_ms
    assert failures == [] and set(cleaner.uncleanable) == {KEY}
    assert "CorruptRecordError" in cleaner.uncleanable[KEY] and any("t-0 is uncleanable" in n for n in notes)
    assert cleaner.cleanings == 1 and [v for _o, _k, v in contents(other)] == ["5"]
    assert grab_filthiest({KEY: bad_log}, now, cleaner.uncleanable) is None
    assert not [p for p in disk.list("data/") if p.endswith(".cleaned.log")]


def test_the_compaction_story_loses_nothing_and_its_consumer_sees_no_truncation(library):
    """scenarios/compaction-keeps-the-latest-value.yaml at every level: brokers crash and restart while each
    cleans its replica; nothing acknowledged is lost (every missing record is one the cleaner was entitled to
    remove), the consumer's reads of since-cleaned records and tombstones are no truncation, no poll-skip, no
    duplicate, no invariant broken."""
    from kraftlog.level import Level

    for level in ("classic", "kip903", "elr", "urm"):
        v = library.run("compaction-keeps-the-latest-value", Level.parse(level)).verdict
        assert v["passed"] and v["safe"] and v["lost_acked"] == 0, (level, v["invariant_violations"])
        assert v["compacted_acked"] > 1000 and v["final"]["partitions"]["t-0"]["isr"] == [0, 1, 2]
        assert v["undetected_truncations"] == 0 and v["anomalies"] == {
            "lost-write": 0, "duplicate": 0, "inconsistent-offsets": 0, "nonmonotonic-poll": 0, "poll-skip": 0}
