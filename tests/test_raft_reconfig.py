"""KIP-853's voter changes as Kafka's KafkaRaftClientReconfigTest states them, request by request on one leader
(``tests/raft_context.py``), and the facts of VoterSetTest, QuorumConfigTest and KafkaConfigTest's
``controller.quorum.voters`` parsing.

kraftlog's voters find each other by node id, so Kafka's listeners (and the ApiVersions round trip AddVoterHandler
makes to learn the new voter's kraft.version range) are left out of these requests: every kraftlog controller
supports kraft.version 0..1."""

from __future__ import annotations

import pytest

from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.raft_records import RaftEndpoint, Voter, VotersRecord
from kraftlog.raft.config import QuorumConfig, QuorumConfigError, parse_quorum_voters
from kraftlog.raft.states import ElectionState, Resigned, Unattached
from kraftlog.raft.voters import ReplicaKey, VoterSet
from raft_context import CLUSTER_ID, RaftContext, dir_id, key

L = 1
NEVER = 2 ** 31 - 1


def add_voter(voter: ReplicaKey, cluster_id: str | None = CLUSTER_ID) -> m.AddRaftVoterRequest:
    return m.AddRaftVoterRequest(cluster_id=cluster_id, timeout_ms=NEVER, voter_id=voter.id,
                                 voter_directory_id=voter.directory_id, listeners=())


def remove_voter(voter: ReplicaKey, cluster_id: str | None = CLUSTER_ID) -> m.RemoveRaftVoterRequest:
    return m.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter.id, voter_directory_id=voter.directory_id)


def update_voter(voter: ReplicaKey, epoch: int, listeners: tuple[RaftEndpoint, ...] = (),
                 cluster_id: str | None = CLUSTER_ID) -> m.UpdateRaftVoterRequest:
    return m.UpdateRaftVoterRequest(cluster_id=cluster_id, current_leader_epoch=epoch, voter_id=voter.id,
                                    voter_directory_id=voter.directory_id, listeners=listeners,
                                    kraft_version_min=0, kraft_version_max=1)


def leader(voters: list[int], kraft_version: int = 1) -> RaftContext:
    """Kafka's context ``withBootstrapSnapshot(voters)`` (or ``withStaticVoters``) ``.withUnknownLeader(3)`` and
    ``unattachedToLeader()``: the leader of epoch 4."""
    ctx = RaftContext(L, voters, kraft_version=kraft_version, election=ElectionState(3))
    ctx.to_leader()
    assert ctx.epoch == 4
    return ctx


def fetch_at_end(ctx: RaftContext, replica: ReplicaKey) -> None:
    """``replica`` fetches at the leader's log end (Kafka: "establish a HWM", "catch up the new voter")."""
    resp = ctx.request(replica.id, ctx.fetch_request(replica, ctx.epoch, ctx.raft.log.end_offset, ctx.epoch))
    assert isinstance(resp, m.MetadataFetchResponse) and resp.error_code == Errors.NONE, resp


def error_of(resp: object) -> int:
    assert resp is not None
    return int(resp.error_code)  # type: ignore[attr-defined]


