"""Issue 10, the campaign part: the fault generator's unclean-recovery stories (ISR and ELR emptied by
unclean shutdowns with the longest log in LastKnownELR; fenced-only ELR; a stale GetReplicaLogInfo
answer held across a disk-replacing restart) — each seed's story valid, each episode with the shape
its docstring gives, the fault budget counted — and the ``urm`` against ``elr`` comparison on the same
seeds (``summary.json``'s ``urm_vs_elr``, the report's section, the printed table), computed from
made-up rows. None of these start Spark."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from click.testing import CliRunner

from kraftlog.campaign import COMPARISONS, compare_levels, comparison_key, comparisons, level_comparisons, schema
from kraftlog.level import IMPLEMENTED, Level
from kraftlog.scenario import CONTROLLER, dump_scenario, parse_scenario
from kraftlog.scenario import generator as faults
from kraftlog.spark.campaign import CampaignResult
from kraftlog.spark.cli import campaign, print_comparison

NEW_EPISODES = ("longest_log_in_last_known_elr", "fenced_only_elr", "stale_replica_log_info")
SEEDS = range(40)


def _episode_steps(s):
    """The steps before the heal-and-settle phase (its first step heals every link)."""
    out = []
    for step in s.steps:
        if step.verb == "heal" and step.args["nodes"] is None:
            break
        if step.verb != "restart_client":  # the consumer's restarts (issue 32) are drawn apart from the episodes
            out.append(step)
    return out


def _replicas(s, leader, a, b) -> bool:
    return (leader, a, b) in s.topics[0].assignment


def _taken_out(step, broker) -> bool:
    a = step.args
    return (step.verb in ("crash", "shutdown") and a["broker"] == broker) or (
        step.verb == "isolate" and a["nodes"] == (broker,))


def _brought_back(step, broker) -> bool:
    a = step.args
    return (step.verb == "restart" and a["broker"] == broker) or (step.verb == "heal" and a["nodes"] == (broker,))


# ------------------------------------------------------------------------------- the generator
def test_new_episodes_are_registered_exclusive_and_leave_the_old_kinds_common():
    """The three unclean-recovery stories are precise races (exclusive), and together weigh less than a
    fifth of the draw: the KIP-966 story stays the most likely episode."""
    for name in NEW_EPISODES:
        weight, _build, exclusive = faults.EPISODES[name]
        assert exclusive and weight > 0
        assert name in faults.__doc__
    total = sum(w for w, _b, _x in faults.EPISODES.values())
    assert sum(faults.EPISODES[n][0] for n in NEW_EPISODES) <= 0.2 * total
    assert max(faults.EPISODES, key=lambda n: faults.EPISODES[n][0]) == "last_isr_member_loses_data"


def test_every_episode_is_drawn_over_300_seeds():
    drawn: Counter = Counter()
    for seed in range(300):
        text = faults.generate(seed).description.split("episodes ")[1].split(";")[0]
        drawn.update(text.split(", "))
    # a story with a controller quorum adds one (issue 33), a story that crosses metadata snapshots one (issue 34)
    from kraftlog.scenario.episodes import QUORUM_EPISODES, SNAPSHOT_EPISODES
    assert set(drawn) == set(faults.EPISODES) | set(QUORUM_EPISODES) | set(SNAPSHOT_EPISODES)
    for name in NEW_EPISODES:
        assert drawn[name] >= 10, (name, drawn[name])
    assert drawn["last_isr_member_loses_data"] == max(drawn.values())


@pytest.mark.parametrize("name", NEW_EPISODES)
@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_forced_episode_story_is_valid_and_round_trips(name, seed):
    """``generate(seed, episodes=[name])`` is deterministic, a valid scenario that round-trips through
    the file format, and ends with every broker up."""
    s = faults.generate(seed, episodes=[name])
    assert s == faults.generate(seed, episodes=[name])
    assert parse_scenario(dump_scenario(s)) == s
    assert name in s.description
    up = set(range(s.brokers))
    for step in s.steps:
        if step.verb in ("crash", "shutdown"):
            assert step.args["broker"] in up
            up.discard(step.args["broker"])
        elif step.verb == "restart":
            assert step.args["broker"] not in up
            up.add(step.args["broker"])
    assert up == set(range(s.brokers))
    settle = s.steps[-1]  # the settle: a run_for after the last step, not an absolute until
    assert s.until_ms is None and settle.verb == "run_for"
    assert 30_000 <= settle.at_ms + settle.args["duration_ms"] <= 150_000


def test_forced_episodes_reject_unknown_names_and_keep_the_drawn_story():
    with pytest.raises(KeyError, match="unknown episode"):
        faults.generate(1, episodes=["nope"])
    s = faults.generate(5)
    drawn = s.description.split("episodes ")[1].split(";")[0].split(", ")
    assert faults.generate(5, episodes=drawn) == s


@pytest.mark.parametrize("seed", SEEDS)
def test_longest_log_in_last_known_elr_shape_and_budget(seed):
    """A leaves (crash of any mode, isolation or clean shutdown); 10-13 s later B crashes keeping its
    page cache; 10-13 s later the leader L crashes losing its page cache or disk; 10-13 s later L
    restarts first, then B 2-6 s later (both into LastKnownELR); A maybe back 1-4 s after B. Two or
    three unclean shutdowns of the partition's replicas: beyond the budget."""
    s = faults.generate(seed, episodes=["longest_log_in_last_known_elr"])
    steps = _episode_steps(s)
    crashes = [st for st in steps if st.verb == "crash"]
    first = steps[0]
    a = first.args["nodes"][0] if first.verb == "isolate" else first.args["broker"]
    b_crash, l_crash = crashes[-2], crashes[-1]
    b, leader = b_crash.args["broker"], l_crash.args["broker"]
    assert _replicas(s, leader, a, b)
    assert b_crash.args["lose"] == "none"
    assert l_crash.args["lose"] in ("unflushed", "all")
    assert 10_000 <= b_crash.at_ms - first.at_ms <= 13_000
    assert 10_000 <= l_crash.at_ms - b_crash.at_ms <= 13_000
    restarts = [st for st in steps if st.verb == "restart" and st.args["broker"] in (leader, b)]
    assert [st.args["broker"] for st in restarts] == [leader, b]  # the last known leader first
    assert 10_000 <= restarts[0].at_ms - l_crash.at_ms <= 13_000
    assert 2_000 <= restarts[1].at_ms - restarts[0].at_ms <= 6_000
    later = [st for st in steps if st.at_ms > restarts[1].at_ms]
    assert all(_brought_back(st, a) for st in later) and len(later) <= 1
    n = len(crashes)
    assert n in (2, 3) and (n == 3) == (first.verb == "crash")
    assert faults.budget_by_partition(s)[_partition_of(s, leader, a, b)] == (n, 1)
    assert faults.data_losing_shutdowns(s) == n and not faults.within_budget(s)


