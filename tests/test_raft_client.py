"""Kafka's KafkaRaftClientTest and KafkaRaftClientPreVoteTest, request by request, as facts about one
:class:`~kraftlog.raft.node.RaftNode`: the test delivers hand-built request and response Envelopes and reads
what the node sent (``tests/raft_context.py``, Kafka's RaftClientTestContext). Each test names the Kafka
test it ports; where kraftlog differs from Kafka the test is ``xfail(strict=True)`` and says how."""

from __future__ import annotations

import pytest

from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.raft_records import RaftBatch
from kraftlog.raft.leader_state import LeaderState
from kraftlog.raft.states import Candidate, ElectionState, Follower, Prospective, Resigned, Unattached
from kraftlog.raft.voters import ReplicaKey
from raft_context import CLUSTER_ID, RaftContext, dir_id, key

L = 1  # the local replica's id in every test (Kafka's localId)


def stored(ctx: RaftContext) -> tuple[int, int, int | None]:
    """The quorum-state file's (epoch, leader id, voted id)."""
    election = ctx.stored()
    assert election is not None
    return election.epoch, election.leader_id, election.voted_key.id if election.voted_key else None


def assert_vote(resp: object, error: int, epoch: int, leader: int, granted: bool) -> None:
    """Kafka's ``assertSentVoteResponse(error, epoch, leaderId, voteGranted)`` (a partition-level error)."""
    assert isinstance(resp, m.VoteResponse), resp
    assert (resp.error_code, resp.partition_error_code, resp.leader_epoch, resp.leader_id, resp.vote_granted) == \
        (Errors.NONE, error, epoch, leader, granted)


def assert_epoch_response(resp: object, cls: type, error: int, epoch: int, leader: int) -> None:
    assert isinstance(resp, cls), resp
    assert (resp.error_code, resp.partition_error_code, resp.leader_epoch, resp.leader_id) == \
        (Errors.NONE, error, epoch, leader)


def assert_fetch(resp: object, error: int, epoch: int, leader: int) -> m.MetadataFetchResponse:
    """Kafka's ``assertSentFetchPartitionResponse(error, epoch, leaderId)``."""
    assert isinstance(resp, m.MetadataFetchResponse), resp
    assert (resp.error_code, resp.current_leader_epoch, resp.current_leader_id) == (error, epoch, leader)
    return resp


# ============================================================================================== Vote
def test_an_unattached_voter_grants_a_vote_and_persists_it() -> None:
    """KafkaRaftClientTest.testHandleValidVoteRequestAsFollower"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2))
    resp = ctx.request(2, ctx.vote_request(key(2), 2, 1, 1))
    assert_vote(resp, Errors.NONE, 2, -1, True)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key == key(2)
    assert stored(ctx) == (2, -1, 2)


def test_a_follower_rejects_a_vote_in_the_epoch_of_its_leader() -> None:
    """KafkaRaftClientTest.testHandleVoteRequestAsFollowerWithElectedLeader"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, 3))
    resp = ctx.request(2, ctx.vote_request(key(2), 2, 1, 1))
    assert_vote(resp, Errors.NONE, 2, 3, False)
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (2, 3)
    assert stored(ctx) == (2, 3, None)


def test_a_replica_that_voted_rejects_another_candidate_and_grants_the_same_one_again() -> None:
    """KafkaRaftClientTest.testHandleVoteRequestAsFollowerWithVotedCandidate (and UnattachedStateTest's rule that
    the voted-for candidate may ask again)"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, -1, key(3)))
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 2, 1, 1)), Errors.NONE, 2, -1, False)
    assert stored(ctx) == (2, -1, 3)
    assert_vote(ctx.request(3, ctx.vote_request(key(3), 2, 1, 1)), Errors.NONE, 2, -1, True)
    assert stored(ctx) == (2, -1, 3)


def test_a_prospective_grants_a_vote_of_a_higher_epoch_and_becomes_unattached_voted() -> None:
    """KafkaRaftClientTest.testHandleVoteRequestAsProspective"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, 3))
    ctx.advance(ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 2
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 2, 1)), Errors.NONE, 3, -1, True)
    assert isinstance(ctx.state, Unattached) and ctx.state.leader_id is None
    assert stored(ctx) == (3, -1, 2)


def test_a_prospective_that_voted_grants_a_vote_of_a_higher_epoch() -> None:
    """KafkaRaftClientTest.testHandleVoteRequestAsProspectiveWithVotedCandidate"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, -1, key(3)))
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.state.voted_key is not None and ctx.state.voted_key.id == 3
    assert stored(ctx) == (2, -1, 3)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 2, 1)), Errors.NONE, 3, -1, True)
    assert stored(ctx) == (3, -1, 2)


@pytest.mark.parametrize("pre_vote", [False, True])
def test_a_vote_of_an_older_epoch_is_fenced_and_changes_nothing(pre_vote: bool) -> None:
    """KafkaRaftClientTest.testHandleInvalidVoteRequestWithOlderEpoch,
    KafkaRaftClientPreVoteTest.testHandleInvalidPreVoteRequestWithOlderEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2))
    resp = ctx.request(2, ctx.vote_request(key(2), 1, 0 if not pre_vote else 1, 1, pre_vote=pre_vote))
    assert_vote(resp, Errors.FENCED_LEADER_EPOCH, 2, -1, False)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None
    assert stored(ctx) == (2, -1, None)


def test_an_observer_grants_a_vote_and_records_it() -> None:
    """KafkaRaftClientTest.testHandleVoteRequestAsObserver"""
    ctx = RaftContext(L, [2, 3], election=ElectionState(2))
    assert not ctx.raft.is_voter()
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 2, 1)), Errors.NONE, 3, -1, True)
    assert stored(ctx) == (3, -1, 2)


