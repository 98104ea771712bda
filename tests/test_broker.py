"""Broker replication rules: Kafka's ``Partition`` (leader HWM over the maximal ISR, KIP-497; follower
truncation on a diverging epoch, KIP-320) unit-tested directly, and the broker's request handling
(leader-epoch fencing in Fetch and OffsetForLeaderEpoch, NOT_ENOUGH_REPLICAS, INELIGIBLE_REPLICA revert)
driven through a real controller and the simulator.
"""

from __future__ import annotations

import random
import uuid

import pytest

from kraftlog.broker.broker import Broker
from kraftlog.broker.partition import Partition
from kraftlog.client.admin import Admin
from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.level import Level
from kraftlog.metadata.image import PartitionRegistration
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.scenario import parse_scenario
from kraftlog.sim.runner import ScenarioRun
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog

TID = uuid.UUID(int=9)
LAG_MS = 30000


def batch(n: int, tag: str = "v") -> RecordBatch:
    return RecordBatch(-1, -1, tuple(Record(0, None, f"{tag}{i}".encode()) for i in range(n)))


# ============================================================================ Partition unit tests
def leader_partition(isr=(0, 1, 2), replicas=(0, 1, 2), leo=10, level=Level.CLASSIC, now=0) -> Partition:
    """Broker 0 leading t-0 at leader epoch 0 with ``leo`` records."""
    log = PartitionLog(SimDisk(None), "data/t-0", LogConfig(), 0)
    p = Partition(0, "t", 0, TID, log, level)
    assert p.make_leader(PartitionRegistration(tuple(replicas), tuple(isr), 0, 0, 0), now)
    if leo:
        log.append_as_leader(batch(leo), 0, now)
    return p


def test_pending_expand_hwm_computed_over_isr_plus_new_replica():
    """KIP-497 maximal ISR: while an ISR expansion is in flight the HWM is the min LEO over the committed
    ISR + the new replica, so a record only counts as committed once the replica being added has it
    (the controller might accept the expansion)."""
    p = leader_partition(isr=(0, 1))
    now = 2 * LAG_MS  # long after start: replica 2 is not "caught up" by time
    p.update_follower_fetch_state(2, 4, -1, 0, now)
    assert p.isr_candidate(2, None, True)  # LEO 4 >= HWM 0, fetched in the current epoch
    p.propose((0, 1, 2), {}, expand=True)
    assert p.maximal_isr == {0, 1, 2}
    assert p.isr == (0, 1)  # the committed ISR is unchanged until the controller answers
    p.update_follower_fetch_state(1, 10, -1, 0, now)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 4
    # A second proposal is not started while one is in flight.
    assert not p.isr_candidate(2, None, True)


def test_without_pending_expand_non_isr_laggard_does_not_hold_hwm():
    """Control for the maximal-ISR test: with ISR [0, 1] and nothing pending, a lagging non-ISR replica
    does not hold the HWM back."""
    p = leader_partition(isr=(0, 1))
    now = 2 * LAG_MS
    p.update_follower_fetch_state(2, 4, -1, 0, now)
    p.update_follower_fetch_state(1, 10, -1, 0, now)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 10


def test_pending_shrink_hwm_computed_over_committed_isr():
    """KIP-497 maximal ISR: while an ISR shrink is in flight the HWM is still computed over the committed
    ISR (the controller may refuse the shrink), so the lagging replica holds it back until the shrink
    commits."""
    p = leader_partition(isr=(0, 1, 2))
    now = LAG_MS + 1000
    p.update_follower_fetch_state(1, 10, -1, 0, now)
    p.update_follower_fetch_state(2, 3, -1, 0, now)
    assert p.out_of_sync_replicas(now, LAG_MS) == [2]
    p.propose((0, 1), {}, expand=False)
    assert p.maximal_isr == {0, 1, 2}
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 3
    assert p.commit(m.AlterPartitionResponseItem(TID, 0, Errors.NONE, 0, 0, (0, 1), 0, 1))
    assert p.isr == (0, 1) and p.partition_epoch == 1 and p.pending is None
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 10


