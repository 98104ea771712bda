"""KIP-903 on the leader itself: a follower Fetch carrying a stale broker epoch is refused.

Kafka's ``Replica.updateFetchStateOrThrow``: when the Fetch's ReplicaState.ReplicaEpoch is not -1 and the
leader's metadata cache holds a *newer* broker epoch for that replica, the fetch state is not updated and
the partition answers NOT_LEADER_OR_FOLLOWER. A zombie incarnation of a restarted broker (its disk
replaced or truncated) therefore cannot report a LEO to the leader, cannot hold the HWM, and cannot be
proposed for the ISR with a LEO it no longer has (KAFKA-14617). These tests drive a real
:class:`~kraftlog.broker.broker.Broker` directly — metadata records in, Fetch requests in, responses out —
without a controller, so the leader's own check is what is tested (the controller's INELIGIBLE_REPLICA
check is tested elsewhere).
"""

from __future__ import annotations

import random
import uuid

import pytest

from kraftlog.broker.broker import Broker
from kraftlog.broker.partition import Partition
from kraftlog.level import Level
from kraftlog.metadata import records as mdr
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.storage.disk import SimDisk

TID = uuid.UUID(int=903)
NOW = 1000


class Leader:
    """Broker 0 leading t-0 (replicas [0, 1, 2]) with 10 records; brokers 1 and 2 registered with broker
    epochs 1 and 2 (a broker epoch is the offset of its RegisterBrokerRecord)."""

    def __init__(self, level: Level, isr=(0, 1, 2)):
        self.broker = Broker(0, {}, level, SimDisk(None), random.Random(0), 0)
        self.metadata([
            mdr.RegisterBrokerRecord(0, uuid.UUID(int=100), 0, fenced=False),
            mdr.RegisterBrokerRecord(1, uuid.UUID(int=101), 1, fenced=False),
            mdr.RegisterBrokerRecord(2, uuid.UUID(int=102), 2, fenced=False),
            mdr.TopicRecord("t", TID),
            mdr.PartitionRecord(0, TID, (0, 1, 2), tuple(isr), 0),
        ])
        self.p: Partition = self.broker.partitions[("t", 0)]
        assert self.p.is_leader and self.p.isr == tuple(isr)
        self.p.log.append_as_leader(RecordBatch(-1, -1, tuple(Record(0, None, b"v") for _ in range(10))), 0, NOW)
        self._corr = 0

    def metadata(self, records) -> None:
        self.broker.apply_metadata(NOW, records, self.broker.image.offset + 1)

    def reregister(self, broker_id: int, fenced: bool = False) -> int:
        """``broker_id`` restarts: a new RegisterBrokerRecord (new incarnation); its epoch."""
        epoch = self.broker.image.offset + 1
        self.metadata([mdr.RegisterBrokerRecord(broker_id, uuid.UUID(int=200 + epoch), epoch, fenced=fenced)])
        assert self.broker.image.brokers[broker_id].broker_epoch == epoch
        return epoch

    def fetch(self, replica: int, broker_epoch: int, offset: int) -> m.FetchPartitionResponse:
        """A follower Fetch (max wait 0: answered at once) in the current leader epoch."""
        self._corr += 1
        req = m.FetchRequest(replica, broker_epoch, 0, 1, (m.FetchPartition(TID, 0, self.p.leader_epoch, offset),))
        self.broker.deliver(NOW, m.Envelope(replica, 0, self._corr, req))
        answers = [e.message for e in self.broker.poll()
                   if e.is_response and e.correlation_id == self._corr and e.dst == replica]
        assert len(answers) == 1
        (part,) = answers[0].partitions
        return part

    def follower_leo(self, replica: int) -> int:
        st = self.p.followers.get(replica)
        return -1 if st is None else st.log_end_offset


