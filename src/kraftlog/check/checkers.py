"""Checkers over a run's history and final state; their findings fill the verdict.

Sources: the TLA+ specifications of Kafka replication (no acknowledged acks=all record lost, log
matching below the HWMs, a leader is in its ISR, a fenced broker is never in the ISR) and Jepsen's
Kafka checker (lost-write, duplicate, inconsistent-offsets, nonmonotonic-poll, poll-skip), plus
KIP-320's promise: a consumer is told when the log was truncated under its position.

Inputs are plain data so the checkers can be tested on hand-written histories:

* ``acked``: list of (client, topic, partition, value, acks) for acknowledged records,
* ``final_logs``: {partition name: {offset: (value, leader_epoch)}} below the leader's HWM, or None
  for a partition with no leader at the end,
* ``replica_logs``: {partition name: {broker: ({offset: (value, epoch)}, hwm)}} for live replicas,
* ``consumed``: list of (client, partition name, offset, value, time ms[, seq]) in consumption order,
* ``truncations``: list of (client, partition name, position, divergence offset, time ms[, seq]);
  ``seq`` is the position in the run's history, which orders events within one ms (without it, a
  truncation report is taken to come before reads of the same ms),
* ``hwms``: list of (client, partition name, hwm, time ms) observed in fetch responses.

The TLA+ invariants checked while the run goes (before data is lost) are in
:mod:`kraftlog.check.invariants`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from operator import itemgetter
from typing import NotRequired, TypeAlias, TypedDict

from ..metadata.image import MetadataImage

#: A record's value as the checkers compare it (bytes in the simulator, text from real clients).
Value: TypeAlias = Hashable
#: (client, topic, partition, value, acks) of an acknowledged record; acks is "all", "1" or "0".
Acked: TypeAlias = tuple[str, str, int, Value, str]
#: {offset: (value, leader epoch)} of one partition's log below its HWM.
PartitionLogView: TypeAlias = Mapping[int, tuple[Value, int]]
#: {partition name: its final log, or None when the partition has no leader at the end}.
FinalLogs: TypeAlias = Mapping[str, PartitionLogView | None]
#: {partition name: {broker: (its log, its HWM)}} of the live replicas.
ReplicaLogs: TypeAlias = Mapping[str, Mapping[int, tuple[PartitionLogView, int]]]
#: (client, partition name, offset, value, time ms[, history position]) of a record a consumer read.
Consumed: TypeAlias = tuple[str, str, int, Value, int] | tuple[str, str, int, Value, int, int]
#: (client, partition name, position, divergence offset, time ms[, history position]) of a truncation a
#: consumer reported.
Truncation: TypeAlias = tuple[str, str, int, int, int] | tuple[str, str, int, int, int, int]
#: (client, partition name, HWM offset, time ms) a consumer saw in a fetch response.
HwmSeen: TypeAlias = tuple[str, str, int, int]
#: (broker, partition name, leader epoch, HWM offset, time ms) of a leader's own HWM.
LeaderHwm: TypeAlias = tuple[int, str, int, int, int]
#: {partition name: {offset: (producer id, producer epoch, sequence)}}.
Stamps: TypeAlias = Mapping[str, Mapping[int, tuple[int, int, int]]]


class Retention(TypedDict):
    """What retention may have removed from one partition (issue 30): the final leader's ``log_start`` offset,
    its ``retention_ms`` and ``retention_bytes`` (-1: no limit), the run's ``end_ms``, the final leader log's
    batches as (base offset, bytes), and ``acked_at``: value -> (offset, record timestamp ms) of its acks=all
    records."""

    log_start: int
    retention_ms: int
    retention_bytes: int
    end_ms: int
    batches: list[tuple[int, int]]
    acked_at: Mapping[Value, tuple[int, int]]


def retention_allowed(r: Retention, offset: int, timestamp_ms: int) -> bool:
    """Whether retention was entitled to delete the record at ``offset`` written at ``timestamp_ms`` at some
    moment of the run (the weakest moment is its end: time only passes and the log only grows above it):
    ``retention.ms`` once the record is older than it (Kafka deletes a segment whose newest record is), or
    ``retention.bytes`` while the batches after it hold at least that many bytes (Kafka keeps at least that
    much). DeleteRecords is not in the simulator's steps."""
    if r["retention_ms"] >= 0 and 0 <= timestamp_ms < r["end_ms"] - r["retention_ms"]:
        return True
    if r["retention_bytes"] >= 0:
        return sum(size for base, size in r["batches"] if base > offset) >= r["retention_bytes"]
    return False


