"""KRaft's Raft, whole quorums at a time (KafkaRaftClientTest's stories, KIP-595/996/853), over the deterministic
network of ``raft_harness``: elections, commit, check-quorum, divergence, crashes and disk loss. Every step
of every test also checks Raft's safety invariants (``RaftInvariants``)."""

from __future__ import annotations

import pytest

from kraftlog.protocol.raft_records import KRaftVersionRecord, LeaderChangeMessage, VotersRecord
from kraftlog.raft.client import NotLeaderError
from kraftlog.raft.states import Follower, Prospective, Resigned, Unattached
from raft_harness import RaftNet


def test_a_single_voter_elects_itself_at_start_and_commits_its_leader_change_first() -> None:
    net = RaftNet(voters=1)
    node = net.node(1)
    assert node.raft.is_leader and node.raft.epoch == 1
    first = node.raft.log.batches()[0]
    assert first.control and first.records == (LeaderChangeMessage(1, (1,), (1,)),)
    assert node.raft.ready_for_writes
    offset = net.commit(["a", "b"])
    assert offset == 2 and node.committed == [(1, "a"), (2, "b")]


def test_three_voters_elect_one_leader_within_the_election_timeouts() -> None:
    net = RaftNet(voters=3, seed=4)
    assert net.run_until(lambda: len(net.leaders()) == 1, 5000)
    # election.timeout.ms 1000 + jitter < 1000, then a pre-vote and a vote round trip
    assert net.now < 2 * net.config.election_timeout_ms + 50
    leader = net.leader()
    assert leader is not None and leader.raft.epoch == 1
    followers = [n for n in net.live() if n is not leader]
    assert net.run_until(lambda: all(isinstance(n.raft.state, Follower) for n in followers), 1000)
    change = leader.raft.log.batches()[0].records[0]
    assert isinstance(change, LeaderChangeMessage) and change.voters == (1, 2, 3) and len(change.granting_voters) >= 2


def test_the_leader_accepts_writes_only_after_its_leader_change_commits() -> None:
    net = RaftNet(voters=3, seed=1)
    assert net.run_until(lambda: net.leader() is not None)
    leader = net.leader()
    assert leader is not None
    if not leader.raft.ready_for_writes:
        with pytest.raises(NotLeaderError):
            leader.append(["early"], net.now)
    assert net.run_until(lambda: leader.raft.ready_for_writes)
    assert leader.raft.high_watermark > leader.raft.state.epoch_start_offset  # type: ignore[union-attr]
    net.commit(["x"])
    assert net.run_until(lambda: all(n.committed == [(1, "x")] for n in net.live()))


def test_an_append_of_more_than_ten_thousand_records_or_none_is_refused() -> None:
    net = RaftNet(voters=1)
    node = net.node(1)
    with pytest.raises(ValueError, match="at most 10000"):
        node.append(list(range(10_001)), net.now)
    with pytest.raises(ValueError):
        node.append([], net.now)
    assert node.append(list(range(10_000)), net.now) == 10_000


def test_killing_the_active_of_three_moves_leadership_and_commits_go_on() -> None:
    net = RaftNet(voters=3, seed=2)
    net.commit(["before"])
    old = net.leader()
    assert old is not None
    killed_at = net.now
    net.crash(int(old.node_id))
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live()), 10_000)
    # a follower notices after fetch.timeout.ms, then pre-vote, vote and the leader change commit
    elapsed = net.now - killed_at
    assert elapsed <= net.config.fetch_timeout_ms + 2 * net.config.election_timeout_ms + 100, elapsed
    net.commit(["after"])
    for node in net.live():
        assert net.run_until(lambda n=node: [r for _, r in n.committed] == ["before", "after"])


def test_two_of_three_down_commit_nothing_until_one_is_back() -> None:
    net = RaftNet(voters=3, seed=3)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    others = [i for i in net.voter_ids if i != leader.node_id]
    net.crash(others[0])
    net.crash(others[1])
    offset = leader.append(["b"], net.now)
    net.run_for(10_000)
    assert all(n.raft.high_watermark <= offset for n in net.live())  # "b" never commits
    assert not leader.raft.is_leader  # check-quorum made it resign
    net.start(others[0])
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live()), 15_000)
    net.commit(["c"])


def test_an_isolated_leader_commits_nothing_and_resigns_by_check_quorum() -> None:
    net = RaftNet(voters=3, seed=5)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    lid = int(leader.node_id)
    others = {i for i in net.voter_ids if i != lid}
    net.partition({lid}, others)
    cut_at = net.now
    stale = leader.append(["lost"], net.now)
    assert net.run_until(lambda: isinstance(leader.raft.state, (Resigned, Unattached, Prospective)), 10_000)
    # check-quorum: 1.5 x controller.quorum.fetch.timeout.ms without fetches from a majority
    assert net.now - cut_at <= int(1.5 * net.config.fetch_timeout_ms) + 50
    assert leader.raft.high_watermark <= stale
    # the majority elected another leader meanwhile; after the heal the old one truncates "lost"
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live() if n.node_id != lid), 10_000)
    net.commit(["new"])
    net.heal()
    assert net.run_until(lambda: [r for _, r in leader.committed] == ["a", "new"], 10_000)
    assert all("lost" not in b.records for b in leader.raft.log.batches())