@pytest.mark.parametrize("pre_vote", [False, True])
def test_a_leader_rejects_a_vote_or_prevote_in_its_own_epoch(pre_vote: bool) -> None:
    """KafkaRaftClientTest.testLeaderIgnoreVoteRequestOnSameEpoch,
    KafkaRaftClientPreVoteTest.testLeaderRejectPreVoteRequestOnSameEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2))
    ctx.to_leader()
    epoch = ctx.epoch
    resp = ctx.request(2, ctx.vote_request(key(2), epoch, epoch if pre_vote else epoch - 1, 1, pre_vote=pre_vote))
    assert_vote(resp, Errors.NONE, epoch, L, False)
    assert ctx.raft.is_leader and stored(ctx)[:2] == (epoch, L)


def test_a_candidate_rejects_a_vote_in_its_epoch() -> None:
    """KafkaRaftClientTest.testCandidateIgnoreVoteRequestOnSameEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2, -1, key(L)))
    assert isinstance(ctx.state, Candidate) and ctx.epoch == 2
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 2, 1, 1)), Errors.NONE, 2, -1, False)
    assert stored(ctx) == (2, -1, L)


@pytest.mark.parametrize(("pre_vote", "replica_epoch", "last_epoch", "last_offset"), [
    (False, 6, 0, -5), (False, 6, -1, 0), (False, 6, 6, 0),  # testInvalidVoteRequest: lastEpoch >= replicaEpoch
    (True, 5, 0, -5), (True, 5, -1, 0), (True, 5, 6, 0),  # testInvalidPreVoteRequest: lastEpoch > replicaEpoch
])
def test_a_malformed_vote_is_invalid_request_and_changes_nothing(pre_vote: bool, replica_epoch: int,
                                                                  last_epoch: int, last_offset: int) -> None:
    """KafkaRaftClientTest.testInvalidVoteRequest, KafkaRaftClientPreVoteTest.testInvalidPreVoteRequest: a negative
    offset or epoch, or a last epoch not below the vote's epoch (not above it for a pre-vote)"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2))
    resp = ctx.request(2, ctx.vote_request(key(2), replica_epoch, last_epoch, last_offset, pre_vote=pre_vote))
    assert_vote(resp, Errors.INVALID_REQUEST, 5, 2, False)
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (5, 2)


@pytest.mark.parametrize("pre_vote", [False, True])
def test_a_vote_with_another_cluster_id_is_inconsistent_cluster_id_and_none_is_accepted(pre_vote: bool) -> None:
    """KafkaRaftClientTest.testVoteRequestClusterIdValidation,
    KafkaRaftClientPreVoteTest.testPreVoteRequestClusterIdValidation"""
    ctx = RaftContext(L, [1, 2])
    ctx.to_leader()
    epoch = ctx.epoch
    last = epoch if pre_vote else 0
    for cluster_id in (CLUSTER_ID, None):
        resp = ctx.request(2, ctx.vote_request(key(2), epoch, last, 0, pre_vote=pre_vote, cluster_id=cluster_id))
        assert_vote(resp, Errors.NONE, epoch, L, False)
    for cluster_id in ("", "invalid-uuid"):
        resp = ctx.request(2, ctx.vote_request(key(2), epoch, last, 0, pre_vote=pre_vote, cluster_id=cluster_id))
        assert isinstance(resp, m.VoteResponse) and resp.error_code == Errors.INCONSISTENT_CLUSTER_ID


def test_a_vote_meant_for_another_voter_key_bumps_the_epoch_and_is_invalid_voter_key() -> None:
    """KafkaRaftClientTest.testInvalidVoterReplicaVoteRequest"""
    ctx = RaftContext(L, [1, 2])
    ctx.to_leader()
    epoch = ctx.epoch
    other = key(10)
    resp = ctx.request(2, ctx.vote_request(key(2), epoch + 1, epoch, 100, voter=other))
    assert_vote(resp, Errors.INVALID_VOTER_KEY, epoch + 1, -1, False)
    wrong_dir = ReplicaKey(L, dir_id(99))
    resp = ctx.request(2, ctx.vote_request(key(2), epoch + 2, epoch, 100, voter=wrong_dir))
    assert_vote(resp, Errors.INVALID_VOTER_KEY, epoch + 2, -1, False)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None


@pytest.mark.parametrize("pre_vote", [False, True])
def test_a_prevote_meant_for_another_voter_key_is_invalid_voter_key(pre_vote: bool) -> None:
    """KafkaRaftClientPreVoteTest.testInvalidVoterReplicaPreVoteRequest (same epoch: no bump)"""
    ctx = RaftContext(L, [1, 2])
    ctx.to_leader()
    epoch = ctx.epoch
    for voter in (key(10), ReplicaKey(L, dir_id(99))):
        resp = ctx.request(2, ctx.vote_request(key(2), epoch, epoch, 100, pre_vote=True, voter=voter))
        assert_vote(resp, Errors.INVALID_VOTER_KEY, epoch, L, False)
    assert ctx.raft.is_leader


def test_a_leader_answers_an_observers_vote_fenced_below_its_epoch_and_rejected_in_it() -> None:
    """KafkaRaftClientTest.testLeaderAcceptVoteFromObserver"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch
    assert_vote(ctx.request(3, ctx.vote_request(key(3), epoch - 1, 0, 0)), Errors.FENCED_LEADER_EPOCH, epoch, L, False)
    assert_vote(ctx.request(3, ctx.vote_request(key(3), epoch, 0, 0)), Errors.NONE, epoch, L, False)


