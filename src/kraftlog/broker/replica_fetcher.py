"""Kafka's ``ReplicaFetcherManager`` and its fetcher threads: a follower fetches from each leader it follows
(one Fetch in flight per leader), appends what comes back, takes the leader's HWM (bounded by its LEO), and
truncates on a diverging epoch as Kafka's ``AbstractFetcherThread`` does (KIP-320 / KIP-595): the offset
comes from :meth:`Partition.truncation_offset`. A FENCED_LEADER_EPOCH answer stops fetching the partition
until metadata gives a new leader epoch; other errors back off for ``replica.fetch.backoff.ms``."""

from __future__ import annotations

from ..metadata.records import NO_LEADER
from ..protocol import messages as m
from ..protocol.errors import Errors
from .channel import BrokerChannel, FetchContext, LogDirFailureHandler
from .config import BrokerConfig
from .lifecycle import STARTING, BrokerLifecycleManager
from .metadata_cache import MetadataCache
from .partition import Partition
from .replica_manager import ReplicaManager

NONE = Errors.NONE
FENCED_LEADER_EPOCH = Errors.FENCED_LEADER_EPOCH
OFFSET_OUT_OF_RANGE = Errors.OFFSET_OUT_OF_RANGE


class ReplicaFetcherManager:
    """The follower fetches of broker ``broker_id`` for the partitions of ``replicas`` it follows, sent
    through ``channel``; ``fail``: the broker's log-directory failure handler; times in ms.

    ``dirty``: some followed partition may need a Fetch sent (set by whatever may change that: metadata,
    registration, answers, timeouts), so that :meth:`send_fetches` skips the scan otherwise."""

    def __init__(self, broker_id: int, config: BrokerConfig, cache: MetadataCache, replicas: ReplicaManager,
                 lifecycle: BrokerLifecycleManager, channel: BrokerChannel, fail: LogDirFailureHandler) -> None:
        self.broker_id = broker_id
        self.config = config
        self._cache = cache
        self._replicas = replicas
        self._lifecycle = lifecycle
        self._channel = channel
        self._fail = fail
        self.fetch_inflight: dict[int, int] = {}  # leader id -> correlation id
        self.fetch_backoff_until: dict[int, int] = {}
        self.dirty = True

    def send_fetches(self, now_ms: int) -> None:
        """One Fetch in flight per leader, for every partition we follow (Kafka's fetcher threads).

        Fetch backoffs that have run out end here, whether or not we still fetch from that leader (one
        for a leader we no longer follow would otherwise stay a past deadline, and the broker would be
        ticked every millisecond)."""
        if self.fetch_backoff_until:
            for leader in [leader for leader, until in self.fetch_backoff_until.items() if until <= now_ms]:
                del self.fetch_backoff_until[leader]
                self.dirty = True
        lifecycle = self._lifecycle
        if lifecycle.broker_epoch < 0 or lifecycle.state == STARTING or not self.dirty:
            return
        by_leader: dict[int, list[Partition]] = {}
        for p in self._replicas.partitions.values():  # insertion order: deterministic (metadata replay order)
            if p.is_leader or p.leader_id == NO_LEADER or p.leader_id == self.broker_id or p.fetch_inflight:
                continue
            if p.fetch_failed_epoch == p.leader_epoch:
                continue
            by_leader.setdefault(p.leader_id, []).append(p)
        config = self.config
        for leader, parts in by_leader.items():
            if leader in self.fetch_inflight:
                continue
            if leader in self.fetch_backoff_until:
                continue  # still backing off (the ones that ran out were dropped above)
            fps, keys, epochs = [], [], []
            for p in parts:
                p.fetch_inflight = True
                log = p.log
                fps.append(m.FetchPartition(
                    p.topic_id, p.index, p.leader_epoch, log.log_end_offset,
                    log.epoch_cache.latest_epoch(), log.log_start_offset, config.fetch_max_bytes))
                keys.append((p.topic, p.index))
                epochs.append(p.leader_epoch)
            req = m.FetchRequest(self.broker_id, lifecycle.broker_epoch, config.fetch_wait_max_ms, 1, tuple(fps))
            corr = self._channel.send_request(leader, req, now_ms, config.replica_timeout_ms,
                                              FetchContext(leader, keys, epochs))
            self.fetch_inflight[leader] = corr
        self.dirty = bool(self.fetch_backoff_until)

    def on_fetch_response(self, now_ms: int, context: FetchContext, resp: m.FetchResponse) -> None:
        """Append what a leader returned, truncate on a diverging epoch, take its HWM."""
        leader, keys, epochs = context.leader, context.keys, context.epochs
        self.dirty = True
        self.fetch_inflight.pop(leader, None)
        partitions = self._replicas.partitions
        for key in keys:
            p = partitions.get(key)
            if p is not None:
                p.fetch_inflight = False
        if resp.error_code != NONE:
            self.fetch_backoff_until[leader] = now_ms + self.config.fetch_backoff_ms
            return
        sent = {keys[0]: epochs[0]} if len(keys) == 1 else dict(zip(keys, epochs, strict=True))
        topic_names = self._cache.image.topic_names
        backoff = False
        for pr in resp.partitions:
            name = topic_names.get(pr.topic_id)
            if name is None:
                continue  # the topic left the image while the fetch was in flight: no partition of ours
            key = (name, pr.partition)
            p = partitions.get(key)
            if p is None or p.is_leader or p.leader_epoch != sent.get(key) or p.leader_id != leader:
                continue  # the partition moved on while the fetch was in flight
            if pr.error_code == FENCED_LEADER_EPOCH:
                p.fetch_failed_epoch = p.leader_epoch  # our epoch is stale: wait for metadata
                continue
            log = p.log
            if pr.error_code == OFFSET_OUT_OF_RANGE and log.log_end_offset < pr.log_start_offset:
                # Kafka's AbstractFetcherThread.handleOutOfRangeError / fetchOffsetAndTruncate: retention or
                # DeleteRecords moved the leader's log start offset past our LEO; what we have is below it, so
                # the log restarts empty at the leader's log start (truncateFullyAndStartAt) and fetches on.
                try:
                    log.truncate_fully_and_start_at(pr.log_start_offset, now_ms)
                except OSError as exc:
                    self._fail(now_ms, exc, f"restarting {key[0]}-{key[1]} at the leader's log start offset")
                    return
                continue
            if pr.error_code != NONE:
                backoff = True
                continue
            try:
                if pr.diverging_epoch is not None:
                    log.truncate_to(p.truncation_offset(pr.diverging_epoch), now_ms)
                    continue
                if pr.records:
                    # (a compacted leader's log has gaps: the first batch may start past the LEO)
                    if pr.records[0].base_offset < log.log_end_offset:
                        batches = [b for b in pr.records if b.base_offset >= log.log_end_offset]
                        if not batches:
                            continue
                        log.append_as_follower(batches, now_ms)
                    else:
                        log.append_as_follower(pr.records, now_ms)
            except OSError as exc:  # the follower's fetchers stop with its directory (removeFetcherForPartitions)
                self._fail(now_ms, exc, f"appending fetched data to {key[0]}-{key[1]}")
                return
            if pr.high_watermark >= 0:
                log.update_high_watermark(pr.high_watermark)  # follower HWM = min(leader HWM, LEO)
            if pr.log_start_offset > log.log_start_offset:
                # Kafka's ReplicaFetcherThread.processPartitionData: the follower takes the leader's log start
                # offset (LeaderOffsetIncremented), never past its own HWM; retention deletes below it.
                try:
                    log.maybe_increment_log_start_offset(min(pr.log_start_offset, log.high_watermark), now_ms)
                except OSError as exc:
                    self._fail(now_ms, exc, f"moving the log start offset of {key[0]}-{key[1]}")
                    return
        if backoff:
            self.fetch_backoff_until[leader] = now_ms + self.config.fetch_backoff_ms

    def on_fetch_timeout(self, now_ms: int, context: FetchContext) -> None:
        """A Fetch went unanswered: back off from its leader for ``replica.fetch.backoff.ms``."""
        leader = context.leader
        self.fetch_inflight.pop(leader, None)
        partitions = self._replicas.partitions
        for key in context.keys:
            p = partitions.get(key)
            if p is not None:
                p.fetch_inflight = False
        self.fetch_backoff_until[leader] = now_ms + self.config.fetch_backoff_ms
        self.dirty = True

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and the end of any fetch backoff (ms)."""
        for deadline in self.fetch_backoff_until.values():
            if deadline < d:
                d = deadline
        return d
