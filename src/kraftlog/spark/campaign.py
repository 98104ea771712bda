"""The fault campaign (issue #5): seeds × levels of generated failure stories, plus the scenario
library at every level, fanned out over Spark executors; written as the runs finish, so that an
interrupted campaign keeps what it ran and ``--resume`` runs only the rest (issue 12).

Driver side (:func:`run_campaign`): checks ``--out`` is writable, Java is there and a ``spark://`` (or
``k8s://``) master answers a TCP connect within :data:`CONNECT_TIMEOUT_S` (:class:`CampaignError`, one
line, otherwise); builds the task list (minus the runs already in ``results.parquet`` with ``resume``);
starts a SparkSession on ``master``; parallelizes the tasks into Spark tasks of about 4 runs and runs
each Spark task as its own Spark job, about two jobs per executor core in flight (:func:`_job_plan`),
so that each Spark task's rows reach the driver as soon as it finishes (measured: the same wall time
as one job over every Spark task). The driver appends the finished rows to ``results.parquet`` as a
new part at most every few seconds (:data:`FLUSH_MIN_S`, or :data:`FLUSH_FRACTION` of the elapsed
time in long campaigns) and on an interruption. SIGINT (Ctrl-C) or SIGTERM cancels the Spark jobs,
writes the finished runs, stops the SparkContext and the JVM it launched (by PID, with the Python
workers the JVM started) and returns an interrupted :class:`CampaignResult`; only the runs in flight
are lost. Everything it writes into ``out``:

* ``results.parquet/`` — a directory of parquet parts (``part-NNNNN.parquet``, each written to a dot
  file and renamed, so a reader never sees half a part), one row per (level, seed) and per (level,
  library scenario), columns in :func:`_schema`, rows in the order they finished. pyarrow
  (``pq.read_table(dir)``), Spark (``spark.read.parquet(dir)``) and DuckDB
  (``read_parquet('dir/*.parquet')``) read it the same; ``part-00000`` is empty and carries the schema;
* ``campaign.json`` — what the campaign is (``levels``, ``seeds``, ``seed_offset``, ``scenario_dir``,
  ``library`` names, ``runs``, ``master``), written before the first run, read by ``resume``;
* ``summary.json`` — ``{"levels": {LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget",
  "lost_acked_total", "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations",
  "leader_hwm_regressions_total", "seeds_unsafe", "seeds_unsafe_within_budget"}}, "interrupted": bool,
  "runs", "runs_expected", "unsafe_within_budget": [run...], "sim_speedup": x, ...}`` (the per-level
  figures count generated seeds only; the library runs are summarised under ``"scenario_library"``);
  when both ``elr`` and ``urm`` ran, ``summary.json`` also holds ``"urm_vs_elr"``: the two levels compared
  on the same seeds (:func:`compare_levels`, :data:`COMPARISONS`). :data:`EXECUTION_FIELDS` are the keys
  that differ between two runs of the same campaign (timings, where and how it ran);
* ``failures/<level>-seed-<seed>.yaml`` / ``failures/<level>-<scenario>.yaml`` — every failing run
  (acknowledged records lost, an invariant violated, a leader's HWM moving backwards, an undetected
  truncation, a failed expectation, or a run that raised) as a scenario file with ``level`` set, which
  ``kraftlog scenario run`` replays with the same history digest; written before its row's part;
* ``report.html`` — plots and tables (:mod:`kraftlog.report.html`), when the campaign completed;
* ``spark.log`` — what the Spark JVM printed (its log at WARN), kept off the terminal, and the PIDs of
  the processes the campaign started and stopped.

Executor side (:func:`run_one`): one task dict in, one plain row dict out; everything it needs is
imported inside, so it runs wherever ``kraftlog`` is importable (locally, or shipped as a zip with
``addPyFile`` to a cluster).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..verdict import is_failure, is_safe, loss_within_budget, within_budget

__all__ = [
    "DEFAULT_MASTER",
    "DEFAULT_SEEDS",
    "RUN_TIME_LIMIT_S",
    "COMPARISONS",
    "CONNECT_TIMEOUT_S",
    "EXECUTION_FIELDS",
    "GATE_LEVEL",
    "CampaignError",
    "CampaignResult",
    "build_tasks",
    "check_master",
    "compare_levels",
    "comparison_key",
    "comparisons",
    "error_columns",
    "failure_filename",
    "in_gate",
    "read_manifest",
    "read_results",
    "run_campaign",
    "run_id",
    "run_one",
    "summarize",
    "task_key",
    "unclean_election_allowed",
    "unreachable",
    "unsafe_within_budget",
    "verdict_columns",
]

#: Default number of generated seeds (issue #5: "a few hundred").
DEFAULT_SEEDS = 250
DEFAULT_MASTER = "local[*]"
#: Wall-clock limit of one simulation run in an executor; a run past it becomes an error row.
RUN_TIME_LIMIT_S = 300
#: TCP connect timeout (s) of the check that a ``spark://`` or ``k8s://`` master is reachable.
CONNECT_TIMEOUT_S = 3.0
#: On a cluster master, how long (s) the campaign waits for a first executor, and how long it lets the
#: running jobs go with no executor at all, before giving up with a one-line error (``--executor-wait``):
#: a cluster whose workers cannot host an executor (too little memory or cores) otherwise waits for ever.
EXECUTOR_WAIT_S = 120.0
#: Once a first executor registered (no dynamic allocation), at most this long (s) for the others: the
#: campaign sizes its Spark jobs by the executors' cores (``defaultParallelism``), counted when their
#: number has been steady for EXECUTORS_STEADY_S.
EXECUTORS_SETTLE_S = 15.0
EXECUTORS_STEADY_S = 2.0
#: Finished rows are appended to results.parquet at most every FLUSH_MIN_S seconds, or every
#: FLUSH_FRACTION of the elapsed time when that is longer (a 3-hour campaign writes ~100 parts), and
#: always at the end or on an interruption.
FLUSH_MIN_S = 5.0
FLUSH_FRACTION = 0.05
#: summary.json keys that differ between two runs of the same campaign: timings, where it ran and how
#: it was cut into Spark tasks and jobs (a resumed campaign has the same summary as an uninterrupted
#: one apart from these).
EXECUTION_FIELDS = ("sim_speedup", "executor_wall_ms_total", "job_wall_ms", "campaign_speedup", "wall_s",
                    "master", "executor_cores", "spark_tasks", "spark_jobs", "resumed_runs")
#: The lowest level at which a run within the fault budget must be safe (``--fail-on-loss``).
GATE_LEVEL = "elr"

_ANOMALIES = ("lost-write", "duplicate", "inconsistent-offsets", "nonmonotonic-poll", "poll-skip")


def _anomaly_column(name: str) -> str:
    return "anomaly_" + name.replace("-", "_")


def _schema():
    """The pyarrow schema of ``results.parquet`` (one row per run)."""
    import pyarrow as pa

    cols = [
        ("level", pa.string()),          # protocol level label
        ("kind", pa.string()),           # "seed" (generated story) or "scenario" (library file)
        ("seed", pa.int64()),            # campaign seed, or the library file's seed
        ("scenario", pa.string()),       # scenario name (campaign-seed-<seed> or the file's name)
        ("source", pa.string()),         # campaign:<seed> or the library file path
        ("brokers", pa.int64()),
        ("partitions", pa.int64()),
        ("schedule", pa.string()),       # the fault schedule as text (faults.describe_schedule)
        ("data_losing_shutdowns", pa.int64()),   # unclean shutdowns of a partition's replicas (max)
        ("crashes_losing_data", pa.int64()),     # of which destroyed bytes on the replica (max)
        ("fault_budget", pa.int64()),    # effective min ISR - 1 (smallest over partitions)
        ("within_budget", pa.bool_()),
        ("unclean_election_allowed", pa.bool_()),  # the run lets the controller elect an out-of-sync
                                                   # leader (unclean_election_allowed())
        ("acked_all", pa.int64()),
        ("acked_1", pa.int64()),
        ("acked_0", pa.int64()),
        ("lost_acked", pa.int64()),
        ("hwm_regressions", pa.int64()),          # HWM moving backwards as consumers saw it
        ("leader_hwm_regressions", pa.int64()),   # a leader's own HWM moving backwards (always 0)
        ("detected_truncations", pa.int64()),
        ("undetected_truncations", pa.int64()),
        *[(_anomaly_column(a), pa.int64()) for a in _ANOMALIES],
        ("invariant_violations", pa.int64()),
        ("violation_details", pa.string()),
        ("failed_expectations", pa.int64()),
        ("expectation_details", pa.string()),
        ("leaderless_at_end", pa.int64()),   # partitions without a leader at the end
        ("unavailable_ms", pa.int64()),
        ("sim_time_ms", pa.int64()),
        ("wall_ms", pa.float64()),           # executor wall time of the task (generate + simulate)
        ("messages", pa.int64()),
        ("history_digest", pa.string()),
        ("exit_code", pa.int64()),
        ("error", pa.string()),              # exception text when the run raised, else null
        ("passed", pa.bool_()),              # SCENARIOS.md: completed, every expect/wait_until held
        ("safe", pa.bool_()),                # SCENARIOS.md: nothing acked lost, no invariant violated,
                                             # no truncation undetected (null when the run raised)
        ("failure", pa.bool_()),
        ("failure_file", pa.string()),       # failures/<...>.yaml relative to --out, else null
    ]
    return pa.schema(cols)


# ---------------------------------------------------------------------------------------- tasks
def build_tasks(levels: list[str], seeds: int, seed_offset: int = 0,
                scenario_dir: str | os.PathLike | None = None) -> tuple[list[dict], list[str]]:
    """The campaign's tasks: every (level, seed) for seeds ``seed_offset .. seed_offset+seeds-1``,
    then every (level, library file) of ``scenario_dir`` (``*.yaml``, when given and present).

    Returns (tasks, warnings): a task is a plain dict ``{"level", "kind": "seed", "seed"}`` or
    ``{"level", "kind": "scenario", "name", "text", "source"}`` (``name``: the scenario's name, the
    row's ``scenario``); invalid library files are skipped with a warning.
    """
    from ..scenario import ScenarioError, load_scenario

    tasks: list[dict] = []
    warnings: list[str] = []
    for seed in range(seed_offset, seed_offset + seeds):
        for level in levels:
            tasks.append({"level": level, "kind": "seed", "seed": seed})
    if scenario_dir is not None and Path(scenario_dir).is_dir():
        for path in sorted(Path(scenario_dir).glob("*.yaml")):
            try:
                name = load_scenario(path).name
                text = path.read_text(encoding="utf-8")
            except (ScenarioError, OSError) as exc:
                warnings.append(f"skipped library file: {exc}")
                continue
            for level in levels:
                tasks.append({"level": level, "kind": "scenario", "name": name, "text": text,
                              "source": str(path)})
    return tasks, warnings


def task_key(task_or_row: dict) -> tuple:
    """What identifies a run, from its task or its row: ``(level, "seed", seed)`` or
    ``(level, "scenario", name)``."""
    if task_or_row["kind"] == "seed":
        return (task_or_row["level"], "seed", int(task_or_row["seed"]))
    return (task_or_row["level"], "scenario", task_or_row.get("name") or task_or_row["scenario"])


#: ``elect`` step types with which an operator accepts an out-of-sync leader (KIP-966's ElectLeaders v3).
_UNCLEAN_ELECTIONS = frozenset({"unclean", "longest_log_aggressive", "designation"})


def unclean_election_allowed(scenario, level: str) -> bool:
    """Whether the run lets the controller elect a replica that may lack acknowledged records, by the
    operator's choice: ``unclean.leader.election.enable=true`` (cluster, topic, or set by an
    ``alter_config`` step), at level ``urm`` ``unclean.recovery.strategy=Aggressive``, or an ``elect``
    step of type unclean, longest_log_aggressive or designation. KIP-966's promise (nothing acknowledged
    lost within the fault budget) is not made for such runs, so ``--fail-on-loss`` leaves them out."""
    configs = [scenario.config, *(t.config for t in scenario.topics),
               *(step.args["config"] for step in scenario.steps if step.verb == "alter_config")]
    for config in configs:
        if str(config.get("unclean.leader.election.enable", "")).lower() == "true":
            return True
        if level == "urm" and str(config.get("unclean.recovery.strategy", "")).lower() == "aggressive":
            return True
    return any(step.verb == "elect" and step.args["type"] in _UNCLEAN_ELECTIONS for step in scenario.steps)


def run_id(row: dict) -> str:
    """A run's name: its failure file's stem, ``<level>-seed-<seed>`` or ``<level>-<scenario>``."""
    return Path(failure_filename(row)).stem


def in_gate(row: dict) -> bool:
    """Whether ``--fail-on-loss`` holds the run to KIP-966's promise: level :data:`GATE_LEVEL` or above,
    within the fault budget, and no unclean election allowed (:func:`unclean_election_allowed`)."""
    from ..level import Level

    rank = {lv.label: lv for lv in Level}
    return (row["level"] in rank and rank[row["level"]] >= rank[GATE_LEVEL] and within_budget(row)
            and not row.get("unclean_election_allowed"))


def unsafe_within_budget(rows: list[dict]) -> list[str]:
    """What ``--fail-on-loss`` fails on: the runs (generated or library) held to the promise
    (:func:`in_gate`) that are not safe (:func:`is_safe`), as :func:`run_id` names in level, seed,
    scenario order."""
    from ..level import Level

    rank = {lv.label: lv for lv in Level}
    found = [r for r in rows if in_gate(r) and not is_safe(r)]
    found.sort(key=lambda r: (rank[r["level"]], r["kind"] != "seed", r["seed"], r["scenario"]))
    return [run_id(r) for r in found]


def verdict_columns(verdict: dict, unavailable_ms: int, messages: int, exit_code: int) -> dict:
    """The results columns a run's verdict fills (SCENARIOS.md's verdict keys → :func:`_schema`'s
    columns): counts as ints, the invariant violations and failed expectations as their number plus
    their text joined by newlines (None when there are none), ``passed`` and ``safe`` as the verdict
    has them. ``unavailable_ms``, ``messages`` and ``exit_code`` come from the RunResult."""
    return {
        "acked_all": verdict["acked"].get("all", 0), "acked_1": verdict["acked"].get("1", 0),
        "acked_0": verdict["acked"].get("0", 0),
        "lost_acked": verdict["lost_acked"],
        "hwm_regressions": verdict["hwm_regressions"],
        "leader_hwm_regressions": verdict["leader_hwm_regressions"],
        "detected_truncations": verdict["detected_truncations"],
        "undetected_truncations": verdict["undetected_truncations"],
        **{_anomaly_column(a): verdict["anomalies"].get(a, 0) for a in _ANOMALIES},
        "invariant_violations": len(verdict["invariant_violations"]),
        "violation_details": "\n".join(verdict["invariant_violations"]) or None,
        "failed_expectations": len(verdict["failed_expectations"]),
        "expectation_details": "\n".join(verdict["failed_expectations"]) or None,
        "leaderless_at_end": len(verdict["leaderless_partitions"]),
        "unavailable_ms": int(unavailable_ms),
        "sim_time_ms": verdict["sim_time_ms"],
        "messages": messages,
        "history_digest": verdict["history_digest"],
        "exit_code": exit_code,
        "passed": bool(verdict["passed"]),
        "safe": bool(verdict["safe"]),
    }


def error_columns() -> dict:
    """The results columns of a run that raised (no verdict): zero counts, no details, exit code 1, not
    passed, ``safe`` unknown (None)."""
    row = {k: 0 for k in (
        "acked_all", "acked_1", "acked_0", "lost_acked", "hwm_regressions", "leader_hwm_regressions",
        "detected_truncations", "undetected_truncations", "invariant_violations", "failed_expectations",
        "leaderless_at_end", "unavailable_ms", "sim_time_ms", "messages")}
    row.update({_anomaly_column(a): 0 for a in _ANOMALIES})
    row.update({"violation_details": None, "expectation_details": None, "history_digest": None, "exit_code": 1,
                "passed": False, "safe": None})
    return row


def failure_filename(row: dict) -> str:
    """``failures/<level>-seed-<seed>.yaml`` or ``failures/<level>-<scenario name>.yaml``."""
    if row["kind"] == "seed":
        return f"failures/{row['level']}-seed-{row['seed']}.yaml"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in row["scenario"])
    return f"failures/{row['level']}-{safe}.yaml"


@contextlib.contextmanager
def _time_limit(seconds: int):
    """Raise TimeoutError in the main thread after ``seconds`` of wall time (POSIX; else no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def expired(signum, frame):
        raise TimeoutError(f"the run took more than {seconds} s of wall time")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_one(task: dict, time_limit_s: int = RUN_TIME_LIMIT_S) -> dict:
    """Executor side: run one task and return its row (a plain dict, :data:`SCHEMA` columns, plus
    ``_yaml``: the scenario file to export when the run failed).

    Never raises for a failing simulation: an exception becomes the row's ``error``."""
    from ..level import Level
    from ..sim.runner import run_scenario
    from ..scenario import dump_scenario, parse_scenario
    from ..scenario import generator as faults

    start = time.perf_counter()
    level = Level.parse(task["level"])
    if task["kind"] == "seed":
        scenario = faults.generate(task["seed"])
    else:
        scenario = parse_scenario(task["text"], task["source"])
    row: dict = {
        "level": level.label,
        "kind": task["kind"],
        "seed": scenario.seed,
        "scenario": scenario.name,
        "source": scenario.source,
        "brokers": scenario.brokers,
        "partitions": sum(t.partitions for t in scenario.topics),
        "schedule": faults.describe_schedule(scenario),
        "data_losing_shutdowns": faults.data_losing_shutdowns(scenario),
        "crashes_losing_data": faults.crashes_losing_data(scenario),
        "fault_budget": faults.fault_budget(scenario),
        "within_budget": faults.within_budget(scenario),
        "unclean_election_allowed": unclean_election_allowed(scenario, level.label),
        "error": None,
        "failure_file": None,
    }
    try:
        with _time_limit(time_limit_s):
            result = run_scenario(scenario, level=level)
    except Exception as exc:  # a crash of the simulation is a finding, not a campaign failure
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        row["error"] = "".join(tb[-6:]).strip()
        result = None
    if result is not None:
        row.update(verdict_columns(result.verdict, result.unavailable_ms, result.messages, result.exit_code))
    else:
        row.update(error_columns())
    row["failure"] = is_failure(row)
    if row["failure"]:
        row["failure_file"] = failure_filename(row)
        row["_yaml"] = dump_scenario(dataclasses.replace(scenario, level=level.label))
    row["wall_ms"] = (time.perf_counter() - start) * 1000
    return row


# --------------------------------------------------------------------------------------- summary
def summarize(rows: list[dict], levels: list[str]) -> dict:
    """Per-level figures over the generated seeds, from the results rows (plain dicts).

    Returns ``{LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget", "lost_acked_total",
    "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations", "leader_hwm_regressions_total",
    "seeds_unsafe", "seeds_unsafe_within_budget"}}`` in ``levels`` order (levels without seeds get zeros).
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
    the results rows (plain dicts, :func:`_schema`'s columns).

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


# ------------------------------------------------------------------------------------------ spark
_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.py4j.name = py4j
logger.py4j.level = error
"""


@contextlib.contextmanager
def _stderr_to(path: Path):
    """Point file descriptor 2 at ``path`` (so the JVM that pyspark launches inherits it), then restore."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with open(path, "ab") as fh:
        os.dup2(fh.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def _package_zip(tmp: Path) -> Path:
    """Zip the installed ``kraftlog`` package, every file but compiled bytecode (for ``addPyFile`` on a
    cluster: its executors need not have kraftlog installed)."""
    import kraftlog

    root = Path(kraftlog.__file__).resolve().parent
    target = tmp / "kraftlog.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                zf.write(path, Path("kraftlog") / path.relative_to(root))
    return target


def _log(path: Path, text: str) -> None:
    """Append one ``kraftlog: ...`` line to ``spark.log`` (which processes the campaign started and stopped)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"kraftlog: {text}\n")


