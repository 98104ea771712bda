"""``kraftlog audit``: read a topic back on Spark and check it against a producer's acknowledgement log
(issue 14).

``kraftlog audit --bootstrap-server HOST:PORT[,...] --topic T --acks FILE [--out DIR] [--master URL] [--json]``

**Inputs.**

* The topic ``T``, read through the ``kraftlog`` data source (:mod:`kraftlog.spark.source`) from the log
  start offset to each partition's HWM as it is when the audit starts (the ending offsets are pinned on
  the driver first, with the leader epoch of record HWM-1, so every task reads a fixed range and a log
  rewritten under it fails the read, KIP-320). That is what a consumer may read: records above an HWM
  are not committed and are not looked at. Run the audit once the cluster has settled (full ISRs).
* ``FILE``, the acknowledgement log: what ``kraftlog chaos`` writes as ``DIR/acks.parquet``, one row per
  acknowledged record. Parquet (a file, or a directory of parts) or JSON lines (one object per line),
  told apart by content (Parquet files begin with ``PAR1``). Columns (:data:`ACK_COLUMNS`):

  ====================  ===========================================================================
  ``topic``             string, required; rows of other topics are left out (counted in the summary)
  ``partition``         int, required: the partition the producer was told the record went to
  ``offset``            int or null, required column: the acknowledged offset (null, or negative as
                        librdkafka's -1001, when the acknowledgement carried none)
  ``value_sha256``      string, required: hex SHA-256 of the value bytes (64 hex digits)
  ``acks``              ``"all"`` / ``"1"`` (also ``"-1"``, -1, 1), optional: without the column (or
                        where it is null, or a JSON line lacks it) a row counts as ``acks=all``
  ``leader_epoch``,     optional, carried into the results (int, int, string)
  ``ack_time_ms``,
  ``producer``
  ====================  ===========================================================================

  Other columns are ignored. A missing required column, a value of the wrong type, a malformed hash or
  an unknown ``acks`` value is bad input (exit 2, one line naming the column and the row or line).

**The rule** (:func:`audit_rows`, pure Python over plain tuples, so it is tested without Spark). For each
value hash, its *locations* are the ``(partition, offset, leader epoch)`` of every record of the topic whose
value has that SHA-256 (records without a value have no hash and match nothing). Then:

* **lost**: an acknowledged record whose value hash has no location at all;
* **misplaced**: an acknowledged record whose value is present, but not where it was acknowledged: not
  at ``(partition, offset)`` when the acknowledgement has an offset, not in ``partition`` when it has none;
* **duplicated**: a value hash with more than one location (acknowledged or not). The rule assumes that a
  producer writes each value once (``kraftlog chaos`` writes ``all-<n>`` / ``one-<n>``).

A value present at its acknowledged place and elsewhere too is duplicated, not misplaced. Every decision
concerns one value hash, so the job can split the work by hash: Spark reads the topic in parallel
(SHA-256 computed in the JVM, ``sha2(value, 256)``: only the hashes reach Python), keys records and
acknowledgements by a bucket of their hash, ``cogroup`` s the two RDDs and runs :func:`audit_rows` once per
bucket; the findings (small) and the per-bucket counts are collected on the driver. (RDDs rather than an
Arrow UDF: PySpark's Arrow UDFs need pandas, which kraftlog does not install.)

**Outputs in ``--out``** (default ``./audit-out``), each file replaced atomically:

* ``lost.parquet``, ``misplaced.parquet``: one row per such acknowledgement, columns :data:`ACK_COLUMNS`
  (optional ones null when the file had none) plus ``found``: list of ``{partition, offset, leader_epoch}``
  where the value was found (empty for a lost record), sorted;
* ``duplicated.parquet``: the same columns, one row per acknowledgement of a duplicated hash, or one row
  with null acknowledgement columns (``topic`` and ``value_sha256`` set) for a duplicated hash never
  acknowledged; ``found`` lists every copy;
* ``summary.json``: ``{"topic", "acks_file", "acknowledged": {"all": n, "1": n}, "records_in_topic",
  "lost": {"all": n, "1": n}, "duplicated" (value hashes), "misplaced", "exit_code"}`` plus
  ``"bootstrap_servers"``, ``"master"``, ``"read_offsets"`` (``{"T-p": [start, end)}`` read),
  ``"records_without_value"``, ``"acks_other_topics"`` and ``"wall_s"`` (:func:`summarize`);
* ``spark.log``: what the Spark JVM printed.

A summary table goes to stdout (``--json``: summary.json instead), progress lines to stderr.

**Exit codes**: 1 when an ``acks=all`` acknowledged record is lost (``acks=1`` losses are reported and
never fail: acks=1 promises nothing once the leader fails); 2 bad input or an audit that cannot run, in one
line (no such ``--acks`` file, an unreadable file or a missing column, named; a malformed or unreachable
``--bootstrap-server``: no TCP connection within :data:`CONNECT_TIMEOUT_S` s; a topic that does not exist;
an unwritable ``--out``; no Java; Spark failing to start or its job failing); 130 (143) interrupted by
SIGINT (SIGTERM), Spark stopped; 0 otherwise (duplicated or misplaced records are reported, not failed on).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import click

from ..cli_options import sigterm_interrupts
from ..verdict import is_safe

__all__ = ["audit", "AuditError", "ACK_COLUMNS", "REQUIRED_COLUMNS", "FINDING_KINDS", "CONNECT_TIMEOUT_S",
           "read_acks", "ack_tuples", "audit_rows", "bucket_of", "merge_buckets", "split_findings", "summarize",
           "exit_code", "run_audit"]

#: The acknowledgement log's columns, in ``acks.parquet``'s order (``kraftlog chaos``).
ACK_COLUMNS = ("topic", "partition", "offset", "leader_epoch", "value_sha256", "ack_time_ms", "acks", "producer")
#: The columns an acknowledgement log must have.
REQUIRED_COLUMNS = ("topic", "partition", "offset", "value_sha256")
#: What :func:`audit_rows` finds, in this order in its output.
FINDING_KINDS = ("lost", "misplaced", "duplicated")
#: TCP connect timeout (s) of the check that ``--bootstrap-server`` is reachable, before Spark starts.
CONNECT_TIMEOUT_S = 5.0
#: How long (s) the driver retries Metadata and ListOffsets through leader changes before giving up.
RETRY_TIMEOUT_S = 15.0
#: Rows (records plus acknowledgements) per hash bucket, about: one bucket is held by one Python worker.
ROWS_PER_BUCKET = 200_000
DEFAULT_OUT = "audit-out"
DEFAULT_MASTER = "local[*]"
_HEX = frozenset("0123456789abcdef")


class AuditError(RuntimeError):
    """The audit cannot run: bad input or an unreachable cluster. The message is one line; the CLI prints
    it and exits with ``code`` (2)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# ============================================================================ the acknowledgement log
