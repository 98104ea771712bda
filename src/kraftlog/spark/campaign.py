"""The fault campaign (issue #5): seeds × levels of generated failure stories, plus the scenario
library at every level, fanned out over Spark executors.

Driver side (:func:`run_campaign`): builds the task list, starts a SparkSession on ``master``, runs
``sparkContext.parallelize(tasks).map(run_one)`` in a job group while a rich progress bar polls
Spark's status tracker, turns the rows into a DataFrame, and writes into ``out``:

* ``results.parquet`` — one row per (level, seed) and per (level, library scenario), columns in
  :data:`SCHEMA`;
* ``summary.json`` — ``{"levels": {LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget",
  "lost_acked_total", "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations",
  "leader_hwm_regressions_total"}}, "sim_speedup": x, ...}`` (the per-level
  figures count generated seeds only; the library runs are summarised under ``"scenario_library"``);
  when both ``elr`` and ``urm`` ran, ``summary.json`` also holds ``"urm_vs_elr"``: the two levels compared on
  the same seeds (:func:`compare_levels`, :data:`COMPARISONS`);
* ``failures/<level>-seed-<seed>.yaml`` / ``failures/<level>-<scenario>.yaml`` — every failing run
  (acknowledged records lost, an invariant violated, a leader's HWM moving backwards, an undetected
  truncation, a failed expectation, or a run that raised) as a scenario file with ``level`` set, which
  ``kraftlog scenario run`` replays with the same history digest;
* ``report.html`` — plots and tables (:mod:`kraftlog.report.html`);
* ``spark.log`` — what the Spark JVM printed (its log at WARN), kept off the terminal.

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
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_MASTER",
    "DEFAULT_SEEDS",
    "RUN_TIME_LIMIT_S",
    "COMPARISONS",
    "CampaignResult",
    "build_tasks",
    "compare_levels",
    "comparison_key",
    "comparisons",
    "error_columns",
    "failure_filename",
    "is_failure",
    "run_campaign",
    "run_one",
    "summarize",
    "verdict_columns",
]

#: Default number of generated seeds (issue #5: "a few hundred").
DEFAULT_SEEDS = 250
DEFAULT_MASTER = "local[*]"
#: Wall-clock limit of one simulation run in an executor; a run past it becomes an error row.
RUN_TIME_LIMIT_S = 300

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
    ``{"level", "kind": "scenario", "text", "source"}``; invalid library files are skipped with a warning.
    """
    from ..sim.scenario import ScenarioError, load_scenario

    tasks: list[dict] = []
    warnings: list[str] = []
    for seed in range(seed_offset, seed_offset + seeds):
        for level in levels:
            tasks.append({"level": level, "kind": "seed", "seed": seed})
    if scenario_dir is not None and Path(scenario_dir).is_dir():
        for path in sorted(Path(scenario_dir).glob("*.yaml")):
            try:
                load_scenario(path)
                text = path.read_text(encoding="utf-8")
            except (ScenarioError, OSError) as exc:
                warnings.append(f"skipped library file: {exc}")
                continue
            for level in levels:
                tasks.append({"level": level, "kind": "scenario", "text": text, "source": str(path)})
    return tasks, warnings


def is_failure(row: dict) -> bool:
    """A failing run: lost acknowledged records, invariant violations, a leader's HWM moving backwards
    (``leader_hwm_regressions``, which must always be 0: SCENARIOS.md), undetected truncations, failed
    expectations, or an exception. ``hwm_regressions`` (what consumers saw) is no failure: a Kafka
    consumer can see a lagging HWM after a leader change."""
    return bool(row["lost_acked"] or row["invariant_violations"] or row["leader_hwm_regressions"]
                or row["undetected_truncations"] or row["failed_expectations"] or row["error"])


def verdict_columns(verdict: dict, unavailable_ms: int, messages: int, exit_code: int) -> dict:
    """The results columns a run's verdict fills (SCENARIOS.md's verdict keys → :func:`_schema`'s
    columns): counts as ints, the invariant violations and failed expectations as their number plus
    their text joined by newlines (None when there are none). ``unavailable_ms``, ``messages`` and
    ``exit_code`` come from the RunResult."""
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
    }


