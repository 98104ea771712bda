"""Kafka's ``ReplicaManager`` (with its purgatories and ``AlterPartitionManager``): the partitions this
broker hosts, Produce (acks 0/1/all, NOT_ENOUGH_REPLICAS) and Fetch (followers and consumers, long-polled)
as a leader, the delayed produces and fetches, ISR changes through AlterPartition and the HWM.

Leader rules (DESIGN.md, KIP-497, KIP-903, KIP-966; :mod:`kraftlog.broker.partition` holds the per-partition
ones): at most one AlterPartition in flight per partition; AlterPartition errors as Kafka's
``Partition.handleAlterPartitionError``; ISR expansion on a follower fetch, shrink every
``replica.lag.time.max.ms / 2``; acks=all completes once the HWM reaches the batch and the *maximal* ISR
has min ISR members. Leader-epoch fencing (KIP-320): a request epoch greater than the leader's gets
UNKNOWN_LEADER_EPOCH (checked first), a smaller one FENCED_LEADER_EPOCH.

Storage faults: an I/O error takes the log directory offline (:meth:`ReplicaManager.handle_log_dir_failure`,
Kafka's ``handleLogDirFailure``): every partition goes offline here, and requests for them get
KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..level import Level
from ..metadata.image import PartitionRegistration
from ..metrics import Meter
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Envelope
from ..protocol.records import Record, RecordBatch
from ..protocol.validation import validate_produce_records
from ..storage.log import RecordBatchTooLargeError
from .channel import CONTROLLER, AlterPartitionContext, BrokerChannel, LogDirFailureHandler
from .config import BrokerConfig
from .delete_records import DeleteRecordsManager
from .group_metadata import OFFSETS_TOPIC
from .lifecycle import BrokerLifecycleManager
from .log_manager import LogManager
from .metadata_cache import MetadataCache
from .partition import Partition, ReplicaState

#: Error codes bound once: attribute access on an enum class costs ~45 ns, and these are read on
#: every Fetch.
NONE = Errors.NONE
FENCED_LEADER_EPOCH = Errors.FENCED_LEADER_EPOCH
#: Backoff (ms) before an AlterPartition that failed is sent again.
ALTER_PARTITION_BACKOFF_MS = 100
#: AlterPartition errors after which the leader keeps its pending change until metadata overrides it
#: (Kafka's ``Partition.handleAlterPartitionError``: "awaiting new the latest metadata").
_WAIT_FOR_METADATA = frozenset((
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.FENCED_LEADER_EPOCH,
    Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED))


@dataclass(slots=True)
class ProducePartitionStatus:
    """One partition of a DelayedProduce: its batches were appended at ``base_offset``; it completes when
    the HWM reaches ``required_offset`` in leader epoch ``leader_epoch``; ``error``: its final error code
    (NONE included), None while waiting."""

    topic: str
    partition: int
    required_offset: int
    leader_epoch: int
    base_offset: int
    error: int | None = None


@dataclass(slots=True)
class DelayedProduce:
    """An acks=all produce waiting for the HWM (Kafka's DelayedProduce): ``parts`` the partitions waiting,
    ``results`` the per-partition responses computed at append time (errors there are final)."""

    envelope: Envelope[m.ProduceRequest]
    deadline_ms: int
    parts: list[ProducePartitionStatus]
    results: list[m.ProducePartitionResponse]


class ReplicaManager:
    """The replicas hosted by broker ``broker_id``, keyed (topic, partition) in :attr:`partitions`.
    ``channel``: the broker's outbox; ``fail``: the broker's log-directory failure handler (which calls
    :meth:`handle_log_dir_failure`); times in ms."""

    def __init__(self, broker_id: int, level: Level, config: BrokerConfig, cache: MetadataCache, logs: LogManager,
                 lifecycle: BrokerLifecycleManager, channel: BrokerChannel, fail: LogDirFailureHandler,
                 now_ms: int) -> None:
        self.broker_id = broker_id
        self.level = level
        self.kip903 = level >= Level.KIP903  # broker epochs in Fetch and AlterPartition (KIP-903)
        self.config = config
        self.lag_max_ms = config.lag_max_ms
        self.cache = cache
        self.logs = logs
        self.lifecycle = lifecycle
        self._channel = channel
        self._fail = fail
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.delayed_fetches: list[tuple[int, Envelope[m.FetchRequest]]] = []
        self.delayed_produces: list[DelayedProduce] = []
        #: DeleteRecords on the leaders here, parked until the low watermarks reach them
        self.delete_records = DeleteRecordsManager(self.partitions, self.leader_error, self._alive_brokers,
                                                   channel, fail)
        self.next_isr_check_ms = now_ms + self.lag_max_ms // 2
        self.alter_dirty = False  # some partition may have an unsent AlterPartition
        #: Kafka's ReplicaManager and BrokerTopicMetrics meters (:mod:`.metrics` registers them)
        self.isr_shrinks, self.isr_expands = Meter(), Meter()
        self.bytes_in, self.messages_in = Meter(), Meter()
        #: called with the time when a leader's HWM moved (the group coordinator's ``HighWatermarkListener``)
        self.hwm_listener: Callable[[int], None] | None = None

    def leader_error(self, p: Partition | None, key: tuple[str, int]) -> int:
        """The error of a request only the partition's leader answers, with no leader epoch (Kafka's
        ``getPartitionOrException`` then ``localLogOrException``): :meth:`missing_partition_error` when
        ``key`` is not hosted here, NOT_LEADER_OR_FOLLOWER when this replica follows, else NONE."""
        if p is None:
            return self.missing_partition_error(*key)
        return self.fetch_partition_error(p, -1)

    def _alive_brokers(self) -> set[int]:
        """The ids of the registered, unfenced brokers (Kafka's ``metadataCache.hasAliveBroker``)."""
        return {b for b, reg in self.cache.image.brokers.items() if not reg.fenced}

    # ================================================================= errors
    def offline_error(self, topic: str, index: int) -> int | None:
        """KAFKA_STORAGE_ERROR for a partition the metadata assigns to this broker while its log directory
        is offline (Kafka's ``HostedPartition.Offline``), else None."""
        if not self.logs.offline:
            return None
        reg = self.cache.image.partitions.get((topic, index))
        return Errors.KAFKA_STORAGE_ERROR if reg is not None and self.broker_id in reg.replicas else None

    def missing_partition_error(self, topic: str, index: int) -> int:
        """Kafka's ``ReplicaManager.getPartitionOrError`` for a partition this broker does not host:
        KAFKA_STORAGE_ERROR for a replica of it in the offline log directory, NOT_LEADER_OR_FOLLOWER while
        the metadata image has it, UNKNOWN_TOPIC_OR_PARTITION otherwise."""
        offline = self.offline_error(topic, index)
        if offline is not None:
            return offline
        if (topic, index) in self.cache.image.partitions:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def fetch_partition_error(self, p: Partition | None, current_leader_epoch: int,
                              key: tuple[str, int] | None = None) -> int:
        """Kafka's ``localLogWithEpochOrThrow``: the leader epoch is checked before leadership
        (UNKNOWN_LEADER_EPOCH first, then FENCED_LEADER_EPOCH, then NOT_LEADER_OR_FOLLOWER); a partition
        ``key`` this broker hosts in its offline log directory gets KAFKA_STORAGE_ERROR."""
        if p is None:
            if key is not None:
                return self.offline_error(*key) or Errors.NOT_LEADER_OR_FOLLOWER
            return Errors.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch > p.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        if 0 <= current_leader_epoch < p.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if not p.is_leader:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return NONE

    # ================================================================= log directory failure
    def handle_log_dir_failure(self, now_ms: int, exc: OSError, what: str) -> None:
        """An I/O error on the log directory (Kafka's ``LogDirFailureChannel.maybeAddOfflineLogDir`` and
        ``ReplicaManager.handleLogDirFailure``): the directory goes offline with every partition in it
        (:meth:`LogManager.fail`), waiting acks=all produces are answered KAFKA_STORAGE_ERROR, parked
        fetches re-run (they now get it), and a heartbeat carrying the directory's id as offline (KIP-858)
        is sent at once. The broker stops if the controller has not answered a heartbeat within
        ``log.dir.failure.timeout.ms``. A second error only counts."""
        if not self.logs.fail(exc, what, self.partitions):
            return
        self.partitions.clear()
        self.lifecycle.report_offline_log_dir(now_ms)
        if self.delayed_produces:
            for dp in self.delayed_produces:
                for part in dp.parts:
                    if part.error is None:
                        part.error = Errors.KAFKA_STORAGE_ERROR
            self.complete_delayed_produces(now_ms)
        self.wake_delayed_fetches(now_ms)
        self.delete_records.try_complete(now_ms)

    # ================================================================= roles
    def apply_partition(self, now_ms: int, key: tuple[str, int], reg: PartitionRegistration) -> None:
        """Make this broker leader or follower of ``key`` as ``reg`` (its registration in the image) says,
        creating the replica and its log on first sight (Kafka's ``ReplicaManager.applyDelta``)."""
        image = self.cache.image
        p = self.partitions.get(key)
        if p is None:
            log = self.logs.get_or_create(key, now_ms)
            p = Partition(self.broker_id, key[0], key[1], image.topics[key[0]].topic_id, log, self.level)
            self.partitions[key] = p
            self.logs.record_topic_id(key, p.topic_id, now_ms)
        if reg.leader == self.broker_id:
            # KIP-704 as Kafka does it: the leader marks its own state RECOVERED at once; the
            # controller's RECOVERING clears with the next ISR change (no AlterPartition of its own).
            pending, before = p.pending, p.isr
            p.make_leader(reg, now_ms)
            if pending is not None and p.pending is None and p.isr == pending.new_isr:
                self._mark_isr_change(before, p.isr)  # the proposal committed, seen in metadata first
            self.maybe_increment_hwm(now_ms, p)
        else:
            if p.make_follower(reg):
                self._fail_delayed_produces(key)
                self.delete_records.try_complete(now_ms)

    def remove_partitions(self, now_ms: int, removed: set[tuple[str, int]]) -> None:
        """Partitions ``removed`` from this broker (deleted or stray) end the requests waiting on them:
        acks=all produces are answered as ``DelayedProduce.tryComplete`` does (UNKNOWN_TOPIC_OR_PARTITION
        when the image lacks the partition, else NOT_LEADER_OR_FOLLOWER), parked fetches re-run."""
        for dp in self.delayed_produces:
            for part in dp.parts:
                if part.error is None and (part.topic, part.partition) in removed:
                    part.error = self.missing_partition_error(part.topic, part.partition)
        if self.delayed_produces:
            self.complete_delayed_produces(now_ms)
        self.wake_delayed_fetches(now_ms)
        self.delete_records.try_complete(now_ms)

    # ================================================================= Fetch (leader side)
    def handle_fetch(self, now_ms: int, env: Envelope[m.FetchRequest], may_park: bool) -> None:
        """Answer a Fetch from a follower (``replica_id`` >= 0) or a consumer, or park it (DelayedFetch)
        until data arrives or ``max_wait_ms`` runs out when ``may_park`` and there is nothing to return."""
        req = env.message
        is_follower = req.replica_id >= 0
        image = self.cache.image
        topic_names = image.topic_names
        partitions = self.partitions
        out = []
        has_data = False
        hw_changed = []
        for fp in req.partitions:
            name = fp.topic or topic_names.get(fp.topic_id)  # Fetch v4-v12 name topics, v13+ give ids
            p = partitions.get((name, fp.partition)) if name is not None else None
            if p is None:
                # Kafka's KafkaApis.handleFetchRequest / getPartitionOrError: an id the metadata does not
                # know is UNKNOWN_TOPIC_ID, a partition missing from the metadata UNKNOWN_TOPIC_OR_PARTITION,
                # one this broker does not host NOT_LEADER_OR_FOLLOWER.
                if name is None:
                    error: int = Errors.UNKNOWN_TOPIC_ID
                else:
                    error = self.missing_partition_error(name, fp.partition)
                    if error == Errors.KAFKA_STORAGE_ERROR and env.api_version is not None and env.api_version <= 5:
                        # Kafka's KafkaApis.maybeDownConvertStorageError: Fetch v5 and older clients may not
                        # know KAFKA_STORAGE_ERROR; NOT_LEADER_OR_FOLLOWER makes them refresh metadata.
                        error = Errors.NOT_LEADER_OR_FOLLOWER
            elif fp.current_leader_epoch > p.leader_epoch:
                error = Errors.UNKNOWN_LEADER_EPOCH
            elif 0 <= fp.current_leader_epoch < p.leader_epoch:
                error = Errors.FENCED_LEADER_EPOCH
            elif not p.is_leader:
                error = Errors.NOT_LEADER_OR_FOLLOWER
            else:
                error = NONE  # the checks of fetch_partition_error, inlined on the hot path
            if error == NONE and is_follower:
                assert p is not None  # error NONE: the partition is hosted here
                if req.replica_id not in p.replicas or req.replica_id == self.broker_id:
                    error = Errors.NOT_LEADER_OR_FOLLOWER  # Kafka's followerReplicaOrThrow (the leader is none)
                elif self.kip903 and req.replica_epoch >= 0:
                    # KIP-903, Kafka's Replica.updateFetchStateOrThrow: a fetch whose broker epoch is older
                    # than the metadata cache's epoch of that (alive, i.e. unfenced) broker is refused
                    # with NOT_LEADER_OR_FOLLOWER; its fetch state is not updated.
                    reg = image.brokers.get(req.replica_id)
                    if reg is not None and not reg.fenced and req.replica_epoch < reg.broker_epoch:
                        error = Errors.NOT_LEADER_OR_FOLLOWER
            if error != NONE:
                has_data = True
                current = (p.leader_id, p.leader_epoch) if p is not None else None
                out.append(m.FetchPartitionResponse(fp.topic_id, fp.partition, error, current_leader=current,
                                                    topic=fp.topic))
                continue
            assert p is not None  # error NONE: the partition is hosted here
            log = p.log
            if is_follower and fp.last_fetched_epoch >= 0:
                epoch, end = log.epoch_cache.end_offset_for(fp.last_fetched_epoch, log.log_end_offset)
                if epoch < fp.last_fetched_epoch or end < fp.fetch_offset or end < 0:
                    has_data = True
                    out.append(m.FetchPartitionResponse(
                        fp.topic_id, fp.partition, NONE, log.high_watermark, log.high_watermark,
                        log.log_start_offset, diverging_epoch=m.EpochEndOffset(epoch, end), topic=fp.topic))
                    continue
            if fp.fetch_offset > log.log_end_offset or fp.fetch_offset < log.log_start_offset:
                has_data = True
                out.append(m.FetchPartitionResponse(fp.topic_id, fp.partition, Errors.OFFSET_OUT_OF_RANGE,
                                                    log.high_watermark, log.high_watermark, log.log_start_offset,
                                                    topic=fp.topic))
                continue
            if is_follower:
                p.update_follower_fetch_state(req.replica_id, fp.fetch_offset, req.replica_epoch,
                                              fp.current_leader_epoch, now_ms, fp.log_start_offset)
                if p.pending is None and req.replica_id not in p.isr:
                    self.maybe_expand_isr(now_ms, p, req.replica_id)
                if self.maybe_increment_hwm(now_ms, p, wake=False):
                    hw_changed.append(p)
                records = log.read(fp.fetch_offset, log.log_end_offset, fp.partition_max_bytes)
            else:
                # A consumer reads below the HWM, even while a new leader's HWM still lags its epoch start
                # offset: Kafka applies KIP-207's OFFSET_NOT_AVAILABLE to ListOffsets only, so a consumer
                # can observe a lagging HWM after a leader change (``hwm_regressions`` in the verdict).
                records = log.read(fp.fetch_offset, log.high_watermark, fp.partition_max_bytes)
            if records:
                has_data = True
            out.append(m.FetchPartitionResponse(
                fp.topic_id, fp.partition, NONE, log.high_watermark, log.high_watermark,
                log.log_start_offset, records=records, topic=fp.topic))
        if not has_data and may_park and req.max_wait_ms > 0:
            self.delayed_fetches.append((now_ms + req.max_wait_ms, env))
        else:
            self._channel.send_response(env, m.FetchResponse(NONE, tuple(out)))
        if hw_changed:
            self._on_hwm_changed(now_ms)
        if is_follower and self.delete_records.parked:  # followers report their log start offsets
            self.delete_records.try_complete(now_ms)

    def complete_due_fetches(self, now_ms: int) -> None:
        """Answer the parked fetches whose ``max_wait_ms`` ran out (DelayedFetch.onExpiration)."""
        if self.delayed_fetches:
            due = [e for d, e in self.delayed_fetches if d <= now_ms]
            if due:
                self.delayed_fetches = [(d, e) for d, e in self.delayed_fetches if d > now_ms]
                for env in due:
                    self.handle_fetch(now_ms, env, may_park=False)

    def wake_delayed_fetches(self, now_ms: int) -> None:
        """Re-run parked fetches that can now return data or an error (DelayedFetch.tryComplete)."""
        if not self.delayed_fetches:
            return
        parked, self.delayed_fetches = self.delayed_fetches, []
        for deadline, env in parked:
            if self._fetch_ready(env):
                self.handle_fetch(now_ms, env, may_park=False)
            else:
                self.delayed_fetches.append((deadline, env))

    def _fetch_ready(self, env: Envelope[m.FetchRequest]) -> bool:
        req = env.message
        topic_names = self.cache.image.topic_names
        partitions = self.partitions
        for fp in req.partitions:
            name = fp.topic or topic_names.get(fp.topic_id)
            p = partitions.get((name, fp.partition)) if name is not None else None
            if p is None or fp.current_leader_epoch != p.leader_epoch or not p.is_leader:
                # not the common case (this leader, its current epoch): is an error answer ready?
                if self.fetch_partition_error(p, fp.current_leader_epoch) != NONE:
                    return True
            assert p is not None  # no error answer: the partition is hosted here
            limit = p.log.log_end_offset if req.replica_id >= 0 else p.log.high_watermark
            if limit > fp.fetch_offset:
                return True
        return False

    # ================================================================= ISR and HWM
    def member_epochs(self, p: Partition, members: Iterable[int]) -> dict[int, int]:
        """Broker epochs to send in NewIsrWithEpochs (KIP-903, Kafka's ``addBrokerEpochToIsr``): this
        broker's own epoch, and for a follower the epoch of its last fetch as the partition's replica
        state holds it (-1 when unknown); all -1 below level kip903."""
        out = {}
        for r in members:
            if self.level < Level.KIP903:
                out[r] = -1
            elif r == self.broker_id:
                out[r] = self.lifecycle.broker_epoch
            else:
                st = p.followers.get(r)
                out[r] = st.broker_epoch if st is not None else -1
        return out

    def maybe_expand_isr(self, now_ms: int, p: Partition, replica_id: int) -> None:
        """Propose ``replica_id`` for the ISR when it qualifies (Kafka's ``Partition.maybeExpandIsr``)."""
        if p.pending is not None or replica_id in p.isr:
            return  # the common case on every follower fetch: nothing to propose
        image = self.cache.image
        reg = image.brokers.get(replica_id)
        cache_epoch = reg.broker_epoch if reg is not None else None
        if p.isr_candidate(replica_id, cache_epoch, image.is_active(replica_id)):
            new_isr = tuple(p.isr) + (replica_id,)
            p.propose(new_isr, self.member_epochs(p, new_isr), expand=True)
            self.alter_dirty = True

    def maybe_shrink_isrs(self, now_ms: int) -> None:
        """Every ``replica.lag.time.max.ms / 2``: propose ISRs without the followers out of sync (Kafka's
        ``ReplicaManager.maybeShrinkIsr``) and send them."""
        if now_ms < self.next_isr_check_ms:
            return
        self.next_isr_check_ms = now_ms + self.lag_max_ms // 2
        for key in sorted(self.partitions):
            p = self.partitions[key]
            if not p.is_leader or p.pending is not None or p.alter_inflight:
                continue  # one AlterPartition per partition at a time (AlterPartitionManager)
            out = p.out_of_sync_replicas(now_ms, self.lag_max_ms)
            if out:
                new_isr = tuple(r for r in p.isr if r not in out)
                p.propose(new_isr, self.member_epochs(p, new_isr), expand=False)
                self.alter_dirty = True
        self.send_alter_partitions(now_ms)

    def send_alter_partitions(self, now_ms: int) -> None:
        """Send every unsent pending AlterPartition item in one request (Kafka's AlterPartitionManager)."""
        broker_epoch = self.lifecycle.broker_epoch
        if broker_epoch < 0 or not self.alter_dirty:
            return
        items, keys = [], []
        waiting = False
        for key, p in self.partitions.items():
            if p.pending is not None and not p.pending.sent and p.is_leader:
                if p.pending.retry_at_ms > now_ms:
                    waiting = True
                    continue
                p.pending.sent = True
                p.alter_inflight = True
                items.append(p.alter_partition_item())
                keys.append((key, p.pending.sequence))
        self.alter_dirty = waiting
        if items:
            self._channel.send_request(CONTROLLER, m.AlterPartitionRequest(self.broker_id, broker_epoch, tuple(items)),
                                       now_ms, self.config.request_timeout_ms, AlterPartitionContext(tuple(keys)))

    def _alter_answered(self, context: AlterPartitionContext) -> None:
        """The AlterPartition of ``context`` is no longer in flight (answered or timed out)."""
        for key, _ in context.items:
            p = self.partitions.get(key)
            if p is not None:
                p.alter_inflight = False

    def _resend_after_backoff(self, now_ms: int, p: Partition) -> None:
        """Send ``p``'s pending AlterPartition again after ALTER_PARTITION_BACKOFF_MS (ms)."""
        assert p.pending is not None  # callers check it
        p.pending.sent = False
        p.pending.retry_at_ms = now_ms + ALTER_PARTITION_BACKOFF_MS
        self.alter_dirty = True

    def retry_alter(self, now_ms: int, context: AlterPartitionContext) -> None:
        """The AlterPartition of ``context`` failed as a whole (or timed out): resend its items later."""
        self._alter_answered(context)
        for key, seq in context.items:
            p = self.partitions.get(key)
            if p is not None and p.pending is not None and p.pending.sequence == seq:
                self._resend_after_backoff(now_ms, p)

    def on_alter_partition(self, now_ms: int, context: AlterPartitionContext, resp: m.AlterPartitionResponse) -> None:
        """Apply an AlterPartition answer per partition (Kafka's ``Partition.handleAlterPartitionUpdate`` and
        ``handleAlterPartitionError``)."""
        if resp.error_code != NONE:
            self.retry_alter(now_ms, context)
            return
        self._alter_answered(context)
        seqs = dict(context.items)
        by_key: dict[tuple[str | None, int], m.AlterPartitionResponseItem] = {}
        image = self.cache.image
        for answered in resp.partitions:
            by_key[(image.topic_name(answered.topic_id), answered.partition)] = answered
        for key, seq in seqs.items():
            p = self.partitions.get(key)
            item = by_key.get(key)
            if p is None or p.pending is None or p.pending.sequence != seq or item is None:
                continue
            err = item.error_code
            if err == NONE:
                before = p.isr
                if p.commit(item):
                    self._mark_isr_change(before, p.isr)
                    self.maybe_increment_hwm(now_ms, p)
                # else: a stale answer; stay pending until metadata overrides it (Kafka)
            elif err in (Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED):
                p.revert_pending()
            elif err in _WAIT_FOR_METADATA:
                pass  # stay pending; the next metadata update for the partition clears it
            else:
                self._resend_after_backoff(now_ms, p)

    def _mark_isr_change(self, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        """A shrink or expansion this leader proposed was committed: Kafka's ``Partition`` marks
        ReplicaManager's IsrShrinksPerSec / IsrExpandsPerSec then."""
        if len(after) < len(before):
            self.isr_shrinks.mark()
        elif len(after) > len(before):
            self.isr_expands.mark()

    def _isr_eligible(self, replica_id: int, state: ReplicaState) -> bool:
        """May this replica still join the ISR? (KIP-841 / KIP-903, Kafka's ``isReplicaIsrEligible``)."""
        reg = self.cache.image.brokers.get(replica_id)
        if reg is None or reg.fenced or reg.in_controlled_shutdown:
            return False
        return not self.kip903 or state.broker_epoch == reg.broker_epoch

    def maybe_increment_hwm(self, now_ms: int, p: Partition, wake: bool = True) -> bool:
        """Advance ``p``'s HWM if its rule allows (:meth:`Partition.maybe_increment_high_watermark`); when it
        moved and ``wake``, complete what waited on it. True when it moved."""
        moved = p.maybe_increment_high_watermark(now_ms, self.cache.min_isr(p.topic), self.lag_max_ms,
                                                 self._isr_eligible)
        if moved and wake:
            self._on_hwm_changed(now_ms)
        return moved

    def _on_hwm_changed(self, now_ms: int) -> None:
        if self.delayed_produces:
            self.complete_delayed_produces(now_ms)
        self.wake_delayed_fetches(now_ms)
        if self.hwm_listener is not None:
            self.hwm_listener(now_ms)

    # ================================================================= the group coordinator's partitions
    # (kraftlog.broker.coordinator_runtime.PartitionWriter: Kafka's CoordinatorPartitionWriter)
    def coordinator_leaders(self) -> dict[int, int]:
        """The ``__consumer_offsets`` partitions led here: index -> leader epoch (none while offline)."""
        if self.logs.offline:
            return {}
        return {key[1]: p.leader_epoch for key, p in self.partitions.items()
                if key[0] == OFFSETS_TOPIC and p.is_leader}

    def coordinator_high_watermark(self, index: int) -> int:
        """The HWM of ``__consumer_offsets`` partition ``index``, -1 when not hosted here."""
        p = self.partitions.get((OFFSETS_TOPIC, index))
        return -1 if p is None else p.log.high_watermark

    def coordinator_batches(self, index: int) -> Iterable[RecordBatch]:
        """Every batch of ``__consumer_offsets`` partition ``index`` from its log start to its LEO."""
        p = self.partitions.get((OFFSETS_TOPIC, index))
        if p is None:
            return ()
        start = p.log.log_start_offset
        return [b for b in p.log.batches() if b.next_offset > start]

    def append_coordinator_records(self, now_ms: int, index: int,
                                   records: list[tuple[bytes, bytes | None]]) -> tuple[int, int]:
        """Append the group coordinator's ``records`` (key, value) in one batch to ``__consumer_offsets``
        partition ``index`` as its leader (Kafka's ``CoordinatorPartitionWriter.append``: acks=all, the internal
        topic allowed): (NONE, the offset after the batch), or the error: UNKNOWN_TOPIC_OR_PARTITION /
        NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (ISR below ``min.insync.replicas``), RECORD_LIST_TOO_LARGE,
        KAFKA_STORAGE_ERROR (the directory goes offline)."""
        key = (OFFSETS_TOPIC, index)
        p = self.partitions.get(key)
        error = self.leader_error(p, key)
        if error != NONE or p is None:
            return error, -1
        if len(p.isr) < self.cache.min_isr(OFFSETS_TOPIC):
            return Errors.NOT_ENOUGH_REPLICAS, -1
        batch = RecordBatch(-1, -1, tuple(Record(now_ms, k, v) for k, v in records))
        try:
            stamped = p.log.append_as_leader(batch, p.leader_epoch, now_ms)
        except RecordBatchTooLargeError:
            return Errors.RECORD_LIST_TOO_LARGE, -1
        except OSError as exc:
            self._fail(now_ms, exc, f"appending to {OFFSETS_TOPIC}-{index}")
            return Errors.KAFKA_STORAGE_ERROR, -1
        self.maybe_increment_hwm(now_ms, p, wake=False)
        self.wake_delayed_fetches(now_ms)
        return NONE, stamped.last_offset + 1

    # ================================================================= Produce
    def handle_produce(self, now_ms: int, env: Envelope[m.ProduceRequest]) -> None:
        """Append a Produce's batches as leader (Kafka's ``ReplicaManager.appendRecords``); acks=all waits in
        a DelayedProduce for the HWM, acks=0 gets no answer."""
        req = env.message
        results = []
        waiting = []
        appended = False
        for pp in req.partitions:
            refused = validate_produce_records(pp.topic, pp.partition, pp.records, now_ms,
                                               self.cache.record_limits(pp.topic))
            if refused is not None:
                # Kafka's ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
                # LogValidator (kraftlog.protocol.validation): the partition's error, nothing appended.
                results.append(m.ProducePartitionResponse(pp.topic, pp.partition, refused.error_code,
                                                          error_message=refused.message,
                                                          record_errors=refused.record_errors))
                continue
            p = self.partitions.get((pp.topic, pp.partition))
            if p is None:
                results.append(m.ProducePartitionResponse(pp.topic, pp.partition,
                                                          self.missing_partition_error(pp.topic, pp.partition)))
                continue
            if not p.is_leader:
                results.append(m.ProducePartitionResponse(pp.topic, pp.partition, Errors.NOT_LEADER_OR_FOLLOWER))
                continue
            if req.acks == -1 and len(p.isr) < self.cache.min_isr(pp.topic):
                results.append(m.ProducePartitionResponse(pp.topic, pp.partition, Errors.NOT_ENOUGH_REPLICAS))
                continue
            size = sum(b.size_bytes for b in pp.records)
            if size > p.log.config.segment_bytes:
                # Kafka's UnifiedLog.append: the partition's records must fit one segment (RecordBatchTooLarge).
                results.append(m.ProducePartitionResponse(
                    pp.topic, pp.partition, Errors.RECORD_LIST_TOO_LARGE,
                    error_message=f"Message batch size is {size} bytes in append to partition {pp.topic}-"
                                  f"{pp.partition} which exceeds the maximum configured segment size of "
                                  f"{p.log.config.segment_bytes}."))
                continue
            first: int | None = None
            last = -1
            error: int = NONE
            message: str | None = None
            for batch in pp.records:
                error, duplicate_of = p.log.producer_state.check(batch)
                if error != NONE:
                    break
                if duplicate_of >= 0:
                    # A retried batch this log already holds: answer with its offsets (Kafka's
                    # DUPLICATE_SEQUENCE handling), append nothing.
                    first = duplicate_of if first is None else first
                    last = duplicate_of + batch.record_count - 1
                    continue
                try:
                    stamped = p.log.append_as_leader(batch, p.leader_epoch, now_ms)
                except RecordBatchTooLargeError as exc:  # larger than segment.bytes: refused, nothing appended
                    error, message = Errors.RECORD_LIST_TOO_LARGE, str(exc)
                    break
                except OSError as exc:  # nothing was indexed or acknowledged: the directory goes offline
                    self._fail(now_ms, exc, f"appending to {pp.topic}-{pp.partition}")
                    error = Errors.KAFKA_STORAGE_ERROR
                    break
                first = stamped.base_offset if first is None else first
                last = stamped.last_offset
                self.bytes_in.count += stamped.size_bytes
                self.messages_in.count += stamped.record_count
            if error != NONE:
                results.append(m.ProducePartitionResponse(pp.topic, pp.partition, error, error_message=message))
                continue
            assert first is not None  # a produce partition carries at least one batch (validated above)
            appended = True
            if req.acks == -1:
                waiting.append(ProducePartitionStatus(pp.topic, pp.partition, last + 1, p.leader_epoch, first))
            results.append(m.ProducePartitionResponse(pp.topic, pp.partition, NONE, first, -1,
                                                      p.log.log_start_offset))
        if appended:
            for pp in req.partitions:
                p = self.partitions.get((pp.topic, pp.partition))
                if p is not None and p.is_leader:
                    self.maybe_increment_hwm(now_ms, p, wake=False)
            self.wake_delayed_fetches(now_ms)
        if req.acks == 0:
            return
        if req.acks == -1 and waiting:
            self.delayed_produces.append(DelayedProduce(env, now_ms + req.timeout_ms, waiting, results))
            self.complete_delayed_produces(now_ms)
            return
        self._channel.send_response(env, m.ProduceResponse(tuple(results)))

    def complete_delayed_produces(self, now_ms: int) -> None:
        """Answer every DelayedProduce whose partitions all completed (Kafka's ``DelayedProduce.tryComplete``
        and ``onExpiration``)."""
        keep = []
        for dp in self.delayed_produces:
            done = True
            for part in dp.parts:
                if part.error is not None:
                    continue
                topic, index = part.topic, part.partition
                p = self.partitions.get((topic, index))
                if p is None:
                    part.error = self.offline_error(topic, index) or Errors.NOT_LEADER_OR_FOLLOWER
                elif not p.is_leader:
                    part.error = Errors.NOT_LEADER_OR_FOLLOWER
                elif p.log.high_watermark >= part.required_offset:
                    # Kafka's checkEnoughReplicasReachOffset: min ISR against the *maximal* ISR.
                    part.error = (Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                                  if len(p.maximal_isr) < self.cache.min_isr(topic) else NONE)
                elif now_ms >= dp.deadline_ms:
                    part.error = Errors.REQUEST_TIMED_OUT
                else:
                    done = False
            if not done:
                keep.append(dp)
                continue
            status = {(s.topic, s.partition): (s.error, s.base_offset) for s in dp.parts}
            out = []
            for r in dp.results:
                if (r.topic, r.partition) in status:
                    err, base = status[(r.topic, r.partition)]
                    assert err is not None  # every part is done
                    out.append(m.ProducePartitionResponse(r.topic, r.partition, err,
                                                          base if err == NONE else -1, -1, r.log_start_offset))
                else:
                    out.append(r)
            self._channel.send_response(dp.envelope, m.ProduceResponse(tuple(out)))
        self.delayed_produces = keep

    def _fail_delayed_produces(self, key: tuple[str, int]) -> None:
        for dp in self.delayed_produces:
            for part in dp.parts:
                if (part.topic, part.partition) == key and part.error is None:
                    part.error = Errors.NOT_LEADER_OR_FOLLOWER

    # ================================================================= timers
    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and this manager's timers (ms): ISR checks, parked requests, AlterPartition
        retries."""
        if self.partitions and self.next_isr_check_ms < d:
            d = self.next_isr_check_ms
        for deadline, _ in self.delayed_fetches:
            if deadline < d:
                d = deadline
        for dp in self.delayed_produces:
            if dp.deadline_ms < d:
                d = dp.deadline_ms
        d = self.delete_records.next_deadline(d)
        if self.alter_dirty:
            for p in self.partitions.values():
                if p.pending is not None and not p.pending.sent and p.pending.retry_at_ms < d:
                    d = p.pending.retry_at_ms
        return d
