"""FileDisk (kraftlog.net.disk): the real-process Disk keeps Kafka's file formats and recovers as Kafka does.

* The Disk interface behaves like SimDisk's (a fixture parametrized over both), and the storage tests of
  tests/test_storage.py that are about the interface (epoch cache, PartitionLog, checkpoints) pass on
  a FileDisk too.
* Partition segments are Kafka v2 batches byte for byte; the metadata log is one v2 batch per record.
* A torn tail (cut mid-batch, garbage, zeros, a bad CRC) is dropped on load and the file truncated; a
  CRC-valid batch that cannot be decoded is an error, never truncated.
* fsync moves the durable length and syncs the directories a new file needs; atomic writes leave no tmp.
* A PartitionLog, a controller's metadata log and a process killed with SIGKILL all recover.
"""

from __future__ import annotations

import inspect
import itertools
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import uuid
from random import Random

import pytest
from crc32c import crc32c

import test_compaction as compaction_tests
import test_segments as segments_tests
import test_storage as storage_tests
from kraftlog.controller.controller import METADATA_LOG, QuorumController
from kraftlog.level import DEFAULT
from kraftlog.metadata import records as mdr
from kraftlog.metadata.codec import decode_metadata_record
from kraftlog.net.disk import LOCK_FILE, DirectoryLockedError, FileDisk
from kraftlog.net.meta_properties import META_PROPERTIES, read_meta_properties, write_meta_properties
from kraftlog.net.segment import UndecodableLogError
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.protocol.wire import decode_batches, encode_batches
from kraftlog.storage import (
    Disk,
    LogConfig,
    PartitionLog,
    SimDisk,
    read_hwm_checkpoint,
    write_hwm_checkpoint,
)

DIR = "data/t-0"
SEG = f"{DIR}/00000000000000000000.log"
OTHER = "data/u-1/00000000000000000000.log"


def batch(base: int, *values: bytes, epoch: int = 0, ts: int = 1700000000000, **kw) -> RecordBatch:
    return RecordBatch(base, epoch, tuple(Record(ts + i, None, v) for i, v in enumerate(values)), **kw)