@pytest.mark.parametrize("level", [Level.KIP903, Level.ELR], ids=lambda lv: lv.label)
def test_fetch_with_broker_epoch_older_than_metadata_cache_is_refused_and_does_not_update_fetch_state(level):
    """Broker 1 re-registered (epoch 1 -> 5): a Fetch still carrying epoch 1 (the old incarnation) is
    answered NOT_LEADER_OR_FOLLOWER with no records, and the leader keeps the LEO it knew for replica 1;
    the same Fetch with the current epoch is served and updates it."""
    c = Leader(level)
    assert c.fetch(1, 1, 4).error_code == Errors.NONE
    assert c.follower_leo(1) == 4
    current = c.reregister(1)
    assert current > 1

    stale = c.fetch(1, 1, 8)
    assert stale.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert stale.records == ()
    assert c.follower_leo(1) == 4
    assert c.p.followers[1].broker_epoch == 1  # the fetch state was not touched

    served = c.fetch(1, current, 8)
    assert served.error_code == Errors.NONE
    last = served.records[-1]
    assert last.base_offset + len(last.records) == 10  # the records up to the leader's LEO
    assert c.follower_leo(1) == 8
    assert c.p.followers[1].broker_epoch == current


def test_stale_fetch_does_not_hold_the_hwm_or_start_an_isr_expansion():
    """KAFKA-14617 on the leader: replica 2 is out of the ISR and re-registered (a replaced disk). A Fetch
    from its old incarnation reporting the whole log (offset 10) is refused: no AlterPartition is
    proposed for it. The current incarnation's Fetch at offset 10 is what makes it an ISR candidate, and
    the proposal carries its current broker epoch (NewIsrWithEpochs)."""
    c = Leader(Level.KIP903, isr=(0, 1))
    current = c.reregister(2)
    assert c.fetch(1, 1, 10).error_code == Errors.NONE
    assert c.p.log.high_watermark == 10

    assert c.fetch(2, 2, 10).error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert c.follower_leo(2) == -1
    assert c.p.pending is None and c.p.isr == (0, 1)

    assert c.fetch(2, current, 10).error_code == Errors.NONE
    assert c.follower_leo(2) == 10
    assert c.p.pending is not None and c.p.pending.new_isr == (0, 1, 2)
    assert m.BrokerState(2, current) in c.p.pending.new_isr_with_epochs


def test_fetch_without_a_broker_epoch_is_not_fenced():
    """Kafka: ReplicaEpoch -1 (a Fetch older than v15 carries none) is never fenced, even after the
    replica re-registered."""
    c = Leader(Level.KIP903)
    c.reregister(1)
    assert c.fetch(1, -1, 6).error_code == Errors.NONE
    assert c.follower_leo(1) == 6


def test_classic_level_has_no_broker_epoch_check():
    """Level classic (Kafka 3.4, before KIP-903): the stale epoch is not checked; the zombie's Fetch is
    served and its LEO is taken — the hole KIP-903 closes."""
    c = Leader(Level.CLASSIC)
    c.reregister(1)
    assert c.fetch(1, 1, 7).error_code == Errors.NONE
    assert c.follower_leo(1) == 7


def test_only_an_alive_registration_fences():
    """Kafka compares with ``metadataCache.getAliveBrokerEpoch``: while the new registration is still
    fenced there is no alive epoch to compare with, so the old epoch's Fetch is served (the replica
    cannot join the ISR while fenced anyway)."""
    c = Leader(Level.KIP903, isr=(0, 2))
    c.reregister(1, fenced=True)
    assert c.fetch(1, 1, 10).error_code == Errors.NONE
    assert c.follower_leo(1) == 10
    assert c.p.pending is None and c.p.isr == (0, 2)  # caught up, but fenced: not proposed


def test_fetch_with_broker_epoch_newer_than_metadata_cache_is_served():
    """Kafka's rule compares with the metadata cache only: a replica whose registration the leader has
    not replayed yet (its Fetch carries a newer epoch than the cache's) is served."""
    c = Leader(Level.KIP903)
    assert c.fetch(1, 7, 3).error_code == Errors.NONE
    assert c.follower_leo(1) == 3


def test_fetch_epoch_is_compared_with_the_metadata_cache_not_with_the_last_fetch():
    """Issue 9 item 9, Kafka's updateFetchStateOrThrow: ``brokerEpoch != -1 && cachedBrokerEpoch > brokerEpoch`` fences.
    The cache holds epoch 1 for broker 1; a Fetch with epoch 7 (a registration the leader has not
    replayed yet) is served, and then a Fetch with epoch 5 is served as well: 5 is not older than the
    cache's 1."""
    c = Leader(Level.KIP903)
    assert c.fetch(1, 7, 3).error_code == Errors.NONE
    assert c.fetch(1, 5, 4).error_code == Errors.NONE
    assert c.follower_leo(1) == 4