def test_a_restarted_leader_votes_for_nobody_in_its_epoch_and_grants_a_higher_epoch() -> None:
    """KafkaRaftClientTest.testRejectVotesFromSameEpochAfterResigningLeadership,
    testGrantVotesFromHigherEpochAfterResigningLeadership: a leader restarts Resigned and never votes in the epoch it
    led, even for a log as long as its own"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2, L))
    assert isinstance(ctx.state, Resigned) and ctx.epoch == 2 and ctx.raft.log.end_offset == 0
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 2, 0, 0)), Errors.NONE, 2, L, False)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 0, 0)), Errors.NONE, 3, -1, True)
    assert isinstance(ctx.state, Unattached) and stored(ctx) == (3, -1, 2)


def test_a_candidate_that_lost_waits_out_its_election_timeout_before_prospective() -> None:
    """KafkaRaftClientTest.testCandidateWaitsRestOfElectionTimeoutAfterElectionLoss"""
    ctx = RaftContext(L, [1, 2])
    (vote,) = ctx.to_candidate()
    state = ctx.state
    assert isinstance(state, Candidate) and stored(ctx) == (1, -1, L)
    remaining = state.election_deadline - ctx.now
    assert ctx.config.election_timeout_ms <= remaining < 2 * ctx.config.election_timeout_ms
    ctx.respond(vote, ctx.vote_response(False, 1))
    assert state.election.is_vote_rejected() and ctx.state is state
    ctx.advance(remaining - 1)
    assert ctx.state is state and stored(ctx) == (1, -1, L)
    ctx.advance(1)
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 1
    (pre,) = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert (pre.message.replica_epoch, pre.message.last_offset_epoch, pre.message.last_offset) == (1, 0, 0)


# ============================================================================================== PreVote
@pytest.mark.parametrize("has_fetched", [False, True])
def test_a_follower_grants_prevotes_only_until_it_fetched_from_its_leader(has_fetched: bool) -> None:
    """KafkaRaftClientPreVoteTest.testHandlePreVoteRequestAsFollower, testFollowerGrantsPreVoteIfHasNotFetchedYet"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, 3))
    if has_fetched:
        fetch = ctx.follower_fetch()
        ctx.respond(fetch, ctx.fetch_response(2, 3, high_watermark=0))
        assert ctx.state.has_fetched_from_leader
    for voter in (key(2), key(4)):  # a voter, and an observer
        assert_vote(ctx.request(voter.id, ctx.vote_request(voter, 2, 2, 1, pre_vote=True)),
                    Errors.NONE, 2, 3, not has_fetched)
        assert isinstance(ctx.state, Follower) and ctx.state.leader_id == 3
    # a pre-vote of a higher epoch makes it unattached (not voted) in that epoch
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 3, 1, pre_vote=True)), Errors.NONE, 3, -1, True)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None and ctx.epoch == 3


def test_a_candidate_grants_prevotes_to_up_to_date_logs_and_keeps_its_own_vote() -> None:
    """KafkaRaftClientPreVoteTest.testHandlePreVoteRequestAsCandidate"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2, -1, key(L)))
    assert isinstance(ctx.state, Candidate)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 2, 2, 1, pre_vote=True)), Errors.NONE, 2, -1, True)
    assert_vote(ctx.request(3, ctx.vote_request(key(3), 2, 2, 2, pre_vote=True)), Errors.NONE, 2, -1, True)
    assert isinstance(ctx.state, Candidate) and stored(ctx) == (2, -1, L)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 3, 3, 2, pre_vote=True)), Errors.NONE, 3, -1, True)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None


@pytest.mark.parametrize("election", [ElectionState(2), ElectionState(2, -1, key(3)), ElectionState(2, 4)],
                         ids=["not-voted", "voted", "with-leader"])
def test_an_unattached_observer_grants_every_up_to_date_prevote_without_recording_it(
        election: ElectionState) -> None:
    """KafkaRaftClientPreVoteTest.testHandlePreVoteRequestAsUnattachedObserver,
    testHandlePreVoteRequestAsUnattachedVoted, testHandlePreVoteRequestAsUnattachedWithLeader (the local replica is
    not in the voters {2, 3}; the leader 4 is no voter either, so the replica stays unattached knowing its id)"""
    ctx = RaftContext(L, [2, 3], election=election)
    assert isinstance(ctx.state, Unattached) and not ctx.raft.is_voter()
    for src in (key(2), key(2), key(3), key(5)):
        assert_vote(ctx.request(src.id, ctx.vote_request(src, 2, 2, 1, pre_vote=True)),
                    Errors.NONE, 2, election.leader_id, True)
    voted = election.voted_key.id if election.voted_key else None
    assert isinstance(ctx.state, Unattached) and ctx.epoch == 2 and stored(ctx) == (2, election.leader_id, voted)


def test_a_resigned_leader_grants_up_to_date_prevotes_of_its_epoch() -> None:
    """KafkaRaftClientPreVoteTest.testHandlePreVoteRequestAsResigned"""
    ctx = RaftContext(L, [1, 2])
    ctx.to_leader()
    epoch = ctx.epoch
    ctx.raft.resign(epoch)
    ctx.poll()
    assert isinstance(ctx.state, Resigned)
    end = ctx.raft.log.end_offset
    assert_vote(ctx.request(2, ctx.vote_request(key(2), epoch, epoch, end, pre_vote=True)), Errors.NONE, epoch, L, True)


def test_a_resigned_leader_becomes_unattached_on_a_prevote_of_a_higher_epoch() -> None:
    """KafkaRaftClientPreVoteTest.testHandlePreVoteRequestAsResigned (its second half)"""
    ctx = RaftContext(L, [1, 2])
    ctx.to_leader()
    epoch = ctx.epoch
    ctx.raft.resign(epoch)
    ctx.poll()
    assert isinstance(ctx.state, Resigned)
    end = ctx.raft.log.end_offset
    resp = ctx.request(2, ctx.vote_request(key(2), epoch + 1, epoch + 1, end, pre_vote=True))
    assert_vote(resp, Errors.NONE, epoch + 1, -1, True)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None


def test_a_prevote_from_a_log_behind_this_one_is_rejected() -> None:
    """KafkaRaftClientPreVoteTest.testRejectPreVoteIfRemoteLogIsNotUpToDate"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2), log=[(2, ["a", "b", "c"])])
    assert ctx.raft.log.end_offset == 3
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 1, 1, 0, pre_vote=True)),
                Errors.FENCED_LEADER_EPOCH, 2, -1, False)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 2, 1, 2, pre_vote=True)), Errors.NONE, 2, -1, False)
    assert isinstance(ctx.state, Unattached) and ctx.state.voted_key is None


