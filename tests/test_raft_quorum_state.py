"""Kafka's QuorumStateTest and FileQuorumStateStoreTest as facts about kraftlog's quorum states: where a replica
starts from its ``quorum-state`` file and its log, which moves between states Raft allows (a forbidden one raises
:class:`~kraftlog.raft.client.RaftSafetyError` and changes nothing, as Kafka's IllegalStateException does), and the
``quorum-state`` JSON Kafka writes (data version 0 at kraft.version 0, 1 at kraft.version 1).

kraftlog's transitions are methods of the client (``_to_unattached``, ``_to_follower``, ``_to_prospective``,
``_to_candidate``, ``_to_leader``): they are called here directly, as QuorumStateTest calls Kafka's
``QuorumState.transitionTo*``."""

from __future__ import annotations

import json
import uuid

import pytest

from kraftlog.raft.client import RaftSafetyError
from kraftlog.raft.leader_state import LeaderState
from kraftlog.raft.log import METADATA_LOG_DIR
from kraftlog.raft.states import (
    Candidate,
    ElectionState,
    Follower,
    Prospective,
    QuorumStateStore,
    Resigned,
    Unattached,
    kafka_uuid,
    parse_kafka_uuid,
)
from kraftlog.raft.voters import ReplicaKey
from kraftlog.storage.disk import SimDisk
from raft_context import RaftContext, dir_id, key

L = 1
VERSIONS = pytest.mark.parametrize("kraft_version", [0, 1])


def voted_id(ctx: RaftContext) -> int | None:
    election = ctx.stored()
    assert election is not None
    return election.voted_key.id if election.voted_key else None


def forbidden(ctx: RaftContext, move: str, *args: int | None) -> None:
    """``move`` raises RaftSafetyError and leaves the state and quorum-state as they were."""
    before, stored = ctx.state, ctx.stored()
    with pytest.raises(RaftSafetyError):
        getattr(ctx.raft, move)(*args, ctx.now)
    assert ctx.state is before and ctx.stored() == stored


# ============================================================================================== initialization
@VERSIONS
def test_without_quorum_state_a_voter_starts_unattached_in_epoch_zero(kraft_version: int) -> None:
    """QuorumStateTest.testInitializePrimordialEpoch"""
    ctx = RaftContext(L, [1, 2], kraft_version=kraft_version)
    assert isinstance(ctx.state, Unattached) and ctx.epoch == 0
    assert ctx.state.leader_id is None and ctx.state.voted_key is None
    assert ctx.stored() == ElectionState(0)