# ============================================================================================== AddRaftVoter
def test_add_voter_appends_the_new_voter_set_at_once_and_answers_when_it_commits() -> None:
    """KafkaRaftClientReconfigTest.testAddVoter"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, key(3))
    corr = ctx.park(9, add_voter(key(3)))
    assert ctx.answer_of(9, corr) is None
    assert ctx.raft.voter_set().voter_ids == (1, 2, 3) and ctx.raft.voter_set().is_voter(key(3))
    last = ctx.raft.log.batches()[-1]
    assert last.control and isinstance(last.records[0], VotersRecord)
    assert [(v.voter_id, v.voter_directory_id) for v in last.records[0].voters] == \
        [(1, dir_id(1)), (2, dir_id(2)), (3, dir_id(3))]
    fetch_at_end(ctx, key(2))  # two of three voters have the record: it commits
    assert ctx.raft.high_watermark == ctx.raft.log.end_offset
    assert error_of(ctx.answer_of(9, corr)) == Errors.NONE


def test_add_voter_with_another_cluster_id_is_inconsistent_cluster_id() -> None:
    """KafkaRaftClientReconfigTest.testAddVoterInvalidClusterId"""
    ctx = leader([1, 2])
    assert error_of(ctx.request(9, add_voter(key(3), cluster_id="invalid-uuid"))) == Errors.INCONSISTENT_CLUSTER_ID
    assert ctx.raft.voter_set().voter_ids == (1, 2)


@pytest.mark.parametrize("request_kind", ["add", "remove"])
def test_a_voter_change_off_the_leader_is_not_leader_or_follower(request_kind: str) -> None:
    """KafkaRaftClientReconfigTest.testAddVoterToNotLeader, testRemoveVoterToNotLeader"""
    ctx = RaftContext(L, [1, 2], kraft_version=1, election=ElectionState(3))
    req = add_voter(key(3)) if request_kind == "add" else remove_voter(key(2))
    assert error_of(ctx.request(9, req)) == Errors.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("request_kind", ["add", "remove"])
def test_a_voter_change_before_the_leader_committed_in_its_epoch_is_request_timed_out(request_kind: str) -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithoutFencedPreviousLeaders,
    testRemoveVoterWithoutFencedPreviousLeaders: no high watermark yet in this epoch"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(4))  # the new voter caught up, but no voter fetched: no high watermark
    assert ctx.state.high_watermark is None
    req = add_voter(key(4)) if request_kind == "add" else remove_voter(key(3))
    assert error_of(ctx.request(9, req)) == Errors.REQUEST_TIMED_OUT
    assert ctx.raft.voter_set().voter_ids == (1, 2, 3)


@pytest.mark.parametrize("request_kind", ["add", "remove"])
def test_a_voter_change_at_kraft_version_0_is_unsupported_version(request_kind: str) -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithKraftVersion0, testRemoveVoterWithKraftVersion0"""
    ctx = leader([1, 2, 3], kraft_version=0)
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, key(4))
    # a static voter has no directory id, but the request names one (Kafka checks it before kraft.version)
    req = add_voter(key(4)) if request_kind == "add" else remove_voter(ReplicaKey(3, dir_id(3)))
    assert error_of(ctx.request(9, req)) == Errors.UNSUPPORTED_VERSION
    assert ctx.raft.voter_set().voter_ids == (1, 2, 3)


def test_add_voter_of_an_id_that_already_votes_is_duplicate_voter() -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithExistingVoter (the same id with another directory too)"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(9, add_voter(key(2)))) == Errors.DUPLICATE_VOTER
    assert error_of(ctx.request(9, add_voter(ReplicaKey(2, dir_id(77))))) == Errors.DUPLICATE_VOTER
    assert ctx.raft.voter_set().voter_ids == (1, 2)


def test_add_voter_of_a_replica_that_has_not_caught_up_is_request_timed_out() -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithLaggingNewVoter"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(9, add_voter(key(3)))) == Errors.REQUEST_TIMED_OUT
    ctx.request(3, ctx.fetch_request(key(3), ctx.epoch, 0, 0))  # fetching, but from behind the leader's end
    assert error_of(ctx.request(9, add_voter(key(3)))) == Errors.REQUEST_TIMED_OUT
    assert ctx.raft.voter_set().voter_ids == (1, 2)


def test_add_voter_without_a_directory_id_is_invalid_request() -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithMissingDirectoryId"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, ReplicaKey(3, None))
    assert error_of(ctx.request(9, add_voter(ReplicaKey(3, None)))) == Errors.INVALID_REQUEST


@pytest.mark.parametrize(("first", "second"), [("add", "add"), ("add", "remove"), ("remove", "add"),
                                               ("remove", "remove"), ("add", "update")])
