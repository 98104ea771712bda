"""The KRaft log (:class:`~kraftlog.raft.log.RaftLog`) as Kafka's tests state it: the leader-epoch cache's
``endOffsetFor`` (LeaderEpochFileCacheTest), ``validateOffsetAndEpoch`` and truncation (MockLogTest,
KafkaMetadataLogTest, ``ReplicatedLog``), and what a load and a crash leave (a torn tail is dropped; a crash
losing unflushed writes keeps what was flushed).

kraftlog's cache is rebuilt from the batches, so Kafka's ``cache.assign(epoch, startOffset)`` is a batch of that
epoch at that offset; the log starts at offset 0. ``OffsetAndEpoch`` is (epoch, offset) here, (offset, epoch) in
Kafka."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.protocol.raft_records import RaftBatch
from kraftlog.raft.log import OffsetAndEpoch, RaftLog
from kraftlog.storage.disk import SimDisk

T = 1_000


def log_of(*epochs_and_counts: tuple[int, int], disk: SimDisk | None = None) -> RaftLog:
    """A log of one batch per (epoch, record count), in order from offset 0."""
    log = RaftLog(disk if disk is not None else SimDisk(), T)
    for epoch, count in epochs_and_counts:
        log.append_as_leader([f"r{log.end_offset + i}" for i in range(count)], epoch, T)
    return log


def oe(epoch: int, offset: int) -> OffsetAndEpoch:
    return OffsetAndEpoch(epoch, offset)


# ============================================================================================== the leader-epoch cache
@pytest.mark.parametrize(("batches", "epoch", "expected"), [
    # shouldAddEpochAndMessageOffsetToCache, shouldReturnLogEndOffsetIfLatestEpochRequested,
    # shouldSupportEpochsThatDoNotStartFromZero: the latest epoch ends at the log end
    pytest.param([(2, 1), (2, 2), (2, 3)], 2, oe(2, 6), id="latest-epoch-ends-at-the-log-end"),
    # shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch,
    # shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages
    pytest.param([(1, 1), (1, 1), (2, 1), (2, 1), (3, 1)], 1, oe(1, 2), id="earlier-epoch-ends-where-the-next-starts"),
    pytest.param([(1, 1), (1, 1), (2, 1), (2, 1), (3, 1)], 2, oe(2, 4), id="middle-epoch-ends-where-the-next-starts"),
    # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    pytest.param([(0, 13), (2, 4), (4, 1)], 1, oe(0, 13), id="missing-epoch-answers-the-largest-below"),
    pytest.param([(0, 13), (2, 4), (4, 1)], 3, oe(2, 17), id="missing-epoch-answers-the-largest-below-2"),
    # shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch
    pytest.param([(5, 11), (6, 1), (7, 1)], 4, oe(4, 0), id="below-the-first-epoch-ends-where-it-starts"),
    # shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked
    pytest.param([(2, 100)], 3, None, id="above-every-epoch-is-undefined"),
    # shouldReturnUndefinedOffsetIfUndefinedEpochRequested
    pytest.param([(2, 11), (3, 1)], -1, None, id="undefined-epoch-is-undefined"),
    # shouldReturnUnsupportedIfNoEpochRecorded, shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested
    pytest.param([], 0, None, id="empty-log-is-undefined"),
    pytest.param([], -1, None, id="empty-log-undefined-epoch-is-undefined"),
])
def test_end_offset_for_epoch_is_the_leader_epoch_caches_end_offset_for(
        batches: list[tuple[int, int]], epoch: int, expected: OffsetAndEpoch | None) -> None:
    """LeaderEpochFileCacheTest: endOffsetFor(epoch) is (the largest epoch <= it, the start of the next epoch), the
    log end for the latest epoch, (epoch, first start) below the first, undefined (None) above the last, for
    UNDEFINED_EPOCH and on an empty log"""
    assert log_of(*batches).end_offset_for_epoch(epoch) == expected


def test_end_offset_for_every_epoch_of_a_log() -> None:
    """MockLogTest.testEndOffsetForEpoch (an epoch above all is no cache entry; validate_offset_and_epoch answers it
    with the log end, as KafkaMetadataLog.endOffsetForEpoch does)"""
    log = log_of((1, 5), (1, 10), (3, 5), (4, 10))
    assert [log.end_offset_for_epoch(e) for e in range(5)] == [oe(0, 0), oe(1, 15), oe(1, 15), oe(3, 20), oe(4, 30)]
    assert log.end_offset_for_epoch(5) is None
    assert log.validate_offset_and_epoch(31, 5).diverging == oe(4, 30)


def test_a_truncation_drops_the_epochs_from_the_truncation_offset_on() -> None:
    """LeaderEpochFileCacheTest.shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries,
    shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest"""
    log = log_of((2, 8), (3, 3), (4, 2))
    log.truncate_to(8, T)
    assert (log.end_offset, log.last_fetched_epoch) == (8, 2) and log.end_offset_for_epoch(3) is None
    log = log_of((2, 8), (3, 1), (3, 2), (4, 2))
    log.truncate_to(9, T)
    assert (log.end_offset, log.last_fetched_epoch) == (9, 3)
    assert log.end_offset_for_epoch(2) == oe(2, 8) and log.end_offset_for_epoch(3) == oe(3, 9)


def test_the_epoch_cache_is_the_same_after_a_reload() -> None:
    """LeaderEpochFileCacheTest.shouldPersistEpochsBetweenInstances (kraftlog rebuilds it from the batches)"""
    disk = SimDisk()
    log = log_of((1, 3), (3, 2), (5, 1), disk=disk)
    log.flush(T)
    again = RaftLog(disk, T)
    assert [again.end_offset_for_epoch(e) for e in range(7)] == [log.end_offset_for_epoch(e) for e in range(7)]
    assert again.load_drops == []


# ============================================================================================== validateOffsetAndEpoch
@pytest.mark.parametrize(("batches", "offset", "epoch", "diverging"), [
    pytest.param([(1, 5)], 4, 1, None, id="testValidateValidEpochAndOffset"),
    pytest.param([(1, 5)], 5, 1, None, id="at-the-log-end"),
    pytest.param([(1, 1)], 2, 1, oe(1, 1), id="testValidateOffsetGreatThanEndOffset"),
    pytest.param([(1, 10), (2, 10)], 11, 1, oe(1, 10), id="testValidateOffsetLessThanLEO"),
    pytest.param([(1, 1)], 1, 2, oe(1, 1), id="testValidateEpochGreaterThanLastKnownEpoch"),
    pytest.param([(1, 5), (2, 5), (4, 5)], 100, 3, oe(2, 10),
                 id="testValidateUnknownEpochLessThanLastKnownGreaterThanOldestSnapshot"),
])
def test_a_fetch_position_is_valid_on_the_log_or_diverges_at_the_end_of_its_epoch_here(
        batches: list[tuple[int, int]], offset: int, epoch: int, diverging: OffsetAndEpoch | None) -> None:
    """MockLogTest / KafkaMetadataLogTest testValidate* (without snapshots): a position is valid when this log's
    end offset for its epoch is that epoch and not below it; otherwise it diverges at that end offset and epoch (the
    log end for an epoch above every epoch here)"""
    assert log_of(*batches).validate_offset_and_epoch(offset, epoch).diverging == diverging


# ============================================================================================== writes and truncation
def test_a_truncation_removes_whole_batches() -> None:
    """MockLogTest.testTruncateTo: truncating into a batch removes all of it"""
    log = log_of((2, 2), (2, 1))
    assert log.end_offset == 3
    assert log.truncate_to(2, T) == 2
    assert log.truncate_to(1, T) == 0 and log.batches() == [] and log.last_fetched_epoch == 0


def test_an_empty_batch_or_an_epoch_going_back_is_not_appended() -> None:
    """MockLogTest.testEmptyAppendNotAllowed, testInvalidMemoryRecords (an epoch below the last one)"""
    log = log_of((3, 2))
    with pytest.raises(ValueError):
        log.append_as_leader([], 3, T)
    with pytest.raises(ValueError):
        log.append_as_leader(["x"], 2, T)
    assert log.end_offset == 2


def test_a_follower_appends_only_the_batches_that_follow_its_log() -> None:
    """MockLogTest.testInvalidLeaderEpoch / testInvalidMemoryRecords: a batch that does not start at the log end or
    goes back in epoch ends the append; the batches before it are kept"""
    log = log_of((1, 2))
    appended = log.append_as_follower([RaftBatch(2, 2, ("a",)), RaftBatch(3, 1, ("b",)), RaftBatch(4, 2, ("c",))], T)
    assert [b.base_offset for b in appended] == [2] and (log.end_offset, log.last_fetched_epoch) == (3, 2)
    assert log.append_as_follower([RaftBatch(5, 2, ("d",))], T) == [] and log.end_offset == 3


def test_truncate_to_end_offset_takes_the_smaller_of_the_leaders_and_its_own_end_of_the_epoch() -> None:
    """ReplicatedLog.truncateToEndOffset when this log has the leader's diverging epoch; KafkaRaftClientTest.
    testFollowerLogReconciliation"""
    log = log_of((3, 2), (3, 1))
    assert log.truncate_to_end_offset(oe(3, 2), T) == 2
    log = log_of((1, 3), (3, 3))
    assert log.truncate_to_end_offset(oe(3, 10), T) == 6


def test_truncate_to_end_offset_without_the_leaders_epoch_goes_to_this_logs_end_of_the_epoch_below() -> None:
    """ReplicatedLog.truncateToEndOffset (localEndOffset.epoch() != leaderEpoch)"""
    # this log: epoch 1 [0, 3) in one-record batches, epoch 3 [3, 6); the leader: epoch 1 [0, 1), epoch 2 [1, 2)
    log = log_of((1, 1), (1, 1), (1, 1), (3, 3))
    assert log.end_offset_for_epoch(2) == oe(1, 3)
    assert log.truncate_to_end_offset(oe(2, 2), T) == 3


# ============================================================================================== load and crash
def test_a_load_drops_a_torn_tail_and_keeps_the_batches_before_it() -> None:
    """Kafka's log recovery at load (LogSegment.recover): a batch that does not follow its predecessor, or goes back
    in epoch, is dropped with everything after it, and the file is truncated there"""
    disk = SimDisk()
    log = log_of((1, 2), (2, 1), disk=disk)
    log.flush(T)
    disk.append(log.path, RaftBatch(7, 2, ("gap",)), T)
    disk.append(log.path, RaftBatch(8, 2, ("after",)), T)
    again = RaftLog(disk, T)
    assert (again.end_offset, again.last_fetched_epoch) == (3, 2)
    assert len(again.load_drops) == 1 and again.load_drops[0].items == 2
    assert len(disk.read(log.path)) == 2
    disk.append(log.path, RaftBatch(3, 1, ("older epoch",)), T)
    assert RaftLog(disk, T).end_offset == 3


def test_a_load_drops_a_corrupt_batch_and_everything_after_it() -> None:
    """Kafka's log recovery at load: a batch whose CRC does not match is dropped, with the rest of the file"""
    disk = SimDisk()
    log = log_of((1, 2), (1, 3), (2, 1), disk=disk)
    log.flush(T)
    assert disk.corrupt(log.path, 1)
    again = RaftLog(disk, T)
    assert (again.end_offset, [b.base_offset for b in again.batches()]) == (2, [0])
    assert again.load_drops != []


