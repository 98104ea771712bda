"""Idempotent-producer state of one partition log (Kafka's ``ProducerStateManager``).

For each producer id the log remembers its epoch and the last five batches' sequence ranges and
offsets, from every batch appended (as leader or follower), so whichever replica leads can tell a
retried batch from a new one:

* a batch whose (first, last) sequence matches a remembered one is a duplicate: Kafka answers with
  the original offsets and appends nothing;
* otherwise its first sequence must follow the last one (``inSequence``: last + 1, or 0 after
  ``Integer.MAX_VALUE``), or be 0 for a new epoch of a known producer, else OUT_OF_ORDER_SEQUENCE_NUMBER;
  an older producer epoch gets INVALID_PRODUCER_EPOCH;
* a producer id the log does not know (new, or its batches were truncated away or never replicated
  here) is accepted at any sequence: Kafka's ``ProducerAppendInfo.checkSequence`` since KIP-360
  (Kafka 2.5) accepts any sequence when there is no current producer epoch, where older brokers
  answered UNKNOWN_PRODUCER_ID. A producer whose batches a new leader never got goes on with its
  sequences instead of failing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..protocol.errors import Errors
from ..protocol.records import RecordBatch

#: Kafka keeps the metadata of the last 5 batches per producer (``NUM_BATCHES_TO_RETAIN``).
BATCHES_TO_RETAIN = 5
#: A producer's sequence wraps to 0 after this (Kafka's ``Integer.MAX_VALUE``).
MAX_SEQUENCE = 2**31 - 1


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """Kafka's ``ProducerAppendInfo.inSequence``: ``next_sequence`` follows ``last_sequence``, with the
    wrap from ``Integer.MAX_VALUE`` to 0."""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == MAX_SEQUENCE)


def batch_last_sequence(batch: RecordBatch) -> int:
    """The sequence of a batch's last record (Kafka's ``DefaultRecordBatch.lastSequence``: base sequence +
    ``lastOffsetDelta``, which a cleaned batch keeps; wraps past ``Integer.MAX_VALUE`` to 0)."""
    last = batch.base_sequence + batch.last_offset_delta
    return last - MAX_SEQUENCE - 1 if last > MAX_SEQUENCE else last


@dataclass(slots=True)
class ProducerEntry:
    """``batches``: (first sequence, last sequence, base offset) of the newest batches, oldest first."""

    epoch: int
    batches: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    #: the max timestamp (ms) of its last batch (Kafka's ``lastTimestamp``: producer.id.expiration.ms counts
    #: from it); -1 when unknown
    last_timestamp: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class ProducerStateManager:
    """Producer id → :class:`ProducerEntry` for one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, batch: RecordBatch) -> tuple[int, int]:
        """Validate a leader append: (Errors.NONE, -1) to append, (Errors.NONE, base offset) for a
        duplicate (do not append), or (error, -1). Kafka's ``ProducerAppendInfo.checkProducerEpoch`` and
        ``checkSequence`` and ``ProducerStateManager``'s duplicate lookup (module docstring)."""
        pid = batch.producer_id
        if pid < 0:
            return Errors.NONE, -1
        entry = self.producers.get(pid)
        if entry is None:  # no current producer epoch: any sequence (KIP-360)
            return Errors.NONE, -1
        first = batch.base_sequence
        if batch.producer_epoch > entry.epoch:
            return (Errors.NONE, -1) if first == 0 else (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        if batch.producer_epoch < entry.epoch:
            return Errors.INVALID_PRODUCER_EPOCH, -1
        last = batch_last_sequence(batch)
        for b_first, b_last, b_offset in entry.batches:
            if b_first == first and b_last == last:
                return Errors.NONE, b_offset
        if not in_sequence(entry.last_sequence, first):
            return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return Errors.NONE, -1

    def update(self, batch: RecordBatch) -> None:
        """Record an appended batch (leader or follower append, or log recovery)."""
        pid = batch.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None or batch.producer_epoch > entry.epoch:
            entry = self.producers[pid] = ProducerEntry(batch.producer_epoch)
        entry.batches.append((batch.base_sequence, batch_last_sequence(batch), batch.base_offset))
        entry.last_timestamp = batch.max_timestamp

    def load_missing(self, entries: dict[int, ProducerEntry]) -> int:
        """Take the producers of a snapshot (:mod:`.producer_snapshot`) that the log's batches did not give:
        those whose batches retention deleted. A producer the batches know keeps what they say (they are
        newer or as new, and remember more batches). Returns how many were taken."""
        taken = 0
        for pid, entry in entries.items():
            if pid not in self.producers:
                self.producers[pid] = entry
                taken += 1
        return taken

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget the producers whose last batch is ``expiration_ms`` old or older (Kafka's
        ``removeExpiredProducers`` with ``producer.id.expiration.ms``); the ids removed, sorted."""
        gone = sorted(pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms)
        for pid in gone:
            del self.producers[pid]
        return gone

    def rebuild(self, batches: Iterable[RecordBatch]) -> None:
        """Recompute from the log (after loading it, or after a truncation)."""
        self.producers = {}
        for b in batches:
            self.update(b)
