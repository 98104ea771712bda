"""The campaign's episodes: the story templates that :func:`kraftlog.scenario.generator.generate` draws
from (:data:`EPISODES`, with their weights).

Each episode is a builder ``(story, start ms) -> end ms`` that appends steps with absolute ``at`` times to a
:class:`Story` (the random generator, the cluster shape and the steps drawn so far), drawing only from
``story.rng``. What each episode tells, and why, is written once in the generator's module docstring (the
campaign's description of its stories); the order of the draws here is part of every campaign seed's
history digest.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .model import ACTIVE_CONTROLLER, CONTROLLER, Node

__all__ = ["DOOMED", "EPISODES", "MIN_ISR", "QUORUM_EPISODES", "QUORUM_IDS", "RF", "SNAPSHOT_EPISODES", "TOPIC",
           "DrawnStep", "Episode", "Node",
           "StepArgs", "Story"]

TOPIC = "t"
#: The topic a snapshot episode deletes (issue 34).
DOOMED = "doomed"
MIN_ISR = 2
RF = 3

#: A drawn step's arguments, as :func:`~kraftlog.scenario.steps.action_from_args` takes them.
StepArgs = dict[str, object]
#: A drawn step: (at ms, draw order, verb, arguments).
DrawnStep = tuple[int, int, str, StepArgs]
#: A builder: (story, start ms) -> the ms at which the episode ends.
Build = Callable[["Story", int], int]
#: An episode: (weight, builder, exclusive).
Episode = tuple[int, Build, bool]

K = TypeVar("K")


def _node_order(nodes: Iterable[Node]) -> list[Node]:
    """Brokers by id, then the controller."""
    return sorted(nodes, key=lambda n: (isinstance(n, str), n if isinstance(n, int) else 0))


@dataclass
class Story:
    """What an episode needs: the random generator, the cluster shape and the steps drawn so far."""

    rng: random.Random
    brokers: int
    assignment: tuple[tuple[int, ...], ...]
    lag_ms: int = 10_000
    socket_timeout_ms: int = 5_000
    steps: list[DrawnStep] = field(default_factory=list)
    holds: bool = False
    #: how the episodes name the controller: ``"controller"``, or ``"active"`` in a story with a quorum (the
    #: active controller when the step runs)
    controller: Node = CONTROLLER

    def add(self, at_ms: int, verb: str, args: StepArgs) -> None:
        """Draw step ``verb`` at ``at_ms`` (after the steps drawn so far at the same time)."""
        self.steps.append((at_ms, len(self.steps), verb, args))

    def partition(self) -> tuple[int, ...]:
        """The replica list of a random partition, preferred leader first."""
        return self.assignment[self.rng.randrange(len(self.assignment))]

    def broker(self) -> int:
        """A random broker, most often one holding a replica of some partition."""
        holders = sorted({b for r in self.assignment for b in r})
        if self.rng.random() < 0.85:
            return self.rng.choice(holders)
        return self.rng.randrange(self.brokers)

    def nodes(self) -> list[Node]:
        """The controller, then every broker by id."""
        return [self.controller, *range(self.brokers)]

    def weighted(self, options: Mapping[K, int]) -> K:
        """One key of ``options``, drawn with the values as weights."""
        keys = list(options)
        return self.rng.choices(keys, weights=[options[k] for k in keys])[0]


def _take_out(st: Story, broker: int, at: int, how: str) -> None:
    if how == "isolate":
        st.add(at, "isolate", {"nodes": (broker,)})
    elif how == "shutdown":
        st.add(at, "shutdown", {"broker": broker})
    else:
        st.add(at, "crash", {"broker": broker, "lose": how})


def _bring_back(st: Story, broker: int, at: int, how: str) -> None:
    if how == "isolate":
        st.add(at, "heal", {"nodes": (broker,)})
    else:
        st.add(at, "restart", {"broker": broker})


def _ep_last_isr_member(st: Story, t: int) -> int:
    """KIP-966's story: followers leave one by one until the ISR is the leader alone, which then
    crashes losing its page cache (or its disk); everyone comes back."""
    rng = st.rng
    leader, f1, f2 = st.partition()
    how2 = st.weighted({"none": 35, "isolate": 30, "shutdown": 20, "unflushed": 10, "all": 5})
    _take_out(st, f2, t, how2)
    t1 = t + rng.randint(10_000, 13_000)  # f2 fenced (broker.session.timeout.ms 9 s): ISR [leader, f1]
    how1 = st.weighted({"none": 35, "isolate": 35, "shutdown": 20, "unflushed": 10})
    _take_out(st, f1, t1, how1)
    t2 = t1 + rng.randint(10_000, 14_000)  # f1 fenced too: ISR [leader]
    st.add(t2, "crash", {"broker": leader, "lose": st.weighted({"unflushed": 70, "all": 30})})
    end = t2
    for broker, how in ((f1, how1), (f2, how2)):
        if rng.random() < 0.75:  # else the heal phase brings it back
            at = t2 + rng.randint(1_000, 4_000)
            _bring_back(st, broker, at, how)
            end = max(end, at)
    if rng.random() < 0.6:
        at = t2 + rng.randint(4_000, 12_000)
        st.add(at, "restart", {"broker": leader})
        end = max(end, at)
    return end


def _maybe_undo(st: Story, t: int, probability: float, lo_ms: int, hi_ms: int, verb: str, args: StepArgs) -> int:
    """With ``probability``, add ``verb`` (a restart or heal) between lo_ms and hi_ms after ``t``;
    returns when the episode ends."""
    if st.rng.random() < probability:
        at = t + st.rng.randint(lo_ms, hi_ms)
        st.add(at, verb, args)
        return at
    return t


def _ep_crash(st: Story, t: int) -> int:
    """A broker crashes (page cache kept, lost, or disk lost) and usually restarts."""
    broker = st.broker()
    st.add(t, "crash", {"broker": broker, "lose": st.weighted({"none": 45, "unflushed": 40, "all": 15})})
    return _maybe_undo(st, t, 0.8, 3_000, 20_000, "restart", {"broker": broker})


def _ep_shutdown(st: Story, t: int) -> int:
    """A clean (controlled) shutdown, usually followed by a restart."""
    broker = st.broker()
    st.add(t, "shutdown", {"broker": broker})
    return _maybe_undo(st, t, 0.85, 3_000, 15_000, "restart", {"broker": broker})


def _ep_isolate(st: Story, t: int) -> int:
    """A broker, two brokers or the controller lose every link, then heal."""
    rng = st.rng
    kind = st.weighted({"broker": 70, "two": 15, "controller": 15})
    if kind == "broker":
        nodes: tuple[Node, ...] = (st.broker(),)
    elif kind == "two":
        nodes = tuple(sorted(rng.sample(range(st.brokers), 2)))
    else:
        nodes = (st.controller,)
    st.add(t, "isolate", {"nodes": nodes})
    return _maybe_undo(st, t, 0.8, 4_000, 20_000, "heal", {"nodes": nodes})


def _ep_partition(st: Story, t: int) -> int:
    """The controller and brokers split into two groups that cannot reach each other."""
    rng = st.rng
    nodes = st.nodes()
    rng.shuffle(nodes)
    k = rng.randint(1, len(nodes) - 1)
    groups = (tuple(_node_order(nodes[:k])), tuple(_node_order(nodes[k:])))
    st.add(t, "partition", {"groups": groups})
    if rng.random() < 0.7:
        at = t + rng.randint(5_000, 20_000)
        st.add(at, "heal", {"nodes": None})
        return at
    return t


def _ep_cut(st: Story, t: int) -> int:
    """A one-way cut: a follower's fetches to its leader, or a broker's requests to the controller."""
    rng = st.rng
    src: Node
    dst: Node
    if rng.random() < 0.7:
        leader, *followers = st.partition()
        src, dst = rng.choice(followers), leader
    else:
        src, dst = st.broker(), st.controller
        if rng.random() < 0.3:
            src, dst = dst, src
    st.add(t, "cut", {"from": src, "to": dst})
    if rng.random() < 0.6:
        at = t + rng.randint(5_000, 20_000)
        st.add(at, "heal", {"nodes": (src,)})
        return at
    return t


def _ep_hold_alter_partition(st: Story, t: int) -> int:
    """AlterPartition requests from a leader are held; a follower leaves so the leader asks for a
    shrink; the requests are released later (KIP-497's maximal ISR, partition epochs)."""
    rng = st.rng
    leader, *followers = st.partition()
    src = leader if rng.random() < 0.8 else None
    st.add(t, "hold", {"api": "AlterPartition", "from": src, "to": st.controller})
    st.holds = True
    follower = rng.choice(followers)
    at = t + rng.randint(500, 3_000)
    how = st.weighted({"cut": 50, "none": 30, "unflushed": 20})
    if how == "cut":
        st.add(at, "cut", {"from": follower, "to": leader})
    else:
        st.add(at, "crash", {"broker": follower, "lose": how})
    end = at
    if rng.random() < 0.75:
        end = at + rng.randint(6_000, 15_000)
        st.add(end, "release", {"api": "AlterPartition", "from": src, "to": st.controller})
    if rng.random() < 0.6:
        back = end + rng.randint(1_000, 8_000)
        if how == "cut":
            st.add(back, "heal", {"nodes": (follower,)})
        else:
            st.add(back, "restart", {"broker": follower})
        end = back
    return end


def _ep_stale_alter_partition(st: Story, t: int) -> int:
    """KIP-903's race (KAFKA-14617): follower f falls out of the ISR, catches up, and the leader's
    AlterPartition adding it back is held; f then crashes losing its disk, restarts (new broker
    epoch) and is kept from fetching; the stale request is released, and the leader leaves (clean
    shutdown, or a crash that keeps its page cache) so the controller elects from the ISR. Without
    broker epochs the empty f joins the ISR and can be elected."""
    rng = st.rng
    leader, follower, _other = st.partition()
    st.add(t, "cut", {"from": follower, "to": leader})
    t1 = t + st.lag_ms + rng.randint(3_000, 5_000)  # the leader shrank the ISR without f
    st.add(t1, "hold", {"api": "AlterPartition", "from": leader, "to": st.controller})
    st.holds = True
    st.add(t1 + 200, "heal", {"nodes": (follower,)})  # f catches up: the leader asks to add it back
    # Its fetch lost to the cut times out (replica.socket.timeout.ms), it fetches again and catches up.
    t2 = t1 + st.socket_timeout_ms + rng.randint(2_000, 4_000)
    st.add(t2, "crash", {"broker": follower, "lose": st.weighted({"all": 70, "unflushed": 30})})
    t3 = t2 + rng.randint(10_000, 13_000)  # fenced by then; it registers again with a new epoch
    st.add(t3, "restart", {"broker": follower})
    st.add(t3, "cut", {"from": follower, "to": leader})
    t4 = t3 + rng.randint(3_000, 5_000)
    st.add(t4, "release", {"api": "AlterPartition", "from": leader, "to": st.controller})
    t5 = t4 + rng.randint(1_500, 3_000)
    if rng.random() < 0.7:
        st.add(t5, "shutdown", {"broker": leader})
    else:
        st.add(t5, "crash", {"broker": leader, "lose": "none"})
    t6 = t5 + rng.randint(3_000, 8_000)
    st.add(t6, "heal", {"nodes": (follower,)})
    st.add(t6, "restart", {"broker": leader})
    return t6


def _ep_controller_failover(st: Story, t: int) -> int:
    """The controller fails over (metadata log replayed), sometimes with a broker crash right after."""
    rng = st.rng
    st.add(t, "restart_controller", {})
    if rng.random() < 0.4:
        at = t + rng.randint(500, 3_000)
        broker = st.broker()
        st.add(at, "crash", {"broker": broker, "lose": st.weighted({"none": 50, "unflushed": 50})})
        back = at + rng.randint(3_000, 12_000)
        st.add(back, "restart", {"broker": broker})
        return back
    return t


def _ep_disk_full(st: Story, t: int) -> int:
    """A broker's file system fills up (ENOSPC on every write) for a few seconds or longer; its log
    directory goes offline at its next write. An operator usually restarts it once there is space."""
    rng = st.rng
    broker = st.broker()
    for_ms = rng.randint(1_000, 5_000) if rng.random() < 0.6 else rng.randint(15_000, 40_000)
    st.add(t, "disk_full", {"broker": broker, "for_ms": for_ms})
    end = t + for_ms
    if rng.random() < 0.85:
        at = end + rng.randint(2_000, 6_000)
        st.add(at, "shutdown", {"broker": broker})
        end = at + rng.randint(1_000, 4_000)
        st.add(end, "restart", {"broker": broker})
    return end


def _corrupt_args(st: Story, broker: int, partition: int, at: int | str | None = None) -> StepArgs:
    """A ``corrupt`` step's arguments; ``at`` None draws where (the middle batch, the last one or an
    offset)."""
    rng = st.rng
    if at is None:
        at = st.weighted({"middle": 50, "last": 30, "offset": 20})
        if at == "offset":
            at = rng.randint(0, 500)
    return {"broker": broker, "partition": f"{TOPIC}-{partition}", "at": at, "bytes": rng.randint(1, 3)}


def _ep_corrupt(st: Story, t: int) -> int:
    """A stopped broker's replica log gets flipped bytes (a bad block, a bit flip on the medium); it
    restarts and its recovery drops the damaged batch and everything after it."""
    rng = st.rng
    broker = st.broker()
    held = [p for p, replicas in enumerate(st.assignment) if broker in replicas]
    if not held:
        broker = st.partition()[0]
        held = [p for p, replicas in enumerate(st.assignment) if broker in replicas]
    how = st.weighted({"shutdown": 75, "none": 25})
    _take_out(st, broker, t, how)
    at = t + rng.randint(1_000, 3_000)
    st.add(at, "corrupt", _corrupt_args(st, broker, rng.choice(held)))
    end = at + rng.randint(2_000, 8_000)
    st.add(end, "restart", {"broker": broker})
    return end


def _ep_corrupted_last_replica(st: Story, t: int) -> int:
    """Issue 23's second finding: every replica of a partition stops cleanly, the leader last; the
    leader's log is corrupted in the middle and it restarts first."""
    rng = st.rng
    index = rng.randrange(len(st.assignment))
    leader, a, b = st.assignment[index]
    st.add(t, "shutdown", {"broker": b})
    t1 = t + rng.randint(2_000, 5_000)
    st.add(t1, "shutdown", {"broker": a})
    t2 = t1 + rng.randint(2_000, 5_000)
    st.add(t2, "shutdown", {"broker": leader})
    t3 = t2 + rng.randint(500, 2_000)
    st.add(t3, "corrupt", _corrupt_args(st, leader, index, at="middle"))
    t4 = t3 + rng.randint(1_000, 4_000)
    st.add(t4, "restart", {"broker": leader})
    back = [a, b]
    rng.shuffle(back)
    t5 = t4 + rng.randint(3_000, 8_000)
    st.add(t5, "restart", {"broker": back[0]})
    t6 = t5 + rng.randint(1_000, 4_000)
    st.add(t6, "restart", {"broker": back[1]})
    return t6


def _leaderless_by_unclean_shutdowns(st: Story, t: int, how_a: str, lose_leader: str) -> tuple[int, int, int, int]:
    """The common start of the unclean-recovery stories: A leaves at ``t`` (``how_a``), B crashes
    (``lose: none``) 10-13 s later, L crashes (``lose_leader``) 10-13 s after that. Returns
    (L, A, B, the time of L's crash)."""
    rng = st.rng
    leader, a, b = st.partition()
    _take_out(st, a, t, how_a)
    t1 = t + rng.randint(10_000, 13_000)  # A fenced (broker.session.timeout.ms 9 s): ISR [L, B]
    st.add(t1, "crash", {"broker": b, "lose": "none"})
    t2 = t1 + rng.randint(10_000, 13_000)  # B fenced: ISR [L], ELR [B]
    st.add(t2, "crash", {"broker": leader, "lose": lose_leader})
    return leader, a, b, t2


def _ep_longest_log_in_last_known_elr(st: Story, t: int) -> int:
    """KIP-966's unclean recovery: ISR and ELR emptied by unclean shutdowns; B, in LastKnownELR, kept
    its whole log while the last known leader L lost its page cache or its disk; L restarts first.
    Level ``elr`` elects L (losing acknowledged records), level ``urm`` (Balanced) elects B."""
    rng = st.rng
    how_a = st.weighted({"none": 40, "isolate": 25, "shutdown": 15, "unflushed": 15, "all": 5})
    leader, a, b, t2 = _leaderless_by_unclean_shutdowns(
        st, t, how_a, st.weighted({"unflushed": 55, "all": 45}))
    t3 = t2 + rng.randint(10_000, 13_000)  # L fenced: ISR [], ELR [B, L]
    st.add(t3, "restart", {"broker": leader})  # L -> LastKnownELR; B (fenced) still in the ELR
    t4 = t3 + rng.randint(2_000, 6_000)
    st.add(t4, "restart", {"broker": b})  # B -> LastKnownELR: ISR and ELR empty
    return _maybe_undo_how(st, a, how_a, t4, 0.6, 1_000, 4_000)


def _maybe_undo_how(st: Story, broker: int, how: str, t: int, probability: float, lo_ms: int,
                    hi_ms: int) -> int:
    """With ``probability``, bring ``broker`` back (heal or restart, per ``how`` it left) between lo_ms
    and hi_ms after ``t``; returns when the episode ends."""
    if st.rng.random() < probability:
        at = t + st.rng.randint(lo_ms, hi_ms)
        _bring_back(st, broker, at, how)
        return at
    return t


def _ep_fenced_only_elr(st: Story, t: int) -> int:
    """The ISR empties by fencing (isolation, clean shutdown or a crash that keeps the page cache):
    only fenced ELR members remain for 5-15 s; then they return in random order."""
    rng = st.rng
    leader, a, b = st.partition()
    how_a = st.weighted({"isolate": 40, "shutdown": 30, "none": 30})
    _take_out(st, a, t, how_a)
    t1 = t + rng.randint(10_000, 13_000)  # ISR [L, B]
    how_b = st.weighted({"isolate": 55, "shutdown": 20, "none": 25})
    _take_out(st, b, t1, how_b)
    t2 = t1 + rng.randint(10_000, 13_000)  # ISR [L], ELR [B]
    how_l = st.weighted({"isolate": 55, "shutdown": 20, "none": 25})
    _take_out(st, leader, t2, how_l)
    t3 = t2 + rng.randint(14_000, 24_000)  # ISR [], ELR [B, L], both fenced, for a while
    back = [(b, how_b), (leader, how_l)]
    rng.shuffle(back)
    _bring_back(st, back[0][0], t3, back[0][1])
    t4 = t3 + rng.randint(1_000, 5_000)
    _bring_back(st, back[1][0], t4, back[1][1])
    return max(t4, _maybe_undo_how(st, a, how_a, t3, 0.6, 3_000, 8_000))


def _ep_stale_replica_log_info(st: Story, t: int) -> int:
    """A GetReplicaLogInfo answer held across a disk-replacing restart (KIP-966's URM must reject an
    answer from a broker that restarted since it answered, and ask again)."""
    rng = st.rng
    how_a = st.weighted({"isolate": 45, "shutdown": 25, "none": 30})
    leader, a, b, t2 = _leaderless_by_unclean_shutdowns(st, t, how_a, st.weighted({"none": 50, "unflushed": 50}))
    held, replaced = (leader, b) if rng.random() < 0.5 else (b, leader)
    hold: StepArgs
    if rng.random() < 0.6:  # hold the question to `held`: `replaced`'s answer waits in the controller
        hold = {"api": "GetReplicaLogInfo", "from": st.controller, "to": held}
    else:  # hold `replaced`'s answer in the network
        hold = {"api": "GetReplicaLogInfo", "from": replaced, "to": st.controller}
    st.add(t2 + rng.randint(2_000, 6_000), "hold", hold)
    t3 = t2 + rng.randint(10_000, 13_000)
    st.add(t3, "restart", {"broker": leader})
    t4 = t3 + rng.randint(1_000, 3_000)
    st.add(t4, "restart", {"broker": b})  # ISR and ELR empty: the URM asks every replica
    t5 = t4 + rng.randint(3_000, 5_000)
    st.add(t5, "crash", {"broker": replaced, "lose": "all"})
    t6 = t5 + rng.randint(1_000, 3_000)
    # Empty log. The new incarnation registers (new broker epoch) only once the old one's session has
    # expired (broker.session.timeout.ms 9 s after its last heartbeat): DUPLICATE_BROKER_REGISTRATION before.
    st.add(t6, "restart", {"broker": replaced})
    if rng.random() < 0.75:  # released after the new registration: a stale answer the controller can detect
        t7 = t5 + rng.randint(12_000, 15_000)
    else:  # released before it: the controller cannot know yet that the answer is stale
        t7 = t6 + rng.randint(2_000, 5_000)
    st.add(t7, "release", dict(hold))
    return _maybe_undo_how(st, a, how_a, t7, 0.6, 1_000, 4_000)


#: Episode name -> (weight, builder(story, start ms) -> end ms, exclusive). An exclusive episode is
#: a precise race: it never overlaps another episode.
EPISODES: dict[str, Episode] = {
    "last_isr_member_loses_data": (30, _ep_last_isr_member, True),
    "crash": (20, _ep_crash, False),
    "shutdown": (10, _ep_shutdown, False),
    "isolate": (10, _ep_isolate, False),
    "partition": (8, _ep_partition, False),
    "cut": (8, _ep_cut, False),
    "stale_alter_partition": (8, _ep_stale_alter_partition, True),
    "hold_alter_partition": (7, _ep_hold_alter_partition, False),
    "controller_failover": (7, _ep_controller_failover, False),
    "longest_log_in_last_known_elr": (12, _ep_longest_log_in_last_known_elr, True),
    "fenced_only_elr": (8, _ep_fenced_only_elr, True),
    "stale_replica_log_info": (6, _ep_stale_replica_log_info, True),
    "disk_full": (10, _ep_disk_full, False),
    "corrupt": (8, _ep_corrupt, False),
    "corrupted_last_replica": (6, _ep_corrupted_last_replica, True),
}


# ------------------------------------------------------------------------- a controller quorum (issue 33)
#: The controllers of a story with a quorum (``cluster: {controllers: 3}``).
QUORUM_IDS: tuple[int, ...] = (3000, 3001, 3002)


def _q_active_crash(st: Story, t: int) -> int:
    """The active controller crashes (keeping its disk, its page cache or nothing) and restarts."""
    lose = st.weighted({"none": 45, "unflushed": 40, "all": 15})
    st.add(t, "crash", {"controller": ACTIVE_CONTROLLER, "lose": lose})
    back = t + st.rng.randint(3_000, 12_000)
    st.add(back, "restart", {"controller": ACTIVE_CONTROLLER})
    return back


def _q_active_isolated(st: Story, t: int) -> int:
    """The active controller loses every link: it resigns by check-quorum, the others elect a leader."""
    st.add(t, "isolate", {"nodes": (ACTIVE_CONTROLLER,)})
    back = t + st.rng.randint(4_000, 15_000)
    st.add(back, "heal", {"nodes": (ACTIVE_CONTROLLER,)})
    return back


def _q_minority_lost(st: Story, t: int) -> int:
    """One controller (active or not) crashes and restarts: a minority, no effect on metadata."""
    c = st.rng.choice(QUORUM_IDS)
    st.add(t, "crash", {"controller": c, "lose": st.weighted({"none": 60, "unflushed": 40})})
    back = t + st.rng.randint(3_000, 20_000)
    st.add(back, "restart", {"controller": c})
    return back


def _q_majority_lost(st: Story, t: int) -> int:
    """Two controllers crash: no metadata is written until one is back (outside the quorum's budget)."""
    a, b = st.rng.sample(QUORUM_IDS, 2)
    st.add(t, "crash", {"controller": a, "lose": "none"})
    t2 = t + st.rng.randint(500, 3_000)
    st.add(t2, "crash", {"controller": b, "lose": "none"})
    back = t2 + st.rng.randint(5_000, 15_000)
    st.add(back, "restart", {"controller": a})
    st.add(back + st.rng.randint(1_000, 5_000), "restart", {"controller": b})
    return back


def _q_voter_disk_loss(st: Story, t: int) -> int:
    """A controller loses its disk and is formatted again: at kraft.version 0 it votes with an empty log
    (static_quorum_disk_loss, outside the budget); at 1 it is an observer until it joins again (auto-join)."""
    c = st.rng.choice(QUORUM_IDS)
    st.add(t, "crash", {"controller": c, "lose": "all"})
    back = t + st.rng.randint(2_000, 8_000)
    st.add(back, "restart", {"controller": c})
    return back


#: Quorum episode name -> (weight, builder): one of them is drawn for each story with a controller quorum.
QUORUM_EPISODES: dict[str, tuple[int, Build]] = {
    "active_controller_crash": (30, _q_active_crash),
    "active_controller_isolated": (20, _q_active_isolated),
    "controller_minority_lost": (20, _q_minority_lost),
    "controller_majority_lost": (10, _q_majority_lost),
    "controller_disk_loss": (20, _q_voter_disk_loss),
}


def _s_broker_down_across_snapshot(st: Story, t: int) -> int:
    """A replica of ``doomed`` (``st.assignment``: that topic's replicas) stops (a clean shutdown 70 %, a crash
    losing nothing 30 %); 1-3 s later ``doomed`` is deleted, and 30-50 config changes of ``t`` (``max.message.bytes``
    above anything produced) write enough metadata for two snapshots and a cleaning past the deletion; the broker
    restarts 3-10 s after them and must keep ``doomed-0`` as ``-stray``, never lose a record of ``t``."""
    b = st.rng.choice(st.assignment[0])
    how = st.weighted({"shutdown": 70, "none": 30})
    _take_out(st, b, t, how)
    back = _metadata_churn(st, t + st.rng.randint(1_000, 3_000)) + st.rng.randint(3_000, 10_000)
    _bring_back(st, b, back, how)
    return back


def _metadata_churn(st: Story, at: int) -> int:
    """``doomed`` deleted at ``at``, then 30-50 config changes of ``t`` (``max.message.bytes`` above anything
    produced): enough metadata for two snapshots and a cleaning past the deletion. Returns the last one's time."""
    st.add(at, "delete_topic", {"topic": DOOMED})
    for i in range(st.rng.randint(30, 50)):
        at += st.rng.randint(50, 150)
        st.add(at, "alter_config", {"topic": TOPIC, "config": {"max.message.bytes": str(2_000_000 + i)}})
    return at


def _s_voter_down_across_snapshot(st: Story, t: int) -> int:
    """A controller of the quorum (any of the three: the active one 1 time in 3) crashes losing nothing; 1-3 s
    later ``doomed`` is deleted and the metadata churns (:func:`_metadata_churn`) while the two others snapshot and
    clean past the deletion; it restarts 3-10 s after, behind the leader's log start: it must catch up by
    FetchSnapshot (KIP-630) and the quorum lose nothing committed."""
    c = st.rng.choice(QUORUM_IDS)
    st.add(t, "crash", {"controller": c, "lose": "none"})
    back = _metadata_churn(st, t + st.rng.randint(1_000, 3_000)) + st.rng.randint(3_000, 10_000)
    st.add(back, "restart", {"controller": c})
    return back


#: Snapshot episode name -> (weight, builder): one of them is drawn for each story that crosses metadata snapshots
#: (issue 34; the builder's Story has ``doomed``'s replicas as its assignment). The ``voter_`` ones need a quorum.
SNAPSHOT_EPISODES: dict[str, tuple[int, Build]] = {
    "broker_down_across_snapshot": (100, _s_broker_down_across_snapshot),
    "voter_down_across_snapshot": (100, _s_voter_down_across_snapshot),
}
