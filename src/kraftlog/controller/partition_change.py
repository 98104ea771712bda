"""Kafka's PartitionChangeBuilder: the one place a partition's ISR, leader and ELR change.

Every path that changes a partition (AlterPartition, fencing, controlled shutdown, unfencing, unclean
shutdown, ElectLeaders, the periodic unclean election) asks :func:`build_partition_change` for the record
to append. The steps are Kafka's (``PartitionChangeBuilder.build``), in Kafka's order, each a function
named after Kafka's method:

1. :func:`maybe_populate_target_elr` — level ``elr``+ (KIP-966): when the target ISR is below the effective
   min ISR, ELR = (ELR ∪ ISR) − target ISR − unclean-shutdown replicas, and LastKnownELR gains the
   unclean-shutdown replicas that left; at or above min ISR both are cleared.
2. :func:`try_election` / :func:`elect_leader` — :func:`elect_preferred_leader` or :func:`elect_any_leader`:
   keep a valid current leader; else the first valid replica in assignment order (valid = in the target
   ISR, or in the ELR when the target ISR is empty, and acceptable); else the last known leader
   (:func:`can_elect_last_known_leader`, an unclean election); else, for ``Election.UNCLEAN``, the first
   acceptable replica in assignment order. Deterministic, like Kafka: no randomness anywhere. An ELR
   leader gets ISR [it]; an unclean leader gets ISR [it] and LeaderRecoveryState RECOVERING.
   Level ``urm`` with the Unclean Recovery Manager on (``unclean_recovery``): neither fallback runs — a
   partition no ISR or ELR member can lead stays leaderless for the URM — and :func:`elect_recovery_leader`
   elects the replica the URM chose or an operator designated (``recovery_leader``; clean when it is a
   valid leader, unclean otherwise).
3. :func:`maybe_update_record_elr` — an unclean election or a level below ``elr`` clears ELR and
   LastKnownELR.
4. The ISR: set when it changes; below level ``elr`` an empty target ISR keeps the old one ("the last
   replica in ISR will not be removed", pre-KIP-966 Kafka).
5. :func:`trigger_leader_epoch_bump_for_isr_shrink_if_needed` — levels ``classic``/``kip903`` model Kafka
   3.4/3.5, whose metadata versions bump the leader epoch on every ISR shrink (removed in 3.6 by
   KAFKA-15021); ``elr`` and above never do.
6. :func:`maybe_update_last_known_leader` — level ``elr``+: the leader is remembered when the partition
   first becomes leaderless and forgotten once a leader is elected.
7. The target LeaderRecoveryState (an AlterPartition's) when it differs.

kraftlog keeps KIP-966's meaning of LastKnownELR (ELR members removed by an unclean shutdown) and a
separate ``last_known_leader`` field. Kafka 4.1/4.2 (``useLastKnownLeaderInBalancedRecovery``) store the
last known leader *in* the lastKnownElr field instead; the decisions are the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from ..level import Level
from ..metadata.image import PartitionRegistration
from ..metadata.records import NO_LEADER, RECOVERING, PartitionChangeRecord


class Election(Enum):
    """Which election the change may run (Kafka's ``PartitionChangeBuilder.Election``)."""

    PREFERRED = "preferred"  # move leadership to the first replica if it is a valid leader
    ONLINE = "online"  # keep a valid leader; elect a clean one only when it is gone
    UNCLEAN = "unclean"  # like ONLINE, then any acceptable replica (unclean.leader.election.enable)


@dataclass(slots=True)
class _Builder:
    """The builder's working state: Kafka's ``target*`` fields and the record being built."""

    part: PartitionRegistration
    is_acceptable_leader: Callable[[int], bool]
    level: Level
    min_isr: int
    election: Election
    target_isr: tuple[int, ...]
    target_elr: tuple[int, ...]
    target_last_known_elr: tuple[int, ...]
    target_leader_recovery_state: int
    unclean_shutdown_replicas: frozenset[int]
    unclean_recovery: bool = False
    recovery_leader: int = NO_LEADER
    # the record's fields (None = unchanged), Kafka's PartitionChangeRecord
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    leader_recovery_state: int | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    last_known_leader: int | None = None

    @property
    def elr_enabled(self) -> bool:
        """KIP-966 part 1 is on (Kafka's ``eligibleLeaderReplicasEnabled``)."""
        return self.level >= Level.ELR


def _ordered(members: Iterable[int], replicas: tuple[int, ...]) -> tuple[int, ...]:
    """Members in assignment order (deterministic, like Kafka's replica-ordered lists)."""
    s = set(members)
    return tuple(r for r in replicas if r in s)


# ------------------------------------------------------------------------------------------ steps
def maybe_populate_target_elr(b: _Builder) -> None:
    """KIP-966 ELR maintenance before the election (Kafka's ``maybePopulateTargetElr``)."""
    if not b.elr_enabled:
        return
    if len(b.target_isr) >= b.min_isr:
        b.target_elr, b.target_last_known_elr = (), ()
        return
    target = set(b.target_isr)
    candidates = set(b.target_elr) | set(b.part.isr)
    elr = {r for r in candidates if r not in target and r not in b.unclean_shutdown_replicas}
    last_known = (candidates | set(b.target_last_known_elr)) - target - elr
    replicas = b.part.replicas
    b.target_elr, b.target_last_known_elr = _ordered(elr, replicas), _ordered(last_known, replicas)


def is_valid_new_leader(b: _Builder, replica: int) -> bool:
    """In the target ISR, or in the ELR when the target ISR is empty, and acceptable (Kafka's
    ``isValidNewLeader``)."""
    if replica == NO_LEADER:
        return False
    member = replica in b.target_isr or (not b.target_isr and replica in b.target_elr)
    return member and b.is_acceptable_leader(replica)


def can_elect_last_known_leader(b: _Builder) -> bool:
    """The last known leader may be elected (uncleanly) when ISR and ELR are both empty and it is
    acceptable (Kafka's ``canElectLastKnownLeader``; KIP-966 delivery plan)."""
    if not b.elr_enabled or b.unclean_recovery or b.target_elr or b.target_isr:
        return False
    candidate = b.part.last_known_leader
    return candidate >= 0 and candidate in b.part.replicas and b.is_acceptable_leader(candidate)


def elect_preferred_leader(b: _Builder) -> tuple[int, bool]:
    """(leader, unclean) for ``Election.PREFERRED`` (Kafka's ``electPreferredLeader``)."""
    replicas = b.part.replicas
    if is_valid_new_leader(b, replicas[0]):
        return replicas[0], False
    if is_valid_new_leader(b, b.part.leader):
        return b.part.leader, False
    for r in replicas[1:]:
        if is_valid_new_leader(b, r):
            return r, False
    if can_elect_last_known_leader(b):
        return b.part.last_known_leader, True
    return NO_LEADER, False


def elect_any_leader(b: _Builder) -> tuple[int, bool]:
    """(leader, unclean) for ``Election.ONLINE`` / ``UNCLEAN`` (Kafka's ``electAnyLeader``): the unclean
    choice is the first acceptable replica in assignment order, never a random one."""
    if is_valid_new_leader(b, b.part.leader):
        return b.part.leader, False
    for r in b.part.replicas:
        if is_valid_new_leader(b, r):
            return r, False
    if can_elect_last_known_leader(b):
        return b.part.last_known_leader, True
    if b.election is Election.UNCLEAN and not b.unclean_recovery:
        for r in b.part.replicas:
            if b.is_acceptable_leader(r):
                return r, True
    return NO_LEADER, False


def elect_recovery_leader(b: _Builder) -> tuple[int, bool]:
    """(leader, unclean) for the leader an unclean recovery chose or an operator designated (KIP-966
    "Unclean Recovery Manager", ElectLeaders DESIGNATION): it must be an acceptable assigned replica
    (else no leader); the election is clean when it is a valid new leader (ISR member, or ELR member
    with the ISR empty), unclean otherwise."""
    r = b.recovery_leader
    if r not in b.part.replicas or not b.is_acceptable_leader(r):
        return NO_LEADER, False
    return r, not is_valid_new_leader(b, r)


def elect_leader(b: _Builder) -> tuple[int, bool]:
    """Kafka's ``electLeader`` (plus KIP-966's recovery election when ``recovery_leader`` is set)."""
    if b.recovery_leader != NO_LEADER:
        return elect_recovery_leader(b)
    return elect_preferred_leader(b) if b.election is Election.PREFERRED else elect_any_leader(b)


def try_election(b: _Builder) -> None:
    """Run the election and write the leader (and, for ELR or unclean leaders, the ISR) into the
    record (Kafka's ``tryElection``)."""
    node, unclean = elect_leader(b)
    if node == b.part.leader:
        return
    if node in b.target_elr:
        b.target_isr = (node,)
        b.target_elr = tuple(r for r in b.target_elr if r != node)
    b.leader = node
    if unclean:
        # Unclean: the ISR is forced to the new leader alone. This can lose data (KIP-704 RECOVERING).
        b.isr = (node,)
        if b.part.leader_recovery_state != RECOVERING:
            b.leader_recovery_state = RECOVERING


def maybe_update_record_elr(b: _Builder) -> None:
    """Write ELR and LastKnownELR; an unclean election or a level below ``elr`` clears them (Kafka's
    ``maybeUpdateRecordElr``, LastKnownELR with the KIP's meaning)."""
    if b.isr is not None or not b.elr_enabled:  # b.isr is set here only by an unclean election
        b.target_elr, b.target_last_known_elr = (), ()
    if b.target_elr != b.part.elr:
        b.elr = b.target_elr
    if b.target_last_known_elr != b.part.last_known_elr:
        b.last_known_elr = b.target_last_known_elr


def maybe_update_isr(b: _Builder) -> None:
    """Set the new ISR if it differs; below level ``elr`` an empty ISR is never written (the last
    member stays, pre-KIP-966 Kafka)."""
    if b.isr is None and (b.target_isr or b.elr_enabled) and b.target_isr != b.part.isr:
        b.isr = b.target_isr


def trigger_leader_epoch_bump_for_isr_shrink_if_needed(b: _Builder) -> None:
    """Levels ``classic``/``kip903`` (Kafka 3.4/3.5 metadata versions) bump the leader epoch whenever the
    ISR shrinks, by writing the same leader into the record (Kafka's
    ``triggerLeaderEpochBumpForIsrShrinkIfNeeded``; not needed since 3.6, KAFKA-15021)."""
    if b.level >= Level.ELR or b.leader is not None or b.isr is None:
        return
    if not set(b.part.isr) <= set(b.isr):
        b.leader = b.part.leader


def maybe_update_last_known_leader(b: _Builder) -> None:
    """Level ``elr``+: remember the leader when the partition first becomes leaderless, forget it once a
    leader is elected (Kafka's ``maybeUpdateLastKnownLeader``, kept in its own field)."""
    if not b.elr_enabled:
        return
    if b.leader == NO_LEADER and b.part.last_known_leader < 0:
        b.last_known_leader = b.part.leader
    elif b.leader is not None and b.leader >= 0 and b.part.last_known_leader >= 0:
        b.last_known_leader = NO_LEADER


def build_partition_change(
    part: PartitionRegistration,
    topic_id: uuid.UUID,
    partition_id: int,
    *,
    is_acceptable_leader: Callable[[int], bool],
    level: Level,
    min_isr: int,
    election: Election = Election.ONLINE,
    target_isr: tuple[int, ...] | None = None,
    target_leader_recovery_state: int | None = None,
    unclean_shutdown_replicas: frozenset[int] = frozenset(),
    unclean_recovery: bool = False,
    recovery_leader: int = NO_LEADER,
) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord that moves ``part`` to the target state, or None if nothing changes
    (Kafka's ``PartitionChangeBuilder.build``; the steps are in the module docstring).

    ``is_acceptable_leader(broker_id)``: may this broker lead (registered, unfenced, not shutting down;
    callers exclude a broker being fenced or restarting after an unclean shutdown); ``min_isr``: the
    effective min ISR; ``election``: ``Election.UNCLEAN`` when ``unclean.leader.election.enable`` holds
    for the topic or an admin asked for an unclean election; ``target_isr``: the proposed ISR (None =
    unchanged); ``target_leader_recovery_state``: an AlterPartition's; ``unclean_shutdown_replicas``:
    brokers that re-registered after an unclean shutdown (KIP-966: they cannot stay in the ELR; the
    caller also removes them from ``target_isr``); ``unclean_recovery``: level ``urm`` with
    ``unclean.recovery.manager.enabled`` — no last-known-leader or unclean fallback, the URM decides;
    ``recovery_leader``: elect this replica (the URM's choice or an ElectLeaders DESIGNATION)."""
    b = _Builder(
        part=part, is_acceptable_leader=is_acceptable_leader, level=level, min_isr=min_isr, election=election,
        target_isr=part.isr if target_isr is None else _ordered(target_isr, part.replicas),
        target_elr=part.elr, target_last_known_elr=part.last_known_elr,
        target_leader_recovery_state=(part.leader_recovery_state if target_leader_recovery_state is None
                                      else target_leader_recovery_state),
        unclean_shutdown_replicas=frozenset(unclean_shutdown_replicas), unclean_recovery=unclean_recovery,
        recovery_leader=recovery_leader)
    maybe_populate_target_elr(b)
    try_election(b)
    maybe_update_record_elr(b)
    maybe_update_isr(b)
    trigger_leader_epoch_bump_for_isr_shrink_if_needed(b)
    maybe_update_last_known_leader(b)
    if b.leader_recovery_state is None and b.target_leader_recovery_state != part.leader_recovery_state:
        b.leader_recovery_state = b.target_leader_recovery_state
    if (b.isr is None and b.leader is None and b.leader_recovery_state is None and b.elr is None
            and b.last_known_elr is None and b.last_known_leader is None):
        return None
    return PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic_id, isr=b.isr, leader=b.leader,
        leader_recovery_state=b.leader_recovery_state, eligible_leader_replicas=b.elr,
        last_known_elr=b.last_known_elr, last_known_leader=b.last_known_leader)
