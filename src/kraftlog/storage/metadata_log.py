"""The ``__cluster_metadata`` log of a node (its controller's or, as a local copy, a broker's) with its snapshots:
Kafka's ``KafkaMetadataLog`` for kraftlog's single controller and its brokers.

Files (under ``metadata/__cluster_metadata-0/`` of the node's Disk):

* segments ``<base offset, 20 digits>.log``: log files of metadata records, one item per record, the first
  at the base offset (a node formatted before segments existed has only ``00000000000000000000.log``);
* ``log-start-offset``: the log start offset the last clean advanced to (Kafka's ``log-start-offset-checkpoint``):
  the records of the first segment below it are not served and not loaded;
* snapshots ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``: value files in Kafka's snapshot layout
  (:mod:`kraftlog.protocol.wire.snapshots`), each the whole image at metadata offset ``end offset - 1``, written
  atomically (Kafka's ``.checkpoint.part`` renamed when frozen).

Rules (Kafka's):

* a segment rolls at ``metadata.log.segment.bytes`` or once ``metadata.log.segment.ms`` old;
* :meth:`MetadataLog.maybe_clean` (``KafkaMetadataLog.maybeClean``, run every 60 s as Kafka's
  ``RaftMetadataLogCleanerManager`` runs it, never inline with an append: :meth:`MetadataLog.clean_due`;
  ``kraftlog.metadata.log.cleanup.interval.ms`` changes the interval, for stories):
  while the log and its snapshots take more
  than ``metadata.max.retention.bytes``, or the oldest snapshot is older than ``metadata.max.retention.ms``, and
  more than one snapshot exists, the oldest snapshot goes and the log start offset advances to the next one
  (``deleteBeforeSnapshot``): every segment wholly below it is deleted. The latest snapshot always stays;
* a fetch below the log start offset is answered with the latest snapshot's id (``validateOffsetAndEpoch``);
* loading: the newest snapshot that decodes and that the log continues (its end offset at or above the log start
  offset), then the records after it. A snapshot beyond the log end (the log's unflushed tail lost in a crash)
  makes the log start there (Kafka truncates to the latest snapshot). A snapshot that does not decode (a flipped
  byte: its CRC-32C) is skipped for an older one and named in ``load_problems``; none usable while the log no
  longer starts at 0 raises :class:`MetadataLogLoadError` (a node must not come up with a partial image);
* a fetcher installs a snapshot it fetched with :meth:`install_snapshot` (``truncateToLatestSnapshot``).

Sizes are bytes (:func:`~kraftlog.metadata.snapshot.metadata_record_bytes` per record, the snapshot's length),
times ms. OSError from the Disk propagates (the caller decides what a failed write means for its node).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metadata import config as cfg
from ..metadata.snapshot import SnapshotId, metadata_record_bytes
from ..protocol.errors import WireError
from .disk import Disk
from .snapshot_files import LoadedSnapshot, SnapshotFiles, SnapshotRetention

__all__ = ["METADATA_LOG_DIR", "MetadataLogConfig", "MetadataLog", "MetadataLogLoadError", "LoadedSnapshot",
           "RecordsByOffset"]

#: The directory of the metadata log on a node's Disk (Kafka's ``__cluster_metadata-0``).
METADATA_LOG_DIR = "metadata/__cluster_metadata-0"
#: The log start offset a clean advanced to, when it lies inside a segment (Kafka's log-start-offset-checkpoint).
LOG_START_FILE = f"{METADATA_LOG_DIR}/log-start-offset"


class MetadataLogLoadError(Exception):
    """The metadata log cannot be loaded whole (no readable snapshot where the log no longer starts at offset 0,
    or a segment missing between two others): the node must not start on what is left."""


@dataclass(frozen=True, slots=True)
class MetadataLogConfig:
    """Kafka's ``MetadataLogConfig`` and ``SnapshotGenerator`` settings (bytes, ms; -1 retention: no rule)."""

    segment_bytes: int = int(cfg.DEFAULTS["metadata.log.segment.bytes"])
    segment_ms: int = int(cfg.DEFAULTS["metadata.log.segment.ms"])
    retention_bytes: int = int(cfg.DEFAULTS["metadata.max.retention.bytes"])
    retention_ms: int = int(cfg.DEFAULTS["metadata.max.retention.ms"])
    max_bytes_between_snapshots: int = int(cfg.DEFAULTS["metadata.log.max.record.bytes.between.snapshots"])
    max_snapshot_interval_ms: int = int(cfg.DEFAULTS["metadata.log.max.snapshot.interval.ms"])
    #: how often the log is cleaned by retention (Kafka's RaftMetadataLogCleanerManager: a fixed 60 s)
    cleanup_interval_ms: int = int(cfg.DEFAULTS["kraftlog.metadata.log.cleanup.interval.ms"])

    @staticmethod
    def from_configs(static: Mapping[str, str]) -> MetadataLogConfig:
        """From a node's static configs (Kafka's names, :mod:`kraftlog.metadata.config` defaults)."""
        def get(name: str) -> int:
            return int(cfg.lookup(name, static))
        return MetadataLogConfig(
            segment_bytes=get("metadata.log.segment.bytes"), segment_ms=get("metadata.log.segment.ms"),
            retention_bytes=get("metadata.max.retention.bytes"), retention_ms=get("metadata.max.retention.ms"),
            max_bytes_between_snapshots=get("metadata.log.max.record.bytes.between.snapshots"),
            max_snapshot_interval_ms=get("metadata.log.max.snapshot.interval.ms"),
            cleanup_interval_ms=get("kraftlog.metadata.log.cleanup.interval.ms"))


