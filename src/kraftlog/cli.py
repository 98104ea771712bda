"""The ``kraftlog`` command line.

``kraftlog scenario run FILE [--level LEVEL] [--seed N] [--json] [--wire] [--fail-on-loss]`` replays a
scenario file (SCENARIOS.md) in the deterministic simulator. Exit codes: 0 when the run completed and
every ``expect`` held (with ``--fail-on-loss``: and it is safe), 1 otherwise, 2 for an invalid file or
option (a message naming the line and the problem, never a traceback). The verdict always says, beside
whether the expectations held, whether anything acknowledged was lost (never a bare PASS next to a loss).
"""

from __future__ import annotations

import json
import os
import sys

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .cli_options import level_option
from .level import DEFAULT, IMPLEMENTED, Level
from .verdict import outcome_words


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kraftlog")
def main() -> None:
    """kraftlog: a Kafka-wire-compatible replicated log and its deterministic simulator.

    Exit codes, every command: 0 success; 1 a run failed (or, with --fail-on-loss, was not safe); 2 bad
    input (an invalid file, option or argument: one line naming the problem)."""


@main.group()
def scenario() -> None:
    """Replay failure stories written as scenario files."""


@scenario.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--level", callback=level_option, default=None,
              help=f"Protocol level: {', '.join(lv.label for lv in IMPLEMENTED)} (default: the file's, else "
                   f"{DEFAULT.label}).")
@click.option("--seed", type=int, default=None, help="Seed (overrides the file's).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as one JSON object.")
@click.option("--wire", is_flag=True, help="Send every message through the Kafka wire encoding (kio).")
@click.option("--fail-on-loss", is_flag=True,
              help="Also exit 1 when the run is not safe (acknowledged records lost, an invariant violated, "
                   "a truncation undetected), even if its expectations held.")
@click.option("--dump-logs", is_flag=True,
              help="After the verdict, print every replica's log at the end (batches: offsets, leader epoch, "
                   "producer id, values) and its leader-epoch cache, like kafka-dump-log; under \"logs\" "
                   "with --json.")
@click.option("--real", is_flag=True,
              help="Run it on real processes (a cluster on 127.0.0.1, real time, kraftlog's clients over TCP); "
                   "what real processes cannot honour is refused, naming the step.")
@click.option("--dir", "directory", default=None, type=click.Path(file_okay=False),
              help="With --real: the cluster directory, kept afterwards (default: a new temporary one).")
def scenario_run(file: str, level: Level | None, seed: int | None, as_json: bool, wire: bool,
                 fail_on_loss: bool, dump_logs: bool, real: bool, directory: str | None) -> None:
    """Run scenario FILE and print its timeline and verdict.

    Exit codes: 0 the run completed and every expect/wait_until held (with --fail-on-loss: and it is
    safe); 1 otherwise; 2 an invalid file or option (or, with --real, a step real processes cannot
    honour)."""
    from .scenario import ScenarioError, load_scenario
    from .sim.runner import ScenarioRun

    try:
        scn = load_scenario(file)
        if level is None and scn.level is not None:
            Level.parse(scn.level)
    except ScenarioError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except ValueError as exc:
        click.echo(f"error: {file}: {exc}", err=True)
        sys.exit(2)
    if real:
        _run_real(scn, file, level, seed, as_json, fail_on_loss, wire, dump_logs, directory)
    if directory is not None:
        click.echo("error: --dir is for --real runs", err=True)
        sys.exit(2)
    run = ScenarioRun(scn, level=level, seed=seed, wire=wire)
    for note in run.config_notes:
        click.echo(f"warning: {note}", err=True)
    result = run.run()
    verdict = result.verdict
    logs = run.dump_logs() if dump_logs else None
    if as_json:
        click.echo(json.dumps(verdict if logs is None else {**verdict, "logs": logs}, sort_keys=False))
    else:
        _print_readable(result)
        if logs is not None:
            _print_logs(logs)
    sys.exit(_exit_code(result, fail_on_loss))


