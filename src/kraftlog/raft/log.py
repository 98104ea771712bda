"""The KRaft log (Kafka's ``ReplicatedLog`` / ``KafkaMetadataLog``): :class:`~kraftlog.protocol.raft_records.RaftBatch`
items in one log file on an injected :class:`~kraftlog.storage.disk.Disk`, and its leader-epoch cache.

A batch is one item of the file: written whole or not at all (a real disk frames it with one CRC), so an
event of the controller that is one batch survives a crash entirely or not at all. The log load runs the
Disk's recovery (a damaged tail is dropped) and then drops any batch that does not follow its predecessor
(a torn tail). Every write may raise :class:`OSError` (ENOSPC, EIO): the caller treats it as fatal, as
Kafka's KRaft does.

Offsets are log offsets, epochs leader epochs. The leader-epoch cache (Kafka's ``LeaderEpochFileCache``) is
rebuilt from the batches: (epoch, start offset) for every epoch whose batches the log holds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ..protocol.raft_records import RaftBatch
from ..storage.disk import Disk, LoadDrop

__all__ = ["RaftLog", "OffsetAndEpoch", "ValidOffsetAndEpoch", "METADATA_LOG_DIR"]

#: The KRaft log's directory on a node's metadata disk (Kafka's ``__cluster_metadata-0``).
METADATA_LOG_DIR = "metadata/__cluster_metadata-0"


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A log position (Kafka's ``OffsetAndEpoch``): compared by epoch first, then offset, as Raft compares
    logs ("the log with the later last epoch is more up to date; with equal epochs the longer one")."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    """The leader's check of a follower's fetch position (Kafka's ``ValidOffsetAndEpoch``): ``diverging`` is
    None when the position is on the leader's log, else the (end offset, epoch) to truncate to."""

    diverging: OffsetAndEpoch | None = None


class RaftLog:
    """The KRaft log of one node. ``disk`` holds ``<directory>/00000000000000000000.log`` whose items are
    :class:`RaftBatch` objects; ``load_drops`` says what the log load dropped (recovery of a damaged tail, a
    batch not following its predecessor)."""

    def __init__(self, disk: Disk, now_ms: int, directory: str = METADATA_LOG_DIR) -> None:
        self.disk = disk
        self.path = f"{directory}/00000000000000000000.log"
        self.load_drops: list[LoadDrop] = list(disk.recover(self.path, now_ms))
        self._batches: list[RaftBatch] = []
        self._bases: list[int] = []
        #: the leader-epoch cache: epochs and their start offsets, in order
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        kept = 0
        for item in disk.read(self.path):
            batch = cast(RaftBatch, item)
            if not isinstance(item, RaftBatch) or batch.base_offset != self.end_offset or not batch.records \
                    or (self._epochs and batch.epoch < self._epochs[-1]):
                break
            self._add(batch)
            kept += 1
        total = len(disk.read(self.path))
        if kept < total:
            self.load_drops.append(LoadDrop(self.path, kept, total, total - kept,
                                            "a batch that does not follow its predecessor"))
            disk.truncate(self.path, kept, now_ms)
            disk.fsync(self.path, now_ms)

    # ------------------------------------------------------------------ reading
    @property
    def end_offset(self) -> int:
        """The log end offset (the next batch's base offset)."""
        return self._batches[-1].next_offset if self._batches else 0

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch, 0 for an empty log (Kafka's ``lastFetchedEpoch``)."""
        return self._batches[-1].epoch if self._batches else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        """(last epoch, log end offset): what a Vote request compares."""
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    def batches(self) -> Sequence[RaftBatch]:
        """Every batch, in offset order (the caller must not change the list)."""
        return self._batches

    def read(self, offset: int, max_records: int) -> tuple[RaftBatch, ...]:
        """The batches from the one holding ``offset`` on, at least one if any, and no more once
        ``max_records`` records were collected. ``offset`` is at a batch boundary when fetchers truncate as
        told; a batch is never split."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        out: list[RaftBatch] = []
        count = 0
        for batch in self._batches[i:]:
            if out and count + len(batch.records) > max_records:
                break
            out.append(batch)
            count += len(batch.records)
        return tuple(out)

    def batch_at(self, offset: int) -> RaftBatch | None:
        """The batch holding ``offset``, None past the end."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0 or offset >= self.end_offset:
            return None
        return self._batches[i]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch | None:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: for the latest epoch, (epoch, log end offset); for an
        earlier one, (the largest epoch <= it, the start offset of the next epoch); for one below the first,
        (it, the first epoch's start offset); None for an epoch above every epoch of the log or an empty log."""
        if not self._epochs or epoch < 0:
            return None
        if epoch == self._epochs[-1]:
            return OffsetAndEpoch(epoch, self.end_offset)
        higher = bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return None
        if higher == 0:
            return OffsetAndEpoch(epoch, self._epoch_starts[0])
        return OffsetAndEpoch(self._epochs[higher - 1], self._epoch_starts[higher])

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Kafka's ``KafkaMetadataLog.validateOffsetAndEpoch`` (no snapshots yet): the follower's (fetch
        offset, last fetched epoch) is on this log when this log's end offset for that epoch is that epoch
        and not below the offset; otherwise it diverges at that end offset and epoch (an empty log, or an
        epoch above every epoch here, answers with this log's end)."""
        found = self.end_offset_for_epoch(epoch)
        if found is None:
            found = OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)
        if found.epoch != epoch or found.offset < offset:
            return ValidOffsetAndEpoch(found)
        return ValidOffsetAndEpoch()

    # ------------------------------------------------------------------ writing
    def append_as_leader(self, records: Sequence[object], epoch: int, now_ms: int, *,
                         control: bool = False) -> RaftBatch:
        """Append ``records`` as one batch of leader epoch ``epoch`` at the log end; returns it. Raises
        ValueError for an empty batch or an epoch below the last one; OSError when the disk fails (nothing
        appended)."""
        if not records:
            raise ValueError("an empty batch is never appended")
        if self._epochs and epoch < self._epochs[-1]:
            raise ValueError(f"epoch {epoch} is below the log's last epoch {self._epochs[-1]}")
        batch = RaftBatch(self.end_offset, epoch, tuple(records), control, now_ms)
        self.disk.append(self.path, batch, now_ms)
        self._add(batch)
        return batch

    def append_as_follower(self, batches: Sequence[RaftBatch], now_ms: int,
                           max_epoch: int | None = None) -> list[RaftBatch]:
        """Append the leader's ``batches`` that follow this log's end (one write); returns those appended.
        A batch that does not start at the log end, goes back in epoch or is of an epoch above ``max_epoch``
        (the replica's own: Kafka's ``appendAsFollower(records, epoch)``) ends the append (Kafka rejects such
        records). Raises OSError when the disk fails (nothing appended)."""
        accepted: list[RaftBatch] = []
        end = self.end_offset
        last_epoch = self._epochs[-1] if self._epochs else -1
        for batch in batches:
            if batch.base_offset != end or not batch.records or batch.epoch < last_epoch or (
                    max_epoch is not None and batch.epoch > max_epoch):
                break
            accepted.append(batch)
            end = batch.next_offset
            last_epoch = batch.epoch
        if accepted:
            self.disk.append_many(self.path, accepted, now_ms)
            for batch in accepted:
                self._add(batch)
        return accepted

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (a batch is removed whole, so the new end may be
        below ``offset``); returns the new end offset. Durable after :meth:`flush`."""
        keep = bisect_right(self._bases, offset - 1)
        while keep and self._batches[keep - 1].next_offset > offset:
            keep -= 1
        if keep < len(self._batches):
            self.disk.truncate(self.path, keep, now_ms)
            del self._batches[keep:], self._bases[keep:]
            while self._epoch_starts and self._epoch_starts[-1] >= self.end_offset:
                self._epochs.pop()
                self._epoch_starts.pop()
        return self.end_offset

    def truncate_to_end_offset(self, diverging: OffsetAndEpoch, now_ms: int) -> int:
        """Kafka's ``ReplicatedLog.truncateToEndOffset``: at epoch 0, the smaller of the leader's end offset and
        this log's end; else, when this log has the leader's epoch, the smaller of the two ends of that epoch,
        and when it has not, this log's own end for the epoch below it. Returns the new end offset."""
        if diverging.epoch == 0:
            target = min(diverging.offset, self.end_offset)
        else:
            local = self.end_offset_for_epoch(diverging.epoch) or OffsetAndEpoch(self.last_fetched_epoch,
                                                                                 self.end_offset)
            target = min(local.offset, diverging.offset) if local.epoch == diverging.epoch else local.offset
        return self.truncate_to(target, now_ms)

    def flush(self, now_ms: int) -> None:
        """fsync the log file (OSError when the disk fails)."""
        self.disk.fsync(self.path, now_ms)

    def _add(self, batch: RaftBatch) -> None:
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        if not self._epochs or batch.epoch > self._epochs[-1]:
            self._epochs.append(batch.epoch)
            self._epoch_starts.append(batch.base_offset)
