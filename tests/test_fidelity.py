"""Issue 9's deviations from Kafka 4.x, each pinned by the rule Kafka follows (and kraftlog now does).

Items 1 and 2 (the data-losing ones) have their stories in ``scenarios/registration-retry-keeps-elr.yaml``
and ``scenarios/min-isr-change-forgets-last-known-leader.yaml``, run here at level elr; the others are
tested directly against the controller (``test_controller.Harness``), the broker (``test_broker``'s
``MiniCluster``) or whole simulated runs.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraftlog.broker.partition import Partition
from kraftlog.controller.partition_change import Election, build_partition_change
from kraftlog.level import Level
from kraftlog.metadata.image import PartitionRegistration
from kraftlog.metadata.records import NO_LEADER, RECOVERED, RECOVERING, PartitionChangeRecord
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.scenario import load_scenario, parse_scenario
from kraftlog.sim.runner import run_scenario
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog
from test_broker import MiniCluster, batch
from test_controller import Harness, cluster, one_error

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def alter_config(h: Harness, resource_type: int, name: str, key: str, value, op=m.OP_SET):
    resp = h.call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
        resource_type, name, (m.AlterableConfig(key, op, value),)),)), src="admin")
    return resp.responses[0]


# ===================================================================== items 1 and 2: the stories
@pytest.mark.parametrize("name", ["registration-retry-keeps-elr", "min-isr-change-forgets-last-known-leader"])
def test_data_losing_deviation_stories_lose_nothing_at_level_elr(name):
    """Deviation 1 (a retried registration is an amendment) and 2 (a min ISR change forgets the last
    known leader): each story lost 20 acknowledged records before the fix; at level elr it loses none
    and every expectation holds (the min-ISR story ends leaderless, as Kafka's partition would)."""
    result = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"), level=Level.ELR)
    v = result.verdict
    assert v["lost_acked"] == 0
    assert v["failed_expectations"] == []
    assert v["acked"]["all"] == 20
    assert v["leaderless_partitions"] == (["t-0"] if name.startswith("min-isr") else [])


# ===================================================================== item 3: deterministic unclean election
UNCLEAN_STORY = """
name: unclean-election-choice
cluster:
  brokers: 4
  config: {min.insync.replicas: 1, unclean.leader.election.enable: "true",
           unclean.leader.election.interval.ms: 2000}
topics:
  - {name: t, assignment: [[0, 3, 1, 2]]}
steps:
  - {at: 1s, crash: {broker: 3, lose: none}}
  - {crash: {broker: 1, lose: none}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 30s}}
  - {restart: {broker: 1}}
  - {restart: {broker: 2}}
  - {wait_until: {broker: 2, fenced: false, timeout: 30s}}
  - {wait_until: {broker: 1, fenced: false, timeout: 30s}}
  - {crash: {broker: 0, lose: none}}
  - {wait_until: {partition: t-0, recovering: true, timeout: 30s}}
until: 60s
"""


@pytest.mark.parametrize("level", [Level.CLASSIC, Level.ELR])
def test_unclean_election_picks_the_first_acceptable_replica_in_assignment_order_for_every_seed(level):
    """Kafka's electAnyLeader: with unclean.leader.election.enable the leader of a partition whose ISR
    (and ELR) members are all gone is the first acceptable replica in assignment order — here 1 in
    [0, 3, 1, 2] (3 is down, 1 and 2 are up) — whatever the seed."""
    leaders = set()
    for seed in range(6):
        v = run_scenario(parse_scenario(UNCLEAN_STORY, "unclean.yaml"), level=level, seed=seed).verdict
        assert v["failed_expectations"] == [], v["failed_expectations"]
        leaders.add(v["final"]["partitions"]["t-0"]["leader"])
    assert leaders == {1}


def test_unclean_election_prefers_the_last_known_leader_when_it_is_acceptable():
    """Kafka's electAnyLeader with ELR (level elr): ISR and ELR empty → the last known leader if acceptable
    (canElectLastKnownLeader), before the first acceptable replica in assignment order; else the first."""
    part = PartitionRegistration((0, 1, 2), (), NO_LEADER, 4, 9, last_known_leader=2)
    kw = dict(level=Level.ELR, min_isr=2, election=Election.UNCLEAN)
    rec = build_partition_change(part, uuid.UUID(int=1), 0, is_acceptable_leader=lambda b: True, **kw)
    assert rec.leader == 2 and rec.isr == (2,) and rec.leader_recovery_state == RECOVERING
    rec = build_partition_change(part, uuid.UUID(int=1), 0, is_acceptable_leader=lambda b: b != 2, **kw)
    assert rec.leader == 0 and rec.isr == (0,)


# ===================================================================== item 5: when the controller elects
def test_config_change_never_elects_the_periodic_unclean_task_does():
    """Kafka elects leaderless partitions on broker unfencing and in the periodic unclean-election task
    (unclean.leader.election.interval.ms, only for topics with unclean election enabled) — never as a
    side effect of IncrementalAlterConfigs."""
    h, topic_id = cluster(Level.CLASSIC, config={"unclean.leader.election.interval.ms": "60000"})
    assert one_error(h.alter(0, h.item(topic_id, (0,)))) == Errors.NONE  # ISR [0]
    h.heartbeat(0, want_fence=True)
    assert h.part().leader == NO_LEADER and h.part().isr == (0,)
    assert alter_config(h, m.RESOURCE_TOPIC, "t", "unclean.leader.election.enable", "true").error_code == Errors.NONE
    assert h.part().leader == NO_LEADER  # no election as a side effect of the config change
    h.heartbeat(1, now=30000)
    h.heartbeat(2, now=30000)
    h.ctl.tick(30000)
    assert h.part().leader == NO_LEADER  # the task has not run yet
    h.heartbeat(1, now=60000)
    h.heartbeat(2, now=60000)
    h.ctl.tick(60000)
    part = h.part()
    assert part.leader == 1 and part.isr == (1,) and part.leader_recovery_state == RECOVERING


def test_unclean_election_interval_defaults_to_kafkas_five_minutes():
    """unclean.leader.election.interval.ms: Kafka's default is 300000 ms (5 min)."""
    h = Harness(Level.ELR)
    assert h.ctl.unclean_election_interval_ms == 300000
    assert h.ctl.next_deadline() == 300000


def test_unfencing_elects_every_leaderless_partition():
    """Kafka's handleBrokerUnfenced elects every leaderless partition: the broker being unfenced counts as
    acceptable although the image still shows it fenced."""
    h, topic_id = cluster(Level.ELR, assignment=((0, 1, 2),))
    h.heartbeat(1, want_fence=True)
    h.heartbeat(2, want_fence=True)
    h.heartbeat(0, want_fence=True)
    part = h.part()
    assert part.leader == NO_LEADER and part.isr == () and set(part.elr) == {0}
    assert not h.heartbeat(0).is_fenced
    assert h.part().leader == 0 and h.part().isr == (0,)


# ===================================================================== item 6: RECOVERING
def test_recovering_clears_with_the_next_isr_change_not_by_the_leaders_own_alter_partition():
    """KIP-704 as Kafka 4.x does it: an unclean leader marks only its local state RECOVERED (no
    AlterPartition of its own); the controller's LeaderRecoveryState stays RECOVERING until the next ISR
    change, whose AlterPartition carries RECOVERED."""
    story = """
name: recovering
cluster:
  brokers: 3
  config: {min.insync.replicas: 1, replica.lag.time.max.ms: 3000}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {at: 1s, isolate: {nodes: [1, 2]}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {crash: {broker: 0, lose: none}}
  - {heal: {}}
  - {wait_until: {broker: 0, fenced: true, timeout: 20s}}
  - {cut: {from: 2, to: 1}}                    # 2 cannot catch up from 1 for now
  - {elect: {partition: t-0, type: unclean}}
  - {wait_until: {partition: t-0, leader: 1, recovering: true, timeout: 10s}}
  - {run_for: 5s}
  - {expect: {partition: t-0, leader: 1, isr: [1], recovering: true}}
  - {heal: {}}
  - {wait_until: {partition: t-0, isr: [1, 2], timeout: 30s}}
  - {expect: {partition: t-0, recovering: false}}
until: 60s
"""
    result = run_scenario(parse_scenario(story, "recovering.yaml"), level=Level.ELR)
    assert result.verdict["failed_expectations"] == []
    lines = [line for line in result.timeline if "RECOVERED" in line]
    assert lines and all("ISR ->" in line for line in lines), lines


def test_leader_takes_local_state_recovered_without_proposing():
    """Partition.makeLeader: a RECOVERING registration makes the local state RECOVERED; nothing pending."""
    log = PartitionLog(SimDisk(None), "data/t-0", LogConfig(), 0)
    p = Partition(0, "t", 0, uuid.UUID(int=1), log, Level.ELR)
    p.make_leader(PartitionRegistration((0, 1), (0,), 0, 3, 5, leader_recovery_state=RECOVERING), 0)
    assert p.leader_recovery_state == RECOVERED and p.pending is None


# ===================================================================== item 7: lagging HWM on Fetch
def test_consumer_fetch_reads_below_a_lagging_hwm_while_list_offsets_refuses_it():
    """KIP-207 applies to ListOffsets only: while a new leader's HWM lags its epoch start offset, a
    consumer Fetch is answered (records below the HWM, the lagging HWM) and ListOffsets LATEST answers
    OFFSET_NOT_AVAILABLE."""
    c = MiniCluster(level=Level.ELR)
    p = c.p
    assert c.produce(10).partitions[0].error_code == Errors.NONE
    c.fetch(1, 10, last_epoch=0)
    c.fetch(2, 10, last_epoch=0)
    assert p.log.high_watermark == 10
    # A new leader epoch at LEO 12 with the HWM still at 10 (as after a leader change).
    assert c.produce(2).partitions[0].error_code == Errors.NONE
    p.leader_epoch_start_offset = p.log.log_end_offset
    resp = c.send(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(c.topic_id, 0, p.leader_epoch, 4),)), "client")
    part = resp.partitions[0]
    assert part.error_code == Errors.NONE and part.high_watermark == 10
    assert part.records and part.records[0].base_offset <= 4
    resp = c.send(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("t", 0, m.LATEST_TIMESTAMP),)), "client")
    assert resp.partitions[0].error_code == Errors.OFFSET_NOT_AVAILABLE


