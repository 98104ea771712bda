"""The campaign's runs, Spark-free: the tasks (every (level, seed) and (level, library file)), the
executor side (:func:`run_one`: one task in, one results row out), the ``results.parquet`` schema and
the columns a verdict fills, the failure files' names, and the ``--fail-on-loss`` gate.

A row is a plain dict with :func:`schema`'s columns; what it says about its run (passed, safe, a failure,
within the fault budget) is :mod:`kraftlog.verdict`'s rule, the same as for a verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
import traceback
from pathlib import Path

from ..verdict import is_failure, is_safe, within_budget

#: Default number of generated seeds (issue #5: "a few hundred").
DEFAULT_SEEDS = 250
#: Wall-clock limit of one simulation run in an executor; a run past it becomes an error row.
RUN_TIME_LIMIT_S = 300
#: The lowest level at which a run within the fault budget must be safe (``--fail-on-loss``).
GATE_LEVEL = "elr"

ANOMALIES = ("lost-write", "duplicate", "inconsistent-offsets", "nonmonotonic-poll", "poll-skip")


def anomaly_column(name: str) -> str:
    return "anomaly_" + name.replace("-", "_")


def schema():
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
        ("static_quorum_disk_loss", pa.bool_()),   # a kraft.version 0 voter lost its disk (outside the
                                                   # quorum's budget, excluded from --fail-on-loss)
        ("acked_all", pa.int64()),
        ("acked_1", pa.int64()),
        ("acked_0", pa.int64()),
        ("lost_acked", pa.int64()),
        ("hwm_regressions", pa.int64()),          # HWM moving backwards as consumers saw it
        ("leader_hwm_regressions", pa.int64()),   # a leader's own HWM moving backwards (always 0)
        ("detected_truncations", pa.int64()),
        ("undetected_truncations", pa.int64()),
        ("committed_offset_regressions", pa.int64()),  # OffsetFetch below an acknowledged commit (issue 32)
        ("skipped_by_group", pa.int64()),              # records a consumer group never delivered
        *[(anomaly_column(a), pa.int64()) for a in ANOMALIES],
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
    within the fault budget, no unclean election allowed (:func:`unclean_election_allowed`) and no static
    quorum voter's disk lost (``static_quorum_disk_loss``)."""
    from ..level import Level

    rank = {lv.label: lv for lv in Level}
    return (row["level"] in rank and rank[row["level"]] >= rank[GATE_LEVEL] and within_budget(row)
            and not row.get("unclean_election_allowed") and not row.get("static_quorum_disk_loss"))


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
    """The results columns a run's verdict fills (SCENARIOS.md's verdict keys → :func:`schema`'s
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
        "committed_offset_regressions": verdict.get("committed_offset_regressions", 0),
        "skipped_by_group": verdict.get("skipped_by_group", 0),
        **{anomaly_column(a): verdict["anomalies"].get(a, 0) for a in ANOMALIES},
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
        "detected_truncations", "undetected_truncations", "committed_offset_regressions", "skipped_by_group",
        "invariant_violations", "failed_expectations", "leaderless_at_end", "unavailable_ms", "sim_time_ms",
        "messages")}
    row.update({anomaly_column(a): 0 for a in ANOMALIES})
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
    """Executor side: run one task and return its row (a plain dict, :func:`schema` columns, plus
    ``_yaml``: the scenario file to export when the run failed).

    Never raises for a failing simulation: an exception becomes the row's ``error``."""
    from ..level import Level
    from ..scenario import dump_scenario, parse_scenario
    from ..scenario import generator as faults
    from ..sim.runner import run_scenario

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
        "static_quorum_disk_loss": faults.static_quorum_disk_loss(scenario),
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
