"""Snapshots in the KRaft client (KIP-630), ported from Kafka's ``KafkaRaftClientSnapshotTest``: a leader answers a
Fetch its log no longer holds with the latest SnapshotId and serves FetchSnapshot in chunks; a follower fetches the
snapshot, truncates its log to it and hands it to its listener; a new listener loads the latest snapshot; and, from
KIP-853, a snapshot carries the voter set the cleaned log no longer holds.

Snapshot ids are (end offset, epoch) as Kafka's ``OffsetAndEpoch(offset, epoch)``; Kafka's test names are given
where a test ports one."""

from __future__ import annotations

import uuid
from random import Random

import pytest

from kraftlog.metadata.records import TopicRecord
from kraftlog.metadata.snapshot import SnapshotId
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.raft_records import Voter, VotersRecord
from kraftlog.protocol.wire.snapshots import encode_snapshot
from kraftlog.raft.bootstrap import format_quorum
from kraftlog.raft.client import KafkaRaftClient
from kraftlog.raft.node import RaftNode
from kraftlog.raft.states import ElectionState
from raft_context import CLUSTER_ID, CONFIG, RaftContext, dir_id, key

RECORDS = [TopicRecord("a", uuid.UUID(int=1)), TopicRecord("b", uuid.UUID(int=2))]


def committed_leader(batches: int = 3, *, kraft_version: int = 0) -> RaftContext:
    """Leader 0 of voters 0, 1, 2 with ``batches`` two-record batches committed (voter 1 fetched them all)."""
    ctx = RaftContext(0, [0, 1, 2], kraft_version=kraft_version)
    ctx.to_leader()
    ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, ctx.raft.log.end_offset, ctx.epoch))  # commits its epoch
    for i in range(batches):
        ctx.node.append([f"r{i}a", f"r{i}b"], ctx.now)
        ctx.poll()
    end = ctx.raft.log.end_offset
    ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, end, ctx.epoch))
    assert ctx.raft.high_watermark == end
    ctx.clear()
    return ctx


def snapshot_and_clean(ctx: RaftContext, more: int = 2) -> SnapshotId:
    """A snapshot at the leader's committed end, ``more`` batches after it, and the log cleaned below it
    (Kafka's tests: createNewSnapshot, append, deleteBeforeSnapshot)."""
    log = ctx.raft.log
    sid = SnapshotId(log.end_offset, ctx.epoch)
    assert log.create_snapshot(sid, RECORDS, ctx.raft.snapshots.control_records(sid.end_offset), ctx.now)
    for i in range(more):
        ctx.node.append([f"after{i}"], ctx.now)
        ctx.poll()
    assert log.delete_before_snapshot(sid, ctx.now) and log.start_offset == sid.end_offset
    ctx.clear()
    return sid


# ================================================================================== the leader
def test_a_fetch_below_the_log_start_is_answered_with_the_latest_snapshot_id() -> None:
    """testFetchRequestOffsetLessThanLogStart: the leader's log no longer holds the offset: SnapshotId, no records"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    resp = ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, sid.end_offset - 2, ctx.epoch))
    assert isinstance(resp, m.MetadataFetchResponse) and resp.error_code == Errors.NONE
    assert (resp.snapshot_end_offset, resp.snapshot_epoch) == (sid.end_offset, sid.epoch)
    assert not resp.batches and resp.diverging_epoch == -1 and resp.log_start_offset == sid.end_offset


def test_an_empty_follower_is_answered_with_the_snapshot_even_before_the_log_is_cleaned() -> None:
    """KafkaRaftClient.tryCompleteFetchRequest: a fetch from offset 0 while a snapshot exists gets its id (the
    log still starts at 0)"""
    ctx = committed_leader()
    log = ctx.raft.log
    sid = SnapshotId(log.end_offset, ctx.epoch)
    log.create_snapshot(sid, RECORDS, [], ctx.now)
    assert log.start_offset == 0
    resp = ctx.request(2, ctx.fetch_request(key(2), ctx.epoch, 0, 0))
    assert isinstance(resp, m.MetadataFetchResponse)
    assert (resp.snapshot_end_offset, resp.snapshot_epoch) == (sid.end_offset, sid.epoch) and not resp.batches


def test_a_fetch_at_the_log_start_with_an_older_epoch_gets_the_snapshot() -> None:
    """testFetchRequestWithLastFetchedEpochLessThanOldestSnapshot: at the log start, an epoch other than the oldest
    snapshot's is answered with the snapshot (ReplicatedLog.validateOffsetAndEpoch)"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    resp = ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, sid.end_offset, sid.epoch - 1))
    assert isinstance(resp, m.MetadataFetchResponse)
    assert resp.snapshot_end_offset == sid.end_offset and not resp.batches


