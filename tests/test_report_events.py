"""Issue 12, the report from data, not text: the scenario runner records every timeline line's story as a
structured event (``RunResult.events``), the campaign report's timeline plot is built from those events
(:func:`kraftlog.report.plots.timeline_tracks`) so that rewording a timeline line cannot break it, and
``report.html`` speaks the verdict vocabulary of ``kraftlog scenario run`` (passed: expectations held;
safe: nothing acknowledged lost, no invariant violated, no truncation undetected) with sortable,
filterable tables in one self-contained page. No JVM, no Spark."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from kraftlog.campaign import schema
from kraftlog.campaign.replay import write_campaign_report
from kraftlog.level import Level
from kraftlog.report import plots
from kraftlog.report.html import FailingRun, write_report
from kraftlog.scenario import load_scenario
from kraftlog.scenario.result import EVENT_KINDS
from kraftlog.sim.recorder import RunRecorder
from kraftlog.sim.runner import run_scenario

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
#: KAFKA-14617 at classic: a cut link, a held AlterPartition released late, two crashes and restarts,
#: a leader change to the replica that lost its disk, and the invariants it breaks.
STORY = SCENARIO_DIR / "kafka-14617-stale-alter-partition.yaml"


def _time(line: str) -> int:
    return int(line.split("ms", 1)[0])


def _times(result, text: str) -> list[int]:
    """The times (ms since the cluster was ready) of the timeline lines that start with ``text``."""
    return [_time(x) for x in result.timeline if x.split("ms  ", 1)[1].startswith(text)]


def _at(result, text: str) -> int:
    """The time of the one timeline line that starts with ``text``."""
    (t,) = _times(result, text)
    return t


@pytest.fixture(scope="module")
def story():
    return run_scenario(load_scenario(STORY), Level.parse("classic"))


# ------------------------------------------------------------------------ (a) events from the runner
def test_every_timeline_line_has_its_event_at_the_same_time(story):
    """One event per timeline line, in the same order, each with the very time its line shows (the
    bootstrap re-stamped negative like its lines), every one JSON data of a known kind."""
    assert story.events and len(story.events) == len(story.timeline)
    assert [e["t"] for e in story.events] == [_time(line) for line in story.timeline]
    assert {e["kind"] for e in story.events} <= set(EVENT_KINDS)
    assert json.loads(json.dumps(story.events)) == story.events
    ready = [e for e in story.events if e["kind"] == "ready"]
    assert ready == [{"t": 0, "kind": "ready", "brokers": 2, "level": "classic", "seed": 14617}]
    before = story.events[:story.events.index(ready[0])]
    assert before and all(e["t"] < 0 for e in before)
    assert {"kind": "broker", "broker": 1, "registered": True, "broker_epoch": 1,
            "t": _at(story, "broker 1 registered (broker epoch 1)")} in before


def test_step_events_name_what_the_steps_did(story):
    """The crash names the broker and what it lost, the hold/release the API and the link, the produce
    how many records were acknowledged, the wait_until whether it held; t is the step line's time."""
    steps = {e["index"]: e for e in story.events if e["kind"] == "step"}
    assert steps[7] == {"t": _at(story, "step 7 (crash)"), "kind": "step", "index": 7, "verb": "crash",
                        "broker": 1, "lose": "all"}
    assert steps[14]["broker"] == 0 and steps[14]["lose"] == "none"
    assert steps[9]["verb"] == "restart" and steps[9]["broker"] == 1
    assert (steps[1]["verb"], steps[1]["from"], steps[1]["to"]) == ("cut", 1, 0)
    assert {k: steps[4][k] for k in ("verb", "api", "from", "to")} == {
        "verb": "hold", "api": "AlterPartition", "from": 0, "to": "controller"}
    assert steps[12]["verb"] == "release" and steps[12]["t"] == _at(story, "step 12 (release)")
    assert steps[5]["verb"] == "heal" and steps[5]["nodes"] is None  # all links
    assert {k: steps[2][k] for k in ("topic", "partition", "count", "acks", "acked")} == {
        "topic": "t", "partition": 0, "count": 20, "acks": "all", "acked": 20}
    assert steps[8]["condition"] == {"broker": 1, "fenced": True} and steps[8]["holds"] is True
    assert steps[3]["condition"] == {"partition": "t-0", "isr": [0]} and steps[3]["holds"] is True
    assert 6 not in steps  # run_for logs no line and records no event