def error_columns() -> dict:
    """The results columns of a run that raised (no verdict): zero counts, no details, exit code 1."""
    row = {k: 0 for k in (
        "acked_all", "acked_1", "acked_0", "lost_acked", "hwm_regressions", "leader_hwm_regressions",
        "detected_truncations", "undetected_truncations", "invariant_violations", "failed_expectations",
        "leaderless_at_end", "unavailable_ms", "sim_time_ms", "messages")}
    row.update({_anomaly_column(a): 0 for a in _ANOMALIES})
    row.update({"violation_details": None, "expectation_details": None, "history_digest": None, "exit_code": 1})
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
    from ..protocol.level import Level
    from ..sim.runner import run_scenario
    from ..sim.scenario import dump_scenario, parse_scenario
    from . import faults

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
def summarize(df, levels: list[str]) -> dict:
    """Per-level figures over the generated seeds, from the results DataFrame (Spark).

    Returns ``{LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget", "lost_acked_total",
    "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations", "leader_hwm_regressions_total"}}``
    in ``levels`` order (levels without seeds get zeros). ``leader_hwm_regressions_total`` must be 0."""
    from pyspark.sql import functions as F

    lost = F.col("lost_acked") > 0
    agg = (df.where(F.col("kind") == "seed").groupBy("level").agg(
        F.count(F.lit(1)).alias("seeds"),
        F.sum(F.when(lost, 1).otherwise(0)).alias("seeds_with_loss"),
        F.sum(F.when(lost & F.col("within_budget"), 1).otherwise(0)).alias("seeds_with_loss_within_budget"),
        F.sum("lost_acked").alias("lost_acked_total"),
        F.avg("unavailable_ms").alias("mean_unavailable_ms"),
        F.sum(F.when(F.col("invariant_violations") > 0, 1).otherwise(0)).alias("seeds_with_invariant_violations"),
        F.sum("leader_hwm_regressions").alias("leader_hwm_regressions_total"),
    ).collect())
    by_level = {r["level"]: r for r in agg}
    out = {}
    for level in levels:
        r = by_level.get(level)
        if r is None:
            out[level] = {"seeds": 0, "seeds_with_loss": 0, "seeds_with_loss_within_budget": 0,
                          "lost_acked_total": 0, "p_loss": 0.0, "mean_unavailable_ms": 0.0,
                          "seeds_with_invariant_violations": 0, "leader_hwm_regressions_total": 0}
            continue
        seeds = int(r["seeds"])
        out[level] = {
            "seeds": seeds,
            "seeds_with_loss": int(r["seeds_with_loss"]),
            "seeds_with_loss_within_budget": int(r["seeds_with_loss_within_budget"]),
            "lost_acked_total": int(r["lost_acked_total"] or 0),
            "p_loss": round(int(r["seeds_with_loss"]) / seeds, 6) if seeds else 0.0,
            "mean_unavailable_ms": round(float(r["mean_unavailable_ms"] or 0.0), 3),
            "seeds_with_invariant_violations": int(r["seeds_with_invariant_violations"] or 0),
            "leader_hwm_regressions_total": int(r["leader_hwm_regressions_total"] or 0),
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
            "seeds_with_loss_within_budget": sum(1 for r in lost if r["within_budget"]),
            "lost_acked_total": sum(r["lost_acked"] for r in runs),
            "lost_acked_within_budget": sum(r["lost_acked"] for r in runs if r["within_budget"]),
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
            "seed": seed, "within_budget": bool(b["within_budget"]),
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
                                             if lost(seed, level) > 0 and by_seed[seed][level]["within_budget"]],
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
    """Zip the installed ``kraftlog`` package (for ``addPyFile`` on a cluster)."""
    import kraftlog

    root = Path(kraftlog.__file__).resolve().parent
    target = tmp / "kraftlog.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*.py")):
            zf.write(path, Path("kraftlog") / path.relative_to(root))
    return target