def batches(n: int, start: int = 0) -> list[RecordBatch]:
    """``n`` contiguous batches of 1-3 records from offset ``start``, epochs rising every 3 batches."""
    out = []
    base = start
    for i in range(n):
        values = [f"v{base + j}".encode() for j in range(1 + i % 3)]
        out.append(batch(base, *values, epoch=i // 3))
        base += len(values)
    return out


def file_bytes(disk: FileDisk, path: str) -> bytes:
    with open(os.path.join(disk.root, path), "rb") as f:
        return f.read()


def meta_records() -> list:
    tid = uuid.UUID(int=7)
    return [
        mdr.RegisterBrokerRecord(1, uuid.UUID(int=1), 0, rack="r1", listeners=("CLIENT://127.0.0.1:9092",)),
        mdr.BrokerRegistrationChangeRecord(1, 0, fenced=False),
        mdr.TopicRecord("orders", tid),
        mdr.PartitionRecord(0, tid, (1, 2, 3), (1, 2), 1, leader_epoch=2, partition_epoch=3),
        mdr.PartitionChangeRecord(0, tid, isr=(1,), eligible_leader_replicas=(2,), last_known_leader=-1),
        mdr.ConfigRecord(2, "orders", "min.insync.replicas", "2"),
        mdr.ConfigRecord(4, "", "unclean.recovery.strategy", None),
        mdr.ClearElrRecord("orders"),
        mdr.ClearElrRecord(),
    ]


@pytest.fixture
def fdisk(tmp_path):
    d = FileDisk(tmp_path / "node")
    yield d
    d.close()


def reopen(d: FileDisk, **kw) -> FileDisk:
    """A process restart: close the FileDisk and open a new one on the same root."""
    d.close()
    return FileDisk(d.root, **kw)


# =========================================================================== Disk conformance
class Harness:
    """One Disk under test and how to restart the node that owns it (SimDisk: ``crash("none")``, nothing
    lost; FileDisk: close and reopen the root, as a new process does)."""

    def __init__(self, kind: str, root) -> None:
        self.kind = kind
        self.root = root
        self.disk = SimDisk(writeback_ms=None) if kind == "sim" else FileDisk(root)

    def restart(self):
        if self.kind == "sim":
            self.disk.crash("none", 0)
        else:
            self.disk = reopen(self.disk)
        return self.disk

    def close(self) -> None:
        if self.kind == "file":
            self.disk.close()


@pytest.fixture(params=["sim", "file"])
def h(request, tmp_path):
    harness = Harness(request.param, tmp_path / "node")
    yield harness
    harness.close()


def test_both_disks_implement_the_disk_protocol(h):
    assert isinstance(h.disk, Disk)


def test_append_then_read_returns_items_in_order_and_they_survive_a_restart(h):
    items = batches(5)
    for i, b in enumerate(items):
        h.disk.append(SEG, b, i)
    assert h.disk.read(SEG) == items
    assert h.disk.exists(SEG)
    assert h.restart().read(SEG) == items


def test_read_of_a_missing_log_is_empty_and_creates_nothing(h):
    assert h.disk.read(SEG) == []
    assert not h.disk.exists(SEG)
    assert h.disk.list("") == []
    h.disk.fsync(SEG, 0)  # missing: no-op
    h.disk.truncate(SEG, 0, 0)  # missing: no-op
    assert not h.disk.exists(SEG)


def test_truncate_keeps_the_first_items_and_ignores_longer_lengths(h):
    items = batches(4)
    for b in items:
        h.disk.append(SEG, b, 0)
    h.disk.truncate(SEG, 10, 1)  # longer: no-op
    h.disk.truncate(SEG, 4, 1)  # equal: no-op
    assert h.disk.read(SEG) == items
    h.disk.truncate(SEG, 2, 2)
    assert h.disk.read(SEG) == items[:2]
    with pytest.raises(ValueError):
        h.disk.truncate(SEG, -1, 3)
    h.disk.truncate(SEG, 0, 4)
    assert h.disk.read(SEG) == [] and h.disk.exists(SEG)


def test_truncate_then_append_then_restart_gives_the_new_items(h):
    items = batches(4)
    for b in items:
        h.disk.append(SEG, b, 0)
    h.disk.fsync(SEG, 1)
    h.disk.truncate(SEG, 1, 2)
    replacement = batch(items[1].base_offset, b"x", b"y", epoch=7)
    h.disk.append(SEG, replacement, 3)
    h.disk.fsync(SEG, 4)
    assert h.restart().read(SEG) == [items[0], replacement]


def test_values_are_written_atomically_read_back_deleted_and_listed(h):
    d = h.disk
    assert d.read_value("data/replication-offset-checkpoint") is None
    d.write_atomic("data/replication-offset-checkpoint", "0\n0\n", 1)
    d.write_atomic("data/replication-offset-checkpoint", "0\n1\nt 0 5\n", 2)  # replaces
    d.write_atomic(f"{DIR}/leader-epoch-checkpoint", "0\n1\n0 0\n", 3)
    d.write_atomic("data/__consumer_offsets/g1", '{"t-0": [5, 0, null]}', 4)
    d.append(SEG, batch(0, b"a"), 5)
    d = h.restart()
    assert d.read_value("data/replication-offset-checkpoint") == "0\n1\nt 0 5\n"
    assert d.exists("data/__consumer_offsets/g1") and not d.exists("data/__consumer_offsets/g2")
    assert d.list("data/") == ["data/__consumer_offsets/g1", "data/replication-offset-checkpoint",
                               f"{DIR}/00000000000000000000.log", f"{DIR}/leader-epoch-checkpoint"]
    assert d.list("data/__consumer_offsets/") == ["data/__consumer_offsets/g1"]
    assert d.list("data/t") == [SEG, f"{DIR}/leader-epoch-checkpoint"]
    assert d.list("metadata/") == []
    d.delete("data/__consumer_offsets/g1", 6)
    d.delete(SEG, 6)
    d.delete("data/__consumer_offsets/g1", 7)  # missing: no-op
    assert not d.exists(SEG) and d.read(SEG) == [] and d.read_value("data/__consumer_offsets/g1") is None
    assert h.restart().list("") == ["data/replication-offset-checkpoint", f"{DIR}/leader-epoch-checkpoint"]


def test_a_deleted_log_file_starts_empty_when_appended_again(h):
    h.disk.append(SEG, batch(0, b"a"), 0)
    h.disk.delete(SEG, 1)
    h.disk.append(SEG, batch(0, b"b"), 2)
    assert h.restart().read(SEG) == [batch(0, b"b")]


def test_metadata_records_round_trip(h):
    recs = meta_records()
    for i, r in enumerate(recs):
        h.disk.append(METADATA_LOG, r, i)
    h.disk.fsync(METADATA_LOG, 10)
    assert h.restart().read(METADATA_LOG) == recs


def test_append_many_appends_in_order_and_survives_a_restart(h):
    recs = meta_records()
    h.disk.append_many(METADATA_LOG, recs[:2], 1)
    h.disk.append_many(METADATA_LOG, recs[2:], 2)
    h.disk.fsync(METADATA_LOG, 3)
    assert h.disk.read(METADATA_LOG) == recs
    assert h.restart().read(METADATA_LOG) == recs


def test_append_many_is_one_write_so_a_killed_controller_keeps_a_whole_event(tmp_path, monkeypatch):
    """The controller's records of one event go to the file in one write(2): a process killed around it
    finds all of them or none, never a TopicRecord without its PartitionRecords."""
    import kraftlog.net.disk as file_disk
    d = FileDisk(tmp_path / "ctl")
    recs = meta_records()
    writes = []
    real = file_disk.write_all
    monkeypatch.setattr(file_disk, "write_all", lambda fd, data: (writes.append(len(data)), real(fd, data)))
    d.append_many(METADATA_LOG, recs, 1)
    assert len(writes) == 1 and writes[0] == os.path.getsize(tmp_path / "ctl" / METADATA_LOG)
    d.close()


# =========================================================================== storage tests on a FileDisk
class EmulatedCrashFileDisk(FileDisk):
    """A FileDisk with SimDisk's ``crash`` emulated by a restart: ``"none"`` keeps every byte, ``"unflushed"``
    first cuts each open log file to its durable length (exact only while no un-fsynced truncation is
    pending: the tests below have none), ``"all"`` empties the root."""

    def __init__(self, root, writeback_ms=None) -> None:
        super().__init__(root)

    def crash(self, lose: str, now_ms: int) -> None:
        root = self.root
        if lose == "unflushed":
            for path in list(self._logs):
                os.truncate(os.path.join(root, path), self.durable_length(path))
        self.close()
        if lose == "all":
            shutil.rmtree(root)
        FileDisk.__init__(self, root)


#: tests/test_storage.py tests about the Disk interface (no page-cache simulation, no SimDisk-only API,
#: items of the real kinds), run with their ``SimDisk`` replaced by a FileDisk on a fresh directory.
REUSED_STORAGE_TESTS = [
    "test_end_offset_for_follows_kafka_worked_example",
    "test_end_offset_for_below_first_entry_returns_requested_epoch_and_first_start",
    "test_end_offset_for_empty_cache_is_undefined",
    "test_assign_latest_epoch_again_is_noop",
    "test_assign_new_epoch_below_existing_start_offsets_removes_them",
    "test_assign_latest_epoch_with_lower_start_offset_moves_it",
    "test_assign_lower_epoch_removes_entries_with_greater_or_equal_epoch",
    "test_assign_rejects_negative_epoch_or_offset",
    "test_truncate_from_end_removes_entries_starting_at_or_after_end_offset",
    "test_truncate_from_start_moves_floor_entry_to_start_offset",
    "test_epoch_for_offset_and_start_offset_of",
    "test_epoch_cache_is_persisted_atomically_in_kafka_text_format",
    "test_leader_append_assigns_offsets_and_epochs",
    "test_follower_append_must_not_start_below_leo",
    "test_follower_append_assigns_epoch_cache_from_batches",
    "test_read_respects_max_offset_and_max_bytes",
    "test_truncate_to_inside_a_batch_splits_it",
    "test_truncation_reaches_the_disk_after_flush",
    "test_update_high_watermark_clamps_to_log_range",
    "test_reload_after_crash_keeps_durable_prefix_and_truncates_epoch_cache_to_leo",
    "test_flush_interval_messages_flushes_once_threshold_reached",
    "test_flush_ms_is_checked_by_the_flush_scheduler",
    "test_default_config_never_flushes",
    "test_clean_shutdown_file_round_trip_and_delete",
    "test_hwm_checkpoint_round_trip",
    "test_malformed_hwm_checkpoint_raises",
]


def _on_file_disks(module, name: str, tmp_path, monkeypatch, **kwargs) -> None:
    """Run ``module``'s test ``name`` with its ``SimDisk`` replaced by a FileDisk on a fresh directory each
    time it builds one (crashes emulated by :class:`EmulatedCrashFileDisk`); every disk closed after."""
    counter = itertools.count()
    opened: list[FileDisk] = []

    def file_disk(writeback_ms=None):
        d = EmulatedCrashFileDisk(tmp_path / f"disk{next(counter)}")
        opened.append(d)
        return d

    monkeypatch.setattr(module, "SimDisk", file_disk)
    try:
        getattr(module, name)(**{k: make() for k, make in kwargs.items()})
    finally:
        for d in opened:
            d.close()
    assert opened, "the reused test never built a disk"


@pytest.mark.parametrize("name", REUSED_STORAGE_TESTS)
def test_storage_behaviour_holds_on_a_file_disk(name, tmp_path, monkeypatch):
    params = inspect.signature(getattr(storage_tests, name)).parameters
    assert set(params) <= {"kafka_cache"}, f"unexpected fixtures {set(params)}"
    _on_file_disks(storage_tests, name, tmp_path, monkeypatch,
                   **({"kafka_cache": _kafka_cache} if "kafka_cache" in params else {}))


#: tests/test_segments.py's cases that use the Disk interface only (no SimDisk fault or page-cache API), run
#: on files: segment files named by base offset, rolled, read, truncated, deleted and reloaded.
REUSED_SEGMENT_TESTS = [
    "test_a_segment_rolls_before_a_batch_would_take_it_past_segment_bytes",
    "test_a_leader_batch_larger_than_segment_bytes_is_refused_and_nothing_is_appended",
    "test_a_follower_takes_a_batch_larger_than_its_segment_bytes_in_a_segment_of_its_own",
    "test_a_segment_rolls_once_a_batch_timestamp_is_segment_ms_past_its_first_batch",
    "test_segment_jitter_brings_the_roll_forward_by_a_per_segment_draw",
    "test_a_full_offset_index_rolls_the_segment",
    "test_a_read_locates_the_segment_and_returns_batches_of_that_segment_only",
    "test_truncation_deletes_the_segments_above_the_offset_and_cuts_the_one_holding_it",
    "test_truncation_below_the_first_segment_empties_the_log_and_starts_it_there",
    "test_size_retention_deletes_whole_old_segments_below_the_high_watermark_only",
    "test_time_retention_deletes_segments_whose_newest_record_is_older_than_retention_ms",
    "test_retention_ms_minus_one_and_retention_bytes_minus_one_keep_everything",
    "test_the_log_start_offset_moves_up_to_the_hwm_and_retention_deletes_the_segments_below_it",
    "test_a_reload_keeps_the_checkpointed_log_start_offset_and_recovery_point",
    "test_a_log_start_offset_beyond_the_recovered_log_end_starts_the_log_empty_there",
]


#: tests/test_compaction.py's cases run on files: cleaned segments written as ``.cleaned.log``, renamed into place
#: through ``.swap.log``, reloaded with their gaps, a crashed cleaning's file deleted at load.
REUSED_COMPACTION_TESTS = [
    "test_the_last_value_of_each_key_is_kept_with_its_offset",
    "test_a_cleaned_batch_keeps_its_base_and_last_offset_and_its_producer_fields",
    "test_a_producers_last_batch_is_kept_empty_so_its_sequence_survives",
    "test_a_tombstone_outlives_the_first_cleaning_by_delete_retention_ms",
    "test_the_cleaning_stops_at_the_high_watermark_and_the_active_segment",
    "test_a_full_offset_map_ends_the_cleaning_where_it_stopped",
    "test_small_segments_are_cleaned_into_one_segment",
    "test_a_crash_mid_cleaning_leaves_the_log_as_it_was",
    "test_a_truncation_during_a_cleaning_aborts_it",
]


@pytest.mark.parametrize(("module", "name"), [(segments_tests, n) for n in REUSED_SEGMENT_TESTS]
                         + [(compaction_tests, n) for n in REUSED_COMPACTION_TESTS],
                         ids=[*REUSED_SEGMENT_TESTS, *REUSED_COMPACTION_TESTS])
def test_segment_and_compaction_behaviour_holds_on_a_file_disk(module, name, tmp_path, monkeypatch):
    _on_file_disks(module, name, tmp_path, monkeypatch)


def _kafka_cache():
    """tests/test_storage.py's ``kafka_cache`` fixture, built through its (patched) SimDisk."""
    c = storage_tests.LeaderEpochCache(storage_tests.SimDisk(), storage_tests.CKPT, 0)
    c.assign(0, 0)
    c.assign(2, 13)
    c.assign(4, 17)
    return c


# =========================================================================== file formats
def test_a_segment_is_kafka_v2_batches_concatenated_byte_for_byte(fdisk):
    items = [
        batch(0, b"a", b"b", epoch=0),
        RecordBatch(2, 3, (Record(-1, b"k", None), Record(1700000000123, None, b"")), producer_id=42,
                    producer_epoch=1, base_sequence=7),
        batch(4, bytes(1000), epoch=5, ts=0),
    ]
    for b in items:
        fdisk.append(SEG, b, 0)
    raw = file_bytes(fdisk, SEG)
    assert raw == encode_batches(items)
    assert list(decode_batches(raw)) == items
    assert fdisk.size_bytes(SEG) == len(raw)


def test_the_metadata_log_is_one_v2_batch_per_record_at_its_offset(fdisk):
    recs = meta_records()
    for r in recs:
        fdisk.append(METADATA_LOG, r, 1234)
    decoded = decode_batches(file_bytes(fdisk, METADATA_LOG))
    assert [b.base_offset for b in decoded] == list(range(len(recs)))
    assert all(len(b.records) == 1 and b.partition_leader_epoch == 0 for b in decoded)
    assert all(b.records[0].key is None and b.records[0].timestamp == 1234 for b in decoded)
    assert [decode_metadata_record(b.records[0].value) for b in decoded] == recs
    # After a truncation the next record takes the freed offset.
    fdisk.truncate(METADATA_LOG, 3, 0)
    fdisk.append(METADATA_LOG, recs[-1], 0)
    decoded = decode_batches(file_bytes(fdisk, METADATA_LOG))
    assert [b.base_offset for b in decoded] == [0, 1, 2, 3]
    assert reopen(fdisk).read(METADATA_LOG) == recs[:3] + [recs[-1]]


def test_truncate_cuts_the_file_at_the_item_byte_position(fdisk):
    items = batches(6)
    for b in items:
        fdisk.append(SEG, b, 0)
    fdisk.truncate(SEG, 4, 1)
    assert file_bytes(fdisk, SEG) == encode_batches(items[:4])
    fdisk.append(SEG, batch(items[4].base_offset, b"new"), 2)
    assert file_bytes(fdisk, SEG) == encode_batches(items[:4] + [batch(items[4].base_offset, b"new")])


def test_items_of_the_wrong_kind_are_refused_before_anything_is_created(fdisk):
    with pytest.raises(TypeError):
        fdisk.append(SEG, "not a batch", 0)
    with pytest.raises(TypeError):
        fdisk.append(METADATA_LOG, batch(0, b"a"), 0)
    with pytest.raises(TypeError):
        fdisk.append(METADATA_LOG, {"type": "TopicRecord"}, 0)
    with pytest.raises(TypeError):
        fdisk.append(SEG, mdr.ClearElrRecord(), 0)
    assert fdisk.list("") == []
    fdisk.append(SEG, batch(0, b"a"), 0)
    with pytest.raises(TypeError):
        fdisk.append(SEG, None, 0)
    assert fdisk.read(SEG) == [batch(0, b"a")]


@pytest.mark.parametrize("path", [
    "", "/etc/passwd.log", "../x.log", "data/../../x.log", "data//x.log", "./x.log", "data/x.log/",
    "data/x.tmp", LOCK_FILE, "data/\x00.log",
])
def test_paths_that_escape_the_root_or_are_reserved_are_refused(fdisk, path):
    with pytest.raises(ValueError):
        fdisk.append(path, batch(0, b"a"), 0)
    with pytest.raises(ValueError):
        fdisk.write_atomic(path, "x", 0)
    with pytest.raises(ValueError):
        fdisk.exists(path)
    with pytest.raises(ValueError):
        fdisk.delete(path, 0)


def test_log_and_value_operations_keep_to_their_file_kinds(fdisk):
    with pytest.raises(ValueError):
        fdisk.append("data/t-0/leader-epoch-checkpoint", batch(0, b"a"), 0)
    with pytest.raises(ValueError):
        fdisk.read("data/replication-offset-checkpoint")
    with pytest.raises(ValueError):
        fdisk.write_atomic(SEG, "x", 0)
    with pytest.raises(ValueError):
        fdisk.read_value(SEG)
    with pytest.raises(ValueError):
        fdisk.list("../")
    fdisk.fsync("data/replication-offset-checkpoint", 0)  # a value file: no-op, like SimDisk


def test_write_atomic_takes_str_or_bytes_and_leaves_no_tmp(fdisk):
    fdisk.write_atomic("data/a", "héllo", 0)
    fdisk.write_atomic("data/b", b"\xff\xfe", 0)
    with pytest.raises(TypeError):
        fdisk.write_atomic("data/c", 17, 0)
    assert fdisk.read_value("data/a") == "héllo"
    assert fdisk.read_value("data/b") == b"\xff\xfe"  # not UTF-8: bytes back
    assert sorted(os.listdir(os.path.join(fdisk.root, "data"))) == ["a", "b"]
    # A crash between writing the tmp file and the rename leaves a stale tmp: ignored, then replaced.
    with open(os.path.join(fdisk.root, "data", "a.tmp"), "w") as f:
        f.write("half-writ")
    assert fdisk.list("data/") == ["data/a", "data/b"]
    assert fdisk.read_value("data/a") == "héllo"
    fdisk.write_atomic("data/a", "new", 1)
    assert fdisk.read_value("data/a") == "new"
    assert sorted(os.listdir(os.path.join(fdisk.root, "data"))) == ["a", "b"]


# =========================================================================== recovery of a torn tail
def _torn_cases() -> list[tuple[str, object]]:
    size = len(encode_batches([batches(4)[3]]))
    cases: list[tuple[str, object]] = [(f"cut {k} bytes into the last batch", k)
                                       for k in (1, 11, 12, 20, 21, 60, 61, size - 1)]
    cases += [("garbage appended", b"garbage that is no batch"),
              ("zeros appended (a crash after the size grew)", bytes(4096)),
              ("a short header appended", b"\x00\x00\x00\x00\x00\x00\x00\x09\x00"),
              ("a huge length appended", struct.pack(">qi", 12, 2**31 - 1) + bytes(40))]
    return cases


@pytest.mark.parametrize("label,damage", _torn_cases(), ids=[c[0] for c in _torn_cases()])
def test_a_torn_tail_is_dropped_on_load_and_the_file_truncated(tmp_path, label, damage):
    lines: list[str] = []
    d = FileDisk(tmp_path / "node")
    items = batches(4)
    for b in items:
        d.append(SEG, b, 0)
    d.fsync(SEG, 0)
    full = os.path.join(d.root, SEG)
    d.close()
    if isinstance(damage, int):  # keep 3 batches and the first `damage` bytes of the 4th
        keep = len(encode_batches(items[:3]))
        os.truncate(full, keep + damage)
        expected = items[:3]
    else:
        with open(full, "ab") as f:
            f.write(damage)
        expected = items
    d = FileDisk(tmp_path / "node", log=lines.append)
    assert d.read(SEG) == expected
    valid = len(encode_batches(expected))
    assert os.path.getsize(full) == valid == d.size_bytes(SEG) == d.durable_length(SEG)
    assert len(lines) == 1 and SEG in lines[0] and f"at byte {valid}" in lines[0]
    # The log goes on from the valid prefix, and the next load finds nothing to repair.
    nxt = batch(expected[-1].next_offset, b"after")
    d.append(SEG, nxt, 1)
    d = reopen(d, log=lines.append)
    assert d.read(SEG) == expected + [nxt] and len(lines) == 1
    d.close()


def test_a_crc_mismatch_in_the_middle_drops_that_batch_and_everything_after(tmp_path):
    lines: list[str] = []
    d = FileDisk(tmp_path / "node")
    items = batches(5)
    for b in items:
        d.append(SEG, b, 0)
    full = os.path.join(d.root, SEG)
    d.close()
    pos = len(encode_batches(items[:2])) + 70  # inside batch 2's records
    with open(full, "r+b") as f:
        f.seek(pos)
        byte = f.read(1)
        f.seek(pos)
        f.write(bytes([byte[0] ^ 0x40]))
    d = FileDisk(tmp_path / "node", log=lines.append)
    assert d.read(SEG) == items[:2]
    assert os.path.getsize(full) == len(encode_batches(items[:2]))
    assert "CRC-32C mismatch" in lines[0]
    d.close()


def test_a_torn_metadata_record_is_dropped(tmp_path):
    d = FileDisk(tmp_path / "node")
    recs = meta_records()
    for r in recs:
        d.append(METADATA_LOG, r, 0)
    full = os.path.join(d.root, METADATA_LOG)
    d.close()
    os.truncate(full, os.path.getsize(full) - 5)
    d = FileDisk(tmp_path / "node")
    assert d.read(METADATA_LOG) == recs[:-1]
    d.close()


def _with_valid_crc(raw: bytes, attributes: int) -> bytes:
    """``raw`` (one v2 batch) with its attributes replaced and its CRC-32C recomputed."""
    body = bytearray(raw[21:])
    body[0:2] = struct.pack(">h", attributes)
    return raw[:17] + struct.pack(">I", crc32c(bytes(body))) + bytes(body)


def test_a_crc_valid_batch_that_is_no_partition_batch_is_an_error_not_a_torn_tail(tmp_path):
    d = FileDisk(tmp_path / "node")
    d.append(SEG, batch(0, b"a"), 0)
    full = os.path.join(d.root, SEG)
    d.close()
    # A CRC-valid batch of zero records: written whole by someone, not torn, and not a log's batch.
    with open(full, "ab") as f:
        f.write(encode_batches([RecordBatch(1, 0, ())]))
    before = os.path.getsize(full)
    d = FileDisk(tmp_path / "node")
    with pytest.raises(UndecodableLogError):
        d.read_range(SEG, 0, 1)
    assert os.path.getsize(full) == before
    d.close()


def test_segment_batches_stay_opaque_a_compressed_one_is_kept_and_decoded_only_when_read(tmp_path):
    """Batches are not decoded at load: a batch claiming zstd whose payload is not zstd is kept whole
    (the CRC is valid: it was written whole); reading its records is what fails, with Kafka's
    CORRUPT_MESSAGE or UNSUPPORTED_COMPRESSION_TYPE."""
    from kraftlog.protocol.records import CorruptRecordError

    d = FileDisk(tmp_path / "node")
    d.append(SEG, batch(0, b"a"), 0)
    full = os.path.join(d.root, SEG)
    d.close()
    with open(full, "ab") as f:
        f.write(_with_valid_crc(encode_batches([batch(1, b"b")]), 4))
    before = os.path.getsize(full)
    d = FileDisk(tmp_path / "node")
    first, second = d.read_range(SEG, 0, 2)
    assert os.path.getsize(full) == before
    assert first.is_encoded and first.records == batch(0, b"a").records
    assert second.attributes & 0x07 == 4 and second.record_count == 1
    with pytest.raises(CorruptRecordError):
        _ = second.records
    d.close()


def test_an_unknown_metadata_record_type_is_an_error_not_a_torn_tail(tmp_path):
    d = FileDisk(tmp_path / "node")
    d.append(METADATA_LOG, mdr.ClearElrRecord(), 0)
    full = os.path.join(d.root, METADATA_LOG)
    d.close()
    with open(full, "ab") as f:
        f.write(encode_batches([RecordBatch(1, 0, (Record(0, None, b'{"type":"FutureRecord"}'),))]))
    before = os.path.getsize(full)
    d = FileDisk(tmp_path / "node")
    with pytest.raises(UndecodableLogError):
        d.read(METADATA_LOG)
    assert os.path.getsize(full) == before
    d.close()


# =========================================================================== durability bookkeeping
def test_fsync_moves_the_durable_length_and_truncation_lowers_it(fdisk):
    assert fdisk.durable_length(SEG) == 0 and fdisk.unflushed_bytes(SEG) == 0
    items = batches(3)
    fdisk.append(SEG, items[0], 0)
    one = len(encode_batches(items[:1]))
    assert fdisk.durable_length(SEG) == 0 and fdisk.unflushed_bytes(SEG) == one
    fdisk.fsync(SEG, 1)
    assert fdisk.durable_length(SEG) == one and fdisk.unflushed_bytes(SEG) == 0
    fdisk.append(SEG, items[1], 2)
    fdisk.append(SEG, items[2], 3)
    three = len(encode_batches(items))
    assert fdisk.durable_length(SEG) == one and fdisk.unflushed_bytes(SEG) == three - one
    fdisk.fsync(SEG, 4)
    assert fdisk.durable_length(SEG) == three
    fdisk.truncate(SEG, 1, 5)  # not durable: the durable content of the file is at most that prefix
    assert fdisk.durable_length(SEG) == one and fdisk.unflushed_bytes(SEG) == 0
    fdisk.append(SEG, items[1], 6)
    assert fdisk.unflushed_bytes(SEG) == len(encode_batches(items[:2])) - one
    # A file found at load counts as durable up to its recovered length.
    d = reopen(fdisk)
    assert d.durable_length(SEG) == d.size_bytes(SEG) == len(encode_batches(items[:2]))
    assert d.unflushed_bytes(SEG) == 0
    d.write_atomic("data/v", "abc", 7)
    assert d.durable_length("data/v") == 3 and d.unflushed_bytes("data/v") == 0
    assert d.durable_length("data/none.log") == 0
    d.close()


def test_the_first_fsync_of_a_new_file_also_syncs_the_directories_created_for_it(fdisk, monkeypatch):
    synced: list[tuple[bool, int]] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        st = os.fstat(fd)
        synced.append((stat.S_ISDIR(st.st_mode), st.st_ino))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    ino = lambda p: os.stat(p).st_ino  # noqa: E731
    fdisk.append(SEG, batch(0, b"a"), 0)  # creates data/ and data/t-0/ under the root
    assert synced == []  # append never fsyncs
    fdisk.fsync(SEG, 1)
    root = fdisk.root
    assert synced == [(False, ino(os.path.join(root, SEG))), (True, ino(os.path.join(root, DIR))),
                      (True, ino(os.path.join(root, "data"))), (True, ino(root))]
    synced.clear()
    fdisk.append(SEG, batch(1, b"b"), 2)
    fdisk.fsync(SEG, 3)
    assert synced == [(False, ino(os.path.join(root, SEG)))]  # the directories are durable already
    synced.clear()
    fdisk.write_atomic(f"{DIR}/leader-epoch-checkpoint", "0\n0\n", 4)  # tmp fsynced, then its directory
    assert [is_dir for is_dir, _ in synced] == [False, True] and synced[1][1] == ino(os.path.join(root, DIR))


# =========================================================================== lifecycle
def test_the_root_is_locked_against_a_second_user_until_closed(tmp_path):
    d = FileDisk(tmp_path / "node")
    with pytest.raises(DirectoryLockedError):
        FileDisk(tmp_path / "node")
    d.close()
    d.close()  # idempotent
    with pytest.raises(RuntimeError):
        d.read(SEG)
    with pytest.raises(RuntimeError):
        d.list("")
    with FileDisk(tmp_path / "node") as again:
        assert again.list("") == []  # the lock file is never listed


def test_a_process_killed_with_sigkill_leaves_a_recoverable_log(tmp_path):
    root = tmp_path / "node"
    code = (
        "import sys\n"
        "from kraftlog.net.disk import FileDisk\n"
        "from kraftlog.protocol.records import Record, RecordBatch\n"
        "d = FileDisk(sys.argv[1])\n"
        f"for i in range(10**9):\n"
        f"    d.append({SEG!r}, RecordBatch(i, i // 100, (Record(i, None, b'%d' % i * 50),)), i)\n"
        "    if i % 100 == 99:\n"
        "        print(i + 1, flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        appended = 0
        while appended < 2000:
            line = proc.stdout.readline()
            assert line, "the writer died before being killed"
            appended = int(line)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with FileDisk(root) as d:  # its lock died with it
        got = d.read(SEG)
        assert len(got) >= appended  # every write(2) done before the kill is in the page cache
        assert [b.base_offset for b in got] == list(range(len(got)))
        assert all(b.records[0].value == b"%d" % b.base_offset * 50 for b in got)


# =========================================================================== the storage layer on a FileDisk
def test_a_partition_log_rebuilt_from_its_files_has_the_same_leo_batches_and_epoch_cache(tmp_path):
    d = FileDisk(tmp_path / "node")
    log = PartitionLog(d, DIR, LogConfig(), 0)
    for i in range(5):
        log.append_as_leader(batch(-1, b"x%d" % i, b"y%d" % i, epoch=-1), 0, i)
    log.append_as_follower([batch(10, b"f1", epoch=2), batch(11, b"f2", b"f3", epoch=2)], 5)
    log.truncate_to(12, 6)  # cuts the last batch in two: the disk gets truncate + append
    log.maybe_assign_epoch_start_offset(4, log.log_end_offset, 7)
    log.append_as_leader(batch(-1, b"z"), 4, 8)
    log.flush(9)
    log.update_high_watermark(10)
    write_hwm_checkpoint(d, "data", {("t", 0): log.high_watermark}, 10)
    expected = (log.log_end_offset, list(log.batches()), log.epoch_cache.entries())
    assert expected[0] == 13 and expected[2] == [(0, 0), (2, 10), (4, 12)]
    d = reopen(d)
    again = PartitionLog(d, DIR, LogConfig(), 11, recovery_point=log.recovery_point)
    assert (again.log_end_offset, list(again.batches()), again.epoch_cache.entries()) == expected
    assert read_hwm_checkpoint(d, "data") == {("t", 0): 10}
    assert again.recovery_point == 13 and again.unflushed_messages == 0
    # Cut the segment mid-batch, as a machine crash may: the log reloads its valid prefix and the epoch
    # cache is truncated to the new LEO (Kafka's LogLoader).
    d.close()
    full = tmp_path / "node" / SEG
    os.truncate(full, os.path.getsize(full) - 3)
    d = FileDisk(tmp_path / "node")
    cut = PartitionLog(d, DIR, LogConfig(), 12)
    assert cut.log_end_offset == 12 and list(cut.batches()) == expected[1][:-1]
    assert cut.epoch_cache.entries() == [(0, 0), (2, 10)]
    d.close()


def test_a_controller_restarted_on_its_files_replays_the_same_metadata(tmp_path):
    d = FileDisk(tmp_path / "controller")
    c = QuorumController({}, DEFAULT, d, Random(1), 0)
    recs = meta_records()
    c.append(recs[:3], 1)
    c.append(recs[3:], 2)
    image = c.image
    d = reopen(d)
    again = QuorumController({}, DEFAULT, d, Random(1), 3)
    assert list(again.log) == recs and again.end_offset == len(recs)
    assert again.image == image
    d.close()


# =========================================================================== meta.properties
def test_meta_properties_round_trip_in_kafka_properties_format(tmp_path):
    assert read_meta_properties(tmp_path / "node") is None
    write_meta_properties(tmp_path / "node", {"node.id": 3, "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
                                              "incarnation": "2", "odd key": " =:#!\\\té\n"})
    text = (tmp_path / "node" / META_PROPERTIES).read_text("ascii")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[:3] == ["version=1", "cluster.id=MkU3OEVBNTcwNTJENDM2Qk", "node.id=3"]
    assert read_meta_properties(tmp_path / "node") == {
        "version": "1", "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk", "node.id": "3", "incarnation": "2",
        "odd key": " =:#!\\\té\n"}
    write_meta_properties(tmp_path / "node", {"node.id": "3", "cluster.id": "c", "version": "1"})
    assert read_meta_properties(tmp_path / "node") == {"version": "1", "cluster.id": "c", "node.id": "3"}
    assert os.listdir(tmp_path / "node") == [META_PROPERTIES]


def test_meta_properties_reads_what_java_writes_and_refuses_what_it_cannot_be(tmp_path):
    path = tmp_path / META_PROPERTIES
    path.write_text("#\n#Tue Jan 02 10:00:00 UTC 2024\n! another comment\n  node.id = 1\n"
                    "directory.id:abc\nversion 1\ncluster.id=a\\\n    bc\n", "latin-1")
    assert read_meta_properties(tmp_path) == {"node.id": "1", "directory.id": "abc", "version": "1",
                                              "cluster.id": "abc"}
    path.write_text("node.id=1\n")
    with pytest.raises(ValueError):
        read_meta_properties(tmp_path)
    with pytest.raises(ValueError):
        write_meta_properties(tmp_path, {"node.id": "1"})
    with pytest.raises(ValueError):
        write_meta_properties(tmp_path, {"node.id": "1", "cluster.id": "c", "version": "0"})


def test_deleting_the_last_file_of_a_partition_directory_removes_the_directory(tmp_path):
    """Topic deletion leaves no directory behind (Kafka deletes the partition's log dir): FileDisk.delete
    rmdirs a directory it emptied, keeps one that still holds files, and never removes the root."""
    d = FileDisk(tmp_path / "node")
    d.append("data/t-0/00000000000000000000.log", batch(0, b"a"), 0)
    d.write_atomic("data/t-0/partition.metadata", "version: 0\n", 0)
    d.write_atomic("top-level-value", "x", 0)
    d.delete("data/t-0/00000000000000000000.log", 0)
    assert os.path.isdir(os.path.join(d.root, "data", "t-0"))  # partition.metadata is still there
    d.delete("data/t-0/partition.metadata", 0)
    assert not os.path.exists(os.path.join(d.root, "data", "t-0"))
    d.delete("top-level-value", 0)
    assert os.path.isdir(d.root) and d.list("") == []
    d.close()


def test_segment_checksums_on_files_keep_up_with_appends_and_catch_a_flipped_byte(tmp_path):
    """Issue 30: the running CRC-32C a FileDisk keeps per segment equals a fresh read of the file (after appends
    and after a truncation); after a clean shutdown a load trusts a matching segment by its headers and recovers
    a segment with a flipped byte batch by batch, reporting the mismatch."""
    from kraftlog.net.segment import corrupt_segment, segment_batches
    from kraftlog.storage.segment import segment_file

    size = segments_tests.ONE
    cfg = LogConfig(segment_bytes=2 * size)
    d = FileDisk(tmp_path / "node")
    log = PartitionLog(d, DIR, cfg, 0)
    for i in range(5):
        log.append_as_leader(segments_tests.rec_batch(), 0, i)
    active = log.segment_path
    assert d.checksum(active) == crc32c((tmp_path / "node" / active).read_bytes())
    log.truncate_to(4, 5)
    log.append_as_leader(segments_tests.rec_batch(tag="z"), 0, 6)
    assert d.checksum(active) == crc32c((tmp_path / "node" / active).read_bytes())
    log.seal(7)
    d.close()
    d = FileDisk(tmp_path / "node")
    again = PartitionLog(d, DIR, cfg, 8, clean_shutdown=True)
    assert (again.segments_unread, again.batches_trusted, again.batches_recovered) == (2, 1, 0)
    assert [b.base_offset for b in again.read(2, 5, 10**6)] == [2, 3]  # read through a sealed segment's headers
    assert again.offset_for_timestamp(0, 5) == (0, 0, 0)
    d.close()
    middle = tmp_path / "node" / DIR / segment_file(2)
    corrupt_segment(middle, segment_batches(middle)[1], 1, Random(1))
    d = FileDisk(tmp_path / "node")
    damaged = PartitionLog(d, DIR, cfg, 9, clean_shutdown=True)
    assert damaged.checksum_mismatches == [f"{DIR}/{segment_file(2)}"] and damaged.log_end_offset == 3
    d.close()


def test_a_cleaned_log_with_gaps_and_an_emptied_batch_loads_in_a_new_process(tmp_path):
    """Issue 31 on files: a cleaned segment holds offset gaps and a producer's last batch with no record (its
    lastOffsetDelta kept); a new FileDisk (a restarted broker) recovers the files batch by batch, after an unclean
    shutdown and after a clean one, without dropping anything, and the producer's last sequence is known."""
    kv = compaction_tests.kv
    config = storage_tests.LogConfig(compact=True, delete=False, min_cleanable_ratio=0.0, segment_bytes=200)
    with FileDisk(tmp_path / "d") as disk:
        log = storage_tests.PartitionLog(disk, "data/t-0", config, 0)
        compaction_tests.append(log, kv(("a", "old"), ("b", "old"), pid=7, seq=0))
        compaction_tests.roll(log)
        compaction_tests.append(log, kv(("a", "new"), ("b", "new")), kv(("c", "1")))
        compaction_tests.roll(log)
        compaction_tests.clean(log)
        before = compaction_tests.contents(log)
        assert [b.record_count for b in log.batches()][0] == 0
        log.flush(1)
    for clean_shutdown in (False, True):
        with FileDisk(tmp_path / "d") as disk:
            again = storage_tests.PartitionLog(disk, "data/t-0", config, 2, clean_shutdown=clean_shutdown)
            assert again.dropped_at_load == [] and compaction_tests.contents(again) == before
            assert again.producer_state.producers[7].last_sequence == 1
            again.seal(3)
