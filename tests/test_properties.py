"""Property tests (hypothesis) of two rule sets that every failure story depends on.

1. The leader's HWM (Kafka's ``Partition.maybeIncrementLeaderHW``, KIP-497, KIP-966), driven directly on
   :class:`kraftlog.broker.partition.Partition` over random sequences of follower fetches, leader appends,
   ISR proposals (expand and shrink), commits, reverts and controller-side ISR shrinks:

   * the HWM never moves backwards;
   * the HWM never exceeds the min LEO over the maximal ISR (the leader's own LEO included): at every
     step while followers' logs only grow, and at every step where it moves when followers may also
     truncate (report a lower fetch offset);
   * level ``elr``+ (KIP-966 strict min ISR): no HWM advance while the *committed* ISR is below min ISR;
   * liveness: once every replica has fetched up to the leader's LEO, the HWM reaches the LEO (unless the
     strict rule holds it).

2. The partition change builder (Kafka's ``PartitionChangeBuilder``,
   :func:`kraftlog.controller.partition_change.build_partition_change`) over random partition states
   consistent with the KIP-966 invariants: after merging the record, the invariants still hold.

Every example is derived from a fixed seed (``derandomize=True``) and nothing is stored
(``database=None``), so a run is deterministic and leaves no ``.hypothesis`` folder.
"""

from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftlog.broker.partition import Partition
from kraftlog.controller.partition_change import Election, build_partition_change
from kraftlog.level import IMPLEMENTED, Level
from kraftlog.metadata.image import PartitionRegistration
from kraftlog.metadata.records import NO_LEADER, RECOVERED, RECOVERING
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog

TID = uuid.UUID(int=9)
LAG_MS = 100  # replica.lag.time.max.ms, short so that time steps make replicas fall out of "caught up"

#: deterministic, stored nowhere, bounded: each property test runs in a few seconds
PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=300,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def batch(n: int) -> RecordBatch:
    return RecordBatch(-1, -1, tuple(Record(0, None, b"v") for _ in range(n)))


# ================================================================================ 1. the leader's HWM
OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 5)),
    # (replica index, where in the allowed range, go backwards = the follower truncated)
    st.tuples(st.just("fetch"), st.integers(0, 3), st.sampled_from([0, 1000]) | st.integers(0, 1000),
              st.booleans()),
    st.tuples(st.just("time"), st.integers(0, 2 * LAG_MS)),
    st.tuples(st.just("expand"), st.integers(0, 3)),
    st.tuples(st.just("shrink"), st.integers(0, 15)),
    st.tuples(st.just("commit")),
    st.tuples(st.just("revert")),
    st.tuples(st.just("controller_shrink"), st.integers(0, 3)),
)


@st.composite
def hwm_stories(draw):
    n = draw(st.integers(2, 5))
    replicas = tuple(range(n))  # broker 0 leads
    isr = (0,) + tuple(r for r in replicas[1:] if draw(st.booleans()))
    min_isr = draw(st.integers(1, n))
    truncating = draw(st.booleans())
    ops = draw(st.lists(OPS, min_size=1, max_size=60))
    return replicas, isr, min_isr, truncating, ops


def broker_epoch(replica: int) -> int:
    """Replica's broker epoch, the same in its fetches and in the leader's metadata cache (KIP-903)."""
    return 100 + replica


def maximal_isr(p: Partition) -> set[int]:
    """KIP-497's maximal ISR, computed here from the committed ISR and the pending proposal (not read from
    the partition): committed ISR ∪ proposed ISR (an expand adds its replica; a shrink removes nobody yet)."""
    return set(p.isr) | (set(p.pending.new_isr) if p.pending is not None else set())


def min_leo_over_maximal_isr(p: Partition) -> int:
    """The leader's own LEO and each maximal-ISR follower's LEO as the leader knows it (a follower that
    never fetched counts as an empty log)."""
    leos = [p.log.log_end_offset]
    for r in maximal_isr(p):
        if r != p.broker_id:
            st_ = p.followers.get(r)
            leos.append(max(st_.log_end_offset, 0) if st_ is not None else 0)
    return min(leos)


