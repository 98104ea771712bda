"""``pause``/``resume`` (issue 26, SCENARIOS.md "Pausing a node"): a paused node gets no ticks and no
deliveries, messages to it wait in the network, its timers fire late on resume; a paused leader is fenced
after its session timeout and rejoins on resume with what it had (same incarnation, no restart)."""

from __future__ import annotations

import pytest

from kraftlog.level import DEFAULT
from kraftlog.scenario import Pause, Resume, ScenarioError, dump_scenario, parse_scenario
from kraftlog.sim.cluster import SimCluster
from kraftlog.sim.runner import ScenarioRun

PAUSED_LEADER = """
name: paused-leader
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics:
  - {name: t, partitions: 1, assignment: [[0, 1, 2]]}
clients:
  - {id: p, producer: t, acks: all}
  - {id: c, consumer: t, reset: earliest}
steps:
  - {at: 2s, expect: {partition: t-0, leader: 0}}
  - {pause: {broker: 0}}
  - {wait_until: {broker: 0, fenced: true, timeout: 20s}}
  - {expect: {broker: 0, alive: true}}
  - {expect: {partition: t-0, isr: [1, 2]}}
  - {after: 5s, resume: {broker: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 60s}}
  - {wait_until: {broker: 0, fenced: false, timeout: 30s}}
  - {run_for: 5s}
"""


def test_pause_and_resume_parse_dump_and_refuse_a_node_outside_the_cluster():
    s = parse_scenario(PAUSED_LEADER)
    assert s.steps[1].action == Pause(0) and s.steps[5].action == Resume(0)
    assert s.steps[1].args == {"broker": 0}
    assert parse_scenario(dump_scenario(s)) == s
    ctl = parse_scenario(PAUSED_LEADER.replace("pause: {broker: 0}", "pause: {node: controller}"))
    assert ctl.steps[1].action == Pause("controller") and ctl.steps[1].args == {"node": "controller"}
    with pytest.raises(ScenarioError) as err:
        parse_scenario(PAUSED_LEADER.replace("pause: {broker: 0}", "pause: {broker: 7}"), "f.yaml")
    assert str(err.value) == "f.yaml:11: step 2 (pause): broker 7 is not in the cluster (brokers 0..2)"


def test_a_paused_leader_is_fenced_after_its_session_timeout_and_rejoins_on_resume_with_what_it_had():
    """broker.session.timeout.ms (9 s) after its last heartbeat the controller fences the paused leader and
    leadership moves; the paused broker still counts as alive. On resume it is unfenced and back in the
    ISR as the same incarnation (never restarted): nothing acknowledged is lost."""
    run = ScenarioRun(parse_scenario(PAUSED_LEADER))
    result = run.run()
    v = result.verdict
    assert v["passed"] and v["safe"] and v["failed_expectations"] == [], v["failed_expectations"]
    assert v["acked"]["all"] > 100 and v["lost_acked"] == 0
    lines = result.timeline
    paused = next(i for i, line in enumerate(lines) if "step 2 (pause): broker 0 paused" in line)
    fenced = next(i for i, line in enumerate(lines) if line.endswith("broker 0 fenced"))
    t_pause, t_fenced = (int(lines[i].split("ms")[0]) for i in (paused, fenced))
    assert paused < fenced and 9000 - 2000 <= t_fenced - t_pause <= 9000  # session timeout since its last heartbeat
    assert run.sim.incarnation[0] == 1, "resume is not a restart"
    assert v["final"]["partitions"]["t-0"]["isr"] == [0, 1, 2]
    assert v["final"]["partitions"]["t-0"]["leader"] != 0


def test_a_paused_node_gets_no_ticks_or_deliveries_and_its_waiting_messages_arrive_on_resume():
    sim = SimCluster(3, {}, DEFAULT, seed=5)
    sim.run_until(5000)
    node = sim.broker(1)
    ticks, deliveries = [], []
    tick, deliver = node.tick, node.deliver
    node.tick = lambda now: (ticks.append(now), tick(now))[1]
    node.deliver = lambda now, env: (deliveries.append(now), deliver(now, env))[1]
    assert sim.pause(1) and not sim.pause(7) and sim.alive(1)
    sim.run_until(8000)
    assert ticks == [] and deliveries == []
    waiting = len(sim.paused[1])
    assert waiting > 0, "its peers' messages wait in the network"
    assert sim.resume(1) and not sim.resume(1)
    sim.run_until(8000)  # resume delivers what waited, at once, and its overdue timers fire now
    assert ticks and ticks[0] == 8000
    assert deliveries.count(8000) >= waiting
    sim.run_until(12000)
    assert sim.controller.image.brokers[1].fenced is False

def test_pause_is_deterministic_and_resume_of_a_running_node_is_a_failed_step():
    text = PAUSED_LEADER.replace("  - {after: 5s, resume: {broker: 0}}\n",
                                 "  - {after: 5s, resume: {broker: 0}}\n  - {resume: {broker: 1}}\n")
    a, b = (ScenarioRun(parse_scenario(text)).run().verdict for _ in range(2))
    assert a["history_digest"] == b["history_digest"]
    assert a["failed_expectations"] == ["step 7 (resume): refused: broker 1 is not paused"]
