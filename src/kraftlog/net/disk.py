"""The file-backed :class:`~kraftlog.storage.disk.Disk` of a real node process: :class:`FileDisk`.

:class:`FileDisk` implements the storage layer's ``Disk`` protocol over a root directory, with the
semantics :class:`~kraftlog.storage.disk.SimDisk` simulates, so a broker or controller process keeps
its logs and checkpoints in files and recovers them after a restart, a SIGKILL or a machine crash the
same way it recovers from a SimDisk in the simulator. Log files (paths ending in ``.log``) are Kafka's
``.log`` segments, v2 record batches (:mod:`kraftlog.net.segment`: framing, recovery scan); every other
path is a value file, replaced atomically (Kafka's checkpoint files).

Paths, file kinds, durability (what ``append``, ``fsync``, ``truncate``, ``write_atomic`` promise and
what each survives), the durable length, the recovery of a torn tail, what stays in memory (the offset
index, the tail cache) and the root's lock: docs/DESIGN.md, "The file-backed disk". The chaos shadow
(crash emulation) is a subclass, :class:`kraftlog.net.shadow.ShadowFileDisk`, over the hooks
:meth:`FileDisk._creating` .. :meth:`FileDisk._dir_renamed`, which do nothing here.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence

from crc32c import crc32c

from ..protocol.records import RecordBatch
from ..storage.disk import LoadDrop, disk_full_error
from .files import O_CLOEXEC, TMP_SUFFIX, atomic_write, dirs_to_sync, fsync_dir, make_dirs, write_all
from .segment import (
    BATCHES,
    METADATA,
    RAFT,
    SCAN_CHUNK,
    BatchHeader,
    count_frames,
    encode_item,
    file_checksum,
    metadata_base_offset,
    read_headers,
    recover_log,
)

__all__ = [
    "FileDisk",
    "DirectoryLockedError",
    "SHADOW_DIR",
    "LOG_SUFFIX",
    "TMP_SUFFIX",
    "LOCK_FILE",
    "METADATA_PREFIX",
    "TAIL_CACHE_FILE_BYTES",
    "TAIL_CACHE_TOTAL_BYTES",
]

#: A path ending with this suffix is a log file (a list of items); any other is a value file.
LOG_SUFFIX = ".log"
#: The lock file at the root (Kafka's per-log-dir ``.lock``); reserved, never listed.
LOCK_FILE = ".lock"
#: The directory at the root that holds a :class:`~kraftlog.net.shadow.ShadowFileDisk`'s shadow; reserved,
#: never listed, whatever the FileDisk.
SHADOW_DIR = ".kraftlog-shadow"
#: Log files under this prefix hold metadata records (the controller's ``__cluster_metadata`` log).
METADATA_PREFIX = "metadata/"

_OPEN_LOG = os.O_RDWR | os.O_APPEND | O_CLOEXEC
#: The tail cache of a partition segment (:class:`_LogFile`): at most this many bytes of its last
#: batches per file (the last batch is kept whatever its size), and in all the files of a FileDisk.
TAIL_CACHE_FILE_BYTES = 4 << 20
TAIL_CACHE_TOTAL_BYTES = 32 << 20


class DirectoryLockedError(RuntimeError):
    """Another process, or another open FileDisk, holds the root's ``.lock`` (Kafka: "Failed to
    acquire lock on file .lock ... A Kafka instance in another process or thread is using this
    directory")."""