def test_partition_events_show_what_changed_and_only_that(story):
    """PartitionRecord: created with its replicas, leader and ISR. PartitionChangeRecord: the new leader
    (and its epoch) when it changed; an ISR-only change has no ``leader`` key, so "unchanged" is not
    "none"."""
    changes = [e for e in story.events if e["kind"] == "partition"]
    created = changes[0]
    assert {k: created[k] for k in ("partition", "created", "replicas", "leader", "isr")} == {
        "partition": "t-0", "created": True, "replicas": [0, 1], "leader": 0, "isr": [0, 1]}
    elected = [e for e in changes if e.get("leader") == 1]
    assert len(elected) == 1
    assert elected[0]["t"] == _at(story, "t-0: leader -> 1 (epoch 2)")
    assert (elected[0]["leader_epoch"], elected[0]["isr"]) == (2, [1])
    rejoined = [e for e in changes if e["t"] == _at(story, "step 12 (release)")]
    assert rejoined and rejoined[0]["isr"] == [0, 1] and "leader" not in rejoined[0]


def test_broker_invariant_and_described_events(story):
    fenced = [(e["broker"], e["fenced"]) for e in story.events if e["kind"] == "broker" and "fenced" in e
              and e["t"] > 0]
    assert fenced == [(1, True), (1, False), (0, True), (0, False)]
    names = [e["name"] for e in story.events if e["kind"] == "invariant"]
    assert names == ["ControllerIsrHasUpToTrueHWM", "LeaderHasCompleteCommittedLog", "ControllerIsrHasUpToTrueHWM"]
    lost = next(e for e in story.events if e["kind"] == "invariant" and e["name"] == "LeaderHasCompleteCommittedLog")
    assert lost["message"] in story.verdict["invariant_violations"][1] and "[in step 16 (run_for)]" in lost["message"]
    (described,) = [e for e in story.events if e["kind"] == "described"]
    assert {k: described[k] for k in ("partition", "leader", "leader_epoch", "isr", "elr")} == {
        "partition": "t-0", "leader": 1, "leader_epoch": 2, "isr": [0, 1], "elr": []}


def test_shutdown_and_controller_failover_events():
    """A clean shutdown is recorded when its line is logged (the broker stopped) with ``started_t``, when
    it began; its down span on the plot starts there. A controller failover is a step event and a track."""
    shut = run_scenario(load_scenario(SCENARIO_DIR / "controlled-shutdown.yaml"))
    (ev,) = [e for e in shut.events if e["kind"] == "step" and e["verb"] == "shutdown"]
    assert ev["started_t"] == 5000 < ev["t"] == _at(shut, "step 1 (shutdown)")
    assert any(e["kind"] == "broker" and e.get("in_controlled_shutdown") and e["t"] < ev["t"] for e in shut.events)
    assert plots.timeline_tracks(shut.events)["down"] == [(0, 5000, _at(shut, "step 4 (restart)"), "clean shutdown")]
    failover = run_scenario(load_scenario(SCENARIO_DIR / "controller-failover.yaml"))
    tracks = plots.timeline_tracks(failover.events)
    assert tracks["controller_failovers"] == [_at(failover, "step 1 (restart_controller)")] == [5000]


