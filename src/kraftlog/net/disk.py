"""The file-backed :class:`~kraftlog.storage.disk.Disk` of a real node process, and its node identity.

:class:`FileDisk` implements the storage layer's ``Disk`` protocol over a root directory, with the
semantics :class:`~kraftlog.storage.disk.SimDisk` simulates, so a broker or controller process keeps
its logs and checkpoints in files and recovers them after a restart, a SIGKILL or a machine crash the
same way it recovers from a SimDisk in the simulator.

Paths are relative, ``/``-separated (``data/t-0/00000000000000000000.log``,
``data/t-0/leader-epoch-checkpoint``, ``data/__consumer_offsets/<group>``,
``metadata/__cluster_metadata-0/00000000000000000000.log``) and map under the root; an absolute path, an
empty, ``.`` or ``..`` component, a NUL byte, a name ending in ``.tmp`` (reserved for atomic writes) or
the root's ``.lock`` is refused with ValueError.

File kinds, told apart by the path (so a restarted process reads every file the way it was written):

* **Log files** are the paths ending in ``.log`` (Kafka's segment suffix). They hold a list of items
  (:meth:`FileDisk.append`, :meth:`~FileDisk.truncate`, :meth:`~FileDisk.read_range`, :meth:`~FileDisk.scan`, :meth:`~FileDisk.fsync`)
  and are, byte for byte, Kafka's ``.log`` segment format: Kafka v2 record batches (magic 2, CRC-32C),
  concatenated, nothing else -- one batch per item:

  - a partition segment (any ``.log`` path not under ``metadata/``) holds
    :class:`~kraftlog.protocol.records.RecordBatch` items, each stored as its v2 bytes
    (:attr:`~kraftlog.protocol.records.RecordBatch.data`: a client's batch as the leader stamped it,
    compressed if the client compressed it; base offset and partition leader epoch included): the
    layout Kafka's ``DumpLogSegments`` reads (not tried against Kafka's tools here);
  - the metadata log (a ``.log`` path under ``metadata/``, the controller's
    ``__cluster_metadata-0``) holds metadata records (:mod:`kraftlog.metadata.records`) in KRaft's
    layout, records as values of v2 batches, one record per batch: base offset = the record's offset
    (its index in the file), partition leader epoch 0 (the single-node quorum's epoch, as on the
    wire), key null, value :func:`~kraftlog.metadata.codec.encode_metadata_record`'s JSON, timestamp the
    append's ``now_ms``. (KRaft's value is Kafka's binary ``ApiMessageAndVersion``; kraftlog's records
    are its own, so the value is kraftlog's JSON form, the one the MetadataFetch wire uses too.) KRaft
    writes the records of one atomic append as one batch; the Disk appends record by record, so a
    process killed between two appends of a group leaves a prefix of the group (the controller fsyncs
    once per group, so an fsynced group is whole).

  Every batch carries its length and CRC-32C, so a reader tells a valid prefix from a torn tail (see
  recovery below).
* **Value files** are every other path: a single ``str`` value (Kafka's checkpoint text formats,
  JSON for the clean-shutdown file and committed offsets) written verbatim as UTF-8 by
  :meth:`~FileDisk.write_atomic` (``bytes`` are written as they are).

Durability, as Kafka does it:

* ``append`` is one ``write(2)`` of the item's bytes on a file descriptor opened ``O_APPEND`` once
  and kept open: the bytes reach the OS page cache, not the disk. A SIGKILL of the process keeps them
  (the kernel writes them back); a machine crash keeps what the kernel had written back.
* ``fsync`` is ``fsync(2)`` of the file, and, the first time after the file was created, of its
  directory and of every directory created for it, so the new file is reachable after a crash
  (Kafka's ``LocalLog.flush`` flushes the log dir when the flushed segments include a new one).
  FileDisk never fsyncs on its own otherwise: the flush policy (``log.flush.interval.*``) is
  PartitionLog's.
* ``truncate`` is ``ftruncate(2)`` to the byte position of the first dropped item (kept in memory per
  file), not durable until fsync, as Kafka's ``LogSegment.truncateTo``.
* ``write_atomic`` writes ``<path>.tmp``, fsyncs it, renames it over ``<path>`` and fsyncs the
  directory (Kafka's ``CheckpointFile`` / ``Utils.atomicMoveWithFallback``): durable at once; a crash
  leaves the old or the new value, never a mix. ``delete`` unlinks and fsyncs the directory;
  ``rename_dir`` (a stray partition directory renamed ``-stray``) renames and fsyncs the parent.

Per log file, FileDisk tracks its *durable length*: the bytes the last fsync covered, lowered by a
truncation below it (the durable content of the current file is then at most that prefix; an
un-fsynced truncation may still lose its effect in a machine crash, which a length cannot say); a
file found at load counts as durable up to its recovered length, as PartitionLog takes its recovery
point to be the LEO at load. :meth:`~FileDisk.durable_length` and :meth:`~FileDisk.unflushed_bytes`
expose it for fault injection.

Shadow (chaos mode, ``FileDisk(root, shadow=True)``): so that a fault injector can kill a node process
and then give it back its files exactly as a machine crash with a lost page cache would leave them
(:func:`restore_fsynced`, SimDisk's ``crash("unflushed")`` with ``writeback_ms=None``), FileDisk keeps,
in files under ``<root>/.kraftlog-shadow/`` (:data:`SHADOW_DIR`), what it takes to rebuild each log file
as of its last fsync. A length is not enough: an unsynced truncate followed by appends must come back
as the pre-truncation bytes. Layout, one mirror of each log path ``<p>`` (``<s>`` =
``<root>/.kraftlog-shadow/<p>``, same directories as the log file):

* ``<s>.state``: one line ``kraftlog-shadow-1 gen=<g> durable=<D>`` -- the file's fsynced content is
  ``D`` bytes long -- or ``kraftlog-shadow-1 gen=<g> absent`` -- the file was created and never fsynced,
  it has no durable existence (SimDisk drops such a file in a crash). ``g`` counts fsyncs that changed
  the state (it names the chunks below).
* ``<s>.<g>.<L>.chunk`` (``L``: 20 digits): the fsynced bytes ``[L, next)`` that a truncation to byte
  ``L`` destroyed, ``next`` being the next chunk's ``L``, or ``D`` for the last. The chunks of the state's
  generation cover ``[s, D)`` contiguously, ``s`` = the lowest one's ``L``: since the fsync nothing below
  the lowest truncation point changed (appends only write past it), so a truncation to ``L < s``
  copies the file's current bytes ``[L, s)``, still the fsynced ones, into a new chunk. The fsynced
  content is then ``current[0:s] + chunks``, or ``current[0:D]`` without chunks. Chunks of another
  generation and ``*.part`` files are leftovers of a killed process, ignored and removed.

What each operation records, always *before* the change it protects (a SIGKILL between the two leaves
a shadow that still describes the fsynced state) and never fsynced (the shadow only has to survive
the process, the page cache keeps it; every shadow file is written as ``*.part`` and renamed, so a
killed process never leaves a half-written one):

* creating a log file (``append`` to a missing one): ``absent`` (leftover chunks of the path removed);
* loading an existing log file with no state: ``durable=<its size>`` (a file found at load counts as
  durable, as above), before the recovery's own ftruncate of a torn tail, which records like a truncate;
* ``truncate`` to byte ``L`` below ``s`` of a durable file: the chunk ``[L, s)``; ``append``: nothing;
* ``fsync``: after fsync(2) returned, the new state ``durable=<size>`` of the next generation, then the
  old chunks are removed (nothing is written when the state already says so);
* ``write_atomic`` and ``delete`` are durable at once (SimDisk's too): nothing, except that deleting a
  log file removes its shadow after the unlink.

The shadow directory is reserved: a Disk path under it is refused (ValueError), :meth:`~FileDisk.list`
never shows it, and a FileDisk without ``shadow`` neither reads nor writes it (only FileDisks with
``shadow=True`` may run on a root whose shadow :func:`restore_fsynced` will use: a plain one would change
files behind it, which :func:`restore_fsynced` detects only when a file got shorter than the shadow's
start). Value files (``write_atomic``) have no shadow: their content is always durable.

Recovery: the first access to a log file (``read_range``, ``scan``, ``append``, ...) reads it from the
start in chunks of about 1 MiB and checks its batches, as Kafka's ``LogSegment.recover`` checks each
batch's size and CRC. The first incomplete or invalid batch (fewer than 12 bytes left, a length below
the 49-byte v2 minimum or past the end of the file, magic != 2, a CRC-32C mismatch) is a torn tail from a
crash: the valid prefix is kept, the file is truncated to it with ``ftruncate`` (Kafka's ``LogLoader``
truncates the invalid bytes past the recovery point the same way; the truncation is not fsynced, like
any other) and the truncation is reported through the ``log`` callable. A batch whose length and CRC are
valid was written whole: if it is not an item of its file (a metadata record of an unknown type: a newer
writer, not a crash; a partition batch without records), :class:`UndecodableLogError` is raised and the
file is left untouched, rather than truncating data that is not torn. (Kafka recovers only the segments
past the recovery point after an unclean shutdown; FileDisk checks every batch of the one segment, a
superset that costs one sequential read at start-up.)

What stays in memory: per log file its offset index, one byte position per batch (Kafka's ``.index``
maps offsets to positions too, sparsely and in a file; here it is dense, rebuilt at load); for the
metadata log, also its decoded records (the log a KRaft node replays into its image). A partition
segment's batches stay on disk: :meth:`~FileDisk.read_range` reads the byte range of the requested
batches with one ``pread(2)`` and returns them as encoded
:class:`~kraftlog.protocol.records.RecordBatch` objects (records not decoded); an append writes an encoded
batch's own bytes. Except its *tail cache*: the batches this process appended last (at most
:data:`TAIL_CACHE_FILE_BYTES` per segment, :data:`TAIL_CACHE_TOTAL_BYTES` in all, dropped on truncation),
kept as the RecordBatch objects a read of them would return, so that a read of the log's end -- a
follower fetching what the leader just appended -- costs no ``pread`` and no copy. One :class:`FileDisk` serves one process and one thread; the root is locked
with ``flock`` on ``<root>/.lock`` as Kafka locks each log dir, so a second process (or a second
FileDisk in the same process) on the same root fails with :class:`DirectoryLockedError` until the first
is closed or dies.

Also here: :func:`write_meta_properties` / :func:`read_meta_properties`, a Kafka ``meta.properties``
node identity (Java properties text with ``version=1``, ``cluster.id``, ``node.id`` and whatever else
the caller stores), written atomically, in the text of :mod:`kraftlog.storage.meta_properties` (which
the core nodes verify at start).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import struct
import time
from typing import Callable, Iterator, Mapping

from crc32c import crc32c

from ..metadata.records import METADATA_RECORD_TYPES
from ..protocol.records import Record, RecordBatch
from ..metadata.codec import decode_metadata_record, encode_metadata_record
from ..protocol.wire import encode_batches
from ..storage.disk import LoadDrop, disk_full_error
from ..storage.meta_properties import META_PROPERTIES, decode_properties, encode_properties

__all__ = [
    "FileDisk",
    "UndecodableLogError",
    "DirectoryLockedError",
    "ShadowStateError",
    "restore_fsynced",
    "SHADOW_DIR",
    "LOG_SUFFIX",
    "TMP_SUFFIX",
    "LOCK_FILE",
    "METADATA_PREFIX",
    "META_PROPERTIES",
    "write_meta_properties",
    "read_meta_properties",
    "corrupt_segment",
    "segment_batches",
]

#: A path ending with this suffix is a log file (a list of items); any other is a value file.
LOG_SUFFIX = ".log"
#: Suffix of the temporary file of an atomic write (Kafka's checkpoint ``.tmp``); reserved.
TMP_SUFFIX = ".tmp"
#: The lock file at the root (Kafka's per-log-dir ``.lock``); reserved, never listed.
LOCK_FILE = ".lock"
#: The directory at the root that holds the shadow of a ``shadow=True`` FileDisk; reserved, never listed.
SHADOW_DIR = ".kraftlog-shadow"
#: Log files under this prefix hold metadata records (the controller's ``__cluster_metadata`` log).
METADATA_PREFIX = "metadata/"

# Kafka v2 batch framing: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
# crc uint32 (CRC-32C of everything after it: attributes .. end of the batch).
_LOG_HEAD = struct.Struct(">qi")
_LOG_OVERHEAD = 12  # baseOffset + batchLength: batchLength counts the bytes after them
_MAGIC_POS = 16
_CRC = struct.Struct(">I")
_CRC_POS = 17
_CRC_START = 21
_RECORDS_COUNT = struct.Struct(">i")
_RECORDS_COUNT_POS = 57  # recordsCount, the last field of the 61-byte header
#: Kafka's ``RECORD_BATCH_OVERHEAD`` (61) minus ``LOG_OVERHEAD``: the smallest legal batchLength.
_MIN_BATCH_LENGTH = 49
_MAGIC = 2
#: Partition leader epoch of a metadata-log batch (kraftlog's single-node quorum; the wire uses 0 too).
_METADATA_LEADER_EPOCH = 0

_BATCHES = 0
_METADATA = 1

_OPEN_LOG = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
#: Bytes read per system call when recovering or scanning a segment.
_SCAN_CHUNK = 1 << 20
#: The tail cache of a partition segment (:class:`_LogFile`): at most this many bytes of its last
#: batches per file (the last batch is kept whatever its size), and in all the files of a FileDisk.
TAIL_CACHE_FILE_BYTES = 4 << 20
TAIL_CACHE_TOTAL_BYTES = 32 << 20

# Shadow files (see the module docstring): ``<s>.state`` and ``<s>.<gen>.<start>.chunk``, written as
# ``*.part`` and renamed.
_SHADOW_MAGIC = "kraftlog-shadow-1"
_STATE_SUFFIX = ".state"
_CHUNK_SUFFIX = ".chunk"
_PART_SUFFIX = ".part"


class UndecodableLogError(ValueError):
    """A log file holds a batch with a valid length and CRC-32C that cannot be decoded as this file's
    items (e.g. an unsupported compression codec, an unknown metadata record type, a metadata batch
    not at its offset). Not a torn tail: the file is left untouched and the node should not start."""


class DirectoryLockedError(RuntimeError):
    """Another process, or another open FileDisk, holds the root's ``.lock`` (Kafka: "Failed to
    acquire lock on file .lock ... A Kafka instance in another process or thread is using this
    directory")."""


