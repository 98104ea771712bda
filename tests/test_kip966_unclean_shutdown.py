"""KIP-966: a replica that restarted after an unclean shutdown never enters the ELR.

Direct tests of the partition change builder (Kafka's ``PartitionChangeBuilder.maybePopulateTargetElr``:
ELR = (ELR ∪ ISR) − target ISR − *unclean-shutdown replicas*), called as the controller calls it for a
broker that re-registered without a clean-shutdown file (``ReplicationControlManager
.handleBrokerUncleanShutdown``: the broker leaves the target ISR, may not lead, and is passed as the
unclean-shutdown replica). Such a replica may have lost records below the HWM, so KIP-966 cannot count it
as an eligible leader; kraftlog keeps it in LastKnownELR (the KIP's meaning of that field). Each test has
a control with a clean removal, which does put the replica in the ELR, so the rule is what is tested.
"""

from __future__ import annotations

import uuid

from kraftlog.controller.partition_change import Election, build_partition_change
from kraftlog.level import Level
from kraftlog.metadata.image import PartitionRegistration
from kraftlog.metadata.records import NO_LEADER, RECOVERED, RECOVERING

TID = uuid.UUID(int=966)


def apply(part: PartitionRegistration, *, min_isr: int, acceptable, target_isr=None, unclean=(),
          election: Election = Election.ONLINE, level: Level = Level.ELR) -> PartitionRegistration:
    """The partition after the builder's record (unchanged if it returns None)."""
    rec = build_partition_change(
        part, TID, 0, is_acceptable_leader=set(acceptable).__contains__, level=level, min_isr=min_isr,
        election=election, target_isr=target_isr, unclean_shutdown_replicas=frozenset(unclean))
    return part.merge(rec) if rec is not None else part


def test_isr_member_with_unclean_shutdown_leaves_isr_and_skips_elr_as_isr_drops_below_min_isr():
    """ISR [0, 1], min ISR 2, broker 1 restarts after an unclean shutdown: the ISR becomes [0] (below min
    ISR), which would make 1 an ELR member after a clean fence; after the unclean shutdown it is in
    LastKnownELR instead, never in the ELR. Leader 0 stays."""
    part = PartitionRegistration((0, 1, 2), (0, 1), 0, 3, 7)
    after = apply(part, min_isr=2, acceptable={0, 2}, target_isr=(0,), unclean={1})
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (0, (0,), (), (1,))
    # control: the same ISR shrink by a clean fence makes broker 1 an ELR member
    fenced = apply(part, min_isr=2, acceptable={0, 2}, target_isr=(0,))
    assert (fenced.leader, fenced.isr, fenced.elr) == (0, (0,), (1,))


def test_last_isr_member_with_unclean_shutdown_leaves_an_empty_isr_and_no_elr():
    """ISR [1] (leader 1), min ISR 2, no ELR: leader 1 restarts after an unclean shutdown. The ISR becomes
    empty, the partition leaderless, and the ELR stays empty (a clean shutdown would have left 1 in the
    ELR to be elected when it returns); 1 is recorded in LastKnownELR and as the last known leader."""
    part = PartitionRegistration((0, 1, 2), (1,), 1, 3, 7)
    after = apply(part, min_isr=2, acceptable={0, 2}, target_isr=(), unclean={1})
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (NO_LEADER, (), (), (1,))
    assert after.last_known_leader == 1
    clean = apply(part, min_isr=2, acceptable={0, 2}, target_isr=())
    assert (clean.leader, clean.isr, clean.elr) == (NO_LEADER, (), (1,))


def test_elr_member_with_unclean_shutdown_leaves_elr_while_isr_shrinks_below_min_isr_in_the_same_change():
    """ISR [0, 1], ELR [2], min ISR 3. In one change the ISR shrinks to [0] and broker 2, an ELR member,
    is reported as restarted after an unclean shutdown: the new ELR gains 1 (clean, left the ISR below
    min ISR) and loses 2, which goes to LastKnownELR."""
    part = PartitionRegistration((0, 1, 2), (0, 1), 0, 3, 7, elr=(2,))
    after = apply(part, min_isr=3, acceptable={0}, target_isr=(0,), unclean={2})
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (0, (0,), (1,), (2,))
    # control: without the unclean shutdown, 2 stays in the ELR next to 1
    clean = apply(part, min_isr=3, acceptable={0}, target_isr=(0,))
    assert clean.elr == (1, 2) and clean.last_known_elr == ()