def _start_spark(master: str, out: Path, tmp: Path, app_name: str = "kraftlog-campaign"):
    """A SparkSession named ``app_name`` on ``master`` with the UI off, Spark's console output in
    ``out/spark.log`` and executors on this Python (``PYSPARK_PYTHON``; kept when already set for a
    non-local master).

    Returns ``(spark, jvm)``: ``jvm`` is the ``subprocess.Popen`` of the Java gateway pyspark launched for
    it, or None when this Python process already had one (it is then not ours to stop)."""
    if _is_local(master) or not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if _is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = tmp / "log4j2.properties"
    log4j.write_text(_LOG4J)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    launching = SparkContext._gateway is None
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}"))
    try:
        with _stderr_to(out / "spark.log"):
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("WARN")
    except BaseException as exc:
        if launching and SparkContext._gateway is not None:  # the JVM started, the context did not
            # A Py4JJavaError's text comes from the JVM: read it before stopping the JVM.
            exc.kraftlog_text = _exception_text(exc)
            _stop_jvm(SparkContext._gateway.proc, out / "spark.log")
        raise
    jvm = getattr(SparkContext._gateway, "proc", None) if launching else None
    if jvm is not None:
        _log(out / "spark.log", f"started the Spark JVM (Java gateway), pid {jvm.pid}")
    if not _is_local(master):
        spark.sparkContext.addPyFile(str(_package_zip(tmp)))
    return spark, jvm


