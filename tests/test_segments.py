"""Issue 30: a log of segments, as Kafka's ``UnifiedLog``/``LogSegment``/``LogLoader`` behave. Each test ports
one of Kafka's cases (``UnifiedLogTest``, ``LogSegmentTest``, ``LogLoaderTest``) as a fact about kraftlog's
:class:`~kraftlog.storage.log.PartitionLog` on a SimDisk (tests/test_file_disk.py runs the same log on files)."""

from __future__ import annotations

import random

import pytest

from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage.checkpoints import read_offset_checkpoint
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import (
    LogConfig,
    PartitionLog,
    RecordBatchTooLargeError,
    segment_file,
    segment_paths,
)

DIR = "data/t-0"


def rec_batch(n: int = 1, ts: int = 0, tag: str = "v", epoch: int = -1, base: int = -1, pid: int = -1,
              seq: int = -1) -> RecordBatch:
    return RecordBatch(base, epoch, tuple(Record(ts, None, f"{tag}{i:04d}".encode()) for i in range(n)),
                       producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)


ONE = rec_batch().size_bytes  # one record's batch, in bytes


def new_log(disk: SimDisk | None = None, now: int = 0, **cfg) -> PartitionLog:
    return PartitionLog(disk if disk is not None else SimDisk(None), DIR, LogConfig(**cfg), now)


def bases(log: PartitionLog) -> list[int]:
    return [s.base_offset for s in log.segments]


# =========================================================================== rolling (LogSegment.shouldRoll)
def test_a_segment_rolls_before_a_batch_would_take_it_past_segment_bytes():
    """UnifiedLogTest.testSizeBasedLogRoll: with room for three batches, the fourth starts a new segment named
    by its base offset; every segment stays within segment.bytes."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=3 * ONE)
    for i in range(7):
        log.append_as_leader(rec_batch(), 0, i)
    assert bases(log) == [0, 3, 6]
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(b)}" for b in (0, 3, 6)]
    assert segment_file(3) == "00000000000000000003.log"
    assert all(s.size <= 3 * ONE for s in log.segments)
    assert [len(list(d.scan(s.path))) for s in log.segments] == [3, 3, 1]


def test_a_leader_batch_larger_than_segment_bytes_is_refused_and_nothing_is_appended():
    """UnifiedLogTest.testMessageSetSizeCheck: RecordBatchTooLargeException (RECORD_LIST_TOO_LARGE)."""
    log = new_log(segment_bytes=ONE + 5)
    with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum configured segment size"):
        log.append_as_leader(rec_batch(2), 0, 1)
    assert log.log_end_offset == 0 and log.epoch_cache.entries() == []


def test_a_follower_takes_a_batch_larger_than_its_segment_bytes_in_a_segment_of_its_own():
    log = new_log(segment_bytes=ONE + 5)
    big = rec_batch(3, epoch=0, base=0).with_offsets(0, 0)
    log.append_as_follower([rec_batch(1).with_offsets(0, 0)], 1)
    log.append_as_follower([big.with_offsets(1, 0)], 2)
    assert bases(log) == [0, 1] and log.log_end_offset == 4


def test_a_segment_rolls_once_a_batch_timestamp_is_segment_ms_past_its_first_batch():
    """UnifiedLogTest.testTimeBasedLogRoll: the roll is decided by the records' timestamps (the first batch's
    max timestamp in the segment against the new batch's), not by the broker's clock."""
    log = new_log(segment_ms=1000)
    log.append_as_leader(rec_batch(ts=5000), 0, 5000)
    log.append_as_leader(rec_batch(ts=6000), 0, 9999)  # 1000 ms after the first: not more than segment.ms
    assert bases(log) == [0]
    log.append_as_leader(rec_batch(ts=6001), 0, 6001)
    assert bases(log) == [0, 2]
    log.append_as_leader(rec_batch(ts=6002), 0, 10**9)  # the new segment's clock starts at 6001
    assert bases(log) == [0, 2]


def test_segment_jitter_brings_the_roll_forward_by_a_per_segment_draw():
    """UnifiedLogTest.testTimeBasedLogRollJitter: each segment's roll time is segment.ms - jitter, the jitter
    drawn in [0, min(segment.jitter.ms, segment.ms)) when the segment is created (a Random passed in)."""
    log = PartitionLog(SimDisk(None), DIR, LogConfig(segment_ms=1000, segment_jitter_ms=500), 0,
                       rng=random.Random(7))
    jitter = log.active_segment.jitter_ms
    assert 0 < jitter < 500
    log.append_as_leader(rec_batch(ts=0), 0, 0)
    log.append_as_leader(rec_batch(ts=1000 - jitter), 0, 1)
    assert bases(log) == [0]
    log.append_as_leader(rec_batch(ts=1001 - jitter), 0, 2)
    assert bases(log) == [0, 2]


def test_a_full_offset_index_rolls_the_segment():
    """UnifiedLogTest.testIndexRebuild's cousin, LogSegment.shouldRoll's offsetIndex.isFull: with an index of
    two 8-byte entries and an entry after every batch, the segment rolls once both are taken."""
    log = new_log(segment_index_bytes=24, index_interval_bytes=0)
    for i in range(6):
        log.append_as_leader(rec_batch(), 0, i)
    # Entries are added before the 2nd, 3rd and 4th batches (bytes since the last entry > 0): full after four.
    # The time index (12-byte entries, two here) takes one entry: the timestamps never grow.
    assert bases(log) == [0, 4] and len(log.segments[0].offset_index) == 3
    assert len(log.segments[0].time_index) == 1
    rising = new_log(segment_index_bytes=24, index_interval_bytes=0)
    for i in range(6):
        rising.append_as_leader(rec_batch(ts=i), 0, i)
    assert bases(rising) == [0, 3] and len(rising.segments[0].time_index) == 2  # the time index filled


def test_a_batch_whose_offsets_overflow_the_relative_offset_starts_a_new_segment():
    """LogSegment.canConvertToRelativeOffset: an offset more than Int.MaxValue past the base rolls."""
    log = new_log()
    log.truncate_fully_and_start_at(10, 0)
    log.append_as_follower([rec_batch(1).with_offsets(10, 0)], 1)
    far = 10 + 2**31  # a follower's fetched batch may start anywhere the leader put it (a compacted topic)
    log.truncate_fully_and_start_at(10, 2)
    log.append_as_follower([rec_batch(1).with_offsets(10, 0)], 3)
    seg = log.active_segment
    assert not seg.should_roll(log.config, ONE, 0, 10 + 2**31 - 1, 4)
    assert seg.should_roll(log.config, ONE, 0, far, 4)


def test_a_roll_flushes_the_segments_before_the_new_one_and_moves_the_recovery_point():
    """Kafka's roll schedules flushUptoOffsetExclusive(newSegment.baseOffset): the rolled segment becomes
    durable and the recovery point reaches the new segment's base; nothing else moves it but a flush."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE)
    log.append_as_leader(rec_batch(), 0, 1)
    log.append_as_leader(rec_batch(), 0, 2)
    assert log.recovery_point == 0 and d.unflushed_items(log.segments[0].path) == 2
    log.append_as_leader(rec_batch(), 0, 3)
    assert bases(log) == [0, 2] and log.recovery_point == 2
    assert d.unflushed_items(log.segments[0].path) == 0 and d.unflushed_items(log.segments[1].path) == 1
    d.crash("unflushed", 4)
    assert new_log(d, 5).log_end_offset == 2


