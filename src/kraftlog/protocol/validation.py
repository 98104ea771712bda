"""What a broker refuses from a client, checked as Kafka checks it: topic names (Kafka's ``Topic``, the
rules in :mod:`kraftlog.metadata.topic_names`) and
the record batches of a Produce request (``ProduceRequest.validateRecords``,
``UnifiedLog.analyzeAndValidateRecords``, ``LogValidator``), each answered with Kafka's error code and
message for that topic or partition, never a closed connection (DESIGN.md, "Faults a real deployment
meets").

Batches stay opaque on the produce path (records.py): the header is read, the records are walked
without being built (:func:`~kraftlog.protocol.records.scan_records`, a compressed batch inflated into a
scratch buffer) and the producer's bytes are what the log keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..metadata.topic_names import (
    CLUSTER_METADATA_TOPIC,
    INTERNAL_TOPICS,
    MAX_TOPIC_NAME_LENGTH,
    has_collision_chars,
    is_internal,
    unify_collision_chars,
    validate_topic_name,
)
from .errors import Errors
from .records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    CODECS,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    InvalidRecordError,
    MalformedRecords,
    Record,
    RecordBatch,
    UnsupportedCompressionError,
    scan_records,
)

__all__ = [
    "CLUSTER_METADATA_TOPIC", "INTERNAL_TOPICS", "MAX_TOPIC_NAME_LENGTH", "LONG_MAX", "RecordLimits",
    "validate_topic_name", "is_internal", "has_collision_chars", "unify_collision_chars",
    "validate_produce_records", "Refusal",
]  # the topic-name rules live in kraftlog.metadata.topic_names; re-exported for the request handlers

# ==================================================================================== record batches
#: Java's Long.MAX_VALUE: Kafka's "unbounded" for ``message.timestamp.before.max.ms``.
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """A topic's limits on what a producer may append (Kafka's topic configs, resolved through the broker
    defaults): ``max_message_bytes`` (``max.message.bytes`` / ``message.max.bytes``, bytes of one batch),
    ``timestamp_before_max_ms`` / ``timestamp_after_max_ms`` (``message.timestamp.before.max.ms`` /
    ``message.timestamp.after.max.ms``, how far a record's CreateTime may lie before / after the broker's
    clock), ``compacted`` (``cleanup.policy`` holds ``compact``: every record needs a key). The defaults are Kafka
    4.x's."""

    max_message_bytes: int = 1_048_588
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = 3_600_000
    compacted: bool = False


class Refusal(NamedTuple):
    """Why a Produce partition's records are refused: Kafka's ``error_code`` and ``message`` (the response's
    ErrorMessage) and, for refusals of single records, KIP-467's ``record_errors`` ((batch index, message) of
    each record, the index its position in the batch)."""

    error_code: int
    message: str
    record_errors: tuple[tuple[int, str | None], ...] = ()


DEFAULT_LIMITS = RecordLimits()
#: Kafka's refusal of a Produce partition holding more than one batch (``LogValidator``).
ONE_BATCH_PER_PARTITION = "Produce requests are only allowed to contain exactly one record batch per partition"