@pytest.mark.parametrize("level", IMPLEMENTED, ids=lambda lv: lv.label)
@PROPERTY
@given(story=hwm_stories())
def test_leader_hwm_is_monotone_bounded_by_the_maximal_isr_and_strict_below_min_isr(level, story):
    """Kafka's maybeIncrementLeaderHW (KIP-497 maximal ISR; KIP-966 strict min ISR at level elr+):
    over random fetch / append / AlterPartition sequences the HWM never decreases, never exceeds the min
    LEO over the maximal ISR, and (elr+) does not advance while the committed ISR is below min ISR."""
    replicas, isr, min_isr, truncating, ops = story
    log = PartitionLog(SimDisk(None), "data/t-0", LogConfig(), 0)
    p = Partition(0, "t", 0, TID, log, level)
    assert p.make_leader(PartitionRegistration(replicas, isr, 0, 0, 0), 0)
    followers = replicas[1:]
    now = 0
    follower_log_shrank = False  # a follower reported a lower fetch offset than before (truncation)
    for op in ops:
        kind = op[0]
        if kind == "append":
            log.append_as_leader(batch(op[1]), p.leader_epoch, now)
        elif kind == "fetch":
            r = followers[op[1] % len(followers)]
            leo = log.log_end_offset
            current = max(p.followers[r].log_end_offset, 0)
            if truncating and op[3]:
                offset = op[2] * leo // 1000  # anywhere in [0, LEO]
            else:
                offset = current + op[2] * (leo - current) // 1000  # a growing follower log
            if offset < p.followers[r].log_end_offset:
                follower_log_shrank = True
            p.update_follower_fetch_state(r, offset, broker_epoch(r), p.leader_epoch, now)
        elif kind == "time":
            now += op[1]
        elif kind == "expand":
            # the leader's ISR expansion rule decides who may join (LEO >= HWM, fetched in this epoch, ...)
            candidates = [r for r in followers if p.isr_candidate(r, broker_epoch(r), True)]
            if candidates:
                p.propose(p.isr + (candidates[op[1] % len(candidates)],), {}, expand=True)
        elif kind == "shrink":
            if p.pending is None:
                keep = tuple(r for i, r in enumerate(p.isr) if r == 0 or (op[1] >> i) & 1)
                if keep != p.isr:
                    p.propose(keep, {}, expand=False)
        elif kind == "commit":
            if p.pending is not None:
                assert p.commit(m.AlterPartitionResponseItem(
                    TID, 0, Errors.NONE, 0, p.leader_epoch, p.pending.new_isr, p.leader_recovery_state,
                    p.partition_epoch + 1))
        elif kind == "revert":
            if p.pending is not None:
                p.revert_pending()
        elif kind == "controller_shrink":
            # the controller fences a replica: the ISR shrinks in metadata, the pending change is dropped
            r = followers[op[1] % len(followers)]
            if r in p.isr:
                new_isr = tuple(x for x in p.isr if x != r)
                assert not p.make_leader(PartitionRegistration(replicas, new_isr, 0, p.leader_epoch,
                                                               p.partition_epoch + 1), now)
                assert p.isr == new_isr and p.maximal_isr == frozenset(new_isr) and p.pending is None

        before = log.high_watermark
        committed_isr = len(p.isr)
        moved = p.maybe_increment_high_watermark(now, min_isr, LAG_MS)
        after = log.high_watermark
        assert after >= before, f"HWM moved backwards {before} -> {after} after {op}"
        assert moved == (after != before)
        if after != before:
            assert after <= min_leo_over_maximal_isr(p), (op, after, sorted(maximal_isr(p)))
        if not follower_log_shrank:
            assert after <= min_leo_over_maximal_isr(p), (op, after, sorted(maximal_isr(p)))
        if level >= Level.ELR and committed_isr < min_isr:
            assert after == before, f"KIP-966: HWM advanced with committed ISR {p.isr} < min ISR {min_isr}"

    # Liveness (the properties above hold for an HWM that never moves): once every replica has the
    # leader's whole log, the HWM reaches the LEO unless the strict min-ISR rule holds it.
    leo, before = log.log_end_offset, log.high_watermark
    for r in followers:
        p.update_follower_fetch_state(r, leo, broker_epoch(r), p.leader_epoch, now)
    p.maybe_increment_high_watermark(now, min_isr, LAG_MS)
    if level < Level.ELR or len(p.isr) >= min_isr:
        assert log.high_watermark == leo
    else:
        assert log.high_watermark == before


