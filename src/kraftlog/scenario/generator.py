"""The campaign's fault generator: one seed, one failure story (a :class:`~kraftlog.scenario.Scenario`).

``generate(seed)`` draws, from ``random.Random(f"campaign:{seed}")`` only (never the global ``random``
module or ``hash()``), a random cluster and a fault schedule:

* cluster: 3 to 5 brokers, one topic ``t`` with 1 to 3 partitions, RF 3 with an explicit random
  assignment (preferred leader first), ``min.insync.replicas`` 2, ``replica.lag.time.max.ms``
  5 s or 10 s and ``replica.socket.timeout.ms`` 3 s or 5 s (so that lag-driven ISR shrinks and
  recoveries after a heal happen inside a short story); ``sim.writeback`` ``never`` (45 %),
  ``30s`` (40 %) or ``10s`` (15 %); network delay 1-5 ms or 1-20 ms;
* workload: an ``acks=all`` producer (every 100 or 200 ms), an ``acks=1`` producer (every 200 or
  500 ms) and a consumer (``reset`` earliest or none) of group ``g1``, committing every second and restarted
  once or twice (``restart_client``), all running from t=0 over every partition; the group's offsets live in
  ``__consumer_offsets`` with 3 partitions, RF 3, an explicit random assignment, counted in the fault budget
  like t's partitions (drawn from ``random.Random(f"campaign-groups:{seed}")``, so the rest of a seed's story
  is what it was before consumer groups);
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
      elects B, the longest log. A comes back 1-4 s after B (60 %) or in the heal phase. 2 or 3 data-losing
      shutdowns: always beyond the budget;
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
* a controller quorum (issue 33), drawn from ``random.Random(f"campaign-quorum:{seed}")`` so that every other
  story is what it was: 30 % of the stories (:data:`QUORUM_SHARE`) run three controllers (ids 3000-3002) at
  ``kraft_version`` 0 or 1 (50 % each; at 1 with ``controller.quorum.auto.join.enable``), their episodes name
  the controller ``active`` (an isolation, cut or hold of "the controller" is of the active one), and one
  *quorum episode* (:data:`~kraftlog.scenario.episodes.QUORUM_EPISODES`) starts 5-60 s in:

  - ``active_controller_crash`` (30) — the active controller crashes (``lose`` none 45 %, unflushed 40 %,
    all 15 %) and restarts 3-12 s later;
  - ``active_controller_isolated`` (20) — the active controller is isolated for 4-15 s (check-quorum makes it
    resign; the others elect a leader);
  - ``controller_minority_lost`` (20) — one controller crashes (none 60 %, unflushed 40 %), back 3-20 s later;
  - ``controller_majority_lost`` (10) — two controllers crash 0.5-3 s apart and return 5-20 s later: no
    metadata meanwhile, outside the quorum's budget;
  - ``controller_disk_loss`` (20) — a controller loses its disk and returns 2-8 s later, formatted again: at
    kraft.version 0 a voter with an empty log (``static_quorum_disk_loss``: outside the budget), at 1 an
    observer that joins the voters again.

  Stopped controllers restart in the heal phase.
* metadata snapshots (issue 34), drawn from ``random.Random(f"campaign-snapshots:{seed}")`` so that every other
  story is what it was: 30 % of the stories (:data:`SNAPSHOT_SHARE`; with one controller or a quorum) write a
  snapshot every 1 or 2 KiB of metadata records (``metadata.log.max.record.bytes.between.snapshots``), roll 2 KiB
  segments and keep 2 KiB (``metadata.max.retention.bytes``), cleaned every second
  (``kraftlog.metadata.log.cleanup.interval.ms``), so that the controllers' log start moves past what a stopped
  broker or voter last fetched; they add a topic ``doomed`` (1 partition, RF 3) with 20 acks=all records produced
  at 1 s, and play one *snapshot episode* (:data:`~kraftlog.scenario.episodes.SNAPSHOT_EPISODES`) starting 5-60 s
  in (with one controller always the first; with a quorum either, 50/50):

  - ``broker_down_across_snapshot`` — a replica of ``doomed`` stops (clean shutdown 70 %, crash losing nothing
    30 %), ``doomed`` is deleted 1-3 s later and 30-50 config changes of ``t`` follow; the broker restarts 3-10 s
    after them, behind the controller's log start: it fetches the controller's snapshot and keeps ``doomed-0`` as
    ``-stray``. ``doomed``'s records go with the topic (not counted as lost).
  - ``voter_down_across_snapshot`` — a controller of the quorum crashes losing nothing, ``doomed`` is deleted and
    the metadata churns the same way; it restarts 3-10 s after, behind the leader's log start, and catches up by
    FetchSnapshot (KIP-630).
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
  loses anything) are not; neither is a quorum controller's crash, which has a budget of its own
  (:func:`quorum_within_budget`: at most ⌊(V−1)/2⌋ voters down at a time, no voter disk loss at
  kraft.version 0);
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
from collections.abc import Mapping, Sequence

from .episodes import (
    DOOMED,
    EPISODES,
    MIN_ISR,
    QUORUM_EPISODES,
    QUORUM_IDS,
    RF,
    SNAPSHOT_EPISODES,
    TOPIC,
    DrawnStep,
    Story,
)
from .model import ACTIVE_CONTROLLER, CONTROLLER, ClientSpec, Scenario, TopicSpec, is_controller
from .steps import (
    AlterConfig,
    Corrupt,
    Crash,
    Cut,
    DiskFull,
    Elect,
    Expect,
    Heal,
    Hold,
    Isolate,
    Partition,
    Pause,
    Produce,
    Release,
    Restart,
    RestartClient,
    RestartController,
    Resume,
    RunFor,
    Shutdown,
    Step,
    WaitUntil,
    action_from_args,
)

__all__ = [
    "EPISODES",
    "budget_by_partition",
    "crashes_losing_data",
    "data_losing_shutdowns",
    "describe_schedule",
    "fault_budget",
    "quorum_within_budget",
    "static_quorum_disk_loss",
    "voters_down_at_most",
    "generate",
    "scenario_name",
    "within_budget",
]

def scenario_name(seed: int) -> str:
    """The name of the story generated from ``seed``: ``campaign-seed-<seed>``."""
    return f"campaign-seed-{seed}"


# ------------------------------------------------------------------------------------ generation
#: No episode starts later than this (ms of scenario time).
LAST_EPISODE_START_MS = 60_000
#: The share of stories with a controller quorum of three (issue 33).
QUORUM_SHARE = 0.3
#: The share of the stories (one controller or a quorum) that cross metadata snapshots (issue 34).
SNAPSHOT_SHARE = 0.3
#: The consumer group of every story (issue 32): its consumer commits every second to ``__consumer_offsets``,
#: whose 3 partitions (RF 3, a drawn assignment) count in the fault budget like t's.
GROUP = "g1"
COMMIT_INTERVAL_MS = 1_000
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 3


def _node_of(args: Mapping[str, object]) -> object:
    """The node a drawn crash, shutdown or restart names (a broker, or a quorum's controller)."""
    return args["broker"] if "broker" in args else args["controller"]


def _effective(steps: list[DrawnStep], brokers: int, controllers: Sequence[object] = ()) -> list[DrawnStep]:
    """Drop steps that would be no-ops (crash/shutdown of a stopped broker or controller, restart of a running
    one) or refused (a corrupt of a broker that runs: an overlapping episode restarted it)."""
    up: set[object] = set(range(brokers)) | set(controllers) | ({ACTIVE_CONTROLLER} if controllers else set())
    out = []
    for at, seq, verb, args in steps:
        if verb == "corrupt" and args["broker"] in up:
            continue
        if verb in ("crash", "shutdown"):
            if _node_of(args) not in up:
                continue
            up.discard(_node_of(args))
        elif verb == "restart":
            if _node_of(args) in up:
                continue
            up.add(_node_of(args))
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
            if name not in EPISODES and name not in QUORUM_EPISODES and name not in SNAPSHOT_EPISODES:
                known = ", ".join([*EPISODES, *QUORUM_EPISODES, *SNAPSHOT_EPISODES])
                raise KeyError(f"unknown episode {name!r} (known: {known})")
    rng = random.Random(f"campaign:{seed}")
    # A controller quorum (issue 33), drawn from a Random of its own so that the rest of every story is unchanged:
    # QUORUM_SHARE of the stories run three controllers (kraft.version 0 or 1) and play one quorum episode.
    quorum_rng = random.Random(f"campaign-quorum:{seed}")
    quorum = quorum_rng.random() < QUORUM_SHARE
    quorum_episode: str | None = quorum_rng.choices(list(QUORUM_EPISODES),
                                                    weights=[w for w, _b in QUORUM_EPISODES.values()])[0]
    kraft_version = quorum_rng.choice((0, 1))
    # Metadata snapshots (issue 34), drawn from a Random of their own: SNAPSHOT_SHARE of the stories with one
    # controller set small snapshot and retention configs, add a topic to delete and play one snapshot episode.
    snap_rng = random.Random(f"campaign-snapshots:{seed}")
    snapshots = snap_rng.random() < SNAPSHOT_SHARE
    snapshot_choices = [n for n in SNAPSHOT_EPISODES if quorum or not n.startswith("voter_")]
    snapshot_episode = snap_rng.choices(snapshot_choices,
                                        weights=[SNAPSHOT_EPISODES[n][0] for n in snapshot_choices])[0]
    if episodes is not None:
        quorum_names = [n for n in episodes if n in QUORUM_EPISODES]
        # a voter_ snapshot episode needs a quorum: asked for alone, it plays without a quorum episode
        quorum = bool(quorum_names) or any(n.startswith("voter_") and n in SNAPSHOT_EPISODES for n in episodes)
        quorum_episode = quorum_names[0] if quorum_names else None
        snapshot_names = [n for n in episodes if n in SNAPSHOT_EPISODES and (quorum or not n.startswith("voter_"))]
        snapshots = bool(snapshot_names)
        if snapshots:
            snapshot_episode = snapshot_names[0]
        episodes = [n for n in episodes if n in EPISODES]
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
        ClientSpec("c1", "consumer", TOPIC, None, "all", 100, rng.choice(("earliest", "none")), group=GROUP,
                   commit_interval_ms=COMMIT_INTERVAL_MS),
    )
    # Consumer groups (issue 32), drawn from a Random of their own so that the rest of every story is unchanged:
    # __consumer_offsets' partitions placed like t's (and so in the fault budget), the consumer's restarts.
    group_rng = random.Random(f"campaign-groups:{seed}")
    config["offsets.topic.num.partitions"] = str(OFFSETS_PARTITIONS)
    offsets_assignment = tuple(tuple(group_rng.sample(range(brokers), RF)) for _ in range(OFFSETS_PARTITIONS))
    restarts = sorted(group_rng.randint(5_000, LAST_EPISODE_START_MS) for _ in range(group_rng.randint(1, 2)))

    st = Story(rng, brokers, assignment, lag_ms, socket_timeout_ms,
               controller=ACTIVE_CONTROLLER if quorum else CONTROLLER)
    controllers = list(QUORUM_IDS) if quorum else []
    if quorum and kraft_version == 1:
        config["controller.quorum.auto.join.enable"] = "true"
    names = list(EPISODES)
    weights = [EPISODES[n][0] for n in names]
    count = rng.choices((1, 2, 3), weights=(30, 45, 25))[0]
    if episodes is not None:
        count = len(episodes)
    t = rng.randint(3_000, 8_000)
    drawn: list[str] = []
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

    extra_topics: tuple[TopicSpec, ...] = ()
    if snapshots:
        config.update({
            "metadata.log.max.record.bytes.between.snapshots": str(snap_rng.choice((1024, 2048))),
            "metadata.log.segment.bytes": "2048",
            "metadata.max.retention.bytes": "2048",
            "kraftlog.metadata.log.cleanup.interval.ms": "1000"})
        doomed = tuple(snap_rng.sample(range(brokers), RF))
        extra_topics = (TopicSpec(DOOMED, 1, RF, (doomed,), {}),)
        drawn.append(snapshot_episode)
        sst = Story(snap_rng, brokers, (doomed,), lag_ms, socket_timeout_ms, steps=st.steps)
        sst.add(1_000, "produce", {"topic": DOOMED, "partition": 0, "count": 20, "acks": "all",
                                   "timeout_ms": 30_000})
        SNAPSHOT_EPISODES[snapshot_episode][1](sst, snap_rng.randint(5_000, LAST_EPISODE_START_MS))
    if quorum and quorum_episode is not None:
        drawn.append(quorum_episode)
        qst = Story(quorum_rng, brokers, assignment, lag_ms, socket_timeout_ms, steps=st.steps,
                    controller=ACTIVE_CONTROLLER)
        QUORUM_EPISODES[quorum_episode][1](qst, quorum_rng.randint(5_000, LAST_EPISODE_START_MS))
    restart_steps: list[DrawnStep] = [(at, 9, "restart_client", {"client": "c1"}) for at in restarts]
    steps = sorted([*st.steps, *restart_steps], key=lambda s: (s[0], s[1]))
    steps = _effective(steps, brokers, controllers)

    # Heal and settle: every link back, held messages released, stopped brokers restarted.
    last = max(at for at, *_ in steps)
    heal_at = last + rng.randint(2_000, 5_000)
    tail: list[DrawnStep] = [(heal_at, 0, "heal", {"nodes": None})]
    if st.holds:
        tail.append((heal_at, 1, "release", {"api": None, "from": None, "to": None}))
    up: set[object] = set(range(brokers))
    for _at, _seq, verb, args in steps:
        if verb in ("crash", "shutdown") and "broker" in args:
            up.discard(args["broker"])
        elif verb == "restart" and "broker" in args:
            up.add(args["broker"])
    down = sorted(set(range(brokers)) - up)
    rng.shuffle(down)
    at = heal_at
    if quorum:  # the stopped controllers first, by the quorum's Random (the brokers' draws stay as they were)
        cup: set[object] = set(controllers) | {ACTIVE_CONTROLLER}
        for _at, _seq, verb, args in steps:
            if verb == "crash" and "controller" in args:
                cup.discard(args["controller"])
            elif verb == "restart" and "controller" in args:
                cup.add(args["controller"])
        for c in [*(c for c in controllers if c not in cup), *([ACTIVE_CONTROLLER] if ACTIVE_CONTROLLER not in cup
                                                                else [])]:
            tail.append((heal_at + quorum_rng.randint(500, 2_000), 2, "restart", {"controller": c}))
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
        topics=(TopicSpec(TOPIC, partitions, RF, assignment, {}),
                TopicSpec(OFFSETS_TOPIC, OFFSETS_PARTITIONS, RF, offsets_assignment, {"cleanup.policy": "compact"}),
                *extra_topics),
        clients=clients,
        steps=step_objs,
        until_ms=None,
        controllers=3 if quorum else 1,
        kraft_version=kraft_version if quorum else 0,
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