class _Segment:
    __slots__ = ("base", "count", "bytes", "created_ms")

    def __init__(self, base: int, count: int, size: int, created_ms: int) -> None:
        self.base, self.count, self.bytes, self.created_ms = base, count, size, created_ms

    @property
    def path(self) -> str:
        return f"{METADATA_LOG_DIR}/{self.base:020d}.log"


class RecordsByOffset:
    """Metadata records by their absolute offsets, held in memory from ``start_offset`` on: ``len()`` is the end
    offset, ``[offset]`` and ``[start:stop]`` take absolute offsets (IndexError below ``start_offset``). The
    single controller's :class:`MetadataLog` is one; a quorum controller keeps its committed records in one."""

    def __init__(self) -> None:
        self.records: list[object] = []
        self.start_offset = 0

    @property
    def end_offset(self) -> int:
        """The offset the next record gets (Kafka's log end offset)."""
        return self.start_offset + len(self.records)

    def __len__(self) -> int:
        return self.start_offset + len(self.records)

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            start = 0 if key.start is None else key.start
            if start < self.start_offset or key.step is not None:
                raise IndexError(f"records from offset {start}: the log starts at {self.start_offset}")
            stop = None if key.stop is None else max(key.stop - self.start_offset, 0)
            return self.records[start - self.start_offset:stop]
        if key < 0:  # from the end, as a list's
            return self.records[key]
        if key < self.start_offset:
            raise IndexError(f"record at offset {key}: the log starts at {self.start_offset}")
        return self.records[key - self.start_offset]

    def __iter__(self) -> Iterator[object]:
        """The records held, from ``start_offset`` on."""
        return iter(self.records)

    def extend(self, records: Sequence[object]) -> None:
        """Keep ``records`` at the end (in memory only)."""
        self.records.extend(records)