@VERSIONS
def test_an_unknown_leader_starts_unattached_with_a_random_election_timeout(kraft_version: int) -> None:
    """QuorumStateTest.testInitializeAsUnattached: election.timeout.ms plus a jitter below it"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=ElectionState(5))
    state = ctx.state
    assert isinstance(state, Unattached) and ctx.epoch == 5 and state.voted_key is None
    timeout = ctx.config.election_timeout_ms
    assert timeout <= state.election_deadline - ctx.now < 2 * timeout


@VERSIONS
@pytest.mark.parametrize("voted", [None, 2, 3], ids=["no-vote", "voted-leader", "voted-other"])
def test_a_known_leader_starts_a_follower_with_a_full_fetch_timeout_and_keeps_the_vote(
        kraft_version: int, voted: int | None) -> None:
    """QuorumStateTest.testInitializeAsFollower, testInitializeVotedAndLeaderAreSame,
    testInitializeVotedAndLeaderAreDifferent"""
    election = ElectionState(5, 2, key(voted) if voted is not None else None)
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=election)
    state = ctx.state
    assert isinstance(state, Follower) and (ctx.epoch, state.leader_id) == (5, 2)
    assert state.fetch_deadline - ctx.now == ctx.config.fetch_timeout_ms
    expected = key(voted, with_directory=kraft_version == 1) if voted is not None else None
    assert ctx.stored() == ElectionState(5, 2, expected)


@VERSIONS
def test_a_leader_that_is_no_voter_starts_unattached_knowing_the_leader(kraft_version: int) -> None:
    """QuorumStateTest.testInitializeAsUnattachedWhenMissingEndpoints (Kafka: the leader's endpoints are unknown)"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=ElectionState(5, 4, key(4)))
    state = ctx.state
    assert isinstance(state, Unattached) and ctx.epoch == 5 and state.leader_id == 4
    assert ctx.stored() == ElectionState(5, 4, key(4, with_directory=kraft_version == 1))


@VERSIONS
def test_a_vote_without_a_leader_starts_unattached_voted(kraft_version: int) -> None:
    """QuorumStateTest.testInitializeAsVotedNoLeader"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=ElectionState(5, -1, key(2)))
    state = ctx.state
    assert isinstance(state, Unattached) and ctx.epoch == 5
    assert state.voted_key == key(2, with_directory=kraft_version == 1)
    timeout = ctx.config.election_timeout_ms
    assert timeout <= state.election_deadline - ctx.now < 2 * timeout


@VERSIONS
def test_a_vote_for_itself_starts_a_candidate_of_that_epoch(kraft_version: int) -> None:
    """QuorumStateTest.testInitializeAsResignedCandidate"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=ElectionState(5, -1, key(L)))
    state = ctx.state
    assert isinstance(state, Candidate) and ctx.epoch == 5
    assert state.election.granted == {L} and state.election.rejected == set()
    assert state.election.unrecorded_voters() == [2, 3]
    timeout = ctx.config.election_timeout_ms
    assert timeout <= state.election_deadline - ctx.now < 2 * timeout


@VERSIONS
def test_a_replica_that_led_starts_resigned_in_that_epoch(kraft_version: int) -> None:
    """QuorumStateTest.testInitializeAsResignedLeader (that it asks every other voter with EndQuorumEpoch is
    test_raft_client.py's test_a_restarted_leader_sends_end_quorum_epoch_to_every_voter_until_acknowledged)"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=ElectionState(5, L))
    state = ctx.state
    assert isinstance(state, Resigned) and not ctx.raft.is_leader and ctx.epoch == 5 and state.leader_id == L
    timeout = ctx.config.election_timeout_ms
    assert timeout <= state.election_deadline - ctx.now < 2 * timeout


@VERSIONS
@pytest.mark.parametrize("election", [None, ElectionState(1, 2)], ids=["no-quorum-state", "older-quorum-state"])
def test_a_log_epoch_above_the_quorum_state_starts_unattached_in_the_logs_epoch(
        kraft_version: int, election: ElectionState | None) -> None:
    """QuorumStateTest.testInitializeWithCorruptedStore (the store's epoch is below the log's last epoch 2)"""
    ctx = RaftContext(L, [1, 2, 3], kraft_version=kraft_version, election=election, log=[(2, ["a"])])
    assert isinstance(ctx.state, Unattached) and ctx.epoch == 2 and ctx.state.leader_id is None
    assert ctx.stored() == ElectionState(2)


def test_a_quorum_state_file_that_is_not_json_fails_the_start() -> None:
    """FileQuorumStateStore.readStateFromFile: an unreadable file is an error (UncheckedIOException), not a fresh
    start"""
    disk = SimDisk()
    store = QuorumStateStore(disk, METADATA_LOG_DIR)
    disk.write_atomic(store.path, "{not json", 0)
    with pytest.raises(ValueError, match="quorum-state"):
        store.read()


@pytest.mark.parametrize("version_field", [',"data_version":2', ""], ids=["data_version-2", "no-data_version"])
def test_a_quorum_state_file_of_an_unknown_data_version_is_refused(version_field: str) -> None:
    """FileQuorumStateStoreTest.testCantReadVersionQuorumState"""
    disk = SimDisk()
    store = QuorumStateStore(disk, METADATA_LOG_DIR)
    disk.write_atomic(store.path, '{"leaderId":9990,"leaderEpoch":3012,"votedId":-1,"appliedOffset":0,'
                                  '"currentVoters":[{"voterId":9990},{"voterId":9991},{"voterId":9992}]'
                                  + version_field + "}", 0)
    with pytest.raises(ValueError):
        store.read()


# ============================================================================================== quorum-state JSON
def test_quorum_state_at_kraft_version_0_is_kafkas_data_version_0() -> None:
    """FileQuorumStateStoreTest.testWriteReadElectedLeader / testWriteReadVotedCandidate (kraft.version 0: the voted
    replica's directory id is not kept) and FileQuorumStateStore's version 0 format"""
    disk = SimDisk()
    store = QuorumStateStore(disk, METADATA_LOG_DIR)
    store.write(ElectionState(2, 1, ReplicaKey(1, dir_id(1))), 0, [3, 1, 2], 0)
    assert json.loads(str(disk.read_value(store.path))) == {
        "clusterId": "", "leaderId": 1, "leaderEpoch": 2, "votedId": 1, "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    assert store.read() == ElectionState(2, 1, ReplicaKey(1, None))
    store.write(ElectionState(3, -1, ReplicaKey(2, dir_id(2))), 0, [1, 2, 3], 0)
    assert store.read() == ElectionState(3, -1, ReplicaKey(2, None))


def test_quorum_state_at_kraft_version_1_is_kafkas_data_version_1() -> None:
    """FileQuorumStateStoreTest.testWriteReadElectedLeader / testWriteReadVotedCandidate /
    testWriteReadUnknownLeader (kraft.version 1: the voted directory id is kept, no voters are written; no vote is
    Kafka's Uuid.ZERO_UUID)"""
    disk = SimDisk()
    store = QuorumStateStore(disk, METADATA_LOG_DIR)
    store.write(ElectionState(2, 1, ReplicaKey(1, dir_id(1))), 1, [1, 2, 3], 0)
    assert json.loads(str(disk.read_value(store.path))) == {
        "leaderId": 1, "leaderEpoch": 2, "votedId": 1, "votedDirectoryId": kafka_uuid(dir_id(1)), "data_version": 1}
    assert store.read() == ElectionState(2, 1, ReplicaKey(1, dir_id(1)))
    store.write(ElectionState(4), 1, [1, 2, 3], 0)
    assert json.loads(str(disk.read_value(store.path))) == {
        "leaderId": -1, "leaderEpoch": 4, "votedId": -1, "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
        "data_version": 1}
    assert store.read() == ElectionState(4)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],'
     '"data_version":0}', ElectionState(2, 1, None)),
    ('{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}',
     ElectionState(2, -1, ReplicaKey(1, parse_kafka_uuid("J8aAPcfLQt2bqs1JT_rMgQ")))),
], ids=["v0", "v1"])
def test_kafkas_own_quorum_state_files_are_read(text: str, expected: ElectionState) -> None:
    """FileQuorumStateStore's documented example files (versions 0 and 1), as a Kafka controller wrote them"""
    disk = SimDisk()
    store = QuorumStateStore(disk, METADATA_LOG_DIR)
    disk.write_atomic(store.path, text, 0)
    assert store.read() == expected
    assert kafka_uuid(parse_kafka_uuid("J8aAPcfLQt2bqs1JT_rMgQ")) == "J8aAPcfLQt2bqs1JT_rMgQ"
    assert isinstance(parse_kafka_uuid("AAAAAAAAAAAAAAAAAAAAAA"), uuid.UUID)


