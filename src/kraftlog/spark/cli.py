"""``kraftlog campaign``: the fault campaign on Spark (issue #5).

``kraftlog campaign [--seeds N] [--levels L1,L2,...] [--master URL] [--out DIR] [--seed-offset K]
[--scenarios DIR]`` runs N generated failure stories (seeds K..K+N-1) at every level, plus the
scenario library at every level, over Spark executors, and writes ``results.parquet``,
``summary.json``, ``report.html`` and ``failures/*.yaml`` into DIR. A progress bar runs on stderr
while Spark works; a table is printed on stdout at the end, and, when both ``elr`` and ``urm`` ran,
a second one comparing them on the same seeds.

Exit codes: 0 when the campaign ran (its findings, failing runs included, are in DIR), 1 when Spark
could not run it (e.g. no Java 17), 2 for a bad option (an unknown or unimplemented level...).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..protocol.level import IMPLEMENTED, Level
from .campaign import COMPARISONS, DEFAULT_MASTER, DEFAULT_SEEDS, comparison_key

__all__ = ["campaign"]


def _levels(ctx, param, value) -> list[str]:
    if value is None:
        return [level.label for level in IMPLEMENTED]
    out: list[str] = []
    for item in value.split(","):
        if not item.strip():
            continue
        try:
            label = Level.parse(item).label
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        if label not in out:
            out.append(label)
    if not out:
        raise click.BadParameter("give at least one level")
    rank = {level.label: i for i, level in enumerate(Level)}
    return sorted(out, key=rank.__getitem__)


def _default_scenarios() -> Path | None:
    """``./scenarios`` when present, else the repository's ``scenarios/`` next to an editable install."""
    here = Path("scenarios")
    if here.is_dir():
        return here
    repo = Path(__file__).resolve().parents[3] / "scenarios"
    return repo if repo.is_dir() else None


@click.command("campaign")
@click.option("--seeds", type=click.IntRange(min=0), default=DEFAULT_SEEDS, show_default=True,
              help="Number of generated failure stories (seeds).")
@click.option("--levels", callback=_levels, default=None, metavar="L1,L2,...",
              help=f"Protocol levels to compare (default: every implemented level: "
                   f"{','.join(level.label for level in IMPLEMENTED)}).")
@click.option("--master", default=DEFAULT_MASTER, show_default=True,
              help="Spark master URL: local[N], spark://host:7077, yarn, k8s://...")
@click.option("--out", type=click.Path(file_okay=False), default="campaign-out", show_default=True,
              help="Output directory.")
@click.option("--seed-offset", type=int, default=0, show_default=True, help="First seed (seeds K..K+N-1).")
@click.option("--scenarios", "scenario_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Scenario library run at every level (default: ./scenarios when present).")
@click.option("--no-library", is_flag=True, help="Do not run the scenario library.")
def campaign(seeds: int, levels: list[str], master: str, out: str, seed_offset: int,
             scenario_dir: str | None, no_library: bool) -> None:
    """Run generated fault stories and the scenario library at every level on Spark; write
    results.parquet, summary.json, report.html and failures/*.yaml into --out."""
    from rich.console import Console

    from .campaign import run_campaign

    library = None if no_library else (Path(scenario_dir) if scenario_dir else _default_scenarios())
    err = Console(stderr=True, highlight=False)
    try:
        result = run_campaign(levels, seeds=seeds, master=master, out=out, seed_offset=seed_offset,
                              scenario_dir=library, console=err, show_progress=True)
    except RuntimeError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    for warning in result.warnings:
        err.print(f"warning: {warning}", markup=False)
    print_summary(result, levels, library)
    sys.exit(0)


def _seeds_text(seeds: list[int], limit: int = 20) -> str:
    if not seeds:
        return ""
    text = ", ".join(str(seed) for seed in seeds[:limit])
    return f" ({text}{f', … +{len(seeds) - limit} more' if len(seeds) > limit else ''})"