# ------------------------------------------------------------------------------------ log files
class _LogFile:
    """One open log file: its descriptor and in-memory index.

    ``starts[i]`` is the byte position of item ``i`` (the offset index's position half: PartitionLog
    keeps offset -> item, this keeps item -> byte); ``items`` the decoded metadata records of a metadata
    log, None for a partition segment (its batches stay on disk and are read back by byte range);
    ``size`` the file length in bytes; ``durable`` the length the last fsync covered (lowered by
    truncation); ``sync_dirs`` the directories to fsync with the next fsync (the file's creation is not
    durable before).

    ``tail`` (partition segments): the batches this process appended last, as the encoded RecordBatch
    objects a read of them returns, for the items ``count() - len(tail)`` .. ``count() - 1``;
    ``tail_bytes`` their size. Followers fetch what the leader has just appended: served from here, the
    leader's fetch responses send the bytes it wrote, with no ``pread`` and no copy."""

    __slots__ = ("fd", "kind", "items", "starts", "size", "durable", "sync_dirs", "tail", "tail_bytes", "crc",
                 "headers", "base")

    def __init__(self, fd: int, kind: int, items: list[object] | None, starts: list[int], size: int,
                 durable: int, sync_dirs: list[str]) -> None:
        #: the CRC-32C of the file's bytes, kept up to date by appends (None: not known, read when asked)
        self.crc: int | None = 0 if size == 0 else None
        #: the batch headers its load read (a partition segment), until :meth:`FileDisk.scan_headers` takes them
        self.headers: list[BatchHeader] | None = None
        #: a metadata log file's base offset (from its name: its first batch's offset), 0 for a segment
        self.base = 0
        self.fd = fd
        self.kind = kind
        self.items = items
        self.starts = starts
        self.size = size
        self.durable = durable
        self.sync_dirs = sync_dirs
        self.tail: list[RecordBatch] = []
        self.tail_bytes = 0

    def count(self) -> int:
        return len(self.starts)



