"""Snapshots in a KRaft controller quorum in the simulator (issue 34): every controller snapshots its committed
image and cleans its log; a voter down across a cleaning catches up by FetchSnapshot; a broker observer down across
it keeps the deleted topic -stray; the committed metadata never diverges; and a controller restarts from its own
snapshot. The story is ``scenarios/quorum-voter-fetches-snapshot.yaml``; the campaign's episode is
``voter_down_across_snapshot``."""

from __future__ import annotations

import pytest

from conftest import SCENARIO_DIR
from kraftlog.broker.log_manager import stray_partitions
from kraftlog.level import Level
from kraftlog.metadata.records import RemoveTopicRecord
from kraftlog.scenario import load_scenario
from kraftlog.scenario.generator import generate, quorum_within_budget
from kraftlog.sim.runner import ScenarioRun


def _image_state(image) -> tuple:
    return (tuple(sorted(image.topics)), tuple(sorted((k, p.leader, tuple(p.isr), p.leader_epoch, p.partition_epoch)
                                                      for k, p in image.partitions.items())), image.offset)


def test_a_voter_down_across_a_cleaning_catches_up_by_fetch_snapshot_and_nothing_diverges() -> None:
    run = ScenarioRun(load_scenario(SCENARIO_DIR / "quorum-voter-fetches-snapshot.yaml"))
    v = run.run().verdict
    assert v["passed"] and v["safe"] and not v["invariant_violations"], v["failed_expectations"]
    assert v["lost_acked"] == 0
    installed = [line for line in run.timeline if "installed snapshot" in line and "controller" in line]
    assert installed, "the restarted voter did not fetch a snapshot"
    voter = int(installed[0].split("controller ")[1].split(":")[0])
    ctls = {c.node_id: c for c in run.sim.controllers()}
    assert sorted(ctls) == [3000, 3001, 3002]
    # the deletion of doomed was compacted away: every voter's log starts after its RemoveTopicRecord, and the
    # restarted voter's image (from the snapshot it fetched) has no doomed either
    leader = next(c for c in ctls.values() if c.quorum is not None and c.quorum.is_active)
    removes = [b.base_offset for b in leader.quorum.raft.log_batches()
               if any(isinstance(r, RemoveTopicRecord) for r in b.records)]
    assert not removes and all(c.quorum.raft.log_start_offset > 0 for c in ctls.values())
    assert "doomed" not in ctls[voter].quorum.committed_image.topics
    # every voter holds the same committed image at the end (state machine safety, read directly)
    hwm = min(c.quorum.raft.high_watermark for c in ctls.values())
    assert hwm > ctls[voter].quorum.raft.log_start_offset
    images = {cid: _image_state(c.quorum.committed_image) for cid, c in ctls.items()}
    assert len(set(images.values())) == 1, images
    assert list(stray_partitions(run.sim.disks[2])) == ["doomed-0"]


def test_a_restarted_controller_starts_from_its_own_snapshot() -> None:
    """A voter's restart loads its latest snapshot (Kafka's new listener) and replays only the log after it."""
    run = ScenarioRun(load_scenario(SCENARIO_DIR / "quorum-voter-fetches-snapshot.yaml"))
    run.run()
    loaded = [line for line in run.timeline if "loaded metadata snapshot" in line]
    assert loaded and all("controller" in line for line in loaded)


@pytest.mark.parametrize("level", ["classic", "urm"])
def test_the_campaigns_voter_episode_is_safe_and_the_voter_fetches_a_snapshot(level: str) -> None:
    s = generate(11, episodes=["voter_down_across_snapshot"])
    assert s.controllers == 3 and "voter_down_across_snapshot" in s.description and quorum_within_budget(s)
    run = ScenarioRun(s, level=Level.parse(level))
    v = run.run().verdict
    assert v["safe"] and v["lost_acked"] == 0 and not v["invariant_violations"]
    assert any("installed snapshot" in line and "controller" in line for line in run.timeline)
    assert generate(11, episodes=["voter_down_across_snapshot"]).description == s.description  # deterministic
    drawn = [generate(seed) for seed in range(120)]
    assert not any("voter_down" in d.description for d in drawn if d.controllers == 1)
    assert any("voter_down" in d.description for d in drawn if d.controllers == 3)
