"""``kraftlog campaign``: the fault campaign on Spark (issue #5; interruption, resume, errors and
output outside a terminal: issue 12).

``kraftlog campaign [--seeds N] [--levels L1,L2,...] [--master URL] [--out DIR] [--seed-offset K]
[--scenarios DIR | --no-library] [--resume] [--fail-on-loss]`` runs N generated failure stories (seeds
K..K+N-1) at every level, plus the scenario library at every level, over Spark executors, and writes
``results.parquet/`` (parts appended as runs finish), ``campaign.json``, ``summary.json``, ``report.html``
and ``failures/*.yaml`` into DIR. Progress goes to stderr: rich's live bar in a terminal, otherwise a
line every few seconds. A table is printed on stdout at the end (160 columns wide outside a terminal),
and, when both ``elr`` and ``urm`` ran, a second one comparing them on the same seeds.

Exit codes (also in ``--help``): 0 the campaign completed; 1 with ``--fail-on-loss``, a run within the
fault budget at level elr or above, without unclean election enabled, is not safe; 2 bad input or the
campaign could not run (an unknown level, an unwritable --out, no Java, an unreachable master, no
executor within --executor-wait, a failed Spark job, --resume options that do not contain the
interrupted campaign's), in one line; 130 interrupted by Ctrl-C (143 by SIGTERM), the finished runs
kept in DIR for ``--resume``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.core import ParameterSource

from ..campaign import DEFAULT_SEEDS, CampaignError, level_comparisons, read_manifest
from ..level import IMPLEMENTED, Level
from .campaign import DEFAULT_MASTER

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


_EXIT_CODES = """\b
Exit codes:
  0    the campaign completed (failing runs included: they are its findings)
  1    with --fail-on-loss: a run within the fault budget at level elr or
       above, without unclean election enabled, is not safe (acknowledged
       records lost, an invariant violated or a truncation undetected; a run
       that raised counts as not safe)
  2    bad input, or the campaign could not run: an unknown level, an
       unwritable --out, no Java, an unreachable master, no executor
       within --executor-wait, Spark failing, or --resume options that do
       not contain the interrupted campaign's
  130  interrupted (Ctrl-C; 143 for SIGTERM): the finished runs are kept in
       --out, summary.json says "interrupted": true; --resume runs the rest"""


# -h here too: the group's help_option_names do not reach the command when it is invoked on its own.
@click.command("campaign", epilog=_EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--seeds", type=click.IntRange(min=0), default=DEFAULT_SEEDS, show_default=True,
              help="Number of generated failure stories (seeds).")
@click.option("--levels", callback=_levels, default=None, metavar="L1,L2,...",
              help=f"Protocol levels to compare (default: every implemented level: "
                   f"{','.join(level.label for level in IMPLEMENTED)}).")
@click.option("--master", default=DEFAULT_MASTER, show_default=True,
              help="Spark master URL: local[N], spark://host:7077, yarn, k8s://... (a spark:// or k8s:// "
                   "master must accept a TCP connection within 3 s).")
@click.option("--out", type=click.Path(file_okay=False), default="campaign-out", show_default=True,
              help="Output directory.")
@click.option("--seed-offset", type=int, default=0, show_default=True, help="First seed (seeds K..K+N-1).")
@click.option("--scenarios", "scenario_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Scenario library run at every level (default: ./scenarios when present).")
@click.option("--no-library", is_flag=True, help="Do not run the scenario library.")
@click.option("--executor-wait", "executor_wait", type=click.FloatRange(min=1), default=120, show_default=True,
              metavar="SECONDS",
              help="On a cluster master: give up (exit 2) when no executor has registered after this long "
                   "(workers without the free memory or cores an executor asks for), or when the running "
                   "jobs have had none for this long.")
@click.option("--resume", is_flag=True,
              help="Finish the campaign in --out: run only the runs missing from its results, then write "
                   "every output. Options not given are the campaign's; given ones must contain its "
                   "seeds, levels and library.")
@click.option("--fail-on-loss", is_flag=True,
              help="Exit 1 when a run within the fault budget at level elr or above is not safe (the "
                   "check for a CI job). Runs that enable unclean election (unclean.leader.election.enable, "
                   "strategy Aggressive at urm, an unclean, aggressive or designated ElectLeaders) are left "
                   "out: KIP-966 makes no promise for them.")
@click.pass_context
def campaign(ctx: click.Context, seeds: int, levels: list[str], master: str, out: str, seed_offset: int,
             scenario_dir: str | None, no_library: bool, executor_wait: float, resume: bool,
             fail_on_loss: bool) -> None:
    """Run generated fault stories and the scenario library at every level on Spark; write
    results.parquet, summary.json, report.html and failures/*.yaml into --out, as the runs finish."""
    from rich.console import Console

    from . import campaign as campaign_module

    err = Console(stderr=True, highlight=False)
    if no_library and scenario_dir:
        raise click.UsageError("--scenarios and --no-library contradict each other")

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)

    library: Path | None
    try:
        if resume:
            manifest = read_manifest(out)
            if not given("seeds"):
                seeds = int(manifest["seeds"])
            if not given("seed_offset"):
                seed_offset = int(manifest["seed_offset"])
            if not given("levels"):
                levels = _levels(ctx, None, ",".join(manifest["levels"]))
            if not given("master") and manifest.get("master"):
                master = manifest["master"]
        if no_library:
            library = None
        elif scenario_dir:
            library = Path(scenario_dir)
        elif resume:
            library = Path(manifest["scenario_dir"]) if manifest["scenario_dir"] else None
            if library is not None and not library.is_dir():
                raise CampaignError(
                    f"--resume: the campaign's scenario library {library} is not there any more; give it "
                    f"with --scenarios DIR")
        else:
            library = _default_scenarios()
        result = campaign_module.run_campaign(
            levels, seeds=seeds, master=master, out=out, seed_offset=seed_offset, scenario_dir=library,
            console=err, show_progress=True, resume=resume, progress="auto", executor_wait_s=executor_wait)
    except CampaignError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo(f"interrupted: the runs finished so far are in {out}; `kraftlog campaign --resume --out {out}` "
                   f"runs the rest", err=True)
        sys.exit(130)
    for warning in result.warnings:
        err.print(f"warning: {warning}", markup=False, soft_wrap=True)
    if result.interrupted or result.signal is not None:
        s = result.summary
        code = 128 + (result.signal or 2)
        if result.interrupted:
            click.echo(f"interrupted: {s['runs']} of {s['runs_expected']} runs finished, kept in {out} "
                       f"(summary.json: \"interrupted\": true); `kraftlog campaign --resume --out {out}` runs "
                       f"the other {s['runs_expected'] - s['runs']}", err=True)
        else:
            click.echo(f"interrupted after the last run: every run is in {out}, the report was not written; "
                       f"`kraftlog campaign --resume --out {out}` writes it", err=True)
        sys.exit(code)
    print_summary(result, levels, library)
    sys.exit(1 if fail_on_loss and result.summary.get("unsafe_within_budget") else 0)


def _seeds_text(seeds: list[int], limit: int = 20) -> str:
    if not seeds:
        return ""
    text = ", ".join(str(seed) for seed in seeds[:limit])
    return f" ({text}{f', … +{len(seeds) - limit} more' if len(seeds) > limit else ''})"


def _table(title: str, headers: list[str]):
    """A rich Table that fits 80 columns: headers broken over lines (``\n``), cells never wrapped,
    one space between columns. ``headers[0]`` is the left-aligned level column; the others are numbers."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, show_edge=False)
    table.add_column(headers[0], justify="left", no_wrap=True, min_width=7)
    for header in headers[1:]:
        table.add_column(header, justify="right", no_wrap=True)
    return table


def print_comparison(console, c: dict) -> None:
    """A level against its baseline on the same seeds (``campaign.compare_levels``'s dict): a small
    table per level, then the seeds where the level lost fewer / more / within the fault budget."""
    level, baseline = c["level"], c["baseline"]
    table = _table(f"{level} vs {baseline} on the same {c['seeds_compared']} seeds",
                   ["level", "with\nloss", "loss\nwithin\nbudget", "lost\nacked", "lost acked\nwithin\nbudget",
                    "leaderless\nat end", "mean\nunavailable"])
    for lv in (baseline, level):
        f = c["by_level"][lv]
        table.add_row(lv, str(f["seeds_with_loss"]), str(f["seeds_with_loss_within_budget"]),
                      str(f["lost_acked_total"]), str(f["lost_acked_within_budget"]),
                      str(f["seeds_leaderless_at_end"]), f"{f['mean_unavailable_ms'] / 1000:.2f} s")
    console.print()
    console.print(table)
    console.print()
    fewer, more = c[f"seeds_{level}_lost_fewer"], c[f"seeds_{level}_lost_more"]
    within = c[f"seeds_{level}_loss_within_budget"]
    totals = c["by_level"]
    console.print(f"{level} lost fewer acked records than {baseline} on {len(fewer)} seed(s){_seeds_text(fewer)}, "
                  f"more on {len(more)}{_seeds_text(more)}; within the fault budget {level} lost records on "
                  f"{len(within)} seed(s){_seeds_text(within)}; in total {level} {totals[level]['lost_acked_total']}, "
                  f"{baseline} {totals[baseline]['lost_acked_total']} "
                  f"({'fewer' if c[f'{level}_lost_fewer_in_total'] else 'NOT fewer'})", soft_wrap=True)
    if c["seeds_with_error"]:
        console.print(f"left out of the comparison (a run raised): {len(c['seeds_with_error'])} seed(s)"
                      f"{_seeds_text(c['seeds_with_error'])}", soft_wrap=True)


def _stdout_console():
    """A rich Console for stdout; outside a terminal (a pipe, a CI log) 160 columns instead of rich's 80,
    so that the tables keep their headers whole."""
    from rich.console import Console

    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=160)


def print_summary(result, levels: list[str], library) -> None:
    """The end-of-campaign table on stdout, in the scenario commands' words: a run is *safe* when it lost
    no acknowledged record, violated no invariant and left no truncation undetected (else UNSAFE); a
    library run's expectations *held* or FAILED. Then the --fail-on-loss check, the comparisons, timing."""
    s = result.summary
    console = _stdout_console()
    seeds = s["seed_range"][1] - s["seed_range"][0] + 1 if s["seed_range"] else 0
    table = _table(f"kraftlog campaign: {seeds} seeds × {len(levels)} level(s) on {s['master']}",
                   ["level", "seeds", "UNSAFE", "UNSAFE\nwithin\nbudget", "with\nloss", "lost\nacked",
                    "mean\nunavailable", "library\nexpectations\nheld", "library\nsafe"])
    for level in levels:
        lv = s["levels"][level]
        lib = s["scenario_library"].get(level)
        if lib:
            held = lib["runs"] - len(lib.get("expectations_failed", lib["failures"]))
            safe = lib["runs"] - len(lib.get("unsafe", []))
            held_text, safe_text = f"{held}/{lib['runs']}", f"{safe}/{lib['runs']}"
        else:
            held_text = safe_text = "-"
        table.add_row(level, str(lv["seeds"]), str(lv.get("seeds_unsafe", "-")),
                      str(lv.get("seeds_unsafe_within_budget", "-")), str(lv["seeds_with_loss"]),
                      str(lv["lost_acked_total"]), f"{lv['mean_unavailable_ms'] / 1000:.2f} s",
                      held_text, safe_text)
    console.print(table)
    console.print()
    gate = s.get("unsafe_within_budget")
    if gate is not None:
        if gate:
            console.print(f"UNSAFE within the fault budget at elr and above (unclean election not enabled): "
                          f"{len(gate)} run(s): "
                          f"{', '.join(gate[:20])}{f', … +{len(gate) - 20} more' if len(gate) > 20 else ''} "
                          f"(--fail-on-loss exits 1)", soft_wrap=True)
        else:
            console.print("safe: every run within the fault budget at elr and above (unclean election not "
                          "enabled) lost nothing acknowledged, broke no invariant, left no truncation undetected, "
                          "rolled back no group's commit and skipped nothing for a group "
                          "(the --fail-on-loss check)", soft_wrap=True)
    console.print("consumer groups, per level: commits rolled back / records skipped (seeds with either within "
                  "the fault budget): " + ", ".join(
                      f"{level} {s['levels'][level].get('committed_offset_regressions_total', 0)} / "
                      f"{s['levels'][level].get('skipped_by_group_total', 0)} "
                      f"({s['levels'][level].get('seeds_with_group_anomalies_within_budget', 0)})" for level in levels),
                  soft_wrap=True)
    for comparison in level_comparisons(s):
        print_comparison(console, comparison)
    replay = s.get("timeline_replay")
    resumed = s.get("resumed_runs") or 0
    console.print(f"sim_speedup {s['sim_speedup']}x per executor core "
                  f"({s['sim_time_ms_total'] / 1000:,.0f} simulated s in {s['executor_wall_ms_total'] / 1000:,.1f} "
                  f"executor s); {s['runs']} runs"
                  f"{f' ({resumed} from before --resume)' if resumed else ''} in {s['wall_s']:.1f} s wall"
                  f"{f' on {cores} cores' if (cores := s.get('executor_cores')) else ''}", soft_wrap=True)
    if replay:
        console.print(f"replayed {replay['file']} on the driver: digest "
                      f"{'matches' if replay['digest_matches'] else 'DIFFERS'}, lost acked {replay['lost_acked']}",
                      soft_wrap=True)
    if library is None:
        console.print("scenario library: not run")
    console.print(f"{s['failures']} failing run(s) exported to {result.out / 'failures'}; "
                  f"report: {result.out / 'report.html'}", soft_wrap=True)
