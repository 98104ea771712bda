"""The campaign's figures, Spark-free, from its results rows (plain dicts, :func:`kraftlog.campaign.results.schema`'s
columns): the per-level summary of the generated seeds (:func:`summarize`), one level against another on
the same seeds (:func:`compare_levels`, :data:`COMPARISONS`) and ``summary.json`` (:func:`build_summary`).
"""

from __future__ import annotations

from ..verdict import is_safe, loss_within_budget, passed, within_budget
from .results import unsafe_within_budget

#: summary.json keys that differ between two runs of the same campaign: timings, where it ran and how
#: it was cut into Spark tasks and jobs (a resumed campaign has the same summary as an uninterrupted
#: one apart from these).
EXECUTION_FIELDS = ("sim_speedup", "executor_wall_ms_total", "job_wall_ms", "campaign_speedup", "wall_s",
                    "master", "executor_cores", "spark_tasks", "spark_jobs", "resumed_runs")


def summarize(rows: list[dict], levels: list[str]) -> dict:
    """Per-level figures over the generated seeds, from the results rows (plain dicts).

    Returns ``{LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget", "lost_acked_total",
    "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations", "leader_hwm_regressions_total",
    "seeds_unsafe", "seeds_unsafe_within_budget", "committed_offset_regressions_total",
    "skipped_by_group_total", "seeds_with_group_anomalies_within_budget"}}`` in ``levels`` order (levels without
    seeds get zeros). The group figures count what consumer groups were told (issue 32): 0 within the budget at
    elr and urm.
    ``leader_hwm_regressions_total`` must be 0; ``seeds_unsafe`` counts the seeds whose run is not safe
    (:func:`is_safe`)."""
    out = {}
    for level in levels:
        mine = [r for r in rows if r["kind"] == "seed" and r["level"] == level]
        lost = [r for r in mine if r["lost_acked"] > 0]
        unsafe = [r for r in mine if not is_safe(r)]
        seeds = len(mine)
        out[level] = {
            "seeds": seeds,
            "seeds_with_loss": len(lost),
            "seeds_with_loss_within_budget": sum(1 for r in mine if loss_within_budget(r)),
            "lost_acked_total": sum(int(r["lost_acked"]) for r in mine),
            "p_loss": round(len(lost) / seeds, 6) if seeds else 0.0,
            "mean_unavailable_ms": round(sum(int(r["unavailable_ms"]) for r in mine) / seeds, 3) if seeds else 0.0,
            "seeds_with_invariant_violations": sum(1 for r in mine if r["invariant_violations"] > 0),
            "leader_hwm_regressions_total": sum(int(r["leader_hwm_regressions"]) for r in mine),
            "seeds_unsafe": len(unsafe),
            "seeds_unsafe_within_budget": sum(1 for r in unsafe if within_budget(r)),
            "committed_offset_regressions_total": sum(int(r.get("committed_offset_regressions") or 0) for r in mine),
            "skipped_by_group_total": sum(int(r.get("skipped_by_group") or 0) for r in mine),
            "seeds_with_group_anomalies_within_budget": sum(
                1 for r in mine if within_budget(r)
                and (r.get("committed_offset_regressions") or r.get("skipped_by_group"))),
        }
    return out


#: (level, baseline) pairs compared seed by seed when both levels ran: KIP-966 part 2 (the Unclean
#: Recovery Manager) against part 1 (the last known leader), issue 10.
COMPARISONS: tuple[tuple[str, str], ...] = (("urm", "elr"),)


def comparison_key(level: str, baseline: str) -> str:
    """The summary.json key of a comparison: ``"urm_vs_elr"``."""
    return f"{level}_vs_{baseline}"


