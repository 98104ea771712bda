"""Raft's safety invariants under random faults (hypothesis): Election Safety, Log Matching, Leader Completeness
and State Machine Safety hold at every step among 3 and 5 voters while messages are lost and reordered, voters
crash (losing nothing or their unflushed writes: a voter acknowledges only what it flushed), restart and are
partitioned; once the faults stop, a leader is elected and commits again (liveness within the budget)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raft_harness import RaftNet

_ACTION = st.one_of(
    st.tuples(st.just("run"), st.integers(50, 4000)),
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("crash"), st.integers(0, 4), st.sampled_from(["none", "unflushed"])),
    st.tuples(st.just("restart"), st.integers(0, 4)),
    st.tuples(st.just("partition"), st.integers(1, 2 ** 5 - 2)),
    st.tuples(st.just("heal")),
    st.tuples(st.just("loss"), st.sampled_from([0.0, 0.05, 0.2])),
)


def _play(voters: int, seed: int, kraft_version: int, delay: int,
          actions: list[tuple]) -> None:  # type: ignore[type-arg]
    # delays up to 900 ms against election.timeout.ms 1000: concurrent elections and split votes are common
    net = RaftNet(voters=voters, seed=seed, kraft_version=kraft_version, max_delay_ms=delay)
    appended = 0
    for action in actions:
        kind = action[0]
        if kind == "run":
            net.run_for(action[1])
        elif kind == "append":
            leader = next((n for n in net.live() if n.raft.ready_for_writes), None)
            if leader is not None:
                leader.append([f"r{appended + i}" for i in range(action[1])], net.now)
                net._flush(leader)
                appended += action[1]
        elif kind == "crash":
            vid = net.voter_ids[action[1] % voters]
            if net.nodes[vid] is not None:
                net.crash(vid, action[2])
        elif kind == "restart":
            vid = net.voter_ids[action[1] % voters]
            if net.nodes[vid] is None:
                net.start(vid)
        elif kind == "partition":
            mask = action[1] % (2 ** voters)
            side = {v for i, v in enumerate(net.voter_ids) if mask >> i & 1}
            net.heal()
            net.partition(side, set(net.voter_ids) - side)
        elif kind == "heal":
            net.heal()
        else:
            net.loss = action[1]
    # the faults stop: every voter back, links healed, no loss -> a leader commits again
    net.loss = 0.0
    net.heal()
    for vid in net.voter_ids:
        if net.nodes[vid] is None:
            net.start(vid)
    net.commit(["final"], timeout_ms=60_000)

    def converged() -> bool:
        views = [[r for _, r in n.committed] for n in net.live()]
        return views[0][-1:] == ["final"] and all(v == views[0] for v in views)

    assert net.run_until(converged, 20_000), "every voter applies the same committed records"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), kraft_version=st.sampled_from([0, 1]),
       delay=st.sampled_from([5, 300, 900]), actions=st.lists(_ACTION, min_size=1, max_size=25))
def test_raft_invariants_hold_among_three_voters_under_loss_reordering_crashes_and_partitions(
        seed: int, kraft_version: int, delay: int, actions: list[tuple]) -> None:  # type: ignore[type-arg]
    _play(3, seed, kraft_version, delay, actions)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), kraft_version=st.sampled_from([0, 1]),
       delay=st.sampled_from([5, 300, 900]), actions=st.lists(_ACTION, min_size=1, max_size=25))
def test_raft_invariants_hold_among_five_voters_under_loss_reordering_crashes_and_partitions(
        seed: int, kraft_version: int, delay: int, actions: list[tuple]) -> None:  # type: ignore[type-arg]
    _play(5, seed, kraft_version, delay, actions)
