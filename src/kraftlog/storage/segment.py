"""A segment of a partition log (Kafka's ``LogSegment``) and the log's topic configs (Kafka's ``LogConfig``).

A segment is the file ``<directory>/<20-digit base offset>.log`` holding RecordBatch items on a
:class:`~kraftlog.storage.disk.Disk`; :class:`LogSegment` keeps its offset index in memory and decides when
the log rolls (:meth:`LogSegment.should_roll`). The log itself: :mod:`kraftlog.storage.log`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from ..protocol.records import RecordBatch
from .disk import Disk
from .index import OffsetIndex, TimeIndex, index_file, time_index_file

__all__ = [
    "LOG_FILE_SUFFIX", "SEGMENT_FILE", "OFFSET_INDEX_ENTRY_BYTES", "TIME_INDEX_ENTRY_BYTES", "LogConfig",
    "LogSegment", "RecordBatchTooLargeError", "segment_file", "segment_paths", "base_of", "CHECKSUM_SUFFIX",
    "checksum_file", "format_checksum", "parse_checksum", "parse_checksum_file",
]

#: kraftlog's addition to Kafka's layout: ``<20-digit base offset>.checksum`` holds the CRC-32C of the whole
#: segment file, written when the segment rolls and, for the active segment, at a clean shutdown. A load after
#: a clean shutdown checks each segment with one pass against it instead of batch by batch (Kafka skips that
#: recovery altogether).
CHECKSUM_SUFFIX = ".checksum"


def checksum_file(base_offset: int) -> str:
    """The checksum file name of the segment starting at ``base_offset``."""
    return f"{base_offset:020d}{CHECKSUM_SUFFIX}"


def format_checksum(crc: int, size: int) -> str:
    """A checksum file's text: ``crc32c <8 hex digits> <size in bytes>``."""
    return f"crc32c {crc:08x} {size}\n"


def parse_checksum(value: object) -> int | None:
    """The CRC-32C a checksum file's value holds, None when it is missing or malformed."""
    parsed = parse_checksum_file(value)
    return parsed[0] if parsed is not None else None


def parse_checksum_file(value: object) -> tuple[int, int] | None:
    """(CRC-32C, segment size in bytes) of a checksum file's value, None when it is missing or malformed."""
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    if not isinstance(text, str):
        return None
    parts = text.split()
    if len(parts) != 3 or parts[0] != "crc32c" or len(parts[1]) != 8:
        return None
    try:
        return int(parts[1], 16), int(parts[2])
    except ValueError:
        return None

#: A segment file's suffix, and its name: the base offset as 20 digits (Kafka's ``LogFileUtils``).
LOG_FILE_SUFFIX = ".log"
#: File names inside a partition directory (Kafka's): the first segment of a log that starts at 0.
SEGMENT_FILE = "00000000000000000000.log"

#: Kafka's index entry sizes (``OffsetIndex``: relative offset int32 + position int32; ``TimeIndex``:
#: timestamp int64 + relative offset int32).
OFFSET_INDEX_ENTRY_BYTES = 8
TIME_INDEX_ENTRY_BYTES = 12
_MAX_RELATIVE_OFFSET = 2**31 - 1


def segment_file(base_offset: int) -> str:
    """A segment's file name: ``base_offset`` as 20 digits + ``.log`` (Kafka's ``LogFileUtils.logFile``)."""
    return f"{base_offset:020d}{LOG_FILE_SUFFIX}"


def segment_paths(disk: Disk, directory: str) -> list[str]:
    """The segment files of the partition directory ``directory`` on ``disk``, in base-offset order."""
    prefix = directory.rstrip("/") + "/"
    return [p for p in disk.list(prefix) if base_of(p[len(prefix):]) is not None]


def base_of(name: str) -> int | None:
    """The base offset a segment file name carries, None for any other name."""
    if len(name) != 20 + len(LOG_FILE_SUFFIX) or not name.endswith(LOG_FILE_SUFFIX) or not name[:20].isdigit():
        return None
    return int(name[:20])


class RecordBatchTooLargeError(ValueError):
    """A batch larger than ``segment.bytes`` (Kafka's ``RecordBatchTooLargeException``: the produce answer
    is RECORD_LIST_TOO_LARGE). Nothing was appended."""