# ===================================================================== item 8: controlled shutdown
def test_controlled_shutdown_waits_for_leaderships_to_move_and_active_brokers_to_catch_up():
    """Kafka's BrokerHeartbeatManager: an unfenced broker asking to shut down enters controlled shutdown
    when it leads partitions (SHUTDOWN_NOW at once when it leads none); it is granted once it leads
    nothing and every active broker reported a metadata offset at or past its controlled shutdown offset
    — its own metadata offset does not matter."""
    h, topic_id = cluster(Level.ELR, assignment=((0, 1, 2), (2, 0, 1)))
    resp = h.heartbeat(2, want_shut_down=True, offset=0)
    assert not resp.should_shut_down and h.ctl.image.brokers[2].in_controlled_shutdown
    assert h.part("t", 1).leader == 0  # leadership moved
    offset = h.ctl.controlled_shutdown_offset[2]
    # Broker 2 itself caught up, but 0 and 1 last reported older offsets: not yet.
    h.heartbeat(0, offset=offset - 1)
    assert not h.heartbeat(2, offset=h.ctl.end_offset).should_shut_down
    h.heartbeat(0, offset=offset)
    assert not h.heartbeat(2, offset=0).should_shut_down  # broker 1 still behind
    h.heartbeat(1, offset=offset)
    resp = h.heartbeat(2, offset=0)
    assert resp.should_shut_down and h.ctl.image.brokers[2].fenced


