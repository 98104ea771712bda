"""Offsets, options and the blocking cluster client behind ``spark.read(Stream).format("kraftlog")``.

Nothing here imports pyspark: :mod:`kraftlog.spark.source` holds the Spark classes and calls these.

**Positions (KIP-320).** A partition's position is the consumer's
:class:`~kraftlog.client.position.FetchPosition` ``(offset, offset_epoch)``: ``offset`` N is the next
record to read, ``offset_epoch`` E the leader epoch of the batch holding record N-1 (the epoch of the last
record consumed: KIP-320's position), ``None`` when N is 0 or the epoch is not known.
A streaming query's offsets, which Spark checkpoints in ``<checkpoint>/offsets/<batch>``, are
``{"<topic>": {"<partition>": {"offset": N, "leaderEpoch": E}}}`` (topics sorted, partitions in numeric
order, so that equal offsets serialize to equal JSON).

**Validation (KIP-320's consumer, Kafka's ``SubscriptionState.maybeCompleteValidation``).** Before a
position is read from, the current leader is asked OffsetForLeaderEpoch(E): its answer ``(epoch,
end offset)`` is the end of epoch E *in the leader's log*. An end offset below N means the log was
truncated under the position (an unclean election elected a replica that never had records
``end..N-1``, and whatever was appended since is other records at those offsets): the position is
replaced by the divergence offset ``end`` (with ``epoch``). An undefined answer (-1, -1: the leader knows
no epoch at or below E) is a truncation whose divergence offset is unknown; the resume point is then the
log start offset. The rule is the consumer's (:func:`kraftlog.client.position.validate_position`, with
``failOnDataLoss=false`` as its auto reset policy); :meth:`Truncation.of` makes a detected truncation an
events row; :class:`KraftlogClient.end_offsets_for` asks.

**Spark's Kafka source** (``org.apache.spark.sql.kafka010``) is the model for the options
(:class:`SourceOptions`), the offsets JSON users write (``{"t": {"0": 23}}``, -2 = earliest, -1 =
latest), ``failOnDataLoss`` and ``maxOffsetsPerTrigger`` (:func:`rate_limit` is its ``rateLimit``). It
never validates a position with OffsetForLeaderEpoch: it reads from N whatever the log holds there now,
so after a truncation and regrowth past N it silently skips the new records between the divergence
offset and N. ``validateOffsets=false`` behaves that way here.

**Reads** use :class:`kraftlog.net.client.KafkaConnection` (blocking, one request at a time, every call
with a timeout), one connection per broker: a Spark task reads one fixed offset range of one partition,
which needs no background thread or event loop; leadership changes (NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, LEADER_NOT_AVAILABLE, a refused or broken connection) refresh
Metadata and retry until ``retry_timeout_s``. Fetches are sent with the leader epoch from Metadata
(KIP-320's CurrentLeaderEpoch) and read below the HWM: kraftlog has no transactions, so read_committed
and read_uncommitted see the same records, those below the HWM.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..client.position import FetchPosition, PositionValidation
from ..net.client import KafkaConnection, parse_address
from ..protocol import messages as m
from ..protocol.errors import Errors

__all__ = ["SourceOptions", "KraftlogClient", "SourceError", "DataLossError", "Truncation", "rate_limit", "split_range",
           "offsets_to_json", "offsets_from_json",
           "parse_offsets_option", "write_events", "EVENTS_COLUMNS", "EARLIEST", "LATEST",
           "DEFAULT_MAX_RECORDS_PER_PARTITION", "DEFAULT_EVENTS_PATH", "RESUMED", "RESUMED_EARLIEST"]

#: Spark's Kafka source offsets JSON: -2 = the earliest offset, -1 = the latest (the HWM).
EARLIEST = -2
LATEST = -1
#: ``maxRecordsPerPartition``'s default: a partition range above it is split into several Spark input
#: partitions of at most this many records.
DEFAULT_MAX_RECORDS_PER_PARTITION = 1_000_000
#: Where detected truncations are written without ``eventsPath`` (relative to the Spark driver's working
#: directory: the source cannot know the query's checkpoint location).
DEFAULT_EVENTS_PATH = "kraftlog-events"
#: ``action`` of an events row: the query resumed at the divergence offset (KIP-320's reset to it).
RESUMED = "resumed at divergence"
#: ``action`` when the leader's answer was undefined (no divergence offset): resumed at the log start.
RESUMED_EARLIEST = "resumed at earliest (divergence unknown)"
#: The events table's columns, in order, with their Arrow types (see :func:`write_events`).
EVENTS_COLUMNS = ("time", "topic", "partition", "checkpoint_offset", "checkpoint_leader_epoch",
                  "divergence_offset", "action")

#: Partition errors after which the leader is looked up again and the request retried.
_LEADERSHIP = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
                         Errors.LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID,
                         Errors.OFFSET_NOT_AVAILABLE, Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS,
                         Errors.KAFKA_STORAGE_ERROR})
#: Batch attributes bit 3: the batch's timestamps are LogAppendTime (Kafka's ``TimestampType``).
_LOG_APPEND_TIME = 0x08


class SourceError(RuntimeError):
    """The source cannot go on: a bad option, a topic that does not exist, a partition without a
    leader or a broker that does not answer within the retry timeout, an unexpected error code."""


class DataLossError(SourceError):
    """Records the query should have read are gone or were replaced (``failOnDataLoss=true``, Spark's
    Kafka source's rule). ``truncations``: the :class:`Truncation` s found (KIP-320), empty for other
    losses (offsets out of range, a partition gone)."""

    def __init__(self, message: str, truncations: tuple[Truncation, ...] = ()) -> None:
        super().__init__(message)
        self.truncations = truncations


# ------------------------------------------------------------------------------------------- positions
Key = tuple[str, int]


def offsets_to_json(positions: Mapping[Key, FetchPosition]) -> dict:
    """``{(topic, partition): FetchPosition}`` as the streaming offsets JSON (topics sorted, partitions in
    numeric order: equal positions give equal JSON, which is how Spark sees that nothing is new)."""
    out: dict = {}
    for topic, partition in sorted(positions):
        position = positions[(topic, partition)]
        out.setdefault(topic, {})[str(partition)] = {"offset": position.offset, "leaderEpoch": position.offset_epoch}
    return out


def offsets_from_json(offsets: Mapping | None) -> dict[Key, FetchPosition]:
    """The inverse of :func:`offsets_to_json`; an entry may also be a bare offset (Spark's Kafka form),
    read as a position without an epoch. ValueError for another shape."""
    out: dict[Key, FetchPosition] = {}
    for topic, parts in (offsets or {}).items():
        if not isinstance(parts, Mapping):
            raise ValueError(f"offsets of topic {topic!r} must be an object of partitions, got {parts!r}")
        for p, entry in parts.items():
            out[(topic, int(p))] = _entry_position(topic, p, entry)
    return out


def _entry_position(topic: str, p, entry) -> FetchPosition:
    if isinstance(entry, bool):
        raise ValueError(f"offset of {topic}-{p} must be a number or an object, got {entry!r}")
    if isinstance(entry, int):
        return FetchPosition(entry, None)
    if isinstance(entry, Mapping) and isinstance(entry.get("offset"), int) and not isinstance(entry["offset"], bool):
        epoch = entry.get("leaderEpoch")
        if epoch is not None and (not isinstance(epoch, int) or isinstance(epoch, bool)):
            raise ValueError(f"leaderEpoch of {topic}-{p} must be an integer or null, got {epoch!r}")
        return FetchPosition(entry["offset"], epoch if epoch is None or epoch >= 0 else None)
    raise ValueError(f"offset of {topic}-{p} must be a number or {{\"offset\": N, \"leaderEpoch\": E}}, "
                     f"got {entry!r}")


def parse_offsets_option(name: str, text: str | None, default: str) -> str | dict[Key, FetchPosition]:
    """``startingOffsets`` / ``endingOffsets``: ``"earliest"``, ``"latest"`` or Spark's JSON
    (``{"t": {"0": 23, "1": -2}}``, -2 earliest, -1 latest; or ``{"t": {"0": {"offset": 23,
    "leaderEpoch": 4}}}``). Returns the word or ``{(topic, partition): FetchPosition}`` (offset -2/-1 kept as
    is, resolved later). ValueError naming ``name`` for anything else."""
    value = (text if text is not None else default).strip()
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ValueError(f"{name} must be 'earliest', 'latest' or a JSON object like "
                         f"{{\"topic\": {{\"0\": 23}}}}, got {value!r}") from None
    if not isinstance(parsed, dict) or not parsed:
        raise ValueError(f"{name} must be a non-empty JSON object of topics, got {value!r}")
    try:
        return offsets_from_json(parsed)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


# --------------------------------------------------------------------------------------------- options
def _bool(name: str, text: str | None, default: bool) -> bool:
    if text is None:
        return default
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise ValueError(f"{name} must be true or false, got {text!r}")


def _positive_int(name: str, text: str | None, default: int | None) -> int | None:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {text!r}")
    return value


@dataclass(frozen=True)
class SourceOptions:
    """The source's options, named as Spark's Kafka source names them (case-insensitive):

    * ``kafka.bootstrap.servers`` or ``bootstrap.servers`` (required): ``HOST:PORT[,HOST:PORT...]``;
    * exactly one of ``subscribe`` (comma-separated topics), ``subscribePattern`` (a Python regular
      expression matched against whole topic names from Metadata, as Spark's Java ``Pattern.matches``)
      or ``assign`` (Spark's JSON ``{"t": [0, 1]}``);
    * ``startingOffsets`` (default ``earliest`` for a batch read, ``latest`` for a stream) and, batch
      only, ``endingOffsets`` (default ``latest``): see :func:`parse_offsets_option`. As in Spark,
      ``latest`` / -1 cannot start a batch read and ``earliest`` / -2 cannot end one;
    * ``failOnDataLoss`` (default true): fail on lost records (KIP-320 truncation under the position,
      offsets out of range, partitions gone), else log, record and go on;
    * ``maxOffsetsPerTrigger`` (streaming): records per micro-batch over all partitions;
    * ``maxRecordsPerPartition`` (default 1,000,000): larger partition ranges become several Spark
      input partitions;
    * ``validateOffsets`` (default true; false = Spark's Kafka source: no OffsetForLeaderEpoch check);
    * ``eventsPath`` (default ``./kraftlog-events``): the directory of the truncation events table;
    * ``kafkaConsumer.pollTimeoutMs`` (default 120,000 ms, Spark's): how long a task waits for a range
      to become readable (a leader, an HWM at the range's end) before failing;
    * ``retryTimeoutMs`` (default 30,000 ms): how long the driver retries leader lookups.

    Raises ValueError naming the option for a missing or malformed value."""

    bootstrap: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[Key, ...] = ()
    starting: object = "earliest"
    ending: object = "latest"
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION
    validate_offsets: bool = True
    events_path: str = DEFAULT_EVENTS_PATH
    poll_timeout_ms: int = 120_000
    retry_timeout_ms: int = 30_000

    @classmethod
    def parse(cls, options: Mapping[str, str], streaming: bool) -> SourceOptions:
        opts = {str(k).lower(): (None if v is None else str(v)) for k, v in dict(options).items()}
        bootstrap = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
        if not bootstrap or not bootstrap.strip():
            raise ValueError("option kafka.bootstrap.servers (or bootstrap.servers) is required: HOST:PORT[,...]")
        for address in bootstrap.split(","):
            if address.strip():
                parse_address(address)
        given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
        if len(given) != 1:
            raise ValueError("exactly one of the options subscribe, subscribePattern and assign is required, "
                             f"got {len(given)}")
        topics: tuple[str, ...] = ()
        pattern = None
        assign: tuple[Key, ...] = ()
        if given[0] == "subscribe":
            topics = tuple(sorted({t.strip() for t in opts["subscribe"].split(",") if t.strip()}))
            if not topics:
                raise ValueError("option subscribe names no topic")
        elif given[0] == "subscribepattern":
            pattern = opts["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"subscribePattern {pattern!r} is not a regular expression: {exc}") from None
        else:
            try:
                parsed = json.loads(opts["assign"])
                assign = tuple(sorted({(str(t), int(p)) for t, ps in parsed.items() for p in ps}))
            except (ValueError, AttributeError, TypeError):
                raise ValueError(f"assign must be JSON like {{\"topic\": [0, 1]}}, got {opts['assign']!r}") from None
            if not assign:
                raise ValueError("option assign names no partition")
        starting = parse_offsets_option("startingOffsets", opts.get("startingoffsets"),
                                        "latest" if streaming else "earliest")
        ending = parse_offsets_option("endingOffsets", opts.get("endingoffsets"), "latest")
        if streaming and opts.get("endingoffsets"):
            raise ValueError("endingOffsets is for batch reads only (Spark's Kafka source refuses it for streams)")
        if not streaming:
            if starting == "latest" or (isinstance(starting, dict) and any(
                    p.offset == LATEST for p in starting.values())):
                raise ValueError("startingOffsets latest (-1) is not allowed for a batch read (as in Spark's "
                                 "Kafka source)")
            if ending == "earliest" or (isinstance(ending, dict) and any(
                    p.offset == EARLIEST for p in ending.values())):
                raise ValueError("endingOffsets earliest (-2) is not allowed for a batch read (as in Spark's "
                                 "Kafka source)")
        return cls(
            bootstrap=bootstrap.strip(), topics=topics, pattern=pattern, assign=assign,
            starting=starting, ending=ending,
            fail_on_data_loss=_bool("failOnDataLoss", opts.get("failondataloss"), True),
            max_offsets_per_trigger=_positive_int("maxOffsetsPerTrigger", opts.get("maxoffsetspertrigger"), None),
            max_records_per_partition=_positive_int("maxRecordsPerPartition", opts.get("maxrecordsperpartition"),
                                                    DEFAULT_MAX_RECORDS_PER_PARTITION),
            validate_offsets=_bool("validateOffsets", opts.get("validateoffsets"), True),
            events_path=opts.get("eventspath") or DEFAULT_EVENTS_PATH,
            poll_timeout_ms=_positive_int("kafkaConsumer.pollTimeoutMs", opts.get("kafkaconsumer.polltimeoutms"),
                                          120_000),
            retry_timeout_ms=_positive_int("retryTimeoutMs", opts.get("retrytimeoutms"), 30_000),
        )


# ------------------------------------------------------------------------------------------ validation
@dataclass(frozen=True, slots=True)
class Truncation:
    """A KIP-320 truncation under a position, as the events table records it: ``checkpoint`` was the
    position; the leader's log ends epoch ``checkpoint.offset_epoch`` at ``divergence_offset`` (None: the
    leader's answer was undefined) in epoch ``divergence_epoch``; ``resume`` is where reading goes on (the
    divergence offset, or the log start offset when it is unknown)."""

    topic: str
    partition: int
    checkpoint: FetchPosition
    divergence_offset: int | None
    divergence_epoch: int | None
    resume: FetchPosition

    @classmethod
    def of(cls, key: Key, validation: PositionValidation, log_start: int = 0) -> Truncation | None:
        """The truncation :func:`~kraftlog.client.position.validate_position` found for partition ``key``
        (None when it found none): resumed at the divergent offset (without an epoch at offset 0: no
        record precedes it), or at ``log_start`` when the divergence is unknown."""
        if not validation.truncated:
            return None
        position, divergent = validation.position, validation.divergent
        if divergent is None:
            return cls(key[0], key[1], position, None, None, FetchPosition(log_start, None))
        return cls(key[0], key[1], position, divergent.offset, divergent.offset_epoch,
                   FetchPosition(divergent.offset, divergent.offset_epoch if divergent.offset > 0 else None))

    def describe(self) -> str:
        where = (f"diverged at offset {self.divergence_offset} (the leader's epoch "
                 f"{self.checkpoint.offset_epoch} ends there)" if self.divergence_offset is not None
                 else f"the leader's end offset for epoch {self.checkpoint.offset_epoch} is undefined (divergence "
                      "unknown)")
        return (f"{self.topic}-{self.partition}: checkpoint offset {self.checkpoint.offset} (leader epoch "
                f"{self.checkpoint.offset_epoch}), {where}")

    @property
    def action(self) -> str:
        return RESUMED if self.divergence_offset is not None else RESUMED_EARLIEST


def rate_limit(limit: int, starts: Mapping[Key, int], ends: Mapping[Key, int]) -> dict[Key, int]:
    """Spark's Kafka source ``rateLimit`` (``maxOffsetsPerTrigger``): share ``limit`` records among the
    partitions in proportion to what each has to read (``ends - starts``), rounding a share below 1 up
    (no partition starves) and others down; never past ``ends``. A partition with nothing to read keeps
    its end (even one below its start: that is reported as data loss when the batch is planned)."""
    sizes = {k: ends[k] - starts[k] for k in ends if k in starts and ends[k] - starts[k] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(ends)
    out = {}
    for k, end in ends.items():
        if k not in sizes:
            out[k] = end
            continue
        prorate = limit * (sizes[k] / total)
        share = int(-(-prorate // 1)) if prorate < 1 else int(prorate // 1)
        out[k] = min(end, starts[k] + share)
    return out


def split_range(start: int, end: int, max_records: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into consecutive ranges of at most ``max_records`` offsets, of nearly equal
    sizes (``[]`` when empty)."""
    if end <= start:
        return []
    n = -(-(end - start) // max_records)
    size, extra = divmod(end - start, n)
    out, a = [], start
    for i in range(n):
        b = a + size + (1 if i < extra else 0)
        out.append((a, b))
        a = b
    return out


def write_events(path: str, truncations: Iterable[Truncation], now_ms: int | None = None) -> str | None:
    """Append one row per truncation to the events table in directory ``path`` (created when missing):
    one new Parquet file ``events-<ms>-<id>.parquet`` per call, written under a temporary name and renamed,
    so a reader never sees half a file. Columns: ``time`` (timestamp, ms, UTC), ``topic`` (string),
    ``partition`` (int32), ``checkpoint_offset`` (int64), ``checkpoint_leader_epoch`` (int32, null when
    the position had none), ``divergence_offset`` (int64, null when unknown), ``action`` (string:
    :data:`RESUMED` or :data:`RESUMED_EARLIEST`). Returns the file's path (None for no rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(truncations)
    if not rows:
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    table = pa.table({
        "time": pa.array([now_ms] * len(rows), pa.timestamp("ms", tz="UTC")),
        "topic": pa.array([t.topic for t in rows], pa.string()),
        "partition": pa.array([t.partition for t in rows], pa.int32()),
        "checkpoint_offset": pa.array([t.checkpoint.offset for t in rows], pa.int64()),
        "checkpoint_leader_epoch": pa.array([t.checkpoint.offset_epoch for t in rows], pa.int32()),
        "divergence_offset": pa.array([t.divergence_offset for t in rows], pa.int64()),
        "action": pa.array([t.action for t in rows], pa.string()),
    })
    os.makedirs(path, exist_ok=True)
    name = f"events-{now_ms}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = os.path.join(path, f".{name}.tmp")
    pq.write_table(table, tmp)
    final = os.path.join(path, name)
    os.replace(tmp, final)
    return final


# -------------------------------------------------------------------------------------------- the client
@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as Metadata names it: ``leader`` -1 when leaderless."""

    topic: str
    partition: int
    topic_id: uuid.UUID
    leader: int
    leader_epoch: int


def _without_errors(answers: dict, api: str) -> dict:
    """``answers`` ({key: partition answer}) when none carries an error; else SourceError naming the API,
    the first such partition (in key order) and its error."""
    for k, a in sorted(answers.items()):
        if a.error_code != Errors.NONE:
            raise SourceError(f"{api} of {k[0]}-{k[1]}: {Errors(a.error_code).name}")
    return answers


class KraftlogClient:
    """A blocking client of a kraftlog (or Kafka) cluster for the source: Metadata, ListOffsets,
    OffsetForLeaderEpoch and Fetch, each sent to the partition's current leader with its leader epoch
    (KIP-320's CurrentLeaderEpoch); one :class:`KafkaConnection` per broker, opened on first use.

    ``bootstrap``: ``HOST:PORT[,...]``; ``timeout_s``: per request; ``retry_timeout_s``: how long a
    request is retried through leadership changes and unreachable brokers before :class:`SourceError`.
    Not thread-safe; :meth:`close` closes every connection."""

    def __init__(self, bootstrap: str, timeout_s: float = 10.0, retry_timeout_s: float = 30.0,
                 client_id: str = "kraftlog-spark") -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.retry_timeout_s = retry_timeout_s
        self.client_id = client_id
        self._conns: dict[int, KafkaConnection] = {}
        self._boot: KafkaConnection | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self.partitions: dict[Key, PartitionInfo] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._epoch_cache: dict[tuple[str, int, int, int], int] = {}

    # ---------------------------------------------------------------- connections
    def close(self) -> None:
        for conn in list(self._conns.values()) + ([self._boot] if self._boot else []):
            try:
                conn.close()
            except OSError:
                pass
        self._conns.clear()
        self._boot = None

    def __enter__(self) -> KraftlogClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _drop(self, broker: int | None) -> None:
        conn = self._conns.pop(broker, None) if broker is not None else None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    def _conn(self, broker: int) -> KafkaConnection:
        conn = self._conns.get(broker)
        if conn is None:
            if broker not in self.brokers:
                raise OSError(f"broker {broker} is not in the metadata")
            host, port = self.brokers[broker]
            conn = self._conns[broker] = KafkaConnection(f"{host}:{port}", self.timeout_s, self.client_id)
        return conn

    def _any_request(self, message):
        """Send ``message`` to any broker that answers: a known one, else the bootstrap list."""
        for broker in list(self._conns):
            try:
                return self._conns[broker].request(message)
            except OSError:
                self._drop(broker)
        for attempt in range(2):
            try:
                if self._boot is None:
                    self._boot = KafkaConnection(self.bootstrap, self.timeout_s, self.client_id)
                return self._boot.request(message)
            except OSError:
                if self._boot is not None:
                    try:
                        self._boot.close()
                    except OSError:
                        pass
                self._boot = None
                if attempt:
                    raise

    # ---------------------------------------------------------------- metadata
    def refresh(self, topics: Iterable[str] | None) -> m.MetadataResponse:
        """Metadata for ``topics`` (None: every topic), retried until ``retry_timeout_s``; updates the
        broker addresses and the partitions' leaders. SourceError when no broker answers."""
        deadline = time.monotonic() + self.retry_timeout_s
        request = m.MetadataRequest(None if topics is None else tuple(sorted(set(topics))))
        while True:
            try:
                resp = self._any_request(request)
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise SourceError(f"no broker of {self.bootstrap} answered Metadata within "
                                      f"{self.retry_timeout_s:.0f} s: {exc}") from None
                time.sleep(0.25)
        self.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        listed = {t.name for t in resp.topics if t.error_code == Errors.NONE}
        gone = {t.name for t in resp.topics if t.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION}
        if topics is None:
            gone |= {t for t, _ in self.partitions} - listed
        for k in [k for k in self.partitions if k[0] in gone]:
            del self.partitions[k]
        for t in resp.topics:
            if t.error_code != Errors.NONE:
                continue
            self.topic_ids[t.name] = t.topic_id
            for p in t.partitions:
                self.partitions[(t.name, p.partition_index)] = PartitionInfo(
                    t.name, p.partition_index, t.topic_id, p.leader_id if p.error_code in (
                        Errors.NONE, Errors.REPLICA_NOT_AVAILABLE) else -1, p.leader_epoch)
        return resp

    def topic_partitions(self, options: SourceOptions) -> list[Key]:
        """The partitions the options name (``subscribe``, ``subscribePattern`` or ``assign``), sorted;
        a subscribed topic that does not exist (yet) has none, as in Spark's Kafka source."""
        if options.pattern is not None:
            resp = self.refresh(None)
            rx = re.compile(options.pattern)
            names = {t.name for t in resp.topics if t.error_code == Errors.NONE and rx.fullmatch(t.name)}
        else:
            names = set(options.topics) | {t for t, _ in options.assign}
            resp = self.refresh(names)
            names = {t.name for t in resp.topics if t.error_code == Errors.NONE and t.name in names}
        keys = sorted(k for k in self.partitions if k[0] in names)
        if options.assign:
            keys = [k for k in keys if k in set(options.assign)]
        return keys

    # ---------------------------------------------------------------- leader requests
    def _by_leader(self, keys: Iterable[Key], send, deadline: float | None = None) -> dict[Key, object]:
        """For each key, the partition answer of its leader: ``send(leader, [PartitionInfo])`` sends one
        request to ``leader`` and returns ``{key: partition answer}`` (each with ``error_code``). Keys
        whose answer is a leadership error (or whose leader is unknown or unreachable) are retried after
        a metadata refresh until ``deadline`` (default ``retry_timeout_s`` from now); then SourceError."""
        deadline = time.monotonic() + self.retry_timeout_s if deadline is None else deadline
        todo = sorted(set(keys))
        out: dict[Key, object] = {}
        last: dict[Key, str] = {}
        delay = 0.05
        while todo:
            groups: dict[int, list[PartitionInfo]] = {}
            for k in todo:
                info = self.partitions.get(k)
                if info is None or info.leader < 0:
                    last[k] = "no leader"
                    continue
                groups.setdefault(info.leader, []).append(info)
            for leader, infos in sorted(groups.items()):
                try:
                    answers = send(leader, infos)
                except OSError as exc:
                    self._drop(leader)
                    for i in infos:
                        last[(i.topic, i.partition)] = f"broker {leader}: {type(exc).__name__}: {exc}"
                    continue
                for k, a in answers.items():
                    if a.error_code == Errors.NONE or a.error_code not in _LEADERSHIP:
                        out[k] = a
                    else:
                        last[k] = f"broker {leader}: {Errors(a.error_code).name}"
            todo = [k for k in todo if k not in out]
            if not todo:
                break
            if time.monotonic() > deadline:
                raise SourceError("no answer from the leader of " + "; ".join(
                    f"{t}-{p} ({last.get((t, p), 'no answer')})" for t, p in todo)
                    + f" within {self.retry_timeout_s:.0f} s")
            time.sleep(delay)
            delay = min(1.0, delay * 2)
            self.refresh({t for t, _ in todo})
        return out

    def list_offsets(self, keys: Iterable[Key], timestamp: int) -> dict[Key, int]:
        """ListOffsets ``timestamp`` (:data:`EARLIEST` -2: the log start offset; :data:`LATEST` -1: the
        HWM) of each partition from its leader. SourceError on another error."""
        def send(leader, infos):
            resp = self._conn(leader).request(m.ListOffsetsRequest(-1, tuple(
                m.ListOffsetsPartition(i.topic, i.partition, timestamp, i.leader_epoch) for i in infos)))
            return {(p.topic, p.partition): p for p in resp.partitions}
        return {k: a.offset for k, a in _without_errors(self._by_leader(keys, send), "ListOffsets").items()}

    def end_offsets_for(self, positions: Mapping[Key, int]) -> dict[Key, tuple[int, int]]:
        """OffsetForLeaderEpoch: for each partition the leader's ``(epoch, end offset)`` of the given leader
        epoch (KIP-320; Kafka's ``LeaderEpochFileCache.endOffsetFor``: (-1, -1) when undefined)."""
        def send(leader, infos):
            resp = self._conn(leader).request(m.OffsetForLeaderEpochRequest(-1, tuple(
                m.OffsetForLeaderEpochPartition(i.topic, i.partition, i.leader_epoch,
                                                positions[(i.topic, i.partition)]) for i in infos)))
            return {(p.topic, p.partition): p for p in resp.partitions}
        answers = _without_errors(self._by_leader(positions, send), "OffsetForLeaderEpoch")
        return {k: (a.leader_epoch, a.end_offset) for k, a in answers.items()}

    def _fetch(self, leader: int, infos: list[PartitionInfo], offsets: Mapping[Key, int], max_wait_ms: int,
               partition_max_bytes: int) -> dict[Key, m.FetchPartitionResponse]:
        resp = self._conn(leader).request(m.FetchRequest(-1, -1, max_wait_ms, 1, tuple(
            m.FetchPartition(i.topic_id, i.partition, i.leader_epoch, offsets[(i.topic, i.partition)],
                             partition_max_bytes=partition_max_bytes) for i in infos)))
        by_id = {(i.topic_id, i.partition): (i.topic, i.partition) for i in infos}
        if resp.error_code != Errors.NONE:
            return {(i.topic, i.partition): m.FetchPartitionResponse(i.topic_id, i.partition, resp.error_code)
                    for i in infos}
        return {by_id[(p.topic_id, p.partition)]: p for p in resp.partitions if (p.topic_id, p.partition) in by_id}

    def epochs_before(self, offsets: Mapping[Key, int]) -> dict[Key, int | None]:
        """The leader epoch of the batch holding record ``offset - 1`` of each partition (KIP-320's
        position epoch for ``offset``), read with a one-batch Fetch at ``offset - 1`` (the offset must be
        at most the HWM); None for offset 0. Cached per (partition, offset, current leader epoch): records
        below the HWM change only with a new leader epoch."""
        out: dict[Key, int | None] = {}
        need: dict[Key, int] = {}
        for k, off in offsets.items():
            info = self.partitions.get(k)
            if off <= 0:
                out[k] = None
            elif info is not None and (k[0], k[1], off, info.leader_epoch) in self._epoch_cache:
                out[k] = self._epoch_cache[(k[0], k[1], off, info.leader_epoch)]
            else:
                need[k] = off - 1
        if need:
            answers = self._by_leader(need, lambda leader, infos: self._fetch(leader, infos, need, 0, 1))
            for k, a in answers.items():
                if a.error_code != Errors.NONE:
                    raise SourceError(f"reading the leader epoch of {k[0]}-{k[1]} offset {need[k]}: "
                                      f"{Errors(a.error_code).name}")
                batch = next((b for b in a.records if b.base_offset <= need[k] <= b.last_offset), None)
                if batch is None:
                    raise SourceError(f"{k[0]}-{k[1]}: the leader returned no batch holding offset {need[k]} "
                                      f"(HWM {a.high_watermark})")
                out[k] = batch.partition_leader_epoch
                info = self.partitions[k]
                self._epoch_cache[(k[0], k[1], need[k] + 1, info.leader_epoch)] = batch.partition_leader_epoch
        return out

    def latest_positions(self, keys: Iterable[Key]) -> dict[Key, FetchPosition]:
        """Each partition's HWM (ListOffsets latest) with the leader epoch of record HWM-1."""
        hwms = self.list_offsets(keys, LATEST)
        epochs = self.epochs_before(hwms)
        return {k: FetchPosition(hwms[k], epochs[k]) for k in hwms}

    def read(self, key: Key, start: int, end: int, timeout_s: float) -> Iterator[tuple[int, int, int, object, int]]:
        """The records ``start <= offset < end`` of partition ``key``, below the HWM, from its leader, as
        ``(offset, batch leader epoch, timestamp type, record, timestamp ms)`` (timestamp type 0 =
        CreateTime, 1 = LogAppendTime, when the record's timestamp is the batch's maxTimestamp).
        Waits (Fetch's max wait) while the HWM is below ``end``; follows leader changes. SourceError
        after ``timeout_s`` without progress; :class:`DataLossError` when the leader's log ends below
        the offset to read (OFFSET_OUT_OF_RANGE: it was truncated since the range was planned)."""
        offset = start
        stalled_since = time.monotonic()
        last_error = "no answer"
        while offset < end:
            if time.monotonic() - stalled_since > timeout_s:
                raise SourceError(f"{key[0]}-{key[1]}: could not read offsets {offset}..{end - 1} within "
                                  f"{timeout_s:.0f} s ({last_error})")
            info = self.partitions.get(key)
            if info is None or info.leader < 0:
                last_error = "no leader"
                time.sleep(0.25)
                self.refresh([key[0]])
                continue
            try:
                pr = self._fetch(info.leader, [info], {key: offset}, 500, 1 << 20)[key]
            except (OSError, KeyError) as exc:
                self._drop(info.leader)
                last_error = f"broker {info.leader}: {type(exc).__name__}: {exc}"
                time.sleep(0.25)
                self.refresh([key[0]])
                continue
            if pr.error_code == Errors.OFFSET_OUT_OF_RANGE:
                raise DataLossError(f"{key[0]}-{key[1]}: offset {offset} is out of range on the leader (broker "
                                    f"{info.leader}; HWM {pr.high_watermark}): the log was truncated below the "
                                    f"range {start}..{end - 1} planned for this batch")
            if pr.error_code in _LEADERSHIP:
                last_error = f"broker {info.leader}: {Errors(pr.error_code).name}"
                time.sleep(0.1)
                self.refresh([key[0]])
                continue
            if pr.error_code != Errors.NONE:
                raise SourceError(f"{key[0]}-{key[1]}: Fetch at offset {offset}: {Errors(pr.error_code).name}")
            hwm = pr.high_watermark
            before = offset
            for batch in pr.records:
                if batch.last_offset < offset:
                    continue
                ts_type = 1 if batch.attributes & _LOG_APPEND_TIME else 0
                append_ts = batch.max_timestamp if ts_type else None
                for o, rec in zip(batch.record_offsets(), batch.records, strict=True):
                    if o < offset:
                        continue
                    if o >= end or o >= hwm:
                        break
                    yield o, batch.partition_leader_epoch, ts_type, rec, (rec.timestamp if append_ts is None
                                                                          else append_ts)
                    offset = o + 1
                offset = max(offset, min(batch.next_offset, end, hwm))  # past offsets the log cleaner removed
            if offset > before:
                stalled_since = time.monotonic()
            else:
                last_error = f"HWM {hwm} below the range end {end}"