def test_a_crash_losing_unflushed_writes_keeps_what_was_flushed() -> None:
    """MockLogTest.testUnflushedRecordsLostAfterReopen"""
    disk = SimDisk(writeback_ms=None)
    log = log_of((1, 5), (2, 10), disk=disk)
    log.flush(T)
    log.append_as_leader(list(range(5)), 3, T)
    log.append_as_leader(list(range(10)), 4, T)
    disk.crash("unflushed", T + 1)
    again = RaftLog(disk, T + 1)
    assert (again.end_offset, again.last_fetched_epoch) == (15, 2)


def test_a_flushed_truncation_survives_a_crash() -> None:
    """KafkaRaftClientTest.testFollowerLogReconciliation (the truncation is flushed: firstUnflushedOffset is the new
    end)"""
    disk = SimDisk(writeback_ms=None)
    log = log_of((1, 3), (2, 3), disk=disk)
    log.flush(T)
    log.truncate_to(3, T)
    log.flush(T)
    disk.crash("unflushed", T + 1)
    assert RaftLog(disk, T + 1).end_offset == 3


# ============================================================================================== snapshots (KIP-630)
def small_log(disk: SimDisk | None = None) -> RaftLog:
    """A log rolling a segment after every batch (segment.bytes 1) and cleaning by any excess (retention 0 bytes)."""
    from kraftlog.storage.metadata_log import MetadataLogConfig
    config = MetadataLogConfig(segment_bytes=1, retention_bytes=0, retention_ms=-1, cleanup_interval_ms=1000)
    return RaftLog(disk if disk is not None else SimDisk(), T, config=config)