def test_revert_pending_returns_to_committed_isr():
    """DESIGN.md: on INELIGIBLE_REPLICA the leader reverts to the committed ISR: the maximal ISR shrinks
    back and the HWM is no longer held by the refused replica."""
    p = leader_partition(isr=(0, 1))
    now = 2 * LAG_MS
    p.update_follower_fetch_state(2, 4, -1, 0, now)
    p.propose((0, 1, 2), {}, expand=True)
    p.update_follower_fetch_state(1, 10, -1, 0, now)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 4
    p.revert_pending()
    assert p.pending is None and p.maximal_isr == {0, 1} and p.isr == (0, 1)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 10


def test_hwm_never_moves_backwards():
    """Kafka: the leader's HWM only moves forward, even when the maximal ISR grows by a replica with a
    smaller LEO."""
    p = leader_partition(isr=(0, 1))
    now = 2 * LAG_MS
    p.update_follower_fetch_state(1, 8, -1, 0, now)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 8
    p.update_follower_fetch_state(2, 8, -1, 0, now)
    p.propose((0, 1, 2), {}, expand=True)
    p.update_follower_fetch_state(2, 8, -1, 0, now)
    assert not p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 8


def test_isr_expansion_requires_fetch_in_current_epoch_and_leo_at_least_hwm_and_epoch_start():
    """DESIGN.md ISR expansion rule: follower LEO >= HWM, >= the start offset of the leader's current
    epoch, a fetch in the current leader epoch, an active broker; at kip903 also fetch broker epoch ==
    metadata-cache broker epoch."""
    p = leader_partition(isr=(0, 1))
    now = 1000
    p.update_follower_fetch_state(1, 10, -1, 0, now)
    p.maybe_increment_high_watermark(now, 1, LAG_MS)
    assert p.log.high_watermark == 10
    p.update_follower_fetch_state(2, 9, -1, 0, now)
    assert not p.isr_candidate(2, None, True)  # below the HWM
    p.update_follower_fetch_state(2, 10, -1, 0, now)
    assert p.isr_candidate(2, None, True)
    assert not p.isr_candidate(2, None, False)  # fenced / shutting down
    p.update_follower_fetch_state(2, 10, -1, -1, now)
    assert not p.isr_candidate(2, None, True)  # not a fetch in the current leader epoch
    # A new leadership starting at offset 10 (epoch 1): LEO must reach the epoch start offset.
    q = leader_partition(isr=(0, 1), leo=0)
    q.log.append_as_follower([batch(6).with_offsets(0, 0)], now)
    assert q.make_leader(PartitionRegistration((0, 1, 2), (0, 1), 0, 1, 1), now)
    assert q.leader_epoch_start_offset == 6
    q.update_follower_fetch_state(2, 5, -1, 1, now)
    assert not q.isr_candidate(2, None, True)
    # KIP-903: at level kip903 the fetch's broker epoch must equal the metadata cache's.
    k = leader_partition(isr=(0, 1), level=Level.KIP903)
    k.update_follower_fetch_state(2, 0, 41, 0, now)
    assert not k.isr_candidate(2, 42, True)
    assert k.isr_candidate(2, 41, True)
    # At classic the broker epoch is not checked.
    c = leader_partition(isr=(0, 1))
    c.update_follower_fetch_state(2, 0, 41, 0, now)
    assert c.isr_candidate(2, 42, True)


def follower_with(entries, leo, hwm=0) -> Partition:
    """A follower replica whose log has leader epochs ``entries`` [(epoch, start)] up to ``leo``."""
    log = PartitionLog(SimDisk(None), "data/t-0", LogConfig(), 0)
    bounds = [s for _, s in entries[1:]] + [leo]  # one more bound than entries when there are none
    for (epoch, start), end in zip(entries, bounds, strict=False):
        log.append_as_follower([batch(end - start).with_offsets(start, epoch)], 0)
    log.update_high_watermark(hwm)
    assert log.epoch_cache.entries() == list(entries) and log.log_end_offset == leo
    p = Partition(1, "t", 0, TID, log, Level.CLASSIC)
    p.make_follower(PartitionRegistration((0, 1, 2), (0, 1, 2), 0, 5, 5))
    return p