# --------------------------------------------------------------- (b) the plot's tracks are the story
def test_tracks_are_what_the_story_did(story):
    """Down lanes by crash (what it lost) until the restart, fenced spans from fenced to unfenced, the
    network faults with their heal / release, and t-0's (time, leader, ISR size) steps."""
    tracks = plots.timeline_tracks(story.events)
    assert tracks["down"] == [(1, _at(story, "step 7 (crash)"), _at(story, "step 9 (restart)"), "crash (all)"),
                              (0, _at(story, "step 14 (crash)"), _at(story, "step 17 (restart)"), "crash (none)")]
    assert tracks["fenced"] == [(1, _at(story, "broker 1 fenced"), _times(story, "broker 1 unfenced")[-1]),
                                (0, _at(story, "broker 0 fenced"), _times(story, "broker 0 unfenced")[-1])]
    assert tracks["network"] == [
        (_at(story, "step 1 (cut)"), _at(story, "step 5 (heal)"), "cut 1 -> 0"),
        (_at(story, "step 4 (hold)"), _at(story, "step 12 (release)"), "holding AlterPartition messages 0 -> ctl"),
        (_at(story, "step 10 (cut)"), _at(story, "step 15 (heal)"), "cut 1 -> 0")]
    t0 = tracks["partitions"]["t-0"]
    assert [leader for _t, leader, _isr in t0] == [0, 0, 0, 1, 1]
    assert [isr for _t, _leader, isr in t0] == [2, 1, 2, 1, 2]
    assert t0[0][0] == 0 and t0[3][0] == _at(story, "t-0: leader -> 1")  # the bootstrap counts as 0
    assert tracks["end"] == story.events[-1]["t"] >= story.verdict["sim_time_ms"]  # the describe at the end
    assert tracks["controller_failovers"] == []


def test_a_heal_of_some_nodes_closes_only_their_faults():
    """``heal: {nodes: [2]}`` ends broker 2's isolation, not broker 1's: as the simulator heals."""
    events = [{"t": 0, "kind": "ready", "brokers": 3, "level": "urm", "seed": 0},
              {"t": 10, "kind": "step", "index": 1, "verb": "isolate", "nodes": [2]},
              {"t": 20, "kind": "step", "index": 2, "verb": "isolate", "nodes": [1]},
              {"t": 25, "kind": "step", "index": 3, "verb": "hold", "api": None, "from": 0, "to": "controller"},
              {"t": 30, "kind": "step", "index": 4, "verb": "heal", "nodes": [2]},
              {"t": 35, "kind": "step", "index": 5, "verb": "release", "api": "Fetch", "from": None, "to": None},
              {"t": 40, "kind": "step", "index": 6, "verb": "release", "api": None, "from": 0, "to": None},
              {"t": 50, "kind": "step", "index": 7, "verb": "heal", "nodes": None}]
    assert plots.timeline_tracks(events)["network"] == [
        (10, 30, "isolated [2]"), (20, 50, "isolated [1]"), (25, 40, "holding all messages 0 -> ctl")]


# ------------------------------------------------- (c) rewording the timeline cannot break the plot
def test_rewording_the_timeline_leaves_the_tracks_unchanged(story, monkeypatch):
    """Every timeline line reworded (here: reversed, behind a prefix) gives the same events, hence the
    same tracks and the same drawing input; the plot module parses no text at all."""
    original = RunRecorder.log

    def reworded(self, text, event=None):
        original(self, "reworded: " + text[::-1], event)

    monkeypatch.setattr(RunRecorder, "log", reworded)
    again = run_scenario(load_scenario(STORY), Level.parse("classic"))
    assert again.timeline != story.timeline and all(line.split("ms  ", 1)[1].startswith("reworded: ")
                                                    for line in again.timeline)
    assert again.verdict["history_digest"] == story.verdict["history_digest"]
    assert again.events == story.events
    assert plots.timeline_tracks(again.events) == plots.timeline_tracks(story.events)
    png = plots.timeline(again.events, 2, "kafka-14617 at classic", min_isr=1)
    assert png.startswith(b"\x89PNG")
    source = inspect.getsource(plots)
    assert "import re" not in source and "re.compile" not in source and "parse_timeline" not in source