def fill(log: RaftLog, *epochs_and_counts: tuple[int, int]) -> None:
    for epoch, count in epochs_and_counts:
        log.append_as_leader([f"r{log.end_offset + i}" for i in range(count)], epoch, T)
    log.flush(T)


def test_segments_roll_and_a_clean_deletes_those_below_the_second_snapshot_and_moves_the_log_start() -> None:
    """KafkaMetadataLogTest testDeleteSnapshots / maybeClean: with two snapshots and the retention exceeded, the log
    start advances to the newer snapshot (deleteBeforeSnapshot), the segments wholly below it and the older snapshot
    go, the epoch cache's first entry starts at the log start; a reload finds the same log"""
    from kraftlog.metadata.snapshot import SnapshotId
    disk = SimDisk()
    log = small_log(disk)
    fill(log, (1, 2), (1, 2), (2, 2), (2, 2), (3, 2))
    assert len([p for p in disk.list("metadata/") if p.endswith(".log")]) == 5
    first, second = SnapshotId(4, 1), SnapshotId(6, 2)
    assert log.create_snapshot(first, [], [], T) and log.create_snapshot(second, [], [], T)
    assert log.maybe_clean(T)
    assert (log.start_offset, log.end_offset, log.files.ids) == (6, 10, [second])
    assert sorted(p.rpartition("/")[2] for p in disk.list("metadata/") if p.endswith(".log")) == [
        "00000000000000000006.log", "00000000000000000008.log"]
    assert log.end_offset_for_epoch(2) == oe(2, 8) and log.validate_offset_and_epoch(4, 1).snapshot == second
    again = small_log(disk)
    assert (again.start_offset, again.end_offset, again.last_fetched_epoch, again.files.ids) == (6, 10, 3, [second])
    assert again.validate_offset_and_epoch(6, 2).snapshot is None and again.validate_offset_and_epoch(6, 2).diverging \
        is None


