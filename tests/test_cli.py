"""The `kraftlog scenario` command line: the scenario library passes, runs are deterministic, bad files exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraftlog.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_scenario_library_is_not_empty():
    """Issue #2 ships six stories plus the page-cache loss story."""
    assert len(SCENARIOS) >= 7


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_shipped_scenario_exits_0(path):
    """SCENARIOS.md exit code: 0 when the run completed and every expect held."""
    result = run("scenario", "run", str(path), "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.output)
    assert verdict["failed_expectations"] == []
    assert verdict["history_digest"].startswith("sha256:")


def test_same_file_and_seed_give_the_same_history_digest():
    """Determinism: same scenario, level and seed -> same history digest; another seed -> another digest."""
    path = str(ROOT / "scenarios" / "leader-failover.yaml")
    a = json.loads(run("scenario", "run", path, "--json").output)
    b = json.loads(run("scenario", "run", path, "--json").output)
    c = json.loads(run("scenario", "run", path, "--json", "--seed", "99").output)
    assert a["history_digest"] == b["history_digest"]
    assert a == b
    assert c["history_digest"] != a["history_digest"]
    assert c["seed"] == 99


def test_leader_crash_under_acks_all_load_loses_nothing():
    """A leader crash (page cache lost) under steady acks=all load loses no acknowledged record."""
    v = json.loads(run("scenario", "run", str(ROOT / "scenarios" / "leader-failover.yaml"), "--json").output)
    assert v["acked"]["all"] > 500
    assert v["lost_acked"] == 0
    assert v["final"]["partitions"]["t-0"]["leader"] == 1


def test_last_isr_member_losing_its_page_cache_loses_acked_records_at_classic():
    """KIP-966's motivation: pre-KIP-966 the last ISR member stays in the ISR and is elected with a
    truncated log, so acknowledged acks=all records are lost, and the verdict says so."""
    v = json.loads(run("scenario", "run", str(ROOT / "scenarios" / "last-isr-member-loses-page-cache.yaml"),
                       "--json", "--level", "classic").output)
    assert v["level"] == "classic"
    assert v["acked"]["all"] == 20
    assert v["lost_acked"] == 20
    assert len(v["lost_acked_records"]) == 20
    assert v["anomalies"]["lost-write"] == 20
    assert any("fenced-in-isr" in x for x in v["invariant_violations"])


def test_delayed_alter_partition_is_answered_with_invalid_update_version():
    """KIP-497: an AlterPartition carrying a stale partition epoch gets INVALID_UPDATE_VERSION."""
    result = run("scenario", "run", str(ROOT / "scenarios" / "delayed-alter-partition.yaml"))
    assert result.exit_code == 0
    assert "answered: t-0 INVALID_UPDATE_VERSION" in result.output


def test_readable_output_has_timeline_and_verdict():
    result = run("scenario", "run", str(ROOT / "scenarios" / "controlled-shutdown.yaml"))
    assert result.exit_code == 0
    assert "broker 0 shut down cleanly" in result.output
    assert "t-0: leader -> 1" in result.output
    assert "PASS" in result.output


BAD = {
    "bad-yaml": ("name: x\n  bad: [\n", "invalid YAML"),
    "unknown-verb": ("name: x\ncluster: {brokers: 3}\nsteps:\n  - {explode: {broker: 1}}\n",
                     "step 1: unknown verb 'explode'"),
    "replica-beyond-cluster": (
        "name: x\ncluster: {brokers: 3}\ntopics:\n  - {name: t, assignment: [[0, 1, 5]]}\n", "5"),
    "broker-beyond-cluster": ("name: x\ncluster: {brokers: 3}\nsteps:\n  - {at: 1s, crash: {broker: 7}}\n",
                              "step 1 (crash): broker 7 is not in the cluster"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_invalid_file_exits_2_with_a_message_and_no_traceback(tmp_path, name):
    """A bad scenario file names the step and the problem (exit 2, no traceback)."""
    text, expected = BAD[name]
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    result = run("scenario", "run", str(f))
    assert result.exit_code == 2
    assert expected in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_missing_file_exits_2():
    result = run("scenario", "run", "/nonexistent/scenario.yaml")
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_unknown_level_exits_2():
    result = run("scenario", "run", str(SCENARIOS[0]), "--level", "zk")
    assert result.exit_code == 2
    assert "unknown or unimplemented level" in result.output


def test_library_command_runs_every_file():
    result = run("scenario", "library", str(ROOT / "scenarios"))
    assert result.exit_code == 0, result.output
    assert result.output.count("PASS") == len(SCENARIOS)
