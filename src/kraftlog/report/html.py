"""``report.html`` of a campaign: one self-contained page (PNG plots embedded as base64 data URIs).

Sections: the run (master, cores, seeds, levels, speed), the per-level summary table, each level
compared with its baseline on the same seeds (``urm`` against ``elr`` when both ran: the summary's
``urm_vs_elr``), loss probability per level by data-losing shutdowns, the unavailability distribution
per level, the timeline of one failing seed (the campaign replays it on the driver from its exported
file, checks its digest, and hands it in as a :class:`FailingRun`: the run's events — ``RunResult.events``,
the structured events the scenario runner records beside every timeline line — draw it, while the
timeline text is shown as it is), the failing runs with links to their ``failures/*.yaml``, the
scenario library per level, and every run in a collapsible table.

The report takes data only (results rows, the summary, the comparisons, the failing run): it runs no
simulation and imports no driver (``sim``, ``net``) and nothing of Spark.
The failing runs and all runs tables sort by a click on a column header and filter by a text box (and
"within the fault budget only"), with a few lines of inline JavaScript: the page needs no other file.

Verdict words are those of ``kraftlog scenario run`` / ``scenario library``: a run *passed* when its
expectations held; it is *safe* when it lost no acknowledged record, violated no invariant and left no
truncation undetected (:mod:`kraftlog.verdict`: :func:`~kraftlog.verdict.passed`, :func:`~kraftlog.verdict.is_safe`).
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

from ..verdict import is_safe, outcome_words, passed, within_budget
from . import plots

__all__ = ["FailingRun", "write_report"]


@dataclass(frozen=True)
class FailingRun:
    """The failing run whose timeline the report draws, replayed by the campaign from its exported file.

    ``row``: its results row. ``replay``: the replay check, ``{"file", "level", "seed", "history_digest",
    "digest_matches", "lost_acked", "lost_acked_matches"}`` (the replayed run's against the row's), None
    when the replay raised: then ``error`` says why. ``timeline``: the replayed run's readable lines;
    ``events``: its events as data (``RunResult.events``), which the plot draws; ``brokers``: the
    cluster's brokers; ``min_isr``: the story's fault budget + 1 (drawn on the ISR tracks)."""

    row: dict
    replay: dict | None = None
    timeline: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    brokers: int = 0
    min_isr: int = 1
    error: str | None = None

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
tr.fail td { background: #fff0f0; }
table.sortable th { cursor: pointer; } th[data-dir=asc]::after { content: " \\25B2"; }
th[data-dir=desc]::after { content: " \\25BC"; } .filter { margin: 0.5em 0; font-size: 0.9em; }
img { max-width: 100%; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.7em; font-size: 0.78em; overflow-x: auto; max-height: 32em; }
.muted { color: #666; font-size: 0.9em; } code { background: #f3f3f3; padding: 0 3px; }
"""