def test_shutdown_of_a_broker_leading_nothing_is_granted_at_once():
    """BrokerHeartbeatManager UNFENCED → SHUTDOWN_NOW when the broker has no leaderships: fenced, out of
    every ISR, told to shut down in the same answer."""
    h, topic_id = cluster(Level.ELR)
    resp = h.heartbeat(2, want_shut_down=True, offset=0)
    assert resp.should_shut_down and h.ctl.image.brokers[2].fenced
    assert 2 not in h.part().isr


# ===================================================================== item 9: AlterPartition on the leader
@pytest.mark.parametrize("error", [Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED, Errors.FENCED_LEADER_EPOCH,
                                   Errors.INVALID_UPDATE_VERSION, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   Errors.UNKNOWN_TOPIC_ID])
def test_alter_partition_errors_that_wait_for_metadata_keep_the_change_pending(error):
    """Partition.handleAlterPartitionError: these errors keep the pending change (and its maximal ISR)
    until metadata overrides it — no retry is sent."""
    c = MiniCluster(level=Level.ELR, config={"replica.lag.time.max.ms": "1000"})
    _answer_pending_shrink(c, error)
    p = c.p
    assert p.pending is not None and p.pending.sent
    c.advance(c.now + 5000)
    assert not [e for e in c.held if type(e.message) is m.AlterPartitionRequest]  # nothing resent


