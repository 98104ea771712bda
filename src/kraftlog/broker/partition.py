"""One partition replica on a broker: Kafka's ``Partition`` (leader and follower roles).

Leader rules (DESIGN.md, KIP-497, KIP-903, KIP-966):

* At most one AlterPartition in flight. Pending expand: maximal ISR = ISR + the new replica.
  Pending shrink: maximal ISR = the committed ISR. Errors as Kafka's ``handleAlterPartitionError``:
  INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED revert to the committed state; UNKNOWN_TOPIC_OR_PARTITION,
  UNKNOWN_TOPIC_ID, FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST and NEW_LEADER_ELECTED
  stay pending until metadata overrides the state; other errors are retried. A stale success stays
  pending too (``handleAlterPartitionUpdate``).
* HWM = min LEO over the maximal ISR and the caught-up replicas; never moves backwards; level ``elr``+:
  no advance while the committed ISR is below the effective min ISR.
* ISR expansion needs: follower LEO >= HWM and >= the start offset of the leader's current epoch, a
  fetch in the current leader epoch, an active (unfenced, not shutting down) broker, and at level
  ``kip903``+ a fetch broker epoch equal to the metadata cache's.
* ISR shrink: a follower not caught up for ``replica.lag.time.max.ms``.

Follower rules (KIP-320 / KIP-595 fetch): fetch with CurrentLeaderEpoch and LastFetchedEpoch; on a
diverging epoch truncate as Kafka's ``AbstractFetcherThread.getOffsetTruncationState``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..level import Level
from ..metadata.image import PartitionRegistration
from ..metadata.records import NO_LEADER, RECOVERED
from ..protocol import messages as m
from ..storage.log import PartitionLog


@dataclass(slots=True)
class ReplicaState:
    """What a leader knows of one follower (Kafka's ``Replica``/``ReplicaState``); times in ms."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1
    broker_epoch: int = -1
    fetch_leader_epoch: int = -1
    #: the follower's log start offset from its last Fetch (Kafka's ``ReplicaState.logStartOffset``)
    log_start_offset: int = -1


@dataclass(slots=True)
class PendingAlterPartition:
    """The one in-flight AlterPartition of a leader: proposed ISR with broker epochs."""

    new_isr: tuple[int, ...]
    new_isr_with_epochs: tuple[m.BrokerState, ...]
    leader_recovery_state: int
    sequence: int
    sent: bool = False
    retry_at_ms: int = 0


class Partition:
    """A replica of ``(topic, index)`` on broker ``broker_id``, owning its PartitionLog."""

    def __init__(self, broker_id: int, topic: str, index: int, topic_id: uuid.UUID, log: PartitionLog,
                 level: Level) -> None:
        self.broker_id = broker_id
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.level = level
        #: KIP-966 (level ``elr``+): the HWM does not advance while the committed ISR is below min ISR.
        self.strict_min_isr_hwm = level >= Level.ELR
        self.replicas: tuple[int, ...] = ()
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.leader_recovery_state = RECOVERED
        self.is_leader = False
        # leader state
        self.isr: tuple[int, ...] = ()
        self.maximal_isr: frozenset[int] = frozenset()
        self.pending: PendingAlterPartition | None = None
        self.followers: dict[int, ReplicaState] = {}
        self.leader_epoch_start_offset = 0
        # follower state
        self.fetch_failed_epoch = -1  # FENCED_LEADER_EPOCH seen in this epoch: wait for metadata
        self.fetch_inflight = False
        #: An AlterPartition for this partition is out and unanswered. Kafka's AlterPartitionManager keeps
        #: one in flight per partition and refuses another (OPERATION_NOT_ATTEMPTED) until it is answered,
        #: even when metadata reset the pending state meanwhile.
        self.alter_inflight = False
        self._alter_sequence = 0

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    # ============================================================ role changes
    def make_leader(self, reg: PartitionRegistration, now_ms: int) -> bool:
        """Apply a registration naming this broker leader (Kafka's ``Partition.makeLeader``). Returns True
        when a new leader epoch began.

        The local LeaderRecoveryState becomes RECOVERED at once (KIP-704: the leader has nothing to
        recover); the controller's RECOVERING clears with the next ISR change, whose AlterPartition
        carries RECOVERED. On a new leader epoch, follower state is reset as Kafka's
        ``Replica.resetReplicaState`` does: a new leader forgets every follower's LEO and broker epoch; a
        leader re-elected in a new epoch (e.g. the ISR-shrink bump of levels classic/kip903) keeps them.
        Either way a follower's last caught-up time is now if it is in the ISR, else 0."""
        self.replicas = reg.replicas
        self.leader_recovery_state = RECOVERED
        if reg.leader_epoch > self.leader_epoch or not self.is_leader:
            is_new_leader = not self.is_leader
            self.is_leader = True
            self.leader_id = self.broker_id
            self.leader_epoch = reg.leader_epoch
            self.partition_epoch = reg.partition_epoch
            self.isr = reg.isr
            self.maximal_isr = frozenset(reg.isr)
            self.pending = None
            leo = self.log.log_end_offset
            self.log.epoch_cache.assign(reg.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            old = self.followers
            followers = {}
            for r in reg.replicas:
                if r == self.broker_id:
                    continue
                in_sync = r in reg.isr
                st = old.get(r)
                if is_new_leader or st is None:
                    followers[r] = ReplicaState(last_caught_up_ms=now_ms if in_sync else 0)
                else:
                    followers[r] = ReplicaState(
                        log_end_offset=st.log_end_offset, last_caught_up_ms=now_ms if in_sync else 0,
                        last_fetch_ms=now_ms if in_sync else 0, last_fetch_leader_leo=leo,
                        broker_epoch=st.broker_epoch, fetch_leader_epoch=st.fetch_leader_epoch)
            self.followers = followers
            self.fetch_inflight = False
            return True
        if reg.partition_epoch > self.partition_epoch:
            self.partition_epoch = reg.partition_epoch
            self.isr = reg.isr
            self.maximal_isr = frozenset(reg.isr)
            self.pending = None
        return False

    def make_follower(self, reg: PartitionRegistration) -> bool:
        """Apply a registration naming another leader (or none). True when the leader epoch changed."""
        self.replicas = reg.replicas
        self.leader_recovery_state = reg.leader_recovery_state
        changed = reg.leader_epoch > self.leader_epoch or self.is_leader
        if changed:
            self.is_leader = False
            self.leader_id = reg.leader
            self.leader_epoch = reg.leader_epoch
            self.pending = None
            self.followers = {}
            self.isr = reg.isr
            self.maximal_isr = frozenset()
            self.fetch_failed_epoch = -1
            self.fetch_inflight = False
        self.partition_epoch = max(self.partition_epoch, reg.partition_epoch)
        self.isr = reg.isr
        return changed

    # ============================================================ leader: HWM
    def maybe_increment_high_watermark(self, now_ms: int, min_isr: int, lag_max_ms: int,
                                       isr_eligible: Callable[[int, ReplicaState], bool] | None = None) -> bool:
        """Advance the HWM to the min LEO over the maximal ISR and the caught-up replicas that may still
        join the ISR (Kafka's ``maybeIncrementLeaderHW``: ``isr_eligible(replica)`` — not fenced, not
        shutting down, KIP-903 epoch match). True if it moved."""
        if not self.is_leader:
            return False
        log = self.log
        leo = log.log_end_offset
        hw = log.high_watermark
        if hw >= leo:
            return False  # the HWM never exceeds the LEO: nothing can move
        if self.strict_min_isr_hwm and len(self.isr) < min_isr:
            return False  # KIP-966: no HWM advance while the committed ISR is below min ISR
        new_hw = leo
        maximal = self.maximal_isr
        for r, st in self.followers.items():
            f_leo = st.log_end_offset
            if f_leo >= new_hw:
                continue
            if r in maximal or (f_leo >= 0 and (f_leo == leo or now_ms - st.last_caught_up_ms <= lag_max_ms)
                                and (isr_eligible is None or isr_eligible(r, st))):
                new_hw = f_leo
        if new_hw > hw:
            log.update_high_watermark(new_hw)
            return True
        return False

    # ============================================================ leader: follower fetch
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, broker_epoch: int,
                                    fetch_leader_epoch: int, now_ms: int, log_start_offset: int = -1) -> None:
        """Kafka's ``Replica.updateFetchStateOrThrow``: LEO, log start offset and last-caught-up time of a
        follower."""
        st = self.followers.get(replica_id)
        if st is None:
            st = self.followers[replica_id] = ReplicaState()
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            if now_ms > st.last_caught_up_ms:
                st.last_caught_up_ms = now_ms
        elif fetch_offset >= st.last_fetch_leader_leo >= 0:
            if st.last_fetch_ms > st.last_caught_up_ms:
                st.last_caught_up_ms = st.last_fetch_ms
        st.log_end_offset = fetch_offset
        st.last_fetch_ms = now_ms
        st.last_fetch_leader_leo = leo
        st.broker_epoch = broker_epoch
        st.fetch_leader_epoch = fetch_leader_epoch
        st.log_start_offset = log_start_offset

    def isr_candidate(self, replica_id: int, metadata_broker_epoch: int | None, broker_active: bool) -> bool:
        """May ``replica_id`` be proposed for the ISR now? (DESIGN.md: ISR expansion rules)."""
        if not self.is_leader or self.pending is not None or self.alter_inflight or replica_id in self.isr:
            return False
        st = self.followers.get(replica_id)
        if st is None or st.log_end_offset < 0:
            return False
        if st.log_end_offset < self.log.high_watermark or st.log_end_offset < self.leader_epoch_start_offset:
            return False
        if st.fetch_leader_epoch != self.leader_epoch or not broker_active:
            return False
        if self.level >= Level.KIP903 and st.broker_epoch != metadata_broker_epoch:
            return False
        return True

    def out_of_sync_replicas(self, now_ms: int, lag_max_ms: int) -> list[int]:
        """ISR followers not caught up within ``replica.lag.time.max.ms`` (Kafka's getOutOfSyncReplicas)."""
        leo = self.log.log_end_offset
        out = []
        for r in self.isr:
            if r == self.broker_id:
                continue
            st = self.followers.get(r)
            if st is None:
                continue
            if st.log_end_offset != leo and now_ms - st.last_caught_up_ms > lag_max_ms:
                out.append(r)
        return out

    def propose(self, new_isr: tuple[int, ...], epochs: dict[int, int], expand: bool,
                leader_recovery_state: int | None = None) -> PendingAlterPartition:
        """Start an AlterPartition: expand makes the maximal ISR the union, shrink keeps the committed ISR."""
        self._alter_sequence += 1
        ordered = tuple(r for r in self.replicas if r in set(new_isr))
        with_epochs = tuple(m.BrokerState(r, epochs.get(r, -1)) for r in ordered)
        lrs = self.leader_recovery_state if leader_recovery_state is None else leader_recovery_state
        self.pending = PendingAlterPartition(ordered, with_epochs, lrs, self._alter_sequence)
        self.maximal_isr = frozenset(self.isr) | frozenset(ordered) if expand else frozenset(self.isr)
        return self.pending

    def alter_partition_item(self) -> m.AlterPartitionItem:
        p = self.pending
        assert p is not None  # sent only while a change is pending
        return m.AlterPartitionItem(self.topic_id, self.index, self.leader_epoch, p.new_isr_with_epochs,
                                    self.partition_epoch, p.leader_recovery_state)

    def revert_pending(self) -> None:
        """Drop the pending change and return to the committed ISR (INELIGIBLE_REPLICA etc.)."""
        self.pending = None
        self.maximal_isr = frozenset(self.isr)

    def commit(self, item: m.AlterPartitionResponseItem) -> bool:
        """Adopt the controller's answer to our AlterPartition (Kafka's ``handleAlterPartitionUpdate``).

        A stale answer (another leader epoch, or a partition epoch older than ours) is ignored and the
        change stays pending until metadata overrides it; returns False then."""
        if item.leader_epoch != self.leader_epoch or item.partition_epoch < self.partition_epoch:
            return False
        self.isr = tuple(item.isr)
        self.partition_epoch = item.partition_epoch
        self.leader_recovery_state = item.leader_recovery_state
        self.maximal_isr = frozenset(self.isr)
        self.pending = None
        return True

    # ============================================================ follower truncation
    def truncation_offset(self, diverging: m.EpochEndOffset) -> int:
        """Where to truncate on a diverging epoch (Kafka's ``getOffsetTruncationState``)."""
        leo = self.log.log_end_offset
        if diverging.end_offset < 0:
            return min(self.log.high_watermark, leo)
        if diverging.epoch < 0:
            return min(diverging.end_offset, leo)
        f_epoch, f_end = self.log.epoch_cache.end_offset_for(diverging.epoch, leo)
        if f_epoch < 0:
            return min(diverging.end_offset, leo)
        if f_epoch != diverging.epoch:
            return min(f_end, leo)
        return min(diverging.end_offset, f_end, leo)