def compare_levels(rows: list[dict], level: str, baseline: str) -> dict:
    """``level`` against ``baseline`` on the same generated seeds (the same story at both levels), from
    the results rows (plain dicts, :func:`schema`'s columns).

    A seed is compared when both levels ran it and neither run raised (a run that raised has no verdict:
    its zero counts would compare as "no loss"); the others are listed in ``seeds_with_error``.
    Returns, with ``L`` = ``level`` and ``B`` = ``baseline`` (seed lists ascending)::

        {"level": L, "baseline": B, "seeds_compared": n, "seeds_with_error": [seed...],
         "by_level": {B: FIGURES, L: FIGURES},
         "seeds_<L>_lost_fewer": [...],   # L lost fewer acknowledged acks=all records than B
         "seeds_<L>_lost_more": [...],    # L lost more
         "seeds_both_lost_same": [...],   # both lost, the same number
         "seeds_<L>_loss_within_budget": [...],   # L lost records although within the fault budget
         "seeds_<L>_leaderless_not_<B>": [...],   # L ended with a leaderless partition, B did not
         "<L>_lost_fewer_in_total": bool,         # L's total < B's total (strictly)
         "differing_seeds": [{"seed", "within_budget", "data_losing_shutdowns", "schedule",
                              "lost_acked": {B: n, L: n}, "leaderless_at_end": {B: n, L: n},
                              "failure_files": {B: path | None, L: path | None}}, ...]}

    where FIGURES = ``{"seeds_with_loss", "seeds_with_loss_within_budget", "lost_acked_total",
    "lost_acked_within_budget", "seeds_leaderless_at_end", "mean_unavailable_ms", "failing_seeds"}``
    over the compared seeds. Records of a partition leaderless at the end are not counted as lost
    (SCENARIOS.md), hence the leaderless figures: a level that loses less by staying unavailable shows.
    """
    by_seed: dict[int, dict[str, dict]] = {}
    for r in rows:
        if r["kind"] == "seed" and r["level"] in (level, baseline):
            by_seed.setdefault(r["seed"], {})[r["level"]] = r
    both = sorted(seed for seed, runs in by_seed.items() if level in runs and baseline in runs)
    errored = [seed for seed in both if by_seed[seed][level]["error"] or by_seed[seed][baseline]["error"]]
    skipped = frozenset(errored)
    compared = [seed for seed in both if seed not in skipped]

    def figures(lv: str) -> dict:
        runs = [by_seed[seed][lv] for seed in compared]
        lost = [r for r in runs if r["lost_acked"] > 0]
        return {
            "seeds_with_loss": len(lost),
            "seeds_with_loss_within_budget": sum(1 for r in runs if loss_within_budget(r)),
            "lost_acked_total": sum(r["lost_acked"] for r in runs),
            "lost_acked_within_budget": sum(r["lost_acked"] for r in runs if within_budget(r)),
            "seeds_leaderless_at_end": sum(1 for r in runs if r["leaderless_at_end"] > 0),
            "mean_unavailable_ms": round(sum(r["unavailable_ms"] for r in runs) / len(runs), 3) if runs else 0.0,
            "failing_seeds": sum(1 for r in runs if r["failure"]),
        }

    def lost(seed: int, lv: str) -> int:
        return by_seed[seed][lv]["lost_acked"]

    fewer = [seed for seed in compared if lost(seed, level) < lost(seed, baseline)]
    more = [seed for seed in compared if lost(seed, level) > lost(seed, baseline)]
    same = [seed for seed in compared if lost(seed, level) == lost(seed, baseline) > 0]
    leaderless = [seed for seed in compared if by_seed[seed][level]["leaderless_at_end"] > 0
                  and by_seed[seed][baseline]["leaderless_at_end"] == 0]
    differing = []
    for seed in compared:
        a, b = by_seed[seed][baseline], by_seed[seed][level]
        if a["lost_acked"] == b["lost_acked"] and a["leaderless_at_end"] == b["leaderless_at_end"]:
            continue
        differing.append({
            "seed": seed, "within_budget": within_budget(b),
            "data_losing_shutdowns": b["data_losing_shutdowns"], "schedule": b["schedule"],
            "lost_acked": {baseline: a["lost_acked"], level: b["lost_acked"]},
            "leaderless_at_end": {baseline: a["leaderless_at_end"], level: b["leaderless_at_end"]},
            "failure_files": {baseline: a.get("failure_file"), level: b.get("failure_file")},
        })
    by_level = {baseline: figures(baseline), level: figures(level)}
    return {
        "level": level,
        "baseline": baseline,
        "seeds_compared": len(compared),
        "seeds_with_error": errored,
        "by_level": by_level,
        f"seeds_{level}_lost_fewer": fewer,
        f"seeds_{level}_lost_more": more,
        "seeds_both_lost_same": same,
        f"seeds_{level}_loss_within_budget": [seed for seed in compared
                                             if loss_within_budget(by_seed[seed][level])],
        f"seeds_{level}_leaderless_not_{baseline}": leaderless,
        f"{level}_lost_fewer_in_total": by_level[level]["lost_acked_total"] < by_level[baseline]["lost_acked_total"],
        "differing_seeds": differing,
    }


