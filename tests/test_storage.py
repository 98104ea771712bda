"""Storage layer: SimDisk crash semantics, Kafka's leader-epoch cache, PartitionLog, checkpoint files."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage import (
    LeaderEpochCache,
    LogConfig,
    PartitionLog,
    SimDisk,
    delete_clean_shutdown,
    read_clean_shutdown,
    read_hwm_checkpoint,
    write_clean_shutdown,
    write_hwm_checkpoint,
)

DIR = "data/t-0"
SEG = f"{DIR}/00000000000000000000.log"
CKPT = f"{DIR}/leader-epoch-checkpoint"


def batch(*values: bytes, epoch: int = -1, base: int = -1) -> RecordBatch:
    return RecordBatch(base, epoch, tuple(Record(0, None, v) for v in values))


def contents(log: PartitionLog) -> list[tuple[int, bytes | None, int]]:
    out = []
    for b in log.batches():
        for i, r in enumerate(b.records):
            out.append((b.base_offset + i, r.value, b.partition_leader_epoch))
    return out


# =========================================================================== SimDisk
def test_unflushed_append_lost_on_crash_unflushed():
    d = SimDisk(writeback_ms=None)
    d.append("f", "a", 0)
    d.fsync("f", 1)
    d.append("f", "b", 2)
    assert d.read("f") == ["a", "b"]
    assert d.unflushed_items("f") == 1
    d.crash("unflushed", 3)
    assert d.read("f") == ["a"]
    assert d.unflushed_items("f") == 0


def test_fsynced_appends_survive_crash_unflushed():
    d = SimDisk(writeback_ms=None)
    for i in range(5):
        d.append("f", i, i)
    d.fsync("f", 10)
    d.crash("unflushed", 11)
    assert d.read("f") == [0, 1, 2, 3, 4]


def test_file_never_made_durable_vanishes_on_crash_unflushed():
    d = SimDisk(writeback_ms=None)
    d.append("f", "a", 0)
    assert d.exists("f")
    d.crash("unflushed", 1)
    assert not d.exists("f")
    assert d.read("f") == []


def test_writeback_makes_append_durable_after_the_delay_and_not_before():
    before = SimDisk(writeback_ms=1000)
    before.append("f", "a", 0)
    before.crash("unflushed", 999)
    assert before.read("f") == []

    after = SimDisk(writeback_ms=1000)
    after.append("f", "a", 0)
    after.append("f", "b", 500)
    after.crash("unflushed", 1000)  # "a" is exactly 1000 ms old: written back; "b" is not
    assert after.read("f") == ["a"]


def test_lazy_writeback_applied_on_later_append_is_exact():
    d = SimDisk(writeback_ms=100)
    d.append("f", "a", 0)
    d.append("f", "b", 150)  # drains "a" into the durable state
    assert d.unflushed_items("f") == 1
    assert d.unflushed_items("f", now_ms=250) == 0
    d.crash("unflushed", 250)
    assert d.read("f") == ["a", "b"]


def test_writeback_none_never_writes_back():
    d = SimDisk(writeback_ms=None)
    d.append("f", "a", 0)
    d.fsync("f", 0)
    d.append("f", "b", 1)
    d.crash("unflushed", 10**12)
    assert d.read("f") == ["a"]


def test_unflushed_truncate_lost_on_crash_brings_items_back():
    d = SimDisk(writeback_ms=None)
    for x in "abc":
        d.append("f", x, 0)
    d.fsync("f", 0)
    d.truncate("f", 1, 10)
    assert d.read("f") == ["a"]
    d.crash("unflushed", 20)
    assert d.read("f") == ["a", "b", "c"]


def test_fsynced_truncate_survives_crash():
    d = SimDisk(writeback_ms=None)
    for x in "abc":
        d.append("f", x, 0)
    d.truncate("f", 1, 10)
    d.append("f", "d", 11)
    d.fsync("f", 12)
    d.crash("unflushed", 20)
    assert d.read("f") == ["a", "d"]


def test_truncate_then_append_written_back_in_order():
    d = SimDisk(writeback_ms=100)
    for x in "abc":
        d.append("f", x, 0)
    d.fsync("f", 0)
    d.truncate("f", 1, 10)
    d.append("f", "d", 50)
    d.crash("unflushed", 110)  # truncate (t=10) written back, append (t=50) not
    assert d.read("f") == ["a"]


def test_crash_none_keeps_everything():
    d = SimDisk(writeback_ms=None)
    d.append("f", "a", 0)
    d.truncate("f", 0, 1)
    d.append("f", "b", 2)
    d.crash("none", 3)
    d.crash("unflushed", 4)  # now durable
    assert d.read("f") == ["b"]


def test_crash_all_empties_the_disk():
    d = SimDisk()
    d.append("f", "a", 0)
    d.fsync("f", 0)
    d.write_atomic("v", "x", 0)
    d.crash("all", 1)
    assert d.read("f") == [] and d.read_value("v") is None
    assert d.list("") == []


def test_write_atomic_survives_crash_unflushed_and_delete_is_durable():
    d = SimDisk(writeback_ms=None)
    d.write_atomic("dir/v", "x", 0)
    d.write_atomic("dir/w", "y", 0)
    d.delete("dir/w", 1)
    d.crash("unflushed", 2)
    assert d.read_value("dir/v") == "x"
    assert not d.exists("dir/w")


def test_list_returns_sorted_existing_paths_with_prefix():
    d = SimDisk()
    d.append("b/2", 1, 0)
    d.write_atomic("b/1", "x", 0)
    d.append("a/1", 1, 0)
    assert d.list("b/") == ["b/1", "b/2"]
    d.delete("b/2", 1)
    assert d.list("b/") == ["b/1"]


def test_crash_rejects_unknown_mode():
    with pytest.raises(ValueError):
        SimDisk().crash("some", 0)


# =========================================================================== LeaderEpochCache
@pytest.fixture
def kafka_cache() -> LeaderEpochCache:
    c = LeaderEpochCache(SimDisk(), CKPT, 0)
    c.assign(0, 0)
    c.assign(2, 13)
    c.assign(4, 17)
    return c


def test_end_offset_for_follows_kafka_worked_example(kafka_cache):
    leo = 20
    assert kafka_cache.end_offset_for(1, leo) == (0, 13)
    assert kafka_cache.end_offset_for(3, leo) == (2, 17)
    assert kafka_cache.end_offset_for(4, leo) == (4, 20)
    assert kafka_cache.end_offset_for(2, leo) == (2, 17)
    assert kafka_cache.end_offset_for(5, leo) == (-1, -1)
    assert kafka_cache.end_offset_for(-1, leo) == (-1, -1)


def test_end_offset_for_below_first_entry_returns_requested_epoch_and_first_start():
    c = LeaderEpochCache(SimDisk(), CKPT, 0)
    c.assign(3, 10)
    c.assign(5, 20)
    assert c.end_offset_for(1, 30) == (1, 10)


def test_end_offset_for_empty_cache_is_undefined():
    c = LeaderEpochCache(SimDisk(), CKPT, 0)
    assert c.end_offset_for(0, 5) == (-1, -1)
    assert c.latest_epoch() == -1
    assert c.latest_entry() is None and c.earliest_entry() is None


def test_assign_latest_epoch_again_is_noop(kafka_cache):
    kafka_cache.assign(4, 19)
    assert kafka_cache.entries() == [(0, 0), (2, 13), (4, 17)]


def test_assign_new_epoch_below_existing_start_offsets_removes_them(kafka_cache):
    kafka_cache.assign(5, 15)
    assert kafka_cache.entries() == [(0, 0), (2, 13), (5, 15)]


def test_assign_latest_epoch_with_lower_start_offset_moves_it(kafka_cache):
    kafka_cache.assign(4, 15)
    assert kafka_cache.entries() == [(0, 0), (2, 13), (4, 15)]


def test_assign_lower_epoch_removes_entries_with_greater_or_equal_epoch(kafka_cache):
    kafka_cache.assign(3, 18)
    assert kafka_cache.entries() == [(0, 0), (2, 13), (3, 18)]


def test_assign_rejects_negative_epoch_or_offset():
    c = LeaderEpochCache(SimDisk(), CKPT, 0)
    with pytest.raises(ValueError):
        c.assign(-1, 0)
    with pytest.raises(ValueError):
        c.assign(0, -1)


def test_truncate_from_end_removes_entries_starting_at_or_after_end_offset(kafka_cache):
    kafka_cache.truncate_from_end(18)
    assert kafka_cache.entries() == [(0, 0), (2, 13), (4, 17)]
    kafka_cache.truncate_from_end(17)
    assert kafka_cache.entries() == [(0, 0), (2, 13)]
    kafka_cache.truncate_from_end(5)
    assert kafka_cache.entries() == [(0, 0)]
    kafka_cache.truncate_from_end(0)
    assert kafka_cache.entries() == []


def test_truncate_from_start_moves_floor_entry_to_start_offset(kafka_cache):
    kafka_cache.truncate_from_start(15)
    assert kafka_cache.entries() == [(2, 15), (4, 17)]
    kafka_cache.truncate_from_start(17)
    assert kafka_cache.entries() == [(4, 17)]
    kafka_cache.truncate_from_start(3)  # before the first entry: no-op
    assert kafka_cache.entries() == [(4, 17)]


def test_epoch_for_offset_and_start_offset_of(kafka_cache):
    assert kafka_cache.epoch_for_offset(0) == 0
    assert kafka_cache.epoch_for_offset(12) == 0
    assert kafka_cache.epoch_for_offset(13) == 2
    assert kafka_cache.epoch_for_offset(100) == 4
    assert kafka_cache.start_offset_of(2) == 13
    assert kafka_cache.start_offset_of(3) is None
    c = LeaderEpochCache(SimDisk(), CKPT, 0)
    c.assign(1, 5)
    assert c.epoch_for_offset(4) == -1


def test_epoch_cache_is_persisted_atomically_in_kafka_text_format():
    d = SimDisk(writeback_ms=None)
    c = LeaderEpochCache(d, CKPT, 0)
    c.assign(0, 0, now_ms=1)
    c.assign(2, 13, now_ms=2)
    assert d.read_value(CKPT) == "0\n2\n0 0\n2 13\n"
    d.crash("unflushed", 3)
    assert LeaderEpochCache(d, CKPT, 4).entries() == [(0, 0), (2, 13)]


# =========================================================================== PartitionLog
def new_log(disk=None, **cfg) -> PartitionLog:
    return PartitionLog(disk if disk is not None else SimDisk(writeback_ms=None), DIR, LogConfig(**cfg), 0)


def test_leader_append_assigns_offsets_and_epochs():
    log = new_log()
    b1 = log.append_as_leader(batch(b"a", b"b", b"c"), 0, 1)
    b2 = log.append_as_leader(batch(b"d", b"e"), 0, 2)
    b3 = log.append_as_leader(batch(b"f"), 2, 3)
    assert (b1.base_offset, b1.partition_leader_epoch) == (0, 0)
    assert (b2.base_offset, b2.partition_leader_epoch) == (3, 0)
    assert (b3.base_offset, b3.partition_leader_epoch) == (5, 2)
    assert log.log_end_offset == 6
    assert log.epoch_cache.entries() == [(0, 0), (2, 5)]
    assert log.record_at(4) == (Record(0, None, b"e"), 0)
    assert log.record_at(6) is None


def test_follower_append_must_not_start_below_leo():
    """Kafka's follower append: offsets must increase (a compacted leader's log has gaps, so a batch may start
    after the LEO), never go back."""
    log = new_log()
    log.append_as_follower([batch(b"a", b"b", base=0, epoch=1)], 1)
    with pytest.raises(ValueError):
        log.append_as_follower([batch(b"c", base=1, epoch=1)], 2)
    with pytest.raises(ValueError):  # second batch overlaps the first: nothing appended
        log.append_as_follower([batch(b"c", base=2, epoch=1), batch(b"d", base=2, epoch=1)], 2)
    assert log.log_end_offset == 2
    log.append_as_follower([batch(b"c", base=5, epoch=1)], 3)  # the leader's cleaner removed 2..4
    assert log.log_end_offset == 6 and log.record_at(3) is None and log.record_at(5) == (Record(0, None, b"c"), 1)


def test_follower_append_assigns_epoch_cache_from_batches():
    log = new_log()
    log.append_as_follower([batch(b"a", b"b", base=0, epoch=1), batch(b"c", base=2, epoch=3)], 1)
    assert log.epoch_cache.entries() == [(1, 0), (3, 2)]
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(3) == (3, 3)


def test_read_respects_max_offset_and_max_bytes():
    log = new_log()
    for i in range(5):  # batches [0,1] [2,3] [4,5] [6,7] [8,9], 10 bytes per record
        log.append_as_leader(batch(bytes(10), bytes(10)), 0, i)
    size = log.read(0, 10, 10**6)[0].size_bytes
    assert [b.base_offset for b in log.read(0, 10, 10**6)] == [0, 2, 4, 6, 8]
    assert [b.base_offset for b in log.read(3, 10, 10**6)] == [2, 4, 6, 8]  # whole batch holding 3
    assert [b.base_offset for b in log.read(0, 5, 10**6)] == [0, 2, 4]  # max_offset exclusive
    assert [b.base_offset for b in log.read(0, 4, 10**6)] == [0, 2]
    assert [b.base_offset for b in log.read(0, 10, 2 * size)] == [0, 2]
    assert [b.base_offset for b in log.read(0, 10, 2 * size - 1)] == [0]
    assert [b.base_offset for b in log.read(4, 10, 1)] == [4]  # at least one batch
    assert log.read(10, 10, 10**6) == ()  # fetch at LEO
    assert log.read(4, 4, 10**6) == ()  # fetch at max offset


def test_truncate_to_inside_a_batch_splits_it():
    log = new_log()
    log.append_as_leader(batch(b"a", b"b"), 0, 1)
    log.append_as_leader(batch(b"c", b"d", b"e"), 1, 2)
    log.append_as_leader(batch(b"f"), 2, 3)
    log.update_high_watermark(6)
    log.truncate_to(3, 4)
    assert log.log_end_offset == 3
    assert [v for _, v, _ in contents(log)] == [b"a", b"b", b"c"]
    assert log.epoch_cache.entries() == [(0, 0), (1, 2)]
    assert log.high_watermark == 3
    assert log.read(0, 3, 10**6)[-1].last_offset == 2
    log.append_as_leader(batch(b"g"), 3, 5)
    assert [v for _, v, _ in contents(log)] == [b"a", b"b", b"c", b"g"]
    log.truncate_to(2, 6)  # at a batch boundary
    assert [v for _, v, _ in contents(log)] == [b"a", b"b"]
    assert log.epoch_cache.entries() == [(0, 0)]
    log.truncate_to(5, 7)  # beyond LEO: no-op
    assert log.log_end_offset == 2


def test_truncation_reaches_the_disk_after_flush():
    d = SimDisk(writeback_ms=None)
    log = new_log(d)
    log.append_as_leader(batch(b"a", b"b", b"c"), 0, 1)
    log.truncate_to(1, 2)
    log.flush(3)
    d.crash("unflushed", 4)
    assert [v for _, v, _ in contents(PartitionLog(d, DIR, LogConfig(), 5))] == [b"a"]


def test_update_high_watermark_clamps_to_log_range():
    log = new_log()
    log.append_as_leader(batch(b"a", b"b"), 0, 1)
    assert log.update_high_watermark(5) == 2
    assert log.update_high_watermark(-3) == 0
    assert log.update_high_watermark(1) == 1 and log.high_watermark == 1


def test_reload_after_crash_keeps_durable_prefix_and_truncates_epoch_cache_to_leo():
    d = SimDisk(writeback_ms=None)
    log = new_log(d)
    log.append_as_leader(batch(b"a", b"b"), 0, 1)
    log.flush(2)
    log.append_as_leader(batch(b"c"), 1, 3)  # epoch 1 is durable in the cache, the batch is not
    log.append_as_leader(batch(b"d"), 2, 4)
    assert log.epoch_cache.entries() == [(0, 0), (1, 2), (2, 3)]
    d.crash("unflushed", 5)
    reloaded = PartitionLog(d, DIR, LogConfig(), 6)
    assert reloaded.log_end_offset == 2
    assert [v for _, v, _ in contents(reloaded)] == [b"a", b"b"]
    assert reloaded.epoch_cache.entries() == [(0, 0)]
    # Kafka's LogLoader: the recovery point is the checkpointed one (none passed: 0), never moved to the
    # LEO by a load after an unclean shutdown, so the next crash recovers these offsets again.
    assert reloaded.recovery_point == 0 and reloaded.unflushed_messages == 2


def test_reload_repairs_epoch_cache_when_a_truncation_was_lost():
    d = SimDisk(writeback_ms=None)
    log = new_log(d)
    log.append_as_leader(batch(b"a", b"b", b"c", b"d"), 0, 1)
    log.flush(2)
    log.truncate_to(2, 3)  # not durable
    log.append_as_follower([batch(b"x", base=2, epoch=1)], 4)  # cache (1, 2) is durable
    d.crash("unflushed", 5)
    reloaded = PartitionLog(d, DIR, LogConfig(), 6)
    assert [v for _, v, _ in contents(reloaded)] == [b"a", b"b", b"c", b"d"]
    assert reloaded.epoch_cache.entries() == [(0, 0)]



def test_log_recovery_treats_a_batch_after_an_offset_gap_as_a_torn_tail():
    """Issue 39 rule 4 (``PartitionLog``'s recovery keeps the contiguous prefix from offset 0, as Kafka's
    ``LogSegment.recover`` truncates the segment at the first invalid batch; kraftlog has no compacted
    topics, so an offset gap can only be a torn or misplaced write): a segment holding [0, 1],
    then a batch at offset 3 (expected 2: a gap) and one at 4, loads as the contiguous prefix [0, 1]: LEO
    2, the epoch cache and producer state from the prefix only, and the tail is truncated off the disk
    durably (a crash does not bring it back).

    Shown to fail when the gap check in ``PartitionLog.__init__``'s recovery loop is weakened from
    ``b.base_offset != expected`` to ``b.base_offset < expected`` (the log loads with a hole: LEO 5)."""
    d = SimDisk(writeback_ms=None)
    d.append(SEG, batch(b"a", b"b", base=0, epoch=0), 1)
    d.append(SEG, RecordBatch(3, 1, (Record(0, None, b"d"),), producer_id=7, producer_epoch=0,
                              base_sequence=0), 1)
    d.append(SEG, batch(b"e", base=4, epoch=1), 1)
    d.fsync(SEG, 2)
    log = PartitionLog(d, DIR, LogConfig(), 3)
    assert log.log_end_offset == 2
    assert [v for _, v, _ in contents(log)] == [b"a", b"b"]
    assert log.epoch_cache.entries() == [(0, 0)]
    assert 7 not in log.producer_state.producers
    d.crash("unflushed", 4)
    assert len(d.read(SEG)) == 1

def test_flush_interval_messages_1_makes_every_append_durable():
    d = SimDisk(writeback_ms=None)
    log = new_log(d, flush_interval_messages=1)
    for i in range(3):
        log.append_as_leader(batch(bytes([i])), 0, i)
        assert log.unflushed_messages == 0
        assert d.unflushed_items(SEG) == 0
    d.crash("unflushed", 10)
    assert PartitionLog(d, DIR, LogConfig(), 11).log_end_offset == 3


def test_flush_interval_messages_flushes_once_threshold_reached():
    d = SimDisk(writeback_ms=None)
    log = new_log(d, flush_interval_messages=3)
    log.append_as_leader(batch(b"a", b"b"), 0, 1)
    assert log.unflushed_messages == 2
    log.append_as_leader(batch(b"c"), 0, 2)
    assert log.unflushed_messages == 0 and log.recovery_point == 3


def test_flush_ms_is_checked_by_the_flush_scheduler():
    # Kafka's LogManager.flushDirtyLogs: each scheduler run flushes a log whose last flush is flush.ms old.
    d = SimDisk(writeback_ms=None)
    log = new_log(d, flush_interval_ms=100)
    assert not log.maybe_flush(500)  # nothing unflushed
    log.append_as_leader(batch(b"a"), 0, 510)
    assert log.maybe_flush(510)  # the last flush was at 0: 510 ms ago
    assert log.unflushed_messages == 0 and log.last_flush_ms == 510
    log.append_as_leader(batch(b"b"), 0, 550)
    assert not log.maybe_flush(609)
    assert log.maybe_flush(610) and log.recovery_point == 2


def test_default_config_never_flushes():
    log = new_log()
    log.append_as_leader(batch(b"a"), 0, 1)
    assert not log.maybe_flush(10**9)
    assert log.unflushed_messages == 1


# =========================================================================== checkpoints
def test_clean_shutdown_file_round_trip_and_delete():
    d = SimDisk(writeback_ms=None)
    assert read_clean_shutdown(d, "data") == -1
    write_clean_shutdown(d, "data", 42, 1)
    assert d.read_value("data/.kafka_cleanshutdown") == '{"version":0,"brokerEpoch":42}'
    d.crash("unflushed", 2)
    assert read_clean_shutdown(d, "data") == 42
    delete_clean_shutdown(d, "data", 3)
    assert read_clean_shutdown(d, "data") == -1
    delete_clean_shutdown(d, "data", 4)  # missing: no-op


@pytest.mark.parametrize("content", [
    "not json",
    "",
    "[1, 2]",
    '{"version":1,"brokerEpoch":42}',
    '{"version":false,"brokerEpoch":42}',
    '{"version":0}',
    '{"version":0,"brokerEpoch":"42"}',
    '{"version":0,"brokerEpoch":4.2}',
    b"\xff\xfe",
    17,
])
def test_malformed_clean_shutdown_file_reads_as_minus_one(content):
    d = SimDisk()
    d.write_atomic("data/.kafka_cleanshutdown", content, 0)
    assert read_clean_shutdown(d, "data") == -1


def test_hwm_checkpoint_round_trip():
    d = SimDisk(writeback_ms=None)
    assert read_hwm_checkpoint(d, "data") == {}
    mapping = {("orders", 1): 17, ("orders", 0): 5, ("audit", 3): 0}
    write_hwm_checkpoint(d, "data", mapping, 1)
    assert d.read_value("data/replication-offset-checkpoint") == "0\n3\naudit 3 0\norders 0 5\norders 1 17\n"
    d.crash("unflushed", 2)
    assert read_hwm_checkpoint(d, "data") == mapping


def test_malformed_hwm_checkpoint_raises():
    d = SimDisk()
    d.write_atomic("data/replication-offset-checkpoint", "0\n2\norders 0 5\n", 0)
    with pytest.raises(ValueError):
        read_hwm_checkpoint(d, "data")


# =========================================================================== property
op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("follow"), st.integers(1, 3), st.integers(0, 2)),
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flush")),
    st.tuples(st.just("advance"), st.integers(0, 300)),
    st.tuples(st.just("crash"), st.sampled_from(["none", "unflushed", "unflushed", "all"])),
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    ops=st.lists(op, max_size=40),
    writeback_ms=st.sampled_from([None, 0, 50, 500]),
    flush_messages=st.sampled_from([None, 1, 3]),
    flush_ms=st.sampled_from([None, 100]),
)
def test_random_appends_truncates_flushes_crashes_keep_leo_and_reload_a_prefix(
        ops, writeback_ms, flush_messages, flush_ms):
    disk = SimDisk(writeback_ms=writeback_ms)
    config = LogConfig(flush_interval_messages=flush_messages, flush_interval_ms=flush_ms)
    now = 0
    log = PartitionLog(disk, DIR, config, now)
    history = [contents(log)]  # every state the log has been in
    epoch = 0
    counter = 0
    last = None
    for o in ops:
        now += 1
        kind = o[0]
        if kind == "append":
            epoch += o[2]
            values = [str(counter + i).encode() for i in range(o[1])]
            counter += o[1]
            log.append_as_leader(batch(*values), epoch, now)
        elif kind == "follow":
            epoch += o[2]
            values = [str(counter + i).encode() for i in range(o[1])]
            counter += o[1]
            log.append_as_follower([batch(*values, base=log.log_end_offset, epoch=epoch)], now)
        elif kind == "truncate":
            log.truncate_to(int(o[1] * log.log_end_offset), now)
        elif kind == "flush":
            log.flush(now)
        elif kind == "advance":
            now += o[1]
            log.maybe_flush(now)
        else:
            before = contents(log)
            all_synced = disk.unflushed_items(SEG) == 0
            disk.crash(o[1], now)
            log = PartitionLog(disk, DIR, config, now)
            after = contents(log)
            if o[1] == "none" or (o[1] == "unflushed" and all_synced):
                assert after == before
            elif o[1] == "all":
                assert after == []
            else:
                assert any(h[:len(after)] == after for h in history)
            if o[1] == "unflushed" and flush_messages == 1 and last is not None and last[0] in ("append", "follow"):
                assert after == before
            epoch = max(epoch, log.epoch_cache.latest_epoch())
        # invariants after every step
        leo = log.log_end_offset
        assert leo == sum(len(b.records) for b in log.batches())
        assert [off for off, _, _ in contents(log)] == list(range(leo))
        for b in log.batches():
            assert log.epoch_cache.epoch_for_offset(b.base_offset) == b.partition_leader_epoch
        assert all(start < leo for _, start in log.epoch_cache.entries())
        assert 0 <= log.high_watermark <= leo
        history.append(contents(log))
        last = o
