"""The snapshot files of one metadata log directory (Kafka's ``KafkaMetadataLog.snapshots`` with its
``FileRawSnapshotReader``/``Writer``): shared by the single controller's and the brokers'
:class:`~kraftlog.storage.metadata_log.MetadataLog` and the quorum's :class:`~kraftlog.raft.log.RaftLog`.

A snapshot is one value file ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` in Kafka's layout
(:mod:`kraftlog.protocol.wire.snapshots`), written atomically (Kafka's ``.checkpoint.part`` renamed when frozen).
The store keeps their ids (oldest first), their sizes (bytes), the append time (ms) of the last log record each
contains (what ``metadata.max.retention.ms`` measures), and the bytes of the latest one read (a fetcher reads a
snapshot chunk by chunk: the file is read once).

OSError from the Disk propagates; a snapshot that does not decode raises
:class:`~kraftlog.protocol.errors.WireError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..metadata.snapshot import SnapshotId
from ..protocol.errors import WireError
from ..protocol.wire.snapshots import decode_snapshot_with_control, encode_snapshot
from .disk import Disk

__all__ = ["SnapshotFiles", "LoadedSnapshot", "SnapshotRetention"]


@dataclass(frozen=True, slots=True)
class LoadedSnapshot:
    """A snapshot read whole: its id, its metadata records, the append time (ms) of the last log record it
    contains, and its KRaft control records (the KRaftVersionRecord and VotersRecord of a kraft.version 1 quorum)."""

    snapshot_id: SnapshotId
    records: list[object]
    last_contained_log_timestamp_ms: int
    control: tuple[object, ...] = ()


class SnapshotFiles:
    """The snapshots under ``directory`` of ``disk`` (module docstring); :attr:`ids` are oldest first."""

    def __init__(self, disk: Disk, directory: str) -> None:
        self.disk = disk
        self.directory = directory
        self.ids: list[SnapshotId] = []
        self._bytes: dict[SnapshotId, int] = {}
        self._time: dict[SnapshotId, int] = {}
        self._cached: tuple[SnapshotId, bytes] | None = None

    def scan(self, names: Sequence[str]) -> None:
        """Take the ids of the ``.checkpoint`` files among the file ``names`` of the directory (a ``.part`` file,
        never renamed, is not a snapshot)."""
        self.ids = sorted({sid for n in names if (sid := SnapshotId.from_file_name(n)) is not None})

    @property
    def latest(self) -> SnapshotId | None:
        return self.ids[-1] if self.ids else None

    @property
    def earliest(self) -> SnapshotId | None:
        return self.ids[0] if self.ids else None

    def path(self, sid: SnapshotId) -> str:
        return f"{self.directory}/{sid.file_name()}"

    def data(self, sid: SnapshotId) -> bytes | None:
        """The bytes of snapshot ``sid``'s file, None when it is not there (the latest read are kept)."""
        cached = self._cached
        if cached is not None and cached[0] == sid:
            return cached[1]
        value = self.disk.read_value(self.path(sid))
        data = value.encode() if isinstance(value, str) else value if isinstance(value, bytes) else None
        self._cached = (sid, data) if data is not None else None
        return data

    def read(self, sid: SnapshotId) -> LoadedSnapshot:
        """Snapshot ``sid`` read whole. Raises :class:`WireError` when it is missing or does not decode."""
        data = self.data(sid)
        if data is None:
            raise WireError(f"snapshot {sid.file_name()} is missing")
        control, records, ts = decode_snapshot_with_control(data)
        self._time.setdefault(sid, ts)
        return LoadedSnapshot(sid, records, ts, tuple(control))

    def write(self, sid: SnapshotId, records: Sequence[object], now_ms: int, control: Sequence[object] = ()) -> bool:
        """Write snapshot ``sid`` of ``records`` (and the KRaft ``control`` records) unless it exists: False then.
        OSError propagates (nothing changed: the file is written atomically)."""
        if sid in self.ids:
            return False
        data = encode_snapshot(records, sid.epoch, now_ms, control)
        self.disk.write_atomic(self.path(sid), data, now_ms)
        self._add(sid, len(data), now_ms)
        return True

    def install(self, sid: SnapshotId, data: bytes, now_ms: int) -> LoadedSnapshot:
        """A snapshot fetched whole (FetchSnapshot): checked (:class:`WireError` when it does not decode; nothing
        changed then) and written. Its older snapshots stay (the caller deletes them). OSError propagates."""
        control, records, ts = decode_snapshot_with_control(data)
        self.disk.write_atomic(self.path(sid), data, now_ms)
        if sid not in self.ids:
            self._add(sid, len(data), ts)
        self._time[sid] = ts
        return LoadedSnapshot(sid, records, ts, tuple(control))

    def _add(self, sid: SnapshotId, size: int, time_ms: int) -> None:
        self.ids.append(sid)
        self.ids.sort()
        self._bytes[sid] = size
        self._time[sid] = time_ms

    def size(self, sid: SnapshotId) -> int:
        """Snapshot ``sid``'s bytes (0 when its file is gone)."""
        size = self._bytes.get(sid)
        if size is None:
            data = self.data(sid)
            size = self._bytes[sid] = len(data) if data is not None else 0
        return size

    def total_bytes(self) -> int:
        return sum(self.size(s) for s in self.ids)

    def time_ms(self, sid: SnapshotId, default: int) -> int:
        """The append time of the last log record snapshot ``sid`` contains (ms), ``default`` when unknown."""
        return self._time.get(sid, default)

    def _contained_time_ms(self, sid: SnapshotId, default: int) -> int:
        """:meth:`time_ms`, read from the snapshot's header when not known yet (a snapshot the load did not read:
        after a restart the oldest one's age still counts); ``default`` when it cannot be read."""
        if sid not in self._time:
            try:
                self.read(sid)
            except WireError:
                return default
        return self._time.get(sid, default)

    def delete(self, sid: SnapshotId, now_ms: int) -> None:
        if self._cached is not None and self._cached[0] == sid:
            self._cached = None
        self.disk.delete(self.path(sid), now_ms)
        self.ids.remove(sid)
        self._bytes.pop(sid, None)
        self._time.pop(sid, None)

    def delete_older_than(self, sid: SnapshotId, now_ms: int) -> None:
        """Delete every snapshot older than ``sid`` (Kafka's ``forgetSnapshotsBefore`` then ``removeSnapshots``)."""
        for old in [s for s in self.ids if s < sid]:
            self.delete(old, now_ms)

    def oldest_over_retention(self, retention_bytes: int, retention_ms: int, total_bytes: int, now_ms: int) -> bool:
        """Kafka's ``KafkaMetadataLog.maybeClean`` test: with two snapshots or more, the log and its snapshots take
        more than ``retention_bytes`` (``total_bytes``), or the oldest snapshot is older than ``retention_ms``
        (-1: no such rule)."""
        if len(self.ids) < 2:
            return False
        over_size = retention_bytes >= 0 and total_bytes > retention_bytes
        too_old = retention_ms >= 0 and now_ms - self._contained_time_ms(self.ids[0], now_ms) > retention_ms
        return over_size or too_old


