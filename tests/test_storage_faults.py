"""Storage faults (issue 23; DESIGN.md "Faults a real deployment meets"): a full disk, an I/O error, a
flipped byte. Fast tests of the rules where they live:

* the Disk seam: SimDisk and FileDisk refuse writes with ENOSPC without changing anything, and their
  ``recover`` reports what a load dropped (a batch whose CRC-32C is wrong and everything after it);
* PartitionLog: nothing in memory changes before the disk accepted the bytes, so an idempotent retry
  after ENOSPC is appended again instead of being answered with offsets no record holds;
* the broker: an I/O error takes its one log directory offline (KAFKA_STORAGE_ERROR, Fetch v4-5 down-
  converted, the directory id in every heartbeat, a stop when the controller never acknowledges it, no
  clean-shutdown file), and a log that dropped data at load after a clean shutdown registers unclean;
* the controller: KIP-858's handleDirectoriesOffline (out of every ISR, leaderships moved, never elected
  while the directory is offline, not even by the unfencing in the same heartbeat);
* the scenario library's storage stories at every level.

The same faults on real processes: tests/test_real_storage_faults.py.
"""

from __future__ import annotations

import errno
import os
import random
import uuid

import pytest

from kraftlog.broker.broker import LOG_DIR, Broker
from kraftlog.level import Level
from kraftlog.metadata.records import BrokerRegistrationChangeRecord
from kraftlog.net.disk import FileDisk
from kraftlog.net.segment import corrupt_segment, segment_batches
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.scenario import corrupt_target, parse_scenario
from kraftlog.sim.runner import ScenarioRun
from kraftlog.storage.checkpoints import CLEAN_SHUTDOWN_FILE, read_clean_shutdown, write_clean_shutdown
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import SEGMENT_FILE, LogConfig, PartitionLog

SEG = f"data/t-0/{SEGMENT_FILE}"