def _proc_ppids() -> dict[int, int]:
    """``{pid: parent pid}`` of every process, from /proc (empty where there is no /proc)."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
            out[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def _descendants(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children, their children, ... (Linux /proc; [] elsewhere)."""
    children: dict[int, list[int]] = {}
    for child, parent in _proc_ppids().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return sorted(found)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True


def _with_timeout(fn, seconds: float) -> bool:
    """Call ``fn()`` in a daemon thread and wait at most ``seconds``; True when it returned (its
    exceptions are swallowed: this is for shutting things down)."""
    done = threading.Event()

    def call() -> None:
        try:
            fn()
        except BaseException:  # noqa: BLE001 - best effort shutdown
            pass
        finally:
            done.set()

    threading.Thread(target=call, daemon=True, name="kraftlog-stop").start()
    return done.wait(seconds)


def _kill(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _stop_jvm(jvm, log: Path, children: list[int] | None = None) -> None:
    """Stop the Java gateway process ``jvm`` (a Popen) pyspark launched: SIGTERM, SIGKILL after 5 s; then
    the processes it had started (``children``, e.g. pyspark's Python daemon and workers; they exit when
    the JVM does) by PID, SIGKILL after 3 s. Forgets the gateway, so a later campaign in this process
    launches a new one."""
    from pyspark import SparkContext

    children = _descendants(jvm.pid) if children is None else children
    gateway = SparkContext._gateway
    if gateway is not None and getattr(gateway, "proc", None) is jvm:
        _with_timeout(gateway.shutdown, 5.0)
        SparkContext._gateway = None
        SparkContext._jvm = None
    if jvm.poll() is None:
        jvm.terminate()
    try:
        jvm.wait(5)
    except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
        jvm.kill()
        try:
            jvm.wait(5)
        except Exception:  # noqa: BLE001
            pass
    deadline = time.monotonic() + 3
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in children if _alive(pid)]
    _kill(left, signal.SIGKILL)
    _log(log, f"stopped the Spark JVM pid {jvm.pid} (exit {jvm.returncode}) and the processes it started: "
              f"{', '.join(map(str, children)) or 'none'}{f' (killed {left})' if left else ''}")


