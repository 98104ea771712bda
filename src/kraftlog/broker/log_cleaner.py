"""The broker's log cleaner: Kafka's ``LogCleaner`` (one cleaner thread) and ``LogCleanerManager`` over the logs
of the log directory, run by the node between requests in slices (the cleaning itself:
:mod:`kraftlog.storage.cleaner`).

When no cleaning is under way it looks for the filthiest compacted log every ``log.cleaner.backoff.ms``
(Kafka's ``CleanerThread.doWork``: ``tryCleanFilthiestLog``, else ``pause(backOffMs)``); a cleaning runs one slice
of ``kraftlog.log.cleaner.slice.bytes`` per tick, the next slice 1 ms later, or later when
``log.cleaner.io.max.bytes.per.second`` throttles it (Kafka's ``Throttler``). When a cleaning ends the first
dirty offsets are written to ``cleaner-offset-checkpoint`` (Kafka's ``doneCleaning``); they are also written with
the recovery points and at shutdown, and read at load. ``log.cleaner.enable=false`` runs nothing (compacted logs
then grow, as in Kafka). An OSError while cleaning takes the log directory offline (Kafka's cleaner reports a
``KafkaStorageException`` to the ``LogDirFailureChannel``). Any other error while cleaning a log (a batch whose
records do not decode: damage below the recovery point that the load did not check) marks the partition
uncleanable, as Kafka's ``LogCleaningException`` does: it is not cleaned again until the broker restarts, and the
node goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..metadata import config as cfg
from ..storage.cleaner import CleanerStats, Cleaning, OffsetMap, grab_filthiest, log_to_clean
from ..storage.disk import Disk
from ..storage.log import PartitionLog

__all__ = ["LogCleaner", "CleanerSettings"]


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """The cleaner's static broker configs (Kafka's ``CleanerConfig``): ``enable`` (``log.cleaner.enable``),
    ``backoff_ms`` (``log.cleaner.backoff.ms``), ``dedupe_buffer_size`` (bytes, ``log.cleaner.dedupe.buffer.size``),
    ``load_factor`` (``log.cleaner.io.buffer.load.factor``), ``max_io_bytes_per_second``
    (``log.cleaner.io.max.bytes.per.second``) and ``slice_bytes`` (``kraftlog.log.cleaner.slice.bytes``)."""

    enable: bool = True
    backoff_ms: int = 15_000
    dedupe_buffer_size: int = 128 << 20
    load_factor: float = 0.9
    max_io_bytes_per_second: float = 1.7976931348623157e308
    slice_bytes: int = 65_536

    @classmethod
    def from_static(cls, static: Mapping[str, str]) -> CleanerSettings:
        """From a broker's static configs (Kafka's defaults for what they do not set)."""
        def get(name: str) -> str:
            return cfg.lookup(name, static)
        return cls(cfg.as_bool(get("log.cleaner.enable")), int(get("log.cleaner.backoff.ms")),
                   int(get("log.cleaner.dedupe.buffer.size")), float(get("log.cleaner.io.buffer.load.factor")),
                   float(get("log.cleaner.io.max.bytes.per.second")), int(get("kraftlog.log.cleaner.slice.bytes")))


class LogCleaner:
    """The cleaner of one log directory's logs (module docstring). ``disk``: the directory's disk; ``logs``: the
    log manager's live mapping (topic, partition) -> log; ``fail(now_ms, exc, what)``: takes the directory offline;
    ``note``: a line for the node's log; ``checkpoint(now_ms)``: writes ``cleaner-offset-checkpoint``;
    ``files_pending()``: tells the log manager that a swap left segment files waiting for ``file.delete.delay.ms``.

    Counters (Kafka's cleaner metrics): ``cleanings`` done, ``aborted`` cleanings, ``last_stats`` of the last one
    done, its ``buffer_utilization`` (map entries over slots) and ``compaction_delay_ms`` (how far past
    ``max.compaction.lag.ms`` its log was), ``last_run_ms`` (when a cleaning last ended, -1 before), the bytes
    read/written by all cleanings, and ``uncleanable`` (partition -> why it is not cleaned any more)."""

    def __init__(self, disk: Disk, logs: Mapping[tuple[str, int], PartitionLog], settings: CleanerSettings,
                 fail: Callable[[int, OSError, str], None], note: Callable[[str], None],
                 checkpoint: Callable[[int], None], files_pending: Callable[[], None] = lambda: None) -> None:
        self.disk = disk
        self.logs = logs
        self.settings = settings
        self._fail = fail
        self._note = note
        self._checkpoint = checkpoint
        self._files_pending = files_pending
        self.offset_map = OffsetMap(settings.dedupe_buffer_size, settings.load_factor)
        #: the cleaning under way and its log's key, or None
        self.cleaning: Cleaning | None = None
        self.cleaning_key: tuple[str, int] | None = None
        #: when the cleaner runs next (ms)
        self.next_run_ms = 0
        self.cleanings = 0
        self.aborted = 0
        self.last_stats: CleanerStats | None = None
        self.buffer_utilization = 0.0
        self.compaction_delay_ms = 0
        self.uncleanable: dict[tuple[str, int], str] = {}
        self.last_run_ms = -1
        self.bytes_read = 0
        self.bytes_written = 0
        #: whether some log is compacted (None: to be looked at again, after :meth:`logs_changed`)
        self._compacted: bool | None = None

    def logs_changed(self) -> None:
        """A log was added or the logs' configs changed (the log manager says so): :meth:`next_deadline` looks
        for a compacted log again (it is asked after every event, so it does not look every time)."""
        self._compacted = None

    def _has_compacted(self) -> bool:
        if self._compacted is None:
            self._compacted = any(log.config.compact for log in self.logs.values())
        return self._compacted

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and the cleaner's next run (ms): none while disabled or without a compacted log."""
        if not self.settings.enable or (self.cleaning is None and not self._has_compacted()):
            return d
        return min(d, self.next_run_ms)

    def tick(self, now_ms: int) -> None:
        """Run the cleaner if due: start a cleaning of the filthiest compacted log (or back off), then run one
        slice of the cleaning under way. An OSError takes the directory offline (no raise)."""
        if not self.settings.enable or now_ms < self.next_run_ms:
            return
        try:
            self._run(now_ms)
        except OSError as exc:
            key = self.cleaning_key
            self.cleaning = self.cleaning_key = None
            self._fail(now_ms, exc, f"cleaning {key[0]}-{key[1]}" if key else "cleaning a log")
        except Exception as exc:  # noqa: BLE001 -- Kafka's LogCleaningException: the partition, not the node
            self._uncleanable(now_ms, exc)

    def _uncleanable(self, now_ms: int, exc: Exception) -> None:
        """Mark the partition being cleaned uncleanable (Kafka's ``markPartitionUncleanable``); its cleaned file is
        deleted when the disk allows it (an OSError then takes the directory offline)."""
        cleaning, key = self.cleaning, self.cleaning_key
        self.cleaning = self.cleaning_key = None
        self.next_run_ms = now_ms + 1
        if key is None:
            raise exc
        self.uncleanable[key] = f"{type(exc).__name__}: {exc}"
        self._note(f"log cleaner: {key[0]}-{key[1]} is uncleanable until a restart ({type(exc).__name__}: {exc})")
        if cleaning is not None and not cleaning.finished:
            try:
                cleaning.abort(f"uncleanable: {exc}", now_ms)
            except OSError as err:
                self._fail(now_ms, err, f"removing the cleaned file of {key[0]}-{key[1]}")

    def _run(self, now_ms: int) -> None:
        cleaning = self.cleaning
        key = self.cleaning_key
        if cleaning is not None and key is not None and self.logs.get(key) is not cleaning.log:
            cleaning.abort("the log went (deleted, moved or offline)", now_ms)
        if cleaning is None:
            target = grab_filthiest(self.logs, now_ms, self.uncleanable)
            if target is None:
                self.next_run_ms = now_ms + max(1, self.settings.backoff_ms)
                return
            key = target.key
            cleaning = self.cleaning = Cleaning(self.disk, self.logs[key], target, self.offset_map, now_ms)
            self.cleaning_key = key
        moved = cleaning.step(now_ms, self.settings.slice_bytes)
        if cleaning.log.pending_deletes:
            self._files_pending()  # a swap's old segment files wait for file.delete.delay.ms
        delay = 1
        rate = self.settings.max_io_bytes_per_second
        if moved and rate < float("inf"):
            delay = max(1, int(moved * 1000 / rate))
        if cleaning.finished:
            self._finished(key, cleaning, now_ms)
            delay = 1  # look for the next log at once (Kafka's thread goes on while a log is cleaned)
        self.next_run_ms = now_ms + delay

    def _finished(self, key: tuple[str, int] | None, cleaning: Cleaning, now_ms: int) -> None:
        self.cleaning = self.cleaning_key = None
        name = f"{key[0]}-{key[1]}" if key else "?"
        if cleaning.phase == "aborted":
            self.aborted += 1
            self._note(f"log cleaner: cleaning of {name} aborted ({cleaning.reason}); it starts again later")
            return
        stats = cleaning.stats
        self.cleanings += 1
        self.last_stats = stats
        self.last_run_ms = now_ms
        self.bytes_read += stats.bytes_read + stats.map_bytes_read
        self.bytes_written += stats.bytes_written
        self.buffer_utilization = self.offset_map.utilization
        self.compaction_delay_ms = cleaning.target.max_compaction_delay_ms
        self._note(f"log cleaner: cleaned {name} up to offset {cleaning.end_offset}: {stats.messages_read} records "
                   f"({stats.bytes_read} bytes) read, {stats.messages_written} ({stats.bytes_written} bytes) kept, "
                   f"{stats.tombstones_removed} tombstone(s) and {stats.invalid_messages} keyless record(s) removed, "
                   f"in {stats.end_ms - stats.start_ms} ms")
        self._checkpoint(now_ms)

    def uncleanable_bytes(self, now_ms: int) -> int:
        """The cleanable bytes of the uncleanable partitions (Kafka's ``uncleanable-bytes``)."""
        return sum(log_to_clean(key, self.logs[key], now_ms).cleanable_bytes for key in sorted(self.uncleanable)
                   if key in self.logs)

    def max_dirty_ratio(self, now_ms: int) -> float:
        """The largest dirty ratio among the compacted logs (Kafka's ``max-dirty-percent``, as a fraction)."""
        ratios = [log_to_clean(key, log, now_ms).cleanable_ratio for key, log in sorted(self.logs.items())
                  if log.config.compact]
        return max(ratios, default=0.0)
