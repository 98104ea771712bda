"""The metadata log's segments and snapshots (issue 34): ``storage/metadata_log.py`` on a SimDisk and on files.

Ports Kafka's ``KafkaMetadataLogTest`` cases where they apply (cleaning by retention, deleteBeforeSnapshot,
truncation to a fetched snapshot) and the loading rules (the newest readable snapshot the log continues).
"""

from __future__ import annotations

import uuid

import pytest

from kraftlog.metadata.records import ConfigRecord, TopicRecord
from kraftlog.metadata.snapshot import SnapshotId, metadata_record_bytes
from kraftlog.net.disk import FileDisk
from kraftlog.protocol.errors import WireError
from kraftlog.protocol.wire.snapshots import encode_snapshot
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.metadata_log import (
    METADATA_LOG_DIR,
    MetadataLog,
    MetadataLogConfig,
    MetadataLogLoadError,
)

NO_RETENTION = MetadataLogConfig(segment_bytes=1 << 30, retention_bytes=-1, retention_ms=-1)


def recs(n: int, start: int = 0) -> list[ConfigRecord]:
    return [ConfigRecord(4, "", "log.retention.ms", str(1000 + i)) for i in range(start, start + n)]


REC_BYTES = metadata_record_bytes(recs(1)[0])


def files(disk) -> list[str]:
    """The segment and snapshot files (not the log start checkpoint)."""
    return [n for p in disk.list(METADATA_LOG_DIR + "/") if (n := p.rpartition("/")[2]) != "log-start-offset"]


def filled(disk, n: int, config: MetadataLogConfig, per_append: int = 1) -> MetadataLog:
    log = MetadataLog(disk, config, 0, flush=True)
    for i in range(0, n, per_append):
        log.append(recs(per_append, i), i)
    return log


# ============================================================ segments
def test_segments_roll_at_segment_bytes_and_are_named_by_base_offset():
    """metadata.log.segment.bytes: a new segment once the active one holds at least that many bytes; each file is
    named by its first record's offset, as Kafka's segments are."""
    disk = SimDisk()
    log = filled(disk, 10, MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1))
    assert files(disk) == ["00000000000000000000.log", "00000000000000000003.log", "00000000000000000006.log",
                           "00000000000000000009.log"]
    assert log.start_offset == 0 and log.end_offset == 10
    again = MetadataLog(disk, NO_RETENTION, 99, flush=True)
    assert list(again) == recs(10) and again.end_offset == 10


def test_segments_roll_at_segment_ms():
    """metadata.log.segment.ms: a segment at least that old is rolled at the next append."""
    disk = SimDisk()
    log = MetadataLog(disk, MetadataLogConfig(segment_ms=1000, retention_bytes=-1), 0, flush=True)
    log.append(recs(1), 0)
    log.append(recs(1, 1), 999)
    log.append(recs(1, 2), 1000)
    assert files(disk) == ["00000000000000000000.log", "00000000000000000002.log"]


def test_a_missing_segment_between_two_others_refuses_the_load():
    disk = SimDisk()
    filled(disk, 9, MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1))
    disk.delete(f"{METADATA_LOG_DIR}/00000000000000000003.log", 0)
    with pytest.raises(MetadataLogLoadError, match="starts at offset 6 where 3 was expected"):
        MetadataLog(disk, NO_RETENTION, 0, flush=True)


def test_records_by_offset_take_absolute_offsets():
    disk = SimDisk()
    log = filled(disk, 10, NO_RETENTION)
    log.create_snapshot(SnapshotId(4, 0), [], 0)
    log.create_snapshot(SnapshotId(7, 0), [], 0)
    assert log.delete_before_snapshot(SnapshotId(7, 0), 0)
    assert (log.start_offset, len(log), log[7], log[-1]) == (7, 10, recs(1, 7)[0], recs(1, 9)[0])
    again = MetadataLog(disk, NO_RETENTION, 1, flush=True)  # the log start inside a segment is checkpointed
    assert (again.start_offset, list(again)) == (7, recs(3, 7))
    assert log[8:] == recs(2, 8) and log.read(7, 2) == recs(2, 7)
    with pytest.raises(IndexError):
        log[6]
    with pytest.raises(IndexError):
        log[3:]