def test_a_fetch_at_the_log_start_in_the_snapshots_epoch_reads_the_log() -> None:
    """testFetchRequestAtLogStartOffsetWithValidEpoch: the position right after the snapshot is on the log"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    resp = ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, sid.end_offset, sid.epoch))
    assert isinstance(resp, m.MetadataFetchResponse) and resp.snapshot_end_offset == -1
    assert resp.batches and resp.batches[0].base_offset == sid.end_offset


def test_fetch_snapshot_serves_the_snapshot_whole_or_in_chunks() -> None:
    """testFetchSnapshotRequestAsLeader, testPartialFetchSnapshotRequestAsLeader: the bytes from the position, at
    most max_bytes, with the snapshot's size"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    data = ctx.raft.log.files.data(sid)
    assert data is not None

    def fetch(position: int, max_bytes: int) -> m.FetchSnapshotResponse:
        resp = ctx.request(1, m.FetchSnapshotRequest(ctx.epoch, sid.end_offset, sid.epoch, position, CLUSTER_ID,
                                                     1, max_bytes, dir_id(1)))
        assert isinstance(resp, m.FetchSnapshotResponse)
        return resp

    whole = fetch(0, 1 << 30)
    assert (whole.partition_error_code, whole.size, whole.position, whole.unaligned_records) == (
        Errors.NONE, len(data), 0, data)
    half = len(data) // 2
    first, second = fetch(0, half), fetch(half, 1 << 30)
    assert first.unaligned_records == data[:half] and second.unaligned_records == data[half:]
    assert (second.current_leader_id, second.current_leader_epoch) == (0, ctx.epoch)