def test_truncation_follower_knows_leader_epoch_truncates_to_min_of_both_end_offsets():
    """Kafka getOffsetTruncationState, case "follower has the leader's epoch": truncate to
    min(leader's end offset for the epoch, follower's end offset for it, follower LEO)."""
    p = follower_with([(0, 0), (2, 10), (3, 15)], leo=20)
    # Leader: epoch 2 ended at 12 on its side; the follower's epoch 2 ends at 15 → 12.
    assert p.truncation_offset(m.EpochEndOffset(2, 12)) == 12
    # Leader's epoch 2 went further than ours: our end of epoch 2 (15) wins.
    assert p.truncation_offset(m.EpochEndOffset(2, 18)) == 15
    # The follower's latest epoch: its end offset is its LEO.
    assert p.truncation_offset(m.EpochEndOffset(3, 17)) == 17
    assert p.truncation_offset(m.EpochEndOffset(3, 25)) == 20


def test_truncation_follower_lacks_leader_epoch_truncates_to_end_of_largest_smaller_epoch():
    """Kafka getOffsetTruncationState, case "follower does not know the epoch the leader replied with":
    truncate to the follower's end offset of the largest epoch below it (an intermediate truncation),
    bounded by the LEO."""
    p = follower_with([(0, 0), (3, 10)], leo=14)
    # Leader says epoch 2 ended at 12; the follower has no epoch 2: its floor is epoch 0, which ends at 10.
    assert p.truncation_offset(m.EpochEndOffset(2, 12)) == 10
    r = follower_with([(0, 0), (2, 5), (6, 9)], leo=12)
    assert r.truncation_offset(m.EpochEndOffset(4, 11)) == 9  # floor epoch 2 ends at 9 (< leader's 11)
    assert r.truncation_offset(m.EpochEndOffset(4, 7)) == 9  # intermediate: the leader's offset is not used


def test_truncation_follower_without_epoch_info_truncates_to_leader_end_offset():
    """Kafka getOffsetTruncationState, case "no end offset for the epoch on the follower" (empty cache or
    an epoch above all the follower's epochs): truncate to min(leader's end offset, LEO)."""
    empty = follower_with([], leo=0)
    assert empty.truncation_offset(m.EpochEndOffset(2, 5)) == 0
    p = follower_with([(0, 0), (1, 4)], leo=8)
    assert p.truncation_offset(m.EpochEndOffset(3, 6)) == 6
    assert p.truncation_offset(m.EpochEndOffset(3, 11)) == 8


def test_truncation_undefined_leader_answers():
    """Kafka getOffsetTruncationState, undefined answers: an undefined leader epoch → min(leader's end
    offset, LEO); an undefined end offset → the follower does not go past its HWM."""
    p = follower_with([(0, 0), (1, 4)], leo=8, hwm=5)
    assert p.truncation_offset(m.EpochEndOffset(-1, 6)) == 6
    assert p.truncation_offset(m.EpochEndOffset(-1, 12)) == 8
    assert p.truncation_offset(m.EpochEndOffset(-1, -1)) == 5


