"""
GetReplicaLogInfo v0 request (API key 93, KIP-966 part 2), written in kio's generated style.

kio 0.6.5 has no schema for this API; this module is written by hand from Kafka trunk's
``clients/src/main/resources/common/message/GetReplicaLogInfoRequest.json`` (validVersions "0",
flexibleVersions "0+", marked unstable there), checked against KIP-966's JSON. kio's
``entity_reader`` / ``entity_writer`` read and write it like any generated entity;
:mod:`kraftlog.protocol.kio_extra` indexes it by (API key, version).

Where the KIP and trunk differ, this follows trunk:

* API key 93 (the KIP says 70, which Kafka has since given to another API);
* no top-level ``BrokerId`` (the KIP's JSON and the first trunk commit had one; trunk dropped it:
  the receiving broker answers with its own broker epoch, the request needs no sender id);
* ``TopicPartitions`` is nullable, as in both.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(93)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The unique topic ID"""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions of this topic whose leader should be elected."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(93)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_partitions: tuple[TopicPartitions, ...] | None
    """The topic partitions to query the log info for."""