def _stop_spark(spark, jvm, log: Path) -> None:
    """Stop the SparkContext (waiting at most 10 s), then the JVM pyspark launched for it (``jvm``, see
    :func:`_stop_jvm`), even when stopping the context failed or was interrupted."""
    children = _descendants(jvm.pid) if jvm is not None else []
    try:
        with _stderr_to(log):
            _with_timeout(spark.stop, 10.0)
    finally:
        if jvm is not None:
            _stop_jvm(jvm, log, children)


def _slices(n_tasks: int, parallelism: int) -> int:
    """Spark tasks for ``n_tasks`` runs: about 4 runs per Spark task (a PySpark task costs tens of ms
    of overhead here), at least 4 Spark tasks per core for balance, never more than the runs."""
    if n_tasks == 0:
        return 1
    return max(1, min(n_tasks, max(parallelism * 4, math.ceil(n_tasks / 4))))


#: At most this many Spark jobs in flight (driver threads); beyond 32 cores a job takes several Spark tasks.
MAX_JOBS_IN_FLIGHT = 64


def _job_plan(num_slices: int, parallelism: int) -> tuple[list[list[int]], int]:
    """Cut the ``num_slices`` Spark tasks (RDD partitions) into Spark jobs: returns ``(jobs, in_flight)``
    where ``jobs`` lists each job's partitions and ``in_flight`` is how many jobs the driver keeps
    submitted. Two jobs per core keep every core busy while the driver collects a finished job's rows
    and submits the next (with one job per core, measured 13% slower on 2 cores); one partition per job
    (up to 32 cores) gives the driver each Spark task's rows as soon as that task finishes."""
    in_flight = max(1, min(MAX_JOBS_IN_FLIGHT, 2 * parallelism))
    per_job = max(1, math.ceil(2 * parallelism / in_flight))
    jobs = [list(range(i, min(i + per_job, num_slices))) for i in range(0, num_slices, per_job)]
    return jobs, min(in_flight, len(jobs)) if jobs else 0


def _run_partition(tasks):
    """A Spark task: :func:`run_one` over one partition's tasks."""
    return [run_one(task) for task in tasks]