# ============================================================================ 2. the partition change builder
#: the builder is cheap: more examples, so that unclean and last-known-leader elections are well covered
BUILDER = settings(PROPERTY, max_examples=500)


@st.composite
def partition_changes(draw):
    """A partition state consistent with the KIP-966 invariants, and one change as the controller asks for
    it (Kafka's ReplicationControlManager):

    * ``remove``: one broker leaves the ISR and may not lead (fencing, controlled shutdown, or, level
      elr+, a restart after an unclean shutdown: then it is also the unclean-shutdown replica);
    * ``alter``: the leader's AlterPartition: any ISR that contains the (acceptable) leader;
    * ``elect``: the ISR unchanged, an election over a random acceptable set (unfencing, ElectLeaders).

    Reachable states only: with min ISR 1 the ELR holds at most one replica (a replica enters the ELR
    only as the ISR drops below min ISR, i.e. as the last ISR member leaves)."""
    level = draw(st.sampled_from(IMPLEMENTED))
    elr_level = level >= Level.ELR
    brokers = draw(st.permutations(range(6)))
    replicas = tuple(brokers[:draw(st.integers(1, 5))])  # assignment order matters
    n = len(replicas)
    min_isr = draw(st.integers(1, n))  # the effective min ISR: min(min.insync.replicas, RF)

    def subset(pool, min_size=0, max_size=None):
        pool = sorted(pool)
        picked = draw(st.lists(st.sampled_from(pool), unique=True, min_size=min_size, max_size=max_size)
                      if pool else st.just([]))
        return tuple(r for r in replicas if r in set(picked))  # replica order

    # Below elr the ISR is never empty (the last member stays); at elr+ it may be, and one example in
    # three starts from KIP-966's "last replica standing" state: no ISR, no leader.
    isr = () if elr_level and draw(st.integers(0, 2)) == 0 else subset(replicas, min_size=0 if elr_level else 1)
    elr, last_known_elr, last_known_leader = (), (), NO_LEADER
    if elr_level:
        if len(isr) < min_isr:
            elr = subset(set(replicas) - set(isr), max_size=1 if min_isr == 1 else None)
        last_known_elr = subset(set(replicas) - set(isr) - set(elr))
    leader = draw(st.sampled_from(isr)) if isr and draw(st.booleans()) else NO_LEADER
    if elr_level and leader == NO_LEADER and draw(st.booleans()):
        # the leader before the partition went leaderless; outside the ELR when an unclean shutdown
        # moved it to LastKnownELR (KIP-966)
        outside_elr = [r for r in replicas if r not in elr]
        last_known_leader = draw(st.sampled_from(outside_elr if outside_elr and draw(st.booleans()) else replicas))
    lrs = RECOVERING if leader != NO_LEADER and isr == (leader,) and draw(st.booleans()) else RECOVERED
    part = PartitionRegistration(replicas, isr, leader, 5, 9, lrs, elr, last_known_elr, last_known_leader)

    acceptable = {r for r in replicas if draw(st.booleans())}  # registered, unfenced, not shutting down
    unclean: frozenset[int] = frozenset()
    target_isr = None
    target_lrs = None
    kind = draw(st.sampled_from(["remove", "alter", "elect"] if leader != NO_LEADER else ["remove", "elect"]))
    if kind == "remove":
        gone = draw(st.sampled_from(replicas))
        acceptable.discard(gone)
        if elr_level and draw(st.booleans()):
            unclean = frozenset((gone,))
        if gone in isr:
            target_isr = tuple(r for r in isr if r != gone)
    elif kind == "alter":
        target_isr = tuple(sorted(set(subset(replicas)) | {leader}))
        acceptable.add(leader)
        target_lrs = draw(st.sampled_from([None, RECOVERED]))
    election = draw(st.sampled_from(list(Election)))
    return part, level, min_isr, frozenset(acceptable), unclean, target_isr, election, target_lrs


def build(part, level, min_isr, acceptable, unclean, target_isr, election, target_lrs):
    return build_partition_change(
        part, TID, 0, is_acceptable_leader=acceptable.__contains__, level=level, min_isr=min_isr,
        election=election, target_isr=target_isr, target_leader_recovery_state=target_lrs,
        unclean_shutdown_replicas=unclean)


def expected_target_elr(part, level, min_isr, unclean, target_isr) -> set[int]:
    """KIP-966's ELR rule, before any election (Kafka's maybePopulateTargetElr)."""
    if level < Level.ELR or len(target_isr) >= min_isr:
        return set()
    return (set(part.elr) | set(part.isr)) - set(target_isr) - set(unclean)