def _partitions(scenario: Scenario) -> list[tuple[str, frozenset[int], int, TopicSpec | None]]:
    """(name, replica set, effective min ISR, topic spec) per partition."""
    out: list[tuple[str, frozenset[int], int, TopicSpec | None]] = []
    for t in scenario.topics:
        if t.replication_factor is not None:
            rf = t.replication_factor
        else:
            assert t.assignment is not None  # TopicSpec: at least one of the two is set
            rf = len(t.assignment[0])
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
    up: set[int] = set(range(scenario.brokers))
    out = []
    for step in scenario.steps:
        match step.action:
            case Crash(node=node) | Restart(node=node) if is_controller(node):
                pass  # a controller's crash or restart: no replica's shutdown
            case Crash(node=int() as broker, lose=lose):  # a broker: the controller's is matched above
                if broker in up:
                    up.discard(broker)
                    out.append((broker, lose))
            case Shutdown(broker=broker):
                up.discard(broker)
            case Restart(node=int() as broker):
                up.add(broker)
    return out


def _corruptions(scenario: Scenario) -> list[str]:
    """The partition of every ``corrupt`` step that counts as a data-losing fault: its broker was down and
    its stop was not a crash (a crashed replica is counted once, by its crash)."""
    crashed: set[int | str] = set()
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


