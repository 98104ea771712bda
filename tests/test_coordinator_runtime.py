"""Issue 32: the group coordinator over ``__consumer_offsets`` (Kafka's ``CoordinatorRuntime``,
``GroupMetadataManager`` and ``OffsetMetadataManager``), driven over an in-memory partition whose HWM a test moves
(:mod:`coordinator_fakes`). The facts of Kafka's ``CoordinatorRuntimeTest``, ``GroupMetadataManagerTest`` and
``OffsetMetadataManagerTest`` that apply to the classic protocol: writes answered after the HWM, load and unload on
leadership changes, group membership surviving a coordinator move, tombstones, expiry; and the record schemas."""

from __future__ import annotations

import pytest

from coordinator_fakes import MemoryWriter, coordinator_over
from kraftlog.broker.coordinator_runtime import OffsetState, coordinator_error, offset_record
from kraftlog.broker.group_metadata import EMPTY, STABLE, java_string_hash, offsets_partition_for
from kraftlog.broker.group_records import (
    GroupKey,
    OffsetKey,
    OffsetValue,
    UnknownRecord,
    decode_key,
    encode_key,
    encode_offset_value,
)
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from test_group_coordinator import SESSION, G, Tok, answers, heartbeat, join_req, stable_group, sync_req

RETENTION_MS = 60_000  # offsets.retention.minutes 1
CHECK_MS = 1_000


def commit(gc, now: int, offset: int, group: str = G, token=None, generation: int = -1, member: str = ""):
    req = m.OffsetCommitRequest(group, (m.OffsetCommitPartition("t", 0, offset, 3),), generation, member)
    return gc.handle(now, token or Tok("oc"), "c", req)


def fetched(gc, group: str = G) -> int:
    return gc.handle(0, Tok("of"), "c", m.OffsetFetchRequest(group, (("t", 0),))).partitions[0].committed_offset


# ============================================================================ the records
def test_record_keys_and_values_are_kafkas_schemas_after_their_version():
    """OffsetCommitKey v1 (group, topic, partition), OffsetCommitValue v3 (offset, leader epoch, metadata,
    commit timestamp), GroupMetadataKey v2 (group): Kafka's non-flexible encodings after an int16 version."""
    assert encode_key(OffsetKey("g", "t", 0)) == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x00"
    assert encode_key(GroupKey("g")) == b"\x00\x02" + b"\x00\x01g"
    assert encode_offset_value(OffsetValue(7, 2, "", 1)) == (
        b"\x00\x03" + (7).to_bytes(8, "big") + (2).to_bytes(4, "big") + b"\x00\x00" + (1).to_bytes(8, "big"))
    assert decode_key(encode_key(OffsetKey("é", "t", 3))) == OffsetKey("é", "t", 3)
    assert decode_key(b"\x00\x09\x00\x01g") == UnknownRecord(9)  # a transaction's or a KIP-848 group's record


def test_unreadable_records_are_counted_and_skipped_at_load():
    """A record kraftlog cannot read (another key version, a truncated value) does not stop a load: it is
    counted and the others are replayed (Kafka fails the load; kraftlog keeps the partition loadable)."""
    state = OffsetState()
    state.replay(b"\x00\x09\x00\x01g", b"x")
    state.replay(encode_key(OffsetKey("g", "t", 0)), b"\x00\x03\x00")
    key, value = offset_record("g", "t", 1, OffsetValue(5, 0, "", 0))
    state.replay(key, value)
    assert state.unreadable == 2 and state.offsets == {"g": {("t", 1): OffsetValue(5, 0, "", 0)}}
    state.replay(key, None)  # a tombstone
    assert state.offsets == {}


def test_partition_for_is_kafkas_abs_of_the_java_hash_modulo_the_partitions():
    """Utils.abs(groupId.hashCode()) % n, with Utils.abs(Integer.MIN_VALUE) = 0: "polygenelubricants" hashes to
    Integer.MIN_VALUE."""
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert offsets_partition_for("polygenelubricants", 50) == 0
    assert offsets_partition_for("group-1", 50) == abs(java_string_hash("group-1")) % 50


# ============================================================================ writes and the HWM
def test_an_offset_commit_is_answered_only_when_the_hwm_passes_its_record():
    """CoordinatorRuntime: a write's response waits for the HWM; OffsetFetch reads the state at the HWM, so the
    commit is invisible until then."""
    writer = MemoryWriter(auto_commit=False)
    gc = coordinator_over(writer)
    token = Tok("commit")
    assert commit(gc, 10, 42, token=token) is None
    assert fetched(gc) == -1 and writer.leo(0) == 1
    writer.hwm[0] = 1
    gc.runtime.on_high_watermark(11)
    (resp,) = [r for t, r in gc.take_responses() if t is token]
    assert resp.partitions[0].error_code == Errors.NONE
    assert fetched(gc) == 42