def batch(n: int, tag: str = "v", pid: int = -1, epoch: int = -1, seq: int = -1) -> RecordBatch:
    return RecordBatch(-1, -1, tuple(Record(0, None, f"{tag}{i}".encode()) for i in range(n)),
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def log_with(disk, batches: int, size: int = 10) -> PartitionLog:
    log = PartitionLog(disk, "data/t-0", LogConfig(), 0)
    for i in range(batches):
        log.append_as_leader(batch(size, f"b{i}-"), 0, i)
    return log


# ============================================================================ the Disk seam
def test_a_full_simdisk_refuses_every_write_with_enospc_and_changes_nothing():
    """A full file system (SimDisk.set_full): append, append_many and write_atomic raise ENOSPC before
    changing anything; truncating, fsyncing and deleting what is written still work; with space again
    writes succeed."""
    disk = SimDisk(None)
    disk.append("a.log", "x", 0)
    disk.write_atomic("cp", "1", 0)
    disk.set_full(True)
    for write in (lambda: disk.append("a.log", "y", 1), lambda: disk.append_many("a.log", ["y", "z"], 1),
                  lambda: disk.append("new.log", "y", 1), lambda: disk.write_atomic("cp", "2", 1)):
        with pytest.raises(OSError) as exc:
            write()
        assert exc.value.errno == errno.ENOSPC
    assert disk.read("a.log") == ["x"] and disk.read_value("cp") == "1" and not disk.exists("new.log")
    disk.fsync("a.log", 2)
    disk.truncate("a.log", 0, 2)
    disk.delete("cp", 2)
    assert disk.read("a.log") == [] and not disk.exists("cp")
    disk.set_full(False)
    disk.append("a.log", "y", 3)
    assert disk.read("a.log") == ["y"]


def test_simdisk_recover_drops_the_corrupted_batch_and_everything_after_it_even_after_a_crash():
    """A flipped byte in item 2 (SimDisk.corrupt): the next recover truncates the file to items 0-1 and
    reports the dropped byte range and batch count (LoadDrop). The truncation is not durable before an
    fsync: a crash that loses it brings the damaged batch back, and the next recover drops it again. The
    damage belongs to this disk only: replicas share batch objects in the simulation."""
    disk, other = SimDisk(None), SimDisk(None)
    items = [batch(3, f"b{i}-").with_offsets(3 * i, 0) for i in range(5)]
    for b in items:
        disk.append(SEG, b, 0)
        other.append(SEG, b, 0)
    disk.fsync(SEG, 0)
    assert disk.corrupt(SEG, 2) and not disk.corrupt(SEG, 9)
    assert other.recover(SEG, 1) == []
    (drop,) = disk.recover(SEG, 1)
    start = items[0].size_bytes + items[1].size_bytes
    assert (drop.path, drop.start_byte, drop.items) == (SEG, start, 3)
    assert drop.end_byte == start + sum(b.size_bytes for b in items[2:])
    assert "CRC-32C" in drop.reason and disk.read(SEG) == items[:2]
    assert disk.recover(SEG, 2) == []  # nothing damaged left in view
    disk.crash("unflushed", 3)  # the recovery's truncation was not fsynced
    assert len(disk.read(SEG)) == 5
    assert [d.items for d in disk.recover(SEG, 4)] == [3]


def test_filedisk_injected_enospc_fails_writes_for_its_time_and_leaves_the_file_as_it_was(tmp_path):
    """FileDisk.set_full (the chaos harness's full disk, no root needed): every append and write_atomic
    fails with ENOSPC while it lasts, the file keeps its bytes and its index; afterwards writes work."""
    with FileDisk(tmp_path / "n") as disk:
        disk.append(SEG, batch(2).with_offsets(0, 0), 0)
        size = disk.size_bytes(SEG)
        disk.set_full(True)
        with pytest.raises(OSError) as exc:
            disk.append(SEG, batch(2).with_offsets(2, 0), 1)
        assert exc.value.errno == errno.ENOSPC
        with pytest.raises(OSError):
            disk.write_atomic("data/replication-offset-checkpoint", "0\n0\n", 1)
        assert disk.size_bytes(SEG) == size == os.path.getsize(tmp_path / "n" / SEG)
        assert len(disk.read(SEG)) == 1 and disk.full
        disk.set_full(True, for_s=0.0)  # a window that is already over
        assert not disk.full
        disk.append(SEG, batch(2).with_offsets(2, 0), 2)
        assert [b.base_offset for b in disk.read(SEG)] == [0, 2]


def test_filedisk_recover_reports_a_crc_mismatch_with_its_byte_range_and_batch_count(tmp_path):
    """A byte flipped in the middle batch of a segment (corrupt_segment: inside the CRC-covered part):
    the load truncates at that batch and recover() reports bytes [start, end) and the 3 batch frames
    dropped, once."""
    root = tmp_path / "n"
    with FileDisk(root) as disk:
        for i in range(5):
            disk.append(SEG, batch(4, f"b{i}-").with_offsets(4 * i, 0), 0)
    path = root / SEG
    spans = segment_batches(path)
    assert [(s.base_offset, s.next_offset) for s in spans] == [(4 * i, 4 * i + 4) for i in range(5)]
    index, span = corrupt_target(spans, "middle")  # offset 10: the batch of offsets 8..11
    assert index == 2
    flipped = corrupt_segment(path, span, 1, random.Random(1))
    assert len(flipped) == 1 and span.start + 21 <= flipped[0] < span.end
    with FileDisk(root) as disk:
        (drop,) = disk.recover(SEG, 0)
        assert (drop.start_byte, drop.end_byte, drop.items) == (span.start, spans[-1].end, 3)
        assert "CRC-32C" in drop.reason
        assert disk.recover(SEG, 0) == [] and len(disk.read(SEG)) == 2


def test_corrupt_target_takes_the_middle_the_last_or_the_batch_holding_an_offset():
    """The corrupt verb's rule, the same for the simulator and real processes."""
    spans = [batch(10).with_offsets(10 * i, 0) for i in range(4)]  # offsets 0..39, LEO 40
    assert corrupt_target(spans, "middle")[0] == 2
    assert corrupt_target(spans, "last")[0] == 3
    assert corrupt_target(spans, 15)[0] == 1
    assert corrupt_target(spans, 40) is None and corrupt_target([], "last") is None


# ============================================================================ PartitionLog
def test_a_failed_append_changes_nothing_in_memory_and_the_idempotent_retry_is_appended():
    """Producer state, the offset index, the LEO and the epoch cache change only after the bytes are
    written (issue 23's first finding: producer state updated before the disk write answered a retry
    with the offsets of a batch that was never written, and gave them to another record)."""
    disk = SimDisk(None)
    log = log_with(disk, 2)
    before = (log.log_end_offset, log.epoch_cache.entries(), len(list(log.batches())))
    retry = batch(3, "p-", pid=7, epoch=0, seq=0)
    disk.set_full(True)
    with pytest.raises(OSError):
        log.append_as_leader(retry, 1, 5)
    assert (log.log_end_offset, log.epoch_cache.entries(), len(list(log.batches()))) == before
    assert log.producer_state.check(retry) == (Errors.NONE, -1)  # not taken for a duplicate
    disk.set_full(False)
    stored = log.append_as_leader(retry, 1, 6)
    assert stored.base_offset == before[0] and log.log_end_offset == before[0] + 3
    assert log.producer_state.check(retry)[1] == before[0]  # now it is the duplicate of what is stored
    assert log.epoch_cache.entries()[-1] == (1, before[0])


def test_a_failed_follower_append_keeps_the_batches_written_before_it():
    """A follower's fetched batches are written one by one: an ENOSPC on the second leaves the first
    appended and indexed, and nothing of the second."""
    class FullAfterOneAppend(SimDisk):
        __slots__ = ()

        def append(self, path, item, now_ms):
            super().append(path, item, now_ms)
            self.set_full(True)  # the file system fills with this write

    disk = FullAfterOneAppend(None)
    log = PartitionLog(disk, "data/t-0", LogConfig(), 0)
    first, second = batch(2).with_offsets(0, 3), batch(2).with_offsets(2, 3)
    with pytest.raises(OSError):
        log.append_as_follower([first, second], 0)
    assert log.log_end_offset == 2 and log.epoch_cache.entries() == [(3, 0)]


def test_the_load_reports_what_it_dropped_a_crc_mismatch_and_an_offset_gap():
    """PartitionLog.dropped_at_load: the disk's recovery (a damaged batch) and the log's own check (a
    batch that does not start at the previous one's end), each with its byte range."""
    disk = SimDisk(None)
    log_with(disk, 4)
    disk.corrupt(SEG, 3)
    log = PartitionLog(disk, "data/t-0", LogConfig(), 10)
    assert log.log_end_offset == 30 and [d.items for d in log.dropped_at_load] == [1]
    gap = SimDisk(None)
    gap.append(SEG, batch(2).with_offsets(0, 0), 0)
    gap.append(SEG, batch(2).with_offsets(5, 0), 0)
    log = PartitionLog(gap, "data/t-0", LogConfig(), 10)
    (drop,) = log.dropped_at_load
    assert log.log_end_offset == 2 and drop.items == 1 and "offset gap" in drop.reason


# ============================================================================ the broker
TOPIC_ID = uuid.UUID(int=5)


def scenario(steps: str, *, brokers: int = 3, clients: str = "", config: str = "min.insync.replicas: 2",
             until: str = "") -> str:
    return f"""
name: storage
seed: 5
cluster:
  brokers: {brokers}
  config: {{{config}}}
topics:
  - {{name: t, assignment: [[0, 1, 2]]}}
clients:
{clients or "  - {id: p1, producer: t, acks: all, interval: 20ms}"}
steps:
{steps}
{until}
"""


def run(text: str, level: str = "urm", observe=None):
    r = ScenarioRun(parse_scenario(text), level=Level.parse(level))
    if observe is not None:
        for kind, fn in observe.items():
            r.sim.message_observers[kind] = fn
    return r, r.run()


def test_a_full_disk_on_the_leader_answers_kafka_storage_error_and_moves_leadership_losing_nothing():
    """The leader meets ENOSPC appending a produce: its log directory goes offline, the producer gets
    KAFKA_STORAGE_ERROR (56) for the partition, the controller learns it from the next heartbeat (the
    directory id in OfflineLogDirs), removes broker 0 from the ISR and elects another leader; the
    producer's retries succeed there and nothing acknowledged is lost. Broker 0 keeps running with no
    partition until it restarts."""
    errors = []

    def produce_errors(sim, env):
        errors.extend(p.error_code for p in env.message.partitions)

    r, result = run(scenario("""  - {at: 3s, disk_full: {broker: 0, for: 20s}}
  - {wait_until: {partition: t-0, leader: 1, timeout: 10s}}
  - {expect: {broker: 0, log_dir_offline: true, alive: true, fenced: false}}
  - {expect: {partition: t-0, isr: [1, 2]}}
  - {run_for: 5s}"""), observe={m.ProduceResponse: produce_errors})
    v = result.verdict
    assert v["failed_expectations"] == [] and v["lost_acked"] == 0 and v["invariant_violations"] == []
    assert Errors.KAFKA_STORAGE_ERROR in errors
    b0 = r.sim.broker(0)
    assert b0.log_dir_offline and b0.partitions == {} and b0.logs == {}
    reg = r.sim.controller.image.brokers[0]
    assert reg.log_dirs == () and not r.sim.controller.image.is_acceptable_leader(0)
    assert any("log directory data" in line and "failed while appending" in line for line in result.timeline)


def test_the_broker_restarted_after_a_full_disk_rejoins_as_after_an_unclean_shutdown():
    """An offline log directory gets no clean-shutdown file (Kafka writes it for online directories only):
    after the disk has space and the broker restarts, it registers with PreviousBrokerEpoch -1 and its
    directory online, catches up and rejoins the ISR."""
    r, result = run(scenario("""  - {at: 3s, disk_full: {broker: 0, for: 2s}}
  - {wait_until: {broker: 0, log_dir_offline: true, timeout: 10s}}
  - {after: 3s, shutdown: {broker: 0}}
  - {expect: {broker: 0, alive: false}}
  - {restart: {broker: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 40s}}
  - {expect: {broker: 0, log_dir_offline: false}}
  - {run_for: 3s}"""), level="elr")
    v = result.verdict
    assert v["failed_expectations"] == [] and v["lost_acked"] == 0 and v["invariant_violations"] == []
    reg = r.sim.controller.image.brokers[0]
    assert reg.previous_broker_epoch == -1 and reg.has_online_log_dir


def test_a_broker_whose_failed_directory_is_never_acknowledged_stops_without_a_clean_shutdown_file():
    """KIP-858: the broker is isolated, so no heartbeat is answered; its disk is full and the HWM
    checkpoint fails (a checkpoint failure takes the directory offline and never raises out of the
    node). After log.dir.failure.timeout.ms it stops by itself (the process exits) and leaves no
    clean-shutdown file."""
    r, result = run(scenario("""  - {at: 2s, isolate: {nodes: [0]}}
  - {disk_full: {broker: 0, for: 60s}}
  - {wait_until: {broker: 0, alive: false, timeout: 45s}}""", clients="  []",
                             config="min.insync.replicas: 2, log.dir.failure.timeout.ms: 10000"))
    assert result.verdict["failed_expectations"] == []
    assert read_clean_shutdown(r.sim.disks[0], LOG_DIR) == -1
    assert any("did not acknowledge it within log.dir.failure.timeout.ms" in line for line in result.timeline)


def test_a_broker_restarted_on_a_disk_that_is_still_full_starts_and_reports_its_directory_offline():
    """Kafka would halt; kraftlog's broker starts, registers, reports the directory offline in its
    heartbeats and waits, serving metadata, leading nothing, until a restart with space."""
    r, result = run(scenario("""  - {at: 2s, disk_full: {broker: 1, for: 5m}}
  - {wait_until: {broker: 1, log_dir_offline: true, timeout: 20s}}
  - {shutdown: {broker: 1}}
  - {restart: {broker: 1}}
  - {wait_until: {broker: 1, fenced: false, timeout: 30s}}
  - {run_for: 10s}
  - {expect: {broker: 1, alive: true, log_dir_offline: true}}
  - {expect: {partition: t-0, isr: [0, 2]}}"""))
    v = result.verdict
    assert v["failed_expectations"] == [] and v["lost_acked"] == 0
    assert r.sim.broker(1).log_dir_offline and r.sim.broker(1).partitions == {}


def offline_broker(now: int = 0) -> Broker:
    """Broker 0 holding t-0, registered, its disk full: a produce's append failed."""
    disk = SimDisk(None)
    b = Broker(0, {}, Level.URM, disk, random.Random(1), now)
    b.broker_epoch = 4
    disk.set_full(True)
    b._log_dir_failed(now, OSError(errno.ENOSPC, "No space left on device"), "appending to t-0")
    return b


def test_an_offline_partition_is_kafka_storage_error_and_not_leader_or_follower_to_fetch_v5():
    """Kafka's HostedPartition.Offline answers KAFKA_STORAGE_ERROR; KafkaApis down-converts it to
    NOT_LEADER_OR_FOLLOWER for Fetch v5 and older (maybeDownConvertStorageError)."""
    from kraftlog.metadata.image import MetadataImage, PartitionRegistration, TopicImage
    b = offline_broker()
    b.image = MetadataImage(offset=3, topics={"t": TopicImage("t", TOPIC_ID, 1)}, topic_names={TOPIC_ID: "t"},
                            partitions={("t", 0): PartitionRegistration((0, 1, 2), (1, 2), 1, 1, 1)})
    fetch = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(TOPIC_ID, 0, -1, 0, -1, 0, 1000, topic="t"),))
    for version, want in ((12, Errors.KAFKA_STORAGE_ERROR), (5, Errors.NOT_LEADER_OR_FOLLOWER)):
        b.deliver(0, m.Envelope("c", 0, 1, fetch, False, None, "c", version))
        (out,) = b.poll()
        assert out.message.partitions[0].error_code == want, version
    produce = m.ProduceRequest(-1, 1000, (m.ProducePartition("t", 0, (batch(1),)),))
    b.deliver(0, m.Envelope("c", 0, 2, produce, False))
    (out,) = b.poll()
    assert out.message.partitions[0].error_code == Errors.KAFKA_STORAGE_ERROR