def _run_jobs(sc, todo: list[dict], num_slices: int, jobs: list[list[int]], in_flight: int,
              stop: threading.Event, on_rows, on_tick) -> BaseException | None:
    """Run ``todo`` on the executors as ``jobs`` (see :func:`_job_plan`), ``in_flight`` at a time from
    driver threads, in one job group; call ``on_rows(rows)`` on the driver's main thread with each job's
    rows as it finishes, ``on_tick()`` every 0.2 s. Returns when every job finished, when ``stop`` is set
    (the job group is then cancelled; rows of jobs finished meanwhile are still handed over) or when a
    job failed: then its exception is returned."""
    rdd = sc.parallelize(todo, num_slices)
    group = f"kraftlog-campaign-{os.getpid()}-{time.time_ns()}"
    pending: queue.Queue = queue.Queue()
    for job in jobs:
        pending.put(job)
    results: queue.Queue = queue.Queue()
    halt = threading.Event()

    def worker() -> None:
        try:
            sc.setJobGroup(group, "kraftlog campaign", interruptOnCancel=True)
            while not halt.is_set():
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    return
                results.put(("rows", sc.runJob(rdd, _run_partition, job)))
        except BaseException as exc:  # handed to the main thread
            results.put(("error", exc))

    threads = [threading.Thread(target=worker, daemon=True, name=f"kraftlog-job-{i}") for i in range(in_flight)]
    for thread in threads:
        thread.start()
    finished, error = 0, None
    try:
        while finished < len(jobs) and not stop.is_set():
            try:
                kind, payload = results.get(timeout=0.2)
            except queue.Empty:
                on_tick()
                continue
            if kind == "rows":
                finished += 1
                on_rows(payload)
                continue
            # A Ctrl-C in a terminal also reaches the executors' Python workers, whose tasks then fail:
            # give the driver's signal handler a moment before calling it a failure.
            if not stop.wait(0.5):
                error = payload
            break
    finally:
        halt.set()
        if finished < len(jobs):
            _with_timeout(lambda: sc.cancelJobGroup(group), 5.0)
        while True:
            try:
                kind, payload = results.get_nowait()
            except queue.Empty:
                break
            if kind == "rows":
                on_rows(payload)
    return error


def _executor_count(sc) -> int:
    """Executors registered with the driver ``sc`` (its own block manager not counted); on a local
    master the driver is the executor and this is 0."""
    try:
        return max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)
    except Exception:  # noqa: BLE001 - the JVM is going away: nothing is registered any more
        return 0


def _dynamic_allocation(sc) -> bool:
    return sc.getConf().get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true"


def _no_executor_error(master: str, waited_s: float, during: bool) -> CampaignError:
    what = "the campaign's jobs ran" if during else "the campaign waited"
    return CampaignError(
        f"no Spark executor on {master} while {what} {waited_s:g} s: the workers cannot host one (free cores "
        f"and memory, spark.executor.memory and spark.executor.cores in spark-defaults.conf) or cannot reach "
        f"this driver; see the master's web UI and {{log}} (--executor-wait sets the wait)")


def _wait_for_executors(sc, master: str, stop: threading.Event, timeout_s: float, tick,
                        clock=time.monotonic, sleep=time.sleep) -> None:
    """On a cluster master without dynamic allocation, wait until an executor registered (at most
    ``timeout_s`` s: then raise CampaignError), then until their number has been steady for
    :data:`EXECUTORS_STEADY_S` (at most :data:`EXECUTORS_SETTLE_S` more), so that ``defaultParallelism``
    counts their cores. Returns at once on a local master, with dynamic allocation (executors come when
    jobs ask for them; :func:`_run_jobs`' caller watches them instead) or when ``stop`` is set. Calls
    ``tick()`` every 0.2 s. The error's text has a ``{log}`` placeholder for the Spark log's path."""
    if _is_local(master) or _dynamic_allocation(sc):
        return
    start = clock()
    while _executor_count(sc) == 0:
        if stop.is_set():
            return
        if clock() - start >= timeout_s:
            raise _no_executor_error(master, timeout_s, during=False)
        tick()
        sleep(0.2)
    settle_end = clock() + EXECUTORS_SETTLE_S
    count, since = _executor_count(sc), clock()
    while not stop.is_set() and clock() < settle_end and clock() - since < EXECUTORS_STEADY_S:
        sleep(0.2)
        tick()
        now = _executor_count(sc)
        if now != count:
            count, since = now, clock()


class _ExecutorWatch:
    """While the jobs run on a cluster master: :meth:`check` (called every 0.2 s) raises CampaignError
    once no executor has been registered for ``timeout_s`` s (all of them lost, or, with dynamic
    allocation, none ever granted); it looks at most once a second. Inactive on a local master."""

    def __init__(self, sc, master: str, timeout_s: float, clock=time.monotonic) -> None:
        self.sc, self.master, self.timeout_s, self.clock = sc, master, timeout_s, clock
        self.active = not _is_local(master)
        self.last_seen = self.last_look = clock()

    def check(self) -> None:
        now = self.clock()
        if not self.active or now - self.last_look < 1.0:
            return
        self.last_look = now
        if _executor_count(self.sc) > 0:
            self.last_seen = now
        elif now - self.last_seen >= self.timeout_s:
            raise _no_executor_error(self.master, self.timeout_s, during=True)


