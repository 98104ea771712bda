"""Snapshots through a real controller and a real broker (issue 34): the single controller's snapshots and
FetchSnapshot (Kafka's ``KafkaRaftClientSnapshotTest`` cases that apply to a single-node quorum), and a broker's
local metadata log (``MetadataLoaderTest`` cases: catching up, loading snapshots).
"""

from __future__ import annotations

import random

from kraftlog.broker.broker import Broker
from kraftlog.broker.log_manager import stray_partitions
from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.level import Level
from kraftlog.metadata.snapshot import SnapshotId, image_records
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.wire.snapshots import decode_snapshot
from test_broker import MiniCluster

# a snapshot every ~3 metadata records, segments of ~3 records, a retention of a few records and snapshots
SMALL = {"metadata.log.max.record.bytes.between.snapshots": "600", "metadata.log.segment.bytes": "600",
         "metadata.max.retention.bytes": "1500", "kraftlog.metadata.log.cleanup.interval.ms": "100"}


def alter(c: MiniCluster, i: int) -> None:
    config = (m.AlterableConfig("retention.ms", m.OP_SET, str(600_000 + i)),)
    r = c.send(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(m.RESOURCE_TOPIC, "t", config),)), "admin",
               CONTROLLER)
    assert r.responses[0].error_code == Errors.NONE


def fetch(c: MiniCluster, offset: int, cluster_id: str | None = None) -> m.MetadataFetchResponse:
    return c.send(m.MetadataFetchRequest(1, c.epoch[1], offset, 0, cluster_id), 1, CONTROLLER)


def fetch_snapshot(c: MiniCluster, sid: SnapshotId, position: int, max_bytes: int = 1 << 20,
                   cluster_id: str | None = None) -> m.FetchSnapshotResponse:
    return c.send(m.FetchSnapshotRequest(-1, sid.end_offset, sid.epoch, position, cluster_id, 1, max_bytes), 1,
                  CONTROLLER)


def cleaned(c: MiniCluster, n: int = 20) -> None:
    for i in range(n):
        alter(c, i)
    c.advance(c.now + 200)  # the cleaning runs on its timer (every 100 ms here), never inline with an append
    assert c.ctl.single is not None and c.ctl.single.log.start_offset > 0


# ============================================================ the controller (KafkaRaftClientSnapshotTest)
def test_fetch_below_the_log_start_offset_answers_the_latest_snapshot_id():
    """KafkaRaftClientSnapshotTest.testFetchRequestOffsetLessThanLogStart: a fetch below the log start offset gets
    the latest snapshot's id (the FetchResponse's SnapshotId) and no records."""
    c = MiniCluster(config=SMALL)
    cleaned(c)
    log = c.ctl.single.log
    resp = fetch(c, 0)
    latest = log.latest_snapshot_id
    assert resp.error_code == Errors.NONE and not resp.records and latest is not None
    assert (resp.snapshot_end_offset, resp.snapshot_epoch) == (latest.end_offset, latest.epoch)
    assert resp.log_start_offset == log.start_offset
    at_start = fetch(c, log.start_offset)
    assert at_start.snapshot_end_offset == -1 and at_start.base_offset == log.start_offset


def test_fetch_snapshot_serves_the_snapshot_in_chunks():
    """KafkaRaftClientSnapshotTest.testFetchSnapshotRequestAsLeader / PartialFetchSnapshotRequestAsLeader: chunks of
    at most max_bytes from each position, with the snapshot's size; together the snapshot file, which holds the
    controller's image at its end offset."""
    c = MiniCluster(config=SMALL)
    cleaned(c)
    sid = c.ctl.single.log.latest_snapshot_id
    data = b""
    while True:
        r = fetch_snapshot(c, sid, len(data), max_bytes=100)
        assert (r.error_code, r.partition_error_code, r.position) == (Errors.NONE, Errors.NONE, len(data))
        assert len(r.unaligned_records) <= 100
        data += r.unaligned_records
        if len(data) == r.size:
            break
    assert data == c.ctl.single.log.snapshot_data(sid)
    records, _ = decode_snapshot(data)
    image_now = c.ctl.image
    assert sid.end_offset <= c.ctl.end_offset and records  # the image at the snapshot, with the brokers and topic
    assert {type(r).__name__ for r in records} >= {"RegisterBrokerRecord", "TopicRecord", "PartitionRecord"}
    if sid.end_offset == c.ctl.end_offset:
        assert records == image_records(image_now)


