"""Loading a partition log from its directory: Kafka's ``LogLoader``.

:func:`load_segments` finds the segment files of a directory, completes or discards a log cleaner's swap that a
crash interrupted, checks each segment (:meth:`Disk.recover`) and reads its batch headers into a
:class:`~kraftlog.storage.segment.LogSegment`, rebuilding the epochs the batches carry and the idempotent
producers' state from them. The rules (which segments are checked batch by batch, what a gap or a torn batch
drops) are in :class:`~kraftlog.storage.log.PartitionLog`'s docstring; the swap rules are Kafka's:

* ``<base>.cleaned.log`` (Kafka's ``.log.cleaned``): a cleaning that had not finished writing its segment; it is
  deleted.
* ``<base>.swap.log`` (Kafka's ``.log.swap``): a cleaned segment, complete and fsynced, that was to replace the
  segments from ``base`` up to its last offset; the swap is completed: those segments (and their checksum and
  index files, which described the old contents) are deleted and the swap file takes the name ``<base>.log``.
* ``<base>.deleted.log`` (Kafka's ``.log.deleted``): a segment a swap replaced, waiting for
  ``file.delete.delay.ms``; it is deleted.

kraftlog's disks tell a log file by its ``.log`` suffix, hence the suffix after Kafka's marker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

from ..protocol.records import RecordBatch
from .disk import Disk, LoadDrop
from .index import index_file, time_index_file
from .producer_state import ProducerStateManager
from .segment import (
    LogConfig,
    LogSegment,
    base_of,
    checksum_file,
    parse_checksum_file,
    segment_file,
    segment_paths,
)

__all__ = ["LoadedLog", "load_segments", "cleaned_file", "swap_file", "deleted_file", "complete_swaps"]

#: The suffixes of a cleaning's output file while written and once complete (Kafka's ``.cleaned``, ``.swap``).
CLEANED_SUFFIX = ".cleaned.log"
SWAP_SUFFIX = ".swap.log"
DELETED_SUFFIX = ".deleted.log"


def cleaned_file(base_offset: int) -> str:
    """The file a cleaning writes the segment starting at ``base_offset`` into (Kafka's ``.log.cleaned``)."""
    return f"{base_offset:020d}{CLEANED_SUFFIX}"


def swap_file(base_offset: int) -> str:
    """The name of a complete cleaned segment that is replacing the segments from ``base_offset``."""
    return f"{base_offset:020d}{SWAP_SUFFIX}"


def deleted_file(base_offset: int) -> str:
    """The name a segment a swap replaced waits under for ``file.delete.delay.ms`` (Kafka's ``.log.deleted``)."""
    return f"{base_offset:020d}{DELETED_SUFFIX}"


def _marker_base(name: str, suffix: str) -> int | None:
    if len(name) != 20 + len(suffix) or not name.endswith(suffix) or not name[:20].isdigit():
        return None
    return int(name[:20])


def delete_segment_files(disk: Disk, directory: str, base: int, now_ms: int, log_file: bool = True) -> None:
    """Delete the segment ``base``'s checksum and index files and, with ``log_file``, the segment file."""
    names = [checksum_file, index_file, time_index_file] + ([segment_file] if log_file else [])
    for name in names:
        path = f"{directory}/{name(base)}"
        if disk.exists(path):
            disk.delete(path, now_ms)


def complete_swaps(disk: Disk, directory: str, now_ms: int) -> list[str]:
    """Kafka's ``LogLoader`` handling of a cleaning a crash interrupted: delete every ``.cleaned.log`` and
    ``.deleted.log`` file, complete every ``.swap.log`` file (module docstring). Returns a line per swap completed.
    OSError propagates."""
    prefix = directory.rstrip("/") + "/"
    done = []
    for path in disk.list(prefix):
        name = path[len(prefix):]
        if _marker_base(name, CLEANED_SUFFIX) is not None or _marker_base(name, DELETED_SUFFIX) is not None:
            disk.delete(path, now_ms)
            continue
        base = _marker_base(name, SWAP_SUFFIX)
        if base is None:
            continue
        disk.recover(path, now_ms, True)
        headers = list(cast(Iterator[RecordBatch], disk.scan_headers(path)))
        end = headers[-1].next_offset if headers else base
        replaced = [p for p in segment_paths(disk, directory)
                    if base <= (base_of(p[len(prefix):]) or 0) < max(end, base + 1)]
        for old in replaced:
            delete_segment_files(disk, directory, base_of(old[len(prefix):]) or 0, now_ms)
        delete_segment_files(disk, directory, base, now_ms, log_file=False)
        disk.rename(path, f"{prefix}{segment_file(base)}", now_ms)
        done.append(f"completed the cleaner's swap of {len(replaced)} segment(s) from offset {base} ({name})")
    return done


def _assign_derived(epochs: list[int], starts: list[int], e: int, base_offset: int) -> None:
    """Fold one batch's (epoch, base offset) into derived epoch entries (Kafka's assign rule)."""
    if e < 0 or (epochs and e == epochs[-1] and base_offset >= starts[-1]):
        return
    while epochs and (epochs[-1] >= e or starts[-1] >= base_offset):
        epochs.pop()
        starts.pop()
    epochs.append(e)
    starts.append(base_offset)


@dataclass(slots=True)
class LoadedLog:
    """What :func:`load_segments` found: the ``segments`` (oldest first, never empty), the leader ``epochs`` the
    batches carry as (epoch, start offset) entries, the ``producer_state`` the batches give, what was dropped
    (``dropped``), the batches checked one by one (``batches_recovered``) or framed by their lengths only
    (``batches_trusted``), the segments whose checksum did not match after a clean shutdown
    (``checksum_mismatches``), the sealed segments left unread (``segments_unread``) and the swaps completed
    (``swaps``, one line each)."""

    segments: list[LogSegment] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    producer_state: ProducerStateManager = field(default_factory=ProducerStateManager)
    dropped: list[LoadDrop] = field(default_factory=list)
    batches_recovered: int = 0
    batches_trusted: int = 0
    checksum_mismatches: list[str] = field(default_factory=list)
    segments_unread: int = 0
    swaps: list[str] = field(default_factory=list)


def load_segments(disk: Disk, directory: str, config: LogConfig, now_ms: int, log_start_offset: int,
                  recovery_point: int, clean_shutdown: bool, draw_jitter: Callable[[], int],
                  first_dirty_offset: int = 0) -> LoadedLog:
    """Load the segments of ``directory`` (Kafka's ``LogLoader.load``; the rules: PartitionLog's docstring).

    Offsets must follow on from batch to batch, except where the log cleaner may have removed batches: when
    ``config.compact`` or below ``first_dirty_offset`` (the cleaner-offset-checkpoint), a batch may start
    after the previous one's end and a batch may hold no record (a producer's last batch the cleaner kept
    empty). ``draw_jitter()`` gives each new segment's jitter. OSError propagates."""
    out = LoadedLog()
    out.swaps = complete_swaps(disk, directory, now_ms)
    epochs: list[int] = []
    epoch_starts: list[int] = []
    producer_state = out.producer_state
    segments = out.segments
    paths = segment_paths(disk, directory)
    path_bases = [base_of(p.rpartition("/")[2]) or 0 for p in paths]

    def may_skip(expected: int) -> bool:  # the cleaner may have removed offsets from ``expected`` on
        return config.compact or expected < first_dirty_offset

    # Segments retention deleted before the restart whose files were still waiting for file.delete.delay.ms:
    # wholly below the checkpointed log start offset (Kafka removes its .deleted files at load).
    while len(paths) > 1 and path_bases[1] <= log_start_offset:
        disk.delete(paths.pop(0), now_ms)
        path_bases.pop(0)
    expected: int | None = None
    broken = False
    for k, path in enumerate(paths):
        if broken:
            rest = list(disk.scan(path))
            size = sum(getattr(b, "size_bytes", 0) for b in rest)
            if rest:
                out.dropped.append(LoadDrop(path, 0, size, len(rest), "a segment after a truncated one"))
            disk.delete(path, now_ms)
            continue
        base = base_of(path.rpartition("/")[2])
        assert base is not None
        follows = expected is None or base == expected or (base > expected and may_skip(expected))
        if clean_shutdown:
            # Kafka skips recovery after a clean shutdown; kraftlog checks each segment with one CRC-32C pass
            # against the checksum written when it rolled or at the shutdown. A mismatch (or no checksum)
            # recovers it batch by batch; a mismatch also makes the shutdown count as unclean (DESIGN.md,
            # storage faults).
            stored = parse_checksum_file(disk.read_value(f"{directory}/{checksum_file(base)}"))
            verify = stored is None or stored[0] != disk.checksum(path)
            if stored is not None and verify:
                out.checksum_mismatches.append(path)
            if stored is not None and not verify and k + 1 < len(paths) and follows:
                # A sealed segment that matched: loaded from its index files, its batches read on first use.
                sealed = LogSegment.from_files(disk, directory, base, path_bases[k + 1], stored[1], now_ms,
                                               draw_jitter(), config)
                if sealed is not None:
                    segments.append(sealed)
                    expected = sealed.next_offset
                    out.segments_unread += 1
                    continue
        else:
            # Kafka's LogLoader.recoverLog: after an unclean shutdown the segments holding offsets at or
            # above the recovery point are recovered batch by batch, the ones below it trusted.
            verify = k + 1 == len(paths) or path_bases[k + 1] > recovery_point
        drops = disk.recover(path, now_ms, verify)
        out.dropped.extend(drops)
        if not follows:
            out.dropped.append(LoadDrop(path, 0, 0, 0, f"segment base {base} where offset {expected} was expected"))
            broken = True
            disk.delete(path, now_ms)
            continue
        seg = LogSegment(directory, base, now_ms, draw_jitter(), config)
        position = 0
        torn = None
        for b in cast(Iterator[RecordBatch], disk.scan_headers(path)):  # header fields only
            gap = b.base_offset != seg.next_offset
            if (gap and not (b.base_offset > seg.next_offset and may_skip(seg.next_offset))) or b.record_count < 0 \
                    or b.last_offset_delta < 0 or (b.record_count == 0 and not may_skip(b.base_offset)):
                torn = (f"offset gap: the batch at byte {position} starts at offset {b.base_offset} where "
                        f"{seg.next_offset} was expected" if gap
                        else f"the batch at byte {position} holds {b.record_count} records")
                break
            seg.index(b, b.max_timestamp, now_ms, config.index_interval_bytes)
            position += b.size_bytes
            _assign_derived(epochs, epoch_starts, b.partition_leader_epoch, b.base_offset)
            producer_state.update(b)
            if verify:
                out.batches_recovered += 1
            else:
                out.batches_trusted += 1
        if torn is not None:
            kept = len(seg.bases)
            rest_items = disk.read_range(path, kept, 2**62)
            end = position + sum(getattr(b, "size_bytes", 0) for b in rest_items)
            out.dropped.append(LoadDrop(path, position, end, len(rest_items), torn))
            disk.truncate(path, kept, now_ms)
            disk.fsync(path, now_ms)
            broken = True
        if drops:
            broken = True  # the disk cut this segment's tail: the segments after it cannot follow on
        segments.append(seg)
        expected = seg.next_offset
    if not segments:
        segments.append(LogSegment(directory, max(0, log_start_offset), now_ms, draw_jitter(), config))
    out.epochs = list(zip(epochs, epoch_starts, strict=True))
    return out