# ============================================================ cleaning (KafkaMetadataLogTest)
def test_delete_snapshots():
    """KafkaMetadataLogTest.testDeleteSnapshots: six snapshots and a retention of 100 bytes: cleaning keeps only the
    latest, and the log starts at it."""
    disk = SimDisk()
    filled(disk, 1001, MetadataLogConfig(segment_bytes=1024, retention_bytes=-1, retention_ms=-1))
    log = MetadataLog(disk, MetadataLogConfig(segment_bytes=1024, retention_bytes=-1, retention_ms=-1), 0, flush=True)
    for offset in (100, 200, 300, 400, 500, 600):
        log.create_snapshot(SnapshotId(offset, 1), [], 0)
    log = MetadataLog(disk, MetadataLogConfig(segment_bytes=1024, retention_bytes=100, retention_ms=-1), 0,
                      flush=True)
    assert len(log.snapshots) == 6
    assert log.maybe_clean(0)
    assert log.snapshots == [SnapshotId(600, 1)] and log.start_offset == 600
    segments = sorted(int(name[:20]) for name in files(disk) if name.endswith(".log"))
    assert segments[0] <= 600 < (segments[1] if len(segments) > 1 else 10**9)  # only segments wholly below go


def test_advance_log_start_offset_after_cleaning():
    """KafkaMetadataLogTest.testAdvanceLogStartOffsetAfterCleaning: no snapshot, no cleaning; with two and the
    retention exceeded, the log start moves to the second."""
    disk = SimDisk()
    log = filled(disk, 101 * 47, MetadataLogConfig(segment_bytes=512, retention_bytes=256, retention_ms=-1), 47)
    assert not log.maybe_clean(0)  # no snapshot exists
    log2 = MetadataLog(disk, NO_RETENTION, 0, flush=True)
    log2.create_snapshot(SnapshotId(1000, 1), [], 0)
    log2.create_snapshot(SnapshotId(2000, 1), [], 0)
    log = MetadataLog(disk, MetadataLogConfig(segment_bytes=512, retention_bytes=256, retention_ms=-1), 0, flush=True)
    before = log.start_offset
    assert log.maybe_clean(0)
    assert before < log.start_offset == 2000


def test_soft_retention_limit_keeps_the_latest_snapshot():
    """KafkaMetadataLogTest.testSoftRetentionLimit: cleaning cannot bring the size under the retention when the one
    snapshot it must keep is larger: it stops with one snapshot."""
    disk = SimDisk()
    config = MetadataLogConfig(segment_bytes=10240, retention_bytes=10240, retention_ms=-1)
    log = filled(disk, 2001, NO_RETENTION)
    big = [TopicRecord(f"t{i}", uuid.UUID(int=i + 1)) for i in range(500)]
    log.create_snapshot(SnapshotId(1000, 1), big, 0)
    log.create_snapshot(SnapshotId(2000, 1), big, 0)
    log = MetadataLog(disk, config, 0, flush=True)
    assert log.maybe_clean(0)
    assert log.snapshots == [SnapshotId(2000, 1)] and log.size_bytes() > config.retention_bytes


def test_retention_ms_deletes_an_old_snapshot_but_never_the_latest():
    """metadata.max.retention.ms: the oldest snapshot older than the retention goes (and the log start moves to the
    next one); the latest stays however old."""
    disk = SimDisk()
    config = MetadataLogConfig(segment_bytes=4 * REC_BYTES, retention_bytes=-1, retention_ms=1000)
    log = filled(disk, 20, config)
    log.create_snapshot(SnapshotId(8, 0), [], 100)
    log.create_snapshot(SnapshotId(16, 0), [], 200)
    assert log.snapshots == [SnapshotId(8, 0), SnapshotId(16, 0)]
    assert log.maybe_clean(1101) and log.snapshots == [SnapshotId(16, 0)] and log.start_offset == 16
    assert not log.maybe_clean(10**9) and log.snapshots == [SnapshotId(16, 0)]


