"""The campaign's controller-quorum stories (issue 33): which seeds get a quorum, the quorum episodes, the
budget they are judged against, and that a story within the budget is safe at level urm."""

from __future__ import annotations

import pytest

from kraftlog.level import Level
from kraftlog.scenario import parse_scenario
from kraftlog.scenario.dump import dump_scenario
from kraftlog.scenario.episodes import QUORUM_EPISODES
from kraftlog.scenario.generator import generate, quorum_within_budget, static_quorum_disk_loss, within_budget
from kraftlog.sim.runner import run_scenario


def test_three_stories_in_ten_run_a_quorum_and_the_others_name_the_one_controller() -> None:
    stories = [generate(seed) for seed in range(200)]
    quorum = [s for s in stories if s.controllers == 3]
    assert 0.2 < len(quorum) / len(stories) < 0.4
    assert {s.kraft_version for s in quorum} == {0, 1}
    for s in stories:
        named = {step.args.get("controller") for step in s.steps} - {None}
        assert named <= ({3000, 3001, 3002, "active"} if s.controllers == 3 else set())
        if s.controllers == 1:
            assert "active" not in dump_scenario(s)
    for s in quorum:
        assert any(name in s.description for name in QUORUM_EPISODES)
        auto_join = s.config.get("controller.quorum.auto.join.enable") == "true"
        assert auto_join == (s.kraft_version == 1)


@pytest.mark.parametrize("episode", sorted(QUORUM_EPISODES))
def test_each_quorum_episode_makes_a_story_that_replays_and_is_judged_by_the_quorum_budget(episode: str) -> None:
    s = generate(11, episodes=[episode])
    assert s.controllers == 3 and episode in s.description
    assert parse_scenario(dump_scenario(s)) == s
    if episode == "controller_majority_lost":
        assert not quorum_within_budget(s)
    if episode == "controller_disk_loss":
        assert static_quorum_disk_loss(s) == (s.kraft_version == 0)
    # every controller the story stops is started again in the heal phase
    down: set[object] = set()
    for step in s.steps:
        node = step.args.get("controller")
        if node is not None and step.verb == "crash":
            down.add(node)
        elif node is not None and step.verb == "restart":
            down.discard(node)
    assert down == set()


@pytest.mark.parametrize("episode", ["active_controller_crash", "active_controller_isolated",
                                     "controller_minority_lost"])
def test_a_quorum_story_within_the_budget_is_safe_at_urm(episode: str) -> None:
    s = generate(5, episodes=["crash", episode])
    v = run_scenario(s, level=Level.parse("urm")).verdict
    if within_budget(s):
        assert v["safe"], (v["lost_acked"], v["invariant_violations"])
    assert not [x for x in v["invariant_violations"] if x.split(" ", 2)[1].startswith("Raft")]