def validate_produce_records(topic: str, partition: int, records: Sequence[RecordBatch | MalformedRecords],
                             now_ms: int,
                             limits: RecordLimits = DEFAULT_LIMITS) -> Refusal | None:
    """Why Kafka would refuse ``records`` (one Produce partition's batches: :class:`RecordBatch` objects
    or a :class:`MalformedRecords`) from a client, as a :class:`Refusal`, or None to append them.
    ``now_ms``: the broker's clock (ms since the epoch). In Kafka's order:

    1. an internal topic (``__consumer_offsets`` ...): INVALID_TOPIC_EXCEPTION (``ReplicaManager``);
    2. ``ProduceRequest.validateRecords``: no complete batch, a magic other than 2, or more than one batch:
       INVALID_RECORD (a batch length below 14 or a magic outside 0..2 is CORRUPT_MESSAGE, from Kafka's
       batch iterator);
    3. ``UnifiedLog.analyzeAndValidateRecords``: a batch larger than ``max_message_bytes``:
       MESSAGE_TOO_LARGE; a CRC-32C that does not match (or a batch shorter than its 61-byte header):
       CORRUPT_MESSAGE;
    4. ``LogValidator.validateBatch``: ``lastOffsetDelta + 1`` must equal ``recordsCount`` > 0, no control
       batch, ``baseSequence >= 0`` with a producer id: INVALID_RECORD (and, kraftlog having no
       transactions, no transactional batch);
    5. a compression type outside Kafka's (1-4) or one whose library is missing here:
       UNSUPPORTED_COMPRESSION_TYPE; a stream that does not inflate: CORRUPT_MESSAGE;
    6. the records (``DefaultRecordBatch``'s iterator, :func:`scan_records`): exactly ``recordsCount``
       records, each framed by its length, offset deltas 0..n-1: INVALID_RECORD;
    7. ``LogValidator.validateTimestamp``: a LogAppendTime batch: INVALID_TIMESTAMP;
    8. ``LogValidator.validateRecord``, record by record: ``validateKey`` (KIP-467), a record without a key in a
       ``compacted`` topic ("Compacted topic cannot accept message without key in topic partition t-0."), else
       ``validateTimestamp``, a timestamp (other than -1) more than ``timestamp_before_max_ms`` before or
       ``timestamp_after_max_ms`` after ``now_ms``; then ``processRecordErrors``: INVALID_TIMESTAMP if any
       record's error is a timestamp's, else INVALID_RECORD, with every record error (:func:`_record_errors`).

    A batch the core built from records (the simulator's clients) has no bytes to frame: 2, 4, 7 and 8 apply."""
    out = _check_produce_records(topic, partition, records, now_ms, limits)
    return out if out is None or isinstance(out, Refusal) else Refusal(*out)


def _check_produce_records(topic: str, partition: int, records: Sequence[RecordBatch | MalformedRecords],
                             now_ms: int,
                             limits: RecordLimits = DEFAULT_LIMITS) -> tuple[int, str] | Refusal | None:
    """:func:`validate_produce_records`' checks, in its order."""
    tp = f"{topic}-{partition}"
    if topic in INTERNAL_TOPICS:
        return Errors.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}"
    if not records:
        return Errors.INVALID_RECORD, "Produce requests must have at least one record batch per partition"
    first = records[0]
    if isinstance(first, MalformedRecords):
        return _malformed(first, tp, limits)
    if len(records) > 1:
        return Errors.INVALID_RECORD, ONE_BATCH_PER_PARTITION
    batch: RecordBatch = first
    encoded = batch.is_encoded
    size = batch.size_bytes
    if size > limits.max_message_bytes:
        return Errors.MESSAGE_TOO_LARGE, (
            f"The record batch size in the append to {tp} is {size} bytes which exceeds the maximum "
            f"configured value of {limits.max_message_bytes}.")
    # (an encoded batch's CRC-32C was checked when its bytes were split: decode_batches)
    count = batch.record_count
    last_delta = batch.last_offset_delta
    if last_delta + 1 <= 0:
        return Errors.INVALID_RECORD, f"Batch has an invalid offset range: [0, {last_delta}] in topic partition {tp}"
    if count <= 0:
        return Errors.INVALID_RECORD, f"Invalid reported count for record batch: {count} in topic partition {tp}"
    if last_delta + 1 != count:
        return Errors.INVALID_RECORD, (f"Inconsistent batch offset range [0, {last_delta}] and count of records "
                                       f"{count} in topic partition {tp}")
    attributes = batch.attributes
    if attributes & ATTR_CONTROL:
        return Errors.INVALID_RECORD, f"Clients are not allowed to write control records in topic partition {tp}"
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        return Errors.INVALID_RECORD, (f"Invalid sequence number {batch.base_sequence} in record batch with "
                                       f"producerId {batch.producer_id} in topic partition {tp}")
    if attributes & ATTR_TRANSACTIONAL:
        return Errors.INVALID_RECORD, f"Transactional batch in topic partition {tp}: kraftlog has no transactions"
    if attributes & ATTR_LOG_APPEND_TIME:
        return Errors.INVALID_TIMESTAMP, ("Invalid timestamp type in message. Producer should not set timestamp "
                                          "type to LogAppendTime.")
    if encoded:
        codec = attributes & ATTR_COMPRESSION_MASK
        if codec and codec not in CODECS:
            return Errors.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type id: {codec}"
        try:
            scan = scan_records(batch)
        except (InvalidRecordError, CorruptRecordError) as exc:  # UnsupportedCompressionError included
            code = Errors.UNSUPPORTED_COMPRESSION_TYPE if isinstance(exc, UnsupportedCompressionError) \
                else exc.error_code
            return code, f"{exc} in topic partition {tp}"
        # the quick pass: only a batch found at fault has its records decoded
        lo, hi = scan.min_timestamp, scan.max_timestamp
        before, after = limits.timestamp_before_max_ms, limits.timestamp_after_max_ms
        bad_time = lo is not None and hi is not None and (now_ms - lo > before or hi - now_ms > after)
        if not bad_time and not (limits.compacted and scan.keyless):
            return None
    return _record_errors(tp, batch.records, now_ms, limits)