class Compaction(TypedDict):
    """What the log cleaner may have removed from one compacted partition (issue 31): ``keys``, value -> key of the
    keyed records the producers sent (a tombstone's value is its identity, carried in a record header: its record
    value is null); ``latest``, key -> the highest offset holding that key in the final leader log;
    ``acked_offsets``, value -> the offset its acks=all record was acknowledged at; ``tombstones``, key -> (offset,
    record timestamp ms) of each acknowledged tombstone; the partition's ``delete_retention_ms`` and the run's
    ``end_ms``."""

    keys: Mapping[Value, str]
    latest: Mapping[str, int]
    acked_offsets: Mapping[Value, int]
    tombstones: NotRequired[Mapping[str, Sequence[tuple[int, int]]]]
    delete_retention_ms: NotRequired[int]
    end_ms: NotRequired[int]


def compaction_state(c: Compaction, offset: int, value: Value) -> str | None:
    """How the record ``value`` at ``offset`` of a compacted partition is accounted for when the final log does not
    hold it as a value: ``"present"`` for a tombstone the final log still holds (the last record of its key, its
    value null), ``"removed"`` when the log cleaner was entitled to remove it -- a later record with its key
    survives (Kafka keeps a key's last record), a later acknowledged tombstone for its key deleted it (whether
    that tombstone survived is judged on its own), or, for a tombstone, ``delete.retention.ms`` passed since it was
    written by the end of the run (the cleaner removes it no sooner than that after the first cleaning that
    reached it, KIP-534) -- and None when neither holds (lost)."""
    key = c["keys"].get(value)
    if key is None:
        return None
    latest = c["latest"].get(key, -1)
    tombs = c.get("tombstones", {}).get(key, ())
    mine = [ts for t_offset, ts in tombs if t_offset == offset]
    if mine and latest == offset:
        return "present"
    if latest > offset or any(t_offset > offset for t_offset, _ts in tombs):
        return "removed"
    if mine and c.get("end_ms", 0) - mine[0] >= c.get("delete_retention_ms", 1 << 62):
        return "removed"
    return None


def compaction_allowed(c: Compaction, offset: int, value: Value) -> bool:
    """Whether :func:`compaction_state` accounts for the record (present as a tombstone, or removed by right)."""
    return compaction_state(c, offset, value) is not None


class LostRecord(TypedDict):
    """An acknowledged acks=all record missing from the final log."""

    partition: str
    value: Value
    client: str


class Judgement(TypedDict):
    """:func:`judge`'s findings, the verdict's keys of the same names (SCENARIOS.md, "The verdict")."""

    lost_acked: int
    lost_acked_records: list[LostRecord]
    leaderless_partitions: list[str]
    hwm_regressions: int
    leader_hwm_regressions: int
    detected_truncations: int
    undetected_truncations: int
    anomalies: dict[str, int]
    #: acknowledged records retention was entitled to delete and did (only when some were)
    retained_acked: NotRequired[int]
    #: acknowledged records the log cleaner was entitled to remove and did (only when some were)
    compacted_acked: NotRequired[int]


