"""Kafka v2 record batches as the core holds them: decoded records, or the opaque bytes a client sent.

A :class:`RecordBatch` carries the v2 batch header fields the protocol uses (base offset, partition
leader epoch, producer id/epoch, base sequence, attributes, record count) and either

* its records (:class:`Record`): what the simulator's clients build, or
* its encoded v2 bytes (:meth:`RecordBatch.from_bytes`): what the wire hands over from a Produce
  request or a Fetch response, and what a file-backed log reads back.

Batches from the wire stay opaque on the produce, replication and fetch paths (DESIGN.md, "Real
cluster"): only the 61-byte header is parsed (and the CRC-32C checked) when they arrive, the leader
stamps base offset and partition leader epoch into a copy of the bytes (the CRC does not cover them,
so it stays valid), followers and consumers receive the same bytes, and a compressed batch is stored and
served compressed, as Kafka stores it with ``compression.type=producer``. The records are decoded only
when someone reads :attr:`RecordBatch.records` (a checker, a consumer, a truncation inside the batch).
Both forms compare equal when their header fields and records are equal, and both encode
(:attr:`RecordBatch.data`) to the same bytes, so the simulator's wire switch keeps its history digest.

``size_bytes`` is the batch's exact encoded length in bytes (Kafka's ``sizeInBytes``) in both forms: the
length of the bytes, or computed from the records without encoding them (so fetch ``max_bytes`` limits
behave the same in the simulator and on the wire; simulator digests changed once when this replaced the
earlier approximate size).

The v2 codec (Kafka's ``DefaultRecordBatch``) is hand-written here: one ``struct`` per batch header, a
varint loop per record; it keeps everything a client wrote: key, value, exact ms timestamps and record
headers (a header key is UTF-8; bytes that are not UTF-8 survive through ``surrogateescape``). Why not
kio's ``kio.records`` (kio 0.6.5 has ``read_batch`` / ``write_batch``): its reader truncates record
timestamps to whole seconds and cannot read a record whose timestamp is -1, it has no compression, and
measured here on a 100-record batch it is 3.3x slower to read and 2.8x slower to write. kafka-python's
``DefaultRecordBatch`` is used for nothing but its codecs (``kafka.codec``): it reads one batch per buffer,
copies it into a bytearray and decodes header keys strictly. Compressed batches are inflated by
``kafka.codec`` when their records are read: gzip always (stdlib), snappy, lz4 and zstd only where
``python-snappy``/``cramjam``, ``lz4`` and ``zstandard`` are importable (reading them elsewhere raises
:class:`UnsupportedCompressionError`; storing and serving them does not need the library). kraftlog
itself writes uncompressed batches, except the log cleaner's rewrites, which keep the original batch's codec
(Kafka's ``MemoryRecords.filterTo``) and compress with ``kafka.codec`` as kafka-python's producer does.

Offsets are absolute: record ``i`` of a batch has offset ``base_offset + offset_deltas[i]``; a batch as a
producer or the leader writes it is dense (deltas 0..n-1). A batch the log cleaner rewrote keeps its offsets:
it may miss records between its first and last offset, and keeps its ``lastOffsetDelta`` even when its last
records (or all of them) were removed (Kafka's ``MemoryRecordsBuilder.overrideLastOffset``, so the producer's
last sequence survives); it may carry a *delete horizon* (KIP-534: attribute bit 6, the horizon in ms held in
``baseTimestamp``; record timestamps stay exact, their deltas counted from it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from crc32c import crc32c
from kio.serial.readers import read_signed_varint, read_signed_varlong

from .errors import Errors, WireError

__all__ = [
    "Record", "RecordBatch", "MalformedRecords", "encode_batches", "decode_batches", "decode_produce_records",
    "scan_records", "RecordsScan", "CorruptRecordError", "UnsupportedCompressionError", "InvalidRecordError",
    "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD",
]


class CorruptRecordError(WireError):
    """A record batch that fails the v2 format checks: CRC-32C mismatch, wrong magic, bad lengths, an
    unknown compression type or a stream that does not decompress (Kafka's CORRUPT_MESSAGE, 2); also
    a core batch asking to be written compressed."""

    error_code: int = Errors.CORRUPT_MESSAGE


class UnsupportedCompressionError(CorruptRecordError):
    """A batch compressed with a codec (snappy, lz4, zstd) whose Python library is not installed here,
    met when its records are read (Kafka's UNSUPPORTED_COMPRESSION_TYPE, 76)."""

    error_code: int = Errors.UNSUPPORTED_COMPRESSION_TYPE


class InvalidRecordError(WireError):
    """Records whose body disagrees with their batch header: fewer or more records than ``recordsCount``,
    a record whose lengths do not frame it, offset deltas other than 0..n-1 (Kafka's INVALID_RECORD, 87,
    as ``DefaultRecordBatch``'s iterator and ``LogValidator`` raise it)."""

    error_code: int = Errors.INVALID_RECORD


@dataclass(slots=True, frozen=True)
class Record:
    """One record: ``timestamp`` in ms since the epoch, ``key``/``value`` bytes or None, ``headers``
    Kafka's record headers in order, (key, value) pairs: the key a string (Kafka's header key is a
    non-null String), the value bytes or None; repeated keys are allowed, as in Kafka."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# Kafka's v2 batch layout (DefaultRecordBatch): baseOffset int64 @0, batchLength int32 @8,
# partitionLeaderEpoch int32 @12, magic int8 @16, crc uint32 @17 (CRC-32C of attributes .. end),
# attributes int16 @21, lastOffsetDelta int32 @23, baseTimestamp int64 @27, maxTimestamp int64 @35,
# producerId int64 @43, producerEpoch int16 @51, baseSequence int32 @53, recordsCount int32 @57.
_BATCH_HEAD = struct.Struct(">qiibI")
_BATCH_BODY = struct.Struct(">hiqqqhii")
_HEAD_SIZE = _BATCH_HEAD.size  # 21: the bytes the CRC does not cover
#: Kafka's ``RECORD_BATCH_OVERHEAD``: the v2 header, 61 bytes.
RECORD_BATCH_OVERHEAD = _HEAD_SIZE + _BATCH_BODY.size
#: Kafka's ``LOG_OVERHEAD``: baseOffset + batchLength; batchLength counts the bytes after them.
LOG_OVERHEAD = 12
_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_PLE_POS = 12
_MAGIC = 2
#: Kafka's batch attributes (``DefaultRecordBatch``): bits 0-2 the compression type, bit 3 the timestamp
#: type (1 = LogAppendTime), bit 4 transactional, bit 5 control.
ATTR_COMPRESSION_MASK = _COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = _TRANSACTIONAL = 0x10
ATTR_CONTROL = _CONTROL = 0x20
#: KIP-534: the batch's ``baseTimestamp`` holds its delete horizon (ms) set by the log cleaner (bit 6).
ATTR_DELETE_HORIZON = 0x40
#: Kafka's compression type ids (attributes bits 0-2) and names.
CODECS = _CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _varint_size(value: int) -> int:
    """Bytes of the zig-zag varint/varlong of ``value`` (Kafka's ByteUtils.sizeOfVarint/Varlong)."""
    z = (value << 1) ^ (value >> 63)
    n = 1
    while z > 0x7F:
        z >>= 7
        n += 1
    return n


def _bytes_size(value: bytes | None) -> int:
    return 1 if value is None else _varint_size(len(value)) + len(value)


def _header_key_bytes(key: str) -> bytes:
    # surrogateescape: a key that arrived as bytes that are not UTF-8 goes back out as those bytes.
    return key.encode("utf-8", "surrogateescape")


class RecordBatch:
    """A v2 record batch (immutable by convention: never assign to its attributes).

    ``RecordBatch(base_offset, partition_leader_epoch, records, producer_id=-1, producer_epoch=-1,
    base_sequence=-1, attributes=0, offset_deltas=None, last_offset_delta=None, delete_horizon_ms=None,
    empty_timestamp=-1)`` holds decoded records; :meth:`from_bytes` wraps a batch's encoded bytes.
    ``base_offset``: offset of the batch's first offset (-1 before the leader assigns offsets on append).
    ``partition_leader_epoch``: the leader epoch in which the leader appended the batch (-1 before).
    ``record_count``: Kafka's ``recordsCount`` (the header's, for bytes). ``attributes``: Kafka's batch
    attributes (bits 0-2 the compression codec: a records batch is compressed when encoded).

    The log cleaner's rewrites (module docstring) pass ``offset_deltas`` (each record's offset minus the
    base, increasing; None: 0..n-1), ``last_offset_delta`` (at least the last record's delta; None: that),
    ``delete_horizon_ms`` (sets :data:`ATTR_DELETE_HORIZON`) and, for a batch whose records were all removed,
    ``empty_timestamp`` (the removed batch's max timestamp, Kafka's ``writeEmptyHeader``). ValueError for
    deltas that do not match the records or do not increase.
    """

    __slots__ = ("base_offset", "partition_leader_epoch", "producer_id", "producer_epoch",
                 "base_sequence", "attributes", "record_count", "_records", "_data", "_size", "_deltas",
                 "_last_delta", "_horizon", "_empty_ts")

    def __init__(self, base_offset: int, partition_leader_epoch: int, records: tuple[Record, ...],
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 attributes: int = 0, offset_deltas: tuple[int, ...] | None = None,
                 last_offset_delta: int | None = None, delete_horizon_ms: int | None = None,
                 empty_timestamp: int = -1) -> None:
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        records = tuple(records)
        self.record_count = len(records)
        self._records: tuple[Record, ...] | None = records
        self._data: bytes | None = None
        self._size: int | None = None
        if offset_deltas is not None:
            offset_deltas = tuple(offset_deltas)
            if len(offset_deltas) != len(records) or any(
                    b <= a for a, b in zip(offset_deltas, offset_deltas[1:], strict=False)) or (
                    offset_deltas and offset_deltas[0] < 0):
                raise ValueError(f"offset deltas {offset_deltas} do not fit {len(records)} records")
            if offset_deltas == tuple(range(len(records))):
                offset_deltas = None
        self._deltas: tuple[int, ...] | None = offset_deltas
        last = offset_deltas[-1] if offset_deltas else len(records) - 1
        if last_offset_delta is not None and last_offset_delta < last:
            raise ValueError(f"last offset delta {last_offset_delta} below the last record's ({last})")
        self._last_delta: int | None = (None if last_offset_delta is None or last_offset_delta == last
                                        else last_offset_delta)
        if delete_horizon_ms is not None:
            attributes |= ATTR_DELETE_HORIZON
        self.attributes = attributes
        self._horizon = delete_horizon_ms
        self._empty_ts = empty_timestamp

    # ------------------------------------------------------------------ the encoded form
    @classmethod
    def from_bytes(cls, data: bytes | memoryview, verify_crc: bool = True) -> RecordBatch:
        """Wrap exactly one encoded v2 batch without decoding its records.

        Checks the framing: at least the 61-byte header, ``batchLength`` equal to ``len(data) - 12``,
        magic 2 and (with ``verify_crc``) the CRC-32C over attributes .. end. Raises
        :class:`CorruptRecordError` (CORRUPT_MESSAGE) otherwise. A file-backed log reading back bytes it
        checked when it loaded them passes ``verify_crc=False``."""
        data = bytes(data)
        if len(data) < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"record batch of {len(data)} bytes, shorter than the v2 header")
        base_offset, length, leader_epoch, magic, crc = _BATCH_HEAD.unpack_from(data, 0)
        if length != len(data) - LOG_OVERHEAD:
            raise CorruptRecordError(f"record batch length {length} does not match its {len(data)} bytes")
        if magic != _MAGIC:
            raise CorruptRecordError(f"record batch magic {magic}, expected 2")
        if verify_crc and crc32c(memoryview(data)[_HEAD_SIZE:]) != crc:
            raise CorruptRecordError(f"record batch at offset {base_offset}: CRC-32C mismatch")
        (attributes, _last_delta, _base_ts, _max_ts, producer_id, producer_epoch, base_sequence,
         count) = _BATCH_BODY.unpack_from(data, _HEAD_SIZE)
        batch = cls.__new__(cls)
        batch.base_offset = base_offset
        batch.partition_leader_epoch = leader_epoch
        batch.producer_id = producer_id
        batch.producer_epoch = producer_epoch
        batch.base_sequence = base_sequence
        batch.attributes = attributes
        batch.record_count = count
        batch._records = None
        batch._data = data
        batch._size = len(data)
        batch._deltas = batch._last_delta = batch._horizon = None
        batch._empty_ts = -1
        return batch

    @property
    def is_encoded(self) -> bool:
        """Whether the batch holds its encoded bytes (from the wire or a file) rather than only records."""
        return self._data is not None

    @property
    def data(self) -> bytes:
        """The batch's v2 bytes: the bytes it was made from, or its records encoded once (and kept).
        Raises :class:`CorruptRecordError` for a records batch whose attributes ask for compression."""
        data = self._data
        if data is None:
            data = self._data = _encode(self)
        return data

    @property
    def records(self) -> tuple[Record, ...]:
        """The records, decoded from the bytes on first access (inflated when compressed). Raises
        :class:`CorruptRecordError` for records that do not match their batch, and
        :class:`UnsupportedCompressionError` for a codec whose library is not installed."""
        records = self._records
        if records is None:
            records, deltas = _decode_records_of(self._data)  # type: ignore[arg-type]
            self._records = records
            self._deltas = deltas
        return records

    @property
    def offset_deltas(self) -> tuple[int, ...]:
        """Each record's offset minus the base offset (0..n-1 unless the log cleaner removed records; read from
        the bytes, decoding the records, for an encoded batch)."""
        if self._records is None:
            self.records  # noqa: B018 -- decodes the deltas with the records
        deltas = self._deltas
        return deltas if deltas is not None else tuple(range(self.record_count))

    def record_offsets(self) -> tuple[int, ...]:
        """The absolute offset of each record, in order (``base_offset + offset_deltas[i]``)."""
        base = self.base_offset
        if self._records is None:
            self.records  # noqa: B018
        deltas = self._deltas
        if deltas is None:
            return tuple(range(base, base + self.record_count))
        return tuple(base + d for d in deltas)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534's delete horizon (ms) the log cleaner set on this batch, None when it has none (Kafka's
        ``RecordBatch.deleteHorizonMs``: the header's ``baseTimestamp`` when attribute bit 6 is set)."""
        if not self.attributes & ATTR_DELETE_HORIZON:
            return None
        data = self._data
        if data is not None:
            horizon: int = _INT64.unpack_from(data, 27)[0]
            return horizon
        return self._horizon

    # ------------------------------------------------------------------ derived
    @property
    def last_offset(self) -> int:
        """The batch's last offset (Kafka's ``lastOffset``: base + ``lastOffsetDelta``; the last record's offset
        unless the log cleaner removed the batch's last records)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Offset just past the batch (the LEO after appending it)."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_offset_delta(self) -> int:
        """Kafka's ``lastOffsetDelta``: the header's for an encoded batch (which a client may have set to
        disagree with its record count: ``kraftlog.protocol.validation`` refuses that), else the one given, else
        the last record's delta (count - 1 for a dense batch)."""
        data = self._data
        if data is not None:
            last_delta: int = _INT32.unpack_from(data, 23)[0]
            return last_delta
        if self._last_delta is not None:
            return self._last_delta
        deltas = self._deltas
        return deltas[-1] if deltas else self.record_count - 1

    @property
    def max_timestamp(self) -> int:
        """Kafka's ``maxTimestamp`` in ms: the header's for an encoded batch (no decoding), else the largest
        record timestamp (-1 for no records)."""
        data = self._data
        if data is not None:
            max_ts: int = _INT64.unpack_from(data, 35)[0]
            return max_ts
        return max((r.timestamp for r in self._records), default=self._empty_ts)  # type: ignore[union-attr]

    @property
    def size_bytes(self) -> int:
        """The exact encoded size in bytes (Kafka's ``sizeInBytes``), computed without encoding."""
        size = self._size
        if size is None:
            if self.attributes & (_COMPRESSION_MASK | ATTR_DELETE_HORIZON) or self._deltas is not None:
                size = self._size = len(self.data)  # a cleaner's rewrite: encoded once
            else:
                size = self._size = _encoded_size(self._records)  # type: ignore[arg-type]
        return size

    def with_offsets(self, base_offset: int, partition_leader_epoch: int) -> RecordBatch:
        """A copy stamped by the leader on append (Kafka's offset assignment). For an encoded batch the
        two fields are patched into a copy of the bytes; the CRC, which does not cover them, stays
        valid, and records decoded so far are shared (their offsets are relative)."""
        if self._data is None:
            out = RecordBatch(base_offset, partition_leader_epoch, self._records,  # type: ignore[arg-type]
                              self.producer_id, self.producer_epoch, self.base_sequence, self.attributes,
                              self._deltas, self._last_delta, self._horizon, self._empty_ts)
            out._size = self._size
            return out
        data = self._data
        # One copy of the bytes (a join of the two new fields and views of the rest), not two.
        view = memoryview(data)
        stamped = b"".join((_INT64.pack(base_offset), view[8:_PLE_POS], _INT32.pack(partition_leader_epoch),
                            view[_PLE_POS + 4:]))
        out = RecordBatch.__new__(RecordBatch)
        out.base_offset = base_offset
        out.partition_leader_epoch = partition_leader_epoch
        out.producer_id = self.producer_id
        out.producer_epoch = self.producer_epoch
        out.base_sequence = self.base_sequence
        out.attributes = self.attributes
        out.record_count = self.record_count
        out._records = self._records
        out._data = stamped
        out._size = len(stamped)
        out._deltas = self._deltas
        out._last_delta = out._horizon = None
        out._empty_ts = -1
        return out

    def truncated_before(self, offset: int) -> RecordBatch:
        """The prefix of this batch holding offsets < ``offset`` (``base_offset < offset <= last_offset``),
        as a records batch (uncompressed: the records are decoded for it), ending at ``offset - 1``. Kafka never
        cuts a batch, as replicas' LEOs are batch boundaries; kraftlog keeps the prefix for a truncation inside
        one."""
        records = self.records
        deltas = self.offset_deltas
        keep = sum(1 for d in deltas if self.base_offset + d < offset)
        return RecordBatch(self.base_offset, self.partition_leader_epoch, records[:keep],
                           self.producer_id, self.producer_epoch, self.base_sequence,
                           self.attributes & ~(_COMPRESSION_MASK | ATTR_DELETE_HORIZON), deltas[:keep],
                           offset - 1 - self.base_offset, self.delete_horizon_ms, self.max_timestamp)

    # ------------------------------------------------------------------ value semantics
    def _key(self) -> tuple[object, ...]:
        return (self.base_offset, self.partition_leader_epoch, self.producer_id, self.producer_epoch,
                self.base_sequence, self.attributes, self.record_count, self.last_offset_delta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordBatch):
            return NotImplemented
        if self is other:
            return True
        if self._key() != other._key():
            return False
        if self._data is not None and other._data is not None:
            return self._data == other._data
        return self.records == other.records and self.offset_deltas == other.offset_deltas

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        held = f"{len(self._data)} bytes" if self._data is not None else f"records={self._records!r}"
        return (f"RecordBatch(base_offset={self.base_offset}, partition_leader_epoch="
                f"{self.partition_leader_epoch}, count={self.record_count}, producer_id={self.producer_id}, "
                f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence}, "
                f"attributes={self.attributes}, {held})")


# ------------------------------------------------------------------------------ encoding
def _put_uvarint(buf: bytearray, value: int) -> None:
    while value > 0x7F:
        buf.append((value & 0x7F) | 0x80)
        value >>= 7
    buf.append(value)


def _put_varint(buf: bytearray, value: int) -> None:
    """Signed (zig-zag) varint / varlong, as in Kafka's ByteUtils.writeVarint/writeVarlong."""
    _put_uvarint(buf, (value << 1) ^ (value >> 63))


def _put_bytes(buf: bytearray, value: bytes | None) -> None:
    if value is None:
        buf.append(1)  # zig-zag(-1)
    else:
        _put_varint(buf, len(value))
        buf += value


def _encoded_size(records: tuple[Record, ...]) -> int:
    """The v2 size of a batch of ``records`` (exactly what :func:`_encode` writes)."""
    size = RECORD_BATCH_OVERHEAD
    if not records:
        return size
    base_ts = records[0].timestamp
    for delta, r in enumerate(records):
        body = 1 + _varint_size(r.timestamp - base_ts) + _varint_size(delta)
        body += _bytes_size(r.key) + _bytes_size(r.value)
        headers = r.headers
        if headers:
            body += _varint_size(len(headers))
            for k, v in headers:
                body += _bytes_size(_header_key_bytes(k)) + _bytes_size(v)
        else:
            body += 1
        size += _varint_size(body) + body
    return size


def _encode(batch: RecordBatch) -> bytes:
    records = batch.records
    if records:
        base_ts = records[0].timestamp
        max_ts = max(r.timestamp for r in records)
    else:
        base_ts = max_ts = batch._empty_ts
    horizon = batch.delete_horizon_ms
    if horizon is not None:
        base_ts = horizon  # KIP-534: the record timestamps' deltas count from the horizon
    head = _BATCH_BODY.pack(batch.attributes, batch.last_offset_delta, base_ts, max_ts,
                            batch.producer_id, batch.producer_epoch, batch.base_sequence, len(records))
    codec = batch.attributes & _COMPRESSION_MASK
    body = bytearray() if codec else bytearray(head)
    deltas = batch._deltas if batch._deltas is not None else range(len(records))
    for delta, record in zip(deltas, records, strict=True):
        rec = bytearray(b"\x00")  # record attributes (unused in v2)
        _put_varint(rec, record.timestamp - base_ts)
        _put_varint(rec, delta)
        _put_bytes(rec, record.key)
        _put_bytes(rec, record.value)
        headers = record.headers
        if headers:
            _put_varint(rec, len(headers))
            for key, value in headers:
                _put_bytes(rec, _header_key_bytes(key))
                _put_bytes(rec, value)
        else:
            rec.append(0)  # no headers
        _put_varint(body, len(rec))
        body += rec
    if codec:
        body = bytearray(head) + _compress(codec, bytes(body))
    first = _BATCH_HEAD.pack(
        batch.base_offset, len(body) + 9, batch.partition_leader_epoch, _MAGIC, crc32c(body)
    )
    return first + bytes(body)


def _compress(codec: int, data: bytes) -> bytes:
    """The records section compressed with ``codec`` (1-4) by kafka-python's codecs, as its producer writes a
    v2 batch (snappy in the xerial framing Kafka reads). Raises :class:`UnsupportedCompressionError` when the
    codec's library is missing, :class:`CorruptRecordError` for a codec that is not Kafka's."""
    from kafka import codec as kc

    name = _CODECS.get(codec)
    if name is None:
        raise CorruptRecordError(f"record batch compression type {codec} is not Kafka's")
    if not {"gzip": kc.has_gzip, "snappy": kc.has_snappy, "lz4": kc.has_lz4, "zstd": kc.has_zstd}[name]():
        raise UnsupportedCompressionError(f"cannot compress with {name}: its Python library is not installed here")
    encode = {"gzip": kc.gzip_encode, "snappy": kc.snappy_encode, "lz4": kc.lz4_encode,
              "zstd": kc.zstd_encode}[name]
    out: bytes = encode(data)
    return out


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    """Kafka v2 batches (magic 2, CRC-32C over attributes..end), concatenated: each batch's
    :attr:`RecordBatch.data` (an encoded batch's own bytes, verbatim).

    Shape: Kafka's ``DefaultRecordBatch`` (61-byte header, zig-zag varint records, each with its
    headers: a count, then key as UTF-8 bytes and value as nullable bytes). The batch ``baseTimestamp``
    is the first record's timestamp, ``maxTimestamp`` the largest; record ``i`` gets offset delta
    ``i``; timestamps are ms since the epoch, written exactly (-1 = none). Raises
    :class:`CorruptRecordError` when a records batch's ``attributes`` ask for compression. An empty
    iterable encodes to ``b""`` (Kafka's empty MemoryRecords)."""
    return b"".join([b.data for b in batches])


# ------------------------------------------------------------------------------ decoding
def _read_bytes(view: memoryview, pos: int) -> tuple[bytes | None, int]:
    length, size = read_signed_varint(view, pos)
    pos += size
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(view):
        raise CorruptRecordError("record key/value runs past the end of the batch")
    return bytes(view[pos:end]), end


def _decode_records(view: memoryview, p: int, end: int, count: int, base_ts: int,
                    deltas: list[int]) -> list[Record]:
    """The ``count`` records of a v2 batch in ``view[p:end]`` (uncompressed), checking every length; each
    record's offset delta is added to ``deltas`` (they must increase)."""
    records = []
    try:
        for i in range(count):
            length, size = read_signed_varint(view, p)
            p += size
            rec_end = p + length
            if rec_end > end:
                raise CorruptRecordError("record runs past the end of its batch")
            p += 1  # record attributes
            ts_delta, size = read_signed_varlong(view, p)
            p += size
            offset_delta, size = read_signed_varint(view, p)
            p += size
            if offset_delta < 0 or (deltas and offset_delta <= deltas[-1]):
                raise CorruptRecordError(f"record offset delta {offset_delta} at position {i} does not increase")
            deltas.append(offset_delta)
            key, p = _read_bytes(view, p)
            value, p = _read_bytes(view, p)
            n_headers, size = read_signed_varint(view, p)
            p += size
            if n_headers:
                if n_headers < 0:
                    raise CorruptRecordError(f"negative record header count {n_headers}")
                headers = []
                for _ in range(n_headers):
                    h_key, p = _read_bytes(view, p)
                    if h_key is None:
                        raise CorruptRecordError("null record header key")
                    h_value, p = _read_bytes(view, p)
                    headers.append((h_key.decode("utf-8", "surrogateescape"), h_value))
                record = Record(base_ts + ts_delta, key, value, tuple(headers))
            else:
                record = Record(base_ts + ts_delta, key, value)
            if p != rec_end:
                raise CorruptRecordError("record length does not match its contents")
            records.append(record)
    except CorruptRecordError:
        raise
    except (IndexError, ValueError, struct.error) as exc:  # a varint running off the end
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    if p != end:
        raise CorruptRecordError("record batch length does not match its records")
    return records


def _decompress(codec: int, data: memoryview) -> bytes:
    """The records section of a compressed batch, inflated by kafka-python's codecs (``kafka.codec``,
    the functions its ``DefaultRecordBatch`` uses). gzip always works (stdlib); snappy, lz4 and zstd
    only when ``python-snappy``/``cramjam``, ``lz4`` and ``zstandard`` are importable."""
    from kafka import codec as kc  # imported on first use: importing kafka-python costs ~0.2 s

    name = _CODECS.get(codec)
    if name is None:
        raise CorruptRecordError(f"record batch compression type {codec} is not Kafka's")
    available = {"gzip": kc.has_gzip, "snappy": kc.has_snappy, "lz4": kc.has_lz4,
                 "zstd": kc.has_zstd}[name]()
    if not available:
        raise UnsupportedCompressionError(
            f"record batch compressed with {name}: its Python library is not installed here"
        )
    decode = {"gzip": kc.gzip_decode, "snappy": kc.snappy_decode, "lz4": kc.lz4_decode,
              "zstd": kc.zstd_decode}[name]
    try:
        inflated: bytes = decode(data if name == "gzip" else data.tobytes())
    except Exception as exc:  # each library raises its own error on a damaged stream
        raise CorruptRecordError(f"record batch: cannot decompress {name}: {exc}") from exc
    return inflated


def _decode_records_of(data: bytes) -> tuple[tuple[Record, ...], tuple[int, ...] | None]:
    """The records of an encoded batch and their offset deltas (None when they are 0..n-1)."""
    view = memoryview(data)
    (attributes, last_delta, base_ts, _max_ts, _pid, _pepoch, _bseq,
     count) = _BATCH_BODY.unpack_from(view, _HEAD_SIZE)
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    codec = attributes & _COMPRESSION_MASK
    deltas: list[int] = []
    if codec and count == 0 and len(view) == RECORD_BATCH_OVERHEAD:
        return (), None  # an empty batch: nothing to inflate
    if codec:
        inflated = memoryview(_decompress(codec, view[RECORD_BATCH_OVERHEAD:]))
        records = tuple(_decode_records(inflated, 0, len(inflated), count, base_ts, deltas))
    else:
        records = tuple(_decode_records(view, RECORD_BATCH_OVERHEAD, len(view), count, base_ts, deltas))
    if deltas and deltas[-1] > last_delta:
        raise CorruptRecordError(f"record offset delta {deltas[-1]} beyond the batch's last offset delta {last_delta}")
    return records, (None if not deltas or deltas[-1] == len(deltas) - 1 else tuple(deltas))


def decode_batches(data: bytes | memoryview | None) -> tuple[RecordBatch, ...]:
    """Split concatenated v2 batches into encoded :class:`RecordBatch` objects (records not decoded),
    validating each batch's framing, magic and CRC-32C (:meth:`RecordBatch.from_bytes`).

    ``None`` or ``b""`` give ``()``. A trailing partial batch (a fetch response cut at ``max_bytes``) is
    ignored, as Kafka's consumers do. Raises :class:`CorruptRecordError` on a corrupt batch; a
    compressed batch stays compressed (its records inflate when read)."""
    if not data:
        return ()
    view = memoryview(data)
    batches = []
    pos = 0
    total = len(view)
    while total - pos >= LOG_OVERHEAD:
        _, length = _LENGTH.unpack_from(view, pos)
        if length < 0:
            raise CorruptRecordError(f"negative record batch length {length}")
        end = pos + LOG_OVERHEAD + length
        if end > total:
            break
        # A bytes object that is exactly one batch (a produce request's or a fetch response's usual
        # records) is wrapped as it is, not copied.
        whole = pos == 0 and end == total and type(data) is bytes
        batches.append(RecordBatch.from_bytes(data if whole else view[pos:end]))
        pos = end
    return tuple(batches)


# ------------------------------------------------------------------------------ produce records
class MalformedRecords:
    """The ``records`` of one Produce partition that do not split into well-framed v2 batches (a bad
    length, magic or CRC-32C): the bytes as the client sent them and why :func:`decode_batches` refused
    them. Only :func:`decode_produce_records` makes one, so that the broker answers the partition with
    Kafka's error (``kraftlog.protocol.validation``) instead of the connection being closed; ``data``
    re-encodes the bytes verbatim."""

    __slots__ = ("data", "reason")

    def __init__(self, data: bytes, reason: str) -> None:
        self.data = data
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MalformedRecords) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"MalformedRecords({len(self.data)} bytes: {self.reason})"


