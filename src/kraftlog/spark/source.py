"""``spark.read.format("kraftlog")`` and ``spark.readStream.format("kraftlog")``: kraftlog topics as
DataFrames, with leader-epoch-aware (KIP-320) streaming offsets (issue 14).

Register the source once per SparkSession, then use it as Spark's Kafka source::

    import kraftlog.spark.source
    kraftlog.spark.source.register(spark)          # spark.dataSource.register(KraftlogDataSource)
    df = (spark.read.format("kraftlog")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "demo").load())
    query = (spark.readStream.format("kraftlog")
             .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "demo")
             .option("startingOffsets", "earliest").option("eventsPath", "/data/q1/kraftlog-events").load()
             .writeStream.format("parquet").option("path", "/data/q1/out")
             .option("checkpointLocation", "/data/q1/checkpoint").trigger(availableNow=True).start())

Options: :class:`kraftlog.spark.offsets.SourceOptions` (Spark's Kafka source's names, plus
``validateOffsets`` and ``eventsPath``). Columns (:data:`SCHEMA`), as Spark's Kafka source's plus one:
``key`` and ``value`` (binary, null when the record has none), ``topic`` (string), ``partition`` (int),
``offset`` (long), ``timestamp`` (timestamp: the record's CreateTime, or the batch's LogAppendTime),
``timestampType`` (int: 0 CreateTime, 1 LogAppendTime) and ``leaderEpoch`` (int: the partition leader
epoch of the record's batch, stamped by the leader that appended it).

**Batch reads.** ``partitions()`` (on the driver) resolves ``startingOffsets`` (default earliest) and
``endingOffsets`` (default latest = the HWM) per partition and plans one Spark input partition per
partition range, several when a range has more than ``maxRecordsPerPartition`` records. Each task reads
its range from the partition's current leader (:meth:`KraftlogClient.read`): Fetch below the HWM,
following leader changes.

**Streaming offsets** (checkpointed by Spark in ``<checkpoint>/offsets/<batch>``) are
``{"<topic>": {"<partition>": {"offset": N, "leaderEpoch": E}}}``, E the leader epoch of record N-1
(KIP-320's position; null for N = 0). ``latestOffset(start, limit)`` answers each partition's HWM with
the epoch of record HWM-1, limited by the engine's ``ReadMaxRows`` (``maxOffsetsPerTrigger``, shared as
Spark's Kafka source shares it) and, under ``Trigger.AvailableNow``, by the HWMs seen when the query
started (:meth:`KraftlogStreamReader.prepareForTriggerAvailableNow`).

**Truncation under the checkpoint (KIP-320).** Before a micro-batch is planned (``latestOffset`` and
again ``partitions``, both on the driver), every start position with an epoch is validated with
OffsetForLeaderEpoch(E) against the current leader. If the leader's end offset for E is below N, the
log was truncated under the checkpoint — an unclean election chose a replica without records
``divergence..N-1``, and the records now at those offsets are others:

* ``failOnDataLoss=true`` (default): the query fails with :class:`~kraftlog.spark.offsets.DataLossError`
  naming topic, partition, checkpoint offset and epoch, and the divergence offset;
* ``failOnDataLoss=false``: a warning is logged (Python ``logging``, logger ``kraftlog.spark.source``, in
  the driver's Python worker), one row is appended to the events table (Parquet files in ``eventsPath``,
  default ``./kraftlog-events``: :func:`~kraftlog.spark.offsets.write_events`), and the batch reads from
  the divergence offset: the records that replaced those the query had read are read.

Spark's Kafka source does neither: with ``validateOffsets=false`` this source reads from N whatever the
log holds, silently skipping the new records between the divergence offset and N (and, as Spark's,
reports data loss only when the log end falls below N). The check is repeated by each task at its
range's end: a record whose batch epoch differs from the planned end epoch means the log was truncated
and rewritten between planning and reading (``failOnDataLoss``: fail, else a warning in the executor log).

A truncation found once is remembered by the driver's stream reader (for that query run), so
``latestOffset`` and ``partitions`` resume at the same offset and the event is recorded once; a query
restarted before its batch committed records it again. ``commit`` does nothing (Spark keeps the
offsets; the cluster keeps no consumer state for the source), so calling it twice is harmless.

The Python Data Source API offers no custom metrics hook: detected truncations are visible in the log,
the events table and the error, not in the query's progress.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from ..client.position import EpochEndOffset, FetchPosition, Validation, validate_position
from ..protocol.errors import Errors
from .offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    Key,
    KraftlogClient,
    SourceError,
    SourceOptions,
    Truncation,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_range,
    write_events,
)

__all__ = ["KraftlogDataSource", "KraftlogBatchReader", "KraftlogStreamReader", "RangePartition", "SCHEMA",
           "register", "DataLossError", "SourceError"]

log = logging.getLogger("kraftlog.spark.source")

#: The source's columns (Spark's Kafka source's, without headers, plus ``leaderEpoch``).
SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("leaderEpoch", IntegerType()),
])
#: Rows per Arrow record batch a task hands to Spark.
ARROW_BATCH_ROWS = 8192


def register(spark) -> None:
    """Make ``format("kraftlog")`` available in ``spark`` (``spark.dataSource.register``)."""
    spark.dataSource.register(KraftlogDataSource)


class KraftlogDataSource(DataSource):
    """The ``kraftlog`` data source (batch and streaming reads; no writes)."""

    @classmethod
    def name(cls) -> str:
        return "kraftlog"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> KraftlogBatchReader:
        return KraftlogBatchReader(SourceOptions.parse(self.options, streaming=False), _check_schema(schema))

    def streamReader(self, schema: StructType) -> KraftlogStreamReader:
        return KraftlogStreamReader(SourceOptions.parse(self.options, streaming=True), _check_schema(schema))


def _check_schema(schema: StructType) -> StructType:
    if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in SCHEMA.fields]:
        raise ValueError(f"the kraftlog source has a fixed schema ({SCHEMA.simpleString()}); got "
                         f"{schema.simpleString()}")
    return schema


@dataclass
class RangePartition(InputPartition):
    """One Spark input partition: offsets ``start <= offset < end`` of ``topic``-``partition``.
    ``end_epoch``: the leader epoch of record ``end - 1`` when the range was planned (only on the last
    range of a partition's micro-batch; None otherwise or when unknown), checked by the task."""

    topic: str
    partition: int
    start: int
    end: int
    end_epoch: int | None = None

    def __post_init__(self) -> None:
        self.value = (self.topic, self.partition, self.start, self.end)


# ------------------------------------------------------------------------------------ shared planning
class _Planner:
    """What both readers do on the driver: resolve offset options, validate positions (KIP-320), plan
    ranges. Holds a :class:`KraftlogClient` opened on first use (never pickled)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.opts = options
        self.schema = schema
        self._client: KraftlogClient | None = None
        #: truncations found by this process: (key, checkpoint position) -> Truncation
        self._truncations: dict[tuple[Key, FetchPosition], Truncation] = {}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> KraftlogClient:
        if self._client is None:
            self._client = KraftlogClient(self.opts.bootstrap, retry_timeout_s=self.opts.retry_timeout_ms / 1000)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def resolve(self, keys: list[Key], spec, name: str) -> dict[Key, FetchPosition]:
        """Positions for ``keys`` from an offsets option (``"earliest"``, ``"latest"`` or
        ``{key: FetchPosition}`` with -2/-1 meaning earliest/latest). An explicit offset without an epoch gets
        the epoch of its record N-1 as the leader has it now (None above the HWM). ValueError when the
        JSON leaves out a partition (as Spark's Kafka source asserts)."""
        if isinstance(spec, dict):
            missing = [k for k in keys if k not in spec]
            if missing:
                raise ValueError(f"{name} must give every partition of the subscription: missing "
                                 + ", ".join(f"{t}-{p}" for t, p in missing))
            wanted = {k: spec[k] for k in keys}
        else:
            wanted = {k: FetchPosition(EARLIEST if spec == "earliest" else LATEST) for k in keys}
        out: dict[Key, FetchPosition] = {}
        earliest = [k for k, p in wanted.items() if p.offset == EARLIEST]
        if earliest:
            for k, off in self.client.list_offsets(earliest, EARLIEST).items():
                out[k] = FetchPosition(off, None)
        rest = [k for k, p in wanted.items() if p.offset != EARLIEST]
        if rest:
            latest = self.client.latest_positions(rest)
            lookup = {}
            for k in rest:
                p = wanted[k]
                if p.offset == LATEST:
                    out[k] = latest[k]
                elif p.offset < 0:
                    raise ValueError(f"{name}: offset {p.offset} of {k[0]}-{k[1]} is not an offset, -2 or -1")
                elif p.offset_epoch is not None or p.offset == 0:
                    out[k] = p
                elif p.offset == latest[k].offset:
                    out[k] = latest[k]
                elif p.offset < latest[k].offset:
                    lookup[k] = p.offset
                else:
                    out[k] = p  # above the HWM: no epoch to know yet
            for k, epoch in self.client.epochs_before(lookup).items():
                out[k] = FetchPosition(lookup[k], epoch)
        return out

    def validate(self, positions: Mapping[Key, FetchPosition]) -> dict[Key, FetchPosition]:
        """KIP-320 validation of ``positions`` (``validateOffsets``): each position with an epoch and an
        offset above 0 is checked with OffsetForLeaderEpoch against the current leader
        (:func:`~kraftlog.client.position.validate_position`, ``failOnDataLoss=false`` its auto reset
        policy). Returns the positions to read from: unchanged, or the divergence offset
        of a truncation. New truncations: with ``failOnDataLoss`` DataLossError naming each; else a
        warning and an events row each (:func:`write_events` in ``eventsPath``)."""
        out = dict(positions)
        if not self.opts.validate_offsets:
            return out
        ask: dict[Key, int] = {}
        for k, p in positions.items():
            known = self._truncations.get((k, p))
            if known is not None:
                out[k] = known.resume
            elif p.offset_epoch is not None and p.offset > 0:
                ask[k] = p.offset_epoch
        if not ask:
            return out
        answers = self.client.end_offsets_for(ask)
        found, fail = [], False
        for k, (epoch, end) in sorted(answers.items()):  # end_offsets_for answers without errors
            # failOnDataLoss=false is the auto reset policy: resume at the divergence (or the log start)
            outcome = validate_position(positions[k], EpochEndOffset(Errors.NONE, epoch, end),
                                        reset_policy=not self.opts.fail_on_data_loss)
            truncation = Truncation.of(k, outcome)
            if truncation is not None:
                found.append(truncation)
                fail = fail or outcome.validation is Validation.LOG_TRUNCATION
        if not found:
            return out
        unknown = [(t.topic, t.partition) for t in found if t.divergence_offset is None]
        if unknown:  # no divergence offset: resume at the log start offset (nothing later can be trusted)
            starts = self.client.list_offsets(unknown, EARLIEST)
            found = [replace(t, resume=FetchPosition(starts[(t.topic, t.partition)], None))
                     if t.divergence_offset is None else t for t in found]
        if fail:
            raise DataLossError(
                "KIP-320 log truncation under the query's offsets: "
                + "; ".join(t.describe() for t in found)
                + ". The records from the divergence offset on are not those the query read (an unclean "
                  "leader election). Set failOnDataLoss=false to resume at the divergence offset (the log "
                  "start offset when it is unknown), recorded in eventsPath.", tuple(found))
        for t in found:
            log.warning("KIP-320 log truncation: %s; %s (offset %d)", t.describe(), t.action, t.resume.offset)
            self._truncations[((t.topic, t.partition), t.checkpoint)] = t
            out[(t.topic, t.partition)] = t.resume
        try:
            write_events(self.opts.events_path, found)
        except OSError as exc:
            log.error("could not write the kraftlog events table in %s: %s", self.opts.events_path, exc)
        return out

    def data_loss(self, message: str) -> None:
        """Spark's Kafka source's ``reportDataLoss``: raise with ``failOnDataLoss``, else warn."""
        if self.opts.fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to go on when data may have been lost.")
        log.warning("%s (failOnDataLoss=false: going on)", message)

    def ranges(self, starts: Mapping[Key, FetchPosition], ends: Mapping[Key, FetchPosition]) -> list[RangePartition]:
        """Input partitions for ``[starts[k], ends[k])`` of every key of ``ends``: split at
        ``maxRecordsPerPartition``; an end below its start is data loss (Spark's Kafka source's "offset
        was changed" check) and is skipped."""
        out = []
        for k in sorted(ends):
            s, e = starts[k], ends[k]
            if e.offset < s.offset:
                self.data_loss(f"Partition {k[0]}-{k[1]}'s offset was changed from {s.offset} to {e.offset}, "
                               "some data may have been missed (the log end fell below the position)")
                continue
            pieces = split_range(s.offset, e.offset, self.opts.max_records_per_partition)
            for i, (a, b) in enumerate(pieces):
                out.append(RangePartition(k[0], k[1], a, b, e.offset_epoch if i == len(pieces) - 1 else None))
        return out

    def read(self, part: RangePartition) -> Iterator:
        """A task: the records of ``part`` as Arrow record batches of :data:`SCHEMA`."""
        yield from _read_range(self.opts, self.schema, part)


def _read_range(opts: SourceOptions, schema: StructType, part: RangePartition) -> Iterator:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    if not isinstance(part, RangePartition) or part.end <= part.start:
        return  # Spark runs one task with a plain InputPartition(None) when partitions() planned none
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    types = [f.type for f in arrow_schema]
    key = (part.topic, part.partition)
    cols: list[list] = [[] for _ in range(8)]
    last_epoch = None
    lost = None
    with KraftlogClient(opts.bootstrap, retry_timeout_s=opts.retry_timeout_ms / 1000) as client:
        client.refresh([part.topic])
        records = client.read(key, part.start, part.end, opts.poll_timeout_ms / 1000)
        while True:
            try:
                offset, epoch, ts_type, rec, ts_ms = next(records)
            except StopIteration:
                break
            except DataLossError as exc:  # the log end fell below the range since it was planned
                if opts.fail_on_data_loss:
                    raise DataLossError(f"{exc}. Set failOnDataLoss=false to go on.") from None
                lost = exc
                break
            for col, v in zip(cols, (rec.key, rec.value, part.topic, part.partition, offset, ts_ms * 1000, ts_type,
                                     epoch), strict=True):
                col.append(v)
            last_epoch = epoch
            if len(cols[0]) >= ARROW_BATCH_ROWS:
                yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types, strict=True)],
                                                 schema=arrow_schema)
                cols = [[] for _ in range(8)]
    if lost is not None:
        log.warning("%s (failOnDataLoss=false: the rest of the range is skipped)", lost)
    if cols[0]:
        yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types, strict=True)],
                                         schema=arrow_schema)
    if lost is None and opts.validate_offsets and part.end_epoch is not None and last_epoch != part.end_epoch:
        message = (f"{part.topic}-{part.partition}: record {part.end - 1} is in leader epoch {last_epoch} but was "
                   f"in epoch {part.end_epoch} when the batch was planned: the log was truncated and rewritten "
                   "meanwhile (KIP-320)")
        if opts.fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to go on.")
        log.warning("%s (failOnDataLoss=false: going on)", message)