def lost_acked(acked: Sequence[Acked], final_logs: FinalLogs, retention: Mapping[str, Retention] | None = None,
               retained: list[LostRecord] | None = None, compaction: Mapping[str, Compaction] | None = None,
               compacted: list[LostRecord] | None = None) -> tuple[list[LostRecord], list[str]]:
    """Acknowledged acks=all records missing from the final leader log between its log start offset and its
    HWM.

    Returns (lost records as {"partition", "value"} dicts, leaderless partition names). Records of
    leaderless partitions are not counted as lost (SCENARIOS.md). With ``retention`` (per partition name), a
    missing record below the final log start offset that retention was entitled to delete
    (:func:`retention_allowed`) is not lost: it goes to ``retained`` when given; one below the log start
    that no rule allowed is lost (retention went too far). With ``compaction`` (per compacted partition), a
    missing record whose key has a later record in the final log (:func:`compaction_allowed`) is not lost: it
    goes to ``compacted`` when given."""
    present = {p: {v for v, _ in log.values()} for p, log in final_logs.items() if log is not None}
    leaderless = sorted(p for p, log in final_logs.items() if log is None)
    lost: list[LostRecord] = []
    names: dict[tuple[str, int], str] = {}
    for client, topic, partition, value, acks in acked:
        if acks != "all":
            continue
        name = names.get((topic, partition))
        if name is None:
            name = names[(topic, partition)] = f"{topic}-{partition}"
        if name in present and value not in present[name]:
            r = retention.get(name) if retention is not None else None
            at = r["acked_at"].get(value) if r is not None else None
            if r is not None and at is not None and at[0] < r["log_start"] and retention_allowed(r, *at):
                if retained is not None:
                    retained.append({"partition": name, "value": value, "client": client})
                continue
            c = compaction.get(name) if compaction is not None else None
            offset = c["acked_offsets"].get(value) if c is not None else None
            state = compaction_state(c, offset, value) if c is not None and offset is not None else None
            if state == "removed" and compacted is not None:
                compacted.append({"partition": name, "value": value, "client": client})
            if state is not None:
                continue
            lost.append({"partition": name, "value": value, "client": client})
    return lost, leaderless


def log_matching(replica_logs: ReplicaLogs) -> list[str]:
    """Log matching below the HWMs: two live replicas agree on every offset below both HWMs that both still
    hold (from the higher of their first offsets: retention deletes a replica's oldest segments on its own
    schedule, and a follower restarted at its leader's log start holds nothing below it)."""
    out: list[str] = []
    for name in sorted(replica_logs):
        reps = replica_logs[name]
        ids = sorted(reps)
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                log_a, hwm_a = reps[a]
                log_b, hwm_b = reps[b]
                below = range(max(min(log_a, default=0), min(log_b, default=0)), min(hwm_a, hwm_b))
                if log_a is log_b or list(map(log_a.get, below)) == list(map(log_b.get, below)):
                    continue  # the common case, compared in one pass
                for off in below:
                    if log_a.get(off) != log_b.get(off):
                        out.append(f"log-matching {name}: brokers {a} and {b} differ at offset {off} "
                                   f"below their HWMs ({log_a.get(off)} vs {log_b.get(off)})")
                        break
    return out


def duplicates(final_logs: FinalLogs) -> int:
    """Jepsen duplicate: a value stored at more than one offset of the final log (null values, tombstones, carry
    no identity and are not counted)."""
    count = 0
    for log in final_logs.values():
        if log is None:
            continue
        seen: defaultdict[Value, int] = defaultdict(int)
        for value, _ in log.values():
            if value is not None:
                seen[value] += 1
        count += sum(n - 1 for n in seen.values() if n > 1)
    return count


