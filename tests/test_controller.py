"""QuorumController, driven sans-I/O: cluster control (registration, broker epochs, sessions, fencing),
AlterPartition validation in Kafka's order (DESIGN.md "Rules worth knowing", KIP-497 / KIP-903),
controller failover, and the partition change builder's election order.

Every test builds its own controller over a fresh ``SimDisk`` with ``random.Random(0)`` at now_ms=0,
registers brokers with BrokerRegistration, unfences them with a BrokerHeartbeat whose
``current_metadata_offset`` >= their broker epoch, and creates topics with an explicit assignment.
"""

from __future__ import annotations

import random
import uuid

import pytest

from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.controller.partition_change import Election, build_partition_change
from kraftlog.level import Level
from kraftlog.metadata.image import PartitionRegistration
from kraftlog.metadata.records import (
    NO_LEADER,
    RECOVERED,
    RECOVERING,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.storage.disk import SimDisk

SESSION_MS = 9000  # Kafka's default broker.session.timeout.ms


# ============================================================================ harness
class Harness:
    """A controller plus the brokers' identities, talking to it through envelopes."""

    def __init__(self, level: Level = Level.CLASSIC, config: dict | None = None, disk: SimDisk | None = None):
        self.disk = disk if disk is not None else SimDisk(None)
        self.level = level
        self.config = config or {}
        self.ctl = QuorumController(self.config, level, self.disk, random.Random(0), 0)
        self.incarnation: dict[int, uuid.UUID] = {}
        self.epoch: dict[int, int] = {}
        self._corr = 0
        self.now = 0

    # ---------------------------------------------------------------- transport
    def call(self, message, src=0, now: int | None = None):
        """Deliver one request to the controller and return its (single) response message."""
        if now is not None:
            self.now = now
        self._corr += 1
        self.ctl.deliver(self.now, m.Envelope(src, CONTROLLER, self._corr, message))
        out = [e for e in self.ctl.poll() if e.correlation_id == self._corr and e.dst == src]
        assert len(out) == 1, out
        assert out[0].is_response
        return out[0].message

    # ---------------------------------------------------------------- brokers
    def register(self, b: int, incarnation: uuid.UUID | None = None, now: int | None = None):
        inc = incarnation or self.incarnation.get(b) or uuid.UUID(int=1000 + b)
        resp = self.call(m.BrokerRegistrationRequest(b, "kraftlog", inc), src=b, now=now)
        if resp.error_code == Errors.NONE:
            self.incarnation[b] = inc
            self.epoch[b] = resp.broker_epoch
        return resp

    def heartbeat(self, b: int, now: int | None = None, offset: int | None = None, want_fence=False,
                  want_shut_down=False):
        return self.call(m.BrokerHeartbeatRequest(
            b, self.epoch[b], self.ctl.end_offset - 1 if offset is None else offset, want_fence, want_shut_down),
            src=b, now=now)

    def start_brokers(self, *ids: int) -> None:
        for b in ids:
            assert self.register(b).error_code == Errors.NONE
        for b in ids:
            resp = self.heartbeat(b)
            assert resp.error_code == Errors.NONE and not resp.is_fenced
        for b in ids:
            assert self.ctl.image.is_active(b)

    def create_topic(self, name: str, assignment, configs=()) -> uuid.UUID:
        resp = self.call(m.CreateTopicsRequest((m.CreatableTopic(
            name, assignment=tuple(tuple(a) for a in assignment), configs=tuple(configs)),)), src="admin")
        assert resp.topics[0].error_code == Errors.NONE, resp
        return resp.topics[0].topic_id

    def part(self, topic: str = "t", index: int = 0) -> PartitionRegistration:
        return self.ctl.image.partitions[(topic, index)]

    # ---------------------------------------------------------------- AlterPartition
    def item(self, topic_id, isr, topic="t", index=0, leader_epoch=None, partition_epoch=None, epochs=None,
             lrs=RECOVERED) -> m.AlterPartitionItem:
        part = self.part(topic, index)
        epochs = epochs or {}
        return m.AlterPartitionItem(
            topic_id, index, part.leader_epoch if leader_epoch is None else leader_epoch,
            tuple(m.BrokerState(b, epochs.get(b, self.epoch.get(b, -1))) for b in isr),
            part.partition_epoch if partition_epoch is None else partition_epoch, lrs)

    def alter(self, sender: int, *items: m.AlterPartitionItem, broker_epoch: int | None = None):
        req = m.AlterPartitionRequest(sender, self.epoch[sender] if broker_epoch is None else broker_epoch, items)
        return self.ctl.handle_alter_partition(self.now, req)


def cluster(level: Level = Level.CLASSIC, brokers=(0, 1, 2), assignment=((0, 1, 2),), config=None):
    h = Harness(level, config)
    h.start_brokers(*brokers)
    topic_id = h.create_topic("t", assignment)
    return h, topic_id


def one_error(resp: m.AlterPartitionResponse) -> int:
    assert resp.error_code == Errors.NONE, Errors(resp.error_code).name
    assert len(resp.partitions) == 1
    return resp.partitions[0].error_code


# ============================================================ AlterPartition validation order
def test_alter_partition_stale_requesting_broker_epoch_is_stale_broker_epoch_first():
    """DESIGN.md validation order, step 1: a requesting broker epoch that differs from its registration
    → STALE_BROKER_EPOCH (top-level), before the topic is even looked up (unknown topic id here)."""
    h, topic_id = cluster()
    before = h.part()
    resp = h.alter(0, h.item(uuid.UUID(int=12345), (0, 1)), broker_epoch=h.epoch[0] + 100)
    assert resp.error_code == Errors.STALE_BROKER_EPOCH
    assert resp.partitions == ()
    # Also for a valid item, and with an older epoch.
    resp = h.alter(0, h.item(topic_id, (0, 1)), broker_epoch=h.epoch[0] - 1)
    assert resp.error_code == Errors.STALE_BROKER_EPOCH
    assert h.part() == before


def test_alter_partition_unknown_topic_id_before_epoch_checks():
    """Validation order, step 2: an unknown topic id → UNKNOWN_TOPIC_ID, even when the epochs would be
    newer than the controller's (NOT_CONTROLLER comes later)."""
    h, _ = cluster()
    resp = h.alter(0, h.item(uuid.uuid4(), (0, 1), leader_epoch=50, partition_epoch=50))
    assert one_error(resp) == Errors.UNKNOWN_TOPIC_ID


def test_alter_partition_newer_leader_epoch_is_not_controller():
    """Validation order, step 3: a leader epoch newer than the controller's → NOT_CONTROLLER (the sender
    likely talks to a stale controller), checked before the sender-is-leader check."""
    h, topic_id = cluster()
    part = h.part()
    assert one_error(h.alter(0, h.item(topic_id, (0, 1), leader_epoch=part.leader_epoch + 1))) == Errors.NOT_CONTROLLER
    # Even from a broker that is not the leader: NOT_CONTROLLER precedes INVALID_REQUEST.
    assert one_error(h.alter(1, h.item(topic_id, (0, 1), leader_epoch=part.leader_epoch + 1))) == Errors.NOT_CONTROLLER
    assert h.part() == part


def test_alter_partition_newer_partition_epoch_is_not_controller():
    """Validation order, step 3: a partition epoch newer than the controller's → NOT_CONTROLLER."""
    h, topic_id = cluster()
    part = h.part()
    resp = h.alter(0, h.item(topic_id, (0, 1), partition_epoch=part.partition_epoch + 1))
    assert one_error(resp) == Errors.NOT_CONTROLLER
    assert h.part() == part


def _bump_leader_epoch(h: Harness) -> None:
    """Move leadership 0 → 1 → 0 with a preferred election: leader epoch 2, leader 0 again."""
    h.heartbeat(0, want_fence=True)  # fence 0: leader moves to 1
    assert h.part().leader == 1
    h.heartbeat(0)  # unfence
    # 0 is back but not in the ISR; let leader 1 add it, then elect the preferred leader.
    p = h.part()
    assert one_error(h.alter(1, h.item(h.ctl.image.topics["t"].topic_id, (0, 1, 2)))) == Errors.NONE
    resp = h.call(m.ElectLeadersRequest(m.ELECTION_PREFERRED, (m.ElectLeadersPartition("t", 0),)), src="admin")
    assert resp.results[0].error_code == Errors.NONE
    assert h.part().leader == 0 and h.part().leader_epoch > p.leader_epoch


def test_alter_partition_older_leader_epoch_is_fenced_leader_epoch():
    """Validation order, step 4: a leader epoch older than the controller's → FENCED_LEADER_EPOCH
    (KIP-320 fencing of a zombie leader), checked before the sender and partition epoch."""
    h, topic_id = cluster()
    _bump_leader_epoch(h)
    part = h.part()
    assert part.leader_epoch >= 1
    resp = h.alter(0, h.item(topic_id, (0, 1), leader_epoch=part.leader_epoch - 1, partition_epoch=0))
    assert one_error(resp) == Errors.FENCED_LEADER_EPOCH
    # From a non-leader too (FENCED_LEADER_EPOCH precedes INVALID_REQUEST).
    resp = h.alter(2, h.item(topic_id, (0, 2), leader_epoch=part.leader_epoch - 1))
    assert one_error(resp) == Errors.FENCED_LEADER_EPOCH
    assert h.part() == part


def test_alter_partition_sender_not_leader_is_invalid_request():
    """Validation order, step 5: current epochs, but the sender is not the partition leader →
    INVALID_REQUEST (checked before an older partition epoch)."""
    h, topic_id = cluster()
    assert h.part().leader == 0
    part = h.part()
    assert one_error(h.alter(1, h.item(topic_id, (1, 2)))) == Errors.INVALID_REQUEST
    # Make the partition epoch move, then send an old partition epoch from the non-leader.
    assert one_error(h.alter(0, h.item(topic_id, (0, 1)))) == Errors.NONE
    resp = h.alter(1, h.item(topic_id, (0, 1), partition_epoch=part.partition_epoch))
    assert one_error(resp) == Errors.INVALID_REQUEST


@pytest.mark.parametrize("level, expected", [(Level.ELR, Errors.INVALID_UPDATE_VERSION),
                                              (Level.KIP903, Errors.FENCED_LEADER_EPOCH),
                                              (Level.CLASSIC, Errors.FENCED_LEADER_EPOCH)])
def test_alter_partition_older_partition_epoch_is_invalid_update_version(level, expected):
    """Validation order, step 6: the leader's partition epoch is older than the controller's (the ISR
    shrank meanwhile, KIP-497) → INVALID_UPDATE_VERSION at level elr; nothing changes. At classic and
    kip903 (Kafka 3.4/3.5) that shrink also bumped the leader epoch, so the same stale request fails one
    step earlier with FENCED_LEADER_EPOCH."""
    h, topic_id = cluster(level)
    stale = h.item(topic_id, (0, 2))  # built at partition epoch 0
    assert one_error(h.alter(0, h.item(topic_id, (0, 1)))) == Errors.NONE
    part = h.part()
    assert part.partition_epoch == stale.partition_epoch + 1
    assert one_error(h.alter(0, stale)) == expected
    assert h.part() == part


def test_alter_partition_isr_member_not_a_replica_is_invalid_request():
    """Validation order, step 7: a proposed ISR member that is not a replica of the partition →
    INVALID_REQUEST (even a registered, unfenced broker)."""
    h, topic_id = cluster(brokers=(0, 1, 2, 3))
    part = h.part()
    assert 3 not in part.replicas
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 2, 3)))) == Errors.INVALID_REQUEST
    assert h.part() == part