class MetadataLog(SnapshotRetention, RecordsByOffset):
    """A node's metadata log on ``disk`` (module docstring). ``flush``: fsync every append (the controller, whose
    log is the committed metadata; a broker's local copy is not flushed: it is refetched when lost). ``epoch``:
    the leader epoch its snapshots are written in (0: kraftlog's single controller).

    ``records`` holds the records from :attr:`start_offset` to :attr:`end_offset` in memory (what fetches are
    served from); ``snapshots`` the ids of the snapshot files kept, oldest first."""

    def __init__(self, disk: Disk, config: MetadataLogConfig, now_ms: int, *, flush: bool, epoch: int = 0,
                 serves: bool = True) -> None:
        self.disk = disk
        self.config = config
        self.flush = flush
        self.epoch = epoch
        #: False for a copy that serves no fetcher (a broker's): at load the segments wholly below its newest
        #: readable snapshot are not read (a restart replays from that snapshot); their bytes count for the
        #: retention only once read, and the next cleaning past them deletes them
        self.serves = serves
        self._preloaded: LoadedSnapshot | None = None
        self.load_problems: list[str] = []
        #: the snapshot files
        self.files = SnapshotFiles(disk, METADATA_LOG_DIR)
        #: when :meth:`clean_due` cleans next (ms)
        self.next_clean_ms = now_ms + config.cleanup_interval_ms
        self._segments: list[_Segment] = []
        super().__init__()
        self._load(now_ms)

    # ------------------------------------------------------------------ loading
    def _load(self, now_ms: int) -> None:
        names = [path.rpartition("/")[2] for path in self.disk.list(METADATA_LOG_DIR + "/")]
        self.files.scan(names)
        seg_bases = sorted(int(n[:20]) for n in names if n.endswith(".log") and len(n) == 24 and n[:20].isdigit())
        checkpointed = self.disk.read_value(LOG_START_FILE)
        skip_below = -1
        if not self.serves:
            for sid in reversed(self.snapshots):
                try:
                    self._preloaded = self.read_snapshot(sid)
                except WireError:
                    continue  # load() tries it again and names the problem
                skip_below = sid.end_offset
                break
        read_any = False
        for i, base in enumerate(seg_bases):
            seg = _Segment(base, 0, 0, now_ms)
            if not read_any and i + 1 < len(seg_bases) and seg_bases[i + 1] <= skip_below:
                self._segments.append(seg)  # wholly below the snapshot the copy restarts from: not read
                continue
            items = self.disk.read(seg.path)
            if read_any:
                expected = self.start_offset + len(self.records)
                if base != expected:
                    raise MetadataLogLoadError(
                        f"metadata log segment {seg.path} starts at offset {base} where {expected} was expected "
                        f"(a segment is missing or cut short)")
            else:
                self.start_offset = base
                read_any = True
            seg.count = len(items)
            seg.bytes = sum(metadata_record_bytes(r) for r in items)
            self._segments.append(seg)
            self.records.extend(items)
        start = int(checkpointed) if isinstance(checkpointed, str) and checkpointed.strip().isdigit() else 0
        if self.start_offset < start <= self.end_offset:  # the log start a clean advanced into a segment
            self.records = self.records[start - self.start_offset:]
            self.start_offset = start

    @property
    def snapshots(self) -> list[SnapshotId]:
        """The ids of the snapshot files kept, oldest first (a copy)."""
        return list(self.files.ids)

    @property
    def latest_snapshot_id(self) -> SnapshotId | None:
        return self.files.latest

    def size_bytes(self) -> int:
        """The log's segments and its snapshots, in bytes."""
        return sum(s.bytes for s in self._segments) + self.files.total_bytes()

    def read_snapshot(self, snapshot_id: SnapshotId) -> LoadedSnapshot:
        """The snapshot ``snapshot_id`` read whole. Raises :class:`WireError` when it is missing or does not
        decode."""
        return self.files.read(snapshot_id)

    def snapshot_data(self, snapshot_id: SnapshotId) -> bytes | None:
        """The bytes of snapshot ``snapshot_id``'s file, None when it is not there (read once per snapshot)."""
        return self.files.data(snapshot_id)

    def load(self, now_ms: int) -> tuple[LoadedSnapshot | None, int, Sequence[object]]:
        """What a node rebuilds its image from: (the newest usable snapshot or None, the offset of the first record
        to replay after it, those records). Raises :class:`MetadataLogLoadError` (module docstring)."""
        for sid in reversed(self.snapshots):
            if sid.end_offset < self.start_offset:
                break  # older ones are further below the log start: the log does not continue them
            try:
                snap = self._preloaded if self._preloaded is not None and self._preloaded.snapshot_id == sid \
                    else self.read_snapshot(sid)
            except WireError as exc:
                self.load_problems.append(f"snapshot {sid.file_name()} not used: {exc}")
                continue
            self._preloaded = None
            if sid.end_offset > self.end_offset:
                # the log lost its tail (not flushed) but the snapshot was written: the log starts at it
                self.load_problems.append(
                    f"the metadata log ends at offset {self.end_offset}, below snapshot {sid.file_name()}: "
                    f"it restarts at the snapshot")
                self._restart_at(sid.end_offset, now_ms)
            return snap, sid.end_offset, self.records[sid.end_offset - self.start_offset:]
        if self.start_offset > 0:
            raise MetadataLogLoadError(
                f"the metadata log starts at offset {self.start_offset} and no snapshot at or above it can be read"
                + (f" ({'; '.join(self.load_problems)})" if self.load_problems else ""))
        return None, 0, self.records

    # ------------------------------------------------------------------ reading and appending
    def read(self, start: int, max_records: int) -> list[object]:
        """At most ``max_records`` records from offset ``start`` (``start_offset <= start <= end_offset``)."""
        i = start - self.start_offset
        return self.records[i:i + max_records]

    def append(self, records: Sequence[object], now_ms: int) -> None:
        """Append ``records`` as one write to the active segment (rolled first when full or old: Kafka's
        ``maybeRoll``), fsynced when the log flushes. OSError propagates; nothing is kept in memory then."""
        if not records:
            return
        seg = self._segments[-1] if self._segments else None
        if seg is None or (seg.count and (seg.bytes >= self.config.segment_bytes
                                          or now_ms - seg.created_ms >= self.config.segment_ms)):
            seg = _Segment(self.end_offset, 0, 0, now_ms)
            self.disk.create(seg.path, now_ms)
            self._segments.append(seg)
        self.disk.append_many(seg.path, list(records), now_ms)
        if self.flush:
            self.disk.fsync(seg.path, now_ms)
        seg.count += len(records)
        seg.bytes += sum(metadata_record_bytes(r) for r in records)
        self.records.extend(records)

    # ------------------------------------------------------------------ snapshots
    def create_snapshot(self, snapshot_id: SnapshotId, records: Sequence[object], now_ms: int) -> bool:
        """Write the snapshot ``snapshot_id`` holding ``records`` (the image at ``snapshot_id.end_offset - 1``)
        unless it exists. False when it existed already. OSError propagates (nothing changed then: the file is
        written atomically). The log is cleaned later, on its owner's timer (:meth:`clean_due`)."""
        return self.files.write(snapshot_id, records, now_ms)

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes, now_ms: int) -> LoadedSnapshot:
        """A fetcher's snapshot, fetched whole (FetchSnapshot): checked (it decodes: :class:`WireError`
        otherwise, nothing changed), written, and the log restarted at its end offset with every older snapshot
        and every segment deleted (Kafka's ``truncateToLatestSnapshot``). OSError propagates."""
        loaded = self.files.install(snapshot_id, data, now_ms)
        self._restart_at(snapshot_id.end_offset, now_ms)
        self.files.delete_older_than(snapshot_id, now_ms)
        return loaded

    def _restart_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment and start an empty log at ``offset``."""
        for seg in self._segments:
            self.disk.delete(seg.path, now_ms)
        self._segments = []
        self.records = []
        self.start_offset = offset
        self.disk.write_atomic(LOG_START_FILE, f"{offset}\n", now_ms)

    def reset(self, now_ms: int) -> None:
        """Delete every segment and snapshot: the log starts empty at offset 0 (a broker whose copy is not a prefix
        of its controller's log)."""
        self._restart_at(0, now_ms)
        for sid in list(self.snapshots):
            self.files.delete(sid, now_ms)

    def _log_bounds(self) -> tuple[int, int]:
        return self.start_offset, self.end_offset

    def _advance_start(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        new_start = snapshot_id.end_offset
        self.disk.write_atomic(LOG_START_FILE, f"{new_start}\n", now_ms)
        while len(self._segments) > 1 and self._segments[1].base <= new_start:
            seg = self._segments.pop(0)
            self.disk.delete(seg.path, now_ms)
        self.records = self.records[new_start - self.start_offset:]
        self.start_offset = new_start