def _run_real(scn, file: str, level, seed, as_json: bool, fail_on_loss: bool, wire: bool, dump_logs: bool,
              directory: str | None) -> None:
    """``scenario run --real``: :class:`kraftlog.net.real_scenario.RealScenarioRun`; exits."""
    import tempfile

    from .net.cluster import ClusterError
    from .net.real_scenario import RealScenarioRun
    if wire or dump_logs:
        click.echo("error: --wire and --dump-logs are simulator options, not for --real", err=True)
        sys.exit(2)
    if directory is not None and os.path.exists(os.path.join(directory, "cluster.json")):
        click.echo(f"error: {directory} already holds a cluster: give a new --dir", err=True)
        sys.exit(2)
    out = sys.stderr if as_json else sys.stdout
    try:
        run = RealScenarioRun(scn, directory or tempfile.mkdtemp(prefix="kraftlog-real-"), level=level, seed=seed,
                              progress=lambda line: print(line, file=out, flush=True))
    except ValueError as exc:
        click.echo(f"error: {file}: {exc}", err=True)
        sys.exit(2)
    try:
        result = run.run()
    except KeyboardInterrupt:
        click.echo(f"interrupted: every node of {run.directory} stopped", err=True)
        sys.exit(130)
    except ClusterError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(result.verdict))
    else:
        result.timeline = []  # already printed as it happened
        _print_readable(result)
    sys.exit(_exit_code(result, fail_on_loss))


def _print_logs(logs: dict) -> None:
    """``--dump-logs``: one block per replica, one line per batch (kafka-dump-log's fields)."""
    console = _console()
    for name, replicas in logs.items():
        for broker, log in replicas.items():
            console.print(f"\n{name} on broker {broker} ({log['state']}): LEO {log['leo']}, HWM "
                          f"{'-' if log['hwm'] is None else log['hwm']}, leader-epoch cache "
                          f"{' '.join(f'{e}:{s}' for e, s in log['leader_epoch_cache']) or 'empty'}",
                          markup=False, soft_wrap=True)
            for b in log["batches"]:
                console.print(f"  baseOffset {b['base_offset']} lastOffset {b['last_offset']} count {b['count']} "
                              f"partitionLeaderEpoch {b['leader_epoch']} producerId {b['producer_id']} "
                              f"producerEpoch {b['producer_epoch']} baseSequence {b['base_sequence']} "
                              f"size {b['size_bytes']} values {', '.join(map(str, b['values']))}",
                              markup=False, soft_wrap=True)


def _exit_code(result, fail_on_loss: bool) -> int:
    """SCENARIOS.md: 0 when the run passed; with --fail-on-loss also 1 when it is not safe."""
    if result.exit_code == 0 and fail_on_loss and not result.verdict["safe"]:
        return 1
    return result.exit_code


@scenario.command("library")
@click.argument("directory", type=click.Path(file_okay=False), default="scenarios")
@click.option("--level", callback=level_option, default=None,
              help="Protocol level for every file (default: each file's).")
@click.option("--seed", type=int, default=None, help="Seed for every file (default: each file's).")
@click.option("--fail-on-loss", is_flag=True, help="Also exit 1 when a run is not safe.")
def scenario_library(directory: str, level: Level | None, seed: int | None, fail_on_loss: bool) -> None:
    """Run every scenario file in DIRECTORY (default ./scenarios) and print one row each: whether its
    expectations held and, separately, whether it is safe.

    Exit codes: 0 every run passed (with --fail-on-loss: and is safe); 1 otherwise; 2 a file is invalid."""
    from pathlib import Path

    from .scenario import ScenarioError, load_scenario
    from .sim.runner import ScenarioRun

    files = sorted(Path(directory).glob("*.yaml"))
    if not files:
        click.echo(f"error: no *.yaml scenario files in {directory}", err=True)
        sys.exit(2)
    table = Table(title=f"scenario library: {directory}")
    for col in ("scenario", "level", "seed", "acked all/1/0", "lost acked", "violations", "anomalies",
                "expectations", "safety"):
        table.add_column(col)
    code = 0
    for f in files:
        try:
            scn = load_scenario(str(f))
        except ScenarioError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        run = ScenarioRun(scn, level=level, seed=seed)
        for note in run.config_notes:
            click.echo(f"warning: {f.name}: {note}", err=True)
        r = run.run()
        v = r.verdict
        code = max(code, _exit_code(r, fail_on_loss))
        table.add_row(v["scenario"], v["level"], str(v["seed"]), "/".join(str(n) for n in v["acked"].values()),
                      str(v["lost_acked"]), str(len(v["invariant_violations"])),
                      str(sum(v["anomalies"].values())), "held" if v["passed"] else "FAILED",
                      "safe" if v["safe"] else "UNSAFE")
    _console().print(table)
    sys.exit(code)