def test_alter_partition_isr_without_the_leader_is_invalid_request():
    """Validation order, step 7: a proposed ISR that leaves out the leader → INVALID_REQUEST."""
    h, topic_id = cluster()
    part = h.part()
    assert one_error(h.alter(0, h.item(topic_id, (1, 2)))) == Errors.INVALID_REQUEST
    assert h.part() == part


def test_alter_partition_fenced_member_is_ineligible_replica():
    """Validation order, step 8 (KIP-903): a proposed member that is fenced → INELIGIBLE_REPLICA."""
    h, topic_id = cluster()
    h.heartbeat(2, want_fence=True)
    assert h.ctl.image.brokers[2].fenced
    assert set(h.part().isr) == {0, 1}  # fencing removed it from the ISR
    part = h.part()
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 2)))) == Errors.INELIGIBLE_REPLICA
    assert h.part() == part


def test_alter_partition_member_in_controlled_shutdown_is_ineligible_replica():
    """Validation order, step 8: a proposed member in controlled shutdown → INELIGIBLE_REPLICA."""
    h, topic_id = cluster(assignment=((0, 1, 2), (2, 0, 1)))
    # Broker 2 leads t-1, so its shutdown request puts it in controlled shutdown (Kafka's
    # BrokerHeartbeatManager: CONTROLLED_SHUTDOWN, not SHUTDOWN_NOW); it is not yet told to shut down.
    resp = h.heartbeat(2, want_shut_down=True, offset=0)
    assert resp.error_code == Errors.NONE and not resp.should_shut_down
    reg = h.ctl.image.brokers[2]
    assert reg.in_controlled_shutdown and not reg.fenced
    assert 2 not in h.part().isr
    part = h.part()
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 2)))) == Errors.INELIGIBLE_REPLICA
    assert h.part() == part


