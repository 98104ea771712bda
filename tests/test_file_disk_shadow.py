"""FileDisk's shadow (kraftlog.net.shadow, :class:`ShadowFileDisk`) and :func:`restore_fsynced`: a killed node's files
come back as a machine crash that lost the page cache leaves them, as SimDisk's ``crash("unflushed")``.

* The issue-13 case: append + fsync, an unsynced truncate, other appends, SIGKILL: the restored log holds
  the pre-truncation fsynced items, not the durable length's prefix of the new bytes.
* Any sequence of Disk operations (crashes and process restarts included) ends, after a crash, with the
  same paths, items and values on a shadowed FileDisk restored and on a SimDisk crashed (hypothesis).
* The shadow persists across process restarts, is reserved and never listed, and costs nothing when off.
* ``restore_fsynced`` refuses a root whose lock a live process holds, and a shadow that does not describe
  its files, before changing anything.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlog.metadata import records as mdr
from kraftlog.net.disk import SHADOW_DIR, DirectoryLockedError, FileDisk
from kraftlog.net.shadow import ShadowFileDisk, ShadowStateError, restore_fsynced
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage import SimDisk

SEG = "data/t-0/00000000000000000000.log"
NEW = "data/u-0/00000000000000000000.log"
TAIL = "data/v-0/00000000000000000000.log"
META = "metadata/__cluster_metadata-0/00000000000000000000.log"


def b(i: int, tag: bytes) -> RecordBatch:
    """Batch ``i`` of a test segment: base offset ``i``, one record whose value is ``tag`` + ``i`` x20."""
    return RecordBatch(i, 0, (Record(1700000000000 + i, None, tag + b"%d" % i * 20),))


def shadow_files(root) -> list[str]:
    top = os.path.join(root, SHADOW_DIR)
    return sorted(os.path.relpath(os.path.join(d, n), top) for d, _, names in os.walk(top) for n in names)


# =========================================================================== the case, a real SIGKILL
_WRITER = f"""
import sys, time
from kraftlog.net.shadow import ShadowFileDisk
from kraftlog.protocol.records import Record, RecordBatch
def b(i, tag):
    return RecordBatch(i, 0, (Record(1700000000000 + i, None, tag + b"%d" % i * 20),))
