"""Issue 28 items 2-4 (client surface): ListOffsets MAX_TIMESTAMP (KIP-734) on the sans-I/O broker; the
real-client checks live in ``test_client_topics_real.py``."""

from __future__ import annotations

from kraftlog.level import Level
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from test_broker import MiniCluster


def _produce_timestamps(c: MiniCluster, *batches: tuple[int, ...]) -> None:
    """One batch per tuple of record timestamps (ms), then both followers catch up so the HWM covers all."""
    for stamps in batches:
        b = RecordBatch(-1, -1, tuple(Record(ts, None, b"v%d" % ts) for ts in stamps))
        resp = c.send(m.ProduceRequest(1, 30000, (m.ProducePartition("t", 0, (b,)),)), "client")
        assert resp.partitions[0].error_code == Errors.NONE
    leo = c.p.log.log_end_offset
    c.fetch(1, leo, last_epoch=0)
    c.fetch(2, leo, last_epoch=0)
    assert c.p.log.high_watermark == leo


def _max_timestamp(c: MiniCluster) -> m.ListOffsetsPartitionResponse:
    resp = c.send(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("t", 0, m.MAX_TIMESTAMP),)), "client")
    return resp.partitions[0]


def test_list_offsets_max_timestamp_answers_the_record_with_the_largest_timestamp_out_of_order():
    """KIP-734: MAX_TIMESTAMP (-3) answers the offset and timestamp of the record with the largest
    timestamp, not the last record and not a timestamp search for -3 (which answered offset 0)."""
    c = MiniCluster(level=Level.ELR)
    _produce_timestamps(c, (1_000, 9_000, 2_000), (5_000, 8_999), (3_000,))
    part = _max_timestamp(c)
    assert part.error_code == Errors.NONE
    assert (part.offset, part.timestamp, part.leader_epoch) == (1, 9_000, c.p.leader_epoch)


def test_list_offsets_max_timestamp_first_of_equal_timestamps_and_only_below_the_hwm():
    """Kafka's offsetOfMaxTimestampSoFar keeps the first record with the largest timestamp; a record
    above the HWM is not answered (a consumer could not read it yet)."""
    c = MiniCluster(level=Level.ELR)
    _produce_timestamps(c, (4_000, 7_000), (7_000, 1_000))
    b = RecordBatch(-1, -1, (Record(99_000, None, b"late"),))
    assert c.send(m.ProduceRequest(1, 30000, (m.ProducePartition("t", 0, (b,)),)),
                  "client").partitions[0].error_code == Errors.NONE
    assert c.p.log.high_watermark == 4
    part = _max_timestamp(c)
    assert (part.offset, part.timestamp) == (1, 7_000)


def test_list_offsets_max_timestamp_on_an_empty_partition_answers_no_offset():
    """KIP-734 on an empty log: no record, so offset -1 and timestamp -1 with no error."""
    c = MiniCluster(level=Level.ELR)
    part = _max_timestamp(c)
    assert (part.error_code, part.offset, part.timestamp) == (Errors.NONE, -1, -1)