def test_alter_partition_unregistered_member_is_ineligible_replica():
    """Validation order, step 8: a proposed member (a replica) that never registered → INELIGIBLE_REPLICA."""
    h = Harness()
    h.start_brokers(0, 1)
    # CreateTopics refuses an unregistered replica (INVALID_REPLICA_ASSIGNMENT, issue 24), so the topic is
    # written into the metadata log directly, as Kafka's ReplicationControlManagerTest replays records.
    topic_id = uuid.UUID(int=77)
    h.ctl.append([TopicRecord("t", topic_id), PartitionRecord(0, topic_id, (0, 1, 3), (0, 1), 0)], h.now)
    assert h.part().isr == (0, 1)
    assert 3 not in h.ctl.image.brokers
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 3), epochs={3: -1}))) == Errors.INELIGIBLE_REPLICA


def _isr_without_1_then_reregister_1(level: Level):
    """ISR [0, 2]; broker 1 restarts (a new incarnation: new broker epoch) and is unfenced."""
    h, topic_id = cluster(level)
    assert one_error(h.alter(0, h.item(topic_id, (0, 2)))) == Errors.NONE
    old_epoch = h.epoch[1]
    h.heartbeat(1, want_fence=True)
    assert h.register(1, incarnation=uuid.UUID(int=2001)).error_code == Errors.NONE
    assert h.epoch[1] > old_epoch
    assert not h.heartbeat(1).is_fenced
    return h, topic_id, old_epoch


