"""Kafka's LeaderStateTest as facts about :class:`~kraftlog.raft.leader_state.LeaderState`: the high watermark a
majority of the voters has reached (only once past the epoch start offset, never going back, across voter set
changes), the check-quorum and BeginQuorumEpoch timers, observers, acknowledgements and the successor order.

Kafka's ``updateLocalState(offset, voters)`` is kraftlog's ``update_voters(voters)`` (when the voters changed)
then ``update_local(offset)``; ``updateReplicaState(key, now, offset)`` is ``update_replica(key, now, offset,
leader end offset)``, which also counts the fetch for check-quorum (Kafka's ``updateCheckQuorumForFollowingVoter``).
The leader is replica 0 (with a directory id), epoch 5, fetch.timeout.ms 2000, as in LeaderStateTest."""

from __future__ import annotations

import pytest

from kraftlog.protocol.raft_records import Voter
from kraftlog.raft.leader_state import CHECK_QUORUM_TIMEOUT_FACTOR, LeaderState
from kraftlog.raft.voters import ReplicaKey, VoterSet
from raft_context import dir_id

FETCH_TIMEOUT_MS = 2000
CHECK_QUORUM_TIMEOUT_MS = int(FETCH_TIMEOUT_MS * CHECK_QUORUM_TIMEOUT_FACTOR)
BEGIN_QUORUM_EPOCH_TIMEOUT_MS = FETCH_TIMEOUT_MS // 2
T0 = 1_000_000
LOCAL = ReplicaKey(0, dir_id(0))


def rkey(node_id: int, with_directory: bool = True) -> ReplicaKey:
    return ReplicaKey(node_id, dir_id(node_id) if with_directory else None)


def voters(*ids: int, with_directory: bool = True) -> VoterSet:
    """Kafka's ``localWithRemoteVoterSet`` when 0 is among ``ids``: the leader keeps its directory id."""
    return VoterSet({i: Voter(i, dir_id(i) if with_directory or i == 0 else None) for i in ids})


def leader(voter_set: VoterSet, epoch_start_offset: int, now_ms: int = T0) -> LeaderState:
    return LeaderState(LOCAL, 5, epoch_start_offset, voter_set, frozenset(voter_set.voter_ids), FETCH_TIMEOUT_MS,
                       now_ms)


def fetch(state: LeaderState, key: ReplicaKey, offset: int, now_ms: int = T0) -> bool:
    """A Fetch of ``key`` at ``offset`` (the leader's log ends at least there)."""
    return state.update_replica(key, now_ms, offset, max(offset, 20))


def non_acknowledging(state: LeaderState) -> set[int]:
    return {vid for vid, s in state.voter_states.items() if not s.has_acknowledged_leader}


# ============================================================================================== high watermark
def test_the_only_voter_commits_once_its_log_passes_the_epoch_start() -> None:
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeOne, testIdempotentEndOffsetUpdate"""
    state = leader(voters(0), 15)
    assert state.high_watermark is None
    assert state.update_local(15) is False and non_acknowledging(state) == set() and state.high_watermark is None
    assert state.update_local(16) is True and state.high_watermark == 16
    assert state.update_local(16) is False and state.high_watermark == 16
    assert state.update_local(20) is True and state.high_watermark == 20


def test_the_leaders_end_offset_never_goes_back() -> None:
    """LeaderStateTest.testNonMonotonicLocalEndOffsetUpdate (Kafka: IllegalStateException)"""
    state = leader(voters(0), 15)
    assert state.update_local(16) is True
    with pytest.raises(AssertionError):
        state.update_local(15)


@pytest.mark.parametrize("with_directory", [True, False])
def test_two_voters_commit_what_both_have_past_the_epoch_start(with_directory: bool) -> None:
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeTwo"""
    other = rkey(1, with_directory)
    state = leader(voters(0, 1, with_directory=with_directory), 10)
    assert state.update_local(13) is False
    assert non_acknowledging(state) == {1} and state.high_watermark is None
    assert fetch(state, other, 10) is False  # at the epoch start: nothing of this epoch is committed yet
    assert non_acknowledging(state) == set() and state.high_watermark is None
    assert fetch(state, other, 11) is True and state.high_watermark == 11
    assert fetch(state, other, 13) is True and state.high_watermark == 13


