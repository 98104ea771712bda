"""Metadata snapshots (issue 34): the image as records, the snapshot file, when to write one.

Ports Kafka's ``SnapshotGeneratorTest`` (the policy) and checks the property the issue names: an image rebuilt from
any snapshot plus the log after it equals the image replayed from offset 0.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataImage
from kraftlog.metadata.records import (
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from kraftlog.metadata.snapshot import (
    SnapshotGenerator,
    SnapshotId,
    image_from_snapshot,
    image_records,
    metadata_record_bytes,
)
from kraftlog.net.segment import encode_item
from kraftlog.protocol.errors import WireError
from kraftlog.protocol.wire.snapshots import decode_snapshot, encode_snapshot

MINUTE = 60_000
DAY = 24 * 60 * MINUTE
TOPIC_IDS = [uuid.UUID(int=i + 1) for i in range(4)]
NAMES = ["a", "b", "c", "d"]


# ============================================================ SnapshotGeneratorTest
def test_create_snapshot():
    """SnapshotGeneratorTest.testCreateSnapshot: 200 bytes between snapshots; the first 100-byte delta does not
    trigger one, the second does; the counters restart then."""
    gen = SnapshotGenerator(200, 10 * DAY, 0)
    assert gen.publish_log_delta(100, 1) is None
    assert gen.publish_log_delta(100, 2) == "we have replayed at least 200 bytes"
    assert gen.bytes_since_last_snapshot == 0 and gen.last_snapshot_time_ms == 2
    assert gen.publish_log_delta(100, 3) is None


def test_snapshots_disabled():
    """SnapshotGeneratorTest.testSnapshotsDisabled: no snapshot while disabled, however many bytes."""
    gen = SnapshotGenerator(1, 0, 0)
    gen.disable("we are testing disable()")
    assert gen.publish_log_delta(100, 1) is None
    assert gen.disabled_reason == "we are testing disable()"


def test_time_based_snapshots():
    """SnapshotGeneratorTest.testTimeBasedSnapshots: 30 minutes; after 40 minutes the next delta triggers one, and
    the byte count restarts, so 150 more bytes do not."""
    gen = SnapshotGenerator(200, 30 * MINUTE, 0)
    assert gen.publish_log_delta(50, 0) is None
    assert gen.publish_log_delta(50, 40 * MINUTE) == f"we have waited at least {30 * MINUTE} ms"
    assert gen.publish_log_delta(150, 40 * MINUTE + 1) is None


def test_no_time_rule_when_the_interval_is_zero():
    """metadata.log.max.snapshot.interval.ms = 0 disables the time rule (Kafka's maxTimeSinceLastSnapshotNs 0)."""
    gen = SnapshotGenerator(1_000_000, 0, 0)
    assert gen.publish_log_delta(1, 100 * DAY) is None


def test_loading_a_snapshot_restarts_the_counters():
    """SnapshotGenerator.publishSnapshot resets the counters."""
    gen = SnapshotGenerator(200, 30 * MINUTE, 0)
    gen.publish_log_delta(150, 1)
    gen.publish_snapshot(29 * MINUTE)
    assert gen.publish_log_delta(150, 30 * MINUTE) is None  # 150 bytes, 1 minute since the snapshot


# ============================================================ the bytes a record takes
@pytest.mark.parametrize("record", [
    TopicRecord("t", TOPIC_IDS[0]),
    PartitionChangeRecord(0, TOPIC_IDS[0], isr=(1, 2, 3), leader=1),
    RegisterBrokerRecord(7, uuid.UUID(int=9), 42, rack="r" * 300, listeners=("CLIENT://h:9092",) * 40),
], ids=["small", "change", "large"])
def test_metadata_record_bytes_is_the_size_of_its_metadata_log_batch(record):
    """metadata_record_bytes = the exact length of the one-record batch the file-backed metadata log writes."""
    assert metadata_record_bytes(record) == len(encode_item(1, record, 123, 5))


# ============================================================ the snapshot file
def test_a_snapshot_file_round_trips_with_its_header_timestamp():
    records = [TopicRecord(f"t{i}", uuid.UUID(int=i + 1)) for i in range(2500)]
    data = encode_snapshot(records, 3, 1234)
    assert decode_snapshot(data) == (records, 1234)
    assert decode_snapshot(encode_snapshot([], 0, 7)) == ([], 7)  # an empty image: header and footer only


def test_every_flipped_byte_of_a_snapshot_is_detected():
    """A snapshot is used whole or not at all: flipping any one byte (inside a batch's CRC-32C, or in the fields
    the CRC does not cover: base offset, length, epoch, magic, the CRC itself) makes it fail to decode."""
    data = encode_snapshot([TopicRecord(f"t{i}", uuid.UUID(int=i + 1)) for i in range(12)], 2, 99)
    undetected = []
    for i in range(len(data)):
        bad = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]
        try:
            decode_snapshot(bad)
        except WireError:
            continue
        undetected.append(i)
    assert undetected == []


@pytest.mark.parametrize("cut", [1, 20, -1, -30])
def test_a_truncated_snapshot_is_refused(cut):
    data = encode_snapshot([TopicRecord("t", TOPIC_IDS[0])] * 5, 0, 1)
    with pytest.raises(WireError):
        decode_snapshot(data[:cut])