class ShadowStateError(ValueError):
    """The shadow of a root (``<root>/.kraftlog-shadow``) does not describe its files: a state file that
    cannot be parsed, chunks that do not cover ``[start, durable)`` contiguously, or a log file shorter
    than the shadow's start (changed by something other than a ``shadow=True`` FileDisk). Nothing is
    restored; remove the shadow directory to treat the files as they are as durable."""


# ------------------------------------------------------------------------------- small file helpers
def _write_all(fd: int, data: bytes) -> None:
    """write(2) until every byte is written (a regular file may take fewer bytes per call)."""
    view = memoryview(data)
    done = os.write(fd, view)
    while done < len(view):
        done += os.write(fd, view[done:])


def _fsync_dir(path: str) -> None:
    """fsync(2) a directory, making the entries created, renamed or removed in it durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(path: str) -> list[str]:
    """mkdir ``path`` and its missing ancestors; returns the directories created, outermost first."""
    missing = []
    p = path
    while p and not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    created = []
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            continue
        created.append(d)
    return created


def _dirs_to_sync(parent: str, created: list[str]) -> list[str]:
    """The directories to fsync, innermost first, so that a file just created in ``parent`` (after
    ``created`` were made for it) is reachable after a crash: ``parent`` and the parent of each new one."""
    out = [parent]
    for d in reversed(created):
        out.append(os.path.dirname(d))
    return out


def _atomic_write(full: str, data: bytes) -> None:
    """Kafka's checkpoint write: ``full.tmp`` written and fsynced, renamed over ``full``, directory fsynced
    (and the directories created for it)."""
    parent = os.path.dirname(full)
    created = _make_dirs(parent)
    tmp = full + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, full)
    for d in _dirs_to_sync(parent, created):
        _fsync_dir(d)


# ------------------------------------------------------------------------------------ shadow files
class _Shadow:
    """The shadow of one log file of a ``shadow=True`` FileDisk (module docstring, "Shadow").

    ``base``: the OS path ``<root>/.kraftlog-shadow/<path>`` its shadow files are named after; ``gen`` the
    generation of its state; ``durable`` the length in bytes of its fsynced content, None when it has
    no durable existence (created, never fsynced); ``start`` the lowest byte a truncation since that
    fsync cut to (``durable`` when none: the fsynced bytes ``[start, durable)`` are in ``chunks``, the
    current file's ``[0, start)`` are the fsynced ones); ``chunks`` the OS paths of the chunk files of
    this generation."""

    __slots__ = ("base", "gen", "durable", "start", "chunks")

    def __init__(self, base: str, gen: int, durable: int | None, start: int, chunks: list[str]) -> None:
        self.base = base
        self.gen = gen
        self.durable = durable
        self.start = start
        self.chunks = chunks


def _shadow_base(root: str, path: str) -> str:
    """The OS path the shadow files of the log file ``path`` (relative, ``/``-separated) are named after."""
    return os.path.join(root, SHADOW_DIR, *path.split("/"))


def _write_small(full: str, data: bytes) -> None:
    """Write ``full`` as ``full.part`` renamed over it (no fsync: a shadow file need only outlive the
    process, and the rename makes a killed writer leave the old file or the new one, never a part)."""
    part = full + _PART_SUFFIX
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(part, full)


def _write_shadow_state(base: str, gen: int, durable: int | None) -> None:
    """Write ``<base>.state``: generation ``gen``, fsynced length ``durable`` bytes (None: absent)."""
    _make_dirs(os.path.dirname(base))
    what = "absent" if durable is None else f"durable={durable}"
    _write_small(base + _STATE_SUFFIX, f"{_SHADOW_MAGIC} gen={gen} {what}\n".encode())


def _read_shadow_state(base: str) -> tuple[int, int | None] | None:
    """(generation, fsynced length in bytes or None for absent) from ``<base>.state``; None when there is
    no state file. ShadowStateError when it is not one."""
    full = base + _STATE_SUFFIX
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    fields = data.decode("ascii", "replace").split()
    try:
        if len(fields) != 3 or fields[0] != _SHADOW_MAGIC or not fields[1].startswith("gen="):
            raise ValueError("not a shadow state line")
        gen = _nonneg(fields[1][4:])
        if fields[2] == "absent":
            return gen, None
        if not fields[2].startswith("durable="):
            raise ValueError("neither absent nor durable=<bytes>")
        return gen, _nonneg(fields[2][8:])
    except ValueError as exc:
        raise ShadowStateError(f"{full}: bad shadow state {data[:200]!r} ({exc})") from None


def _nonneg(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{text!r} is not a non-negative integer")
    return int(text)


def _shadow_files(base: str) -> tuple[list[tuple[int, int, str]], list[str]]:
    """The shadow files named after ``base`` other than its state: ([(gen, start byte, OS path)] of the
    complete chunks, [OS paths of ``*.part`` leftovers])."""
    parent, name = os.path.split(base)
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return [], []
    chunks = []
    parts = []
    head = name + "."
    for n in names:
        if not n.startswith(head):
            continue
        rest = n[len(head):]
        if rest == _STATE_SUFFIX[1:] + _PART_SUFFIX:
            parts.append(os.path.join(parent, n))
            continue
        part = rest.endswith(_PART_SUFFIX)
        if part:
            rest = rest[:-len(_PART_SUFFIX)]
        if not rest.endswith(_CHUNK_SUFFIX):
            continue
        gen, dot, start = rest[:-len(_CHUNK_SUFFIX)].partition(".")
        # Exactly "<digits>.<digits>": the chunk names of another log path (which ends in ".log") differ.
        if not dot or not (gen.isascii() and gen.isdigit() and start.isascii() and start.isdigit()):
            continue
        if part:
            parts.append(os.path.join(parent, n))
        else:
            chunks.append((int(gen), int(start), os.path.join(parent, n)))
    return chunks, parts


def _remove_shadow(base: str, state: bool) -> None:
    """Remove the chunks and ``*.part`` files named after ``base``, then (``state``) its state file."""
    chunks, parts = _shadow_files(base)
    for full in [c[2] for c in chunks] + parts + ([base + _STATE_SUFFIX] if state else []):
        try:
            os.unlink(full)
        except FileNotFoundError:
            pass


def _copy_range(src_fd: int, pos: int, count: int, dst_fd: int) -> None:
    """Copy bytes ``[pos, pos + count)`` of ``src_fd`` to ``dst_fd`` in pieces of at most ``_SCAN_CHUNK``
    bytes (bounded memory); OSError on a short read."""
    while count > 0:
        data = os.pread(src_fd, min(count, _SCAN_CHUNK), pos)
        if not data:
            raise OSError(f"short read: {count} bytes missing at {pos}")
        _write_all(dst_fd, data)
        pos += len(data)
        count -= len(data)


# ------------------------------------------------------------------------------------ log files
class _LogFile:
    """One open log file: its descriptor and in-memory index.

    ``starts[i]`` is the byte position of item ``i`` (the offset index's position half: PartitionLog
    keeps offset -> item, this keeps item -> byte); ``items`` the decoded metadata records of a metadata
    log, None for a partition segment (its batches stay on disk and are read back by byte range);
    ``size`` the file length in bytes; ``durable`` the length the last fsync covered (lowered by
    truncation); ``sync_dirs`` the directories to fsync with the next fsync (the file's creation is not
    durable before); ``shadow`` its :class:`_Shadow` in a ``shadow=True`` FileDisk, else None.

    ``tail`` (partition segments): the batches this process appended last, as the encoded RecordBatch
    objects a read of them returns, for the items ``count() - len(tail)`` .. ``count() - 1``;
    ``tail_bytes`` their size. Followers fetch what the leader has just appended: served from here, the
    leader's fetch responses send the bytes it wrote, with no ``pread`` and no copy."""

    __slots__ = ("fd", "kind", "items", "starts", "size", "durable", "sync_dirs", "shadow", "tail", "tail_bytes")

    def __init__(self, fd: int, kind: int, items: list | None, starts: list[int], size: int, durable: int,
                 sync_dirs: list[str], shadow: _Shadow | None = None) -> None:
        self.fd = fd
        self.kind = kind
        self.items = items
        self.starts = starts
        self.size = size
        self.durable = durable
        self.sync_dirs = sync_dirs
        self.shadow = shadow
        self.tail: list[RecordBatch] = []
        self.tail_bytes = 0

    def count(self) -> int:
        return len(self.starts)


class _ChunkReader:
    """Sequential reads of a file through ``pread`` in chunks of at least ``_SCAN_CHUNK`` bytes, so
    recovering a segment costs bounded memory and few system calls."""

    __slots__ = ("fd", "total", "buf", "buf_start")

    def __init__(self, fd: int, total: int) -> None:
        self.fd = fd
        self.total = total
        self.buf = b""
        self.buf_start = 0

    def get(self, pos: int, n: int) -> memoryview:
        """Bytes ``pos`` .. ``pos + n`` of the file (the caller checked they lie within ``total``)."""
        off = pos - self.buf_start
        if off < 0 or off + n > len(self.buf):
            want = min(max(n, _SCAN_CHUNK), self.total - pos)
            chunks = []
            got = 0
            while got < want:
                chunk = os.pread(self.fd, want - got, pos + got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            self.buf = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            self.buf_start = pos
            off = 0
            if len(self.buf) < n:
                raise OSError(f"short read: {len(self.buf)} of {n} bytes at {pos}")
        return memoryview(self.buf)[off:off + n]


def _scan(fd: int, total: int, kind: int, path: str) -> tuple[list | None, list[int], int, str | None]:
    """Check the batches of a log file from its start, as Kafka's ``LogSegment.recover`` checks each
    batch's size and CRC, reading it in bounded chunks.

    Returns (the decoded metadata records for a metadata log, or None for a segment, whose records are
    not decoded; the byte position of each batch; the length of the valid prefix in bytes; why the rest
    is invalid, or None). Raises :class:`UndecodableLogError` for a batch with a valid length and CRC
    that is not an item of this file's kind."""
    reader = _ChunkReader(fd, total)
    items: list | None = [] if kind == _METADATA else None
    starts: list[int] = []
    pos = 0
    reason = None
    while pos < total:
        if total - pos < _LOG_OVERHEAD:
            reason = f"{total - pos} trailing bytes, fewer than a batch's 12-byte offset and length"
            break
        _base, length = _LOG_HEAD.unpack_from(reader.get(pos, _LOG_OVERHEAD))
        if length < _MIN_BATCH_LENGTH:
            reason = f"batch length {length} below the v2 minimum of {_MIN_BATCH_LENGTH}"
            break
        end = pos + _LOG_OVERHEAD + length
        if end > total:
            reason = f"incomplete batch: its length {length} runs {end - total} bytes past the end of the file"
            break
        view = reader.get(pos, end - pos)
        magic = view[_MAGIC_POS]
        if magic != _MAGIC:
            reason = f"batch magic {magic}, expected {_MAGIC}"
            break
        (crc,) = _CRC.unpack_from(view, _CRC_POS)
        if crc32c(view[_CRC_START:]) != crc:
            reason = "batch CRC-32C mismatch"
            break
        # Length and CRC are valid: the batch was written whole. Failing to read it is not a torn tail.
        try:
            if items is not None:
                batch = RecordBatch.from_bytes(view, verify_crc=False)
                if batch.base_offset != len(items) or batch.record_count != 1:
                    raise ValueError(f"metadata batch at offset {batch.base_offset} with {batch.record_count} "
                                     f"records where offset {len(items)} with one record was expected")
                items.append(decode_metadata_record(batch.records[0].value))
            else:
                # A segment's batch is only checked, not kept: read its record count in place rather
                # than copying the batch into a RecordBatch.
                (count,) = _RECORDS_COUNT.unpack_from(view, _RECORDS_COUNT_POS)
                if count <= 0:
                    raise ValueError(f"batch with {count} records")
        except Exception as exc:  # noqa: BLE001 -- any decoder failure on a CRC-valid batch
            raise UndecodableLogError(
                f"{path}: the batch at byte {pos} (item {len(starts)}) has a valid CRC-32C but cannot be "
                f"read: {exc}") from exc
        starts.append(pos)
        pos = end
    return items, starts, pos, reason


def _batches_in(fd: int, pos: int, total: int) -> int:
    """How many batch-shaped frames (a 12-byte offset and length, then at least the v2 minimum) the bytes
    ``[pos, total)`` of a log file hold, read by their length fields only: what a recovery truncation
    that starts at ``pos`` drops (the first frame is the invalid one)."""
    count = 0
    while total - pos >= _LOG_OVERHEAD:
        head = os.pread(fd, _LOG_OVERHEAD, pos)
        if len(head) < _LOG_OVERHEAD:
            break
        _base, length = _LOG_HEAD.unpack(head)
        if length < _MIN_BATCH_LENGTH or pos + _LOG_OVERHEAD + length > total:
            break
        count += 1
        pos += _LOG_OVERHEAD + length
    return count


class FileDisk:
    """The :class:`~kraftlog.storage.disk.Disk` of a real process: files under ``root``.

    ``FileDisk(root, log=None, metadata_prefix="metadata/", *, shadow=False)``: ``root`` is created if
    missing and locked (``<root>/.lock``, :class:`DirectoryLockedError` if held); ``log`` receives one
    line (str) per recovery event (a torn tail truncated at load); log files under ``metadata_prefix``
    hold metadata records, other log files RecordBatch items (see the module docstring for formats, path
    rules and durability). ``shadow``: keep the shadow of every log file's fsynced state under
    ``<root>/.kraftlog-shadow`` for :func:`restore_fsynced` (chaos mode; module docstring); off, nothing
    of it is read or written. A shadow that does not describe a file loaded raises
    :class:`ShadowStateError`. Times (``now_ms``) are ints in ms; only a metadata record's batch timestamp
    uses them. Sizes are bytes. OS errors (ENOSPC, EIO, ...) propagate as OSError (a failed append leaves
    the file as it was, best effort): the broker takes its log directory offline (DESIGN.md, "Faults a
    real deployment meets"); :meth:`set_full` injects ENOSPC.

    Beyond ``Disk``: :meth:`set_full`, :meth:`durable_length`, :meth:`unflushed_bytes`, :meth:`size_bytes`,
    :meth:`close` (also a context manager).
    """

    __slots__ = ("root", "metadata_prefix", "shadow", "_log", "_logs", "_lock_fd", "_tail_bytes", "_drops",
                 "_full_until")

    def __init__(self, root: str | os.PathLike, log: Callable[[str], None] | None = None,
                 metadata_prefix: str = METADATA_PREFIX, *, shadow: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.metadata_prefix = metadata_prefix
        self.shadow = bool(shadow)
        self._log = log
        self._logs: dict[str, _LogFile] = {}
        self._tail_bytes = 0  # the tail caches' bytes, all files
        #: what the recovery of each log file dropped at its first access, until :meth:`recover` takes it
        self._drops: dict[str, list[LoadDrop]] = {}
        #: monotonic time until which every write fails with ENOSPC (:meth:`set_full`); None: never
        self._full_until: float | None = None
        created = _make_dirs(self.root)
        for d in reversed(created):
            _fsync_dir(os.path.dirname(d))
        fd = os.open(os.path.join(self.root, LOCK_FILE), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
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

    def recover(self, path: str, now_ms: int) -> list[LoadDrop]:
        """Load and recover the log file ``path`` (if not yet loaded: the module docstring's recovery)
        and return what its recovery truncated, once (:class:`~kraftlog.storage.disk.LoadDrop`, its bytes
        and the number of batch-shaped frames in them); ``[]`` when nothing, when missing, or when
        already returned."""
        self._open(path, create=False)
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
        return _METADATA if path.startswith(self.metadata_prefix) else _BATCHES

    # ------------------------------------------------------------------ loading
    def _open(self, path: str, create: bool) -> _LogFile | None:
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
            created = _make_dirs(parent)
            shadow = None
            if self.shadow:  # before the file exists: a new file has no durable existence until fsync
                base = _shadow_base(self.root, path)
                _remove_shadow(base, state=False)
                _write_shadow_state(base, 0, None)
                shadow = _Shadow(base, 0, None, 0, [])
            fd = os.open(full, _OPEN_LOG | os.O_CREAT | os.O_EXCL, 0o644)
            f = self._logs[path] = _LogFile(fd, kind, [] if kind == _METADATA else None, [], 0, 0,
                                            _dirs_to_sync(parent, created), shadow)
            return f
        shadow = None
        try:
            total = os.fstat(fd).st_size
            if self.shadow:
                shadow = self._load_shadow(path, total)
            items, starts, valid, reason = _scan(fd, total, kind, path)
            if valid < total:
                dropped = _batches_in(fd, valid, total)
                if shadow is not None:
                    self._save_truncated(shadow, fd, valid)
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
        f = self._logs[path] = _LogFile(fd, kind, items, starts, valid, valid, [], shadow)
        return f

    # ------------------------------------------------------------------ shadow
    def _load_shadow(self, path: str, total: int) -> _Shadow:
        """The shadow of the existing log file ``path`` of ``total`` bytes: read from its state and chunks,
        or, with no state, a new one that takes the file as durable as it is. Leftovers (chunks of
        another generation, ``*.part``) are removed. ShadowStateError when the file is shorter than the
        shadow's start."""
        base = _shadow_base(self.root, path)
        state = _read_shadow_state(base)
        if state is None:
            _write_shadow_state(base, 0, total)
            return _Shadow(base, 0, total, total, [])
        gen, durable = state
        chunks, parts = _shadow_files(base)
        mine = sorted((start, full) for g, start, full in chunks if g == gen and durable is not None)
        kept = {full for _start, full in mine}
        for full in parts + [c[2] for c in chunks if c[2] not in kept]:
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass
        if durable is None:
            return _Shadow(base, gen, None, 0, [])
        start = mine[0][0] if mine else durable
        if total < start:
            raise ShadowStateError(
                f"{path}: {total} bytes, shorter than its shadow's start {start} (durable {durable} bytes): the "
                f"file was changed without the shadow; remove {os.path.join(self.root, SHADOW_DIR)} to drop it")
        return _Shadow(base, gen, durable, start, [m[1] for m in mine])

    @staticmethod
    def _save_truncated(shadow: _Shadow, fd: int, size: int) -> None:
        """Before an ftruncate of a log file to ``size`` bytes: when that cuts into its fsynced content
        below the shadow's start, copy the current bytes ``[size, start)`` (still the fsynced ones) into a
        chunk, so :func:`restore_fsynced` can undo the truncation."""
        if shadow.durable is None or size >= shadow.start:
            return
        chunk = f"{shadow.base}.{shadow.gen}.{size:020d}{_CHUNK_SUFFIX}"
        part = chunk + _PART_SUFFIX
        out = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            _copy_range(fd, size, shadow.start - size, out)
        finally:
            os.close(out)
        os.replace(part, chunk)
        shadow.chunks.append(chunk)
        shadow.start = size

    @staticmethod
    def _synced(shadow: _Shadow, size: int) -> None:
        """After fsync(2) of a log file of ``size`` bytes: the shadow's next generation says ``durable=size``
        (written first), then the chunks of the previous one go."""
        if shadow.durable == size and not shadow.chunks:
            return
        old = shadow.chunks
        shadow.gen += 1
        _write_shadow_state(shadow.base, shadow.gen, size)
        for full in old:
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass
        shadow.durable = shadow.start = size
        shadow.chunks = []

    def _forget_shadow(self, path: str) -> None:
        """After a log file was deleted: remove its shadow files, and the shadow directories that left
        empty (best effort)."""
        base = _shadow_base(self.root, path)
        _remove_shadow(base, state=True)
        top = os.path.join(self.root, SHADOW_DIR)
        d = os.path.dirname(base)
        while d != top and len(d) > len(top):
            try:
                os.rmdir(d)
            except OSError:
                break
            d = os.path.dirname(d)

    # ------------------------------------------------------------------ log files
    def append(self, path: str, item: object, now_ms: int) -> None:
        """Append ``item`` to the log file ``path`` (created, with its directories, if missing): one
        write(2) of its v2 batch bytes, in the page cache until :meth:`fsync`.

        ``item`` must be a RecordBatch for a partition segment, a metadata record under the metadata
        prefix (TypeError otherwise, before anything is written or created). ValueError for a path that
        is not a log file. On an OSError mid-write the file is cut back to its previous length (best
        effort) and the error re-raised."""
        self.append_many(path, (item,), now_ms)

    def append_many(self, path: str, items: list, now_ms: int) -> None:
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
                self._encode(kind, item, 0, now_ms)
            f = self._open(path, create=True)
        chunks = [self._encode(f.kind, item, f.count() + i, now_ms) for i, item in enumerate(items)]
        size = f.size
        try:
            _write_all(f.fd, b"".join(chunks))
        except BaseException:
            try:
                os.ftruncate(f.fd, size)
            except OSError:
                pass
            raise
        for item, chunk in zip(items, chunks):
            if f.items is not None:
                f.items.append(item)
            f.starts.append(size)
            size += len(chunk)
        f.size = size
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

    @staticmethod
    def _encode(kind: int, item: object, index: int, now_ms: int) -> bytes:
        if kind == _BATCHES:
            if not isinstance(item, RecordBatch):
                raise TypeError(f"a partition log holds RecordBatch items, not {type(item).__name__}")
            return item.data  # an encoded batch's own bytes, verbatim
        if type(item) not in METADATA_RECORD_TYPES:
            raise TypeError(f"the metadata log holds metadata records, not {type(item).__name__}")
        value = encode_metadata_record(item)
        return encode_batches((RecordBatch(index, _METADATA_LEADER_EPOCH, (Record(now_ms, None, value),)),))

    def truncate(self, path: str, length: int, now_ms: int) -> None:
        """Keep the first ``length`` items of ``path``: ftruncate(2) to the byte position of item
        ``length`` (Kafka's ``LogSegment.truncateTo``); not durable until :meth:`fsync`. No-op on a missing
        file or when ``length`` >= its item count; ValueError for a negative ``length``. With ``shadow``, the
        fsynced bytes it cuts below the shadow's start are first copied into a chunk (module docstring)."""
        if length < 0:
            raise ValueError(f"negative truncate length {length}")
        f = self._open(path, create=False)
        if f is None or length >= f.count():
            return
        size = f.starts[length]
        if f.shadow is not None:
            self._save_truncated(f.shadow, f.fd, size)
        if f.tail:
            self._drop_tail(f)
        os.ftruncate(f.fd, size)
        if f.items is not None:
            del f.items[length:]
        del f.starts[length:]
        f.size = size
        if f.durable > size:
            f.durable = size

    def read_range(self, path: str, start: int, stop: int) -> list:
        """Items ``start`` .. ``stop - 1`` of the log file ``path`` (fewer past its end, ``[]`` when missing).

        For a partition segment: ONE ``pread(2)`` of the byte range the offset index gives for those
        items, split into encoded RecordBatch objects without decoding their records or re-checking
        their CRC (checked when the file was loaded or written); items in the tail cache (module
        docstring) are returned from it, without reading. For the metadata log: a slice of its
        records. The first access loads and recovers the file (module docstring)."""
        f = self._open(path, create=False)
        if f is None:
            return []
        if f.items is not None:
            return f.items[start:stop]
        return self._batches_between(f, start, min(stop, f.count()))

    @staticmethod
    def _batches_between(f: _LogFile, start: int, stop: int) -> list:
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

    def scan(self, path: str) -> Iterator:
        """Iterate over the items of the log file ``path`` in order, reading a partition segment in
        chunks of about 1 MiB (bounded memory); empty when missing. Do not change the file meanwhile."""
        f = self._open(path, create=False)
        if f is None:
            return iter(())
        if f.items is not None:
            return iter(f.items)
        return self._scan_segment(f)

    def _scan_segment(self, f: _LogFile) -> Iterator:
        starts = f.starts
        n = len(starts)
        i = 0
        while i < n:
            j = i + 1
            while j < n and starts[j] - starts[i] < _SCAN_CHUNK:
                j += 1
            yield from self._batches_between(f, i, j)
            i = j

    def read(self, path: str) -> list:
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
        becomes its length. No-op for a missing file or a value file (already durable). With ``shadow``, the
        shadow then records that length as the fsynced state and drops its saved bytes."""
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
                _fsync_dir(d)
            f.sync_dirs = []
        f.durable = f.size
        if f.shadow is not None:
            self._synced(f.shadow, f.size)

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
        _atomic_write(full, data)

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
        of the directory that changed. No-op if missing. With ``shadow``, a log file's shadow is removed
        after that (the deletion is durable: nothing to restore)."""
        full = self._full(path)
        f = self._logs.pop(path, None)
        if f is not None:
            self._drop_tail(f)
            os.close(f.fd)
        try:
            os.unlink(full)
        except FileNotFoundError:
            if self.shadow and path.endswith(LOG_SUFFIX):
                self._forget_shadow(path)
            return
        parent = os.path.dirname(full)
        if parent != self.root:
            try:
                os.rmdir(parent)  # the last file of a partition directory: the directory goes too
            except OSError:
                pass  # not empty (or gone): keep it
            else:
                parent = os.path.dirname(parent)
        _fsync_dir(parent)
        if self.shadow and path.endswith(LOG_SUFFIX):
            self._forget_shadow(path)

    def rename_dir(self, src: str, dst: str, now_ms: int) -> None:
        """Move the directory ``src`` (every file under it) to ``dst``: its open log files are closed
        (a later access recovers them under the new name), ``rename(2)``, then fsync(2) of the parent
        directories that changed, so the move is durable at once (Kafka's ``Utils.atomicMoveWithFallback``
        of a stray log dir, parent flushed). The files' contents keep their durability; with ``shadow`` the
        shadow directory moves along. FileExistsError when ``dst`` exists; no-op when ``src`` does not."""
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
        created = _make_dirs(parent)
        os.rename(src_full, dst_full)
        if self.shadow:
            shadow_src = _shadow_base(self.root, src)
            if os.path.isdir(shadow_src):
                _make_dirs(os.path.dirname(_shadow_base(self.root, dst)))
                os.rename(shadow_src, _shadow_base(self.root, dst))
        for d in dict.fromkeys([os.path.dirname(src_full)] + _dirs_to_sync(parent, created)):
            _fsync_dir(d)

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

    def __enter__(self) -> "FileDisk":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._lock_fd is None else f"{len(self._logs)} open log files"
        return f"FileDisk({self.root!r}, {state})"


# ------------------------------------------------------------------------------ restoring a crash
def restore_fsynced(root: str | os.PathLike) -> list[str]:
    """Give a killed node's files back as a machine crash that lost the page cache would leave them: every
    log file a ``shadow=True`` FileDisk had under ``root`` gets its content at its last fsync (SimDisk's
    ``crash("unflushed")`` with ``writeback_ms=None``), then the shadow is removed.

    Per log file with a shadow state (module docstring, "Shadow"): ``absent`` (created, never fsynced):
    the file is removed (and the directories that left empty, up to the root); ``durable=D``: the file is
    cut to the shadow's start ``s`` and the chunks ``[s, D)`` appended (an unsynced truncation undone),
    or, without chunks, cut to ``D`` bytes (unsynced appends lost), then fsync(2)ed. A file with no
    shadow state (a value file, durable at once; a log file found, not written, by the FileDisk) and a
    shadowed file that no longer exists (deleted: durable at once) are left as they are. Everything is
    checked before anything is changed.

    Run it after the node's process died (the root's ``.lock`` is held meanwhile, so a FileDisk opened
    concurrently fails with DirectoryLockedError). Afterwards ``FileDisk(root)`` opens and recovers
    normally. Returns one line per file changed, sorted by path, e.g.
    ``data/t-0/00000000000000000000.log: 1234 -> 1000 bytes (appends lost)``,
    ``...: 900 -> 1000 bytes (truncate undone, 300 bytes restored from byte 700)``,
    ``...: never fsynced, removed (620 bytes)``; ``[]`` when nothing changed (or no shadow).

    Raises :class:`DirectoryLockedError` if a live process (or an open FileDisk) holds the root's lock,
    FileNotFoundError if ``root`` is not a directory, :class:`ShadowStateError` if the shadow does not
    describe the files (nothing changed then), OSError from the file system.
    """
    root = os.path.abspath(os.fspath(root))
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root} is not a directory")
    lock = os.path.join(root, LOCK_FILE)
    lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DirectoryLockedError(
                f"failed to acquire lock on {lock}: a live process or an open FileDisk is using this "
                "directory; kill it before restoring its fsynced state") from None
        top = os.path.join(root, SHADOW_DIR)
        if not os.path.isdir(top):
            return []
        plans = _plan_restore(root, top)
        lines = []
        synced_dirs: set[str] = set()
        for path, full, size, durable, start, chunks in plans:
            if durable is None:
                os.unlink(full)
                d = os.path.dirname(full)
                while d != root:
                    try:
                        os.rmdir(d)
                    except OSError:
                        break
                    d = os.path.dirname(d)
                synced_dirs.add(d)
                lines.append(f"{path}: never fsynced, removed ({size} bytes)")
                continue
            fd = os.open(full, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
            try:
                os.ftruncate(fd, start)
                for chunk in chunks:
                    with open(chunk, "rb") as fh:
                        while data := fh.read(_SCAN_CHUNK):
                            _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if chunks:
                what = f"truncate undone, {durable - start} bytes restored from byte {start}"
            else:
                what = "appends lost"
            lines.append(f"{path}: {size} -> {durable} bytes ({what})")
        # The removals durable: the deepest surviving directory of each (a later removal may have taken
        # the directory an earlier one left).
        for d in {_existing_ancestor(d, root) for d in synced_dirs}:
            _fsync_dir(d)
        shutil.rmtree(top)
        return lines
    finally:
        os.close(lock_fd)  # releases the flock


def _existing_ancestor(d: str, root: str) -> str:
    """``d`` or its closest ancestor that is still a directory (``root`` at the latest)."""
    while d != root and not os.path.isdir(d):
        d = os.path.dirname(d)
    return d


def _plan_restore(root: str, top: str) -> list[tuple[str, str, int, int | None, int, list[str]]]:
    """What :func:`restore_fsynced` will do, checked: one (path, OS path, current size in bytes, fsynced
    length in bytes or None to remove, byte to cut at, chunk OS paths to append in order) per file that
    changes, sorted by path. ShadowStateError for a shadow that does not describe its file."""
    plans = []
    for dirpath, _dirnames, filenames in os.walk(top):
        for name in filenames:
            if not name.endswith(_STATE_SUFFIX):
                continue
            base = os.path.join(dirpath, name[:-len(_STATE_SUFFIX)])
            path = os.path.relpath(base, top).replace(os.sep, "/")
            parts = path.split("/")
            if not path.endswith(LOG_SUFFIX) or any(p in ("", ".", "..") for p in parts):
                raise ShadowStateError(f"{base}{_STATE_SUFFIX}: the shadow of {path!r}, which is no log path")
            gen, durable = _read_shadow_state(base)  # type: ignore[misc]  (the state file exists)
            full = os.path.join(root, *parts)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue  # deleted since (durable at once), or never created
            if not stat.S_ISREG(st.st_mode):
                raise ShadowStateError(f"{path}: not a regular file, yet it has a shadow")
            size = st.st_size
            if durable is None:
                plans.append((path, full, size, None, 0, []))
                continue
            chunks = sorted((start, full_c) for g, start, full_c in _shadow_files(base)[0] if g == gen)
            start = chunks[0][0] if chunks else durable
            for i, (c_start, c_full) in enumerate(chunks):
                c_end = chunks[i + 1][0] if i + 1 < len(chunks) else durable
                c_size = os.stat(c_full).st_size
                if c_size != c_end - c_start:
                    raise ShadowStateError(f"{c_full}: {c_size} bytes where [{c_start}, {c_end}) of the "
                                           f"fsynced {path} ({durable} bytes) was expected")
            if size < start:
                raise ShadowStateError(
                    f"{path}: {size} bytes, shorter than its shadow's start {start} (durable {durable} bytes): "
                    "the file was changed without the shadow")
            if chunks or size != durable:
                plans.append((path, full, size, durable, start, [c[1] for c in chunks]))
    plans.sort()
    return plans


# ------------------------------------------------------------------------------ flipping bytes
class _BatchSpan:
    """A batch of a segment file as :func:`kraftlog.scenario.corrupt_target` sees it: its offsets
    (from its header) and its byte range."""

    __slots__ = ("base_offset", "next_offset", "start", "end")

    def __init__(self, base_offset: int, next_offset: int, start: int, end: int) -> None:
        self.base_offset, self.next_offset, self.start, self.end = base_offset, next_offset, start, end


_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POS = 23  # after baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes


def segment_batches(path: str | os.PathLike) -> list[_BatchSpan]:
    """The batches of a partition segment file (Kafka's ``.log``, v2 batches) read from their headers only:
    offsets and byte ranges, up to the first frame that is not a whole batch. For fault injection and
    tools; no CRC is checked."""
    spans = []
    with open(path, "rb") as fh:
        data = fh.read()
    pos = 0
    while len(data) - pos >= _RECORDS_COUNT_POS + 4:
        base, length = _LOG_HEAD.unpack_from(data, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < _MIN_BATCH_LENGTH or end > len(data):
            break
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + _LAST_OFFSET_DELTA_POS)
        spans.append(_BatchSpan(base, base + delta + 1, pos, end))
        pos = end
    return spans


def corrupt_segment(path: str | os.PathLike, span: _BatchSpan, nbytes: int, rng) -> list[int]:
    """Flip ``nbytes`` bytes (each XORed with 0xFF) at positions drawn from ``rng`` (a seeded
    ``random.Random``) inside the CRC-32C-covered part of the batch ``span`` of the segment file ``path``
    (attributes to the end of the batch), in place: the next load finds the batch's CRC wrong, as a
    flipped bit on the medium. Bytes before the CRC (base offset, length, partition leader epoch) are
    left alone: Kafka's v2 CRC does not cover them. Returns the byte positions flipped (sorted). The
    broker must be stopped (its FileDisk holds the file's lock otherwise: DirectoryLockedError is not
    checked here, the caller stops the node first)."""
    first = span.start + _CRC_START
    count = max(1, min(nbytes, span.end - first))
    positions = sorted(rng.sample(range(first, span.end), count))
    fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        for p in positions:
            (b,) = os.pread(fd, 1, p)
            os.pwrite(fd, bytes((b ^ 0xFF,)), p)
        os.fsync(fd)
    finally:
        os.close(fd)
    return positions


# ------------------------------------------------------------------------------ meta.properties
def write_meta_properties(root: str | os.PathLike, props: Mapping[str, str]) -> None:
    """Atomically write ``<root>/meta.properties``, Kafka's node identity file (``MetaProperties``, v1 as
    KRaft writes it): Java properties text, ``version=1`` first, then ``cluster.id``, ``node.id``, then the
    caller's other keys in its order. ``props`` must hold ``cluster.id`` and ``node.id``; a ``version``, if
    given, must be ``1`` (ValueError otherwise). Values are str()-ed. The write is tmp + fsync + rename +
    directory fsync; ``root`` is created if missing."""
    root = os.path.abspath(os.fspath(root))
    _atomic_write(os.path.join(root, META_PROPERTIES), encode_properties(props).encode("latin-1"))


def read_meta_properties(root: str | os.PathLike) -> dict[str, str] | None:
    """The properties of ``<root>/meta.properties`` (every key, ``version`` included), or None when the
    file is missing. Raises ValueError when it is not properties text or lacks ``version`` (Kafka refuses
    to start on an unreadable meta.properties); the caller checks ``cluster.id`` / ``node.id``."""
    path = os.path.join(os.path.abspath(os.fspath(root)), META_PROPERTIES)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    try:
        return decode_properties(data.decode("latin-1"))  # java.util.Properties.load reads ISO 8859-1
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
