"""Issue 14: ``spark.read.format("kraftlog")`` and ``spark.readStream.format("kraftlog")``
(:mod:`kraftlog.spark.source`), with leader-epoch-aware (KIP-320) streaming offsets.

Fast tests: the options (Spark's Kafka source's names and rules), the offsets JSON, KIP-320's position
check, Spark's ``maxOffsetsPerTrigger`` sharing, range splitting and the events table; and (issue 39's
safety net, no cluster, no SparkSession) the data-loss rules at the level where they live: a truncation
one offset below the checkpoint, the planner failing or resuming on a KIP-320 truncation (a fake client),
an end offset below the start, an OFFSET_OUT_OF_RANGE in a task's read (a client with scripted Fetch
answers).

Slow tests (one real 3-broker cluster on loopback for the module, one ``local[2]`` SparkSession; both
stopped in a ``finally``, every node by PID):

1. a batch read returns every record once with the right columns (also split at
   ``maxRecordsPerPartition``, and between JSON starting/ending offsets);
2. a streaming query (Trigger.AvailableNow, then ProcessingTime) reads everything exactly once into
   Parquet, and every checkpointed offset carries the leader epoch of record N-1;
3. KIP-320's story under a checkpoint: a query checkpoints offset 150 of partition ``story-0``; the leader
   dies, the follower that stopped at offset 100 is elected uncleanly and takes 80 new records (the log
   is truncated to 100 and regrows to 180). Run 2 from that checkpoint fails with failOnDataLoss=true
   naming the partition and both offsets; with failOnDataLoss=false it records an event and reads from
   the divergence offset 100; with validateOffsets=false (Spark's Kafka source's behaviour) it silently
   skips the new records 100..149. Each step waits on the cluster's observable state (ISR, leader, HWM).
4. (run before 3, which leaves broker 0 down) a streaming query resumes from its checkpoint after a
   leader failover (SIGKILL) with no gap and no duplicate, no truncation event, and the new leader
   epoch in its checkpoint; the killed broker is restarted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import wait_for
from kraftlog.client.position import EpochEndOffset, FetchPosition, validate_position
from kraftlog.net import cluster as cl
from kraftlog.net.chaos import CHAOS_CONFIG
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.spark.offsets import (
    RESUMED,
    KraftlogClient,
    SourceOptions,
    Truncation,
    offsets_from_json,
    offsets_to_json,
    parse_offsets_option,
    rate_limit,
    split_range,
    write_events,
)


# ================================================================================================ fast
def test_options_follow_spark_kafka_source_names_and_defaults():
    o = SourceOptions.parse({"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "b, a"}, streaming=False)
    assert (o.bootstrap, o.topics, o.starting, o.ending) == ("127.0.0.1:9092", ("a", "b"), "earliest", "latest")
    assert o.fail_on_data_loss and o.validate_offsets and o.max_records_per_partition == 1_000_000
    s = SourceOptions.parse({"bootstrap.servers": "h:1", "subscribePattern": "t-.*", "failOnDataLoss": "false",
                             "maxOffsetsPerTrigger": "100", "validateOffsets": "false"}, streaming=True)
    assert (s.pattern, s.starting, s.fail_on_data_loss, s.max_offsets_per_trigger, s.validate_offsets) == \
        ("t-.*", "latest", False, 100, False)
    with pytest.raises(ValueError, match="bootstrap.servers"):
        SourceOptions.parse({"subscribe": "a"}, streaming=False)
    with pytest.raises(ValueError, match="exactly one of"):
        SourceOptions.parse({"bootstrap.servers": "h:1", "subscribe": "a", "subscribePattern": "a"}, streaming=False)
    with pytest.raises(ValueError, match="latest"):
        SourceOptions.parse({"bootstrap.servers": "h:1", "subscribe": "a", "startingOffsets": "latest"}, False)
    with pytest.raises(ValueError, match="earliest"):
        SourceOptions.parse({"bootstrap.servers": "h:1", "subscribe": "a", "endingOffsets": '{"a": {"0": -2}}'},
                            False)
    with pytest.raises(ValueError, match="maxOffsetsPerTrigger"):
        SourceOptions.parse({"bootstrap.servers": "h:1", "subscribe": "a", "maxOffsetsPerTrigger": "0"}, True)


def test_offsets_json_round_trips_and_accepts_spark_form():
    assert parse_offsets_option("startingOffsets", '{"t": {"0": 23, "1": -2, "10": {"offset": 5, "leaderEpoch": 4}}}',
                                "earliest") == {("t", 0): FetchPosition(23), ("t", 1): FetchPosition(-2),
                                                ("t", 10): FetchPosition(5, 4)}
    positions = {("t", 10): FetchPosition(7, 2), ("t", 2): FetchPosition(0), ("a", 0): FetchPosition(3, 0)}
    j = offsets_to_json(positions)
    assert json.dumps(j) == ('{"a": {"0": {"offset": 3, "leaderEpoch": 0}}, "t": {"2": {"offset": 0, '
                             '"leaderEpoch": null}, "10": {"offset": 7, "leaderEpoch": 2}}}')
    assert offsets_from_json(json.loads(json.dumps(j))) == positions
    with pytest.raises(ValueError):
        parse_offsets_option("startingOffsets", '{"t": {"0": "x"}}', "earliest")


def check_position(key, position: FetchPosition, answer: tuple[int, int]) -> Truncation | None:
    """The source's reading of an OffsetForLeaderEpoch ``(epoch, end offset)`` answer for ``position``
    (failOnDataLoss=true): the rule's outcome as an events-table Truncation, or None."""
    return Truncation.of(key, validate_position(position, EpochEndOffset(0, *answer), reset_policy=False))