def _jvm_error(log: Path, offset: int) -> str | None:
    """The last ``SomeException: message`` line the JVM wrote to ``log`` after ``offset`` (why
    spark-submit exited, e.g. "Master must either be yarn or start with spark, k8s, or local", or an
    UnsupportedClassVersionError from a Java older than 17), or None."""
    import re

    try:
        with open(log, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = re.findall(r'^(?:Exception in thread "[^"]*" )?([\w.$]+(?:Exception|Error): .+)$', text, flags=re.MULTILINE)
    return found[-1].strip()[:300] if found else None


def _exception_text(exc: BaseException) -> str:
    """``str(exc)``, or the exception's type and arguments when that fails (a Py4JJavaError asks the JVM
    for its text, which fails once the JVM is gone); ``exc.kraftlog_text`` when set (read earlier)."""
    saved = getattr(exc, "kraftlog_text", None)
    if saved is not None:
        return saved
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - any failure of the JVM round trip
        args = [a for a in getattr(exc, "args", ()) if isinstance(a, str)]
        return f"{type(exc).__name__}: {args[0] if args else 'no message (the Spark JVM has exited)'}"


def _short_error(exc: BaseException) -> str:
    """The last ``SomethingError: message`` line of a Spark job failure (the Python executor's error)."""
    import re

    text = _exception_text(exc)
    found = re.findall(r"^(?:[\w.]+(?:Error|Exception)): .*$", text, flags=re.MULTILINE)
    return found[-1] if found else (text.strip().splitlines() or [type(exc).__name__])[0][:300]


# ------------------------------------------------------------------------------------ the campaign
#: Files in ``--out``: the results directory (parquet parts) and the campaign's description.
RESULTS = "results.parquet"
MANIFEST = "campaign.json"


class CampaignError(RuntimeError):
    """The campaign could not run or resume; the message is one line naming the problem (the CLI prints
    it and exits 2): an unwritable ``--out``, no Java, an unreachable master, Spark failing to start, a
    failed Spark job, or ``--resume`` options that do not contain the interrupted campaign's."""


@dataclass
class CampaignResult:
    """What :func:`run_campaign` wrote and measured. ``interrupted``: the campaign stopped before every
    run had a row (``summary["interrupted"]``), on ``signal`` (SIGINT, SIGTERM) when that stopped it;
    ``signal`` is also set when a signal came after the last run (the report was then not written)."""

    out: Path
    rows: list[dict]
    summary: dict
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    signal: int | None = None


def _level_order(levels: list[str]):
    rank = {lv: i for i, lv in enumerate(levels)}
    return lambda r: (0 if r["kind"] == "seed" else 1, rank.get(r["level"], 99), r["seed"], r["scenario"])


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a dot file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(out: str | os.PathLike) -> dict:
    """The ``campaign.json`` of the campaign in ``out``: ``{"version": 1, "levels": [...], "seeds": n,
    "seed_offset": k, "scenario_dir": path | None, "library": [scenario name...], "runs": n, "master": url}``.

    Raises CampaignError when there is none or it cannot be read."""
    path = Path(out) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CampaignError(f"--resume: there is no campaign to resume in {out} (no {MANIFEST}); "
                            f"run without --resume to start one") from None
    except (OSError, ValueError) as exc:
        raise CampaignError(f"--resume: cannot read {path}: {exc}") from None
    keys = {"levels", "seeds", "seed_offset", "scenario_dir", "library"}
    if not isinstance(data, dict) or not keys <= set(data):
        raise CampaignError(f"--resume: {path} is not a kraftlog campaign description (it lacks "
                            f"{', '.join(sorted(keys - set(data if isinstance(data, dict) else ())))})")
    return data


def read_results(out: str | os.PathLike) -> list[dict]:
    """The rows in ``out/results.parquet`` (every part; [] when there is none), as plain dicts with
    :func:`_schema`'s columns."""
    import pyarrow.parquet as pq

    path = Path(out) / RESULTS
    if not path.is_dir():
        return []
    return pq.read_table(path, schema=_schema()).to_pylist()


def _seed_text(offset: int, count: int) -> str:
    return f"seeds {offset}..{offset + count - 1}" if count else "no seeds"


def _check_resume(manifest: dict, out: Path, levels: list[str], seeds: int, seed_offset: int,
                  library: list[str]) -> None:
    """Raise CampaignError unless the options contain the interrupted campaign's runs: its levels, its
    seed range and its library scenarios (by name)."""
    missing = [lv for lv in manifest["levels"] if lv not in levels]
    if missing:
        raise CampaignError(f"--resume: the campaign in {out} ran levels {','.join(manifest['levels'])}; "
                            f"--levels {','.join(levels)} leaves out {','.join(missing)} "
                            f"(leave --levels out to use the campaign's)")
    lo, n = int(manifest["seed_offset"]), int(manifest["seeds"])
    if n and not (seed_offset <= lo and lo + n <= seed_offset + seeds):
        raise CampaignError(f"--resume: the campaign in {out} ran {_seed_text(lo, n)}; --seeds {seeds} "
                            f"--seed-offset {seed_offset} give {_seed_text(seed_offset, seeds)}, which do not "
                            f"contain them (leave --seeds and --seed-offset out to use the campaign's)")
    gone = sorted(set(manifest["library"]) - set(library))
    if gone:
        names = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        raise CampaignError(f"--resume: the campaign in {out} ran the library scenario(s) {names}, which the "
                            f"library given now does not have (leave --scenarios and --no-library out to use "
                            f"the campaign's)")


def _check_out(out: Path) -> None:
    """Raise CampaignError unless ``out`` is (or can be made) a directory this process can write into."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".kraftlog-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise CampaignError(f"cannot write to --out {out}: {exc.strerror or exc}") from None


def _check_java() -> None:
    """Raise CampaignError when Spark would find no Java: JAVA_HOME without bin/java, or neither
    JAVA_HOME nor ``java`` on PATH (spark-class uses JAVA_HOME first)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if not os.access(Path(java_home) / "bin" / "java", os.X_OK):
            raise CampaignError(f"Spark needs Java 17 or later: JAVA_HOME is {java_home}, which has no bin/java "
                                f"(point JAVA_HOME at a JDK, or unset it to use `java` from PATH)")
    elif not shutil.which("java"):
        raise CampaignError("Spark needs Java 17 or later: no `java` on PATH and JAVA_HOME is not set")


def _master_endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://host:port[,host2:port2]`` (standalone, port 7077 by
    default) or ``k8s://[https://]host[:port]`` master; [] for other masters (local, yarn...)."""
    from urllib.parse import urlsplit

    if master.startswith("spark://"):
        found = []
        for item in master[len("spark://"):].split(","):
            item = item.strip().rstrip("/")
            host, sep, port = item.rpartition(":")
            if not sep or host.endswith(":") or (host.startswith("[") and not host.endswith("]")):
                host, port = item, "7077"
            try:
                found.append((host.strip("[]"), int(port)))
            except ValueError:
                raise CampaignError(f"--master {master}: {item!r} is not host:port") from None
            if not found[-1][0]:
                raise CampaignError(f"--master {master}: {item!r} has no host")
        return found
    if master.startswith("k8s://"):
        url = master[len("k8s://"):]
        parts = urlsplit(url if "://" in url else "https://" + url)
        try:
            port = parts.port or (80 if parts.scheme == "http" else 443)
        except ValueError:
            raise CampaignError(f"--master {master}: the port is not a number") from None
        if not parts.hostname:
            raise CampaignError(f"--master {master}: no host")
        return [(parts.hostname, port)]
    return []


def unreachable(endpoints, timeout_s: float) -> list[str]:
    """Why none of ``endpoints`` (``(host, port)`` pairs, tried in order) accepts a TCP connection within
    ``timeout_s`` seconds: one message per endpoint (``host:port did not answer within 3 s``,
    ``host:port: connection refused``). [] as soon as one accepts, and for no endpoint at all."""
    errors = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return []
        except socket.timeout:
            errors.append(f"{host}:{port} did not answer within {timeout_s:g} s")
        except OSError as exc:
            errors.append(f"{host}:{port}: {(exc.strerror or str(exc)).lower()}")
    return errors