# ============================================================== the broker, sans-I/O with a controller
class MiniCluster:
    """Broker 0 (a real Broker) and a real QuorumController on an instant network with virtual time;
    brokers 1 and 2 (heartbeating to the controller) and the clients are played by the test. Messages
    for which ``hold(envelope)`` is true are kept in ``held``."""

    def __init__(self, level: Level = Level.CLASSIC, config: dict | None = None):
        self.config = config or {}
        self.now = 0
        self.ctl = QuorumController(self.config, level, SimDisk(None), random.Random(0), 0)
        self.b = Broker(0, self.config, level, SimDisk(None), random.Random(1), 0)
        self.nodes = {CONTROLLER: self.ctl, 0: self.b}
        self.inbox: dict = {}
        self.held: list = []
        self.hold = lambda env: False
        self._corr = 1000
        self.epoch: dict[int, int] = {}
        self.last_hb: dict[int, int] = {}
        for f in (1, 2):
            r = self.send(m.BrokerRegistrationRequest(f, "kraftlog", uuid.UUID(int=100 + f)), src=f, dst=CONTROLLER)
            self.epoch[f] = r.broker_epoch
        self.advance(3000)  # broker 0 registers, fetches metadata, heartbeats caught up: unfenced
        self.epoch[0] = self.b.broker_epoch
        assert all(self.ctl.image.is_active(x) for x in (0, 1, 2))
        r = self.send(m.CreateTopicsRequest((m.CreatableTopic("t", assignment=((0, 1, 2),)),)), "admin", CONTROLLER)
        self.topic_id = r.topics[0].topic_id
        self.advance(self.now + 10)
        self.p = self.b.partitions[("t", 0)]
        assert self.p.is_leader and self.p.isr == (0, 1, 2)

    def pump(self) -> None:
        progress = True
        while progress:
            progress = False
            for node in list(self.nodes.values()):
                for env in node.poll():
                    progress = True
                    if self.hold(env):
                        self.held.append(env)
                    elif env.dst in self.nodes:
                        self.nodes[env.dst].deliver(self.now, env)
                    else:
                        self.inbox.setdefault(env.dst, []).append(env)

    def release(self) -> None:
        held, self.held = self.held, []
        for env in held:
            self.nodes[env.dst].deliver(self.now, env)
        self.pump()

    def _heartbeat_followers(self) -> None:
        for f in (1, 2):
            if f in self.epoch and self.now - self.last_hb.get(f, -10**9) >= 1000:
                self.last_hb[f] = self.now
                self.ctl.deliver(self.now, m.Envelope(f, CONTROLLER, 1, m.BrokerHeartbeatRequest(
                    f, self.epoch[f], self.ctl.end_offset, False, False)))

    def advance(self, t: int) -> None:
        """Run both nodes' timers up to time ``t`` (followers 1 and 2 heartbeat every second)."""
        while True:
            deadlines = [d for d in (self.b.next_deadline(), self.ctl.next_deadline()) if d is not None]
            d = min(deadlines) if deadlines else None
            if d is None or d > t:
                break
            self.now = max(self.now, d)
            self._heartbeat_followers()
            for node in (self.ctl, self.b):
                nd = node.next_deadline()
                if nd is not None and nd <= self.now:
                    node.tick(self.now)
            self.pump()
            self.now += 1  # never tick twice at the same instant
        self.now = max(self.now, t)
        self._heartbeat_followers()
        self.pump()
        self.inbox.clear()

    def send(self, msg, src, dst=0):
        """Deliver ``msg`` from ``src`` to ``dst`` and return the response addressed to ``src``."""
        self._corr += 1
        corr = self._corr
        self.nodes[dst].deliver(self.now, m.Envelope(src, dst, corr, msg))
        self.pump()
        got = [e.message for e in self.inbox.get(src, []) if e.correlation_id == corr and e.is_response]
        self.inbox[src] = [e for e in self.inbox.get(src, []) if e.correlation_id != corr]
        return got[0] if got else None

    def fetch(self, follower: int, offset: int, epoch: int | None = None, last_epoch: int = -1):
        return self.send(m.FetchRequest(follower, self.epoch[follower], 0, 1, (m.FetchPartition(
            self.topic_id, 0, self.p.leader_epoch if epoch is None else epoch, offset, last_epoch),)), follower)

    def produce(self, n: int, acks: int = 1):
        return self.send(m.ProduceRequest(acks, 30000, (m.ProducePartition("t", 0, (batch(n),)),)), "client")