#: Click a header of a ``table.sortable`` to sort its rows (numerically when every non-empty cell of the
#: column is a number; a second click reverses); ``input[data-table]`` boxes filter a table's rows to those
#: with a cell containing the text and, checked, to ``tr[data-within="1"]`` (within the fault budget).
_JS = """
(function () {
  function text(cell) { return cell ? cell.textContent.trim() : ""; }
  function isNum(s) { return s !== "" && !isNaN(Number(s)); }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells, body = table.tBodies[0];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var rows = Array.prototype.slice.call(body.rows);
        var numeric = rows.every(function (r) { var v = text(r.cells[col]); return v === "" || isNum(v); });
        var dir = th.dataset.dir === "asc" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; });
        th.dataset.dir = dir === 1 ? "asc" : "desc";
        rows.sort(function (a, b) {
          var x = text(a.cells[col]), y = text(b.cells[col]);
          return dir * (numeric ? (isNum(x) ? Number(x) : -Infinity) - (isNum(y) ? Number(y) : -Infinity) || 0
                                : x.localeCompare(y, undefined, {numeric: true}));
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  function filter(id) {
    var table = document.getElementById(id);
    var box = document.querySelector('input[type=search][data-table="' + id + '"]');
    var budget = document.querySelector('input[type=checkbox][data-table="' + id + '"]');
    var want = box ? box.value.trim().toLowerCase() : "", shown = 0, rows = table.tBodies[0].rows;
    Array.prototype.forEach.call(rows, function (r) {
      var ok = (!want || Array.prototype.some.call(r.cells, function (c) {
        return c.textContent.toLowerCase().indexOf(want) >= 0; }))
        && (!budget || !budget.checked || r.dataset.within === "1");
      r.style.display = ok ? "" : "none";
      if (ok) { shown += 1; }
    });
    var count = document.querySelector('span[data-count="' + id + '"]');
    if (count) { count.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  document.querySelectorAll("input[data-table]").forEach(function (input) {
    input.addEventListener("input", function () { filter(input.dataset.table); });
    input.addEventListener("change", function () { filter(input.dataset.table); });
  });
})();
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _table(headers: list[str], rows: list[list], left: set[int] = frozenset(), row_class=None,
           table_id: str | None = None, within=None) -> str:
    """An HTML table; cells are HTML already. With ``table_id`` it is sortable and filterable (:data:`_JS`:
    a filter box, a "within the fault budget only" box when ``within(k)`` says which rows are, and a
    row count above it)."""
    out = []
    if table_id is None:
        out.append("<table><thead><tr>")
    else:
        out.append(f"<div class='filter'><input type='search' data-table='{table_id}' placeholder='filter rows' "
                   f"aria-label='filter rows'> ")
        if within is not None:
            out.append(f"<label><input type='checkbox' data-table='{table_id}'> within the fault budget only</label> ")
        out.append(f"<span class='muted' data-count='{table_id}'>{len(rows)} rows; click a header to sort</span></div>")
        out.append(f'<table class="sortable" id="{table_id}"><thead><tr>')
    out += [f'<th class="{"l" if i in left else ""}">{_e(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for k, row in enumerate(rows):
        cls = row_class(k) if row_class else ""
        budget = "" if within is None else f' data-within="{1 if within(k) else 0}"'
        out.append(f'<tr class="{cls}"{budget}>')
        for i, cell in enumerate(row):
            out.append(f'<td class="{"l" if i in left else ""}">{cell}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _verdict_words(row: dict) -> tuple[str, str]:
    """(expectations, safety) of a results row in ``kraftlog scenario library``'s words: held / FAILED,
    safe / UNSAFE (:func:`kraftlog.verdict.is_safe`); a run that raised has no verdict:
    FAILED, safety unknown."""
    if row["error"]:
        return "FAILED (raised)", "unknown"
    return ("held" if passed(row) else "FAILED"), ("safe" if is_safe(row) else "UNSAFE")


def _outcome(row: dict) -> str:
    """A results row's verdict in ``kraftlog scenario run``'s words (:func:`outcome_words`), plain text;
    a leader's HWM moving backwards (always a bug, no safety finding) is added."""
    if row["error"]:
        last = (str(row["error"]).strip().splitlines() or ["no message"])[-1]
        return f"FAILED: the run raised ({last[:120]}) — safety unknown"
    words = outcome_words({**row, "passed": passed(row)})
    n = row["leader_hwm_regressions"]
    if n:
        words += f"; {n} leader HWM regression{'s' if n != 1 else ''}"
    return words


def _seed_list(seeds: list[int], limit: int = 40) -> str:
    """Seeds as text: ``none``, or the first ``limit`` joined by commas (``… (+n more)``)."""
    if not seeds:
        return "none"
    text = ", ".join(str(s) for s in seeds[:limit])
    return text + (f" … (+{len(seeds) - limit} more)" if len(seeds) > limit else "")


