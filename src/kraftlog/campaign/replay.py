"""The failing run the campaign's report draws: chosen from the results rows (:func:`pick_failing_seed`),
replayed on the driver from its exported file (:func:`replay_failing`), its events and timeline handed to
:func:`kraftlog.report.html.write_report` (:func:`write_campaign_report`); the report itself runs nothing.
"""

from __future__ import annotations

from pathlib import Path

from ..report.html import FailingRun, write_report
from ..verdict import loss_within_budget
from .summary import level_comparisons

__all__ = ["pick_failing_seed", "replay_failing", "write_campaign_report"]


def pick_failing_seed(rows: list[dict], levels: list[str]) -> dict | None:
    """The failing run whose timeline the report draws: a generated seed that lost acknowledged
    records within the fault budget at the lowest level, else any seed that lost records, else any
    failing seed, else any failing run; the smallest seed first. None when nothing failed."""
    rank = {lv: i for i, lv in enumerate(levels)}
    key = lambda r: (rank.get(r["level"], 99), r["seed"], r["scenario"])  # noqa: E731
    tiers = [
        lambda r: r["kind"] == "seed" and loss_within_budget(r),
        lambda r: r["kind"] == "seed" and r["lost_acked"] > 0,
        lambda r: r["kind"] == "seed" and r["failure"],
        lambda r: r["failure"],
    ]
    for tier in tiers:
        found = sorted((r for r in rows if tier(r) and r.get("failure_file")), key=key)
        if found:
            return found[0]
    return None


def replay_failing(out: str | Path, row: dict) -> FailingRun:
    """Replay ``row``'s exported failure file (``out/<failure_file>``, which carries the level and the
    seed) in the simulator; the :class:`FailingRun` holds the replay check (its digest and loss against
    the row's), the timeline, the events (``RunResult.events``), the brokers and the min ISR (the story's
    fault budget + 1). A replay that raises gives a FailingRun with ``error`` set and no replay."""
    from ..scenario import load_scenario
    from ..scenario.generator import fault_budget
    from ..sim.runner import run_scenario

    try:
        scenario = load_scenario(Path(out) / row["failure_file"])
        result = run_scenario(scenario)
    except Exception as exc:  # the report must not die on a replay problem; it says so instead
        return FailingRun(row=row, error=str(exc))
    v = result.verdict
    replay = {
        "file": row["failure_file"],
        "level": row["level"],
        "seed": row["seed"],
        "history_digest": v["history_digest"],
        "digest_matches": v["history_digest"] == row["history_digest"],
        "lost_acked": v["lost_acked"],
        "lost_acked_matches": v["lost_acked"] == row["lost_acked"],
    }
    return FailingRun(row=row, replay=replay, timeline=list(result.timeline), events=list(result.events),
                      brokers=scenario.brokers, min_isr=fault_budget(scenario) + 1)


def write_campaign_report(out: str | Path, rows: list[dict], summary: dict, levels: list[str]) -> dict | None:
    """Write ``out/report.html`` for the campaign's ``rows`` and ``summary``: the failing run
    :func:`pick_failing_seed` chooses is replayed first. Returns the replay check (summary.json's
    ``timeline_replay``), None when nothing failed or the replay raised."""
    chosen = pick_failing_seed(rows, levels)
    failing = replay_failing(out, chosen) if chosen is not None else None
    write_report(out, rows, summary, levels, failing=failing, comparisons=level_comparisons(summary))
    return failing.replay if failing is not None else None