def test_fetch_snapshot_errors():
    """KafkaRaftClientSnapshotTest.testFetchSnapshotRequestMissingSnapshot / ...UnknownPartition-like cases and
    testFetchSnapshotRequestClusterIdValidation: a snapshot not kept → SNAPSHOT_NOT_FOUND; a position outside it →
    POSITION_OUT_OF_RANGE; another cluster id → INCONSISTENT_CLUSTER_ID."""
    c = MiniCluster(config=SMALL)
    cleaned(c)
    sid = c.ctl.single.log.latest_snapshot_id
    size = len(c.ctl.single.log.snapshot_data(sid))
    assert fetch_snapshot(c, SnapshotId(sid.end_offset + 1, 0), 0).partition_error_code == Errors.SNAPSHOT_NOT_FOUND
    assert fetch_snapshot(c, sid, size).partition_error_code == Errors.POSITION_OUT_OF_RANGE
    assert fetch_snapshot(c, sid, -1).partition_error_code == Errors.POSITION_OUT_OF_RANGE
    assert fetch_snapshot(c, sid, 0, cluster_id="other").error_code == Errors.INCONSISTENT_CLUSTER_ID
    assert fetch_snapshot(c, sid, 0, cluster_id="kraftlog").partition_error_code == Errors.NONE


def test_a_restarted_controller_rebuilds_the_same_image_from_its_snapshot_and_log():
    """Controller failover after snapshots and cleaning: a new controller over the same disk loads the latest
    snapshot and the records after it: the same image and log end as the one it replaces."""
    c = MiniCluster(config=SMALL)
    cleaned(c)
    image, end, start = c.ctl.image, c.ctl.end_offset, c.ctl.single.log.start_offset
    new = QuorumController(SMALL, Level.CLASSIC, c.ctl.disk, random.Random(1), c.now)
    assert new.image == image and new.end_offset == end and new.single.log.start_offset == start


def test_snapshots_are_disabled_after_a_record_could_not_be_applied():
    """Kafka disables snapshots after a metadata fault: a record the image could not apply would be compacted
    away. The controller keeps its whole log then."""
    c = MiniCluster(config=SMALL)
    c.ctl.metadata_apply_errors.add(0, "a record", "a test's fault")
    before = len(c.ctl.single.log.snapshots)
    for i in range(10):
        alter(c, i)
    assert len(c.ctl.single.log.snapshots) == before
    assert c.ctl.single.snapshot_generator.disabled_reason == "1 metadata record(s) not applied"


def test_a_snapshot_that_cannot_be_written_leaves_the_log_whole_and_the_controller_running():
    """A full disk while writing a snapshot (ENOSPC): the snapshot is skipped with a line, nothing is committed
    twice or lost, the controller goes on; the next one is written once there is space."""
    c = MiniCluster(config={**SMALL, "metadata.max.retention.bytes": "-1"})
    log = c.ctl.single.log
    real = log.disk

    class FullForSnapshots:
        def __getattr__(self, name):
            return getattr(real, name)

        def write_atomic(self, path, value, now_ms):
            if path.endswith(".checkpoint"):
                raise OSError(28, "No space left on device", path)
            real.write_atomic(path, value, now_ms)

    log.disk = log.files.disk = FullForSnapshots()
    before = list(log.snapshots)
    for i in range(5):
        alter(c, i)
    assert c.ctl.fatal_error is None and log.snapshots == before
    assert any("not written" in line for line in c.ctl.take_log_lines())
    log.disk = log.files.disk = real
    for i in range(5, 10):
        alter(c, i)
    assert len(log.snapshots) > len(before) and log.start_offset == 0  # retention -1: nothing cleaned


# ============================================================ a broker's local metadata log (MetadataLoaderTest)
def restart(c: MiniCluster) -> Broker:
    b = Broker(0, c.config, Level.CLASSIC, c.b.disk, random.Random(7), c.now)
    c.b = c.nodes[0] = b
    return b


def test_a_restarted_broker_loads_its_local_copy_and_does_not_publish_before_catching_up():
    """MetadataLoaderTest.testCatchingUpState: a restarted broker's image is its local copy's (snapshot and
    records), not published until a fetch reaches the controller's high watermark; then it fetches only what it
    missed."""
    c = MiniCluster(config=SMALL)
    for i in range(6):
        alter(c, i)
    c.advance(c.now + 1000)
    offset = c.b.image.offset
    assert offset == c.ctl.end_offset - 1 and c.b.loader.local is not None
    del c.nodes[0]
    for i in range(6, 8):
        alter(c, i)  # written while broker 0 is down
    b = restart(c)
    assert b.image.offset == offset and not b.publisher.published
    assert b.image.topics == c.ctl.image.topics
    fetched: list[int] = []
    real = b.send_request

    def spy(dst, message, now_ms, timeout_ms, context):
        if isinstance(message, m.MetadataFetchRequest):
            fetched.append(message.fetch_offset)
        return real(dst, message, now_ms, timeout_ms, context)

    b.send_request = spy
    c.advance(c.now + 12000)  # the old incarnation's session expires (9 s), the new one registers and catches up
    assert b.publisher.published and b.image.offset == c.ctl.end_offset - 1
    assert fetched and min(fetched) == offset + 1  # only what it missed, not from offset 0