def test_broker_ineligible_replica_answer_reverts_to_committed_isr_and_hwm_follows_it():
    """KIP-903 race through a real controller: the leader proposes adding replica 2, which the controller
    has just fenced (the leader's metadata has not caught up). While the expansion is pending the HWM is
    held at replica 2's LEO (maximal ISR); the controller answers INELIGIBLE_REPLICA; the leader reverts
    to the committed ISR, after which the HWM advances over ISR [0, 1] and, once the leader's metadata
    shows 2 fenced, no new expansion is proposed."""
    c = MiniCluster(config={"replica.lag.time.max.ms": "1000"})
    p = c.p
    assert c.produce(10).partitions[0].error_code == Errors.NONE
    c.fetch(1, 0)
    c.fetch(1, 10, last_epoch=0)
    # Replica 2 never fetches: the leader shrinks the ISR to [0, 1] after replica.lag.time.max.ms.
    c.advance(c.now + 1600)
    assert c.ctl.image.partitions[("t", 0)].isr == (0, 1)
    assert p.isr == (0, 1) and p.pending is None
    c.fetch(1, 10, last_epoch=0)
    assert p.log.high_watermark == 10
    assert c.produce(10).partitions[0].error_code == Errors.NONE  # LEO 20, HWM 10
    # The controller fences broker 2; its metadata (the parked MetadataFetch answer) is held back, and
    # so is the leader's AlterPartition.
    c.hold = lambda env: env.dst == 0 and type(env.message) is m.MetadataFetchResponse or (
        type(env.message) is m.AlterPartitionRequest)
    c.send(m.BrokerHeartbeatRequest(2, c.epoch[2], c.ctl.end_offset, True, False), 2, CONTROLLER)
    assert c.ctl.image.brokers[2].fenced
    assert c.b.image.is_active(2)  # the leader does not know yet
    resp = c.fetch(2, 10, last_epoch=0)
    assert resp.partitions[0].error_code == Errors.NONE
    assert p.pending is not None and p.pending.new_isr == (0, 1, 2)
    assert p.maximal_isr == {0, 1, 2}
    c.fetch(1, 20, last_epoch=p.leader_epoch)  # records 10..19 are of the current epoch
    assert p.log.high_watermark == 10  # held at replica 2's LEO
    # Deliver the AlterPartition (the controller answers INELIGIBLE_REPLICA), keep holding metadata.
    c.hold = lambda env: env.dst == 0 and type(env.message) is m.MetadataFetchResponse
    alter = [e for e in c.held if type(e.message) is m.AlterPartitionRequest]
    c.held = [e for e in c.held if type(e.message) is not m.AlterPartitionRequest]
    assert len(alter) == 1
    answers = []
    c.ctl.deliver(c.now, alter[0])
    for env in c.ctl.poll():
        if type(env.message) is m.AlterPartitionResponse:
            answers.append(env.message.partitions[0].error_code)
        if env.dst == 0 and type(env.message) is not m.MetadataFetchResponse:
            c.b.deliver(c.now, env)
        else:
            c.held.append(env)
    c.pump()
    assert answers == [Errors.INELIGIBLE_REPLICA]
    assert p.isr == (0, 1) and p.maximal_isr == {0, 1}
    assert c.ctl.image.partitions[("t", 0)].isr == (0, 1)
    c.fetch(1, 20, last_epoch=p.leader_epoch)  # records 10..19 are of the current epoch
    assert p.log.high_watermark == 20
    # Once the metadata shows broker 2 fenced, its fetches no longer start an expansion.
    c.hold = lambda env: False
    c.release()
    assert not c.b.image.is_active(2)
    c.fetch(2, 20, last_epoch=0)
    assert p.pending is None and p.isr == (0, 1)


def test_broker_acks_all_with_isr_below_min_isr_is_not_enough_replicas():
    """Kafka Produce: acks=all with |ISR| < min.insync.replicas → NOT_ENOUGH_REPLICAS and nothing is
    appended; acks=1 is still accepted."""
    c = MiniCluster(config={"replica.lag.time.max.ms": "1000", "min.insync.replicas": "2"})
    p = c.p
    c.advance(c.now + 2200)  # neither follower fetches: the ISR shrinks to [0]
    assert p.isr == (0,), p.isr
    leo = p.log.log_end_offset
    resp = c.produce(5, acks=-1)
    assert resp.partitions[0].error_code == Errors.NOT_ENOUGH_REPLICAS
    assert p.log.log_end_offset == leo
    assert c.produce(5, acks=1).partitions[0].error_code == Errors.NONE
    assert p.log.log_end_offset == leo + 5