@BUILDER
@given(partition_changes())
def test_partition_change_keeps_the_kip966_invariants_and_elects_only_acceptable_leaders(change):
    """Kafka's PartitionChangeBuilder over random partition states, every level and election type: after
    merging the record, at level elr+ ELR ∩ ISR = ∅, the ELR is empty when |ISR| >= min ISR, and an
    unclean-shutdown replica is in neither ISR nor ELR; at every level a leader is in the ISR and is an
    acceptable leader; and a clean election (ONLINE, PREFERRED) never picks a replica outside
    ISR ∪ ELR: the one exception is KIP-966's last known leader, elected only when ISR and ELR are empty,
    and then RECOVERING."""
    part, level, min_isr, acceptable, unclean, target_isr, election, target_lrs = change
    rec = build(*change)
    new = part.merge(rec) if rec is not None else part
    assert set(new.isr) <= set(part.replicas) and set(new.elr) <= set(part.replicas)
    if level >= Level.ELR:
        assert not set(new.elr) & set(new.isr), (new.isr, new.elr)
        if len(new.isr) >= min_isr:
            assert new.elr == (), (new.isr, new.elr, min_isr)
        assert not unclean & (set(new.isr) | set(new.elr)), (unclean, new.isr, new.elr)
    else:
        assert new.elr == () and new.last_known_elr == () and new.isr, new
    if new.leader != NO_LEADER:
        assert new.leader in new.isr, (new.leader, new.isr)
        assert new.leader in acceptable, (new.leader, sorted(acceptable))

    target = part.isr if target_isr is None else target_isr
    target_elr = expected_target_elr(part, level, min_isr, unclean, target)
    if new.leader != part.leader and new.leader != NO_LEADER and election is not Election.UNCLEAN:
        if new.leader not in set(target) | target_elr:
            # KIP-966 delivery plan: no ISR, no ELR: the last known leader, as an unclean election
            assert level >= Level.ELR and not target and not target_elr
            assert new.leader == part.last_known_leader
            assert new.leader_recovery_state == RECOVERING and new.isr == (new.leader,)


def unclean_choice(part, level, min_isr, acceptable, unclean, target) -> int:
    """Kafka's electAnyLeader after the clean candidates are exhausted: the last known leader if it may be
    elected (level elr+, empty ISR and ELR, acceptable), else the first acceptable replica in assignment
    order (KIP-966; no random choice)."""
    if (level >= Level.ELR and not target and not expected_target_elr(part, level, min_isr, unclean, target)
            and part.last_known_leader in part.replicas and part.last_known_leader in acceptable):
        return part.last_known_leader
    return next((r for r in part.replicas if r in acceptable), NO_LEADER)


@BUILDER
@given(partition_changes().map(lambda c: c[:6] + (Election.UNCLEAN,) + c[7:]))
def test_unclean_election_is_deterministic_last_known_leader_else_first_acceptable_replica(change):
    """Issue 9 deviation 3 (Kafka's electAnyLeader): with no acceptable ISR (or, ISR empty, ELR) member,
    an unclean election picks the last known leader if acceptable, else the first acceptable replica in
    assignment order — never a random one: the same inputs give the same record whatever the state of
    the global random generator. The unclean leader is alone in the ISR, RECOVERING, and the ELR fields
    are cleared."""
    part, level, min_isr, acceptable, unclean, target_isr, election, target_lrs = change
    random.seed(1)
    rec = build(*change)
    random.seed(2)
    assert build(*change) == rec
    new = part.merge(rec) if rec is not None else part
    target = part.isr if target_isr is None else target_isr
    target_elr = expected_target_elr(part, level, min_isr, unclean, target)
    clean_candidates = [r for r in part.replicas
                        if r in acceptable and (r in target or (not target and r in target_elr))]
    if clean_candidates:
        assert new.leader in clean_candidates
        return
    expected = unclean_choice(part, level, min_isr, acceptable, unclean, target)
    assert new.leader == expected, (new.leader, expected, part, sorted(acceptable))
    if expected != NO_LEADER and expected != part.leader:
        assert new.isr == (expected,) and new.leader_recovery_state == RECOVERING
        assert new.elr == () and new.last_known_elr == ()