def _start_spark(master: str, out: Path, tmp: Path):
    """A SparkSession on ``master`` with the UI off, Spark's console output in ``out/spark.log`` and
    executors on this Python (``PYSPARK_PYTHON``; kept when already set for a non-local master)."""
    if _is_local(master) or not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if _is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = tmp / "log4j2.properties"
    log4j.write_text(_LOG4J)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName("kraftlog-campaign")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}"))
    with _stderr_to(out / "spark.log"):
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    if not _is_local(master):
        spark.sparkContext.addPyFile(str(_package_zip(tmp)))
    return spark


def _slices(n_tasks: int, parallelism: int) -> int:
    """Spark tasks for ``n_tasks`` runs: about 4 runs per Spark task (a PySpark task costs tens of ms
    of overhead here), at least 4 Spark tasks per core for balance, never more than the runs."""
    if n_tasks == 0:
        return 1
    return max(1, min(n_tasks, max(parallelism * 4, math.ceil(n_tasks / 4))))


def _collect_with_progress(spark, tasks: list[dict], num_slices: int, progress_cb) -> list[dict]:
    """Run ``tasks`` through :func:`run_one` on the executors; call ``progress_cb(done, total)`` with
    Spark-task counts while the job runs. Returns the rows in task order."""
    from pyspark import InheritableThread

    sc = spark.sparkContext
    group = f"kraftlog-campaign-{os.getpid()}-{time.time_ns()}"
    outcome: dict = {}

    def job() -> None:
        try:
            sc.setJobGroup(group, "kraftlog campaign", interruptOnCancel=True)
            outcome["rows"] = sc.parallelize(tasks, num_slices).map(run_one).collect()
        except BaseException as exc:  # re-raised on the driver's main thread
            outcome["error"] = exc

    thread = InheritableThread(target=job, daemon=True)
    thread.start()
    tracker = sc.statusTracker()
    try:
        while thread.is_alive():
            thread.join(0.25)
            done = total = 0
            for job_id in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job_id)
                if info is None:
                    continue
                for stage_id in info.stageIds:
                    stage = tracker.getStageInfo(stage_id)
                    if stage is not None:
                        done += stage.numCompletedTasks
                        total += stage.numTasks
            if total:
                progress_cb(done, total)
    except KeyboardInterrupt:
        sc.cancelJobGroup(group)
        raise
    if "error" in outcome:
        raise outcome["error"]
    progress_cb(num_slices, num_slices)
    return outcome["rows"]