def test_a_voter_change_while_another_is_uncommitted_is_request_timed_out(first: str, second: str) -> None:
    """KafkaRaftClientReconfigTest.testAddVoterWithPendingAddVoter, testAddVoterWithPendingRemoveVoter,
    testRemoveVoterWithPendingAddVoter, testRemoveVoterWithPendingRemoveVoter, testUpdateVoterWithPendingAddVoter"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, key(4))
    fetch_at_end(ctx, key(5))
    ctx.park(9, add_voter(key(4)) if first == "add" else remove_voter(key(3)))
    voters = ctx.raft.voter_set().voter_ids
    requests = {"add": add_voter(key(5)), "remove": remove_voter(key(2)),
                "update": update_voter(key(2), ctx.epoch, (RaftEndpoint("CONTROLLER", "localhost", 8992),))}
    assert error_of(ctx.request(9, requests[second])) == Errors.REQUEST_TIMED_OUT
    assert ctx.raft.voter_set().voter_ids == voters


def test_a_voter_change_that_does_not_commit_in_time_is_request_timed_out_and_stays_in_the_log() -> None:
    """KafkaRaftClientReconfigTest.testAddVoterTimeout, testRemoveVoterTimedOut"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, key(3))
    corr = ctx.park(9, add_voter(key(3)))
    ctx.advance(ctx.config.request_timeout_ms - 1)
    assert ctx.answer_of(9, corr) is None
    ctx.advance(1)
    assert error_of(ctx.answer_of(9, corr)) == Errors.REQUEST_TIMED_OUT
    assert ctx.raft.voter_set().is_voter(key(3))


@pytest.mark.parametrize("request_kind", ["add", "remove"])
def test_a_pending_voter_change_is_not_leader_or_follower_when_the_leader_resigns(request_kind: str) -> None:
    """KafkaRaftClientReconfigTest.testAddVoterFailsWhenLosingLeadership, testRemoveVoterFailsWhenLosingLeadership:
    the uncommitted voter set stays in force"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(2))
    fetch_at_end(ctx, key(4))
    corr = ctx.park(9, add_voter(key(4)) if request_kind == "add" else remove_voter(key(3)))
    ctx.raft.resign(ctx.epoch)
    ctx.poll()
    assert error_of(ctx.answer_of(9, corr)) == Errors.NOT_LEADER_OR_FOLLOWER
    assert ctx.raft.voter_set().voter_ids == ((1, 2, 3, 4) if request_kind == "add" else (1, 2))


# ============================================================================================== RemoveRaftVoter
def test_remove_voter_takes_the_voter_out_at_once_and_answers_when_it_commits() -> None:
    """KafkaRaftClientReconfigTest.testRemoveVoter"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(2))
    corr = ctx.park(9, remove_voter(key(3)))
    assert ctx.answer_of(9, corr) is None and not ctx.raft.voter_set().is_voter(key(3))
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.answer_of(9, corr)) == Errors.NONE


def test_a_leader_that_removed_itself_resigns_once_the_change_commits_and_becomes_an_observer() -> None:
    """KafkaRaftClientReconfigTest.testRemoveVoterIsLeader: the remaining voters commit it; the leader answers,
    resigns, sends EndQuorumEpoch to both, and after an election timeout is an unattached observer"""
    ctx = leader([1, 2, 3])
    epoch = ctx.epoch
    fetch_at_end(ctx, key(2))
    corr = ctx.park(9, remove_voter(ctx.local))
    assert not ctx.raft.is_voter() and ctx.raft.is_leader
    fetch_at_end(ctx, key(2))
    assert ctx.answer_of(9, corr) is None  # the leader does not count any more: 2 of {2, 3} are needed
    fetch_at_end(ctx, key(3))
    assert error_of(ctx.answer_of(9, corr)) == Errors.NONE
    assert isinstance(ctx.state, Resigned) and ctx.epoch == epoch
    ends = ctx.requests(m.EndQuorumEpochRequest)
    assert sorted(int(e.dst) for e in ends) == [2, 3] and all(e.message.leader_epoch == epoch for e in ends)
    ctx.raft.resign(epoch)  # allowed, and nothing happens
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.state, Unattached) and not ctx.raft.is_voter() and ctx.epoch == epoch + 1