# ----------------------------------------------------------------------------- (d) report.html
_COLUMNS = schema().names


def _row(level: str, kind: str, name, **values) -> dict:
    """A results row with every column (zeros), passed and safe as the runner would set them."""
    row = {c: 0 for c in _COLUMNS}
    row.update({"level": level, "kind": kind, "seed": name if kind == "seed" else 0,
                "scenario": name if kind == "scenario" else f"story-{name}", "source": "test", "brokers": 3,
                "partitions": 1, "schedule": f"story {name}", "fault_budget": 1, "within_budget": True,
                "history_digest": f"sha256:{level}{name}", "wall_ms": 10.0, "sim_time_ms": 60_000, "error": None,
                "violation_details": None, "expectation_details": None, "failure_file": None})
    row.update(values)
    row["passed"] = not row["error"] and not row["failed_expectations"]
    row["safe"] = None if row["error"] else not (row["lost_acked"] or row["invariant_violations"]
                                                 or row["undetected_truncations"])
    row["failure"] = bool(row["lost_acked"] or row["invariant_violations"] or row["leader_hwm_regressions"]
                          or row["undetected_truncations"] or row["failed_expectations"] or row["error"])
    return row


def _summary(rows, levels) -> dict:
    per_level = {lv: {"seeds": 1, "seeds_with_loss": 0, "seeds_with_loss_within_budget": 0, "lost_acked_total": 0,
                      "p_loss": 0.0, "mean_unavailable_ms": 0.0} for lv in levels}
    return {"levels": per_level, "sim_speedup": 1.0, "scenario_library": {}, "failures": 0, "runs": len(rows),
            "seed_range": [0, 1], "master": "local[2]", "executor_cores": 2, "spark_tasks": 1,
            "sim_time_ms_total": 1, "executor_wall_ms_total": 1.0, "job_wall_ms": 1.0, "campaign_speedup": 1.0}


def test_report_speaks_the_verdict_words_and_is_one_sortable_self_contained_page(tmp_path, story):
    """The library table says what ``kraftlog scenario run`` says (expectations held / FAILED, and every
    safety finding), the failing and all-runs tables carry expectations/safety columns and the sort and
    filter script, the failing run's timeline is drawn from its replayed events, and nothing is loaded
    from elsewhere."""
    failures = tmp_path / "failures"
    failures.mkdir()
    (failures / "classic-story.yaml").write_text(STORY.read_text() + "level: classic\n")
    v = story.verdict
    rows = [
        _row("classic", "seed", 0, lost_acked=20, invariant_violations=1, within_budget=False),
        _row("classic", "seed", 1),
        _row("classic", "scenario", "steady", data_losing_shutdowns=0),
        _row("classic", "scenario", "lossy", lost_acked=20, invariant_violations=1),
        _row("classic", "scenario", "strict", failed_expectations=1),
        _row("classic", "scenario", "broken", error="Traceback\nValueError: boom"),
        _row("classic", "scenario", v["scenario"], lost_acked=v["lost_acked"],
             invariant_violations=len(v["invariant_violations"]), history_digest=v["history_digest"],
             failure_file="failures/classic-story.yaml"),
    ]
    replay = write_campaign_report(tmp_path, rows, _summary(rows, ["classic"]), ["classic"])
    report = (tmp_path / "report.html").read_text()
    assert replay["digest_matches"] and replay["lost_acked_matches"]
    assert report.count("data:image/png;base64,") == 3  # loss by shutdowns, unavailability, the timeline
    assert "step 7 (crash): broker 1 crashed (lose all)" in report  # the timeline text, kept in <details>
    # the verdict words
    assert "expectations held — safe: nothing acknowledged lost" in report
    assert "<b>expectations held — 20 acknowledged records LOST, 1 invariant violation</b>" in report
    assert "<b>FAILED: 1 expectation(s) did not hold — safe: nothing acknowledged lost</b>" in report
    assert "FAILED: the run raised (ValueError: boom) — safety unknown" in report
    cells = re.findall(r"<td[^>]*>(.*?)</td>", report)
    assert not [c for c in cells if re.fullmatch(r"(<b>)?(pass|PASS|FAIL|fail)(</b>)?", c)]
    assert "<b>FAIL</b>" not in report and ">pass<" not in report
    for words in ("held", "FAILED", "safe", "UNSAFE", "FAILED (raised)", "unknown"):
        assert f'<td class="l">{words}</td>' in report, words
    # sortable, filterable tables, the script inline
    for table in ("failing", "runs"):
        assert f'<table class="sortable" id="{table}">' in report
        assert f"<input type='search' data-table='{table}'" in report
        assert f"<input type='checkbox' data-table='{table}'> within the fault budget only" in report
    assert '<th class="l">expectations</th><th class="l">safety</th>' in report
    assert 'data-within="0"' in report and 'data-within="1"' in report
    assert "<script>" in report and 'querySelectorAll("table.sortable")' in report and "localeCompare" in report
    # one file: no external script, stylesheet or image
    assert 'src="http' not in report and "src='http" not in report and "<link" not in report
    assert "<script src" not in report
    assert all(src.startswith("data:") for src in re.findall(r"""src=["']([^"']*)""", report))