def check_master(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise CampaignError (one line) when a ``spark://`` or ``k8s://`` master accepts no TCP connection
    within ``timeout_s`` seconds (for a standalone master with several hosts: none does). Spark itself
    would retry for over a minute and then print a Java stack trace. Other masters are not checked."""
    errors = unreachable(_master_endpoints(master), timeout_s)
    if errors:
        raise CampaignError(f"cannot reach the Spark master {master} ({'; '.join(errors)}): is it running, "
                            f"and are the host and port right?")


class _Signals:
    """SIGINT and SIGTERM, while the campaign runs: the first one sets ``event`` (the campaign then
    stops the Spark jobs and keeps what finished); a second one calls ``on_force`` (kill the JVM) and
    raises KeyboardInterrupt. Only in the main thread (elsewhere signals keep their handlers)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.on_force = None
        self._previous: dict = {}

    def __enter__(self):
        self.install()
        return self

    def install(self) -> None:
        """(Re)install the handlers: pyspark's SparkContext installs its own SIGINT handler (cancel
        every job, raise KeyboardInterrupt) when it starts."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous = signal.signal(sig, self._handle)
            except (ValueError, OSError):
                continue
            self._previous.setdefault(sig, previous)

    def _handle(self, signum, frame) -> None:
        if self.event.is_set():
            if self.on_force is not None:
                self.on_force()
            raise KeyboardInterrupt
        self.signum = signum
        self.event.set()

    def __exit__(self, *exc) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class _ProgressLines:
    """Progress outside a terminal: a line ``campaign: D/T runs (P%), elapsed H:MM:SS, eta H:MM:SS``
    through ``write`` every :meth:`interval` seconds (5 s, up to 60 s in long campaigns: elapsed / 20).
    The ETA extrapolates from the runs done since this process started (``done`` at start excluded)."""

    def __init__(self, write, total: int, done: int = 0, clock=time.monotonic) -> None:
        self.write, self.total, self.first, self.done, self.clock = write, total, done, done, clock
        self.start = clock()
        self.last: float | None = None

    @staticmethod
    def interval(elapsed: float) -> float:
        return max(5.0, min(60.0, elapsed / 20))

    def line(self, elapsed: float) -> str:
        ran, left = self.done - self.first, self.total - self.done
        eta = _clock(elapsed / ran * left) if ran > 0 else ("0:00:00" if left <= 0 else "?")
        pct = 100 * self.done // self.total if self.total else 100
        return f"campaign: {self.done}/{self.total} runs ({pct}%), elapsed {_clock(elapsed)}, eta {eta}"

    def update(self, done: int | None = None, force: bool = False) -> None:
        if done is not None:
            self.done = done
        now = self.clock()
        if not force and self.last is not None and now - self.last < self.interval(now - self.start):
            return
        self.last = now
        self.write(self.line(now - self.start))


class _Progress:
    """The campaign's progress on ``console`` (stderr): rich's live bar (``mode="bar"``), lines every few
    seconds (``"lines"``), or nothing (``"none"``)."""

    def __init__(self, mode: str, console, total: int, done: int, label: str) -> None:
        self.mode, self.console, self.total, self.done = mode, console, total, done
        self._bar = self._lines = None
        if mode == "bar":
            from rich.progress import (
                BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("[bold]campaign[/bold] {task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("runs"), TimeElapsedColumn(), TextColumn("eta"),
                                 TimeRemainingColumn(), console=console, transient=False)
            self._task = self._bar.add_task(label, total=total, completed=done)
            self._bar.start()
        elif mode == "lines":
            self._write(f"campaign: {label}")
            self._lines = _ProgressLines(self._write, total, done)
            self._lines.update(force=True)

    def _write(self, line: str) -> None:
        try:
            self.console.file.write(line + "\n")
            self.console.file.flush()
        except (OSError, ValueError):
            pass

    def update(self, done: int | None = None) -> None:
        if done is not None:
            self.done = done
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self._lines is not None:
            self._lines.update(self.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self._lines is not None:
            self._lines.update(self.done, force=True)
            self._lines = None


class _Parts:
    """The parts of ``out/results.parquet``: finished rows are buffered and appended as a new part
    (:meth:`add` flushes when due, see :data:`FLUSH_MIN_S`), each part written to a dot file and renamed
    (readers skip dot files), after the failure files of its failing rows. ``part-00000`` is empty and
    carries the schema, so that even a campaign interrupted before its first run leaves a readable
    dataset."""

    def __init__(self, out: Path, order, clock=time.monotonic) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.out, self.dir, self.order, self.clock = out, out / RESULTS, order, clock
        self.dir.mkdir(exist_ok=True)
        (out / "failures").mkdir(exist_ok=True)
        numbers = [int(p.name[5:10]) for p in self.dir.glob("part-*.parquet") if p.name[5:10].isdigit()]
        self.next = max(numbers) + 1 if numbers else 0
        self.schema = _schema()
        if not numbers:
            self._write(pa.Table.from_pylist([], schema=self.schema), pq)
        self.buffer: list[dict] = []
        self.start = clock()
        self.last: float | None = None
        self.parts_written = 0

    def _write(self, table, pq) -> None:
        name = f"part-{self.next:05d}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)
        self.next += 1

    def add(self, rows: list[dict]) -> None:
        self.buffer.extend(rows)
        now = self.clock()
        if self.last is None or now - self.last >= max(FLUSH_MIN_S, FLUSH_FRACTION * (now - self.start)):
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buffer:
            return
        rows = sorted(self.buffer, key=self.order)
        for row in rows:
            text = row.pop("_yaml", None)
            if text is not None:
                (self.out / row["failure_file"]).write_text(text, encoding="utf-8")
        table = pa.Table.from_pylist([{c: r.get(c) for c in self.schema.names} for r in rows], schema=self.schema)
        self._write(table, pq)
        self.buffer = []
        self.last = self.clock()
        self.parts_written += 1


def _prepare_out(out: Path, fresh: bool) -> None:
    """A fresh campaign replaces what an earlier one left in ``out``: results, summary, report, failure
    files, description and Spark log. A resumed one keeps them but the report, written again at the end."""
    if not fresh:
        (out / "report.html").unlink(missing_ok=True)
        return
    for name in (RESULTS, "failures"):
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for name in ("summary.json", "report.html", MANIFEST, "spark.log"):
        (out / name).unlink(missing_ok=True)


def _build_summary(rows: list[dict], new_rows: list[dict], levels: list[str], n_tasks: int, seeds: int,
                   seed_offset: int, master: str, interrupted: bool, run: dict) -> dict:
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
            if not r.get("passed"):
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


def run_campaign(levels: list[str], seeds: int = DEFAULT_SEEDS, master: str = DEFAULT_MASTER,
                 out: str | os.PathLike = "campaign-out", seed_offset: int = 0,
                 scenario_dir: str | os.PathLike | None = None, console=None,
                 show_progress: bool = True, resume: bool = False, progress: str = "auto",
                 executor_wait_s: float = EXECUTOR_WAIT_S) -> CampaignResult:
    """Run the campaign and write its outputs into ``out`` (module docstring). ``levels`` are level labels,
    validated by the caller. Without ``resume``, what an earlier campaign left in ``out`` is replaced;
    with it, the runs already in ``out/results.parquet`` are kept and only the missing ones run, after
    checking that ``levels``, the seed range and the library contain the earlier campaign's.

    ``progress``: ``"bar"`` (rich's live bar on ``console``), ``"lines"`` (a line every few seconds),
    ``"none"``, or ``"auto"``: the bar when stdout and ``console`` are terminals, else lines;
    ``show_progress=False`` is ``"none"``. ``executor_wait_s``: on a cluster master, how long to wait for
    a first executor, and how long the jobs may go with none, before giving up (CampaignError).

    SIGINT/SIGTERM (main thread only) stop it early: the finished runs are kept, summary.json says
    ``"interrupted": true``, no report is written, and the result has ``interrupted`` and ``signal`` set.
    Raises CampaignError (one line) when it cannot run: ``out`` not writable, no Java, master unreachable,
    Spark not starting, no executor within ``executor_wait_s``, a Spark job failing (the runs finished before are kept, as on an interruption),
    or ``resume`` refused."""
    from rich.console import Console

    started = time.perf_counter()
    console = console or Console(stderr=True)
    out = Path(out)
    _check_out(out)
    tasks, warnings = build_tasks(levels, seeds, seed_offset, scenario_dir)
    library = sorted({t["name"] for t in tasks if t["kind"] == "scenario"})
    previous: list[dict] = []
    if resume:
        _check_resume(read_manifest(out), out, levels, seeds, seed_offset, library)
        previous = read_results(out)
    done_keys = {task_key(r) for r in previous}
    todo = [t for t in tasks if task_key(t) not in done_keys]
    if todo:
        _check_java()
        check_master(master)
    if not show_progress:
        progress = "none"
    elif progress == "auto":
        progress = "bar" if sys.stdout.isatty() and console.is_terminal else "lines"
    order = _level_order(levels)

    run = {"executor_cores": 0, "spark_tasks": 0, "spark_jobs": 0, "resumed_runs": len(previous),
           "job_wall_ms": 0.0}
    new_rows: list[dict] = []
    failed: BaseException | None = None
    starved: CampaignError | None = None
    with _Signals() as signals:
        _prepare_out(out, fresh=not resume)
        _write_json(out / MANIFEST, {
            "version": 1, "levels": levels, "seeds": seeds, "seed_offset": seed_offset,
            "scenario_dir": str(Path(scenario_dir).resolve()) if scenario_dir is not None else None,
            "library": library, "runs": len(tasks), "master": master})
        parts = _Parts(out, order)
        spark = jvm = tmp = None
        n_seeds = sum(1 for t in tasks if t["kind"] == "seed")
        label = (f"{len(tasks)} runs ({n_seeds} seed runs + {len(tasks) - n_seeds} library runs) on {master}"
                 + (f", {len(previous)} done before" if previous else ""))
        bar = None
        try:
            if todo and not signals.event.is_set():
                tmp = Path(tempfile.mkdtemp(prefix="kraftlog-campaign-"))
                log_start = (out / "spark.log").stat().st_size if (out / "spark.log").exists() else 0
                try:
                    spark, jvm = _start_spark(master, out, tmp)
                except CampaignError:
                    raise
                except Exception as exc:
                    why = _jvm_error(out / "spark.log", log_start) or _short_error(exc)
                    raise CampaignError(f"could not start Spark on {master}: {why} "
                                        f"(see {out / 'spark.log'})") from None
                signals.install()
                if jvm is not None:
                    signals.on_force = lambda: _kill([jvm.pid, *_descendants(jvm.pid)], signal.SIGKILL)
                sc = spark.sparkContext
                try:
                    if not _is_local(master) and progress != "none":
                        console.print(f"campaign: waiting for executors on {master}", markup=False)
                    _wait_for_executors(sc, master, signals.event, executor_wait_s, lambda: None)
                    parallelism = sc.defaultParallelism
                    num_slices = _slices(len(todo), parallelism)
                    jobs, in_flight = _job_plan(num_slices, parallelism)
                    run.update(executor_cores=parallelism, spark_tasks=num_slices, spark_jobs=len(jobs))
                    bar = _Progress(progress, console, len(tasks), len(previous), f"{label}, {parallelism} cores")
                    watch = _ExecutorWatch(sc, master, executor_wait_s)

                    def on_rows(rows: list[dict]) -> None:
                        new_rows.extend(rows)
                        parts.add(rows)
                        bar.update(len(previous) + len(new_rows))

                    def on_tick() -> None:
                        bar.update()
                        watch.check()

                    job_start = time.perf_counter()
                    if not signals.event.is_set():
                        failed = _run_jobs(sc, todo, num_slices, jobs, in_flight, signals.event, on_rows, on_tick)
                    run["job_wall_ms"] = (time.perf_counter() - job_start) * 1000
                except CampaignError as exc:  # no executor: keep what finished, as for a failed job
                    starved = exc
        finally:
            parts.flush()
            if bar is not None:
                bar.close()
            if spark is not None:
                _stop_spark(spark, jvm, out / "spark.log")
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

        rows = sorted(previous + new_rows, key=order)
        complete = {task_key(t) for t in tasks} <= {task_key(r) for r in rows}
        summary = _build_summary(rows, new_rows, levels, len(tasks), seeds, seed_offset, master,
                                 not complete, run)
        summary["timeline_replay"] = None
        summary["wall_s"] = round(time.perf_counter() - started, 2)
        _write_json(out / "summary.json", summary)
        if starved is not None:
            raise CampaignError(f"{str(starved).replace('{log}', str(out / 'spark.log'))}; the {len(rows)} "
                                f"finished runs are kept: --resume runs the rest")
        if failed is not None:
            with open(out / "spark.log", "a", encoding="utf-8") as log:
                log.write(f"\nthe campaign job failed:\n{_exception_text(failed)}\n")
            raise CampaignError(f"the Spark job failed on {master}: {_short_error(failed)} (details in "
                                f"{out / 'spark.log'}; the {len(rows)} finished runs are kept: "
                                f"--resume runs the rest)")
        signum = signals.signum
    result = CampaignResult(out, rows, summary, warnings, interrupted=not complete, signal=signum)
    if not complete or signum is not None:
        return result

    # report.html (a failing seed's timeline is replayed here, on the driver, from its exported file)
    from ..report.html import write_report

    summary["timeline_replay"] = write_report(out, rows, summary, levels)
    summary["wall_s"] = round(time.perf_counter() - started, 2)
    _write_json(out / "summary.json", summary)
    return result
