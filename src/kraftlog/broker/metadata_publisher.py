"""How metadata reaches a broker (KRaft): the ``MetadataLoader`` (:mod:`.metadata_loader`) fetches the controller's
metadata log and the :class:`BrokerMetadataPublisher` applies what it replays (Kafka's ``MetadataLoader`` and
``BrokerMetadataPublisher``): partition roles (``ReplicaManager.applyDelta``), topic deletions, stray
partition directories, log configs. Leadership, ISR and ELR reach brokers only this way."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ..metadata.image import MetadataApplyErrors, MetadataImage
from ..protocol.node import Envelope
from ..storage.meta_properties import kafka_uuid
from .channel import LogDirFailureHandler
from .group_coordinator import GroupCoordinator
from .log_manager import LogManager
from .metadata_cache import MetadataCache
from .replica_fetcher import ReplicaFetcherManager
from .replica_manager import ReplicaManager


class BrokerMetadataPublisher:
    """Applies the metadata records broker ``broker_id`` replays to its replicas, logs and group coordinator
    (which follows the ``__consumer_offsets`` partitions it leads: ``CoordinatorRuntime.sync``).

    ``metadata_apply_errors``: Kafka's metadata-apply-error-count: metadata records (or partition roles)
    this broker could not apply; the node's driver logs their lines and reports the count."""

    def __init__(self, broker_id: int, cache: MetadataCache, logs: LogManager, replicas: ReplicaManager,
                 fetcher: ReplicaFetcherManager, groups: GroupCoordinator[Envelope],
                 fail: LogDirFailureHandler) -> None:
        self.broker_id = broker_id
        self._cache = cache
        self._logs = logs
        self._replicas = replicas
        self._fetcher = fetcher
        self._groups = groups
        self._fail = fail
        self.metadata_apply_errors = MetadataApplyErrors()
        self._published = False  # first caught up with the metadata log (MetadataLoader)
        self._unpublished: set[tuple[str, int]] = set()  # partitions changed in the image but not yet applied
        self._deleted_unpublished: dict[uuid.UUID, str] = {}  # topic id -> name removed by records not yet published

    def apply_metadata(self, now_ms: int, records: Sequence[object], base_offset: int, caught_up: bool = True) -> None:
        """Replay metadata records and apply the partition roles they imply (BrokerMetadataPublisher).

        Until the broker has first caught up with the metadata log's high watermark, the image is
        only built, not published (Kafka's MetadataLoader): acting on a stale prefix could make a
        restarted broker lead an old epoch and rewrite its log.

        A record the image cannot apply (``MetadataImage.replay``), and a partition whose role cannot be
        applied (an error raised while making it leader or follower), is counted in
        ``metadata_apply_errors`` (Kafka's ``metadata-apply-error-count``) with a line for the node's log;
        the rest is applied (Kafka's metadata publishing fault handler)."""
        delta = self._cache.replay(records, base_offset)
        for offset, record, reason in delta.errors:
            self.metadata_apply_errors.add(offset, record, reason)
        self._fetcher.dirty = True
        image = self._cache.image
        self._unpublished |= delta.partitions
        deleted = delta.deleted_topics
        if not self._published:
            self._deleted_unpublished.update(deleted)
            if not caught_up:
                return
            deleted, self._deleted_unpublished = self._deleted_unpublished, {}
        first_publish = not self._published
        self._published = True
        if first_publish or deleted:
            # Deletes first (Kafka's ReplicaManager.applyDelta): a topic recreated under the same name
            # gets a new partition and an empty log below.
            self._stop_deleted_partitions(now_ms, deleted, first_publish)
        changed, self._unpublished = self._unpublished, set()
        try:
            self._apply_partitions(now_ms, image, changed)
        except OSError as exc:
            self._fail(now_ms, exc, "applying partition changes")
        if delta.configs or changed:
            self._logs.update_log_configs()
        if changed or delta.brokers:
            self._replicas.wake_delayed_fetches(now_ms)
        if changed or delta.deleted_topics:
            self._groups.runtime.sync(now_ms)  # load or unload __consumer_offsets shards

    @property
    def image(self) -> MetadataImage:
        """The image built so far (published or not)."""
        return self._cache.image

    @property
    def published(self) -> bool:
        """Whether the broker has published an image (first caught up with the metadata log)."""
        return self._published

    def load_snapshot(self, now_ms: int, image: MetadataImage, errors: Sequence[tuple[int, object, str]] = ()) -> None:
        """A metadata snapshot replaces the image (Kafka's ``MetadataLoader`` loading a snapshot): every partition
        of the new image is to be applied. Before the first publish (a restarted broker loading its local snapshot,
        or one too far behind fetching its controller's) it is only built; once published (a running broker that
        fetched a snapshot) it is published at once as a whole image: a replica the image no longer gives this
        broker is renamed ``-stray``, never deleted, since no RemoveTopicRecord says why it went (the rule of the
        Snapshots issue; Kafka's ``TopicsDelta.finishSnapshot`` would treat a topic missing from the snapshot as
        deleted). The committed offsets of a topic the new image no longer has are tombstoned, as Kafka's
        ``onPartitionsDeleted`` does for a topic missing from a loaded snapshot (the logs stay: -stray).
        ``errors``: records of the snapshot the image could not apply (counted)."""
        for offset, record, reason in errors:
            self.metadata_apply_errors.add(offset, record, reason)
        vanished = sorted(set(self._cache.image.topics) - set(image.topics))
        self._cache.set_image(image)
        self._fetcher.dirty = True
        self._unpublished |= set(image.partitions)
        if not self._published:
            return
        self._stop_deleted_partitions(now_ms, {}, True)
        if vanished:  # Kafka's TopicsDelta.finishSnapshot -> onPartitionsDeleted: their committed offsets go
            self._groups.on_topics_deleted(now_ms, vanished)
        changed, self._unpublished = self._unpublished, set()
        try:
            self._apply_partitions(now_ms, image, changed)
        except OSError as exc:
            self._fail(now_ms, exc, "applying partition changes")
        self._logs.update_log_configs()
        self._replicas.wake_delayed_fetches(now_ms)
        self._groups.runtime.sync(now_ms)

    def unpublish(self) -> None:
        """The metadata log is refetched from its start (the controller's log no longer continues this broker's
        copy): nothing is published until the broker has caught up again, then every partition is applied and the
        stray rule runs as at a first publish."""
        self._published = False
        self._deleted_unpublished = {}

    def _apply_partitions(self, now_ms: int, image: MetadataImage, changed: set[tuple[str, int]]) -> None:
        """Become leader or follower of each changed partition assigned here (``ReplicaManager.applyDelta``).
        Nothing while the log directory is offline: a replica cannot be created in it (Kafka's offline
        partitions ignore leadership changes). OSError propagates; any other error applying one partition is
        counted in ``metadata_apply_errors`` and the others are applied (Kafka's metadata publishing fault
        handler)."""
        if self._logs.offline:
            return
        for key in sorted(changed):
            reg = image.partitions.get(key)
            if reg is None or self.broker_id not in reg.replicas:  # None: its topic was deleted since
                continue
            try:
                self._replicas.apply_partition(now_ms, key, reg)
            except (AssertionError, OSError):
                raise  # a broken invariant of ours; a storage error takes the log directory offline
            except Exception as exc:  # noqa: BLE001 - Kafka's metadata publishing fault handler
                self.metadata_apply_errors.add(image.offset, key, f"applying partition {key[0]}-{key[1]}: "
                                               f"{type(exc).__name__}: {exc}")

    # ================================================================= topic deletion, stray directories
    def _stop_deleted_partitions(self, now_ms: int, deleted_topics: dict[uuid.UUID, str], first_publish: bool) -> None:
        """Drop every local replica the metadata image no longer gives this broker: delete the files of
        those whose topic deletion was replayed, rename the others' directories ``-stray``.

        Kafka's ``ReplicaManager.applyDelta`` (deleted partitions first) → ``stopPartitions``: a replica is
        stale when its topic is gone, the partition is gone or no longer lists this broker, or its topic id
        (the Partition's, else the log dir's ``partition.metadata``) differs from the image's (the topic was
        deleted and a topic of the same name created). For each: the Partition (leader or follower state,
        pending AlterPartition, follower fetch state) and the log are dropped, acks=all produces waiting on
        it are answered as ``DelayedProduce.tryComplete`` does (UNKNOWN_TOPIC_OR_PARTITION when the image
        lacks the partition, else NOT_LEADER_OR_FOLLOWER), parked fetches are re-run (they answer the
        partition with NOT_LEADER_OR_FOLLOWER), and the HWM checkpoint is rewritten without it (a stale HWM
        must not apply to a recreated log after a restart). Then its directory:

        * deleted, every file (``LogManager.asyncDelete``), only when its topic id is one whose
          RemoveTopicRecord this broker replayed (``deleted_topics``: topic id -> name, every removal since
          the broker last published; at the first publish, every removal in the metadata log);
        * otherwise renamed ``<topic>-<partition>.<32 hex digits>-stray`` (Kafka 3.7+'s stray log dirs,
          ``LogManager``'s ``StrayDirSuffix``): an unknown topic, an unknown topic id, a replica assigned
          elsewhere, no ``partition.metadata`` and not assigned here. Nothing else deletes data: an empty or
          foreign metadata log cannot make a broker delete its logs. Each rename is listed in
          ``LogManager.strays`` (directory, new name, reason); a stray directory is never loaded again.

        At the first publish (``first_publish``: the broker has just caught up with the metadata log) this
        is the stray-log check of Kafka's ``LogManager.isStrayKraftReplica`` over the logs loaded at
        startup, except that a log dir without ``partition.metadata`` (written before kraftlog kept topic
        ids) is kept and adopted when the image still assigns it here (Kafka treats it as stray).

        The deleted topics' committed offsets are tombstoned in the ``__consumer_offsets`` partitions this
        broker leads (Kafka's ``onPartitionsDeleted``). At the first publish the replay covers the whole
        metadata log, and offsets may have been committed to a same-name topic created after a deletion: only
        the names the image no longer has are cleaned."""
        image = self._cache.image
        partitions, logs = self._replicas.partitions, self._logs
        stale = [(key, reason) for key in sorted(set(logs.logs) | set(partitions))
                 if (reason := self._stray_reason(key, image)) is not None]
        for key, reason in stale:
            p = partitions.pop(key, None)
            logs.logs.pop(key, None)
            topic_id = p.topic_id if p is not None else logs.stored_topic_id(key)
            try:
                logs.remove_dir(key, topic_id is not None and topic_id in deleted_topics, reason, now_ms)
            except OSError as exc:
                self._fail(now_ms, exc, f"removing {key[0]}-{key[1]}")
                return
        names = sorted({n for n in deleted_topics.values() if not first_publish or n not in image.topics})
        if names:
            self._groups.on_topics_deleted(now_ms, names)
        if not stale:
            return
        self._replicas.remove_partitions(now_ms, {key for key, _reason in stale})
        logs.checkpoint_hwms_or_fail(now_ms)

    def _stray_reason(self, key: tuple[str, int], image: MetadataImage) -> str | None:
        """Why this broker should no longer hold a replica of ``key``, or None when it should (Kafka's
        ``isStrayKraftReplica``, see :meth:`_stop_deleted_partitions`); the reason in Kafka's words."""
        topic = image.topics.get(key[0])
        reg = image.partitions.get(key)
        p = self._replicas.partitions.get(key)
        topic_id = p.topic_id if p is not None else self._logs.stored_topic_id(key)
        shown = "no partition.metadata" if topic_id is None else f"topic id {kafka_uuid(topic_id)}"
        if topic is None or reg is None:
            return f"{shown}: the topic does not exist in the metadata image"
        if topic_id is not None and topic_id != topic.topic_id:
            return f"{shown}: the metadata image's {key[0]} is topic id {topic.topic_id}"
        if self.broker_id not in reg.replicas:
            return (f"{shown}: the current replica assignment {list(reg.replicas)} does not contain the "
                    f"local broker id {self.broker_id}")
        return None