def _arrow_schemas():
    import pyarrow as pa
    ack = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                     ("leader_epoch", pa.int32()), ("value_sha256", pa.string()), ("ack_time_ms", pa.int64()),
                     ("acks", pa.string()), ("producer", pa.string())])
    location = pa.struct([("partition", pa.int32()), ("offset", pa.int64()), ("leader_epoch", pa.int32())])
    finding = pa.schema(list(ack) + [pa.field("found", pa.list_(location))])
    return ack, finding


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_value(column: str, v):
    """One value of ``column`` normalized (module doc's table); ValueError saying what is wrong otherwise."""
    if v is None:
        if column in ("topic", "partition", "value_sha256"):
            raise ValueError(f"{column} is null")
        return "all" if column == "acks" else None
    if column == "topic":
        if not isinstance(v, str) or not v:
            raise ValueError(f"topic must be a non-empty string, got {v!r}")
        return v
    if column == "partition":
        if not _is_int(v) or not 0 <= v < 2 ** 31:
            raise ValueError(f"partition must be an integer 0..2147483647, got {v!r}")
        return v
    if column == "offset":
        if not _is_int(v) or v >= 2 ** 63:
            raise ValueError(f"offset must be an integer or null, got {v!r}")
        return v if v >= 0 else None  # librdkafka's -1001: no offset known
    if column == "value_sha256":
        if not isinstance(v, str) or len(v) != 64 or not set(v.lower()) <= _HEX:
            raise ValueError(f"value_sha256 must be 64 hex digits (the SHA-256 of the value), got {v!r}")
        return v.lower()
    if column == "acks":
        text = str(v).strip().lower() if isinstance(v, (str, int)) and not isinstance(v, bool) else None
        if text in ("all", "-1"):
            return "all"
        if text == "1":
            return "1"
        raise ValueError(f"acks must be \"all\" or \"1\" (or -1 / 1), got {v!r}")
    if column in ("leader_epoch", "ack_time_ms"):
        if not _is_int(v) or not -2 ** 31 <= v < (2 ** 31 if column == "leader_epoch" else 2 ** 63):
            raise ValueError(f"{column} must be an integer or null, got {v!r}")
        return v
    if column == "producer":
        return str(v)
    raise AssertionError(column)