@pytest.mark.parametrize("level", [Level.CLASSIC, Level.KIP903])
def test_acks_all_is_not_enough_replicas_after_append_when_the_maximal_isr_fell_below_min_isr(level):
    """Issue 39 rule 2 (Kafka's ``Partition.checkEnoughReplicasReachOffset``): an acks=all record appended
    with ISR [0, 1, 2], min ISR 2; neither follower fetches, the ISR shrinks to [0] (committed, so the
    maximal ISR is [0] too) and the HWM reaches the record over the leader alone: the answer is
    NOT_ENOUGH_REPLICAS_AFTER_APPEND, not NONE (levels classic and kip903; elr and urm never move the HWM
    below min ISR). The positive side (the maximal ISR counts) is
    ``test_fidelity.test_not_enough_replicas_after_append_counts_the_maximal_isr``.

    Shown to fail when the min-ISR comparison in ``ReplicaManager.complete_delayed_produces`` is dropped (the
    part's error set to NONE whenever the HWM reaches it)."""
    c = MiniCluster(level=level, config={"replica.lag.time.max.ms": "1000", "min.insync.replicas": "2"})
    p = c.p
    c.hold = lambda env: type(env.message) is m.ProduceResponse
    assert c.produce(5, acks=-1) is None  # appended; waits for the HWM
    c.advance(c.now + 2200)  # the followers never fetch: the ISR shrinks to the leader
    assert (p.isr, p.maximal_isr, p.log.high_watermark) == ((0,), frozenset((0,)), 5)
    answers = [e.message.partitions[0] for e in c.held]
    assert [(a.error_code, a.base_offset) for a in answers] == [(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, -1)]


# ============================================================== the broker in the simulator
EPOCHS_YAML = """
name: broker-epochs
seed: 3
cluster:
  brokers: 3
  config: {min.insync.replicas: 2}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {produce: {topic: t, partition: 0, count: 5, acks: all}}
  - {shutdown: {broker: 0}}
  - {expect: {partition: t-0, leader: 1}}
  - {restart: {broker: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 30s}}
  - {elect: {partition: t-0, type: preferred}}
  - {wait_until: {partition: t-0, leader: 0, timeout: 10s}}
  - {produce: {topic: t, partition: 0, count: 3, acks: all}}
  - {run_for: 1s}
"""


@pytest.fixture(scope="module")
def epochs_run():
    """t-0 led by broker 0 in leader epoch 2 after epochs 0 (5 records) and 1 (broker 1, no records)."""
    run = ScenarioRun(parse_scenario(EPOCHS_YAML), level=Level.CLASSIC)
    result = run.run()
    assert result.exit_code == 0, result.verdict["failed_expectations"]
    probe = Admin("probe")
    run.sim.add_client(probe)
    return run, probe, result


def ask(run, probe, dst, request):
    sim = run.sim
    rid = probe.submit(request, sim.now, 5000, dst=dst)
    sim._after(probe.node_id, probe)
    sim.run_until(sim.now + 6000, lambda s: rid in probe.results)
    return probe.results.pop(rid)


def leader_part(run) -> Partition:
    p = run.sim.broker(0).partitions[("t", 0)]
    assert p.is_leader and p.leader_epoch == 2
    return p


def test_sim_leader_state_after_two_leader_changes(epochs_run):
    """Setup check: the leader's epoch cache is {0: 0, 2: 5} (epoch 1 wrote nothing), LEO 8."""
    run, _, _ = epochs_run
    p = leader_part(run)
    assert p.log.epoch_cache.entries() == [(0, 0), (2, 5)]
    assert p.log.log_end_offset == 8




def test_former_leader_that_wrote_nothing_in_its_epoch_rejoins_as_follower(epochs_run):
    """KIP-320 / KIP-595 follower truncation: broker 1 led epoch 1 without appending (its cache ends with
    (1, 5) at LEO 5). As a follower of epoch 2 the leader answers DivergingEpoch (0, 5); truncating to 5
    must drop the (1, 5) entry (Kafka's truncateTo truncates the epoch cache even when the offset is
    >= LEO) so that the follower fetches on, catches up to LEO 8, and the acks=all records of epoch 2
    are acknowledged."""
    run, _, result = epochs_run
    follower = run.sim.broker(1).partitions[("t", 0)]
    assert follower.log.epoch_cache.latest_epoch() != 1
    assert follower.log.log_end_offset == 8
    assert result.verdict["acked"]["all"] == 8
    assert leader_part(run).log.high_watermark == 8