def comparisons(rows: list[dict], levels: list[str]) -> dict:
    """``{comparison_key(L, B): compare_levels(rows, L, B)}`` for each pair of :data:`COMPARISONS`
    whose two levels are both in ``levels``; ``{}`` when none is."""
    return {comparison_key(level, baseline): compare_levels(rows, level, baseline)
            for level, baseline in COMPARISONS if level in levels and baseline in levels}


def level_comparisons(summary: dict) -> list[dict]:
    """The comparisons ``summary`` holds (:func:`compare_levels`' dicts), in :data:`COMPARISONS` order."""
    return [summary[key] for key in (comparison_key(level, baseline) for level, baseline in COMPARISONS)
            if summary.get(key) is not None]


def build_summary(rows: list[dict], new_rows: list[dict], levels: list[str], n_tasks: int, seeds: int,
                  seed_offset: int, master: str, interrupted: bool, run: dict) -> dict:
    """summary.json's dict (:mod:`kraftlog.spark.campaign`'s docstring) from every row (``rows``), the rows
    this process ran (``new_rows``: the campaign speedup counts them only), the campaign's shape and
    ``run``: ``{"executor_cores", "spark_tasks", "spark_jobs", "resumed_runs", "job_wall_ms"}`` (how it
    ran). ``timeline_replay`` and ``wall_s`` are the caller's to add."""
    sim_total = sum(r["sim_time_ms"] for r in rows)
    wall_total = sum(r["wall_ms"] for r in rows)
    sim_new = sum(r["sim_time_ms"] for r in new_rows)
    library: dict = {}
    for r in rows:
        if r["kind"] == "scenario":
            entry = library.setdefault(r["level"], {"runs": 0, "failures": [], "expectations_failed": [],
                                                    "unsafe": []})
            entry["runs"] += 1
            if r["failure"]:
                entry["failures"].append(r["scenario"])
            if not passed(r):
                entry["expectations_failed"].append(r["scenario"])
            if not is_safe(r):
                entry["unsafe"].append(r["scenario"])
    job_wall_ms = run["job_wall_ms"]
    return {
        "levels": summarize(rows, levels),
        **comparisons(rows, levels),
        "interrupted": interrupted,
        "runs": len(rows),
        "runs_expected": n_tasks,
        "unsafe_within_budget": unsafe_within_budget(rows),
        "sim_speedup": round(sim_total / wall_total, 3) if wall_total else 0.0,
        "scenario_library": library,
        "failures": sum(1 for r in rows if r["failure"]),
        "seed_range": [seed_offset, seed_offset + seeds - 1] if seeds else [],
        "master": master,
        "executor_cores": run["executor_cores"],
        "spark_tasks": run["spark_tasks"],
        "spark_jobs": run["spark_jobs"],
        "resumed_runs": run["resumed_runs"],
        "sim_time_ms_total": sim_total,
        "executor_wall_ms_total": round(wall_total, 1),
        "job_wall_ms": round(job_wall_ms, 1),
        "campaign_speedup": round(sim_new / job_wall_ms, 3) if job_wall_ms else 0.0,
    }
