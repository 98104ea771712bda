"""What a consumer group was told, judged: the group checkers of the verdict.

Input: the group events the consumers saw, in time order (:data:`GroupEvent`: group, client, partition name,
kind, offset, time ms), with kind

* ``"commit"``: an OffsetCommit of ``offset`` acknowledged to the client;
* ``"fetched"``: an OffsetFetch answered ``offset`` (-1: nothing committed);
* ``"position"``: the client's position set to ``offset``, from a committed offset or by ``auto.offset.reset``;

the records the consumers delivered (:data:`kraftlog.check.checkers.Consumed`) and the final committed logs.

* :func:`committed_offset_regressions`: an OffsetFetch answer lower than the offset the group's last
  acknowledged OffsetCommit stored for the partition (a lower acknowledged commit lowers the floor: the group
  moved back itself). A coordinator that lost a commit it acknowledged makes a restarted consumer reprocess.
* :func:`skipped_by_group`: records of the final committed log the group never delivered, between the position
  its first client started from and the last record it delivered: what a group skips when its commits are lost
  and a restarted client resets to the latest offset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from .checkers import Consumed, FinalLogs

__all__ = ["GroupEvent", "committed_offset_regressions", "skipped_by_group", "group_findings"]

#: (group, client, partition name, kind, offset, time ms)
GroupEvent: TypeAlias = tuple[str, str, str, str, int, int]
#: How many skipped offsets each finding lists (the count is complete).
SHOWN = 20


def committed_offset_regressions(events: Sequence[GroupEvent]) -> list[dict[str, object]]:
    """Each OffsetFetch answer below the offset the last acknowledged commit of the same group and partition
    stored: ``{"group", "partition", "client", "acknowledged", "acknowledged_t", "fetched", "t"}``."""
    floor: dict[tuple[str, str], tuple[int, int]] = {}
    out: list[dict[str, object]] = []
    for group, client, name, kind, offset, t in events:
        key = (group, name)
        if kind == "commit":
            floor[key] = (offset, t)
        elif kind == "fetched":
            last = floor.get(key)
            if last is not None and offset < last[0]:
                out.append({"group": group, "partition": name, "client": client, "acknowledged": last[0],
                            "acknowledged_t": last[1], "fetched": offset, "t": t})
    return out


def skipped_by_group(events: Sequence[GroupEvent], consumed: Sequence[Consumed],
                     final_logs: FinalLogs) -> list[dict[str, object]]:
    """Per group and partition with records skipped: ``{"group", "partition", "count", "offsets"}`` (the first
    :data:`SHOWN` offsets). A record is skipped when it is in the partition's final committed log at an offset
    from the group's first position to its last delivered record and no client of the group delivered that
    offset."""
    group_of: dict[str, str] = {}
    origin: dict[tuple[str, str], int] = {}
    for group, client, name, kind, offset, _t in events:
        group_of[client] = group
        if kind == "position":
            origin.setdefault((group, name), offset)
    delivered: dict[tuple[str, str], set[int]] = {}
    for c in consumed:
        of = group_of.get(c[0])
        if of is not None:
            delivered.setdefault((of, c[1]), set()).add(c[2])
    out: list[dict[str, object]] = []
    for key in sorted(delivered):
        start = origin.get(key)
        log = final_logs.get(key[1])
        if start is None or not log:
            continue
        got = delivered[key]
        end = max(got) + 1
        skipped = sorted(o for o in log if start <= o < end and o not in got)
        if skipped:
            out.append({"group": key[0], "partition": key[1], "count": len(skipped), "offsets": skipped[:SHOWN]})
    return out


def group_findings(events: Sequence[GroupEvent], consumed: Sequence[Consumed],
                   final_logs: FinalLogs) -> Mapping[str, object]:
    """The verdict's group keys: ``committed_offset_regressions`` and ``skipped_by_group`` (counts: regressions,
    records) and ``group_anomalies`` (the findings of both)."""
    regressions = committed_offset_regressions(events)
    skipped = skipped_by_group(events, consumed, final_logs)
    count = sum(int(s["count"]) for s in skipped)  # type: ignore[call-overload]
    return {"committed_offset_regressions": len(regressions), "skipped_by_group": count,
            "group_anomalies": {"regressions": regressions, "skipped": skipped}}