def test_delete_before_snapshot_needs_a_kept_snapshot_within_the_log():
    """deleteBeforeSnapshot: only a kept snapshot above the log start and not past the log end."""
    disk = SimDisk()
    log = filled(disk, 10, NO_RETENTION)
    log.create_snapshot(SnapshotId(5, 0), [], 0)
    assert not log.delete_before_snapshot(SnapshotId(6, 0), 0)  # not kept
    assert log.delete_before_snapshot(SnapshotId(5, 0), 0)
    assert not log.delete_before_snapshot(SnapshotId(5, 0), 0)  # not above the log start any more


def test_create_existing_snapshot():
    """KafkaMetadataLogTest.testCreateExistingSnapshot: a snapshot id that exists is not written again."""
    disk = SimDisk()
    log = filled(disk, 5, NO_RETENTION)
    assert log.create_snapshot(SnapshotId(5, 0), recs(1), 0)
    assert not log.create_snapshot(SnapshotId(5, 0), recs(2), 0)
    assert log.read_snapshot(SnapshotId(5, 0)).records == recs(1)


# ============================================================ loading
def test_a_restart_loads_the_newest_snapshot_and_the_records_after_it():
    disk = SimDisk()
    log = filled(disk, 10, NO_RETENTION)
    log.create_snapshot(SnapshotId(4, 0), recs(1), 0)
    log.create_snapshot(SnapshotId(7, 0), recs(2), 0)
    snap, base, after = MetadataLog(disk, NO_RETENTION, 0, flush=True).load(0)
    assert snap is not None and snap.snapshot_id == SnapshotId(7, 0) and snap.records == recs(2)
    assert (base, list(after)) == (7, recs(3, 7))


def test_a_corrupt_newest_snapshot_falls_back_to_an_older_one_the_log_continues():
    disk = SimDisk()
    log = filled(disk, 10, NO_RETENTION)
    log.create_snapshot(SnapshotId(4, 0), recs(1), 0)
    log.create_snapshot(SnapshotId(7, 0), recs(2), 0)
    path = f"{METADATA_LOG_DIR}/{SnapshotId(7, 0).file_name()}"
    data = bytearray(disk.read_value(path))
    data[len(data) // 2] ^= 0xFF
    disk.write_atomic(path, bytes(data), 0)
    again = MetadataLog(disk, NO_RETENTION, 0, flush=True)
    snap, base, after = again.load(0)
    assert snap is not None and snap.snapshot_id == SnapshotId(4, 0) and base == 4 and list(after) == recs(6, 4)
    assert len(again.load_problems) == 1 and "00000000000000000007-0000000000.checkpoint not used" in \
        again.load_problems[0]


def test_no_readable_snapshot_where_the_log_no_longer_starts_at_0_refuses_the_load():
    """A node must not come up with a partial image: the log was cleaned below its only snapshot and that snapshot
    does not decode."""
    disk = SimDisk()
    log = filled(disk, 10, MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1, retention_ms=-1))
    log.create_snapshot(SnapshotId(3, 0), recs(1), 0)
    log.create_snapshot(SnapshotId(6, 0), recs(1), 0)
    assert log.delete_before_snapshot(SnapshotId(6, 0), 0) and log.start_offset == 6
    disk.write_atomic(f"{METADATA_LOG_DIR}/{SnapshotId(6, 0).file_name()}", b"\x00" * 40, 0)
    with pytest.raises(MetadataLogLoadError, match="starts at offset 6 and no snapshot"):
        MetadataLog(disk, NO_RETENTION, 0, flush=True).load(0)


def test_a_snapshot_beyond_the_log_end_restarts_the_log_there():
    """A broker's copy is not flushed: after a crash its records may be gone while its snapshot (written atomically)
    is there. The log starts at the snapshot (Kafka truncates to the latest snapshot)."""
    disk = SimDisk(writeback_ms=None)
    log = MetadataLog(disk, NO_RETENTION, 0, flush=False)
    log.append(recs(8), 0)
    log.create_snapshot(SnapshotId(8, 0), recs(2), 0)
    disk.crash("unflushed", 1)
    again = MetadataLog(disk, NO_RETENTION, 1, flush=False)
    assert again.end_offset == 0
    snap, base, after = again.load(1)
    assert snap is not None and (base, list(after), again.start_offset, again.end_offset) == (8, [], 8, 8)
    again.append(recs(1, 8), 2)
    assert files(disk)[-1] == "00000000000000000008.log"