def duplicate_causes(final_logs: FinalLogs, stamps: Stamps) -> tuple[dict[str, int], list[str]]:
    """Why each Jepsen duplicate of the final log is there, from the producer stamps of its copies.

    ``stamps``: {partition name: {offset: (producer id, producer epoch, sequence)}} of the records of
    ``final_logs`` (producer id -1 for a producer that is not idempotent). Every extra copy of a value
    (as :func:`duplicates` counts them), compared with the value's first copy, is one of:

    * ``same_producer_epoch``: both copies carry the same producer id and epoch. An idempotent
      producer sends each record under one sequence per epoch, and the broker appends a sequence once
      (KIP-98; Kafka's ``ProducerStateManager`` answers a retry with the original offset): the broker
      broke idempotence. Each one is also returned as a finding ``idempotence <partition>: ...``;
    * ``producer_epoch_bump``: the copies carry different producer ids or epochs: the client gave up on
      the first send and sent the record again under a bumped epoch or a new producer id (KIP-360's
      epoch bump, librdkafka's "drain and bump" after a timeout or an unknown-producer error). Kafka
      promises no deduplication across producer epochs, so this is not a broker fault;
    * ``not_idempotent``: a copy came from a producer that is not idempotent (acks=1's retries).

    Returns ({cause: count}, findings)."""
    counts = {"same_producer_epoch": 0, "producer_epoch_bump": 0, "not_idempotent": 0}
    findings: list[str] = []
    for name, log in sorted(final_logs.items()):
        if not log:
            continue
        stamp_of = stamps.get(name, {})
        copies: defaultdict[Value, list[int]] = defaultdict(list)
        for offset in sorted(log):
            copies[log[offset][0]].append(offset)
        for value, offsets in copies.items():
            if len(offsets) < 2:
                continue
            first = offsets[0]
            pid, epoch, seq = stamp_of.get(first, (-1, -1, -1))
            for other in offsets[1:]:
                o_pid, o_epoch, o_seq = stamp_of.get(other, (-1, -1, -1))
                if pid < 0 or o_pid < 0:
                    counts["not_idempotent"] += 1
                elif (pid, epoch) == (o_pid, o_epoch):
                    counts["same_producer_epoch"] += 1
                    findings.append(f"idempotence {name}: value {value!r} appended twice by producer {pid} epoch "
                                    f"{epoch} (sequence {seq} at offset {first}, sequence {o_seq} at offset {other})")
                else:
                    counts["producer_epoch_bump"] += 1
    return counts, findings


def consumer_anomalies(consumed: Sequence[Consumed], truncations: Sequence[Truncation],
                       final_logs: FinalLogs, log_starts: Mapping[str, int] | None = None,
                       compaction: Mapping[str, Compaction] | None = None) -> dict[str, int]:
    """Jepsen's consumer anomalies and KIP-320 truncation accounting, judged against the final log.

    For each consumer and partition, a read (offset o, value v) is *placed* when the final log holds v
    at o; a read the final log no longer holds there was truncated under the consumer and is judged by
    the truncation accounting instead. Consecutive placed reads (a, b) with no truncation reported
    between them give:

    * nonmonotonic-poll: ``b <= a`` — the consumer went backwards;
    * poll-skip: ``b > a + 1`` — records the final log holds between them were never read;
    * inconsistent-offsets: one offset read with two different values (by any consumers) with no
      truncation reported at or below it in between;
    * detected_truncations: truncations the consumers reported (LogTruncation or reset to the
      divergence point);
    * undetected_truncations: (consumer, partition) pairs that read a record which is not in the final
      log at its offset (it was truncated under them) and then went on reading the new log at or past
      that offset without having reported a truncation — KIP-320's "silently wrong" consumer. A consumer
      that read truncated records but has read nothing since (e.g. it was still waiting for metadata
      when the run ended) is not counted: those records show up as lost, not as a broken promise.

    ``log_starts``: a partition's final log start offset when retention moved it: a read below it is neither
    placed nor truncated (retention deleted it; a consumer reset past it is no skip).

    ``compaction``: for a compacted partition, a read of a record the log cleaner was entitled to remove since
    (:func:`compaction_allowed`) is no truncation, and a poll-skip is counted only when the final log holds a
    record between the two reads (the cleaner's gaps are not skipped records).
    """
    result = {"inconsistent-offsets": 0, "nonmonotonic-poll": 0, "poll-skip": 0,
              "detected_truncations": len(truncations), "undetected_truncations": 0}
    log_end = {part: max(log, default=-1) + 1 for part, log in final_logs.items() if log is not None}
    # (time ms, history position, kind: 0 truncation / 1 read, client, partition, offset, value or divergence)
    events: list[tuple[int, int, int, str, str, int, object]] = [
        (e[4], e[5] if len(e) > 5 else 1, 1, e[0], e[1], e[2], e[3]) for e in consumed]
    events += [(e[4], e[5] if len(e) > 5 else 0, 0, e[0], e[1], e[2], e[3]) for e in truncations]
    events.sort(key=itemgetter(0, 1))
    last: dict[tuple[str, str], int] = {}
    by_offset: dict[tuple[str, int], object] = {}
    invalid: set[tuple[str, str]] = set()
    # (client, partition) -> lowest offset of a truncated read not yet reported
    truncated_at: dict[tuple[str, str], int] = {}
    for _t, _, kind, client, part, off, x in events:
        key = (client, part)
        if kind == 0:  # a truncation report: the consumer moved back to the divergence point
            assert isinstance(x, int), x  # the divergence offset
            last.pop(key, None)
            if key in truncated_at and x <= truncated_at[key]:
                del truncated_at[key]
            for k in [k for k in by_offset if k[0] == part and k[1] >= x]:
                del by_offset[k]
            continue
        seen = by_offset.get((part, off))
        if seen is not None and seen != x:
            result["inconsistent-offsets"] += 1
        by_offset[(part, off)] = x
        log = final_logs.get(part)
        if log is None:
            continue
        if log_starts is not None and off < log_starts.get(part, 0):
            continue  # below the log start offset: retention removed it, not a truncation
        final = log.get(off)
        c = compaction.get(part) if compaction is not None else None
        cleaned = final is None and c is not None and compaction_allowed(c, off, x)
        if (final is None or final[0] != x) and not cleaned:
            # the final log no longer holds this read at its offset: truncated under the consumer
            if off < log_end[part]:
                truncated_at[key] = min(truncated_at.get(key, off), off)
            continue
        if key in truncated_at and off >= truncated_at[key]:
            invalid.add(key)  # reading the new log past the divergence, never told
        prev = last.get(key)
        if prev is not None:
            if off <= prev:
                result["nonmonotonic-poll"] += 1
            elif off > prev + 1 and (c is None or any(o in log for o in range(prev + 1, off))):
                result["poll-skip"] += 1
        last[key] = off
    result["undetected_truncations"] = len(invalid)
    return result