def test_every_heartbeat_carries_the_offline_directory_and_the_answer_acknowledges_it():
    """KIP-858 (BrokerLifecycleManager): a heartbeat is due at once, carries OfflineLogDirs = [the
    directory's id] (every heartbeat until a restart), and an answered one cancels the stop deadline."""
    b = offline_broker(now=100)
    assert b.next_heartbeat_ms == 100 and b.log_dir_failure_deadline_ms == 100 + 30000
    b.tick(100)
    hb = next(e for e in b.poll() if isinstance(e.message, m.BrokerHeartbeatRequest))
    assert hb.message.offline_log_dirs == (b.directory_id,)
    b.deliver(150, m.Envelope("controller", 0, hb.correlation_id, m.BrokerHeartbeatResponse(Errors.NONE), True))
    assert b.log_dir_failure_deadline_ms is None
    b.tick(2200)
    hb2 = next(e for e in b.poll() if isinstance(e.message, m.BrokerHeartbeatRequest))
    assert hb2.message.offline_log_dirs == (b.directory_id,)


def test_the_shutdown_of_a_broker_with_an_offline_directory_writes_no_clean_shutdown_file():
    b = offline_broker()
    b._finish_shutdown(10)
    assert b.stopped and not b.disk.exists(f"{LOG_DIR}/{CLEAN_SHUTDOWN_FILE}")