@pytest.mark.parametrize("error", [Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED])
def test_alter_partition_rejections_revert_to_the_committed_state(error):
    """handleAlterPartitionError: INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED reset to the last
    committed state."""
    c = MiniCluster(level=Level.ELR, config={"replica.lag.time.max.ms": "1000"})
    _answer_pending_shrink(c, error)
    assert c.p.pending is None and c.p.maximal_isr == frozenset(c.p.isr)


def test_other_alter_partition_errors_are_retried():
    """handleAlterPartitionError, default case: an unexpected error (e.g. REQUEST_TIMED_OUT) is retried."""
    c = MiniCluster(level=Level.ELR, config={"replica.lag.time.max.ms": "1000"})
    first = _pending_shrink(c)
    _answer(c, m.AlterPartitionResponse(Errors.NONE, (
        m.AlterPartitionResponseItem(first.topic_id, 0, Errors.REQUEST_TIMED_OUT),)))
    c.advance(c.now + 500)
    resent = [e.message.partitions[0] for e in c.held if type(e.message) is m.AlterPartitionRequest]
    assert resent == [first]  # the same proposal: same ISR with epochs, leader and partition epochs


def test_a_stale_alter_partition_success_stays_pending():
    """Partition.handleAlterPartitionUpdate: a success for another leader epoch (or an older partition
    epoch) is ignored and the change stays pending until metadata overrides it; it is not reverted."""
    c = MiniCluster(level=Level.ELR, config={"replica.lag.time.max.ms": "1000"})
    p = c.p
    item = _pending_shrink(c)
    stale = m.AlterPartitionResponseItem(item.topic_id, 0, Errors.NONE, leader_id=0,
                                         leader_epoch=p.leader_epoch - 1, isr=(0, 1),
                                         partition_epoch=p.partition_epoch + 1)
    _answer(c, m.AlterPartitionResponse(Errors.NONE, (stale,)))
    assert p.pending is not None and p.isr == (0, 1, 2) and p.maximal_isr == {0, 1, 2}


def _pending_shrink(c: MiniCluster):
    """Replica 2 stops fetching; the leader proposes ISR [0, 1]; the AlterPartition is held."""
    c.hold = lambda env: type(env.message) is m.AlterPartitionRequest
    c.fetch(1, 0)
    c.advance(c.now + 1600)
    c.fetch(1, 0)
    assert c.p.pending is not None and c.p.pending.new_isr == (0, 1)
    reqs = [e for e in c.held if type(e.message) is m.AlterPartitionRequest]
    c.held = []
    c._alter_env = reqs[-1]
    return reqs[-1].message.partitions[0]


