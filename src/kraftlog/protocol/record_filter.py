"""What the log cleaner needs from a batch's bytes without building its records: Kafka's
``MemoryRecords.filterTo`` at the byte level.

:func:`scan_keys` walks an encoded v2 batch's records (a compressed one is inflated once) and gives each record's
offset delta, key, whether it has a value, its timestamp and its byte span; :func:`retain` writes a batch holding
some of them: the same header fields (base offset, ``lastOffsetDelta``, base timestamp, producer fields,
partition leader epoch, attributes and so the codec and any delete horizon) over the kept records' bytes,
copied as they are (their offset and timestamp deltas count from the unchanged base offset and base
timestamp), the count and max timestamp recomputed, compressed again with the batch's codec and a new CRC-32C.
No :class:`~kraftlog.protocol.records.Record` is built: the cleaner reads and rewrites a segment several times
faster this way, with far fewer objects for the garbage collector.
"""

from __future__ import annotations

from dataclasses import dataclass

from crc32c import crc32c
from kio.serial.readers import read_signed_varint, read_signed_varlong

from .records import (
    _BATCH_BODY,
    _BATCH_HEAD,
    _COMPRESSION_MASK,
    _HEAD_SIZE,
    _MAGIC,
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    RecordBatch,
    _compress,
    _decompress,
)

__all__ = ["KeyScan", "scan_keys", "retain"]


@dataclass(slots=True)
class KeyScan:
    """A batch's records as :func:`scan_keys` found them, one entry per record in order: ``deltas`` (offset
    deltas), ``keys`` (bytes or None), ``has_value`` (False for a tombstone), ``timestamps`` (ms) and ``spans``
    ((start, end) of the record's bytes in ``body``, the records section, inflated)."""

    body: bytes
    deltas: list[int]
    keys: list[bytes | None]
    has_value: list[bool]
    timestamps: list[int]
    spans: list[tuple[int, int]]


def scan_keys(batch: RecordBatch) -> KeyScan:
    """Walk the records of ``batch`` (encoded, or encoded here once). Raises :class:`CorruptRecordError` for
    records that do not frame, or an offset delta that does not increase."""
    data = batch.data
    view = memoryview(data)
    (attributes, _last, base_ts, _max_ts, _pid, _pepoch, _bseq, count) = _BATCH_BODY.unpack_from(view, _HEAD_SIZE)
    codec = attributes & _COMPRESSION_MASK
    rest = view[RECORD_BATCH_OVERHEAD:]
    body = _decompress(codec, rest) if codec and len(rest) else bytes(rest)
    body_view = memoryview(body)
    out = KeyScan(body, [], [], [], [], [])
    rv = read_signed_varint
    p, end = 0, len(body)
    try:
        for _ in range(count):
            start = p
            length, size = rv(body_view, p)
            p += size
            rec_end = p + length
            if length < 1 or rec_end > end:
                raise CorruptRecordError("record runs past the end of its batch")
            ts_delta, size = read_signed_varlong(body_view, p + 1)  # after the attributes byte
            p += 1 + size
            delta, size = rv(body_view, p)
            p += size
            if delta < 0 or (out.deltas and delta <= out.deltas[-1]):
                raise CorruptRecordError(f"record offset delta {delta} does not increase")
            klen, size = rv(body_view, p)
            p += size
            key = None if klen < 0 else body[p:p + klen]
            p += max(klen, 0)
            vlen, size = rv(body_view, p)
            out.deltas.append(delta)
            out.keys.append(key)
            out.has_value.append(vlen >= 0)
            out.timestamps.append(base_ts + ts_delta)
            out.spans.append((start, rec_end))
            p = rec_end
    except (IndexError, ValueError) as exc:
        if isinstance(exc, CorruptRecordError):
            raise
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    if p != end:
        raise CorruptRecordError("record batch length does not match its records")
    return out


def retain(batch: RecordBatch, scan: KeyScan, keep: list[int]) -> RecordBatch:
    """``batch`` holding only its records at the positions ``keep`` (increasing; may be empty: a producer's last
    batch, kept with no record, its max timestamp kept, as Kafka's ``writeEmptyHeader``)."""
    data = batch.data
    (attributes, last_delta, base_ts, max_ts, pid, pepoch, bseq, _count) = _BATCH_BODY.unpack_from(data, _HEAD_SIZE)
    records = b"".join(scan.body[scan.spans[i][0]:scan.spans[i][1]] for i in keep)
    if keep:
        max_ts = max(scan.timestamps[i] for i in keep)
    else:  # Kafka's writeEmptyHeader: both timestamps the batch's max, no compression
        base_ts = max_ts
        attributes &= ~_COMPRESSION_MASK
    codec = attributes & _COMPRESSION_MASK
    body = _BATCH_BODY.pack(attributes, last_delta, base_ts, max_ts, pid, pepoch, bseq, len(keep)) + (
        _compress(codec, records) if codec else records)
    head = _BATCH_HEAD.pack(batch.base_offset, len(body) + 9, batch.partition_leader_epoch, _MAGIC, crc32c(body))
    return RecordBatch.from_bytes(head + body, verify_crc=False)