def test_a_log_that_dropped_data_at_load_after_a_clean_shutdown_registers_unclean():
    """DESIGN.md: "a replica that lost data at load is not clean": the clean-shutdown file vouched for a
    log whose recovery truncated a damaged batch, so the registration carries PreviousBrokerEpoch -1
    (KIP-966 then keeps the replica out of the ELR). Without a drop the file's epoch is sent."""
    for damaged, want in ((False, 7), (True, -1)):
        disk = SimDisk(None)
        log_with(disk, 3)
        write_clean_shutdown(disk, LOG_DIR, 7, 0)
        if damaged:
            disk.corrupt(SEG, 1)
        b = Broker(0, {}, Level.ELR, disk, random.Random(1), 10)
        assert b.previous_broker_epoch == want
        assert len(b.dropped_at_load) == int(damaged)
        b.tick(10)
        reg = next(e for e in b.poll() if isinstance(e.message, m.BrokerRegistrationRequest))
        assert reg.message.previous_broker_epoch == want and reg.message.log_dirs == (b.directory_id,)


# ============================================================================ the controller
def controller_with_partition(level=Level.ELR):
    from test_controller import Harness
    h = Harness(level, {"min.insync.replicas": "2"})
    for b in range(3):
        h.register(b)
        h.heartbeat(b)
    h.create_topic("t", [[0, 1, 2]])
    return h


