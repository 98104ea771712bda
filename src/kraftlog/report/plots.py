"""The campaign's plots, as PNG bytes (matplotlib's object API on the Agg canvas: no pyplot state,
no display needed).

* :func:`loss_by_shutdowns` — probability that a story loses acknowledged acks=all records, per
  level, by number of data-losing shutdowns (grouped bars; the fault budget shaded);
* :func:`unavailability` — the distribution of unavailable time (partition-seconds without a live
  leader) per level, as empirical CDFs;
* :func:`loss_against_baseline` — acknowledged records lost per seed at one level against another on
  the same seeds (e.g. ``urm`` against ``elr``), one point per seed;
* :func:`timeline` — one run drawn from its events: broker lanes (up, down by crash or clean
  shutdown, fenced), network faults, and per partition the ISR size with each leader
  (:func:`timeline_tracks` gives what it draws).

Inputs are plain rows (dicts with the ``results.parquet`` columns) and a run's events: the structured
events the scenario runner records beside every timeline line (``RunResult.events``,
:data:`kraftlog.scenario.result.EVENT_KINDS`), so that rewording the readable timeline cannot change a plot.
"""

from __future__ import annotations

import io
from collections import defaultdict

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..verdict import within_budget

__all__ = ["loss_against_baseline", "loss_by_shutdowns", "timeline", "timeline_tracks", "unavailability"]