# ============================================================ a fetched snapshot
def test_truncate_fully_to_an_installed_snapshot():
    """KafkaMetadataLogTest.testTruncateFullyToLatestSnapshot / testTruncateWillRemoveOlderSnapshot: installing a
    fetched snapshot deletes every segment and every older snapshot; the log starts (and ends) at it."""
    disk = SimDisk()
    log = filled(disk, 10, MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1))
    log.create_snapshot(SnapshotId(5, 0), recs(1), 0)
    data = encode_snapshot(recs(3), 2, 77)
    snap = log.install_snapshot(SnapshotId(40, 2), data, 1)
    assert snap.records == recs(3) and snap.last_contained_log_timestamp_ms == 77
    assert (log.start_offset, log.end_offset, log.snapshots) == (40, 40, [SnapshotId(40, 2)])
    assert files(disk) == [SnapshotId(40, 2).file_name()]
    log.append(recs(1), 2)
    again = MetadataLog(disk, NO_RETENTION, 3, flush=True)
    loaded, base, after = again.load(3)
    assert loaded is not None and loaded.snapshot_id == SnapshotId(40, 2) and (base, list(after)) == (40, recs(1))


def test_a_fetched_snapshot_that_does_not_decode_changes_nothing():
    disk = SimDisk()
    log = filled(disk, 5, NO_RETENTION)
    with pytest.raises(WireError):
        log.install_snapshot(SnapshotId(40, 2), encode_snapshot(recs(3), 2, 77)[:-10], 1)
    assert (log.start_offset, log.end_offset, log.snapshots) == (0, 5, [])


# ============================================================ on files
def test_on_files_a_segment_batch_carries_its_absolute_offset(tmp_path):
    """The file-backed metadata log: a segment named by its base offset holds batches at absolute offsets (its
    name's offset plus the position), and loads back; snapshots are .checkpoint files."""
    config = MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1, retention_ms=-1)
    with FileDisk(str(tmp_path)) as disk:
        log = filled(disk, 8, config)
        log.create_snapshot(SnapshotId(6, 0), recs(2), 0)
        assert log.delete_before_snapshot(SnapshotId(6, 0), 0)
    with FileDisk(str(tmp_path)) as disk:
        again = MetadataLog(disk, config, 1, flush=True)
        snap, base, after = again.load(1)
        assert snap is not None and snap.records == recs(2) and (base, list(after)) == (6, recs(2, 6))
        assert files(disk) == ["00000000000000000006-0000000000.checkpoint", "00000000000000000006.log"]
    from kraftlog.net.segment import segment_batches
    spans = segment_batches(tmp_path / METADATA_LOG_DIR / "00000000000000000006.log")
    assert [s.base_offset for s in spans] == [6, 7]


def test_a_copy_that_serves_nobody_does_not_read_the_segments_below_its_snapshot():
    """A broker's copy (serves=False) restarts from its newest readable snapshot: the segments wholly below it are
    not read at load (the file-backed disk would decode every record), and the load gives what a full read gives."""
    disk = SimDisk()
    config = MetadataLogConfig(segment_bytes=3 * REC_BYTES, retention_bytes=-1, retention_ms=-1)
    log = filled(disk, 20, config)
    log.create_snapshot(SnapshotId(13, 0), recs(2), 0)
    reads: list[str] = []

    class Counting:
        def __getattr__(self, name):
            return getattr(disk, name)

        def read(self, path):
            reads.append(path.rpartition("/")[2])
            return disk.read(path)

    copy = MetadataLog(Counting(), config, 1, flush=False, serves=False)
    assert reads == ["00000000000000000012.log", "00000000000000000015.log", "00000000000000000018.log"]
    full = MetadataLog(disk, config, 1, flush=False)
    a, b = copy.load(1), full.load(1)
    assert a[0] is not None and b[0] is not None and a[0].records == b[0].records
    assert (a[1], list(a[2])) == (b[1], list(b[2])) == (13, recs(7, 13))
    copy.create_snapshot(SnapshotId(20, 0), recs(1), 2)
    assert copy.delete_before_snapshot(SnapshotId(20, 0), 2)  # the unread segments go too
    assert files(disk)[0] == "00000000000000000018.log"