# ============================================================================================== transitions
def test_unattached_moves_only_to_a_higher_epoch_or_a_leader_and_never_straight_to_candidate() -> None:
    """QuorumStateTest.testUnattachedToUnattached, testUnattachedToAnyStateLowerEpoch, testUnattachedToCandidate,
    testUnattachedToLeaderOrResigned, testUnattachedToFollowerSameEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5))
    forbidden(ctx, "_to_unattached", 5, None)
    forbidden(ctx, "_to_unattached", 4, None)
    forbidden(ctx, "_to_follower", 4, 2)
    forbidden(ctx, "_to_candidate")
    forbidden(ctx, "_to_leader")
    ctx.raft._to_follower(5, 2, ctx.now)
    assert isinstance(ctx.state, Follower) and ctx.stored() == ElectionState(5, 2, None)


def test_a_follower_cannot_follow_again_in_its_epoch_nor_go_back() -> None:
    """QuorumStateTest.testFollowerToFollowerSameEpoch, testFollowerToUnattachedSameEpoch,
    testFollowerToAnyStateLowerEpoch, testFollowerToCandidate, testFollowerToFollowerHigherEpoch"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(8, 3))
    forbidden(ctx, "_to_follower", 8, 2)
    forbidden(ctx, "_to_follower", 8, 3)
    forbidden(ctx, "_to_unattached", 8, None)
    forbidden(ctx, "_to_follower", 7, 2)
    forbidden(ctx, "_to_candidate")
    ctx.raft._to_follower(9, 2, ctx.now)
    assert isinstance(ctx.state, Follower) and ctx.stored() == ElectionState(9, 2, None)


def test_no_replica_follows_itself() -> None:
    """QuorumStateTest.testCannotFollowSelf"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(0))
    forbidden(ctx, "_to_follower", 1, L)


def test_a_prospective_goes_unattached_in_its_epoch_keeping_its_vote_and_candidate_in_the_next() -> None:
    """QuorumStateTest.testProspectiveToProspective, testProspectiveVotedToUnattachedInSameEpoch,
    testProspectiveToCandidate, testProspectiveVotedToCandidate"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(5, -1, key(2)))
    ctx.to_prospective()
    assert isinstance(ctx.state, Prospective) and ctx.state.voted_key == ReplicaKey(2)
    forbidden(ctx, "_to_prospective")
    forbidden(ctx, "_to_leader")
    ctx.raft._to_unattached(5, None, ctx.now)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key == ReplicaKey(2) and voted_id(ctx) == 2
    ctx.to_prospective()
    ctx.raft._to_candidate(ctx.now)
    assert isinstance(ctx.state, Candidate) and ctx.epoch == 6 and ctx.stored() == ElectionState(6, -1, ReplicaKey(L))