def test_kip320_position_check():
    """KIP-320 (Kafka's maybeCompleteValidation): the leader's end offset for the position's epoch below
    the position is a divergence there; an undefined answer is a truncation without a known offset."""
    k = ("t", 0)
    assert check_position(k, FetchPosition(150, 0), (0, 180)) is None
    assert check_position(k, FetchPosition(150, 0), (0, 150)) is None
    t = check_position(k, FetchPosition(150, 0), (0, 100))
    assert (t.divergence_offset, t.resume, t.action) == (100, FetchPosition(100, 0), RESUMED)
    assert "t-0: checkpoint offset 150 (leader epoch 0), diverged at offset 100" in t.describe()
    u = check_position(k, FetchPosition(150, 3), (-1, -1))
    assert u.divergence_offset is None and u.resume == FetchPosition(0, None)


def test_rate_limit_is_spark_kafka_source_share_and_ranges_split():
    starts = {("t", 0): 0, ("t", 1): 10, ("t", 2): 5}
    ends = {("t", 0): 100, ("t", 1): 11, ("t", 2): 5}
    assert rate_limit(10, starts, ends) == {("t", 0): 9, ("t", 1): 11, ("t", 2): 5}
    assert rate_limit(1000, starts, ends) == ends
    assert rate_limit(10, {("t", 0): 50}, {("t", 0): 40}) == {("t", 0): 40}  # reported as data loss later
    assert split_range(0, 10, 3) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert split_range(5, 5, 3) == [] and split_range(0, 3, 3) == [(0, 3)]


def test_data_source_name_schema_and_planning_without_a_cluster():
    """The source is ``format("kraftlog")`` with Spark's Kafka columns plus leaderEpoch; building a reader
    parses the options but opens no connection (Spark builds stream readers in tasks too)."""
    from pyspark.sql.types import StructType

    from kraftlog.spark.source import SCHEMA, KraftlogDataSource, RangePartition
    assert KraftlogDataSource.name() == "kraftlog"
    source = KraftlogDataSource({"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"})
    assert source.schema().fieldNames() == ["key", "value", "topic", "partition", "offset", "timestamp",
                                            "timestampType", "leaderEpoch"] == SCHEMA.fieldNames()
    reader = source.streamReader(SCHEMA)
    assert reader._client is None
    assert reader.partitions({"t": {"0": {"offset": 5, "leaderEpoch": None}}},
                             {"t": {"0": {"offset": 5, "leaderEpoch": None}}}) == []
    with pytest.raises(ValueError, match="fixed schema"):
        source.reader(StructType(SCHEMA.fields[:2]))
    import pickle
    assert pickle.loads(pickle.dumps(RangePartition("t", 0, 3, 9, 2))).value == ("t", 0, 3, 9)


def test_events_table_rows(tmp_path):
    import pyarrow.parquet as pq
    t = Truncation("t", 0, FetchPosition(150, 0), 100, 0, FetchPosition(100, 0))
    path = write_events(str(tmp_path / "ev"), [t], now_ms=1_700_000_000_000)
    rows = pq.read_table(tmp_path / "ev").to_pylist()
    assert os.path.basename(path).startswith("events-")
    assert rows == [{"time": rows[0]["time"], "topic": "t", "partition": 0, "checkpoint_offset": 150,
                     "checkpoint_leader_epoch": 0, "divergence_offset": 100, "action": "resumed at divergence"}]



# ---------------------------------------------------------------- safety net (issue 39): the rules alone
K = ("t", 0)


def test_kip320_a_leader_ending_the_epoch_one_offset_below_the_checkpoint_is_a_truncation():
    """Issue 39 rule 12 (KIP-320; Kafka's ``SubscriptionState.maybeCompleteValidation``: an end offset
    below the position is a divergence): checkpoint offset 150 in epoch 0, the leader's epoch 0 ends at
    149 (one record, 149, was truncated away): a truncation diverging at 149, resumed there.

    Shown to fail when ``end_offset < position.offset`` in ``client.position.validate_position`` becomes
    ``end_offset < position.offset - 1`` (the lost record goes unnoticed)."""
    t = check_position(K, FetchPosition(150, 0), (0, 149))
    assert t is not None and (t.divergence_offset, t.resume) == (149, FetchPosition(149, 0))
    assert check_position(K, FetchPosition(150, 0), (0, 150)) is None