def test_the_controller_takes_an_offline_directory_out_of_every_isr_and_moves_its_leaderships():
    """Kafka's ReplicationControlManager.handleDirectoriesOffline: the broker leaves the ISR, its
    leadership moves, the registration keeps no online directory; a repeated report changes nothing.
    The broker stays unfenced (it still heartbeats and serves metadata)."""
    h = controller_with_partition()
    dir0 = uuid.UUID(int=77)
    before = h.ctl.end_offset
    h.call(m.BrokerHeartbeatRequest(0, h.epoch[0], h.ctl.end_offset, False, False, (dir0,)), src=0)
    part = h.part()
    assert part.leader != 0 and 0 not in part.isr and part.leader in (1, 2)
    reg = h.ctl.image.brokers[0]
    assert reg.log_dirs == () and not reg.fenced and not h.ctl.image.is_acceptable_leader(0)
    changes = [r for r in h.ctl.log[before:] if isinstance(r, BrokerRegistrationChangeRecord)]
    assert changes == [BrokerRegistrationChangeRecord(0, h.epoch[0], log_dirs=())]
    end = h.ctl.end_offset
    h.call(m.BrokerHeartbeatRequest(0, h.epoch[0], h.ctl.end_offset, False, False, (dir0,)), src=0)
    assert h.ctl.end_offset == end


