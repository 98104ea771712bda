"""Kafka v2 record batches as the core holds them.

A :class:`RecordBatch` carries the v2 batch fields the protocol uses (base offset, partition leader
epoch, producer id/epoch, base sequence, attributes) and its records. It is a plain slotted object
inside the core and the simulator; ``kraftlog.protocol.wire`` encodes it to Kafka's v2 bytes (magic 2,
CRC-32C) at the edge and decodes it back, record headers included (a client's compressed batch decodes to
an uncompressed one: see that module's docstring).

Offsets are absolute: record ``i`` of a batch has offset ``base_offset + i``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(slots=True, frozen=True)
class Record:
    """One record: ``timestamp`` in ms since the epoch, ``key``/``value`` bytes or None, ``headers``
    Kafka's record headers in order, (key, value) pairs: the key a string (Kafka's header key is a
    non-null String), the value bytes or None; repeated keys are allowed, as in Kafka."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True, frozen=True)
class RecordBatch:
    """A v2 record batch.

    ``base_offset``: offset of the first record (-1 before the leader assigns offsets on append).
    ``partition_leader_epoch``: the leader epoch in which the leader appended the batch (-1 before).
    ``records``: at least one record.
    """

    base_offset: int
    partition_leader_epoch: int
    records: tuple[Record, ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    attributes: int = 0

    @property
    def last_offset(self) -> int:
        """Offset of the last record."""
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        """Offset just past the batch (the LEO after appending it)."""
        return self.base_offset + len(self.records)

    @property
    def size_bytes(self) -> int:
        """Approximate encoded size in bytes: the 61-byte v2 batch header, then per record 8 bytes of
        framing plus key and value, plus per header 2 bytes of lengths plus its key (characters, UTF-8
        for ASCII keys) and value. A batch without headers keeps the size it always had."""
        size = 61
        for r in self.records:
            size += 8 + (len(r.key) if r.key else 0) + (len(r.value) if r.value else 0)
            if r.headers:
                for k, v in r.headers:
                    size += 2 + len(k) + (len(v) if v else 0)
        return size

    def with_offsets(self, base_offset: int, partition_leader_epoch: int) -> "RecordBatch":
        """A copy stamped by the leader on append (Kafka's offset assignment)."""
        return RecordBatch(base_offset, partition_leader_epoch, self.records, self.producer_id,
                           self.producer_epoch, self.base_sequence, self.attributes)

    def truncated_before(self, offset: int) -> "RecordBatch":
        """The prefix of this batch holding offsets < ``offset`` (``base_offset < offset <= last_offset``)."""
        keep = offset - self.base_offset
        return replace(self, records=self.records[:keep])