@pytest.mark.parametrize("voter", [ReplicaKey(3, dir_id(77)), ReplicaKey(4, dir_id(3))],
                         ids=["other-directory", "not-a-voter-id"])
def test_remove_voter_of_a_replica_that_is_not_a_voter_is_voter_not_found(voter: ReplicaKey) -> None:
    """KafkaRaftClientReconfigTest.testRemoveVoterWithNoneVoter, testRemoveVoterWithNoneVoterId"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(9, remove_voter(voter))) == Errors.VOTER_NOT_FOUND
    assert ctx.raft.voter_set().voter_ids == (1, 2, 3)


def test_remove_voter_without_a_directory_id_is_invalid_request() -> None:
    """KafkaRaftClient.handleRemoveVoterRequest ("Remove voter request didn't include a valid voter")"""
    ctx = leader([1, 2, 3])
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(9, remove_voter(ReplicaKey(3, None)))) == Errors.INVALID_REQUEST


def test_add_voter_without_a_directory_id_is_invalid_request_before_the_kraft_version_check() -> None:
    """KafkaRaftClient.handleAddVoterRequest ("Add voter request didn't include a valid voter")"""
    ctx = leader([1, 2], kraft_version=0)
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(9, add_voter(ReplicaKey(3, None)))) == Errors.INVALID_REQUEST


def test_removing_the_only_voter_is_voter_not_found() -> None:
    """KafkaRaftClientReconfigTest.testRemoveVoterToEmptyVoterSet"""
    ctx = RaftContext(L, [L], kraft_version=1)
    assert ctx.raft.is_leader and ctx.raft.ready_for_writes
    assert error_of(ctx.request(9, remove_voter(ctx.local))) == Errors.VOTER_NOT_FOUND
    assert ctx.raft.voter_set().voter_ids == (L,)


# ============================================================================================== UpdateRaftVoter
def test_update_voter_writes_the_changed_voter_and_answers_at_once() -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoter"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    endpoint = RaftEndpoint("CONTROLLER", "localhost", 8992)
    resp = ctx.request(2, update_voter(key(2), ctx.epoch, (endpoint,)))
    assert isinstance(resp, m.UpdateRaftVoterResponse)
    assert (resp.error_code, resp.current_leader_id, resp.current_leader_epoch) == (Errors.NONE, L, ctx.epoch)
    assert ctx.raft.voter_set().voters[2].endpoints == (endpoint,) and ctx.raft.voter_set().is_voter(key(2))


@pytest.mark.parametrize(("epoch_delta", "error"), [(-1, Errors.FENCED_LEADER_EPOCH),
                                                    (1, Errors.UNKNOWN_LEADER_EPOCH)])
def test_update_voter_of_another_epoch_is_answered_with_the_leaders_epoch(epoch_delta: int, error: int) -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoterOldEpoch, testUpdateVoterNewEpoch"""
    ctx = leader([1, 2])
    resp = ctx.request(2, update_voter(key(2), ctx.epoch + epoch_delta))
    assert isinstance(resp, m.UpdateRaftVoterResponse)
    assert (resp.error_code, resp.current_leader_id, resp.current_leader_epoch) == (error, L, ctx.epoch)


def test_update_voter_off_the_leader_is_not_leader_or_follower() -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoterToNotLeader"""
    ctx = RaftContext(L, [1, 2], kraft_version=1, election=ElectionState(3))
    resp = ctx.request(2, update_voter(key(2), 3))
    assert isinstance(resp, m.UpdateRaftVoterResponse)
    assert (resp.error_code, resp.current_leader_id, resp.current_leader_epoch) == \
        (Errors.NOT_LEADER_OR_FOLLOWER, -1, 3)


def test_update_voter_with_another_cluster_id_is_inconsistent_cluster_id() -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoterInvalidClusterId"""
    ctx = leader([1, 2])
    assert error_of(ctx.request(2, update_voter(key(2), ctx.epoch, cluster_id="invalid-uuid"))) == \
        Errors.INCONSISTENT_CLUSTER_ID


