"""OS file helpers of the file-backed disk (:mod:`kraftlog.net.disk`, :mod:`kraftlog.net.shadow`): whole
writes, directory fsyncs, directories made and the ones to fsync for them, Kafka's atomic checkpoint write.

Durability as Kafka's ``Utils`` and ``CheckpointFile`` give it; see docs/DESIGN.md, "The file-backed disk".
"""

from __future__ import annotations

import os

__all__ = ["O_CLOEXEC", "TMP_SUFFIX", "write_all", "fsync_dir", "make_dirs", "dirs_to_sync", "atomic_write"]

#: ``os.O_CLOEXEC`` where the platform has it, else 0.
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
#: Suffix of the temporary file of an atomic write (Kafka's checkpoint ``.tmp``); reserved.
TMP_SUFFIX = ".tmp"


def write_all(fd: int, data: bytes) -> None:
    """write(2) until every byte is written (a regular file may take fewer bytes per call)."""
    view = memoryview(data)
    done = os.write(fd, view)
    while done < len(view):
        done += os.write(fd, view[done:])


def fsync_dir(path: str) -> None:
    """fsync(2) a directory, making the entries created, renamed or removed in it durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str) -> list[str]:
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


def dirs_to_sync(parent: str, created: list[str]) -> list[str]:
    """The directories to fsync, innermost first, so that a file just created in ``parent`` (after
    ``created`` were made for it) is reachable after a crash: ``parent`` and the parent of each new one."""
    out = [parent]
    for d in reversed(created):
        out.append(os.path.dirname(d))
    return out


def atomic_write(full: str, data: bytes, mode: int = 0o644) -> None:
    """Kafka's checkpoint write: ``full.tmp`` written and fsynced, renamed over ``full``, directory fsynced
    (and the directories created for it). ``mode``: the file's permissions (0o600 for a file holding a password:
    set before a byte is written)."""
    parent = os.path.dirname(full)
    created = make_dirs(parent)
    tmp = full + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # an old tmp file keeps its mode through O_CREAT, and the umask narrows a new one
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, full)
    for d in dirs_to_sync(parent, created):
        fsync_dir(d)