def _console() -> Console:
    """A rich Console for stdout; outside a terminal (a pipe, a CI log) 160 columns instead of rich's 80,
    so that tables keep their headers whole."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=160)


def _print_readable(result) -> None:
    console = _console()
    v = result.verdict
    console.print(f"[bold]{v['scenario']}[/bold]  level {v['level']}  seed {v['seed']}")
    for line in result.timeline:
        console.print(line, markup=False, soft_wrap=True)
    table = Table(title="verdict", show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    if v.get("real"):
        table.add_row("real time", f"{v['sim_time_ms']} ms from cluster ready (real processes)")
    else:
        table.add_row("simulated time", f"{v['sim_time_ms']} ms ({result.wall_ms:.0f} ms wall, "
                                        f"{result.messages} messages)")
    table.add_row("acknowledged", ", ".join(f"acks={k}: {n}" for k, n in v["acked"].items()))
    table.add_row("lost acked (acks=all)", str(v["lost_acked"]))
    table.add_row("leaderless partitions", ", ".join(v["leaderless_partitions"]) or "none")
    table.add_row("HWM regressions seen by consumers", str(v["hwm_regressions"]))
    table.add_row("leader HWM regressions (always 0)", str(v["leader_hwm_regressions"]))
    table.add_row("truncations detected / undetected",
                  f"{v['detected_truncations']} / {v['undetected_truncations']}")
    table.add_row("anomalies", ", ".join(f"{k}: {n}" for k, n in v["anomalies"].items()))
    if "committed_offset_regressions" in v:
        table.add_row("consumer groups: commit regressions / skipped",
                      f"{v['committed_offset_regressions']} / {v['skipped_by_group']}")
    # Text, not markup: a violation ends in "[in step 3 (crash)]", which rich would take for a tag.
    table.add_row("invariant violations", Text("\n".join(v["invariant_violations"]) or "none"))
    table.add_row("failed expectations", Text("\n".join(v["failed_expectations"]) or "none"))
    for name, p in v["final"]["partitions"].items():
        table.add_row(f"final {name}", f"leader {p['leader']} (epoch {p['leader_epoch']}), ISR {p['isr']}, "
                                       f"HWM {p['hwm']}, LEO {p['leo']}")
    console.print(table)
    if v["history_digest"] is not None:
        console.print(f"history digest {v['history_digest']}", soft_wrap=True)  # one line, never folded
    words = outcome_words(v)
    style = "green" if v["passed"] and v["safe"] else "red"
    console.print(Text(words, style=style))


from .spark.cli import campaign  # noqa: E402  (the command lives with the Spark job)

main.add_command(campaign)

from .net.cli import chaos, cluster, elect, topics  # noqa: E402  (the real cluster's commands)
from .net.quorum_cli import metadata_quorum  # noqa: E402

main.add_command(cluster)
main.add_command(topics)
main.add_command(elect)
main.add_command(chaos)
main.add_command(metadata_quorum)

from .net.storage_cli import server, storage  # noqa: E402  (one node from its server.properties)

main.add_command(server)
main.add_command(storage)

from .net.groups_cli import groups  # noqa: E402  (consumer groups of a real cluster)

main.add_command(groups)

from .spark.audit import audit  # noqa: E402  (the audit job lives with the Spark jobs)

main.add_command(audit)


if __name__ == "__main__":  # pragma: no cover
    main()