def _partition_of(s, leader, a, b) -> str:
    return f"t-{s.topics[0].assignment.index((leader, a, b))}"


@pytest.mark.parametrize("seed", SEEDS)
def test_fenced_only_elr_shape_and_budget(seed):
    """A, then B 10-13 s later, then L 10-13 s later leave by isolation, clean shutdown or a crash
    keeping the page cache; 14-24 s after L left, B and L come back in either order 1-5 s apart. No page
    cache or disk is lost; within the budget exactly when at most one of them crashed."""
    s = faults.generate(seed, episodes=["fenced_only_elr"])
    steps = _episode_steps(s)
    outs = [st for st in steps if st.verb in ("crash", "shutdown", "isolate")]
    assert len(outs) == 3
    who = [st.args["nodes"][0] if st.verb == "isolate" else st.args["broker"] for st in outs]
    a, b, leader = who
    assert _replicas(s, leader, a, b)
    assert all(st.args["lose"] == "none" for st in outs if st.verb == "crash")
    assert 10_000 <= outs[1].at_ms - outs[0].at_ms <= 13_000
    assert 10_000 <= outs[2].at_ms - outs[1].at_ms <= 13_000
    backs = [st for st in steps if any(_brought_back(st, x) for x in (leader, b))]
    assert len(backs) == 2
    assert 14_000 <= backs[0].at_ms - outs[2].at_ms <= 24_000
    assert 1_000 <= backs[1].at_ms - backs[0].at_ms <= 5_000
    for out, x in zip(outs[1:], (b, leader), strict=True):  # each comes back the way it left
        (back,) = [st for st in backs if _brought_back(st, x)]
        assert (back.verb == "heal") == (out.verb == "isolate")
    crashes = sum(1 for st in outs if st.verb == "crash")
    assert faults.data_losing_shutdowns(s) == crashes
    assert faults.crashes_losing_data(s) == 0
    assert faults.within_budget(s) == (crashes <= 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_stale_replica_log_info_shape_and_budget(seed):
    """ISR and ELR emptied as in the longest-log story; GetReplicaLogInfo held (controller -> the held
    replica, or the replaced replica -> controller) before L and B restart; then the replaced replica
    (L or B) crashes losing its disk and restarts; then exactly that hold is released."""
    s = faults.generate(seed, episodes=["stale_replica_log_info"])
    steps = _episode_steps(s)
    (hold,) = [st for st in steps if st.verb == "hold"]
    (release,) = [st for st in steps if st.verb == "release"]
    assert hold.args["api"] == "GetReplicaLogInfo" and release.args == hold.args
    crashes = [st for st in steps if st.verb == "crash"]
    replace = crashes[-1]
    assert replace.args["lose"] == "all"
    b_crash, l_crash = crashes[-3], crashes[-2]
    b, leader = b_crash.args["broker"], l_crash.args["broker"]
    assert b_crash.args["lose"] == "none" and l_crash.args["lose"] in ("none", "unflushed")
    replaced = replace.args["broker"]
    assert replaced in (leader, b)
    held = b if replaced == leader else leader
    if hold.args["from"] == CONTROLLER:
        assert hold.args["to"] == held
    else:
        assert hold.args == {"api": "GetReplicaLogInfo", "from": replaced, "to": CONTROLLER}
    restarts = [st for st in steps if st.verb == "restart" and st.args["broker"] in (leader, b)]
    assert [st.args["broker"] for st in restarts] == [leader, b, replaced]
    assert l_crash.at_ms < hold.at_ms < restarts[0].at_ms < restarts[1].at_ms < replace.at_ms
    assert replace.at_ms < restarts[2].at_ms < release.at_ms
    # After the new registration (the old session expired), or 2-5 s after the restart, before it.
    assert 12_000 <= release.at_ms - replace.at_ms <= 15_000 or 2_000 <= release.at_ms - restarts[2].at_ms <= 5_000
    assert faults.data_losing_shutdowns(s) == len(crashes) >= 3 and not faults.within_budget(s)


def test_the_stale_answer_story_holds_both_directions_and_releases_early_or_late():
    """Over 40 seeds every variant appears: the question to the held replica or the replaced
    replica's answer held; released after the replaced replica registered again, or before."""
    kinds, timings = set(), set()
    for seed in SEEDS:
        s = faults.generate(seed, episodes=["stale_replica_log_info"])
        (hold,) = [st for st in s.steps if st.verb == "hold"]
        (release,) = [st for st in s.steps if st.verb == "release"]
        replace = [st for st in s.steps if st.verb == "crash" and st.args["lose"] == "all"][-1]
        kinds.add("question" if hold.args["from"] == CONTROLLER else "answer")
        timings.add("late" if release.at_ms - replace.at_ms >= 12_000 else "early")
    assert kinds == {"question", "answer"} and timings == {"late", "early"}


def test_budget_counts_the_unclean_recovery_stories_from_their_steps():
    """The budget rule needs nothing episode-specific: the longest-log story's three crashes of one
    partition's replicas are three data-losing shutdowns (the last one destroys data on the replica);
    a story whose members only leave by isolation or clean shutdown costs nothing."""
    s = parse_scenario("""
name: longest-log
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
sim: {writeback: never}
topics: [{name: t, assignment: [[2, 1, 0]]}]
steps:
  - {at: 3s, crash: {broker: 1, lose: none}}
  - {at: 14s, crash: {broker: 0, lose: none}}
  - {at: 25s, crash: {broker: 2, lose: unflushed}}
  - {at: 36s, restart: {broker: 2}}
  - {at: 39s, restart: {broker: 0}}
  - {at: 40s, restart: {broker: 1}}
""")
    assert faults.budget_by_partition(s) == {"t-0": (3, 1)}
    assert faults.crashes_losing_data(s) == 1
    fenced = parse_scenario("""
name: fenced-only
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics: [{name: t, assignment: [[2, 1, 0]]}]
steps:
  - {at: 3s, isolate: {nodes: [1]}}
  - {at: 14s, shutdown: {broker: 0}}
  - {at: 25s, isolate: {nodes: [2]}}
  - {at: 45s, heal: {nodes: [2]}}
  - {at: 47s, restart: {broker: 0}}
""")
    assert faults.data_losing_shutdowns(fenced) == 0 and faults.within_budget(fenced)


# --------------------------------------------------------------------- urm against elr, same seeds
_COLUMNS = schema().names


def _row(level: str, seed: int, lost: int = 0, within: bool = True, leaderless: int = 0, error=None,
         unavailable_ms: int = 0, kind: str = "seed") -> dict:
    """A made-up results row with every column."""
    row = {c: 0 for c in _COLUMNS}
    row.update({
        "level": level, "kind": kind, "seed": seed,
        "scenario": faults.scenario_name(seed) if kind == "seed" else f"lib-{seed}",
        "source": f"campaign:{seed}", "brokers": 3, "partitions": 1, "schedule": f"story {seed}",
        "data_losing_shutdowns": 1 if within else 3, "crashes_losing_data": 0, "fault_budget": 1,
        "within_budget": within, "lost_acked": lost, "leaderless_at_end": leaderless,
        "unavailable_ms": unavailable_ms, "history_digest": f"sha256:{level}{seed}", "wall_ms": 10.0,
        "sim_time_ms": 60_000, "error": error, "violation_details": None, "expectation_details": None,
    })
    row["failure"] = bool(lost or error)
    row["failure_file"] = f"failures/{level}-seed-{seed}.yaml" if row["failure"] else None
    return row


def _made_up_rows() -> list[dict]:
    return [
        _row("elr", 0, lost=10, within=False, unavailable_ms=1000), _row("urm", 0, lost=0, within=False,
                                                                           unavailable_ms=5000),
        _row("elr", 1, lost=0), _row("urm", 1, lost=5),                       # urm lost more, within budget
        _row("elr", 2, lost=3, within=False), _row("urm", 2, lost=3, within=False),  # the same loss
        _row("elr", 3), _row("urm", 3),                                       # nothing lost
        _row("elr", 4, lost=8), _row("urm", 4, error="Traceback: boom"),      # left out: urm raised
        _row("elr", 5, lost=7, within=False), _row("urm", 5, leaderless=1, within=False, unavailable_ms=30_000),
        _row("elr", 6, lost=2),                                               # no urm run: not compared
        _row("classic", 0, lost=99), _row("classic", 1, lost=99),             # other levels: ignored
        _row("elr", 7, lost=50, kind="scenario"), _row("urm", 7, kind="scenario"),  # library: ignored
    ]


def test_compare_levels_from_made_up_rows():
    c = compare_levels(_made_up_rows(), "urm", "elr")
    assert c["level"] == "urm" and c["baseline"] == "elr"
    assert c["seeds_compared"] == 5 and c["seeds_with_error"] == [4]
    assert c["seeds_urm_lost_fewer"] == [0, 5]
    assert c["seeds_urm_lost_more"] == [1]
    assert c["seeds_both_lost_same"] == [2]
    assert c["seeds_urm_loss_within_budget"] == [1]
    assert c["seeds_urm_leaderless_not_elr"] == [5]
    assert c["by_level"] == {
        "elr": {"seeds_with_loss": 3, "seeds_with_loss_within_budget": 0, "lost_acked_total": 20,
                "lost_acked_within_budget": 0, "seeds_leaderless_at_end": 0, "mean_unavailable_ms": 200.0,
                "failing_seeds": 3},
        "urm": {"seeds_with_loss": 2, "seeds_with_loss_within_budget": 1, "lost_acked_total": 8,
                "lost_acked_within_budget": 5, "seeds_leaderless_at_end": 1, "mean_unavailable_ms": 7000.0,
                "failing_seeds": 2},
    }
    assert c["urm_lost_fewer_in_total"] is True
    assert [d["seed"] for d in c["differing_seeds"]] == [0, 1, 5]
    d0 = c["differing_seeds"][0]
    assert d0 == {"seed": 0, "within_budget": False, "data_losing_shutdowns": 3, "schedule": "story 0",
                  "lost_acked": {"elr": 10, "urm": 0}, "leaderless_at_end": {"elr": 0, "urm": 0},
                  "failure_files": {"elr": "failures/elr-seed-0.yaml", "urm": None}}
    json.dumps(c)  # summary.json material


def test_compare_levels_totals_are_strict_and_empty_inputs_are_zero():
    rows = [_row("elr", 0, lost=4), _row("urm", 0, lost=4)]
    c = compare_levels(rows, "urm", "elr")
    assert c["urm_lost_fewer_in_total"] is False and c["seeds_both_lost_same"] == [0]
    empty = compare_levels([], "urm", "elr")
    assert empty["seeds_compared"] == 0 and empty["differing_seeds"] == []
    assert empty["by_level"]["urm"]["mean_unavailable_ms"] == 0.0


def test_comparisons_only_when_both_levels_ran():
    rows = _made_up_rows()
    assert COMPARISONS == (("urm", "elr"),) and comparison_key("urm", "elr") == "urm_vs_elr"
    assert comparisons(rows, ["classic", "elr"]) == {}
    assert comparisons(rows, ["urm"]) == {}
    assert comparisons(rows, ["classic", "elr", "urm"]) == {"urm_vs_elr": compare_levels(rows, "urm", "elr")}


def _summary(rows, levels) -> dict:
    per_level = {lv: {"seeds": 0, "seeds_with_loss": 0, "seeds_with_loss_within_budget": 0, "lost_acked_total": 0,
                      "p_loss": 0.0, "mean_unavailable_ms": 0.0, "seeds_with_invariant_violations": 0,
                      "leader_hwm_regressions_total": 0} for lv in levels}
    return {"levels": per_level, **comparisons(rows, levels), "sim_speedup": 1.0, "scenario_library": {},
            "failures": 0, "runs": len(rows), "seed_range": [0, 6], "master": "local[2]", "executor_cores": 2,
            "spark_tasks": 1, "sim_time_ms_total": 1, "executor_wall_ms_total": 1.0, "job_wall_ms": 1.0,
            "campaign_speedup": 1.0, "wall_s": 1.0}


def test_report_has_the_urm_vs_elr_section(tmp_path):
    """The report's comparison section: both levels' figures, the seed lists, a scatter plot, and the
    differing seeds with links to their failure files; absent when urm did not run."""
    from kraftlog.report.html import write_report

    rows = _made_up_rows()
    for r in rows:
        r["failure_file"] = None  # no file to replay: the report draws no timeline
    levels = ["classic", "elr", "urm"]
    summary = _summary(rows, levels)
    write_report(tmp_path, rows, summary, levels, comparisons=level_comparisons(summary))
    report = (tmp_path / "report.html").read_text()
    assert "urm vs elr on the same seeds" in report
    assert "urm lost fewer acknowledged records than elr on <b>2</b> seed(s): 0, 5" in report
    assert "urm lost more than elr on <b>1</b> seed(s): 1" in report
    assert "urm lost records within the fault budget on <b>1</b> seed(s): 1" in report
    assert "left out because a run raised: 4" in report
    assert "in total urm lost 8 acknowledged records, elr 20: <b>fewer</b>" in report
    assert report.count("data:image/png;base64,") == 3  # loss by shutdowns, unavailability, urm vs elr
    summary = _summary(rows, ["classic", "elr"])
    assert level_comparisons(summary) == []
    write_report(tmp_path, rows, summary, ["classic", "elr"], comparisons=level_comparisons(summary))
    assert "on the same seeds" not in (tmp_path / "report.html").read_text()


def test_printed_comparison_names_the_seeds():
    from rich.console import Console

    buf = io.StringIO()
    print_comparison(Console(file=buf, width=200), compare_levels(_made_up_rows(), "urm", "elr"))
    text = buf.getvalue()
    assert "urm vs elr on the same 5 seeds" in text
    assert "urm lost fewer acked records than elr on 2 seed(s) (0, 5), more on 1 (1)" in text
    assert "within the fault budget urm lost records on 1 seed(s) (1)" in text
    assert "in total urm 8, elr 20 (fewer)" in text
    assert "left out of the comparison (a run raised): 1 seed(s) (4)" in text


# ------------------------------------------------------------------------------------ the CLI
@pytest.mark.skipif(Level.URM not in IMPLEMENTED, reason="level urm is not implemented yet")
def test_campaign_levels_elr_urm_prints_the_comparison(monkeypatch, tmp_path):
    """``kraftlog campaign --levels urm,elr`` is accepted and run (Spark replaced by made-up rows):
    the levels arrive sorted, and the printed summary ends with the urm vs elr table."""
    import kraftlog.spark.campaign as campaign_module

    seen = {}

    def fake_run_campaign(levels, **kwargs):
        seen["levels"] = levels
        rows = [r for r in _made_up_rows() if r["level"] in levels]
        return CampaignResult(tmp_path, rows, _summary(rows, levels))

    monkeypatch.setattr(campaign_module, "run_campaign", fake_run_campaign)
    result = CliRunner().invoke(campaign, ["--levels", "urm,elr", "--seeds", "7", "--no-library",
                                           "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert seen["levels"] == ["elr", "urm"]
    assert "urm vs elr on the same 5 seeds" in result.output
    assert "more on 1 (1)" in result.output
