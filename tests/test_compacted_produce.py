"""Issue 31: a compacted topic refuses records without a key (Kafka's ``LogValidator.validateKey``, KIP-467's
record errors), in both forms of a batch, on the wire and at the broker."""

from __future__ import annotations

import pytest

from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.protocol.validation import RecordLimits, Refusal, validate_produce_records
from test_broker import MiniCluster

NOW = 1_700_000_000_000
HOUR = 3_600_000
COMPACTED = RecordLimits(compacted=True)
TEXT = "Compacted topic cannot accept message without key in topic partition t-0."
BOTH_FORMS = pytest.mark.parametrize("encoded", [True, False], ids=["encoded", "records"])


def batch(*keys: bytes | None, encoded: bool = True, ts: int = NOW) -> RecordBatch:
    b = RecordBatch(-1, -1, tuple(Record(ts, k, b"v") for k in keys))
    return RecordBatch.from_bytes(b.data) if encoded else b


def _late(keys: tuple[bytes | None, ...], late: set[int], encoded: bool) -> RecordBatch:
    """Records with ``keys``, those at the indexes ``late`` stamped 10 hours ahead."""
    b = RecordBatch(-1, -1, tuple(Record(NOW + 10 * HOUR if i in late else NOW, k, b"v") for i, k in enumerate(keys)))
    return RecordBatch.from_bytes(b.data) if encoded else b


# ======================================================================== LogValidator, record by record
@BOTH_FORMS
def test_keyless_records_in_a_compacted_topic_are_refused_with_one_record_error_each(encoded):
    """LogValidator.validateKey + processRecordErrors: INVALID_RECORD, a record error (batch index, Kafka's text)
    per keyless record, and the message naming how many and showing the first three."""
    out = validate_produce_records("t", 0, (batch(b"a", None, b"c", None, None, None, encoded=encoded),), NOW,
                                   COMPACTED)
    assert isinstance(out, Refusal) and out.error_code == Errors.INVALID_RECORD
    assert out.record_errors == tuple((i, TEXT) for i in (1, 3, 4, 5))
    assert out.message == ("One or more records have been rejected due to 4 record errors in total, and only "
                           f"showing the first three errors at most: [RecordError(batchIndex=1, message='{TEXT}'), "
                           f"RecordError(batchIndex=3, message='{TEXT}'), RecordError(batchIndex=4, "
                           f"message='{TEXT}')]")
    one = validate_produce_records("orders", 7, (batch(None, encoded=encoded),), NOW, COMPACTED)
    text = "Compacted topic cannot accept message without key in topic partition orders-7."
    assert one == Refusal(Errors.INVALID_RECORD, "One or more records have been rejected due to 1 record errors in "
                          f"total, and only showing the first three errors at most: [RecordError(batchIndex=0, "
                          f"message='{text}')]", ((0, text),))


@BOTH_FORMS
def test_keyed_records_and_topics_without_compaction_are_accepted(encoded):
    assert validate_produce_records("t", 0, (batch(b"a", b"b", encoded=encoded),), NOW, COMPACTED) is None
    assert validate_produce_records("t", 0, (batch(b"", encoded=encoded),), NOW, COMPACTED) is None  # empty key
    assert validate_produce_records("t", 0, (batch(None, None, encoded=encoded),), NOW, RecordLimits()) is None


@BOTH_FORMS
def test_a_keyless_record_is_a_key_error_whatever_its_timestamp(encoded):
    """LogValidator.validateRecord checks a record's timestamp only when its key passes: a late record without a
    key in a compacted topic is a key error (INVALID_RECORD), not a timestamp error."""
    out = validate_produce_records("t", 0, (_late((None, b"k"), {0}, encoded),), NOW, COMPACTED)
    assert out is not None and out.error_code == Errors.INVALID_RECORD and out.record_errors == ((0, TEXT),)