@pytest.mark.parametrize(("offset", "epoch", "kind"), [
    # KafkaMetadataLogTest: testValidateOffsetLessThanOldestSnapshotOffset
    pytest.param(3, 1, "snapshot", id="below-the-log-start"),
    # testValidateOffsetEqualToOldestSnapshotOffset with another epoch
    pytest.param(6, 1, "snapshot", id="at-the-start-with-another-epoch"),
    # testValidateEpochLessThanOldestSnapshotEpoch
    pytest.param(8, 1, "snapshot", id="epoch-below-the-oldest-snapshot"),
    # testValidateOffsetEqualToOldestSnapshotOffset
    pytest.param(6, 2, "valid", id="at-the-start-in-the-snapshots-epoch"),
    # testValidateValidEpochAndOffset
    pytest.param(8, 2, "valid", id="on-the-log"),
    # testValidateUnknownEpochLessThanLastKnownGreaterThanOldestSnapshot's diverging answer
    pytest.param(9, 2, "diverging", id="past-the-end-of-its-epoch"),
])
def test_validate_offset_and_epoch_with_a_snapshot_at_the_log_start(offset: int, epoch: int, kind: str) -> None:
    """ReplicatedLog.validateOffsetAndEpoch with the oldest snapshot (6, 2) at the log start"""
    from kraftlog.metadata.snapshot import SnapshotId
    log = small_log()
    fill(log, (1, 2), (1, 2), (2, 2), (2, 2), (3, 2))
    log.create_snapshot(SnapshotId(6, 2), [], [], T)
    assert log.delete_before_snapshot(SnapshotId(6, 2), T)
    valid = log.validate_offset_and_epoch(offset, epoch)
    got = "snapshot" if valid.snapshot is not None else "diverging" if valid.diverging is not None else "valid"
    assert got == kind, valid
    if kind == "diverging":
        assert valid.diverging == oe(2, 8)


def test_a_snapshot_beyond_the_log_restarts_the_log_at_it() -> None:
    """testTruncateFullyToLatestSnapshot / testDoesntTruncateFully: a snapshot of a later epoch, or the same epoch
    past the end, makes the log empty at its end offset (older snapshots go); one within the log changes nothing"""
    from kraftlog.metadata.snapshot import SnapshotId
    log = small_log()
    fill(log, (1, 2), (2, 2))
    log.create_snapshot(SnapshotId(2, 1), [], [], T)
    assert not log.truncate_to_latest_snapshot(T) and log.end_offset == 4
    log.files.write(SnapshotId(20, 5), [], T)
    assert log.truncate_to_latest_snapshot(T)
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch, log.files.ids) == (20, 20, 5,
                                                                                        [SnapshotId(20, 5)])
    fill(log, (5, 1))
    assert log.batches()[0].base_offset == 20