def test_a_broker_without_an_online_directory_is_never_elected_not_even_by_its_own_unfencing():
    """LeaderAcceptor (isActive and hasOnlineDir): the last ISR member at classic reports its directory
    offline in the heartbeat that would unfence it after a restart; the offline report is applied first,
    so the partition stays leaderless instead of being led from a directory that is gone."""
    h = controller_with_partition(Level.CLASSIC)
    for b in (1, 2):
        h.heartbeat(b, want_fence=True)
    assert h.part().isr == (0,) and h.part().leader == 0
    h.heartbeat(0, want_fence=True)  # the last ISR member is fenced: leaderless, ISR [0] (classic)
    assert h.part().leader == -1 and h.part().isr == (0,)
    h.call(m.BrokerHeartbeatRequest(0, h.epoch[0], h.ctl.end_offset, False, False, (uuid.UUID(int=77),)), src=0)
    assert h.part().leader == -1
    assert not h.ctl.image.is_acceptable_leader(0)


# ============================================================================ the library
@pytest.mark.parametrize("level,lost", [("classic", True), ("kip903", True), ("elr", False), ("urm", False)])
def test_corrupted_last_replica_loses_records_below_kip966_and_nothing_with_elr(library, level, lost):
    """scenarios/corrupted-last-replica.yaml (issue 23's second finding): every replica stops cleanly,
    one byte of the last leader's segment is flipped, it restarts first. Its load drops half the log and,
    since its clean-shutdown file vouched for it, it registers unclean. Below KIP-966 it is still the last
    ISR member and is elected: the others truncate to it, half the acknowledged records are lost. With
    the ELR it leaves the ELR and a clean ELR member is elected: nothing is lost."""
    v = library.run("corrupted-last-replica", Level.parse(level)).verdict
    assert v["failed_expectations"] == []
    assert (v["lost_acked"] == 500) is lost and (v["lost_acked"] == 0) is not lost