class _FakeClient:
    """A :class:`KraftlogClient` stand-in for the driver's planning: OffsetForLeaderEpoch answers
    ``{key: (epoch, end offset)}`` and the log start offsets; counts the questions."""

    def __init__(self, end_offsets: dict, log_start: int = 0) -> None:
        self.answers, self.log_start, self.asked = end_offsets, log_start, []

    def end_offsets_for(self, positions):
        self.asked.append(dict(positions))
        return {k: self.answers[k] for k in positions}

    def list_offsets(self, keys, timestamp):
        return {k: self.log_start for k in keys}

    def close(self) -> None:
        pass


def _stream_reader(**options):
    from kraftlog.spark.source import SCHEMA, KraftlogStreamReader
    opts = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t", **{k: str(v) for k, v in options.items()}}
    return KraftlogStreamReader(SourceOptions.parse(opts, streaming=True), SCHEMA)


CHECKPOINT = {"t": {"0": {"offset": 150, "leaderEpoch": 0}}}
LATEST_180 = {"t": {"0": {"offset": 180, "leaderEpoch": 1}}}


def test_kip320_truncation_under_the_checkpoint_fails_the_query_with_fail_on_data_loss(tmp_path):
    """Issue 39 rule 13 (KIP-320 under a Spark checkpoint; Spark's Kafka source's ``failOnDataLoss``, whose
    default true fails the query): the driver plans a micro-batch from checkpoint offset 150 (epoch 0) and
    the leader (a fake client) ends epoch 0 at 100. With failOnDataLoss=true ``partitions`` raises
    DataLossError naming the partition, both offsets and the truncation, and writes no event; with
    failOnDataLoss=false it plans 100..179 and writes one events row.

    Shown to fail when ``if fail:`` in ``_Planner.validate`` is replaced by
    ``if False:`` (the query resumes silently at the divergence). The slow
    ``test_kip320_truncation_under_the_checkpoint`` shows the same on a real cluster and Spark."""
    import pyarrow.parquet as pq

    from kraftlog.spark.source import DataLossError, RangePartition
    reader = _stream_reader(eventsPath=tmp_path / "ev")
    reader._client = _FakeClient({K: (0, 100)})
    with pytest.raises(DataLossError) as err:
        reader.partitions(CHECKPOINT, LATEST_180)
    assert "t-0: checkpoint offset 150 (leader epoch 0), diverged at offset 100" in str(err.value)
    assert [(t.divergence_offset, t.resume) for t in err.value.truncations] == [(100, FetchPosition(100, 0))]
    assert not (tmp_path / "ev").exists()
    reader = _stream_reader(eventsPath=tmp_path / "ev", failOnDataLoss="false")
    reader._client = _FakeClient({K: (0, 100)})
    assert reader.partitions(CHECKPOINT, LATEST_180) == [RangePartition("t", 0, 100, 180, 1)]
    assert [r["divergence_offset"] for r in pq.read_table(tmp_path / "ev").to_pylist()] == [100]


def test_an_end_offset_below_the_start_offset_is_data_loss():
    """Issue 39 rule 14 (Spark's Kafka source ``KafkaMicroBatchStream.planInputPartitions``: "Partition
    ...'s offset was changed from X to Y, some data may have been missed", ``reportDataLoss``): a
    micro-batch from 150 to 149 (the log end fell below the position) fails with failOnDataLoss=true; with
    false the partition is skipped (no range); an empty batch (end = start) is no loss.

    Shown to fail when ``e.offset < s.offset`` in ``_Planner.ranges`` becomes ``e.offset < s.offset - 1``,
    and when its ``self.data_loss(...)`` call is dropped."""
    from kraftlog.spark.source import DataLossError
    reader = _stream_reader()
    with pytest.raises(DataLossError, match="t-0's offset was changed from 150 to 149"):
        reader.ranges({K: FetchPosition(150, 0)}, {K: FetchPosition(149, 0)})
    assert reader.ranges({K: FetchPosition(150, 0)}, {K: FetchPosition(150, 0)}) == []
    assert _stream_reader(failOnDataLoss="false").ranges({K: FetchPosition(150, 0)},
                                                         {K: FetchPosition(149, 0)}) == []


def _fetch_client(answers: list):
    """A :class:`KraftlogClient` whose Fetch answers come from ``answers`` (FetchPartitionResponse
    each, in order) and whose metadata names broker 0 as t-0's leader: :meth:`KraftlogClient.read` and
    the task's ``_read_range`` run for real, without a cluster."""
    import uuid

    from kraftlog.spark.offsets import PartitionInfo

    class Fetching(KraftlogClient):
        def refresh(self, topics):
            self.partitions[K] = PartitionInfo("t", 0, uuid.UUID(int=1), 0, 2)

        def _fetch(self, leader, infos, offsets, max_wait_ms, partition_max_bytes):
            return {K: answers.pop(0)}
    return Fetching


