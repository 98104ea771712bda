"""Issue 30 on the broker: the log start offset as Kafka's brokers move it and share it. DeleteRecords
(``ReplicaManager.deleteRecords``, ``DelayedDeleteRecords``), retention run by the log manager, the follower
taking its leader's log start offset (``ReplicaFetcherThread.processPartitionData``) or restarting empty at
it (``AbstractFetcherThread.handleOutOfRangeError``), OFFSET_OUT_OF_RANGE below it, ListOffsets EARLIEST,
RECORD_LIST_TOO_LARGE, and DescribeConfigs reading the retention synonyms."""

from __future__ import annotations

from kraftlog.broker.describe import STATIC_BROKER_CONFIG, TOPIC_CONFIG
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import RecordBatch
from kraftlog.storage.disk import SimDisk
from test_broker import MiniCluster, batch
from test_broker_listeners import ask
from test_delete_topics import create


def follower_fetch(c: MiniCluster, follower: int, offset: int, log_start: int = 0) -> m.FetchPartitionResponse:
    """Follower ``follower`` fetches t-0 from ``offset``, reporting ``log_start`` as its log start offset."""
    r = c.send(m.FetchRequest(follower, c.epoch[follower], 0, 1, (m.FetchPartition(
        c.topic_id, 0, c.p.leader_epoch, offset, 0 if offset else -1, log_start),)), follower)
    return r.partitions[0]


def delete_records(c: MiniCluster, *parts: tuple[str, int, int], timeout_ms: int = 30_000):
    return ask(c, m.DeleteRecordsRequest(tuple(m.DeleteRecordsPartition(t, i, o) for t, i, o in parts),
                                         timeout_ms))


def replicated(c: MiniCluster, n: int) -> None:
    """``n`` records produced and fetched by both followers: HWM n."""
    c.produce(n)
    for f in (1, 2):
        follower_fetch(c, f, n)
    assert c.p.log.high_watermark == n


def test_delete_records_answers_once_every_live_replica_reached_the_offset():
    """DelayedDeleteRecords: the leader moves its log start offset at once; the answer waits until the low
    watermark (the least log start offset of the live replicas, as their Fetches report it) reaches the
    offset, and gives it."""
    c = MiniCluster()
    replicated(c, 10)
    c.hold = lambda env: env.dst == "client"
    delete_records(c, ("t", 0, 6))
    assert not c.held and c.b.replica_manager.delete_records.parked
    assert c.p.log.log_start_offset == 6
    follower_fetch(c, 1, 10, log_start=6)
    assert not c.held  # replica 2 still reports 0
    r = follower_fetch(c, 2, 10, log_start=0)
    assert r.log_start_offset == 6  # the Fetch answer carries the leader's log start offset
    assert not c.held
    follower_fetch(c, 2, 10, log_start=6)
    (resp,) = [e.message for e in c.held]
    assert [(p.topic, p.partition, p.low_watermark, p.error_code) for p in resp.partitions] == [
        ("t", 0, 6, Errors.NONE)]


def test_delete_records_times_out_with_request_timed_out_when_a_replica_never_catches_up():
    c = MiniCluster()
    replicated(c, 10)
    c.hold = lambda env: env.dst == "client"
    delete_records(c, ("t", 0, 4), timeout_ms=500)
    follower_fetch(c, 1, 10, log_start=4)
    c.advance(c.now + 600)
    (resp,) = [e.message for e in c.held]
    assert (resp.partitions[0].error_code, resp.partitions[0].low_watermark) == (Errors.REQUEST_TIMED_OUT, 0)
    assert not c.b.replica_manager.delete_records.parked and c.p.log.log_start_offset == 4


def test_delete_records_errors_and_the_high_watermark_offset():
    """Partition.deleteRecordsOnLeader: -1 means the HWM; an offset above the HWM is OFFSET_OUT_OF_RANGE and
    moves nothing; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; one this broker follows is
    NOT_LEADER_OR_FOLLOWER."""
    c = MiniCluster()
    replicated(c, 10)
    c.produce(5)  # LEO 15, HWM 10
    create(c, "f", assignment=((1, 0, 2),))
    c.advance(c.now + 10)
    for f in (1, 2):
        follower_fetch(c, f, 15, log_start=0)
    r = delete_records(c, ("t", 0, 99), ("nope", 0, 1), ("f", 0, 0), timeout_ms=0)
    assert [(p.topic, p.error_code) for p in r.partitions] == [
        ("t", Errors.OFFSET_OUT_OF_RANGE), ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ("f", Errors.NOT_LEADER_OR_FOLLOWER)]
    assert c.p.log.log_start_offset == 0
    r = delete_records(c, ("t", 0, -1), timeout_ms=0)  # not reached by the followers yet: timed out at once
    assert (r.partitions[0].error_code, c.p.log.log_start_offset) == (Errors.REQUEST_TIMED_OUT, 15)