def test_kip903_member_with_stale_broker_epoch_is_ineligible_replica():
    """KIP-903: at level kip903 a proposed member whose broker epoch differs from its registration (a
    previous incarnation's epoch, as a stale fetch would carry) → INELIGIBLE_REPLICA; with the current
    epoch the same expansion is accepted."""
    h, topic_id, old_epoch = _isr_without_1_then_reregister_1(Level.KIP903)
    part = h.part()
    resp = h.alter(0, h.item(topic_id, (0, 1, 2), epochs={1: old_epoch}))
    assert one_error(resp) == Errors.INELIGIBLE_REPLICA
    assert h.part() == part
    # -1 means "no epoch check" and the current epoch is fine.
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 2)))) == Errors.NONE
    assert set(h.part().isr) == {0, 1, 2}


def test_classic_member_with_stale_broker_epoch_is_accepted():
    """Level classic (pre-KIP-903, Kafka 3.4): no broker-epoch check, so the same request with a stale
    member epoch is accepted and the member joins the ISR."""
    h, topic_id, old_epoch = _isr_without_1_then_reregister_1(Level.CLASSIC)
    resp = h.alter(0, h.item(topic_id, (0, 1, 2), epochs={1: old_epoch}))
    assert one_error(resp) == Errors.NONE
    assert set(h.part().isr) == {0, 1, 2}


