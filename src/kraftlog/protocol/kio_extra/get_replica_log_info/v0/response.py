"""
GetReplicaLogInfo v0 response (API key 93, KIP-966 part 2), written in kio's generated style.

kio 0.6.5 has no schema for this API; this module is written by hand from Kafka trunk's
``clients/src/main/resources/common/message/GetReplicaLogInfoResponse.json`` (validVersions "0",
flexibleVersions "0+"), checked against KIP-966's JSON. kio's ``entity_reader`` / ``entity_writer``
read and write it like any generated entity; :mod:`kraftlog.protocol.kio_extra` indexes it by
(API key, version).

Where the KIP and trunk differ, this follows trunk:

* ``ThrottleTimeMs`` first (the KIP has none; every Kafka response has one);
* ``HasMoreData`` (bool, after ``BrokerEpoch``): true when the broker answered only the first 1,000
  partitions asked for (the KIP answers the others REQUEST_LIMIT_REACHED instead). Trunk's history
  names this flag ``HasMoreData`` in one commit and ``Truncated`` in another: same type, same place,
  so the bytes are the same;
* the per-partition ``ErrorMessage`` of the KIP is not in trunk: an error code only;
* ``BrokerEpoch`` (int64) and, per partition, ``LastWrittenLeaderEpoch``, ``CurrentLeaderEpoch``,
  ``LogEndOffset`` and ``ErrorCode`` are as in the KIP.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(93)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition: i32 = field(metadata={"kafka_type": "int32"})
    """The id for the partition."""
    last_written_leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The last written leader epoch in the log."""
    current_leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The current leader epoch for the partition from the broker point of view."""
    log_end_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The log end offset for the partition."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The result error, or zero if there was no error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(93)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The unique topic ID."""
    partition_log_info: tuple[PartitionLogInfo, ...]
    """The log info of a partition."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(93)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota."""
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"})
    """The epoch of the broker."""
    has_more_data: bool = field(metadata={"kafka_type": "bool"})
    """True if response does not include all the topic partitions requested. Only the first 1000 topic partitions
    are returned."""
    topic_partition_log_info_list: tuple[TopicPartitionLogInfo, ...]
    """The list of the partition log info."""
