"""The ``kraftlog`` command line.

``kraftlog scenario run FILE [--level LEVEL] [--seed N] [--json] [--wire]`` replays a scenario file
(SCENARIOS.md) in the deterministic simulator. Exit codes: 0 when the run completed and every
``expect`` held, 1 otherwise, 2 for an invalid file or option (a message naming the line and the
problem, never a traceback).
"""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .cli_options import level_option
from .protocol.level import DEFAULT, IMPLEMENTED, Level





@click.group()
@click.version_option(package_name="kraftlog")
def main() -> None:
    """kraftlog: a Kafka-wire-compatible replicated log and its deterministic simulator."""


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
def scenario_run(file: str, level: Level | None, seed: int | None, as_json: bool, wire: bool) -> None:
    """Run scenario FILE and print its timeline and verdict."""
    from .sim.runner import run_scenario
    from .sim.scenario import ScenarioError, load_scenario

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
    result = run_scenario(scn, level=level, seed=seed, wire=wire)
    verdict = result.verdict
    if as_json:
        click.echo(json.dumps(verdict, sort_keys=False))
    else:
        _print_readable(result)
    sys.exit(result.exit_code)


@scenario.command("library")
@click.argument("directory", type=click.Path(file_okay=False), default="scenarios")
@click.option("--level", callback=level_option, default=None, help="Protocol level for every file (default: each file's).")
@click.option("--seed", type=int, default=None, help="Seed for every file (default: each file's).")
def scenario_library(directory: str, level: Level | None, seed: int | None) -> None:
    """Run every scenario file in DIRECTORY (default ./scenarios) and print one row each.

    Exit 0 when every run passed, 1 when one failed, 2 when a file is invalid."""
    from pathlib import Path

    from .sim.runner import run_scenario
    from .sim.scenario import ScenarioError, load_scenario

    files = sorted(Path(directory).glob("*.yaml"))
    if not files:
        click.echo(f"error: no *.yaml scenario files in {directory}", err=True)
        sys.exit(2)
    table = Table(title=f"scenario library: {directory}")
    for col in ("scenario", "level", "seed", "acked all/1/0", "lost acked", "violations", "anomalies", "result"):
        table.add_column(col)
    code = 0
    for f in files:
        try:
            scn = load_scenario(str(f))
        except ScenarioError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        r = run_scenario(scn, level=level, seed=seed)
        v = r.verdict
        code = max(code, r.exit_code)
        table.add_row(v["scenario"], v["level"], str(v["seed"]), "/".join(str(n) for n in v["acked"].values()),
                      str(v["lost_acked"]), str(len(v["invariant_violations"])),
                      str(sum(v["anomalies"].values())), "PASS" if r.exit_code == 0 else "FAIL")
    Console().print(table)
    sys.exit(code)


def _print_readable(result) -> None:
    console = Console(highlight=False)
    v = result.verdict
    console.print(f"[bold]{v['scenario']}[/bold]  level {v['level']}  seed {v['seed']}")
    for line in result.timeline:
        console.print(line, markup=False, soft_wrap=True)
    table = Table(title="verdict", show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
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
    # Text, not markup: a violation ends in "[in step 3 (crash)]", which rich would take for a tag.
    table.add_row("invariant violations", Text("\n".join(v["invariant_violations"]) or "none"))
    table.add_row("failed expectations", Text("\n".join(v["failed_expectations"]) or "none"))
    for name, p in v["final"]["partitions"].items():
        table.add_row(f"final {name}", f"leader {p['leader']} (epoch {p['leader_epoch']}), ISR {p['isr']}, "
                                       f"HWM {p['hwm']}, LEO {p['leo']}")
    table.add_row("history digest", v["history_digest"])
    console.print(table)
    console.print("[green]PASS[/green]" if result.exit_code == 0 else "[red]FAIL[/red]")


from .spark.cli import campaign  # noqa: E402  (the command lives with the Spark job)

main.add_command(campaign)

from .net.cli import cluster, elect, topics  # noqa: E402  (the real cluster's commands)

main.add_command(cluster)
main.add_command(topics)
main.add_command(elect)


if __name__ == "__main__":  # pragma: no cover
    main()