def test_successful_shrink_bumps_partition_epoch_not_leader_epoch():
    """KIP-497 (level elr, Kafka 3.6+): an accepted ISR shrink is a PartitionChangeRecord without a
    leader: the partition epoch is bumped, the leader epoch is not; the response carries the committed
    state."""
    h, topic_id = cluster(Level.ELR)
    before = h.part()
    resp = h.alter(0, h.item(topic_id, (0, 1)))
    assert one_error(resp) == Errors.NONE
    item = resp.partitions[0]
    after = h.part()
    assert after.isr == (0, 1)
    assert after.leader == 0
    assert after.leader_epoch == before.leader_epoch
    assert after.partition_epoch == before.partition_epoch + 1
    assert (item.leader_id, item.leader_epoch, tuple(item.isr), item.partition_epoch) == (
        0, before.leader_epoch, (0, 1), before.partition_epoch + 1)
    rec = h.ctl.log[-1]
    assert isinstance(rec, PartitionChangeRecord) and rec.leader is None and rec.isr == (0, 1)


# ============================================================ cluster control
def test_broker_epoch_is_offset_of_register_broker_record():
    """KRaft: the broker epoch is the offset of the broker's RegisterBrokerRecord in the metadata log,
    including after a re-registration."""
    h = Harness()
    h.start_brokers(0, 1, 2)
    for b in (0, 1, 2):
        rec = h.ctl.log[h.epoch[b]]
        assert isinstance(rec, RegisterBrokerRecord)
        assert rec.broker_id == b and rec.broker_epoch == h.epoch[b]
        assert h.ctl.image.brokers[b].broker_epoch == h.epoch[b]
    assert len(set(h.epoch.values())) == 3
    h.heartbeat(1, want_fence=True)
    end = h.ctl.end_offset
    assert h.register(1, incarnation=uuid.UUID(int=2001)).error_code == Errors.NONE
    assert h.epoch[1] == end
    assert isinstance(h.ctl.log[end], RegisterBrokerRecord) and h.ctl.log[end].broker_id == 1


@pytest.mark.parametrize("level", [Level.CLASSIC, Level.ELR])
def test_registration_with_the_same_incarnation_is_an_amendment(level):
    """ClusterControlManager.registerBroker: a registration carrying the incarnation id already registered
    (a retry whose first answer was lost) is an amendment: the broker epoch stays, the fencing state is
    kept and no shutdown handling runs — even at level elr with a PreviousBrokerEpoch that differs from
    the (unchanged) epoch."""
    h, topic_id = cluster(level)
    epoch = h.epoch[1]
    before = h.part()
    resp = h.call(m.BrokerRegistrationRequest(1, "kraftlog", h.incarnation[1], previous_broker_epoch=-1), src=1)
    assert resp.error_code == Errors.NONE and resp.broker_epoch == epoch
    reg = h.ctl.image.brokers[1]
    assert reg.broker_epoch == epoch and not reg.fenced
    assert h.part() == before  # still in the ISR: no unclean-shutdown handling
    assert not h.heartbeat(1).is_fenced  # the session goes on with the same epoch


