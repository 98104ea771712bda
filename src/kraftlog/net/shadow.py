"""The chaos shadow of the file-backed disk: :class:`ShadowFileDisk` keeps, beside each log file, what it
takes to rebuild the file as of its last fsync, and :func:`restore_fsynced` rebuilds a killed node's files
from it, as a machine crash that lost the page cache would leave them (SimDisk's ``crash("unflushed")``
with ``writeback_ms=None``).

Chaos mode only (``kraftlog cluster up --chaos``, ``kraftlog chaos``, ``scenario run --real``): the
production :class:`~kraftlog.net.disk.FileDisk` never reads or writes a shadow. The shadow's layout,
what each operation records and when: docs/DESIGN.md, "The file-backed disk", "Shadow".
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
from collections.abc import Callable

from .disk import LOCK_FILE, LOG_SUFFIX, METADATA_PREFIX, SHADOW_DIR, DirectoryLockedError, FileDisk
from .files import O_CLOEXEC, fsync_dir, make_dirs, write_all
from .segment import SCAN_CHUNK

__all__ = ["ShadowFileDisk", "ShadowStateError", "restore_fsynced"]

# Shadow files: ``<s>.state`` and ``<s>.<gen>.<start>.chunk``, written as ``*.part`` and renamed.
_SHADOW_MAGIC = "kraftlog-shadow-1"
_STATE_SUFFIX = ".state"
_CHUNK_SUFFIX = ".chunk"
_PART_SUFFIX = ".part"


class ShadowStateError(ValueError):
    """The shadow of a root (``<root>/.kraftlog-shadow``) does not describe its files: a state file that
    cannot be parsed, chunks that do not cover ``[start, durable)`` contiguously, or a log file shorter
    than the shadow's start (changed by something other than a ShadowFileDisk). Nothing is
    restored; remove the shadow directory to treat the files as they are as durable."""


class _Shadow:
    """The shadow of one log file of a :class:`ShadowFileDisk` (docs/DESIGN.md, "Shadow").

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
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(part, full)


def _write_shadow_state(base: str, gen: int, durable: int | None) -> None:
    """Write ``<base>.state``: generation ``gen``, fsynced length ``durable`` bytes (None: absent)."""
    make_dirs(os.path.dirname(base))
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
    """Copy bytes ``[pos, pos + count)`` of ``src_fd`` to ``dst_fd`` in pieces of at most ``SCAN_CHUNK``
    bytes (bounded memory); OSError on a short read."""
    while count > 0:
        data = os.pread(src_fd, min(count, SCAN_CHUNK), pos)
        if not data:
            raise OSError(f"short read: {count} bytes missing at {pos}")
        write_all(dst_fd, data)
        pos += len(data)
        count -= len(data)


