"""Issue 12, per-level config validity: a config name exists only from the protocol level that brings it
(``metadata.config.CONFIG_LEVELS``: KIP-966 part 2's ``unclean.recovery.*`` come with ``urm``), as a Kafka
version refuses a config name it does not define with INVALID_CONFIG.

* a scenario file whose own ``level:`` is below a config's level is refused when it is loaded, naming the
  key, where it is and the level it needs (exit 2, no traceback);
* run at a lower level than the one it was written for (``--level``, the campaign's library at every
  level), the configs that do not exist there are left out of the cluster and topic configs, and the CLI
  says so on stderr;
* the controller below ``urm`` answers INVALID_CONFIG to CreateTopics and IncrementalAlterConfigs naming
  such a config (an ``alter_config`` step shows it in the timeline).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kraftlog.cli import main
from kraftlog.level import Level
from kraftlog.metadata.config import CONFIG_LEVELS, KNOWN_CONFIGS, unknown_at_level
from kraftlog.scenario import ScenarioError, configs_at_level, parse_scenario
from kraftlog.sim.runner import run_scenario

_STORY = """\
name: strategy-below-urm
{level}cluster:
  brokers: 3
  config: {{min.insync.replicas: 2{cluster}}}
topics:
  - {{name: t, assignment: [[0, 1, 2]]{topic}}}
steps:
  - {{at: 1s, produce: {{topic: t, count: 5, acks: all}}}}
  - {{alter_config: {{topic: t, config: {{{alter}}}}}}}
  - {{run_for: 1s}}
"""


def story(level: str = "", cluster: str = "", topic: str = "", alter: str = "min.insync.replicas: 2") -> str:
    return _STORY.format(level=f"level: {level}\n" if level else "", cluster=cluster, topic=topic, alter=alter)


def test_the_urm_configs_come_with_urm():
    assert set(CONFIG_LEVELS) == {"unclean.recovery.strategy", "unclean.recovery.manager.enabled",
                                  "unclean.recovery.timeout.ms"} and set(CONFIG_LEVELS) <= KNOWN_CONFIGS
    assert unknown_at_level("unclean.recovery.strategy", Level.URM) is None
    assert unknown_at_level("min.insync.replicas", Level.CLASSIC) is None
    assert unknown_at_level("unclean.recovery.timeout.ms", Level.ELR) == (
        "Unknown config name unclean.recovery.timeout.ms at level elr: it comes with level urm")


@pytest.mark.parametrize("where, text, line, step", [
    ("cluster config", story("elr", cluster=", unclean.recovery.strategy: None"), 5, None),
    ("topic config", story("kip903", topic=", config: {unclean.recovery.manager.enabled: false}"), 7, None),
    ("alter_config step", story("classic", alter="unclean.recovery.timeout.ms: 1000"), 10, 2),
])
def test_a_file_below_the_configs_level_is_refused(where, text, line, step):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "f.yaml")
    message = str(err.value)
    assert "Unknown config name unclean.recovery." in message and "it comes with level urm" in message, message
    assert message.startswith(f"f.yaml:{line}: ") and "the file's level is" in message, message
    if step is not None:
        assert f"step {step} (alter_config)" in message, message
    # The same file declaring level urm, or no level, is accepted.
    parse_scenario(text.replace(text.splitlines()[1], "level: urm"), "f.yaml")


def test_cli_refuses_it_in_one_line_exit_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(story("elr", cluster=", unclean.recovery.strategy: Aggressive"))
    result = CliRunner().invoke(main, ["scenario", "run", str(path)])
    assert result.exit_code == 2, result.output
    assert "Unknown config name unclean.recovery.strategy at level elr" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_run_at_a_lower_level_leaves_the_configs_out_and_says_so():
    scn = parse_scenario(story(cluster=", unclean.recovery.strategy: None",
                               topic=", config: {unclean.recovery.timeout.ms: 1000}"))
    same, notes = configs_at_level(scn, Level.URM)
    assert same is scn and notes == []
    lower, notes = configs_at_level(scn, Level.ELR)
    assert lower.config == {"min.insync.replicas": "2"} and lower.topics[0].config == {}
    assert notes == [
        "Unknown config name unclean.recovery.strategy at level elr: it comes with level urm; "
        "unclean.recovery.strategy=None in the cluster config left out",
        "Unknown config name unclean.recovery.timeout.ms at level elr: it comes with level urm; "
        "unclean.recovery.timeout.ms=1000 in topic t's config left out"]


@pytest.mark.parametrize("level, error", [(Level.ELR, "INVALID_CONFIG"), (Level.URM, "NONE")])
def test_the_controller_refuses_the_config_below_its_level(level, error):
    """IncrementalAlterConfigs of unclean.recovery.strategy: INVALID_CONFIG at elr, accepted at urm."""
    scn = parse_scenario(story(alter="unclean.recovery.strategy: Aggressive"))
    result = run_scenario(scn, level=level)
    line = next(x for x in result.timeline if "(alter_config)" in x)
    assert line.endswith(f"-> {error}"), line


def test_the_library_story_run_below_urm_warns_and_runs_without_the_strategy(tmp_path):
    """urm-none-waits-for-operator (written for urm, strategy None) run with --level elr: the run goes on
    without the config (its topics are created, unlike a CreateTopics carrying it), and stderr says so."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scenarios" / "urm-none-waits-for-operator.yaml"
    result = CliRunner().invoke(main, ["scenario", "run", str(path), "--level", "elr", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert ("warning: Unknown config name unclean.recovery.strategy at level elr: it comes with level urm; "
            "unclean.recovery.strategy=None in the cluster config left out") in result.stderr
    assert "creating topic" not in result.stdout and '"scenario": "urm-none-waits-for-operator"' in result.stdout