def _normalize(columns: dict[str, list], n_rows: int, path: str, unit: str, numbers: list[int] | None = None):
    """The acknowledgement table (:data:`ACK_COLUMNS`, Arrow) from ``{column: values}``; ``unit``
    ("row"/"line") and ``numbers`` (line numbers) name a bad value's place."""
    import pyarrow as pa
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        have = ", ".join(sorted(columns)) or "none"
        raise AuditError(f"{path}: no column {missing[0]!r} (an acknowledgement log needs "
                         f"{', '.join(REQUIRED_COLUMNS)}; it has {have})")
    ack_schema, _ = _arrow_schemas()
    out = {}
    for column in ACK_COLUMNS:
        values = columns.get(column)
        if values is None:
            out[column] = ["all"] * n_rows if column == "acks" else [None] * n_rows
            continue
        checked = []
        for i, v in enumerate(values):
            try:
                checked.append(_check_value(column, v))
            except ValueError as exc:
                raise AuditError(f"{path} {unit} {numbers[i] if numbers else i + 1}: {exc}") from None
        out[column] = checked
    return pa.table(out, schema=ack_schema)


def _read_json_lines(path: str) -> tuple[dict[str, list], int, list[int]]:
    rows, numbers = [], []
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise AuditError(f"{path} line {number}: not JSON ({exc.msg}); an acknowledgement log is "
                                     "Parquet or JSON lines (one object per line)") from None
                if not isinstance(obj, dict):
                    raise AuditError(f"{path} line {number}: a JSON lines acknowledgement log has one object per "
                                     f"line, got {type(obj).__name__}")
                rows.append(obj)
                numbers.append(number)
    except UnicodeDecodeError:
        raise AuditError(f"{path}: neither Parquet nor JSON lines (not UTF-8 text)") from None
    present = set().union(*rows) if rows else set()
    # A key absent from a line is null there; a column is missing when no line has it.
    columns = {c: [r.get(c) for r in rows] for c in ACK_COLUMNS if c in present}
    if not rows:
        columns = {c: [] for c in REQUIRED_COLUMNS}
    return columns, len(rows), numbers