# =========================================================================== reads and truncation
def test_a_read_locates_the_segment_and_returns_batches_of_that_segment_only():
    """UnifiedLogTest.testReadAtLogGap / LogSegment.read: a fetch reads from one segment; the next fetch goes on
    in the next one."""
    log = new_log(segment_bytes=3 * ONE)
    for i in range(8):
        log.append_as_leader(rec_batch(tag=chr(97 + i)), 0, i)
    got = log.read(1, 8, 10**6)
    assert [b.base_offset for b in got] == [1, 2]
    assert [b.base_offset for b in log.read(3, 8, 10**6)] == [3, 4, 5]
    assert [b.base_offset for b in log.read(6, 7, 10**6)] == [6]
    assert log.record_at(4)[0].value == b"e0000"


def test_truncation_deletes_the_segments_above_the_offset_and_cuts_the_one_holding_it():
    """UnifiedLogTest.testTruncateTo: segments whose base offset is above the target go; the segment holding
    it is cut; one starting at the target is emptied and kept as the active segment."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE)
    for i in range(7):
        log.append_as_leader(rec_batch(), 0, i)
    assert bases(log) == [0, 2, 4, 6]
    log.truncate_to(3, 10)
    assert bases(log) == [0, 2] and log.log_end_offset == 3 and log.active_segment.size == ONE
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(b)}" for b in (0, 2)]
    log.truncate_to(2, 11)
    assert bases(log) == [0, 2] and log.active_segment.size == 0 and log.log_end_offset == 2
    log.append_as_leader(rec_batch(), 1, 12)
    assert log.log_end_offset == 3 and log.epoch_cache.entries() == [(0, 0), (1, 2)]


def test_truncation_below_the_first_segment_empties_the_log_and_starts_it_there():
    """UnifiedLogTest: truncateTo below the first segment's base is truncateFullyAndStartAt."""
    log = new_log(segment_bytes=2 * ONE, retention_bytes=0)
    for i in range(5):
        log.append_as_leader(rec_batch(), 0, i)
    log.update_high_watermark(5)
    log.delete_old_segments(10)  # retention.bytes 0: every segment goes, a new one is rolled at the LEO
    assert bases(log) == [5] and log.log_start_offset == 5
    log.truncate_to(2, 11)
    assert bases(log) == [2] and (log.log_start_offset, log.log_end_offset, log.high_watermark) == (2, 2, 2)
    assert log.epoch_cache.entries() == []