@pytest.mark.parametrize(("change", "error"), [
    # testFetchSnapshotRequestMissingSnapshot
    pytest.param({"snapshot_end_offset": 1}, Errors.SNAPSHOT_NOT_FOUND, id="missing-snapshot"),
    # testFetchSnapshotRequestWithInvalidPosition
    pytest.param({"position": -1}, Errors.POSITION_OUT_OF_RANGE, id="negative-position"),
    pytest.param({"position": 1 << 40}, Errors.POSITION_OUT_OF_RANGE, id="position-past-the-end"),
    # testFetchSnapshotRequestWithOlderEpoch, testFetchSnapshotRequestWithNewerEpoch
    pytest.param({"current_leader_epoch": 0}, Errors.FENCED_LEADER_EPOCH, id="older-epoch"),
    pytest.param({"current_leader_epoch": 99}, Errors.UNKNOWN_LEADER_EPOCH, id="newer-epoch"),
])
def test_fetch_snapshot_errors_name_what_is_wrong(change: dict, error: int) -> None:
    """handleFetchSnapshotRequest's partition errors; the top level stays NONE"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    fields = dict(current_leader_epoch=ctx.epoch, snapshot_end_offset=sid.end_offset, snapshot_epoch=sid.epoch,
                  position=0, cluster_id=CLUSTER_ID, replica_id=1)
    fields.update(change)
    resp = ctx.request(1, m.FetchSnapshotRequest(**fields))
    assert isinstance(resp, m.FetchSnapshotResponse)
    assert (resp.error_code, resp.partition_error_code) == (Errors.NONE, error)
    assert not resp.unaligned_records


def test_fetch_snapshot_on_a_follower_or_from_another_cluster_is_refused() -> None:
    """testFetchSnapshotRequestAsFollower (NOT_LEADER_OR_FOLLOWER), testFetchSnapshotRequestClusterIdValidation
    (INCONSISTENT_CLUSTER_ID, top level)"""
    follower = RaftContext(1, [0, 1, 2], election=ElectionState(5, 0, None))
    resp = follower.request(2, m.FetchSnapshotRequest(5, 10, 5, 0, CLUSTER_ID, 2))
    assert isinstance(resp, m.FetchSnapshotResponse) and resp.partition_error_code == Errors.NOT_LEADER_OR_FOLLOWER
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx)
    other = ctx.request(1, m.FetchSnapshotRequest(ctx.epoch, sid.end_offset, sid.epoch, 0, "another-cluster", 1))
    assert isinstance(other, m.FetchSnapshotResponse) and other.error_code == Errors.INCONSISTENT_CLUSTER_ID


# ================================================================================== the follower
def snapshot_bytes(end_offset: int, epoch: int) -> bytes:
    return encode_snapshot(RECORDS, epoch, 1234)


def follower_told_to_fetch_snapshot(sid: SnapshotId) -> tuple[RaftContext, m.FetchSnapshotRequest, object]:
    """Follower 1 of leader 0 in epoch ``sid.epoch``, its Fetch answered with ``sid``: its next request."""
    ctx = RaftContext(1, [0, 1, 2], election=ElectionState(sid.epoch, 0, None))
    fetch = ctx.follower_fetch()
    resp = ctx.fetch_response(sid.epoch, 0, high_watermark=sid.end_offset)
    resp.snapshot_end_offset, resp.snapshot_epoch = sid.end_offset, sid.epoch
    ctx.respond(fetch, resp)
    ctx.poll()
    (req,) = ctx.requests(m.FetchSnapshotRequest)
    return ctx, req.message, req


def test_a_follower_told_a_snapshot_id_fetches_it_installs_it_and_hands_it_to_its_listener() -> None:
    """testFetchResponseWithSnapshotId, testFetchSnapshotResponsePartialData: FetchSnapshot from position 0, then
    from where the bytes end; complete, the log starts at the snapshot, the high watermark is its end, the listener
    loads it and the next Fetch asks for what follows it"""
    sid = SnapshotId(10, 3)
    ctx, req, env = follower_told_to_fetch_snapshot(sid)
    assert (req.snapshot_end_offset, req.snapshot_epoch, req.position, req.current_leader_epoch) == (10, 3, 0, 3)
    data = snapshot_bytes(10, 3)
    half = len(data) // 2
    ctx.respond(env, m.FetchSnapshotResponse(Errors.NONE, Errors.NONE, 10, 3, 0, 3, size=len(data), position=0,
                                             unaligned_records=data[:half]))
    ctx.poll()
    (env2,) = ctx.requests(m.FetchSnapshotRequest)
    assert env2.message.position == half
    assert ctx.raft.log.start_offset == 0 and not ctx.node.loaded_snapshots  # not installed before it is whole
    ctx.respond(env2, m.FetchSnapshotResponse(Errors.NONE, Errors.NONE, 10, 3, 0, 3, size=len(data),
                                              position=half, unaligned_records=data[half:]))
    ctx.poll()
    log = ctx.raft.log
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch) == (10, 10, 3)
    assert ctx.raft.high_watermark == 10 and log.files.ids == [sid]
    assert ctx.node.loaded_snapshots == [sid] and [r for _, r in ctx.node.committed] == RECORDS
    fetch = ctx.follower_fetch()
    assert (fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == (10, 3)


def test_a_snapshot_the_leader_no_longer_has_sends_the_follower_back_to_fetching() -> None:
    """testFetchSnapshotResponseMissingSnapshot: SNAPSHOT_NOT_FOUND (cleaned meanwhile) → a Fetch again"""
    ctx, _req, env = follower_told_to_fetch_snapshot(SnapshotId(10, 3))
    ctx.respond(env, m.FetchSnapshotResponse(Errors.NONE, Errors.SNAPSHOT_NOT_FOUND, 10, 3, 0, 3))
    ctx.poll()
    assert ctx.follower_fetch().message.fetch_offset == 0 and ctx.raft.fatal_error is None


@pytest.mark.parametrize(("change", "why"), [
    # testFetchSnapshotResponseWithInvalidId
    pytest.param({"snapshot_end_offset": 11}, "while fetching", id="another-snapshot"),
    # testFetchSnapshotResponseWithInvalidPosition
    pytest.param({"position": 5}, "at position 5", id="another-position"),
])
def test_a_chunk_of_another_snapshot_or_position_is_an_impossible_message(change: dict, why: str) -> None:
    """Kafka throws IllegalStateException: the client stops (fatal_error) and the invariant checks see it"""
    ctx, _req, env = follower_told_to_fetch_snapshot(SnapshotId(10, 3))
    fields = dict(error_code=Errors.NONE, partition_error_code=Errors.NONE, snapshot_end_offset=10, snapshot_epoch=3,
                  current_leader_id=0, current_leader_epoch=3, size=100, position=0, unaligned_records=b"x")
    fields.update(change)
    ctx.respond(env, m.FetchSnapshotResponse(**fields))
    assert ctx.raft.fatal_error is not None and why in ctx.raft.fatal_error


def test_a_snapshot_that_does_not_decode_is_not_installed_and_is_fetched_again() -> None:
    """A flipped byte on the way (its CRC-32C): nothing installed, the log unchanged, the follower starts over"""
    ctx, _req, env = follower_told_to_fetch_snapshot(SnapshotId(10, 3))
    data = bytearray(snapshot_bytes(10, 3))
    data[len(data) // 2] ^= 0x40
    ctx.respond(env, m.FetchSnapshotResponse(Errors.NONE, Errors.NONE, 10, 3, 0, 3, size=len(data), position=0,
                                             unaligned_records=bytes(data)))
    ctx.poll()
    assert ctx.raft.fatal_error is None and ctx.raft.log.files.ids == [] and ctx.raft.log.start_offset == 0
    assert ctx.follower_fetch().message.fetch_offset == 0  # the leader names the snapshot again
    assert any("does not decode" in line for line in ctx.raft.snapshots.log_lines)


def test_a_fetch_snapshot_answer_from_a_newer_epoch_makes_the_follower_follow_it() -> None:
    """testFetchSnapshotResponseFromNewerEpochLeader: maybeHandleCommonResponse moves to the newer epoch"""
    ctx, _req, env = follower_told_to_fetch_snapshot(SnapshotId(10, 3))
    ctx.respond(env, m.FetchSnapshotResponse(Errors.NONE, Errors.FENCED_LEADER_EPOCH, -1, -1, 2, 4))
    ctx.poll()
    assert (ctx.epoch, ctx.raft.leader_id) == (4, 2) and ctx.state.fetching_snapshot is None


# ================================================================================== the listener, a restart
def test_a_restarted_replica_loads_its_latest_snapshot_and_reads_on_from_its_end() -> None:
    """testLeaderListenerNotified / KafkaRaftClient.updateListenersProgress: a new listener gets the latest
    snapshot, then the commits after it; the log starts where it was cleaned"""
    ctx = committed_leader()
    sid = snapshot_and_clean(ctx, more=2)
    ctx.request(1, ctx.fetch_request(key(1), ctx.epoch, ctx.raft.log.end_offset, ctx.epoch))
    end = ctx.raft.log.end_offset
    again = RaftNode(0, ctx.disk, Random(1), ctx.now, cluster_id=CLUSTER_ID, config=CONFIG, static_voters=[0, 1, 2],
                     directory_id=dir_id(0))
    log = again.raft.log
    assert (log.start_offset, log.end_offset) == (sid.end_offset, end)
    assert again.loaded_snapshots == [sid] and [r for _, r in again.committed] == RECORDS


def test_a_snapshot_carries_the_voter_set_the_cleaned_log_no_longer_holds() -> None:
    """KIP-853 (RecordsSnapshotWriter writes KRaftVersionRecord and VotersRecord): after the VotersRecord was cleaned
    away, a restarted voter takes its voters from the snapshot, not from the bootstrap checkpoint"""
    ctx = committed_leader(kraft_version=1)
    snapshot_and_clean(ctx)
    snapshot = ctx.raft.log.latest_snapshot()
    assert snapshot is not None and any(isinstance(r, VotersRecord) for r in snapshot.control)
    format_quorum(ctx.disk, ctx.now, VotersRecord((Voter(0, dir_id(0)),)))  # a bootstrap naming only voter 0
    again = KafkaRaftClient(node_id=0, directory_id=dir_id(0), cluster_id=CLUSTER_ID, config=CONFIG, disk=ctx.disk,
                            rng=Random(2), now_ms=ctx.now, channel=ctx.node)
    assert again.voter_set().voter_ids == (0, 1, 2) and again.kraft_version == 1


# ================================================================================== the file layout
def test_a_snapshots_voters_are_a_control_batch_right_after_the_header() -> None:
    """RecordsSnapshotWriter's layout at kraft.version 1: header, a control batch of KRaftVersionRecord and
    VotersRecord, the data, the footer; decode returns them apart. A control record of another type there is
    refused (a snapshot is used whole or not at all)"""
    from kraftlog.protocol.errors import WireError
    from kraftlog.protocol.raft_records import KRaftVersionRecord, LeaderChangeMessage
    from kraftlog.protocol.wire.snapshots import decode_snapshot, decode_snapshot_with_control
    voters = VotersRecord((Voter(0, dir_id(0)), Voter(1, dir_id(1))))
    data = encode_snapshot(RECORDS, 4, 99, [KRaftVersionRecord(1), voters])
    control, records, ts = decode_snapshot_with_control(data)
    assert control == [KRaftVersionRecord(1), voters] and records == RECORDS and ts == 99
    assert decode_snapshot(data) == (RECORDS, 99)
    assert decode_snapshot_with_control(encode_snapshot(RECORDS, 4, 99))[0] == []
    with pytest.raises(WireError, match="control record type 2 after the header"):
        decode_snapshot(encode_snapshot(RECORDS, 4, 99, [LeaderChangeMessage(0, (0, 1), (0,))]))