def read_acks(path: str, topic: str):
    """Read and check the acknowledgement log at ``path`` (module doc: Parquet file or directory, or JSON
    lines). Returns ``(table, other)``: the rows of ``topic`` as an Arrow table of :data:`ACK_COLUMNS`
    (``partition`` int32, ``offset`` int64 or null, ``leader_epoch`` int32, ``value_sha256`` lowercase hex,
    ``ack_time_ms`` int64, ``acks`` "all"/"1", strings otherwise), in the file's order, and the number of
    rows of other topics. AuditError (one line, naming the problem) for a missing or unreadable file, a
    missing column, a bad value, or a file whose rows are all of other topics."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if not os.path.exists(path):
        raise AuditError(f"--acks {path}: no such file")
    parquet = os.path.isdir(path)
    if not parquet:
        try:
            with open(path, "rb") as fh:
                parquet = fh.read(4) == b"PAR1"
        except OSError as exc:
            raise AuditError(f"--acks {path}: cannot read it: {exc.strerror or exc}") from None
    if parquet:
        try:
            table = pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
            raise AuditError(f"--acks {path}: cannot read it as Parquet: {str(exc).splitlines()[0]}") from None
        names = set(table.column_names)
        columns = {c: table.column(c).to_pylist() for c in ACK_COLUMNS if c in names}
        acks = _normalize(columns, table.num_rows, path, "row")
    else:
        try:
            columns, n, numbers = _read_json_lines(path)
        except OSError as exc:
            raise AuditError(f"--acks {path}: cannot read it: {exc.strerror or exc}") from None
        acks = _normalize(columns, n, path, "line", numbers)
    if acks.num_rows == 0:
        return acks, 0
    mask = pc.equal(acks.column("topic"), topic)
    mine = acks.filter(mask)
    if mine.num_rows == 0:
        topics = sorted(set(acks.column("topic").to_pylist()))
        shown = ", ".join(topics[:5]) + (f" and {len(topics) - 5} more" if len(topics) > 5 else "")
        raise AuditError(f"--acks {path} has no acknowledgement for topic {topic!r} (its topics: {shown})")
    return mine, acks.num_rows - mine.num_rows


def ack_tuples(table) -> list[tuple]:
    """The rows of an acknowledgement table (:func:`read_acks`) as tuples in :data:`ACK_COLUMNS` order."""
    return list(zip(*(table.column(c).to_pylist() for c in ACK_COLUMNS), strict=True))


# ======================================================================================== the rule
def bucket_of(value_sha256: str | None, buckets: int) -> int:
    """The bucket of a value hash (its first 8 hex digits modulo ``buckets``; bucket 0 for no hash)."""
    return int(value_sha256[:8], 16) % buckets if value_sha256 else 0


def audit_rows(acks: Iterable[tuple], records: Iterable[tuple]) -> tuple[list[dict], int, int]:
    """The rule (module doc) over one set of value hashes: ``acks`` are tuples in :data:`ACK_COLUMNS`
    order (normalized as :func:`read_acks` gives them), ``records`` are the topic's records as
    ``(topic, partition, offset, leader_epoch, value_sha256 or None)``. Every acknowledgement and record
    of a value hash must be in the same call (any split by hash gives the same findings: that is how
    Spark runs it, one call per bucket).

    Returns ``(findings, records, records_without_value)``: ``findings`` a list of dicts with ``kind``
    (one of :data:`FINDING_KINDS`), the acknowledgement's :data:`ACK_COLUMNS` (null but ``topic`` and
    ``value_sha256`` for a duplicate never acknowledged) and ``found``, the sorted list of
    ``{"partition", "offset", "leader_epoch"}`` where the value is; plus the number of records seen and how
    many of them had no value."""
    where: dict[str, list[tuple]] = {}
    topics: dict[str, str] = {}
    n = without = 0
    for topic, partition, offset, epoch, h in records:
        n += 1
        if h is None:
            without += 1
            continue
        where.setdefault(h, []).append((partition, offset, epoch))
        topics.setdefault(h, topic)
    for locations in where.values():
        locations.sort(key=lambda loc: (loc[0], loc[1]))

    def found(h: str) -> list[dict]:
        return [{"partition": p, "offset": o, "leader_epoch": e} for p, o, e in where.get(h, ())]

    out: list[dict] = []
    acked: dict[str, list[tuple]] = {}
    for ack in acks:
        row = dict(zip(ACK_COLUMNS, ack, strict=True))
        h = row["value_sha256"]
        acked.setdefault(h, []).append(ack)
        locations = where.get(h)
        if not locations:
            out.append({"kind": "lost", **row, "found": []})
        elif row["offset"] is not None:
            if not any(p == row["partition"] and o == row["offset"] for p, o, _ in locations):
                out.append({"kind": "misplaced", **row, "found": found(h)})
        elif not any(p == row["partition"] for p, _, _ in locations):
            out.append({"kind": "misplaced", **row, "found": found(h)})
    for h, locations in where.items():
        if len(locations) < 2:
            continue
        rows = acked.get(h) or [tuple(topics[h] if c == "topic" else h if c == "value_sha256" else None
                                      for c in ACK_COLUMNS)]
        for ack in rows:
            out.append({"kind": "duplicated", **dict(zip(ACK_COLUMNS, ack, strict=True)), "found": found(h)})
    return out, n, without


def _finding_order(f: dict) -> tuple:
    return (FINDING_KINDS.index(f["kind"]), f["partition"] if f["partition"] is not None else -1,
            f["offset"] if f["offset"] is not None else -1, f["value_sha256"], f["producer"] or "",
            f["ack_time_ms"] if f["ack_time_ms"] is not None else -1)


def merge_buckets(results: Iterable[tuple[list[dict], int, int]]) -> tuple[list[dict], int, int]:
    """The per-bucket results of :func:`audit_rows` as one: findings concatenated and sorted (kind, then
    partition, offset, value hash), counts summed."""
    findings, n, without = [], 0, 0
    for f, k, w in results:
        findings.extend(f)
        n += k
        without += w
    findings.sort(key=_finding_order)
    return findings, n, without


def split_findings(findings: list[dict]) -> dict:
    """``{"lost": table, "misplaced": table, "duplicated": table}``: Arrow tables of :data:`ACK_COLUMNS` plus
    ``found`` (list of struct partition int32, offset int64, leader_epoch int32), in ``findings``' order."""
    import pyarrow as pa
    _, finding_schema = _arrow_schemas()
    out = {}
    for kind in FINDING_KINDS:
        rows = [{k: v for k, v in f.items() if k != "kind"} for f in findings if f["kind"] == kind]
        out[kind] = pa.Table.from_pylist(rows, schema=finding_schema)
    return out