class FileDisk:
    """The :class:`~kraftlog.storage.disk.Disk` of a real process: files under ``root``.

    ``FileDisk(root, log=None, metadata_prefix="metadata/", raft_metadata=False)``: ``root`` is created if missing
    and locked (``<root>/.lock``, :class:`DirectoryLockedError` if held); ``log`` receives one line (str) per
    recovery event (a torn tail truncated at load); log files under ``metadata_prefix`` hold metadata records
    (``raft_metadata``: a KRaft quorum member's Raft batches, each one v2 batch at its own offset in its own
    leader epoch, control batches flagged, as Kafka's ``__cluster_metadata-0``), other log files RecordBatch items
    (formats, path rules and durability: docs/DESIGN.md, "The file-backed disk"). The shadow directory
    (:data:`SHADOW_DIR`) is never read or written here (chaos mode's :class:`~kraftlog.net.shadow.ShadowFileDisk`
    keeps it). Times (``now_ms``) are ints in ms; only a
    metadata record's batch timestamp uses them. Sizes are bytes. OS errors (ENOSPC, EIO, ...) propagate
    as OSError (a failed append leaves the file as it was, best effort): the broker takes its log
    directory offline (DESIGN.md, "Faults a real deployment meets"); :meth:`set_full` injects ENOSPC.

    Beyond ``Disk``: :meth:`set_full`, :meth:`durable_length`, :meth:`unflushed_bytes`, :meth:`size_bytes`,
    :meth:`close` (also a context manager).
    """

    __slots__ = ("root", "metadata_prefix", "raft_metadata", "_log", "_logs", "_lock_fd", "_tail_bytes",
                 "_drops", "_full_until")

    def __init__(self, root: str | os.PathLike[str], log: Callable[[str], None] | None = None,
                 metadata_prefix: str = METADATA_PREFIX, raft_metadata: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.metadata_prefix = metadata_prefix
        #: the metadata log files are a KRaft quorum member's (Raft batches), not metadata records
        self.raft_metadata = raft_metadata
        self._log = log
        self._logs: dict[str, _LogFile] = {}
        self._tail_bytes = 0  # the tail caches' bytes, all files
        #: what the recovery of each log file dropped at its first access, until :meth:`recover` takes it
        self._drops: dict[str, list[LoadDrop]] = {}
        #: monotonic time until which every write fails with ENOSPC (:meth:`set_full`); None: never
        self._full_until: float | None = None
        created = make_dirs(self.root)
        for d in reversed(created):
            fsync_dir(os.path.dirname(d))
        fd = os.open(os.path.join(self.root, LOCK_FILE), os.O_RDWR | os.O_CREAT | O_CLOEXEC,
                     0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirectoryLockedError(
                f"failed to acquire lock on {os.path.join(self.root, LOCK_FILE)}: another process or FileDisk "
                "is using this directory") from None
        self._lock_fd: int | None = fd

    # ------------------------------------------------------------------ injected faults
    def set_full(self, full: bool, for_s: float | None = None) -> None:
        """Make every later write of a log file (``append``, ``append_many``) and of a value file
        (``write_atomic``) fail with ``OSError(ENOSPC)``, as on a file system out of space, without filling
        one: for ``for_s`` seconds (monotonic clock), or until ``set_full(False)`` when ``for_s`` is None.
        Truncations, deletions, fsyncs and the chaos shadow keep working (they need no new blocks). The
        fault injector's way (``kraftlog chaos``, ``scenario run --real``) to a full disk without root;
        a real size-limited file system gives the same errors."""
        if not full:
            self._full_until = None
        else:
            self._full_until = float("inf") if for_s is None else time.monotonic() + max(0.0, for_s)

    @property
    def full(self) -> bool:
        """Whether writes fail with an injected ENOSPC now (:meth:`set_full`)."""
        until = self._full_until
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        self._full_until = None
        return False

    def _check_space(self, path: str) -> None:
        if self._full_until is not None and self.full:
            raise disk_full_error(path)

    def recover(self, path: str, now_ms: int, verify: bool = True) -> list[LoadDrop]:
        """Load and recover the log file ``path`` (if not yet loaded: docs/DESIGN.md's recovery; without
        ``verify`` the batches are framed by their lengths and not CRC-checked, Kafka's load of a segment
        below the recovery point) and return what its recovery truncated, once
        (:class:`~kraftlog.storage.disk.LoadDrop`, its bytes and the number of batch-shaped frames in them);
        ``[]`` when nothing, when missing, or when already returned."""
        self._open(path, create=False, verify=verify, keep_headers=True)
        return self._drops.pop(path, [])

    # ------------------------------------------------------------------ paths
    def _full(self, path: str) -> str:
        """The OS path of a relative Disk path; ValueError for one that could escape the root or is
        reserved."""
        if not isinstance(path, str) or not path:
            raise ValueError(f"a disk path is a non-empty str, got {path!r}")
        if path.startswith("/") or "\x00" in path:
            raise ValueError(f"disk paths are relative to the root: {path!r}")
        parts = path.split("/")
        for p in parts:
            if p in ("", ".", ".."):
                raise ValueError(f"disk path {path!r} has an empty, '.' or '..' component")
        if path.endswith(TMP_SUFFIX) or path == LOCK_FILE or parts[0] == SHADOW_DIR:
            raise ValueError(f"disk path {path!r} is reserved (atomic-write temporary, lock file or shadow)")
        if self._lock_fd is None:
            raise RuntimeError(f"FileDisk({self.root!r}) is closed")
        return os.path.join(self.root, *parts)

    def _log_full(self, path: str) -> str:
        full = self._full(path)
        if not path.endswith(LOG_SUFFIX):
            raise ValueError(f"{path!r} is not a log file (log files end in {LOG_SUFFIX!r}); "
                             "value files use write_atomic/read_value")
        return full

    def _value_full(self, path: str) -> str:
        full = self._full(path)
        if path.endswith(LOG_SUFFIX):
            raise ValueError(f"{path!r} is a log file (it ends in {LOG_SUFFIX!r}), not a value file")
        return full

    def _kind(self, path: str) -> int:
        if path.startswith(self.metadata_prefix):
            return RAFT if self.raft_metadata else METADATA
        return BATCHES

    # ------------------------------------------------------------------ loading
    def _open(self, path: str, create: bool, verify: bool = True, keep_headers: bool = False) -> _LogFile | None:
        """The log file ``path``, loaded (and recovered) on first use; created empty when missing and
        ``create``; None when missing and not ``create``."""
        f = self._logs.get(path)
        if f is not None:
            return f
        full = self._log_full(path)
        kind = self._kind(path)
        try:
            fd = os.open(full, _OPEN_LOG)
        except FileNotFoundError:
            if not create:
                return None
            parent = os.path.dirname(full)
            created = make_dirs(parent)
            self._creating(path)
            fd = os.open(full, _OPEN_LOG | os.O_CREAT | os.O_EXCL, 0o644)
            f = self._logs[path] = _LogFile(fd, kind, [] if kind != BATCHES else None, [], 0, 0,
                                            dirs_to_sync(parent, created))
            f.base = metadata_base_offset(path) if kind == METADATA else 0
            return f
        try:
            total = os.fstat(fd).st_size
            self._loaded(path, total)
            headers: list[BatchHeader] | None = [] if kind == BATCHES and keep_headers else None
            items, starts, valid, reason = recover_log(fd, total, kind, path, verify_crc=verify or kind != BATCHES,
                                                       headers=headers)
            if valid < total:
                dropped = count_frames(fd, valid, total)
                self._truncating(path, fd, valid)
                os.ftruncate(fd, valid)
                self._drops.setdefault(path, []).append(
                    LoadDrop(path, valid, total, dropped, reason or "invalid bytes"))
                if self._log is not None:
                    self._log(f"{path}: recovered {len(starts)} items ({valid} bytes); truncated "
                              f"{total - valid} invalid bytes at byte {valid} ({dropped} batch(es) dropped: "
                              f"{reason})")
        except BaseException:
            os.close(fd)
            raise
        f = self._logs[path] = _LogFile(fd, kind, items, starts, valid, valid, [])
        f.headers = headers
        f.base = metadata_base_offset(path) if kind == METADATA else 0
        return f

    # ------------------------------------------------------------------ hooks (ShadowFileDisk's)
    def _creating(self, path: str) -> None:
        """Called before the log file ``path`` is created (it does not exist yet). Nothing here."""

    def _loaded(self, path: str, total: int) -> None:
        """Called when the existing log file ``path`` of ``total`` bytes is opened, before its recovery
        scan. Nothing here."""

    def _truncating(self, path: str, fd: int, size: int) -> None:
        """Called before the log file ``path`` (open as ``fd``) is cut to ``size`` bytes, by
        :meth:`truncate` or by the recovery of a torn tail. Nothing here."""

    def _fsynced(self, path: str, size: int) -> None:
        """Called after fsync(2) of the log file ``path`` of ``size`` bytes returned. Nothing here."""

    def _deleted(self, path: str) -> None:
        """Called after :meth:`delete` removed ``path`` (or found it missing). Nothing here."""

    def _file_renamed(self, src: str, dst: str, size: int) -> None:
        """Called after :meth:`rename` renamed the fsynced log file ``src`` of ``size`` bytes to ``dst``.
        Nothing here."""

    def _dir_renamed(self, src: str, dst: str) -> None:
        """Called after :meth:`rename_dir` renamed ``src`` to ``dst``, before the directories are fsynced.
        Nothing here."""

    # ------------------------------------------------------------------ log files
    def create(self, path: str, now_ms: int) -> None:
        """Create the log file ``path`` empty (with its directories) if missing; its creation is durable with
        the next :meth:`fsync` of it. ValueError for a path that is not a log file; OSError (ENOSPC while
        :meth:`set_full`)."""
        if path in self._logs:
            return
        self._log_full(path)
        self._check_space(path)
        self._open(path, create=True)

    def append(self, path: str, item: object, now_ms: int) -> None:
        """Append ``item`` to the log file ``path`` (created, with its directories, if missing): one
        write(2) of its v2 batch bytes, in the page cache until :meth:`fsync`.

        ``item`` must be a RecordBatch for a partition segment, a metadata record under the metadata
        prefix (TypeError otherwise, before anything is written or created). ValueError for a path that
        is not a log file. On an OSError mid-write the file is cut back to its previous length (best
        effort) and the error re-raised."""
        self.append_many(path, (item,), now_ms)

    def append_many(self, path: str, items: Sequence[object], now_ms: int) -> None:
        """Append ``items`` to the log file ``path`` with ONE write(2) of their concatenated batches, so a
        process killed around it (SIGKILL) leaves all of them or none: the controller appends the records
        of one event this way, as KRaft writes them in one batch. (A power loss may still keep a prefix
        of whole batches; each batch carries its own CRC.) Errors as :meth:`append`."""
        if not items:
            return
        self._check_space(path)
        f = self._logs.get(path)
        if f is None:
            kind = self._kind(path)
            self._log_full(path)
            for item in items:
                encode_item(kind, item, 0, now_ms)
            f = self._open(path, create=True)
            assert f is not None  # created
        chunks = [encode_item(f.kind, item, f.base + f.count() + i, now_ms) for i, item in enumerate(items)]
        size = f.size
        joined = b"".join(chunks)
        try:
            write_all(f.fd, joined)
        except BaseException:
            try:
                os.ftruncate(f.fd, size)
            except OSError:
                pass
            raise
        for item, chunk in zip(items, chunks, strict=True):
            if f.items is not None:
                f.items.append(item)
            f.starts.append(size)
            size += len(chunk)
        f.size = size
        if f.crc is not None:
            f.crc = crc32c(joined, f.crc)
        if f.items is None:
            self._cache_tail(f, chunks)

    def _cache_tail(self, f: _LogFile, chunks: list[bytes]) -> None:
        """Keep the batches just appended to a segment in its tail cache, within the byte bounds."""
        tail = f.tail
        added = 0
        for chunk in chunks:
            tail.append(RecordBatch.from_bytes(chunk, verify_crc=False))
            added += len(chunk)
        f.tail_bytes += added
        self._tail_bytes += added
        if f.tail_bytes > TAIL_CACHE_FILE_BYTES and len(tail) > 1:
            drop = 0
            freed = 0
            while f.tail_bytes - freed > TAIL_CACHE_FILE_BYTES and drop < len(tail) - 1:
                freed += tail[drop].size_bytes
                drop += 1
            del tail[:drop]
            f.tail_bytes -= freed
            self._tail_bytes -= freed
        if self._tail_bytes > TAIL_CACHE_TOTAL_BYTES:
            for other in self._logs.values():  # other files' caches go first, oldest opened first
                if other is not f and other.tail:
                    self._drop_tail(other)
                    if self._tail_bytes <= TAIL_CACHE_TOTAL_BYTES:
                        break

    def _drop_tail(self, f: _LogFile) -> None:
        self._tail_bytes -= f.tail_bytes
        f.tail = []
        f.tail_bytes = 0

    def truncate(self, path: str, length: int, now_ms: int) -> None:
        """Keep the first ``length`` items of ``path``: ftruncate(2) to the byte position of item
        ``length`` (Kafka's ``LogSegment.truncateTo``); not durable until :meth:`fsync`. No-op on a missing
        file or when ``length`` >= its item count; ValueError for a negative ``length``."""
        if length < 0:
            raise ValueError(f"negative truncate length {length}")
        f = self._open(path, create=False)
        if f is None or length >= f.count():
            return
        size = f.starts[length]
        self._truncating(path, f.fd, size)
        if f.tail:
            self._drop_tail(f)
        os.ftruncate(f.fd, size)
        if f.items is not None:
            del f.items[length:]
        del f.starts[length:]
        f.size = size
        f.crc = None
        if f.durable > size:
            f.durable = size

    def read_range(self, path: str, start: int, stop: int) -> Sequence[object]:
        """Items ``start`` .. ``stop - 1`` of the log file ``path`` (fewer past its end, ``[]`` when missing).

        For a partition segment: ONE ``pread(2)`` of the byte range the offset index gives for those
        items, split into encoded RecordBatch objects without decoding their records or re-checking
        their CRC (checked when the file was loaded or written); items in the tail cache (docs/DESIGN.md,
        "What stays in memory") are returned from it, without reading. For the metadata log: a slice of its
        records. The first access loads and recovers the file (docs/DESIGN.md, "Recovery")."""
        f = self._open(path, create=False)
        if f is None:
            return []
        if f.items is not None:
            return f.items[start:stop]
        return self._batches_between(f, start, min(stop, f.count()))

    @staticmethod
    def _batches_between(f: _LogFile, start: int, stop: int) -> list[RecordBatch]:
        if start >= stop:
            return []
        tail = f.tail
        if tail:
            first_cached = len(f.starts) - len(tail)
            if start >= first_cached:
                return tail[start - first_cached:stop - first_cached]
        starts = f.starts
        first = starts[start]
        end = starts[stop] if stop < len(starts) else f.size
        data = os.pread(f.fd, end - first, first)
        if len(data) != end - first:
            raise OSError(f"short read: {len(data)} of {end - first} bytes at {first}")
        out = []
        for i in range(start, stop):
            b_end = (starts[i + 1] if i + 1 < stop else end) - first
            out.append(RecordBatch.from_bytes(data[starts[i] - first:b_end], verify_crc=False))
        return out

    def scan(self, path: str) -> Iterator[object]:
        """Iterate over the items of the log file ``path`` in order, reading a partition segment in
        chunks of about 1 MiB (bounded memory); empty when missing. Do not change the file meanwhile."""
        f = self._open(path, create=False)
        if f is None:
            return iter(())
        if f.items is not None:
            return iter(f.items)
        return self._scan_segment(f)

    def scan_headers(self, path: str) -> Iterator[object]:
        """The header fields of each batch of the partition segment ``path``
        (:class:`~kraftlog.net.segment.BatchHeader`: 61 bytes read per batch, never the records); a metadata
        log's items as :meth:`scan`. Empty when missing."""
        f = self._open(path, create=False)
        if f is None:
            return iter(())
        if f.items is not None:
            return iter(f.items)
        headers, f.headers = f.headers, None
        if headers is not None and len(headers) == len(f.starts):
            return iter(headers)  # read by the load's recovery a moment ago
        return iter(read_headers(f.fd, f.starts))

    def checksum(self, path: str) -> int:
        """The CRC-32C of the log file ``path``'s bytes (read in 1 MiB chunks); 0 when missing. A file not yet
        loaded is read as it lies, without its load's recovery (a log load checks a segment this way before it
        decides how to recover it)."""
        f = self._logs.get(path)
        if f is not None:
            if f.crc is None:
                f.crc = file_checksum(f.fd, f.size)
            return f.crc
        full = self._log_full(path)
        try:
            fd = os.open(full, os.O_RDONLY | O_CLOEXEC)
        except FileNotFoundError:
            return 0
        try:
            return file_checksum(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)

    def _scan_segment(self, f: _LogFile) -> Iterator[object]:
        starts = f.starts
        n = len(starts)
        i = 0
        while i < n:
            j = i + 1
            while j < n and starts[j] - starts[i] < SCAN_CHUNK:
                j += 1
            yield from self._batches_between(f, i, j)
            i = j

    def read(self, path: str) -> list[object]:
        """Every item of the log file ``path`` as a list, ``[]`` when missing: the metadata log's live
        list (do not mutate; O(1) after the first call), or a partition segment read whole (for tools
        and tests; a PartitionLog uses :meth:`read_range` and :meth:`scan`)."""
        f = self._open(path, create=False)
        if f is None:
            return []
        return f.items if f.items is not None else list(self._scan_segment(f))

    def fsync(self, path: str, now_ms: int) -> None:
        """fsync(2) the log file ``path``, and its directory (plus any directory created for it) the first
        time after its creation: every earlier append/truncate becomes durable; :meth:`durable_length`
        becomes its length. No-op for a missing file or a value file (already durable)."""
        f = self._logs.get(path)
        if f is None:
            if not path.endswith(LOG_SUFFIX):
                self._full(path)
                return
            f = self._open(path, create=False)
            if f is None:
                return
        os.fsync(f.fd)
        if f.sync_dirs:
            for d in f.sync_dirs:
                fsync_dir(d)
            f.sync_dirs = []
        f.durable = f.size
        self._fsynced(path, f.size)

    def durable_length(self, path: str) -> int:
        """Bytes of the log file ``path`` known durable: what the last fsync covered, lowered by any later
        truncation below it; the recovered length for a file not written since load. A value file's
        length (durable at once); 0 when missing."""
        if path.endswith(LOG_SUFFIX):
            f = self._open(path, create=False)
            return f.durable if f is not None else 0
        return self._value_size(path)

    def unflushed_bytes(self, path: str) -> int:
        """Bytes of ``path`` beyond :meth:`durable_length` (appended since the last fsync); 0 for a value or
        missing file. A truncation since the last fsync is not counted (it lowers both lengths)."""
        if not path.endswith(LOG_SUFFIX):
            self._full(path)
            return 0
        f = self._open(path, create=False)
        return f.size - f.durable if f is not None else 0

    def size_bytes(self, path: str) -> int:
        """The length in bytes of ``path`` as the OS shows it (page cache included); 0 when missing."""
        if path.endswith(LOG_SUFFIX):
            f = self._open(path, create=False)
            return f.size if f is not None else 0
        return self._value_size(path)

    def _value_size(self, path: str) -> int:
        try:
            return os.stat(self._full(path)).st_size
        except FileNotFoundError:
            return 0

    # ------------------------------------------------------------------ value files
    def write_atomic(self, path: str, value: object, now_ms: int) -> None:
        """Replace the value file ``path`` durably at once: ``<path>.tmp`` written and fsynced, renamed
        over ``path``, directory fsynced (Kafka's checkpoint files). ``value``: str (written as UTF-8) or
        bytes; TypeError otherwise. ValueError for a log-file path."""
        full = self._value_full(path)
        self._check_space(path)
        if isinstance(value, str):
            data = value.encode()
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            raise TypeError(f"a value file holds str or bytes, not {type(value).__name__}")
        atomic_write(full, data)

    def read_value(self, path: str) -> str | bytes | None:
        """The value of ``path`` as :meth:`write_atomic` wrote it: str when the file is valid UTF-8, else
        bytes; None when missing. ValueError for a log-file path."""
        full = self._value_full(path)
        try:
            with open(full, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return None
        try:
            return data.decode()
        except UnicodeDecodeError:
            return data

    # ------------------------------------------------------------------ any file
    def delete(self, path: str, now_ms: int) -> None:
        """Remove ``path`` (log or value file) durably at once: unlink(2), then rmdir(2) of its directory
        when that left it empty (not the root: Kafka deletes a deleted partition's directory), then fsync(2)
        of the directory that changed. No-op if missing."""
        full = self._full(path)
        f = self._logs.pop(path, None)
        if f is not None:
            self._drop_tail(f)
            os.close(f.fd)
        try:
            os.unlink(full)
        except FileNotFoundError:
            self._deleted(path)
            return
        parent = os.path.dirname(full)
        if parent != self.root:
            try:
                os.rmdir(parent)  # the last file of a partition directory: the directory goes too
            except OSError:
                pass  # not empty (or gone): keep it
            else:
                parent = os.path.dirname(parent)
        fsync_dir(parent)
        self._deleted(path)

    def rename(self, src: str, dst: str, now_ms: int) -> None:
        """Rename the log file ``src`` to the log file ``dst`` durably at once: fsync(2) of ``src``, ``rename(2)``
        (a file at ``dst`` is replaced, its descriptor closed), fsync(2) of the directory (Kafka's
        ``Utils.atomicMoveWithFallback`` of a cleaned segment). ValueError for a path that is not a log file;
        FileNotFoundError when ``src`` is missing; OSError."""
        self._log_full(dst)
        self.fsync(src, now_ms)
        f = self._logs.pop(src, None)
        if f is None:
            raise FileNotFoundError(src)
        old = self._logs.pop(dst, None)
        if old is not None:
            self._drop_tail(old)
            os.close(old.fd)
        dst_full = self._log_full(dst)
        os.replace(self._log_full(src), dst_full)
        self._logs[dst] = f
        self._file_renamed(src, dst, f.size)
        fsync_dir(os.path.dirname(dst_full))

    def rename_dir(self, src: str, dst: str, now_ms: int) -> None:
        """Move the directory ``src`` (every file under it) to ``dst``: its open log files are closed
        (a later access recovers them under the new name), ``rename(2)``, then fsync(2) of the parent
        directories that changed, so the move is durable at once (Kafka's ``Utils.atomicMoveWithFallback``
        of a stray log dir, parent flushed). The files' contents keep their durability. FileExistsError
        when ``dst`` exists; no-op when ``src`` does not."""
        src, dst = src.rstrip("/"), dst.rstrip("/")
        src_full, dst_full = self._full(src), self._full(dst)
        if src == dst or not os.path.isdir(src_full):
            return
        if os.path.lexists(dst_full):
            raise FileExistsError(f"rename_dir: {dst!r} already exists")
        for path in [p for p in self._logs if p.startswith(src + "/")]:
            f = self._logs.pop(path)
            self._drop_tail(f)
            os.close(f.fd)
        parent = os.path.dirname(dst_full)
        created = make_dirs(parent)
        os.rename(src_full, dst_full)
        self._dir_renamed(src, dst)
        for d in dict.fromkeys([os.path.dirname(src_full)] + dirs_to_sync(parent, created)):
            fsync_dir(d)

    def exists(self, path: str) -> bool:
        """Whether the file ``path`` currently exists (a directory is not a file)."""
        if path in self._logs:
            return True
        return os.path.isfile(self._full(path))

    def list(self, prefix: str) -> list[str]:
        """Sorted relative paths starting with ``prefix`` of the files that currently exist, log and value
        files alike; ``.tmp`` files of atomic writes, the root's ``.lock`` and the shadow directory are never
        listed."""
        if self._lock_fd is None:
            raise RuntimeError(f"FileDisk({self.root!r}) is closed")
        base = prefix.rpartition("/")[0]
        if prefix.startswith("/") or any(p in ("", ".", "..") for p in base.split("/") if base):
            raise ValueError(f"bad list prefix {prefix!r}")
        if base.split("/")[0] == SHADOW_DIR:
            return []  # no Disk path lies there
        start = os.path.join(self.root, *base.split("/")) if base else self.root
        out = []
        for dirpath, dirnames, filenames in os.walk(start):
            rel = os.path.relpath(dirpath, self.root)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in filenames:
                if name.endswith(TMP_SUFFIX) or (not rel and name == LOCK_FILE):
                    continue
                p = rel + name
                if p.startswith(prefix):
                    out.append(p)
            # Descend only into directories that can hold a match.
            dirnames[:] = [d for d in dirnames
                           if ((rel + d + "/").startswith(prefix) or prefix.startswith(rel + d + "/"))
                           and (rel or d != SHADOW_DIR)]
        out.sort()
        return out

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close every log file descriptor and release the root's lock (nothing is fsynced: what was not
        flushed stays in the page cache, as when Kafka's process exits). Idempotent; the FileDisk is
        unusable afterwards (RuntimeError), a new one on the same root recovers the files."""
        logs, self._logs = self._logs, {}
        self._tail_bytes = 0
        for f in logs.values():
            f.tail = []
            os.close(f.fd)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> FileDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._lock_fd is None else f"{len(self._logs)} open log files"
        return f"FileDisk({self.root!r}, {state})"

