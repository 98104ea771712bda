"""The Disk interface of the storage layer and its simulated implementation.

A :class:`Disk` is object-store-like: a "file" is a path string that holds either

* a list of items (append-only log files: :meth:`Disk.append`, :meth:`Disk.truncate`,
  :meth:`Disk.read_range`, :meth:`Disk.scan`, :meth:`Disk.fsync`), or
* a single value (checkpoint files: :meth:`Disk.write_atomic`, :meth:`Disk.read_value`).

Checkpoint values written by this package are ``str`` in Kafka's own text formats, so a file-backed
disk can write them verbatim. A partition segment's items are
:class:`~kraftlog.protocol.records.RecordBatch` objects; the metadata log's are metadata records.

This is the log-segment seam of DESIGN.md ("Real cluster"): a partition log appends a batch, reads the
batches between two positions of its offset index (:meth:`Disk.read_range`; the file-backed disk turns
them into a byte range and reads only those bytes), truncates to a position and fsyncs; it never asks
for a whole segment except to recover it at load (:meth:`Disk.scan`, one batch at a time). The
PartitionLog keeps the offset index (offset -> item position); the disk keeps position -> bytes.

:class:`SimDisk` models the OS page cache of the deterministic simulation: appends and truncations are
visible to readers at once but become durable only on ``fsync`` of their path or once the kernel's
writeback has had them for ``writeback_ms`` (like ``vm.dirty_expire_centisecs``). ``crash`` then
decides what a restarted node finds. No real I/O, no clock: every time is an ``now_ms`` int argument.

Storage faults (DESIGN.md, "Faults a real deployment meets"): every writing operation may raise
:class:`OSError` (ENOSPC, EIO), as a file-backed disk does; :meth:`SimDisk.set_full` makes a SimDisk
refuse every write with ENOSPC (a full file system), and :meth:`SimDisk.corrupt` flips bytes inside a
stored batch (a flipped bit on the medium), which the next :meth:`Disk.recover` of the file finds, as a
file-backed disk finds a batch whose CRC-32C does not match.
"""

from __future__ import annotations

import errno
import struct
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast, runtime_checkable

from crc32c import crc32c

__all__ = ["Disk", "SimDisk", "CRASH_MODES", "LoadDrop", "disk_full_error"]

#: The ``lose`` arguments :meth:`SimDisk.crash` accepts.
CRASH_MODES = ("none", "unflushed", "all")

_APPEND = 0
_TRUNCATE = 1


def disk_full_error(path: str) -> OSError:
    """The OSError a write on a full file system raises (``ENOSPC``), naming ``path``."""
    return OSError(errno.ENOSPC, "No space left on device", path)


@dataclass(slots=True, frozen=True)
class LoadDrop:
    """What the recovery of one log file at load dropped (Kafka's ``LogSegment.recover`` truncating
    invalid bytes): the bytes ``[start_byte, end_byte)`` of ``path`` (``items`` batches, or 0 when the
    dropped bytes held no whole batch) and why (``reason``: "batch CRC-32C mismatch", "incomplete batch:
    ...", "offset gap: ..."). A drop after a clean shutdown means the replica lost data the
    clean-shutdown file vouched for (DESIGN.md: "a replica that lost data at load is not clean")."""

    path: str
    start_byte: int
    end_byte: int
    items: int
    reason: str

    def __str__(self) -> str:
        what = f"{self.items} batch(es), " if self.items else ""
        return (f"{self.path}: dropped bytes [{self.start_byte}, {self.end_byte}) ({what}"
                f"{self.end_byte - self.start_byte} bytes) at load: {self.reason}")