@pytest.mark.parametrize("with_directory", [True, False])
def test_three_voters_commit_what_a_majority_has(with_directory: bool) -> None:
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeThree"""
    k1, k2 = rkey(1, with_directory), rkey(2, with_directory)
    state = leader(voters(0, 1, 2, with_directory=with_directory), 10)
    assert state.update_local(15) is False and non_acknowledging(state) == {1, 2}
    assert fetch(state, k1, 10) is False and non_acknowledging(state) == {2}
    assert fetch(state, k2, 10) is False and non_acknowledging(state) == set() and state.high_watermark is None
    assert fetch(state, k2, 15) is True and state.high_watermark == 15
    assert state.update_local(20) is False and state.high_watermark == 15
    assert fetch(state, k1, 20) is True and state.high_watermark == 20
    assert fetch(state, k2, 20) is False and state.high_watermark == 20


def test_a_replica_counts_for_the_high_watermark_only_once_it_is_a_voter() -> None:
    """LeaderStateTest.testHighWatermarkDoesIncreaseFromNewVoter"""
    k1, k2 = rkey(1), rkey(2)
    original = voters(0, 1)
    state = leader(original, 5)
    assert state.update_local(15) is False
    assert fetch(state, k1, 10) is True and state.high_watermark == 10
    assert fetch(state, k2, 15) is False and state.high_watermark == 10  # an observer still
    with_2 = original.add_voter(Voter(2, dir_id(2)))
    assert with_2 is not None
    state.update_voters(with_2)
    assert state.update_local(15) is True and state.high_watermark == 15
    assert state.update_local(16) is False and state.high_watermark == 15
    assert fetch(state, k2, 16) is True and state.high_watermark == 16


def test_a_new_voter_behind_does_not_lower_the_high_watermark() -> None:
    """LeaderStateTest.testHighWatermarkDoesNotDecreaseFromNewVoter"""
    k1, k2, k3 = rkey(1), rkey(2), rkey(3)
    original = voters(0, 1, 2)
    state = leader(original, 5)
    assert state.update_local(15) is False
    assert fetch(state, k1, 15) is True and state.high_watermark == 15
    assert fetch(state, k2, 10) is False
    assert fetch(state, k3, 10) is False  # an observer still
    with_3 = original.add_voter(Voter(3, dir_id(3)))
    assert with_3 is not None
    state.update_voters(with_3)
    assert state.update_local(16) is False and state.high_watermark == 15
    assert fetch(state, k2, 13) is False and state.high_watermark == 15
    assert fetch(state, k3, 13) is False and state.high_watermark == 15
    assert fetch(state, k1, 16) is False and state.high_watermark == 15
    assert fetch(state, k3, 16) is True and state.high_watermark == 16


def test_removing_a_follower_does_not_lower_the_high_watermark() -> None:
    """LeaderStateTest.testUpdateHighWatermarkRemovingFollowerFromVoterStates"""
    k1, k2 = rkey(1), rkey(2)
    original = voters(0, 1, 2)
    state = leader(original, 10)
    assert state.update_local(15) is False
    assert fetch(state, k1, 15) is True
    assert fetch(state, k2, 10) is False and state.high_watermark == 15
    without_1 = original.remove_voter(k1)
    assert without_1 is not None
    state.update_voters(without_1)
    assert state.update_local(17) is False and state.high_watermark == 15
    assert fetch(state, k2, 14) is False and state.high_watermark == 15
    assert state.update_local(18) is False
    assert fetch(state, k1, 18) is False and state.high_watermark == 15  # no voter any more
    assert fetch(state, k2, 15) is False and state.high_watermark == 15
    assert fetch(state, k2, 16) is True and state.high_watermark == 16


def test_removing_the_leader_from_the_voters_does_not_lower_the_high_watermark() -> None:
    """LeaderStateTest.testUpdateHighWatermarkQuorumRemovingLeaderFromVoterStates: the remaining two voters decide"""
    k1, k2 = rkey(1), rkey(2)
    original = voters(0, 1, 2)
    state = leader(original, 10)
    assert state.update_local(15) is False
    assert fetch(state, k1, 15) is True
    assert fetch(state, k2, 10) is False and state.high_watermark == 15
    without_leader = original.remove_voter(LOCAL)
    assert without_leader is not None
    state.update_voters(without_leader)
    assert state.update_local(17) is False and state.high_watermark == 15
    assert fetch(state, k1, 16) is False and state.high_watermark == 15
    assert state.update_local(18) is False
    assert fetch(state, k2, 14) is False and state.high_watermark == 15
    assert fetch(state, k2, 15) is False and state.high_watermark == 15
    assert fetch(state, k2, 16) is True and state.high_watermark == 16


@pytest.mark.parametrize("with_directory", [True, False])
def test_the_high_watermark_never_goes_back_when_a_follower_refetches_from_below(with_directory: bool) -> None:
    """LeaderStateTest.testNonMonotonicHighWatermarkUpdate (a follower that lost its disk fetches from earlier)"""
    k1 = rkey(1, with_directory)
    state = leader(voters(0, 1, with_directory=with_directory), 0)
    state.update_local(10)
    fetch(state, k1, 10)
    assert state.high_watermark == 10
    assert fetch(state, k1, 5) is False and state.high_watermark == 10


def test_a_voter_set_gaining_directory_ids_keeps_each_voters_position() -> None:
    """LeaderStateTest.testUpdateVotersFromNoDirectoryIdToDirectoryId (the kraft.version upgrade)"""
    k1, k2 = rkey(1), rkey(2)
    before = voters(0, 1, 2, with_directory=False)
    state = leader(before, 0)
    assert state.update_local(10) is False
    assert fetch(state, k1, 10) is True and state.high_watermark == 10
    state.update_voters(voters(0, 1, 2))
    assert state.update_local(15) is False
    assert fetch(state, k2, 13) is True and state.high_watermark == 13


# ============================================================================================== voters and observers
@pytest.mark.parametrize("with_directory", [True, False])
def test_a_voter_acknowledges_the_leader_by_answering_begin_quorum_epoch(with_directory: bool) -> None:
    """LeaderStateTest.testFollowerAcknowledgement"""
    state = leader(voters(0, 1, 2, with_directory=with_directory), 0)
    assert non_acknowledging(state) == {1, 2}
    state.add_acknowledgement_from(1)
    assert non_acknowledging(state) == {2}
    state.add_acknowledgement_from(2)
    assert non_acknowledging(state) == set()


@pytest.mark.xfail(strict=True, reason="Kafka's LeaderState.addAcknowledgementFrom throws IllegalArgumentException "
                                       "for a replica that is not a voter; kraftlog's add_acknowledgement_from "
                                       "ignores it")
def test_an_acknowledgement_from_a_non_voter_is_refused() -> None:
    """LeaderStateTest.testNonFollowerAcknowledgement"""
    state = leader(voters(0), 0)
    with pytest.raises((ValueError, AssertionError)):
        state.add_acknowledgement_from(1)


def test_an_observers_fetch_is_tracked_apart_and_moves_no_high_watermark() -> None:
    """LeaderStateTest (observer states, as DescribeQuorum reports them: KafkaRaftClientTest.
    testDescribeQuorumWithObserver)"""
    state = leader(voters(0, 1), 0)
    state.update_local(10)
    observer = rkey(7)
    assert fetch(state, observer, 10) is False and state.high_watermark is None
    assert set(state.voter_states) == {0, 1} and state.observer_states[observer].end_offset == 10
    assert fetch(state, rkey(1), 10) is True and state.high_watermark == 10


@pytest.mark.parametrize("with_directory", [True, False])
def test_the_preferred_successors_are_the_other_voters_most_caught_up_first(with_directory: bool) -> None:
    """LeaderStateTest.testGetNonLeaderFollowersByFetchOffsetDescending"""
    k1, k2 = rkey(1, with_directory), rkey(2, with_directory)
    state = leader(voters(0, 1, 2, with_directory=with_directory), 10)
    state.update_local(15)
    assert state.high_watermark is None
    fetch(state, k1, 10)
    fetch(state, k2, 15)
    assert state.voters_by_descending_fetch_offset() == (k2, k1)


@pytest.mark.parametrize("log_up_to_date", [True, False])
@pytest.mark.parametrize("pre_vote", [True, False])
def test_a_leader_grants_no_vote_and_no_prevote(log_up_to_date: bool, pre_vote: bool) -> None:
    """LeaderStateTest.testGrantVote"""
    state = leader(voters(0, 1, 2, 3, with_directory=False), 1)
    assert not any(state.can_grant_vote(ReplicaKey(i, None), log_up_to_date, pre_vote) for i in (1, 2, 3))


# ============================================================================================== timers
@pytest.mark.parametrize("with_directory", [True, False])
def test_check_quorum_expires_unless_a_majority_of_voters_fetched_within_its_timeout(with_directory: bool) -> None:
    """LeaderStateTest.testCheckQuorum: five voters (the leader counts itself): two other voters' fetches restart
    the timer, one voter's and an observer's do not"""
    keys = [rkey(i, with_directory) for i in (1, 2, 3, 4)]
    state = leader(voters(0, 1, 2, 3, 4, with_directory=with_directory), 0)
    now = T0
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS
    now += CHECK_QUORUM_TIMEOUT_MS // 2
    assert not state.check_quorum_expired(now)
    fetch(state, keys[0], 0, now)
    fetch(state, keys[1], 0, now)
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS
    now += CHECK_QUORUM_TIMEOUT_MS // 2
    remaining = state.check_quorum_deadline - now
    assert remaining > 0
    fetch(state, keys[2], 0, now)
    fetch(state, rkey(5, with_directory), 0, now)  # an observer
    assert state.check_quorum_deadline - now == remaining
    now += CHECK_QUORUM_TIMEOUT_MS // 2
    assert state.check_quorum_expired(now)


def test_check_quorum_counts_the_majority_of_the_voter_set_in_force() -> None:
    """LeaderStateTest.testCheckQuorumAfterVoterSetChanges"""
    k1, k2 = rkey(1), rkey(2)
    original = voters(0, 1, 2)
    state = leader(original, 0)
    now = T0 + CHECK_QUORUM_TIMEOUT_MS // 2
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS // 2
    fetch(state, k1, 0, now)  # one other voter of three makes a majority with the leader
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS
    with_3 = original.add_voter(Voter(3, dir_id(3)))
    assert with_3 is not None
    state.update_voters(with_3)
    state.update_local(1)
    now += CHECK_QUORUM_TIMEOUT_MS // 2
    fetch(state, k1, 0, now)  # four voters: two others are needed
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS // 2
    fetch(state, k2, 0, now)
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS
    without_leader = with_3.remove_voter(LOCAL)
    assert without_leader is not None
    state.update_voters(without_leader)
    state.update_local(1)
    now += CHECK_QUORUM_TIMEOUT_MS // 2
    fetch(state, k2, 0, now)  # three voters without the leader: two fetches are needed
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS // 2
    fetch(state, k1, 0, now)
    assert state.check_quorum_deadline - now == CHECK_QUORUM_TIMEOUT_MS


def test_check_quorum_never_expires_for_the_only_voter() -> None:
    """LeaderStateTest.testCheckQuorumWithOneVoter"""
    state = leader(voters(0), 0)
    assert state.next_check_quorum_deadline() is None
    assert not state.check_quorum_expired(T0 + CHECK_QUORUM_TIMEOUT_MS)
    fetch(state, rkey(1), 0, T0 + CHECK_QUORUM_TIMEOUT_MS)  # an observer
    assert state.next_check_quorum_deadline() is None
    assert not state.check_quorum_expired(T0 + 10 * CHECK_QUORUM_TIMEOUT_MS)


@pytest.mark.parametrize("with_directory", [True, False])
def test_the_begin_quorum_epoch_timer_is_due_at_once_then_every_half_fetch_timeout(with_directory: bool) -> None:
    """LeaderStateTest.testBeginQuorumEpochTimer"""
    state = leader(voters(0, 1, with_directory=with_directory), 10)
    assert state.begin_quorum_epoch_deadline - T0 == 0
    now = T0 + 5
    assert state.begin_quorum_epoch_due(now) == [rkey(1, with_directory)]  # resets the timer
    assert state.begin_quorum_epoch_deadline - now == BEGIN_QUORUM_EPOCH_TIMEOUT_MS
    now += 5
    assert state.begin_quorum_epoch_deadline - now == BEGIN_QUORUM_EPOCH_TIMEOUT_MS - 5
    assert state.begin_quorum_epoch_due(now) == []
    now += BEGIN_QUORUM_EPOCH_TIMEOUT_MS
    assert state.begin_quorum_epoch_deadline - now <= 0
