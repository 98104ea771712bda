"""A KRaft controller quorum in the simulator (issue 33): the library's quorum stories and the facts behind them —
leadership moves within the configured timeouts, a majority lost stops metadata but not produce, a deposed
isolated leader commits nothing and resigns by check-quorum, a static voter's lost disk loses committed metadata
and acknowledged records while a dynamic voter's does not — plus the scenario format and the fault budget."""

from __future__ import annotations

import pytest

from conftest import SCENARIO_DIR
from kraftlog.raft.leader_state import LeaderState
from kraftlog.raft.states import Resigned, Unattached
from kraftlog.scenario import ScenarioError, load_scenario, parse_scenario
from kraftlog.scenario.dump import dump_scenario
from kraftlog.scenario.generator import (
    quorum_within_budget,
    static_quorum_disk_loss,
    voters_down_at_most,
    within_budget,
)
from kraftlog.sim.runner import ScenarioRun, run_scenario

FETCH_TIMEOUT_MS, ELECTION_TIMEOUT_MS = 2000, 1000


def _run(name: str) -> tuple[ScenarioRun, dict]:
    run = ScenarioRun(load_scenario(SCENARIO_DIR / f"{name}.yaml"))
    result = run.run()
    return run, result.verdict


def _step_time(timeline: list[str], text: str) -> int:
    """The scenario time (ms) of the first timeline line containing ``text``."""
    line = next(line for line in timeline if text in line)
    return int(line.split("ms", 1)[0])


def test_killing_the_active_controller_moves_leadership_within_the_timeouts_and_metadata_keeps_changing() -> None:
    run, v = _run("quorum-active-controller-killed")
    assert v["passed"] and v["safe"], v["failed_expectations"]
    crashed = _step_time(run.timeline, "step 1 (crash)")
    active = _step_time(run.timeline, "step 2 (wait_until)")
    # a standby notices after controller.quorum.fetch.timeout.ms, then a pre-vote and a vote (each an election
    # timeout at most, with jitter below it) and the LeaderChangeMessage's commit
    assert active - crashed <= FETCH_TIMEOUT_MS + 2 * ELECTION_TIMEOUT_MS + 100, active - crashed
    # the new active controller fenced the crashed broker and shrank the ISR: committed metadata
    assert any("broker 2 fenced" in line for line in run.timeline)
    assert sorted(v["final"]["partitions"]["t-0"]["isr"]) == [0, 1, 2]
    ctl = run.sim.controller
    assert ctl is not None and ctl.quorum is not None and ctl.quorum.raft.epoch >= 2


def test_two_of_three_controllers_down_stop_metadata_while_producing_to_whole_isrs_goes_on() -> None:
    run, v = _run("quorum-majority-lost")
    assert v["passed"] and v["safe"], v["failed_expectations"]
    produced = [line for line in run.timeline if "step 4 (produce)" in line]
    assert produced and "100/100 records acknowledged" in produced[0]
    # no record fenced broker 2 while the majority was gone: the first "broker 2 fenced" follows the restart
    restart = _step_time(run.timeline, "step 9 (restart)")
    assert _step_time(run.timeline, "broker 2 fenced") > restart
    assert v["acked"]["all"] == 200 and v["lost_acked"] == 0


def test_a_deposed_isolated_leader_commits_nothing_and_resigns_by_check_quorum() -> None:
    scn = load_scenario(SCENARIO_DIR / "quorum-isolated-active-resigns.yaml")
    run = ScenarioRun(scn)
    sim = run.sim
    seen: dict[str, int] = {}
    isolate = sim.isolate

    def watch(nodes: list) -> None:  # the step isolates the active controller: follow it from then on
        isolate(nodes)
        (old,) = nodes
        node = sim.nodes[old]
        seen["id"], seen["at"], seen["hwm"] = old, sim.now, node.quorum.raft.high_watermark

        def check(s) -> None:
            raft = s.nodes[old].quorum.raft
            assert raft.high_watermark == seen["hwm"], "the isolated leader committed something"
            if "resigned" not in seen and not isinstance(raft.state, LeaderState):
                seen["resigned"] = s.now
                assert isinstance(raft.state, (Resigned, Unattached))
            if s.now < seen["at"] + 6000:
                s.call_at(s.now + 50, check)

        sim.call_at(sim.now + 50, check)

    sim.isolate = watch
    v = run.run().verdict
    assert v["passed"] and v["safe"], v["failed_expectations"]
    # check-quorum: no majority fetched within 1.5 x controller.quorum.fetch.timeout.ms
    assert seen["resigned"] - seen["at"] <= int(1.5 * FETCH_TIMEOUT_MS) + 100
    assert sim.controller is not None and sim.controller.node_id != seen["id"]