def test_a_broker_behind_the_controllers_log_start_loads_the_controllers_snapshot_and_keeps_strays():
    """A broker down while a topic is deleted and the controller's log is cleaned past the deletion: restarted, it
    fetches the controller's snapshot (FetchSnapshot), loads it whole, and renames the deleted topic's partition
    -stray (no RemoveTopicRecord says it was deleted): never a silent deletion."""
    c = MiniCluster(config=SMALL)
    c.produce(5)
    down_at = c.b.image.offset
    del c.nodes[0]
    r = c.send(m.DeleteTopicsRequest(("t",)), "admin", CONTROLLER)
    assert r.responses[0].error_code == Errors.NONE
    c.send(m.CreateTopicsRequest((m.CreatableTopic("other", assignment=((1, 2),)),)), "admin", CONTROLLER)
    for i in range(20):
        r = c.send(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            m.RESOURCE_TOPIC, "other", (m.AlterableConfig("retention.ms", m.OP_SET, str(600_000 + i)),)),)),
            "admin", CONTROLLER)
    c.advance(c.now + 200)
    assert c.ctl.single.log.start_offset > down_at + 1  # the deletion is below the controller's log start
    b = restart(c)
    c.advance(c.now + 12000)
    assert b.image.offset == c.ctl.end_offset - 1 and "t" not in b.image.topics
    assert list(stray_partitions(b.disk)) == ["t-0"]
    assert any("loaded metadata snapshot" in line for line in b.take_log_lines())


def test_a_local_copy_that_cannot_be_loaded_is_fetched_again():
    """A broker's local copy whose only snapshot does not decode and whose log no longer starts at 0: deleted and
    fetched again (it is only a copy); the broker catches up."""
    c = MiniCluster(config=SMALL)
    for i in range(12):
        alter(c, i)
    c.advance(c.now + 1000)
    local = c.b.loader.local
    alter(c, 12)  # a record after the broker's latest snapshot: its copy holds a segment above the log start
    c.advance(c.now + 1000)
    assert local is not None and 0 < local.start_offset < local.end_offset
    for sid in local.snapshots:
        c.b.disk.write_atomic(f"metadata/__cluster_metadata-0/{sid.file_name()}", b"\x00" * 64, c.now)
    b = restart(c)
    assert b.image.offset == -1
    assert any("cannot be loaded" in line for line in b.take_log_lines())
    c.advance(c.now + 12000)
    assert b.image.offset == c.ctl.end_offset - 1 and b.publisher.published


def test_the_snapshot_id_and_the_snapshot_chunks_cross_the_wire():
    """On the wire the SnapshotId is Fetch's tagged field (v15-v18) and a FetchSnapshot answer carries the bytes as
    UnalignedRecords: both come back as sent."""
    from kraftlog.protocol import wire
    resp = m.MetadataFetchResponse(Errors.NONE, 100, 5, log_start_offset=40, snapshot_end_offset=40,
                                   snapshot_epoch=0)
    back = wire.roundtrip(resp, as_response_to=m.MetadataFetchRequest)
    assert (back.snapshot_end_offset, back.snapshot_epoch, back.log_start_offset, back.records) == (40, 0, 40, ())
    chunk = m.FetchSnapshotResponse(Errors.NONE, Errors.NONE, 40, 0, size=9000, position=4096,
                                    unaligned_records=bytes(range(256)) * 4)
    assert wire.roundtrip(chunk, as_response_to=m.FetchSnapshotRequest) == chunk
    refused = m.FetchSnapshotResponse(Errors.INCONSISTENT_CLUSTER_ID, Errors.NONE, -1, -1)
    assert wire.roundtrip(refused, as_response_to=m.FetchSnapshotRequest) == refused


def test_a_running_broker_loading_a_snapshot_without_a_topic_tombstones_its_offsets_and_keeps_its_logs():
    """Kafka's TopicsDelta.finishSnapshot -> GroupCoordinator.onPartitionsDeleted: a topic missing from a snapshot
    a published broker loads has its committed offsets tombstoned; its partition directories become -stray (the
    Snapshots issue's rule: no RemoveTopicRecord says why it went)."""
    from kraftlog.metadata.records import RemoveTopicRecord
    c = MiniCluster(config=SMALL)
    c.produce(5)
    b = c.b
    assert b.publisher.published and "t" in b.image.topics
    calls: list[list[str]] = []
    b.publisher._groups.on_topics_deleted = lambda now, names: calls.append(list(names))
    without, _ = b.image.replay([RemoveTopicRecord(b.image.topics["t"].topic_id)], b.image.offset + 1)
    b.publisher.load_snapshot(c.now, without)
    assert calls == [["t"]]
    assert list(stray_partitions(b.disk)) == ["t-0"]