def test_update_voter_at_kraft_version_0_is_acknowledged() -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoterWithKraftVersion0"""
    ctx = leader([1, 2], kraft_version=0)
    fetch_at_end(ctx, key(2))
    resp = ctx.request(2, update_voter(key(2), ctx.epoch, (RaftEndpoint("CONTROLLER", "localhost", 8992),)))
    assert isinstance(resp, m.UpdateRaftVoterResponse)
    assert (resp.error_code, resp.current_leader_id, resp.current_leader_epoch) == (Errors.NONE, L, ctx.epoch)


def test_update_voter_of_an_id_with_another_directory_is_voter_not_found() -> None:
    """KafkaRaftClientReconfigTest.testUpdateVoterWithNoneVoter, testUpdateVoterWithNoneVoterId"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    endpoint = (RaftEndpoint("CONTROLLER", "localhost", 8992),)
    assert error_of(ctx.request(2, update_voter(ReplicaKey(2, dir_id(77)), ctx.epoch, endpoint))) == \
        Errors.VOTER_NOT_FOUND
    assert error_of(ctx.request(5, update_voter(key(5), ctx.epoch, endpoint))) == Errors.VOTER_NOT_FOUND


def test_update_voter_without_a_directory_id_is_invalid_request() -> None:
    """KafkaRaftClientReconfigTest.testInvalidUpdateVoter (missing directory id)"""
    ctx = leader([1, 2])
    fetch_at_end(ctx, key(2))
    assert error_of(ctx.request(2, update_voter(ReplicaKey(2, None), ctx.epoch))) == Errors.INVALID_REQUEST


# ============================================================================================== VoterSet
def vset(*ids: int, with_directory: bool = True) -> VoterSet:
    return VoterSet({i: Voter(i, dir_id(i) if with_directory else None) for i in ids})


def test_a_voter_set_adds_only_a_new_id_and_removes_only_an_exact_voter_never_the_last() -> None:
    """VoterSetTest.testAddVoter, testRemoveVoter, testCannotRemoveToEmptyVoterSet"""
    voters = vset(1, 2, 3)
    assert voters.add_voter(Voter(1, dir_id(1))) is None
    assert voters.add_voter(Voter(4, dir_id(4))) == vset(1, 2, 3, 4)
    assert voters.remove_voter(ReplicaKey(4, None)) is None
    assert voters.remove_voter(ReplicaKey(4, dir_id(4))) is None
    assert voters.remove_voter(ReplicaKey(3, dir_id(77))) is None
    assert voters.remove_voter(ReplicaKey(3, dir_id(3))) == vset(1, 2)
    assert vset(1).remove_voter(ReplicaKey(1, dir_id(1))) is None


def test_a_voter_set_updates_only_a_voter_of_the_same_id_and_directory() -> None:
    """VoterSetTest.testUpdateVoter"""
    voters = vset(1, 2, 3)
    assert voters.update_voter(Voter(4, dir_id(4))) is None
    assert voters.update_voter(Voter(3, dir_id(77))) is None
    changed = Voter(3, dir_id(3), (RaftEndpoint("ABC", "abc", 1234),), 1, 1)
    updated = voters.update_voter(changed)
    assert updated is not None and updated.voters[3] == changed and updated.voter_ids == (1, 2, 3)


def test_a_voter_set_without_directory_ids_counts_any_directory_of_a_voter_id() -> None:
    """VoterSetTest.testIsVoterWithoutDirectoryId"""
    voters = vset(1, 2, 3, with_directory=False)
    assert voters.is_voter(ReplicaKey(1, None)) and voters.is_voter(ReplicaKey(1, dir_id(77)))
    assert not voters.is_voter(ReplicaKey(4, dir_id(4))) and not voters.is_voter(ReplicaKey(4, None))