def exit_code(lost_all: int) -> int:
    """1 when the topic is not safe (:func:`kraftlog.verdict.is_safe`: here, an acks=all acknowledged
    record is lost; the audit sees no invariant and no consumer's truncation), else 0 (acks=1 losses
    never fail: acks=1 promises nothing once the leader fails)."""
    return 0 if is_safe({"lost_acked": lost_all, "invariant_violations": 0, "undetected_truncations": 0}) else 1


def summarize(topic: str, acks_file: str, acks, findings: list[dict], records: int, without_value: int = 0,
              other_topics: int = 0, **extra) -> dict:
    """summary.json (module doc) from the acknowledgement table of ``topic`` (:func:`read_acks`), the
    merged findings and the record counts; ``extra`` keys are added at the end."""
    kinds = acks.column("acks").to_pylist()
    lost = {"all": 0, "1": 0}
    for f in findings:
        if f["kind"] == "lost":
            lost[f["acks"]] += 1
    summary = {
        "topic": topic,
        "acks_file": acks_file,
        "acknowledged": {"all": kinds.count("all"), "1": kinds.count("1")},
        "records_in_topic": records,
        "lost": lost,
        "duplicated": len({f["value_sha256"] for f in findings if f["kind"] == "duplicated"}),
        "misplaced": sum(1 for f in findings if f["kind"] == "misplaced"),
        "exit_code": exit_code(lost["all"]),
        "records_without_value": without_value,
        "acks_other_topics": other_topics,
    }
    summary.update(extra)
    return summary