def decode_produce_records(data: bytes | memoryview | None) -> tuple[RecordBatch, ...] | tuple[MalformedRecords]:
    """A Produce partition's ``records``: :func:`decode_batches`' batches, or, when they do not frame
    (:class:`CorruptRecordError`), one :class:`MalformedRecords` holding the bytes, never an exception:
    Kafka parses a ProduceRequest's records lazily and answers a bad batch per partition
    (``ProduceRequest.validateRecords``, ``UnifiedLog.analyzeAndValidateRecords``)."""
    try:
        return decode_batches(data)
    except CorruptRecordError as exc:
        return (MalformedRecords(bytes(data), str(exc)),)  # type: ignore[arg-type]


@dataclass(slots=True, frozen=True)
class RecordsScan:
    """What :func:`scan_records` found: the record count, and the smallest and largest record timestamps
    in ms with the record index of each (``min_timestamp`` is None when no record has a timestamp, i.e.
    every one is -1, Kafka's NO_TIMESTAMP), and the indexes of the records without a key (``keyless``: a
    compacted topic refuses them)."""

    count: int
    min_timestamp: int | None = None
    min_index: int = -1
    max_timestamp: int | None = None
    max_index: int = -1
    keyless: tuple[int, ...] = ()


def scan_records(batch: RecordBatch) -> RecordsScan:
    """Walk the records of an encoded batch without building them (a compressed batch is inflated first,
    its bytes kept): Kafka's ``DefaultRecordBatch`` iterator as ``LogValidator`` runs it. Each record's
    length must frame its attributes, timestamp delta, offset delta, key, value and headers exactly;
    record ``i`` must have offset delta ``i`` (stricter than Kafka, which rewrites such a batch: kraftlog
    keeps the producer's bytes, whose offsets readers compute from the deltas); the body must hold
    exactly ``recordsCount`` records. Raises :class:`InvalidRecordError` (INVALID_RECORD) when it does
    not, :class:`CorruptRecordError` for a stream that does not inflate and
    :class:`UnsupportedCompressionError` for a codec whose library is missing."""
    data = batch._data
    if data is None:
        raise ValueError("scan_records needs an encoded batch")
    view = memoryview(data)
    (attributes, _last_delta, base_ts, _max_ts, _pid, _pepoch, _bseq,
     count) = _BATCH_BODY.unpack_from(view, _HEAD_SIZE)
    codec = attributes & _COMPRESSION_MASK
    if codec:
        body = memoryview(_decompress(codec, view[RECORD_BATCH_OVERHEAD:]))
        return _scan(body, 0, len(body), count, base_ts)
    return _scan(view, RECORD_BATCH_OVERHEAD, len(view), count, base_ts)