_COLORS = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b"]
_STYLES = ["-", "--", "-.", ":"]


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def loss_by_shutdowns(rows: list[dict], levels: list[str], budget: int | None = None, cap: int = 4) -> bytes:
    """Grouped bars: P(lost_acked > 0) per level (bars) by data-losing shutdowns (x, ``cap``+ merged).

    Only generated seeds are counted; each bar is labelled with losing/total stories. ``budget``
    (the common fault budget, when all stories share one) shades the within-budget columns."""
    seeds = [r for r in rows if r["kind"] == "seed"]
    xs = sorted({min(r["data_losing_shutdowns"], cap) for r in seeds}) or [0]
    fig = Figure(figsize=(8.5, 4.2))
    ax = fig.add_subplot()
    width = 0.8 / max(len(levels), 1)
    for i, level in enumerate(levels):
        heights, labels = [], []
        for x in xs:
            group = [r for r in seeds if r["level"] == level and min(r["data_losing_shutdowns"], cap) == x]
            lost = sum(1 for r in group if r["lost_acked"] > 0)
            heights.append(lost / len(group) if group else 0.0)
            labels.append(f"{lost}/{len(group)}")
        pos = [x + (i - (len(levels) - 1) / 2) * width for x in range(len(xs))]
        bars = ax.bar(pos, heights, width * 0.95, label=level, color=_COLORS[i % len(_COLORS)])
        for bar, text in zip(bars, labels, strict=True):
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")
    if budget is not None:
        inside = [j for j, x in enumerate(xs) if x <= budget]
        if inside:
            ax.axvspan(-0.5, max(inside) + 0.5, color="#2ca02c", alpha=0.08, lw=0)
            ax.text(max(inside) + 0.45, 1.08, f"within the fault budget (≤ {budget})", ha="right", va="top",
                    fontsize=8, color="#2a7a2a")
    ax.set_xticks(range(len(xs)), [f"{x}+" if x == cap else str(x) for x in xs])
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(0, 1.12)
    ax.set_xlabel("data-losing (unclean) shutdowns of a partition's replicas")
    ax.set_ylabel("P(acknowledged acks=all records lost)")
    ax.set_title("Loss probability per level (labels: losing / stories)")
    ax.legend(title="level", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def unavailability(rows: list[dict], levels: list[str]) -> bytes:
    """Empirical CDF of ``unavailable_ms`` (as seconds) per level, over generated seeds."""
    fig = Figure(figsize=(8.5, 4.0))
    ax = fig.add_subplot()
    for i, level in enumerate(levels):
        values = sorted(r["unavailable_ms"] / 1000 for r in rows if r["kind"] == "seed" and r["level"] == level)
        if not values:
            continue
        n = len(values)
        mean = sum(values) / n
        ys = [(k + 1) / n for k in range(n)]
        ax.step([0.0, *values], [0.0, *ys], where="post", color=_COLORS[i % len(_COLORS)],
                ls=_STYLES[i % len(_STYLES)], lw=2.2 - 0.35 * (i % 4),
                label=f"{level} (mean {mean:.1f} s, p90 {values[min(n - 1, int(0.9 * n))]:.1f} s)")
    ax.set_xlabel("unavailable time per story (s, summed over partitions without a live leader)")
    ax.set_ylabel("fraction of stories ≤ x")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.set_title("Unavailability distribution per level")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def loss_against_baseline(rows: list[dict], level: str, baseline: str) -> bytes:
    """Scatter: acknowledged acks=all records lost per generated seed at ``baseline`` (x) and at
    ``level`` (y), the same story at both; seeds within the fault budget in green, beyond it in red;
    points below the diagonal are seeds where ``level`` lost fewer. Seeds where neither lost, or a run
    raised, are left out (their count is in the title)."""
    by_seed: dict = defaultdict(dict)
    for r in rows:
        if r["kind"] == "seed" and r["level"] in (level, baseline):
            by_seed[r["seed"]][r["level"]] = r
    pairs = [(runs[baseline], runs[level]) for _seed, runs in sorted(by_seed.items())
             if level in runs and baseline in runs and not runs[level]["error"] and not runs[baseline]["error"]]
    shown = [(a, b) for a, b in pairs if a["lost_acked"] or b["lost_acked"]]
    fig = Figure(figsize=(6.0, 5.2))
    ax = fig.add_subplot()
    top = max([1] + [max(a["lost_acked"], b["lost_acked"]) for a, b in shown])
    ax.plot([0, top * 1.05], [0, top * 1.05], color="grey", ls=":", lw=0.8, label="same loss")
    for within, color, label in ((True, "#2ca02c", "within the fault budget"),
                                 (False, "#d62728", "beyond the fault budget")):
        pts = [(a["lost_acked"], b["lost_acked"]) for a, b in shown if within_budget(b) is within]
        if pts:
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=22, color=color, alpha=0.7,
                       label=f"{label} ({len(pts)})")
    fewer = sum(1 for a, b in pairs if b["lost_acked"] < a["lost_acked"])
    more = sum(1 for a, b in pairs if b["lost_acked"] > a["lost_acked"])
    ax.set_xlim(-top * 0.03, top * 1.05)
    ax.set_ylim(-top * 0.03, top * 1.05)
    ax.set_xlabel(f"acked records lost at {baseline}")
    ax.set_ylabel(f"acked records lost at {level}")
    ax.set_title(f"{level} vs {baseline}, same seeds: {level} lost fewer on {fewer}, more on {more}\n"
                 f"({len(pairs) - len(shown)} of {len(pairs)} seeds lost nothing at either level)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _png(fig)


# ------------------------------------------------------------------------------------ timelines
def _short(node) -> str:
    """A node as the plot labels it: ``ctl`` for the controller, ``*`` for any node."""
    return "*" if node is None else "ctl" if node == "controller" else str(node)


def _nodes(nodes) -> str:
    return "[" + ", ".join(_short(n) for n in nodes) + "]"


def timeline_tracks(events: list[dict]) -> dict:
    """What the timeline plot draws, from a run's events (``RunResult.events``, recorded by the scenario
    runner beside each timeline line: :data:`kraftlog.scenario.result.EVENT_KINDS`), never from its text.

    Times are ms since the cluster was ready; events before the ``ready`` event (the bootstrap) count as
    0. Returns::

        {"end": ms of the last event,
         "down": [(broker, start, end | None, kind)],   # kind "crash (<lose>)" or "clean shutdown"
         "fenced": [(broker, start, end | None)],       # fenced by the controller .. unfenced
         "network": [(start, end | None, label)],       # isolate/partition/cut .. heal, hold .. release
         "partitions": {name: [(t, leader | None, ISR size)]},
         "controller_failovers": [t],
         "faults": [(t, label)]}                        # every fault injected, in order

    ``end`` None: still open when the run ended. A crash's down span runs from the crash to the restart;
    a clean shutdown's from the moment it began (the step event's ``started_t``: the broker hands its
    leaderships over and leaves; the step's own ``t`` is when it had stopped) to the restart. A heal
    closes the faults it heals as the simulator does (all of them, or those left with nothing cut when it
    names nodes); a release closes the holds it matches (api, from, to; unset matches any)."""
    seen_ready = not any(ev["kind"] == "ready" for ev in events)
    down: list = []
    fenced: list = []
    network: list = []  # [start, end, label, what it cuts]
    partitions: dict = defaultdict(list)
    faults: list = []
    failovers: list = []
    open_down: dict = {}
    open_fenced: dict = {}
    state: dict = {}
    end = 0
    for ev in events:
        kind = ev["kind"]
        if not seen_ready:
            t = 0
            seen_ready = kind == "ready"
        else:
            t = ev["t"]
        end = max(end, t)
        if kind == "partition":
            name = ev["partition"]
            leader, isr = state.get(name, (None, 0))
            if "leader" in ev:
                leader = ev["leader"]
            if "isr" in ev:
                isr = len(ev["isr"])
            if "leader" in ev or "isr" in ev:
                state[name] = (leader, isr)
                partitions[name].append((t, leader, isr))
        elif kind == "broker" and "fenced" in ev and seen_ready:
            b = ev["broker"]
            if ev["fenced"] and b not in open_fenced:
                open_fenced[b] = t
            elif not ev["fenced"] and b in open_fenced:
                fenced.append((b, open_fenced.pop(b), t))
        elif kind == "step":
            _step_tracks(ev, t, open_down, down, network, faults, failovers)
    for b, (start, what) in open_down.items():
        down.append((b, start, None, what))
    for b, start in open_fenced.items():
        fenced.append((b, start, None))
    return {"end": end, "down": down, "fenced": fenced, "network": [tuple(x[:3]) for x in network],
            "partitions": dict(partitions), "controller_failovers": failovers, "faults": faults}


def _step_tracks(ev: dict, t: int, open_down: dict, down: list, network: list, faults: list,
                 failovers: list) -> None:
    """One step event into the tracks of :func:`timeline_tracks`. A network item is ``[start, end,
    label, cut]``, ``cut`` being ("isolate", nodes), ("partition", groups), ("cut", from, to) or
    ("hold", api, from, to)."""
    verb = ev["verb"]
    if verb in ("crash", "restart") and "broker" not in ev:  # the controller: a fault, not a broker lane
        what = f"crash controller ({ev['lose']})" if verb == "crash" else "controller restart"
        faults.append((t, what + (" refused" if ev.get("refused") else "")))
    elif verb == "crash":
        b = ev["broker"]
        open_down.setdefault(b, (t, f"crash ({ev['lose']})"))
        faults.append((t, f"crash b{b} ({ev['lose']})"))
    elif verb == "shutdown":
        b, start = ev["broker"], ev.get("started_t", t)
        open_down.setdefault(b, (start, "clean shutdown"))
        faults.append((start, f"shutdown b{b}"))
    elif verb == "restart":
        b = ev["broker"]
        if b in open_down:
            start, what = open_down.pop(b)
            down.append((b, start, t, what))
    elif verb == "restart_controller":
        failovers.append(t)
        faults.append((t, "controller failover"))
    elif verb in ("isolate", "partition", "cut", "hold"):
        if verb == "isolate":
            label, cut = f"isolated {_nodes(ev['nodes'])}", ("isolate", set(ev["nodes"]))
        elif verb == "partition":
            label = "partition [" + ", ".join(_nodes(g) for g in ev["groups"]) + "]"
            cut = ("partition", [set(g) for g in ev["groups"]])
        elif verb == "cut":
            label, cut = f"cut {_short(ev['from'])} -> {_short(ev['to'])}", ("cut", ev["from"], ev["to"])
        else:
            label = f"holding {ev['api'] or 'all'} messages {_short(ev['from'])} -> {_short(ev['to'])}"
            cut = ("hold", ev["api"], ev["from"], ev["to"])
        network.append([t, None, label, cut])
        faults.append((t, label))
    elif verb == "heal":
        gone = None if ev["nodes"] is None else set(ev["nodes"])
        for item in network:
            cut = item[3]
            if item[1] is not None or cut[0] == "hold":
                continue
            if gone is None:
                item[1] = t
            elif cut[0] == "isolate":
                item[3] = ("isolate", cut[1] - gone)
                if not item[3][1]:
                    item[1] = t
            elif cut[0] == "partition":
                item[3] = ("partition", [g - gone for g in cut[1]])
                if sum(1 for g in item[3][1] if g) < 2:
                    item[1] = t
            elif cut[1] in gone or cut[2] in gone:
                item[1] = t
    elif verb == "release":
        for item in network:
            cut = item[3]
            if item[1] is None and cut[0] == "hold" and all(
                    want is None or want == have
                    for want, have in zip((ev["api"], ev["from"], ev["to"]), cut[1:], strict=False)):
                item[1] = t


def timeline(events: list[dict], brokers: int, title: str, min_isr: int | None = None) -> bytes:
    """Draw one run from its events (``RunResult.events``, see :func:`timeline_tracks`): broker lanes and
    network faults on top, ISR size and leader per partition below (x: seconds since the cluster was
    ready)."""
    ev = timeline_tracks(events)
    end = max(ev["end"], 1) / 1000
    parts = sorted(ev["partitions"])
    fig = Figure(figsize=(10, 2.2 + 0.42 * brokers + 1.6 * max(len(parts), 1)))
    grid = fig.add_gridspec(2, 1, height_ratios=[0.6 + 0.42 * brokers, 1.5 * max(len(parts), 1)], hspace=0.35)
    top = fig.add_subplot(grid[0])
    kinds = {"crash (none)": "#ff9896", "crash (unflushed)": "#d62728", "crash (all)": "#7f0000",
             "clean shutdown": "#9edae5"}
    for b, start, stop, kind in ev["down"]:
        s, e = start / 1000, (stop / 1000 if stop is not None else end)
        top.broken_barh([(s, max(e - s, 0.05))], (b - 0.35, 0.7), color=kinds.get(kind, "#d62728"))
    for b, start, stop in ev["fenced"]:
        s, e = start / 1000, (stop / 1000 if stop is not None else end)
        top.broken_barh([(s, max(e - s, 0.05))], (b - 0.12, 0.24), facecolor="none", edgecolor="black",
                        hatch="///", lw=0.5)
    net_y = brokers + 0.2
    for i, (start, stop, label) in enumerate(ev["network"]):
        s, e = start / 1000, (stop / 1000 if stop is not None else end)
        y = net_y + (i % 3) * 0.3
        top.broken_barh([(s, max(e - s, 0.05))], (y - 0.12, 0.24), color="#8c564b", alpha=0.6)
        top.text(s, y + 0.14, label[:48], fontsize=6, va="bottom")
    top.set_yticks([*range(brokers), net_y], [f"broker {b}" for b in range(brokers)] + ["network"])
    top.set_ylim(-0.6, net_y + 1.1)
    top.set_xlim(0, end)
    top.invert_yaxis()
    top.grid(axis="x", alpha=0.3)
    top.set_title(title, fontsize=10)
    handles = [Patch(color=c, label=k) for k, c in kinds.items()]
    handles += [Patch(facecolor="none", edgecolor="black", hatch="///", label="fenced"),
                Patch(color="#8c564b", alpha=0.6, label="network fault / held requests")]
    top.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))

    bottom = fig.add_subplot(grid[1], sharex=top)
    offset = 0
    yticks, ylabels = [], []
    for k, name in enumerate(parts):
        changes = ev["partitions"][name]
        base = offset
        xs = [e[0] / 1000 for e in changes] + [end]
        ys = [base + e[2] for e in changes]
        ys.append(ys[-1])
        bottom.step(xs, ys, where="post", color=_COLORS[k % len(_COLORS)], label=f"{name} ISR size")
        for (t, leader, _isr), nxt in zip(changes, [*changes[1:], (ev["end"], None, None)], strict=True):
            if leader is None:
                bottom.axvspan(t / 1000, nxt[0] / 1000, ymin=0, ymax=1, color="#d62728", alpha=0.07, lw=0)
        last = "start"
        flip = 0
        for t, leader, isr in changes:
            if leader != last:
                bottom.annotate("no leader" if leader is None else f"L{leader}", (t / 1000, base + isr), fontsize=7,
                                xytext=(2, 3 + 9 * flip), textcoords="offset points",
                                color="#d62728" if leader is None else "black")
                flip = 1 - flip
                last = leader
        if min_isr is not None:
            bottom.axhline(base + min_isr, color="grey", ls=":", lw=0.8)
        yticks += [base + k for k in range(4)]
        ylabels += [f"{name}  0", "1", "2", "3"]
        offset += 4.5
    bottom.set_yticks(yticks, ylabels, fontsize=7)
    bottom.set_xlabel("simulated time since the cluster was ready (s)")
    bottom.set_ylabel("ISR size; leader L<id>")
    bottom.set_ylim(-0.3, offset - 0.2)
    bottom.grid(axis="x", alpha=0.3)
    if parts:
        handles, _labels = bottom.get_legend_handles_labels()
        handles.append(Patch(color="#d62728", alpha=0.15, label="no leader"))
        if min_isr is not None:
            handles.append(Line2D([], [], color="grey", ls=":", lw=0.8, label=f"min ISR {min_isr}"))
        bottom.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)
