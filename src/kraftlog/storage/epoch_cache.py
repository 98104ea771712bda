"""The leader-epoch cache of a partition replica: Kafka's ``LeaderEpochFileCache``.

Entries are ``(epoch, start_offset)`` pairs, strictly increasing in both: the first offset each leader
epoch wrote to this log. It answers OffsetsForLeaderEpoch (KIP-101/KIP-279), drives follower
truncation and consumer truncation detection (KIP-320), and is persisted in the partition's
``leader-epoch-checkpoint`` file, rewritten atomically (tmp + fsync + rename) on every change, as Kafka
does. The checkpoint value is Kafka's text format::

    0            <- version
    2            <- number of entries
    0 0          <- "epoch start_offset"
    2 13
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from .disk import Disk

__all__ = ["LeaderEpochCache", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "format_epoch_checkpoint",
           "parse_epoch_checkpoint"]

#: Kafka's ``UNDEFINED_EPOCH`` / ``UNDEFINED_EPOCH_OFFSET``.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_CHECKPOINT_VERSION = 0


def format_epoch_checkpoint(entries: list[tuple[int, int]]) -> str:
    """Kafka's leader-epoch-checkpoint text for ``entries`` ((epoch, start offset) pairs)."""
    lines = [str(_CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(f"{e} {o}" for e, o in entries)
    return "\n".join(lines) + "\n"


def parse_epoch_checkpoint(text: str | bytes) -> list[tuple[int, int]]:
    """Parse Kafka's leader-epoch-checkpoint text. Raises ValueError when malformed (Kafka fails the
    log dir with a KafkaStorageException in that case)."""
    if isinstance(text, bytes):
        text = text.decode()
    if not isinstance(text, str):
        raise ValueError(f"leader-epoch-checkpoint holds a {type(text).__name__}, not text")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or int(lines[0]) != _CHECKPOINT_VERSION:
        raise ValueError(f"malformed leader-epoch-checkpoint: {text!r}")
    count = int(lines[1])
    if count != len(lines) - 2:
        raise ValueError(f"leader-epoch-checkpoint expects {count} entries, has {len(lines) - 2}")
    entries = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"malformed leader-epoch-checkpoint line: {line!r}")
        entries.append((int(parts[0]), int(parts[1])))
    return entries


class LeaderEpochCache:
    """Kafka's ``LeaderEpochFileCache`` over a :class:`~kraftlog.storage.disk.Disk`.

    ``LeaderEpochCache(disk, path, now_ms)`` loads the entries stored at ``path`` (missing file = empty
    cache). Every change is written with ``disk.write_atomic`` (durable at once). Mutators take an
    optional ``now_ms`` (the time handed to the disk); when omitted the last time seen is used.
    Epochs and offsets are ints; -1 means undefined.
    """

    __slots__ = ("_disk", "path", "_epochs", "_starts", "_now_ms")

    def __init__(self, disk: Disk, path: str, now_ms: int) -> None:
        self._disk = disk
        self.path = path
        self._now_ms = now_ms
        self._epochs: list[int] = []
        self._starts: list[int] = []
        value = disk.read_value(path)
        if value is not None:
            for epoch, start in parse_epoch_checkpoint(value):  # type: ignore[arg-type]
                if self._epochs and (epoch <= self._epochs[-1] or start <= self._starts[-1]):
                    raise ValueError(f"leader-epoch-checkpoint {path} not strictly increasing")
                self._epochs.append(epoch)
                self._starts.append(start)

    # ------------------------------------------------------------------ persistence
    def _write(self, now_ms: int | None) -> None:
        if now_ms is not None:
            self._now_ms = now_ms
        self._disk.write_atomic(self.path, format_epoch_checkpoint(self.entries()), self._now_ms)

    # ------------------------------------------------------------------ updates
    def assign(self, epoch: int, start_offset: int, now_ms: int | None = None) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (Kafka's ``LeaderEpochFileCache.assign``).

        No-op unless ``epoch`` differs from the latest epoch or ``start_offset`` is below the latest
        entry's start (so re-assigning the latest epoch is a no-op). Otherwise every entry (from the end)
        whose epoch >= ``epoch`` or whose start offset >= ``start_offset`` is removed, keeping the cache
        monotonic, and the new entry is added. Raises ValueError for a negative epoch or offset (Kafka:
        IllegalArgumentException).
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        epochs = self._epochs
        starts = self._starts
        if epochs and epoch == epochs[-1] and start_offset >= starts[-1]:
            return
        while epochs and (epochs[-1] >= epoch or starts[-1] >= start_offset):
            epochs.pop()
            starts.pop()
        epochs.append(epoch)
        starts.append(start_offset)
        self._write(now_ms)

    def truncate_from_end(self, end_offset: int, now_ms: int | None = None) -> None:
        """Remove the entries whose start offset >= ``end_offset`` (Kafka's ``truncateFromEnd``, used
        when the log is truncated to ``end_offset``). No-op for ``end_offset`` < 0."""
        starts = self._starts
        if end_offset < 0 or not starts or starts[-1] < end_offset:
            return
        keep = bisect_left(starts, end_offset)
        del starts[keep:]
        del self._epochs[keep:]
        self._write(now_ms)

    def truncate_from_start(self, start_offset: int, now_ms: int | None = None) -> None:
        """Drop the entries that start at or before ``start_offset`` and re-add the last of them moved
        to ``start_offset`` (Kafka's ``truncateFromStart``, used when the log start offset advances)."""
        starts = self._starts
        n = bisect_right(starts, start_offset)
        if n == 0:
            return
        floor_epoch = self._epochs[n - 1]
        del starts[:n]
        del self._epochs[:n]
        starts.insert(0, start_offset)
        self._epochs.insert(0, floor_epoch)
        self._write(now_ms)

    def clear(self, now_ms: int | None = None) -> None:
        """Remove every entry (Kafka's ``clearAndFlush``)."""
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
            self._write(now_ms)

    # ------------------------------------------------------------------ queries
    def latest_epoch(self) -> int:
        """The latest epoch, -1 when empty."""
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def latest_entry(self) -> tuple[int, int] | None:
        """The latest (epoch, start offset), None when empty."""
        return (self._epochs[-1], self._starts[-1]) if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        """The earliest (epoch, start offset), None when empty."""
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch: Kafka's ``LeaderEpochFileCache.endOffsetFor``.

        * ``requested_epoch`` == -1 → (-1, -1);
        * ``requested_epoch`` == latest epoch → (latest epoch, ``log_end_offset``);
        * no entry with a greater epoch (greater than latest, or empty cache) → (-1, -1);
        * no entry with an epoch <= requested (below the first) → (``requested_epoch``, first start offset);
        * otherwise (floor epoch, start offset of the next higher entry).

        E.g. entries {0:0, 2:13, 4:17}, LEO 20: epoch 1 → (0, 13); 3 → (2, 17); 4 → (4, 20).
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        epochs = self._epochs
        if epochs and epochs[-1] == requested_epoch:
            return (requested_epoch, log_end_offset)
        higher = bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if higher == 0:
            return (requested_epoch, self._starts[0])
        return (epochs[higher - 1], self._starts[higher])

    def epoch_for_offset(self, offset: int) -> int:
        """Epoch of the entry covering ``offset`` (the last entry starting at or before it), -1 if none
        (Kafka's ``epochForOffset``; offsets past the LEO map to the latest epoch)."""
        i = bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int | None:
        """Start offset of ``epoch`` if the cache has an entry for exactly that epoch, else None."""
        i = bisect_left(self._epochs, epoch)
        if i < len(self._epochs) and self._epochs[i] == epoch:
            return self._starts[i]
        return None

    def entries(self) -> list[tuple[int, int]]:
        """A copy of the entries, (epoch, start offset) in increasing order."""
        return list(zip(self._epochs, self._starts, strict=True))

    def __len__(self) -> int:
        return len(self._epochs)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.path!r}, {self.entries()})"