def test_pre_vote_keeps_a_partitioned_voter_from_raising_epochs() -> None:
    """KIP-996: a voter cut off from the leader stays Prospective without bumping its epoch, so it does not
    depose the leader when it comes back."""
    net = RaftNet(voters=3, seed=6)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    epoch = leader.raft.epoch
    loner = next(i for i in net.voter_ids if i != leader.node_id)
    net.partition({loner}, set(net.voter_ids) - {loner})
    net.run_for(20_000)
    assert net.node(loner).raft.epoch == epoch
    net.heal()
    net.run_for(5_000)
    assert leader.raft.is_leader and leader.raft.epoch == epoch
    net.commit(["b"])


def test_a_graceful_resign_hands_leadership_to_the_most_caught_up_voter_at_once() -> None:
    net = RaftNet(voters=3, seed=7)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    leader.raft.resign(leader.raft.epoch)
    resigned_at = net.now
    leader.tick(net.now)
    net._flush(leader)
    assert isinstance(leader.raft.state, Resigned)
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live() if n is not leader), 5000)
    # EndQuorumEpoch's first preferred successor starts its election at once (no fetch timeout)
    assert net.now - resigned_at < net.config.fetch_timeout_ms


def test_a_crash_losing_unflushed_writes_loses_nothing_committed() -> None:
    net = RaftNet(voters=3, seed=8)
    for i in range(5):
        net.commit([f"r{i}"])
    for vid in net.voter_ids:
        net.crash(vid, "unflushed")
        net.start(vid)
        net.run_for(3000)
    net.commit(["last"])
    expected = [f"r{i}" for i in range(5)] + ["last"]
    for node in net.live():
        assert net.run_until(lambda n=node: [r for _, r in n.committed] == expected, 10_000)


def test_a_voter_acknowledges_only_what_it_flushed() -> None:
    """A record committed by {leader, f1} (f2 cut off) survives f1 losing its unflushed writes and the leader
    being down: f1 flushed before its fetch acknowledged the record, so f1 and f2 elect a leader holding it."""
    net = RaftNet(voters=3, seed=14)
    net.commit(["base"])
    leader = net.leader()
    assert leader is not None
    lid = int(leader.node_id)
    f1, f2 = (i for i in net.voter_ids if i != lid)
    net.partition({f2}, {lid, f1})
    net.commit(["x"])
    net.crash(f1, "unflushed")
    net.crash(lid)
    net.heal()
    net.start(f1)
    net.commit(["y"], timeout_ms=30_000)
    for vid in (f1, f2):
        assert net.run_until(lambda v=vid: [r for _, r in net.node(v).committed] == ["base", "x", "y"], 10_000)


def test_an_observer_learns_what_committed_and_never_votes() -> None:
    net = RaftNet(voters=3, observers=1, seed=9)
    net.commit(["a", "b"])
    observer = net.node(101)
    assert net.run_until(lambda: [r for _, r in observer.committed] == ["a", "b"])
    leader = net.leader()
    assert leader is not None
    net.crash(int(leader.node_id))
    net.run_for(10_000)
    assert not observer.raft.is_voter() and not observer.raft.is_leader
    assert observer.raft.leader_epochs == []
    net.commit(["c"])
    assert net.run_until(lambda: [r for _, r in observer.committed] == ["a", "b", "c"])


def test_a_restarted_voter_keeps_its_vote_in_quorum_state() -> None:
    net = RaftNet(voters=3, seed=10)
    net.commit(["a"])
    node = net.node(2)
    before = node.raft.store.read()
    net.crash(2, "unflushed")
    restarted = net.start(2)
    after = restarted.raft.store.read()
    assert after is not None and before is not None and after.epoch >= before.epoch
    assert restarted.raft.epoch >= before.epoch


def test_quorum_state_is_written_in_kafkas_format() -> None:
    import json

    net = RaftNet(voters=3, seed=11)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    doc0 = json.loads(str(net.disks[int(leader.node_id)].read_value(leader.raft.store.path)))
    assert doc0["data_version"] == 0 and doc0["leaderId"] == leader.node_id
    assert doc0["leaderEpoch"] == leader.raft.epoch and [v["voterId"] for v in doc0["currentVoters"]] == [1, 2, 3]
    net1 = RaftNet(voters=3, seed=11, kraft_version=1)
    net1.commit(["a"])
    leader1 = net1.leader()
    assert leader1 is not None
    doc1 = json.loads(str(net1.disks[int(leader1.node_id)].read_value(leader1.raft.store.path)))
    assert doc1["data_version"] == 1 and set(doc1) == {"leaderId", "leaderEpoch", "votedId", "votedDirectoryId",
                                                       "data_version"}