def _scan(view: memoryview, p: int, end: int, count: int, base_ts: int) -> RecordsScan:
    rv = read_signed_varint
    n = 0
    keyless: list[int] = []
    lo = hi = None
    lo_i = hi_i = -1
    try:
        while p < end:
            if n == count:
                raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
            length, size = rv(view, p)
            p += size
            rec_end = p + length
            if length < 1 or rec_end > end:
                raise InvalidRecordError(f"Found invalid record structure: record {n} of length {length}")
            ts_delta, size = read_signed_varlong(view, p + 1)  # after the attributes byte
            p += 1 + size
            offset_delta, size = rv(view, p)
            p += size
            if offset_delta != n:
                raise InvalidRecordError(
                    f"Record {n} has offset delta {offset_delta}: kraftlog keeps the producer's bytes and "
                    "needs the offset deltas of a batch's records to be 0..n-1")
            klen, size = rv(view, p)  # key
            p += size + (klen if klen > 0 else 0)
            if klen < 0:
                keyless.append(n)
            vlen, size = rv(view, p)  # value
            p += size + (vlen if vlen > 0 else 0)
            headers, size = rv(view, p)
            p += size
            if headers < 0:
                raise InvalidRecordError(f"Found invalid number of record headers {headers}")
            for _ in range(headers):
                hlen, size = rv(view, p)
                if hlen < 0:
                    raise InvalidRecordError("Invalid negative header key size")
                p += size + hlen
                hlen, size = rv(view, p)
                p += size + (hlen if hlen > 0 else 0)
            if p != rec_end:
                raise InvalidRecordError(f"Invalid record size: record {n} declares {length} bytes")
            ts = base_ts + ts_delta
            if ts != -1:
                if lo is None or ts < lo:
                    lo, lo_i = ts, n
                if hi is None or ts > hi:
                    hi, hi_i = ts, n
            n += 1
    except (IndexError, ValueError, struct.error) as exc:
        if isinstance(exc, InvalidRecordError):
            raise
        raise InvalidRecordError(f"Found invalid record structure: {exc}") from exc
    if p != end or n != count:
        raise InvalidRecordError(f"Found {n} records in a batch declaring {count}" if p == end else
                                 "Found invalid record structure: a record runs past the end of its batch")
    return RecordsScan(n, lo, lo_i, hi, hi_i, tuple(keyless))