def test_diverging_epoch_at_log_end_drops_stale_epoch_entry():
    """Kafka getOffsetTruncationState + UnifiedLog.truncateTo: a follower at LEO 5 with epochs
    {0: 0, 1: 5} told DivergingEpoch (0, 5) truncates to 5 (no records removed) and its epoch cache
    loses (1, 5), so its next Fetch carries LastFetchedEpoch 0 and no longer diverges."""
    p = follower_with([(0, 0)], leo=5)
    p.log.epoch_cache.assign(1, 5)  # it led epoch 1 and appended nothing
    diverging = m.EpochEndOffset(0, 5)
    offset = p.truncation_offset(diverging)
    assert offset == 5
    p.log.truncate_to(offset, 100)
    assert p.log.log_end_offset == 5
    assert p.log.epoch_cache.entries() == [(0, 0)]


@pytest.mark.parametrize("replica", [-1, 1], ids=["consumer", "follower"])
def test_fetch_leader_epoch_fencing_on_leader(epochs_run, replica):
    """KIP-320 Fetch: CurrentLeaderEpoch greater than the leader's → UNKNOWN_LEADER_EPOCH (the leader's
    metadata is behind the client's); smaller → FENCED_LEADER_EPOCH (the client's is behind); equal or
    -1 (no check) → served. The error answer names the current leader and epoch."""
    run, probe, _ = epochs_run
    p = leader_part(run)
    tid = p.topic_id
    sim_epoch = run.sim.controller.image.brokers.get(replica).broker_epoch if replica >= 0 else -1

    def fetch(epoch):
        resp = ask(run, probe, 0, m.FetchRequest(replica, sim_epoch, 0, 1, (m.FetchPartition(
            tid, 0, epoch, 0, -1),)))
        return resp.partitions[0]

    r = fetch(3)
    assert r.error_code == Errors.UNKNOWN_LEADER_EPOCH and r.current_leader == (0, 2)
    r = fetch(1)
    assert r.error_code == Errors.FENCED_LEADER_EPOCH and r.current_leader == (0, 2)
    assert fetch(0).error_code == Errors.FENCED_LEADER_EPOCH
    r = fetch(2)
    assert r.error_code == Errors.NONE and r.records
    assert fetch(-1).error_code == Errors.NONE
    # A follower is not a leader: NOT_LEADER_OR_FOLLOWER whatever the epoch.
    resp = ask(run, probe, 1, m.FetchRequest(replica, sim_epoch, 0, 1, (m.FetchPartition(tid, 0, 2, 0, -1),)))
    assert resp.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("requested, expected", [
    (0, (0, 5)),     # epoch 0 ends where epoch 2 starts
    (1, (0, 5)),     # epoch 1 unknown to the leader: floor epoch 0, next start offset 5
    (2, (2, 8)),     # latest epoch: the LEO
    (3, (-1, -1)),   # above the latest epoch: undefined
    (-1, (-1, -1)),  # undefined epoch
])
def test_offset_for_leader_epoch_answers_per_epoch_cache(epochs_run, requested, expected):
    """OffsetForLeaderEpoch (KIP-101/279, Kafka's LeaderEpochFileCache.endOffsetFor) over the leader's
    cache {0: 0, 2: 5}, LEO 8: (floor epoch, next epoch's start offset), latest → (epoch, LEO),
    undefined → (-1, -1)."""
    run, probe, _ = epochs_run
    resp = ask(run, probe, 0,
               m.OffsetForLeaderEpochRequest(-1, (m.OffsetForLeaderEpochPartition("t", 0, 2, requested),)))
    r = resp.partitions[0]
    assert r.error_code == Errors.NONE
    assert (r.leader_epoch, r.end_offset) == expected