def _comparison_section(rows: list[dict], c: dict) -> str:
    """One level against its baseline on the same seeds (``compare_levels``'s dict): a table per level,
    the seeds where the level lost fewer / more / within the budget, a scatter plot, and the seeds
    whose outcome differs, with their failure files."""
    level, baseline = c["level"], c["baseline"]
    parts = [f"<h2>{_e(level)} vs {_e(baseline)} on the same seeds</h2>"]
    errored = c["seeds_with_error"]
    left_out = f"; left out because a run raised: {_e(_seed_list(errored))}" if errored else ""
    parts.append(
        f"<p class='muted'>Each generated seed is the same story at both levels. {c['seeds_compared']} seeds "
        f"compared{left_out}. "
        "Records of a partition still leaderless at the end are not counted as lost, so a level that waits "
        "(KIP-966's Balanced and None strategies) shows its cost in the leaderless and unavailability "
        "columns.</p>")
    table_rows = []
    for lv in (baseline, level):
        f = c["by_level"][lv]
        table_rows.append([_e(lv), f["seeds_with_loss"], f"<b>{f['seeds_with_loss_within_budget']}</b>",
                           f["lost_acked_total"], f["lost_acked_within_budget"], f["seeds_leaderless_at_end"],
                           f"{f['mean_unavailable_ms'] / 1000:.2f}", f["failing_seeds"]])
    parts.append(_table(["level", "seeds with loss", "with loss within budget", "lost acked total",
                         "lost acked within budget", "seeds leaderless at end", "mean unavailable (s)",
                         "failing seeds"], table_rows, left={0}))
    fewer, more = c[f"seeds_{level}_lost_fewer"], c[f"seeds_{level}_lost_more"]
    within = c[f"seeds_{level}_loss_within_budget"]
    leaderless = c[f"seeds_{level}_leaderless_not_{baseline}"]
    total_fewer = c[f"{level}_lost_fewer_in_total"]
    parts.append(
        "<ul>"
        f"<li>{_e(level)} lost fewer acknowledged records than {_e(baseline)} on <b>{len(fewer)}</b> seed(s): "
        f"{_e(_seed_list(fewer))}</li>"
        f"<li>{_e(level)} lost more than {_e(baseline)} on <b>{len(more)}</b> seed(s): {_e(_seed_list(more))}</li>"
        f"<li>both lost the same number on {len(c['seeds_both_lost_same'])} seed(s): "
        f"{_e(_seed_list(c['seeds_both_lost_same']))}</li>"
        f"<li>{_e(level)} lost records within the fault budget on <b>{len(within)}</b> seed(s): "
        f"{_e(_seed_list(within))}</li>"
        f"<li>{_e(level)} ended with a leaderless partition where {_e(baseline)} did not on {len(leaderless)} "
        f"seed(s): {_e(_seed_list(leaderless))}</li>"
        f"<li>in total {_e(level)} lost {c['by_level'][level]['lost_acked_total']} acknowledged records, "
        f"{_e(baseline)} {c['by_level'][baseline]['lost_acked_total']}: "
        f"{'<b>fewer</b>' if total_fewer else '<b>not fewer</b>'}</li></ul>")
    if c["seeds_compared"]:
        parts.append(_img(plots.loss_against_baseline(rows, level, baseline), f"{level} vs {baseline}"))
    differing = c["differing_seeds"]
    if differing:
        def link(path):
            return f"<a href='{_e(path)}'>{_e(path)}</a>" if path else ""

        parts.append(f"<details><summary>the {len(differing)} seed(s) whose loss or leaderless partitions "
                     "differ</summary>")
        parts.append(_table(
            ["seed", "data-losing shutdowns", "within budget", f"lost acked at {baseline}", f"lost acked at {level}",
             f"leaderless at end at {baseline}", f"leaderless at end at {level}", f"{baseline} file", f"{level} file",
             "schedule"],
            [[d["seed"], d["data_losing_shutdowns"], "yes" if within_budget(d) else "no",
              d["lost_acked"][baseline], d["lost_acked"][level], d["leaderless_at_end"][baseline],
              d["leaderless_at_end"][level], link(d["failure_files"][baseline]), link(d["failure_files"][level]),
              _e(d["schedule"])] for d in differing],
            left={7, 8, 9},
            row_class=lambda k: "fail" if differing[k]["lost_acked"][level] > differing[k]["lost_acked"][baseline]
            else ""))
        parts.append("</details>")
    return "".join(parts)


