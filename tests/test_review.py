"""Review findings: each test pins a rule where kraftlog once deviated from DESIGN.md / Kafka's
behaviour (found by a review, fixed since), plus one place where SCENARIOS.md's definition stands."""

from __future__ import annotations

import random
import uuid

from kraftlog.check.checkers import consumer_anomalies
from kraftlog.client.admin import Admin
from kraftlog.client.producer import Producer
from kraftlog.controller.controller import CONTROLLER
from kraftlog.controller.partition_change import build_partition_change
from kraftlog.controller.single_node_quorum import MAX_RECORDS_PER_FETCH
from kraftlog.level import Level
from kraftlog.metadata.image import RESOURCE_TOPIC, PartitionRegistration
from kraftlog.metadata.records import RECOVERING, ConfigRecord
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.scenario import parse_scenario
from kraftlog.sim.runner import ScenarioRun, run_scenario

# ----------------------------------------------------------------------------------------------------------
# 1. Checker: lost_acked counts records that every ISR member holds as lost (KIP-966 frozen HWM).
FROZEN_HWM_YAML = """
name: frozen-hwm-is-not-loss
seed: 1
level: elr
cluster: {brokers: 3, config: {min.insync.replicas: 3}}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {produce: {topic: t, count: 10, acks: all}}
  - {crash: {broker: 0, lose: none}}
  - {wait_until: {partition: t-0, leader: 1, timeout: 20s}}
  - {run_for: 5s}
"""


def test_lost_acked_follows_scenarios_md_even_while_the_hwm_is_frozen():
    """SCENARIOS.md defines lost_acked as acknowledged records not in the final leader's log *below its
    HWM*. Under KIP-966 the HWM of a new leader stays frozen while the ISR is below min ISR, so records
    that both live ISR members hold still count until the ISR recovers: the verdict reports them, and
    the final state shows they are on both replicas (LEO 10, HWM 0). The definition is a public
    interface, kept as written."""
    run = ScenarioRun(parse_scenario(FROZEN_HWM_YAML))
    v = run.run().verdict
    part = v["final"]["partitions"]["t-0"]
    # Preconditions of the story: every acked record is in the log of both live ISR members.
    assert v["acked"]["all"] == 10
    assert part["leader"] == 1 and part["isr"] == [1, 2]
    assert part["leo"] == {"1": 10, "2": 10}
    for b in (1, 2):
        values = {r.value.decode() for batch in run.sim.broker(b).partitions[("t", 0)].log.batches()
                  for r in batch.records}
        assert {x[3] for x in run.acked} <= values
    assert part["hwm"] == 0
    assert v["lost_acked"] == 10


# ----------------------------------------------------------------------------------------------------------
# 2. Broker restart publishes a partial (stale) metadata image: stale leadership, epoch cache corruption,
#    truncation of committed data.
RESTART_YAML = """
name: restart-replays-stale-metadata
seed: 1
level: elr
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics:
  - {name: t, assignment: [[2, 0, 1]]}
steps:
  - {produce: {topic: t, count: 5, acks: all}}
"""


def test_restarted_broker_does_not_act_on_stale_metadata_chunk():
    run = ScenarioRun(parse_scenario(RESTART_YAML))
    assert run.run().exit_code == 0
    sim = run.sim
    ctl = sim.controller
    # A long-lived cluster: more than one MetadataFetch worth of (harmless, real) metadata records, all
    # written while broker 2 still leads t-0 in leader epoch 0.
    pad = MAX_RECORDS_PER_FETCH - ctl.end_offset + 10
    ctl.append([ConfigRecord(RESOURCE_TOPIC, "t", "unclean.leader.election.enable", "false")] * pad, sim.now)
    sim._after(CONTROLLER, ctl)
    sim.run_until(sim.now + 3000)
    # Leadership moves to broker 0 (epoch 1); broker 2 rejoins as follower and replicates epoch-1 records.
    sim.isolate([2])
    sim.run_until(sim.now + 12000, lambda s: s.controller.image.partitions[("t", 0)].leader == 0)
    sim.heal()
    sim.run_until(sim.now + 20000, lambda s: len(s.controller.image.partitions[("t", 0)].isr) == 3)
    prod = Producer("px", [0, 1, 2], -1, random.Random(1))
    sim.add_client(prod)
    for i in range(5):
        prod.send("t", 0, f"x{i}".encode(), sim.now)
    sim._after(prod.node_id, prod)
    sim.run_until(sim.now + 10000, lambda s: prod.idle)
    sim.run_until(sim.now + 2000)
    p2 = sim.broker(2).partitions[("t", 0)]
    assert p2.log.epoch_cache.entries() == [(0, 0), (1, 5)]
    assert p2.log.log_end_offset == 10 and p2.log.high_watermark == 10
    # Clean shutdown and restart of broker 2.
    sim.shutdown(2)
    sim.run_until(sim.now + 35000, lambda s: s.broker(2).stopped)
    sim.nodes.pop(2, None)
    sim.scheduled.pop(2, None)
    sim.restart(2)
    seen = []

    def watch(s) -> bool:
        b = s.broker(2)
        p = b.partitions.get(("t", 0)) if b is not None else None
        if p is not None:
            seen.append((s.now, p.is_leader, p.leader_epoch, p.log.log_end_offset, p.log.epoch_cache.entries()))
        return False

    sim.run_until(sim.now + 10000, watch)
    assert seen, "broker 2 never loaded t-0"
    stale_leader = [x for x in seen if x[1]]
    assert not stale_leader, f"restarted broker 2 acted as leader of t-0 in a stale epoch: {stale_leader[0]}"
    below_hwm = [x for x in seen if x[3] < 10]
    assert not below_hwm, f"broker 2 truncated committed records (HWM 10): {below_hwm[0]}"
    assert seen[-1][4][:1] == [(0, 0)], f"epoch cache lost its epoch-0 entry: {seen[-1][4]}"