def _answer(c: MiniCluster, response) -> None:
    env = c._alter_env
    c.b.deliver(c.now, m.Envelope(env.dst, env.src, env.correlation_id, response, is_response=True))
    c.pump()


def _answer_pending_shrink(c: MiniCluster, error: int) -> None:
    item = _pending_shrink(c)
    _answer(c, m.AlterPartitionResponse(Errors.NONE, (m.AlterPartitionResponseItem(item.topic_id, 0, error),)))


def test_not_enough_replicas_after_append_counts_the_maximal_isr():
    """Partition.checkEnoughReplicasReachOffset: once the HWM reaches an acks=all record, min ISR is
    compared with the *maximal* ISR. Committed ISR [0] with an expansion to [0, 1] pending, min ISR 2: the
    record replicated on 0 and 1 is acknowledged (Kafka), not NOT_ENOUGH_REPLICAS_AFTER_APPEND."""
    c = MiniCluster(level=Level.KIP903, config={"min.insync.replicas": "2"})
    p = c.p
    assert c.produce(5, acks=-1) is None  # appended; waits for the HWM
    p.isr = (0,)  # the ISR shrank to the leader meanwhile ...
    p.maximal_isr = frozenset((0, 1))  # ... and an expansion to [0, 1] is in flight
    c.fetch(1, 5, last_epoch=p.leader_epoch)
    assert p.log.high_watermark == 5
    answers = [e.message for e in c.inbox.get("client", []) if type(e.message) is m.ProduceResponse]
    assert [a.partitions[0].error_code for a in answers] == [Errors.NONE]


def test_member_epochs_come_from_the_partitions_own_replica_state():
    """Kafka's addBrokerEpochToIsr: a member's broker epoch is the one the partition's replica state
    holds (its last fetch for THIS partition), -1 when unknown — not a maximum over partitions."""
    c = MiniCluster(level=Level.KIP903)
    p = c.p
    p.followers[1].broker_epoch = 7
    other = Partition(0, "u", 0, uuid.UUID(int=2), PartitionLog(SimDisk(None), "data/u-0", LogConfig(), 0),
                      Level.KIP903)
    other.followers = {1: type(p.followers[1])(broker_epoch=99)}
    c.b.partitions[("u", 0)] = other
    epochs = c.b._member_epochs(p, (0, 1, 2))
    assert epochs == {0: c.b.broker_epoch, 1: 7, 2: p.followers[2].broker_epoch}
    del c.b.partitions[("u", 0)]


def test_same_leader_epoch_bump_keeps_follower_state():
    """Replica.resetReplicaState: a leader re-elected in a new epoch (classic/kip903 bump the epoch on an
    ISR shrink) keeps its followers' LEOs and broker epochs; a new leader forgets them."""
    log = PartitionLog(SimDisk(None), "data/t-0", LogConfig(), 0)
    p = Partition(0, "t", 0, uuid.UUID(int=1), log, Level.KIP903)
    p.make_leader(PartitionRegistration((0, 1, 2), (0, 1, 2), 0, 0, 0), 0)
    log.append_as_leader(batch(10), 0, 0)
    p.update_follower_fetch_state(1, 10, 5, 0, 100)
    p.update_follower_fetch_state(2, 4, 6, 0, 100)
    p.make_leader(PartitionRegistration((0, 1, 2), (0, 1), 0, 1, 1), 200)
    assert (p.followers[1].log_end_offset, p.followers[1].broker_epoch) == (10, 5)
    assert (p.followers[2].log_end_offset, p.followers[2].last_caught_up_ms) == (4, 0)
    p.make_follower(PartitionRegistration((0, 1, 2), (1,), 1, 2, 2))
    p.make_leader(PartitionRegistration((0, 1, 2), (0, 1), 0, 3, 3), 300)
    assert p.followers[1].log_end_offset == -1 and p.followers[1].broker_epoch == -1


