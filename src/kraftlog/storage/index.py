"""A segment's sparse indexes, Kafka's ``OffsetIndex`` and ``TimeIndex``, and their files' formats.

* The **offset index** maps a batch's last offset to the byte position of the batch in its segment, one entry
  each time more than ``index.interval.bytes`` were appended since the last entry (Kafka's
  ``LogSegment.append``). Entries are (relative offset int32, position int32), 8 bytes each, big-endian.
* The **time index** maps the largest timestamp seen so far in the segment to the offset of the record
  carrying it, appended with each offset-index entry when the timestamp grew (``TimeIndex.maybeAppend``).
  Entries are (timestamp int64, relative offset int32), 12 bytes each.

Both hold at most ``segment.index.bytes`` of entries; a full index rolls the segment. kraftlog writes them as
Kafka's ``<base>.index`` and ``<base>.timeindex`` files when a segment rolls and at a clean shutdown (Kafka
keeps them memory-mapped and trims them at the roll), and reads through them to answer ListOffsets by
timestamp (Kafka's ``LogSegment.findOffsetByTimestamp``). Offsets are absolute in the API, relative to the
segment's base in the files.
"""

from __future__ import annotations

import struct
from bisect import bisect_right

__all__ = ["OffsetIndex", "TimeIndex", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "index_file", "time_index_file"]

INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def index_file(base_offset: int) -> str:
    """The offset index file name of the segment at ``base_offset`` (Kafka's ``LogFileUtils.offsetIndexFile``)."""
    return f"{base_offset:020d}{INDEX_SUFFIX}"


def time_index_file(base_offset: int) -> str:
    """The time index file name of the segment at ``base_offset``."""
    return f"{base_offset:020d}{TIME_INDEX_SUFFIX}"


class OffsetIndex:
    """Kafka's ``OffsetIndex`` of the segment at ``base_offset`` holding at most ``max_entries`` entries.

    :meth:`append` takes (absolute offset, byte position) in increasing offset order; :meth:`lookup` answers
    the entry with the largest offset at or below a target, or (base offset, 0) when there is none (Kafka's
    ``lookup``: where a scan for that offset may start)."""

    __slots__ = ("base_offset", "max_entries", "offsets", "positions")

    def __init__(self, base_offset: int, max_entries: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max_entries
        self.offsets: list[int] = []
        self.positions: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def is_full(self) -> bool:
        return len(self.offsets) >= self.max_entries

    def append(self, offset: int, position: int) -> None:
        """Add an entry (Kafka's ``OffsetIndex.append``). ValueError when the index is full or ``offset`` is not
        above the last entry's (Kafka's InvalidOffsetException)."""
        if self.is_full:
            raise ValueError(f"attempt to append to a full offset index (size {len(self.offsets)})")
        if self.offsets and offset <= self.offsets[-1]:
            raise ValueError(f"attempt to append offset {offset} to position {len(self.offsets)} no larger than "
                             f"the last offset appended ({self.offsets[-1]})")
        self.offsets.append(offset)
        self.positions.append(position)

    def lookup(self, target: int) -> tuple[int, int]:
        """(offset, position) of the last entry whose offset is at or below ``target``; (base offset, 0) when
        none is."""
        i = bisect_right(self.offsets, target) - 1
        return (self.offsets[i], self.positions[i]) if i >= 0 else (self.base_offset, 0)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries at or above ``offset`` (Kafka's ``truncateTo``)."""
        i = bisect_right(self.offsets, offset - 1)
        del self.offsets[i:], self.positions[i:]

    def encode(self) -> bytes:
        """The ``.index`` file's bytes: (relative offset, position) pairs."""
        return b"".join(_OFFSET_ENTRY.pack(o - self.base_offset, p) for o, p in zip(self.offsets, self.positions,
                                                                                       strict=True))

    @classmethod
    def decode(cls, base_offset: int, max_entries: int, data: bytes) -> OffsetIndex:
        """An index from a ``.index`` file's bytes; ValueError for a length that is not a whole number of
        entries or entries out of order (Kafka's ``sanityCheck``: the index is rebuilt then)."""
        if len(data) % _OFFSET_ENTRY.size:
            raise ValueError(f"offset index of {len(data)} bytes is not a multiple of {_OFFSET_ENTRY.size}")
        index = cls(base_offset, max(max_entries, len(data) // _OFFSET_ENTRY.size))
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data):
            index.append(base_offset + rel, pos)
        return index


class TimeIndex:
    """Kafka's ``TimeIndex`` of the segment at ``base_offset`` holding at most ``max_entries`` entries:
    (timestamp, absolute offset) with both increasing."""

    __slots__ = ("base_offset", "max_entries", "timestamps", "offsets")

    def __init__(self, base_offset: int, max_entries: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max_entries
        self.timestamps: list[int] = []
        self.offsets: list[int] = []

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def is_full(self) -> bool:
        return len(self.timestamps) >= self.max_entries

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Add (timestamp, offset) when the timestamp is larger than the last entry's (Kafka's
        ``maybeAppend``; the first entry needs a timestamp above -1). Returns whether it was added.
        ValueError when full (unless ``skip_full_check``: the entry a segment gets when it stops being active),
        or for an offset below the last entry's."""
        if self.is_full and not skip_full_check:
            raise ValueError(f"attempt to append to a full time index (size {len(self.timestamps)})")
        if self.offsets and offset < self.offsets[-1]:
            raise ValueError(f"attempt to append offset {offset} to the time index below {self.offsets[-1]}")
        if timestamp > (self.timestamps[-1] if self.timestamps else -1):
            self.timestamps.append(timestamp)
            self.offsets.append(offset)
            return True
        return False

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry whose timestamp is at or below ``target_timestamp``; (-1, base
        offset) when none is (Kafka's ``lookup``: the offset a search for records at ``target_timestamp`` or
        later may start from)."""
        i = bisect_right(self.timestamps, target_timestamp) - 1
        return (self.timestamps[i], self.offsets[i]) if i >= 0 else (-1, self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose offset is at or above ``offset``."""
        i = bisect_right(self.offsets, offset - 1)
        del self.timestamps[i:], self.offsets[i:]

    def encode(self) -> bytes:
        """The ``.timeindex`` file's bytes: (timestamp, relative offset) pairs."""
        return b"".join(_TIME_ENTRY.pack(t, o - self.base_offset) for t, o in zip(self.timestamps, self.offsets,
                                                                                     strict=True))

    @classmethod
    def decode(cls, base_offset: int, max_entries: int, data: bytes) -> TimeIndex:
        """A time index from a ``.timeindex`` file's bytes; ValueError when malformed."""
        if len(data) % _TIME_ENTRY.size:
            raise ValueError(f"time index of {len(data)} bytes is not a multiple of {_TIME_ENTRY.size}")
        index = cls(base_offset, max(max_entries, len(data) // _TIME_ENTRY.size))
        for ts, rel in _TIME_ENTRY.iter_unpack(data):
            if not index.maybe_append(ts, base_offset + rel):
                raise ValueError(f"time index entry ({ts}, {base_offset + rel}) does not increase")
        return index