@runtime_checkable
class Disk(Protocol):
    """What the storage layer needs from a disk. All times are ints in ms.

    Log files (lists of items):

    * ``create(path, now_ms)`` creates the log file empty if it is missing (a new segment: Kafka creates
      its file at a roll); the file exists durably after :meth:`fsync`.
    * ``append(path, item, now_ms)`` appends one item (creates the file if missing); it reaches the page
      cache only, durable after :meth:`fsync` (or the OS's writeback).
    * ``append_many(path, items, now_ms)`` appends several items as one write: a crash of the process
      keeps all of them or none (the controller's records of one event).
    * ``truncate(path, length, now_ms)`` keeps the first ``length`` items (a no-op on a missing file or
      when ``length`` >= its length); not durable until fsync, like ``ftruncate``.
    * ``read_range(path, start, stop)`` returns items ``start`` .. ``stop - 1`` as the OS shows them
      (page cache included): a sequence the caller must not mutate; shorter (or empty) past the end.
    * ``scan(path)`` iterates over every item in order (empty when missing); the file must not be
      changed while the iterator is in use. A file-backed disk reads it in bounded chunks.
    * ``scan_headers(path)`` iterates over the items of a partition segment as objects carrying a batch's
      header fields only (``base_offset``, ``record_count``, ``size_bytes``, ``partition_leader_epoch``,
      ``max_timestamp``, ``producer_id``, ``producer_epoch``, ``base_sequence``): what a log load needs; a
      file-backed disk reads 61 bytes per batch, never the records.
    * ``checksum(path)`` is the CRC-32C of the file's bytes as the OS shows them (kraftlog's whole-segment
      check after a clean shutdown); 0 for a missing file.
    * ``read(path)`` returns every item as a list (``[]`` if missing): for small logs (the metadata log)
      and tests; a partition log never calls it. Callers must not mutate it.
    * ``fsync(path, now_ms)`` makes every earlier append/truncate of ``path`` durable.
    * ``recover(path, now_ms, verify=True)`` checks the file as a log load does (once per file after the disk
      was opened or the node restarted: batch lengths and, with ``verify``, CRCs), truncates an invalid tail
      and returns what it dropped, as :class:`LoadDrop` entries (``[]`` when nothing); later calls return
      ``[]``. ``verify=False`` is Kafka's load of a segment below the recovery point: its batches are
      framed by their lengths only, their contents trusted.

    Checkpoint files (single values), durable at once:

    * ``write_atomic(path, value, now_ms)``: write tmp + fsync + rename (Kafka's checkpoint files).
    * ``read_value(path)``: the value, or None when missing.

    Any file:

    * ``delete(path, now_ms)`` (durable at once), ``exists(path)``, and ``list(prefix)``: the sorted
      paths starting with ``prefix`` that currently exist.
    * ``rename(src, dst, now_ms)``: fsync of the log file ``src``, ``rename(2)`` to ``dst`` (a file at ``dst`` is
      replaced), then fsync of the directory: durable at once, contents included. The log cleaner's swap of
      a cleaned segment (Kafka's ``.cleaned`` -> ``.swap`` -> ``.log``). FileNotFoundError when ``src`` is missing.

    Directories:

    * ``rename_dir(src, dst, now_ms)`` moves every file under the directory ``src`` to the same name under
      ``dst`` (``rename(2)`` of the directory, then fsync of its parent: durable at once; the files'
      contents keep their own durability). ``dst`` must not hold any file (FileExistsError); a ``src``
      without files is a no-op. Kafka renames a stray partition directory this way
      (``LogManager``'s ``-stray`` suffix).

    Errors: ``append``, ``append_many``, ``write_atomic``, ``fsync``, ``truncate``, ``delete``, ``rename`` and
    ``rename_dir`` raise
    :class:`OSError` when the storage fails (ENOSPC on a full file system, EIO); an ``append`` that raises
    leaves the file as it was (a caller must still treat the whole log directory as failed: Kafka's
    ``LogDirFailureChannel``). Reads of data written earlier do not fail this way.
    """

    def create(self, path: str, now_ms: int) -> None: ...

    def append(self, path: str, item: object, now_ms: int) -> None: ...

    def append_many(self, path: str, items: Sequence[object], now_ms: int) -> None: ...

    def truncate(self, path: str, length: int, now_ms: int) -> None: ...

    def read_range(self, path: str, start: int, stop: int) -> Sequence[object]: ...

    def scan(self, path: str) -> Iterator[object]: ...

    def scan_headers(self, path: str) -> Iterator[object]: ...

    def checksum(self, path: str) -> int: ...

    def read(self, path: str) -> list[object]: ...

    def fsync(self, path: str, now_ms: int) -> None: ...

    def recover(self, path: str, now_ms: int, verify: bool = True) -> list[LoadDrop]: ...

    def write_atomic(self, path: str, value: object, now_ms: int) -> None: ...

    def read_value(self, path: str) -> object | None: ...

    def delete(self, path: str, now_ms: int) -> None: ...

    def exists(self, path: str) -> bool: ...

    def list(self, prefix: str) -> list[str]: ...

    def rename(self, src: str, dst: str, now_ms: int) -> None: ...

    def rename_dir(self, src: str, dst: str, now_ms: int) -> None: ...