@pytest.mark.parametrize("append_error, answered", [
    (Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_COORDINATOR),
    (Errors.KAFKA_STORAGE_ERROR, Errors.NOT_COORDINATOR),
    (Errors.RECORD_LIST_TOO_LARGE, Errors.UNKNOWN_SERVER_ERROR),
    (Errors.MESSAGE_TOO_LARGE, Errors.UNKNOWN_SERVER_ERROR),
])
def test_append_errors_are_answered_as_kafkas_group_coordinator_maps_them(append_error, answered):
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    writer.fail = append_error
    assert commit(gc, 0, 5).partitions[0].error_code == answered
    assert coordinator_error(append_error) == answered


def test_a_commit_the_hwm_does_not_reach_within_the_commit_timeout_is_coordinator_not_available():
    writer = MemoryWriter(auto_commit=False)
    gc = coordinator_over(writer, {"offsets.commit.timeout.ms": "5000"})
    token = Tok("commit")
    assert commit(gc, 0, 5, token=token) is None
    assert gc.next_deadline() == 5000
    gc.tick(5000)
    (resp,) = [r for t, r in gc.take_responses() if t is token]
    assert resp.partitions[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE


def test_sync_group_is_answered_once_the_group_record_is_committed():
    """GroupMetadataManager.classicGroupSyncGroup: the leader's assignment is written as a GroupMetadataValue;
    every SyncGroup waits for it; the group is Stable once it is committed."""
    writer = MemoryWriter(auto_commit=False)
    gc = coordinator_over(writer)
    mid = gc.handle(0, Tok("j0"), "c", join_req()).member_id
    assert gc.handle(0, Tok("j1"), "c", join_req(mid)) is None
    gc.tick(3000)  # the initial rebalance delay
    (joined,) = answers(gc).values()
    token = Tok("sync")
    assert gc.handle(3000, token, "c", sync_req(mid, joined.generation_id, {mid: b"a"})) is None
    assert gc.take_responses() == [] and gc.describe(G).state != STABLE
    writer.hwm[0] = writer.leo(0)
    gc.runtime.on_high_watermark(3001)
    (resp,) = [r for t, r in gc.take_responses() if t is token]
    assert resp.error_code == Errors.NONE and resp.assignment == b"a" and gc.describe(G).state == STABLE


# ============================================================================ load and unload
def test_a_new_leader_loads_its_partition_and_answers_load_in_progress_until_then():
    """CoordinatorRuntime.scheduleLoadOperation: the groups of a partition that is still loading answer
    COORDINATOR_LOAD_IN_PROGRESS; loaded, the committed offsets are back."""
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    assert commit(gc, 0, 9).partitions[0].error_code == Errors.NONE
    again = coordinator_over(writer)  # loaded at once by the helper: check the states step by step instead
    runtime = again.runtime
    writer.leaders = {0: 1}  # a new leader epoch: unloaded, then loading
    runtime.sync(10)
    assert runtime.status(G) == Errors.COORDINATOR_LOAD_IN_PROGRESS and runtime.loading
    runtime.load_pending(10)
    assert runtime.status(G) == Errors.NONE and fetched(again) == 9


def test_a_loaded_partition_waits_for_its_hwm_to_reach_the_records_it_read():
    """A new leader whose HWM lags its LEO (the records above it came from the previous leader) would answer an
    OffsetFetch without a commit the previous leader acknowledged: kraftlog answers LOAD_IN_PROGRESS until its
    HWM reaches what it read."""
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    commit(gc, 0, 7)
    commit(gc, 1, 8)
    writer.hwm[0] = 1  # the new leader's HWM: below the second commit
    writer.leaders = {0: 1}
    runtime = gc.runtime
    runtime.sync(2)
    runtime.load_pending(2)
    assert runtime.status(G) == Errors.COORDINATOR_LOAD_IN_PROGRESS
    writer.hwm[0] = 2
    runtime.on_high_watermark(3)
    assert runtime.status(G) == Errors.NONE and fetched(gc) == 8


def test_losing_leadership_unloads_the_groups_and_fails_the_writes_not_coordinator():
    """CoordinatorRuntime.scheduleUnloadOperation: pending writes fail NOT_COORDINATOR, the groups are resigned
    (their parked JoinGroups answered NOT_COORDINATOR) and every request is NOT_COORDINATOR afterwards."""
    writer = MemoryWriter(auto_commit=False)
    gc = coordinator_over(writer)
    token = Tok("commit")
    assert commit(gc, 0, 5, token=token) is None
    gc.handle(0, Tok("j"), "c", join_req("m-1"))
    writer.leaders = {}
    gc.runtime.sync(1)
    by_token = dict(gc.take_responses())
    assert by_token[token].partitions[0].error_code == Errors.NOT_COORDINATOR
    assert gc.groups() == [] and gc.runtime.status(G) == Errors.NOT_COORDINATOR


def test_a_stable_group_survives_a_coordinator_move_with_its_members_generation_and_assignment():
    """The group's GroupMetadataValue is replayed by the next coordinator: the group is Stable with the same
    generation, leader, members and assignments, and its members' heartbeats are accepted (no forced
    rebalance); their sessions restart at the load."""
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    ids, generation, now = stable_group(gc, 2)
    before = gc.describe(G)
    moved = coordinator_over(writer, now_ms=now + 100)
    after = moved.describe(G)
    assert (after.state, after.generation_id, after.leader, after.members) == (
        STABLE, before.generation_id, before.leader, before.members)
    assert [d.assignment for d in after.member_details] == [b"a-0", b"a-1"]
    assert heartbeat(moved, now + 200, ids[0], generation) == Errors.NONE
    moved.tick(now + 100 + SESSION)  # ids[1] never heartbeats on the new coordinator: its session expires
    assert moved.describe(G).members == (ids[0],)


def test_an_empty_group_is_stored_and_loads_empty_with_its_protocol_type():
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    ids, generation, now = stable_group(gc, 1)
    gc.handle(now, Tok("l"), "c", m.LeaveGroupRequest(G, (m.MemberIdentity(ids[0]),)))
    assert gc.describe(G).state == EMPTY
    moved = coordinator_over(writer, now_ms=now + 1)
    summary = moved.describe(G)
    assert (summary.state, summary.generation_id, summary.protocol_type) == (EMPTY, generation + 1, "consumer")


# ============================================================================ deletion and expiry
def test_delete_group_writes_tombstones_for_its_offsets_and_metadata():
    writer = MemoryWriter()
    gc = coordinator_over(writer)
    commit(gc, 0, 5)
    results = []
    gc.delete_group(1, G, lambda now, error: results.append(error))
    assert results == [Errors.NONE] and fetched(gc) == -1 and not gc.runtime.known(G)
    assert not coordinator_over(writer).runtime.known(G)


def test_offsets_of_a_group_without_members_expire_after_the_retention():
    """OffsetMetadataManager.cleanupExpiredOffsets: a group only committing offsets loses them
    offsets.retention.minutes after their commit, at the next check; the group goes with its last offset."""
    writer = MemoryWriter()
    gc = coordinator_over(writer, {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000"})
    commit(gc, 0, 5)
    gc.tick(RETENTION_MS - CHECK_MS)
    assert fetched(gc) == 5
    gc.tick(RETENTION_MS)
    assert fetched(gc) == -1 and G not in gc.groups() and not gc.runtime.known(G)


def test_the_offsets_of_a_group_with_members_do_not_expire():
    writer = MemoryWriter()
    gc = coordinator_over(writer, {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000"})
    ids, generation, now = stable_group(gc, 1)
    assert commit(gc, now, 5, generation=generation, member=ids[0]).partitions[0].error_code == Errors.NONE
    t = now
    while t < now + 2 * RETENTION_MS:
        t += SESSION // 2
        heartbeat(gc, t, ids[0], generation)
        gc.tick(t)
    assert fetched(gc) == 5


# ============================================================================ on a broker
def test_find_coordinator_creates_consumer_offsets_and_then_names_the_partition_leader():
    """Kafka's AutoTopicCreationManager for a FindCoordinator(GROUP): the first answer is
    COORDINATOR_NOT_AVAILABLE while the broker asks the controller for __consumer_offsets
    (offsets.topic.num.partitions, offsets.topic.replication.factor, cleanup.policy=compact,
    offsets.topic.segment.bytes); then the coordinator is the leader of the group's partition. A producer may not
    write to it (INVALID_TOPIC_EXCEPTION)."""
    from test_broker import MiniCluster, batch
    c = MiniCluster(config={"offsets.topic.num.partitions": "3"})
    first = c.send(m.FindCoordinatorRequest(("g1",)), "client")
    assert first.coordinators[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE
    c.advance(c.now + 100)
    topic = c.ctl.image.topics["__consumer_offsets"]
    assert topic.partition_count == 3
    assert {len(c.ctl.image.partitions[("__consumer_offsets", i)].replicas) for i in range(3)} == {3}
    configs = c.ctl.image.configs[(2, "__consumer_offsets")]
    assert configs["cleanup.policy"] == "compact" and configs["segment.bytes"] == "104857600"
    leader = c.ctl.image.partitions[("__consumer_offsets", offsets_partition_for("g1", 3))].leader
    found = c.send(m.FindCoordinatorRequest(("g1",)), "client").coordinators[0]
    assert (found.error_code, found.node_id) == (Errors.NONE, leader)
    produced = c.send(m.ProduceRequest(-1, 1000, (m.ProducePartition("__consumer_offsets", 0, (batch(1),)),)), "client")
    assert produced.partitions[0].error_code == Errors.INVALID_TOPIC_EXCEPTION