def test_offset_out_of_range_while_a_task_reads_its_range_is_data_loss_that_fail_on_data_loss_false_skips(
        monkeypatch):
    """Issue 39 rule 15 (Spark's Kafka source ``KafkaDataConsumer``: an OffsetOutOfRange while fetching a
    planned range is ``reportDataLoss``, fatal only with failOnDataLoss): a task reads 0..9; the leader
    serves 0..4, then answers OFFSET_OUT_OF_RANGE at 5 (its log was truncated below the range since it was
    planned). ``KraftlogClient.read`` raises DataLossError; with failOnDataLoss=true the task fails with it;
    with false the task hands over records 0..4 and skips the rest of the range.

    Shown to fail when ``KraftlogClient.read`` raises SourceError instead of DataLossError for
    OFFSET_OUT_OF_RANGE (failOnDataLoss=false can no longer skip it), and when ``_read_range``'s
    ``if opts.fail_on_data_loss: raise`` after ``except DataLossError`` is dropped."""
    import uuid

    from kraftlog.protocol.records import Record, RecordBatch
    from kraftlog.spark import source
    from kraftlog.spark.source import DataLossError, RangePartition

    def answers():
        served = RecordBatch(0, 2, tuple(Record(1000 + i, None, b"v%d" % i) for i in range(5)))
        return [m.FetchPartitionResponse(uuid.UUID(int=1), 0, Errors.NONE, 10, records=(served,)),
                m.FetchPartitionResponse(uuid.UUID(int=1), 0, Errors.OFFSET_OUT_OF_RANGE, 3)]
    part = RangePartition("t", 0, 0, 10, 2)
    monkeypatch.setattr(source, "KraftlogClient", _fetch_client(answers()))
    with pytest.raises(DataLossError, match="offset 5 is out of range on the leader"):
        list(_stream_reader().read(part))
    monkeypatch.setattr(source, "KraftlogClient", _fetch_client(answers()))
    batches = list(_stream_reader(failOnDataLoss="false").read(part))
    assert [o for b in batches for o in b.column("offset").to_pylist()] == [0, 1, 2, 3, 4]

# ================================================================================================ slow
#: The module cluster's configs: chaos.py's short lag and replica socket timeouts (a killed follower
#: leaves the ISR within 5 s). Unclean election is enabled on the story's topic only.
#: unclean.recovery.timeout.ms: at level urm the story's unclean election is an Aggressive recovery, which
#: waits for every replica or this long (issue 25; Kafka's default is 5 minutes) before it elects broker 1
CLUSTER_CONFIG = {**CHAOS_CONFIG, "unclean.recovery.timeout.ms": "5000"}


class Cluster:
    """The module's cluster: its directory, client ports and a few admin helpers over KafkaConnection."""

    def __init__(self, directory: str) -> None:
        self.dir = directory

    def port(self, broker: int) -> int:
        return next(n["port"] for n in cl.load(self.dir)["nodes"] if n["id"] == broker)

    def bootstrap(self, brokers=(0, 1, 2)) -> str:
        return ",".join(f"127.0.0.1:{self.port(b)}" for b in brokers)

    def request(self, message, brokers=(0, 1, 2)):
        return _request(self.bootstrap(brokers), message)

    def create_topic(self, name: str, partitions: int = 1, rf: int = 3, assignment=(), **configs) -> None:
        topic = m.CreatableTopic(name, -1 if assignment else partitions, -1 if assignment else rf,
                                 assignment=tuple(tuple(a) for a in assignment),
                                 configs=tuple((k.replace("_", "."), str(v)) for k, v in configs.items()))
        resp = self.request(m.CreateTopicsRequest((topic,)))
        assert resp.topics[0].error_code == Errors.NONE, Errors(resp.topics[0].error_code).name
        want = len(assignment) or partitions
        wait_for(f"{name}: every partition led, full ISR", lambda: (ps := self.describe(name)) is not None
                 and len(ps) == want and all(p.leader_id >= 0 and sorted(p.isr_nodes) == sorted(p.replica_nodes)
                                             for p in ps))

    def describe(self, topic: str, brokers=(0, 1, 2)):
        try:
            resp = self.request(m.DescribeTopicPartitionsRequest((topic,)), brokers)
        except OSError:
            return None
        if not resp.topics or resp.topics[0].error_code != Errors.NONE:
            return None
        return sorted(resp.topics[0].partitions, key=lambda p: p.partition_index)

    def hwm(self, topic: str, partition: int, leader: int) -> int | None:
        try:
            with KafkaConnection(f"127.0.0.1:{self.port(leader)}", timeout_s=5) as k:
                resp = k.request(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(topic, partition, -1),)))
        except OSError:
            return None
        p = resp.partitions[0]
        return p.offset if p.error_code == Errors.NONE else None


def _request(bootstrap: str, message):
    with KafkaConnection(bootstrap, timeout_s=10) as k:
        return k.request(message)


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes]], acks: str) -> None:
    """Send ``(partition, key, value)`` records with confluent-kafka; every one must be acknowledged."""
    from confluent_kafka import Producer
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                  "enable.idempotence": acks == "all", "message.timeout.ms": 30000})
    for partition, key, value in records:
        p.produce(topic, key=key, value=value, partition=partition,
                  on_delivery=lambda err, msg: errors.append(str(err)) if err is not None else None)
        p.poll(0)
    assert p.flush(60) == 0, "records still in flight after 60 s"
    assert not errors, errors[:5]