def test_kip903_fetch_fence_compares_with_the_metadata_cache_not_the_last_epoch_seen():
    """Replica.updateFetchStateOrThrow: a follower fetch is refused (NOT_LEADER_OR_FOLLOWER) only when its
    broker epoch is older than the metadata cache's epoch of that alive broker; an epoch older than one
    this leader saw before, but not older than the cache's, is served."""
    c = MiniCluster(level=Level.KIP903)
    p = c.p
    assert c.produce(5).partitions[0].error_code == Errors.NONE
    cached = c.b.image.brokers[2].broker_epoch
    assert cached >= 1
    p.followers[2].broker_epoch = cached + 50  # a newer epoch seen earlier (not in the cache)
    resp = c.send(m.FetchRequest(2, cached, 0, 1, (m.FetchPartition(c.topic_id, 0, p.leader_epoch, 5, 0),)), 2)
    assert resp.partitions[0].error_code == Errors.NONE
    resp = c.send(m.FetchRequest(2, cached - 1, 0, 1, (m.FetchPartition(c.topic_id, 0, p.leader_epoch, 5, 0),)), 2)
    assert resp.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert p.followers[2].broker_epoch == cached  # the refused fetch did not update the fetch state


# ===================================================================== item 10: min.insync.replicas configs
@pytest.mark.parametrize("level, refused", [(Level.ELR, True), (Level.KIP903, False)])
def test_broker_level_min_isr_and_removing_the_cluster_one_are_refused_while_elr_is_enabled(level, refused):
    """ConfigurationControlManager: while ELR is enabled, a broker-level min.insync.replicas and deleting
    the cluster-level one get INVALID_CONFIG; without ELR both are accepted. A topic-level or cluster-level
    SET is always accepted."""
    h, _ = cluster(level)
    expected = Errors.INVALID_CONFIG if refused else Errors.NONE
    res = alter_config(h, m.RESOURCE_BROKER, "1", "min.insync.replicas", "2")
    assert res.error_code == expected
    assert alter_config(h, m.RESOURCE_BROKER, "", "min.insync.replicas", "2").error_code == Errors.NONE
    res = alter_config(h, m.RESOURCE_BROKER, "", "min.insync.replicas", None, op=m.OP_DELETE)
    assert res.error_code == expected
    if refused:
        assert "ELR is enabled" in res.error_message
        assert h.ctl.image.config("min.insync.replicas") == "2"
    assert alter_config(h, m.RESOURCE_TOPIC, "t", "min.insync.replicas", "1").error_code == Errors.NONE


def test_min_isr_change_clears_elr_last_known_elr_and_the_last_known_leader():
    """ClearElrRecord (any min.insync.replicas change, KIP-966): ELR, LastKnownELR and the last known
    leader are cleared (Kafka keeps its last known leader in LastKnownElr, which the record empties), with
    one partition-epoch bump, and no election follows."""
    h, _ = cluster(Level.ELR, config={"min.insync.replicas": "2"})
    for b in (1, 2, 0):
        h.heartbeat(b, want_fence=True)
    before = h.part()
    assert before.leader == NO_LEADER and before.last_known_leader == 0 and set(before.elr) == {0, 2}
    end = h.ctl.end_offset
    assert alter_config(h, m.RESOURCE_TOPIC, "t", "min.insync.replicas", "1").error_code == Errors.NONE
    after = h.part()
    assert (after.elr, after.last_known_elr, after.last_known_leader, after.leader) == ((), (), NO_LEADER, NO_LEADER)
    assert after.partition_epoch == before.partition_epoch + 1
    assert not any(type(r) is PartitionChangeRecord for r in h.ctl.log[end:])