def write_report(out, rows: list[dict], summary: dict, levels: list[str], failing: FailingRun | None = None,
                 comparisons: list[dict] = ()) -> None:
    """Write ``out/report.html`` from the campaign's results ``rows`` (plain dicts), its ``summary``
    (summary.json's dict), the ``levels`` it ran, ``failing`` (the failing run to draw, replayed by the
    campaign; None when nothing failed) and ``comparisons`` (``compare_levels``' dicts, one section each)."""
    out = Path(out)
    seeds = [r for r in rows if r["kind"] == "seed"]
    budgets = {r["fault_budget"] for r in seeds}
    budget = budgets.pop() if len(budgets) == 1 else None
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>kraftlog campaign</title>"
             f"<style>{_CSS}</style></head><body>"]
    parts.append("<h1>kraftlog fault campaign</h1>")
    seed_range = summary.get("seed_range") or []
    parts.append(
        f"<p>{len(seeds) // max(len(levels), 1)} generated seeds"
        f"{f' ({seed_range[0]}..{seed_range[1]})' if seed_range else ''} × levels {_e(', '.join(levels))}, "
        f"plus the scenario library at every level: {len(rows)} runs on <code>{_e(summary.get('master'))}</code> "
        f"({_e(summary.get('executor_cores'))} executor cores, {_e(summary.get('spark_tasks'))} Spark tasks). "
        f"Simulated {summary.get('sim_time_ms_total', 0) / 1000:,.0f} s in "
        f"{summary.get('executor_wall_ms_total', 0) / 1000:,.1f} s of executor time: "
        f"<b>sim_speedup {summary.get('sim_speedup')}</b> per executor core; "
        f"job wall time {summary.get('job_wall_ms', 0) / 1000:,.1f} s "
        f"(campaign speedup {summary.get('campaign_speedup')}).</p>")
    parts.append(
        "<p class='muted'>A data-losing shutdown is an unclean shutdown (a crash, whatever it lost) of one of a "
        "partition's replicas, or a corruption of a replica's log (bytes flipped on a stopped broker's disk: "
        "its load drops the damaged batch and everything after it); a full disk is none. A story is within "
        "the fault budget when no partition saw more than min ISR − 1 of them (KIP-966's promise). "
        "A failure is a run that lost acknowledged acks=all records, "
        "violated an invariant, moved a leader's HWM backwards, left a truncation undetected, failed an "
        "expectation or raised. HWM regressions seen by consumers are no failure: a Kafka consumer can see a "
        "lagging HWM after a leader change. As <code>kraftlog scenario run</code> and <code>scenario library</code> "
        "say it, a run <i>passed</i> (expectations held) when every expect and wait_until held, and it is "
        "<i>safe</i> when it lost no acknowledged record, violated no invariant and left no truncation "
        "undetected: the two are separate questions.</p>")

    # Summary table
    parts.append("<h2>Summary per level (generated seeds)</h2>")
    table_rows = []
    for level in levels:
        s = summary["levels"].get(level, {})
        fails = sum(1 for r in seeds if r["level"] == level and r["failure"])
        table_rows.append([_e(level), s.get("seeds", 0), s.get("seeds_with_loss", 0),
                           f"<b>{s.get('seeds_with_loss_within_budget', 0)}</b>", s.get("lost_acked_total", 0),
                           f"{s.get('p_loss', 0):.3f}", f"{s.get('mean_unavailable_ms', 0) / 1000:.2f}",
                           s.get("committed_offset_regressions_total", 0), s.get("skipped_by_group_total", 0),
                           f"<b>{s.get('seeds_with_group_anomalies_within_budget', 0)}</b>", fails])
    parts.append(_table(["level", "seeds", "seeds with loss", "with loss within budget", "lost acked total",
                         "p_loss", "mean unavailable (s)", "group commit regressions", "records skipped by groups",
                         "seeds with group anomalies within budget", "failing seeds"], table_rows, left={0}))

    # Level against baseline on the same seeds (urm vs elr)
    for comparison in comparisons:
        parts.append(_comparison_section(rows, comparison))

    # Plots
    if seeds:
        parts.append("<h2>Loss probability by data-losing shutdowns</h2>")
        parts.append(_img(plots.loss_by_shutdowns(rows, levels, budget), "loss probability per level"))
        parts.append("<h2>Unavailability per level</h2>")
        parts.append(_img(plots.unavailability(rows, levels), "unavailability distribution per level"))

    # One failing seed's timeline
    parts.append("<h2>Timeline of one failing run</h2>")
    if failing is None:
        parts.append("<p>No run failed.</p>")
    elif failing.replay is None:
        parts.append(f"<p>Replaying {_e(failing.row['failure_file'])} failed: <code>{_e(failing.error)}</code></p>")
    else:
        chosen, replay = failing.row, failing.replay
        title = (f"{chosen['scenario']} at level {chosen['level']}: lost {chosen['lost_acked']} acked records, "
                 f"{chosen['data_losing_shutdowns']} data-losing shutdown(s), "
                 f"{'within' if within_budget(chosen) else 'beyond'} the budget")
        parts.append(f"<p><a href='{_e(chosen['failure_file'])}'>{_e(chosen['failure_file'])}</a> "
                     f"replayed on the driver: digest <code>{_e(replay['history_digest'])}</code> "
                     f"{'matches' if replay['digest_matches'] else '<b>DIFFERS from</b>'} the executor's"
                     f"{'' if replay['digest_matches'] else ' (was the code changed during the run?)'}; "
                     f"lost acked {replay['lost_acked']} "
                     f"({'same' if replay['lost_acked_matches'] else '<b>different</b>'}).</p>")
        parts.append(_img(plots.timeline(failing.events, failing.brokers, title, failing.min_isr), "timeline"))
        parts.append(f"<p class='muted'>Schedule: {_e(chosen['schedule'])}</p>")
        parts.append("<details><summary>timeline text</summary><pre>"
                     + _e("\n".join(failing.timeline)) + "</pre></details>")

    # Failures
    failing = [r for r in rows if r["failure"]]
    parts.append(f"<h2>Failing runs ({len(failing)})</h2>")
    if failing:
        parts.append("<p class='muted'>Replay one with <code>kraftlog scenario run FILE</code> "
                     "(the file carries the level and the seed).</p>")
        parts.append(_table(
            ["level", "seed / scenario", "expectations", "safety", "data-losing shutdowns", "within budget",
             "lost acked", "violations", "leader HWM regressions", "undetected truncations",
             "group commit regressions / skipped", "failed expectations", "file"],
            [[_e(r["level"]), _e(r["seed"] if r["kind"] == "seed" else r["scenario"]), *map(_e, _verdict_words(r)),
              r["data_losing_shutdowns"], "yes" if within_budget(r) else "no", r["lost_acked"],
              r["invariant_violations"], r["leader_hwm_regressions"], r["undetected_truncations"],
              f"{r.get('committed_offset_regressions') or 0} / {r.get('skipped_by_group') or 0}",
              r["failed_expectations"] + (1 if r["error"] else 0),
              f"<a href='{_e(r['failure_file'])}'>{_e(r['failure_file'])}</a>"] for r in failing],
            left={0, 1, 2, 3, 12}, table_id="failing", within=lambda k: within_budget(failing[k])))

    # Library
    library = [r for r in rows if r["kind"] == "scenario"]
    if library:
        parts.append("<h2>Scenario library</h2>")
        names = sorted({r["scenario"] for r in library})
        by = {(r["scenario"], r["level"]): r for r in library}
        cells = []
        for name in names:
            row = [_e(name)]
            for level in levels:
                r = by.get((name, level))
                if r is None:
                    row.append("")
                elif r["failure"]:
                    row.append(f"<b>{_e(_outcome(r))}</b>")
                else:
                    row.append(_e(_outcome(r)))
            cells.append(row)
        parts.append(_table(["scenario", *levels], cells, left=set(range(len(levels) + 1))))

    # Every run
    cols = ["level", "kind", "seed", "scenario", "brokers", "partitions", "data_losing_shutdowns", "within_budget",
            "acked_all", "acked_1", "lost_acked", "hwm_regressions", "leader_hwm_regressions", "detected_truncations",
            "undetected_truncations", "committed_offset_regressions", "skipped_by_group", "invariant_violations",
            "leaderless_at_end", "unavailable_ms", "sim_time_ms", "wall_ms", "schedule"]
    parts.append(f"<h2>All runs ({len(rows)})</h2><details><summary>show the table</summary>")
    parts.append(_table(
        [*cols[:4], "expectations", "safety", *cols[4:]],
        [[*(_e(r[c]) for c in cols[:4]), *map(_e, _verdict_words(r)),
          *(_e(f"{r[c]:.0f}" if c == "wall_ms" else r[c]) for c in cols[4:])] for r in rows],
        left={0, 1, 3, 4, 5, len(cols) + 1},
        row_class=lambda k: "fail" if rows[k]["failure"] else "", table_id="runs",
        within=lambda k: within_budget(rows[k])))
    parts.append(f"</details><script>{_JS}</script></body></html>\n")
    (out / "report.html").write_text("".join(parts), encoding="utf-8")