@pytest.fixture(scope="module")
def cluster():
    directory = tempfile.mkdtemp(prefix="kraftlog-spark-source-")
    try:
        cl.up(directory, 3, port=0, config=dict(CLUSTER_CONFIG))
        yield Cluster(directory)
    finally:
        try:
            cl.down(directory)
        except Exception:  # noqa: BLE001 - the kill below is what matters
            pass
        finally:
            try:
                cl.kill(directory)
            except cl.ClusterError:
                pass
            shutil.rmtree(directory, ignore_errors=True)


#: the module's SparkSession's log (the JVM's and its Python workers' stderr)
SPARK_LOG: list[Path] = []


@pytest.fixture(scope="module")
def spark():
    import kraftlog.spark.source as source
    from kraftlog.spark.campaign import _start_spark, _stop_spark
    base = Path(tempfile.mkdtemp(prefix="kraftlog-spark-session-"))
    session, jvm = None, None
    try:
        session, jvm = _start_spark("local[2]", base, base)
        source.register(session)
        SPARK_LOG[:] = [base / "spark.log"]
        yield session
    finally:
        if session is not None:
            _stop_spark(session, jvm, base / "spark.log")
        shutil.rmtree(base, ignore_errors=True)


def _reader(spark, cluster: Cluster, topic: str, stream: bool = False, brokers=(0, 1, 2), **options):
    r = (spark.readStream if stream else spark.read).format("kraftlog")
    r = r.option("kafka.bootstrap.servers", cluster.bootstrap(brokers)).option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, str(v).lower() if isinstance(v, bool) else str(v))
    return r.load()


def _rows(df) -> list[dict]:
    return [r.asDict() for r in df.collect()]


def _parquet_rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq
    if not path.exists() or not any(path.glob("*.parquet")):
        return []
    return pq.read_table(path).to_pylist()


def _checkpoint_offsets(checkpoint: Path) -> list[dict]:
    """The source offsets of every batch in ``<checkpoint>/offsets/<n>`` (Spark's OffsetSeqLog: a version
    line, the batch metadata, then one JSON line per source), by batch number."""
    out = []
    for f in sorted((checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if f.name.isdigit():
            out.append(json.loads(f.read_text().splitlines()[2]))
    return out


def _stream(spark, cluster: Cluster, topic: str, out: Path, checkpoint: Path, brokers=(0, 1, 2), trigger=None,
            **options):
    df = _reader(spark, cluster, topic, stream=True, brokers=brokers, startingOffsets="earliest", **options)
    w = df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
    return w.trigger(**(trigger or {"availableNow": True})).start()


def _finish(query, timeout_s: float = 120) -> None:
    """Wait for an AvailableNow query to end (raising its error, if it failed); stopped when it does not
    end within ``timeout_s``, which fails the test."""
    try:
        ended = query.awaitTermination(timeout_s)
    finally:
        if query.isActive:
            query.stop()
    assert ended, f"the query did not end within {timeout_s:.0f} s"


@pytest.mark.slow
def test_batch_read_returns_every_record_once(cluster, spark):
    """Three partitions × 200 acks=all records: one row each, with its key, value, partition, offset,
    CreateTime timestamp and the leader epoch of its batch; the same rows when every partition is split
    into ranges of at most 64 records; JSON starting/ending offsets (Spark's form, -2/-1, and a position
    with its leader epoch) bound the rows."""
    cluster.create_topic("batch", 3, 3, min_insync_replicas=2)
    before = time.time()
    produce(cluster.bootstrap(), "batch", [(p, f"k-{p}-{i}".encode(), f"v-{p}-{i}".encode())
                                          for i in range(200) for p in range(3)], acks="all")
    after = time.time()
    epochs = {p.partition_index: p.leader_epoch for p in cluster.describe("batch")}

    rows = _rows(_reader(spark, cluster, "batch"))
    assert len(rows) == 600
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(p, o) for p in range(3) for o in range(200)]
    for r in rows:
        i = r["offset"]
        assert (r["topic"], r["key"], r["value"]) == ("batch", f"k-{r['partition']}-{i}".encode(),
                                                      f"v-{r['partition']}-{i}".encode())
        assert r["timestampType"] == 0 and r["leaderEpoch"] == epochs[r["partition"]]
        assert before - 1 <= r["timestamp"].timestamp() <= after + 1

    split = _reader(spark, cluster, "batch", maxRecordsPerPartition=64)
    assert split.rdd.getNumPartitions() == 12  # 200 records: 4 ranges of <= 64 per partition
    assert sorted((r["partition"], r["offset"], r["value"]) for r in _rows(split)) == \
        sorted((r["partition"], r["offset"], r["value"]) for r in rows)

    bounded = _rows(_reader(
        spark, cluster, "batch",
        startingOffsets=json.dumps({"batch": {"0": 10, "1": -2, "2": {"offset": 5, "leaderEpoch": epochs[2]}}}),
        endingOffsets=json.dumps({"batch": {"0": 20, "1": 50, "2": -1}})))
    got = {p: sorted(r["offset"] for r in bounded if r["partition"] == p) for p in range(3)}
    assert got == {0: list(range(10, 20)), 1: list(range(0, 50)), 2: list(range(5, 200))}


@pytest.mark.slow
def test_stream_available_now_then_processing_time_exactly_once_with_epochs_in_checkpoint(cluster, spark, tmp_path):
    """Trigger.AvailableNow with maxOffsetsPerTrigger 120 reads 3 × 100 records in several micro-batches,
    each record once; every checkpointed position is {"offset": N, "leaderEpoch": E} with E the epoch of
    record N-1. A ProcessingTime query on the same checkpoint then reads only the 3 × 50 new ones."""
    cluster.create_topic("stream", 3, 3, min_insync_replicas=2)
    produce(cluster.bootstrap(), "stream", [(p, None, f"a-{p}-{i}".encode()) for i in range(100) for p in range(3)],
            acks="all")
    epochs = {p.partition_index: p.leader_epoch for p in cluster.describe("stream")}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    q = _stream(spark, cluster, "stream", out, checkpoint, maxOffsetsPerTrigger=120)
    _finish(q)
    assert q.exception() is None
    rows = _parquet_rows(out)
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(p, o) for p in range(3) for o in range(100)]
    assert all(r["value"] == f"a-{r['partition']}-{r['offset']}".encode() and r["key"] is None for r in rows)
    batches = _checkpoint_offsets(checkpoint)
    assert len(batches) >= 3  # 300 records, at most 120 per micro-batch
    for b in batches:
        for p, pos in b["stream"].items():
            assert set(pos) == {"offset", "leaderEpoch"}
            assert pos["leaderEpoch"] == (epochs[int(p)] if pos["offset"] > 0 else None)
    assert batches[-1]["stream"] == {str(p): {"offset": 100, "leaderEpoch": epochs[p]} for p in range(3)}

    produce(cluster.bootstrap(), "stream", [(p, None, f"b-{p}-{i}".encode()) for i in range(50) for p in range(3)],
            acks="all")
    q = _stream(spark, cluster, "stream", out, checkpoint, trigger={"processingTime": "1 second"})
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    rows = _parquet_rows(out)
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(p, o) for p in range(3) for o in range(150)]
    assert _checkpoint_offsets(checkpoint)[-1]["stream"] == \
        {str(p): {"offset": 150, "leaderEpoch": epochs[p]} for p in range(3)}


