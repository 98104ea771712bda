"""The broker's one log directory (Kafka's ``LogManager`` with its ``LogDirFailureChannel``): the partition
logs loaded at start and created on first sight, the HWM checkpoint, the clean-shutdown file (KIP-966),
each partition directory's ``partition.metadata`` (its topic id), stray directories, and whether the
directory is offline after an I/O error.

Storage faults (DESIGN.md, "Faults a real deployment meets"): an I/O error (an OSError from the Disk:
ENOSPC, EIO) takes the directory offline (:meth:`LogManager.fail`) until a restart. A log that dropped data
at load while the clean-shutdown file vouched for it makes the registration unclean (PreviousBrokerEpoch -1,
KIP-966).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable
from random import Random

from ..metadata import config as cfg
from ..storage.checkpoints import (
    CLEANER_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    delete_clean_shutdown,
    read_clean_shutdown,
    read_hwm_checkpoint,
    read_offset_checkpoint,
    write_clean_shutdown,
    write_hwm_checkpoint,
    write_offset_checkpoint,
)
from ..storage.disk import Disk, LoadDrop
from ..storage.log import PartitionLog
from ..storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    decode_properties,
    kafka_uuid,
    parse_kafka_uuid,
)
from .channel import LogDirFailureHandler, Note
from .log_cleaner import CleanerSettings, LogCleaner
from .metadata_cache import MetadataCache

#: The broker's one log directory on its Disk.
LOG_DIR = "data"
#: The file in a partition directory that names its topic id (Kafka's ``PartitionMetadataFile``).
PARTITION_METADATA_FILE = "partition.metadata"
#: A period at or above this is "never" (Kafka's Long.MAX_VALUE defaults).
_NEVER_MS = 1 << 62


def _period(static: dict[str, str], name: str) -> int | None:
    value = cfg.as_int(cfg.lookup(name, static))
    return None if value is None or value >= _NEVER_MS else value


class LogManager:
    """The logs of ``disk``'s log directory :data:`LOG_DIR`, keyed (topic, partition). ``directory_id``: the
    directory's id (KIP-858); ``stray_rng``: draws the names of stray directories; ``note`` adds a line to
    the node's log; ``fail`` takes the directory offline (the broker's handler, which calls :meth:`fail`)."""

    def __init__(self, disk: Disk, cache: MetadataCache, directory_id: uuid.UUID, stray_rng: Random,
                 note: Note, fail: LogDirFailureHandler) -> None:
        self.disk = disk
        self.cache = cache
        self.directory_id = directory_id
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self._stray_rng = stray_rng
        self._note = note
        self._fail = fail
        #: Partition directories renamed ``-stray`` by this incarnation, in order: (directory, new name,
        #: reason), for the driver's log (Kafka logs each stray log dir it finds).
        self.strays: list[tuple[str, str, str]] = []
        #: The directory failed (an OSError from the disk): every partition here is offline until a
        #: restart. ``failure``: what failed, for the log and ``cluster status``.
        self.offline = False
        self.failure: str | None = None
        #: Counters for ``cluster status`` (until metrics are exported): OSErrors met, data dropped at load.
        self.storage_error_count = 0
        self.dropped_at_load: list[LoadDrop] = []
        #: Segments whose checksum did not match after a clean shutdown (PartitionLog.checksum_mismatches).
        self.checksum_mismatches: list[str] = []
        #: The broker epoch of the clean-shutdown file found at start (KIP-966), -1 when none.
        self.previous_broker_epoch = read_clean_shutdown(disk, LOG_DIR)
        # Kafka's LogManager tasks (static broker configs), in ms; None: never.
        static = cache.static
        self.retention_check_interval_ms = _period(static, "log.retention.check.interval.ms")
        self.flush_check_interval_ms = _period(static, "log.flush.scheduler.interval.ms")
        self.recovery_checkpoint_interval_ms = _period(static, "log.flush.offset.checkpoint.interval.ms")
        self.start_checkpoint_interval_ms = _period(static, "log.flush.start.offset.checkpoint.interval.ms")
        #: ``log.initial.task.delay.ms`` (Kafka's InitialTaskDelayMs, 30 s): the tasks first run this long after
        #: the logs are loaded
        self.initial_task_delay_ms = int(cfg.lookup("log.initial.task.delay.ms", static))
        #: ``producer.id.expiration.ms``, checked every ``producer.id.expiration.check.interval.ms``
        self.producer_expiration_ms = int(cfg.lookup("producer.id.expiration.ms", static))
        self.producer_expiration_check_ms = _period(static, "producer.id.expiration.check.interval.ms")
        #: When each task runs next (ms; None: never): set by :meth:`load`.
        self.next_task_ms: dict[str, int | None] = {}
        #: segment.jitter.ms draws: a Random of the directory's own, so that no other draw depends on them
        self._jitter_rng = Random(directory_id.int)
        #: Segments deleted by retention since start (``cluster status``); some log has segment files waiting
        #: for file.delete.delay.ms
        self.segments_deleted = 0
        self.files_to_delete = False
        #: Batches checked one by one at load, and batches loaded by their lengths only (below the recovery
        #: point after an unclean shutdown), every log: ``cluster status``.
        self.batches_recovered = 0
        self.batches_trusted = 0
        #: sealed segments a clean start loaded from their checksum and index files, batches unread
        self.segments_unread = 0
        #: the log cleaner of this directory's compacted logs (Kafka's LogCleaner)
        self.cleaner = LogCleaner(disk, self.logs, CleanerSettings.from_static(static),
                                  lambda now_ms, exc, what: self._fail(now_ms, exc, what), note,
                                  self.checkpoint_cleaner_offsets, self._files_pending)

    # ================================================================= start
    def load(self, now_ms: int) -> None:
        """Delete the clean-shutdown file, then load every partition directory (Kafka's
        ``LogManager.loadLogs``) with its checkpointed HWM, log start offset and recovery point (the LEO after
        a clean shutdown, as Kafka's ``LogLoader``). A log that dropped data at load
        (:attr:`PartitionLog.dropped_at_load`: a bad CRC, an incomplete batch, an offset gap) is logged and
        counted; when the clean-shutdown file vouched for the logs, the registration then says the shutdown
        was unclean (PreviousBrokerEpoch -1): KIP-966 keeps such a replica out of the ELR and Unclean Recovery
        ranks it by the log it really has. (Kafka skips recovery after a clean shutdown; kraftlog checks
        every batch and stays safe.) OSError propagates; a malformed checkpoint file raises ValueError."""
        disk = self.disk
        clean = self.previous_broker_epoch >= 0
        delete_clean_shutdown(disk, LOG_DIR, now_ms)
        hwms = read_hwm_checkpoint(disk, LOG_DIR)
        starts = read_offset_checkpoint(disk, f"{LOG_DIR}/{LOG_START_OFFSET_CHECKPOINT_FILE}")
        recovery = read_offset_checkpoint(disk, f"{LOG_DIR}/{RECOVERY_POINT_CHECKPOINT_FILE}")
        cleaned = read_offset_checkpoint(disk, f"{LOG_DIR}/{CLEANER_CHECKPOINT_FILE}")
        dirs = sorted({p[len(LOG_DIR) + 1:].split("/", 1)[0] for p in disk.list(LOG_DIR + "/") if
                       p.count("/") >= 2})
        for d in dirs:
            topic, _, idx = d.rpartition("-")
            if not idx.isdigit():  # not <topic>-<partition>: a ``-stray`` directory is never loaded again
                continue
            key = (topic, int(idx))
            log = PartitionLog(disk, f"{LOG_DIR}/{d}", self.cache.log_config(topic), now_ms,
                               log_start_offset=starts.get(key, 0), recovery_point=recovery.get(key, 0),
                               rng=self._jitter_rng, clean_shutdown=clean,
                               first_dirty_offset=cleaned.get(key, 0))
            log.update_high_watermark(min(hwms.get(key, 0), log.log_end_offset))
            self.logs[key] = log
            self.cleaner.logs_changed()
            self.batches_recovered += log.batches_recovered
            self.batches_trusted += log.batches_trusted
            self.segments_unread += log.segments_unread
            for drop in log.dropped_at_load:
                self.dropped_at_load.append(drop)
                self._note(f"log recovery of {topic}-{idx}: {drop}")
            for line in log.swaps_completed:
                self._note(f"log recovery of {topic}-{idx}: {line}")
            for path in log.checksum_mismatches:
                self.checksum_mismatches.append(path)
                if not any(drop.path == path for drop in log.dropped_at_load):  # (a drop is logged above)
                    self._note(f"log recovery of {topic}-{idx}: {path} does not match the checksum written at its "
                               "roll or at the clean shutdown, yet its batches are intact: recovered batch by batch")
        if (self.dropped_at_load or self.checksum_mismatches) and self.previous_broker_epoch >= 0:
            what = "dropped data" if self.dropped_at_load else "did not match their checksums"
            self._note(f"the clean-shutdown file (broker epoch {self.previous_broker_epoch}) vouched for logs that "
                       f"{what} at load: registering as after an unclean shutdown (PreviousBrokerEpoch -1)")
            self.previous_broker_epoch = -1
        first = now_ms + self.initial_task_delay_ms
        self.cleaner.next_run_ms = now_ms  # Kafka's cleaner thread looks for work as it starts
        self.next_task_ms = {
            "retention": first if self.retention_check_interval_ms is not None else None,
            "flush": first if self.flush_check_interval_ms is not None else None,
            "recovery-checkpoint": first if self.recovery_checkpoint_interval_ms is not None else None,
            "start-checkpoint": first if self.start_checkpoint_interval_ms is not None else None,
            "producer-expiration": first if self.producer_expiration_check_ms is not None else None,
        }

    def _files_pending(self) -> None:
        self.files_to_delete = True

    def get_or_create(self, key: tuple[str, int], now_ms: int) -> PartitionLog:
        """The log of ``key``, created empty on first sight. OSError propagates."""
        log = self.logs.get(key)
        if log is None:
            log = PartitionLog(self.disk, f"{LOG_DIR}/{key[0]}-{key[1]}", self.cache.log_config(key[0]), now_ms,
                               rng=self._jitter_rng)
            self.logs[key] = log
            self.cleaner.logs_changed()
        return log

    # ================================================================= periodic tasks and checkpoints
    def update_log_configs(self) -> None:
        """Give every log its topic's configs again (after a config or partition change)."""
        for key, log in self.logs.items():
            log.config = self.cache.log_config(key[0])
        self.cleaner.logs_changed()

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d``, the next periodic task and the next segment file due for removal (ms)."""
        if self.offline:
            return d
        d = self.cleaner.next_deadline(d)
        for t in self.next_task_ms.values():
            if t is not None and t < d:
                d = t
        if self.files_to_delete:
            for log in self.logs.values():
                t2 = log.next_file_delete_ms()
                if t2 is not None and t2 < d:
                    d = t2
        return d

    def tick(self, now_ms: int) -> None:
        """Run the periodic tasks that are due (Kafka's ``LogManager.startup`` schedule): retention every
        ``log.retention.check.interval.ms`` (:meth:`cleanup_logs`), the flush scheduler every
        ``log.flush.scheduler.interval.ms`` (:meth:`maybe_flush`), the recovery-point and log-start-offset
        checkpoints every ``log.flush.offset.checkpoint.interval.ms`` /
        ``log.flush.start.offset.checkpoint.interval.ms``, expired producers every
        ``producer.id.expiration.check.interval.ms``. An OSError takes the directory offline."""
        if self.offline:
            return
        if self.files_to_delete:
            try:
                self.files_to_delete = False
                for key in sorted(self.logs):
                    self.logs[key].delete_due_files(now_ms)
                    self.files_to_delete = self.files_to_delete or bool(self.logs[key].pending_deletes)
            except OSError as exc:
                self._fail(now_ms, exc, "deleting the files of deleted segments")
                return
        tasks = self.next_task_ms
        for name, period in (("retention", self.retention_check_interval_ms),
                             ("flush", self.flush_check_interval_ms),
                             ("recovery-checkpoint", self.recovery_checkpoint_interval_ms),
                             ("start-checkpoint", self.start_checkpoint_interval_ms),
                             ("producer-expiration", self.producer_expiration_check_ms)):
            due = tasks.get(name)
            if due is None or now_ms < due or period is None:
                continue
            tasks[name] = now_ms + max(1, period)
            try:
                if name == "retention":
                    self.cleanup_logs(now_ms)
                elif name == "flush":
                    self.maybe_flush(now_ms)
                elif name == "recovery-checkpoint":
                    self.checkpoint_recovery_points(now_ms)
                elif name == "start-checkpoint":
                    self.checkpoint_log_start_offsets(now_ms)
                else:
                    self.remove_expired_producers(now_ms)
            except OSError as exc:
                self._fail(now_ms, exc, f"running the log manager's {name} task")
                return  # the directory is offline: no task runs until a restart
        self.cleaner.tick(now_ms)  # (a slice of a cleaning under way, or the search for one)

    def cleanup_logs(self, now_ms: int) -> int:
        """Retention of every log (Kafka's ``LogManager.cleanupLogs``: :meth:`PartitionLog.delete_old_segments`),
        each deletion noted. Returns the segments deleted. OSError propagates."""
        deleted = 0
        for key in sorted(self.logs):
            log = self.logs[key]
            n, reason = log.delete_old_segments(now_ms)
            if n:
                deleted += n
                self.files_to_delete = self.files_to_delete or bool(log.pending_deletes)
                self._note(f"{key[0]}-{key[1]}: deleted {n} segment(s) breaching the {reason}; log start offset "
                           f"{log.log_start_offset}")
        self.segments_deleted += deleted
        return deleted

    def remove_expired_producers(self, now_ms: int) -> None:
        """Forget, in every log, the idempotent producers whose last batch is ``producer.id.expiration.ms`` old
        (Kafka's ``removeExpiredProducers``, run every ``producer.id.expiration.check.interval.ms``)."""
        for key in sorted(self.logs):
            self.logs[key].producer_state.remove_expired(now_ms, self.producer_expiration_ms)

    def maybe_flush(self, now_ms: int) -> None:
        """The flush scheduler (Kafka's ``flushDirtyLogs``): flush the logs whose ``flush.ms`` ran out. OSError
        propagates."""
        for key in sorted(self.logs):
            self.logs[key].maybe_flush(now_ms)

    def checkpoint_recovery_points(self, now_ms: int) -> None:
        """Write ``recovery-point-offset-checkpoint`` (Kafka's ``checkpointLogRecoveryOffsets``). OSError
        propagates."""
        write_offset_checkpoint(self.disk, f"{LOG_DIR}/{RECOVERY_POINT_CHECKPOINT_FILE}",
                                {k: log.recovery_point for k, log in self.logs.items()}, now_ms)
        self.checkpoint_cleaner_offsets(now_ms)

    def checkpoint_cleaner_offsets(self, now_ms: int) -> None:
        """Write ``cleaner-offset-checkpoint`` (Kafka's ``LogCleanerManager.updateCheckpoints``): each compacted
        log's first dirty offset, and any other log's the cleaner moved (a topic whose policy changed keeps what
        it knew: its load tolerates the gaps below it). Nothing while no log has one. OSError propagates."""
        offsets = {k: log.first_dirty_offset for k, log in self.logs.items()
                   if log.config.compact or log.first_dirty_offset > log.segments[0].base_offset}
        path = f"{LOG_DIR}/{CLEANER_CHECKPOINT_FILE}"
        if offsets or self.disk.exists(path):
            write_offset_checkpoint(self.disk, path, offsets, now_ms)

    def checkpoint_log_start_offsets(self, now_ms: int) -> None:
        """Write ``log-start-offset-checkpoint`` (Kafka's ``checkpointLogStartOffsetsInDir``: the logs whose start
        offset lies above their first segment's base; a load takes the first segment's base otherwise).
        OSError propagates."""
        write_offset_checkpoint(self.disk, f"{LOG_DIR}/{LOG_START_OFFSET_CHECKPOINT_FILE}",
                                {k: log.log_start_offset for k, log in self.logs.items()
                                 if log.log_start_offset > log.segments[0].base_offset}, now_ms)

    def checkpoint_hwms(self, now_ms: int) -> None:
        """Write the HWM checkpoint (Kafka's ``replication-offset-checkpoint``). OSError propagates."""
        write_hwm_checkpoint(self.disk, LOG_DIR, {k: log.high_watermark for k, log in sorted(self.logs.items())},
                             now_ms)

    def checkpoint_hwms_or_fail(self, now_ms: int) -> None:
        """Write the HWM checkpoint unless the log directory is offline; a failure takes the directory
        offline (Kafka: a checkpoint failure goes to the LogDirFailureChannel) and never raises."""
        if self.offline:
            return
        try:
            self.checkpoint_hwms(now_ms)
        except OSError as exc:
            self._fail(now_ms, exc, "writing the HWM checkpoint")

    def checkpoint_log_start_offsets_or_fail(self, now_ms: int) -> None:
        """Write the log-start-offset checkpoint at once (after DeleteRecords moved a log start offset) unless
        the directory is offline; a failure takes it offline and never raises."""
        if self.offline:
            return
        try:
            self.checkpoint_log_start_offsets(now_ms)
        except OSError as exc:
            self._fail(now_ms, exc, "writing the log-start-offset checkpoint")

    def shutdown(self, now_ms: int, broker_epoch: int) -> None:
        """Flush every log, checkpoint HWMs, recovery points and log start offsets and, registered
        (``broker_epoch`` >= 0), write the clean-shutdown file. An offline directory gets none of it (Kafka's
        ``LogManager.shutdown`` writes the file for online directories only), nor does one that fails
        meanwhile (taken offline, no raise)."""
        if self.offline:
            return
        try:
            for key in sorted(self.logs):
                self.logs[key].seal(now_ms)  # flush, producer snapshot at the LEO, the active segment's checksum
            self.checkpoint_hwms(now_ms)
            self.checkpoint_recovery_points(now_ms)
            self.checkpoint_log_start_offsets(now_ms)
            if broker_epoch >= 0:
                write_clean_shutdown(self.disk, LOG_DIR, broker_epoch, now_ms)
        except OSError as exc:
            self._fail(now_ms, exc, "shutting down")

    # ================================================================= failure
    def fail(self, exc: OSError, what: str, hosted: Iterable[tuple[str, int]]) -> bool:
        """Count an I/O error while doing ``what``; the first takes the directory offline (Kafka's
        ``LogDirFailureChannel.maybeAddOfflineLogDir``): its logs are dropped (nothing more is read or
        written there until a restart) and a line names the partitions (``hosted`` and the logs) that went
        offline. True when it just went offline, False when it already was."""
        self.storage_error_count += 1
        if self.offline:
            return False
        self.offline = True
        self.failure = f"{what}: {exc}"
        offline = sorted(set(hosted) | set(self.logs))
        self.logs.clear()
        self._note(f"log directory {LOG_DIR} (directory.id {self.directory_id}) failed while {what}: {exc}; "
                   f"{len(offline)} partition(s) offline until a restart: "
                   + (", ".join(f"{t}-{i}" for t, i in offline) or "none"))
        return True

    # ================================================================= partition directories
    def record_topic_id(self, key: tuple[str, int], topic_id: uuid.UUID, now_ms: int) -> None:
        """Write the log dir's ``partition.metadata`` (Kafka's ``PartitionMetadataFile``: ``version: 0`` and
        the topic id, written atomically before the log takes data) unless it already holds ``topic_id``."""
        if self.stored_topic_id(key) != topic_id:
            self.disk.write_atomic(f"{LOG_DIR}/{key[0]}-{key[1]}/{PARTITION_METADATA_FILE}",
                                   encode_partition_metadata(topic_id), now_ms)

    def stored_topic_id(self, key: tuple[str, int]) -> uuid.UUID | None:
        """The topic id in the log dir's ``partition.metadata``; None when missing or unreadable."""
        path = f"{LOG_DIR}/{key[0]}-{key[1]}/{PARTITION_METADATA_FILE}"
        return decode_partition_metadata(self.disk.read_value(path))

    def remove_dir(self, key: tuple[str, int], delete: bool, reason: str, now_ms: int) -> None:
        """Remove partition ``key``'s directory: ``delete`` every file (``LogManager.asyncDelete``), else
        rename it ``<topic>-<partition>.<32 hex digits>-stray`` (Kafka 3.7+'s stray log dirs, ``LogManager``'s
        ``StrayDirSuffix``), listed in :attr:`strays` with ``reason``. Nothing when it holds no file.
        OSError propagates."""
        directory = f"{LOG_DIR}/{key[0]}-{key[1]}"
        files = self.disk.list(directory + "/")
        if delete:
            for path in files:
                self.disk.delete(path, now_ms)
        elif files:
            stray = f"{key[0]}-{key[1]}.{uuid.UUID(int=self._stray_rng.getrandbits(128)).hex}-stray"
            self.disk.rename_dir(directory, f"{LOG_DIR}/{stray}", now_ms)
            self.strays.append((f"{key[0]}-{key[1]}", stray, reason))
            self._note(f"stray partition directory {key[0]}-{key[1]} ({reason}): renamed {stray}, kept")


# ================================================================= meta.properties
def directory_id_of(disk: Disk, broker_id: int, identity: MetaProperties | None) -> uuid.UUID:
    """The log directory's id: the ``directory.id`` of its verified ``meta.properties`` (written when the
    directory was formatted), else of the file as it is (an unchecked Broker: unit tests), else a fixed id
    derived from the broker id (a directory formatted without one; no random draw, so simulated
    histories do not change)."""
    if identity is not None and identity.directory_id is not None:
        return identity.directory_id
    text = disk.read_value(META_PROPERTIES)
    if isinstance(text, str):
        try:
            return parse_kafka_uuid(decode_properties(text)["directory.id"])
        except (KeyError, ValueError):
            pass
    return derived_directory_id(broker_id)


def derived_directory_id(broker_id: int) -> uuid.UUID:
    """The fixed directory id of broker ``broker_id``'s log dir when its meta.properties names none."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kraftlog:log-dir:broker-{broker_id}")


# ================================================================= partition.metadata
def encode_partition_metadata(topic_id: uuid.UUID) -> str:
    """Kafka's ``PartitionMetadata.encode``: ``"version: 0\\ntopic_id: <id>"``, the id as Kafka's
    ``Uuid.toString`` writes it (URL-safe base64 of the 16 bytes, no padding)."""
    return "version: 0\ntopic_id: " + kafka_uuid(topic_id)


def decode_partition_metadata(text: object) -> uuid.UUID | None:
    """The topic id of a ``partition.metadata`` text (Kafka's ``PartitionMetadataReadBuffer``: a
    ``version: N`` line with N >= 0, then ``topic_id: <id>``, not the zero id); None when ``text`` is None
    or malformed."""
    if not isinstance(text, str):
        return None
    lines = text.split("\n")
    if len(lines) < 2:
        return None
    version, topic = lines[0].split(), lines[1].split()
    if len(version) != 2 or not version[1].isdigit() or len(topic) != 2 or len(topic[1]) != 22:
        return None
    try:
        raw = base64.urlsafe_b64decode(topic[1] + "==")
    except ValueError:
        return None
    if len(raw) != 16 or raw == bytes(16):
        return None
    return uuid.UUID(bytes=raw)


_STRAY_DIR = re.compile(r"^(?P<name>.+-\d+)\.[0-9a-f]{32}-stray$")


def stray_partitions(disk: Disk) -> dict[str, str]:
    """The partitions kept as ``-stray`` directories on ``disk``: partition name (``"t-0"``) -> its stray
    directory's name (the latest by name when one partition has several)."""
    out: dict[str, str] = {}
    for path in disk.list(LOG_DIR + "/"):
        parts = path.split("/")
        if len(parts) >= 3 and (match := _STRAY_DIR.match(parts[1])) is not None:
            out[match["name"]] = max(out.get(match["name"], ""), parts[1])
    return out
