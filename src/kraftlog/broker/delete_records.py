"""DeleteRecords (API key 21) on the leader: Kafka's ``ReplicaManager.deleteRecords``,
``Partition.deleteRecordsOnLeader`` and ``DelayedDeleteRecords``.

A request moves each partition's log start offset up to its offset (-1: the HWM), on the leader at once
(:meth:`~kraftlog.storage.log.PartitionLog.maybe_increment_log_start_offset`); the followers learn it from
the ``LogStartOffset`` of their next Fetch answer and report theirs in the Fetch after that. The answer
gives each partition's *low watermark*, the least log start offset of the leader and of every replica on a
live (registered, unfenced) broker (Kafka's ``lowWatermarkIfLeader``; a follower that has not fetched yet
counts as -1); it waits (parked, up to ``timeout_ms``) until the low watermark reaches the requested offset
in every partition, and a partition that is still short then gets REQUEST_TIMED_OUT. The records below the
log start offset are unreadable at once (Fetch answers OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST the new log
start) and their segments go with the next retention pass (``log.retention.check.interval.ms``).

Errors per partition (Kafka's): UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR as
for any partition request; OFFSET_OUT_OF_RANGE for an offset below -1 or above the HWM. As in Kafka, the new
log start offset reaches ``log-start-offset-checkpoint`` with the log manager's next checkpoint
(``log.flush.start.offset.checkpoint.interval.ms``), not at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Envelope
from .channel import BrokerChannel, LogDirFailureHandler
from .partition import Partition

NONE = Errors.NONE
#: (hosted partition or None, its key) -> the error a leader-only request gets for it (NONE when led here)
_ErrorOf = Callable[[Partition | None, tuple[str, int]], int]
#: the ids of the live brokers now
_Alive = Callable[[], set[int]]
#: DeleteRecords' offset meaning "up to the high watermark" (Kafka's ``DeleteRecordsRequest.HIGH_WATERMARK``).
HIGH_WATERMARK = -1


@dataclass(slots=True)
class _Pending:
    """One partition of a parked DeleteRecords: the offset its low watermark must reach."""

    key: tuple[str, int]
    required_offset: int


@dataclass(slots=True)
class DelayedDeleteRecords:
    """A DeleteRecords waiting for low watermarks (Kafka's ``DelayedDeleteRecords``): ``results`` in request
    order, ``pending`` the positions in it still waiting; ``deadline_ms`` when it is answered anyway."""

    envelope: Envelope[m.DeleteRecordsRequest]
    deadline_ms: int
    results: list[m.DeleteRecordsPartitionResponse]
    pending: dict[int, _Pending]


def low_watermark(p: Partition, alive: set[int]) -> int:
    """Kafka's ``Partition.lowWatermarkIfLeader``: the least log start offset of the leader's log and of the
    followers on ``alive`` brokers (as their last Fetch reported it; -1 before one)."""
    low = p.log.log_start_offset
    for replica in p.replicas:
        if replica == p.broker_id or replica not in alive:
            continue
        st = p.followers.get(replica)
        start = st.log_start_offset if st is not None else -1
        if start < low:
            low = start
    return low


class DeleteRecordsManager:
    """The DeleteRecords requests of one broker: answered at once or parked until the low watermarks
    reach them. ``partitions``: the replica manager's hosted partitions; ``error_of``: the error of a
    partition (None when not hosted here) and its key for a request only its leader answers; ``alive``: the ids of the
    registered, unfenced brokers now; ``fail``: the broker's log-directory failure handler. Times in ms."""

    def __init__(self, partitions: dict[tuple[str, int], Partition], error_of: _ErrorOf, alive: _Alive,
                 channel: BrokerChannel, fail: LogDirFailureHandler) -> None:
        self._partitions = partitions
        self._error_of = error_of
        self._alive = alive
        self._channel = channel
        self._fail = fail
        self.parked: list[DelayedDeleteRecords] = []

    def handle(self, now_ms: int, env: Envelope[m.DeleteRecordsRequest]) -> None:
        """Move each partition's log start offset up and answer now, or park the request (module docstring)."""
        req = env.message
        results: list[m.DeleteRecordsPartitionResponse] = []
        pending: dict[int, _Pending] = {}
        alive = self._alive()
        for dp in req.partitions:
            key = (dp.topic, dp.partition)
            p = self._partitions.get(key)
            error = self._error_of(p, key)
            if error != NONE or p is None:
                results.append(m.DeleteRecordsPartitionResponse(dp.topic, dp.partition, -1, error))
                continue
            log = p.log
            offset = log.high_watermark if dp.offset == HIGH_WATERMARK else dp.offset
            if offset < 0 or offset > log.high_watermark:
                results.append(m.DeleteRecordsPartitionResponse(dp.topic, dp.partition, -1,
                                                                Errors.OFFSET_OUT_OF_RANGE))
                continue
            try:
                log.maybe_increment_log_start_offset(offset, now_ms)
            except OSError as exc:  # the epoch cache's rewrite failed: the directory goes offline
                self._fail(now_ms, exc, f"deleting records of {dp.topic}-{dp.partition}")
                results.append(m.DeleteRecordsPartitionResponse(dp.topic, dp.partition, -1,
                                                                Errors.KAFKA_STORAGE_ERROR))
                continue
            low = low_watermark(p, alive)
            if low >= offset:
                results.append(m.DeleteRecordsPartitionResponse(dp.topic, dp.partition, low, NONE))
            else:
                pending[len(results)] = _Pending(key, offset)
                results.append(m.DeleteRecordsPartitionResponse(dp.topic, dp.partition, low,
                                                                Errors.REQUEST_TIMED_OUT))
        if pending and req.timeout_ms > 0:
            self.parked.append(DelayedDeleteRecords(env, now_ms + req.timeout_ms, results, pending))
        else:
            self._channel.send_response(env, m.DeleteRecordsResponse(tuple(results)))

    def try_complete(self, now_ms: int) -> None:
        """Answer the parked requests whose partitions all reached their offsets or failed, and those whose
        time ran out (their waiting partitions keep REQUEST_TIMED_OUT) (``DelayedDeleteRecords.tryComplete``
        and ``onExpiration``)."""
        if not self.parked:
            return
        alive = self._alive()
        keep = []
        for dd in self.parked:
            for i, pend in list(dd.pending.items()):
                p = self._partitions.get(pend.key)
                error = self._error_of(p, pend.key)
                old = dd.results[i]
                if error != NONE or p is None:
                    dd.results[i] = m.DeleteRecordsPartitionResponse(old.topic, old.partition, -1, error)
                    del dd.pending[i]
                    continue
                low = low_watermark(p, alive)
                if low >= pend.required_offset:
                    dd.results[i] = m.DeleteRecordsPartitionResponse(old.topic, old.partition, low, NONE)
                    del dd.pending[i]
                elif low != old.low_watermark:
                    dd.results[i] = m.DeleteRecordsPartitionResponse(old.topic, old.partition, low,
                                                                    Errors.REQUEST_TIMED_OUT)
            if not dd.pending or now_ms >= dd.deadline_ms:
                self._channel.send_response(dd.envelope, m.DeleteRecordsResponse(tuple(dd.results)))
            else:
                keep.append(dd)
        self.parked = keep

    def next_deadline(self, d: int) -> int:
        """The earlier of ``d`` and the first parked request's deadline (ms)."""
        for dd in self.parked:
            if dd.deadline_ms < d:
                d = dd.deadline_ms
        return d