def test_below_the_log_start_offset_a_fetch_is_out_of_range_and_list_offsets_earliest_answers_it():
    c = MiniCluster()
    replicated(c, 10)
    delete_records(c, ("t", 0, 7), timeout_ms=0)
    r = ask(c, m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(c.topic_id, 0, -1, 3),)))
    assert (r.partitions[0].error_code, r.partitions[0].log_start_offset) == (Errors.OFFSET_OUT_OF_RANGE, 7)
    lo = ask(c, m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("t", 0, m.EARLIEST_TIMESTAMP, -1),)))
    assert (lo.partitions[0].error_code, lo.partitions[0].offset) == (Errors.NONE, 7)
    assert follower_fetch(c, 1, 5).error_code == Errors.OFFSET_OUT_OF_RANGE
    got = ask(c, m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(c.topic_id, 0, -1, 7),)))
    assert got.partitions[0].records and got.partitions[0].error_code == Errors.NONE


def _follower(c: MiniCluster, n: int):
    """Topic "f" led by broker 1 (played by the test), followed by broker 0 holding ``n`` records."""
    c.hold = lambda env: env.dst == 1 and type(env.message) is m.FetchRequest
    fid = create(c, "f", assignment=((1, 0, 2),))
    c.advance(c.now + 10)
    p = c.b.partitions[("f", 0)]
    (req,) = [e for e in c.held if e.message.partitions[0].topic_id == fid]
    c.held.clear()
    return fid, p, req


def _answer(c: MiniCluster, req, fid, *, error=Errors.NONE, hwm=0, log_start=0, records=()):
    c.b.deliver(c.now, m.Envelope(1, 0, req.correlation_id, m.FetchResponse(Errors.NONE, (
        m.FetchPartitionResponse(fid, 0, error, hwm, hwm, log_start, records=records),)), True))
    c.pump()


def test_a_follower_takes_its_leaders_log_start_offset_up_to_its_own_hwm():
    """ReplicaFetcherThread.processPartitionData: maybeIncrementLogStartOffset(leader's log start) after the
    append and the HWM update; the follower reports it in its next Fetch."""
    c = MiniCluster()
    fid, p, req = _follower(c, 0)
    _answer(c, req, fid, hwm=4, log_start=3, records=(RecordBatch(0, 0, batch(6).records),))
    assert (p.log.log_end_offset, p.log.high_watermark, p.log.log_start_offset) == (6, 4, 3)
    c.advance(c.now + 10)
    (nxt,) = [e.message for e in c.held if e.message.partitions[0].topic_id == fid]
    assert (nxt.partitions[0].fetch_offset, nxt.partitions[0].log_start_offset) == (6, 3)


def test_a_follower_below_its_leaders_log_start_offset_restarts_empty_there():
    """AbstractFetcherThread.handleOutOfRangeError: the leader answers OFFSET_OUT_OF_RANGE with a log start
    offset past the follower's LEO (retention deleted what the follower lacks): the follower's log is
    truncated fully and starts at the leader's log start offset, and it fetches from there."""
    c = MiniCluster()
    fid, p, req = _follower(c, 0)
    _answer(c, req, fid, hwm=2, records=(RecordBatch(0, 0, batch(2).records),))
    c.advance(c.now + 10)
    (req2,) = [e for e in c.held if e.message.partitions[0].topic_id == fid]
    c.held.clear()
    _answer(c, req2, fid, error=Errors.OFFSET_OUT_OF_RANGE, hwm=50, log_start=40)
    log = p.log
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (40, 40, 40)
    assert log.epoch_cache.entries() == [] and [s.base_offset for s in log.segments] == [40]
    c.advance(c.now + 10)
    (nxt,) = [e.message for e in c.held if e.message.partitions[0].topic_id == fid]
    assert nxt.partitions[0].fetch_offset == 40


def test_retention_runs_on_the_log_managers_schedule_and_moves_the_log_start_offset():
    """LogManager.cleanupLogs every log.retention.check.interval.ms (first 30 s after start): with segments of
    two batches and retention.bytes of four, the oldest segments below the HWM go."""
    size = batch(1).size_bytes
    c = MiniCluster(config={"log.segment.bytes": str(2 * size), "log.retention.bytes": str(4 * size),
                            "log.retention.check.interval.ms": "1000"})
    for _ in range(9):
        c.produce(1)
    for f in (1, 2):
        follower_fetch(c, f, 9)
    log = c.p.log
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6, 8]
    c.advance(max(c.now, 31_000) + 1000)
    assert [s.base_offset for s in log.segments] == [4, 6, 8] and log.log_start_offset == 4
    assert any("deleted 2 segment(s) breaching the retention.bytes" in line for line in c.b.log_lines)


def test_a_produce_larger_than_segment_bytes_is_record_list_too_large():
    c = MiniCluster(config={"log.segment.bytes": "100"})
    r = c.produce(20)
    assert r.partitions[0].error_code == Errors.RECORD_LIST_TOO_LARGE
    assert "exceeds the maximum configured segment size of 100" in r.partitions[0].error_message
    assert c.p.log.log_end_offset == 0