def test_heartbeat_unfences_only_once_caught_up_to_broker_epoch():
    """KRaft: a registered broker starts fenced and is unfenced by a heartbeat whose metadata offset has
    reached its broker epoch."""
    h = Harness()
    h.register(0)
    assert h.ctl.image.brokers[0].fenced
    resp = h.heartbeat(0, offset=h.epoch[0] - 1)
    assert resp.is_fenced and not resp.is_caught_up
    resp = h.heartbeat(0, offset=h.epoch[0])
    assert not resp.is_fenced and resp.is_caught_up
    assert not h.ctl.image.brokers[0].fenced


def test_reregistration_new_incarnation_duplicate_while_session_valid_then_accepted_after_timeout():
    """Kafka's ClusterControlManager: a registration with a new incarnation id while the old
    incarnation's session is valid → DUPLICATE_BROKER_REGISTRATION; once broker.session.timeout.ms has
    passed without a heartbeat (the controller's tick fences it) the registration is accepted with a new
    broker epoch = the offset of its RegisterBrokerRecord."""
    h, _ = cluster()
    old_epoch = h.epoch[0]
    new_inc = uuid.UUID(int=77)
    resp = h.register(0, incarnation=new_inc, now=1000)
    assert resp.error_code == Errors.DUPLICATE_BROKER_REGISTRATION
    assert h.epoch[0] == old_epoch and h.ctl.image.brokers[0].broker_epoch == old_epoch
    # Still inside the session (last heartbeat at 0): still a duplicate.
    assert h.register(0, incarnation=new_inc, now=SESSION_MS - 1).error_code == Errors.DUPLICATE_BROKER_REGISTRATION
    # Brokers 1 and 2 keep heartbeating; broker 0 does not.
    for t in (2000, 4000, 6000, 8000):
        h.heartbeat(1, now=t)
        h.heartbeat(2, now=t)
    h.now = SESSION_MS
    h.ctl.tick(SESSION_MS)
    assert h.ctl.image.brokers[0].fenced
    assert not h.ctl.image.brokers[1].fenced
    end = h.ctl.end_offset
    resp = h.register(0, incarnation=new_inc, now=SESSION_MS + 1)
    assert resp.error_code == Errors.NONE
    assert resp.broker_epoch == end
    reg = h.ctl.image.brokers[0]
    assert reg.incarnation_id == new_inc and reg.broker_epoch == end and reg.fenced


def test_session_timeout_fences_broker_removes_it_from_isr_and_elects_next_isr_member_in_assignment_order():
    """Kafka's fencing (handleBrokerFenced): a broker without a heartbeat for broker.session.timeout.ms
    is fenced, removed from every ISR, and a partition it led elects the first remaining ISR member in
    assignment order (here replica 2, listed before 1), bumping the leader epoch."""
    h, _ = cluster(assignment=((0, 2, 1),))
    before = h.part()
    assert before.leader == 0
    for t in (3000, 6000):
        h.heartbeat(1, now=t)
        h.heartbeat(2, now=t)
    h.ctl.tick(SESSION_MS - 1)
    assert not h.ctl.image.brokers[0].fenced
    h.ctl.tick(SESSION_MS)
    assert h.ctl.image.brokers[0].fenced
    part = h.part()
    assert part.leader == 2
    assert set(part.isr) == {1, 2}
    assert part.leader_epoch == before.leader_epoch + 1
    assert part.partition_epoch > before.partition_epoch
    assert not h.ctl.image.brokers[1].fenced and not h.ctl.image.brokers[2].fenced


