"""Kafka's PartitionChangeBuilder: the one place a partition's ISR, leader and ELR change.

Every path that changes a partition (AlterPartition, fencing, controlled shutdown, unfencing,
ElectLeaders, config changes) asks :func:`build_partition_change` for the record to append.

Rules (DESIGN.md "Rules worth knowing", Kafka's ``PartitionChangeBuilder``):

* Election order: keep the current leader if it stays in the ISR and is acceptable; else the first
  acceptable ISR member in assignment order; else (level ``elr``+) the first acceptable ELR member,
  whose new ISR is [it], not RECOVERING; else, when unclean election is allowed, a random (seeded)
  acceptable replica, ISR [it], LeaderRecoveryState RECOVERING; else no leader (-1).
* Below level ``elr`` the last ISR member stays in the ISR when it is removed (pre-KIP-966 Kafka).
* Level ``elr``+: when the target ISR is below the effective min ISR,
  ELR = (ELR ∪ ISR) − target ISR − unclean-shutdown replicas (those go to LastKnownELR);
  at or above min ISR, ELR and LastKnownELR are cleared.
"""

from __future__ import annotations

from random import Random
import uuid
from collections.abc import Callable
from enum import Enum

from ..metadata.image import PartitionRegistration
from ..metadata.records import NO_LEADER, RECOVERING, PartitionChangeRecord
from ..protocol.level import Level


class Election(Enum):
    """Which election the change may run (Kafka's ``PartitionChangeBuilder.Election``)."""

    ONLY_IF_NEEDED = "only_if_needed"  # keep a valid leader; elect only when it is gone
    PREFERRED = "preferred"  # move leadership to the first replica if it is in the ISR
    UNCLEAN = "unclean"  # like ONLY_IF_NEEDED, and allow an unclean election


def _ordered(members, replicas) -> tuple[int, ...]:
    """Members in assignment order (deterministic, like Kafka's replica-ordered lists)."""
    s = set(members)
    return tuple(r for r in replicas if r in s)


def build_partition_change(
    part: PartitionRegistration,
    topic_id: uuid.UUID,
    partition_id: int,
    *,
    is_acceptable_leader: Callable[[int], bool],
    level: Level,
    min_isr: int,
    unclean_enabled: bool,
    rng: Random,
    target_isr: tuple[int, ...] | None = None,
    election: Election = Election.ONLY_IF_NEEDED,
    target_leader_recovery_state: int | None = None,
    unclean_shutdown_replicas: frozenset[int] = frozenset(),
) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord that moves ``part`` to the target state, or None if nothing changes.

    ``target_isr``: the proposed ISR (None = unchanged); ``min_isr``: the effective min ISR;
    ``unclean_enabled``: ``unclean.leader.election.enable`` as resolved for the topic;
    ``unclean_shutdown_replicas``: brokers that re-registered after an unclean shutdown (KIP-966: they
    leave the ISR and the ELR, into LastKnownELR); ``rng``: the controller's seeded generator (used
    only for unclean elections).

    Level ``elr`` with the unclean recovery manager off follows KIP-966's delivery plan: ISR member →
    unfenced ELR member → (fenced ELR members: wait, or unclean election if enabled) → (no ELR:
    unclean election if enabled, else the LastKnownLeader once it is unfenced, as an unclean,
    RECOVERING election like Kafka's ``canElectLastKnownLeader``)."""
    replicas = part.replicas
    elr_level = level >= Level.ELR
    isr = part.isr if target_isr is None else _ordered(target_isr, replicas)
    elr = part.elr
    last_known_elr = part.last_known_elr
    last_known_leader = part.last_known_leader
    lrs = part.leader_recovery_state if target_leader_recovery_state is None else target_leader_recovery_state
    unclean_set = set(unclean_shutdown_replicas)
    if elr_level and unclean_set:
        removed = [r for r in elr if r in unclean_set]
        if removed:
            elr = tuple(r for r in elr if r not in unclean_set)
            last_known_elr = _ordered(set(last_known_elr) | set(removed), replicas)
        isr = tuple(r for r in isr if r not in unclean_set)
    if not elr_level and not isr and part.isr:
        # Pre-KIP-966: "the last replica in ISR will not be removed from the ISR when it goes down".
        isr = part.isr
    isr_set = set(isr)

    # ------------------------------------------------------------------ election
    leader = part.leader
    unclean = False
    if election is Election.PREFERRED:
        preferred = replicas[0]
        if preferred != leader and preferred in isr_set and is_acceptable_leader(preferred):
            leader = preferred
    if leader == NO_LEADER or leader not in isr_set or not is_acceptable_leader(leader):
        leader = NO_LEADER
        for r in replicas:
            if r in isr_set and is_acceptable_leader(r):
                leader = r
                break
        if leader == NO_LEADER and elr_level:
            for r in replicas:
                if r in elr and is_acceptable_leader(r):
                    leader = r  # ELR election: clean, new ISR = [leader]
                    isr, isr_set = (r,), {r}
                    break
            if leader == NO_LEADER and not elr and not (election is Election.UNCLEAN or unclean_enabled):
                # No ELR member at all: the last known leader, once it is unfenced (KIP-966 delivery
                # plan). Kafka's canElectLastKnownLeader counts it as unclean: it may have lost data.
                candidate = last_known_leader
                if candidate >= 0 and candidate in replicas and is_acceptable_leader(candidate):
                    leader = candidate
                    isr, isr_set = (candidate,), {candidate}
                    lrs = RECOVERING
                    unclean = True
        if leader == NO_LEADER and (election is Election.UNCLEAN or unclean_enabled):
            candidates = [r for r in replicas if is_acceptable_leader(r)]
            if candidates:
                leader = candidates[rng.randrange(len(candidates))]
                isr, isr_set = (leader,), {leader}
                lrs = RECOVERING
                unclean = True
        if leader == NO_LEADER and not elr_level and not isr:
            isr = part.isr

    # ----------------------------------------------------------------------- ELR
    if elr_level:
        if unclean:
            elr, last_known_elr = (), ()
        elif len(isr) < min_isr:
            candidates = (set(elr) | set(part.isr)) - isr_set - unclean_set
            elr = _ordered(candidates, replicas)
            if elr:
                last_known_elr = tuple(r for r in last_known_elr if r not in candidates)
        else:
            elr, last_known_elr = (), ()
        if leader != NO_LEADER:
            last_known_leader = -1
        elif not isr and part.leader != NO_LEADER:
            last_known_leader = part.leader  # the last ISR member, recorded as it leaves

    # ---------------------------------------------------------------- the record
    change = {field: new for field, new, old in (
        ("isr", isr, part.isr),
        ("leader", leader, part.leader),
        ("leader_recovery_state", lrs, part.leader_recovery_state),
        ("eligible_leader_replicas", elr, part.elr),
        ("last_known_elr", last_known_elr, part.last_known_elr),
        ("last_known_leader", last_known_leader, part.last_known_leader),
    ) if new != old}
    if not change:
        return None
    return PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id, **change)
