"""The campaign's fault generator: one seed, one failure story (a :class:`~kraftlog.scenario.Scenario`).

``generate(seed)`` draws, from ``random.Random(f"campaign:{seed}")`` only (never the global ``random``
module or ``hash()``), a random cluster and a fault schedule:

* cluster: 3 to 5 brokers, one topic ``t`` with 1 to 3 partitions, RF 3 with an explicit random
  assignment (preferred leader first), ``min.insync.replicas`` 2, ``replica.lag.time.max.ms``
  5 s or 10 s and ``replica.socket.timeout.ms`` 3 s or 5 s (so that lag-driven ISR shrinks and
  recoveries after a heal happen inside a short story); ``sim.writeback`` ``never`` (45 %),
  ``30s`` (40 %) or ``10s`` (15 %); network delay 1-5 ms or 1-20 ms;
* workload: an ``acks=all`` producer (every 100 or 200 ms), an ``acks=1`` producer (every 200 or
  500 ms) and a consumer (``reset`` earliest or none), all running from t=0 over every partition;
* faults: one to three *episodes* (:data:`EPISODES`), each a short sequence of steps with absolute
  ``at`` times, drawn with weights from:

  - KIP-966's story: the two followers of a partition leave one after the other (crash, isolation or
    clean shutdown), so the ISR shrinks to the leader, which then crashes losing its page cache or
    its disk; everyone comes back;
  - KIP-903's race (KAFKA-14617): a follower falls behind, the leader's AlterPartition adding it back
    is held, the follower crashes losing its disk and returns with a new broker epoch, the stale
    request is released and the leader leaves;
  - a broker crash (``lose`` none / unflushed / all) and restart; a clean shutdown and restart; an
    isolation (a broker, two brokers or the controller); a network partition into two groups; a
    one-way cut; AlterPartition requests held on their way to the controller while a follower
    leaves, then released; a controller failover (sometimes followed by a crash);
  - stories where KIP-966's unclean recovery matters (level ``urm``; below it the same steps run and
    the controller falls back on the last known leader), each on one partition with leader L and
    followers A and B (its replica list, preferred leader first):

    - ``longest_log_in_last_known_elr`` — ISR and ELR emptied by unclean shutdowns, with one
      LastKnownELR member holding the longest log: A leaves (crash of any ``lose`` mode, isolation or
      clean shutdown), so the ISR shrinks to [L, B] (still at min ISR 2: A never enters the ELR);
      10-13 s later B crashes with ``lose: none`` (it keeps every acknowledged record): ISR [L],
      ELR [B]; 10-13 s later (B fenced) L crashes losing its page cache (``unflushed``, 55 %) or its disk
      (``all``, 45 %): ISR [], ELR [B, L], LastKnownLeader L. 10-13 s later L restarts first (an
      unclean shutdown: L leaves the ELR for LastKnownELR; B, fenced, is still in the ELR, so nobody is
      elected), then B 2-6 s later (into LastKnownELR too: ISR and ELR are empty). Level ``elr`` then
      elects the last known leader L and loses the acknowledged records L lost; level ``urm``
      (Balanced) waits for both LastKnownELR members, and for A or ``unclean.recovery.timeout.ms``, and
      elects B, the longest log. A comes back 1-4 s after B (60 %) or in the heal phase. 2 or 3 data-losing shutdowns: always beyond the budget;
    - ``fenced_only_elr`` — the ISR empties by fencing, so only fenced ELR members remain: A leaves
      (isolation 40 %, clean shutdown 30 %, crash ``lose: none`` 30 %), 10-13 s later B leaves and
      10-13 s later L leaves (each by isolation 55 %, clean shutdown 20 %, crash ``lose: none`` 25 %);
      once L is fenced the ISR is [] and the ELR [B, L], both fenced, for 5-15 s (the return starts
      14-24 s after L left); then B and L return in random order 1-5 s apart (heal or restart: an
      isolated or cleanly stopped member is still in the ELR and is elected; a crashed one moves to
      LastKnownELR). A returns 3-8 s after the first (60 %) or in the heal phase. No page cache or disk
      is lost, so no level should lose an acknowledged record; within the budget unless two or more
      of the three leave by a crash;
    - ``stale_replica_log_info`` — a GetReplicaLogInfo answer held across a disk-replacing restart: A
      leaves (isolation 45 %, clean shutdown 25 %, crash ``lose: none`` 30 %), 10-13 s later B crashes
      (``lose: none``), 10-13 s later L crashes (``lose`` none or unflushed): ISR and ELR are empty
      once both restart. One of L and B is *held*, the other *replaced*. 2-6 s after L's crash
      GetReplicaLogInfo is held either from the controller to the held replica (60 %: the replaced
      replica's answer reaches the controller first and sits there) or from the replaced replica to
      the controller (40 %: its answer sits in the network). 10-13 s after L's crash L restarts, B 1-3 s
      later (the Unclean Recovery Manager queries the replicas); 3-5 s later the replaced replica
      crashes with ``lose: all`` and restarts 1-3 s after that with an empty log (its new incarnation
      registers, with a new broker epoch, once the old one's session expired, about 9 s after the
      crash). The held GetReplicaLogInfo messages are released 12-15 s after that crash (75 %: the
      controller knows of the restart, so the replaced replica's answer is detectably stale and must be
      rejected and asked again, or the controller elects an empty log), or 2-5 s after the restart
      (25 %: before the new registration, when nothing tells the controller the answer is stale).
      A returns 1-4 s after the release (60 %) or in the heal phase. Always beyond the budget.

  - storage faults (issue 23): ``disk_full`` — a broker's file system is full for 1-5 s (60 %) or
    15-40 s (40 %): its next write fails, its log directory goes offline and the controller moves its
    leaderships; 2-6 s after the disk has space again an operator restarts it (a clean shutdown, then a
    restart, 85 %; else it stays offline to the end, serving nothing); ``corrupt`` — a broker stops
    (clean shutdown 75 %, crash keeping its page cache 25 %), bytes of its replica of one partition are
    flipped (the batch holding the middle offset, the last batch, or one at a random offset of the
    first 500), and it restarts 2-8 s later; ``corrupted_last_replica`` (the story of issue 23's second
    finding, exclusive) — the three replicas of a partition stop cleanly one after another, the leader
    L last; L's log is corrupted in the middle; L restarts first, the others 3-8 s later. Below KIP-966
    L, the last ISR member, is elected with half its log and the others truncate to it; with the ELR
    its load's drop makes its registration unclean and a clean ELR member is elected.

  The KIP stories (the two above, the three unclean-recovery stories and the corrupted last replica)
  are exclusive (they never overlap another episode); the others may overlap.
  Steps that would do nothing (crashing a broker that is down, restarting one that is up) are
  dropped, so the schedule text is what happens;
* a heal-and-settle phase: every link healed, every held message released, every stopped broker
  restarted one by one, then a ``run_for`` of 20-30 s of simulated time so that a leader can return
  and the ISR refill (a step, so that steps that took longer than planned never shorten it).

A story lasts about 30-150 s of simulated time (78 s on average). The scenario carries ``seed`` = the
campaign seed and no ``level``: the same seed is the same story at every level, so levels are
compared on identical inputs. ``parse_scenario(dump_scenario(generate(s))) == generate(s)``, so a
failing story exported with :func:`~kraftlog.scenario.dump_scenario` replays with the same
history digest.

Fault budget (DESIGN.md: no acknowledged acks=all record may be lost "within the fault budget: at
most min ISR - 1 data-losing shutdowns"; KIP-966: "elect a leader without data loss or HWM moving
backward when we only have min ISR - 1 unclean shutdowns"). The rule used here:

* a *data-losing shutdown* is an unclean shutdown of a replica: an effective ``crash`` (the broker
  was up; crashing a stopped broker is a no-op), whatever its ``lose`` mode. A clean ``shutdown``,
  isolations, partitions, cuts, held requests, controller failovers and a crash of the controller
  (``crash: {node: controller}``, even ``lose: all``: it refuses to start unformatted, so no replica
  loses anything) are not;
* a ``corrupt`` step counts as one data-losing fault of the partition it damages (a replica whose log
  the next load truncates), unless the damaged broker's stop was itself a crash not yet followed by a
  restart (the same replica is counted once); a ``disk_full`` counts as none: the broker acknowledges
  nothing it did not write and its directory comes back, whole, with a restart;
* ``lose: none`` counts too. A broker that restarts without its clean-shutdown file cannot know what
  its page cache lost, so the protocol (KIP-966's unclean-shutdown detection, as Kafka does) must
  treat every unclean shutdown as possibly data-losing: it leaves the ISR and the ELR and can only
  come back as a leader through LastKnownLeader or an unclean election. A ``lose: none`` crash costs
  the partition the same redundancy as a ``lose: unflushed`` one. Measured on seeds 0-199 before this
  rule was chosen: counting only ``unflushed``/``all`` crashes, level ``elr`` lost records in 32 of 88
  "budget 1" stories, all of them stories where a second replica had crashed with ``lose: none``
  (KIP-966 accepts that loss: with ISR and ELR empty it elects the LastKnownLeader); counting every
  crash, ``elr`` lost nothing within the budget while ``classic`` did;
* the writeback delay does not change the count, for the same reason: whether unflushed appends
  were lost is invisible to the controller. It does change what a crash destroys on the replica
  itself, which :func:`crashes_losing_data` reports separately (``lose: all`` always; ``lose:
  unflushed`` unless ``sim.writeback: 0ms`` or fsync on every append, i.e.
  ``log.flush.interval.messages``/``flush.messages`` = 1; any other delay, ``never`` or ``30s``,
  counts, since whether the broker appended within the delay before the crash is a run-time fact).

A scenario's count is the maximum over its partitions of the data-losing shutdowns of that
partition's replicas (a crash of a broker holding no replica of a partition cannot cost it
anything); for a topic without an explicit assignment every broker is taken as a possible replica.
A partition's budget is its effective min ISR − 1 (effective min ISR = min(``min.insync.replicas``,
RF) from the topic config, else the cluster config, else Kafka's default 1), from the file's initial
configs (``alter_config`` steps are not followed). :func:`within_budget` holds when every partition
is within its own budget.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from .model import CONTROLLER, ClientSpec, Scenario, TopicSpec
from .steps import (
    AlterConfig, Corrupt, Crash, Cut, DiskFull, Elect, Expect, Heal, Hold, Isolate, Partition, Pause, Produce,
    Release, Restart, RestartController, Resume, RunFor, Shutdown, Step, WaitUntil, action_from_args,
)

__all__ = [
    "EPISODES",
    "budget_by_partition",
    "crashes_losing_data",
    "data_losing_shutdowns",
    "describe_schedule",
    "fault_budget",
    "generate",
    "scenario_name",
    "within_budget",
]

TOPIC = "t"
MIN_ISR = 2
RF = 3


def scenario_name(seed: int) -> str:
    """The name of the story generated from ``seed``: ``campaign-seed-<seed>``."""
    return f"campaign-seed-{seed}"


# ------------------------------------------------------------------------------------ generation
@dataclass
class _Story:
    """What an episode needs: the random generator, the cluster shape and the steps drawn so far."""

    rng: random.Random
    brokers: int
    assignment: tuple[tuple[int, ...], ...]
    lag_ms: int = 10_000
    socket_timeout_ms: int = 5_000
    steps: list = field(default_factory=list)  # (at_ms, seq, verb, args)
    holds: bool = False

    def add(self, at_ms: int, verb: str, args: dict) -> None:
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

    def nodes(self) -> list:
        return [CONTROLLER, *range(self.brokers)]

    def weighted(self, options: dict):
        keys = list(options)
        return self.rng.choices(keys, weights=[options[k] for k in keys])[0]


def _take_out(st: _Story, broker: int, at: int, how: str) -> None:
    if how == "isolate":
        st.add(at, "isolate", {"nodes": (broker,)})
    elif how == "shutdown":
        st.add(at, "shutdown", {"broker": broker})
    else:
        st.add(at, "crash", {"broker": broker, "lose": how})


def _bring_back(st: _Story, broker: int, at: int, how: str) -> None:
    if how == "isolate":
        st.add(at, "heal", {"nodes": (broker,)})
    else:
        st.add(at, "restart", {"broker": broker})


def _ep_last_isr_member(st: _Story, t: int) -> int:
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


def _maybe_undo(st: _Story, t: int, probability: float, lo_ms: int, hi_ms: int, verb: str, args: dict) -> int:
    """With ``probability``, add ``verb`` (a restart or heal) between lo_ms and hi_ms after ``t``;
    returns when the episode ends."""
    if st.rng.random() < probability:
        at = t + st.rng.randint(lo_ms, hi_ms)
        st.add(at, verb, args)
        return at
    return t


def _ep_crash(st: _Story, t: int) -> int:
    """A broker crashes (page cache kept, lost, or disk lost) and usually restarts."""
    broker = st.broker()
    st.add(t, "crash", {"broker": broker, "lose": st.weighted({"none": 45, "unflushed": 40, "all": 15})})
    return _maybe_undo(st, t, 0.8, 3_000, 20_000, "restart", {"broker": broker})


def _ep_shutdown(st: _Story, t: int) -> int:
    """A clean (controlled) shutdown, usually followed by a restart."""
    broker = st.broker()
    st.add(t, "shutdown", {"broker": broker})
    return _maybe_undo(st, t, 0.85, 3_000, 15_000, "restart", {"broker": broker})


def _ep_isolate(st: _Story, t: int) -> int:
    """A broker, two brokers or the controller lose every link, then heal."""
    rng = st.rng
    kind = st.weighted({"broker": 70, "two": 15, "controller": 15})
    if kind == "broker":
        nodes: tuple = (st.broker(),)
    elif kind == "two":
        nodes = tuple(sorted(rng.sample(range(st.brokers), 2)))
    else:
        nodes = (CONTROLLER,)
    st.add(t, "isolate", {"nodes": nodes})
    return _maybe_undo(st, t, 0.8, 4_000, 20_000, "heal", {"nodes": nodes})


def _ep_partition(st: _Story, t: int) -> int:
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


def _ep_cut(st: _Story, t: int) -> int:
    """A one-way cut: a follower's fetches to its leader, or a broker's requests to the controller."""
    rng = st.rng
    if rng.random() < 0.7:
        leader, *followers = st.partition()
        src, dst = rng.choice(followers), leader
    else:
        src, dst = st.broker(), CONTROLLER
        if rng.random() < 0.3:
            src, dst = dst, src
    st.add(t, "cut", {"from": src, "to": dst})
    if rng.random() < 0.6:
        at = t + rng.randint(5_000, 20_000)
        st.add(at, "heal", {"nodes": (src,)})
        return at
    return t


def _ep_hold_alter_partition(st: _Story, t: int) -> int:
    """AlterPartition requests from a leader are held; a follower leaves so the leader asks for a
    shrink; the requests are released later (KIP-497's maximal ISR, partition epochs)."""
    rng = st.rng
    leader, *followers = st.partition()
    src = leader if rng.random() < 0.8 else None
    st.add(t, "hold", {"api": "AlterPartition", "from": src, "to": CONTROLLER})
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
        st.add(end, "release", {"api": "AlterPartition", "from": src, "to": CONTROLLER})
    if rng.random() < 0.6:
        back = end + rng.randint(1_000, 8_000)
        if how == "cut":
            st.add(back, "heal", {"nodes": (follower,)})
        else:
            st.add(back, "restart", {"broker": follower})
        end = back
    return end


def _ep_stale_alter_partition(st: _Story, t: int) -> int:
    """KIP-903's race (KAFKA-14617): follower f falls out of the ISR, catches up, and the leader's
    AlterPartition adding it back is held; f then crashes losing its disk, restarts (new broker
    epoch) and is kept from fetching; the stale request is released, and the leader leaves (clean
    shutdown, or a crash that keeps its page cache) so the controller elects from the ISR. Without
    broker epochs the empty f joins the ISR and can be elected."""
    rng = st.rng
    leader, follower, _other = st.partition()
    st.add(t, "cut", {"from": follower, "to": leader})
    t1 = t + st.lag_ms + rng.randint(3_000, 5_000)  # the leader shrank the ISR without f
    st.add(t1, "hold", {"api": "AlterPartition", "from": leader, "to": CONTROLLER})
    st.holds = True
    st.add(t1 + 200, "heal", {"nodes": (follower,)})  # f catches up: the leader asks to add it back
    # Its fetch lost to the cut times out (replica.socket.timeout.ms), it fetches again and catches up.
    t2 = t1 + st.socket_timeout_ms + rng.randint(2_000, 4_000)
    st.add(t2, "crash", {"broker": follower, "lose": st.weighted({"all": 70, "unflushed": 30})})
    t3 = t2 + rng.randint(10_000, 13_000)  # fenced by then; it registers again with a new epoch
    st.add(t3, "restart", {"broker": follower})
    st.add(t3, "cut", {"from": follower, "to": leader})
    t4 = t3 + rng.randint(3_000, 5_000)
    st.add(t4, "release", {"api": "AlterPartition", "from": leader, "to": CONTROLLER})
    t5 = t4 + rng.randint(1_500, 3_000)
    if rng.random() < 0.7:
        st.add(t5, "shutdown", {"broker": leader})
    else:
        st.add(t5, "crash", {"broker": leader, "lose": "none"})
    t6 = t5 + rng.randint(3_000, 8_000)
    st.add(t6, "heal", {"nodes": (follower,)})
    st.add(t6, "restart", {"broker": leader})
    return t6


def _ep_controller_failover(st: _Story, t: int) -> int:
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


def _ep_disk_full(st: _Story, t: int) -> int:
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


def _corrupt_args(st: _Story, broker: int, partition: int, at=None) -> dict:
    rng = st.rng
    if at is None:
        at = st.weighted({"middle": 50, "last": 30, "offset": 20})
        if at == "offset":
            at = rng.randint(0, 500)
    return {"broker": broker, "partition": f"{TOPIC}-{partition}", "at": at, "bytes": rng.randint(1, 3)}


def _ep_corrupt(st: _Story, t: int) -> int:
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


def _ep_corrupted_last_replica(st: _Story, t: int) -> int:
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


def _leaderless_by_unclean_shutdowns(st: _Story, t: int, how_a: str, lose_leader: str):
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


def _ep_longest_log_in_last_known_elr(st: _Story, t: int) -> int:
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


def _maybe_undo_how(st: _Story, broker: int, how: str, t: int, probability: float, lo_ms: int,
                    hi_ms: int) -> int:
    """With ``probability``, bring ``broker`` back (heal or restart, per ``how`` it left) between lo_ms
    and hi_ms after ``t``; returns when the episode ends."""
    if st.rng.random() < probability:
        at = t + st.rng.randint(lo_ms, hi_ms)
        _bring_back(st, broker, at, how)
        return at
    return t


def _ep_fenced_only_elr(st: _Story, t: int) -> int:
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


def _ep_stale_replica_log_info(st: _Story, t: int) -> int:
    """A GetReplicaLogInfo answer held across a disk-replacing restart (KIP-966's URM must reject an
    answer from a broker that restarted since it answered, and ask again)."""
    rng = st.rng
    how_a = st.weighted({"isolate": 45, "shutdown": 25, "none": 30})
    leader, a, b, t2 = _leaderless_by_unclean_shutdowns(st, t, how_a, st.weighted({"none": 50, "unflushed": 50}))
    held, replaced = (leader, b) if rng.random() < 0.5 else (b, leader)
    if rng.random() < 0.6:  # hold the question to `held`: `replaced`'s answer waits in the controller
        hold = {"api": "GetReplicaLogInfo", "from": CONTROLLER, "to": held}
    else:  # hold `replaced`'s answer in the network
        hold = {"api": "GetReplicaLogInfo", "from": replaced, "to": CONTROLLER}
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
EPISODES = {
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

#: No episode starts later than this (ms of scenario time).
LAST_EPISODE_START_MS = 60_000


def _node_order(nodes) -> list:
    """Brokers by id, then the controller."""
    return sorted(nodes, key=lambda n: (isinstance(n, str), n if isinstance(n, int) else 0))


def _effective(steps, brokers: int) -> list:
    """Drop steps that would be no-ops (crash/shutdown of a stopped broker, restart of a running one) or
    refused (a corrupt of a broker that runs: an overlapping episode restarted it)."""
    up = set(range(brokers))
    out = []
    for at, seq, verb, args in steps:
        if verb == "corrupt" and args["broker"] in up:
            continue
        if verb in ("crash", "shutdown"):
            if args["broker"] not in up:
                continue
            up.discard(args["broker"])
        elif verb == "restart":
            if args["broker"] in up:
                continue
            up.add(args["broker"])
        out.append((at, seq, verb, args))
    return out


def generate(seed: int, episodes: Sequence[str] | None = None) -> Scenario:
    """The failure story of campaign seed ``seed`` (deterministic: same seed, same Scenario).

    Returns a Scenario named ``campaign-seed-<seed>`` with ``seed`` = ``seed`` and ``level`` None;
    see the module docstring for what is drawn. Every step has an absolute ``at`` time.

    ``episodes`` (names from :data:`EPISODES`) plays those episodes, in that order, instead of the
    drawn ones (the cluster, workload and timing are still drawn from the seed); for tests and for
    replaying one kind of story. Raises KeyError for an unknown episode name.
    """
    if episodes is not None:
        for name in episodes:
            if name not in EPISODES:
                raise KeyError(f"unknown episode {name!r} (known: {', '.join(EPISODES)})")
    rng = random.Random(f"campaign:{seed}")
    brokers = rng.randint(3, 5)
    partitions = rng.choices((1, 2, 3), weights=(50, 30, 20))[0]
    assignment = tuple(tuple(rng.sample(range(brokers), RF)) for _ in range(partitions))
    writeback_ms = rng.choices((None, 30_000, 10_000), weights=(45, 40, 15))[0]
    delay_max = rng.choices((5, 20), weights=(80, 20))[0]
    lag_ms = rng.choice((5_000, 10_000))
    socket_timeout_ms = rng.choice((3_000, 5_000))
    config = {"min.insync.replicas": str(MIN_ISR), "replica.lag.time.max.ms": str(lag_ms),
              "replica.socket.timeout.ms": str(socket_timeout_ms)}
    clients = (
        ClientSpec("p-all", "producer", TOPIC, None, "all", rng.choice((100, 200)), "none"),
        ClientSpec("p-one", "producer", TOPIC, None, "1", rng.choice((200, 500)), "none"),
        ClientSpec("c1", "consumer", TOPIC, None, "all", 100, rng.choice(("earliest", "none"))),
    )

    st = _Story(rng, brokers, assignment, lag_ms, socket_timeout_ms)
    names = list(EPISODES)
    weights = [EPISODES[n][0] for n in names]
    count = rng.choices((1, 2, 3), weights=(30, 45, 25))[0]
    if episodes is not None:
        count = len(episodes)
    t = rng.randint(3_000, 8_000)
    drawn = []
    previous_end = 0
    previous_exclusive = False
    for i in range(count):
        name = rng.choices(names, weights=weights)[0]
        if episodes is not None:
            name = episodes[i]
        _weight, build, exclusive = EPISODES[name]
        if exclusive or previous_exclusive:
            t = max(t, previous_end + rng.randint(2_000, 5_000))
        if drawn and t > LAST_EPISODE_START_MS:
            break
        drawn.append(name)
        end = build(st, t)
        # The next episode starts after this one began, possibly while it is still going on.
        t, previous_end, previous_exclusive = rng.randint(t + 3_000, end + 6_000), max(previous_end, end), exclusive

    steps = sorted(st.steps, key=lambda s: (s[0], s[1]))
    steps = _effective(steps, brokers)

    # Heal and settle: every link back, held messages released, stopped brokers restarted.
    last = max(at for at, *_ in steps)
    heal_at = last + rng.randint(2_000, 5_000)
    tail = [(heal_at, 0, "heal", {"nodes": None})]
    if st.holds:
        tail.append((heal_at, 1, "release", {"api": None, "from": None, "to": None}))
    up = set(range(brokers))
    for _at, _seq, verb, args in steps:
        if verb in ("crash", "shutdown"):
            up.discard(args["broker"])
        elif verb == "restart":
            up.add(args["broker"])
    down = sorted(set(range(brokers)) - up)
    rng.shuffle(down)
    at = heal_at
    for broker in down:
        at += rng.randint(1_000, 3_000)
        tail.append((at, 2, "restart", {"broker": broker}))
    # The settle is a run_for step, not an absolute ``until``: a step can take longer than planned (a
    # clean shutdown waits up to 30 s for a controller it cannot reach), and an absolute end would then
    # cut the settle short and count records not yet committed again as lost (seed 6383 at elr/urm
    # ended 0.5 s after its new leader was elected, with ISR [leader] below min ISR).
    settle_ms = rng.randint(20_000, 30_000)
    tail.append((at, 3, "run_for", {"duration_ms": settle_ms}))

    step_objs = tuple(
        Step(index=i + 1, line=0, at_ms=at_ms, after_ms=0, action=action_from_args(verb, args))
        for i, (at_ms, _seq, verb, args) in enumerate(steps + tail)
    )
    return Scenario(
        name=scenario_name(seed),
        description=f"kraftlog campaign seed {seed}: episodes {', '.join(drawn)}; then heal and settle.",
        seed=seed,
        level=None,
        brokers=brokers,
        config=config,
        writeback_ms=writeback_ms,
        delay_min_ms=1,
        delay_max_ms=delay_max,
        topics=(TopicSpec(TOPIC, partitions, RF, assignment, {}),),
        clients=clients,
        steps=step_objs,
        until_ms=None,
        source=f"campaign:{seed}",
    )


# ---------------------------------------------------------------------------------- fault budget
def _durable_appends(scenario: Scenario, topic: TopicSpec | None) -> bool:
    """True when no append is ever left unflushed: writeback 0 ms or fsync on every append."""
    if scenario.writeback_ms == 0:
        return True
    if topic is not None and "flush.messages" in topic.config:
        return topic.config["flush.messages"].strip() == "1"
    return scenario.config.get("log.flush.interval.messages", "").strip() == "1"


def _partitions(scenario: Scenario):
    """(name, replica set, effective min ISR, topic spec) per partition."""
    out = []
    for t in scenario.topics:
        rf = t.replication_factor if t.replication_factor is not None else len(t.assignment[0])
        min_isr = int(t.config.get("min.insync.replicas", scenario.config.get("min.insync.replicas", "1")))
        for p in range(t.partitions):
            replicas = frozenset(t.assignment[p]) if t.assignment is not None else frozenset(range(scenario.brokers))
            out.append((f"{t.name}-{p}", replicas, min(min_isr, rf), t))
    if not out:  # no topic: the whole cluster, cluster-level min ISR
        min_isr = int(scenario.config.get("min.insync.replicas", "1"))
        out.append(("*", frozenset(range(scenario.brokers)), min(min_isr, scenario.brokers), None))
    return out


def _crashes(scenario: Scenario) -> list[tuple[int, str]]:
    """(broker, lose) of every effective crash (the broker was up), in step order."""
    up = set(range(scenario.brokers))
    out = []
    for step in scenario.steps:
        match step.action:
            case Crash(node=node) | Restart(node=node) if node == CONTROLLER:
                pass  # the controller's crash or restart: no replica's shutdown
            case Crash(node=broker, lose=lose):
                if broker in up:
                    up.discard(broker)
                    out.append((broker, lose))
            case Shutdown(broker=broker):
                up.discard(broker)
            case Restart(node=broker):
                up.add(broker)
    return out


def _corruptions(scenario: Scenario) -> list[str]:
    """The partition of every ``corrupt`` step that counts as a data-losing fault: its broker was down and
    its stop was not a crash (a crashed replica is counted once, by its crash)."""
    crashed: set = set()
    out = []
    for step in scenario.steps:
        match step.action:
            case Crash(node=node):
                crashed.add(node)
            case Restart(node=node):
                crashed.discard(node)
            case Corrupt(broker=broker, partition=partition) if broker not in crashed:
                out.append(partition)
    return out


def budget_by_partition(scenario: Scenario) -> dict[str, tuple[int, int]]:
    """{partition: (data-losing faults of its replicas, its budget = effective min ISR − 1)}: unclean
    shutdowns of its replicas plus corruptions of its replicas' logs (module docstring)."""
    crashes = _crashes(scenario)
    corrupted = _corruptions(scenario)
    return {name: (sum(1 for b, _lose in crashes if b in replicas) + corrupted.count(name), min_isr - 1)
            for name, replicas, min_isr, _topic in _partitions(scenario)}


def data_losing_shutdowns(scenario: Scenario) -> int:
    """Data-losing faults: the maximum over partitions of the effective crashes, any ``lose`` mode, of
    that partition's replicas, plus the corruptions of their logs (rule in the module docstring; the
    name stays the results column's). An int >= 0."""
    return max(n for n, _budget in budget_by_partition(scenario).values())


def crashes_losing_data(scenario: Scenario) -> int:
    """Crashes that destroy bytes on the crashed replica itself: the maximum over partitions of the
    effective ``lose: all`` crashes, plus ``lose: unflushed`` ones unless every append is durable
    (``sim.writeback: 0ms`` or fsync per append). Informational; the budget uses
    :func:`data_losing_shutdowns`."""
    crashes = _crashes(scenario)
    best = 0
    for _name, replicas, _min_isr, topic in _partitions(scenario):
        durable = _durable_appends(scenario, topic)
        n = sum(1 for b, lose in crashes
                if b in replicas and (lose == "all" or (lose == "unflushed" and not durable)))
        best = max(best, n)
    return best


def fault_budget(scenario: Scenario) -> int:
    """The smallest per-partition budget: effective min ISR − 1 (DESIGN.md's fault budget)."""
    return min(budget for _n, budget in budget_by_partition(scenario).values())


def within_budget(scenario: Scenario) -> bool:
    """True when every partition saw at most (its effective min ISR − 1) data-losing shutdowns."""
    return all(n <= budget for n, budget in budget_by_partition(scenario).values())


# ----------------------------------------------------------------------------------- describing
def _node(n) -> str:
    return "ctl" if n == CONTROLLER else f"b{n}"


def describe_step(step: Step) -> str:
    """One step as short text, e.g. ``12.5s crash b1 (lose unflushed)``."""
    when = f"{step.at_ms / 1000:g}s" if step.at_ms is not None else f"+{step.after_ms / 1000:g}s"
    match step.action:
        case Crash(node, lose):
            what = f"crash {_node(node)} (lose {lose})"
        case Shutdown(node) | Restart(node) | Pause(node) | Resume(node):
            what = f"{step.verb} {_node(node)}"
        case RestartController():
            what = "controller failover"
        case DiskFull(broker, for_ms):
            what = f"disk full {_node(broker)} ({for_ms / 1000:g}s)"
        case Corrupt(broker, partition, at):
            what = f"corrupt {_node(broker)} {partition} at {at}"
        case Isolate(nodes):
            what = "isolate " + ",".join(_node(n) for n in nodes)
        case Partition(groups):
            what = "partition " + " | ".join(",".join(_node(n) for n in g) for g in groups)
        case Cut(src, dst):
            what = f"cut {_node(src)}->{_node(dst)}"
        case Heal(nodes):
            what = "heal " + ("all" if nodes is None else ",".join(_node(n) for n in nodes))
        case Hold(api, src, dst) | Release(api, src, dst):
            what = (f"{step.verb} {api or 'all'} "
                    f"{'*' if src is None else _node(src)}->{'*' if dst is None else _node(dst)}")
        case Produce(topic, partition, count, acks):
            what = f"produce {count} to {topic}-{partition} (acks={acks})"
        case WaitUntil(c) | Expect(c):
            what = f"{step.verb} {c.kind} {c.target}"
        case RunFor(duration_ms):
            what = f"run for {duration_ms / 1000:g}s"
        case Elect(partition, kind):
            what = f"elect {partition} ({kind})"
        case AlterConfig(topic, config):
            what = f"alter_config {topic or 'cluster'} {config}"
        case _:
            what = step.verb
    return f"{when} {what}"


def describe_schedule(scenario: Scenario) -> str:
    """The fault schedule as one line of text: steps joined by ``; ``, then ``until <t>``."""
    text = "; ".join(describe_step(s) for s in scenario.steps)
    if scenario.until_ms is not None:
        text += f"; until {scenario.until_ms / 1000:g}s"
    return text