def voters_down_at_most(scenario: Scenario) -> int:
    """The most controllers of a quorum down (crashed or paused) at once over the story's steps; 0 for the one
    controller (its crash is no quorum fault: it only delays metadata)."""
    if scenario.controllers == 1:
        return 0
    down: set[object] = set()
    worst = 0
    for step in scenario.steps:
        match step.action:
            case Crash(node=node) | Pause(node=node) if is_controller(node):
                down.add(node)
            case Restart(node=node) | Resume(node=node) if is_controller(node):
                down.discard(node)
        worst = max(worst, len(down))
    return worst


def static_quorum_disk_loss(scenario: Scenario) -> bool:
    """A voter of a kraft.version 0 quorum loses its disk (``crash: {controller: ID, lose: all}``): it comes
    back with an empty log and still votes, so committed metadata can be lost (KIP-853's motivation). Outside
    the quorum's fault budget; the campaign's ``static_quorum_disk_loss`` column, excluded from
    ``--fail-on-loss`` as an allowed unclean election is."""
    return scenario.controllers > 1 and scenario.kraft_version == 0 and any(
        isinstance(step.action, Crash) and is_controller(step.action.node) and step.action.lose == "all"
        for step in scenario.steps)


def quorum_within_budget(scenario: Scenario) -> bool:
    """The quorum's fault budget: at most ⌊(V−1)/2⌋ of the V voters down at a time, and no voter disk loss at
    kraft.version 0 (True for the one controller)."""
    if scenario.controllers == 1:
        return True
    return (voters_down_at_most(scenario) <= (scenario.controllers - 1) // 2
            and not static_quorum_disk_loss(scenario))


def within_budget(scenario: Scenario) -> bool:
    """True when every partition saw at most (its effective min ISR − 1) data-losing shutdowns and a
    controller quorum stayed within its own budget (:func:`quorum_within_budget`)."""
    return all(n <= budget for n, budget in budget_by_partition(scenario).values()) and quorum_within_budget(scenario)


# ----------------------------------------------------------------------------------- describing
def _node(n: int | str) -> str:
    if n == CONTROLLER:
        return "ctl"
    return f"c-{n}" if n == ACTIVE_CONTROLLER else f"c{n}" if is_controller(n) else f"b{n}"


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
        case RestartClient(client):
            what = f"restart consumer {client}"
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