# ------------------------------------------------------------------------------ the shadowed FileDisk
class ShadowFileDisk(FileDisk):
    """A :class:`~kraftlog.net.disk.FileDisk` that keeps the shadow of every log file's fsynced state under
    ``<root>/.kraftlog-shadow`` (:data:`~kraftlog.net.disk.SHADOW_DIR`) for :func:`restore_fsynced`: chaos
    mode's disk (``kraftlog server --chaos``). Same arguments and behaviour as FileDisk; each hook records,
    before the change it protects, what :func:`restore_fsynced` needs (docs/DESIGN.md, "The file-backed
    disk", "Shadow"). Loading a log file whose shadow does not describe it raises
    :class:`ShadowStateError`. Only ShadowFileDisks may run on a root whose shadow :func:`restore_fsynced`
    will use: a plain FileDisk would change files behind it."""

    __slots__ = ("_shadows",)

    def __init__(self, root: str | os.PathLike[str], log: Callable[[str], None] | None = None,
                 metadata_prefix: str = METADATA_PREFIX, raft_metadata: bool = False) -> None:
        #: the shadow of each log file loaded or created (by Disk path)
        self._shadows: dict[str, _Shadow] = {}
        super().__init__(root, log, metadata_prefix, raft_metadata)

    # ------------------------------------------------------------------ hooks
    def _creating(self, path: str) -> None:
        """A new log file has no durable existence until its first fsync: its state says ``absent``
        (leftover chunks of the path removed), written before the file exists."""
        base = _shadow_base(self.root, path)
        _remove_shadow(base, state=False)
        _write_shadow_state(base, 0, None)
        self._shadows[path] = _Shadow(base, 0, None, 0, [])

    def _loaded(self, path: str, total: int) -> None:
        self._shadows[path] = self._load_shadow(path, total)

    def _truncating(self, path: str, fd: int, size: int) -> None:
        self._save_truncated(self._shadows[path], fd, size)

    def _fsynced(self, path: str, size: int) -> None:
        self._synced(self._shadows[path], size)

    def _deleted(self, path: str) -> None:
        """A deletion is durable at once: a log file's shadow goes with it."""
        if path.endswith(LOG_SUFFIX):
            self._shadows.pop(path, None)
            self._forget_shadow(path)

    def _file_renamed(self, src: str, dst: str, size: int) -> None:
        """The renamed file was fsynced whole: ``dst``'s shadow becomes "durable as it is" (``src``'s and the
        replaced file's shadows go)."""
        for path in (src, dst):
            self._shadows.pop(path, None)
            self._forget_shadow(path)
        base = _shadow_base(self.root, dst)
        make_dirs(os.path.dirname(base))
        _write_shadow_state(base, 0, size)
        self._shadows[dst] = _Shadow(base, 0, size, size, [])

    def _dir_renamed(self, src: str, dst: str) -> None:
        """The shadow directory of ``src`` moves along (its files were closed: a later access loads their
        shadows under the new name)."""
        for path in [p for p in self._shadows if p.startswith(src + "/")]:
            del self._shadows[path]
        shadow_src = _shadow_base(self.root, src)
        if os.path.isdir(shadow_src):
            make_dirs(os.path.dirname(_shadow_base(self.root, dst)))
            os.rename(shadow_src, _shadow_base(self.root, dst))

    def close(self) -> None:
        super().close()
        self._shadows.clear()

    # ------------------------------------------------------------------ the shadow's files
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
        out = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_CLOEXEC, 0o644)
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


# ------------------------------------------------------------------------------ restoring a crash
def restore_fsynced(root: str | os.PathLike[str]) -> list[str]:
    """Give a killed node's files back as a machine crash that lost the page cache would leave them: every
    log file a :class:`ShadowFileDisk` had under ``root`` gets its content at its last fsync (SimDisk's
    ``crash("unflushed")`` with ``writeback_ms=None``), then the shadow is removed.

    Per log file with a shadow state (docs/DESIGN.md, "Shadow"): ``absent`` (created, never fsynced):
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
    lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | O_CLOEXEC, 0o644)
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
            fd = os.open(full, os.O_RDWR | os.O_APPEND | O_CLOEXEC)
            try:
                os.ftruncate(fd, start)
                for chunk in chunks:
                    with open(chunk, "rb") as fh:
                        while data := fh.read(SCAN_CHUNK):
                            write_all(fd, data)
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
            fsync_dir(d)
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
    plans: list[tuple[str, str, int, int | None, int, list[str]]] = []
    for dirpath, _dirnames, filenames in os.walk(top):
        for name in filenames:
            if not name.endswith(_STATE_SUFFIX):
                continue
            base = os.path.join(dirpath, name[:-len(_STATE_SUFFIX)])
            path = os.path.relpath(base, top).replace(os.sep, "/")
            parts = path.split("/")
            if not path.endswith(LOG_SUFFIX) or any(p in ("", ".", "..") for p in parts):
                raise ShadowStateError(f"{base}{_STATE_SUFFIX}: the shadow of {path!r}, which is no log path")
            state = _read_shadow_state(base)
            assert state is not None  # os.walk found its state file, in a root locked by this process
            gen, durable = state
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