@BOTH_FORMS
def test_a_timestamp_error_makes_the_whole_refusal_invalid_timestamp_with_every_record_error(encoded):
    """processRecordErrors: any INVALID_TIMESTAMP record error makes the refusal INVALID_TIMESTAMP, Kafka's
    message, and every record's error (key errors included) in the record errors."""
    out = validate_produce_records("t", 0, (_late((None, b"k", b"j"), {1}, encoded),), NOW, COMPACTED)
    late = (f"Timestamp {NOW + 10 * HOUR} of message with offset 1 is out of range. The timestamp should be "
            f"within [{NOW - (2**63 - 1)}, {NOW + HOUR}]")
    assert out == Refusal(Errors.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp",
                          ((0, TEXT), (1, late)))
    plain = validate_produce_records("t", 0, (_late((None, b"k", None), {0, 2}, encoded),), NOW, RecordLimits())
    assert plain is not None and plain.error_code == Errors.INVALID_TIMESTAMP
    assert [i for i, _ in plain.record_errors] == [0, 2]


# ======================================================================== the wire (KIP-467, Produce v8+)
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
    entity = wire.to_kio(resp)
    (err,) = entity.responses[0].partition_responses[0].record_errors[:1]
    assert (err.batch_index, err.batch_index_error_message) == (1, TEXT)


# ======================================================================== the broker
def _compacted_cluster() -> MiniCluster:
    """MiniCluster's topic ``t`` (delete) and ``c`` created with ``cleanup.policy=compact``, both led by
    broker 0."""
    c = MiniCluster()
    r = c.send(m.CreateTopicsRequest((m.CreatableTopic("c", assignment=((0, 1, 2),),
                                                       configs=(("cleanup.policy", "compact"),)),)),
               "admin", "controller")
    assert r.topics[0].error_code == Errors.NONE
    c.advance(c.now + 10)
    assert c.b.partitions[("c", 0)].is_leader
    return c


def _produce(c: MiniCluster, topic: str, b: RecordBatch) -> m.ProducePartitionResponse:
    return c.send(m.ProduceRequest(1, 30000, (m.ProducePartition(topic, 0, (b,)),)), "client").partitions[0]


@BOTH_FORMS
def test_a_broker_refuses_keyless_records_to_a_compacted_topic_and_appends_nothing(encoded):
    """ReplicaManager.appendRecords: the RecordValidationException's error, message and record errors answer the
    partition; nothing is appended. Keyed records go in, and a topic without compaction takes keyless ones."""
    c = _compacted_cluster()
    log = c.b.partitions[("c", 0)].log
    text = "Compacted topic cannot accept message without key in topic partition c-0."
    p = _produce(c, "c", batch(b"k", None, encoded=encoded, ts=c.now))
    assert (p.error_code, p.record_errors) == (Errors.INVALID_RECORD, ((1, text),)), p
    assert p.error_message is not None and p.error_message.startswith("One or more records have been rejected due to 1")
    assert log.log_end_offset == 0
    p = _produce(c, "c", batch(b"k", b"j", encoded=encoded, ts=c.now))
    assert (p.error_code, p.base_offset, log.log_end_offset) == (Errors.NONE, 0, 2)
    p = _produce(c, "t", batch(None, None, encoded=encoded, ts=c.now))
    assert (p.error_code, p.record_errors, c.p.log.log_end_offset) == (Errors.NONE, (), 2)


def test_the_policy_is_read_through_the_broker_default_and_follows_a_config_change():
    """``cleanup.policy`` resolves through ``log.cleanup.policy``; an IncrementalAlterConfigs of the topic's
    policy reaches the produce path with the next metadata image."""
    c = MiniCluster(config={"log.cleanup.policy": "compact,delete"})
    assert _produce(c, "t", batch(None, ts=c.now)).error_code == Errors.INVALID_RECORD
    c.send(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(2, "t", (
        m.AlterableConfig("cleanup.policy", 0, "delete"),)),)), "admin", "controller")
    c.advance(c.now + 600)
    assert _produce(c, "t", batch(None, ts=c.now)).error_code == Errors.NONE
    assert c.p.log.log_end_offset == 1