def _record_errors(tp: str, records: Sequence[Record], now_ms: int, limits: RecordLimits) -> Refusal | None:
    """Kafka's per-record checks (``LogValidator.validateRecord``) of a batch's ``records`` (an encoded batch's
    decoded only when :func:`scan_records`' min and max timestamps or keyless records show a fault), None when
    every record passes: for each record in order, ``validateKey`` (a compacted topic's record without a
    key: "Compacted topic cannot accept message without key in topic partition t-0.") and, for a record with a
    key or in a topic without compaction, ``validateTimestamp`` (a CreateTime other than -1 outside
    [now - before, now + after]); then ``processRecordErrors``: INVALID_TIMESTAMP ("One or more records have been
    rejected due to invalid timestamp") when any error is a timestamp's, else INVALID_RECORD naming how many and
    showing the first three (Java's ``RecordError.toString``), every record error kept (KIP-467's RecordErrors,
    which ``ReplicaManager`` sends with the exception's message as the partition's ErrorMessage). A record's
    offset in the timestamp message is its index: the producer's base offset is 0."""
    before, after = limits.timestamp_before_max_ms, limits.timestamp_after_max_ms
    errors: list[tuple[int, str]] = []
    bad_time = False
    for i, record in enumerate(records):
        if limits.compacted and record.key is None:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition {tp}."))
        elif record.timestamp != -1 and (now_ms - record.timestamp > before or record.timestamp - now_ms > after):
            bad_time = True
            errors.append((i, f"Timestamp {record.timestamp} of message with offset {i} is out of range. The "
                              f"timestamp should be within [{now_ms - before}, {now_ms + after}]"))
    if not errors:
        return None
    if bad_time:
        return Refusal(Errors.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp",
                       tuple(errors))
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{text}')" for i, text in errors[:3])
    return Refusal(Errors.INVALID_RECORD, f"One or more records have been rejected due to {len(errors)} record errors "
                   f"in total, and only showing the first three errors at most: [{shown}]", tuple(errors))


def _malformed(records: MalformedRecords, tp: str, limits: RecordLimits) -> tuple[int, str]:
    """The error for records that did not split into well-framed batches, found as Kafka's batch iterator
    (``ByteBufferLogInputStream.nextBatch``), ``ProduceRequest.validateRecords`` and
    ``analyzeAndValidateRecords`` meet them."""
    data = records.data
    total = len(data)
    pos = 0
    batches = []
    while total - pos >= LOG_OVERHEAD:
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < 14:  # LegacyRecord.RECORD_OVERHEAD_V0
            return Errors.CORRUPT_MESSAGE, f"Record size {length} is less than the minimum record overhead (14)"
        if total - pos < 17:
            break
        magic = int.from_bytes(data[pos + 16:pos + 17], "big", signed=True)
        if magic < 0 or magic > 2:
            return Errors.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}"
        end = pos + LOG_OVERHEAD + length
        if end > total:
            break
        batches.append((pos, end, magic))
        if len(batches) == 2:
            break
        pos = end
    if not batches:
        return Errors.INVALID_RECORD, "Produce requests must have at least one record batch per partition"
    start, end, magic = batches[0]
    if magic != 2:
        return Errors.INVALID_RECORD, "Produce requests are only allowed to contain record batches with magic version 2"
    if len(batches) > 1:
        return Errors.INVALID_RECORD, ONE_BATCH_PER_PARTITION
    size = end - start
    if size > limits.max_message_bytes:
        return Errors.MESSAGE_TOO_LARGE, (
            f"The record batch size in the append to {tp} is {size} bytes which exceeds the maximum "
            f"configured value of {limits.max_message_bytes}.")
    if size < RECORD_BATCH_OVERHEAD:
        return Errors.CORRUPT_MESSAGE, f"Record is corrupt (a batch of {size} bytes) in topic partition {tp}."
    stored = int.from_bytes(data[start + 17:start + 21], "big")
    return (Errors.CORRUPT_MESSAGE,
            f"Record is corrupt (stored crc = {stored}) in topic partition {tp}: {records.reason}")