def test_classic_last_isr_member_stays_in_isr_when_fenced_with_no_leader():
    """Pre-KIP-966 (level classic, Kafka 3.4): "the last replica in ISR will not be removed from the ISR
    when it goes down": fencing the only ISR member leaves ISR [it] and leader -1; no clean leader can be
    elected when another replica comes back (unclean election disabled)."""
    h, topic_id = cluster(assignment=((0, 1),))
    assert one_error(h.alter(0, h.item(topic_id, (0,)))) == Errors.NONE
    assert h.part().isr == (0,)
    h.heartbeat(0, want_fence=True)
    part = h.part()
    assert part.isr == (0,)
    assert part.leader == NO_LEADER
    assert part.leader_epoch == 2  # 1 from the shrink (Kafka 3.4 bumps on every ISR shrink), 2 from fencing
    # Broker 1 (not in the ISR) is active; the periodic election finds no clean leader.
    h.heartbeat(1, now=1500)
    h.ctl.tick(1500)
    assert h.part().leader == NO_LEADER and h.part().isr == (0,)
    # When 0 comes back it is elected again from the ISR.
    h.heartbeat(0, now=1600)
    assert h.part().leader == 0 and h.part().isr == (0,)


def test_controller_failover_replays_same_image_from_metadata_log():
    """Controller failover: a new QuorumController over the same disk (the metadata log is fsynced on
    every append, so it survives a crash that loses the page cache) replays the same MetadataImage, and
    every registered broker gets a fresh session (not fenced at once)."""
    h, topic_id = cluster(brokers=(0, 1, 2, 3), assignment=((0, 1, 2), (1, 2, 3)))
    assert one_error(h.alter(0, h.item(topic_id, (0, 1)))) == Errors.NONE
    h.heartbeat(3, want_fence=True)
    h.call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
        m.RESOURCE_TOPIC, "t", (m.AlterableConfig("min.insync.replicas", m.OP_SET, "2"),)),)), src="admin")
    image = h.ctl.image
    log = list(h.ctl.log)
    h.disk.crash("unflushed", 5000)
    new = QuorumController({}, Level.CLASSIC, h.disk, random.Random(1), 5000)
    assert list(new.log) == log
    assert new.image == image
    assert new.end_offset == h.ctl.end_offset
    assert new.image.partitions[("t", 1)].isr == (1, 2)
    assert new.image.config("min.insync.replicas", "t") == "2"
    # Fresh sessions: nobody is fenced by the first tick, only after a full session timeout.
    new.tick(5000 + SESSION_MS - 1)
    assert all(not new.image.brokers[b].fenced for b in (0, 1, 2))
    # The new controller keeps serving AlterPartition against the replayed state.
    h.ctl = new
    assert one_error(h.alter(0, h.item(topic_id, (0, 1, 2)))) == Errors.NONE


# ============================================================ partition change builder
TID = uuid.UUID(int=5)


def reg(replicas, isr, leader, leader_epoch=3, partition_epoch=7, lrs=RECOVERED) -> PartitionRegistration:
    return PartitionRegistration(tuple(replicas), tuple(isr), leader, leader_epoch, partition_epoch, lrs)


def change(part, acceptable, level=Level.CLASSIC, unclean=False, **kw):
    if unclean:
        kw.setdefault("election", Election.UNCLEAN)
    return build_partition_change(part, TID, 0, is_acceptable_leader=acceptable, level=level, min_isr=1, **kw)


@pytest.mark.parametrize("level", [Level.ELR])
def test_election_keeps_current_leader_when_it_stays_in_isr(level):
    """PartitionChangeBuilder (level elr, Kafka 3.6+): the current leader is kept when it stays in the ISR
    and is acceptable; a shrink that removes another replica changes the ISR only, no leader field, no
    leader-epoch bump."""
    part = reg((0, 1, 2), (0, 1, 2), 1)
    rec = change(part, lambda b: True, target_isr=(1, 2), level=level)
    assert rec is not None and rec.leader is None and rec.isr == (1, 2)
    assert part.merge(rec).leader_epoch == part.leader_epoch
    # Nothing to change at all → no record.
    assert change(part, lambda b: True, level=level) is None