# ------------------------------------------------------------------------------------------ batch reads
class KraftlogBatchReader(_Planner, DataSourceReader):
    """``spark.read.format("kraftlog")``: ``partitions()`` plans on the driver (positions resolved and,
    with ``validateOffsets``, starting positions that carry an epoch validated), ``read`` runs in tasks."""

    def partitions(self) -> list[RangePartition]:
        try:
            keys = self.client.topic_partitions(self.opts)
            if not keys:
                return []
            starts = self.validate(self.resolve(keys, self.opts.starting, "startingOffsets"))
            ends = self.resolve(keys, self.opts.ending, "endingOffsets")
            return self.ranges(starts, ends)
        finally:
            self.close()

    def read(self, partition: RangePartition) -> Iterator:
        return _Planner.read(self, partition)


# -------------------------------------------------------------------------------------- streaming reads
class KraftlogStreamReader(_Planner, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kraftlog")``: offsets as in the module doc. Spark runs
    ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` in one long-lived Python process on
    the driver per query (so found truncations are remembered there), and ``read`` in tasks."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema)
        #: under Trigger.AvailableNow: the positions to stop at (the HWMs when the query started)
        self._target: dict[Key, FetchPosition] | None = None

    def initialOffset(self) -> dict:
        keys = self.client.topic_partitions(self.opts)
        return offsets_to_json(self.resolve(keys, self.opts.starting, "startingOffsets"))

    def getDefaultReadLimit(self):
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: remember every partition's HWM (and its epoch) now; ``latestOffset``
        never goes past them, so the query ends once it has read what was there when it started."""
        self._target = self.client.latest_positions(self.client.topic_partitions(self.opts))

    def _starts(self, start: Mapping, keys: list[Key]) -> dict[Key, FetchPosition]:
        """The positions to read from for ``keys``: ``start`` (the previous batch's end) validated, and the
        earliest offset for partitions new since then (as Spark's Kafka source)."""
        positions = offsets_from_json(start)
        gone = sorted(k for k in positions if k not in keys)
        if gone:
            self.data_loss("partitions " + ", ".join(f"{t}-{p}" for t, p in gone) + " are gone (deleted topics?)")
        new = [k for k in keys if k not in positions]
        known = {k: positions[k] for k in keys if k in positions}
        out = self.validate(known)
        if new:
            out.update(self.resolve(new, "earliest", "startingOffsets"))
        return out

    def latestOffset(self, start: dict, limit) -> dict:
        keys = self.client.topic_partitions(self.opts)
        if self._target is not None:
            keys = [k for k in keys if k in self._target]
        starts = self._starts(start, keys)
        latest = dict(self._target) if self._target is not None else self.client.latest_positions(keys)
        ends: dict[Key, FetchPosition] = {}
        for k in keys:
            s, h = starts[k], latest[k]
            if h.offset < s.offset and (self._target is not None or (
                    self.opts.validate_offsets and s.offset_epoch is not None)):
                ends[k] = s  # a valid position above the HWM (a new leader's HWM lags): nothing new yet
            else:
                ends[k] = h  # below the start without validation: Spark's "offset went back", in partitions()
        if isinstance(limit, ReadMaxRows):
            capped = rate_limit(limit.max_rows, {k: s.offset for k, s in starts.items()},
                                {k: e.offset for k, e in ends.items()})
            lookup = {}
            for k, off in capped.items():
                if off == starts[k].offset:
                    ends[k] = starts[k]
                elif off != ends[k].offset:
                    lookup[k] = off
            for k, epoch in self.client.epochs_before(lookup).items():
                ends[k] = FetchPosition(lookup[k], epoch)
        return offsets_to_json(ends)

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        ends = offsets_from_json(end)
        starts = self._starts(start, sorted(ends))
        return self.ranges(starts, ends)

    def read(self, partition: RangePartition) -> Iterator:
        return _Planner.read(self, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark keeps the offsets in its checkpoint (idempotent)."""

    def stop(self) -> None:
        self.close()