class _LogFile:
    """One list file of a SimDisk: the page-cache view, the durable state and the ops in between.

    Invariant: applying ``pending`` in order to ``durable`` gives ``view``.
    """

    __slots__ = ("view", "durable", "pending", "durable_exists")

    def __init__(self) -> None:
        self.view: list[object] = []
        self.durable: list[object] = []
        # (now_ms, kind, arg): kind _APPEND with the item, or _TRUNCATE with the kept length.
        self.pending: deque[tuple[int, int, object]] = deque()
        # Whether the file itself (its creation) has reached the disk.
        self.durable_exists = False

    def apply_all(self) -> None:
        """fsync: every pending op becomes durable."""
        pending = self.pending
        if pending:
            durable = self.durable
            for _t, kind, arg in pending:
                if kind == _APPEND:
                    durable.append(arg)
                else:
                    del durable[cast(int, arg):]
            pending.clear()
        self.durable_exists = True

    def apply_until(self, cutoff_ms: int) -> None:
        """Writeback: the pending ops issued at or before ``cutoff_ms`` become durable, in order."""
        pending = self.pending
        if not pending or pending[0][0] > cutoff_ms:
            return
        durable = self.durable
        while pending and pending[0][0] <= cutoff_ms:
            _t, kind, arg = pending.popleft()
            if kind == _APPEND:
                durable.append(arg)
            else:
                del durable[cast(int, arg):]
        self.durable_exists = True