@pytest.mark.parametrize("level", [Level.CLASSIC, Level.KIP903])
def test_isr_shrink_bumps_the_leader_epoch_below_level_elr(level):
    """triggerLeaderEpochBumpForIsrShrinkIfNeeded: Kafka 3.4/3.5 metadata versions (levels classic and
    kip903) bump the leader epoch on every ISR shrink by writing the same leader into the record; an ISR
    expansion does not bump."""
    part = reg((0, 1, 2), (0, 1, 2), 1)
    rec = change(part, lambda b: True, target_isr=(1, 2), level=level)
    assert rec.leader == 1 and rec.isr == (1, 2)
    assert part.merge(rec).leader_epoch == part.leader_epoch + 1
    grown = reg((0, 1, 2), (1, 2), 1)
    rec = change(grown, lambda b: True, target_isr=(0, 1, 2), level=level)
    assert rec.leader is None and grown.merge(rec).leader_epoch == grown.leader_epoch


def test_election_picks_first_isr_replica_in_assignment_order():
    """PartitionChangeBuilder: when the leader leaves, the new leader is the first acceptable ISR member
    in assignment order (replicas [2, 1, 0] → 1, not the numerically smaller 0); an unacceptable
    (fenced) ISR member is skipped."""
    part = reg((2, 1, 0), (2, 1, 0), 2)
    rec = change(part, lambda b: b != 2, target_isr=(0, 1))
    assert rec.leader == 1
    assert rec.isr == (1, 0)  # kept in assignment order
    assert part.merge(rec).leader_epoch == part.leader_epoch + 1
    rec = change(part, lambda b: b == 0, target_isr=(0, 1))
    assert rec.leader == 0


def test_election_no_leader_when_isr_members_inactive_and_unclean_disabled():
    """PartitionChangeBuilder: every ISR member unacceptable and unclean election disabled → leader -1
    (the non-ISR replica 2 is active but not eligible); at classic the ISR is kept."""
    part = reg((0, 1, 2), (0, 1), 0)
    rec = change(part, lambda b: b == 2)
    assert rec is not None and rec.leader == NO_LEADER
    assert rec.isr is None  # unchanged
    merged = part.merge(rec)
    assert merged.leader == NO_LEADER and merged.isr == (0, 1)
    # An ElectLeaders PREFERRED election does not allow unclean either.
    assert change(part, lambda b: b == 2, election=Election.PREFERRED).leader == NO_LEADER


@pytest.mark.parametrize("level", [Level.CLASSIC, Level.ELR])
def test_unclean_election_picks_first_acceptable_replica_in_assignment_order(level):
    """Kafka's electAnyLeader with Election.UNCLEAN (unclean.leader.election.enable, or ElectLeaders
    UNCLEAN): the FIRST acceptable replica in assignment order becomes leader — deterministic, never
    random — with ISR = [it] and LeaderRecoveryState RECOVERING (1, KIP-704)."""
    part = reg((0, 3, 2, 1), (0,), NO_LEADER)
    acceptable = lambda b: b in (1, 3)  # noqa: E731
    rec = change(part, acceptable, unclean=True, level=level)
    assert rec.leader == 3  # 3 precedes 1 in the assignment [0, 3, 2, 1]
    assert rec.isr == (3,)
    assert rec.leader_recovery_state == RECOVERING == 1
    # An ONLINE election never elects outside the ISR.
    assert change(part, acceptable, level=level) is None
    # No acceptable replica at all: no leader even with unclean allowed.
    assert change(part, lambda b: False, unclean=True, level=level) is None


def test_preferred_election_moves_leadership_to_first_replica_in_isr():
    """Election.PREFERRED: leadership moves to replicas[0] when it is in the ISR and acceptable."""
    part = reg((0, 1, 2), (0, 1, 2), 1)
    rec = change(part, lambda b: True, election=Election.PREFERRED)
    assert rec.leader == 0
    assert change(part, lambda b: b != 0, election=Election.PREFERRED) is None