def test_describe_configs_resolves_retention_ms_through_log_retention_hours():
    """ServerTopicConfigSynonyms: retention.ms <- log.retention.ms, log.retention.minutes, log.retention.hours
    (converted); a topic's own value wins."""
    c = MiniCluster(config={"log.retention.hours": "2", "log.retention.minutes": "5"})
    r = ask(c, m.DescribeConfigsRequest((m.DescribeConfigsResource(2, "t", ("retention.ms", "segment.bytes")),)))
    got = {e.name: (e.value, e.config_source) for e in r.results[0].configs}
    assert got["retention.ms"] == ("300000", STATIC_BROKER_CONFIG)  # minutes before hours
    assert got["segment.bytes"][0] == "1073741824"
    c.send(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(2, "t", (
        m.AlterableConfig("retention.ms", 0, "1000"),)),)), "admin", "controller")
    c.advance(c.now + 600)
    r = ask(c, m.DescribeConfigsRequest((m.DescribeConfigsResource(2, "t", ("retention.ms",)),)))
    assert [(e.value, e.config_source) for e in r.results[0].configs] == [("1000", TOPIC_CONFIG)]
    assert c.p.log.config.retention_ms == 1000


def test_the_checker_excuses_only_what_retention_was_entitled_to_delete():
    """Issue 30, the checker knows retention: an acknowledged record missing from the final log below its log
    start offset is retained (not lost) when retention.ms or retention.bytes allowed its deletion by the end of
    the run; below the log start but newer than retention.ms allows, it is lost (retention went too far)."""
    from kraftlog.check.checkers import judge, lost_acked

    acked = [("p", "t", 0, f"v{i}", "all") for i in range(6)]
    final = {"t-0": {o: (f"v{o}", 0) for o in range(3, 6)}}  # offsets 0..2 deleted, log start 3
    base = {"log_start": 3, "retention_bytes": -1, "end_ms": 10_000,
            "batches": [(o, 100) for o in range(3, 6)],
            "acked_at": {f"v{o}": (o, 1000 * o) for o in range(6)}}
    by_time = {"t-0": {**base, "retention_ms": 7_500}}  # records older than 2,500 ms (offsets 0..2) may go
    retained: list = []
    assert lost_acked(acked, final, by_time, retained)[0] == [] and len(retained) == 3
    too_far = {"t-0": {**base, "retention_ms": 8_500}}  # only offsets 0 and 1 may go: 2 is lost
    assert [r["value"] for r in lost_acked(acked, final, too_far)[0]] == ["v2"]
    by_size = {"t-0": {**base, "retention_ms": -1, "retention_bytes": 300}}  # 3 batches after offset 2 remain
    v = judge(acked, final, [], [], [], retention=by_size)
    assert (v["lost_acked"], v["retained_acked"]) == (0, 3)
    assert "retained_acked" not in judge(acked[3:], final, [], [], [])


def test_the_retention_story_loses_nothing_and_its_follower_restarts_at_the_leaders_log_start(library):
    """scenarios/retention-past-a-stopped-follower.yaml at every level: retention deletes segments while
    follower 2 is stopped; it comes back below the leader's log start, restarts there and rejoins the ISR;
    the verdict counts the deleted acknowledged records as retained, none lost, no invariant broken."""
    for level in ("classic", "kip903", "elr", "urm"):
        from kraftlog.level import Level

        v = library.run("retention-past-a-stopped-follower", Level.parse(level)).verdict
        assert v["passed"] and v["safe"] and v["lost_acked"] == 0, (level, v["invariant_violations"])
        assert v["retained_acked"] > 500 and v["final"]["partitions"]["t-0"]["isr"] == [0, 1, 2]
        assert v["undetected_truncations"] == 0 and v["anomalies"]["poll-skip"] == 0


def test_a_roll_or_a_retention_pass_that_meets_an_io_error_takes_the_log_directory_offline(monkeypatch):
    """Issue 30 item 7 (the Storage faults path): a roll on a full disk (the new segment file, the producer
    snapshot) answers the produce KAFKA_STORAGE_ERROR and takes the directory offline, nothing acknowledged;
    a retention pass whose deletion fails (EIO) does the same from the log manager's task."""
    import errno

    size = batch(1).size_bytes
    c = MiniCluster(config={"log.segment.bytes": str(2 * size)})
    c.produce(1)
    c.produce(1)
    c.b.disk.set_full(True)
    r = c.produce(1)  # the third batch rolls the segment: ENOSPC
    assert r.partitions[0].error_code == Errors.KAFKA_STORAGE_ERROR
    assert c.b.log_dir_offline and "No space left on device" in c.b.log_dir_failure

    c = MiniCluster(config={"log.segment.bytes": str(2 * size), "log.retention.bytes": "0",
                            "log.retention.check.interval.ms": "1000", "log.initial.task.delay.ms": "1000"})
    for _ in range(3):
        c.produce(1)
    for f in (1, 2):
        follower_fetch(c, f, 3)

    def failing_delete(self, path, now_ms):
        raise OSError(errno.EIO, "Input/output error", path)

    monkeypatch.setattr(SimDisk, "delete", failing_delete)
    c.advance(c.now + 2000)
    assert c.b.log_dir_offline and "retention task" in c.b.log_dir_failure
