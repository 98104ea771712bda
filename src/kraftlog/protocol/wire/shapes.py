"""Whole-message shapes that really differ between the core and Kafka, mapped by hand: the KRaft metadata
fetch (Fetch v15-v18 of ``__cluster_metadata``), OffsetFetch v8's groups, FindCoordinator before v4. Other
versions of these types map through the table (:mod:`.apis`). See :mod:`kraftlog.protocol.wire`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from ...metadata.codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from .. import messages as m
from ..errors import Errors, WireError
from ..records import (
    Record,
    RecordBatch,
    decode_batches,
    encode_batches,
)
from .apis import _API, _METADATA_FETCH_VERSIONS, _pairs_from, _pairs_to, _schema
from .mapper import UnsupportedVersionError, _code, _ec, _from_plan, _ms, _td, _to_plan
from .raft_batches import from_record_batch, to_record_batch

T = TypeVar("T")


# ------------------------------------------------ whole-message shapes that really differ
# The metadata log fetch: the core's MetadataFetchRequest/Response is a Fetch of ``__cluster_metadata``
# partition 0 (a broker's observer fetch from the non-replicated controller, Fetch v15; a KRaft replica's fetch
# from the quorum's leader, v15, v17 with its directory id, v18 with its high watermark): one fixed topic and
# partition, and records that are metadata records or KRaft batches -- nothing here is a field-for-field copy.
#
# The response's records take one of two forms (the core's ``records`` and ``batches`` are alternatives):
# * ``batches`` (KRaft, wins when both are set): each RaftBatch is one record batch in its leader epoch
#   (:mod:`.raft_batches`);
# * ``records`` (the non-replicated controller's log, which has no epochs): one data batch of the records as
#   metadata-record values, in partition leader epoch -1 (Kafka's NO_PARTITION_LEADER_EPOCH) with timestamps 0.
# Decoding tells them apart by the first batch's partition leader epoch: -1 is the second form, as a KRaft
# batch always has a leader epoch (>= 0). The core's base offset rides in LastStableOffset (unused by KRaft:
# the metadata log has no transactions) except in the second form with records, where the batch's base
# offset is it (and LastStableOffset the high watermark, as Kafka's).
_METADATA_MIN_BYTES = 1
_METADATA_PARTITION_MAX_BYTES = 1048576
#: Timestamp and partition leader epoch of the batch that carries ``records``: the non-replicated
#: controller's metadata log has neither, so the wire form fixes them.
_METADATA_BATCH_TIMESTAMP = 0
_METADATA_BATCH_LEADER_EPOCH = -1
#: ReplicaDirectoryId is Fetch v17+ (KIP-853), HighWatermark v18+ (the metadata fetch's versions:
#: apis._METADATA_FETCH_VERSIONS).
_DIRECTORY_ID_SINCE = 17
_HIGH_WATERMARK_SINCE = 18


def metadata_fetch_version(msg: m.MetadataFetchRequest) -> int:
    """The lowest version that carries ``msg`` (v18 for a high watermark, v17 for a directory id, else v15, what
    a broker of the non-replicated controller sends)."""
    if msg.high_watermark != -1:
        return _HIGH_WATERMARK_SINCE
    if msg.replica_directory_id is not None:
        return _DIRECTORY_ID_SINCE
    return _METADATA_FETCH_VERSIONS.start


def _metadata_fetch_request_to_kio(msg: m.MetadataFetchRequest, version: int) -> Any:
    f_req = _schema(m.FetchRequest.API_KEY, version, request=True)
    mod = sys.modules[f_req.__module__]
    since: dict[str, Any] = {}  # a version without the field drops it (DROPS in tests/test_wire_versions.py)
    if version >= _DIRECTORY_ID_SINCE:
        since["replica_directory_id"] = msg.replica_directory_id
    if version >= _HIGH_WATERMARK_SINCE:
        since["high_watermark"] = msg.high_watermark
    return f_req(
        cluster_id=msg.cluster_id,
        replica_state=mod.ReplicaState(replica_id=msg.replica_id, replica_epoch=msg.replica_epoch),
        max_wait=_td(msg.max_wait_ms),
        min_bytes=_METADATA_MIN_BYTES,
        topics=(
            mod.FetchTopic(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    mod.FetchPartition(
                        partition=0, current_leader_epoch=msg.current_leader_epoch, fetch_offset=msg.fetch_offset,
                        last_fetched_epoch=msg.last_fetched_epoch, log_start_offset=-1,
                        partition_max_bytes=_METADATA_PARTITION_MAX_BYTES, **since,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _metadata_fetch_request_from_kio(e: Any) -> m.MetadataFetchRequest:
    parts = [p for t in e.topics if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if len(parts) != 1 or parts[0].partition != 0:
        raise WireError("a metadata fetch names exactly __cluster_metadata partition 0")
    p = parts[0]
    return m.MetadataFetchRequest(
        replica_id=e.replica_state.replica_id,
        replica_epoch=e.replica_state.replica_epoch,
        fetch_offset=p.fetch_offset,
        max_wait_ms=_ms(e.max_wait),
        cluster_id=e.cluster_id,
        current_leader_epoch=p.current_leader_epoch,
        last_fetched_epoch=p.last_fetched_epoch,
        replica_directory_id=getattr(p, "replica_directory_id", None),
        high_watermark=getattr(p, "high_watermark", -1),
    )


def _metadata_fetch_response_to_kio(msg: m.MetadataFetchResponse, version: int) -> Any:
    f_resp = _schema(m.FetchRequest.API_KEY, version, request=False)
    mod = sys.modules[f_resp.__module__]
    if msg.error_code == Errors.INCONSISTENT_CLUSTER_ID:
        # KafkaRaftClient.handleFetchRequest: a request-level error, no partition data (read back with
        # high watermark and base offset -1).
        return f_resp(throttle_time=_td(0), error_code=_ec(msg.error_code), session_id=0, responses=())
    # The metadata log has no transactions: its LSO is its HWM; where no batch carries the base offset, the
    # (otherwise unused) LSO does.
    last_stable_offset = msg.base_offset
    if msg.batches:
        records = encode_batches(to_record_batch(b) for b in msg.batches)
    elif msg.records:
        batch = RecordBatch(
            base_offset=msg.base_offset,
            partition_leader_epoch=_METADATA_BATCH_LEADER_EPOCH,
            records=tuple(
                Record(_METADATA_BATCH_TIMESTAMP, None, encode_metadata_record(r))
                for r in msg.records
            ),
        )
        records = encode_batches((batch,))
        last_stable_offset = msg.high_watermark
    else:
        records = b""
    extra: dict[str, Any] = {}
    if version >= 16:  # NodeEndpoints (KIP-853): where the current leader listens
        extra["node_endpoints"] = tuple(mod.NodeEndpoint(node_id=e.node_id, host=e.host, port=e.port, rack=None)
                                        for e in msg.node_endpoints)
    return f_resp(
        **extra,
        throttle_time=_td(0),
        error_code=ErrorCode.none,
        session_id=0,
        responses=(
            mod.FetchableTopicResponse(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    mod.PartitionData(
                        partition_index=0,
                        error_code=_ec(msg.error_code),
                        high_watermark=msg.high_watermark,
                        last_stable_offset=last_stable_offset,
                        log_start_offset=msg.log_start_offset,
                        diverging_epoch=mod.EpochEndOffset(epoch=msg.diverging_epoch,
                                                           end_offset=msg.diverging_end_offset),
                        current_leader=mod.LeaderIdAndEpoch(leader_id=msg.current_leader_id,
                                                            leader_epoch=msg.current_leader_epoch),
                        snapshot_id=mod.SnapshotId(end_offset=msg.snapshot_end_offset, epoch=msg.snapshot_epoch),
                        aborted_transactions=None,
                        records=records,
                    ),
                ),
            ),
        ),
    )


def _metadata_fetch_response_from_kio(e: Any) -> m.MetadataFetchResponse:
    parts = [p for t in e.responses if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if not parts:
        return m.MetadataFetchResponse(
            error_code=_code(e.error_code), high_watermark=-1, base_offset=-1
        )
    if len(parts) != 1:
        raise WireError("a metadata fetch response holds exactly __cluster_metadata partition 0")
    p = parts[0]
    error_code = e.error_code if e.error_code != ErrorCode.none else p.error_code
    common: dict[str, Any] = {
        "error_code": _code(error_code), "high_watermark": p.high_watermark,
        "current_leader_id": p.current_leader.leader_id, "current_leader_epoch": p.current_leader.leader_epoch,
        "diverging_epoch": p.diverging_epoch.epoch, "diverging_end_offset": p.diverging_epoch.end_offset,
        "log_start_offset": p.log_start_offset,
        "snapshot_end_offset": p.snapshot_id.end_offset, "snapshot_epoch": p.snapshot_id.epoch,
        "node_endpoints": tuple(m.RaftNodeEndpoint(int(n.node_id), n.host, int(n.port))
                                for n in getattr(e, "node_endpoints", ())),
    }
    batches = decode_batches(p.records)
    if batches and batches[0].partition_leader_epoch == _METADATA_BATCH_LEADER_EPOCH:
        try:
            records = tuple(
                decode_metadata_record(r.value) for b in batches for r in b.records  # type: ignore[arg-type]
            )
        except MetadataRecordError as exc:
            raise WireError(str(exc)) from exc
        return m.MetadataFetchResponse(base_offset=batches[0].base_offset, records=records, **common)
    return m.MetadataFetchResponse(base_offset=p.last_stable_offset,
                                   batches=tuple(from_record_batch(b) for b in batches), **common)


def _is_metadata_fetch(topics: Any) -> bool:
    return len(topics) == 1 and getattr(topics[0], "topic_id", None) == m.METADATA_TOPIC_ID


# OffsetFetch v8 is the multi-group form (KIP-709): ``Groups[]`` in the request and the response.
# The core message carries one group, which maps to a one-element ``Groups``; decoding bytes with
# any other number of groups raises WireError. The response's group entity maps generically (the
# core response minus throttle time); the request's partitions are (topic, partition) pairs, so
# they are grouped here. The core request's ``partitions`` None ("every committed partition") is
# Kafka's null ``Topics``; an empty tuple is an empty (non-null) list. A request topic with no
# partition indexes has no flat core form and decodes to nothing.
def _one_group(groups: tuple[T, ...], what: str) -> T:
    if len(groups) != 1:
        raise WireError(f"{what} with {len(groups)} groups: kraftlog maps exactly one group")
    return groups[0]


def _offset_fetch_request_to_kio(msg: m.OffsetFetchRequest, version: int) -> Any:
    of_req = _schema(m.OffsetFetchRequest.API_KEY, version, request=True)
    mod = sys.modules[of_req.__module__]
    topics = _pairs_to(msg, mod.OffsetFetchRequestTopics)
    return of_req(
        groups=(mod.OffsetFetchRequestGroup(group_id=msg.group_id, topics=topics),),
        require_stable=msg.require_stable,
    )


def _offset_fetch_request_from_kio(e: Any) -> m.OffsetFetchRequest:
    g = _one_group(e.groups, "OffsetFetch request")
    return m.OffsetFetchRequest(
        group_id=g.group_id, require_stable=e.require_stable, **_pairs_from(g)
    )


def _offset_fetch_response_to_kio(msg: m.OffsetFetchResponse, version: int) -> Any:
    of_resp = _schema(m.OffsetFetchRequest.API_KEY, version, request=False)
    group_type = sys.modules[of_resp.__module__].OffsetFetchResponseGroup
    return of_resp(throttle_time=_td(msg.throttle_time_ms),
                   groups=(_to_plan(_API[m.OffsetFetchRequest], type(msg), group_type)(msg),))


def _offset_fetch_response_from_kio(e: Any) -> m.OffsetFetchResponse:
    g = _one_group(e.groups, "OffsetFetch response")
    out: m.OffsetFetchResponse = _from_plan(_API[m.OffsetFetchRequest], m.OffsetFetchResponse, type(g))(g)
    out.throttle_time_ms = _ms(e.throttle_time)
    return out


def _single_coordinator_to_kio(msg: m.FindCoordinatorResponse, version: int) -> Any:
    kio_type = _schema(m.FindCoordinatorRequest.API_KEY, version, request=False)
    if len(msg.coordinators) != 1:
        raise UnsupportedVersionError("FindCoordinator before v4 answers exactly one coordinator")
    entity = _to_plan(_API[m.FindCoordinatorRequest], m.Coordinator, kio_type)(msg.coordinators[0])
    if version >= 1:  # ThrottleTimeMs is v1+
        entity = dataclasses.replace(entity, throttle_time=_td(msg.throttle_time_ms))
    return entity


def _single_coordinator_from_kio(e: Any) -> m.FindCoordinatorResponse:
    coordinator = _from_plan(_API[m.FindCoordinatorRequest], m.Coordinator, type(e))(e)
    throttle = getattr(e, "throttle_time", None)
    return m.FindCoordinatorResponse((coordinator,), 0 if throttle is None else _ms(throttle))


# FetchSnapshot (KIP-630) names __cluster_metadata partition 0 as Topics[].Partitions[] with Kafka's older field
# names (Name, Partition / Index) and a nested SnapshotId; the core flattens them (codegen/spec_raft.py). Decoding a
# request or response that names anything else is a WireError; a response without topics is a top-level error's.
_FETCH_SNAPSHOT_VERSIONS = range(0, 2)


def _one_snapshot_partition(topics: Any, what: str) -> Any:
    if not topics:
        return None
    if (len(topics) != 1 or topics[0].name != m.METADATA_TOPIC or len(topics[0].partitions) != 1
            or getattr(topics[0].partitions[0], "partition", getattr(topics[0].partitions[0], "index", 0)) != 0):
        raise WireError(f"a {what} names exactly __cluster_metadata partition 0")
    return topics[0].partitions[0]


def _fetch_snapshot_request_to_kio(msg: m.FetchSnapshotRequest, version: int) -> Any:
    cls = _schema(m.FetchSnapshotRequest.API_KEY, version, request=True)
    mod = sys.modules[cls.__module__]
    extra = {"replica_directory_id": msg.replica_directory_id} if version >= 1 else {}
    part = mod.PartitionSnapshot(partition=0, current_leader_epoch=msg.current_leader_epoch,
                                 snapshot_id=mod.SnapshotId(end_offset=msg.snapshot_end_offset,
                                                            epoch=msg.snapshot_epoch),
                                 position=msg.position, **extra)
    return cls(cluster_id=msg.cluster_id, replica_id=msg.replica_id, max_bytes=msg.max_bytes,
               topics=(mod.TopicSnapshot(name=m.METADATA_TOPIC, partitions=(part,)),))


def _fetch_snapshot_request_from_kio(e: Any) -> m.FetchSnapshotRequest:
    p = _one_snapshot_partition(e.topics, "FetchSnapshot request")
    if p is None:
        raise WireError("a FetchSnapshot request names exactly __cluster_metadata partition 0")
    return m.FetchSnapshotRequest(
        current_leader_epoch=p.current_leader_epoch, snapshot_end_offset=p.snapshot_id.end_offset,
        snapshot_epoch=p.snapshot_id.epoch, position=p.position, cluster_id=e.cluster_id, replica_id=e.replica_id,
        max_bytes=e.max_bytes, replica_directory_id=getattr(p, "replica_directory_id", None))


def _fetch_snapshot_response_to_kio(msg: m.FetchSnapshotResponse, version: int) -> Any:
    cls = _schema(m.FetchSnapshotRequest.API_KEY, version, request=False)
    mod = sys.modules[cls.__module__]
    if msg.error_code != Errors.NONE and msg.size < 0 and not msg.unaligned_records:
        return cls(throttle_time=_td(0), error_code=_ec(msg.error_code), topics=())
    part = mod.PartitionSnapshot(
        index=0, error_code=_ec(msg.partition_error_code),
        snapshot_id=mod.SnapshotId(end_offset=msg.snapshot_end_offset, epoch=msg.snapshot_epoch),
        current_leader=mod.LeaderIdAndEpoch(leader_id=msg.current_leader_id, leader_epoch=msg.current_leader_epoch),
        size=msg.size, position=msg.position, unaligned_records=msg.unaligned_records)
    return cls(throttle_time=_td(0), error_code=_ec(msg.error_code),
               topics=(mod.TopicSnapshot(name=m.METADATA_TOPIC, partitions=(part,)),))


def _fetch_snapshot_response_from_kio(e: Any) -> m.FetchSnapshotResponse:
    p = _one_snapshot_partition(e.topics, "FetchSnapshot response")
    if p is None:
        return m.FetchSnapshotResponse(error_code=_code(e.error_code), partition_error_code=Errors.NONE,
                                       snapshot_end_offset=-1, snapshot_epoch=-1)
    return m.FetchSnapshotResponse(
        error_code=_code(e.error_code), partition_error_code=_code(p.error_code),
        snapshot_end_offset=p.snapshot_id.end_offset, snapshot_epoch=p.snapshot_id.epoch,
        current_leader_id=p.current_leader.leader_id, current_leader_epoch=p.current_leader.leader_epoch,
        size=p.size, position=p.position, unaligned_records=bytes(p.unaligned_records or b""))


#: Core type -> (the versions mapped by hand, to kio at a version, from kio); other versions of the
#: type map through the table. The metadata fetch is Fetch v15-v18 only.
_WHOLE: dict[type, tuple[range, Callable[[Any, int], Any], Callable[[Any], Any]]] = {
    m.MetadataFetchRequest: (_METADATA_FETCH_VERSIONS, _metadata_fetch_request_to_kio,
                             _metadata_fetch_request_from_kio),
    m.MetadataFetchResponse: (_METADATA_FETCH_VERSIONS, _metadata_fetch_response_to_kio,
                              _metadata_fetch_response_from_kio),
    m.OffsetFetchRequest: (range(8, 9), _offset_fetch_request_to_kio, _offset_fetch_request_from_kio),
    m.OffsetFetchResponse: (range(8, 9), _offset_fetch_response_to_kio,
                            _offset_fetch_response_from_kio),
    m.FindCoordinatorResponse: (range(0, 4), _single_coordinator_to_kio, _single_coordinator_from_kio),
    m.FetchSnapshotRequest: (_FETCH_SNAPSHOT_VERSIONS, _fetch_snapshot_request_to_kio,
                             _fetch_snapshot_request_from_kio),
    m.FetchSnapshotResponse: (_FETCH_SNAPSHOT_VERSIONS, _fetch_snapshot_response_to_kio,
                              _fetch_snapshot_response_from_kio),
}