@pytest.mark.slow
def test_stream_resumes_from_its_checkpoint_after_a_leader_failover_with_no_gap_and_no_duplicate(
        cluster, spark, tmp_path):
    """Topic ``failover`` (3 partitions, RF 3, min ISR 2): 3 × 100 acks=all records; an AvailableNow query
    (bootstrap: all three brokers, unchanged throughout) reads them into Parquet. The leader of
    failover-0 is SIGKILLed; once another replica leads it at a higher leader epoch (DescribeTopicPartitions
    on the survivors), 3 × 50 more acks=all records go to every partition. Run 2 from the same checkpoint
    validates its positions (KIP-320) against the new leader, finds no truncation (no events row, no
    log line, no failure) and reads exactly the 150 new records: every value once. The last checkpointed
    positions carry the new leader epoch of each failed-over partition. The killed broker is restarted
    in a ``finally`` (the KIP-320 story after this test needs broker 0 and 1), and the topic's ISR is
    complete again before the test ends."""
    topic, n, m_new = "failover", 100, 50
    cluster.create_topic(topic, 3, 3, min_insync_replicas=2)
    produce(cluster.bootstrap(), topic, [(p, None, f"one-{p}-{i}".encode()) for i in range(n) for p in range(3)],
            acks="all")
    before = {p.partition_index: p for p in cluster.describe(topic)}
    out, checkpoint, events = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "events"

    q = _stream(spark, cluster, topic, out, checkpoint, eventsPath=events)
    _finish(q)
    assert q.exception() is None
    assert sorted(r["value"] for r in _parquet_rows(out)) == \
        sorted(f"one-{p}-{i}".encode() for i in range(n) for p in range(3))
    run1 = _checkpoint_offsets(checkpoint)
    assert run1[-1][topic] == {str(p): {"offset": n, "leaderEpoch": before[p].leader_epoch} for p in range(3)}

    killed = before[0].leader_id
    survivors = tuple(b for b in (0, 1, 2) if b != killed)
    failed_over = sorted(p for p, d in before.items() if d.leader_id == killed)  # failover-0 at least
    assert 0 in failed_over
    try:
        assert cl.kill_node(cluster.dir, killed)

        def failed_over_state():
            ps = cluster.describe(topic, survivors)
            if ps is None or any(p.leader_id < 0 or p.leader_id == killed or killed in p.isr_nodes for p in ps):
                return None
            if any(ps[p].leader_epoch <= before[p].leader_epoch for p in failed_over):
                return None
            return {p.partition_index: p for p in ps}
        after = wait_for(f"{topic}: every partition led without broker {killed}, {failed_over} at a higher "
                         "leader epoch", failed_over_state, timeout_s=45)
        assert all(after[p].leader_id in survivors and after[p].leader_epoch > before[p].leader_epoch
                   for p in failed_over)
        assert all(len(after[p].isr_nodes) == 2 for p in range(3))  # min ISR 2: acks=all still succeeds

        produce(cluster.bootstrap(survivors), topic,
                [(p, None, f"two-{p}-{i}".encode()) for i in range(m_new) for p in range(3)], acks="all")
        for p in range(3):
            wait_for(f"{topic}-{p} HWM {n + m_new} on broker {after[p].leader_id}",
                     lambda p=p: cluster.hwm(topic, p, after[p].leader_id) == n + m_new, timeout_s=30)
        assert {p.partition_index: (p.leader_id, p.leader_epoch) for p in cluster.describe(topic, survivors)} == \
            {p: (after[p].leader_id, after[p].leader_epoch) for p in range(3)}  # no further election meanwhile

        q = _stream(spark, cluster, topic, out, checkpoint, eventsPath=events)
        _finish(q)
        assert q.exception() is None

        rows = _parquet_rows(out)
        values = [r["value"] for r in rows]
        expected = {f"one-{p}-{i}".encode() for i in range(n) for p in range(3)} | \
            {f"two-{p}-{i}".encode() for i in range(m_new) for p in range(3)}
        assert len(values) == len(set(values)), "duplicates: " + repr(
            sorted(v for v in set(values) if values.count(v) > 1)[:10])
        assert set(values) == expected, f"missing {sorted(expected - set(values))[:10]}, " \
                                        f"unexpected {sorted(set(values) - expected)[:10]}"
        assert sorted((r["partition"], r["offset"]) for r in rows) == \
            [(p, o) for p in range(3) for o in range(n + m_new)]
        for r in rows:  # each record where it was appended, stamped with its leader's epoch
            p, o = r["partition"], r["offset"]
            assert r["value"] == (f"one-{p}-{o}" if o < n else f"two-{p}-{o - n}").encode()
            assert r["leaderEpoch"] == (before[p] if o < n else after[p]).leader_epoch, (p, o, r["leaderEpoch"])

        batches = _checkpoint_offsets(checkpoint)
        assert batches[:len(run1)] == run1 and len(batches) > len(run1)  # resumed, not restarted
        assert batches[-1][topic] == {str(p): {"offset": n + m_new, "leaderEpoch": after[p].leader_epoch}
                                      for p in range(3)}
        assert all(batches[-1][topic][str(p)]["leaderEpoch"] > before[p].leader_epoch for p in failed_over)

        assert _parquet_rows(events) == [], "a truncation event was recorded after a clean failover"
        assert not events.exists() or not any(events.iterdir())
        flagged = [line for line in SPARK_LOG[0].read_text(errors="replace").splitlines()
                   if f"{topic}-" in line and ("KIP-320" in line or "data may have been" in line)]
        assert flagged == []
    finally:
        if not cl.pid_alive(next(e["pid"] for e in cl.load(cluster.dir)["nodes"] if e["id"] == killed)):
            cl.start_broker(cluster.dir, killed)
    wait_for(f"{topic}: broker {killed} back in every ISR",
             lambda: (ps := cluster.describe(topic)) is not None and all(len(p.isr_nodes) == 3 for p in ps),
             timeout_s=45)


