"""Issue 31: a compacted topic refuses records without a key (Kafka's ``LogValidator.validateKey``, KIP-467's
record errors), in both forms of a batch, on the wire and at the broker."""

from __future__ import annotations

from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.protocol.validation import RecordLimits, Refusal, validate_produce_records

NOW = 1_700_000_000_000
COMPACTED = RecordLimits(compacted=True)
TEXT = "Compacted topic cannot accept message without key in topic partition t-0."


def batch(*keys: bytes | None, encoded: bool = True) -> RecordBatch:
    b = RecordBatch(-1, -1, tuple(Record(NOW, k, b"v") for k in keys))
    return RecordBatch.from_bytes(b.data) if encoded else b


def test_keyless_records_in_a_compacted_topic_are_refused_with_one_record_error_each():
    """LogValidator.validateKey + processRecordErrors: INVALID_RECORD, a record error (batch index, Kafka's text)
    per keyless record, and the message naming how many and showing the first three."""
    for encoded in (True, False):
        out = validate_produce_records("t", 0, (batch(b"a", None, b"c", None, None, None, encoded=encoded),), NOW,
                                       COMPACTED)
        assert isinstance(out, Refusal) and out.error_code == Errors.INVALID_RECORD
        assert out.record_errors == tuple((i, TEXT) for i in (1, 3, 4, 5))
        assert out.message == ("One or more records have been rejected due to 4 record errors in total, and only "
                               f"showing the first three errors at most: [RecordError(batchIndex=1, message='{TEXT}'), "
                               f"RecordError(batchIndex=3, message='{TEXT}'), RecordError(batchIndex=4, "
                               f"message='{TEXT}')]")


def test_keyed_records_and_topics_without_compaction_are_accepted():
    assert validate_produce_records("t", 0, (batch(b"a", b"b"),), NOW, COMPACTED) is None
    assert validate_produce_records("t", 0, (batch(None, None),), NOW, RecordLimits()) is None


def test_an_invalid_timestamp_wins_over_a_missing_key():
    """processRecordErrors: any INVALID_TIMESTAMP record error makes the whole refusal INVALID_TIMESTAMP."""
    late = RecordBatch.from_bytes(RecordBatch(-1, -1, (Record(NOW + 10 * 3_600_000, None, b"v"),)).data)
    out = validate_produce_records("t", 0, (late,), NOW, COMPACTED)
    assert out is not None and out.error_code == Errors.INVALID_TIMESTAMP


def test_record_errors_cross_the_wire_from_produce_v8():
    """KIP-467: Produce v8+ responses carry RecordErrors (batch index, message) and ErrorMessage; v7 carries
    neither."""
    resp = m.ProduceResponse((m.ProducePartitionResponse("t", 0, Errors.INVALID_RECORD, error_message="why",
                                                         record_errors=((1, TEXT), (3, None))),))
    for version in (8, 9):
        _, back = wire.decode_response(wire.encode_response(resp, 7, version), m.ProduceRequest, version)
        assert back == resp
    _, old = wire.decode_response(wire.encode_response(resp, 7, 7), m.ProduceRequest, 7)
    assert isinstance(old, m.ProduceResponse) and old.partitions[0].record_errors == ()