def test_offset_for_leader_epoch_fencing(epochs_run):
    """KIP-320 OffsetsForLeaderEpoch: CurrentLeaderEpoch above the leader's → UNKNOWN_LEADER_EPOCH,
    below → FENCED_LEADER_EPOCH; on a follower → NOT_LEADER_OR_FOLLOWER."""
    run, probe, _ = epochs_run

    def ofle(dst, current):
        resp = ask(run, probe, dst, m.OffsetForLeaderEpochRequest(-1, (m.OffsetForLeaderEpochPartition(
            "t", 0, current, 0),)))
        return resp.partitions[0].error_code

    assert ofle(0, 3) == Errors.UNKNOWN_LEADER_EPOCH
    assert ofle(0, 1) == Errors.FENCED_LEADER_EPOCH
    assert ofle(0, -1) == Errors.NONE
    assert ofle(2, 2) == Errors.NOT_LEADER_OR_FOLLOWER


MIN_ISR_YAML = """
name: min-isr
seed: 1
cluster:
  brokers: 3
  config: {min.insync.replicas: 2}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {produce: {topic: t, partition: 0, count: 4, acks: all}}
  - {crash: {broker: 1, lose: none}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {run_for: 1s}
"""


def test_sim_produce_acks_all_below_min_isr_not_enough_replicas():
    """Kafka Produce in the simulator: after both followers crash and are fenced, ISR [0] <
    min.insync.replicas 2, so acks=all → NOT_ENOUGH_REPLICAS without appending; acks=1 is appended."""
    run = ScenarioRun(parse_scenario(MIN_ISR_YAML), level=Level.CLASSIC)
    result = run.run()
    assert result.exit_code == 0, result.verdict["failed_expectations"]
    probe = Admin("probe")
    run.sim.add_client(probe)
    p = run.sim.broker(0).partitions[("t", 0)]
    assert p.isr == (0,)
    leo = p.log.log_end_offset
    assert leo == 4
    resp = ask(run, probe, 0, m.ProduceRequest(-1, 1000, (m.ProducePartition("t", 0, (batch(3),)),)))
    assert resp.partitions[0].error_code == Errors.NOT_ENOUGH_REPLICAS
    assert p.log.log_end_offset == leo
    resp = ask(run, probe, 0, m.ProduceRequest(1, 1000, (m.ProducePartition("t", 0, (batch(3),)),)))
    assert resp.partitions[0].error_code == Errors.NONE and resp.partitions[0].base_offset == leo
    assert p.log.log_end_offset == leo + 3




def test_hwm_does_not_wait_for_replica_that_shut_down():
    """KIP-497 HWM over the maximal ISR (+ KIP-841 eligibility): after a controlled shutdown of leader 0
    the new leader 1 has ISR [1, 2] = min ISR and acknowledges acks=all writes at once; broker 0, shut down
    and fenced, is not waited for."""
    result = ScenarioRun(parse_scenario("""
name: hwm-after-shutdown
seed: 1
level: classic
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {produce: {topic: t, count: 5, acks: all}}
  - {shutdown: {broker: 0}}
  - {expect: {partition: t-0, leader: 1, isr: [1, 2]}}
  - {produce: {topic: t, count: 5, acks: all, timeout: 5s}}
""")).run()
    assert result.exit_code == 0
    assert result.verdict["acked"]["all"] == 10
    assert result.verdict["final"]["partitions"]["t-0"]["hwm"] == 10


def test_hwm_does_not_wait_for_fenced_crashed_replicas():
    """KIP-497 HWM over the maximal ISR (+ KIP-841 eligibility): with both followers crashed and fenced
    (ISR [0], min ISR 1) records appended by the leader are committed at once: the HWM reaches the LEO."""
    result = ScenarioRun(parse_scenario("""
name: hwm-fenced-followers
seed: 1
level: classic
cluster: {brokers: 3, config: {min.insync.replicas: 1}}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {crash: {broker: 1, lose: none}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {produce: {topic: t, count: 4, acks: 1}}
  - {run_for: 1s}
  - {expect: {partition: t-0, hwm: 4}}
""")).run()
    assert result.verdict["acked"]["1"] == 4
    assert result.verdict["final"]["partitions"]["t-0"]["hwm"] == 4
    assert result.exit_code == 0
