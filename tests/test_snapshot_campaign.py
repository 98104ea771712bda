"""The campaign's metadata snapshot stories (issue 34): which seeds cross snapshots, the snapshot episode, and that
such a story is safe at every level, the deleted topic kept -stray on the broker that missed the deletion."""

from __future__ import annotations

import pytest

from kraftlog.broker.log_manager import stray_partitions
from kraftlog.level import Level
from kraftlog.scenario import parse_scenario
from kraftlog.scenario.dump import dump_scenario
from kraftlog.scenario.episodes import DOOMED, SNAPSHOT_EPISODES
from kraftlog.scenario.generator import generate, within_budget
from kraftlog.sim.runner import ScenarioRun


def test_three_in_ten_stories_cross_snapshots_with_one_controller_or_a_quorum() -> None:
    """SNAPSHOT_SHARE of the stories, drawn apart from the rest; a quorum's story plays either episode, a single
    controller's only the broker's (the voter's needs a quorum)."""
    stories = [generate(seed) for seed in range(200)]
    crossing = [s for s in stories if any(name in s.description for name in SNAPSHOT_EPISODES)]
    for controllers in (1, 3):
        shape = [s for s in stories if s.controllers == controllers]
        assert 0.15 < len([s for s in crossing if s.controllers == controllers]) / len(shape) < 0.45
    assert not any("voter_down_across_snapshot" in s.description for s in crossing if s.controllers == 1)
    for s in stories:
        has = "metadata.log.max.record.bytes.between.snapshots" in s.config
        assert has == (s in crossing)
        assert (DOOMED in {t.name for t in s.topics}) == has


def test_the_snapshot_episode_replays_and_brings_its_broker_back() -> None:
    s = generate(11, episodes=["broker_down_across_snapshot"])
    assert s.controllers == 1 and "broker_down_across_snapshot" in s.description
    assert parse_scenario(dump_scenario(s)) == s
    verbs = [step.verb for step in s.steps]
    assert "delete_topic" in verbs and verbs.count("alter_config") >= 30
    assert generate(11, episodes=["broker_down_across_snapshot", "active_controller_crash"]).controllers == 3
    with pytest.raises(KeyError, match="unknown episode"):
        generate(11, episodes=["no_such_episode"])


@pytest.mark.parametrize("level", ["classic", "kip903", "elr", "urm"])
def test_a_snapshot_story_is_safe_and_keeps_the_deleted_topic_stray(level: str) -> None:
    """A story of the snapshot episode alone (seed 11): a replica of doomed is down while doomed is deleted and the
    controller cleans its log past the deletion; restarted, it loads the controller's snapshot and keeps doomed-0
    -stray; nothing of t is lost, no invariant breaks (NoMetadataLogDivergence included)."""
    s = generate(11, episodes=["broker_down_across_snapshot"])
    assert within_budget(s)
    run = ScenarioRun(s, level=Level.parse(level))
    v = run.run().verdict
    assert v["safe"] and v["lost_acked"] == 0 and not v["invariant_violations"]
    stopped = next(step.args["broker"] for step in s.steps if step.verb in ("shutdown", "crash"))
    assert list(stray_partitions(run.sim.disks[stopped])) == [f"{DOOMED}-0"]
    ctl = run.sim.controller
    assert ctl is not None and ctl.single is not None and ctl.single.log.start_offset > 0