# ============================================================ the image as records
def _replay(records, base=0, image=None):
    return (image or MetadataImage()).replay(records, base)[0]


def test_image_records_rebuild_every_part_of_the_image():
    """MetadataImage.write: registrations (fencing, controlled shutdown, log dirs), topics with every partition's
    full state (ELR, last known ELR and leader, epochs, recovery state), configs of topics, brokers and the
    cluster."""
    d1 = uuid.UUID(int=77)
    log = [
        RegisterBrokerRecord(1, uuid.UUID(int=5), 0, rack="r1", listeners=("CLIENT://h1:9092",), log_dirs=(d1,)),
        RegisterBrokerRecord(2, uuid.UUID(int=6), 1),
        BrokerRegistrationChangeRecord(1, 0, fenced=False),
        BrokerRegistrationChangeRecord(2, 1, fenced=False, in_controlled_shutdown=True, log_dirs=()),
        TopicRecord("t", TOPIC_IDS[0]),
        PartitionRecord(0, TOPIC_IDS[0], (1, 2), (1, 2), 1),
        PartitionRecord(2, TOPIC_IDS[0], (2, 1), (2,), 2),  # a gap at partition 1
        PartitionChangeRecord(0, TOPIC_IDS[0], isr=(1,), eligible_leader_replicas=(2,), last_known_elr=(2,)),
        PartitionChangeRecord(0, TOPIC_IDS[0], leader=-1, isr=(), last_known_leader=1, leader_recovery_state=1),
        ConfigRecord(RESOURCE_TOPIC, "t", "min.insync.replicas", "2"),
        ConfigRecord(RESOURCE_BROKER, "", "unclean.leader.election.enable", "true"),
        ConfigRecord(RESOURCE_BROKER, "1", "log.retention.ms", "1000"),
        ConfigRecord(RESOURCE_TOPIC, "gone", "retention.ms", "5"),  # a config of a topic that does not exist
    ]
    image = _replay(log)
    sid = SnapshotId(len(log), 0)
    rebuilt, delta = image_from_snapshot(image_records(image), sid)
    assert rebuilt == image and not delta.errors and delta.deleted_topics == {}


# A record generator over a few ids, names and brokers: records that apply, and records that do not (an unknown
# topic id or partition, a name taken, a change for an older registration), which both paths must skip alike.
_brokers = st.sampled_from([1, 2, 3])
_tid = st.sampled_from(TOPIC_IDS)
_isr = st.lists(_brokers, max_size=3, unique=True).map(tuple)
_records = st.one_of(
    st.builds(RegisterBrokerRecord, _brokers, st.sampled_from([uuid.UUID(int=100), uuid.UUID(int=101)]),
              st.integers(0, 5), fenced=st.booleans()),
    st.builds(BrokerRegistrationChangeRecord, _brokers, st.integers(0, 5), fenced=st.none() | st.booleans(),
              in_controlled_shutdown=st.none() | st.booleans()),
    st.builds(TopicRecord, st.sampled_from(NAMES), _tid),
    st.builds(RemoveTopicRecord, _tid),
    st.builds(PartitionRecord, st.integers(0, 2), _tid, _isr, _isr, st.sampled_from([-1, 1, 2, 3]),
              leader_epoch=st.integers(0, 3)),
    st.builds(PartitionChangeRecord, st.integers(0, 2), _tid, isr=st.none() | _isr,
              leader=st.none() | st.sampled_from([-1, 1, 2]), eligible_leader_replicas=st.none() | _isr,
              last_known_elr=st.none() | _isr, last_known_leader=st.none() | st.sampled_from([-1, 1])),
    st.builds(ConfigRecord, st.sampled_from([RESOURCE_TOPIC, RESOURCE_BROKER]), st.sampled_from(NAMES + ["", "1"]),
              st.sampled_from(["min.insync.replicas", "retention.ms", "x.unknown"]),
              st.none() | st.sampled_from(["1", "2", "nope"])),
    st.builds(ClearElrRecord, st.none() | st.sampled_from(NAMES)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_records, max_size=60), st.data())
def test_an_image_from_any_snapshot_plus_the_log_after_it_equals_the_replay_from_offset_0(records, data):
    """The issue's property: for any metadata log and any snapshot point k, the image of a snapshot at k (its
    records written and read back through the snapshot file) with records k.. replayed on it equals the image
    replayed from offset 0, and both skip the same records."""
    k = data.draw(st.integers(0, len(records)), label="snapshot end offset")
    full, full_delta = MetadataImage().replay(records, 0)
    at_k, _ = MetadataImage().replay(records[:k], 0)
    file_records, _ = decode_snapshot(encode_snapshot(image_records(at_k), 0, 1))
    loaded, load_delta = image_from_snapshot(file_records, SnapshotId(k, 0))
    assert not load_delta.errors
    assert loaded == at_k
    rebuilt, tail_delta = loaded.replay(records[k:], k)
    assert rebuilt == full
    assert [e[0] for e in tail_delta.errors] == [e[0] for e in full_delta.errors if e[0] >= k]