def test_a_prevote_answered_unsupported_version_makes_the_prospective_a_candidate_at_once() -> None:
    """KafkaRaftClientPreVoteTest.testPreVoteNotSupportedByRemote"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(5))
    pre = ctx.to_prospective()
    assert isinstance(ctx.state, Prospective) and len(pre) == 2
    ctx.respond(pre[0], m.VoteResponse(error_code=Errors.UNSUPPORTED_VERSION, partition_error_code=Errors.NONE,
                                       leader_id=-1, leader_epoch=-1, vote_granted=False))
    assert isinstance(ctx.state, Candidate) and ctx.epoch == 6
    ctx.respond(pre[1], ctx.vote_response(True, 5))  # a late pre-vote answer is ignored
    assert isinstance(ctx.state, Candidate) and ctx.epoch == 6
    votes = [e for e in ctx.requests(m.VoteRequest) if not e.message.pre_vote]
    assert sorted(int(e.dst) for e in votes) == [2, 3] and all(e.message.replica_epoch == 6 for e in votes)
    # the next election starts with pre-votes again
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 6
    pre = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert len(pre) == 2
    ctx.respond(pre[0], ctx.vote_response(True, 6))
    assert isinstance(ctx.state, Candidate) and ctx.epoch == 7


def test_a_prospective_that_gets_begin_quorum_epoch_follows_the_leader() -> None:
    """KafkaRaftClientPreVoteTest.testProspectiveReceivesBeginQuorumRequest"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5))
    ctx.to_prospective()
    assert isinstance(ctx.state, Prospective)
    assert_epoch_response(ctx.request(2, ctx.begin_epoch_request(2, 5)), m.BeginQuorumEpochResponse, Errors.NONE, 5, 2)
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (5, 2)
    assert stored(ctx) == (5, 2, None)