def hwm_regressions(hwms: Sequence[HwmSeen], truncations: Sequence[Truncation]) -> int:
    """HWM moving backwards as consumers observe it (unless the consumer was told of a truncation).

    ``hwms``: (client, partition name, hwm, time ms) from the consumers' fetch responses, in order;
    counts the responses whose HWM is below the highest one that consumer saw for the partition. Not
    always 0: a Kafka consumer can see a lagging HWM after a leader change (the new leader's HWM lags
    until its followers fetch in the new epoch; KIP-207's OFFSET_NOT_AVAILABLE applies to ListOffsets
    only). A leader's own HWM is :func:`leader_hwm_regressions`."""
    count = 0
    best: dict[tuple[str, str], tuple[int, int]] = {}
    cut: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for c, p, _, _div, t, *_ in truncations:
        cut[(c, p)].append(t)
    for client, part, hwm, t in hwms:
        key = (client, part)
        prev = best.get(key)
        if prev is not None and hwm < prev[0] and not any(prev[1] <= tt <= t for tt in cut[key]):
            count += 1
        if prev is None or hwm >= prev[0]:
            best[key] = (hwm, t)
    return count


def leader_hwm_regressions(samples: Sequence[LeaderHwm]) -> int:
    """A leader's own HWM never moves backwards (per broker, partition and leader epoch): always 0.

    ``samples``: (broker, partition name, leader epoch, hwm offset, time ms) in the order observed, one
    per change of a leader's HWM (the runner records one after each broker event that changed it).
    Counts the samples whose HWM is below the highest earlier HWM of the same (broker, partition, leader
    epoch). A new leader epoch starts a new sequence: a newly elected leader may start below what the
    previous leader reached (Kafka's follower HWM lags by one fetch), which consumers see
    (``hwm_regressions``) but which is no regression of a leader's own HWM. Source: Kafka's
    ``Partition.maybeIncrementLeaderHW`` only ever raises the HWM (``newHighWatermark > oldHighWatermark``);
    KIP-966's strict HWM rule relies on it."""
    count = 0
    best: dict[tuple[int, str, int], int] = {}
    for broker, part, epoch, hwm, _t in samples:
        key = (broker, part, epoch)
        prev = best.get(key)
        if prev is not None and hwm < prev:
            count += 1
        elif prev is None or hwm > prev:
            best[key] = hwm
    return count