def test_a_load_uses_an_older_snapshot_when_the_latest_does_not_decode_and_refuses_when_none_does() -> None:
    """A flipped byte in the latest snapshot: the load names it and uses the older one the log continues; with no
    readable snapshot at or above a log start above 0 the log cannot be loaded whole (the node refuses to start)"""
    from kraftlog.metadata.snapshot import SnapshotId
    from kraftlog.storage.metadata_log import MetadataLogLoadError
    disk = SimDisk()
    log = small_log(disk)
    fill(log, (1, 2), (1, 2), (2, 2), (2, 2))
    for sid in (SnapshotId(4, 1), SnapshotId(6, 2)):
        log.create_snapshot(sid, [], [], T)
    path = log.files.path(SnapshotId(6, 2))
    data = bytearray(disk.read_value(path))
    data[-3] ^= 1
    disk.write_atomic(path, bytes(data), T)
    again = small_log(disk)
    assert again.files.ids == [SnapshotId(4, 1)] and "00000000000000000006-0000000002" in again.load_problems[0]
    assert again.delete_before_snapshot(SnapshotId(4, 1), T) and again.start_offset == 4
    disk.write_atomic(again.files.path(SnapshotId(4, 1)), b"not a snapshot", T)
    with pytest.raises(MetadataLogLoadError, match="starts at offset 4"):
        small_log(disk)


def test_a_truncation_below_the_log_start_is_a_safety_error() -> None:
    """What a snapshot holds committed: truncating below the log start would lose it (Kafka's truncateTo below the
    high watermark is an IllegalArgumentException)"""
    from kraftlog.metadata.snapshot import SnapshotId
    from kraftlog.raft.states import RaftSafetyError
    log = small_log()
    fill(log, (1, 2), (1, 2), (2, 2))
    log.create_snapshot(SnapshotId(4, 1), [], [], T)
    log.delete_before_snapshot(SnapshotId(4, 1), T)
    with pytest.raises(RaftSafetyError):
        log.truncate_to(2, T)
    assert log.truncate_to(4, T) == 4 and log.last_fetched_epoch == 1


# ============================================================================================== a property

_OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 1), st.integers(1, 3)),   # epoch step, record count
    st.tuples(st.just("snapshot"), st.integers(0, 6), st.just(0)),          # how many batches below the end
    st.tuples(st.just("clean"), st.just(0), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 4), st.just(0)),          # how many batches to drop
    st.tuples(st.just("reload"), st.just(0), st.just(0)),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ops=_OPS)
def test_a_reload_always_finds_the_log_it_left(ops: list[tuple[str, int, int]]) -> None:
    """Appends, snapshots at batch boundaries, cleanings (every segment one batch, retention 0: every clean advances
    to the second snapshot) and truncations at or above the log start, in any order: reloading the log from its disk
    gives the same start, end, last fetched epoch, batches and snapshots, and the leader-epoch cache answers the
    same for every epoch; the log never holds a batch below its start and every snapshot ends at or after it."""
    from kraftlog.metadata.snapshot import SnapshotId
    disk = SimDisk()
    log = small_log(disk)
    epoch = 1
    for op, a, b in ops:
        if op == "append":
            epoch += a
            log.append_as_leader([f"r{log.end_offset + i}" for i in range(b)], epoch, T)
            log.flush(T)
        elif op == "snapshot" and log.batches():
            held = log.batches()
            batch = held[max(0, len(held) - 1 - a)]
            log.create_snapshot(SnapshotId(batch.next_offset, batch.epoch), [], [], T)
        elif op == "clean":
            log.maybe_clean(T)
        elif op == "truncate" and log.batches():
            held = log.batches()
            target = held[max(0, len(held) - a)].base_offset if a else log.end_offset
            snapshot_ends = [s.end_offset for s in log.files.ids]
            if all(target >= end for end in snapshot_ends):  # a snapshot is of committed data: never truncated
                log.truncate_to(target, T)
                log.flush(T)
        elif op == "reload":
            log = small_log(disk)
        again = small_log(disk)
        assert (again.start_offset, again.end_offset, again.last_fetched_epoch) == (
            log.start_offset, log.end_offset, log.last_fetched_epoch), op
        assert list(again.batches()) == list(log.batches()) and again.files.ids == log.files.ids, op
        for e in range(0, epoch + 2):
            assert again.end_offset_for_epoch(e) == log.end_offset_for_epoch(e), (op, e)
        assert all(b.base_offset >= log.start_offset for b in log.batches())
        assert all(s.end_offset >= log.start_offset for s in log.files.ids)