class SnapshotRetention:
    """Kafka's ``KafkaMetadataLog`` cleaning, shared by the logs with snapshots (``MetadataLog``, ``RaftLog``): the
    cleaner's timer (:meth:`clean_due`), ``maybeClean`` and ``deleteBeforeSnapshot``. The log gives its snapshot
    files, its retention settings (``config``: ``retention_bytes``, ``retention_ms``, ``cleanup_interval_ms``), its
    bounds and size (:meth:`_log_bounds`, :meth:`size_bytes`) and moves its own start (:meth:`_advance_start`)."""

    files: SnapshotFiles
    config: Any
    #: when :meth:`clean_due` cleans next (ms)
    next_clean_ms: int

    def size_bytes(self) -> int:
        """The log's segments and its snapshots, in bytes."""
        raise NotImplementedError

    def _log_bounds(self) -> tuple[int, int]:
        """(log start offset, log end offset)."""
        raise NotImplementedError

    def _advance_start(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        """Move the log start up to ``snapshot_id``'s end offset (checkpointed) and delete the segments wholly below
        it."""
        raise NotImplementedError

    def clean_due(self, now_ms: int) -> bool:
        """Kafka's ``RaftMetadataLogCleanerManager``: :meth:`maybe_clean` once every ``cleanup_interval_ms`` (the
        first time one interval after the log was opened). True when it ran and deleted something. OSError
        propagates (the next run tries again)."""
        if now_ms < self.next_clean_ms:
            return False
        self.next_clean_ms = now_ms + self.config.cleanup_interval_ms
        return self.maybe_clean(now_ms)

    def maybe_clean(self, now_ms: int) -> bool:
        """Kafka's ``maybeClean``: while the log and its snapshots take more than ``retention_bytes``, or the oldest
        snapshot is older than ``retention_ms``, and two snapshots or more exist, the log start advances to the
        second oldest (:meth:`delete_before_snapshot`). True when a snapshot or a segment was deleted."""
        cleaned = False
        config = self.config
        while self.files.oldest_over_retention(config.retention_bytes, config.retention_ms, self.size_bytes(), now_ms):
            if not self.delete_before_snapshot(self.files.ids[1], now_ms):
                break
            cleaned = True
        return cleaned

    def delete_before_snapshot(self, snapshot_id: SnapshotId, now_ms: int) -> bool:
        """Kafka's ``deleteBeforeSnapshot``: when ``snapshot_id`` is kept, above the log start offset and at or
        below the log end, the log start offset advances to it, the segments wholly below it and the older
        snapshots are deleted. False when nothing changed."""
        start, end = self._log_bounds()
        if snapshot_id not in self.files.ids or not start < snapshot_id.end_offset <= end:
            return False
        self._advance_start(snapshot_id, now_ms)
        self.files.delete_older_than(snapshot_id, now_ms)
        return True