def print_comparison(console, c: dict) -> None:
    """A level against its baseline on the same seeds (``campaign.compare_levels``'s dict): a small
    table per level, then the seeds where the level lost fewer / more / within the fault budget."""
    from rich import box
    from rich.table import Table

    level, baseline = c["level"], c["baseline"]
    table = Table(title=f"{level} vs {baseline} on the same {c['seeds_compared']} seeds", box=box.SIMPLE_HEAD)
    table.add_column("level", justify="left", no_wrap=True, min_width=7)
    for col in ("with loss", "loss within budget", "lost acked", "lost acked within budget",
                "leaderless at end", "mean unavailable"):
        table.add_column(col, justify="right")
    for lv in (baseline, level):
        f = c["by_level"][lv]
        table.add_row(lv, str(f["seeds_with_loss"]), str(f["seeds_with_loss_within_budget"]),
                      str(f["lost_acked_total"]), str(f["lost_acked_within_budget"]),
                      str(f["seeds_leaderless_at_end"]), f"{f['mean_unavailable_ms'] / 1000:.2f} s")
    console.print(table)
    fewer, more = c[f"seeds_{level}_lost_fewer"], c[f"seeds_{level}_lost_more"]
    within = c[f"seeds_{level}_loss_within_budget"]
    totals = c["by_level"]
    console.print(f"{level} lost fewer acked records than {baseline} on {len(fewer)} seed(s){_seeds_text(fewer)}, "
                  f"more on {len(more)}{_seeds_text(more)}; within the fault budget {level} lost records on "
                  f"{len(within)} seed(s){_seeds_text(within)}; in total {level} {totals[level]['lost_acked_total']}, "
                  f"{baseline} {totals[baseline]['lost_acked_total']} "
                  f"({'fewer' if c[f'{level}_lost_fewer_in_total'] else 'NOT fewer'})")
    if c["seeds_with_error"]:
        console.print(f"left out of the comparison (a run raised): {len(c['seeds_with_error'])} seed(s)"
                      f"{_seeds_text(c['seeds_with_error'])}")


def print_summary(result, levels: list[str], library) -> None:
    """The end-of-campaign table on stdout."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    s = result.summary
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    table = Table(title=f"kraftlog campaign: {s['seed_range'][1] - s['seed_range'][0] + 1 if s['seed_range'] else 0}"
                        f" seeds × {len(levels)} level(s) on {s['master']}", box=box.SIMPLE_HEAD)
    for col in ("level", "seeds", "with loss", "loss within budget", "lost acked", "p_loss",
                "mean unavailable", "failing seeds", "library failing"):
        if col == "level":
            table.add_column(col, justify="left", no_wrap=True, min_width=7)
        else:
            table.add_column(col, justify="right")
    for level in levels:
        lv = s["levels"][level]
        fails = sum(1 for r in result.rows if r["kind"] == "seed" and r["level"] == level and r["failure"])
        lib = s["scenario_library"].get(level)
        table.add_row(level, str(lv["seeds"]), str(lv["seeds_with_loss"]), str(lv["seeds_with_loss_within_budget"]),
                      str(lv["lost_acked_total"]), f"{lv['p_loss']:.3f}", f"{lv['mean_unavailable_ms'] / 1000:.2f} s",
                      str(fails), f"{len(lib['failures'])}/{lib['runs']}" if lib else "-")
    console.print(table)
    for level, baseline in COMPARISONS:
        comparison = s.get(comparison_key(level, baseline))
        if comparison is not None:
            print_comparison(console, comparison)
    replay = s.get("timeline_replay")
    console.print(f"sim_speedup {s['sim_speedup']}x per executor core "
                  f"({s['sim_time_ms_total'] / 1000:,.0f} simulated s in {s['executor_wall_ms_total'] / 1000:,.1f} "
                  f"executor s); {s['runs']} runs in {s['wall_s']:.1f} s wall on {s['executor_cores']} cores")
    if replay:
        console.print(f"replayed {replay['file']} on the driver: digest "
                      f"{'matches' if replay['digest_matches'] else 'DIFFERS'}, lost acked {replay['lost_acked']}")
    if library is None:
        console.print("scenario library: not run")
    console.print(f"{s['failures']} failing run(s) exported to {result.out / 'failures'}; "
                  f"report: {result.out / 'report.html'}")
