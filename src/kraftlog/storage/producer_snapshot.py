"""Producer state snapshots (Kafka's ``<offset>.snapshot`` files of ``ProducerStateManager``).

A snapshot holds the idempotent-producer state of a partition log as it was at an offset (every batch below it
applied): written when a segment rolls (at the new segment's base offset) and at a clean shutdown (at the LEO),
so that the producers whose batches retention deletes are still known after a restart, until
``producer.id.expiration.ms`` forgets them.

The format is Kafka's ``ProducerSnapshot`` version 1 (``ProducerStateManager.PRODUCER_SNAPSHOT_SCHEMA_V1``): a
version (int16), a CRC-32C (uint32) of everything after it, then an int32 count of entries, each ProducerId
int64, Epoch int16, LastSequence int32, LastOffset int64, OffsetDelta int32, Timestamp int64, CoordinatorEpoch
int32 (-1) and CurrentTxnFirstOffset int64 (-1: kraftlog has no transactions). Like Kafka's, it keeps each
producer's last batch only.
"""

from __future__ import annotations

import struct
from collections import deque

from crc32c import crc32c

from .producer_state import BATCHES_TO_RETAIN, MAX_SEQUENCE, ProducerEntry

__all__ = ["SNAPSHOT_SUFFIX", "snapshot_file", "snapshot_offset", "encode_snapshot", "decode_snapshot"]

#: A snapshot file's suffix; its name is the offset as 20 digits (Kafka's ``LogFileUtils.producerSnapshotFile``).
SNAPSHOT_SUFFIX = ".snapshot"
_VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot_file(offset: int) -> str:
    """The file name of the snapshot at ``offset``."""
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offset(name: str) -> int | None:
    """The offset a snapshot file name carries, None for any other name."""
    if len(name) != 20 + len(SNAPSHOT_SUFFIX) or not name.endswith(SNAPSHOT_SUFFIX) or not name[:20].isdigit():
        return None
    return int(name[:20])


def encode_snapshot(producers: dict[int, ProducerEntry]) -> bytes:
    """Kafka's ProducerSnapshot v1 bytes of ``producers`` (sorted by producer id; entries without a batch are
    left out)."""
    body = bytearray(_COUNT.pack(sum(1 for e in producers.values() if e.batches)))
    for pid in sorted(producers):
        e = producers[pid]
        if not e.batches:
            continue
        first, last, base = e.batches[-1]
        delta = last - first if last >= first else last + MAX_SEQUENCE + 1 - first
        body += _ENTRY.pack(pid, e.epoch, last, base + delta, delta, e.last_timestamp, -1, -1)
    return _HEAD.pack(_VERSION, crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes) -> dict[int, ProducerEntry]:
    """The producers of a snapshot's bytes. ValueError for a version other than 1, a CRC-32C mismatch or a
    truncated file (Kafka: CorruptSnapshotException; the caller ignores such a snapshot)."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise ValueError(f"producer snapshot of {len(data)} bytes is truncated")
    version, crc = _HEAD.unpack_from(data)
    if version != _VERSION:
        raise ValueError(f"producer snapshot version {version}, expected {_VERSION}")
    body = data[_HEAD.size:]
    if crc32c(body) != crc:
        raise ValueError("producer snapshot CRC-32C mismatch")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise ValueError(f"producer snapshot with {count} entries in {len(body)} bytes")
    out: dict[int, ProducerEntry] = {}
    for i in range(count):
        pid, epoch, last, last_offset, delta, ts, _coord, _txn = _ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size)
        first = last - delta if last - delta >= 0 else last - delta + MAX_SEQUENCE + 1
        out[pid] = ProducerEntry(epoch, deque([(first, last, last_offset - delta)], maxlen=BATCHES_TO_RETAIN), ts)
    return out
