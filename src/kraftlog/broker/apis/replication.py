"""The replication APIs a broker serves (Kafka's ``KafkaApis`` handlers over its ``ReplicaManager``): Fetch and
Produce (answered by the :class:`~kraftlog.broker.replica_manager.ReplicaManager`, parked when they must
wait), DeleteRecords (:mod:`kraftlog.broker.delete_records`), ListOffsets, OffsetForLeaderEpoch (KIP-320's
leader-epoch fencing), and GetReplicaLogInfo (KIP-966 part 2)."""

from __future__ import annotations

from ...protocol import messages as m
from ...protocol.errors import Errors
from ...protocol.node import Envelope
from ...storage.log import PartitionLog
from ..channel import BrokerChannel
from ..lifecycle import BrokerLifecycleManager
from ..log_manager import LogManager
from ..metadata_cache import MetadataCache
from ..replica_manager import ReplicaManager
from .table import HandlerTable, entry

NONE = Errors.NONE
#: GetReplicaLogInfo answers at most this many partitions (trunk's GetReplicaLogInfoResponse, HasMoreData).
REPLICA_LOG_INFO_LIMIT = 1000


class ReplicationApis:
    """Fetch, Produce, ListOffsets, OffsetForLeaderEpoch and GetReplicaLogInfo for broker ``broker_id``."""

    def __init__(self, broker_id: int, cache: MetadataCache, replicas: ReplicaManager, logs: LogManager,
                 lifecycle: BrokerLifecycleManager, channel: BrokerChannel) -> None:
        self.broker_id = broker_id
        self._cache = cache
        self._replicas = replicas
        self._logs = logs
        self._lifecycle = lifecycle
        self._channel = channel

    def handlers(self) -> HandlerTable:
        """This family's rows of the dispatch table."""
        return dict((
            entry(m.FetchRequest, self.fetch),
            entry(m.ProduceRequest, self._replicas.handle_produce),
            entry(m.ListOffsetsRequest, self.list_offsets),
            entry(m.DeleteRecordsRequest, self._replicas.delete_records.handle),
            entry(m.OffsetForLeaderEpochRequest, self.offset_for_leader_epoch),
            entry(m.GetReplicaLogInfoRequest, self.get_replica_log_info),
        ))

    def fetch(self, now_ms: int, env: Envelope[m.FetchRequest]) -> None:
        """Fetch: answered now, or parked until data arrives (Kafka's DelayedFetch)."""
        self._replicas.handle_fetch(now_ms, env, may_park=True)

    def list_offsets(self, now_ms: int, env: Envelope[m.ListOffsetsRequest]) -> None:
        """ListOffsets: the earliest offset, the latest (the HWM; OFFSET_NOT_AVAILABLE while the HWM lags the
        leader epoch's start offset, KIP-207), the record with the largest timestamp (MAX_TIMESTAMP, KIP-734),
        or the first offset whose timestamp reaches the requested one below the HWM, each with its leader
        epoch; leader-epoch fencing first (KIP-320)."""
        req = env.message
        replicas = self._replicas
        out = []
        for lp in req.partitions:
            p = replicas.partitions.get((lp.topic, lp.partition))
            error = replicas.fetch_partition_error(p, lp.current_leader_epoch, (lp.topic, lp.partition))
            if error != NONE:
                out.append(m.ListOffsetsPartitionResponse(lp.topic, lp.partition, error))
                continue
            assert p is not None  # no error: the partition is led here
            log = p.log
            if lp.timestamp == m.EARLIEST_TIMESTAMP:
                offset = log.log_start_offset
                epoch = log.epoch_cache.epoch_for_offset(offset)
            elif lp.timestamp == m.LATEST_TIMESTAMP:
                if log.high_watermark < p.leader_epoch_start_offset:
                    out.append(m.ListOffsetsPartitionResponse(lp.topic, lp.partition, Errors.OFFSET_NOT_AVAILABLE))
                    continue
                offset = log.high_watermark
                epoch = log.epoch_cache.latest_epoch()
            elif lp.timestamp == m.MAX_TIMESTAMP:
                offset, epoch, found = self._max_timestamp(log)
                out.append(m.ListOffsetsPartitionResponse(lp.topic, lp.partition, NONE, found, offset, epoch))
                continue
            else:
                # Through the segments' time and offset indexes (PartitionLog.offset_for_timestamp); Kafka
                # answers the found record's timestamp, -1 with offset -1 when none qualifies.
                hit = log.offset_for_timestamp(lp.timestamp, log.high_watermark)
                at = hit if hit is not None else (-1, -1, -1)
                out.append(m.ListOffsetsPartitionResponse(lp.topic, lp.partition, NONE, at[2], at[0], at[1]))
                continue
            out.append(m.ListOffsetsPartitionResponse(lp.topic, lp.partition, NONE, lp.timestamp, offset,
                                                      epoch))
        self._channel.send_response(env, m.ListOffsetsResponse(tuple(out)))

    @staticmethod
    def _max_timestamp(log: PartitionLog) -> tuple[int, int, int]:
        """ListOffsets MAX_TIMESTAMP (KIP-734, v7): ``(offset, leader_epoch, timestamp)`` of the first record
        carrying the largest timestamp below the HWM (Kafka's ``offsetOfMaxTimestampSoFar``: a later record
        with an equal timestamp does not replace it); ``(-1, -1, -1)`` when no record is below the HWM.
        Kafka filters the log-wide answer by ``offset < lastFetchableOffset``; searching below the HWM
        instead answers the largest timestamp a consumer can read rather than nothing."""
        hwm = log.high_watermark
        offset, epoch, found = -1, -1, -1
        for batch in log.batches():
            if batch.base_offset >= hwm:
                break
            if batch.max_timestamp <= found and batch.next_offset <= hwm:
                continue  # Kafka's time index: a batch whose maxTimestamp cannot win is not decoded
            for at, rec in zip(batch.record_offsets(), batch.records, strict=True):
                if at >= hwm:
                    break
                if rec.timestamp > found or offset < 0:
                    offset, epoch, found = at, batch.partition_leader_epoch, rec.timestamp
        return offset, epoch, found

    def offset_for_leader_epoch(self, now_ms: int, env: Envelope[m.OffsetForLeaderEpochRequest]) -> None:
        """OffsetForLeaderEpoch (KIP-320): the leader-epoch cache's ``endOffsetFor`` of each requested epoch,
        after leader-epoch fencing."""
        req = env.message
        replicas = self._replicas
        out = []
        for op in req.partitions:
            p = replicas.partitions.get((op.topic, op.partition))
            error = replicas.fetch_partition_error(p, op.current_leader_epoch, (op.topic, op.partition))
            if error != NONE:
                out.append(m.OffsetForLeaderEpochPartitionResponse(op.topic, op.partition, error))
                continue
            assert p is not None  # no error: the partition is led here
            epoch, end = p.log.epoch_cache.end_offset_for(op.leader_epoch, p.log.log_end_offset)
            out.append(m.OffsetForLeaderEpochPartitionResponse(op.topic, op.partition, NONE, epoch, end))
        self._channel.send_response(env, m.OffsetForLeaderEpochResponse(tuple(out)))

    def get_replica_log_info(self, now_ms: int, env: Envelope[m.GetReplicaLogInfoRequest]) -> None:
        """GetReplicaLogInfo (API key 93 v0, KIP-966 part 2): what this replica's log holds, for the
        controller's Unclean Recovery Manager. Per partition: the last written leader epoch (the latest
        epoch of the leader-epoch cache, -1 for an empty log), the LEO (offset) and the partition's leader
        epoch in this broker's metadata image (the controller rejects an answer whose epoch differs from
        its own); with this broker's epoch (-1 before it registered), so that an answer from before a
        restart is rejected. A topic id the image does not know → UNKNOWN_TOPIC_ID; a partition not
        assigned here → NOT_LEADER_OR_FOLLOWER (Kafka's ``getPartitionOrError``). A replica assigned here
        whose log does not exist yet (its disk was replaced) answers as an empty log. Only the first
        1,000 partitions are answered, with HasMoreData set (trunk's GetReplicaLogInfoResponse)."""
        req = env.message
        image = self._cache.image
        out = []
        for gp in req.partitions[:REPLICA_LOG_INFO_LIMIT]:
            name = image.topic_name(gp.topic_id)
            if name is None:
                out.append(m.PartitionLogInfo(gp.topic_id, gp.partition, -1, -1, -1, Errors.UNKNOWN_TOPIC_ID))
                continue
            reg = image.partitions.get((name, gp.partition))
            if reg is None or self.broker_id not in reg.replicas:
                out.append(m.PartitionLogInfo(gp.topic_id, gp.partition, -1, -1, -1, Errors.NOT_LEADER_OR_FOLLOWER))
                continue
            if self._logs.offline:  # its log is in the offline directory: nothing this replica can vouch for
                out.append(m.PartitionLogInfo(gp.topic_id, gp.partition, -1, -1, -1, Errors.KAFKA_STORAGE_ERROR))
                continue
            log = self._logs.logs.get((name, gp.partition))
            last_epoch = log.epoch_cache.latest_epoch() if log is not None else -1
            leo = log.log_end_offset if log is not None else 0
            out.append(m.PartitionLogInfo(gp.topic_id, gp.partition, last_epoch, reg.leader_epoch, leo))
        self._channel.send_response(env, m.GetReplicaLogInfoResponse(
            self._lifecycle.broker_epoch, tuple(out), has_more_data=len(req.partitions) > REPLICA_LOG_INFO_LIMIT))