def test_a_static_voter_that_lost_its_disk_loses_committed_metadata_and_acknowledged_records() -> None:
    scn = load_scenario(SCENARIO_DIR / "quorum-static-voter-disk-loss.yaml")
    assert static_quorum_disk_loss(scn) and not quorum_within_budget(scn) and not within_budget(scn)
    v = run_scenario(scn).verdict
    assert v["level"] == "urm" and v["lost_acked"] > 0
    raft = [x for x in v["invariant_violations"] if "RaftLeaderCompleteness" in x or "RaftStateMachineSafety" in x]
    assert raft, v["invariant_violations"]


def test_a_dynamic_voter_that_lost_its_disk_loses_nothing_and_joins_the_voters_again() -> None:
    scn = load_scenario(SCENARIO_DIR / "quorum-dynamic-voter-disk-loss.yaml")
    assert not static_quorum_disk_loss(scn)
    run = ScenarioRun(scn)
    v = run.run().verdict
    assert v["passed"] and v["safe"] and v["lost_acked"] == 0, v["failed_expectations"]
    ctl = run.sim.controller
    assert ctl is not None and ctl.quorum is not None
    voters = ctl.quorum.raft.voter_set().voters
    rejoined = run.sim.nodes[3000].quorum.raft.local
    assert sorted(voters) == [3000, 3001, 3002] and voters[3000].voter_directory_id == rejoined.directory_id


def test_one_controller_is_the_default_and_writes_no_controllers_key() -> None:
    s = parse_scenario("name: s\ncluster: {brokers: 1}\n")
    assert s.controllers == 1 and s.kraft_version == 0 and s.controller_ids == ("controller",)
    assert "controllers" not in dump_scenario(s)
    q = parse_scenario("name: q\ncluster: {brokers: 1, controllers: 3, kraft_version: 1}\n"
                       "steps:\n  - {crash: {controller: 3001, lose: all}}\n"
                       "  - {wait_until: {active_controller: any}}\n")
    assert q.controller_ids == (3000, 3001, 3002) and parse_scenario(dump_scenario(q)) == q
    assert q.steps[0].args == {"controller": 3001, "lose": "all"}


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {brokers: 1, controllers: 10}", "cluster controllers must be an integer in 1..9"),
    ("cluster: {brokers: 1, kraft_version: 1}", "cluster kraft_version needs a controller quorum"),
    ("cluster: {brokers: 1, controllers: 3}\nsteps:\n  - {crash: {node: controller}}",
     "this cluster has a quorum of 3 controllers: name one by its id (controllers 3000..3002)"),
    ("cluster: {brokers: 1, controllers: 3}\nsteps:\n  - {crash: {controller: 3}}",
     "controller must be a controller id (controllers 3000..3002) or 'active', got 3"),
    ("cluster: {brokers: 1}\nsteps:\n  - {crash: {controller: 3000}}",
     "controller: <id> names a controller of a quorum"),
    ("cluster: {brokers: 1}\nsteps:\n  - {expect: {active_controller: any}}",
     "a quorum condition needs a quorum of controllers"),
])
def test_a_bad_quorum_setting_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_scenario("name: s\n" + text + "\n")


def test_the_quorum_budget_allows_a_minority_down_and_no_static_disk_loss() -> None:
    def story(steps: str, kraft_version: int = 0) -> object:
        return parse_scenario(f"name: s\ncluster: {{brokers: 3, controllers: 3, kraft_version: {kraft_version}}}\n"
                              f"steps:\n{steps}")
    one = story("  - {crash: {controller: 3000}}\n  - {restart: {controller: 3000}}\n"
                "  - {crash: {controller: 3001}}\n")
    two = story("  - {crash: {controller: 3000}}\n  - {pause: {controller: 3001}}\n")
    lost0 = story("  - {crash: {controller: 3002, lose: all}}\n")
    lost1 = story("  - {crash: {controller: 3002, lose: all}}\n", kraft_version=1)
    assert voters_down_at_most(one) == 1 and quorum_within_budget(one)
    assert voters_down_at_most(two) == 2 and not quorum_within_budget(two)
    assert static_quorum_disk_loss(lost0) and not quorum_within_budget(lost0)
    assert not static_quorum_disk_loss(lost1) and quorum_within_budget(lost1)
