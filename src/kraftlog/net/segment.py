"""Kafka's ``.log`` segment framing in the file-backed disk (:mod:`kraftlog.net.disk`): v2 record batches
concatenated, each with its length and CRC-32C; the recovery scan that tells a valid prefix from a torn
tail (Kafka's ``LogSegment.recover``); the encoding of a log file's items; and, for fault injection, a
segment's batch spans and a flipped byte inside one.

File formats and the recovery rules: docs/DESIGN.md, "The file-backed disk".
"""

from __future__ import annotations

import os
import random
import struct

from crc32c import crc32c

from ..metadata.codec import decode_metadata_record, encode_metadata_record
from ..metadata.records import METADATA_RECORD_TYPES
from ..protocol.raft_records import RaftBatch
from ..protocol.records import Record, RecordBatch
from ..protocol.wire import encode_batches
from ..protocol.wire.raft_batches import from_record_batch, to_record_batch
from .files import O_CLOEXEC

__all__ = [
    "BatchHeader", "read_headers", "file_checksum",
    "BATCHES", "METADATA", "RAFT", "SCAN_CHUNK", "UndecodableLogError", "recover_log", "count_frames", "encode_item",
    "BatchSpan", "segment_batches", "corrupt_segment",
]

# Kafka v2 batch framing: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
# crc uint32 (CRC-32C of everything after it: attributes .. end of the batch).
_LOG_HEAD = struct.Struct(">qi")
_LOG_OVERHEAD = 12  # baseOffset + batchLength: batchLength counts the bytes after them
_MAGIC_POS = 16
_CRC = struct.Struct(">I")
_CRC_POS = 17
_CRC_START = 21
_RECORDS_COUNT = struct.Struct(">i")
_RECORDS_COUNT_POS = 57  # recordsCount, the last field of the 61-byte header
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POS = 23  # after baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes
#: Kafka's ``RECORD_BATCH_OVERHEAD`` (61) minus ``LOG_OVERHEAD``: the smallest legal batchLength.
_MIN_BATCH_LENGTH = 49
_MAGIC = 2
#: Partition leader epoch of a metadata-log batch (kraftlog's single-node quorum; the wire uses 0 too).
_METADATA_LEADER_EPOCH = 0

_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_BYTES = 61

#: The kinds of log file: a partition segment (RecordBatch items), the single controller's metadata log and a broker's
#: copy of it (metadata records), and a KRaft quorum member's metadata log (Raft batches: KafkaRaftClient's log).
BATCHES = 0
METADATA = 1
RAFT = 2

#: Bytes read per system call when recovering or scanning a segment.
SCAN_CHUNK = 1 << 20

class UndecodableLogError(ValueError):
    """A log file holds a batch with a valid length and CRC-32C that cannot be decoded as this file's
    items (e.g. an unsupported compression codec, an unknown metadata record type, a metadata batch
    not at its offset). Not a torn tail: the file is left untouched and the node should not start."""


