"""The KRaft log of a quorum member on real files (the Deployment issue's storage: a controller quorum on real
processes keeps ``metadata/__cluster_metadata-0`` as Kafka does): :class:`~kraftlog.net.disk.FileDisk` with
``raft_metadata`` holds Raft batches, each one v2 record batch at its own offset in its own leader epoch (control
batches flagged), segments, snapshots, ``quorum-state`` and the bootstrap checkpoint, and recovers them after a
restart or a torn write as the simulated disk does."""

from __future__ import annotations

import os
from random import Random

import pytest

from kraftlog.metadata.records import TopicRecord
from kraftlog.metadata.snapshot import SnapshotId
from kraftlog.net.disk import FileDisk
from kraftlog.net.segment import segment_batches
from kraftlog.protocol.raft_records import KRaftVersionRecord, LeaderChangeMessage, Voter, VotersRecord
from kraftlog.raft.bootstrap import format_quorum, read_bootstrap
from kraftlog.raft.client import KafkaRaftClient
from kraftlog.raft.config import QuorumConfig
from kraftlog.raft.log import METADATA_LOG_DIR, RaftLog
from kraftlog.storage.metadata_log import MetadataLogConfig
from raft_context import dir_id

T = 1_000
ONE_BATCH_SEGMENTS = MetadataLogConfig(segment_bytes=1, retention_bytes=0, retention_ms=-1)
RECORDS = [TopicRecord("a", dir_id(7)), TopicRecord("b", dir_id(8))]


def test_raft_batches_survive_a_restart_on_files_control_batches_included(tmp_path) -> None:
    voters = VotersRecord((Voter(0, dir_id(0)), Voter(1, dir_id(1))))
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        log = RaftLog(disk, T)
        log.append_as_leader([LeaderChangeMessage(0, (0, 1), (0, 1)), KRaftVersionRecord(1), voters], 1, T,
                             control=True)
        log.append_as_leader(RECORDS, 1, T + 1)
        log.append_as_leader(RECORDS[:1], 2, T + 2)
        log.flush(T)
        before = list(log.batches())
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        again = RaftLog(disk, T)
        assert list(again.batches()) == before
        assert (again.end_offset, again.last_fetched_epoch) == (6, 2)
    # Kafka's layout: each batch at its own base offset, in its own leader epoch
    spans = segment_batches(os.path.join(tmp_path, METADATA_LOG_DIR, "00000000000000000000.log"))
    assert [(s.base_offset, s.next_offset) for s in spans] == [(0, 3), (3, 5), (5, 6)]


def test_segments_snapshots_and_cleaning_on_files(tmp_path) -> None:
    """Segments roll, a snapshot is written and the log cleaned below it; a restart finds the same log (its start,
    its end, its last epoch, its snapshot whole)."""
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        log = RaftLog(disk, T, config=ONE_BATCH_SEGMENTS)
        for epoch in (1, 1, 2, 2):
            log.append_as_leader(RECORDS, epoch, T)
        log.flush(T)
        log.create_snapshot(SnapshotId(4, 1), RECORDS, [], T)
        log.create_snapshot(SnapshotId(6, 2), RECORDS, [], T)
        assert log.maybe_clean(T) and log.start_offset == 6
    names = sorted(os.listdir(os.path.join(tmp_path, METADATA_LOG_DIR)))
    assert "00000000000000000006-0000000002.checkpoint" in names and "00000000000000000000.log" not in names
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        again = RaftLog(disk, T, config=ONE_BATCH_SEGMENTS)
        assert (again.start_offset, again.end_offset, again.last_fetched_epoch) == (6, 8, 2)
        snapshot = again.latest_snapshot()
        assert snapshot is not None and snapshot.records == RECORDS


def test_a_torn_last_batch_is_dropped_at_load(tmp_path) -> None:
    """A crash in the middle of a write: the load's recovery cuts the file at the last whole batch."""
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        log = RaftLog(disk, T)
        log.append_as_leader(RECORDS, 1, T)
        log.append_as_leader(RECORDS, 1, T)
        log.flush(T)
    path = os.path.join(tmp_path, METADATA_LOG_DIR, "00000000000000000000.log")
    os.truncate(path, os.path.getsize(path) - 7)
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        again = RaftLog(disk, T)
        assert again.end_offset == 2 and again.load_drops


def test_a_single_voter_on_files_restarts_with_its_log_and_its_election(tmp_path) -> None:
    """KafkaRaftClient over a FileDisk: the only voter elects itself, writes, and after a restart has its log
    and its quorum-state (Kafka's JSON) back, and is elected again in a later epoch."""
    class Channel:
        def send_request(self, *a, **k) -> int:
            return 0

        def send_response(self, *a) -> None:
            pass

        def cancel_request(self, *a) -> None:
            pass

    def client(disk) -> KafkaRaftClient:
        return KafkaRaftClient(node_id=0, directory_id=dir_id(0), cluster_id="c", config=QuorumConfig(), disk=disk,
                               rng=Random(1), now_ms=T, channel=Channel(), static_voters=[0])

    with FileDisk(tmp_path, raft_metadata=True) as disk:
        raft = client(disk)
        raft.poll(T)
        assert raft.is_leader and raft.ready_for_writes
        raft.append(raft.epoch, RECORDS, T)
        raft.poll(T + 1000)
        assert raft.high_watermark == raft.log.end_offset == 3
        epoch = raft.epoch
    assert '"leaderEpoch"' in open(os.path.join(tmp_path, METADATA_LOG_DIR, "quorum-state")).read()
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        again = client(disk)
        assert [b.records for b in again.log.batches()][1] == tuple(RECORDS)
        for t in range(T, T + 10_000, 100):
            again.poll(t)
        assert again.is_leader and again.epoch > epoch


def test_the_bootstrap_checkpoint_is_kafkas_checkpoint_layout_on_files(tmp_path) -> None:
    voters = VotersRecord((Voter(0, dir_id(0)), Voter(1, dir_id(1)), Voter(2, dir_id(2))))
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        format_quorum(disk, T, voters)
        found = read_bootstrap(disk)
        assert found is not None and found.voter_ids == (0, 1, 2)
        disk.write_atomic(f"{METADATA_LOG_DIR}/bootstrap.checkpoint", b"garbage", T)
        with pytest.raises(ValueError, match="cannot be read"):
            read_bootstrap(disk)


def test_a_raft_log_holds_raft_batches_only(tmp_path) -> None:
    """A metadata record appended to a quorum member's metadata log is refused before anything is written."""
    with FileDisk(tmp_path, raft_metadata=True) as disk:
        with pytest.raises(TypeError, match="RaftBatch"):
            disk.append(f"{METADATA_LOG_DIR}/00000000000000000000.log", RECORDS[0], T)