def test_kraft_version_1_leader_writes_the_voter_set_into_the_log() -> None:
    net = RaftNet(voters=3, seed=12, kraft_version=1)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    first = leader.raft.log.batches()[0].records
    assert isinstance(first[0], LeaderChangeMessage) and first[1] == KRaftVersionRecord(1)
    assert isinstance(first[2], VotersRecord) and [v.voter_id for v in first[2].voters] == [1, 2, 3]
    assert all(v.voter_directory_id == net.directory_ids[v.voter_id] for v in first[2].voters)


# ---------------------------------------------------------------------------------------------- disk loss
def _disk_loss_story(kraft_version: int, seed: int = 13, auto_join: bool = False) -> tuple[RaftNet, int, int, int]:
    """Commit "x" on voters {a, b} while c is cut off; then a is down and b loses its disk; b and c are left.
    At kraft.version 0 b votes as if it had its log; at 1 it comes back with a new directory id."""
    net = RaftNet(voters=3, seed=seed, kraft_version=kraft_version, auto_join=auto_join)
    net.commit(["base"])
    leader = net.leader()
    assert leader is not None
    a = int(leader.node_id)
    b, c = (i for i in net.voter_ids if i != a)
    net.partition({c}, {a, b})
    net.commit(["x"])
    net.crash(a)
    net.crash(b, "all")
    net.heal()
    net.invariants.strict = False
    net.start(b)
    net.run_for(20_000)
    return net, a, b, c


def test_a_static_voter_that_lost_its_disk_helps_elect_a_leader_without_a_committed_record() -> None:
    net, a, b, c = _disk_loss_story(kraft_version=0)
    assert any(n.raft.ready_for_writes for n in net.live()), "b (empty disk) and c elected a leader"
    assert all("x" not in [r for _, r in n.committed] for n in net.live())
    assert any("Leader Completeness" in v or "State Machine Safety" in v for v in net.invariants.violations)


def test_with_dynamic_voters_the_voter_that_lost_its_disk_is_an_observer_and_nothing_is_lost() -> None:
    net, a, b, c = _disk_loss_story(kraft_version=1)
    assert net.invariants.violations == []
    assert not any(n.raft.ready_for_writes for n in net.live())  # b is no voter: c alone has no majority
    assert not net.node(b).raft.is_voter()
    net.invariants.strict = True
    net.start(a)
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live()), 20_000)
    net.commit(["y"])
    for node in net.live():
        assert net.run_until(lambda n=node: [r for _, r in n.committed] == ["base", "x", "y"], 10_000)
    assert not net.node(b).raft.is_voter()  # without auto-join it stays an observer


def test_with_auto_join_the_voter_that_lost_its_disk_replaces_its_old_directory_and_votes_again() -> None:
    net, a, b, c = _disk_loss_story(kraft_version=1, auto_join=True)
    assert net.invariants.violations == []
    net.invariants.strict = True
    net.start(a)
    new_dir = net.directory_ids[b]
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in net.live()), 20_000)
    assert net.run_until(lambda: net.node(b).raft.is_voter(), 30_000)
    leader = net.leader()
    assert leader is not None
    voters = leader.raft.voter_set().voters
    assert sorted(voters) == [1, 2, 3] and voters[b].voter_directory_id == new_dir
    net.commit(["z"])
    assert net.run_until(lambda: [r for _, r in net.node(b).committed] == ["base", "x", "z"], 10_000)


def test_a_leader_whose_disk_is_full_stops_and_the_others_elect_a_leader_without_losing_a_commit() -> None:
    """A metadata log write that fails (ENOSPC) stops the Raft client (Kafka's raft thread dies on an I/O error):
    it sends and writes nothing more, and the two others elect a leader that holds every committed record."""
    net = RaftNet(voters=3, seed=15)
    net.commit(["a"])
    leader = net.leader()
    assert leader is not None
    net.invariants.strict = False  # a stopped node is reported by the checks: expected here, and only that
    net.disks[int(leader.node_id)].set_full(True)
    leader.append(["never"], net.now)  # written at the linger's end: the write fails
    assert net.run_until(lambda: leader.raft.fatal_error is not None, 1000)
    assert "cannot be written" in str(leader.raft.fatal_error) and leader.raft.next_deadline() is None
    others = [n for n in net.live() if n is not leader]
    assert net.run_until(lambda: any(n.raft.ready_for_writes for n in others), 10_000)
    offset = next(n for n in others if n.raft.ready_for_writes).append(["b"], net.now)
    assert net.run_until(lambda: all(n.raft.high_watermark > offset for n in others), 5000)
    assert all([r for _, r in n.committed] == ["a", "b"] for n in others)
    assert {v.split(":")[0] for v in net.invariants.violations} == {f"node {leader.node_id} stopped"}