def test_a_voter_set_with_directory_ids_needs_the_same_id_and_directory() -> None:
    """VoterSetTest.testIsVoterWithDirectoryId (all but the replica without a directory id)"""
    voters = vset(1, 2, 3)
    assert voters.is_voter(ReplicaKey(1, dir_id(1)))
    assert not voters.is_voter(ReplicaKey(1, dir_id(77)))
    assert not voters.is_voter(ReplicaKey(2, dir_id(1)))
    assert not voters.is_voter(ReplicaKey(4, dir_id(1))) and not voters.is_voter(ReplicaKey(4, None))


def test_a_replica_without_a_directory_id_is_no_voter_of_a_set_with_directory_ids() -> None:
    """VoterSetTest.testIsVoterWithDirectoryId, testIsOnlyVoterInStandalone (ReplicaKey.of(1, NO_DIRECTORY_ID))"""
    assert not vset(1, 2, 3).is_voter(ReplicaKey(1, None))
    assert not vset(1).is_only_voter(ReplicaKey(1, None))


def test_only_voter_means_the_one_voter_with_its_directory() -> None:
    """VoterSetTest.testIsOnlyVoterInStandalone, testIsOnlyVoterInNotStandalone"""
    assert vset(1).is_only_voter(ReplicaKey(1, dir_id(1)))
    assert not vset(1).is_only_voter(ReplicaKey(1, dir_id(77)))
    assert not vset(1).is_only_voter(ReplicaKey(4, dir_id(1)))
    assert not vset(1, 2).is_only_voter(ReplicaKey(1, dir_id(1)))


# ============================================================================================== configs
@pytest.mark.parametrize("name", ["controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
                                  "controller.quorum.election.backoff.max.ms", "controller.quorum.append.linger.ms",
                                  "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
                                  "controller.quorum.auto.join.enable"])
def test_a_negative_quorum_config_is_refused(name: str) -> None:
    """QuorumConfigTest.testIllegalConfig"""
    configs = {n: "10" for n in ("controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
                                 "controller.quorum.election.backoff.max.ms", "controller.quorum.append.linger.ms",
                                 "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms")}
    configs["controller.quorum.auto.join.enable"] = "true"
    assert QuorumConfig.from_configs(configs) == QuorumConfig(10, 10, 10, 10, 10, 10, True)
    configs[name] = "-1"
    with pytest.raises(QuorumConfigError, match=name):
        QuorumConfig.from_configs(configs)


def test_the_quorum_configs_default_to_kafkas() -> None:
    """QuorumConfig's defaults (Kafka's QuorumConfig.DEFAULT_QUORUM_*)"""
    assert QuorumConfig.from_configs({}) == QuorumConfig(election_timeout_ms=1000, fetch_timeout_ms=2000,
                                                         election_backoff_max_ms=1000, request_timeout_ms=2000,
                                                         retry_backoff_ms=20, append_linger_ms=25, auto_join=False)


def test_quorum_voters_are_id_at_host_colon_port() -> None:
    """KafkaConfigTest.testValidQuorumVotersParsingWithIpAddress, testValidQuorumVotersParsingWithMultipleHost"""
    assert parse_quorum_voters("1@127.0.0.1:9092") == {1: RaftEndpoint("CONTROLLER", "127.0.0.1", 9092)}
    assert parse_quorum_voters("1@kafka1:9092,2@kafka2:9092,3@kafka3:9092") == {
        i: RaftEndpoint("CONTROLLER", f"kafka{i}", 9092) for i in (1, 2, 3)}


@pytest.mark.parametrize("value", [
    "", "1", "1@", "1:", "blah@", "1@kafka1", "1@kafka1:9092,", "1@kafka1:9092,2", "1@kafka1:9092,2@",
    "1@kafka1:9092,2@blah", "1@kafka1:9092,2@blah,", "1@kafka1:9092:1@kafka2:9092",
])
def test_a_malformed_quorum_voters_value_is_refused(value: str) -> None:
    """KafkaConfigTest.testInvalidQuorumVoterConfig"""
    with pytest.raises(QuorumConfigError):
        parse_quorum_voters(value)