class SimDisk:
    """The simulation's :class:`Disk`: exact page-cache semantics with lazy writeback.

    ``writeback_ms``: age in ms after which an unflushed append/truncate is written back by the OS and
    survives a ``crash("unflushed")``; None means never (only fsync makes data durable). Kafka itself
    relies on the OS for durability unless ``log.flush.interval.*`` is set (its default).

    Writeback is applied lazily and exactly: each path keeps its durable list and its pending ops with
    their ``now_ms``; ops with ``t <= now - writeback_ms`` are applied in order when the file is next
    appended to (bounding the pending queue) and at crash time. Times passed in must not go backwards.

    :meth:`read` returns the live page-cache list (O(1), no copy); callers must not mutate it.
    Checkpoint values (:meth:`write_atomic`) are durable at once and survive every crash but ``"all"``.

    Faults: while :attr:`full` (:meth:`set_full`), ``append``, ``append_many`` and ``write_atomic`` raise
    ``OSError(ENOSPC)`` before changing anything (a file system out of space; truncating, deleting and
    fsyncing what is written still work). :meth:`corrupt` flips bytes in a stored batch; the next
    :meth:`recover` of that file drops the batch and every one after it, as a file-backed disk's recovery
    drops everything from a batch whose CRC-32C does not match.
    """

    __slots__ = ("writeback_ms", "_files", "_values", "full", "_corrupted")

    def __init__(self, writeback_ms: int | None = 30000) -> None:
        if writeback_ms is not None and writeback_ms < 0:
            raise ValueError(f"writeback_ms must be >= 0 or None, got {writeback_ms}")
        self.writeback_ms = writeback_ms
        self._files: dict[str, _LogFile] = {}
        self._values: dict[str, object] = {}
        #: every write fails with ENOSPC while True (:meth:`set_full`)
        self.full = False
        #: id -> item of the items whose bytes :meth:`corrupt` damaged
        self._corrupted: dict[int, object] = {}

    # ------------------------------------------------------------------ faults
    def set_full(self, full: bool) -> None:
        """Make the file system full (every later append and write_atomic raises ``OSError(ENOSPC)``) or
        give it space again."""
        self.full = bool(full)

    def corrupt(self, path: str, index: int) -> bool:
        """Flip bytes inside item ``index`` of the log file ``path`` (the medium changed: the page cache,
        the disk and a crash that brings back an older copy all hold the damaged bytes), so that the next
        :meth:`recover` finds its CRC-32C wrong. The item object itself is left as it is (replicas share
        batch objects in the simulation): this disk remembers which of its items are damaged. Returns
        False (nothing changed) when the file has no such item."""
        f = self._files.get(path)
        if f is None or not 0 <= index < len(f.view):
            return False
        item = f.view[index]
        self._corrupted[id(item)] = item  # kept referenced: the id stays this item's
        return True

    def recover(self, path: str, now_ms: int, verify: bool = True) -> list[LoadDrop]:
        """A log load's check of ``path`` (nothing without ``verify``: damaged bytes below the recovery
        point go unseen, as in Kafka): from the first item :meth:`corrupt` damaged, every item is
        truncated away (not durable until fsync, as a file-backed disk's recovery truncation) and reported
        as one :class:`LoadDrop` (byte positions from the items' ``size_bytes``, or 1 byte per item for
        items without one); ``[]`` when no item of the file is damaged."""
        f = self._files.get(path)
        if f is None or not self._corrupted or not verify:
            return []
        view = f.view
        corrupted = self._corrupted
        first = next((i for i, item in enumerate(view) if id(item) in corrupted
                      and corrupted[id(item)] is item), None)
        if first is None:
            return []
        size: Callable[[object], int] = lambda item: getattr(item, "size_bytes", 1)  # noqa: E731
        start = sum(size(item) for item in view[:first])
        end = start + sum(size(item) for item in view[first:])
        drop = LoadDrop(path, start, end, len(view) - first,
                        f"batch CRC-32C mismatch in the batch at byte {start} (item {first})")
        self.truncate(path, first, now_ms)
        return [drop]

    # ------------------------------------------------------------------ log files
    def _new_file(self, path: str) -> _LogFile:
        if path in self._values:
            raise ValueError(f"{path!r} holds a value (write_atomic), not a list of items")
        f = self._files[path] = _LogFile()
        return f

    def create(self, path: str, now_ms: int) -> None:
        """Create the list file ``path`` empty if missing (ENOSPC while full); it survives a crash once
        fsynced."""
        if path in self._files:
            return
        if self.full:
            raise disk_full_error(path)
        self._new_file(path)

    def append(self, path: str, item: object, now_ms: int) -> None:
        """Append ``item`` to the list file ``path`` (created if missing); durable after fsync/writeback."""
        if self.full:
            raise disk_full_error(path)
        f = self._files.get(path)
        if f is None:
            f = self._new_file(path)
        elif self.writeback_ms is not None and f.pending and f.pending[0][0] <= now_ms - self.writeback_ms:
            f.apply_until(now_ms - self.writeback_ms)  # (checked here first: most appends find nothing due)
        f.view.append(item)
        f.pending.append((now_ms, _APPEND, item))

    def append_many(self, path: str, items: Sequence[object], now_ms: int) -> None:
        """Append ``items`` in order (one write: nothing happens between them in the simulation)."""
        if self.full and items:
            raise disk_full_error(path)
        for item in items:
            self.append(path, item, now_ms)

    def truncate(self, path: str, length: int, now_ms: int) -> None:
        """Keep the first ``length`` items of ``path``; no-op if missing or not longer than ``length``."""
        if length < 0:
            raise ValueError(f"negative truncate length {length}")
        f = self._files.get(path)
        if f is None or length >= len(f.view):
            return
        del f.view[length:]
        f.pending.append((now_ms, _TRUNCATE, length))

    def read(self, path: str) -> list[object]:
        """The page-cache contents of ``path`` (the live list: do not mutate), ``[]`` if missing."""
        f = self._files.get(path)
        return f.view if f is not None else []

    def read_range(self, path: str, start: int, stop: int) -> list[object]:
        """Items ``start`` .. ``stop - 1`` of ``path`` from the page-cache view (a new list slice)."""
        f = self._files.get(path)
        return f.view[start:stop] if f is not None else []

    def scan(self, path: str) -> Iterator[object]:
        """Iterate over the page-cache items of ``path`` (do not change the file meanwhile)."""
        f = self._files.get(path)
        return iter(f.view) if f is not None else iter(())

    def scan_headers(self, path: str) -> Iterator[object]:
        """The items of ``path`` (a simulated segment's RecordBatch objects carry their header fields)."""
        return self.scan(path)

    def checksum(self, path: str) -> int:
        """A CRC-32C standing for the bytes of ``path``: over each item's size (its ``size_bytes``) and base
        offset, and a mark for each item :meth:`corrupt` damaged, so a flipped byte changes it as it changes
        a file's; 0 when missing."""
        f = self._files.get(path)
        if f is None:
            return 0
        corrupted = self._corrupted
        parts = []
        for item in f.view:
            mark = b"!" if id(item) in corrupted and corrupted[id(item)] is item else b""
            parts.append(struct.pack(">qq", getattr(item, "base_offset", 0), getattr(item, "size_bytes", 1)) + mark)
        return crc32c(b"".join(parts))

    def fsync(self, path: str, now_ms: int) -> None:
        """Make every append/truncate of ``path`` issued so far durable (no-op for missing/value files)."""
        f = self._files.get(path)
        if f is not None:
            f.apply_all()

    def unflushed_items(self, path: str, now_ms: int | None = None) -> int:
        """How many append/truncate ops of ``path`` are not yet durable.

        With ``now_ms``, the writeback due by then is applied first; without it, ops that are old
        enough but not yet lazily written back still count.
        """
        f = self._files.get(path)
        if f is None:
            return 0
        if now_ms is not None and self.writeback_ms is not None:
            f.apply_until(now_ms - self.writeback_ms)
        return len(f.pending)

    # ------------------------------------------------------------------ value files
    def write_atomic(self, path: str, value: object, now_ms: int) -> None:
        """Replace the value of ``path`` durably at once (tmp file + fsync + rename)."""
        if self.full:
            raise disk_full_error(path)
        self._files.pop(path, None)
        self._values[path] = value

    def read_value(self, path: str) -> object | None:
        """The value written by :meth:`write_atomic` at ``path``, or None."""
        return self._values.get(path)

    # ------------------------------------------------------------------ any file
    def delete(self, path: str, now_ms: int) -> None:
        """Remove ``path`` (list or value file), durably at once; no-op if missing."""
        self._files.pop(path, None)
        self._values.pop(path, None)

    def exists(self, path: str) -> bool:
        """Whether ``path`` currently exists (as the OS shows it)."""
        return path in self._files or path in self._values

    def rename(self, src: str, dst: str, now_ms: int) -> None:
        """fsync the log file ``src``, then rename it ``dst`` (replacing it), durably at once.
        FileNotFoundError when ``src`` is missing."""
        f = self._files.pop(src, None)
        if f is None:
            raise FileNotFoundError(src)
        f.apply_all()
        self._values.pop(dst, None)
        self._files[dst] = f

    def rename_dir(self, src: str, dst: str, now_ms: int) -> None:
        """Move every file under directory ``src`` to ``dst`` (same relative names), durably at once; the
        log files keep their page-cache and durable contents as they are. FileExistsError when a file
        already exists under ``dst``; no-op when ``src`` holds none."""
        src_prefix, dst_prefix = src.rstrip("/") + "/", dst.rstrip("/") + "/"
        if src_prefix == dst_prefix:
            return
        if self.list(dst_prefix):
            raise FileExistsError(f"rename_dir: {dst!r} already holds files")
        _move_prefix(self._files, src_prefix, dst_prefix)
        _move_prefix(self._values, src_prefix, dst_prefix)

    def crash(self, lose: str, now_ms: int) -> None:
        """Simulate a machine crash at ``now_ms`` and the restart that follows.

        ``lose``:

        * ``"none"``: everything written so far survives (as if it had all reached the disk);
        * ``"unflushed"``: only durable state survives: fsynced ops, ops older than ``writeback_ms`` at
          ``now_ms`` (written back in order), checkpoint values; files never made durable vanish;
        * ``"all"``: the disk is replaced by an empty one.
        """
        if lose == "none":
            for f in self._files.values():
                f.apply_all()
        elif lose == "unflushed":
            wb = self.writeback_ms
            lost = []
            for path, f in self._files.items():
                if wb is not None:
                    f.apply_until(now_ms - wb)
                f.pending.clear()
                if not f.durable_exists:
                    lost.append(path)
                    continue
                f.view = list(f.durable)
            for path in lost:
                del self._files[path]
        elif lose == "all":
            self._files.clear()
            self._values.clear()
            self._corrupted.clear()
            self.full = False  # a new disk
        else:
            raise ValueError(f"lose must be one of {CRASH_MODES}, got {lose!r}")

    def list(self, prefix: str) -> list[str]:
        """Sorted paths starting with ``prefix`` that currently exist (list and value files)."""
        out = [p for p in self._files if p.startswith(prefix)]
        out.extend(p for p in self._values if p.startswith(prefix))
        out.sort()
        return out


_V = TypeVar("_V")


def _move_prefix(table: dict[str, _V], src_prefix: str, dst_prefix: str) -> None:
    """Rename every key of ``table`` starting with ``src_prefix`` to start with ``dst_prefix`` instead."""
    moved = [p for p in table if p.startswith(src_prefix)]
    for p in moved:
        table[dst_prefix + p[len(src_prefix):]] = table.pop(p)