def _short_error(exc: BaseException) -> str:
    """The last ``SomethingError: message`` line of a Spark job failure (the Python executor's error)."""
    import re

    found = re.findall(r"^(?:[\w.]+(?:Error|Exception)): .*$", str(exc), flags=re.MULTILINE)
    return found[-1] if found else (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


# ------------------------------------------------------------------------------------ the campaign
@dataclass
class CampaignResult:
    """What :func:`run_campaign` wrote and measured."""

    out: Path
    rows: list[dict]
    summary: dict
    warnings: list[str] = field(default_factory=list)


def _level_order(levels: list[str]):
    rank = {lv: i for i, lv in enumerate(levels)}
    return lambda r: (0 if r["kind"] == "seed" else 1, rank.get(r["level"], 99), r["seed"], r["scenario"])


def run_campaign(levels: list[str], seeds: int = DEFAULT_SEEDS, master: str = DEFAULT_MASTER,
                 out: str | os.PathLike = "campaign-out", seed_offset: int = 0,
                 scenario_dir: str | os.PathLike | None = None, console=None,
                 show_progress: bool = True) -> CampaignResult:
    """Run the campaign and write its outputs into ``out`` (created; earlier ``failures/*.yaml``,
    results and report there are replaced). ``levels`` are level labels, validated by the caller.

    Raises RuntimeError when Spark cannot start (e.g. no Java)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = console or Console(stderr=True)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    failures_dir = out / "failures"
    if failures_dir.exists():
        shutil.rmtree(failures_dir)
    failures_dir.mkdir()
    started = time.perf_counter()
    tasks, warnings = build_tasks(levels, seeds, seed_offset, scenario_dir)

    tmp = Path(tempfile.mkdtemp(prefix="kraftlog-campaign-"))
    spark = None
    try:
        if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
            raise RuntimeError("Spark needs Java 17 or later: no `java` on PATH and JAVA_HOME is not set")
        try:
            spark = _start_spark(master, out, tmp)
        except Exception as exc:
            raise RuntimeError(f"could not start Spark on {master!r}: {exc} (see {out / 'spark.log'})") from exc
        parallelism = spark.sparkContext.defaultParallelism
        num_slices = _slices(len(tasks), parallelism)
        n_seeds = sum(1 for t in tasks if t["kind"] == "seed")
        label = f"{n_seeds} + {len(tasks) - n_seeds} library on {parallelism} cores"
        job_start = time.perf_counter()
        with Progress(TextColumn("[bold]campaign[/bold] {task.description}"), BarColumn(),
                      MofNCompleteColumn(), TextColumn("runs"), TimeElapsedColumn(), TextColumn("eta"),
                      TimeRemainingColumn(), console=console, disable=not show_progress,
                      transient=False) as progress:
            bar = progress.add_task(label, total=len(tasks))

            def on_progress(done: int, total: int) -> None:
                progress.update(bar, completed=min(len(tasks), round(len(tasks) * done / max(total, 1))))

            try:
                rows = _collect_with_progress(spark, tasks, num_slices, on_progress)
            except Exception as exc:
                with open(out / "spark.log", "a", encoding="utf-8") as log:
                    log.write(f"\nthe campaign job failed:\n{exc}\n")
                raise RuntimeError(f"the Spark job failed on {master}: {_short_error(exc)} "
                                   f"(details in {out / 'spark.log'})") from exc
        job_wall_ms = (time.perf_counter() - job_start) * 1000
        rows.sort(key=_level_order(levels))

        # failures/*.yaml
        for row in rows:
            text = row.pop("_yaml", None)
            if text is not None:
                (out / row["failure_file"]).write_text(text, encoding="utf-8")

        # results.parquet (pyarrow) and the DataFrame the summary is computed from
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = _schema()
        table = pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)
        pq.write_table(table, out / "results.parquet")
        df = spark.createDataFrame(table)
        per_level = summarize(df, levels)

        sim_total = sum(r["sim_time_ms"] for r in rows)
        wall_total = sum(r["wall_ms"] for r in rows)
        library: dict = {}
        for r in rows:
            if r["kind"] == "scenario":
                entry = library.setdefault(r["level"], {"runs": 0, "failures": []})
                entry["runs"] += 1
                if r["failure"]:
                    entry["failures"].append(r["scenario"])
        summary = {
            "levels": per_level,
            **comparisons(rows, levels),
            "sim_speedup": round(sim_total / wall_total, 3) if wall_total else 0.0,
            "scenario_library": library,
            "failures": sum(1 for r in rows if r["failure"]),
            "runs": len(rows),
            "seed_range": [seed_offset, seed_offset + seeds - 1] if seeds else [],
            "master": master,
            "executor_cores": parallelism,
            "spark_tasks": num_slices,
            "sim_time_ms_total": sim_total,
            "executor_wall_ms_total": round(wall_total, 1),
            "job_wall_ms": round(job_wall_ms, 1),
            "campaign_speedup": round(sim_total / job_wall_ms, 3) if job_wall_ms else 0.0,
        }
    finally:
        if spark is not None:
            with _stderr_to(out / "spark.log"):
                spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    # report.html (a failing seed's timeline is replayed here, on the driver, from its exported file)
    from ..report.html import write_report

    replay = write_report(out, rows, summary, levels)
    summary["timeline_replay"] = replay
    summary["wall_s"] = round(time.perf_counter() - started, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return CampaignResult(out, rows, summary, warnings)