def test_the_report_draws_the_failing_run_it_is_handed_and_runs_nothing(tmp_path, story, monkeypatch):
    """Issue 26 item 5: the report takes data only. Handed a failing run (its events, timeline and replay
    check) it draws it without running a simulation; a replay that failed is said, not raised."""
    import kraftlog.sim.runner as runner

    monkeypatch.setattr(runner, "run_scenario", lambda *a, **k: pytest.fail("the report ran a simulation"))
    row = _row("classic", "scenario", "story", lost_acked=20, failure_file="failures/classic-story.yaml")
    replay = {"file": row["failure_file"], "level": "classic", "seed": 1, "history_digest": "sha256:abc",
              "digest_matches": False, "lost_acked": 20, "lost_acked_matches": True}
    failing = FailingRun(row=row, replay=replay, timeline=story.timeline, events=story.events, brokers=3, min_isr=2)
    write_report(tmp_path, [row], _summary([row], ["classic"]), ["classic"], failing=failing)
    report = (tmp_path / "report.html").read_text()
    assert "digest <code>sha256:abc</code> <b>DIFFERS from</b> the executor's" in report
    assert "step 7 (crash): broker 1 crashed (lose all)" in report
    assert report.count("data:image/png;base64,") == 1  # the timeline (no generated seed: no other plot)
    write_report(tmp_path, [row], _summary([row], ["classic"]), ["classic"],
                 failing=FailingRun(row=row, error="no such file"))
    html = (tmp_path / "report.html").read_text()
    assert "Replaying failures/classic-story.yaml failed: <code>no such file</code>" in html


def test_report_imports_no_driver_and_no_spark_and_the_campaign_package_no_jvm():
    """Issue 26 item 5: ``report/`` imports neither ``sim``, ``net``, ``spark`` nor ``campaign`` (no cycle);
    importing ``kraftlog.campaign`` (the Spark-free campaign) loads neither pyspark, the simulator nor
    matplotlib."""
    import ast
    import subprocess
    import sys

    import kraftlog.report

    for path in sorted(Path(kraftlog.report.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                name = "." * node.level + (node.module or "")
            elif isinstance(node, ast.Import):
                name = ",".join(a.name for a in node.names)
            else:
                continue
            assert not re.search(r"(^\.\.|kraftlog\.)(sim|net|spark|campaign)\b", name), f"{path.name}: {name}"
    code = ("import sys, kraftlog.campaign; "
            "print(sorted(m for m in ('pyspark', 'kraftlog.sim.runner', 'matplotlib', 'kraftlog.spark.campaign') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
