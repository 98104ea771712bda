"""Idempotent-producer state of one partition log (Kafka's ``ProducerStateManager``).

For each producer id the log remembers its epoch and the last five batches' sequence ranges and
offsets, from every batch appended (as leader or follower), so whichever replica leads can tell a
retried batch from a new one:

* a batch whose (first, last) sequence matches a remembered one is a duplicate: Kafka answers with
  the original offsets and appends nothing;
* otherwise its first sequence must follow the last one (or be 0 for a new producer or epoch), else
  OUT_OF_ORDER_SEQUENCE_NUMBER; an older producer epoch gets INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..protocol.errors import Errors
from ..protocol.records import RecordBatch

#: Kafka keeps the metadata of the last 5 batches per producer (``NUM_BATCHES_TO_RETAIN``).
BATCHES_TO_RETAIN = 5


@dataclass(slots=True)
class ProducerEntry:
    """``batches``: (first sequence, last sequence, base offset) of the newest batches, oldest first."""

    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class ProducerStateManager:
    """Producer id → :class:`ProducerEntry` for one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, batch: RecordBatch) -> tuple[int, int]:
        """Validate a leader append: (Errors.NONE, -1) to append, (Errors.NONE, base offset) for a
        duplicate (do not append), or (error, -1)."""
        pid = batch.producer_id
        if pid < 0:
            return Errors.NONE, -1
        entry = self.producers.get(pid)
        first = batch.base_sequence
        last = first + batch.record_count - 1
        if entry is None or batch.producer_epoch > entry.epoch:
            return (Errors.NONE, -1) if first == 0 else (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        if batch.producer_epoch < entry.epoch:
            return Errors.INVALID_PRODUCER_EPOCH, -1
        for b_first, b_last, b_offset in entry.batches:
            if b_first == first and b_last == last:
                return Errors.NONE, b_offset
        if first != entry.last_sequence + 1:
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
        entry.batches.append((batch.base_sequence, batch.base_sequence + batch.record_count - 1,
                              batch.base_offset))

    def rebuild(self, batches) -> None:
        """Recompute from the log (after loading it, or after a truncation)."""
        self.producers = {}
        for b in batches:
            self.update(b)