@dataclass(slots=True, frozen=True)
class LogConfig:
    """A partition log's topic configs (Kafka's ``LogConfig``; sizes in bytes, times in ms).

    ``flush_interval_messages``: ``flush.messages``: fsync once this many messages are unflushed (>= 1;
    None = never, Kafka's default). ``flush_interval_ms``: ``flush.ms``: the flush scheduler fsyncs a log
    whose last flush is this old (>= 0; None = never). ``segment_bytes`` (``segment.bytes``, 1 GiB),
    ``segment_ms`` (``segment.ms``, 7 days), ``segment_jitter_ms`` (``segment.jitter.ms``, 0: each segment's
    roll time is brought forward by a draw in [0, min(jitter, segment.ms))), ``segment_index_bytes``
    (``segment.index.bytes``, 10 MiB: the size of each index, so its entry capacity), ``index_interval_bytes``
    (``index.interval.bytes``, 4096), ``retention_ms`` (``retention.ms``, 7 days; -1: no time limit),
    ``retention_bytes`` (``retention.bytes``, -1: no size limit), ``delete`` (``cleanup.policy`` holds
    ``delete``: retention applies), ``file_delete_delay_ms`` (``file.delete.delay.ms``, 60 s: how long the file
    of a segment retention deleted stays on disk). Compaction (:mod:`kraftlog.storage.cleaner`): ``compact``
    (``cleanup.policy`` holds ``compact``), ``min_cleanable_ratio`` (``min.cleanable.dirty.ratio``, 0.5),
    ``min_compaction_lag_ms`` (``min.compaction.lag.ms``, 0), ``max_compaction_lag_ms``
    (``max.compaction.lag.ms``, Long.MAX_VALUE), ``delete_retention_ms`` (``delete.retention.ms``, 1 day: how
    long a tombstone outlives the first cleaning that reached it). ValueError for a value out of Kafka's range.
    """

    flush_interval_messages: int | None = None
    flush_interval_ms: int | None = None
    segment_bytes: int = 1 << 30
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 << 20
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    delete: bool = True
    file_delete_delay_ms: int = 60_000
    compact: bool = False
    min_cleanable_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = (1 << 63) - 1
    delete_retention_ms: int = 86_400_000

    def __post_init__(self) -> None:
        if self.flush_interval_messages is not None and self.flush_interval_messages < 1:
            raise ValueError(f"flush_interval_messages must be >= 1 or None, got {self.flush_interval_messages}")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise ValueError(f"flush_interval_ms must be >= 0 or None, got {self.flush_interval_ms}")
        for name, low in (("segment_bytes", 14), ("segment_ms", 1), ("segment_jitter_ms", 0),
                          ("segment_index_bytes", 4), ("index_interval_bytes", 0), ("file_delete_delay_ms", 0),
                          ("min_cleanable_ratio", 0), ("min_compaction_lag_ms", 0), ("max_compaction_lag_ms", 1),
                          ("delete_retention_ms", 0)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")

    @property
    def max_index_entries(self) -> int:
        """Entries the offset index holds (Kafka's ``maxEntries``: the index size over 8 bytes)."""
        return self.segment_index_bytes // OFFSET_INDEX_ENTRY_BYTES

    @property
    def max_time_index_entries(self) -> int:
        """Entries the time index holds (the index size over 12 bytes)."""
        return self.segment_index_bytes // TIME_INDEX_ENTRY_BYTES


class LogSegment:
    """One segment of a log (Kafka's ``LogSegment``): the file ``path`` holding the batches from
    ``base_offset``, its dense offset index in memory (``bases``/``sizes``/``timestamps``: each batch's base
    offset, bytes and max timestamp) and Kafka's sparse indexes (:class:`~kraftlog.storage.index.OffsetIndex`,
    :class:`~kraftlog.storage.index.TimeIndex`: ``offset_index``, ``time_index``), each holding what
    ``segment.index.bytes`` holds when the segment is created (``config``).

    ``size``: bytes; ``next_offset``: the offset after its last record (its base when empty);
    ``max_timestamp`` / ``max_timestamp_offset``: the largest batch max timestamp so far and the last offset of
    its batch (-1 when none); ``rolling_timestamp``: the first batch's max timestamp (``segment.ms`` counts from
    it; -1 when none); ``created_ms`` and ``last_modified_ms``: when it was created (or loaded) and last appended
    to; ``jitter_ms``: this segment's ``segment.jitter.ms`` draw."""

    __slots__ = ("base_offset", "path", "bases", "sizes", "timestamps", "size", "next_offset", "max_timestamp",
                 "max_timestamp_offset", "rolling_timestamp", "created_ms", "last_modified_ms", "offset_index",
                 "time_index", "bytes_since_index", "jitter_ms", "loaded")

    def __init__(self, directory: str, base_offset: int, now_ms: int, jitter_ms: int = 0,
                 config: LogConfig | None = None) -> None:
        cfg = config if config is not None else LogConfig()
        self.base_offset = base_offset
        self.path = f"{directory}/{segment_file(base_offset)}"
        self.bases: list[int] = []
        self.sizes: list[int] = []
        self.timestamps: list[int] = []  # each batch's max timestamp
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.max_timestamp_offset = -1
        self.rolling_timestamp = -1
        self.created_ms = now_ms
        self.last_modified_ms = now_ms
        self.offset_index = OffsetIndex(base_offset, cfg.max_index_entries)
        self.time_index = TimeIndex(base_offset, cfg.max_time_index_entries)
        self.bytes_since_index = 0
        self.jitter_ms = jitter_ms
        #: False for a sealed segment loaded from its files only (after a clean shutdown): its dense index
        #: (``bases``/``sizes``/``timestamps``) is read from the batch headers on first use
        #: (:meth:`PartitionLog._ensure_loaded`)
        self.loaded = True

    def seal_time_index(self) -> None:
        """The time index entry a segment gets when it stops being active (Kafka's
        ``onBecomeInactiveSegment`` and ``close``): its largest timestamp, whatever the index's capacity, so the
        last entry tells the segment's largest timestamp when it is loaded from its files."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.max_timestamp_offset, skip_full_check=True)

    # ------------------------------------------------------------------ the files beside the segment
    def write_sidecars(self, disk: Disk, now_ms: int) -> None:
        """When the segment stops being active (a roll, a clean shutdown): its last time index entry
        (:meth:`seal_time_index`), then ``<base>.checksum`` (the CRC-32C of its file, kraftlog's), Kafka's
        ``<base>.index`` and ``<base>.timeindex``. OSError propagates."""
        directory = self.path.rpartition("/")[0]
        self.seal_time_index()
        disk.write_atomic(f"{directory}/{checksum_file(self.base_offset)}",
                          format_checksum(disk.checksum(self.path), self.size), now_ms)
        disk.write_atomic(f"{directory}/{index_file(self.base_offset)}", self.offset_index.encode(), now_ms)
        disk.write_atomic(f"{directory}/{time_index_file(self.base_offset)}", self.time_index.encode(), now_ms)

    def delete_sidecars(self, disk: Disk, now_ms: int) -> None:
        """Delete its checksum and index files (the segment changed or went)."""
        directory = self.path.rpartition("/")[0]
        for name in (checksum_file, index_file, time_index_file):
            path = f"{directory}/{name(self.base_offset)}"
            if disk.exists(path):
                disk.delete(path, now_ms)

    @classmethod
    def from_files(cls, disk: Disk, directory: str, base: int, next_base: int, size: int, now_ms: int,
                   jitter_ms: int, config: LogConfig) -> LogSegment | None:
        """A sealed segment from its files only (Kafka's lazy segment load): offsets ``base``..``next_base``,
        ``size`` bytes (its checksum file's), the sparse indexes from ``<base>.index`` and ``<base>.timeindex``,
        its largest timestamp from the time index's last entry (written when it stopped being active); its
        dense index unread (``loaded`` False: :meth:`load_headers`). None when an index file is missing or
        malformed (the segment is then read batch by batch)."""
        seg = cls(directory, base, now_ms, jitter_ms, config)
        try:
            raw = [disk.read_value(f"{directory}/{name(base)}") for name in (index_file, time_index_file)]
            data = [v.encode() if isinstance(v, str) else bytes(v) for v in raw if isinstance(v, (str, bytes))]
            if len(data) != 2:
                return None
            seg.offset_index = OffsetIndex.decode(base, config.max_index_entries, data[0])
            seg.time_index = TimeIndex.decode(base, config.max_time_index_entries, data[1])
        except ValueError:
            return None
        seg.size = size
        seg.next_offset = next_base
        if len(seg.time_index):
            seg.max_timestamp, seg.max_timestamp_offset = seg.time_index.timestamps[-1], seg.time_index.offsets[-1]
        seg.loaded = False
        return seg

    def load_headers(self, disk: Disk, config: LogConfig) -> None:
        """Read the batch headers of a segment :meth:`from_files` made, on its first use, framed by their
        lengths only (its checksum matched at load): its dense index."""
        disk.recover(self.path, self.last_modified_ms, False)
        fresh = LogSegment(self.path.rpartition("/")[0], self.base_offset, self.created_ms, self.jitter_ms, config)
        for b in cast(Iterator[RecordBatch], disk.scan_headers(self.path)):  # header fields only: RecordBatch's names
            fresh.index(b, b.max_timestamp, self.last_modified_ms, config.index_interval_bytes)
        self.bases, self.sizes, self.timestamps = fresh.bases, fresh.sizes, fresh.timestamps
        self.loaded = True

    # ------------------------------------------------------------------ appends
    def index(self, batch: RecordBatch, max_timestamp: int, now_ms: int, index_interval_bytes: int) -> None:
        """Account for ``batch`` just written at the end of the file (Kafka's ``LogSegment.append``): the dense
        index, the max timestamp, and a sparse index entry once more than ``index.interval.bytes`` were
        appended since the last one."""
        next_offset = batch.next_offset
        self._add(batch.base_offset, next_offset - 1, batch.size_bytes, max_timestamp, index_interval_bytes)
        self.next_offset = next_offset
        self.last_modified_ms = now_ms

    def _add(self, base_offset: int, last_offset: int, size: int, max_timestamp: int,
             index_interval_bytes: int) -> None:
        if not self.bases:
            self.rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.max_timestamp_offset = max_timestamp, last_offset
        if self.bytes_since_index > index_interval_bytes:
            # Kafka: offsetIndex.append(batch last offset, its position); timeIndex.maybeAppend(max so far)
            self.offset_index.append(last_offset, self.size)
            self.time_index.maybe_append(self.max_timestamp, self.max_timestamp_offset)
            self.bytes_since_index = 0
        self.bases.append(base_offset)
        self.sizes.append(size)
        self.timestamps.append(max_timestamp)
        self.size += size
        self.bytes_since_index += size

    def truncate_index(self, keep: int, next_offset: int, index_interval_bytes: int) -> None:
        """Forget every batch from index position ``keep`` on (the file was cut there) and recompute what
        depends on them (size, max timestamp, the sparse indexes), as Kafka's ``LogSegment.truncateTo`` does;
        ``next_offset``: the offset after the last kept batch."""
        sizes, timestamps = self.sizes[:keep], self.timestamps[:keep]
        bases = self.bases[:keep]
        ends = bases[1:] + [next_offset] if bases else []
        self.bases, self.sizes, self.timestamps = [], [], []
        self.size = self.bytes_since_index = 0
        self.max_timestamp = self.max_timestamp_offset = self.rolling_timestamp = -1
        self.offset_index = OffsetIndex(self.base_offset, self.offset_index.max_entries)
        self.time_index = TimeIndex(self.base_offset, self.time_index.max_entries)
        self.next_offset = self.base_offset
        last_modified = self.last_modified_ms
        for base, end, size, ts in zip(bases, ends, sizes, timestamps, strict=True):
            self._add(base, end - 1, size, ts, index_interval_bytes)
        if bases:
            self.next_offset = next_offset
        self.last_modified_ms = last_modified

    def should_roll(self, config: LogConfig, size: int, max_timestamp: int, last_offset: int,
                    now_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll`` for a batch of ``size`` bytes with ``max_timestamp`` ending at
        ``last_offset`` (module docstring)."""
        ts = self.rolling_timestamp
        waited = max_timestamp - ts if ts >= 0 else now_ms - self.created_ms
        return (self.size > config.segment_bytes - size
                or (self.size > 0 and waited > config.segment_ms - self.jitter_ms)
                or self.offset_index.is_full or self.time_index.is_full
                or not 0 <= last_offset - self.base_offset <= _MAX_RELATIVE_OFFSET)

    def largest_timestamp(self) -> int:
        """Kafka's ``LogSegment.largestTimestamp``: the largest record timestamp, else the last-modified time."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def __repr__(self) -> str:
        return f"LogSegment({self.path!r}, {self.base_offset}..{self.next_offset}, {self.size} bytes)"