# =========================================================================== retention (deleteOldSegments)
def test_size_retention_deletes_whole_old_segments_below_the_high_watermark_only():
    """UnifiedLogTest.testSizeBasedLogRetention: the oldest segments go while the log stays at least
    retention.bytes; never a segment reaching above the HWM; the log start offset moves to the first kept
    segment and the epoch cache is truncated from the start."""
    log = new_log(segment_bytes=2 * ONE, retention_bytes=3 * ONE)
    for i in range(4):
        log.append_as_leader(rec_batch(), 0, i)
    log.append_as_leader(rec_batch(), 1, 4)  # epoch 1 starts at offset 4
    log.append_as_leader(rec_batch(), 1, 5)
    assert bases(log) == [0, 2, 4]
    assert log.delete_old_segments(100) == (0, "")  # HWM 0: nothing may go
    log.update_high_watermark(3)
    assert log.delete_old_segments(100) == (1, "retention.bytes")  # the second reaches the HWM
    assert bases(log) == [2, 4] and log.log_start_offset == 2
    log.update_high_watermark(6)
    assert log.delete_old_segments(100) == (0, "")  # 4 batches left: one more would leave 2 < 3
    assert log.epoch_cache.entries() == [(0, 2), (1, 4)]
    assert log.read(1, 6, 10**6) == () and log.record_at(1) is None