@pytest.mark.slow
def test_kip320_truncation_under_the_checkpoint(cluster, spark, tmp_path):
    """KIP-320's story under a Spark checkpoint, on partition story-0 (replicas [0, 1], min ISR 1, unclean
    election enabled): 100 records on both replicas; follower 1 killed (ISR [0]); 50 more on the leader
    alone; run 1 checkpoints offset 150. Leader 0 killed, broker 1 restarted and elected uncleanly with
    its 100 records; 80 new records (offsets 100..179). Run 2 from copies of that checkpoint:
    failOnDataLoss=true fails naming story-0, offset 150 and divergence 100; failOnDataLoss=false logs,
    writes the events row and reads 100..179; validateOffsets=false reads only 150..179."""
    import pyarrow.parquet as pq

    cluster.create_topic("story", assignment=[[0, 1]], min_insync_replicas=1, unclean_leader_election_enable="true")
    first = cluster.describe("story")[0]
    assert first.leader_id == 0
    produce(cluster.bootstrap(), "story", [(0, None, f"old-{i}".encode()) for i in range(100)], acks="all")
    wait_for("story-0 HWM 100", lambda: cluster.hwm("story", 0, 0) == 100)
    cl.kill_node(cluster.dir, 1)
    wait_for("story-0 ISR [0]", lambda: (ps := cluster.describe("story", (0, 2))) is not None
             and list(ps[0].isr_nodes) == [0])
    produce(cluster.bootstrap((0, 2)), "story", [(0, None, f"old-{i}".encode()) for i in range(100, 150)], acks="1")
    wait_for("story-0 HWM 150", lambda: cluster.hwm("story", 0, 0) == 150)

    out1, ck1 = tmp_path / "out1", tmp_path / "ck1"
    q = _stream(spark, cluster, "story", out1, ck1, brokers=(0, 2))
    _finish(q)
    assert q.exception() is None
    assert sorted(r["offset"] for r in _parquet_rows(out1)) == list(range(150))
    checkpointed = _checkpoint_offsets(ck1)[-1]["story"]["0"]
    assert checkpointed["offset"] == 150 and isinstance(checkpointed["leaderEpoch"], int)
    epoch = checkpointed["leaderEpoch"]

    # the unclean election: leader 0 dies, broker 1 (LEO 100) comes back alone and is elected
    cl.kill_node(cluster.dir, 0)
    cl.start_broker(cluster.dir, 1)
    after = wait_for("story-0 led by broker 1", lambda: (ps := cluster.describe("story", (1, 2))) is not None
                     and ps[0].leader_id == 1 and ps[0], timeout_s=90)
    assert after.leader_epoch > first.leader_epoch
    produce(cluster.bootstrap((1, 2)), "story", [(0, None, f"new-{i}".encode()) for i in range(100, 180)],
            acks="all")
    wait_for("story-0 HWM 180", lambda: cluster.hwm("story", 0, 1) == 180)

    # a task's read follows leadership: metadata naming the dead leader 0, then broker 1 at a fenced epoch
    with KraftlogClient(cluster.bootstrap((1, 2)), retry_timeout_s=30) as client:
        client.refresh(["story"])
        now = client.partitions[("story", 0)]
        assert (now.leader, now.leader_epoch) == (1, after.leader_epoch)
        for stale in (replace(now, leader=0, leader_epoch=first.leader_epoch),
                      replace(now, leader_epoch=first.leader_epoch)):
            client.partitions[("story", 0)] = stale
            got = [(o, e, rec.value) for o, e, _, rec, _ in client.read(("story", 0), 90, 180, timeout_s=30)]
            assert got == [(o, first.leader_epoch, f"old-{o}".encode()) for o in range(90, 100)] + \
                [(o, after.leader_epoch, f"new-{o}".encode()) for o in range(100, 180)]
            assert client.partitions[("story", 0)] == now

    # failOnDataLoss=true: the query fails, naming the partition and both offsets
    ck_a, out_a = tmp_path / "ck_a", tmp_path / "out_a"
    shutil.copytree(ck1, ck_a)
    q = _stream(spark, cluster, "story", out_a, ck_a, brokers=(1, 2))
    with pytest.raises(Exception) as failed:
        _finish(q)
    text = str(failed.value)
    assert "KIP-320" in text and f"story-0: checkpoint offset 150 (leader epoch {epoch}), diverged at offset 100" \
        in text, text[-3000:]
    assert _parquet_rows(out_a) == []

    # failOnDataLoss=false: an events row, and the new records from the divergence offset on
    ck_b, out_b, events = tmp_path / "ck_b", tmp_path / "out_b", tmp_path / "events"
    shutil.copytree(ck1, ck_b)
    q = _stream(spark, cluster, "story", out_b, ck_b, brokers=(1, 2), failOnDataLoss=False, eventsPath=events)
    _finish(q)
    assert q.exception() is None
    rows = sorted(_parquet_rows(out_b), key=lambda r: r["offset"])
    assert [(r["offset"], r["value"]) for r in rows] == [(o, f"new-{o}".encode()) for o in range(100, 180)]
    assert all(r["leaderEpoch"] == after.leader_epoch for r in rows)
    ev = pq.read_table(events).to_pylist()
    assert [(e["topic"], e["partition"], e["checkpoint_offset"], e["checkpoint_leader_epoch"],
             e["divergence_offset"], e["action"]) for e in ev] == [("story", 0, 150, epoch, 100, RESUMED)]
    assert _checkpoint_offsets(ck_b)[-1]["story"]["0"] == {"offset": 180, "leaderEpoch": after.leader_epoch}
    logged = [line for line in SPARK_LOG[0].read_text(errors="replace").splitlines()
              if "KIP-320 log truncation" in line]
    assert any(f"story-0: checkpoint offset 150 (leader epoch {epoch}), diverged at offset 100" in line
               and "resumed at divergence (offset 100)" in line for line in logged), logged

    # a batch read from the checkpointed position (with its epoch) is validated the same way
    position = json.dumps({"story": {"0": {"offset": 150, "leaderEpoch": epoch}}})
    with pytest.raises(Exception, match="diverged at offset 100"):
        _rows(_reader(spark, cluster, "story", brokers=(1, 2), startingOffsets=position))
    resumed = _rows(_reader(spark, cluster, "story", brokers=(1, 2), startingOffsets=position, failOnDataLoss=False,
                            eventsPath=tmp_path / "batch-events"))
    assert sorted(r["offset"] for r in resumed) == list(range(100, 180))

    # validateOffsets=false (Spark's Kafka source): reads from 150, silently skipping new-100..new-149
    ck_c, out_c = tmp_path / "ck_c", tmp_path / "out_c"
    shutil.copytree(ck1, ck_c)
    q = _stream(spark, cluster, "story", out_c, ck_c, brokers=(1, 2), validateOffsets=False)
    _finish(q)
    assert q.exception() is None
    values = {r["value"] for r in _parquet_rows(out_c)}
    assert values == {f"new-{o}".encode() for o in range(150, 180)}
    skipped = {f"new-{o}".encode() for o in range(100, 150)}
    assert not values & skipped, "the records between the divergence offset and the checkpoint were skipped"