# ============================================================================================== found in review
def test_a_flush_syncs_every_segment_written_since_the_last_even_when_one_rolled_between() -> None:
    """Kafka's log.flush up to the log end: two batches appended in one linger roll a segment between them; a crash
    losing what was not synced keeps both (before, only the last segment was synced and a committed batch of the
    first could vanish)."""
    disk = SimDisk()
    log = small_log(disk)
    log.append_as_leader(["a"], 1, T)
    log.append_as_leader(["b"], 1, T)
    log.append_as_leader(["c"], 1, T)
    log.flush(T)
    assert len([p for p in disk.list("metadata/") if p.endswith(".log")]) == 3
    disk.crash("unflushed", T)
    assert small_log(disk).end_offset == 3


def test_a_damaged_first_segment_ends_the_log_there_and_the_later_segments_go() -> None:
    """Kafka's recovery: nothing after a damaged batch is part of the log. Before, the next segment's batches were
    read as if they followed, and read(0) handed out offset 1 as the first batch."""
    disk = SimDisk()
    log = small_log(disk)
    fill(log, (1, 1), (1, 1), (1, 1))
    disk.corrupt(log.path.replace("2.log", "0.log"), 0)
    again = small_log(disk)
    assert (again.start_offset, again.end_offset, list(again.batches())) == (0, 0, [])
    assert again.read(0, 100) == () and not [p for p in disk.list("metadata/") if p.endswith(".log")
                                             and not p.endswith("00000000000000000000.log")]


def test_a_fetched_snapshot_restarts_the_log_even_below_its_last_epoch() -> None:
    """A follower whose uncommitted tail is of a later epoch than the leader's snapshot: the install truncates the
    log fully (before, nothing was truncated and the follower looped on the same SnapshotId)."""
    from kraftlog.metadata.snapshot import SnapshotId
    from kraftlog.protocol.wire.snapshots import encode_snapshot
    log = small_log()
    fill(log, (1, 3), (2, 2))
    sid = SnapshotId(6, 1)
    log.install_snapshot(sid, encode_snapshot([], 1, T), T)
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch, list(log.batches())) == (6, 6, 1, [])


def test_time_retention_counts_the_oldest_snapshots_age_after_a_restart() -> None:
    """metadata.max.retention.ms after a reload: the oldest snapshot's age is read from its header (before, an
    unread snapshot was taken as written now and never aged)."""
    from kraftlog.metadata.snapshot import SnapshotId
    from kraftlog.storage.metadata_log import MetadataLogConfig
    config = MetadataLogConfig(segment_bytes=1, retention_bytes=-1, retention_ms=1000)
    disk = SimDisk()
    log = RaftLog(disk, T, config=config)
    fill(log, (1, 1), (1, 1), (1, 1))
    log.create_snapshot(SnapshotId(1, 1), [], [], T)
    log.create_snapshot(SnapshotId(2, 1), [], [], T)
    again = RaftLog(disk, T + 5000, config=config)
    assert again.maybe_clean(T + 5000) and again.start_offset == 2


def test_snapshots_below_the_log_start_are_deleted_at_load() -> None:
    """Kafka's recoverSnapshots: a clean that stopped after its checkpoint left an older snapshot file: the load
    deletes it."""
    from kraftlog.metadata.snapshot import SnapshotId
    disk = SimDisk()
    log = small_log(disk)
    fill(log, (1, 1), (1, 1), (1, 1), (1, 1))
    log.create_snapshot(SnapshotId(2, 1), [], [], T)
    log.create_snapshot(SnapshotId(3, 1), [], [], T)
    disk.write_atomic(f"{log.directory}/log-start-offset", "3\n", T)
    again = small_log(disk)
    assert again.files.ids == [SnapshotId(3, 1)] and again.start_offset == 3
    assert [p.rpartition("/")[2] for p in disk.list("metadata/") if p.endswith(".checkpoint")] == [
        SnapshotId(3, 1).file_name()]