def test_time_retention_deletes_segments_whose_newest_record_is_older_than_retention_ms():
    """UnifiedLogTest.testTimeBasedLogRetention: by the segment's largest timestamp; an expired active segment
    is rolled first so that the log keeps a (new, empty) segment at the LEO (deleteSegments)."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE, retention_ms=1000)
    for ts in (100, 200, 300, 5000, 5100):
        log.append_as_leader(rec_batch(ts=ts), 0, ts)
    log.update_high_watermark(5)
    assert bases(log) == [0, 2, 4]
    assert log.delete_old_segments(1250) == (1, "retention.ms")  # 1250 - 200 > 1000; 1250 - 5000 < 0
    assert bases(log) == [2, 4] and log.log_start_offset == 2
    assert log.delete_old_segments(7000) == (2, "retention.ms")
    assert bases(log) == [5] and (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert log.active_segment.size == 0 and log.read(0, 5, 10**6) == ()
    # The deleted segments' files stay file.delete.delay.ms (60 s) longer (Kafka's asyncDelete).
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(b)}" for b in (0, 2, 4, 5)]
    assert log.next_file_delete_ms() == 1250 + 60_000
    assert log.delete_due_files(1250 + 59_999) == 0 and log.delete_due_files(7000 + 60_000) == 3
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(5)}"] and log.next_file_delete_ms() is None
    assert log.delete_old_segments(10**7) == (0, "")  # an empty active segment is never deleted


def test_retention_ms_minus_one_and_retention_bytes_minus_one_keep_everything():
    log = new_log(segment_bytes=ONE, retention_ms=-1, retention_bytes=-1)
    for i in range(3):
        log.append_as_leader(rec_batch(ts=0), 0, i)
    log.update_high_watermark(3)
    assert log.delete_old_segments(10**12) == (0, "") and log.log_start_offset == 0


def test_the_log_start_offset_moves_up_to_the_hwm_and_retention_deletes_the_segments_below_it():
    """UnifiedLogTest.testDeleteOldSegments / maybeIncrementLogStartOffset: the log start offset moves at once
    (reads below it get nothing), never above the HWM (OffsetOutOfRangeException); the segments wholly below
    it go with the next retention pass, whatever retention.ms/bytes say."""
    log = new_log(segment_bytes=2 * ONE, retention_ms=-1)
    for i in range(6):
        log.append_as_leader(rec_batch(), 0, i)
    log.update_high_watermark(4)
    with pytest.raises(ValueError, match="larger than the high watermark 4"):
        log.maybe_increment_log_start_offset(5, 10)
    assert log.maybe_increment_log_start_offset(3, 10) and not log.maybe_increment_log_start_offset(2, 11)
    assert log.log_start_offset == 3 and log.read(2, 4, 10**6) == () and log.record_at(2) is None
    assert [b.base_offset for b in log.read(3, 4, 10**6)] == [3]
    assert log.delete_old_segments(12) == (1, "log start offset")
    assert bases(log) == [2, 4] and log.log_start_offset == 3  # the segment holding 3 stays


# =========================================================================== loading (LogLoader)
def test_a_reload_keeps_the_checkpointed_log_start_offset_and_recovery_point():
    """LogLoader: log start = max(checkpoint, first segment's base); recovery point = min(checkpoint, LEO); a
    segment wholly below the checkpointed log start is removed at load (retention had deleted it and its file
    was waiting for file.delete.delay.ms, Kafka's .deleted file)."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE)
    for i in range(5):
        log.append_as_leader(rec_batch(), 0, i)
    log.flush(5)
    again = PartitionLog(d, DIR, LogConfig(segment_bytes=2 * ONE), 6, log_start_offset=3, recovery_point=4)
    assert bases(again) == [2, 4] and again.log_start_offset == 3 and again.recovery_point == 4
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(b)}" for b in (2, 4)]
    assert again.epoch_cache.entries() == [(0, 3)]
    assert PartitionLog(d, DIR, LogConfig(), 7, recovery_point=99).recovery_point == 5


def test_a_log_start_offset_beyond_the_recovered_log_end_starts_the_log_empty_there():
    """LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd: records below the checkpointed log start were
    deleted before a crash cut the log shorter; the log restarts empty at the log start offset."""
    d = SimDisk(None)
    log = new_log(d)
    log.append_as_leader(rec_batch(3), 0, 1)
    log.flush(2)
    log.append_as_leader(rec_batch(3), 0, 3)  # unflushed: lost below
    d.crash("unflushed", 4)
    again = PartitionLog(d, DIR, LogConfig(), 5, log_start_offset=5)
    assert (again.log_start_offset, again.log_end_offset, bases(again)) == (5, 5, [5])


def test_a_torn_batch_in_a_middle_segment_truncates_it_and_deletes_every_later_segment():
    """LogLoaderTest.testCorruptLog / recoverLog: recovery stops at the first invalid batch; the segments after
    it are deleted (Kafka's removeAndDeleteSegmentsAsync of the unflushed remainder); every drop is reported."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE)
    for i in range(6):
        log.append_as_leader(rec_batch(), 0, i)
    log.flush(6)
    assert d.corrupt(f"{DIR}/{segment_file(2)}", 1)
    again = PartitionLog(d, DIR, LogConfig(segment_bytes=2 * ONE), 7)
    assert bases(again) == [0, 2] and again.log_end_offset == 3
    assert segment_paths(d, DIR) == [f"{DIR}/{segment_file(b)}" for b in (0, 2)]
    reasons = [drop.reason for drop in again.dropped_at_load]
    assert reasons[0].startswith("batch CRC-32C mismatch") and reasons[1] == "a segment after a truncated one"
    assert again.batches_recovered == 3 and again.batches_trusted == 0


def test_the_log_manager_checkpoints_log_start_offsets_and_recovery_points_in_kafkas_format():
    from kraftlog.broker.log_manager import LOG_DIR
    from test_broker import MiniCluster, batch

    c = MiniCluster(config={"log.segment.bytes": str(2 * batch(1).size_bytes),
                            "log.flush.offset.checkpoint.interval.ms": "1000",
                            "log.flush.start.offset.checkpoint.interval.ms": "1000"})
    for _ in range(5):
        c.produce(1)
    c.fetch(1, 5, last_epoch=0)
    c.fetch(2, 5, last_epoch=0)
    log = c.p.log
    assert log.high_watermark == 5 and [s.base_offset for s in log.segments] == [0, 2, 4]
    log.maybe_increment_log_start_offset(3, c.now)
    c.advance(c.now + 31_000)  # the log manager's tasks start 30 s in
    assert read_offset_checkpoint(c.b.disk, f"{LOG_DIR}/log-start-offset-checkpoint") == {("t", 0): 3}
    assert read_offset_checkpoint(c.b.disk, f"{LOG_DIR}/recovery-point-offset-checkpoint") == {("t", 0): 4}
    assert c.b.disk.read_value(f"{LOG_DIR}/log-start-offset-checkpoint") == "0\n1\nt 0 3\n"


def test_after_an_unclean_shutdown_only_the_segments_from_the_recovery_point_on_are_recovered():
    """LogLoader.recoverLog: without a clean shutdown, the segments holding offsets at or above the recovery
    point are recovered batch by batch; the ones wholly below it are trusted (a flipped byte there goes unseen,
    as in Kafka). After a clean shutdown kraftlog checks every batch (it finds that byte)."""
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE)
    for i in range(7):
        log.append_as_leader(rec_batch(), 0, i)  # segments 0, 2, 4, 6; the rolls flushed up to 6
    assert log.recovery_point == 6
    assert d.corrupt(f"{DIR}/{segment_file(0)}", 1)
    unclean = PartitionLog(d, DIR, LogConfig(segment_bytes=2 * ONE), 8, recovery_point=5)
    assert (unclean.batches_trusted, unclean.batches_recovered) == (4, 3)  # segments 0 and 2; 4 and 6
    assert unclean.log_end_offset == 7 and unclean.dropped_at_load == [] and unclean.recovery_point == 5
    clean = PartitionLog(d, DIR, LogConfig(segment_bytes=2 * ONE), 9, recovery_point=5, clean_shutdown=True)
    assert clean.log_end_offset == 1 and clean.batches_recovered == 1 and clean.batches_trusted == 0
    assert clean.dropped_at_load[0].reason.startswith("batch CRC-32C mismatch")


# =========================================================================== property
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_APPEND = st.tuples(st.just("append"), st.integers(1, 4), st.integers(0, 400))  # records, ms since the last op
SEGMENT_OPS = st.lists(st.one_of(
    _APPEND, _APPEND, _APPEND, _APPEND,  # appends weigh most: segments must fill and roll
    st.tuples(st.just("flush")),
    st.tuples(st.just("hwm"), st.integers(0, 100)),  # percent of the way from the HWM to the LEO
    st.tuples(st.just("retention"), st.integers(0, 3000)),  # ms later
    st.tuples(st.just("delete_records"), st.integers(0, 100)),  # percent of the way to the HWM
    st.tuples(st.just("truncate"), st.integers(0, 100)),  # percent of the way from the HWM to the LEO
    st.tuples(st.just("crash")),
    st.tuples(st.just("restart")),  # a clean shutdown and start: sealed segments loaded from their files
), min_size=10, max_size=60)


@settings(derandomize=True, database=None, deadline=None, max_examples=250,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SEGMENT_OPS, st.integers(1, 4), st.sampled_from([-1, 1000, 5000]), st.sampled_from([-1, 0, 4, 10]))
def test_property_offsets_above_the_log_start_read_back_and_retention_never_passes_what_it_allows(
        ops, per_segment, retention_ms, retention_batches):
    """Random appends, flushes, HWM moves, retention passes, DeleteRecords, truncations above the HWM and crashes
    that lose what was not flushed (the log reloaded with its checkpointed log start offset and recovery point,
    as the log manager passes them). After every step:

    * every offset in [log start, LEO) reads back the value written there (or, after a crash brought back data
      whose truncation was not yet durable, a value once written there; below the recovery point at the crash,
      exactly the one written last);
    * a crash keeps every offset below the recovery point the log claimed (what a flush made durable);
    * the log start offset never passes the HWM nor what ``retention.ms``, ``retention.bytes`` and DeleteRecords
      allowed: the first record newer than the time cutoff, the first offset above which ``retention.bytes``
      remain, the offset DeleteRecords asked for."""
    size = rec_batch(1, tag="w").size_bytes  # every batch below holds records of one size
    retention_bytes = -1 if retention_batches < 0 else retention_batches * size
    cfg = LogConfig(segment_bytes=per_segment * 2 * size, retention_ms=retention_ms, retention_bytes=retention_bytes)
    d = SimDisk(None)
    now = 0
    log = PartitionLog(d, DIR, cfg, now)
    model: dict[int, tuple[bytes, int]] = {}  # offset -> (value, timestamp) as written last
    ever: dict[int, set[bytes]] = {}
    batches: list[tuple[int, int]] = []  # (base offset, bytes) of the batches the model holds
    requested = 0  # the highest offset DeleteRecords asked for
    serial = 0
    for op in ops:
        kind = op[0]
        if kind == "append":
            now += op[2]
            n = op[1]
            values = [b"w%05d" % (serial + i) for i in range(n)]
            serial += n
            b = RecordBatch(-1, -1, tuple(Record(now, None, v) for v in values))
            stored = log.append_as_leader(b, 0, now)
            batches.append((stored.base_offset, stored.size_bytes))
            for i, v in enumerate(values):
                model[stored.base_offset + i] = (v, now)
                ever.setdefault(stored.base_offset + i, set()).add(v)
        elif kind == "flush":
            log.flush(now)
        elif kind == "hwm":
            log.update_high_watermark(log.high_watermark + (log.log_end_offset - log.high_watermark) * op[1] // 100)
        elif kind == "delete_records":
            target = log.log_start_offset + (log.high_watermark - log.log_start_offset) * op[1] // 100
            requested = max(requested, target)
            log.maybe_increment_log_start_offset(target, now)
        elif kind == "retention":
            now += op[1]
            start = log.log_start_offset
            allowed = max(start, requested)
            if retention_ms >= 0:
                newer = [o for o in sorted(model) if o >= start and not model[o][1] < now - retention_ms]
                allowed = max(allowed, newer[0] if newer else log.log_end_offset)
            if retention_bytes >= 0:
                kept = [base for base in [b2 for b2, _ in batches] + [log.log_end_offset]
                        if base >= start and sum(s for b2, s in batches if b2 >= base) >= retention_bytes]
                allowed = max(allowed, kept[-1] if kept else start)
            log.delete_old_segments(now)
            assert log.log_start_offset <= min(allowed, log.high_watermark) or log.log_start_offset == start
        elif kind == "truncate":
            target = log.high_watermark + (log.log_end_offset - log.high_watermark) * op[1] // 100
            log.truncate_to(target, now)
            for o in [o for o in model if o >= target]:
                del model[o]
            batches = [(b2, s) for b2, s in batches if b2 < target]
        elif kind == "restart":
            leo, hwm, start = log.log_end_offset, log.high_watermark, log.log_start_offset
            log.seal(now)
            log = PartitionLog(d, DIR, cfg, now, log_start_offset=start, recovery_point=0, clean_shutdown=True)
            assert (log.log_end_offset, log.recovery_point, log.checksum_mismatches) == (leo, leo, [])
            log.update_high_watermark(hwm)
        elif kind == "crash":
            durable, start = log.recovery_point, log.log_start_offset
            d.crash("unflushed", now)
            log = PartitionLog(d, DIR, cfg, now, log_start_offset=start, recovery_point=durable)
            assert log.log_end_offset >= durable, "a crash lost what a flush made durable"
            for o in range(max(start, log.log_start_offset), durable):
                assert log.record_at(o)[0].value == model[o][0]
            for o in [o for o in model if o >= log.log_end_offset]:
                del model[o]
            for o in range(log.log_start_offset, log.log_end_offset):  # data whose truncation was not durable
                if o not in model or log.record_at(o)[0].value != model[o][0]:
                    got = log.record_at(o)[0].value
                    assert got in ever[o]
                    model[o] = (got, now)
            batches = [(b.base_offset, b.size_bytes) for b in log.batches()]
            log.update_high_watermark(log.log_start_offset)
        assert log.log_start_offset <= max(log.high_watermark, log.log_start_offset)
        for o in range(log.log_start_offset, log.log_end_offset):
            assert log.record_at(o)[0].value == model[o][0], (op, o)
        assert log.record_at(log.log_start_offset - 1) is None


# =========================================================================== producer snapshots
def test_a_producer_snapshot_round_trips_in_kafkas_v1_format_and_a_damaged_one_is_refused():
    """ProducerStateManagerTest.testTakeSnapshot / testLoadFromCorruptSnapshotFile: version 1, CRC-32C, the
    last batch of each producer."""
    from kraftlog.storage.producer_snapshot import decode_snapshot, encode_snapshot
    from kraftlog.storage.producer_state import ProducerStateManager

    state = ProducerStateManager()
    state.update(rec_batch(3, ts=50, pid=7, seq=0).with_offsets(10, 0))
    state.update(rec_batch(2, ts=60, pid=7, seq=3).with_offsets(13, 0))
    data = encode_snapshot(state.producers)
    assert data[:2] == b"\x00\x01" and len(data) == 2 + 4 + 4 + 46
    (entry,) = decode_snapshot(data).values()
    assert (entry.epoch, list(entry.batches), entry.last_timestamp) == (0, [(3, 4, 13)], 60)
    with pytest.raises(ValueError, match="CRC-32C"):
        decode_snapshot(data[:-1] + bytes([data[-1] ^ 1]))


def test_idempotent_dedup_survives_retention_and_a_restart_through_the_producer_snapshot():
    """ProducerStateManagerTest.testRecoverFromSnapshot...: retention deleted the segment holding a producer's
    batch; after a crash the log rebuilds its producers from the latest snapshot (taken at the roll) and the
    segments after it, so a retry of that batch is still recognised as a duplicate of its offsets."""
    d = SimDisk(None)
    cfg = LogConfig(segment_bytes=3 * ONE, retention_bytes=0)
    log = PartitionLog(d, DIR, cfg, 0)
    first = log.append_as_leader(rec_batch(1, pid=42, seq=0), 0, 1)
    for i in range(5):
        log.append_as_leader(rec_batch(), 0, 2 + i)  # no producer id: rolls the segments
    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments(10)
    assert log.log_start_offset > first.base_offset
    retry = rec_batch(1, pid=42, seq=0)
    assert log.producer_state.check(retry) == (0, first.base_offset)
    start, durable = log.log_start_offset, log.recovery_point
    d.crash("unflushed", 11)
    again = PartitionLog(d, DIR, cfg, 12, log_start_offset=start, recovery_point=durable)
    assert again.producer_state.check(retry) == (0, first.base_offset)  # a duplicate: nothing appended
    assert again.producer_state.remove_expired(86_400_001, 86_400_000) == [42]
    assert again.producer_state.check(retry) == (0, -1)  # forgotten: any sequence is accepted (KIP-360)


def test_snapshots_above_the_log_end_and_of_deleted_segments_are_removed():
    """Kafka's truncateAndReload and deleteProducerSnapshots: a truncation below a snapshot's offset deletes it,
    and so does retention deleting the segment it starts."""
    from kraftlog.storage.producer_snapshot import snapshot_file

    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE, retention_bytes=3 * ONE)
    for i in range(7):
        log.append_as_leader(rec_batch(pid=5, seq=i), 0, i)
    names = lambda: [p.rpartition("/")[2] for p in d.list(DIR + "/") if p.endswith(".snapshot")]  # noqa: E731
    assert names() == [snapshot_file(o) for o in (2, 4, 6)]
    log.truncate_to(5, 8)
    assert names() == [snapshot_file(o) for o in (2, 4)]
    log.update_high_watermark(5)
    log.delete_old_segments(9)
    assert [s.base_offset for s in log.segments] == [2, 4] and names() == [snapshot_file(o) for o in (2, 4)]
    log.append_as_leader(rec_batch(pid=5, seq=5), 0, 10)
    log.append_as_leader(rec_batch(pid=5, seq=6), 0, 11)
    log.update_high_watermark(7)
    log.delete_old_segments(12)
    assert [s.base_offset for s in log.segments] == [4, 6] and names() == [snapshot_file(o) for o in (4, 6)]


# =========================================================================== the clean-shutdown checksum
def test_after_a_clean_shutdown_each_segment_is_checked_in_one_pass_against_its_checksum():
    """kraftlog's addition (issue 30): a roll writes ``<base>.checksum`` (the sealed segment's CRC-32C), a clean
    shutdown the active segment's; the next load checks each segment against it and reads the batches of a
    matching one by their headers only. A flipped byte fails the check: that segment is recovered batch by batch
    (dropping the damaged batch and what follows) and the mismatch is reported, for the broker to register as
    after an unclean shutdown."""
    d = SimDisk(None)
    cfg = LogConfig(segment_bytes=2 * ONE)
    log = PartitionLog(d, DIR, cfg, 0)
    for i in range(5):
        log.append_as_leader(rec_batch(), 0, i)
    log.seal(6)
    checksums = sorted(p.rpartition("/")[2] for p in d.list(DIR + "/") if p.endswith(".checksum"))
    assert checksums == [f"{b:020d}.checksum" for b in (0, 2, 4)]
    assert d.read_value(f"{DIR}/{checksums[0]}").startswith("crc32c ")
    again = PartitionLog(d, DIR, cfg, 7, clean_shutdown=True)
    # The sealed segments (0, 2) matched: loaded from their index files, their batches unread until used;
    # the active one (4) read by its headers.
    assert (again.segments_unread, again.batches_trusted, again.batches_recovered) == (2, 1, 0)
    assert again.checksum_mismatches == [] and again.recovery_point == 5 and again.log_end_offset == 5
    assert [s.loaded for s in again.segments] == [False, False, True] and again.size == log.size
    assert [b.base_offset for b in again.read(2, 5, 10**6)] == [2, 3] and again.segments[1].loaded
    assert again.record_at(0)[0].value == b"v0000" and again.segments[0].loaded
    assert d.corrupt(f"{DIR}/{segment_file(2)}", 1)
    damaged = PartitionLog(d, DIR, cfg, 8, clean_shutdown=True)
    assert damaged.checksum_mismatches == [f"{DIR}/{segment_file(2)}"]
    assert damaged.log_end_offset == 3 and damaged.segments_unread == 1 and damaged.batches_recovered == 1
    assert damaged.dropped_at_load[0].reason.startswith("batch CRC-32C mismatch")


def test_a_truncated_or_deleted_segment_loses_its_checksum():
    d = SimDisk(None)
    log = new_log(d, segment_bytes=2 * ONE, retention_bytes=0)
    for i in range(5):
        log.append_as_leader(rec_batch(), 0, i)
    names = lambda: sorted(p.rpartition("/")[2][:20] for p in d.list(DIR + "/") if p.endswith(".checksum"))  # noqa: E731
    assert names() == [f"{b:020d}" for b in (0, 2)]
    log.truncate_to(3, 6)  # the segment at 2 changes: its checksum goes
    assert names() == [f"{0:020d}"]
    log.update_high_watermark(3)
    log.delete_old_segments(7)
    assert names() == []  # every segment went (2 sealed by the roll to 3 first): their checksums too


# =========================================================================== the sparse indexes
def test_offset_index_lookup_append_and_truncate_as_kafkas_offset_index_test():
    """OffsetIndexTest: lookup answers the largest entry at or below the target (the base offset and position 0
    below the first); appends must grow; a full index refuses more; truncateTo drops the entries at or above;
    the file is (relative offset, position) int32 pairs."""
    from kraftlog.storage.index import OffsetIndex

    idx = OffsetIndex(100, 3)
    assert idx.lookup(150) == (100, 0)
    idx.append(110, 4096)
    idx.append(120, 8192)
    assert [idx.lookup(t) for t in (109, 110, 119, 1000)] == [(100, 0), (110, 4096), (110, 4096), (120, 8192)]
    with pytest.raises(ValueError, match="no larger than the last offset"):
        idx.append(120, 9000)
    idx.append(130, 12288)
    assert idx.is_full
    with pytest.raises(ValueError, match="full offset index"):
        idx.append(140, 16384)
    assert idx.encode() == bytes.fromhex("0000000a00001000" "0000001400002000" "0000001e00003000")
    idx.truncate_to(120)
    assert idx.lookup(1000) == (110, 4096) and len(idx) == 1
    assert OffsetIndex.decode(100, 3, idx.encode()).offsets == [110]


def test_time_index_keeps_growing_timestamps_only_as_kafkas_time_index_test():
    """TimeIndexTest: maybeAppend adds an entry only when the timestamp grows; lookup answers the last entry at
    or below the target timestamp ((-1, base offset) below the first)."""
    from kraftlog.storage.index import TimeIndex

    idx = TimeIndex(50, 4)
    assert idx.maybe_append(1000, 55) and not idx.maybe_append(1000, 56) and not idx.maybe_append(900, 57)
    assert idx.maybe_append(2000, 60)
    assert [idx.lookup(t) for t in (999, 1000, 1999, 5000)] == [(-1, 50), (1000, 55), (1000, 55), (2000, 60)]
    assert TimeIndex.decode(50, 4, idx.encode()).offsets == [55, 60] and len(idx.encode()) == 24


def test_a_roll_writes_the_sealed_segments_index_files_and_list_offsets_reads_through_them():
    """LogSegment.append's index entries (a batch's last offset and position, after index.interval.bytes) land
    in Kafka's <base>.index and <base>.timeindex files when the segment rolls; a search by timestamp starts from
    the segment whose largest timestamp reaches the target and decodes only batches that can hold it."""
    from kraftlog.storage.index import OffsetIndex, TimeIndex, index_file, time_index_file

    d = SimDisk(None)
    log = new_log(d, segment_bytes=4 * ONE, index_interval_bytes=0)
    for i in range(10):
        log.append_as_leader(rec_batch(ts=1000 * i), 0, i)
    assert bases(log) == [0, 4, 8]
    idx = OffsetIndex.decode(4, 100, d.read_value(f"{DIR}/{index_file(4)}"))
    assert idx.offsets == [5, 6, 7] and idx.positions == [ONE, 2 * ONE, 3 * ONE]
    tidx = TimeIndex.decode(4, 100, d.read_value(f"{DIR}/{time_index_file(4)}"))
    assert tidx.timestamps == [5000, 6000, 7000] and tidx.offsets == [5, 6, 7]
    log.update_high_watermark(10)
    assert log.offset_for_timestamp(5500, 10) == (6, 0, 6000)
    assert log.offset_for_timestamp(0, 10) == (0, 0, 0)
    assert log.offset_for_timestamp(9001, 10) is None and log.offset_for_timestamp(8000, 8) is None
    log.truncate_to(6, 11)  # the segment at 4 changes: its index files go with its checksum
    assert not d.exists(f"{DIR}/{index_file(4)}") and d.exists(f"{DIR}/{index_file(0)}")