def test_a_prospective_without_a_leader_goes_unattached_on_timeout_or_rejection() -> None:
    """KafkaRaftClientPreVoteTest.testProspectiveTransitionsToUnattachedOnElectionFailure: on a timeout it goes
    Unattached keeping the (expired) election timeout, so it is Prospective again at once, with new pre-votes;
    on a majority of rejections it goes Unattached with a new election timeout and waits it out"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5))
    (pre,) = ctx.to_prospective()
    assert (pre.message.replica_epoch, pre.message.last_offset_epoch, pre.message.last_offset) == (5, 0, 0)
    first = ctx.state
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.state is not first and ctx.epoch == 5
    (pre,) = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    ctx.respond(pre, ctx.vote_response(False, 5))
    state = ctx.state
    assert isinstance(state, Unattached) and ctx.epoch == 5 and state.voted_key is None
    assert ctx.config.election_timeout_ms <= state.election_deadline - ctx.now < 2 * ctx.config.election_timeout_ms
    ctx.advance(state.election_deadline - ctx.now - 1)
    assert ctx.state is state
    ctx.advance(1)
    assert isinstance(ctx.state, Prospective)
    (pre,) = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert pre.message.replica_epoch == 5


def test_a_prospective_that_knew_a_leader_follows_it_again_after_losing() -> None:
    """KafkaRaftClientPreVoteTest.testProspectiveWithLeaderTransitionsToFollower"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(5, 2))
    ctx.advance(ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.state.leader_id == 2
    ctx.advance(2 * ctx.config.election_timeout_ms)  # the pre-vote times out
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (5, 2)
    ctx.clear()
    ctx.advance(ctx.config.fetch_timeout_ms)
    pre = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert isinstance(ctx.state, Prospective) and len(pre) == 2
    for req in pre:  # a majority of rejections: back to the follower at once
        ctx.respond(req, ctx.vote_response(False, 5))
    assert isinstance(ctx.state, Follower) and ctx.state.leader_id == 2
    ctx.clear()
    ctx.advance(ctx.config.fetch_timeout_ms)
    pre = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert isinstance(ctx.state, Prospective) and len(pre) == 2
    ctx.respond(pre[0], ctx.vote_response(False, 6, leader=3, error=Errors.FENCED_LEADER_EPOCH))
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (6, 3)


# ============================================================================================== BeginQuorumEpoch
def test_begin_quorum_epoch_makes_a_voted_replica_follow_and_keeps_its_vote() -> None:
    """KafkaRaftClientTest.testHandleBeginQuorumRequest"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2, -1, key(2)))
    assert_epoch_response(ctx.request(2, ctx.begin_epoch_request(2, 2)), m.BeginQuorumEpochResponse, Errors.NONE, 2, 2)
    assert isinstance(ctx.state, Follower) and stored(ctx) == (2, 2, 2)


def test_begin_quorum_epoch_for_another_voter_key_follows_the_leader_but_is_invalid_voter_key() -> None:
    """KafkaRaftClientTest.testInvalidVoterReplicaBeginQuorumEpochRequest"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(4))
    resp = ctx.request(3, ctx.begin_epoch_request(3, 5, voter=key(10)))
    assert_epoch_response(resp, m.BeginQuorumEpochResponse, Errors.INVALID_VOTER_KEY, 5, 3)
    assert isinstance(ctx.state, Follower) and (ctx.epoch, ctx.state.leader_id) == (5, 3)
    resp = ctx.request(3, ctx.begin_epoch_request(3, 5, voter=ReplicaKey(L, dir_id(99))))
    assert_epoch_response(resp, m.BeginQuorumEpochResponse, Errors.INVALID_VOTER_KEY, 5, 3)
    resp = ctx.request(3, ctx.begin_epoch_request(3, 5))
    assert_epoch_response(resp, m.BeginQuorumEpochResponse, Errors.NONE, 5, 3)


@pytest.mark.parametrize("api", ["BeginQuorumEpoch", "EndQuorumEpoch", "Fetch"])
def test_a_quorum_request_with_another_cluster_id_is_inconsistent_cluster_id(api: str) -> None:
    """KafkaRaftClientTest.testBeginQuorumEpochRequestClusterIdValidation,
    testEndQuorumEpochRequestClusterIdValidation, testFetchRequestClusterIdValidation: the request's cluster id
    is checked first (none is accepted), before anything else of the request"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch

    def send(cluster_id: str | None) -> object:
        if api == "BeginQuorumEpoch":
            return ctx.request(2, ctx.begin_epoch_request(L, epoch, cluster_id=cluster_id))
        if api == "EndQuorumEpoch":
            return ctx.request(2, ctx.end_epoch_request(L, epoch, [key(2)], cluster_id=cluster_id))
        return ctx.request(2, ctx.fetch_request(key(2), epoch, -5, 0, cluster_id=cluster_id))  # an invalid offset

    for cluster_id in (CLUSTER_ID, None):
        resp = send(cluster_id)
        if api == "Fetch":
            assert_fetch(resp, Errors.INVALID_REQUEST, epoch, L)
        else:
            assert resp.error_code == Errors.NONE and resp.partition_error_code == Errors.NONE  # type: ignore[attr-defined]
            assert (resp.leader_epoch, resp.leader_id) == (epoch, L)  # type: ignore[attr-defined]
    for cluster_id in ("", "invalid-uuid"):
        assert send(cluster_id).error_code == Errors.INCONSISTENT_CLUSTER_ID  # type: ignore[attr-defined]
    assert ctx.raft.is_leader


def test_the_leader_sends_begin_quorum_epoch_every_half_fetch_timeout_to_voters_that_have_not_fetched() -> None:
    """KafkaRaftClientTest.testBeginQuorumEpochHeartbeat, testBeginQuorumShouldNotSendAfterFetchRequest"""
    ctx = RaftContext(L, [1, 2, 3])
    ctx.to_leader()
    epoch = ctx.epoch
    period = ctx.config.fetch_timeout_ms // 2

    def begin_epochs() -> list[int]:
        reqs = ctx.requests(m.BeginQuorumEpochRequest)
        for req in reqs:
            assert (req.message.leader_id, req.message.leader_epoch) == (L, epoch)
            ctx.respond(req, m.BeginQuorumEpochResponse(error_code=Errors.NONE, partition_error_code=Errors.NONE,
                                                        leader_id=L, leader_epoch=epoch))
        return sorted(int(r.dst) for r in reqs)

    ctx.advance(period)
    assert begin_epochs() == [2, 3]
    ctx.advance(period // 3)
    ctx.request(2, ctx.fetch_request(key(2), epoch, 0, 0))
    ctx.advance(period - period // 3)
    assert begin_epochs() == [3]  # 2 fetched within the period
    ctx.advance(period)
    assert begin_epochs() == [2, 3]


# ============================================================================================== EndQuorumEpoch
def test_end_quorum_epoch_naming_this_replica_first_starts_an_election_at_once() -> None:
    """KafkaRaftClientTest.testHandleEndQuorumRequest"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(2, 2))
    resp = ctx.request(2, ctx.end_epoch_request(2, 2, [key(L)]))
    assert_epoch_response(resp, m.EndQuorumEpochResponse, Errors.NONE, 2, 2)
    ctx.poll()
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 2 and stored(ctx) == (2, 2, None)


def test_end_quorum_epoch_naming_this_replica_second_waits_its_backoff() -> None:
    """KafkaRaftClientTest.testHandleEndQuorumRequestWithLowerPriorityToBecomeLeader: the second of two preferred
    candidates waits election.backoff.max.ms >> 1 before it starts an election"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, 2))
    resp = ctx.request(2, ctx.end_epoch_request(2, 2, [key(3), key(L)]))
    assert_epoch_response(resp, m.EndQuorumEpochResponse, Errors.NONE, 2, 2)
    ctx.advance(1)
    assert isinstance(ctx.state, Follower)
    ctx.advance(ctx.config.election_backoff_max_ms)
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 2
    pre = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert sorted(int(e.dst) for e in pre) == [2, 3]


def test_end_quorum_epoch_makes_an_unattached_voter_follow_and_start_an_election() -> None:
    """KafkaRaftClientTest.testEndQuorumStartsNewElectionImmediatelyIfFollowerUnattached"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2))
    resp = ctx.request(2, ctx.end_epoch_request(2, 2, [key(L), key(3)]))
    assert_epoch_response(resp, m.EndQuorumEpochResponse, Errors.NONE, 2, 2)
    ctx.poll()
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 2


def test_end_quorum_epoch_of_an_older_epoch_is_fenced_and_the_candidate_waits_its_timeout() -> None:
    """KafkaRaftClientTest.testEndQuorumIgnoredAsCandidateIfOlderEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_candidate()
    state = ctx.state
    assert stored(ctx) == (5, -1, L)
    resp = ctx.request(2, ctx.end_epoch_request(2, 3, [key(L)]))
    assert_epoch_response(resp, m.EndQuorumEpochResponse, Errors.FENCED_LEADER_EPOCH, 5, -1)
    ctx.advance(state.election_deadline - ctx.now - 1)
    assert ctx.state is state
    ctx.advance(1)
    assert isinstance(ctx.state, Prospective)


def test_a_resigning_leader_names_its_successors_most_caught_up_first() -> None:
    """KafkaRaftClientTest.testEndQuorumEpochSentBasedOnFetchOffset (a graceful resign for Kafka's shutdown)"""
    ctx = RaftContext(L, [1, 2, 3])
    ctx.to_leader()
    epoch = ctx.epoch
    ctx.request(2, ctx.fetch_request(key(2), epoch, 1, epoch))  # the lagging follower
    ctx.node.append(["foo", "bar"], ctx.now)
    resp = ctx.request(3, ctx.fetch_request(key(3), epoch, 3, epoch))  # the close follower
    assert_fetch(resp, Errors.NONE, epoch, L)
    ctx.clear()
    ctx.raft.resign(epoch)
    ctx.poll()
    assert isinstance(ctx.state, Resigned)
    ends = ctx.requests(m.EndQuorumEpochRequest)
    assert sorted(int(e.dst) for e in ends) == [2, 3]
    for end in ends:
        assert (end.message.leader_id, end.message.leader_epoch) == (L, epoch)
        assert [c.candidate_id for c in end.message.preferred_candidates] == [3, 2]


def test_a_restarted_leader_sends_end_quorum_epoch_to_every_voter_until_acknowledged() -> None:
    """KafkaRaftClientTest.testEndQuorumEpochRetriesWhileResigned, testInitializeAsResignedLeaderFromStateStore"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(19, L))
    assert isinstance(ctx.state, Resigned)
    ctx.poll()
    ends = ctx.requests(m.EndQuorumEpochRequest)
    assert sorted(int(e.dst) for e in ends) == [2, 3]
    ctx.respond(ends[0], m.EndQuorumEpochResponse(error_code=Errors.NONE, partition_error_code=Errors.NONE,
                                                  leader_id=L, leader_epoch=19))
    assert ctx.requests(m.EndQuorumEpochRequest) == []
    ctx.advance(6000)  # past the request timeout: only the unanswered voter is asked again
    assert [int(e.dst) for e in ctx.requests(m.EndQuorumEpochRequest)] == [int(ends[1].dst)]


# ============================================================================================== Fetch (leader)
@pytest.mark.parametrize(("epoch_delta", "offset", "last_epoch", "max_wait", "error"), [
    (0, -5, 0, 0, Errors.INVALID_REQUEST),
    (0, 0, -1, 0, Errors.INVALID_REQUEST),
    (0, 0, "epoch+1", 0, Errors.INVALID_REQUEST),
    (1, 0, 0, 0, Errors.UNKNOWN_LEADER_EPOCH),
    (0, 0, 0, -1, Errors.INVALID_REQUEST),
    (-1, 0, 0, 0, Errors.FENCED_LEADER_EPOCH),
])
def test_an_invalid_fetch_is_answered_with_its_error(epoch_delta: int, offset: int, last_epoch: object,
                                                     max_wait: int, error: int) -> None:
    """KafkaRaftClientTest.testInvalidFetchRequest (and validateLeaderOnlyRequest's FENCED_LEADER_EPOCH)"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch
    last = epoch + 1 if last_epoch == "epoch+1" else int(last_epoch)  # type: ignore[call-overload]
    resp = ctx.request(2, ctx.fetch_request(key(2), epoch + epoch_delta, offset, last, max_wait))
    assert_fetch(resp, error, epoch, L)
    assert ctx.raft.is_leader


def test_the_leader_answers_a_diverging_fetch_at_once_with_the_largest_epoch_below_and_its_end() -> None:
    """KafkaRaftClientTest.testLeaderImmediatelySendsDivergingEpoch"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5),
                      log=[(1, ["a", "b", "c"]), (3, ["d", "e", "f"]), (5, ["g", "h", "i"])])
    ctx.to_leader()
    epoch = ctx.epoch
    resp = assert_fetch(ctx.request(2, ctx.fetch_request(key(2), epoch, 6, 2, 500)), Errors.NONE, epoch, L)
    assert (resp.diverging_epoch, resp.diverging_end_offset) == (1, 3) and resp.batches == ()


def test_a_fetch_with_nothing_new_waits_max_wait_and_is_answered_empty() -> None:
    """KafkaRaftClientTest.testPurgatoryFetchTimeout"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch
    corr = ctx.park(2, ctx.fetch_request(key(2), epoch, 1, epoch, 500))
    assert ctx.responses() == []
    ctx.advance(499)
    assert ctx.responses() == []
    ctx.advance(1)
    resp = assert_fetch(ctx.answer_of(2, corr), Errors.NONE, epoch, L)
    assert resp.batches == ()


def test_a_parked_fetch_is_answered_by_the_next_write() -> None:
    """KafkaRaftClientTest.testPurgatoryFetchSatisfiedByWrite"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch
    corr = ctx.park(2, ctx.fetch_request(key(2), epoch, 1, epoch, 500))
    assert ctx.responses() == []
    ctx.node.append(["a", "b", "c"], ctx.now)
    resp = assert_fetch(ctx.answer_of(2, corr), Errors.NONE, epoch, L)
    assert [b.records for b in resp.batches] == [("a", "b", "c")] and resp.batches[0].base_offset == 1


def test_a_parked_fetch_is_answered_not_leader_when_the_leader_follows_another() -> None:
    """KafkaRaftClientTest.testPurgatoryFetchCompletedByFollowerTransition"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(4))
    ctx.to_leader()
    epoch = ctx.epoch
    corr = ctx.park(2, ctx.fetch_request(key(2), epoch, 1, epoch, 500))
    assert ctx.responses(m.MetadataFetchResponse) == []
    resp = ctx.request(3, ctx.begin_epoch_request(3, epoch + 1))
    assert_epoch_response(resp, m.BeginQuorumEpochResponse, Errors.NONE, epoch + 1, 3)
    fetched = assert_fetch(ctx.answer_of(2, corr), Errors.NOT_LEADER_OR_FOLLOWER, epoch + 1, 3)
    assert fetched.batches == ()
    assert isinstance(ctx.state, Follower) and stored(ctx) == (epoch + 1, 3, None)


def test_a_new_leader_sends_begin_quorum_epoch_and_a_fetch_counts_as_the_acknowledgement() -> None:
    """KafkaRaftClientTest.testFetchShouldBeTreatedAsLeaderAcknowledgement"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4))
    for vote in ctx.to_candidate():
        ctx.respond(vote, ctx.vote_response(True, 5))
    (begin,) = ctx.requests(m.BeginQuorumEpochRequest)
    assert int(begin.dst) == 2 and (begin.message.leader_id, begin.message.leader_epoch) == (L, 5)
    assert_fetch(ctx.request(2, ctx.fetch_request(key(2), 5, 0, 0, 500)), Errors.NONE, 5, L)
    assert ctx.state.voter_states[2].has_acknowledged_leader
    ctx.clear()
    ctx.advance(ctx.config.request_timeout_ms)  # the BeginQuorumEpoch times out: it is not sent again
    assert ctx.requests(m.BeginQuorumEpochRequest) == []


def test_a_leader_elected_early_on_a_clock_from_zero_sends_begin_quorum_epoch_at_once() -> None:
    """KafkaRaftClientTest.testFetchShouldBeTreatedAsLeaderAcknowledgement (assertSentBeginQuorumEpochRequest right
    after the election), on a clock that starts at 0"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(4), start_ms=0)
    for vote in ctx.to_candidate():
        ctx.respond(vote, ctx.vote_response(True, 5))
    assert ctx.raft.is_leader and ctx.now < ctx.config.fetch_timeout_ms // 2
    assert [int(e.dst) for e in ctx.requests(m.BeginQuorumEpochRequest)] == [2]


def test_the_leader_resigns_when_a_majority_of_voters_has_not_fetched_within_check_quorum() -> None:
    """KafkaRaftClientTest.testLeaderShouldResignLeadershipIfNotGetFetchRequestFromMajorityVoters: an observer's
    fetch does not count"""
    ctx = RaftContext(L, [1, 2, 3])
    ctx.to_leader()
    epoch = ctx.epoch
    half = int(ctx.config.fetch_timeout_ms * 1.5) // 2
    ctx.advance(half)
    assert ctx.raft.is_leader
    ctx.request(2, ctx.fetch_request(key(2), epoch, 0, 0))
    ctx.advance(half)
    assert ctx.raft.is_leader
    ctx.request(3, ctx.fetch_request(key(3), epoch, 0, 0))
    ctx.advance(half)
    assert ctx.raft.is_leader
    ctx.request(4, ctx.fetch_request(key(4), epoch, 0, 0))  # an observer
    ctx.advance(half)
    assert isinstance(ctx.state, Resigned) and (ctx.epoch, ctx.state.leader_id) == (epoch, L)


def test_describe_quorum_off_the_leader_is_not_leader_or_follower() -> None:
    """KafkaRaftClientTest.testDescribeQuorumNonLeader"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2))
    resp = ctx.request(2, m.DescribeQuorumRequest())
    assert isinstance(resp, m.DescribeQuorumResponse)
    assert (resp.error_code, resp.partition_error_code) == (Errors.NONE, Errors.NOT_LEADER_OR_FOLLOWER)


def test_describe_quorum_on_the_leader_reports_the_voters_and_observers_positions() -> None:
    """KafkaRaftClientTest.testDescribeQuorumWithFollowers, testDescribeQuorumWithObserver"""
    ctx = RaftContext(L, [1, 2, 3])
    ctx.to_leader()
    epoch = ctx.epoch
    ctx.request(2, ctx.fetch_request(key(2), epoch, 1, epoch))
    ctx.request(7, ctx.fetch_request(key(7), epoch, 1, epoch))
    resp = ctx.request(2, m.DescribeQuorumRequest())
    assert isinstance(resp, m.DescribeQuorumResponse)
    assert (resp.error_code, resp.partition_error_code, resp.leader_id, resp.leader_epoch, resp.high_watermark) == \
        (Errors.NONE, Errors.NONE, L, epoch, 1)
    assert [(v.replica_id, v.log_end_offset) for v in resp.current_voters] == [(1, 1), (2, 1), (3, -1)]
    assert [(o.replica_id, o.log_end_offset) for o in resp.observers] == [(7, 1)]


# ============================================================================================== Fetch (follower)
def test_a_follower_truncates_to_the_diverging_end_offset_and_fetches_from_there() -> None:
    """KafkaRaftClientTest.testFollowerLogReconciliation"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2), log=[(3, ["foo", "bar"]), (3, ["baz"])])
    fetch = ctx.follower_fetch()
    assert (fetch.message.current_leader_epoch, fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == \
        (5, 3, 3)
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=1, diverging=(3, 2)))
    assert ctx.raft.log.end_offset == 2 and ctx.disk.unflushed_items(ctx.raft.log.path) == 0
    fetch = ctx.follower_fetch()
    assert (fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == (2, 3)


def test_a_follower_takes_the_leaders_high_watermark_only_up_to_its_log_end() -> None:
    """KafkaRaftClientTest.testEmptyRecordSetInFetchResponse"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2))
    fetch = ctx.follower_fetch()
    assert (fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == (0, 0)
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=0))
    assert (ctx.raft.log.end_offset, ctx.raft.high_watermark) == (0, 0)
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, [RaftBatch(0, 5, ("a", "b"))], high_watermark=0))
    assert (ctx.raft.log.end_offset, ctx.raft.high_watermark) == (2, 0)
    fetch = ctx.follower_fetch()
    assert (fetch.message.fetch_offset, fetch.message.last_fetched_epoch, fetch.message.high_watermark) == (2, 5, 0)
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=2, base_offset=2))
    assert (ctx.raft.log.end_offset, ctx.raft.high_watermark) == (2, 2)
    assert ctx.node.committed == [(0, "a"), (1, "b")]
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=10, base_offset=2))
    assert ctx.raft.high_watermark == 2  # not past its own log end


def test_a_follower_appends_no_batch_of_an_epoch_above_its_own() -> None:
    """MockLogTest.testInvalidLeaderEpoch, through KafkaRaftClient.appendAsFollower"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2))
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, [RaftBatch(0, 5, ("a",)), RaftBatch(1, 6, ("b",))], high_watermark=0))
    assert (ctx.raft.log.end_offset, ctx.raft.log.last_fetched_epoch) == (1, 5)


def test_a_truncation_below_the_high_watermark_stops_the_follower() -> None:
    """KafkaRaftClient.handleFetchResponse: "The leader requested truncation to offset .., which is below the
    current high watermark" (a KafkaException that kills the raft thread)"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2))
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, [RaftBatch(0, 5, ("a", "b", "c"))], high_watermark=3))
    assert ctx.raft.high_watermark == 3
    fetch = ctx.follower_fetch()
    ctx.respond(fetch, ctx.fetch_response(5, 2, high_watermark=3, diverging=(5, 1)))
    assert ctx.raft.fatal_error is not None and "below the high watermark" in ctx.raft.fatal_error
    assert ctx.raft.log.end_offset == 3


def test_a_voter_follower_becomes_prospective_after_the_fetch_timeout() -> None:
    """KafkaRaftClientTest.testVoterBecomeProspectiveAfterFetchTimeout, testInitializeAsFollowerNonEmptyLog"""
    ctx = RaftContext(L, [1, 2], election=ElectionState(5, 2), log=[(3, ["foo"])])
    fetch = ctx.follower_fetch()
    assert (fetch.message.current_leader_epoch, fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == \
        (5, 1, 3)
    ctx.advance(ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.state, Prospective) and ctx.epoch == 5
    (pre,) = [e for e in ctx.requests(m.VoteRequest) if e.message.pre_vote]
    assert (pre.message.replica_epoch, pre.message.last_offset_epoch, pre.message.last_offset) == (5, 3, 1)


def test_an_observer_never_times_out_into_an_election() -> None:
    """KafkaRaftClientTest.testFollowerAsObserverDoesNotBecomeProspectiveAfterFetchTimeout,
    testUnattachedAsObserverDoesNotBecomeProspectiveAfterElectionTimeout"""
    ctx = RaftContext(L, [2], election=ElectionState(5, 2), log=[(3, ["foo"])])
    ctx.follower_fetch()
    ctx.advance(ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.state, Follower)
    assert_vote(ctx.request(2, ctx.vote_request(key(2), 6, 5, 1)), Errors.NONE, 6, -1, True)
    assert isinstance(ctx.state, Unattached)
    ctx.advance(10 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.state, Unattached) and ctx.epoch == 6


def test_a_new_follower_fetches_first_and_sends_update_voter_only_after_a_fetch_timeout() -> None:
    """KafkaRaftClientReconfigTest.testFollowerSendsUpdateVoterWithKraftVersion0 (advanceTimeAndCompleteFetch),
    KafkaRaftClientTest.testInitializeAsFollowerEmptyLog"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(4, 2))
    sent = ctx.requests()
    assert [type(e.message) for e in sent] == [m.MetadataFetchRequest]


# ============================================================================================== start
def test_a_single_voter_elects_itself_in_epoch_one_at_start() -> None:
    """KafkaRaftClientTest.testInitializeSingleMemberQuorum"""
    ctx = RaftContext(L, [L])
    assert ctx.raft.is_leader and ctx.epoch == 1 and stored(ctx)[:2] == (1, L)


def test_a_restarted_only_voter_that_led_leads_the_next_epoch() -> None:
    """KafkaRaftClientTest.testInitializeAsResignedAndOnlyVoter"""
    ctx = RaftContext(L, [L], election=ElectionState(2, L))
    assert isinstance(ctx.state, LeaderState) and ctx.epoch == 3


def test_a_restarted_candidate_resumes_its_election_in_the_same_epoch() -> None:
    """KafkaRaftClientTest.testInitializeAsCandidateFromStateStore"""
    ctx = RaftContext(L, [1, 2, 3], election=ElectionState(2, -1, key(L)))
    assert isinstance(ctx.state, Candidate) and stored(ctx) == (2, -1, L)
    votes = [e for e in ctx.requests(m.VoteRequest) if not e.message.pre_vote]
    assert sorted(int(e.dst) for e in votes) == [2, 3]
    assert all((e.message.replica_epoch, e.message.last_offset_epoch, e.message.last_offset) == (2, 0, 0)
               for e in votes)