d = ShadowFileDisk(sys.argv[1])
d.append_many({SEG!r}, [b(i, b"old") for i in range(5)], 1)
d.fsync({SEG!r}, 1)
d.truncate({SEG!r}, 2, 2)                                     # not fsynced
d.append_many({SEG!r}, [b(i, b"new") for i in range(2, 6)], 3)  # other bytes over the truncated ones
d.append({NEW!r}, b(0, b"x"), 4)                              # created, never fsynced
d.append({TAIL!r}, b(0, b"t"), 5)
d.fsync({TAIL!r}, 5)
d.append({TAIL!r}, b(1, b"t"), 6)                             # an unsynced append
d.write_atomic("data/t-0/leader-epoch-checkpoint", "0\\n1\\n0 0\\n", 7)  # durable at once
print("ready", flush=True)
time.sleep(120)
"""


def test_an_unsynced_truncate_then_appends_come_back_as_the_pre_truncation_fsynced_items(tmp_path):
    root = tmp_path / "node"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n", "the writer died before being killed"
        with pytest.raises(DirectoryLockedError):  # the node still runs: nothing is touched
            restore_fsynced(root)
        assert shadow_files(root)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    seg_bytes = os.path.getsize(root / SEG)
    old = b"".join(b(i, b"old").data for i in range(5))
    assert seg_bytes == len(old) - sum(len(b(i, b"old").data) for i in (2, 3, 4)) + sum(
        len(b(i, b"new").data) for i in range(2, 6))  # the page cache kept every write of the killed process

    lines = restore_fsynced(root)

    t0, t1, x0 = len(b(0, b"t").data), len(b(1, b"t").data), len(b(0, b"x").data)
    cut = len(b(0, b"old").data) + len(b(1, b"old").data)
    assert lines == [
        f"{SEG}: {seg_bytes} -> {len(old)} bytes "
        f"(truncate undone, {len(old) - cut} bytes restored from byte {cut})",
        f"{NEW}: never fsynced, removed ({x0} bytes)",
        f"{TAIL}: {t0 + t1} -> {t0} bytes (appends lost)",
    ]
    assert not os.path.exists(root / SHADOW_DIR)
    assert not os.path.exists(root / "data/u-0")  # the directory created for the lost file went too
    with open(root / SEG, "rb") as fh:
        assert fh.read() == old  # byte for byte the fsynced segment
    with FileDisk(root) as d:
        assert d.read(SEG) == [b(i, b"old") for i in range(5)]
        assert not d.exists(NEW)
        assert d.read(TAIL) == [b(0, b"t")]
        assert d.read_value("data/t-0/leader-epoch-checkpoint") == "0\n1\n0 0\n"
        assert d.list("") == ["data/t-0/00000000000000000000.log", "data/t-0/leader-epoch-checkpoint", TAIL]
    assert restore_fsynced(root) == []  # nothing left to restore


# =========================================================================== SimDisk equivalence
LOGS = [SEG, TAIL, META]
VALUES = ["data/t-0/leader-epoch-checkpoint", "cleanly-shutdown"]
PATHS = LOGS + VALUES

_ops = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(LOGS)),
    st.tuples(st.just("append_many"), st.sampled_from(LOGS), st.integers(1, 3)),
    st.tuples(st.just("truncate"), st.sampled_from(LOGS), st.integers(0, 6)),
    st.tuples(st.just("fsync"), st.sampled_from(PATHS)),
    st.tuples(st.just("write_atomic"), st.sampled_from(VALUES), st.text("ab\n", max_size=6)),
    st.tuples(st.just("delete"), st.sampled_from(PATHS)),
    st.tuples(st.just("restart")),  # the process stops and starts again: nothing becomes durable
    st.tuples(st.just("crash")),  # machine crash: SimDisk loses unflushed data, FileDisk is restored
)


def _same(fdisk: FileDisk, sim: SimDisk) -> None:
    assert fdisk.list("") == sim.list("")
    for p in LOGS:
        assert fdisk.read(p) == sim.read(p), p
    for p in VALUES:
        assert fdisk.read_value(p) == sim.read_value(p), p


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ops, min_size=1, max_size=40))
def test_a_restored_file_disk_reads_as_a_sim_disk_that_lost_its_unflushed_data(ops):
    root = tempfile.mkdtemp(prefix="kraftlog-shadow-")
    sim = SimDisk(writeback_ms=None)  # restore_fsynced: nothing was written back, only fsyncs count
    fdisk = ShadowFileDisk(root)
    try:
        n = 0
        for now, op in enumerate(ops):
            kind = op[0]
            if kind in ("append", "append_many"):
                path = op[1]
                k = 1 if kind == "append" else op[2]
                items = [mdr.ClearElrRecord(f"t{n + j}") if path == META else b(n + j, b"p") for j in range(k)]
                n += k
                for d in (sim, fdisk):
                    if kind == "append":
                        d.append(path, items[0], now)
                    else:
                        d.append_many(path, items, now)
            elif kind == "truncate":
                sim.truncate(op[1], op[2], now)
                fdisk.truncate(op[1], op[2], now)
            elif kind == "fsync":
                sim.fsync(op[1], now)
                fdisk.fsync(op[1], now)
            elif kind == "write_atomic":
                sim.write_atomic(op[1], op[2], now)
                fdisk.write_atomic(op[1], op[2], now)
            elif kind == "delete":
                sim.delete(op[1], now)
                fdisk.delete(op[1], now)
            elif kind == "restart":
                fdisk.close()
                fdisk = ShadowFileDisk(root)
            else:
                sim.crash("unflushed", now)
                fdisk.close()  # like SIGKILL: nothing flushed, descriptors and lock released
                restore_fsynced(root)
                fdisk = ShadowFileDisk(root)
                _same(fdisk, sim)
        sim.crash("unflushed", len(ops))
        fdisk.close()
        restore_fsynced(root)
        assert not os.path.exists(os.path.join(root, SHADOW_DIR))
        fdisk = FileDisk(root)  # a plain FileDisk recovers the restored files
        _same(fdisk, sim)
        fdisk.close()
        assert restore_fsynced(root) == []
    finally:
        fdisk.close()
        shutil.rmtree(root)


# =========================================================================== shadow lifecycle
def test_the_shadow_outlives_a_process_restart_so_unsynced_changes_stay_unsynced(tmp_path):
    root = tmp_path / "node"
    with ShadowFileDisk(root) as d:
        d.append_many(SEG, [b(i, b"old") for i in range(4)], 1)
        d.fsync(SEG, 1)
        d.truncate(SEG, 3, 2)
    with ShadowFileDisk(root) as d:  # restarted, no crash: the truncation is still not durable
        d.truncate(SEG, 1, 3)
        d.append(SEG, b(1, b"new"), 4)
    with ShadowFileDisk(root) as d:
        d.truncate(SEG, 0, 5)
    restore_fsynced(root)
    with FileDisk(root) as d:
        assert d.read(SEG) == [b(i, b"old") for i in range(4)]


def test_fsync_makes_the_current_state_the_one_restored_and_drops_the_saved_bytes(tmp_path):
    root = tmp_path / "node"
    with ShadowFileDisk(root) as d:
        d.append_many(SEG, [b(i, b"old") for i in range(4)], 1)
        d.fsync(SEG, 1)
        d.truncate(SEG, 1, 2)
        assert any(n.endswith(".chunk") for n in shadow_files(root))  # [item 1, end) saved
        d.append(SEG, b(1, b"new"), 3)
        d.fsync(SEG, 3)
        assert shadow_files(root) == [SEG + ".state"]  # the new state is durable: nothing to keep
        d.append(SEG, b(2, b"new"), 4)
    assert restore_fsynced(root) == [
        f"{SEG}: {sum(len(x.data) for x in (b(0, b'old'), b(1, b'new'), b(2, b'new')))} -> "
        f"{len(b(0, b'old').data) + len(b(1, b'new').data)} bytes (appends lost)"]
    with FileDisk(root) as d:
        assert d.read(SEG) == [b(0, b"old"), b(1, b"new")]


def test_a_file_found_at_load_counts_as_durable_and_a_deleted_one_stays_deleted(tmp_path):
    root = tmp_path / "node"
    with FileDisk(root) as d:  # written without a shadow (e.g. before chaos mode)
        d.append_many(SEG, [b(i, b"old") for i in range(3)], 1)
        d.append(TAIL, b(0, b"t"), 1)
    with ShadowFileDisk(root) as d:
        d.truncate(SEG, 0, 2)
        d.append(SEG, b(0, b"new"), 3)
        d.delete(TAIL, 4)
        assert not any(p.startswith("data/v-0/") for p in shadow_files(root))  # its shadow went with it
    restore_fsynced(root)
    with FileDisk(root) as d:
        assert d.read(SEG) == [b(i, b"old") for i in range(3)]
        assert not d.exists(TAIL)


def test_without_shadow_no_shadow_file_is_ever_written(tmp_path):
    root = tmp_path / "node"
    with FileDisk(root) as d:
        assert not isinstance(d, ShadowFileDisk)
        d.append_many(SEG, [b(i, b"old") for i in range(4)], 1)
        d.fsync(SEG, 1)
        d.truncate(SEG, 1, 2)
        d.append(NEW, b(0, b"x"), 3)
        d.write_atomic("cleanly-shutdown", "{}", 4)
        d.delete(NEW, 5)
    with FileDisk(root) as d:
        d.truncate(SEG, 0, 6)
    assert not os.path.exists(root / SHADOW_DIR)
    assert restore_fsynced(root) == []  # no shadow: nothing to restore, nothing changed
    with FileDisk(root) as d:
        assert d.read(SEG) == []


def test_the_shadow_directory_is_reserved_and_never_listed(tmp_path):
    with ShadowFileDisk(tmp_path / "node") as d:
        d.append(SEG, b(0, b"a"), 1)
        d.write_atomic("cleanly-shutdown", "{}", 1)
        assert os.path.isdir(os.path.join(d.root, SHADOW_DIR))
        for path in (f"{SHADOW_DIR}/{SEG}", f"{SHADOW_DIR}/x"):
            with pytest.raises(ValueError):
                d.append(path, b(0, b"a"), 2)
            with pytest.raises(ValueError):
                d.exists(path)
        assert d.list("") == ["cleanly-shutdown", SEG]
        assert d.list(".") == [] and d.list(f"{SHADOW_DIR}/data/") == []


def test_restore_is_refused_while_a_file_disk_holds_the_root(tmp_path):
    root = tmp_path / "node"
    d = ShadowFileDisk(root)
    try:
        d.append(SEG, b(0, b"a"), 1)
        with pytest.raises(DirectoryLockedError):
            restore_fsynced(root)
        assert d.exists(SEG) and shadow_files(root)  # nothing touched
    finally:
        d.close()
    assert restore_fsynced(root) == [f"{SEG}: never fsynced, removed ({len(b(0, b'a').data)} bytes)"]


def test_restore_refuses_a_shadow_that_does_not_describe_its_files_and_changes_nothing(tmp_path):
    root = tmp_path / "node"
    with ShadowFileDisk(root) as d:
        d.append_many(SEG, [b(i, b"old") for i in range(3)], 1)
        d.fsync(SEG, 1)
        d.append(TAIL, b(0, b"t"), 2)
    with FileDisk(root) as d:  # a plain FileDisk changes the file behind the shadow
        d.truncate(SEG, 1, 3)
    before = shadow_files(root)
    with pytest.raises(ShadowStateError):
        restore_fsynced(root)
    assert shadow_files(root) == before and os.path.exists(root / TAIL)
    with ShadowFileDisk(root) as d, pytest.raises(ShadowStateError):
        d.read(SEG)  # a shadowed FileDisk refuses it too


def test_restore_of_a_missing_root_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        restore_fsynced(tmp_path / "nowhere")