def partition_state_violations(image: MetadataImage, now_ms: int,
                               min_isr: Callable[[str], int] | None = None) -> list[tuple[str, str]]:
    """Invariants over the controller's committed partition state (checked after every change):
    a leader is in its ISR; a fenced broker is never in the ISR; KIP-966: ELR ∩ ISR = ∅ and
    ELR non-empty ⇒ |ISR| < min ISR (``min_isr(topic)`` gives the effective min ISR).
    Returns (key, message) pairs; the key deduplicates repeated findings."""
    out: list[tuple[str, str]] = []
    for (topic, index), part in sorted(image.partitions.items()):
        name = f"{topic}-{index}"
        if part.elr:
            both = sorted(set(part.elr) & set(part.isr))
            if both:
                out.append((f"elr-isr-overlap {name}",
                            f"t={now_ms}ms elr-isr-overlap {name}: {both} in both ISR {list(part.isr)} "
                            f"and ELR {list(part.elr)}"))
            if min_isr is not None and len(part.isr) >= min_isr(topic):
                out.append((f"elr-with-full-isr {name}",
                            f"t={now_ms}ms elr-with-full-isr {name}: ELR {list(part.elr)} non-empty while ISR "
                            f"{list(part.isr)} is at least min ISR {min_isr(topic)}"))
        if part.leader >= 0 and part.leader not in part.isr:
            out.append((f"leader-outside-isr {name}",
                        f"t={now_ms}ms leader-outside-isr {name}: leader {part.leader} not in ISR {list(part.isr)}"))
        for r in part.isr:
            b = image.brokers.get(r)
            if b is not None and b.fenced:
                out.append((f"fenced-in-isr {name} {r}",
                            f"t={now_ms}ms fenced-in-isr {name}: broker {r} is fenced but in ISR {list(part.isr)}"))
    return out


def judge(acked: Sequence[Acked], final_logs: FinalLogs, consumed: Sequence[Consumed],
          truncations: Sequence[Truncation], hwms: Sequence[HwmSeen], leader_hwm_regressions: int = 0,
          retention: Mapping[str, Retention] | None = None,
          compaction: Mapping[str, Compaction] | None = None) -> Judgement:
    """The verdict's findings in the order SCENARIOS.md gives them, from this module's inputs (see the
    module doc): ``lost_acked``, ``lost_acked_records``, ``leaderless_partitions``, ``hwm_regressions``,
    ``leader_hwm_regressions`` (counted by the caller: only the simulator sees a leader's HWM at every
    step), ``detected_truncations``, ``undetected_truncations`` and Jepsen's ``anomalies``. One place
    for the simulator's runner and the real-process runners (``kraftlog chaos``, ``scenario run
    --real``), so the same history gets the same verdict everywhere."""
    retained: list[LostRecord] = []
    compacted: list[LostRecord] = []
    lost, leaderless = lost_acked(acked, final_logs, retention, retained, compaction, compacted)
    starts = {name: r["log_start"] for name, r in retention.items()} if retention is not None else None
    anomalies = consumer_anomalies(consumed, truncations, final_logs, starts, compaction)
    judgement: Judgement = {
        "lost_acked": len(lost),
        "lost_acked_records": lost,
        "leaderless_partitions": leaderless,
        "hwm_regressions": hwm_regressions(hwms, truncations),
        "leader_hwm_regressions": leader_hwm_regressions,
        "detected_truncations": anomalies["detected_truncations"],
        "undetected_truncations": anomalies["undetected_truncations"],
        "anomalies": {"lost-write": len(lost), "duplicate": duplicates(final_logs),
                      "inconsistent-offsets": anomalies["inconsistent-offsets"],
                      "nonmonotonic-poll": anomalies["nonmonotonic-poll"], "poll-skip": anomalies["poll-skip"]},
    }
    if retained:
        judgement["retained_acked"] = len(retained)
    if compacted:
        judgement["compacted_acked"] = len(compacted)
    return judgement