# ========================================================================================= the job
def _check_bootstrap(bootstrap: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """AuditError (one line) when ``bootstrap`` is malformed or none of its addresses accepts a TCP
    connection within ``timeout_s``."""
    from ..net.client import parse_address
    from .campaign import unreachable
    addresses = []
    for item in bootstrap.split(","):
        if item.strip():
            try:
                addresses.append(parse_address(item))
            except ValueError as exc:
                raise AuditError(f"--bootstrap-server: {exc}") from None
    if not addresses:
        raise AuditError("--bootstrap-server names no HOST:PORT")
    errors = unreachable(addresses, timeout_s)
    if errors:
        raise AuditError(f"cannot reach --bootstrap-server {bootstrap} ({'; '.join(errors)}): is the cluster "
                         "running, and are the host and port right?")


def _plan(bootstrap: str, topic: str) -> tuple[dict, dict]:
    """On the driver: the topic's partitions, and for each its log start offset and HWM with the leader
    epoch of record HWM-1. Returns ``(starts {p: offset}, ends {p: FetchPosition})``."""
    from .offsets import EARLIEST, KraftlogClient, SourceError, SourceOptions
    try:
        with KraftlogClient(bootstrap, timeout_s=CONNECT_TIMEOUT_S * 2, retry_timeout_s=RETRY_TIMEOUT_S,
                            client_id="kraftlog-audit") as client:
            keys = client.topic_partitions(SourceOptions(bootstrap=bootstrap, topics=(topic,)))
            if not keys:
                raise AuditError(f"topic {topic!r} does not exist on {bootstrap}")
            starts = client.list_offsets(keys, EARLIEST)
            ends = client.latest_positions(keys)
    except SourceError as exc:
        raise AuditError(f"cannot plan the read of {topic!r} on {bootstrap}: {exc}") from None
    except OSError as exc:
        raise AuditError(f"cannot plan the read of {topic!r} on {bootstrap}: {type(exc).__name__}: {exc}") from None
    return {p: starts[(t, p)] for t, p in keys}, {p: ends[(t, p)] for t, p in keys}


def _keyed_record(buckets: int, row) -> tuple[int, tuple]:
    h = row[4]
    return bucket_of(h, buckets), (row[0], row[1], row[2], row[3], h)


def _keyed_ack(buckets: int, ack: tuple) -> tuple[int, tuple]:
    return bucket_of(ack[4], buckets), ack


def _audit_bucket(item) -> tuple[list[dict], int, int]:
    _, (acks, records) = item
    return audit_rows(list(acks), list(records))


def _spark_audit(spark, bootstrap: str, topic: str, acks_rows: list[tuple], starts: dict, ends: dict):
    """The Spark job (module doc): returns :func:`merge_buckets` of every bucket's :func:`audit_rows`."""
    from pyspark.sql import functions as F

    from .offsets import offsets_to_json
    from .source import register

    register(spark)
    sc = spark.sparkContext
    expected = sum(max(0, ends[p].offset - starts[p]) for p in ends)
    parallelism = max(1, sc.defaultParallelism)
    buckets = max(parallelism, -(-(expected + len(acks_rows)) // ROWS_PER_BUCKET))
    ending = json.dumps(offsets_to_json({(topic, p): e for p, e in ends.items()}))
    records = (spark.read.format("kraftlog").option("bootstrap.servers", bootstrap).option("subscribe", topic)
               .option("startingOffsets", "earliest").option("endingOffsets", ending)
               .option("retryTimeoutMs", str(int(RETRY_TIMEOUT_S * 1000))).load()
               .select("topic", "partition", "offset", "leaderEpoch", F.sha2(F.col("value"), 256).alias("h")))
    keyed_records = records.rdd.map(partial(_keyed_record, buckets))
    keyed_acks = sc.parallelize(acks_rows, min(buckets, max(1, len(acks_rows) // 10_000 + 1))) \
        .map(partial(_keyed_ack, buckets))
    sc.setJobDescription(f"kraftlog audit of {topic}")
    results = keyed_acks.cogroup(keyed_records, numPartitions=buckets).map(_audit_bucket).collect()
    return merge_buckets(results)


def _write_atomically(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def _write_outputs(out: Path, findings: list[dict], summary: dict) -> None:
    import pyarrow.parquet as pq
    for kind, table in split_findings(findings).items():
        _write_atomically(out / f"{kind}.parquet", lambda p, t=table: pq.write_table(t, p))
    _write_atomically(out / "summary.json",
                      lambda p: p.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))


def run_audit(bootstrap: str, topic: str, acks_file: str, out: str | os.PathLike = DEFAULT_OUT,
              master: str = DEFAULT_MASTER, progress=lambda line: None) -> dict:
    """Run the audit (module doc) and write its outputs into ``out``; returns summary.json's dict.
    Everything that can be checked before Spark starts is checked first: ``out`` writable, the
    acknowledgement log (:func:`read_acks`), the bootstrap servers (a TCP connect within
    :data:`CONNECT_TIMEOUT_S`), the topic and its offsets, Java, a ``spark://``/``k8s://`` master. The
    SparkSession (and the JVM pyspark launched for it) is stopped before this returns or raises.
    AuditError (one line) when it cannot run; KeyboardInterrupt passes through (Spark stopped)."""
    from ..campaign.outputs import CampaignError, check_out
    from .campaign import _check_java, _jvm_error, _short_error, _start_spark, _stop_spark, check_master

    started = time.perf_counter()
    out = Path(out)
    try:
        check_out(out)
    except CampaignError as exc:
        raise AuditError(str(exc)) from None
    acks, other_topics = read_acks(acks_file, topic)
    rows = ack_tuples(acks)
    _check_bootstrap(bootstrap)
    starts, ends = _plan(bootstrap, topic)
    read_offsets = {f"{topic}-{p}": [starts[p], ends[p].offset] for p in sorted(ends)}
    try:
        _check_java()
        check_master(master)
    except CampaignError as exc:
        raise AuditError(str(exc)) from None
    progress(f"audit: {len(rows):,} acknowledgements of {topic} in {acks_file}; reading {topic} "
             f"({len(ends)} partitions, {sum(e.offset - starts[p] for p, e in ends.items()):,} records below the "
             f"HWMs) from {bootstrap} on Spark {master}")
    log = out / "spark.log"
    log.unlink(missing_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="kraftlog-audit-"))
    spark = jvm = None
    spark_started = time.perf_counter()
    try:
        try:
            spark, jvm = _start_spark(master, out, tmp, app_name="kraftlog-audit")
        except Exception as exc:  # noqa: BLE001 - any failure to start is one line
            why = _jvm_error(log, 0) or _short_error(exc)
            raise AuditError(f"could not start Spark on {master}: {why} (see {log})") from None
        progress(f"audit: Spark started in {time.perf_counter() - spark_started:.1f} s; running the job")
        job_started = time.perf_counter()
        try:
            findings, n_records, without = _spark_audit(spark, bootstrap, topic, rows, starts, ends)
            progress(f"audit: the job took {time.perf_counter() - job_started:.1f} s")
        except Exception as exc:  # noqa: BLE001 - a failed job (DataLossError, unreachable leader...) is one line
            text = _short_error(exc)
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"\nthe audit job failed:\n{exc}\n")
            raise AuditError(f"the audit's Spark job failed on {master}: {text} (details in {log})") from None
    finally:
        if spark is not None:
            _stop_spark(spark, jvm, log)
        shutil.rmtree(tmp, ignore_errors=True)
    summary = summarize(topic, os.path.abspath(acks_file), acks, findings, n_records, without, other_topics,
                        bootstrap_servers=bootstrap, master=master, read_offsets=read_offsets,
                        wall_s=round(time.perf_counter() - started, 2))
    _write_outputs(out, findings, summary)
    return summary


# ===================================================================================== the command
def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def print_summary(summary: dict, out: Path) -> None:
    """The summary as a table on stdout (160 columns outside a terminal), then the verdict and the files."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    s = summary
    console.print(f"kraftlog audit: topic {s['topic']} against {s['acks_file']}", soft_wrap=True, markup=False)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("", justify="left", no_wrap=True)
    table.add_column("acks=all", justify="right", no_wrap=True)
    table.add_column("acks=1", justify="right", no_wrap=True)
    table.add_row("acknowledged", f"{s['acknowledged']['all']:,}", f"{s['acknowledged']['1']:,}")
    table.add_row("lost", f"{s['lost']['all']:,}", f"{s['lost']['1']:,}")
    console.print(table)
    console.print(f"records in the topic {s['records_in_topic']:,} (read "
                  + ", ".join(f"{k} offsets {a}..{b - 1}" if b > a else f"{k} none"
                            for k, (a, b) in s.get("read_offsets", {}).items())
                  + f"); duplicated value hashes {s['duplicated']:,}; misplaced acknowledgements {s['misplaced']:,}",
                  soft_wrap=True, markup=False)
    if s.get("acks_other_topics"):
        console.print(f"{s['acks_other_topics']:,} acknowledgement(s) of other topics left out", markup=False)
    if s["lost"]["all"]:
        console.print(f"verdict: {s['lost']['all']:,} acknowledged acks=all record(s) LOST (exit 1)",
                      style="red", markup=False)
    else:
        console.print("verdict: nothing acknowledged with acks=all lost"
                      + (f" ({s['lost']['1']:,} acks=1 record(s) lost: acks=1 promises nothing after a leader "
                         "failure)" if s["lost"]["1"] else ""), style="green", markup=False, soft_wrap=True)
    console.print("written: " + ", ".join(str(out / f) for f in ("lost.parquet", "misplaced.parquet",
                                                                  "duplicated.parquet", "summary.json")),
                  soft_wrap=True, markup=False)


_EXIT_CODES = """\b
Exit codes:
  0    no acks=all acknowledged record lost (acks=1 losses, duplicates
       and misplaced records are reported)
  1    an acks=all acknowledged record is lost
  2    bad input or the audit could not run, in one line: no --acks file,
       an unreadable one or a missing column, an unreachable
       --bootstrap-server, an unknown topic, no Java, Spark failing
  130  interrupted (Ctrl-C; 143 for SIGTERM)"""


@click.command("audit", epilog=_EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT[,...]",
              help="The cluster to read the topic from.")
@click.option("--topic", required=True, help="The topic to audit.")
@click.option("--acks", "acks_file", required=True, metavar="FILE",
              help="The acknowledgement log: Parquet (kraftlog chaos's acks.parquet) or JSON lines with "
                   "topic, partition, offset, value_sha256 and optionally acks (default all).")
@click.option("--out", default=DEFAULT_OUT, show_default=True, type=click.Path(file_okay=False),
              help="Output directory: lost.parquet, misplaced.parquet, duplicated.parquet, summary.json.")
@click.option("--master", default=DEFAULT_MASTER, show_default=True, help="Spark master URL.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of the table.")
def audit(bootstrap: str, topic: str, acks_file: str, out: str, master: str, as_json: bool) -> None:
    """Read TOPIC back on Spark and join it with a producer's acknowledgement log: list the acknowledged
    records that are lost (their value nowhere in the topic), misplaced (not at the acknowledged
    partition/offset) and the values present more than once (duplicated)."""
    with sigterm_interrupts() as term:
        try:
            summary = run_audit(bootstrap, topic, acks_file, out, master,
                                progress=lambda line: print(line, file=sys.stderr, flush=True))
        except AuditError as exc:
            _fail(str(exc), exc.code)
        except KeyboardInterrupt:
            click.echo("interrupted: Spark stopped, nothing written", err=True)
            sys.exit(128 + (term.signum or signal.SIGINT))
    if as_json:
        click.echo(json.dumps(summary))
    else:
        print_summary(summary, Path(out))
    sys.exit(summary["exit_code"])


if __name__ == "__main__":  # pragma: no cover - ``python -m kraftlog.spark.audit`` before it is registered
    audit()