# ----------------------------------------------------------------------------------------------------------
# 3. Election of the LastKnownLeader is an unclean election in Kafka (RECOVERING); kraftlog marks it clean.
def test_last_known_leader_election_is_marked_recovering():
    part = PartitionRegistration(replicas=(1, 2, 3), isr=(), leader=-1, leader_epoch=5, partition_epoch=9,
                                 elr=(), last_known_elr=(1,), last_known_leader=1)
    rec = build_partition_change(part, uuid.UUID(int=7), 0, is_acceptable_leader=lambda b: b == 1,
                                 level=Level.ELR, min_isr=2)
    new = part.merge(rec)
    assert new.leader == 1 and new.isr == (1,)
    assert new.leader_recovery_state == RECOVERING


LKL_YAML = """
name: last-known-leader-lost-its-data
seed: 1
level: elr
cluster: {brokers: 2, config: {min.insync.replicas: 2}}
sim: {writeback: never}
topics:
  - {name: t, assignment: [[0, 1]]}
steps:
  - {crash: {broker: 1, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {produce: {topic: t, count: 5, acks: 1}}
  - {crash: {broker: 0, lose: unflushed}}
  - {wait_until: {partition: t-0, leader: none, timeout: 20s}}
  - {restart: {broker: 0}}
  - {restart: {broker: 1}}
  - {wait_until: {partition: t-0, leader: 0, timeout: 20s}}
  - {expect: {partition: t-0, recovering: true}}
"""


def test_scenario_last_known_leader_after_unclean_shutdown_is_recovering():
    r = run_scenario(parse_scenario(LKL_YAML))
    assert r.verdict["final"]["partitions"]["t-0"]["leader"] == 0
    assert r.verdict["failed_expectations"] == []


# ----------------------------------------------------------------------------------------------------------
# 4. Checker: value-based placement turns one duplicate into a nonmonotonic-poll of an in-order consumer.
def test_duplicate_value_does_not_make_in_order_reads_nonmonotonic():
    final = {"t-0": {0: ("a", 0), 1: ("b", 0), 2: ("a", 0), 3: ("c", 0)}}
    consumed = [("c1", "t-0", off, value, 10 + off) for off, (value, _) in sorted(final["t-0"].items())]
    result = consumer_anomalies(consumed, [], final)
    assert result["nonmonotonic-poll"] == 0 and result["poll-skip"] == 0, result


# ----------------------------------------------------------------------------------------------------------
# 5. Checker: same-millisecond truncation report and re-read are ordered by kind, not by causality.
def test_same_ms_truncation_then_reread_is_not_inconsistent():
    final = {"t-0": {**{i: (f"v{i}", 0) for i in range(7)}, 7: ("w7", 1)}}
    consumed = [("c1", "t-0", i, f"v{i}", 1 + i) for i in range(10)]
    truncations = [("c1", "t-0", 10, 7, 20)]  # told at t=20: diverged at offset 7 ...
    consumed.append(("c1", "t-0", 7, "w7", 20))  # ... then (same ms, 0ms network) read the new offset 7
    result = consumer_anomalies(consumed, truncations, final)
    assert result["inconsistent-offsets"] == 0, result
    assert result["undetected_truncations"] == 0


# ----------------------------------------------------------------------------------------------------------
# 6. KIP-320 fencing order: Kafka checks the leader epoch before leadership (Partition.getLocalLog).
EPOCH_ORDER_YAML = """
name: epoch-order
seed: 1
level: elr
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {produce: {topic: t, count: 3, acks: all}}
"""


def test_follower_checks_leader_epoch_before_leadership():
    run = ScenarioRun(parse_scenario(EPOCH_ORDER_YAML))
    assert run.run().exit_code == 0
    sim = run.sim
    probe = Admin("probe")
    sim.add_client(probe)
    follower = sim.broker(1)
    p = follower.partitions[("t", 0)]
    assert not p.is_leader
    # Bootstrap leader epoch is 0; a consumer Fetch to follower 1 with CurrentLeaderEpoch 1 (newer).
    req = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(p.topic_id, 0, p.leader_epoch + 1, 0),))
    rid = probe.submit(req, sim.now, 5000, dst=1)
    sim._after(probe.node_id, probe)
    sim.run_until(sim.now + 6000, lambda s: rid in probe.results)
    error = probe.results.pop(rid).partitions[0].error_code
    assert error == Errors.UNKNOWN_LEADER_EPOCH, Errors(error).name