def test_a_candidate_leads_only_with_a_majority_and_never_restarts_its_candidacy() -> None:
    """QuorumStateTest.testCandidateToCandidate, testCandidateToLeaderWithoutGrantedVote, testCandidateToLeader,
    testCandidateToUnattachedSameEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(0))
    ctx.to_candidate()
    state = ctx.state
    assert isinstance(state, Candidate) and not state.election.is_vote_granted()
    forbidden(ctx, "_to_candidate")
    forbidden(ctx, "_to_leader")
    forbidden(ctx, "_to_unattached", 1, None)
    state.election.record(2, True)
    ctx.raft._to_leader(ctx.now)
    assert isinstance(ctx.state, LeaderState) and ctx.epoch == 1


def test_a_candidate_follows_the_leader_of_its_epoch_keeping_its_own_vote() -> None:
    """QuorumStateTest.testCandidateToFollowerSameEpoch, testCandidateToProspective"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(0))
    ctx.to_candidate()
    ctx.raft._to_follower(1, 2, ctx.now)
    assert isinstance(ctx.state, Follower) and ctx.epoch == 1 and ctx.stored() == ElectionState(1, 2, ReplicaKey(L))


def test_a_leader_cannot_follow_in_its_epoch_nor_become_prospective_nor_go_back() -> None:
    """QuorumStateTest.testLeaderToFollowerSameEpoch, testLeaderToProspective, testLeaderToCandidate,
    testLeaderToLeader, testLeaderToAnyStateLowerEpoch, testLeaderToUnattachedSameEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5))
    ctx.to_leader()
    assert ctx.epoch == 6
    forbidden(ctx, "_to_follower", 6, 2)
    forbidden(ctx, "_to_prospective")
    forbidden(ctx, "_to_candidate")
    forbidden(ctx, "_to_leader")
    forbidden(ctx, "_to_unattached", 6, None)
    forbidden(ctx, "_to_unattached", 4, None)
    forbidden(ctx, "_to_follower", 4, 2)
    assert ctx.raft.is_leader


def test_a_leaders_quorum_state_names_itself_as_leader_and_no_vote() -> None:
    """QuorumStateTest.testLeaderToAnyStateLowerEpoch (its store assertion)"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5))
    ctx.to_leader()
    assert ctx.stored() == ElectionState(6, L, None)


def test_a_resigned_leader_may_follow_another_in_its_epoch_but_not_itself() -> None:
    """QuorumStateTest.testResignedToFollowerInSameEpoch (KAFKA-18379), testResignedToUnattachedInHigherEpoch"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(5, L))
    assert isinstance(ctx.state, Resigned)
    forbidden(ctx, "_to_follower", 5, L)
    forbidden(ctx, "_to_unattached", 5, None)
    ctx.raft._to_follower(5, 2, ctx.now)
    assert isinstance(ctx.state, Follower) and ctx.stored() == ElectionState(5, 2, None)


def test_an_observer_never_becomes_prospective() -> None:
    """QuorumStateTest.testObserverUnattachedToProspective,
    testObserverFollowerToProspectiveOrCandidateOrLeaderOrResigned,
    testObserverUnattachedToCandidateOrLeaderOrResigned"""
    ctx = RaftContext(L, [2, 3], election=ElectionState(5, -1, key(2)))
    assert isinstance(ctx.state, Unattached) and not ctx.raft.is_voter()
    forbidden(ctx, "_to_prospective")
    forbidden(ctx, "_to_candidate")
    forbidden(ctx, "_to_leader")
    ctx.raft._to_follower(5, 3, ctx.now)
    assert isinstance(ctx.state, Follower) and ctx.state.voted_key == ReplicaKey(2)
    forbidden(ctx, "_to_prospective")


def test_the_committed_offset_is_kept_across_states_and_a_new_leader_starts_without_one() -> None:
    """QuorumStateTest.testHighWatermarkRetained: the follower's high watermark survives Unattached, Prospective and
    Candidate; a new leader's own high watermark is unknown until a majority fetched its epoch's first batch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2), log=[(1, list(range(10)))])
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=10, base_offset=10))
    assert ctx.raft.high_watermark == 10
    ctx.raft._to_unattached(6, None, ctx.now)
    assert ctx.raft.high_watermark == 10
    for vote in ctx.to_candidate():
        assert ctx.raft.high_watermark == 10
        ctx.respond(vote, ctx.vote_response(True, 7))
    state = ctx.state
    assert isinstance(state, LeaderState) and state.high_watermark is None and ctx.raft.high_watermark == 10
    assert state.epoch_start_offset == 10