def test_elr_member_with_unclean_shutdown_leaves_elr_with_the_isr_unchanged():
    """ISR [0], ELR [1, 2], min ISR 2: broker 2 (not in the ISR) restarts after an unclean shutdown; the
    controller's change keeps the ISR and drops 2 from the ELR."""
    part = PartitionRegistration((0, 1, 2), (0,), 0, 3, 7, elr=(1, 2))
    after = apply(part, min_isr=2, acceptable={0, 1}, unclean={2})
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (0, (0,), (1,), (2,))
    assert after.leader_epoch == part.leader_epoch  # no leader change at level elr


def test_replica_that_left_after_unclean_shutdown_does_not_come_back_into_elr_or_get_elected_cleanly():
    """After broker 1's unclean shutdown (ISR [0], ELR [], LastKnownELR [1], min ISR 2), leader 0 is fenced:
    the ISR empties and 0 (clean) enters the ELR; 1 does not. With 1 back and 0 still fenced, an ONLINE
    election elects nobody (KIP-966 waits for the ELR member); only an unclean election takes 1, as
    RECOVERING with ISR [1]."""
    part = PartitionRegistration((0, 1, 2), (0, 1), 0, 3, 7)
    part = apply(part, min_isr=2, acceptable={0, 2}, target_isr=(0,), unclean={1})
    part = apply(part, min_isr=2, acceptable={2}, target_isr=())  # 0 fenced; 2 never was in the ISR
    assert (part.leader, part.isr, part.elr, part.last_known_elr) == (NO_LEADER, (), (0,), (1,))
    assert part.last_known_leader == 0
    # 1 re-registered and unfenced, 0 still fenced: no clean leader, nothing changes
    assert apply(part, min_isr=2, acceptable={1, 2}) == part
    # unclean.leader.election.enable: the first acceptable replica in assignment order, RECOVERING
    unclean = apply(part, min_isr=2, acceptable={1, 2}, election=Election.UNCLEAN)
    assert (unclean.leader, unclean.isr, unclean.elr, unclean.leader_recovery_state) == (1, (1,), (), RECOVERING)
    # once 0 is back it is elected from the ELR: clean, ISR [0], not RECOVERING
    clean = apply(part, min_isr=2, acceptable={0, 1, 2})
    assert (clean.leader, clean.isr, clean.elr, clean.leader_recovery_state) == (0, (0,), (), RECOVERED)


def test_last_known_leader_with_unclean_shutdown_is_not_elected_while_an_elr_member_may_return():
    """KIP-966 (Kafka's canElectLastKnownLeader): the last known leader is elected (uncleanly, RECOVERING)
    only when ISR and ELR are both empty. Leader 1 shut down uncleanly and left the ELR; ELR member 2 is
    fenced: 1 coming back is not elected, the partition waits for 2."""
    part = PartitionRegistration((0, 1, 2), (), NO_LEADER, 4, 8, elr=(2,), last_known_elr=(1,),
                                 last_known_leader=1)
    assert apply(part, min_isr=2, acceptable={1}) == part
    after = apply(part, min_isr=2, acceptable={1, 2})
    assert (after.leader, after.isr, after.elr, after.leader_recovery_state) == (2, (2,), (), RECOVERED)
    # with the ELR empty, the last known leader may be elected: an unclean, RECOVERING election
    no_elr = PartitionRegistration((0, 1, 2), (), NO_LEADER, 4, 8, last_known_elr=(1, 2), last_known_leader=1)
    lkl = apply(no_elr, min_isr=2, acceptable={0, 1})
    assert (lkl.leader, lkl.isr, lkl.leader_recovery_state) == (1, (1,), RECOVERING)