@pytest.mark.parametrize("level", ["classic", "kip903", "elr", "urm"])
def test_a_full_disk_on_the_leader_loses_nothing_at_any_level(library, level):
    v = library.run("disk-full-leader", Level.parse(level)).verdict
    assert v["failed_expectations"] == [] and v["lost_acked"] == 0 and v["invariant_violations"] == []


def test_a_controller_whose_metadata_log_cannot_be_written_stops_and_commits_nothing():
    """A full disk under the controller: the registration's RegisterBrokerRecord cannot be written, so
    nothing is committed (the image and the log are unchanged), no answer is sent, and the controller
    stops with a one-line reason (Kafka's controller halts on a failed metadata log write); it ignores
    what arrives afterwards and asks for no more ticks."""
    from test_controller import Harness
    h = Harness(Level.URM)
    h.register(0)
    end, image = h.ctl.end_offset, h.ctl.image
    h.disk.set_full(True)
    h.ctl.deliver(0, m.Envelope(1, "controller", 99, m.BrokerRegistrationRequest(1, "kraftlog", uuid.UUID(int=5))))
    assert h.ctl.poll() == []
    assert h.ctl.fatal_error is not None and "No space left on device" in h.ctl.fatal_error
    assert h.ctl.end_offset == end and h.ctl.image is image and h.ctl.next_deadline() is None
    h.disk.set_full(False)
    h.ctl.deliver(0, m.Envelope(1, "controller", 100, m.BrokerRegistrationRequest(1, "kraftlog", uuid.UUID(int=5))))
    h.ctl.tick(10_000)
    assert h.ctl.poll() == [] and h.ctl.end_offset == end


def test_a_new_topic_is_never_placed_on_or_led_by_a_broker_whose_log_directory_is_offline():
    """A broker with its only log directory offline stays registered and unfenced (kraftlog keeps it up;
    Kafka would have halted it), but can host no replica: CreateTopics leaves it out of the placement,
    out of a manual assignment's ISR and leadership, and refuses an assignment that has only it."""
    h = controller_with_partition()
    h.call(m.BrokerHeartbeatRequest(0, h.epoch[0], h.ctl.end_offset, False, False, (uuid.UUID(int=77),)), src=0)
    resp = h.call(m.CreateTopicsRequest((m.CreatableTopic("placed", 6, 2),)), src="admin")
    assert resp.topics[0].error_code == Errors.NONE, resp
    for i in range(6):
        assert 0 not in h.ctl.image.partitions[("placed", i)].replicas
    h.create_topic("manual", [[0, 1, 2]])
    part = h.part("manual")
    assert part.leader in (1, 2) and 0 not in part.isr and part.replicas == (0, 1, 2)
    resp = h.call(m.CreateTopicsRequest((m.CreatableTopic("only-0", assignment=((0,),)),)), src="admin")
    assert resp.topics[0].error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    resp = h.call(m.CreateTopicsRequest((m.CreatableTopic("rf3", 1, 3),)), src="admin")
    assert resp.topics[0].error_code == Errors.INVALID_REPLICATION_FACTOR