class _ChunkReader:
    """Sequential reads of a file through ``pread`` in chunks of at least ``SCAN_CHUNK`` bytes, so
    recovering a segment costs bounded memory and few system calls."""

    __slots__ = ("fd", "total", "buf", "buf_start")

    def __init__(self, fd: int, total: int) -> None:
        self.fd = fd
        self.total = total
        self.buf = b""
        self.buf_start = 0

    def get(self, pos: int, n: int) -> memoryview:
        """Bytes ``pos`` .. ``pos + n`` of the file (the caller checked they lie within ``total``)."""
        off = pos - self.buf_start
        if off < 0 or off + n > len(self.buf):
            want = min(max(n, SCAN_CHUNK), self.total - pos)
            chunks = []
            got = 0
            while got < want:
                chunk = os.pread(self.fd, want - got, pos + got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            self.buf = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            self.buf_start = pos
            off = 0
            if len(self.buf) < n:
                raise OSError(f"short read: {len(self.buf)} of {n} bytes at {pos}")
        return memoryview(self.buf)[off:off + n]


def metadata_base_offset(path: str) -> int:
    """The metadata offset of the first record of the metadata log file ``path``: its name's 20-digit base offset
    (Kafka's segment file names, ``00000000000000001234.log``), 0 for any other name."""
    stem = os.path.basename(path).rpartition(".")[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else 0


def recover_log(fd: int, total: int, kind: int, path: str, verify_crc: bool = True,
                headers: list[BatchHeader] | None = None) -> tuple[list[object] | None, list[int], int, str | None]:
    """Check the batches of a log file from its start, as Kafka's ``LogSegment.recover`` checks each
    batch's size and CRC, reading it in bounded chunks. Without ``verify_crc`` (a segment below the recovery
    point, or one whose checksum matched) only the batches' lengths and magic frame them: one 61-byte
    ``pread`` per batch instead of the whole file. ``headers``, when given, receives each valid batch's
    :class:`BatchHeader` (a segment's load reads them next).

    Returns (the decoded metadata records for a metadata log, or None for a segment, whose records are
    not decoded; the byte position of each batch; the length of the valid prefix in bytes; why the rest
    is invalid, or None). Raises :class:`UndecodableLogError` for a batch with a valid length and CRC
    that is not an item of this file's kind."""
    reader = _ChunkReader(fd, total)
    items: list[object] | None = [] if kind in (METADATA, RAFT) else None
    base = metadata_base_offset(path) if kind == METADATA else 0
    starts: list[int] = []
    pos = 0
    reason = None
    while pos < total:
        if total - pos < _LOG_OVERHEAD:
            reason = f"{total - pos} trailing bytes, fewer than a batch's 12-byte offset and length"
            break
        if not verify_crc:
            head = os.pread(fd, _HEADER_BYTES, pos)
            _base, length = _LOG_HEAD.unpack_from(head)
            end = pos + _LOG_OVERHEAD + length
            if length < _MIN_BATCH_LENGTH or end > total or len(head) < _HEADER_BYTES:
                reason = (f"batch length {length} below the v2 minimum of {_MIN_BATCH_LENGTH}"
                          if length < _MIN_BATCH_LENGTH else
                          f"incomplete batch: its length {length} runs {end - total} bytes past the end of the file")
                break
            if head[_MAGIC_POS] != _MAGIC:
                reason = f"batch magic {head[_MAGIC_POS]}, expected {_MAGIC}"
                break
            if headers is not None:
                headers.append(BatchHeader(head))
            starts.append(pos)
            pos = end
            continue
        _base, length = _LOG_HEAD.unpack_from(reader.get(pos, _LOG_OVERHEAD))
        if length < _MIN_BATCH_LENGTH:
            reason = f"batch length {length} below the v2 minimum of {_MIN_BATCH_LENGTH}"
            break
        end = pos + _LOG_OVERHEAD + length
        if end > total:
            reason = f"incomplete batch: its length {length} runs {end - total} bytes past the end of the file"
            break
        view = reader.get(pos, end - pos)
        magic = view[_MAGIC_POS]
        if magic != _MAGIC:
            reason = f"batch magic {magic}, expected {_MAGIC}"
            break
        (crc,) = _CRC.unpack_from(view, _CRC_POS)
        if crc32c(view[_CRC_START:]) != crc:
            reason = "batch CRC-32C mismatch"
            break
        # Length and CRC are valid: the batch was written whole. Failing to read it is not a torn tail.
        try:
            if kind == RAFT:
                assert items is not None
                raft = from_record_batch(RecordBatch.from_bytes(view, verify_crc=False))
                if items and raft.base_offset != items[-1].next_offset:  # type: ignore[attr-defined]
                    raise ValueError(f"KRaft batch at offset {raft.base_offset} where offset "
                                     f"{items[-1].next_offset} was expected")  # type: ignore[attr-defined]
                items.append(raft)
            elif items is not None:
                batch = RecordBatch.from_bytes(view, verify_crc=False)
                if batch.base_offset != base + len(items) or batch.record_count != 1:
                    raise ValueError(f"metadata batch at offset {batch.base_offset} with {batch.record_count} "
                                     f"records where offset {base + len(items)} with one record was expected")
                items.append(decode_metadata_record(batch.records[0].value))
            else:
                # A segment's batch is only checked, not kept: read its record count in place rather
                # than copying the batch into a RecordBatch.
                (count,) = _RECORDS_COUNT.unpack_from(view, _RECORDS_COUNT_POS)
                (last_delta,) = _LAST_OFFSET_DELTA.unpack_from(view, _LAST_OFFSET_DELTA_POS)
                # (a batch the log cleaner emptied holds no record but keeps its last offset delta)
                if count < 0 or last_delta < 0:
                    raise ValueError(f"batch with {count} records and last offset delta {last_delta}")
                if headers is not None:
                    headers.append(BatchHeader(bytes(view[:_HEADER_BYTES])))
        except Exception as exc:  # noqa: BLE001 -- any decoder failure on a CRC-valid batch
            raise UndecodableLogError(
                f"{path}: the batch at byte {pos} (item {len(starts)}) has a valid CRC-32C but cannot be "
                f"read: {exc}") from exc
        starts.append(pos)
        pos = end
    return items, starts, pos, reason


class BatchHeader:
    """A v2 batch's header fields (what a log load reads: :meth:`FileDisk.scan_headers`), without its records;
    the names of :class:`~kraftlog.protocol.records.RecordBatch`."""

    __slots__ = ("base_offset", "size_bytes", "partition_leader_epoch", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "record_count", "last_offset_delta")

    def __init__(self, data: bytes) -> None:
        (self.base_offset, length, self.partition_leader_epoch, _magic, _crc, _attributes, self.last_offset_delta,
         _base_ts,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
         self.record_count) = _HEADER.unpack_from(data)
        self.size_bytes = _LOG_OVERHEAD + length

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


def read_headers(fd: int, starts: list[int]) -> list[BatchHeader]:
    """The headers of the batches at byte positions ``starts`` of the file ``fd`` (one 61-byte ``pread``
    each)."""
    return [BatchHeader(os.pread(fd, _HEADER_BYTES, pos)) for pos in starts]


def file_checksum(fd: int, size: int) -> int:
    """The CRC-32C of the first ``size`` bytes of the file ``fd``, read in chunks of ``SCAN_CHUNK``."""
    crc = 0
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(SCAN_CHUNK, size - pos), pos)
        if not chunk:
            raise OSError(f"short read at byte {pos} of {size}")
        crc = crc32c(chunk, crc)
        pos += len(chunk)
    return crc


def count_frames(fd: int, pos: int, total: int) -> int:
    """How many batch-shaped frames (a 12-byte offset and length, then at least the v2 minimum) the bytes
    ``[pos, total)`` of a log file hold, read by their length fields only: what a recovery truncation
    that starts at ``pos`` drops (the first frame is the invalid one)."""
    count = 0
    while total - pos >= _LOG_OVERHEAD:
        head = os.pread(fd, _LOG_OVERHEAD, pos)
        if len(head) < _LOG_OVERHEAD:
            break
        _base, length = _LOG_HEAD.unpack(head)
        if length < _MIN_BATCH_LENGTH or pos + _LOG_OVERHEAD + length > total:
            break
        count += 1
        pos += _LOG_OVERHEAD + length
    return count


def encode_item(kind: int, item: object, index: int, now_ms: int) -> bytes:
    """The bytes of ``item`` as the ``index``-th item of a log file of ``kind``: a partition segment's
    RecordBatch verbatim (its own v2 bytes); a metadata record as the value of a one-record v2 batch at
    base offset ``index`` (the file's base offset plus its position: :func:`metadata_base_offset`), partition
    leader epoch 0, timestamp ``now_ms`` (KRaft's layout, kraftlog's JSON
    value). TypeError for an item that is not of the file's kind."""
    if kind == BATCHES:
        if not isinstance(item, RecordBatch):
            raise TypeError(f"a partition log holds RecordBatch items, not {type(item).__name__}")
        return item.data  # an encoded batch's own bytes, verbatim
    if kind == RAFT:
        if not isinstance(item, RaftBatch):
            raise TypeError(f"a KRaft log holds RaftBatch items, not {type(item).__name__}")
        return encode_batches((to_record_batch(item),))  # Kafka's layout: one v2 batch at its own offset
    if type(item) not in METADATA_RECORD_TYPES:
        raise TypeError(f"the metadata log holds metadata records, not {type(item).__name__}")
    value = encode_metadata_record(item)
    return encode_batches((RecordBatch(index, _METADATA_LEADER_EPOCH, (Record(now_ms, None, value),)),))


class BatchSpan:
    """A batch of a segment file as :func:`kraftlog.scenario.corrupt_target` sees it: its offsets
    (from its header) and its byte range."""

    __slots__ = ("base_offset", "next_offset", "start", "end")

    def __init__(self, base_offset: int, next_offset: int, start: int, end: int) -> None:
        self.base_offset, self.next_offset, self.start, self.end = base_offset, next_offset, start, end




def segment_batches(path: str | os.PathLike[str]) -> list[BatchSpan]:
    """The batches of a partition segment file (Kafka's ``.log``, v2 batches) read from their headers only:
    offsets and byte ranges, up to the first frame that is not a whole batch. For fault injection and
    tools; no CRC is checked."""
    spans = []
    with open(path, "rb") as fh:
        data = fh.read()
    pos = 0
    while len(data) - pos >= _RECORDS_COUNT_POS + 4:
        base, length = _LOG_HEAD.unpack_from(data, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < _MIN_BATCH_LENGTH or end > len(data):
            break
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + _LAST_OFFSET_DELTA_POS)
        spans.append(BatchSpan(base, base + delta + 1, pos, end))
        pos = end
    return spans


def corrupt_segment(path: str | os.PathLike[str], span: BatchSpan, nbytes: int, rng: random.Random) -> list[int]:
    """Flip ``nbytes`` bytes (each XORed with 0xFF) at positions drawn from ``rng`` (a seeded
    ``random.Random``) inside the CRC-32C-covered part of the batch ``span`` of the segment file ``path``
    (attributes to the end of the batch), in place: the next load finds the batch's CRC wrong, as a
    flipped bit on the medium. Bytes before the CRC (base offset, length, partition leader epoch) are
    left alone: Kafka's v2 CRC does not cover them. Returns the byte positions flipped (sorted). The
    broker must be stopped (its FileDisk holds the file's lock otherwise: DirectoryLockedError is not
    checked here, the caller stops the node first)."""
    first = span.start + _CRC_START
    count = max(1, min(nbytes, span.end - first))
    positions = sorted(rng.sample(range(first, span.end), count))
    fd = os.open(path, os.O_RDWR | O_CLOEXEC)
    try:
        for p in positions:
            (b,) = os.pread(fd, 1, p)
            os.pwrite(fd, bytes((b ^ 0xFF,)), p)
        os.fsync(fd)
    finally:
        os.close(fd)
    return positions

